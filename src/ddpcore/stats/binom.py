"""Exact binomial test and the sign test on paired data (seed 001's manipulation checks).

``binom_test(k, n, p, alternative)`` reproduces ``scipy.stats.binomtest``:

* ``"less"``: ``P(X <= k)``; ``"greater"``: ``P(X >= k)``;
* ``"two-sided"``: the probability of every outcome no more likely than the observed one,
  ``sum_{x: pmf(x) <= pmf(k) * (1 + 1e-7)} pmf(x)`` (the relative tolerance is scipy's and
  R's ``binom.test``), computed like scipy with one tail summed directly and the other tail
  found by bisection on the unimodal pmf (O(log n) pmf evaluations), capped at 1.

Confidence intervals for the proportion, at ``confidence_level`` (default 0.95), one-sided
for a one-sided alternative as in ``BinomTestResult.proportion_ci``:

* **Clopper-Pearson** ("exact"): the Beta quantiles ``B^-1(a; k, n - k + 1)`` and
  ``B^-1(1 - a; k + 1, n - k)`` (closed form of scipy's root search; 0 at k = 0, 1 at k = n);
* **Wilson** score interval without continuity correction (Newcombe 1998, method 3), scipy's
  ``method="wilson"``.

``sign_test(x, y, mu=0)`` tests the median of the paired differences ``x - y`` against ``mu``:
differences equal to ``mu`` are dropped (the classical convention, R BSDA ``SIGN.test``),
``k`` = the number of positive differences of the ``n`` remaining, and ``binom_test(k, n, 0.5)``.
``alternative="greater"`` says ``x - y`` tends to exceed ``mu``.
"""
from __future__ import annotations

import dataclasses
import math
import operator
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..signature import AsDict
from ..errors import DDPDataError, DDPUsageError
from ._table import signature

Alternative = Literal["two-sided", "greater", "less"]
ALTERNATIVES = ("two-sided", "greater", "less")


@dataclasses.dataclass(frozen=True)
class BinomTestResult(AsDict):
    """Result of :func:`binom_test` / :func:`sign_test`."""

    k: int
    n: int
    p: float  # hypothesised probability of success
    alternative: str
    statistic: float  # k / n (NaN when n = 0)
    p_value: float
    confidence_level: float
    ci_low: float  # Clopper-Pearson
    ci_high: float
    wilson_low: float
    wilson_high: float
    n_zero: int = 0  # sign test: differences equal to mu (dropped)
    n_omitted: int = 0  # sign test: NaN pairs dropped (nan_policy="omit")
    signature: dict[str, Any] = dataclasses.field(default_factory=dict)


def check_alternative(alternative: Any, flag: str = "alternative=") -> str:
    """``alternative`` as a str when it is ``two-sided``, ``greater`` or ``less``; else D540 naming ``flag``."""
    if alternative not in ALTERNATIVES:
        raise DDPUsageError(
            f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r} ({flag})", code="D540"
        )
    return str(alternative)


def _as_count(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise DDPUsageError(f"{name} must be a non-negative integer, got {value!r}", code="D540")
    try:
        out = operator.index(value)
    except TypeError:
        if isinstance(value, float) and value.is_integer():
            out = int(value)
        else:
            raise DDPUsageError(f"{name} must be a non-negative integer, got {value!r}", code="D540") from None
    if out < 0:
        raise DDPUsageError(f"{name} must be a non-negative integer, got {out}", code="D540")
    return int(out)


def _bisect(f: Any, target: float, lo: int, hi: int) -> int:
    """Smallest integer x in [lo, hi] with f(x) >= target for f non-decreasing on [lo, hi]
    (scipy's ``_binary_search_for_binom_tst``: returns the crossing point; if none, the end)."""
    while lo < hi:
        mid = lo + (hi - lo) // 2
        v = f(mid)
        if v < target:
            lo = mid + 1
        elif v > target:
            hi = mid - 1
        else:
            return mid
    return lo if f(lo) <= target else lo - 1


def _p_value(k: int, n: int, p: float, alternative: str) -> float:
    from scipy.stats import binom

    if alternative == "less":
        return float(binom.cdf(k, n, p))
    if alternative == "greater":
        return float(binom.sf(k - 1, n, p))
    d = float(binom.pmf(k, n, p))
    rerr = 1 + 1e-7
    if k == p * n:
        return 1.0
    if k < p * n:
        # first x in [ceil(pn), n] with pmf(x) <= d * rerr (pmf decreasing there)
        ix = _bisect(lambda x1: -float(binom.pmf(x1, n, p)), -d * rerr, int(np.ceil(p * n)), n)
        y = n - ix + int(d * rerr == float(binom.pmf(ix, n, p)))
        pval = float(binom.cdf(k, n, p) + binom.sf(n - y, n, p))
    else:
        ix = _bisect(lambda x1: float(binom.pmf(x1, n, p)), d * rerr, 0, int(np.floor(p * n)))
        y = ix + 1
        pval = float(binom.cdf(y - 1, n, p) + binom.sf(k - 1, n, p))
    return min(1.0, pval)


def _clopper_pearson(k: int, n: int, level: float, alternative: str) -> tuple[float, float]:
    from scipy import special

    a = (1 - level) / 2 if alternative == "two-sided" else 1 - level
    low = 0.0 if (k == 0 or alternative == "less") else float(special.betaincinv(k, n - k + 1, a))
    high = 1.0 if (k == n or alternative == "greater") else float(special.betaincinv(k + 1, n - k, 1 - a))
    return low, high


def _wilson(k: int, n: int, level: float, alternative: str) -> tuple[float, float]:
    from scipy.special import ndtri

    p = k / n
    z = float(ndtri(0.5 + 0.5 * level)) if alternative == "two-sided" else float(ndtri(level))
    denom = 2 * (n + z**2)
    center = (2 * n * p + z**2) / denom
    delta = z / denom * math.sqrt(4 * n * p * (1 - p) + z**2)
    low = 0.0 if (alternative == "less" or k == 0) else center - delta
    high = 1.0 if (alternative == "greater" or k == n) else center + delta
    return low, high


def binom_test(
    k: int, n: int, p: float = 0.5, alternative: Alternative = "two-sided", confidence_level: float = 0.95
) -> BinomTestResult:
    """Exact binomial test of ``H0: P(success) = p`` from ``k`` successes in ``n`` trials.

    Parameters
    ----------
    k, n : int
        ``0 <= k <= n``, ``n >= 1``.
    p : float
        Hypothesised probability of success, ``0 <= p <= 1``.
    alternative : {"two-sided", "greater", "less"}
    confidence_level : float
        Level of the Clopper-Pearson and Wilson intervals, in (0, 1).

    Returns
    -------
    BinomTestResult
        ``p_value`` as ``scipy.stats.binomtest(k, n, p, alternative).pvalue``; ``statistic``
        = k / n; the intervals as ``.proportion_ci(confidence_level, method="exact"|"wilson")``.
    """
    k = _as_count(k, "k")
    n = _as_count(n, "n")
    if n < 1:
        raise DDPUsageError("n must be at least 1", code="D540")
    if k > n:
        raise DDPUsageError(f"k must be <= n, got k={k}, n={n}", code="D540")
    try:
        p = float(p)
        confidence_level = float(confidence_level)
    except (TypeError, ValueError):
        raise DDPUsageError("p and confidence_level must be numbers", code="D540") from None
    if not 0.0 <= p <= 1.0:
        raise DDPUsageError(f"p must be in [0, 1], got {p}", code="D540")
    if not 0.0 < confidence_level < 1.0:
        raise DDPUsageError(f"confidence_level must be in (0, 1), got {confidence_level}", code="D540")
    alternative = check_alternative(alternative)  # type: ignore[assignment]
    pval = _p_value(k, n, p, alternative)
    cp = _clopper_pearson(k, n, confidence_level, alternative)
    wl = _wilson(k, n, confidence_level, alternative)
    return BinomTestResult(
        k=k, n=n, p=p, alternative=alternative, statistic=k / n, p_value=pval, confidence_level=confidence_level,
        ci_low=cp[0], ci_high=cp[1], wilson_low=wl[0], wilson_high=wl[1],
        signature=signature("binom_test", p=p, alternative=alternative, confidence_level=confidence_level),
    )


def sign_test(
    x: npt.ArrayLike,
    y: npt.ArrayLike | None = None,
    mu: float = 0.0,
    alternative: Alternative = "two-sided",
    confidence_level: float = 0.95,
    nan_policy: Literal["raise", "omit"] = "raise",
) -> BinomTestResult:
    """Sign test of the median of ``x - y`` (or of ``x`` when ``y`` is None) against ``mu``.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Paired scores; equal lengths.
    mu : float
        Hypothesised median difference. Differences exactly equal to ``mu`` are dropped
        (``n_zero``).
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: ``x - y`` tends to be above ``mu``.
    nan_policy : {"raise", "omit"}
        ``"omit"`` drops pairs with a NaN (``n_omitted``).

    Returns
    -------
    BinomTestResult
        ``k`` = positive differences, ``n`` = non-zero differences; the intervals are those of
        the proportion of positive differences. With no non-zero difference the test is
        undefined: ``p_value = 1``, statistic and intervals NaN.
    """
    alternative = check_alternative(alternative)  # type: ignore[assignment]
    try:
        xa = np.asarray(x, dtype=np.float64).ravel()
        d = xa if y is None else xa - np.asarray(y, dtype=np.float64).ravel()
        mu = float(mu)
    except (TypeError, ValueError):
        raise DDPDataError("sign test inputs must be numeric (x and y of equal length)", code="D541") from None
    if not math.isfinite(mu):
        raise DDPUsageError(f"mu must be finite, got {mu}", code="D540")
    nan = np.isnan(d)
    n_omitted = 0
    if nan.any():
        if nan_policy != "omit":
            raise DDPDataError(
                f"{int(nan.sum())} pair(s) have a NaN (first at index {int(np.flatnonzero(nan)[0])}); remove them "
                "or pass nan_policy='omit'", code="D541")
        n_omitted = int(nan.sum())
        d = d[~nan]
    if d.size == 0:
        raise DDPDataError("sign test needs at least one pair", code="D541")
    pos = int(np.count_nonzero(d > mu))
    neg = int(np.count_nonzero(d < mu))
    zero = int(d.size - pos - neg)
    sig = signature("sign_test", mu=mu, alternative=alternative, confidence_level=confidence_level,
                    nan_policy=nan_policy)
    if pos + neg == 0:
        nanf = float("nan")
        return BinomTestResult(0, 0, 0.5, alternative, nanf, 1.0, float(confidence_level), nanf, nanf, nanf, nanf,
                               n_zero=zero, n_omitted=n_omitted, signature=sig)
    r = binom_test(pos, pos + neg, 0.5, alternative, confidence_level)
    return dataclasses.replace(r, n_zero=zero, n_omitted=n_omitted, signature=sig)


__all__ = ["BinomTestResult", "binom_test", "sign_test", "ALTERNATIVES", "check_alternative"]
