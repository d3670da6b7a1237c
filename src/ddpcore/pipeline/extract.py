"""Inputs of the item-extraction kernel, grouped and checked.

``extract_items`` (Cython, :mod:`ddpcore._native.ddp_kernels`) runs without bounds checks, so
its inputs are checked here, in Python, before it runs:

* :class:`TokenColumns` — the token columns of a batch, each of shape ``(n_tok,)``;
* :class:`RuleTables` — a rule set (:mod:`ddpcore.anchors.rules`) compiled into the hashes,
  bits and switches the kernel reads (:meth:`RuleTables.compile`);
* :func:`extract_items` — validates both and runs the kernel.

The stage :func:`ddpcore.pipeline.stages.find_items` is the usual caller.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..anchors.rules import (
    FEM_SG,
    GROUP_BIT,
    MASC_SG,
    NEUT_SG,
    NOUN_COMPAT,
    NOUN_KEY_SALT,
    PERSON_NOUN_COMPAT,
    PLURAL_NOUN_COMPAT,
    RuleSet,
    first_name_genders,
)
from ..anchors.spacy_extract import TokenAttributes
from .arrays import check_array as _check_array

if TYPE_CHECKING:
    from ..anchors.spacy_extract import TokenArrays
    from .arrays import TokenIndex

#: item arrays returned by :func:`extract_items`, each of shape ``(n_items,)``, with their dtypes
ITEM_DTYPES: dict[str, type[np.generic]] = {
    "token": np.int64, "end_token": np.int64, "kind": np.int8, "label": np.int16, "compat": np.uint8,
    "key": np.uint64, "last_token_key": np.uint64, "n_key": np.int16, "gender": np.uint8,
}


class Items(dict):  # type: ignore[type-arg]
    """Item arrays by name (see :data:`ITEM_DTYPES`): a plain ``dict[str, np.ndarray]``, each
    array of shape ``(n_items,)``."""


@dataclass(frozen=True)
class TokenColumns(TokenAttributes):
    """Token columns of one batch, each of shape ``(n_tok,)``, in token order: the
    :class:`~ddpcore.anchors.spacy_extract.TokenAttributes` with ``head`` the *absolute* index of
    the token's syntactic head (0 <= head < n_tok; a root is its own head), and ``unit_start``:
    uint8, 1 at the first token of a parse unit.
    """

    unit_start: np.ndarray

    DTYPES: ClassVar[dict[str, type[np.generic]]] = {
        "lower": np.uint64, "pos": np.int32, "tag": np.uint64, "dep": np.uint64, "head": np.int64,
        "iob": np.int8, "enttype": np.uint64, "unit_start": np.uint8,
    }

    @classmethod
    def from_stages(cls, toks: TokenArrays, index: TokenIndex) -> TokenColumns:
        """The columns of parsed tokens (``toks``) with absolute heads and unit starts from ``index``."""
        return cls(lower=toks.lower, pos=toks.pos, tag=toks.tag, dep=toks.dep, head=index.head__tok, iob=toks.iob,
                   enttype=toks.enttype, unit_start=index.unit_start__tok)

    @property
    def n_tokens(self) -> int:
        return int(self.lower.shape[0])

    def validate(self) -> None:
        """Raise ``TypeError``/``ValueError`` unless every column is a 1-d C-contiguous array of its
        dtype, all have one length, and every head is a token index."""
        lengths = {name: _check_array("TokenColumns", name, getattr(self, name), dtype)
                   for name, dtype in self.DTYPES.items()}
        if len(set(lengths.values())) > 1:
            shown = ", ".join(f"{k}={v}" for k, v in lengths.items())
            raise ValueError(f"TokenColumns: every column must have the same length (n_tok), got {shown}")
        n = lengths["lower"]
        if n and (int(self.head.min()) < 0 or int(self.head.max()) >= n):
            bad = int(np.flatnonzero((self.head < 0) | (self.head >= n))[0])
            raise ValueError(f"TokenColumns.head must hold absolute token indices in [0, {n}), "
                             f"got {int(self.head[bad])} at token {bad}")


def _no_hashes() -> np.ndarray:
    return np.empty(0, dtype=np.uint64)


def _no_bits() -> np.ndarray:
    return np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class RuleTables:
    """A rule set as the extraction kernel reads it (build with :meth:`compile`).

    Hash tables are uint64 StringStore hashes, shape ``(k,)``, with int64 values of the same
    length where paired: ``pronoun_hashes``/``pronoun_group_bits`` (group bit of each pronoun,
    :data:`~ddpcore.anchors.rules.GROUP_BIT`), ``label_hashes``/``label_compat`` (entity labels in
    rule-set order and the compatibility bits of each), ``title_hashes``/``title_bits``,
    ``name_hashes``/``name_bits`` (gender bit, 0 for none); ``label_skip_adj`` has one int64 flag
    per label or is empty. Empty refinement tables switch the refinement off. Head nouns get
    ``plural_noun_compat``, ``person_noun_compat`` or ``noun_compat`` and, in noun chains, the key
    ``mix(noun_key_salt, word)``. ``person_label`` is the index of PERSON in ``label_hashes``
    (-1: none). ``heads_from_tags`` (no parser) finds head nouns from POS runs (``pos_propn``).
    """

    pronoun_hashes: np.ndarray
    pronoun_group_bits: np.ndarray
    label_hashes: np.ndarray
    label_compat: np.ndarray
    np_dep_hashes: np.ndarray
    person_noun_hashes: np.ndarray
    drop_leading_hashes: np.ndarray
    drop_trailing_hashes: np.ndarray
    dep_expl: int
    dep_conj: int
    tag_plural: int
    tag_plural_proper: int
    pos_pron: int
    pos_noun: int
    pos_space: int
    plural_noun_compat: int = PLURAL_NOUN_COMPAT
    person_noun_compat: int = PERSON_NOUN_COMPAT
    noun_compat: int = NOUN_COMPAT
    noun_key_salt: int = NOUN_KEY_SALT
    title_hashes: np.ndarray = field(default_factory=_no_hashes)
    title_bits: np.ndarray = field(default_factory=_no_bits)
    name_hashes: np.ndarray = field(default_factory=_no_hashes)
    name_bits: np.ndarray = field(default_factory=_no_bits)
    label_skip_adj: np.ndarray = field(default_factory=_no_bits)
    pos_adj: int = -1
    person_label: int = -1
    key_with_label: bool = False
    key_with_title: bool = False
    heads_from_tags: bool = False
    pos_propn: int = -1
    chain_nouns: int = 0
    #: head nouns from tags (``heads_from_tags``): tags and POS ids that end a head noun's run
    #: or frame a vocative, and the terms of address (``ADDRESS_NOUNS``)
    tag_hyph: int = 0
    tag_possessive: int = 0
    tag_prp_poss: int = 0
    pos_punct: int = -1
    pos_det: int = -1
    pos_num: int = -1
    address_hashes: np.ndarray = field(default_factory=_no_hashes)
    #: gendered person nouns and their compatibility bits (``person_noun_compat`` without the other
    #: gender's bit); empty: every person noun gets ``person_noun_compat``
    gendered_noun_hashes: np.ndarray = field(default_factory=_no_hashes)
    gendered_noun_bits: np.ndarray = field(default_factory=_no_bits)

    #: (hashes, values) pairs of equal length
    PAIRS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("pronoun_hashes", "pronoun_group_bits"), ("label_hashes", "label_compat"),
        ("title_hashes", "title_bits"), ("name_hashes", "name_bits"),
        ("gendered_noun_hashes", "gendered_noun_bits"),
    )

    @classmethod
    def compile(cls, rules: RuleSet, *, has_parser: bool = True) -> RuleTables:
        """Hash the words of ``rules`` (spaCy's StringStore) into kernel tables; ``has_parser=False``
        (the ``fast`` preset) takes head nouns from tags."""
        return cls(**rule_tables(rules), **refinement_tables(rules, has_parser=has_parser))

    def validate(self) -> None:
        """Raise ``TypeError``/``ValueError`` unless every table has its dtype and a consistent
        length and every bit, label index and switch is in range."""
        for f in fields(self):
            if f.type in ("np.ndarray", np.ndarray):
                _check_array("RuleTables", f.name, getattr(self, f.name), np.uint64 if f.name.endswith("_hashes")
                             else np.int64)
        for keys, values in self.PAIRS:
            a, b = getattr(self, keys), getattr(self, values)
            if a.shape != b.shape:
                raise ValueError(f"RuleTables.{keys} and .{values} must have the same length, got "
                                 f"{a.shape[0]} and {b.shape[0]}")
        n_labels = int(self.label_hashes.shape[0])
        if self.label_skip_adj.shape[0] not in (0, n_labels):
            raise ValueError(f"RuleTables.label_skip_adj must be empty or have one flag per label ({n_labels}), "
                             f"got {self.label_skip_adj.shape[0]}")
        if not -1 <= self.person_label < n_labels:
            raise ValueError(f"RuleTables.person_label must be -1 or a label index below {n_labels}, "
                             f"got {self.person_label}")
        group_bits = set(GROUP_BIT.values())
        if not set(self.pronoun_group_bits.tolist()) <= group_bits:
            raise ValueError(f"RuleTables.pronoun_group_bits must be group bits {sorted(group_bits)}, "
                             f"got {sorted(set(self.pronoun_group_bits.tolist()) - group_bits)}")
        for name in ("label_compat", "title_bits", "name_bits", "gendered_noun_bits"):
            v = getattr(self, name)
            if v.size and (int(v.min()) < 0 or int(v.max()) > 255):
                raise ValueError(f"RuleTables.{name} must be 8-bit masks (0..255)")
        for name in ("plural_noun_compat", "person_noun_compat", "noun_compat"):
            if not 0 <= getattr(self, name) <= 255:
                raise ValueError(f"RuleTables.{name} must be an 8-bit mask (0..255), got {getattr(self, name)}")
        if self.chain_nouns not in (0, 1, 2):
            raise ValueError(f"RuleTables.chain_nouns must be 0, 1 or 2, got {self.chain_nouns}")


#: version of the head-noun rule without a dependency parse (``heads_from_tags``): 1 the last
#: noun of a noun run; 2 also not before a hyphen or a possessive marker, and not a term of
#: address between punctuation (:data:`ddpcore.anchors.rules.ADDRESS_NOUNS`)
HEADS_FROM_TAGS_VERSION = 2


def head_noun_source(info: dict[str, Any]) -> str:
    """What a run's head nouns come from, for its signature (``info``: the pipeline info)."""
    if info.get("has_parser", True):
        return "dependency labels"
    return f"tags v{HEADS_FROM_TAGS_VERSION}"


def rule_tables(rules: RuleSet) -> dict[str, Any]:
    """The required tables of :class:`RuleTables` for ``rules`` (StringStore hashes, group bits)."""
    from ..anchors.spacy_extract import pos_id, string_hashes

    groups = sorted(dict(rules.pronoun_groups).items())
    compat = dict(rules.label_compat)
    return dict(
        pronoun_hashes=string_hashes([w for w, _ in groups]),
        pronoun_group_bits=np.array([GROUP_BIT[g] for _, g in groups], dtype=np.int64),
        label_hashes=string_hashes(list(rules.entity_labels)),
        label_compat=np.array([compat.get(lab, NEUT_SG) for lab in rules.entity_labels], dtype=np.int64),
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


def refinement_tables(rules: RuleSet, *, has_parser: bool = True) -> dict[str, Any]:
    """The optional tables of :class:`RuleTables` for the refinements of ``rules`` (and head
    nouns from tags when the pipeline has no parser); absent keys keep their defaults (off)."""
    from ..anchors.spacy_extract import pos_id, string_hashes

    out: dict[str, Any] = {}
    if rules.titles:
        titles = dict(rules.titles)
        out["title_hashes"] = string_hashes(list(titles))
        out["title_bits"] = np.array(list(titles.values()), dtype=np.int64)
    if rules.name_gender:
        names = first_name_genders()
        out["name_hashes"] = string_hashes(list(names))
        out["name_bits"] = np.array(list(names.values()), dtype=np.int64)
    if rules.skip_adjective_labels:
        out["label_skip_adj"] = np.array([lab in rules.skip_adjective_labels for lab in rules.entity_labels], np.int64)
        out["pos_adj"] = pos_id("ADJ")
    if "PERSON" in rules.entity_labels:
        out["person_label"] = rules.entity_labels.index("PERSON")
    if rules.gendered_nouns:
        gendered = dict(rules.gendered_nouns)
        other = {MASC_SG: FEM_SG, FEM_SG: MASC_SG}
        out["gendered_noun_hashes"] = string_hashes(list(gendered))
        out["gendered_noun_bits"] = np.array([PERSON_NOUN_COMPAT & ~other[bit] for bit in gendered.values()], np.int64)
    out["key_with_label"] = rules.key_with_label
    out["key_with_title"] = rules.key_with_title
    out["chain_nouns"] = rules.chain_nouns
    if not has_parser:
        from ..anchors.rules import ADDRESS_NOUNS

        hyph, possessive, prp_poss = (int(h) for h in string_hashes(["HYPH", "POS", "PRP$"]))
        out.update(heads_from_tags=True, pos_propn=pos_id("PROPN"), pos_adj=pos_id("ADJ"), pos_det=pos_id("DET"),
                   pos_num=pos_id("NUM"), pos_punct=pos_id("PUNCT"), tag_hyph=hyph, tag_possessive=possessive,
                   tag_prp_poss=prp_poss, address_hashes=string_hashes(list(ADDRESS_NOUNS)))
    return out


def extract_items(tokens: TokenColumns, tables: RuleTables) -> Items:
    """Entity mentions (kind 0), pronoun anchors (1) and head nouns (2) of ``tokens``, in token order.

    Validates ``tokens`` and ``tables`` (``TypeError``/``ValueError`` naming the bad field), then
    runs the kernel. Returns :class:`Items`: arrays of shape ``(n_items,)`` with the dtypes of
    :data:`ITEM_DTYPES` — ``token``/``end_token`` (token indices, end exclusive), ``kind``,
    ``label`` (entity label index, pronoun group bit, -1 for nouns), ``compat`` (bit mask of the
    pronoun groups it can be an antecedent of; a pronoun's own bit), ``key`` (entity / noun-chain
    key hash, 0 for none), ``last_token_key`` (key of a one-token mention of the last key token),
    ``n_key`` (key tokens) and ``gender`` (title / first-name gender bit of PERSON mentions, 0 unknown).
    """
    from .._native import load

    tokens.validate()
    tables.validate()
    return Items(load("ddp_kernels").extract_items(tokens, tables))
