"""Certified DDP: which anchors' distances are certain enough not to over-estimate gold (issue 21).

DDP promises a lower bound: a segment at DDP *k* needs context at least *k* sentences back. An
anchor whose link may be wrong (a pronoun linked to the wrong entity, two entities keyed as one
name, a non-referential *it*) can break that promise. This stage scores every anchor with the
shipped certification model (:mod:`ddpcore.anchors.certify_model`): ``confidence`` is the model's
calibrated probability that the anchor's measured distance does not exceed the gold distance of its
sentence, measured out of fold on gold coreference (docs/validation.md, "Certified DDP"), and
``certified`` is ``confidence >= threshold`` (one threshold for distances below
``long_distance``, a stricter one at and above it, both chosen by nested cross-validation).
``ddp_certified`` of a segment (sentence) is the maximum distance over its certified anchors, 0
when it has none: uncertain anchors abstain, they never get a default distance.

The features (:data:`FEATURES`) are read off the anchors table of whole documents and the segment
texts, with polars expressions (no Python loop over anchors): the anchor's kind, label, pronoun
form and antecedent kind; its distance and link gap; the continuity of its entity's chain up to
the anchor (mentions so far, largest gap, mentions in the last ten sentences); surface tests for
non-referential *it* (extraposition "it is ADJ to/that", "it seems", weather and time, clefts);
generic "his or her"; and, for names, whether the antecedent is the same string.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import schema

if TYPE_CHECKING:
    import polars as pl

    from .certify_model import CertifyModel

#: anchor labels with their own weight (others share the intercept)
LABELS = ("PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE",
          "MASC_SG", "FEM_SG", "NEUT_SG", "PL")
PRONOUN_FORMS = ("it", "he", "they", "his", "she", "her", "them", "their", "him", "its", "hers", "himself",
                 "herself", "itself", "themselves", "theirs")
ANTECEDENT_KINDS = ("entity", "noun", "none")

_COPULA = (r"(?:is|was|'s|’s|would be|will be|could be|might be|may be|must be|should be|has been|had been|"
           r"becomes|became|remains|remained|seems|seemed)")
#: "it is (very) hard to / that / for ...": extraposition; "it seems / appears / turns out"; weather, time; clefts
EXTRAPOSITION = (rf"^\s*{_COPULA}\s+(?:not\s+)?(?:(?:very|so|too|quite|rather|pretty|really|more|most|less|least|"
                 r"extremely|a\s+\w+|an\s+\w+|the\s+\w+|\w+ly)\s+)*\w+\s+(?:to|that|for|if|whether|how|when|what|why|who|as)\b")
SEEM = (r"^\s*(?:seems?|seemed|appears?|appeared|happens?|happened|turns? out|turned out|looks? like|looked like|"
        r"sounds? like|sounded like)\b")
WEATHER = (r"^\s*(?:is|was|'s|’s)\s+(?:raining|snowing|sunny|cold|hot|warm|dark|light|late|early|time|noon|midnight|"
           r"morning|night|evening|\d)")
CLEFT = r"^\s*(?:is|was|'s|’s)\s+(?:not\s+)?(?:only\s+)?(?:\w+\s+){1,4}(?:that|who|which|whom)\b"

FEATURES: tuple[str, ...] = (
    "pronoun",
    *(f"label={x}" for x in LABELS),
    *(f"antecedent={x}" for x in ANTECEDENT_KINDS),
    *(f"form={x}" for x in PRONOUN_FORMS),
    "log_distance", "distance_1", "log_distance_pronoun", "log_link_gap", "log_chain_behind",
    "log_mentions_before", "log_max_gap", "log_gap", "seem", "weather", "extraposition", "cleft",
    "sentence_initial", "followed_by_or", "preceded_by_or", "at_sentence_end", "name_tokens", "has_digit",
    "all_caps", "same_string", "antecedent_contains", "log_sentence", "log_persons_5", "log_recent_mentions",
    "log_since_first",
)


def anchor_features(anchors: pl.DataFrame, texts: pl.DataFrame, *, document: str = schema.DOCUMENT_ID,
                    segment: str = schema.SEGMENT_ID, text: str = schema.SOURCE) -> np.ndarray:
    """Feature matrix of every anchor row, shape ``(n_anchors, len(FEATURES))`` float64, rows in the
    order of ``anchors``.

    ``anchors``: the anchors table of whole documents (``document_id, segment_id, anchor_index,
    sentence, kind, label, text, char_start, char_end, entity_id, antecedent_kind, antecedent_text,
    antecedent_sentence, distance_sentences``; sentences are document-level indices).
    ``texts``: ``document, segment, text`` columns (the segment text the character offsets index);
    ``document`` / ``segment`` / ``text`` name those columns in both frames. Chain features (mentions
    so far, gaps) are an entity's own and 0 for pronouns, whose table rows carry no entity id. Rows with
    a distance <= 0 (first mentions) get features too; they are never certified.
    """
    import polars as pl

    doc, seg = document, segment
    a = anchors.select(doc, seg, schema.ANCHOR_INDEX, "sentence", schema.KIND, schema.LABEL, schema.TEXT,
                       schema.CHAR_START, schema.CHAR_END, schema.ENTITY_ID, schema.ANTECEDENT_KIND,
                       schema.ANTECEDENT_TEXT, schema.ANTECEDENT_SENTENCE, schema.DISTANCE_SENTENCES)
    a = a.with_row_index("__order").join(
        texts.select(doc, seg, pl.col(text).alias("__text")), on=[doc, seg], how="left")
    d = pl.col(schema.DISTANCE_SENTENCES)
    a = a.sort(doc, "sentence", seg, schema.ANCHOR_INDEX)
    key = [doc, schema.ENTITY_ID]
    a = a.with_columns(
        __n_prev=pl.int_range(pl.len()).over(key),
        __gap=(pl.col("sentence") - pl.col("sentence").shift(1)).over(key),
        __first=pl.col("sentence").min().over(key),
    ).with_columns(
        __max_gap=pl.col("__gap").fill_null(0).cum_max().over(key),
        __recent=pl.col("__gap").fill_null(99).is_between(0, 10).cast(pl.Int64).cum_sum().over(key),
    )
    # distinct PERSON entities mentioned in the 5 sentences before each sentence
    per = (a.filter((pl.col(schema.KIND) == "entity") & (pl.col(schema.LABEL) == "PERSON"))
           .select(doc, pl.int_ranges(pl.col("sentence") + 1, pl.col("sentence") + 6).alias("sentence"), schema.ENTITY_ID)
           .explode("sentence").unique()
           .group_by(doc, "sentence").agg(pl.len().alias("__persons")))
    a = a.join(per, on=[doc, "sentence"], how="left").with_columns(pl.col("__persons").fill_null(0))
    text = pl.col("__text").fill_null("")
    after = text.str.slice(pl.col(schema.CHAR_END), 80).str.to_lowercase()
    before = text.str.slice(pl.max_horizontal(pl.col(schema.CHAR_START) - 12, 0),
                            pl.min_horizontal(pl.col(schema.CHAR_START), 12)).str.to_lowercase()
    low = pl.col(schema.TEXT).str.to_lowercase()
    pro = pl.col(schema.KIND) == "pronoun"
    ent = pl.col(schema.KIND) == "entity"
    entf = ent.cast(pl.Float64)
    link_gap = (pl.col("sentence") - pl.col(schema.ANTECEDENT_SENTENCE)).clip(0, None)
    strip_the = r"^the\s+"
    ante_low = pl.col(schema.ANTECEDENT_TEXT).fill_null("").str.to_lowercase()
    log1p = lambda e: (e.cast(pl.Float64).clip(0, None) + 1).log()  # noqa: E731
    cols = [
        pro,
        *[pl.col(schema.LABEL) == x for x in LABELS],
        *[pl.col(schema.ANTECEDENT_KIND) == x for x in ANTECEDENT_KINDS],
        *[pro & (low == x) for x in PRONOUN_FORMS],
        log1p(d), d == 1, log1p(d) * pro.cast(pl.Float64), log1p(link_gap), log1p(d - link_gap),
        entf * log1p(pl.col("__n_prev")), entf * log1p(pl.col("__max_gap")), entf * log1p(pl.col("__gap").fill_null(0)),
        pro & after.str.contains(SEEM), pro & after.str.contains(WEATHER), pro & after.str.contains(EXTRAPOSITION),
        pro & after.str.contains(CLEFT),
        before.str.contains(r"(?:^|[.!?:;][\"”’)]*\s+|[\"“‘(]\s*)$") | (pl.col(schema.CHAR_START) == 0),
        after.str.contains(r"^\s*or\s"), before.str.contains(r"\sor\s*$"),
        after.str.contains(r"^\s*(?:$|[?.!])"),
        ent.cast(pl.Float64) * (pl.col(schema.TEXT).str.count_matches(r"\S+")).cast(pl.Float64),
        pl.col(schema.TEXT).str.contains(r"\d"),
        (pl.col(schema.TEXT).str.to_uppercase() == pl.col(schema.TEXT)) & (pl.col(schema.TEXT).str.len_chars() > 1)
        & pl.col(schema.TEXT).str.contains(r"[A-Za-z]"),
        ent & (low.str.replace(strip_the, "") == ante_low.str.replace(strip_the, "")),
        ent & ante_low.str.contains(low, literal=True),
        log1p(pl.col("sentence")), log1p(pl.col("__persons")), entf * log1p(pl.col("__recent")),
        entf * log1p(pl.col("sentence") - pl.col("__first")),
    ]
    assert len(cols) == len(FEATURES)
    out = a.select(pl.col("__order"), *[c.cast(pl.Float64).fill_null(0.0).alias(f"f{i}") for i, c in enumerate(cols)])
    return out.sort("__order").drop("__order").to_numpy().astype(np.float64, copy=False)


def certify(features: np.ndarray, distance: np.ndarray, model: CertifyModel) -> tuple[np.ndarray, np.ndarray]:
    """``(confidence, certified)`` of every anchor: ``confidence`` float64 in [0, 1] (the calibrated
    probability that the distance does not over-estimate gold; NaN for rows with distance <= 0,
    which measure nothing), ``certified`` bool. Shapes ``(n_anchors,)``."""
    z = (features - model.mean) / model.scale
    # the dot product feature by feature, in a fixed order: the same bits whatever the number of rows
    # (a matrix product's summation order depends on the batch size, and outputs must not)
    logit = np.full(z.shape[0], model.bias, dtype=np.float64)
    for j in range(z.shape[1]):  # over the 63 features, vectorised over the anchors
        logit += z[:, j] * model.weights[j]
    p_over = 1.0 / (1.0 + np.exp(-logit))
    confidence = 1.0 - p_over
    measured = distance > 0
    threshold = np.where(distance >= model.long_distance, model.threshold_long, model.threshold)
    certified = measured & (confidence >= threshold)
    confidence = np.where(measured, confidence, math.nan)
    return confidence, certified
