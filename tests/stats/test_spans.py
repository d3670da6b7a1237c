"""Recoverability R^2, error rates, boundary-localised span rate and its bootstrap CI."""
from __future__ import annotations

import unicodedata
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from stats_oracles import percentile_type7, synthetic_long_table

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.stats.bootstrap import resample_indices
from ddpcore.stats.spans import (
    boundary_rate_difference,
    boundary_span_rate,
    error_free_rate,
    errors_per_1000_chars,
    ols_r2,
    score_recoverability_r2,
)
from ddpcore.stats import ResampleOptions


def test_ols_matches_statsmodels():
    rng = np.random.default_rng(0)
    x = rng.normal(80, 10, 230)
    y = 0.6 * x + rng.normal(0, 8, 230)
    r = ols_r2(x, y)
    fit = sm.OLS(y, sm.add_constant(x)).fit()  # statsmodels 0.15.0
    assert r.r2 == pytest.approx(fit.rsquared, rel=1e-12)
    assert r.intercept == pytest.approx(fit.params[0], rel=1e-10) and r.slope == pytest.approx(fit.params[1], rel=1e-12)
    assert r.r == pytest.approx(np.corrcoef(x, y)[0, 1], rel=1e-12)
    with pytest.raises(DDPDataError, match="D314"):
        ols_r2([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])


def test_score_recoverability_matches_manual_aggregation():
    df = synthetic_long_table(seed=2, n_docs=15, n_systems=4, conditions=("SEG", "DOC", "MIX"))
    res = score_recoverability_r2(df, "SEG", "MIX")
    means = df.group_by(["condition", "document_id", "system"]).agg(pl.col("score").mean())
    seg = means.filter(pl.col("condition") == "SEG").drop("condition").rename({"score": "x"})
    mix = means.filter(pl.col("condition") == "MIX").drop("condition").rename({"score": "y"})
    j = seg.join(mix, on=["document_id", "system"])
    fit = sm.OLS(j["y"].to_numpy(), sm.add_constant(j["x"].to_numpy())).fit()  # statsmodels 0.15.0
    assert res.n == j.height == 60 and res.r2 == pytest.approx(fit.rsquared, rel=1e-12)
    assert res.to_dict()["signature"]["target"] == "MIX"


def test_errors_per_1000_chars_counts_nfc_code_points():
    decomposed = "Cafe\u0301"  # 5 code points, NFC: "Café" = 4
    texts = [decomposed, "abcd" * 250, "한국어"]
    rates = errors_per_1000_chars([1, 3, 0], texts)
    expected = [1000 * n / len(unicodedata.normalize("NFC", t)) for n, t in zip([1, 3, 0], texts)]  # Python unicodedata
    assert np.allclose(rates, expected, rtol=1e-15) and rates[0] == 250.0
    with pytest.raises(DDPDataError, match="D316"):
        errors_per_1000_chars([1], [""])
    with pytest.raises(DDPDataError, match="D308"):
        errors_per_1000_chars([1, 2], ["a"])


def test_error_free_rate():
    assert error_free_rate([0, 2, 0, 1]).rate == 0.5
    r = error_free_rate(scores=[100, 99.5, 100, 80, 70])
    assert r.rate == 0.4 and r.n_hits == 2 and r.n == 5
    with pytest.raises(DDPUsageError):
        error_free_rate([0, 1], scores=[100, 90])


def test_boundary_span_rate_definition():
    # segment of length 100: midpoints 5 (boundary), 19.5 (boundary), 20 (not: [0, 0.2) is half-open),
    # 50 (not), 80 (not: (0.8, 1] is half-open), 80.5 (boundary), 100 (zero-width at the end: boundary)
    start = [0, 19, 10, 40, 75, 80, 100]
    end = [10, 20, 30, 60, 85, 81, 100]
    length = [100] * 7
    r = boundary_span_rate(start, end, length)
    assert (r.n_boundary, r.n_spans) == (4, 7)
    assert boundary_span_rate(start, end, length, exclude_zero_width=True).n_spans == 6
    for bad in (([5], [3], [10]), ([0], [11], [10]), ([0], [1], [0]), ([-1], [1], [10])):
        with pytest.raises(DDPDataError, match="D316"):
            boundary_span_rate(*bad)


def _span_tables(seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    out = []
    for shift in (0.0, 0.1):
        rows = []
        for d in range(6):
            for s in range(3):
                length = int(rng.integers(20, 200))
                for _ in range(int(rng.integers(0, 4))):
                    a = int(rng.integers(0, length))
                    b = int(min(length, a + rng.integers(0, 15)))
                    rows.append((f"d{d}", s, a, b, length))
        out.append(pl.DataFrame(rows, schema=["document_id", "segment_id", "span_start", "span_end", "segment_length"], orient="row"))
    return out[0], out[1]


def _is_boundary(start, end, length):
    """Paper Appendix B.3: a span is boundary-localised when its midpoint lies in the first or last
    20 % of the segment, [0, 0.2) or (0.8, 1]; exact rational arithmetic."""
    mid = Fraction(start + end, 2 * length)
    return mid < Fraction(1, 5) or mid > Fraction(4, 5)


def _boundary_share(rows):
    return sum(_is_boundary(*r) for r in rows) / len(rows)


def test_boundary_rate_difference_against_loop():
    a, b = _span_tables(1)
    res = boundary_rate_difference(a, b, options=ResampleOptions(n_boot=200, seed=4))
    ra, rb = (_boundary_share(t.select("span_start", "span_end", "segment_length").rows()) for t in (a, b))
    assert res.difference == pytest.approx(ra - rb, abs=1e-15)
    # oracle: rebuild each resampled pair of tables from the documented index matrix
    units = sorted(set(a.select(["document_id", "segment_id"]).iter_rows()) | set(b.select(["document_id", "segment_id"]).iter_rows()))
    idx = resample_indices(200, len(units), 4)
    for r in (0, 57, 199):
        picked = [units[k] for k in idx[r]]
        rates = []
        for t in (a, b):
            hits = total = 0
            for key in picked:
                sub = t.filter((pl.col("document_id") == key[0]) & (pl.col("segment_id") == key[1]))
                for s0, s1, length in sub.select("span_start", "span_end", "segment_length").rows():
                    hits += _is_boundary(s0, s1, length)
                    total += 1
            rates.append(hits / total)
        assert res.replicates[r] == pytest.approx(rates[0] - rates[1], abs=1e-12)
    ok = res.replicates[np.isfinite(res.replicates)]
    # percentile interval: Hyndman-Fan definition 7 computed by hand (stats_oracles.percentile_type7)
    assert res.ci_low == pytest.approx(percentile_type7(ok, 2.5), abs=1e-12)
    assert res.ci_high == pytest.approx(percentile_type7(ok, 97.5), abs=1e-12)
    again = boundary_rate_difference(a, b, options=ResampleOptions(n_boot=200, seed=4, threads=1))
    assert np.array_equal(again.replicates, res.replicates, equal_nan=True)
    with pytest.raises(DDPDataError, match="D301"):
        boundary_rate_difference(a.drop("segment_length"), b, options=ResampleOptions(n_boot=10))
