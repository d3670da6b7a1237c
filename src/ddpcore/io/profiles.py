"""Reading a ``ddp profile`` output back: its signature (Parquet metadata or the text sidecar), the
column names it records, the DDP column a command uses (``--ddp-col``) and a lazy scan of the
segment table for ``ddp stratify``.

A profile may carry more than one DDP column (``ddp``; ``ddp_certified``: the segment max over the
anchors whose link is certain enough not to over-estimate). ``--ddp-col NAME`` chooses the one a
command uses; :func:`check_ddp_col` refuses a name the profile does not have (D780, exit 2, naming
the columns it has) and a column that does not hold whole numbers of sentences (D781, exit 3: bad data,
as a score column of text is D303; the same values in the default ``ddp`` column are no option's fault).
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DDPDataError, DDPUsageError
from ..schema import DDP, SIGNATURE_KEY, SegmentColumns

if TYPE_CHECKING:
    import polars as pl

#: the default ``--ddp-col``
DEFAULT_DDP_COL = DDP


def read_signature(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``ddpcore.signature`` of a Parquet file, or of a text output's ``.signature.json`` sidecar
    (``{}`` when absent, unreadable or not a JSON object). The format is told from the name as
    :func:`ddpcore.io.tables.read_table` tells it (``.parquet`` and ``.pq``, any case).

    The reader of the commands that go on without a signature (``select``, ``sample``, ``stratify``, ``meta``,
    ``plot``, ``summarize``): a damaged one (not readable, not valid JSON, not a JSON object) is said in one
    warning naming the file, and read as none; a sidecar whose stamp does not fit its data file
    (:func:`ddpcore.io.sidecars.read_sidecar`: copied from another output, or the table changed since) is said
    too, and used, with :data:`~ddpcore.io.sidecars.MISMATCH_KEY` added to the signature returned (the run
    records it where it records the profile's signature). :func:`load_signature` is the strict reader."""
    return _lenient_signature(path, say=True)


def _lenient_signature(path: str | os.PathLike[str], *, say: bool) -> dict[str, Any]:
    """:func:`read_signature`; ``say``: warn of a damaged or mismatched signature (else in silence: a
    reader that only needs the column names of a table a command reads strictly elsewhere)."""
    import warnings

    from .sidecars import MISMATCH_KEY, read_sidecar, warn_sidecar
    from .tables import detect_format, read_parquet_metadata

    p = Path(path)
    try:
        if detect_format(p) != "parquet":
            found = read_sidecar(p)
            if say:
                warn_sidecar(found)
            if found is None or found.signature is None:
                return {}
            return {**found.signature, MISMATCH_KEY: found.problem()} if found.mismatch else found.signature
        raw = read_parquet_metadata(p).get(SIGNATURE_KEY)
    except (OSError, ValueError, DDPUsageError, DDPDataError):
        return {}
    try:
        sig = json.loads(raw) if raw else {}
    except ValueError as exc:
        sig, why = None, f"is not valid JSON ({str(exc).splitlines()[0]})"
    else:
        why = "is not a ddpcore signature (expected a JSON object)"
    if isinstance(sig, dict):
        return sig
    if say:  # a JSON list or string is no signature (its .get would fail)
        warnings.warn(f"{p}: the signature in its Parquet metadata {why}; read without it (the default column "
                      "names and no recorded settings): regenerate it", UserWarning, stacklevel=2)
    return {}


#: what ``ddp explain`` advises for a damaged signature (:func:`load_signature`'s default ``hint``)
EXPLAIN_SIGNATURE_HINT = "delete it or pass --rules/--distance/--pipeline and the column options"
#: the column roles a signature's ``columns`` maps to column names
COLUMN_KEYS = ("document", "segment", "text", "domain")


def load_signature(path: str | os.PathLike[str], *, hint: str = EXPLAIN_SIGNATURE_HINT,
                   on_mismatch: Callable[[str], None] | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """The signature of an output and the file it was read from, strictly: a Parquet file's metadata
    (``.parquet``/``.pq``) or a text output's ``.signature.json`` sidecar; ``(None, None)`` when the
    output has none (an input, say). A damaged one is D103 naming the file and ``hint`` (what to do):
    an unreadable Parquet file or sidecar, a signature that is not JSON or not a JSON object, ``columns``
    that does not map document/segment/text/domain to column names, or a ``reader`` or ``certify`` entry
    that is not an object (unlike :func:`read_signature`, which gives ``{}``). A sidecar whose data stamp
    does not fit the output (:func:`ddpcore.io.sidecars.read_sidecar`: the signature of another file, or the
    file changed since) is D932 naming both and ``hint`` (``agree`` and ``report`` make their answer from the
    recorded settings); with ``on_mismatch``, that message is given to it instead and the signature returned
    (``explain``, which checks the re-parse against the output's own row)."""
    from .sidecars import read_sidecar
    from .tables import read_parquet_metadata

    found = None
    if str(path).lower().endswith((".parquet", ".pq")) and os.path.isfile(path):
        try:
            meta = read_parquet_metadata(path)
        except Exception as exc:  # pyarrow raises several types for a bad file
            raise DDPDataError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]})",
                               code="D103") from None
        if SIGNATURE_KEY not in meta:
            return None, None
        source, text = str(path), meta[SIGNATURE_KEY]
        where = f"{path}: the signature in its Parquet metadata"
        try:
            sig = json.loads(text)
        except ValueError as exc:
            raise DDPDataError(f"{where} is not valid JSON ({str(exc).splitlines()[0]}); {hint}",
                               code="D103") from None
    else:
        found = read_sidecar(path)  # parsed, its data stamp stripped and compared with the file
        if found is None:
            return None, None
        if found.damaged is not None:
            raise DDPDataError(f"{found.damaged}; {hint}", code="D103")
        source = where = str(found.path)
        sig = found.signature
    problem = _signature_problem(sig)
    if problem:
        raise DDPDataError(f"{where} is not a ddpcore signature (expected {problem}); {hint}", code="D103")
    if found is not None and found.mismatch is not None:
        if on_mismatch is None:  # the settings would be another file's: not used for this one
            raise DDPDataError(f"{found.path} is not the signature of {found.data}: {found.mismatch} (a sidecar "
                               f"copied from another output, or {found.data} changed after it was written); {hint}",
                               code="D932")
        on_mismatch(str(found.problem()))
    return sig, source


def _signature_problem(sig: Any) -> str | None:
    """What a parsed signature lacks to be read as one (None when it is fine)."""
    if not isinstance(sig, dict):
        return "a JSON object"
    cols = sig.get("columns")
    if not (cols is None or (isinstance(cols, dict) and all(isinstance(cols.get(k), (str, type(None)))
                                                            for k in COLUMN_KEYS))):
        return "its 'columns' to map document/segment/text/domain to column names"
    bad = [k for k in ("reader", "certify") if not isinstance(sig.get(k), (dict, type(None)))]
    return f"its {' and '.join(repr(k) for k in bad)} to be an object" if bad else None


def profile_columns(signature: dict[str, Any], *, document: str | None = None, segment: str | None = None,
                    domain: str | None = None, text: str | None = None) -> SegmentColumns:
    """Column names: given ones first, then the profile signature's ``columns``, then the defaults (a
    signature that is not an object, or a recorded name that is not text, gives none: :func:`load_signature`
    is the strict reader that refuses them)."""
    cols = signature.get("columns") if isinstance(signature, dict) else None
    rec = {k: v for k, v in cols.items() if isinstance(v, str) and v} if isinstance(cols, dict) else {}
    d = SegmentColumns()
    return SegmentColumns(document=document or rec.get("document") or d.document,
                          segment=segment or rec.get("segment") or d.segment,
                          text=text or rec.get("text") or d.text,
                          domain=domain or rec.get("domain") or d.domain)


def read_profile_table(path: str | os.PathLike[str], cols: SegmentColumns | None = None) -> pl.DataFrame:
    """A table ddpcore wrote (a ``ddp profile`` segment or anchors table), read back with its ids as written:
    a CSV/TSV file's document and segment id columns (``cols``; default: the ones its signature records,
    else the default names) are key columns of :func:`ddpcore.io.tables.read_table`, and its text column is
    text. Ids ``007`` and ``7``, ``2.5`` and ``2.50``, ``1e3`` and ``1000`` stay distinct documents whether
    or not the ``.signature.json`` sidecar is beside the file (the sidecar adds the column names it records:
    :func:`ddpcore.io.tables.signed_columns`); read as numbers they would merge into one, in silence."""
    from .tables import read_table

    if cols is None:  # (the commands that need the signature read it themselves, and say what is wrong with it)
        cols = profile_columns(_lenient_signature(path, say=False))
    return read_table(path, text_columns=(cols.text,), key_columns=(cols.document, cols.segment))


def check_ddp_col(columns: Iterable[str], ddp_col: str, where: str, dtype: Any = None, *,
                  flag: str = "--ddp-col") -> None:
    """``ddp_col`` must be a column of the profile (``columns``): else D780 naming the columns it has
    (and ``flag``, the option that named it). The default ``ddp`` missing is left to the caller (a table
    without ``ddp`` is not a profile: D635). With ``dtype`` (the column's polars type): a type that is
    not a number is D781 (text, even of digits such as ``"3"``: every command refuses it alike)."""
    cols = list(columns)
    if ddp_col != DEFAULT_DDP_COL and ddp_col not in cols:
        raise DDPUsageError(f"{flag} {ddp_col}: {where} has no column '{ddp_col}'; the profile's columns: "
                            f"{', '.join(cols)}", code="D780")
    if dtype is not None and ddp_col in cols:
        import polars as pl

        if not (dtype.is_numeric() or dtype == pl.Null):
            raise DDPDataError(f"{flag} {ddp_col}: column '{ddp_col}' of {where} holds {dtype}, not DDP "
                               "values (sentences); name a DDP column such as ddp or ddp_certified", code="D781")


def check_no_null_ddp(df: pl.DataFrame, ddp_col: str, where: str) -> None:
    """Every row of the DDP column ``ddp_col`` of ``df`` (shape (n_segments,)) has a value: a null is D781
    naming ``where`` (the file, as the option gave it), the first such row (1-based, the header not
    counted) and the column, as for the other values that are not DDPs (:func:`check_ddp_values`). A
    missing DDP is not 0 sentences: selecting, binning or averaging it as 0, or leaving the row out while
    still counting it, would give another answer in silence."""
    s = df[ddp_col]
    n_null = s.null_count()
    if not n_null:
        return
    i = int(s.is_null().arg_true()[0])
    raise DDPDataError(f"--ddp-col {ddp_col}: {where}, row {i + 1}, column {ddp_col}: no DDP value (null; {n_null} "
                       f"of {s.len()} rows); every segment needs a whole number of sentences >= 0: pass the segment "
                       "table `ddp profile` wrote, or name a DDP column with a value on every row such as ddp or "
                       "ddp_certified", code="D781")


def check_sentence_counts(df: pl.DataFrame, names: Sequence[str], where: str) -> None:
    """``first_sentence`` and ``n_sentences`` (the columns ``names`` of ``df``, shape (n_segments,)) of a
    profile are whole numbers >= 0 (sentences): text, a fraction, a negative or non-finite value, or none
    (null: it is not read as 0) is D910 naming ``where`` (the file, as the option gave it), the first bad
    row (1-based, the header not counted) and the column."""
    import polars as pl

    for name in names:
        s = df[name]
        if s.dtype == pl.String:  # text: the first value that is not a number is named
            num = s.cast(pl.Float64, strict=False)
            bad = num.is_null() | (~num.is_finite() | (num < 0) | (num != num.floor())).fill_null(False)
        elif s.dtype.is_integer():
            bad = (s < 0).fill_null(True)
        elif s.dtype.is_float():
            bad = (~s.is_finite() | (s < 0) | (s != s.floor())).fill_null(True)
        elif s.dtype == pl.Null:
            bad = pl.Series([True] * len(s), dtype=pl.Boolean)
        else:
            bad = pl.Series([True] * len(s)) if len(s) else pl.Series([], dtype=pl.Boolean)
        if not bad.any():
            continue
        i = int(bad.arg_true()[0])
        raise DDPDataError(f"{where}, row {i + 1}, column {name}: {s[i]!r} is not a whole number of "
                           "sentences >= 0; pass the segment table `ddp profile` wrote", code="D910")


def check_ddp_values(df: pl.DataFrame, ddp_col: str, where: str) -> None:
    """The DDP column ``ddp_col`` of ``df`` must hold whole numbers >= 0 (sentences; nulls allowed):
    a fractional, negative or non-finite value is D781 naming the first row (1-based) and the value."""
    import polars as pl

    s = df[ddp_col]
    if s.dtype.is_decimal():  # 2.5 as a decimal: checked as a float, not as an integer type
        s = s.cast(pl.Float64)
    if not s.dtype.is_float():
        bad = (s < 0).fill_null(False) if s.dtype.is_numeric() else None
    else:
        bad = (~s.is_finite() | (s < 0) | (s != s.floor())).fill_null(False)
    if bad is None or not bad.any():
        return
    i = int(bad.arg_true()[0])
    raise DDPDataError(f"--ddp-col {ddp_col}: {where}, row {i + 1}: {s[i]!r} is not a DDP value (a whole number "
                       "of sentences >= 0); name a DDP column such as ddp or ddp_certified", code="D781")


@dataclass
class ProfileScan:
    """A lazy scan of a ``ddp profile`` segment table: ``frame`` (polars LazyFrame), its ``signature``
    (``{}`` when none was found), the column names it records (``cols``) and ``name`` (the path as text,
    for messages and signatures)."""

    frame: pl.LazyFrame
    signature: dict[str, Any]
    cols: SegmentColumns
    name: str


def scan_profile(path: str | os.PathLike[str], *, ddp_col: str = DEFAULT_DDP_COL) -> ProfileScan:
    """Open a profile for ``ddp stratify``: D635 when the file is missing or lacks the document,
    segment or ``ddp`` column, D780/D781 for a ``ddp_col`` it does not have or that holds no numbers,
    D658 when it cannot be read. Parquet is scanned lazily; text formats as score tables are
    (:func:`ddpcore.io.scores.scan_scores`)."""
    import polars as pl

    from .scores import scan_scores, table_schema

    ppath = Path(path)
    if not ppath.exists():
        raise DDPDataError(f"{ppath}: profile not found; make it with `ddp profile INPUT -o {ppath}`", code="D635")
    psig = read_signature(ppath)
    cols = profile_columns(psig)
    plf = pl.scan_parquet(ppath) if str(ppath).lower().endswith((".parquet", ".pq")) else \
        scan_scores(ppath, text_columns=(cols.text,), key_columns=(cols.document, cols.segment))  # ids as written
    pschema = table_schema(plf, str(ppath))
    check_ddp_col(pschema, ddp_col, str(ppath), pschema.get(ddp_col))
    for c in (cols.document, cols.segment, DDP if ddp_col == DEFAULT_DDP_COL else ddp_col):
        if c not in pschema:
            raise DDPDataError(f"{ppath}: column '{c}' missing; expected a `ddp profile` segment table (columns: "
                               f"{', '.join(pschema)})", code="D635")
    return ProfileScan(plf, psig, cols, str(ppath))


__all__ = ["DEFAULT_DDP_COL", "ProfileScan", "check_ddp_col", "check_ddp_values", "profile_columns",
           "read_profile_table", "read_signature", "scan_profile"]
