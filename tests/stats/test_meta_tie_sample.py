"""``acc_eq.none`` in a bin of more than ``--max-pairs`` cell pairs: the tie threshold calibrated on a
seeded sample of pairs (mt-metrics-eval's ``sample_rate``), the accuracy at it exact over every pair.

Expected values, and how they are produced:
- the threshold: a slow loop over the candidates (0 and every sampled pair's ``|dm|``, ascending; the
  first maximum, as mt-metrics-eval ``tau_optimization`` does on its sampled pairs) counting acc23 over
  the same sampled pairs one by one;
- the accuracy: ``tests/oracles/meta_oracle.acc23``, a loop over every pair of the bin's cells at that
  threshold (written from mt-metrics-eval ``KendallVariants(variant="acc23", epsilon=...)``);
- the optimum it may not exceed: ``meta_oracle.acc23_opt`` over every pair (``sample_rate=1``).
"""
from __future__ import annotations

import json
import math
import zlib
from collections import Counter

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore.cli.main import main
from ddpcore.stats.meta import (acc_eq_none, acc_eq_none_sampled, sample_pairs, tie_threshold_sampled)
from oracles import meta_oracle as O

from stats.test_meta import cells_of, entries, evaluate, in_bin, make_data
from stats.test_meta_cli import BASE


def loop_threshold(h, m, i, j):
    """The smallest epsilon maximising acc23 over the sampled pairs (i[t], j[t]), by counting each pair."""
    pairs = [(h[a], h[b], m[a], m[b]) for a, b in zip(i.tolist(), j.tolist())]
    best, best_eps = -1, 0.0
    for eps in sorted({0.0} | {abs(m1 - m2) for _, _, m1, m2 in pairs}):
        right = sum(1 for h1, h2, m1, m2 in pairs
                    if (h1 == h2 and abs(m1 - m2) <= eps) or (abs(m1 - m2) > eps and (h1 - h2) * (m1 - m2) > 0))
        if right > best:
            best, best_eps = right, eps
    return best_eps


def test_sample_pairs_distinct_uniform_and_seeded():
    i, j = sample_pairs(5, 100_000, np.random.default_rng(3))
    assert i.shape == j.shape == (100_000,) and (i != j).all() and i.min() >= 0 and max(i.max(), j.max()) == 4
    counts = Counter(zip(np.minimum(i, j).tolist(), np.maximum(i, j).tolist()))
    assert len(counts) == 10  # every unordered pair of 5 points, about equally often
    assert scipy.stats.chisquare(list(counts.values())).pvalue > 1e-4
    i2, j2 = sample_pairs(5, 100_000, np.random.default_rng(3))
    assert (i2 == i).all() and (j2 == j).all()


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 25), st.integers(1, 300), st.integers(0, 2**32 - 1))
def test_threshold_equals_loop_over_the_sampled_pairs(n, n_sample, seed):
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 4, n).astype(float)  # human on levels: ties
    m = np.round(h + rng.normal(0, 1.5, n), 1)  # metric on a grid: ties and equal |dm| between pairs
    i, j = sample_pairs(n, n_sample, np.random.default_rng(seed + 1))
    assert tie_threshold_sampled(h, m, i, j) == loop_threshold(h, m, i, j)


@pytest.mark.parametrize("seed", [0, 5])
def test_sampled_accuracy_is_exact_at_its_threshold_and_below_the_optimum(seed):
    rng = np.random.default_rng(seed)
    n = 60
    h = rng.integers(0, 5, n).astype(float)
    m = np.round(h + rng.normal(0, 2, n), 1)
    acc, eps = acc_eq_none_sampled(h, m, 400, seed)
    assert acc == pytest.approx(O.acc23(h.tolist(), m.tolist(), eps), abs=1e-12)
    best, _ = O.acc23_opt([h.tolist()], [m.tolist()])
    assert acc <= best + 1e-12
    assert acc_eq_none(h, m)[0] == pytest.approx(best, abs=1e-12)
    # many more sampled pairs than pairs: the sampled optimum is (nearly) the optimum over every pair
    acc_big, _ = acc_eq_none_sampled(h, m, 200_000, seed)
    assert acc_big == pytest.approx(best, abs=2e-3)
    assert acc_eq_none_sampled(h, m, 400, seed) == (acc, eps)  # seeded
    assert math.isnan(acc_eq_none_sampled(h[:1], m[:1], 10)[0])


def test_meta_above_max_pairs_calibrates_on_a_sample_and_says_so():
    prof, scores = make_data(4, n_docs=6, segs=4, p_missing=0.0)
    res = evaluate(prof, scores, n_boot=40, n_perm=0, max_pairs=10, tie_sample=150)
    cells = cells_of(prof, scores)
    checked = 0
    eps_seen = set()
    for e in entries(res):
        lo, hi = (e["low"], e["high"]) if e["label"] != "overall" else (0, math.inf)
        sub = in_bin(cells, lo, hi)
        for metric in ("a", "b"):
            f = e["metrics"][metric]["acc_eq.none"]
            n_pairs = len(sub) * (len(sub) - 1) // 2
            if len(sub) < 2 or len({c[3] for c in sub}) < 2:
                continue
            h, m = [c[3] for c in sub], [c[4][metric] for c in sub]
            if n_pairs <= 150:  # pair by pair: no more pairs than the sample would draw
                assert f["calibration_pairs"] == n_pairs and "note" not in f
                assert (f["value"], f["epsilon"]) == pytest.approx(O.acc23_opt([h], [m]), abs=1e-12)
                continue
            assert f["status"] == "ok" and f["calibration_pairs"] == 150 and "seeded sample" in f["note"]
            # the threshold from the documented draw (TIE_SAMPLE_RNG) over the bin's cells in row order
            # (document, segment, system), counted pair by pair
            row = sorted(sub, key=lambda c: (c[1], c[2]))
            rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
                [3, zlib.crc32(e["label"].encode()), zlib.crc32(metric.encode())])))
            i, j = sample_pairs(len(row), 150, rng)
            hr, mr = np.array([c[3] for c in row]), np.array([c[4][metric] for c in row])
            assert f["epsilon"] == loop_threshold(hr, mr, i, j)
            eps_seen.add(f["epsilon"])
            assert f["value"] == pytest.approx(O.acc23(h, m, f["epsilon"]), abs=1e-12)
            assert f["value"] <= O.acc23_opt([h], [m])[0] + 1e-12
            assert f["ci_status"] == "ok" and f["ci_low"] <= f["ci_high"]  # small bins: bootstrapped
            checked += 1
    assert checked >= 4 and len(eps_seen) >= 3
    assert any("acc_eq.none in" in w and "--tie-sample" in w for w in res.warnings)
    assert res.signature["tie_sample"] == 150 and "tie_sample" in res.signature["rng"]
    again = evaluate(prof, scores, n_boot=40, n_perm=0, max_pairs=10, tie_sample=150)
    other = evaluate(prof, scores, n_boot=40, n_perm=0, max_pairs=10, tie_sample=150, seed=11)
    f0 = [e["metrics"]["a"]["acc_eq.none"] for e in entries(res)]
    assert f0 == [e["metrics"]["a"]["acc_eq.none"] for e in entries(again)]
    assert [f["epsilon"] for f in f0] != [e["metrics"]["a"]["acc_eq.none"]["epsilon"] for e in entries(other)]


def test_meta_interval_cap_and_zero_sample():
    prof, scores = make_data(4, n_docs=6, segs=4, p_missing=0.0)
    res = evaluate(prof, scores, n_boot=40, n_perm=0, max_pairs=10, tie_sample=150, ci_max_points=5)
    f = res.overall["metrics"]["a"]["acc_eq.none"]
    assert f["status"] == "ok" and f["ci_status"] == "not_computed"
    assert f["ci_reason"] == "more than ci_max_points 5 cells (--ci-max-points)"
    assert any(w.startswith("acc_eq.none has no interval in") for w in res.warnings)
    rows = [t for t in res.tests["bins_vs_first"] if t["stat"] == "acc_eq.none"]
    assert rows and all(t["status"] == "undefined" and t["reason"] for t in rows)
    assert any(t["reason"].startswith("no interval: more than ci_max_points") for t in rows)
    off = evaluate(prof, scores, n_boot=10, n_perm=0, max_pairs=10, tie_sample=0)
    f = off.overall["metrics"]["a"]["acc_eq.none"]
    assert f["status"] == "not_computed" and "--tie-sample" in f["reason"] and f["value"] is None


def test_cli_tie_sample(capsys):
    assert main(BASE + ["--max-pairs", "10", "--tie-sample", "300"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["signature"]["tie_sample"] == 300
    f = d["overall"]["metrics"]["good"]["acc_eq.none"]
    assert f["status"] == "ok" and f["calibration_pairs"] == 300
    with pytest.raises(SystemExit) as exc:
        main(BASE + ["--tie-sample", "many"])
    assert exc.value.code == 2
    capsys.readouterr()
    assert main(BASE + ["--tie-sample", "-1"]) == 2
    assert "--tie-sample" in capsys.readouterr().err


def test_tie_sample_over_the_memory_limit_is_refused_before_work(capsys):
    """96 bytes a sampled pair (TIE_SAMPLE_BYTES): 10^9 pairs need about 89 GiB, refused under 1G (D362)."""
    assert main(BASE + ["--tie-sample", "1000000000", "--max-memory", "1G"]) == 2
    err = capsys.readouterr().err
    assert "[D362]" in err and "--tie-sample" in err and "11,184,810" in err
