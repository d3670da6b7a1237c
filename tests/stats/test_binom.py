"""binom_test / sign_test against scipy.stats.binomtest (and R binom.test values quoted)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.stats import binom_test, sign_test


def test_reference_values():
    # R 4.x: binom.test(7, 20, 0.5)  -> p-value = 0.2632
    #        95 percent confidence interval: 0.1539092 0.5921885
    # scipy 1.17: binomtest(7, 20).pvalue = 0.26317596435546875
    r = binom_test(7, 20)
    assert r.p_value == pytest.approx(0.26317596435546875, rel=1e-12)
    assert r.ci_low == pytest.approx(0.1539092, abs=5e-8)
    assert r.ci_high == pytest.approx(0.5921885, abs=5e-8)
    # hand arithmetic: P(X <= 7) for Bin(20, .5) = (1+20+190+1140+4845+15504+38760+77520)/2**20
    # = 137980/1048576; two-sided by symmetry = 2 * that = 0.263175964...
    assert r.p_value == pytest.approx(2 * 137980 / 2**20, rel=1e-12)
    # Wilson (Newcombe 1998 method 3), hand: z=1.959964, p=.35, n=20:
    # centre = (2*20*.35 + z^2)/(2*(20+z^2)) = 17.84146/47.68292 = 0.374169
    # delta = z/(2*(20+z^2)) * sqrt(4*20*.35*.65 + z^2) = 0.0411046 * sqrt(22.041459) = 0.0411046*4.694833
    #       = 0.192979  -> [0.181190, 0.567148]
    assert r.wilson_low == pytest.approx(0.374169 - 0.192979, abs=3e-6)
    assert r.wilson_high == pytest.approx(0.374169 + 0.192979, abs=3e-6)


@settings(max_examples=400, deadline=None)
@given(
    n=st.integers(1, 400),
    frac=st.floats(0, 1),
    # (p below ~1e-300 makes scipy.stats.binom.pmf itself raise OverflowError in boost)
    p=st.one_of(st.sampled_from([0.0, 0.5, 1.0, 0.25, 1 / 3]), st.floats(1e-12, 1 - 1e-12)),
    alternative=st.sampled_from(["two-sided", "greater", "less"]),
    level=st.sampled_from([0.9, 0.95, 0.99]),
)
def test_matches_scipy(n, frac, p, alternative, level):
    k = int(round(frac * n))
    ours = binom_test(k, n, p, alternative, confidence_level=level)
    ref = stats.binomtest(k, n, p, alternative=alternative)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)
    assert ours.statistic == ref.statistic
    cp = ref.proportion_ci(confidence_level=level, method="exact")
    # scipy finds Clopper-Pearson by brentq (xtol 2e-12); ours is the closed-form Beta quantile
    assert ours.ci_low == pytest.approx(cp.low, abs=1e-9)
    assert ours.ci_high == pytest.approx(cp.high, abs=1e-9)
    wi = ref.proportion_ci(confidence_level=level, method="wilson")
    assert ours.wilson_low == pytest.approx(wi.low, abs=1e-12)
    assert ours.wilson_high == pytest.approx(wi.high, abs=1e-12)


def test_large_n_two_sided_matches_scipy():
    for k, n, p in [(480_000, 1_000_000, 0.48), (12, 100_000, 1e-4), (999_990, 1_000_000, 0.99999)]:
        assert binom_test(k, n, p).p_value == pytest.approx(stats.binomtest(k, n, p).pvalue, rel=1e-9)


def test_sign_test():
    x = np.array([3.0, 5, 2, 8, 7, 6, 9, 4, 1, 5])
    y = np.array([2.0, 3, 2, 6, 9, 2, 4, 1, 0, 5])
    # hand: differences 1,2,0,2,-2,4,5,3,1,0 -> 7 positive, 1 negative, 2 zero (dropped)
    r = sign_test(x, y)
    assert (r.k, r.n, r.n_zero) == (7, 8, 2)
    # Bin(8, .5): P(X >= 7) = (8 + 1)/256 = 9/256; two-sided = 18/256 = 0.0703125
    assert r.p_value == pytest.approx(18 / 256, rel=1e-12)
    assert r.p_value == pytest.approx(stats.binomtest(7, 8).pvalue, rel=1e-12)
    g = sign_test(x, y, alternative="greater")
    assert g.p_value == pytest.approx(9 / 256, rel=1e-12)
    # mu shifts every difference: x - y - 1 -> 0,1,-1,1,-3,3,4,2,0,-1 -> 5 pos, 3 neg, 2 zero
    m = sign_test(x, y, mu=1.0)
    assert (m.k, m.n, m.n_zero) == (5, 8, 2)
    assert m.p_value == pytest.approx(stats.binomtest(5, 8).pvalue, rel=1e-12)
    # all ties -> undefined, p = 1
    t = sign_test([1, 2], [1, 2])
    assert t.n == 0 and t.p_value == 1.0 and np.isnan(t.statistic)


def test_sign_test_nan():
    with pytest.raises(DDPDataError, match="D541"):
        sign_test([1.0, np.nan], [0.0, 0.0])
    r = sign_test([1.0, np.nan, 2.0], [0.0, 0.0, 0.0], nan_policy="omit")
    assert r.n_omitted == 1 and r.k == 2


@pytest.mark.parametrize("args", [(3, 2), (-1, 2), (1, 0), (1.5, 3), (True, 3)])
def test_bad_counts(args):
    with pytest.raises(DDPUsageError, match="D540"):
        binom_test(*args)


def test_bad_options():
    with pytest.raises(DDPUsageError, match="D540"):
        binom_test(1, 2, p=1.5)
    with pytest.raises(DDPUsageError, match="D540"):
        binom_test(1, 2, alternative="bigger")  # type: ignore[arg-type]
    with pytest.raises(DDPUsageError, match="D540"):
        binom_test(1, 2, confidence_level=1.0)
