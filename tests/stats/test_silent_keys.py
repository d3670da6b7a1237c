"""Issue 19: repeated ratings, one-sided ids and per-group join coverage (direct tests).

Each fix of tests/breaktests/test_silent_answers.py::KNOWN_SILENT checked on its own, with the
expected numbers from an independent computation (a plain loop, numpy, scipy) and a plant check
(the damaged input must be refused/warned; the clean one must give the independent answer).
"""
from __future__ import annotations

import json
import random

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

from ddpcore.errors import DDPDataError
from ddpcore.stats import TableColumns, bootstrap_tau, cluster_systems, load_long_table, reliability_matrix
from ddpcore.stats.options import ResampleOptions
from ddpcore.stats.stratify import stratify


def long_table(seed=3, n_docs=4, segs=(2, 1, 3, 2), n_sys=3, n_ann=2, conds=("DOC", "MIX")) -> pl.DataFrame:
    rng = random.Random(seed)
    rows = []
    for d in range(n_docs):
        for s in range(segs[d]):
            for k in range(n_sys):
                for a in range(n_ann):
                    for c in conds:
                        rows.append(dict(document_id=f"doc{d}", segment_id=s, system=f"sys{k}", annotator=f"ann{a}",
                                         condition=c, score=round(40 + 10 * k + rng.gauss(0, 4), 1)))
    return pl.DataFrame(rows)


def _dup(df: pl.DataFrame, i: int) -> pl.DataFrame:
    return pl.concat([df, df[i:i + 1]])


# ------------------------------------------------------------------ D307: one rating twice


def test_repeated_rating_is_refused_naming_key_and_rows():
    df = long_table()
    dup = _dup(df, 5)
    r = df.row(5, named=True)
    with pytest.raises(DDPDataError) as e:
        load_long_table(dup)
    msg = str(e.value)
    assert e.value.code == "D307" if hasattr(e.value, "code") else "[D307]" in msg
    assert f"rows 6, {dup.height}" in msg  # 1-based: the original row and its copy (the last row)
    assert f"document_id={r['document_id']!r}" in msg and f"annotator={r['annotator']!r}" in msg
    assert f"condition {r['condition']!r}" in msg
    # plant check: the clean table loads, with one row per rating (independent: a set of tuples)
    keys = ["document_id", "segment_id", "system", "annotator", "condition"]
    assert len({tuple(x[k] for k in keys) for x in df.iter_rows(named=True)}) == load_long_table(df).height


def test_without_annotator_column_repeats_are_several_annotators():
    """No annotator column: rows sharing (document, segment, system, condition) are different annotators."""
    df = long_table().drop("annotator")
    assert load_long_table(df).height == df.height


def test_tau_refuses_repeated_row_and_matches_a_loop_on_the_clean_table():
    df = long_table()
    with pytest.raises(DDPDataError, match=r"\[D307\]"):
        bootstrap_tau(_dup(df, 7), "DOC", "MIX", options=ResampleOptions(n_boot=50, seed=1))
    res = bootstrap_tau(df, "DOC", "MIX", options=ResampleOptions(n_boot=50, seed=1))
    # independent: system means by a loop, tau-b from scipy
    means = {c: {} for c in ("DOC", "MIX")}
    for c in means:
        for s in sorted(set(df["system"])):
            xs = [x["score"] for x in df.iter_rows(named=True) if x["condition"] == c and x["system"] == s]
            means[c][s] = sum(xs) / len(xs)
    systems = sorted(means["DOC"])
    ref = sps.kendalltau([means["DOC"][s] for s in systems], [means["MIX"][s] for s in systems])
    assert res.tau == pytest.approx(ref.statistic, abs=1e-12)
    assert res.means_a == pytest.approx(means["DOC"], rel=1e-12)


def test_tau_refuses_a_document_on_one_side_only():
    df = long_table()
    hit = (pl.col("condition") == "DOC") & (pl.col("document_id") == "doc1") & (pl.col("system") == "sys2") \
        & (pl.col("annotator") == "ann0")
    docx = df.with_columns(pl.when(hit).then(pl.lit("doc_x")).otherwise(pl.col("document_id")).alias("document_id"))
    with pytest.raises(DDPDataError, match=r"\[D791\].*1 only in 'DOC', 0 only in 'MIX'.*document_id='doc_x'"):
        bootstrap_tau(docx, "DOC", "MIX", options=ResampleOptions(n_boot=20, seed=1))
    with pytest.raises(DDPDataError, match=r"\[D791\].*segment\(s\)"):
        bootstrap_tau(df.filter(~((pl.col("condition") == "MIX") & (pl.col("document_id") == "doc1"))),
                      "DOC", "MIX", unit="segment", options=ResampleOptions(n_boot=20, seed=1))
    # keep (blindness): resampled as they are; n_units counts doc_x (independent: distinct ids)
    kept = bootstrap_tau(docx, "DOC", "MIX", options=ResampleOptions(n_boot=20, seed=1), one_sided="keep")
    assert kept.n_units == len(set(docx["document_id"].to_list())) == 5


def test_cluster_refuses_repeats_and_warns_on_one_sided_documents():
    df = long_table()
    for method in ("bootstrap", "wmt25"):
        with pytest.raises(DDPDataError, match=r"\[D307\]"):
            cluster_systems(_dup(df, 3), method, condition_value="DOC", options=ResampleOptions(n_boot=50, seed=2))
    hit = (pl.col("condition") == "DOC") & (pl.col("document_id") == "doc1") & (pl.col("system") == "sys0") \
        & (pl.col("annotator") == "ann1")
    docx = df.with_columns(pl.when(hit).then(pl.lit("doc_x")).otherwise(pl.col("document_id")).alias("document_id"))
    res = cluster_systems(docx, "bootstrap", condition_value="DOC", options=ResampleOptions(n_boot=50, seed=2))
    assert res.signature["n_units_one_condition"] == 1
    assert any("document_id='doc_x', 1 row(s)" in w for w in res.warnings)
    assert "warnings" in res.to_dict() and res.to_dict()["warnings"] == list(res.warnings)
    # the other condition and the clean table: no such warning; means equal plain row means (numpy)
    clean = cluster_systems(df, "bootstrap", condition_value="DOC", options=ResampleOptions(n_boot=50, seed=2))
    assert not any("no row under the other" in w for w in clean.warnings)
    assert clean.signature["n_units_one_condition"] is None
    doc = df.filter(pl.col("condition") == "DOC")
    for s, m in clean.means.items():
        assert m == pytest.approx(float(np.mean(doc.filter(pl.col("system") == s)["score"].to_numpy())), rel=1e-12)


def test_alpha_coder_rating_a_segment_twice_is_refused():
    df = long_table(n_ann=1).drop("annotator")  # --coder condition, no annotator column
    twice = df.with_columns(
        pl.when((pl.col("condition") == "DOC") & (pl.col("document_id") == "doc1")).then(pl.lit("doc2"))
        .otherwise(pl.col("document_id")).alias("document_id"))
    with pytest.raises(DDPDataError, match=r"\[D307\].*condition 'DOC'.*document_id='doc2', segment_id=0"):
        reliability_matrix(twice, unit=("document_id", "system"), coder="condition")
    # clean: the document-level unit is each coder's mean over the unit's segments (independent loop)
    rel = reliability_matrix(df, unit=("document_id", "system"), coder="condition")
    u = rel.units.row(0, named=True)
    xs = [x["score"] for x in df.iter_rows(named=True)
          if x["condition"] == "MIX" and x["document_id"] == u["document_id"] and x["system"] == u["system"]]
    assert rel.matrix[rel.coders.index("MIX"), 0] == pytest.approx(sum(xs) / len(xs), rel=1e-14)


def test_cli_independent_tost_refuses_repeats(tmp_path, capsys):
    from ddpcore.cli.main import main

    df = long_table()
    df.write_csv(tmp_path / "t.csv")
    _dup(df, 1).write_csv(tmp_path / "d.csv")
    argv = ["stats", "tost", "--a", "DOC", "--b", "MIX", "--margin", "3", "--independent"]
    assert main([*argv[:2], str(tmp_path / "t.csv"), *argv[2:]]) == 0
    out = json.loads(capsys.readouterr().out)
    a = df.filter(pl.col("condition") == "DOC")["score"].to_numpy()
    b = df.filter(pl.col("condition") == "MIX")["score"].to_numpy()
    assert out["mean_diff"] == pytest.approx(a.mean() - b.mean(), abs=1e-12)
    assert out["n"] == a.size + b.size
    assert main([*argv[:2], str(tmp_path / "d.csv"), *argv[2:]]) == 3
    assert "[D307]" in capsys.readouterr().err


# ------------------------------------------------------------------ stratify: per-group coverage


def _profile_and_scores(n_docs=5, segs=(2, 1, 3, 2, 3), n_sys=3, seed=3):
    rng = random.Random(seed)
    prof, sc = [], []
    for d in range(n_docs):
        for s in range(segs[d]):
            prof.append(dict(document_id=f"doc{d}", segment_id=s, ddp=rng.choice([0, 1, 2, 4, 9, 16])))
            for k in range(n_sys):
                sc.append(dict(document_id=f"doc{d}", segment_id=s, system=f"sys{k}",
                               score=round(60 + 5 * k + rng.gauss(0, 8), 2)))
    return pl.DataFrame(prof), pl.DataFrame(sc)


def _strat(p, s, **kw):
    return stratify(p, s, score_col="score", by=["system"], n_boot=50, seed=1, **kw)


def test_stratify_group_missing_a_segment():
    prof, sc = _profile_and_scores()
    gone = sc.filter(~((pl.col("system") == "sys2") & (pl.col("document_id") == "doc0") & (pl.col("segment_id") == 1)))
    with pytest.raises(DDPDataError, match=r"\[D710\].*system='sys2': 10 of 11 segments.*document_id='doc0', "
                                           r"segment_id=1"):
        _strat(prof, gone)
    res = _strat(prof, gone, allow_partial_join=True)
    cov = res["signature"]["join"]["group_coverage"]
    # independent: segments per system by a set loop
    per = {}
    for r in gone.iter_rows(named=True):
        per.setdefault(r["system"], set()).add((r["document_id"], r["segment_id"]))
    assert cov["groups"] == len(per) and cov["groups_short"] == sum(len(v) < prof.height for v in per.values()) == 1
    assert cov["max_missing_share"] == pytest.approx(1 - len(per["sys2"]) / prof.height, abs=1e-15)
    assert any("cover fewer profile segments" in w for w in res["signature"]["warnings"])
    # a larger --max-unjoined: a warning, not an error
    res = _strat(prof, gone, max_unjoined=0.2)
    assert any("cover fewer profile segments" in w for w in res["signature"]["warnings"])
    # plant check: the clean scores: no coverage warning, every group covers all 11 segments
    res = _strat(prof, sc)
    assert res["signature"]["join"]["group_coverage"]["groups_short"] == 0
    assert not any("cover fewer" in w for w in res["signature"]["warnings"])


def test_stratify_profile_side_groups_are_judged_on_their_own_segments():
    """--by domain: each domain group covers its own segments only; that is not a shortfall."""
    prof, sc = _profile_and_scores()
    prof = prof.with_columns(pl.when(pl.col("document_id").is_in(["doc0", "doc2"])).then(pl.lit("news"))
                             .otherwise(pl.lit("speech")).alias("domain"))
    res = stratify(prof, sc, score_col="score", by=["domain"], n_boot=50, seed=1)
    assert "group_coverage" not in res["signature"]["join"]
    res = stratify(prof, sc, score_col="score", by=["domain", "system"], n_boot=50, seed=1)
    assert res["signature"]["join"]["group_coverage"]["groups_short"] == 0
    gone = sc.filter(~((pl.col("system") == "sys1") & (pl.col("document_id") == "doc2") & (pl.col("segment_id") == 0)))
    res = stratify(prof, gone, score_col="score", by=["domain", "system"], n_boot=50, seed=1, allow_partial_join=True)
    first = res["signature"]["join"]["group_coverage"]["first_short_group"]
    n_news = prof.filter(pl.col("domain") == "news").height  # independent count of the news segments
    assert first["group"] == {"domain": "news", "system": "sys1"} and (first["segments"], first["of"]) == (n_news - 1,
                                                                                                           n_news)
