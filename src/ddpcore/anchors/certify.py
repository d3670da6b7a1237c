"""Certified DDP: which distances are certain enough not to over-estimate gold (issue 21).

DDP promises a lower bound: a segment at DDP *k* needs context at least *k* sentences back. An
anchor whose link may be wrong (a pronoun linked to the wrong entity, two entities keyed as one
name, a non-referential *it*) can break that promise. This stage scores, with the shipped
certification model (:mod:`ddpcore.anchors.certify_model`), every **candidate distance** of an
anchor (:func:`chain_candidates`): its full distance (back to its chain's first mention, the one
``ddp`` counts) and the shorter distances back to the chain's second and third mention, to the
antecedent it links to, and to the previous mention of its chain, pronouns linked to it included. A candidate's confidence is the model's calibrated probability that its
distance does not exceed the gold distance of the anchor's sentence, measured out of fold on gold
coreference (docs/validation.md, "Certified DDP"); it is certified when the confidence reaches the
threshold (one below ``long_distance`` sentences, a stricter one at and above it, where only full
distances count; both chosen by nested cross-validation).

Per anchor: ``confidence`` and ``certified`` are those of the full distance, ``distance_certified``
is the largest certified candidate distance (partial credit: when the whole chain is uncertain but
its last link is not, the anchor counts the link's distance), 0 when none. ``ddp_certified`` of a
segment (sentence) is the maximum ``distance_certified`` of its anchors, 0 when it has none:
uncertain anchors abstain, and every certified value is a measured distance back to a mention of
the anchor's chain, never a default distance.

The anchor features (:data:`ANCHOR_FEATURES`) are read off the anchors table of whole documents and
the segment texts, with polars expressions (no Python loop over anchors): the anchor's kind, label,
pronoun form and antecedent kind; its distance and link gap; the continuity of its entity's chain up
to the anchor (mentions so far, largest gap, mentions in the last ten sentences); the anchors before
it in its sentence (names, pronouns, a name a pronoun can take up); surface tests for
non-referential *it* (extraposition "it is ADJ to/that", "it seems", weather and time, clefts) and
the word after a pronoun; quotation; generic "his or her"; for names, whether the antecedent is the
same string; the antecedent's length and capital. :data:`CANDIDATE_FEATURES` describe the candidate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
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

#: entity labels a plural pronoun can take up within its sentence ("the company ... they")
GROUP_LABELS = ("ORG", "NORP", "GPE")
#: double quotation marks; an odd number before the anchor in its segment: inside a quotation
QUOTES = r'["“”]'
NEXT_BE = r"^\s*(?:is|was|are|were|'s|’s|isn't|wasn't|isn’t|wasn’t)\b"
NEXT_MODAL = r"^\s*(?:would|will|can|could|may|might|must|should|'ll|’ll|'d|’d)\b"
NEXT_HAVE = r"^\s*(?:has|had|have|'ve|’ve)\b"
PREPOSITION_BEFORE = r"(?:^|\s)(?:in|on|at|of|for|with|to|from|by|about|into|like|than)\s*$"

#: the roles of ddpcore.pipeline.roles.ROLES with their own weight ("other" shares the intercept)
PARSE_ROLES = ("subject", "object", "possessive", "oblique", "modifier", "appos", "conj", "expl")

ANCHOR_FEATURES: tuple[str, ...] = (
    "pronoun",
    *(f"label={x}" for x in LABELS),
    *(f"antecedent={x}" for x in ANTECEDENT_KINDS),
    *(f"form={x}" for x in PRONOUN_FORMS),
    "log_distance", "distance_1", "log_distance_pronoun", "log_link_gap", "log_chain_behind",
    "log_mentions_before", "log_max_gap", "log_gap", "seem", "weather", "extraposition", "cleft",
    "sentence_initial", "followed_by_or", "preceded_by_or", "at_sentence_end", "name_tokens", "has_digit",
    "all_caps", "same_string", "antecedent_contains", "log_sentence", "log_persons_5", "log_recent_mentions",
    "log_since_first",
    # issue 21, second round: the sentence around the anchor, the word after a pronoun, the antecedent's form
    "log_entities_before", "log_pronouns_before", "compatible_before", "quoted", "relative_position",
    "next_be", "next_modal", "next_have", "after_preposition", "log_antecedent_tokens", "antecedent_capitalized",
    # issue 21, third round: the parse (ddpcore.pipeline.roles): the anchor's and its antecedent's role, the
    # gender/number-compatible candidates a pronoun had to choose from
    *(f"role={x}" for x in PARSE_ROLES), *(f"antecedent_role={x}" for x in PARSE_ROLES),
    "same_role", "log_candidates", "candidates_0", "candidates_1",
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
                       schema.ANTECEDENT_TEXT, schema.ANTECEDENT_SENTENCE, schema.DISTANCE_SENTENCES,
                       schema.ROLE, schema.ANTECEDENT_ROLE, schema.N_CANDIDATES)
    a = a.with_row_index("__order").join(
        texts.select(doc, seg, pl.col(text).alias("__text")), on=[doc, seg], how="left")
    d = pl.col(schema.DISTANCE_SENTENCES)
    a = a.sort(doc, "sentence", seg, schema.ANCHOR_INDEX)
    # each (document, entity id) chain up to the row, in this order: mentions before, gap to the previous one
    # (null at the first), the chain's first sentence, largest gap so far, mentions within 10 sentences so far
    a = a.with_columns(**_chain_windows(a, doc))
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
    # anchors of the same sentence before this one (anchor_index order), by kind; a compatible name before a pronoun
    a = a.sort(doc, "sentence", schema.ANCHOR_INDEX)
    a = a.with_columns(**_sentence_windows(a, doc))
    lab = pl.col(schema.LABEL)
    compatible = pro & (((lab.is_in(["MASC_SG", "FEM_SG"])) & (pl.col("__person_before") > 0))
                        | ((lab == "NEUT_SG") & (pl.col("__ents_before") > pl.col("__person_before")))
                        | ((lab == "PL") & (pl.col("__group_before") > 0)))
    head = text.str.slice(0, pl.col(schema.CHAR_START))
    ante = pl.col(schema.ANTECEDENT_TEXT).fill_null("")
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
        log1p(pl.col("__ents_before")), log1p(pl.col("__pros_before")), compatible,
        (head.str.count_matches(QUOTES) % 2) == 1,
        pl.col(schema.CHAR_START),  # relative_position: divided below
        pro & after.str.contains(NEXT_BE), pro & after.str.contains(NEXT_MODAL), pro & after.str.contains(NEXT_HAVE),
        before.str.contains(PREPOSITION_BEFORE),
        log1p(ante.str.count_matches(r"\S+")),
        (pl.col(schema.ANTECEDENT_KIND) == "noun") & ante.str.contains(r"^[A-Z]"),
        *[pl.col(schema.ROLE) == x for x in PARSE_ROLES],
        *[pl.col(schema.ANTECEDENT_ROLE) == x for x in PARSE_ROLES],
        (pl.col(schema.ROLE) == pl.col(schema.ANTECEDENT_ROLE)),
        pro.cast(pl.Float64) * log1p(pl.col(schema.N_CANDIDATES).fill_null(0)),
        pro & (pl.col(schema.N_CANDIDATES) == 0), pro & (pl.col(schema.N_CANDIDATES) == 1),
    ]
    assert len(cols) == len(ANCHOR_FEATURES)
    out = a.select(pl.col("__order"), *[c.cast(pl.Float64).fill_null(0.0).alias(f"f{i}") for i, c in enumerate(cols)],
                   pl.max_horizontal(text.str.len_chars(), 1).cast(pl.Float64).alias("__len"))
    x = out.sort("__order").drop("__order").to_numpy()
    # the anchor's start over its segment's length in numpy: polars divides by a column that holds one value (a
    # batch of one segment) as a product with its reciprocal, one bit off the quotient, so the bits of a
    # confidence would depend on the batching
    feats = np.array(x[:, :-1], dtype=np.float64, order="C")
    rel = ANCHOR_FEATURES.index("relative_position")
    feats[:, rel] = x[:, rel] / x[:, -1]
    return feats


def _string_codes(values: pl.Series) -> np.ndarray:
    """int64 codes of ``values`` as strings, equal strings equal codes (null as ""), shape ``(n,)``."""
    import polars as pl

    return values.cast(pl.String).fill_null("").cast(pl.Categorical).to_physical().cast(pl.Int64).to_numpy()


def _group_starts(same_as_previous: np.ndarray) -> np.ndarray:
    """Per row, the index of the first row of its run of rows (``same_as_previous[i]``: row ``i`` continues
    row ``i - 1``'s group), shape ``(n,)`` int64."""
    idx = np.arange(same_as_previous.shape[0], dtype=np.int64)
    return np.maximum.accumulate(np.where(same_as_previous, 0, idx)) if idx.shape[0] else idx


def _chain_windows(a: pl.DataFrame, doc: str) -> dict[str, pl.Series]:
    """The chain columns of :func:`anchor_features` for the rows of ``a`` in its order, grouped by
    (``doc``, ``entity_id``) with nulls a group of their own (what ``polars``' ``over`` does), each
    ``(n,)``: ``__n_prev`` (rows of the group before), ``__gap`` (sentences since the group's previous
    row; null at its first), ``__first`` (the group's smallest sentence), ``__max_gap`` (largest gap so
    far, the first counting 0) and ``__recent`` (rows so far whose gap is 0..10, the first counting as
    not). One stable sort by group, then runs; no loop over rows."""
    import polars as pl

    n = a.height
    docs = _string_codes(a[doc])
    eid = a[schema.ENTITY_ID]
    group = _codes(docs, eid.is_null().to_numpy().astype(np.int64), eid.fill_null(0).cast(pl.Int64).to_numpy())
    sent = a["sentence"].cast(pl.Int64).to_numpy()
    order = np.argsort(group, kind="stable")
    g, s = group[order], sent[order]
    cont = np.zeros(n, dtype=bool)
    cont[1:] = g[1:] == g[:-1]
    start = _group_starts(cont)
    pos = np.arange(n, dtype=np.int64)
    gap = np.zeros(n, dtype=np.int64)
    gap[1:] = s[1:] - s[:-1]
    gap[~cont] = 0
    first = np.minimum.reduceat(s, np.flatnonzero(~cont))[np.cumsum(~cont) - 1] if n else s
    # the largest gap so far within the group: a running maximum over (group rank, gap) pairs
    span = int(gap.max(initial=0)) - int(gap.min(initial=0)) + 1
    rank = np.cumsum(~cont) - 1
    keyed = rank * span + (gap - int(gap.min(initial=0)))
    max_gap = np.maximum.accumulate(keyed) - rank * span + int(gap.min(initial=0)) if n else gap
    near = (cont & (gap >= 0) & (gap <= 10)).astype(np.int64)
    total = np.cumsum(near)
    recent = total - (total[start] - near[start])
    out = {"__n_prev": pos - start, "__gap": gap, "__first": first, "__max_gap": max_gap, "__recent": recent}
    cols: dict[str, pl.Series] = {}
    for name, v in out.items():
        back = np.empty(n, dtype=np.int64)
        back[order] = v
        cols[name] = pl.Series(name, back)
    first_row = np.empty(n, dtype=bool)
    first_row[order] = ~cont
    cols["__gap"] = cols["__gap"].set(pl.Series(first_row), None)  # type: ignore[arg-type]  # null at a chain's first
    return cols


def _sentence_windows(a: pl.DataFrame, doc: str) -> dict[str, pl.Series]:
    """For the rows of ``a`` (sorted by ``doc``, sentence, anchor index), the anchors of the same
    sentence before each row, each ``(n,)`` int64: ``__ents_before`` (names), ``__pros_before``
    (pronouns), ``__person_before`` (PERSON names), ``__group_before`` (names of :data:`GROUP_LABELS`)."""
    import polars as pl

    n = a.height
    docs = _string_codes(a[doc])
    sent = a["sentence"].cast(pl.Int64).to_numpy()
    cont = np.zeros(n, dtype=bool)
    cont[1:] = (docs[1:] == docs[:-1]) & (sent[1:] == sent[:-1])
    start = _group_starts(cont)
    kind, label = a[schema.KIND], a[schema.LABEL]
    ent = (kind == "entity").fill_null(False)
    flags = {"__ents_before": ent, "__pros_before": (kind == "pronoun").fill_null(False),
             "__person_before": ent & (label == "PERSON").fill_null(False),
             "__group_before": ent & label.is_in(list(GROUP_LABELS)).fill_null(False)}
    cols = {}
    for name, flag in flags.items():
        f = flag.to_numpy().astype(np.int64)
        total = np.cumsum(f)
        cols[name] = pl.Series(name, total - f - (total[start] - f[start]))
    return cols


#: the chain positions a distance can be certified back to (partial credit): the chain's first mention
#: (the full distance), its second and third (distinct sentences), the antecedent the anchor links to, and
#: the nearest earlier sentence with a mention of the chain counting the pronouns linked to it ("previous")
CANDIDATES = ("first", "second", "third", "antecedent", "previous")


@dataclass(frozen=True)
class Candidates:
    """The distances an anchor can be certified for, one row per (anchor, chain position), sorted by
    anchor then position: ``row`` int64 anchor row, ``rank`` int64 index into :data:`CANDIDATES`,
    ``distance`` int64 sentences from the anchor back to that mention (> 0); shapes ``(n_candidates,)``."""

    row: np.ndarray
    rank: np.ndarray
    distance: np.ndarray


def chain_candidates(anchors: pl.DataFrame, *, document: str = schema.DOCUMENT_ID) -> Candidates:
    """Every measured distance of an anchor back to a mention of its chain (columns as
    :func:`anchor_features`, plus ``reference_sentence``). An anchor with ``distance_sentences > 0``
    gets its full distance (``distance_sentences`` itself, rank 0: the distance ``ddp`` counts) and,
    when its chain is a name's (the anchor's own ``entity_id``, or for a pronoun the entity of its
    antecedent mention: the entity row at ``antecedent_sentence`` with the antecedent's text, the
    lowest entity id if several), the distances back to the chain's second and third distinct
    sentences between ``reference_sentence`` and ``antecedent_sentence`` (ranks 1, 2) and back to
    ``antecedent_sentence`` (rank 3). Rank 4 ("previous"): back to the nearest earlier sentence holding
    a mention of the anchor's chain, where the chain also holds the pronouns linked to it: a name's
    chain is its entity (its names and the pronouns whose antecedent is one of them), a pronoun's the
    chain of its antecedent entity, or, for a pronoun linked to a common noun, the pronouns linked to
    the same noun mention (same ``antecedent_sentence`` and ``antecedent_text``). Only distances in 1 ..
    the full distance; a distance reached twice is kept once, at its lowest rank. A pronoun without an
    antecedent has its full distance only (the model learns that it over-estimates)."""
    import polars as pl

    n = anchors.height
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Candidates(row=empty, rank=empty.copy(), distance=empty.copy())

    def ints(col: str) -> tuple[np.ndarray, np.ndarray]:
        """int64 values of ``col`` (0 where null) and where they are present."""
        c = anchors[col]
        return c.fill_null(0).cast(pl.Int64).to_numpy(), c.is_not_null().to_numpy()

    doc = _string_codes(anchors[document])
    sent, _ = ints("sentence")
    eid_col, eid_ok = ints(schema.ENTITY_ID)
    ante_s, ante_s_ok = ints(schema.ANTECEDENT_SENTENCE)
    ref, ref_ok = ints(schema.REFERENCE_SENTENCE)
    dist, dist_ok = ints(schema.DISTANCE_SENTENCES)
    kind = anchors[schema.KIND]
    ent = (kind == "entity").fill_null(False).to_numpy()
    ante_kind = anchors[schema.ANTECEDENT_KIND]
    ante_ent = (ante_kind == "entity").fill_null(False).to_numpy()
    ante_noun = (ante_kind == "noun").fill_null(False).to_numpy()
    # one code space for the names' texts and the antecedents' texts (equal strings, equal codes)
    both = pl.concat([anchors[schema.TEXT].cast(pl.String), anchors[schema.ANTECEDENT_TEXT].cast(pl.String)])
    text_ok_both = both.is_not_null().to_numpy()
    text_both = _string_codes(both)
    text, ante_text = text_both[:n], text_both[n:]
    text_ok, ante_text_ok = text_ok_both[:n], text_ok_both[n:]

    # the entity of a pronoun's antecedent: the name at that sentence with that text (lowest entity id if several)
    names = np.flatnonzero(ent & eid_ok & text_ok)
    asks = np.flatnonzero(ante_text_ok & ante_s_ok)
    code = _codes(np.concatenate([doc[names], doc[asks]]), np.concatenate([sent[names], ante_s[asks]]),
                  np.concatenate([text[names], ante_text[asks]]))
    lowest = np.full(int(code.max(initial=-1)) + 1, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(lowest, code[:len(names)], eid_col[names])
    looked = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    looked[asks] = lowest[code[len(names):]]
    found = looked != np.iinfo(np.int64).max
    # the entity of every row's chain: a name's own, a pronoun's antecedent entity (else none)
    eid = np.where(ent, eid_col, looked)
    eid_valid = np.where(ent, eid_ok, ante_ent & found)
    # the chain of every row: that entity, or for a pronoun linked to a common noun, that noun mention
    noun = ~ent & ~ante_ent & ante_noun & ante_s_ok & ante_text_ok
    has_chain = eid_valid | noun
    chain = np.full(n, -1, dtype=np.int64)
    rows = np.flatnonzero(has_chain)
    chain[rows] = _codes(doc[rows], noun[rows].astype(np.int64), np.where(noun[rows], ante_s[rows], eid[rows]),
                         np.where(noun[rows], ante_text[rows], 0))

    meas = dist_ok & (dist > 0)
    parts_row, parts_rank, parts_d = [], [], []

    def add(r: np.ndarray, rank: int, d: np.ndarray) -> None:
        parts_row.append(r)
        parts_rank.append(np.full(r.shape[0], rank, dtype=np.int64))
        parts_d.append(d)

    add(np.flatnonzero(meas), 0, dist[meas])  # the full distance
    # ranks 1 and 2: the chain's second and third distinct sentences between the reference and the antecedent
    span = int(max(sent.max(), ante_s.max(initial=0), ref.max(initial=0))) + 2  # sentences fit in [-1, span - 1)
    with_eid = np.flatnonzero(meas & eid_valid)
    pair = _codes(np.concatenate([doc[names], doc[with_eid]]), np.concatenate([eid_col[names], eid[with_eid]]))
    mention_keys = np.unique(pair[:len(names)] * span + (sent[names] + 1))
    ask = pair[len(names):]
    lad = ref_ok[with_eid] & ante_s_ok[with_eid]
    r_l, ask_l = with_eid[lad], ask[lad]
    hi = np.minimum(ante_s[r_l], sent[r_l] - 1)
    lo_i = np.searchsorted(mention_keys, ask_l * span + (ref[r_l] + 1), side="left")
    hi_i = np.searchsorted(mention_keys, ask_l * span + (hi + 1), side="right")
    for k in (1, 2):
        ok = (hi >= ref[r_l]) & (hi_i - lo_i > k)
        m = mention_keys[lo_i[ok] + k] % span - 1
        add(r_l[ok], k, sent[r_l[ok]] - m)
    # rank 3: the antecedent the anchor links to
    r3 = with_eid[ante_s_ok[with_eid]]
    add(r3, 3, sent[r3] - ante_s[r3])
    # rank 4: the nearest earlier sentence holding a mention of the chain (its pronouns included)
    chain_keys = np.unique(chain[rows] * span + (sent[rows] + 1))
    r4 = np.flatnonzero(meas & has_chain)
    at = np.searchsorted(chain_keys, chain[r4] * span + (sent[r4] + 1), side="left")
    prev_ok = at > 0
    prev = chain_keys[np.maximum(at - 1, 0)]
    prev_ok &= prev // span == chain[r4]
    add(r4[prev_ok], 4, sent[r4[prev_ok]] - (prev[prev_ok] % span - 1))

    row = np.concatenate(parts_row)
    rank = np.concatenate(parts_rank)
    d = np.concatenate(parts_d)
    keep = (d > 0) & (d <= dist[row])
    row, rank, d = row[keep], rank[keep], d[keep]
    order = np.lexsort((rank, row))
    row, rank, d = row[order], rank[order], d[order]
    # a distance reached twice is kept once, at its lowest rank (the first in this order)
    _, first = np.unique(row * (int(d.max(initial=0)) + 1) + d, return_index=True)
    first.sort()
    return Candidates(row=row[first].astype(np.int64), rank=rank[first].astype(np.int64),
                      distance=d[first].astype(np.int64))


def _dense(values: np.ndarray) -> np.ndarray:
    """Dense int64 codes ``0..k-1`` of ``values`` (equal values, equal codes), shape of ``values``."""
    return np.unique(values, return_inverse=True)[1].astype(np.int64).reshape(-1)


def _codes(*cols: np.ndarray) -> np.ndarray:
    """Dense int64 codes of the rows of the int64 columns ``cols`` (equal tuples, equal codes), shape
    ``(n,)``, in the tuples' sorted order: the columns packed into one integer by their value ranges (a
    column wider than ``n`` densified first, the packed code densified on the way when the product of the
    ranges would pass 2**62), then one dense coding of the result."""
    code = np.zeros(cols[0].shape[0], dtype=np.int64)
    top = 1  # code < top
    for c in cols:
        if c.shape[0] == 0:
            return code
        lo = int(c.min())
        width = int(c.max()) - lo + 1
        if width > c.shape[0]:  # a wide column (ids, large values): its own dense codes, at most n of them
            c, lo = _dense(c), 0
            width = int(c.max()) + 1
        if top * width > 2**62:
            code = _dense(code)
            top = int(code.max()) + 1
        code = code * width + (c - lo)
        top *= width
    return _dense(code)


#: what the model reads of a candidate distance besides its anchor's features
CANDIDATE_FEATURES: tuple[str, ...] = (
    *(f"candidate={x}" for x in CANDIDATES), "log_candidate_distance", "log_skipped", "antecedent_pronoun",
)
#: the model's features in kernel order: the anchor's, then the candidate's
FEATURES: tuple[str, ...] = ANCHOR_FEATURES + CANDIDATE_FEATURES


def _candidate_columns(pronoun: np.ndarray, candidates: Candidates, distance: np.ndarray) -> np.ndarray:
    """The :data:`CANDIDATE_FEATURES` of every candidate, ``(n_candidates, len(CANDIDATE_FEATURES))``
    float64: ``pronoun`` is the anchors' ``pronoun`` feature ``(n_anchors,)``, ``distance`` their
    ``distance_sentences``."""
    rank = candidates.rank
    onehot = (rank[:, None] == np.arange(len(CANDIDATES))[None, :]).astype(np.float64)
    skipped = np.clip(distance[candidates.row] - candidates.distance, 0, None)
    return np.column_stack([onehot, np.log1p(candidates.distance.astype(np.float64)),
                            np.log1p(skipped.astype(np.float64)),
                            pronoun[candidates.row] * (rank == CANDIDATES.index("antecedent"))])


def candidate_features(features: np.ndarray, candidates: Candidates, distance: np.ndarray) -> np.ndarray:
    """Feature matrix of every candidate, shape ``(n_candidates, len(FEATURES))`` float64: the row of
    its anchor in ``features`` (:func:`anchor_features`, ``(n_anchors, len(ANCHOR_FEATURES))``), then
    :data:`CANDIDATE_FEATURES`: the chain position (one-hot), log(1 + candidate distance), log(1 +
    sentences skipped: the anchor's full ``distance`` minus the candidate's) and a pronoun's
    antecedent candidate. ``distance``: the anchors' ``distance_sentences``, ``(n_anchors,)``."""
    extra = _candidate_columns(features[:, ANCHOR_FEATURES.index("pronoun")], candidates, distance)
    return np.ascontiguousarray(np.hstack([features[candidates.row], extra]), dtype=np.float64)


def confidence_of(features: np.ndarray, model: CertifyModel) -> np.ndarray:
    """The model's confidence of every row of ``features`` (``(n, len(FEATURES))``): 1 - the logistic
    probability of over-estimating, float64 ``(n,)``. The logit is summed feature by feature in a fixed
    order, row by row in a native kernel, so a row gets the same bits whatever the number of rows (a
    matrix product's summation order depends on the batch size, and outputs must not)."""
    from .._native.ddp_kernels import standardised_logit

    logit = standardised_logit(np.ascontiguousarray(features, dtype=np.float64), model.mean, model.scale,
                               model.weights, float(model.bias))
    with np.errstate(over="ignore"):  # exp(-logit) = inf at a very negative logit: confidence 1, as it should be
        return 1.0 - 1.0 / (1.0 + np.exp(-logit))


@dataclass(frozen=True)
class CertifyResult:
    """Per anchor, shapes ``(n_anchors,)``: ``confidence`` float64 (of the full distance; NaN when the
    anchor measures nothing), ``certified`` bool (the full distance is certified) and
    ``distance_certified`` int64 (the largest certified candidate distance, 0 when none: the anchor's
    contribution to ``ddp_certified``)."""

    confidence: np.ndarray
    certified: np.ndarray
    distance_certified: np.ndarray


def candidate_confidence(features: np.ndarray, candidates: Candidates, distance: np.ndarray,
                         model: CertifyModel) -> np.ndarray:
    """``confidence_of(candidate_features(features, candidates, distance), model)`` without the candidate
    matrix, the same bits: the logit's sum over the anchor features (the first ``len(ANCHOR_FEATURES)``
    terms, in order) is computed once per anchor, and each candidate continues it over its own
    :data:`CANDIDATE_FEATURES`. ``features``: :func:`anchor_features` ``(n_anchors, len(ANCHOR_FEATURES))``;
    returns float64 ``(n_candidates,)``."""
    from .._native.ddp_kernels import standardised_logit

    k = len(ANCHOR_FEATURES)
    partial = standardised_logit(np.ascontiguousarray(features, dtype=np.float64), model.mean[:k], model.scale[:k],
                                 model.weights[:k], float(model.bias))
    extra = np.ascontiguousarray(_candidate_columns(features[:, ANCHOR_FEATURES.index("pronoun")], candidates,
                                                    distance), dtype=np.float64)
    logit = standardised_logit(extra, np.ascontiguousarray(model.mean[k:]), np.ascontiguousarray(model.scale[k:]),
                               np.ascontiguousarray(model.weights[k:]), float(model.bias),
                               np.ascontiguousarray(partial[candidates.row]))
    with np.errstate(over="ignore"):
        return 1.0 - 1.0 / (1.0 + np.exp(-logit))


def certify(features: np.ndarray, candidates: Candidates, distance: np.ndarray, model: CertifyModel) -> CertifyResult:
    """Certify every candidate distance and reduce to the anchors.

    ``features``: :func:`candidate_features` ``(n_candidates, len(FEATURES))``; ``candidates`` the
    :class:`Candidates` they describe; ``distance``: the anchors' ``distance_sentences``
    ``(n_anchors,)``. A candidate is certified when its confidence reaches the threshold of its anchor's
    kind, ``model.threshold`` for a pronoun (the ``pronoun`` feature) and ``model.threshold_name`` for a
    name, below ``model.long_distance`` sentences, and ``model.threshold_long`` at and above (where a
    model with ``long_full_only`` certifies only full distances). An anchor's ``distance_certified`` is
    its largest certified candidate distance; ``certified`` and ``confidence`` are those of its full
    distance (rank 0), which every anchor with ``distance > 0`` has.
    """
    return _certified(confidence_of(features, model), features[:, FEATURES.index("pronoun")] > 0.5, candidates,
                      distance, model)


def _certified(conf: np.ndarray, pronoun: np.ndarray, candidates: Candidates, distance: np.ndarray,
               model: CertifyModel) -> CertifyResult:
    """:func:`certify` from the candidates' confidences and whether each is a pronoun's, ``(n_candidates,)``."""
    n = distance.shape[0]
    long = candidates.distance >= model.long_distance
    short = np.where(pronoun, model.threshold, model.threshold_name)
    ok = conf >= np.where(long, model.threshold_long, short)
    if model.long_full_only:
        ok &= ~long | (candidates.rank == 0)
    distance_certified = np.zeros(n, dtype=np.int64)
    np.maximum.at(distance_certified, candidates.row[ok], candidates.distance[ok])
    full = candidates.rank == 0
    confidence = np.full(n, math.nan)
    confidence[candidates.row[full]] = conf[full]
    certified = np.zeros(n, dtype=bool)
    certified[candidates.row[full]] = ok[full]
    return CertifyResult(confidence=confidence, certified=certified, distance_certified=distance_certified)


def certify_anchors(anchors: pl.DataFrame, texts: pl.DataFrame, model: CertifyModel, *,
                    document: str = schema.DOCUMENT_ID, segment: str = schema.SEGMENT_ID,
                    text: str = schema.SOURCE) -> CertifyResult:
    """The whole stage on an anchors table of whole documents (columns and ``texts`` as in
    :func:`anchor_features`, plus ``reference_sentence``): features, candidates, :func:`certify`."""
    distance = anchors[schema.DISTANCE_SENTENCES].to_numpy().astype(np.int64)
    cand = chain_candidates(anchors, document=document)
    feats = anchor_features(anchors, texts, document=document, segment=segment, text=text)
    # what certify(candidate_features(...)) gives, without the (n_candidates, len(FEATURES)) matrix
    conf = candidate_confidence(feats, cand, distance, model)
    return _certified(conf, feats[cand.row, ANCHOR_FEATURES.index("pronoun")] > 0.5, cand, distance, model)
