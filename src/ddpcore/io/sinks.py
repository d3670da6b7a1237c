"""Output sinks: the writers that put a table into a file (or stdout) piece by piece.

:class:`Sink` writes one output table in any of the output formats (Parquet row groups, CSV/TSV,
JSONL, JSON; gzip for text formats) with the run signature in the Parquet metadata;
:func:`write_part` writes one batch part of a journaled run atomically. Used by the engines
(:mod:`ddpcore.engines.run`, :mod:`ddpcore.engines.ray_engine`, :mod:`ddpcore.engines.merge`).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl


def write_part(path: Path, df: pl.DataFrame) -> str:
    """Write ``df`` to the Parquet file ``path`` through a temporary file renamed into place (a part is whole or absent);
    returns the BLAKE2b (16 bytes, hex) of the file's bytes, for a resumed run to check them."""
    import hashlib
    import io

    tmp = path.with_name(path.name + ".tmp")
    buf = io.BytesIO()  # encoded in memory, written by Python: a full disk is an OSError with its errno and file
    df.write_parquet(buf, row_group_size=20_000)  # (polars writing to a path loses both, or says "Invalid thrift")
    try:
        tmp.write_bytes(buf.getbuffer())
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return hashlib.blake2b(buf.getbuffer(), digest_size=16).hexdigest()


class Sink:
    """Writes one output table piece by piece (Parquet row groups, or appended text)."""

    def __init__(self, fh_or_path: Any, fmt: str, *, gzip_: bool, metadata: dict[str, str]) -> None:
        from .tables import GzipOutput

        self.fmt = fmt
        self.metadata = metadata
        self._writer: Any = None
        self._schema: Any = None
        self._rows = 0
        self._path = fh_or_path if isinstance(fh_or_path, Path) else None
        if fmt == "parquet":
            self._fh = None
        elif self._path is not None:
            self._fh = GzipOutput(self._path) if gzip_ else open(self._path, "wb")
        else:
            self._fh = fh_or_path
        if fmt == "json" and self._fh is not None:
            self._fh.write(b"[")

    @property
    def path(self) -> Path | None:
        """The file written (None: a stream such as stdout); complete once :meth:`close` returned."""
        return self._path

    def write(self, df: pl.DataFrame) -> None:
        if self._schema is None:
            self._schema = df.schema
        elif df.schema != self._schema:
            df = df.cast(self._schema)  # type: ignore[arg-type]
        if self.fmt == "parquet":
            import pyarrow.parquet as pq

            table = df.to_arrow()
            if self._writer is None:
                meta = {**(table.schema.metadata or {}), **{k.encode(): v.encode() for k, v in self.metadata.items()}}
                self._writer = pq.ParquetWriter(self._path, table.schema.with_metadata(meta))
            self._writer.write_table(table.replace_schema_metadata(self._writer.schema.metadata))
        elif self.fmt in ("csv", "tsv"):
            df.write_csv(self._fh, separator="," if self.fmt == "csv" else "\t", include_header=self._rows == 0)
        elif self.fmt == "jsonl":
            df.write_ndjson(self._fh)
        else:
            if df.height:
                body = df.write_json().strip()
                body = body[1:-1] if body.startswith("[") else body
                if body:
                    self._fh.write((("," if self._rows else "") + body).encode())
        self._rows += df.height

    def close(self, empty_schema: Any = None) -> None:
        if self.fmt == "parquet":
            if self._writer is None and empty_schema is not None:
                import polars as pl

                self.write(pl.DataFrame(schema=empty_schema))
            if self._writer is not None:
                self._writer.close()
            return
        if self.fmt in ("csv", "tsv") and self._rows == 0 and empty_schema is not None:
            import polars as pl

            pl.DataFrame(schema=empty_schema).write_csv(self._fh, separator="," if self.fmt == "csv" else "\t")
        if self.fmt == "json":
            self._fh.write(b"]\n")
        if self._path is not None:
            self._fh.close()
        else:
            self._fh.flush()
