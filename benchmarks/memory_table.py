"""Peak RSS of ``ddp profile`` against the corpus size, served from the parse cache (issue 25 §3).

    python benchmarks/memory_table.py [--sizes 10000,1000000,10000000] [--repeats 3] [--chars 120]

Builds synthetic segment tables of short segments (two sentences with pronouns, about ``--chars``
characters; documents of 10 segments) drawn from a pool of a few hundred distinct texts, fills a
parse cache with the pool once, then runs ``ddp profile IN -o OUT -q`` on each size as a fresh
process (every line a cache hit: the spaCy pipeline never loads) and reads the peak RSS of that
process from ``getrusage(RUSAGE_CHILDREN)`` of a one-shot wrapper (the driver is the only process:
no parse worker starts when nothing is parsed). Inputs are Parquet with 20,000-row row groups
(the staging chunk size of text inputs). Segments of 120 characters make the 10 k input two
batches of the default ``--batch-chars`` (1,000,000), so every size runs full batches.

Prints, per size, the median peak RSS (and range) over ``--repeats`` runs (one run above 1 M
segments), the ratio to the smallest size, the marginal bytes per extra segment against the
smallest size, the wall time, and the load average before and after. Targets (issue 25): at most
1.25x from 10 k to 1 M segments, at most 64 B per segment marginal.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable
_WRAP = (
    "import resource, subprocess, sys, time, json;"
    "t = time.perf_counter(); r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); dt = time.perf_counter() - t;"
    "print(json.dumps({'rc': r.returncode, 'seconds': dt,"
    " 'max_rss_kib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))"
)
NAMES = ["Anna", "Boris", "Chen", "Dana", "Emil", "Fatima", "Goran", "Hana", "Ivo", "Jana"]
PLACES = ["station", "library", "harbour", "market", "school", "bakery", "museum", "garden"]


def pool_texts(n: int, chars: int) -> list[str]:
    """``n`` distinct two-sentence texts of about ``chars`` characters, each with a pronoun that
    refers back (so every segment has anchors and a DDP)."""
    out = []
    for i in range(n):
        a, b = NAMES[i % len(NAMES)], NAMES[(i * 3 + 1) % len(NAMES)]
        place = PLACES[(i // len(NAMES)) % len(PLACES)]
        t = f"{a} met {b} at the {place} on day {i}. She said that it was ready, and he signed the plan"
        while len(t) < chars - 1:
            t += " again"
        out.append(t + ".")
    return out


def write_input(path: Path, n_segments: int, pool: list[str], per_doc: int = 10, step: int = 1_000_000) -> None:
    """The segment table of ``n_segments`` rows (documents of ``per_doc`` segments), written in slices."""
    import polars as pl
    import pyarrow.parquet as pq

    texts = pl.Series(pool)
    writer = None
    for lo in range(0, n_segments, step):
        i = pl.int_range(lo, min(lo + step, n_segments), eager=True)
        df = pl.DataFrame({
            "document_id": "doc" + (i // per_doc).cast(pl.String),
            "segment_id": i % per_doc,
            "source": texts.gather((i * 7919) % len(pool)),  # every document a different mix
        }).to_arrow()
        if writer is None:
            writer = pq.ParquetWriter(path, df.schema)
        writer.write_table(df, row_group_size=20_000)
    assert writer is not None
    writer.close()


def measured(argv: list[str], env: dict[str, str]) -> dict:
    out = subprocess.run([PY, "-c", _WRAP, *argv], capture_output=True, text=True, env=env)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if res["rc"] != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {out.stderr[-2000:]}")
    return res


def ddp(*args: str) -> list[str]:
    return [PY, "-m", "ddpcore.cli.main", "profile", *args]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,1000000,10000000", help="segment counts, comma-separated")
    ap.add_argument("--repeats", type=int, default=3, help="runs per size up to 1 M segments (one above)")
    ap.add_argument("--chars", type=int, default=120, help="characters per segment")
    ap.add_argument("--pool", type=int, default=400, help="distinct segment texts (all cached)")
    ap.add_argument("--workdir", default=None, help="folder for inputs, outputs and the cache (default: a temp folder)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ddp-mem-", dir=args.workdir) as d:
        tmp = Path(d)
        env = {**os.environ, "DDPCORE_CACHE": str(tmp / "cache")}
        pool = pool_texts(args.pool, args.chars)
        write_input(tmp / "warm.parquet", len(pool), pool, per_doc=len(pool))
        measured(ddp(str(tmp / "warm.parquet"), "-o", str(tmp / "warm.out.parquet"), "-q"), env)
        rows = []
        for n in sizes:
            src = tmp / f"in{n}.parquet"
            write_input(src, n, pool)
            runs = [measured(ddp(str(src), "-o", str(tmp / "out.parquet"), "-q"), env)
                    for _ in range(args.repeats if n <= 1_000_000 else 1)]
            src.unlink()
            rss = [r["max_rss_kib"] / 1024 for r in runs]
            rows.append((n, statistics.median(rss), min(rss), max(rss), statistics.median(r["seconds"] for r in runs),
                         len(runs)))
            print(f"# {n:,} segments: peak RSS {', '.join(f'{x:,.0f}' for x in rss)} MiB, "
                  f"{rows[-1][4]:.1f} s, load {os.getloadavg()[0]:.2f}", flush=True)  # partial results survive
    load_after = os.getloadavg()
    n0, base = rows[0][0], rows[0][1]
    print(f"ddp profile, cache-served, segments of ~{args.chars} characters, documents of 10 segments, "
          f"{os.cpu_count()} CPUs")
    print()
    print("| segments | runs | peak RSS MiB (median) | range | ratio to smallest | B/segment marginal vs smallest "
          "| B/segment marginal vs previous size | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    prev = None
    for n, med, lo, hi, secs, k in rows:
        marginal = "-" if n == n0 else f"{(med - base) * 2**20 / (n - n0):.1f}"
        step = "-" if prev is None else f"{(med - prev[1]) * 2**20 / (n - prev[0]):.1f}"
        print(f"| {n:,} | {k} | {med:,.0f} | {lo:,.0f}-{hi:,.0f} | {med / base:.2f}x | {marginal} | {step} "
              f"| {secs:.1f} |")
        prev = (n, med)
    print()
    print("targets (issue 25): <= 1.25x from 10 k to 1 M segments; <= 64 B per segment marginal")
    print(f"load average before {', '.join(f'{x:.2f}' for x in load_before)}; "
          f"after {', '.join(f'{x:.2f}' for x in load_after)}")


if __name__ == "__main__":
    main()
