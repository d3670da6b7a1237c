"""The trained antecedent scorer of rule set ``learned``: inputs checked, weights loaded.

The kernels live in :mod:`ddpcore._native.antecedent` and trust their inputs; this module
builds those inputs from the pipeline stages (:class:`AntecedentColumns`,
:class:`AntecedentTables`), loads and checks a weights file (:func:`load_antecedent_model`,
errors D240-D249) and runs the link stage (:func:`link_learned`), which replaces
``measure_distances`` for a rule set with an ``antecedent_model``.

Candidates of an anchor (a pronoun or a named mention) are the earlier entity mentions and head
nouns of its document at most ``max_sentences`` sentences back (the weights file gives the cap;
``scripts/train_antecedent.py`` measures it on GUM train). The features are listed in
:data:`FEATURES` with the version :data:`LAYOUT_VERSION` of their layout.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..anchors.rules import PERSON_NOUN_COMPAT, RuleSet
from ..errors import DDPDataError
from ..anchors.antecedent_model import (  # noqa: F401  (re-exported: the link stage's inputs)
    DATA_DIR, FALLBACKS, MODEL_ROWS, WEIGHTS_FORMAT, AntecedentModel, feature_layout, load_antecedent_model,
    weights_path,
)
from ..anchors.antecedent_model import kernel as _kernel
from ..anchors.rules import model_for  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from ..anchors.spacy_extract import TokenArrays
    from .arrays import Distances, Entities, TokenIndex


#: dependency labels of the syntactic roles (spaCy's English labels)
SUBJECT_DEPS = ("nsubj", "nsubjpass", "csubj", "csubjpass", "expl")
OBJECT_DEPS = ("dobj", "dative", "obj", "iobj", "attr", "oprd")
POSSESSIVE_DEPS = ("poss",)
PREP_OBJECT_DEPS = ("pobj", "pcomp")
OPEN_QUOTES = ("\u201c", "``", "\u00ab")
CLOSE_QUOTES = ("\u201d", "''", "\u00bb")
TOGGLE_QUOTES = ('"',)
REFLEXIVES = ("himself", "herself", "itself", "themselves", "themself")


# ---------------------------------------------------------------------------------- weights


# ---------------------------------------------------------------------------------- inputs


def _hashes(words: tuple[str, ...]) -> np.ndarray:
    from ..anchors.spacy_extract import string_hashes

    return string_hashes(list(words)) if words else np.empty(0, dtype=np.uint64)


@dataclass(frozen=True)
class AntecedentTables:
    """Word lists of the features as uint64 StringStore hashes (see :func:`compile`)."""

    subject_deps: np.ndarray
    object_deps: np.ndarray
    possessive_deps: np.ndarray
    prep_object_deps: np.ndarray
    open_quotes: np.ndarray
    close_quotes: np.ndarray
    toggle_quotes: np.ndarray
    titles: np.ndarray
    reflexives: np.ndarray
    person_noun_compat: int = PERSON_NOUN_COMPAT

    @classmethod
    def compile(cls, rules: RuleSet) -> AntecedentTables:
        """Hash the role, quotation, title and reflexive word lists (titles from ``rules``)."""
        return cls(
            subject_deps=_hashes(SUBJECT_DEPS), object_deps=_hashes(OBJECT_DEPS),
            possessive_deps=_hashes(POSSESSIVE_DEPS), prep_object_deps=_hashes(PREP_OBJECT_DEPS),
            open_quotes=_hashes(OPEN_QUOTES), close_quotes=_hashes(CLOSE_QUOTES), toggle_quotes=_hashes(TOGGLE_QUOTES),
            titles=_hashes(tuple(w for w, _ in rules.titles)), reflexives=_hashes(REFLEXIVES),
        )


@dataclass(frozen=True)
class AntecedentColumns:
    """Item and token arrays the antecedent kernels read.

    Items (n_items,), document order: ``kind`` int8, ``label`` int16, ``compat`` uint8,
    ``key``/``last_token_key`` uint64, ``entity`` int32 (rule-based entity id, -1 none, below
    ``n_entities``), ``sentence`` int32 (document-level sentence), ``token``/``end_token`` int64
    (span, end exclusive), ``offsets__doc`` int64 (n_docs + 1,) item offsets per document.
    Tokens (n_tok,): ``lower``/``dep`` uint64 hashes, ``head`` int64 absolute head index;
    ``offsets__doc_tok`` int64 (n_docs + 1,) token offsets per document.
    """

    kind: np.ndarray
    label: np.ndarray
    compat: np.ndarray
    key: np.ndarray
    last_token_key: np.ndarray
    entity: np.ndarray
    sentence: np.ndarray
    token: np.ndarray
    end_token: np.ndarray
    offsets__doc: np.ndarray
    lower: np.ndarray
    dep: np.ndarray
    head: np.ndarray
    offsets__doc_tok: np.ndarray
    n_entities: int

    DTYPES: ClassVar[dict[str, type[np.generic]]] = {
        "kind": np.int8, "label": np.int16, "compat": np.uint8, "key": np.uint64, "last_token_key": np.uint64,
        "entity": np.int32, "sentence": np.int32, "token": np.int64, "end_token": np.int64,
        "offsets__doc": np.int64, "lower": np.uint64, "dep": np.uint64, "head": np.int64,
        "offsets__doc_tok": np.int64,
    }
    ITEM_FIELDS: ClassVar[tuple[str, ...]] = ("kind", "label", "compat", "key", "last_token_key", "entity",
                                              "sentence", "token", "end_token")

    @classmethod
    def from_stages(cls, items: dict[str, np.ndarray], index: TokenIndex, entities: Entities, toks: TokenArrays,
                    seg_doc: np.ndarray) -> AntecedentColumns:
        """The columns of one batch after ``link_entities``."""
        n_docs = len(entities.doc_offsets) - 1
        tok_doc = seg_doc[index.seg__tok] if len(index.seg__tok) else np.zeros(0, np.int64)
        tok_offsets = np.searchsorted(tok_doc, np.arange(n_docs + 1)).astype(np.int64)
        c = np.ascontiguousarray
        return cls(
            kind=c(items["kind"]), label=c(items["label"]), compat=c(items["compat"]), key=c(items["key"]),
            last_token_key=c(items["last_token_key"]), entity=c(entities.entity__item.astype(np.int32)),
            sentence=c(index.sent__tok[items["token"]].astype(np.int32)), token=c(items["token"]),
            end_token=c(items["end_token"]), offsets__doc=c(entities.doc_offsets.astype(np.int64)),
            lower=c(toks.lower), dep=c(toks.dep), head=c(index.head__tok.astype(np.int64)),
            offsets__doc_tok=tok_offsets, n_entities=int(entities.n_entities),
        )

    def validate(self) -> None:
        """Raise ``TypeError``/``ValueError`` naming the field unless every array has its dtype,
        is 1-d and C-contiguous, the item arrays share one length, offsets are monotone and
        cover the arrays, and spans, heads, sentences and entity ids are in range."""
        from .arrays import check_array as _check_array

        lengths = {name: _check_array("AntecedentColumns", name, getattr(self, name), dt)
                   for name, dt in self.DTYPES.items()}
        n = lengths["kind"]
        bad = [f for f in self.ITEM_FIELDS if lengths[f] != n]
        if bad:
            raise ValueError(f"AntecedentColumns.{bad[0]} has length {lengths[bad[0]]}, the items {n}")
        n_tok = lengths["lower"]
        if lengths["dep"] != n_tok or lengths["head"] != n_tok:
            raise ValueError("AntecedentColumns.lower, .dep and .head must have one length (n_tok)")
        for name, total in (("offsets__doc", n), ("offsets__doc_tok", n_tok)):
            o = getattr(self, name)
            if o.size == 0 or o[0] != 0 or o[-1] != total or (np.diff(o) < 0).any():
                raise ValueError(f"AntecedentColumns.{name} must rise from 0 to {total}")
        if lengths["offsets__doc"] != lengths["offsets__doc_tok"]:
            raise ValueError("AntecedentColumns.offsets__doc and .offsets__doc_tok must count the same documents")
        if n_tok and (self.head.min() < 0 or self.head.max() >= n_tok):
            raise ValueError(f"AntecedentColumns.head must hold token indices in [0, {n_tok})")
        if n:
            if self.token.min() < 0 or (self.end_token <= self.token).any() or self.end_token.max() > n_tok:
                raise ValueError(f"AntecedentColumns.token/end_token must be spans within [0, {n_tok})")
            if (np.diff(self.token) < 0).any():
                raise ValueError("AntecedentColumns.token must be non-decreasing (items in token order)")
            emax = int(self.entity.max())
            if int(self.entity.min()) < -1 or (emax >= 0 and emax >= self.n_entities):
                raise ValueError(f"AntecedentColumns.entity must be -1 or below n_entities={self.n_entities}")
            if self.sentence.min() < 0:
                raise ValueError("AntecedentColumns.sentence must be >= 0")
            if not np.isin(self.kind, (0, 1, 2)).all():
                raise ValueError("AntecedentColumns.kind must be 0 (entity), 1 (pronoun) or 2 (noun)")
            pron = self.kind == 1
            if pron.any() and not np.isin(self.label[pron], (1, 2, 4, 8)).all():
                raise ValueError("AntecedentColumns.label of a pronoun must be its group bit (1, 2, 4 or 8)")


@dataclass(frozen=True)
class ItemAttributes:
    """Per-item ``role`` (int8: 0 other, 1 subject, 2 object, 3 possessive, 4 prepositional
    object), ``quote``, ``title``, ``reflexive`` (uint8 flags), each (n_items,)."""

    role: np.ndarray
    quote: np.ndarray
    title: np.ndarray
    reflexive: np.ndarray


@dataclass(frozen=True)
class CandidateMatrix:
    """CSR candidates: ``offsets__anchor`` (n_anchors + 1,) int64, ``anchor__anchor``
    (n_anchors,) int32 item of each anchor, ``candidate__cand`` (n_cand,) int32 item of each
    candidate (nearest first), ``X__cand_feat`` (n_cand, n_features) float32."""

    offsets__anchor: np.ndarray
    anchor__anchor: np.ndarray
    candidate__cand: np.ndarray
    X__cand_feat: np.ndarray


def item_attributes(cols: AntecedentColumns, tables: AntecedentTables) -> ItemAttributes:
    """Role, quotation, title and reflexive flags of every item (checks ``cols`` first)."""
    cols.validate()
    return ItemAttributes(*_kernel().item_attributes(cols, tables))


def candidate_features(cols: AntecedentColumns, attrs: ItemAttributes, tables: AntecedentTables, *,
                       max_sentences: int) -> CandidateMatrix:
    """Every anchor's candidates and their features (:data:`FEATURES` columns)."""
    if max_sentences < 0:
        raise ValueError(f"max_sentences must be >= 0, got {max_sentences}")
    out = _kernel().candidate_features(cols, attrs.role, attrs.quote, attrs.title, attrs.reflexive,
                                       cols.n_entities, int(max_sentences), int(tables.person_noun_compat))
    return CandidateMatrix(*out)


def link_antecedents(cols: AntecedentColumns, attrs: ItemAttributes, tables: AntecedentTables,
                     model: AntecedentModel, *, n_threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``(link__item int32, score__item float32)``: each anchor's best candidate above its
    threshold, else -2 (``ABSTAIN``, no anchor) when the model abstains, else the rule's choice
    when the model falls back to the rule, else -1; and the best candidate's probability (see
    the kernel)."""
    return _kernel().link_antecedents(
        cols, attrs.role, attrs.quote, attrs.title, attrs.reflexive, cols.n_entities, int(model.max_sentences),
        int(tables.person_noun_compat), np.ascontiguousarray(model.weights, dtype=np.float64),
        np.ascontiguousarray(model.bias, dtype=np.float64), np.ascontiguousarray(model.threshold, dtype=np.float64),
        np.ascontiguousarray(model.fallback, dtype=np.uint8), np.ascontiguousarray(model.abstain, dtype=np.float64),
        n_threads)


def score_candidates(matrix: CandidateMatrix, kind__item: np.ndarray, model: AntecedentModel) -> tuple[np.ndarray, np.ndarray]:
    """:func:`link_antecedents` over a :class:`CandidateMatrix` (same links and scores)."""
    model_row = (kind__item[matrix.anchor__anchor] == 0).astype(np.int8)  # entity -> row 1 (names)
    return _kernel().score_candidates(
        matrix.offsets__anchor, matrix.anchor__anchor, matrix.candidate__cand, matrix.X__cand_feat, model_row,
        np.ascontiguousarray(model.weights, dtype=np.float64), np.ascontiguousarray(model.bias, dtype=np.float64),
        np.ascontiguousarray(model.threshold, dtype=np.float64), np.ascontiguousarray(model.fallback, dtype=np.uint8),
        np.ascontiguousarray(model.abstain, dtype=np.float64), int(feature_layout()[1].index("rule_choice")),
        int(kind__item.shape[0]))


def learned_distances(cols: AntecedentColumns, link__item: np.ndarray, index: TokenIndex, n_seg: int, *,
                      distance: str) -> tuple[Distances, np.ndarray]:
    """Distances and DDP from the links, and the cluster id of every item (see the kernel)."""
    from .arrays import Distances

    it_tok = cols.token
    dist, ante, ref, cluster, ddp_seg, ddp_sent = _kernel().learned_distances(
        cols.offsets__doc, cols.kind, cols.sentence, np.ascontiguousarray(link__item, dtype=np.int32),
        index.seg__tok[it_tok].astype(np.int32), index.gsent__tok[it_tok].astype(np.int32), n_seg,
        index.n_sentences, distance == "nearest")
    return Distances(dist, ante, ref, ddp_seg, ddp_sent), cluster


def link_learned(items: dict[str, np.ndarray], index: TokenIndex, entities: Entities, toks: TokenArrays,
                 seg_doc: np.ndarray, n_seg: int, model: AntecedentModel, tables: AntecedentTables, *,
                 distance: str, n_threads: int = 1) -> tuple[Entities, Distances]:
    """The link stage of rule set ``learned``: score the candidates, link, measure.

    Returns the entities of the learned clusters (entity mentions only, dense ids in document
    order; the anchors table's ``entity_id``) and the distances.
    """
    from .arrays import Entities

    cols = AntecedentColumns.from_stages(items, index, entities, toks, seg_doc)
    attrs = item_attributes(cols, tables)
    link, _ = link_antecedents(cols, attrs, tables, model, n_threads=n_threads)
    distances, cluster = learned_distances(cols, link, index, n_seg, distance=distance)
    ent = np.full(len(cluster), -1, dtype=np.int32)
    is_ent = cols.kind == 0
    n_ent = 0
    if is_ent.any():
        uniq, inv = np.unique(cluster[is_ent], return_inverse=True)
        ent[is_ent] = inv.astype(np.int32)
        n_ent = int(len(uniq))
    return Entities(entity__item=ent, n_entities=n_ent, doc_offsets=entities.doc_offsets), distances
