"""Slow, obviously-correct gold distance (oracle for ddpcore.gold.validate.compute_gold_distances).

The gold-scope rules are written out again here from docs/validation.md ("Gold scope"), word lists
included, rather than imported from the package: a wrong entry in the package's lists or a wrong
branch of its vectorised classification makes the hypothesis test disagree with this file.
"""
from __future__ import annotations

# docs/validation.md, "Gold scope", rule 1: first/second-person pronoun heads (PRON mentions only)
FIRST_SECOND_PERSON = {
    "i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves", "ourself", "'s",
    "you", "your", "yours", "yourself", "yourselves", "y'all", "thee", "thou", "thy", "thine", "thyself",
    "ye", "ya", "yeh", "yer", "y'", "ee", "'ee", "u", "ur",
}
# rule 2: third-person pronouns DDP anchors (README "Pronoun anchors": MASC_SG, FEM_SG, NEUT_SG, PL)
DDP_PRONOUNS = {
    "he", "him", "his", "himself", "she", "her", "hers", "herself", "it", "its", "itself",
    "they", "them", "their", "theirs", "themselves", "themself",
}
# rule 3: gold entity types outside DDP's labels (temporal, numeric)
NON_DDP_ENTITY_TYPES = {"time", "date", "quantity", "money", "percent", "cardinal", "ordinal", "number", "numeric"}
# rule 3, untyped golds: month and weekday heads are temporal
TEMPORAL_HEADS = {
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
    "december", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
}


def _norm(head: str) -> str:
    h = head.lower().replace("’", "'")
    if len(h) > 1 and h.endswith("."):
        h = h[:-1]
    return h


def naive_role(scope: str, mention_type: str, entity_type: str | None = None, head: str = "") -> str:
    """``"count"`` (its sentence gets a distance), ``"antecedent"`` (only referred back to) or ``"drop"``."""
    if scope == "full":
        return "count"
    if scope == "restricted":
        return "count" if mention_type in ("PROP", "PRON") else "drop"
    h = _norm(head)
    if mention_type == "PRON":
        if h in FIRST_SECOND_PERSON:
            return "drop"
        if h in DDP_PRONOUNS:
            return "count"
        return "antecedent"
    if mention_type == "PROP":
        if entity_type is None:
            return "antecedent" if h in TEMPORAL_HEADS else "count"
        return "antecedent" if entity_type.lower() in NON_DDP_ENTITY_TYPES else "count"
    return "antecedent"


def naive_gold_distances(
    mentions: list[tuple], sentences: list[tuple[str, int]], *, distance: str, restricted: bool = False,
    scope: str | None = None,
) -> dict[tuple[str, int], int]:
    """``mentions``: (document_id, sentence, chain_id, mention_type[, entity_type, head_text]);
    returns {(doc, sentence): distance}. ``scope`` defaults to ``restricted``/``full`` from ``restricted``."""
    scope = scope or ("restricted" if restricted else "full")
    roles = []
    for m in mentions:
        etype, head = (m[4], m[5]) if len(m) > 4 else (None, "")
        roles.append(naive_role(scope, m[3], etype, head))
    keep = [(m, r) for m, r in zip(mentions, roles) if r != "drop"]
    out = {}
    for doc, s in sentences:
        best = 0
        for m, role in keep:
            d, ms, chain = m[0], m[1], m[2]
            if d != doc or ms != s or role != "count":
                continue
            earlier = [x[1] for x, _r in keep if x[0] == doc and x[2] == chain and x[1] < s]
            if not earlier:
                continue
            ref = min(earlier) if distance == "chained" else max(earlier)
            best = max(best, s - ref)
        out[(doc, s)] = best
    return out
