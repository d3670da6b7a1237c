"""Shares with their exact (Clopper-Pearson) confidence intervals, for ``ddp validate``.

A share is ``k`` successes out of ``n`` trials (segments; :attr:`Proportion.count` is ``k``). Its two-sided Clopper-Pearson interval
at level ``1 - alpha`` is ``[B^-1(alpha/2; k, n - k + 1), B^-1(1 - alpha/2; k + 1, n - k)]`` with
``B^-1`` the inverse regularised incomplete beta function (``scipy.special.betaincinv``), the lower
bound 0 at ``k = 0`` and the upper bound 1 at ``k = n``: the interval of
``scipy.stats.binomtest(k, n).proportion_ci(method="exact")`` and of statsmodels'
``proportion_confint(k, n, method="beta")``, computed here for whole arrays at once. With
``n = 0`` the share and its interval are undefined (``None`` in the reports).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

#: confidence level of every interval ``ddp validate`` reports
LEVEL = 0.95


@dataclass(frozen=True)
class Proportion:
    """``count`` of ``n`` segments; ``share`` = count / n in [0, 1] and its exact 95 % interval
    ``[ci_low, ci_high]``; all three ``None`` when ``n == 0``."""

    count: int
    n: int
    share: float | None
    ci_low: float | None
    ci_high: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def clopper_pearson(
    k: npt.ArrayLike, n: npt.ArrayLike, level: float = LEVEL
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Two-sided exact (Clopper-Pearson) interval of the proportion ``k / n``, element-wise.

    Parameters
    ----------
    k, n : array-like of int, broadcastable shapes
        Successes and trials, ``0 <= k <= n``.
    level : float
        Confidence level in (0, 1).

    Returns
    -------
    (low, high) : two float64 arrays of the broadcast shape, in [0, 1]; NaN where ``n == 0``.
    """
    from scipy.special import betaincinv

    kk, nn = np.broadcast_arrays(np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64))
    a = (1.0 - level) / 2.0
    defined = nn > 0
    # betaincinv wants positive shape parameters: evaluate at a harmless stand-in where the bound is fixed
    lo_ok = defined & (kk > 0)
    hi_ok = defined & (kk < nn)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(lo_ok, betaincinv(np.where(lo_ok, kk, 1.0), np.where(lo_ok, nn - kk + 1.0, 1.0), a), 0.0)
        high = np.where(hi_ok, betaincinv(np.where(hi_ok, kk + 1.0, 1.0), np.where(hi_ok, nn - kk, 1.0), 1.0 - a), 1.0)
    low = np.where(defined, low, np.nan)
    high = np.where(defined, high, np.nan)
    return low.astype(np.float64), high.astype(np.float64)


def proportions(k: npt.ArrayLike, n: npt.ArrayLike, level: float = LEVEL) -> list[Proportion]:
    """One :class:`Proportion` per element of the 1-d integer arrays ``k`` and ``n`` (same shape)."""
    kk = np.atleast_1d(np.asarray(k, dtype=np.int64))
    nn = np.atleast_1d(np.asarray(n, dtype=np.int64))
    low, high = clopper_pearson(kk, nn, level)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = kk / np.where(nn > 0, nn, 1)
    out = []
    for ki, ni, si, lo, hi in zip(kk.tolist(), nn.tolist(), share.tolist(), low.tolist(), high.tolist()):
        if ni == 0:
            out.append(Proportion(ki, ni, None, None, None))
        else:
            out.append(Proportion(ki, ni, float(si), float(lo), float(hi)))
    return out


def proportion(k: int, n: int, level: float = LEVEL) -> Proportion:
    """:class:`Proportion` of ``k`` out of ``n`` (scalars)."""
    return proportions([k], [n], level)[0]
