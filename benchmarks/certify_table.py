"""What ddp_certified costs (issue 21): words/s of `profile_anchors` with the certification stage
(the default rules), without it (the same rules with ``certify_model=""``) and, with ``--peer-src``,
with another build's default rules (e.g. a checkout of the previous release: "today's default"), in
one run.

    python benchmarks/certify_table.py [--rounds 5] [--input PATH] [--peer-src OTHER/src]

Two settings, alternated round by round so that load from other jobs falls on all alike: ``cold``
parses every time (``cache=False``: what a first run pays), ``cached`` serves the parse from a warm
parse cache (everything after the parse: where the certification stage's share is largest). Every
timing runs in a fresh worker process (``--worker``) that imports its build, warms spaCy on the
first segments and then times one ``profile_anchors`` call; only that call is timed. Prints the
median and range of words/s per setting and build, the ratios of the medians and the load average.
The default input is the bundled WMT25 source (332 segments).
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

HERE = Path(__file__).resolve()
SRC = HERE.parents[1] / "src"


def words(path: Path) -> int:
    import polars as pl

    return int(pl.read_ndjson(path)["source"].str.split(" ").list.len().sum())


def worker(path: Path, rules_name: str, cache: str) -> None:
    """One timed profile (printed in seconds); ``rules_name`` ``certified`` (default rules) or ``plain``."""
    import dataclasses

    import polars as pl

    import ddpcore
    from ddpcore.anchors.rules import get_rules

    rules = get_rules(None)
    if rules_name == "plain":
        rules = dataclasses.replace(rules, certify_model="")
    with tempfile.TemporaryDirectory() as tmp:  # warm spaCy and the imports on a few segments
        head = Path(tmp) / "head.jsonl"
        pl.read_ndjson(path).head(5).write_ndjson(head)
        ddpcore.profile_anchors(str(head), rules=rules, cache=False)
    t0 = time.perf_counter()
    ddpcore.profile_anchors(str(path), rules=rules, cache=False if cache == "-" else cache)
    print(time.perf_counter() - t0)


def timed(src: Path, path: Path, rules_name: str, cache: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, str(HERE), "--worker", rules_name, "--cache", cache, "--input", str(path)],
                         env=env, check=True, capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="rounds of every setting (default 5)")
    ap.add_argument("--input", type=Path, default=None, help="JSON Lines input (default: the bundled WMT25 source)")
    ap.add_argument("--peer-src", type=Path, default=None,
                    help="the src/ folder of another ddpcore build to time with its default rules")
    ap.add_argument("--worker", choices=("certified", "plain"), default=None, help=argparse.SUPPRESS)
    ap.add_argument("--cache", default="-", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.input is None:
        import ddpcore

        args.input = Path(ddpcore.__file__).parent / "data" / "wmt25_en_source.jsonl"
    if args.worker:
        worker(args.input, args.worker, args.cache)
        return
    builds = [("certified", SRC, "certified"), ("plain", SRC, "plain")]
    if args.peer_src is not None:
        builds.append(("peer", args.peer_src.resolve(), "certified"))
    n_words = words(args.input)
    caches = {name: tempfile.mkdtemp(prefix=f"ddp-certify-bench-{name}-") for name, _, _ in builds}
    for name, src, rules_name in builds:  # warm each build's parse cache
        timed(src, args.input, rules_name, caches[name])
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for mode in ("cold", "cached"):
            for name, src, rules_name in builds:
                t = timed(src, args.input, rules_name, "-" if mode == "cold" else caches[name])
                times.setdefault((mode, name), []).append(t)
    print(f"input {args.input.name}: {n_words} words, {args.rounds} rounds, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} (1, 5, 15 min) at the end")
    print(f"{'setting':<8} {'build':<10} {'median words/s':>15} {'range':>22}")
    for mode in ("cold", "cached"):
        med = {}
        for name, _, _ in builds:
            ws = sorted(n_words / t for t in times[(mode, name)])
            med[name] = statistics.median(ws)
            print(f"{mode:<8} {name:<10} {med[name]:>15,.0f} {ws[0]:>10,.0f}-{ws[-1]:<10,.0f}")
        print(f"{mode:<8} ratio certified/plain: {med['certified'] / med['plain']:.3f}")
        if "peer" in med:
            print(f"{mode:<8} ratio certified/peer:  {med['certified'] / med['peer']:.3f}")


if __name__ == "__main__":
    main()
