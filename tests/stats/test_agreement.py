"""Krippendorff's alpha vs the krippendorff package and the pairwise definition; matrices; z-scores."""
from __future__ import annotations

import krippendorff
import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from stats_oracles import krippendorff_interval_pairs, synthetic_long_table

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.stats.agreement import krippendorff_alpha, reliability_matrix, znormalize

NAN = np.nan
# the krippendorff package's docstring example (Krippendorff 2011, reliability data with gaps)
EXAMPLE = [
    [NAN, NAN, NAN, NAN, NAN, 3, 4, 1, 2, 1, 1, 3, 3, NAN, 3],
    [1, NAN, 2, 1, 3, 3, 4, 3, NAN, NAN, NAN, NAN, NAN, NAN, NAN],
    [NAN, NAN, 2, 1, 3, 4, 4, NAN, 2, 1, 1, 3, 3, NAN, 4],
]


def _interval_disagreements(data):
    """(D_o, D_e) of Krippendorff (2011), interval: D_o = (1/n) sum_u 1/(m_u - 1) sum_{i != j in u}
    (v_i - v_j)^2, D_e = 1/(n (n - 1)) sum_{i != j over all pairable values} (v_i - v_j)^2."""
    units = [[v for v in data[:, u] if not np.isnan(v)] for u in range(data.shape[1])]
    units = [vals for vals in units if len(vals) >= 2]
    pooled = [v for vals in units for v in vals]
    n = len(pooled)
    d_o = sum(sum((a - b) ** 2 for i, a in enumerate(vals) for j, b in enumerate(vals) if i != j) / (len(vals) - 1)
              for vals in units) / n
    d_e = sum((a - b) ** 2 for i, a in enumerate(pooled) for j, b in enumerate(pooled) if i != j) / (n * (n - 1))
    return d_o, d_e


def test_reference_values():
    # krippendorff 0.9.0: krippendorff.alpha(reliability_data=EXAMPLE, level_of_measurement="interval")
    # -> 0.8108448928121059 ; "nominal" -> 0.691358024691358 ; "ratio" -> 0.8089436707842471
    assert krippendorff_alpha(EXAMPLE, "interval").alpha == pytest.approx(0.8108448928121059, abs=1e-12)
    assert krippendorff_alpha(EXAMPLE, "nominal").alpha == pytest.approx(0.691358024691358, abs=1e-12)
    assert krippendorff_alpha(EXAMPLE, "ratio").alpha == pytest.approx(0.8089436707842471, abs=1e-12)
    r = krippendorff_alpha(EXAMPLE)
    assert r.n_pairable_units == 12 and r.n_pairable_values == 26  # counted by hand from EXAMPLE
    assert r.n_coders == 3 and r.n_units == 15  # the shape of EXAMPLE: 3 rows (coders), 15 columns (units)
    # D_o and D_e from the pairwise definition (Krippendorff 2011, interval metric), by a slow loop over EXAMPLE
    d_o, d_e = _interval_disagreements(np.array(EXAMPLE))
    assert r.d_observed == pytest.approx(d_o, abs=1e-12) and r.d_expected == pytest.approx(d_e, abs=1e-12)
    assert r.to_dict()["signature"]["level"] == "interval"


@settings(max_examples=120, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    coders=st.integers(2, 6),
    units=st.integers(2, 40),
    missing=st.floats(0, 0.6),
    discrete=st.booleans(),
    level=st.sampled_from(["interval", "nominal", "ratio"]),
)
def test_matches_krippendorff_package(seed, coders, units, missing, discrete, level):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, (coders, units)).astype(float) if discrete else np.round(rng.normal(50, 15, (coders, units)), 2)
    x[rng.random(x.shape) < missing] = np.nan
    try:
        with np.errstate(invalid="ignore", divide="ignore"):
            ref = krippendorff.alpha(reliability_data=x, level_of_measurement=level)  # krippendorff 0.9.0
    except ValueError:
        ref = np.nan  # the package raises when fewer than two values or no pairable unit
    if np.isnan(ref):  # ... and returns NaN (0/0) when all *pairable* values are equal
        with pytest.raises(DDPDataError, match="D314"):
            krippendorff_alpha(x, level)
        return
    assert krippendorff_alpha(x, level).alpha == pytest.approx(ref, abs=1e-12)


def test_matches_pairwise_definition_on_continuous_scores():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 30)) + rng.normal(size=30)
    x[rng.random(x.shape) < 0.3] = np.nan
    assert krippendorff_alpha(x).alpha == pytest.approx(krippendorff_interval_pairs(x), abs=1e-12)


def test_large_continuous_input_runs():
    rng = np.random.default_rng(2)
    truth = rng.normal(size=200_000)
    x = truth + rng.normal(scale=1.0, size=(2, 200_000))
    r = krippendorff_alpha(x)
    # two coders = truth + independent unit-variance noise: alpha estimates var(truth)/var(total) = 0.5
    assert r.alpha == pytest.approx(0.5, abs=0.01) and r.n_pairable_values == 400_000


def test_undefined_and_bad_input():
    with pytest.raises(DDPDataError, match=r"\[D314\].*two or more coders"):
        krippendorff_alpha([[1.0, NAN], [NAN, 2.0]])
    with pytest.raises(DDPDataError, match=r"\[D314\].*identical"):
        krippendorff_alpha([[3.0, 3.0], [3.0, 3.0]])
    with pytest.raises(DDPDataError, match="D314"):
        krippendorff_alpha([1.0, 2.0, 3.0])
    with pytest.raises(DDPDataError, match="D303"):
        krippendorff_alpha([["a", "b"], ["c", "d"]])
    with pytest.raises(DDPUsageError, match="level"):
        krippendorff_alpha(EXAMPLE, "circular")  # ordinal is supported since issue 10


def test_reliability_matrix_document_and_segment_units():
    df = synthetic_long_table(seed=3, n_docs=4, n_systems=3, annotators=3).filter(pl.col("condition") == "DOC")
    doc = reliability_matrix(df, unit=("document_id", "system"))
    seg = reliability_matrix(df, unit=("document_id", "segment_id", "system"))
    assert doc.matrix.shape == (3, 4 * 3) and doc.coders == ["ann0", "ann1", "ann2"]
    assert seg.matrix.shape[1] == df.select(["document_id", "segment_id", "system"]).unique().height
    # document unit = each annotator's mean over the unit's segments
    first = doc.units.row(0, named=True)
    expected = df.filter(
        (pl.col("annotator") == "ann1") & (pl.col("document_id") == first["document_id"]) & (pl.col("system") == first["system"])
    )["score"].mean()
    assert doc.matrix[1, 0] == pytest.approx(expected, rel=1e-14)
    # the whole pipeline equals the krippendorff package on the same matrix
    ref = krippendorff.alpha(reliability_data=seg.matrix, level_of_measurement="interval")  # krippendorff 0.9.0
    assert krippendorff_alpha(seg).alpha == pytest.approx(ref, abs=1e-12)
    with pytest.raises(DDPDataError, match="D307"):
        reliability_matrix(pl.concat([df, df]), unit=("document_id", "segment_id", "system"), aggregate=None)
    with pytest.raises(DDPDataError, match=r"D301.*'rater'"):
        reliability_matrix(df, coder="rater")


def test_znormalize():
    df = synthetic_long_table(seed=5, n_docs=3, n_systems=2, annotators=2)
    z = znormalize(df)
    for ann in ("ann0", "ann1"):
        raw = df.filter(pl.col("annotator") == ann)["score"].to_numpy()
        got = z.filter(pl.col("annotator") == ann)["score"].to_numpy()
        assert np.allclose(got, stats.zscore(raw), rtol=1e-12, atol=1e-12)  # scipy 1.17 zscore (ddof=0)
    assert z.columns == df.columns and z.height == df.height
    const = pl.DataFrame({"annotator": ["a", "a", "b", "b"], "score": [1.0, 2.0, 5.0, 5.0]})
    with pytest.raises(DDPDataError, match=r"D318.*annotator='b'"):
        znormalize(const)
    assert znormalize(const, on_constant="zero")["score"].to_list() == [-1.0, 1.0, 0.0, 0.0]
