"""DDP profiling: segment table → spaCy token arrays → anchors → distances → DDP.

Public entry points: :func:`profile` (segment-level DDP as a polars DataFrame),
:func:`profile_anchors` (segments, anchors, sentences and the run signature),
:func:`summarize` (per-domain table) and :func:`explain` (why one segment has its DDP).

Units: ``sentence`` and ``distance_sentences`` count sentences over the whole document
(0..K-1); a segment's ``ddp`` is the maximum anchor distance of its sentences, in
sentences (0 when it has none).
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np


from . import __version__
from . import schema as S
from .anchors import rules as R
from .errors import DDPDataError, DDPUsageError
from .io.segments import ROW, SegmentColumns, read_segments

if TYPE_CHECKING:
    import polars as pl

Distance = Literal["chained", "nearest"]
SentenceUnit = Literal["sentence", "segment"]
SIGNATURE_KEY = "ddpcore.signature"
KIND_NAMES = ("entity", "pronoun", "noun")


@dataclass(frozen=True)
class ProfileResult:
    """Output of :func:`profile_anchors`.

    ``segments``: one row per input segment, input order (``document_id, segment_id,
    domain, n_sentences, n_tokens, n_anchors, ddp, first_sentence`` + extra input columns);
    ``anchors``: one row per anchor (entity mention or pronoun), document order;
    ``sentences``: one row per sentence (``document_id, segment_id, sentence,
    sentence_ddp``); ``signature``: settings and versions that reproduce the run.
    """

    segments: pl.DataFrame
    anchors: pl.DataFrame
    sentences: pl.DataFrame
    signature: dict[str, Any] = field(default_factory=dict)

    def summary(self, by: str | None = None) -> pl.DataFrame:
        return summarize(self.segments, by=by or self.signature.get("columns", {}).get("domain", S.DOMAIN),
                         document=self.signature.get("columns", {}).get("document", S.DOCUMENT_ID))

    def signature_json(self) -> str:
        return json.dumps(self.signature, sort_keys=True)


def _rule_tables(rules: R.RuleSet) -> dict[str, Any]:
    from .anchors.spacy_extract import pos_id, string_hashes

    groups = sorted(dict(rules.pronoun_groups).items())
    compat = dict(rules.label_compat)
    return dict(
        pronoun_hashes=string_hashes([w for w, _ in groups]),
        pronoun_group_bits=np.array([R.GROUP_BIT[g] for _, g in groups], dtype=np.int64),
        label_hashes=string_hashes(list(rules.entity_labels)),
        label_compat=np.array([compat.get(lab, R.NEUT_SG) for lab in rules.entity_labels], dtype=np.int64),
        np_dep_hashes=string_hashes(list(rules.np_deps)),
        person_noun_hashes=string_hashes(list(rules.person_nouns)),
        drop_leading_hashes=string_hashes(list(rules.drop_leading)),
        drop_trailing_hashes=string_hashes(list(rules.drop_trailing)),
        dep_expl=int(string_hashes(["expl"])[0]),
        dep_conj=int(string_hashes(["conj"])[0]),
        tag_plural=int(string_hashes(["NNS"])[0]),
        tag_plural_proper=int(string_hashes(["NNPS"])[0]),
        pos_pron=pos_id("PRON"),
        pos_noun=pos_id("NOUN"),
        pos_space=pos_id("SPACE"),
    )


def _refinement_tables(rules: R.RuleSet) -> dict[str, Any]:
    """Keyword arguments of ``extract_items`` for the optional refinements of a rule set."""
    from .anchors.spacy_extract import pos_id, string_hashes

    out: dict[str, Any] = {}
    if rules.titles:
        titles = dict(rules.titles)
        out["title_hashes"] = string_hashes(list(titles))
        out["title_bits"] = np.array(list(titles.values()), dtype=np.int64)
    if rules.name_gender:
        names = R.first_name_genders()
        out["name_hashes"] = string_hashes(list(names))
        out["name_bits"] = np.array(list(names.values()), dtype=np.int64)
    if rules.skip_adjective_labels:
        out["label_skip_adj"] = np.array([lab in rules.skip_adjective_labels for lab in rules.entity_labels], np.int64)
        out["pos_adj"] = pos_id("ADJ")
    if "PERSON" in rules.entity_labels:
        out["person_label"] = rules.entity_labels.index("PERSON")
    out["key_with_label"] = rules.key_with_label
    out["key_with_title"] = rules.key_with_title
    out["chain_nouns"] = rules.chain_nouns
    return out


def _apply_entity_gender(items: dict[str, np.ndarray], ent_id: np.ndarray, n_ent: int, extra: int) -> None:
    """Give every mention of a PERSON entity the gender any of its mentions shows (title or
    first name); an entity whose mentions disagree stays ungendered. Updates ``compat``."""
    g = items["gender"]
    known = (ent_id >= 0) & (g > 0)
    if not known.any():
        return
    ent_gender = np.zeros(max(n_ent, 1), dtype=np.uint8)
    np.bitwise_or.at(ent_gender, ent_id[known], g[known])
    ent_gender[ent_gender == (R.MASC_SG | R.FEM_SG)] = 0
    mask = ent_id >= 0
    eg = np.zeros_like(g)
    eg[mask] = ent_gender[ent_id[mask]]
    set_ = eg > 0
    items["compat"] = np.where(set_, eg | np.uint8(extra), items["compat"]).astype(np.uint8)


def _order_segments(df: pl.DataFrame, cols: SegmentColumns) -> pl.DataFrame:
    """Sort rows: documents in order of first appearance, segments by id within a document.

    Integer ids (or strings that all parse as integers) sort numerically; other ids keep
    their input order within the document.
    """
    import polars as pl

    seg = df[cols.segment]
    if seg.dtype.is_integer():
        key = seg.cast(pl.Int64)
    elif seg.dtype.is_float():
        key = seg
    else:
        as_int = seg.cast(pl.String).str.strip_chars().cast(pl.Int64, strict=False)
        key = as_int if as_int.null_count() == 0 else df[ROW].cast(pl.Int64)
    doc_order = df.select(pl.col(cols.document).unique(maintain_order=True)).with_row_index("__doc")
    return (
        df.with_columns(key.alias("__segkey"))
        .join(doc_order, on=cols.document, how="left")
        .sort(["__doc", "__segkey", ROW])
    )


def _split_units(texts: pl.Series) -> pl.DataFrame:
    """Split each segment text at line breaks into parse units (stripped, non-empty lines).

    Returns ``__seg`` (segment ordinal), ``unit`` (line text) and ``offset`` (character
    offset of the stripped line in the segment text).
    """
    import polars as pl

    lines = (
        pl.DataFrame({"__seg": np.arange(len(texts), dtype=np.int64), "t": texts})
        .with_columns(pl.col("t").str.split("\n"))
        .explode("t")
        .with_columns(pl.col("t").str.len_chars().alias("n"))
        .with_columns(
            ((pl.col("n") + 1).cum_sum().over("__seg") - (pl.col("n") + 1)).alias("line_start"),
            pl.col("t").str.strip_chars_start().alias("ls"),
        )
        .with_columns(
            (pl.col("line_start") + pl.col("n") - pl.col("ls").str.len_chars()).alias("offset"),
            pl.col("ls").str.strip_chars_end().alias("unit"),
        )
        .filter(pl.col("unit").str.len_chars() > 0)
        .select("__seg", "unit", "offset")
    )
    return lines


def profile_anchors(
    source: Any,
    *,
    document: str = S.DOCUMENT_ID,
    segment: str = S.SEGMENT_ID,
    text: str = S.SOURCE,
    domain: str = S.DOMAIN,
    distance: Distance = "chained",
    pipeline: str | None = None,
    rules: str | R.RuleSet | None = None,
    sentence_unit: SentenceUnit = "sentence",
    n_process: int = 1,
    n_threads: int = 1,
    batch_size: int = 256,
    progress: bool = False,
    nlp: Any = None,
    source_name: str | None = None,
) -> ProfileResult:
    """Profile discourse dependency of every segment of ``source``.

    Parameters
    ----------
    source : path | folder | polars/pandas DataFrame | pyarrow Table
        Segment table (``document``, ``segment`` ids and ``text``; optional ``domain``) or a
        folder of ``.txt`` documents (blank line = segment boundary).
    distance : "chained" | "nearest"
        ``chained`` measures an anchor back to its entity's first mention; ``nearest`` to
        the most recent previous mention (ablation).
    pipeline : str, optional
        spaCy pipeline preset (``default``/``sm``, ``md``) or any installed name/path.
    rules : str | RuleSet, optional
        Anchor rule set (default ``"paper"``).
    sentence_unit : "sentence" | "segment"
        ``segment`` counts every input segment as one sentence unit (spaCy's pieces of a
        segment share its index): used to align with gold sentences.
    n_process : int
        spaCy worker processes. ``n_threads``: threads of the distance kernel.
    progress : bool
        Show a progress bar (stderr) while parsing.
    nlp : spacy.Language, optional
        An already loaded pipeline (used when ``n_process == 1``).
    """
    import polars as pl

    from . import namespace as _ns  # noqa: F401  (registers DataFrame.ddp)
    from ._native import load
    from .anchors.spacy_extract import load_pipeline, parse_texts

    K = load("ddp_kernels")
    if distance not in ("chained", "nearest"):
        raise DDPUsageError(f"distance must be 'chained' or 'nearest', not {distance!r}", code="D205")
    if sentence_unit not in ("sentence", "segment"):
        raise DDPUsageError(f"sentence_unit must be 'sentence' or 'segment', not {sentence_unit!r}", code="D206")
    if n_process < 1:
        raise DDPUsageError("n_process must be at least 1", code="D207")
    ruleset = R.get_rules(rules)
    cols = SegmentColumns(document, segment, text, domain)
    name = source_name or (str(source) if isinstance(source, (str, os.PathLike)) else "<table>")
    df = _order_segments(read_segments(source, cols), cols)
    n_seg = df.height

    # ---- parse units: stripped non-empty lines of each segment (a line break ends a sentence)
    units = _split_units(df[text])
    if nlp is None and n_process == 1:
        nlp = load_pipeline(pipeline)
    max_len = nlp.max_length if nlp is not None else 1_000_000
    too_long = units.filter(pl.col("unit").str.len_chars() > max_len)
    if too_long.height:
        s = int(too_long["__seg"][0])
        raise DDPDataError(
            f"{name}, row {int(df[ROW][s]) + 1}, column '{text}': a line of {too_long['unit'][0].__len__():,} characters "
            f"exceeds the parser limit of {max_len:,}; split the segment into smaller segments or lines",
            code="D115",
        )
    unit_seg = units["__seg"].to_numpy().astype(np.int64)
    unit_off = units["offset"].to_numpy().astype(np.int64)
    texts = units["unit"].to_list()

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(texts), unit="line", desc="parsing", leave=False, mininterval=0.5)
    tick: Callable[[int], None] | None = bar.update if bar is not None else None
    try:
        info: dict[str, Any] = {}
        toks = parse_texts(texts, pipeline=pipeline, nlp=nlp, n_process=n_process, batch_size=batch_size,
                           progress=tick, info=info)
    finally:
        if bar is not None:
            bar.close()
    refinements = _refinement_tables(ruleset)
    if not info["has_parser"]:
        from .anchors.spacy_extract import pos_id

        refinements.update(heads_from_tags=True, pos_propn=pos_id("PROPN"))

    # ---- token-level arrays
    n_units = len(texts)
    n_tok = int(toks.n_tokens__unit.sum())
    tok_unit = np.repeat(np.arange(n_units, dtype=np.int64), toks.n_tokens__unit)
    tok_seg = unit_seg[tok_unit]
    unit_first_tok = np.concatenate([[0], np.cumsum(toks.n_tokens__unit)[:-1]]).astype(np.int64)
    unit_start = np.zeros(n_tok, dtype=np.uint8)
    unit_start[unit_first_tok[toks.n_tokens__unit > 0]] = 1
    tok_char = unit_off[tok_unit] + toks.idx
    tok_char_end = unit_off[tok_unit] + toks.end
    head_abs = np.arange(n_tok, dtype=np.int64) + toks.head
    tables = _rule_tables(ruleset)
    flags = K.sentence_starts(toks.sent_start, toks.pos, unit_start, tables["pos_space"])
    seg_doc = df["__doc"].to_numpy().astype(np.int64)
    n_docs = int(seg_doc.max()) + 1 if n_seg else 0
    # ordinal of each segment within its document (segments are sorted by document)
    doc_first_seg = np.searchsorted(seg_doc, np.arange(n_docs))
    seg_in_doc = np.arange(n_seg) - doc_first_seg[seg_doc]
    n_sent_seg = np.bincount(tok_seg, weights=flags, minlength=n_seg).astype(np.int64)
    if sentence_unit == "sentence":
        tok_gsent = np.cumsum(flags, dtype=np.int64) - 1
        n_sentences = int(flags.sum())
        seg_first_gsent = np.concatenate([[0], np.cumsum(n_sent_seg)[:-1]]).astype(np.int64)
        doc_first_gsent = seg_first_gsent[doc_first_seg]
        tok_sent = tok_gsent - doc_first_gsent[seg_doc[tok_seg]]
        sent_seg = tok_seg[flags.astype(bool)]
        sent_in_doc = tok_sent[flags.astype(bool)]
        seg_first_sentence = seg_first_gsent - doc_first_gsent[seg_doc]
    else:
        tok_gsent = tok_seg.copy()
        n_sentences = n_seg
        tok_sent = seg_in_doc[tok_seg]
        sent_seg = np.arange(n_seg, dtype=np.int64)
        sent_in_doc = seg_in_doc
        seg_first_sentence = seg_in_doc

    # ---- items (entity mentions, pronouns, head nouns) and distances
    items = K.extract_items(
        toks.lower, toks.pos, toks.tag, toks.dep, head_abs, toks.iob, toks.enttype, unit_start,
        tables["pronoun_hashes"], tables["pronoun_group_bits"], tables["label_hashes"], tables["label_compat"],
        tables["np_dep_hashes"], tables["person_noun_hashes"], tables["drop_leading_hashes"],
        tables["drop_trailing_hashes"], tables["dep_expl"], tables["dep_conj"], tables["tag_plural"],
        tables["tag_plural_proper"], tables["pos_pron"], tables["pos_noun"], tables["pos_space"],
        **refinements,
    )
    it_tok = items["token"]
    it_seg = tok_seg[it_tok]
    it_doc = seg_doc[it_seg]
    it_sent = tok_sent[it_tok].astype(np.int32)
    it_gsent = tok_gsent[it_tok].astype(np.int32)
    offsets = np.searchsorted(it_doc, np.arange(n_docs + 1)).astype(np.int64)
    person = ruleset.entity_labels.index("PERSON") if "PERSON" in ruleset.entity_labels else -1
    ent_id, n_ent = K.assign_entity_ids(
        offsets, items["kind"], items["label"], items["key"], items["last"], items["n_key"], person,
        ruleset.person_last_token_merge,
    )
    if ruleset.name_gender or ruleset.titles:
        _apply_entity_gender(items, ent_id, n_ent, ruleset.person_known_extra)
    dist, ante, ref, ddp_seg, ddp_sent = K.compute_distances(
        offsets, items["kind"], it_sent, ent_id, items["compat"], it_seg.astype(np.int32), it_gsent,
        n_ent, n_seg, n_sentences, distance == "nearest", n_threads,
    )

    # ---- segment table (restore input order)
    is_anchor = items["kind"] != 2
    n_anchor_seg = np.bincount(it_seg[is_anchor], minlength=n_seg)
    n_tok_seg = np.bincount(tok_seg[toks.pos != tables["pos_space"]], minlength=n_seg)
    extra = [c for c in df.columns if c not in (ROW, "__doc", "__segkey")]
    segments = (
        df.select(ROW, *extra)
        .with_columns(
            pl.Series(S.N_SENTENCES, n_sent_seg if sentence_unit == "sentence" else np.ones(n_seg, np.int64)),
            pl.Series(S.N_TOKENS, n_tok_seg.astype(np.int64)),
            pl.Series(S.N_ANCHORS, n_anchor_seg.astype(np.int64)),
            pl.Series(S.DDP, ddp_seg.astype(np.int64)),
            pl.Series(S.FIRST_SENTENCE, seg_first_sentence.astype(np.int64)),
        )
        .sort(ROW)
    )
    lead = [document, segment, domain, S.N_SENTENCES, S.N_TOKENS, S.N_ANCHORS, S.DDP, S.FIRST_SENTENCE]
    segments = segments.select(*lead, *[c for c in extra if c not in lead])

    # ---- anchors table
    seg_text = df[text]
    a_idx = np.flatnonzero(is_anchor)
    item_char_start = tok_char[it_tok]
    item_char_end = tok_char_end[items["end_token"] - 1]
    ent_base = np.full(max(n_docs, 1), np.iinfo(np.int32).max, dtype=np.int64)
    ent_mask = ent_id >= 0
    np.minimum.at(ent_base, it_doc[ent_mask], ent_id[ent_mask])
    local_eid = np.where(ent_mask, ent_id - ent_base[it_doc], -1)
    labels_entity = np.array(ruleset.entity_labels + ("",), dtype=object)
    group_names = {1: "MASC_SG", 2: "FEM_SG", 4: "NEUT_SG", 8: "PL"}
    lab = items["label"].astype(np.int64)
    label_str = np.where(
        items["kind"] == 0,
        labels_entity[np.where(items["kind"] == 0, lab, len(ruleset.entity_labels))],
        np.vectorize(group_names.get, otypes=[object])(np.where(items["kind"] == 1, lab, 1)),
    )
    has_ante = ante >= 0
    ante_safe = np.where(has_ante, ante, 0)
    ref_safe = np.where(ref >= 0, ref, 0)
    ante_kind = np.where(
        has_ante,
        np.array(KIND_NAMES, dtype=object)[items["kind"][ante_safe]] if len(ante_safe) else np.array([], dtype=object),
        np.where(items["kind"] == 0, "first_mention", "none"),
    )
    doc_anchor_first = np.searchsorted(np.flatnonzero(is_anchor), offsets[:-1])  # first anchor row per doc
    a_doc = it_doc[a_idx]
    sl = pl.DataFrame({
        "__seg": it_seg[a_idx],
        "__aseg": it_seg[ante_safe[a_idx]],
        S.ANCHOR_INDEX: (np.arange(len(a_idx)) - doc_anchor_first[a_doc]).astype(np.int64),
        S.SENTENCE: it_sent[a_idx].astype(np.int64),
        S.KIND: np.array(KIND_NAMES, dtype=object)[items["kind"][a_idx]].astype(str),
        S.LABEL: label_str[a_idx].astype(str),
        S.CHAR_START: item_char_start[a_idx],
        S.CHAR_END: item_char_end[a_idx],
        S.ENTITY_ID: local_eid[a_idx].astype(np.int64),
        S.ANTECEDENT_KIND: ante_kind[a_idx].astype(str),
        "__astart": item_char_start[ante_safe[a_idx]],
        "__aend": item_char_end[ante_safe[a_idx]],
        "__has_ante": has_ante[a_idx],
        S.ANTECEDENT_SENTENCE: np.where(has_ante, it_sent[ante_safe], -1)[a_idx].astype(np.int64),
        S.REFERENCE_SENTENCE: np.where(ref >= 0, it_sent[ref_safe], -1)[a_idx].astype(np.int64),
        S.DISTANCE_SENTENCES: dist[a_idx].astype(np.int64),
    })
    seg_lookup = pl.DataFrame({
        "__seg": np.arange(n_seg, dtype=np.int64),
        document: df[document],
        segment: df[segment],
        "__text": seg_text,
    })
    anchors = (
        sl.join(seg_lookup, on="__seg", how="left")
        .join(seg_lookup.select(pl.col("__seg").alias("__aseg"), pl.col("__text").alias("__atext")), on="__aseg", how="left")
        .with_columns(
            pl.col("__text").str.slice(pl.col(S.CHAR_START), pl.col(S.CHAR_END) - pl.col(S.CHAR_START)).alias(S.TEXT),
            pl.when(pl.col("__has_ante"))
            .then(pl.col("__atext").str.slice(pl.col("__astart"), pl.col("__aend") - pl.col("__astart")))
            .otherwise(None)
            .alias(S.ANTECEDENT_TEXT),
        )
        .select(
            document, segment, S.ANCHOR_INDEX, S.SENTENCE, S.KIND, S.LABEL, S.TEXT, S.CHAR_START, S.CHAR_END,
            S.ENTITY_ID, S.ANTECEDENT_KIND, S.ANTECEDENT_TEXT, S.ANTECEDENT_SENTENCE, S.REFERENCE_SENTENCE,
            S.DISTANCE_SENTENCES,
        )
    )

    # ---- sentences table
    sentences = pl.DataFrame({
        document: df[document].gather(sent_seg),
        segment: df[segment].gather(sent_seg),
        S.SENTENCE: sent_in_doc.astype(np.int64),
        S.SENTENCE_DDP: ddp_sent.astype(np.int64),
    })

    signature = {
        "ddpcore": __version__,
        **info,
        "distance": distance,
        "rules": ruleset.name,
        "rules_description": ruleset.description,
        "sentence_unit": sentence_unit,
        "columns": {"document": document, "segment": segment, "text": text, "domain": domain},
    }
    return ProfileResult(segments=segments, anchors=anchors, sentences=sentences, signature=signature)


def profile(source: Any, **kwargs: Any) -> pl.DataFrame:
    """Segment-level DDP of ``source`` (one row per input segment); see :func:`profile_anchors`."""
    return profile_anchors(source, **kwargs).segments


def summarize(segments: pl.DataFrame, *, by: str | None = S.DOMAIN, document: str = S.DOCUMENT_ID) -> pl.DataFrame:
    """Per-group DDP summary of a segment table: documents, segments, mean / median / p90 /
    max DDP (sentences) and the share of zero-DDP segments, plus an ``all`` row.

    Quantiles use linear interpolation (numpy's default).
    """
    import polars as pl

    aggs = [
        pl.col(document).n_unique().alias("documents"),
        pl.len().alias("segments"),
        pl.col(S.DDP).mean().alias("mean_ddp"),
        pl.col(S.DDP).median().alias("median_ddp"),
        pl.col(S.DDP).quantile(0.9, "linear").alias("p90_ddp"),
        pl.col(S.DDP).max().alias("max_ddp"),
        (pl.col(S.DDP) == 0).mean().alias("zero_ddp_share"),
    ]
    total = segments.select(pl.lit("all").alias("group"), *aggs)
    if by is None or by not in segments.columns:
        return total
    per = (
        segments.with_columns(pl.col(by).cast(pl.String).fill_null("(none)").alias("group"))
        .group_by("group")
        .agg(*aggs)
        .sort("group")
    )
    return pl.concat([per, total.cast(per.schema)])


@dataclass(frozen=True)
class ExplainResult:
    """Why one segment has its DDP: its anchors, antecedents and distances.

    ``anchors`` has the columns of the anchors table for this segment only; ``ddp`` is the
    segment DDP in sentences; sentences are numbered over the whole document.
    """

    document: str
    segment: str
    ddp: int
    n_sentences: int
    first_sentence: int
    text: str
    anchors: pl.DataFrame
    signature: dict[str, Any]
    #: where recorded settings were taken from (Parquet file or ``.signature.json`` sidecar), if anywhere
    settings_from: str | None = None
    #: the settings taken from that signature (not given by the caller), e.g. ``{"rules": "paper"}``
    inherited: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "document": self.document,
            "segment": self.segment,
            "ddp": self.ddp,
            "n_sentences": self.n_sentences,
            "first_sentence": self.first_sentence,
            "anchors": self.anchors.to_dicts(),
            "signature": self.signature,
            "settings_from": self.settings_from,
            "inherited": self.inherited,
        }

    def to_text(self) -> str:
        """A readable table; ``*`` marks the anchors that set the segment's DDP."""
        last = self.first_sentence + self.n_sentences - 1
        lines = [
            f"document {self.document!r}, segment {self.segment!r}: DDP = {self.ddp} sentence(s)",
            f"sentences {self.first_sentence}..{last} of the document; distance mode "
            f"{self.signature.get('distance')}, rules {self.signature.get('rules')}",
            "",
        ]
        if self.anchors.height == 0:
            lines.append("no anchors (no named-entity re-mention or 3rd-person pronoun): DDP = 0")
            return "\n".join(lines)
        for row in self.anchors.iter_rows(named=True):  # display only: a handful of rows
            d = row[S.DISTANCE_SENTENCES]
            mark = "*" if d == self.ddp and d > 0 else " "
            what = f"{row[S.KIND]} {row[S.LABEL]}"
            if row[S.ANTECEDENT_KIND] == "first_mention":
                why = "first mention of this entity: no distance"
            elif row[S.ANTECEDENT_KIND] == "none":
                why = "no compatible antecedent before it: distance 1"
            else:
                why = f"-> {row[S.ANTECEDENT_KIND]} {row[S.ANTECEDENT_TEXT]!r} (sentence {row[S.ANTECEDENT_SENTENCE]})"
                if row[S.REFERENCE_SENTENCE] != row[S.ANTECEDENT_SENTENCE]:
                    why += f", entity first mentioned in sentence {row[S.REFERENCE_SENTENCE]}"
                why += f": {row[S.SENTENCE]} - {row[S.REFERENCE_SENTENCE]} = {d}"
            lines.append(f"{mark} s{row[S.SENTENCE]:<5} {row[S.TEXT]!r:<24} {what:<18} {why}")
        return "\n".join(lines)


def explain(source: Any, document: Any, segment: Any, /, **kwargs: Any) -> ExplainResult:
    """Explain the DDP of one segment.

    ``source`` is an input segment table/folder, or an output of ``ddp profile``: a Parquet
    file (signature in its metadata) or a CSV/TSV/JSONL/JSON file with its
    ``<file>.signature.json`` sidecar. The recorded signature supplies the distance mode,
    rules, pipeline and column names not given in ``kwargs`` (``document=``, ``segment=``,
    ``text=``, ``domain=`` name columns; ``distance=``, ``rules=``, ``pipeline=``...), and the
    carried-through source text is re-parsed; ``ExplainResult.inherited`` says which
    settings came from where. Only the segment's document is parsed. ``document`` and
    ``segment`` (positional) are ids, matched as strings.
    """
    import polars as pl

    from .io.outputs import sidecar_path
    from .io.tables import read_parquet_metadata, read_table

    opts = {k: v for k, v in kwargs.items() if v is not None}
    table: Any = source
    sig: dict[str, Any] | None = None
    settings_from: str | None = None
    if isinstance(source, (str, os.PathLike)):
        if str(source).lower().endswith((".parquet", ".pq")) and os.path.isfile(source):
            try:
                meta = read_parquet_metadata(source)
            except Exception as exc:  # pyarrow raises several types for a bad file
                raise DDPDataError(f"{source}: not a readable Parquet file ({str(exc).splitlines()[0]})",
                                   code="D103") from None
            if SIGNATURE_KEY in meta:
                sig, settings_from = json.loads(meta[SIGNATURE_KEY]), str(source)
        elif sidecar_path(source).is_file():
            side = sidecar_path(source)
            try:
                sig = json.loads(side.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise DDPDataError(f"{side}: not a readable signature file ({exc}); delete it or pass "
                                   "--rules/--distance/--pipeline and the column options", code="D103") from None
            if not isinstance(sig, dict):
                raise DDPDataError(f"{side}: not a signature (expected a JSON object)", code="D103")
            settings_from = str(side)
    inherited: dict[str, Any] = {}
    if sig is not None:
        recorded = {key: sig.get("columns", {}).get(key) for key in ("document", "segment", "text", "domain")}
        recorded.update(distance=sig.get("distance"), rules=sig.get("rules"), sentence_unit=sig.get("sentence_unit"))
        pipe = sig.get("pipeline")
        recorded["pipeline"] = None if pipe in (None, "default") else pipe
        for key, value in recorded.items():
            if key not in opts and value is not None:
                opts[key] = inherited[key] = value
        table = read_table(source)
    opts = {k: v for k, v in opts.items() if v is not None}
    doc_col = opts.get("document", S.DOCUMENT_ID)
    seg_col = opts.get("segment", S.SEGMENT_ID)
    from .io.segments import read_segments

    cols = SegmentColumns(doc_col, seg_col, opts.get("text", S.SOURCE), opts.get("domain", S.DOMAIN))
    df = read_segments(table, cols).drop(ROW)
    sub = df.filter(pl.col(doc_col).cast(pl.String) == str(document))
    if sub.height == 0:
        ids = df[doc_col].unique(maintain_order=True)
        sample = ", ".join(map(str, ids.head(5).to_list()))
        raise DDPDataError(f"document {document!r} not found in column '{doc_col}' ({len(ids)} documents, "
                           f"the first: {sample})", code="D116")
    if sub.filter(pl.col(seg_col).cast(pl.String) == str(segment)).height == 0:
        sample = ", ".join(map(str, sub[seg_col].head(10).to_list()))
        more = f"{sub.height} segments, the first 10: " if sub.height > 10 else f"{sub.height} segment(s): "
        raise DDPDataError(
            f"segment {segment!r} not found in document {document!r} (column '{seg_col}'; {more}{sample})",
            code="D117",
        )
    keep = [c for c in (doc_col, seg_col, cols.text, cols.domain) if c in sub.columns]
    result = profile_anchors(sub.select(keep), **opts)
    seg_row = result.segments.filter(pl.col(seg_col).cast(pl.String) == str(segment))
    anchors = result.anchors.filter(pl.col(seg_col).cast(pl.String) == str(segment))
    return ExplainResult(
        document=str(document),
        segment=str(segment),
        ddp=int(seg_row[S.DDP][0]),
        n_sentences=int(seg_row[S.N_SENTENCES][0]),
        first_sentence=int(seg_row[S.FIRST_SENTENCE][0]),
        text=str(seg_row[cols.text][0]),
        anchors=anchors,
        signature=result.signature,
        settings_from=settings_from,
        inherited=inherited,
    )
