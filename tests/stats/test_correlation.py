"""Kendall tau-b / Pearson / Spearman against scipy.stats."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from ddpcore.errors import DDPDataError
from ddpcore.stats.correlation import kendall_tau_b, pearson, spearman


def same(a: float, b: float, rtol: float = 1e-12, atol: float = 1e-300) -> bool:
    if np.isnan(a) or np.isnan(b):
        return bool(np.isnan(a) and np.isnan(b))
    return bool(np.isclose(a, b, rtol=rtol, atol=atol))


def test_kendall_reference_values():
    x = [12, 2, 1, 12, 2]
    y = [1, 4, 7, 1, 0]
    r = kendall_tau_b(x, y)
    # scipy 1.17: stats.kendalltau([12, 2, 1, 12, 2], [1, 4, 7, 1, 0])
    # -> statistic=-0.4714045207910316, pvalue=0.28274545993277467
    assert r.statistic == -0.4714045207910316
    assert same(r.p_value, 0.28274545993277467)
    assert r.signature["p_value_method"] == "asymptotic"  # ties -> normal approximation
    r = kendall_tau_b([1, 2, 3, 4, 5, 6, 7, 8, 9], [2, 1, 4, 3, 6, 5, 9, 8, 7])
    # scipy 1.17: stats.kendalltau(range(1, 10), [2, 1, 4, 3, 6, 5, 9, 8, 7])
    # -> statistic=0.6666666666666666, pvalue=0.012665343915343916 (exact, no ties, n <= 33)
    assert r.statistic == 0.6666666666666666 and same(r.p_value, 0.012665343915343916)
    assert r.signature["p_value_method"] == "exact"


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(2, 60),
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(["continuous", "ties", "permutation", "near_sorted"]),
)
def test_kendall_matches_scipy(n, seed, kind):
    rng = np.random.default_rng(seed)
    if kind == "continuous":
        x = rng.normal(size=n)
        y = x + rng.normal(size=n) * rng.uniform(0, 3)
    elif kind == "ties":
        x = rng.integers(0, 4, n).astype(float)
        y = rng.integers(0, 3, n).astype(float)
    elif kind == "permutation":
        x, y = rng.permutation(n).astype(float), np.arange(n, dtype=float)
    else:  # exercises the min(dis, tot - dis) <= 1 exact branch
        x, y = np.arange(n, dtype=float), np.arange(n, dtype=float)
        if n > 1:
            x[[0, 1]] = x[[1, 0]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = stats.kendalltau(x, y)  # scipy 1.17, variant="b", method="auto"
    r = kendall_tau_b(x, y)
    assert same(r.statistic, ref.statistic, rtol=0)  # identical
    assert same(r.p_value, ref.pvalue, rtol=1e-12)


def test_kendall_large_n_exact_branch():
    n = 200
    x = np.arange(n, dtype=float)
    y = x.copy()
    y[[0, 1]] = y[[1, 0]]
    r = kendall_tau_b(x, y)
    ref = stats.kendalltau(x, y)  # scipy 1.17: exact because min(dis, tot - dis) <= 1
    assert r.statistic == ref.statistic and r.p_value == ref.pvalue == 0.0
    x = np.arange(40.0)
    y = x.copy()
    y[[5, 6]] = y[[6, 5]]
    assert same(kendall_tau_b(x, y).p_value, stats.kendalltau(x, y).pvalue)


def test_kendall_undefined():
    assert np.isnan(kendall_tau_b([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]).statistic)
    assert np.isnan(kendall_tau_b([1.0], [2.0]).p_value)
    assert np.isnan(kendall_tau_b([1.0, np.nan, 2.0], [1.0, 2.0, 3.0]).statistic)
    with pytest.raises(DDPDataError, match="D308"):
        kendall_tau_b([1, 2], [1, 2, 3])


@settings(max_examples=150, deadline=None)
@given(
    x=arrays(np.float64, st.integers(3, 40), elements=st.floats(-1e3, 1e3)),
    seed=st.integers(0, 2**32 - 1),
)
def test_pearson_spearman_match_scipy(x, seed):
    rng = np.random.default_rng(seed)
    y = np.round(x * rng.uniform(-2, 2) + rng.normal(size=x.size) * 10, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pr = stats.pearsonr(x, y)  # scipy 1.17
        sr = stats.spearmanr(x, y)  # scipy 1.17
    p = pearson(x, y)
    s = spearman(x, y)
    # r near 0 is a difference of nearly equal sums: compare with an absolute floor of 1e-12
    # (hypothesis found x = [-558.5, 0, -558.5], where both r are ~1e-17 with opposite signs)
    assert same(p.statistic, pr.statistic, rtol=1e-12, atol=1e-12)
    # p is ill-conditioned as |r| -> 1 (it depends on 1 - |r|): compare it where r is not
    # within 1e-6 of +-1, where a last-bit difference in r cannot move p by more than 1e-9
    if not np.isnan(pr.pvalue) and 1 - abs(pr.statistic) > 1e-6:
        assert np.isclose(p.p_value, pr.pvalue, rtol=1e-9, atol=1e-14)
    assert same(s.statistic, sr.statistic, rtol=1e-12, atol=1e-12)
    if not np.isnan(sr.pvalue) and 1 - abs(sr.statistic) > 1e-6:
        assert np.isclose(s.p_value, sr.pvalue, rtol=1e-9, atol=1e-14)


def test_pearson_reference_value():
    x = [1.0, 2.0, 3.0, 4.0, 5.0]
    y = [10.0, 9.0, 2.5, 6.0, 4.0]
    # scipy 1.17: stats.pearsonr([1, 2, 3, 4, 5], [10, 9, 2.5, 6, 4])
    # -> statistic=-0.7426106572325056, pvalue=0.15055580885344547
    r = pearson(x, y)
    assert same(r.statistic, -0.7426106572325056) and same(r.p_value, 0.15055580885344547, rtol=1e-12)
    with pytest.raises(DDPDataError, match="D309"):
        pearson([1.0], [2.0])
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]).statistic)
