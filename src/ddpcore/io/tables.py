"""Generic table reading/writing with clear errors.

``read_table`` accepts a path (CSV, TSV, JSONL/NDJSON, JSON array, Parquet, optionally
gzip-compressed text formats) or an in-memory table (polars/pandas DataFrame, pyarrow
Table) and returns a ``polars.DataFrame``. ``write_table_atomic`` writes through a
temporary file in the destination folder and renames, so a failure never leaves a
half-written output behind.
"""
from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import tempfile
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DDPDataError, DDPUsageError, where

if TYPE_CHECKING:
    import numpy as np
    import polars as pl

TEXT_FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json"}


def detect_format(path: Path) -> str:
    """Return ``csv|tsv|jsonl|json|parquet`` from the file name (``.gz`` allowed for text)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    ext = suffixes[-1] if suffixes else ""
    if ext in (".parquet", ".pq"):
        return "parquet"
    if ext in TEXT_FORMATS:
        return TEXT_FORMATS[ext]
    raise DDPUsageError(
        f"{path}: cannot tell the table format from the extension '{ext or '(none)'}'; "
        "use .csv, .tsv, .jsonl, .json or .parquet (optionally .gz for text formats)",
        code="D101",
    )


def read_bytes(path: Path) -> bytes:
    """The whole content of ``path``, gunzipped when it ends in ``.gz``; open and gzip errors are D-coded."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _open_error(path, exc) from None
    if path.suffix.lower() == ".gz":
        try:
            data = gzip.decompress(data)
        except (EOFError, OSError, zlib.error) as exc:
            raise _gzip_error(path, exc) from None
    return data


def _gzip_error(path: Path, exc: BaseException) -> DDPDataError:
    """D103 for a truncated (EOFError) or otherwise invalid gzip file."""
    if isinstance(exc, EOFError):
        return DDPDataError(
            f"{path}: the gzip file is truncated (incomplete download or copy?); recreate or re-download it",
            code="D103")
    return DDPDataError(f"{path}: not a valid gzip file ({exc}); recreate it with gzip", code="D103")


def decode_utf8(data: bytes, path: Path | str, first_line: int = 1) -> str:
    """Decode UTF-8 (BOM tolerated) or raise naming the line and column of the first bad byte
    (``first_line``: the file line of ``data``'s first line, for a block of a larger file)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + first_line
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DDPDataError(
            f"{path}: line {line}, byte column {col}: invalid UTF-8 byte 0x{data[exc.start]:02x}; "
            "re-encode the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)",
            code="D104",
        ) from None


#: bytes looked at by :func:`check_text_head` before a text table is read
HEAD_BYTES = 1 << 16
_MAGIC = ((b"\x1f\x8b", "gzip-compressed", "add .gz to its name"),
          (b"PAR1", "a Parquet file", "name it .parquet"),
          (b"PK\x03\x04", "a ZIP archive", "unpack it first"),
          (b"\xff\xfe", "UTF-16 text", "re-encode it as UTF-8 (e.g. `iconv -f utf-16 -t utf-8`)"),
          (b"\xfe\xff", "UTF-16 text", "re-encode it as UTF-8 (e.g. `iconv -f utf-16 -t utf-8`)"))


def _sparse_note(path: Path) -> str:
    """`` (the file is N bytes, M of them on disk: a sparse file)`` when it is, else ``""``."""
    try:
        st = os.stat(path)
    except OSError:
        return ""
    on_disk = getattr(st, "st_blocks", None)
    if on_disk is None or st.st_size < (1 << 20) or on_disk * 512 >= st.st_size // 8:
        return ""
    return f" (the file is {st.st_size:,} bytes, {on_disk * 512:,} of them on disk: a sparse file)"


def check_binary(data: bytes, path: Path, offset: int = 0) -> None:
    """Refuse binary content in a text table: a NUL byte in ``data`` (a block of the file read from
    byte ``offset``; decompressed bytes for ``.gz``) is D730 naming its byte offset, and, at the
    start of the file, the signature of another format (gzip, Parquet, ZIP, UTF-16) is D731."""
    if offset == 0:
        for magic, what, todo in _MAGIC:
            if data.startswith(magic) and not (magic == b"\x1f\x8b" and path.suffix.lower() == ".gz"):
                raise DDPDataError(f"{path}: byte offset 0: the file is {what}, not the UTF-8 text its name "
                                   f"({path.suffix or 'no extension'}) says; {todo}", code="D731")
        head = data[:64] if len(data) >= 64 else data[: len(data) & ~1]
        for order, zeros, text in (("little", head[1::2], head[0::2]), ("big", head[0::2], head[1::2])):
            if len(head) >= 8 and not zeros.strip(b"\x00") and b"\x00" not in text:  # ASCII as UTF-16, no BOM
                raise DDPDataError(f"{path}: byte offset 0: the file is UTF-16 ({order}-endian) text without a "
                                   f"byte-order mark, not the UTF-8 text its name ({path.suffix or 'no extension'}) "
                                   f"says; re-encode it as UTF-8 (e.g. `iconv -f utf-16{order[0]}e -t utf-8`)",
                                   code="D731")
    nul = data.find(b"\x00")
    if nul >= 0:
        gz = " of the decompressed data" if path.suffix.lower() == ".gz" else ""
        raise DDPDataError(
            f"{path}: byte offset {offset + nul:,}{gz}: a NUL byte, so this is binary data, not a text table"
            f"{_sparse_note(path)}; give the table as UTF-8 text (or as .parquet)", code="D730")


def check_text_head(path: Path) -> None:
    """Look at the first :data:`HEAD_BYTES` of a text table before reading it (within a millisecond
    even for a huge file): binary content is D730/D731 (:func:`check_binary`), line ends of a lone
    carriage return D103 (:func:`check_line_ends`)."""
    with open_binary(path) as fh:
        head = read_block(fh, path, HEAD_BYTES)
    check_binary(head, path)
    check_line_ends(head, path)


def check_line_ends(head: bytes, path: Path) -> None:
    """D103 for a file whose lines end with a lone carriage return (classic Mac OS text, some spreadsheet
    exports): ``head`` (its first bytes) has a ``\r`` inside and no ``\n``. Every reader splits lines at
    ``\n``, so the file would be read as one line: a CSV as its header alone ("no rows"), a line-aligned
    source as one segment. A JSON array is left alone (``\r`` is white space between its values)."""
    name = path.name.lower()
    name = name[:-3] if name.endswith(".gz") else name
    if name.endswith(".json") or b"\n" in head:
        return
    cr = head.find(b"\r")
    if 0 <= cr < len(head.rstrip(b"\r")) - 1:
        raise DDPDataError(f"{path}: line 1, byte column {cr + 1}: the lines end with a carriage return alone (\\r, "
                           "classic Mac text), which no reader splits at, so the file would read as one line; "
                           "convert the line ends to \\n (e.g. `tr '\\r' '\\n'` or mac2unix)", code="D103")


#: Excel's first line naming the separator (``sep=,``, ``sep=;``): a hint to spreadsheets, no header
_SEP_LINE = re.compile(rb"(?:\xef\xbb\xbf)?sep=.?\r?(?:\n|$)", re.IGNORECASE)


def check_sep_line(head: bytes, path: Path) -> None:
    """D103 for a CSV/TSV file whose first line is Excel's separator hint ``sep=,``: read as the header, it
    would make every row have more fields than the header (or give one column named ``sep=,``)."""
    if _SEP_LINE.match(head):
        first = head.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", "replace").lstrip("\ufeff")
        raise DDPDataError(f"{path}: line 1: '{first}' is a spreadsheet's separator hint, not the header; remove "
                           "the line, so that the header is the first line", code="D103")


# ----------------------------------------------------------------------------- CSV/TSV records

_WS_CR = 13
#: a CSV/TSV record longer than this is refused (an unterminated quote would otherwise read on to the end)
MAX_RECORD_BYTES = 1 << 28
_QUOTE = 34
_NL = 10


class DelimitedScan:
    """Check CSV/TSV quoting and field counts block by block (RFC 4180, the way
    ``pandas.to_csv`` and ``polars.write_csv`` write both CSV and TSV: a field holding the
    separator, a ``"`` or a line break is enclosed in ``"`` and its quotes are doubled).

    ``quoted`` (:func:`has_quoted_fields`: some field starts with ``"``): a separator or newline
    is part of the table structure when an even number of ``"`` precedes it; an opening ``"``
    must start a field, a closing ``"`` must end one. Not ``quoted`` (no field starts with
    ``"``, e.g. a plain TSV export): every ``"`` is a literal character, as pandas reads such a
    file, and every newline ends a record. Feed the file with :meth:`feed` (blocks in order,
    ``final=True`` for the last) and it raises D103 naming the line (and byte column) of the
    first unterminated quote, stray quote or record whose field count differs from the
    header's. Blank lines are left to the table reader (it reads them as rows of nulls). numpy
    on byte positions: no Python loop over rows.
    """

    def __init__(self, fmt: str, path: Path, quoted: bool = True) -> None:
        self.fmt = fmt
        self.sep = ord("," if fmt == "csv" else "\t")
        self.path = path
        self.quoted = quoted
        self.line = 1  # physical line of the next block's first byte
        self.header: int | None = None
        self.first = True
        self.carry = b""

    def _err(self, a: np.ndarray, nl: np.ndarray, pos: int, what: str) -> DDPDataError:
        import numpy as np

        k = int(np.searchsorted(nl, pos))
        col = pos - (int(nl[k - 1]) + 1 if k else 0) + 1
        return DDPDataError(f"{self.path}: line {self.line + k}, byte column {col}: {what}", code="D103")

    def feed(self, block: bytes, final: bool = False) -> None:
        import numpy as np

        data = self.carry + block
        if self.first and data:
            if data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
            self.first = False
        a = np.frombuffer(data, dtype=np.uint8)
        q = np.flatnonzero(a == _QUOTE) if self.quoted else np.zeros(0, dtype=np.intp)
        nl = np.flatnonzero(a == _NL)
        nl_s = nl[(np.searchsorted(q, nl) & 1) == 0] if q.size else nl
        cut = len(data) if final else (int(nl_s[-1]) + 1 if nl_s.size else 0)
        # quotes up to the cut, plus (at the end of the file) an unclosed last one
        self._check_quotes(a, q if final else q[q < cut], nl)
        if final and q.size & 1:
            raise self._err(a, nl, int(q[-1]), "a quoted field opened here is never closed (an unterminated \"); "
                            "close it, or double a \" inside a quoted field")
        if not final and len(data) - cut > MAX_RECORD_BYTES:
            opened = int(q[np.searchsorted(q, cut)]) if q.size and q[-1] >= cut else cut
            raise self._err(a, nl, opened, f"a record (or a quoted field opened here) runs over "
                            f"{MAX_RECORD_BYTES >> 20} MiB without ending; an unterminated \"?")
        self._check_fields(a[:cut], q[q < cut], nl[nl < cut], nl_s[nl_s < cut], at_eof=final)
        self.line += int(np.count_nonzero(nl < cut))
        self.carry = data[cut:]

    def _check_quotes(self, a: np.ndarray, q: np.ndarray, nl: np.ndarray) -> None:
        import numpy as np

        n = a.size
        if q.size == 0:
            return
        sep = self.sep
        opening, closing = q[0::2], q[1::2]
        prev = a[np.maximum(opening - 1, 0)]
        bad_o = (opening > 0) & (prev != sep) & (prev != _NL) & (prev != _QUOTE)
        nxt = a[np.minimum(closing + 1, n - 1)]
        bad_c = (closing + 1 < n) & (nxt != sep) & (nxt != _NL) & (nxt != _WS_CR) & (nxt != _QUOTE)
        first_o = int(opening[bad_o][0]) if bad_o.any() else n
        first_c = int(closing[bad_c][0]) if bad_c.any() else n
        if first_o < first_c:
            raise self._err(a, nl, first_o, "a \" inside an unquoted field; a field that holds a \" must be "
                            "quoted as a whole with its quotes doubled (\"5\"\" screen\"), as pandas "
                            "to_csv and polars write_csv write it")
        if first_c < n:
            raise self._err(a, nl, first_c, "text after the closing \" of a quoted field; a \" inside a "
                            "quoted field must be doubled (\"\")")

    def _check_fields(self, a: np.ndarray, q: np.ndarray, nl: np.ndarray, nl_s: np.ndarray, at_eof: bool) -> None:
        import numpy as np

        n = a.size
        if n == 0:
            return
        ends = nl_s + 1
        if at_eof and (ends.size == 0 or ends[-1] < n):
            ends = np.r_[ends, n]
        if ends.size == 0:
            return
        starts = np.r_[0, ends[:-1]]
        seps = np.flatnonzero(a == self.sep)
        if q.size and seps.size:
            seps = seps[(np.searchsorted(q, seps) & 1) == 0]
        fields = np.bincount(np.searchsorted(ends, seps, side="right"), minlength=ends.size)[: ends.size] + 1
        length = ends - starts - (a[ends - 1] == _NL)
        blank = (length == 0) | ((length == 1) & (a[starts] == _WS_CR))
        if self.header is None:
            self.header = int(fields[0])
        bad = np.flatnonzero((fields != self.header) & ~blank)
        if bad.size:
            i = int(bad[0])
            k = int(fields[i])
            unit = "tab" if self.fmt == "tsv" else "comma"
            raise self._err(a, nl, int(starts[i]), f"{k} field{'s' if k != 1 else ''} where the header has "
                            f"{self.header}; quote fields that hold a {unit}, a \" or a line break with \" "
                            "(as pandas to_csv and polars write_csv do)")


def has_quoted_fields(data: bytes, fmt: str, at_start: bool = True) -> bool:
    """Whether some field of ``data`` (a block of a CSV/TSV file; ``at_start``: from its first
    byte) starts with ``"``: a ``"`` after the separator, after a newline, or first in the file
    (after a BOM). Such a file is read with quoting (:class:`DelimitedScan`); without one, every
    ``"`` is a literal character and reading with or without quoting gives the same values."""
    import numpy as np

    if at_start:
        data = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
        if data.startswith(b'"'):
            return True
    a = np.frombuffer(data, dtype=np.uint8)
    q = np.flatnonzero(a[1:] == _QUOTE)  # q + 1 is a quote, q its previous byte
    if q.size == 0:
        return False
    prev = a[q]
    return bool(((prev == _NL) | (prev == ord("," if fmt == "csv" else "\t"))).any())


def check_delimited(data: bytes, fmt: str, path: Path) -> bool:
    """:class:`DelimitedScan` of a whole CSV/TSV file held in memory (``data`` without the BOM);
    returns whether it is read with quoting (:func:`has_quoted_fields`)."""
    quoted = has_quoted_fields(data, fmt)
    DelimitedScan(fmt, path, quoted).feed(data, final=True)
    return quoted


def _blocks(path: Path, block_bytes: int) -> Iterator[tuple[bytes, int]]:
    """``(block, byte offset)`` of a file (``.gz``: decompressed), the last block empty."""
    offset = 0
    with open_binary(path) as fh:
        while True:
            block = read_block(fh, path, block_bytes)
            yield block, offset
            offset += len(block)
            if not block:
                return


def delimited_quoting(path: Path, fmt: str, block_bytes: int = 16 << 20) -> bool:
    """:func:`has_quoted_fields` of a whole CSV/TSV file, read block by block; binary content is
    refused on the way (D730/D731)."""
    tail = b""
    for block, offset in _blocks(path, block_bytes):
        check_binary(block, path, offset)
        if has_quoted_fields(tail + block, fmt, at_start=offset == 0):
            return True
        tail = block[-1:]
    return False


def scan_delimited_file(path: Path, fmt: str, block_bytes: int = 16 << 20) -> bool:
    """Check a CSV/TSV file (``.gz`` allowed) block by block before it is read in chunks: binary
    content (D730/D731), quoting and field counts (D103, :class:`DelimitedScan`). Returns
    whether the file is read with quoting (:func:`delimited_quoting`)."""
    quoted = delimited_quoting(path, fmt, block_bytes)
    scan = DelimitedScan(fmt, path, quoted)
    for block, offset in _blocks(path, block_bytes):
        check_binary(block, path, offset)
        scan.feed(block, final=not block)
    return quoted


def signed_columns(path: str | os.PathLike[str], text_columns: Sequence[str] = (),
                   key_columns: Sequence[str] = ()) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``text_columns`` and ``key_columns`` plus the text and id columns a ddpcore text output records in its
    ``<file>.signature.json`` sidecar (``columns``: ``text``; ``document``, ``segment``), so that a CSV/TSV
    output is read back with the ids and text it was written from: document ids ``7`` and ``007`` or ``2.5``
    and ``2.50`` are two documents in the profile's own summary, not one (a column polars reads as decimals
    because another id is ``1e3``). A missing or damaged sidecar adds nothing (read by
    :func:`ddpcore.io.sidecars.read_sidecar`, in silence: the commands that read the signature say what is
    wrong with it). Nor does a sidecar of another file (its stamp does not fit ``path``): its column names are
    another table's, and a column it would retype is said in one warning naming the sidecar."""
    from .sidecars import read_sidecar

    found = read_sidecar(path)
    sig = found.signature if found is not None else None
    cols: Any = sig.get("columns") if sig is not None else None
    if not isinstance(cols, dict):
        return tuple(text_columns), tuple(key_columns)

    def named(*keys: str) -> tuple[str, ...]:
        return tuple(v for v in (cols.get(k) for k in keys) if isinstance(v, str) and v)

    if found is not None and found.mismatch is not None:
        left = [c for c in (*named("text"), *named("document", "segment")) if c not in (*text_columns, *key_columns)]
        if left:
            import warnings

            warnings.warn(f"{found.problem()}; its column names ({', '.join(dict.fromkeys(left))}) are not used to "
                          f"read {path}: its columns are read as the file holds them", UserWarning, stacklevel=2)
        return tuple(text_columns), tuple(key_columns)
    return (tuple(dict.fromkeys((*text_columns, *named("text")))),
            tuple(dict.fromkeys((*key_columns, *named("document", "segment")))))


#: names of in-memory tables made from files (:func:`name_frame`), by ``id`` of the live table
_FRAME_NAMES: dict[int, str] = {}


def name_frame(frame: Any, name: str) -> Any:
    """``frame`` (returned as is), named ``name`` in the messages of the functions it is given to
    (:func:`frame_name`): the table a reader makes from files (``--reader mtme``...) keeps naming them,
    not ``<table>``. The name goes with the frame object (forgotten when it is freed)."""
    import weakref

    key = id(frame)
    _FRAME_NAMES[key] = name
    weakref.finalize(frame, _FRAME_NAMES.pop, key, None)
    return frame


def frame_name(frame: Any) -> str | None:
    """The name :func:`name_frame` gave ``frame`` (None: not named)."""
    return _FRAME_NAMES.get(id(frame))


def read_table(source: Any, *, name: str | None = None, text_columns: Sequence[str] = (),
               key_columns: Sequence[str] = ()) -> pl.DataFrame:
    """Read ``source`` (path or in-memory table) into a polars DataFrame.

    Parameters
    ----------
    source : str | Path | polars.DataFrame | pyarrow.Table | pandas.DataFrame
    name : str, optional
        How to refer to an in-memory table in error messages.
    text_columns : sequence of str
        Columns of a CSV/TSV file read as text whatever they hold (the segment text: a text of digits
        such as ``123`` or ``1.50`` is text, kept as written, not a number).
    key_columns : sequence of str
        Id columns of a CSV/TSV file: one polars would read as decimals is read as text, as written
        (``2.5`` and ``2.50`` are two documents; as numbers they would be one, and ``1`` would become ``1.0``).
    """
    import polars as pl

    if isinstance(source, pl.DataFrame):
        return source
    if isinstance(source, pl.LazyFrame):
        return source.collect()
    mod = type(source).__module__
    if mod.startswith(("pyarrow", "pandas")):
        kind = "pyarrow" if mod.startswith("pyarrow") else "pandas"
        try:
            out = pl.from_arrow(source) if kind == "pyarrow" else pl.from_pandas(source)
        except Exception as exc:  # pyarrow's ArrowTypeError/ArrowInvalid, polars' ValueError...
            raise DDPDataError(
                f"{name or '<table>'}: cannot convert the {kind} table to polars ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}); give every column one type (e.g. "
                "df[col].astype(str) for a text column that mixes numbers and text) and unique string column names",
                code="D266") from None
        if not isinstance(out, pl.DataFrame):  # a pandas Series, a pyarrow Array or ChunkedArray: one column
            raise DDPUsageError(
                f"expected a file path or a polars/pandas/pyarrow table, got a {kind} {type(source).__name__} (a "
                "single column without a name to select it by); pass the whole table", code="D105")
        return out
    if not isinstance(source, (str, os.PathLike)):
        raise DDPUsageError(
            f"expected a file path or a polars/pandas/pyarrow table, got {type(source).__name__}", code="D105"
        )
    path = Path(source)
    fmt = detect_format(path)
    if fmt == "parquet":
        if not path.exists():
            raise DDPDataError(f"{path}: file not found; check the path", code="D102")
        try:
            return pl.read_parquet(path)
        except Exception as exc:  # polars raises several exception types here
            names: list[str] = []
            with contextlib.suppress(Exception):  # a column named twice: say which
                import pyarrow.parquet as pq

                names = pq.read_schema(path).names
            check_column_names(names, path)
            raise DDPDataError(f"{path}: not a readable Parquet file ({exc})", code="D103") from None
    check_text_head(path)
    data = read_bytes(path)
    check_binary(data, path)
    text = decode_utf8(data, path)
    if not text.strip():
        raise DDPDataError(f"{path}: the file is empty", code="D106")
    if fmt in ("csv", "tsv"):
        check_sep_line(data[:HEAD_BYTES], path)
        sep = "," if fmt == "csv" else "\t"
        text_columns, key_columns = signed_columns(path, text_columns, key_columns)
        raw = text.encode()
        quoted = check_delimited(raw, fmt, path)
        quote = '"' if quoted else None
        try:
            df = pl.read_csv(raw, separator=sep, infer_schema_length=10000, quote_char=quote,
                             schema_overrides={c: pl.String for c in text_columns} or None)
        except Exception as exc:
            raise DDPDataError(f"{path}: cannot parse as {fmt.upper()} ({str(exc).splitlines()[0]})", code="D103") from None
        check_header_names(df.columns, path)
        try:
            ints = [c for c, dt in df.schema.items() if dt.is_integer()]
            if ints:  # integer columns written otherwise than plain integers stay text (PLAIN_INT)
                text_of = pl.read_csv(raw, separator=sep, columns=ints, infer_schema_length=0, quote_char=quote)
                df = df.with_columns(text_of[c] for c in ints if first_not_plain_int(text_of[c]) is not None)
            floats = [c for c in dict.fromkeys(key_columns) if c in df.columns and df.schema[c].is_float()]
            if floats:  # decimal ids stay as written
                df = df.with_columns(pl.read_csv(raw, separator=sep, columns=floats, infer_schema_length=0,
                                                 quote_char=quote))
            return df
        except Exception as exc:
            raise DDPDataError(f"{path}: cannot parse as {fmt.upper()} ({str(exc).splitlines()[0]})", code="D103") from None
    if fmt == "json":
        obj = _json_loads(text, path, "expected a flat array of objects, one per row")
        if not isinstance(obj, list):
            raise DDPDataError(f"{path}: expected a JSON array of objects (one per row)", code="D103")
        if not obj:
            raise DDPDataError(f"{path}: the JSON array is empty (no rows)", code="D106")
        bad = next((i for i, rec in enumerate(obj, 1) if not isinstance(rec, dict)), None)
        if bad is not None:
            raise DDPDataError(f"{path}: array element {bad}: expected a JSON object per row", code="D103")
        return _records_frame(obj, path, None, "array element")
    return _parse_jsonl_text(text, path)


class _RepeatedKey(Exception):
    """A JSON object names one key twice (raised by :func:`_unique_keys`)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of the JSON readers: a key written twice in one object is refused. JSON leaves the
    meaning of a repeated key open, and readers differ (polars keeps the first value, Python's json the last):
    either choice would be a silent answer."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return obj


_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)


def _repeated_key_error(path: Path, where: str, key: str) -> DDPDataError:
    return DDPDataError(f"{path}: {where}: the key {json.dumps(key, ensure_ascii=False)} appears twice in one "
                        "JSON object; readers disagree on which value counts (the first or the last), so remove "
                        "one of them", code="D103")


def _repeated_key_element(text: str, path: Path, key: str) -> DDPDataError:
    """Error path only: D103 naming the array element (and its line) of a JSON array file whose object
    repeats ``key``."""
    dec = json.JSONDecoder()
    at = len(text) - len(text.lstrip()) + 1
    n = 0
    while text.lstrip().startswith("["):
        while text[at] in " \t\r\n,":
            at += 1
        n += 1
        end = dec.raw_decode(text, at)[1]
        try:
            _DECODER.decode(text[at:end])
        except _RepeatedKey as exc:
            return _repeated_key_error(path, f"array element {n} (line {text.count(chr(10), 0, at) + 1})", exc.key)
        at = end
    return _repeated_key_error(path, "line 1", key)


def _json_loads(text: str, path: Path, expected: str, line: int | None = None) -> Any:
    """``json.loads(text)``, its failures D103: ``line`` is the file line of a JSON Lines record
    (None: ``text`` is the whole file); ``expected`` ends the message of JSON nested too deeply. A key
    repeated within an object is D103 too (:func:`_unique_keys`)."""
    try:
        return _DECODER.decode(text)
    except _RepeatedKey as exc:
        if line is None:
            raise _repeated_key_element(text, path, exc.key) from None
        raise _repeated_key_error(path, f"line {line}", exc.key) from None
    except json.JSONDecodeError as exc:
        raise DDPDataError(f"{path}: line {exc.lineno if line is None else line}, column {exc.colno}: "
                           f"invalid JSON ({exc.msg})", code="D103") from None
    except RecursionError:
        where = f"{path}" if line is None else f"{path}: line {line}"
        raise DDPDataError(f"{where}: JSON nested too deeply to read (more than ~{_max_depth()} levels); {expected}",
                           code="D103") from None


def _records_frame(rows: list[dict[str, Any]], path: Path, numbers: list[int] | None, unit: str) -> pl.DataFrame:
    """The frame of JSON records ``rows``; a type conflict is D103 naming the ``unit`` (``numbers``:
    each row's number, None: 1, 2, ...) and column where it starts."""
    import polars as pl

    conflict = _type_conflict(path, rows, list(range(1, len(rows) + 1)) if numbers is None else numbers, unit)
    if conflict:  # polars would read the column as text (numbers and booleans turned into strings)
        raise DDPDataError(conflict, code="D103")
    try:
        return pl.DataFrame(rows, infer_schema_length=None)
    except UnicodeEncodeError:
        raise DDPDataError(_lone_surrogate(path, rows, list(range(1, len(rows) + 1)) if numbers is None else numbers,
                                          unit), code="D104") from None
    except Exception as exc:
        raise DDPDataError(_type_conflict(path, rows, list(range(1, len(rows) + 1)) if numbers is None else numbers,
                                          unit) or
                           f"{path}: rows have inconsistent types ({str(exc).splitlines()[0]})", code="D103") from None


def _parse_jsonl_text(text: str, path: Path, first_line: int = 1) -> pl.DataFrame:
    """Parse JSON Lines ``text`` (one object per line; blank lines skipped); messages name
    line numbers of the file (``first_line`` = the file line of ``text``'s first line)."""
    rows: list[dict[str, Any]] = []
    linenos: list[int] = []
    # "\n" ends a line, as for polars and the line count of iter_jsonl_chunks: str.splitlines would also cut at a
    # U+2028, U+0085, ... that a JSON string may hold unescaped
    for lineno, line in enumerate(text.split("\n"), first_line):
        if not line.strip():
            continue
        rec = _json_loads(line, path, "expected one flat JSON object per line", lineno)
        if not isinstance(rec, dict):
            raise DDPDataError(f"{path}: line {lineno}: expected a JSON object per line", code="D103")
        rows.append(rec)
        linenos.append(lineno)
    return _records_frame(rows, path, linenos, "line")


def _lone_surrogate(path: Path, rows: list[dict[str, Any]], numbers: list[int], unit: str) -> str:
    """Error path only: name the first value holding a ``\\uD800``-``\\uDFFF`` escape without its pair (JSON
    allows it, UTF-8 text cannot hold it; polars would read it as a NUL character)."""
    def bad(v: Any) -> str | None:
        if isinstance(v, str):
            return next((c for c in v if "\ud800" <= c <= "\udfff"), None)
        items = v.values() if isinstance(v, dict) else v if isinstance(v, list) else ()
        return next((b for b in map(bad, items) if b is not None), None)

    for rec, n in zip(rows, numbers):
        for key, v in rec.items():
            c = bad(v)
            if c is not None:
                return (f"{path}: {unit} {n}, column '{key}': the escape \\u{ord(c):04x} is half of a UTF-16 surrogate "
                        "pair without its other half (a character cut in two), which is not text; repair or remove it")
    return f"{path}: a string holds a lone UTF-16 surrogate escape (\\ud800-\\udfff), which is not text; repair it"


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def _type_conflict(path: Path, rows: list[dict[str, Any]], numbers: list[int], unit: str) -> str | None:
    """Error path only: name the first value whose JSON type differs from its column's first value."""
    first: dict[str, tuple[str, int]] = {}
    for rec, n in zip(rows, numbers):
        for key, v in rec.items():
            if v is None:
                continue
            k = _kind(v)
            if key not in first:
                first[key] = (k, n)
            elif first[key][0] != k:
                k0, n0 = first[key]
                return (f"{path}: {unit} {n}, column '{key}': a JSON {k} where {unit} {n0} has a {k0}; "
                        "give every row the same type in this column")
    return None


def _max_depth() -> int:
    import sys

    return sys.getrecursionlimit()


#: bytes of JSON Lines read per chunk by :func:`iter_jsonl_chunks`
JSONL_CHUNK_BYTES = 16 << 20


def open_binary(path: Path) -> Any:
    """``path`` opened for binary reading (gunzipping when it ends in ``.gz``); open errors are D-coded."""
    try:
        return gzip.open(path, "rb") if path.suffix.lower() == ".gz" else open(path, "rb")
    except OSError as exc:
        raise _open_error(path, exc) from None


def _open_error(path: Path, exc: OSError) -> DDPDataError:
    """D102 for a table file that cannot be opened or read."""
    if isinstance(exc, FileNotFoundError):
        return DDPDataError(f"{path}: file not found; check the path", code="D102")
    if isinstance(exc, IsADirectoryError):
        return DDPDataError(f"{path}: is a folder, expected a table file", code="D102")
    return DDPDataError(f"{path}: cannot read file ({exc.strerror}); check permissions", code="D102")


def read_block(fh: Any, path: Path, size: int) -> bytes:
    """Up to ``size`` bytes from ``fh`` (opened by :func:`open_binary` on ``path``); a damaged gzip stream is D-coded."""
    try:
        return fh.read(size)
    except (EOFError, OSError, zlib.error) as exc:
        raise _gzip_error(path, exc) from None


def iter_line_bytes(path: Path, block_bytes: int) -> Iterator[tuple[bytes, bool]]:
    """A text file (``.gz`` allowed) read ``block_bytes`` at a time, as ``(data, last)``: ``data``
    whole lines, each with its ``\\n``, then (``last`` true) what follows the file's last ``\\n``
    (may be empty). Binary content (NUL bytes) is D730 naming its byte offset, checked on the
    file's head before a large block is read."""
    carry = b""
    offset = 0
    check_text_head(path)  # binary content fails within a millisecond, before a large block is read
    with open_binary(path) as fh:
        while True:
            block = read_block(fh, path, block_bytes)
            check_binary(block, path, offset)
            offset += len(block)
            data = carry + block
            if not block:
                yield data, True
                return
            cut = data.rfind(b"\n")
            if cut < 0:
                carry = data
                continue
            data, carry = data[:cut + 1], data[cut + 1:]
            yield data, False


#: a JSON number or boolean as polars writes it into a text column of mixed JSON types
_JSON_SCALAR = r"^(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false)$"


def _maybe_mixed_types(data: bytes, df: pl.DataFrame) -> bool:
    """Whether a text column of ``df`` (``data`` read by ``polars.read_ndjson``) may hold JSON numbers or
    booleans, which polars turns into text in a column of mixed types: a value that looks like one and is
    written unquoted on some line. Only columns with such values are looked at in the raw lines."""
    import polars as pl

    cols = [c for c, dt in df.schema.items() if dt == pl.String and df[c].str.contains(_JSON_SCALAR).any()]
    if not cols:
        return False
    lines = pl.Series(data.decode("utf-8", "replace").split("\n"), dtype=pl.String)
    for c in cols:
        key = re.escape(json.dumps(c, ensure_ascii=False))
        first = lines.str.extract(key + r"\s*:\s*(\S)", 1)
        if (first.is_not_null() & ~first.is_in(['"', "n"])).any():
            return True
    return False


#: a JSON string followed by a colon: an object key
_KEY = r'"(?:[^"\\]|\\.)*"\s*:'
_JSON_SPACE = b" \t\r"


def _escaped(a: np.ndarray, q: np.ndarray, longest: int = 16) -> np.ndarray:
    """Whether each ``"`` at byte positions ``q`` of ``a`` is escaped (an odd run of backslashes before it: a
    quote inside a string). A run longer than ``longest`` is not decided and counts as not escaped."""
    import numpy as np

    odd = np.zeros(q.size, dtype=bool)
    run = np.ones(q.size, dtype=bool)
    j = q.copy()
    for _ in range(longest):
        j = j - 1
        run &= (j >= 0) & (a[np.maximum(j, 0)] == ord("\\"))
        odd ^= run
        if not run.any():
            return odd
    return odd & ~run


def _maybe_repeated_keys(data: bytes, df: pl.DataFrame) -> bool:
    """Whether a line of ``data`` (whole JSON Lines, read by ``polars.read_ndjson`` into ``df``: flat objects)
    may name a key twice. polars keeps the first value of such a key where Python's json keeps the last, so the
    block is then parsed again line by line, which refuses it (:func:`_unique_keys`).

    numpy on byte positions, no Python loop over lines. Cheap in the common case: the ``":`` of the block
    (and the ``" :`` of keys spaced from their colon) bound the keys written from above; when they are no more
    than the non-null values read, every key written has a value of its own. Otherwise (null values, missing
    keys, a ``":`` inside a text) each ``":`` is matched against the columns' keys as written (``"name"``
    after ``{``, ``,`` or white space): a column keyed twice on one line is a repeat. A ``":`` no column
    accounts for is inside a text when its quote is escaped; the few lines with another one (a text starting
    with ``:``, a key written with an escape) or with a key spaced from its colon have their keys extracted and
    compared, and a key written with an escape is left to the line-by-line parser."""
    import numpy as np
    import polars as pl

    a = np.frombuffer(data, dtype=np.uint8)
    colon = np.flatnonzero(a == ord(":"))
    colon = colon[colon > 0]
    prev = a[colon - 1]
    at = colon[prev == _QUOTE] - 1  # the closing quote of every '":'
    space = np.frombuffer(_JSON_SPACE, dtype=np.uint8)
    spaced = colon[np.isin(prev, space)]  # a ':' after white space: a key's when a '"' comes before the run
    if spaced.size:
        j, keep = spaced - 1, np.ones(spaced.size, dtype=bool)
        quote = np.full(spaced.size, -1, dtype=np.int64)
        for _ in range(16):  # runs longer than this count as spaced keys (an upper bound stays one)
            j = np.maximum(j - 1, 0)
            b = a[j]
            quote[keep & (b == _QUOTE)] = j[keep & (b == _QUOTE)]
            keep &= np.isin(b, space) & (j > 0)
        found = (quote >= 0) | keep
        spaced, quote = spaced[found], quote[found]
    values = df.height * df.width - sum(df.null_count().row(0)) if df.width else 0
    if at.size + spaced.size <= values:
        return False
    keys = [json.dumps(c, ensure_ascii=False).encode() for c in df.columns]
    if any(b"\\" in k for k in keys):
        return True
    newlines = np.flatnonzero(a == _NL)
    line = np.searchsorted(newlines, at)
    accounted = np.zeros(at.size, dtype=bool)
    before = np.frombuffer(b"{," + _JSON_SPACE, dtype=np.uint8)
    last4 = None  # the 4 bytes before each closing quote, as one number: a first sieve for keys of 4+ characters
    for k in keys:
        n = len(k) - 1  # the key's opening quote is n bytes before its closing one
        if n >= 5:
            if last4 is None:
                lo = np.maximum(at - 4, 0)
                last4 = sum(a[lo + i].astype(np.uint32) << (8 * (3 - i)) for i in range(4))
            cand = np.flatnonzero((last4 == int.from_bytes(k[-5:-1], "big")) & (at >= n + 1))
            rest = range(n - 5, -1, -1)
        else:
            cand, rest = np.flatnonzero(at >= n + 1), range(n - 1, -1, -1)
        for j in rest:  # the key's other bytes, from its end: the candidates thin out fast
            cand = cand[a[at[cand] - n + j] == k[j]]
        cand = cand[np.isin(a[at[cand] - n - 1], before)]
        if (line[cand][1:] == line[cand][:-1]).any():  # the column keyed twice on a line
            return True
        accounted[cand] = True
    other = at[~accounted]  # a '":' no column accounts for: in a text when its quote is escaped
    other = other[~_escaped(a, other)]
    if spaced.size:
        spaced = spaced[(quote < 0) | ~_escaped(a, np.maximum(quote, 0))]
    if other.size == 0 and spaced.size == 0:
        return False
    odd = np.unique(np.r_[line[np.isin(at, other)], np.searchsorted(newlines, spaced)])
    bounds = np.r_[0, newlines + 1, len(data) + 1]
    texts = [data[bounds[i]:bounds[i + 1] - 1].decode("utf-8", "replace") for i in odd.tolist()]
    found = pl.Series("l", texts, dtype=pl.String).str.extract_all(_KEY).list.eval(
        pl.element().str.strip_chars_end(": \t\r"))
    return bool(((found.list.n_unique() != found.list.len())
                 | found.list.eval(pl.element().str.contains("\\", literal=True)).list.any()).any())


def iter_jsonl_chunks(path: Path, chunk_rows: int | None = None,
                      chunk_bytes: int | None = None) -> Iterator[tuple[pl.DataFrame, None]]:
    """Read a JSON Lines file (``.gz`` allowed) in blocks of whole lines, without holding the
    file in memory; yields ``(frame, None)`` per block (the ``None`` fits
    :func:`ddpcore.io.sources.iter_input_chunks`). Each block is parsed by polars; a block
    polars refuses is parsed again line by line to name the bad line (as :func:`read_table` does).
    ``chunk_rows`` is accepted for symmetry and ignored: blocks are ``chunk_bytes`` large.
    """
    import polars as pl

    line = 1
    seen_rows = False
    for data, _last in iter_line_bytes(path, chunk_bytes or JSONL_CHUNK_BYTES):
        if line == 1 and data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        if data.strip():
            try:
                df = pl.read_ndjson(data, infer_schema_length=None)
                if any(dt.is_nested() or dt in (pl.Int128, pl.UInt64) for dt in df.schema.values()):
                    raise ValueError("nested or wide values: parse line by line")
                if any(df[c].str.contains("\x00", literal=True).any() for c, dt in df.schema.items()
                       if dt == pl.String):  # a NUL escape, or polars' reading of a lone surrogate escape
                    raise ValueError("NUL characters: parse line by line")
                if _maybe_mixed_types(data, df):
                    raise ValueError("numbers or booleans read as text: parse line by line")
                if _maybe_repeated_keys(data, df):  # polars keeps the first value of a repeated key
                    raise ValueError("a key written twice in one object: parse line by line")
            except Exception:
                df = _parse_jsonl_text(decode_utf8(data, path, line), path, line)
            if df.height:
                seen_rows = True
                yield df, None
        line += data.count(b"\n")
    if not seen_rows:
        raise DDPDataError(f"{path}: the file is empty", code="D106")


def iter_csv_chunks(path: Path, fmt: str, chunk_rows: int = 20_000, text_columns: Sequence[str] = (),
                    key_columns: Sequence[str] = ()) -> Iterator[tuple[pl.DataFrame, None]]:
    """Read a CSV/TSV file (``.gz`` allowed) in chunks of ``chunk_rows`` rows with the column
    types :func:`read_table` infers (first 10,000 rows; integers not all written plainly stay text,
    :func:`scan_csv_lossless`). CSV and TSV follow the same quoting
    rules (RFC 4180 with the separator of the format: what ``pandas.to_csv(sep="\\t")`` and
    ``polars.write_csv(separator="\\t")`` write). The file is first checked block by block
    (:func:`scan_delimited_file`: binary content, unterminated or stray quotes, field counts,
    each naming the line); on a parse error the whole-file reader is run to name the problem.
    ``text_columns``, ``key_columns``: as :func:`read_table`."""
    with open_binary(path) as fh:  # existence, permissions, gzip and UTF-8 of the first block
        head = read_block(fh, path, HEAD_BYTES)
    check_binary(head, path)
    check_line_ends(head, path)
    check_sep_line(head, path)
    decode_utf8(head[: head.rfind(b"\n") + 1] if b"\n" in head else head, path)
    if not head.strip():
        raise DDPDataError(f"{path}: the file is empty", code="D106")
    quoted = scan_delimited_file(path, fmt)  # quoting, field counts and NUL bytes, naming the line
    try:
        for df in scan_csv_lossless(path, fmt, quoted, text_columns, key_columns).collect_batches(chunk_size=chunk_rows):
            yield df, None
    except DDPDataError:
        raise
    except Exception as exc:
        read_table(path, text_columns=text_columns, key_columns=key_columns)  # the precise message where it can
        raise DDPDataError(f"{path}: cannot parse as {fmt.upper()} ({str(exc).splitlines()[0]})", code="D103") from None



#: an integer as polars writes one: an optional minus sign, no leading zero, nothing else. A CSV/TSV column of
#: integers written otherwise (zero-padded "007", "+3", "-0") is read as text, so that ids such as "03" and
#: "3" stay two ids; as numbers they would be one
PLAIN_INT = r"^(?:0|-?[1-9][0-9]*)$"


def first_not_plain_int(values: pl.Series) -> int | None:
    """Position of the first non-null value of the text column ``values`` (n,) that is not written as a
    plain integer (:data:`PLAIN_INT`), or None."""
    at = (~values.str.contains(PLAIN_INT)).fill_null(False).arg_true()
    return int(at[0]) if at.len() else None


def check_column_names(columns: Sequence[str], path: Any) -> None:
    """D103 for a Parquet (or Arrow) schema that names a column twice, which pyarrow allows: polars refuses
    such a table, and which of the two a reader would take is no choice to make for the user."""
    at: dict[str, int] = {}
    for i, c in enumerate(columns):
        if c in at:
            raise DDPDataError(f"{path}: the schema names the column '{c}' twice (fields {at[c] + 1} and {i + 1}); "
                               "give every column its own name", code="D103")
        at[c] = i


def check_header_names(columns: Sequence[str], path: Path) -> None:
    """D103 for a CSV/TSV header that names a column twice: polars renames the second ``NAME_duplicated_0``
    and the first would be read silently, whichever the user meant."""
    at = {c: i for i, c in enumerate(columns)}
    for i, c in enumerate(columns):
        m = re.fullmatch(r"(.*)_duplicated_\d+", c)
        if m and m.group(1) and m.group(1) in at:  # unnamed columns (trailing separators) are no choice
            raise DDPDataError(f"{path}: line 1: the header names the column '{m.group(1)}' twice (fields "
                               f"{at[m.group(1)] + 1} and {i + 1}); give every column its own name", code="D103")


def scan_csv_lossless(path: Path, fmt: str, quoted: bool, text_columns: Sequence[str] = (),
                      key_columns: Sequence[str] = ()) -> pl.LazyFrame:
    """A lazy scan of the CSV/TSV file ``path`` with polars' types (first 10,000 rows), except that an integer
    column holding any value not written as a plain integer (:data:`PLAIN_INT`, anywhere in the file: one
    pass over those columns) is text. ``quoted``: whether fields are quoted (:func:`scan_delimited_file`).
    ``text_columns``, ``key_columns``: as :func:`read_table` (with the columns a sidecar signature names:
    :func:`signed_columns`)."""
    import polars as pl

    text_columns, key_columns = signed_columns(path, text_columns, key_columns)
    opts: dict[str, Any] = {"separator": "," if fmt == "csv" else "\t", "infer_schema_length": 10000,
                            "quote_char": '"' if quoted else None,
                            "schema_overrides": {c: pl.String for c in text_columns} or None}
    schema = pl.scan_csv(path, **opts).collect_schema()
    check_header_names(schema.names(), path)
    floats = {c: pl.String for c in key_columns if c in schema and schema[c].is_float()}
    if floats:  # decimal ids stay as written (read_table)
        opts["schema_overrides"] = {**(opts["schema_overrides"] or {}), **floats}
        schema = pl.scan_csv(path, **opts).collect_schema()
    ints = [c for c, dt in schema.items() if dt.is_integer()]
    if not ints:
        return pl.scan_csv(path, **opts)
    fixed = opts.pop("schema_overrides") or {}
    padded = pl.scan_csv(path, **opts, schema_overrides={**fixed, **{c: pl.String for c in ints}}).select(
        (~pl.col(c).str.contains(PLAIN_INT)).fill_null(False).any() for c in ints).collect().row(0)
    return pl.scan_csv(path, **opts, schema_overrides={**fixed, **{c: pl.String for c, p in zip(ints, padded) if p}})


def role_clash(roles: Sequence[tuple[str, str | None]]) -> tuple[str, str, str] | None:
    """``(first flag, second flag, column)`` of the first two ``(flag, column)`` roles that name one column
    (``None`` = role not used), else None: the test of :func:`check_distinct_columns` (and of D114)."""
    seen: dict[str, str] = {}
    for flag, name in roles:
        if name is None:
            continue
        if name in seen and seen[name] != flag:
            return seen[name], flag, name
        seen.setdefault(name, flag)
    return None


def check_distinct_columns(roles: Sequence[tuple[str, str | None]]) -> None:
    """D972 (exit 2) when two ``(flag, column)`` roles name one column (``None`` = role not used): one column cannot be,
    say, both the document ids and the segment ids; found before the table is read, not as a polars error later."""
    clash = role_clash(roles)
    if clash is not None:
        first, flag, name = clash
        raise DDPUsageError(f"{first} and {flag} both name the column '{name}'; one column cannot have two "
                            "roles, give each its own column", code="D972")


def require_columns(df: pl.DataFrame, columns: Sequence[str], source: Any, *, flags: dict[str, str] | None = None) -> None:
    """Raise :class:`DDPDataError` naming the first missing column and the flag that selects it."""
    for col in columns:
        if col not in df.columns:
            hint = ""
            if flags and col in flags:
                hint = f" (select another column with {flags[col]})"
            sep = next((c for c in ";|\t," if len(df.columns) == 1 and c in df.columns[0] and col in df.columns[0]
                        .split(c)), None)
            if sep is not None:  # a header of one column holding every name: another separator
                hint += (f"; the header is one column holding {repr(sep)}-separated names: ddpcore reads .csv "
                         "separated by commas and .tsv by tabs, so convert the file or name it for its separator")
            raise DDPDataError(
                f"{where(source if isinstance(source, (str, os.PathLike)) else '<table>', column=col)}: "
                f"required column is missing{hint}; available columns: {', '.join(df.columns)}",
                code="D110",
            )


def _tmp_pattern(name: str) -> re.Pattern[str]:
    # atomic_path uses tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp"): 8 characters from [a-z0-9_]
    return re.compile(rf"\.{re.escape(name)}\.[a-z0-9_]{{8}}\.tmp")


def remove_stale_temps(dest: str | os.PathLike[str]) -> list[Path]:
    """Remove ``.<name>.XXXXXXXX.tmp`` files left next to ``dest`` by a killed run.

    Only files matching :func:`atomic_path`'s temporary-file pattern for exactly this
    output name are removed (not other names, not folders, not symlinks); returns them.
    """
    dest = Path(dest)
    parent = dest.parent if str(dest.parent) else Path(".")
    pat = _tmp_pattern(dest.name)
    removed: list[Path] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        if pat.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


@contextlib.contextmanager
def atomic_path(dest: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``dest``; rename onto ``dest`` only if the block succeeds.

    Temporary files of ``dest`` left by an earlier killed run are removed first.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(dest)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    except (PermissionError, FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
        # the access check passed, the file system still refused a new file (root-squash, /sys, /proc)
        raise DDPUsageError(f"{dest}: cannot create files in {dest.parent} ({exc.strerror or exc}); choose a "
                            "folder you can write to", code="D131") from None
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        # mkstemp creates 0600 files; give the output the permissions a normal open() would
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, 0o666 & ~umask)
        os.replace(tmp_path, dest)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_table_atomic(df: pl.DataFrame, dest: str | os.PathLike[str], *, metadata: dict[str, str] | None = None) -> Path:
    """Write ``df`` to ``dest`` (format from the extension) atomically.

    Parquet files get ``metadata`` (e.g. the run signature as JSON) in the schema metadata.
    """
    return write_tables_atomic([(df, dest)], metadata=metadata)[0]


def read_parquet_metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    """Return the key/value schema metadata of a Parquet file (decoded)."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items() if not k.startswith(b"ARROW")}


class GzipOutput(gzip.GzipFile):
    """A ``.gz`` output opened for writing at ``path`` (a temporary file): its header holds no file name and no
    time stamp (as ``gzip -n``), so the same data gives the same bytes, and never the temporary's name."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._raw = open(path, "wb")
        try:
            super().__init__(filename="", mode="wb", fileobj=self._raw, mtime=0)
        except BaseException:
            self._raw.close()
            raise

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def _is_gzip(path: Path) -> bool:
    return path.suffix.lower() == ".gz"


def _write_to(df: pl.DataFrame, fmt: str, tmp: Path, metadata: dict[str, str] | None, *, compress: bool = False) -> None:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        table = df.to_arrow()
        if metadata:
            meta = {**(table.schema.metadata or {}), **{k.encode(): v.encode() for k, v in metadata.items()}}
            table = table.replace_schema_metadata(meta)
        pq.write_table(table, tmp)
        return
    with (GzipOutput(tmp) if compress else open(tmp, "wb")) as fh:
        write_text_table(df, fmt, fh)


def write_text_table(df: pl.DataFrame, fmt: str, fh: Any) -> None:
    """Write ``df`` as ``csv|tsv|jsonl|json`` to the binary file object ``fh`` (e.g. stdout's buffer)."""
    if fmt == "csv":
        df.write_csv(fh)
    elif fmt == "tsv":
        df.write_csv(fh, separator="\t")
    elif fmt == "jsonl":
        df.write_ndjson(fh)
    elif fmt == "json":
        df.write_json(fh)
    else:
        raise DDPUsageError(f"cannot write {fmt} as text; use csv, tsv, jsonl or json", code="D135")


def tsv_field(value: Any) -> str:
    """One field of a TSV that ddpcore writes, quoted as :class:`DelimitedScan` (and polars, pandas, the csv
    module) read it back: ``None`` is the empty field; text holding a tab, a ``"``, a line break, or starting
    with ``#`` (the comment prefix of the ``# signature:`` lines) is enclosed in ``"`` with its quotes doubled,
    and an empty text is ``""`` (as ``polars.write_csv`` writes it), so that it does not read as missing."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    if text == "" or text.startswith("#") or any(c in text for c in '\t"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def tsv_line(values: Sequence[Any]) -> str:
    """One TSV record of :func:`tsv_field` fields."""
    return "\t".join(tsv_field(v) for v in values)


_MD_ESCAPE = re.compile(r"([\\`*_\[\]<>|~&])")
_MD_NEWLINE = re.compile(r"\r\n|\r|\n")


def md_cell(text: Any, *, markup: bool = False) -> str:
    """A name from the data (system, metric, domain, condition) as the text of a Markdown table cell that
    renders as written: ``|`` escaped (it would end the cell), line breaks as ``<br>`` (they would end the
    row), and the characters of inline Markdown and HTML (backslash, backtick, ``* _ [ ] < > ~ &``) escaped
    with a backslash. ``markup=True``: the text carries ddpcore's own Markdown (``**bold**``); only ``|``
    and line breaks are escaped."""
    text = "" if text is None else str(text)
    text = text.replace("|", "\\|") if markup else _MD_ESCAPE.sub(r"\\\1", text)
    return _MD_NEWLINE.sub("<br>", text)


def md_code(text: str) -> str:
    """``text`` as a Markdown code span that holds it whole (CommonMark 6.1): fenced by a run of backticks
    one longer than the longest run inside, with a space inside each fence when the text starts or ends with
    a backtick (or with a space at both ends, which the renderer strips)."""
    fence = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    pad = " " if text[:1] == "`" or text[-1:] == "`" or (text[:1] == " " and text[-1:] == " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def tex_cell(text: str, table: dict[str, str], *, row_start: bool = False) -> str:
    """``text`` as the text of a LaTeX ``tabular`` cell: each character by ``table`` (the command's map of
    LaTeX's special characters), a control character (tab, line break, ...) written as :func:`text_cell`
    writes it (``\\t`` in print: a name stays one name on one line). ``row_start``: the first cell of a row
    gets ``{}`` before a leading ``[`` or ``*``, which the ``\\\\`` ending the row above (or booktabs'
    ``\\midrule``) would read as its own argument."""
    import unicodedata

    out = "".join(table[c] if c in table else tex_cell(repr(c)[1:-1], table) if unicodedata.category(c) == "Cc"
                  else c for c in text)
    return "{}" + out if row_start and out.lstrip().startswith(("[", "*")) else out


def one_line(value: Any) -> str:
    """``value`` as text on one line: every character Python does not call printable (:meth:`str.isprintable`:
    tab, line breaks, other control, format and separator characters) written as :func:`repr` writes it
    (``\\t``, ``\\n``, ``\\r``, ``\\x07``, ``\\u2028``), every other character (a backslash too) as it is.
    For a whole message (a stderr line) whose own text may hold a backslash; a name is :func:`text_cell`."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def text_cell(value: Any) -> str:
    """A name from the data (system, metric, domain, group, condition) as it is shown in a ``-f text``
    table: on one line, every character Python does not call printable (:meth:`str.isprintable`: tab, line
    breaks, other control, format and separator characters) written as :func:`repr` writes it (``\\t``,
    ``\\n``, ``\\r``, ``\\x07``, ``\\u2028``), a backslash doubled (``\\\\``, so that a name holding the two
    characters backslash, t and one holding a tab stay two names), every other character as it is: a name
    without a backslash or such a character is shown unchanged. TSV/CSV/JSON keep names verbatim."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable() and "\\" not in text:
        return text
    return "".join("\\\\" if c == "\\" else c if c.isprintable() else repr(c)[1:-1] for c in text)


def text_width(text: str) -> int:
    """Terminal columns of ``text`` (one line, e.g. :func:`text_cell`'s): 2 for East Asian wide and
    full-width characters, 0 for combining marks, 1 for every other character."""
    import unicodedata

    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me") else
               2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def text_pad(text: str, width: int, align: str = "<") -> str:
    """``text`` padded with spaces to ``width`` terminal columns (:func:`text_width`): ``<`` left, ``>`` right."""
    fill = " " * max(0, width - text_width(text))
    return text + fill if align == "<" else fill + text


def write_tables_atomic(
    outputs: Sequence[tuple[pl.DataFrame, str | os.PathLike[str]]],
    *,
    metadata: dict[str, str] | None = None,
    sidecar: str | None = None,
) -> list[Path]:
    """Write several tables so that either all of them appear or none does.

    Each table is written to a temporary file beside its destination; only when every
    write has succeeded are they renamed into place. Parquet files carry ``metadata`` in
    their schema metadata; a ``.gz`` name is gzip-compressed (text formats; ``.parquet.gz``
    is refused). With ``sidecar`` (the run signature as a JSON object), every text-format
    output also gets ``<output>.signature.json`` holding it and the stamp of the output
    (:func:`ddpcore.io.sidecars.sidecar_text`), written in the same all-or-nothing step.
    Check the paths first with :func:`ddpcore.io.outputs.check_outputs`.
    """
    dests = [Path(d) for _, d in outputs]
    fmts = [detect_format(d) for d in dests]
    for d, fmt in zip(dests, fmts):
        if fmt == "parquet" and _is_gzip(d):
            raise DDPUsageError(f"{d}: Parquet is compressed internally and cannot be gzipped; drop the .gz", code="D136")
    with contextlib.ExitStack() as stack:
        tmps = [stack.enter_context(atomic_path(d)) for d in dests]
        for (df, _), d, fmt, tmp in zip(outputs, dests, fmts, tmps):
            _write_to(df, fmt, tmp, metadata, compress=_is_gzip(d))
        if sidecar is not None:
            from .sidecars import sidecar_path, sidecar_text

            for d, fmt, tmp in zip(dests, fmts, tmps):
                if fmt != "parquet":  # the signature and the stamp of the finished data file
                    stack.enter_context(atomic_path(sidecar_path(d))).write_text(
                        sidecar_text(json.loads(sidecar), tmp), encoding="utf-8")
    return dests
