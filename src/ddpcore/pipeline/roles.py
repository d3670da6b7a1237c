"""What the parse says about an anchor and its antecedent: syntactic role and competing candidates.

Three columns of the anchors table, read by the certification model (:mod:`ddpcore.anchors.certify`)
and shown by ``ddp explain``:

* ``role`` — the dependency role of the anchor's syntactic head token (for a name of several tokens,
  the token whose head lies outside the span): one of :data:`ROLES` (``subject``, ``object``,
  ``possessive``, ``oblique`` (object of a preposition), ``modifier`` (a premodifying name,
  *Santorum cocktail*, or a noun modifier), ``appos``, ``conj``, ``expl``, ``other``);
* ``antecedent_role`` — the same of the item the anchor links to (``none`` without one);
* ``n_candidates`` — for a pronoun, the number of antecedent candidates (names and head nouns)
  whose gender and number fit it, from :data:`REACH` sentences before its sentence up to the
  pronoun (one means the link was unambiguous); null for names.

All of it is computed over the flat item and token arrays of a batch (no Python loop over items).
Dependency labels are spaCy's English ones, compared as StringStore ids.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..anchors.spacy_extract import TokenArrays
    from .arrays import Distances, TokenIndex

#: role names, in code order (code 0 = ``other``)
ROLES = ("other", "subject", "object", "possessive", "oblique", "modifier", "appos", "conj", "expl")
#: antecedent_role of an anchor without an antecedent
NO_ROLE = "none"
#: spaCy dependency labels of each role (code = index in :data:`ROLES`)
ROLE_DEPS: dict[str, tuple[str, ...]] = {
    "subject": ("nsubj", "nsubjpass", "csubj", "csubjpass", "agent"),
    "object": ("dobj", "dative", "obj", "iobj", "attr", "oprd"),
    "possessive": ("poss",),
    "oblique": ("pobj", "pcomp"),
    "modifier": ("compound", "nmod", "amod", "npadvmod"),
    "appos": ("appos",),
    "conj": ("conj",),
    "expl": ("expl",),
}
#: sentences before a pronoun's own in which ``n_candidates`` counts (0: its own sentence only)
REACH = 2
#: pronoun group bits (MASC_SG, FEM_SG, NEUT_SG, PL; see ddpcore.anchors.rules)
_GROUP_BITS = (1, 2, 4, 8)


@dataclass(frozen=True)
class RoleTable:
    """Sorted dependency-label ids ``deps`` (uint64, ``(k,)``) and the role code of each ``codes``
    (int8, ``(k,)``)."""

    deps: np.ndarray
    codes: np.ndarray

    @classmethod
    def compile(cls) -> RoleTable:
        from ..anchors.spacy_extract import string_hashes

        labels = [d for r in ROLES[1:] for d in ROLE_DEPS[r]]
        codes = np.array([ROLES.index(r) for r in ROLES[1:] for _ in ROLE_DEPS[r]], dtype=np.int8)
        ids = string_hashes(labels)
        order = np.argsort(ids, kind="stable")
        return cls(deps=ids[order], codes=codes[order])

    def roles(self, dep: np.ndarray) -> np.ndarray:
        """Role code (int8) of every dependency id in ``dep`` (``(n,)`` uint64); 0 for any other label."""
        if not len(self.deps):
            return np.zeros(dep.shape[0], np.int8)
        at = np.clip(np.searchsorted(self.deps, dep), 0, len(self.deps) - 1)
        return np.where(self.deps[at] == dep, self.codes[at], np.int8(0)).astype(np.int8)


_TABLE: list[RoleTable] = []


def role_table() -> RoleTable:
    """The compiled :class:`RoleTable`, once per process."""
    if not _TABLE:
        _TABLE.append(RoleTable.compile())
    return _TABLE[0]


def head_tokens(start: np.ndarray, end: np.ndarray, head: np.ndarray) -> np.ndarray:
    """The syntactic head of every span ``[start, end)`` (``(n,)`` int64 token indices, ``end > start``):
    its first token whose head (``head``: ``(n_tok,)`` absolute head index) lies outside the span; the
    span's last token when every head is inside (a parse without dependencies)."""
    n = start.shape[0]
    length = (end - start).astype(np.int64)
    if n == 0:
        return np.zeros(0, np.int64)
    span = np.repeat(np.arange(n, dtype=np.int64), length)
    first = np.concatenate([[0], np.cumsum(length)[:-1]])
    tok = start[span] + (np.arange(span.shape[0], dtype=np.int64) - first[span])
    h = head[tok]
    outside = (h < start[span]) | (h >= end[span])
    # first outside token of each span: the minimum token index among its outside tokens
    cand = np.where(outside, tok, np.iinfo(np.int64).max)
    best = np.minimum.reduceat(cand, first)
    return np.where(best == np.iinfo(np.int64).max, end - 1, best).astype(np.int64)


def item_roles(toks: TokenArrays, index: TokenIndex, items: dict[str, np.ndarray]) -> np.ndarray:
    """Role code (:data:`ROLES` index, int8) of every item, ``(n_items,)``."""
    heads = head_tokens(items["token"].astype(np.int64), items["end_token"].astype(np.int64), index.head__tok)
    return role_table().roles(toks.dep[heads])


def compatible_candidates(items: dict[str, np.ndarray], index: TokenIndex, seg_doc: np.ndarray,
                          reach: int = REACH) -> np.ndarray:
    """For every item, ``(n_items,)`` int64: when it is a pronoun (kind 1), the number of earlier items
    of its document that are antecedent candidates (kind 0 or 2) whose ``compat`` mask holds the
    pronoun's group bit and whose sentence is at most ``reach`` sentences before the pronoun's; -1 for
    other items. Items are in document then token order (as the kernels emit them)."""
    kind = items["kind"]
    compat = items["compat"].astype(np.uint8)
    n = kind.shape[0]
    out = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return out
    tok = items["token"]
    sent = index.sent__tok[tok].astype(np.int64)
    doc = seg_doc[index.seg__tok[tok]].astype(np.int64)
    span = int(sent.max()) + reach + 2
    key = doc * span + sent + reach + 1  # non-decreasing in item order; the offset keeps key - reach in the document
    pron = np.flatnonzero(kind == 1)
    lo = np.searchsorted(key, key[pron] - reach, side="left")
    is_cand = kind != 1
    for bit in _GROUP_BITS:
        mine = pron[compat[pron] == bit]
        if not len(mine):
            continue
        ok = np.concatenate([[0], np.cumsum(is_cand & ((compat & bit) != 0), dtype=np.int64)])
        out[mine] = ok[mine] - ok[lo[compat[pron] == bit]]
    other = pron[~np.isin(compat[pron], _GROUP_BITS)]
    out[other] = 0
    return out


def anchor_parse_columns(toks: TokenArrays, index: TokenIndex, items: dict[str, np.ndarray], distances: Distances,
                         seg_doc: np.ndarray, a_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``role``, ``antecedent_role`` (str object arrays) and ``n_candidates`` (int64, -1 for names) of the
    anchors ``a_idx`` (item indices, ``(n_anchors,)``)."""
    names = np.array((*ROLES, NO_ROLE), dtype=object)
    code = item_roles(toks, index, items).astype(np.int64)
    ante = distances.antecedent__item[a_idx].astype(np.int64)
    ante_code = np.where(ante >= 0, code[np.where(ante >= 0, ante, 0)], len(ROLES))
    cands = compatible_candidates(items, index, seg_doc)
    return names[code[a_idx]], names[ante_code], cands[a_idx]
