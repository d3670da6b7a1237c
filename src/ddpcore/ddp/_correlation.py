"""Correlation of DDP with a reference series (gold distances, another run), ``None`` when undefined.

Shared by :mod:`ddpcore.ddp.validate` and :mod:`ddpcore.ddp.agree` (so that ``agree`` does not
import ``validate``). The coefficients are scipy's. :mod:`ddpcore.stats.correlation` agrees
with scipy exactly for Spearman but not yet for Pearson: its ``_pearson_r`` (``np.dot``,
``np.linalg.norm``) differs from ``scipy.stats.pearsonr`` 1.17 (``vecdot``, ``vector_norm``,
``n == 2`` special case) in the last bit for about one input in five, which would change the
figures ``ddp validate`` / ``ddp agree`` print; switch once the two agree bit for bit.
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
import numpy.typing as npt


def correlation(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64],
                kind: Literal["pearson", "spearman"]) -> float | None:
    """Pearson or Spearman correlation of two 1-d float64 arrays of shape (n,) (scipy), ``None``
    when undefined (fewer than 2 values or a constant array)."""
    from scipy import stats

    if x.size < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return None
    r = stats.pearsonr(x, y).statistic if kind == "pearson" else stats.spearmanr(x, y).statistic
    r = float(r)
    return None if math.isnan(r) else r
