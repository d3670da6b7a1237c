"""kendall_tau_b(method=, alternative=) against scipy.stats.kendalltau and R cor.test."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.stats.correlation import kendall_tau_b


def perm_with_inversions(n: int, k: int) -> list[int]:
    """A permutation of 0..n-1 with exactly k inversions (Lehmer code filled greedily from the left)."""
    rem, out = list(range(n)), []
    for i in range(n):
        d = min(k, n - 1 - i)
        k -= d
        out.append(rem.pop(d))
    assert k == 0
    return out


def test_r_cor_test_exact_n100():
    # The statement: at n = 100 R's cor.test(x, y, method="kendall", exact=TRUE) gives
    # p = 0.4924739 where the asymptotic p is 0.4896. Without ties both p-values depend only on
    # n and S = con - dis; the asymptotic z = S / sqrt(n(n-1)(2n+5)/18) = S / 335.78 gives
    # p = 0.4896 only for S = 232 (S = 230 -> 0.4934, S = 234 -> 0.4859; S is even because
    # con + dis = 4950), i.e. dis = (4950 - 232)/2 = 2359 inversions. Any such permutation
    # reproduces the statement; this one is built from its Lehmer code.
    x = list(range(100))
    y = perm_with_inversions(100, 2359)
    exact = kendall_tau_b(x, y, method="exact")
    asym = kendall_tau_b(x, y, method="asymptotic")
    auto = kendall_tau_b(x, y)
    assert exact.statistic == pytest.approx(232 / 4950, rel=1e-15)  # hand: S / tot
    assert round(exact.p_value, 7) == 0.4924739  # R, quoted in the issue
    assert round(asym.p_value, 4) == 0.4896  # R's asymptotic, quoted in the issue
    # scipy 1.17: kendalltau(x, y, method="exact").pvalue = 0.4924738506059048 (float recurrence;
    # ours is exact rational arithmetic -> 0.49247385060590404)
    assert exact.p_value == pytest.approx(0.4924738506059048, rel=1e-13)
    # scipy 1.17: kendalltau(x, y).pvalue = 0.4896138718481836 (auto = asymptotic at n > 33)
    assert auto.p_value == asym.p_value == pytest.approx(0.4896138718481836, rel=1e-14)
    assert exact.signature["p_value_method"] == "exact" and auto.signature["p_value_method"] == "asymptotic"
    # one-sided, scipy 1.17 kendalltau(x, y, method="exact", alternative="greater"/"less"):
    assert kendall_tau_b(x, y, "exact", "greater").p_value == pytest.approx(0.2462369253029524, rel=1e-13)
    assert kendall_tau_b(x, y, "exact", "less").p_value == pytest.approx(0.7556340833270164, rel=1e-13)


def test_small_exact_hand():
    # n = 4, y = [1, 0, 2, 3]: one inversion -> con = 5, dis = 1, tau = 4/6.
    # Permutations of 4 with <= 1 inversion: 1 + 3 = 4 of 24. greater (agrees): P(C <= 1) = 4/24;
    # less (disagrees): 1 - 4/24 + 3/24 = 23/24; two-sided 8/24.
    x, y = [0, 1, 2, 3], [1, 0, 2, 3]
    assert kendall_tau_b(x, y, "exact", "greater").p_value == pytest.approx(4 / 24, rel=1e-15)
    assert kendall_tau_b(x, y, "exact", "less").p_value == pytest.approx(23 / 24, rel=1e-15)
    assert kendall_tau_b(x, y, "exact").p_value == pytest.approx(8 / 24, rel=1e-15)


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(2, 140),
    seed=st.integers(0, 2**32 - 1),
    method=st.sampled_from(["auto", "exact", "asymptotic"]),
    alternative=st.sampled_from(["two-sided", "greater", "less"]),
    ties=st.booleans(),
)
def test_matches_scipy(n, seed, method, alternative, ties):
    if n == 2 and method == "asymptotic":
        n = 3  # scipy 1.17 raises ZeroDivisionError at n = 2 (0/0 in its third variance term)
    rng = np.random.default_rng(seed)
    if ties and method != "exact":
        x = rng.integers(0, 5, n).astype(float)
        y = x + rng.integers(-2, 3, n)
    else:
        x = rng.permutation(n).astype(float)
        y = x + rng.normal(size=n) * n * rng.uniform(0, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = stats.kendalltau(x, y, method=method, alternative=alternative)
    ours = kendall_tau_b(x, y, method=method, alternative=alternative)
    if np.isnan(ref.pvalue):
        assert np.isnan(ours.p_value)
        return
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-14, abs=1e-15)
    # scipy's exact recurrence is floating point (for n < 171 on numbers up to n!); ours is exact
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-14)


def test_exact_large_n_matches_scipy():
    rng = np.random.default_rng(3)
    for n in (180, 260):
        x = rng.normal(size=n)
        y = x + rng.normal(size=n) * 6
        for alt in ("two-sided", "greater", "less"):
            ref = stats.kendalltau(x, y, method="exact", alternative=alt).pvalue
            assert kendall_tau_b(x, y, "exact", alt).p_value == pytest.approx(ref, rel=1e-9, abs=1e-14)


def test_default_unchanged():
    # scipy 1.17: stats.kendalltau([12, 2, 1, 12, 2], [1, 4, 7, 1, 0]) -> p 0.28274545993277467
    r = kendall_tau_b([12, 2, 1, 12, 2], [1, 4, 7, 1, 0])
    assert r.p_value == pytest.approx(0.28274545993277467, rel=1e-12)
    assert "alternative" not in r.signature


def test_asymptotic_n2():
    # hand: n = 2, one concordant pair: var = (2 * 9) / 18 = 1, z = 1, two-sided p = 2 * (1 - Phi(1))
    r = kendall_tau_b([1, 2], [1, 2], method="asymptotic")
    assert r.p_value == pytest.approx(2 * stats.norm.sf(1.0), rel=1e-14)


def test_errors():
    with pytest.raises(DDPDataError, match="D542"):
        kendall_tau_b([1, 1, 2], [1, 2, 3], method="exact")
    with pytest.raises(DDPUsageError, match="D542"):
        kendall_tau_b([1, 2, 3], [1, 2, 3], method="permutation")  # type: ignore[arg-type]
    with pytest.raises(DDPUsageError, match="D542"):
        kendall_tau_b([1, 2, 3], [1, 2, 3], alternative="two_sided")  # type: ignore[arg-type]
