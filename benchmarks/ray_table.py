"""Ray engine against the local engine on the same input, 2 CPUs (issue 8, sections 6 and 7).

    python benchmarks/ray_table.py [--repeats 3] [--litbank-words 40000] [--cpus 2]

Input: the bundled WMT25 English source (332 segments) plus the first ``--litbank-words``
words of the LitBank novels (paragraphs as segments), one JSONL file. Rows, each the median
of ``--repeats`` runs of wall time:

- ``local``: ``ddp profile IN -o OUT --engine local -j CPUS --no-cache`` (whole process);
- ``ray``: ``ddp profile IN -o OUT --engine ray -j CPUS`` (whole process: starts a local Ray
  with ``CPUS`` CPUs, ``CPUS`` actors, shuts Ray down);
- ``ray, Ray running``: :func:`ddpcore.engines.ray_engine.profile_ray` in a process where
  ``ray.init(num_cpus=CPUS)`` was already called (actor start and pipeline load included,
  Ray start not).

Every run's segment table is checked equal to the first local run's. Words = spaCy tokens
(``n_tokens``) of the input. Needs the LitBank novels (see _ddp_corpus.py) and ``ddpcore[ray]``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _ddp_corpus import BUNDLED, litbank_segments  # noqa: E402


def _ddp(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *argv], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    import polars as pl
    from polars.testing import assert_frame_equal

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--litbank-words", type=int, default=40_000)
    ap.add_argument("--cpus", type=int, default=2)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="ddp-ray-bench-"))
    wmt = pl.read_ndjson(BUNDLED).select("document_id", "segment_id", "source", "domain")
    lit, _ = litbank_segments(args.litbank_words)
    lit = lit.with_columns(pl.lit("litbank").alias("domain"),
                           ("litbank/" + pl.col("document_id")).alias("document_id"))
    source = tmp / "input.jsonl"
    pl.concat([wmt, lit.cast(wmt.schema)]).write_ndjson(source)
    env = {**os.environ, "DDPCORE_CACHE": str(tmp / "cache")}
    env.pop("RAY_ADDRESS", None)
    cpus = str(args.cpus)

    times: dict[str, list[float]] = {"local": [], "ray": [], "ray, Ray running": []}
    ref = None
    for r in range(args.repeats):
        out = tmp / f"local{r}.parquet"
        times["local"].append(_ddp(["profile", str(source), "-o", str(out), "-q", "--engine", "local", "-j", cpus,
                                    "--no-cache"], env))
        ref = pl.read_parquet(out) if ref is None else ref
        out = tmp / f"ray{r}.parquet"
        times["ray"].append(_ddp(["profile", str(source), "-o", str(out), "-q", "--engine", "ray", "-j", cpus,
                                  "--no-cache"], env))
        assert_frame_equal(ref, pl.read_parquet(out))

    import ray

    from ddpcore.engines.local import Settings
    from ddpcore.engines.ray_engine import profile_ray
    from ddpcore.io.outputs import check_outputs
    from ddpcore.io.segments import SegmentColumns

    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    try:
        for r in range(args.repeats):
            out = tmp / f"warm{r}.parquet"
            targets = {"segments": check_outputs([("-o", out)], [source])[0], "anchors": None, "sentences": None}
            t0 = time.perf_counter()
            profile_ray(source, targets, cols=SegmentColumns("document_id", "segment_id", "source", "domain"),
                        settings=Settings(), n_process=args.cpus)
            times["ray, Ray running"].append(time.perf_counter() - t0)
            assert_frame_equal(ref, pl.read_parquet(out))
    finally:
        ray.shutdown()

    words = int(ref["n_tokens"].sum())
    base = statistics.median(times["local"])
    print(f"input: WMT25 source + LitBank {args.litbank_words:,} words = {ref.height:,} segments, {words:,} "
          f"spaCy tokens; {args.cpus} CPUs; median of {args.repeats}\n")
    print("| engine | wall s (median) | runs | words/s | vs local |")
    print("|---|---|---|---|---|")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} | {med:.1f} | {', '.join(f'{t:.1f}' for t in ts)} | {words / med:,.0f} | "
              f"{base / med:.2f}x |")


if __name__ == "__main__":
    main()
