"""pytest-benchmark: ``ddp meta`` (``meta_evaluate``) on the issue-22 size (20 systems x 20,000 segments x
5 metrics, 1,000 document resamples, 10,000 permutations) and a small size. Measured, never asserted.

    pytest benchmarks/bench_meta.py --benchmark-only -p no:cacheprovider
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from meta_table import make_data  # noqa: E402


@pytest.fixture(scope="module")
def data():
    return make_data()


@pytest.mark.parametrize("n_perm", [0, 10_000])
def test_meta_issue22_size(benchmark, data, n_perm):
    from ddpcore.stats.meta import MetaTests, meta_evaluate
    from ddpcore.stats.options import ResampleOptions

    prof, scores = data
    benchmark.pedantic(meta_evaluate, args=(prof, scores),
                       kwargs={"human_col": "human", "bins": [0, 1, 5, 15, 50, math.inf],
                               "options": ResampleOptions(n_boot=1000, seed=0), "tests": MetaTests(n_perm=n_perm)},
                       rounds=3, iterations=1)


@pytest.mark.parametrize("walk", ["human order", "metric order"])
def test_tau_b_kernel_400k_cells(benchmark, walk):
    """``stats_meta.tau_b_weighted_reps``, 400,000 cells, 64 replicates, one thread: the walk in human order
    (tree over the metric's ranks) against the walk in metric order (tree over ~30 human ranks, 32 replicates
    per walk); tau_kernel_table.py prints both with scipy on the expanded rows as the peer."""
    import numpy as np

    from ddpcore._native import load
    from ddpcore.stats.meta import _dense_ranks
    from tau_kernel_table import data as tau_data

    h, m, doc, p = tau_data(400_000)
    w = np.random.default_rng(1).multinomial(p.size, p, size=64).astype(np.float64)
    hr, mr = _dense_ranks(h), _dense_ranks(m)
    a, b = (hr, mr) if walk == "human order" else (mr, hr)
    o = np.argsort(a, kind="stable")
    out = np.empty(64)
    benchmark.pedantic(load("stats_meta").tau_b_weighted_reps, args=(a[o], b[o], doc[o], w, int(b.max()), out, 1),
                       rounds=3, iterations=1)


@pytest.mark.parametrize("block", [1, 32])
def test_acc_eq_kernel_400k_cells(benchmark, block):
    """``stats_meta.acc_eq_weighted_reps`` (``acc_eq.none``'s bootstrap), 400,000 cells, 64 replicates, one
    thread, epsilon 0.5: one replicate per walk against 32 per walk (docs/meta.md run 8; the peer a user
    would otherwise run, mt-metrics-eval's pair loop, is O(n^2) per replicate: 80 billion pairs here)."""
    import numpy as np

    from ddpcore._native import load
    from ddpcore.stats.meta import _dense_ranks
    from tau_kernel_table import data as tau_data

    h, m, doc, p = tau_data(400_000)
    w = np.random.default_rng(1).multinomial(p.size, p, size=64).astype(np.float64)
    hr = _dense_ranks(h)
    a, b = np.argsort(m, kind="stable"), np.lexsort((m, hr))
    args = [np.ascontiguousarray(x) for x in (m[a], hr[a], doc[a], m[b], hr[b], doc[b])]
    out = np.empty(64)
    benchmark.pedantic(load("stats_meta").acc_eq_weighted_reps, args=(*args, w, int(hr.max()), 0.5, out, 1, block),
                       rounds=3, iterations=1)


@pytest.mark.parametrize("path", ["f64", "i32", "auto", "auto+acc ride"])
def test_tau_acc_walks_400k_cells(benchmark, path):
    """tau-b and acc23 (epsilon 0) of 64 replicates of 400,000 cells on one thread, by the arithmetic of the
    blocked walks: double trees (the walks before 2026-12-07), 32-bit trees, the default (32-bit with AVX2
    where the CPU has it), and the default with acc23 riding on tau-b's walk (``tau_acc_weighted_reps``).
    Every path gives the same bits (tests/stats/test_meta_i32.py); meta_kernel_table.py prints the table."""
    import numpy as np

    from ddpcore._native import load
    from meta_kernel_table import inputs, run_path

    args = inputs(400_000, 64, 0.0)
    try:
        benchmark.pedantic(run_path, args=(path, args), rounds=3, iterations=1)
    finally:
        load("stats_meta").set_block_path("auto")
