"""One object naming the columns of a long evaluation table, for every table-reading function.

:class:`TableColumns` holds the column name of each *role* (document, segment, system,
annotator, condition, score, text, domain); defaults come from :mod:`ddpcore.schema`. Every
statistics function that reads a long table takes ``columns=TableColumns(...)``, and the
``ddp stats`` CLI builds one from its ``--*-col`` flags, so a column is renamed in one place::

    from ddpcore.stats import TableColumns, bootstrap_tau
    cols = TableColumns(document="doc", score="esa")
    bootstrap_tau("scores.parquet", "DOC", "MIX", columns=cols)
"""
from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any, ClassVar

from .. import schema
from ..errors import DDPUsageError

#: every role, in the order used by messages and signatures
ROLES: tuple[str, ...] = ("document", "segment", "system", "annotator", "condition", "score", "text", "domain")

#: roles whose column may be absent (``None``)
_OPTIONAL_ROLES: tuple[str, ...] = ("segment", "annotator")

#: the roles of a long table that :func:`ddpcore.stats.load_long_table` renames to canonical names
LONG_TABLE_ROLES: tuple[str, ...] = ("document", "segment", "system", "annotator", "condition", "score")


@dataclasses.dataclass(frozen=True)
class TableColumns:
    """Column names of a long evaluation table, one field per role.

    Fields (defaults from :mod:`ddpcore.schema`): ``document`` (``document_id``), ``segment``
    (``segment_id``; ``None`` = no segment column, where a function allows document-level
    rows), ``system`` (``system``), ``annotator`` (``annotator``; ``None`` = the table has no
    annotator column), ``condition`` (``condition``), ``score`` (``score``),
    ``text`` (``source``), ``domain`` (``domain``). A function uses only the roles it needs;
    the others are ignored.
    """

    document: str = schema.DOCUMENT_ID
    segment: str | None = schema.SEGMENT_ID
    system: str = schema.SYSTEM
    annotator: str | None = schema.ANNOTATOR
    condition: str = schema.CONDITION
    score: str = schema.SCORE
    text: str = schema.SOURCE
    domain: str = schema.DOMAIN

    #: CLI flag that selects the column of each role
    FLAGS: ClassVar[Mapping[str, str]] = {role: f"--{role}-col" for role in ROLES}

    def __post_init__(self) -> None:
        for role in ROLES:
            value = getattr(self, role)
            if value is None and role in _OPTIONAL_ROLES:
                continue
            if not isinstance(value, str):
                raise DDPUsageError(
                    f"TableColumns.{role} must be a column name (str), got {value!r} ({self.FLAGS[role]})",
                    code="D311")

    @classmethod
    def flag(cls, role: str) -> str:
        """The CLI flag of ``role`` (e.g. ``"score"`` -> ``"--score-col"``)."""
        try:
            return cls.FLAGS[role]
        except KeyError:
            raise DDPUsageError(f"unknown column role {role!r}; known roles: {', '.join(ROLES)}", code="D311") from None

    def flags(self) -> dict[str, str]:
        """``{column name: CLI flag}`` for every role with a column (as ``io.segments.SegmentColumns.flags``),
        for messages about a missing column. A name used by two roles keeps the first role's flag."""
        out: dict[str, str] = {}
        for role in ROLES:
            name = getattr(self, role)
            if name is not None:
                out.setdefault(name, self.FLAGS[role])
        return out

    def roles(self, which: Collection[str] = LONG_TABLE_ROLES) -> dict[str, str | None]:
        """``{role: column name}`` for the roles in ``which`` (default: the six long-table roles)."""
        return {role: getattr(self, role) for role in which}

    def replace(self, **changes: Any) -> TableColumns:
        """A copy with some columns changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)


def check_columns(columns: TableColumns | None, *, func: str) -> TableColumns:
    """``columns`` itself, or the defaults for ``None``; anything else is D311 (``func`` names the caller)."""
    if columns is None:
        return TableColumns()
    if not isinstance(columns, TableColumns):
        raise DDPUsageError(f"{func}(columns=...) must be a TableColumns, got {type(columns).__name__}", code="D311")
    return columns


def check_key_types(df: Any, columns: Collection[str], source: str, flag: str) -> None:
    """D108 when a key or group column of the polars frame ``df`` (e.g. ``--by`` columns, the domain column)
    holds nested, binary or object values: keys must be integers or text. ``source`` names the table in the
    message, ``flag`` the option that chose the columns; columns ``df`` lacks are skipped."""
    import polars as pl

    from ..errors import DDPDataError

    for col in columns:
        if col not in df.columns:
            continue
        dtype = df.schema[col]
        if dtype.is_nested() or dtype in (pl.Binary, pl.Object):
            raise DDPDataError(f"{source}, column '{col}': keys must be integers or text, found type {dtype}; "
                               f"choose another column with {flag} or convert it", code="D108")


def free_name(base: str, taken: Collection[str]) -> str:
    """``base``, or ``base_1``, ``base_2``... the first name not among the columns ``taken``: a helper column
    that cannot overwrite (and then drop) an input column of the same name."""
    names = set(taken)
    name, k = base, 0
    while name in names:
        k += 1
        name = f"{base}_{k}"
    return name


def key_missing(s: Any) -> Any:
    """Which values of the key column ``s`` (a polars Series) are missing, null or NaN in a float column, as a
    boolean Series; None when none is (decided from the null count, plus one NaN pass for a float column, so a
    clean key column costs no mask). A NaN id is no key: pandas hands its NaN over as null, polars and pyarrow
    keep it, and one table must not be refused as a pandas frame and analysed, with the NaN rows as one more
    document or segment, as a polars frame."""
    nan = s.dtype.is_float() and bool(s.is_nan().any())
    if not s.null_count() and not nan:
        return None
    return s.is_null() | s.is_nan().fill_null(False) if nan else s.is_null()


def check_group_keys(by: Collection[str], a: Any, b: Any) -> list[str]:
    """The group columns of a two-condition test (``--by``; canonical names), as a list, checked: a name given
    twice, or the score or condition column (each test compares scores of condition ``a`` with scores of
    ``b``), is D311."""
    by = [str(k) for k in by]
    twice = sorted({k for k in by if by.count(k) > 1})
    if twice:
        raise DDPUsageError(f"group columns name {', '.join(map(repr, twice))} twice (--by); give each column once",
                            code="D311")
    roles = [k for k in by if k in (schema.SCORE, schema.CONDITION)]
    if roles:
        raise DDPUsageError(
            f"cannot group by the {roles[0]} column ({TableColumns.flag(roles[0])}): each test compares scores of "
            f"condition {a!r} with scores of {b!r} (--by takes other columns, e.g. system, metric or domain)",
            code="D311")
    return by


__all__ = ["TableColumns", "check_columns", "check_group_keys", "check_key_types", "ROLES", "LONG_TABLE_ROLES"]
