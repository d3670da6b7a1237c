"""``ddpcore.stats.meta`` against slow loops (tests/oracles/meta_oracle.py) and scipy, plus properties.

Every expected value is recomputed by the oracle on the same data: scipy 1.x ``pearsonr`` /
``kendalltau`` per bin or per segment, pair loops for acc_eq and its tie calibration, loops over the
bootstrap replicates (the documented index matrix ``ddpcore.stats.bootstrap.resample_indices``), over the
permutation trials (the documented keep bits of ``PCG64(seed).jumped(1)``) and over SPA's trials
(``PCG64(seed).jumped(2)``).
"""
from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.stats.bootstrap import resample_indices
from ddpcore.stats.meta import STATS, MetaTests, _keep_bits, meta_evaluate, parse_fail_on
from ddpcore.stats.options import ResampleOptions
from oracles import meta_oracle as O

EDGES = [0, 2, 5, math.inf]


def make_data(seed: int, n_docs: int = 5, segs: int = 3, n_sys: int = 3, metrics=("a", "b"), p_missing=0.1,
              levels: int = 4):
    """Random profile and scores with ties (human on a few levels) and some missing human scores."""
    rng = np.random.default_rng(seed)
    prof_rows, rows = [], []
    for d in range(n_docs):
        for s in range(segs):
            prof_rows.append({"document_id": f"doc{d}", "segment_id": s, "ddp": int(rng.integers(0, 8))})
            q = rng.normal(size=n_sys)
            for k in range(n_sys):
                h = float(np.round(q[k] * levels / 2))
                rows.append({"document_id": f"doc{d}", "segment_id": s, "system": f"sys{k}",
                             "human": None if rng.random() < p_missing else h,
                             **{m: float(np.round(q[k] + rng.normal(scale=0.5 + j), 1)) for j, m in enumerate(metrics)}})
    return pl.DataFrame(prof_rows), pl.DataFrame(rows)


def cells_of(prof, scores, metrics=("a", "b")):
    j = scores.join(prof, on=["document_id", "segment_id"]).filter(pl.col("human").is_not_null())
    return [(r["document_id"], (r["document_id"], r["segment_id"]), r["system"], r["human"], {m: r[m] for m in metrics},
             r["ddp"]) for r in j.iter_rows(named=True)]


def in_bin(cells, lo, hi):
    return [c[:5] for c in cells if lo <= c[5] < hi]


def evaluate(prof, scores, n_boot=60, n_perm=50, spa_perm=40, seed=3, strict_join=False, **kw):
    return meta_evaluate(prof, scores, human_col="human", bins=EDGES, strict_join=strict_join,
                         options=ResampleOptions(n_boot=n_boot, seed=seed, threads=kw.pop("threads", None)),
                         tests=MetaTests(n_perm=n_perm, spa_perm=spa_perm, **kw))


def entries(res):
    return [*res.bins, res.overall]


def close(a, b, tol=1e-9):
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return b is not None and not math.isnan(b) and abs(a - b) <= tol


@pytest.mark.parametrize("seed", [0, 1, 2, 7])
def test_point_figures_equal_oracle(seed):
    prof, scores = make_data(seed)
    res = evaluate(prof, scores, n_boot=0, n_perm=0, spa_perm=0)
    cells = cells_of(prof, scores)
    for e in entries(res):
        lo, hi = (e["low"], e["high"]) if e["label"] != "overall" else (0, math.inf)
        sub = in_bin(cells, lo, hi)
        for m in ("a", "b"):
            want = O.cell_stats(sub, m) if sub else {}
            got = e["metrics"][m]
            for stat in ("pearson.none", "tau_b.none", "acc_eq.none", "pearson.item", "tau_b.item", "acc_eq.item",
                         "pairwise_accuracy.sys"):
                assert close(got[stat]["value"], want.get(stat, math.nan)), (e["label"], m, stat, got[stat], want.get(stat))
                if got[stat]["value"] is None:
                    assert got[stat]["status"] == "undefined" and got[stat]["reason"]
            if sub and got["acc_eq.item"]["value"] is not None:
                assert got["acc_eq.item"]["epsilon"] == want["epsilon.item"]


def test_bootstrap_intervals_equal_oracle_replicates():
    prof, scores = make_data(4, n_docs=6)
    n_boot, seed = 40, 11
    res = evaluate(prof, scores, n_boot=n_boot, n_perm=0, spa_perm=0, seed=seed)
    cells = cells_of(prof, scores)
    docs = sorted({c[0] for c in cells} | set(scores["document_id"].to_list()))
    idx = resample_indices(n_boot, len(docs), seed)
    reps_all = {}
    for e in entries(res):
        lo, hi = (e["low"], e["high"]) if e["label"] != "overall" else (0, math.inf)
        sub = in_bin(cells, lo, hi)
        if len({c[0] for c in sub}) < 2:
            continue
        for m in ("a", "b"):
            got = e["metrics"][m]
            eps = got["acc_eq.item"].get("epsilon")
            eps_none = got["acc_eq.none"]["epsilon"] if got["acc_eq.none"]["status"] == "ok" else -1
            reps = [O.cell_stats(O.replicate(sub, [docs[i] for i in row]), m, eps_item=eps, eps_none=eps_none)
                    for row in idx]
            for stat in ("pearson.none", "tau_b.none", "acc_eq.none", "pearson.item", "tau_b.item", "acc_eq.item",
                         "pairwise_accuracy.sys"):
                v = np.array([r[stat] for r in reps], dtype=float)
                reps_all[(e["label"], m, stat)] = v
                f = got[stat]
                if f["status"] != "ok":
                    continue
                ok = ~np.isnan(v)
                lo_w, hi_w = np.percentile(v[ok], [2.5, 97.5])
                assert f["ci_status"] == "ok"
                assert f["ci_low"] == pytest.approx(lo_w, abs=1e-9) and f["ci_high"] == pytest.approx(hi_w, abs=1e-9), \
                    (e["label"], m, stat)
                assert f["n_boot_undefined"] == int((~ok).sum())
    # test (b): p_below = share of replicates where bin k is not below the first bin
    first = res.bins[0]["label"]
    for t in res.tests["bins_vs_first"]:
        if t["status"] != "ok" or t["stat"] == "spa.sys":  # spa.sys: tests/stats/test_meta_intervals.py
            continue
        d = reps_all[(t["bin"], t["metric"], t["stat"])] - reps_all[(first, t["metric"], t["stat"])]
        d = d[~np.isnan(d)]
        assert t["p_below"] == pytest.approx(float((d >= 0).mean()))


def test_permutation_test_equals_document_swap_loop():
    prof, scores = make_data(5, n_docs=6, metrics=("a", "b", "c"))
    n_perm, seed = 24, 2
    res = evaluate(prof, scores, n_boot=0, n_perm=n_perm, spa_perm=0, seed=seed)
    cells = cells_of(prof, scores, ("a", "b", "c"))
    docs = sorted(set(scores["document_id"].to_list()))
    keep = _keep_bits(np.random.PCG64(seed).jumped(1), n_perm, len(docs))
    checked = 0
    for t in res.tests["metric_pairs"]:
        if t["status"] != "ok":
            continue
        e = next(x for x in entries(res) if x["label"] == t["bin"])
        lo, hi = (e["low"], e["high"]) if e["label"] != "overall" else (0, math.inf)
        sub = in_bin(cells, lo, hi)
        if t["stat"] == "pearson.none":
            sub = O.zscore_metrics(sub, ("a", "b", "c"))
        a, b, stat = t["a"], t["b"], t["stat"]
        ea = e["metrics"][a]["acc_eq.item"].get("epsilon")
        eb = e["metrics"][b]["acc_eq.item"].get("epsilon")
        d = t["delta"]
        hits = 0
        for row in keep:
            sw = O.swap_metrics(sub, a, b, {docs[i] for i in np.flatnonzero(row)})
            if stat == "acc_eq.item":  # each metric keeps its own epsilon: the slots carry the metric's epsilon
                # in a swapped document slot A holds B's scores, so per-item accuracies come from B at B's epsilon
                va = _acc_slots(sub, a, b, ea, eb, {docs[i] for i in np.flatnonzero(row)})
                null = va[0] - va[1]
            else:
                null = O.cell_stats(sw, a, only=stat)[stat] - O.cell_stats(sw, b, only=stat)[stat]
            hits += np.sign(d) * null >= abs(d) - 1e-12
        assert t["p"] == hits / n_perm, t
        checked += 1
    assert checked >= 6
    # Holm across the metric pairs of one bin and statistic
    from ddpcore.stats.compare import adjust_pvalues

    group = [t for t in res.tests["metric_pairs"] if t["bin"] == "overall" and t["stat"] == "pearson.item"]
    assert [t["p_holm"] for t in group] == pytest.approx(list(adjust_pvalues([t["p"] for t in group])))


def _acc_slots(sub, a, b, ea, eb, keep_docs):
    """Mean per-item acc_eq of slots A and B under a document swap (the metric's own epsilon travels)."""
    from collections import defaultdict

    items = defaultdict(list)
    for c in sub:
        items[c[1]].append(c)
    va, vb = [], []
    for cs in items.values():
        if len(cs) < 2:
            continue
        h = [c[3] for c in cs]
        kept = cs[0][0] in keep_docs
        pa = O.acc23(h, [c[4][a] for c in cs], ea) if kept else O.acc23(h, [c[4][b] for c in cs], eb)
        pb = O.acc23(h, [c[4][b] for c in cs], eb) if kept else O.acc23(h, [c[4][a] for c in cs], ea)
        va.append(pa)
        vb.append(pb)
    return float(np.mean(va)), float(np.mean(vb))


def test_spa_equals_loop():
    prof, scores = make_data(6, n_docs=4, p_missing=0.0)
    spa_perm, seed = 30, 5
    res = evaluate(prof, scores, n_boot=0, n_perm=0, spa_perm=spa_perm, seed=seed)
    cells = cells_of(prof, scores)
    items = sorted({c[1] for c in cells})
    keep = _keep_bits(np.random.PCG64(seed).jumped(2), spa_perm, len(items))
    signs = np.where(keep, 1, -1).tolist()
    systems = sorted({c[2] for c in cells})
    look = {(c[1], c[2]): c for c in cells}
    h = [[look[(i, s)][3] for s in systems] for i in items]
    for m in ("a", "b"):
        mm = [[look[(i, s)][4][m] for s in systems] for i in items]
        assert res.overall["metrics"][m]["spa.sys"]["value"] == pytest.approx(O.spa(h, mm, signs), abs=1e-12)


def test_constant_metric_in_a_bin_is_undefined_with_reason():
    prof, scores = make_data(8)
    scores = scores.with_columns(pl.lit(0.5).alias("a"))
    res = evaluate(prof, scores, n_boot=20, n_perm=20)
    for e in entries(res):
        f = e["metrics"]["a"]
        for stat in ("pearson.none", "tau_b.none", "acc_eq.none", "pearson.item", "tau_b.item"):
            assert f[stat]["value"] is None and f[stat]["status"] == "undefined" and f[stat]["reason"], (stat, f[stat])
        assert f["pearson.none"]["reason"] == "the metric is constant in this bin" or e["n_cells"] < 2
    from ddpcore.stats.meta import dumps

    dumps(res)  # json.dumps(allow_nan=False): no NaN anywhere in the output


def test_missing_human_counted_never_zero():
    prof, scores = make_data(9, p_missing=0.3)
    res = evaluate(prof, scores, n_boot=0, n_perm=0, spa_perm=0)
    n_missing = int(scores["human"].is_null().sum())
    assert res.overall["n_human_missing"] == n_missing > 0
    assert sum(b["n_human_missing"] for b in res.bins) == n_missing
    zero = evaluate(prof, scores.with_columns(pl.col("human").fill_null(0.0)), n_boot=0, n_perm=0, spa_perm=0)
    assert zero.overall["metrics"]["a"]["pearson.none"]["value"] != res.overall["metrics"]["a"]["pearson.none"]["value"]
    assert any("no human score" in w for w in res.warnings)


def test_strict_join_and_counts():
    prof, scores = make_data(10)
    extra = scores.head(2).with_columns(pl.lit("ghost").alias("document_id"))
    both = pl.concat([scores, extra])
    res = evaluate(prof, both, n_boot=0, n_perm=0, spa_perm=0)
    assert res.signature["join"]["unmatched_score_rows"] == 2
    assert any("no profile segment" in w for w in res.warnings)
    with pytest.raises(DDPDataError, match="D803"):
        evaluate(prof, both, n_boot=0, n_perm=0, spa_perm=0, strict_join=True)


def test_bad_input_codes():
    prof, scores = make_data(11)
    with pytest.raises(DDPDataError, match="D802"):
        evaluate(prof, pl.concat([scores, scores.head(1)]), n_boot=0, n_perm=0)
    with pytest.raises(DDPUsageError, match="D800"):
        meta_evaluate(prof, scores, human_col="mqm")
    with pytest.raises(DDPUsageError, match="D801"):
        meta_evaluate(prof, scores, human_col="human", score_col=["nope"])
    with pytest.raises(DDPDataError, match="D809"):
        evaluate(prof, scores.filter(pl.col("system") == "sys0"), n_boot=0, n_perm=0)
    with pytest.raises(DDPUsageError, match="D806"):
        MetaTests(alpha=1.5)
    with pytest.raises(DDPUsageError, match="D810"):
        meta_evaluate(prof.to_pandas(), scores, human_col="human")


def test_long_form_equals_wide():
    prof, scores = make_data(12)
    long = scores.unpivot(index=["document_id", "segment_id", "system"], on=["human", "a", "b"],
                          variable_name="metric", value_name="score")
    from ddpcore.stats.meta import MetaColumns

    a = evaluate(prof, scores, n_boot=10, n_perm=10).to_dict()
    b = meta_evaluate(prof, long, human_col="human", columns=MetaColumns(metric_name="metric"), bins=EDGES,
                      options=ResampleOptions(n_boot=10, seed=3), tests=MetaTests(n_perm=10, spa_perm=40)).to_dict()
    for k in ("bins", "overall", "tests"):
        assert a[k] == b[k]


def test_fail_on_grammar_and_gate():
    with pytest.raises(DDPUsageError, match="D805"):
        parse_fail_on("a:acc_eq.item", ["a"])
    with pytest.raises(DDPUsageError, match="D805"):
        parse_fail_on("a:spa.score:15", ["a"])
    assert parse_fail_on("a:spa.sys:15", ["a"])[1] == "spa.sys"  # every statistic has an interval now
    assert parse_fail_on("a:acc_eq.none:0", ["a"])[1] == "acc_eq.none"
    with pytest.raises(DDPUsageError, match="D805"):
        parse_fail_on("zz:acc_eq.item:15", ["a"])
    assert parse_fail_on("*:pearson.item:5", ["a", "b"])[:3] == (["a", "b"], "pearson.item", 5.0)
    # a planted drop: metric a is noise at DDP >= 5, faithful below
    rng = np.random.default_rng(0)
    prof_rows, rows = [], []
    for d in range(30):
        ddp = 0 if d < 15 else 6
        for s in range(4):
            prof_rows.append({"document_id": f"d{d:02d}", "segment_id": s, "ddp": ddp})
            for k in range(4):
                h = float(rng.normal())
                rows.append({"document_id": f"d{d:02d}", "segment_id": s, "system": f"s{k}", "human": h,
                             "a": h if ddp == 0 else float(rng.normal()), "b": h + float(rng.normal(scale=0.1))})
    prof, scores = pl.DataFrame(prof_rows), pl.DataFrame(rows)
    res = meta_evaluate(prof, scores, human_col="human", bins=[0, 5, math.inf],
                        options=ResampleOptions(n_boot=200, seed=1), tests=MetaTests(n_perm=0, spa_perm=0))
    passed, fails, _ = res.gate(["a:pearson.item:5"])
    assert not passed and fails[0]["metric"] == "a"
    passed, fails, _ = res.gate(["b:pearson.item:5"])
    assert passed and not fails


def test_same_seed_same_result_any_threads():
    prof, scores = make_data(13)
    a = evaluate(prof, scores, threads=1).to_dict()
    b = evaluate(prof, scores, threads=2).to_dict()
    c = evaluate(prof, scores, seed=4).to_dict()
    assert a == b
    assert a["bins"] != c["bins"] or a["tests"] != c["tests"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), scale=st.sampled_from([2.0, 0.5, 4.0]))
def test_monotone_and_affine_invariance(seed, scale):
    """tau-b (none, item) depends on the metric's order only (exp is monotone); acc_eq on differences up
    to scale (x2, /2, x4 are exact in binary floats: epsilon scales with them); Pearson and the system
    pairwise accuracy (an order of system means) on positive affine transforms."""
    prof, scores = make_data(seed, n_docs=3)
    base = evaluate(prof, scores, n_boot=0, n_perm=0, spa_perm=0).to_dict()
    mono = evaluate(prof, scores.with_columns(pl.col("a").exp()), n_boot=0, n_perm=0, spa_perm=0).to_dict()
    aff = evaluate(prof, scores.with_columns(pl.col("a") * scale), n_boot=0, n_perm=0, spa_perm=0).to_dict()
    for e0, e1, e2 in zip([*base["bins"], base["overall"]], [*mono["bins"], mono["overall"]],
                          [*aff["bins"], aff["overall"]]):
        f0, f1, f2 = (e["metrics"]["a"] for e in (e0, e1, e2))
        for stat in ("tau_b.none", "tau_b.item"):
            assert close(f0[stat]["value"], f1[stat]["value"], 1e-12), stat
        assert close(f0["pairwise_accuracy.sys"]["value"], f2["pairwise_accuracy.sys"]["value"], 1e-12)
        for stat in ("acc_eq.none", "acc_eq.item"):
            assert close(f0[stat]["value"], f2[stat]["value"], 1e-12), stat
            if f0[stat]["value"] is not None:
                assert f2[stat]["epsilon"] == f0[stat]["epsilon"] * scale
        for stat in ("pearson.none", "pearson.item"):
            assert close(f0[stat]["value"], f2[stat]["value"], 1e-9), stat


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000))
def test_metric_pair_symmetry(seed):
    """Listing the metrics in the other order negates delta and keeps p (the swap null is symmetric)."""
    prof, scores = make_data(seed, n_docs=4)
    ab = evaluate(prof, scores, n_boot=0, n_perm=40, spa_perm=0)
    ba = meta_evaluate(prof, scores, human_col="human", score_col=["b", "a"], bins=EDGES,
                       options=ResampleOptions(n_boot=0, seed=3), tests=MetaTests(n_perm=40, spa_perm=0))
    for x, y in zip(ab.tests["metric_pairs"], ba.tests["metric_pairs"]):
        assert (x["a"], x["b"]) == (y["b"], y["a"])
        assert close(x["delta"], None if y["delta"] is None else -y["delta"], 1e-12)
        assert x["p"] == y["p"]


def test_outputs_render_every_statistic():
    from ddpcore.stats.meta import dumps, to_latex, to_markdown, to_tsv

    prof, scores = make_data(14)
    res = evaluate(prof, scores)
    import json

    d = json.loads(dumps(res))
    assert {"bins", "overall", "tests", "signature", "warnings"} <= set(d)
    assert len(d["bins"]) == len(EDGES) - 1 and set(d["overall"]["metrics"]) == {"a", "b"}
    assert set(d["overall"]["metrics"]["a"]) == set(STATS)
    tsv = to_tsv(res).splitlines()
    assert len(tsv) == 2 + (len(EDGES) - 1 + 1) * 2 * len(STATS)
    assert to_markdown(res).count("| metric |") == len(STATS)
    assert to_latex(res).count("\\begin{tabular}") == len(STATS)


# ---- the radix argsort of the tie-calibration entries (oracle: numpy's stable argsort)

_floats = st.floats(allow_nan=False, allow_infinity=True, width=64)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_floats, st.sampled_from([0.0, -0.0, 1.0, 2.5, -3.0, 5e-324, -5e-324])), max_size=300))
def test_argsort_f64_equals_numpy_stable_argsort(values):
    from ddpcore._native import load

    x = np.asarray(values, dtype=np.float64)
    got = np.empty(x.size, dtype=np.int64)
    load("stats_meta").argsort_f64(x, got)
    np.testing.assert_array_equal(got, np.argsort(x, kind="stable"))


def test_argsort_f64_on_many_ties_and_every_byte():
    """Millions of entries from few values (many ties: stability over every radix pass) and spread values
    (every digit of the key varies), against numpy's stable argsort."""
    from ddpcore._native import load

    rng = np.random.default_rng(5)
    for x in (np.round(np.abs(rng.normal(size=200_000)) * 4) / 4, rng.normal(size=200_000) * 10.0 ** rng.integers(
            -300, 300, 200_000), np.abs(rng.normal(size=200_000))):
        got = np.empty(x.size, dtype=np.int64)
        load("stats_meta").argsort_f64(x, got)
        np.testing.assert_array_equal(got, np.argsort(x, kind="stable"))


_nonneg = st.floats(min_value=0.0, allow_nan=False, allow_infinity=True, width=64)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.one_of(_nonneg, st.sampled_from([0.0, 1.0, 2.5, 5e-324])),
                          st.integers(0, 2**62), st.sampled_from([1.0, -1.0])), max_size=300))
def test_sort_entries_equals_numpy_stable_gathers(rows):
    """``sort_entries``: the three entry arrays in numpy's stable argsort order of ``|dm|``, bit for bit (the
    item and sign carried through the radix passes instead of gathered)."""
    from ddpcore._native import load

    adm = np.asarray([r[0] for r in rows], dtype=np.float64)
    item = np.asarray([r[1] for r in rows], dtype=np.int64)
    sign = np.asarray([r[2] for r in rows], dtype=np.float64)
    out = (np.empty_like(item), np.empty_like(adm), np.empty_like(sign))
    load("stats_meta").sort_entries(item, adm, sign, *out)
    o = np.argsort(adm, kind="stable")
    for got, want in zip(out, (item[o], adm[o], sign[o])):
        np.testing.assert_array_equal(got, want)
        assert got.tobytes() == want.tobytes()


def test_sort_entries_on_many_ties_and_every_byte():
    from ddpcore._native import load

    rng = np.random.default_rng(6)
    n = 200_000
    for adm in (np.round(np.abs(rng.normal(size=n)) * 4) / 4, np.abs(rng.normal(size=n)) * 10.0 ** rng.integers(
            -300, 300, n)):
        item = rng.integers(0, 2**40, n)
        sign = np.where(rng.random(n) < 0.5, 1.0, -1.0)
        out = (np.empty_like(item), np.empty_like(adm), np.empty_like(sign))
        load("stats_meta").sort_entries(item, adm, sign, *out)
        o = np.argsort(adm, kind="stable")
        for got, want in zip(out, (item[o], adm[o], sign[o])):
            np.testing.assert_array_equal(got, want)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(1, 4), st.sampled_from([0.5, 1.0, 0.0]))
def test_calibrate_bins_equals_calibrate_ties_bin_by_bin(seed, n_bins, level):
    """The one-pass kernel of every bin's acc_eq.item threshold against ``calibrate_ties`` (presorted) and a
    ``bincount`` of the flips on each bin's own entries (the per-bin computation it replaced): the same
    epsilon and the same flips, exactly. Scores on a few levels (``level`` > 0: many equal |dm|, runs that
    cross bins) or continuous."""
    from ddpcore._native import load
    from ddpcore.stats.meta import calibrate_ties, item_statistics

    rng = np.random.default_rng(seed)
    n_items, n_sys = int(rng.integers(1, 40)), int(rng.integers(2, 7))
    h = np.round(rng.normal(size=(n_items, n_sys)) * 2)
    m = h + rng.normal(size=h.shape)
    if level:
        m = np.round(m / level) * level
    valid = rng.random(h.shape) > 0.2
    st_ = item_statistics(h, m, valid)
    e_item, e_adm, e_sign = st_["entries"]
    order = np.argsort(e_adm, kind="stable")
    e_item, e_adm, e_sign = e_item[order], e_adm[order], e_sign[order]
    code = rng.integers(-1, n_bins, n_items)
    P = st_["pairs"]
    w = np.zeros(n_items)
    for b in range(n_bins):
        inb = (code == b) & (P > 0)
        if inb.any():
            w[inb] = 1.0 / np.maximum(P[inb], 1) / inb.sum()
    cc = st_["con0"] + st_["tie0"]
    base = np.array([float((cc * np.where(code == b, w, 0.0)).sum()) for b in range(n_bins)])
    eps, flip = np.full(n_bins, -1.0), np.full(n_items, -1.0)
    load("stats_meta").calibrate_bins(e_item, e_adm, e_sign, code, w, base, eps, flip)
    want_flip = np.zeros(n_items)
    for b in range(n_bins):
        inside = code[e_item] == b
        ei, ed, es = e_item[inside], e_adm[inside], e_sign[inside]
        _, want = calibrate_ties(ed, es * w[ei], base[b], presorted=True)
        assert eps[b] == want
        upto = int(np.searchsorted(ed, want, side="right"))
        want_flip += np.bincount(ei[:upto], weights=es[:upto], minlength=n_items)
    np.testing.assert_array_equal(flip, want_flip)
