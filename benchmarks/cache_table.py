"""Parse cache: whole-process time of ``ddp profile`` on LitBank, first run vs cached re-run.

    python benchmarks/cache_table.py [--words 150000] [--cold 3] [--warm 5] [-j auto]

Builds a segment table from the first LitBank novels (paragraphs as segments, ../shared/data),
then times ``ddp profile IN -o OUT --cache DIR -q`` as separate processes: each *first run*
with an empty cache folder (everything parsed and stored), each *cached re-run* with
``--rules paper`` against the filled cache (no line parsed, the spaCy pipeline never loaded).
Prints a Markdown table of the medians and their ratio, the cache counts of the signature,
and checks that a cached run with the first run's settings writes the same segment table.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ddp_corpus import NOVELS, litbank_segments  # noqa: E402

_EXE = Path(sys.executable).parent / "ddp"
DDP = [str(_EXE)] if _EXE.exists() else [sys.executable, "-m", "ddpcore.cli.main"]


def run(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(DDP + args, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def signature(path: Path) -> dict:
    import pyarrow.parquet as pq

    return json.loads(pq.read_schema(path).metadata[b"ddpcore.signature"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--words", type=int, default=150_000)
    ap.add_argument("--cold", type=int, default=3, help="first runs (each with an empty cache)")
    ap.add_argument("--warm", type=int, default=5, help="cached re-runs")
    ap.add_argument("-j", default="auto")
    args = ap.parse_args()
    if not NOVELS.exists():
        sys.exit(f"{NOVELS} not found (the LitBank novels live in the shared data folder)")
    import polars as pl

    df, words = litbank_segments(args.words)
    with tempfile.TemporaryDirectory(prefix="ddp-cache-bench-") as tmp:
        tmp_p = Path(tmp)
        src = tmp_p / "litbank.jsonl"
        df.write_ndjson(src)
        cache = tmp_p / "cache"
        common = [str(src), "--cache", str(cache), "-q", "-j", str(args.j)]
        cold = []
        for _ in range(args.cold):
            shutil.rmtree(cache, ignore_errors=True)
            cold.append(run(["profile", *common, "-o", str(tmp_p / "first.parquet")]))
        warm = [run(["profile", *common, "--rules", "paper", "-o", str(tmp_p / "paper.parquet")])
                for _ in range(args.warm)]
        run(["profile", *common, "-o", str(tmp_p / "again.parquet")])
        same = pl.read_parquet(tmp_p / "first.parquet").equals(pl.read_parquet(tmp_p / "again.parquet"))
        sig_first, sig_warm = signature(tmp_p / "first.parquet"), signature(tmp_p / "paper.parquet")
        size = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file())
    c, w = statistics.median(cold), statistics.median(warm)
    print(f"LitBank novels: {df.height:,} segments, {words:,} words; -j {args.j}; {os.cpu_count()} CPUs; "
          f"cache {size / 2**20:.1f} MB")
    print()
    print("| run | runs | median s | min s | words/s | cache hits / misses |")
    print("|---|---|---|---|---|---|")
    print(f"| first run (empty cache, rules refined) | {len(cold)} | {c:.2f} | {min(cold):.2f} | {words / c:,.0f} | "
          f"{sig_first['cache']['hits']:,} / {sig_first['cache']['misses']:,} |")
    print(f"| cached re-run (--rules paper) | {len(warm)} | {w:.2f} | {min(warm):.2f} | {words / w:,.0f} | "
          f"{sig_warm['cache']['hits']:,} / {sig_warm['cache']['misses']:,} |")
    print()
    print(f"ratio first / cached (medians): {c / w:.1f}x; cached output identical to the first run's: {same}")


if __name__ == "__main__":
    main()
