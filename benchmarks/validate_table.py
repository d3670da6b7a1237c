"""Print the DDP-vs-gold validation tables (docs/validation.md) for LitBank, GUM and OntoGUM.

Usage (from the repository root)::

    python benchmarks/validate_table.py [--data DIR] [-j 2] [--rules paper] [--tail 5,15] [--json out.json]

Each text corpus is parsed once per distance mode (GUM and OntoGUM share their text, so one
DDP run serves both golds in every gold scope: full, restricted, ddp); the words/s of every DDP
run are printed. A second table gives, for every DDP column of the run (``ddp`` and, when present,
``ddp_certified``), tail precision / recall at each ``--tail`` k and the coverage of ``ddp_certified``,
each as % with its exact 95 % Clopper-Pearson interval and n.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import ddpcore.gold.validate as V
import polars as pl
from ddpcore.io.gold import read_gold

REPO = Path(__file__).resolve().parents[1]
ROWS = (  # (table label, gold name, genre or None for all)
    ("LitBank (fiction)", "litbank", None),
    ("GUM news", "gum", "news"),
    ("GUM fiction", "gum", "fiction"),
    ("GUM all 23 genres", "gum", None),
    ("OntoGUM news", "ontogum", "news"),
    ("OntoGUM fiction", "ontogum", "fiction"),
    ("OntoGUM all", "ontogum", None),
)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _r(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def _ci(p: Any) -> str:
    if p.share is None:
        return f"— /{p.n}"
    return f"{100 * p.share:.1f} [{100 * p.ci_low:.1f}, {100 * p.ci_high:.1f}] /{p.n}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"), help="folder holding litbank-coref/ and gum-coref/")
    ap.add_argument("-j", "--n-process", type=int, default=2, help="spaCy worker processes")
    ap.add_argument("--pipeline", default=None, help="spaCy pipeline (default: ddpcore's default)")
    ap.add_argument("--rules", default=None, help="anchor rule set (default: ddpcore's default)")
    ap.add_argument("--distance", choices=("chained", "nearest", "both"), default="both")
    ap.add_argument("--gold-scope", dest="gold_scope", choices=V.GOLD_SCOPES + ("all",), default="all",
                    help="gold scope(s) to report (default: all three)")
    ap.add_argument("--tail", default="5,15", help="tail thresholds k, comma-separated (default: 5,15)")
    ap.add_argument("--json", default=None, help="also write all numbers to this JSON file")
    args = ap.parse_args(argv)
    tails = V.check_tails([int(t) for t in args.tail.split(",") if t.strip()])

    data = Path(args.data)
    corpora = {
        "litbank": read_gold(data / "litbank-coref" / "litbank_coref_tsv.tar.xz"),
        "gum": read_gold(data / "gum-coref" / "gum_dep_conllu_with_coref.tar.xz"),
        "ontogum": read_gold(data / "gum-coref" / "ontogum_conllu.tar.xz"),
    }
    if corpora["gum"].sentences["text"].to_list() != corpora["ontogum"].sentences["text"].to_list():
        print("GUM and OntoGUM sentences differ; cannot share one DDP run", file=sys.stderr)
        return 1
    text_of = {"litbank": "litbank", "gum": "gum", "ontogum": "gum"}
    distances = ("chained", "nearest") if args.distance == "both" else (args.distance,)
    scopes = V.GOLD_SCOPES if args.gold_scope == "all" else (args.gold_scope,)
    results: dict[str, Any] = {}
    timings: list[tuple[str, str, dict[str, float]]] = []
    for distance in distances:
        runs = {}
        for name in ("litbank", "gum"):
            run, timing = V.profile_gold(corpora[name], distance=distance, pipeline=args.pipeline, rules=args.rules,
                                         n_process=args.n_process)
            runs[name] = run
            timings.append((name, distance, timing))
            print(f"# DDP run {name} {distance}: {timing['words']:.0f} words, {timing['seconds']:.1f} s, "
                  f"{timing['words_per_second']:.0f} words/s", file=sys.stderr)
        for gold_name, corpus in corpora.items():
            run = runs[text_of[gold_name]]
            for scope in scopes:
                gold = V.compute_gold_distances(corpus, distance=distance, gold_scope=scope)
                res = V.compare_with_gold(gold, run.segments, run.anchors, corpus=corpus, gold_scope=scope,
                                          tails=tails)
                results[f"{gold_name}/{distance}/{scope}"] = res
        signature = runs["gum"].signature

    print(f"ddpcore DDP vs gold distance; pipeline {signature.get('pipeline_name')} {signature.get('pipeline_version')}, "
          f"rules {signature.get('rules')}, spaCy {signature.get('spacy')}, {args.n_process} process(es)\n")
    print("| gold | distance | gold scope | n | Pearson r | Spearman ρ | under % | exact % | over % | mean DDP − gold |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    out: dict[str, Any] = {"signature": signature, "timing": [
        {"text": n, "distance": d, **t} for n, d, t in timings], "rows": []}
    for distance in distances:
        for scope in scopes:
            for label, gold_name, genre in ROWS:
                res = results[f"{gold_name}/{distance}/{scope}"]
                if genre is not None and genre not in res.by_genre:
                    continue  # a small --data folder without that genre
                m = res.overall if genre is None else res.by_genre[genre]
                mean = f"{m.mean_signed_error:+.2f}".replace("-", "−")
                print(f"| {label} | {distance} | {scope} | {m.n_segments} | {_r(m.pearson)} | {_r(m.spearman)} | "
                      f"{_pct(m.share_under)} | {_pct(m.share_exact)} | {_pct(m.share_over)} | {mean} |")
                out["rows"].append({"label": label, "distance": distance, "gold_scope": scope, **m.to_dict()})
    columns = list(next(iter(results.values())).columns)
    print("\nTails per DDP column (% [exact 95% CI] /n; precision@k: of DDP >= k, gold >= k; recall@k: of gold >= k, "
          "DDP >= k; coverage: of gold > 0, ddp_certified > 0):\n")
    cells = [f"{w}@{k}" for k in tails for w in ("precision", "recall")]
    print("| gold | distance | gold scope | column | n | " + " | ".join(cells) + " | coverage |")
    print("|---|---|---|---|---|" + "---|" * (len(cells) + 1))
    for distance in distances:
        for scope in scopes:
            for label, gold_name, genre in ROWS:
                res = results[f"{gold_name}/{distance}/{scope}"]
                if genre is not None and genre not in res.by_genre:
                    continue
                for col in columns:
                    rep = res.columns[col]
                    m = rep.overall if genre is None else rep.by_genre[genre]
                    figs = [_ci(p) for t in m.tails for p in (t.precision, t.recall)]
                    print(f"| {label} | {distance} | {scope} | {col} | {m.n_segments} | " + " | ".join(figs)
                          + f" | {_ci(m.coverage) if m.coverage else '—'} |")
                    out["rows"].append({"label": label, "distance": distance, "gold_scope": scope, "column": col,
                                        "figures": m.to_dict()})
    print("\nDDP runs (words/s, spaCy parse + anchors + distances, per gold-sentence segments):")
    for name, distance, t in timings:
        print(f"- {name} {distance}: {t['words']:.0f} words in {t['seconds']:.1f} s = {t['words_per_second']:.0f} words/s")
    for key in [f"{g}/{distances[0]}/{sc}" for sc in scopes if sc != "restricted" for g in ("litbank", "gum", "ontogum")]:
        res = results[key]
        print(f"\nOver-estimates {key}: {res.over_estimates.height} segments; responsible anchors (kind, label, antecedent):")
        print("| anchor kind | label | antecedent | diagnosis | segments | excess sentences |")
        print("|---|---|---|---|---|---|")
        for r in res.over_estimate_causes.head(12).iter_rows(named=True):
            print(f"| {r['anchor_kind']} | {r['anchor_label']} | {r['antecedent_kind']} | {r['diagnosis']} | "
                  f"{r['n_segments']} | {r['excess_sentences']} |")
        diag = res.over_estimates.group_by("diagnosis").agg(pl.len().alias("n"), pl.col("error").sum().alias("excess"))
        print("by diagnosis: " + ", ".join(f"{r['diagnosis']} {r['n']} segments / {r['excess']} sentences"
                                           for r in diag.sort("excess", descending=True).iter_rows(named=True)))
        out[f"causes/{key}"] = res.over_estimate_causes.to_dicts()
        out[f"over/{key}"] = res.over_estimates.drop("text").to_dicts()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
