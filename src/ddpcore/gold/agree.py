"""Agreement between two DDP runs over the same segments (paper Appendix A.3).

Typical use: the same test set profiled with two extractors (spaCy pipelines, rule sets,
distance modes), each written by ``ddp profile -o run.parquet`` (or a text output with its
``.signature.json`` sidecar); :func:`agree` reports
Pearson r, Spearman ρ, the share of identical DDP values, the share within ±``within``
sentences, the mean shift B − A per domain, and whether the ordering of domains by mean DDP
(and by share of zero-DDP segments) is the same under both runs.
"""
from __future__ import annotations

import json
import numbers
import os
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import schema
from ..errors import DDPDataError, DDPUsageError, where
from ..pipeline.summary import distinct_label
from ._correlation import correlation

if TYPE_CHECKING:
    from collections.abc import Callable

    import polars as pl

#: the one domain row when no segment of either run has a domain: every segment
ALL_DOMAINS = "all"
#: the domain row of the segments without a domain when others have one (as ``ddp profile``'s summary labels
#: them), or :func:`~ddpcore.pipeline.summary.distinct_label` of it when a domain has that name
NO_DOMAIN = "(none)"


@dataclass(frozen=True)
class DomainShift:
    """One domain under both runs; means in sentences, shares in [0, 1]."""

    domain: str
    n_segments: int
    mean_a: float
    mean_b: float
    shift: float  # mean_b - mean_a
    zero_share_a: float
    zero_share_b: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AgreementResult:
    """Output of :func:`agree`.

    ``pearson``/``spearman`` are ``None`` when undefined (a constant run or < 2 segments);
    ``share_identical``/``share_within`` are fractions of the matched segments;
    ``ordering_a``/``ordering_b`` list domains by descending mean DDP (ties by name),
    ``zero_ordering_*`` by ascending share of zero-DDP segments.
    """

    n_segments: int
    pearson: float | None
    spearman: float | None
    share_identical: float
    share_within: float
    within: int
    domains: tuple[DomainShift, ...]
    ordering_a: tuple[str, ...]
    ordering_b: tuple[str, ...]
    ordering_preserved: bool
    zero_ordering_a: tuple[str, ...]
    zero_ordering_b: tuple[str, ...]
    zero_ordering_preserved: bool
    signature_a: dict[str, Any] = field(default_factory=dict)
    signature_b: dict[str, Any] = field(default_factory=dict)
    ddp_col_a: str = schema.DDP
    ddp_col_b: str = schema.DDP
    #: the domain row of the segments without a domain (``None`` when every segment has one): ``all`` when no
    #: segment has one, else ``(none)`` (``((none))`` when a domain is named ``(none)``): never a domain's name
    no_domain: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["domains"] = [x.to_dict() for x in self.domains]
        for k in ("ordering_a", "ordering_b", "zero_ordering_a", "zero_ordering_b"):
            d[k] = list(d[k])
        return d


#: what to do about a damaged signature of a run
SIGNATURE_HINT = ("regenerate the run with `ddp profile`; a text output can also do without it: delete its "
                  ".signature.json and name the columns with --document-col/--segment-col/--domain-col")




def load_profile_signature(path: str | os.PathLike[str], *, hint: str = SIGNATURE_HINT
                           ) -> tuple[dict[str, Any], str | None]:
    """The signature of an output, strictly, and where it was read from: what ``ddp explain`` reads
    (:func:`ddpcore.io.profiles.load_signature`: a Parquet file's metadata or a text output's
    ``.signature.json`` sidecar, D103 naming the file and ``hint`` when it is damaged); ``({}, None)`` when
    the output has none."""
    from ..io.profiles import load_signature

    sig, source = load_signature(path, hint=hint)
    return (sig, source) if sig is not None else ({}, None)


def _load(run: Any, label: str, document: str | None = None, segment: str | None = None
          ) -> tuple[pl.DataFrame, dict[str, Any], str]:
    """A run's table, its signature (``{}`` when it has none) and its name for messages. The signature is
    read as ``ddp explain`` reads it: a Parquet file's metadata or a text output's ``.signature.json``
    sidecar (D103 when it is damaged). A file's id columns (``document``/``segment``, else the recorded or
    default ones) are read as written (:func:`ddpcore.io.profiles.read_profile_table`)."""
    from ..io.profiles import profile_columns, read_profile_table
    from ..io.tables import read_table

    if isinstance(run, (str, os.PathLike)):
        name = f"{label} ({os.fspath(run)})"
        signature = load_profile_signature(run, hint=SIGNATURE_HINT)[0]
        return read_profile_table(run, profile_columns(signature, document=document, segment=segment)), signature, name
    return read_table(run), {}, label


def _ddp_values(df: pl.DataFrame, name: str, ddp_col: str = schema.DDP) -> pl.Series:
    """The DDP column ``ddp_col`` of a run (``ddp`` unless ``--ddp-col`` names another) as float64 (nulls and NaN kept: D431 names them). Every other value must be
    a whole number of sentences >= 0, as ``ddp validate`` (D445) and ``ddp report`` (D781) require: a negative,
    fractional or infinite value is D445 naming the file, the row (1-based, the header not counted) and the
    column. A column that is not of numbers (text, even ``"3"``; booleans) was refused before, by
    :func:`~ddpcore.io.profiles.check_ddp_col` (D781, as select/sample/stratify/meta/report)."""
    import polars as pl

    s = df[ddp_col]
    if s.dtype == pl.Null:
        return s.cast(pl.Float64).alias(schema.DDP)
    v = s.cast(pl.Float64)
    bad = (v.is_infinite() | (v < 0) | (v != v.floor())).fill_null(False)
    if bad.any():
        rows = bad.arg_true()
        i = int(rows[0])
        raise DDPDataError(
            f"{where(name, row=i + 1, column=ddp_col)}: {s[i]!r} is not a DDP value (a whole number of sentences "
            f">= 0; {rows.len()} such row(s), column type {s.dtype}); compare `ddp profile` outputs, or fix the "
            "column", code="D445")
    return v.alias(schema.DDP)


def _prepare(df: pl.DataFrame, name: str, document: str, segment: str, domain: str | None,
             ddp_col: str = schema.DDP, ddp_flag: str = "--ddp-col") -> pl.DataFrame:
    import polars as pl

    from ..io.profiles import check_ddp_col
    from ..io.tables import require_columns

    check_ddp_col(df.columns, ddp_col, name, df.schema.get(ddp_col), flag=ddp_flag)
    require_columns(df, [document, segment, ddp_col], name,
                    flags={document: "--document-col", segment: "--segment-col"})
    ddp = _ddp_values(df, name, ddp_col)
    out = df.with_columns(ddp.alias("__ddp")).select(
        pl.col(document).cast(pl.String).alias(schema.DOCUMENT_ID),
        pl.col(segment).cast(pl.String).alias(schema.SEGMENT_ID),
        pl.col("__ddp").alias(schema.DDP),
        (pl.col(domain).cast(pl.String) if domain and domain in df.columns else pl.lit(None, dtype=pl.String)).alias(schema.DOMAIN),
    )
    _refuse_first(out.filter(pl.col(schema.DDP).is_null() | pl.col(schema.DDP).is_nan() | pl.col(schema.DOCUMENT_ID).is_null() | pl.col(schema.SEGMENT_ID).is_null()),
                  "D431", lambda r: f"{name}: {_segment(r)} has a missing id or DDP value; compare complete `ddp profile` outputs")
    _refuse_first(out.filter(pl.struct(schema.DOCUMENT_ID, schema.SEGMENT_ID).is_duplicated()),
                  "D432", lambda r: f"{name}: {_segment(r)} appears more than once; each run must have one row per segment")
    return out


def _segment(r: dict[str, Any]) -> str:
    return f"document '{r[schema.DOCUMENT_ID]}' segment '{r[schema.SEGMENT_ID]}'"


def _refuse_first(bad: pl.DataFrame, code: str, message: Callable[[dict[str, Any]], str]) -> None:
    """If ``bad`` has a row: ``code`` with the ``message`` of its first row."""
    if bad.height:
        raise DDPDataError(message(bad.row(0, named=True)), code=code)


def _check_same_segments(a: pl.DataFrame, b: pl.DataFrame, name_a: str, name_b: str) -> None:
    import polars as pl

    keys = [schema.DOCUMENT_ID, schema.SEGMENT_ID]
    for x, y, nx, ny in ((a, b, name_a, name_b), (b, a, name_b, name_a)):
        docs_x = x.select(schema.DOCUMENT_ID).unique(maintain_order=True)
        missing_doc = docs_x.join(y.select(schema.DOCUMENT_ID).unique(), on=schema.DOCUMENT_ID, how="anti", maintain_order="left")
        if missing_doc.height:
            raise DDPDataError(
                f"document '{missing_doc.item(0, 0)}' is in {nx} but not in {ny} ({missing_doc.height} such documents); "
                "agreement needs two runs over the same segments",
                code="D433",
            )
    for x, y, nx, ny in ((a, b, name_a, name_b), (b, a, name_b, name_a)):
        missing = x.join(y.select(keys), on=keys, how="anti", maintain_order="left")
        _refuse_first(missing, "D433", lambda r: f"{_segment(r)} is in {nx} but not in {ny} ({missing.height} such "
                                                 "segments); agreement needs two runs over the same segments")
    both = a.join(b, on=keys, how="inner", suffix="_b", maintain_order="left")
    clash = both.filter(
        pl.col(schema.DOMAIN).is_not_null() & pl.col(schema.DOMAIN + "_b").is_not_null() & (pl.col(schema.DOMAIN) != pl.col(schema.DOMAIN + "_b"))
    )
    _refuse_first(clash, "D434", lambda r: f"{_segment(r)} has domain '{r[schema.DOMAIN]}' in {name_a} but "
                                           f"'{r[schema.DOMAIN + '_b']}' in {name_b}; profile both runs from the same input")


def agree(
    a: Any,
    b: Any,
    *,
    within: int = 5,
    document: str | None = None,
    segment: str | None = None,
    domain: str | None = None,
    ddp_col: str = schema.DDP,
    ddp_col_b: str | None = None,
) -> AgreementResult:
    """Agreement of two DDP runs over the same segments.

    Parameters
    ----------
    a, b : path | DataFrame
        Segment tables of the two runs (``ddp profile`` outputs or any table with
        document id, segment id and ``ddp`` columns; ``domain`` optional). Outputs of
        ``ddp profile`` carry their signature and column names (a Parquet file in its metadata,
        a text output in its ``<file>.signature.json`` sidecar, read as ``ddp explain`` reads
        them), which are used when the ``document``/``segment``/``domain`` arguments are not given.
    within : int
        Tolerance in sentences for ``share_within`` (paper: ±5); >= 0 (D435).
    ddp_col, ddp_col_b : str
        The DDP column compared in A and in B (``ddp_col_b`` defaults to ``ddp_col``): ``ddp``, or
        ``ddp_certified`` (e.g. ``agree(run, run, ddp_col="ddp", ddp_col_b="ddp_certified")``: how far the
        certified column departs from the best estimate). A name a run does not have is D780.

    Raises
    ------
    DDPDataError
        A document or segment present in one run only (naming the first one), duplicated
        segments, missing DDP values, a DDP value that is not a whole number of sentences >= 0
        (D445, naming the file, row and column), a segment whose domain differs between runs, or a
        damaged signature (D103).
    """
    import polars as pl

    if isinstance(within, bool) or not isinstance(within, numbers.Integral) or within < 0:
        # a text or None was a bare TypeError; True or 2.5 ran and was recorded as the tolerance (--within is an int)
        raise DDPUsageError(f"--within {within!r}: the tolerance must be a whole number of sentences, 0 or more "
                            "(within= in Python)", code="D435")
    df_a, sig_a, name_a = _load(a, "A", document, segment)
    df_b, sig_b, name_b = _load(b, "B", document, segment)

    def col(df: pl.DataFrame, name: str, sig: dict[str, Any], key: str, given: str | None, default: str) -> str:
        rec = (sig.get("columns") or {}).get(key)
        if given and given not in df.columns and isinstance(rec, str) and rec in df.columns:
            # the option names the other run's column: this run's signature names its own (runs profiled with
            # different column names are compared, as they are when no option is given)
            import warnings

            warnings.warn(f"{name}: no column '{given}' (--{key}-col); its {key} column '{rec}', as its signature "
                          "records, is used", UserWarning, stacklevel=3)
            return rec
        other, oname = (df_b, name_b) if df is df_a else (df_a, name_a)
        if key != "domain" and given and given not in df.columns and given in other.columns:
            raise DDPDataError(f"{name}: no column '{given}' (--{key}-col names the {key} column of both runs; it is "
                               f"one of {oname}); {name}'s columns: {', '.join(df.columns[:25])}; rename the column "
                               "of one run, or compare `ddp profile` outputs, whose signatures name their own columns",
                               code="D933")
        return given or rec or default

    col_b = ddp_col if ddp_col_b is None else ddp_col_b
    pa = _prepare(df_a, name_a, col(df_a, name_a, sig_a, "document", document, schema.DOCUMENT_ID), col(df_a, name_a, sig_a, "segment", segment, schema.SEGMENT_ID),
                  col(df_a, name_a, sig_a, "domain", domain, schema.DOMAIN), ddp_col, "--ddp-col")
    pb = _prepare(df_b, name_b, col(df_b, name_b, sig_b, "document", document, schema.DOCUMENT_ID), col(df_b, name_b, sig_b, "segment", segment, schema.SEGMENT_ID),
                  col(df_b, name_b, sig_b, "domain", domain, schema.DOMAIN), col_b, "--b-ddp-col" if ddp_col_b is not None else "--ddp-col")
    _check_same_segments(pa, pb, name_a, name_b)
    both = pa.join(pb, on=[schema.DOCUMENT_ID, schema.SEGMENT_ID], how="inner", suffix="_b", maintain_order="left").with_columns(
        pl.coalesce(schema.DOMAIN, schema.DOMAIN + "_b").alias(schema.DOMAIN)
    )
    # the segments without a domain get a row of their own, never named as a domain is (a domain named 'all'
    # took them in, in silence): 'all' when no segment has a domain, else '(none)' (distinct from every domain)
    named = both[schema.DOMAIN].drop_nulls().unique().to_list()
    no_domain = distinct_label(NO_DOMAIN if named else ALL_DOMAINS, named) \
        if both[schema.DOMAIN].null_count() else None
    if no_domain is not None:
        both = both.with_columns(pl.col(schema.DOMAIN).fill_null(no_domain))
    x = both[schema.DDP].to_numpy()
    y = both[schema.DDP + "_b"].to_numpy()
    n = int(x.size)
    if n == 0:
        raise DDPDataError(f"{name_a} and {name_b} hold no segments", code="D436")
    diff = np.abs(y - x)

    per = (
        both.group_by(schema.DOMAIN)
        .agg(
            pl.len().alias("n_segments"),
            pl.col(schema.DDP).mean().alias("mean_a"),
            pl.col(schema.DDP + "_b").mean().alias("mean_b"),
            (pl.col(schema.DDP) == 0).mean().alias("zero_share_a"),
            (pl.col(schema.DDP + "_b") == 0).mean().alias("zero_share_b"),
        )
        .with_columns((pl.col("mean_b") - pl.col("mean_a")).alias("shift"))
        .sort(schema.DOMAIN)
    )
    domains = tuple(
        DomainShift(r[schema.DOMAIN], int(r["n_segments"]), float(r["mean_a"]), float(r["mean_b"]), float(r["shift"]),
                    float(r["zero_share_a"]), float(r["zero_share_b"]))
        for r in per.iter_rows(named=True)
    )
    order_a = tuple(d.domain for d in sorted(domains, key=lambda d: (-d.mean_a, d.domain)))
    order_b = tuple(d.domain for d in sorted(domains, key=lambda d: (-d.mean_b, d.domain)))
    zero_a = tuple(d.domain for d in sorted(domains, key=lambda d: (d.zero_share_a, d.domain)))
    zero_b = tuple(d.domain for d in sorted(domains, key=lambda d: (d.zero_share_b, d.domain)))
    return AgreementResult(
        n_segments=n,
        pearson=correlation(x, y, "pearson"),
        spearman=correlation(x, y, "spearman"),
        share_identical=float(np.mean(diff == 0)),
        share_within=float(np.mean(diff <= within)),
        within=within,
        domains=domains,
        ordering_a=order_a,
        ordering_b=order_b,
        ordering_preserved=order_a == order_b,
        zero_ordering_a=zero_a,
        zero_ordering_b=zero_b,
        zero_ordering_preserved=zero_a == zero_b,
        signature_a=sig_a,
        signature_b=sig_b,
        ddp_col_a=ddp_col,
        ddp_col_b=col_b,
        no_domain=no_domain,
    )


def _describe(sig: dict[str, Any]) -> str:
    if not sig:
        return "(no signature)"
    keys = ("pipeline", "pipeline_name", "pipeline_version", "rules", "distance")
    parts = [f"{k}={sig[k]}" for k in keys if k in sig and not isinstance(sig[k], dict)]
    return ", ".join(parts) if parts else json.dumps(sig, sort_keys=True)[:120]


def format_agreement_text(result: AgreementResult) -> str:
    """A readable A.3-style table."""

    from ..io.tables import text_cell as t, text_pad, text_width

    def f(x: float | None) -> str:
        return "—" if x is None else f"{x:.3f}"

    names = [t(d.domain) for d in result.domains]  # a domain on one line, the columns after the longest
    w = max([14, *map(text_width, names)]) + 2
    lines = [
        f"DDP agreement over {result.n_segments} segments",
        f"  A: {t(_describe(result.signature_a))}; column {t(result.ddp_col_a)}",
        f"  B: {t(_describe(result.signature_b))}; column {t(result.ddp_col_b)}",
        "",
        f"  Pearson r            {f(result.pearson)}",
        f"  Spearman rho         {f(result.spearman)}",
        f"  identical            {result.share_identical:.1%}",
        f"  within +/-{result.within:<3}        {result.share_within:.1%}",
        "",
        f"{text_pad('domain', w)}{'n':>6}{'mean A':>9}{'mean B':>9}{'B - A':>8}{'zero A':>8}{'zero B':>8}",
    ]
    for name, d in zip(names, result.domains):
        lines.append(
            f"{text_pad(name, w)}{d.n_segments:>6}{d.mean_a:>9.2f}{d.mean_b:>9.2f}{d.shift:>+8.2f}"
            f"{d.zero_share_a:>8.1%}{d.zero_share_b:>8.1%}"
        )
    if result.no_domain is not None and len(result.domains) > 1:
        lines.append(f"(segments without a domain: the row '{t(result.no_domain)}')")
    lines += [
        "",
        f"domain ordering by mean DDP: A {' > '.join(map(t, result.ordering_a))}; "
        f"B {' > '.join(map(t, result.ordering_b))} -> {'preserved' if result.ordering_preserved else 'NOT preserved'}",
        f"ordering by zero-DDP share (ascending): A {' < '.join(map(t, result.zero_ordering_a))}; "
        f"B {' < '.join(map(t, result.zero_ordering_b))} -> "
        f"{'preserved' if result.zero_ordering_preserved else 'NOT preserved'}",
    ]
    return "\n".join(lines)
