"""``ddp stratify`` join accounting (issue 19): both sides' counts against a set computation in plain
Python, scores near the overflow bound against ``math.fsum``, the report's stratify numbers against the
JSON, and the WMT25 en-ko score table whose speech ids lack the profile's ``vid_`` prefix."""
from __future__ import annotations

import json
import math
import random
import re
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.cli.stratify import stratify_files as stratify  # the files -> frames -> stats.stratify path of `ddp stratify`

SIG = {"columns": {"document": "document_id", "segment": "segment_id", "domain": "domain"}}
REPO = Path(__file__).resolve().parents[2]
WMT25 = REPO.parent / "shared" / "data" / "wmt25-genmt"


def write_profile(df: pl.DataFrame, path: Path) -> Path:
    pq.write_table(df.to_arrow().replace_schema_metadata({b"ddpcore.signature": json.dumps(SIG).encode()}), path)
    return path


def test_join_accounting_against_sets(tmp_path: Path) -> None:
    """Random profile and scores with ids on one side only and null scores; every count of signature.join
    recomputed with Python sets and a loop over the rows (an independent implementation)."""
    rnd = random.Random(5)
    prof_keys = [(f"d{d}", s) for d in range(30) for s in range(rnd.randint(1, 6))]
    prof = pl.DataFrame({"document_id": [k[0] for k in prof_keys], "segment_id": [k[1] for k in prof_keys],
                         "domain": "x", "ddp": [rnd.randint(0, 40) for _ in prof_keys]})
    p = write_profile(prof, tmp_path / "p.parquet")
    scored = [k for k in prof_keys if rnd.random() < 0.8] + [(f"z{i}", i) for i in range(7)]  # 7 unknown keys
    rows = [(sy, d, s, None if rnd.random() < 0.05 or (d, s) == scored[0] else rnd.random())
            for sy in ("A", "B") for d, s in scored]  # scored[0]: a segment whose every score is null
    sc = pl.DataFrame(rows, schema={"system": pl.String, "document_id": pl.String, "segment_id": pl.Int64,
                                    "score": pl.Float64}, orient="row")
    f = tmp_path / "s.parquet"
    sc.write_parquet(f)
    with pytest.raises(DDPDataError, match=r"\[D710\]"):
        stratify(p, f, "score", by=["system"], n_boot=0)
    j = stratify(p, f, "score", by=["system"], n_boot=0, allow_partial_join=True)["signature"]["join"]
    pset = set(prof_keys)
    unmatched = [r for r in rows if (r[1], r[2]) not in pset]
    nulls = [r for r in rows if (r[1], r[2]) in pset and r[3] is None]
    hit_keys = {(r[1], r[2]) for r in rows if (r[1], r[2]) in pset}
    used_keys = {(r[1], r[2]) for r in rows if (r[1], r[2]) in pset and r[3] is not None}
    assert j["score_rows"] == len(rows)
    assert j["unmatched_score_rows"] == len(unmatched) == 14
    assert j["matched_score_rows"] == len(rows) - len(unmatched)
    assert j["unmatched_score_share"] == pytest.approx(len(unmatched) / len(rows), abs=1e-15)
    assert j["null_scores"] == len(nulls)
    assert j["used_score_rows"] == len(rows) - len(unmatched) - len(nulls)
    assert j["profile_segments"] == len(prof_keys)
    assert j["unmatched_profile_segments"] == len(pset - hit_keys)
    assert j["profile_segments_without_score"] == len(pset - used_keys)
    assert len(pset - used_keys) > len(pset - hit_keys)  # the all-null segment is matched but not used
    # first keys in file order (distinct), profile side in profile order
    first_un = list(dict.fromkeys((r[1], r[2]) for r in unmatched))[:5]
    assert [(k["document_id"], k["segment_id"]) for k in j["first_unmatched_score_keys"]] == first_un
    first_prof = [k for k in prof_keys if k not in hit_keys][:5]
    assert [(k["document_id"], k["segment_id"]) for k in j["first_unmatched_profile_keys"]] == first_prof
    assert [(k["document_id"], k["segment_id"]) for k in j["first_null_score_keys"]] == [(r[1], r[2]) for r in nulls][:5]


def test_max_unjoined_is_the_boundary(tmp_path: Path) -> None:
    """2 unknown rows of 200 = 1 %: accepted at --max-unjoined 0.01 (not more than), refused at 0.0099."""
    prof = pl.DataFrame({"document_id": [f"d{i // 10}" for i in range(100)], "segment_id": [i % 10 for i in range(100)],
                         "domain": "x", "ddp": [i % 17 for i in range(100)]})
    p = write_profile(prof, tmp_path / "p.parquet")
    sc = pl.concat([prof.select("document_id", "segment_id").with_columns(pl.lit(sy).alias("system"))
                    for sy in ("A", "B")]).with_columns(pl.int_range(pl.len()).cast(pl.Float64).alias("score"))
    sc = sc.with_columns(pl.when(pl.int_range(pl.len()) < 2).then(pl.lit("zz")).otherwise(pl.col("document_id"))
                         .alias("document_id"))
    f = tmp_path / "s.csv"
    sc.write_csv(f)
    r = stratify(p, f, "score", n_boot=0)  # 2/200 = 0.01 scores side; profile side: d0/0, d0/1 still scored by B
    assert r["signature"]["join"]["unmatched_score_rows"] == 2 and r["signature"]["warnings"]
    with pytest.raises(DDPDataError, match=r"\[D710\].*2 of 200 score rows .*\(1 %\)"):
        stratify(p, f, "score", n_boot=0, max_unjoined=0.0099)
    with pytest.raises(DDPUsageError, match=r"\[D713\]"):
        stratify(p, f, "score", n_boot=0, max_unjoined=1.5)


def test_large_scores_no_overflow_no_runtime_warning(tmp_path: Path) -> None:
    """Scores at the accepted bound (|x| <= 1e100): bin means equal math.fsum / n (exact-rounded sums, a
    loop in this test), CIs finite, and no numpy RuntimeWarning (warnings raised as errors)."""
    rnd = random.Random(2)
    n = 60
    prof = pl.DataFrame({"document_id": [f"d{i // 6}" for i in range(n)], "segment_id": [i % 6 for i in range(n)],
                         "domain": "x", "ddp": [rnd.randint(0, 30) for _ in range(n)]})
    p = write_profile(prof, tmp_path / "p.parquet")
    vals = [rnd.choice((1e100, -1e100, 9.9e99, 5e99)) for _ in range(n)]
    sc = prof.select("document_id", "segment_id").with_columns(pl.Series("score", vals))
    f = tmp_path / "s.parquet"
    sc.write_parquet(f)
    edges = [0, 1, 5, 15, math.inf]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            r = stratify(p, f, "score", bins=edges, n_boot=300, seed=1)
    g = r["groups"][0]
    ddp = prof["ddp"].to_list()
    for b, lo, hi in zip(g["bins"], edges[:-1], edges[1:]):
        inbin = [v for v, d in zip(vals, ddp) if lo <= d < hi]
        assert b["n"] == len(inbin)
        if inbin:
            assert b["mean"] == pytest.approx(math.fsum(inbin) / len(inbin), rel=1e-12)
            assert b["ci_low"] is not None and math.isfinite(b["ci_low"]) and math.isfinite(b["ci_high"])
    assert all(math.isfinite(y) for y in g["lowess"]["y"])
    # one step above the bound: refused with the row (1-based in the file) and the column
    f2 = tmp_path / "s2.csv"
    sc.with_columns(pl.when(pl.int_range(pl.len()) == 7).then(1e308).otherwise(pl.col("score")).alias("score")) \
        .write_csv(f2)
    with pytest.raises(DDPDataError, match=r"\[D360\] .*s2\.csv, row 8, column 'score': score 1e\+308"):
        stratify(p, f2, "score", n_boot=0)


def test_report_stratify_section_has_the_numbers(tmp_path: Path) -> None:
    """ddp report's stratify section: one row per group and bin with n, mean and CI as in the JSON (4 significant
    digits), the join accounting of both sides, n_boot and seed."""
    from ddpcore.report.html import stratify_section
    from ddpcore.stats.stratify import dumps

    prof = pl.DataFrame({"document_id": [f"d{i // 5}" for i in range(40)], "segment_id": [i % 5 for i in range(40)],
                         "domain": "x", "ddp": [(3 * i) % 19 for i in range(40)]})
    p = write_profile(prof, tmp_path / "p.parquet")
    sc = pl.concat([prof.select("document_id", "segment_id").with_columns(
        pl.lit(sy).alias("system"), (pl.int_range(pl.len()) * (k + 1) / 7).alias("score"))
        for k, sy in enumerate(("A", "B"))])
    sc = pl.concat([sc, pl.DataFrame({"document_id": ["vid_q"], "segment_id": [0], "system": ["A"],
                                      "score": [1.0]})])
    f = tmp_path / "s.csv"
    sc.write_csv(f)
    res = json.loads(dumps(stratify(p, f, "score", by=["system"], bins=[0, 1, 5, math.inf], n_boot=97, seed=4,
                                    allow_partial_join=True)))
    html = stratify_section(res)
    assert "n_boot 97, seed 4" in html
    assert "warning: 1 of 81 score rows" in html
    assert re.search(r"<td>score rows</td><td class=\"num\">81</td><td class=\"num\">80</td><td class=\"num\">1</td>",
                     html)
    assert "document_id=&#x27;vid_q&#x27;, segment_id=0" in html
    cells = re.findall(r"<td>\[(\d+), ([^)]+)\)</td><td class=\"num\">(\d+)</td><td class=\"num\">([^<]*)</td>"
                       r"<td class=\"num\">([^<]*)</td>", html)
    want = [(b, f"{b['mean']:.4g}", f"[{b['ci_low']:.4g}, {b['ci_high']:.4g}]") for g in res["groups"]
            for b in g["bins"]]
    assert len(cells) == len(want) == 6
    for (lo, hi, n, mean, ci), (b, m, c) in zip(cells, want):
        assert (float(lo), int(n), mean, ci) == (b["low"], b["n"], m, c)


@pytest.mark.shared_data
@pytest.mark.skipif(not WMT25.is_dir(), reason="shared WMT25 data absent")
def test_wmt25_enko_speech_ids_do_not_join_silently(tmp_path: Path) -> None:
    """The WMT25 en-ko score table drops the vid_ prefix of speech documents: with the source's own ids
    (profile ids from wmt25_en_source_segments.jsonl; DDP values arbitrary, the join does not read them)
    62 of 332 segments and 62 x 36 systems x 5 metrics = 11,160 of 59,760 stacked score rows do not join."""
    src = pl.read_ndjson(WMT25 / "wmt25_en_source_segments.jsonl").select("doc", "seg_idx", "domain")
    prof = src.rename({"doc": "document_id", "seg_idx": "segment_id"}).with_columns(
        (pl.int_range(pl.len()) % 23).alias("ddp"))
    p = write_profile(prof, tmp_path / "p.parquet")
    scores = WMT25 / "wmt25_en-ko_KR_automatic_scores_segments.tsv"
    cols = ["CometKiwi-XL", "GEMBA-ESA-CMDA", "GEMBA-ESA-GPT4.1", "MetricX-24-Hybrid-XL", "XCOMET-XL"]
    with pytest.raises(DDPDataError, match=r"\[D710\].*11,160 of 59,760 score rows .*\(18\.7 %\).*"
                                           r"62 of 332 segments .*document_id='vid_"):
        stratify(p, scores, cols, by=["metric"], on=["doc", "seg_idx"], n_boot=0)
    j = stratify(p, scores, cols, by=["metric"], on=["doc", "seg_idx"], n_boot=0,
                 allow_partial_join=True)["signature"]["join"]
    assert (j["unmatched_score_rows"], j["unmatched_profile_segments"]) == (11160, 62)
    # with the prefix put back (docs/curation.md) everything joins: no warning, 36 rows per segment
    fixed = tmp_path / "fixed.tsv"
    pl.read_csv(scores, separator="\t").with_columns(
        pl.when(pl.col("domain") == "speech").then("vid_" + pl.col("doc")).otherwise(pl.col("doc")).alias("doc")
    ).write_csv(fixed, separator="\t")
    r = stratify(p, fixed, cols, by=["metric"], on=["doc", "seg_idx"], n_boot=0)
    assert r["signature"]["warnings"] == []
    assert r["signature"]["join"]["unmatched_score_rows"] == 0
    assert r["signature"]["join"]["rows_per_segment"] == {"min": 36, "max": 36, "groups_with_unequal_counts": 0,
                                                           "groups": 5}


def test_stats_stratify_takes_frames_and_gives_the_file_answer(tmp_path: Path) -> None:
    """stats.stratify on in-memory polars frames (issue 20: stats opens no file) gives the same result as
    `ddp stratify`'s path (files read by io/profiles.scan_profile and io/scores.scan_scores), the signature
    but its names equal; anything but a polars frame is a one-line usage error."""
    from ddpcore.stats.stratify import stratify as stratify_frames

    prof = pl.DataFrame({"document_id": ["a", "a", "b", "b", "c"], "segment_id": [0, 1, 0, 1, 0],
                         "ddp": [0, 3, 0, 9, 20]})
    p = tmp_path / "ddp.parquet"
    prof.write_parquet(p)
    scores = pl.DataFrame({"document_id": ["a", "a", "b", "b", "c"] * 2, "segment_id": [0, 1, 0, 1, 0] * 2,
                           "system": ["S"] * 5 + ["T"] * 5,
                           "score": [1.0, 0.5, 0.9, 0.2, 0.1, 0.8, 0.7, 0.6, 0.3, 0.0]})
    s = tmp_path / "s.csv"
    scores.write_csv(s)
    from_files = stratify(p, s, "score", by=["system"], n_boot=50, seed=2)
    from_frames = stratify_frames(prof, scores.lazy(), "score", by=["system"], n_boot=50, seed=2)
    assert from_frames["groups"] == from_files["groups"]
    a, b = from_frames["signature"], from_files["signature"]
    assert (a["profile"], a["scores"], b["profile"], b["scores"]) == ("<profile>", "<table>", str(p), str(s))
    assert {k: v for k, v in a.items() if k not in ("profile", "scores")} == \
        {k: v for k, v in b.items() if k not in ("profile", "scores")}
    with pytest.raises(DDPUsageError) as e:
        stratify_frames(str(p), scores, "score", n_boot=0)
    assert e.value.code == "D657" and "polars DataFrame or LazyFrame" in str(e.value)
