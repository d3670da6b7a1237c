"""Power of the paired t-test and of the paired TOST (the power analysis of ``ddp blindness``).

Notation: ``n`` pairs, differences ``D_i ~ N(delta, sd^2)`` i.i.d., ``df = n - 1``,
``se0 = sd / sqrt(n)`` (the standard error with the true sd).

Paired t-test (:func:`t_test_power`, :func:`t_test_mdd`)
    ``T = mean(D) / (s / sqrt(n))`` is noncentral t with ``df`` and noncentrality
    ``nc = (delta / sd) * sqrt(n)``. Two-sided power at level ``alpha``:
    ``P(T > t_{1-alpha/2}) + P(T < -t_{1-alpha/2})``; one-sided ("larger"):
    ``P(T > t_{1-alpha})``. These are exactly statsmodels
    ``TTestPower().power(effect_size=delta/sd, nobs=n, alpha=alpha, alternative=...)``
    (checked in the tests). :func:`t_test_mdd` solves for the smallest ``|delta|`` reaching a
    given power (the minimal detectable difference).

Paired TOST (:func:`tost_power`, :func:`tost_n_needed`)
    TOST at level ``alpha`` concludes equivalence when
    ``low + tc * s/sqrt(n) < mean(D) < high - tc * s/sqrt(n)``, ``tc = t_{1-alpha, df}``
    (the ``1 - 2 alpha`` CI inside the margins). Since ``mean(D)`` and ``s`` are independent,

    ``power = E_W[ max(0, Phi(U - tc W/sqrt(df)) - Phi(L + tc W/sqrt(df))) ]``,

    ``U = (high - delta)/se0``, ``L = (low - delta)/se0``, ``W = sqrt(df) s/sd ~ chi(df)``.
    ``method="exact"`` integrates this over the chi density (``scipy.integrate.quad``, the
    integrand vanishes beyond ``W = (U - L) sqrt(df) / (2 tc)``): Owen's Q formulation, as
    R PowerTOST's ``method="exact"``. ``method="nct"`` is the usual noncentral-t
    approximation ``P(T_1 > tc) + P(T_2 < -tc) - 1`` (``T_1``, ``T_2`` noncentral t with
    ``nc = (delta - low)/se0`` and ``(delta - high)/se0``), i.e. the sum of two one-sided
    statsmodels ``TTestPower`` powers minus 1 (floored at 0); it ignores that both tests share
    ``s`` and underestimates the power of small samples. The tests check the exact value
    against a simulation of the TOST decision.

All functions take scalars and return floats (``n`` is the number of pairs).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal

from ..signature import AsDict
from ..errors import DDPUsageError
from ._table import signature

Alternative = Literal["two-sided", "larger", "smaller"]


def _check(n: float, alpha: float, sd: float | None = None) -> None:
    if not (isinstance(n, (int, float)) and math.isfinite(n) and n >= 2):
        raise DDPUsageError(f"power needs at least 2 pairs, got n = {n}", code="D520")
    if not 0.0 < float(alpha) < 0.5:
        raise DDPUsageError(f"alpha must be in (0, 0.5), got {alpha} (--alpha)", code="D520")
    if sd is not None and not (math.isfinite(sd) and sd >= 0):
        raise DDPUsageError(f"sd must be finite and >= 0, got {sd}", code="D520")


def _nct_sf(x: float, df: float, nc: float) -> float:
    """``P(T > x)`` for noncentral t; scipy returns NaN far in a tail (e.g. ``nct.cdf(-1.96, 1599, 31.6)``,
    where statsmodels ``TTestPower`` returns NaN too): there the complementary form is used, and a tail
    that is still NaN is 0 or 1."""
    from scipy import stats

    v = float(stats.nct.sf(x, df, nc))
    if math.isnan(v):
        v = 1.0 - float(stats.nct.cdf(x, df, nc))
    if math.isnan(v):
        v = 1.0 if nc > x else 0.0
    return min(1.0, max(0.0, v))


def t_test_power(effect: float, n: float, alpha: float = 0.05, alternative: Alternative = "two-sided") -> float:
    """Power of the paired (one-sample) t-test; ``effect = delta / sd`` (Cohen's d_z), ``n`` pairs.

    Equal to statsmodels ``TTestPower().power(effect, n, alpha, alternative=alternative)``.
    """
    from scipy import stats

    _check(n, alpha if alternative != "two-sided" else alpha / 2)
    df = n - 1.0
    nc = float(effect) * math.sqrt(n)
    if alternative == "two-sided":
        crit = stats.t.isf(alpha / 2.0, df)
        return _nct_sf(crit, df, nc) + _nct_sf(crit, df, -nc)
    crit = stats.t.isf(alpha, df)
    if alternative == "larger":
        return _nct_sf(crit, df, nc)
    if alternative == "smaller":
        return _nct_sf(crit, df, -nc)
    raise DDPUsageError(f"alternative must be two-sided, larger or smaller, got {alternative!r}", code="D520")


def t_test_mdd(n: float, sd: float, alpha: float = 0.05, power: float = 0.8,
               alternative: Alternative = "two-sided") -> float:
    """Minimal detectable difference (score units): the smallest ``delta >= 0`` at which the paired
    t-test of ``n`` pairs with difference SD ``sd`` has ``power``. ``sd = 0`` gives 0."""
    from scipy.optimize import brentq

    _check(n, alpha, sd)
    if not 0.0 < power < 1.0:
        raise DDPUsageError(f"power must be in (0, 1), got {power}", code="D520")
    if sd == 0:
        return 0.0
    alt: Alternative = "larger" if alternative != "two-sided" else "two-sided"
    f = lambda es: t_test_power(es, n, alpha, alt) - power  # noqa: E731
    hi = 4.0 / math.sqrt(n)
    while f(hi) < 0:
        hi *= 2.0
    return float(brentq(f, 0.0, hi, xtol=1e-14, rtol=1e-13)) * float(sd)


def tost_power(n: float, sd: float, low: float, high: float, *, true_diff: float = 0.0, alpha: float = 0.05,
               method: Literal["exact", "nct"] = "exact") -> float:
    """Probability that the paired TOST of ``n`` pairs concludes equivalence (module docstring).

    Parameters
    ----------
    n : number of pairs (>= 2)
    sd : SD of the paired differences (score units)
    low, high : equivalence margins (score units), ``low < high``
    true_diff : true mean difference (score units); 0 = "the evaluation is blind"
    alpha : level of each one-sided test
    method : "exact" (integral over the chi distribution of s) or "nct" (approximation)
    """
    from scipy import stats

    _check(n, alpha, sd)
    if not low < high:
        raise DDPUsageError(f"low must be below high, got ({low}, {high})", code="D520")
    df = n - 1.0
    tc = float(stats.t.isf(alpha, df))
    if sd == 0:
        return 1.0 if low < true_diff < high else 0.0
    se0 = sd / math.sqrt(n)
    U, L = (high - true_diff) / se0, (low - true_diff) / se0
    if method == "nct":
        p1 = _nct_sf(tc, df, (true_diff - low) / se0)
        p2 = _nct_sf(tc, df, (high - true_diff) / se0)  # = P(T_2 < -tc) by symmetry
        return float(max(0.0, p1 + p2 - 1.0))
    if method != "exact":
        raise DDPUsageError(f"method must be 'exact' or 'nct', got {method!r}", code="D520")
    w_max = (U - L) * math.sqrt(df) / (2.0 * tc)
    lo = float(stats.chi.ppf(1e-16, df))
    hi = min(w_max, float(stats.chi.isf(1e-16, df)))
    if hi <= lo:
        return 0.0
    return float(min(1.0, max(0.0, _exact_integral(U, L, tc, df, lo, hi))))


def _gauss_legendre(k: int = 64) -> tuple[Any, Any]:
    import numpy as np

    global _GL
    if _GL is None or _GL[0].size != k:
        _GL = np.polynomial.legendre.leggauss(k)
    return _GL


_GL: Any = None


def _exact_integral(U: float, L: float, tc: float, df: float, lo: float, hi: float) -> float:
    """``int_lo^hi max(0, Phi(U - k w) - Phi(L + k w)) chi_df(w) dw``, ``k = tc/sqrt(df)``: composite
    Gauss-Legendre (16 panels x 64 nodes, vectorised), panels refined around the chi mode."""
    import numpy as np
    from scipy import special

    k = tc / math.sqrt(df)
    x, wts = _gauss_legendre()
    mode = math.sqrt(max(df - 1.0, 0.0))
    # panel edges: uniform over [lo, hi] plus extra edges within 4 chi-sds of the mode
    edges = np.linspace(lo, hi, 9)
    near = np.clip(mode + np.linspace(-4.0, 4.0, 9) * (1.0 / math.sqrt(2.0)), lo, hi)
    edges = np.unique(np.concatenate([edges, near]))
    a, b = edges[:-1], edges[1:]
    half = (b - a)[:, None] / 2.0
    w = (a[:, None] + b[:, None]) / 2.0 + half * x[None, :]
    logpdf = (df - 1.0) * np.log(np.maximum(w, 1e-300)) - w * w / 2.0 - (df / 2.0 - 1.0) * math.log(2.0) \
        - special.gammaln(df / 2.0)
    f = np.maximum(0.0, special.ndtr(U - k * w) - special.ndtr(L + k * w)) * np.exp(logpdf)
    return float((f * wts[None, :] * half).sum())


def tost_n_needed(sd: float, low: float, high: float, *, true_diff: float = 0.0, alpha: float = 0.05,
                  power: float = 0.8, method: Literal["exact", "nct"] = "exact",
                  n_max: int = 10**9) -> int | None:
    """Smallest number of pairs (>= 2) whose paired TOST reaches ``power``; ``None`` when no ``n``
    up to ``n_max`` does (a true difference on or beyond a margin never reaches it)."""
    if not 0.0 < power < 1.0:
        raise DDPUsageError(f"power must be in (0, 1), got {power}", code="D520")
    if not low < true_diff < high:
        return None
    f = lambda n: tost_power(n, sd, low, high, true_diff=true_diff, alpha=alpha, method=method)  # noqa: E731
    if f(2) >= power:
        return 2
    lo, hi = 2, 4
    while f(hi) < power:
        lo, hi = hi, hi * 2
        if hi > n_max:
            return None
    while hi - lo > 1:  # f(lo) < power <= f(hi)
        mid = (lo + hi) // 2
        if f(mid) >= power:
            hi = mid
        else:
            lo = mid
    return int(hi)


@dataclasses.dataclass(frozen=True)
class TostPowerResult(AsDict):
    """Power analysis of a paired TOST at the observed n, margins and SD of the differences."""

    n: int
    sd: float
    low: float
    high: float
    alpha: float
    power: float  # P(equivalence | true difference 0), exact
    power_nct: float  # the noncentral-t approximation of the same
    mdd_80: float  # smallest true difference a two-sided paired t-test (level alpha) detects with 80 % power
    n_needed: int | None  # pairs for 80 % TOST power at true difference 0
    target_power: float
    signature: dict[str, Any] = dataclasses.field(default_factory=dict)


def tost_power_analysis(n: int, sd: float, low: float, high: float, *, alpha: float = 0.05,
                        target_power: float = 0.8) -> TostPowerResult:
    """``power`` (true difference 0), ``mdd_80`` and ``n_needed`` for a paired TOST (module docstring)."""
    return TostPowerResult(
        n=int(n), sd=float(sd), low=float(low), high=float(high), alpha=float(alpha),
        power=tost_power(n, sd, low, high, alpha=alpha),
        power_nct=tost_power(n, sd, low, high, alpha=alpha, method="nct"),
        mdd_80=t_test_mdd(n, sd, alpha=alpha, power=target_power),
        n_needed=tost_n_needed(sd, low, high, alpha=alpha, power=target_power),
        target_power=float(target_power),
        signature=signature("tost_power_analysis", true_diff=0.0, alpha=float(alpha), target_power=float(target_power),
                            power_method="exact (Owen's Q by quadrature over chi(df))",
                            mdd="two-sided paired t-test, noncentral t (statsmodels TTestPower)"),
    )
