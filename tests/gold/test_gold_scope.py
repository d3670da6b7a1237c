"""``--gold-scope full|restricted|ddp``: hand-made documents in every gold format with their gold
distances worked out by hand, the mention classification of the ``ddp`` scope form by form, and the
vectorised code against the slow oracle of tests/oracles/gold.py on hypothesis-generated chains."""
from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore.gold.validate import (
    GOLD_SCOPES, compute_gold_distances, resolve_gold_scope, scope_gold_mentions,
)
from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.io.gold import GoldCorpus, read_gold

from oracles.gold import naive_gold_distances, naive_role

# --------------------------------------------------------------------------- the hand-made story
#
# One seven-sentence story, written in each gold format. Chains (mentions by sentence):
#   e1 Anna      s0 "Anna" PROP · s1 "The doctor" NOM · s3 "She" PRON · s5 "Her" PRON
#   e2 narrator  s0 "me" · s2 "I" · s4 "me" (1st person) · s6 "Tom" PROP
#   e3 Paris     s0 "Paris" PROP · s3 "the city" NOM
#   e4 the cat   s1 "a cat" NOM · s2 "it" PRON · s5 "Her cat" NOM
#   e5 Monday    s2 "Monday" PROP · s4 "Monday" PROP          (LitBank: "Pequod", a named ship, VEH)
#   e6 addressee s4 "you" · s5 "you" (2nd person)               (LitBank: s5 "thee")
STORY = [
    "Anna met me in Paris .",
    "The doctor saw a cat .",
    "I fed it on Monday .",
    "She loved the city .",
    "On Monday you called me .",
    "Her cat liked you .",
    "Tom waved .",
]
# full, chained (every mention counts, back to the chain's first mention):
#   s1 doctor 1-0=1 · s2 I 2-0=2, it 2-1=1 · s3 She 3-0, city 3-0 → 3 · s4 Monday 4-2=2, me 4-0=4 → 4
#   s5 Her 5-0, Her cat 5-1=4, you 5-4=1 → 5 · s6 Tom 6-0=6
# full, nearest (back to the chain's latest earlier sentence):
#   s1 1 · s2 I 2-0=2, it 2-1=1 → 2 · s3 She 3-1=2, city 3-0=3 → 3 · s4 Monday 4-2=2, me 4-2=2 → 2
#   s5 Her 5-3=2, Her cat 5-2=3, you 5-4=1 → 3 · s6 Tom 6-4=2
# restricted (NOM doctor, a cat, the city, Her cat removed as anaphors and antecedents):
#   chained: s1 nothing left → 0 · s2 I 2, it is now e4's first → 2 · s3 She 3 · s4 me 4 · s5 Her 5 · s6 Tom 6
#   nearest: s2 2 · s3 She 3-0=3 · s4 me 4-2, Monday 4-2 → 2 · s5 Her 5-3=2, you 5-4=1 → 2 · s6 6-4=2
# ddp (me/I/you removed; doctor, a cat, the city, Her cat kept as antecedents only; Monday is temporal:
# antecedent only; Tom is e2's first remaining mention):
#   chained: s1 doctor does not count → 0 · s2 it 2-1=1 (to "a cat") · s3 She 3-0=3 · s4 Monday does not
#            count → 0 · s5 Her 5-0=5 · s6 Tom first remaining → 0
#   nearest: s2 it 2-1=1 · s3 She 3-1=2 (to "The doctor") · s4 0 · s5 Her 5-3=2 · s6 0
HAND_GUM = {
    ("full", "chained"): [0, 1, 2, 3, 4, 5, 6],
    ("full", "nearest"): [0, 1, 2, 3, 2, 3, 2],
    ("restricted", "chained"): [0, 0, 2, 3, 4, 5, 6],
    ("restricted", "nearest"): [0, 0, 2, 3, 2, 2, 2],
    ("ddp", "chained"): [0, 0, 1, 3, 0, 5, 0],
    ("ddp", "nearest"): [0, 0, 1, 2, 0, 2, 0],
}
# LitBank: "Pequod" (PROP, VEH: a named vehicle, which DDP anchors as PRODUCT/FAC) instead of Monday, so it
# counts: ddp chained s4 Pequod 4-2=2 and nearest s4 4-2=2; "thee" is second person (removed) like "you".
# full and restricted are unchanged (same chains and mention types).
HAND_LITBANK = dict(HAND_GUM)
HAND_LITBANK[("ddp", "chained")] = [0, 0, 1, 3, 2, 5, 0]
HAND_LITBANK[("ddp", "nearest")] = [0, 0, 1, 2, 2, 2, 0]

# CoNLL-U token rows: (form, upos, xpos, head, deprel, Entity=...) per sentence; GUM types in the brackets
_GUM_ROWS = [
    [("Anna", "PROPN", "NNP", 2, "nsubj", "(1-person-new)"), ("met", "VERB", "VBD", 0, "root", ""),
     ("me", "PRON", "PRP", 2, "obj", "(2-person-new)"), ("in", "ADP", "IN", 5, "case", ""),
     ("Paris", "PROPN", "NNP", 2, "obl", "(3-place-new)"), (".", "PUNCT", ".", 2, "punct", "")],
    [("The", "DET", "DT", 2, "det", "(1-person-giv"), ("doctor", "NOUN", "NN", 3, "nsubj", "1)"),
     ("saw", "VERB", "VBD", 0, "root", ""), ("a", "DET", "DT", 5, "det", "(4-animal-new"),
     ("cat", "NOUN", "NN", 3, "obj", "4)"), (".", "PUNCT", ".", 3, "punct", "")],
    [("I", "PRON", "PRP", 2, "nsubj", "(2-person-giv)"), ("fed", "VERB", "VBD", 0, "root", ""),
     ("it", "PRON", "PRP", 2, "obj", "(4-animal-giv)"), ("on", "ADP", "IN", 5, "case", ""),
     ("Monday", "PROPN", "NNP", 2, "obl", "(5-time-new)"), (".", "PUNCT", ".", 2, "punct", "")],
    [("She", "PRON", "PRP", 2, "nsubj", "(1-person-giv)"), ("loved", "VERB", "VBD", 0, "root", ""),
     ("the", "DET", "DT", 4, "det", "(3-place-giv"), ("city", "NOUN", "NN", 2, "obj", "3)"),
     (".", "PUNCT", ".", 2, "punct", "")],
    [("On", "ADP", "IN", 2, "case", ""), ("Monday", "PROPN", "NNP", 4, "obl", "(5-time-giv)"),
     ("you", "PRON", "PRP", 4, "nsubj", "(6-person-new)"), ("called", "VERB", "VBD", 0, "root", ""),
     ("me", "PRON", "PRP", 4, "obj", "(2-person-giv)"), (".", "PUNCT", ".", 4, "punct", "")],
    [("Her", "PRON", "PRP$", 2, "nmod:poss", "(4-animal-giv(1-person-giv)"), ("cat", "NOUN", "NN", 3, "nsubj", "4)"),
     ("liked", "VERB", "VBD", 0, "root", ""), ("you", "PRON", "PRP", 3, "obj", "(6-person-giv)"),
     (".", "PUNCT", ".", 3, "punct", "")],
    [("Tom", "PROPN", "NNP", 2, "nsubj", "(2-person-giv)"), ("waved", "VERB", "VBD", 0, "root", ""),
     (".", "PUNCT", ".", 2, "punct", "")],
]


def _conllu(doc_id: str, *, typed: bool) -> str:
    """The story as CoNLL-U: GUM style (``GRP-etype-infstat``) or OntoGUM style (``GRP``: ids only)."""
    import re

    out = [f"# newdoc id = {doc_id}", f"# global.Entity = {'GRP-etype-infstat' if typed else 'GRP'}",
           "# meta::genre = fiction"]
    for i, (text, rows) in enumerate(zip(STORY, _GUM_ROWS)):
        out += [f"# sent_id = {doc_id}-{i + 1}", f"# text = {text}"]
        for k, (form, upos, xpos, head, rel, ent) in enumerate(rows, 1):
            if not typed:  # OntoGUM: "(4-animal-giv" -> "(4"
                ent = re.sub(r"\((\d+)-[^()]*", r"(\1", ent)
            misc = f"Entity={ent}" if ent else "_"
            out.append(f"{k}\t{form}\t{form.lower()}\t{upos}\t{xpos}\t_\t{head}\t{rel}\t_\t{misc}")
        out.append("")
    return "\n".join(out) + "\n"


# LitBank: (sentence, first token, last token inclusive, entity type, mention type, chain)
_LB_STORY = [s.replace("Monday", "Pequod").replace("liked you", "liked thee") for s in STORY]
_LB_MENTIONS = [
    (0, 0, 0, "PER", "PROP", "e1"), (0, 2, 2, "PER", "PRON", "e2"), (0, 4, 4, "GPE", "PROP", "e3"),
    (1, 0, 1, "PER", "NOM", "e1"), (1, 3, 4, "PER", "NOM", "e4"),
    (2, 0, 0, "PER", "PRON", "e2"), (2, 2, 2, "PER", "PRON", "e4"), (2, 4, 4, "VEH", "PROP", "e5"),
    (3, 0, 0, "PER", "PRON", "e1"), (3, 2, 3, "GPE", "NOM", "e3"),
    (4, 1, 1, "VEH", "PROP", "e5"), (4, 2, 2, "PER", "PRON", "e6"), (4, 4, 4, "PER", "PRON", "e2"),
    (5, 0, 0, "PER", "PRON", "e1"), (5, 0, 1, "PER", "NOM", "e4"), (5, 3, 3, "PER", "PRON", "e6"),
    (6, 0, 0, "PER", "PROP", "e2"),
]


def _litbank_tsv(folder: Path, name: str) -> Path:
    toks = [s.split(" ") for s in _LB_STORY]
    (folder / f"{name}.txt").write_text("\n".join(_LB_STORY) + "\n", encoding="utf-8")
    lines = []
    for i, (s, a, b, et, mt, chain) in enumerate(_LB_MENTIONS, 1):
        lines.append(f"MENTION\tT{i}\t{s}\t{a}\t{s}\t{b}\t{' '.join(toks[s][a:b + 1])}\t{et}\t{mt}")
        lines.append(f"COREF\tT{i}\t{chain}")
    ann = folder / f"{name}.ann"
    ann.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ann


def _litbank_conll(folder: Path, name: str) -> Path:
    """LitBank's CoNLL form: no POS, no entity types (types come from the word forms)."""
    toks = [s.split(" ") for s in _LB_STORY]
    marks: dict[tuple[int, int], list[str]] = {}
    for s, a, b, _et, _mt, chain in _LB_MENTIONS:
        cid = chain[1:]
        if a == b:
            marks.setdefault((s, a), []).append(f"({cid})")
        else:
            marks.setdefault((s, a), []).append(f"({cid}")
            marks.setdefault((s, b), []).append(f"{cid})")
    out = [f"#begin document ({name}); part 0"]
    for s, words in enumerate(toks):
        for k, w in enumerate(words):
            out.append("\t".join([name, "0", str(k), w] + ["_"] * 7 + ["|".join(marks.get((s, k), [])) or "_"]))
        out.append("")
    out.append("#end document")
    path = folder / f"{name}_brat.conll"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def _distances(corpus: GoldCorpus, scope: str, distance: str) -> list[int]:
    return compute_gold_distances(corpus, distance=distance, gold_scope=scope)["gold_distance"].to_list()  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> dict[str, GoldCorpus]:
    root = tmp_path_factory.mktemp("story")
    (root / "story_gum.conllu").write_text(_conllu("story_gum", typed=True), encoding="utf-8")
    (root / "story_onto.conllu").write_text(_conllu("story_onto", typed=False), encoding="utf-8")
    tsv, conll = root / "tsv", root / "conll"
    tsv.mkdir()
    conll.mkdir()
    return {
        "gum": read_gold(root / "story_gum.conllu"),
        "ontogum": read_gold(root / "story_onto.conllu"),
        "litbank_tsv": read_gold(_litbank_tsv(tsv, "story")),
        "litbank_conll": read_gold(_litbank_conll(conll, "story")),
    }


@pytest.mark.parametrize(("scope", "distance"), list(HAND_GUM))
@pytest.mark.parametrize("fmt", ["gum", "ontogum", "litbank_tsv", "litbank_conll"])
def test_story_in_every_format(story: dict[str, GoldCorpus], fmt: str, scope: str, distance: str) -> None:
    hand = HAND_LITBANK if fmt.startswith("litbank") else HAND_GUM
    assert _distances(story[fmt], scope, distance) == hand[(scope, distance)]


def test_story_readers_give_the_classification_inputs(story: dict[str, GoldCorpus]) -> None:
    """What each format tells the ddp scope: mention type, entity type (GUM, LitBank TSV) and head word."""
    gum = story["gum"].mentions
    # CoNLL-U: the head is the span token whose dependency head lies outside the span
    assert gum.filter(pl.col("text") == "Her cat")[["head_text", "mention_type", "entity_type"]].row(0) == (
        "cat", "NOM", "animal")
    assert gum.filter(pl.col("text") == "Monday")["entity_type"].to_list() == ["time", "time"]
    assert story["ontogum"].mentions["entity_type"].null_count() == story["ontogum"].mentions.height
    # LitBank CoNLL (word-form types) agrees with the TSV's given types on every story mention
    key = ["sentence", "token_start", "token_end"]
    tsv = story["litbank_tsv"].mentions.sort(key)
    conll = story["litbank_conll"].mentions.sort(key)
    assert tsv["mention_type"].to_list() == conll["mention_type"].to_list()
    assert tsv["head_text"].to_list() == conll["head_text"].to_list()
    assert tsv.filter(pl.col("text") == "Pequod")["entity_type"].to_list() == ["VEH", "VEH"]


def test_conll2012_tiny_in_ddp_scope() -> None:
    """tests/data/gold/conll2012/tiny.v4_gold_conll (hand-written; full/restricted hand-worked in
    test_gold_distances.py). ddp scope: every mention is 3rd-person or named; "The weather", "The man 's"
    and "The man 's wife" (NOM) are antecedents only.
      chained: s1 He/her 1 · s2 weather no count → 0 · s3 Mary 3 · s4 It 4-2=2 (to the kept NOM "The weather"),
               Smith 4-0=4 → 4 · s5 only NOM → 0;  part 1: s1 Spain 1, him 1 → 1
      nearest: s1 1 · s3 Mary 3-1=2 · s4 It 4-2=2, Smith 4-1=3 → 3 · s5 0
    """
    tiny = read_gold(Path(__file__).resolve().parents[1] / "data" / "gold" / "conll2012" / "tiny.v4_gold_conll")
    doc = "nw/test/00/test_0000"
    for distance, want in (("chained", [0, 1, 0, 3, 4, 0]), ("nearest", [0, 1, 0, 2, 3, 0])):
        g = compute_gold_distances(tiny, distance=distance, gold_scope="ddp")  # type: ignore[arg-type]
        assert g.filter(pl.col("document_id") == doc)["gold_distance"].to_list() == want
        assert g.filter(pl.col("document_id") == doc + "#1")["gold_distance"].to_list() == [0, 1]


# --------------------------------------------------------------------------- classification, form by form

# (mention_type, entity_type, head_text) -> role in the ddp scope; each row is docs/validation.md "Gold scope"
ROLES = [
    ("PRON", "person", "I", "drop"), ("PRON", None, "I.", "drop"),  # LitBank tokenises a final "I."
    ("PRON", "person", "you", "drop"), ("PRON", "PER", "thee", "drop"), ("PRON", None, "ye", "drop"),
    ("PRON", "person", "’s", "drop"),  # GUM: the "us" of "let's", curly apostrophe
    ("PRON", "person", "My", "drop"), ("PRON", "PER", "ee", "drop"),  # LitBank "' ee" (head "ee")
    ("PRON", "person", "She", "count"), ("PRON", None, "themself", "count"), ("PRON", "abstract", "it", "count"),
    ("PRON", "person", "one", "antecedent"), ("PRON", "person", "em", "antecedent"),  # DDP anchors neither
    ("PROP", "person", "Anna", "count"), ("PROP", "PER", "Anna", "count"), ("PROP", "VEH", "Pequod", "count"),
    ("PROP", "abstract", "English", "count"), ("PROP", "animal", "Kermit", "count"),
    ("PROP", "time", "Monday", "antecedent"), ("PROP", "Time", "Career", "antecedent"),
    ("PROP", "quantity", "Five", "antecedent"),
    ("PROP", None, "Monday", "antecedent"), ("PROP", None, "May.", "antecedent"), ("PROP", None, "Paris", "count"),
    ("NOM", "person", "doctor", "antecedent"), ("NOM", None, "who", "antecedent"),
    ("NOM", "person", "I", "antecedent"),  # person is read from PRON mentions only
]


def test_ddp_scope_roles_form_by_form() -> None:
    m = pl.DataFrame(
        {"document_id": ["d"] * len(ROLES), "sentence": list(range(len(ROLES))), "chain_id": ["c"] * len(ROLES),
         "mention_type": [r[0] for r in ROLES], "entity_type": [r[1] for r in ROLES],
         "head_text": [r[2] for r in ROLES]},
        schema={"document_id": pl.String, "sentence": pl.Int32, "chain_id": pl.String, "mention_type": pl.String,
                "entity_type": pl.String, "head_text": pl.String},
    )
    kept = scope_gold_mentions(m, "ddp")
    got = {row["sentence"]: ("count" if row["counted"] else "antecedent") for row in kept.iter_rows(named=True)}
    for i, (mt, et, head, role) in enumerate(ROLES):
        assert got.get(i, "drop") == role, (mt, et, head)
        assert naive_role("ddp", mt, et, head) == role, (mt, et, head)  # the oracle agrees with the table


def test_scope_errors() -> None:
    with pytest.raises(DDPUsageError, match=r"unknown gold scope 'bogus'; choose one of: full, restricted, ddp"):
        resolve_gold_scope("bogus")
    old = pl.DataFrame({"document_id": ["d"], "sentence": [0], "chain_id": ["c"], "mention_type": ["PRON"]})
    with pytest.raises(DDPDataError, match=r"lack column\(s\) entity_type, head_text"):
        scope_gold_mentions(old, "ddp")
    assert scope_gold_mentions(old, "full")["counted"].to_list() == [True]
    assert GOLD_SCOPES == ("full", "restricted", "ddp")


# --------------------------------------------------------------------------- CLI

def _ddp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *args], capture_output=True, text=True, timeout=120)


def test_cli_unknown_gold_scope_is_one_line_exit_2(tmp_path: Path) -> None:
    gold = tmp_path / "g.conllu"
    gold.write_text(_conllu("g", typed=True), encoding="utf-8")
    proc = _ddp("validate", str(gold), "--gold-scope", "narrow")
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("ddp validate: error: argument --gold-scope: [D230] unknown gold scope 'narrow'; "
                               "choose one of: full, restricted, ddp")


@pytest.mark.parametrize(("args", "line"), [
    (("--restricted",), "ddp validate: error: [D444] --restricted was removed; use --gold-scope restricted"),
    (("--restricted", "--gold-scope", "ddp"),
     "ddp validate: error: [D444] --restricted was removed; use --gold-scope restricted"),
    (("--output-format", "text"), "ddp validate: error: [D444] --output-format was removed; use -f/--format text"),
    (("--format", "conllu"), "ddp validate: error: argument -f/--format: [D444] -f/--format is the report format "
                             "(json, text); the gold format is --gold-format conllu (see 'ddp validate --help')"),
])
def test_cli_removed_spellings_are_one_line_exit_2(tmp_path: Path, args: tuple[str, ...], line: str) -> None:
    """The spellings deprecated in the previous release (issue 20) are gone: one line naming the new one, exit 2,
    before any gold is read (the gold file here does not exist)."""
    proc = _ddp("validate", str(tmp_path / "absent.conllu"), *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [line]


def test_python_restricted_keyword_is_gone(tmp_path: Path) -> None:
    from ddpcore.gold.validate import compare_with_gold, validate

    for f in (compute_gold_distances, compare_with_gold, validate):
        assert "restricted" not in inspect.signature(f).parameters, f.__name__


@pytest.mark.spacy_model
def test_cli_gold_scope_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from ddpcore.cli.main import main

    gold = tmp_path / "story.conllu"
    gold.write_text(_conllu("story", typed=True), encoding="utf-8")
    out = tmp_path / "over.csv"
    assert main(["validate", str(gold), "--gold-scope", "ddp", "-q", "--rules", "paper",
                 "--over-estimates", str(out)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["signature"]["gold"]["scope"] == "ddp" and d["signature"]["gold"]["restricted"] is False
    assert d["overall"]["n_segments"] == 7


@pytest.mark.spacy_model
def test_python_api_gold_scope(tmp_path: Path) -> None:
    from ddpcore.gold.validate import validate

    gold = tmp_path / "story.conllu"
    gold.write_text(_conllu("story", typed=True), encoding="utf-8")
    res = validate(gold, gold_scope="ddp", rules="paper")
    assert res.segments["gold_distance"].to_list() == HAND_GUM[("ddp", "chained")]
    assert res.signature["gold"]["scope"] == "ddp"
    with pytest.raises(DDPUsageError, match="D230|unknown gold scope"):
        validate(gold, gold_scope="wide")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- against the oracle

HEADS = ["Anna", "Paris", "Monday", "I", "I.", "you", "’s", "thee", "he", "Her", "it", "They", "one", "em",
         "doctor", "the"]
mention_st = st.tuples(
    st.sampled_from(["d1", "d2"]), st.integers(0, 7), st.sampled_from(["a", "b", "c", "d"]),
    st.sampled_from(["PROP", "NOM", "PRON"]), st.sampled_from([None, "person", "time", "PER", "VEH", "quantity"]),
    st.sampled_from(HEADS),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(mention_st, max_size=30), st.sampled_from(["chained", "nearest"]), st.sampled_from(GOLD_SCOPES))
def test_matches_naive_oracle(mentions: list, distance: str, scope: str) -> None:
    sentences = [(d, s) for d in ("d1", "d2") for s in range(8)]
    corpus = GoldCorpus(
        sentences=pl.DataFrame({
            "document_id": [d for d, _ in sentences], "sentence": [s for _, s in sentences], "genre": ["g"] * len(sentences),
        }, schema={"document_id": pl.String, "sentence": pl.Int32, "genre": pl.String}),
        mentions=pl.DataFrame({
            "document_id": [m[0] for m in mentions], "sentence": [m[1] for m in mentions],
            "chain_id": [m[2] for m in mentions], "mention_type": [m[3] for m in mentions],
            "entity_type": [m[4] for m in mentions], "head_text": [m[5] for m in mentions],
        }, schema={"document_id": pl.String, "sentence": pl.Int32, "chain_id": pl.String, "mention_type": pl.String,
                   "entity_type": pl.String, "head_text": pl.String}),
    )
    got = compute_gold_distances(corpus, distance=distance, gold_scope=scope)  # type: ignore[arg-type]
    want = naive_gold_distances(mentions, sentences, distance=distance, scope=scope)
    assert dict(zip(zip(got["document_id"], got["sentence"]), got["gold_distance"])) == want
    if distance == "chained" and scope == "ddp":
        # the ddp scope removes mentions (first mentions can only move later) and counts a subset of them:
        # its chained distances are never above the full gold's
        full = compute_gold_distances(corpus, distance="chained")["gold_distance"]
        assert (got["gold_distance"] <= full).all()
