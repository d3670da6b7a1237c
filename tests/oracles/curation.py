"""Slow, obvious Python oracles for ``ddp select`` / ``ddp sample`` (one loop per row, no numpy).

Rows are dicts with ``document_id, segment_id, domain, ddp, first_sentence, n_sentences`` in input order.
"""
from __future__ import annotations

import math


def doc_max(rows):
    out = {}
    for r in rows:
        out[r["document_id"]] = max(out.get(r["document_id"], -1), r["ddp"])
    return out


def context(rows, selected):
    """selected: set of row indices. Add, for each, the segments of its document whose sentences lie
    between sentence first_sentence - ddp and the selected segment."""
    keep = set(selected)
    for i in selected:
        r = rows[i]
        target = max(r["first_sentence"] - r["ddp"], 0)
        for j, s in enumerate(rows):
            if s["document_id"] != r["document_id"]:
                continue
            # s is kept when it holds the target sentence or starts after it, and does not come after r
            # (document order: first_sentence, then input order)
            f, n = s["first_sentence"], s["n_sentences"]
            holds_or_after = (f <= target < f + n) or f > target
            before = (f, j) <= (r["first_sentence"], i)
            if holds_or_after and before:
                keep.add(j)
    return keep


def select(rows, min_ddp=None, max_ddp=None, top_share=None, level="segment", domains=(), with_context=False):
    if level == "document":
        dm = doc_max(rows)
        units = list(dm)
        value = dm
        dom = {r["document_id"]: r["domain"] for r in rows}
    else:
        units = list(range(len(rows)))
        value = {i: rows[i]["ddp"] for i in units}
        dom = {i: rows[i]["domain"] for i in units}
    elig = [u for u in units if not domains or dom[u] in domains]
    ok = set(elig)
    if min_ddp is not None:
        ok = {u for u in ok if value[u] >= min_ddp}
    if max_ddp is not None:
        ok = {u for u in ok if value[u] <= max_ddp}
    if top_share is not None:
        vals = sorted((value[u] for u in elig), reverse=True)
        k = max(1, math.ceil(top_share * len(vals) - 1e-9))
        thr = vals[k - 1]
        ok = {u for u in ok if value[u] >= thr}
    if level == "document":
        return {i for i, r in enumerate(rows) if r["document_id"] in ok}
    return context(rows, ok) if with_context else ok


def sample(rows, edges, per_bin, by, seed):
    """The documented rule, one unit at a time: keys from Generator(PCG64(seed)).random(n_units),
    units in first-appearance order; per bin the per_bin smallest keys."""
    import numpy as np

    if by == "document":
        dm = doc_max(rows)
        units = list(dm)  # dict keeps first-appearance order
        value = [dm[u] for u in units]
    else:
        units = list(range(len(rows)))
        value = [r["ddp"] for r in rows]
    keys = np.random.Generator(np.random.PCG64(seed)).random(len(units)).tolist()
    per = {}
    for u, v, k in zip(units, value, keys):
        for i in range(len(edges) - 1):
            if edges[i] <= v < edges[i + 1]:
                per.setdefault(i, []).append((k, u))
    chosen = set()
    report = []
    for i in range(len(edges) - 1):
        got = sorted(per.get(i, []))[:per_bin]
        chosen |= {u for _, u in got}
        report.append((len(per.get(i, [])), len(got)))
    if by == "document":
        return {j for j, r in enumerate(rows) if r["document_id"] in chosen}, report
    return context(rows, chosen), report
