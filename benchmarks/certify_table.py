"""What ddp_certified costs (issue 21): words/s of `profile_anchors` with the certification stage
(the default rules) and without it (the same rules with ``certify_model=""``), in one run.

    python benchmarks/certify_table.py [--rounds 5] [--input PATH]

Two settings, alternated round by round so that load from other jobs falls on both alike:
``cold`` parses every time (``cache=False``: what a first run pays), ``cached`` serves the parse
from a warm parse cache (everything after the parse: where the certification stage's share is
largest). Prints the median and range of words/s per setting, the ratio of the medians and the load
average. The default input is the bundled WMT25 source (332 segments).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import tempfile
import time
from pathlib import Path

import ddpcore
from ddpcore.anchors.rules import get_rules

BUNDLED = Path(ddpcore.__file__).parent / "data" / "wmt25_en_source.jsonl"


def words(path: Path) -> int:
    import polars as pl

    return int(pl.read_ndjson(path)["source"].str.split(" ").list.len().sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--input", type=Path, default=BUNDLED)
    args = ap.parse_args()
    n_words = words(args.input)
    on = get_rules(None)
    off = dataclasses.replace(on, certify_model="")
    cache = tempfile.mkdtemp(prefix="ddp-certify-bench-")
    ddpcore.profile_anchors(str(args.input), rules=off, cache=cache)  # warm the cache (and the imports)
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for mode in ("cold", "cached"):
            for name, rules in (("certified", on), ("plain", off)):
                t0 = time.perf_counter()
                ddpcore.profile_anchors(str(args.input), rules=rules, cache=False if mode == "cold" else cache)
                times.setdefault((mode, name), []).append(time.perf_counter() - t0)
    print(f"input {args.input.name}: {n_words} words, {args.rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    print(f"{'setting':<8} {'rules':<10} {'median words/s':>15} {'range':>22}")
    for mode in ("cold", "cached"):
        med = {}
        for name in ("certified", "plain"):
            ws = sorted(n_words / t for t in times[(mode, name)])
            med[name] = statistics.median(ws)
            print(f"{mode:<8} {name:<10} {med[name]:>15,.0f} {ws[0]:>10,.0f}-{ws[-1]:<10,.0f}")
        print(f"{mode:<8} ratio certified/plain: {med['certified'] / med['plain']:.3f}")


if __name__ == "__main__":
    main()
