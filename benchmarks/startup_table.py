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
- (c) = (a) or (b) with each worker's first chunk capped at ``--first-chunk`` characters; the
  fork variant is ``ddp profile``'s default on Linux;
- (d) started before the input is staged: spawn starts the workers, fork loads the pipeline in a
  background thread (both with the small first chunks).

The alternatives are selected inside the measured process through the module settings they
differ in (``ddpcore.engines.run.START_WORKERS_EARLY``, ``ddpcore.pipeline.parse.FIRST_CHUNK_CHARS``)
and ``--start-method``. Every output is compared with the ``-j 1`` output (all three tables,
exact).

The machine is shared: before each run the script waits (up to ``--wait`` seconds) until the
CPUs have been idle for a second, and it measures how much CPU other processes took during the
run (system-wide busy time from ``/proc/stat`` minus the run's own, from ``getrusage``); a run
in which they took more than ``--others`` of the machine is repeated (up to ``--attempts``
times, then kept and counted). The table reports the medians of the kept runs, how many were
repeated, and the load average.

Part 2, *start-up alone*: a fresh process creates a :class:`~ddpcore.pipeline.parse.Parser` and
parses one short line; wall seconds to the result and CPU seconds of all its processes
(spawn: two spaCy imports and loads; fork: one), for -j 1 (in-process), spawn and fork.

Needs the shared data folder (LitBank novels). Usage::

    python benchmarks/startup_table.py [--words 150000] [--repeats 3] [--first-chunk 20000]

Part 3, *cold start* (issue 25 §4; ``--cold`` runs only this part, no shared data needed): fresh
processes, alternated in rounds, wall and CPU seconds (the process and its children):

- a bare spaCy script: ``import spacy``, load the pipeline ddpcore loads (same name, same excluded
  components), read 20 segments of the bundled WMT25 source (JSON Lines) and parse them;
- the same script ending as ``ddp`` ends since 2026-12-07 (``os._exit`` after flushing: no interpreter
  teardown, :func:`ddpcore.cli.main.exit_fast`), so that ddpcore's own overhead is also shown without
  the teardown saving, part of which is spaCy's;
- ``ddp profile`` of the same 20 segments (``--no-cache``, Parquet output); the issue's target is
  at most +0.3 CPU-s over the bare script;
- ``ddp stats tau`` on a 10,000-row Parquet table (500 documents x 10 systems x 2 conditions,
  B 10 k); target <= 0.5 s wall on an idle machine;
- the imports alone that the two commands need beyond the bare script (numpy, polars,
  pyarrow.parquet, pandas - which pyarrow imports the first time it converts a numpy array).

``PYTHONDONTWRITEBYTECODE`` is removed from the children's environment and every command runs once
before the timed rounds, so the byte code is cached as in a normal installation::

    python benchmarks/startup_table.py --cold [--repeats 5] [--wait 0]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
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
    import ddpcore.pipeline.parse as P
    import ddpcore.engines.run as R
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
        (f"(c) fork at the first parse, first chunks {first_chunk:,} chars (default)",
         dict(j=2, method="fork", early=False, first_chunk=first_chunk)),
        ("(d) spawn started before staging, small first chunks",
         dict(j=2, method="spawn", early=True, first_chunk=first_chunk)),
        ("(d) fork, pipeline loaded while staging, small first chunks",
         dict(j=2, method="fork", early=True, first_chunk=first_chunk)),
    ]


def _cpu_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot (``/proc/stat``)."""
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    idle = f[3] + f[4]  # idle + iowait
    return sum(f) - idle, sum(f)


def wait_for_idle(max_wait: float, busy_max: float = 0.10) -> float:
    """Wait until the CPUs were at most ``busy_max`` busy over one second (or ``max_wait``
    seconds passed); returns the seconds waited."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < max_wait:
        b0, a0 = _cpu_jiffies()
        time.sleep(1.0)
        b1, a1 = _cpu_jiffies()
        if (b1 - b0) <= busy_max * max(a1 - a0, 1):
            break
    return time.monotonic() - t0


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measured(argv: list[str], max_wait: float) -> tuple[subprocess.CompletedProcess, dict]:
    """Run ``argv`` once the machine is idle; its wall and CPU seconds (the process and the
    descendants it waited for) and the share of the machine's CPU that other processes took."""
    wait_for_idle(max_wait)
    hz = os.sysconf("SC_CLK_TCK")
    n_cpu = os.cpu_count() or 1
    c0, (b0, a0), t0 = _children_cpu(), _cpu_jiffies(), time.perf_counter()
    argv = [repr(time.time()) if a == "LAUNCH" else a for a in argv]  # the driver's clock starts here
    r = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    c1, (b1, a1) = _children_cpu(), _cpu_jiffies()
    own = c1 - c0
    others = max(0.0, (b1 - b0) / hz - own)
    return r, {"wall": wall, "cpu": own, "others": others / (wall * n_cpu), "load": os.getloadavg()[0]}


def run_once(driver: Path, data: Path, out: Path, s: dict, max_wait: float) -> dict:
    args = ["profile", str(data), "-o", str(out), "--anchors", str(out.with_suffix(".anchors.parquet")),
            "--sentences", str(out.with_suffix(".sentences.parquet")), "-q", "--no-cache", "-j", str(s["j"]),
            "--start-method", s["method"]]
    r, m = measured([PY, str(driver), "LAUNCH", json.dumps(s), *args], max_wait)
    res = json.loads(r.stderr.strip().splitlines()[-1]) if r.stderr.strip() else {"rc": r.returncode}
    if r.returncode != 0 or res.get("rc") != 0:
        raise RuntimeError(f"ddp {' '.join(args)} failed: {r.stderr[-2000:]}")
    return {**res, **m}


def same_outputs(a: Path, b: Path) -> bool:
    import polars as pl

    return all(pl.read_parquet(a.with_suffix(sfx)).equals(pl.read_parquet(b.with_suffix(sfx)))
               for sfx in (".parquet", ".anchors.parquet", ".sentences.parquet"))


#: part 2: a fresh process starts a Parser and parses one line; prints wall seconds to the result
#: and the CPU seconds of the process and its workers
STARTUP = '''
import json, os, sys, time
t0 = time.perf_counter()
if __name__ == "__main__":
    from ddpcore.pipeline.parse import Parser
    n, method = int(sys.argv[1]), sys.argv[2]
    parser = Parser(n_process=n, start_method=method)
    parser.start()  # as ddp profile -j N does: every worker starts
    parser.parse(["Mary met John in Berlin. She liked him."])
    wall = time.perf_counter() - t0
    if parser._pool is not None:
        parser._pool.shutdown(wait=True)  # the workers end and are waited for: their CPU time is counted
    t = os.times()
    print(json.dumps({"wall": wall, "cpu": t.user + t.system + t.children_user + t.children_system}),
          file=sys.stderr)
'''


def startup_alone(tmp: Path, repeats: int, max_wait: float) -> list[tuple[str, float, float]]:
    """(label, median wall seconds, median CPU seconds) of a Parser's start-up, per method."""
    script = tmp / "startup.py"
    script.write_text(STARTUP)
    runs: dict[str, list[dict]] = {"-j 1 (in-process load)": [], "-j 2 spawn": [], "-j 2 fork": []}
    for _ in range(repeats):
        for label, (n, method) in zip(runs, ((1, "spawn"), (2, "spawn"), (2, "fork"))):
            r, _m = measured([PY, str(script), str(n), method], max_wait)
            if r.returncode != 0:
                raise RuntimeError(r.stderr[-2000:])
            runs[label].append(json.loads(r.stderr.strip().splitlines()[-1]))
    return [(label, statistics.median(x["wall"] for x in rs), statistics.median(x["cpu"] for x in rs))
            for label, rs in runs.items()]


#: the bare spaCy script of part 3: argv = pipeline, excluded components (comma list), input JSON Lines
BARE_SPACY = """
import json, sys
import spacy
texts = [json.loads(line)["source"] for line in open(sys.argv[3], encoding="utf-8")]
nlp = spacy.load(sys.argv[1], exclude=[c for c in sys.argv[2].split(",") if c])
print(sum(len(d) for d in nlp.pipe(texts)))
if len(sys.argv) > 4 and sys.argv[4] == "fast-exit":  # end as `ddp` does (cli.main.exit_fast): no teardown
    import os
    sys.stdout.flush()
    os._exit(0)
"""


def cold_start(tmp: Path, repeats: int, max_wait: float) -> None:
    """Part 3: cold ``ddp profile`` (20 segments) vs a bare spaCy script, cold ``ddp stats tau`` (10 k rows)."""
    import numpy as np
    import polars as pl

    from ddpcore.anchors.spacy_extract import UNUSED_COMPONENTS, resolve_pipeline

    src = Path(__file__).resolve().parents[1] / "src" / "ddpcore" / "data" / "wmt25_en_source.jsonl"
    seg20 = tmp / "seg20.jsonl"
    seg20.write_text("".join(src.read_text(encoding="utf-8").splitlines(keepends=True)[:20]), encoding="utf-8")
    rng = np.random.default_rng(0)
    n_docs, n_sys = 500, 10
    doc = np.repeat(np.arange(n_docs), n_sys * 2)
    sys_ = np.tile(np.arange(n_sys), n_docs * 2)
    cond = np.tile(np.repeat(["DOC", "MIX"], n_sys), n_docs)
    tau_in = tmp / "tau10k.parquet"
    pl.DataFrame({"document_id": doc, "segment_id": 0, "system": [f"s{k}" for k in sys_], "condition": cond,
                  "score": rng.normal(70, 10, doc.size) + sys_}).write_parquet(tau_in)
    bare = tmp / "bare_spacy.py"
    bare.write_text(BARE_SPACY)
    ddp = [PY, "-m", "ddpcore.cli.main"]
    commands = [
        ("bare spaCy script (20 segments)", [PY, str(bare), resolve_pipeline(None), ",".join(UNUSED_COMPONENTS), str(seg20)]),
        ("bare spaCy script ending without teardown, as ddp does", [PY, str(bare), resolve_pipeline(None),
                                                                    ",".join(UNUSED_COMPONENTS), str(seg20), "fast-exit"]),
        ("ddp profile, 20 segments, --no-cache", ddp + ["profile", str(seg20), "-o", str(tmp / "p.parquet"), "-q", "--no-cache"]),
        ("ddp stats tau, 10 k rows, B 10 k", ddp + ["stats", "tau", str(tau_in), "--a", "DOC", "--b", "MIX", "-q",
                                                    "-o", str(tmp / "tau.json")]),
        ("python -c 'import numpy'", [PY, "-c", "import numpy"]),
        ("python -c 'import numpy, polars'", [PY, "-c", "import numpy, polars"]),
        ("python -c 'import pyarrow.parquet'", [PY, "-c", "import pyarrow.parquet"]),
        ("python -c 'import pandas'", [PY, "-c", "import pandas"]),
        ("python -c 'import spacy'", [PY, "-c", "import spacy"]),
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    os.environ.clear()
    os.environ.update(env)
    for _, argv in commands:  # byte code written, files in the page cache
        subprocess.run(argv, capture_output=True, check=True)
    res: dict[str, list[dict]] = {label: [] for label, _ in commands}
    load0 = os.getloadavg()
    for _ in range(repeats):
        for label, argv in commands:
            r, m = measured(argv, max_wait)
            if r.returncode != 0:
                raise SystemExit(f"{label} failed: {r.stderr[-500:]}")
            res[label].append(m)

    def col(label: str, key: str) -> str:
        xs = [m[key] for m in res[label]]
        return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"

    print(f"\nCold start (fresh processes, byte code cached; medians (min-max) of {repeats} rounds):\n")
    print("| command | wall s | CPU s | load (1 min) at the end |\n|---|---|---|---|")
    for label, _ in commands:
        print(f"| {label} | {col(label, 'wall')} | {col(label, 'cpu')} | "
              f"{statistics.median(m['load'] for m in res[label]):.1f} |")
    for base, what in ((0, "bare spaCy"), (1, "bare spaCy without teardown")):
        gap = [p["cpu"] - b["cpu"] for p, b in zip(res[commands[2][0]], res[commands[base][0]])]
        print(f"\nddp profile - {what}, CPU s (paired by round): median {statistics.median(gap):+.2f} "
              f"(range {min(gap):+.2f} to {max(gap):+.2f})")
    print(f"load average {', '.join(f'{x:.1f}' for x in load0)} at the "
          f"start, {', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end; others' share of the CPUs: median "
          f"{100 * statistics.median(m['others'] for ms in res.values() for m in ms):.0f} %")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int, default=150_000, help="LitBank words of the input")
    ap.add_argument("--repeats", type=int, default=3, help="rounds over every alternative (medians)")
    ap.add_argument("--first-chunk", type=int, default=20_000, help="first-chunk cap of (c) and (d), characters")
    ap.add_argument("--only", default="", help="comma list of alternative numbers to run (0 = -j 1), default all")
    ap.add_argument("--wait", type=float, default=600, help="seconds to wait for idle CPUs before a run")
    ap.add_argument("--others", type=float, default=0.10,
                    help="repeat a run in which other processes took more than this share of the CPUs")
    ap.add_argument("--attempts", type=int, default=4, help="runs at most per measurement (then the last is kept)")
    ap.add_argument("--startup-repeats", type=int, default=5, help="repeats of part 2 (0 = skip it)")
    ap.add_argument("--cold", action="store_true", help="run only part 3, cold start (no shared data needed)")
    args = ap.parse_args()
    if args.cold:
        with tempfile.TemporaryDirectory(prefix="ddp-cold-") as d:
            cold_start(Path(d), args.repeats, args.wait)
        return
    chosen = variants(args.first_chunk)
    if args.only:
        keep = {int(x) for x in args.only.split(",")} | {0}
        chosen = [v for i, v in enumerate(chosen) if i in keep]
    times: dict[str, list[dict]] = {label: [] for label, _ in chosen}
    redone = 0
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ddp-startup-") as d:
        tmp = Path(d)
        df, n_words = litbank_segments(args.words)
        data = tmp / "litbank.parquet"
        df.write_parquet(data)
        driver = tmp / "driver.py"
        driver.write_text(DRIVER)
        for rnd in range(args.repeats):
            for i, (label, s) in enumerate(chosen):
                out = tmp / f"v{i}.parquet"
                for attempt in range(args.attempts):
                    res = run_once(driver, data, out, s, args.wait)
                    if res["others"] <= args.others:
                        break
                    redone += attempt + 1 < args.attempts
                times[label].append(res)
                if i and not same_outputs(tmp / "v0.parquet", out):
                    raise SystemExit(f"{label}: output differs from -j 1")
                print(f"round {rnd + 1}: {label}: {res['total']:.1f} s, first chunk {res['first']:.1f} s, "
                      f"others {100 * res['others']:.0f} % of the CPUs, load {res['load']:.2f}",
                      file=sys.stderr, flush=True)
        alone = startup_alone(tmp, args.startup_repeats, args.wait) if args.startup_repeats else []
    load_end = os.getloadavg()
    kept = [r for rs in times.values() for r in rs]
    base = statistics.median(r["total"] for r in times[chosen[0][0]])
    print(f"LitBank {n_words:,} words ({df.height:,} paragraphs), no parse cache, medians of {args.repeats} "
          f"rounds; every output identical to -j 1 (all three tables)\n")
    print("| alternative | first parsed chunk | total | speed-up vs -j 1 |\n|---|---|---|---|")
    for label, _ in chosen:
        first = statistics.median(r["first"] for r in times[label])
        total = statistics.median(r["total"] for r in times[label])
        print(f"| {label} | {first:.1f} s | {total:.1f} s | {base / total:.2f}x |")
    if alone:
        print(f"\nStart-up alone (a fresh process parses one line; medians of {args.startup_repeats}):\n")
        print("| parser | wall to the first result | CPU seconds, all processes |\n|---|---|---|")
        for label, wall, cpu in alone:
            print(f"| {label} | {wall:.2f} s | {cpu:.2f} s |")
    print(f"\nload average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in load_start)} at the start, "
          f"{', '.join(f'{x:.2f}' for x in load_end)} at the end; 1-min load at the end of each kept run: median "
          f"{statistics.median(r['load'] for r in kept):.2f}; other processes took a median "
          f"{100 * statistics.median(r['others'] for r in kept):.0f} % (max {100 * max(r['others'] for r in kept):.0f} %) "
          f"of the CPUs during the kept runs; {redone} run(s) repeated because others took more than "
          f"{100 * args.others:.0f} %")


if __name__ == "__main__":
    main()
