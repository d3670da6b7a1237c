"""GAP (gender-balanced ambiguous pronouns, Webster et al. 2018): the pronoun -> name decision of
rule sets ``refined`` and ``learned`` on the GAP test split, by pronoun gender.

Usage (from the repository root)::

    python benchmarks/gap_table.py [--gap ../shared/data/gap-coreference/gap-test.tsv.gz] [--rules refined,learned]
        [-j 1] [--json out.json]

Each GAP snippet is profiled as one document of one segment (``profile_anchors``, chained distance).
The pronoun at ``Pronoun-offset`` is looked up among the anchors (a pronoun that is not an anchor
predicts neither name); its antecedent mention (``antecedent_sentence`` + ``antecedent_text``) is
matched to an entity anchor of the snippet, and the pronoun is predicted coreferent with name A (B)
when that antecedent and the entity anchor covering ``A-offset`` (``B-offset``) have the same
``entity_id``. Reported as in the GAP paper: F1 over the (pronoun, name) pairs, by the pronoun's
gender (masculine he/him/his/himself, feminine she/her/hers/herself) and overall, the bias ratio
F/M, and the accuracy of the three-way choice (A, B or neither).

A second table (``--certified``, on by default for ``refined``) asks whether ``ddp_certified``'s
pronoun decisions hold on GAP, which the certification model never saw (it is trained on GUM,
OntoGUM and LitBank): of the pronouns whose antecedent is name A's or name B's entity, the share
linked to the right name (precision), overall and split by the pronoun anchor's ``certified`` flag
and by its ``confidence``, each with its exact 95 % Clopper-Pearson interval. ``certified`` is the
anchor's flag (some candidate distance of it certified), so it is a check of the link the
certified distance rests on, not of the distance itself: GAP marks one mention of each name, not
whole chains.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import polars as pl

REPO = Path(__file__).resolve().parents[1]
MASCULINE = {"he", "him", "his", "himself"}


def read_gap(path: Path) -> pl.DataFrame:
    df = pl.read_csv(path, separator="\t", quote_char=None, infer_schema_length=0)
    return df.with_columns(
        pl.col("Pronoun-offset").cast(pl.Int64), pl.col("A-offset").cast(pl.Int64), pl.col("B-offset").cast(pl.Int64),
        (pl.col("A-coref").str.to_uppercase() == "TRUE").alias("A-coref"),
        (pl.col("B-coref").str.to_uppercase() == "TRUE").alias("B-coref"),
        pl.when(pl.col("Pronoun").str.to_lowercase().is_in(list(MASCULINE))).then(pl.lit("M")).otherwise(pl.lit("F"))
        .alias("gender"),
    )


def predict(gap: pl.DataFrame, rules: str, n_process: int) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Per GAP row: ``pred_A``, ``pred_B`` (bool) and ``pronoun_is_anchor``."""
    from ddpcore.api import profile_anchors

    table = gap.select(pl.col("ID").alias("document_id"), pl.lit(0).alias("segment_id"), pl.col("Text").alias("source"))
    run = profile_anchors(table, rules=rules, n_process=n_process)
    anc = run.anchors
    ents = anc.filter(pl.col("kind") == "entity").select("document_id", "sentence", "text", "char_start", "char_end",
                                                         "entity_id")
    pron = (gap.select(pl.col("ID").alias("document_id"), pl.col("Pronoun-offset").alias("char_start"))
            .join(anc.filter(pl.col("kind") == "pronoun"), on=["document_id", "char_start"], how="left"))
    # the antecedent's entity id: the entity anchor at the antecedent's sentence with its text
    ante = (pron.filter(pl.col("antecedent_kind") == "entity")
            .join(ents.select("document_id", pl.col("sentence").alias("antecedent_sentence"),
                              pl.col("text").alias("antecedent_text"), pl.col("entity_id").alias("ante_entity")),
                  on=["document_id", "antecedent_sentence", "antecedent_text"], how="inner")
            .group_by("document_id").agg(pl.col("ante_entity").first()))

    def name_entity(col: str) -> pl.DataFrame:
        at = gap.select(pl.col("ID").alias("document_id"), pl.col(f"{col}-offset").alias("off"))
        hit = (at.join(ents, on="document_id", how="inner")
               .filter((pl.col("char_start") <= pl.col("off")) & (pl.col("off") < pl.col("char_end")))
               .group_by("document_id").agg(pl.col("entity_id").first().alias(f"{col}_entity")))
        return hit

    out = (gap.select(pl.col("ID").alias("document_id"))
           .join(pron.select("document_id", pl.col("kind").is_not_null().alias("pronoun_is_anchor"),
                             *[c for c in ("certified", "confidence") if c in pron.columns]), on="document_id",
                 how="left")
           .join(ante, on="document_id", how="left")
           .join(name_entity("A"), on="document_id", how="left")
           .join(name_entity("B"), on="document_id", how="left")
           .with_columns((pl.col("ante_entity").is_not_null() & (pl.col("ante_entity") == pl.col("A_entity")))
                         .fill_null(False).alias("pred_A"),
                         (pl.col("ante_entity").is_not_null() & (pl.col("ante_entity") == pl.col("B_entity")))
                         .fill_null(False).alias("pred_B")))
    return out, run.signature


def scores(gap: pl.DataFrame, pred: pl.DataFrame) -> dict[str, Any]:
    df = gap.join(pred, left_on="ID", right_on="document_id", how="left")
    res: dict[str, Any] = {}
    for name, part in (("M", df.filter(pl.col("gender") == "M")), ("F", df.filter(pl.col("gender") == "F")),
                       ("all", df)):
        tp = int((part["pred_A"] & part["A-coref"]).sum() + (part["pred_B"] & part["B-coref"]).sum())
        fp = int((part["pred_A"] & ~part["A-coref"]).sum() + (part["pred_B"] & ~part["B-coref"]).sum())
        fn = int((~part["pred_A"] & part["A-coref"]).sum() + (~part["pred_B"] & part["B-coref"]).sum())
        p = tp / (tp + fp) if tp + fp else 0.0
        r = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        gold = pl.when(part["A-coref"]).then(pl.lit("A")).when(part["B-coref"]).then(pl.lit("B")).otherwise(pl.lit("-"))
        choice_gold = part.select(gold.alias("g"))["g"]
        choice = part.select(pl.when(pl.col("pred_A")).then(pl.lit("A")).when(pl.col("pred_B")).then(pl.lit("B"))
                             .otherwise(pl.lit("-")).alias("c"))["c"]
        res[name] = {"n": part.height, "precision": p, "recall": r, "f1": f1,
                     "accuracy": float((choice == choice_gold).mean()),
                     "pronoun_is_anchor": float(part["pronoun_is_anchor"].fill_null(False).mean())}
    res["bias_F_over_M"] = res["F"]["f1"] / res["M"]["f1"] if res["M"]["f1"] else None
    return res


#: confidence bins of the certification table (the anchor's calibrated probability of not over-estimating)
CONFIDENCE_BINS = (0.0, 0.8, 0.9, 0.94, 0.97, 1.0)


def clopper_pearson(k: int, n: int) -> tuple[float | None, float | None]:
    """Exact two-sided 95 % interval of a proportion k / n (``ddp validate``'s own,
    :func:`ddpcore.gold.proportions.clopper_pearson`); None, None without trials."""
    from ddpcore.gold.proportions import clopper_pearson as exact

    if n == 0:
        return None, None
    lo, hi = exact(k, n)
    return float(lo), float(hi)


def certified_scores(gap: pl.DataFrame, pred: pl.DataFrame) -> dict[str, Any]:
    """Precision of the pronoun decisions that land on name A or B: all of them, certified or not, and by
    confidence bin (``CONFIDENCE_BINS``)."""
    df = gap.join(pred, left_on="ID", right_on="document_id", how="left").filter(pl.col("pred_A") | pl.col("pred_B"))
    right = (df["pred_A"] & df["A-coref"]) | (df["pred_B"] & df["B-coref"])
    df = df.with_columns(right.alias("right"), pl.col("certified").fill_null(False))
    n = df.height
    out: dict[str, Any] = {"n": n}

    def part(name: str, sel: pl.Series) -> None:
        k, m = int((df["right"] & sel).sum()), int(sel.sum())
        out[name] = {"n": m, "share": m / n if n else 0.0, "precision": k / m if m else None,
                     "ci95": list(clopper_pearson(k, m))}

    part("all", pl.Series([True] * n))
    part("certified", df["certified"])
    part("not certified", ~df["certified"])
    conf = df["confidence"].fill_nan(None)
    for lo, hi in zip(CONFIDENCE_BINS[:-1], CONFIDENCE_BINS[1:]):
        sel = ((conf >= lo) & ((conf < hi) if hi < 1.0 else (conf <= hi))).fill_null(False)
        part(f"confidence [{lo:.2f}, {hi:.2f}{']' if hi == 1.0 else ')'}", sel)
    part("no confidence", conf.is_null())
    return out


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gap", default=str(REPO.parent / "shared" / "data" / "gap-coreference" / "gap-test.tsv.gz"),
                    help="the GAP test TSV (gzip or plain)")
    ap.add_argument("--rules", default="refined,learned", help="comma-separated rule sets")
    ap.add_argument("-j", "--n-process", type=int, default=1, help="spaCy worker processes")
    ap.add_argument("--json", default=None, help="also write the numbers to this JSON file")
    ap.add_argument("--no-certified", dest="certified", action="store_false",
                    help="leave out the table of pronoun decisions by certification")
    args = ap.parse_args(argv)
    gap = read_gap(Path(args.gap))
    out: dict[str, Any] = {"rows": gap.height}
    print(f"GAP {Path(args.gap).name}: {gap.height} snippets, {2 * gap.height} (pronoun, name) pairs\n")
    print("| rules | F1 M | F1 F | bias F/M | F1 all | precision | recall | accuracy M | accuracy F | accuracy all | "
          "pronoun found % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    certified_rows: list[tuple[str, dict[str, Any]]] = []
    for rules in [r.strip() for r in args.rules.split(",") if r.strip()]:
        pred, sig = predict(gap, rules, args.n_process)
        s = scores(gap, pred)
        out[rules] = s
        a = s["all"]
        print(f"| {rules} | {s['M']['f1']:.3f} | {s['F']['f1']:.3f} | {s['bias_F_over_M']:.2f} | {a['f1']:.3f} | "
              f"{a['precision']:.3f} | {a['recall']:.3f} | {s['M']['accuracy']:.3f} | {s['F']['accuracy']:.3f} | "
              f"{a['accuracy']:.3f} | {100 * a['pronoun_is_anchor']:.1f} |")
        if args.certified and "certified" in pred.columns:
            certified_rows.append((rules, certified_scores(gap, pred)))
    for rules, c in certified_rows:
        out.setdefault("certified", {})[rules] = c
    if certified_rows:
        print("\nPronoun decisions that land on name A or B, by the anchor's certification (precision: linked to the "
              "right name; [95 % Clopper-Pearson]):\n")
        print("| rules | pronouns | part | n | share of the pronouns | precision [95 % CI] |\n|---|---|---|---:|---:|---|")
        for rules, c in certified_rows:
            for part, v in c.items():
                if part == "n":
                    continue
                print(f"| {rules} | {c['n']:,} | {part} | {v['n']:,} | {100 * v['share']:.1f} % | "
                      f"{_fmt(v['precision'])} [{_fmt(v['ci95'][0])}, {_fmt(v['ci95'][1])}] |")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
