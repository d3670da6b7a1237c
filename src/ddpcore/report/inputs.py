"""What ``ddp report`` checks of the inputs it shows beside a profile: that the ``--anchors`` table and the
``--stratify`` result were made from that profile's run, and that the anchors table holds what the page reads.

- :func:`run_difference` compares two run signatures as ``ddp merge`` compares its shards
  (:mod:`ddpcore.engines.merge`, D176): every setting both record (rules, distance, pipeline, input and
  its SHA-256, certify model, columns, ddpcore version ...), not the keys that do not change a result
  (:data:`IGNORED`: batches, processes, cache, engine ...); a shard and a reader are compared even when
  one side does not record them (no ``shard`` = the whole run, no ``reader`` = the default reader).
- :func:`check_same_run`: D681 (exit 3) when the anchors table or the stratify result is of another run;
  a side without a signature is not an error, but a note (stderr and the page) says nothing was checked.
- :func:`read_anchors`: the anchors table and its signature; :func:`check_anchors` its columns and
  values: D680 (exit 3) for a missing column, a column of the wrong type or a value the page cannot use
  (a null where ``ddp profile`` always writes one), naming the file, the row (1-based) and the column.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .. import schema as S
from ..errors import DDPDataError

if TYPE_CHECKING:
    import polars as pl

#: signature keys that do not change what a run computes (``ddp merge``'s varying keys, the engine, the
#: merge's own notes, a hand-made file's table name): never compared
IGNORED = frozenset({"batches", "n_process", "cache", "engine", "actors", "merged_shards", "input_check",
                     "table"})
#: keys whose absence means a default: compared even when only one signature records them
DEFAULTED = {"shard": "(the whole run)", "reader": "(the default reader)"}
#: settings a note names when only one of the two signatures records them (they cannot be compared)
CORE = ("rules", "distance", "pipeline_name", "input")
#: what to do about a damaged anchors signature
ANCHORS_HINT = "regenerate the anchors table with `ddp profile ... --anchors` (it writes the signature with the table)"


def _short(v: Any, width: int = 70) -> str:
    text = repr(v)
    return text if len(text) <= width else text[: width - 3] + "..."


def run_difference(a: Mapping[str, Any], b: Mapping[str, Any], files: tuple[str, str] | None = None
                   ) -> tuple[str, Any, Any] | None:
    """The first setting (sorted by name; the input's SHA-256 first) on which the run signatures ``a`` and
    ``b`` differ, as ``(key, value in a, value in b)``, None when they agree on everything both record. A
    differing entry of a dict setting (``certify``, ``columns``, ``reader``) is named as ``key.entry``. The
    input's name is not compared when both record the input's SHA-256 (the same bytes under two names).
    Without it, two names of the input (each as the run's command line gave it, relative to a working folder
    this one may not be) are one input when ``files`` (the files that carry ``a`` and ``b``) lets
    :func:`_same_input` find both, and they are one file or hold the same bytes; the reader's ``.docs`` file
    (``reader.docs``) likewise."""
    from ..engines.run import INPUT_DIGEST

    keys = {k for k in set(a) & set(b) if k not in IGNORED} | {k for k in DEFAULTED if k in a or k in b}
    if INPUT_DIGEST in keys and a[INPUT_DIGEST] == b[INPUT_DIGEST]:
        keys.discard("input")
    for key in sorted(keys, key=lambda k: (k != INPUT_DIGEST, k)):
        va, vb = a.get(key, DEFAULTED.get(key)), b.get(key, DEFAULTED.get(key))
        if key == "input" and isinstance(va, str) and isinstance(vb, str):
            va, vb = os.path.normpath(va), os.path.normpath(vb)
            if va != vb and files is not None and _same_input(va, vb, *files):
                continue
        if key == "reader" and isinstance(va, Mapping) and isinstance(vb, Mapping):
            da, db = va.get("docs"), vb.get("docs")  # the reader's .docs file: one file under two names, as input
            if isinstance(da, str) and isinstance(db, str) and da != db and (
                    os.path.normpath(da) == os.path.normpath(db)
                    or (files is not None and _same_input(os.path.normpath(da), os.path.normpath(db), *files))):
                vb = {**vb, "docs": da}
        if va == vb:
            continue
        if isinstance(va, Mapping) and isinstance(vb, Mapping):
            sub = sorted(k for k in set(va) | set(vb) if va.get(k) != vb.get(k))
            if sub:
                return f"{key}.{sub[0]}", va.get(sub[0]), vb.get(sub[0])
        return key, va, vb
    return None


def _same_input(a: str, b: str, file_a: str, file_b: str) -> bool:
    """Whether the inputs recorded as ``a`` and ``b`` (paths as the runs' command lines gave them) are one
    input: some reading of each names an existing file or folder, and the two are one (same path or inode) or
    hold the same bytes (:func:`ddpcore.engines.run.input_digest`, as ``ddp merge`` compares its shards'
    inputs). A relative name is read from this working folder and from the folder of the file that records
    it (``file_a``/``file_b``) and each folder above it (the run's working folder, where its output went).
    Nothing found: not the same (the names then decide, as before)."""
    from ..engines.run import input_digest
    from ..io.outputs import file_identity, same_file

    def found(name: str, carrier: str) -> list[Path]:
        p = Path(name)
        if p.is_absolute():
            return [p] if p.exists() else []
        folder = Path(os.path.abspath(carrier)).parent
        seen = [Path(os.path.abspath(p))] + [f / p for f in (folder, *folder.parents)]
        return [q for q in dict.fromkeys(seen) if q.exists()]

    pairs = [(x, y) for x in found(a, file_a) for y in found(b, file_b)]
    if any(same_file(file_identity(x), file_identity(y)) for x, y in pairs):
        return True
    for x, y in pairs:
        if x.is_file() != y.is_file() or (x.is_file() and x.stat().st_size != y.stat().st_size):
            continue
        try:
            if input_digest(x) == input_digest(y):
                return True
        except DDPDataError:  # unreadable: not shown to be the same
            continue
    return False


def unrecorded(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The :data:`CORE` settings only one of ``a`` and ``b`` records (they could not be compared)."""
    return [k for k in CORE if (k in a) != (k in b)]


@dataclass(frozen=True)
class Side:
    """One input compared with the profile: how messages name it (``--anchors a.parquet``), how notes name
    its signature, and what makes it again."""

    option: str
    what: str
    remedy: str
    #: what the input lacks when there is nothing to compare
    unsigned: str


ANCHORS = Side("--anchors", "the anchors table", "give the --anchors table written by the same `ddp profile` "
               "command as the profile, or profile the input again with --anchors",
               "carries no ddpcore signature (a table rewritten without its metadata, or a text table without its "
               ".signature.json)")
STRATIFY = Side("--stratify", "the stratify result", "run `ddp stratify` again on this profile",
                "records no signature of the profile it was computed on (signature.profile_signature)")


def check_same_run(profile: str, psig: Mapping[str, Any], path: str, other: Mapping[str, Any] | None,
                   side: Side) -> list[str]:
    """D681 when ``other`` (the signature of the anchors table, or the profile signature a stratify result
    records) is of another run than the profile's signature ``psig`` (:func:`run_difference`), naming the
    setting and both values; else the notes to show (stderr and the page): nothing was checked when one
    side has no signature, or a :data:`CORE` setting only one side records."""
    where = f"{side.option} {path}"
    if not other:
        return [f"{where}: {side.what} {side.unsigned}, so whether it was made from the run of the profile "
                f"{profile} is not checked"]
    if not psig:
        return [f"the profile {profile} has no signature, so whether {side.what} {path} was made from its run is "
                "not checked"]
    diff = run_difference(psig, other, (profile, path))
    if diff is not None:
        key, mine, theirs = diff
        made = "was computed on another profile" if side is STRATIFY else "is of another run"
        raise DDPDataError(f"{where}: {side.what} {made} than {profile} ('{key}' differs: {_short(mine)} in the "
                           f"profile's signature, {_short(theirs)} in {side.what}'s); {side.remedy}", code="D681")
    missing = unrecorded(psig, other)
    if missing:
        return [f"{where}: {', '.join(missing)} recorded by only one of the profile's and {side.what}'s signatures, "
                "so not compared"]
    return []


def read_anchors(path: str | os.PathLike[str]) -> tuple[pl.DataFrame, dict[str, Any]]:
    """The anchors table at ``path`` and its signature (``{}`` when it has none; D103 when it is damaged,
    as for a profile)."""
    from ..io.profiles import load_signature, profile_columns, read_profile_table

    sig, _ = load_signature(path, hint=ANCHORS_HINT)
    # the ids as written, as the profile's (read_profile_table): the two tables join on them
    cols = profile_columns(sig or {}, text=S.TEXT)  # (an anchors table's text column: the anchor's words)
    return read_profile_table(Path(path), cols), (sig or {})


#: anchors columns of whole numbers the page computes with, never null in a `ddp profile` anchors table
#: (``-1`` when there is no antecedent or distance); the optional ones are checked when present
INT_REQUIRED = (S.SENTENCE, S.CHAR_START, S.CHAR_END, S.ANTECEDENT_SENTENCE, S.DISTANCE_SENTENCES)
INT_OPTIONAL = (S.REFERENCE_SENTENCE, S.DISTANCE_CERTIFIED)
#: whole numbers that may be null (names have no candidate count)
INT_NULLABLE = (S.ENTITY_ID, S.N_CANDIDATES)
#: text columns (null allowed: a first mention has no antecedent text)
TEXT_REQUIRED = (S.TEXT, S.ANTECEDENT_TEXT)
TEXT_OPTIONAL = (S.KIND, S.LABEL, S.ANTECEDENT_KIND, S.ROLE, S.ANTECEDENT_ROLE)


def check_anchors(anchors: pl.DataFrame, signature: Mapping[str, Any], path: str) -> pl.DataFrame:
    """The anchors table as the page reads it: D680 naming ``path`` for a missing column (the id columns are
    the profile's, named by its ``signature``), a column of the wrong type, or a row whose value the page
    cannot use (row 1-based, header not counted; a null where ``ddp profile`` always writes a value, a
    fraction, text in a number column, a null ``confidence`` of a measured distance). Whole numbers stored
    as floats are read as integers; a null ``confidence`` of an anchor that measures nothing (distance
    <= 0) as NaN, which a JSON output writes as null."""
    import polars as pl

    cols = signature.get("columns") or {}
    doc, seg = cols.get("document") or S.DOCUMENT_ID, cols.get("segment") or S.SEGMENT_ID
    need = [doc, seg, *TEXT_REQUIRED, *INT_REQUIRED]
    miss = [c for c in need if c not in anchors.columns]
    if miss:
        raise DDPDataError(f"--anchors: missing column(s) {', '.join(miss)} in {path} (columns: "
                           f"{', '.join(anchors.columns[:25])}); give the --anchors table of `ddp profile`",
                           code="D680")
    fixed: dict[str, pl.Series] = {}
    for name in (*INT_REQUIRED, *INT_OPTIONAL, *INT_NULLABLE):
        if name in anchors.columns:
            fixed[name] = _whole_numbers(anchors[name], path, nullable=name in INT_NULLABLE)
    for name in (*TEXT_REQUIRED, *TEXT_OPTIONAL):
        if name in anchors.columns:
            _text(anchors[name], path)
    if S.CERTIFIED in anchors.columns:
        s = anchors[S.CERTIFIED]
        if s.dtype not in (pl.Boolean, pl.Null):
            _not_of_type(s, path, "true/false")
    if S.CONFIDENCE in anchors.columns:
        s = anchors[S.CONFIDENCE]
        if not (s.dtype.is_numeric() or s.dtype == pl.Null):
            _not_of_type(s, path, "a number")
        # NaN (written as null in JSON) for an anchor that measures nothing; every measured distance has one
        bad = s.is_null() & (fixed[S.DISTANCE_SENTENCES] > 0)
        if bad.any():
            i = int(bad.arg_true()[0])
            _bad(path, i, S.CONFIDENCE, f"no value (null) for a distance of {fixed[S.DISTANCE_SENTENCES][i]} "
                                        "sentences (`ddp profile` writes the confidence of every measured distance)")
        fixed[S.CONFIDENCE] = s.cast(pl.Float64).fill_null(float("nan"))
    return anchors.with_columns(*fixed.values()) if fixed else anchors


def _bad(path: str, row: int, column: str, what: str) -> NoReturn:
    raise DDPDataError(f"--anchors {path}, row {row + 1}, column {column}: {what}; give the --anchors table "
                       "`ddp profile` wrote (regenerate it with `ddp profile ... --anchors`)", code="D680")


def _whole_numbers(s: pl.Series, path: str, *, nullable: bool) -> pl.Series:
    """``s`` as Int64: D680 naming the first row that is null (unless ``nullable``), fractional, non-finite
    or not a number."""
    import polars as pl

    bad = None
    if s.dtype.is_float() or s.dtype.is_decimal():
        f = s.cast(pl.Float64)
        bad = (~f.is_finite() | (f != f.floor()) | (f.abs() >= 2.0 ** 62)).fill_null(False)
    elif s.dtype == pl.String:  # a text table's column with a value that is not a number
        num = s.str.strip_chars().cast(pl.Int64, strict=False)
        bad = num.is_null() & s.is_not_null()
        s = num if not bad.any() else s
    elif not (s.dtype.is_integer() or s.dtype == pl.Null):
        _not_of_type(s, path, "a whole number")
    if bad is not None and bad.any():
        i = int(bad.arg_true()[0])
        _bad(path, i, s.name, f"{s[i]!r} is not a whole number")
    if not nullable and s.null_count():
        i = int(s.is_null().arg_true()[0])
        _bad(path, i, s.name, f"no value (null; {s.null_count()} of {s.len()} rows; `ddp profile` writes a whole "
                              "number on every row, -1 when there is none)")
    return s.cast(pl.Int64)


def _not_of_type(s: pl.Series, path: str, what: str) -> NoReturn:
    """D680 naming the first row with a value of ``s``, a column whose type is not ``what``."""
    first = int(s.is_not_null().arg_true()[0]) if s.null_count() < s.len() else 0
    value = f"{s[first]!r} is" if s.len() else "the column is"
    _bad(path, first, s.name, f"{value} not {what} (the column holds {s.dtype})")


def _text(s: pl.Series, path: str) -> None:
    import polars as pl

    if not (s.dtype in (pl.String, pl.Categorical, pl.Null) or isinstance(s.dtype, pl.Enum)):
        _not_of_type(s, path, "text")
