"""Speed of rule set ``learned`` against ``refined`` (issue 14: end-to-end words/s >= 0.9x).

pytest-benchmark suite (the link stage alone, on parsed tokens)::

    python -m pytest benchmarks/bench_learned.py --benchmark-enable --benchmark-columns=median,iqr,rounds

Printed table (end to end: ``profile_anchors`` with a loaded pipeline and no parse cache, and the
stages after parsing alone, from a warm parse cache)::

    python benchmarks/bench_learned.py [--repeats 5] [--litbank-words 40000]

Inputs: the bundled WMT25 source (87 documents, long literary ones) and, when present, the first
LitBank novels cut into 50-paragraph documents (``_ddp_corpus.litbank_segments``).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ddp_corpus import BUNDLED, NOVELS, litbank_segments  # noqa: E402

RULES = ("refined", "learned")


def _parsed_batch(df: Any) -> tuple[Any, Any, Any]:
    from ddpcore.anchors.spacy_extract import _parse_chunk, load_pipeline
    from ddpcore.pipeline import stages
    from ddpcore.engines.local import batches_from_frame, order_segments
    from ddpcore.io.segments import ROW, SegmentColumns
    import polars as pl

    cols = SegmentColumns("document_id", "segment_id", "source", "domain")
    frame = order_segments(df.with_row_index(ROW).with_columns(pl.col(ROW).cast(pl.Int64)), cols)
    (batch,) = list(batches_from_frame(frame, cols, batch_chars=1 << 62))
    units = stages.split_units(batch.frame["source"])
    toks = _parse_chunk(load_pipeline(None), units.texts, 256)
    return batch, units, toks


@pytest.fixture(scope="module")
def wmt25():
    import polars as pl

    return _parsed_batch(pl.read_ndjson(BUNDLED))


@pytest.mark.benchmark(group="stages after parsing (WMT25 bundled source)")
@pytest.mark.parametrize("rules", RULES)
def test_stages_after_parse(benchmark, wmt25, rules):
    from ddpcore.anchors.rules import get_rules
    from ddpcore.pipeline.stages import RuleArrays, run_stages

    batch, units, toks = wmt25
    ra = RuleArrays.compile(get_rules(rules))
    benchmark(run_stages, batch, toks, units, ra, distance="chained", sentence_unit="sentence")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5, help="rounds (each rule set once per round, alternating)")
    ap.add_argument("--litbank-words", type=int, default=40_000)
    args = ap.parse_args()
    import polars as pl

    from ddpcore.anchors.spacy_extract import load_pipeline
    from ddpcore.api import profile_anchors

    corpora = {"WMT25 source": pl.read_ndjson(BUNDLED)}
    if NOVELS.exists():
        corpora["LitBank novels"] = litbank_segments(args.litbank_words)[0]
    nlp = load_pipeline(None)
    print(f"load average before: {_load()} (1/5/15 min), {os.cpu_count()} CPUs")
    rows = []
    with tempfile.TemporaryDirectory(prefix="ddp-bench-cache-") as cache:
        for cname, df in corpora.items():
            words = int(df["source"].str.split(" ").list.len().sum())
            for rules in RULES:  # warm-up (not timed) and a warm parse cache for the stages-only rows
                profile_anchors(df, nlp=nlp, rules=rules, cache=cache)
            e2e: dict[str, list[float]] = {r: [] for r in RULES}
            post: dict[str, list[float]] = {r: [] for r in RULES}
            for _ in range(args.repeats):
                for rules in RULES:
                    t0 = time.perf_counter()
                    profile_anchors(df, nlp=nlp, rules=rules, cache=False)
                    e2e[rules].append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    profile_anchors(df, nlp=nlp, rules=rules, cache=cache)
                    post[rules].append(time.perf_counter() - t0)
            for rules in RULES:
                ratio_e2e = statistics.median(a / b for a, b in zip(e2e["refined"], e2e[rules]))
                ratio_post = statistics.median(a / b for a, b in zip(post["refined"], post[rules]))
                rows.append(f"| {cname} ({words:,} words) | {rules} | {words / statistics.median(e2e[rules]):,.0f} | "
                            f"{ratio_e2e:.2f} | {words / statistics.median(post[rules]):,.0f} | {ratio_post:.2f} |")
    print(f"load average after: {_load()}")
    print(f"\nrounds: {args.repeats}, median; one process, pipeline loaded; ratio = refined time / this time "
          "(median of the per-round ratios)\n")
    print("| corpus | rules | end-to-end words/s (no cache) | vs refined | after parsing words/s (cached parse) | "
          "vs refined |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
