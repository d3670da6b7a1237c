"""Benchmark of ``ddp select --evaluate`` (issue 22 §2): 1,000 random subsets per budget in <= 10 s.

Problem: the WMT23 en-de MQM shape (460 complete segments x 13 systems, MQM-like tied scores) and a
larger one (2,000 segments x 15 systems); one budget per run (0.25 and 0.5), n_random = 1,000: every
measure (mean, share perfect, per-system Kendall tau-b, subset2evaluate's cluster count, Spearman)
for the selection and the 1,000 random subsets, plus the parity scan. The peer is the per-subset loop
of subset2evaluate's ``evaluate.py`` (restated in tests/test_select_evaluate.py: scipy's wilcoxon,
spearmanr and kendalltau, one subset at a time), timed on 50 subsets and scaled to 1,000.

    python benchmarks/bench_select_evaluate.py        # table: medians of 3 runs, the peer, the ratio, the load
    python -m pytest benchmarks/bench_select_evaluate.py --benchmark-enable --benchmark-columns=median,iqr,rounds
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ddpcore.curate.evaluate import EvaluateOptions, evaluate_arrays

SHAPES = {"wmt23-ende (460 x 13)": (460, 13), "2000 x 15": (2000, 15)}


def make(n: int, s: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    difficulty = rng.gamma(2.0, 2.0, n)
    h = np.round(np.clip(rng.normal(0, 1, s)[None, :] * 3 - 2 * difficulty[:, None] + rng.normal(0, 5, (n, s)), -25, 0))
    est = np.round(difficulty + rng.normal(0, 1, n))
    return h, est, np.arange(n) // 4


def run(n: int, s: int, budget: float, n_random: int = 1000) -> object:
    h, e, d = make(n, s)
    return evaluate_arrays(h, e, d, options=EvaluateOptions(budgets=(budget,), n_random=n_random))


@pytest.mark.parametrize("budget", [0.25, 0.5])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_bench_select_evaluate(benchmark, shape: str, budget: float) -> None:  # type: ignore[no-untyped-def]
    n, s = SHAPES[shape]
    benchmark.pedantic(run, args=(n, s, budget), rounds=3, iterations=1)


def _peer(n: int, s: int, budget: float, n_subsets: int) -> float:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from test_select_evaluate import oracle_clusters, oracle_spearman, oracle_tau

    h, e, _ = make(n, s)
    k = int(np.ceil(budget * n))
    rng = np.random.default_rng(0)
    t = time.perf_counter()
    for _ in range(n_subsets):
        sub = rng.permutation(n)[:k]
        oracle_clusters(h[sub]), oracle_spearman(h[sub], h), oracle_tau(e[sub], h[sub])
        h[sub].mean(), (h[sub] == 0).mean()
    return time.perf_counter() - t


def main() -> None:
    print(f"load (uptime): {os.getloadavg()}  cpus: {os.cpu_count()}")
    print(f"{'problem':28s} {'budget':>6s} {'ddpcore s (median of 3)':>24s} {'peer loop s (x20 of 50)':>24s} {'ratio':>7s}")
    for name, (n, s) in SHAPES.items():
        for b in (0.25, 0.5):
            times = []
            for _ in range(3):
                t = time.perf_counter()
                run(n, s, b)
                times.append(time.perf_counter() - t)
            peer = _peer(n, s, b, 50) * 20
            med = statistics.median(times)
            print(f"{name:28s} {b:6.2f} {med:14.2f} [{min(times):.2f}-{max(times):.2f}] {peer:24.1f} {peer / med:7.1f}")
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
