"""Print the ``ddp stats compare`` benchmark: ddpcore vs a loop over sacrebleu's procedure.

    python benchmarks/compare_table.py [--quick]

Problem and peer: see benchmarks/bench_compare.py (50 systems x 10,000 documents x 3 segments,
bootstrap 1,000 + AR 10,000, document unit). Wall-clock medians (``time.perf_counter``); the
sacrebleu loop is timed on a few pairs at fewer AR trials and scaled linearly (stated in the table).
"""
from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_compare as bc  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = ap.parse_args()
    rep = 2 if args.quick else 5
    table = bc.score_table()
    bc.run_ddpcore(table, n_boot=10, n_ar=10)  # warm-up: imports, kernels
    times = []
    for _ in range(rep):
        t = time.perf_counter()
        bc.run_ddpcore(table)
        times.append(time.perf_counter() - t)
    ddp = statistics.median(times)
    systems, stats = bc.document_stats(table)
    # bootstrap and AR of sacrebleu timed separately so each can be scaled by its own factor
    from sacrebleu.significance import Result, _paired_ar_test, _paired_bs_test

    m = bc.MeanMetric()
    bl = stats[systems[0]]
    info = {"M": (bl, Result(m._aggregate_and_compute(bl).score))}
    bs_t, ar_t = [], []
    for name in systems[1 : 1 + bc.SACRE_PAIRS]:
        t = time.perf_counter()
        _paired_bs_test(info, name, stats[name], None, {"M": m}, n_samples=bc.N_BOOT, seed=12345)
        bs_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        _paired_ar_test(info, name, stats[name], None, {"M": m}, n_samples=bc.SACRE_AR, seed=12345)
        ar_t.append(time.perf_counter() - t)
    n_pairs = bc.N_SYSTEMS - 1
    bs_pair, ar_pair = statistics.median(bs_t), statistics.median(ar_t) * bc.N_AR / bc.SACRE_AR
    sacre = n_pairs * (bs_pair + ar_pair)
    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"problem: {bc.N_SYSTEMS} systems x {bc.N_DOCS:,} documents x {bc.SEG_PER_DOC} segments, "
          f"bootstrap {bc.N_BOOT:,} + AR {bc.N_AR:,}, document unit, every system vs the baseline\n")
    print("| implementation | median | ratio |")
    print("|---|---:|---:|")
    print(f"| ddpcore `compare_systems` (end to end from a polars table, {rep} runs) | {ddp:.3f} s | |")
    print(f"| sacrebleu `_paired_bs_test`, one pair, B = {bc.N_BOOT:,} (median of {len(bs_t)}) | {bs_pair:.3f} s | |")
    print(f"| sacrebleu `_paired_ar_test`, one pair, T = {bc.SACRE_AR:,} measured, x{bc.N_AR // bc.SACRE_AR} "
          f"to T = {bc.N_AR:,} | {ar_pair:.3f} s | |")
    print(f"| sacrebleu loop, {n_pairs} pairs (scaled) | {sacre:.1f} s | **{sacre / ddp:.0f}x** |")
    print(f"\nddpcore runs: {', '.join(f'{x:.3f}' for x in times)} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
