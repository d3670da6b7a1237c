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
        Timestamp column(s): numbers in seconds, or Date/Datetime values. Several columns
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

    frame = as_frame(actions)
    task_cols = [task] if isinstance(task, str) else list(task)
    time_cols = [time] if isinstance(time, str) else list(time)
    if not time_cols:
        raise DDPUsageError("give at least one timestamp column", code="D311")
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
        if dtype.is_temporal():
            return pl.col(col).cast(pl.Datetime("us")).dt.epoch("us").cast(pl.Float64) / 1e6
        if dtype.is_numeric():
            return pl.col(col).cast(pl.Float64)
        raise DDPDataError(f"timestamp column '{col}' must be numeric seconds or a Date/Datetime, got {dtype}", code="D317")

    stacked = pl.concat(
        [frame.select([*task_cols, seconds(c).alias("__t")]) for c in time_cols], how="vertical_relaxed"
    )
    bad = stacked["__t"].is_null() | stacked["__t"].is_nan() | stacked["__t"].is_infinite()
    if bad.any():
        raise DDPDataError(f"{int(bad.sum())} missing or non-finite timestamp(s); drop those actions first", code="D317")
    gaps = (
        stacked.sort([*task_cols, "__t"])
        .with_columns(pl.col("__t").diff().over(task_cols).alias("__gap"))
    )
    per_task = gaps.group_by(task_cols).agg(
        pl.len().alias("n_actions"),
        (pl.col("__gap") > max_gap).sum().alias("n_gaps_dropped"),
        pl.col("__gap").filter(pl.col("__gap") <= max_gap).sum().alias("active_seconds"),
    )
    if n_segments is not None:
        counts = frame.group_by(task_cols).agg(
            pl.col(n_segments).n_unique().alias("__distinct"), pl.col(n_segments).first().cast(pl.Float64).alias("n_segments")
        )
        if (counts["__distinct"] > 1).any():
            first = counts.filter(pl.col("__distinct") > 1).row(0, named=True)
            raise DDPDataError(
                f"task {', '.join(f'{c}={first[c]!r}' for c in task_cols)} has several values in '{n_segments}'", code="D317"
            )
        counts = counts.drop("__distinct")
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
