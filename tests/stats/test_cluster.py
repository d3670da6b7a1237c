"""Tests of ddpcore.stats.clustering: Wilcoxon kernel vs scipy, each method vs a slow loop oracle,
hypothesis properties (shift invariance, row-order invariance, seed determinism), bad input."""
from __future__ import annotations

import json
import math
import statistics
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import scipy.stats
from cluster_helpers import tools_py_clusters
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.io.esa import read_esa_wmt23
from ddpcore.stats import ClusterResult, cluster_systems, wilcoxon_signed_rank
from ddpcore.stats import ResampleOptions

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "stats-real"


# --------------------------------------------------------------------------- helpers / oracles


def _scipy_wilcoxon(d: list[float], alternative: str) -> float:
    """The call the WMT scripts make (scipy defaults); p = 1 when no difference is non-zero."""
    if not any(x != 0 for x in d):
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(scipy.stats.wilcoxon(d, alternative=alternative).pvalue)


def _observations(rows: list[dict], with_annotator: bool) -> dict[tuple, dict[str, float]]:
    """pairing key -> {system: mean score of the system's rows under that key}, keys sorted."""
    acc: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        key = (r["document_id"], r["segment_id"]) + ((r["annotator"],) if with_annotator else ())
        acc[key][r["system"]].append(r["score"])
    return {k: {s: sum(v) / len(v) for s, v in acc[k].items()} for k in sorted(acc)}


def _means(rows: list[dict]) -> dict[str, float]:
    by: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        by[r["system"]].append(r["score"])
    return {s: sum(v) / len(v) for s, v in by.items()}


def _order(means: dict[str, float]) -> list[str]:
    return sorted(means, key=lambda s: (-means[s], s))


def _walk_ranges(order: list[str], better) -> list[tuple[int, int]]:
    """WMT count-rule rank ranges (issue 19), as a plain loop: best = 1 + systems above that are
    significantly better, worst = S - systems below that are significantly worse. (The name is
    historical: the WMT25 script's walk gave the same ranges on these well-separated tables.)"""
    out = []
    for i, a in enumerate(order):
        lo = 1 + sum(1 for b in order[:i] if better(b, a))
        hi = len(order) - sum(1 for b in order[i + 1:] if better(a, b))
        out.append((lo, hi))
    return out


def _clusters_from_ranges(order: list[str], ranges: list[tuple[int, int]]) -> list[list[str]]:
    clusters, cur = [], [order[0]]
    for c in range(1, len(order)):
        if all(h <= c for _, h in ranges[:c]) and all(lo > c for lo, _ in ranges[c:]):
            clusters.append(cur)
            cur = []
        cur.append(order[c])
    clusters.append(cur)
    return clusters


def oracle_wmt25(rows: list[dict], alpha: float, with_annotator: bool):
    obs = _observations(rows, with_annotator)
    means = _means(rows)
    order = _order(means)

    def better(a, b):
        d = [v[a] - v[b] for v in obs.values() if a in v and b in v]
        return bool(d) and _scipy_wilcoxon(d, "greater") < alpha

    ranges = _walk_ranges(order, better)
    return order, ranges, _clusters_from_ranges(order, ranges)


def oracle_wmt24(rows: list[dict], alpha: float, by_domain: bool):
    obs = _observations(rows, False)
    dom = {}
    for r in rows:
        dom.setdefault((r["document_id"], r["segment_id"]), r.get("domain"))
    if by_domain:
        per: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for r in rows:
            per[r["system"]][r["domain"]].append(r["score"])
        means = {s: statistics.fmean([sum(v) / len(v) for v in d.values()]) for s, d in per.items()}
    else:
        means = _means(rows)
    order = _order(means)

    def pval(a, b):
        keys = [k for k, v in obs.items() if a in v and b in v]
        if not keys:
            return 1.0
        if not by_domain:
            return _scipy_wilcoxon([obs[k][a] - obs[k][b] for k in keys], "two-sided")
        zs = []
        for g in sorted({dom[k] for k in keys}):
            p = _scipy_wilcoxon([obs[k][a] - obs[k][b] for k in keys if dom[k] == g], "two-sided")
            zs.append(scipy.stats.norm.ppf(1 - p))
        return float(1 - scipy.stats.norm.cdf(sum(zs) / math.sqrt(len(zs))))

    p = {(a, b): pval(a, b) for a in order for b in order if a != b}
    ranges = []
    for a in order:
        wins = sum(1 for b in order if b != a and p[(a, b)] < alpha and means[a] > means[b])
        losses = sum(1 for b in order if b != a and p[(a, b)] < alpha and not means[a] > means[b])
        ranges.append((losses + 1, len(order) - wins))
    # tools.py get_clusters, as a loop
    clusters = tools_py_clusters(order, p, alpha)
    return order, ranges, clusters, p


def oracle_permutation(rows: list[dict], alpha: float, n_boot: int, seed: int, with_annotator: bool):
    """Sign flips drawn as documented (64-row int8 blocks from default_rng(seed)), then loops."""
    obs = _observations(rows, with_annotator)
    keys = list(obs)
    rng = np.random.default_rng(seed)
    signs = []
    while len(signs) < n_boot:
        blk = rng.integers(0, 2, size=(64, len(keys)), dtype=np.int8)[: n_boot - len(signs)]
        signs.extend([[2 * int(b) - 1 for b in row] for row in blk])
    means = _means(rows)
    order = _order(means)

    def p_better(a, b):  # p-value of "a better than b"
        ks = [i for i, k in enumerate(keys) if a in obs[k] and b in obs[k]]
        if not ks:
            return 1.0
        d = {i: obs[keys[i]][a] - obs[keys[i]][b] for i in ks}
        observed = sum(d.values())
        return sum(1 for s in signs if sum(s[i] * d[i] for i in ks) >= observed) / n_boot

    p = {(a, b): p_better(a, b) for a in order for b in order if a != b}
    ranks, current, start = [], 1, 0
    for k in range(len(order)):
        if any(p[(order[m], order[k])] <= alpha for m in range(start, k)):
            current += 1
            start = k
        ranks.append(current)
    clusters = [[s for s, r in zip(order, ranks) if r == c] for c in sorted(set(ranks))]
    return order, clusters, p


def oracle_bootstrap(rows: list[dict], alpha: float, indices: np.ndarray, unit: str):
    units = sorted({(r["document_id"],) if unit == "document" else (r["document_id"], r["segment_id"]) for r in rows})
    pos = {u: i for i, u in enumerate(units)}
    systems = sorted({r["system"] for r in rows})
    tot = defaultdict(float)
    cnt = defaultdict(int)
    for r in rows:
        u = pos[(r["document_id"],) if unit == "document" else (r["document_id"], r["segment_id"])]
        tot[(u, r["system"])] += r["score"]
        cnt[(u, r["system"])] += 1
    reps = []
    for draw in indices:
        m = {}
        for s in systems:
            t = sum(tot[(int(u), s)] for u in draw)
            c = sum(cnt[(int(u), s)] for u in draw)
            m[s] = t / c if c else float("nan")
        reps.append(m)
    means = _means(rows)
    order = _order(means)

    def pval(a, b):
        deltas = [m[a] - m[b] for m in reps if not (math.isnan(m[a]) or math.isnan(m[b]))]
        if not deltas:
            return 1.0
        le = sum(1 for x in deltas if x <= 0)
        ge = sum(1 for x in deltas if x >= 0)
        return min(1.0, 2 * min(le, ge) / len(deltas))

    p = {(a, b): pval(a, b) for a in order for b in order if a != b}
    ranges = _walk_ranges(order, lambda a, b: p[(a, b)] < alpha)
    return order, ranges, _clusters_from_ranges(order, ranges), p


def synthetic_rows(seed: int, n_sys: int = 5, n_docs: int = 6, segs: int = 4, n_ann: int = 2,
                   domains: tuple[str, ...] = ("news", "social"), integer: bool = True) -> list[dict]:
    rng = np.random.default_rng(seed)
    effects = np.linspace(0, 12, n_sys)
    rows = []
    for d in range(n_docs):
        for s in range(segs):
            base = rng.normal(70, 8)
            ann = f"a{rng.integers(n_ann)}"
            for k in range(n_sys):
                score = base + effects[k] + rng.normal(0, 9)
                score = float(np.clip(np.round(score), 0, 100)) if integer else float(score)
                rows.append({"document_id": f"doc{d}", "segment_id": s, "system": f"sys{k}",
                             "annotator": ann, "domain": domains[d % len(domains)], "score": score})
    return rows


def _frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows)


# --------------------------------------------------------------------------- Wilcoxon kernel


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_wilcoxon_matches_scipy_on_random_samples(alternative):
    # reference: scipy 1.17.1 scipy.stats.wilcoxon(d, alternative=alternative) with its defaults
    # (exact for n <= 50 without ties/zeros, exact sign-flip permutation for n <= 13 with ties,
    # normal approximation otherwise)
    rng = np.random.default_rng(7)
    rows = []
    for trial in range(150):
        n = int(rng.integers(2, 90))
        kind = trial % 3
        if kind == 0:
            d = rng.normal(0.3, 1, n)
        elif kind == 1:
            d = rng.integers(-3, 4, n).astype(float)
        else:
            d = np.round(rng.normal(0.5, 2, n), 1)
        rows.append(d)
    width = max(len(d) for d in rows)
    batch = np.full((len(rows), width), np.nan)
    for i, d in enumerate(rows):
        batch[i, : len(d)] = d
    _r, p = wilcoxon_signed_rank(batch, alternative)
    for i, d in enumerate(rows):
        assert p[i] == pytest.approx(_scipy_wilcoxon(list(d), alternative), abs=1e-12), (i, d)


def test_wilcoxon_reference_values():
    d_exact = [1.5, -0.5, 2.25, 3.0, -1.0, 4.5, 0.75, 2.0]
    # scipy 1.17.1: scipy.stats.wilcoxon(d_exact, alternative="greater") -> statistic 32.0, pvalue 0.02734375
    r_plus, p = wilcoxon_signed_rank(d_exact, "greater")
    assert (r_plus, p) == (32.0, pytest.approx(0.02734375, abs=1e-15))
    # scipy 1.17.1: scipy.stats.wilcoxon(d_exact).pvalue == 0.0546875 (two-sided exact)
    assert wilcoxon_signed_rank(d_exact)[1] == pytest.approx(0.0546875, abs=1e-15)
    d_ties = [1, 1, -1, 2, 2, 0, 3]
    # scipy 1.17.1: scipy.stats.wilcoxon(d_ties).pvalue == 0.125 and
    # scipy.stats.wilcoxon(d_ties, alternative="greater") -> statistic 19.0, pvalue 0.0625
    # (n <= 13 with ties/zeros: exact permutation over the 2**7 sign flips)
    assert wilcoxon_signed_rank(d_ties)[1] == pytest.approx(0.125, abs=1e-15)
    assert wilcoxon_signed_rank(d_ties, "greater") == (19.0, pytest.approx(0.0625, abs=1e-15))


def test_wilcoxon_all_zero_gives_one_and_rejects_inf():
    assert wilcoxon_signed_rank([0.0, 0.0, 0.0])[1] == 1.0
    assert wilcoxon_signed_rank([np.nan, np.nan])[1] == 1.0
    with pytest.raises(DDPDataError):
        wilcoxon_signed_rank([1.0, np.inf])
    with pytest.raises(DDPUsageError):
        wilcoxon_signed_rank([1.0, 2.0], "bigger")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- methods vs oracles


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("with_annotator", [True, False])
def test_wmt25_matches_loop_oracle(seed, with_annotator):
    rows = synthetic_rows(seed, n_sys=6, n_docs=8, segs=5)
    res = cluster_systems(_frame(rows), "wmt25", pair_annotator=with_annotator)
    order, ranges, clusters = oracle_wmt25(rows, 0.05, with_annotator)
    assert list(res.order) == order
    assert [res.rank_ranges[s] for s in order] == ranges
    assert [list(c) for c in res.clusters] == clusters


@pytest.mark.parametrize("seed", [6, 11])
@pytest.mark.parametrize("by_domain", [False, True])
def test_wmt24_matches_loop_oracle(seed, by_domain):
    rows = synthetic_rows(seed, n_sys=6, n_docs=9, segs=6, domains=("news", "social", "speech"))
    res = cluster_systems(_frame(rows), "wmt24", by_domain=by_domain)
    order, ranges, clusters, p = oracle_wmt24(rows, 0.05, by_domain)
    assert list(res.order) == order
    for i, a in enumerate(order):
        for j, b in enumerate(order):
            if a != b:
                assert res.p_values[i, j] == pytest.approx(p[(a, b)], abs=1e-12)
    assert [res.rank_ranges[s] for s in order] == ranges
    assert [list(c) for c in res.clusters] == clusters


@pytest.mark.parametrize("seed", [5, 6])
def test_permutation_matches_loop_oracle(seed):
    rows = synthetic_rows(seed, n_sys=5, n_docs=5, segs=4)
    res = cluster_systems(_frame(rows), "permutation", pair_annotator=True, options=ResampleOptions(n_boot=150, seed=11))
    order, clusters, p = oracle_permutation(rows, 0.05, 150, 11, True)
    assert list(res.order) == order
    for i, a in enumerate(order):
        for j, b in enumerate(order):
            if a != b:
                assert res.p_values[i, j] == p[(a, b)]
    assert [list(c) for c in res.clusters] == clusters


def test_permutation_p_converges_to_exact_sign_flip_p():
    # 10 paired differences: the exact one-sided sign-flip p enumerates all 2**10 patterns
    d = np.array([3, -1, 4, 1, -5, 9, 2, 6, -5, 3], dtype=float)
    flips = ((np.arange(1024)[:, None] >> np.arange(10)) & 1) * 2 - 1
    exact = float(np.mean(flips @ d >= d.sum()))
    rows = []
    for k, v in enumerate(d):
        rows.append({"document_id": "d", "segment_id": k, "system": "A", "score": 50.0 + v})
        rows.append({"document_id": "d", "segment_id": k, "system": "B", "score": 50.0})
    res = cluster_systems(_frame(rows), "permutation", options=ResampleOptions(n_boot=20000, seed=3))
    se = math.sqrt(exact * (1 - exact) / 20000)
    assert res.order == ("A", "B")
    assert abs(res.p_values[0, 1] - exact) < 5 * se


@pytest.mark.parametrize("unit", ["document", "segment"])
def test_bootstrap_matches_loop_oracle_with_given_indices(unit):
    rows = synthetic_rows(8, n_sys=5, n_docs=14, segs=3)
    n_units = 14 if unit == "document" else 42
    idx = np.random.default_rng(99).integers(0, n_units, size=(120, n_units))
    res = cluster_systems(_frame(rows), "bootstrap", unit=unit, options=ResampleOptions(indices=idx))
    order, ranges, clusters, p = oracle_bootstrap(rows, 0.05, idx, unit)
    assert list(res.order) == order
    for i, a in enumerate(order):
        for j, b in enumerate(order):
            if a != b:
                assert res.p_values[i, j] == pytest.approx(p[(a, b)], abs=1e-15)
    assert [res.rank_ranges[s] for s in order] == ranges
    assert [list(c) for c in res.clusters] == clusters
    assert res.signature["n_boot"] == 120


def test_bootstrap_uses_the_shared_resamples_of_bootstrap_system_means():
    """With a seed, the p-values are those of the documented document-resample matrix
    ``resample_indices(n_boot, n_documents, seed)`` (the one bootstrap_system_means draws), recomputed
    by the loop oracle (stats_oracles.oracle_bootstrap: per replicate, per system mean over the picked
    documents, then the two-sided share of replicate differences on the wrong side)."""
    from ddpcore.stats.bootstrap import bootstrap_system_means, resample_indices

    rows = synthetic_rows(9, n_sys=4, n_docs=10, segs=3)
    res = cluster_systems(_frame(rows), "bootstrap", options=ResampleOptions(n_boot=400, seed=17))
    order, ranges, clusters, p = oracle_bootstrap(rows, 0.05, resample_indices(400, 10, 17), "document")
    assert list(res.order) == order and [list(c) for c in res.clusters] == clusters
    for i, a in enumerate(res.order):
        for j, b in enumerate(res.order):
            if i < j:
                assert res.p_values[i, j] == pytest.approx(p[(a, b)], abs=1e-15) and res.p_values[j, i] == res.p_values[i, j]
    # ... and bootstrap_system_means draws the same matrix: its replicate means equal the oracle's loop
    reps = bootstrap_system_means(_frame(rows), options=ResampleOptions(n_boot=400, seed=17))
    idx = resample_indices(400, 10, 17)
    docs = sorted({r["document_id"] for r in rows})
    for k, system in enumerate(reps.systems):
        for r in (0, 199, 399):
            vals = [row["score"] for d in idx[r] for row in rows
                    if row["system"] == system and row["document_id"] == docs[d]]
            assert reps.replicates[r, k] == pytest.approx(sum(vals) / len(vals), rel=1e-12)


def test_bootstrap_separates_clearly_different_systems():
    rows = synthetic_rows(1, n_sys=3, n_docs=30, segs=4)
    for r in rows:
        r["score"] += {"sys0": 0, "sys1": 0, "sys2": 40}[r["system"]]
    res = cluster_systems(_frame(rows), "bootstrap", options=ResampleOptions(n_boot=500, seed=1))
    assert res.order[0] == "sys2"
    assert res.clusters[0] == ("sys2",)
    assert res.rank_ranges["sys2"] == (1, 1)


# --------------------------------------------------------------------------- properties


table_params = st.fixed_dictionaries({
    "seed": st.integers(0, 10_000),
    "n_sys": st.integers(2, 5),
    "n_docs": st.integers(2, 5),
    "segs": st.integers(1, 4),
})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=table_params, shift=st.integers(-60, 60), method=st.sampled_from(["bootstrap", "wmt25", "wmt24", "permutation"]))
def test_constant_shift_leaves_clusters_unchanged(params, shift, method):
    rows = synthetic_rows(**params)
    shifted = [{**r, "score": r["score"] + shift} for r in rows]
    a = cluster_systems(_frame(rows), method, options=ResampleOptions(n_boot=200, seed=5))
    b = cluster_systems(_frame(shifted), method, options=ResampleOptions(n_boot=200, seed=5))
    assert a.order == b.order
    assert a.clusters == b.clusters
    assert a.rank_ranges == b.rank_ranges
    np.testing.assert_array_equal(a.p_values, b.p_values)


@settings(max_examples=15, deadline=None)
@given(params=table_params, method=st.sampled_from(["bootstrap", "wmt25", "wmt24", "permutation"]),
       perm_seed=st.integers(0, 1000))
def test_row_order_does_not_matter(params, method, perm_seed):
    rows = synthetic_rows(**params)
    shuffled = [rows[i] for i in np.random.default_rng(perm_seed).permutation(len(rows))]
    a = cluster_systems(_frame(rows), method, options=ResampleOptions(n_boot=100, seed=2))
    b = cluster_systems(_frame(shuffled), method, options=ResampleOptions(n_boot=100, seed=2))
    assert a.order == b.order and a.clusters == b.clusters
    np.testing.assert_array_equal(a.p_values, b.p_values)


@pytest.mark.parametrize("method", ["bootstrap", "permutation"])
def test_same_seed_same_result_different_seed_different_p(method):
    rows = synthetic_rows(12, n_sys=4, n_docs=6, segs=3)
    a = cluster_systems(_frame(rows), method, options=ResampleOptions(n_boot=300, seed=123))
    b = cluster_systems(_frame(rows), method, options=ResampleOptions(n_boot=300, seed=123))
    c = cluster_systems(_frame(rows), method, options=ResampleOptions(n_boot=300, seed=124))
    np.testing.assert_array_equal(a.p_values, b.p_values)
    assert a.to_dict() == b.to_dict()
    assert not np.array_equal(a.p_values, c.p_values)
    assert a.signature["seed"] == 123 and a.signature["n_boot"] == 300


@settings(max_examples=20, deadline=None)
@given(params=table_params, method=st.sampled_from(["bootstrap", "wmt25", "wmt24", "permutation"]))
def test_result_invariants(params, method):
    rows = synthetic_rows(**params)
    res = cluster_systems(_frame(rows), method, options=ResampleOptions(n_boot=100))
    s = len(res.order)
    assert sorted(x for c in res.clusters for x in c) == sorted(res.order)
    assert [x for c in res.clusters for x in c] == list(res.order)  # contiguous in mean order
    means = [res.means[x] for x in res.order]
    assert means == sorted(means, reverse=True)
    off = ~np.eye(s, dtype=bool)
    assert np.all((res.p_values[off] >= 0) & (res.p_values[off] <= 1))
    for k, name in enumerate(res.order):
        best, worst = res.rank_ranges[name]
        assert 1 <= best <= k + 1 <= worst <= s
    json.dumps(res.to_dict())


# --------------------------------------------------------------------------- pairing, real fixture


def test_systems_without_shared_observations_get_p_one():
    rows = [
        {"document_id": "d1", "segment_id": 1, "system": "A", "score": 90.0},
        {"document_id": "d1", "segment_id": 2, "system": "A", "score": 80.0},
        {"document_id": "d2", "segment_id": 1, "system": "B", "score": 10.0},
        {"document_id": "d2", "segment_id": 2, "system": "B", "score": 20.0},
    ]
    res = cluster_systems(_frame(rows), "wmt25")
    assert res.n_pairs[0, 1] == 0
    assert res.p_values[0, 1] == 1.0 and res.p_values[1, 0] == 1.0
    assert res.clusters == (("A", "B"),)


def test_wmt24_defaults_to_segment_pairing_and_others_to_annotator():
    rows = synthetic_rows(2, n_sys=3, n_docs=4, segs=3, n_ann=3)
    # give each system its own annotator so annotator pairing finds nothing
    for r in rows:
        r["annotator"] = r["system"] + "-ann"
    df = _frame(rows)
    assert cluster_systems(df, "wmt24").signature["pair_annotator"] is False
    res = cluster_systems(df, "wmt25")
    assert res.signature["pair_annotator"] is True
    assert res.n_pairs.sum() == 0
    assert cluster_systems(df, "wmt25", pair_annotator=False).n_pairs[0, 1] == 12


def test_esa_fixture_runs_every_method():
    df = read_esa_wmt23(FIXTURES / "esa-wmt23-ende-mini")
    for method in ("bootstrap", "wmt25", "wmt24", "permutation"):
        res = cluster_systems(df, method, condition_value="ESA-1", pair_annotator=False, options=ResampleOptions(n_boot=200))
        assert isinstance(res, ClusterResult)
        assert len(res.order) == 13
        assert res.n_rows == 312
        assert res.signature["method"] == method and res.signature["condition"] == "ESA-1"


# --------------------------------------------------------------------------- bad input


def test_bad_input_errors():
    rows = synthetic_rows(0, n_sys=3, n_docs=2, segs=2)
    df = _frame(rows)
    with pytest.raises(DDPUsageError, match="D351"):
        cluster_systems(df, "anova")  # type: ignore[arg-type]
    with pytest.raises(DDPUsageError, match="D351"):
        cluster_systems(df, "wmt25", by_domain=True)
    with pytest.raises(DDPUsageError, match="D351"):
        cluster_systems(df, "bootstrap", unit="word")  # type: ignore[arg-type]
    with pytest.raises(DDPDataError, match="D354"):
        cluster_systems(df.filter(pl.col("system") == "sys0"), "wmt25")
    nan_df = df.with_columns(pl.when(pl.col("segment_id") == 1).then(None).otherwise(pl.col("score")).alias("score"))
    with pytest.raises(DDPDataError, match="D302"):
        cluster_systems(nan_df, "wmt25")
    assert cluster_systems(nan_df, "wmt25", options=ResampleOptions(nan_policy="omit")).n_rows == df.height // 2
    two = pl.concat([df.with_columns(pl.lit("A").alias("condition")), df.with_columns(pl.lit("B").alias("condition"))])
    with pytest.raises(DDPUsageError, match=r"D361.*'A', 'B'.*--in COND") as exc:
        cluster_systems(two, "wmt25")
    assert "condition_value" not in str(exc.value)  # no Python argument name in a CLI message
    with pytest.raises(DDPDataError, match="D305"):
        cluster_systems(two, "wmt25", condition_value="C")
    assert cluster_systems(two, "wmt25", condition_value="A").n_rows == df.height
    with pytest.raises(DDPDataError, match="D352"):
        cluster_systems(df.drop("domain"), "wmt24", by_domain=True)
    with pytest.raises(DDPDataError, match="D301"):
        cluster_systems(df.drop("system"), "wmt25")
    with pytest.raises(DDPDataError, match="D313"):
        cluster_systems(df, "bootstrap", options=ResampleOptions(indices=np.zeros((5, 99), dtype=np.int64)))


# --------------------------------------------------------------------------- comparison, package


def test_compare_clusters_counts_moves():
    from ddpcore.stats import compare_clusters

    rows = synthetic_rows(11, n_sys=6, n_docs=9, segs=6, domains=("news", "social", "speech"))
    a = cluster_systems(_frame(rows), "wmt24")
    same = compare_clusters(a, a)
    assert same.same_clusters and not same.moved and same.n_same_index == 6
    # reverse the quality order in condition b: the best system becomes the worst
    flipped = [{**r, "score": 100 - r["score"]} for r in rows]
    b = cluster_systems(_frame(flipped), "wmt24")
    cmp = compare_clusters(a, b)
    assert set(cmp.systems) == set(a.order)
    assert cmp.cluster_a == {s: a.cluster_of(s) for s in a.order}
    assert cmp.moved == tuple(s for s in a.order if a.cluster_of(s) != b.cluster_of(s))
    assert cmp.moved == a.order  # mirror-image ranking: every system changes cluster index
    # the unordered partitions coincide (cluster sizes 1, 2, 2, 1), the ordered clusters do not
    assert {frozenset(c) for c in a.clusters} == {frozenset(c) for c in b.clusters}
    assert cmp.same_clusters is False and cmp.n_same_index == 0
    assert cmp.n_adjacent_index >= cmp.n_same_index
    json.dumps(cmp.to_dict())
    assert a.significant(a.order[0], a.order[-1])


def test_importing_ddpcore_stats_is_light():
    import subprocess
    import sys

    probe = subprocess.run([sys.executable, "-c", "import sys, ddpcore.stats as s; "
                            "print(sorted(m for m in ('numpy', 'polars', 'scipy') if m in sys.modules)); "
                            "print(all(hasattr(s, n) for n in s.__all__))"],
                           capture_output=True, text=True, timeout=60)
    assert probe.stdout.split() == ["[]", "True"], probe.stderr


def test_native_kernels_do_not_depend_on_thread_count():
    from ddpcore._native import load

    k = load("stats_cluster")
    rng = np.random.default_rng(4)
    x = np.round(rng.normal(70, 15, (301, 9)))
    x[rng.random(x.shape) < 0.1] = np.nan
    ii, jj = np.triu_indices(9, k=1)
    outs = []
    flips = rng.integers(0, 2, size=(70, 301), dtype=np.uint8)
    for nt in (1, 2, 3):
        st = [np.empty(len(ii)), np.empty(len(ii)), np.empty(len(ii), np.int64), np.empty(len(ii), np.int64),
              np.empty(len(ii), np.uint8)]
        k.signed_rank_pairs(x, ii.astype(np.int64), jj.astype(np.int64), *st, nt)
        d = np.nan_to_num(x[:, ii] - x[:, jj])
        sums = np.empty((70, len(ii)))
        k.sign_flip_sums(flips, np.ascontiguousarray(d), sums, nt)
        outs.append((st, sums))
    for st, sums in outs[1:]:
        for a, b in zip(st, outs[0][0]):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(sums, outs[0][1])
    # the sums are the sign-matrix product (integer scores: exact in any order)
    np.testing.assert_array_equal(outs[0][1], (2.0 * flips - 1.0) @ d)


# --------------------------------------------------------------------------- issue 7: budget, streaming


def test_resampling_methods_refuse_runs_over_the_time_budget():
    df = pl.DataFrame(synthetic_rows(3))
    for method in ("bootstrap", "permutation"):
        with pytest.raises(DDPUsageError, match=rf"\[D363\] cluster_systems\(method='{method}'\) with "
                                                r"n_boot=1,000,000,000 would take about .*measured on the first"):
            cluster_systems(df, method, options=ResampleOptions(n_boot=10**9, max_seconds=1))
    with pytest.raises(DDPUsageError, match=r"\[D362\]"):  # memory of the bounded blocks over a tiny limit
        cluster_systems(df, "bootstrap", options=ResampleOptions(n_boot=1000, max_memory=1000))
    # the Wilcoxon methods do not resample: n_boot is ignored
    assert cluster_systems(df, "wmt25", options=ResampleOptions(n_boot=10**9, max_seconds=1)).method == "wmt25"


def test_bootstrap_blocks_give_the_one_block_answer(monkeypatch):
    """p-values from many small blocks of replicates equal those of one block (counts are sums)."""
    import ddpcore.stats.bootstrap as bs

    df = pl.DataFrame(synthetic_rows(8, integer=False))
    one = cluster_systems(df, "bootstrap", options=ResampleOptions(n_boot=203, seed=2))
    monkeypatch.setattr(bs, "_BLOCK_WORK", 1)  # blocks of 16 replicates
    many = cluster_systems(df, "bootstrap", options=ResampleOptions(n_boot=203, seed=2))
    np.testing.assert_array_equal(one.p_values, many.p_values)
    np.testing.assert_array_equal(one.n_pairs, many.n_pairs)
    assert one.clusters == many.clusters


def test_by_domain_stouffer_forced_to_one_by_a_domain_is_said():
    """--method wmt24 --by-domain combines per-domain two-sided Wilcoxon p-values with Stouffer, z = ndtri(1 - p)
    as WMT24's tools.py: a domain with p = 1 gives z = -inf and the combination 1, whatever the other domains
    show. That stays (it is the reference's rule), but is now said. Data: system B beats A by 5-12 points on
    every segment of 'news' (10 segments) and 'social' (10), and in 'speech' the two differences +3 and -3
    balance exactly (scipy.stats.wilcoxon gives p = 1.0 there, checked below)."""
    rows = []
    diffs = {"news": [5, 6, 7, 8, 9, 10, 11, 12, 6, 7], "social": [6, 7, 8, 9, 10, 11, 12, 5, 8, 9],
             "speech": [3, -3]}
    for dom, ds in diffs.items():
        for s, dlt in enumerate(ds):
            base = 50.0 + s
            rows += [{"document_id": f"{dom}{s}", "segment_id": 0, "system": "A", "domain": dom, "score": base},
                     {"document_id": f"{dom}{s}", "segment_id": 0, "system": "B", "domain": dom, "score": base + dlt}]
    df = _frame(rows)
    assert scipy.stats.wilcoxon([3, -3]).pvalue == 1.0  # scipy 1.17, exact
    assert scipy.stats.wilcoxon(diffs["news"]).pvalue < 0.01
    res = cluster_systems(df, "wmt24", by_domain=True)
    assert res.p_values[0, 1] == 1.0  # forced, as the reference
    [note] = [w for w in res.warnings if "Stouffer" in w]
    assert note.startswith("--by-domain: in 1 system pair(s) (A vs B (domain speech)) one domain has p = 1")
    without = cluster_systems(df.filter(pl.col("domain") != "speech"), "wmt24", by_domain=True)
    assert without.p_values[0, 1] < 0.05 and not [w for w in without.warnings if "Stouffer" in w]
