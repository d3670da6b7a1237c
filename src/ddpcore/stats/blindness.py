"""The blindness battery of seed 001 on any score table, with a power analysis and a verdict.

Does an evaluation (a metric or a human protocol) notice that MIX documents are incoherent?
:func:`blindness` compares condition ``a`` (DOC) with condition ``b`` (MIX) on a long score
table (``document_id, segment_id, system, condition, score``, names selectable):

1. **Paired TOST** of ``mean(a - b)`` (:func:`ddpcore.stats.tost.tost_paired`). Pairs:
   ``unit="segment"``: one pair per (document, segment, system), each side the mean of its
   rows (annotators, or MIX documents that used the same translation); ``unit="document"``:
   one pair per (document, system), each side the mean of its rows. Margin ``(-eps, eps)``
   in score units (``margin``) or in SDs of the paired differences (``margin_sd``).
2. **Ranking agreement**: Kendall tau-b between the system means of ``a`` and ``b`` with a
   document-bootstrap percentile CI and the share of replicates below ``tau_min``
   (:func:`ddpcore.stats.bootstrap.bootstrap_tau`, ``n_boot`` replicates, PCG64 ``seed``).
3. **Clusters** of systems in both conditions (:func:`ddpcore.stats.clustering.cluster_systems`,
   ``method``, ``n_boot_cluster`` resamples, pairwise tests at level ``alpha``: the battery's one
   significance level, as ``ddp stats cluster --alpha``; recorded as ``cluster_alpha`` in the signature
   and ``evidence.clusters.alpha``) and whether they agree (``compare_clusters``); the clusterings'
   warnings (e.g. too few resamples for ``alpha``) are the battery's (``strict=True``: D930).
4. **Boundary-localised error-span rate** ``a - b`` with a segment-bootstrap CI when the
   table has a spans column (list of ``{span_start, span_end}``) and a target-text column.
5. **Score recoverability** R^2 (SEG -> a and SEG -> b, unit (document, system)) when the
   table has a ``seg`` condition.
6. **Power** of the paired TOST at this ``n``, margin and observed SD
   (:mod:`ddpcore.stats.power`): ``power`` = P(equivalence | true difference 0),
   ``mdd_80`` = smallest true difference a two-sided paired t-test (level ``alpha``) detects
   with 80 % power, ``n_needed`` = pairs for 80 % TOST power.

Verdict (issue 10):

* ``sensitive``: the ``1 - 2 alpha`` CI of the mean difference lies wholly beyond the margin
  (``ci_low > eps`` or ``ci_high < -eps``), or the rankings differ (the tau CI lies wholly
  below ``tau_min``: ``tau_ci_high < tau_min``);
* ``blind``: TOST concludes equivalence and the rankings do not differ in that sense;
* ``inconclusive``: anything else, with ``power`` and ``n_needed``.

Cluster agreement, span rates and R^2 are reported as evidence but do not enter the verdict.

**System attribution of MIX rows.** A MIX score row has a nominal system and the system that
produced its segment (``source_system``, written by ``ddp mix``). ``attribute="source"``
scores each MIX row for the system that produced it, so DOC and MIX pairs hold the *same
translation* in a coherent vs an incoherent document (the paired design of seed 001);
``"nominal"`` keeps the system column; ``"auto"`` (default) is ``source`` when the table has
the column, and otherwise falls back to ``nominal`` with a warning (``strict=True``: D700). The
result says which was used and why (``attribute_used``, ``attribute_reason``). Either way every
MIX system must be one of the DOC systems (D512).

**Nothing changes in silence** (issue 19): every fallback, dropped row or undefined ranking is a
warning (``warn=``, ``result.warnings``) and, with ``strict=True``, a coded error (D700-D703, D930);
see docs/mix-blindness.md.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..signature import AsDict
from .. import schema
from ..errors import DDPDataError, DDPUsageError
from ._table import load_ratings, signature, table_source
from .columns import TableColumns, check_columns
from .options import ResampleOptions, check_instance, check_options

if TYPE_CHECKING:
    import polars as pl

Verdict = Literal["blind", "sensitive", "inconclusive"]
VERDICTS = ("blind", "sensitive", "inconclusive")
#: optional inputs that ``required=`` (the CLI: a flag given explicitly) turns into errors when absent
_OPTIONAL_INPUTS = ("source_system", "spans", "text", "seg")


@dataclasses.dataclass(frozen=True)
class BlindnessResult(AsDict):
    """Verdict, power and the evidence behind them (see the module docstring)."""

    verdict: str
    reasons: list[str]
    condition_a: str
    condition_b: str
    power: float
    n_needed: int | None
    evidence: dict[str, Any]
    signature: dict[str, Any]
    attribute_used: str = "nominal"  # which system a MIX row was scored for: "source" or "nominal"
    attribute_reason: str = ""  # why (the --attribute asked for, the column found or the fallback)
    warnings: list[str] = dataclasses.field(default_factory=list)  # every warning of the run, in order


def _check_design(alpha: float, tau_min: float, confidence: float, unit: str, attribute: str) -> None:
    if not 0.0 < float(alpha) < 0.5:
        raise DDPUsageError(f"alpha must be in (0, 0.5), got {alpha} (--alpha)", code="D510")
    if not (math.isfinite(tau_min) and -1.0 <= tau_min <= 1.0):
        raise DDPUsageError(f"tau_min must be in [-1, 1], got {tau_min} (--tau-min)", code="D510")
    if not 0.0 < float(confidence) < 1.0:
        raise DDPUsageError(f"confidence must be in (0, 1), got {confidence} (--confidence)", code="D510")
    if unit not in ("segment", "document"):
        raise DDPUsageError(f"unit must be 'segment' or 'document', got {unit!r} (--unit)", code="D510")
    if attribute not in ("auto", "source", "nominal"):
        raise DDPUsageError(f"attribute must be auto, source or nominal, got {attribute!r} (--attribute)",
                            code="D510")


def _pairs(df: pl.DataFrame, a: str, b: str, unit: str) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Per unit key: the mean score under a and under b, for keys scored under both (shapes (n,));
    and the numbers of keys scored under a only and b only. One native factorize + bincount."""
    import polars as pl

    from ._table import factorize, group_sums

    keys = [schema.DOCUMENT_ID, schema.SEGMENT_ID, schema.SYSTEM] if unit == "segment" else \
        [schema.DOCUMENT_ID, schema.SYSTEM]
    two = df.filter(pl.col(schema.CONDITION).is_in([a, b]))
    codes, key_table = factorize(two, keys)
    k = key_table.height
    cell = np.asarray(codes, dtype=np.int64) * 2 + (two[schema.CONDITION] == b).to_numpy().astype(np.int64)
    score = two[schema.SCORE].to_numpy()
    sums = group_sums(cell, score, 2 * k).reshape(k, 2)  # row-order independent
    counts = np.bincount(cell, minlength=2 * k).reshape(k, 2)
    both = (counts > 0).all(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums[both] / counts[both]
    return means[:, 0], means[:, 1], int(((counts[:, 0] > 0) & ~both).sum()), int(((counts[:, 1] > 0) & ~both).sum())


#: the data row (1-based, as in the input) of each score row, carried while the span tables are built
_ROW = "__ddp_data_row"
_SPAN_FIELDS = ("span_start", "span_end")


def _span_dtype() -> Any:
    import polars as pl

    return pl.List(pl.Struct({"span_start": pl.Float64, "span_end": pl.Float64}))


def _first_row(df: pl.DataFrame, mask: Any) -> int:
    """The data row (1-based) of the first row of ``df`` where ``mask`` holds."""
    import polars as pl

    return int(df.filter(mask).select(pl.col(_ROW).first()).item())


def _bad_spans(where: str, found: str, what: str = "", fix: str = "") -> DDPDataError:
    """D316: the spans column (or one row of it) is not error spans; ``found`` says what it holds."""
    return DDPDataError(
        f"{where}: {what or 'not error spans'}: expected a list of {{span_start, span_end}} objects per row (e.g. "
        f'[{{"span_start": 0, "span_end": 4}}]; [] or null = no span), as a list column or as that JSON text; '
        f"found {found}; {fix or 'fix the column or choose another with --spans-col'}", code="D316")


def _parse_json_spans(value: str) -> list[dict[str, float | None]] | None | str:
    """One JSON text of a spans column: the spans, None (JSON null), or why it is not spans (str)."""
    import json

    if not value.strip():  # a blank cell, as an empty CSV field: no span
        return None
    try:
        obj = json.loads(value)
    except ValueError as exc:
        return f"text that is not JSON ({exc.args[0] if exc.args else exc}): {value[:60]!r}"
    if obj is None:
        return None
    if not isinstance(obj, list):
        return f"JSON {type(obj).__name__} {value[:60]!r}, not a list"
    out: list[dict[str, float | None]] = []
    for k, item in enumerate(obj, 1):
        if item is None:  # a span without a position, as a null struct of a list column
            out.append({f: None for f in _SPAN_FIELDS})
            continue
        if not isinstance(item, dict) or not all(f in item for f in _SPAN_FIELDS):
            shown = ", ".join(map(str, item)) if isinstance(item, dict) else type(item).__name__
            return (f"span {k} of {value[:60]!r} is a JSON {type(item).__name__}"
                    + (f" with keys {shown}" if isinstance(item, dict) else ""))
        span: dict[str, float | None] = {}
        for f in _SPAN_FIELDS:
            v = item[f]
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                return f"span {k} of {value[:60]!r}: {f} is {v!r}, not a number"
            span[f] = None if v is None else float(v)
        out.append(span)
    return out


def _span_column(df: pl.DataFrame, source: str, col: str) -> pl.DataFrame:
    """``df`` with the spans column ``col`` as a list of {span_start, span_end} (Float64 offsets): a list
    (or array) of structs with those two numeric fields is taken as it is, JSON text (a CSV/TSV column)
    is parsed; anything else is D316 naming the file, the column (and the row of a text that does not
    parse as such a list)."""
    import polars as pl

    where = f"{source}, column '{col}' (--spans-col)"
    dtype = df.schema[col]
    if isinstance(dtype, pl.Array):
        dtype = pl.List(dtype.inner)
        df = df.with_columns(pl.col(col).cast(dtype))
    if dtype == pl.String or isinstance(dtype, pl.Categorical):
        texts = df.select(pl.col(col).cast(pl.String)).to_series().drop_nulls().unique(maintain_order=True)
        parsed: list[Any] = []
        for value in texts.to_list():  # one parse per distinct text
            got = _parse_json_spans(value)
            if isinstance(got, str):
                row = _first_row(df, pl.col(col).cast(pl.String) == value)
                raise _bad_spans(f"{source}, row {row}, column '{col}' (--spans-col)", got)
            parsed.append(got)
        lookup = pl.DataFrame({"__text": texts, "__spans": pl.Series(parsed, dtype=_span_dtype())})
        return df.join(lookup, left_on=pl.col(col).cast(pl.String), right_on="__text", how="left",
                       maintain_order="left").drop(col, "__text", strict=False).rename({"__spans": col})
    if not isinstance(dtype, pl.List):
        what = f"a column of type {dtype}"
        raise _bad_spans(where, what)
    inner = dtype.inner
    if not isinstance(inner, pl.Struct):
        raise _bad_spans(where, f"a list of {inner} values per row (column type {dtype})")
    fields = {f.name: f.dtype for f in inner.fields}
    missing = [f for f in _SPAN_FIELDS if f not in fields]
    if missing:
        raise _bad_spans(where, f"objects with the fields {', '.join(fields) or 'none'}",
                         f"the spans have no {' and no '.join(missing)}")
    for f in _SPAN_FIELDS:
        if not (fields[f].is_numeric() or fields[f] == pl.Null):
            raise _bad_spans(where, f"{f} of type {fields[f]}", f"{f} must be a number (a code-point offset)")
    spans = pl.col(col).list.eval(pl.struct(*(pl.element().struct.field(f).cast(pl.Float64) for f in _SPAN_FIELDS)))
    return df.with_columns(spans.cast(_span_dtype()).alias(col))


def _num(x: Any) -> str:
    return "null" if x is None else f"{x:g}"


def _spans(df: pl.DataFrame, source: str, cond: str, spans_col: str, text_col: str) -> tuple[pl.DataFrame, int]:
    """The span table of condition ``cond`` (document, segment, segment_length, span_start, span_end; one row
    per span) and the number of spans without offsets left out (omission markers: span_start and span_end
    both null, or a null span). Every other span must have valid offsets into its segment's text, else D316
    names the file, the data row and the column."""
    import polars as pl

    n = pl.col(spans_col).list.len()
    part = (df.filter((pl.col(schema.CONDITION) == cond) & (n > 0))
            .select(_ROW, schema.DOCUMENT_ID, schema.SEGMENT_ID,
                    pl.col(text_col).str.len_chars().alias("segment_length"), pl.col(spans_col),
                    pl.int_ranges(1, n + 1).alias("__k"))
            .explode(spans_col, "__k"))
    span = pl.col(spans_col)
    start, end = span.struct.field("span_start"), span.struct.field("span_end")
    part = part.with_columns(start.alias("span_start"), end.alias("span_end"))
    no_position = pl.col("span_start").is_null() & pl.col("span_end").is_null()  # also a null span
    omitted = part.filter(no_position)
    part = part.filter(~no_position)
    s, e, length = pl.col("span_start"), pl.col("span_end"), pl.col("segment_length").cast(pl.Float64)
    checks = (
        (s.is_null(), "span_start is missing (null) while span_end is not"),
        (e.is_null(), "span_end is missing (null) while span_start is not"),
        (length.is_null(), f"the segment's text (column '{text_col}', --text-col) is missing"),
        (~(s.is_finite() & e.is_finite()), "an offset is not a finite number"),
        (length <= 0, f"the segment's text (column '{text_col}', --text-col) is empty"),
        (s < 0, "the span starts before the segment"),
        (e < s, "the span ends before it starts"),
        (e > length, f"the span ends after the segment (column '{text_col}', --text-col)"),
    )
    for bad, what in checks:
        hit = part.filter(bad.fill_null(False))
        if hit.height:
            r = hit.row(0, named=True)
            raise DDPDataError(
                f"{source}, row {r[_ROW]}, column '{spans_col}' (--spans-col), span {r['__k']}: {what} "
                f"(span_start={_num(r['span_start'])}, span_end={_num(r['span_end'])}, segment length "
                f"{_num(r['segment_length'])}); "
                "offsets are code points into the segment's text, 0 <= span_start <= span_end <= length "
                "(an omission marker has both offsets null)", code="D316")
    return part.select(schema.DOCUMENT_ID, schema.SEGMENT_ID, "segment_length", "span_start", "span_end"), \
        omitted.height


@dataclasses.dataclass(frozen=True)
class BlindnessDesign:
    """How the battery tests (the CLI's test flags); checked when made (D510, D311).

    Fields: ``unit`` (TOST pairing unit, ``"segment"`` or ``"document"``), ``method``
    (clustering method: bootstrap | wmt25 | wmt24 | permutation; checked by
    :func:`~ddpcore.stats.cluster_systems`, D351), ``n_boot_cluster`` (cluster bootstrap /
    permutation replicates, ``--n-boot-cluster``), ``alpha`` (the battery's significance level: of each
    one-sided TOST test, CI 1 - 2 alpha, of the power analysis and of the pairwise tests of the system
    clusters, as ``ddp stats cluster --alpha``), ``tau_min`` and ``confidence`` (ranking threshold
    and tau CI level), ``attribute`` (MIX rows scored for their ``source_system``
    (``"source"``), their system column (``"nominal"``) or ``"auto"``: source when the column
    exists, the fallback to nominal is a warning), ``exclude_systems`` (left out of the whole
    battery, e.g. the reference; each must occur in the table, D704), ``strict`` (every warning
    -- a fallback, dropped rows, an undefined ranking -- becomes a :class:`DDPDataError`,
    D700-D703).
    """

    unit: Literal["segment", "document"] = "segment"
    method: str = "bootstrap"
    n_boot_cluster: int = 1000
    alpha: float = 0.05
    tau_min: float = 0.667
    confidence: float = 0.95
    attribute: Literal["auto", "source", "nominal"] = "auto"
    exclude_systems: Sequence[str] = ()
    strict: bool = False

    def __post_init__(self) -> None:
        from . import budget as _budget

        _check_design(self.alpha, self.tau_min, self.confidence, self.unit, self.attribute)
        _budget.check_n_boot(self.n_boot_cluster, "--n-boot-cluster")
        if isinstance(self.exclude_systems, str):  # one system's name, not its characters
            object.__setattr__(self, "exclude_systems", (self.exclude_systems,))


@dataclasses.dataclass(frozen=True)
class BlindnessInputs:
    """The optional evidence of the battery and which of it was asked for explicitly.

    ``source_system`` (MIX rows: the system that produced the segment, written by ``ddp mix``),
    ``spans`` and ``text`` (error spans, a list of {span_start, span_end}, and the target text,
    for the boundary span rate; skipped when absent, ``None`` = never), ``seg`` (a condition
    scored on isolated segments: recoverability R^2 when present). ``required``: any of
    "source_system", "spans", "text", "seg" the caller asked for explicitly (the CLI: a flag
    given): a missing column is then D301 (naming the columns that exist), a missing ``seg``
    condition D705, instead of being skipped.
    """

    source_system: str = "source_system"
    spans: str | None = "error_spans"
    text: str | None = "target_text"
    seg: str | None = "SEG"
    required: Sequence[str] = ()

    def __post_init__(self) -> None:
        unknown_req = [r for r in self.required if r not in _OPTIONAL_INPUTS]
        if unknown_req:
            raise DDPUsageError(f"required= takes {', '.join(_OPTIONAL_INPUTS)}; got {unknown_req}", code="D510")


#: the resampling options of :func:`blindness` when none are given (threads=1, see its docstring)
BLINDNESS_OPTIONS = ResampleOptions(n_boot=10_000, threads=1)


def blindness(
    table: Any,
    a: str = "DOC",
    b: str = "MIX",
    *,
    margin: float | None = None,
    margin_sd: float | None = None,
    design: BlindnessDesign | None = None,
    inputs: BlindnessInputs | None = None,
    columns: TableColumns | None = None,
    options: ResampleOptions | None = None,
    warn: Callable[[str], None] | None = None,
) -> BlindnessResult:
    """Run the battery on a long score table and return the verdict (module docstring).

    Parameters
    ----------
    table : path or frame, one row per score (segment x system x condition [x annotator])
    a, b : the two conditions (values of the condition column), DOC and MIX
    margin, margin_sd : equivalence margin in score units, or in SDs of the paired differences
        (exactly one)
    design : :class:`BlindnessDesign` (unit, clustering method and its replicates, alpha,
        tau_min, confidence, attribute, exclude_systems, strict); default ``BlindnessDesign()``
    inputs : :class:`BlindnessInputs` (source-system, spans and text columns, the SEG condition,
        which of them are required); default ``BlindnessInputs()``
    columns : :class:`~ddpcore.stats.TableColumns`, the document, segment, system, condition and
        score columns
    options : :class:`~ddpcore.stats.ResampleOptions`: ``n_boot`` (tau bootstrap replicates,
        documents resampled with replacement; default 10,000; the span rate uses the same),
        ``seed`` (of every resampling generator), ``nan_policy`` and ``threads`` (OpenMP threads
        of the tau and span resampling kernels; results are identical for any value. Default 1:
        on a busy 2-core machine two threads were 3-9x slower (spin-waiting at the block
        barriers) and used 3-4x the CPU time; ``None`` or 0 = the OpenMP default), and the
        budget of the whole battery (:mod:`ddpcore.stats.budget`; bytes or "8G", seconds; 0 = no
        limit). Each resampling part (tau, the two clusterings, the span rate) may use the time
        left divided by the parts left; over it, D363 names the flag (``--n-boot`` /
        ``--n-boot-cluster``) and the count that fits; memory over the limit: D362. Default
        :data:`BLINDNESS_OPTIONS`.
    warn : called with each warning (the CLI prints ``warning: ...``); default
        :func:`warnings.warn` (``UserWarning``). Warnings are also in ``result.warnings``.
    """
    import time

    from . import budget as _budget

    _check_margin(margin, margin_sd)
    design = check_instance(design, BlindnessDesign, func="blindness", name="design", code="D510")
    inputs = check_instance(inputs, BlindnessInputs, func="blindness", name="inputs", code="D510")
    opts = check_options(options, func="blindness", default=BLINDNESS_OPTIONS)
    n_boot = _budget.check_n_boot(opts.n_boot_or(10_000), "--n-boot")
    opts = opts.replace(n_boot=n_boot, seed=_budget.check_seed(opts.seed), threads=opts.threads or None)
    budget = _budget.resolve(opts.max_memory, opts.max_seconds, what="blindness")
    t_start = time.perf_counter()
    a, b = str(a), str(b)
    if a == b:
        raise DDPUsageError(f"the two conditions must differ (both are {a!r}; --a/--b)", code="D510")
    notes = _Notes(design.strict, warn)
    cols = check_columns(columns, func="blindness")
    source = table_source(table)
    df, found, n_omitted, data_rows = _load_scores(table, cols, opts.nan_policy, a, b, notes, source)
    _check_required(df, source, found, inputs, design.attribute, a, b)
    df, attr = _attribute_rows(df, design.attribute, inputs.source_system, b, notes)
    df = df.with_columns(_data_rows(df.height, data_rows))  # for the span messages; dropped below
    df, pool = _exclude_and_pool(df, source, design.exclude_systems, attr, inputs.source_system, a, b, cols.system)
    tost, eps, sd, unpaired = _paired_tost(df, a, b, design, margin, margin_sd, attr.use_source, notes, source,
                                           cols.score)
    pw = _power(tost, sd, eps, design.alpha)
    n_sys = len(pool)
    skipped: dict[str, str] = {}
    sa, sb, spans_omitted = _span_tables(df, source, a, b, inputs, skipped, notes)
    df = df.drop(_ROW)
    two = df.filter(_cond().is_in([a, b]))
    n_docs = int(two[schema.DOCUMENT_ID].n_unique())
    ranked = n_sys >= 2 and n_docs >= 2
    parts = (["tau"] + (["clusters " + a, "clusters " + b] if design.method in ("bootstrap", "permutation") else [])
             if ranked else []) + (["span rate"] if sa is not None else [])
    run = _Resampler(parts, budget, t_start, {"--n-boot": n_boot, "--n-boot-cluster": design.n_boot_cluster})
    ranking = _ranking(run, two, a, b, n_sys, n_docs, design, opts, skipped, notes)
    clusters = _clusters(run, two, a, b, design, opts, notes) if ranked else None
    span_ev = None
    if sa is not None and sb is not None:
        from .spans import boundary_rate_difference

        span_ev = run("span rate", "--n-boot", boundary_rate_difference, sa, sb, confidence=design.confidence,
                      options=opts).to_dict()
        span_ev["n_spans_without_offsets_a"], span_ev["n_spans_without_offsets_b"] = spans_omitted[a], spans_omitted[b]
    rec = _recoverability(df, found, inputs.seg, a, b, skipped)
    verdict, reasons = _verdict(tost, eps, sd, pw, ranking, n_sys, design, a, b)
    evidence = {
        "tost": dict(tost.to_dict(), unit=design.unit, margin=eps, margin_sd=margin_sd, sd_diff=sd,
                     unpaired_a=unpaired[0], unpaired_b=unpaired[1],
                     ci_beyond_margin=bool(tost.ci_low > eps or tost.ci_high < -eps)),
        "power": pw.to_dict(), "ranking": ranking.evidence, "clusters": clusters, "boundary_spans": span_ev,
        "recoverability": rec, "skipped": skipped, "n_systems": n_sys,
        "n_documents": int(two[schema.DOCUMENT_ID].n_unique()), "n_omitted": n_omitted,
        "attribute": attr.used, "attribute_nominal_rows": attr.nominal_rows,
    }
    sig = _signature(a, b, margin, margin_sd, eps, design, opts, attr.used, n_omitted, len(notes.messages),
                     sum(spans_omitted.values()))
    return BlindnessResult(verdict, reasons, a, b, pw.power, pw.n_needed, evidence, sig,
                           attribute_used=attr.used, attribute_reason=attr.reason, warnings=notes.messages)


def _signature(a: str, b: str, margin: float | None, margin_sd: float | None, eps: float, design: BlindnessDesign,
               opts: ResampleOptions, attribute_used: str, n_omitted: int, n_warnings: int,
               n_spans_without_offsets: int = 0) -> dict[str, Any]:
    """The battery's signature (every setting that can change its answer; ``n_spans_without_offsets``: error
    spans left out of the span rate because they have no position)."""
    return signature("blindness", condition_a=a, condition_b=b, margin=margin, margin_sd=margin_sd, margin_abs=eps,
                     unit=design.unit, cluster_method=design.method, n_boot=int(opts.n_boot),  # type: ignore[arg-type]
                     n_boot_cluster=int(design.n_boot_cluster), seed=int(opts.seed),
                     alpha=float(design.alpha), cluster_alpha=float(design.alpha),
                     tau_min=float(design.tau_min), confidence=float(design.confidence),
                     attribute=attribute_used, attribute_requested=design.attribute,
                     exclude_systems=[str(s) for s in design.exclude_systems], nan_policy=opts.nan_policy,
                     n_omitted=n_omitted, n_spans_without_offsets=int(n_spans_without_offsets),
                     strict=bool(design.strict), n_warnings=n_warnings,
                     tau_unit="document", power="exact paired TOST power at true difference 0; mdd two-sided t")


def _check_margin(margin: float | None, margin_sd: float | None) -> None:
    if (margin is None) == (margin_sd is None):
        raise DDPUsageError("give exactly one of margin (--margin, score units) and margin_sd (--margin-sd)",
                            code="D510")
    value, flag = (margin, "--margin") if margin is not None else (margin_sd, "--margin-sd")
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise DDPUsageError(f"{flag} must be a finite number > 0, got {value}", code="D510")


def _cond() -> Any:
    import polars as pl

    return pl.col(schema.CONDITION)


class _Notes:
    """The warnings of one run, in order: each is passed to ``warn`` (default :func:`warnings.warn`),
    or with ``strict`` raised as the coded data error."""

    def __init__(self, strict: bool, warn: Callable[[str], None] | None) -> None:
        self.strict, self.warn = strict, warn
        self.messages: list[str] = []
        #: warnings of the resampling parts already said (a similar-names warning of the tau bootstrap is not
        #: repeated by the clusterings)
        self.resampling: set[str] = set()

    def __call__(self, message: str, code: str, fix: str, hint: str = "") -> None:
        """A warning (``message; hint``), or with ``strict`` the coded data error (``message; fix``)."""
        if self.strict:
            raise DDPDataError(f"{message}; --strict makes this an error: {fix}", code=code)
        message = f"{message}; {hint}" if hint else message
        self.messages.append(message)
        if self.warn is None:
            import warnings

            warnings.warn(message, UserWarning, stacklevel=4)
        else:
            self.warn(message)


def _load_scores(table: Any, cols: TableColumns, nan_policy: str, a: str, b: str,
                 note: _Notes, source: str = "<table>") -> tuple[pl.DataFrame, list[str], int, np.ndarray | None]:
    """The long table with string condition/system columns, the conditions found (sorted), the
    number of rows dropped by ``nan_policy="omit"`` and, when rows were dropped, the data row (1-based)
    of each row kept (None: row ``i`` is data row ``i + 1``); D511 when ``a`` or ``b`` is absent (naming
    ``source``, the table, and its condition column)."""
    import polars as pl

    raw: pl.DataFrame | None = None
    if nan_policy == "omit":
        from ._frames import as_frame

        raw = as_frame(table)
    # the annotator column (when present) only checks that no rating is repeated (D307), then is dropped
    df = load_ratings(table, cols, ("document", "segment", "system", "condition", "score"), nan_policy)  # type: ignore[arg-type]
    n_omitted = 0 if raw is None else raw.height - df.height
    data_rows = None
    if raw is not None and n_omitted:  # the rows load_ratings kept: those with a score (not null, not NaN)
        score = raw[cols.score or schema.SCORE].cast(pl.Float64, strict=False)
        kept = np.flatnonzero(~(score.is_null() | score.is_nan()).to_numpy()) + 1
        data_rows = kept if kept.size == df.height else None
    if n_omitted:
        note(f"{n_omitted:,} row(s) with a missing (null/NaN) score dropped (--nan-policy omit); the battery uses "
             f"the other {df.height:,} rows", "D703", "fill or remove those scores, or drop --strict")
    df = df.with_columns(pl.col(schema.CONDITION).cast(pl.String), pl.col(schema.SYSTEM).cast(pl.String))
    found = sorted(df[schema.CONDITION].unique().to_list())
    missing = [c for c in (a, b) if c not in found]
    if missing:
        raise DDPDataError(
            f"{source}, column '{cols.condition}': the score table needs both conditions {a!r} and {b!r}; no row "
            f"has {', '.join(map(repr, missing))}; condition values found: {', '.join(map(repr, found)) or 'none'}; "
            "name the conditions with --a/--b, or the condition column with --condition-col",
            code="D511")
    return df, found, n_omitted, data_rows


def _data_rows(height: int, data_rows: np.ndarray | None) -> Any:
    """The ``_ROW`` column: the input's data row (1-based) of each loaded row."""
    import polars as pl

    rows = np.arange(1, height + 1, dtype=np.int64) if data_rows is None else data_rows.astype(np.int64)
    return pl.Series(_ROW, rows)


def _check_required(df: pl.DataFrame, source: str, found: list[str], inputs: BlindnessInputs, attribute: str,
                    a: str, b: str) -> None:
    """Explicitly requested optional inputs must exist (D301 for a column, D705 for the SEG condition)."""

    def need_column(col: str | None, what: str, flag: str) -> None:
        if col is None or col not in df.columns:
            raise DDPDataError(
                f"{source}: the {what} column '{col}' ({flag}) is missing; available columns: "
                f"{', '.join(df.columns)}", code="D301")

    required, seg = inputs.required, inputs.seg
    if "source_system" in required or attribute == "source":
        need_column(inputs.source_system, "source-system", "--source-system-col")
    if "spans" in required or "text" in required:
        need_column(inputs.spans, "error-spans", "--spans-col")
        need_column(inputs.text, "target-text", "--text-col")
    if "seg" in required:
        if seg is None or str(seg) in (a, b):
            raise DDPUsageError(f"--seg {seg!r} must be a condition other than --a {a!r} and --b {b!r}",
                                code="D510")
        if str(seg) not in found:
            raise DDPDataError(
                f"{source}: no row has condition {str(seg)!r} (--seg); condition values found: "
                f"{', '.join(map(repr, found))}; leave --seg out to skip the recoverability R^2", code="D705")


@dataclasses.dataclass(frozen=True)
class _Attribution:
    use_source: bool
    reason: str
    nominal_rows: int

    @property
    def used(self) -> str:
        return "source" if self.use_source else "nominal"


def _attribute_rows(df: pl.DataFrame, attribute: str, source_system: str, b: str,
                    note: _Notes) -> tuple[pl.DataFrame, _Attribution]:
    """Which system a MIX row is scored for; the table with the ``b`` rows' system replaced by
    their source system when that is used."""
    import polars as pl

    nominal_rows = 0
    if attribute == "nominal":
        use_source = False
        reason = "--attribute nominal: every row is scored for its system column"
    elif source_system in df.columns:
        use_source = True
        reason = (f"--attribute {attribute}: {b} rows are scored for the system that produced their "
                  f"segment (column '{source_system}')")
        is_b = pl.col(schema.CONDITION) == b
        nominal_rows = int(df.select((is_b & pl.col(source_system).is_null()).sum()).item())
        if nominal_rows:
            n_b = int(df.select(is_b.sum()).item())
            reason += f"; {nominal_rows:,} {b} row(s) without one keep their system column"
            note(f"{nominal_rows:,} of {n_b:,} {b} rows have no '{source_system}' value; they are scored "
                 f"for their system column (nominal) while the others are scored for their source system",
                 "D700", f"fill '{source_system}' for every {b} row (ddp mix writes it), or give --attribute nominal")
    else:
        use_source = False
        reason = (f"--attribute auto fell back to nominal: the table has no '{source_system}' column "
                  f"(columns: {', '.join(df.columns)}), so {b} rows are scored for their system column "
                  "and a pair no longer holds the same translation")
        note(reason, "D700",
             f"add the '{source_system}' column (ddp mix writes it), name it with --source-system-col, or give "
             "--attribute nominal", hint="give --attribute nominal to choose this, or --source-system-col NAME")
    if use_source:
        df = df.with_columns(
            pl.when(pl.col(schema.CONDITION) == b).then(pl.col(source_system).cast(pl.String).fill_null(
                pl.col(schema.SYSTEM))).otherwise(pl.col(schema.SYSTEM)).alias(schema.SYSTEM))
    return df, _Attribution(use_source, reason, nominal_rows)


def _exclude_and_pool(df: pl.DataFrame, source: str, exclude_systems: Sequence[str], attr: _Attribution,
                      source_system: str, a: str, b: str, system_col: str = schema.SYSTEM
                      ) -> tuple[pl.DataFrame, set[str]]:
    """The table without the excluded systems (each must exist, D704) and the pool of ``a`` systems;
    every ``b`` system must be in the pool (D512, naming ``source``, the first such data row (``_ROW``) and the
    column its system came from: ``source_system`` when attributed so, else ``system_col``)."""
    import polars as pl

    use_source = attr.use_source
    if exclude_systems:
        excl = [str(s) for s in exclude_systems]
        present = set(df[schema.SYSTEM].unique().to_list())
        absent = [s for s in excl if s not in present]
        if absent:
            raise DDPDataError(
                f"{source}: --exclude-system {', '.join(map(repr, absent))}: no such system in the table"
                f"{' (after attributing ' + b + ' rows to ' + repr(source_system) + ')' if use_source else ''}; "
                f"systems: {', '.join(sorted(present))}", code="D704")
        df = df.filter(~pl.col(schema.SYSTEM).is_in(excl))
    cond = _cond()
    pool = set(df.filter(cond == a)[schema.SYSTEM].unique().to_list())
    stray = df.filter((cond == b) & ~pl.col(schema.SYSTEM).is_in(sorted(pool)))
    if stray.height:
        r = stray.row(0, named=True)
        col = source_system if use_source else system_col
        row = f", row {r[_ROW]}" if _ROW in stray.columns else ""
        raise DDPDataError(
            f"{source}{row}, column '{col}': {b} row of document '{r[schema.DOCUMENT_ID]}' (segment "
            f"{r[schema.SEGMENT_ID]!r}) has system '{r[schema.SYSTEM]}', which is not in the pool of {a} systems "
            f"({stray.height} such row(s)); "
            f"{'the system is the row' + chr(39) + 's ' + source_system if use_source else 'check --system-col'}",
            code="D512")
    return df, pool


def _paired_tost(df: pl.DataFrame, a: str, b: str, design: BlindnessDesign, margin: float | None,
                 margin_sd: float | None, use_source: bool, note: _Notes, source: str = "<table>",
                 score_col: str = schema.SCORE) -> tuple[Any, float, float, tuple[int, int]]:
    """1. The paired TOST: its result, the margin in score units, the SD of the paired differences
    and the numbers of unpaired ``a`` / ``b`` keys (D513, D514 name ``source``, the table)."""
    from .tost import tost_paired

    unit = design.unit
    xa, xb, unpaired_a, unpaired_b = _pairs(df, a, b, unit)
    if xa.size < 2:
        raise DDPDataError(
            f"{source}: {xa.size} {unit} pair(s) of {a} and {b} (rows sharing document"
            f"{', segment' if unit == 'segment' else ''} and system); the paired TOST needs at least 2: score more "
            f"translations under both {a} and {b}", code="D513")
    key = f"(document{', segment' if unit == 'segment' else ''}, system)"
    if unpaired_b:
        note(f"{unpaired_b:,} {b} {key} key(s) have no {a} row and are left out of the paired TOST "
             f"({xa.size:,} pairs used)", "D703", f"score those translations under {a} too, or drop --strict")
    if unpaired_a and not use_source:
        note(f"{unpaired_a:,} {a} {key} key(s) have no {b} row and are left out of the paired TOST "
             f"({xa.size:,} pairs used)", "D703", f"score those documents under {b} too, or drop --strict")
    d = xa - xb
    sd = float(d.std(ddof=1))
    if margin is not None:
        eps = float(margin)
    else:
        if not sd > 0:
            raise DDPDataError(f"{source}, column '{score_col}': --margin-sd: the paired differences of {a} and {b} "
                               f"have SD 0 (all {d[0]:g}); give --margin in score units", code="D514")
        eps = float(margin_sd) * sd  # type: ignore[arg-type]
    return tost_paired(xa, xb, -eps, eps, alpha=design.alpha), eps, sd, (unpaired_a, unpaired_b)


def _power(tost: Any, sd: float, eps: float, alpha: float) -> Any:
    """6. Power of the paired TOST (before the resampling: cheap)."""
    from .power import tost_power_analysis

    return tost_power_analysis(tost.n, sd, -eps, eps, alpha=alpha)


def _span_tables(df: pl.DataFrame, source: str, a: str, b: str, inputs: BlindnessInputs, skipped: dict[str, str],
                 note: _Notes) -> tuple[pl.DataFrame | None, pl.DataFrame | None, dict[str, int]]:
    """4. The span tables of ``a`` and ``b`` (cheap; resampled later), or ``None`` with the reason in ``skipped``;
    and the spans without offsets (omission markers) left out, per condition (a warning, D703 with strict).
    ``df`` carries the data row of each score row (``_ROW``) for the messages."""
    import polars as pl

    spans, text = inputs.spans, inputs.text
    none: dict[str, int] = {}
    if not (spans and text):
        skipped["boundary_spans"] = "spans=None or text=None"
        return None, None, none
    if spans not in df.columns or text not in df.columns:
        skipped["boundary_spans"] = f"no '{spans}' and '{text}' columns (--spans-col, --text-col)"
        return None, None, none
    df = df.filter(_cond().is_in([a, b]))
    explicit = "spans" in inputs.required
    if df[spans].null_count() == df.height:  # no row has a spans value (a column of nulls, of any type)
        if explicit:
            raise _bad_spans(f"{source}, column '{spans}' (--spans-col)",
                             f"null in every {a} and {b} row (column type {df.schema[spans]})",
                             "the column holds no spans at all",
                             "choose the column that holds the spans with --spans-col, or leave --spans-col out "
                             "to skip the boundary span rate")
        skipped["boundary_spans"] = f"column '{spans}' is null in every {a} and {b} row"
        return None, None, none
    df = _span_column(df, source, spans)
    tdt = df.schema[text]
    if not (tdt == pl.String or isinstance(tdt, pl.Categorical) or tdt == pl.Null):
        raise DDPDataError(f"{source}, column '{text}': expected text (the segment the span offsets point into), "
                           f"found {tdt}; choose the text column with --text-col", code="D111")
    df = df.with_columns(pl.col(text).cast(pl.String))
    (sa, na), (sb, nb) = _spans(df, source, a, spans, text), _spans(df, source, b, spans, text)
    omitted = {a: na, b: nb}
    if na or nb:
        note(f"{na + nb:,} error span(s) in '{spans}' have no offsets (span_start and span_end null: omission markers; "
             f"{a}: {na:,}, {b}: {nb:,}) and are left out of the boundary span rate, which needs a position",
             "D703", "give them offsets or remove them, or drop --strict")
    if not (sa.height and sb.height):
        empty = [c for c, t in ((a, sa), (b, sb)) if not t.height]
        skipped["boundary_spans"] = f"no error span under {' and '.join(empty)}"
        if explicit:  # asked for explicitly: say so (the default is to skip quietly)
            note(f"the boundary span rate is skipped: no error span under {' and '.join(empty)} in '{spans}'",
                 "D703", "check --spans-col and --a/--b")
        return None, None, omitted
    return sa, sb, omitted


class _Resampler:
    """Runs the resampling parts of the battery, each with the time left / the parts left, and
    names the flag (``--n-boot`` / ``--n-boot-cluster``) in a D362 / D363."""

    def __init__(self, parts: list[str], budget: Any, t_start: float, counts: dict[str, int]) -> None:
        self.parts, self.budget, self.t_start, self.counts = parts, budget, t_start, counts

    def __call__(self, part: str, flag: str, fn: Callable[..., Any], *args: Any, options: ResampleOptions,
                 **kw: Any) -> Any:
        import time

        from . import budget as _budget

        budget = self.budget
        left_parts = len(self.parts) - self.parts.index(part)
        if math.isinf(budget.max_seconds):
            limit: float = 0.0  # no limit
        else:
            left = budget.max_seconds - (time.perf_counter() - self.t_start)
            if left <= 0:
                raise DDPUsageError(
                    f"blindness: the time limit of {_budget.fmt_seconds(budget.max_seconds)} is used up before the "
                    f"{part} ({left_parts} resampling part(s) left); lower --n-boot / --n-boot-cluster, or raise "
                    "--max-seconds S (0 = no limit)", code="D363")
            limit = left / left_parts
        try:
            return fn(*args, options=options.replace(max_memory=budget.max_memory, max_seconds=limit), **kw)
        except DDPUsageError as exc:
            if exc.code not in ("D362", "D363"):
                raise
            msg = exc.message.replace("lower --n-boot ", f"lower {flag} ")
            share = ""
            if exc.code == "D363" and left_parts > 1:
                share = (f" (the {part}'s share of the {_budget.fmt_seconds(budget.max_seconds)} battery budget: "
                         f"the time left split over {left_parts} resampling parts)")
            raise DDPUsageError(f"blindness {part} ({flag} {self.counts[flag]:,}): {msg}{share}",
                                code=exc.code) from None


@dataclasses.dataclass(frozen=True)
class _Ranking:
    """The ranking part of the battery: its evidence (``None``: fewer than 2 systems), whether the
    rankings differ, and why tau is undefined (``""``: it is defined)."""

    evidence: dict[str, Any] | None = None
    differ: bool = False
    undefined: str = ""
    #: why there is no ranking (``evidence`` None): fewer than 2 systems, or 1 document
    skipped: str = ""


def _ranking(run: _Resampler, two: pl.DataFrame, a: str, b: str, n_sys: int,
             n_docs: int, design: BlindnessDesign, opts: ResampleOptions, skipped: dict[str, str],
             note: _Notes) -> _Ranking:
    """2. Kendall tau between the rankings: the evidence, whether they differ, why tau is undefined. Skipped
    (with a D702 note) below 2 systems, and below 2 documents: the tau CI and the system clusters resample
    documents, and one document would give every replicate the whole sample (a CI of zero width)."""
    from .bootstrap import bootstrap_tau

    if n_sys < 2:
        skipped["ranking"] = skipped["clusters"] = f"{n_sys} {a} system(s); rankings need at least 2"
        note(f"{n_sys} {a} system(s): no ranking and no clusters; the verdict rests on the paired TOST alone",
             "D702", "score at least 2 systems")
        return _Ranking(skipped=skipped["ranking"])
    if n_docs < 2:
        skipped["ranking"] = skipped["clusters"] = (f"{n_docs} document; the tau CI and the clusters resample "
                                                    "documents and need at least 2")
        note(f"{n_docs} document: no ranking and no clusters (their bootstrap resamples documents, and one "
             "document would make every replicate the whole sample); the verdict rests on the paired TOST alone",
             "D702", "score at least 2 documents")
        return _Ranking(skipped=skipped["ranking"])
    n_boot = int(opts.n_boot)  # type: ignore[arg-type]
    tau = run("tau", "--n-boot", bootstrap_tau, two, a, b, unit="document", tau_min=design.tau_min,
              confidence=design.confidence, options=opts, one_sided="keep")
    ranking = {k: v for k, v in tau.to_dict().items() if k not in ("means_a", "means_b")}
    ranking["means_a"], ranking["means_b"] = tau.means_a, tau.means_b
    rank_differ = bool(math.isfinite(tau.ci_high) and tau.ci_high < design.tau_min)
    ranking["rankings_differ"] = rank_differ
    rank_undefined = ""
    if not all(math.isfinite(x) for x in (tau.tau, tau.ci_low, tau.ci_high)):
        tied = [c for c, m in ((a, tau.means_a), (b, tau.means_b)) if len(set(m.values())) <= 1]
        rank_undefined = (f"all {' and all '.join(tied)} system means are tied" if tied else
                          f"{tau.n_undefined:,} of {n_boot:,} replicates undefined (tied system means)")
        ranking["tau_undefined_reason"] = rank_undefined
        note(f"Kendall tau between the {a} and {b} rankings is undefined ({rank_undefined}); the rankings cannot "
             "be compared, so the verdict cannot be blind", "D702",
             "check that the score column varies between systems (--score-col)")
    elif tau.n_undefined:
        ranking["tau_undefined_reason"] = (f"{tau.n_undefined:,} of {n_boot:,} replicates undefined (a system "
                                           "without rows in the resample, or tied system means); left out of "
                                           "the CI")
        note(f"the tau CI rests on {n_boot - tau.n_undefined:,} of {n_boot:,} document resamples: "
             + ranking["tau_undefined_reason"], "D702", "use more documents, or drop --strict")
    for w in tau.warnings:  # e.g. too few --n-boot replicates for the CI's tails, similar system names
        note.resampling.add(w)
        if not rank_undefined:  # an undefined tau is said above (D702): its CI has no replicates to count
            note(f"tau: {w}", "D930", "act on the warning (e.g. raise --n-boot for this --confidence), "
                 "or drop --strict")
    return _Ranking(ranking, rank_differ, rank_undefined)


def _clusters(run: _Resampler, two: pl.DataFrame, a: str, b: str, design: BlindnessDesign,
              opts: ResampleOptions, notes: _Notes) -> dict[str, Any]:
    """3. System clusters in both conditions (pairwise tests at ``design.alpha``) and whether they agree;
    the clusterings' warnings are the battery's (``--strict``: D930)."""
    from .clustering import cluster_systems, compare_clusters

    method = design.method
    copts = ResampleOptions(n_boot=design.n_boot_cluster, seed=opts.seed)
    # the significance level of the pairwise tests is the battery's --alpha, as `ddp stats cluster --alpha`
    kw: dict[str, Any] = dict(alpha=design.alpha, columns=TableColumns(annotator=None))
    if method in ("bootstrap", "permutation"):
        ca = run("clusters " + a, "--n-boot-cluster", cluster_systems, two, method, condition_value=a, options=copts,
                 **kw)
        cb = run("clusters " + b, "--n-boot-cluster", cluster_systems, two, method, condition_value=b, options=copts,
                 **kw)
    else:
        ca = cluster_systems(two, method, condition_value=a, options=copts, **kw)  # type: ignore[arg-type]
        cb = cluster_systems(two, method, condition_value=b, options=copts, **kw)  # type: ignore[arg-type]
    said: dict[str, list[str]] = {}  # e.g. too few resamples for alpha: said (once for both conditions), never dropped
    for cond, res in ((a, ca), (b, cb)):
        for w in res.warnings:  # (the clustering names its own flag; here the resamples are --n-boot-cluster)
            if w in notes.resampling:
                continue
            said.setdefault(w.replace("use --n-boot ", "use --n-boot-cluster "), []).append(cond)
    for w, conds in said.items():
        notes(f"clusters {' and '.join(conds)}: {w}", "D930",
              "act on the warning (e.g. raise --n-boot-cluster for this --alpha), or drop --strict")
    cmp = compare_clusters(ca, cb)
    return {"method": method, "alpha": float(design.alpha), "clusters_a": [list(c) for c in ca.clusters],
            "clusters_b": [list(c) for c in cb.clusters], "comparison": cmp.to_dict(),
            "same_clusters": cmp.same_clusters, "n_boot": design.n_boot_cluster}


def _recoverability(df: pl.DataFrame, found: list[str], seg: str | None, a: str, b: str,
                    skipped: dict[str, str]) -> dict[str, Any] | None:
    """5. Score recoverability R^2 from the SEG condition, or ``None`` with the reason in ``skipped``."""
    from .spans import score_recoverability_r2

    if seg is not None and str(seg) in found and str(seg) not in (a, b):
        return {f"{seg}->{c}": score_recoverability_r2(df, predictor=str(seg), target=c).to_dict() for c in (a, b)}
    skipped["recoverability"] = (f"no {str(seg)!r} condition (--seg)" if seg is not None and str(seg) not in
                                 (a, b) else "seg=None or equal to a/b")
    return None


def _verdict(tost: Any, eps: float, sd: float, pw: Any, rank: _Ranking, n_sys: int, design: BlindnessDesign,
             a: str, b: str) -> tuple[Verdict, list[str]]:
    """The verdict and its reasons (module docstring)."""
    alpha, tau_min = design.alpha, design.tau_min
    ranking, rank_differ, rank_undefined = rank.evidence, rank.differ, rank.undefined
    reasons: list[str] = []
    pct = f"{100 * (1 - 2 * alpha):g}%"
    ci = f"{pct} CI of mean({a} - {b}) [{tost.ci_low:.4g}, {tost.ci_high:.4g}]"
    if tost.ci_low > eps or tost.ci_high < -eps:
        reasons.append(f"{ci} lies wholly beyond the margin ±{eps:.4g}")
    if rank_differ and ranking is not None:
        reasons.append(f"rankings differ: tau CI [{ranking['ci_low']:.3f}, {ranking['ci_high']:.3f}] lies below "
                       f"tau_min {tau_min:g}")
    if reasons:
        return "sensitive", reasons
    if tost.equivalent and rank_undefined:
        reasons.append(f"TOST: {ci} inside ±{eps:.4g} (p = {tost.p_value:.3g}), but the rankings cannot be "
                       f"compared: tau undefined ({rank_undefined})")
        return "inconclusive", reasons
    if tost.equivalent:
        reasons.append(f"TOST: {ci} inside ±{eps:.4g} (p = {tost.p_value:.3g})")
        if ranking is not None:
            reasons.append(f"rankings do not differ: tau {ranking['tau']:.3f}, CI upper bound "
                           f"{ranking['ci_high']:.3f} >= tau_min {tau_min:g}")
        else:
            reasons.append(f"rankings not compared ({rank.skipped or f'{n_sys} system(s)'})")
        return "blind", reasons
    reasons.append(f"TOST not equivalent ({ci} not inside ±{eps:.4g}, p = {tost.p_value:.3g}) and not wholly "
                   "beyond it")
    if pw.power < 0.8:
        more = f"about {pw.n_needed:,} pairs give 80 % power" if pw.n_needed else "no n reaches 80 % power"
        reasons.append(f"underpowered: power {pw.power:.3f} at n = {tost.n:,} (true difference 0, SD "
                       f"{sd:.4g}); {more}")
    else:
        reasons.append(f"powered ({pw.power:.3f}) but the difference sits near the margin: mixed evidence")
    return "inconclusive", reasons


def simulate_scores(
    n_documents: int = 40,
    n_segments: int = 5,
    n_systems: int = 8,
    *,
    shift: float = 0.0,
    noise: float = 5.0,
    system_sd: float = 3.0,
    rank_noise: float = 0.0,
    seed: int = 0,
    conditions: tuple[str, str] = ("DOC", "MIX"),
) -> pl.DataFrame:
    """A simulated metric with known truth (tests, benchmark).

    ``score = 70 + system effect + segment effect + noise`` under condition a; condition b adds
    ``shift`` to every score (``shift = 0``: blind) and, with ``rank_noise``, an independent
    per-system perturbation of that SD (changes the ranking). Shapes: ``n_documents *
    n_segments * n_systems`` rows per condition. Vectorised.
    """
    import polars as pl

    rng = np.random.Generator(np.random.PCG64(seed))
    sys_eff = rng.normal(0, system_sd, n_systems)
    seg_eff = rng.normal(0, 8.0, (n_documents, n_segments))
    base = 70 + sys_eff[None, None, :] + seg_eff[:, :, None]  # (D, S, M)
    sa = base + rng.normal(0, noise, base.shape)
    sb = base + shift + rng.normal(0, rank_noise, n_systems)[None, None, :] + rng.normal(0, noise, base.shape)
    D, S, M = base.shape
    doc = np.repeat(np.arange(D), S * M)
    segm = np.tile(np.repeat(np.arange(S), M), D)
    sysm = np.tile(np.arange(M), D * S)
    names = np.array([f"sys{k:02d}" for k in range(M)], dtype=object)
    docs = np.array([f"doc{k:05d}" for k in range(D)], dtype=object)
    frames = []
    for c, s in zip(conditions, (sa, sb)):
        frames.append(pl.DataFrame({
            "document_id": docs[doc].tolist(), "segment_id": segm.astype(np.int64),
            "system": names[sysm].tolist(), "condition": [c] * doc.size, "score": s.reshape(-1),
        }))
    return pl.concat(frames)
