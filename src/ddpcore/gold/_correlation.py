"""Correlation of DDP with a reference series (gold distances, another run), ``None`` when undefined.

Shared by :mod:`ddpcore.gold.validate` and :mod:`ddpcore.gold.agree` (so that ``agree`` does not
import ``validate``). The coefficients come from :mod:`ddpcore.stats.correlation`, the one
implementation of Pearson and Spearman in ddpcore (checked against ``scipy.stats`` there:
Spearman equal, Pearson within a few units in the last place, never visible in the 3-decimal
figures ``ddp validate`` / ``ddp agree`` print).
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
import numpy.typing as npt


def correlation(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64],
                kind: Literal["pearson", "spearman"]) -> float | None:
    """Pearson or Spearman correlation of two 1-d float64 arrays of shape (n,), ``None`` when
    undefined (fewer than 2 values or a constant array)."""
    from ..stats.correlation import pearson, spearman

    if x.size < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return None
    r = float((pearson if kind == "pearson" else spearman)(x, y).statistic)
    return None if math.isnan(r) else r
