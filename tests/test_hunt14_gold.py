"""Bug hunt 14 (helper 52): gold comparison and ``ddp validate``, leftovers of earlier hunts. Each test fails
without its fix.

1. ``compare_with_gold`` left out, in silence, the rows of the DDP segment table that are no gold sentence (a
   profile of another or a larger test set): the figures were over the intersection without a word. Now a
   ``UserWarning`` (a ``warning:`` line in the CLI) names how many and the first few, and the result records them
   (``unmatched``: in ``to_dict()`` and in the text report). The opposite (a gold sentence without a DDP row) was
   already an error (D423), checked here too. A ``segment_id`` that is no whole number was a polars
   ``InvalidOperationError`` ("s1") or was cut to a sentence in silence (1.5 -> 1): now D280.
2. The over-estimate diagnosis ignored CorefUD split antecedents (``SplitAnte``), which the gold distance follows:
   *they* of "John ... Mary ... they" measured by DDP to *John* (nearest distance; gold: to *Mary*) was
   ``linked_too_far`` although John is one of its gold antecedents. Now the chain's first sentence includes its
   parts' mentions, as in the gold distance.
3. ``ddp validate --tail 5 --tail 15`` kept only 15 (argparse: the last one wins). Now repeated --tail add up, as
   every other comma-list flag of ``ddp`` does (``--stat``, ``--corpus-metric``...); docs/cli.md says so.

Every gold file is synthetic, written here; expected values are written by hand next to the assertion (with how),
or come from a plain loop in this file.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import polars as pl
import pytest
from corefud_helpers import stand_in_validate
from test_hunt10_gold import HEAD, _split_file, _w, _write

from ddpcore.cli.main import main
from ddpcore.errors import DDPDataError
from ddpcore.gold.validate import compare_with_gold, compute_gold_distances, format_validation_text
from ddpcore.io.gold import read_gold

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _gold(distances: list[int], doc: str = "d1") -> pl.DataFrame:
    n = len(distances)
    return pl.DataFrame({"document_id": [doc] * n, "sentence": list(range(n)), "genre": ["g"] * n,
                         "gold_distance": distances, "gold_chain_id": [None] * n, "gold_reference_sentence": [-1] * n},
                        schema_overrides={"gold_chain_id": pl.String})


# --------------------------------------------------------------------------- 1. rows of the profile that are no gold


def test_profile_rows_without_gold_are_said_and_recorded() -> None:
    gold = _gold([0, 1, 2])
    # the profile of a larger test set: the 3 gold sentences, plus d1 segment 9 and two segments of a document d2
    seg = pl.DataFrame({"document_id": ["d1", "d2", "d1", "d1", "d2", "d1"], "segment_id": [0, 0, 1, 2, 1, 9],
                        "ddp": [0, 7, 1, 4, 7, 9]})
    with pytest.warns(UserWarning) as rec:
        res = compare_with_gold(gold, seg)
    msgs = [str(w.message) for w in rec if "match no gold sentence" in str(w.message)]
    assert len(msgs) == 1
    # by hand: 3 of the 6 rows are no gold sentence, in table order d2/0, d2/1, d1/9
    assert msgs[0].startswith("3 of 6 rows of the DDP segment table match no gold sentence")
    assert "document 'd2' segment 0, document 'd2' segment 1, document 'd1' segment 9" in msgs[0]
    assert "\n" not in msgs[0]
    want = {"segments": 3, "of": 6, "examples": [{"document_id": "d2", "segment_id": 0},
                                                 {"document_id": "d2", "segment_id": 1},
                                                 {"document_id": "d1", "segment_id": 9}]}
    assert res.unmatched == want
    assert json.loads(json.dumps(res.to_dict()))["unmatched"] == want
    assert "3 of 6 rows of the DDP segment table match no gold sentence" in format_validation_text(res)
    # the figures are those of the 3 gold sentences (by hand: ddp 0, 1, 4 against gold 0, 1, 2: mean error 2/3)
    assert res.overall.n_segments == 3 and res.overall.mean_signed_error == pytest.approx(2 / 3)


def test_a_profile_of_exactly_the_gold_says_nothing() -> None:
    seg = pl.DataFrame({"document_id": ["d1", "d1"], "segment_id": [1, 0], "ddp": [1, 0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = compare_with_gold(_gold([0, 1]), seg)
    assert res.unmatched == {} and "unmatched" not in res.to_dict()


def test_gold_sentences_without_a_profile_row_stay_an_error() -> None:
    """The opposite direction was already handled (D423): checked, not changed."""
    seg = pl.DataFrame({"document_id": ["d1"], "segment_id": [0], "ddp": [0]})
    with pytest.raises(DDPDataError, match=r"\[D423\] no DDP for gold sentence 1 of document 'd1' \(1 gold"):
        compare_with_gold(_gold([0, 1]), seg)


@pytest.mark.parametrize("ids, bad", [(["0", "s1"], "'s1'"), ([0.0, 1.5], "1.5"), ([0, None], "None")])
def test_a_segment_id_that_is_no_sentence_index_is_d280(ids: list, bad: str) -> None:
    """Before: 's1' a polars InvalidOperationError (a traceback), 1.5 read as sentence 1 in silence, None a D423
    saying the gold sentence had no row."""
    seg = pl.DataFrame({"document_id": ["d1", "d1"], "segment_id": ids, "ddp": [0, 1]})
    with pytest.raises(DDPDataError, match=rf"\[D280\] .*row 1 \(document 'd1'\): {bad} is not a gold sentence index"):
        compare_with_gold(_gold([0, 1]), seg)


def test_whole_number_segment_ids_of_any_type_still_join() -> None:
    for ids in (["0", "1"], [0.0, 1.0]):
        seg = pl.DataFrame({"document_id": ["d1", "d1"], "segment_id": ids, "ddp": [0, 1]})
        assert compare_with_gold(_gold([0, 1]), seg).overall.share_exact == 1.0  # by hand: 0 = 0, 1 = 1


# --------------------------------------------------------------------------- 2. diagnosis and split antecedents


def _first_sentence(chains: dict[str, list[int]], parts: dict[str, list[str]], chain: str) -> int:
    """A chain's first sentence, a plain loop: its own mentions' sentences and (one level) its parts'."""
    return min([*chains[chain], *(s for p in parts.get(chain, []) for s in chains[p])])


def _they_run(reference: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A DDP run of the 4 sentences of test_hunt10_gold's ``_split_file`` (s0 John e1, s1 Mary e2, s2 the house,
    s3 'They' e3 = e1 + e2 and the door) whose only anchor is 'They' (s3), measured to sentence ``reference``."""
    ddp = 3 - reference
    seg = pl.DataFrame({"document_id": ["d1"] * 4, "segment_id": [0, 1, 2, 3], "ddp": [0, 0, 0, ddp]})
    anchors = pl.DataFrame({
        "document_id": ["d1"], "segment_id": [3], "anchor_index": [0], "kind": ["pronoun"], "label": ["PL"],
        "text": ["They"], "antecedent_kind": ["entity"], "antecedent_text": ["John" if reference == 0 else "Mary"],
        "antecedent_sentence": [reference], "distance_sentences": [ddp], "reference_sentence": [reference],
        "char_start": [0], "char_end": [4]})
    return seg, anchors


def test_a_pronoun_measured_to_a_part_of_its_split_antecedent_is_not_linked_too_far(tmp_path: Path) -> None:
    corpus = read_gold(_split_file(tmp_path))
    gold = compute_gold_distances(corpus, distance="nearest")
    # by hand: nearest gold distance of s3 = 3 - 1 (Mary, the latest part) = 2
    assert gold["gold_distance"].to_list() == [0, 0, 0, 2]
    seg, anchors = _they_run(reference=0)  # DDP measures They to John (s0): 3 > 2, an over-estimate
    res = compare_with_gold(gold, seg, anchors, corpus=corpus)
    (row,) = res.over_estimates.to_dicts()
    chains, parts = {"e1": [0], "e2": [1], "e3": [3], "e4": [2], "e5": [3]}, {"e3": ["e1", "e2"]}
    first = _first_sentence(chains, parts, "e3")
    assert first == 0  # John
    assert row["anchor_gold_chain"] == "e3"
    # measured to s0, not before the chain's first sentence (0): not linked_too_far (was: e3's own first, s3)
    assert row["diagnosis"] == ("linked_too_far" if row["reference_sentence"] < first else "other") == "other"


@pytest.mark.parametrize("scope", ["full", "ddp"])
def test_a_pronoun_measured_before_every_part_is_still_linked_too_far(tmp_path: Path, scope: str) -> None:
    """The fix does not overreach: Peter (s0, no gold link to 'They') before John and Mary (s1, s2)."""
    path = _write(tmp_path / "peter.conllu", HEAD + [
        "# text = Peter sang.", _w(1, "Peter", "PROPN", "NNP", 2, "Entity=(e6-person-1)"), _w(2, "sang", "VERB", "VBD"),
        _w(3, ".", "PUNCT", ".", 2), ""] + _split_file(tmp_path).read_text(encoding="utf-8").splitlines()[2:])
    corpus = read_gold(path)
    gold = compute_gold_distances(corpus, distance="chained", gold_scope=scope)
    # by hand: They (s4) back to John (s1): 3 (the house and the door, e4/e5, are common nouns: not in the ddp scope,
    # and a chain of one sentence in full)
    assert gold["gold_distance"].to_list() == [0, 0, 0, 0, 3]
    seg = pl.DataFrame({"document_id": ["d1"] * 5, "segment_id": [0, 1, 2, 3, 4], "ddp": [0, 0, 0, 0, 4]})
    anchors = pl.DataFrame({
        "document_id": ["d1"], "segment_id": [4], "anchor_index": [0], "kind": ["pronoun"], "label": ["PL"],
        "text": ["They"], "antecedent_kind": ["entity"], "antecedent_text": ["Peter"], "antecedent_sentence": [0],
        "distance_sentences": [4], "reference_sentence": [0], "char_start": [0], "char_end": [4]})
    (row,) = compare_with_gold(gold, seg, anchors, corpus=corpus, gold_scope=scope).over_estimates.to_dicts()
    first = _first_sentence({"e1": [1], "e2": [2], "e3": [4], "e4": [3], "e5": [4], "e6": [0]}, {"e3": ["e1", "e2"]},
                            "e3")
    assert first == 1 and row["reference_sentence"] < first and row["diagnosis"] == "linked_too_far"


# --------------------------------------------------------------------------- 3. --tail given twice


@pytest.mark.parametrize("argv, want", [
    (["--tail", "5", "--tail", "15"], [5, 15]),
    (["--tail", "15,2", "--tail", "5"], [2, 5, 15]),
    (["--tail", "3", "--tail", "3"], [3]),
    ([], [5, 15]),  # the default
])
def test_repeated_tail_flags_add_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str], argv: list[str], want: list[int]) -> None:
    stand_in_validate(monkeypatch)
    assert main(["validate", str(_split_file(tmp_path)), "-q", *argv]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["tails"] == want and d["signature"]["gold"]["tails"] == want
    assert [t["k"] for t in d["columns"]["ddp"]["overall"]["tails"]] == want


def test_repeated_tail_flags_give_the_comma_list_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    stand_in_validate(monkeypatch)
    p = str(_split_file(tmp_path))
    outs = []
    for argv in (["--tail", "5", "--tail", "15"], ["--tail", "5,15"]):
        assert main(["validate", p, "-q", "-f", "text", *argv]) == 0
        outs.append(capsys.readouterr().out.replace(p, "GOLD"))
    assert outs[0] == outs[1] and "precision@15" in outs[0] and "precision@5" in outs[0]


def test_a_bad_value_in_any_tail_flag_is_still_d443(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["validate", "nowhere.conllu", "--tail", "5", "--tail", "0"])
    assert e.value.code == 2 and "[D443] --tail '0'" in capsys.readouterr().err


def test_docs_say_tail_is_repeatable() -> None:
    row = next(line for line in (DOCS / "cli.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| `--tail` |"))
    assert "repeatable" in row and "`--tail 5 --tail 15` = `--tail 5,15`" in row
