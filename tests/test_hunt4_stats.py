"""Evaluation statistics that gave a misleading number in silence (hunt 4): a constant metric's SPA set by the
order of the system names, consistency scores outside their declared scale, a Metric-S judgement whose
``instruction_following`` is not a boolean."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ddpcore.cli.main import main
from ddpcore.errors import DDPDataError

# ---------------------------------------------------------------- ddp meta: spa.sys of a constant score set


def _meta_files(tmp_path: Path, metric: str, names: dict[str, str] | None = None) -> tuple[str, str]:
    """A 6-document profile and a score table of 3 systems whose human quality rises A < B < C; ``metric``:
    'const' (the same value everywhere) or 'good' (the human score plus noise). ``names`` renames systems."""
    rng = np.random.default_rng(7)
    prof, rows = [], []
    for d in range(6):
        for s in range(4):
            prof.append({"document_id": f"d{d}", "segment_id": s, "ddp": (d * 4 + s) % 7})
            for k, sysname in enumerate("ABC"):
                h = float(np.round(k + rng.normal(0, 0.5), 3))
                m = 0.5 if metric == "const" else float(h + rng.normal(0, 0.3))
                rows.append({"document_id": f"d{d}", "segment_id": s, "system": (names or {}).get(sysname, sysname),
                             "mqm": h, "comet": m})
    p, s = tmp_path / "profile.csv", tmp_path / f"scores_{metric}.csv"
    pl.DataFrame(prof).write_csv(p)
    pl.DataFrame(rows).write_csv(s)
    return str(p), str(s)


def _spa(tmp_path: Path, capsys: pytest.CaptureFixture[str], metric: str,
         names: dict[str, str] | None = None) -> dict:
    prof, scores = _meta_files(tmp_path, metric, names)
    assert main(["meta", prof, scores, "--human-col", "mqm", "--score-col", "comet", "--bins", "0,100",
                 "--n-boot", "50", "--n-perm", "0", "--spa-perm", "200"]) == 0
    return json.loads(capsys.readouterr().out)["overall"]["metrics"]["comet"]["spa.sys"]


@pytest.mark.parametrize("names", [None, {"A": "C", "C": "A"}])
def test_meta_spa_of_a_constant_metric_is_undefined_not_set_by_system_names(tmp_path, capsys, names):
    """Was: status ok with value 1.0 when the names sort worst system first (A < B < C) and 0.0 when
    renamed best first: a constant metric ties every permuted difference, so each of its p-values is 1
    (pce.py's `null_delta >= test_delta` with 0 >= 0), while the human p-values are about 0 or about 1
    depending on which system of a pair comes first (the same reading as mt-metrics-eval's pce.py)."""
    spa = _spa(tmp_path, capsys, "const", names)
    assert spa["status"] == "undefined" and spa["value"] is None
    assert "the metric is constant" in spa["reason"] and "order of the system names" in spa["reason"]


def test_meta_spa_of_a_varying_metric_still_equals_pce_py_by_hand(tmp_path, capsys):
    """The fix leaves a varying metric alone: SPA over the 24 complete segments equals 1 - mean |p_h - p_m| with
    p from pce.py's rule (share of sign-flip trials with null_delta >= test_delta), computed here with the same
    documented masks (PCG64(0).jumped(2) raw words, bit u % 64 of word t * W + u // 64 set = keep) in a loop."""
    spa = _spa(tmp_path, capsys, "good")
    assert spa["status"] == "ok"
    prof, scores = _meta_files(tmp_path, "good")
    df = pl.read_csv(scores).sort("document_id", "segment_id", "system")
    n_seg, T = 24, 200
    h = df["mqm"].to_numpy().reshape(n_seg, 3)
    m = df["comet"].to_numpy().reshape(n_seg, 3)
    W = (n_seg + 63) // 64
    raw = np.random.PCG64(0).jumped(2).random_raw(T * W)
    signs = np.array([[1.0 if (int(raw[t * W + u // 64]) >> (u % 64)) & 1 else -1.0 for u in range(n_seg)]
                      for t in range(T)])

    def p(x: np.ndarray, i: int, j: int) -> float:
        obs = x[:, i].sum() - x[:, j].sum()
        return float(np.mean([(s * (x[:, i] - x[:, j])).sum() >= obs for s in signs]))

    pairs = [(0, 1), (0, 2), (1, 2)]
    expected = 1.0 - np.mean([abs(p(h, i, j) - p(m, i, j)) for i, j in pairs])
    assert spa["value"] == pytest.approx(expected, abs=1e-12)


# ---------------------------------------------------------------- metric-human consistency: scores off their scale


def test_consistency_refuses_scores_outside_their_declared_scale():
    """Was: human scores on 0-100 passed with human_range=(0, 1) normalised to 0..100, so no human pair was
    ever a tie under the 0.05 threshold and the segment consistency came out 0.5 instead of 1.0, in silence."""
    from ddpcore.stats.metric_s import metric_human_consistency

    item = ["s1", "s1", "s2", "s2"]
    system = ["A", "B", "A", "B"]
    metric = [0.90, 0.20, 0.51, 0.50]   # 0-1 scale: s1 prefers A, s2 a tie (0.01 < 0.05)
    human = [90.0, 20.0, 51.0, 50.0]    # the same judgements on 0-100
    # by hand on the right scales: s1 both prefer A; s2 both tie (0.01 < 0.05) -> 2 of 2 segment pairs agree;
    # system means A 0.705 / 0.705, B 0.35 / 0.35 -> 1 of 1 system pairs agree
    ok = metric_human_consistency(item, system, metric, human, metric_range=(0, 1), human_range=(0, 100))
    assert (ok.segment_consistency, ok.system_consistency) == (1.0, 1.0)
    with pytest.raises(DDPDataError) as e:
        metric_human_consistency(item, system, metric, human, metric_range=(0, 1), human_range=(0, 1))
    assert e.value.code == "D555" and "human score 90" in str(e.value) and "human_range=(0, 1)" in str(e.value)
    with pytest.raises(DDPDataError) as e:  # an infinite score is off every scale
        metric_human_consistency(item, system, [0.9, float("inf"), 0.5, 0.5], human, metric_range=(0, 1),
                                 human_range=(0, 100))
    assert e.value.code == "D555" and "metric score inf (position 1)" in str(e.value)


# ---------------------------------------------------------------- ddp metric-s: instruction_following not a boolean


@pytest.mark.parametrize("value", ["false", "是否存在问题：是", 0])
def test_metric_s_instruction_following_that_is_not_a_boolean_is_an_error_row(tmp_path, capsys, value):
    """Was: `"instruction_following": "false"` (a string; or 0, or the judge's raw text, which is what the
    released DiscoX code stores there) is not the boolean false, so the record was scored as a translation:
    100 points with empty item lists. Now an error row, counted and said; the mean is line 1's alone."""
    empty = {"accuracy_items": [], "checkpoint_items": [], "fluency_items": [], "appropriateness_items": []}
    src = tmp_path / "j.jsonl"
    src.write_text(json.dumps({"id": "ok", **empty}) + "\n"
                   + json.dumps({"id": "odd", "instruction_following": value, **empty}, ensure_ascii=False) + "\n"
                   + json.dumps({"id": "no", "instruction_following": False, **empty}) + "\n", encoding="utf-8")
    assert main(["metric-s", str(src)]) == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)
    rows = {r["id"]: r for r in doc["rows"]}
    assert rows["odd"]["status"] == "error" and rows["odd"]["total"] is None
    assert "instruction_following is" in rows["odd"]["error"] and "not true or false" in rows["odd"]["error"]
    assert rows["ok"]["total"] == 100.0 and rows["no"]["total"] == 0.0  # 60 + 20 + 20 with no item; false: 0
    assert doc["summary"]["n_errors"] == 1 and doc["summary"]["mean_total"] == 50.0  # (100 + 0) / 2
    assert "1 of 3 judgement(s) are error rows (first on line 2)" in out.err


# ---------------------------------------------------------------- system names that differ only by case or spaces


def _split_table(tmp_path: Path) -> str:
    """4 systems x 2 conditions x 4 documents x 2 segments; system 'A' is written 'a ' on its odd segments
    (a second batch with another spelling), so the table holds 5 system names for 4 systems."""
    rng = np.random.default_rng(3)
    rows = []
    for d in range(4):
        for s in range(2):
            for k, name in enumerate("ABCD"):
                for cond in ("DOC", "MIX"):
                    rows.append({"document_id": f"d{d}", "segment_id": s, "condition": cond,
                                 "system": "a " if (name == "A" and s == 1) else name,
                                 "score": float(10 * k + rng.normal(0, 1))})
    path = tmp_path / "split.csv"
    pl.DataFrame(rows).write_csv(path)
    return str(path)


@pytest.mark.parametrize("argv", [["stats", "cluster", "{t}", "--in", "DOC", "--n-boot", "200"],
                                  ["stats", "tau", "{t}", "--a", "DOC", "--b", "MIX", "--n-boot", "200"]])
def test_system_names_differing_only_by_case_or_spaces_are_said_and_recorded(tmp_path, capsys, argv):
    """Was: exit 0 with 'A' and 'a ' ranked as two systems (5 systems where the table has 4), nothing said."""
    table = _split_table(tmp_path)
    assert main([a.format(t=table) for a in argv]) == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)
    want = "differ only by letter case or surrounding whitespace and are counted as different systems (first: 'A', 'a ')"
    assert any(want in w for w in doc["warnings"]), doc["warnings"]
    assert want in out.err
    # the same table with one spelling: no such warning
    clean = tmp_path / "clean.csv"
    pl.read_csv(table).with_columns(pl.col("system").str.strip_chars().str.to_uppercase()).write_csv(clean)
    argv2 = [a.format(t=str(clean)) for a in argv]
    assert main(argv2) == 0
    out = capsys.readouterr()
    assert "letter case" not in out.err and not any("letter case" in w for w in json.loads(out.out)["warnings"])


def test_meta_says_when_system_names_differ_only_by_case_or_spaces(tmp_path, capsys):
    prof, scores = _meta_files(tmp_path, "good", names={"B": "b"})
    df = pl.read_csv(scores)
    df.with_columns(pl.when((pl.col("system") == "b") & (pl.col("segment_id") == 0)).then(pl.lit("B"))
                    .otherwise(pl.col("system")).alias("system")).write_csv(scores)
    assert main(["meta", prof, scores, "--human-col", "mqm", "--score-col", "comet", "--bins", "0,100",
                 "--n-boot", "20", "--n-perm", "0", "--spa-perm", "20"]) == 0
    out = capsys.readouterr()
    assert any("(first: 'B', 'b')" in w for w in json.loads(out.out)["warnings"])
    assert "differ only by letter case" in out.err


# ---------------------------------------------------------------- spa.sys outside its own interval


def test_spa_outside_its_own_interval_is_said(tmp_path, capsys, monkeypatch):
    """The spa.sys interval holds --spa-ci-perm (20) of the --spa-perm trials fixed, so its replicates' p-values
    move in steps of 1/20 and the interval can miss its own point value (0.9965 [0.908, 0.992] was seen). It was
    printed without a word; it is now a warning naming the bin, metric, value and interval, and what to raise.
    The coarse interval is planted here (shifted below the value after the real bootstrap) so the case is exact."""
    import ddpcore.stats.meta as M

    real = M._apply_cis

    def coarse(cells, *args, **kwargs):
        real(cells, *args, **kwargs)
        for c in cells:
            fig = c.figures["comet"]["spa.sys"]
            if fig.get("ci_status") == "ok":
                fig["ci_low"], fig["ci_high"] = fig["value"] - 0.09, fig["value"] - 0.004

    prof, scores = _meta_files(tmp_path, "good")
    argv = ["meta", prof, scores, "--human-col", "mqm", "--score-col", "comet", "--bins", "0,100",
            "--n-boot", "50", "--n-perm", "0", "--spa-perm", "200"]
    assert main(argv) == 0
    assert not [w for w in json.loads(capsys.readouterr().out)["warnings"] if "outside its own interval" in w]
    monkeypatch.setattr(M, "_apply_cis", coarse)
    assert main(argv) == 0
    cap = capsys.readouterr()
    [w] = [w for w in json.loads(cap.out)["warnings"] if "outside its own interval" in w]
    assert w.startswith("spa.sys lies outside its own interval in 2 (bin, metric) pair(s) ([0, 100) comet 1.0000 "
                        "[0.9100, 0.9960], overall comet 1.0000 [0.9100, 0.9960]): the replicates hold 20 of the 200")
    assert "raise --spa-ci-perm" in w and "outside its own interval" in cap.err
    assert M._outside_its_interval({"ci_status": "ok", "value": 0.5, "ci_low": 0.4, "ci_high": 0.5})  is False
    assert M._outside_its_interval({"ci_status": "ok", "value": 0.5, "ci_low": 0.51, "ci_high": 0.6}) is True
    assert M._outside_its_interval({"ci_status": "undefined", "value": 0.5}) is False


def test_consistency_says_when_every_pair_of_one_side_is_a_tie():
    """0-1 metric scores with the default metric_range (0, 100) normalise to [0, 0.009]: every metric pair is
    a tie under 0.05, so segment consistency only counts human ties (here 1 of 2: s2), in silence. The figures
    stay (the scale may be right) but the degenerate case is said and recorded."""
    from ddpcore.stats.metric_s import metric_human_consistency

    item, system = ["s1", "s1", "s2", "s2"], ["A", "B", "A", "B"]
    metric, human = [0.90, 0.20, 0.51, 0.50], [90.0, 20.0, 51.0, 50.0]
    with pytest.warns(UserWarning, match=r"every metric pair is a tie: the metric scores span 0\.007 of their scale "
                                         r"metric_range, less than the tie threshold 0\.05"):
        bad = metric_human_consistency(item, system, metric, human)
    # by hand: metric ties everywhere; human s1 prefers A (0.7 >= 0.05), s2 ties (0.01) -> 1 of 2 agree
    assert bad.segment_consistency == 0.5 and len(bad.warnings) == 1
    import warnings as W

    with W.catch_warnings():
        W.simplefilter("error")
        ok = metric_human_consistency(item, system, metric, human, metric_range=(0, 1))
    assert ok.warnings == () and ok.segment_consistency == 1.0
