"""Streaming input for corpus-scale runs: the input as chunks, an id index, batches of rows.

A corpus run never holds the whole input's texts in memory. :func:`stage_input` reads the
input once, chunk by chunk (Parquet row groups; JSONL/CSV/TSV in chunks of lines; a folder
of ``.txt`` documents file by file), validates every chunk exactly as
:func:`ddpcore.io.segments.read_segments` validates a whole table, and keeps:

- the chunks themselves, as Parquet files in the run's work folder (a Parquet input is
  read in place: its row groups are the chunks);
- an **id index**: one small row per segment (input row, document id, segment id, text
  length and number of parse units), which is all that stays in memory.

:meth:`StagedInput.read_rows` then reads the rows of one batch back, from the chunks that
hold them.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DDPDataError, DDPUsageError
from ..schema import BLANK_CHARS
from .fs import is_uri
from .id_index import IdIndex, IdIndexWriter, check_unique
from .readers import refuse_empty_segments
from .segments import (ROW, SegmentColumns, add_invisible_edges, add_normalised_text, check_unique_ids, invisible_edges,
                       missing_domain_note, normalised_text, read_segments)

if TYPE_CHECKING:
    import polars as pl

#: rows per chunk when staging a text-format input
CHUNK_ROWS = 20_000
CHARS = "__chars"
UNITS = "__units"


@dataclass(frozen=True)
class Chunk:
    """Rows ``[row_start, row_stop)`` of the input, in ``path`` (a Parquet file; for a
    Parquet input, row group ``row_group`` of the input itself)."""

    path: str
    row_start: int
    row_stop: int
    row_group: int | None = None


@dataclass
class StagedInput:
    """The staged input: ``chunks`` in input order, the id index ``ids`` (``ROW``, document,
    segment, ``CHARS``, ``UNITS``), the column names and the unified schema of the chunks."""

    chunks: list[Chunk]
    ids: pl.DataFrame
    cols: SegmentColumns
    schema: dict[str, Any]
    name: str
    #: the compact id index (``stage_input(index_path=...)``); ``ids`` is then empty
    index: IdIndex | None = None
    #: the segments with a line that starts or ends with invisible characters, which the parse leaves out
    #: (:func:`ddpcore.io.segments.invisible_edges`: the ``invisible_line_edges`` signature entry; None: none)
    invisible_edges: dict[str, Any] | None = None
    #: the segments the parse reads in another form (:func:`ddpcore.io.segments.normalised_text`: the
    #: ``normalised_text`` signature entry; None: none)
    normalised_text: dict[str, Any] | None = None

    @property
    def n_rows(self) -> int:
        return self.index.n_rows if self.index is not None else self.ids.height

    def read_rows(self, rows: np.ndarray) -> pl.DataFrame:
        """The input rows ``rows`` (sorted ascending, 0-based) with ``ROW`` and every input column."""
        import polars as pl

        from .fs import open_parquet

        if len(rows) == 0:
            return pl.DataFrame(schema={ROW: pl.UInt32, **self.schema})
        lo, hi = int(rows[0]), int(rows[-1])
        parts = []
        starts = np.fromiter((c.row_start for c in self.chunks), dtype=np.int64, count=len(self.chunks))
        first = int(np.searchsorted(starts, lo, side="right")) - 1
        for c in self.chunks[max(first, 0):]:
            if c.row_start > hi:
                break
            if c.row_stop <= lo:
                continue
            if c.row_group is not None:
                pf = open_parquet(c.path)  # a local path or a pyarrow.fs URI (shared storage)
                present = [k for k in self.schema if k in pf.schema_arrow.names]
                df = pl.from_arrow(pf.read_row_group(c.row_group, columns=present))
            else:
                present = [k for k in self.schema if k in pl.read_parquet_schema(c.path)]
                df = pl.read_parquet(c.path, columns=present)
            assert isinstance(df, pl.DataFrame)
            # columns the validation added (an absent domain column: null text)
            missing = [pl.lit(None, dtype=v).alias(k) for k, v in self.schema.items() if k not in present]
            df = df.with_columns(*missing, pl.int_range(c.row_start, c.row_stop, dtype=pl.UInt32).alias(ROW))
            want = rows[(rows >= c.row_start) & (rows < c.row_stop)]
            if len(want) < df.height:
                df = df.filter(pl.Series(np.isin(np.arange(c.row_start, c.row_stop), want)))
            parts.append(df.select(ROW, *[pl.col(k).cast(v) for k, v in self.schema.items()]))
        return pl.concat(parts)


def unit_counts(texts: pl.Series) -> np.ndarray:
    """Parse units (stripped non-empty lines) of each text (n,), as the parse splits it
    (:func:`ddpcore.pipeline.stages.view_units`): a carriage return breaks a line too (CR LF adds
    only a blank line, which is no unit)."""
    import polars as pl

    if bool(texts.str.contains("\r", literal=True).any()):  # (rare: only then the copy)
        texts = texts.str.replace_all("\r", "\n", literal=True)
    return (
        texts.str.split("\n")
        .list.eval(pl.element().str.strip_chars(BLANK_CHARS).str.len_chars() > 0).list.sum()
        .fill_null(0).to_numpy().astype(np.int64)
    )


def _index_rows(df: pl.DataFrame, cols: SegmentColumns) -> pl.DataFrame:
    import polars as pl

    return df.select(
        ROW, cols.document, cols.segment,
        pl.col(cols.text).str.len_chars().cast(pl.Int64).alias(CHARS),
        pl.Series(UNITS, unit_counts(df[cols.text])),
    )


def _validated(df: pl.DataFrame, cols: SegmentColumns, name: str, row_offset: int) -> pl.DataFrame:
    """``read_segments`` validation of one chunk, with row numbers of the whole input."""
    return read_segments(df, cols, name=name, row_offset=row_offset)


def iter_input_chunks(source: Any, cols: SegmentColumns, chunk_rows: int = CHUNK_ROWS, *,
                      reader: str = "table", docs: str | os.PathLike[str] | None = None, txt_mode: str = "lines",
                      warn: Callable[[str], None] | None = None) -> Iterator[tuple[pl.DataFrame, int | None]]:
    """Yield ``(frame, row_group)`` chunks of ``source`` in input order, not yet validated.

    ``reader`` (:mod:`ddpcore.io.readers`; CLI ``--reader``):

    - ``"table"``: Parquet row groups (``row_group`` set), JSONL lines or CSV/TSV rows in
      chunks of ``chunk_rows``, a JSON array (or an in-memory table) as one chunk, or a folder
      of ``.txt`` documents one file at a time (``txt_mode`` ``"lines"|"paragraphs"``; in
      ``lines`` mode hard-wrapped files make ONE ``warn(message)`` call);
    - ``"wmt24"``: WMT24 source ``.txt`` + ``docs`` (default: the ``.docs`` beside it), canary dropped;
    - ``"wmt25"``: WMT25 documents JSONL, paragraphs (``"\\n\\n"``) as segments;
    - ``"lines"``: one segment per line + ``docs`` (``domain<TAB>doc_id`` or ``doc_id`` lines);
    - ``"mtme"``: an mt-metrics-eval test-set folder or its ``sources/LP.txt`` (:mod:`ddpcore.io.mtme`).

    Frames of the non-table readers have ``cols.document``, ``cols.segment`` (0-based position
    within the document), ``cols.text``, ``cols.domain`` and, for ``wmt24``/``lines``,
    ``line_id`` (0-based line of the file): the key convention shared with the ESA/WMT24 score
    readers. ``row_group`` is None for them.
    """
    import polars as pl

    from . import readers as RD
    from . import tables as T

    RD.check_reader(reader, txt_mode)
    if reader == "mtme":
        from .mtme import iter_mtme_source

        if docs is not None:
            raise DDPUsageError("--docs is for --reader wmt24 or lines; --reader mtme reads documents/LP.docs",
                                code="D601")
        if not isinstance(source, (str, os.PathLike)):
            raise DDPUsageError("--reader mtme reads a test-set folder; give its path, not an in-memory table",
                                code="D601")
        for df in iter_mtme_source(source, cols):
            yield df, None
        return
    if reader != "table" or docs is not None:
        path = _reader_path(source, reader, docs)
        if reader == "wmt25":
            for df in RD.iter_wmt25(path, cols, chunk_rows):
                yield df, None
            return
        for df in RD.iter_aligned_lines(path, Path(docs) if docs is not None else None, cols,
                                        wmt24=reader == "wmt24", chunk_rows=chunk_rows):
            yield df, None
        return
    if not isinstance(source, (str, os.PathLike)):
        yield T.read_table(source), None
        return
    if is_uri(source):  # shared storage (s3://, gs://, file://...): Parquet row groups
        yield from _iter_uri_row_groups(str(source))
        return
    path = Path(source)
    if path.is_dir():
        for df in RD.iter_txt_folder(path, cols, txt_mode, warn):
            yield df, None
        return
    if txt_mode != "lines":
        raise DDPUsageError(f"--txt-mode {txt_mode}: is for a folder of .txt documents; {path} is a file",
                            code="D601")
    fmt = _table_format(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq  # here only: a text input needs no pyarrow (issue 25, cold start)

        if not path.exists():
            raise DDPDataError(f"{path}: file not found; check the path", code="D102")
        try:
            pf = pq.ParquetFile(path)
        except Exception as exc:
            raise DDPDataError(f"{path}: not a readable Parquet file ({exc})", code="D103") from None
        T.check_column_names(pf.schema_arrow.names, path)
        if pf.metadata.num_rows == 0 or pf.num_row_groups == 0:
            yield T.read_table(path), None
            return
        for g in range(pf.num_row_groups):
            df = pl.from_arrow(pf.read_row_group(g))
            assert isinstance(df, pl.DataFrame)
            yield df, g
        return
    if fmt == "jsonl":
        yield from T.iter_jsonl_chunks(path, chunk_rows)
        return
    if fmt in ("csv", "tsv"):
        yield from T.iter_csv_chunks(path, fmt, chunk_rows, text_columns=(cols.text,),
                                     key_columns=(cols.document, cols.segment))
        return
    yield T.read_table(path), None


def _iter_uri_row_groups(uri: str) -> Iterator[tuple[pl.DataFrame, int | None]]:
    """The row groups of the Parquet file at a ``pyarrow.fs`` URI (D861: a URI input must be Parquet)."""
    import polars as pl

    from .fs import open_parquet

    if not uri.lower().endswith((".parquet", ".pq")):
        raise DDPUsageError(f"{uri}: an input given as a URI must be a Parquet file (.parquet); convert it, or "
                            "give a local path", code="D861")
    pf = open_parquet(uri)
    from .tables import check_column_names

    check_column_names(pf.schema_arrow.names, uri)
    for g in range(pf.num_row_groups):
        df = pl.from_arrow(pf.read_row_group(g))
        assert isinstance(df, pl.DataFrame)
        yield df, g


def _reader_path(source: Any, reader: str, docs: Any) -> Path:
    """The input file of a non-table reader (usage errors D601 for a folder, a table or ``--docs``
    with a reader that takes none)."""
    from .segments import check_input_path

    if reader == "table" or (docs is not None and reader == "wmt25"):
        raise DDPUsageError(f"--docs is for --reader wmt24 or lines, not {reader}", code="D601")
    if not isinstance(source, (str, os.PathLike)):
        raise DDPUsageError(f"--reader {reader} reads a file; give its path, not an in-memory table", code="D601")
    path = Path(source)
    check_input_path(path)
    if path.is_dir():
        raise DDPUsageError(f"--reader {reader}: {path} is a folder; give the {reader} file itself"
                            + (" (the folder reader is --reader table with --txt-mode)" if reader == "lines" else ""),
                            code="D601")
    if docs is not None:
        check_input_path(Path(docs))
    return path


def resolve_docs(source: Any, reader: str, docs: str | os.PathLike[str] | None) -> Path | None:
    """The ``.docs`` file a ``wmt24``/``lines`` run reads (``docs``, else the one beside the
    source: :func:`ddpcore.io.readers.default_docs`); None for the other readers."""
    from .readers import check_reader, default_docs

    check_reader(reader)
    if reader not in ("wmt24", "lines"):
        if docs is not None:
            raise DDPUsageError(f"--docs is for --reader wmt24 or lines, not {reader}", code="D601")
        return None
    if docs is not None:
        return Path(docs)
    if not isinstance(source, (str, os.PathLike)) or Path(source).is_dir():
        return None  # iter_input_chunks names the problem
    return default_docs(Path(source))


def read_input(source: Any, cols: SegmentColumns = SegmentColumns(), *, reader: str = "table",
               docs: str | os.PathLike[str] | None = None, txt_mode: str = "lines",
               warn: Callable[[str], None] | None = None, name: str | None = None) -> pl.DataFrame:
    """The whole input through a reader, validated as :func:`read_segments` (with ``ROW``):
    for small inputs and commands that need every row at once. ``reader="table"`` with the
    defaults is exactly :func:`read_segments`."""
    import polars as pl

    if reader == "table" and docs is None and txt_mode == "lines" and warn is None:
        return read_segments(source, cols, name=name)
    name = name or (str(source) if isinstance(source, (str, os.PathLike)) else "<table>")
    frames = [df for df, _ in iter_input_chunks(source, cols, reader=reader, docs=docs, txt_mode=txt_mode,
                                                warn=warn)]
    records = 0
    for df in frames:  # an empty line or paragraph, named in the file
        records += refuse_empty_segments(df, cols, reader, name, records)
    return read_segments(pl.concat(frames, how="vertical_relaxed"), cols, name=name, warn=warn)


def _table_format(path: Path) -> str:
    """:func:`ddpcore.io.tables.detect_format`, with the reader a plain-text file needs in the D101 message."""
    from . import tables as T

    try:
        return T.detect_format(path)
    except DDPUsageError:
        if not path.name.lower().endswith((".txt", ".txt.gz")):
            raise
        raise DDPUsageError(
            f"{path}: a .txt file is not a table; read it with --reader wmt24 (a WMT24 source .txt with its .docs) "
            "or --reader lines (one segment per line with a .docs file, --docs PATH), or give a folder of .txt "
            "documents (blank line = segment boundary)", code="D101") from None


def stage_input(source: Any, cols: SegmentColumns, workdir: Path | None, *, name: str | None = None,
                chunk_rows: int = CHUNK_ROWS, reader: str = "table", docs: str | os.PathLike[str] | None = None,
                txt_mode: str = "lines", warn: Callable[[str], None] | None = None,
                index_path: Path | None = None) -> StagedInput:
    """Read ``source`` once, validate it and build its :class:`StagedInput`.

    ``reader``, ``docs``, ``txt_mode``, ``warn``: as :func:`iter_input_chunks`. ``index_path``:
    write the compact id index there (:mod:`ddpcore.io.id_index`: memory flat in the corpus
    size) instead of keeping the id frame ``ids`` in memory (then empty).

    Chunks of a non-Parquet input are written to ``workdir/staged/`` (``None``: kept in
    memory, for in-memory tables). Errors name the input row (1-based) as a whole-table read does.
    """
    import polars as pl

    name = name or (str(source) if isinstance(source, (str, os.PathLike)) else "<table>")
    in_place = reader == "table" and isinstance(source, (str, os.PathLike)) and not Path(source).is_dir() and \
        str(source).lower().endswith((".parquet", ".pq"))
    staged = workdir / "staged" if workdir is not None else None
    if staged is not None and not in_place:
        staged.mkdir(parents=True, exist_ok=True)
    chunks: list[Chunk] = []
    ids: list[pl.DataFrame] = []
    schemas: list[dict[str, Any]] = []
    memory: list[pl.DataFrame] = []
    offset = 0
    writer = IdIndexWriter(index_path, cols) if index_path is not None else None
    records = 0  # WMT25 documents read so far (refuse_empty_segments)
    edges: dict[str, Any] | None = None  # segments with invisible characters at a line's edge
    forms: dict[str, Any] | None = None  # segments the parse reads in another form (NFC, ...)
    for k, (raw, group) in enumerate(iter_input_chunks(source, cols, chunk_rows, reader=reader, docs=docs,
                                                       txt_mode=txt_mode, warn=warn)):
        if raw.height == 0 and offset > 0:
            continue
        records += refuse_empty_segments(raw, cols, reader, name, records)
        if k == 0 and warn is not None:
            _warn_missing_domain(raw, cols, name, warn)
        df = _validated(raw, cols, name, offset)
        edges = add_invisible_edges(edges, invisible_edges(df, cols))
        forms = add_normalised_text(forms, normalised_text(df, cols))
        if writer is not None:
            writer.add(df, df[cols.text].str.len_chars().to_numpy(), unit_counts(df[cols.text]))
            if not ids:
                ids.append(_index_rows(df.clear(), cols))
        else:
            ids.append(_index_rows(df, cols))
        body = df.drop(ROW)
        schemas.append(dict(body.schema))
        if in_place:
            chunks.append(Chunk(str(source), offset, offset + df.height, group))
        elif staged is not None:
            p = staged / f"{k:06d}.parquet"
            body.write_parquet(p)
            chunks.append(Chunk(str(p), offset, offset + df.height))
        else:
            memory.append(body)
            chunks.append(Chunk("", offset, offset + df.height))
        offset += df.height
    if offset == 0:
        raise DDPDataError(f"{name}: the table has no rows", code="D106")
    schema = unify_schemas(schemas, name)
    index = pl.concat(ids, how="vertical_relaxed")
    if writer is not None:
        st = StagedInput(chunks, index, cols, schema, name, writer.close(), invisible_edges=edges,
                         normalised_text=forms)
        check_unique(st.index, st.read_rows, cols, name)
        return st
    check_unique_ids(index, cols, name)
    st = StagedInput(chunks, index, cols, schema, name, invisible_edges=edges, normalised_text=forms)
    if memory:
        whole = pl.concat([m.cast(schema) for m in memory])
        return _MemoryInput(chunks, index, cols, schema, name, invisible_edges=edges, normalised_text=forms,
                            frame=whole)
    return st


def _warn_missing_domain(raw: pl.DataFrame, cols: SegmentColumns, name: str, warn: Callable[[str], None]) -> None:
    """The domain column is optional, but one named other than the default (``--domain-col``) and absent
    from the input is most likely misspelt: say so, since every segment then has no domain."""
    note = missing_domain_note(raw.columns, cols, name)
    if note is not None:
        warn(note)


@dataclass
class _MemoryInput(StagedInput):
    frame: Any = None

    def read_rows(self, rows: np.ndarray) -> pl.DataFrame:
        import polars as pl

        return self.frame.with_row_index(ROW)[rows].with_columns(pl.col(ROW).cast(pl.UInt32))


def unify_schemas(schemas: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """One schema for every chunk: a column's dtype is the first non-null one; integers may
    widen to floats; any other disagreement is a D103 data error naming the column."""
    import polars as pl

    out: dict[str, Any] = {}
    for s in schemas:
        for col, dt in s.items():
            if col not in out or out[col] == pl.Null:
                out[col] = dt
            elif dt == pl.Null or dt == out[col]:
                continue
            elif out[col].is_numeric() and dt.is_numeric():
                out[col] = pl.Float64 if (out[col].is_float() or dt.is_float()) else pl.Int64
            else:
                raise DDPDataError(
                    f"{name}, column '{col}': holds {out[col]} values in earlier rows and {dt} values later; "
                    "give every row the same type in this column", code="D103")
    if len({tuple(s) for s in schemas}) > 1:
        missing = set(out) - set.intersection(*(set(s) for s in schemas))
        if missing:
            raise DDPDataError(f"{name}: column(s) {', '.join(sorted(missing))} are missing from some rows' chunks; "
                               "give every row the same columns", code="D103")
    return out


def identity_files(source: Any, reader: str, docs: str | os.PathLike[str] | None) -> tuple[Any, Path | None]:
    """The files that identify a run's input for ``--resume`` and ``--shard`` (:func:`input_fingerprint`,
    ``input_digest``): the input and the ``.docs`` file its reader reads. For ``--reader mtme`` these are the
    test set's ``sources/LP.txt`` and ``documents/LP.docs`` (D820/D821 as the reader), whether the input names
    the test-set folder, ``FOLDER/LP`` (no such file) or the source file; a folder's own ``.txt`` files say
    nothing of them."""
    if reader == "mtme" and isinstance(source, (str, os.PathLike)):
        from .fs import is_uri

        if not is_uri(str(source)):
            from .mtme import resolve_mtme

            ms = resolve_mtme(source)
            return ms.source, ms.docs
    return source, resolve_docs(source, reader, docs)


def input_fingerprint(source: Any, docs: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """What identifies an input file for ``--resume``: path, size and modification time
    (and, for a folder, the same of every ``.txt`` file; with ``docs``, of the ``.docs`` file too)."""
    if docs is not None:
        return {**input_fingerprint(source), "docs": input_fingerprint(docs)}
    if not isinstance(source, (str, os.PathLike)):
        return {"path": None}
    from .segments import check_input_path

    p = Path(source)
    check_input_path(p)  # missing path, symlink loop: the readers' own messages
    try:
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.suffix.lower() == ".txt")
            return {"path": str(p.resolve()), "files": [[f.name, f.stat().st_size, f.stat().st_mtime_ns] for f in files]}
        st = p.stat()
        return {"path": str(p.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    except OSError as exc:
        raise DDPDataError(f"{p}: cannot read ({exc.strerror})", code="D102") from None


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write ``obj`` as sorted, indented JSON to ``path`` through a temporary file and a rename."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, sort_keys=True, indent=1), encoding="utf-8")
    os.replace(tmp, path)


