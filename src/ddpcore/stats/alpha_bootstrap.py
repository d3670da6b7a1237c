"""Bootstrap confidence interval for Krippendorff's alpha, resampling units.

The units (columns of the coders x units matrix) are the sampled entities; the coders stay
fixed. Each replicate draws the pairable units with replacement (U draws of
``Generator.integers`` from numpy's ``default_rng(seed)``, tallied into counts ``c_u``) and recomputes alpha *entirely* from the resample,
expected disagreement included. Every level reduces to per-unit sufficient statistics, so a
block of B replicates is a few (B x U) @ (U x k) products (no Python loop over replicates,
units or values):

* **interval**: per unit ``m_u, sum v, sum v^2`` and the within-unit sum
  ``w_u = 2 m_u SS_u / (m_u - 1)``; replicate ``W = c.w``, ``n = c.m``,
  ``total = 2 (n c.s2 - (c.s1)^2)``, ``alpha = 1 - (n - 1) W / total``.
* **nominal**: ``w_u = (m_u^2 - sum_v n_uv^2) / (m_u - 1)`` and the value counts ``N = c @ n_uv``;
  ``total = n^2 - sum_v N_v^2``.
* **ordinal**: the ordinal metric depends on the value frequencies of the resample, so the
  midranks ``M_v = sum_{g<v} N_g + N_v / 2`` are recomputed per replicate (B x V) and
  ``W = sum_u c_u / (m_u - 1) * 2 (m_u sum_v n_uv M_v^2 - (sum_v n_uv M_v)^2)``.
* **ratio** is not supported (its metric has no per-unit decomposition; D543).

The interval is the percentile interval of the replicates; replicates whose resample has no
expected disagreement (every value equal) are undefined, counted in ``n_undefined`` and left
out. ``p_below[a]`` is the share of replicates below each ``alpha_min`` (Krippendorff's
``q``: the probability of failing to reach a required reliability). With c_u = 1 for every unit
the formulas give :func:`krippendorff_alpha` exactly (tested).

This is the unit-resampling bootstrap; Hayes & Krippendorff's KALPHA macro instead resamples
pairs of values from the coincidence matrix and can give somewhat different intervals.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import DDPDataError, DDPUsageError
from . import budget as _budget
from ._table import json_safe, signature
from .agreement import LEVELS, ReliabilityData, krippendorff_alpha, rating_array, tiny_scale

#: replicate rows per block (a block holds about BLOCK_CELLS floats per work array)
BLOCK_CELLS = 4_000_000
#: the ordinal/nominal bootstraps keep (B x V) arrays: refuse more distinct values than this
MAX_DISTINCT = 5_000


@dataclasses.dataclass(frozen=True)
class AlphaBootstrapResult:
    """Alpha with its unit-bootstrap percentile interval."""

    alpha: float
    level: str
    ci_low: float
    ci_high: float
    confidence_level: float
    n_boot: int
    n_undefined: int  # replicates with no expected disagreement (left out)
    se: float  # standard deviation of the defined replicates
    p_below: dict[str, float]  # alpha_min -> share of defined replicates below it
    n_pairable_units: int
    seed: int
    replicates: np.ndarray = dataclasses.field(repr=False, default_factory=lambda: np.empty(0))
    signature: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: the point estimate's warnings (:attr:`AlphaResult.warnings`)
    warnings: tuple[str, ...] = ()

    def to_dict(self, include_replicates: bool = False) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "replicates"}
        if include_replicates:
            d["replicates"] = self.replicates
        return json_safe(d)


def _unit_stats(xp: np.ndarray, mp: np.ndarray, level: str) -> dict[str, Any]:
    """Per-unit sufficient statistics of the pairable units (shapes (U,) or (U, V))."""
    m = mp.sum(axis=0).astype(np.float64)
    if level == "interval":
        # shift-invariant: centre on the median rating, or the one-pass totals below cancel catastrophically
        # for ratings far from 0 (1e8 + small differences: replicates undefined or wrong)
        xp = xp - float(np.median(xp[mp]))
        v = np.where(mp, xp, 0.0)
        s1 = v.sum(axis=0)
        s2 = np.einsum("ij,ij->j", v, v)
        mean = s1 / m
        dev = np.where(mp, xp - mean, 0.0)
        ss = np.einsum("ij,ij->j", dev, dev)
        return {"m": m, "s1": s1, "s2": s2, "w": 2.0 * m * ss / (m - 1.0)}
    values = xp[mp]
    distinct, inverse = np.unique(values, return_inverse=True)
    if distinct.size > MAX_DISTINCT:
        raise DDPUsageError(
            f"the {level} bootstrap keeps one column per distinct value; {distinct.size} distinct values exceed "
            f"{MAX_DISTINCT} (round the scores or use level='interval')", code="D543")
    unit_idx = np.broadcast_to(np.arange(xp.shape[1]), xp.shape)[mp]
    counts = np.zeros((xp.shape[1], distinct.size))
    np.add.at(counts, (unit_idx, inverse.reshape(-1)), 1.0)
    out: dict[str, Any] = {"m": m, "n_uv": counts}
    if level == "nominal":
        out["w"] = (m * m - np.einsum("uv,uv->u", counts, counts)) / (m - 1.0)
    return out


def _alpha_block(c: np.ndarray, st: dict[str, Any], level: str) -> np.ndarray:
    """Alpha of each replicate of a block; ``c`` shape (B, U) unit counts. Returns shape (B,)."""
    m = st["m"]
    n = c @ m
    scale = np.maximum(n * n, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        if level == "interval":
            within = c @ st["w"]
            s1 = c @ st["s1"]
            s2 = c @ st["s2"]
            total = 2.0 * (n * s2 - s1 * s1)
            scale = n * s2  # the size of the two terms that cancel (the ratings' scale, not n^2)
        elif level == "nominal":
            within = c @ st["w"]
            nv = c @ st["n_uv"]  # (B, V)
            total = n * n - np.einsum("bv,bv->b", nv, nv)
        else:  # ordinal
            n_uv = st["n_uv"]
            nv = c @ n_uv  # (B, V) value frequencies of the resample
            mid = np.cumsum(nv, axis=1) - nv / 2.0  # (B, V) M_v
            a = (c * (m / (m - 1.0))) @ n_uv  # (B, V): sum_u c_u m_u/(m_u-1) n_uv
            first = np.einsum("bv,bv->b", a, mid * mid)
            p = n_uv @ mid.T  # (U, B): sum_v n_uv M_v per unit and replicate
            second = np.einsum("bu,ub->b", c / (m - 1.0), p * p)
            within = 2.0 * (first - second)
            s1 = np.einsum("bv,bv->b", nv, mid)
            total = 2.0 * (n * np.einsum("bv,bv->b", nv, mid * mid) - s1 * s1)
        # relative guard: a total that is rounding noise means no expected disagreement
        alpha = np.where(total > 1e-12 * scale * (np.abs(total).max() > 0), 1.0 - (n - 1.0) * within / total, np.nan)
    return alpha


def krippendorff_alpha_bootstrap(
    reliability_data: npt.ArrayLike | ReliabilityData,
    level: str = "interval",
    n_boot: int = 1000,
    seed: int = 0,
    confidence_level: float = 0.95,
    alpha_min: Sequence[float] = (0.667, 0.8),
    max_memory: Any = None,
    max_seconds: Any = None,
) -> AlphaBootstrapResult:
    """Krippendorff's alpha with a unit-resampling bootstrap percentile interval.

    Parameters
    ----------
    reliability_data : array_like, shape (n_coders, n_units), or ReliabilityData
        As :func:`ddpcore.stats.krippendorff_alpha` (NaN = missing rating).
    level : {"interval", "nominal", "ordinal"}
    n_boot : int
        Replicates (``--n-boot``); each resamples the pairable units with replacement.
    seed : int
        Seed of numpy's ``default_rng``: same seed, same replicates.
    confidence_level : float
        Percentile interval ``[(1 - level)/2, (1 + level)/2]`` of the defined replicates.
    alpha_min : sequence of float
        Thresholds for ``p_below`` (share of replicates with alpha below each).
    max_memory, max_seconds
        Resampling budget (see ``ddpcore.stats.budget``).
    """
    point = krippendorff_alpha(reliability_data, level=level)  # type: ignore[arg-type]  # validates
    if level not in LEVELS or level == "ratio":
        raise DDPUsageError(
            f"the alpha bootstrap supports level 'interval', 'nominal' or 'ordinal', got {level!r}", code="D543"
        )
    n_boot = _budget.check_n_boot(n_boot)
    seed = _budget.check_seed(seed)
    try:
        confidence_level = float(confidence_level)
        thresholds = [float(a) for a in alpha_min]
    except (TypeError, ValueError):
        raise DDPUsageError("confidence_level and alpha_min must be numbers", code="D543") from None
    if not 0.0 < confidence_level < 1.0:
        raise DDPUsageError(f"confidence_level must be in (0, 1), got {confidence_level}", code="D543")
    x = rating_array(reliability_data)  # as krippendorff_alpha read it (masked cells, pd.NA: missing)
    present = ~np.isnan(x)
    pairable = present.sum(axis=0) >= 2
    xp, mp = x[:, pairable], present[:, pairable]
    tiny = tiny_scale(xp[mp]) if level == "interval" else 0  # as krippendorff_alpha: squares would underflow
    st = _unit_stats(np.ldexp(xp, tiny) if tiny else xp, mp, level)
    n_units = int(pairable.sum())
    width = n_units + (st["n_uv"].shape[1] * 4 if "n_uv" in st else 0)
    block = max(1, min(n_boot, BLOCK_CELLS // max(width, 1)))
    budget = _budget.resolve(max_memory, max_seconds, what=f"krippendorff_alpha_bootstrap(level={level!r})")
    budget.check_memory(n_boot, 8.0, fixed=block * width * 8.0 * 3)
    rng = np.random.default_rng(seed)
    reps = np.empty(n_boot)
    budget.start()
    done = 0
    while done < n_boot:
        b = min(block, n_boot - done)
        draws = rng.integers(0, n_units, size=(b, n_units))
        draws += (np.arange(b) * n_units)[:, None]
        c = np.bincount(draws.ravel(), minlength=b * n_units).reshape(b, n_units).astype(np.float64)
        reps[done:done + b] = _alpha_block(c, st, level)
        done += b
        if done == b:
            budget.check_time(done, n_boot)
    ok = reps[~np.isnan(reps)]
    n_undefined = int(n_boot - ok.size)
    if ok.size == 0:
        raise DDPDataError("every bootstrap replicate is undefined (no expected disagreement in any resample)",
                           code="D544")
    tail = (1.0 - confidence_level) / 2.0
    lo, hi = np.quantile(ok, [tail, 1.0 - tail])
    p_below = {f"{a:g}": float(np.mean(ok < a)) for a in thresholds}
    return AlphaBootstrapResult(
        alpha=point.alpha, level=level, ci_low=float(lo), ci_high=float(hi), confidence_level=confidence_level,
        n_boot=n_boot, n_undefined=n_undefined, se=float(ok.std(ddof=1)) if ok.size > 1 else float("nan"),
        p_below=p_below, n_pairable_units=n_units, seed=seed, replicates=reps,
        signature=signature("krippendorff_alpha_bootstrap", level=level, n_boot=n_boot, seed=seed,
                            confidence_level=confidence_level, resample="units", interval="percentile"),
        warnings=point.warnings,
    )


__all__ = ["AlphaBootstrapResult", "krippendorff_alpha_bootstrap"]
