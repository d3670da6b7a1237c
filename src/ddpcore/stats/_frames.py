"""The one place where a statistics function turns its ``table`` argument into a polars frame.

Statistics functions work on tables. For convenience the public ones also accept a path; that
path is read by the io layer (:func:`ddpcore.io.tables.read_table`: CSV/TSV/JSONL/JSON/Parquet,
``.gz`` text), never by the statistics modules themselves. Every statistics module calls
:func:`as_frame` instead of importing a reader, so the dependency on ``ddpcore.io`` sits here.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl


def as_frame(table: Any, *, name: str | None = None, key_columns: Sequence[str | None] = ()) -> pl.DataFrame:
    """``table`` as a polars DataFrame, shape (n_rows, n_columns).

    Parameters
    ----------
    table
        polars DataFrame/LazyFrame, pandas DataFrame, pyarrow Table, or a path (read by
        :func:`ddpcore.io.tables.read_table`).
    name
        How messages refer to an in-memory table.
    key_columns
        The id columns of the table (documents, segments, systems...; ``None`` entries are skipped): in a
        CSV/TSV file, a column of them that polars would read as decimals is read as text, as written, so that
        ids ``1.5`` and ``1.50`` stay two documents (as they are in an in-memory table of strings) instead of
        becoming one number (:func:`ddpcore.io.tables.read_table`).

    Raises
    ------
    DDPUsageError
        D105 for any other type; the reader's D10x errors for an unreadable file.
    """
    from ..io.tables import read_table

    return read_table(table, name=name, key_columns=tuple(c for c in key_columns if isinstance(c, str)))


__all__ = ["as_frame"]
