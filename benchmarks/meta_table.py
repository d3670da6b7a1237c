"""``ddp meta`` on the issue-22 benchmark size, and mt-metrics-eval's ``PermutationSigDiff`` loop on the same work.

Data: 20 systems x 20,000 segments (2,000 documents of 10) x 5 metrics, DDP uniform on 0..29 (bins
0,1,5,15,50,inf), human scores on a few levels (ties), seeded. ``ddp meta`` (``meta_evaluate``) with 1,000
document resamples and 10,000 permutations, again with ``n_perm=0`` and with ``spa_ci_perm=0`` (no SPA
interval; its difference to the full run is the SPA bootstrap's cost), with the replicate walks as they were
before 2026-12-07 (``old_kernels``: double trees, ``acc_eq.none`` on its own walk; the same figures) and with
``tie_sample=0`` (no
``acc_eq.none`` in bins above ``--max-pairs``, which is every bin here: its difference is the cost of the
sampled tie calibration and the exact count at its threshold): the n_perm difference is the
metric-vs-metric permutation test (4 statistics x 6 bins x 10 metric pairs).

The peer: a re-implementation (from reading google-research/mt-metrics-eval ``stats.py``; pure
numpy/scipy as there) of ``PermutationSigDiff``'s loop: z-score both metrics, then per trial one
``np.random.binomial`` coin per score, mix, and recompute the correlation (``average_by="none"``: one
``scipy.stats.pearsonr``; ``"item"``: ``pearsonr`` / ``kendalltau`` per segment, NaN dropped, mean).
Early stopping is off (``block_size = k``) so both sides do 10,000 trials. A full peer run of that work
takes hours, so its per-trial time is measured on a few trials per (statistic, bin) and multiplied by
10,000 trials x 10 pairs (the extrapolation is said in the table). acc_eq.item is left out of the peer
side (its ``KendallWithTiesOpt`` re-calibrates every trial in pure Python: minutes per trial); ours
includes it, so the ratio is conservative.

    python benchmarks/meta_table.py [--rounds 3] [--peer-trials 2]
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import time
import warnings

import numpy as np
import polars as pl
import scipy.stats

N_SYS, N_SEG, SEG_PER_DOC, N_MET = 20, 20_000, 10, 5
EDGES = [0, 1, 5, 15, 50, math.inf]


def make_data(seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    n_docs = N_SEG // SEG_PER_DOC
    doc = np.repeat(np.arange(n_docs), SEG_PER_DOC)
    seg = np.tile(np.arange(SEG_PER_DOC), n_docs)
    prof = pl.DataFrame({"document_id": doc, "segment_id": seg, "ddp": rng.integers(0, 30, N_SEG)})
    D = np.repeat(doc, N_SYS)
    q = rng.normal(size=D.size)
    cols = {"document_id": D, "segment_id": np.repeat(seg, N_SYS), "system": np.tile(np.arange(N_SYS), N_SEG),
            "human": np.round(q * 3)}
    for k in range(N_MET):
        cols[f"m{k}"] = q + rng.normal(scale=0.5 + 0.3 * k, size=D.size)
    return prof, pl.DataFrame(cols)


CPU: list[tuple[str, float]] = []  # (what, CPU seconds of the process) of every run_ddp call


def run_ddp(prof: pl.DataFrame, scores: pl.DataFrame, n_perm: int, spa_ci_perm: int | None = None,
            what: str = "", tie_sample: int | None = None, old_kernels: bool = False) -> float:
    import ddpcore.stats.meta as M
    from ddpcore._native import load
    from ddpcore.stats.meta import MetaTests, meta_evaluate
    from ddpcore.stats.options import ResampleOptions

    # old_kernels: the replicate walks as before 2026-12-07 (double trees; acc_eq.none on its own walk), the
    # same figures (every path gives the same bits)
    load("stats_meta").set_block_path("f64" if old_kernels else "auto")
    fused = M.FUSED_MAX_WINDOW
    M.FUSED_MAX_WINDOW = -1.0 if old_kernels else fused

    extra = {} if spa_ci_perm is None else {"spa_ci_perm": spa_ci_perm}
    if tie_sample is not None:
        extra["tie_sample"] = tie_sample
    t, c = time.perf_counter(), time.process_time()
    try:
        meta_evaluate(prof, scores, human_col="human", bins=EDGES, options=ResampleOptions(n_boot=1000, seed=0),
                      tests=MetaTests(n_perm=n_perm, **extra))
    finally:
        load("stats_meta").set_block_path("auto")
        M.FUSED_MAX_WINDOW = fused
    CPU.append((what, time.process_time() - c))
    return time.perf_counter() - t


# --------------------------------------------------------------------------- the peer's loop


def _peer_corr(corr: str, gold: np.ndarray, m: np.ndarray, bounds: list[tuple[int, int]]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if corr == "pearson.none":
            vals = [scipy.stats.pearsonr(gold, m)[0]]
        elif corr == "pearson.item":
            vals = [scipy.stats.pearsonr(gold[b:e], m[b:e])[0] for b, e in bounds]
        else:
            vals = [scipy.stats.kendalltau(gold[b:e], m[b:e])[0] for b, e in bounds]
        vals = np.asarray(vals)[~np.isnan(vals)]
        return float(np.average(vals)) if len(vals) else 0.0


def peer_seconds_per_trial(gold: np.ndarray, m1: np.ndarray, m2: np.ndarray, lens: list[int], corr: str,
                           trials: int) -> float:
    """PermutationSigDiff's loop (z-score, coin per score, mix, two correlations), ``trials`` trials timed."""
    s1, s2 = scipy.stats.zscore(m1), scipy.stats.zscore(m2)
    starts = np.r_[0, np.cumsum(lens)]
    bounds = list(zip(starts[:-1], starts[1:]))
    delta = _peer_corr(corr, gold, s2, bounds) - _peer_corr(corr, gold, s1, bounds)
    large = 0
    t = time.perf_counter()
    for _ in range(trials):
        w1 = np.random.binomial(1, 0.5, len(s1))
        w2 = 1 - w1
        a = w1 * s1 + w2 * s2
        b = w2 * s1 + w1 * s2
        large += _peer_corr(corr, gold, b, bounds) - _peer_corr(corr, gold, a, bounds) >= delta
    return (time.perf_counter() - t) / trials


def peer_work(prof: pl.DataFrame, scores: pl.DataFrame, trials: int) -> tuple[float, dict[str, float]]:
    """Extrapolated seconds of the peer on 10,000 trials x 10 pairs x every bin for 3 statistics."""
    j = scores.join(prof, on=["document_id", "segment_id"]).sort("document_id", "segment_id", "system")
    ddp = j["ddp"].to_numpy()
    b = np.searchsorted(np.asarray(EDGES, float), ddp, side="right") - 1
    h = j["human"].to_numpy()
    m1, m2 = j["m0"].to_numpy(), j["m1"].to_numpy()
    per: dict[str, float] = {}
    total = 0.0
    for corr in ("pearson.none", "pearson.item", "tau_b.item"):
        sec = 0.0
        for cell in [*range(len(EDGES) - 1), "overall"]:
            sel = np.ones(b.size, bool) if cell == "overall" else b == cell
            if sel.sum() < 2 * N_SYS:
                continue
            lens = [N_SYS] * int(sel.sum() // N_SYS)
            sec += peer_seconds_per_trial(h[sel], m1[sel], m2[sel], lens, corr, trials)
        per[corr] = sec * 10_000 * 10
        total += per[corr]
    return total, per


def load() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "n/a"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--peer-trials", type=int, default=2)
    a = ap.parse_args()
    prof, scores = make_data()
    print(f"load before: {load()}; cores: {os.cpu_count()}")
    full, noperm, nospa, notie, old = [], [], [], [], []
    for _ in range(a.rounds):  # alternated, so all see the same load
        full.append(run_ddp(prof, scores, 10_000, what="full"))
        old.append(run_ddp(prof, scores, 10_000, what="old", old_kernels=True))
        noperm.append(run_ddp(prof, scores, 0, what="noperm"))
        nospa.append(run_ddp(prof, scores, 10_000, spa_ci_perm=0, what="nospa"))
        notie.append(run_ddp(prof, scores, 10_000, tie_sample=0, what="notie"))
    peer_total, per = peer_work(prof, scores, a.peer_trials)
    t_full, t_noperm = statistics.median(full), statistics.median(noperm)
    # the permutation test's share: the difference of the medians, unless it is within the run-to-run
    # spread, in which case only an upper bound (the spread) is known and the ratio is a lower bound
    spread = max(max(full) - min(full), max(noperm) - min(noperm), 1e-3)
    resolved = t_full - t_noperm > spread
    t_perm = t_full - t_noperm if resolved else spread
    print(f"load after: {load()}")
    print()
    print("| what | seconds (median of %d) | range |" % a.rounds)
    print("|---|---:|---:|")
    print(f"| ddp meta, 1,000 doc resamples + 10,000 permutations (all of it) | {t_full:.2f} | "
          f"{min(full):.2f}-{max(full):.2f} |")
    print(f"| ddp meta, the same with the replicate walks before 2026-12-07 (double trees, acc_eq.none on its own "
          f"walk; same figures) | {statistics.median(old):.2f} | {min(old):.2f}-{max(old):.2f} |")
    print(f"| ddp meta, n_perm=0 | {t_noperm:.2f} | {min(noperm):.2f}-{max(noperm):.2f} |")
    print(f"| ddp meta, spa_ci_perm=0 (no SPA interval) | {statistics.median(nospa):.2f} | "
          f"{min(nospa):.2f}-{max(nospa):.2f} |")
    print(f"| ddp meta, tie_sample=0 (no acc_eq.none above --max-pairs: every bin here) | "
          f"{statistics.median(notie):.2f} | {min(notie):.2f}-{max(notie):.2f} |")
    for what in ("full", "old", "noperm", "nospa", "notie"):
        cpu = [c for w, c in CPU if w == what]
        print(f"| CPU seconds of the process, {what} (median) | {statistics.median(cpu):.2f} | "
              f"{min(cpu):.2f}-{max(cpu):.2f} |")
    print(f"| ddp meta permutation test (difference; 4 stats x 6 bins x 10 pairs x 10,000) | "
          f"{f'{t_perm:.2f}' if resolved else f'< {t_perm:.2f} (within the runs spread)'} | |")
    for k, v in per.items():
        print(f"| mt-metrics-eval PermutationSigDiff loop, {k}, extrapolated from {a.peer_trials} trials per bin | "
              f"{v:,.0f} | |")
    print(f"| peer total (3 stats) / ddp meta permutation test (4 stats) | ratio {'' if resolved else '> '}"
          f"{peer_total / t_perm:,.0f}x | |")


if __name__ == "__main__":
    main()
