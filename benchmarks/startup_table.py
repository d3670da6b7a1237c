"""Worker start-up of ``ddp profile -j 2`` (issue 11, section 3); prints a Markdown table.

Every alternative runs the real command in a fresh process on the same LitBank input (no parse
cache), one after the other in rounds (round-robin, so a change in the machine's load hits
every alternative alike); the table shows medians of ``--repeats`` rounds:

- *first parsed chunk*: seconds from launching the process to the first chunk of parse results
  arriving in the driver (what a progress bar waits for);
- *total*: wall seconds of the whole command (imports, staging, start-up, parse, assembly);
- *speed-up*: the median total of ``-j 1`` over the median total of the alternative.

Alternatives (``-j 2`` unless said):

- ``-j 1``: one process; the pipeline loads in it at the first parse;
- (a) spawn, at the first parse: two fresh interpreters each import spaCy and load the pipeline
  (ddpcore before issue 11, section 3);
- (b) fork, at the first parse: the driver loads the pipeline, then forks the workers
  (copy-on-write);
- (c) = (a) or (b) with each worker's first chunk capped at ``--first-chunk`` characters;
- (d) started before the input is staged: spawn starts the workers, fork loads the pipeline in a
  background thread (both with the small first chunks); the fork variant is ``ddp profile``'s
  default on Linux.

The alternatives are selected inside the measured process through the module settings they
differ in (``ddpcore.ddp.run.START_WORKERS_EARLY``, ``ddpcore.ddp.parse.FIRST_CHUNK_CHARS``)
and ``--start-method``. Every output is compared with the ``-j 1`` output (all three tables,
exact). Needs the shared data folder (LitBank novels). Usage::

    python benchmarks/startup_table.py [--words 150000] [--repeats 3] [--first-chunk 20000]
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

PY = sys.executable

#: runs in the measured process: applies an alternative's settings, records when the first chunk
#: of parse results reaches the driver, runs ``ddp profile`` and prints the times as JSON
DRIVER = '''
import json, sys, time
launched = float(sys.argv[1])
settings = json.loads(sys.argv[2])
first = []
if __name__ == "__main__":
    import ddpcore.ddp.parse as P
    import ddpcore.ddp.run as R
    R.START_WORKERS_EARLY = settings["early"]
    P.FIRST_CHUNK_CHARS = settings["first_chunk"]
    advance = R.Progress.advance
    def first_advance(self, n):
        if not first:
            first.append(time.time() - launched)
        return advance(self, n)
    R.Progress.advance = first_advance
    from ddpcore.cli.main import main
    rc = main(sys.argv[3:])
    print(json.dumps({"rc": rc, "first": first[0] if first else None, "total": time.time() - launched}),
          file=sys.stderr)
'''


def variants(first_chunk: int) -> list[tuple[str, dict]]:
    """(label, settings) of every alternative: ``j``, ``method``, ``early``, ``first_chunk``."""
    return [
        ("-j 1 (one process)", dict(j=1, method="spawn", early=False, first_chunk=None)),
        ("(a) spawn at the first parse (before)", dict(j=2, method="spawn", early=False, first_chunk=None)),
        ("(b) fork at the first parse", dict(j=2, method="fork", early=False, first_chunk=None)),
        (f"(c) spawn at the first parse, first chunks {first_chunk:,} chars",
         dict(j=2, method="spawn", early=False, first_chunk=first_chunk)),
        (f"(c) fork at the first parse, first chunks {first_chunk:,} chars",
         dict(j=2, method="fork", early=False, first_chunk=first_chunk)),
        ("(d) spawn started before staging, small first chunks",
         dict(j=2, method="spawn", early=True, first_chunk=first_chunk)),
        ("(d) fork, pipeline loaded while staging, small first chunks (default)",
         dict(j=2, method="fork", early=True, first_chunk=first_chunk)),
    ]


def run_once(driver: Path, data: Path, out: Path, s: dict) -> dict:
    args = ["profile", str(data), "-o", str(out), "--anchors", str(out.with_suffix(".anchors.parquet")),
            "--sentences", str(out.with_suffix(".sentences.parquet")), "-q", "--no-cache", "-j", str(s["j"]),
            "--start-method", s["method"]]
    r = subprocess.run([PY, str(driver), repr(time.time()), json.dumps(s), *args], capture_output=True, text=True)
    res = json.loads(r.stderr.strip().splitlines()[-1]) if r.stderr.strip() else {"rc": r.returncode}
    if r.returncode != 0 or res.get("rc") != 0:
        raise RuntimeError(f"ddp {' '.join(args)} failed: {r.stderr[-2000:]}")
    return res


def same_outputs(a: Path, b: Path) -> bool:
    import polars as pl

    return all(pl.read_parquet(a.with_suffix(sfx)).equals(pl.read_parquet(b.with_suffix(sfx)))
               for sfx in (".parquet", ".anchors.parquet", ".sentences.parquet"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int, default=150_000, help="LitBank words of the input")
    ap.add_argument("--repeats", type=int, default=3, help="rounds over every alternative (medians)")
    ap.add_argument("--first-chunk", type=int, default=20_000, help="first-chunk cap of (c) and (d), characters")
    ap.add_argument("--only", default="", help="comma list of alternative numbers to run (0 = -j 1), default all")
    args = ap.parse_args()
    chosen = variants(args.first_chunk)
    if args.only:
        keep = {int(x) for x in args.only.split(",")} | {0}
        chosen = [v for i, v in enumerate(chosen) if i in keep]
    times: dict[str, list[dict]] = {label: [] for label, _ in chosen}
    loads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ddp-startup-") as d:
        tmp = Path(d)
        df, n_words = litbank_segments(args.words)
        data = tmp / "litbank.parquet"
        df.write_parquet(data)
        driver = tmp / "driver.py"
        driver.write_text(DRIVER)
        load_start = os.getloadavg()
        for rnd in range(args.repeats):
            for i, (label, s) in enumerate(chosen):
                loads.append(os.getloadavg()[0])
                out = tmp / f"v{i}.parquet"
                times[label].append(run_once(driver, data, out, s))
                if i and not same_outputs(tmp / "v0.parquet", out):
                    raise SystemExit(f"{label}: output differs from -j 1")
                print(f"round {rnd + 1}: {label}: {times[label][-1]['total']:.1f} s "
                      f"(load {loads[-1]:.2f})", file=sys.stderr, flush=True)
        load_end = os.getloadavg()
    base = statistics.median(r["total"] for r in times[chosen[0][0]])
    print(f"LitBank {n_words:,} words ({df.height:,} paragraphs), no parse cache, medians of {args.repeats} "
          f"rounds; every output identical to -j 1\n")
    print("| alternative | first parsed chunk | total | speed-up vs -j 1 |\n|---|---|---|---|")
    for label, _ in chosen:
        first = statistics.median(r["first"] for r in times[label])
        total = statistics.median(r["total"] for r in times[label])
        print(f"| {label} | {first:.1f} s | {total:.1f} s | {base / total:.2f}x |")
    print(f"\nload average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in load_start)} at the start, "
          f"{', '.join(f'{x:.2f}' for x in load_end)} at the end; 1-min load at each run's start: "
          f"median {statistics.median(loads):.2f}, max {max(loads):.2f}")


if __name__ == "__main__":
    main()
