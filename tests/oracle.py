"""Slow, obviously-correct reference implementations of the DDP kernels (test oracles).

They follow the written rules item by item with Python lists and dicts; the Cython
kernels in ``ddpcore._native.ddp_kernels`` must agree with them exactly.
"""
from __future__ import annotations

ENTITY, PRONOUN, NOUN = 0, 1, 2


def distances_oracle(docs, nearest=False):
    """``docs``: list of documents, each a list of items (dicts with kind, sentence,
    entity (entity id, noun-chain id for chained head nouns, or -1), compat, segment). Returns per-item (distance, antecedent, reference) lists
    (indices are positions within the document) and per-document dicts of segment and
    sentence DDP."""
    out = []
    for items in docs:
        result = []
        mentions = {}  # entity id -> list of item positions (in order)
        seg_ddp, sent_ddp = {}, {}
        for i, it in enumerate(items):
            dist = ante = ref = -1
            if it["kind"] == ENTITY:
                previous = mentions.get(it["entity"], [])
                if previous:
                    ref = previous[-1] if nearest else previous[0]
                    ante = previous[-1]
                    dist = it["sentence"] - items[ref]["sentence"]
                mentions.setdefault(it["entity"], []).append(i)
            elif it["kind"] == NOUN:
                if it["entity"] >= 0:  # head noun in a noun chain: no distance of its own
                    mentions.setdefault(it["entity"], []).append(i)
            elif it["kind"] == PRONOUN:
                # most recent earlier entity mention or head noun compatible with the group
                cands = [j for j in range(i) if items[j]["kind"] != PRONOUN and items[j]["compat"] & it["compat"]]
                if not cands:
                    dist = 1
                else:
                    ante = cands[-1]
                    c = items[ante]
                    if c["entity"] >= 0 and not nearest:
                        ref = mentions[c["entity"]][0]  # entity chain or noun chain
                    else:
                        ref = ante
                    dist = it["sentence"] - items[ref]["sentence"]
            result.append((dist, ante, ref))
            if it["kind"] != NOUN and dist >= 0:
                seg_ddp[it["segment"]] = max(seg_ddp.get(it["segment"], 0), dist)
                sent_ddp[it["gsentence"]] = max(sent_ddp.get(it["gsentence"], 0), dist)
        out.append((result, seg_ddp, sent_ddp))
    return out


def entity_ids_oracle(docs, person_label, merge=True):
    """``docs``: lists of entity items (dicts kind, label, tokens (tuple of token ids)).
    Returns, per document, a list of doc-local entity numbers (order of first appearance)
    for entity items and -1 for the rest; keys are the token tuples."""
    out = []
    for items in docs:
        ids, by_key, by_last = [], {}, {}
        for it in items:
            if it["kind"] != ENTITY:
                ids.append(-1)
                continue
            key = tuple(it["tokens"])
            e = None
            if merge and it["label"] == person_label and len(key) == 1 and key[0] in by_last:
                e = by_last[key[0]]
            if e is None:
                e = by_key.setdefault(key, len(set(by_key.values())))
            if merge and it["label"] == person_label and len(key) > 1:
                by_last[key[-1]] = e
            ids.append(e)
        out.append(ids)
    return out
