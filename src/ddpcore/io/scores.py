"""Reading a per-segment score table for ``ddp stratify``: a lazy polars scan of .parquet, .csv,
.tsv, .jsonl (.json and .gz are read eagerly), with the readers' quoting rules for CSV/TSV.

Error codes: D102 file not found, D103 (CSV/TSV that cannot be parsed, naming the line), D658 a
table that cannot be read.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DDPDataError

if TYPE_CHECKING:
    import polars as pl


def scan_scores(path: str | os.PathLike[str]) -> pl.LazyFrame:
    """A lazy scan of a score table (.parquet, .csv, .tsv, .jsonl; .json and .gz are read eagerly)."""
    import polars as pl

    from .tables import detect_format, read_table, scan_delimited_file

    p = Path(path)
    if not p.exists():
        raise DDPDataError(f"{p}: file not found; check the path", code="D102")
    fmt = detect_format(p)
    try:
        if p.suffix.lower() == ".gz" or fmt == "json":
            return read_table(p).lazy()
        if fmt == "parquet":
            return pl.scan_parquet(p)
        if fmt in ("csv", "tsv"):
            quoted = scan_delimited_file(p, fmt)  # the readers' quoting rules (TSV as CSV); D103 names the line
            return pl.scan_csv(p, separator="," if fmt == "csv" else "\t", infer_schema_length=10000,
                               quote_char='"' if quoted else None)
        return pl.scan_ndjson(p, infer_schema_length=10000)
    except DDPDataError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise DDPDataError(f"{p}: cannot read ({str(exc).splitlines()[0]})", code="D658") from None


def table_schema(lf: pl.LazyFrame, name: str) -> dict[str, Any]:
    """The column names and polars types of a lazy table; D658 naming ``name`` when it cannot be read."""
    try:
        return dict(lf.collect_schema())
    except Exception as exc:  # noqa: BLE001
        raise DDPDataError(f"{name}: cannot read ({str(exc).splitlines()[0]})", code="D658") from None


__all__ = ["scan_scores", "table_schema"]
