"""Select rows of a test set by DDP and write them back in the input's own format, verbatim.

``ddp select`` (and ``ddp sample``, :mod:`ddpcore.curate.sample`) work in two streaming passes over
the input and never hold its texts in memory:

1. **Index.** The input is read chunk by chunk through :func:`ddpcore.io.sources.iter_input_chunks`
   (the profile's batch reader). Each chunk's (document id, segment id) pairs are hashed (64 bits,
   ids read as text), looked up in the profile's sorted hashes and checked exactly against the
   profile ids found (:func:`index_and_match`); only the matched profile row (8 bytes per input
   row) is kept, no ids or texts. An input row without a profile row, or a profile row without an
   input row, is a D636/D637 data error that names the first such id (the profile was made from
   another input). Memory: one chunk, the profile's columns, and a few numpy arrays of shape
   (n_rows,) (the profile columns per input row, the keep mask).
2. **Copy.** The selection is a boolean mask over input rows, computed with numpy on the matched
   profile columns (``ddp``, ``first_sentence``, ``n_sentences``, domain). The input is then read
   again as bytes, in 4 MiB blocks, and the selected rows are copied as they are: JSONL lines and
   CSV/TSV records (header first) byte for byte, so values, key order, number formatting, quoting
   and line endings do not change; Parquet row groups are filtered with Arrow (same schema, same
   values, the input's own metadata plus the signature); a JSON array is re-serialised (same
   values; the only format that is not copied byte for byte). A ``.gz`` input is read through
   gzip; the output is compressed when its name ends in ``.gz``.

Row boundaries are found without a Python loop over rows: JSONL rows are the lines holding a
non-blank byte (blank lines are skipped, as the readers do); a CSV record ends at a newline with
an even number of ``"`` before it in the record (RFC 4180 quoting; ``""`` counts twice); TSV is
quoted the same way (as pandas ``to_csv(sep="\\t")`` and polars ``write_csv(separator="\\t")``
write it, and as the readers read it), so a quoted tab or line break stays inside its record (CSV
and TSV blank lines are records, as polars reads them). A UTF-8 BOM belongs to the first line:
it is copied with the CSV/TSV header, and with the first JSONL line when that row is kept (the
readers parse the ids without it). Pass 2 checks that it found as many records as pass 1 read
rows (D638 otherwise).

Selection (:func:`select_mask`): a unit is a segment (``level="segment"``, value = its DDP) or a
document (``level="document"``, value = the max DDP of its segments; whole documents are kept).
``domains`` restricts the units first; ``min_ddp``/``max_ddp`` are inclusive bounds;
``top_share`` = F keeps the units whose value is at least the value of the ⌈F·n⌉-th highest of
the n eligible units (ties at that value are kept, so slightly more than F·n may be kept).
``with_context`` adds, to every selected segment, the earlier segments of its document back to
the one holding sentence ``first_sentence - ddp`` (the sentence its DDP reaches), so a selected
subset stays self-contained (:func:`context_mask`); with ``level="document"`` it is refused (D890): whole
documents hold that context already, and the signature would record a context that changed nothing.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._version import __version__
from .. import schema
from ..errors import DDPDataError, DDPUsageError
from ..io.segments import ROW, SegmentColumns, check_unique_ids
from ..io.sidecars import sidecar_text
from ..io.profiles import (check_ddp_col, check_ddp_values, check_no_null_ddp, check_sentence_counts,  # noqa: F401
                           profile_columns, read_signature)
from ..schema import SIGNATURE_KEY
from ..signature import json_safe

if TYPE_CHECKING:
    import polars as pl

#: bytes read per block in the copy pass
BLOCK_BYTES = 4 << 20
LEVELS = ("segment", "document")


# ----------------------------------------------------------------------------- the profile


@dataclass
class Profile:
    """A DDP profile: ``frame`` with the id columns (names in ``cols``), ``domain``,
    ``n_sentences``, ``ddp`` and ``first_sentence`` (sentences, document-level index), and the
    ``signature`` of the run that wrote it (``{}`` if none was found)."""

    frame: pl.DataFrame
    cols: SegmentColumns
    signature: dict[str, Any]
    path: str
    #: the DDP column every selection, bin and summary uses (``--ddp-col``)
    ddp_col: str = schema.DDP


def load_profile(path: str | os.PathLike[str], cols: SegmentColumns | None = None, *,
                 need: Sequence[str] = (schema.DDP, schema.FIRST_SENTENCE, schema.N_SENTENCES),
                 ddp_col: str = schema.DDP) -> Profile:
    """Read a ``ddp profile`` segment table (Parquet, or a text format with its sidecar).

    Only the id, domain and ``need`` columns are read, with ``ddp_col`` in place of ``ddp`` (the DDP
    column used: ``--ddp-col``, e.g. ``ddp_certified``). Missing columns -> D635 (exit 3); no rows ->
    D106 (exit 3); a ``ddp_col`` the profile does not have -> D780, one that holds no whole numbers >= 0
    or a row without a value (null) -> D781 (exit 2), naming the file, the first such row and the column:
    a missing DDP is never read as 0.
    """
    import polars as pl

    from ..io.profiles import read_profile_table

    p = Path(path)
    if not p.exists():
        raise DDPDataError(f"--profile {p}: file not found; make it with `ddp profile INPUT -o {p}`", code="D635")
    sig = read_signature(p)
    cols = cols or profile_columns(sig)
    need = [ddp_col if c == schema.DDP else c for c in need]
    try:
        if str(p).lower().endswith((".parquet", ".pq")):
            names = pl.read_parquet_schema(p)
            check_ddp_col(names, ddp_col, f"--profile {p}", names.get(ddp_col))
            want = [c for c in dict.fromkeys((cols.document, cols.segment, cols.domain, *need)) if c in names]
            df, have = pl.read_parquet(p, columns=want), list(names)
        else:  # the ids as written (with or without the sidecar): 007 and 7 are two documents
            df = read_profile_table(p, cols)
            have = df.columns
            check_ddp_col(df.columns, ddp_col, f"--profile {p}", df.schema.get(ddp_col))
    except (DDPDataError, DDPUsageError):
        raise
    except Exception as exc:  # noqa: BLE001 - polars raises several types here
        raise DDPDataError(f"--profile {p}: not a readable table ({str(exc).splitlines()[0]})", code="D635") from None
    missing = [c for c in (cols.document, cols.segment, *need) if c not in df.columns]
    if missing:
        raise DDPDataError(
            f"--profile {p}: column(s) {', '.join(missing)} missing; expected a `ddp profile` segment table "
            f"(columns: {', '.join(have)}); name other id columns with --document-col/--segment-col",
            code="D635")
    if df.height == 0:
        raise DDPDataError(f"--profile {p}: the profile has no rows (no segments); pass the segment table "
                           f"`ddp profile INPUT -o {p}` wrote for the input", code="D106")
    if cols.domain not in df.columns:
        df = df.with_columns(pl.lit(None, dtype=pl.String).alias(cols.domain))
    if ddp_col in df.columns:
        check_ddp_values(df, ddp_col, f"--profile {p}")
        check_no_null_ddp(df, ddp_col, f"--profile {p}")
    check_sentence_counts(df, [c for c in need if c != ddp_col], f"--profile {p}")
    return Profile(df, cols, sig, str(p), ddp_col)




# ----------------------------------------------------------------------------- the input index


@dataclass
class InputIndex:
    """What pass 2 needs of the input: ``n_rows``; ``ids``, for the line-aligned readers the
    ``line_id`` column (0-based line of each row, shape (n_rows,)), else an empty frame; ``fmt``
    is the input's format (``jsonl|csv|tsv|json|parquet``, ``lines`` for ``--reader wmt24|lines``,
    ``wmt25`` for the WMT25 documents JSONL)."""

    ids: pl.DataFrame
    fmt: str
    path: Path
    reader: str = "table"
    docs: Path | None = None
    n_rows: int = 0


def input_format(source: str | os.PathLike[str]) -> str:
    """The table format of an input path (folders and in-memory tables cannot be copied verbatim: D633)."""
    from ..io.tables import detect_format

    p = Path(source)
    if p.is_dir():
        raise DDPUsageError(
            f"{p}: a folder of .txt documents cannot be written back row by row; convert it to a table "
            "(JSONL/CSV/TSV/Parquet) or use a --reader", code="D633")
    return detect_format(p)


@dataclass
class Matched:
    """The profile columns of every input row, in input order (arrays of shape (n_rows,)).

    ``doc``: document code (0.. in order of first appearance); ``ddp``, ``first_sentence``,
    ``n_sentences`` in sentences; ``domain``: domain strings (object array, may hold None; one
    shared string object per distinct domain, so 8 bytes per row)."""

    doc: np.ndarray
    ddp: np.ndarray
    first_sentence: np.ndarray
    n_sentences: np.ndarray
    domain: np.ndarray
    ids: pl.DataFrame

    @property
    def n(self) -> int:
        return int(self.doc.size)


#: seed of the 64-bit row hash of (document, segment) ids (polars ``hash_rows``; a retry adds 7919)
_HASH_SEED = 0


def _id_hash(df: pl.DataFrame, cols: SegmentColumns, attempt: int = 0) -> np.ndarray:
    """64-bit hash of each row's (document, segment) ids, both read as text (so an integer id
    matches the same id stored as text, as a join on text keys would). Shape (n,), uint64."""
    import polars as pl

    keys = df.select(pl.col(cols.document).cast(pl.String), pl.col(cols.segment).cast(pl.String))
    return keys.hash_rows(seed=_HASH_SEED + 7919 * attempt).to_numpy()


def _same_ids(a: pl.DataFrame, b: pl.DataFrame, cols: SegmentColumns) -> np.ndarray:
    """Row-wise exact equality of the (document, segment) ids of ``a`` and ``b`` read as text (bool, (n,))."""
    import polars as pl

    eq = [(a[c].cast(pl.String) == b[c].cast(pl.String)).fill_null(False).to_numpy() for c in
          (cols.document, cols.segment)]
    return eq[0] & eq[1]


@dataclass
class _ProfileKeys:
    """The profile's ids as a sorted hash array: ``h_sorted`` (uint64, (n_profile,)),
    ``order`` (profile row of each sorted hash), the ``attempt`` (hash seed) used, and the
    first duplicated profile row (``dup``: -1 for none)."""

    h_sorted: np.ndarray
    order: np.ndarray
    attempt: int
    dup: int


def _profile_keys(prof: Profile) -> _ProfileKeys:
    """Hash the profile ids; a hash shared by two different ids (a collision, chance about
    n²/2⁶⁵) makes it hash again with another seed. Exact duplicates are found on the rows of
    shared hashes only (no whole-table hash table)."""
    import polars as pl

    cols = prof.cols
    ids = prof.frame.select(cols.document, cols.segment)
    step = 1 << 19  # profile rows hashed at a time (bounds the text copies of integer ids)
    for attempt in range(8):
        hs = np.concatenate([_id_hash(ids.slice(i, step), cols, attempt) for i in range(0, max(ids.height, 1), step)])
        order = np.argsort(hs, kind="stable")
        hs.sort()  # in place: hs[k] is the hash of profile row order[k]
        same = np.flatnonzero(hs[1:] == hs[:-1])
        if same.size == 0:
            return _ProfileKeys(hs, order, attempt, -1)
        rows = np.unique(np.r_[order[same], order[same + 1]])  # profile rows that share a hash, in order
        sub = ids[rows].with_columns(pl.Series("__r", rows))
        keyed = sub.select(pl.col(cols.document).cast(pl.String), pl.col(cols.segment).cast(pl.String), "__r")
        true_dup = keyed.filter(pl.struct(cols.document, cols.segment).is_duplicated())
        n_true = true_dup.select(pl.struct(cols.document, cols.segment).n_unique()).item() if true_dup.height else 0
        groups = np.unique(hs[np.r_[same, same + 1]]).size
        if n_true == groups:  # every shared hash is a real duplicate
            return _ProfileKeys(hs, order, attempt, int(true_dup["__r"].min()))
    raise DDPDataError(f"--profile {prof.path}: cannot index its ids (repeated hash collisions)", code="D637")


def _input_ids(source: Path, cols: SegmentColumns, rows: np.ndarray, reader: str, docs: Path | None
               ) -> pl.DataFrame:
    """``ROW`` and the id columns of the input rows ``rows`` (sorted, 0-based), read again in chunks
    (error paths only)."""
    import polars as pl

    from ..io.segments import check_id_types
    from ..io.sources import iter_input_chunks

    parts, offset = [], 0
    for raw, _ in iter_input_chunks(source, cols, reader=reader, docs=docs):
        if raw.height == 0:
            continue
        raw = check_id_types(raw, cols, str(source), offset)
        lo, hi = np.searchsorted(rows, [offset, offset + raw.height])
        if hi > lo:
            part = raw.select(cols.document, cols.segment).with_row_index(ROW, offset=offset)
            parts.append(part[rows[lo:hi] - offset])
        offset += raw.height
    return pl.concat(parts, how="vertical_relaxed")


def _shown(value: Any, dtype: Any, other: Any) -> Any:
    """An id as a join on mismatched types showed it: as text when the two sides' types differ."""
    return str(value) if dtype != other and value is not None else value


def _shown_key(row: dict[str, Any], cols: Any, types: Any, other: Any) -> tuple[Any, Any]:
    """(document, segment) of ``row`` (whose columns have ``types``) as :func:`_shown` shows them."""
    return tuple(_shown(row[c], types[c], other[c]) for c in (cols.document, cols.segment))  # type: ignore[return-value]


def mtme_layout(source: str | os.PathLike[str], docs: str | os.PathLike[str] | None = None) -> tuple[Path, Path]:
    """The source lines and the ``.docs`` file of an mt-metrics-eval test set given as the folder, ``FOLDER/LP``
    or ``sources/LP.txt`` (``--reader mtme``, :func:`ddpcore.io.mtme.resolve_mtme`: D820/D821): a selection of it
    is written in the line layout, ``OUT.txt`` (the kept source lines) and ``OUT.docs`` (their document lines).
    ``docs`` must be None (D601: the test set's ``documents/LP.docs`` is read)."""
    from ..io.mtme import resolve_mtme

    if docs is not None:
        raise DDPUsageError("--docs is for --reader wmt24 or lines; --reader mtme reads documents/LP.docs",
                            code="D601")
    ms = resolve_mtme(source)
    return ms.source, ms.docs


def index_and_match(source: str | os.PathLike[str], prof: Profile, *, reader: str = "table",
                    docs: str | os.PathLike[str] | None = None) -> tuple[InputIndex, Matched]:
    """Pass 1: read ``source`` in chunks through the profile's readers
    (:func:`ddpcore.io.sources.iter_input_chunks`, ``reader``/``docs`` as ``ddp profile``) and
    find each row's profile row on the spot: the chunk's ids are hashed (64-bit, as text), looked up
    in the profile's sorted hashes and checked exactly against the profile ids found. Kept per input
    row: the matched profile row (int64) and, for ``lines``, the line number; nothing else of the
    input. Ids compare as text (an integer segment id in CSV matches the same id in Parquet).

    Errors, in this order: D106 (no rows), D112 (a missing id), D113 (an input id twice), D637 (a
    profile id twice), D636 (input rows not in the profile), D637 (profile rows not in the input).
    """
    import polars as pl

    from ..io.segments import check_id_types, check_input_path
    from ..io.tables import require_columns
    from ..io.sources import iter_input_chunks, resolve_docs

    cols = prof.cols
    p = Path(source)
    read_from = p  # what the reader is given (an mt-metrics-eval FOLDER/LP names no file)
    if reader == "mtme":
        p, docs_path = mtme_layout(source, docs)
        fmt = "lines"
    else:
        check_input_path(p)
        read_from = p
        if reader in ("wmt24", "lines"):
            fmt = "lines"
        elif reader == "wmt25":
            fmt = "wmt25"
        else:
            fmt = input_format(p)
        docs_path = resolve_docs(p, reader, docs)
    keys = _profile_keys(prof)
    n_prof = prof.frame.height
    pids = prof.frame.select(cols.document, cols.segment)
    prows: list[np.ndarray] = []
    lines: list[np.ndarray] = []
    miss_rows: list[np.ndarray] = []
    miss_hash: list[np.ndarray] = []
    first_miss: dict[str, Any] | None = None
    in_types: dict[str, Any] = {}
    offset = 0
    for raw, _ in iter_input_chunks(read_from, cols, reader=reader, docs=None if reader == "mtme" else docs_path):
        if raw.height == 0:
            continue
        require_columns(raw, [cols.document, cols.segment], str(p), flags=cols.flags())
        raw = check_id_types(raw, cols, str(p), offset)
        idc = raw.select(cols.document, cols.segment)
        null = (idc[cols.document].is_null() | idc[cols.segment].is_null()).to_numpy()
        if null.any():
            raise DDPDataError(f"{p}, row {offset + int(np.flatnonzero(null)[0]) + 1}: missing document or segment "
                               "id; every row needs both", code="D112")
        for c in (cols.document, cols.segment):
            in_types.setdefault(c, idc[c].dtype)
        h = _id_hash(idc, cols, keys.attempt)
        pos = np.minimum(np.searchsorted(keys.h_sorted, h), max(n_prof - 1, 0))
        prow = np.full(h.size, -1, dtype=np.int64)
        if n_prof:
            hit = keys.h_sorted[pos] == h
            cand = keys.order[pos[hit]]
            ok = _same_ids(idc.filter(pl.Series(hit)), pids[cand], cols)
            prow[np.flatnonzero(hit)[ok]] = cand[ok]
        miss = np.flatnonzero(prow < 0)
        if miss.size:
            if first_miss is None:
                r = idc.row(int(miss[0]), named=True)
                first_miss = {"row": offset + int(miss[0]), **r}
            miss_rows.append(miss + offset)
            miss_hash.append(h[miss])
        prows.append(prow)
        if fmt == "lines":
            lines.append(raw["line_id"].to_numpy().astype(np.int64))
        offset += raw.height
    if offset == 0:
        raise DDPDataError(f"{p}: the table has no rows", code="D106")
    prof_dup = keys.dup
    del keys  # the sorted hashes are not needed after pass 1
    prow = np.concatenate(prows)
    del prows
    # D113: matched rows sharing a profile row are the same id; missing rows sharing a hash may be
    counts = np.bincount(prow[prow >= 0], minlength=max(n_prof, 1))  # n_prof 0: every row misses (D636)
    cand = np.flatnonzero((prow >= 0) & (counts[np.maximum(prow, 0)] > 1))
    if miss_rows:
        mr, mh = np.concatenate(miss_rows), np.concatenate(miss_hash)
        o = np.argsort(mh, kind="stable")
        same = np.flatnonzero(mh[o][1:] == mh[o][:-1])
        cand = np.union1d(cand, mr[np.r_[o[same], o[same + 1]]]) if same.size else cand
    if cand.size:
        check_unique_ids(_input_ids(read_from, cols, np.sort(cand), reader, None if reader == "mtme" else docs_path),
                         cols, str(p))
    if prof_dup >= 0:
        r = pids.row(prof_dup, named=True)
        d, s = _shown_key(r, cols, prof.frame.schema, in_types)
        raise DDPDataError(f"--profile {prof.path}: document {d!r}, segment {s!r} appears more than "
                           "once; use the segment table of one `ddp profile` run", code="D637")
    if first_miss is not None:
        n_miss = int(sum(m.size for m in miss_rows))
        d, s = _shown_key(first_miss, cols, in_types, prof.frame.schema)
        raise DDPDataError(
            f"{p}, row {first_miss['row'] + 1}: document {d!r}, segment {s!r} is not in "
            f"the profile {prof.path} ({n_miss} input row(s) missing); the profile was made from another "
            "input: run `ddp profile` on this input", code="D636")
    unmatched = np.flatnonzero(counts == 0)
    if unmatched.size:
        r = pids.row(int(unmatched[0]), named=True)
        d, s = _shown_key(r, cols, prof.frame.schema, in_types)
        raise DDPDataError(
            f"--profile {prof.path}: document {d!r}, segment {s!r} is not in the input "
            f"{p} ({unmatched.size} profile row(s) missing from it); the profile was made from another "
            "input: run `ddp profile` on this input", code="D637")
    ids = pl.DataFrame({"line_id": np.concatenate(lines)}) if fmt == "lines" else pl.DataFrame()
    index = InputIndex(ids, fmt, p, reader, docs_path, n_rows=offset)
    return index, _matched(prof, prow, ids)


def _codes(s: pl.Series) -> np.ndarray:
    """An integer code per value of ``s`` (equal values, equal codes; read as text), -1 for null;
    no sort and no whole-column copy (a categorical with its own categories). Shape (n,), int64."""
    import polars as pl

    cat = s.cast(pl.String).cast(pl.Categorical(pl.Categories.random()))
    return cat.to_physical().fill_null(-1).to_numpy().astype(np.int64)


def _matched(prof: Profile, prow: np.ndarray, ids: pl.DataFrame) -> Matched:
    """The profile columns at the profile rows ``prow`` (one per input row, int64 (n,)). Arrays
    are made one at a time so that at most one profile-length temporary exists besides them."""
    import polars as pl

    f = prof.frame
    cols = prof.cols
    doc = _codes(f[cols.document])[prow]  # profile document codes of the input rows
    n = doc.size
    first = np.full(int(doc.max()) + 1 if n else 0, n, dtype=np.int64)
    np.minimum.at(first, doc, np.arange(n, dtype=np.int64))  # first input row of each document
    remap = np.empty(first.size, dtype=np.int64)
    remap[np.argsort(first, kind="stable")] = np.arange(first.size)
    doc = remap[doc]  # codes in order of first appearance in the input
    dom_s = f[cols.domain]
    dom = _codes(dom_s)
    at = np.flatnonzero(_first_of(dom))
    names = np.full(int(dom.max(initial=-1)) + 2, None, dtype=object)  # names[code + 1]; names[0] = None
    names[dom[at] + 1] = np.array(dom_s[at].cast(pl.String).to_list(), dtype=object)
    domain = names[dom[prow] + 1]
    del dom

    def col(name: str) -> np.ndarray:
        return np.asarray(f[name].fill_null(0).to_numpy(), dtype=np.int64)[prow]

    return Matched(doc=doc, ddp=col(prof.ddp_col), first_sentence=col(schema.FIRST_SENTENCE),
                   n_sentences=col(schema.N_SENTENCES), domain=domain, ids=ids)


def _first_of(codes: np.ndarray) -> np.ndarray:
    """Bool (n,): the first row of each code."""
    seen = np.full(int(codes.max(initial=-1)) + 2, codes.size, dtype=np.int64)
    np.minimum.at(seen, codes + 1, np.arange(codes.size, dtype=np.int64))
    out = np.zeros(codes.size, dtype=bool)
    out[seen[seen < codes.size]] = True
    return out


# ----------------------------------------------------------------------------- selection


def doc_max(doc: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Max of ``values`` per document code (shape (n_docs,))."""
    n_docs = int(doc.max()) + 1 if doc.size else 0
    out = np.full(n_docs, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(out, doc, values)
    return out


def top_threshold(values: np.ndarray, share: float) -> float:
    """The value of the ⌈share·n⌉-th highest of ``values`` (n = values.size); +inf for none (no value reaches it)."""
    if values.size == 0:
        return math.inf
    k = max(1, math.ceil(share * values.size - 1e-9))
    return float(np.partition(values, values.size - k)[values.size - k])


def context_mask(m: Matched, selected: np.ndarray) -> np.ndarray:
    """``selected`` (bool, (n,)) plus, for each selected segment, the earlier segments of its
    document back to the one holding sentence ``first_sentence - ddp`` (bool, (n,)).

    Segments are ordered within a document by ``first_sentence`` (then input order); the segment
    holding sentence t is the last one whose ``first_sentence`` <= t. No Python loop: a sorted
    search finds each start and a difference array marks the ranges.
    """
    n = m.n
    if n == 0 or not selected.any():
        return selected.copy()
    order = np.lexsort((m.first_sentence, m.doc))  # lexsort is stable: ties stay in input order
    doc_s = m.doc[order]
    fs_s = m.first_sentence[order]
    span = int(max(fs_s.max(initial=0), 0)) + 2
    key = doc_s * span + fs_s
    target = doc_s * span  # temporaries are reused in place: the arrays of shape (n,) stay few
    fs_s -= m.ddp[order]
    np.clip(fs_s, 0, None, out=fs_s)
    target += fs_s
    del fs_s
    start = np.searchsorted(key, target, side="right") - 1
    del key, target
    np.maximum(start, np.searchsorted(doc_s, doc_s, side="left"), out=start)
    del doc_s
    sel_s = selected[order]
    pos = np.flatnonzero(sel_s)
    diff = np.bincount(start[sel_s], minlength=n + 1) - np.bincount(pos + 1, minlength=n + 1)
    del start, pos, sel_s
    keep_s = np.cumsum(diff[:n]) > 0
    del diff
    out = np.zeros(n, dtype=bool)
    out[order] = keep_s
    return out | selected


@dataclass
class Criteria:
    """What ``ddp select`` keeps (see the module docstring)."""

    min_ddp: float | None = None
    max_ddp: float | None = None
    top_share: float | None = None
    level: str = "segment"
    domains: tuple[str, ...] = ()
    with_context: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.domains, str):  # one domain's name, not its characters
            self.domains = (self.domains,)

    def check(self) -> None:
        if self.min_ddp is None and self.max_ddp is None and self.top_share is None:
            raise DDPUsageError("say what to keep: --min-ddp X, --max-ddp Y and/or --top-share F", code="D630")
        if self.top_share is not None and not (0.0 < self.top_share <= 1.0):
            raise DDPUsageError(f"--top-share must be in (0, 1] (a share of the units), got {self.top_share}",
                                code="D631")
        for name, v in (("--min-ddp", self.min_ddp), ("--max-ddp", self.max_ddp)):
            if v is not None and (math.isnan(v) or v < 0):
                raise DDPUsageError(f"{name} must be a number >= 0 (sentences), got {v}", code="D632")
        if self.min_ddp is not None and self.max_ddp is not None and self.min_ddp > self.max_ddp:
            raise DDPUsageError(f"--min-ddp {self.min_ddp} is above --max-ddp {self.max_ddp}; nothing could be kept",
                                code="D632")
        if self.level not in LEVELS:
            raise DDPUsageError(f"--unit must be segment or document, got {self.level!r}", code="D630")
        if self.with_context and self.level == "document":  # a no-op that the signature would record as done
            raise DDPUsageError("--with-context with --unit document: whole documents are kept, so the earlier "
                                "segments a DDP reaches into are kept already and --with-context would change "
                                "nothing; drop --with-context, or use --unit segment to add context to segments",
                                code="D890")

    def to_dict(self) -> dict[str, Any]:
        return {"min_ddp": self.min_ddp, "max_ddp": self.max_ddp, "top_share": self.top_share, "level": self.level,
                "domains": list(self.domains), "with_context": self.with_context}


def check_domains(m: Matched, domains: Sequence[str]) -> None:
    """Unknown ``--domain`` values -> D639 listing the profile's domains."""
    import polars as pl

    have = sorted(pl.Series(m.domain, dtype=pl.String).drop_nulls().unique().to_list())  # no loop over rows
    bad = [d for d in domains if d not in have]
    if bad:
        raise DDPUsageError(f"--domain {bad[0]}: not a domain of the profile; domains: {', '.join(have) or '(none)'}",
                            code="D639")


def _units(m: Matched, c: Criteria) -> tuple[np.ndarray, np.ndarray]:
    """(value of each unit, eligible units (bool)) for ``c.level``: segments, or documents by their max DDP
    (a document is eligible when one of its segments is of a ``c.domains`` domain)."""
    eligible = np.isin(m.domain.astype(object), list(c.domains)) if c.domains else np.ones(m.n, dtype=bool)
    if c.level == "document":
        value = doc_max(m.doc, m.ddp)
        elig_u = np.zeros(value.size, dtype=bool)
        elig_u[m.doc[eligible]] = True
        return value, elig_u
    return m.ddp, eligible


def top_share_report(m: Matched, c: Criteria) -> dict[str, Any] | None:
    """What ``--top-share`` asked and what it keeps (``None`` without it): ``eligible_units`` n,
    ``asked_units`` k = ⌈F·n⌉, ``threshold`` (the value of the k-th highest), ``kept_units`` (the
    eligible units at or above it: k plus the units tied with the k-th), ``kept_share`` = kept/n and
    ``tied_at_threshold`` (eligible units with the threshold value). Before ``--min-ddp``/``--max-ddp``
    and ``--with-context``."""
    if c.top_share is None:
        return None
    value, elig_u = _units(m, c)
    v = value[elig_u]
    n = int(v.size)
    k = max(1, math.ceil(c.top_share * n - 1e-9)) if n else 0
    thr = top_threshold(v, c.top_share)
    kept = int(np.count_nonzero(v >= thr))
    return {"top_share": c.top_share, "unit": c.level, "eligible_units": n, "asked_units": k,
            "threshold": None if math.isinf(thr) else int(thr), "kept_units": kept,
            "kept_share": round(kept / n, 6) if n else 0.0,
            "tied_at_threshold": int(np.count_nonzero(v == thr))}


def recorded_note(key: str, signature: bool = True) -> str:
    """Where a stderr note says ``key`` is recorded: ``signature=False`` when the run writes no signature
    (``-o -`` with a text summary: no sidecar, and the summary does not print it)."""
    if signature:
        return f"recorded as {key} in the signature"
    return f"{key} is not recorded: -o - writes no signature; -f json prints it on stderr with the summary"


def ordinal(n: int) -> str:
    """``n`` as an English ordinal: 1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st, 22nd, 23rd, 101st, 111th."""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def top_share_note(rep: dict[str, Any] | None, ddp_col: str = schema.DDP, signature: bool = True) -> str:
    """One line when ``--top-share`` keeps more units than ⌈F·n⌉ (ties at the threshold are kept), else ``""``;
    ``signature``: as :func:`recorded_note`."""
    if rep is None or rep["kept_units"] <= rep["asked_units"]:
        return ""
    unit = "documents" if rep["unit"] == "document" else "segments"
    name = "DDP" if ddp_col == schema.DDP else f"DDP ({ddp_col})"
    return (f"--top-share {rep['top_share']:g} asked for {rep['asked_units']} of the {rep['eligible_units']} {unit} "
            f"(⌈{rep['top_share']:g}·{rep['eligible_units']}⌉); the {ordinal(rep['asked_units'])} highest has {name} "
            f"{rep['threshold']}, and {rep['tied_at_threshold']} {unit} share that value, so {rep['kept_units']} "
            f"({rep['kept_share']:.1%}) are kept: ties at the threshold are kept "
            f"({recorded_note('top_share', signature)}); give --min-ddp above it to keep fewer")


def select_mask(m: Matched, c: Criteria) -> np.ndarray:
    """The input rows kept by ``c`` (bool, shape (n_rows,))."""
    c.check()
    value, elig_u = _units(m, c)
    ok = elig_u.copy()
    if c.min_ddp is not None:
        ok &= value >= c.min_ddp
    if c.max_ddp is not None:
        ok &= value <= c.max_ddp
    if c.top_share is not None:
        ok &= value >= top_threshold(value[elig_u], c.top_share)
    if c.level == "document":
        return ok[m.doc]
    return context_mask(m, ok) if c.with_context else ok


# ----------------------------------------------------------------------------- summary


def ddp_distribution(ddp: np.ndarray) -> dict[str, Any]:
    """n, mean, median, p90, max and the shares >= 1, 5, 15 of segment DDPs (sentences)."""
    if ddp.size == 0:
        return {"segments": 0}
    x = ddp.astype(np.float64)
    return {"segments": int(x.size), "mean": round(float(x.mean()), 3), "median": float(np.median(x)),
            "p90": float(np.percentile(x, 90)), "max": int(x.max()),
            "share_ge_1": round(float((x >= 1).mean()), 4), "share_ge_5": round(float((x >= 5).mean()), 4),
            "share_ge_15": round(float((x >= 15).mean()), 4)}


def _n_distinct(codes: np.ndarray) -> int:
    """Distinct values of non-negative integer codes (no sorted copy: a count per code)."""
    return int(np.count_nonzero(np.bincount(codes))) if codes.size else 0


def keep_summary(m: Matched, keep: np.ndarray, ddp_col: str = schema.DDP) -> dict[str, Any]:
    """Documents and segments before and after, and the distributions of ``m.ddp`` (the profile's
    ``ddp_col``, named in the summary)."""
    return {
        "ddp_col": ddp_col,
        "before": {"documents": _n_distinct(m.doc), **ddp_distribution(m.ddp)},
        "after": {"documents": _n_distinct(m.doc[keep]), **ddp_distribution(m.ddp[keep])},
    }


def format_summary(command: str, summary: dict[str, Any]) -> str:
    """Two lines: before and after (documents, segments, DDP distribution)."""
    lines = []
    col = summary.get("ddp_col", schema.DDP)
    name = "DDP" if col == schema.DDP else f"DDP ({col})"
    for k in ("before", "after"):
        s = summary[k]
        if not s.get("segments"):
            lines.append(f"{command}: {k:6s}: 0 documents, 0 segments")
            continue
        lines.append(
            f"{command}: {k:6s}: {s['documents']} documents, {s['segments']} segments; {name} mean {s['mean']:.2f}, "
            f"median {s['median']:g}, p90 {s['p90']:g}, max {s['max']}; share >=1 {s['share_ge_1']:.1%}, "
            f">=5 {s['share_ge_5']:.1%}, >=15 {s['share_ge_15']:.1%}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- verbatim copy


def _open_in(path: Path) -> Any:
    from ..io.tables import open_binary

    return open_binary(path)


def record_bounds(data: bytes, fmt: str, quoted: bool = True) -> tuple[np.ndarray, np.ndarray, int]:
    """Record boundaries of ``data`` (a block that starts at a record start); CSV/TSV newlines
    inside quotes do not end a record unless the file is not ``quoted``
    (:func:`ddpcore.io.tables.has_quoted_fields`: no field starts with ``"``, every quote is literal).

    Returns ``(starts, ends, cut)``: byte offsets of every complete record ``[start, end)`` (the
    newline included), and ``cut`` = the offset where the incomplete tail begins (``len(data)``
    when the block ends on a boundary). Arrays of shape (n_records,).
    """
    a = np.frombuffer(data, dtype=np.uint8)
    nl = np.flatnonzero(a == 10)
    if fmt in ("csv", "tsv") and quoted and nl.size:
        q = np.cumsum(a == 34, dtype=np.int64)
        nl = nl[(q[nl] & 1) == 0]
    ends = nl + 1
    starts = np.r_[0, ends[:-1]] if ends.size else np.zeros(0, dtype=np.int64)
    cut = int(ends[-1]) if ends.size else 0
    return starts.astype(np.int64), ends.astype(np.int64), cut


def _rows_of_records(a: np.ndarray, starts: np.ndarray, ends: np.ndarray, fmt: str, bom: int = 0) -> np.ndarray:
    """Which records are table rows (bool): JSONL skips lines of whitespace only (``bom``: bytes
    of a UTF-8 BOM at the start of ``a``, not counted as content of the first line)."""
    if fmt != "jsonl" or starts.size == 0:
        return np.ones(starts.size, dtype=bool)
    if bom and starts[0] == 0:
        starts = starts.copy()
        starts[0] = bom
    first = a[np.minimum(starts, a.size - 1)]
    blank_first = (first == 32) | (first == 9) | (first == 10) | (first == 13) | (first == 12) | (first == 11)
    if not blank_first.any():  # a JSON line starts with '{': the usual case needs no byte scan
        return np.ones(starts.size, dtype=bool)
    ws = (a == 32) | (a == 9) | (a == 10) | (a == 13) | (a == 12) | (a == 11)
    c = np.r_[0, np.cumsum(~ws, dtype=np.int64)]
    return (c[ends] - c[starts]) > 0


def _gather(a: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bytes:
    """The concatenation of ``a[starts[i]:ends[i]]`` (vectorised: one boolean byte mask)."""
    if starts.size == 0:
        return b""
    diff = np.zeros(a.size + 1, dtype=np.int8)
    diff[starts] += 1  # starts are distinct, ends are distinct: plain fancy indexing adds once each
    diff[ends] -= 1
    return a[np.cumsum(diff[:-1], dtype=np.int8) > 0].tobytes()


def iter_selected_bytes(path: Path, fmt: str, keep: np.ndarray, n_rows: int,
                        block_bytes: int = BLOCK_BYTES) -> Iterator[bytes]:
    """Pass 2 for JSONL/CSV/TSV and plain ``lines`` (every line a row, no header): yield the header
    (CSV/TSV) and the bytes of the kept rows, in
    input order, read in blocks of ``block_bytes``. A UTF-8 BOM at the start belongs to the first
    line: it is kept with the header (CSV/TSV) and with the first line (JSONL, ``lines``) when that
    row is kept, so every record is copied byte for byte; it does not make a blank line a row."""
    from ..io.tables import read_block, delimited_quoting

    quoted = fmt in ("csv", "tsv") and delimited_quoting(path, fmt)  # as the readers read it
    row = 0
    carry = b""
    header_done = fmt in ("jsonl", "lines")
    at_start = True  # ``data`` begins at byte 0 of the file
    with _open_in(path) as fh:
        while True:
            block = read_block(fh, path, block_bytes)
            data = carry + block
            bom = 3 if at_start and data.startswith(b"\xef\xbb\xbf") else 0
            fake_nl = not block and bool(data) and not data.endswith(b"\n")
            if fake_nl:
                data += b"\n"  # the last record has no newline: add one to find it, dropped on output
            starts, ends, cut = record_bounds(data, fmt, quoted)
            if not header_done and starts.size:
                hdr_end = int(ends[0])
                yield data[:hdr_end - 1] if (fake_nl and hdr_end == len(data)) else data[:hdr_end]
                header_done = True
                starts, ends = starts[1:], ends[1:]
            a = np.frombuffer(data, dtype=np.uint8)
            is_row = _rows_of_records(a, starts, ends, fmt, bom)
            rs, re_ = starts[is_row], ends[is_row]
            k = rs.size
            if row + k > n_rows:
                raise DDPDataError(f"{path}: found more records than the {n_rows} rows the table reader read; "
                                   "the file may have unusual quoting or line breaks; convert it to Parquet or JSONL",
                                   code="D638")
            take = keep[row:row + k]
            if take.any():
                out = _gather(a, rs[take], re_[take])
                if fake_nl and re_[take][-1] == len(data):
                    out = out[:-1]
                yield out
            row += k
            at_start = at_start and cut == 0
            carry = data[cut:]
            if not block:
                break
    if row != n_rows:
        raise DDPDataError(f"{path}: found {row} records where the table reader read {n_rows} rows; the file may "
                           "have unusual quoting or line breaks; convert it to Parquet or JSONL", code="D638")


def signature_json(signature: dict[str, Any], indent: int | None = 2) -> str:
    """The signature as valid JSON: numpy values as Python ones, an infinite value as ``"inf"``/``"-inf"``
    and NaN as ``null`` (:func:`ddpcore.signature.json_safe`, as ``ddp stratify`` writes its bins), never
    a bare ``Infinity``/``NaN``."""
    from ..signature import json_safe

    return json.dumps(json_safe(signature), sort_keys=True, indent=indent, allow_nan=False)


@contextlib.contextmanager
def _output_set(first: Path, command: Any = None) -> Iterator[Any]:
    """An all-or-nothing :class:`~ddpcore.io.outputs.OutputSet` for the files of one run whose first
    output is ``first`` (journal ``.NAME.ddp-select.json`` beside it): ``temp(dest)`` gives the
    temporary of each file; on a clean exit every file is put in place together (D761 and nothing
    changed when that fails), on an error the temporaries are removed and no output changes. A run
    killed while putting its files in place is finished first (its complete outputs, said on stderr as a
    ``ddp COMMAND: note:``, ``command`` being the signature's ``select``/``sample``)."""
    from ..io.outputs import OutputSet, recover_commit
    from ..io.tables import one_line

    journal = first.parent / f".{first.name}.ddp-select.json"
    placed = recover_commit(journal)
    if placed:
        who = f"ddp {command}" if isinstance(command, str) and command else "ddp"
        print(one_line(f"{who}: note: an earlier run was stopped while putting its outputs in place; finished that, "
                       f"so {', '.join(map(str, placed))} hold(s) that run's complete output before this run "
                       "replaces it"), file=sys.stderr)
    outs = OutputSet(journal)
    try:
        yield outs
        outs.commit()
    finally:
        outs.discard()


def write_selected(path: Path, fmt: str, keep: np.ndarray, target: Any, signature: dict[str, Any]) -> int:
    """Write the kept rows of the input ``path`` to ``target`` (an :class:`OutputTarget`); returns
    the number of rows written. Text files get ``<output>.signature.json``; Parquet the metadata key
    ``ddpcore.signature``. All files appear together or not at all."""
    n_rows = int(keep.size)
    if target.path is None:
        fh = sys.stdout.buffer
        _write_body(path, fmt, keep, n_rows, fh, signature, None)
        fh.flush()
        return int(keep.sum())
    with _output_set(Path(target.path), signature.get("command")) as outs:
        tmp = outs.temp(target.path)
        if fmt == "parquet":
            _write_body(path, fmt, keep, n_rows, None, signature, tmp)
        else:
            from ..io.tables import GzipOutput

            with (GzipOutput(tmp) if target.gzip else open(tmp, "wb")) as fh:
                _write_body(path, fmt, keep, n_rows, fh, signature, None)
        if target.sidecar is not None:  # the signature and the stamp of the finished data file
            outs.temp(target.sidecar).write_text(sidecar_text(json_safe(signature), tmp, allow_nan=False),
                                                 encoding="utf-8")
    return int(keep.sum())


def _write_body(path: Path, fmt: str, keep: np.ndarray, n_rows: int, fh: Any, signature: dict[str, Any],
                parquet_tmp: Path | None) -> None:
    if fmt in ("jsonl", "csv", "tsv"):
        for piece in iter_selected_bytes(path, fmt, keep, n_rows):
            fh.write(piece)
        return
    if fmt == "json":
        from ..io.tables import read_bytes, decode_utf8

        obj = json.loads(decode_utf8(read_bytes(path), path))
        kept = [obj[i] for i in np.flatnonzero(keep).tolist()]
        fh.write(json.dumps(kept, ensure_ascii=False, indent=1).encode("utf-8") + b"\n")
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    meta = dict(pf.schema_arrow.metadata or {})
    meta[SIGNATURE_KEY.encode()] = signature_json(signature, indent=None).encode()
    schema = pf.schema_arrow.with_metadata(meta)
    row = 0
    with pq.ParquetWriter(parquet_tmp, schema) as w:
        for g in range(pf.num_row_groups):
            t = pf.read_row_group(g)
            mask = keep[row:row + t.num_rows]
            row += t.num_rows
            if mask.any():
                w.write_table(t.filter(pa.array(mask)).replace_schema_metadata(meta))
        if not keep.any():
            w.write_table(pf.schema_arrow.empty_table().replace_schema_metadata(meta))


# ----------------------------------------------------------------------------- the command


@dataclass
class SelectResult:
    """``keep`` (bool per input row), the summary, and the signature written with the output."""

    keep: np.ndarray
    summary: dict[str, Any]
    signature: dict[str, Any] = field(default_factory=dict)
    written: list[Path] = field(default_factory=list)  # every file written (outputs, .docs, --outputs, sidecars)


def prepare(source: str | os.PathLike[str], profile: str | os.PathLike[str],
            cols: SegmentColumns | None = None, *, reader: str = "table",
            docs: str | os.PathLike[str] | None = None, ddp_col: str = schema.DDP
            ) -> tuple[InputIndex, Profile, Matched]:
    """Index the input, read the profile and match them (column names from the profile's
    signature unless given; ``Matched.ddp`` holds the profile's ``ddp_col``)."""
    from ..io.tables import check_distinct_columns

    prof_sig = read_signature(Path(profile))
    cols = cols or profile_columns(prof_sig)
    check_distinct_columns([("--document-col", cols.document), ("--segment-col", cols.segment),
                            ("--text-col", cols.text), ("--domain-col", cols.domain)])
    prof = load_profile(profile, cols, ddp_col=ddp_col)
    index, m = index_and_match(source, prof, reader=reader, docs=docs)
    prof.frame = prof.frame.clear()  # its rows are in ``m`` now; keep the schema, free the memory
    return index, prof, m


def count_lines(path: Path) -> int:
    """Lines of a text file (a last line without a newline counts), read in blocks."""
    from ..io.tables import read_block

    n, last = 0, b"\n"
    with _open_in(path) as fh:
        while True:
            block = read_block(fh, path, BLOCK_BYTES)
            if not block:
                break
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


def line_keep(index: InputIndex, keep: np.ndarray, n_lines: int) -> np.ndarray:
    """Keep mask over the lines of a line-aligned source (bool, (n_lines,)): the kept segments'
    lines, and every line that is not a segment (the WMT24 canary line), so the output stays a
    valid file of the same layout."""
    line = index.ids["line_id"].to_numpy().astype(np.int64)
    out = np.ones(n_lines, dtype=bool)
    out[line] = keep
    return out


def find_aligned(folder: Path, skip: Sequence[Path] = ()) -> list[Path]:
    """Every ``*.txt`` file under ``folder`` (system outputs, references), sorted, but the ``skip`` files
    (the source itself); D645 when ``folder`` is not a folder or holds none."""
    if not folder.is_dir():
        raise DDPUsageError(f"--outputs {folder}: not a folder", code="D645")
    skip_r = {q.resolve() for q in skip}
    files = sorted(f for f in folder.rglob("*.txt") if f.is_file() and f.resolve() not in skip_r)
    if not files:
        raise DDPDataError(f"--outputs {folder}: no .txt files (system outputs or references) in this folder",
                           code="D645")
    return files


def outputs_folder(out: Path, outputs_to: str | os.PathLike[str] | None) -> Path:
    """Where the filtered ``--outputs`` files go: ``outputs_to``, else ``OUT_STEM.outputs/`` beside ``out``."""
    return Path(outputs_to) if outputs_to is not None else out.parent / f"{out.stem}.outputs"


def layout_files(source: Path, out: Path, fmt: str, docs: Path | None, outputs: Path | None = None,
                 outputs_to: str | os.PathLike[str] | None = None) -> list[tuple[str, Path, Path | None]]:
    """Every file a ``--reader wmt24|lines|wmt25`` selection writes, as ``(what, destination, source)``:
    ``out`` (from ``source``), the signature sidecar (no source), for line-aligned sources the ``.docs``
    beside ``out`` (from ``docs``) and, with ``outputs``, every aligned ``.txt`` under it into
    :func:`outputs_folder` (same relative paths). ``fmt`` is ``lines`` or ``wmt25``. The CLI checks these
    paths before any work (:func:`ddpcore.io.outputs.check_place`, :func:`~ddpcore.io.outputs.check_claims`)
    and :func:`write_layout` writes exactly them."""
    also = f"-o {out}: would write"  # the files named after -o
    files: list[tuple[str, Path, Path | None]] = [("-o", out, source)]
    if fmt != "wmt25":
        if docs is not None:
            files.append((also, out.with_suffix(".docs"), docs))
        if outputs is not None:
            dest = outputs_folder(out, outputs_to)
            where = f"--outputs-to {dest}" if outputs_to is not None else f"the --outputs folder {dest}"
            files += [(f"{where} (the filtered {f})", dest / f.relative_to(outputs), f)
                      for f in find_aligned(outputs, skip=[source])]
    files.append((also, out.with_name(out.name + ".signature.json"), None))
    return files


def check_layout_files(files: Sequence[tuple[str, Path, Path | None]], inputs: Sequence[Any] = ()) -> None:
    """Check the files of :func:`layout_files` before anything is written: each is not an existing folder
    (D132) and lies in a folder that exists, or for the ``--outputs`` copies can be made (D130/D131, D760);
    none is an input (``inputs``, and the file each is filtered from: D133); no two are one file (D134)."""
    from ..io.outputs import check_claims, check_place

    for what, path, _ in files:
        check_place(what, path, make_parents=what.startswith(("--outputs-to", "the --outputs folder")))
    check_claims([(what, path) for what, path, _ in files], [*inputs, *(src for _, _, src in files if src is not None)])


def aligned_files(folder: Path, n_lines: int, skip: Sequence[Path] = ()) -> list[Path]:
    """Every ``*.txt`` file under ``folder`` (system outputs, references), sorted; each must have
    ``n_lines`` lines like the source (D645 otherwise)."""
    files = find_aligned(folder, skip)
    for f in files:
        k = count_lines(f)
        if k != n_lines:
            raise DDPDataError(f"--outputs: {f} has {k} lines where the source has {n_lines}; every output and "
                               "reference file must be aligned line by line with the source", code="D645")
    return files


def write_layout(index: InputIndex, keep: np.ndarray, out: Path, signature: dict[str, Any], *,
                 outputs: Path | None = None, outputs_to: Path | None = None) -> list[Path]:
    """Write a ``--reader wmt24|lines|wmt25`` selection: for line-aligned sources ``out`` (the source
    lines), ``out.with_suffix('.docs')`` (the ``.docs`` lines) and, with ``outputs``, every aligned
    ``.txt`` under it into ``outputs_to`` (same relative paths), all filtered by the same lines; for
    ``wmt25`` the kept documents' lines of the documents JSONL (the files of :func:`layout_files`).
    Verbatim bytes; all files appear together or none (:class:`~ddpcore.io.outputs.OutputSet`), and
    folders made for ``outputs_to`` are removed again when the run fails. Returns the written paths."""
    files = layout_files(index.path, out, index.fmt, index.docs, outputs, outputs_to)
    check_layout_files(files)  # the CLI checked them before any work; an API caller gets the same before writing
    if index.fmt == "wmt25":
        mask, fmt = keep, "jsonl"  # caller passes a per-document mask here
    else:
        n_lines = count_lines(index.path)
        mask, fmt = line_keep(index, keep, n_lines), "lines"
        if outputs is not None:
            aligned_files(outputs, n_lines, skip=[index.path])  # every aligned file has the source's lines
    from ..io.tables import GzipOutput

    made: list[Path] = []
    try:
        with _output_set(out, signature.get("command")) as outs:
            written: dict[Path, Path] = {}  # destination -> its finished temporary file
            for _, dst, src in files:
                _make_folders(dst.parent, made)
                tmp = outs.temp(dst)
                if src is None:  # the sidecar of -o, written last: the stamp of its finished data file
                    tmp.write_text(sidecar_text(json_safe(signature), written[out], allow_nan=False),
                                   encoding="utf-8")
                    continue
                written[dst] = tmp
                with (GzipOutput(tmp) if dst.suffix.lower() == ".gz" else open(tmp, "wb")) as fh:
                    for piece in iter_selected_bytes(src, fmt, mask, int(mask.size)):
                        fh.write(piece)
    except BaseException:
        for d in reversed(made):  # the folders this run made, deepest first, if they stayed empty
            with contextlib.suppress(OSError):
                d.rmdir()
        raise
    return [d for _, d, _ in files]


def _make_folders(folder: Path, made: list[Path]) -> None:
    """``mkdir -p folder``, appending every folder it creates to ``made`` (outermost first)."""
    missing = []
    f = folder
    while str(f) not in ("", ".", "/") and not os.path.lexists(f):
        missing.append(f)
        f = f.parent
    for d in reversed(missing):
        d.mkdir(exist_ok=True)
        made.append(d)


def write_output(index: InputIndex, m: Matched, keep: np.ndarray, target: Any, signature: dict[str, Any], *,
                 outputs: Path | None = None, outputs_to: Path | None = None) -> list[Path]:
    """Write the kept rows in the input's layout (tables: :func:`write_selected`; readers: :func:`write_layout`);
    returns every file written (stdout not counted), signature sidecars included."""
    if index.fmt == "wmt25":
        per_doc = np.zeros(int(m.doc.max()) + 1, dtype=bool)
        per_doc[m.doc[keep]] = True
        whole = per_doc[m.doc]
        if not np.array_equal(whole, keep):
            raise DDPUsageError("--reader wmt25: rows are whole documents (their paragraphs are one src_text); keep "
                                "whole documents with --unit document",
                                code="D646")
        return write_layout(index, per_doc, Path(target), signature)
    if index.fmt == "lines":
        return write_layout(index, keep, Path(target), signature, outputs=outputs, outputs_to=outputs_to)
    write_selected(index.path, index.fmt, keep, target, signature)
    return [p for p in (target.path, target.sidecar) if p is not None]


@dataclass(frozen=True)
class InputOptions:
    """How :func:`select` and :func:`~ddpcore.curate.sample.sample` read the input and its profile and where
    the WMT layout's aligned files go: their ``cols``, ``reader``, ``docs``, ``ddp_col``, ``outputs`` and
    ``outputs_to`` keywords (``--document-col ...``, ``--reader``, ``--docs``, ``--ddp-col``, ``--outputs``,
    ``--outputs-to``)."""

    cols: SegmentColumns | None = None
    reader: str = "table"
    docs: str | os.PathLike[str] | None = None
    ddp_col: str = schema.DDP
    outputs: str | os.PathLike[str] | None = None
    outputs_to: str | os.PathLike[str] | None = None

    def check_unit(self, unit: str) -> None:
        """D646: a row of ``--reader wmt25`` is a whole document, so the unit must be ``document``."""
        if self.reader == "wmt25" and unit != "document":
            raise DDPUsageError("--reader wmt25: a row of the documents JSONL is a whole document; use --unit document",
                                code="D646")

    def prepare(self, source: str | os.PathLike[str], profile: str | os.PathLike[str]
                ) -> tuple[InputIndex, Profile, Matched]:
        """:func:`prepare` with these options."""
        return prepare(source, profile, self.cols, reader=self.reader, docs=self.docs, ddp_col=self.ddp_col)

    def write(self, index: InputIndex, m: Matched, keep: np.ndarray, target: Any,
              signature: dict[str, Any]) -> list[Path]:
        """:func:`write_output` of the kept rows to ``target`` (nothing when it is ``None``)."""
        if target is None:
            return []
        return write_output(index, m, keep, target, signature, outputs=Path(self.outputs) if self.outputs else None,
                            outputs_to=Path(self.outputs_to) if self.outputs_to else None)


def kept_counts(summary: dict[str, Any]) -> dict[str, Any]:
    """``signature["kept"]``: the documents and segments a selection or sample keeps."""
    return {"documents": summary["after"]["documents"], "segments": summary["after"]["segments"]}


def base_signature(command: str, source: Any, prof: Profile, index: InputIndex | None = None) -> dict[str, Any]:
    """The keys every ``select``/``sample`` signature has; with ``index``, the reader the input was read
    with (``{"name": ..., "docs": ...}`` as a profile records it)."""
    sig = {"ddpcore": __version__, "command": command, "input": str(source), "profile": prof.path,
           "profile_signature": prof.signature, "ddp_col": prof.ddp_col,
           "columns": {"document": prof.cols.document, "segment": prof.cols.segment, "domain": prof.cols.domain}}
    if index is not None:
        sig["reader"] = {"name": index.reader, **({"docs": str(index.docs)} if index.docs is not None else {})}
    return sig


def select(source: str | os.PathLike[str], profile: str | os.PathLike[str], criteria: Criteria, target: Any = None,
           *, cols: SegmentColumns | None = None, reader: str = "table", docs: str | os.PathLike[str] | None = None,
           outputs: str | os.PathLike[str] | None = None, outputs_to: str | os.PathLike[str] | None = None,
           ddp_col: str = schema.DDP) -> SelectResult:
    """Select input rows by DDP and (with ``target``: an :class:`~ddpcore.io.outputs.OutputTarget`
    for tables, a path for ``reader`` wmt24/lines/wmt25) write them verbatim. See the module docstring.
    ``ddp_col``: the profile's DDP column the criteria, the context and the summary use (``--ddp-col``)."""
    criteria.check()
    io = InputOptions(cols, reader, docs, ddp_col, outputs, outputs_to)
    io.check_unit(criteria.level)
    index, prof, m = io.prepare(source, profile)
    if criteria.domains:
        check_domains(m, criteria.domains)
    keep = select_mask(m, criteria)
    summary = keep_summary(m, keep, ddp_col)
    sig = {**base_signature("select", source, prof, index), "criteria": criteria.to_dict(),
           "kept": kept_counts(summary)}
    top = top_share_report(m, criteria)
    if top is not None:  # asked vs kept: ties at the threshold can keep far more than F (said by the CLI too)
        sig["top_share"] = top
    return SelectResult(keep, summary, sig, io.write(index, m, keep, target, sig))


__all__ = ["Criteria", "InputOptions", "Matched", "Profile", "SelectResult", "context_mask", "index_and_match", "load_profile",
           "record_bounds", "recorded_note", "select", "select_mask", "top_share_note", "top_share_report",
           "write_selected"]
