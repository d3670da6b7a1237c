"""Validation of DDP against gold coreference (paper Appendix A.1).

Flow: gold files → :func:`ddpcore.io.gold.read_gold` → :func:`compute_gold_distances`
(one gold distance per gold sentence) → DDP of the same sentences, each gold sentence profiled
as one segment and one sentence unit (``profile_anchors(..., sentence_unit="segment")``) →
:func:`compare_with_gold` (metrics overall and by genre, over-estimated segments with the
anchor responsible).

Gold distance of a sentence *s* (in sentences), mirroring the DDP distance mode:

* ``chained``: max over the mentions of *s* whose chain has a mention in an earlier sentence of
  ``s - (sentence of the chain's first mention)``;
* ``nearest``: max over the same mentions of ``s - (latest sentence before s holding a mention
  of the chain)``;
* 0 when no mention of *s* belongs to a chain that was mentioned before *s*.

Mentions in the same sentence never count as antecedents (a distance of 0 is "no distance").

The gold *scope* (``gold_scope=``, CLI ``--gold-scope``) says which gold mentions take part
(:func:`scope_gold_mentions`); each remaining mention either *counts* (its sentence gets its
distance) or is an *antecedent only* (it can be the chain's first or previous mention):

* ``full``: every mention counts;
* ``restricted``: ``PROP`` and ``PRON`` mentions count; common-noun ``NOM`` mentions are removed
  as anaphors **and** as antecedents;
* ``ddp``: the mentions of the kinds DDP anchors count — named (``PROP``) mentions of an entity
  type DDP's labels cover (every type but the temporal and numeric ones; untyped golds: a head
  that is not a month or weekday name) and third-person pronouns of DDP's pronoun list
  (:data:`ddpcore.anchors.rules.PRONOUN_GROUPS`); first- and second-person pronoun mentions are
  removed from their chains; every other mention (nominal, named with a temporal type, other
  pronouns such as "one") is an antecedent only.

The definitions, with examples from each gold format, are in docs/validation.md ("Gold scope").
"""
from __future__ import annotations

import contextlib
import inspect
import math
import os
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from .._version import __version__
from .. import schema
from ..anchors.rules import PRONOUN_GROUPS
from ..errors import DDPDataError, DDPUsageError
from ..io.gold import (
    CHAIN_ID, ENTITY_TYPE, GENRE, HEAD_TEXT, MENTION_TYPE, N_TOKENS, TOKEN_END, TOKEN_START, TOKENS, GoldCorpus,
    read_gold,
)
from ..io.tables import text_cell, text_pad, text_width
from ..pipeline.summary import distinct_label
from ._correlation import correlation
from .proportions import Proportion, proportions

if TYPE_CHECKING:
    import polars as pl

Distance = Literal["chained", "nearest"]
GoldScope = Literal["full", "restricted", "ddp"]
#: the gold scopes, in the order reports list them
GOLD_SCOPES: tuple[str, ...] = ("full", "restricted", "ddp")

# ---- validation column names
GOLD_DISTANCE = "gold_distance"  # in sentences
GOLD_CHAIN_ID = "gold_chain_id"  # chain that gives the sentence its gold distance (null if 0)
GOLD_REFERENCE_SENTENCE = "gold_reference_sentence"  # sentence the gold distance is measured to (-1 if none)
ERROR = "error"  # ddp - gold_distance, in sentences
RESTRICTED_TYPES = ("PROP", "PRON")
COUNTED = "counted"  # scoped mentions: the mention's sentence gets its distance (else: antecedent only)
#: the segment-level DDP columns ``ddp validate`` measures, in report order (each one present in the
#: segment table is measured; ``ddp_certified`` = max over only the anchors whose link is certain, 0 when none)
DDP_CERTIFIED = "ddp_certified"
DDP_COLUMNS: tuple[str, ...] = (schema.DDP, DDP_CERTIFIED)
#: default tail thresholds k (sentences) of tail precision / recall (CLI ``--tail``)
DEFAULT_TAILS: tuple[int, ...] = (5, 15)

# ---- the DDP scope (docs/validation.md, "Gold scope"); head words are compared lower-cased, with
# ’ read as ' and a trailing "." removed ("I." in LitBank)
#: first- and second-person pronoun heads: such PRON mentions leave their chains in the ``ddp`` scope
#: ("'s" is the "us" of "let's", the only place a gold types "'s" as a personal pronoun)
FIRST_SECOND_PERSON: frozenset[str] = frozenset(
    """i me my mine myself we us our ours ourselves ourself 's you your yours yourself yourselves y'all thee thou
    thy thine thyself ye ya yeh yer y' ee 'ee u ur""".split()
)
#: third-person pronoun heads that count in the ``ddp`` scope: exactly the pronoun anchors of DDP
DDP_PRONOUNS: frozenset[str] = frozenset(PRONOUN_GROUPS)
#: gold entity types (lower-cased) outside DDP's labels: temporal and numeric (spaCy DATE, TIME,
#: CARDINAL, QUANTITY, MONEY, PERCENT, ORDINAL); named mentions of other types count
NON_DDP_ENTITY_TYPES: frozenset[str] = frozenset(
    ("time", "date", "quantity", "money", "percent", "cardinal", "ordinal", "number", "numeric")
)
#: heads of untyped named mentions that are temporal (DATE in the NER scheme DDP uses), not anchors
TEMPORAL_HEADS: frozenset[str] = frozenset(
    """january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday""".split()
)


@dataclass(frozen=True)
class GoldMetrics:
    """Agreement of DDP with gold distance over a set of segments (gold sentences).

    ``pearson``/``spearman`` are ``None`` when undefined (fewer than 2 segments or a constant
    series); shares are fractions in [0, 1]; ``mean_signed_error`` is mean(DDP − gold) in
    sentences (negative = DDP under-estimates on average). Without segments the shares and the
    mean are undefined too: ``None``, never 0.
    """

    n_segments: int
    pearson: float | None
    spearman: float | None
    share_under: float | None
    share_exact: float | None
    share_over: float | None
    mean_signed_error: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TailFigures:
    """Tail precision and recall at threshold ``k`` (sentences).

    ``precision``: of the segments with DDP >= k (``n``), the share whose gold distance is >= k;
    ``recall``: of the segments with gold distance >= k (``n``), the share with DDP >= k. Each with
    its exact 95 % Clopper-Pearson interval (:mod:`ddpcore.gold.proportions`).
    """

    k: int
    precision: Proportion
    recall: Proportion

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "precision": self.precision.to_dict(), "recall": self.recall.to_dict()}


@dataclass(frozen=True)
class ColumnMetrics:
    """Agreement of one DDP column with gold distance over a set of segments (gold sentences).

    ``pearson``/``spearman`` are ``None`` when undefined (fewer than 2 segments or a constant
    series); ``under``/``exact``/``over`` are the segments with DDP <, =, > gold, each a
    :class:`Proportion` (count, n, share, exact 95 % interval); ``mean_signed_error`` is
    mean(DDP − gold) in sentences (``None`` with no segment); ``tails`` one :class:`TailFigures`
    per threshold; ``coverage`` (``ddp_certified`` only, else ``None``): of the gold-positive
    segments (gold > 0), the share with DDP > 0.
    """

    column: str
    n_segments: int
    pearson: float | None
    spearman: float | None
    under: Proportion
    exact: Proportion
    over: Proportion
    mean_signed_error: float | None
    tails: tuple[TailFigures, ...]
    coverage: Proportion | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "n_segments": self.n_segments, "pearson": self.pearson, "spearman": self.spearman,
            "under": self.under.to_dict(), "exact": self.exact.to_dict(), "over": self.over.to_dict(),
            "mean_signed_error": self.mean_signed_error, "tails": [t.to_dict() for t in self.tails],
        }
        if self.coverage is not None:
            d["coverage"] = self.coverage.to_dict()
        return d


@dataclass(frozen=True)
class ColumnReport:
    """:class:`ColumnMetrics` of one DDP column, overall and per genre; ``undefined`` lists the figures
    that are undefined (``None``), each ``{genre, figure, reason}`` (``genre`` ``None`` = overall;
    :func:`undefined_figures`)."""

    overall: ColumnMetrics
    by_genre: dict[str, ColumnMetrics]
    undefined: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"overall": self.overall.to_dict(), "by_genre": {g: m.to_dict() for g, m in self.by_genre.items()},
                "undefined": [{k: v for k, v in u.items() if k != "column"} for u in self.undefined]}


@dataclass(frozen=True)
class ValidationResult:
    """Output of :func:`validate` / :func:`compare_with_gold`.

    Attributes
    ----------
    overall, by_genre : GoldMetrics, dict[str, GoldMetrics]
        Metrics of the ``ddp`` column (the report's top-level keys, unchanged since before
        ``ddp_certified``).
    segments : polars.DataFrame
        One row per gold sentence (= segment): ``document_id, sentence, genre, ddp,
        gold_distance, error, gold_chain_id, gold_reference_sentence`` (``error`` = ddp − gold),
        plus ``ddp_certified`` after ``ddp`` when the DDP run has it.
    over_estimates : polars.DataFrame
        Segments with ``ddp > gold_distance``, with the anchor responsible (the first anchor of
        the segment whose distance equals its DDP): ``anchor_kind, anchor_label, anchor_text,
        antecedent_kind, antecedent_text, antecedent_sentence, distance_sentences``, the gold
        chain that sets the gold distance, and (given the corpus) the sentence text,
        ``anchor_gold_chain`` and ``diagnosis`` (``not_in_gold`` / ``linked_too_far`` / ``unaligned`` / ``other``).
    over_estimate_causes : polars.DataFrame
        Over-estimates grouped by ``anchor_kind, anchor_label, antecedent_kind`` (and
        ``diagnosis`` when the gold corpus was given) with
        ``n_segments`` and ``excess_sentences`` (sum of DDP − gold), largest excess first.
    signature : dict
        Gold settings and the DDP run's signature.
    timing : dict
        ``words`` (gold tokens), ``seconds`` and ``words_per_second`` of the DDP run.
    columns : dict[str, ColumnReport]
        Every DDP column present (``ddp``, ``ddp_certified``, in that order) with all figures:
        correlations, under/exact/over with intervals, tail precision/recall, coverage.
    tails : tuple[int, ...]
        The tail thresholds k (sentences) of ``columns``.
    set_aside : dict
        Empty, or what a ``set_aside`` rule left out: ``rule``, ``segments`` (column -> segments
        not counted in that column's figures) and ``of`` (segments in all).
    undefined : tuple of dict
        Every figure of ``columns`` that is undefined (``None`` in the report, ``—`` in the text),
        one ``{column, genre, figure, reason}`` each (``genre`` ``None`` = overall; in the JSON
        report under ``columns.COLUMN.undefined``); the CLI says them on stderr (:func:`undefined_note`).
    unmatched : dict
        Empty, or the rows of the DDP segment table that match no gold sentence (a profile of another or a
        larger test set) and so count in no figure: ``segments`` (how many), ``of`` (rows of the table) and
        ``examples`` (the first few ``{document_id, segment_id}``); said as a warning (:func:`unmatched_note`).
    """

    overall: GoldMetrics
    by_genre: dict[str, GoldMetrics]
    segments: pl.DataFrame
    over_estimates: pl.DataFrame
    over_estimate_causes: pl.DataFrame
    signature: dict[str, Any] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=dict)
    columns: dict[str, ColumnReport] = field(default_factory=dict)
    tails: tuple[int, ...] = DEFAULT_TAILS
    set_aside: dict[str, Any] = field(default_factory=dict)
    undefined: tuple[dict[str, Any], ...] = ()
    unmatched: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "overall": self.overall.to_dict(),
            "by_genre": {g: m.to_dict() for g, m in self.by_genre.items()},
            "n_over_estimates": self.over_estimates.height,
            "over_estimate_causes": self.over_estimate_causes.to_dicts(),
            "signature": self.signature,
            "timing": self.timing,
            "tails": list(self.tails),
            "columns": {c: r.to_dict() for c, r in self.columns.items()},
            **({"set_aside": self.set_aside} if self.set_aside else {}),
            **({"unmatched": self.unmatched} if self.unmatched else {}),
        }


# --------------------------------------------------------------------------- gold scope


def resolve_gold_scope(gold_scope: str | None) -> GoldScope:
    """The gold scope named by ``gold_scope`` (``None`` means ``"full"``).

    Raises :class:`DDPUsageError` D230 for an unknown scope.
    """
    if gold_scope is not None and gold_scope not in GOLD_SCOPES:
        raise DDPUsageError(f"unknown gold scope {gold_scope!r}; choose one of: {', '.join(GOLD_SCOPES)}", code="D230")
    return gold_scope or "full"  # type: ignore[return-value]


def scope_gold_mentions(mentions: pl.DataFrame, gold_scope: GoldScope = "full") -> pl.DataFrame:
    """The gold mentions that take part in ``gold_scope``, with a boolean ``counted`` column.

    Parameters
    ----------
    mentions : polars.DataFrame
        :attr:`GoldCorpus.mentions` (one row per mention). ``full`` and ``restricted`` need
        ``mention_type``; ``ddp`` also needs ``entity_type`` and ``head_text``.
    gold_scope : ``"full" | "restricted" | "ddp"``

    Returns
    -------
    polars.DataFrame
        The kept mentions (same columns, same order) plus ``counted``: true when the mention's
        sentence gets a distance from it, false when it is an antecedent only. Removed mentions
        (``restricted``: NOM; ``ddp``: first/second-person pronouns) are absent.
    """
    import polars as pl

    scope = resolve_gold_scope(gold_scope)
    if scope == "full":
        return mentions.with_columns(pl.lit(True).alias(COUNTED))
    if scope == "restricted":
        return mentions.filter(pl.col(MENTION_TYPE).is_in(RESTRICTED_TYPES)).with_columns(pl.lit(True).alias(COUNTED))
    missing = [c for c in (MENTION_TYPE, ENTITY_TYPE, HEAD_TEXT) if c not in mentions.columns]
    if missing:
        raise DDPDataError(
            f"gold mentions lack column(s) {', '.join(missing)}, which the ddp gold scope reads; "
            "read the gold with ddpcore.io.gold.read_gold",
            code="D231",
        )
    head = pl.col(HEAD_TEXT).str.to_lowercase().str.replace_all("’", "'")
    head = pl.when(head.str.len_chars() > 1).then(head.str.strip_suffix(".")).otherwise(head)
    mtype, etype = pl.col(MENTION_TYPE), pl.col(ENTITY_TYPE).str.to_lowercase()
    pron, prop = mtype == "PRON", mtype == "PROP"
    named_in_scope = pl.when(etype.is_null()).then(~head.is_in(list(TEMPORAL_HEADS))).otherwise(
        ~etype.is_in(list(NON_DDP_ENTITY_TYPES))
    )
    # a zero mention (an empty node: a dropped subject, no word of the text) is no anchor DDP could find, whatever its
    # form: antecedent only, as a nominal mention is
    visible = pl.col(TOKEN_END) > pl.col(TOKEN_START) if TOKEN_START in mentions.columns else pl.lit(True)
    counted = ((pron & head.is_in(list(DDP_PRONOUNS))) | (prop & named_in_scope)) & visible
    dropped = pron & head.is_in(list(FIRST_SECOND_PERSON))
    return (
        mentions.with_columns(counted.fill_null(False).alias(COUNTED), dropped.fill_null(False).alias("_dropped"))
        .filter(~pl.col("_dropped"))
        .drop("_dropped")
    )


# --------------------------------------------------------------------------- gold distances


def compute_gold_distances(
    corpus: GoldCorpus,
    *,
    distance: Distance = "chained",
    gold_scope: GoldScope = "full",
) -> pl.DataFrame:
    """Gold distance of every gold sentence (definition in the module docstring).

    ``gold_scope`` chooses the mentions (:func:`scope_gold_mentions`); the distance of a sentence
    is the maximum over its *counted* mentions, measured back to the chain's first (chained) or
    previous (nearest) *kept* mention. A CorefUD split antecedent (``SplitAnte``,
    :attr:`GoldCorpus.split_antecedents`) makes the kept mentions of each part antecedents (only) of
    the whole: "John ... Mary ... they" counts back to John (chained) or Mary (nearest).

    Returns
    -------
    polars.DataFrame
        One row per gold sentence, in corpus order: ``document_id, sentence, genre,
        gold_distance`` (int64, sentences), ``gold_chain_id`` (chain giving the maximum, ties →
        smallest chain id; null when 0) and ``gold_reference_sentence`` (-1 when 0).
    """
    import polars as pl

    if distance not in ("chained", "nearest"):
        raise DDPUsageError(f"distance must be 'chained' or 'nearest', not {distance!r}", code="D420")
    scope = resolve_gold_scope(gold_scope)
    doc, sent = schema.DOCUMENT_ID, schema.SENTENCE
    # one row per (chain, sentence holding a kept mention of it; counted = one of them counts),
    # sorted so that group-wise min / shift see each chain's sentences in document order
    occ = (
        _chain_rows(corpus, scope_gold_mentions(corpus.mentions, scope))
        .group_by(doc, CHAIN_ID, sent)
        .agg(pl.col(COUNTED).any())
        .sort(doc, CHAIN_ID, sent)
    )
    if distance == "chained":
        ref = pl.col(sent).min().over(doc, CHAIN_ID)
    else:
        ref = pl.col(sent).shift(1).over(doc, CHAIN_ID)
    occ = occ.with_columns(ref.alias(GOLD_REFERENCE_SENTENCE))
    occ = occ.with_columns((pl.col(sent) - pl.col(GOLD_REFERENCE_SENTENCE)).alias(GOLD_DISTANCE))
    occ = occ.filter(pl.col(COUNTED) & (pl.col(GOLD_DISTANCE) > 0))
    best = (
        occ.sort([doc, sent, GOLD_DISTANCE, CHAIN_ID], descending=[False, False, True, False])
        .group_by([doc, sent], maintain_order=True)
        .first()
        .select(doc, sent, GOLD_DISTANCE, pl.col(CHAIN_ID).alias(GOLD_CHAIN_ID), GOLD_REFERENCE_SENTENCE)
    )
    base = corpus.sentences.select(doc, pl.col(sent).cast(pl.Int64), GENRE)
    return base.join(best, on=[doc, sent], how="left", maintain_order="left").with_columns(
        pl.col(GOLD_DISTANCE).fill_null(0),
        pl.col(GOLD_REFERENCE_SENTENCE).fill_null(-1),
    )


def _chain_rows(corpus: GoldCorpus, mentions: pl.DataFrame) -> pl.DataFrame:
    """``document_id, chain_id, sentence, counted``: one row per kept mention (``mentions``, the output of
    :func:`scope_gold_mentions`), plus, for each CorefUD split antecedent (``SplitAnte``, one level deep), the kept
    mentions of the part as antecedent-only rows (``counted`` false) of the whole: the chains the gold distance and
    the over-estimate diagnosis measure back along."""
    import polars as pl

    doc, sent = schema.DOCUMENT_ID, schema.SENTENCE
    rows = mentions.select(pl.col(doc).cast(pl.String), CHAIN_ID, pl.col(sent).cast(pl.Int64), COUNTED)
    if corpus.split_antecedents:  # CorefUD SplitAnte: the kept mentions of a part are antecedents of the whole
        links = pl.DataFrame(list(corpus.split_antecedents), schema={doc: pl.String, CHAIN_ID: pl.String, "_part": pl.String},
                             orient="row")
        parts = rows.rename({CHAIN_ID: "_part"}).join(links, on=[doc, "_part"], how="inner")
        rows = pl.concat([rows, parts.select(doc, CHAIN_ID, sent, pl.lit(False).alias(COUNTED))])
    return rows


# --------------------------------------------------------------------------- metrics


def compute_gold_metrics(ddp: npt.ArrayLike, gold: npt.ArrayLike) -> GoldMetrics:
    """Metrics of DDP against gold distance; ``ddp`` and ``gold`` have shape (n_segments,), in sentences."""
    x = np.asarray(ddp, dtype=np.float64)
    y = np.asarray(gold, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise DDPUsageError(f"ddp and gold must be 1-d arrays of one length, got shapes {x.shape} and {y.shape}", code="D421")
    _check_finite(x, y)
    n = int(x.size)
    if n == 0:  # nothing to measure: every figure undefined (not 0)
        return GoldMetrics(0, None, None, None, None, None, None)
    err = x - y
    return GoldMetrics(
        n_segments=n,
        pearson=correlation(x, y, "pearson"),
        spearman=correlation(x, y, "spearman"),
        share_under=float(np.mean(err < 0)),
        share_exact=float(np.mean(err == 0)),
        share_over=float(np.mean(err > 0)),
        mean_signed_error=float(np.mean(err)),
    )


def _check_finite(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> None:
    """Every DDP and gold value is a number (D690): a NaN (a null of a table) or an infinity falls in none of
    under / exact / over and makes the mean NaN, so the figures would no longer count every segment."""
    for name, a in (("ddp", x), ("gold", y)):
        bad = ~np.isfinite(a)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DDPDataError(f"{name}[{i}] is {a[i]:g}, not a number of sentences ({int(bad.sum())} such value(s)); "
                               "give every segment a DDP value and a gold distance (a null counts as missing)",
                               code="D690")


def _at_least(k: int) -> float:
    """The smallest float64 >= the whole number ``k`` (inf beyond the float range): for a float ``v``,
    ``v >= k`` exactly when ``v >= _at_least(k)``, so a threshold too large for a float compares right."""
    try:
        f = float(k)
    except OverflowError:
        return math.inf
    return f if f >= k else math.nextafter(f, math.inf)


def check_tails(tails: Sequence[int]) -> tuple[int, ...]:
    """The tail thresholds, sorted and without repeats; each must be an integer >= 1 (D443)."""
    if isinstance(tails, (str, bytes)) or not hasattr(tails, "__iter__"):
        raise DDPUsageError(f"tails={tails!r} is not a sequence of tail thresholds; give whole numbers of sentences "
                            ">= 1, e.g. tails=(5, 15)", code="D443")
    out = []
    for k in tails:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise DDPUsageError(f"tail threshold {k!r} is not a whole number of sentences >= 1; give e.g. tails=(5, 15)",
                                code="D443")
        out.append(int(k))
    if not out:
        raise DDPUsageError("no tail threshold given; give at least one, e.g. tails=(5, 15)", code="D443")
    return tuple(sorted(set(out)))


def compute_column_metrics(
    ddp: npt.ArrayLike,
    gold: npt.ArrayLike,
    *,
    column: str = schema.DDP,
    tails: Sequence[int] = DEFAULT_TAILS,
    coverage: bool | None = None,
) -> ColumnMetrics:
    """All figures of one DDP column against gold distance (see :class:`ColumnMetrics`).

    Parameters
    ----------
    ddp, gold : array-like, shape (n_segments,)
        DDP and gold distance per segment, in sentences (whole numbers >= 0; a NaN or infinity: D690).
    column : str
        Name of the DDP column (``ddp`` or ``ddp_certified``), recorded in the result.
    tails : sequence of int
        Tail thresholds k, in sentences (each >= 1).
    coverage : bool, optional
        Whether to compute coverage (share of gold > 0 segments with DDP > 0); default: only for
        ``ddp_certified``.
    """
    x = np.asarray(ddp, dtype=np.float64)
    y = np.asarray(gold, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise DDPUsageError(f"ddp and gold must be 1-d arrays of one length, got shapes {x.shape} and {y.shape}", code="D421")
    _check_finite(x, y)
    ks = check_tails(tails)
    if coverage is None:
        coverage = column == DDP_CERTIFIED
    n = int(x.size)
    err = x - y
    kcol = np.asarray([_at_least(k) for k in ks], dtype=np.float64)[:, None]  # (n_tails, 1) against (n_segments,)
    pred, true = x[None, :] >= kcol, y[None, :] >= kcol  # (n_tails, n_segments)
    both = np.count_nonzero(pred & true, axis=1)
    counts = [np.count_nonzero(err < 0), np.count_nonzero(err == 0), np.count_nonzero(err > 0)]
    totals = [n, n, n]
    counts += both.tolist() + both.tolist()
    totals += np.count_nonzero(pred, axis=1).tolist() + np.count_nonzero(true, axis=1).tolist()
    if coverage:
        positive = y > 0
        counts.append(int(np.count_nonzero(positive & (x > 0))))
        totals.append(int(np.count_nonzero(positive)))
    props = proportions(counts, totals)
    t = len(ks)
    return ColumnMetrics(
        column=column,
        n_segments=n,
        pearson=correlation(x, y, "pearson"),
        spearman=correlation(x, y, "spearman"),
        under=props[0], exact=props[1], over=props[2],
        mean_signed_error=float(np.mean(err)) if n else None,
        tails=tuple(TailFigures(k, props[3 + i], props[3 + t + i]) for i, k in enumerate(ks)),
        coverage=props[3 + 2 * t] if coverage else None,
    )


# --------------------------------------------------------------------------- comparison


_ANCHOR_RENAMES = {
    schema.KIND: "anchor_kind",
    schema.LABEL: "anchor_label",
    schema.TEXT: "anchor_text",
    schema.ANTECEDENT_KIND: schema.ANTECEDENT_KIND,
    schema.ANTECEDENT_TEXT: schema.ANTECEDENT_TEXT,
    schema.ANTECEDENT_SENTENCE: schema.ANTECEDENT_SENTENCE,
    schema.DISTANCE_SENTENCES: schema.DISTANCE_SENTENCES,
    schema.REFERENCE_SENTENCE: schema.REFERENCE_SENTENCE,
    schema.CHAR_START: schema.CHAR_START,
    schema.CHAR_END: schema.CHAR_END,
}
DIAGNOSIS = "diagnosis"  # not_in_gold | linked_too_far | unaligned | other (over-estimates only)

#: ``set_aside=`` rules: which segments a DDP column's figures leave out (:func:`set_aside_mask`)
SET_ASIDE_RULES: tuple[str, ...] = ("none", "same-string-names")
SET_ASIDE_SUFFIX = "_set_aside"  # segments table: ``<column>_set_aside`` (bool) per DDP column, with a rule
#: the anchor distance behind each DDP column: a segment's value is the largest of its anchors'
DISTANCE_OF_COLUMN = {schema.DDP: schema.DISTANCE_SENTENCES, schema.DDP_CERTIFIED: schema.DISTANCE_CERTIFIED}


def _name_key(column: str) -> pl.Expr:
    """The text of ``column`` compared by the same-string test: lower case, curly apostrophes
    straightened, repeated white space, a trailing possessive ('s or ', with or without a space before
    it, as tokenised text has it) and a leading "the " dropped ("The Church of Scientology's" = "the
    church of scientology" = "Church of  Scientology"; "New Zealand’s" = "New Zealand")."""
    import polars as pl

    return (pl.col(column).fill_null("").str.to_lowercase().str.replace_all("’", "'")
            .str.replace_all(r"\s+", " ").str.strip_chars().str.replace(r"\s*'s?$", "").str.replace(r"^the ", ""))


def same_string_name() -> pl.Expr:
    """Anchors-table expression: the anchor is a name re-mention of the same string (an ``entity``
    anchor whose text equals its antecedent's, compared by :func:`_name_key`)."""
    import polars as pl

    return (pl.col(schema.KIND) == "entity") & pl.col(schema.ANTECEDENT_TEXT).is_not_null() & (
        _name_key(schema.TEXT) == _name_key(schema.ANTECEDENT_TEXT))


def set_aside_mask(segments: pl.DataFrame, anchors: pl.DataFrame | None, column: str,
                   rule: str = "same-string-names") -> npt.NDArray[np.bool_]:
    """Which segments ``column``'s figures leave out under ``rule``, shape ``(n_segments,)`` bool,
    in the order of ``segments``.

    ``same-string-names``: the segments whose ``column`` value (> 0) is reached only by name
    re-mentions of the same string, i.e. every anchor of the segment whose distance (``ddp``:
    ``distance_sentences``; ``ddp_certified``: ``distance_certified``) equals the value is an
    ``entity`` anchor whose text equals its antecedent's (:func:`_name_key`). For a gold that does
    not chain repeated names (it annotates pronouns and their antecedents), such a value has no
    gold counterpart to be checked against; a value that a pronoun or a differently worded name
    also reaches is kept. ``none``: no segment.

    ``segments``: ``document_id``, ``sentence`` (= segment id) and ``column``; ``anchors``: the run's
    anchors table (``document_id, segment_id, kind, text, antecedent_text`` and the distance column).
    """
    import polars as pl

    if rule not in SET_ASIDE_RULES:
        raise DDPUsageError(f"unknown set-aside rule {rule!r}; choose one of: {', '.join(SET_ASIDE_RULES)}",
                            code="D446")
    if rule == "none" or anchors is None or anchors.height == 0:
        return np.zeros(segments.height, dtype=bool)
    dist = DISTANCE_OF_COLUMN[column]
    if dist not in anchors.columns:
        raise DDPDataError(f"the anchors table lacks column '{dist}', which --set-aside reads for {column}; "
                           "profile the gold again with this version", code="D446")
    doc, sent = schema.DOCUMENT_ID, schema.SENTENCE
    same = same_string_name()
    reach = (
        anchors.select(pl.col(doc).cast(pl.String), pl.col(schema.SEGMENT_ID).cast(pl.Int64).alias(sent),
                       pl.col(dist).cast(pl.Int64).alias("__d"), same.alias("__same"))
        .join(segments.select(pl.col(doc).cast(pl.String), pl.col(sent).cast(pl.Int64),
                              pl.col(column).cast(pl.Int64).alias("__v")), on=[doc, sent], how="inner")
        .filter((pl.col("__v") > 0) & (pl.col("__d") == pl.col("__v")))
        .group_by(doc, sent)
        .agg(pl.col("__same").all().alias("__aside"))
    )
    keyed = segments.select(pl.col(doc).cast(pl.String), pl.col(sent).cast(pl.Int64))
    out = keyed.join(reach, on=[doc, sent], how="left", maintain_order="left")["__aside"].fill_null(False)
    return out.to_numpy().astype(bool, copy=False)
ANCHOR_GOLD_CHAIN = "anchor_gold_chain"  # gold chain of the mention covering the anchor's first token


def compare_with_gold(
    gold: pl.DataFrame,
    segments: pl.DataFrame,
    anchors: pl.DataFrame | None = None,
    *,
    corpus: GoldCorpus | None = None,
    gold_scope: GoldScope = "full",
    signature: dict[str, Any] | None = None,
    timing: dict[str, float] | None = None,
    tails: Sequence[int] = DEFAULT_TAILS,
    set_aside: str = "none",
) -> ValidationResult:
    """Join gold distances with DDP per gold sentence and compute the metrics.

    Parameters
    ----------
    gold : polars.DataFrame
        Output of :func:`compute_gold_distances` (one row per gold sentence; a null genre or a gold
        distance that is not a whole number >= 0: D691; a sentence twice, here or in ``segments``: D692).
    segments : polars.DataFrame
        DDP per gold sentence: ``document_id``, ``segment_id`` (= gold sentence index), ``ddp``
        and, when the run has it, ``ddp_certified`` (whole numbers of sentences >= 0; D445 otherwise). A gold
        sentence without a row is D423; a row that is no gold sentence counts in no figure, said as a
        ``UserWarning`` and recorded in :attr:`ValidationResult.unmatched`.
    anchors : polars.DataFrame, optional
        The run's anchors table (``document_id, segment_id, anchor_index, kind, label, text,
        antecedent_kind, antecedent_text, antecedent_sentence, distance_sentences``); gives the
        anchor responsible for each over-estimate.
    corpus : GoldCorpus, optional
        The gold the distances came from: adds the sentence text to each over-estimate and a
        diagnosis of its responsible anchor (see :func:`_diagnose`).
    gold_scope : ``"full" | "restricted" | "ddp"``
        The scope ``gold`` was computed in; the diagnosis of over-estimates uses that scope's
        kept mentions.
    tails : sequence of int
        Tail thresholds k (sentences) of tail precision / recall (D443 unless whole numbers >= 1).
    set_aside : ``"none" | "same-string-names"``
        Segments each DDP column's figures leave out (:func:`set_aside_mask`; needs ``anchors``):
        with ``same-string-names``, those whose value comes only from same-string name
        re-mentions, for a gold that does not chain repeated names. The segments table gets a
        ``<column>_set_aside`` column, the over-estimates are those of the kept ``ddp`` segments,
        and :attr:`ValidationResult.set_aside` counts what was left out. Unknown rule: D446.
    """
    import polars as pl

    if set_aside not in SET_ASIDE_RULES:
        raise DDPUsageError(f"unknown set-aside rule {set_aside!r}; choose one of: {', '.join(SET_ASIDE_RULES)}",
                            code="D446")
    if set_aside != "none" and anchors is None:
        raise DDPUsageError(f"set_aside={set_aside!r} needs the run's anchors table (anchors=)", code="D446")
    scope = resolve_gold_scope(gold_scope)
    ks = check_tails(tails)
    doc, sent = schema.DOCUMENT_ID, schema.SENTENCE
    for col in (doc, schema.SEGMENT_ID, schema.DDP):
        if col not in segments.columns:
            raise DDPDataError(f"DDP segment table lacks column '{col}'", code="D422")
    columns = [c for c in DDP_COLUMNS if c in segments.columns]
    for c in columns:
        _check_ddp_column(segments, c)
    _check_segment_ids(segments)
    ddp = segments.select(
        pl.col(doc).cast(pl.String), pl.col(schema.SEGMENT_ID).cast(pl.Int64).alias(sent),
        *[pl.col(c).cast(pl.Int64) for c in columns],
    )
    _check_gold_table(gold)
    _check_unique(ddp, "DDP segment table", schema.SEGMENT_ID)  # a repeated segment would be counted twice
    joined = gold.with_columns(pl.col(doc).cast(pl.String)).join(ddp, on=[doc, sent], how="left", maintain_order="left")
    missing = joined.filter(pl.col(schema.DDP).is_null())
    if missing.height:
        row = missing.row(0, named=True)
        raise DDPDataError(
            f"no DDP for gold sentence {row[sent]} of document '{row[doc]}' ({missing.height} gold sentences "
            "lack a DDP value); profile every gold sentence as one segment",
            code="D423",
        )
    unmatched = _unmatched_segments(ddp, gold)
    if unmatched:  # never a different answer in silence: the figures count the gold sentences only
        warnings.warn(unmatched_note(unmatched), UserWarning, stacklevel=2)
    joined = joined.with_columns((pl.col(schema.DDP) - pl.col(GOLD_DISTANCE)).alias(ERROR)).select(
        doc, sent, GENRE, *columns, GOLD_DISTANCE, ERROR, GOLD_CHAIN_ID, GOLD_REFERENCE_SENTENCE
    )

    aside_counts: dict[str, int] = {}
    if set_aside != "none":
        joined = joined.with_columns(
            pl.Series(f"{c}{SET_ASIDE_SUFFIX}", set_aside_mask(joined, anchors, c, set_aside)) for c in columns)
        aside_counts = {c: int(joined[f"{c}{SET_ASIDE_SUFFIX}"].sum()) for c in columns}

    def kept(frame: pl.DataFrame, c: str) -> tuple[np.ndarray, np.ndarray]:
        """``c`` and the gold distance over the segments of ``frame`` that ``c``'s figures count."""
        if set_aside != "none":
            frame = frame.filter(~pl.col(f"{c}{SET_ASIDE_SUFFIX}"))
        return frame[c].to_numpy(), frame[GOLD_DISTANCE].to_numpy()

    overall = compute_gold_metrics(*kept(joined, schema.DDP))
    by_genre = {}
    genres = sorted(joined[GENRE].unique().to_list())
    # one pass over the genres (a handful), each measured with whole-array numpy
    parts = {genre: joined.filter(pl.col(GENRE) == genre) for genre in genres}
    for genre, part in parts.items():
        by_genre[genre] = compute_gold_metrics(*kept(part, schema.DDP))
    reports = {}
    undefined: list[dict[str, Any]] = []
    for c in columns:
        figures: dict[str | None, ColumnMetrics] = {}
        missing: list[dict[str, Any]] = []
        for genre, frame in [*parts.items(), (None, joined)]:
            x, y = kept(frame, c)
            figures[genre] = compute_column_metrics(x, y, column=c, tails=ks)
            missing += undefined_figures(x, y, figures[genre], genre=genre)
        overall_c = figures.pop(None)
        reports[c] = ColumnReport(overall=overall_c, by_genre=figures, undefined=tuple(missing))  # type: ignore[arg-type]
        undefined += missing

    over = joined.filter(pl.col(ERROR) > 0)
    if set_aside != "none":
        over = over.filter(~pl.col(f"{schema.DDP}{SET_ASIDE_SUFFIX}"))
    if anchors is not None and anchors.height:
        keep = [c for c in _ANCHOR_RENAMES if c in anchors.columns]
        responsible = (
            anchors.select(
                pl.col(doc).cast(pl.String), pl.col(schema.SEGMENT_ID).cast(pl.Int64).alias(sent), schema.ANCHOR_INDEX, *keep
            )
            .join(over.select(doc, sent, schema.DDP), on=[doc, sent], how="inner")
            .filter(pl.col(schema.DISTANCE_SENTENCES) == pl.col(schema.DDP))
            .sort(doc, sent, schema.ANCHOR_INDEX)
            .group_by([doc, sent], maintain_order=True)
            .first()
            .drop(schema.DDP, schema.ANCHOR_INDEX)
            .rename({c: _ANCHOR_RENAMES[c] for c in keep})
        )
        over = over.join(responsible, on=[doc, sent], how="left", maintain_order="left")
    else:
        over = over.with_columns(
            *[pl.lit(None, dtype=pl.String).alias(c) for c in ("anchor_kind", "anchor_label", "anchor_text",
                                                                schema.ANTECEDENT_KIND, schema.ANTECEDENT_TEXT)],
            pl.lit(None, dtype=pl.Int64).alias(schema.ANTECEDENT_SENTENCE),
            pl.lit(None, dtype=pl.Int64).alias(schema.DISTANCE_SENTENCES),
        )
    if corpus is not None:
        over = over.join(
            corpus.sentences.select(pl.col(doc).cast(pl.String), pl.col(sent).cast(pl.Int64), schema.TEXT, TOKENS),
            on=[doc, sent], how="left", maintain_order="left",
        )
        over = _diagnose(over, corpus, gold_scope=scope).drop(TOKENS)
    cause_keys = ["anchor_kind", "anchor_label", schema.ANTECEDENT_KIND] + ([DIAGNOSIS] if DIAGNOSIS in over.columns else [])
    causes = (
        over.group_by(cause_keys)
        .agg(pl.len().alias("n_segments"), pl.col(ERROR).sum().alias("excess_sentences"))
        .sort(["excess_sentences", "n_segments", "anchor_kind", "anchor_label"], descending=[True, True, False, False], nulls_last=True)
    )
    return ValidationResult(
        overall=overall,
        by_genre=by_genre,
        segments=joined,
        over_estimates=over,
        over_estimate_causes=causes,
        signature=signature or {},
        timing=timing or {},
        columns=reports,
        tails=ks,
        set_aside={"rule": set_aside, "segments": aside_counts, "of": joined.height} if set_aside != "none" else {},
        undefined=tuple(undefined),
        unmatched=unmatched,
    )


def _unmatched_segments(ddp: pl.DataFrame, gold: pl.DataFrame, examples: int = 5) -> dict[str, Any]:
    """The rows of ``ddp`` (``document_id``, ``sentence`` = segment id) whose key is no gold sentence: ``{}`` when
    every row matches, else ``{segments, of, examples}`` (the first ``examples`` keys, in table order)."""
    import polars as pl

    doc, sent = schema.DOCUMENT_ID, schema.SENTENCE
    keys = gold.select(pl.col(doc).cast(pl.String), pl.col(sent).cast(pl.Int64))
    extra = ddp.select(doc, sent).join(keys, on=[doc, sent], how="anti", maintain_order="left")
    if not extra.height:
        return {}
    first = [{doc: d, schema.SEGMENT_ID: s} for d, s in extra.head(examples).iter_rows()]
    return {"segments": extra.height, "of": ddp.height, "examples": first}


def unmatched_note(unmatched: dict[str, Any]) -> str:
    """One line saying which rows of the DDP segment table no gold sentence matched (they count in no figure)."""
    shown = ", ".join(f"document {e[schema.DOCUMENT_ID]!r} segment {e[schema.SEGMENT_ID]}"
                      for e in unmatched["examples"])
    more = ", ..." if unmatched["segments"] > len(unmatched["examples"]) else ""
    return (f"{unmatched['segments']:,} of {unmatched['of']:,} rows of the DDP segment table match no gold sentence "
            f"(first: {shown}{more}) and count in no figure; the figures are over the gold sentences only "
            "(recorded as 'unmatched' in the report)")


def undefined_figures(ddp: npt.ArrayLike, gold: npt.ArrayLike, metrics: ColumnMetrics, *,
                      genre: str | None = None) -> list[dict[str, Any]]:
    """The figures of ``metrics`` (one column over the segments ``ddp``/``gold``) that are undefined,
    each ``{column, genre, figure, reason}``: a correlation with fewer than 2 segments or a side the same
    in every segment; a share with no segment to count (a tail no segment reaches, coverage without a
    gold-positive segment, every share without segments)."""
    x = np.asarray(ddp, dtype=np.float64)
    y = np.asarray(gold, dtype=np.float64)
    col = metrics.column
    out: list[dict[str, Any]] = []

    def add(figure: str, reason: str) -> None:
        out.append({"column": col, "genre": genre, "figure": figure, "reason": reason})

    n = int(x.size)
    if metrics.pearson is None or metrics.spearman is None:
        if n < 2:
            why = f"fewer than 2 segments ({n})"
        elif np.all(x == x[0]):
            why = f"{col} is {x[0]:g} in every segment"
        elif np.all(y == y[0]):
            why = f"the gold distance is {y[0]:g} in every segment"
        else:  # pragma: no cover - the coefficient itself was NaN
            why = "not a number"
        for figure in ("pearson", "spearman"):
            if getattr(metrics, figure) is None:
                add(figure, why)
    if n == 0:
        for figure in ("under", "exact", "over", "mean_signed_error"):
            add(figure, "no segment")
    for t in metrics.tails:
        if t.precision.n == 0:
            add(f"precision@{t.k}", f"no segment has {col} >= {t.k}")
        if t.recall.n == 0:
            add(f"recall@{t.k}", f"no segment has gold distance >= {t.k}")
    if metrics.coverage is not None and metrics.coverage.n == 0:
        add("coverage", "no segment has gold distance > 0")
    return out


def undefined_note(undefined: Sequence[dict[str, Any]]) -> list[str]:
    """One line per DDP column saying which figures are undefined and why (``null`` in the JSON report,
    ``—`` in the text): figures with the same reason are named together, with the genres they concern."""
    by_column: dict[str, dict[str, dict[str, list[str]]]] = {}
    for u in undefined:
        where = "overall" if u["genre"] is None else f"genre {u['genre']}"
        figs = by_column.setdefault(u["column"], {}).setdefault(u["reason"], {})
        figs.setdefault(u["figure"], [])
        if where not in figs[u["figure"]]:
            figs[u["figure"]].append(where)
    lines = []
    for col, reasons in by_column.items():
        parts = []
        for reason, figs in reasons.items():
            # figures undefined in the same places are named together
            groups: dict[tuple[str, ...], list[str]] = {}
            for figure, wheres in figs.items():
                groups.setdefault(tuple(wheres), []).append(figure)
            for wheres, names in groups.items():
                parts.append(f"{', '.join(names)} in {', '.join(wheres)} ({reason})")
        lines.append(f"undefined figures of {col} (null in the report, — in the text): " + "; ".join(parts))
    return lines


def _check_ddp_column(segments: pl.DataFrame, column: str) -> None:
    """A DDP column holds whole numbers of sentences >= 0 in every row (D445 names the first bad row)."""
    import polars as pl

    col = pl.col(column)
    dtype = segments.schema[column]
    if dtype.is_numeric():
        bad = col.is_null() | (col < 0)
        if dtype.is_float():
            bad = bad | col.is_nan() | col.is_infinite() | (col != col.floor())
    else:
        bad = pl.lit(True)
    rows = segments.with_row_index("_row").filter(bad)
    if rows.height:
        r = rows.row(0, named=True)
        raise DDPDataError(
            f"DDP segment table, column '{column}', row {r['_row']} (document '{r[schema.DOCUMENT_ID]}', segment "
            f"{r[schema.SEGMENT_ID]}): {r[column]!r} is not a whole number of sentences >= 0 ({rows.height} such "
            "rows); profile the gold sentences again with ddpcore.api.profile_anchors",
            code="D445",
        )


def _check_segment_ids(segments: pl.DataFrame) -> None:
    """Every ``segment_id`` of the DDP segment table is a gold sentence index, a whole number (D280 names the first
    bad row): a text id ("s1") failed in polars' cast, and a fraction (1.5) was cut to a sentence (1) in silence."""
    import polars as pl

    col = pl.col(schema.SEGMENT_ID)
    bad = col.is_null() | col.cast(pl.Int64, strict=False).is_null()
    if segments.schema[schema.SEGMENT_ID].is_float():
        bad = bad | (col != col.floor())
    rows = segments.with_row_index("_row").filter(bad)
    if rows.height:
        r = rows.row(0, named=True)
        raise DDPDataError(
            f"DDP segment table, column '{schema.SEGMENT_ID}', row {r['_row']} (document '{r[schema.DOCUMENT_ID]}'): "
            f"{r[schema.SEGMENT_ID]!r} is not a gold sentence index, a whole number ({rows.height} such rows); profile "
            "the gold sentences with ddpcore.gold.validate.profile_gold (segment id = sentence index)", code="D280")


def _check_gold_table(gold: pl.DataFrame) -> None:
    """The gold table of :func:`compare_with_gold` holds one row per gold sentence, each with a genre and a
    gold distance that is a whole number of sentences >= 0 (D691 names the first bad row, D692 a repeated one):
    a null distance fell in none of under / exact / over, a null genre in no genre row."""
    import polars as pl

    doc, sent = schema.DOCUMENT_ID, schema.SENTENCE
    missing = [c for c in (doc, sent, GENRE, GOLD_DISTANCE) if c not in gold.columns]
    if missing:
        raise DDPDataError(f"gold table lacks column(s) {', '.join(missing)}; give the output of "
                           "ddpcore.gold.validate.compute_gold_distances", code="D691")
    dist, dtype = pl.col(GOLD_DISTANCE), gold.schema[GOLD_DISTANCE]
    if dtype.is_numeric():
        bad = dist.is_null() | (dist < 0)
        if dtype.is_float():
            bad = bad | dist.is_nan() | dist.is_infinite() | (dist != dist.floor())
    else:
        bad = pl.lit(True)
    for what, rule in ((GOLD_DISTANCE, bad), (GENRE, pl.col(GENRE).is_null())):
        rows = gold.with_row_index("_row").filter(rule)
        if rows.height:
            r = rows.row(0, named=True)
            want = "a whole number of sentences >= 0" if what == GOLD_DISTANCE else "a genre"
            raise DDPDataError(
                f"gold table, column '{what}', row {r['_row']} (document '{r[doc]}', sentence {r[sent]}): "
                f"{r[what]!r} is not {want} ({rows.height} such rows); compute the gold table with "
                "ddpcore.gold.validate.compute_gold_distances", code="D691")
    _check_unique(gold.select(pl.col(doc).cast(pl.String), pl.col(sent).cast(pl.Int64)), "gold table", sent)


def _check_unique(table: pl.DataFrame, name: str, id_name: str) -> None:
    """No (document, sentence) key twice in ``table`` (D692): its segment would be measured twice."""
    import polars as pl

    doc, sent = schema.DOCUMENT_ID, schema.SENTENCE
    dup = table.with_row_index("_row").filter(pl.len().over(doc, sent) > 1)
    if dup.height:
        r = dup.row(0, named=True)
        same = dup.filter((pl.col(doc) == r[doc]) & (pl.col(sent) == r[sent]))["_row"].to_list()
        raise DDPDataError(
            f"{name}, row {r['_row']}: document '{r[doc]}', {id_name} {r[sent]} appears {len(same)} times (rows "
            f"{', '.join(map(str, same[:5]))}{', ...' if len(same) > 5 else ''}); give each gold sentence one row",
            code="D692")


def _token_index(text: str, tokens: list[str], char_start: int) -> int:
    """Index of the gold token holding character ``char_start`` of ``text`` (-1 if unaligned).

    Tokens are located left to right with ``str.find`` (gold tokens appear in the sentence text
    in order, with or without spaces between them).
    """
    pos, found = 0, -1
    for i, tok in enumerate(tokens):
        at = text.find(tok, pos)
        if at < 0:
            return -1
        if at > char_start:
            break
        found, pos = i, at + len(tok)
    return found


def _diagnose(over: pl.DataFrame, corpus: GoldCorpus, *, gold_scope: GoldScope) -> pl.DataFrame:
    """Classify each over-estimate by its responsible anchor against the gold mentions.

    ``not_in_gold``: no gold mention covers the anchor's first token (an anchor the gold does not
    annotate: NORP adjectives, non-referential or non-annotated "it", an entity type outside the
    gold scheme); ``linked_too_far``: the anchor is a gold mention, but DDP measures it to a
    sentence before its gold chain's first mention (a pronoun linked to the wrong name, two
    entities merged under one key; the parts of a CorefUD split antecedent count as the chain's mentions, as
    in the gold distance: *they* measured to *John* of "John ... Mary ... they" is not too far);
    ``unaligned``: the anchor could not be placed on gold tokens.
    Gold mentions are those kept in ``gold_scope`` (a first/second-person pronoun removed by the
    ``ddp`` scope covers nothing). Adds ``anchor_gold_chain`` and ``diagnosis``. Runs over the
    over-estimated rows only.
    """
    import polars as pl

    doc, sent = schema.DOCUMENT_ID, schema.SENTENCE
    if schema.CHAR_START not in over.columns or over.height == 0:
        return over.with_columns(pl.lit(None, dtype=pl.String).alias(ANCHOR_GOLD_CHAIN),
                                 pl.lit(None, dtype=pl.String).alias(DIAGNOSIS))
    tok = [
        -1 if cs is None or txt is None else _token_index(txt, toks, int(cs))
        for txt, toks, cs in zip(over[schema.TEXT].to_list(), over[TOKENS].to_list(), over[schema.CHAR_START].to_list())
    ]
    over = over.with_columns(pl.Series("_tok", tok, dtype=pl.Int64), pl.int_range(pl.len()).alias("_row"))
    kept = scope_gold_mentions(corpus.mentions, gold_scope)
    # a chain's first sentence as the gold distance sees it: a split antecedent's parts (SplitAnte) included
    first = _chain_rows(corpus, kept).group_by(doc, CHAIN_ID).agg(pl.col(sent).min().alias("_first"))
    mentions = kept.select(
        pl.col(doc).cast(pl.String), pl.col(sent).cast(pl.Int64), TOKEN_START, TOKEN_END, CHAIN_ID,
    ).join(first, on=[doc, CHAIN_ID], how="left")
    cover = (
        over.select("_row", doc, sent, "_tok")
        .join(mentions, on=[doc, sent], how="inner")
        .filter((pl.col(TOKEN_START) <= pl.col("_tok")) & (pl.col("_tok") < pl.col(TOKEN_END)))
        .sort("_row", pl.col(TOKEN_END) - pl.col(TOKEN_START), TOKEN_START)
        .group_by("_row", maintain_order=True)
        .first()
        .select("_row", pl.col(CHAIN_ID).alias(ANCHOR_GOLD_CHAIN), "_first")
    )
    over = over.join(cover, on="_row", how="left", maintain_order="left")
    ref = schema.REFERENCE_SENTENCE if schema.REFERENCE_SENTENCE in over.columns else None
    measured_to = pl.col(sent) - pl.col(schema.DISTANCE_SENTENCES) if ref is None else pl.col(ref)
    diagnosis = (
        pl.when(pl.col("_tok") < 0).then(pl.lit("unaligned"))
        .when(pl.col(ANCHOR_GOLD_CHAIN).is_null()).then(pl.lit("not_in_gold"))
        .when(measured_to < pl.col("_first")).then(pl.lit("linked_too_far"))
        .otherwise(pl.lit("other"))
    )
    return over.with_columns(diagnosis.alias(DIAGNOSIS)).drop("_tok", "_row", "_first")


# --------------------------------------------------------------------------- end to end


def validate(
    gold_paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    format: str | None = None,
    distance: Distance = "chained",
    pipeline: str | None = None,
    rules: str | None = None,
    gold_scope: GoldScope = "full",
    n_process: int = 1,
    batch_size: int = 256,
    progress: bool = False,
    strict: bool = False,
    tails: Sequence[int] = DEFAULT_TAILS,
    set_aside: str = "none",
) -> ValidationResult:
    """Validate DDP against gold coreference, each gold sentence profiled as one segment.

    Parameters
    ----------
    gold_paths : path or paths
        Gold files, folders or tar archives (see :func:`ddpcore.io.gold.read_gold`).
    format : ``"litbank" | "conllu" | "conll2012"``, optional
        Gold format (default: detected from file names).
    distance : ``"chained" | "nearest"``
        DDP distance mode; the gold distance mirrors it.
    pipeline : str, optional
        spaCy pipeline (preset, installed name or path); default: ddpcore's default pipeline.
    rules : str, optional
        Anchor rule set forwarded to :func:`ddpcore.api.profile_anchors` (``"paper"`` = the
        foundation spec).
    gold_scope : ``"full" | "restricted" | "ddp"``
        Which gold mentions count (module docstring; docs/validation.md "Gold scope"): every
        mention (``full``), proper-name and pronoun mentions only (``restricted``), or the kinds
        DDP anchors (``ddp``: named mentions and third-person pronouns count, nominal mentions are
        antecedents only, first/second-person pronouns are removed). Unknown value: D230.
    n_process : int
        spaCy worker processes.
    batch_size : int
        Texts (gold sentences) per spaCy batch.
    progress : bool
        Show a progress bar while parsing.
    strict : bool
        Raise on unbalanced gold coreference brackets instead of dropping the mention.
    tails : sequence of int
        Tail thresholds k (sentences) of tail precision / recall (default 5 and 15; D443 unless
        whole numbers >= 1).
    set_aside : ``"none" | "same-string-names"``
        Segments each DDP column's figures leave out (:func:`set_aside_mask`), for a gold that
        does not chain repeated names; checked before any work (D446).
    """
    scope = resolve_gold_scope(gold_scope)
    ks = check_tails(tails)
    if set_aside not in SET_ASIDE_RULES:
        raise DDPUsageError(f"unknown set-aside rule {set_aside!r}; choose one of: {', '.join(SET_ASIDE_RULES)}",
                            code="D446")
    corpus = read_gold(gold_paths, format=format, strict=strict)
    gold = compute_gold_distances(corpus, distance=distance, gold_scope=scope)
    run, timing = profile_gold(
        corpus, distance=distance, pipeline=pipeline, rules=rules, n_process=n_process, batch_size=batch_size,
        progress=progress,
    )
    paths = [gold_paths] if isinstance(gold_paths, (str, os.PathLike)) else list(gold_paths)
    signature = {
        "ddpcore": __version__,
        "gold": {
            "paths": [str(p) for p in paths],
            "formats": list(corpus.formats),
            "documents": corpus.n_documents,
            "sentences": corpus.sentences.height,
            "mentions": corpus.mentions.height,
            "scope": scope,
            "restricted": scope == "restricted",  # kept one release for readers of older signatures
            "distance": distance,
            "tails": list(ks),
            "set_aside": set_aside,
            "ddp_columns": [c for c in DDP_COLUMNS if c in run.segments.columns],
            "repaired_brackets": sum(not w.startswith("[D413]") for w in corpus.warnings),
            # files with a '# text' that does not spell its forms (those sentences' texts rebuilt from the forms)
            "rebuilt_texts": sum(w.startswith("[D413]") for w in corpus.warnings),
            "warnings": list(corpus.warnings[:20]),
            # CorefUD entity links: SplitAnte used for the gold distance, Bridge not (bridging is no coreference)
            **({"split_antecedents": len(corpus.split_antecedents)} if corpus.split_antecedents else {}),
            **({"bridges_ignored": corpus.bridges_ignored} if corpus.bridges_ignored else {}),
            **({"notes": list((corpus.notes + corpus.genre_notes)[:20])} if corpus.notes or corpus.genre_notes else {}),
        },
        "profile": run.signature,
    }
    return compare_with_gold(
        gold,
        run.segments,
        run.anchors,
        corpus=corpus,
        gold_scope=scope,
        signature=signature,
        timing=timing,
        tails=ks,
        set_aside=set_aside,
    )


@contextlib.contextmanager
def _workers_end_on_interrupt() -> Iterator[None]:
    """On Ctrl-C, end the spaCy worker processes started inside the block at once.

    The parse workers ignore SIGINT, and the main thread waits for their results on a lock that a
    signal does not interrupt when the kernel hands SIGINT to another thread (the pool's manager
    thread, a polars thread): Python's handler, and so KeyboardInterrupt, then waited for the chunk
    in progress (up to 200,000 characters; 30 s and more on a busy machine), and the interpreter's
    exit waited for the workers again. Here a watcher thread reads the signal wake-up socket and
    ends the workers the moment SIGINT arrives, which wakes the main thread. Only processes
    started inside the block are ended (a caller's own child processes are left alone).
    """
    import multiprocessing
    import signal
    import socket
    import threading

    from ..pipeline.parse import end_processes

    before = {p.pid for p in multiprocessing.active_children()}

    def end_workers() -> None:
        end_processes([p for p in multiprocessing.active_children() if p.pid not in before])

    watcher = None
    # only where Ctrl-C means KeyboardInterrupt (a caller's own SIGINT handler may mean something else)
    if threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        r, w = socket.socketpair()
        w.setblocking(False)
        old_fd = signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)
        if old_fd != -1:  # someone else's wake-up fd (an event loop): leave it in place
            signal.set_wakeup_fd(old_fd)
            r.close()
            w.close()
        else:
            done = threading.Event()

            def watch() -> None:
                while not done.is_set():
                    try:
                        data = r.recv(64)
                    except OSError:
                        return
                    if not data or done.is_set():
                        return
                    if signal.SIGINT in data:
                        end_workers()
                        return

            watcher = threading.Thread(target=watch, name="ddp-validate-interrupt", daemon=True)
            watcher.start()
    try:
        yield
    except KeyboardInterrupt:
        end_workers()
        raise
    finally:
        if watcher is not None:
            signal.set_wakeup_fd(-1)
            done.set()
            with contextlib.suppress(OSError):
                w.send(b"\0")  # wakes the watcher, which sees ``done``
            watcher.join(5.0)
            r.close()
            w.close()


def profile_gold(
    corpus: GoldCorpus,
    *,
    distance: Distance = "chained",
    pipeline: str | None = None,
    rules: str | None = None,
    n_process: int = 1,
    batch_size: int = 256,
    progress: bool = False,
) -> tuple[Any, dict[str, float]]:
    """DDP of every gold sentence, each profiled as one segment and one sentence unit.

    Returns the :class:`ddpcore.api.ProfileResult` (``segment_id`` = gold sentence index)
    and the timing ``{"words", "seconds", "words_per_second"}`` (words = gold tokens).
    """
    import polars as pl

    from ..api import ProfileOptions, profile_anchors

    table = corpus.sentences.select(
        schema.DOCUMENT_ID,
        pl.col(schema.SENTENCE).cast(pl.Int64).alias(schema.SEGMENT_ID),
        pl.col(schema.TEXT).alias(schema.SOURCE),
        pl.col(GENRE).alias(schema.DOMAIN),
    )
    kwargs: dict[str, Any] = dict(
        document_col=schema.DOCUMENT_ID, segment_col=schema.SEGMENT_ID, text_col=schema.SOURCE,
        domain_col=schema.DOMAIN, pipeline=pipeline, n_process=n_process,
        options=ProfileOptions(distance=distance, sentence_unit="segment", batch_size=batch_size, progress=progress),
    )
    if rules is not None:
        if "rules" not in inspect.signature(profile_anchors).parameters:
            raise DDPUsageError("this ddpcore build has no selectable anchor rule sets; drop --rules", code="D424")
        kwargs["rules"] = rules
    words = int(corpus.sentences[N_TOKENS].sum())
    t0 = time.perf_counter()
    with _workers_end_on_interrupt():
        run = profile_anchors(table, **kwargs)
    seconds = time.perf_counter() - t0
    timing = {
        "words": float(words),
        "seconds": round(seconds, 3),
        "words_per_second": round(words / seconds, 1) if seconds > 0 else float("nan"),
    }
    return run, timing


# --------------------------------------------------------------------------- reports


def _fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _scope_name(gold_signature: dict[str, Any]) -> str:
    return str(gold_signature.get("scope") or ("restricted" if gold_signature.get("restricted") else "full"))


def _scope_title(gold_signature: dict[str, Any]) -> str:
    return {
        "full": "full gold", "restricted": "restricted gold (PROP+PRON)",
        "ddp": "DDP-scope gold (named + 3rd-person pronoun mentions count)",
    }.get(_scope_name(gold_signature), _scope_name(gold_signature))


def _pct_ci(p: Proportion, with_n: bool = False) -> str:
    """``share [low, high]`` in %, plus ``/n`` with ``with_n``; ``—`` when undefined (n = 0)."""
    n = f" /{p.n}" if with_n else ""
    if p.share is None or p.ci_low is None or p.ci_high is None:
        return f"{'—':>18}{n}"
    return f"{100 * p.share:5.1f} [{100 * p.ci_low:4.1f},{100 * p.ci_high:6.1f}]{n}"


def set_aside_note(set_aside: dict[str, Any]) -> str:
    """One line saying what a ``set_aside`` rule left out of each column's figures."""
    counts = ", ".join(f"{n:,} for {c}" for c, n in set_aside.get("segments", {}).items())
    return (f"set aside ({set_aside.get('rule')}): {counts} of {set_aside.get('of', 0):,} segments, whose value comes "
            "only from name re-mentions of the same string; each column's figures count the rest")


def _column_tables(name: str, report: ColumnReport, tails: Sequence[int]) -> list[str]:
    """The text tables of one DDP column: agreement, then tails (and coverage), per genre and overall."""
    rows = list(report.by_genre.items())
    if len(report.by_genre) != 1:  # the total row: '(overall)' when a genre is named 'overall'
        rows.append((distinct_label("overall", report.by_genre), report.overall))
    cell, gw = _genre_column([g for g, _ in rows])
    head = (f"{text_pad('genre', gw)}{'n':>7}{'pearson':>9}{'spearman':>10}  {'under %':<20}{'exact %':<20}"
            f"{'over %':<20}{'mean err':>8}")
    lines = [f"column {name} (shares in %, exact 95% Clopper-Pearson interval in brackets)", head, "-" * len(head)]
    for genre, m in rows:
        mean = "—" if m.mean_signed_error is None else f"{m.mean_signed_error:.2f}"
        lines.append(f"{cell(genre)}{m.n_segments:>7}{_fmt(m.pearson):>9}{_fmt(m.spearman):>10}  {_pct_ci(m.under):<20}"
                     f"{_pct_ci(m.exact):<20}{_pct_ci(m.over):<20}{mean:>8}")
    cells = [f"{what}@{k}" for k in tails for what in ("precision", "recall")]
    cover = report.overall.coverage is not None
    if cover:
        cells.append("coverage")
    width = 28
    head = (text_pad("genre", gw) + "".join(f"{c:<{width}}" for c in cells)).rstrip()
    lines += ["", f"column {name} tails (% [95% CI] /n: precision@k of DDP >= k, recall@k of gold >= k"
              + ("; coverage of gold > 0 with DDP > 0" if cover else "") + ")", head, "-" * len(head)]
    for genre, m in rows:
        figs = [p for t in m.tails for p in (t.precision, t.recall)] + ([m.coverage] if m.coverage else [])
        lines.append((cell(genre) + "".join(f"{_pct_ci(p, True):<{width}}" for p in figs)).rstrip())
    return lines


def _genre_column(genres: Sequence[Any]) -> tuple[Callable[[Any], str], int]:
    """The genre column of a ``-f text`` table: a function writing a genre on one line (``text_cell``) padded to
    the column's width in terminal columns (``text_pad``), and that width: 14, or more for a longer name."""
    width = max([14] + [text_width(text_cell(g)) + 1 for g in genres])
    return (lambda g: text_pad(text_cell(g), width)), width


def format_validation_text(result: ValidationResult, *, max_over: int = 15) -> str:
    """A readable report: per DDP column (``ddp``, ``ddp_certified`` when present) the metrics by
    genre and overall with their intervals and the tail figures, then the causes of
    over-estimates and the largest over-estimated segments (of ``ddp``)."""
    g = result.signature.get("gold", {})
    title = (
        f"DDP vs gold distance ({g.get('distance', '?')} distance, {_scope_title(g)}; "
        f"{result.segments.height} gold sentences, {g.get('documents', '?')} documents)"
    )
    lines = [title]
    if result.set_aside:
        lines.append(set_aside_note(result.set_aside))
    if result.unmatched:
        lines.append(unmatched_note(result.unmatched))
    if result.columns:
        for name, report in result.columns.items():
            lines += [""] + _column_tables(name, report, result.tails)
    else:  # a result built by hand without columns: the ddp table of GoldMetrics
        names = list(result.by_genre) + [distinct_label("overall", result.by_genre)]
        cell, gw = _genre_column(names)
        head = (f"{text_pad('genre', gw)}{'n':>7}{'pearson':>9}{'spearman':>10}{'under':>8}{'exact':>8}{'over':>8}"
                f"{'mean err':>10}")
        lines += ["", head, "-" * len(head)]

        def pct(x: float | None) -> str:
            return "—" if x is None else f"{x:.1%}"

        def row(name: str, m: GoldMetrics) -> str:
            return (
                f"{cell(name)}{m.n_segments:>7}{_fmt(m.pearson):>9}{_fmt(m.spearman):>10}"
                f"{pct(m.share_under):>8}{pct(m.share_exact):>8}{pct(m.share_over):>8}"
                f"{_fmt(m.mean_signed_error, 2):>10}"
            )

        for genre, m in result.by_genre.items():
            lines.append(row(genre, m))
        if len(result.by_genre) != 1:
            lines.append(row(distinct_label("overall", result.by_genre), result.overall))
    if result.timing:
        lines.append("")
        lines.append(
            f"DDP run: {int(result.timing.get('words', 0))} words in {result.timing.get('seconds', 0):.1f} s "
            f"({result.timing.get('words_per_second', 0):,.0f} words/s)"
        )
    causes = result.over_estimate_causes
    if causes.height:
        lines += ["", f"over-estimates: {result.over_estimates.height} segments; by responsible anchor:",
                  f"{'kind':<9}{'label':<12}{'antecedent':<14}{'diagnosis':<16}{'segments':>9}{'excess':>8}"]
        for r in causes.iter_rows(named=True):
            lines.append(
                f"{str(r['anchor_kind']):<9}{str(r['anchor_label']):<12}{str(r[schema.ANTECEDENT_KIND]):<14}"
                f"{str(r.get(DIAGNOSIS, '')):<16}{r['n_segments']:>9}{r['excess_sentences']:>8}"
            )
        top = result.over_estimates.sort(ERROR, descending=True).head(max_over)
        lines += ["", f"largest over-estimates (first {top.height}):"]
        for r in top.iter_rows(named=True):
            ante_sentence = r.get(schema.ANTECEDENT_SENTENCE)
            if r.get(schema.ANTECEDENT_KIND) in (None, "none") or ante_sentence is None or ante_sentence < 0:
                # no antecedent (a pronoun's default distance): no sentence to name, not "s-1"
                ante = "no antecedent"
            else:
                ante = f"{r.get(schema.ANTECEDENT_KIND)} {r.get(schema.ANTECEDENT_TEXT)!r} (s{ante_sentence})"
            lines.append(
                f"  {r[schema.DOCUMENT_ID]} s{r[schema.SENTENCE]}: ddp {r[schema.DDP]} > gold {r[GOLD_DISTANCE]}; "
                f"{r.get('anchor_kind')} {r.get('anchor_text')!r} [{r.get('anchor_label')}] -> {ante}"
                + (f" [{r[DIAGNOSIS]}]" if r.get(DIAGNOSIS) else "")
            )
    return "\n".join(lines)



#: markers of the genres of `ddp validate --plot`, one per pass through the colour cycle
SCATTER_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or D425 (exit 2) saying how to install matplotlib
    (``ddp validate --plot`` calls it before the long run, so a missing package fails first)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise DDPUsageError(
            "--plot needs matplotlib, which is not installed; install it with `pip install 'matplotlib>=3.7'` "
            "(the [plot] extra; from a ddpcore clone `pip install '.[plot]'`)",
            code="D425",
        ) from None
    return plt


def plot_validation(result: ValidationResult, path: str | os.PathLike[str]) -> None:
    """Scatter plot of DDP (y) against gold distance (x), one colour per genre, with the
    diagonal DDP = gold; points above it are over-estimates. Segments a ``set_aside`` rule left out
    of the ``ddp`` figures are not drawn. Needs ``ddpcore[plot]``."""
    plt = pyplot()
    import warnings

    import polars as pl

    from ..io.tables import atomic_path
    from ..signature import figure_metadata

    seg = result.segments
    aside = f"{schema.DDP}{SET_ASIDE_SUFFIX}"
    if aside in seg.columns:  # the points the figures count (--set-aside), so n and r in the legend agree
        seg = seg.filter(~pl.col(aside))
    fig, ax = plt.subplots(figsize=(6, 6))
    rng = np.random.default_rng(0)  # jitter only separates overlapping integer points
    colours = plt.rcParams["axes.prop_cycle"].by_key().get("color") or ["C0"]
    for i, genre in enumerate(sorted(seg[GENRE].unique().to_list())):
        part = seg.filter(pl.col(GENRE) == genre)
        x = part[GOLD_DISTANCE].to_numpy().astype(float)
        y = part[schema.DDP].to_numpy().astype(float)
        m = result.by_genre.get(genre)
        lab = f"{genre} (n={part.height}, r={_fmt(m.pearson if m else None, 2)})"
        # beyond the colour cycle (10 colours; GUM has 24 genres) a genre gets the next marker: no two look alike
        ax.scatter(x + rng.uniform(-0.2, 0.2, x.size), y + rng.uniform(-0.2, 0.2, y.size), s=6, alpha=0.35, label=lab,
                   color=colours[i % len(colours)], marker=SCATTER_MARKERS[(i // len(colours)) % len(SCATTER_MARKERS)])
    top = float(max(seg[GOLD_DISTANCE].max() or 0, seg[schema.DDP].max() or 0)) + 1
    ax.plot([0, top], [0, top], color="black", linewidth=0.8, label="DDP = gold")
    g = result.signature.get("gold", {})
    ax.set_xlabel("gold distance (sentences)")
    ax.set_ylabel("DDP (sentences)")
    kept = f"; {result.set_aside['rule']} set aside" if result.set_aside else ""
    ax.set_title(f"DDP vs gold ({g.get('distance', '')}, {_scope_name(g)} gold scope{kept})")
    ax.legend(fontsize=7, markerscale=2)
    fig.tight_layout()
    dest = os.fspath(path)
    ext = os.path.splitext(dest)[1].lstrip(".").lower() or "png"
    # written as `ddp plot` writes its figures (the same metadata): atomically, the run's signature embedded (PNG text chunk
    # ``ddpcore.signature``, SVG <metadata>, PDF document information ``ddpcore.signature``)
    with warnings.catch_warnings():
        # matplotlib warns that a PDF info key other than its standard ones (Title, Author...) is
        # unknown, and writes it all the same
        warnings.filterwarnings("ignore", message="Unknown infodict keyword", category=UserWarning)
        try:
            with atomic_path(dest) as tmp:
                fig.savefig(tmp, format=ext, dpi=120, metadata=figure_metadata(ext, result.signature))
        finally:
            plt.close(fig)
