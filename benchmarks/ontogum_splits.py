"""How often OntoGUM cuts a GUM coreference chain into pieces (docs/validation.md, issue 21's OntoGUM tail).

GUM and OntoGUM annotate the same text; OntoGUM converts GUM's coreference to the OntoNotes scheme, which does
not chain a predicate nominal ("Fillmore was *one of the founders*") or a deictic ("*here*") to its subject. This
script matches the mentions of the two golds by document, sentence and token span and counts, among the GUM
chains with two or more mentions that OntoGUM keeps, those whose mentions fall into two or more OntoGUM chains,
and the mention type that starts each later piece. A certified distance that spans such a cut is right by GUM and
an over-estimate by OntoGUM.

    python benchmarks/ontogum_splits.py [--gold-dir ../shared/data/gum-coref]

Needs the GUM archives (``gum_dep_conllu_with_coref.tar.xz``, ``ontogum_conllu.tar.xz``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from ddpcore.io.gold import read_gold

KEY = ["document_id", "sentence", "token_start", "token_end"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gold-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "gum-coref",
                    help="folder holding gum_dep_conllu_with_coref.tar.xz and ontogum_conllu.tar.xz")
    args = ap.parse_args()
    paths = [args.gold_dir / "gum_dep_conllu_with_coref.tar.xz", args.gold_dir / "ontogum_conllu.tar.xz"]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        print(f"ontogum_splits: not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    gum, onto = (read_gold(p) for p in paths)
    j = gum.mentions.select(*KEY, pl.col("chain_id").alias("gum_chain")).join(
        onto.mentions.select(*KEY, pl.col("chain_id").alias("onto_chain"), pl.col("mention_type").alias("onto_type")),
        on=KEY, how="inner")
    chains = j.group_by("document_id", "gum_chain").agg(pl.col("onto_chain").n_unique().alias("pieces"),
                                                        pl.len().alias("mentions"))
    kept = chains.filter(pl.col("mentions") >= 2)
    cut = kept.filter(pl.col("pieces") >= 2)
    first = (j.sort("document_id", "gum_chain", "sentence", "token_start")
             .group_by("document_id", "gum_chain", "onto_chain", maintain_order=True)
             .agg(pl.col("onto_type").first())
             .with_columns(pl.int_range(pl.len()).over("document_id", "gum_chain").alias("piece")))
    later = first.filter(pl.col("piece") > 0)
    print(f"GUM chains with >= 2 mentions kept in OntoGUM: {kept.height:,}")
    print(f"  cut into >= 2 OntoGUM chains: {cut.height:,} ({100 * cut.height / max(kept.height, 1):.1f} %)")
    print(f"later pieces: {later.height:,}; the mention type that starts them:")
    for t, n in later.group_by("onto_type").len().sort("len", descending=True).rows():
        print(f"  {t}: {n:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
