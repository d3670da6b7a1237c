"""Issue 19 items 2-3: ``stats compare`` checks its memory/time budget (D362/D363 instead of a
MemoryError), and scores near 1e308 neither overflow nor leak RuntimeWarnings (compare, pearson).

References: scipy.stats.pearsonr on the data divided by 1e300 (no overflow there); for compare,
the same table scaled by 2**-1000 (which takes the unscaled path) and exact means from
fractions.Fraction."""
from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
import scipy.stats

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.stats import pearson
from ddpcore.stats.compare import compare_arrays, compare_systems
from ddpcore.stats import CompareTests, ResampleOptions


def _big_table(scale: float = 1.0) -> pl.DataFrame:
    rng = np.random.default_rng(4)
    rows = []
    for d in range(6):
        for s in range(3):
            for k, sysname in enumerate(("base", "A", "B")):
                v = rng.uniform(-0.9, 0.9) * 1e308 + (0.05e308 if sysname == "A" else 0.0)
                rows.append({"document_id": f"d{d}", "segment_id": s, "system": sysname, "score": v * scale})
    return pl.DataFrame(rows)


def test_compare_near_1e308_is_exact_and_silent():
    big = _big_table()
    small = big.with_columns(pl.col("score") * 2.0 ** -1000)  # exact; no scaling needed there
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning (overflow) fails the test
        rb = compare_systems(big, "base", options=ResampleOptions(n_boot=200, seed=3), tests=CompareTests(n_ar=200))
        rs = compare_systems(small, "base", options=ResampleOptions(n_boot=200, seed=3), tests=CompareTests(n_ar=200))
    cb, cs = rb.comparisons["score"], rs.comparisons["score"]
    np.testing.assert_array_equal(cb.p_bootstrap[1:], cs.p_bootstrap[1:])
    np.testing.assert_array_equal(cb.p_ar[1:], cs.p_ar[1:])
    for f in ("score", "ci_low", "ci_high", "diff", "diff_ci_low", "diff_ci_high"):
        np.testing.assert_array_equal(getattr(cb, f), np.ldexp(getattr(cs, f), 1000))
    # exact means (Fraction arithmetic, independent of numpy's summation)
    for i, name in enumerate(cb.systems):
        vals = big.filter(pl.col("system") == name)["score"].to_list()
        exact = sum(Fraction(v) for v in vals) / len(vals)
        assert cb.score[i] == pytest.approx(float(exact), rel=1e-13)
        assert np.isfinite(cb.score[i])


def test_compare_difference_beyond_float_range_is_d720():
    rows = []
    for d in range(3):
        rows += [{"document_id": f"d{d}", "segment_id": 0, "system": "base", "score": -1.7e308},
                 {"document_id": f"d{d}", "segment_id": 0, "system": "A", "score": 1.7e308}]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DDPDataError, match=r"\[D720\].*beyond the float64 range"):
            compare_systems(pl.DataFrame(rows), "base", options=ResampleOptions(n_boot=20), tests=CompareTests(n_ar=20))


def test_compare_dynamic_range_beyond_float64_is_d721():
    rows = [{"document_id": "d0", "segment_id": 0, "system": "base", "score": 1e308},
            {"document_id": "d0", "segment_id": 0, "system": "A", "score": 1e-30},
            {"document_id": "d1", "segment_id": 0, "system": "base", "score": 1.0},
            {"document_id": "d1", "segment_id": 0, "system": "A", "score": 2.0}]
    # 1e-30 next to 1e308: after the 2**-1024 scaling it would be 0 (below 2**-1074)
    rows[1]["score"] = 0.5
    ok = compare_systems(pl.DataFrame(rows), "base", options=ResampleOptions(n_boot=20), tests=CompareTests(n_ar=20))  # 0.5 keeps its digits (subnormal)
    assert ok.comparisons["score"].score[1] == pytest.approx(1.25, rel=1e-12)  # mean of 0.5 and 2.0
    rows[1]["score"] = 1e-30
    with pytest.raises(DDPDataError, match=r"\[D721\]"):
        compare_systems(pl.DataFrame(rows), "base", options=ResampleOptions(n_boot=20), tests=CompareTests(n_ar=20))


def test_compare_arrays_rejects_infinite_sums():
    with pytest.raises(DDPDataError, match=r"\[D394\]"):
        compare_arrays(np.array([[1.0, np.inf], [2.0, 3.0]]), np.ones(2), n_ar=10, options=ResampleOptions(n_boot=10))


def test_pearson_near_1e308_matches_scipy_on_scaled_data():
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, 40) * 1.7e308
    y = 0.5 * x + rng.uniform(-1, 1, 40) * 1e308
    ref = scipy.stats.pearsonr(x / 1e300, y / 1e300)  # scipy on data that cannot overflow
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = pearson(x, y)
    assert res.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    # ordinary data: unchanged (the scaling only applies above 2**500)
    a, b = rng.normal(size=30), rng.normal(size=30)
    assert pearson(a, b).statistic == pytest.approx(scipy.stats.pearsonr(a, b).statistic, rel=1e-13)
    with pytest.raises(DDPDataError, match=r"\[D302\].*x\[3\] is infinite"):
        pearson([1.0, 2.0, 3.0, np.inf], [1.0, 2.0, 3.0, 4.0])


def test_compare_budget_refuses_before_allocating():
    df = _big_table(1e-300)
    with pytest.raises(DDPUsageError, match=r"\[D362\].*n_boot=1,000,000,000.*--n-boot"):
        compare_systems(df, "base", options=ResampleOptions(n_boot=10**9), tests=CompareTests(n_ar=10))
    with pytest.raises(DDPUsageError, match=r"\[D362\]"):
        compare_systems(df, "base", options=ResampleOptions(n_boot=100_000, max_memory="1M"), tests=CompareTests(n_ar=10))
    with pytest.raises(DDPUsageError, match=r"\[D363\].*n_ar=1,000,000,000.*--n-ar"):
        compare_systems(df, "base", options=ResampleOptions(n_boot=10, max_seconds=0.05), tests=CompareTests(n_ar=10**9))
    # within the budget: the pilot does not change the answer (same stream, same replicates)
    a = compare_systems(df, "base", options=ResampleOptions(n_boot=5000, seed=2, max_seconds=0), tests=CompareTests(n_ar=5000))
    b = compare_systems(df, "base", options=ResampleOptions(n_boot=5000, seed=2), tests=CompareTests(n_ar=5000))
    np.testing.assert_array_equal(a.comparisons["score"].ci_low, b.comparisons["score"].ci_low)
    np.testing.assert_array_equal(a.comparisons["score"].p_ar[1:], b.comparisons["score"].p_ar[1:])
