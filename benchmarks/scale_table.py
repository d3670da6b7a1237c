"""Corpus-scale benchmarks of ``ddp profile`` (issue 8, section 7); prints a Markdown table.

Every measurement runs the real command in a fresh process (what a user pays: imports, model
loads, worker start-up, staging, assembly), times it with a wall clock and reads its peak RSS
from ``getrusage(RUSAGE_CHILDREN)`` of a one-shot wrapper process (the largest single process
of the run: the driver; workers are reported separately where they matter). Medians of
``--repeats`` runs; ratios are between runs made in this same invocation.

(a) throughput on LitBank novels (paragraphs as segments), -j 1 and -j 2, against bare
    ``nlp.pipe`` with the same pipeline, texts and process count (no cache);
(b) a 1,000,000-segment corpus built from LitBank paragraphs under distinct document ids,
    cache warm: peak RSS against a 10,000-segment run of the same corpus, and segments/s;
(c) SIGKILL about half-way, then ``--resume``: time to the finished output against a full run;
(d) the ``-j auto`` threshold: -j 1 against -j 2 on inputs of growing size (no cache).
The Ray engine has its own table (``benchmarks/ray_table.py``).

Needs the shared data folder (LitBank novels). Usage::

    python benchmarks/scale_table.py [--words 150000] [--repeats 3] [--skip a,b,c] [--segments 1000000]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _ddp_corpus import litbank_segments  # noqa: E402

PY = sys.executable
#: --cache-dir: a parse cache kept between invocations (the (b) warm-up then costs nothing the second time)
CACHE_DIR: str | None = None
_WRAP = (
    "import resource, subprocess, sys, time, json;"
    "t = time.perf_counter(); r = subprocess.run(sys.argv[1:]); dt = time.perf_counter() - t;"
    "print(json.dumps({'rc': r.returncode, 'seconds': dt,"
    " 'max_rss_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))"
)


def measured(argv: list[str], env: dict[str, str] | None = None) -> dict:
    """Run ``argv`` in a wrapper process; wall seconds and peak RSS (MB) of the largest child."""
    out = subprocess.run([PY, "-c", _WRAP, *argv], capture_output=True, text=True, env=env)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if res["rc"] != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {out.stderr[-2000:]}")
    return res


def ddp(*args: str) -> list[str]:
    return [PY, "-m", "ddpcore.cli.main", "profile", *args]


def bare_pipe(path: Path, n_process: int) -> list[str]:
    code = (
        "import sys, polars as pl\n"
        "from ddpcore.anchors.spacy_extract import load_pipeline\n"
        "from ddpcore.pipeline.stages import split_units\n"
        "if __name__ == '__main__':\n"
        f"    texts = split_units(pl.read_parquet({str(path)!r})['source']).texts\n"
        "    nlp = load_pipeline(None)\n"
        f"    for _ in nlp.pipe(texts, batch_size=256, n_process={n_process}):\n"
        "        pass\n"
    )
    script = path.with_name(f"bare_{n_process}.py")
    script.write_text(code)
    return [PY, str(script)]


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def part_a(tmp: Path, words: int, repeats: int, rows: list) -> None:
    df, n_words = litbank_segments(words)
    path = tmp / "litbank.parquet"
    df.write_parquet(path)
    for j in (1, 2):
        t_bare = [measured(bare_pipe(path, j))["seconds"] for _ in range(repeats)]
        runs = [measured(ddp(str(path), "-o", str(tmp / f"a{j}.parquet"), "-q", "-j", str(j), "--no-cache"))
                for _ in range(repeats)]
        t_ddp = [r["seconds"] for r in runs]
        rows.append((f"(a) LitBank {n_words:,} words, -j {j}: ddp profile (whole process, no cache)",
                     f"{n_words / med(t_ddp):,.0f} words/s ({med(t_ddp):.1f} s)",
                     f"bare nlp.pipe n_process={j}: {n_words / med(t_bare):,.0f} words/s ({med(t_bare):.1f} s); "
                     f"ratio {med(t_bare) / med(t_ddp):.2f}; driver peak RSS {med([r['max_rss_mb'] for r in runs]):,.0f} MB"))
        if j == 2:
            t1 = [r for r in rows if r[0].startswith(f"(a) LitBank {n_words:,} words, -j 1")]
            if t1:
                rows.append((f"(a) -j 2 vs -j 1 on {n_words:,} words", f"{_secs(t1[0][1]) / med(t_ddp):.2f}x", ""))


def _secs(cell: str) -> float:
    return float(cell.split("(")[1].split(" s")[0])


def part_b(tmp: Path, n_segments: int, repeats: int, rows: list) -> None:
    import polars as pl

    pool, _ = litbank_segments(400_000)
    paras = pool["source"].filter(pool["source"].str.len_chars().is_between(40, 2000)).head(5000)
    k = paras.len()
    per_doc = 10
    n_docs = n_segments // per_doc
    idx = (pl.int_range(0, n_segments, eager=True) * 7919) % k  # every document a different mix of paragraphs
    big = pl.DataFrame({
        "document_id": "doc" + (pl.int_range(0, n_segments, eager=True) // per_doc).cast(pl.String),
        "segment_id": pl.int_range(0, n_segments, eager=True) % per_doc,
        "source": paras.gather(idx),
    })
    big_path, small_path, warm_path = tmp / "big.parquet", tmp / "small.parquet", tmp / "warm.parquet"
    big.write_parquet(big_path, row_group_size=50_000)
    big.head(10_000).write_parquet(small_path)
    pl.DataFrame({"document_id": ["warm"] * k, "segment_id": list(range(k)), "source": paras}).write_parquet(warm_path)
    env = {**os.environ, "DDPCORE_CACHE": CACHE_DIR or str(tmp / "cache")}
    t_warm = measured(ddp(str(warm_path), "-o", str(tmp / "w.parquet"), "-q"), env)
    small = [measured(ddp(str(small_path), "-o", str(tmp / "s.parquet"), "-q"), env) for _ in range(repeats)]
    bigr = [measured(ddp(str(big_path), "-o", str(tmp / "b.parquet"), "-q"), env) for _ in range(max(1, repeats - 2))]
    rss_s, rss_b = med([r["max_rss_mb"] for r in small]), med([r["max_rss_mb"] for r in bigr])
    t_b = med([r["seconds"] for r in bigr])
    rows.append((f"(b) cache warm-up: {k:,} distinct paragraphs", f"{t_warm['seconds']:.1f} s", ""))
    rows.append((f"(b) {n_segments:,} segments ({n_docs:,} documents), cache warm",
                 f"{n_segments / t_b:,.0f} segments/s ({t_b:.1f} s)", f"peak RSS {rss_b:,.0f} MB"))
    rows.append(("(b) 10,000 segments of the same corpus, cache warm",
                 f"{10_000 / med([r['seconds'] for r in small]):,.0f} segments/s", f"peak RSS {rss_s:,.0f} MB"))
    rows.append((f"(b) peak RSS {n_segments:,} / 10,000 segments", f"{rss_b / rss_s:.2f}x", "target <= 1.5x"))


def part_c(tmp: Path, words: int, rows: list) -> None:
    import polars as pl

    df, n_words = litbank_segments(words)
    # documents of 50 paragraphs (a novel is one document, and a batch never splits a document)
    df = df.with_columns((pl.col("document_id") + "-" + (pl.col("segment_id") // 50).cast(pl.String))
                         .alias("document_id"))
    path = tmp / "resume.parquet"
    df.write_parquet(path)
    out = tmp / "r.parquet"
    args = ddp(str(path), "-o", str(out), "-q", "--no-cache", "--batch-chars", "100000")
    full = measured(args)["seconds"]
    out.unlink()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    work = out.parent / f".{out.name}.ddp-work"
    parts, journal = work / "parts", work / "journal.json"
    n_batches = 0
    while proc.poll() is None:
        done = len(list(parts.glob("*.done"))) if parts.exists() else 0
        if not n_batches and journal.exists():
            n_batches = json.loads(journal.read_text()).get("n_batches", 0)
        if n_batches and done >= n_batches // 2:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.1)
    proc.wait()
    killed_at = len(list(parts.glob("*.done")))
    resumed = measured(args + ["--resume"])["seconds"]
    rows.append((f"(c) SIGKILL after {killed_at}/{n_batches} batches, then --resume ({n_words:,} words)",
                 f"{resumed:.1f} s to finish", f"full run {full:.1f} s; ratio {resumed / full:.2f}"))


#: input sizes of part (d), characters
D_SIZES = (25_000, 50_000, 75_000, 100_000, 150_000, 200_000, 400_000, 800_000)


def part_d(tmp: Path, repeats: int, rows: list) -> None:
    df, _ = litbank_segments(200_000)
    chars = df["source"].str.len_chars().cum_sum()
    for size in D_SIZES:
        sub = df.filter(chars <= size)
        path = tmp / f"d{size}.parquet"
        sub.write_parquet(path)
        t = {}
        for j in (1, 2):
            t[j] = med([measured(ddp(str(path), "-o", str(tmp / f"d{j}.parquet"), "-q", "-j", str(j),
                                     "--no-cache"))["seconds"] for _ in range(repeats)])
        # the start method -j 2 used (fork on Linux unless DDPCORE_START_METHOD says otherwise)
        rows.append((f"(d) {size:,} characters ({sub.height:,} segments): -j 1 vs -j 2",
                     f"{t[1]:.1f} s vs {t[2]:.1f} s", f"-j 2 speed-up {t[1] / t[2]:.2f}x"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int, default=150_000, help="LitBank words for (a) and (c); 11000000 = all")
    ap.add_argument("--segments", type=int, default=1_000_000, help="segments of the (b) corpus")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cache-dir", default=None, help="parse cache folder to reuse between invocations for (b)")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: a,b,c,d")
    args = ap.parse_args()
    global CACHE_DIR
    CACHE_DIR = args.cache_dir
    skip = set(filter(None, args.skip.split(",")))
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="ddp-scale-") as d:
        tmp = Path(d)
        if "a" not in skip:
            part_a(tmp, args.words, args.repeats, rows)
        if "b" not in skip:
            part_b(tmp, args.segments, args.repeats, rows)
        if "c" not in skip:
            part_c(tmp, args.words, rows)
        if "d" not in skip:
            part_d(tmp, args.repeats, rows)
    print("| measurement | result | reference |\n|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} |")
    print(f"\n(load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())})")


if __name__ == "__main__":
    main()
