"""Input readers of ``ddp profile`` and every command that reads segments (``--reader``).

Every reader yields plain segment frames in input order, chunk by chunk, with the columns
named by :class:`~ddpcore.io.segments.SegmentColumns` (defaults ``document_id``,
``segment_id``, ``source``, ``domain``) and, where the format has line numbers, ``line_id``;
:func:`ddpcore.io.sources.iter_input_chunks` dispatches to them and
:func:`ddpcore.io.sources.stage_input` validates the chunks.

Readers (``reader=``):

``table``  JSONL / CSV / TSV / JSON / Parquet table, or a folder of ``.txt`` documents
           (``txt_mode``: ``lines`` or ``paragraphs``, see :func:`iter_txt_folder`).
``wmt24``  the WMT24 source ``.txt`` (one segment per line) + its ``.docs`` file
           (``domain<TAB>doc_id`` per line, aligned with the source). The canary line is dropped.
``wmt25``  the WMT25 documents JSONL (``doc_id`` or ``doc``, ``domain``, ``src_text``):
           segments are the paragraphs of ``src_text`` split on ``"\\n\\n"``, exactly as the
           organisers' scripts (``src_text.split("\\n\\n")``).
``lines``  plain aligned text, one segment per line, + a ``.docs`` file of ``domain<TAB>doc_id``
           or ``doc_id`` lines (a document-id column without domain).
``mtme``   an mt-metrics-eval test-set folder (``sources/LP.txt`` + ``documents/LP.docs``), or its
           ``sources/LP.txt``: :func:`ddpcore.io.mtme.iter_mtme_source`.

**Key convention** (shared with the score readers :func:`ddpcore.io.wmt.read_wmt24_esa` and
:func:`ddpcore.io.esa.read_esa_wmt23`): a segment is keyed by ``document_id`` + ``segment_id``
= the 0-based position of the segment within its document; formats with line numbers also
carry ``line_id`` = the 0-based line of the segment in the line-aligned files (for WMT24 the
canary is line 0, so the first real segment is ``line_id`` 1, as in the ESA exports).

Text is split with polars string kernels, block by block (``BLOCK_BYTES``); no Python loop
runs per line or per segment.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DDPDataError, DDPUsageError
from ..schema import BLANK_CHARS, INVISIBLE, SegmentColumns, blank_note
from .tables import check_binary, decode_utf8, iter_line_bytes

if TYPE_CHECKING:
    import polars as pl


#: the readers of ``--reader``
READERS = ("table", "wmt24", "wmt25", "lines", "mtme")
#: the modes of ``--txt-mode`` (folders of ``.txt`` documents)
TXT_MODES = ("lines", "paragraphs")
#: the line number column of line-aligned formats (0-based line of the file)
LINE_ID = "line_id"
#: bytes read at a time from a line-aligned text file
BLOCK_BYTES = 8 << 20
#: wrapped-text detection: at most this many characters per line
WRAP_MAX_WIDTH = 80
_BLANK_LINE = re.compile(r"\n[ \t\r\f\v" + INVISIBLE + r"]*\n")
_LINE_BREAK = re.compile(r"[ \t]*\n[ \t]*")
_SENTENCE_END = r"[.!?:;\"'”’)\]…»]$"

Warn = Callable[[str], None]


def check_reader(reader: str, txt_mode: str = "lines") -> None:
    """Refuse an unknown ``reader`` or ``txt_mode`` (usage error D600)."""
    if reader not in READERS:
        raise DDPUsageError(f"--reader {reader}: unknown reader; choose one of {', '.join(READERS)}", code="D600")
    if txt_mode not in TXT_MODES:
        raise DDPUsageError(f"--txt-mode {txt_mode}: unknown mode; choose one of {', '.join(TXT_MODES)}", code="D600")


def default_docs(source: Path) -> Path:
    """The ``.docs`` file of a line-aligned ``source``: beside it with the same stem
    (``en-de.txt`` → ``en-de.docs``); else the same stem without a ``_source``/``-source``/
    ``.src`` suffix (``wmt24_en_source.txt`` → ``wmt24_en.docs``); else the WMT repository
    layout ``../documents/<stem>.docs``; else the only ``.docs`` file in the folder.

    Raises D602 (data error) when none is found.
    """
    stem = source.name[:-3] if source.name.endswith(".gz") else source.name
    stem = stem.rsplit(".", 1)[0] if "." in stem else stem
    short = re.sub(r"([_.-](source|src))$", "", stem)
    tried = [source.with_name(stem + ".docs"), source.with_name(short + ".docs"),
             # lexically one folder up, also for a bare or ../ relative path (Path("x.txt").parent.parent is ".")
             Path(os.path.normpath(os.path.join(source.parent, os.pardir, "documents", stem + ".docs")))]
    for cand in tried:
        if cand.is_file():
            return cand
    others = sorted(source.parent.glob("*.docs"))
    if len(others) == 1:
        return others[0]
    names = ", ".join(dict.fromkeys(str(t) for t in tried))
    raise DDPDataError(f"{source}: no .docs file found beside it (looked for {names}); give it with --docs PATH",
                       code="D602")


# ----------------------------------------------------------------------------- line blocks


def iter_line_blocks(path: Path, block_bytes: int = BLOCK_BYTES) -> Iterator[pl.Series]:
    """The lines of a text file (``.gz`` allowed) as string Series of whole lines, block by
    block: no line terminator (``\\n``; a trailing ``\\r`` is removed too), no empty last line
    for a file that ends with a newline. Invalid UTF-8 is D104 naming the line; a NUL byte
    (binary data) is D730 naming its byte offset."""
    import polars as pl

    line = 1
    for data, last in iter_line_bytes(path, block_bytes):
        if last and not data:
            return
        text = decode_utf8(data if last else data[:-1], path, line)  # without the block's last line end
        lines = pl.Series("l", [text], dtype=pl.String).str.split("\n").explode().str.strip_suffix("\r")
        line += lines.len()
        yield lines


def _aligned(src: Path, docs: Path, chunk_rows: int) -> Iterator[tuple[pl.Series, pl.Series, int]]:
    """``(source lines, docs lines, first line number)`` of ``chunk_rows`` lines at a time from
    two line-aligned files; a line count mismatch is D603 naming the first unmatched line."""
    import polars as pl

    its = [iter_line_blocks(src), iter_line_blocks(docs)]
    bufs: list[list[pl.Series]] = [[], []]
    have = [0, 0]
    done = [False, False]
    start = 0
    while True:
        for i in (0, 1):
            while have[i] < chunk_rows and not done[i]:
                nxt = next(its[i], None)
                if nxt is None:
                    done[i] = True
                else:
                    bufs[i].append(nxt)
                    have[i] += nxt.len()
        n = min(chunk_rows, have[0], have[1])
        if n == 0:
            if have[0] or have[1]:
                rest = [have[i] + sum(s.len() for s in its[i]) for i in (0, 1)]
                longer, shorter = (src, docs) if rest[0] > rest[1] else (docs, src)
                raise DDPDataError(
                    f"{longer}, line {start + 1}: no matching line in {shorter} ({src.name} has {start + rest[0]} "
                    f"lines, {docs.name} {start + rest[1]}); the source and its .docs file must have one line "
                    "per segment each", code="D603")
            return
        out = []
        for i in (0, 1):
            whole = pl.concat(bufs[i]) if len(bufs[i]) > 1 else bufs[i][0]
            out.append(whole.slice(0, n))
            rest_s = whole.slice(n)
            bufs[i] = [rest_s] if rest_s.len() else []
            have[i] = rest_s.len()
        yield out[0], out[1], start
        start += n


def _split_docs(lines: pl.Series, docs: Path, start: int, *, need_domain: bool) -> pl.DataFrame:
    """``domain<TAB>doc_id`` lines → ``(__domain, __doc)``; a line without a tab is a bare doc id
    unless ``need_domain``; an empty doc id or a third tab-separated field is D604 naming the line."""
    import polars as pl

    parts = lines.str.splitn("\t", 2).struct.rename_fields(["a", "b"]).struct.unnest()
    df = parts.select(
        pl.when(pl.col("b").is_null()).then(None).otherwise(pl.col("a")).alias("__domain"),
        pl.when(pl.col("b").is_null()).then(pl.col("a")).otherwise(pl.col("b")).str.strip_chars().alias("__doc"),
    )
    bad = df.with_row_index("__i").filter(
        (pl.col("__doc").str.len_chars() == 0) | (pl.lit(need_domain) & pl.col("__domain").is_null())
        | pl.col("__doc").str.contains("\t", literal=True))  # a third field: never part of a document id
    if bad.height:
        i = int(bad["__i"][0])
        got = lines[i]
        raise DDPDataError(
            f"{docs}, line {start + i + 1}: expected 'domain<TAB>document id'"
            f"{'' if need_domain else ' or a document id'}, found {got[:60]!r}", code="D604")
    # a bare id with white space among lines that give a domain: 'social doc-b' where the others have
    # 'news<TAB>doc-a' is a domain and an id split by a space (mt-metrics-eval allows spaces), not one id
    spaced = df.with_row_index("__i").filter(pl.col("__domain").is_null() & pl.col("__doc").str.contains(r"\s"))
    if spaced.height and df["__domain"].is_not_null().any():
        i = int(spaced["__i"][0])
        raise DDPDataError(
            f"{docs}, line {start + i + 1}: {lines[i][:60]!r} has no tab where other lines give "
            "'domain<TAB>document id'; a document id with a space would drop the domain. Separate the domain with "
            "a tab (for an mt-metrics-eval test set, whose .docs may use spaces, use --reader mtme)", code="D604")
    return df


class _Positions:
    """0-based position of each segment within its document, across chunks (one small row per
    document is carried between chunks)."""

    def __init__(self) -> None:
        self.seen: pl.DataFrame | None = None

    def __call__(self, doc: pl.Series) -> pl.Series:
        import polars as pl

        df = pl.DataFrame({"__doc": doc}).with_columns(pl.int_range(pl.len()).over("__doc").alias("__pos"))
        if self.seen is not None:
            df = df.join(self.seen, on="__doc", how="left", maintain_order="left").with_columns(
                (pl.col("__pos") + pl.col("__n").fill_null(0)).alias("__pos"))
        counts = df.group_by("__doc").agg(pl.len().alias("__n"))
        self.seen = counts if self.seen is None else pl.concat([self.seen, counts]).group_by("__doc").agg(
            pl.col("__n").sum())
        return df["__pos"].cast(pl.Int64)


def iter_aligned_lines(source: Path, docs: Path | None, cols: SegmentColumns, *, wmt24: bool,
                       chunk_rows: int = 20_000) -> Iterator[pl.DataFrame]:
    """The ``wmt24`` and ``lines`` readers: one row per line of ``source`` with
    ``cols.document``, ``cols.segment`` (position in the document, int64), ``cols.text``,
    ``cols.domain`` (null without it in the ``.docs`` file) and ``line_id`` (0-based line, int64).
    ``wmt24`` drops the canary line (``.docs`` line ``canary<TAB>canary`` or a source line
    starting ``CANARY GUID``) and requires ``domain<TAB>doc_id`` lines."""
    import polars as pl

    docs = docs if docs is not None else default_docs(source)
    if not docs.is_file():
        raise DDPDataError(f"{docs}: .docs file not found; check --docs", code="D602")
    pos = _Positions()
    seen_rows = False
    for text, dlines, start in _aligned(source, docs, chunk_rows):
        meta = _split_docs(dlines, docs, start, need_domain=wmt24)
        df = meta.with_columns(text.alias("__text"),
                               pl.int_range(start, start + text.len(), dtype=pl.Int64).alias(LINE_ID))
        if wmt24:
            df = df.filter(~(((pl.col("__doc") == "canary") & (pl.col("__domain") == "canary"))
                             | pl.col("__text").str.starts_with("CANARY GUID")))
        if df.height == 0:
            continue
        seen_rows = True
        out = df.select(
            pl.col("__doc").alias(cols.document), pos(df["__doc"]).alias(cols.segment),
            pl.col("__text").alias(cols.text), pl.col("__domain").alias(cols.domain), pl.col(LINE_ID))
        yield out
    if not seen_rows:
        raise DDPDataError(f"{source}: the file has no segments", code="D606")


def refuse_empty_segments(df: pl.DataFrame, cols: SegmentColumns, reader: str, name: Any, records_before: int = 0
                          ) -> int:
    """D111 for the first empty (blank) segment of a ``wmt24``/``lines``/``mtme``/``wmt25`` frame (one chunk of
    :func:`ddpcore.io.sources.iter_input_chunks`), named where the user finds it in the file: the line
    (``line_id`` + 1), or the row (JSON record) of a WMT25 document and its paragraph; not the row of the
    reader's output, which the file does not have. ``records_before``: WMT25 documents of earlier chunks.
    Returns the number of WMT25 documents in ``df`` (a document's paragraphs start at segment 0); 0 for
    the other readers, which this leaves alone."""
    if reader not in ("wmt24", "lines", "mtme", "wmt25") or df.height == 0 or (reader != "wmt25" and LINE_ID not in df.columns):
        return 0
    starts = (df[cols.segment] == 0).fill_null(False) if reader == "wmt25" else None
    empty = (df[cols.text].is_null() | (df[cols.text].str.strip_chars(BLANK_CHARS).str.len_chars() == 0)).fill_null(True)
    if empty.any():
        i = int(empty.arg_true()[0])
        r = df.row(i, named=True)
        what = f"(document {r[cols.document]!r}, segment {r[cols.segment]}{blank_note(r[cols.text])})"
        if reader == "wmt25":
            assert starts is not None
            record = records_before + int(starts[: i + 1].sum())
            raise DDPDataError(
                f"{name}, row {record}, field src_text: empty source text {what}: paragraph "
                f"{r[cols.segment] + 1} is empty (a blank line beyond the \"\\n\\n\" between paragraphs, or at "
                "the start or end of the text); remove it, or give it text", code="D111")
        raise DDPDataError(f"{name}, line {int(r[LINE_ID]) + 1}: empty source text {what}; every line is a segment: "
                           "fill the line (its .docs line keeps it aligned)", code="D111")
    return int(starts.sum()) if starts is not None else 0


# ----------------------------------------------------------------------------------- WMT25


def iter_wmt25(source: Path, cols: SegmentColumns, chunk_rows: int = 20_000) -> Iterator[pl.DataFrame]:
    """The ``wmt25`` reader: documents JSONL (``doc_id`` or ``doc``, optional ``domain``,
    ``src_text``) → one row per paragraph (``src_text`` split on ``"\\n\\n"``, verbatim) with
    ``cols.document``, ``cols.segment`` (0-based paragraph position, int64), ``cols.text``,
    ``cols.domain``. A missing field is D605."""
    import polars as pl

    from .tables import iter_jsonl_chunks

    for raw, _ in iter_jsonl_chunks(source, chunk_rows):
        doc = next((c for c in ("doc_id", "doc", cols.document) if c in raw.columns), None)
        if doc is None or "src_text" not in raw.columns:
            missing = "doc_id (or doc)" if doc is None else "src_text"
            raise DDPDataError(f"{source}: field {missing} is missing; --reader wmt25 reads WMT25 documents JSONL "
                               f"(doc_id or doc, domain, src_text); found fields: {', '.join(raw.columns)}",
                               code="D605")
        dom = pl.col("domain").cast(pl.String) if "domain" in raw.columns else pl.lit(None, dtype=pl.String)
        if raw["src_text"].dtype != pl.String:
            raise DDPDataError(f"{source}: field src_text holds {raw['src_text'].dtype} values, not text",
                               code="D605")
        df = raw.select(pl.col(doc).cast(pl.String).alias(cols.document), dom.alias(cols.domain),
                        pl.col("src_text").str.split("\n\n").alias(cols.text))
        df = df.with_columns(pl.int_ranges(0, pl.col(cols.text).list.len().fill_null(1), dtype=pl.Int64)
                             .alias(cols.segment)).explode(cols.text, cols.segment)
        yield df.select(cols.document, cols.segment, cols.text, cols.domain)


# ------------------------------------------------------------------------------ .txt folders


def wrapped_width(text: str) -> int | None:
    """The line width of a hard-wrapped text, or None if ``text`` does not look hard-wrapped.

    Hard-wrapped: at least 8 lines that are not the last of their paragraph (blank line =
    paragraph boundary); their 90th-percentile length W (characters, trailing spaces removed)
    is at most :data:`WRAP_MAX_WIDTH`; at least 60 % of them end within 12 characters of W;
    and at least half of them end mid-sentence (not on . ! ? : ; or a closing quote/bracket).
    """
    import polars as pl

    lines = pl.Series("l", [text], dtype=pl.String).str.split("\n").explode().str.strip_chars_end()
    df = pl.DataFrame({"l": lines}).with_columns(blank=pl.col("l").str.strip_chars(BLANK_CHARS).str.len_chars() == 0)
    df = df.with_columns(para=pl.col("blank").cum_sum()).filter(~pl.col("blank"))
    inner = df.filter(pl.col("para") == pl.col("para").shift(-1)).with_columns(n=pl.col("l").str.len_chars())
    if inner.height < 8:
        return None
    width = int(inner["n"].quantile(0.9, "nearest") or 0)
    if not 20 <= width <= WRAP_MAX_WIDTH:
        return None
    near = float((inner["n"] >= width - 12).mean() or 0.0)
    mid = float((~inner["l"].str.contains(_SENTENCE_END)).mean() or 0.0)
    return width if near >= 0.6 and mid >= 0.5 else None


def iter_txt_folder(folder: Path, cols: SegmentColumns, txt_mode: str = "lines",
                    warn: Warn | None = None) -> Iterator[pl.DataFrame]:
    """One frame per ``*.txt`` file (file-name order; document id = file stem): one row per
    blank-line-separated paragraph with ``cols.document``, ``cols.segment`` (0-based, int64)
    and ``cols.text``.

    ``txt_mode="lines"`` keeps each paragraph's lines (every line is a parse unit: today's
    behaviour); ``"paragraphs"`` joins the lines of a paragraph with single spaces (one parse
    unit per paragraph, for hard-wrapped prose). In ``lines`` mode hard-wrapped files
    (:func:`wrapped_width`) are counted and, after the last file, ``warn`` gets ONE line that
    names ``--txt-mode paragraphs``.
    """
    import polars as pl

    check_reader("table", txt_mode)
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() == ".txt")
    if not files:
        raise DDPDataError(f"{folder}: no .txt documents found in this folder", code="D120")
    wrapped: list[tuple[str, int]] = []
    for path in files:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise DDPDataError(f"{path}: cannot read file ({exc.strerror})", code="D102") from None
        check_binary(raw, path)
        text = decode_utf8(raw, path).replace("\r\n", "\n").replace("\r", "\n")
        parts = [p.strip("\n") for p in _BLANK_LINE.split(text)]
        parts = [p for p in parts if p.strip(BLANK_CHARS)]
        if not parts:
            raise DDPDataError(f"{path}: the document is empty; remove it or add text", code="D121")
        if txt_mode == "paragraphs":
            parts = [_LINE_BREAK.sub(" ", p).strip() for p in parts]
        elif warn is not None:
            w = wrapped_width(text)
            if w is not None:
                wrapped.append((path.name, w))
        yield pl.DataFrame(
            {cols.document: [path.stem] * len(parts), cols.segment: list(range(len(parts))), cols.text: parts},
            schema={cols.document: pl.String, cols.segment: pl.Int64, cols.text: pl.String},
        )
    if wrapped and warn is not None:
        first, width = wrapped[0]
        warn(f"{len(wrapped)} of {len(files)} .txt file(s) in {folder} look hard-wrapped (e.g. {first}: lines end "
             f"near column {width} mid-sentence), so each line is parsed as a sentence and DDP is inflated; "
             "use --txt-mode paragraphs to join the lines of a paragraph")
