"""The statistics battery of issue 3 on the real data in ../shared/data; prints the tables.

ESA WMT23 en-de (``esa-wmt23-ende``): ESA-1 vs ESA-2 are the same 2,691 (segment, system) items
scored by two disjoint annotator pools. Paired/independent TOST (eps = 3, 5, 7), Kendall tau-b of
the system rankings with a document-bootstrap CI (B = 10,000), system clusters under each
method, Krippendorff's alpha between the pools, error-span counts and the boundary-localised
span rate, per-segment annotation time.

WMT24 ESA waves 2-3 (``wmt24-genmt``): per language pair, errors per 1,000 characters, the
error-free rate, the boundary-localised span rate and the system clusters.

    python benchmarks/real_data_stats.py            # tables
    python benchmarks/real_data_stats.py --json     # everything as one JSON document

Pairing note: in both campaigns an annotator scores one system's output of a document, so rows
are paired across conditions and across systems on (document, segment[, system]), not on the
annotator (``pair_annotator=False`` / ``--no-pair-annotator``).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from ddpcore.stats import ResampleOptions

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
ESA_DIR = SHARED / "esa-wmt23-ende"
WMT24_DIR = SHARED / "wmt24-genmt"
METHODS = ("bootstrap", "wmt25", "wmt24", "permutation")


def _span_table(df: Any) -> Any:
    """One row per positioned error span with its segment length (code points of the raw text)."""
    import polars as pl

    return (df.with_row_index("annotation")
            .explode("error_spans").unnest("error_spans")
            .filter(pl.col("span_start").is_not_null())
            .with_columns(pl.col("target_text").str.len_chars().alias("segment_length")))


def _error_rates(df: Any) -> dict[str, Any]:
    import numpy as np
    import polars as pl

    from ddpcore.stats import boundary_span_rate, error_free_rate, errors_per_1000_chars

    n_err = df["error_spans"].list.len().to_numpy()
    nonempty = (df["target_text"].str.len_chars() > 0).to_numpy()  # empty outputs: rate undefined
    per_k = errors_per_1000_chars(n_err[nonempty], df["target_text"].filter(nonempty))
    spans = _span_table(df)
    n_major = int(df.explode("error_spans").unnest("error_spans").filter(pl.col("severity") == "major").height)
    b = boundary_span_rate(spans["span_start"].to_numpy(), spans["span_end"].to_numpy(), spans["segment_length"].to_numpy())
    return {
        "annotations": df.height,
        "empty_outputs": int((~nonempty).sum()),
        "spans": int(n_err.sum()),
        "spans_positioned": spans.height,
        "major_share": n_major / max(1, int(n_err.sum())),
        "errors_per_annotation": float(n_err.mean()),
        "errors_per_1000_chars_mean": float(np.mean(per_k)),
        "errors_per_1000_chars_pooled": float(1000 * n_err.sum() / df["target_text"].str.normalize("NFC").str.len_chars().sum()),
        "error_free_rate_spans": error_free_rate(n_err).rate,
        "error_free_rate_score100": error_free_rate(scores=df["score"].to_numpy()).rate,
        "boundary_span_rate": b.rate,
        "boundary_spans": b.n_boundary,
    }


# --------------------------------------------------------------------------- ESA WMT23


def esa_battery(n_boot_tau: int = 10_000, n_boot_cluster: int = 1000, seed: int = 0) -> dict[str, Any]:
    import polars as pl

    from ddpcore.io.esa import read_esa_wmt23
    from ddpcore.stats import (
        annotation_time_per_segment,
        boundary_rate_difference,
        bootstrap_tau,
        cluster_systems,
        compare_clusters,
        krippendorff_alpha,
        pair_conditions,
        reliability_matrix,
        tost_ind,
        tost_paired,
        znormalize,
    )
    from ddpcore.stats._table import load_long_table

    raw = read_esa_wmt23(ESA_DIR, conditions=("ESA-1", "ESA-2"))
    core = raw.select("document_id", "segment_id", "system", "annotator", "condition", "score", "domain")
    df = load_long_table(core)
    out: dict[str, Any] = {"items_per_condition": dict(core.group_by("condition").len().sort("condition").iter_rows()),
                           "annotators": {c: core.filter(pl.col("condition") == c)["annotator"].n_unique()
                                          for c in ("ESA-1", "ESA-2")}}
    pairs = pair_conditions(df, "ESA-1", "ESA-2", annotator=False)
    x, y = pairs["score_a"].to_numpy(), pairs["score_b"].to_numpy()
    a_all = df.filter(pl.col("condition") == "ESA-1")["score"].to_numpy()
    b_all = df.filter(pl.col("condition") == "ESA-2")["score"].to_numpy()
    out["means"] = {"ESA-1": float(a_all.mean()), "ESA-2": float(b_all.mean())}
    out["tost"] = []
    for eps in (3, 5, 7):
        for design, res in (("paired", tost_paired(x, y, -eps, eps)), ("independent", tost_ind(a_all, b_all, -eps, eps))):
            out["tost"].append({"design": design, "eps": eps, "n": res.n, "mean_diff": res.mean_diff,
                                "ci_low": res.ci_low, "ci_high": res.ci_high, "p_value": res.p_value,
                                "equivalent": res.equivalent})
    out["tau"] = []
    for excl in ((), ("refA",)):
        t = bootstrap_tau(core, "ESA-1", "ESA-2", exclude_systems=excl, options=ResampleOptions(n_boot=n_boot_tau, seed=seed))
        out["tau"].append({"systems": len(t.systems), "excluded": list(excl), "tau": t.tau, "p_value": t.p_value,
                           "ci_low": t.ci_low, "ci_high": t.ci_high, "share_below_0.667": t.share_below_tau_min,
                           "replicate_mean": t.replicate_mean, "replicate_sd": t.replicate_sd,
                           "share_tied": t.share_tied, "n_units": t.n_units, "n_boot": t.n_boot})
    out["clusters"] = {}
    for method in METHODS:
        res = {c: cluster_systems(core, method, condition_value=c, pair_annotator=False, options=ResampleOptions(n_boot=n_boot_cluster, seed=seed)) for c in ("ESA-1", "ESA-2")}
        cmp = compare_clusters(res["ESA-1"], res["ESA-2"])
        out["clusters"][method] = {c: {"n_clusters": len(r.clusters), "clusters": [list(k) for k in r.clusters],
                                       "rank_ranges": {s: list(v) for s, v in r.rank_ranges.items()}}
                                   for c, r in res.items()}
        out["clusters"][method]["comparison"] = {"same_clusters": cmp.same_clusters, "moved": list(cmp.moved),
                                                 "n_same_index": cmp.n_same_index,
                                                 "n_adjacent_index": cmp.n_adjacent_index}
    out["alpha"] = {}
    z = znormalize(core, by="annotator")
    for name, table in (("raw", core), ("znorm", z)):
        for unit, cols in (("segment", ["document_id", "segment_id", "system"]), ("document", ["document_id", "system"])):
            r = krippendorff_alpha(reliability_matrix(table, unit=cols, coder="condition"), level="interval")
            out["alpha"][f"{unit}/{name}"] = {"alpha": r.alpha, "units": r.n_pairable_units}
    # error spans: counts per annotation, per 1,000 characters, boundary-localised rate
    out["errors"] = {c: _error_rates(raw.filter(pl.col("condition") == c)) for c in ("ESA-1", "ESA-2")}
    e_pairs = pair_conditions(load_long_table(raw.with_columns(pl.col("error_spans").list.len().cast(pl.Float64)
                                                               .alias("score")).select(core.columns)),
                              "ESA-1", "ESA-2", annotator=False)
    te = tost_paired(e_pairs["score_a"].to_numpy(), e_pairs["score_b"].to_numpy(), -0.5, 0.5)
    out["errors"]["tost_errors_eps0.5"] = {"mean_diff": te.mean_diff, "ci_low": te.ci_low, "ci_high": te.ci_high,
                                           "p_value": te.p_value, "equivalent": te.equivalent}
    spans = _span_table(raw)
    bd = boundary_rate_difference(spans.filter(pl.col("condition") == "ESA-1"), spans.filter(pl.col("condition") == "ESA-2"), options=ResampleOptions(n_boot=10_000, seed=seed))
    out["errors"]["boundary_difference"] = {"difference": bd.difference, "ci_low": bd.ci_low, "ci_high": bd.ci_high,
                                            "n_units": bd.n_units}
    items = raw.with_columns(pl.format("{}#{}#{}", "document_id", "segment_id", "system").alias("item"))
    timing = annotation_time_per_segment(items, task=["condition", "login"], time=["time_start", "time_end"], segment="item")
    out["seconds_per_segment"] = {c: float(timing.filter(pl.col("condition") == c)["seconds_per_segment"].median())
                                  for c in ("ESA-1", "ESA-2")}
    return out


# --------------------------------------------------------------------------- WMT24


def wmt24_battery(n_boot_cluster: int = 1000, seed: int = 0) -> dict[str, Any]:
    import polars as pl

    from ddpcore.io.wmt import read_wmt24_esa
    from ddpcore.stats import cluster_systems

    df = read_wmt24_esa(WMT24_DIR)
    out: dict[str, Any] = {}
    for lp in sorted(df["lp"].unique()):
        part = df.filter(pl.col("lp") == lp)
        core = part.select("document_id", "segment_id", "system", "annotator", "score", "domain")
        row: dict[str, Any] = {"systems": part["system"].n_unique(), "waves": sorted(part["wave"].unique().to_list())}
        row.update(_error_rates(part))
        row["clusters"] = {}
        for method, kw in (("wmt24", {"by_domain": True}), ("wmt25", {}), ("bootstrap", {}), ("permutation", {})):
            res = cluster_systems(core, method, pair_annotator=False, **kw, options=ResampleOptions(n_boot=n_boot_cluster, seed=seed))
            row["clusters"][method] = {"n_clusters": len(res.clusters), "clusters": [list(c) for c in res.clusters],
                                       "top": list(res.clusters[0])}
        out[lp] = row
    return out


# --------------------------------------------------------------------------- printing


def _print_esa(r: dict[str, Any]) -> None:
    print("== ESA WMT23 en-de: ESA-1 vs ESA-2 (same items, disjoint annotator pools) ==")
    print(f"items per condition {r['items_per_condition']}, annotators {r['annotators']}, "
          f"means ESA-1 {r['means']['ESA-1']:.2f}, ESA-2 {r['means']['ESA-2']:.2f}")
    print("TOST (mean ESA-1 - ESA-2, 90% CI)")
    for t in r["tost"]:
        print(f"  {t['design']:<11} eps={t['eps']}  n={t['n']:<5} diff {t['mean_diff']:+.3f} "
              f"[{t['ci_low']:+.3f}, {t['ci_high']:+.3f}]  p={t['p_value']:.2e}  "
              f"{'equivalent' if t['equivalent'] else 'NOT equivalent'}")
    print("Kendall tau-b of system rankings, document bootstrap (95% percentile CI)")
    for t in r["tau"]:
        print(f"  {t['systems']} systems{' (without ' + ', '.join(t['excluded']) + ')' if t['excluded'] else ''}: "
              f"tau {t['tau']:.3f} (p={t['p_value']:.2g}) CI [{t['ci_low']:.3f}, {t['ci_high']:.3f}], replicate mean "
              f"{t['replicate_mean']:.3f} sd {t['replicate_sd']:.3f}, {100 * t['share_below_0.667']:.1f}% below 0.667, "
              f"{t['n_units']} documents, B={t['n_boot']}")
    print("Clusters (number of clusters ESA-1 / ESA-2; same clusters?)")
    for m, c in r["clusters"].items():
        cmp = c["comparison"]
        print(f"  {m:<12} {c['ESA-1']['n_clusters']:>2} / {c['ESA-2']['n_clusters']:<2}  same clusters: "
              f"{cmp['same_clusters']!s:<5}  same cluster index {cmp['n_same_index']}/13, same or adjacent "
              f"{cmp['n_adjacent_index']}/13")
        for cond in ("ESA-1", "ESA-2"):
            print(f"      {cond}: " + " | ".join(", ".join(k) for k in c[cond]["clusters"]))
    print("Krippendorff alpha (interval) between the pools")
    for k, v in r["alpha"].items():
        print(f"  {k:<18} alpha {v['alpha']:.3f} over {v['units']} units")
    print("Error spans")
    for cond in ("ESA-1", "ESA-2"):
        e = r["errors"][cond]
        print(f"  {cond}: {e['errors_per_annotation']:.2f} errors/annotation, {e['errors_per_1000_chars_mean']:.2f} "
              f"per 1,000 chars (mean; pooled {e['errors_per_1000_chars_pooled']:.2f}), error-free "
              f"{100 * e['error_free_rate_spans']:.1f}% (no span) / {100 * e['error_free_rate_score100']:.1f}% (score 100), "
              f"major {100 * e['major_share']:.1f}%, boundary-localised {100 * e['boundary_span_rate']:.1f}% of "
              f"{e['spans_positioned']} spans")
    te, bd = r["errors"]["tost_errors_eps0.5"], r["errors"]["boundary_difference"]
    print(f"  paired TOST on error counts (eps 0.5): diff {te['mean_diff']:+.3f} [{te['ci_low']:+.3f}, "
          f"{te['ci_high']:+.3f}] p={te['p_value']:.2e} {'equivalent' if te['equivalent'] else 'NOT equivalent'}")
    print(f"  boundary rate ESA-1 - ESA-2: {100 * bd['difference']:+.2f} points, 95% CI "
          f"[{100 * bd['ci_low']:+.2f}, {100 * bd['ci_high']:+.2f}] (segment bootstrap, {bd['n_units']} segments)")
    s = r["seconds_per_segment"]
    print(f"Median active seconds per item (gaps > 120 s dropped): ESA-1 {s['ESA-1']:.1f}, ESA-2 {s['ESA-2']:.1f}")


def _print_wmt24(r: dict[str, Any]) -> None:
    print("\n== WMT24 ESA waves 2-3, per language pair ==")
    print(f"  {'lp':<6}{'annot':>7}{'sys':>5}{'err/ann':>9}{'err/1k':>8}{'pooled':>8}{'free%':>7}{'100%':>6}"
          f"{'major%':>8}{'bound%':>8}{'spans':>7}   clusters wmt24(dom)/wmt25/bootstrap/permutation")
    for lp, x in r.items():
        c = x["clusters"]
        print(f"  {lp:<6}{x['annotations']:>7}{x['systems']:>5}{x['errors_per_annotation']:>9.2f}"
              f"{x['errors_per_1000_chars_mean']:>8.2f}{x['errors_per_1000_chars_pooled']:>8.2f}"
              f"{100 * x['error_free_rate_spans']:>7.1f}{100 * x['error_free_rate_score100']:>6.1f}"
              f"{100 * x['major_share']:>8.1f}{100 * x['boundary_span_rate']:>8.1f}{x['spans_positioned']:>7}   "
              f"{c['wmt24']['n_clusters']}/{c['wmt25']['n_clusters']}/{c['bootstrap']['n_clusters']}/"
              f"{c['permutation']['n_clusters']}")
    for lp, x in r.items():
        print(f"  {lp} wmt24 (by domain) clusters: " + " | ".join(", ".join(k) for k in x["clusters"]["wmt24"]["clusters"]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print all results as JSON")
    ap.add_argument("--n-boot-tau", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if not SHARED.is_dir():
        print(f"{SHARED} is absent: this script needs the shared data folder", file=sys.stderr)
        return 2
    esa = esa_battery(n_boot_tau=args.n_boot_tau, seed=args.seed)
    wmt = wmt24_battery(seed=args.seed)
    if args.json:
        from ddpcore.stats._table import json_safe

        print(json.dumps(json_safe({"esa_wmt23": esa, "wmt24": wmt}), indent=1))
    else:
        _print_esa(esa)
        _print_wmt24(wmt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
