"""Is each system better than the baseline? Paired bootstrap and approximate randomization.

:func:`compare_systems` tests every system of a long score table against one baseline, for
one or more metric columns, the way sacrebleu's ``--paired-bs`` and ``--paired-ar`` do
(sacrebleu 2.x ``significance.py``; reimplemented, checked against it in the tests), at
document level (``unit="document"``, the default: whole documents are resampled and
swapped, because segments of one document are not independent) or segment level
(``unit="segment"``, sacrebleu's setting). :func:`compare_arrays` is the same on flat arrays.

Definitions (S = the system, BL = the baseline, a system score = mean of its segment scores)
-----------------------------------------------------------------------------------------
* Observed difference ``diff = score(S) - score(BL)``.
* **Paired bootstrap** (B = ``n_boot`` replicates, one index matrix shared by every system
  and metric): replicate b draws ``n_units`` units with replacement; ``delta_b`` = mean of S
  minus mean of BL over the drawn units' segments. With ``a_b = |delta_b|``,
  ``p_bs = (#{b : a_b - mean(a) > |diff|} + 1) / (B + 1)`` (strictly greater).
* **Approximate randomization** (T = ``n_ar`` trials, one swap matrix shared by all): in
  trial t each unit independently keeps or swaps the two systems' scores (probability 1/2);
  ``stat_t = |mean(pseudo-A) - mean(pseudo-B)|``;
  ``p_ar = (#{t : stat_t > |diff|} + 1) / (T + 1)`` (strictly greater, +1 smoothing).
* One deviation from sacrebleu: when S equals BL on every unit, both p-values are 1
  (sacrebleu returns 1/(B+1) and 1/(T+1) there, calling identical systems significant).
* Confidence intervals (``confidence`` c): from the sorted bootstrap replicates, lower =
  element ``floor(B (1 - c) / 2)``, upper = element ``B - 1 - floor(B (1 - c) / 2)``
  (sacrebleu's ``estimate_ci``: ``B // 40`` for c = 0.95), for each system's mean and for
  ``delta``; ``ci`` = half their distance (sacrebleu's "±"), ``boot_mean`` = replicate mean.
* Correction over the compared systems, per metric and per test: Holm (step-down, default),
  Bonferroni, or none. The decision p-value is the larger adjusted p of the tests that ran
  (with ``test="both"`` a system must pass both); ``significant = p < alpha``; a significant
  system is ``better`` or ``worse`` by the sign of ``diff`` (reversed for ``lower_is_better``
  metrics), else ``n.s.``.

Generators (seeded; any tool can regenerate them)
-----------------------------------------------
* Bootstrap indices: the same as :func:`ddpcore.stats.bootstrap.resample_indices`:
  ``PCG64(seed).random_raw(n_boot * n_units)`` row-major, unit = ``floor(raw * n_units / 2**64)``.
* AR swap masks: ``raw = PCG64(seed).jumped().random_raw(n_ar * W).reshape(n_ar, W)`` with
  ``W = ceil(n_units / 64)``; unit u of trial t keeps its side when bit ``u % 64`` of
  ``raw[t, u // 64]`` is 1 (sacrebleu's ``pos_sel``), else it is swapped.
  :func:`ar_swap_matrix` returns the boolean (n_ar, n_units) matrix.
* ``indices=`` (n_boot, n_units) and ``ar_keep=`` (n_ar, n_units, bool) replace them, e.g. to
  reproduce sacrebleu's own draws exactly.

Units are numbered in sorted key order (documents; ``(document, segment)`` for segments), as in
:mod:`ddpcore.stats.bootstrap`. Error codes D390-D399 (see :data:`ERROR_CODES`).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from .. import schema
from .._native import load
from ..errors import DDPDataError, DDPUsageError
from . import budget as _budget
from .columns import TableColumns, check_columns, key_missing
from .options import ResampleOptions, check_instance, check_options

if TYPE_CHECKING:
    import polars as pl

Unit = Literal["document", "segment"]
Test = Literal["bootstrap", "ar", "both"]
Correction = Literal["holm", "bonferroni", "none"]

TESTS = ("bootstrap", "ar", "both")
CORRECTIONS = ("holm", "bonferroni", "none")
UNITS = ("document", "segment")

#: bootstrap resamples when ``options.n_boot`` is None
DEFAULT_N_BOOT = 1000
FAIL_ON = ("worse", "not-better")

#: error codes raised here
ERROR_CODES = {
    "D390": "bad option (usage, exit 2): confidence/alpha outside (0, 1), n_boot/n_ar < 1, unknown test/unit/"
            "correction, empty baseline name, no metric",
    "D391": "a column is missing (names the flag that selects it)",
    "D392": "the baseline is not in the table, or no system is left to compare with it",
    "D393": "unpaired: a system lacks a (document, segment) the baseline has, or has one the baseline lacks",
    "D394": "missing (null/NaN) or infinite score (names system, document, segment and metric column)",
    "D395": "non-numeric metric column",
    "D396": "duplicate (document, segment, system) row",
    "D397": "bad indices / ar_keep matrix (shape, range, dtype)",
    "D398": "empty table",
    "D399": "null document/segment/system value",
    "D720": "a mean, difference or CI is beyond the float64 range (|value| > 1.8e308): rescale the metric",
    "D721": "a metric column spans more magnitudes than float64 can sum (max |score| above 2**500 and non-zero "
            "scores that would lose their digits): rescale or split the metric",
}

#: generator descriptions recorded in signatures
BS_RNG = "numpy PCG64(seed).random_raw, row-major; unit = floor(raw * n_units / 2**64)"
AR_RNG = "numpy PCG64(seed).jumped().random_raw(n_ar * ceil(n_units/64)); keep unit u of trial t = bit u%64 of word u//64"


# --------------------------------------------------------------------------- results


@dataclasses.dataclass(frozen=True)
class MetricComparison:
    """Every system against the baseline under one metric (arrays in ``systems`` order,
    baseline first)."""

    metric: str
    lower_is_better: bool
    systems: list[str]
    score: np.ndarray  # full-sample mean of each system
    boot_mean: np.ndarray  # mean of the bootstrap replicates
    ci_low: np.ndarray
    ci_high: np.ndarray
    diff: np.ndarray  # score - baseline score
    diff_ci_low: np.ndarray
    diff_ci_high: np.ndarray
    p_bootstrap: np.ndarray | None  # raw (NaN for the baseline)
    p_bootstrap_adj: np.ndarray | None
    p_ar: np.ndarray | None
    p_ar_adj: np.ndarray | None
    p_value: np.ndarray  # decision p: max of the adjusted p-values of the tests that ran
    significant: np.ndarray
    verdict: list[str]  # "baseline" | "better" | "worse" | "n.s."

    def rows(self) -> list[dict[str, Any]]:
        """One dict per system (baseline first), JSON-safe."""
        out = []
        for i, s in enumerate(self.systems):
            ci = 0.5 * (self.ci_high[i] - self.ci_low[i])
            row: dict[str, Any] = {
                "metric": self.metric,
                "system": s,
                "is_baseline": i == 0,
                "score": _num(self.score[i]),
                "boot_mean": _num(self.boot_mean[i]),
                "ci": _num(ci),
                "ci_low": _num(self.ci_low[i]),
                "ci_high": _num(self.ci_high[i]),
                "diff": _num(self.diff[i]),
                "diff_ci_low": _num(self.diff_ci_low[i]),
                "diff_ci_high": _num(self.diff_ci_high[i]),
            }
            if self.p_bootstrap is not None:
                row["p_bootstrap"] = _num(self.p_bootstrap[i])
                row["p_bootstrap_adj"] = _num(self.p_bootstrap_adj[i])  # type: ignore[index]
            if self.p_ar is not None:
                row["p_ar"] = _num(self.p_ar[i])
                row["p_ar_adj"] = _num(self.p_ar_adj[i])  # type: ignore[index]
            row["p_value"] = _num(self.p_value[i])
            row["significant"] = bool(self.significant[i])
            row["verdict"] = self.verdict[i]
            out.append(row)
        return out


@dataclasses.dataclass(frozen=True)
class CompareResult:
    """Result of :func:`compare_systems`: one :class:`MetricComparison` per metric."""

    baseline: str
    metrics: list[str]
    comparisons: dict[str, MetricComparison]
    unit: str
    n_units: int
    n_segments: int
    test: str
    n_boot: int
    n_ar: int
    seed: int | None
    correction: str
    confidence: float
    alpha: float
    signature: dict[str, Any]
    signature_line: str
    #: what the caller must be told: too few replicates / trials for the level (the CLI prints them)
    warnings: tuple[str, ...] = ()

    def rows(self) -> list[dict[str, Any]]:
        return [r for m in self.metrics for r in self.comparisons[m].rows()]

    def gate(self, fail_on: str) -> tuple[bool, list[dict[str, Any]]]:
        """``(passed, offending rows)`` for ``fail_on`` = ``"worse"`` (a system significantly
        worse than the baseline fails) or ``"not-better"`` (a system not significantly better fails)."""
        if fail_on not in FAIL_ON:
            raise DDPUsageError(f"fail_on must be one of {', '.join(FAIL_ON)}, got {fail_on!r} (--fail-on)", code="D390")
        bad = [r for r in self.rows() if not r["is_baseline"]
               and (r["verdict"] == "worse" if fail_on == "worse" else r["verdict"] != "better")]
        return (not bad), bad

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "metrics": list(self.metrics),
            "unit": self.unit,
            "n_units": self.n_units,
            "n_segments": self.n_segments,
            "test": self.test,
            "n_boot": self.n_boot,
            "n_ar": self.n_ar if self.test != "bootstrap" else None,
            "seed": self.seed,
            "correction": self.correction,
            "confidence": self.confidence,
            "alpha": self.alpha,
            "results": {m: {"lower_is_better": self.comparisons[m].lower_is_better,
                            "systems": self.comparisons[m].rows()} for m in self.metrics},
            "warnings": list(self.warnings),
            "signature": dict(self.signature),
            "signature_line": self.signature_line,
        }


def _num(x: Any) -> Any:
    x = float(x)
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


# --------------------------------------------------------------------------- generators


def _pcg64_halves(bitgen: np.random.PCG64) -> tuple[int, int, int, int]:
    st = bitgen.state["state"]
    mask = (1 << 64) - 1
    return st["state"] >> 64, st["state"] & mask, st["inc"] >> 64, st["inc"] & mask


def _ar_bitgen(seed: int) -> np.random.PCG64:
    """The AR generator of ``seed``; ``seed`` must be an integer in [0, 2**128) (D390), the range every
    resampling statistic accepts (``ddpcore.stats.budget.check_seed``): numpy would take a larger one and
    hash it, so two runs recorded with different seeds could share a stream."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and not 0 <= int(seed) < 2**128:
        raise DDPUsageError(f"seed must be an integer in [0, 2**128), got {int(seed)} (--seed)", code="D390")
    try:
        return np.random.PCG64(seed).jumped()
    except (TypeError, ValueError) as exc:
        raise DDPUsageError(f"seed must be a non-negative integer, got {seed!r} ({exc}) (--seed)", code="D390") from None


def ar_swap_matrix(n_ar: int, n_units: int, seed: int) -> npt.NDArray[np.bool_]:
    """The (n_ar, n_units) keep/swap matrix of the seeded AR test (True = unit keeps its side).

    For export to another tool; the kernel generates the same bits itself.
    """
    _check_count(n_ar, "n_ar", "--n-ar")
    words = (int(n_units) + 63) // 64
    raw = _ar_bitgen(seed).random_raw(int(n_ar) * words).reshape(int(n_ar), words)
    return _unpack_keep(raw, int(n_units))


def _unpack_keep(raw: np.ndarray, n_units: int) -> np.ndarray:
    u = np.arange(n_units)
    return ((raw[:, u // 64] >> (u % 64).astype(np.uint64)) & np.uint64(1)).astype(bool)


def _pack_keep(keep: np.ndarray) -> np.ndarray:
    """bool (T, U) -> uint64 (T, ceil(U/64)), bit u%64 of word u//64 = keep[t, u]."""
    t, u = keep.shape
    words = (u + 63) // 64
    padded = np.zeros((t, words * 64), dtype=bool)
    padded[:, :u] = keep
    by = np.packbits(padded, axis=1, bitorder="little")  # (T, words*8) bytes, little-endian bit order
    return np.ascontiguousarray(by.view("<u8").astype(np.uint64))


# --------------------------------------------------------------------------- validation helpers


def _check_count(n: Any, name: str, flag: str) -> int:
    try:
        v = int(n)
    except (TypeError, ValueError):
        raise DDPUsageError(f"{name} must be a positive integer, got {n!r} ({flag})", code="D390") from None
    if v != n or v < 1:
        raise DDPUsageError(f"{name} must be a positive integer, got {n!r} ({flag})", code="D390")
    return v


def _check_options(test: str, correction: str, confidence: float, alpha: float, unit: str) -> None:
    if test not in TESTS:
        raise DDPUsageError(f"test must be one of {', '.join(TESTS)}, got {test!r} (--test)", code="D390")
    if correction not in CORRECTIONS:
        raise DDPUsageError(f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r} (--correction)",
                            code="D390")
    if unit not in UNITS:
        raise DDPUsageError(f"unit must be 'document' or 'segment', got {unit!r} (--unit)", code="D390")
    for name, v, flag in (("confidence", confidence, "--confidence"), ("alpha", alpha, "--alpha")):
        try:
            ok = 0.0 < float(v) < 1.0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise DDPUsageError(f"{name} must lie strictly between 0 and 1, got {v!r} ({flag})", code="D390")


def _check_indices(indices: Any, n_units: int) -> np.ndarray:
    arr = np.asarray(indices)
    if arr.ndim != 2 or arr.shape[1] != n_units or arr.shape[0] < 1:
        raise DDPDataError(f"indices must have shape (n_boot, n_units) = (n_boot, {n_units}), got {arr.shape}; "
                           "entry [r, k] is the unit of draw k of replicate r (units in sorted key order)", code="D397")
    if not np.issubdtype(arr.dtype, np.integer):
        if not (np.issubdtype(arr.dtype, np.floating) and np.isfinite(arr).all() and (arr == np.round(arr)).all()):
            raise DDPDataError(f"indices must be whole numbers, got dtype {arr.dtype}", code="D397")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if arr.min() < 0 or arr.max() >= n_units:
        bad = int(arr.min()) if arr.min() < 0 else int(arr.max())
        raise DDPDataError(f"indices must lie in [0, {n_units}), found {bad}", code="D397")
    return arr


def _check_keep(keep: Any, n_units: int) -> np.ndarray:
    arr = np.asarray(keep)
    if arr.ndim != 2 or arr.shape[1] != n_units or arr.shape[0] < 1:
        raise DDPDataError(f"ar_keep must have shape (n_ar, n_units) = (n_ar, {n_units}), got {arr.shape}; "
                           "True = the unit keeps its side in that trial", code="D397")
    if arr.dtype != np.bool_:
        if not (np.issubdtype(arr.dtype, np.integer) and np.isin(arr, (0, 1)).all()):
            raise DDPDataError(f"ar_keep must be boolean (or 0/1), got dtype {arr.dtype}", code="D397")
        arr = arr.astype(bool)
    return arr


# --------------------------------------------------------------------------- statistics on arrays


def _order_stat_ci(reps: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, lower, upper) of replicates along the last axis, sacrebleu's order-statistic rule."""
    b = reps.shape[-1]
    k = int(math.floor(b * (1.0 - confidence) / 2.0 + 1e-9))
    srt = np.sort(reps, axis=-1)
    return srt.mean(axis=-1), srt[..., k], srt[..., b - 1 - k]


def adjust_pvalues(p: npt.ArrayLike, method: str = "holm") -> np.ndarray:
    """Family-wise adjusted p-values along the last axis (NaN entries are left out and stay NaN).

    Holm: sorted ascending, ``adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))`` (1-based j);
    Bonferroni: ``min(1, m p)``; none: unchanged. ``m`` = number of non-NaN entries.
    """
    if method not in CORRECTIONS:
        raise DDPUsageError(f"correction must be one of {', '.join(CORRECTIONS)}, got {method!r}", code="D390")
    arr = np.array(p, dtype=np.float64, ndmin=1)
    out = np.full_like(arr, np.nan)
    flat_in = arr.reshape(-1, arr.shape[-1])
    flat_out = out.reshape(-1, arr.shape[-1])
    for r in range(flat_in.shape[0]):  # one row per metric: a handful
        row = flat_in[r]
        ok = np.flatnonzero(~np.isnan(row))
        m = ok.size
        if m == 0:
            continue
        v = row[ok]
        if method == "none":
            adj = v
        elif method == "bonferroni":
            adj = np.minimum(1.0, m * v)
        else:
            order = np.argsort(v, kind="stable")
            scaled = np.minimum(1.0, (m - np.arange(m)) * v[order])
            adj = np.empty(m)
            adj[order] = np.maximum.accumulate(scaled)
        flat_out[r, ok] = adj
    return out


@dataclasses.dataclass(frozen=True)
class ComparisonArrays:
    """The figures of every system against the baseline, one array each: the score with its bootstrap
    mean and CI, the paired difference with its CI, and the paired-bootstrap and
    approximate-randomization p-values (None when not run). Shape (n_metrics, n_systems) in
    :class:`ArrayComparison`, (n_systems,) in :class:`ddpcore.stats.corpus.CorpusComparison`."""

    score: np.ndarray
    boot_mean: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    diff: np.ndarray
    diff_ci_low: np.ndarray
    diff_ci_high: np.ndarray
    p_bootstrap: np.ndarray | None
    p_ar: np.ndarray | None


@dataclasses.dataclass(frozen=True)
class ArrayComparison(ComparisonArrays):
    """Raw output of :func:`compare_arrays` (arrays of shape (n_metrics, n_systems))."""

    identical: np.ndarray  # system equals the baseline on every unit
    n_boot: int
    n_ar: int


def compare_arrays(
    sums: npt.ArrayLike,
    counts: npt.ArrayLike,
    *,
    baseline: int = 0,
    test: Test = "both",
    n_ar: int = 10_000,
    confidence: float = 0.95,
    ar_keep: npt.ArrayLike | None = None,
    scale_exp: npt.ArrayLike | None = None,
    options: ResampleOptions | None = None,
) -> ArrayComparison:
    """Paired bootstrap and AR of every system against system ``baseline`` on flat arrays.

    Parameters
    ----------
    sums : array, shape (n_units, n_metrics, n_systems) or (n_units, n_systems)
        Per unit, the sum of each system's segment scores under each metric.
    counts : array, shape (n_units,)
        Segments per unit (the same for every system: the design is paired).
    baseline
        Column of the baseline system.
    ar_keep
        Explicit AR keep masks (n_ar, n_units); with ``options.indices`` (bootstrap draws,
        (n_boot, n_units)) they replace the seeded generators (and fix ``n_ar`` / ``n_boot`` to
        their row counts).
    test, n_ar, confidence
        Which p-values (bootstrap CIs are always computed), AR trials, CI level in (0, 1).
    options
        :class:`~ddpcore.stats.ResampleOptions`: ``n_boot`` (default 1,000), ``seed`` (of both
        generators), ``threads`` and the budget (:mod:`ddpcore.stats.budget`): the bootstrap
        keeps every replicate (about ``8 * (n_cols + 6 * n_metrics * n_systems)`` bytes each),
        checked before allocating (D362); a short pilot of each generator is timed and a run
        whose extrapolated time is over ``max_seconds`` stops with D363 before the long part.
        ``nan_policy`` does not apply (a non-finite entry is D394).
    scale_exp
        Per metric, the sums are given in units of ``2**scale_exp`` (default 0); means, CIs and
        differences are returned in the original units. Sums above 2**500 in magnitude are
        scaled down by a power of two here too (exact; p-values do not depend on the scale), so
        inputs near 1e308 cannot overflow; a result beyond the float64 range is D720.

    Returns
    -------
    ArrayComparison
        p-values are raw (uncorrected); the baseline's own entries are NaN.
    """
    opts = check_options(options, func="compare_arrays")
    vals, cnt, exp = _check_arrays(sums, counts, baseline, test, confidence, scale_exp)
    n_units, n_met, n_sys = vals.shape
    if n_units < 2:
        raise DDPDataError("the paired bootstrap and AR are undefined (NaN) for a single resampling unit: every "
                           "replicate redraws it and every swap mirrors it, so the CIs would collapse to the point "
                           "estimates and the p-values to their floor 1/(B+1); give at least 2 units", code="D364")
    bl = int(baseline)
    n_total = float(cnt.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        score = vals.sum(axis=0) / n_total  # (M, S)
    budget = opts.budget(f"compare (test={test!r}, {n_units:,} units)")
    means_t = _bootstrap_means(vals, cnt, opts, budget)  # (M, S, B)
    b = means_t.shape[2]
    boot_mean, ci_low, ci_high = _order_stat_ci(means_t, confidence)
    delta = means_t - means_t[:, bl : bl + 1, :]  # (M, S, B) system - baseline
    _, dlo, dhi = _order_stat_ci(delta, confidence)
    diff = score - score[:, bl : bl + 1]
    d_units = vals[:, :, bl : bl + 1] - vals  # (U, M, S) baseline - system per unit
    identical = ~(d_units != 0).any(axis=0)  # (M, S)
    p_bs = p_ar = None
    if test in ("bootstrap", "both"):
        a = np.abs(delta)
        stats = a - a.mean(axis=-1, keepdims=True)
        obs = np.abs(score[:, bl : bl + 1] - score)  # sacrebleu: abs(bl.score - sys.score)
        c = (stats > obs[..., None]).sum(axis=-1)
        p_bs = (c + 1.0) / (b + 1.0)
        p_bs[identical] = 1.0
        p_bs[:, bl] = np.nan
    t = 0
    if test in ("ar", "both"):
        p_ar, t = _ar_pvalues(d_units, bl, n_ar, ar_keep, opts, budget)
        p_ar[identical] = 1.0
        p_ar[:, bl] = np.nan
    if exp.any():
        score, boot_mean, ci_low, ci_high, diff, dlo, dhi = _scale_up(
            exp, score=score, boot_mean=boot_mean, ci_low=ci_low, ci_high=ci_high, diff=diff, diff_ci_low=dlo,
            diff_ci_high=dhi)
    return ArrayComparison(score=score, boot_mean=boot_mean, ci_low=ci_low, ci_high=ci_high, diff=diff,
                           diff_ci_low=dlo, diff_ci_high=dhi, p_bootstrap=p_bs, p_ar=p_ar, identical=identical,
                           n_boot=b, n_ar=t)


def _check_arrays(sums: npt.ArrayLike, counts: npt.ArrayLike, baseline: int, test: str, confidence: float,
                  scale_exp: npt.ArrayLike | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`compare_arrays`' inputs checked: sums (U, M, S) scaled below 2**500, counts (U,), and the
    per-metric exponents (M,) of the scale (given + applied here)."""
    vals = np.asarray(sums, dtype=np.float64)
    if vals.ndim == 2:
        vals = vals[:, None, :]
    if vals.ndim != 3:
        raise DDPDataError(f"sums must have shape (n_units, n_metrics, n_systems), got {np.shape(sums)}", code="D397")
    n_units, n_met, n_sys = vals.shape
    cnt = np.asarray(counts, dtype=np.float64).reshape(-1)
    if cnt.shape[0] != n_units:
        raise DDPDataError(f"counts has {cnt.shape[0]} entries for {n_units} units", code="D397")
    if n_units < 1 or n_sys < 1 or n_met < 1:
        raise DDPDataError("nothing to compare: no units, systems or metrics", code="D398")
    if not 0 <= int(baseline) < n_sys:
        raise DDPUsageError(f"baseline column {baseline} out of range for {n_sys} systems", code="D390")
    _check_options(test, "none", confidence, 0.5, "document")
    if not (np.isfinite(vals).all() and np.isfinite(cnt).all()):
        raise DDPDataError("sums and counts must be finite numbers (a NaN or infinite entry)", code="D394")
    exp = np.zeros(n_met, dtype=np.int64) if scale_exp is None else np.asarray(scale_exp, dtype=np.int64).reshape(-1)
    if exp.shape[0] != n_met:
        raise DDPDataError(f"scale_exp has {exp.shape[0]} entries for {n_met} metrics", code="D397")
    vals, extra = _scale_down(vals, axis=(0, 2), what="sums")
    return vals, cnt, exp + extra


def _bootstrap_means(vals: np.ndarray, cnt: np.ndarray, opts: ResampleOptions, budget: _budget.Budget) -> np.ndarray:
    """(M, S, B) bootstrap replicates of every system mean: one index matrix (or the seeded stream)
    for every system and metric, timed on a pilot before the long run."""
    n_units, n_met, n_sys = vals.shape
    flat = np.empty((n_units, n_met * n_sys + 1), dtype=np.float64)
    flat[:, :-1] = vals.reshape(n_units, n_met * n_sys)
    flat[:, -1] = cnt
    kern = load("stats_compare")
    nt = opts.kernel_threads
    n_cols_pad = ((flat.shape[1] + 7) // 8) * 8
    if opts.indices is not None:
        idx = _check_indices(opts.indices, n_units)
        budget.check_memory(idx.shape[0], 8.0 * (n_cols_pad + 6 * n_met * n_sys), fixed=3 * flat.nbytes)
        reps = _bootstrap_sums(kern, flat, idx.shape[0], None, idx, nt)
    else:
        n_boot = _check_count(opts.n_boot_or(DEFAULT_N_BOOT), "n_boot", "--n-boot")
        seed = opts.seed
        _ar_bitgen(seed)  # validates the seed
        budget.check_memory(n_boot, 8.0 * (n_cols_pad + 6 * n_met * n_sys), fixed=3 * flat.nbytes)
        halves = _pcg64_halves(np.random.PCG64(seed))
        # pilot: the first replicates of the same stream (row-major), timed before the long run
        pilot = _pilot_size(n_boot, n_units * n_cols_pad)
        if pilot < n_boot:
            budget.start()
            _bootstrap_sums(kern, flat, pilot, halves, None, nt)
            budget.check_time(pilot, n_boot)
        reps = _bootstrap_sums(kern, flat, n_boot, halves, None, nt)
    b = reps.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        means = reps[:, :-1] / reps[:, -1:]  # (B, M*S)
    return np.ascontiguousarray(means.T).reshape(n_met, n_sys, b)  # (M, S, B): rows contiguous


def _ar_pvalues(d_units: np.ndarray, bl: int, n_ar: int, ar_keep: npt.ArrayLike | None, opts: ResampleOptions,
                budget: _budget.Budget) -> tuple[np.ndarray, int]:
    """(M, S) raw AR p-values (NaN for the baseline column) from the (U, M, S) per-unit differences
    baseline - system, and the number of trials."""
    n_units, n_met, n_sys = d_units.shape
    kern = load("stats_compare")
    others = [s for s in range(n_sys) if s != bl]
    d = np.ascontiguousarray(d_units[:, :, others].reshape(n_units, n_met * len(others)))
    nt = opts.kernel_threads
    if ar_keep is not None:
        keep = _check_keep(ar_keep, n_units)
        t = keep.shape[0]
        bits, halves = _pack_keep(keep), (0, 0, 0, 0)
    else:
        t = _check_count(n_ar, "n_ar", "--n-ar")
        bits, halves = None, _pcg64_halves(_ar_bitgen(opts.seed))
        pilot = _pilot_size(t, n_units * max(1, d.shape[1]))
        if pilot < t:
            ar_budget = dataclasses.replace(budget, flag="--n-ar", count="n_ar")
            ar_budget.start()
            _ar_counts(kern, d, pilot, None, halves, nt)
            ar_budget.check_time(pilot, t)
    counts_ar = _ar_counts(kern, d, t, bits, halves, nt)
    p_ar = np.full((n_met, n_sys), np.nan)
    p_ar[:, others] = ((counts_ar + 1.0) / (t + 1.0)).reshape(n_met, len(others))
    return p_ar, t


#: above this magnitude sums of scores (and differences of sums) can overflow float64
_SCALE_ABOVE = 2.0 ** 500


def _scale_down(v: np.ndarray, axis: tuple[int, ...] | None, what: str) -> tuple[np.ndarray, np.ndarray]:
    """``v`` with each metric (the axis not in ``axis``) multiplied by ``2**-e`` where its max |v|
    is above 2**500 (e = that max's binary exponent, so the max drops below 1), and the ``e``
    per metric (0 = unchanged). Exact (only exponents change) unless a value falls into the
    subnormal range; one that would lose more than 2**-30 of its value there is D721."""
    mx = np.abs(v).max(axis=axis) if v.size else np.zeros(v.shape[1] if v.ndim > 1 else 1)
    mx = np.atleast_1d(mx)
    big = mx > _SCALE_ABOVE
    e = np.zeros(mx.shape[0], dtype=np.int64)
    if not big.any():
        return v, e
    e[big] = np.frexp(mx[big])[1]
    shape = (1, -1, 1) if v.ndim == 3 else (-1,)
    scaled = np.ldexp(v, -e.reshape(shape))
    with np.errstate(over="ignore", invalid="ignore"):
        lost = np.abs(np.ldexp(scaled, e.reshape(shape)) - v) > 2.0 ** -30 * np.abs(v)
    if lost.any():
        small = float(np.abs(v[lost]).min())
        raise DDPDataError(f"{what}: a metric holds scores near {float(mx[big].max()):.3g} and non-zero scores as "
                           f"small as {small:.3g}; float64 cannot hold both in one sum (the small ones would lose "
                           "their digits); rescale or split the metric column", code="D721")
    return scaled, e


def _scale_up(exp: np.ndarray, **arrays: np.ndarray) -> list[np.ndarray]:
    """Each (M, S) array times ``2**exp`` per metric row; D720 when a value leaves the float64 range."""
    out = []
    for name, a in arrays.items():
        with np.errstate(over="ignore"):
            u = np.ldexp(a, exp.reshape(-1, *([1] * (a.ndim - 1))))
        if (np.isinf(u) & np.isfinite(a)).any():
            raise DDPDataError(f"the {name.replace('_', ' ')} of a system is beyond the float64 range (|value| > "
                               "1.8e308); rescale the metric column (e.g. divide it by 1e10) and compare again",
                               code="D720")
        out.append(u)
    return out


def _pilot_size(n: int, cost_per_replicate: int) -> int:
    """Replicates of a timing pilot: about 1.7e7 elementary operations, at least 64, at most n."""
    return int(min(n, max(64, (1 << 24) // max(1, cost_per_replicate))))


def _chunk8(values: np.ndarray) -> np.ndarray:
    """(n_units, n_cols) -> (ceil(n_cols / 8), n_units, 8), zero-padded: the kernels' column chunks."""
    n_units, n_cols = values.shape
    n_chunks = (n_cols + 7) // 8
    padded = np.zeros((n_units, n_chunks * 8), dtype=np.float64)
    padded[:, :n_cols] = values
    return np.ascontiguousarray(padded.reshape(n_units, n_chunks, 8).transpose(1, 0, 2))


def _bootstrap_sums(kern: Any, flat: np.ndarray, n_boot: int, halves: tuple[int, int, int, int] | None,
                    idx: np.ndarray | None, threads: int) -> np.ndarray:
    """(n_boot, n_cols) column sums of ``flat`` (n_units, n_cols) over the bootstrap replicates.

    Replicate r's sums are ``sum_u m[r, u] * flat[u]`` with ``m[r, u]`` the multiplicity of unit u
    among its draws (PCG64 stream generated in-kernel, or ``idx``): one native pass re-scores every
    system and metric, replicates in parallel, each sum over the units in order (deterministic).
    """
    n_units, n_cols = flat.shape
    chunked = _chunk8(flat)
    out = np.empty((n_boot, chunked.shape[0] * 8), dtype=np.float64)
    if idx is None:
        kern.bootstrap_sums_chunked(*halves, chunked, out, None, threads)  # type: ignore[misc]
    else:
        kern.bootstrap_sums_chunked(0, 0, 0, 0, chunked, out, np.ascontiguousarray(idx, dtype=np.int64), threads)
    return out[:, :n_cols]


def _ar_counts(kern: Any, d: np.ndarray, n_trials: int, bits: np.ndarray | None,
               halves: tuple[int, int, int, int], threads: int) -> np.ndarray:
    """AR exceedance counts per column of ``d`` (n_units x n_cols), nibble-table kernel on 8-column
    chunks; the observed |sum| is computed by the kernel's own association (see the .pyx)."""
    n_units, n_cols = d.shape
    if n_cols == 0:
        return np.zeros(0, dtype=np.int64)
    chunked = _chunk8(d)
    n_chunks = chunked.shape[0]
    obs8 = np.empty(n_chunks * 8)
    kern.observed_abs_chunked(chunked, obs8)
    out8 = np.zeros(n_chunks * 8, dtype=np.int64)
    kern.ar_exceed_chunked(*halves, n_trials, chunked, obs8, out8, bits, threads)
    return out8[:n_cols].copy()


# --------------------------------------------------------------------------- table loading


@dataclasses.dataclass(frozen=True)
class _Prepared:
    sums: np.ndarray  # (U, M, S)
    counts: np.ndarray  # (U,)
    systems: list[str]  # baseline first
    unit_keys: Any
    n_segments: int
    scale_exp: np.ndarray  # (M,): sums are in units of 2**scale_exp (0 = unscaled)


def _csv(values: str | Sequence[str] | None) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for v in values:
        out.extend(t.strip() for t in str(v).split(",") if t.strip())
    return list(dict.fromkeys(out))


def _prepare(
    table: Any, baseline: str, metrics: list[str], unit: str, document: str, segment: str | None, system: str,
    exclude_systems: Sequence[str],
) -> _Prepared:
    """The table as per-unit sums (U, M, S) of each metric and system (baseline first), segment
    counts (U,) and unit keys; every check of the long score table (D391-D399)."""
    import polars as pl

    from ._table import factorize, group_sums, table_source

    source = table_source(table)
    df, segment, systems_present = _compare_frame(table, source, baseline, metrics, unit, document, segment, system,
                                                  exclude_systems)

    def where(i: int) -> str:
        r = df.row(i, named=True)
        seg = f", segment {r[segment]!r}" if segment is not None else ""
        return f"system '{r[system]}', document {r[document]!r}{seg}"

    vals, exps = _metric_values(df, metrics, source, where)
    keys = [document] + ([segment] if segment is not None else [])
    item_code, item_keys = factorize(df, keys)
    n_items = item_keys.height
    order = sorted(systems_present)
    order.remove(str(baseline))
    systems = [str(baseline)] + order
    code_of = {s: i for i, s in enumerate(systems)}
    sys_code, sys_keys = factorize(df.select(pl.col(system)), [system])
    remap = np.array([code_of[s] for s in sys_keys[system].to_list()], dtype=np.int64)
    sys_code = remap[sys_code]
    n_sys = len(systems)
    cell = item_code * n_sys + sys_code
    _check_paired(cell, n_items, systems, item_keys, source, baseline, document, segment, where)
    if unit == "document" and segment is not None:
        unit_of_item, unit_keys = factorize(item_keys, [document])
    else:
        unit_of_item, unit_keys = np.arange(n_items, dtype=np.int64), item_keys
    n_units = unit_keys.height
    unit_code = unit_of_item[item_code]
    ucell = unit_code * n_sys + sys_code
    sums = np.empty((n_units, len(metrics), n_sys), dtype=np.float64)
    for j, v in enumerate(vals):
        sums[:, j, :] = group_sums(ucell, v, n_units * n_sys).reshape(n_units, n_sys)  # row-order independent
    counts = np.bincount(unit_of_item, minlength=n_units).astype(np.float64)
    return _Prepared(sums=sums, counts=counts, systems=systems, unit_keys=unit_keys, n_segments=n_items,
                     scale_exp=exps)


def _compare_frame(table: Any, source: str, baseline: str, metrics: list[str], unit: str, document: str,
                   segment: str | None, system: str, exclude_systems: Sequence[str]) -> tuple[Any, str | None, set[str]]:
    """The score table with its columns checked (D391), no null keys (D399), the excluded systems
    left out and the baseline present with another system (D392); the segment column actually
    used (``None``: document-level rows) and the systems present."""
    import polars as pl

    from ..io.tables import check_distinct_columns
    from ._frames import as_frame

    check_distinct_columns([("--document-col", document), ("--segment-col", segment), ("--system-col", system),
                            *(("--score-col", m) for m in metrics)])
    df = as_frame(table, key_columns=(document, segment, system))  # CSV ids 1.5 and 1.50: two documents
    cols = set(df.columns)
    flags = {document: "--document-col", system: "--system-col"}
    for name, flag in flags.items():
        if name not in cols:
            raise DDPDataError(f"{source}: column '{name}' is missing (select it with {flag} NAME); available: "
                               f"{', '.join(df.columns)}", code="D391")
    if segment is not None and segment not in cols:
        if segment == schema.SEGMENT_ID:
            segment = None  # document-level scores: one row per (document, system)
        else:
            raise DDPDataError(f"{source}: column '{segment}' is missing (select it with --segment-col NAME); "
                               f"available: {', '.join(df.columns)}", code="D391")
    if unit == "segment" and segment is None:
        raise DDPDataError(f"{source}: --unit segment needs a segment column (--segment-col NAME); the table has none",
                           code="D391")
    for m in metrics:
        if m not in cols:
            raise DDPDataError(f"{source}: metric column '{m}' is missing (select it with --score-col NAME); "
                               f"available: {', '.join(df.columns)}", code="D391")
    if df.height == 0:
        raise DDPDataError(f"{source}: the table has no rows", code="D398")
    keys = [document] + ([segment] if segment is not None else [])
    id_flags = {document: "--document-col", system: "--system-col", **({segment: "--segment-col"} if segment else {})}
    for c in keys + [system]:
        dtype = df.schema[c]
        if dtype.is_nested() or dtype in (pl.Binary, pl.Object):
            raise DDPDataError(f"{source}, column '{c}': ids must be integers or text, found type {dtype}; choose the "
                               f"id column with {id_flags[c]} or convert it", code="D108")
    for m in metrics:
        dtype = df.schema[m]
        if dtype.is_nested() or dtype.is_temporal() or dtype in (pl.Binary, pl.Object):
            s = df[m]
            i = int(s.is_not_null().arg_true()[0]) if s.null_count() < s.len() else 0
            raise DDPDataError(f"{source}, row {i + 1}: metric '{m}' value {s.slice(i, 1).to_list()[0]!r} is not a number (column type "
                               f"{dtype}); a metric column holds numbers (--score-col selects it)", code="D395")
    for c in keys + [system]:
        missing = key_missing(df[c])  # null, or NaN in a float column (pandas hands its NaN over as null)
        if missing is not None:
            row = int(missing.arg_true()[0]) + 1
            raise DDPDataError(f"{source}, row {row}: null (or NaN) value in column '{c}'; every row needs a {c}",
                               code="D399")
    df = df.with_columns(pl.col(system).cast(pl.String))
    if exclude_systems:
        from .bootstrap import _check_excluded_systems

        _check_excluded_systems(df[system].unique().to_list(), exclude_systems, source)
        df = df.filter(~pl.col(system).is_in([str(s) for s in exclude_systems]))
    systems_present = set(df[system].unique().to_list())
    if str(baseline) not in systems_present:
        shown = sorted(systems_present)
        raise DDPDataError(f"{source}: baseline '{baseline}' is not in column '{system}' (systems: "
                           f"{', '.join(shown[:20])}{' ...' if len(shown) > 20 else ''})", code="D392")
    if len(systems_present) < 2:
        raise DDPDataError(f"{source}: only the baseline '{baseline}' is in the table; nothing to compare it with",
                           code="D392")
    return df, segment, systems_present


def _metric_values(df: Any, metrics: list[str], source: str,
                   where: Any) -> tuple[list[np.ndarray], np.ndarray]:
    """Each metric column as finite float64 scores (n_rows,) (D395 not a number, D394 missing or
    infinite), scaled by an exact power of two when near 1e308, and the exponents (M,)."""
    import polars as pl

    vals = []
    for m in metrics:
        s = df[m]
        if not s.dtype.is_numeric():
            cast = s.cast(pl.Float64, strict=False)
            bad = cast.is_null() & s.is_not_null()
            if bad.any():
                i = int(bad.arg_true()[0])
                raise DDPDataError(f"{source}, row {i + 1}: metric '{m}' value {s[i]!r} is not a number ({where(i)})",
                                   code="D395")
            s = cast
        v = s.cast(pl.Float64).to_numpy().astype(np.float64, copy=False)
        badv = ~np.isfinite(v)
        if badv.any():
            i = int(np.flatnonzero(badv)[0])
            what = "missing (null/NaN)" if np.isnan(v[i]) else "infinite"
            raise DDPDataError(f"{source}, row {i + 1}: {what} score in metric column '{m}' for {where(i)} "
                               f"({int(badv.sum())} such row(s)); scores must be finite numbers", code="D394")
        vals.append(v)
    exps = np.zeros(len(vals), dtype=np.int64)
    for j, v in enumerate(vals):  # scores near 1e308: exact power-of-two scaling before any sum
        scaled, e = _scale_down(v, None, f"{source}: metric '{metrics[j]}'")
        vals[j], exps[j] = scaled, int(e[0])
    return vals, exps


def _check_paired(cell: np.ndarray, n_items: int, systems: list[str], item_keys: Any, source: str, baseline: str,
                  document: str, segment: str | None, where: Any) -> None:
    """Every system scores exactly the baseline's items, once each (D396 duplicate, D393 unpaired);
    ``cell`` (n_rows,) = item code * n_systems + system code."""
    n_sys = len(systems)
    present = np.bincount(cell, minlength=n_items * n_sys).reshape(n_items, n_sys)
    if (present > 1).any():
        it, sc = np.argwhere(present > 1)[0]
        i = int(np.flatnonzero(cell == it * n_sys + sc)[1])
        raise DDPDataError(f"{source}, row {i + 1}: duplicate row for {where(i)}; each system needs one score per "
                           "(document, segment)", code="D396")
    bl_has = present[:, 0] > 0
    missing = bl_has[:, None] & (present == 0)
    extra = ~bl_has[:, None] & (present > 0)
    if not (missing.any() or extra.any()):
        return
    bad, verb = (missing, "has no score for") if missing.any() else (extra, "has a score for")
    it, sc = np.argwhere(bad)[0]
    n_bad = int(bad[:, sc].sum())
    k = item_keys.row(int(it), named=True)
    seg = f", segment {k[segment]!r}" if segment is not None else ""
    tail = f"that the baseline '{baseline}' has ({n_bad} missing)" if bad is missing else \
        f"that the baseline '{baseline}' lacks ({n_bad} such)"
    msg = f"system '{systems[sc]}' {verb} document {k[document]!r}{seg} {tail}"
    raise DDPDataError(f"{source}: unpaired: {msg}; every system must score exactly the baseline's segments "
                       "(fix the table or leave the system out with --exclude-system)", code="D393")


# --------------------------------------------------------------------------- public API


def signature_line(sig: dict[str, Any]) -> str:
    """sacrebleu-style one-line signature: ``bs:1000|ar:10000|seed:0|unit:document|...``."""
    parts = [f"bs:{sig['n_boot']}"]  # the bootstrap always runs (CIs)
    if sig.get("test") in ("ar", "both"):
        parts.append(f"ar:{sig['n_ar']}")
    parts += [f"seed:{sig['seed'] if sig['seed'] is not None else 'user'}", f"unit:{sig['unit']}",
              f"correction:{sig['correction']}", f"test:{sig['test']}", f"confidence:{sig['confidence']:g}",
              f"alpha:{sig['alpha']:g}", f"version:{sig['ddpcore']}"]
    return "|".join(parts)


@dataclasses.dataclass(frozen=True)
class CompareTests:
    """What decides "better" in :func:`compare_systems` (the CLI's ``tests`` flags).

    Fields: ``unit`` (``"document"``: resample / swap whole documents, a system mean is the
    mean of the drawn documents' segment scores; ``"segment"``: sacrebleu's setting), ``test``
    (which p-values: ``"bootstrap"``, ``"ar"`` or ``"both"``, where a system must pass both;
    bootstrap CIs are always computed), ``n_ar`` (approximate-randomization trials, default
    10,000; checked where used, i.e. without user ``ar_keep`` masks and with an AR test),
    ``correction`` (``"holm"``, ``"bonferroni"`` or ``"none"``, family-wise over the compared
    systems, per metric and test), ``alpha`` (level) and ``confidence`` (level of the
    percentile CIs, sacrebleu's ``--confidence`` rule). Checked when made (D390, naming the flag).
    """

    unit: Unit = "document"
    test: Test = "both"
    n_ar: int = 10_000
    correction: Correction = "holm"
    alpha: float = 0.05
    confidence: float = 0.95

    def __post_init__(self) -> None:
        _check_options(self.test, self.correction, self.confidence, self.alpha, self.unit)


def compare_systems(
    table: Any,
    baseline: str,
    *,
    metrics: str | Sequence[str] = (schema.SCORE,),
    lower_is_better: str | Sequence[str] = (),
    exclude_systems: Sequence[str] = (),
    tests: CompareTests | None = None,
    ar_keep: npt.ArrayLike | None = None,
    columns: TableColumns | None = None,
    options: ResampleOptions | None = None,
) -> CompareResult:
    """Significance of every system against ``baseline``, for each metric column.

    Parameters
    ----------
    table
        Long table (path or polars/pandas/arrow frame) with one row per (document, segment,
        system) and one numeric column per metric. Without a segment column (the default name
        absent) rows are (document, system) scores.
    baseline
        Value of the system column to compare every other system with.
    metrics
        Metric column(s) (a name, a comma list or a sequence); one table per metric.
    lower_is_better
        Metric columns where a smaller score is better (e.g. TER): flips better/worse.
    exclude_systems
        Systems left out before pairing: a name or a sequence of names.
    tests
        :class:`CompareTests`: unit, which p-values, AR trials, correction, alpha, confidence
        (default ``CompareTests()``).
    ar_keep
        Explicit AR keep masks (n_ar, n_units), units in sorted key order (with ``options.indices``
        for the bootstrap draws, (n_boot, n_units)).
    columns
        :class:`~ddpcore.stats.TableColumns`: the document, segment and system columns
        (``segment=None``: document-level rows).
    options
        :class:`~ddpcore.stats.ResampleOptions`: ``n_boot`` (default 1,000), ``seed`` of both
        generators (see the module docstring), ``indices``, ``threads`` and the budget of the
        resampling (see :func:`compare_arrays`; D362 / D363 before the long part).

    Returns
    -------
    CompareResult
        ``warnings``: a test whose smallest (corrected) p-value is not below ``alpha`` for its
        replicate count, or CIs resting on fewer than one replicate per tail.

    A single resampling unit is D364; an ``exclude_systems`` name that is not a system is D704; a
    nested id column D108, a nested or Date metric column D395; ``seed`` outside [0, 2**128) D390.
    """
    exclude_systems = [exclude_systems] if isinstance(exclude_systems, str) else exclude_systems  # one name
    opts = check_options(options, func="compare_systems")
    tests = check_instance(tests, CompareTests, func="compare_systems", name="tests", code="D390")
    cols = check_columns(columns, func="compare_systems")
    metric_list, lib = _check_compare_args(metrics, lower_is_better, baseline, tests, opts, ar_keep)
    prep = _prepare(table, str(baseline), metric_list, tests.unit, cols.document, cols.segment, cols.system,
                    exclude_systems)
    from ._table import table_source
    from .bootstrap import _refuse_one_unit

    source = table_source(table)
    _refuse_one_unit(int(prep.sums.shape[0]), prep.unit_keys, tests.unit, source,
                    "the paired bootstrap and approximate randomization of every system",
                    "use --unit segment or a table with more documents" if tests.unit == "document" else
                    "use a table with more segments",
                    consequence="every swap mirrors it: the CIs would collapse to the point estimates and the "
                                "p-values to their floor 1/(B+1)")
    test = tests.test
    arr = compare_arrays(prep.sums, prep.counts, baseline=0, test=test, n_ar=tests.n_ar,
                         confidence=tests.confidence, ar_keep=ar_keep if test != "bootstrap" else None,
                         scale_exp=prep.scale_exp, options=opts)
    p_bs_adj = adjust_pvalues(arr.p_bootstrap, tests.correction) if arr.p_bootstrap is not None else None
    p_ar_adj = adjust_pvalues(arr.p_ar, tests.correction) if arr.p_ar is not None else None
    decision = np.fmax(p_bs_adj if p_bs_adj is not None else np.full_like(arr.score, np.nan),
                       p_ar_adj if p_ar_adj is not None else np.full_like(arr.score, np.nan))
    comps = {m: _metric_comparison(arr, j, m, m in lib, prep.systems, p_bs_adj, p_ar_adj, decision[j], tests.alpha)
             for j, m in enumerate(metric_list)}
    user_bs, user_ar = opts.indices is not None, ar_keep is not None and test != "bootstrap"
    seed_out = None if (user_bs or user_ar) else int(opts.seed)
    from ._table import signature as make_signature

    sig = make_signature(
        "compare",
        baseline=str(baseline), metrics=metric_list, lower_is_better=sorted(lib), unit=tests.unit, test=test,
        n_boot=arr.n_boot, n_ar=arr.n_ar if test != "bootstrap" else None, seed=seed_out,
        correction=tests.correction, confidence=float(tests.confidence), alpha=float(tests.alpha),
        bootstrap_indices="user" if user_bs else BS_RNG,
        ar_masks=None if test == "bootstrap" else ("user" if user_ar else AR_RNG),
        p_bootstrap="(#{|d_b| - mean|d| > |diff|} + 1) / (B + 1)  (sacrebleu --paired-bs)",
        p_ar="(#{|stat_t| > |diff|} + 1) / (T + 1)  (sacrebleu --paired-ar)",
        ci="order statistics floor(B(1-c)/2), B-1-floor(B(1-c)/2) (sacrebleu estimate_ci)",
        exclude_systems=[str(s) for s in exclude_systems],
    )
    return CompareResult(
        baseline=str(baseline), metrics=metric_list, comparisons=comps, unit=tests.unit,
        n_units=int(prep.sums.shape[0]), n_segments=int(prep.n_segments), test=test, n_boot=arr.n_boot,
        n_ar=arr.n_ar, seed=seed_out, correction=tests.correction, confidence=float(tests.confidence),
        alpha=float(tests.alpha), signature=sig, signature_line=signature_line(sig),
        warnings=_resampling_warnings(arr.n_boot, arr.n_ar if test != "bootstrap" else None, test, tests.correction,
                                     len(prep.systems) - 1, float(tests.alpha), float(tests.confidence)),
    )


def _resampling_warnings(n_boot: int, n_ar: int | None, test: str, correction: str, n_compared: int, alpha: float,
                        confidence: float) -> tuple[str, ...]:
    """Warning lines when the replicate counts cannot support the answer: a test whose smallest p-value,
    ``1 / (B + 1)`` (times the number of compared systems under Holm or Bonferroni), is not below ``alpha``
    can call no system significant whatever the data; fewer than one bootstrap replicate in a
    ``(1 - confidence) / 2`` tail makes every CI the range of the replicates."""
    from .bootstrap import _thin_replicates

    factor = n_compared if correction in ("holm", "bonferroni") else 1
    out = []
    for name, n, flag, default, run in (("bootstrap", n_boot, "--n-boot", DEFAULT_N_BOOT, test in ("bootstrap", "both")),
                                        ("approximate-randomization", n_ar, "--n-ar", 10_000, test in ("ar", "both"))):
        if not run or n is None:
            continue
        floor = min(1.0, factor / (n + 1.0))
        if floor < alpha:
            continue
        need = max(1, int(factor / alpha))
        while not factor / (need + 1.0) < alpha:
            need += 1
        corrected = f" x {n_compared} systems ({correction} correction)" if factor > 1 else ""
        out.append(f"with {flag} {n:,} the smallest {name} p-value is 1/({n:,} + 1){corrected} = {floor:.3g}, not "
                   f"below alpha {alpha:g}: no system can be significant whatever the data; use {flag} {need:,} or "
                   f"more (default {default:,})")
    thin = _thin_replicates(n_boot, (1.0 - confidence) / 2, f"every {100 * confidence:g}% CI", DEFAULT_N_BOOT)
    if thin:
        out.append(thin)
    return tuple(out)


def _check_compare_args(metrics: str | Sequence[str], lower_is_better: str | Sequence[str], baseline: Any,
                        tests: CompareTests, opts: ResampleOptions,
                        ar_keep: npt.ArrayLike | None) -> tuple[list[str], set[str]]:
    """The metric columns and the lower-is-better subset, after the checks of :func:`compare_systems`."""
    metric_list = _csv(metrics)
    if not metric_list:
        raise DDPUsageError("give at least one metric column (--score-col NAME)", code="D390")
    if baseline is None or str(baseline) == "":
        raise DDPUsageError("give the baseline system (--baseline NAME)", code="D390")
    if opts.indices is None:
        _check_count(opts.n_boot_or(DEFAULT_N_BOOT), "n_boot", "--n-boot")
    if ar_keep is None and tests.test != "bootstrap":
        _check_count(tests.n_ar, "n_ar", "--n-ar")
    lib = set(_csv(lower_is_better))
    unknown = sorted(lib - set(metric_list))
    if unknown:
        raise DDPUsageError(f"--lower-is-better names {unknown}, which are not metric columns ({metric_list})",
                            code="D390")
    return metric_list, lib


def _metric_comparison(arr: ArrayComparison, j: int, metric: str, low: bool, systems: list[str],
                       p_bs_adj: np.ndarray | None, p_ar_adj: np.ndarray | None, decision: np.ndarray,
                       alpha: float) -> MetricComparison:
    """Row ``j`` (one metric) of the array comparison, with its verdicts (decision: (S,) p-values)."""
    sig = (decision < alpha) & ~np.isnan(decision)
    up = arr.diff[j] > 0
    better = np.where(up != low, "better", "worse")
    verdict = ["baseline"] + [str(better[i]) if sig[i] else "n.s." for i in range(1, len(systems))]
    return MetricComparison(
        metric=metric, lower_is_better=low, systems=systems, score=arr.score[j], boot_mean=arr.boot_mean[j],
        ci_low=arr.ci_low[j], ci_high=arr.ci_high[j], diff=arr.diff[j], diff_ci_low=arr.diff_ci_low[j],
        diff_ci_high=arr.diff_ci_high[j],
        p_bootstrap=None if arr.p_bootstrap is None else arr.p_bootstrap[j],
        p_bootstrap_adj=None if p_bs_adj is None else p_bs_adj[j],
        p_ar=None if arr.p_ar is None else arr.p_ar[j],
        p_ar_adj=None if p_ar_adj is None else p_ar_adj[j],
        p_value=decision, significant=sig, verdict=verdict,
    )


def unit_keys(table: Any, *, unit: Unit = "document", baseline: str | None = None,
              metrics: str | Sequence[str] = (schema.SCORE,), columns: TableColumns | None = None) -> pl.DataFrame:
    """The resampling units of :func:`compare_systems` in index order (row k = unit k); shape
    (n_units, 1) for documents, (n_units, 2) for (document, segment). ``columns`` as there."""
    import polars as pl

    from ._frames import as_frame

    cols = check_columns(columns, func="unit_keys")
    df = as_frame(table, key_columns=(cols.document, cols.segment, cols.system))
    bl = str(baseline) if baseline is not None else str(df[cols.system].cast(pl.String).min())
    return _prepare(df, bl, _csv(metrics), unit, cols.document, cols.segment, cols.system, ()).unit_keys



__all__ = [
    "compare_systems",
    "compare_arrays",
    "CompareResult",
    "MetricComparison",
    "ArrayComparison",
    "adjust_pvalues",
    "ar_swap_matrix",
    "unit_keys",
    "signature_line",
    "ERROR_CODES",
]
