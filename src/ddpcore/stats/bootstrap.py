"""Document (or segment) bootstrap of system means and of the Kendall tau-b between rankings.

The unit of resampling is a document (``unit="document"``) or a segment
(``unit="segment"``: one ``(document_id, segment_id)`` pair). A unit drawn k times in a
replicate contributes all of its rows (every system, every annotator, both conditions)
k times. Units are numbered 0..n_units-1 in sorted key order (``document_id`` values
sorted numerically for integer ids, by code point for strings; segments by
``(document_id, segment_id)``).

Resampling indices
------------------
Replicate r draws ``n_units`` units; draw k picks unit ``indices[r, k]``. With a seed,
the indices are fixed by a documented generator so any tool can regenerate them::

    raw = numpy.random.PCG64(seed).random_raw(n_boot * n_units).reshape(n_boot, n_units)
    indices = floor(raw * n_units / 2**64)          # 128-bit product, see resample_indices

i.e. numpy's PCG64 bit generator seeded with ``seed`` (through numpy's SeedSequence, as
``numpy.random.PCG64(seed)`` does), its raw 64-bit outputs in row-major order, each
mapped to ``[0, n_units)`` by Lemire's multiply-shift (bias at most n_units / 2**64).
:func:`resample_indices` returns exactly this matrix. The native kernel generates the
same PCG64 stream itself (a 128-bit LCG with XSL-RR output, checked word for word
against numpy in the tests): each replicate jumps ahead to word ``r * n_units`` of the
stream in O(log) steps, so replicates run in parallel without materialising the index
matrix, and each replicate is summed sequentially by one thread -- the replicates are
bit-identical for any number of threads.
A user-supplied ``indices`` matrix (shape ``(n_boot, n_units)``) replaces the generator.

Per-unit sufficient statistics (sum and count of each system's scores, per condition)
are computed once; a native kernel (OpenMP over replicates) adds up the drawn units'
statistics for every replicate. No Python loop runs per replicate.

Replicates are computed in blocks of bounded size (a few million additions each), so memory
does not grow with ``n_boot`` beyond what a function keeps per replicate (8 bytes per tau
replicate, the full matrix for :func:`resample_sums`). Before allocating, every entry point
estimates its memory and, after the first block, its run time; over the limits
(``max_memory``, ``max_seconds``, see :mod:`ddpcore.stats.budget`) it stops with D362 /
D363 and says which ``n_boot`` fits.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from .. import schema
from .._native import load
from ..errors import DDPDataError, DDPUsageError
from . import budget as _budget
from ._table import (check_magnitude, check_single_condition, result_to_dict, check_conditions, factorize, load_ratings,
                     group_sums, is_real, signature, similar_names_warning, table_source)
from .columns import TableColumns, check_columns
from .options import ResampleOptions, check_options

if TYPE_CHECKING:
    import polars as pl

Unit = Literal["document", "segment"]
Weighting = Literal["segment", "document"]

#: the generator description recorded in signatures
RNG_DESCRIPTION = "numpy PCG64(seed).random_raw, row-major; unit = floor(raw * n_units / 2**64)"



# --------------------------------------------------------------------------- resampling engine


def resample_indices(n_boot: int, n_units: int, seed: int, *, max_memory: Any = None) -> npt.NDArray[np.int64]:
    """The ``(n_boot, n_units)`` index matrix the seeded bootstrap uses (see module docstring).

    Entry ``[r, k]`` is the unit taken by draw k of replicate r. Memory: 8 bytes per entry
    (about 40 while it is built; over ``max_memory`` -> D362); use it to export a run to
    another tool, not inside the hot path.
    """
    _check_sizes(n_boot, n_units)
    seed = _budget.check_seed(seed)
    _budget.resolve(max_memory, 0, what="resample_indices").check_memory(n_boot, 40.0 * n_units)
    raw = np.random.PCG64(seed).random_raw(n_boot * n_units).reshape(n_boot, n_units)
    n = np.uint64(n_units)
    hi = raw >> np.uint64(32)
    lo = raw & np.uint64(0xFFFFFFFF)
    # floor(raw * n / 2**64) without 128-bit integers (exact for n < 2**32)
    return ((hi * n + ((lo * n) >> np.uint64(32))) >> np.uint64(32)).astype(np.int64)


def _check_sizes(n_boot: int, n_units: int) -> None:
    _budget.check_n_boot(n_boot)
    if not 1 <= int(n_units) < 2**32:
        raise DDPDataError(f"need between 1 and 2**32 - 1 resampling units, got {n_units}", code="D309")


DEFAULT_N_BOOT = 10_000


def _check_indices(indices: Any, n_boot: int | None, n_units: int) -> npt.NDArray[np.int64]:
    """Validate a user index matrix. ``n_boot`` left at its default is taken from its rows."""
    arr = np.asarray(indices)
    if n_boot == DEFAULT_N_BOOT:
        n_boot = None
    if arr.ndim != 2 or arr.shape[1] != n_units:
        raise DDPDataError(
            f"indices must have shape (n_boot, n_units) = (n_boot, {n_units}); got {arr.shape}. "
            f"There are {n_units} resampling units (sorted unit keys); entry [r, k] names the unit of draw k",
            code="D313",
        )
    if n_boot is not None and arr.shape[0] != int(n_boot):
        raise DDPUsageError(f"n_boot={n_boot} but indices has {arr.shape[0]} rows; pass one or make them agree", code="D311")
    if not np.issubdtype(arr.dtype, np.integer):
        if not (np.isfinite(arr).all() and (arr == np.round(arr)).all()):
            raise DDPDataError("indices must be whole numbers", code="D313")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= n_units):
        bad = int(arr.min()) if arr.min() < 0 else int(arr.max())
        raise DDPDataError(f"indices must lie in [0, {n_units}); found {bad}", code="D313")
    return arr


def resample_sums(
    values: npt.ArrayLike,
    *,
    n_boot: int | None = 10_000,
    seed: int = 0,
    indices: npt.ArrayLike | None = None,
    threads: int | None = None,
    max_memory: Any = None,
    max_seconds: Any = None,
) -> npt.NDArray[np.float64]:
    """Column sums of ``values`` over bootstrap resamples of its rows.

    Parameters
    ----------
    values : array_like, shape (n_units, n_cols)
        Per-unit sufficient statistics (e.g. each system's score sum and count).
    n_boot, seed
        Number of replicates and the seed of the documented generator.
    indices : array_like of int, shape (n_boot, n_units), optional
        Explicit draws; replaces ``seed``. ``n_boot`` is then the number of rows (an
        explicit, different ``n_boot`` other than the default raises D311).
    threads
        OpenMP threads (default: ``OMP_NUM_THREADS`` or all cores). Results do not depend on it.
    max_memory, max_seconds
        Budget (bytes or "8G"; seconds; 0 = no limit; defaults in :mod:`ddpcore.stats.budget`):
        over it -> D362 (memory, checked before allocating) / D363 (time, extrapolated from
        the first block of replicates).

    Returns
    -------
    numpy.ndarray, shape (n_boot, n_cols)
        Row r = sum over draws k of ``values[indices[r, k]]``.
    """
    vals = np.asarray(values, dtype=np.float64)
    if vals.ndim != 2:
        raise DDPDataError(f"values must be 2-D (n_units, n_cols), got shape {vals.shape}", code="D313")
    check_magnitude(vals, "values")
    budget = _budget.resolve(max_memory, max_seconds, what="resample_sums")
    n_rep = _check_indices(indices, n_boot, vals.shape[0]).shape[0] if indices is not None else _resolve_n_boot(n_boot, None)
    _check_sizes(n_rep, vals.shape[0])
    budget.check_memory(n_rep, 8.0 * vals.shape[1], fixed=3 * vals.nbytes + _block_bytes(vals.shape, n_rep))
    return _resample_sums_full(vals, n_boot, seed, indices, threads, budget)


def _resample_sums_full(
    vals: np.ndarray, n_boot: int | None, seed: int, indices: npt.ArrayLike | None, threads: int | None,
    budget: _budget.Budget,
) -> np.ndarray:
    n_rep = _check_indices(indices, n_boot, vals.shape[0]).shape[0] if indices is not None else _resolve_n_boot(n_boot, None)
    out = np.empty((n_rep, vals.shape[1]), dtype=np.float64)
    for r0, block in iter_resample_sums(vals, n_boot=n_boot, seed=seed, indices=indices, threads=threads,
                                        budget=budget):
        out[r0: r0 + block.shape[0]] = block
    return out


#: elementary additions per block of replicates (bounds block memory and the time check's pilot).
#: Each block is one OpenMP parallel region; at 2**25 (about 30-60 ms of work) the regions are few
#: enough that waking the threads and waiting at the region's end cost < 1 % even on a busy machine
#: (at 2**23, 120 regions of a 10 k-document bootstrap cost 2 threads more than they gained under
#: load: benchmarks/threads_table.py)
_BLOCK_WORK = 1 << 25


def _block_bytes(shape: tuple[int, ...], n_rep: int, per_col: float = 16.0) -> float:
    """Bytes of the per-block buffers of :func:`iter_resample_sums` (``per_col`` bytes per replicate
    and column: the block's sums and its expanded copy)."""
    n_units, n_cols = int(shape[0]), int(shape[1])
    block = min(max(16, _BLOCK_WORK // max(1, n_units * max(n_cols + n_cols % 2, 1))), max(int(n_rep), 1))
    return float(block) * max(n_cols + 1, 2) * per_col


def _column_plan(vals: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Columns that need resampling.

    An integer column that is the same in every unit (e.g. one row per unit and system) sums
    to ``value * n_units`` in every replicate -- exactly, below 2**53 -- whatever is drawn;
    identical columns (e.g. the row counts of a balanced design) have identical sums, so each
    distinct column is resampled once. Returns (constant mask, resampled column indices of
    the non-constant columns ``keep``, ``where``: for each non-constant column its position
    in ``keep``, the non-constant column indices)."""
    n_units, n_cols = vals.shape
    const = np.zeros(n_cols, dtype=bool)
    if n_units >= 1 and n_cols >= 1:
        first = vals[0]
        const = (vals == first).all(axis=0) & (first == np.round(first)) & (np.abs(first) * n_units < 2.0**53)
    var_cols = np.flatnonzero(~const)
    cols = np.ascontiguousarray(vals[:, var_cols].T)
    seen: dict[bytes, int] = {}
    where = np.array([seen.setdefault(cols[j].tobytes(), len(seen)) for j in range(cols.shape[0])], dtype=np.int64)
    keep = np.unique(where, return_index=True)[1] if len(where) else np.zeros(0, dtype=np.int64)
    return const, var_cols[keep], where, var_cols


def iter_resample_sums(
    values: npt.ArrayLike,
    *,
    n_boot: int | None,
    seed: int = 0,
    indices: npt.ArrayLike | None = None,
    threads: int | None = None,
    budget: _budget.Budget | None = None,
    block: int | None = None,
) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(r0, sums)`` blocks of :func:`resample_sums` (rows r0, r0 + 1, ... of the same matrix).

    Blocks hold about ``_BLOCK_WORK / (n_units * n_cols)`` replicates (at least 16), so memory
    stays bounded whatever ``n_boot``; the replicates are exactly those of the one-shot call
    (the generator jumps to replicate r0's word of the PCG64 stream). After the first block
    the budget's time check runs (D363 when the extrapolated run time is over the limit).
    """
    kernels = load("stats_kernels")
    vals = np.ascontiguousarray(values, dtype=np.float64)
    n_units, n_cols = vals.shape
    nt = 0 if threads is None else int(threads)
    if indices is not None:
        idx = _check_indices(indices, n_boot, n_units)
        n_rep = idx.shape[0]
    else:
        if n_boot is None:
            raise DDPUsageError("give n_boot or indices", code="D311")
        _check_sizes(n_boot, n_units)
        n_rep = int(n_boot)
        seed = _budget.check_seed(seed)
    const, keep, where, var_cols = _column_plan(vals)
    red = np.ascontiguousarray(vals[:, keep])
    n_red = red.shape[1]
    padded = n_red + (n_red % 2)  # the kernel sums an even number of columns at a time
    if padded != n_red:
        red = np.ascontiguousarray(np.pad(red, ((0, 0), (0, padded - n_red))))
    if block is None:
        block = max(16, _BLOCK_WORK // max(1, n_units * max(padded, 1)))
    block = max(1, min(int(block), max(n_rep, 1)))
    const_sums = vals[0, const] * n_units if n_units else np.zeros(int(const.sum()))
    if budget is not None:
        budget.start()
    r0 = 0
    while r0 < n_rep:
        r1 = min(n_rep, r0 + block)
        out = np.empty((r1 - r0, n_cols), dtype=np.float64)
        if const.any():
            out[:, const] = const_sums
        if padded:
            sub = np.empty((r1 - r0, padded), dtype=np.float64)
            if indices is not None:
                kernels.resample_sums_indices(np.ascontiguousarray(idx[r0:r1]), red, sub, nt)
            else:
                kernels.resample_sums_pcg64(*pcg64_start(seed, r0 * n_units), red, sub, n_units, nt)
            out[:, var_cols] = sub[:, where]
        if budget is not None and r0 == 0:
            budget.check_time(r1, n_rep)
        yield r0, out
        r0 = r1


def pcg64_start(seed: int, skip: int = 0) -> tuple[int, int, int, int]:
    """State of ``numpy.random.PCG64(seed)``, advanced by ``skip`` words, as
    (state_hi, state_lo, inc_hi, inc_lo) 64-bit halves."""
    try:
        bg = np.random.PCG64(seed)
        if skip:
            bg.advance(int(skip))
        st = bg.state["state"]
    except (TypeError, ValueError) as exc:
        raise DDPUsageError(f"seed must be a non-negative integer, got {seed!r} ({exc}) (--seed)", code="D311") from None
    mask = (1 << 64) - 1
    return st["state"] >> 64, st["state"] & mask, st["inc"] >> 64, st["inc"] & mask


# --------------------------------------------------------------------------- table -> unit statistics


@dataclasses.dataclass(frozen=True)
class _UnitStats:
    values: np.ndarray  # (n_units, n_conditions * 2 * n_systems): [sums c0 | counts c0 | sums c1 | ...]
    systems: list[Any]
    n_units: int
    n_systems: int
    unit_keys: pl.DataFrame


def _unit_columns(unit: str) -> list[str]:
    if unit == "document":
        return [schema.DOCUMENT_ID]
    if unit == "segment":
        return [schema.DOCUMENT_ID, schema.SEGMENT_ID]
    raise DDPUsageError(f"unit must be 'document' or 'segment', got {unit!r} (--unit)", code="D311")


def _check_excluded_systems(systems: Any, exclude_systems: Sequence[Any], source: str) -> None:
    """D704 when a system of ``exclude_systems`` (``--exclude-system``) is not among ``systems`` (the
    system column, any values): a misspelt name would otherwise leave the system in, silently. The
    message is the one of ``ddp blindness`` and ``ddp mix``."""
    present = {str(s) for s in systems}
    absent = [str(s) for s in exclude_systems if str(s) not in present]
    if absent:
        shown = sorted(present)
        raise DDPDataError(
            f"{source}: --exclude-system {', '.join(map(repr, absent))}: no such system in the table; systems: "
            f"{', '.join(shown[:30])}{' ...' if len(shown) > 30 else ''}", code="D704")


def _unit_stats(
    df: pl.DataFrame, conditions: Sequence[Any], unit: str, weighting: str, exclude_systems: Sequence[Any],
    source: str = "<table>",
) -> _UnitStats:
    import polars as pl

    if weighting not in ("segment", "document"):
        raise DDPUsageError(f"weighting must be 'segment' or 'document', got {weighting!r} (--weighting)", code="D311")
    if weighting == "document" and unit != "document":
        raise DDPUsageError("weighting='document' (mean of document means) needs unit='document'", code="D311")
    unit_cols = _unit_columns(unit)
    if exclude_systems:
        _check_excluded_systems(df[schema.SYSTEM].cast(pl.String).unique().to_list(), exclude_systems, source)
        df = df.filter(~pl.col(schema.SYSTEM).cast(pl.String).is_in([str(s) for s in exclude_systems]))
    if len(conditions) > 0:
        check_conditions(df, conditions)
        cond_str = df[schema.CONDITION].cast(pl.String)
        df = df.filter(cond_str.is_in([str(c) for c in conditions]))
        cond_code = np.zeros(df.height, dtype=np.int64)
        cond_str = df[schema.CONDITION].cast(pl.String).to_numpy()
        for i, c in enumerate(conditions):
            cond_code[cond_str == str(c)] = i
        n_cond = len(conditions)
    else:
        cond_code = np.zeros(df.height, dtype=np.int64)
        n_cond = 1
    if df.height == 0:
        raise DDPDataError(f"{source}: no rows left for the requested conditions/systems", code="D309")
    unit_code, unit_keys = factorize(df, unit_cols)
    sys_code, sys_keys = factorize(df, [schema.SYSTEM])
    systems = sys_keys[schema.SYSTEM].to_list()
    n_units, n_sys = unit_keys.height, len(systems)
    if n_sys < 2:
        raise DDPDataError(f"{source}: need at least 2 systems to rank, found {n_sys}: {systems}", code="D310")
    score = df[schema.SCORE].to_numpy().astype(np.float64)
    # every system must be scored under every condition
    present = np.zeros((n_cond, n_sys), dtype=bool)
    present[cond_code, sys_code] = True
    for c in range(n_cond):
        missing = [systems[s] for s in np.flatnonzero(~present[c])]
        if missing:
            raise DDPDataError(
                f"{source}: system(s) {missing} have no scores under condition {conditions[c]!r}; every system must "
                f"be scored under both conditions: add their rows under {conditions[c]!r}, or leave them out "
                f"(--exclude-system {missing[0]}, once per system; exclude_systems= in Python)",
                code="D310",
            )
    n_cols = n_cond * 2 * n_sys
    cell = (unit_code * n_cond + cond_code) * n_sys + sys_code  # (unit, condition, system)
    n_cells = n_units * n_cond * n_sys
    sums = group_sums(cell, score, n_cells).reshape(n_units, n_cond, n_sys)  # row-order independent bits
    counts = np.bincount(cell, minlength=n_cells).astype(np.float64).reshape(n_units, n_cond, n_sys)
    if weighting == "document":
        with np.errstate(invalid="ignore", divide="ignore"):
            sums = np.where(counts > 0, sums / counts, 0.0)
        counts = (counts > 0).astype(np.float64)
    values = np.empty((n_units, n_cond, 2, n_sys), dtype=np.float64)
    values[:, :, 0, :] = sums
    values[:, :, 1, :] = counts
    return _UnitStats(values.reshape(n_units, n_cols), systems, n_units, n_sys, unit_keys)


def _means_from_sums(sums: np.ndarray, n_cond: int, n_sys: int) -> np.ndarray:
    """(n_rep, n_cond * 2 * n_sys) sums -> (n_rep, n_cond, n_sys) means (NaN where count = 0)."""
    s = sums.reshape(sums.shape[0], n_cond, 2, n_sys)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(s[:, :, 1, :] > 0, s[:, :, 0, :] / s[:, :, 1, :], np.nan)


# --------------------------------------------------------------------------- results


@dataclasses.dataclass(frozen=True)
class BootstrapTauResult:
    """Kendall tau-b between two conditions' system rankings with a bootstrap percentile CI."""

    tau: float  # tau-b of the full-sample system means
    p_value: float  # scipy.stats.kendalltau p of the point estimate (n = number of systems)
    ci_low: float
    ci_high: float
    share_below_tau_min: float  # share of (defined) replicates with tau < tau_min
    replicates: np.ndarray = dataclasses.field(repr=False)  # shape (n_boot,), NaN = undefined replicate
    n_boot: int
    seed: int | None
    unit: str
    n_units: int
    systems: list[Any]
    condition_a: Any
    condition_b: Any
    means_a: dict[str, float]
    means_b: dict[str, float]
    replicate_mean: float
    replicate_sd: float
    n_undefined: int  # replicates where a system had no rows or all means tied
    share_tied: float  # share of replicates with an exact tie between two system means
    confidence: float
    tau_min: float
    weighting: str
    signature: dict[str, Any] = dataclasses.field(default_factory=dict)
    n_omitted: int = 0  # rows dropped for a missing score (nan_policy="omit")
    #: what the caller must be told: rows dropped, too few replicates for the CI level (the CLI prints them)
    warnings: tuple[str, ...] = ()

    def to_dict(self, include_replicates: bool = False) -> dict[str, Any]:
        return result_to_dict(self, include_replicates)


@dataclasses.dataclass(frozen=True)
class BootstrapMeansResult:
    """Bootstrap replicates of system means (one condition or all rows)."""

    replicates: np.ndarray = dataclasses.field(repr=False)  # shape (n_boot, n_systems)
    means: np.ndarray  # shape (n_systems,), full-sample means
    systems: list[Any]
    n_boot: int
    seed: int | None
    unit: str
    n_units: int
    signature: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_dict(self, include_replicates: bool = False) -> dict[str, Any]:
        return result_to_dict(self, include_replicates)


# --------------------------------------------------------------------------- public API


def _resolve_n_boot(n_boot: int | None, indices: Any) -> int:
    if indices is not None:
        return int(np.shape(indices)[0]) if np.ndim(indices) == 2 else -1
    if n_boot is None:
        raise DDPUsageError("give n_boot or indices", code="D311")
    return int(n_boot)


def _refuse_one_unit(n_units: int, unit_keys: Any, unit: str, source: str, what: str, hint: str,
                    consequence: str = "its interval would collapse to the point estimate") -> None:
    """D364 when a bootstrap has a single resampling unit: every replicate then redraws the whole sample,
    so its CI collapses to the point estimate and its p-values to 0 or 1 (certainty that the data cannot
    give). ``unit_keys``: the units' key frame (row 0 is named); ``what`` the statistic, ``hint`` what to do,
    ``consequence`` what the degenerate resampling would report."""
    if n_units >= 2:
        return
    key = ", ".join(f"{c}={v!r}" for c, v in unit_keys.row(0, named=True).items()) if n_units else ""
    raise DDPDataError(
        f"{source}: {what} is undefined (NaN) for this table: it has a single resampling {unit} ({key}), so every "
        f"replicate redraws the whole sample and {consequence}; {hint}", code="D364")


#: what too few replicates do to a percentile interval (the default consequence of :func:`_thin_replicates`)
_CI_TAIL = "its bounds are (interpolated between) the extreme replicates, not estimated percentiles"


def _thin_replicates(n_rep: int, tail: float, what: str, default: int, flag: str = "--n-boot",
                    consequence: str = _CI_TAIL) -> str | None:
    """A warning line when ``n_rep`` replicates leave fewer than one replicate in a tail of probability
    ``tail`` (``n_rep * tail < 1``; e.g. ``tail = (1 - confidence) / 2`` for a percentile interval, ``alpha / 2``
    for a two-sided bootstrap test): the interval is then the range of the replicates, and a p-value below the
    level only says that no replicate crossed. ``None`` when there are enough replicates."""
    if n_rep * float(tail) >= 1.0 - 1e-9:
        return None
    need = math.ceil(1.0 / float(tail) - 1e-9)
    return (f"{what} rests on {n_rep:,} replicate(s), fewer than one in a {100 * float(tail):g}% tail: "
            f"{consequence}; use {flag} {need:,} or more (default {default:,})")


def bootstrap_tau(
    table: Any,
    condition_a: Any,
    condition_b: Any,
    *,
    unit: Unit = "document",
    weighting: Weighting = "segment",
    tau_min: float = 0.667,
    confidence: float = 0.95,
    exclude_systems: Sequence[Any] = (),
    columns: TableColumns | None = None,
    options: ResampleOptions | None = None,
    one_sided: Literal["raise", "keep"] = "raise",
) -> BootstrapTauResult:
    """Kendall tau-b between the system rankings of two conditions, with a bootstrap CI.

    System rankings are the system means under each condition (``weighting="segment"``:
    mean over all of the system's rows; ``"document"``: mean of its per-document means).
    Each replicate resamples units (documents, or segments) with replacement, recomputes
    both conditions' system means from the same draw, and computes tau-b.

    Parameters
    ----------
    table
        Long table (path or frame), one row per score, with document, segment, system,
        condition and score columns.
    condition_a, condition_b
        The two values of the condition column to compare.
    unit
        The resampling unit, see the module docstring.
    tau_min
        Threshold for ``share_below_tau_min`` (the paper uses 0.667).
    confidence
        Percentile interval level: ``ci_low``/``ci_high`` are the ``(1 - confidence)/2``
        and ``(1 + confidence)/2`` quantiles of the defined replicates
        (``numpy.percentile``, linear interpolation).
    exclude_systems
        Systems left out of the ranking (e.g. the human reference): a name or a sequence of names.
    columns
        :class:`~ddpcore.stats.TableColumns` naming those columns (CLI ``--document-col`` ...;
        the annotator column is not used).
    options
        :class:`~ddpcore.stats.ResampleOptions`: ``n_boot`` (default 10,000), ``seed``,
        ``indices`` (shape (n_boot, n_units), replacing the seeded generator; see the module
        docstring), ``threads``, ``nan_policy`` and the budget. About 10 bytes per replicate are kept
        (the tau replicates and a tie flag) plus bounded blocks; over ``max_memory`` -> D362
        before any work, an estimated run time over ``max_seconds`` -> D363 after the first
        block.

    one_sided
        ``"raise"`` (default): a unit (document, or segment with ``unit="segment"``) that has rows under
        one of the two conditions only is an error (D791) naming the first such unit: both conditions'
        means are drawn from the same units, and a unit one side lacks (typically an id changed on one
        side) would make the two rankings resample different material. ``"keep"``: such units are
        resampled as they are (used by :func:`ddpcore.stats.blindness.blindness`, whose source attribution
        documents keys one side lacks).

    Rows: each row is one rating; the same (document, segment, system, annotator, condition) twice is
    D307 when the table has an annotator column (:func:`ddpcore.stats._table.check_unique_ratings`).
    Without an annotator column, several rows of one (document, segment, system, condition) are
    ratings by different annotators, each counted as a row of the system mean.

    Returns
    -------
    BootstrapTauResult
        Undefined replicates (a system without rows in the drawn units, or all system means
        tied) are NaN in ``replicates``, counted in ``n_undefined`` and left out of the CI
        and of ``share_below_tau_min``. Rows dropped by ``nan_policy="omit"`` are ``n_omitted``
        (and in the signature with ``nan_policy``); they and a CI resting on fewer than one defined
        replicate in each ``(1 - confidence) / 2`` tail are lines in ``warnings``.

    A single resampling unit is D364 (the CI would be [tau, tau]); an ``exclude_systems`` name that is
    not a system of the table is D704; a non-finite ``tau_min`` is D311.
    """
    from .correlation import kendall_tau_b

    exclude_systems = [exclude_systems] if isinstance(exclude_systems, str) else exclude_systems  # one name
    opts = check_options(options, func="bootstrap_tau")
    if not is_real(confidence) or not 0.0 < float(confidence) < 1.0:
        raise DDPUsageError(f"confidence must be a number in (0, 1), got {confidence!r} (--confidence)", code="D311")
    if not is_real(tau_min) or not math.isfinite(float(tau_min)):
        raise DDPUsageError(f"tau_min must be a finite number, got {tau_min!r} (--tau-min)", code="D311")
    if str(condition_a) == str(condition_b):
        raise DDPUsageError(f"the two conditions must differ (both are {condition_a!r})", code="D311")
    if one_sided not in ("raise", "keep"):
        raise DDPUsageError(f"one_sided must be 'raise' or 'keep', got {one_sided!r}", code="D311")
    cols = check_columns(columns, func="bootstrap_tau")
    required = ["document", "system", "condition", "score"] + (["segment"] if unit == "segment" else [])
    loaded: dict[str, Any] = {}
    df = load_ratings(table, cols, required, opts.nan_policy, counts=loaded)
    source = table_source(table)
    stats = _unit_stats(df, [condition_a, condition_b], unit, weighting, exclude_systems, source)
    if one_sided == "raise":
        _refuse_one_sided_units(stats, unit, condition_a, condition_b, table)
    _refuse_one_unit(stats.n_units, stats.unit_keys, unit, source, "the bootstrap CI of Kendall tau",
                    "use unit='segment' (ddp stats tau --unit segment) or a table with more documents"
                    if unit == "document" else
                    "use a table with more segments")
    full = _means_from_sums(stats.values.sum(axis=0, keepdims=True), 2, stats.n_systems)[0]
    point = kendall_tau_b(full[0], full[1])
    reps, tied, seed = _tau_replicates(stats, unit, opts)
    summary = _tau_summary(reps, confidence, tau_min)
    user = opts.indices is not None
    n_omitted = int(loaded.get("n_omitted") or 0)
    warnings = []
    if n_omitted:
        warnings.append(f"{n_omitted} row(s) with a missing (null/NaN) score dropped (nan_policy='omit', "
                        f"--nan-policy omit; first: row {loaded.get('first_omitted_row')})")
    thin = _thin_replicates(int(reps.shape[0]) - summary["n_undefined"], (1.0 - float(confidence)) / 2,
                           f"the {100 * float(confidence):g}% CI of tau", DEFAULT_N_BOOT)
    if thin:
        warnings.append(thin)
    similar = similar_names_warning(stats.systems)
    if similar:
        warnings.append(similar)
    sig = signature(
        "bootstrap_tau",
        condition_a=str(condition_a),
        condition_b=str(condition_b),
        unit=unit,
        n_boot=int(reps.shape[0]),
        seed=None if user else int(seed),
        indices="user" if user else RNG_DESCRIPTION,
        weighting=weighting,
        confidence=float(confidence),
        tau_min=float(tau_min),
        ci="percentile (numpy.percentile, linear)",
        exclude_systems=[str(s) for s in exclude_systems],
        nan_policy=opts.nan_policy,
        n_omitted=n_omitted,
    )
    return BootstrapTauResult(
        tau=point.statistic, p_value=point.p_value, **summary, replicates=reps, n_boot=int(reps.shape[0]),
        seed=None if user else int(seed), unit=unit, n_units=stats.n_units, systems=stats.systems,
        condition_a=condition_a, condition_b=condition_b,
        means_a={str(s): float(m) for s, m in zip(stats.systems, full[0])},
        means_b={str(s): float(m) for s, m in zip(stats.systems, full[1])},
        share_tied=float(tied.mean()), confidence=float(confidence), tau_min=float(tau_min), weighting=weighting,
        signature=sig, n_omitted=n_omitted, warnings=tuple(warnings),
    )


def _refuse_one_sided_units(stats: _UnitStats, unit: str, a: Any, b: Any, table: Any) -> None:
    """D791 when a resampling unit has rows under one of the two conditions only (vectorised over units)."""
    counts = stats.values.reshape(stats.n_units, 2, 2, stats.n_systems)[:, :, 1, :].sum(axis=2)  # (unit, condition)
    has = counts > 0
    lonely = has[:, 0] != has[:, 1]
    if not lonely.any():
        return
    k = int(np.flatnonzero(lonely)[0])
    side, other = (a, b) if has[k, 0] else (b, a)
    key = ", ".join(f"{c}={v!r}" for c, v in stats.unit_keys.row(k, named=True).items())
    source = table_source(table)
    n_a, n_b = int((has[:, 0] & ~has[:, 1]).sum()), int((has[:, 1] & ~has[:, 0]).sum())
    raise DDPDataError(
        f"{source}: {int(lonely.sum())} {unit}(s) have rows under one condition only ({n_a} only in {a!r}, "
        f"{n_b} only in {b!r}; first: {key} has {int(counts[k].sum())} row(s) in {side!r} and none in {other!r}); "
        f"tau draws both conditions' means from the same {unit}s, so each {unit} must be scored under both. "
        f"Check the {'ids' if unit == 'segment' else 'document ids'} of {side!r} (an id changed on one side), "
        f"or filter the table to the {unit}s both conditions share",
        code="D791",
    )


def _tau_replicates(stats: _UnitStats, unit: str, opts: ResampleOptions) -> tuple[np.ndarray, np.ndarray, int]:
    """The (n_boot,) tau-b replicates (NaN = undefined), their (n_boot,) tie flags and the checked seed."""
    n_boot, seed, threads, indices = opts.n_boot_or(DEFAULT_N_BOOT), opts.seed, opts.threads, opts.indices
    if indices is not None:
        n_rep = _check_indices(indices, opts.n_boot, stats.n_units).shape[0]
    else:
        n_rep = _budget.check_n_boot(n_boot)
        seed = _budget.check_seed(seed)
    budget = opts.budget(f"bootstrap_tau ({stats.n_units:,} {unit}s)")
    # kept per replicate: tau (8 B), its copy for the percentiles (8 B), tie flag and mask (2 B);
    # per block: sums, means and their sorted copy
    budget.check_memory(n_rep, 18.0, fixed=3 * stats.values.nbytes + _block_bytes(stats.values.shape, n_rep, 40.0))
    reps = np.empty(n_rep, dtype=np.float64)
    tied = np.empty(n_rep, dtype=bool)
    kern = load("stats_kernels")
    for r0, sums in iter_resample_sums(stats.values, n_boot=n_boot, seed=seed, indices=indices, threads=threads,
                                       budget=budget):
        means = _means_from_sums(sums, 2, stats.n_systems)
        r1 = r0 + sums.shape[0]
        kern.tau_b_rows(np.ascontiguousarray(means[:, 0, :]), np.ascontiguousarray(means[:, 1, :]), reps[r0:r1],
                        opts.kernel_threads)
        tied[r0:r1] = (np.diff(np.sort(means, axis=2), axis=2) == 0).any(axis=(1, 2))
    return reps, tied, seed


def _tau_summary(reps: np.ndarray, confidence: float, tau_min: float) -> dict[str, Any]:
    """Percentile CI, share below ``tau_min``, mean, SD and count of the undefined (NaN) replicates."""
    ok = np.isfinite(reps)
    lo_q, hi_q = round(50 * (1 - confidence), 10), round(50 * (1 + confidence), 10)  # 2.5, 97.5 exactly
    if ok.any():
        ci_low, ci_high = (float(v) for v in np.percentile(reps[ok], [lo_q, hi_q]))
        share_below = float(np.mean(reps[ok] < tau_min))
        rep_mean, rep_sd = float(reps[ok].mean()), float(reps[ok].std(ddof=1)) if ok.sum() > 1 else float("nan")
    else:
        ci_low = ci_high = share_below = rep_mean = rep_sd = float("nan")
    return dict(ci_low=ci_low, ci_high=ci_high, share_below_tau_min=share_below, replicate_mean=rep_mean,
                replicate_sd=rep_sd, n_undefined=int((~ok).sum()))


def bootstrap_system_means(
    table: Any,
    *,
    condition_value: Any | None = None,
    unit: Unit = "document",
    weighting: Weighting = "segment",
    exclude_systems: Sequence[Any] = (),
    columns: TableColumns | None = None,
    options: ResampleOptions | None = None,
) -> BootstrapMeansResult:
    """Bootstrap replicates of every system's mean score.

    Uses only the rows whose condition column equals ``condition_value``; without it the
    table must hold a single condition (several -> D361: pooling two experiments is never
    meant). Same resampling as :func:`bootstrap_tau` (same seed -> same draws for the same
    units). ``options`` (:class:`~ddpcore.stats.ResampleOptions`): ``n_boot`` (default
    10,000), ``seed``, ``indices``, ``threads``, ``nan_policy``, budget: the (n_boot, n_systems) result and
    the sums behind it (24 bytes per replicate and system) must fit ``max_memory`` (D362); time
    as in :func:`bootstrap_tau`. ``columns`` (:class:`~ddpcore.stats.TableColumns`) names the
    document, segment, system, condition and score columns.

    Returns
    -------
    BootstrapMeansResult
        ``replicates`` has shape (n_boot, n_systems), columns in ``systems`` order (sorted);
        NaN where a system has no rows among the drawn units.
    """
    exclude_systems = [exclude_systems] if isinstance(exclude_systems, str) else exclude_systems  # one name
    opts = check_options(options, func="bootstrap_system_means")
    n_boot, seed, indices = opts.n_boot_or(DEFAULT_N_BOOT), opts.seed, opts.indices
    cols = check_columns(columns, func="bootstrap_system_means")
    required = ["document", "system", "score"] + (["segment"] if unit == "segment" else [])
    if condition_value is not None:
        required.append("condition")
    df = load_ratings(table, cols, required, opts.nan_policy)
    if condition_value is None:
        check_single_condition(df, "condition_value=")
    conds = [condition_value] if condition_value is not None else []
    source = table_source(table)
    stats = _unit_stats(df, conds, unit, weighting, exclude_systems, source)
    _refuse_one_unit(stats.n_units, stats.unit_keys, unit, source, "the bootstrap of the system means",
                    "use a table with more resampling units")
    n_rep = (_check_indices(indices, opts.n_boot, stats.n_units).shape[0] if indices is not None
             else _budget.check_n_boot(n_boot))
    opts.budget(f"bootstrap_system_means ({stats.n_units:,} {unit}s)", time=False).check_memory(
        n_rep, 24.0 * stats.n_systems, fixed=3 * stats.values.nbytes + _block_bytes(stats.values.shape, n_rep))
    sums = resample_sums(stats.values, n_boot=n_boot, seed=seed, indices=indices, threads=opts.threads,
                         max_memory=opts.max_memory, max_seconds=opts.max_seconds)
    means = _means_from_sums(sums, 1, stats.n_systems)[:, 0, :]
    full = _means_from_sums(stats.values.sum(axis=0, keepdims=True), 1, stats.n_systems)[0, 0]
    user = indices is not None
    return BootstrapMeansResult(
        replicates=means,
        means=full,
        systems=stats.systems,
        n_boot=int(sums.shape[0]),
        seed=None if user else int(seed),
        unit=unit,
        n_units=stats.n_units,
        signature=signature(
            "bootstrap_system_means",
            condition=None if condition_value is None else str(condition_value),
            unit=unit,
            n_boot=int(sums.shape[0]),
            seed=None if user else int(seed),
            indices="user" if user else RNG_DESCRIPTION,
            weighting=weighting,
        ),
    )


def unit_keys(
    table: Any,
    *,
    unit: Unit = "document",
    conditions: Sequence[Any] = (),
    exclude_systems: Sequence[Any] = (),
    columns: TableColumns | None = None,
    nan_policy: Literal["raise", "omit"] = "raise",
) -> pl.DataFrame:
    """The resampling units in index order: row k is the unit that index value k names.

    Pass the same ``conditions`` (e.g. ``(condition_a, condition_b)``), ``exclude_systems``
    and ``columns`` as to :func:`bootstrap_tau`: units are those of the rows kept (an excluded
    system that is not in the table is D704, as there). Returns a
    DataFrame of shape (n_units, 1) (``document_id``) or (n_units, 2) (``document_id,
    segment_id``).
    """
    import polars as pl

    exclude_systems = [exclude_systems] if isinstance(exclude_systems, str) else exclude_systems  # one name
    cols = check_columns(columns, func="unit_keys")
    required = (["document"] + (["segment"] if unit == "segment" else []) + (["condition"] if conditions else [])
                + (["system"] if exclude_systems else []))
    df = load_ratings(table, cols, required, nan_policy)
    if exclude_systems:  # a misspelt name is D704, as in bootstrap_tau
        _check_excluded_systems(df[schema.SYSTEM].cast(pl.String).unique().to_list(), exclude_systems,
                                table_source(table))
        df = df.filter(~pl.col(schema.SYSTEM).cast(pl.String).is_in([str(s) for s in exclude_systems]))
    if conditions:
        check_conditions(df, conditions)
        df = df.filter(pl.col(schema.CONDITION).cast(pl.String).is_in([str(c) for c in conditions]))
    _, keys = factorize(df, _unit_columns(unit))
    return keys


__all__ = [
    "BootstrapTauResult",
    "BootstrapMeansResult",
    "bootstrap_tau",
    "bootstrap_system_means",
    "resample_sums",
    "resample_indices",
    "unit_keys",
    "RNG_DESCRIPTION",
]
