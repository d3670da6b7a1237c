"""LOWESS smoothing (Cleveland 1979) with statsmodels' defaults and conventions.

``lowess(y, x)`` fits, at every x, a weighted least-squares line through the
``k = int(frac * n + 1e-10)`` nearest points (clamped to [2, n]) with tricube distance
weights, then runs ``it`` robustness passes that multiply the weights by the bisquare of
the residuals scaled by 6 x their median (a zero median gives weight 1 to exact fits and
0 to the rest). ``delta`` > 0 skips points within ``delta`` of the last fitted point and
interpolates them linearly. Points are sorted with ``numpy.argsort`` (as statsmodels
does, so ties in x are visited in the same order). The result matches
``statsmodels.nonparametric.smoothers_lowess.lowess(y, x, frac, it, delta)`` to ~1e-10;
each pass is one native kernel call over the sorted points.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..signature import AsDict
from .._native import load
from ..errors import DDPDataError, DDPUsageError
from ._table import check_nan_policy, signature


@dataclasses.dataclass(frozen=True)
class LowessResult(AsDict):
    """Sorted x values and the LOWESS fit at each of them (both shape (n,))."""

    x: np.ndarray
    fitted: np.ndarray
    frac: float
    it: int
    delta: float
    n_omitted: int
    signature: dict[str, Any] = dataclasses.field(default_factory=dict)

    def as_array(self) -> np.ndarray:
        """``(n, 2)`` array ``[x, fitted]``: the layout statsmodels' lowess returns."""
        return np.column_stack([self.x, self.fitted])


def lowess(
    y: npt.ArrayLike,
    x: npt.ArrayLike,
    frac: float = 2.0 / 3.0,
    it: int = 3,
    delta: float = 0.0,
    nan_policy: Literal["raise", "omit"] = "raise",
) -> LowessResult:
    """LOWESS fit of ``y`` on ``x`` (argument order as statsmodels: endog, exog).

    Parameters
    ----------
    y, x : array_like, shape (n,)
    frac : float in (0, 1]
        Share of the points in each local regression.
    it : int >= 0
        Number of robustness passes after the first fit.
    delta : float >= 0
        Interpolation distance (in x units); 0 fits every point.
    nan_policy : {"raise", "omit"}
        Non-finite pairs raise D302, or are dropped (statsmodels' ``missing="drop"``).
    """
    check_nan_policy(nan_policy)
    try:
        ya = np.asarray(y, dtype=np.float64)
        xa = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise DDPDataError("lowess inputs must be numeric", code="D303") from None
    if ya.ndim != 1 or xa.ndim != 1 or ya.shape != xa.shape:
        raise DDPDataError(f"x and y must be 1-D of the same length, got shapes {xa.shape} and {ya.shape}", code="D308")
    if not 0.0 < float(frac) <= 1.0:
        raise DDPUsageError(f"frac must be in (0, 1], got {frac}", code="D311")
    if int(it) < 0 or float(delta) < 0.0:
        raise DDPUsageError(f"it and delta must be >= 0, got it={it}, delta={delta}", code="D311")
    bad = ~(np.isfinite(xa) & np.isfinite(ya))
    n_omitted = 0
    if bad.any():
        if nan_policy == "raise":
            raise DDPDataError(
                f"{int(bad.sum())} non-finite x/y value(s) (first at index {int(np.flatnonzero(bad)[0])}); "
                "pass nan_policy='omit' to drop them",
                code="D302",
            )
        n_omitted = int(bad.sum())
        xa, ya = xa[~bad], ya[~bad]
    n = xa.size
    if n == 0:
        raise DDPDataError("lowess needs at least one point", code="D309")
    order = np.argsort(xa)
    xs = np.ascontiguousarray(xa[order])
    ys = np.ascontiguousarray(ya[order])
    k = min(max(int(frac * n + 1e-10), 2), n)
    kernels = load("stats_kernels")
    robust = np.ones(n)
    fit = np.empty(n)
    for rep in range(int(it) + 1):  # it + 1 passes (a handful), each one kernel call over all points
        kernels.lowess_pass(xs, ys, robust, k, float(delta), fit)
        if rep < int(it):
            robust = _bisquare_weights(ys, fit)
    return LowessResult(
        x=xs,
        fitted=fit.copy(),
        frac=float(frac),
        it=int(it),
        delta=float(delta),
        n_omitted=n_omitted,
        signature=signature("lowess", frac=float(frac), it=int(it), delta=float(delta)),
    )


def _bisquare_weights(y: np.ndarray, fit: np.ndarray) -> np.ndarray:
    """Robustness weights (1 - u^2)^2 with u = |residual| / (6 * median |residual|), u capped at 1."""
    r = np.abs(y - fit)
    med = float(np.median(r))
    u = (r > 0).astype(np.float64) if med == 0.0 else r / (6.0 * med)
    u = np.minimum(u, 1.0)
    return (1.0 - u * u) ** 2


__all__ = ["LowessResult", "lowess"]
