"""The weighted Kendall tau-b kernel behind ``ddp meta``'s ``tau_b.none`` interval, by walk and block width,
against the peer a user would otherwise run: ``scipy.stats.kendalltau`` on each bootstrap replicate
expanded into its rows (a document drawn k times contributes its cells k times).

Data per size: ``n`` cells in ``n / 200`` documents, a human score on ~30 levels (``round(3 q)``, q
standard normal) and a continuous metric (``q + N(0, 0.8)``), dense 1-based ranks; document weights of
the replicates drawn as a document bootstrap does (multinomial). Rows, one thread, medians of
``--rounds`` (ms per replicate):

- *walk in human order*: the tree over the metric's ranks (one per distinct score), one replicate per
  walk above 16,384 ranks (``stats_meta.block_width``), the walk ``ddp meta`` used for every bin before
  2026-12-04;
- *walk in metric order*: the tree over the ~30 human ranks, 32 replicates per walk (what ``ddp meta``
  does when the human has fewer distinct values);
- *one replicate per walk, metric order* (``tau_b_weighted_one``, the reference walk of the tests);
- *scipy*: ``scipy.stats.kendalltau`` on the expanded rows (timed on a few replicates).

Every kernel row is checked bit for bit against ``tau_b_weighted_one`` and to 1e-12 against scipy.

    python benchmarks/tau_kernel_table.py [--sizes 10000,100000,400000] [--reps 64] [--rounds 3]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import scipy.stats

from ddpcore._native import load
from ddpcore.stats.meta import _dense_ranks


def data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = rng.normal(size=n)
    h, m = np.round(q * 3), q + rng.normal(scale=0.8, size=n)
    n_docs = max(2, n // 200)
    doc = rng.integers(0, n_docs, n).astype(np.int64)
    return h, m, doc, np.full(n_docs, 1.0 / n_docs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,400000", help="cells, comma-separated")
    ap.add_argument("--reps", type=int, default=64, help="bootstrap replicates per timed call")
    ap.add_argument("--rounds", type=int, default=3, help="timed calls per row (median)")
    ap.add_argument("--scipy-reps", type=int, default=3, help="replicates timed for scipy")
    args = ap.parse_args()
    k = load("stats_meta")
    print("| cells | walk in human order (tree over metric ranks) | walk in metric order (tree over ~30 human "
          "ranks, 32 per walk) | one replicate per walk, metric order | scipy kendalltau on the expanded rows | "
          "metric order vs human order | vs scipy |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in [int(x) for x in args.sizes.split(",")]:
        h, m, doc, p = data(n)
        rng = np.random.default_rng(1)
        w = rng.multinomial(p.size, p, size=args.reps).astype(np.float64)
        hr, mr = _dense_ranks(h), _dense_ranks(m)
        oh, om = np.argsort(hr, kind="stable"), np.argsort(mr, kind="stable")
        walks = {
            "human": (hr[oh], mr[oh], doc[oh], int(mr.max())),
            "metric": (mr[om], hr[om], doc[om], int(hr.max())),
        }
        ms: dict[str, float] = {}
        outs: dict[str, np.ndarray] = {}
        for name, (a, b, d, nb) in walks.items():
            times = []
            for _ in range(args.rounds):
                out = np.empty(args.reps)
                t = time.perf_counter()
                k.tau_b_weighted_reps(a, b, d, w, nb, out, 1)
                times.append((time.perf_counter() - t) / args.reps * 1e3)
            ms[name], outs[name] = statistics.median(times), out
        a, b, d, nb = walks["metric"]
        times, one = [], []
        for r in range(min(args.reps, 8)):
            t = time.perf_counter()
            one.append(k.tau_b_weighted_one(a, b, d, w[r], nb))
            times.append((time.perf_counter() - t) * 1e3)
        ms["one"] = statistics.median(times)
        if not (np.array_equal(outs["human"], outs["metric"]) and np.array_equal(outs["metric"][:len(one)], one)):
            raise SystemExit(f"{n}: the walks disagree")
        times = []
        for r in range(args.scipy_reps):
            t = time.perf_counter()
            rows = w[r, doc].astype(int)
            v = scipy.stats.kendalltau(np.repeat(h, rows), np.repeat(m, rows), variant="b").statistic
            times.append((time.perf_counter() - t) * 1e3)
            if abs(v - outs["metric"][r]) > 1e-12:
                raise SystemExit(f"{n}: replicate {r} differs from scipy: {v} vs {outs['metric'][r]}")
        ms["scipy"] = statistics.median(times)
        print(f"| {n:,} | {ms['human']:.2f} ms | {ms['metric']:.3f} ms | {ms['one']:.2f} ms | {ms['scipy']:.1f} ms | "
              f"{ms['human'] / ms['metric']:.1f}x | {ms['scipy'] / ms['metric']:.0f}x |")


if __name__ == "__main__":
    main()
