"""Metric-S scores (hand arithmetic beside each expected value) and metric-human consistency."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.stats.metric_s import metric_human_consistency, metric_s, read_judgements, summarize

FIXTURE = Path(__file__).parent / "data" / "metric_s_judgements.jsonl"

# (id, accuracy, fluency, appropriateness, total, status, unknown) per mapping
CODE = [
    # released code (eval/eval_res.py calculate_score; reads only 问题严重程度 / 判断结果, exact labels):
    # 60 - 5 (普通) - 10 (严重) - 5 (checkpoint 错误) = 40; 20 - 2 - 2 = 16; 20 - 5 = 15; 71
    ("zh-en-01", 40.0, 16.0, 15.0, 71.0, "ok", 0),
    # English key "severity" is unknown to the released code: accuracy 60 - 5 - 5 = 50, checkpoint "result"
    # unknown 0 -> 50; fluency Minor unknown 0 -> 20; appropriateness 5 x unknown 0 -> 20; 90; 2+1+1+5 = 9 unknown
    ("en-zh-02", 50.0, 20.0, 20.0, 90.0, "ok", 9),
    # no issues: 60 + 20 + 20 = 100
    ("zh-en-03", 60.0, 20.0, 20.0, 100.0, "ok", 0),
    # 60 - 50 - 50 -> 0; unknown fluency label 模糊 deducts 0 (released code) -> 20; 20; 40
    ("zh-en-04", 0.0, 20.0, 20.0, 40.0, "ok", 1),
    # instruction_following false -> 0
    ("en-zh-05", 0.0, 0.0, 0.0, 0.0, "instruction_following_failed", 0),
    ("en-zh-06", None, None, None, None, "error", 0),  # judge_error
    ("zh-en-07", None, None, None, None, "error", 0),  # accuracy_items is a string
    # "severity" key unknown everywhere: accuracy -5 -> 55; fluency 0 -> 20; appropriateness 0 -> 20; 95; 3 unknown
    ("en-zh-08", 55.0, 20.0, 20.0, 95.0, "ok", 3),
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
    # 9 rows: 3 errors, 1 instruction-following failure, 6 scored; totals 71+90+100+40+0+95 = 396
    assert (s["n_rows"], s["n_errors"], s["n_instruction_following_failed"], s["n_scored"]) == (9, 3, 1, 6)
    assert s["mean_total"] == pytest.approx(396 / 6)
    assert s["n_unknown_labels"] == 0 + 9 + 0 + 1 + 3
    # zh-en-04 has no checkpoint_items / appropriateness_items, en-zh-08 no checkpoint_items (read as empty)
    assert s["n_rows_missing_lists"] == 2


def test_released_code_gotcha_judge_error_is_not_100():
    (row,) = metric_s([{"judge_error": "timeout"}])
    assert row.total is None and row.status == "error"
    with pytest.raises(DDPDataError, match=r"\[D740\] record 1: none of accuracy_items"):
        metric_s([{}])  # no item list at all: not a judge reply (the released code would give 100)
    with pytest.raises(DDPDataError, match=r"\[D740\] j\.jsonl: line 7 \(id 'q'\)"):
        metric_s([{"accuracy_items": []}, {"id": "q", "fluency_items": None}], source="j.jsonl", line_numbers=[2, 7])
    (row,) = metric_s([{"accuracy_items": []}])  # a reply whose lists are empty: no issue listed, 100
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


# --------------------------------------------------------------------------- released code as oracle
# Expected values of mapping="code" come from tests/oracles/metric_s.py: a statement-by-statement
# transcription of the released calculate_score (ByteDance-Seed/DiscoX eval/eval_res.py, commit
# 5b6fb53494e1cd3303ff3b0935a3f715f28b0929), run on the same item lists.

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from oracles.metric_s import calculate_score  # noqa: E402
from ddpcore.stats.metric_s import ITEM_KEYS, _LABELS, _VERDICTS  # noqa: E402

# every label either table knows, both spellings, case/whitespace variants, junk and non-strings
_RELEASED = ["整体无问题", "普通", "Major", "严重", "Critical", "非常严重", "Extremely Critical", "错误", "正确",
             "无问题", "有问题"]
LABELS = sorted(set(_RELEASED) | set(_LABELS) | set(_VERDICTS), key=str) + [
    "major", "MAJOR", "critical", "extremely critical", " 有问题", "有问题 ", "有 问题", "", "模糊", "Minor",
    "轻微", "None", None, 0, 5, -2, 2.5, True, False]
KEYS = ["问题严重程度", "判断结果", "severity", "result", "verdict", "问题类型"]


def _oracle(record):
    warnings: list[str] = []
    lists = [record.get(k) or [] for k in ITEM_KEYS]
    acc, flu, app = calculate_score(*lists, warnings=warnings)
    return (float(acc), float(flu), float(app), float(acc + flu + app)), len(warnings)


def _ours(record):
    (row,) = metric_s([record], mapping="code")
    assert row.status == "ok", row
    return (row.accuracy, row.fluency, row.appropriateness, row.total), row.n_unknown_labels


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("label", LABELS, ids=repr)
@pytest.mark.parametrize("dim", ITEM_KEYS)
def test_code_mapping_matches_released_code_label_by_label(dim, label, key):
    for n in (1, 3, 30):  # 30 items also exercises the clamp at 0
        record = {"accuracy_items": [], dim: [{key: label, "问题分析": "x"}] * n}
        assert _ours(record) == _oracle(record), (dim, label, key, n)


def test_code_mapping_item_without_label_key_and_unhashable_labels():
    for dim in ITEM_KEYS:
        record = {dim: [{}, {"问题序号": "1"}]}
        assert _ours(record) == _oracle(record)
    # a list as label: the released code raises TypeError (unhashable); ddpcore counts it unknown
    # and deducts as for any unknown label: accuracy -5, the other dimensions 0
    (row,) = metric_s([{"accuracy_items": [{"问题严重程度": ["严重"]}], "fluency_items": [{"问题严重程度": {}}]}])
    assert (row.accuracy, row.fluency, row.appropriateness, row.n_unknown_labels) == (55.0, 20.0, 20.0, 2)


_item = st.fixed_dictionaries({}, optional={k: st.sampled_from(LABELS) | st.text(max_size=4) for k in KEYS[:4]})


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({k: st.lists(_item, max_size=12) for k in ITEM_KEYS}))
def test_code_mapping_matches_released_code_on_generated_records(record):
    assert _ours(record) == _oracle(record)


def test_fixture_matches_released_code():
    for rec, (rid, acc, flu, app, total, status, unk) in zip(read_judgements(str(FIXTURE)), CODE):
        if status == "ok":
            assert _oracle(rec) == ((acc, flu, app, total), unk), rid


def test_issue19_minor_in_fluency_and_appropriateness():
    # issue 19: ddpcore scored this 83 (fluency/appropriateness deducted for any severity label); the
    # released code deducts there only for 有问题: 60 - 5 - 5 = 50, 20, 20 -> 90 (oracle agrees)
    record = {"accuracy_items": [{"问题严重程度": "普通"}] * 2, "fluency_items": [{"问题严重程度": "minor"}],
              "appropriateness_items": [{"问题严重程度": "minor"}]}
    assert _ours(record) == _oracle(record) == ((50.0, 20.0, 20.0, 90.0), 2)
    (row,) = metric_s([record], mapping="paper")  # the paper's table: minor is 2 in every dimension
    assert (row.fluency, row.appropriateness, row.total) == (18.0, 18.0, 86.0)
