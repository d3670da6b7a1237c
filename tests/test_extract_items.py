"""``extract_items`` and ``sentence_starts`` against the slow oracles of tests/oracles/ddp_kernels.py.

Generated token streams (hypothesis) go through the stable stage functions
``ddpcore.pipeline.stages.number_sentences`` and ``find_items`` (never the raw kernel's parameter
list); the oracle reads the same tokens as strings and applies the written rules (docstring of
``ddpcore.anchors.rules``, README "The DDP definition"). Every item array is compared exactly.
The oracle is also run on real en_core_web_sm parses of the bundled WMT25 documents, where its
input comes from spaCy's ``Token`` attributes rather than from ``Doc.to_array``.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore.anchors import rules as R
from ddpcore.anchors.spacy_extract import TokenArrays, pos_id, string_hashes
from ddpcore.pipeline import stages
from oracles.ddp_kernels import extract_items_oracle, items_to_arrays, key_hash, sentence_starts_oracle

ARRAYS = ("token", "end_token", "kind", "label", "compat", "key", "last_token_key", "n_key", "gender")

LOWERS = (
    "he", "him", "his", "she", "her", "it", "its", "they", "them", "their", "themselves", "i", "you", "this", "who",
    "the", "'s", "'", "\u2019s", "mr.", "mrs.", "lady", "dr.", "sir", "man", "woman", "sitter", "king", "house",
    "dogs", "john", "mary", "smith", "american", "and", " ", "  ", "dear", "ma\u2019am", ",", "-", "two",
)
POS = ("PRON", "NOUN", "PROPN", "SPACE", "ADJ", "VERB", "DET", "CCONJ", "PUNCT", "NUM")
TAGS = ("NN", "NNS", "NNP", "NNPS", "PRP", "JJ", "_SP", "HYPH", "POS", "PRP$")
DEPS = ("nsubj", "dobj", "pobj", "conj", "expl", "amod", "ROOT", "det", "compound", "poss", "appos")
IOB_CODE = {"": 0, "I": 1, "O": 2, "B": 3}
ENTS = ("PERSON", "ORG", "NORP", "GPE", "DATE", "")

RULES = {
    "paper": R.PAPER,
    "refined": R.REFINED,
    "refined-names": R.REFINED_NAMES,
    "paper+label-key+all-noun-chains": dataclasses.replace(R.PAPER, key_with_label=True, chain_nouns=2),
    "refined+label-key+person-noun-chains": dataclasses.replace(R.REFINED, key_with_label=True, chain_nouns=1),
}


def _sid(word: str) -> int:
    from spacy.strings import get_string_id

    return int(get_string_id(word))


@st.composite
def token_streams(draw, max_units=6, max_len=9):
    """Parse units of random tokens; heads stay within their unit (absolute indices)."""
    tokens, seg_of_unit, n_per_unit = [], [], []
    seg = 0
    for u in range(draw(st.integers(1, max_units))):
        n = draw(st.integers(1, max_len))
        start = len(tokens)
        if u and draw(st.booleans()):
            seg += 1
        for j in range(n):
            pos = draw(st.sampled_from(POS))
            if j == 0 and pos == "SPACE":  # units are stripped: they never start with whitespace
                pos = "X"
            tokens.append(dict(
                lower=draw(st.sampled_from(LOWERS)), pos=pos, tag=draw(st.sampled_from(TAGS)),
                dep=draw(st.sampled_from(DEPS)), head=start + draw(st.integers(0, n - 1)),
                iob=draw(st.sampled_from(("B", "B", "I", "I", "O", "O", ""))), ent=draw(st.sampled_from(ENTS)),
                unit_start=j == 0, sent_start=draw(st.sampled_from((1, -1, -1, 0))),
            ))
        seg_of_unit.append(seg)
        n_per_unit.append(n)
    return tokens, seg_of_unit, n_per_unit


def _stage_inputs(tokens, seg_of_unit, n_per_unit):
    n = len(tokens)
    col = lambda k: [t[k] for t in tokens]  # noqa: E731
    toks = TokenArrays(
        lower=string_hashes(col("lower")), pos=np.array([pos_id(p) for p in col("pos")], np.int32),
        tag=string_hashes(col("tag")), dep=string_hashes(col("dep")),
        head=np.array(col("head"), np.int64) - np.arange(n, dtype=np.int64),
        iob=np.array([IOB_CODE[c] for c in col("iob")], np.int8),
        enttype=np.array([_sid(e) if e else 0 for e in col("ent")], np.uint64),
        sent_start=np.array(col("sent_start"), np.int8), idx=np.arange(n, dtype=np.int64),
        end=np.arange(n, dtype=np.int64) + 1, n_tokens__unit=np.array(n_per_unit, np.int64),
    )
    units = stages.Units(seg__unit=np.array(seg_of_unit, np.int64), offset__unit=np.zeros(len(n_per_unit), np.int64),
                         texts=[""] * len(n_per_unit))
    seg_doc = np.zeros(max(seg_of_unit) + 1, np.int64)  # one document
    index = stages.number_sentences(toks, units, seg_doc, sentence_unit="sentence", pos_space=pos_id("SPACE"))
    return toks, index


def _first_names(rules):
    return R.first_name_genders() if rules.name_gender else None


def _assert_items_equal(got, expected):
    assert set(ARRAYS) <= set(got)
    for name in ARRAYS:
        assert got[name].dtype == expected[name].dtype, name
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)


def _key_classes(keys):
    """Partition of item positions by key (independent of how keys are hashed)."""
    out = {}
    for i, k in enumerate(keys):
        out.setdefault(k, []).append(i)
    return sorted(out.values())


@pytest.mark.parametrize("has_parser", [True, False], ids=["parser", "no-parser"])
@pytest.mark.parametrize("rules_name", list(RULES))
@settings(max_examples=150, deadline=None)
@given(stream=token_streams())
def test_find_items_matches_oracle(stream, rules_name, has_parser):
    rules = RULES[rules_name]
    tokens, seg_of_unit, n_per_unit = stream
    toks, index = _stage_inputs(tokens, seg_of_unit, n_per_unit)
    got = stages.find_items(toks, index, stages.RuleArrays.compile(rules, has_parser=has_parser))
    oracle_items = extract_items_oracle(tokens, rules, has_parser=has_parser, first_names=_first_names(rules))
    _assert_items_equal(got, items_to_arrays(oracle_items, _sid))
    # the same keys, told apart by the strings they are made of rather than by their hashes
    with_key = [k for k, it in enumerate(oracle_items) if it["key_parts"] is not None]
    assert _key_classes([got["key"][k] for k in with_key]) == _key_classes(
        [oracle_items[k]["key_parts"] for k in with_key])


def test_oracle_hand_example():
    """The oracle itself on a hand-made unit, derived by hand from the rules: "Mrs. the Griffin 's
    house and dogs it", Mrs./the/Griffin/'s tagged B-I-I-I PERSON. "the" is not leading (Mrs. is), so
    it stays; the trailing "'s" is dropped; Mrs. is a title at the start of the mention, so (refined)
    the gender is FEM_SG (2) and the key is (mrs., the, griffin); refined PERSON compat is MASC|FEM (3)."""
    words = [("mrs.", "PROPN", "NNP", "compound", "B", "PERSON"), ("the", "DET", "DT", "det", "I", "PERSON"),
             ("griffin", "PROPN", "NNP", "poss", "I", "PERSON"), ("'s", "PART", "POS", "case", "I", "PERSON"),
             ("house", "NOUN", "NN", "nsubj", "O", ""), ("and", "CCONJ", "CC", "cc", "O", ""),
             ("dogs", "NOUN", "NNS", "conj", "O", ""), ("it", "PRON", "PRP", "dobj", "O", "")]
    heads = [2, 2, 4, 2, 4, 4, 4, 4]
    tokens = [dict(lower=w, pos=p, tag=t, dep=d, head=h, iob=b, ent=e, unit_start=i == 0)
              for i, ((w, p, t, d, b, e), h) in enumerate(zip(words, heads))]
    items = extract_items_oracle(tokens, R.REFINED)
    assert [(it["token"], it["end_token"], it["kind"], it["compat"]) for it in items] == [
        (0, 4, 0, 3),   # Mrs. the Griffin 's: PERSON, refined compat MASC|FEM
        (4, 5, 2, 4),   # house: nsubj head noun, singular -> NEUT_SG
        (6, 7, 2, 8),   # dogs: conj of the nsubj "house", NNS -> PL
        (7, 8, 1, 4),   # it: NEUT_SG pronoun
    ]
    assert items[0]["key_parts"] == (("word", "mrs."), ("word", "the"), ("word", "griffin"))
    assert items[0]["gender"] == 2 and items[0]["n_key"] == 3
    # ... and the kernel, through find_items, on the same unit
    for t in tokens:
        t["sent_start"] = 1 if t["unit_start"] else -1
    toks, index = _stage_inputs(tokens, [0], [len(tokens)])
    got = stages.find_items(toks, index, stages.RuleArrays.compile(R.REFINED))
    _assert_items_equal(got, items_to_arrays(items, _sid))


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_sentence_starts_direct(data):
    """The kernel on arbitrary arrays (whitespace anywhere, units of whitespace only)."""
    from ddpcore._native import load

    n = data.draw(st.integers(0, 30))
    sent = data.draw(st.lists(st.sampled_from((1, -1, 0)), min_size=n, max_size=n))
    space = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    unit = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if n:
        unit[0] = True
    sp = pos_id("SPACE")
    pos = np.array([sp if s else pos_id("NOUN") for s in space], np.int32)
    got = load("ddp_kernels").sentence_starts(np.array(sent, np.int8), pos, np.array(unit, np.uint8), sp)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, np.array(sentence_starts_oracle(sent, space, unit), np.uint8))


@settings(max_examples=200, deadline=None)
@given(stream=token_streams(max_units=8))
def test_number_sentences_matches_oracle(stream):
    """Sentence flags and document-level sentence numbers through the stage function."""
    tokens, seg_of_unit, n_per_unit = stream
    toks, index = _stage_inputs(tokens, seg_of_unit, n_per_unit)
    flags = sentence_starts_oracle([t["sent_start"] for t in tokens], [t["pos"] == "SPACE" for t in tokens],
                                   [t["unit_start"] for t in tokens])
    np.testing.assert_array_equal(index.sent_flag__tok, np.array(flags, np.uint8))
    # one document: a token's sentence = starts at or before it, minus one
    running, expected_sent = 0, []
    for f in flags:
        running += f
        expected_sent.append(running - 1)
    np.testing.assert_array_equal(index.sent__tok, np.array(expected_sent))
    assert index.n_sentences == sum(flags)
    # sentences per segment: the starts on tokens of that segment
    seg_tok = np.repeat(seg_of_unit, n_per_unit)
    expected_n = [sum(f for f, s in zip(flags, seg_tok) if s == g) for g in range(max(seg_of_unit) + 1)]
    np.testing.assert_array_equal(index.n_sent__seg, np.array(expected_n))


# ------------------------------------------------------------------ real parses (WMT25)

WMT25 = Path(__import__("ddpcore").__file__).parent / "data" / "wmt25_en_source.jsonl"


def _first_documents(n_docs):
    rows = [json.loads(line) for line in WMT25.read_text(encoding="utf-8").splitlines() if line.strip()]
    keep = list(dict.fromkeys(r["document_id"] for r in rows))[:n_docs]
    return [r for r in rows if r["document_id"] in keep]


@pytest.fixture(scope="module")
def wmt25_parse(nlp):
    """The first documents of the bundled set (both literary chapters and the first news ones), one
    line per parse unit: production token arrays and the oracle's tokens from spaCy's Token API."""
    import polars as pl

    from ddpcore.anchors.spacy_extract import _to_arrays

    rows = _first_documents(6)
    units = stages.split_units(pl.Series([r["source"] for r in rows]))
    docs = list(nlp.pipe(units.texts))
    toks = _to_arrays(iter(docs))
    tokens, base = [], 0
    for doc in docs:
        for t in doc:
            tokens.append(dict(lower=t.lower_, pos=t.pos_, tag=t.tag_, dep=t.dep_, head=base + t.head.i,
                               iob=t.ent_iob_, ent=t.ent_type_, unit_start=t.i == 0))
        base += len(doc)
    seg_doc = np.arange(len(rows))  # each segment its own document: find_items does not look at documents
    index = stages.number_sentences(toks, units, seg_doc, sentence_unit="sentence", pos_space=pos_id("SPACE"))
    return toks, index, tokens


@pytest.mark.spacy_model
@pytest.mark.parametrize("has_parser", [True, False], ids=["parser", "no-parser"])
@pytest.mark.parametrize("rules_name", ["paper", "refined", "refined-names"])
def test_find_items_matches_oracle_on_wmt25(wmt25_parse, rules_name, has_parser):
    toks, index, tokens = wmt25_parse
    rules = RULES[rules_name]
    got = stages.find_items(toks, index, stages.RuleArrays.compile(rules, has_parser=has_parser))
    expected = items_to_arrays(extract_items_oracle(tokens, rules, has_parser=has_parser,
                                                    first_names=_first_names(rules)), _sid)
    assert len(expected["token"]) > 1000  # the first six documents hold thousands of items
    assert set(np.unique(expected["kind"])) == {0, 1, 2}
    _assert_items_equal(got, expected)


def _tok(lower, pos="PROPN", tag="NNP", dep="nsubj", head=0, iob="O", ent="", unit_start=False):
    return dict(lower=lower, pos=pos, tag=tag, dep=dep, head=head, iob=iob, ent=ent, unit_start=unit_start,
                sent_start=1 if unit_start else -1)


def test_title_never_crosses_a_unit_start():
    """By hand (refined): "Mrs." ends one line and "Griffin" (B-PERSON) starts the next. A line break ends
    a sentence, so Mrs. is not Griffin's title: gender 0 and the key is (griffin) alone. The same two
    tokens on one line: gender FEM_SG (2) and the key (mrs., griffin) (key_with_title)."""
    for same_unit, gender in ((False, 0), (True, 2)):
        tokens = [_tok("mrs.", unit_start=True, head=0), _tok("griffin", iob="B", ent="PERSON", head=1,
                                                              unit_start=not same_unit)]
        n_per_unit = [2] if same_unit else [1, 1]
        toks, index = _stage_inputs(tokens, [0] * len(n_per_unit), n_per_unit)
        got = stages.find_items(toks, index, stages.RuleArrays.compile(R.REFINED))
        assert got["kind"].tolist() == [0] and got["gender"].tolist() == [gender]
        words = ["mrs.", "griffin"] if same_unit else ["griffin"]
        assert got["key"].tolist() == [key_hash([_sid(w) for w in words])]  # splitmix64 chain of the key words
        expected = items_to_arrays(extract_items_oracle(tokens, R.REFINED), _sid)
        _assert_items_equal(got, expected)


def test_first_name_after_a_genderless_title():
    """By hand (refined-names): "Dr. Mary Smith" (B-I-I PERSON). "Dr." is a title that tells no gender (0),
    so the first name, the key token after the title, decides: "mary" is FEM_SG on the census lists
    (gender 2). Without the title ("Mary Smith") the first key token is the name: also 2."""
    assert R.first_name_genders()["mary"] == R.FEM_SG and dict(R.TITLES)["dr."] == 0
    for words in (["dr.", "mary", "smith"], ["mary", "smith"]):
        tokens = [_tok(w, iob="B" if k == 0 else "I", ent="PERSON", unit_start=k == 0) for k, w in enumerate(words)]
        toks, index = _stage_inputs(tokens, [0], [len(tokens)])
        got = stages.find_items(toks, index, stages.RuleArrays.compile(R.REFINED_NAMES))
        assert got["gender"].tolist() == [R.FEM_SG]
        expected = extract_items_oracle(tokens, R.REFINED_NAMES, first_names=R.first_name_genders())
        _assert_items_equal(got, items_to_arrays(expected, _sid))


def test_gendered_person_nouns_lose_the_other_gender():
    """By hand: head nouns "man", "woman", "doctor" (nsubj, NN). refined: every person noun has compat
    MASC_SG | FEM_SG | NEUT_SG = 7. refined-names (GENDERED_NOUNS): "man" 7 without FEM_SG (2) = 5, "woman" 7
    without MASC_SG (1) = 6, "doctor" (no gender in its meaning) stays 7. The oracle agrees."""
    words = ["man", "woman", "doctor"]
    assert "doctor" not in R.GENDERED_NOUNS
    tokens = [_tok(w, pos="NOUN", tag="NN", dep="nsubj", head=k, unit_start=k == 0) for k, w in enumerate(words)]
    toks, index = _stage_inputs(tokens, [0], [len(tokens)])
    for rules, compat in ((R.REFINED, [7, 7, 7]), (R.REFINED_NAMES, [5, 6, 7]), (R.LEARNED, [7, 7, 7])):
        got = stages.find_items(toks, index, stages.RuleArrays.compile(rules))
        assert got["kind"].tolist() == [2, 2, 2] and got["compat"].tolist() == compat, rules.name
        expected = extract_items_oracle(tokens, rules, first_names=R.first_name_genders())
        _assert_items_equal(got, items_to_arrays(expected, _sid))


def test_conj_of_a_chunk_head_is_a_head_noun():
    """By hand: "cats and dogs sleep" with dogs conj -> cats (nsubj): both are head nouns (PL, NNS)."""
    tokens = [_tok("cats", pos="NOUN", tag="NNS", dep="nsubj", head=3, unit_start=True),
              _tok("and", pos="CCONJ", tag="CC", dep="cc", head=0),
              _tok("dogs", pos="NOUN", tag="NNS", dep="conj", head=0),
              _tok("sleep", pos="VERB", tag="VBP", dep="ROOT", head=3)]
    toks, index = _stage_inputs(tokens, [0], [len(tokens)])
    got = stages.find_items(toks, index, stages.RuleArrays.compile(R.PAPER))
    assert got["token"].tolist() == [0, 2] and got["kind"].tolist() == [2, 2] and got["compat"].tolist() == [8, 8]
    _assert_items_equal(got, items_to_arrays(extract_items_oracle(tokens, R.PAPER), _sid))


def test_adjective_skip_only_for_one_token_mentions():
    """By hand (refined skips adjectival NORP): "American" (ADJ, B-NORP) is dropped; "American people"
    (B-I NORP, two key tokens) stays a mention."""
    for words, n_items in ((["american"], 0), (["american", "people"], 1)):
        tokens = [_tok(w, pos="ADJ" if k == 0 else "NOUN", iob="B" if k == 0 else "I", ent="NORP", unit_start=k == 0)
                  for k, w in enumerate(words)]
        toks, index = _stage_inputs(tokens, [0], [len(tokens)])
        got = stages.find_items(toks, index, stages.RuleArrays.compile(R.REFINED))
        assert len(got["kind"]) == n_items
        _assert_items_equal(got, items_to_arrays(extract_items_oracle(tokens, R.REFINED), _sid))


def _fast_heads(words):
    """Head-noun tokens the kernel finds without a parse (the ``fast`` preset) in one unit of
    ``words`` = [(lower, pos, tag)], checked against the oracle as well."""
    tokens = [_tok(w, pos=p, tag=t, dep="", unit_start=k == 0) for k, (w, p, t) in enumerate(words)]
    toks, index = _stage_inputs(tokens, [0], [len(tokens)])
    got = stages.find_items(toks, index, stages.RuleArrays.compile(R.PAPER, has_parser=False))
    _assert_items_equal(got, items_to_arrays(extract_items_oracle(tokens, R.PAPER, has_parser=False), _sid))
    return got["token"][got["kind"] == 2].tolist()


N, PU = ("NOUN", "NN"), ("PUNCT", ",")


def test_heads_from_tags_skip_compounds_possessives_and_vocatives():
    """By hand, head nouns without a parse (the last noun of a noun run, the rule's version 2):
    "the man 's hat" -> only "hat" (3): "man" is before a possessive marker (tag POS);
    "an ear - ring" -> only "ring" (3): "ear" is before a hyphen (tag HYPH);
    "yes , my dear sir ." -> none: "sir" is a term of address between punctuation, and "dear"
    (NOUN here) is followed by a noun; "the sir ." at the start of a unit -> none;
    "I saw the sir ." -> "sir" (3): the word before its phrase is a verb, not punctuation;
    "yes , sir" ending the unit -> none; "yes , sir and" -> "sir" (2): not followed by punctuation;
    "yes , the man ." -> "man" (3): not a term of address."""
    det, prp_poss, verb = ("DET", "DT"), ("PRON", "PRP$"), ("VERB", "VBD")
    assert _fast_heads([("the", *det), ("man", *N), ("'s", "PART", "POS"), ("hat", *N)]) == [3]
    assert _fast_heads([("an", *det), ("ear", *N), ("-", "PUNCT", "HYPH"), ("ring", *N)]) == [3]
    assert _fast_heads([("yes", "INTJ", "UH"), (",", *PU), ("my", *prp_poss), ("dear", *N), ("sir", *N),
                        (".", "PUNCT", ".")]) == []
    assert _fast_heads([("the", *det), ("sir", *N), (".", "PUNCT", ".")]) == []
    assert _fast_heads([("i", "PRON", "PRP"), ("saw", *verb), ("the", *det), ("sir", *N), (".", "PUNCT", ".")]) == [3]
    assert _fast_heads([("yes", "INTJ", "UH"), (",", *PU), ("sir", *N)]) == []
    assert _fast_heads([("yes", "INTJ", "UH"), (",", *PU), ("sir", *N), ("and", "CCONJ", "CC")]) == [2]
    assert _fast_heads([("yes", "INTJ", "UH"), (",", *PU), ("the", *det), ("man", *N), (".", "PUNCT", ".")]) == [3]
