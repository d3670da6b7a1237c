"""Long evaluation tables: loading, validation, condition pairing, result signatures.

A *long table* has one row per annotation (or metric score) with the columns
``document_id, segment_id, system, annotator, condition, score`` (names selectable by
keyword and by the matching CLI flag, see :data:`FLAGS`). :func:`load_long_table` reads
any supported input, checks the columns and the score values, and returns a polars
DataFrame whose columns carry the *canonical* names from :mod:`ddpcore.schema`, so every
statistic downstream works with fixed names.

Error codes (D3xx, statistics input) raised here: D301 missing column, D302 missing or
NaN score, D303 non-numeric score, D304 null key value, D305 condition not present,
D306 unpaired rows, D307 duplicate pairing key or the same rating twice, D309 empty table, D360 score too large in
magnitude (|score| > 1e100), D361 several conditions where one is expected.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .._version import __version__
from .. import schema
from ..errors import DDPDataError, DDPUsageError
from .columns import (LONG_TABLE_ROLES, TableColumns, check_columns, check_group_keys,  # noqa: F401
                      check_key_types, key_missing)
from ..signature import json_safe, signature  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    import polars as pl

#: canonical column names of a long table, by role
ROLES: dict[str, str] = {
    "document": schema.DOCUMENT_ID,
    "segment": schema.SEGMENT_ID,
    "system": schema.SYSTEM,
    "annotator": schema.ANNOTATOR,
    "condition": schema.CONDITION,
    "score": schema.SCORE,
}

#: CLI flag that selects the column of each role (the field of :class:`TableColumns` of the same name)
FLAGS: dict[str, str] = {role: TableColumns.flag(role) for role in ROLES}

#: largest score magnitude accepted. Sums over up to 2**53 rows and squared differences of
#: such scores stay far inside the float64 range (|x| <= 1e100 -> squares <= 4e200), so no
#: statistic can overflow to inf/NaN; larger values are refused (D360) instead of producing
#: an infinite mean difference or a NaN p-value.
MAX_ABS_SCORE = 1e100

#: names of the two score columns produced by :func:`pair_conditions`
SCORE_A = "score_a"
SCORE_B = "score_b"

NanPolicy = Literal["raise", "omit"]


def result_to_dict(result: Any, include_replicates: bool = False) -> dict[str, Any]:
    """JSON-safe dict of a frozen ``...Result`` dataclass; its ``replicates`` array (often
    10,000+ values) is included only on request."""
    import dataclasses

    d = {f.name: getattr(result, f.name) for f in dataclasses.fields(result) if f.name != "replicates"}
    if include_replicates:
        d["replicates"] = result.replicates
    return json_safe(d)


def check_nan_policy(nan_policy: str) -> None:
    """D311 unless ``nan_policy`` is ``"raise"`` or ``"omit"``."""
    if nan_policy not in ("raise", "omit"):
        raise DDPUsageError(f"nan_policy must be 'raise' or 'omit', got {nan_policy!r} (--nan-policy)", code="D311")


def load_long_table(
    table: Any,
    *,
    columns: TableColumns | None = None,
    required: Sequence[str] = ("document", "segment", "system", "condition", "score"),
    nan_policy: NanPolicy = "raise",
    counts: dict[str, Any] | None = None,
    rating_keys: Sequence[str] = (),
) -> pl.DataFrame:
    """Read and validate a long evaluation table; return it with canonical column names.

    Parameters
    ----------
    table
        A path (CSV/TSV/JSONL/JSON/Parquet, read by :func:`ddpcore.io.tables.read_table`) or a
        polars/pandas DataFrame or pyarrow Table, shape (n_rows, n_columns).
    columns
        :class:`~ddpcore.stats.columns.TableColumns`: the column playing each role in
        ``table`` (CLI ``--document-col`` ...). The document, segment, system, annotator,
        condition and score columns are renamed to ``document_id, segment_id, system,
        annotator, condition, score``. ``annotator=None`` means the table has no annotator
        column (a column named ``annotator`` is then dropped from the result). When the
        annotator column is left at its default name and is absent, the table is treated
        as having no annotator column; a non-default name that is absent is an error.
    required
        Roles (keys of :data:`ROLES`) that must be present. The score role is validated
        (numeric, no null/NaN) only when required.
    nan_policy
        ``"raise"`` (default): a null or NaN score is an error naming the first bad row.
        ``"omit"``: such rows are dropped. Infinite scores are always an error.
    counts
        A dict to receive what loading dropped: ``n_omitted`` (rows with a missing score dropped by
        ``nan_policy="omit"``) and, when that is not 0, ``first_omitted_row`` (1-based data row).
        Statistics record these in their result (nothing is dropped in silence).
    rating_keys
        Further columns that tell two ratings of one (document, segment, system, annotator,
        condition) apart, e.g. the ``metric`` of ``ddp stats tost --by metric`` (one row per metric
        and annotation): they join that key in the repeated-rating check (D307,
        :func:`check_unique_ratings`). Names the table does not have are ignored.

    Returns
    -------
    polars.DataFrame
        Shape (n_rows [minus omitted], n_columns): rows in input order; role columns renamed to
        canonical names, score cast to Float64; other columns kept unchanged. Key columns
        (document, segment, system, annotator, condition) must not contain nulls.
    """
    cols = check_columns(columns, func="load_long_table")
    return _load_long_table(table, cols, required, nan_policy, counts=counts, rating_keys=rating_keys)


def table_source(table: Any) -> str:
    """How messages name ``table``: its path, the files a reader made it from (:func:`ddpcore.io.tables.name_frame`),
    or ``<table>`` for an in-memory frame."""
    from ..io.tables import frame_name

    if isinstance(table, str) or hasattr(table, "__fspath__"):
        return str(table)
    return frame_name(table) or "<table>"


def _load_long_table(table: Any, cols: TableColumns, required: Sequence[str], nan_policy: NanPolicy, *,
                     optional_annotator: bool = False, counts: dict[str, Any] | None = None,
                     rating_keys: Sequence[str] = ()) -> pl.DataFrame:
    """:func:`load_long_table` with resolved columns (used by the statistics functions).

    ``optional_annotator``: an annotator column that is absent (under any name) means "no annotator
    column" instead of D301 (for statistics that use the annotator only for :func:`check_unique_ratings`)."""
    from ._frames import as_frame

    check_nan_policy(nan_policy)
    unknown = [r for r in required if r not in ROLES]
    if unknown:
        raise DDPUsageError(f"unknown table role(s) {unknown}; known roles: {', '.join(ROLES)}", code="D311")
    source = table_source(table)
    names = cols.roles(LONG_TABLE_ROLES)
    df = as_frame(table, key_columns=[names[r] for r in ("document", "segment", "system", "annotator", "condition")])
    annotator = cols.annotator
    if annotator is not None and annotator not in df.columns:
        if (annotator == schema.ANNOTATOR or optional_annotator) and "annotator" not in required:
            names["annotator"] = None
        else:
            _missing(df, source, "annotator", annotator)
    for role in required:
        col = names[role]
        if col is None:
            raise DDPUsageError(f"the {role} column is required here; do not set it to None ({FLAGS[role]})", code="D311")
        if col not in df.columns:
            _missing(df, source, role, col)
    if names["annotator"] is None and schema.ANNOTATOR in df.columns:
        # "no annotator role": a column that happens to carry the canonical name is dropped so
        # that pairing and grouping never pick it up
        df = df.drop(schema.ANNOTATOR)
    # optional roles present under their given names are renamed too
    present = {role: col for role, col in names.items() if col is not None and col in df.columns}
    targets = [ROLES[r] for r in present]
    if len(set(present.values())) != len(present):
        raise DDPUsageError(f"two roles use the same column: {present}", code="D311")
    clash = [c for c in df.columns if c in targets and c not in present.values()]
    if clash:
        # e.g. --score metric while a column literally named 'score' also exists
        df = df.drop(clash)
    df = df.rename({col: ROLES[role] for role, col in present.items() if col != ROLES[role]})
    if df.height == 0:
        raise DDPDataError(f"{source}: the table has no rows", code="D309")
    _check_role_types(df, source, present)
    for role in present:
        if role == "score":
            continue
        canon = ROLES[role]
        missing = key_missing(df[canon])  # null, or NaN in a float column
        if missing is not None:
            n_null = int(missing.sum())
            row = int(missing.arg_true()[0]) + 1
            raise DDPDataError(
                f"{source}, row {row}, column '{names[role]}': {n_null} null (or NaN) value(s) in the {role} column; "
                f"every row needs a {role} ({FLAGS[role]} selects the column)",
                code="D304",
            )
    check_unique_ratings(df, source, extra=rating_keys)
    if "score" in present:
        n_rows = df.height
        df, first_omitted = _validate_scores(df, source, names["score"] or schema.SCORE, nan_policy)
        if counts is not None:
            counts["n_omitted"] = n_rows - df.height
            if first_omitted is not None:
                counts["first_omitted_row"] = first_omitted
    elif counts is not None:
        counts["n_omitted"] = 0
    return df


def _check_role_types(df: pl.DataFrame, source: str, present: Mapping[str, str]) -> None:
    """Key columns hold integers or text (nested, binary or object values: D108); the score column holds
    numbers (or numeric text, checked value by value later): a nested, temporal, binary or object score
    column is D303 (a Date would otherwise be read as a number of days). ``present``: role -> original
    name; ``df`` has the canonical names."""
    import polars as pl

    for role, original in present.items():
        canon = ROLES[role]
        dtype = df.schema[canon]
        odd = dtype.is_nested() or dtype in (pl.Binary, pl.Object)
        if role == "score":
            if odd or dtype.is_temporal():
                s = df[canon]
                row = int(s.is_not_null().arg_true()[0]) if s.null_count() < s.len() else 0
                raise DDPDataError(
                    f"{source}, row {row + 1}, column '{original}': score {s.slice(row, 1).to_list()[0]!r} is not a "
                    f"number (column type {dtype}); the score column must be numeric (--score-col selects it)",
                    code="D303")
        elif odd:
            raise DDPDataError(
                f"{source}, column '{original}': ids must be integers or text, found type {dtype} ({role} column); "
                f"choose the {role} column with {FLAGS[role]} or convert it", code="D108")


def load_ratings(table: Any, cols: TableColumns, required: Sequence[str], nan_policy: NanPolicy, *,
                 counts: dict[str, Any] | None = None) -> pl.DataFrame:
    """:func:`_load_long_table` for statistics that do not use the annotator: the annotator column, when
    the table has one, takes part in :func:`check_unique_ratings` (D307 for a rating repeated) and is then
    dropped from the result (so grouping and pairing never pick it up). These statistics have no annotator
    flag, so ``cols.annotator=None`` falls back to a column named ``annotator`` when there is one."""
    if cols.annotator is None:
        cols = cols.replace(annotator=schema.ANNOTATOR)
    df = _load_long_table(table, cols, required, nan_policy, optional_annotator=True, counts=counts)
    return df.drop(schema.ANNOTATOR) if schema.ANNOTATOR in df.columns else df


#: the columns that identify one rating, in message order (those a table has)
RATING_KEY = (schema.CONDITION, schema.DOCUMENT_ID, schema.SEGMENT_ID, schema.SYSTEM, schema.ANNOTATOR)


def check_unique_ratings(df: pl.DataFrame, source: str = "<table>", keys: Sequence[str] | None = None,
                         what: str = "", extra: Sequence[str] = ()) -> None:
    """D307 when two rows of ``df`` (canonical names) are the same rating: the same document, segment,
    system, annotator and condition (the key columns the table has).

    The one rule for repeated rows shared by every long-table statistic (issue 19): a row repeated
    verbatim, or an id typo that turns one rating into a second rating of another key, must not count
    twice in some parts of a statistic and once in others. It applies when the table has document,
    segment *and* annotator columns (``keys=None``); without an annotator column, rows sharing
    (document, segment, system, condition) are ratings by different, unnamed annotators and each
    statistic treats them as it documents. ``keys`` overrides the key columns (e.g. alpha's coder);
    ``extra`` adds columns the table has to the default key (a ``--by metric`` column: one rating per
    metric); ``what`` is prefixed to the message. Row numbers are 1-based rows of ``df`` as loaded (the input's
    data rows). One vectorised ``is_duplicated`` pass; no Python loop over rows."""
    import polars as pl

    if keys is None:
        if not all(c in df.columns for c in (schema.DOCUMENT_ID, schema.SEGMENT_ID, schema.ANNOTATOR)):
            return
        keys = [c for c in RATING_KEY if c in df.columns]
        keys += [c for c in dict.fromkeys(extra) if c in df.columns and c not in keys]
    keys = list(keys)
    if df.height < 2 or not keys:
        return
    dup = df.select(keys).is_duplicated()
    if not dup.any():
        return
    first = int(dup.arg_true()[0])
    key = df.select(keys).row(first, named=True)
    same = pl.all_horizontal([pl.col(k) == key[k] for k in keys])
    rows = (df.select(keys).with_row_index("__row").filter(same)["__row"] + 1).to_list()
    shown = ", ".join(map(str, rows[:5])) + (f" (and {len(rows) - 5} more)" if len(rows) > 5 else "")
    cond = f"condition {key[schema.CONDITION]!r}: " if schema.CONDITION in key else ""
    ident = ", ".join(f"{k}={key[k]!r}" for k in keys if k != schema.CONDITION)
    raise DDPDataError(
        f"{source}, rows {shown}: {what}{cond}the rating ({ident}) occurs {len(rows)} times "
        f"({int(dup.sum())} rows repeat a rating); each ({', '.join(keys)}) must occur once. Remove the repeated "
        "rows (a row pasted twice, or an id typo that made two ratings of one key), or give ratings by different "
        "annotators distinct annotator ids (--annotator-col)",
        code="D307",
    )


def _missing(df: pl.DataFrame, source: str, role: str, col: str) -> None:
    raise DDPDataError(
        f"{source}: the {role} column '{col}' is missing (select another column with {FLAGS[role]} NAME); "
        f"available columns: {', '.join(df.columns)}",
        code="D301",
    )


def _row_key(df: pl.DataFrame, i: int, lead: str) -> str:
    """``lead`` + ``document 'd1', segment 3, system 'A', condition 'mqm'`` (+ ``)`` when ``lead`` opens one):
    the ids of row ``i`` (0-based) the table has, so a row of a reader's table (``--reader mtme``...) can be
    found in the files it was read from; ``""`` when it has none."""
    row = df.row(i, named=True)
    ids = [f"{c.removesuffix('_id')} {row[c]!r}" for c in RATING_KEY[1:] + RATING_KEY[:1] if c in row]
    return f"{lead}{', '.join(ids)}{')' if '(' in lead else ''}" if ids else ""


def _validate_scores(df: pl.DataFrame, source: str, original: str, nan_policy: str) -> tuple[pl.DataFrame, int | None]:
    """``df`` with a checked Float64 score column, and the 1-based row of the first score dropped by
    ``nan_policy="omit"`` (``None``: none dropped)."""
    import polars as pl

    col = schema.SCORE
    dtype = df.schema[col]
    if not dtype.is_numeric():
        cast = df[col].cast(pl.Float64, strict=False)
        bad = cast.is_null() & df[col].is_not_null()
        if bad.any():
            row = int(bad.arg_true()[0])
            raise DDPDataError(
                f"{source}, row {row + 1}, column '{original}': score {df[col][row]!r} is not a number "
                f"(column type {dtype}{_row_key(df, row, '; ')}); the score column must be numeric (--score-col selects it)",
                code="D303",
            )
        df = df.with_columns(cast.alias(col))
    else:
        df = df.with_columns(pl.col(col).cast(pl.Float64))
    s = df[col]
    first_omitted = None
    if s.is_infinite().any():
        row = int(s.is_infinite().arg_true()[0]) + 1
        raise DDPDataError(f"{source}, row {row}, column '{original}': infinite score{_row_key(df, row - 1, ' (')}; "
                           "scores must be finite", code="D302")
    missing = s.is_null() | s.is_nan()
    n_missing = int(missing.sum())
    if n_missing:
        if nan_policy == "raise":
            row = int(missing.arg_true()[0]) + 1
            raise DDPDataError(
                f"{source}, row {row}, column '{original}': {n_missing} missing (null/NaN) score(s)"
                f"{_row_key(df, row - 1, ' (the first: ')}; "
                "drop them first or pass nan_policy='omit' (--nan-policy omit) to ignore those rows",
                code="D302",
            )
        first_omitted = int(missing.arg_true()[0]) + 1
        df = df.filter(~missing)
        if df.height == 0:
            raise DDPDataError(f"{source}: every score is missing (null/NaN); nothing to analyse", code="D309")
    big = (s.abs() > MAX_ABS_SCORE) & ~s.is_nan()  # polars orders NaN above every number
    if big.any():
        row = int(big.arg_true()[0]) + 1
        raise DDPDataError(
            f"{source}, row {row}, column '{original}': score {s[row - 1]:g} is too large in magnitude "
            f"(|score| > {MAX_ABS_SCORE:g}; means and variances would overflow); rescale the score column "
            "(e.g. divide it by a power of ten, and the margins with it)",
            code="D360",
        )
    return df, first_omitted


def pair_keys(df: pl.DataFrame, *, annotator: bool | None = None) -> list[str]:
    """Columns that identify one paired observation.

    ``document_id, segment_id`` plus ``system`` when present, plus ``annotator`` when
    present (``annotator=None``), forced on (``True``) or off (``False``, e.g. for two
    disjoint annotator pools scoring the same items).
    """
    keys = [schema.DOCUMENT_ID, schema.SEGMENT_ID]
    if schema.SYSTEM in df.columns:
        keys.append(schema.SYSTEM)
    use_annotator = (schema.ANNOTATOR in df.columns) if annotator is None else annotator
    if use_annotator:
        if schema.ANNOTATOR not in df.columns:
            raise DDPDataError("pairing by annotator was requested but the table has no annotator column (--annotator-col NAME, or --no-pair-annotator)", code="D301")
        keys.append(schema.ANNOTATOR)
    return keys


def pair_conditions(
    df: pl.DataFrame,
    a: str,
    b: str,
    *,
    annotator: bool | None = None,
    unpaired: Literal["raise", "drop"] = "raise",
    extra_keys: Sequence[str] = (),
    counts: dict[str, Any] | None = None,
) -> pl.DataFrame:
    """Pair the rows of conditions ``a`` and ``b`` that share a key.

    The key is (``document_id``, ``segment_id`` [, ``system``] [, ``annotator``]), see
    :func:`pair_keys`, plus ``extra_keys`` (e.g. a metric or domain column kept for
    grouping; a column already in the key is not added twice; the score and condition
    columns, or a name given twice, are D311). ``df`` must use canonical names (output of
    :func:`load_long_table`). ``counts``: a dict to receive ``n_unpaired``, the rows dropped by
    ``unpaired="drop"`` (and ``unpaired_example``, one of them, when there are any).

    Returns
    -------
    polars.DataFrame
        One row per pair, sorted by the key: the key columns, ``score_a`` (condition a)
        and ``score_b`` (condition b).

    Raises
    ------
    DDPDataError
        D305 if a condition has no rows, D307 if a key occurs twice within a condition,
        D306 if some rows have no partner and ``unpaired="raise"`` (the message shows an
        example and suggests ``unpaired="drop"`` / ``--unpaired drop``), or if no pair
        is left at all.
    """
    import polars as pl

    from ._frames import as_frame

    df = as_frame(df)  # a pandas/pyarrow table or LazyFrame (canonical names), as every statistic takes it
    if unpaired not in ("raise", "drop"):
        raise DDPUsageError(f"unpaired must be 'raise' or 'drop', got {unpaired!r} (--unpaired)", code="D311")
    if a == b:
        raise DDPUsageError(f"the two conditions must differ (both are {a!r})", code="D311")
    base = pair_keys(df, annotator=annotator)
    extra = check_group_keys(extra_keys, a, b)
    keys = base + [k for k in extra if k not in base]
    for k in [*keys, schema.CONDITION, schema.SCORE]:
        if k not in df.columns:
            raise DDPDataError(f"pairing column '{k}' is missing; available columns: {', '.join(df.columns)}", code="D301")
    available = df[schema.CONDITION].cast(pl.String).unique().sort().to_list()
    parts = {label: _condition_rows(df, name, keys, available).rename({schema.SCORE: score})
             for label, name, score in (("a", a, SCORE_A), ("b", b, SCORE_B))}
    joined = parts["a"].join(parts["b"], on=keys, how="full", coalesce=True, nulls_equal=False)
    lonely = joined[SCORE_A].is_null() | joined[SCORE_B].is_null()
    if unpaired == "raise":
        _refuse_unpaired(joined, lonely, keys, a, b)
    if counts is not None:
        counts["n_unpaired"] = n_lonely = int(lonely.sum())
        if n_lonely:
            first = joined.filter(lonely).row(0, named=True)
            side, other = (a, b) if first[SCORE_B] is None else (b, a)
            counts["unpaired_example"] = (f"{', '.join(f'{k}={first[k]!r}' for k in keys)} exists in {side!r} "
                                          f"but not in {other!r}")
    paired = joined.filter(~lonely).sort(keys)
    if paired.height == 0:
        raise DDPDataError(
            f"no row of condition {a!r} has a partner in {b!r} on ({', '.join(keys)}); nothing to compare"
            + (" (annotator pools may be disjoint: pair on items only with annotator=False)" if schema.ANNOTATOR in keys else ""),
            code="D306",
        )
    return paired


def _condition_rows(df: pl.DataFrame, name: str, keys: list[str], available: list[str]) -> pl.DataFrame:
    """The key and score columns of condition ``name`` (D305 none, D307 a key twice)."""
    import polars as pl

    part = df.filter(pl.col(schema.CONDITION).cast(pl.String) == str(name)).select([*keys, schema.SCORE])
    if part.height == 0:
        raise DDPDataError(
            f"condition {name!r} has no rows; conditions in the table: {', '.join(map(str, available))} "
            "(--condition-col selects the condition column)",
            code="D305",
        )
    dup = part.select(keys).is_duplicated()
    if dup.any():
        first = part.filter(dup).row(0, named=True)
        example = ", ".join(f"{k}={first[k]!r}" for k in keys)
        raise DDPDataError(
            f"condition {name!r}: {int(dup.sum())} rows share a pairing key with another row (e.g. {example}); "
            f"each ({', '.join(keys)}) must occur once per condition. Aggregate repeated annotations first"
            + ("" if schema.ANNOTATOR in keys else ", or keep the annotator column so repeats pair by annotator"),
            code="D307",
        )
    return part


def _refuse_unpaired(joined: pl.DataFrame, lonely: pl.Series, keys: list[str], a: str, b: str) -> None:
    """D306 when some joined rows (``lonely``, one flag per row) have no partner, with an example."""
    n_lonely = int(lonely.sum())
    if not n_lonely:
        return
    first = joined.filter(lonely).row(0, named=True)
    side = a if first[SCORE_B] is None else b
    other = b if side == a else a
    example = ", ".join(f"{k}={first[k]!r}" for k in keys)
    hint = ""
    if schema.ANNOTATOR in keys:
        hint = " If the two conditions were scored by different annotators, pair on items only (annotator=False / --no-pair-annotator)."
    raise DDPDataError(
        f"{n_lonely} row(s) have no partner in the other condition (e.g. {example} exists in {side!r} but not in "
        f"{other!r}); pairs are matched on ({', '.join(keys)}). Pass unpaired='drop' (--unpaired drop) to "
        f"ignore unpaired rows.{hint}",
        code="D306",
    )


def check_magnitude(values: Any, name: str) -> None:
    """Raise D360 if a finite value of ``values`` exceeds :data:`MAX_ABS_SCORE` in magnitude."""
    import numpy as np

    arr = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        big = np.abs(arr) > MAX_ABS_SCORE
    if big.any():
        pos = np.unravel_index(int(np.flatnonzero(big.ravel())[0]), arr.shape)
        at = pos[0] if len(pos) == 1 else tuple(int(p) for p in pos)
        raise DDPDataError(
            f"{name}[{at}] = {arr[pos]:g} is too large in magnitude (|value| > {MAX_ABS_SCORE:g}; means and "
            "variances would overflow); rescale the values (e.g. divide by a power of ten, and any margin with them)",
            code="D360",
        )


def check_single_condition(df: pl.DataFrame, flag: str = "--in COND") -> None:
    """Raise D361 if the condition column of ``df`` (canonical names) holds several values.

    For statistics that assume one condition: pooling two conditions silently would mix two
    experiments. ``flag`` names the option that selects one (shown in the message)."""
    import polars as pl

    from ._frames import as_frame

    df = as_frame(df)  # a pyarrow Table's `.columns` are its arrays: the check passed a two-condition table
    if schema.CONDITION not in df.columns:
        return
    present = df[schema.CONDITION].cast(pl.String).unique().sort().to_list()
    if len(present) > 1:
        example = f"{flag.split()[0]} {present[0]}" if flag.startswith("-") else f"{flag}{present[0]!r}"
        shown = ", ".join(repr(v) for v in present[:10]) + (f" (and {len(present) - 10} more)" if len(present) > 10 else "")
        raise DDPUsageError(
            f"the table holds {len(present)} conditions ({shown}) and this statistic uses one; "
            f"choose one with {flag} (e.g. {example})",
            code="D361",
        )


def check_conditions(df: pl.DataFrame, conditions: Sequence[str]) -> None:
    """Raise D305 if one of ``conditions`` has no row in ``df`` (canonical names)."""
    import polars as pl

    from ._frames import as_frame

    df = as_frame(df)
    if schema.CONDITION not in df.columns:
        raise DDPDataError(f"the table has no '{schema.CONDITION}' column (canonical names: load_long_table renames the "
                           f"--condition-col column); available columns: {', '.join(df.columns)}", code="D301")
    present = set(df[schema.CONDITION].cast(pl.String).unique().to_list())
    for name in conditions:
        if str(name) not in present:
            raise DDPDataError(
                f"condition {name!r} has no rows; conditions in the table: {', '.join(sorted(map(str, present)))} "
                "(--condition-col selects the condition column)",
                code="D305",
            )


def factorize(frame: pl.DataFrame, columns: Sequence[str]) -> tuple[Any, pl.DataFrame]:
    """Dense group codes for the rows of ``frame`` keyed by ``columns``, in sorted key order.

    Returns ``(codes, keys)``: ``codes`` is an int64 array of shape (n_rows,) with values
    in ``[0, n_groups)``; ``keys`` is a DataFrame with one row per distinct key, sorted by
    the key columns (numbers numerically, strings by code point, several columns
    lexicographically), so that ``keys[codes[i]]`` is row i's key. Hash-free for integer
    columns (O(n + value range), native kernel); integers beyond the int64 range (an Int128
    column of 26-digit ids) are ranked, still in numeric order; other dtypes go through a polars
    Categorical. Null keys raise D304; nested, binary or object keys D108.
    """
    import numpy as np
    import polars as pl

    columns = list(columns)
    n = frame.height
    if not columns:
        return np.zeros(n, dtype=np.int64), pl.DataFrame()
    if n == 0:
        return np.zeros(0, dtype=np.int64), frame.select(columns)
    combined = None
    first = None
    radix_total = 1
    check_key_types(frame, columns, "<table>", "the key columns")
    for col in columns:
        s = frame[col]
        missing = key_missing(s)  # null, or NaN in a float column
        if missing is not None:
            row = int(missing.arg_true()[0]) + 1
            raise DDPDataError(f"row {row}, column '{col}': null (or NaN) key value; every row needs a value here",
                               code="D304")
        codes, k, first = _dense_sorted_codes(s)
        if combined is None:
            combined, radix_total = codes, k
            continue
        if radix_total * k >= 2**62:  # re-densify before the mixed-radix code overflows
            combined, radix_total, _ = _compress(combined)
        combined = combined * k + codes
        radix_total *= k
        combined, radix_total, first = _compress(combined)
    keys = frame.select(columns)[first]
    return combined, keys


def _compress(codes: Any) -> tuple[Any, int, Any]:
    """Order-preserving dense codes of an int64 array: (codes, k, first row of each code)."""
    import numpy as np

    from .._native import load

    lo = int(codes.min())
    span = int(codes.max()) - lo + 1
    if span <= 2 * codes.size + (1 << 20):
        out = np.empty(codes.size, dtype=np.int64)
        k, first = load("stats_kernels").dense_codes(np.ascontiguousarray(codes, dtype=np.int64), lo, span, out)
        return out, k, first
    uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    return inverse.astype(np.int64, copy=False).reshape(-1), int(uniq.size), first.astype(np.int64)


def _fits_int64(s: pl.Series) -> bool:
    """Every value of the integer series ``s`` lies in the int64 range (only the 64-bit unsigned and 128-bit
    types are looked at: the narrower ones always fit)."""
    import polars as pl

    if not (s.dtype in (pl.Int128, pl.UInt64) or str(s.dtype) == "UInt128"):
        return True
    lo, hi = s.min(), s.max()
    return lo is None or (int(lo) >= -(2**63) and int(hi) < 2**63)


def _dense_sorted_codes(s: pl.Series) -> tuple[Any, int, Any]:
    """Dense codes of one column following its sorted distinct values: (codes, k, first rows)."""
    import numpy as np
    import polars as pl

    if isinstance(s.dtype, pl.Enum):  # an Enum sorts by its categories' order: text sorts by code point
        s = s.cast(pl.String)
    if s.dtype.is_integer() and not _fits_int64(s):
        # ids beyond the 64-bit range (a 26-digit integer in a CSV is Int128): numeric order by a dense rank
        rank = s.rank("dense").cast(pl.Int64).to_numpy() - 1
        k = int(rank.max()) + 1 if rank.size else 0
        first = np.full(k, rank.size, dtype=np.int64)
        np.minimum.at(first, rank, np.arange(rank.size, dtype=np.int64))
        return rank, k, first
    if s.dtype.is_integer() or s.dtype == pl.Boolean:
        return _compress(s.cast(pl.Int64).to_numpy())
    if s.dtype.is_temporal():
        return _compress(s.to_physical().cast(pl.Int64).to_numpy())
    if s.dtype.is_float():
        uniq, first, inverse = np.unique(s.to_numpy(), return_index=True, return_inverse=True)
        return inverse.astype(np.int64, copy=False).reshape(-1), int(uniq.size), first.astype(np.int64)
    if s.dtype == pl.Categorical:
        phys = s.to_physical().cast(pl.Int64).to_numpy()
    else:
        phys = s.cast(pl.String).cast(pl.Categorical).to_physical().cast(pl.Int64).to_numpy()
    dense, k, first = _compress(phys)  # order of the category map, not sorted
    order = s.gather(first).arg_sort().to_numpy()
    rank = np.empty(k, dtype=np.int64)
    rank[order] = np.arange(k, dtype=np.int64)
    return rank[dense], k, first[order]


def is_real(x: Any) -> bool:
    """Whether ``x`` is a real number as the API takes one (int, float, numpy scalar; not a bool or a str)."""
    import numbers

    return isinstance(x, numbers.Real) and not isinstance(x, bool)


#: bits per limb of :func:`group_sums`: a group of up to 2**26 rows sums its limbs exactly in float64
_LIMB_BITS = 26
#: most limbs :func:`group_sums` splits values into (an exponent span of about 990 bits, so that the scaled values stay
#: finite); wider data (values from 1e-300 to 1 and more) is summed in sorted order instead
_MAX_LIMBS = 38


def group_sums(codes: Any, values: Any, n_groups: int) -> Any:
    """Sum of ``values`` (n,) per group ``codes`` (n,) in [0, n_groups), float64 (n_groups,), that does not depend
    on the order of the rows: the same scores in another row order give the same bits, so the means, rankings and
    ties decided on them do too (``np.bincount(codes, weights=values)`` adds in row order, and floating-point
    addition is not associative).

    Integer values whose sums stay below 2**53 are summed as they are (exact). Other finite values are split, each
    exactly, into integer limbs of :data:`_LIMB_BITS` bits at fixed binary exponents common to all rows; each limb is
    summed per group exactly (O(n) per limb, no sort), the carries are normalised, and the group's sum is rebuilt
    from its limbs, top down: a function of the exact sum only. Data spanning more than :data:`_MAX_LIMBS` limbs,
    non-finite values or groups of 2**26 rows and more are summed in sorted order instead (O(n log n))."""
    import numpy as np

    codes = np.asarray(codes, dtype=np.int64)
    v = np.asarray(values, dtype=np.float64) + 0.0  # -0.0 -> 0.0: equal values are then interchangeable
    if v.size == 0:
        return np.zeros(n_groups, dtype=np.float64)
    a = np.abs(v)
    amax = float(a.max())
    if not math.isfinite(amax) or v.size >= 2**_LIMB_BITS:
        return _sorted_group_sums(codes, v, n_groups)
    head = v[:1024]
    if amax * v.size < 2.0**53 and bool((head == np.floor(head)).all()) and bool((v == np.floor(v)).all()):
        return np.bincount(codes, weights=v, minlength=n_groups)  # integers: every partial sum is exact
    top = math.frexp(amax)[1]  # |v| < 2**top
    bottom = max(math.frexp(float(a[a > 0].min()))[1] - 53, -1074)  # every value is a multiple of 2**bottom
    n_limbs = (top - bottom) // _LIMB_BITS + 1
    if n_limbs > _MAX_LIMBS:
        return _sorted_group_sums(codes, v, n_groups)
    u = np.ldexp(v, -bottom)  # integers now, exactly (a power-of-two scale, |u| < 2**(top - bottom) <= 2**988)
    q = np.empty_like(u)
    sums = []
    for b in range(n_limbs - 1, -1, -1):  # limbs, top down: q * 2**(26 b), |q| < 2**26, toward zero
        unit = math.ldexp(1.0, _LIMB_BITS * b)
        np.trunc(np.multiply(u, 1.0 / unit, out=q), out=q)  # exact: a power-of-two scale
        sums.append(np.bincount(codes, weights=q, minlength=n_groups))  # exact: < 2**26 rows x 2**26
        if b:
            u -= q * unit  # exact: the remainder (sign of u, below unit) is some of u's own bits
    sums.reverse()  # sums[b]: the group sums of limb b
    _carry(sums)  # every limb but the top one in [0, 2**26): the top one has the sign of the sum
    sign = np.where(sums[-1] < 0, -1.0, 1.0)
    sums = [x * sign for x in sums]
    _carry(sums)  # the limbs of |sum|, all >= 0: rebuilt top down without cancellation
    total = sums[-1] * math.ldexp(1.0, _LIMB_BITS * (n_limbs - 1))
    for b in range(n_limbs - 2, -1, -1):
        total = total + sums[b] * math.ldexp(1.0, _LIMB_BITS * b)
    return np.ldexp(total * sign, bottom)


def _carry(sums: list) -> None:
    """Normalise per-group limb sums in place, bottom up: every limb but the top one into [0, 2**26) (exact)."""
    import numpy as np

    base = 2.0**_LIMB_BITS
    for b in range(len(sums) - 1):
        carry = np.floor(sums[b] / base)
        sums[b] = sums[b] - carry * base
        sums[b + 1] = sums[b + 1] + carry


def _sorted_group_sums(codes: Any, v: Any, n_groups: int) -> Any:
    """:func:`group_sums` by sorting: each group's values added in ascending order (O(n log n))."""
    import numpy as np

    order = np.argsort(v)  # by value (the order among equal values does not change a sum)...
    order = order[np.argsort(codes[order], kind="stable")]  # ...within each group
    return np.bincount(codes[order], weights=v[order], minlength=n_groups)


def similar_names_warning(values: Any, role: str = "system", flag: str = "--system-col") -> str | None:
    """A warning when two distinct values of ``values`` (e.g. the system names of a table) differ only by
    letter case or surrounding whitespace (``'GPT4'`` and ``'gpt4 '``): they are counted as two systems, which
    is rarely meant (a trailing space or a renamed file in one batch splits one system's scores in two).
    ``None`` when there is no such pair. One vectorised pass over the distinct values."""
    import polars as pl

    s = pl.Series("v", values).cast(pl.String).drop_nulls().unique()
    frame = pl.DataFrame({"v": s, "k": s.str.strip_chars().str.to_lowercase()})
    groups = frame.group_by("k").agg(pl.col("v").sort()).filter(pl.col("v").list.len() > 1).sort("k")
    if groups.height == 0:
        return None
    first = groups["v"][0].to_list()
    return (f"{groups.height} group(s) of {role} names differ only by letter case or surrounding whitespace and are "
            f"counted as different {role}s (first: {', '.join(map(repr, first))}); if they are one {role}, make the "
            f"names identical in the table ({flag} selects the column)")
