"""The DDP pipeline as stages over one batch of whole documents.

Every stage is a plain function over flat arrays; the local driver
(:mod:`ddpcore.engines.local`) and the distributed engine run the same functions in the
same order::

    split_units      segment texts            -> parse units (lines)          Units
    parse_units      parse units              -> token columns (spaCy)        TokenArrays
    number_sentences token columns            -> token/sentence indices       TokenIndex
    find_items       token columns + rules    -> items (anchors, head nouns)  dict of arrays
    link_entities    items                    -> entity ids                   Entities
    measure_distances items + entities        -> distances, DDP               Distances
      (rule set with a trained scorer: link_learned scores candidates, links and measures instead;
       ddpcore.pipeline.antecedent)
    build_tables     all of the above         -> segments, anchors, sentences polars frames

Shapes use thinc-style axis suffixes where they help: ``__seg`` (segments of the batch),
``__unit`` (parse units), ``__tok`` (tokens), ``__item`` (items), ``__sent`` (sentences).
Units: ``sentence`` indices count sentences of a *document* (0..K-1); distances and DDP
are in sentences.

A batch (:class:`Batch`) holds whole documents with their segments in document order
(documents by first appearance in the input, segments by id within a document); its
``ROW`` column is the 0-based input row, used to restore input order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import schema
from ..anchors.rules import FEM_SG, GROUP_NAMES, KIND_NAMES, MASC_SG, RuleSet
from ..io.segments import ROW, SegmentColumns
from .extract import RuleTables, TokenColumns, extract_items, refinement_tables, rule_tables  # noqa: F401
from .stage_times import timed_stage
from .arrays import DOC, Batch, Distances, Entities, TokenIndex, Units  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    import polars as pl

    from ..anchors.spacy_extract import TokenArrays


def _kernels() -> Any:
    from .._native import load

    return load("ddp_kernels")


# ------------------------------------------------------------------------- rule tables


@dataclass(frozen=True)
class RuleArrays:
    """A rule set compiled once per run into the tables the kernels take (:class:`RuleTables`)."""

    rules: RuleSet
    tables: RuleTables
    #: (AntecedentModel, AntecedentTables) of a rule set with a trained antecedent scorer, else None
    antecedent: tuple[Any, Any] | None = None

    @classmethod
    def compile(cls, rules: RuleSet, *, has_parser: bool = True) -> RuleArrays:
        """``has_parser=False`` (the ``fast`` preset) takes head nouns from tags and certifies with the
        rule set's parser-free certification model (:meth:`RuleSet.for_pipeline`)."""
        rules = rules.for_pipeline(has_parser)
        antecedent = None
        if rules.antecedent_model:
            from .antecedent import AntecedentTables, model_for

            antecedent = (model_for(rules), AntecedentTables.compile(rules))
        return cls(rules, RuleTables.compile(rules, has_parser=has_parser), antecedent)


# ------------------------------------------------------------------------------ stages


def split_units(texts: pl.Series) -> Units:
    """Split each segment text (n_seg,) at line breaks into parse units (stripped lines that are not blank: a
    line of white space and invisible characters, :data:`ddpcore.schema.BLANK_CHARS`, is no unit). A line is
    stripped of both at its edges: "\\u200bJohn Smith" is the unit "John Smith", parsed as the name it shows
    (U+200B would otherwise stick to the first token, which then is no name, pronoun or re-mention); the
    unit's ``offset`` still counts the stripped characters, so anchor offsets index the text as given. The
    run says and records the segments this changes (:data:`ddpcore.schema.INVISIBLE_EDGES`)."""
    import polars as pl

    from ..schema import BLANK_CHARS

    lines = (
        pl.DataFrame({"__seg": np.arange(len(texts), dtype=np.int64), "t": texts})
        .with_columns(pl.col("t").str.split("\n"))
        .explode("t")
        .with_columns(pl.col("t").str.len_chars().alias("n"))
        .with_columns(
            ((pl.col("n") + 1).cum_sum().over("__seg") - (pl.col("n") + 1)).alias("line_start"),
            pl.col("t").str.strip_chars_start(BLANK_CHARS).alias("ls"),
        )
        .with_columns(
            (pl.col("line_start") + pl.col("n") - pl.col("ls").str.len_chars()).alias("offset"),
            pl.col("ls").str.strip_chars_end(BLANK_CHARS).alias("unit"),
        )
        .filter(pl.col("unit").str.len_chars() > 0)  # (stripped of BLANK_CHARS at both ends)
        .select("__seg", "unit", "offset")
    )
    return Units(
        seg__unit=lines["__seg"].to_numpy().astype(np.int64),
        offset__unit=lines["offset"].to_numpy().astype(np.int64),
        texts=lines["unit"].to_list(),
    )


def view_units(texts: pl.Series) -> Units:
    """:func:`split_units` of the texts as the parse reads them (:func:`ddpcore.io.segments.text_view`:
    invisible characters left out inside a line too, NFC, full-width ASCII as ASCII, a lone carriage return
    as a line break), with the view, so that token offsets index the texts as given (:func:`number_sentences`).
    The run says and records the segments this changes (:data:`ddpcore.schema.NORMALISED_TEXT`)."""
    from ..io.segments import text_view

    view = text_view(texts)
    if view is None:
        return split_units(texts)
    units = split_units(view.texts)
    return Units(units.seg__unit, units.offset__unit, units.texts, view)


def parse_view(frame: pl.DataFrame, cols: SegmentColumns, anchors: pl.DataFrame
               ) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """The segment texts of ``frame`` and the ``anchors`` (their ``char_start``/``char_end``, ``text`` and
    ``antecedent_text``) as the parse reads them (:func:`view_units`, :func:`ddpcore.io.segments.text_view`:
    without invisible characters, in NFC...), so that what the certification model reads of a text (the
    characters around an anchor, its position, the anchor's words) is what it reads of the same text without
    them; an anchor's words also with white space as one space and U+2019 as an apostrophe (``John\u00a0Smith``
    is a re-mention of ``John Smith``, ``Obama’s`` of ``Obama's``, as the entity linking has it).
    ``(texts, anchors)`` with the offsets into those texts, or None when nothing changes (the texts and offsets
    as given then). Vectorised."""
    import polars as pl

    from ..io.segments import text_view

    changed = False
    view = text_view(frame[cols.text])

    def read(col: str) -> pl.Series:  # an anchor's words: white space as one space, U+2019 as an apostrophe
        nonlocal changed
        # (an anchor's words are words of the batch's texts: when no text has another form, neither have they)
        v = text_view(anchors[col]) if view is not None else None
        words = anchors[col] if v is None else v.texts
        # only the words that hold other white space, two spaces or U+2019 are rewritten (most hold none)
        odd = words.str.contains(r"[^\S ]| {2}|\u2019").fill_null(False)
        if odd.any():
            idx = odd.arg_true()
            words = words.scatter(idx, words.gather(idx).str.replace_all(r"\s+", " ").str.replace_all("\u2019", "'"))
        changed = changed or v is not None or bool(odd.any())
        return words

    words = anchors.with_columns(read(schema.TEXT), read(schema.ANTECEDENT_TEXT))
    if view is None:
        return (frame.select(cols.document, cols.segment, cols.text), words) if changed else None
    ids = frame.select(cols.document, cols.segment)
    texts = ids.with_columns(view.texts.alias(cols.text))
    row = (anchors.select(cols.document, cols.segment)
           .join(ids.with_row_index("__seg"), on=[cols.document, cols.segment], how="left", maintain_order="left")
           ["__seg"].cast(pl.Int64).to_numpy())
    start = view.to_view(row, anchors[schema.CHAR_START].to_numpy())
    end = view.to_view(row, anchors[schema.CHAR_END].to_numpy(), end=True)
    return texts, words.with_columns(pl.Series(schema.CHAR_START, start), pl.Series(schema.CHAR_END, end))


@timed_stage("sentences")
def number_sentences(
    toks: TokenArrays, units: Units, seg_doc: np.ndarray, *, sentence_unit: str, pos_space: int
) -> TokenIndex:
    """Token → segment, characters and sentence indices.

    ``seg_doc`` (n_seg,) document ordinal of each segment, non-decreasing. With
    ``sentence_unit="sentence"`` sentences come from spaCy (a unit start always starts a
    sentence); with ``"segment"`` every segment is one sentence unit.
    """
    kernels = _kernels()
    n_seg = len(seg_doc)
    n_units = len(units.texts)
    n_tok = int(toks.n_tokens__unit.sum())
    tok_unit = np.repeat(np.arange(n_units, dtype=np.int64), toks.n_tokens__unit)
    tok_seg = units.seg__unit[tok_unit]
    unit_first_tok = np.concatenate([[0], np.cumsum(toks.n_tokens__unit)[:-1]]).astype(np.int64)
    unit_start = np.zeros(n_tok, dtype=np.uint8)
    unit_start[unit_first_tok[toks.n_tokens__unit > 0]] = 1
    tok_char = units.offset__unit[tok_unit] + toks.idx
    tok_char_end = units.offset__unit[tok_unit] + toks.end
    if units.view is not None:  # offsets in the segments' views (view_units): back to the texts as given
        tok_char = units.view.to_given(tok_seg, tok_char)
        tok_char_end = units.view.to_given(tok_seg, tok_char_end, end=True)
    head_abs = np.arange(n_tok, dtype=np.int64) + toks.head
    flags = kernels.sentence_starts(toks.sent_start, toks.pos, unit_start, pos_space)
    n_docs = int(seg_doc.max()) + 1 if n_seg else 0
    doc_first_seg = np.searchsorted(seg_doc, np.arange(n_docs))
    seg_in_doc = np.arange(n_seg) - doc_first_seg[seg_doc]
    n_sent_seg = np.bincount(tok_seg, weights=flags, minlength=n_seg).astype(np.int64)
    if sentence_unit == "sentence":
        tok_gsent = np.cumsum(flags, dtype=np.int64) - 1
        n_sentences = int(flags.sum())
        seg_first_gsent = np.concatenate([[0], np.cumsum(n_sent_seg)[:-1]]).astype(np.int64)
        doc_first_gsent = seg_first_gsent[doc_first_seg]
        tok_sent = tok_gsent - doc_first_gsent[seg_doc[tok_seg]]
        is_start = flags.astype(bool)
        sent_seg = tok_seg[is_start]
        sent_in_doc = tok_sent[is_start]
        seg_first_sentence = seg_first_gsent - doc_first_gsent[seg_doc]
    else:
        tok_gsent = tok_seg.copy()
        n_sentences = n_seg
        tok_sent = seg_in_doc[tok_seg]
        sent_seg = np.arange(n_seg, dtype=np.int64)
        sent_in_doc = seg_in_doc
        seg_first_sentence = seg_in_doc
        n_sent_seg = np.ones(n_seg, np.int64)
    return TokenIndex(
        seg__tok=tok_seg, char__tok=tok_char, char_end__tok=tok_char_end, head__tok=head_abs,
        unit_start__tok=unit_start, sent_flag__tok=flags, sent__tok=tok_sent, gsent__tok=tok_gsent,
        n_sent__seg=n_sent_seg, seg__sent=sent_seg, sent_in_doc__sent=sent_in_doc,
        first_sentence__seg=np.asarray(seg_first_sentence, dtype=np.int64), n_sentences=n_sentences,
    )


@timed_stage("extract")
def find_items(toks: TokenArrays, index: TokenIndex, rule_arrays: RuleArrays) -> dict[str, np.ndarray]:
    """Items of the batch in token order: entity mentions (kind 0), pronouns (1) and head
    nouns (2), each with its first token, end token, label/group, compatibility bits and key
    (arrays of shape (n_items,); see :func:`ddpcore.pipeline.extract.extract_items`, which checks
    the token columns and rule tables before the kernel runs)."""
    return extract_items(TokenColumns.from_stages(toks, index), rule_arrays.tables)


def _apply_entity_gender(items: dict[str, np.ndarray], ent_id: np.ndarray, n_ent: int, extra: int) -> None:
    """Give every mention of a PERSON entity the gender any of its mentions shows (title or
    first name); an entity whose mentions disagree stays ungendered. Updates ``compat``."""
    g = items["gender"]
    known = (ent_id >= 0) & (g > 0)
    if not known.any():
        return
    ent_gender = np.zeros(max(n_ent, 1), dtype=np.uint8)
    np.bitwise_or.at(ent_gender, ent_id[known], g[known])
    ent_gender[ent_gender == (MASC_SG | FEM_SG)] = 0
    mask = ent_id >= 0
    eg = np.zeros_like(g)
    eg[mask] = ent_gender[ent_id[mask]]
    set_ = eg > 0
    items["compat"] = np.where(set_, eg | np.uint8(extra), items["compat"]).astype(np.uint8)


@timed_stage("link")
def link_entities(
    items: dict[str, np.ndarray], index: TokenIndex, seg_doc: np.ndarray, rules: RuleSet
) -> Entities:
    """Entity ids per document (same key → same entity; one-token PERSON surname merge), then
    the entity-level gender of the rule set (updates ``items["compat"]`` in place)."""
    kernels = _kernels()
    n_docs = int(seg_doc.max()) + 1 if len(seg_doc) else 0
    it_doc = seg_doc[index.seg__tok[items["token"]]]
    offsets = np.searchsorted(it_doc, np.arange(n_docs + 1)).astype(np.int64)
    person = rules.entity_labels.index("PERSON") if "PERSON" in rules.entity_labels else -1
    ent_id, n_ent = kernels.assign_entity_ids(
        offsets, items["kind"], items["label"], items["key"], items["last_token_key"], items["n_key"], person,
        rules.person_last_token_merge,
    )
    if rules.name_gender or rules.titles:
        _apply_entity_gender(items, ent_id, n_ent, rules.person_known_extra)
    return Entities(entity__item=ent_id, n_entities=int(n_ent), doc_offsets=offsets)


@timed_stage("distances")
def measure_distances(
    items: dict[str, np.ndarray], index: TokenIndex, entities: Entities, n_seg: int, *,
    distance: str, n_threads: int = 1,
) -> Distances:
    """Anchor distances (chained: to the entity's first mention; nearest: to the latest
    mention) and their maxima per sentence and per segment (the DDP)."""
    kernels = _kernels()
    it_tok = items["token"]
    dist, ante, ref, ddp_seg, ddp_sent = kernels.compute_distances(
        entities.doc_offsets, items["kind"], index.sent__tok[it_tok].astype(np.int32), entities.entity__item,
        items["compat"], index.seg__tok[it_tok].astype(np.int32), index.gsent__tok[it_tok].astype(np.int32),
        entities.n_entities, n_seg, index.n_sentences, distance == "nearest", n_threads,
    )
    return Distances(dist, ante, ref, ddp_seg, ddp_sent)


@timed_stage("assemble")
def build_tables(
    batch: Batch,
    toks: TokenArrays,
    index: TokenIndex,
    items: dict[str, np.ndarray],
    entities: Entities,
    distances: Distances,
    rules: RuleSet,
    *,
    pos_space: int,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The three output tables of a batch: :func:`segment_table`, :func:`anchor_table` and
    :func:`sentence_table`, then the certified columns (:func:`certify_tables`) when the rule set
    has a certification model."""
    segments = segment_table(batch, toks, index, items, distances, pos_space=pos_space)
    anchors = anchor_table(batch, toks, index, items, entities, distances, rules)
    sentences = sentence_table(batch, index, distances)
    if rules.certify_model:
        segments, anchors, sentences = certify_tables(segments, anchors, sentences, batch.frame, batch.cols, rules)
    return segments, anchors, sentences


def segment_table(batch: Batch, toks: TokenArrays, index: TokenIndex, items: dict[str, np.ndarray],
                  distances: Distances, *, pos_space: int) -> pl.DataFrame:
    """One row per segment of the batch, sorted by input row (``ROW`` kept for merging batches):
    the id columns, ``n_sentences``, ``n_tokens`` (non-space tokens), ``n_anchors``, ``ddp`` and
    ``first_sentence``, then the input's other columns."""
    import polars as pl

    cols, df = batch.cols, batch.frame
    n_seg = df.height
    it_seg = index.seg__tok[items["token"]]
    n_anchor_seg = np.bincount(it_seg[items["kind"] != 2], minlength=n_seg)
    n_tok_seg = np.bincount(index.seg__tok[toks.pos != pos_space], minlength=n_seg)
    # an input column named as a column computed here (a profile profiled again) is replaced, not kept twice
    computed = set(schema.COMPUTED_SEGMENT_COLUMNS) - {cols.document, cols.segment, cols.text, cols.domain}
    extra = [c for c in df.columns if c not in (ROW, DOC) and c not in computed]
    segments = (
        df.select(ROW, *extra)
        .with_columns(
            pl.Series(schema.N_SENTENCES, index.n_sent__seg.astype(np.int64)),
            pl.Series(schema.N_TOKENS, n_tok_seg.astype(np.int64)),
            pl.Series(schema.N_ANCHORS, n_anchor_seg.astype(np.int64)),
            pl.Series(schema.DDP, distances.ddp__seg.astype(np.int64)),
            pl.Series(schema.FIRST_SENTENCE, index.first_sentence__seg.astype(np.int64)),
        )
        .sort(ROW)
    )
    lead = [cols.document, cols.segment, cols.domain, schema.N_SENTENCES, schema.N_TOKENS, schema.N_ANCHORS, schema.DDP,
            schema.FIRST_SENTENCE]
    return segments.select(ROW, *lead, *[c for c in extra if c not in lead])


def _anchor_labels(items: dict[str, np.ndarray], rules: RuleSet) -> np.ndarray:
    """``(n_items,)`` object array: the entity label of a name, the group (gender/number) of a pronoun."""
    labels_entity = np.array(rules.entity_labels + ("",), dtype=object)
    group_names = np.array(["", *(GROUP_NAMES.get(b, "") for b in range(1, 9))], dtype=object)
    lab = items["label"].astype(np.int64)
    return np.where(
        items["kind"] == 0,
        labels_entity[np.where(items["kind"] == 0, lab, len(rules.entity_labels))],
        group_names[np.where(items["kind"] == 1, lab, 1)],
    )


def anchor_table(batch: Batch, toks: TokenArrays, index: TokenIndex, items: dict[str, np.ndarray],
                 entities: Entities, distances: Distances, rules: RuleSet) -> pl.DataFrame:
    """One row per anchor (a name or a 3rd-person pronoun: items of kind != 2), document order: ids,
    ``anchor_index`` within the document, sentence, kind, label, text and character span, the
    document-local entity id, the antecedent (kind, text, sentence), the reference sentence the
    distance runs to and ``distance_sentences``, then what the parse says of the link
    (:mod:`ddpcore.pipeline.roles`: ``role``, ``antecedent_role``, ``n_candidates``)."""
    import polars as pl

    from .roles import anchor_parse_columns

    cols, df = batch.cols, batch.frame
    n_seg = df.height
    seg_doc = batch.seg_doc
    n_docs = int(seg_doc.max()) + 1 if n_seg else 0
    it_tok = items["token"]
    it_seg = index.seg__tok[it_tok]
    it_doc = seg_doc[it_seg]
    it_sent = index.sent__tok[it_tok].astype(np.int32)
    ent_id = entities.entity__item
    dist, ante, ref = distances.distance__item, distances.antecedent__item, distances.reference__item
    a_idx = np.flatnonzero(items["kind"] != 2)
    item_char_start = index.char__tok[it_tok]
    item_char_end = index.char_end__tok[items["end_token"] - 1]
    ent_base = np.full(max(n_docs, 1), np.iinfo(np.int32).max, dtype=np.int64)
    ent_mask = ent_id >= 0
    np.minimum.at(ent_base, it_doc[ent_mask], ent_id[ent_mask])
    local_eid = np.where(ent_mask, ent_id - ent_base[it_doc], -1)
    label_str = _anchor_labels(items, rules)
    has_ante = ante >= 0
    ante_safe = np.where(has_ante, ante, 0)
    ref_safe = np.where(ref >= 0, ref, 0)
    kind_names = np.array(KIND_NAMES, dtype=object)
    ante_kind = np.where(
        has_ante,
        kind_names[items["kind"][ante_safe]] if len(ante_safe) else np.array([], dtype=object),
        np.where(items["kind"] == 0, "first_mention", "none"),
    )
    doc_anchor_first = np.searchsorted(a_idx, entities.doc_offsets[:-1])  # first anchor row per document
    a_doc = it_doc[a_idx]
    role, ante_role, n_cand = anchor_parse_columns(toks, index, items, distances, seg_doc, a_idx)
    sl = pl.DataFrame({
        "__seg": it_seg[a_idx],
        "__aseg": it_seg[ante_safe[a_idx]],
        schema.ANCHOR_INDEX: (np.arange(len(a_idx)) - doc_anchor_first[a_doc]).astype(np.int64),
        schema.SENTENCE: it_sent[a_idx].astype(np.int64),
        schema.KIND: kind_names[items["kind"][a_idx]].astype(str),
        schema.LABEL: label_str[a_idx].astype(str),
        schema.CHAR_START: item_char_start[a_idx],
        schema.CHAR_END: item_char_end[a_idx],
        schema.ENTITY_ID: local_eid[a_idx].astype(np.int64),
        schema.ANTECEDENT_KIND: ante_kind[a_idx].astype(str),
        "__astart": item_char_start[ante_safe[a_idx]],
        "__aend": item_char_end[ante_safe[a_idx]],
        "__has_ante": has_ante[a_idx],
        schema.ANTECEDENT_SENTENCE: np.where(has_ante, it_sent[ante_safe], -1)[a_idx].astype(np.int64),
        schema.REFERENCE_SENTENCE: np.where(ref >= 0, it_sent[ref_safe], -1)[a_idx].astype(np.int64),
        schema.DISTANCE_SENTENCES: dist[a_idx].astype(np.int64),
        schema.ROLE: role.astype(str),
        schema.ANTECEDENT_ROLE: ante_role.astype(str),
        schema.N_CANDIDATES: pl.Series(n_cand, dtype=pl.Int64).replace(-1, None),
    })
    seg_lookup = pl.DataFrame({
        "__seg": np.arange(n_seg, dtype=np.int64),
        cols.document: df[cols.document],
        cols.segment: df[cols.segment],
        "__text": df[cols.text],
    })
    return (
        sl.join(seg_lookup, on="__seg", how="left")
        .join(seg_lookup.select(pl.col("__seg").alias("__aseg"), pl.col("__text").alias("__atext")), on="__aseg",
              how="left")
        .with_columns(
            pl.col("__text")
            .str.slice(pl.col(schema.CHAR_START), pl.col(schema.CHAR_END) - pl.col(schema.CHAR_START))
            .alias(schema.TEXT),
            pl.when(pl.col("__has_ante"))
            .then(pl.col("__atext").str.slice(pl.col("__astart"), pl.col("__aend") - pl.col("__astart")))
            .otherwise(None)
            .alias(schema.ANTECEDENT_TEXT),
        )
        .select(
            cols.document, cols.segment, schema.ANCHOR_INDEX, schema.SENTENCE, schema.KIND, schema.LABEL,
            schema.TEXT, schema.CHAR_START, schema.CHAR_END, schema.ENTITY_ID, schema.ANTECEDENT_KIND,
            schema.ANTECEDENT_TEXT, schema.ANTECEDENT_SENTENCE,
            schema.REFERENCE_SENTENCE, schema.DISTANCE_SENTENCES, schema.ROLE, schema.ANTECEDENT_ROLE,
            schema.N_CANDIDATES,
        )
    )


def sentence_table(batch: Batch, index: TokenIndex, distances: Distances) -> pl.DataFrame:
    """One row per sentence, document order: ids, ``sentence`` (index in the document) and
    ``sentence_ddp`` (the largest anchor distance of the sentence, in sentences)."""
    import polars as pl

    cols, df = batch.cols, batch.frame
    return pl.DataFrame({
        cols.document: df[cols.document].gather(index.seg__sent),
        cols.segment: df[cols.segment].gather(index.seg__sent),
        schema.SENTENCE: index.sent_in_doc__sent.astype(np.int64),
        schema.SENTENCE_DDP: distances.ddp__sent.astype(np.int64),
    })


def certify_tables(
    segments: pl.DataFrame,
    anchors: pl.DataFrame,
    sentences: pl.DataFrame,
    frame: pl.DataFrame,
    cols: SegmentColumns,
    rules: RuleSet,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Add the certified columns (ddpcore.anchors.certify): ``certified`` / ``confidence`` (of the full
    distance) and ``distance_certified`` (the certified part of it, 0 when none) to the anchors,
    ``ddp_certified`` after ``ddp`` to the segments and ``sentence_ddp_certified`` to the sentences
    (the maximum ``distance_certified``; 0 where there is none)."""
    import polars as pl

    from ..anchors.certify import certify_anchors
    from ..anchors.rules import certify_model_for

    # what the model reads of a text: the text as parsed (line-edge invisible characters left out, parse_view)
    view = parse_view(frame, cols, anchors)
    texts, read = view if view is not None else (frame.select(cols.document, cols.segment, cols.text), anchors)
    res = certify_anchors(read, texts, certify_model_for(rules), document=cols.document, segment=cols.segment,
                          text=cols.text)
    anchors = anchors.with_columns(pl.Series(schema.CERTIFIED, res.certified), pl.Series(schema.CONFIDENCE, res.confidence),
                                   pl.Series(schema.DISTANCE_CERTIFIED, res.distance_certified))
    dist = pl.col(schema.DISTANCE_CERTIFIED)
    per_seg = anchors.group_by(cols.document, cols.segment).agg(dist.max().alias(schema.DDP_CERTIFIED))
    per_sent = anchors.group_by(cols.document, schema.SENTENCE).agg(dist.max().alias(schema.SENTENCE_DDP_CERTIFIED))
    order = segments.columns
    at = order.index(schema.DDP) + 1
    segments = (segments.join(per_seg, on=[cols.document, cols.segment], how="left", maintain_order="left")
                .with_columns(pl.col(schema.DDP_CERTIFIED).fill_null(0).cast(pl.Int64))
                .select(*order[:at], schema.DDP_CERTIFIED, *order[at:]))
    sentences = (sentences.join(per_sent, on=[cols.document, schema.SENTENCE], how="left", maintain_order="left")
                 .with_columns(pl.col(schema.SENTENCE_DDP_CERTIFIED).fill_null(0).cast(pl.Int64)))
    return segments, anchors, sentences


def run_stages(
    batch: Batch,
    toks: TokenArrays,
    units: Units,
    rule_arrays: RuleArrays,
    *,
    distance: str,
    sentence_unit: str,
    n_threads: int = 1,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Every stage after parsing, in order, for one batch; returns the three tables."""
    pos_space = rule_arrays.tables.pos_space
    seg_doc = batch.seg_doc
    index = number_sentences(toks, units, seg_doc, sentence_unit=sentence_unit, pos_space=pos_space)
    items = find_items(toks, index, rule_arrays)
    entities = link_entities(items, index, seg_doc, rule_arrays.rules)
    if rule_arrays.antecedent is not None:
        # rule set "learned": scored links replace the rule's (ddpcore.pipeline.antecedent)
        from .antecedent import link_learned

        model, tables = rule_arrays.antecedent
        entities, distances = link_learned(items, index, entities, toks, seg_doc, batch.n_segments, model, tables,
                                           distance=distance, n_threads=n_threads)
    else:
        distances = measure_distances(items, index, entities, batch.n_segments, distance=distance, n_threads=n_threads)
    return build_tables(batch, toks, index, items, entities, distances, rule_arrays.rules, pos_space=pos_space)
