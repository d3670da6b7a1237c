"""Print the statistics-core comparison table: medians of repeated runs and ratios, one run.

    python benchmarks/stats_table.py [--quick]

See benchmarks/bench_stats.py for the problems and the peers. ``--quick`` uses fewer
repetitions. Times are wall-clock medians (``time.perf_counter``) on this machine; the
ratios compare runs made in the same process, minutes apart.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_stats as bs  # noqa: E402


def median_time(fn, *args, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:9.1f} ms" if seconds < 10 else f"{seconds:9.2f} s "


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = ap.parse_args()
    rep = 3 if args.quick else 7
    import ddpcore
    from ddpcore._native import load

    threads = load("stats_kernels").max_threads()
    print(f"ddpcore {ddpcore.__version__}, Python {platform.python_version()}, {threads} OpenMP threads, {platform.processor() or platform.machine()}")
    rows = []

    # bootstrap -----------------------------------------------------------------------------
    table = bs.bootstrap_table()
    sums, counts, _ = bs.bootstrap_arrays(table)
    bs.ddp_bootstrap_means(table, 100)  # load kernels once (import cost is measured by cold start)
    t_ddp = median_time(bs.ddp_bootstrap_means, table, repeat=rep)
    t_scipy = median_time(bs.scipy_bootstrap_means, sums, counts, repeat=max(2, rep // 3))
    per_rep = (t_scipy / bs.B_SCIPY) / (t_ddp / bs.B_DDP)
    rows.append(("bootstrap 10k docs x 10 systems, B=10,000", "ddpcore bootstrap_system_means", t_ddp, ""))
    rows.append(("", f"scipy.stats.bootstrap, B={bs.B_SCIPY:,} (measured)", t_scipy, ""))
    rows.append(("", f"scipy, scaled to B={bs.B_DDP:,} (x{bs.B_DDP // bs.B_SCIPY})", t_scipy * bs.B_DDP / bs.B_SCIPY, f"{per_rep:6.1f}x per replicate"))

    # TOST ------------------------------------------------------------------------------------
    tt = bs.tost_table()
    bs.ddp_tost(tt)
    t_tost = median_time(bs.ddp_tost, tt, repeat=rep)
    t_loop = median_time(bs.statsmodels_loop_presliced, tt, repeat=max(2, rep // 3))
    t_loop_gb = median_time(bs.statsmodels_loop_groupby, tt, repeat=max(2, rep // 3))
    scale = bs.N_GROUPS / bs.N_LOOP
    t_tost_old = median_time(bs.ddp_tost_unsegmented, tt, repeat=rep)
    rows.append(("TOST 10,000 groups x 300 pairs", "ddpcore tost_grouped", t_tost, f"{bs.N_GROUPS / t_tost / 1e3:6.0f}k groups/s"))
    rows.append(("", "ddpcore tost_grouped, unsegmented path (before issue 10)", t_tost_old, f"{t_tost_old / t_tost:6.1f}x"))
    rows.append(("", f"statsmodels ttost_paired loop, pre-split arrays ({bs.N_LOOP:,} groups x{scale:g})", t_loop * scale, f"{t_loop * scale / t_tost:6.1f}x"))
    rows.append(("", f"statsmodels loop over table.group_by ({bs.N_LOOP:,} groups x{scale:g})", t_loop_gb * scale, f"{t_loop_gb * scale / t_tost:6.1f}x"))

    # Krippendorff ----------------------------------------------------------------------------
    big = bs.alpha_data(bs.N_UNITS_BIG)
    t_alpha = median_time(bs.ddp_alpha, big, repeat=rep)
    rows.append(("Krippendorff alpha, 1,000,000 continuous ratings", "ddpcore krippendorff_alpha", t_alpha, ""))
    for n_units in bs.PACKAGE_SIZES:
        x = bs.alpha_data(n_units)
        t_pkg = median_time(bs.package_alpha, x, repeat=2)
        t_small = median_time(bs.ddp_alpha, x, repeat=rep)
        rows.append(("", f"krippendorff package, 2 x {n_units:,} ratings", t_pkg, f"{t_pkg / t_small:6.0f}x vs ddpcore on the same"))
    for n_units in bs.CAPPED_SIZES:
        outcome, t_fail = bs.package_alpha_capped(n_units)
        rows.append(("", f"krippendorff package, 2 x {n_units:,}: {outcome}", t_fail, ""))

    # cold start ------------------------------------------------------------------------------
    with tempfile.TemporaryDirectory() as tmp:
        path = bs.cold_start_table(Path(tmp) / "cold.parquet")
        t_cold = statistics.median(bs.cold_start_seconds(path, "python") for _ in range(3))
        rows.append(("cold start, 10,000-row table, B=10,000", "fresh python -c 'bootstrap_tau(...)'", t_cold, ""))
        try:
            t_cli = statistics.median(bs.cold_start_seconds(path, "cli") for _ in range(3))
            rows.append(("", "fresh `ddp stats tau` (CLI)", t_cli, ""))
        except (RuntimeError, FileNotFoundError) as exc:
            rows.append(("", f"`ddp stats tau` unavailable ({str(exc)[:60]})", float("nan"), ""))
        t_py = statistics.median(_python_startup() for _ in range(3))
        rows.append(("", "fresh `python -c pass` (interpreter alone)", t_py, ""))

    width = max(len(r[1]) for r in rows)
    print(f"\n{'problem':50s} {'implementation':{width}s} {'median':>12s}  ratio")
    for problem, impl, t, ratio in rows:
        print(f"{problem:50s} {impl:{width}s} {fmt(t)}  {ratio}")
    return 0


def _python_startup() -> float:
    import subprocess

    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t


if __name__ == "__main__":
    raise SystemExit(main())
