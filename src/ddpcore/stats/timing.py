"""Per-segment annotation time (paper Appendix B.4).

The active time of a task is the sum of the gaps between its consecutive annotation
actions (timestamps sorted within the task), leaving out gaps longer than ``max_gap``
seconds (120 s by default; treated as inactive periods, a gap of exactly ``max_gap`` is
kept). Per-segment time is the active time divided by the number of segments in the task.
Everything is computed with polars expressions over the whole table (no loop per task).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import DDPDataError, DDPUsageError
from .columns import free_name


#: the columns :func:`annotation_time_per_segment` adds after the task columns
OUTPUT_COLUMNS = ("n_actions", "n_gaps_dropped", "active_seconds", "n_segments", "seconds_per_segment")


def annotation_time_per_segment(
    actions: Any,
    *,
    task: str | Sequence[str] = "task_id",
    time: str | Sequence[str] = "timestamp",
    segment: str | None = "segment_id",
    n_segments: str | None = None,
    max_gap: float = 120.0,
) -> Any:
    """Active annotation seconds per segment for every task.

    Parameters
    ----------
    actions
        Table (frame or path) with one row per annotation action, or per annotated item.
    task
        Column(s) identifying a task (e.g. ``["annotator", "batch_id"]``).
    time
        Timestamp column(s): numbers in seconds, Date/Datetime values, or Durations (time since a start,
        e.g. a pandas timedelta column; a time of day without a date is D317). Several columns
        (e.g. ``["start_time", "end_time"]`` of an Appraise export) are all treated as
        actions of the row's task.
    segment
        Column whose distinct values within a task count the task's segments. Ignored
        when ``n_segments`` is given.
    n_segments
        Column holding the number of segments of the task (must be constant within a task).
    max_gap
        Gaps longer than this many seconds are dropped.

    Returns
    -------
    polars.DataFrame
        One row per task (sorted by the task columns): ``n_actions``, ``n_gaps_dropped``,
        ``active_seconds``, ``n_segments``, ``seconds_per_segment``.
    """
    import polars as pl

    from ._frames import as_frame

    task_cols = [task] if isinstance(task, str) else list(task)
    frame = as_frame(actions, key_columns=[*task_cols, segment])
    time_cols = [time] if isinstance(time, str) else list(time)
    if not time_cols:
        raise DDPUsageError("give at least one timestamp column", code="D311")
    if not task_cols:
        raise DDPUsageError("give at least one task column (task=, e.g. 'task_id')", code="D311")
    for what, cols in (("task", task_cols), ("time", time_cols)):
        twice = sorted({c for c in cols if cols.count(c) > 1})
        if twice:  # a timestamp column twice counted every action twice
            raise DDPUsageError(f"{what}= names the column {twice[0]!r} twice; give each column once", code="D311")
    taken = [c for c in task_cols if c in OUTPUT_COLUMNS]
    if taken:  # the result's column of that name would replace the task column (polars: DuplicateError)
        raise DDPUsageError(f"task column {taken[0]!r} has the name of a column the result adds "
                            f"({', '.join(OUTPUT_COLUMNS)}); rename the column in the table first", code="D311")
    if not max_gap > 0:
        raise DDPUsageError(f"max_gap must be positive, got {max_gap}", code="D311")
    count_col = n_segments if n_segments is not None else segment
    if count_col is None:
        raise DDPUsageError("give segment (a column to count) or n_segments (a column with the count)", code="D311")
    for col in [*task_cols, *time_cols, count_col]:
        if col not in frame.columns:
            raise DDPDataError(f"column '{col}' is missing; available columns: {', '.join(frame.columns)}", code="D301")
    if frame.height == 0:
        raise DDPDataError("the table has no rows", code="D309")

    def seconds(col: str) -> pl.Expr:
        dtype = frame.schema[col]
        if dtype == pl.Duration:  # time since the start (a pandas timedelta): its seconds
            return pl.col(col).dt.total_microseconds().cast(pl.Float64) / 1e6
        if dtype == pl.Time:  # a time of day is no point in time (a task over midnight would run backwards)
            raise DDPDataError(f"timestamp column '{col}' holds times of day (Time) without a date; combine them "
                               "with the date into a Datetime column (or give seconds)", code="D317")
        if dtype.is_temporal():
            return pl.col(col).cast(pl.Datetime("us")).dt.epoch("us").cast(pl.Float64) / 1e6
        if dtype.is_numeric():
            return pl.col(col).cast(pl.Float64)
        raise DDPDataError(f"timestamp column '{col}' must be numeric seconds, a Date/Datetime or a Duration, got "
                           f"{dtype}", code="D317")

    t, gap, distinct = (free_name(base, frame.columns) for base in ("__t", "__gap", "__distinct"))
    stacked = pl.concat(
        [frame.select([*task_cols, seconds(c).alias(t)]) for c in time_cols], how="vertical_relaxed"
    )
    bad = stacked[t].is_null() | stacked[t].is_nan() | stacked[t].is_infinite()
    if bad.any():
        raise DDPDataError(f"{int(bad.sum())} missing or non-finite timestamp(s); drop those actions first", code="D317")
    gaps = (
        stacked.sort([*task_cols, t])
        .with_columns(pl.col(t).diff().over(task_cols).alias(gap))
    )
    per_task = gaps.group_by(task_cols).agg(
        pl.len().alias("n_actions"),
        (pl.col(gap) > max_gap).sum().alias("n_gaps_dropped"),
        pl.col(gap).filter(pl.col(gap) <= max_gap).sum().alias("active_seconds"),
    )
    if n_segments is not None:
        counts = frame.group_by(task_cols).agg(
            pl.col(n_segments).n_unique().alias(distinct), pl.col(n_segments).first().cast(pl.Float64).alias("n_segments")
        )
        if (counts[distinct] > 1).any():
            first = counts.filter(pl.col(distinct) > 1).row(0, named=True)
            raise DDPDataError(
                f"task {', '.join(f'{c}={first[c]!r}' for c in task_cols)} has several values in '{n_segments}'", code="D317"
            )
        counts = counts.drop(distinct)
    else:
        counts = frame.group_by(task_cols).agg(pl.col(segment).n_unique().cast(pl.Float64).alias("n_segments"))
    out = per_task.join(counts, on=task_cols, how="left").sort(task_cols)
    if (out["n_segments"] <= 0).any():
        raise DDPDataError("a task has zero segments", code="D317")
    return out.with_columns(
        pl.col("active_seconds").fill_null(0.0),
        (pl.col("active_seconds").fill_null(0.0) / pl.col("n_segments")).alias("seconds_per_segment"),
    )


__all__ = ["annotation_time_per_segment"]
