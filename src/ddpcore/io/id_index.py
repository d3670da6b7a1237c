"""The compact id index of a corpus run: a few fixed-size numbers per segment, on disk.

:func:`ddpcore.io.sources.stage_input` (``index_path=``) feeds every validated chunk to an
:class:`IdIndexWriter`, which appends one Parquet row group per chunk to ``ids.parquet`` in the
run's work folder. Per segment (input row) it holds::

    __chars  uint32   characters of the segment text
    __units  uint32   parse units (stripped non-empty lines) of the text
    __doc_a  uint64   document id, hashed (seed 0)  } together a 128-bit document key
    __doc_b  uint64   document id, hashed (seed 1)  }
    __pair   uint64   (document id, segment id), hashed

28 bytes a segment on disk and nothing in memory: the id strings stay in the staged chunks.
Readers take one row group at a time (:meth:`IdIndex.iter_groups`), so planning a run needs
memory in the number of document runs, not in the corpus (:mod:`ddpcore.engines.batch_plan`).

Ids are hashed in a canonical form, so that chunks whose id columns have different dtypes
compare as the whole-table read compares them (the dtypes unified, integers widened to floats):
integers as int64, integral floats as the same int64 (3.0 is 3), other floats by their bits,
text as text, anything else as its text form.

Exactness: equal ids always hash equal, so the duplicate check (:func:`check_unique`) finds
every repeated (document, segment) pair; pairs whose hashes collide are checked again on the
id values themselves (the same D113 message as the whole-table check, or nothing). Two
different documents sharing a 128-bit key would be merged; every batch checks its documents'
ids against their keys and stops with D855 if that ever happens (odds about n²/2¹²⁹).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DDPDataError
from ..schema import SegmentColumns

if TYPE_CHECKING:
    import polars as pl

IDX_CHARS = "__chars"
IDX_UNITS = "__units"
DOC_A = "__doc_a"
DOC_B = "__doc_b"
PAIR = "__pair"
COLUMNS = (IDX_CHARS, IDX_UNITS, DOC_A, DOC_B, PAIR)
_META = b"ddpcore.id_index"


def canonical_ids(ids: pl.Series) -> pl.Series:
    """``ids`` (n,) in the form that is hashed: int64 for integers and integral floats, the bits
    of other floats (as int64), text for text, the text form of anything else."""
    import polars as pl

    if ids.dtype == pl.String:
        return ids
    if ids.dtype.is_integer():
        return ids.cast(pl.Int64)
    if ids.dtype.is_float():
        v = ids.cast(pl.Float64).to_numpy()
        with np.errstate(invalid="ignore", over="ignore"):
            inside = np.isfinite(v) & (np.abs(v) < 2.0**63)
            as_int = np.where(inside, v, 0.0).astype(np.int64)
            integral = inside & (as_int.astype(np.float64) == v)
        return pl.Series(ids.name, np.where(integral, as_int, v.view(np.int64)))
    return ids.cast(pl.String)


def index_chunk(frame: pl.DataFrame, cols: SegmentColumns, chars: np.ndarray, units: np.ndarray
                ) -> tuple[dict[str, np.ndarray], bool]:
    """The index columns (each (n,)) of one validated chunk, and whether every segment id of it
    is text that parses as an integer (False for non-text ids)."""
    import polars as pl

    doc = canonical_ids(frame[cols.document])
    seg = canonical_ids(frame[cols.segment])
    seg_raw = frame[cols.segment]
    ints = bool(seg_raw.dtype == pl.String
                and seg_raw.str.strip_chars().cast(pl.Int64, strict=False).null_count() == 0)
    pair = pl.DataFrame([doc.alias("d"), seg.alias("s")]).select(pl.struct("d", "s").hash(seed=0))
    out = {
        IDX_CHARS: np.asarray(chars, dtype=np.uint32),
        IDX_UNITS: np.asarray(units, dtype=np.uint32),
        DOC_A: doc.hash(seed=0).to_numpy(),
        DOC_B: doc.hash(seed=0x9E3779B97F4A7C15).to_numpy(),
        PAIR: pair.to_series().to_numpy(),
    }
    return out, ints


class IdIndexWriter:
    """Appends chunks to ``path`` (one row group each); :meth:`close` returns the :class:`IdIndex`."""

    def __init__(self, path: Path, cols: SegmentColumns) -> None:
        self.path = Path(path)
        self.cols = cols
        self.n_rows = 0
        self.total_chars = 0
        self.segment_ints = True
        self._seg_text = True
        self._writer: Any = None

    def add(self, frame: pl.DataFrame, chars: np.ndarray, units: np.ndarray) -> None:
        """Index the validated chunk ``frame`` (its rows follow the previous chunk's);
        ``chars``/``units`` (n,): its texts' characters and parse units."""
        import polars as pl
        import pyarrow.parquet as pq

        arrays, ints = index_chunk(frame, self.cols, chars, units)
        self.segment_ints = self.segment_ints and ints
        # through polars: pyarrow's own numpy conversions import pandas (~45 MB of RSS)
        table = pl.DataFrame(arrays).to_arrow()
        if self._writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = pq.ParquetWriter(self.path, table.schema, compression="none")
        self._writer.write_table(table, row_group_size=max(len(frame), 1))
        self.n_rows += len(frame)
        self.total_chars += int(arrays[IDX_CHARS].sum(dtype=np.int64))

    def close(self) -> IdIndex:
        """Finish the file; the index (``segment_ints`` as :func:`ddpcore.engines.local.segment_keys`
        decides it over the whole input)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        return IdIndex(self.path, self.n_rows, self.segment_ints, self.total_chars)


@dataclass(frozen=True)
class IdIndex:
    """The id index file ``path`` of ``n_rows`` segments (see the module docstring).
    ``segment_ints``: every segment id is text that parses as an integer; ``total_chars``:
    characters of all texts."""

    path: Path
    n_rows: int
    segment_ints: bool
    total_chars: int

    def to_json(self) -> dict[str, Any]:
        """What the journal keeps of the index (:meth:`open` reads it back)."""
        return {"n_rows": self.n_rows, "segment_ints": self.segment_ints, "total_chars": self.total_chars}

    @classmethod
    def open(cls, path: Path, meta: dict[str, Any]) -> IdIndex:
        """The index at ``path`` described by ``meta`` (:meth:`to_json`); ValueError when the file
        is not a whole index of ``meta["n_rows"]`` rows (a damaged work folder)."""
        import pyarrow.parquet as pq

        md = pq.read_metadata(path)
        names = set(md.schema.to_arrow_schema().names)
        if md.num_rows != int(meta["n_rows"]) or not set(COLUMNS) <= names:
            raise ValueError(f"{Path(path).name} has {md.num_rows} rows, expected {meta['n_rows']}")
        return cls(Path(path), int(meta["n_rows"]), bool(meta["segment_ints"]), int(meta["total_chars"]))

    def iter_groups(self, columns: Sequence[str]) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        """``(first_row, {column: (n_g,) array})`` of every row group, in row order."""
        import polars as pl
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(self.path)
        start = 0
        for g in range(pf.num_row_groups):
            t = pl.from_arrow(pf.read_row_group(g, columns=list(columns)))  # (not pyarrow's to_numpy: pandas)
            assert isinstance(t, pl.DataFrame)
            arrays = {c: t[c].to_numpy() for c in columns}
            yield start, arrays
            start += t.height

    def column(self, name: str) -> np.ndarray:
        """One column of the whole index, (n_rows,): 4 or 8 bytes a segment, for a moment."""
        dtype = np.uint32 if name in (IDX_CHARS, IDX_UNITS) else np.uint64
        out = np.empty(self.n_rows, dtype=dtype)
        for start, arrays in self.iter_groups([name]):
            out[start:start + len(arrays[name])] = arrays[name]
        return out

    def duplicate_candidates(self) -> np.ndarray:
        """Input rows (sorted, int64) whose (document, segment) hash another row shares: every
        repeated pair's rows, and rows of colliding distinct pairs (rare; the caller checks values)."""
        pair = self.column(PAIR)
        pair.sort()
        same = pair[1:] == pair[:-1]
        if not same.any():
            return np.zeros(0, dtype=np.int64)
        shared = np.unique(pair[1:][same])
        del pair, same
        rows = [np.flatnonzero(np.isin(a[PAIR], shared)) + start for start, a in self.iter_groups([PAIR])]
        return np.concatenate(rows).astype(np.int64)


def check_unique(index: IdIndex, read_rows: Any, cols: SegmentColumns, name: Any) -> None:
    """Raise D113 (:func:`ddpcore.io.segments.check_unique_ids`, the same message as a whole-table
    check) if two input rows share a (document, segment) id. ``read_rows(rows)`` reads input rows
    with ``ROW`` (:meth:`ddpcore.io.sources.StagedInput.read_rows`); only rows whose hashes
    collide are read."""
    from .segments import check_unique_ids

    rows = index.duplicate_candidates()
    if len(rows):
        check_unique_ids(read_rows(rows), cols, name)


def document_key_collision(name: Any, cols: SegmentColumns, first: Any, second: Any) -> DDPDataError:
    """D855: two different document ids share a 128-bit key of the id index (never seen; the run
    stops rather than merge them)."""
    return DDPDataError(
        f"{name}, column '{cols.document}': documents {first!r} and {second!r} share the id index's 128-bit "
        "key (a hash collision); rename one of them and rerun, and please report it", code="D855")
