"""Slow, obviously-correct gold distance (oracle for ddpcore.validation.compute_gold_distances)."""
from __future__ import annotations


def naive_gold_distances(
    mentions: list[tuple[str, int, str, str]], sentences: list[tuple[str, int]], *, distance: str, restricted: bool
) -> dict[tuple[str, int], int]:
    """``mentions``: (document_id, sentence, chain_id, mention_type); returns {(doc, sentence): distance}."""
    keep = [m for m in mentions if not restricted or m[3] in ("PROP", "PRON")]
    out = {}
    for doc, s in sentences:
        best = 0
        for d, ms, chain, _t in keep:
            if d != doc or ms != s:
                continue
            earlier = [x[1] for x in keep if x[0] == doc and x[2] == chain and x[1] < s]
            if not earlier:
                continue
            ref = min(earlier) if distance == "chained" else max(earlier)
            best = max(best, s - ref)
        out[(doc, s)] = best
    return out
