"""The disk-to-disk Ray engine against its targets (issue 24), on this machine.

    python benchmarks/ray_cluster_table.py [--part all|rss|overhead|speed] [--repeats 3] [--words 150000]

One Ray is started for the whole script (``ray.init(num_cpus=2)``: the "warm cluster"); every Ray
run joins it, so Ray's own start-up is reported apart. Parts:

- ``rss``: peak RSS (``VmHWM``) of a driver process running ``profile_ray`` on a synthetic
  Parquet input of 10 k and of 1 M segments (ten segments per document, texts drawn from 200
  distinct sentences, the parse cache warmed first so that the actors only run the stages), once
  with ``-o DIR/`` (the dataset is the output: the driver holds the plan only) and once with
  ``-o FILE`` (the driver also assembles the file, range by range). Target: 1 M <= 1.5x 10 k.
- ``overhead``: per-batch time of the Ray path on cached units (everything but the parse: read
  the rows, cache look-up, stages, write the parts and marker, the Ray call) against the local
  engine's, at the default batch size (1,000,000 characters), 1 actor vs ``-j 1``, the same input
  in the same run, rounds alternated; the input is ``--words`` of LitBank 20 times over (renamed
  documents). A batch's time is the time between two consecutive finished batches, taken from
  the mtimes of the batch markers each engine writes (watched by a separate process); the median
  is over batches 2..N of every round (the first carries the run's set-up). The Ray row "as the
  actor reports it" is the actor's own time per batch. Target: Ray per batch <= 1.05x local.
- ``speed``: ``--words`` words of LitBank novels (paragraphs as segments), no cache: Ray with 2
  actors on the warm Ray vs the local engine ``-j 2`` (fork), whole ``profile_*`` call each
  (actor start and pipeline load included). Target: >= 0.9x local. Start-up apart: ``ray.init``
  and a one-segment Ray run.

Every Ray output is checked equal to the local engine's. Medians of ``--repeats``, the load
(``uptime``) before and after. Needs ``ddpcore[ray]``; ``speed`` and ``overhead`` need the LitBank
novels of the shared data folder (see _ddp_corpus.py).
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

sys.path.insert(0, str(Path(__file__).parent))
from _ddp_corpus import litbank_segments  # noqa: E402

COLS = ("document_id", "segment_id", "source", "domain")

#: the driver of the rss part (a fresh process per measurement)
DRIVER = r"""
import json, sys
from ddpcore.engines.ray_engine import dataset_target, profile_ray
from ddpcore.io.outputs import check_outputs
from ddpcore.io.segments import SegmentColumns
from ddpcore.pipeline.cache import cache_wrapper
src, out, address, cache = sys.argv[1:5]
if out.endswith("/"):
    targets = {"segments": dataset_target(out)}
else:
    targets = {"segments": check_outputs([("-o", out)], [src])[0], "anchors": None, "sentences": None}
rep = profile_ray(src, targets, cols=SegmentColumns(*%r), n_process=2, address=address,
                  parse_wrapper=cache_wrapper(cache), quiet=True)
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"hwm_kb": hwm, "segments": rep.n_segments, "batches": rep.n_batches,
                  "misses": rep.signature["cache"]["misses"]}))
""" % (COLS,)


def _load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _synthetic(n: int, path: Path) -> None:
    import numpy as np
    import polars as pl

    words = ["river", "lamp", "garden", "letter", "window", "doctor", "winter", "market", "song", "bridge"]
    pool = [f"The {words[i % 10]} near the {words[(i // 10) % 10]} was {i}. It stayed there."
            for i in range(200)]
    i = np.arange(n)
    pl.DataFrame({"document_id": [f"d{k}" for k in (i // 10).tolist()], "segment_id": (i % 10),
                  "source": pl.Series(pool)[(i * 7919) % 200], "domain": "synthetic"}
                 ).write_parquet(path, row_group_size=20_000)  # the size of the chunks ddpcore stages


def part_rss(tmp: Path, address: str, repeats: int) -> None:
    cache = tmp / "rss-cache"
    rows = []
    for n in (10_000, 1_000_000):
        src = tmp / f"syn{n}.parquet"
        _synthetic(n, src)
        for mode in ("dataset", "file"):
            hwm = []
            for r in range(repeats):
                out = f"{tmp}/rss-{n}-{mode}-{r}" + ("/" if mode == "dataset" else ".parquet")
                t0 = time.perf_counter()
                p = subprocess.run([sys.executable, "-c", DRIVER, str(src), out, address, str(cache)],
                                   capture_output=True, text=True, check=True)
                res = json.loads(p.stdout.strip().splitlines()[-1])
                hwm.append(res["hwm_kb"] / 1024)
                res["seconds"] = time.perf_counter() - t0
                print(f"  rss {n:,} {mode} run {r}: {hwm[-1]:.0f} MB, {res['seconds']:.0f} s ({_load()})", flush=True)
            rows.append((n, mode, statistics.median(hwm), hwm, res))
    print("\n### driver peak RSS (VmHWM, MB), 2 actors, warm cache\n")
    print("| segments | output | driver peak RSS MB (median) | runs | batches | s (last run) | vs 10 k |")
    print("|---|---|---|---|---|---|---|")
    base = {mode: med for n, mode, med, _, _ in rows if n == 10_000}
    for n, mode, med, hwm, res in rows:
        print(f"| {n:,} | {'-o DIR/' if mode == 'dataset' else '-o FILE'} | {med:.0f} | "
              f"{', '.join(f'{h:.0f}' for h in hwm)} | {res['batches']} | {res['seconds']:.1f} | "
              f"{med / base[mode]:.2f}x |")


def _litbank(words: int, copies: int = 1):
    import polars as pl

    lit, _ = litbank_segments(words)
    lit = lit.with_columns(pl.lit("litbank").alias("domain"))
    return pl.concat([lit.with_columns(pl.col("document_id") + f"-{c}") for c in range(copies)])


#: a separate process that records when each batch marker appears (its file's mtime: the write time), so
#: that watching costs the measured process nothing: ``python -c WATCH FOLDER SUFFIX``; stdin closed = stop
WATCH = r"""
import json, os, sys, threading, time
folder, suffix = sys.argv[1:3]
seen, stop = {}, threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
while not stop.is_set():
    try:
        with os.scandir(folder) as it:
            for e in it:
                if e.name.endswith(suffix) and e.name not in seen:
                    try:
                        seen[e.name] = e.stat().st_mtime_ns
                    except OSError:
                        pass
    except OSError:
        pass
    time.sleep(0.005)
print(json.dumps(seen))
"""


class _Watch:
    """Batch markers of one run as they appear (:data:`WATCH`); :meth:`intervals` gives the seconds
    between consecutive finished batches (the first batch, which carries the run's set-up, left out)."""

    def __init__(self, folder: Path, suffix: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", WATCH, str(folder), suffix], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def intervals(self) -> list[float]:
        out, _ = self.proc.communicate("", timeout=60)
        times = sorted(json.loads(out).values())
        return [(b - a) / 1e9 for a, b in zip(times, times[1:])]


def part_overhead(tmp: Path, repeats: int, words: int, copies: int = 20) -> None:
    """Per-batch time on cached units, both engines on the same input in the same run, rounds alternated:
    the time between consecutive finished batches (marker file mtimes), median over batches 2..N of every
    round; Ray with 1 actor (``-o DIR/``), the local engine with ``-j 1``, both at the default batch size."""
    import polars as pl
    from polars.testing import assert_frame_equal

    from ddpcore.engines import parts as P
    from ddpcore.engines.local import BATCH_CHARS
    from ddpcore.engines.ray_engine import dataset_target, profile_ray
    from ddpcore.engines.run import profile_to_files, work_dir_for
    from ddpcore.io.outputs import check_outputs
    from ddpcore.io.segments import SegmentColumns
    from ddpcore.pipeline.cache import cache_wrapper

    cols = SegmentColumns(*COLS)
    cache = tmp / "ovh-cache"
    src = tmp / "ovh.parquet"
    _litbank(words, copies=copies).write_parquet(src)

    def run(engine: str, out: Path) -> tuple[float, list[float], int]:
        if engine == "ray":
            t = {"segments": dataset_target(f"{out}/")}
            watch = _Watch(out / P.MARKERS, ".json")
        else:
            t = {"segments": check_outputs([("-o", out)], [src])[0], "anchors": None, "sentences": None}
            watch = _Watch(work_dir_for(out) / "parts", ".done")
        t0 = time.perf_counter()
        if engine == "ray":
            rep = profile_ray(src, t, cols=cols, n_process=1, batch_chars=BATCH_CHARS,
                              parse_wrapper=cache_wrapper(cache), quiet=True)
        else:
            rep = profile_to_files(src, t, cols=cols, n_process=1, batch_chars=BATCH_CHARS,
                                   parse_wrapper=cache_wrapper(cache))
        sec = time.perf_counter() - t0
        assert rep.signature["cache"]["misses"] == 0 or engine == "warm"
        return sec, watch.intervals(), rep.n_batches

    t0 = time.perf_counter()
    profile_to_files(src, {"segments": check_outputs([("-o", tmp / "warm.parquet")], [src])[0]}, cols=cols,
                     n_process=2, parse_wrapper=cache_wrapper(cache))  # fill the cache (parsed once, -j 2)
    print(f"\n(cache filled in {time.perf_counter() - t0:.0f} s)")
    ref = pl.read_parquet(tmp / "warm.parquet")
    whole: dict[str, list[float]] = {"local": [], "ray": []}
    per: dict[str, list[list[float]]] = {"local": [], "ray": []}
    actor: list[float] = []
    n_batches = 0
    for r in range(repeats):
        for engine in ("local", "ray") if r % 2 == 0 else ("ray", "local"):
            out = tmp / f"ovh-{engine}-{r}" if engine == "ray" else tmp / f"ovh-{engine}-{r}.parquet"
            sec, gaps, n_batches = run(engine, out)
            whole[engine].append(sec)
            per[engine].append(gaps)
            if engine == "ray":
                assert_frame_equal(ref, P.read_dataset(str(out))[0])
                batches = P.read_manifest(str(out))["batches"]
                actor.extend(b["seconds"] for b in sorted(batches, key=lambda b: b["k"])[1:])
            else:
                assert_frame_equal(ref, pl.read_parquet(out))
    print(f"\n### per-batch time on cached units ({n_batches} batches of <= {BATCH_CHARS:,} characters, "
          f"{ref.height:,} segments; 1 actor vs -j 1; {repeats} rounds alternated)\n")
    print("| engine | per batch s: median over batches 2..N of all rounds | range | per-round medians | "
          "whole run s (median) | vs local |")
    print("|---|---|---|---|---|---|")
    med = {e: statistics.median([g for gaps in per[e] for g in gaps]) for e in per}
    for e in ("local", "ray"):
        flat = [g for gaps in per[e] for g in gaps]
        print(f"| {e} | {med[e]:.3f} | {min(flat):.3f}-{max(flat):.3f} | "
              f"{', '.join(f'{statistics.median(g):.3f}' for g in per[e])} | {statistics.median(whole[e]):.1f} | "
              f"{med[e] / med['local']:.3f}x |")
    st = statistics.median(actor)
    print(f"| ray, as the actor reports it (read rows to marker written) | {st:.3f} | "
          f"{min(actor):.3f}-{max(actor):.3f} | - | - | {st / med['local']:.3f}x |")
    print(f"\nRay per-batch overhead: {100 * (med['ray'] - med['local']) / med['local']:+.1f} % of the local "
          "engine's per-batch time (target <= 5 %)")


def part_speed(tmp: Path, repeats: int, words: int) -> None:
    import polars as pl
    from polars.testing import assert_frame_equal

    from ddpcore.engines.ray_engine import profile_ray
    from ddpcore.engines.run import profile_to_files
    from ddpcore.io.outputs import check_outputs
    from ddpcore.io.segments import SegmentColumns

    cols = SegmentColumns(*COLS)
    src = tmp / "speed.parquet"
    _litbank(words).write_parquet(src)
    one = tmp / "speed-one.parquet"
    pl.read_parquet(src).head(1).write_parquet(one)
    res: dict[str, list[float]] = {"local -j 2": [], "ray 2 actors": [], "ray one segment": []}
    ref = None
    for r in range(repeats):
        for name in ("local -j 2", "ray 2 actors"):
            out = tmp / f"speed-{r}-{name[:3]}.parquet"
            t = {"segments": check_outputs([("-o", out)], [src])[0], "anchors": None, "sentences": None}
            t0 = time.perf_counter()
            if name.startswith("ray"):
                profile_ray(src, t, cols=cols, n_process=2, quiet=True)
            else:
                profile_to_files(src, t, cols=cols, n_process=2, start_method="fork")
            res[name].append(time.perf_counter() - t0)
            got = pl.read_parquet(out)
            ref = got if ref is None else ref
            assert_frame_equal(ref, got)
        t = {"segments": check_outputs([("-o", tmp / f"one-{r}.parquet")], [one])[0], "anchors": None,
             "sentences": None}
        t0 = time.perf_counter()
        profile_ray(one, t, cols=cols, n_process=2, quiet=True)
        res["ray one segment"].append(time.perf_counter() - t0)
    assert ref is not None
    n_words = int(ref["n_tokens"].sum())
    base = statistics.median(res["local -j 2"])
    print(f"\n### LitBank {words:,} words ({ref.height:,} segments, {n_words:,} spaCy tokens), no cache\n")
    print("| run | wall s (median) | runs | words/s | vs local -j 2 |")
    print("|---|---|---|---|---|")
    for name, ts in res.items():
        m = statistics.median(ts)
        rate = f"{n_words / m:,.0f}" if name != "ray one segment" else "-"
        print(f"| {name} | {m:.1f} | {', '.join(f'{t:.1f}' for t in ts)} | {rate} | "
              f"{base / m:.2f}x |" if name != "ray one segment" else
              f"| {name} (actor start + pipeline load) | {m:.1f} | {', '.join(f'{t:.1f}' for t in ts)} | - | - |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("all", "rss", "overhead", "speed"), default="all")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--words", type=int, default=150_000)
    args = ap.parse_args()
    import ray

    os.environ.pop("RAY_ADDRESS", None)
    # the actors at the driver's priority, as in the local Ray that ddpcore starts (Ray's default is niceness 15)
    os.environ.setdefault("RAY_worker_niceness", "0")
    print(f"RAY_worker_niceness={os.environ['RAY_worker_niceness']}")
    tmp = Path(tempfile.mkdtemp(prefix="ddp-ray-cluster-bench-"))
    print(f"load before: {_load()}")
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    print(f"ray.init(num_cpus=2): {time.perf_counter() - t0:.1f} s (Ray start-up, paid once per cluster)")
    try:
        address = ray.get_runtime_context().gcs_address
        if args.part in ("all", "rss"):
            part_rss(tmp, address, args.repeats)
        if args.part in ("all", "overhead"):
            part_overhead(tmp, args.repeats, min(args.words, 150_000))
        if args.part in ("all", "speed"):
            part_speed(tmp, args.repeats, args.words)
    finally:
        ray.shutdown()
    print(f"\nload after: {_load()}")


if __name__ == "__main__":
    main()
