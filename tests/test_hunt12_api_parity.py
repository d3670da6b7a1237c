"""Hunt 12 (helper 48): the Python API and the ``ddp`` CLI give the same answers for the same input.

Each test feeds one small hand-made input (no spaCy) through the Python function and, where the
command exists, through ``ddp`` in-process, and checks the answer against an independent computation
(scipy / numpy / a plain loop in the test; each expected value says how it was produced).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
import scipy.stats

from ddpcore.cli.main import main
from ddpcore.errors import DDPDataError, DDPUsageError

SYSTEMS = ["sysA", "sysB", "sysC", "sysD"]


# --------------------------------------------------------------------------- fixtures


def _long(path: Path) -> Path:
    """A long score table: 6 documents x 3 segments x 4 systems x 2 conditions (SEG, DOC), seeded."""
    rng = np.random.default_rng(11)
    base = {"sysA": 80.0, "sysB": 75.0, "sysC": 70.0, "sysD": 72.0}
    rows = [{"document_id": f"d{d}", "segment_id": s, "system": y, "condition": c,
             "score": float(base[y] + rng.normal(0, 6) + (1.0 if c == "DOC" else 0.0))}
            for d in range(6) for s in range(3) for y in SYSTEMS for c in ("SEG", "DOC")]
    pl.DataFrame(rows).write_csv(path)
    return path


def _profile_rows(n_docs: int = 10, seed: int = 3) -> list[dict]:
    """Documents of 1-6 segments with 0-3 sentences each; a DDP never reaches before sentence 0."""
    rng = np.random.default_rng(seed)
    rows, doms = [], ["news", "literary", "social"]
    for d in range(n_docs):
        first = 0
        for s in range(int(rng.integers(1, 7))):
            n = int(rng.integers(0, 4))
            ddp = int(rng.integers(0, first + max(n - 1, 0) + 1))
            rows.append({"doc": f"doc{d}", "seg": s, "domain": doms[d % 3], "ddp": ddp, "first_sentence": first,
                         "n_sentences": n})
            first += n
    return rows


def _write_profile(rows: list[dict], path: Path, document: str = "document_id", segment: str = "segment_id") -> Path:
    df = pl.DataFrame(rows).select(pl.col("doc").alias(document), pl.col("seg").alias(segment), "domain",
                                   pl.col("n_sentences").cast(pl.Int32), pl.lit(3).alias("n_tokens"),
                                   pl.lit(1).alias("n_anchors"), pl.col("ddp").cast(pl.Int32),
                                   pl.col("first_sentence").cast(pl.Int32))
    sig = {"columns": {"document": document, "segment": segment, "text": "source", "domain": "domain"}}
    t = df.to_arrow().replace_schema_metadata({b"ddpcore.signature": json.dumps(sig).encode()})
    pq.write_table(t, path)
    return path


def _write_source(rows: list[dict], path: Path) -> Path:
    path.write_text("".join(json.dumps({"document_id": r["doc"], "segment_id": r["seg"], "domain": r["domain"],
                                        "source": f"text {i}"}) + "\n" for i, r in enumerate(rows)),
                    encoding="utf-8")
    return path


# --------------------------------------------------------------------------- sample: whole numbers only


def test_sample_per_bin_and_seed_are_whole_numbers_as_the_flags(tmp_path: Path, capsys) -> None:
    """``sample(per_bin=2.5)`` drew 3 units a bin while recording ``per_bin: 2`` and ``filled`` (the CLI's
    ``--per-bin`` is an int); ``seed=2.7`` ran as seed 2. Both are D641 now, as a text was a bare TypeError."""
    from ddpcore.curate.sample import sample

    rows = _profile_rows()
    prof = _write_profile(rows, tmp_path / "p.parquet")
    src = _write_source(rows, tmp_path / "in.jsonl")
    for kw in ({"per_bin": 2.5}, {"per_bin": "2"}, {"per_bin": True}, {"per_bin": 2, "seed": 2.7}):
        with pytest.raises(DDPUsageError) as e:
            sample(src, prof, "0,1,3,inf", **{"per_bin": 2, **kw})
        assert e.value.code == "D641"
    res = sample(src, prof, "0,1,3,inf", 2, seed=np.int64(5))  # a numpy integer is a whole number
    # expected: per bin, min(2, documents whose max DDP lies in the bin) - a plain loop over the rows
    doc_max: dict[str, int] = {}
    for r in rows:
        doc_max[r["doc"]] = max(doc_max.get(r["doc"], 0), r["ddp"])
    edges = [0, 1, 3, float("inf")]
    avail = [sum(edges[i] <= v < edges[i + 1] for v in doc_max.values()) for i in range(3)]
    assert [(b["available"], b["achieved"]) for b in res.bins] == [(a, min(2, a)) for a in avail]
    # the CLI keeps the same rows (its output lines are the input's lines the API keeps)
    out = tmp_path / "out.jsonl"
    assert main(["sample", str(src), "--profile", str(prof), "--bins", "0,1,3,inf", "--per-bin", "2", "--seed",
                 "5", "-o", str(out)]) == 0
    lines = src.read_text(encoding="utf-8").splitlines()
    assert out.read_text(encoding="utf-8").splitlines() == [ln for ln, k in zip(lines, res.keep) if k]


# --------------------------------------------------------------------------- metric_s: a path is a file


def test_metric_s_reads_a_path_as_the_cli_does(tmp_path: Path, capsys) -> None:
    """``metric_s("j.jsonl")`` scored each character of the path as an error row (a 7-character path: 7
    error rows, no score, no warning); a frame gave one error row per column. A path is read as ``ddp
    metric-s`` reads it now; a frame or one record is D920."""
    from ddpcore.stats.metric_s import metric_s, summarize

    recs = [{"id": "a", "accuracy_items": [{"问题严重程度": "普通"}], "checkpoint_items": [{"判断结果": "错误"}],
             "fluency_items": [{"问题严重程度": "有问题"}], "appropriateness_items": []},
            {"id": "b", "accuracy_items": [], "checkpoint_items": [], "fluency_items": [],
             "appropriateness_items": [{"问题严重程度": "有问题"}]}]
    path = tmp_path / "j.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
    # expected by hand from the released table (docs/metric-s.md): a: accuracy 60 - 5 (普通) - 5 (错误) = 50,
    # fluency 20 - 2 = 18, appropriateness 20, total 88; b: 60, 20, 20 - 5 = 15, total 95
    want = [("a", 50.0, 18.0, 20.0, 88.0), ("b", 60.0, 20.0, 15.0, 95.0)]
    for given in (str(path), path):
        rows = metric_s(given)
        assert [(r.id, r.accuracy, r.fluency, r.appropriateness, r.total) for r in rows] == want
        assert summarize(rows)["n_errors"] == 0
    assert main(["metric-s", str(path)]) == 0
    cli = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["id"], r["accuracy"], r["fluency"], r["appropriateness"], r["total"]) for r in cli] == want
    for bad in (pl.DataFrame(recs[1:]), recs[0]):
        with pytest.raises(DDPUsageError) as e:
            metric_s(bad)
        assert e.value.code == "D920"


# --------------------------------------------------------------------------- one name given as a str


def test_exclude_systems_str_is_one_system_tau_means_compare(tmp_path: Path) -> None:
    """``exclude_systems="sysD"`` was split into 's', 'y', 's', 'D' (D704 naming four systems that do not
    exist; with one-letter system names it left the wrong systems out in silence). A str is one name now."""
    import ddpcore.stats as S
    from ddpcore.stats.bootstrap import unit_keys

    table = _long(tmp_path / "long.csv")
    opts = S.ResampleOptions(n_boot=200)
    res = S.bootstrap_tau(table, "SEG", "DOC", exclude_systems="sysD", options=opts)
    assert res.systems == ["sysA", "sysB", "sysC"] and res.signature["exclude_systems"] == ["sysD"]
    # expected: scipy's tau-b of the per-system means of the three systems left (numpy means per system)
    df = pl.read_csv(table)
    means = {c: [float(np.mean(df.filter((pl.col("system") == y) & (pl.col("condition") == c))["score"].to_numpy()))
                 for y in ("sysA", "sysB", "sysC")] for c in ("SEG", "DOC")}
    assert res.tau == pytest.approx(scipy.stats.kendalltau(means["SEG"], means["DOC"]).statistic, abs=1e-12)
    m = S.bootstrap_system_means(table, condition_value="SEG", exclude_systems="sysD", options=opts)
    assert list(m.systems) == ["sysA", "sysB", "sysC"]
    assert np.allclose(m.means, means["SEG"], rtol=1e-12)
    assert unit_keys(table, exclude_systems="sysD").height == 6  # no error, the six documents
    wide = tmp_path / "wide.csv"
    df.filter(pl.col("condition") == "SEG").drop("condition").write_csv(wide)
    cmp = S.compare_systems(wide, "sysA", exclude_systems="sysD", options=opts)
    assert [r["system"] for r in cmp.comparisons["score"].rows()] == ["sysA", "sysB", "sysC"]


def test_exclude_systems_and_pool_str_mix_and_blindness(tmp_path: Path) -> None:
    """``build_mix(exclude_systems=..., pool=...)`` and ``BlindnessDesign(exclude_systems=...)`` with a str."""
    from ddpcore.curate.mix import build_mix
    from ddpcore.stats import ResampleOptions
    from ddpcore.stats.blindness import BlindnessDesign, blindness

    df = pl.read_csv(_long(tmp_path / "long.csv"))
    outs = tmp_path / "outs.csv"
    (df.filter(pl.col("condition") == "SEG").with_columns(
        pl.format("{} {} {}", "system", "document_id", "segment_id").alias("text")).write_csv(outs))
    assert build_mix(outs, exclude_systems="sysD").pool == ["sysA", "sysB", "sysC"]
    with pytest.raises(DDPDataError) as e:  # one pooled system: D500 naming it (it was D502 naming 's', 'y', 'A')
        build_mix(outs, pool="sysA")
    assert e.value.code == "D500" and "(sysA)" in str(e.value)
    design = BlindnessDesign(exclude_systems="sysD")
    assert tuple(design.exclude_systems) == ("sysD",)
    with pytest.warns(UserWarning):  # no source_system column: the nominal attribution is said
        res = blindness(df.with_columns(pl.col("condition").replace({"SEG": "MIX"})), "DOC", "MIX", margin=3,
                        design=design, options=ResampleOptions(n_boot=100))
    assert list(res.signature["exclude_systems"]) == ["sysD"]


def test_stratify_by_str_and_whole_number_options(tmp_path: Path) -> None:
    """``stratify(by="system")`` grouped by the columns 's', 'y', ... (D651 "--by s"); a str is one column, as
    ``score_col`` is. ``n_boot="10"`` was a bare TypeError: D657."""
    from ddpcore.stats.stratify import stratify

    rows = _profile_rows(12, 5)
    prof = pl.read_parquet(_write_profile(rows, tmp_path / "p.parquet"))
    rng = np.random.default_rng(8)
    scores = prof.select("document_id", "segment_id").join(pl.DataFrame({"system": ["X", "Y"]}), how="cross")
    scores = scores.with_columns(pl.Series("score", rng.normal(50, 10, scores.height)))
    res = stratify(prof, scores, "score", by="system", n_boot=0)
    got = {g["system"]: (g["n"], g["spearman"]["rho"]) for g in res["groups"]}
    # expected: scipy's Spearman rho of DDP vs score per system, over the joined rows (a polars join)
    joined = scores.join(prof.select("document_id", "segment_id", "ddp"), on=["document_id", "segment_id"])
    for y in ("X", "Y"):
        part = joined.filter(pl.col("system") == y)
        rho = scipy.stats.spearmanr(part["ddp"].to_numpy(), part["score"].to_numpy()).statistic
        assert got[y][0] == part.height and got[y][1] == pytest.approx(rho, abs=1e-12)
    for kw in ({"n_boot": "10"}, {"seed": None}, {"lowess_max_points": 2.5}):
        with pytest.raises(DDPUsageError) as e:
            stratify(prof, scores, "score", **{"n_boot": 0, **kw})
        assert e.value.code == "D657"


def test_select_criteria_domain_str(tmp_path: Path) -> None:
    """``Criteria(domains="news")`` was refused as "--domain n: not a domain" (its characters); one domain now."""
    from ddpcore.curate.select import Criteria, select

    rows = _profile_rows()
    prof = _write_profile(rows, tmp_path / "p.parquet")
    src = _write_source(rows, tmp_path / "in.jsonl")
    res = select(src, prof, Criteria(domains="news", min_ddp=1))
    # expected: a plain loop over the rows
    assert res.summary["after"]["segments"] == sum(r["domain"] == "news" and r["ddp"] >= 1 for r in rows)


# --------------------------------------------------------------------------- agree: within= as --within


def test_agree_within_is_a_whole_number(tmp_path: Path) -> None:
    """``agree(within="5")`` was a bare TypeError; ``within=2.5`` or ``True`` ran and was recorded as the
    tolerance, which ``--within`` (an int) never is. D435 now; an int still runs."""
    from ddpcore.gold.agree import agree

    rows = _profile_rows()
    a = _write_profile(rows, tmp_path / "a.parquet")
    rng = np.random.default_rng(4)
    shifted = [{**r, "ddp": r["ddp"] + int(rng.integers(0, 4))} for r in rows]
    b = _write_profile(shifted, tmp_path / "b.parquet")
    for bad in ("5", 2.5, True, None):
        with pytest.raises(DDPUsageError) as e:
            agree(a, b, within=bad)
        assert e.value.code == "D435"
    res = agree(a, b, within=np.int64(2))
    # expected: share of |B - A| <= 2 over the segments, a numpy computation on the two row lists
    diff = np.abs(np.array([r["ddp"] for r in shifted]) - np.array([r["ddp"] for r in rows]))
    assert res.to_dict()["share_within"] == pytest.approx(float(np.mean(diff <= 2)), abs=1e-12)


# --------------------------------------------------------------------------- meta: the profile's id columns


def test_meta_evaluate_joins_on_the_profiles_id_columns_as_ddp_meta(tmp_path: Path, capsys) -> None:
    """A profile written with ``--document-col doc --segment-col seg`` and a score table with those columns:
    ``ddp meta`` joins them (the profile's names, its signature records them), ``meta_evaluate`` without
    ``columns=`` refused the same input with D800 (it looked for ``document_id``). The same numbers now."""
    from ddpcore.io.profiles import scan_profile
    from ddpcore.stats import ResampleOptions
    from ddpcore.stats.meta import MetaTests, meta_evaluate

    rows = _profile_rows(12, 9)
    prof_path = _write_profile(rows, tmp_path / "p.parquet", document="doc", segment="seg")
    rng = np.random.default_rng(6)
    keys = pl.DataFrame({"doc": [r["doc"] for r in rows], "seg": [r["seg"] for r in rows]})
    scores = keys.join(pl.DataFrame({"system": ["X", "Y", "Z"]}), how="cross")
    human = rng.integers(0, 26, scores.height).astype(float)
    scores = scores.with_columns(pl.Series("human", human), pl.Series("m1", human + rng.normal(0, 4, scores.height)))
    scores_path = tmp_path / "scores.csv"
    scores.write_csv(scores_path)
    prof = scan_profile(prof_path)
    res = meta_evaluate(prof.frame, scores, human_col="human", profile_signature=prof.signature, bins=[0, 2, np.inf],
                        options=ResampleOptions(n_boot=0), tests=MetaTests(n_perm=0, spa_perm=10))
    assert res.signature["columns"]["document"] == "doc" and res.signature["columns"]["segment"] == "seg"
    api = res.overall["metrics"]["m1"]["pearson.none"]["value"]
    # expected: scipy's Pearson r of the metric and the human score over every cell (all join the profile)
    assert api == pytest.approx(scipy.stats.pearsonr(scores["m1"].to_numpy(), human).statistic, abs=1e-12)
    assert main(["meta", str(prof_path), str(scores_path), "--human-col", "human", "--bins", "0,2,inf",
                 "--n-boot", "0", "--n-perm", "0", "--spa-perm", "10"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert cli["overall"]["metrics"]["m1"]["pearson.none"]["value"] == pytest.approx(api, abs=1e-15)


def test_levels_given_as_strings_are_d_coded_not_type_errors():
    """``bootstrap_tau(confidence="0.9")`` / ``tau_min="0.5"`` and ``cluster_systems(alpha="0.05")`` passed the range
    check (``float("0.9")``) and failed later with a bare TypeError; the flags are floats, the API takes numbers."""
    import polars as pl

    from ddpcore.errors import DDPUsageError
    from ddpcore.stats import ResampleOptions, bootstrap_tau, cluster_systems

    t = pl.DataFrame({"system": ["a", "b"] * 4, "document_id": ["d1", "d1", "d2", "d2"] * 2,
                      "segment_id": [0, 0, 0, 0, 1, 1, 1, 1], "score": [1.0, 2.0, 3.0, 1.0, 2.0, 2.5, 1.0, 0.5]})
    two = pl.concat([t.with_columns(condition=pl.lit("DOC")), t.with_columns(condition=pl.lit("MIX"))])
    opts = ResampleOptions(n_boot=10)
    with pytest.raises(DDPUsageError, match=r"\[D311\] confidence must be a number"):
        bootstrap_tau(two, "DOC", "MIX", confidence="0.9", options=opts)
    with pytest.raises(DDPUsageError, match=r"\[D311\] tau_min must be a finite number"):
        bootstrap_tau(two, "DOC", "MIX", tau_min="0.5", options=opts)
    with pytest.raises(DDPUsageError, match=r"\[D351\] alpha must be a number"):
        cluster_systems(t, "wmt24", alpha="0.05")
    import numpy as np  # numpy scalars are numbers
    assert bootstrap_tau(two, "DOC", "MIX", confidence=np.float64(0.9), options=opts).tau is not None
