"""How much ``acc_eq.none`` loses by calibrating its tie threshold on a seeded sample of pairs (``ddp meta
--tie-sample``, used in bins of more than ``--max-pairs`` cell pairs), and what the sample costs; prints a
Markdown table (docs/meta.md, "acc_eq.none in a large bin").

Data: simulated MQM-like cells, seeded: human = round(N(0, 5)) clipped to -25..0 (26 levels, many ties),
metric = human + N(0, 6). For each size and sample size, over ``--seeds`` sample seeds:

- the *shortfall*: the reference accuracy minus ``acc_eq_none_sampled``'s (the exact accuracy at the
  sampled threshold, so never above the optimum over every pair);
- the reference: at 6,000 cells the optimum over all 18 M pairs (``acc_eq_none``, every pair enumerated,
  as mt-metrics-eval's ``sample_rate=1``); at 400,000 cells (80 billion pairs, too many to enumerate) the
  exact accuracy at the threshold calibrated on 10,000,000 sampled pairs (so the shortfall is a lower
  bound there);
- seconds of the sampled calibration plus the exact count (median over the seeds), one thread.

    python benchmarks/tie_sample_table.py [--seeds 5]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from ddpcore.stats.meta import acc_eq_none, acc_eq_none_sampled


def data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    h = np.round(rng.normal(0, 5, n)).clip(-25, 0)
    return h, h + rng.normal(0, 6, n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5, help="sample seeds per row")
    a = ap.parse_args()
    print("| cells | reference | pairs sampled | shortfall median | shortfall max | seconds (median) |")
    print("|---:|---|---:|---:|---:|---:|")
    for n, samples in ((6_000, (10_000, 100_000, 1_000_000)), (400_000, (10_000, 100_000, 1_000_000))):
        h, m = data(n)
        if n * (n - 1) // 2 <= 20_000_000:
            ref, what = acc_eq_none(h, m)[0], "optimum over every pair"
        else:
            ref, what = acc_eq_none_sampled(h, m, 10_000_000, 10_000)[0], "threshold from 10 M sampled pairs"
        for s in samples:
            short, secs = [], []
            for seed in range(a.seeds):
                t = time.perf_counter()
                acc, _ = acc_eq_none_sampled(h, m, s, seed)
                secs.append(time.perf_counter() - t)
                short.append(ref - acc)
            print(f"| {n:,} | {what} | {s:,} | {statistics.median(short):.1e} | {max(short):.1e} | "
                  f"{statistics.median(secs):.3f} |")


if __name__ == "__main__":
    main()
