"""Print the ``ddp stratify`` / ``select`` / ``sample`` benchmark table (medians; see bench_stratify.py).

    python benchmarks/stratify_table.py [--rounds 3] [--folder /tmp/ddp-bench-stratify]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_stratify import N_SEG, N_SYS, make_data, make_jsonl, run_stratify  # noqa: E402


def median_seconds(fn, rounds: int) -> tuple[float, float, float, float]:  # type: ignore[no-untyped-def]
    """(median wall, min wall, max wall, median process CPU seconds): on a shared, overloaded machine
    the CPU time says more than the wall time (it counts every thread of this process)."""
    times, cpu = [], []
    for _ in range(rounds):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(times), min(times), max(times), statistics.median(cpu)


def run_cli(argv: list[str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MiB of the children so far) of one ``ddp`` subprocess."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *argv], check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime), r1.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--folder", default="/tmp/ddp-bench-stratify")
    ap.add_argument("--n-boot", type=int, nargs="*", default=[0, 1000])
    ap.add_argument("--skip-stratify", action="store_true", help="only the select/sample rows")
    a = ap.parse_args()
    folder = Path(a.folder)
    folder.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    prof, scores = make_data(folder)
    print(f"data: {N_SEG:,} segments, {N_SYS * N_SEG:,} score rows ({time.perf_counter() - t:.1f} s to make); "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print()
    print("| run | median wall s | min | max | median CPU s | note |")
    print("|---|---:|---:|---:|---:|---|")
    for nb in (a.n_boot if not a.skip_stratify else []):
        med, lo, hi, cpu = median_seconds(lambda: run_stratify(prof, scores, nb), a.rounds)
        print(f"| stratify 10 M rows x 1 M segments, --by system (10 groups), --n-boot {nb} | {med:.1f} | {lo:.1f} | "
              f"{hi:.1f} | {cpu:.1f} | in-process |", flush=True)
    src, sprof = make_jsonl(folder)
    out = folder / "out.jsonl"
    for name, argv in (
        ("select --top-share 0.1 --with-context (1 M-row JSONL, 108 MB)",
         ["select", str(src), "--profile", str(sprof), "--top-share", "0.1", "--with-context", "-o", str(out)]),
        ("sample --per-bin 1000 --by segment (1 M-row JSONL)",
         ["sample", str(src), "--profile", str(sprof), "--per-bin", "1000", "--by", "segment", "-o", str(out)]),
    ):
        walls, cpus, rss = [], [], 0.0
        for _ in range(a.rounds):
            w, c, r = run_cli(argv)
            walls.append(w)
            cpus.append(c)
            rss = max(rss, r)
        print(f"| {name} | {statistics.median(walls):.1f} | {min(walls):.1f} | {max(walls):.1f} | "
              f"{statistics.median(cpus):.1f} | peak RSS {rss:.0f} MiB, input {src.stat().st_size / 2**20:.0f} MiB |",
              flush=True)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
