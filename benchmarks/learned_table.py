"""Held-out validation of rule set ``learned`` against ``paper`` and ``refined`` (docs/validation.md,
section "learned"), and the WMT25 domain table under ``learned``.

Usage (from the repository root)::

    python benchmarks/learned_table.py [--data ../shared/data] [-j 1] [--distance chained] [--json out.json]

Held out from training and tuning (``scripts/train_antecedent.py`` reads GUM train and dev only):
the GUM ``test`` split and the GENTLE ``test2`` documents (official ``splits.md`` of the GUM archive),
OntoGUM for those same documents, and all of LitBank. Every gold sentence is profiled as one
segment (``ddp validate``'s setting); each text is parsed once per rule set (the parse cache keeps
the parses), and every table is reported in the three gold scopes ``full``, ``restricted``, ``ddp``.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tarfile
from pathlib import Path
from typing import Any

import polars as pl

import ddpcore.gold.validate as V
from ddpcore import schema
from ddpcore.io.gold import GENRE, GoldCorpus, read_gold

REPO = Path(__file__).resolve().parents[1]
RULES = ("paper", "refined", "learned")


def read_splits(archive: Path) -> dict[str, list[str]]:
    with tarfile.open(archive, "r:*") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("splits.md"))
        text = tar.extractfile(member).read().decode("utf-8")  # type: ignore[union-attr]
    out: dict[str, list[str]] = {}
    cur = None
    for line in text.splitlines():
        if m := re.match(r"^##\s+(\S+)", line):
            cur = m.group(1)
            out[cur] = []
        elif cur and (m := re.match(r"^\s*\*\s+(\S+)", line)):
            out[cur].append(m.group(1))
    return out


def subset(corpus: GoldCorpus, names: list[str]) -> GoldCorpus:
    keep = pl.col(schema.DOCUMENT_ID).is_in(names)
    return GoldCorpus(corpus.sentences.filter(keep), corpus.mentions.filter(keep), corpus.formats, corpus.warnings)


def _r(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def wmt25_table(n_process: int) -> list[dict[str, Any]]:
    from ddpcore.cli._common import bundled_default
    from ddpcore.api import profile_anchors

    res = profile_anchors(bundled_default(), rules="learned", n_process=n_process)
    return res.summary().to_dicts()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"), help="folder holding gum-coref/ and litbank-coref/")
    ap.add_argument("-j", "--n-process", type=int, default=1, help="spaCy worker processes")
    ap.add_argument("--distance", choices=("chained", "nearest"), default="chained")
    ap.add_argument("--rules", default=",".join(RULES), help="comma-separated rule sets (default: paper,refined,learned)")
    ap.add_argument("--no-wmt25", action="store_true", help="skip the WMT25 domain table")
    ap.add_argument("--json", default=None, help="also write all numbers to this JSON file")
    args = ap.parse_args(argv)

    data = Path(args.data)
    gum_archive = data / "gum-coref" / "gum_dep_conllu_with_coref.tar.xz"
    splits = read_splits(gum_archive)
    held = {"GUM test": splits["test"], "GENTLE": splits["test2"]}
    gum = read_gold(gum_archive)
    onto = read_gold(data / "gum-coref" / "ontogum_conllu.tar.xz")
    litbank = read_gold(data / "litbank-coref" / "litbank_coref_tsv.tar.xz")
    gum_held = subset(gum, held["GUM test"] + held["GENTLE"])
    onto_held = subset(onto, held["GUM test"] + held["GENTLE"])
    if gum_held.sentences["text"].to_list() != onto_held.sentences["text"].to_list():
        print("GUM and OntoGUM sentences differ; cannot share one DDP run", file=sys.stderr)
        return 1
    # (row label, gold corpus, text corpus name, document filter or None, genre filter or None)
    rows = [
        ("GUM test", gum_held, "gum", held["GUM test"], None),
        ("GUM test news", gum_held, "gum", held["GUM test"], "news"),
        ("GUM test fiction", gum_held, "gum", held["GUM test"], "fiction"),
        ("GENTLE", gum_held, "gum", held["GENTLE"], None),
        ("OntoGUM test", onto_held, "gum", held["GUM test"], None),
        ("OntoGUM GENTLE", onto_held, "gum", held["GENTLE"], None),
        ("LitBank", litbank, "litbank", None, None),
    ]
    texts = {"gum": gum_held, "litbank": litbank}
    rules_list = [r.strip() for r in args.rules.split(",") if r.strip()]
    runs: dict[tuple[str, str], Any] = {}
    timings = []
    for rules in rules_list:
        for name, corpus in texts.items():
            run, timing = V.profile_gold(corpus, distance=args.distance, rules=rules, n_process=args.n_process)
            runs[(rules, name)] = run
            timings.append({"rules": rules, "text": name, **timing})
            print(f"# {rules} {name}: {timing['words']:.0f} words, {timing['seconds']:.1f} s", file=sys.stderr)

    out: dict[str, Any] = {"distance": args.distance, "rows": [], "timing": timings,
                           "signature": {r: runs[(r, "gum")].signature for r in rules_list}}
    print(f"DDP vs gold on held-out data ({args.distance}); rule sets {', '.join(rules_list)}\n")
    print("| gold | scope | rules | n | Pearson r | Spearman ρ | under % | exact % | over % | mean DDP−gold |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    golds: dict[tuple[int, str], pl.DataFrame] = {}
    for scope in V.GOLD_SCOPES:
        for label, corpus, text, docs, genre in rows:
            key = (id(corpus), scope)
            if key not in golds:
                golds[key] = V.compute_gold_distances(corpus, distance=args.distance, gold_scope=scope)
            gold = golds[key]
            if docs is not None:
                gold = gold.filter(pl.col(schema.DOCUMENT_ID).is_in(docs))
            if genre is not None:
                gold = gold.filter(pl.col(GENRE) == genre)
            for rules in rules_list:
                run = runs[(rules, text)]
                m = V.compare_with_gold(gold, run.segments, gold_scope=scope).overall
                print(f"| {label} | {scope} | {rules} | {m.n_segments} | {_r(m.pearson)} | {_r(m.spearman)} | "
                      f"{_pct(m.share_under)} | {_pct(m.share_exact)} | {_pct(m.share_over)} | "
                      f"{m.mean_signed_error:+.2f} |")
                out["rows"].append({"gold": label, "scope": scope, "rules": rules, **m.to_dict()})
    # does learned beat refined on every held-out set (r up, over-estimated share down)?
    if "learned" in rules_list and "refined" in rules_list:
        print("\nlearned vs refined (r higher and over-estimated share lower):")
        by = {(r["gold"], r["scope"], r["rules"]): r for r in out["rows"]}
        verdict = []
        for scope in V.GOLD_SCOPES:
            for label, *_ in rows:
                a, b = by[(label, scope, "learned")], by[(label, scope, "refined")]
                win_r = (a["pearson"] or -1) > (b["pearson"] or -1)
                win_o = a["share_over"] < b["share_over"]
                verdict.append(win_r and win_o)
                print(f"- {label} / {scope}: r {_r(b['pearson'])} -> {_r(a['pearson'])} ({'+' if win_r else '-'}), "
                      f"over {_pct(b['share_over'])} -> {_pct(a['share_over'])} % ({'+' if win_o else '-'})")
        out["learned_wins_everywhere"] = all(verdict)
        print(f"learned wins on every row: {all(verdict)}")
    print("\nDDP runs (spaCy parse + anchors + distances; parses come from the cache after the first rule set):")
    for t in timings:
        print(f"- {t['rules']} {t['text']}: {t['words']:.0f} words in {t['seconds']:.1f} s")
    if not args.no_wmt25:
        table = wmt25_table(args.n_process)
        out["wmt25_learned"] = table
        print("\nWMT25 (bundled source, `ddp profile --rules learned`, chained):\n")
        print("| domain | docs | segments | mean | median | p90 | max | zero-DDP % |")
        print("|---|---|---|---|---|---|---|---|")
        for r in table:
            print(f"| {r['group']} | {r['documents']} | {r['segments']} | {r['mean_ddp']:.1f} | {r['median_ddp']:g} | "
                  f"{r['p90_ddp']:.1f} | {r['max_ddp']} | {100 * r['zero_ddp_share']:.1f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
