"""Metric-S scores (hand arithmetic beside each expected value) and metric-human consistency."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ddpcore.errors import DDPUsageError
from ddpcore.scoring import metric_human_consistency, metric_s, read_judgements, summarize

FIXTURE = Path(__file__).parent / "data" / "metric_s_judgements.jsonl"

# (id, accuracy, fluency, appropriateness, total, status, unknown) per mapping
CODE = [
    # 60 - 5 (普通) - 10 (严重) - 5 (checkpoint 错误) = 40; 20 - 2 - 2 = 16; 20 - 5 = 15; 71
    ("zh-en-01", 40.0, 16.0, 15.0, 71.0, "ok", 0),
    # 60 - 50 - 10 - 5 = -5 -> 0; 20 - 2 (Minor = an issue) = 18; 20 - 5*5 = -5 -> 0; 18
    ("en-zh-02", 0.0, 18.0, 0.0, 18.0, "ok", 0),
    # no issues: 60 + 20 + 20 = 100
    ("zh-en-03", 60.0, 20.0, 20.0, 100.0, "ok", 0),
    # 60 - 50 - 50 -> 0; unknown fluency label 模糊 deducts 0 (released code) -> 20; 20; 40
    ("zh-en-04", 0.0, 20.0, 20.0, 40.0, "ok", 1),
    # instruction_following false -> 0
    ("en-zh-05", 0.0, 0.0, 0.0, 0.0, "instruction_following_failed", 0),
    ("en-zh-06", None, None, None, None, "error", 0),  # judge_error
    ("zh-en-07", None, None, None, None, "error", 0),  # accuracy_items is a string
    # Minor is unknown to the released accuracy table: -5 -> 55; fluency Major = an issue -2 -> 18;
    # appropriateness Critical = an issue -5 -> 15; 88
    ("en-zh-08", 55.0, 18.0, 15.0, 88.0, "ok", 1),
    ("9", None, None, None, None, "error", 0),  # not JSON: id = its position
]
PAPER = [
    # 普通 major 5, 严重 critical 10, checkpoint 5 -> 40; 有问题 fluency minor 2 x2 -> 16; 有问题 appropriateness major 5 -> 15
    ("zh-en-01", 40.0, 16.0, 15.0, 71.0, "ok", 0),
    # 60 - 50 - 10 - 5 -> 0; Minor 2 -> 18; Major 5 x5 -> 0; 18
    ("en-zh-02", 0.0, 18.0, 0.0, 18.0, "ok", 0),
    ("zh-en-03", 60.0, 20.0, 20.0, 100.0, "ok", 0),
    ("zh-en-04", 0.0, 20.0, 20.0, 40.0, "ok", 1),
    ("en-zh-05", 0.0, 0.0, 0.0, 0.0, "instruction_following_failed", 0),
    ("en-zh-06", None, None, None, None, "error", 0),
    ("zh-en-07", None, None, None, None, "error", 0),
    # Minor 2 -> 58; fluency Major 5 -> 15; appropriateness Critical 10 -> 10; 83
    ("en-zh-08", 58.0, 15.0, 10.0, 83.0, "ok", 0),
    ("9", None, None, None, None, "error", 0),
]


@pytest.mark.parametrize("mapping,expected", [("code", CODE), ("paper", PAPER)])
def test_fixture_scores(mapping, expected):
    rows = metric_s(read_judgements(str(FIXTURE)), mapping=mapping)
    got = [(r.id, r.accuracy, r.fluency, r.appropriateness, r.total, r.status, r.n_unknown_labels) for r in rows]
    assert got == expected


def test_summary_counts_errors_never_full_marks():
    s = summarize(metric_s(read_judgements(str(FIXTURE))))
    # 9 rows: 3 errors, 1 instruction-following failure, 6 scored; totals 71+18+100+40+0+88 = 317
    assert (s["n_rows"], s["n_errors"], s["n_instruction_following_failed"], s["n_scored"]) == (9, 3, 1, 6)
    assert s["mean_total"] == pytest.approx(317 / 6)
    assert s["n_unknown_labels"] == 2


def test_released_code_gotcha_judge_error_is_not_100():
    (row,) = metric_s([{"judge_error": "timeout"}])
    assert row.total is None and row.status == "error"
    (row,) = metric_s([{}])  # a judge reply listing no issue at all really is 100
    assert row.total == 100.0


def test_bad_mapping():
    with pytest.raises(DDPUsageError, match="D550"):
        metric_s([{}], mapping="both")  # type: ignore[arg-type]


def _consistency_data():
    # item, system, metric, human (0-100)
    return (["i1"] * 3 + ["i2"] * 3, ["A", "B", "C"] * 2,
            [80, 60, 78, 50, 52, 30], [70, 50, 40, 50, 51, 60])


def test_consistency_hand():
    item, system, metric, human = _consistency_data()
    r = metric_human_consistency(item, system, metric, human)
    # normalised /100. i1: A-B dm .20 dh .20 ok; A-C dm .02 (tie) dh .30 no; B-C dm -.18 dh .10 no.
    # i2: A-B dm -.02 tie, dh -.01 tie -> ok; A-C dm .20 dh -.10 no; B-C dm .22 dh -.09 no. -> 2/6
    assert r.n_segment_pairs == 6 and r.segment_consistency == pytest.approx(2 / 6)
    # system means: A (.65, .60), B (.56, .505), C (.54, .50): A-B .09/.095 ok, A-C .11/.10 ok,
    # B-C .02 tie / .005 tie ok -> 3/3
    assert r.n_system_pairs == 3 and r.system_consistency == 1.0
    r = metric_human_consistency(item, system, metric, human, tie_threshold=0.01, human_tie_threshold=0.005)
    # no ties now except none: i1 A-C .02/.30 ok; i2 A-B -.02/-.01 ok -> A-B, A-C (i1), A-B (i2) = 3/6
    assert r.segment_consistency == pytest.approx(3 / 6)


def test_consistency_errors():
    item, system, metric, human = _consistency_data()
    with pytest.raises(DDPUsageError, match="D554"):
        metric_human_consistency(item, system, metric, human, tie_threshold=-1)
    from ddpcore.errors import DDPDataError

    with pytest.raises(DDPDataError, match="D555"):
        metric_human_consistency(item + ["i1"], system + ["A"], metric + [1], human + [1])


def test_cli_json_and_output(tmp_path):
    out = tmp_path / "scores.tsv"
    proc = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "metric-s", str(FIXTURE), "--mapping", "paper",
                           "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["summary"]["n_errors"] == 3 and doc["signature"]["mapping"] == "paper"
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0].split("\t")[:5] == ["id", "accuracy", "fluency", "appropriateness", "total"]
    assert lines[8].split("\t")[:5] == ["en-zh-08", "58.0", "15.0", "10.0", "83.0"]
    assert (tmp_path / "scores.tsv.signature.json").exists()
    proc = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "metric-s", str(FIXTURE)],
                          capture_output=True, text=True)
    rows = json.loads(proc.stdout)["rows"]
    assert rows[0]["total"] == 71.0 and rows[5]["total"] is None
