"""The 32-bit integer walks of ``ddp meta``'s replicate kernels (``stats_meta``, ``meta_i32.pxd``).

``tau_b_weighted_reps`` and ``acc_eq_weighted_reps`` walk blocks of 8 or 32 replicates with Fenwick trees of
doubles (``"f64"``) or of 32-bit integers on the baseline instruction set (``"i32"``) or with AVX2
(``"i32-avx2"``). The reference for every path is the one-replicate walk (``tau_b_weighted_one``;
``acc_eq_weighted_reps(..., block=1)``), itself checked against scipy's ``kendalltau`` and the pair loop
``tests/oracles/meta_oracle.acc23`` in test_meta_intervals.py: every path must give its bits exactly.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore._native import load
from ddpcore.stats.meta import _dense_ranks

K = load("stats_meta")
PATHS = ["f64", "i32"] + (["i32-avx2"] if K.block_path() == "i32-avx2" else [])


@pytest.fixture(autouse=True)
def _auto_path_after():
    yield
    K.set_block_path("auto")


def _tau_data(seed: int, n: int, n_docs: int, h_levels: int, m_levels: int, n_rep: int):
    rng = np.random.default_rng(seed)
    h = rng.integers(0, h_levels, n).astype(float)
    m = rng.integers(0, m_levels, n) + 0.5 * h
    doc = rng.integers(0, n_docs, n).astype(np.int64)
    w = rng.integers(0, 4, size=(n_rep, n_docs)).astype(np.float64)
    hr, mr = _dense_ranks(h), _dense_ranks(m)
    o = np.argsort(hr, kind="stable")
    return hr[o], mr[o], doc[o], w, int(mr.max())


def _tau_one(hr, mr, doc, w, n_m):
    return np.array([K.tau_b_weighted_one(hr, mr, doc, w[r], n_m) for r in range(len(w))])


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 80), n_docs=st.integers(1, 7), h_levels=st.integers(1, 6),
       m_levels=st.integers(1, 50), n_rep=st.sampled_from([5, 9, 37, 64]))
def test_tau_b_every_path_gives_the_one_replicate_bits(seed, n, n_docs, h_levels, m_levels, n_rep):
    """Blocks of 8 (n_rep <= 8) and 32 (the last one partial), ties in both rankings, zero weights,
    replicates of one point: each path's values are the one-replicate walk's, bit for bit."""
    hr, mr, doc, w, n_m = _tau_data(seed, n, n_docs, h_levels, m_levels, n_rep)
    want = _tau_one(hr, mr, doc, w, n_m)
    for path in PATHS:
        K.set_block_path(path)
        for threads in (1, 2):
            out = np.empty(n_rep)
            K.tau_b_weighted_reps(hr, mr, doc, w, n_m, out, threads)
            assert np.array_equal(out, want, equal_nan=True), (path, threads)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 80), n_docs=st.integers(1, 7), h_levels=st.integers(1, 6),
       n_rep=st.sampled_from([5, 9, 37, 64]), eps=st.sampled_from([0.0, 0.1, 0.5, 2.0]))
def test_acc_eq_every_path_gives_the_one_replicate_bits(seed, n, n_docs, h_levels, n_rep, eps):
    rng = np.random.default_rng(seed)
    h = rng.integers(0, h_levels, n).astype(float)
    m = np.round(h + rng.normal(0, 1.0, n), 1)  # a grid: metric ties and equal differences
    doc = rng.integers(0, n_docs, n).astype(np.int64)
    w = rng.integers(0, 4, size=(n_rep, n_docs)).astype(np.float64)
    hr = _dense_ranks(h)
    a, b = np.argsort(m, kind="stable"), np.lexsort((m, hr))
    args = [np.ascontiguousarray(x) for x in (m[a], hr[a], doc[a], m[b], hr[b], doc[b])]
    want = np.empty(n_rep)
    K.acc_eq_weighted_reps(*args, w, int(hr.max()), eps, want, 1, 1)  # one replicate per walk
    for path in PATHS:
        K.set_block_path(path)
        for threads in (1, 2):
            for block in (0, 8, 32):
                out = np.empty(n_rep)
                K.acc_eq_weighted_reps(*args, w, int(hr.max()), eps, out, threads, block)
                assert np.array_equal(out, want, equal_nan=True), (path, threads, block)


def test_the_large_kernel_shape_every_path():
    """The shape ``ddp meta`` walks (metric order, the tree over ~30 human levels, 200 cells a document,
    multinomial document weights): 20,000 cells, 40 replicates (a block of 32 and a partial one)."""
    rng = np.random.default_rng(3)
    n, n_docs, n_rep = 20_000, 100, 40
    q = rng.normal(size=n)
    h, m = np.round(q * 3), q + rng.normal(scale=0.8, size=n)
    doc = rng.integers(0, n_docs, n).astype(np.int64)
    w = rng.multinomial(n_docs, np.full(n_docs, 1 / n_docs), size=n_rep).astype(np.float64)
    hr, mr = _dense_ranks(h), _dense_ranks(m)
    o = np.lexsort((hr, mr))  # walk in metric order, the tree over the human's ranks
    args = (mr[o], hr[o], doc[o])
    want = _tau_one(*args, w, int(hr.max()))
    a, b = np.argsort(m, kind="stable"), np.lexsort((m, hr))
    acc_args = [np.ascontiguousarray(x) for x in (m[a], hr[a], doc[a], m[b], hr[b], doc[b])]
    acc_want = np.empty(n_rep)
    K.acc_eq_weighted_reps(*acc_args, w, int(hr.max()), 0.3, acc_want, 1, 1)
    for path in PATHS:
        K.set_block_path(path)
        out = np.empty(n_rep)
        K.tau_b_weighted_reps(*args, w, int(hr.max()), out, 2)
        assert np.array_equal(out, want), path
        K.acc_eq_weighted_reps(*acc_args, w, int(hr.max()), 0.3, out, 2, 0)
        assert np.array_equal(out, acc_want), path


def test_weights_the_integers_cannot_hold_take_the_double_walk(monkeypatch):
    """Fractional weights, or a replicate whose total weight reaches ``I32_MAX_TOTAL``: ``auto`` walks in
    doubles (the same bits as the one-replicate walk), and a pinned integer path refuses."""
    hr, mr, doc, w, n_m = _tau_data(7, 60, 4, 3, 20, 37)
    frac = w * 0.5  # halves: not whole multiplicities
    want = _tau_one(hr, mr, doc, frac, n_m)
    out = np.empty(len(w))
    K.tau_b_weighted_reps(hr, mr, doc, frac, n_m, out, 1)
    assert np.array_equal(out, want, equal_nan=True)
    K.set_block_path("i32")
    with pytest.raises(ValueError, match="pinned"):
        K.tau_b_weighted_reps(hr, mr, doc, frac, n_m, out, 1)
    # the total bound: lower it below these replicates' totals
    monkeypatch.setattr(K, "I32_MAX_TOTAL", 10)
    assert not K._int_weights_ok(w, doc)
    with pytest.raises(ValueError, match="pinned"):
        K.tau_b_weighted_reps(hr, mr, doc, w, n_m, out, 1)
    K.set_block_path("auto")
    K.tau_b_weighted_reps(hr, mr, doc, w, n_m, out, 1)
    assert np.array_equal(out, _tau_one(hr, mr, doc, w, n_m), equal_nan=True)
    monkeypatch.undo()
    assert K._int_weights_ok(w, doc)
    assert not K._int_weights_ok(-w - 1.0, doc)


def test_block_path_names():
    assert K.block_path() in ("i32", "i32-avx2")
    K.set_block_path("f64")
    assert K.block_path() == "f64"
    with pytest.raises(ValueError, match="one of"):
        K.set_block_path("avx512")


def _fused_inputs(seed: int, n: int, n_docs: int, h_levels: int, m_grid: float | None, n_rep: int):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=n)
    h = np.round(q * h_levels / 3)
    m = q + rng.normal(scale=0.8, size=n)
    if m_grid:  # a coarse metric: ties and windows of many cells
        m = np.round(m / m_grid) * m_grid
    doc = rng.integers(0, n_docs, n).astype(np.int64)
    w = rng.integers(0, 4, size=(n_rep, n_docs)).astype(np.float64)
    return h, m, doc, w


def _separate(h, m, doc, w, eps):
    """The two kernels the joint walk must match: tau-b walked in metric order (the tree over the human's
    ranks, as ``_tau_b_reps`` walks when the human has fewer levels) and acc23 one replicate per walk."""
    hr, mr = _dense_ranks(h), _dense_ranks(m)
    o = np.argsort(m, kind="stable")
    tau = np.empty(len(w))
    K.tau_b_weighted_reps(mr[o], hr[o], doc[o], w, int(hr.max()), tau, 1)
    a, b = np.argsort(m, kind="stable"), np.lexsort((m, hr))
    acc = np.empty(len(w))
    K.acc_eq_weighted_reps(*[np.ascontiguousarray(x) for x in (m[a], hr[a], doc[a], m[b], hr[b], doc[b])], w,
                           int(hr.max()), eps, acc, 1, 1)
    return tau, acc, (mr[o], hr[o], np.ascontiguousarray(m[o]), doc[o], int(hr.max()))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 90), n_docs=st.integers(1, 7), h_levels=st.integers(1, 8),
       m_grid=st.sampled_from([None, 0.5, 0.1]), n_rep=st.sampled_from([1, 5, 9, 37]),
       eps=st.sampled_from([0.0, 0.05, 0.1, 0.5, 3.0]))
def test_tau_acc_joint_walk_gives_both_kernels_bits(seed, n, n_docs, h_levels, m_grid, n_rep, eps):
    """``tau_acc_weighted_reps``: tau-b with the bits of ``tau_b_weighted_reps`` and acc23 with the bits of the
    one-replicate acc walk, whatever the ties (grid metrics, human on few levels), the threshold (windows from
    empty to the whole vector), zero weights and replicates of one point; on every 32-bit path."""
    h, m, doc, w = _fused_inputs(seed, n, n_docs, h_levels, m_grid, n_rep)
    tau, acc, args = _separate(h, m, doc, w, eps)
    for path in [p for p in PATHS if p != "f64"]:
        K.set_block_path(path)
        for threads in (1, 2):
            t, a = np.empty(n_rep), np.empty(n_rep)
            assert K.tau_acc_weighted_reps(*args[:4], w, args[4], eps, t, a, threads) is True
            assert np.array_equal(t, tau, equal_nan=True), (path, threads)
            assert np.array_equal(a, acc, equal_nan=True), (path, threads)


def test_tau_acc_joint_walk_declines_what_it_cannot_hold_exactly():
    """Doubles pinned, or fractional weights: it computes nothing and says so (False); the caller runs the
    two kernels."""
    h, m, doc, w = _fused_inputs(1, 60, 4, 6, None, 9)
    _, _, args = _separate(h, m, doc, w, 0.1)
    t, a = np.full(9, 7.0), np.full(9, 7.0)
    K.set_block_path("f64")
    assert K.tau_acc_weighted_reps(*args[:4], w, args[4], 0.1, t, a, 1) is False
    K.set_block_path("auto")
    assert K.tau_acc_weighted_reps(*args[:4], w * 0.5, args[4], 0.1, t, a, 1) is False
    assert np.all(t == 7.0) and np.all(a == 7.0)


def test_meta_acc_eq_rides_on_the_tau_walk_with_the_same_intervals(monkeypatch):
    """``ddp meta``: ``acc_eq.none``'s bootstrap rides on ``tau_b.none``'s walk for a continuous metric (few
    cells within its tie threshold) and not for a coarse one (whole numbers: ties put hundreds of cells in
    every window); the output is the same, figure for figure, as with the ride switched off (the separate
    kernel on the same replicates)."""
    import polars as pl

    import ddpcore.stats.meta as M
    from ddpcore.stats.options import ResampleOptions

    rng = np.random.default_rng(5)
    n_docs, segs, n_sys = 60, 3, 8
    doc = np.repeat(np.arange(n_docs), segs)
    seg = np.tile(np.arange(segs), n_docs)
    prof = pl.DataFrame({"document_id": doc, "segment_id": seg, "ddp": rng.integers(0, 3, doc.size)})
    q = rng.normal(size=doc.size * n_sys)
    scores = pl.DataFrame({"document_id": np.repeat(doc, n_sys), "segment_id": np.repeat(seg, n_sys),
                           "system": np.tile(np.arange(n_sys), doc.size), "human": np.round(q * 3),
                           "fine": q + rng.normal(size=q.size), "coarse": np.round(q + rng.normal(size=q.size))})

    def run():
        return M.meta_evaluate(prof, scores, human_col="human", bins=[0, 1, np.inf],
                               options=ResampleOptions(n_boot=60, seed=2), tests=M.MetaTests(n_perm=0, spa_ci_perm=0))

    rides = []
    real = M._tau_acc_reps

    def spy(data, cache, k, *args):
        out = real(data, cache, k, *args)
        rides.append((data.metrics[k], out is not None))
        return out

    monkeypatch.setattr(M, "_tau_acc_reps", spy)
    res = run()
    assert sorted(set(rides)) == [("coarse", False), ("fine", True)] and len(rides) == 6  # 2 bins + overall
    monkeypatch.setattr(M, "FUSED_MAX_WINDOW", -1.0)  # no ride: the separate kernel
    sep = run()
    for entry, e_sep in zip([*res.bins, res.overall], [*sep.bins, sep.overall]):
        for metric in ("fine", "coarse"):
            f = entry["metrics"][metric]["acc_eq.none"]
            assert f["status"] == "ok" and f["ci_status"] == "ok"
            assert entry["metrics"][metric] == e_sep["metrics"][metric]


def test_acc_eq_none_auto_cap_follows_the_human_levels(monkeypatch):
    """``--ci-max-points auto``: ``acc_eq.none`` is bootstrapped up to ``TAU_CI_MAX_POINTS_FAST`` cells when the
    human takes at most ``TAU_FAST_RANKS`` distinct values in the bin (a small tree: blocked walks), else up to
    ``ACC_CI_MAX_POINTS``; the reason says which (both lowered here)."""
    import polars as pl

    import ddpcore.stats.meta as M
    from ddpcore.stats.options import ResampleOptions

    rng = np.random.default_rng(6)
    n_docs, n_sys = 40, 6
    prof = pl.DataFrame({"document_id": np.arange(n_docs), "segment_id": np.zeros(n_docs, np.int64),
                         "ddp": np.zeros(n_docs, np.int64)})
    q = rng.normal(size=n_docs * n_sys)
    scores = pl.DataFrame({"document_id": np.repeat(np.arange(n_docs), n_sys),
                           "segment_id": np.zeros(q.size, np.int64), "system": np.tile(np.arange(n_sys), n_docs),
                           "human": np.round(q * 3), "a": q + rng.normal(size=q.size)})

    def acc():
        r = M.meta_evaluate(prof, scores, human_col="human", bins=[0, np.inf],
                            options=ResampleOptions(n_boot=20, seed=1), tests=M.MetaTests(n_perm=0, spa_ci_perm=0))
        return r.overall["metrics"]["a"]["acc_eq.none"], r.warnings

    monkeypatch.setattr(M, "FUSED_MAX_WINDOW", -1.0)  # the cap decides, not the ride
    monkeypatch.setattr(M, "ACC_CI_MAX_POINTS", 100)
    f, _ = acc()  # 240 cells, the human on ~15 levels <= TAU_FAST_RANKS: the fast cap (500,000)
    assert f["ci_status"] == "ok"
    monkeypatch.setattr(M, "TAU_CI_MAX_POINTS_FAST", 200)
    f, warnings = acc()
    assert f["ci_status"] == "not_computed" and f["ci_reason"] == "more than 200 cells (--ci-max-points auto for acc_eq.none)"
    assert any(w.startswith("acc_eq.none has no interval") for w in warnings)
    monkeypatch.setattr(M, "TAU_FAST_RANKS", 5)  # the human now counts as fine: ACC_CI_MAX_POINTS
    f, _ = acc()
    assert f["ci_reason"] == ("more than 100 cells (--ci-max-points auto for acc_eq.none; the human takes more "
                              "than 5 distinct values here)")


@pytest.mark.parametrize("scale", [1, 1_000, 3_000])
def test_tau_acc_joint_walk_large_weights(scale):
    """Weights in the thousands (products of a weight and a tree count beyond 2**32 at scale 3,000, summed in
    64 bits): the joint walk still gives both kernels' bits."""
    h, m, doc, w = _fused_inputs(11, 300, 9, 6, None, 37)
    w = w * scale
    per_doc = np.bincount(doc, minlength=w.shape[1])
    assert scale < 3_000 or w.max() * (w @ per_doc).max() > 2**32
    tau, acc, args = _separate(h, m, doc, w, 0.05)
    t, a = np.empty(len(w)), np.empty(len(w))
    assert K.tau_acc_weighted_reps(*args[:4], w, args[4], 0.05, t, a, 2) is True
    assert np.array_equal(t, tau, equal_nan=True) and np.array_equal(a, acc, equal_nan=True)
