"""``--reader wmt25-scores`` and ``--reader comet`` (ddpcore.io.wmt25_scores).

The JSONL sample is checked against ``segments_sample.tsv`` (the same scores as a flat table, see
tests/data/wmt25_scores/SOURCE.md) and against a plain loop over the JSON objects; the COMET fixture
against the values written in it.
"""
from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.io.scores import read_score_input
from ddpcore.io.wmt25_scores import read_comet_json, read_wmt25_scores

DATA = Path(__file__).resolve().parents[1] / "data" / "wmt25_scores"
JSONL = DATA / "automatic_scores_sample.jsonl"


def test_jsonl_equals_the_flat_table() -> None:
    got = read_wmt25_scores(JSONL, lp="en-ko_KR")
    tsv = pl.read_csv(DATA / "segments_sample.tsv", separator="\t")
    assert got.height == tsv.height == 2 * (43 + 9)
    j = got.join(tsv.rename({"doc": "document_id", "seg_idx": "segment_id"}), on=["system", "document_id", "segment_id"])
    assert j.height == got.height
    for m in ("CometKiwi-XL", "GEMBA-ESA-CMDA", "GEMBA-ESA-GPT4.1", "MetricX-24-Hybrid-XL", "XCOMET-XL"):
        assert (j[m] - j[f"{m}_right"]).abs().max() == 0.0


def test_jsonl_against_a_loop_long_layout() -> None:
    rows = [json.loads(line) for line in JSONL.read_text().splitlines()]
    want = {(r["system"], r["document_id"], k, m): float(v) for r in rows if r["language_pair"] == "en-ko_KR"
            for m, vals in r["metric_scores"].items() for k, v in enumerate(vals)}
    got = read_wmt25_scores(JSONL, lp="en-ko_KR", layout="long")
    have = {(r["system"], r["document_id"], r["segment_id"], r["condition"]): r["score"] for r in got.iter_rows(named=True)}
    assert have == want


def test_missing_values_absent_metrics_and_lengths(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in JSONL.read_text().splitlines()][:2]
    rows[0]["metric_scores"]["chrF++"] = [50.0] * len(rows[0]["metric_scores"]["XCOMET-XL"])  # chrF++ in one row only
    rows[1]["metric_scores"]["XCOMET-XL"][0] = None
    p = tmp_path / "s.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    notes: list[str] = []
    got = read_wmt25_scores(p, lp="en-ko_KR", warn=notes.append)
    assert got["XCOMET-XL"].null_count() == 1
    n1 = len(rows[1]["metric_scores"]["XCOMET-XL"])
    assert got["chrF++"].null_count() == n1  # the row without chrF++: null for each of its segments, never 0
    assert any("XCOMET-XL 1 of" in n for n in notes)
    rows[0]["metric_scores"]["XCOMET-XL"] = rows[0]["metric_scores"]["XCOMET-XL"][:-1]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DDPDataError, match=r"D831.*line 1.*different lengths"):
        read_wmt25_scores(p, lp="en-ko_KR")


def test_language_pair_choice() -> None:
    with pytest.raises(DDPUsageError, match="D832"):
        read_wmt25_scores(JSONL)
    with pytest.raises(DDPDataError, match="D832"):
        read_wmt25_scores(JSONL, lp="de-fr")
    cs = read_score_input(JSONL, "wmt25-scores", lps=["en-cs_CZ"], layout="wide")
    assert cs["system"].unique().to_list() == ["Algharb"] and cs.height == 9


def test_comet_json() -> None:
    got = read_comet_json(DATA / "comet_to_json.json", docs=DATA / "comet.docs")
    assert got["system"].to_list() == ["sysA"] * 3 + ["sysB"] * 3
    assert got["COMET"].to_list() == [0.9512, 0.8123, 0.7701, 0.4011, 0.5520, 0.3303]
    assert got["document_id"].to_list()[:3] == ["doc-a", "doc-a", "doc-b"]
    assert got["segment_id"].to_list()[:3] == [0, 1, 0]
    notes: list[str] = []
    alone = read_comet_json(DATA / "comet_to_json.json", layout="long", warn=notes.append)
    assert alone["condition"].unique().to_list() == ["COMET"] and "own document" in notes[0]


def test_comet_json_bad(tmp_path: Path) -> None:
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"a.txt": [{"COMET": 1.0}], "b.txt": [{"COMET": 1.0}, {"COMET": 0.5}]}))
    with pytest.raises(DDPDataError, match="D834"):
        read_comet_json(p)
    p.write_text(json.dumps([1, 2]))
    with pytest.raises(DDPDataError, match="D833"):
        read_comet_json(p)
    with pytest.raises(DDPDataError, match="D834"):
        read_comet_json(DATA / "comet_to_json.json", docs=DATA / "comet_to_json.json")
