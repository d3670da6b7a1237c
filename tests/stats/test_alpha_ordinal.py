"""Ordinal Krippendorff alpha and the unit bootstrap, against the krippendorff package and R irr."""
from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore.errors import DDPUsageError
from ddpcore.stats import krippendorff_alpha, krippendorff_alpha_bootstrap

NAN = np.nan
# Krippendorff's 4 observers x 12 units example, as in R irr's ?kripp.alpha:
#   nmm <- matrix(c(1,1,NA,1,2,2,3,2,3,3,3,3,3,3,3,3,2,2,2,2,1,2,3,4,4,4,4,4,
#                   1,1,2,1,2,2,2,2,NA,5,5,5,NA,NA,1,1,NA,NA,3,NA), nrow=4)
# (filled column by column: each group of 4 is one unit)
NMM = np.array([1, 1, NAN, 1, 2, 2, 3, 2, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 1, 2, 3, 4, 4, 4, 4, 4,
                1, 1, 2, 1, 2, 2, 2, 2, NAN, 5, 5, 5, NAN, NAN, 1, 1, NAN, NAN, 3, NAN]).reshape(12, 4).T


def test_irr_example():
    # R irr documentation / Krippendorff (2011, "Computing Krippendorff's alpha-reliability"):
    # kripp.alpha(nmm) nominal 0.743, kripp.alpha(nmm, "ordinal") 0.815, "interval" 0.849, "ratio" 0.797
    for level, r_value in (("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)):
        a = krippendorff_alpha(NMM, level).alpha  # type: ignore[arg-type]
        assert round(a, 3) == r_value
        # krippendorff 0.9.0: alpha(reliability_data=NMM, level_of_measurement=level)
        assert a == pytest.approx(krippendorff.alpha(reliability_data=NMM, level_of_measurement=level), rel=1e-12)
    # krippendorff 0.9.0 ordinal: 0.8153875037548814
    assert krippendorff_alpha(NMM, "ordinal").alpha == pytest.approx(0.8153875037548814, rel=1e-13)


def test_ordinal_hand():
    # 2 coders x 3 units: (1,1), (1,2), (3,3); pairable values 1,1,1,2,3,3 -> n_1=3, n_2=1, n_3=2, n=6.
    # ordinal delta(c,k) = (sum_{g=c..k} n_g - (n_c+n_k)/2)^2: d(1,2) = (4 - 2)^2 = 4,
    # d(1,3) = (6 - 2.5)^2 = 12.25, d(2,3) = (3 - 1.5)^2 = 2.25.
    # D_o = (1/n) sum_u 1/(m_u-1) sum_{i!=j} d = (1/6) * (2 * 4) = 4/3
    # D_e = 1/(n(n-1)) * 2 * (n_1 n_2 d12 + n_1 n_3 d13 + n_2 n_3 d23) = 2*(12 + 73.5 + 4.5)/30 = 6
    # alpha = 1 - (4/3)/6 = 7/9
    r = krippendorff_alpha([[1, 1, 3], [1, 2, 3]], "ordinal")
    assert r.alpha == pytest.approx(7 / 9, rel=1e-14)
    assert r.d_observed == pytest.approx(4 / 3, rel=1e-14) and r.d_expected == pytest.approx(6.0, rel=1e-14)


@settings(max_examples=80, deadline=None)
@given(coders=st.integers(2, 5), units=st.integers(2, 30), levels=st.integers(2, 7), seed=st.integers(0, 2**32 - 1))
def test_ordinal_matches_krippendorff(coders, units, levels, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, levels, (coders, units)).astype(float) * 1.5 - 2  # non-consecutive values
    x[rng.random(x.shape) < 0.25] = NAN
    pairable = (~np.isnan(x)).sum(axis=0) >= 2
    vals = x[:, pairable][~np.isnan(x[:, pairable])]
    if not pairable.any() or np.unique(vals).size < 2:
        return
    ours = krippendorff_alpha(x, "ordinal").alpha
    ref = krippendorff.alpha(reliability_data=x, level_of_measurement="ordinal")
    assert ours == pytest.approx(ref, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("level", ["interval", "nominal", "ordinal"])
def test_bootstrap_replicates_equal_naive_loop(level):
    # oracle: the same unit draws (default_rng(seed).integers(0, U, (n_boot, U)), one block), each
    # resample scored by the krippendorff package
    n_boot, seed = 60, 11
    r = krippendorff_alpha_bootstrap(NMM, level, n_boot=n_boot, seed=seed)
    pairable = (~np.isnan(NMM)).sum(axis=0) >= 2
    xp = NMM[:, pairable]
    draws = np.random.default_rng(seed).integers(0, xp.shape[1], size=(n_boot, xp.shape[1]))
    expected = []
    for row in draws:
        sample = xp[:, row]
        vals = sample[~np.isnan(sample)]
        expected.append(np.nan if np.unique(vals).size < 2 else
                        krippendorff.alpha(reliability_data=sample, level_of_measurement=level))
    np.testing.assert_allclose(r.replicates, expected, rtol=1e-9, atol=1e-12)
    ok = np.asarray(expected)[~np.isnan(expected)]
    assert r.n_undefined == n_boot - ok.size
    assert r.ci_low == pytest.approx(np.quantile(ok, 0.025)) and r.ci_high == pytest.approx(np.quantile(ok, 0.975))
    assert r.p_below["0.8"] == pytest.approx(np.mean(ok < 0.8))
    assert r.alpha == krippendorff_alpha(NMM, level).alpha  # type: ignore[arg-type]


def test_bootstrap_seeded_and_blocked(monkeypatch):
    rng = np.random.default_rng(5)
    truth = rng.integers(1, 6, 400).astype(float)
    x = np.vstack([np.clip(truth + rng.integers(-1, 2, 400), 1, 5) for _ in range(3)])
    a = krippendorff_alpha_bootstrap(x, "ordinal", n_boot=300, seed=3)
    b = krippendorff_alpha_bootstrap(x, "ordinal", n_boot=300, seed=3)
    c = krippendorff_alpha_bootstrap(x, "ordinal", n_boot=300, seed=4)
    np.testing.assert_array_equal(a.replicates, b.replicates)
    assert not np.array_equal(a.replicates, c.replicates)
    assert a.ci_low < a.alpha < a.ci_high
    # blocks of 7 replicates consume the generator in the same order -> identical replicates
    import ddpcore.stats.alpha_bootstrap as mod

    monkeypatch.setattr(mod, "BLOCK_CELLS", 7 * 400)
    d = krippendorff_alpha_bootstrap(x, "ordinal", n_boot=300, seed=3)
    np.testing.assert_allclose(d.replicates, a.replicates, rtol=1e-12)


def test_bootstrap_errors():
    with pytest.raises(DDPUsageError, match="D543"):
        krippendorff_alpha_bootstrap(NMM, "ratio", n_boot=10)
    with pytest.raises(DDPUsageError, match="D311"):
        krippendorff_alpha_bootstrap(NMM, "interval", n_boot=0)
