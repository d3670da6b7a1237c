"""Slow, obvious Python versions of the antecedent kernels (ddpcore._native.antecedent).

Written from the kernels' documented behaviour, one plain loop per definition, with features
built by *name* (so a column put in the wrong place shows up as a mismatch), never as a
fallback of the package.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

ENTITY, PRONOUN, NOUN = 0, 1, 2
MASC, FEM, NEUT, PLURAL = 1, 2, 4, 8
ROLE_NAMES = {1: "subject", 2: "object", 3: "possessive", 4: "prep_object"}
LABELS = ("PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE")


def doc_of_item(offsets: np.ndarray, i: int) -> int:
    for d in range(len(offsets) - 1):
        if offsets[d] <= i < offsets[d + 1]:
            return d
    raise IndexError(i)


def item_attributes(cols: Any, tables: Any) -> tuple[list[int], list[int], list[int], list[int]]:
    """(role, quote, title, reflexive) per item, as plain lists."""
    lower = [int(x) for x in cols.lower]
    dep = [int(x) for x in cols.dep]
    head = [int(x) for x in cols.head]
    toff = [int(x) for x in cols.offsets__doc_tok]
    as_set = lambda a: {int(x) for x in a}  # noqa: E731
    subj, obj, poss, pobj = (as_set(tables.subject_deps), as_set(tables.object_deps), as_set(tables.possessive_deps),
                             as_set(tables.prep_object_deps))
    q_open, q_close, q_toggle = as_set(tables.open_quotes), as_set(tables.close_quotes), as_set(tables.toggle_quotes)
    titles, refl = as_set(tables.titles), as_set(tables.reflexives)
    # quotation: is token t strictly inside a quotation of its document?
    inside = [0] * len(lower)
    for d in range(len(toff) - 1):
        state = False
        for t in range(toff[d], toff[d + 1]):
            w = lower[t]
            if w in q_open:
                state = True
            elif w in q_close:
                state = False
            elif w in q_toggle:
                state = not state
            else:
                inside[t] = int(state)
    role, quote, title, reflexive = [], [], [], []
    for i in range(len(cols.kind)):
        t0, t1 = int(cols.token[i]), int(cols.end_token[i])
        span = range(t0, t1)
        h = next((k for k in span if head[k] not in span or head[k] == k), t1 - 1)
        r = 0
        if dep[h] in subj:
            r = 1
        elif dep[h] in obj:
            r = 2
        elif dep[h] in poss:
            r = 3
        elif dep[h] in pobj:
            r = 4
        role.append(r)
        quote.append(inside[t0])
        doc_start = next(toff[d] for d in range(len(toff) - 1) if toff[d] <= t0 < toff[d + 1])
        is_title = lower[t0] in titles or (t0 - 1 >= doc_start and lower[t0 - 1] in titles)
        title.append(int(cols.kind[i] == ENTITY and is_title))
        reflexive.append(int(cols.kind[i] == PRONOUN and lower[t0] in refl))
    return role, quote, title, reflexive


def candidates_of(cols: Any, a: int, max_sentences: int) -> list[int]:
    """Earlier entity mentions and head nouns of a's document, at most max_sentences back, nearest first."""
    d = doc_of_item(cols.offsets__doc, a)
    out = []
    for c in range(a - 1, int(cols.offsets__doc[d]) - 1, -1):
        if cols.sentence[a] - cols.sentence[c] > max_sentences:
            break
        if cols.kind[c] != PRONOUN:
            out.append(c)
    return out


def features(cols: Any, attrs: tuple[list[int], ...], a: int, max_sentences: int,
             person_noun_compat: int) -> list[tuple[int, dict[str, float]]]:
    """Named features of every candidate of anchor a."""
    role, quote, title, reflexive = attrs
    kind, label, compat = cols.kind, cols.label, cols.compat
    ent, sent = cols.entity, cols.sentence
    d = doc_of_item(cols.offsets__doc, a)
    start = int(cols.offsets__doc[d])
    before = range(start, a)  # items before the anchor: the "so far" of salience and mention order
    pron = kind[a] == PRONOUN
    cands = candidates_of(cols, a, max_sentences)

    def compatible(c: int) -> bool:
        if pron:
            return bool(int(compat[c]) & int(label[a]))
        return bool(ent[a] >= 0 and ent[a] == ent[c])

    rule_choice = next((c for c in cands if compatible(c)), None)
    out = []
    for rank, c in enumerate(cands):
        ds = int(sent[a] - sent[c])
        dt = max(int(cols.token[a]) - int(cols.end_token[c]), 0)
        if ent[c] >= 0:
            same = [i for i in before if ent[i] == ent[c] and kind[i] != PRONOUN]
            salience, first, last = len(same), same[0] == c, same[-1] == c
        else:
            salience, first, last = 1, True, True
        agree = bool(int(compat[c]) & int(label[a])) if pron else bool(kind[c] == ENTITY and label[c] == label[a])
        bit = int(label[a]) if pron else 0
        f = {
            "sent_dist_log": math.log1p(ds),
            "same_sentence": float(ds == 0),
            "prev_sentence": float(ds == 1),
            "tok_dist_log": math.log1p(dt),
            "rank_log": math.log1p(rank),
            "rule_choice": float(c == rule_choice),
            "agree": float(agree),
            "cand_gendered": float(int(compat[c]) in (MASC, FEM)),
            "cand_plural": float(int(compat[c]) == PLURAL),
            "same_key": float(int(cols.key[a]) != 0 and int(cols.key[a]) == int(cols.key[c])),
            "same_last_token": float(kind[a] == ENTITY and kind[c] == ENTITY and int(cols.last_token_key[a]) != 0
                                     and int(cols.last_token_key[a]) == int(cols.last_token_key[c])),
            "same_entity": float(ent[a] >= 0 and ent[a] == ent[c]),
            "role_parallel": float(role[a] != 0 and role[a] == role[c]),
            "cand_entity": float(kind[c] == ENTITY),
            "cand_noun": float(kind[c] == NOUN),
            "cand_person_noun": float(kind[c] == NOUN and int(compat[c]) == person_noun_compat),
            "cand_title": float(title[c]),
            "salience_log": math.log1p(salience),
            "cand_first_mention": float(first),
            "cand_last_mention": float(last),
            "anchor_in_quote": float(quote[a]),
            "cand_in_quote": float(quote[c]),
            "quote_mismatch": float(quote[a] != quote[c]),
            "pron_masc": float(bit == MASC),
            "pron_fem": float(bit == FEM),
            "pron_neut": float(bit == NEUT),
            "pron_plural": float(bit == PLURAL),
            "anchor_reflexive": float(pron and reflexive[a] == 1),
            "neut_x_noun": float(bit == NEUT and kind[c] == NOUN),
            "plural_x_noun": float(bit == PLURAL and kind[c] == NOUN),
            "reflexive_x_same_sentence": float(pron and reflexive[a] == 1 and ds == 0),
            "same_sentence_x_cand_subject": float(ds == 0 and role[c] == 1),
            "agree_x_sent_dist_log": math.log1p(ds) if agree else 0.0,
        }
        for r, name in ROLE_NAMES.items():
            f[f"cand_{name}"] = float(role[c] == r)
            f[f"anchor_{name}"] = float(role[a] == r)
        for li, name in enumerate(LABELS):
            f[f"label_{name}"] = float(kind[c] == ENTITY and int(label[c]) == li)
        out.append((c, f))
    return out


def candidate_matrix(cols: Any, attrs: tuple[list[int], ...], names: tuple[str, ...], max_sentences: int,
                     person_noun_compat: int) -> tuple[list[int], list[int], list[int], np.ndarray]:
    """(offsets, anchors, candidates, X) built from :func:`features` (X in ``names`` order)."""
    offsets, anchors, cands, rows = [0], [], [], []
    for a in range(len(cols.kind)):
        if cols.kind[a] == NOUN:
            continue
        anchors.append(a)
        for c, f in features(cols, attrs, a, max_sentences, person_noun_compat):
            assert set(f) == set(names), set(f) ^ set(names)
            cands.append(c)
            rows.append([f[n] for n in names])
        offsets.append(len(cands))
    X = np.array(rows, dtype=np.float64).reshape(len(rows), len(names))
    return offsets, anchors, cands, X


ABSTAIN = -2


def rule_choice(cols: Any, a: int, cands: list[int]) -> int:
    """Today's linking rule among the listed candidates (nearest first): a pronoun's first candidate
    whose compatibility bits hold its group bit, a name's first candidate of its rule entity; -1 none."""
    for c in cands:
        if cols.kind[a] == PRONOUN:
            if int(cols.compat[c]) & int(cols.label[a]):
                return c
        elif cols.entity[a] >= 0 and cols.entity[a] == cols.entity[c]:
            return c
    return -1


def link(cols: Any, offsets: list[int], anchors: list[int], cands: list[int], X: np.ndarray,
         weights: np.ndarray, bias: np.ndarray, threshold: np.ndarray, fallback: Any = (0, 0),
         abstain: Any = (0.0, 0.0)) -> tuple[list[int], list[float]]:
    """Best candidate per anchor (ties: the nearest, listed first) linked when sigmoid > threshold;
    otherwise ABSTAIN when abstain[m] > 0 and (no candidate or sigmoid < abstain[m]); otherwise the
    rule's choice when fallback[m]; otherwise -1."""
    n = len(cols.kind)
    links, scores = [-1] * n, [-1.0] * n
    for j, a in enumerate(anchors):
        m = 0 if cols.kind[a] == PRONOUN else 1
        mine = cands[offsets[j]:offsets[j + 1]]
        below = rule_choice(cols, a, mine) if fallback[m] else -1
        best, best_s = -1, None
        for r in range(offsets[j], offsets[j + 1]):
            s = float(bias[m])
            for f in range(X.shape[1]):  # the kernel's summation order: bias, then features 0, 1, ...
                s += float(weights[m, f]) * float(X[r, f])
            if best_s is None or s > best_s:
                best, best_s = cands[r], s
        if best_s is None:
            scores[a] = 0.0
            links[a] = ABSTAIN if abstain[m] > 0 else below
            continue
        p = 1.0 / (1.0 + math.exp(-best_s))
        scores[a] = p
        if p > threshold[m]:
            links[a] = best
        elif abstain[m] > 0 and p < abstain[m]:
            links[a] = ABSTAIN
        else:
            links[a] = below
    return links, scores


def learned_distances(kind: list[int], sentence: list[int], links: list[int], segment: list[int], gsentence: list[int],
                      n_segments: int, n_sentences: int, nearest: bool) -> dict[str, list[int]]:
    """Clusters by following links back; distances to the cluster's first item (or the link)."""
    n = len(kind)
    cluster = [-1] * n
    first_of: dict[int, int] = {}
    dist, ante, ref = [-1] * n, [-1] * n, [-1] * n
    next_id = 0
    for i in range(n):
        link_ = links[i]
        if kind[i] == NOUN or (kind[i] == ENTITY and link_ < 0):
            cluster[i] = next_id
            first_of[next_id] = i
            next_id += 1
            continue
        if kind[i] == ENTITY:
            cluster[i] = cluster[link_]
        if link_ == ABSTAIN:  # pronoun the model abstains on: no anchor, no distance
            continue
        if link_ < 0:  # pronoun without link: today's rule
            dist[i] = 1
            continue
        target = link_ if nearest else first_of[cluster[link_]]
        dist[i] = sentence[i] - sentence[target]
        ante[i] = link_
        ref[i] = target
    ddp_seg, ddp_sent = [0] * n_segments, [0] * n_sentences
    for i in range(n):
        if dist[i] > 0:
            ddp_seg[segment[i]] = max(ddp_seg[segment[i]], dist[i])
            ddp_sent[gsentence[i]] = max(ddp_sent[gsentence[i]], dist[i])
    return {"distance": dist, "antecedent": ante, "reference": ref, "cluster": [c if k != PRONOUN else -1 for c, k
                                                                               in zip(cluster, kind)],
            "ddp_seg": ddp_seg, "ddp_sent": ddp_sent}
