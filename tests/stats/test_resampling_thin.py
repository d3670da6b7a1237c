"""A bootstrap never claims certainty in silence (tester's A1, C2, C4).

* One resampling unit: every replicate redraws the whole sample, so the tau CI collapses to
  [tau, tau], every cluster-bootstrap p is 0 and every compare CI has zero width. ``stats tau``,
  ``stats cluster`` (bootstrap) and ``stats compare`` refuse it: exit 3, one line ``[D364]`` naming the
  file and the unit (was exit 0 with CI [1, 1] / 4 clusters / zero-width CIs).
* Too few replicates for the level: a warning on stderr and in the JSON ``warnings`` (tau: the CI tails;
  cluster: a p below alpha can only be "no replicate crossed"; compare: the smallest corrected p is not
  below alpha, so no system can be significant).
* ``--seed`` is an integer in [0, 2**128) for tau, cluster and compare alike (compare took 2**128).
* The bootstrap's rank-conflict reason counts replicates, not pairs; its JSON count matrix is
  ``n_replicates`` (``n_pairs`` is null: the bootstrap compares unpaired means).

Expectations are computed independently: the documented PCG64 generator re-implemented with Python
integers, scipy's kendalltau, statsmodels' Holm correction, plain loops.
"""
from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from ddpcore.errors import DDPDataError
from ddpcore.stats import ResampleOptions, bootstrap_tau, cluster_systems
from ddpcore.stats.compare import CompareTests, compare_systems
from _long_table import long_table as _long, run_stats as _run




def _wide(df: pl.DataFrame) -> pl.DataFrame:
    """One condition as compare's table: one row per (document, segment, system)."""
    return df.filter(pl.col("condition") == "DOC").drop("condition", "annotator")




def _draws(seed: int, n_boot: int, n_units: int) -> np.ndarray:
    """The documented generator, written out: PCG64(seed).random_raw row-major, unit = floor(raw * n / 2**64)."""
    raw = np.random.PCG64(seed).random_raw(n_boot * n_units)
    return np.array([(int(r) * n_units) >> 64 for r in raw], dtype=np.int64).reshape(n_boot, n_units)


# --------------------------------------------------------------------------- one resampling unit


def test_tau_with_one_document_is_refused(tmp_path, capsys):
    df = _long(n_docs=1)
    path = tmp_path / "onedoc.csv"
    df.write_csv(path)
    assert df["document_id"].n_unique() == 1  # the resampling unit count, counted here
    # what the old answer was: every replicate redraws d0 -> the CI is the point tau itself
    means = df.group_by("condition", "system").agg(pl.col("score").mean()).sort("system")
    point = stats.kendalltau(means.filter(pl.col("condition") == "DOC")["score"],
                             means.filter(pl.col("condition") == "MIX")["score"]).statistic
    assert point == 1.0
    code, out, err = _run(capsys, "tau", str(path), "--a", "DOC", "--b", "MIX", "--n-boot", "200",
                          "--fail-on", "different", "-f", "text")
    assert code == 3 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "[D364]" in lines[0] and str(path) in lines[0] and "document_id='d0'" in lines[0]
    with pytest.raises(DDPDataError, match=r"\[D364\].*single resampling document"):
        bootstrap_tau(df, "DOC", "MIX", options=ResampleOptions(n_boot=50))
    # segments are several units: allowed, and the CI is the percentile CI of the loop over the draws
    res = bootstrap_tau(df, "DOC", "MIX", unit="segment", options=ResampleOptions(n_boot=60, seed=3))
    keys = sorted(df["segment_id"].unique().to_list())
    reps = []
    for row in _draws(3, 60, len(keys)):
        drawn = pl.concat([df.filter(pl.col("segment_id") == keys[k]) for k in row])
        m = drawn.group_by("condition", "system").agg(pl.col("score").mean()).sort("system")
        reps.append(stats.kendalltau(m.filter(pl.col("condition") == "DOC")["score"],
                                     m.filter(pl.col("condition") == "MIX")["score"]).statistic)
    reps = np.array(reps)
    ok = np.isfinite(reps)
    assert res.ci_low == pytest.approx(np.percentile(reps[ok], 2.5), abs=1e-12)
    assert res.ci_high == pytest.approx(np.percentile(reps[ok], 97.5), abs=1e-12)


def test_cluster_bootstrap_with_one_document_is_refused(tmp_path, capsys):
    df = _long(n_docs=1)
    path = tmp_path / "onedoc.csv"
    df.write_csv(path)
    doc = df.filter(pl.col("condition") == "DOC")
    # the old answer, by a loop: every replicate is the full sample, so each pair's delta has one sign
    # in all B replicates -> p = 2 * min(#<=0, #>=0) / B = 0 for every pair of different means
    m = doc.group_by("system").agg(pl.col("score").mean())["score"].to_numpy()
    assert np.all(np.abs(np.subtract.outer(m, m)[np.triu_indices(4, 1)]) > 0)
    code, out, err = _run(capsys, "cluster", str(path), "--in", "DOC", "--n-boot", "200")
    assert code == 3 and out == ""
    assert "[D364]" in err and str(path) in err and "document_id='d0'" in err and "p = 0" in err
    with pytest.raises(DDPDataError, match=r"\[D364\]"):
        cluster_systems(df, "bootstrap", condition_value="DOC", options=ResampleOptions(n_boot=50))
    # a paired method does not resample documents: still allowed (wmt25 = one-sided scipy Wilcoxon)
    res = cluster_systems(df, "wmt25", condition_value="DOC", pair_annotator=False, min_pairs=0)
    x = doc.pivot(on="system", index=["document_id", "segment_id"], values="score")
    i, j = res.order[0], res.order[-1]
    ref = stats.wilcoxon(x[i].to_numpy() - x[j].to_numpy(), alternative="greater").pvalue
    assert res.p_values[0, -1] == pytest.approx(ref, abs=1e-12)


def test_compare_with_one_document_is_refused(tmp_path, capsys):
    wide = _wide(_long(n_docs=1))
    path = tmp_path / "cmp1.csv"
    wide.write_csv(path)
    code, out, err = _run(capsys, "compare", str(path), "--baseline", "s1", "--n-boot", "1000", "--n-ar", "1000")
    assert code == 3 and out == ""
    assert "[D364]" in err and str(path) in err and "document_id='d0'" in err
    # the old answer, by hand: with one unit |delta_b| - mean|delta| = 0 never exceeds |diff| and every AR
    # swap gives exactly |diff|, so both p-values were 1/(B+1) = 0.001 and Holm made 3 systems "better"
    p_floor = 1 / 1001
    assert multipletests([p_floor] * 3, method="holm")[1].max() < 0.05
    # --unit segment resamples the 3 segments: allowed
    res = compare_systems(wide, "s1", tests=CompareTests(unit="segment", n_ar=100),
                          options=ResampleOptions(n_boot=100, seed=1))
    assert res.n_units == wide["segment_id"].n_unique() == 3


# --------------------------------------------------------------------------- too few replicates


def test_cluster_bootstrap_thin_replicates_warn(tmp_path, capsys):
    df = _long()
    path = tmp_path / "base.csv"
    df.write_csv(path)
    alpha = 0.05
    # the smallest non-zero two-sided bootstrap p is 2/B; below 2/alpha = 40 replicates a "significant" pair is
    # only a pair that no replicate crossed
    for n_boot in (1, 39, 40):
        code, out, err = _run(capsys, "cluster", str(path), "--in", "DOC", "--n-boot", str(n_boot))
        assert code == 0
        d = json.loads(out)
        thin = n_boot * alpha / 2 < 1
        said = [w for w in d["warnings"] if "replicate(s)" in w]
        assert bool(said) == thin, n_boot
        assert (f"ddp stats cluster: warning: the bootstrap p-value of each system pair rests on {n_boot} "
                in err) == thin
        if thin:
            assert "--n-boot 40 or more" in said[0]
    # the p-values themselves are unchanged: n_boot = 1 -> p = 0 or 1 per pair, by the loop over the one draw
    res = cluster_systems(df, "bootstrap", condition_value="DOC", options=ResampleOptions(n_boot=1, seed=0))
    doc = df.filter(pl.col("condition") == "DOC")
    docs = sorted(doc["document_id"].unique().to_list())
    drawn = pl.concat([doc.filter(pl.col("document_id") == docs[k]) for k in _draws(0, 1, len(docs))[0]])
    m = dict(drawn.group_by("system").agg(pl.col("score").mean()).iter_rows())
    for a in range(4):
        for b in range(a + 1, 4):
            delta = m[res.order[a]] - m[res.order[b]]
            assert res.p_values[a, b] == (0.0 if delta != 0 else 1.0)
    assert any("rests on 1 replicate(s)" in w for w in res.warnings)


def test_tau_thin_replicates_warn(tmp_path, capsys):
    df = _long()
    path = tmp_path / "base.csv"
    df.write_csv(path)
    for n_boot, thin in ((20, True), (39, True), (40, False)):  # fewer than one replicate in a 2.5 % tail: B < 40
        code, out, err = _run(capsys, "tau", str(path), "--a", "DOC", "--b", "MIX", "--n-boot", str(n_boot))
        assert code == 0
        d = json.loads(out)
        assert (n_boot * 0.025 < 1) == thin
        assert any("fewer than one in a 2.5% tail" in w for w in d["warnings"]) == thin
        assert ("ddp stats tau: warning: the 95% CI of tau rests on" in err) == thin
        # the CI is still numpy's percentile of the replicates: check it against the loop's replicates
        docs = sorted(df["document_id"].unique().to_list())
        reps = []
        for row in _draws(0, n_boot, len(docs)):
            drawn = pl.concat([df.filter(pl.col("document_id") == docs[k]) for k in row])
            mm = drawn.group_by("condition", "system").agg(pl.col("score").mean()).sort("system")
            reps.append(stats.kendalltau(mm.filter(pl.col("condition") == "DOC")["score"],
                                         mm.filter(pl.col("condition") == "MIX")["score"]).statistic)
        reps = np.array(reps)
        reps = reps[np.isfinite(reps)]
        assert d["ci_low"] == pytest.approx(np.percentile(reps, 2.5), abs=1e-12)


def test_compare_replicates_too_few_for_alpha_warn(tmp_path, capsys):
    wide = _wide(_long())
    path = tmp_path / "cmp.csv"
    wide.write_csv(path)
    m = wide["system"].n_unique() - 1  # compared systems
    # the smallest Holm-adjusted p is m / (B + 1): below 0.05 from B = 60 on (3 / 61), not at B = 59 (3 / 60)
    for n_boot, thin in ((59, True), (60, False)):
        code, out, err = _run(capsys, "compare", str(path), "--baseline", "s1", "--n-boot", str(n_boot),
                              "--test", "bootstrap")
        assert code == 0
        d = json.loads(out)
        raw = [r["p_bootstrap"] for r in d["results"]["score"]["systems"] if not r["is_baseline"]]
        floor = multipletests([1 / (n_boot + 1)] * m, method="holm")[1].min()
        assert (floor >= 0.05) == thin
        assert multipletests(raw, method="holm")[1].min() >= floor - 1e-15
        said = [w for w in d["warnings"] if "no system can be significant" in w]
        assert bool(said) == thin
        assert ("ddp stats compare: warning: with --n-boot 59" in err) == thin
        if thin:
            assert all(r["verdict"] in ("n.s.", "baseline") for r in d["results"]["score"]["systems"])
            assert "--n-boot 60 or more" in said[0]


# --------------------------------------------------------------------------- seeds


def test_seed_range_is_the_same_for_tau_cluster_and_compare(tmp_path, capsys):
    df = _long()
    long_path, wide_path = tmp_path / "base.csv", tmp_path / "cmp.csv"
    df.write_csv(long_path)
    _wide(df).write_csv(wide_path)
    big, top = str(2**128), 2**128 - 1
    runs = {"tau": ("tau", str(long_path), "--a", "DOC", "--b", "MIX", "--n-boot", "50"),
            "cluster": ("cluster", str(long_path), "--in", "DOC", "--n-boot", "50"),
            "compare": ("compare", str(wide_path), "--baseline", "s1", "--n-boot", "50", "--n-ar", "50")}
    for name, argv in runs.items():
        code, out, err = _run(capsys, *argv, "--seed", big)
        assert code == 2 and out == "" and "[0, 2**128)" in err and ("[D390]" if name == "compare" else "[D311]") in err
        code, out, _ = _run(capsys, *argv, "--seed", str(top))
        assert code == 0, name
    # the largest seed is used as given: compare's bootstrap CI = order statistics of the loop's replicates
    d = json.loads(out)
    w = _wide(df)
    docs = sorted(w["document_id"].unique().to_list())
    reps = []
    for row in _draws(top, 50, len(docs)):
        drawn = pl.concat([w.filter(pl.col("document_id") == docs[k]) for k in row])
        reps.append(drawn.filter(pl.col("system") == "s1")["score"].mean())
    reps = np.sort(reps)
    k = int(50 * 0.05 / 2)
    base = d["results"]["score"]["systems"][0]
    assert base["ci_low"] == pytest.approx(reps[k], rel=1e-12)
    assert base["ci_high"] == pytest.approx(reps[50 - 1 - k], rel=1e-12)


# --------------------------------------------------------------------------- rank conflicts count replicates


def _conflict_table() -> pl.DataFrame:
    """An unbalanced table whose bootstrap ranks conflict with the mean order (found by a seeded search)."""
    rng = np.random.default_rng(10)
    rows = []
    for d in range(8):
        for s in range(3):
            for i, sy in enumerate(["A", "B", "C", "D", "E"]):
                if rng.random() < 0.35:
                    continue
                rows.append(dict(document_id=f"d{d}", segment_id=s, system=sy, score=float(i + rng.normal(0, 3))))
    return pl.DataFrame(rows)


def test_bootstrap_rank_conflicts_count_replicates(tmp_path, capsys):
    df = _conflict_table()
    path = tmp_path / "conflict.csv"
    df.write_csv(path)
    n_boot = 200
    code, out, _ = _run(capsys, "cluster", str(path), "--n-boot", str(n_boot))
    assert code == 0
    d = json.loads(out)
    assert d["rank_conflicts"], "the table must produce a rank conflict"
    # replicates in which both systems of a pair have rows, by a loop over the documented draws
    docs = sorted(df["document_id"].unique().to_list())
    has = {s: set(df.filter(pl.col("system") == s)["document_id"].to_list()) for s in d["order"]}
    draws = _draws(0, n_boot, len(docs))
    valid = np.zeros((len(d["order"]),) * 2, dtype=int)
    for row in draws:
        drawn = {docs[k] for k in row}
        present = [bool(has[s] & drawn) for s in d["order"]]
        valid += np.outer(present, present)
    np.fill_diagonal(valid, 0)
    assert d["n_pairs"] is None
    assert np.array_equal(np.array(d["n_replicates"]), valid)
    for c in d["rank_conflicts"]:
        assert "pairs)" not in c["reason"] and "replicates)" in c["reason"]
        for sys_a, sys_b in ((c["witness"], c["above"]), (c["witness"], c["below"]), (c["below"], c["witness"]),
                             (c["above"], c["witness"])):
            if sys_a is None:
                continue
            n = valid[d["order"].index(sys_a), d["order"].index(sys_b)]
            if f"(n = {n} replicates)" in c["reason"]:
                break
        else:
            pytest.fail(f"no replicate count of the witness in {c['reason']!r}")
    # the paired methods keep counting pairs, in n_pairs
    paired = cluster_systems(df, "wmt25", min_pairs=0).to_dict()
    assert paired["n_pairs"] is not None and "n_replicates" not in paired
