"""Resampling near the limit (issue 25 §2): where the bootstrap's time goes, and ddpcore vs scipy.

    python benchmarks/bootstrap_limit.py [--rounds 3] [--skip-scipy] [--skip-busy]

Part 1, *where the time goes* (one thread unless said; values of 10 k and 100 k units x 10 columns,
the per-document sums of 10 systems; one draw = one unit's row added to one replicate's sums):

- *RNG*: ``pcg64_raw`` - the kernel's PCG64 stream alone (words/s), next to numpy's own
  ``PCG64.random_raw`` (the reference implementation; writes the words to memory);
- *gather + reduction*: ``resample_sums_indices`` on a precomputed random index matrix (no RNG;
  reads 8 B of index per draw);
- *reduction alone*: the same kernel on sorted indices (rows read in order: the adds at cache speed);
- *memory bandwidth*: ``numpy.copyto`` of 256 MiB (read + write bytes / s), 1 thread and 2 threads in
  parallel (two processes), and what it allows: the gather reads ``ceil(80 B / 64 B)`` = 2 cache lines
  a draw, so a bandwidth-bound gather would run at ``bandwidth / 128 B`` draws/s;
- *full kernel*: ``resample_sums_pcg64`` (RNG + gather + reduction, chunked, prefetching), 1 and 2
  threads, and the end-to-end ``bootstrap_system_means`` on 100 k documents x 10 systems x 3
  segments, B 10 k (the issue's target: >= 200 M resample-documents/s idle on 2 cores).

Part 2, *vs scipy*: ``bootstrap_system_means`` (10 k documents x 10 systems x 3 segments, B 10 k,
default threads) against ``scipy.stats.bootstrap`` (paired, vectorised, batched, percentile; B 1 k,
scaled x10 - its cost is linear in B), alternated in each round, idle and under one busy process per
core started by the script. The issue's target: >= 40x in both.

Medians (min-max) of ``--rounds`` rounds; the load average is printed with every row. About 2-3
minutes on 2 idle cores; prints markdown.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

N_COLS = 10


def load_str() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def timed(fn: Callable[[], Any], rounds: int) -> list[float]:
    fn()
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def fmt_rate(n: float, ts: list[float], unit: str = "M/s") -> str:
    med = statistics.median(ts)
    return f"{n / med / 1e6:,.0f} {unit} ({n / max(ts) / 1e6:,.0f}-{n / min(ts) / 1e6:,.0f})"


def _copy_bw(nbytes: int, rounds: int, q: Any) -> None:
    a = np.ones(nbytes // 8)
    b = np.empty_like(a)
    ts = timed(lambda: np.copyto(b, a), rounds)
    q.put(ts)


def bandwidth(rounds: int, procs: int) -> list[float]:
    """Read + write GB/s of numpy.copyto over 256 MiB, summed over ``procs`` parallel processes."""
    nbytes = 256 << 20
    q: Any = mp.Queue()
    ps = [mp.Process(target=_copy_bw, args=(nbytes, rounds, q)) for _ in range(procs)]
    for p in ps:
        p.start()
    res = [q.get() for _ in ps]
    for p in ps:
        p.join()
    # per round: the slowest process's time; bytes moved = 2 x nbytes per process
    per_round = [max(r[i] for r in res) for i in range(rounds)]
    return [2 * nbytes * procs / t / 1e9 for t in per_round]


def part1(rounds: int) -> None:
    from ddpcore._native import WAIT_POLICY, load
    from ddpcore.stats.bootstrap import bootstrap_system_means, pcg64_start
    from ddpcore.stats import ResampleOptions
    from threads_table import _bootstrap_table

    k = load("stats_kernels")
    print(f"## Where the time goes (OpenMP wait policy: {WAIT_POLICY}; load before: {load_str()})\n")
    bw1, bw2 = bandwidth(rounds, 1), bandwidth(rounds, 2)
    print("| piece | units | rate, median (range) | ns per draw, 1 thread | load after |")
    print("|---|---|---|---|---|")
    for label, bws in (("memory bandwidth, numpy.copyto 256 MiB, 1 process", bw1),
                       ("memory bandwidth, 2 processes", bw2)):
        med = statistics.median(bws)
        print(f"| {label} | - | {med:.1f} GB/s ({min(bws):.1f}-{max(bws):.1f}) -> gather bound "
              f"{med * 1e9 / 128 / 1e6:,.0f} M draws/s | - | {load_str()} |", flush=True)
    n_words = 20_000_000
    words = np.empty(n_words, dtype=np.uint64)
    st = pcg64_start(1)
    ts = timed(lambda: k.pcg64_raw(*st, 0, words), rounds)
    print(f"| RNG: kernel PCG64 stream (pcg64_raw) | - | {fmt_rate(n_words, ts, 'M words/s')} | "
          f"{statistics.median(ts) / n_words * 1e9:.2f} | {load_str()} |")
    ts = timed(lambda: np.random.PCG64(1).random_raw(n_words), rounds)
    print(f"| RNG: numpy PCG64.random_raw (reference) | - | {fmt_rate(n_words, ts, 'M words/s')} | "
          f"{statistics.median(ts) / n_words * 1e9:.2f} | {load_str()} |", flush=True)
    for n_units in (10_000, 100_000):
        vals = np.random.default_rng(0).normal(size=(n_units, N_COLS))
        n_rep = max(20, 20_000_000 // n_units)
        idx = np.random.default_rng(1).integers(0, n_units, size=(n_rep, n_units))
        out = np.empty((n_rep, N_COLS))
        draws = n_rep * n_units
        ts = timed(lambda: k.resample_sums_indices(idx, vals, out, 1), rounds)
        print(f"| gather + reduction (resample_sums_indices, random) | {n_units:,} | {fmt_rate(draws, ts)} | "
              f"{statistics.median(ts) / draws * 1e9:.2f} | {load_str()} |")
        idx.sort(axis=1)
        ts = timed(lambda: k.resample_sums_indices(idx, vals, out, 1), rounds)
        print(f"| reduction alone (sorted indices) | {n_units:,} | {fmt_rate(draws, ts)} | "
              f"{statistics.median(ts) / draws * 1e9:.2f} | {load_str()} |")
        del idx
        for th in (1, 2):
            ts = timed(lambda: k.resample_sums_pcg64(*st, vals, out, n_units, th), rounds)
            print(f"| full kernel resample_sums_pcg64, {th} thread(s) | {n_units:,} | {fmt_rate(draws, ts)} | "
                  f"{statistics.median(ts) / draws * 1e9 * th:.2f} (x threads) | {load_str()} |", flush=True)
    table = _bootstrap_table(n_docs=100_000)
    n_boot = 10_000  # the run (1e9 resample-documents)
    for th in (None, 1):
        ts = timed(lambda: bootstrap_system_means(table, options=ResampleOptions(n_boot=n_boot, seed=1, threads=th,
                                                                                max_seconds=0)), rounds)
        print(f"| bootstrap_system_means end to end, 100 k docs x 10 systems x 3 segments, B {n_boot:,}, "
              f"{'default' if th is None else 1} thread(s) | 100,000 | {fmt_rate(100_000 * n_boot, ts, 'M resample-docs/s')} "
              f"| - | {load_str()} |", flush=True)


def part2(rounds: int, busy: bool) -> None:
    import bench_stats as bs
    from ddpcore.stats.bootstrap import bootstrap_system_means
    from ddpcore.stats import ResampleOptions
    from threads_table import _bootstrap_table, busy_processes, stop

    table = _bootstrap_table()
    wide = table.group_by(["document_id", "system"]).agg(
        __import__("polars").col("score").sum().alias("s"), __import__("polars").len().alias("n")).sort(
        ["document_id", "system"])
    n_docs = table["document_id"].n_unique()
    sums = wide["s"].to_numpy().reshape(n_docs, -1)
    counts = wide["n"].to_numpy().astype(float).reshape(n_docs, -1)

    def ddp() -> Any:
        return bootstrap_system_means(table, options=ResampleOptions(n_boot=10_000, seed=1))

    def scipy() -> Any:
        return bs.scipy_bootstrap_means(sums, counts, 1_000)

    print("\n## ddpcore vs scipy.stats.bootstrap, 10 k documents x 10 systems x 3 segments\n")
    print("| load | load avg before/after | ddpcore B 10 k | scipy B 1 k x 10 | ratio (median of rounds) |")
    print("|---|---|---|---|---|")
    for phase in ("idle", "busy") if busy else ("idle",):
        procs = busy_processes(len(os.sched_getaffinity(0))) if phase == "busy" else []
        try:
            if procs:
                time.sleep(1.0)
            before = load_str()
            ddp()
            scipy()
            td, tsc, ratios = [], [], []
            for _ in range(rounds):
                t = time.perf_counter()
                ddp()
                td.append(time.perf_counter() - t)
                t = time.perf_counter()
                scipy()
                tsc.append(10 * (time.perf_counter() - t))
                ratios.append(tsc[-1] / td[-1])
            print(f"| {phase} | {before} / {load_str()} | {statistics.median(td):.3f} s ({min(td):.3f}-{max(td):.3f}) | "
                  f"{statistics.median(tsc):.1f} s ({min(tsc):.1f}-{max(tsc):.1f}) | {statistics.median(ratios):.0f}x "
                  f"({min(ratios):.0f}-{max(ratios):.0f}) |", flush=True)
        finally:
            stop(procs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds per row (default 3)")
    ap.add_argument("--skip-scipy", action="store_true", help="only part 1")
    ap.add_argument("--skip-busy", action="store_true", help="part 2 idle only")
    ap.add_argument("--skip-limits", action="store_true", help="only part 2")
    args = ap.parse_args()
    print(f"{len(os.sched_getaffinity(0))} cores, load {load_str()} (1/5/15 min)\n")
    if not args.skip_limits:
        part1(args.rounds)
    if not args.skip_scipy:
        part2(args.rounds, not args.skip_busy)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
