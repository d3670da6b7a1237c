"""Threads that never cost (issue 25 §1): every OpenMP kernel at its default thread count vs 1 thread,
idle and under a competing load that this script starts itself (one busy process per core).

    python benchmarks/threads_table.py [--rounds 3] [--skip-options] [--only KERNEL ...]

For each kernel a fresh worker process (``--worker NAME``) builds its input, warms up, then times
``--rounds`` rounds, each running the default thread count and ``threads=1`` back to back (the
order alternates), so both see the same load. Printed: the median and range (min-max) of the wall
times, the ratio default / 1 thread (< 1 = the threads pay) and the load average (``os.getloadavg``)
before and after each phase. "idle" = no load started by the script; other jobs on the machine
still count, and their load is quoted.

The "options" section measures the bootstrap under the settings issue 25 asks to compare: GNU
OpenMP's default (active) wait policy with the old 2**23-addition blocks (before issue 25), passive
with the old blocks, and the shipped configuration (passive, set by ddpcore, 2**25-addition blocks).

Runs in about 2 minutes on 2 idle cores (12 minutes at load 15); prints a markdown table.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# --------------------------------------------------------------------------- workloads


def _bootstrap_table(n_docs: int = 10_000, n_systems: int = 10, n_segments: int = 3, seed: int = 0) -> Any:
    """The issue's bootstrap: 10 k documents x 10 systems x 3 segments (300 k rows)."""
    import polars as pl

    rng = np.random.default_rng(seed)
    n = n_docs * n_systems * n_segments
    doc = np.repeat(np.arange(n_docs), n_systems * n_segments)
    seg = np.tile(np.repeat(np.arange(n_segments), n_systems), n_docs)
    sys_ = np.tile(np.arange(n_systems), n_docs * n_segments)
    score = rng.normal(70, 12, n) + 0.4 * sys_ + np.repeat(rng.normal(0, 6, n_docs), n_systems * n_segments)
    return pl.DataFrame({"document_id": doc, "segment_id": seg, "system": [f"sys{k:02d}" for k in sys_],
                         "score": score})


def _tau_table(n_docs: int = 5_000, n_systems: int = 10, seed: int = 0) -> Any:
    import polars as pl

    t = _bootstrap_table(n_docs, n_systems, 1, seed)
    return pl.concat([t.with_columns(pl.lit("DOC").alias("condition")),
                      t.with_columns(pl.lit("MIX").alias("condition"), pl.col("score") * 0.9 + 3)])


def workload(name: str) -> Callable[[int | None], Any]:
    """A function of the thread count (None = the kernel's default) running one OpenMP kernel."""
    from ddpcore.stats import ResampleOptions

    if name == "bootstrap":
        from ddpcore.stats.bootstrap import bootstrap_system_means

        t = _bootstrap_table()
        return lambda th: bootstrap_system_means(t, options=ResampleOptions(n_boot=10_000, seed=1, threads=th))
    if name == "bootstrap_100k":
        from ddpcore.stats.bootstrap import resample_sums

        vals = np.random.default_rng(0).normal(size=(100_000, 10))
        return lambda th: resample_sums(vals, n_boot=1_000, seed=1, threads=th, max_seconds=0)
    if name == "tau":
        from ddpcore.stats.bootstrap import bootstrap_tau

        t = _tau_table()
        return lambda th: bootstrap_tau(t, "DOC", "MIX", options=ResampleOptions(n_boot=10_000, seed=1, threads=th))
    if name == "compare":
        import bench_compare as bc

        t = bc.score_table(n_systems=20)
        return lambda th: bc.run_ddpcore(t, n_boot=1_000, n_ar=5_000, threads=th)
    if name == "cluster":
        import bench_cluster as bcl
        from ddpcore.stats.clustering import cluster_systems

        t = bcl.make_table()[0]
        return lambda th: cluster_systems(t, method="permutation",
                                          options=ResampleOptions(n_boot=1_000, seed=0, threads=th))
    if name == "distances":
        from _ddp_corpus import synthetic_items
        from ddpcore._native import load

        k = load("ddp_kernels")
        it = synthetic_items(4_000_000)

        def run(th: int | None) -> Any:
            return k.compute_distances(it["offsets"], it["kind"], it["sent"], it["ent"], it["compat"], it["seg"],
                                       it["gsent"], it["n_ent"], it["n_seg"], it["n_sent"], False,
                                       0 if th is None else th)
        return run
    if name == "alpha_ratio":
        from ddpcore._native import load

        k = load("stats_kernels")
        v = np.sort(np.random.default_rng(0).normal(size=20_000)) + 10.0
        c = np.ones_like(v)
        return lambda th: k.ratio_pair_sum(v, c, 0 if th is None else th)
    raise SystemExit(f"unknown workload {name!r}")


KERNELS = [
    ("bootstrap", "document bootstrap, 10 k docs x 10 systems x 3 segments, B 10 k (resample_sums_pcg64)"),
    ("bootstrap_100k", "resample sums, 100 k units x 10 columns, B 1 k (resample_sums_pcg64)"),
    ("tau", "bootstrap_tau, 5 k docs x 10 systems x 2 conditions, B 10 k (+ tau_b_rows)"),
    ("compare", "compare_systems, 20 systems x 10 k docs, B 1 k + AR 5 k (stats_compare)"),
    ("cluster", "cluster_systems permutation, 20 systems x 2 k segments, 1 k (stats_cluster)"),
    ("distances", "compute_distances, 4 M anchors (ddp_kernels)"),
    ("alpha_ratio", "ratio_pair_sum, 20 k distinct values (stats_kernels)"),
]


def worker(name: str, rounds: int, block_work: int | None) -> None:
    if block_work:
        import ddpcore.stats.bootstrap as bs

        bs._BLOCK_WORK = block_work
    fn = workload(name)
    fn(None)
    fn(1)
    times: dict[str, list[float]] = {"default": [], "1": []}
    for r in range(rounds):
        order = (None, 1) if r % 2 == 0 else (1, None)
        for th in order:
            t0 = time.perf_counter()
            fn(th)
            times["default" if th is None else "1"].append(time.perf_counter() - t0)
    from ddpcore._native import WAIT_POLICY, load

    times["policy"] = WAIT_POLICY  # type: ignore[assignment]
    times["threads"] = load("stats_kernels").max_threads()  # type: ignore[assignment]
    print(json.dumps(times))


# --------------------------------------------------------------------------- driver


def busy_processes(n: int) -> list[subprocess.Popen]:
    """``n`` processes spinning on one core each (ended by :func:`stop`)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def run_worker(name: str, rounds: int, env: dict[str, str] | None = None, block_work: int | None = None) -> dict:
    cmd = [sys.executable, __file__, "--worker", name, "--rounds", str(rounds)]
    if block_work:
        cmd += ["--block-work", str(block_work)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise SystemExit(f"worker {name} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def fmt(ts: list[float]) -> str:
    return f"{statistics.median(ts):.3f} ({min(ts):.3f}-{max(ts):.3f})"


def load_str() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds per kernel and thread count (default 3)")
    ap.add_argument("--skip-options", action="store_true", help="skip the wait-policy / block-size comparison")
    ap.add_argument("--only", nargs="*", help="kernels to run (default: all)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--block-work", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.rounds, args.block_work)
        return 0
    n_cores = len(os.sched_getaffinity(0))
    kernels = [k for k in KERNELS if not args.only or k[0] in args.only]
    print(f"{n_cores} cores; busy = {n_cores} spinning processes started by this script; "
          f"rounds = {args.rounds}; wall seconds, median (min-max)\n")
    print("| kernel | load | load avg before/after | default threads | 1 thread | default / 1 |")
    print("|---|---|---|---|---|---|")
    for phase in ("idle", "busy"):
        procs = busy_processes(n_cores) if phase == "busy" else []
        try:
            if procs:
                time.sleep(1.0)
            for name, label in kernels:
                before = load_str()
                res = run_worker(name, args.rounds)
                ratio = statistics.median(res["default"]) / statistics.median(res["1"])
                print(f"| {label} | {phase} | {before} / {load_str()} | {res['threads']}: {fmt(res['default'])} | "
                      f"{fmt(res['1'])} | {ratio:.2f} |", flush=True)
        finally:
            stop(procs)
    if args.skip_options:
        return 0
    print("\nOptions (document bootstrap, 10 k docs, B 10 k):\n")
    print("| setting | load | load avg before/after | 2 threads | 1 thread | 2 / 1 |")
    print("|---|---|---|---|---|---|")
    base_env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    options = [
        ("active wait, 2**23 blocks (before issue 25)", dict(base_env, OMP_WAIT_POLICY="active"), 1 << 23),
        ("passive wait, 2**23 blocks", base_env, 1 << 23),
        ("passive wait (ddpcore default), 2**25 blocks (shipped)", base_env, None),
        ("active wait, 2**25 blocks", dict(base_env, OMP_WAIT_POLICY="active"), None),
    ]
    for phase in ("idle", "busy"):
        procs = busy_processes(n_cores) if phase == "busy" else []
        try:
            if procs:
                time.sleep(1.0)
            for label, env, bw in options:
                before = load_str()
                res = run_worker("bootstrap", args.rounds, env=env, block_work=bw)
                ratio = statistics.median(res["default"]) / statistics.median(res["1"])
                print(f"| {label} | {phase} | {before} / {load_str()} | {fmt(res['default'])} | {fmt(res['1'])} | "
                      f"{ratio:.2f} |", flush=True)
        finally:
            stop(procs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
