"""Kendall tau-b, Pearson r and Spearman rho with two-sided p-values (scipy conventions).

``kendall_tau_b`` reproduces ``scipy.stats.kendalltau(x, y)`` (variant "b",
method "auto"): the statistic is computed with scipy's final arithmetic
``(con - dis) / sqrt(tot - xtie) / sqrt(tot - ytie)`` from exact integer pair counts
(discordant pairs by a native O(n log n) Fenwick-tree kernel), so it is bit-for-bit the
same. The p-value rule is scipy's: the *exact* null distribution (permutations counted by
number of inversions, exact integer arithmetic) when there are no ties and either
n <= 33 or ``min(dis, tot - dis) <= 1``; otherwise the normal approximation with the
tie-corrected variance. Undefined cases (n < 2, a constant input, NaN) give NaN
statistic and p-value, as scipy does. ``method="exact"`` forces the exact distribution at any
n (exact rationals up to n = 170, scipy's normalised float recurrence above; ties raise D542)
and ``method="asymptotic"`` the normal approximation; ``alternative="greater"|"less"`` gives
the one-sided p-values of ``scipy.stats.kendalltau(..., alternative=)``.

``pearson`` follows ``scipy.stats.pearsonr`` (p from the Beta(n/2 - 1, n/2 - 1)
distribution of r on [-1, 1]); ``spearman`` follows ``scipy.stats.spearmanr`` (Pearson r
of average ranks, p from Student t with n - 2 df).
"""
from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..signature import AsDict
from .._native import load
from ..errors import DDPDataError, DDPUsageError
from ._table import signature


@dataclasses.dataclass(frozen=True)
class CorrelationResult(AsDict):
    """A correlation coefficient with its two-sided p-value."""

    statistic: float
    p_value: float
    n: int
    method: str
    signature: dict[str, Any] = dataclasses.field(default_factory=dict)


def _pair(x: npt.ArrayLike, y: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    try:
        xa = np.asarray(x, dtype=np.float64).ravel()
        ya = np.asarray(y, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise DDPDataError("correlation inputs must be numeric", code="D303") from None
    if xa.size != ya.size:
        raise DDPDataError(f"x and y must have the same length, got {xa.size} and {ya.size}", code="D308")
    return xa, ya


def _nan_result(n: int, method: str) -> CorrelationResult:
    return CorrelationResult(float("nan"), float("nan"), n, method, signature(method))


def _dense_ranks(sorted_values: np.ndarray) -> np.ndarray:
    """1-based dense ranks of an already sorted array."""
    return np.r_[True, sorted_values[1:] != sorted_values[:-1]].cumsum(dtype=np.int64)


def _tie_sums(ranks: np.ndarray) -> tuple[int, int, int]:
    """(sum t(t-1)/2, sum t(t-1)(t-2), sum t(t-1)(2t+5)) over tie groups of size t."""
    t = np.bincount(ranks).astype(np.int64)
    t = t[t > 1]
    tl = [int(v) for v in t]
    return (
        sum(v * (v - 1) // 2 for v in tl),
        sum(v * (v - 1) * (v - 2) for v in tl),
        sum(v * (v - 1) * (2 * v + 5) for v in tl),
    )


def kendall_tau_b(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    method: Literal["auto", "exact", "asymptotic"] = "auto",
    alternative: Literal["two-sided", "greater", "less"] = "two-sided",
) -> CorrelationResult:
    """Kendall's tau-b of two equal-length samples, as ``scipy.stats.kendalltau(x, y, method=, alternative=)``.

    Parameters
    ----------
    x, y : array_like, shape (n,)
    method : {"auto", "exact", "asymptotic"}
        ``"auto"`` (default, unchanged): exact when there are no ties and n <= 33 or
        ``min(dis, tot - dis) <= 1``, else asymptotic. ``"exact"``: the exact permutation
        distribution for any n (R ``cor.test(method="kendall", exact=TRUE)``); ties raise D542.
        ``"asymptotic"``: the normal approximation with the tie-corrected variance.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: positive association (tau > 0) under H1.

    Returns
    -------
    CorrelationResult
        ``statistic`` in [-1, 1] and ``p_value`` (``signature["p_value_method"]`` says which
        rule applied); NaN for n < 2, a constant input or NaN values.
    """
    if method not in ("auto", "exact", "asymptotic"):
        raise DDPUsageError(f"method must be 'auto', 'exact' or 'asymptotic', got {method!r}", code="D542")
    if alternative not in ("two-sided", "greater", "less"):
        raise DDPUsageError(
            f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}", code="D542"
        )
    xa, ya = _pair(x, y)
    n = xa.size
    if n < 2 or np.isnan(xa).any() or np.isnan(ya).any():
        return _nan_result(n, "kendall_tau_b")
    order = np.lexsort((ya, xa))  # by x, then y
    xs = xa[order]
    x_rank = _dense_ranks(xs)
    y_order = np.argsort(ya, kind="stable")
    y_rank_sorted = _dense_ranks(ya[y_order])
    y_rank = np.empty(n, dtype=np.int64)
    y_rank[y_order] = y_rank_sorted
    y_rank = y_rank[order]
    dis = int(load("stats_kernels").count_discordant(np.ascontiguousarray(y_rank)))
    boundary = np.r_[True, (x_rank[1:] != x_rank[:-1]) | (y_rank[1:] != y_rank[:-1]), True]
    run = np.diff(np.flatnonzero(boundary)).astype(np.int64)
    ntie = int((run * (run - 1) // 2).sum())
    xtie, x0, x1 = _tie_sums(x_rank)
    ytie, y0, y1 = _tie_sums(y_rank)
    tot = n * (n - 1) // 2
    if xtie == tot or ytie == tot:
        return _nan_result(n, "kendall_tau_b")
    con_minus_dis = tot - xtie - ytie + ntie - 2 * dis
    tau = con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
    tau = float(min(1.0, max(-1.0, tau)))
    if method == "exact" and (xtie or ytie):
        raise DDPDataError(
            "the exact p-value of Kendall's tau needs data without ties "
            f"({'x' if xtie else 'y'} has tied values); use method='asymptotic' or 'auto'",
            code="D542",
        )
    if method == "auto":
        no_ties = xtie == 0 and ytie == 0
        method = "exact" if no_ties and (n <= 33 or min(dis, tot - dis) <= 1) else "asymptotic"
    if method == "exact":
        if alternative == "two-sided":
            p = _kendall_exact_p(n, tot - dis)
        else:
            p = _kendall_exact_p_one_sided(n, tot - dis, alternative)
    else:
        m = n * (n - 1.0)
        # n = 2: no tie group of 3 or more, so x0 * y0 = 0 (scipy divides 0 by 0 there and raises)
        third = x0 * y0 / (9 * m * (n - 2)) if n > 2 else 0.0
        var = (m * (2 * n + 5) - x1 - y1) / 18 + (2 * xtie * ytie) / m + third
        z = con_minus_dis / math.sqrt(var)
        from scipy import special

        if alternative == "two-sided":
            p = float(2 * special.ndtr(-abs(z)))
        elif alternative == "greater":
            p = float(special.ndtr(-z))
        else:
            p = float(special.ndtr(z))
    sig = signature("kendall_tau_b", p_value_method=method)
    if alternative != "two-sided":
        sig["alternative"] = alternative
    return CorrelationResult(tau, p, n, "kendall_tau_b", sig)


def _kendall_exact_p(n: int, con: int) -> float:
    """Two-sided exact p of Kendall's tau without ties; ``con`` concordant pairs of n.

    P = 2 * P(C <= c) with c = min(con, tot - con), where the number of permutations of n
    items with exactly k inversions satisfies M(n, k) = sum_{i=0}^{min(k, n-1)} M(n-1, k-i)
    (Kendall 1970). Computed with exact integers; capped at 1.
    """
    tot = n * (n - 1) // 2
    c = min(con, tot - con)
    if n <= 2:
        return 1.0
    if 4 * c == n * (n - 1):
        return 1.0
    # like scipy, report 0 where n! overflows a double for the two closed-form cases
    if c == 0 and n >= 171:
        return 0.0
    if c == 1 and n >= 172:
        return 0.0
    if n >= 171:
        return float(min(1.0, 2.0 * _inversion_cdf_scaled(n, c)[0]))
    counts = _inversion_counts(n, c)
    p = Fraction(2 * sum(counts), math.factorial(n))
    return float(min(p, Fraction(1)))


def _inversion_counts(n: int, c: int) -> list[int]:
    """M(n, k) for k = 0..c: permutations of n items with exactly k inversions (exact integers).

    M(j, k) = S(k) - S(k - j) with S the prefix sums of M(j - 1, .): one numpy cumsum over
    Python integers per j (O(n c) big-integer additions in C, no Python loop over k).
    """
    counts = np.zeros(c + 1, dtype=object)
    counts[:] = 0
    counts[0] = 1
    for j in range(2, n + 1):
        s = np.cumsum(counts)
        new = s.copy()
        if j <= c:
            new[j:] = s[j:] - s[: c + 1 - j]
        counts = new
    return [int(v) for v in counts]


def _inversion_cdf_scaled(n: int, c: int) -> tuple[float, float]:
    """(P(C <= c), P(C = c)) for n >= 171 in floating point, scipy's normalised recurrence
    (each step divided by j so that nothing overflows)."""
    new = np.zeros(c + 1)
    new[0:2] = 1.0
    for j in range(3, n + 1):
        new = np.cumsum(new) / j
        if j <= c:
            new[j:] -= new[: c + 1 - j].copy()
    return float(np.sum(new) / 2.0), float(new[-1] / 2.0)


def _kendall_exact_p_one_sided(n: int, con: int, alternative: str) -> float:
    """One-sided exact p of Kendall's tau without ties (scipy ``_kendall_p_exact``).

    With c = min(con, tot - con): when the observed side agrees with ``alternative`` the p is
    P(C <= c); otherwise 1 - P(C <= c) + P(C = c). Exact rationals for n <= 170.
    """
    tot = n * (n - 1) // 2
    in_right_tail = con >= tot - con
    agree = in_right_tail == (alternative == "greater")
    c = min(con, tot - con)
    if n == 2:
        return 0.5 if agree else 1.0
    if n >= 171 and c >= 2:
        cdf_f, mass_f = _inversion_cdf_scaled(n, c)
        return float(min(max(cdf_f if agree else 1.0 - cdf_f + mass_f, 0.0), 1.0))
    counts = _inversion_counts(n, c)
    fact = math.factorial(n)
    cdf = Fraction(sum(counts), fact)
    mass = Fraction(counts[c], fact)
    p = cdf if agree else 1 - cdf + mass
    return float(min(max(p, Fraction(0)), Fraction(1)))


def pearson(x: npt.ArrayLike, y: npt.ArrayLike) -> CorrelationResult:
    """Pearson's r with the two-sided p-value of ``scipy.stats.pearsonr``.

    Parameters
    ----------
    x, y : array_like, shape (n,), n >= 2

    NaN result for a constant input or NaN values (scipy returns NaN there); an infinite value
    is D302. Inputs near the float64 limit (e.g. 1e308) are scaled by a power of two first
    (exact, and r does not depend on scale), so the mean and the deviations cannot overflow.
    """
    xa, ya = _pair(x, y)
    n = xa.size
    if n < 2:
        raise DDPDataError(f"pearson needs at least 2 pairs, got {n}", code="D309")
    for name, a in (("x", xa), ("y", ya)):
        inf = np.isinf(a)
        if inf.any():
            raise DDPDataError(f"pearson: {name}[{int(np.flatnonzero(inf)[0])}] is infinite; values must be finite "
                               "numbers", code="D302")
    if np.isnan(xa).any() or np.isnan(ya).any() or (xa == xa[0]).all() or (ya == ya[0]).all():
        return _nan_result(n, "pearson")
    r = _pearson_r(_unit_scale(xa), _unit_scale(ya))
    if n == 2:  # two points lie on a line: exactly +-1 (scipy's rule; the arithmetic can give 0.9999999999999998)
        r = math.copysign(1.0, r)
    from scipy import special

    ab = n / 2 - 1
    # Beta(ab, ab) on [-1, 1]: P(|R| >= |r|) = 2 * I_{(1 - |r|)/2}(ab, ab)
    p = 1.0 if n == 2 else float(2 * special.betainc(ab, ab, 0.5 * (1 - abs(r))))
    return CorrelationResult(r, min(p, 1.0), n, "pearson", signature("pearson"))


#: above this magnitude sums and differences of a few values can overflow float64
_SCALE_ABOVE = 2.0 ** 500


def _unit_scale(a: np.ndarray) -> np.ndarray:
    """``a`` times a power of two that brings max|a| below 1 when it is above 2**500 (exact:
    only the exponent changes), else ``a`` unchanged."""
    m = float(np.abs(a).max())
    if not m > _SCALE_ABOVE:
        return a
    return np.ldexp(a, -math.frexp(m)[1])


def _pearson_r(xa: np.ndarray, ya: np.ndarray) -> float:
    xm = xa - xa.mean()
    ym = ya - ya.mean()
    xmax = np.abs(xm).max()
    ymax = np.abs(ym).max()
    normx = xmax * np.linalg.norm(xm / xmax)
    normy = ymax * np.linalg.norm(ym / ymax)
    r = float(np.dot(xm / normx, ym / normy))
    return min(1.0, max(-1.0, r))


def _average_ranks(a: np.ndarray) -> np.ndarray:
    """1-based ranks with ties given their average rank (scipy.stats.rankdata 'average')."""
    order = np.argsort(a, kind="mergesort")
    sa = a[order]
    boundary = np.r_[True, sa[1:] != sa[:-1], True]
    starts = np.flatnonzero(boundary)
    dense = np.cumsum(boundary[:-1]) - 1
    avg = 0.5 * (starts[:-1] + starts[1:] - 1) + 1  # mean of 1-based positions in each tie group
    ranks = np.empty(a.size, dtype=np.float64)
    ranks[order] = avg[dense]
    return ranks


def spearman(x: npt.ArrayLike, y: npt.ArrayLike) -> CorrelationResult:
    """Spearman's rho (Pearson r of average ranks) with the p-value of ``scipy.stats.spearmanr``.

    p from Student t with n - 2 df: ``t = rho * sqrt((n - 2) / ((1 + rho)(1 - rho)))``.
    NaN for a constant input or NaN values.
    """
    xa, ya = _pair(x, y)
    n = xa.size
    if n < 2:
        raise DDPDataError(f"spearman needs at least 2 pairs, got {n}", code="D309")
    if np.isnan(xa).any() or np.isnan(ya).any() or (xa == xa[0]).all() or (ya == ya[0]).all():
        return _nan_result(n, "spearman")
    rx, ry = _average_ranks(xa), _average_ranks(ya)
    rho = float(np.corrcoef(rx, ry)[1, 0])  # the same product-moment formula scipy.stats.spearmanr uses
    from scipy import special

    dof = n - 2
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.float64(dof) / ((rho + 1.0) * (1.0 - rho))
        t = rho * np.sqrt(max(q, 0.0))
    p = float(2 * special.stdtr(dof, -abs(t))) if dof > 0 else float("nan")
    return CorrelationResult(rho, p, n, "spearman", signature("spearman"))


__all__ = ["CorrelationResult", "kendall_tau_b", "pearson", "spearman"]
