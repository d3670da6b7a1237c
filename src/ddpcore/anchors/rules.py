"""Anchor rules as plain data: testable without spaCy.

A rule set says which entity labels are anchors, which pronouns are anchors and in
which gender/number group, which antecedents each group may link to, and which
common nouns denote persons. The extraction kernel receives these as hashed arrays.

Rule set ``"paper"`` is the foundation specification (it reproduces the DDP paper's
WMT25 figures). Its decisions, in full:

* Named-entity anchors: spaCy entities with a label in :data:`ENTITY_LABELS`.
  Entity key: case-folded text, a leading "the" and a trailing possessive ("'s", "'")
  removed, whitespace collapsed. A one-token PERSON mention equal to the last token of
  an earlier multi-token PERSON key joins that entity.
* Pronoun anchors: third-person personal/possessive/reflexive pronouns of
  :data:`PRONOUN_GROUPS` with POS ``PRON``. Not anchors: pleonastic "it" (dependency
  ``expl``), pronouns inside an entity span, everything not listed (1st/2nd person,
  demonstratives, relatives).
* Compatibility (:data:`LABEL_COMPAT`): PERSON ↔ MASC_SG, FEM_SG, PL; ORG ↔ NEUT_SG, PL;
  NORP ↔ PL; every other entity label ↔ NEUT_SG.
* Head nouns (fallback antecedents, never anchors): tokens with POS ``NOUN`` that head a
  noun chunk (dependency in :data:`NP_DEPS`, or ``conj`` of such a token), outside entity
  spans. Singular (tag ``NN``) ↔ NEUT_SG, plus MASC_SG/FEM_SG when the noun is in
  :data:`PERSON_NOUNS`; plural (tag ``NNS``) ↔ PL.
"""
from __future__ import annotations

from dataclasses import dataclass, field

#: pronoun groups, in bit order of the compatibility masks
GROUPS: tuple[str, ...] = ("MASC_SG", "FEM_SG", "NEUT_SG", "PL")
MASC_SG, FEM_SG, NEUT_SG, PL = 1, 2, 4, 8
GROUP_BIT = {"MASC_SG": MASC_SG, "FEM_SG": FEM_SG, "NEUT_SG": NEUT_SG, "PL": PL}

PRONOUN_GROUPS: dict[str, str] = {
    **dict.fromkeys(("he", "him", "his", "himself"), "MASC_SG"),
    **dict.fromkeys(("she", "her", "hers", "herself"), "FEM_SG"),
    **dict.fromkeys(("it", "its", "itself"), "NEUT_SG"),
    **dict.fromkeys(("they", "them", "their", "theirs", "themselves", "themself"), "PL"),
}

#: entity labels that are anchors (numeric and temporal labels are not)
ENTITY_LABELS: tuple[str, ...] = (
    "PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE",
)

LABEL_COMPAT: dict[str, int] = {label: NEUT_SG for label in ENTITY_LABELS}
LABEL_COMPAT.update({"PERSON": MASC_SG | FEM_SG | PL, "ORG": NEUT_SG | PL, "NORP": PL})

#: dependency labels of noun-chunk heads (spaCy's English noun_chunks set)
NP_DEPS: tuple[str, ...] = ("nsubj", "nsubjpass", "dobj", "pobj", "pcomp", "dative", "appos", "attr", "oprd", "ROOT")

#: singular common nouns that denote persons (antecedents for he/she as well as it)
PERSON_NOUNS: tuple[str, ...] = (
    "man", "woman", "boy", "girl", "child", "kid", "baby", "person", "king", "queen", "prince", "princess",
    "mother", "father", "mom", "dad", "mum", "son", "daughter", "brother", "sister", "wife", "husband",
    "uncle", "aunt", "nephew", "niece", "grandmother", "grandfather", "grandma", "grandpa", "cousin",
    "friend", "lady", "gentleman", "sir", "madam", "doctor", "nurse", "teacher", "student", "officer",
    "soldier", "captain", "president", "minister", "leader", "author", "writer", "poet", "artist",
    "actor", "actress", "singer", "player", "coach", "driver", "worker", "farmer", "priest", "bishop",
    "lord", "duke", "duchess", "emperor", "empress", "knight", "servant", "maid", "stranger", "neighbor",
    "neighbour", "guest", "host", "hero", "heroine", "victim", "suspect", "witness", "lawyer", "judge",
    "spokesman", "spokeswoman", "spokesperson", "chairman", "chairwoman", "ceo", "founder", "owner",
    "manager", "boss", "employee", "customer", "patient", "citizen", "resident", "journalist", "reporter",
    "scientist", "researcher", "professor", "pilot", "detective", "policeman", "policewoman", "thief",
    "girlfriend", "boyfriend", "partner", "bride", "groom", "widow", "widower", "fan", "user", "youth",
)

TITLE_WORDS: tuple[str, ...] = ()  # used by later rule sets


@dataclass(frozen=True)
class RuleSet:
    """A complete, hashable description of the anchor rules (recorded in every signature)."""

    name: str
    entity_labels: tuple[str, ...] = ENTITY_LABELS
    pronoun_groups: tuple[tuple[str, str], ...] = tuple(sorted(PRONOUN_GROUPS.items()))
    label_compat: tuple[tuple[str, int], ...] = tuple(sorted(LABEL_COMPAT.items()))
    np_deps: tuple[str, ...] = NP_DEPS
    person_nouns: tuple[str, ...] = PERSON_NOUNS
    drop_leading: tuple[str, ...] = ("the",)
    drop_trailing: tuple[str, ...] = ("'s", "'", "\u2019s", "\u2019")
    person_last_token_merge: bool = True
    extra: tuple[tuple[str, str], ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name}


PAPER = RuleSet(name="paper")

RULE_SETS: dict[str, RuleSet] = {"paper": PAPER}
DEFAULT_RULES = "paper"


def get_rules(name: str | RuleSet | None) -> RuleSet:
    """Look up a rule set by name (``None`` → the default)."""
    from ..errors import DDPUsageError

    if isinstance(name, RuleSet):
        return name
    key = DEFAULT_RULES if name is None else name
    try:
        return RULE_SETS[key]
    except KeyError:
        raise DDPUsageError(f"unknown rule set {name!r}; choose one of: {', '.join(RULE_SETS)}", code="D201") from None
