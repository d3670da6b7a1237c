"""Extractor presets: words/s and agreement with the default, on real text (issue 4).

    python benchmarks/presets_table.py [--repeats 2] [--rules paper] [--litbank-words 40000]

For each preset (default = en_core_web_sm without lemmatizer; fast = same without parser,
senter splits sentences; md = en_core_web_md, if installed) and each corpus (the bundled
WMT25 English source; the first LitBank novels from ../shared/data, paragraphs as
segments), profile in one process with the pipeline already loaded (median of --repeats),
then report ``ddpcore.agree`` of the preset's DDP against the default's (paper Appendix A.3).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ddp_corpus import BUNDLED, NOVELS, litbank_segments  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--rules", default=None)
    ap.add_argument("--litbank-words", type=int, default=40_000)
    args = ap.parse_args()

    import polars as pl

    from ddpcore.ddp.agree import agree
    from ddpcore.anchors.spacy_extract import load_pipeline
    from ddpcore.errors import DDPUsageError
    from ddpcore.ddp.profile import profile_anchors

    corpora = {"WMT25 source": pl.read_ndjson(BUNDLED)}
    if NOVELS.exists():
        df, _ = litbank_segments(args.litbank_words)
        corpora["LitBank novels"] = df
    presets = ["default", "fast", "md"]
    print("| corpus | preset | words/s | ratio to default | Pearson r | Spearman ρ | identical % | within ±5 % | domain order kept |")
    print("|---|---|---|---|---|---|---|---|---|")
    for cname, df in corpora.items():
        words = int(df["source"].str.split(" ").list.len().sum())
        base = None
        base_rate = None
        for preset in presets:
            try:
                nlp = load_pipeline(preset)
            except DDPUsageError as exc:
                print(f"| {cname} | {preset} | not installed ({exc}) | | | | | | |")
                continue
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                res = profile_anchors(df, nlp=nlp, pipeline=preset, rules=args.rules)
                times.append(time.perf_counter() - t0)
            rate = words / statistics.median(times)
            seg = res.segments
            if base is None:
                base, base_rate = seg, rate
                print(f"| {cname} | {preset} | {rate:,.0f} | 1.00 | — | — | — | — | — |")
                continue
            a = agree(base, seg)
            dom = "yes" if a.ordering_preserved else "no"
            print(f"| {cname} | {preset} | {rate:,.0f} | {rate / base_rate:.2f} | {a.pearson:.3f} | {a.spearman:.3f} | "
                  f"{100 * a.share_identical:.1f} | {100 * a.share_within:.1f} | {dom} |")


if __name__ == "__main__":
    main()
