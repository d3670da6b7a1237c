"""Anchor rules as plain data: testable without spaCy.

A rule set says which entity labels are anchors, which pronouns are anchors and in
which gender/number group, which antecedents each group may link to, and which
common nouns denote persons. The extraction kernel receives these as hashed arrays.

Rule set ``"paper"`` is the foundation specification (it reproduces the DDP paper's
WMT25 figures); ``"refined"`` (the default) and ``"refined-names"`` add the fixes that
validation against gold coreference called for (see :data:`REFINED`). The paper rules,
in full:

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

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .certify_model import DEFAULT_CERTIFY_MODEL, NOPARSER_CERTIFY_MODEL, load_once

if TYPE_CHECKING:
    from .antecedent_model import AntecedentModel
    from .certify_model import CertifyModel

#: pronoun groups, in bit order of the compatibility masks
GROUPS: tuple[str, ...] = ("MASC_SG", "FEM_SG", "NEUT_SG", "PL")
MASC_SG, FEM_SG, NEUT_SG, PL = 1, 2, 4, 8
GROUP_BIT = {"MASC_SG": MASC_SG, "FEM_SG": FEM_SG, "NEUT_SG": NEUT_SG, "PL": PL}
#: pronoun group bit -> name (the ``label`` of a pronoun in the anchors table)
GROUP_NAMES: dict[int, str] = {bit: name for name, bit in GROUP_BIT.items()}

#: names of item kinds, indexed by the extraction kernel's codes (0 entity, 1 pronoun, 2 noun)
KIND_NAMES: tuple[str, ...] = ("entity", "pronoun", "noun")

#: compatibility bits of a head noun (a fallback antecedent): plural (tag NNS/NNPS), singular
#: person noun (:data:`PERSON_NOUNS`), any other singular noun
PLURAL_NOUN_COMPAT = PL
PERSON_NOUN_COMPAT = MASC_SG | FEM_SG | NEUT_SG
NOUN_COMPAT = NEUT_SG
#: salt of the head-noun chain keys (b"noun" read as a big-endian integer): keeps the key of a
#: repeated noun apart from the key of a one-token entity mention of the same word
NOUN_KEY_SALT = int.from_bytes(b"noun", "big")

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

#: terms of address: without a dependency parse (the ``fast`` preset) such a noun between
#: punctuation ("Yes, sir." / "..., my dear sir, ...") is a vocative, not a head noun. Chosen on
#: 24,777 nouns of 20 LitBank novels (8,000 words from each of novels 2-21, parsed by
#: en_core_web_sm): in that frame the parser gives "sir" a noun-phrase label 19 % of the time,
#: "dear" 44 %, "ma'am" 50 % (4 times), "madam" 50 % (twice); the other person nouns seen at
#: least 4 times in that frame 71-100 %
ADDRESS_NOUNS: tuple[str, ...] = ("sir", "dear", "madam", "ma'am", "ma\u2019am")

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

#: agentive and role nouns that denote persons, added by the ``refined`` rule set
MORE_PERSON_NOUNS: tuple[str, ...] = (
    "sitter", "babysitter", "maker", "clergyman", "clergywoman", "chairperson", "businessman", "businesswoman",
    "gentlewoman", "fisherman", "fisherwoman", "sailor", "seaman", "merchant", "peasant", "shepherd", "servant",
    "slave", "master", "mistress", "landlord", "landlady", "tenant", "lodger", "butler", "cook", "housekeeper",
    "governess", "nanny", "tutor", "pupil", "scholar", "monk", "nun", "vicar", "rector", "parson", "preacher",
    "pastor", "minister", "rabbi", "imam", "saint", "sinner", "widower", "spinster", "bachelor", "orphan",
    "infant", "toddler", "teenager", "adult", "elder", "ancestor", "descendant", "heir", "heiress", "sibling",
    "parent", "grandparent", "grandson", "granddaughter", "stepmother", "stepfather", "mother-in-law",
    "father-in-law", "fiancé", "fiancee", "fiancée", "spouse", "lover", "companion", "comrade", "ally", "enemy",
    "foe", "rival", "opponent", "colleague", "coworker", "assistant", "secretary", "clerk", "cashier", "waiter",
    "waitress", "barber", "baker", "butcher", "carpenter", "blacksmith", "smith", "tailor", "weaver", "miner",
    "sheriff", "deputy", "constable", "sergeant", "lieutenant", "colonel", "general", "admiral", "commander",
    "warrior", "guard", "guardian", "watchman", "hunter", "trapper", "rider", "horseman", "traveller", "traveler",
    "passenger", "pilgrim", "visitor", "newcomer", "foreigner", "immigrant", "refugee", "prisoner", "captive",
    "criminal", "murderer", "killer", "robber", "burglar", "villain", "gambler", "beggar", "tramp", "thief",
    "doctor", "physician", "surgeon", "dentist", "therapist", "psychiatrist", "psychologist", "nurse",
    "engineer", "architect", "designer", "developer", "programmer", "analyst", "economist", "banker",
    "investor", "trader", "dealer", "seller", "buyer", "vendor", "shopkeeper", "storekeeper", "entrepreneur",
    "executive", "director", "producer", "editor", "publisher", "novelist", "poet", "painter", "sculptor",
    "musician", "composer", "dancer", "performer", "comedian", "athlete", "runner", "swimmer", "boxer",
    "wrestler", "goalkeeper", "striker", "teammate", "referee", "umpire", "candidate", "senator", "governor",
    "mayor", "congressman", "congresswoman", "diplomat", "ambassador", "politician", "official", "activist",
    "protester", "voter", "supporter", "critic", "commentator", "blogger", "influencer", "streamer", "viewer",
    "reader", "listener", "speaker", "narrator", "interviewer", "interviewee", "applicant", "recruit",
    "volunteer", "intern", "trainee", "apprentice", "inventor", "explorer", "astronaut", "scientist",
    "chemist", "physicist", "biologist", "historian", "philosopher", "teacher", "lecturer", "principal",
    "headmaster", "headmistress", "classmate", "roommate", "flatmate", "housemate", "girl", "lad", "lass",
    "fellow", "chap", "bloke", "guy", "dude", "gal", "maiden", "damsel", "lass", "nobleman", "noblewoman",
    "peer", "count", "countess", "baron", "baroness", "marquis", "earl", "squire", "page", "courtier",
    "sovereign", "monarch", "ruler", "tyrant", "dictator", "pope", "cardinal", "archbishop", "chaplain",
    "attendant", "steward", "stewardess", "porter", "coachman", "footman", "groom", "valet", "maidservant",
    "nursemaid", "midwife", "witch", "wizard", "sorcerer", "magician", "giant", "dwarf", "goddess", "god",
)

#: person nouns whose gender is part of their meaning: a *he* never takes up "the woman", a *she* never "the
#: man" (rule sets with ``gendered_nouns``; the other person nouns stay antecedents of both)
GENDERED_NOUNS: dict[str, int] = {
    **dict.fromkeys((
        "man", "boy", "king", "prince", "father", "dad", "son", "brother", "husband", "uncle", "nephew",
        "grandfather", "grandpa", "gentleman", "sir", "lord", "duke", "emperor", "knight", "hero", "widower",
        "spokesman", "chairman", "policeman", "boyfriend", "groom", "actor", "businessman", "clergyman",
        "fisherman", "seaman", "landlord", "monk", "bachelor", "grandson", "stepfather", "father-in-law",
        "waiter", "steward", "nobleman", "baron", "marquis", "earl", "squire", "footman", "coachman", "valet",
        "wizard", "sorcerer", "lad", "chap", "bloke", "dude", "headmaster", "congressman", "horseman",
        "watchman", "gentleman", "widower"), MASC_SG),
    **dict.fromkeys((
        "woman", "girl", "queen", "princess", "mother", "mom", "mum", "daughter", "sister", "wife", "aunt",
        "niece", "grandmother", "grandma", "lady", "madam", "duchess", "empress", "heroine", "widow",
        "spokeswoman", "chairwoman", "policewoman", "girlfriend", "bride", "actress", "businesswoman",
        "clergywoman", "fisherwoman", "mistress", "landlady", "nun", "spinster", "heiress", "granddaughter",
        "stepmother", "mother-in-law", "waitress", "stewardess", "noblewoman", "countess", "baroness", "maiden",
        "damsel", "lass", "gal", "maidservant", "nursemaid", "midwife", "goddess", "headmistress",
        "congresswoman", "governess", "gentlewoman"), FEM_SG),
}

#: titles before a name; the bit tells the gender (0: title says nothing about gender)
TITLES: dict[str, int] = {
    **dict.fromkeys(("mr", "mr.", "sir", "lord", "king", "prince", "duke", "count", "baron", "uncle", "brother",
                     "father", "fr.", "monsieur", "herr", "señor", "master", "emperor", "earl", "mister"), MASC_SG),
    **dict.fromkeys(("mrs", "mrs.", "ms", "ms.", "miss", "madam", "madame", "mme", "mme.", "lady", "dame", "queen",
                     "princess", "duchess", "countess", "baroness", "aunt", "sister", "mother", "mademoiselle",
                     "mlle", "frau", "señora", "empress"), FEM_SG),
    **dict.fromkeys(("dr", "dr.", "prof", "prof.", "professor", "doctor", "captain", "capt.", "colonel", "col.",
                     "general", "gen.", "major", "lieutenant", "lt.", "sergeant", "sgt.", "president", "senator",
                     "sen.", "governor", "gov.", "judge", "justice", "rev.", "reverend", "saint", "st.", "officer",
                     "detective", "inspector", "agent", "coach", "chancellor", "minister", "mayor"), 0),
}


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
    #: title words (lower-case) -> gender bit (MASC_SG, FEM_SG or 0); empty: titles ignored
    titles: tuple[tuple[str, int], ...] = ()
    #: person noun (lower-case) -> MASC_SG or FEM_SG: such a head noun is no antecedent of a pronoun of the
    #: other gender; empty: every person noun takes he, she and it
    gendered_nouns: tuple[tuple[str, int], ...] = ()
    #: give PERSON mentions the gender of their first name (US census first-name lists)
    name_gender: bool = False
    #: compatibility of PERSON mentions whose gender is known (added to the gender bit)
    person_known_extra: int = 0
    #: entity labels whose one-token adjective mentions ("American") are not anchors
    skip_adjective_labels: tuple[str, ...] = ()
    key_with_label: bool = False
    key_with_title: bool = False
    #: head-noun chains: 0 none (paper: head nouns never chain), 1 singular person nouns, 2 all
    chain_nouns: int = 0
    #: weights of the trained antecedent scorer (a file name in ddpcore/anchors/data or a path);
    #: empty: links by rule (ddpcore.pipeline.antecedent)
    antecedent_model: str = ""
    #: the certification model of ``ddp_certified`` (a file name in ddpcore/anchors/data or a path;
    #: ddpcore.anchors.certify); empty: no certified columns
    certify_model: str = DEFAULT_CERTIFY_MODEL
    description: str = ""
    #: the certification model was named by the user (``--certify-model``, ``explain(certify_model=...)``),
    #: so a pipeline without a parser keeps it, the default's name too (:meth:`for_pipeline`); False: the
    #: rule set's own model, which such a pipeline replaces by the parser-free one when it is the default
    certify_model_named: bool = False

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "description": self.description}

    def certify_info(self, *, has_parser: bool = True) -> dict[str, object] | None:
        """What a signature records of the certification model a pipeline with (``has_parser``) or
        without a dependency parser uses (:meth:`for_pipeline`): file, version, sha256, thresholds,
        ``trained_with_parser``, ``pipeline_has_parser``, and ``parse_features: "absent"`` when a
        model trained with the parse features runs without them; ``None`` without a model."""
        rules = self.for_pipeline(has_parser)
        if not rules.certify_model:
            return None
        info = certify_model_for(rules).to_dict()
        info["pipeline_has_parser"] = has_parser
        if rules.certify_model != self.certify_model:
            info["replaces"] = self.certify_model
        if info["trained_with_parser"] and not has_parser:
            info["parse_features"] = "absent"
        return info

    def certify_digests(self) -> list[str] | None:
        """The sha256 of every certification model a run of this rule set may use (its own, and the
        parser-free one that replaces the default without a parser), sorted; ``None`` without a model.
        Resume journals compare it: a resumed run whose model changed (another ``--certify-model``, or a
        build with other shipped weights) must not mix two models' ``ddp_certified`` in one output."""
        if not self.certify_model:
            return None
        return sorted({certify_model_for(r).sha256 for r in (self, self.for_pipeline(False))})

    def for_pipeline(self, has_parser: bool) -> RuleSet:
        """This rule set as a pipeline with or without a dependency parser runs it: without one, the
        default certification model (trained with the parse features, which are then constant) is
        replaced by the shipped parser-free one; any other model, and a model the user named
        (``certify_model_named``, the default's name too), is kept (see :meth:`certify_note`)."""
        if has_parser or self.certify_model_named or self.certify_model != DEFAULT_CERTIFY_MODEL:
            return self
        import dataclasses

        return dataclasses.replace(self, certify_model=NOPARSER_CERTIFY_MODEL)

    def certify_note(self, has_parser: bool) -> str | None:
        """The stderr line that says how a pipeline without a dependency parser changes ``ddp_certified``
        (``None`` with a parser or without certification)."""
        if has_parser or not self.certify_model:
            return None
        rules = self.for_pipeline(has_parser)
        if rules.certify_model != self.certify_model:
            return (f"the pipeline has no dependency parser, so ddp_certified uses the parser-free certification "
                    f"model {rules.certify_model} in place of {self.certify_model} (recorded in the signature; "
                    "use the default pipeline for the model that weighs the parse)")
        if certify_model_for(rules).trained_with_parser:
            return (f"the pipeline has no dependency parser but the certification model {self.certify_model} was "
                    "trained with one: every anchor's role is 'other', so ddp_certified certifies far fewer anchors "
                    f"(signature: certify.parse_features \"absent\"); use the default pipeline or "
                    f"--certify-model {NOPARSER_CERTIFY_MODEL}")
        return None


PAPER = RuleSet(
    name="paper",
    description="the foundation specification; reproduces the DDP paper's WMT25 figures",
)

REFINED = RuleSet(
    name="refined",
    label_compat=tuple(sorted({**LABEL_COMPAT, "PERSON": MASC_SG | FEM_SG}.items())),
    person_nouns=tuple(sorted(set(PERSON_NOUNS) | set(MORE_PERSON_NOUNS))),
    titles=tuple(sorted(TITLES.items())),
    skip_adjective_labels=("NORP",),
    key_with_title=True,
    description=(
        "paper + person names gendered by their titles (Mr./Mrs./Lady ...; an entity takes the gender any of "
        "its mentions shows), person names never antecedents of they/them, adjectival NORP mentions dropped, "
        "entity keys that include a preceding title, a larger person-noun list"
    ),
)

REFINED_NAMES = RuleSet(
    **{
        **{f: getattr(REFINED, f) for f in REFINED.__dataclass_fields__},
        "name": "refined-names",
        "name_gender": True,
        "gendered_nouns": tuple(sorted(GENDERED_NOUNS.items())),
        "description": ("refined + gender from first names (US census lists of the `names` package) and from "
                        "gendered person nouns (a he never takes up \"the woman\", a she never \"the man\")"),
    }
)

#: sha256 of the shipped weights of rule set "learned" (in its description, so every signature pins the weights;
#: tests/test_antecedent.py checks it against the file)
LEARNED_WEIGHTS_SHA256 = "efb0e98d04e77d06f6f2514c7c20db1ff5c8acd1935b839a8f3af38dfa992b79"

LEARNED = RuleSet(
    **{
        **{f: getattr(REFINED_NAMES, f) for f in REFINED_NAMES.__dataclass_fields__},
        "name": "learned",
        # the scorer was trained on person nouns that take he and she alike (its feature cand_person_noun)
        "gendered_nouns": (),
        "antecedent_model": "antecedent_weights.json",
        "description": (
            "refined-names anchors (person nouns take he and she alike) + a trained antecedent scorer (logistic, GUM train; weights "
            f"ddpcore/anchors/data/antecedent_weights.json, sha256 {LEARNED_WEIGHTS_SHA256[:16]}): each pronoun and "
            "named mention links to its best-scoring earlier entity mention or head noun above a threshold; below "
            "it a pronoun takes the rule's antecedent (distance 1 without one) or, scoring very low, is no anchor, "
            "and a name is a first mention (weights version 2)"
        ),
    }
)

RULE_SETS: dict[str, RuleSet] = {"paper": PAPER, "refined": REFINED, "refined-names": REFINED_NAMES,
                                 "learned": LEARNED}
#: the default since validation against LitBank / GUM / OntoGUM (README, docs/validation.md)
DEFAULT_RULES = "refined"


def first_name_genders(min_ratio: float = 4.0) -> dict[str, int]:
    """First name (lower-case) -> MASC_SG or FEM_SG from the 1990 US census lists shipped
    in the ``names`` package (MIT). A name on both lists gets the gender whose frequency is
    at least ``min_ratio`` times the other's, else none (e.g. "jordan")."""
    return _load_names(min_ratio)


def _read_census(path: str) -> dict[str, float]:
    out: dict[str, float] = {}
    with open(path, encoding="ascii") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 2:
                out[parts[0].lower()] = float(parts[1])
    return out


_NAMES_CACHE: dict[float, dict[str, int]] = {}


def _load_names(min_ratio: float) -> dict[str, int]:
    if min_ratio in _NAMES_CACHE:
        return _NAMES_CACHE[min_ratio]
    import os

    try:
        import names as names_pkg  # type: ignore[import-untyped]
    except ImportError:
        from ..errors import DDPUsageError

        raise DDPUsageError(
            "rule set 'refined-names' needs the package `names` (US census first-name lists, MIT): "
            "pip install names==0.3.0 (the [names] extra; from a ddpcore clone pip install '.[names]')",
            code="D208",
        ) from None
    base = os.path.dirname(names_pkg.__file__)
    male = _read_census(os.path.join(base, "dist.male.first"))
    female = _read_census(os.path.join(base, "dist.female.first"))
    table: dict[str, int] = {}
    for name in set(male) | set(female):
        m, f = male.get(name, 0.0), female.get(name, 0.0)
        if m > 0 and (f == 0 or m >= min_ratio * f):
            table[name] = MASC_SG
        elif f > 0 and (m == 0 or f >= min_ratio * m):
            table[name] = FEM_SG
    _NAMES_CACHE[min_ratio] = table
    return table


def get_rules(name: str | RuleSet | None) -> RuleSet:
    """Look up a rule set by name (``None`` → the default)."""
    from ..errors import DDPUsageError

    if isinstance(name, RuleSet):
        rules = name
    else:
        key = DEFAULT_RULES if name is None else name
        try:
            rules = RULE_SETS[key]
        except KeyError:
            raise DDPUsageError(f"unknown rule set {name!r}; choose one of: {', '.join(RULE_SETS)}",
                                code="D201") from None
    if rules.antecedent_model:
        model_for(rules)  # a weights file that does not fit the kernel fails here (D240-D249), before any parse
    if rules.certify_model:
        certify_model_for(rules)  # likewise the certification model (D250-D257)
    return rules


def certify_model_for(rules: RuleSet) -> CertifyModel:
    """The checked certification model of ``rules`` (loaded once per file version per process)."""
    from .certify import FEATURES
    from .certify_model import certify_model

    return certify_model(rules.certify_model, FEATURES)


_MODELS: dict[tuple[str, int, int], AntecedentModel] = {}


def model_for(rules: RuleSet) -> AntecedentModel:
    """The checked model of ``rules`` (loaded once per file version per process)."""
    from ..errors import DDPDataError
    from .antecedent_model import feature_layout, load_antecedent_model, weights_path

    path = weights_path(rules.antecedent_model)

    def load() -> AntecedentModel:
        _, _, labels = feature_layout()
        if tuple(rules.entity_labels) != labels:
            raise DDPDataError(f"rule set {rules.name!r}: entity labels {list(rules.entity_labels)} differ from the "
                               f"antecedent kernel's {list(labels)}; use the default entity labels", code="D245")
        return load_antecedent_model(path)

    return load_once(_MODELS, path, load)
