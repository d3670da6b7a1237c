"""Read segment tables (one row per segment of a source document) for DDP profiling.

Accepted inputs: a table file (JSONL, CSV, TSV, JSON, Parquet), an in-memory table
(polars/pandas/pyarrow), or a folder of plain-text documents (``*.txt``; one document
per file, document id = file name without extension; a blank line separates segments).

The returned frame is validated (columns present, text non-empty, ids unique) and has
the columns ``document_id, segment_id, domain, source`` under the caller's chosen names
plus any extra input columns, and an internal ``__row`` column (0-based input row).
"""
from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DDPDataError, DDPUsageError
from ..schema import BLANK_CHARS, INVISIBLE, SegmentColumns, blank_note
from .tables import read_table, require_columns, role_clash

if TYPE_CHECKING:
    import polars as pl

ROW = "__row"
#: the batch-local document ordinal column the pipeline adds to a batch (ddpcore.pipeline.arrays.DOC)
DOC_ORDINAL = "__doc"
#: the sort key of a segment within its document the engines add to the frame (ddpcore.engines.local.SEGKEY):
#: an input column of this name was overwritten by it and then dropped from the output
SEGMENT_KEY = "__segkey"
#: input column names ddpcore uses for its own columns: an input column of one of these names is D265
RESERVED_COLUMNS = (ROW, DOC_ORDINAL, SEGMENT_KEY)




def read_text_folder(folder: Path, cols: SegmentColumns) -> pl.DataFrame:
    """One row per blank-line-separated segment of every ``*.txt`` file in ``folder``."""
    import polars as pl

    return pl.concat(list(iter_text_folder(folder, cols)))


def iter_text_folder(folder: Path, cols: SegmentColumns) -> Iterator[pl.DataFrame]:
    """:func:`read_text_folder` one document (file) at a time, in file-name order (the
    ``lines`` mode of :func:`ddpcore.io.readers.iter_txt_folder`, the one folder reader)."""
    from .readers import iter_txt_folder

    return iter_txt_folder(folder, cols, "lines")


def missing_domain_note(columns: Any, cols: SegmentColumns, name: Any) -> str | None:
    """The line that says a domain column named other than the default (``--domain-col``, ``domain_col=``) is
    absent from the input's ``columns`` (most likely misspelt: every segment then has no domain, and the summary
    one group); None when the column is there or is the default's name (the domain column is optional)."""
    if cols.domain == SegmentColumns().domain or cols.domain in columns:
        return None
    near = [c for c in columns if c.lower() == cols.domain.lower()]
    hint = f"; did you mean '{near[0]}'? (names are case-sensitive)" if near else ""
    return (f"--domain-col {cols.domain}: no such column in {name}, so no segment has a domain (the summary has one "
            f"group, (none)); available columns: {', '.join(columns)}{hint}")


def read_segments(source: Any, cols: SegmentColumns = SegmentColumns(), *, require_domain: bool = False,
                  name: str | None = None, row_offset: int = 0,
                  warn: Callable[[str], None] | None = None) -> pl.DataFrame:
    """Read and validate a segment table; see the module docstring.

    Rows are returned in input order with ``__row`` (0-based, plus ``row_offset`` when
    ``source`` is one chunk of a larger input: messages then name rows of the whole input).
    ``name`` names an in-memory table in messages. ``domain`` is added as a null string
    column when absent (unless ``require_domain``); ``warn`` (e.g. ``warnings.warn``) is told when a
    domain column named other than the default is absent (:func:`missing_domain_note`).

    Raises
    ------
    DDPDataError
        missing column (D110), null/empty text (D111), null ids (D112), duplicated
        (document, segment) ids (D113), unreadable or non-UTF-8 file (D102-D104).
    """
    import polars as pl

    if name is None:
        name = source if isinstance(source, (str, os.PathLike)) else "<table>"
    if isinstance(source, (str, os.PathLike)):
        check_input_path(Path(source))
    if isinstance(source, (str, os.PathLike)) and Path(source).is_dir():
        df = read_text_folder(Path(source), cols)
    else:
        df = read_table(source, text_columns=(cols.text,), key_columns=(cols.document, cols.segment))
    clash = role_clash([("--document-col", cols.document), ("--segment-col", cols.segment),
                        ("--text-col", cols.text), ("--domain-col", cols.domain)])
    if clash is not None:  # the wording of D972 (check_distinct_columns), naming the two flags
        first, second, col = clash
        raise DDPUsageError(f"{first} and {second} both name the column '{col}'; one column cannot have two roles, "
                            "give each its own column (the document, segment, text and domain columns must be four "
                            "different names)", code="D114")
    clash = cols.output_clash()
    if clash is not None:  # polars' DuplicateError, or the input's column silently replaced by the run's
        flag, col, table = clash
        raise DDPUsageError(f"{flag} {col} (the {flag[2:-4]} column) has the name of a column the run writes in its "
                            f"{table}; rename the input column (e.g. df.rename({{'{col}': 'input_{col}'}}) or the "
                            f"file's header) and choose the new name with {flag}", code="D970")
    if df.height == 0:
        raise DDPDataError(f"{name}: the table has no rows", code="D106")
    required = [cols.document, cols.segment, cols.text] + ([cols.domain] if require_domain else [])
    require_columns(df, required, name, flags=cols.flags())
    df = check_id_types(df, cols, name, row_offset)
    reserved = [c for c in RESERVED_COLUMNS if c in df.columns]
    if reserved:  # ROW: with_row_index below would fail (DuplicateError); DOC_ORDINAL, SEGMENT_KEY: a run drops it
        raise DDPDataError(f"{name}, column '{reserved[0]}': the name is reserved for ddpcore's own columns "
                           f"({', '.join(RESERVED_COLUMNS)}); rename or drop the column", code="D265")
    if cols.domain not in df.columns:
        note = missing_domain_note(df.columns, cols, name) if warn is not None else None
        if note is not None:
            warn(note)
        df = df.with_columns(pl.lit(None, dtype=pl.String).alias(cols.domain))
    df = df.with_row_index(ROW, offset=row_offset)

    if isinstance(df[cols.text].dtype, (pl.Categorical, pl.Enum)):
        # dictionary-encoded text (pandas category, a Parquet dictionary column) is text
        df = df.with_columns(pl.col(cols.text).cast(pl.String))
    text = df[cols.text]
    if text.dtype != pl.String:
        first = df.filter(pl.col(cols.text).is_not_null()).head(1)
        at = f", row {int(first[ROW][0]) + 1}" if first.height else ""
        what = (f"{text.dtype} values (e.g. {first[cols.text][0]!r}), not strings" if first.height
                else f"type {text.dtype} and no values")
        simple = text.dtype.is_numeric() or text.dtype == pl.Boolean
        raise DDPDataError(
            f"{name}{at}, column '{cols.text}': expected text, found {what}; "
            + ("the text column must hold strings, even a text of digits: write such texts as strings "
               "(\"123\" in JSON, a string column in Parquet or a data frame), or " if simple else "")
            + ("bytes are not text: store the texts as a string column (UTF-8), or " if text.dtype == pl.Binary else "")
            + "choose the text column with --text-col",
            code="D111",
        )
    bad = df.filter(pl.col(cols.text).is_null() | (pl.col(cols.text).str.strip_chars(BLANK_CHARS).str.len_chars() == 0))
    if bad.height:
        row = int(bad[ROW][0])
        ids = ", ".join(f"{what} {'id missing' if v is None else repr(v)}"  # never "segment None"
                        for what, v in (("document", bad[cols.document][0]), ("segment", bad[cols.segment][0])))
        raise DDPDataError(
            f"{name}, row {row + 1}, column '{cols.text}': empty source text ({ids}{blank_note(bad[cols.text][0])}); "
            f"fill it or drop the row ({bad.height} empty row(s) in total)",
            code="D111",
        )
    for col in (cols.document, cols.segment):
        missing = pl.col(col).is_null()
        if df.schema[col].is_float():  # a NaN id is as missing as a null one (NaN == NaN is no key)
            missing = missing | pl.col(col).is_nan()
        nulls = df.filter(missing)
        if nulls.height:
            raise DDPDataError(
                f"{name}, row {int(nulls[ROW][0]) + 1}, column '{col}': missing id"
                f"{' (NaN)' if nulls[col][0] is not None else ''}; every row needs a document id and a segment id",
                code="D112",
            )
    check_header_rows(df, cols, name)
    check_unique_ids(df, cols, name)
    return df


def _char_class(chars: str) -> str:
    """``chars`` escaped for a character class of both Rust's (polars) and Python's regular expressions."""
    return "".join(f"\\u{ord(c):04X}" for c in chars)


_EDGE_BLANK = _char_class(BLANK_CHARS.replace("\n", ""))
_EDGE_INVISIBLE = _char_class(INVISIBLE)
#: a non-blank line that starts or ends with invisible characters (after any white space)
_INVISIBLE_EDGE = (f"(?m)^[{_EDGE_BLANK}]*[{_EDGE_INVISIBLE}][{_EDGE_BLANK}]*[^{_EDGE_BLANK}\\n]"
                   f"|[^{_EDGE_BLANK}\\n][{_EDGE_BLANK}]*[{_EDGE_INVISIBLE}][{_EDGE_BLANK}]*$")


def invisible_edges(df: pl.DataFrame, cols: SegmentColumns, *, rows: bool = True) -> dict[str, Any] | None:
    """The :data:`ddpcore.schema.INVISIBLE_EDGES` entry of the validated segments ``df``: how many have a
    non-blank line that starts or ends with invisible characters (U+200B, U+FEFF, U+2060...; after any white
    space), which the parse leaves out (:func:`ddpcore.pipeline.stages.split_units`), and the first of them
    (its ids, its first such character and, with ``rows`` and a ``ROW`` column, its 1-based row). None when
    no segment has one. Vectorised: a length comparison over every text (ASCII texts hold none), a substring
    search and the regular expression over the others."""
    import polars as pl

    text = df[cols.text]
    if text.dtype != pl.String or df.height == 0:
        return None
    wide = (text.str.len_bytes() != text.str.len_chars()).fill_null(False)  # every INVISIBLE is beyond ASCII
    if not wide.any():
        return None
    sub = df.filter(wide)
    hit = sub.filter(pl.col(cols.text).str.contains_any(list(INVISIBLE)).fill_null(False)
                     & pl.col(cols.text).str.contains(_INVISIBLE_EDGE).fill_null(False))
    if hit.height == 0:
        return None
    first = hit.row(0, named=True)
    edge = re.search(_INVISIBLE_EDGE, first[cols.text])  # one text
    char = next((c for c in (edge.group(0) if edge else "") if c in INVISIBLE), "\u200b")

    def plain(v: Any) -> Any:
        return v if isinstance(v, (int, str)) else str(v)

    entry: dict[str, Any] = {"segments": hit.height, "document": plain(first[cols.document]),
                             "segment": plain(first[cols.segment]), "char": f"U+{ord(char):04X}"}
    if rows and ROW in df.columns:
        entry["row"] = int(first[ROW]) + 1
    return entry


def add_invisible_edges(total: dict[str, Any] | None, more: dict[str, Any] | None) -> dict[str, Any] | None:
    """Two :func:`invisible_edges` entries (of consecutive chunks) as one: the counts added, the first kept."""
    if more is None or total is None:
        return total or more
    return {**total, "segments": total["segments"] + more["segments"]}


# ------------------------------------------------------------------ the text the parse reads (text view)
#: full-width forms of the ASCII characters ! .. ~ (U+FF01-U+FF5E), read as those characters
_FULL_WIDTH = [chr(c) for c in range(0xFF01, 0xFF5F)]
_HALF_WIDTH = [chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)]
#: the Latin typographic ligatures (U+FB00-FB06, text extracted from PDFs: "Oﬃce") and their letters (NFKC);
#: other compatibility forms (superscripts, circled digits, blackletter ℌ) say something else and are kept
_LIGATURES = [chr(c) for c in range(0xFB00, 0xFB07)]
_LIGATURE_LETTERS = ["ff", "fi", "fl", "ffi", "ffl", "st", "st"]
#: what attaches to the character before it: combining marks, invisible characters, Hangul vowel/final jamo
_ATTACHED = f"\\p{{M}}{_EDGE_INVISIBLE}\\u1160-\\u11FF\\uD7B0-\\uD7FF"
#: the spans of a text the view may change: a character with what attaches to it (or a run of such at the start
#: of a line), a full-width ASCII character, a carriage return (with the line feed after it)
_SPECIAL = f"[^{_ATTACHED}\\r\\n][{_ATTACHED}]+|[{_ATTACHED}]+|[\\uFF01-\\uFF5E\\uFB00-\\uFB06]|\\r\\n?"
_LINE_EDGE_RUN = f"(?m)^[{_EDGE_BLANK}]+|[{_EDGE_BLANK}]+$"
#: the forms of a text the parse reads otherwise (:func:`text_view`), in the order of TEXT_FORMS entries
TEXT_FORMS = ("invisible", "decomposed", "full_width", "carriage_return", "ligature")


def _text_forms(text: pl.Series) -> pl.DataFrame:
    """One boolean column per :data:`TEXT_FORMS` entry for each text (null texts: False): an invisible
    character inside a line (not at its edges, which the INVISIBLE_EDGES entry counts), a combining sequence
    not in NFC (``e`` + U+0301 for ``é``), a full-width ASCII character, a carriage return not before a line
    feed between two words of a line (which it then splits; at a line's edge it changes nothing). The costlier
    tests run on the texts that can hold the form only."""
    import polars as pl

    wide = (text.str.len_bytes() != text.str.len_chars()).fill_null(False)  # every form but CR is beyond ASCII
    inv = wide & text.str.contains_any(list(INVISIBLE)).fill_null(False)
    marks = wide & text.str.contains(f"[{_ATTACHED}]").fill_null(False)
    out = {f: np.zeros(len(text), dtype=bool) for f in TEXT_FORMS}
    if inv.any():
        sub = text.filter(inv)
        out["invisible"][inv.to_numpy()] = sub.str.replace_all(_LINE_EDGE_RUN, "").str.contains_any(
            list(INVISIBLE)).fill_null(False).to_numpy()
    if marks.any():
        sub = text.filter(marks)
        out["decomposed"][marks.to_numpy()] = (sub.str.normalize("NFC") != sub).fill_null(False).to_numpy()
    if wide.any():
        fw = text.filter(wide).str.contains("[\\uFF01-\\uFF5E]")
        out["full_width"][wide.to_numpy()] = fw.fill_null(False).to_numpy()
    out["carriage_return"] = text.str.contains("\\S[^\\S\\n]*\\r[^\\S\\n]*\\S").fill_null(False).to_numpy()
    if wide.any():
        out["ligature"][wide.to_numpy()] = text.filter(wide).str.contains("[\\uFB00-\\uFB06]").fill_null(False).to_numpy()
    return pl.DataFrame(out)


def normalised_text(df: pl.DataFrame, cols: SegmentColumns, *, rows: bool = True) -> dict[str, Any] | None:
    """The :data:`ddpcore.schema.NORMALISED_TEXT` entry of the validated segments ``df``: how many have a form
    the parse reads otherwise (:data:`TEXT_FORMS`, :func:`text_view`; invisible characters at a line's edges
    are :func:`invisible_edges`'), how many of each form, and the first of them (its ids, its first such
    character and, with ``rows`` and a ``ROW`` column, its 1-based row). None when no segment has one.
    Vectorised: only texts beyond ASCII or holding a carriage return are looked at."""
    import unicodedata

    import polars as pl

    text = df[cols.text]
    if text.dtype != pl.String or df.height == 0:
        return None
    look = ((text.str.len_bytes() != text.str.len_chars()) | text.str.contains("\r", literal=True)).fill_null(False)
    if not look.any():
        return None
    sub = df.filter(look)
    forms = _text_forms(sub[cols.text])
    hit = forms.select(pl.any_horizontal(pl.all())).to_series()
    if not hit.any():
        return None
    i = int(hit.arg_true()[0])
    first, t = sub.row(i, named=True), sub[cols.text][i]
    form = next(f for f in TEXT_FORMS if forms[f][i])
    inner = re.sub(_LINE_EDGE_RUN, "", t)  # one text (an invisible character: not at a line's edge)
    found = {"invisible": lambda c: c in INVISIBLE and c in inner,
             "decomposed": lambda c: bool(unicodedata.combining(c)) or unicodedata.normalize("NFC", c) != c,
             "full_width": lambda c: 0xFF01 <= ord(c) <= 0xFF5E, "carriage_return": lambda c: c == "\r",
             "ligature": lambda c: 0xFB00 <= ord(c) <= 0xFB06}[form]
    char = next((c for c in t if found(c)), t[0])  # (Hangul jamo that compose: no one character says it)

    def plain(v: Any) -> Any:
        return v if isinstance(v, (int, str)) else str(v)

    entry: dict[str, Any] = {"segments": int(hit.sum()),
                             "forms": {f: int(forms[f].sum()) for f in TEXT_FORMS if forms[f].any()},
                             "document": plain(first[cols.document]), "segment": plain(first[cols.segment]),
                             "char": f"U+{ord(char):04X}"}
    if rows and ROW in df.columns:
        entry["row"] = int(first[ROW]) + 1
    return entry


def add_normalised_text(total: dict[str, Any] | None, more: dict[str, Any] | None) -> dict[str, Any] | None:
    """Two :func:`normalised_text` entries (of consecutive chunks) as one: the counts added, the first kept."""
    if more is None or total is None:
        return total or more
    forms = {f: total["forms"].get(f, 0) + more["forms"].get(f, 0) for f in TEXT_FORMS
             if f in total["forms"] or f in more["forms"]}
    return {**total, "segments": total["segments"] + more["segments"], "forms": forms}


@dataclass(frozen=True)
class TextView:
    """The texts as the parse reads them (:func:`text_view`) and the way back to the texts as given.

    ``texts`` (n,) the view of every text; ``changed`` (n,) bool, the texts whose view differs. The pieces of
    the changed texts (each span the view may change, and the text between two spans), in text order, each of
    shape ``(n_cl,)`` int64: ``row__cl`` (the text), ``start__cl``/``len__cl`` (in the text as given),
    ``visible__cl`` (its length without the invisible characters that end it), ``view_start__cl``/
    ``view_len__cl`` (in the view); ``width`` exceeds every text's length (the key ``row * width + offset``)."""

    texts: pl.Series
    changed: np.ndarray
    row__cl: np.ndarray
    start__cl: np.ndarray
    len__cl: np.ndarray
    visible__cl: np.ndarray
    view_start__cl: np.ndarray
    view_len__cl: np.ndarray
    width: int

    def to_given(self, row: np.ndarray, pos: np.ndarray, *, end: bool = False) -> np.ndarray:
        """Character offsets ``pos`` in the views of texts ``row`` as offsets in the texts as given (an
        ``end`` offset is one past a token's last character: it maps to one past that character's piece,
        without the invisible characters that end the piece). Vectorised (a binary search per offset)."""
        out = np.asarray(pos, dtype=np.int64).copy()
        m = self.changed[row]
        if not m.any():
            return out
        q = out[m] - (1 if end else 0)
        c = np.searchsorted(self.row__cl * self.width + self.view_start__cl, row[m] * self.width + q, "right") - 1
        k = q - self.view_start__cl[c]
        if end:
            out[m] = self.start__cl[c] + np.where(k >= self.view_len__cl[c] - 1, self.visible__cl[c],
                                                  np.minimum(k + 1, self.len__cl[c]))
        else:
            out[m] = self.start__cl[c] + np.minimum(k, self.len__cl[c] - 1)
        return out

    def to_view(self, row: np.ndarray, pos: np.ndarray, *, end: bool = False) -> np.ndarray:
        """Character offsets ``pos`` in the texts ``row`` as given as offsets in their views."""
        out = np.asarray(pos, dtype=np.int64).copy()
        m = self.changed[row]
        if not m.any():
            return out
        p = out[m]
        q = p - 1 if end else p
        c = np.searchsorted(self.row__cl * self.width + self.start__cl, row[m] * self.width + q, "right") - 1
        out[m] = self.view_start__cl[c] + np.minimum(p - self.start__cl[c], self.view_len__cl[c])
        return out


def text_view(text: pl.Series) -> TextView | None:
    """The texts as the parse reads them: what a reader sees. Invisible characters (:data:`INVISIBLE`) are
    left out wherever they are (``Jo\\u200bhn`` reads ``John``), every combining sequence is composed (NFC:
    ``e`` + U+0301 reads ``é``), full-width ASCII characters read as ASCII, a Latin ligature as its letters
    (``Oﬃce`` reads ``Office``), and a carriage return not before a line feed reads as a line break (as the ``.txt`` reader reads it; CR LF reads as LF). Only those spans
    change (:data:`_SPECIAL`, each normalised on its own), so every offset of the view maps back to the text as
    given (:meth:`TextView.to_given`). None when no text changes. Vectorised: only texts holding such a span
    are cut, at those spans, into pieces (the text between two spans is one piece)."""
    import polars as pl

    look = ((text.str.len_bytes() != text.str.len_chars()) | text.str.contains("\r", literal=True)).fill_null(False)
    if not look.any():
        return None
    rows = np.flatnonzero(look.to_numpy())
    sub = text.gather(rows)
    need = (_text_forms(sub).select(pl.any_horizontal(pl.all())).to_series() | sub.str.contains("\r", literal=True)
            | sub.str.contains_any(list(INVISIBLE))).fill_null(False).to_numpy()
    if not need.any():
        return None
    rows, sub = rows[need], sub.filter(pl.Series(need))
    cut = next(c for c in ("\x00", *map(chr, range(0xFDD0, 0xFDF0)))  # a character no text holds (noncharacters)
               if not sub.str.contains(c, literal=True).any())
    c = pl.col("c")
    piece = (pl.DataFrame({"row": rows.astype(np.int64), "c": sub.str.replace_all(_SPECIAL, f"{cut}$0{cut}")
                           .str.split(cut)})
             .explode("c")
             .with_columns(special=(pl.int_range(pl.len()).over("row") % 2) == 1)  # text, span, text, span, ..., text
             .with_columns(v=pl.when(~pl.col("special")).then(c).when(c.is_in(["\r", "\r\n"])).then(pl.lit("\n"))
                           .otherwise(c.str.replace_all(f"[{_EDGE_INVISIBLE}]", "")
                                      .str.replace_many(_FULL_WIDTH, _HALF_WIDTH)
                                      .str.replace_many(_LIGATURES, _LIGATURE_LETTERS).str.normalize("NFC")))
             .with_columns(n=c.str.len_chars().cast(pl.Int64), vis=c.str.strip_chars_end(INVISIBLE).str.len_chars()
                           .cast(pl.Int64), vn=pl.col("v").str.len_chars().cast(pl.Int64))
             .with_columns(start=pl.col("n").cum_sum().over("row") - pl.col("n"),
                           vstart=pl.col("vn").cum_sum().over("row") - pl.col("vn")))
    views = piece.group_by("row", maintain_order=True).agg(pl.col("v").str.join(""))
    texts = (pl.DataFrame({"row": np.arange(len(text), dtype=np.int64), "t": text})
             .join(views, on="row", how="left", maintain_order="left")
             .select(pl.coalesce("v", "t").alias(text.name)).to_series())
    changed = np.zeros(len(text), dtype=bool)
    changed[rows] = (texts.gather(rows) != sub).fill_null(False).to_numpy()
    if not changed.any():
        return None
    piece = piece.filter(pl.Series(changed[piece["row"].to_numpy()]))
    width = int(max(text.str.len_chars().max() or 0, texts.str.len_chars().max() or 0)) + 2  # type: ignore[operator]
    a = {k: piece[k].to_numpy().astype(np.int64) for k in ("row", "start", "n", "vis", "vstart", "vn")}
    return TextView(texts, changed, a["row"], a["start"], a["n"], a["vis"], a["vstart"], a["vn"], width)


def check_header_rows(df: pl.DataFrame, cols: SegmentColumns, name: Any) -> None:
    """D103 for a row whose ids and text are the column names: the header of a second file joined on
    (``cat a.csv b.csv``), which would be profiled as a segment and turn integer ids into text."""
    import polars as pl

    own = [c for c in (cols.document, cols.segment, cols.text) if df[c].dtype == pl.String or c == cols.text]
    if len(own) < 3:  # an integer id column holds no header
        return
    hit = df.filter(pl.all_horizontal(pl.col(c) == c for c in own))
    if hit.height:
        raise DDPDataError(
            f"{name}, row {int(hit[ROW][0]) + 1}: the row repeats the header ('{cols.document}', '{cols.segment}', "
            f"'{cols.text}'), as where two files are joined with their headers (cat a.csv b.csv); remove the row "
            f"({hit.height} such row(s))", code="D103")


def check_unique_ids(df: pl.DataFrame, cols: SegmentColumns, name: Any) -> None:
    """Raise D113 naming the first two input rows (``ROW``) that share a (document, segment) id."""
    import polars as pl

    # a 64-bit hash of each pair, sorted with numpy: ~16 bytes per row (a struct is_duplicated over a
    # million string ids peaked at ~170 MB); only rows whose hash repeats are compared exactly
    h = (df[cols.document].hash(seed=0).to_numpy() * np.uint64(0x9E3779B97F4A7C15)) ^ \
        df[cols.segment].hash(seed=1).to_numpy()
    s = np.sort(h)
    repeated = s[1:][s[1:] == s[:-1]]
    if not len(repeated):
        return
    cand = df.filter(pl.Series(np.isin(h, repeated)))
    dup = cand.filter(pl.struct(cols.document, cols.segment).is_duplicated())
    if dup.height:
        first = dup.sort(ROW)
        rows = first[ROW].head(2).to_list()
        raise DDPDataError(
            f"{name}, rows {rows[0] + 1} and {rows[1] + 1}, columns '{cols.document}'/'{cols.segment}': "
            f"duplicated id (document {first[cols.document][0]!r}, segment {first[cols.segment][0]!r}); "
            "each (document, segment) pair must be unique",
            code="D113",
        )


def check_input_path(path: Path) -> None:
    """Refuse a missing path or a symbolic-link loop with a clear D102 (before the extension check)."""
    try:
        os.stat(path)
    except FileNotFoundError:
        if path.is_symlink():
            raise DDPDataError(f"{path}: is a symbolic link to {os.readlink(path)}, which does not exist", code="D102") from None
        raise DDPDataError(f"{path}: file not found; check the path", code="D102") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DDPDataError(
                f"{path}: is a symbolic link that points (directly or through others) to itself; "
                "give the real file or folder", code="D102") from None
        raise DDPDataError(f"{path}: cannot read ({exc.strerror}); check the path and permissions", code="D102") from None


_INT64_MAX = 2**63 - 1


def check_id_types(df: pl.DataFrame, cols: SegmentColumns, name: Any, row_offset: int = 0) -> pl.DataFrame:
    """Ids must be integers within 64 bits, or text: nested/binary ids (D108) and integers beyond
    the 64-bit range (D107) are refused naming the column, the row and the value."""
    import polars as pl

    for col, flag in ((cols.document, "--document-col"), (cols.segment, "--segment-col")):
        dtype = df[col].dtype
        if dtype.is_nested() or dtype in (pl.Binary, pl.Object):
            raise DDPDataError(
                f"{name}, column '{col}': ids must be integers or text, found type {dtype}; "
                f"choose the id column with {flag} or convert it", code="D108")
        if dtype in (pl.Int128, pl.UInt64) or str(dtype) == "UInt128":
            over = df.with_row_index("__r", offset=row_offset).filter((pl.col(col) > _INT64_MAX) | (pl.col(col) < -_INT64_MAX - 1))
            if over.height:
                raise DDPDataError(
                    f"{name}, row {int(over['__r'][0]) + 1}, column '{col}': "
                    f"id {over[col][0]} is outside the 64-bit integer range (|id| < 2**63); renumber the ids "
                    f"({over.height} such row(s)) or store them as quoted JSON strings", code="D107")
            df = df.with_columns(pl.col(col).cast(pl.Int64))
    return df
