"""Hunt 10 (helper 41): statistics numerics at the edges.

* wmt24 ``--by-domain`` Stouffer: a domain p below 1.1e-16 (``1 - p == 1``) or underflowed to 0 made tools.py's
  ``Phi^-1(1 - p)`` infinite and the combined p 0 whatever the other domains showed;
* ``AlphaResult`` (and ``AlphaBootstrapResult``) carry the warnings ``ddp stats alpha`` prints;
* Pearson with n = 2 is exactly +-1 (scipy's rule), also per segment in ``ddp meta`` (``pearson.item``);
* system means (rankings, ties, clusters, tau, compare, blindness pairs) do not depend on the row order.

Every expected value comes from scipy, the ``krippendorff`` package, exact fractions or a plain loop in this
file (said next to each), never from the code under test.
"""
from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
import scipy.stats
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq

from ddpcore.cli.main import main
from ddpcore.stats import (ResampleOptions, bootstrap_tau, cluster_systems, compare_systems, krippendorff_alpha,
                           pearson, reliability_matrix)
from ddpcore.stats.agreement import AlphaResult


# ---------------------------------------------------------------- 1. wmt24 --by-domain: Stouffer in the tail


def _pair_rows(doc: str, domain: str, diffs: list[float]) -> list[dict]:
    """System X = Y + d on each segment of ``doc`` (one domain)."""
    rows = []
    for i, d in enumerate(diffs):
        rows.append(dict(document_id=doc, segment_id=i, system="X", domain=domain, score=50.0 + d))
        rows.append(dict(document_id=doc, segment_id=i, system="Y", domain=domain, score=50.0))
    return rows


def _near_balanced(n: int) -> list[float]:
    """n distinct |d| (1..n) with signs + - - + per block of 4 (exactly balanced: T+ = n(n+1)/4), then ranks 1 and 2
    swapped, so T+ is one above the centre: a two-sided p just below 1 (about 0.99991 at n = 1000)."""
    pat: list[float] = []
    for k in range(0, n, 4):
        pat += [k + 1.0, -(k + 2.0), -(k + 3.0), k + 4.0]
    pat[0], pat[1] = -1.0, 2.0
    return pat


def test_wmt24_stouffer_domain_p_below_1e16_is_combined_not_zero(tmp_path, capsys):
    """Was: p = 0 (news: p = 3.9e-18, so 1 - p == 1 and Phi^-1(1 - p) = +inf, the sum +inf whatever the two
    other domains, each close to p = 1, showed): X and Y in two clusters. Now: 0.263, one cluster, said."""
    near = _near_balanced(1000)
    news = [1.0 + i * 0.01 for i in range(100)]
    table = pl.DataFrame(_pair_rows("dA", "news", news) + _pair_rows("dB", "speech", near)
                         + _pair_rows("dC", "social", near))
    # reference: scipy's two-sided Wilcoxon per domain, Stouffer on the upper tail (norm.isf / norm.sf)
    ps = [scipy.stats.wilcoxon(news).pvalue, scipy.stats.wilcoxon(near).pvalue, scipy.stats.wilcoxon(near).pvalue]
    assert 1.0 - ps[0] == 1.0 and 0.999 < ps[1] < 1.0
    ref = scipy.stats.norm.sf(sum(scipy.stats.norm.isf(p) for p in ps) / math.sqrt(3))
    assert ref == pytest.approx(0.26335642, abs=1e-8)  # norm.isf/norm.sf above, rounded by hand
    res = cluster_systems(table, "wmt24", by_domain=True, min_pairs=0)
    assert res.p_values[0, 1] == pytest.approx(ref, rel=1e-12)
    assert res.p_values[1, 0] == res.p_values[0, 1]
    assert [list(c) for c in res.clusters] == [["X", "Y"]]
    [note] = [w for w in res.warnings if "1.1e-16" in w]
    assert "X vs Y (domain news: p = 3.9e-18)" in note
    path = tmp_path / "tail.csv"
    table.write_csv(path)
    assert main(["stats", "cluster", str(path), "--method", "wmt24", "--by-domain", "--min-pairs", "0"]) == 0
    out, err = capsys.readouterr()
    d = json.loads(out)
    assert d["p_values"][0][1] == pytest.approx(ref, rel=1e-12) and d["clusters"] == [["X", "Y"]]
    assert "1.1e-16" in err and any("1.1e-16" in w for w in d["warnings"])


def test_wmt24_stouffer_domain_p_underflowed_to_zero_takes_z_from_log_p():
    """Was: a domain whose normal-approximation p underflows to 0 (2,000 positive differences) gave
    z = +inf and a combined p of exactly 0 whatever the other domain showed. Now z comes from log p."""
    n = 2000  # |z| = 38.7: 2 * Phi(-|z|) is below the smallest double
    news = [1.0 + i * 0.001 for i in range(n)]
    near = _near_balanced(1000)
    table = pl.DataFrame(_pair_rows("dA", "news", news) + _pair_rows("dB", "speech", near))
    assert scipy.stats.wilcoxon(news).pvalue == 0.0  # scipy's p underflows too
    # reference z of news: the signed-rank statistic by a plain loop (all differences positive and distinct, so
    # T+ = sum of the ranks 1..n), the normal approximation's z, log p = log 2 + log sf(z) (scipy's logsf),
    # and the Stouffer z solving logsf(t) = log p by bisection (brentq): no ndtri anywhere
    t_plus = sum(range(1, n + 1))
    mean = n * (n + 1) / 4
    se = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    log_p = math.log(2.0) + scipy.stats.norm.logsf((t_plus - mean) / se)
    z_news = brentq(lambda t: scipy.stats.norm.logsf(t) - log_p, 1.0, 200.0, xtol=1e-14, rtol=1e-15)
    z_speech = scipy.stats.norm.isf(scipy.stats.wilcoxon(near).pvalue)
    ref = scipy.stats.norm.sf((z_news + z_speech) / math.sqrt(2))
    assert 0.0 < ref < 1e-100
    res = cluster_systems(table, "wmt24", by_domain=True, min_pairs=0)
    assert res.p_values[0, 1] == pytest.approx(ref, rel=1e-9)
    assert any("underflows to 0" in w for w in res.warnings)


# ---------------------------------------------------------------- 2. AlphaResult.warnings


def test_alpha_result_carries_the_single_pairable_unit_warning():
    """Was: no warnings field; the single-pairable-unit line (alpha 0 whatever the ratings) only on the CLI."""
    data = np.array([[1.0, 4.0, np.nan], [2.0, np.nan, 5.0]])  # unit 0 rated twice, units 1 and 2 once
    res = krippendorff_alpha(data, level="interval")
    # reference alpha: the krippendorff package (0.9.0) on the same matrix
    import krippendorff

    assert res.alpha == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="interval"),
                                      abs=1e-12)
    assert res.alpha == 0.0  # one pairable unit: D_o and D_e are the same two ratings
    assert any("single pairable unit" in w for w in res.warnings)
    assert any(w.startswith("2 of 3 units have fewer than two ratings") for w in res.warnings)  # counted by hand
    assert res.to_dict()["warnings"] == list(res.warnings)
    # constructor compatibility: the field has a default
    old = AlphaResult(alpha=0.5, level="interval", d_observed=1.0, d_expected=2.0, n_coders=2, n_units=3,
                      n_pairable_units=3, n_pairable_values=6)
    assert old.warnings == ()


def test_alpha_result_has_no_warnings_on_a_full_matrix_and_keeps_reliability_data_warnings():
    full = krippendorff_alpha(np.array([[1.0, 2.0, 3.0], [1.5, 2.0, 3.5]]))
    assert full.warnings == ()
    rows = []
    for doc in ("d0", "d1"):
        for seg in range(2):
            for ann in ("a0", "a1"):
                if (doc, seg, ann) == ("d1", 1, "a0"):
                    continue  # a0 rated one segment of d1, a1 two: the document means average different segments
                rows.append(dict(document_id=doc, segment_id=seg, system="s", annotator=ann,
                                 score=float(seg + (ann == "a1") + 3 * (doc == "d1"))))
    rd = reliability_matrix(pl.DataFrame(rows), unit=["document_id", "system"], coder="annotator", score="score")
    assert rd.warnings
    res = krippendorff_alpha(rd)
    assert res.warnings[: len(rd.warnings)] == rd.warnings


def test_alpha_bootstrap_result_carries_the_point_estimate_warnings():
    from ddpcore.stats import krippendorff_alpha_bootstrap

    data = np.array([[1.0, 2.0, 3.0, np.nan], [1.5, 2.5, 2.0, 4.0]])  # unit 3 rated once
    res = krippendorff_alpha_bootstrap(data, n_boot=50, seed=0)
    assert any(w.startswith("1 of 4 units have fewer than two ratings") for w in res.warnings)


def test_cli_alpha_prints_the_results_warnings_once(tmp_path, capsys):
    rows = [dict(document_id="d0", segment_id=0, system="s", annotator=a, score=v)
            for a, v in (("a0", 1.0), ("a1", 3.0))]
    rows.append(dict(document_id="d1", segment_id=0, system="s", annotator="a0", score=2.0))
    path = tmp_path / "one.csv"
    pl.DataFrame(rows).write_csv(path)
    assert main(["stats", "alpha", str(path)]) == 0
    out, err = capsys.readouterr()
    d = json.loads(out)
    assert err.count("single pairable unit") == 1 and sum("single pairable unit" in w for w in d["warnings"]) == 1
    assert d["alpha"] == 0.0


# ---------------------------------------------------------------- 3. Pearson with n = 2


@pytest.mark.parametrize("x, y", [([1.0, 2.0], [3.0, 5.0]), ([0.1, 0.7], [3.0, -5.0]), ([1e-300, 3e-300], [1.0, 2.0]),
                                  ([2.5, -1e6], [7.1, 7.3])])
def test_pearson_of_two_points_is_exactly_plus_or_minus_one(x, y):
    """Was: 0.9999999999999998 / -0.9999999999999999 where scipy gives exactly 1.0 / -1.0."""
    ref = scipy.stats.pearsonr(x, y)  # scipy: exactly +-1 and p = 1 for n = 2
    res = pearson(x, y)
    assert res.statistic == ref.statistic and abs(res.statistic) == 1.0
    assert res.p_value == 1.0


def test_pearson_random_pairs_of_two_and_never_beyond_one():
    rng = np.random.default_rng(3)
    for _ in range(300):
        x, y = rng.normal(size=2) * 10.0 ** rng.integers(-5, 5), rng.normal(size=2)
        assert pearson(x, y).statistic == scipy.stats.pearsonr(x, y).statistic  # scipy: +-1 exactly
    for _ in range(300):  # nearly collinear: |r| may round above 1, clipped as scipy does
        x = rng.normal(size=5)
        r = pearson(x, 3.0 * x + 1e-17).statistic
        assert -1.0 <= r <= 1.0 and r == pytest.approx(scipy.stats.pearsonr(x, 3.0 * x + 1e-17).statistic, abs=1e-15)


def test_meta_item_pearson_with_two_systems_is_exactly_plus_or_minus_one():
    """``ddp meta``'s pearson.item per segment (native kernel): 1 - 2e-16 on two cells; scipy's pearsonr: +-1."""
    from ddpcore.stats.meta import _pearson_from_sums, item_statistics

    rng = np.random.default_rng(1)
    h, m = rng.normal(size=(500, 2)) * 50, rng.normal(size=(500, 2)) * 3
    out = item_statistics(h, m, np.ones_like(h, dtype=bool))
    ref = np.array([scipy.stats.pearsonr(h[i], m[i]).statistic for i in range(len(h))])
    assert np.array_equal(out["pearson"], ref)
    # the sums form (pearson.none, replicates) on two points: sums by a plain loop
    x, y = [0.1, 0.7], [3.0, -5.0]
    r = _pearson_from_sums(2.0, sum(x), sum(v * v for v in x), sum(y), sum(v * v for v in y),
                           sum(a * b for a, b in zip(x, y)))
    assert float(r) == scipy.stats.pearsonr(x, y).statistic == -1.0


# ---------------------------------------------------------------- 4. row-order independent means and ties


def _tie_table() -> pl.DataFrame:
    """Systems a and b score the same multiset {0.1, 0.2, 0.3} in a different row order: equal means (exact
    fractions below), so the tie goes to the name (a first); in row order 0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1."""
    rows = []
    for sys_, vals in (("a", [0.3, 0.2, 0.1]), ("b", [0.1, 0.2, 0.3])):
        for i, v in enumerate(vals):
            rows.append(dict(document_id=f"d{i}", segment_id=0, system=sys_, score=v))
    return pl.DataFrame(rows)


@pytest.mark.parametrize("method", ["wmt25", "wmt24", "permutation", "bootstrap"])
def test_cluster_tied_means_rank_by_name_in_any_row_order(method):
    """Was: order (b, a) with means 0.20000000000000004 / 0.19999999999999998, and (a, b) for the reversed rows."""
    df = _tie_table()
    # exact means with fractions: equal, so the documented tie rule (by name) puts a first
    exact = {s: sum(Fraction(v) for v in g["score"]) / g.height for (s,), g in df.group_by("system")}
    assert exact["a"] == exact["b"]
    kw = {"unit": "segment"} if method == "bootstrap" else {"min_pairs": 0}
    for frame in (df, df.reverse()):
        res = cluster_systems(frame, method, **kw)
        assert res.order == ("a", "b")
        assert res.means["a"] == res.means["b"]


_DECIMALS = st.sampled_from([0.1, 0.2, 0.3, 0.7, 1.1, 2.3, 0.15, 33.3])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), n_docs=st.integers(2, 4), n_segs=st.integers(1, 3),
       method=st.sampled_from(["wmt25", "wmt24", "permutation", "bootstrap"]))
def test_cluster_output_is_identical_under_row_permutation(data, n_docs, n_segs, method):
    """Three systems, scores from a few non-integer decimals (ties between means are likely); the rows in a
    drawn permutation must give the same order, means, p-values and clusters, bit for bit."""
    rows = []
    for d in range(n_docs):
        for s in range(n_segs):
            for sys_ in ("a", "b", "c"):
                rows.append(dict(document_id=f"d{d}", segment_id=s, system=sys_, score=data.draw(_DECIMALS)))
    perm = data.draw(st.permutations(range(len(rows))))
    kw = {"options": ResampleOptions(n_boot=200)} if method in ("bootstrap", "permutation") else {}
    if method != "bootstrap":
        kw["min_pairs"] = 0
    a = cluster_systems(pl.DataFrame(rows), method, **kw)
    b = cluster_systems(pl.DataFrame([rows[i] for i in perm]), method, **kw)
    assert a.order == b.order and a.means == b.means and a.clusters == b.clusters
    assert np.array_equal(a.p_values, b.p_values, equal_nan=True)


def _tau_rows(order: list[int]) -> list[dict]:
    """Two documents x three segments; under DOC systems a and b score the same multiset per document, so their
    DOC means tie exactly; under SEG a < b < c."""
    per = {("DOC", "a"): [0.1, 0.2, 0.3], ("DOC", "b"): [0.3, 0.2, 0.1], ("DOC", "c"): [0.9, 0.9, 0.9],
           ("SEG", "a"): [0.1, 0.1, 0.1], ("SEG", "b"): [0.2, 0.2, 0.2], ("SEG", "c"): [0.3, 0.3, 0.3]}
    rows = [dict(document_id=f"d{d}", segment_id=s, system=sys_, condition=cond, score=vals[s])
            for d in range(2) for (cond, sys_), vals in per.items() for s in range(3)]
    return [rows[i] for i in order]


def test_bootstrap_tau_tied_means_in_any_row_order():
    """Was: the DOC means of a and b differ by one ulp in one row order (tau-b 1.0) and tie in another (0.8165)."""
    n = len(_tau_rows(list(range(36))))
    # reference: exact DOC/SEG means with fractions, then scipy's kendalltau (tau-b) on them
    rows = _tau_rows(list(range(n)))
    means = {}
    for cond in ("DOC", "SEG"):
        for sys_ in "abc":
            vals = [Fraction(r["score"]) for r in rows if r["condition"] == cond and r["system"] == sys_]
            means[cond, sys_] = sum(vals) / len(vals)
    ref = scipy.stats.kendalltau([float(means["DOC", s]) for s in "abc"], [float(means["SEG", s]) for s in "abc"])
    for order in (list(range(n)), list(range(n))[::-1], list(np.random.default_rng(0).permutation(n))):
        res = bootstrap_tau(pl.DataFrame(_tau_rows(order)), "DOC", "SEG", options=ResampleOptions(n_boot=100))
        assert res.tau == pytest.approx(ref.statistic, abs=1e-15)
        assert res.means_a["a"] == res.means_a["b"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_bootstrap_tau_and_compare_identical_under_row_permutation(data):
    rows = []  # three segments per document: a document's sum has three terms (two would commute exactly)
    for d in range(3):
        for s in range(3):
            for sys_ in ("base", "x", "y"):
                for cond in ("DOC", "SEG"):
                    rows.append(dict(document_id=f"d{d}", segment_id=s, system=sys_, condition=cond,
                                     score=data.draw(_DECIMALS)))
    perm = data.draw(st.permutations(range(len(rows))))
    shuffled = [rows[i] for i in perm]
    opts = ResampleOptions(n_boot=64)
    doc = [r for r in rows if r["condition"] == "DOC"]
    doc_s = [r for r in shuffled if r["condition"] == "DOC"]
    from ddpcore.stats import CompareTests

    tests = CompareTests(unit="document", test="bootstrap")
    ca = compare_systems(pl.DataFrame(doc).drop("condition"), "base", tests=tests, options=opts)
    cb = compare_systems(pl.DataFrame(doc_s).drop("condition"), "base", tests=tests, options=opts)
    assert json.dumps(ca.rows(), sort_keys=True) == json.dumps(cb.rows(), sort_keys=True)
    ta = bootstrap_tau(pl.DataFrame(rows), "DOC", "SEG", options=opts)
    tb = bootstrap_tau(pl.DataFrame(shuffled), "DOC", "SEG", options=opts)
    assert ta.means_a == tb.means_a and ta.means_b == tb.means_b
    assert np.array_equal(ta.replicates, tb.replicates, equal_nan=True) and ta.share_tied == tb.share_tied


def test_blindness_pair_means_identical_under_row_permutation():
    """The per-key means the blindness battery pairs (repeated annotations averaged): the same bits in any row
    order (an exact zero difference, TOST's zero_variance, is decided on them). Was: 0.2 vs 0.20000000000000004."""
    from ddpcore.stats.blindness import _pairs

    rows = []
    for cond, vals in (("DOC", [0.1, 0.2, 0.3]), ("SEG", [0.3, 0.2, 0.1])):
        for k, v in enumerate(vals):  # three annotations of one (document, segment, system) per condition
            rows.append(dict(document_id="d0", segment_id=0, system="s", condition=cond, annotator=f"a{k}", score=v))
    df = pl.DataFrame(rows)
    a, b, _, _ = _pairs(df, "DOC", "SEG", "segment")
    # reference: exact fractions: both conditions average the same multiset, so the difference is exactly 0
    assert sum(map(Fraction, [0.1, 0.2, 0.3])) == sum(map(Fraction, [0.3, 0.2, 0.1]))
    assert a[0] - b[0] == 0.0
    a2, b2, _, _ = _pairs(df.reverse(), "DOC", "SEG", "segment")
    assert a2[0] == a[0] and b2[0] == b[0]


def test_compare_system_with_the_baselines_scores_is_not_significantly_worse_in_any_row_order():
    """Was (unit document): x scores each document's segments 0.3, 0.2, 0.1 where the baseline scores 0.1, 0.2, 0.3;
    the document sums differ by one ulp in row order, the same sign in every document, so x was 'worse' (p = 0.03)
    in one row order and 'better' in the reversed one. Now diff 0 and n.s. in both."""
    from ddpcore.stats import CompareTests

    rows = []
    for d in range(3):
        for sys_, vals in (("base", [0.1, 0.2, 0.3]), ("x", [0.3, 0.2, 0.1]), ("y", [0.7, 0.1, 0.2])):
            for s, v in enumerate(vals):
                rows.append(dict(document_id=f"d{d}", segment_id=s, system=sys_, score=v))
    # reference: exact fractions: x's document sums equal the baseline's, so the difference is exactly 0
    assert sum(map(Fraction, [0.1, 0.2, 0.3])) == sum(map(Fraction, [0.3, 0.2, 0.1]))
    tests = CompareTests(unit="document", test="both")
    for frame in (pl.DataFrame(rows), pl.DataFrame(rows).reverse()):
        m = compare_systems(frame, "base", tests=tests, options=ResampleOptions(n_boot=64)).comparisons["score"]
        assert m.systems[1] == "x" and m.diff[1] == 0.0 and m.verdict[1] == "n.s."


# ---------------------------------------------------------------- 5. alpha of ratings at the bottom of the range


@pytest.mark.parametrize("scale", [1e-160, 1e-200, 1e-300])
def test_interval_alpha_of_tiny_ratings_is_the_alpha_of_the_ratings(scale):
    """Was: 0.82477 at 1e-160 (squared differences lose digits) and D314 'all pairable ratings are identical' from
    1e-200 on (they underflow to 0), although the ratings differ. Interval alpha is scale-free."""
    import krippendorff

    from ddpcore.stats import krippendorff_alpha_bootstrap

    x = np.array([[1.0, 2.0, 3.0, 4.0, np.nan], [1.5, 2.0, 3.5, 3.0, 2.5], [1.0, np.nan, 3.0, 4.5, 2.0]])
    # reference: the krippendorff package (0.9.0) on the unscaled ratings (alpha does not depend on the scale)
    ref = krippendorff.alpha(reliability_data=x, level_of_measurement="interval")
    res = krippendorff_alpha(x * scale)
    assert res.alpha == pytest.approx(ref, abs=1e-12)
    boot = krippendorff_alpha_bootstrap(x * scale, n_boot=40, seed=0)
    plain = krippendorff_alpha_bootstrap(x, n_boot=40, seed=0)  # same draws: the seed, on the unscaled ratings
    assert boot.ci_low == pytest.approx(plain.ci_low, abs=1e-12) and boot.ci_high == pytest.approx(plain.ci_high,
                                                                                                    abs=1e-12)
