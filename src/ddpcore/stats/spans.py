"""Error-span and score-recoverability statistics of the paper (Sections 5.3-5.4, B.3).

* :func:`score_recoverability_r2` -- OLS R^2 of a document-level condition's scores on the
  SEG scores, matched by (document_id, system); :func:`ols_r2` is the plain regression.
* :func:`errors_per_1000_chars` -- error counts per 1,000 target characters, characters
  counted as Unicode code points after NFC normalisation.
* :func:`error_free_rate` -- share of annotations without errors (or with the maximum score).
* :func:`boundary_span_rate` -- share of spans whose midpoint lies in the first or last
  20 % of the segment: position ``((start + end) / 2) / segment_length`` in ``[0, 0.2)``
  or ``(0.8, 1]``.
* :func:`boundary_rate_difference` -- difference of that rate between two conditions with
  a segment-bootstrap percentile CI (segments resampled jointly for both conditions, the
  same generator and kernel as :mod:`ddpcore.stats.bootstrap`).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..signature import AsDict
from .. import schema
from ..errors import DDPDataError, DDPUsageError
from ._table import result_to_dict, factorize, load_long_table, signature
from .columns import TableColumns, check_columns
from .options import ResampleOptions, check_options

BOUNDARY_LOW = 0.2
BOUNDARY_HIGH = 0.8


# --------------------------------------------------------------------------- recoverability


@dataclasses.dataclass(frozen=True)
class RegressionResult(AsDict):
    """Simple OLS fit ``y = intercept + slope * x``."""

    r2: float
    r: float  # Pearson r (sign of the slope)
    slope: float
    intercept: float
    n: int
    signature: dict[str, Any] = dataclasses.field(default_factory=dict)


def ols_r2(x: npt.ArrayLike, y: npt.ArrayLike) -> RegressionResult:
    """Least-squares line of ``y`` on ``x`` with intercept; R^2 = 1 - SS_res / SS_tot.

    Parameters
    ----------
    x, y : array_like, shape (n,), n >= 3, finite, ``x`` not constant.
    """
    xa = np.asarray(x, dtype=np.float64)
    ya = np.asarray(y, dtype=np.float64)
    if xa.ndim != 1 or xa.shape != ya.shape:
        raise DDPDataError(f"x and y must be 1-D of equal length, got {xa.shape} and {ya.shape}", code="D308")
    if xa.size < 3:
        raise DDPDataError(f"a regression needs at least 3 pairs, got {xa.size}", code="D309")
    if not (np.isfinite(xa).all() and np.isfinite(ya).all()):
        raise DDPDataError("regression inputs must be finite (no NaN/inf)", code="D302")
    xm, ym = xa - xa.mean(), ya - ya.mean()
    sxx = float(xm @ xm)
    syy = float(ym @ ym)
    if sxx == 0.0:
        raise DDPDataError("the predictor is constant; R^2 is undefined", code="D314")
    slope = float(xm @ ym) / sxx
    intercept = float(ya.mean() - slope * xa.mean())
    resid = ya - (intercept + slope * xa)
    r2 = 1.0 - float(resid @ resid) / syy if syy > 0 else float("nan")
    r = float(np.sign(slope) * np.sqrt(max(r2, 0.0))) if syy > 0 else float("nan")
    return RegressionResult(r2, r, slope, intercept, int(xa.size), signature("ols_r2"))


@dataclasses.dataclass(frozen=True)
class RecoverabilityResult(AsDict):
    """R^2 of the target condition's unit scores regressed on the predictor condition's."""

    r2: float
    r: float
    slope: float
    intercept: float
    n: int  # matched units
    predictor: Any
    target: Any
    unit: list[str]
    n_unmatched: int
    signature: dict[str, Any] = dataclasses.field(default_factory=dict)


def score_recoverability_r2(
    table: Any,
    predictor: Any = "SEG",
    target: Any = "DOC",
    *,
    unit: Sequence[str] = (schema.DOCUMENT_ID, schema.SYSTEM),
    columns: TableColumns | None = None,
) -> RecoverabilityResult:
    """How much of a condition's unit-level scores the isolated-segment scores explain.

    Each condition's score of a unit (default ``(document_id, system)``) is the mean of its
    rows (segments x annotators); units scored under both conditions are matched and the
    ``target`` scores are regressed on the ``predictor`` scores by OLS (paper Section 5.4:
    SEG -> MIX R^2 = 0.52, SEG -> DOC 0.20). ``unit`` uses canonical column names; ``columns``
    (:class:`~ddpcore.stats.TableColumns`) names the table's columns.
    """
    import polars as pl

    cols = check_columns(columns, func="score_recoverability_r2")
    df = load_long_table(table, columns=cols.replace(annotator=None),
                         required=["document", "system", "condition", "score"])
    unit = list(unit)
    for col in unit:
        if col not in df.columns:
            raise DDPDataError(f"unit column '{col}' is missing; available: {', '.join(df.columns)}", code="D301")
    cond = pl.col(schema.CONDITION).cast(pl.String)
    parts = []
    for name, label in ((predictor, "__x"), (target, "__y")):
        part = df.filter(cond == str(name)).group_by(unit).agg(pl.col(schema.SCORE).mean().alias(label))
        if part.height == 0:
            raise DDPDataError(f"condition {name!r} has no rows", code="D305")
        parts.append(part)
    # sorted as factorize sorts keys (an Enum by its text, not by its categories' order), so the regression sums
    # run in one order whatever the column type
    joined = parts[0].join(parts[1], on=unit, how="inner").sort(
        [pl.col(c).cast(pl.String) if isinstance(df.schema[c], pl.Enum) else pl.col(c) for c in unit])
    n_unmatched = parts[0].height + parts[1].height - 2 * joined.height
    fit = ols_r2(joined["__x"].to_numpy(), joined["__y"].to_numpy())
    return RecoverabilityResult(
        r2=fit.r2, r=fit.r, slope=fit.slope, intercept=fit.intercept, n=fit.n,
        predictor=predictor, target=target, unit=unit, n_unmatched=n_unmatched,
        signature=signature("score_recoverability_r2", predictor=str(predictor), target=str(target), unit=unit),
    )


# --------------------------------------------------------------------------- error counts


def errors_per_1000_chars(n_errors: npt.ArrayLike, text: Any) -> npt.NDArray[np.float64]:
    """Per-annotation error rate: ``1000 * n_errors / len(NFC(text))``.

    Parameters
    ----------
    n_errors : array_like, shape (n,)
        Error (span) counts per annotation.
    text : sequence of str or polars Series, shape (n,)
        The annotated target text; length counted in code points after NFC normalisation
        (vectorised with polars).

    Returns
    -------
    numpy.ndarray, shape (n,)
        Errors per 1,000 characters. An empty text raises D316.
    """
    import polars as pl

    counts = np.asarray(n_errors, dtype=np.float64)
    texts = text if isinstance(text, pl.Series) else pl.Series("text", list(text), dtype=pl.String)
    if counts.ndim != 1 or counts.size != texts.len():
        raise DDPDataError(f"n_errors and text must have the same length, got {counts.size} and {texts.len()}", code="D308")
    if texts.null_count():
        raise DDPDataError(f"text row {int(texts.is_null().arg_true()[0]) + 1} is missing", code="D316")
    if not np.isfinite(counts).all() or (counts < 0).any():
        raise DDPDataError("error counts must be finite and non-negative", code="D316")
    length = texts.str.normalize("NFC").str.len_chars().cast(pl.Float64).to_numpy()
    if (length == 0).any():
        raise DDPDataError(
            f"text row {int(np.flatnonzero(length == 0)[0]) + 1} is empty; errors per character are undefined", code="D316"
        )
    return 1000.0 * counts / length


@dataclasses.dataclass(frozen=True)
class RateResult(AsDict):
    """A proportion ``n_hits / n``."""

    rate: float
    n_hits: int
    n: int
    signature: dict[str, Any] = dataclasses.field(default_factory=dict)


def error_free_rate(
    n_errors: npt.ArrayLike | None = None, *, scores: npt.ArrayLike | None = None, max_score: float = 100.0
) -> RateResult:
    """Share of error-free annotations: ``n_errors == 0``, or ``scores == max_score``.

    Give exactly one of ``n_errors`` (span counts) or ``scores`` (the paper counts an ESA
    score of 100 as error-free).
    """
    if (n_errors is None) == (scores is None):
        raise DDPUsageError("give exactly one of n_errors or scores", code="D311")
    values = np.asarray(n_errors if n_errors is not None else scores, dtype=np.float64)
    if values.size == 0:
        raise DDPDataError("no annotations", code="D309")
    if np.isnan(values).any():
        raise DDPDataError("missing values in error counts/scores", code="D302")
    hits = values == 0 if n_errors is not None else values == float(max_score)
    rule = "n_errors == 0" if n_errors is not None else f"score == {float(max_score)}"
    return RateResult(float(hits.mean()), int(hits.sum()), int(values.size), signature("error_free_rate", rule=rule))


# --------------------------------------------------------------------------- span positions


def _span_positions(
    span_start: npt.ArrayLike, span_end: npt.ArrayLike, segment_length: npt.ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    """(is_boundary, is_zero_width) per span after validating offsets (code points)."""
    start = np.asarray(span_start, dtype=np.float64)
    end = np.asarray(span_end, dtype=np.float64)
    length = np.asarray(segment_length, dtype=np.float64)
    if not (start.shape == end.shape == length.shape) or start.ndim != 1:
        raise DDPDataError(
            f"span_start, span_end and segment_length must be 1-D of equal length, got {start.shape}, {end.shape}, {length.shape}",
            code="D308",
        )
    checks = (
        (~(np.isfinite(start) & np.isfinite(end) & np.isfinite(length)), "missing or non-finite offset"),
        (length <= 0, "segment length must be positive"),
        (start < 0, "span starts before the segment"),
        (end < start, "span ends before it starts"),
        (end > length, "span ends after the segment"),
    )
    for bad, what in checks:
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DDPDataError(
                f"span {i}: {what} (start={start[i]}, end={end[i]}, segment_length={length[i]}); "
                "offsets are code points into the segment, 0 <= start <= end <= length",
                code="D316",
            )
    pos = (start + end) / 2.0 / length
    return (pos < BOUNDARY_LOW) | (pos > BOUNDARY_HIGH), end == start


@dataclasses.dataclass(frozen=True)
class BoundaryRateResult(AsDict):
    """Share of spans whose midpoint lies in the first or last 20 % of the segment."""

    rate: float
    n_boundary: int
    n_spans: int
    signature: dict[str, Any] = dataclasses.field(default_factory=dict)


def boundary_span_rate(
    span_start: npt.ArrayLike,
    span_end: npt.ArrayLike,
    segment_length: npt.ArrayLike,
    *,
    exclude_zero_width: bool = False,
) -> BoundaryRateResult:
    """Boundary-localised span rate (paper Appendix B.3).

    Parameters
    ----------
    span_start, span_end : array_like, shape (n_spans,)
        Character offsets (code points) of each span within its segment, end exclusive.
    segment_length : array_like, shape (n_spans,)
        Length of each span's segment (code points).
    exclude_zero_width
        Leave out zero-width spans (omission markers), robustness variant (i) of the paper.
    """
    boundary, zero = _span_positions(span_start, span_end, segment_length)
    if exclude_zero_width:
        boundary = boundary[~zero]
    if boundary.size == 0:
        raise DDPDataError("no spans to rate", code="D309")
    return BoundaryRateResult(
        float(boundary.mean()), int(boundary.sum()), int(boundary.size),
        signature("boundary_span_rate", low=BOUNDARY_LOW, high=BOUNDARY_HIGH, exclude_zero_width=exclude_zero_width),
    )


@dataclasses.dataclass(frozen=True)
class BoundaryDifferenceResult:
    """``rate_a - rate_b`` with a segment-bootstrap percentile interval."""

    difference: float
    ci_low: float
    ci_high: float
    rate_a: float
    rate_b: float
    n_spans_a: int
    n_spans_b: int
    n_units: int
    n_boot: int
    seed: int
    confidence: float
    n_undefined: int
    replicates: np.ndarray = dataclasses.field(repr=False)
    signature: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_dict(self, include_replicates: bool = False) -> dict[str, Any]:
        return result_to_dict(self, include_replicates)


def boundary_rate_difference(
    df_a: Any,
    df_b: Any,
    *,
    unit: Sequence[str] = (schema.DOCUMENT_ID, schema.SEGMENT_ID),
    span_start: str = "span_start",
    span_end: str = "span_end",
    segment_length: str = "segment_length",
    confidence: float = 0.95,
    exclude_zero_width: bool = False,
    options: ResampleOptions | None = None,
) -> BoundaryDifferenceResult:
    """Difference of boundary-localised span rates between conditions a and b, with CI.

    Parameters
    ----------
    df_a, df_b
        Span tables (frame or path), one row per error span, with the ``unit`` key columns
        and the offset columns. A segment without spans simply has no rows.
    confidence
        Percentile interval level (``numpy.percentile``, linear).
    options
        :class:`~ddpcore.stats.ResampleOptions` of the segment bootstrap: ``n_boot`` (default
        10,000), ``seed``, ``threads`` and the budget (D362 / D363, see
        :mod:`ddpcore.stats.budget`). The units (distinct ``unit`` keys of both tables, sorted)
        are resampled with replacement, the same draw for both conditions; the replicate
        difference is ``sum(boundary_a)/sum(spans_a) - sum(boundary_b)/sum(spans_b)`` over the
        drawn units (generator: see :mod:`ddpcore.stats.bootstrap`). ``nan_policy`` and
        ``indices`` do not apply.
    """
    from .bootstrap import RNG_DESCRIPTION, resample_sums

    opts = check_options(options, func="boundary_rate_difference")
    n_boot, seed = opts.n_boot_or(10_000), opts.seed
    if not 0.0 < float(confidence) < 1.0:
        raise DDPUsageError(f"confidence must be in (0, 1), got {confidence}", code="D311")
    unit = list(unit)
    values, n_a, n_b = _span_unit_values(df_a, df_b, unit, (span_start, span_end, segment_length), exclude_zero_width)
    totals = values.sum(axis=0)
    rate_a, rate_b = totals[0] / totals[1], totals[2] / totals[3]
    sums = resample_sums(values, n_boot=n_boot, seed=seed, threads=opts.threads, max_memory=opts.max_memory,
                         max_seconds=opts.max_seconds)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = sums[:, 0] / sums[:, 1] - sums[:, 2] / sums[:, 3]
    ok = np.isfinite(reps)
    lo_q, hi_q = round(50 * (1 - confidence), 10), round(50 * (1 + confidence), 10)  # 2.5, 97.5 exactly
    ci_low, ci_high = (float(v) for v in np.percentile(reps[ok], [lo_q, hi_q])) if ok.any() else (float("nan"),) * 2
    return BoundaryDifferenceResult(
        difference=float(rate_a - rate_b),
        ci_low=ci_low,
        ci_high=ci_high,
        rate_a=float(rate_a),
        rate_b=float(rate_b),
        n_spans_a=n_a,
        n_spans_b=n_b,
        n_units=values.shape[0],
        n_boot=int(n_boot),
        seed=int(seed),
        confidence=float(confidence),
        n_undefined=int((~ok).sum()),
        replicates=reps,
        signature=signature(
            "boundary_rate_difference", unit=unit, n_boot=int(n_boot), seed=int(seed), indices=RNG_DESCRIPTION,
            confidence=float(confidence), exclude_zero_width=exclude_zero_width, low=BOUNDARY_LOW, high=BOUNDARY_HIGH,
        ),
    )


def _span_unit_values(df_a: Any, df_b: Any, unit: list[str], offsets: tuple[str, str, str],
                      exclude_zero_width: bool) -> tuple[np.ndarray, int, int]:
    """Per unit (sorted keys), shape (n_units, 4): boundary spans a, spans a, boundary spans b, spans b;
    and the span counts of a and b."""
    import polars as pl

    from ._frames import as_frame

    span_start, span_end, segment_length = offsets
    frames = []
    for label, df in (("a", df_a), ("b", df_b)):
        frame = as_frame(df, key_columns=unit)
        for col in [*unit, span_start, span_end, segment_length]:
            if col not in frame.columns:
                raise DDPDataError(
                    f"span table {label}: column '{col}' is missing; available: {', '.join(frame.columns)}", code="D301"
                )
        boundary, zero = _span_positions(frame[span_start].to_numpy(), frame[span_end].to_numpy(), frame[segment_length].to_numpy())
        keep = ~zero if exclude_zero_width else np.ones(boundary.size, dtype=bool)
        frames.append(
            frame.select(unit).with_columns(
                pl.Series("__boundary", boundary.astype(np.float64)), pl.Series("__keep", keep), pl.lit(label).alias("__side")
            ).filter(pl.col("__keep"))
        )
    both = pl.concat(frames, how="vertical_relaxed")
    n_a = int((both["__side"] == "a").sum())
    n_b = int((both["__side"] == "b").sum())
    if n_a == 0 or n_b == 0:
        raise DDPDataError(f"both conditions need spans (a: {n_a}, b: {n_b})", code="D309")
    code, keys = factorize(both, unit)
    is_b = (both["__side"] == "b").to_numpy()
    b = both["__boundary"].to_numpy()
    values = np.empty((keys.height, 4))  # per unit: boundary spans a, spans a, boundary spans b, spans b
    for col, side in ((0, ~is_b), (2, is_b)):
        values[:, col] = np.bincount(code[side], weights=b[side], minlength=keys.height)
        values[:, col + 1] = np.bincount(code[side], minlength=keys.height)
    return values, n_a, n_b


__all__ = [
    "RegressionResult",
    "RecoverabilityResult",
    "RateResult",
    "BoundaryRateResult",
    "BoundaryDifferenceResult",
    "ols_r2",
    "score_recoverability_r2",
    "errors_per_1000_chars",
    "error_free_rate",
    "boundary_span_rate",
    "boundary_rate_difference",
]
