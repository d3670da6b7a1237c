"""Print the ``ddp blindness`` benchmark table (medians of repeated runs; see bench_blindness.py).

    python benchmarks/blindness_table.py [--rounds 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_blindness import battery, components, make_table  # noqa: E402


def median_seconds(fn, rounds: int) -> tuple[float, float, float, float]:  # type: ignore[no-untyped-def]
    """(median wall, min wall, max wall, median process CPU seconds): the CPU time is less sensitive
    to other jobs on a shared machine (it counts both OpenMP threads)."""
    fn()  # warm-up (imports, first-call caches)
    times, cpu = [], []
    for _ in range(rounds):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(times), min(times), max(times), statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| problem | part | median wall s | min–max s | median CPU s |\n|---|---|---:|---:|---:|")
    for spd in (1, 5):
        table = make_table(spd)
        name = f"20 systems x 2,000 docs x {spd} seg x 2 conditions ({table.height:,} rows)"
        for threads in (1, 0):
            med, lo, hi, c = median_seconds(lambda: battery(table, threads), args.rounds)
            label = "default (--threads 1)" if threads == 1 else "--threads 0 (OpenMP default, 2 threads)"
            print(f"| {name} | **whole battery, {label}** | **{med:.3f}** | {lo:.3f}–{hi:.3f} | {c:.3f} |")
            name = ""
        for part, fn in components(table).items():
            med, lo, hi, c = median_seconds(fn, args.rounds)
            print(f"| | {part} | {med:.3f} | {lo:.3f}–{hi:.3f} | {c:.3f} |")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
