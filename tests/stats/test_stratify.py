"""``ddp stratify``: numbers against scipy/statsmodels, a hand-computed case, a slow bootstrap oracle,
join accounting, --gap and the CLI. Profiles are hand-made Parquet files (no spaCy)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from stats_oracles import percentile_type7

from ddpcore.cli.main import main
from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.stats.bootstrap import resample_indices
from ddpcore.cli.stratify import stratify_files as stratify  # the files -> frames -> stats.stratify path of `ddp stratify`
from ddpcore.stats.stratify import to_text, to_tsv


def write_profile(df: pl.DataFrame, path: Path, columns: dict | None = None) -> Path:
    t = df.to_arrow()
    sig = {"columns": columns or {"document": "document_id", "segment": "segment_id", "text": "source",
                                  "domain": "domain"}}
    pq.write_table(t.replace_schema_metadata({b"ddpcore.signature": json.dumps(sig).encode()}), path)
    return path


@pytest.fixture()
def small(tmp_path: Path):
    # document a: segments 0-2 with DDP 0, 2, 7; document b: segments 0-1 with DDP 0, 20
    prof = pl.DataFrame({"document_id": ["a", "a", "a", "b", "b"], "segment_id": [0, 1, 2, 0, 1],
                         "domain": ["news"] * 3 + ["lit"] * 2, "ddp": [0, 2, 7, 0, 20]})
    p = write_profile(prof, tmp_path / "ddp.parquet")
    scores = pl.DataFrame({"system": ["S"] * 5 + ["T"] * 5,
                           "document_id": ["a", "a", "a", "b", "b"] * 2, "segment_id": [0, 1, 2, 0, 1] * 2,
                           "score": [90.0, 80.0, 70.0, 60.0, 50.0, 85.0, 80.0, 60.0, 65.0, 30.0]})
    s = tmp_path / "scores.csv"
    scores.write_csv(s)
    return p, s, prof, scores


def test_hand_computed_small_case(small) -> None:
    p, s, prof, scores = small
    r = stratify(p, s, "score", by=["system"], bins=[0, 1, 5, math.inf], n_boot=200, seed=3)
    g = r["groups"][0]
    assert g["system"] == "S" and g["n"] == 5
    # bins by hand: [0,1): a0=90, b0=60 -> mean 75; [1,5): a1=80 -> 80; [5,inf): a2=70, b1=50 -> 60
    assert [(b["n"], b["mean"]) for b in g["bins"]] == [(2, 75.0), (1, 80.0), (2, 60.0)]
    # Spearman by hand: DDP ranks (0,2,7,0,20) -> (1.5,3,4,1.5,5); scores (90,80,70,60,50) -> (5,4,3,2,1);
    # deviations from the mean rank 3: dx = (-1.5, 0, 1, -1.5, 2), dy = (2, 1, 0, -1, -2);
    # sum dx*dy = -3 + 0 + 0 + 1.5 - 4 = -5.5, sum dx^2 = 9.5, sum dy^2 = 10 -> rho = -5.5 / sqrt(95)
    assert g["spearman"]["rho"] == pytest.approx(-5.5 / math.sqrt(95), abs=1e-12)
    # bin [1,5) has only document a: a document bootstrap cannot give an interval -> null CI
    assert (g["bins"][1]["ci_low"], g["bins"][1]["ci_high"]) == (None, None)
    # bin [0,1): a replicate's mean is 90 (only a drawn), 60 (only b) or 75 (one of each) -> CI within [60, 90]
    assert 60.0 <= g["bins"][0]["ci_low"] <= 75.0 <= g["bins"][0]["ci_high"] <= 90.0


def test_spearman_and_lowess_against_scipy_statsmodels(tmp_path: Path) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    sm_lowess = pytest.importorskip("statsmodels.nonparametric.smoothers_lowess").lowess
    rng = np.random.default_rng(1)
    n_docs, per = 40, 6
    ddp = rng.integers(0, 60, n_docs * per)
    prof = pl.DataFrame({"document_id": np.repeat([f"d{i}" for i in range(n_docs)], per),
                         "segment_id": np.tile(np.arange(per), n_docs), "domain": "x", "ddp": ddp})
    p = write_profile(prof, tmp_path / "p.parquet")
    score = 70 - 0.2 * ddp + rng.normal(0, 8, ddp.size)
    s = tmp_path / "s.parquet"
    prof.select("document_id", "segment_id").with_columns(pl.Series("score", score)).write_parquet(s)
    g = stratify(p, s, "score", n_boot=100)["groups"][0]
    want = scipy_stats.spearmanr(ddp, score)
    assert g["spearman"]["rho"] == pytest.approx(want.statistic, abs=1e-12)
    assert g["spearman"]["p"] == pytest.approx(want.pvalue, rel=1e-9)
    fit = sm_lowess(score, ddp.astype(float))  # statsmodels defaults: frac=2/3, it=3, delta=0
    ux, first = np.unique(fit[:, 0], return_index=True)
    assert np.allclose(g["lowess"]["x"], ux)
    assert np.allclose(g["lowess"]["y"], fit[first, 1], atol=1e-9)


def test_bootstrap_ci_against_slow_oracle(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    docs = np.repeat(np.arange(12), 4)
    ddp = rng.integers(0, 30, docs.size)
    score = rng.normal(50, 10, docs.size)
    prof = pl.DataFrame({"document_id": [f"doc{d:02d}" for d in docs], "segment_id": np.tile(np.arange(4), 12),
                         "domain": "x", "ddp": ddp})
    p = write_profile(prof, tmp_path / "p.parquet")
    s = tmp_path / "s.jsonl"
    prof.select("document_id", "segment_id").with_columns(pl.Series("score", score)).write_ndjson(s)
    edges = [0, 5, 15, math.inf]
    g = stratify(p, s, "score", bins=edges, n_boot=300, seed=9)["groups"][0]
    # oracle: the documented index matrix, one replicate and one bin at a time
    idx = resample_indices(300, 12, 9)  # documents in sorted id order = doc00..doc11
    for k, b in enumerate(g["bins"]):
        means = []
        for r in range(300):
            tot = cnt = 0.0
            for d in idx[r]:
                for j in range(docs.size):
                    if docs[j] == d and edges[k] <= ddp[j] < edges[k + 1]:
                        tot += score[j]
                        cnt += 1
            if cnt:
                means.append(tot / cnt)
        lo, hi = percentile_type7(means, 2.5), percentile_type7(means, 97.5)  # Hyndman-Fan 7 by hand
        assert b["ci_low"] == pytest.approx(lo, abs=1e-9) and b["ci_high"] == pytest.approx(hi, abs=1e-9)


def test_join_accounting_and_strict(small, tmp_path: Path) -> None:
    p, s, prof, scores = small
    extra = pl.concat([scores, pl.DataFrame({"system": ["S", "S"], "document_id": ["zz", "a"],
                                             "segment_id": [0, 9], "score": [1.0, 2.0]}),
                       pl.DataFrame({"system": ["T"], "document_id": ["a"], "segment_id": [5],
                                     "score": [None]}, schema=scores.schema)])
    # a null score on a matched segment
    extra = extra.with_columns(pl.when((pl.col("system") == "T") & (pl.col("segment_id") == 1) &
                                       (pl.col("document_id") == "b")).then(None).otherwise(pl.col("score"))
                               .alias("score"))
    f = tmp_path / "extra.csv"
    extra.write_csv(f)
    r = stratify(p, f, "score", by=["system"], n_boot=10, allow_partial_join=True)  # 3/13 unmatched > 1 %
    j = r["signature"]["join"]
    # 13 rows: 3 without a profile segment (zz/0, a/9, a/5); 1 null score on a matched row (T, b/1)
    assert (j["score_rows"], j["unmatched_score_rows"], j["null_scores"]) == (13, 3, 1)
    assert j["profile_segments_without_score"] == 0 and j["profile_segments"] == 5
    assert [g["n"] for g in r["groups"]] == [5, 4]
    with pytest.raises(DDPDataError, match=r"D653.*\(document_id='b', segment_id=1\) has a null"):  # the first bad row in file order
        stratify(p, f, "score", by=["system"], n_boot=10, strict_join=True)
    only_a = tmp_path / "only_a.csv"
    scores.filter(pl.col("document_id") == "a").write_csv(only_a)
    assert stratify(p, only_a, "score", n_boot=0, allow_partial_join=True)["signature"]["join"][
        "profile_segments_without_score"] == 2


def test_gap_is_paired_difference(small) -> None:
    p, s, prof, scores = small
    r = stratify(p, s, "score", by=["system"], bins=[0, 1, 5, math.inf], gap=["S", "T"], n_boot=50)
    g = r["gaps"][0]
    assert g["system"] == "S - T" and g["n"] == 5
    # S - T per segment: a0 5, a1 0, a2 10, b0 -5, b1 20 -> bins [0,1): (5-5)/2 = 0; [1,5): 0; [5,inf): 15
    assert [b["mean"] for b in g["bins"]] == [0.0, 0.0, 15.0]


def test_gap_refuses_ambiguous_pairs(small, tmp_path: Path) -> None:
    p, s, prof, scores = small
    two = tmp_path / "two.csv"  # two language pairs, lp not in --by: S and T rows cannot be paired one to one
    pl.concat([scores.with_columns(pl.lit(lp).alias("lp")) for lp in ("en-cs", "en-ja")]).write_csv(two)
    with pytest.raises(DDPUsageError, match=r"D655.*system 'S' scores 5 segment\(s\) more than once.*to --by"):
        stratify(p, two, "score", by=["system"], gap=["S", "T"], n_boot=0)
    r = stratify(p, two, "score", by=["system", "lp"], gap=["S", "T"], n_boot=0)
    assert [(g["system"], g["lp"], g["n"]) for g in r["gaps"]] == [("S - T", "en-cs", 5), ("S - T", "en-ja", 5)]


def test_domain_from_profile_and_on_other_names(small, tmp_path: Path) -> None:
    p, s, prof, scores = small
    renamed = tmp_path / "renamed.tsv"
    scores.rename({"document_id": "doc", "segment_id": "seg_idx"}).with_columns(
        pl.col("seg_idx").cast(pl.String)).write_csv(renamed, separator="\t")
    r = stratify(p, renamed, "score", by=["domain"], on=["doc", "seg_idx"], n_boot=0)
    assert {g["domain"]: g["n"] for g in r["groups"]} == {"lit": 4, "news": 6}
    with pytest.raises(DDPUsageError, match=r"D652.*join column 'document_id' missing.*--document-col/--segment-col"):
        stratify(p, renamed, "score", n_boot=0)


def test_errors(small) -> None:
    p, s, *_ = small
    with pytest.raises(DDPUsageError, match=r"D650.*available columns: system, document_id, segment_id, score"):
        stratify(p, s, "nope")
    with pytest.raises(DDPUsageError, match=r"D651.*--by sys\b"):
        stratify(p, s, "score", by=["sys"])
    with pytest.raises(DDPUsageError, match="D640"):
        stratify(p, s, "score", bins=[0, 5, 2])
    with pytest.raises(DDPUsageError, match="D655"):
        stratify(p, s, "score", by=["system"], gap=["S", "X"])


def test_cli_json_shape_tsv_text(small, tmp_path: Path, capsys) -> None:
    p, s, *_ = small
    assert main(["stratify", str(p), str(s), "--score-col", "score", "--by", "system", "--n-boot", "100"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"groups", "signature"}
    g = out["groups"][0]
    assert set(g) == {"system", "n", "spearman", "bins", "lowess"}
    assert set(g["spearman"]) == {"rho", "p"} and set(g["lowess"]) == {"x", "y"}
    assert set(g["bins"][0]) == {"low", "high", "n", "mean", "ci_low", "ci_high"}
    # the same twice (seeded)
    assert main(["stratify", str(p), str(s), "--score-col", "score", "--by", "system", "--n-boot", "100"]) == 0
    again = json.loads(capsys.readouterr().out)
    for ga, gb in zip(again["groups"], out["groups"]):
        assert ga == gb, [(k, ga[k], gb[k]) for k in ga if ga[k] != gb[k]]
    assert again == out
    o = tmp_path / "res.tsv"
    assert main(["stratify", str(p), str(s), "--score-col", "score", "--by", "system", "-o", str(o)]) == 0
    assert o.read_text().splitlines()[0].startswith("kind\tsystem\tn\trho")
    assert (tmp_path / "res.tsv.signature.json").exists()
    r = stratify(p, s, "score", by=["system"], n_boot=10)
    assert "Spearman rho" in to_text(r) and len(to_tsv(r).splitlines()) == 1 + 2 * 5


def test_by_a_real_metric_column(small, tmp_path: Path, capsys) -> None:
    """A long scores table (system, metric, score rows) groups by its own 'metric' column; it gives the
    groups the stacked form of the same scores (two --score-col columns) gives."""
    p, s, prof, scores = small
    long = pl.concat([scores.with_columns(pl.lit("m1").alias("metric")),
                      scores.with_columns(pl.lit("m2").alias("metric"), (pl.col("score") / 10).alias("score"))])
    lpath = tmp_path / "long.csv"
    long.write_csv(lpath)
    r = stratify(p, lpath, "score", by=["system", "metric"], bins=[0, 1, 5, math.inf], n_boot=100, seed=2)
    assert [(g["system"], g["metric"], g["n"]) for g in r["groups"]] == [
        ("S", "m1", 5), ("S", "m2", 5), ("T", "m1", 5), ("T", "m2", 5)]
    # by hand (the fixture's S scores 90, 80, 70, 60, 50 at DDP 0, 2, 7, 0, 20; m2 = m1 / 10):
    # [0,1): (90+60)/2 = 75, [1,5): 80, [5,inf): (70+50)/2 = 60
    assert [b["mean"] for b in r["groups"][0]["bins"]] == [75.0, 80.0, 60.0]
    assert [b["mean"] for b in r["groups"][1]["bins"]] == [7.5, 8.0, 6.0]
    wide = tmp_path / "wide.csv"
    scores.with_columns((pl.col("score") / 10).alias("m2")).rename({"score": "m1"}).write_csv(wide)
    stacked = stratify(p, wide, ["m1", "m2"], by=["system", "metric"], bins=[0, 1, 5, math.inf], n_boot=100, seed=2)
    assert stacked["groups"] == r["groups"]
    # --gap pairs systems within each metric
    g = stratify(p, lpath, "score", by=["system", "metric"], bins=[0, 1, 5, math.inf], gap=["S", "T"], n_boot=0)
    # S - T per segment (fixture): a0 5, a1 0, a2 10, b0 -5, b1 20 -> [0,1): 0, [1,5): 0, [5,inf): 15; m2: / 10
    assert [(x["metric"], [b["mean"] for b in x["bins"]]) for x in g["gaps"]] == [
        ("m1", [0.0, 0.0, 15.0]), ("m2", [0.0, 0.0, 1.5])]
    # the CLI, as in the issue: --by system,metric
    assert main(["stratify", str(p), str(lpath), "--score-col", "score", "--by", "system,metric", "--n-boot", "0",
                 "-f", "tsv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("kind\tsystem\tmetric\tn")


def test_stacked_score_columns_and_a_real_metric_column_are_ambiguous(small, tmp_path: Path) -> None:
    p, s, prof, scores = small
    wide = tmp_path / "wide.csv"
    scores.with_columns(pl.col("score").alias("m2"), pl.lit("x").alias("metric")).write_csv(wide)
    with pytest.raises(DDPUsageError, match=r"D560.*--by metric: ambiguous: .*wide\.csv has a column 'metric'"):
        stratify(p, wide, ["score", "m2"], by=["system", "metric"], n_boot=0)
    # without --by metric there is nothing to confuse; one score column groups by the real column
    assert len(stratify(p, wide, ["score", "m2"], by=["system"], n_boot=0)["groups"]) == 2
    assert [g["metric"] for g in stratify(p, wide, "score", by=["metric"], n_boot=0)["groups"]] == ["x"]
