"""The replicate walks behind ``ddp meta``'s ``tau_b.none`` and ``acc_eq.none`` intervals, by arithmetic:
double Fenwick trees (``f64``, the walks before 2026-12-07), 32-bit integer trees on the baseline instruction
set (``i32``), 32-bit trees with AVX2 (``i32-avx2``, the default where the CPU has it), and the default with
``acc_eq.none`` riding on ``tau_b.none``'s walk (``tau_acc_weighted_reps``: one walk gives both, when the
metric's cells within the tie threshold of each other are few).

Data per size: ``n`` cells in ``n / 200`` documents, the human on ~26 levels (``round(3 q)``), a continuous
metric (``q + N(0, 0.8)``), multinomial document weights as the document bootstrap draws them. Each row is
the time of tau-b plus acc23 for the same replicates, one thread, in ms per replicate (median of
``--rounds``); every path's values are checked bit for bit against the double walk before timing. The peer a
user would otherwise run, ``scipy.stats.kendalltau`` on each expanded replicate, is in tau_kernel_table.py.

    python benchmarks/meta_kernel_table.py [--sizes 10000,100000,400000] [--reps 64] [--rounds 3] [--eps 0,4.6e-5]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import time

import numpy as np

from ddpcore._native import load
from ddpcore.stats.meta import _dense_ranks

K = load("stats_meta")


def inputs(n: int, reps: int, eps: float, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    q = rng.normal(size=n)
    h, m = np.round(q * 3), q + rng.normal(scale=0.8, size=n)
    n_docs = max(2, n // 200)
    doc = rng.integers(0, n_docs, n).astype(np.int64)
    w = rng.multinomial(n_docs, np.full(n_docs, 1 / n_docs), size=reps).astype(np.float64)
    hr, mr = _dense_ranks(h), _dense_ranks(m)
    o = np.argsort(m, kind="stable")
    b = np.lexsort((m, hr))
    return {"tau": (mr[o], hr[o], doc[o]), "acc": [np.ascontiguousarray(x) for x in (m[o], hr[o], doc[o], m[b],
                                                                                     hr[b], doc[b])],
            "m": np.ascontiguousarray(m[o]), "w": w, "L": int(hr.max()), "eps": eps}


def run_path(path: str, a: dict) -> tuple[np.ndarray, np.ndarray]:
    tau, acc = np.empty(a["w"].shape[0]), np.empty(a["w"].shape[0])
    K.set_block_path("auto" if path.startswith("auto") else path)
    if path == "auto+acc ride":
        g, t, d = a["tau"]
        if K.tau_acc_weighted_reps(g, t, a["m"], d, a["w"], a["L"], a["eps"], tau, acc, 1):
            return tau, acc
    K.tau_b_weighted_reps(*a["tau"], a["w"], a["L"], tau, 1)
    K.acc_eq_weighted_reps(*a["acc"], a["w"], a["L"], a["eps"], acc, 1, 0)
    return tau, acc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000,400000", help="cells, comma-separated")
    ap.add_argument("--reps", type=int, default=64, help="bootstrap replicates per timed call")
    ap.add_argument("--rounds", type=int, default=3, help="timed calls per row (median)")
    ap.add_argument("--eps", default="0,4.6e-5", help="tie thresholds, comma-separated (the window grows with it)")
    a = ap.parse_args()
    paths = ["f64", "i32"] + (["i32-avx2"] if K.block_path() == "i32-avx2" else []) + ["auto+acc ride"]
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(f"auto resolves to {K.block_path()} here\n")
    print("| cells | epsilon | mean window | " + " | ".join(paths) + " | f64 / fastest |")
    print("|---:|---:|---:|" + "---:|" * (len(paths) + 1))
    try:
        for n in [int(x) for x in a.sizes.split(",")]:
            for eps in [float(x) for x in a.eps.split(",")]:
                d = inputs(n, a.reps, eps)
                ms = d["m"]
                window = float((np.arange(ms.size) - np.searchsorted(ms, ms - eps, side="left")).mean())
                want = run_path("f64", d)
                times = {}
                for p in paths:
                    got = run_path(p, d)
                    assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(got, want)), p
                    ts = []
                    for _ in range(a.rounds):
                        t0 = time.perf_counter()
                        run_path(p, d)
                        ts.append(time.perf_counter() - t0)
                    times[p] = statistics.median(ts) / a.reps * 1e3
                best = min(times.values())
                print(f"| {n:,} | {eps:g} | {window:.1f} | " + " | ".join(f"{times[p]:.3f}" for p in paths)
                      + f" | {times['f64'] / best:.2f}x |")
    finally:
        K.set_block_path("auto")


if __name__ == "__main__":
    main()
