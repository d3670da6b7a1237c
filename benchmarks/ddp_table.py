"""Print the DDP performance table (issue 2): medians over repeats, ratios from the same run.

    python benchmarks/ddp_table.py [--words 150000] [--repeats 3] [--items 10000000]

(a) words/s of bare ``nlp.pipe`` (same pipeline, same texts, lemmatizer excluded) vs
    ``profile_anchors`` in one process — target ratio >= 0.9;
(b) ``profile_anchors`` with 1 vs 2 worker processes (spawn + model load included) — target >= 1.7x;
(c) ``compute_distances`` (distance + segment/sentence DDP) on synthetic anchors, 1 and 2 threads,
    vs a plain-Python dict implementation — target >= 100 M anchors/s on 2 threads;
(d) ``import ddpcore`` and ``ddp --help`` wall time in fresh processes; cold ``ddp profile`` on a
    20-segment file.
Corpus for (a)/(b): LitBank novels from ../shared/data (paragraphs as segments).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ddp_corpus import REPO, litbank_segments, python_dict_distances, synthetic_items  # noqa: E402


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--words", type=int, default=150_000, help="words of LitBank text for (a)/(b)")
    ap.add_argument("--repeats", type=int, default=3, help="repeats per measurement (median reported)")
    ap.add_argument("--items", type=int, default=10_000_000, help="synthetic anchors for (c)")
    ap.add_argument("--python-items", type=int, default=1_000_000, help="anchors for the Python-dict baseline")
    ap.add_argument("--skip-parse", action="store_true", help="skip (a)/(b)")
    args = ap.parse_args()
    rows = []

    if not args.skip_parse:
        import polars as pl

        from ddpcore.anchors.spacy_extract import load_pipeline
        from ddpcore.pipeline.stages import split_units
        from ddpcore.api import profile_anchors

        df, words = litbank_segments(args.words)
        nlp = load_pipeline(None)
        texts = split_units(df["source"]).texts

        def bare():
            for _ in nlp.pipe(texts, batch_size=256):
                pass

        t_bare, _ = median_time(bare, args.repeats)
        t_prof, _ = median_time(lambda: profile_anchors(df, nlp=nlp), args.repeats)
        t_p2, _ = median_time(lambda: profile_anchors(df, n_process=2), args.repeats)
        t_p1 = t_prof
        rows += [
            ("(a) bare nlp.pipe", f"{words / t_bare:,.0f} words/s", f"{t_bare:.2f} s", ""),
            ("(a) profile_anchors, 1 process", f"{words / t_prof:,.0f} words/s", f"{t_prof:.2f} s",
             f"{t_bare / t_prof:.2f}x of bare pipe"),
            ("(b) profile_anchors, 2 processes", f"{words / t_p2:,.0f} words/s", f"{t_p2:.2f} s",
             f"{t_p1 / t_p2:.2f}x vs 1 process"),
        ]
        print(f"corpus: {df['document_id'].n_unique()} LitBank novels, {df.height:,} paragraphs, {words:,} words",
              file=sys.stderr)
        del pl

    # (c) kernels
    from ddpcore._native import load

    K = load("ddp_kernels")
    it = synthetic_items(args.items)
    n = len(it["kind"])

    def kern(threads):
        return lambda: K.compute_distances(it["offsets"], it["kind"], it["sent"], it["ent"], it["compat"], it["seg"],
                                           it["gsent"], it["n_ent"], it["n_seg"], it["n_sent"], False, threads)

    t1, _ = median_time(kern(1), args.repeats + 2)
    t2, _ = median_time(kern(2), args.repeats + 2)
    small = synthetic_items(args.python_items)
    tpy, _ = median_time(lambda: python_dict_distances(small), 1 if args.python_items > 2e6 else args.repeats)
    py_rate = len(small["kind"]) / tpy
    rows += [
        (f"(c) distance+DDP kernel, 1 thread, {n / 1e6:.0f} M anchors", f"{n / t1 / 1e6:,.0f} M anchors/s", f"{t1 * 1e3:.0f} ms", ""),
        (f"(c) distance+DDP kernel, 2 threads, {n / 1e6:.0f} M anchors", f"{n / t2 / 1e6:,.0f} M anchors/s", f"{t2 * 1e3:.0f} ms",
         f"{(n / t2) / py_rate:,.0f}x vs Python dicts"),
        (f"(c) Python dict implementation, {len(small['kind']) / 1e6:.0f} M anchors", f"{py_rate / 1e6:,.2f} M anchors/s",
         f"{tpy:.2f} s", ""),
    ]

    # (d) start-up
    def fresh(code):
        return lambda: subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)

    t_imp, _ = median_time(fresh("import ddpcore"), 5)
    t_help, _ = median_time(lambda: subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "--help"], check=True,
                                                   capture_output=True), 5)
    t_py, _ = median_time(fresh("pass"), 5)
    with tempfile.TemporaryDirectory() as tmp:
        mini = REPO / "tests" / "data" / "wmt25_mini.jsonl"
        t_cold, _ = median_time(lambda: subprocess.run(
            [sys.executable, "-m", "ddpcore.cli.main", "profile", str(mini), "-o", f"{tmp}/o.parquet", "-q"],
            check=True, capture_output=True), 3)
    rows += [
        ("(d) python -c pass (interpreter baseline)", "", f"{t_py * 1e3:.0f} ms", ""),
        ("(d) python -c 'import ddpcore'", "", f"{t_imp * 1e3:.0f} ms", f"+{(t_imp - t_py) * 1e3:.0f} ms over bare Python"),
        ("(d) ddp --help", "", f"{t_help * 1e3:.0f} ms", ""),
        ("(d) cold `ddp profile` on 20 segments (fresh process)", "", f"{t_cold:.2f} s", "no JIT: kernels are AOT Cython"),
    ]
    w = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{w}}  {'rate':>22}  {'median':>10}  ratio")
    for r in rows:
        print(f"{r[0]:<{w}}  {r[1]:>22}  {r[2]:>10}  {r[3]}")


if __name__ == "__main__":
    main()
