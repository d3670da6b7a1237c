"""The `fast` preset: POS from the attribute ruler's own patterns, compiled (issue 11).

The oracle of the compiled rules (:mod:`ddpcore.anchors.pos_rules` + ``_native/pos_kernel``) is
spaCy's own ``AttributeRuler`` run on the same ``Doc`` objects: every expected POS/TAG/DEP below
is what ``nlp.get_pipe("attribute_ruler")(doc)`` sets (spaCy 3.8, en_core_web_sm 3.8.0 or the
hand-made pipelines built here).
"""
from __future__ import annotations

import re
import tarfile
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import ddpcore.data
from ddpcore.anchors import spacy_extract as X
from ddpcore.anchors.pos_rules import apply_pos_rules, compile_pos_rules
from ddpcore.errors import DDPUsageError

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

WMT25 = Path(ddpcore.data.__file__).with_name("wmt25_en_source.jsonl")
#: POS classes DDP reads (pronouns, head nouns, noun runs without a parser, whitespace, adjectival NORP)
DDP_CLASSES = ("PRON", "NOUN", "PROPN", "SPACE", "ADJ")


def _units(texts: list[str]) -> list[str]:
    from ddpcore.pipeline.stages import split_units

    return split_units(pl.Series(texts)).texts


def _compiled_and_ruler(nlp, texts: list[str]):
    """Token arrays of ``texts`` parsed once by ``nlp`` (ruler disabled, compiled rules
    registered): (compiled rules applied by the kernel, spaCy's ruler applied to the same docs)."""
    rules = X.compiled_ruler_of(nlp)
    assert rules is not None and "attribute_ruler" not in nlp.pipe_names
    docs = list(nlp.pipe(texts, batch_size=256))
    compiled = X._to_arrays(iter(docs), rules)
    ruler = nlp.get_pipe("attribute_ruler")
    for doc in docs:
        ruler(doc)
    return compiled, X._to_arrays(iter(docs))


def _pos_names(ids: np.ndarray) -> np.ndarray:
    from spacy.parts_of_speech import NAMES

    return np.array([NAMES.get(int(i), "") for i in ids], dtype=object)


def _assert_same(compiled, reference) -> dict[str, int]:
    """POS, TAG and DEP identical on every token; returns the count of each DDP class."""
    ours, theirs = _pos_names(compiled.pos), _pos_names(reference.pos)
    bad = np.flatnonzero(ours != theirs)
    assert len(bad) == 0, f"{len(bad)} tokens differ, first at {bad[0]}: kernel {ours[bad[0]]}, ruler {theirs[bad[0]]}"
    assert np.array_equal(compiled.tag, reference.tag)
    assert np.array_equal(compiled.dep, reference.dep)
    return {c: int((theirs == c).sum()) for c in DDP_CLASSES}


@pytest.fixture(scope="module")
def fast():
    return X.load_pipeline("fast")


# ------------------------------------------------------------------ real text, real pipeline


@pytest.mark.spacy_model
@pytest.mark.slow
def test_compiled_ruler_equals_the_attribute_ruler_on_every_wmt25_token(fast):
    texts = _units(pl.read_ndjson(WMT25)["source"].to_list())
    compiled, reference = _compiled_and_ruler(fast, texts)
    counts = _assert_same(compiled, reference)
    assert len(compiled.pos) > 40_000  # 44,482 tokens with en_core_web_sm 3.8.0
    # every class DDP reads occurs, and the ruler's token-specific patterns are exercised:
    # NN tokens the ruler makes PRON ("something", "nothing", ...) and WDT "that" -> PRON
    assert all(counts[c] > 0 for c in DDP_CLASSES), counts
    lower = X.string_hashes(["something", "nothing", "anything", "everything", "someone", "everyone"])
    nn = X.string_hashes(["NN"])[0]
    pron = X.pos_id("PRON")
    made_pron = np.isin(compiled.lower, lower) & (compiled.tag == nn)
    assert made_pron.sum() > 0 and (compiled.pos[made_pron] == pron).all()


@pytest.mark.spacy_model
@pytest.mark.shared_data
@pytest.mark.slow
def test_compiled_ruler_equals_the_attribute_ruler_on_a_litbank_sample(fast, shared_data):
    archive = shared_data / "litbank-novels" / "litbank_original_novels.tar.xz"
    if not archive.exists():
        pytest.skip(f"{archive} is absent")
    texts, words = [], 0
    with tarfile.open(archive) as tar:  # the first ~8,000 words of each of the first two novels
        members = sorted((m for m in tar.getmembers() if m.isfile() and m.name.endswith(".txt")), key=lambda m: m.name)
        for m in members[:2]:
            raw = tar.extractfile(m).read().decode("utf-8")
            paras = [re.sub(r"\s*\n\s*", " ", p).strip() for p in re.split(r"\n\s*\n", raw)]
            n = 0
            for p in paras:
                if p and n < 8_000:
                    texts.append(p)
                    n += len(p.split())
            words += n
    compiled, reference = _compiled_and_ruler(fast, _units(texts))
    counts = _assert_same(compiled, reference)
    assert words >= 16_000 and all(counts[c] > 0 for c in ("PRON", "NOUN", "PROPN", "ADJ")), counts


@pytest.mark.spacy_model
def test_dependency_patterns_match_real_parses_too():
    """With a parser the DEP-conditioned patterns fire ("that" as a subject -> PRON, aux -> AUX,
    expletive "there is" -> VERB): the compiled rules applied to the default pipeline's parses
    equal the ruler's."""
    nlp = X.load_pipeline(None)
    X.use_compiled_ruler(nlp)
    texts = ["That is what she said, and there is nothing he could have done about it.",
             "Those who knew him were sure that this would happen; all of them said so.",
             "If it rains , we will stay  home  because the roads have been closed since Monday."]
    compiled, reference = _compiled_and_ruler(nlp, texts)
    _assert_same(compiled, reference)
    aux = X.pos_id("AUX")
    assert (compiled.pos == aux).sum() >= 4  # is, could, have, were, would, will, have, been


@pytest.mark.spacy_model
def test_fast_preset_signature_records_the_compiled_ruler(fast, nlp):
    info = X.pipeline_info(fast, "fast")
    assert info["pipeline"] == "fast" and info["pos_source"] == "compiled_attribute_ruler"
    assert info["components"] == ["tok2vec", "tagger", "senter", "ner"]
    assert {"lemmatizer", "parser", "attribute_ruler"} <= set(info["excluded"])
    # en_core_web_sm 3.8.0: 179 patterns; 131 set POS/TAG/DEP; 3 (REGEX, setting only LEMMA/MORPH) are skipped
    assert info["pos_rules"]["rules"] == 179 and info["pos_rules"]["applied"] == 131
    assert info["pos_rules"]["skipped"] == 3
    default = X.pipeline_info(nlp, None)
    assert default["pos_source"] == "attribute_ruler" and "pos_rules" not in default


@pytest.mark.spacy_model
def test_parse_cache_never_mixes_fast_and_default_parses(fast):
    from ddpcore.pipeline import cache as C

    fp_fast, fp_default = C.static_fingerprint("fast"), C.static_fingerprint("default")
    assert fp_fast == C.fingerprint_from_info(X.pipeline_info(fast, "fast"))
    assert fp_fast["pos"].startswith("compiled_attribute_ruler") and "pos" not in fp_default
    assert C.fingerprint_id(fp_fast) != C.fingerprint_id(fp_default)
    # a pipeline with the same components whose POS came from the compiled ruler has its own folder too
    same_components = {**fp_default, "components": fp_fast["components"]}
    assert C.fingerprint_id(same_components) != C.fingerprint_id(fp_fast)


# --------------------------------------------------------------- hand-made pattern sets


def _tiny_pipeline(patterns):
    """A blank English pipeline whose first ruler ("annotate") sets TAG/DEP from the word and
    whose ``attribute_ruler`` holds ``patterns``: TAG and DEP without a trained model."""
    import spacy

    nlp = spacy.blank("en")
    annotate = nlp.add_pipe("attribute_ruler", name="annotate")
    for word, tag, dep in [("blorp", "NN", "nsubj"), ("table", "NN", "dobj"), ("the", "DT", "det"),
                           ("zed", "NNP", "nsubj"), ("x", "JJ", "amod"), ("y", "NN", "pobj"),
                           ("this", "DT", "nsubj"), ("runs", "VBZ", "ROOT")]:
        annotate.add([[{"LOWER": word}]], {"TAG": tag, "DEP": dep})
    ruler = nlp.add_pipe("attribute_ruler")
    ruler.add_patterns(patterns)
    return nlp


TINY = [
    {"patterns": [[{"TAG": "NN"}]], "attrs": {"POS": "NOUN"}},
    {"patterns": [[{"TAG": "DT"}]], "attrs": {"POS": "DET"}},
    {"patterns": [[{"TAG": "NN", "LOWER": "blorp"}]], "attrs": {"POS": "PRON"}},          # later rule wins
    {"patterns": [[{"LOWER": "the"}, {"TAG": "NN"}]], "attrs": {"POS": "PROPN"}, "index": 1},
    {"patterns": [[{"ORTH": "Zed"}]], "attrs": {"POS": "PROPN", "TAG": "NNP"}},           # case-sensitive ORTH
    {"patterns": [[{"IS_SPACE": True}]], "attrs": {"POS": "SPACE", "TAG": "_SP"}},
    {"patterns": [[{"TAG": "DT", "DEP": {"NOT_IN": ["det", ""]}}]], "attrs": {"POS": "PRON"}},
    {"patterns": [[{"LOWER": "x"}, {"LOWER": {"IN": ["y", "table"]}}]], "attrs": {"POS": "ADJ"}, "index": -2},
    {"patterns": [[{"LOWER": {"REGEX": "^run"}}]], "attrs": {"LEMMA": "run"}},            # skipped: sets no POS
    {"patterns": [[{"TAG": "VBZ"}], [{"TEXT": "Runs"}]], "attrs": {"POS": "VERB", "DEP": "root"}},
]


@pytest.mark.spacy_model
def test_a_pipeline_with_other_patterns_gets_its_own_mapping(nlp):
    texts = ["the blorp runs", "The table  and the blorp", "Zed zed x y", "this x table runs", "blorp"]
    tiny = _tiny_pipeline(TINY)
    rules = X.use_compiled_ruler(tiny)
    assert rules.n_rules == len(TINY) and rules.applied == len(TINY) - 1 and rules.skipped == (8,)
    compiled, reference = _compiled_and_ruler(tiny, texts)
    _assert_same(compiled, reference)
    # hand-derived from TINY: "the blorp runs" -> DET, PROPN (index 1 of the-NN beats rule 2's PRON), VERB
    assert list(_pos_names(compiled.pos[:3])) == ["DET", "PROPN", "VERB"]
    assert list(_pos_names(compiled.pos[-1:])) == ["PRON"]  # "blorp" alone: rule 2 beats rule 0
    # the same words under en_core_web_sm's patterns: "blorp" (NN) is a NOUN there, not a PRON
    sm = nlp.get_pipe("attribute_ruler").patterns
    sm_rules = compile_pos_rules(sm, pos_id=X.pos_id, hashes=X.string_hashes)
    from spacy.attrs import IDS

    docs = list(tiny.pipe(["blorp"]))
    attrs = docs[0].to_array([IDS[a] for a in sm_rules.attrs])
    pos, _, _ = apply_pos_rules(sm_rules, attrs, np.array([1]), np.zeros(1, np.int32), X.string_hashes(["NN"]),
                                np.zeros(1, np.uint64))
    assert _pos_names(pos)[0] == "NOUN"


@pytest.mark.spacy_model
def test_an_extra_pattern_in_the_real_ruler_is_followed():
    """en_core_web_sm with one pattern added (NN "table" -> PRON): the compiled rules follow it."""
    nlp = X.load_pipeline(None)
    nlp.get_pipe("attribute_ruler").add([[{"TAG": "NN", "LOWER": "table"}]], {"POS": "PRON"})
    X.use_compiled_ruler(nlp)
    compiled, reference = _compiled_and_ruler(nlp, ["She put the book on the table and left."])
    _assert_same(compiled, reference)
    table = compiled.lower == X.string_hashes(["table"])[0]
    assert _pos_names(compiled.pos[table])[0] == "PRON"


@pytest.mark.parametrize("pattern, why", [
    ({"patterns": [[{"LOWER": {"REGEX": "^th"}}]], "attrs": {"POS": "PRON"}}, "REGEX on LOWER"),
    ({"patterns": [[{"TAG": "NN", "OP": "+"}]], "attrs": {"POS": "NOUN"}}, "the operator OP '+'"),
    ({"patterns": [[{"LEMMA": "be"}]], "attrs": {"POS": "AUX"}}, "a condition on LEMMA"),
    ({"patterns": [[{"LENGTH": {">=": 3}}]], "attrs": {"TAG": "NN"}}, "a condition on LENGTH"),
    ({"patterns": [[{"LOWER": "paris"}]], "attrs": {"ENT_TYPE": "GPE"}}, "the output ENT_TYPE"),
    ({"patterns": [[{"LOWER": "a"}]], "attrs": {"POS": "DET"}, "index": 1}, "index 1 outside a 1-token sequence"),
])
def test_a_pattern_the_compiler_cannot_express_is_an_error_at_load_time(pattern, why):
    patterns = [{"patterns": [[{"TAG": "NN"}]], "attrs": {"POS": "NOUN"}}, pattern]
    with pytest.raises(DDPUsageError) as err:
        compile_pos_rules(patterns, pos_id=X.pos_id, hashes=X.string_hashes, source="pipeline 'custom'")
    msg = str(err.value)
    assert msg.startswith("[D210] pipeline 'custom': pattern 1 ") and why in msg and "\n" not in msg
    assert "--pipeline default" in msg


def test_a_pattern_that_sets_nothing_ddp_reads_is_skipped_not_an_error():
    patterns = [{"patterns": [[{"LOWER": {"REGEX": "^n[ou]thin'$"}}]], "attrs": {"LEMMA": "nothing", "MORPH": "_"}},
                {"patterns": [[{"TAG": "NN"}]], "attrs": {"POS": "NOUN"}}]
    rules = compile_pos_rules(patterns, pos_id=X.pos_id, hashes=X.string_hashes)
    assert rules.skipped == (0,) and rules.applied == 1 and rules.attrs == ("TAG",)


# ------------------------------------------------------ random docs against the sm ruler


@pytest.fixture(scope="module")
def sm_ruler(nlp):
    """(vocab, en_core_web_sm's ruler, its compiled rules, words, tags of its patterns)."""
    ruler = nlp.get_pipe("attribute_ruler")
    words = _pattern_words(ruler.patterns) + ["dog", "Paris", "run", " ", "  ", "\n"]
    tags = sorted({tok["TAG"] for p in ruler.patterns for seq in p["patterns"] for tok in seq
                   if isinstance(tok.get("TAG"), str)}) + [""]
    return nlp.vocab, ruler, compile_pos_rules(ruler.patterns, pos_id=X.pos_id, hashes=X.string_hashes), words, tags


def _pattern_words(patterns) -> list[str]:
    words = set()
    for p in patterns:
        for seq in p["patterns"]:
            for tok in seq:
                v = tok.get("LOWER")
                if isinstance(v, str):
                    words.add(v)
                elif isinstance(v, dict):
                    words.update(w for w in v.get("IN", []) if isinstance(w, str))
    return sorted(words)


@pytest.mark.spacy_model
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_random_docs_get_the_rulers_pos_tag_and_dep(sm_ruler, data):
    """Docs of words from the ruler's own patterns (any case, some whitespace), random tags from
    the tag map and random dependency labels (with the empty label of an unparsed doc)."""
    from spacy.tokens import Doc

    vocab, ruler, rules, words, tags = sm_ruler
    deps = ["", "expl", "aux", "auxpass", "det", "quantmod", "nsubj", "dobj", "pobj", "mark", "ROOT", "advmod",
            "ccomp", "relcl", "conj"]
    n = data.draw(st.integers(1, 12))
    ws = [data.draw(st.sampled_from(words)) for _ in range(n)]
    ws = [w.upper() if data.draw(st.booleans()) and not w.isspace() else w for w in ws]
    doc = Doc(vocab, words=ws, spaces=[False] * n, tags=[data.draw(st.sampled_from(tags)) for _ in range(n)],
              deps=[data.draw(st.sampled_from(deps)) for _ in range(n)], heads=list(range(n)))
    compiled = X._to_arrays(iter([doc]), rules)
    ruler(doc)
    _assert_same(compiled, X._to_arrays(iter([doc])))


# ------------------------------------------------------------------ the preset end to end


@pytest.mark.spacy_model
@pytest.mark.slow
def test_fast_preset_keeps_the_entity_and_pronoun_anchors_of_the_default_on_wmt25(nlp, fast):
    from ddpcore.gold.agree import agree
    from ddpcore.api import profile_anchors

    df = pl.read_ndjson(WMT25)
    base = profile_anchors(df, nlp=nlp, cache=False)
    quick = profile_anchors(df, nlp=fast, pipeline="fast", cache=False)
    assert quick.signature["pos_source"] == "compiled_attribute_ruler" and quick.signature["pipeline"] == "fast"
    key = ["document_id", "segment_id", "kind", "label", "char_start", "char_end"]
    a, b = base.anchors.select(key), quick.anchors.select(key)
    assert a.height > 3000 and a.sort(key).equals(b.sort(key))  # same anchors; sentence numbers may differ
    assert agree(base.segments, quick.segments).pearson >= 0.99
