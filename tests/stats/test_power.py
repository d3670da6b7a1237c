"""``ddpcore.stats.power``: statsmodels TTestPower where it applies, a simulation of the TOST decision."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

from ddpcore.errors import DDPUsageError
from ddpcore.stats.power import (t_test_mdd, t_test_power, tost_n_needed, tost_power, tost_power_analysis)


@pytest.mark.parametrize("effect,n,alpha,alt", [(0.3, 20, 0.05, "two-sided"), (0.1, 500, 0.05, "two-sided"),
                                                (0.5, 8, 0.01, "larger"), (-0.4, 15, 0.05, "smaller"),
                                                (0.0, 30, 0.05, "two-sided")])
def test_t_power_equals_statsmodels(effect: float, n: int, alpha: float, alt: str) -> None:
    ref = TTestPower().power(effect_size=effect, nobs=n, alpha=alpha, alternative=alt)
    assert t_test_power(effect, n, alpha, alt) == pytest.approx(ref, abs=1e-12)


def test_t_power_pasted_reference() -> None:
    # statsmodels 0.15.0: TTestPower().power(0.3, 20, 0.05) -> 0.2470890899680956
    assert t_test_power(0.3, 20) == pytest.approx(0.2470890899680956, abs=1e-14)


def test_far_tail_is_defined_where_statsmodels_returns_nan() -> None:
    # statsmodels 0.15.0 / scipy 1.17.1: TTestPower().power(0.79, 1600, 0.05) -> nan (nct.cdf far tail)
    assert np.isnan(TTestPower().power(0.79, 1600, 0.05))
    assert t_test_power(0.79, 1600) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("n,sd", [(50, 2.0), (10, 1.0), (2691, 17.0)])
def test_mdd_equals_statsmodels_solve_power(n: int, sd: float) -> None:
    es = TTestPower().solve_power(effect_size=None, nobs=n, alpha=0.05, power=0.8)
    # statsmodels 0.15.0 solve_power stops early (rel. error up to ~1e-5 at n = 2691; its own power at its
    # answer is 0.79999...); ddpcore solves to 1e-13, checked on the next line
    assert t_test_mdd(n, sd) == pytest.approx(es * sd, rel=1e-4)
    assert t_test_power(t_test_mdd(n, sd) / sd, n) == pytest.approx(0.8, abs=1e-10)


@pytest.mark.parametrize("n,sd,m", [(10, 1.0, 1.0), (30, 5.0, 3.0), (100, 1.0, 0.3), (5, 1.0, 2.0)])
def test_tost_nct_equals_two_statsmodels_one_sided_powers(n: int, sd: float, m: float) -> None:
    tp = TTestPower()
    ref = tp.power(m / sd, n, 0.05, alternative="larger") * 2 - 1  # delta = 0, symmetric margins
    assert tost_power(n, sd, -m, m, method="nct") == pytest.approx(max(ref, 0.0), abs=1e-12)


def _simulate(n: int, sd: float, low: float, high: float, delta: float, reps: int, seed: int) -> float:
    d = np.random.default_rng(seed).normal(delta, sd, (reps, n))
    mu, se = d.mean(axis=1), d.std(axis=1, ddof=1) / np.sqrt(n)
    tc = stats.t.isf(0.05, n - 1)
    return float(np.mean((mu - tc * se > low) & (mu + tc * se < high)))


@pytest.mark.parametrize("n,sd,low,high,delta", [(10, 1.0, -1.0, 1.0, 0.0), (5, 1.0, -2.0, 2.0, 0.0),
                                                 (3, 1.0, -1.5, 1.5, 0.0), (40, 2.0, -1.0, 1.5, 0.3),
                                                 (100, 1.0, -0.3, 0.3, 0.0)])
def test_tost_exact_equals_simulation(n: int, sd: float, low: float, high: float, delta: float) -> None:
    reps = 100_000
    sim = _simulate(n, sd, low, high, delta, reps, seed=n)
    exact = tost_power(n, sd, low, high, true_diff=delta)
    se = np.sqrt(exact * (1 - exact) / reps)
    assert abs(sim - exact) < 4.5 * se + 1e-9, (sim, exact)


def test_exact_pasted_values() -> None:
    # exact values (scipy.integrate.quad over chi(df), epsabs 1e-13, during development); simulation with
    # 200,000 replicates gave 0.796065, 0.88158, 0.818415, 0.94954
    assert tost_power(10, 1, -1, 1) == pytest.approx(0.795207266705897, abs=1e-12)
    assert tost_power(30, 5, -3, 3) == pytest.approx(0.8820295459077825, abs=1e-12)
    assert tost_power(100, 1, -0.3, 0.3) == pytest.approx(0.8179750074688188, abs=1e-12)
    assert tost_power(5, 1, -2, 2) == pytest.approx(0.9499568523591563, abs=1e-12)


def test_nct_underestimates_small_samples() -> None:
    assert tost_power(3, 1, -1.5, 1.5, method="nct") < tost_power(3, 1, -1.5, 1.5)


def test_n_needed_is_the_smallest() -> None:
    k = tost_n_needed(5.0, -3.0, 3.0)
    assert k == 26
    assert tost_power(k, 5, -3, 3) >= 0.8 > tost_power(k - 1, 5, -3, 3)
    assert tost_n_needed(1.0, -1.0, 1.0, true_diff=1.0) is None  # on the margin: never
    assert tost_n_needed(0.1, -1.0, 1.0) == 2


def test_power_analysis_and_errors() -> None:
    r = tost_power_analysis(30, 5.0, -3.0, 3.0)
    assert r.n_needed == 26 and r.power > 0.8 and r.to_dict()["signature"]["method"] == "tost_power_analysis"
    with pytest.raises(DDPUsageError, match="D520"):
        tost_power(1, 1.0, -1.0, 1.0)
    with pytest.raises(DDPUsageError, match="D520"):
        tost_power(10, 1.0, 1.0, -1.0)
    assert tost_power(10, 0.0, -1.0, 1.0) == 1.0 and tost_power(10, 0.0, -1.0, 1.0, true_diff=2.0) == 0.0
