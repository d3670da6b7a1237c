"""Benchmark of ddpcore.stats.cluster_systems (issue 3) against the loops a user would otherwise run.

Problem: 20 systems x 2,000 segments (200 documents of 10 segments, 3 domains), one integer ESA-like
score (0-100, many ties) per (segment, system), each segment scored by one of 40 annotators for all
systems, so every pair of systems has 2,000 paired observations (40,000 rows).

Peers (timed in the same run):
* ``wmt25``: (a) a loop of ``scipy.stats.wilcoxon(d, alternative="greater")`` over all 380 ordered
  system pairs (the full p matrix ddpcore returns); (b) the calls the WMT25 script itself makes
  (rank-range walks, ``humeval/05-compute_clusters.py`` logic re-implemented with scipy);
  (c) scipy's own batched call ``scipy.stats.wilcoxon(D, axis=1)`` on the pre-built pair matrix.
  The peers get pre-aligned numpy arrays; ddpcore is timed end to end from a polars table.
* ``bootstrap``: a Python loop over the 1,000 document resamples computing every system's mean.
* ``permutation``: mt-metrics-eval's pattern, one Python loop per pair and permutation (timed on
  5 pairs and scaled to 190).

Run as a script for the table (medians of repeated runs, ratios)::

    python benchmarks/bench_cluster.py

or with pytest-benchmark::

    python -m pytest benchmarks/bench_cluster.py --benchmark-enable --benchmark-columns=median,iqr,rounds
"""
from __future__ import annotations

import statistics
import time
import warnings
from typing import Any, Callable

import numpy as np
import pytest
from ddpcore.stats import ResampleOptions

N_SYS, N_DOCS, SEGS_PER_DOC, N_ANN = 20, 200, 10, 40
N_BOOT = 1000


def make_table(seed: int = 0) -> Any:
    import polars as pl

    rng = np.random.default_rng(seed)
    n_seg = N_DOCS * SEGS_PER_DOC
    quality = np.linspace(0, 15, N_SYS)
    base = rng.normal(70, 10, n_seg)
    scores = np.clip(np.round(base[:, None] + quality[None, :] + rng.normal(0, 12, (n_seg, N_SYS))), 0, 100)
    doc = np.repeat(np.arange(N_DOCS), SEGS_PER_DOC)
    seg = np.tile(np.arange(SEGS_PER_DOC), N_DOCS)
    ann = rng.integers(0, N_ANN, n_seg)
    domain = np.array(["news", "social", "literary"])[doc % 3]
    return pl.DataFrame({
        "document_id": np.repeat([f"doc{d:04d}" for d in doc], N_SYS),
        "segment_id": np.repeat(seg, N_SYS),
        "system": np.tile([f"sys{k:02d}" for k in range(N_SYS)], n_seg),
        "annotator": np.repeat([f"ann{a}" for a in ann], N_SYS),
        "domain": np.repeat(domain, N_SYS),
        "score": scores.ravel(),
    }), scores, doc


# --------------------------------------------------------------------------- peers


def scipy_loop_full(x: np.ndarray) -> np.ndarray:
    """p[i, j] = scipy.stats.wilcoxon(x_i - x_j, alternative="greater") for all ordered pairs."""
    import scipy.stats

    s = x.shape[1]
    p = np.full((s, s), np.nan)
    for i in range(s):
        for j in range(s):
            if i != j:
                p[i, j] = scipy.stats.wilcoxon(x[:, i] - x[:, j], alternative="greater").pvalue
    return p


def scipy_wmt25_walk(x: np.ndarray) -> list[tuple[int, int]]:
    """Only the scipy calls of the WMT25 rank-range walks (systems sorted by mean)."""
    import scipy.stats

    order = np.argsort(-x.mean(axis=0), kind="stable")
    cols = [x[:, k] for k in order]

    def sig(a: np.ndarray, b: np.ndarray) -> bool:
        d = [u - v for u, v in zip(a, b) if not (np.isnan(u) or np.isnan(v))]
        return scipy.stats.wilcoxon(d, alternative="greater").pvalue < 0.05

    ranges = []
    for i in range(len(cols)):
        lo = i + 1
        for b in cols[:i][::-1]:
            if sig(b, cols[i]):
                break
            lo -= 1
        hi = i + 1
        for b in cols[i + 1:]:
            if sig(cols[i], b):
                break
            hi += 1
        ranges.append((lo, hi))
    return ranges


def scipy_batched(x: np.ndarray) -> np.ndarray:
    import scipy.stats

    i, j = np.triu_indices(x.shape[1], k=1)
    d = (x[:, i] - x[:, j]).T
    g = scipy.stats.wilcoxon(d, axis=1, alternative="greater").pvalue
    le = scipy.stats.wilcoxon(d, axis=1, alternative="less").pvalue
    return np.concatenate([g, le])


def bootstrap_loop(scores: np.ndarray, doc: np.ndarray, n_boot: int = N_BOOT, seed: int = 0) -> np.ndarray:
    """Python loop over resamples: draw documents, recompute every system's mean, compare pairs."""
    rng = np.random.default_rng(seed)
    by_doc = [scores[doc == d] for d in range(N_DOCS)]
    s = scores.shape[1]
    i, j = np.triu_indices(s, k=1)
    le = np.zeros(len(i))
    ge = np.zeros(len(i))
    for _ in range(n_boot):
        draw = rng.integers(0, N_DOCS, N_DOCS)
        m = np.concatenate([by_doc[d] for d in draw]).mean(axis=0)
        delta = m[i] - m[j]
        le += delta <= 0
        ge += delta >= 0
    return np.minimum(1, 2 * np.minimum(le, ge) / n_boot)


def permutation_loop_pairs(scores: np.ndarray, n_pairs: int, n_boot: int = N_BOOT, seed: int = 0) -> list[float]:
    """mt-metrics-eval PermutationSigDiff pattern: a loop per pair and per permutation."""
    rng = np.random.default_rng(seed)
    out = []
    i, j = np.triu_indices(scores.shape[1], k=1)
    for a, b in list(zip(i, j))[:n_pairs]:
        x, y = scores[:, a], scores[:, b]
        delta = x.mean() - y.mean()
        count = 0
        for _ in range(n_boot):
            w1 = rng.binomial(1, 0.5, len(x))
            w2 = 1 - w1
            m1 = w1 * x + w2 * y
            m2 = w2 * x + w1 * y
            if m1.mean() - m2.mean() >= delta:
                count += 1
        out.append(count / n_boot)
    return out


# --------------------------------------------------------------------------- timing table


def _median(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    from ddpcore.stats import cluster_systems, wilcoxon_signed_rank

    warnings.simplefilter("ignore")
    df, scores, doc = make_table()
    i, j = np.triu_indices(N_SYS, k=1)
    dmat = (scores[:, i] - scores[:, j]).T
    cluster_systems(df, "wmt25")  # warm-up: imports, exact-distribution cache
    rows = []

    def add(name: str, fn: Callable[[], Any], repeat: int, scale: float = 1.0) -> float:
        t = _median(fn, repeat) * scale
        rows.append((name, t))
        return t

    ours = add("ddpcore cluster_systems(method='wmt25'), end to end", lambda: cluster_systems(df, "wmt25"), 7)
    kern = add("ddpcore wilcoxon_signed_rank kernel only (190 pairs x 2 alternatives)",
               lambda: (wilcoxon_signed_rank(dmat, "greater"), wilcoxon_signed_rank(dmat, "less")), 7)
    full = add("peer: loop of scipy.stats.wilcoxon over 380 ordered pairs", lambda: scipy_loop_full(scores), 3)
    walk = add("peer: scipy calls of the WMT25 script's walks", lambda: scipy_wmt25_walk(scores), 3)
    batch = add("peer: scipy.stats.wilcoxon(D, axis=1) batched, both alternatives", lambda: scipy_batched(scores), 3)
    add("ddpcore cluster_systems(method='wmt24')", lambda: cluster_systems(df, "wmt24"), 7)
    add("ddpcore cluster_systems(method='wmt24', by_domain=True)", lambda: cluster_systems(df, "wmt24", by_domain=True), 7)
    boot = add(f"ddpcore cluster_systems(method='bootstrap', n_boot={N_BOOT})",
               lambda: cluster_systems(df, "bootstrap", options=ResampleOptions(n_boot=N_BOOT)), 7)
    bloop = add(f"peer: Python loop over {N_BOOT} document resamples", lambda: bootstrap_loop(scores, doc), 3)
    perm = add(f"ddpcore cluster_systems(method='permutation', n_boot={N_BOOT})",
               lambda: cluster_systems(df, "permutation", options=ResampleOptions(n_boot=N_BOOT)), 5)
    ploop = add(f"peer: mt-metrics-eval-style loop, {N_BOOT} permutations x 190 pairs (5 timed, x38)",
                lambda: permutation_loop_pairs(scores, 5), 1, scale=190 / 5)
    print(f"cluster_systems benchmark: {N_SYS} systems x {N_DOCS * SEGS_PER_DOC} segments "
          f"({df.height} rows), median seconds")
    width = max(len(n) for n, _ in rows)
    for name, t in rows:
        print(f"  {name:<{width}}  {t:9.4f}")
    print("ratios (peer / ddpcore):")
    print(f"  wmt25 full p matrix: scipy loop / ddpcore end to end   {full / ours:8.1f}x")
    print(f"  wmt25: WMT25 script's scipy calls / ddpcore end to end {walk / ours:8.1f}x")
    print(f"  wmt25: scipy batched / ddpcore kernel                  {batch / kern:8.1f}x")
    print(f"  bootstrap: Python resample loop / ddpcore              {bloop / boot:8.1f}x")
    print(f"  permutation: per-pair loop (extrapolated) / ddpcore    {ploop / perm:8.1f}x")


# --------------------------------------------------------------------------- pytest-benchmark


@pytest.fixture(scope="module")
def data():
    warnings.simplefilter("ignore")
    return make_table()


@pytest.mark.benchmark(group="cluster wmt25")
def test_ddpcore_wmt25(benchmark, data):
    from ddpcore.stats import cluster_systems

    benchmark(cluster_systems, data[0], "wmt25")


@pytest.mark.benchmark(group="cluster wmt25")
def test_scipy_loop_wmt25(benchmark, data):
    benchmark.pedantic(scipy_loop_full, args=(data[1],), rounds=3)


@pytest.mark.benchmark(group="cluster wmt25")
def test_scipy_wmt25_walk(benchmark, data):
    benchmark.pedantic(scipy_wmt25_walk, args=(data[1],), rounds=3)


@pytest.mark.benchmark(group="cluster other methods")
@pytest.mark.parametrize("method", ["wmt24", "bootstrap", "permutation"])
def test_ddpcore_methods(benchmark, data, method):
    from ddpcore.stats import cluster_systems

    benchmark(cluster_systems, data[0], method, options=ResampleOptions(n_boot=N_BOOT))


@pytest.mark.benchmark(group="cluster other methods")
def test_bootstrap_python_loop(benchmark, data):
    benchmark.pedantic(bootstrap_loop, args=(data[1], data[2]), rounds=3)


if __name__ == "__main__":
    main()
