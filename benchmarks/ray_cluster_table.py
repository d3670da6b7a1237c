"""The disk-to-disk Ray engine against its targets (issue 24), on this machine.

    python benchmarks/ray_cluster_table.py [--part all|rss|overhead|speed] [--repeats 3] [--words 150000]

One Ray is started for the whole script (``ray.init(num_cpus=2)``: the "warm cluster"); every Ray
run joins it, so Ray's own start-up is reported apart. Parts:

- ``rss``: peak RSS (``VmHWM``) of a driver process running ``profile_ray`` on a synthetic
  Parquet input of 10 k and of 1 M segments (ten segments per document, texts drawn from 200
  distinct sentences, the parse cache warmed first so that the actors only run the stages), once
  with ``-o DIR/`` (the dataset is the output: the driver holds the plan only) and once with
  ``-o FILE`` (the driver also assembles the file, range by range). Target: 1 M <= 1.5x 10 k.
- ``overhead``: per-batch cost of the Ray path on cached units (everything but the parse: read
  the rows, cache look-up, stages, write the parts) against the local engine's per-batch time,
  default batch size (1,000,000 characters), 1 actor vs ``-j 1``, same process, rounds
  alternated; the input is ``--words`` of LitBank 40 times over (renamed documents: about 20
  batches). Each engine's fixed cost is measured on a one-segment input and taken off
  (``(T - T_one) / batches``); the Ray row "on the actor" is the median time an actor reports
  per batch, its first batch (imports, cache index, rule tables) left out. Target: Ray per
  batch <= 1.05x local.
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


def part_overhead(tmp: Path, repeats: int, words: int, copies: int = 40) -> None:
    import polars as pl
    from polars.testing import assert_frame_equal

    from ddpcore.engines import parts as P
    from ddpcore.engines.ray_engine import dataset_target, profile_ray
    from ddpcore.engines.run import profile_to_files
    from ddpcore.io.outputs import check_outputs
    from ddpcore.io.segments import SegmentColumns
    from ddpcore.pipeline.cache import cache_wrapper

    cols = SegmentColumns(*COLS)
    cache = tmp / "ovh-cache"
    src = tmp / "ovh.parquet"
    _litbank(words, copies=copies).write_parquet(src)
    one = tmp / "one.parquet"
    pl.read_parquet(src).head(1).write_parquet(one)

    def run(engine: str, source: Path, out: Path) -> tuple[float, int]:
        if str(out).endswith("/"):
            t = {"segments": dataset_target(str(out))}
        else:
            t = {"segments": check_outputs([("-o", out)], [source])[0], "anchors": None, "sentences": None}
        t0 = time.perf_counter()
        if engine == "ray":
            rep = profile_ray(source, t, cols=cols, n_process=1, batch_chars=1_000_000,
                              parse_wrapper=cache_wrapper(cache), quiet=True)
        else:
            rep = profile_to_files(source, t, cols=cols, n_process=1, parse_wrapper=cache_wrapper(cache))
        return time.perf_counter() - t0, rep.n_batches

    run("local", src, tmp / "warm.parquet")  # fill the cache (the copies' lines are hits after the first)
    ref = pl.read_parquet(tmp / "warm.parquet")
    res: dict[str, list[float]] = {"local": [], "ray": [], "local one": [], "ray one": []}
    steady: list[float] = []
    n_batches = 0
    for r in range(repeats):
        for engine in ("local", "ray"):
            out = tmp / f"ovh-{engine}-{r}.parquet"
            sec, n_batches = run(engine, src, out)
            res[engine].append(sec)
            assert_frame_equal(ref, pl.read_parquet(out))
            res[f"{engine} one"].append(run(engine, one, tmp / f"ovh-{engine}-one-{r}.parquet")[0])
        ds = tmp / f"ovh-ds-{r}"
        run("ray", src, f"{ds}/")  # type: ignore[arg-type]  (a dataset folder: the trailing / counts)
        batches = P.read_manifest(str(ds))["batches"]
        steady.append(statistics.median(b["seconds"] for b in batches[1:]))  # the actor's first batch: its warm-up
    med = {k: statistics.median(v) for k, v in res.items()}
    per = {e: (med[e] - med[f"{e} one"]) / n_batches for e in ("local", "ray")}
    print(f"\n### per-batch cost on cached units ({n_batches} batches of <= 1,000,000 characters, "
          f"{ref.height:,} segments, 1 process / 1 actor)\n")
    print("| engine | whole run s (median) | runs | one-segment run s | per batch s | vs local |")
    print("|---|---|---|---|---|---|")
    for e in ("local", "ray"):
        print(f"| {e} | {med[e]:.2f} | {', '.join(f'{t:.2f}' for t in res[e])} | {med[e + ' one']:.2f} | "
              f"{per[e]:.3f} | {per[e] / per['local']:.3f}x |")
    st = statistics.median(steady)
    print(f"| ray, on the actor (read rows to marker written, median over batches 2..N) | - | "
          f"{', '.join(f'{t:.3f}' for t in steady)} | - | {st:.3f} | {st / per['local']:.3f}x |")


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
