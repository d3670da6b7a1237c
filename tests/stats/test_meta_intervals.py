"""The document-bootstrap intervals of ``acc_eq.none`` and ``spa.sys`` against slow loops.

Expected values: tests/oracles/meta_oracle.py rebuilds every replicate from the documented index matrix
(``ddpcore.stats.bootstrap.resample_indices``): ``acc23`` by a loop over the replicate's cell pairs (copies
included) at the point value's epsilon; SPA by Thompson's paired permutation p-values over the replicate's
units with the first ``spa_ci_perm`` masks of ``PCG64(seed).jumped(2)`` (a copy of a segment takes its
segment's coin), then ``numpy.percentile`` of the replicates, as ``ddp meta`` documents.
Scores are multiples of 1/8 so every sum is exact in floating point and the ``>=`` of the permutation
test does not depend on the order of summation.
"""
from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore.stats.bootstrap import resample_indices
from ddpcore.stats.meta import (MetaTests, _keep_bits, acc_eq_at, acc_eq_replicates, meta_evaluate,
                                pairwise_p_values, spa_replicates)
from ddpcore.stats.options import ResampleOptions
from oracles import meta_oracle as O

from stats.test_meta import EDGES, cells_of, entries, in_bin, make_data


def dyadic(prof, scores, metrics=("a", "b")):
    return prof, scores.with_columns(*[((pl.col(m) * 8).round() / 8).alias(m) for m in metrics])


def run(prof, scores, n_boot, seed, spa_perm=20, spa_ci_perm=12):
    return meta_evaluate(prof, scores, human_col="human", bins=EDGES,
                         options=ResampleOptions(n_boot=n_boot, seed=seed),
                         tests=MetaTests(n_perm=0, spa_perm=spa_perm, spa_ci_perm=spa_ci_perm))


@pytest.mark.parametrize("data_seed", [4, 9])
def test_acc_eq_none_and_spa_intervals_equal_loops(data_seed):
    prof, scores = dyadic(*make_data(data_seed, n_docs=6, p_missing=0.0))
    n_boot, seed, spa_perm, spa_ci = 30, 7, 20, 12
    res = run(prof, scores, n_boot, seed, spa_perm, spa_ci)
    cells = cells_of(prof, scores)
    docs = sorted(set(scores["document_id"].to_list()))
    idx = resample_indices(n_boot, len(docs), seed)
    reps_all = {}
    checked = 0
    for e in entries(res):
        lo, hi = (e["low"], e["high"]) if e["label"] != "overall" else (0, math.inf)
        sub = in_bin(cells, lo, hi)
        items = sorted({c[1] for c in sub})
        coin_of = {it: j for j, it in enumerate(items)}
        keep = _keep_bits(np.random.PCG64(seed).jumped(2), spa_perm, len(items)) if items else None
        signs = np.where(keep[:spa_ci], 1, -1).tolist() if items else []
        for m in ("a", "b"):
            got = e["metrics"][m]
            eps = got["acc_eq.none"].get("epsilon")
            acc = [O.acc23(*zip(*[(c[3], c[4][m]) for c in O.replicate(sub, [docs[i] for i in row])]), eps)
                   if got["acc_eq.none"]["status"] == "ok" and len(O.replicate(sub, [docs[i] for i in row])) >= 2
                   else math.nan for row in idx]
            spa = [O.spa_replicate(sub, [docs[i] for i in row], m, coin_of, signs) if items else math.nan
                   for row in idx]
            for stat, v in (("acc_eq.none", acc), ("spa.sys", spa)):
                v = np.array(v, dtype=float)
                reps_all[(e["label"], m, stat)] = v
                f = got[stat]
                if f["status"] != "ok" or len({c[0] for c in sub}) < 2:
                    continue
                ok = ~np.isnan(v)
                want = np.percentile(v[ok], [2.5, 97.5])
                assert f["ci_status"] == "ok", (e["label"], m, stat, f)
                assert (f["ci_low"], f["ci_high"]) == pytest.approx(tuple(want), abs=1e-12), (e["label"], m, stat)
                assert f["n_boot_undefined"] == int((~ok).sum())
                checked += 1
    assert checked >= 8
    # test (b) now covers both statistics: p_below from the same replicates, paired by document
    first = res.bins[0]["label"]
    n_b = 0
    for t in res.tests["bins_vs_first"]:
        if t["status"] == "ok" and t["stat"] in ("acc_eq.none", "spa.sys"):
            d = reps_all[(t["bin"], t["metric"], t["stat"])] - reps_all[(first, t["metric"], t["stat"])]
            d = np.round(d[~np.isnan(d)], 12)  # the loop's float mean of p's vs an exact count: equal SPAs tie
            assert t["p_below"] == pytest.approx(float((d >= 0).mean()))
            n_b += 1
    assert n_b >= 2


def test_spa_replicate_of_ones_is_the_point_value():
    """Every weight 1 and all spa_perm masks: the replicate is the point value (pairwise_p_values)."""
    rng = np.random.default_rng(3)
    n_u, G, n_sys, T = 17, 3, 4, 25
    X = np.round(rng.normal(size=(n_u, G, n_sys)) * 8) / 8
    doc = np.sort(rng.integers(0, 5, n_u))
    keep = _keep_bits(np.random.PCG64(1), T, n_u)
    p = pairwise_p_values(X, np.where(keep, 1.0, -1.0))
    iu, ju = np.triu_indices(n_sys, 1)
    want = [1 - np.mean(np.abs(p[0][iu, ju] - p[k][iu, ju])) for k in range(1, G)]
    got = spa_replicates(X, doc, keep, np.ones((2, 5)))
    assert got[0] == pytest.approx(want, abs=1e-15) and got[1] == pytest.approx(want, abs=1e-15)
    # a replicate drawing no document with a complete segment is undefined, not 1
    w = np.zeros((1, 5))
    assert np.isnan(spa_replicates(X, doc, keep, w)).all()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_u=st.integers(0, 40), n_docs=st.integers(1, 6), T=st.integers(1, 9),
       n_col=st.integers(1, 7))
def test_signed_doc_sums_equal_a_unit_loop(seed, n_u, n_docs, T, n_col):
    """``stats_meta.signed_doc_sums`` (the SPA bootstrap's per-document permuted sums): the slow loop below,
    unit by unit in order, bit for bit, with 1 and 2 threads; every output slot rewritten (stale values
    cleared)."""
    from ddpcore._native import load

    rng = np.random.default_rng(seed)
    doc = np.sort(rng.integers(0, n_docs, n_u))
    slot = np.cumsum(np.r_[False, doc[1:] != doc[:-1]]).astype(np.int64) if n_u else np.zeros(0, np.int64)
    n_slots = int(slot[-1]) + 1 if n_u else 0
    x = rng.normal(size=(n_u, n_col)) * 10.0 ** rng.integers(-3, 4, size=(n_u, 1))
    keep = rng.random((T, n_u)) < 0.5
    want = np.zeros((n_slots, T, n_col))
    for u in range(n_u):
        for t in range(T):
            want[slot[u], t] = want[slot[u], t] + (x[u] if keep[t, u] else -x[u])
    for threads in (1, 2):
        out = np.full((n_slots, T, n_col), 7.0)
        load("stats_meta").signed_doc_sums(x, slot, keep.astype(np.uint8), out, threads)
        assert np.array_equal(out, want)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 25), st.integers(1, 5), st.sampled_from([0.0, 0.125, 0.5, 2.0]))
def test_acc_eq_replicates_equal_pair_loop(seed, n, n_docs, eps):
    """Property: any cells, any document multiplicities: the kernel equals acc23 over the expanded copies."""
    rng = np.random.default_rng(seed)
    h = np.round(rng.normal(size=n))
    m = np.round(rng.normal(size=n) * 4) / 8
    doc = rng.integers(0, n_docs, n)
    w = rng.integers(0, 4, (3, n_docs)).astype(float)
    got = acc_eq_replicates(h, m, doc, w, eps)
    for r in range(3):
        H = [h[i] for i in range(n) for _ in range(int(w[r, doc[i]]))]
        M = [m[i] for i in range(n) for _ in range(int(w[r, doc[i]]))]
        want = O.acc23(H, M, eps) if len(H) >= 2 else math.nan
        assert (math.isnan(want) and math.isnan(got[r])) or got[r] == pytest.approx(want, abs=1e-12)
    one = acc_eq_replicates(h, m, doc, np.ones((1, n_docs)), eps)[0]
    assert one == pytest.approx(acc_eq_at(h, m, eps), abs=1e-12)


def test_same_seed_any_threads_same_intervals():
    prof, scores = dyadic(*make_data(2, n_docs=6, p_missing=0.0))
    a = meta_evaluate(prof, scores, human_col="human", bins=EDGES, options=ResampleOptions(n_boot=40, seed=5, threads=1),
                      tests=MetaTests(n_perm=0, spa_perm=20, spa_ci_perm=10)).overall["metrics"]
    b = meta_evaluate(prof, scores, human_col="human", bins=EDGES, options=ResampleOptions(n_boot=40, seed=5, threads=2),
                      tests=MetaTests(n_perm=0, spa_perm=20, spa_ci_perm=10)).overall["metrics"]
    for m in ("a", "b"):
        for stat in ("acc_eq.none", "spa.sys"):
            assert (a[m][stat]["ci_low"], a[m][stat]["ci_high"]) == (b[m][stat]["ci_low"], b[m][stat]["ci_high"])
            assert a[m][stat]["ci_status"] == "ok"


def test_spa_ci_perm_zero_says_why():
    prof, scores = make_data(2, n_docs=6, p_missing=0.0)
    r = run(prof, scores, 20, 1, spa_perm=20, spa_ci_perm=0)
    f = r.overall["metrics"]["a"]["spa.sys"]
    assert f["status"] == "ok" and f["ci_status"] == "not_computed" and "spa-ci-perm" in f["ci_reason"]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 60), n_docs=st.integers(1, 6), h_levels=st.integers(1, 5),
       m_levels=st.integers(1, 40))
def test_tau_b_kernel_equals_scipy_on_the_expanded_replicate_either_orientation(seed, n, n_docs, h_levels, m_levels):
    """``stats_meta.tau_b_weighted_reps``: each replicate equals ``scipy.stats.kendalltau`` (tau-b) on the
    cells repeated as often as their document's weight, whether the walk is in human order with the tree
    over metric ranks or the other way round (as ``_tau_b_reps`` does when the human has fewer levels), and
    the two orientations give the same bits."""
    from scipy.stats import kendalltau

    from ddpcore._native import load
    from ddpcore.stats.meta import _dense_ranks

    rng = np.random.default_rng(seed)
    h = rng.integers(0, h_levels, n).astype(float)
    m = rng.integers(0, m_levels, n) + 0.5 * h
    doc = rng.integers(0, n_docs, n).astype(np.int64)
    w = rng.integers(0, 4, size=(11, n_docs)).astype(np.float64)  # 11: a full block of 8 and a partial one
    hr, mr = _dense_ranks(h), _dense_ranks(m)
    kernel = load("stats_meta").tau_b_weighted_reps
    o1, o2 = np.argsort(hr, kind="stable"), np.argsort(mr, kind="stable")
    a, b = np.empty(len(w)), np.empty(len(w))
    kernel(hr[o1], mr[o1], doc[o1], w, int(mr.max()), a, 1)
    kernel(mr[o2], hr[o2], doc[o2], w, int(hr.max()), b, 1)
    assert np.array_equal(a, b, equal_nan=True)
    one = [load("stats_meta").tau_b_weighted_one(hr[o1], mr[o1], doc[o1], w[r], int(mr.max())) for r in range(len(w))]
    assert np.array_equal(a, np.array(one), equal_nan=True)  # blocks of 8 replicates: the one-replicate walk's bits
    for r in range(len(w)):
        times = w[r, doc].astype(int)
        hh, mm = np.repeat(h, times), np.repeat(m, times)
        if hh.size < 2 or np.unique(hh).size < 2 or np.unique(mm).size < 2:
            assert math.isnan(a[r])
            continue
        assert a[r] == pytest.approx(kendalltau(hh, mm, variant="b").statistic, abs=1e-12)


@pytest.mark.parametrize("n_points,m_levels,n_rep,width", [
    (3_000, 500, 37, 32),  # small tree: blocks of 32, the last one partial
    (3_000, 500, 5, 8),  # few replicates: one block of 8
    (3_000, 500, 1, 1),  # a point value: one walk
    (6_000, None, 19, 8),  # ~6,000 ranks: blocks of 8
    (20_000, None, 3, 1),  # more ranks than BLOCK_MAX_RANKS: one replicate per walk
])
def test_tau_b_kernel_every_block_width(n_points, m_levels, n_rep, width):
    """Every block width of ``tau_b_weighted_reps`` (32, 8, one replicate per walk): the same bits as the
    one-replicate function, with 1 and 2 threads, and scipy's tau-b on the expanded replicate."""
    from scipy.stats import kendalltau

    from ddpcore._native import load
    from ddpcore.stats.meta import _dense_ranks

    k = load("stats_meta")
    rng = np.random.default_rng(n_points + n_rep)
    n_docs = 40
    h = np.round(rng.normal(size=n_points) * 2)
    m = h + (rng.integers(0, m_levels, n_points) if m_levels else rng.normal(size=n_points))
    doc = rng.integers(0, n_docs, n_points).astype(np.int64)
    w = rng.integers(0, 3, size=(n_rep, n_docs)).astype(np.float64)
    hr, mr = _dense_ranks(h), _dense_ranks(m)
    n_m = int(mr.max())
    assert (k.block_width(n_m) if n_rep > 8 else (1 if n_rep == 1 else min(k.block_width(n_m), 8))) == width
    o = np.argsort(hr, kind="stable")
    one = np.array([k.tau_b_weighted_one(hr[o], mr[o], doc[o], w[r], n_m) for r in range(n_rep)])
    for threads in (1, 2):
        out = np.empty(n_rep)
        k.tau_b_weighted_reps(hr[o], mr[o], doc[o], w, n_m, out, threads)
        assert np.array_equal(out, one, equal_nan=True)
    for r in (0, n_rep - 1):
        times = w[r, doc].astype(int)
        assert one[r] == pytest.approx(kendalltau(np.repeat(h, times), np.repeat(m, times), variant="b").statistic,
                                       abs=1e-12)


def _big_bin(human_levels: bool) -> tuple[pl.DataFrame, pl.DataFrame]:
    """18,000 cells in one DDP bin (900 documents x 2 segments x 10 systems): more than
    ``TAU_FAST_RANKS`` distinct scores when the human is continuous too."""
    rng = np.random.default_rng(8)
    n_docs, segs, n_sys = 900, 2, 10
    doc = np.repeat(np.arange(n_docs), segs)
    seg = np.tile(np.arange(segs), n_docs)
    prof = pl.DataFrame({"document_id": doc, "segment_id": seg, "ddp": np.zeros(doc.size, dtype=np.int64)})
    q = rng.normal(size=doc.size * n_sys)
    scores = pl.DataFrame({"document_id": np.repeat(doc, n_sys), "segment_id": np.repeat(seg, n_sys),
                           "system": np.tile(np.arange(n_sys), doc.size),
                           "human": np.round(q * 3) if human_levels else q + rng.normal(scale=0.1, size=q.size),
                           "a": q + rng.normal(size=q.size)})
    return prof, scores


@pytest.mark.parametrize("human_levels,cap,computed,reason", [
    (True, None, True, None),  # auto: the human on ~20 levels, 18,000 <= 500,000
    (False, None, False, "more than 10,000 cells (--ci-max-points auto; both the human and the metric take more "
                         "than 16,384 distinct values here)"),
    (True, 17_999, False, "more than ci_max_points 17,999 cells (--ci-max-points)"),
    (False, 18_000, True, None),  # a given cap applies whatever the rankings
])
def test_tau_b_none_interval_cap(human_levels, cap, computed, reason):
    from ddpcore._native import load
    from ddpcore.stats.meta import TAU_FAST_RANKS

    assert TAU_FAST_RANKS == load("stats_meta").BLOCK_MAX_RANKS
    prof, scores = _big_bin(human_levels)
    res = meta_evaluate(prof, scores, human_col="human", bins=[0, math.inf],
                        options=ResampleOptions(n_boot=20, seed=1),
                        tests=MetaTests(n_perm=0, spa_perm=10, spa_ci_perm=0, ci_max_points=cap))
    assert res.overall["n_cells"] == 18_000
    f = res.overall["metrics"]["a"]["tau_b.none"]
    assert (f["ci_status"] == "ok") is computed
    assert f.get("ci_reason") == reason
    assert res.signature["ci_max_points"] == ("auto" if cap is None else cap)
    said = [w for w in res.warnings if w.startswith("tau_b.none has no interval")]
    assert said == ([] if computed else [f"tau_b.none has no interval in 2 (bin, metric) pair(s) ([0, inf) a, "
                                         f"overall a): {reason}"])


@pytest.mark.parametrize("n_points,h_levels,n_rep,eps", [
    (2_000, 5, 37, 0.5),  # a few human levels: blocks of 32, the last one partial
    (2_000, 5, 5, 0.0),  # few replicates: one block of 8; epsilon 0
    (2_000, 3_000, 19, 1.5),  # ~2,000 distinct human scores: more ranks than BLOCK32_MAX_RANKS, blocks of 8
])
def test_acc_eq_kernel_every_block_width(n_points, h_levels, n_rep, eps):
    """``acc_eq_weighted_reps`` in blocks of 32 and 8 (and an explicit ``block``): the bits of the
    one-replicate walk (``block=1``), with 1 and 2 threads; and acc23 by a pair loop over the expanded
    replicate (tests/oracles/meta_oracle.acc23) for replicates of 3 documents."""
    from ddpcore._native import load
    from ddpcore.stats.meta import _dense_ranks

    k = load("stats_meta")
    rng = np.random.default_rng(n_points + n_rep + h_levels)
    n_docs = 40
    h = rng.integers(0, h_levels, n_points).astype(float)
    m = np.round(h / max(1, h_levels // 5) + rng.normal(0, 1.5, n_points), 1)  # a grid: ties and equal |dm|
    doc = rng.integers(0, n_docs, n_points).astype(np.int64)
    w = rng.integers(0, 3, size=(n_rep, n_docs)).astype(np.float64)
    hr = _dense_ranks(h)
    n_h = int(hr.max())
    a, b = np.argsort(m, kind="stable"), np.lexsort((m, hr))
    args = [np.ascontiguousarray(x) for x in (m[a], hr[a], doc[a], m[b], hr[b], doc[b])]
    one = np.empty(n_rep)
    k.acc_eq_weighted_reps(*args, w, n_h, eps, one, 1, 1)
    for threads in (1, 2):
        for block in (0, 8, 32, 3):
            out = np.empty(n_rep)
            k.acc_eq_weighted_reps(*args, w, n_h, eps, out, threads, block)
            assert np.array_equal(out, one, equal_nan=True), (threads, block)
    with pytest.raises(ValueError, match="block"):
        k.acc_eq_weighted_reps(*args, w, n_h, eps, np.empty(n_rep), 1, 33)
    # replicates small enough for the pair loop: 3 documents drawn
    w_small = np.zeros((n_rep, n_docs))
    w_small[:, :3] = rng.integers(1, 3, size=(n_rep, 3))
    small = np.empty(n_rep)
    k.acc_eq_weighted_reps(*args, w_small, n_h, eps, small, 2, 0)
    for r in (0, n_rep - 1):
        times = w_small[r, doc].astype(int)
        want = O.acc23(np.repeat(h, times).tolist(), np.repeat(m, times).tolist(), eps)
        assert small[r] == pytest.approx(want, abs=1e-12)
