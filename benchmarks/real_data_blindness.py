"""``ddp mix`` and ``ddp blindness`` on the public WMT24 / WMT25 system outputs (issue 10).

    python benchmarks/real_data_blindness.py DATA_ROOT [--json]

DATA_ROOT holds the folders ``wmt24-genmt`` (WMT24 general MT: ``wmt24_en.docs`` and the system-output
archive of en-cs, en-hi, en-ja, en-zh) and ``wmt25-genmt`` (WMT25 en-ko hypotheses of two systems).

1. MIX construction (seed 0) for every language pair: pool = every MT system (the reference ``refA``
   left out, it is the scoring reference below), and for WMT24 also pool = the 8 first systems in
   code-point order, to show the infeasible share falling with the pool size.
2. Blindness of a context-extended metric on WMT24 (no MIX human scores exist): chrF (sacrebleu,
   ``sentence_chrf``) of each segment *with its preceding segment as context* (SLIDE-style window of 2
   segments: hypothesis window vs reference window), scored for the system that produced the segment.
   In DOC the context is the system's own previous segment; in MIX it is whatever system the MIX
   document put there. ``ddp blindness`` with --margin 1 (chrF points), B = 10,000 / 1,000.
   A plain segment-level metric would give identical DOC and MIX scores by construction.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
from ddpcore.stats import BlindnessDesign, ResampleOptions


def windowed_chrf(frame: pl.DataFrame, ref: dict[int, str], prev_line: dict[int, int | None]) -> np.ndarray:
    """chrF(prev_hyp + cur_hyp, prev_ref + cur_ref) per row of ``frame`` (columns segment_id, text, prev_text)."""
    from sacrebleu.metrics import CHRF

    chrf = CHRF()
    out = np.empty(frame.height)
    for i, (seg, text, prev) in enumerate(frame.select("segment_id", "text", "prev_text").iter_rows()):
        p = prev_line[seg]
        r = (ref[p] + " " if p is not None else "") + ref[seg]
        h = (prev + " " if prev is not None else "") + text
        out[i] = chrf.sentence_score(h, [r]).score
    return out


def with_prev(frame: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    return frame.sort(*by, "segment_id").with_columns(pl.col("text").shift(1).over(by).alias("prev_text"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--lps", default="en-cs,en-hi,en-ja,en-zh")
    args = ap.parse_args()
    from ddpcore.io.wmt_outputs import read_wmt_outputs
    from ddpcore.stats.blindness import blindness
    from ddpcore.curate.mix import build_mix

    w24 = args.root / "wmt24-genmt"
    results: dict[str, object] = {}
    for lp in args.lps.split(","):
        t0 = time.perf_counter()
        outs = read_wmt_outputs(w24 / "wmt24_en.docs", w24 / "wmt24_system_outputs_en-cs_en-hi_en-ja_en-zh.tar.xz",
                                lp=lp)
        t_read = time.perf_counter() - t0
        t0 = time.perf_counter()
        mix = build_mix(outs, seed=0, exclude_systems=["refA"])
        t_mix = time.perf_counter() - t0
        small = build_mix(outs, seed=0, pool=sorted(set(outs["system"]) - {"refA"})[:8])
        inf_docs = mix.infeasible["document_id"].n_unique()
        row: dict[str, object] = {
            "documents": mix.n_documents, "segments": mix.n_segments, "pool": len(mix.pool),
            "mix_rows": mix.mix.height, "infeasible_documents": inf_docs,
            "infeasible_documents_pool8": small.infeasible["document_id"].n_unique(),
            "read_s": round(t_read, 2), "mix_s": round(t_mix, 3),
        }
        # context-extended metric: DOC and MIX windowed chrF, attributed to the producing system
        ref_frame = outs.filter(pl.col("system") == "refA")
        ref = dict(zip(ref_frame["segment_id"].to_list(), ref_frame["text"].to_list()))
        by_doc = ref_frame.sort("document_id", "segment_id").with_columns(
            pl.col("segment_id").shift(1).over("document_id").alias("p"))
        prev_line = {s: (None if p is None else int(p))
                     for s, p in zip(by_doc["segment_id"].to_list(), by_doc["p"].to_list())}
        doc = with_prev(outs.filter(pl.col("system").is_in(mix.pool)), ["document_id", "system"])
        mx = with_prev(mix.mix, ["document_id", "system"])
        t0 = time.perf_counter()
        doc = doc.with_columns(pl.Series("score", windowed_chrf(doc, ref, prev_line)), pl.lit("DOC").alias("condition"),
                               pl.col("system").alias("source_system"))
        mx = mx.with_columns(pl.Series("score", windowed_chrf(mx, ref, prev_line)), pl.lit("MIX").alias("condition"))
        t_score = time.perf_counter() - t0
        cols = ["document_id", "segment_id", "system", "source_system", "condition", "score"]
        scores = pl.concat([doc.select(cols), mx.select(cols)])
        t0 = time.perf_counter()
        res = blindness(scores, margin=1.0, options=ResampleOptions(n_boot=10_000, seed=0), design=BlindnessDesign(n_boot_cluster=1000))
        t_bl = time.perf_counter() - t0
        ev = res.evidence
        row.update({
            "verdict": res.verdict, "n_pairs": ev["tost"]["n"], "mean_diff": ev["tost"]["mean_diff"],
            "ci": [ev["tost"]["ci_low"], ev["tost"]["ci_high"]], "p_tost": ev["tost"]["p_value"],
            "sd_diff": ev["tost"]["sd_diff"], "power": res.power, "n_needed": res.n_needed,
            "mdd_80": ev["power"]["mdd_80"], "tau": ev["ranking"]["tau"],
            "tau_ci": [ev["ranking"]["ci_low"], ev["ranking"]["ci_high"]],
            "share_below": ev["ranking"]["share_below_tau_min"], "same_clusters": ev["clusters"]["same_clusters"],
            "n_clusters": [len(ev["clusters"]["clusters_a"]), len(ev["clusters"]["clusters_b"])],
            "score_s": round(t_score, 1), "blindness_s": round(t_bl, 2),
        })
        results[f"wmt24 {lp}"] = row
        print(lp, row, file=sys.stderr)
    w25 = args.root / "wmt25-genmt" / "wmt25_en-ko_KR_hypotheses_Algharb_Laniqo.jsonl"
    if w25.exists():
        mix = build_mix(w25, seed=0, document="doc", segment="seg_idx", text="tgt")
        results["wmt25 en-ko"] = {"documents": mix.n_documents, "segments": mix.n_segments, "pool": len(mix.pool),
                                  "mix_rows": mix.mix.height,
                                  "infeasible_documents": mix.infeasible["doc"].n_unique()}
    if args.json:
        print(json.dumps(results, indent=2, default=float))
        return
    print("| data | docs | segments | pool | MIX rows | docs shorter than pool (pool 8) |\n|---|---|---|---|---|---|")
    for k, r in results.items():
        print(f"| {k} | {r['documents']} | {r['segments']} | {r['pool']} | {r['mix_rows']:,} | "
              f"{r['infeasible_documents']} ({r.get('infeasible_documents_pool8', '—')}) |")
    print("\n| lp | pairs | mean(DOC−MIX) | 90 % CI | p (±1) | SD | power | n for 80 % | MDD 80 % | tau [95 % CI] | "
          "< 0.667 | clusters DOC/MIX (same) | verdict |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for k, r in results.items():
        if "verdict" not in r:
            continue
        print(f"| {k} | {r['n_pairs']:,} | {r['mean_diff']:+.3f} | [{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}] | "
              f"{r['p_tost']:.2g} | {r['sd_diff']:.2f} | {r['power']:.3f} | {r['n_needed']} | {r['mdd_80']:.3f} | "
              f"{r['tau']:.3f} [{r['tau_ci'][0]:.3f}, {r['tau_ci'][1]:.3f}] | {100 * r['share_below']:.1f} % | "
              f"{r['n_clusters'][0]}/{r['n_clusters'][1]} ({'yes' if r['same_clusters'] else 'no'}) | "
              f"**{r['verdict']}** |")


if __name__ == "__main__":
    main()
