"""Train, cross-validate and write the certification model of ``ddp_certified`` (issue 21).

    python scripts/train_certify.py GOLD_DIR [-o src/ddpcore/anchors/data/certify-v5.json] [--check] [-j 2]
    python scripts/train_certify.py GOLD_DIR --pipeline fast -o src/ddpcore/anchors/data/certify-v5-noparser.json
    python scripts/train_certify.py GOLD_DIR --tables    # the out-of-fold tables of docs/validation.md, no file

The second builds the parser-free model that ``ddp_certified`` uses when the spaCy pipeline has no
dependency parser (``--pipeline fast``): there every anchor's ``role`` is ``other``, so the parse
features the default model weighs are constant, and it is trained on what that pipeline finds.

GOLD_DIR holds the three gold corpora (GUM ``gum_dep_conllu_with_coref.tar.xz`` and OntoGUM
``ontogum_conllu.tar.xz`` from amir-zeldes/gum, LitBank ``litbank_coref_tsv.tar.xz`` from
dbamman/litbank), found by those file names anywhere below it. ParCorFull is never read.

Protocol (every figure is out of fold):
1. Every gold sentence is profiled as one segment with the default rules (``refined``, chained);
   the gold distance of a sentence is the ``ddp``-scope chained gold distance. GUM and OntoGUM
   share their text, so their anchors are the same rows with two labels.
2. Each anchor with a distance has up to five candidate distances
   (:func:`ddpcore.anchors.certify.chain_candidates`): back to its chain's first mention (the full
   distance), second and third mention, to the antecedent it links to, and to the previous mention of
   its chain, the pronouns linked to it included. A candidate is ``over``
   when its distance exceeds its sentence's gold distance. Features:
   :func:`ddpcore.anchors.certify.candidate_features`.
3. Outer 5-fold cross-validation grouped by document (GUM and OntoGUM copies of a document in the
   same fold). In each outer fold a logistic model is fitted on the candidates of the other folds,
   and the three confidence thresholds (below 15 sentences one for pronoun anchors and one for name
   anchors, at and above one for both) are chosen by an inner 5-fold cross-validation on those folds
   only: among the triples whose over-estimated share is at most ``--max-over`` on every gold, the
   triple that reaches the tail precision ``--min-tail`` at DDP >= 15 on the most golds, then has the
   highest mean Spearman correlation with gold (if none qualifies, the most conservative triple). The
   outer fold is then scored with that model and those thresholds. A segment's certified DDP is
   the largest certified candidate distance of its anchors (0 without one); at and above 15
   sentences only full distances count (``long_full_only``: partial distances that long lowered
   the tail precision at DDP >= 15 on GUM from 0.98 to 0.95 in the study).
   ``--tables`` prints these out-of-fold figures for every gold against every gold scope (``ddp``,
   which the labels use, ``restricted`` and ``full``) and, in the ``ddp`` scope, for every genre.
4. The shipped model is fitted on everything, its thresholds chosen the same way on the
   out-of-fold predictions of all data. The file records the recipe and the out-of-fold figures.

``--check`` rebuilds the file and fails unless it is byte for byte the one on disk (numbers are written to
12 significant digits, so the check holds across machines whose floating-point fits differ in the last bits).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
from scipy.stats import beta, pearsonr, spearmanr
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

from ddpcore.anchors.certify import FEATURES, anchor_features, candidate_features, chain_candidates
from ddpcore.anchors.certify_model import CERTIFY_FORMAT, CERTIFY_VERSIONS, DEFAULT_CERTIFY_MODEL, certify_model_path
from ddpcore.anchors.rules import RULE_SETS, get_rules
from ddpcore.gold.validate import compute_gold_distances, profile_gold, same_string_name
from ddpcore.io.gold import read_gold

GOLDS = {"gum": "gum_dep_conllu_with_coref.tar.xz", "ontogum": "ontogum_conllu.tar.xz",
         "litbank": "litbank_coref_tsv.tar.xz"}
TEXT_OF = {"gum": "gum", "ontogum": "gum", "litbank": "litbank"}
GRID = tuple(round(x, 3) for x in np.arange(0.80, 0.995, 0.01))
#: gold scopes the out-of-fold figures are also reported against (``--tables``); the model is trained on ``ddp``
OTHER_SCOPES = ("restricted", "full")
LONG = 15
C = 1.0


def find(root: Path, name: str) -> Path:
    hits = sorted(p for p in root.rglob(name) if "parcorfull" not in str(p).lower())
    if not hits:
        sys.exit(f"train_certify: {name} not found under {root}")
    return hits[0]


def profiled(corpus, name: str, n_process: int, reuse: Path | None,
             pipeline: str | None = None) -> tuple[pl.DataFrame, pl.DataFrame, bool]:
    """The uncertified anchors table and the segment texts of a gold corpus, each sentence one segment;
    with ``reuse`` kept in (and read back from) ``reuse/NAME.{anchors,texts}.parquet`` between runs of
    this script (only for trying features: ``--check`` and the shipped recipe always profile anew);
    the third value: whether the pipeline has a dependency parser."""
    if pipeline:
        name = f"{name}.{pipeline}"
    if reuse is not None and (reuse / f"{name}.anchors.parquet").exists():
        return (pl.read_parquet(reuse / f"{name}.anchors.parquet"), pl.read_parquet(reuse / f"{name}.texts.parquet"),
                json.loads((reuse / f"{name}.info.json").read_text())["has_parser"])
    t0 = time.perf_counter()
    # the uncertified anchors (from the table, not get_rules: that loads the model this script may be rebuilding)
    rules = get_rules(dataclasses.replace(RULE_SETS["refined"], certify_model=""))
    run, _ = profile_gold(corpus, distance="chained", pipeline=pipeline, n_process=n_process, rules=rules)
    has_parser = bool(run.signature.get("has_parser", True))
    print(f"{name}: profiled in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    assert "certified" not in run.anchors.columns
    texts = run.segments.select("document_id", "segment_id", "source")
    if reuse is not None:
        reuse.mkdir(parents=True, exist_ok=True)
        run.anchors.write_parquet(reuse / f"{name}.anchors.parquet")
        texts.write_parquet(reuse / f"{name}.texts.parquet")
        (reuse / f"{name}.info.json").write_text(json.dumps({"has_parser": has_parser}))
    return run.anchors, texts, has_parser


def load(root: Path, n_process: int, reuse: Path | None = None,
         pipeline: str | None = None) -> tuple[dict[str, dict], bool]:
    """Per gold: the candidate feature matrix ``X`` and, per candidate, its distance ``d``, label ``y``
    (over), document ``doc`` and gold-sentence position ``pos``; the gold distances ``gd`` and their
    documents ``gdoc``; the anchor distances ``anchor_d`` and positions ``anchor_pos``; and whether
    the pipeline has a dependency parser."""
    data: dict[str, dict] = {}
    has_parser = True
    runs: dict[str, tuple] = {}
    for name, fname in GOLDS.items():
        corpus = read_gold(find(root, fname))
        gold = compute_gold_distances(corpus, distance="chained", gold_scope="ddp")
        text = TEXT_OF[name]
        if text not in runs:
            anchors, texts, has_parser = profiled(corpus, text, n_process, reuse, pipeline)
            cand = chain_candidates(anchors)
            X = candidate_features(anchor_features(anchors, texts), cand, anchors["distance_sentences"].to_numpy())
            runs[text] = (anchors, cand, X)
        anchors, cand, X = runs[text]
        g = gold.select("document_id", pl.col("sentence").alias("segment_id"), "gold_distance")
        keys = g.with_row_index("__pos").select("document_id", "segment_id", "__pos")
        apos = anchors.select("document_id", "segment_id").join(keys, on=["document_id", "segment_id"], how="left",
                                                                 maintain_order="left")["__pos"].to_numpy()
        gd = g["gold_distance"].to_numpy()
        pos = apos[cand.row]
        # the other gold scopes, for the report tables only (--tables): the label stays the ddp scope's
        other = {scope: compute_gold_distances(corpus, distance="chained", gold_scope=scope) for scope in OTHER_SCOPES}
        for scope, o in other.items():
            if not (o["document_id"] == g["document_id"]).all() or not (o["sentence"] == g["segment_id"]).all():
                raise AssertionError(f"{name}: the {scope} gold lists its sentences in another order")
        same = anchors.select(same_string_name().fill_null(False))[:, 0].to_numpy()
        data[name] = {"X": X, "d": cand.distance, "pos": pos, "y": cand.distance > gd[pos],
                      "same": same[cand.row], "anchor_same": same,
                      "pronoun": X[:, FEATURES.index("pronoun")] > 0.5,
                      "doc": anchors["document_id"].to_numpy()[cand.row], "rank": cand.rank,
                      "gd": gd, "gdoc": g["document_id"].to_numpy(), "genre": gold["genre"].to_numpy(),
                      "gd_scope": {"ddp": gd, **{s: o["gold_distance"].to_numpy() for s, o in other.items()}},
                      "anchor_d": anchors["distance_sentences"].to_numpy(), "anchor_pos": apos}
    return data, has_parser


def fit(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    m = LogisticRegression(C=C, solver="newton-cholesky", max_iter=1000, tol=1e-10)
    m.fit((X - mean) / scale, y)
    return mean, scale, m.coef_[0].astype(np.float64), float(m.intercept_[0])


def p_over(X: np.ndarray, model: tuple) -> np.ndarray:
    mean, scale, w, b = model
    return 1.0 / (1.0 + np.exp(-(((X - mean) / scale) @ w + b)))


def segment_ddp(D: dict, mask: np.ndarray) -> np.ndarray:
    """Certified DDP of every gold sentence: the largest distance of the ``mask`` candidates, 0 without one."""
    dc = np.zeros(len(D["gd"]), dtype=np.int64)
    np.maximum.at(dc, D["pos"][mask], D["d"][mask])
    return dc


def seg_metrics(D: dict, dc: np.ndarray, docs: np.ndarray | None = None) -> dict:
    """Segment figures of ``dc`` against gold over every gold segment (or those of the documents ``docs``)."""
    if docs is not None:
        keep = np.isin(D["gdoc"], docs)
        return metrics(dc[keep], D["gd"][keep])
    return metrics(dc, D["gd"])


def metrics(dc: np.ndarray, gd: np.ndarray) -> dict:
    n, k = len(dc), int((dc > gd).sum())
    lo = beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
    hi = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    out = {"n_segments": n, "share_over": k / n, "over_ci95": [float(lo), float(hi)],
           "spearman": float(spearmanr(dc, gd)[0]) if dc.std() > 0 else None,
           "pearson": float(pearsonr(dc, gd)[0]) if dc.std() > 0 else None}
    for t in (5, 15):
        sel = dc >= t
        out[f"tail_precision_{t}"] = float((gd[sel] >= t).mean()) if sel.any() else None
        out[f"tail_recall_{t}"] = float((dc[gd >= t] >= t).mean()) if (gd >= t).any() else None
        out[f"n_ddp_ge_{t}"] = int(sel.sum())
    out["coverage"] = float(((dc > 0) & (gd > 0)).sum() / max(int((gd > 0).sum()), 1))
    return out


def certified(D: dict, p: np.ndarray, rows: np.ndarray, t_pronoun: float, t_name: float, tl: float) -> np.ndarray:
    """Candidates of ``rows`` whose confidence ``1 - p`` reaches the threshold of their anchor's kind and
    distance: ``t_pronoun`` / ``t_name`` below ``LONG`` sentences, ``tl`` at and above (there only full
    distances, rank 0: ``long_full_only``)."""
    long = D["d"] >= LONG
    return rows & ((1 - p) >= np.where(long, tl, np.where(D["pronoun"], t_pronoun, t_name))) & (~long | (D["rank"] == 0))


def _avg_ranks(v: np.ndarray) -> np.ndarray:
    """1-based average ranks of the non-negative integers ``v`` (``scipy.stats.rankdata``'s ``average``)."""
    counts = np.bincount(v)
    below = np.cumsum(counts) - counts
    return (below + (counts + 1) / 2.0)[v]


def _spearman(dc: np.ndarray, gd_rank: np.ndarray) -> float:
    """Spearman's rho of ``dc`` (non-negative ints) against gold, given gold's average ranks: the Pearson
    correlation of the ranks, as ``scipy.stats.spearmanr``; 0 when ``dc`` is constant."""
    r = _avg_ranks(dc)
    r = r - r.mean()
    g = gd_rank - gd_rank.mean()
    den = np.sqrt((r * r).sum() * (g * g).sum())
    return float((r * g).sum() / den) if den > 0 else 0.0


def choose(data: dict, p: dict, rows: dict, max_over: float, min_tail: float) -> tuple[float, float, float]:
    """Thresholds (pronouns, names, long) on predictions ``p`` of candidates ``rows``: among the triples
    whose over-estimated share is at most ``max_over`` on every gold, the triple that meets the
    tail-precision target (DDP >= 15) on the most golds, then has the highest mean Spearman correlation
    with gold; none qualifying: the most conservative triple. The long threshold is never below both
    short ones."""
    from scipy.stats import rankdata

    keep = {n: np.isin(D["gdoc"], np.unique(D["doc"][rows[n]])) for n, D in data.items()}
    gd = {n: data[n]["gd"][keep[n]] for n in data}
    gd_rank = {n: rankdata(gd[n]) for n in data}
    best = None
    for t in GRID:
        for tn in GRID:
            for tl in GRID:
                if tl < min(t, tn):
                    continue
                ok, n_tail, sps = True, 0, []
                for name, D in data.items():
                    dc = segment_ddp(D, certified(D, p[name], rows[name], t, tn, tl))[keep[name]]
                    g = gd[name]
                    if (dc > g).mean() > max_over:
                        ok = False
                        break
                    sel = dc >= LONG
                    n_tail += int(sel.any() and (g[sel] >= LONG).mean() >= min_tail)
                    sps.append(_spearman(dc, gd_rank[name]))
                if not ok:
                    continue
                key = (n_tail, float(np.mean(sps)))
                if best is None or key > best[0]:
                    best = (key, t, tn, tl)
    if best is None:
        return GRID[-1], GRID[-1], GRID[-1]
    return best[1], best[2], best[3]


def cross_validate(data: dict, rows_of: dict, n_folds: int, max_over: float, min_tail: float,
                   inner: bool) -> tuple[dict, dict]:
    """Out-of-fold ``p_over`` of every candidate (``rows_of[name]`` selects candidates), and per-fold thresholds."""
    names = list(data)
    docs_all = np.unique(np.concatenate([data[n]["doc"][rows_of[n]] for n in names]))
    folds = GroupKFold(n_splits=n_folds)
    oof = {n: np.full(len(data[n]["d"]), np.nan) for n in names}
    chosen = {}
    for k, (_, test_idx) in enumerate(folds.split(docs_all, groups=docs_all)):
        test_docs = docs_all[test_idx]
        tr = {n: rows_of[n] & ~np.isin(data[n]["doc"], test_docs) for n in names}
        te = {n: rows_of[n] & np.isin(data[n]["doc"], test_docs) for n in names}
        model = fit(np.vstack([data[n]["X"][tr[n]] for n in names]), np.concatenate([data[n]["y"][tr[n]] for n in names]))
        for n in names:
            oof[n][te[n]] = p_over(data[n]["X"][te[n]], model)
        if inner:
            inner_p, _ = cross_validate(data, tr, n_folds, max_over, min_tail, inner=False)
            chosen[k] = (choose(data, inner_p, tr, max_over, min_tail), te)
        print(f"fold {k + 1}/{n_folds} done", file=sys.stderr)
    return oof, chosen


#: significant digits of every number written: the fit's last bits differ between machines (BLAS, CPU), and
#: ``--check`` must compare what the recipe determines, not those bits (a rebuild on another machine differed
#: from the shipped file in the 16th digit of 40 % of its numbers)
DIGITS = 12


def set_aside(n_segments: int, pos: np.ndarray, d: np.ndarray, same: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``ddp validate --set-aside same-string-names`` on arrays: the segments (shape ``(n_segments,)``)
    whose ``value`` (> 0) is reached only by same-string name re-mentions. ``pos``, ``d``, ``same``:
    per anchor (or certified candidate) its segment, distance and whether it is such a re-mention."""
    reach = d == value[pos]
    n_reach = np.bincount(pos[reach], minlength=n_segments)
    n_same = np.bincount(pos[reach & same], minlength=n_segments)
    return (value > 0) & (n_reach > 0) & (n_reach == n_same)


def tables(data: dict, columns: dict[str, dict[str, np.ndarray]], masks: dict[str, np.ndarray]) -> str:
    """Markdown tables of the out-of-fold figures: every gold and gold scope (both columns), both columns
    with same-string names set aside (:func:`set_aside`), then every genre of every gold in the ``ddp``
    scope (``ddp_certified``). ``columns[column][gold]``: segment DDP, shape ``(n_gold_sentences,)`` in
    sentences; ``masks[gold]``: the certified candidates, shape ``(n_candidates,)``."""
    def pct(m: dict) -> str:
        lo, hi = m["over_ci95"]
        return f"{100 * m['share_over']:.2f} [{100 * lo:.2f}, {100 * hi:.2f}]"

    def num(x: float | None, fmt: str = ".3f") -> str:
        return "—" if x is None else format(x, fmt)

    def row(gold: str, part: str, col: str, m: dict) -> str:
        return (f"| {gold} | {part} | `{col}` | {m['n_segments']:,} | {pct(m)} | {num(m['spearman'])} | "
                f"{num(m['tail_precision_15'])} ({m['n_ddp_ge_15']:,}) | {num(m['tail_recall_15'])} | {m['coverage']:.3f} |")

    head = ("| gold | scope | column | segments | over % [95 % CI] | Spearman ρ | tail precision ≥ 15 (n) | "
            "tail recall ≥ 15 | coverage |\n|---|---|---|---:|---|---:|---|---:|---:|")
    lines = [head]
    for name, D in data.items():
        for scope, gd in D["gd_scope"].items():
            for col, v in columns.items():
                lines.append(row(name, f"`{scope}`", col, metrics(v[name], gd)))
    # the protocol of a gold that does not chain repeated names (ddp validate --set-aside same-string-names)
    lines += ["", head.replace("| scope | column |", "| scope | column, same-string names set aside |")]
    for name, D in data.items():
        for col, v in columns.items():
            if col == "ddp":
                pos, d, same = D["anchor_pos"], np.clip(D["anchor_d"], 0, None), D["anchor_same"]
            else:
                m = masks[name]
                pos, d, same = D["pos"][m], D["d"][m], D["same"][m]
            aside = set_aside(len(D["gd"]), pos, d, same, v[name])
            lines.append(row(name, f"`ddp`, {int(aside.sum()):,} aside", col, metrics(v[name][~aside], D["gd"][~aside])))
    lines += ["", head.replace("| scope | column |", "| genre | column |")]
    for name, D in data.items():
        for genre in sorted(set(D["genre"])):
            keep = D["genre"] == genre
            for col in ("ddp_certified",):
                lines.append(row(name, genre, col, metrics(columns[col][name][keep], D["gd"][keep])))
    return "\n".join(lines)


#: confidence bins of the calibration table (``--tables``)
CONF_BINS = (0.0, 0.5, 0.8, 0.9, 0.94, 0.97, 0.99, 1.0)


def calibration(data: dict, oof: dict) -> str:
    """Markdown table: is the out-of-fold confidence (1 - ``p_over``) of a candidate distance the share of
    such candidates that do not over-estimate? Per gold, for the full distances (what the anchors
    table's ``confidence`` holds) and for every candidate, by confidence bin: candidates, mean
    confidence, observed share not over with its exact 95 % interval; and the Brier score."""
    lines = ["| gold | candidates | confidence | n | mean confidence | observed not over [95 % CI] |",
             "|---|---|---|---:|---:|---|"]
    briers = []
    for name, D in data.items():
        conf, ok = 1.0 - oof[name], ~D["y"]
        for what, sel in (("full distance", D["rank"] == 0), ("every candidate", np.ones(len(conf), bool))):
            briers.append(f"{name} {what} {np.mean((conf[sel] - ok[sel]) ** 2):.4f}")
            for lo, hi in zip(CONF_BINS[:-1], CONF_BINS[1:]):
                b = sel & (conf >= lo) & ((conf < hi) if hi < 1.0 else (conf <= hi))
                n, k = int(b.sum()), int(ok[b].sum())
                if n == 0:
                    continue
                cl = beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
                ch = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
                shut = "]" if hi == 1.0 else ")"
                lines.append(f"| {name} | {what} | [{lo:.2f}, {hi:.2f}{shut} | {n:,} | {conf[b].mean():.3f} | "
                             f"{k / n:.3f} [{cl:.3f}, {ch:.3f}] |")
    return "\n".join(lines) + "\n\nBrier score: " + ", ".join(briers)


def rounded(obj):  # type: ignore[no-untyped-def]
    """``obj`` (the file's JSON tree) with every float rounded to :data:`DIGITS` significant digits."""
    if isinstance(obj, float):
        return float(f"{obj:.{DIGITS}g}")
    if isinstance(obj, dict):
        return {k: rounded(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [rounded(v) for v in obj]
    return obj


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gold_dir", type=Path, help="folder holding the three gold archives (searched recursively)")
    ap.add_argument("-o", "--output", type=Path, default=certify_model_path(DEFAULT_CERTIFY_MODEL),
                    help="the weights file to write (default: the packaged model)")
    ap.add_argument("--check", action="store_true", help="rebuild and compare with the file on disk byte for byte")
    ap.add_argument("-j", type=int, default=1, help="spaCy processes for profiling the gold (default 1)")
    ap.add_argument("--folds", type=int, default=5, help="folds of the outer and inner cross-validation (5)")
    ap.add_argument("--max-over", type=float, default=0.015, help="over-estimated share allowed per gold (0.015, the target)")
    ap.add_argument("--min-tail", type=float, default=0.97, help="tail precision at DDP >= 15 sought per gold (0.97)")
    ap.add_argument("--pipeline", default=None, metavar="NAME",
                    help="spaCy pipeline the gold is profiled with (default: ddpcore's default; 'fast' for the "
                         "parser-free model certify-v5-noparser.json)")
    ap.add_argument("--reuse", type=Path, default=None,
                    help="keep the profiled gold anchors in this folder and read them back on later runs "
                         "(for trying features; not with --check)")
    ap.add_argument("--tables", action="store_true",
                    help="print the out-of-fold figures as Markdown tables, every gold scope and every genre, "
                         "and the calibration of the confidences (docs/validation.md), and write nothing")
    args = ap.parse_args()
    if args.check and args.reuse is not None:
        ap.error("--check profiles the gold anew: drop --reuse")
    if args.check and args.tables:
        ap.error("--tables writes nothing to check: use one of them")
    data, has_parser = load(args.gold_dir, args.j, args.reuse, args.pipeline)
    all_rows = {n: np.ones(len(data[n]["d"]), bool) for n in data}
    oof, chosen = cross_validate(data, all_rows, args.folds, args.max_over, args.min_tail, inner=True)
    # out-of-fold certified candidates: each outer fold with its own inner-chosen thresholds
    figures: dict = {"certified": {}, "ddp": {}, "thresholds_per_fold": []}
    mask = {n: np.zeros(len(data[n]["d"]), bool) for n in data}
    for k in sorted(chosen):
        (t, tn, tl), te = chosen[k]
        figures["thresholds_per_fold"].append([t, tn, tl])
        for n in data:
            mask[n] |= certified(data[n], oof[n], te[n], t, tn, tl)
    columns: dict[str, dict[str, np.ndarray]] = {"ddp": {}, "ddp_certified": {}}
    for n, D in data.items():
        columns["ddp_certified"][n] = segment_ddp(D, mask[n])
        figures["certified"][n] = seg_metrics(D, columns["ddp_certified"][n])
        full = np.zeros(len(D["gd"]), dtype=np.int64)
        np.maximum.at(full, D["anchor_pos"], np.clip(D["anchor_d"], 0, None))
        columns["ddp"][n] = full
        figures["ddp"][n] = seg_metrics(D, full)
    if args.tables:
        print("thresholds per outer fold (pronouns / names / long): "
              + ", ".join(f"{float(t):.2f} / {float(tn):.2f} / {float(tl):.2f}" for t, tn, tl in figures["thresholds_per_fold"]))
        print(tables(data, columns, mask))
        print()
        print(calibration(data, oof))
        return 0
    # the shipped model: all data; thresholds by the same rule on all out-of-fold predictions
    t, tn, tl = choose(data, oof, all_rows, args.max_over, args.min_tail)
    X = np.vstack([data[n]["X"] for n in data])
    y = np.concatenate([data[n]["y"] for n in data])
    mean, scale, w, b = fit(X, y)
    doc = {
        "format": CERTIFY_FORMAT, "version": CERTIFY_VERSIONS[-1], "features": list(FEATURES),
        "weights": [float(v) for v in w], "mean": [float(v) for v in mean], "scale": [float(v) for v in scale],
        "bias": b, "threshold": t, "threshold_name": tn, "threshold_long": tl, "long_distance": LONG, "long_full_only": True,
        "recipe": {"script": "scripts/train_certify.py", "golds": sorted(GOLDS), "gold_scope": "ddp",
                   "distance": "chained", "rules": "refined", "folds": args.folds, "grouped_by": "document",
                   "model": f"logistic regression, L2, C={C}, standardised features, one row per candidate distance",
                   "grid": [GRID[0], GRID[-1], 0.01], "max_over": args.max_over,
                   "min_tail_precision_15": args.min_tail, "n_candidates": int(len(y)),
                   "share_over_candidates": float(y.mean())},
        "figures": figures,
    }
    if args.pipeline:  # recorded only off the default, so the default file's bytes keep their recipe
        doc["recipe"]["pipeline"] = args.pipeline
    if not has_parser:  # ddpcore reads this: the model was trained without the parse features
        doc["recipe"]["parser"] = False
    text = json.dumps(rounded(doc), indent=1, sort_keys=True) + "\n"
    if args.check:
        same = args.output.read_text(encoding="utf-8") == text
        print("train_certify --check:", "identical" if same else f"DIFFERS from {args.output}")
        return 0 if same else 1
    args.output.write_text(text, encoding="utf-8")
    print(json.dumps(figures, indent=1))
    print(f"wrote {args.output}: thresholds {t} (pronouns) / {tn} (names) / {tl} (>= {LONG} sentences)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
