"""Metric-human agreement by DDP bin (``ddp meta``): does a metric see what humans see at high DDP?

:func:`meta_evaluate` joins a DDP profile (one row per segment) to a score table with one row per
(document, segment, system), a human score column and any number of metric columns, and reports per
DDP bin (bins as in ``ddp stratify``: half-open ``[e_i, e_{i+1})`` in sentences) and ``overall``, for
each metric:

Segment level (the WMT23 metrics task's definitions, google-research/mt-metrics-eval ``stats.py``)
  ``pearson.none``, ``tau_b.none``, ``acc_eq.none``: over every scored (segment, system) cell of the
  bin pooled ("no grouping", mt-metrics-eval ``average_by="none"``);
  ``pearson.item``, ``tau_b.item``, ``acc_eq.item``: per segment over its systems, then averaged over
  the segments (``average_by="item"``); a segment whose correlation is undefined (fewer than 2 scored
  systems, or a constant human or metric row) is left out of the average and counted
  (``n_undefined_items``), as ``AverageCorrelation`` drops NaN rows.
  ``acc_eq`` is the pairwise accuracy with tie calibration (Deutsch et al. 2023; mt-metrics-eval
  ``KendallWithTiesOpt(variant="acc23", sample_rate=1.0)``): a pair of cells is correct when the human
  and the metric order it the same way, or when both tie it; metric differences ``|dm| <= epsilon``
  count as metric ties, and epsilon is the smallest value maximising the (average) accuracy of the
  bin (candidates 0 and every pair's ``|dm|``, exactly as ``tau_optimization``). Every pair is used
  (``sample_rate=1``), except without grouping in a bin of more than ``max_pairs`` pairs: there the
  threshold is calibrated on ``tie_sample`` pairs drawn with the seed (:data:`TIE_SAMPLE_RNG`; what
  mt-metrics-eval's ``sample_rate < 1`` does, which also computes the accuracy on its sample), and the
  accuracy at that threshold is counted exactly over every pair (O(n log n)); the figure says so
  (``calibration_pairs``, ``note``) and so do the warnings. That accuracy is never above the optimum
  over all thresholds (on simulated MQM-like bins its shortfall is about 1e-4 with 100,000 pairs).
System level
  ``pairwise_accuracy.sys``: share of system pairs ordered alike by the human and the metric system
  scores (mt-metrics-eval ``stats.Agreement``: ``sign(dh) == sign(dm)``); a system's score is its mean
  over the bin's scored cells (the metric's mean over the same cells).
  ``spa.sys``: soft pairwise accuracy (Thompson et al. 2024; mt-metrics-eval ``pce.py``):
  ``1 - mean |p_human - p_metric|`` over system pairs, each p the one-sided paired permutation p-value
  (``spa_perm`` trials swapping segments) on the bin's segments scored for every system.
  ``undefined`` when the human or the metric scores are constant on those segments: every permuted
  difference ties, each p-value is 1 in both orientations of a pair, and the value would be set by the order
  of the system names.

Confidence intervals: a **document bootstrap** (``n_boot`` replicates, the seeded generator of
:mod:`ddpcore.stats.bootstrap`: ``PCG64(seed).random_raw`` row-major, unit = ``floor(raw * D / 2**64)``
over the documents in sorted id order; one draw of documents serves every bin and metric). Each
statistic is recomputed on the drawn documents (a document drawn k times counts k times); 95 %
percentile interval (``numpy.nanpercentile``, linear); replicates where a statistic is undefined are
left out of its interval and counted. ``acc_eq`` (both forms) keeps its calibrated epsilon in the
replicates (the interval is conditional on it, as mt-metrics-eval's ``PairwisePermutationSigDiff`` fixes
each metric's epsilon; ``acc_eq.none``'s replicates by the native O(n log n) weighted acc23 count).
``spa.sys``: per replicate, SPA with the first ``spa_ci_perm`` of the point value's segment masks held
fixed (a segment drawn k times counts k times, its copies share its coin; :func:`spa_replicates`): the
interval is conditional on those masks. Not resampled (``ci_status="not_computed"``, and said in the
warnings): ``tau_b.none`` in a bin of more cells than :func:`tau_ci_cap` allows (``ci_max_points``, or by
default 500,000 / 10,000), ``acc_eq.none`` above :func:`acc_ci_cap` (``ci_max_points``, or by default
500,000 / 50,000 by the human's distinct values); ``overall``'s ``pairwise_accuracy.sys`` from given system scores
(:class:`SystemScores`, fixed).

Tests
  (a) **metric A vs metric B within a bin**: mt-metrics-eval's PERM-BOTH permutation test
  (``PermutationSigDiff``), swapping whole **documents** instead of single scores: in each of ``n_perm``
  trials every document keeps or swaps its A and B scores (metric scores z-scored within the bin, as
  ``PermutationSigDiff`` does; ``acc_eq`` with each metric's own epsilon). ``p`` = share of trials whose
  difference (better minus worse) is >= the observed one (one-sided for the metric that scores
  higher, mt-metrics-eval's p with that metric as ``metric2``). Holm across the metric pairs of a bin
  and statistic. Stats: ``pearson.none``, ``pearson.item``, ``tau_b.item``, ``acc_eq.item``.
  (b) **the same metric in bin k vs the first bin** (does agreement fall with DDP?): the difference of
  the two bins' statistics in every bootstrap replicate (same documents drawn for both); ``p_below`` =
  share of replicates where bin k is not below the first bin (``diff >= 0``); Holm across metrics per
  bin and statistic. Every statistic with a bootstrap interval.
  Swap masks: trial t keeps document u when bit ``u % 64`` of word ``t * W + u // 64`` of
  ``PCG64(seed).jumped(1).random_raw`` is set (``W = ceil(D / 64)``; the AR masks of ``ddp stats
  compare``); SPA's segment masks the same with ``jumped(2)`` over the bin's complete segments.

Where document resampling differs from mt-metrics-eval: it resamples or swaps single scores
(``PermutationSigDiff``: one coin per score; its bootstrap: segments). Segments of one document share
topic, speaker and annotator, so they are not independent; drawing documents keeps that dependence
and gives wider, honest intervals. With one segment per document the two coincide in definition.

Edge cases (``status``): a bin with no scored cell, fewer than 2 cells, a constant human or metric
column in the bin (``undefined`` with the reason, never a NaN printed as a number); missing human
scores (null/NaN) are counted per bin (``n_human_missing``) and left out, never read as 0; a row whose
human score is present but a metric score is missing is left out for every metric (all metrics are
compared on the same cells) and counted in the warnings.

Frames only: :func:`meta_evaluate` takes polars frames (``ddp meta`` reads the files with
:func:`ddpcore.io.profiles.scan_profile` and :func:`ddpcore.io.scores.scan_scores`).
"""
from __future__ import annotations

import dataclasses
import json
import math
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .. import schema as S
from .._native import load
from ..errors import DDPDataError, DDPUsageError
from ..signature import json_safe, signature
from . import budget as _budget
from ._table import similar_names_warning
from .bins import bin_of, parse_bins
from .bootstrap import RNG_DESCRIPTION, resample_indices, resample_sums
from .compare import adjust_pvalues
from .options import ResampleOptions, check_options

if TYPE_CHECKING:
    import polars as pl

DEFAULT_BINS = (0.0, 1.0, 5.0, 15.0, 50.0, math.inf)
SEG_NONE = ("pearson.none", "tau_b.none", "acc_eq.none")
SEG_ITEM = ("pearson.item", "tau_b.item", "acc_eq.item")
SYS = ("pairwise_accuracy.sys", "spa.sys")
STATS = SEG_NONE + SEG_ITEM + SYS
#: statistics of test (a), the document-swap permutation test between two metrics
PERM_STATS = ("pearson.none", "pearson.item", "tau_b.item", "acc_eq.item")
PERM_RNG = ("numpy PCG64(seed).jumped(1).random_raw(n_perm * ceil(D/64)); keep document u of trial t = "
            "bit u%64 of word t*ceil(D/64) + u//64")
SPA_RNG = ("numpy PCG64(seed).jumped(2).random_raw(spa_perm * ceil(n/64)) per bin over its complete segments; "
           "+1 (keep) where the bit is set")
#: text that means "no score" in a score column read as text (mt-metrics-eval writes None)
MISSING_TEXT = ("None", "none", "NaN", "nan", "null", "NA", "")
#: trials per block of the permutation test (bounds its memory)
_PERM_BLOCK = 256


# --------------------------------------------------------------------------- options and result


@dataclasses.dataclass(frozen=True)
class MetaTests:
    """Settings of the tests and of the costly parts of :func:`meta_evaluate`.

    ``n_perm``: document-swap trials of test (a) (0 = no test (a)); ``spa_perm``: segment-swap trials
    of each SPA p-value (Thompson et al.'s default 1,000); ``alpha``: significance level after Holm;
    ``pairs``: ``"all"`` metric pairs in test (a) or ``"none"``; ``max_pairs``: largest number of
    cell pairs over which ``acc_eq.none``'s tie threshold is calibrated pair by pair; ``tie_sample``: above
    that (and above ``tie_sample`` pairs), the seeded pairs it is calibrated on (:data:`TIE_SAMPLE_RNG`; the accuracy at it is still exact
    over every pair; 0 = not computed above ``max_pairs``); ``ci_max_points``: largest bin (cells) whose
    ``tau_b.none`` and ``acc_eq.none`` are bootstrapped, None for the choice by the bin of
    :func:`tau_ci_cap` and :data:`ACC_CI_MAX_POINTS` (``--ci-max-points auto``); ``spa_ci_perm``: trials of
    the SPA p-values inside each bootstrap replicate (the first ``spa_ci_perm`` of the point value's masks;
    0 = no SPA interval)."""

    n_perm: int = 10_000
    spa_perm: int = 1_000
    alpha: float = 0.05
    pairs: str = "all"
    max_pairs: int = 20_000_000
    ci_max_points: int | None = None
    spa_ci_perm: int = 20
    tie_sample: int = 100_000

    def __post_init__(self) -> None:
        for name in ("n_perm", "spa_perm", "max_pairs", "ci_max_points", "spa_ci_perm", "tie_sample"):
            v = getattr(self, name)
            if v is None and name == "ci_max_points":  # auto
                continue
            if isinstance(v, bool) or not hasattr(v, "__index__") or int(v) < 0:
                raise DDPUsageError(f"{name} must be an integer >= 0, got {v!r} (--{name.replace('_', '-')})",
                                    code="D806")
        if not (isinstance(self.alpha, (int, float)) and 0.0 < float(self.alpha) < 1.0):
            raise DDPUsageError(f"alpha must be in (0, 1), got {self.alpha!r} (--alpha)", code="D806")
        if self.pairs not in ("all", "none"):
            raise DDPUsageError(f"pairs must be 'all' or 'none', got {self.pairs!r} (--pairs)", code="D806")


@dataclasses.dataclass(frozen=True)
class MetaColumns:
    """Column names of the score table (``--document-col --segment-col --system-col --human-col``) and
    of the long form: with ``metric_name`` set (``--metric-name-col``), the table has one row per
    (document, segment, system, metric) with the value in the one ``score_col`` of :func:`meta_evaluate`
    (``--score-col``, default ``score``), and the human score is the rows whose metric is ``human``."""

    document: str = S.DOCUMENT_ID
    segment: str = S.SEGMENT_ID
    system: str = S.SYSTEM
    human: str = "human"
    metric_name: str | None = None


@dataclasses.dataclass(frozen=True)
class SystemScores:
    """System-level scores given from outside (mt-metrics-eval's ``.sys.score`` files, ``--system-scores
    files``): ``scores`` = {human or metric name: {system: score or None}}, ``source`` = {name: where it was
    read}. They replace the cell means in ``overall``'s ``pairwise_accuracy.sys`` only: the bins keep the
    means over their cells (a file holds one score per system for the whole test set, not per bin)."""

    scores: dict[str, dict[str, float | None]]
    source: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class MetaResult:
    """Result of :func:`meta_evaluate`.

    ``bins``: one entry per DDP bin (``low``, ``high``, counts, ``metrics`` = {metric: {stat: figure}});
    ``overall``: the same over every segment; ``tests``: ``metric_pairs`` (test a) and
    ``bins_vs_first`` (test b); ``warnings``; ``signature``. A figure is ``{"value", "ci_low",
    "ci_high", "status", "reason", "n", ...}`` with ``status`` ``ok`` / ``undefined`` / ``not_computed``."""

    bins: list[dict[str, Any]]
    overall: dict[str, Any]
    tests: dict[str, Any]
    warnings: list[str]
    signature: dict[str, Any]

    @property
    def metrics(self) -> list[str]:
        return list(self.signature["metrics"])

    def to_dict(self) -> dict[str, Any]:
        return json_safe({"bins": self.bins, "overall": self.overall, "tests": self.tests,
                          "warnings": self.warnings, "signature": self.signature})

    def gate(self, specs: Sequence[str]) -> tuple[bool, list[dict[str, Any]], list[str]]:
        """``(passed, failures, notes)`` of ``--fail-on`` specs (see :func:`parse_fail_on`): a failure is a
        bin with lower edge >= the spec's DDP where the metric's statistic is significantly below the first
        bin (Holm-adjusted ``p_below`` < alpha); ``notes`` name the spec bins that could not be tested."""
        rules = [parse_fail_on(s, self.metrics) for s in specs]
        fails: list[dict[str, Any]] = []
        notes: list[str] = []
        for metrics, stat, min_ddp, text in rules:
            hit = [t for t in self.tests["bins_vs_first"] if t["stat"] == stat and t["metric"] in metrics
                   and t["low"] >= min_ddp]
            tested_bins = {(t["metric"], t["low"]) for t in hit}
            if not any(b["low"] >= min_ddp for b in self.bins[1:]):  # nothing to test: said, not a silent pass
                edges = ", ".join(b["label"] for b in self.bins)
                notes.append(f"{text}: no bin after the first has a lower edge >= {min_ddp:g} (bins {edges}), so "
                             "nothing was tested; add that edge to --bins or lower the gate's DDP")
            for b in self.bins[1:]:
                if b["low"] >= min_ddp:
                    for m in metrics:
                        if (m, b["low"]) not in tested_bins:
                            notes.append(f"{text}: {m} {stat} in bin {b['label']} cannot be tested (no bootstrap "
                                         "interval there)")
            for t in hit:
                if t["status"] != "ok":
                    notes.append(f"{text}: {t['metric']} {stat} in bin {t['bin']}: {t['reason']}")
                elif t["significant_below"]:
                    fails.append({**t, "spec": text})
        return (not fails), fails, notes


def parse_fail_on(text: str, metrics: Sequence[str]) -> tuple[list[str], str, float, str]:
    """``--fail-on METRIC:STAT:DDP`` -> (metrics, stat, lowest DDP, text).

    ``METRIC`` is a metric name or ``*`` (every metric; a name holding ``:`` cannot be given), ``STAT``
    one of :data:`STATS` with a bootstrap interval (e.g. ``acc_eq.item``), ``DDP`` a number: every bin
    whose lower edge is >= DDP is tested against the first bin. Example: ``XCOMET:acc_eq.item:15``
    fails when XCOMET's acc_eq (averaged by item) at DDP >= 15 is significantly below its value at the
    first bin. Errors: D805."""
    parts = str(text).rsplit(":", 2)
    if len(parts) != 3:
        raise DDPUsageError(f"--fail-on {text}: expected METRIC:STAT:DDP, e.g. '*:acc_eq.item:15' or "
                            "'COMET:pearson.item:15'", code="D805")
    metric, stat, ddp = (p.strip() for p in parts)
    if stat not in STATS:
        raise DDPUsageError(f"--fail-on {text}: statistic {stat!r} has no bootstrap test; use one of "
                            f"{', '.join(STATS)}", code="D805")
    try:
        low = float(ddp)
    except ValueError:
        raise DDPUsageError(f"--fail-on {text}: DDP {ddp!r} is not a number (sentences), e.g. 15", code="D805") \
            from None
    if math.isnan(low) or low < 0:
        raise DDPUsageError(f"--fail-on {text}: DDP must be >= 0, got {ddp}", code="D805")
    if metric == "*":
        chosen = list(metrics)
    elif metric in metrics:
        chosen = [metric]
    else:
        shown = ", ".join(list(metrics)[:20]) + (" ..." if len(metrics) > 20 else "")
        raise DDPUsageError(f"--fail-on {text}: {metric!r} is not a metric of this run; metrics: {shown}",
                            code="D805")
    return chosen, stat, low, str(text)


# --------------------------------------------------------------------------- data preparation


@dataclasses.dataclass
class _Data:
    """Joined scores as dense arrays.

    ``H`` (n_items, n_sys) human scores, NaN where missing; ``M`` (n_metrics, n_items, n_sys) metric
    scores, NaN where the cell is left out; ``valid`` (n_items, n_sys) cells used; ``item_doc`` (n_items,)
    document code (0..D-1, sorted ids); ``item_ddp`` (n_items,) DDP in sentences."""

    H: np.ndarray
    M: np.ndarray
    valid: np.ndarray
    item_doc: np.ndarray
    item_ddp: np.ndarray
    human_missing: np.ndarray  # (n_items, n_sys) a row with a null/NaN human score
    systems: list[str]
    metrics: list[str]
    n_docs: int
    join: dict[str, Any]
    warnings: list[str]


def _lazy(frame: Any, what: str) -> pl.LazyFrame:
    import polars as pl

    if isinstance(frame, pl.LazyFrame):
        return frame
    if isinstance(frame, pl.DataFrame):
        return frame.lazy()
    raise DDPUsageError(f"meta_evaluate: {what} must be a polars DataFrame or LazyFrame (read files with "
                        "ddpcore.io.profiles.scan_profile and ddpcore.io.scores.scan_scores), got "
                        f"{type(frame).__name__}", code="D810")


def check_roles(cols: MetaColumns, metric_cols: Sequence[str] | None) -> None:
    """D311 when one column is given two roles (``--document-col system``, ``--system-col document_id``,
    ``--score-col segment_id``, ...): the keys, the human score, the metric columns (the long form: the
    metric-name and value columns) must be distinct columns, as in ``ddp stats`` (D311). The human
    column named as a metric too stays D808. Checked before any input is read."""
    roles: list[tuple[str, str]] = [("--document-col", cols.document), ("--segment-col", cols.segment),
                                    ("--system-col", cols.system)]
    if cols.metric_name is not None:  # long form: the human score is a value of --metric-name-col, not a column
        roles += [("--metric-name-col", cols.metric_name)]
        roles += [("--score-col", c) for c in dict.fromkeys(metric_cols or ["score"])]
    else:
        roles += [("--human-col", cols.human)]
        roles += [("--score-col", c) for c in dict.fromkeys(metric_cols or []) if c != cols.human]
    seen: dict[str, str] = {}
    for flag, name in roles:
        if name in seen:
            first = seen[name]
            raise DDPUsageError(f"{first} and {flag} both name the column '{name}'; one column cannot have two roles "
                                f"- give each its own column ({first}: {_ROLE_WHAT[first]}, {flag}: "
                                f"{_ROLE_WHAT[flag]})", code="D311")
        seen[name] = flag


_ROLE_WHAT = {"--document-col": "the document ids", "--segment-col": "the segment ids",
              "--system-col": "the system names", "--human-col": "the human scores", "--score-col": "metric scores",
              "--metric-name-col": "the metric names"}


def _numeric_text(raw: pl.Series) -> tuple[pl.Series, pl.Series]:
    """(numbers, not-a-number mask) of a text score column: surrounding blanks stripped, the missing
    spellings (:data:`MISSING_TEXT`) null, anything else that does not read as a number flagged."""
    import polars as pl

    raw = raw.str.strip_chars()
    num = raw.cast(pl.Float64, strict=False)
    return num, num.is_null() & raw.is_not_null() & ~raw.is_in(list(MISSING_TEXT))


def _infer_metrics(slf: pl.LazyFrame, sschema: dict[str, Any], skip: Sequence[str], notes: list[str]
                   ) -> tuple[list[str], dict[str, str]]:
    """The metric columns when ``--score-col`` is not given: every numeric column besides ``skip``, and
    every text column most of whose values (the missing spellings aside) read as numbers - a CSV metric
    column written with mt-metrics-eval's ``None`` or holding a stray word is text to the CSV reader, and
    is a metric all the same (a cell that is not a number is then D812, as with ``--score-col``). A text
    column with some numbers but mostly words, or with no value at all, is not a metric: said in
    ``notes`` (never dropped in silence). Returns (metrics in table order, {text metric: why})."""
    import polars as pl

    text = [c for c, t in sschema.items() if c not in skip and t == pl.String]
    counts: dict[str, tuple[int, int]] = {}
    if text:
        row = slf.select(pl.col(c) for c in text).collect()
        for c in text:
            num, bad = _numeric_text(row[c])
            counts[c] = (int(num.is_not_null().sum()), int(bad.sum()))
    metrics: list[str] = []
    why: dict[str, str] = {}
    for c, t in sschema.items():
        if c in skip:
            continue
        if t.is_numeric():
            metrics.append(c)
        elif c in counts:
            n_num, n_bad = counts[c]
            if n_num > n_bad:
                metrics.append(c)
                why[c] = (f"--score-col not given: the text column '{c}' is read as a metric because {n_num:,} of "
                          f"its {n_num + n_bad:,} values are numbers; fix the cell, or name the metric columns with "
                          "--score-col")
            elif n_num:
                notes.append(f"column '{c}' is text ({n_num:,} of {n_num + n_bad:,} values are numbers, the others "
                             "words) and is not read as a metric; name it with --score-col to score it")
            elif n_bad == 0:
                notes.append(f"column '{c}' has no value (every cell empty or a missing-score spelling) and is not "
                             "read as a metric")
    return metrics, why


#: the working columns of :func:`_prepare`'s join: a score column of one of these names would collide with them
_INTERNAL = ("__human", "__n", "__pd", "__ps", "__ddp", "__hit", "__doc", "__item", "__sys")


def _wide_scores(slf: pl.LazyFrame, sname: str, cols: MetaColumns, metric_cols: Sequence[str] | None,
                 notes: list[str] | None = None) -> tuple[pl.DataFrame, list[str]]:
    """The score table with one row per (document, segment, system): keys, ``__human`` and the metric
    columns (Float64). Long form (``cols.metric_name``) is pivoted first. Without ``metric_cols`` the
    metrics are inferred (:func:`_infer_metrics`; what is not read as a metric is said in ``notes``)."""
    import polars as pl

    notes = notes if notes is not None else []
    sschema = dict(slf.collect_schema())
    keys = [cols.document, cols.segment, cols.system]
    for flag, c in zip(("--document-col", "--segment-col", "--system-col"), keys):
        if c not in sschema:
            raise DDPUsageError(f"{sname}: column '{c}' missing ({flag} names it); columns: {', '.join(sschema)}",
                                code="D800")
    if cols.metric_name is not None:
        values = list(metric_cols or ["score"])
        if len(values) != 1:
            raise DDPUsageError(f"--score-col {','.join(values)}: with --metric-name-col (the long form) give the one "
                                "column holding the values (default: score)", code="D811")
        value = values[0]
        metric_cols = None
        for flag, c in (("--metric-name-col", cols.metric_name), ("--score-col", value)):
            if c not in sschema:
                raise DDPUsageError(f"{sname}: column '{c}' missing ({flag} names it); columns: "
                                    f"{', '.join(sschema)}", code="D800")
        df = slf.select(*keys, pl.col(cols.metric_name).cast(pl.String), pl.col(value)).collect()
        if not (df[value].dtype.is_numeric() or df[value].dtype == pl.Null):
            raise DDPDataError(f"{sname}, column '{value}': scores must be numbers, found {df[value].dtype}",
                               code="D812")
        dup = df.select(*keys, cols.metric_name).is_duplicated()
        if dup.any():
            r = int(dup.arg_true()[0])
            row = df.row(r, named=True)
            raise DDPDataError(f"{sname}, row {r + 1}: ({', '.join(f'{k}={row[k]!r}' for k in keys)}, "
                               f"{cols.metric_name}={row[cols.metric_name]!r}) occurs more than once; each "
                               "(document, segment, system, metric) must occur once", code="D802")
        names = sorted(set(df[cols.metric_name].drop_nulls().to_list()))
        clash = [n for n in names if n in keys]
        if clash:  # after the pivot the metric would be a second column of that name (was an internal error)
            raise DDPDataError(f"{sname}, column '{cols.metric_name}': the metric name {clash[0]!r} is also the name of "
                               "the document, segment or system column; rename that metric or the key column "
                               "(--document-col/--segment-col/--system-col)", code="D971")
        if cols.human not in names:
            raise DDPUsageError(f"--human-col {cols.human}: no row of {sname} has {cols.metric_name} = "
                                f"{cols.human!r}; values: {', '.join(names[:20])}", code="D800")
        wide = df.pivot(on=cols.metric_name, index=keys, values=value, aggregate_function=None)
        sschema = dict(wide.schema)
        slf = wide.lazy()
    if cols.human not in sschema:
        raise DDPUsageError(f"--human-col {cols.human}: not a column of {sname}; columns: {', '.join(sschema)}",
                            code="D800")
    if metric_cols:
        metrics = list(dict.fromkeys(metric_cols))
        for m in metrics:
            if m not in sschema:
                raise DDPUsageError(f"--score-col {m}: not a column of {sname}; columns: {', '.join(sschema)}",
                                    code="D801")
        inferred: dict[str, str] = {}
    else:
        metrics, inferred = _infer_metrics(slf, sschema, (*keys, cols.human), notes)
    if cols.human in metrics:
        raise DDPUsageError(f"--score-col {cols.human}: the human score column cannot also be a metric", code="D808")
    if not metrics:
        raise DDPUsageError(f"{sname}: no metric column (give --score-col, numeric columns besides "
                            f"{', '.join(keys)} and {cols.human})", code="D808")
    internal = [c for c in (*keys, cols.human, *metrics) if c in _INTERNAL]
    if internal:  # it would be overwritten by (or read as) the DDP, the document codes... of the join, in silence
        raise DDPDataError(f"{sname}: the column (or metric) name {internal[0]!r} is one ddp meta uses internally "
                           f"({', '.join(_INTERNAL)}); rename it", code="D971")
    text_cols = [c for c in (cols.human, *metrics) if sschema[c] == pl.String]
    for c in (cols.human, *metrics):
        t = sschema[c]
        if not (t.is_numeric() or t == pl.Null or t == pl.String):
            raise DDPDataError(f"{sname}, column '{c}': scores must be numbers, found {t}", code="D812")
    df = slf.select(*keys, pl.col(cols.human).alias("__human"), *metrics).collect()
    for c in text_cols:  # a text column: numbers, and the missing-value spellings of mt-metrics-eval and CSV
        name = "__human" if c == cols.human else c
        num, bad = _numeric_text(df[name])
        if bad.any():
            r = int(bad.arg_true()[0])
            raise DDPDataError(f"{sname}, row {r + 1}, column '{c}': {df[name].str.strip_chars()[r]!r} is not a "
                               f"number (missing scores are written {', '.join(repr(x) for x in MISSING_TEXT if x)} "
                               f"or left empty)" + (f"; {inferred[c]}" if c in inferred else ""), code="D812")
        df = df.with_columns(num.alias(name))
    df = df.with_columns(pl.col("__human").cast(pl.Float64), *[pl.col(m).cast(pl.Float64) for m in metrics])
    return df, metrics


def _prepare(profile: Any, scores: Any, psig: dict[str, Any], pname: str, sname: str, cols: MetaColumns,
             metric_cols: Sequence[str] | None, ddp_col: str, strict_join: bool) -> _Data:
    import polars as pl

    from ..io.profiles import check_ddp_col, check_ddp_values, profile_columns

    pc = profile_columns(psig)
    plf = _lazy(profile, "the profile")
    pschema = dict(plf.collect_schema())
    # as `ddp meta --ddp-col` (scan_profile): a name the profile lacks is D780, text or booleans D781 (a strict
    # float cast of text was an internal error; true/false were binned as DDP 1/0)
    check_ddp_col(pschema, ddp_col, pname, pschema.get(ddp_col))
    for c in (pc.document, pc.segment, ddp_col):
        if c not in pschema:
            raise DDPDataError(f"{pname}: column '{c}' missing; expected a `ddp profile` segment table (columns: "
                               f"{', '.join(pschema)})", code="D813")
    warnings: list[str] = []
    df, metrics = _wide_scores(_lazy(scores, "the scores"), sname, cols, metric_cols, warnings)
    keys = [cols.document, cols.segment, cols.system]
    if df.height == 0:
        raise DDPDataError(f"{sname}: the score table has no rows", code="D804")
    nulls = df.select(pl.any_horizontal([pl.col(k).is_null() for k in keys]).alias("__n"))["__n"]
    if nulls.any():
        r = int(nulls.arg_true()[0])
        raise DDPDataError(f"{sname}, row {r + 1}: a null document, segment or system id; every row needs all "
                           "three", code="D800")
    dup = df.select(keys).is_duplicated()
    if dup.any():
        r = int(dup.arg_true()[0])
        row = df.row(r, named=True)
        n_dup = int(dup.sum())
        raise DDPDataError(f"{sname}, row {r + 1}: ({', '.join(f'{k}={row[k]!r}' for k in keys)}) occurs more than "
                           f"once ({n_dup} rows repeat a key); each (document, segment, system) must occur once "
                           "(average repeated ratings first)", code="D802")
    prof = plf.select(pl.col(pc.document).alias("__pd"), pl.col(pc.segment).alias("__ps"),
                      pl.col(ddp_col).alias("__ddp")).collect()
    # a negative, fractional or non-finite DDP is D781 naming the row, as in every command that reads a profile
    # (it fell outside the bins and counted in `overall` only); a null is a segment without DDP (warned below)
    check_ddp_values(prof.select(pl.col("__ddp").alias(ddp_col)), ddp_col, pname)
    prof = prof.with_columns(pl.col("__ddp").cast(pl.Float64))
    if prof.select(pl.struct("__pd", "__ps").is_duplicated().any()).item():
        raise DDPDataError(f"{pname}: a (document, segment) occurs on two rows; a profile has one row per segment",
                           code="D814")
    # the join keys compare as text when the two sides' types differ (e.g. integer ids vs strings)
    same = df.schema[cols.document] == prof.schema["__pd"] and df.schema[cols.segment] == prof.schema["__ps"]
    if not same:
        df = df.with_columns(pl.col(cols.document).cast(pl.String), pl.col(cols.segment).cast(pl.String))
        prof = prof.with_columns(pl.col("__pd").cast(pl.String), pl.col("__ps").cast(pl.String))
    prof = prof.with_columns(pl.lit(True).alias("__hit"))
    j = df.join(prof, left_on=[cols.document, cols.segment], right_on=["__pd", "__ps"], how="left",
                maintain_order="left")
    unmatched = j["__hit"].is_null()
    n_unmatched = int(unmatched.sum())
    first = [dict(zip(keys, r)) for r in j.filter(unmatched).select(keys).head(3).iter_rows()]
    if n_unmatched and strict_join:
        raise DDPDataError(f"--strict-join: {n_unmatched} of {df.height} score rows of {sname} have no segment in the "
                           f"profile {pname} (first: {first}); check the ids, or drop --strict-join to count and "
                           "skip them", code="D803")
    if n_unmatched:
        warnings.append(f"{n_unmatched:,} of {df.height:,} score rows have no profile segment and are left out "
                        f"(first: {first})")
    j = j.filter(~unmatched)
    # counted before the rows without DDP are dropped: a segment without DDP has its score rows (said above)
    seg_scored = j.select(cols.document, cols.segment).unique().height
    no_ddp = j["__ddp"].is_null() | j["__ddp"].is_nan()
    n_no_ddp = int(no_ddp.sum())
    if n_no_ddp:
        warnings.append(f"{n_no_ddp:,} score rows are on profile segments without a DDP value and are left out")
        j = j.filter(~no_ddp)
    if j.height == 0:
        raise DDPDataError(f"no score row of {sname} joins a profile segment with a DDP value ({pname}); check "
                           "that the profile is of the scored source (document and segment ids)", code="D804")
    n_prof = prof.height
    if seg_scored < n_prof:
        warnings.append(f"{n_prof - seg_scored:,} of {n_prof:,} profile segments have no score row")
    # dense codes: documents in sorted id order, items (document, segment) in sorted order, systems sorted
    j = j.with_columns((pl.col(cols.document).rank("dense") - 1).cast(pl.Int64).alias("__doc"),
                       pl.struct(cols.document, cols.segment).rank("dense").cast(pl.Int64).alias("__item") - 1,
                       (pl.col(cols.system).cast(pl.String).rank("dense") - 1).cast(pl.Int64).alias("__sys"))
    n_items = int(j["__item"].max()) + 1
    systems = j.select(pl.col(cols.system).cast(pl.String)).unique().sort(cols.system)[cols.system].to_list()
    n_sys = len(systems)
    item = j["__item"].to_numpy()
    sysi = j["__sys"].to_numpy()
    item_doc = np.zeros(n_items, dtype=np.int64)
    item_doc[item] = j["__doc"].to_numpy()
    item_ddp = np.zeros(n_items, dtype=np.float64)
    item_ddp[item] = j["__ddp"].to_numpy()
    H = np.full((n_items, n_sys), np.nan)
    hv = j["__human"].to_numpy().astype(np.float64)
    H[item, sysi] = hv
    present = np.zeros((n_items, n_sys), dtype=bool)
    present[item, sysi] = True
    human_missing = present & np.isnan(H)
    M = np.full((len(metrics), n_items, n_sys), np.nan)
    for k, m in enumerate(metrics):
        M[k, item, sysi] = j[m].to_numpy().astype(np.float64)
    for name, arr in (("human", H), *zip(metrics, M)):
        if np.isinf(arr).any():
            raise DDPDataError(f"{sname}, column '{cols.human if name == 'human' else name}': an infinite score; "
                               "scores must be finite", code="D812")
        big = np.abs(np.nan_to_num(arr)) > 1e100
        if big.any():
            raise DDPDataError(f"{sname}, column '{cols.human if name == 'human' else name}': a score above 1e100 in "
                               "magnitude; rescale it", code="D815")
    hum_ok = present & ~np.isnan(H)
    met_ok = ~np.isnan(M).any(axis=0)
    valid = hum_ok & met_ok
    n_metric_missing = int((hum_ok & ~met_ok).sum())
    if n_metric_missing:
        bad = [metrics[k] for k in range(len(metrics)) if (hum_ok & np.isnan(M[k])).any()]
        warnings.append(f"{n_metric_missing:,} scored cells have a human score but a missing metric score "
                        f"({', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''}) and are left out for every metric")
    n_hmiss = int(human_missing.sum())
    if n_hmiss:
        warnings.append(f"{n_hmiss:,} of {int(present.sum()):,} joined rows have no human score (null/NaN) and are "
                        "left out (counted per bin as n_human_missing, never read as 0)")
    if n_sys < 2:
        raise DDPDataError(f"{sname}: {n_sys} system; metric-human agreement needs at least 2 systems", code="D809")
    similar = similar_names_warning(systems, flag="--system-col")
    if similar:
        warnings.append(similar)
    join = {"score_rows": int(df.height), "unmatched_score_rows": n_unmatched, "rows_without_ddp": n_no_ddp,
            "profile_segments": int(n_prof), "scored_segments": int(seg_scored), "documents": int(item_doc.max()) + 1,
            "systems": n_sys, "human_missing": n_hmiss, "metric_missing_cells": n_metric_missing,
            "cells_used": int(valid.sum())}
    return _Data(H, M, valid, item_doc, item_ddp, human_missing, systems, metrics, int(item_doc.max()) + 1, join,
                 warnings)


# --------------------------------------------------------------------------- per-item statistics


def item_statistics(h: npt.ArrayLike, m: npt.ArrayLike, valid: npt.ArrayLike) -> dict[str, np.ndarray]:
    """Per segment (row) of ``h``, ``m`` (shape (n_items, n_sys)) over its ``valid`` cells (native kernel):
    ``pearson``, ``tau_b`` (NaN for fewer than 2 cells or a constant human or metric row, where scipy's
    ``pearsonr`` / ``kendalltau`` give NaN and mt-metrics-eval drops the row from the average), ``pairs``,
    ``con0`` (concordant pairs), ``tie0`` (pairs tied in both), each shape (n_items,), and the tie
    calibration entries ``entries = (item, |dm|, +1 a human tie / -1 a concordant pair)`` in row order."""
    h = np.ascontiguousarray(h, dtype=np.float64)
    m = np.ascontiguousarray(m, dtype=np.float64)
    ok = np.ascontiguousarray(valid, dtype=np.uint8)
    if h.ndim != 2 or h.shape != m.shape or h.shape != ok.shape:
        raise DDPUsageError(f"item_statistics: h, m and valid must be 2-D of one shape, got {h.shape}, {m.shape}, "
                            f"{ok.shape}", code="D806")
    n_items, n_sys = h.shape
    out = {k: np.empty(n_items) for k in ("pearson", "tau_b", "pairs", "con0", "tie0")}
    cap = n_items * n_sys * (n_sys - 1) // 2
    e_item, e_adm, e_sign = np.empty(cap, dtype=np.int64), np.empty(cap), np.empty(cap)
    k = load("stats_meta").item_pairs(h, m, ok, out["pearson"], out["tau_b"], out["pairs"], out["con0"], out["tie0"],
                                      e_item, e_adm, e_sign)
    out["entries"] = (e_item[:k], e_adm[:k], e_sign[:k])  # type: ignore[assignment]
    two = out["pairs"] == 1  # two cells: r is exactly +-1, as scipy's pearsonr (the kernel can give 1 - 2e-16)
    out["pearson"][two] = np.sign(out["pearson"][two])
    return out


def calibrate_ties(diff: np.ndarray, gain: np.ndarray, base: float, *, presorted: bool = False
                   ) -> tuple[float, float]:
    """The tie threshold of ``acc_eq``: ``(best objective, epsilon)``.

    ``diff`` (n_entries,) are the |metric differences| of the pairs whose class changes when epsilon
    reaches them, ``gain`` their weights (+w: a human tie becomes a correct metric tie, -w: a concordant
    pair becomes a metric tie), ``base`` the objective at epsilon 0 (``presorted``: ``diff`` is already
    ascending and ``gain`` in the same order). All pairs with the same difference
    flip together; the smallest epsilon reaching the maximum wins (mt-metrics-eval ``tau_optimization``:
    candidates 0 and every difference, ``numpy.nanargmax``)."""
    if diff.size == 0:
        return base, 0.0
    if presorted:
        d, cum = diff, np.cumsum(gain)
    else:
        diff = np.ascontiguousarray(diff, dtype=np.float64)
        order = np.empty(diff.size, dtype=np.int64)
        load("stats_meta").argsort_f64(diff, order)  # numpy's argsort(kind="stable"), by radix
        d = diff[order]
        cum = np.cumsum(gain[order])
    ends = np.r_[np.flatnonzero(d[1:] != d[:-1]), d.size - 1]
    obj = base + cum[ends]
    k = int(np.argmax(obj))
    if obj[k] > base:
        return float(obj[k]), float(d[ends[k]])
    return float(base), 0.0


def acc_eq_none(h: np.ndarray, m: np.ndarray) -> tuple[float, float]:
    """``acc_eq`` without grouping of two vectors (shape (n,)): ``(accuracy, epsilon)``; every one of the
    n (n - 1) / 2 pairs is enumerated (native kernel). NaN for n < 2."""
    n = h.size
    if n < 2:
        return math.nan, 0.0
    n_pairs, diff, sign, con0, tb0 = _tie_entries(h, m)
    best, eps = calibrate_ties(diff, sign.astype(np.float64), float(con0 + tb0))
    return best / n_pairs, eps


#: the seeded pair sample of ``acc_eq.none``'s tie calibration in a bin of more than ``max_pairs`` pairs
TIE_SAMPLE_RNG = ("numpy PCG64(SeedSequence([seed, crc32(bin label), crc32(metric)])): first integers(0, n, S) "
                  "then integers(0, n - 1, S), j += (j >= i); S pairs (i, j) of the bin's scored cells ordered by "
                  "(document, segment) then system, each sorted, with replacement")


#: bytes per sampled pair at the peak of :func:`tie_threshold_sampled` (two int64 indices, two float64
#: differences, four masks, the |dm| and gains of the flipping pairs and the sort's order and scratch)
TIE_SAMPLE_BYTES = 96


def sample_pairs(n: int, n_sample: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n_sample`` pairs ``(i, j)`` of ``n`` >= 2 points, uniform over the n (n - 1) / 2 unordered pairs, drawn
    with replacement (:data:`TIE_SAMPLE_RNG`): two int64 arrays of shape (n_sample,), ``i != j``."""
    i = rng.integers(0, n, n_sample)
    j = rng.integers(0, n - 1, n_sample)
    j += j >= i
    return i, j


def tie_threshold_sampled(h: np.ndarray, m: np.ndarray, i: np.ndarray, j: np.ndarray) -> float:
    """``acc_eq``'s tie threshold calibrated on the sampled pairs ``(i[t], j[t])`` of ``h``/``m`` (shape (n,)):
    the smallest epsilon maximising acc23 over those pairs (mt-metrics-eval ``tau_optimization`` with
    ``sample_rate < 1`` on these pairs: candidates 0 and every sampled pair's ``|dm|``)."""
    dh = h[i] - h[j]
    dm = m[i] - m[j]
    con = dh * dm > 0
    h_tie = dh == 0
    m_tie = dm == 0
    flips = (con | h_tie) & ~m_tie  # what a metric tie changes: +1 a human tie, -1 a concordant pair
    base = float(np.count_nonzero(con) + np.count_nonzero(h_tie & m_tie))
    return calibrate_ties(np.abs(dm[flips]), np.where(h_tie[flips], 1.0, -1.0), base)[1]


def acc_eq_none_sampled(h: npt.ArrayLike, m: npt.ArrayLike, n_sample: int, seed: int | np.random.Generator = 0
                        ) -> tuple[float, float]:
    """``acc_eq`` without grouping for a vector too long to enumerate its pairs (shape (n,)): the tie
    threshold calibrated on ``n_sample`` seeded pairs (:func:`sample_pairs`, :func:`tie_threshold_sampled`),
    then acc23 at that threshold over **every** pair, exactly (O(n log n), native kernel):
    ``(accuracy, epsilon)``. Never above :func:`acc_eq_none`'s optimum over all pairs (the same accuracy at a
    threshold that may not be the best one). NaN for n < 2."""
    h = np.asarray(h, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    if h.size < 2:
        return math.nan, 0.0
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    eps = tie_threshold_sampled(h, m, *sample_pairs(h.size, int(n_sample), rng))
    acc = acc_eq_replicates(h, m, np.zeros(h.size, dtype=np.int64), np.ones((1, 1)), eps, threads=1)[0]
    return float(acc), eps


def _tie_entries(h: np.ndarray, m: np.ndarray) -> tuple[int, np.ndarray, np.ndarray, int, int]:
    """The pairs of ``h``/``m`` (shape (n,), n >= 2) whose acc23 outcome depends on the tie threshold,
    from the native kernel over ``m``-sorted order: ``(n_pairs, diff, sign, con0, tb0)`` with ``diff``
    the ``|dm|`` of each such pair and ``sign`` +1/-1 what counting it as a metric tie changes, and
    ``con0 + tb0`` the pairs counted right at threshold 0 (concordant, and tied in both)."""
    n = h.size
    o = np.argsort(m, kind="stable")
    n_pairs = n * (n - 1) // 2
    diff = np.empty(n_pairs, dtype=np.float64)
    sign = np.empty(n_pairs, dtype=np.int8)
    k, con0, tb0 = load("stats_meta").tie_entries_sorted(np.ascontiguousarray(h[o]), np.ascontiguousarray(m[o]),
                                                         diff, sign)
    return n_pairs, diff[:k], sign[:k], int(con0), int(tb0)


def acc_eq_at(h: npt.ArrayLike, m: npt.ArrayLike, epsilon: float = 0.0) -> float:
    """``acc23`` of two vectors (shape (n,)) at a given tie threshold (mt-metrics-eval
    ``KendallVariants(gold=h, metric=m, variant="acc23", epsilon=epsilon)``): (concordant pairs with
    ``|dm| > epsilon`` + pairs tied in h with ``|dm| <= epsilon``) / all pairs. NaN for n < 2."""
    h, m = np.asarray(h, dtype=np.float64), np.asarray(m, dtype=np.float64)
    n = h.size
    if n < 2:
        return math.nan
    if epsilon < 0:
        raise DDPUsageError(f"epsilon must be >= 0, got {epsilon}", code="D806")
    n_pairs, diff, sign, con0, tb0 = _tie_entries(h, m)
    flip = int(sign[diff <= epsilon].sum())
    return (con0 + tb0 + flip) / n_pairs


# --------------------------------------------------------------------------- the evaluation


def _figure(value: float | None, n: int, *, status: str = "ok", reason: str | None = None, **extra: Any
            ) -> dict[str, Any]:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        value = None
        if status == "ok":
            status = "undefined"
    return {"value": value, "ci_low": None, "ci_high": None, "ci_status": None, "status": status,
            "reason": reason if status != "ok" else None, "n": int(n), **extra}


@dataclasses.dataclass
class _Cell:
    """One bin (or overall): which items, its figures, and the per-document sums it resamples."""

    name: str
    low: float | None
    high: float | None
    items: np.ndarray  # bool (n_items,)
    figures: dict[str, dict[str, dict[str, Any]]]
    # per-document sums (D x columns) of the bootstrap, and how to turn replicate sums into statistics
    blocks: list[np.ndarray]
    readers: list[tuple[str, str, Any]]  # (metric, stat, function(sums of this cell's columns) -> values)
    perm: dict[str, Any]
    # SPA's inputs (complete segments, their documents, the stacked scores, the masks), for its bootstrap
    spa: dict[str, Any] | None = None


def _zscore(v: np.ndarray) -> np.ndarray:
    sd = v.std()
    return (v - v.mean()) / sd if sd > 0 else v - v.mean()


def _pearson_from_sums(n: Any, sh: Any, shh: Any, sm: Any, smm: Any, shm: Any) -> Any:
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = shm - sh * sm / n
        vh = shh - sh * sh / n
        vm = smm - sm * sm / n
        r = cov / np.sqrt(vh * vm)
    r = np.where((n >= 2) & (vh > 0) & (vm > 0), r, np.nan)
    return np.where(n == 2, np.sign(r), np.clip(r, -1.0, 1.0))  # two points: exactly +-1, as scipy's pearsonr


def _item_calibration(item_cache: dict[str, Any], k: int, bin_code: np.ndarray, n_bins: int
                      ) -> list[tuple[float, np.ndarray]]:
    """``acc_eq.item``'s tie threshold of metric ``k`` in every bin (``bin_code`` (n_items,): each segment's
    bin, < 0 in none), in one pass over the metric's sorted entries (native kernel): per bin ``(epsilon,
    flip)``, ``flip`` (n_items,) the flipped pairs of each segment at its bin's epsilon. Equal to
    :func:`calibrate_ties` (``presorted``) on the bin's entries, with the weights 1 / pairs / the bin's
    segments with a pair and the base objective at epsilon 0."""
    P = item_cache["P"]
    code = np.ascontiguousarray(bin_code, dtype=np.int64)
    inb = (P > 0) & (code >= 0)  # segments with a pair, in a bin
    R = np.bincount(code[inb], minlength=n_bins).astype(np.float64)
    w = np.zeros(code.size)
    w[inb] = 1.0 / np.maximum(P[inb], 1) / R[code[inb]]
    cc = item_cache["con0"][k] + item_cache["tie0"][k]
    base = np.array([float((cc * np.where(code == b, w, 0.0)).sum()) for b in range(n_bins)])
    eps = np.zeros(n_bins)
    flip = np.zeros(code.size)
    e_item, e_adm, e_sign = item_cache["entries"][k]
    load("stats_meta").calibrate_bins(e_item, e_adm, e_sign, code, w, base, eps, flip)
    return [(float(eps[b]), flip) for b in range(n_bins)]


def _cell_stats(data: _Data, items: np.ndarray, name: str, low: float | None, high: float | None,
                tests: MetaTests, item_cache: dict[str, Any], seed: int,
                calib: list[tuple[float, np.ndarray]]) -> _Cell:
    """Point figures of one bin and the per-document sums of its bootstrap and permutation test; ``calib``
    per metric the bin's ``acc_eq.item`` threshold and flips (:func:`_item_calibration`)."""
    D = data.n_docs
    n_sys = len(data.systems)
    v = data.valid & items[:, None]
    ii, ss = np.nonzero(v)
    doc_c = data.item_doc[ii]
    n_cells = ii.size
    figures: dict[str, dict[str, dict[str, Any]]] = {}
    blocks: list[np.ndarray] = []
    readers: list[tuple[str, str, Any]] = []
    perm: dict[str, Any] = {}
    col = [0]

    def add_block(arr: np.ndarray) -> slice:
        arr = np.asarray(arr, dtype=np.float64).reshape(D, -1)
        blocks.append(arr)
        s = slice(col[0], col[0] + arr.shape[1])
        col[0] += arr.shape[1]
        return s

    def per_doc(values: np.ndarray, docs: np.ndarray) -> np.ndarray:
        return np.bincount(docs, weights=values, minlength=D)

    ranks = _cell_ranks(data, item_cache, items)
    h = data.H[ii, ss]
    h_const = n_cells >= 1 and bool(h.max() == h.min())
    hz = _zscore(h) if n_cells else h
    shared = add_block(np.stack([per_doc(np.ones(n_cells), doc_c), per_doc(hz, doc_c), per_doc(hz * hz, doc_c)], 1)
                       ) if n_cells else None
    n_docs_cell = int(np.unique(doc_c).size)
    cell_items = np.flatnonzero(items)
    perm_cols: list[np.ndarray] = []
    perm_layout: dict[str, dict[str, slice]] = {}
    def none_point(k: int) -> tuple[float, dict[str, Any]]:
        """tau_b.none and acc_eq.none of metric ``k`` over the bin's cells (one O(n log n) walk each, and
        the tie calibration): the heavy point values, one metric per thread (the walks release the GIL; the
        sampled calibration is seeded per bin and metric, so the values do not depend on the threads)."""
        m = data.M[k, ii, ss]
        tau = float(_tau_b_reps(item_cache, k, *ranks, np.ones((1, D)), 0)[0])
        n_pairs = n_cells * (n_cells - 1) // 2
        if n_pairs <= max(tests.max_pairs, tests.tie_sample):  # every pair (no more than a sample would draw)
            acc, eps = acc_eq_none(h, m)
            return tau, _figure(acc, n_cells, epsilon=eps, calibration_pairs=n_pairs)
        if tests.tie_sample == 0:
            return tau, _figure(None, n_cells, status="not_computed",
                                reason=f"{n_pairs:,} cell pairs > max_pairs {tests.max_pairs:,} "
                                       "(--max-pairs) and tie_sample = 0 (--tie-sample); see acc_eq.item")
        # the threshold from a seeded sample of pairs; the accuracy at it over every pair, exactly
        metric = data.metrics[k]
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
            [int(seed), zlib.crc32(name.encode()), zlib.crc32(metric.encode())])))
        eps = tie_threshold_sampled(h, m, *sample_pairs(n_cells, int(tests.tie_sample), rng))
        acc = _acc_eq_at_cells(data, item_cache, k, ranks[0], eps)
        return tau, _figure(acc, n_cells, epsilon=eps, calibration_pairs=int(tests.tie_sample),
                            note=f"tie threshold calibrated on a seeded sample of {int(tests.tie_sample):,} of "
                                 f"the {n_pairs:,} cell pairs (more than --max-pairs; --tie-sample); accuracy "
                                 "exact at it")

    heavy = [] if n_cells < 2 or h_const else [
        k for k in range(len(data.metrics)) if not bool(data.M[k, ii, ss].max() == data.M[k, ii, ss].min())]
    points: dict[int, tuple[float, dict[str, Any]]] = {}
    if heavy:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=max(1, min(int(item_cache.get("threads", 1)), len(heavy)))) as pool:
            points = dict(zip(heavy, pool.map(none_point, heavy)))
    for k, metric in enumerate(data.metrics):
        f: dict[str, dict[str, Any]] = {}
        m = data.M[k, ii, ss]
        m_const = n_cells >= 1 and bool(m.max() == m.min())
        # --- no grouping
        why = ("no scored cell in this bin" if n_cells == 0 else "fewer than 2 scored cells in this bin"
               if n_cells < 2 else "human scores are constant in this bin" if h_const
               else "the metric is constant in this bin" if m_const else None)
        mz = _zscore(m) if n_cells else m
        if why:
            for st in SEG_NONE:
                f[st] = _figure(None, n_cells, status="undefined", reason=why)
        else:
            r = float(_pearson_from_sums(float(n_cells), hz.sum(), (hz * hz).sum(), mz.sum(), (mz * mz).sum(),
                                         (hz * mz).sum()))
            f["pearson.none"] = _figure(r, n_cells)
            f["tau_b.none"] = _figure(points[k][0], n_cells)
            f["acc_eq.none"] = points[k][1]
        if n_cells and shared is not None:
            sl = add_block(np.stack([per_doc(mz, doc_c), per_doc(mz * mz, doc_c), per_doc(hz * mz, doc_c)], 1))
            if not why:
                readers.append((metric, "pearson.none",
                                lambda R, a=shared, b=sl: _pearson_from_sums(R[:, a][:, 0], R[:, a][:, 1],
                                                                             R[:, a][:, 2], R[:, b][:, 0],
                                                                             R[:, b][:, 1], R[:, b][:, 2])))
        # --- grouped by item
        pr = item_cache["pearson"][k][cell_items]
        tb = item_cache["tau"][k][cell_items]
        P = item_cache["P"][cell_items]
        rows = P > 0
        R_items = int(rows.sum())
        # acc_eq.item: one epsilon for the bin, maximising the mean of the per-item accuracies
        accv = np.full(cell_items.size, np.nan)
        eps = 0.0
        if R_items:
            con0, tie0 = item_cache["con0"][k], item_cache["tie0"][k]
            eps, flip_all = calib[k]  # (_item_calibration: every bin's threshold in one pass)
            flip = flip_all[cell_items]
            with np.errstate(invalid="ignore", divide="ignore"):
                accv = np.where(rows, (con0[cell_items] + tie0[cell_items] + flip) / np.maximum(P, 1), np.nan)
        doc_i = data.item_doc[cell_items]
        for st, vals, extra in (("pearson.item", pr, {}), ("tau_b.item", tb, {}), ("acc_eq.item", accv,
                                                                                   {"epsilon": eps})):
            ok = ~np.isnan(vals)
            n_ok = int(ok.sum())
            if cell_items.size == 0:
                f[st] = _figure(None, 0, status="undefined", reason="no scored segment in this bin")
            elif n_ok == 0:
                reason = ("no segment with 2+ scored systems in this bin" if R_items == 0 else
                          "undefined in every segment of the bin (constant human or metric scores within each)")
                f[st] = _figure(None, 0, status="undefined", reason=reason, n_undefined_items=int(R_items))
            elif h_const:  # every pair a human tie: acc_eq.item would be 1 for any metric (all ties at a large epsilon)
                f[st] = _figure(None, n_ok, status="undefined", reason="human scores are constant in this bin: every "
                                "pair is a human tie, so any metric would score 1", n_undefined_items=int(R_items - n_ok))
            else:
                f[st] = _figure(float(vals[ok].mean()), n_ok, n_undefined_items=int(R_items - n_ok), **extra)
            sums = np.stack([per_doc(np.where(ok, vals, 0.0), doc_i), per_doc(ok.astype(np.float64), doc_i)], 1)
            sl = add_block(sums)
            if n_ok and f[st]["status"] == "ok":
                readers.append((metric, st, lambda R, s=sl: _ratio(R[:, s][:, 0], R[:, s][:, 1])))
            perm_cols.append(sums)
            perm_layout.setdefault(metric, {})[st] = slice(sum(c.shape[1] for c in perm_cols) - 2,
                                                           sum(c.shape[1] for c in perm_cols))
        if n_cells:
            pn = np.stack([per_doc(mz, doc_c), per_doc(mz * mz, doc_c), per_doc(hz * mz, doc_c)], 1)
            perm_cols.append(pn)
            perm_layout[metric]["pearson.none"] = slice(sum(c.shape[1] for c in perm_cols) - 3,
                                                        sum(c.shape[1] for c in perm_cols))
        figures[metric] = f
    # --- system level
    spa = _system_level(data, v, ii, ss, doc_c, figures, add_block, readers, tests, seed, name)
    perm["cols"] = np.concatenate(perm_cols, axis=1) if perm_cols else np.zeros((D, 0))
    perm["layout"] = perm_layout
    perm["shared"] = (np.array([n_cells, hz.sum(), (hz * hz).sum()]) if n_cells else None)
    cell = _Cell(name, low, high, items, figures, blocks, readers, perm, spa)
    cell.counts = {"n_segments": int(cell_items.size), "n_segments_scored": int(np.unique(ii).size),  # type: ignore[attr-defined]
                   "n_documents": n_docs_cell, "n_cells": int(n_cells),
                   "n_human_missing": int((data.human_missing & items[:, None]).sum())}
    return cell


def _overall_system_scores(cell: _Cell, data: _Data, human: str, given: SystemScores, warnings: list[str]) -> None:
    """``overall``'s ``pairwise_accuracy.sys`` from given system-level scores (mt-metrics-eval: the
    ``.sys.score`` files): over the systems of the score table whose human and metric system scores are
    both given (not None), as ``stats.Agreement``; the replicate reader is dropped (fixed scores)."""
    if not isinstance(given, SystemScores):
        raise DDPUsageError(f"meta_evaluate(system_scores=...) must be a SystemScores, got {type(given).__name__}",
                            code="D882")
    missing = [n for n in (human, *data.metrics) if n not in given.scores]
    if missing:
        raise DDPUsageError(f"system scores: none given for {', '.join(missing[:5])}; with --system-scores files "
                            "every metric and the human score need a .sys.score file (or use --system-scores cells)",
                            code="D882")
    hs_all = given.scores[human]
    extra = sorted(set(hs_all) - set(data.systems))
    if extra:
        warnings.append(f"system scores of {len(extra)} system(s) without segment scores are not used "
                        f"({', '.join(extra[:5])})")
    cell.readers = [r for r in cell.readers if r[1] != "pairwise_accuracy.sys"]
    for metric in data.metrics:
        ms_all = given.scores[metric]
        use = [s for s in data.systems if hs_all.get(s) is not None and ms_all.get(s) is not None]
        f = cell.figures[metric]
        cells_value = f["pairwise_accuracy.sys"]["value"]
        src = {"system_scores": "files", "value_cell_means": cells_value, "systems_used": use}
        if len(use) < 2:
            f["pairwise_accuracy.sys"] = _figure(None, len(use), status="undefined",
                                                 reason="fewer than 2 systems with both system-level scores", **src)
            continue
        hs = np.array([hs_all[s] for s in use], dtype=np.float64)
        ms = np.array([ms_all[s] for s in use], dtype=np.float64)
        f["pairwise_accuracy.sys"] = _figure(float(pairwise_accuracy(hs, ms)), len(use), **src)


def _ratio(s: Any, n: Any) -> Any:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, s / n, np.nan)


def pairwise_accuracy(hs: npt.ArrayLike, ms: npt.ArrayLike) -> Any:
    """Share of system pairs with ``sign(dh) == sign(dm)`` (mt-metrics-eval ``stats.Agreement``) along the
    last axis (systems): ``hs``, ``ms`` shape (..., n_sys) system scores; NaN entries (a system without
    cells) leave their pairs out. Returns shape (...)."""
    hs, ms = np.asarray(hs, dtype=np.float64), np.asarray(ms, dtype=np.float64)
    n = hs.shape[-1]
    iu, ju = np.triu_indices(n, 1)
    dh = np.sign(hs[..., iu] - hs[..., ju])
    dm = np.sign(ms[..., iu] - ms[..., ju])
    ok = ~(np.isnan(dh) | np.isnan(dm))
    agree = (dh == dm) & ok
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok.sum(-1) > 0, agree.sum(-1) / ok.sum(-1), np.nan)


def _keep_bits(bitgen: np.random.PCG64, n_trials: int, n_units: int) -> np.ndarray:
    """(n_trials, n_units) bool: unit u kept in trial t = bit u%64 of word t*W + u//64 (W = ceil(n/64))."""
    words = (n_units + 63) // 64
    raw = bitgen.random_raw(n_trials * words).reshape(n_trials, words)
    bits = np.unpackbits(raw.astype("<u8").view(np.uint8), axis=1, bitorder="little")
    return bits[:, :n_units].astype(bool)


def pairwise_p_values(scores: npt.ArrayLike, signs: npt.ArrayLike) -> np.ndarray:
    """Thompson et al.'s paired permutation p-values: ``scores`` (n_units, n_sys) -- or (n_units, G, n_sys)
    for G score sets at once (one matrix product) -- and ``signs`` (n_trials, n_units) of +1 (keep) / -1
    (swap). Entry [i, j] (i < j) = share of trials whose permuted difference ``(signs @ scores)[:, i] -
    (signs @ scores)[:, j]`` is >= the observed ``sum_i - sum_j``; NaN elsewhere. Shape (n_sys, n_sys)
    (or (G, n_sys, n_sys))."""
    sc = np.asarray(scores, dtype=np.float64)
    one = sc.ndim == 2
    if one:
        sc = sc[:, None, :]
    n_units, G, n = sc.shape
    tot = sc.sum(0)  # (G, n)
    part = (np.asarray(signs, dtype=np.float64) @ sc.reshape(n_units, G * n)).reshape(-1, G, n)
    iu, ju = np.triu_indices(n, 1)
    p = np.full((G, n, n), np.nan)
    p[:, iu, ju] = ((part[:, :, iu] - part[:, :, ju]) >= (tot[:, iu] - tot[:, ju])[None]).mean(0)
    return p[0] if one else p


def _system_level(data: _Data, v: np.ndarray, ii: np.ndarray, ss: np.ndarray, doc_c: np.ndarray,
                  figures: dict[str, Any], add_block: Any, readers: list[Any], tests: MetaTests, seed: int,
                  cell_name: str) -> dict[str, Any] | None:
    """System-level figures of one bin; returns SPA's inputs for its bootstrap (None: no SPA value)."""
    D, n_sys = data.n_docs, len(data.systems)
    key = doc_c * n_sys + ss
    cnt = np.bincount(key, minlength=D * n_sys).astype(np.float64).reshape(D, n_sys)
    hsum = np.bincount(key, weights=data.H[ii, ss], minlength=D * n_sys).reshape(D, n_sys)
    c_sl = add_block(cnt)
    h_sl = add_block(hsum)
    tot_c = cnt.sum(0)
    have = tot_c > 0
    n_have = int(have.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        hs = np.where(have, hsum.sum(0) / tot_c, np.nan)
    h_cells = data.H[ii, ss]
    h_const = h_cells.size >= 2 and bool(h_cells.max() == h_cells.min())  # no system ranking to agree with
    # SPA on the segments scored for every system present in the bin
    complete = None
    if n_have >= 2 and tests.spa_perm > 0:
        sel = v[:, have]
        complete = np.flatnonzero(sel.all(1) & sel.any(1))
    p_all = None
    spa_in = None
    if complete is not None and complete.size:
        bg = np.random.PCG64(seed).jumped(2)
        keep = _keep_bits(bg, tests.spa_perm, int(complete.size))
        stacked = np.concatenate([data.H[complete][:, None, have], data.M[:, complete][:, :, have].transpose(1, 0, 2)],
                                 axis=1)  # (n_complete, 1 + n_metrics, n_have)
        p_all = pairwise_p_values(stacked, np.where(keep, 1.0, -1.0))
        spa_in = {"scores": stacked, "doc": data.item_doc[complete], "keep": keep[:tests.spa_ci_perm]}
        # a score set that is constant on these segments ties every permuted difference, so all its p-values
        # are 1 in either orientation of a pair: SPA would then be fixed by the order of the system names
        # (1 when the names sort worst first, 0 when best first), not by the scores
        flat = stacked.transpose(1, 0, 2).reshape(stacked.shape[1], -1)
        const = flat.max(axis=1) == flat.min(axis=1)  # (1 + n_metrics,): human, then each metric
    for k, metric in enumerate(data.metrics):
        msum = np.bincount(key, weights=data.M[k, ii, ss], minlength=D * n_sys).reshape(D, n_sys)
        m_sl = add_block(msum)
        f = figures[metric]
        if n_have < 2:
            f["pairwise_accuracy.sys"] = _figure(None, n_have, status="undefined",
                                                 reason="fewer than 2 systems with scored cells in this bin")
            f["spa.sys"] = _figure(None, n_have, status="undefined",
                                   reason="fewer than 2 systems with scored cells in this bin")
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            ms = np.where(have, msum.sum(0) / tot_c, np.nan)
        if h_const:  # every human system score equal: the accuracy would only count the metric's own ties
            f["pairwise_accuracy.sys"] = _figure(None, n_have, status="undefined",
                                                 reason="human scores are constant in this bin: no system ranking "
                                                        "to agree with")
        else:
            f["pairwise_accuracy.sys"] = _figure(float(pairwise_accuracy(hs[have], ms[have])), n_have)
            readers.append((metric, "pairwise_accuracy.sys",
                            lambda R, c=c_sl, hh=h_sl, mm=m_sl: pairwise_accuracy(_ratio(R[:, hh], R[:, c]),
                                                                                   _ratio(R[:, mm], R[:, c]))))
        if tests.spa_perm == 0:
            f["spa.sys"] = _figure(None, n_have, status="not_computed", reason="spa_perm = 0 (--spa-perm)")
        elif p_all is None:
            f["spa.sys"] = _figure(None, n_have, status="undefined",
                                   reason="no segment of this bin is scored for every system")
        elif const[0] or const[k + 1]:
            who = "human scores are" if const[0] else "the metric is"
            f["spa.sys"] = _figure(None, n_have, status="undefined",
                                   reason=f"{who} constant on the segments scored for every system: every "
                                          "permutation ties, so each p-value is 1 and SPA would only reflect "
                                          "the order of the system names")
        else:
            iu, ju = np.triu_indices(n_have, 1)
            spa = 1.0 - float(np.mean(np.abs(p_all[0][iu, ju] - p_all[k + 1][iu, ju])))
            f["spa.sys"] = _figure(spa, n_have, n_segments=int(complete.size))  # type: ignore[union-attr]
    return spa_in


def _dense_ranks(values: np.ndarray) -> np.ndarray:
    """1-based dense ranks (equal values share a rank)."""
    return np.unique(values, return_inverse=True)[1].astype(np.int64).reshape(values.shape) + 1


def _item_cache(data: _Data, threads: int = 1) -> dict[str, Any]:
    """What does not depend on the bin, per metric: each segment's Pearson, tau-b, pairs (``P``), concordant
    pairs and pairs tied in both at epsilon 0 (``con0``, ``tie0``), the tie-calibration entries sorted by
    ``|dm|`` once (a bin takes its entries in the same order), and the dense ranks of the scored cells
    for the no-grouping tau-b (``h_order``: the flat cell indices sorted by human rank; a bin keeps its
    cells in that order)."""
    n_sys = len(data.systems)
    flat = np.flatnonzero(data.valid.ravel())
    h_rank = np.zeros(data.valid.size, dtype=np.int64)
    h_rank[flat] = _dense_ranks(data.H.ravel()[flat])
    cache: dict[str, Any] = {"pearson": [], "tau": [], "con0": [], "tie0": [], "entries": [], "m_rank": [],
                             "h_rank": h_rank, "h_order": flat[np.argsort(h_rank[flat], kind="stable")],
                             "n_sys": n_sys, "flat": flat, "item_doc": data.item_doc, "m_order": {},
                             "threads": max(1, threads)}
    def one(k: int, stats: Any) -> tuple[Any, ...]:
        st = stats.result()
        e_item, e_adm, e_sign = st["entries"]  # type: ignore[misc]
        # sorted by |dm| (stable, radix: numpy's argsort(kind="stable")), the item and sign carried along
        ent = (np.empty_like(e_item), np.empty_like(e_adm), np.empty_like(e_sign))
        load("stats_meta").sort_entries(e_item, e_adm, e_sign, *ent)
        m_rank = np.zeros(data.valid.size, dtype=np.int64)
        m_rank[flat] = _dense_ranks(data.M[k].ravel()[flat])
        return st, ent, m_rank

    # on threads, per metric in two tasks (the per-segment kernel, then the sort of its entries and the
    # ranks: 5 metrics on 2 threads leave less idle than 5 whole tasks): the kernel and numpy's sorts
    # release the GIL; results are per metric, so they do not depend on the number of threads. Every
    # first task is queued before any second one, so a second one waits only on a running or finished first.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(data.metrics)))) as pool:
        stats = [pool.submit(item_statistics, data.H, data.M[k], data.valid) for k in range(len(data.metrics))]
        done = [f.result() for f in [pool.submit(one, k, stats[k]) for k in range(len(data.metrics))]]
    for st, ent, m_rank in done:
        cache["P"] = st["pairs"]
        for key, name in (("pearson", "pearson"), ("tau", "tau_b"), ("con0", "con0"), ("tie0", "tie0")):
            cache[key].append(st[name])
        cache["entries"].append(ent)
        cache["m_rank"].append(m_rank)
    return cache


def _cell_ranks(data: _Data, cache: dict[str, Any], items: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flat cell indices sorted by human rank, human ranks, documents) of one bin's scored cells."""
    order = cache["h_order"]
    sel = order[items[order // cache["n_sys"]]]
    return sel, np.ascontiguousarray(cache["h_rank"][sel]), np.ascontiguousarray(data.item_doc[sel // cache["n_sys"]])


def _m_order(cache: dict[str, Any], k: int) -> np.ndarray:
    """Every scored cell (flat index) in metric ``k``'s order, ascending, equal scores in flat order: one sort
    per metric (a bin keeps its cells in this order)."""
    if k not in cache["m_order"]:
        flat = cache["flat"]
        cache["m_order"][k] = flat[np.argsort(cache["m_rank"][k][flat], kind="stable")]
    return cache["m_order"][k]


def _acc_eq_at_cells(data: _Data, cache: dict[str, Any], k: int, sel: np.ndarray, epsilon: float,
                     w: np.ndarray | None = None, threads: int = 1) -> Any:
    """acc23 of metric ``k`` at the tie threshold ``epsilon`` over every pair of the cells ``sel`` (flat
    indices), exactly: the native O(n log n) count of :func:`acc_eq_replicates`, on the metric order of
    :func:`_m_order` (no sort of the bin's own). With ``w`` (n_rep, D) document weights: every replicate's
    value, shape (n_rep,); without: the point value (every document once), a float."""
    order = _m_order(cache, k)
    in_bin = np.zeros(data.valid.size, dtype=bool)
    in_bin[sel] = True
    a = order[in_bin[order]]
    hr = cache["h_rank"][a]
    # (human rank, metric) order: a stable sort of the metric-ordered cells by human rank (radix for <= 16 bits)
    b = a[np.argsort(hr.astype(np.uint16) if hr.max() < 65_536 else hr, kind="stable")]
    m = data.M[k].ravel()
    doc = cache["item_doc"]
    n_sys = cache["n_sys"]
    weights = np.ones((1, data.n_docs)) if w is None else np.ascontiguousarray(w, dtype=np.float64)
    out = np.empty(weights.shape[0])
    load("stats_meta").acc_eq_weighted_reps(
        np.ascontiguousarray(m[a]), np.ascontiguousarray(hr), np.ascontiguousarray(doc[a // n_sys]),
        np.ascontiguousarray(m[b]), np.ascontiguousarray(cache["h_rank"][b]), np.ascontiguousarray(doc[b // n_sys]),
        weights, int(cache["h_rank"].max()), float(epsilon), out, threads)
    return float(out[0]) if w is None else out


def _tau_b_reps(cache: dict[str, Any], k: int, sel: np.ndarray, hr: np.ndarray, doc: np.ndarray,
                w: np.ndarray, threads: int) -> np.ndarray:
    """tau-b of the bin's cells for every row of document weights ``w`` (n_rep, D): the native kernel.

    ``sel``, ``hr``, ``doc`` (n_cells,): the bin's cells sorted by human rank, their human ranks and
    documents. The kernel walks the cells in the order of one ranking and keeps a Fenwick tree over the
    other; tau-b is symmetric and the kernel's result is the same bits either way, so the ranking with
    fewer distinct values (human scores on a few levels, as MQM and ESA are) gets the tree: a tree of ~30
    entries instead of one per distinct metric score, which also lets the kernel walk 32 replicates at once
    (3.6x faster per replicate at 10 k cells, 14.8x at 400 k; benchmarks/tau_kernel_table.py).
    """
    m_rank = cache["m_rank"][k]
    mr = np.ascontiguousarray(m_rank[sel])
    out = np.empty(w.shape[0])
    ww = np.ascontiguousarray(w, dtype=np.float64)
    n_h, n_m = (int(hr.max()), int(mr.max())) if mr.size else (1, 1)
    kernel = load("stats_meta").tau_b_weighted_reps
    if n_h < n_m:  # walk in metric order, the tree over the human ranks
        order = _m_order(cache, k)
        in_bin = np.zeros(m_rank.size, dtype=bool)
        in_bin[sel] = True
        sel_m = order[in_bin[order]]
        kernel(np.ascontiguousarray(m_rank[sel_m]), np.ascontiguousarray(cache["h_rank"][sel_m]),
               np.ascontiguousarray(cache["item_doc"][sel_m // cache["n_sys"]]), ww, n_h, out, threads)
    else:
        kernel(hr, mr, doc, ww, n_m, out, threads)
    return out


#: ``--ci-max-points auto``: the largest bin (cells) whose ``tau_b.none`` is bootstrapped when one of the two
#: rankings has at most ``TAU_FAST_RANKS`` distinct values in it (human scores on levels, as MQM, ESA and DA
#: on 0-100 are), and when both are finer than that. The first walks up to 32 replicates at once over a
#: small tree: 0.4 s for 400,000 cells x 1,000 replicates per metric on 2 threads (2026-12-04); the second
#: one replicate at a time over a tree of one entry per distinct score, ~12x that per cell at 400,000.
TAU_CI_MAX_POINTS_FAST = 500_000
TAU_CI_MAX_POINTS_FINE = 10_000
#: the same limit as the kernel's blocked walk (``stats_meta.BLOCK_MAX_RANKS``; a test checks they agree)
TAU_FAST_RANKS = 16_384


def tau_ci_cap(tests: MetaTests, tree_ranks: int) -> int:
    """Largest bin (cells) whose ``tau_b.none`` is bootstrapped, for a bin whose coarser ranking has
    ``tree_ranks`` distinct values: ``tests.ci_max_points`` when given, else ``TAU_CI_MAX_POINTS_FAST``
    up to ``TAU_FAST_RANKS`` and ``TAU_CI_MAX_POINTS_FINE`` above."""
    if tests.ci_max_points is not None:
        return int(tests.ci_max_points)
    return TAU_CI_MAX_POINTS_FAST if tree_ranks <= TAU_FAST_RANKS else TAU_CI_MAX_POINTS_FINE


def _tau_ci_reason(tests: MetaTests, cap: int) -> str:
    if tests.ci_max_points is not None:
        return f"more than ci_max_points {cap:,} cells (--ci-max-points)"
    fine = ("" if cap == TAU_CI_MAX_POINTS_FAST else
            f"; both the human and the metric take more than {TAU_FAST_RANKS:,} distinct values here")
    return f"more than {cap:,} cells (--ci-max-points auto{fine})"


#: ``acc_eq.none`` rides on ``tau_b.none``'s walk (``stats_meta.tau_acc_weighted_reps``: both from one walk in
#: metric order, the same bits as the two kernels) when the mean number of cells behind a cell within the tie
#: threshold (its window, ties included) is at most this. At 400,000 cells (one thread, 2026-12-07) the joint
#: walk costs 0.87 ms per replicate against 0.84 for tau-b alone with empty windows, and 2.5 with windows of
#: 4 cells against 0.8 + 1.0 for the two kernels: windows are scanned cell by cell.
FUSED_MAX_WINDOW = 1.0


def _mean_window(m_sorted: np.ndarray, epsilon: float) -> float:
    """Mean over the cells (metric scores ascending, shape (n,)) of how many earlier cells lie within
    ``epsilon`` of it: the joint walk's extra work per cell (an estimate: the kernel applies its own test)."""
    if m_sorted.size == 0:
        return 0.0
    lo = np.searchsorted(m_sorted, m_sorted - epsilon, side="left")
    return float((np.arange(m_sorted.size) - lo).mean())


def _tau_acc_reps(data: _Data, cache: dict[str, Any], k: int, sel: np.ndarray, w: np.ndarray, epsilon: float,
                  threads: int) -> tuple[np.ndarray, np.ndarray] | None:
    """tau-b and acc23 at ``epsilon`` of the bin's cells ``sel`` for every row of ``w`` (n_rep, D) from one
    walk in metric order (the tree over the human's ranks), or None when the joint walk does not apply (the
    human has as many distinct values as the metric, so tau-b walks the other way; windows longer than
    :data:`FUSED_MAX_WINDOW`; weights the 32-bit walk cannot hold exactly)."""
    m_rank = cache["m_rank"][k]
    if sel.size < 2 or int(cache["h_rank"][sel].max()) >= int(m_rank[sel].max()):
        return None
    order = _m_order(cache, k)
    in_bin = np.zeros(m_rank.size, dtype=bool)
    in_bin[sel] = True
    sel_m = order[in_bin[order]]
    m = np.ascontiguousarray(data.M[k].ravel()[sel_m])
    if _mean_window(m, epsilon) > FUSED_MAX_WINDOW:
        return None
    tau, acc = np.empty(w.shape[0]), np.empty(w.shape[0])
    hr = np.ascontiguousarray(cache["h_rank"][sel_m])
    done = load("stats_meta").tau_acc_weighted_reps(
        np.ascontiguousarray(m_rank[sel_m]), hr, m, np.ascontiguousarray(cache["item_doc"][sel_m // cache["n_sys"]]),
        np.ascontiguousarray(w, dtype=np.float64), int(hr.max()), float(epsilon), tau, acc, threads)
    return (tau, acc) if done else None


#: ``--ci-max-points auto`` for ``acc_eq.none``: the largest bin (cells) it is bootstrapped in when the human
#: takes more than ``TAU_FAST_RANKS`` distinct values in it (up to that, ``TAU_CI_MAX_POINTS_FAST``, as
#: ``tau_b.none``). Each replicate is an O(n log n) count, 32 replicates per walk for up to 2,048 human ranks
#: (``stats_meta.acc_eq_weighted_reps``; one thread, human on ~26 levels, 32-bit trees with AVX2, 2026-12-07):
#: 0.8 ms per replicate at 400,000 cells, so 1,000 replicates cost about 0.8 CPU-s per metric there; with a
#: tree of one node per distinct human score it walks 8 replicates at a time, or one, and costs several times
#: that.
ACC_CI_MAX_POINTS = 50_000


def acc_ci_cap(tests: MetaTests, h_ranks: int) -> int:
    """Largest bin (cells) whose ``acc_eq.none`` is bootstrapped, for a bin whose human scores take ``h_ranks``
    distinct values: ``tests.ci_max_points`` when given, else ``TAU_CI_MAX_POINTS_FAST`` up to
    ``TAU_FAST_RANKS`` ranks and :data:`ACC_CI_MAX_POINTS` above. (Where the metric's cells within the tie
    threshold of each other are few, it rides on ``tau_b.none``'s walk at almost no cost:
    :data:`FUSED_MAX_WINDOW`.)"""
    if tests.ci_max_points is not None:
        return int(tests.ci_max_points)
    return TAU_CI_MAX_POINTS_FAST if h_ranks <= TAU_FAST_RANKS else ACC_CI_MAX_POINTS


def _acc_ci_reason(tests: MetaTests, cap: int) -> str:
    if tests.ci_max_points is not None:
        return f"more than ci_max_points {cap:,} cells (--ci-max-points)"
    fine = ("" if cap == TAU_CI_MAX_POINTS_FAST else
            f"; the human takes more than {TAU_FAST_RANKS:,} distinct values here")
    return f"more than {cap:,} cells (--ci-max-points auto for acc_eq.none{fine})"


def _bootstrap(cells: list[_Cell], data: _Data, n_boot: int, opts: ResampleOptions, tests: MetaTests,
               cache: dict[str, Any]) -> dict[tuple[str, str, str], np.ndarray]:
    """Replicates of every resampled statistic: {(cell, metric, stat): (n_boot,) values}."""
    if n_boot == 0:
        return {}
    mats = [np.concatenate(c.blocks, axis=1) if c.blocks else np.zeros((data.n_docs, 0)) for c in cells]
    widths = [m.shape[1] for m in mats]
    V = np.concatenate(mats, axis=1)
    sums = resample_sums(V, n_boot=n_boot, seed=opts.seed, threads=opts.threads, max_memory=opts.max_memory,
                         max_seconds=opts.max_seconds)
    reps: dict[tuple[str, str, str], np.ndarray] = {}
    start = 0
    for c, w in zip(cells, widths):
        R = sums[:, start:start + w]
        start += w
        for metric, stat, fn in c.readers:
            reps[(c.name, metric, stat)] = np.asarray(fn(R), dtype=np.float64).reshape(n_boot)
    # tau_b.none, acc_eq.none and spa.sys: kernels on the same draws (counts of each document per replicate)
    # tau_b.none and acc_eq.none: every (bin, metric) with its cap (tau_ci_cap, acc_ci_cap; the reason of a
    # bin above it: cache["ci_skip"])
    tau_jobs: list[tuple[_Cell, tuple[np.ndarray, np.ndarray, np.ndarray], list[int]]] = []
    cache["ci_skip"] = {}
    for c in cells:
        n_cells = c.counts["n_cells"]  # type: ignore[attr-defined]
        ok = [k for k, m in enumerate(data.metrics) if c.figures[m]["tau_b.none"]["status"] == "ok"]
        if n_cells < 2 or not ok:
            continue
        ranks = _cell_ranks(data, cache, c.items)
        n_h = int(ranks[1].max())
        todo = []
        for k in ok:
            cap = tau_ci_cap(tests, min(n_h, int(cache["m_rank"][k][ranks[0]].max())))
            if n_cells <= cap:
                todo.append(k)
            else:
                cache["ci_skip"][(c.name, data.metrics[k], "tau_b.none")] = _tau_ci_reason(tests, cap)
        if todo:
            tau_jobs.append((c, ranks, todo))
    acc_ok = {c.name: [m for m in data.metrics if c.figures[m]["acc_eq.none"]["status"] == "ok"] for c in cells}
    need_spa = [c for c in cells if c.spa is not None and tests.spa_ci_perm > 0
                and any(c.figures[m]["spa.sys"]["status"] == "ok" for m in data.metrics)]
    if not (tau_jobs or any(acc_ok.values()) or need_spa):
        return reps
    idx = resample_indices(n_boot, data.n_docs, opts.seed, max_memory=opts.max_memory)
    flat = (np.arange(n_boot, dtype=np.int64)[:, None] * data.n_docs + idx).ravel()
    w = np.bincount(flat, minlength=n_boot * data.n_docs).reshape(n_boot, data.n_docs).astype(np.float64)
    del idx, flat
    for c, ranks, todo in tau_jobs:
        for k in todo:
            metric = data.metrics[k]
            both = None
            if metric in acc_ok[c.name]:  # acc_eq.none on tau_b.none's walk where it can ride on it
                both = _tau_acc_reps(data, cache, k, ranks[0], w, c.figures[metric]["acc_eq.none"]["epsilon"],
                                     opts.kernel_threads)
            if both is not None:
                reps[(c.name, metric, "tau_b.none")], reps[(c.name, metric, "acc_eq.none")] = both
            else:
                reps[(c.name, metric, "tau_b.none")] = _tau_b_reps(cache, k, *ranks, w, opts.kernel_threads)
    for c in cells:
        todo_acc = [m for m in acc_ok[c.name] if (c.name, m, "acc_eq.none") not in reps]
        if not todo_acc:
            continue
        sel = _cell_ranks(data, cache, c.items)[0]
        acc_cap = acc_ci_cap(tests, int(np.unique(cache["h_rank"][sel]).size))
        if c.counts["n_cells"] > acc_cap:  # type: ignore[attr-defined]
            for m in todo_acc:
                cache["ci_skip"][(c.name, m, "acc_eq.none")] = _acc_ci_reason(tests, acc_cap)
            continue
        for k, metric in enumerate(data.metrics):
            if metric in todo_acc:
                reps[(c.name, metric, "acc_eq.none")] = _acc_eq_at_cells(
                    data, cache, k, sel, c.figures[metric]["acc_eq.none"]["epsilon"], w, opts.kernel_threads)
    for c in need_spa:
        spa = spa_replicates(c.spa["scores"], c.spa["doc"], c.spa["keep"], w,  # type: ignore[index]
                             threads=opts.kernel_threads)
        for k, metric in enumerate(data.metrics):
            if c.figures[metric]["spa.sys"]["status"] == "ok":
                reps[(c.name, metric, "spa.sys")] = spa[:, k]
    return reps


def acc_eq_replicates(h: npt.ArrayLike, m: npt.ArrayLike, doc: npt.ArrayLike, w: npt.ArrayLike, epsilon: float,
                      *, threads: int = 0) -> np.ndarray:
    """``acc23`` at the fixed tie threshold ``epsilon`` of every document-bootstrap replicate (native kernel,
    O(n log n) each): ``h``, ``m`` the cells' human and metric scores and ``doc`` their document codes (shape
    (n,)), ``w`` (n_rep, D) how often each document is drawn in each replicate (a cell counts ``w[r, doc]``
    times; its copies are pairs tied in both). Returns shape (n_rep,), NaN for a replicate of < 2 cells."""
    h = np.asarray(h, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    doc = np.asarray(doc, dtype=np.int64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    out = np.empty(w.shape[0])
    if h.size == 0:
        out[:] = np.nan
        return out
    hr = _dense_ranks(h)
    a = np.argsort(m, kind="stable")
    b = np.lexsort((m, hr))
    load("stats_meta").acc_eq_weighted_reps(np.ascontiguousarray(m[a]), np.ascontiguousarray(hr[a]),
                                            np.ascontiguousarray(doc[a]), np.ascontiguousarray(m[b]),
                                            np.ascontiguousarray(hr[b]), np.ascontiguousarray(doc[b]), w,
                                            int(hr.max()), float(epsilon), out, int(threads))
    return out


#: bytes of one block of the SPA bootstrap's permuted sums
_SPA_BLOCK_BYTES = 64 << 20


def spa_replicates(scores: npt.ArrayLike, doc: npt.ArrayLike, keep: npt.ArrayLike, w: npt.ArrayLike, *,
                   threads: int = 0) -> np.ndarray:
    """Soft pairwise accuracy of every document-bootstrap replicate, with the permutation masks held fixed.

    ``scores`` (n_units, G, n_sys): per complete segment the human (index 0) and the G - 1 metric scores of
    each system; ``doc`` (n_units,) the segment's document code, ascending; ``keep`` (T, n_units) the masks
    of T trials (True = keep, False = swap: the first T masks of the point value); ``w`` (n_rep, D) how
    often each document is drawn. In replicate r a segment counts ``w[r, doc]`` times and its copies share
    its coin, so trial t's permuted sum of system i is ``sum_u w_u s_tu x_ui``; p_ij = share of the T trials
    whose permuted difference i - j is >= the replicate's observed one (as :func:`pairwise_p_values`), and
    SPA_k = 1 - mean over pairs |p_human - p_metric_k|. With every weight 1 and T = spa_perm it is the
    point value. Returns (n_rep, G - 1); NaN where the replicate draws no complete segment."""
    X = np.asarray(scores, dtype=np.float64)
    n_u, G, n_sys = X.shape
    doc = np.asarray(doc, dtype=np.int64)
    keep = np.asarray(keep, dtype=bool)
    w = np.asarray(w, dtype=np.float64)
    n_rep, T = w.shape[0], keep.shape[0]
    out = np.full((n_rep, G - 1), np.nan)
    if n_u == 0 or T == 0 or n_sys < 2:
        return out
    GS = G * n_sys
    Xf = X.reshape(n_u, GS)
    starts = np.flatnonzero(np.r_[True, doc[1:] != doc[:-1]])
    ud = doc[starts]
    Xdoc = np.add.reduceat(Xf, starts, axis=0)  # (Dn, GS)
    Dn = ud.size
    # per-document permuted sums of every trial: Z[d, t] = sum over d's segments of +-x (native, unit by unit)
    Z = np.empty((Dn, T, GS))
    slot = np.cumsum(np.r_[False, doc[1:] != doc[:-1]]).astype(np.int64)
    load("stats_meta").signed_doc_sums(np.ascontiguousarray(Xf), slot, np.ascontiguousarray(keep, dtype=np.uint8),
                                       Z, threads)
    Z = Z.reshape(Dn, T * GS)
    Wn = np.ascontiguousarray(w[:, ud])
    present = Wn.sum(1) > 0
    kern = load("stats_meta").spa_from_sums
    rb = max(1, _SPA_BLOCK_BYTES // (8 * T * GS))
    for r0 in range(0, n_rep, rb):
        r1 = min(n_rep, r0 + rb)
        tot = np.ascontiguousarray(Wn[r0:r1] @ Xdoc)  # (rb, GS) observed sums of the replicate
        P = np.ascontiguousarray((Wn[r0:r1] @ Z).reshape(-1, T, GS))  # (rb, T, GS) permuted sums
        kern(P, tot, G, out[r0:r1], threads)
    out[~present] = np.nan
    return out


def _outside_its_interval(fig: dict[str, Any] | None) -> bool:
    """A figure whose value lies outside its own (ok) interval."""
    if not fig or fig.get("ci_status") != "ok" or fig.get("value") is None:
        return False
    return bool(fig["value"] < fig["ci_low"] - 1e-12 or fig["value"] > fig["ci_high"] + 1e-12)


def _apply_cis(cells: list[_Cell], reps: dict[tuple[str, str, str], np.ndarray], n_boot: int,
               tests: MetaTests, ci_skip: dict[tuple[str, str, str], str] | None = None) -> None:
    for c in cells:
        for metric, figs in c.figures.items():
            for stat, fig in figs.items():
                if fig["status"] != "ok":
                    fig["ci_status"] = "not_computed"
                    continue
                if fig.get("system_scores") == "files":
                    fig["ci_status"] = "not_computed"
                    fig["ci_reason"] = "system scores given (.sys.score files): fixed, not resampled"
                    continue
                r = reps.get((c.name, metric, stat))
                if n_boot == 0:
                    fig["ci_status"], fig["ci_reason"] = "not_computed", "n_boot = 0 (--n-boot)"
                elif r is None:
                    fig["ci_status"] = "not_computed"
                    fig["ci_reason"] = (ci_skip or {}).get(
                        (c.name, metric, stat), "spa_ci_perm = 0 (--spa-ci-perm)" if stat == "spa.sys" else "not resampled")
                elif c.counts["n_documents"] < 2:  # type: ignore[attr-defined]
                    fig["ci_status"], fig["ci_reason"] = "undefined", "one document in this bin"
                else:
                    ok = ~np.isnan(r)
                    if ok.sum() == 0:
                        fig["ci_status"], fig["ci_reason"] = "undefined", "undefined in every replicate"
                        continue
                    lo, hi = np.percentile(r[ok], [2.5, 97.5])
                    fig["ci_low"], fig["ci_high"], fig["ci_status"] = float(lo), float(hi), "ok"
                    fig["n_boot_undefined"] = int((~ok).sum())


def _perm_test(cells: list[_Cell], data: _Data, tests: MetaTests, opts: ResampleOptions) -> list[dict[str, Any]]:
    """Test (a): every metric pair within every bin, document swaps (see module docstring)."""
    K = len(data.metrics)
    if tests.n_perm == 0 or tests.pairs == "none" or K < 2:
        return []
    D = data.n_docs
    a_idx, b_idx = np.triu_indices(K, 1)
    Y = np.concatenate([c.perm["cols"] for c in cells], axis=1)
    offs = np.cumsum([0] + [c.perm["cols"].shape[1] for c in cells])
    bg = np.random.PCG64(opts.seed).jumped(1)
    budget = opts.budget("ddp meta permutation test", flag="--n-perm")
    budget.start()
    exceed = {}  # (cell index, stat) -> counts (n_pairs,)
    obs = {}
    plan = []
    for ci, c in enumerate(cells):
        lay = c.perm["layout"]
        for st in PERM_STATS:
            have = [st in lay.get(m, {}) for m in data.metrics]
            if not all(have):
                continue
            sl = [lay[m][st] for m in data.metrics]
            cols = np.array([[s.start + offs[ci] + j for j in range(s.stop - s.start)] for s in sl])  # (K, w)
            tot = Y[:, cols].sum(0)  # (K, w)
            vals = np.array([c.figures[m][st]["value"] if c.figures[m][st]["status"] == "ok" else np.nan
                             for m in data.metrics])
            delta = vals[a_idx] - vals[b_idx]
            plan.append((ci, st, cols, tot))
            obs[(ci, st)] = delta
            exceed[(ci, st)] = np.zeros(a_idx.size, dtype=np.int64)
    if not plan:
        return []
    done = 0
    while done < tests.n_perm:
        tb = min(_PERM_BLOCK, tests.n_perm - done)
        keep = _keep_bits(bg, tb, D).astype(np.float64)
        Q = keep @ Y  # (tb, columns)
        for ci, st, cols, tot in plan:
            q = Q[:, cols]  # (tb, K, w)
            qa = tot[b_idx][None] + q[:, a_idx] - q[:, b_idx]  # A slot sums (tb, pairs, w)
            qb = tot[a_idx][None] + tot[b_idx][None] - qa
            if st == "pearson.none":
                n, sh, shh = cells[ci].perm["shared"]
                sa = _pearson_from_sums(n, sh, shh, qa[..., 0], qa[..., 1], qa[..., 2])
                sb = _pearson_from_sums(n, sh, shh, qb[..., 0], qb[..., 1], qb[..., 2])
            else:
                sa, sb = _ratio(qa[..., 0], qa[..., 1]), _ratio(qb[..., 0], qb[..., 1])
            d = obs[(ci, st)]
            null = np.sign(d)[None] * (sa - sb)
            with np.errstate(invalid="ignore"):
                exceed[(ci, st)] += (null >= np.abs(d)[None] - 1e-12).sum(0)
        done += tb
        budget.check_time(done, tests.n_perm)
    out: list[dict[str, Any]] = []
    for ci, st, _, _ in plan:
        d = obs[(ci, st)]
        p = exceed[(ci, st)] / tests.n_perm
        p = np.where(np.isnan(d), np.nan, p)
        adj = adjust_pvalues(p, "holm")
        c = cells[ci]
        for j in range(a_idx.size):
            a, b = data.metrics[a_idx[j]], data.metrics[b_idx[j]]
            ok = not math.isnan(d[j])
            out.append({"bin": c.name, "low": c.low, "stat": st, "a": a, "b": b,
                        "delta": float(d[j]) if ok else None,
                        "better": (a if d[j] > 0 else b if d[j] < 0 else None) if ok else None,
                        "p": float(p[j]) if ok else None, "p_holm": float(adj[j]) if ok else None,
                        "significant": bool(ok and adj[j] < tests.alpha),
                        "status": "ok" if ok else "undefined",
                        "reason": None if ok else "the statistic is undefined for one of the two metrics"})
    return out


def _bin_test(cells: list[_Cell], reps: dict[tuple[str, str, str], np.ndarray], data: _Data, tests: MetaTests,
              skipped: dict[tuple[str, str, str], str] | None = None) -> list[dict[str, Any]]:
    """Test (b): every bin k >= 1 against the first bin, per metric and statistic (bootstrap); ``skipped``:
    the reasons of the intervals left out by a cap, {(bin, metric, stat): reason}."""
    skipped = skipped or {}
    bins = [c for c in cells if c.name != "overall"]
    if len(bins) < 2 or not reps:
        return []
    first = bins[0]
    out: list[dict[str, Any]] = []
    for c in bins[1:]:
        for st in STATS:
            rows = []
            for metric in data.metrics:
                ra, rb = reps.get((c.name, metric, st)), reps.get((first.name, metric, st))
                fa, fb = c.figures[metric][st], first.figures[metric][st]
                row = {"bin": c.name, "low": c.low, "first_bin": first.name, "metric": metric, "stat": st,
                       "diff": None, "ci_low": None, "ci_high": None, "p_below": None, "p_below_holm": None,
                       "significant_below": False, "status": "ok", "reason": None}
                if ra is None or rb is None or fa["status"] != "ok" or fb["status"] != "ok":
                    if ra is None and rb is None and fa["status"] == "ok" and st == "spa.sys":
                        continue
                    row["status"] = "undefined"
                    skip = (skipped.get((c.name, metric, st)) or skipped.get((first.name, metric, st))
                            if ra is None or rb is None else None)
                    row["reason"] = ("undefined in this bin" if fa["status"] != "ok" else
                                     "undefined in the first bin" if fb["status"] != "ok" else
                                     f"no interval: {skip}" if skip else "not resampled")
                    rows.append(row)
                    continue
                diff = ra - rb
                ok = ~np.isnan(diff)
                if ok.sum() == 0 or c.counts["n_documents"] < 2 or first.counts["n_documents"] < 2:  # type: ignore[attr-defined]
                    row["status"], row["reason"] = "undefined", "too few documents to resample"
                    rows.append(row)
                    continue
                row["diff"] = float(fa["value"] - fb["value"])
                row["ci_low"], row["ci_high"] = (float(x) for x in np.percentile(diff[ok], [2.5, 97.5]))
                row["p_below"] = float((diff[ok] >= 0).mean())
                rows.append(row)
            p = np.array([r["p_below"] if r["p_below"] is not None else np.nan for r in rows], dtype=np.float64)
            if p.size:
                adj = adjust_pvalues(p, "holm")
                for r, a in zip(rows, adj):
                    if not math.isnan(a):
                        r["p_below_holm"] = float(a)
                        r["significant_below"] = bool(a < tests.alpha)
            out.extend(rows)
    return out


def meta_evaluate(profile: Any, scores: Any, *, human_col: str = "human", score_col: str | Sequence[str] | None = None,
                  columns: MetaColumns | None = None, bins: str | Sequence[float] = DEFAULT_BINS,
                  ddp_col: str = S.DDP, strict_join: bool = False, profile_signature: dict[str, Any] | None = None,
                  profile_name: str = "<profile>", scores_name: str = "<scores>",
                  options: ResampleOptions | None = None, tests: MetaTests | None = None,
                  system_scores: SystemScores | None = None) -> MetaResult:
    """Metric-human agreement per DDP bin and overall (see the module docstring for every definition).

    Parameters
    ----------
    profile
        ``ddp profile`` segment table (polars DataFrame/LazyFrame): document, segment and ``ddp_col``
        columns (names from ``profile_signature``).
    scores
        One row per (document, segment, system): the human score column ``human_col`` and the metric
        columns ``score_col`` (``--score-col``; default: every other numeric column); or the long form of
        ``columns`` (``score_col`` is then its one value column, default ``score``).
    columns
        :class:`MetaColumns` (document, segment, system names; long form); its ``human`` is replaced by
        ``human_col``. Default: the profile's document and segment names (``profile_signature["columns"]``,
        else ``document_id``/``segment_id``) and ``system``, as ``ddp meta`` without ``--document-col``/``--segment-col``.
    bins
        DDP bin edges in sentences (``"0,1,5,15,50,inf"``), bins ``[e_i, e_{i+1})``.
    options
        :class:`~ddpcore.stats.ResampleOptions`: ``n_boot`` document-bootstrap replicates (default 1,000;
        0 = no intervals and no test b), ``seed``, ``threads``, ``max_memory``, ``max_seconds``.
    tests
        :class:`MetaTests` (permutations, SPA trials, alpha, pairs, caps).
    system_scores
        :class:`SystemScores`: ``overall``'s ``pairwise_accuracy.sys`` from these system-level scores
        (mt-metrics-eval's ``.sys.score`` files) instead of the cell means; fixed, so without an interval.

    Returns
    -------
    MetaResult
    """
    if columns is None:  # the scores' ids named as the profile's, as `ddp meta` joins them (it was document_id: D800)
        from ..io.profiles import profile_columns

        pc = profile_columns(profile_signature or {})
        columns = MetaColumns(document=pc.document, segment=pc.segment)
    cols = dataclasses.replace(columns, human=human_col)
    metric_cols = [score_col] if isinstance(score_col, str) else (list(score_col) if score_col else None)
    check_roles(cols, metric_cols)  # D311 before anything is read
    tests = tests if tests is not None else MetaTests()
    if not isinstance(tests, MetaTests):
        raise DDPUsageError(f"meta_evaluate(tests=...) must be a MetaTests, got {type(tests).__name__}", code="D806")
    opts = check_options(options, func="meta_evaluate")
    n_boot = opts.n_boot_or(1000)
    if n_boot != 0:
        n_boot = _budget.check_n_boot(n_boot)
    seed = _budget.check_seed(opts.seed)
    if tests.tie_sample:  # the sampled pairs' indices, differences and flags, before any work (D362)
        b = opts.budget("ddp meta tie calibration", flag="--tie-sample", time=False)
        b.count = "tie_sample"
        b.check_memory(int(tests.tie_sample), TIE_SAMPLE_BYTES)
    edges = parse_bins(bins) if isinstance(bins, str) else parse_bins(list(bins))
    psig = profile_signature or {}
    data = _prepare(profile, scores, psig, profile_name, scores_name, cols, metric_cols, ddp_col, strict_join)
    import os

    cache = _item_cache(data, opts.threads if opts.threads and opts.threads > 0
                        else int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or (os.cpu_count() or 1))
    b = bin_of(data.item_ddp, edges)
    n_outside = int((b < 0).sum())
    warnings = list(data.warnings)
    if n_outside:
        warnings.append(f"{n_outside:,} scored segments have a DDP outside the bins {edges} and count only in overall")
    n_bins = len(edges) - 1
    by_bin = [_item_calibration(cache, k, b, n_bins) for k in range(len(data.metrics))]
    by_all = [_item_calibration(cache, k, np.zeros(b.size, dtype=np.int64), 1)[0] for k in range(len(data.metrics))]
    cells = []
    for k in range(n_bins):
        lo, hi = edges[k], edges[k + 1]
        label = f"[{lo:g}, {'inf' if math.isinf(hi) else f'{hi:g}'})"
        cells.append(_cell_stats(data, b == k, label, lo, hi, tests, cache, seed, [c[k] for c in by_bin]))
    cells.append(_cell_stats(data, np.ones(b.size, dtype=bool), "overall", None, None, tests, cache, seed, by_all))
    if system_scores is not None:
        _overall_system_scores(cells[-1], data, human_col, system_scores, warnings)
    for c in cells:
        if c.name != "overall" and 0 < c.counts["n_documents"] < 5:  # type: ignore[attr-defined]
            warnings.append(f"bin {c.name}: {c.counts['n_documents']} document(s), {c.counts['n_segments_scored']} "  # type: ignore[attr-defined]
                            f"human-scored segment(s) of {c.counts['n_segments']}: "  # type: ignore[attr-defined]
                            "a thin sample, its intervals are wide or undefined")
    reps = _bootstrap(cells, data, n_boot, opts, tests, cache)
    _apply_cis(cells, reps, n_boot, tests, cache.get("ci_skip"))
    skipped = cache.get("ci_skip") or {}
    for stat, reason in sorted({(st, r) for (_, _, st), r in skipped.items()}):  # said, not only recorded
        where = [f"{cell} {metric}" for (cell, metric, st), r in skipped.items() if r == reason and st == stat]
        warnings.append(f"{stat} has no interval in {len(where)} (bin, metric) pair(s) ({', '.join(where[:4])}"
                        f"{', ...' if len(where) > 4 else ''}): {reason}")
    outside = [f"{c.name} {m} {c.figures[m]['spa.sys']['value']:.4f} [{c.figures[m]['spa.sys']['ci_low']:.4f}, "
               f"{c.figures[m]['spa.sys']['ci_high']:.4f}]" for c in cells for m in data.metrics
               if _outside_its_interval(c.figures[m].get("spa.sys"))]
    if outside:  # the interval is conditional on --spa-ci-perm masks: a coarse one can miss its own point
        warnings.append(f"spa.sys lies outside its own interval in {len(outside)} (bin, metric) pair(s) "
                        f"({', '.join(outside[:4])}{', ...' if len(outside) > 4 else ''}): the replicates hold "
                        f"{min(tests.spa_ci_perm, tests.spa_perm)} of the {tests.spa_perm} permutation trials fixed, so "
                        "their p-values move in coarse steps; raise --spa-ci-perm (e.g. to --spa-perm) for an interval "
                        "around the value")
    sampled = [f"{c.name} {m}" for c in cells for m in data.metrics
               if c.figures[m]["acc_eq.none"].get("note") and c.figures[m]["acc_eq.none"]["status"] == "ok"]
    if sampled:
        warnings.append(f"acc_eq.none in {len(sampled)} (bin, metric) pair(s) ({', '.join(sampled[:4])}"
                        f"{', ...' if len(sampled) > 4 else ''}): more than --max-pairs {tests.max_pairs:,} cell "
                        f"pairs, the tie threshold is calibrated on a seeded sample of {tests.tie_sample:,} pairs "
                        "(--tie-sample); the accuracy at it is exact over every pair")
    tests_out = {"metric_pairs": _perm_test(cells, data, tests, opts),
                 "bins_vs_first": _bin_test(cells, reps, data, tests, skipped)}

    def entry(c: _Cell) -> dict[str, Any]:
        return {"label": c.name, "low": c.low, "high": c.high, **c.counts,  # type: ignore[attr-defined]
                "metrics": c.figures}

    sig = signature(
        "meta", profile=profile_name, scores=scores_name, human_col=human_col, metrics=data.metrics,
        systems=data.systems, columns=dataclasses.asdict(cols), ddp_col=ddp_col,
        bins=[("inf" if math.isinf(e) else float(e)) for e in edges], n_boot=int(n_boot), seed=int(seed),
        n_perm=int(tests.n_perm), spa_perm=int(tests.spa_perm), alpha=float(tests.alpha), pairs=tests.pairs,
        max_pairs=int(tests.max_pairs), tie_sample=int(tests.tie_sample),
        ci_max_points=("auto" if tests.ci_max_points is None else int(tests.ci_max_points)),
        spa_ci_perm=int(min(tests.spa_ci_perm, tests.spa_perm)), strict_join=bool(strict_join),
        unit="document", ci="document bootstrap, 95% percentile (numpy.percentile, linear) of the defined replicates",
        rng={"bootstrap": RNG_DESCRIPTION, "permutation": PERM_RNG, "spa": SPA_RNG, "tie_sample": TIE_SAMPLE_RNG},
        correction="holm", join=data.join, warnings=warnings, profile_signature=psig,
        system_scores=("cells" if system_scores is None else
                       {"overall": "files", "bins": "cells", "source": dict(system_scores.source)}))
    return MetaResult([entry(c) for c in cells[:-1]], entry(cells[-1]), tests_out, warnings, sig)


# --------------------------------------------------------------------------- rendering


def _num(x: Any, nd: int = 3) -> str:
    return "" if x is None else f"{x:.{nd}f}"


def to_tsv(res: MetaResult) -> str:
    """One line per (bin, metric, statistic), then the signature as a comment line."""
    from ..io.tables import tsv_field

    vs = {(t["bin"], t["metric"], t["stat"]): t for t in res.tests["bins_vs_first"]}
    head = ["bin", "low", "high", "metric", "stat", "value", "ci_low", "ci_high", "n", "status", "reason",
            "epsilon", "diff_vs_first", "p_below_holm", "significant_below"]
    lines = ["\t".join(head)]

    def cell(v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return "inf" if math.isinf(v) else f"{v:.6g}"
        return tsv_field(v)  # a metric name with a tab, quote or line break: quoted (RFC 4180), not changed
    for e in [*res.bins, res.overall]:
        for metric, figs in e["metrics"].items():
            for st in STATS:
                f = figs[st]
                t = vs.get((e["label"], metric, st), {})
                lines.append("\t".join(cell(x) for x in (
                    e["label"], e["low"], e["high"], metric, st, f["value"], f["ci_low"], f["ci_high"], f["n"],
                    f["status"], f["reason"] or f.get("note") or f.get("ci_reason"), f.get("epsilon"), t.get("diff"),
                    t.get("p_below_holm"), t.get("significant_below") if t else None)))
    lines.append("# signature: " + json.dumps(json_safe({k: v for k, v in res.signature.items()
                                                         if k != "profile_signature"}), sort_keys=True))
    return "\n".join(lines) + "\n"


def _table_cells(res: MetaResult, stat: str) -> tuple[list[str], list[list[str]]]:
    vs = {(t["bin"], t["metric"], t["stat"]): t for t in res.tests["bins_vs_first"]}
    entries = [*res.bins, res.overall]
    col = res.signature.get("ddp_col", S.DDP)  # the column the bins are of, as `ddp stratify -f text` names it
    lab = "DDP" if col == S.DDP else f"DDP ({col})"
    heads = ["metric"] + [f"{lab} {e['label']} (n={e['n_segments_scored']})" if e["label"] != "overall"
                          else f"overall (n={e['n_segments_scored']})" for e in entries]
    rows = []
    for metric in res.metrics:
        row = [metric]
        for e in entries:
            f = e["metrics"][metric][stat]
            if f["status"] != "ok":
                row.append("n/a" if f["status"] == "undefined" else "—")
                continue
            s = _num(f["value"])
            if f["ci_low"] is not None:
                s += f" [{_num(f['ci_low'], 2)}, {_num(f['ci_high'], 2)}]"
            if vs.get((e["label"], metric, stat), {}).get("significant_below"):
                s += " ↓"
            row.append(s)
        rows.append(row)
    return heads, rows


def to_markdown(res: MetaResult, stats: Sequence[str] = STATS) -> str:
    """One table per statistic: metrics x bins (value [95% CI]; ↓ = significantly below the first bin,
    Holm across metrics; n/a = undefined, — = not computed; n = human-scored segments of the bin)."""
    from ..io.tables import md_cell

    out = []
    for st in stats:
        heads, rows = _table_cells(res, st)
        out.append(f"**{st}** (document-bootstrap 95% CI; ↓ significantly below the first bin, Holm, "
                   f"alpha {res.signature['alpha']:g})\n")
        out.append("| " + " | ".join(heads) + " |")
        out.append("|---|" + "---:|" * (len(heads) - 1))
        for r in rows:  # the metric name as written (escaped); the figures need only '|' escaped
            out.append("| " + " | ".join(md_cell(x) if i == 0 else x.replace("|", "\\|") for i, x in enumerate(r))
                       + " |")
        out.append("")
    if res.warnings:
        out.append("Warnings: " + "; ".join(res.warnings))
    return "\n".join(out) + "\n"


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
        "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "↓": r"$\downarrow$", "—": "--",
        # as written in any font encoding (OT1 prints < > | as inverted marks and a dash; babel's ngerman makes
        # '"' active); tex_cell writes a line break in a name as the two characters \n (a bare one would end a
        # % comment line, and a blank line inside a cell is a paragraph break tabular refuses)
        "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", '"': r"\textquotedbl{}"}


def _tex(s: str, row_start: bool = False) -> str:
    from ..io.tables import tex_cell

    return tex_cell(s, _TEX, row_start=row_start)


def to_latex(res: MetaResult, stats: Sequence[str] = STATS) -> str:
    """The Markdown tables as LaTeX ``tabular`` environments (booktabs rules)."""
    out = []
    for st in stats:
        heads, rows = _table_cells(res, st)
        out.append(f"% {st}: document-bootstrap 95% CI; $\\downarrow$ significantly below the first bin (Holm)")
        out.append("\\begin{tabular}{l" + "r" * (len(heads) - 1) + "}")
        out += ["\\toprule", " & ".join(_tex(h) for h in heads) + " \\\\", "\\midrule"]
        out += [" & ".join(_tex(x, i == 0) for i, x in enumerate(r)) + " \\\\" for r in rows]
        out += ["\\bottomrule", "\\end{tabular}", ""]
    return "\n".join(out)


def dumps(res: MetaResult) -> str:
    """``res`` as the indented JSON that ``ddp meta -f json`` writes (no NaN: missing figures are null)."""
    return json.dumps(res.to_dict(), indent=1, allow_nan=False) + "\n"


__all__ = ["DEFAULT_BINS", "MetaColumns", "MetaResult", "MetaTests", "SystemScores", "PERM_STATS", "STATS", "TIE_SAMPLE_RNG", "acc_eq_at", "acc_eq_none", "check_roles",
           "acc_eq_none_sampled", "sample_pairs", "tie_threshold_sampled",
           "calibrate_ties", "dumps", "item_statistics", "meta_evaluate", "pairwise_accuracy",
           "pairwise_p_values",
           "parse_fail_on", "to_latex", "to_markdown", "to_tsv"]
