"""``ddp validate`` figures for every DDP column (issue 21 section 3): exact intervals, tail precision /
recall, coverage, the JSON ``columns`` object and the per-column text tables (no spaCy: DDP values given).

Expected values come from independent implementations: the Clopper-Pearson intervals from
``scipy.stats.binomtest(k, n).proportion_ci(method="exact")`` and statsmodels'
``proportion_confint(k, n, method="beta")``; counts from the slow per-segment loop :func:`slow_figures`
below, written from the definitions in docs/validation.md ("Metrics"), not from the code under test.
"""
from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest, pearsonr, spearmanr
from statsmodels.stats.proportion import proportion_confint

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.gold.proportions import clopper_pearson, proportion
from ddpcore.gold.validate import compare_with_gold, compute_column_metrics, format_validation_text

# --------------------------------------------------------------------------- the oracle


def slow_figures(ddp: list[int], gold: list[int], tails: tuple[int, ...]) -> dict[str, tuple[int, int]]:
    """(count, n) of every share, one segment at a time, from the definitions:

    under/exact/over: segments with DDP <, =, > gold, of all segments; precision@k: of the segments with
    DDP >= k, those with gold >= k; recall@k: of the segments with gold >= k, those with DDP >= k;
    coverage: of the segments with gold > 0, those with DDP > 0.
    """
    out: dict[str, list[int]] = {name: [0, 0] for name in ("under", "exact", "over", "coverage")}
    for k in tails:
        out[f"precision@{k}"] = [0, 0]
        out[f"recall@{k}"] = [0, 0]
    for d, g in zip(ddp, gold):
        for name in ("under", "exact", "over"):
            out[name][1] += 1
        if d < g:
            out["under"][0] += 1
        elif d == g:
            out["exact"][0] += 1
        else:
            out["over"][0] += 1
        for k in tails:
            if d >= k:
                out[f"precision@{k}"][1] += 1
                if g >= k:
                    out[f"precision@{k}"][0] += 1
            if g >= k:
                out[f"recall@{k}"][1] += 1
                if d >= k:
                    out[f"recall@{k}"][0] += 1
        if g > 0:
            out["coverage"][1] += 1
            if d > 0:
                out["coverage"][0] += 1
    return {name: (c, n) for name, (c, n) in out.items()}


def got_figures(m) -> dict[str, tuple[int, int]]:  # type: ignore[no-untyped-def]
    out = {"under": (m.under.count, m.under.n), "exact": (m.exact.count, m.exact.n), "over": (m.over.count, m.over.n)}
    for t in m.tails:
        out[f"precision@{t.k}"] = (t.precision.count, t.precision.n)
        out[f"recall@{t.k}"] = (t.recall.count, t.recall.n)
    if m.coverage is not None:
        out["coverage"] = (m.coverage.count, m.coverage.n)
    return out


def scipy_ci(k: int, n: int) -> tuple[float, float]:
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return float(ci.low), float(ci.high)


# --------------------------------------------------------------------------- Clopper-Pearson

FIXED = [(0, 1), (1, 1), (0, 5), (5, 5), (2, 5), (1, 8), (7, 8), (3, 10), (50, 100), (1, 1000), (999, 1000),
         (0, 14597), (12, 14597), (14590, 14597), (7298, 14597)]


def test_clopper_pearson_matches_scipy_and_statsmodels() -> None:
    k = np.array([a for a, _ in FIXED])
    n = np.array([b for _, b in FIXED])
    low, high = clopper_pearson(k, n)
    for i, (ki, ni) in enumerate(FIXED):
        s_low, s_high = scipy_ci(ki, ni)  # scipy: root search on the binomial cdf
        m_low, m_high = proportion_confint(ki, ni, alpha=0.05, method="beta")  # statsmodels: beta.ppf
        assert low[i] == pytest.approx(s_low, rel=1e-9, abs=1e-12), (ki, ni)
        assert high[i] == pytest.approx(s_high, rel=1e-9, abs=1e-12), (ki, ni)
        assert low[i] == pytest.approx(m_low, rel=1e-12, abs=1e-15), (ki, ni)
        assert high[i] == pytest.approx(m_high, rel=1e-12, abs=1e-15), (ki, ni)
    # closed forms at the edges: k = 0 -> [0, 1 - (a/2)^(1/n)], k = n -> [(a/2)^(1/n), 1]
    assert (low[2], high[2]) == (0.0, pytest.approx(1 - 0.025 ** (1 / 5), rel=1e-13))
    assert (low[3], high[3]) == (pytest.approx(0.025 ** (1 / 5), rel=1e-13), 1.0)


def test_proportion_undefined_without_segments() -> None:
    p = proportion(0, 0)
    assert (p.count, p.n, p.share, p.ci_low, p.ci_high) == (0, 0, None, None, None)
    low, high = clopper_pearson([0, 3], [0, 4])
    assert math.isnan(low[0]) and math.isnan(high[0]) and not math.isnan(low[1])
    d = proportion(3, 4).to_dict()
    assert set(d) == {"count", "n", "share", "ci_low", "ci_high"} and (d["count"], d["n"]) == (3, 4)
    assert d["share"] == 0.75 and (d["ci_low"], d["ci_high"]) == pytest.approx(scipy_ci(3, 4), rel=1e-9)


# --------------------------------------------------------------------------- tail figures, coverage

# fixed vectors (sentences): the tails at 5 and 15 and gold > 0 all occur, with segments on both sides of k
DDP_FIXED = [0, 0, 3, 5, 5, 6, 15, 16, 2, 0, 20, 4, 0, 7]
GOLD_FIXED = [0, 2, 3, 4, 5, 9, 15, 3, 2, 6, 18, 16, 0, 0]


def test_fixed_vectors_against_slow_loop_and_scipy() -> None:
    m = compute_column_metrics(DDP_FIXED, GOLD_FIXED, column="ddp_certified", tails=(5, 15))
    want = slow_figures(DDP_FIXED, GOLD_FIXED, (5, 15))
    assert got_figures(m) == want
    # spelled out (count the two lists by eye): DDP >= 5 at positions 3,4,5,6,7,10,13 (7 segments); of those
    # gold >= 5 at 4,5,6,10 -> precision@5 = 4/7; gold >= 5 at 4,5,6,9,10,11 (6) -> recall@5 = 4/6;
    # DDP >= 15 at 6,7,10; gold >= 15 at 6,10,11; both at 6,10 -> 2/3 and 2/3; gold > 0 at 11 positions, of
    # which DDP > 0 at 2,3,4,5,6,7,8,10,11 -> coverage 9/11
    assert want["precision@5"] == (4, 7) and want["recall@5"] == (4, 6)
    assert want["precision@15"] == (2, 3) and want["recall@15"] == (2, 3) and want["coverage"] == (9, 11)
    for t in m.tails:
        for p in (t.precision, t.recall):
            assert p.share == pytest.approx(p.count / p.n)
            assert (p.ci_low, p.ci_high) == pytest.approx(scipy_ci(p.count, p.n), rel=1e-9)
    assert m.pearson == pytest.approx(pearsonr(DDP_FIXED, GOLD_FIXED).statistic, rel=1e-12)
    assert m.spearman == pytest.approx(spearmanr(DDP_FIXED, GOLD_FIXED).statistic, rel=1e-12)
    assert m.mean_signed_error == pytest.approx(np.mean(np.subtract(DDP_FIXED, GOLD_FIXED)))
    # coverage belongs to ddp_certified; the ddp column reports none unless asked
    assert compute_column_metrics(DDP_FIXED, GOLD_FIXED, column="ddp").coverage is None


def test_empty_tail_is_undefined_not_zero() -> None:
    m = compute_column_metrics([0, 1, 2], [0, 1, 3], tails=(5,))
    t = m.tails[0]
    assert (t.precision.n, t.precision.share, t.recall.n, t.recall.share) == (0, None, 0, None)
    assert compute_column_metrics([], [], column="ddp_certified").mean_signed_error is None


@pytest.mark.parametrize("tails", [(0,), (-1, 5), (2.5,), (), (True,)])
def test_bad_tails_are_d443(tails: tuple) -> None:
    with pytest.raises(DDPUsageError, match=r"\[D443\]"):
        compute_column_metrics([1], [1], tails=tails)


values = st.lists(st.tuples(st.integers(0, 25), st.integers(0, 25)), max_size=60)


@settings(max_examples=200, deadline=None)
@given(values, st.lists(st.integers(1, 30), min_size=1, max_size=4))
def test_property_against_slow_loop(pairs: list[tuple[int, int]], tails: list[int]) -> None:
    ddp = [d for d, _ in pairs]
    gold = [g for _, g in pairs]
    m = compute_column_metrics(ddp, gold, column="ddp_certified", tails=tails)
    ks = tuple(sorted(set(tails)))
    assert [t.k for t in m.tails] == list(ks)
    assert got_figures(m) == slow_figures(ddp, gold, ks)
    shares = [m.under, m.exact, m.over] + [p for t in m.tails for p in (t.precision, t.recall)] + [m.coverage]
    for p in shares:
        assert p is not None
        if p.n == 0:
            assert p.share is None and p.ci_low is None
            continue
        assert p.ci_low is not None and p.ci_high is not None and p.share is not None
        assert 0.0 <= p.ci_low <= p.share <= p.ci_high <= 1.0
        assert (p.ci_low, p.ci_high) == pytest.approx(scipy_ci(p.count, p.n), rel=1e-8, abs=1e-12)
    # precision and recall at k count the same segments (DDP >= k and gold >= k)
    for t in m.tails:
        assert t.precision.count == t.recall.count


# --------------------------------------------------------------------------- compare_with_gold, both columns


def _tables() -> tuple[pl.DataFrame, pl.DataFrame]:
    genre = ["news"] * 7 + ["fiction"] * 7
    gold = pl.DataFrame({
        "document_id": ["a"] * 7 + ["b"] * 7, "sentence": list(range(7)) * 2, "genre": genre,
        "gold_distance": GOLD_FIXED, "gold_chain_id": [None if g == 0 else "c" for g in GOLD_FIXED],
        "gold_reference_sentence": [-1 if g == 0 else 0 for g in GOLD_FIXED],
    })
    certified = [min(d, 5) if i % 3 else 0 for i, d in enumerate(DDP_FIXED)]  # a synthetic certain-link max
    seg = pl.DataFrame({"document_id": ["a"] * 7 + ["b"] * 7, "segment_id": list(range(7)) * 2,
                        "ddp": DDP_FIXED, "ddp_certified": certified})
    return gold, seg


def test_compare_with_gold_reports_both_columns() -> None:
    gold, seg = _tables()
    res = compare_with_gold(gold, seg, tails=(15, 5, 5))
    assert list(res.columns) == ["ddp", "ddp_certified"] and res.tails == (5, 15)
    assert res.segments.columns[:5] == ["document_id", "sentence", "genre", "ddp", "ddp_certified"]
    certified = seg["ddp_certified"].to_list()
    for col, values in (("ddp", DDP_FIXED), ("ddp_certified", certified)):
        rep = res.columns[col]
        assert got_figures(rep.overall) == {k: v for k, v in slow_figures(values, GOLD_FIXED, (5, 15)).items()
                                            if col == "ddp_certified" or k != "coverage"}
        assert list(rep.by_genre) == ["fiction", "news"]
        for genre, rows in (("news", slice(0, 7)), ("fiction", slice(7, 14))):
            want = slow_figures(values[rows], GOLD_FIXED[rows], (5, 15))
            got = got_figures(rep.by_genre[genre])
            assert got == {k: v for k, v in want.items() if k in got}
    d = json.loads(json.dumps(res.to_dict()))
    # the top-level keys of the ddp column are those of the previous release (readers of old reports)
    assert set(d) == {"overall", "by_genre", "n_over_estimates", "over_estimate_causes", "signature", "timing",
                      "tails", "columns"}
    assert set(d["overall"]) == {"n_segments", "pearson", "spearman", "share_under", "share_exact", "share_over",
                                 "mean_signed_error"}
    assert d["overall"]["share_under"] == d["columns"]["ddp"]["overall"]["under"]["share"]
    assert set(d["columns"]["ddp_certified"]["overall"]) == {"n_segments", "pearson", "spearman", "under", "exact",
                                                             "over", "mean_signed_error", "tails", "coverage"}
    assert "coverage" not in d["columns"]["ddp"]["overall"]
    assert d["columns"]["ddp_certified"]["by_genre"]["news"]["tails"][0]["k"] == 5
    text = format_validation_text(res)
    assert "column ddp (" in text and "column ddp_certified (" in text
    assert "column ddp_certified tails" in text and "coverage" in text and "precision@15" in text
    # the coverage cell of the overall row: share, exact interval and n, from the slow loop and scipy
    c, n = slow_figures(certified, GOLD_FIXED, (5, 15))["coverage"]
    lo, hi = scipy_ci(c, n)
    assert f"{100 * c / n:5.1f} [{100 * lo:4.1f},{100 * hi:6.1f}] /{n}" in text


def test_only_ddp_when_the_run_has_no_certified_column() -> None:
    gold, seg = _tables()
    res = compare_with_gold(gold, seg.drop("ddp_certified"))
    assert list(res.columns) == ["ddp"] and "ddp_certified" not in res.segments.columns
    assert "ddp_certified" not in format_validation_text(res)


@pytest.mark.parametrize(("values", "row", "shown"), [
    ([0, 1, None, 3], 2, "None"), ([0.0, 1.5, 2.0, 3.0], 1, "1.5"), ([0, -1, 2, 3], 1, "-1"),
    ([0.0, 1.0, float("nan"), 3.0], 2, "nan"),
])
def test_bad_certified_values_are_d445(values: list, row: int, shown: str) -> None:
    gold = pl.DataFrame({"document_id": ["a"] * 4, "sentence": [0, 1, 2, 3], "genre": ["g"] * 4,
                         "gold_distance": [0, 1, 2, 3], "gold_chain_id": [None, "c", "c", "c"],
                         "gold_reference_sentence": [-1, 0, 0, 0]})
    seg = pl.DataFrame({"document_id": ["a"] * 4, "segment_id": [0, 1, 2, 3], "ddp": [0, 1, 2, 3],
                        "ddp_certified": values}, strict=False)
    with pytest.raises(DDPDataError, match=rf"\[D445\] DDP segment table, column 'ddp_certified', row {row} "
                                           rf"\(document 'a', segment {row}\): {shown} is not a whole number"):
        compare_with_gold(gold, seg)
