"""Inter-annotator agreement: Krippendorff's alpha, reliability matrices, z-normalisation.

Krippendorff's alpha is ``1 - D_o / D_e`` over the *pairable* values (values in units
that received at least two values; ``n`` of them in total, ``m_u`` in unit u):

* ``D_o = 1/n * sum_u 1/(m_u - 1) * sum_{i != j in u} delta(v_i, v_j)``
* ``D_e = 1/(n (n - 1)) * sum_{i != j, all pairable values} delta(v_i, v_j)``

For the **interval** metric ``delta = (a - b)^2`` both double sums collapse to sums of
squared deviations (``sum_{i != j} (v_i - v_j)^2 = 2 m SS``), so

    alpha = 1 - (n - 1) * sum_u [m_u SS_u / (m_u - 1)] / (n * SS_total)

with ``SS_u`` the squared deviations from the unit mean and ``SS_total`` those from the
grand mean of the pairable values: O(n) time and memory, no value-by-value coincidence
matrix, so it runs on continuous (e.g. z-normalised) scores where the ``krippendorff``
package builds a V x V matrix over the V distinct values. **Nominal** uses value counts
(``sum_{i != j} [v_i != v_j] = m^2 - sum_c m_c^2``), O(n log n). **Ratio**
(``delta = ((a - b)/(a + b))^2``) has no such decomposition: its expected disagreement is
summed over pairs of distinct values by a native O(V^2) loop with O(V) memory, allowed up
to ``RATIO_MAX_DISTINCT`` distinct values.

**Ordinal** (Krippendorff 2004, §11.3: ``delta(c, k) = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2``
over the value frequencies ``n_g`` of the pairable values) equals ``(M_k - M_c)^2`` with
``M_v = sum_{g<v} n_g + n_v / 2``, the midrank of value v among the pairable values (up to a
constant). So ordinal alpha is the interval formula applied to the midranks: O(n log n), no
V x V matrix (checked against the ``krippendorff`` package and R irr ``kripp.alpha``).

Undefined cases raise D314: no unit with two values, or all pairable values equal
(``D_e = 0``; the ``krippendorff`` package raises there too).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from ..signature import AsDict
from .. import schema
from .._native import load
from ..errors import DDPDataError, DDPUsageError
from .columns import free_name
from ._table import RATING_KEY, check_magnitude, check_unique_ratings, factorize, signature, table_source

if TYPE_CHECKING:
    import polars as pl

Level = Literal["interval", "nominal", "ratio", "ordinal"]
LEVELS = ("interval", "nominal", "ratio", "ordinal")
RATIO_MAX_DISTINCT = 200_000


@dataclasses.dataclass(frozen=True)
class AlphaResult(AsDict):
    """Krippendorff's alpha with the quantities it is made of."""

    alpha: float
    level: str
    d_observed: float
    d_expected: float
    n_coders: int
    n_units: int  # columns of the reliability matrix
    n_pairable_units: int  # units with >= 2 values
    n_pairable_values: int  # n in the formulas
    signature: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: what the caller must be told (``ddp stats alpha`` prints them): units that do not count, a single pairable
    #: unit (alpha 0 whatever the ratings), and the warnings of a :class:`ReliabilityData` input
    warnings: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class ReliabilityData:
    """A coders x units matrix (NaN = missing) with its row and column labels."""

    matrix: np.ndarray  # shape (n_coders, n_units)
    coders: list[Any]
    units: pl.DataFrame  # one row per column of ``matrix`` (the unit key columns)
    #: what the caller must be told: e.g. units whose coders averaged different segments
    warnings: tuple[str, ...] = ()


def rating_array(reliability_data: Any) -> np.ndarray:
    """The ratings of ``reliability_data`` (coders x units) as a float64 array, NaN for a missing rating,
    whatever holds them: a :class:`ReliabilityData`, a numpy array (a masked array's masked cells are missing,
    not their hidden values), a pandas DataFrame (nullable ``Float64``/``Int64`` columns: ``pd.NA`` is missing),
    a polars DataFrame or LazyFrame (null is missing), a pyarrow table or nested lists (None is missing).
    Anything else that is not numbers is D303."""
    data = reliability_data.matrix if isinstance(reliability_data, ReliabilityData) else reliability_data
    try:
        if isinstance(data, np.ma.MaskedArray):
            return np.ma.filled(data.astype(np.float64), np.nan)
        mod = type(data).__module__
        if mod.startswith("polars") and hasattr(data, "collect"):
            data = data.collect()
        if mod.startswith("pandas") and hasattr(data, "to_numpy"):
            return np.asarray(data.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)
        return np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        raise DDPDataError("reliability data must be numeric (NaN for missing ratings)", code="D303") from None


def krippendorff_alpha(reliability_data: npt.ArrayLike | ReliabilityData, level: Level = "interval") -> AlphaResult:
    """Krippendorff's alpha of a coders x units matrix.

    Parameters
    ----------
    reliability_data : array_like, shape (n_coders, n_units), or ReliabilityData
        Numeric ratings; NaN (or None) marks a missing rating. Same layout as
        ``krippendorff.alpha(reliability_data=...)``.
    level : {"interval", "nominal", "ratio", "ordinal"}
        Level of measurement (``level_of_measurement`` of the ``krippendorff`` package).
        ``"ordinal"`` ranks the pairable values (average ranks of ties) and applies the
        interval metric to the ranks (see the module docstring).
    """
    x = rating_array(reliability_data)
    if x.ndim != 2:
        raise DDPDataError(f"reliability data must be 2-D (coders x units), got shape {x.shape}", code="D314")
    if np.isinf(x).any():
        raise DDPDataError("reliability data contains infinite values", code="D312")
    check_magnitude(x, "reliability data")
    if level not in LEVELS:
        raise DDPUsageError(
            f"level must be 'interval', 'nominal', 'ratio' or 'ordinal', got {level!r} (--level)", code="D311"
        )
    n_coders, n_units = x.shape
    present = ~np.isnan(x)
    m_all = present.sum(axis=0)
    pairable = m_all >= 2
    if not pairable.any():
        raise DDPDataError(
            "Krippendorff's alpha is undefined: no unit has ratings from two or more coders "
            "(check the coder/unit columns; every unit needs at least two ratings to be pairable)",
            code="D314",
        )
    xp = x[:, pairable]
    mp = present[:, pairable]
    m = m_all[pairable].astype(np.float64)
    n = float(m.sum())
    tiny = tiny_scale(xp[mp]) if level == "interval" else 0
    if level == "interval":
        within, total = _interval_sums(np.ldexp(xp, tiny) if tiny else xp, mp, m, n)
    elif level == "ordinal":
        within, total = _interval_sums(ordinal_ranks(xp, mp), mp, m, n)
    elif level == "nominal":
        within, total = _nominal_sums(xp, mp, m, n)
    else:
        within, total = _ratio_sums(xp, mp, m)
    # within = sum_u 1/(m_u - 1) sum_{i != j} delta ; total = sum_{i != j} delta over all pairable values
    if total == 0.0:
        raise DDPDataError(
            "Krippendorff's alpha is undefined: all pairable ratings are identical (expected disagreement is 0)",
            code="D314",
        )
    d_o = float(np.ldexp(within / n, -2 * tiny))  # the scaled ratings' squared differences, scaled back
    d_e = float(np.ldexp(total / (n * (n - 1.0)), -2 * tiny))
    alpha = 1.0 - (n - 1.0) * within / total
    n_pairable = int(pairable.sum())
    warnings = list(reliability_data.warnings) if isinstance(reliability_data, ReliabilityData) else []
    if n_pairable < n_units:
        warnings.append(f"{n_units - n_pairable} of {n_units} units have fewer than two ratings and do not count "
                        "(alpha compares ratings within a unit); check the document/segment ids of the coders that "
                        "rated them")
    if n_pairable == 1:  # D_o and D_e are then the same sum: alpha = 0 whatever the ratings
        warnings.append("alpha rests on a single pairable unit: its observed and expected disagreement are then the "
                        "same pairs, so alpha is 0 whatever the ratings; it needs ratings of several units (check "
                        "--unit and the document/segment ids)")
    return AlphaResult(
        alpha=float(alpha),
        level=level,
        d_observed=float(d_o),
        d_expected=float(d_e),
        n_coders=int(n_coders),
        n_units=int(n_units),
        n_pairable_units=n_pairable,
        n_pairable_values=int(n),
        signature=signature("krippendorff_alpha", level=level),
        warnings=tuple(warnings),
    )


def ordinal_ranks(xp: np.ndarray, mp: np.ndarray) -> np.ndarray:
    """Average ranks (1-based) of the present values of ``xp`` among all present values.

    ``xp``, ``mp`` : shape (n_coders, n_units), values and presence mask. Returns an array of
    the same shape (NaN where absent): the ordinal metric's ``M_v`` plus 1/2.
    """
    values = xp[mp]
    distinct, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    midrank = np.cumsum(counts) - (counts - 1) / 2.0
    out = np.full(xp.shape, np.nan)
    out[mp] = midrank[inverse.reshape(-1)]
    return out


def tiny_scale(values: np.ndarray) -> int:
    """The power of two that brings ratings all below 2**-500 in magnitude to [0.5, 1) (0 otherwise): their
    squared differences would underflow (wrong alpha from 1e-160 on, D314 "all ratings identical" from 1e-200 on);
    the interval metric is scale-free, and scaling by a power of two is exact."""
    top = float(np.abs(values).max()) if values.size else 0.0
    return -math.frexp(top)[1] if 0.0 < top < 2.0 ** -500 else 0


def _interval_sums(xp: np.ndarray, mp: np.ndarray, m: np.ndarray, n: float) -> tuple[float, float]:
    # the metric is shift-invariant: centre on the median rating first, so that ratings that are all equal
    # give exactly 0 (D314, not a rounding-noise alpha) and ratings far from 0 (1e12 + small differences)
    # keep their digits in the means
    xp = xp - float(np.median(xp[mp]))
    vals = np.where(mp, xp, 0.0)
    unit_mean = vals.sum(axis=0) / m
    dev = np.where(mp, xp - unit_mean, 0.0)
    ss_u = np.einsum("ij,ij->j", dev, dev)
    grand = vals.sum() / n
    dev_all = np.where(mp, xp - grand, 0.0)
    ss_total = float(np.einsum("ij,ij->", dev_all, dev_all))
    within = float(np.sum(2.0 * m * ss_u / (m - 1.0)))
    return within, 2.0 * n * ss_total


def _nominal_sums(xp: np.ndarray, mp: np.ndarray, m: np.ndarray, n: float) -> tuple[float, float]:
    unit_idx = np.broadcast_to(np.arange(xp.shape[1]), xp.shape)[mp]
    values = xp[mp]
    _, value_code = np.unique(values, return_inverse=True)
    value_code = value_code.reshape(-1)
    # counts of each (unit, value) pair and of each value
    n_distinct = int(value_code.max()) + 1
    pair_code = unit_idx.astype(np.int64) * n_distinct + value_code
    pairs, pair_counts = np.unique(pair_code, return_counts=True)
    pair_unit = pairs // n_distinct
    sq_u = np.bincount(pair_unit, weights=pair_counts.astype(np.float64) ** 2, minlength=xp.shape[1])
    within = float(np.sum((m * m - sq_u) / (m - 1.0)))
    value_counts = np.bincount(value_code).astype(np.float64)
    return within, float(n * n - np.sum(value_counts**2))


def _ratio_sums(xp: np.ndarray, mp: np.ndarray, m: np.ndarray) -> tuple[float, float]:
    values = xp[mp]
    distinct, counts = np.unique(values, return_counts=True)
    if distinct.size > RATIO_MAX_DISTINCT:
        raise DDPUsageError(
            f"ratio-level alpha sums over pairs of distinct values; {distinct.size} distinct values exceed the limit "
            f"of {RATIO_MAX_DISTINCT} (use level='interval', or round the scores)",
            code="D314",
        )
    kernels = load("stats_kernels")
    total = float(kernels.ratio_pair_sum(np.ascontiguousarray(distinct), counts.astype(np.float64)))
    # within units: every ordered pair of values of the same unit, weighted by 1/(m_u - 1)
    within = 0.0
    coders = xp.shape[0]
    filled = np.where(mp, xp, np.nan)
    for i in range(coders):  # loop over coder pairs (a handful), each vectorised over units
        for j in range(coders):
            if i == j:
                continue
            a, b = filled[i], filled[j]
            ok = ~(np.isnan(a) | np.isnan(b))
            s = a[ok] + b[ok]
            d = np.divide(a[ok] - b[ok], s, out=np.zeros_like(s), where=s != 0)
            within += float(np.sum(d * d / (m[ok] - 1.0)))
    return within, total


# --------------------------------------------------------------------------- building the matrix


def reliability_matrix(
    df: Any,
    unit: str | Sequence[str] = (schema.DOCUMENT_ID, schema.SYSTEM),
    coder: str = schema.ANNOTATOR,
    score: str = schema.SCORE,
    aggregate: Literal["mean"] | None = "mean",
    *,
    source: str | None = None,
) -> ReliabilityData:
    """Coders x units matrix from a long table (paper Appendix B.4).

    Parameters
    ----------
    df
        Long table (frame or path) with the unit, coder and score columns.
    unit
        Columns identifying a unit of analysis: ``("document_id", "system")`` for the
        document level (each coder's segment scores averaged within the unit) or
        ``("document_id", "segment_id", "system")`` for the segment level.
    coder, score
        Annotator and score columns.
    aggregate
        ``"mean"``: several rows of one coder in one unit are averaged (a coder's segment
        scores within a document-level unit). ``None``: such repeats are an error (D307).
        Either way, when the frame has a ``segment_id`` column, one coder rating the same
        segment twice (the same unit, segment, coder [, annotator] [, condition] on two rows:
        a repeated row or an id typo) is an error (D307, naming the rows), never averaged.
        When the coder is not the annotator column (``coder="condition"``: two annotator
        pools as two coders) and the frame has an annotator column, several annotators of one
        coder rating the same segment are that coder rating it several times: D307 too
        (naming the annotators), never averaged into one rating.
    source
        How messages name the table (its path); default: the path when ``df`` is one, else
        ``<table>``.

    Returns
    -------
    ReliabilityData
        ``matrix`` of shape (n_coders, n_units) with NaN where a coder did not rate a unit;
        coders and units in sorted order.
    """
    import polars as pl

    from ._frames import as_frame

    if source is None:
        source = table_source(df)
    unit = [unit] if isinstance(unit, str) else list(unit)
    frame = as_frame(df, key_columns=[*unit, coder, schema.SEGMENT_ID, schema.ANNOTATOR, schema.CONDITION])
    for col in [*unit, coder, score]:
        if col not in frame.columns:
            raise DDPDataError(f"column '{col}' is missing; available columns: {', '.join(frame.columns)}", code="D301")
    if aggregate not in ("mean", None):
        raise DDPUsageError(f"aggregate must be 'mean' or None, got {aggregate!r}", code="D311")
    if not unit or len(set(unit)) < len(unit) or coder in unit or score in unit or score == coder:
        raise DDPUsageError(f"reliability_matrix needs at least one unit column, each named once, and coder and score "
                            f"columns that are not unit columns (unit={unit!r}, coder={coder!r}, score={score!r})",
                            code="D311")
    if schema.SEGMENT_ID in frame.columns:
        # one coder rating one segment twice (a row repeated, or an id typo) is refused, not averaged
        # (D307); `aggregate` only averages a coder's different segments within a document-level unit
        rating = {*unit, coder, schema.SEGMENT_ID} | {c for c in (schema.ANNOTATOR, schema.CONDITION) if c in frame.columns}
        check_unique_ratings(frame, source, keys=[c for c in RATING_KEY if c in rating] + sorted(rating - set(RATING_KEY)))
        if coder != schema.ANNOTATOR and schema.ANNOTATOR in frame.columns:
            _refuse_pooled_annotators(frame, source, sorted(rating - {schema.ANNOTATOR}), coder)
    segments = (frame.select(*unit, coder, schema.SEGMENT_ID)
                if schema.SEGMENT_ID in frame.columns and schema.SEGMENT_ID not in unit else None)
    warnings: tuple[str, ...] = ()
    value = free_name("__score", [*unit, coder])  # a unit or coder column named '__score' stays itself
    frame = frame.select([*unit, coder, pl.col(score).cast(pl.Float64, strict=False).alias(value)])
    bad = frame[value].is_null() | frame[value].is_nan()
    if bad.any():
        raise DDPDataError(
            f"row {int(bad.arg_true()[0]) + 1}: {int(bad.sum())} missing or non-numeric score(s) in '{score}'; "
            "drop them before computing agreement",
            code="D302",
        )
    if frame.height == 0:
        raise DDPDataError("the table has no rows", code="D309")
    keys = [coder, *unit]
    if aggregate is None:
        dup = frame.select(keys).is_duplicated()
        if dup.any():
            raise DDPDataError(
                f"{int(dup.sum())} rows repeat a (coder, unit) pair; pass aggregate='mean' to average them", code="D307"
            )
    else:
        warnings = _segment_set_warnings(segments, unit, coder) if segments is not None else ()
        frame = frame.group_by(keys).agg(pl.col(value).mean())
    coder_code, coder_keys = factorize(frame, [coder])
    unit_code, unit_keys = factorize(frame, unit)
    matrix = np.full((coder_keys.height, unit_keys.height), np.nan)
    matrix[coder_code, unit_code] = frame[value].to_numpy()
    return ReliabilityData(matrix=matrix, coders=coder_keys[coder].to_list(), units=unit_keys, warnings=warnings)


def _refuse_pooled_annotators(frame: pl.DataFrame, source: str, keys: list[str], coder: str) -> None:
    """D307 when, with a coder other than the annotator (e.g. ``coder="condition"``), several annotators
    of one coder rate the same segment of a unit: alpha takes one rating per coder and unit, so they would
    be averaged into one rating (the agreement of per-pool means, not of ratings). One vectorised
    ``is_duplicated`` pass; the message names the first such segment, its rows and annotators."""
    import polars as pl

    keys = [c for c in RATING_KEY if c in keys] + [c for c in keys if c not in RATING_KEY]
    dup = frame.select(keys).is_duplicated()
    if not dup.any():
        return
    first = int(dup.arg_true()[0])
    key = frame.select(keys).row(first, named=True)
    same = frame.with_row_index("__row").filter(pl.all_horizontal([pl.col(k) == key[k] for k in keys]))
    rows = (same["__row"] + 1).to_list()
    shown = ", ".join(map(str, rows[:5])) + (f" (and {len(rows) - 5} more)" if len(rows) > 5 else "")
    annotators = ", ".join(repr(a) for a in same[schema.ANNOTATOR].to_list()[:5])
    ident = ", ".join(f"{k}={key[k]!r}" for k in keys if k != coder)
    raise DDPDataError(
        f"{source}, rows {shown}: coder {coder}={key[coder]!r} rates ({ident}) {len(rows)} times, by annotators "
        f"{annotators} ({int(dup.sum())} rows share a coder and segment with another row); with the {coder} column "
        f"as the coder (--coder {coder}) each coder gives one rating per segment, and averaging its annotators "
        "would measure the agreement of pool means. Use --coder annotator --in COND for agreement within a pool, or "
        "keep one annotator per coder and segment", code="D307")


def _segment_set_warnings(segments: pl.DataFrame, unit: list[str], coder: str) -> tuple[str, ...]:
    """A unit whose coders averaged different sets of segments compares different text: count such
    units (the set of a coder is compared by its size and an order-free hash of its segment ids)."""
    import polars as pl

    per = (segments.group_by(*unit, coder)
           .agg(pl.len().alias("__n"), pl.col(schema.SEGMENT_ID).cast(pl.String).hash().sum().alias("__h")))
    differs = per.group_by(unit).agg((pl.struct("__n", "__h").n_unique() > 1).alias("__differs"))
    bad = differs.filter(pl.col("__differs"))
    if bad.height == 0:
        return ()
    first = bad.sort(unit).row(0, named=True)
    key = ", ".join(f"{c}={first[c]!r}" for c in unit)
    return (f"{bad.height} of {differs.height} units were rated on different segments by different coders (first: "
            f"{key}): each coder's mean covers other text there; rate the same segments or use --unit segment",)


def znormalize(
    df: Any,
    by: str | Sequence[str] = schema.ANNOTATOR,
    score: str = schema.SCORE,
    ddof: int = 0,
    on_constant: Literal["raise", "zero"] = "raise",
) -> pl.DataFrame:
    """Per-annotator z-normalisation: ``(score - mean) / sd`` within each ``by`` group.

    ``sd`` uses ``ddof`` (0 = population sd, as ``scipy.stats.zscore``). A group whose
    scores are all equal has sd 0: ``on_constant="raise"`` (default) raises D318 naming the
    group, ``"zero"`` maps its scores to 0. Returns the table with ``score`` replaced (Float64). A group value
    that is null, or NaN in a float column, makes one group (the same for a pandas, polars or pyarrow table).
    """
    import polars as pl

    from ._frames import as_frame

    by = [by] if isinstance(by, str) else list(by)
    frame = as_frame(df, key_columns=by)
    if not by:
        raise DDPUsageError("znormalize needs at least one group column (by=, e.g. 'annotator')", code="D311")
    for col in [*by, score]:
        if col not in frame.columns:
            raise DDPDataError(f"column '{col}' is missing; available columns: {', '.join(frame.columns)}", code="D301")
    if on_constant not in ("raise", "zero"):
        raise DDPUsageError(f"on_constant must be 'raise' or 'zero', got {on_constant!r}", code="D311")
    values = frame[score].cast(pl.Float64, strict=False)
    bad = values.is_null() & frame[score].is_not_null()
    if bad.any():  # text that is no number (a strict cast raised polars' InvalidOperationError)
        row = int(bad.arg_true()[0])
        raise DDPDataError(f"row {row + 1}, column '{score}': score {frame[score][row]!r} is not a number (column "
                           f"type {frame.schema[score]}); the score column must be numeric", code="D303")
    # names of the helper columns that no input column has (an input column '__mean' was overwritten, then dropped)
    mean_col, sd_col = (free_name(base, frame.columns) for base in ("__mean", "__sd"))
    s = pl.col(score)
    # a NaN of a float group column is null, one group with the nulls, whatever the container (pandas hands its
    # NaN over as null, polars and pyarrow keep it)
    keys = [pl.col(c).fill_nan(None) if frame.schema[c].is_float() else pl.col(c) for c in by]
    out = frame.with_columns(values.alias(score)).with_columns(s.mean().over(keys).alias(mean_col),
                                                              s.std(ddof=ddof).over(keys).alias(sd_col))
    if out[score].is_null().any() or out[score].is_nan().any():
        raise DDPDataError(f"column '{score}' has missing values; drop them before z-normalising", code="D302")
    const = out[sd_col].is_null() | (out[sd_col] == 0)
    if const.any():
        if on_constant == "raise":
            first = out.filter(const).row(0, named=True)
            group = ", ".join(f"{c}={first[c]!r}" for c in by)
            raise DDPDataError(
                f"cannot z-normalise {group}: its scores have zero spread (or a single score); "
                "drop it or pass on_constant='zero'",
                code="D318",
            )
    z = pl.when(const).then(0.0).otherwise((pl.col(score) - pl.col(mean_col)) / pl.col(sd_col))
    return out.with_columns(pl.Series(score, out.select(z).to_series())).drop([mean_col, sd_col])



__all__ = ["AlphaResult", "ReliabilityData", "krippendorff_alpha", "ordinal_ranks", "LEVELS", "reliability_matrix", "znormalize", "RATIO_MAX_DISTINCT"]
