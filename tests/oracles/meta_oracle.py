"""Slow, obviously-correct oracles of ``ddpcore.stats.meta`` (``ddp meta``).

Written from the definitions (docs/meta.md, the module docstring of ``ddpcore.stats.meta``) and from
reading google-research/mt-metrics-eval (``stats.py``: ``KendallVariants``, ``AverageCorrelation``,
``Agreement``, ``PermutationSigDiff``; ``tau_optimization.py``; ``pce.py``). Loops over pairs,
thresholds, replicates and trials; scipy for Pearson and tau-b. Never used by the package.

Data model of the oracles: a list of cells ``(doc, item, system, h, {metric: m})`` already filtered
to the scored ones (human present, every metric present).
"""
from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np
import scipy.stats


# --------------------------------------------------------------------------- pair statistics


def pair_counts(gold, metric, epsilon=0.0):
    """(con, dis, ties_gold_only, ties_metric_only, ties_both) with metric ties ``|dm| <= epsilon``."""
    con = dis = tg = tm = tb = 0
    for (g1, m1), (g2, m2) in itertools.combinations(zip(gold, metric), 2):
        gt = g1 == g2
        mt = abs(m1 - m2) <= epsilon
        if gt and mt:
            tb += 1
        elif gt:
            tg += 1
        elif mt:
            tm += 1
        elif (g1 - g2) * (m1 - m2) > 0:
            con += 1
        else:
            dis += 1
    return con, dis, tg, tm, tb


def acc23(gold, metric, epsilon=0.0):
    con, dis, tg, tm, tb = pair_counts(gold, metric, epsilon)
    tot = con + dis + tg + tm + tb
    return (con + tb) / tot if tot else math.nan


def acc23_opt(gold_rows, metric_rows):
    """Tie-calibrated acc23 averaged over rows (mt-metrics-eval ``tau_optimization`` with
    ``sample_rate=1``): thresholds 0 and every pair's |dm|, in increasing order; the first maximum.
    Rows with fewer than 2 points are skipped. Returns (best, epsilon)."""
    rows = [(g, m) for g, m in zip(gold_rows, metric_rows) if len(g) >= 2]
    cands = sorted({0.0} | {abs(a - b) for _, m in rows for a, b in itertools.combinations(m, 2)})
    best, best_eps = -1.0, 0.0
    for eps in cands:
        v = float(np.mean([acc23(g, m, eps) for g, m in rows]))
        if v > best:
            best, best_eps = v, eps
    return best, best_eps


def tau_b(x, y):
    with np.errstate(all="ignore"):
        return float(scipy.stats.kendalltau(x, y).statistic)


def pearson(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.size < 2 or x.max() == x.min() or y.max() == y.min():
        return math.nan
    return float(scipy.stats.pearsonr(x, y).statistic)


def agreement(gold_sys, metric_sys):
    """mt-metrics-eval ``stats.Agreement``: pairs with ``sign(dg) == sign(dm)`` / all pairs."""
    agree = n = 0
    for (g1, m1), (g2, m2) in itertools.combinations(zip(gold_sys, metric_sys), 2):
        agree += np.sign(g1 - g2) == np.sign(m1 - m2)
        n += 1
    return agree / n


def pairwise_pvalues(scores, signs):
    """Thompson's paired permutation p-values by loops: scores[unit][sys], signs[trial][unit] in {+1, -1}."""
    n_sys = len(scores[0])
    p = {}
    for i in range(n_sys):
        for j in range(i + 1, n_sys):
            test = sum(u[i] for u in scores) - sum(u[j] for u in scores)
            hits = 0
            for s in signs:
                a = sum(sg * u[i] for sg, u in zip(s, scores))
                b = sum(sg * u[j] for sg, u in zip(s, scores))
                hits += (a - b) >= test
            p[(i, j)] = hits / len(signs)
    return p


def spa(h_scores, m_scores, signs):
    ph, pm = pairwise_pvalues(h_scores, signs), pairwise_pvalues(m_scores, signs)
    return 1.0 - float(np.mean([abs(ph[k] - pm[k]) for k in ph]))


# --------------------------------------------------------------------------- statistics of a cell list


def cell_stats(cells, metric, eps_item=None, eps_none=None, only=None):
    """Every statistic of ``ddp meta`` on a list of cells (duplicates allowed: bootstrap copies carry
    distinct item keys). ``eps_*`` given: acc_eq at that epsilon (``eps_none=-1``: skip acc_eq.none),
    else calibrated. ``only``: compute that statistic only (the loops are slow)."""
    h = [c[3] for c in cells]
    m = [c[4][metric] for c in cells]
    if only == "pearson.none":
        return {only: pearson(h, m)}
    out = {"pearson.none": pearson(h, m), "tau_b.none": tau_b(h, m)}
    if only is not None or eps_none == -1:
        out["acc_eq.none"] = math.nan
    elif eps_none is None:
        out["acc_eq.none"] = acc23_opt([h], [m])[0] if len(h) >= 2 else math.nan
    else:
        out["acc_eq.none"] = acc23(h, m, eps_none)
    by_item = defaultdict(list)
    for c in cells:
        by_item[c[1]].append(c)
    rows_h = [[c[3] for c in v] for v in by_item.values()]
    rows_m = [[c[4][metric] for c in v] for v in by_item.values()]
    pr = [pearson(a, b) for a, b in zip(rows_h, rows_m) if len(a) >= 2]
    tb = [tau_b(a, b) for a, b in zip(rows_h, rows_m) if len(a) >= 2]
    out["pearson.item"] = float(np.nanmean(pr)) if np.any(~np.isnan(pr)) else math.nan
    out["tau_b.item"] = float(np.nanmean(tb)) if np.any(~np.isnan(tb)) else math.nan
    if only is not None and only != "acc_eq.item":
        out["acc_eq.item"] = math.nan
    elif eps_item is None:
        out["acc_eq.item"], out["epsilon.item"] = acc23_opt(rows_h, rows_m)
    else:
        vals = [acc23(a, b, eps_item) for a, b in zip(rows_h, rows_m) if len(a) >= 2]
        out["acc_eq.item"] = float(np.mean(vals)) if vals else math.nan
    if only is not None:
        return out
    sys_h, sys_m = defaultdict(list), defaultdict(list)
    for c in cells:
        sys_h[c[2]].append(c[3])
        sys_m[c[2]].append(c[4][metric])
    keys = sorted(sys_h)
    if len(keys) >= 2:
        out["pairwise_accuracy.sys"] = agreement([np.mean(sys_h[k]) for k in keys], [np.mean(sys_m[k]) for k in keys])
    else:
        out["pairwise_accuracy.sys"] = math.nan
    return out


def replicate(cells, docs_drawn):
    """The cells of one bootstrap replicate: every drawn document's cells, each copy with its own item key."""
    by_doc = defaultdict(list)
    for c in cells:
        by_doc[c[0]].append(c)
    out = []
    for copy, d in enumerate(docs_drawn):
        for c in by_doc.get(d, []):
            out.append((c[0], (copy, c[1]), c[2], c[3], c[4]))
    return out


def swap_metrics(cells, a, b, keep_docs):
    """Cells with metrics a and b swapped in every document not in ``keep_docs`` (PERM-BOTH by document)."""
    out = []
    for c in cells:
        ms = dict(c[4])
        if c[0] not in keep_docs:
            ms[a], ms[b] = ms[b], ms[a]
        out.append((c[0], c[1], c[2], c[3], ms))
    return out


def zscore_metrics(cells, metrics):
    """Metric scores z-scored over the cells (``scipy.stats.zscore``, as PermutationSigDiff does)."""
    z = {k: scipy.stats.zscore([c[4][k] for c in cells]) for k in metrics}
    return [(c[0], c[1], c[2], c[3], {k: float(z[k][i]) for k in metrics}) for i, c in enumerate(cells)]


def permutation_sig_diff_loop(gold, m1, m2, corr, keep_rows):
    """A transcription of the loop of mt-metrics-eval ``PermutationSigDiff`` with ``average_by='none'``
    (z-scored metric scores; trial i mixes score j from metric1 where ``w1[j] == 1``), with the coin
    flips given (``keep_rows[i][j]``) instead of ``np.random.binomial``. Returns (p, delta)."""
    s1, s2 = scipy.stats.zscore(m1), scipy.stats.zscore(m2)
    delta = corr(gold, s2) - corr(gold, s1)
    large = 0
    for w1 in keep_rows:
        w1 = np.asarray(w1, dtype=float)
        w2 = 1 - w1
        a = w1 * s1 + w2 * s2
        b = w2 * s1 + w1 * s2
        if corr(gold, b) - corr(gold, a) >= delta:
            large += 1
    return large / len(keep_rows), delta


def spa_replicate(cells, docs_drawn, metric, coin_of, signs):
    """SPA of one bootstrap replicate by loops, the coins held fixed: the units are the drawn copies of the
    complete segments (``coin_of[item]`` = the segment's column in ``signs``, the point value's masks); a copy
    takes its segment's coin. ``cells`` = the bin's cells (every system present in every segment).
    NaN when no segment is drawn."""
    by_doc = defaultdict(list)
    for c in cells:
        by_doc[c[0]].append(c)
    systems = sorted({c[2] for c in cells})
    units_h, units_m, cols = [], [], []
    for d in docs_drawn:
        seg = defaultdict(dict)
        for c in by_doc.get(d, []):
            seg[c[1]][c[2]] = c
        for item in sorted(seg):
            units_h.append([seg[item][s][3] for s in systems])
            units_m.append([seg[item][s][4][metric] for s in systems])
            cols.append(coin_of[item])
    if not units_h:
        return math.nan
    rep_signs = [[row[j] for j in cols] for row in signs]
    return spa(units_h, units_m, rep_signs)
