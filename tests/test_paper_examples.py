"""The DDP paper's worked example (Kim, Park & Kim, arXiv 2609.04959, appendix C.2) as a regression case.

Three consecutive literary segments of the WMT24 English source, document
``test-en-literary_forever_snow_chunk_2_words_986``, line ids 923, 924, 925 (0-based lines of
``wmt24_en_source.txt`` with the canary line as 0 = segments 23, 24, 25 of the document, whose first
line is 900). The paper reports DDP 6 → 53 → 54, the last because "They" (Ivory, a non-binary
character) was introduced 54 sentences earlier.

The text is not vendored: the WMT24 release has no licence file and its SOURCE.md says to treat it
as research-only (shared-data test, skipped when the folder is absent). The document is read with
the ``wmt24`` reader (the same code as ``ddp profile --reader wmt24``) and profiled up to line 925,
the context the three segments need (a document is profiled on its own; later lines cannot change
earlier distances).

Every expected value below was produced by en_core_web_sm 3.8.0 (the default pipeline), chained
distance, and read back with ``ddp explain ddp.parquet --document <doc> --segment 23|24|25``
(`ddp profile wmt24_en_source.txt --reader wmt24 --rules R -o ddp.parquet`). Sentence numbers are
sentences of the whole document: segment 23 holds s54–s58, 24 s59–s61, 25 s62–s63; the entity
"Ivory" is first recognised in s8 (tagged ORG there, NORP in s59, GPE in s61: one entity, keyed by
its text).
"""
from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from ddpcore.anchors.rules import RULE_SETS

pytestmark = [pytest.mark.shared_data, pytest.mark.spacy_model]

DOC = "test-en-literary_forever_snow_chunk_2_words_986"
LINE_IDS = (923, 924, 925)
PAPER_DDP = (6, 53, 54)  # seed 000, appendix C.2 "Case-study setup"

# rule set -> per line id: (DDP, the anchor that sets it: (text, antecedent text, antecedent sentence))
EXPECTED: dict[str, dict[int, tuple[int, tuple[str, str, int]]]] = {
    # paper: 2 → 53 → 1.
    #  923 s54 "They" (PL) -> entity "Frostfell" (ORG, s52; ORG is PL-compatible): 54 - 52 = 2. "his" (s58) links
    #      to "Crown Prince" in its own sentence (0). The paper's 6: see docs/validation.md "The paper's worked
    #      example" and test_paper_six_needs_two_ner_differences below.
    #  924 s61 "Ivory" (GPE) re-mentions the entity first seen in s8: 61 - 8 = 53 (s59 "Ivory", NORP: 51).
    #  925 s62 "They" (PL) -> entity "Aquilo" (PERSON, s61): under `paper` PERSON is PL-compatible, and Aquilo
    #      is the most recent compatible antecedent: 62 - 61 = 1; "him" -> Aquilo, 1 as well.
    "paper": {923: (2, ("They", "Frostfell", 52)), 924: (53, ("Ivory", "Ivory", 59)), 925: (1, ("They", "Aquilo", 61))},
    # refined: 2 → 53 → 54.
    #  923 and 924 as `paper` (no title, no first-name or NORP-adjective rule applies).
    #  925 `refined` drops they -> PERSON links, so "They" skips Aquilo (PERSON, s61) and Ivory (GPE, s61:
    #      NEUT_SG only) and links to "Ivory" in s59 (NORP, PL-compatible): the entity's first mention is s8,
    #      62 - 8 = 54. The paper's number, reached through the NORP tag of a character name, not through
    #      singular "they"; "him" -> Aquilo stays 1.
    "refined": {923: (2, ("They", "Frostfell", 52)), 924: (53, ("Ivory", "Ivory", 59)), 925: (54, ("They", "Ivory", 59))},
    # refined-names: as refined (the first-name lists give no gender to Ivory, Aquilo, Kari or Frostfell).
    "refined-names": {923: (2, ("They", "Frostfell", 52)), 924: (53, ("Ivory", "Ivory", 59)),
                      925: (54, ("They", "Ivory", 59))},
}
# `learned` (issue 14 §2, a trained antecedent scorer) is checked once it is registered in RULE_SETS. Its values
# are not known before it is trained, so only what a correct linker must give is pinned: 924 is a named re-mention
# (53, as every rule set), and 925's "They" is Ivory (the paper's reading: 54). 923's correct reading ("They" =
# Ivory: 54 - 8 = 46) is neither the paper's 6 nor the rules' 2, so it is not pinned here; add the measured
# value with its `ddp explain` reasoning when the model is fixed.
LEARNED_PINNED = {924: (53, ("Ivory", "Ivory", 59)), 925: (54, ("They", "Ivory", 59))}
RULE_SET_NAMES = ("paper", "refined", "refined-names", "learned")


@pytest.fixture(scope="module")
def document(shared_data: Path) -> pl.DataFrame:
    """The document's segments up to line id 925, through the wmt24 reader."""
    from ddpcore.io.sources import read_input

    src = shared_data / "wmt24-genmt" / "wmt24_en_source.txt"
    if not src.exists():
        pytest.skip(f"shared data not available: {src} is absent")
    table = read_input(src, reader="wmt24")
    part = table.filter((pl.col("document_id") == DOC) & (pl.col("line_id") <= max(LINE_IDS)))
    # `grep -n forever_snow_chunk_2 wmt24_en.docs`: first at file line 901 = line id 900, 39 lines in all
    assert part["line_id"].to_list() == list(range(900, 926))
    assert part["segment_id"].to_list() == list(range(26))
    return part.select("document_id", "segment_id", "source", "domain", "line_id")


def _profile(document: pl.DataFrame, rules: str, nlp=None):  # type: ignore[no-untyped-def]
    from ddpcore.api import ProfileOptions, profile_anchors

    return profile_anchors(document, rules=rules, nlp=nlp, cache=False if nlp is not None else None, options=ProfileOptions(distance="chained"))


def _responsible(run, line_id: int) -> tuple[int, tuple[str, str, int]]:  # type: ignore[no-untyped-def]
    """(DDP of the segment, first anchor whose distance equals it: text, antecedent text, antecedent sentence)."""
    seg = run.segments.filter(pl.col("line_id") == line_id).row(0, named=True)
    a = (run.anchors.filter((pl.col("segment_id") == seg["segment_id"]) & (pl.col("distance_sentences") == seg["ddp"]))
         .sort("anchor_index").row(0, named=True))
    return seg["ddp"], (a["text"], a["antecedent_text"], a["antecedent_sentence"])


# Measured with the shipped weights (version 2: layout 1, sha256 efb0e98d..., the Newton refit of 7d4b3e12...,
# same links here; the anchors table of `ddp profile
# --rules learned`, and the same run with fallback and abstain switched off to see which links the scores make):
# 923 -> 1: the "They" of s54 scores below the pronoun abstain level (0.1) and is no anchor; "It" (s57) scores below the 0.25 threshold and falls back to the rule's antecedent "sight"
# (s56): 57 - 56 = 1. 924 -> 53 ("Ivory" -> "Ivory", chained to s8; the pinned value). 925 -> 54: "They" (s62)
# scores below the threshold and falls back to the rule's antecedent, "Ivory" (s59), chained to Ivory's first
# mention s8: 62 - 8 = 54 (the paper's reading, pinned; `refined` gives the same by its rule). Version 1 gave
# 1 -> 53 -> 2 (both "They" unlinked at distance 1) and was a strict xfail here.
LEARNED_MEASURED = {923: (1, ("It", "sight", 56)), 924: (53, ("Ivory", "Ivory", 59)), 925: (54, ("They", "Ivory", 59))}
assert all(LEARNED_MEASURED[k] == v for k, v in LEARNED_PINNED.items())


@pytest.mark.parametrize("rules", RULE_SET_NAMES)
def test_worked_example(document: pl.DataFrame, rules: str) -> None:
    if rules not in RULE_SETS:
        pytest.skip(f"rule set {rules!r} is not registered in this build (ddpcore.anchors.rules.RULE_SETS)")
    run = _profile(document, rules)
    assert run.segments.filter(pl.col("line_id") == 923)["first_sentence"].to_list() == [54]
    expected = EXPECTED.get(rules, LEARNED_MEASURED if rules == "learned" else None)
    assert expected is not None
    got = {line: _responsible(run, line) for line in expected}
    assert got == expected


def test_paper_six_needs_two_ner_differences(document: pl.DataFrame) -> None:
    """The one reading we found that gives the paper's 6 for line 923: an NER that tags "the White Dragon"
    (s52) PERSON and does not tag "Crown Prince Aquilo" (s58) as an anchor. Then `paper`'s "his" (s58) links to
    the White Dragon, 58 - 52 = 6, and the three segments read 6 → 53 → 1. Simulated with an entity ruler in
    front of the default NER (the label TITLE is not an anchor label)."""
    from ddpcore.anchors.spacy_extract import load_pipeline

    nlp = load_pipeline(None)
    ruler = nlp.add_pipe("entity_ruler", before="ner")
    ruler.add_patterns([
        {"label": "PERSON", "pattern": [{"LOWER": "the"}, {"LOWER": "white"}, {"LOWER": "dragon"}]},
        {"label": "TITLE", "pattern": [{"LOWER": "crown"}, {"LOWER": "prince"}, {"LOWER": "aquilo"}]},
    ])
    run = _profile(document, "paper", nlp=nlp)
    assert _responsible(run, 923) == (6, ("his", "the White Dragon", 52))
    assert [_responsible(run, line)[0] for line in LINE_IDS] == [6, 53, 1]
