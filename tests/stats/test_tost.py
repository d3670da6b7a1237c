"""TOST: reference values (statsmodels, scipy one-sample t tests), edge-case policy, properties, grouped form."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from statsmodels.stats.weightstats import ttost_ind, ttost_paired

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.stats.tost import tost_grouped, tost_ind, tost_paired

X = np.array([86.0, 92.0, 71.0, 100.0, 64.0, 88.0, 79.0, 95.0, 90.0, 83.0])
Y = np.array([84.0, 95.0, 70.0, 98.0, 67.0, 85.0, 80.0, 97.0, 88.0, 85.0])


def close(a: float, b: float, rtol: float = 1e-12) -> bool:
    return bool(np.isclose(a, b, rtol=rtol, atol=1e-300))


def close_t(a: float, b: float) -> bool:
    """t statistics and p-values of random data: 1e-12 relative, or 1e-11 absolute near t = 0,
    where mean(x) - mean(y) - low cancels and both tools carry ~1e-14 absolute rounding."""
    return bool(np.isclose(a, b, rtol=1e-12, atol=1e-11))


# ---------------------------------------------------------------- fixed reference values


def test_paired_reference_values():
    r = tost_paired(X, Y, -3, 3)
    # statsmodels 0.15.0: ttost_paired(X, Y, -3, 3)
    # -> (0.0017178356335623174, (3.93427599532137, 0.0017178356335623174, 9.0),
    #     (-4.205605374309052, 0.001143816107243603, 9.0))
    assert close(r.p_value, 0.0017178356335623174)
    assert close(r.t_lower, 3.93427599532137) and close(r.p_lower, 0.0017178356335623174)
    assert close(r.t_upper, -4.205605374309052) and close(r.p_upper, 0.001143816107243603)
    assert r.df == 9.0 and r.n == 10 and r.equivalent and r.status == "ok"
    # independent of statsmodels: the two one-sided one-sample t tests of X - Y in scipy 1.17,
    # scipy.stats.ttest_1samp(X - Y, -3, alternative="greater").pvalue and
    # scipy.stats.ttest_1samp(X - Y, 3, alternative="less").pvalue; TOST p = their maximum
    from scipy import stats as sps

    lower = sps.ttest_1samp(X - Y, -3, alternative="greater")
    upper = sps.ttest_1samp(X - Y, 3, alternative="less")
    assert close(r.p_lower, lower.pvalue) and close(r.p_upper, upper.pvalue)
    assert close(r.t_lower, lower.statistic) and close(r.t_upper, upper.statistic)
    assert close(r.p_value, max(lower.pvalue, upper.pvalue))
    assert r.mean_diff == pytest.approx(np.mean(X - Y), rel=1e-15)
    assert r.ci_low > -3 and r.ci_high < 3


def test_ind_reference_values():
    r = tost_ind(X, Y, -3, 3)
    # statsmodels 0.15.0: ttost_ind(X, Y, -3, 3, usevar="pooled")
    # -> (0.2770564909212594, (0.6028742679474546, 0.2770564909212594, 18.0),
    #     (-0.6444518036679723, 0.2637053382351401, 18.0))
    assert close(r.p_value, 0.2770564909212594)
    assert close(r.t_lower, 0.6028742679474546) and close(r.t_upper, -0.6444518036679723)
    assert close(r.p_upper, 0.2637053382351401) and r.df == 18.0
    assert not r.equivalent and r.n_x == 10 and r.n_y == 10 and r.n == 20
    w = tost_ind(X, Y[:7], -5, 5, equal_var=False)
    # statsmodels 0.15.0: ttost_ind(X, Y[:7], -5, 5, usevar="unequal")
    # -> (0.3056990616608823, (1.266787222323437, 0.1140847139666201, 12.587682416111333),
    #     (-0.5210173253104451, 0.3056990616608823, 12.587682416111333))
    assert close(w.p_value, 0.3056990616608823) and close(w.df, 12.587682416111333)
    assert close(w.t_lower, 1.266787222323437) and close(w.p_lower, 0.1140847139666201)


# ---------------------------------------------------------------- live agreement with statsmodels


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 80),
    seed=st.integers(0, 2**32 - 1),
    scale=st.floats(0.01, 50),
    shift=st.floats(-5, 5),
    margin=st.floats(0.1, 10),
)
def test_paired_matches_statsmodels(n, seed, scale, shift, margin):
    rng = np.random.default_rng(seed)
    x = rng.normal(70, 15, n)
    y = x + rng.normal(shift, scale, n)
    r = tost_paired(x, y, -margin, margin)
    p, (t1, p1, d1), (t2, p2, d2) = ttost_paired(x, y, -margin, margin)  # statsmodels 0.15.0
    assert close_t(r.p_value, p) and close_t(r.t_lower, t1) and close_t(r.p_lower, p1)
    assert close_t(r.t_upper, t2) and close_t(r.p_upper, p2) and r.df == d1
    assert r.equivalent == (p < 0.05)


@settings(max_examples=60, deadline=None)
@given(
    nx=st.integers(2, 60),
    ny=st.integers(2, 60),
    seed=st.integers(0, 2**32 - 1),
    equal_var=st.booleans(),
    low=st.floats(-8, 0.5),
    width=st.floats(0.1, 10),
)
def test_ind_matches_statsmodels(nx, ny, seed, equal_var, low, width):
    rng = np.random.default_rng(seed)
    x = rng.normal(70, rng.uniform(0.5, 20), nx)
    y = rng.normal(71, rng.uniform(0.5, 20), ny)
    r = tost_ind(x, y, low, low + width, equal_var=equal_var)
    usevar = "pooled" if equal_var else "unequal"
    p, (t1, p1, d1), (t2, p2, d2) = ttost_ind(x, y, low, low + width, usevar=usevar)  # statsmodels 0.15.0
    assert close_t(r.p_value, p) and close_t(r.t_lower, t1) and close_t(r.p_lower, p1)
    assert close_t(r.t_upper, t2) and close_t(r.p_upper, p2) and close(r.df, d1)


def test_confidence_interval_matches_equivalence_decision():
    rng = np.random.default_rng(3)
    for _ in range(200):
        x = rng.normal(0, 1, 25)
        y = x + rng.normal(rng.uniform(-1, 1), 1, 25)
        r = tost_paired(x, y, -0.5, 0.5, alpha=0.05)
        assert r.equivalent == (r.ci_low > -0.5 and r.ci_high < 0.5)
        # 90% CI of the mean difference = scipy's one-sample t interval
        from scipy import stats

        d = x - y
        lo, hi = stats.t.interval(0.90, len(d) - 1, loc=d.mean(), scale=stats.sem(d))  # scipy 1.17
        assert r.ci_low == pytest.approx(lo, rel=1e-12) and r.ci_high == pytest.approx(hi, rel=1e-12)


# ---------------------------------------------------------------- properties


finite = st.floats(-100, 100, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(
    x=arrays(np.float64, st.integers(2, 30), elements=finite),
    data=st.data(),
    low=st.floats(-20, 0),
    width=st.floats(0.5, 30),
)
def test_properties_paired(x, data, low, width):
    y = data.draw(arrays(np.float64, x.shape, elements=finite))
    high = low + width
    r = tost_paired(x, y, low, high)
    assert r.p_value == max(r.p_lower, r.p_upper)
    s = tost_paired(y, x, -high, -low)
    assert s.p_value == pytest.approx(r.p_value, rel=1e-9, abs=1e-300)
    assert s.equivalent == r.equivalent or abs(r.p_value - 0.05) < 1e-9
    assert s.p_lower == pytest.approx(r.p_upper, rel=1e-9, abs=1e-300)
    assert s.mean_diff == pytest.approx(-r.mean_diff, rel=1e-12, abs=1e-9)
    assert 0.0 <= r.p_value <= 1.0


@settings(max_examples=100, deadline=None)
@given(
    x=arrays(np.float64, st.integers(1, 20), elements=finite),
    y=arrays(np.float64, st.integers(1, 20), elements=finite),
    low=st.floats(-20, 0),
    width=st.floats(0.5, 30),
    equal_var=st.booleans(),
)
def test_properties_ind(x, y, low, width, equal_var):
    high = low + width
    r = tost_ind(x, y, low, high, equal_var=equal_var)
    assert r.p_value == max(r.p_lower, r.p_upper)
    s = tost_ind(y, x, -high, -low, equal_var=equal_var)
    assert s.p_value == pytest.approx(r.p_value, rel=1e-9, abs=1e-300)
    assert s.status == r.status


# ---------------------------------------------------------------- edge cases


def test_all_differences_on_the_margin_is_not_equivalent():
    x, y = np.array([4.0, 5.0, 6.0]), np.array([1.0, 2.0, 3.0])
    r = tost_paired(x, y, -3, 3)
    # (for the record: pingouin 0.7.0 returns p = 0.0 here, i.e. "equivalent"; not a test dependency)
    # statsmodels 0.15.0: ttost_paired(x, y, -3, 3)[0] -> nan
    assert r.status == "zero_variance" and r.p_value == 0.5 and not r.equivalent
    assert r.t_upper == 0.0 and r.p_upper == 0.5 and r.p_lower == 0.0
    assert r.ci_low == r.ci_high == 3.0
    # margins hit exactly even when x - y is not exactly representable in a sum
    r2 = tost_paired([0.3, 0.3, 0.3], [0.2, 0.2, 0.2], -(0.3 - 0.2), 0.3 - 0.2)
    assert r2.p_value == 0.5 and not r2.equivalent


def test_zero_variance_inside_and_outside():
    inside = tost_paired([5.0, 6.0, 7.0], [5.0, 6.0, 7.0], -1, 1)
    assert inside.p_value == 0.0 and inside.equivalent and inside.t_lower == np.inf and inside.t_upper == -np.inf
    outside = tost_paired([9.0, 9.0], [5.0, 5.0], -1, 1)
    assert outside.p_value == 1.0 and not outside.equivalent and outside.p_lower == 0.0 and outside.p_upper == 1.0
    both_const = tost_ind([2.0, 2.0, 2.0], [1.0, 1.0], -1, 1)
    assert both_const.status == "zero_variance" and both_const.p_value == 0.5 and not both_const.equivalent
    welch_const = tost_ind([2.0, 2.0, 2.0], [2.5, 2.5], -1, 1, equal_var=False)
    assert welch_const.status == "zero_variance" and welch_const.equivalent and welch_const.df == 3.0


def test_one_constant_sample_is_an_ordinary_test():
    x, y = np.array([3.0, 3.0, 3.0, 3.0]), np.array([2.0, 3.5, 2.5, 3.1])
    for ev, usevar in ((True, "pooled"), (False, "unequal")):
        r = tost_ind(x, y, -2, 2, equal_var=ev)
        p, (t1, _, d1), _ = ttost_ind(x, y, -2, 2, usevar=usevar)  # statsmodels 0.15.0
        assert r.status == "ok" and close(r.p_value, p) and close(r.df, d1)


def test_too_few_observations():
    r = tost_paired([1.0], [2.0], -3, 3)
    assert r.status == "too_few" and r.p_value == 1.0 and not r.equivalent and np.isnan(r.t_lower)
    assert tost_ind([1.0], [2.0, 3.0], -3, 3).status == "ok"  # pooled: n_x + n_y - 2 = 1 df
    assert tost_ind([1.0], [2.0], -3, 3).status == "too_few"
    assert tost_ind([1.0], [2.0, 3.0], -3, 3, equal_var=False).status == "too_few"
    d = tost_paired([1.0], [2.0], -3, 3).to_dict()
    assert d["t_lower"] is None and d["p_value"] == 1.0


def test_nan_policy():
    x = np.array([1.0, 2.0, np.nan, 4.0, 5.0])
    y = np.array([1.5, 2.0, 3.0, np.nan, 5.5])
    with pytest.raises(DDPDataError, match=r"\[D302\].*index 2.*nan_policy='omit'"):
        tost_paired(x, y, -1, 1)
    r = tost_paired(x, y, -1, 1, nan_policy="omit")
    ref = tost_paired([1.0, 2.0, 5.0], [1.5, 2.0, 5.5], -1, 1)
    assert r.p_value == ref.p_value and r.n == 3 and r.n_omitted == 2
    ri = tost_ind(x, y, -1, 1, nan_policy="omit")
    assert ri.n_x == 4 and ri.n_y == 4
    with pytest.raises(DDPDataError, match="D309"):
        tost_paired([np.nan], [1.0], -1, 1, nan_policy="omit")


def test_bad_input():
    with pytest.raises(DDPDataError, match=r"\[D308\].*len\(x\)=3 and len\(y\)=2"):
        tost_paired([1, 2, 3], [1, 2], -1, 1)
    with pytest.raises(DDPDataError, match="D309"):
        tost_paired([], [], -1, 1)
    with pytest.raises(DDPDataError, match="D309"):
        tost_ind([], [1.0, 2.0], -1, 1)
    with pytest.raises(DDPDataError, match="D312"):
        tost_paired([1.0, np.inf], [1.0, 2.0], -1, 1)
    with pytest.raises(DDPUsageError, match="low < high"):
        tost_paired([1.0, 2.0], [1.0, 2.0], 1, -1)
    with pytest.raises(DDPUsageError, match="alpha"):
        tost_paired([1.0, 2.0], [1.0, 2.0], -1, 1, alpha=0.7)
    with pytest.raises(DDPUsageError, match="nan_policy"):
        tost_paired([1.0, 2.0], [1.0, 2.0], -1, 1, nan_policy="propagate")


def test_signature_and_dict():
    r = tost_paired(X, Y, -3, 3)
    d = r.to_dict()
    assert d["signature"]["method"] == "tost_paired" and d["signature"]["low"] == -3.0
    assert "ddpcore" in d["signature"]
    import json

    json.dumps(d)


# ---------------------------------------------------------------- grouped


def _grouped_frame(seed: int = 0, n_groups: int = 40) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 30, n_groups)
    g = np.repeat(np.arange(n_groups), sizes)
    x = rng.normal(70, 10, g.size)
    y = x + rng.normal(0, 3, g.size) + rng.normal(0, 2, n_groups)[g]
    metric = np.where(g % 2 == 0, "chrF", "ESA")
    order = rng.permutation(g.size)
    return pl.DataFrame({"metric": metric[order], "sys": (g // 2)[order], "x": x[order], "y": y[order]})


def test_grouped_equals_per_group_calls():
    df = _grouped_frame()
    out = tost_grouped(df, ["metric", "sys"], "x", "y", -2, 2)
    assert out.select(["metric", "sys"]).equals(out.select(["metric", "sys"]).sort(["metric", "sys"]))
    for row in out.iter_rows(named=True):
        sub = df.filter((pl.col("metric") == row["metric"]) & (pl.col("sys") == row["sys"]))
        ref = tost_paired(sub["x"].to_numpy(), sub["y"].to_numpy(), -2, 2)
        assert row["n"] == ref.n and row["status"] == ref.status
        assert row["p_value"] == pytest.approx(ref.p_value, rel=1e-12, abs=1e-300)
        assert row["mean_diff"] == pytest.approx(ref.mean_diff, rel=1e-12)
        if ref.n >= 2:
            p, (t1, _, _), _ = ttost_paired(sub["x"].to_numpy(), sub["y"].to_numpy(), -2, 2)  # statsmodels 0.15.0
            assert row["p_value"] == pytest.approx(p, rel=1e-12) and row["t_lower"] == pytest.approx(t1, rel=1e-12)


def test_grouped_independent_equals_per_group_calls():
    df = _grouped_frame(1).with_columns(pl.when(pl.col("x") > 75).then(None).otherwise(pl.col("y")).alias("y"))
    for equal_var in (True, False):
        checked = 0
        out = tost_grouped(df, "sys", "x", "y", -4, 4, paired=False, equal_var=equal_var)
        for row in out.iter_rows(named=True):
            sub = df.filter(pl.col("sys") == row["sys"])
            xs, ys = sub["x"].drop_nulls().to_numpy(), sub["y"].drop_nulls().to_numpy()
            assert row["n_x"] == xs.size and row["n_y"] == ys.size
            if row["status"] == "too_few":
                continue
            ref = tost_ind(xs, ys, -4, 4, equal_var=equal_var)
            assert row["p_value"] == pytest.approx(ref.p_value, rel=1e-12, abs=1e-300)
            assert row["df"] == pytest.approx(ref.df, rel=1e-12)
            if row["status"] == "ok":
                # statsmodels 0.15.0: ttost_ind(xs, ys, -4, 4, usevar="pooled" | "unequal")
                p, (t1, _, d1), (t2, _, _) = ttost_ind(xs, ys, -4, 4, usevar="pooled" if equal_var else "unequal")
                assert row["p_value"] == pytest.approx(p, rel=1e-10, abs=1e-300)
                assert row["t_lower"] == pytest.approx(t1, rel=1e-10) and row["df"] == pytest.approx(d1, rel=1e-10)
                checked += 1
        assert checked >= 10  # most of the 40 groups have enough values for a t test


def test_grouped_edge_groups_and_errors():
    df = pl.DataFrame(
        {
            "g": ["a", "a", "a", "b", "c", "c"],
            "x": [4.0, 5.0, 6.0, 1.0, 1.0, np.nan],
            "y": [1.0, 2.0, 3.0, 1.0, 2.0, 2.0],
        }
    )
    with pytest.raises(DDPDataError, match=r"\[D302\].*row 6"):
        tost_grouped(df, "g", "x", "y", -3, 3)
    out = tost_grouped(df, "g", "x", "y", -3, 3, nan_policy="omit")
    assert out["status"].to_list() == ["zero_variance", "too_few", "too_few"]
    assert out["p_value"].to_list() == [0.5, 1.0, 1.0]
    assert out["equivalent"].to_list() == [False, False, False]
    with pytest.raises(DDPDataError, match=r"\[D301\].*'nope'"):
        tost_grouped(df, "nope", "x", "y", -3, 3)
    with pytest.raises(DDPDataError, match="D309"):
        tost_grouped(df.clear(), "g", "x", "y", -3, 3)
    with pytest.raises(DDPDataError, match="D304"):
        tost_grouped(pl.DataFrame({"g": [None, "a"], "x": [1.0, 2.0], "y": [1.0, 2.0]}), "g", "x", "y", -3, 3)


def test_grouped_accepts_pandas_and_paths(tmp_path):
    df = _grouped_frame(2, 6)
    ref = tost_grouped(df, "sys", "x", "y", -2, 2)
    assert tost_grouped(df.to_pandas(), "sys", "x", "y", -2, 2).equals(ref)
    path = tmp_path / "t.parquet"
    df.write_parquet(path)
    assert tost_grouped(path, "sys", "x", "y", -2, 2).equals(ref)


def test_huge_finite_values_are_refused_not_nan():
    """Issue 7: +-1e308 made mean(x - y) inf and p NaN ("NOT equivalent", exit 0) with a numpy
    RuntimeWarning. Values above 1e100 in magnitude are refused with D360; none of the paths warns."""
    import warnings

    import polars as pl

    from ddpcore.stats import krippendorff_alpha, tost_grouped

    x, y = np.array([1e308, -1e308, 5.0]), np.array([-1e308, 1e308, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DDPDataError, match=r"\[D360\] x\[0\] = 1e\+308 is too large"):
            tost_paired(x, y, -3, 3)
        with pytest.raises(DDPDataError, match=r"\[D360\]"):
            tost_ind(x, y, -3, 3)
        with pytest.raises(DDPDataError, match=r"\[D360\]"):
            tost_grouped(pl.DataFrame({"g": [1, 1, 1], "x": x, "y": y}), ["g"], "x", "y", -3, 3)
        with pytest.raises(DDPDataError, match=r"\[D360\] reliability data\[\(1, 0\)\]"):
            krippendorff_alpha(np.array([[1.0, 2.0, 3.0], [-1e300, 2.0, 3.0]]))
    # up to 1e100 is accepted: a finite p and mean difference
    r = tost_paired([9e99, 9e99 + 1e85, 3.0], [9e99, 9e99, 3.0], -1e90, 1e90)
    assert np.isfinite(r.p_value) and np.isfinite(r.mean_diff)


def test_equivalent_is_p_strictly_below_alpha():
    """``equivalent = p_value < alpha`` (module docstring): at alpha equal to the p-value the test is not
    equivalent, one ulp above it it is (a planted ``<=`` passed every other test)."""
    x = np.array([0.3, -0.2, 0.5, 0.1, -0.4, 0.2, 0.0, 0.6, -0.1, 0.3])
    y = np.zeros_like(x)
    p = tost_paired(x, y, -0.5, 0.5).p_value
    assert 0.0 < p < 0.5
    assert tost_paired(x, y, -0.5, 0.5, alpha=p).equivalent is False
    assert tost_paired(x, y, -0.5, 0.5, alpha=float(np.nextafter(p, 1.0))).equivalent is True
