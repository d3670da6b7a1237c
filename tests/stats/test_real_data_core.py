"""The statistics core on real ESA data (ESA-1 vs ESA-2, WMT23 en-de), checked against the peers.

The full data (``../shared/data``, marked ``shared_data``) and the vendored mini subset in
``tests/data/stats-real`` (8 documents, 312 items per condition; see its SOURCE.md) are both used.
"""
from __future__ import annotations

from pathlib import Path

import krippendorff
import numpy as np
import polars as pl
import pytest
from scipy import stats
from statsmodels.stats.weightstats import ttost_paired

from ddpcore.stats._table import load_long_table, pair_conditions
from ddpcore.stats.agreement import krippendorff_alpha, reliability_matrix
from ddpcore.stats.bootstrap import bootstrap_tau
from ddpcore.stats.tost import tost_paired
from ddpcore.stats import ResampleOptions

ESA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "esa-wmt23-ende"
MINI = Path(__file__).resolve().parents[1] / "data" / "stats-real" / "esa-wmt23-ende-mini"


def test_mini_fixture_against_peers():
    from ddpcore.io.esa import read_esa_wmt23

    df = load_long_table(read_esa_wmt23(MINI))
    pairs = pair_conditions(df, "ESA-1", "ESA-2", annotator=False)
    assert pairs.height == 312  # tests/data/stats-real/SOURCE.md: 312 items per condition
    x, y = pairs["score_a"].to_numpy(), pairs["score_b"].to_numpy()
    r = tost_paired(x, y, -3, 3)
    p, (t1, _, _), (t2, _, _) = ttost_paired(x, y, -3, 3)  # statsmodels 0.15.0
    assert r.p_value == pytest.approx(p, rel=1e-12) and r.t_upper == pytest.approx(t2, rel=1e-12)
    res = bootstrap_tau(df, "ESA-1", "ESA-2", options=ResampleOptions(n_boot=500, seed=1))
    means = df.group_by(["condition", "system"]).agg(pl.col("score").mean()).sort("system")
    ref = stats.kendalltau(  # scipy 1.17
        means.filter(pl.col("condition") == "ESA-1")["score"].to_numpy(),
        means.filter(pl.col("condition") == "ESA-2")["score"].to_numpy(),
    )
    assert res.tau == ref.statistic and res.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    rm = reliability_matrix(df, unit=("document_id", "segment_id", "system"), coder="condition")
    ref_alpha = krippendorff.alpha(reliability_data=rm.matrix, level_of_measurement="interval")  # krippendorff 0.9.0
    assert krippendorff_alpha(rm).alpha == pytest.approx(ref_alpha, abs=1e-12)


@pytest.fixture(scope="module")
def esa() -> pl.DataFrame:
    if not ESA.is_dir():
        pytest.skip(f"{ESA} is absent (shared data only on the dev machines)")
    from ddpcore.io.esa import read_esa_wmt23

    return load_long_table(read_esa_wmt23(ESA))


@pytest.mark.shared_data
def test_paired_tost_matches_statsmodels(esa):
    pairs = pair_conditions(esa, "ESA-1", "ESA-2", annotator=False)
    assert pairs.height == 2691  # SOURCE.md: the same 2,691 items in both protocols
    x, y = pairs["score_a"].to_numpy(), pairs["score_b"].to_numpy()
    r = tost_paired(x, y, -3, 3)
    p, (t1, _, _), (t2, _, _) = ttost_paired(x, y, -3, 3)  # statsmodels 0.15.0
    assert r.p_value == pytest.approx(p, rel=1e-12) and r.t_lower == pytest.approx(t1, rel=1e-12)
    assert not r.equivalent  # ESA-2 scores ~2.7 points higher; the 90 % CI reaches beyond -3


@pytest.mark.shared_data
def test_tau_and_alpha_match_peers(esa):
    res = bootstrap_tau(esa, "ESA-1", "ESA-2", options=ResampleOptions(n_boot=2000, seed=0))
    means = esa.group_by(["condition", "system"]).agg(pl.col("score").mean()).sort("system")
    a = means.filter(pl.col("condition") == "ESA-1")["score"].to_numpy()
    b = means.filter(pl.col("condition") == "ESA-2")["score"].to_numpy()
    ref = stats.kendalltau(a, b)  # scipy 1.17
    assert res.tau == ref.statistic and res.n_units == 71 and len(res.systems) == 13
    assert res.ci_low <= res.tau <= res.ci_high
    # segment unit: integer ESA scores, V <= 101 distinct values, so the package's
    # (units x V x V) arrays stay small on the first 1,000 units (~80 MB each)
    rm = reliability_matrix(esa, unit=("document_id", "segment_id", "system"), coder="condition")
    sub = rm.matrix[:, :1000]
    ref_alpha = krippendorff.alpha(reliability_data=sub, level_of_measurement="interval")  # krippendorff 0.9.0
    assert krippendorff_alpha(sub).alpha == pytest.approx(ref_alpha, abs=1e-12)
    assert np.isfinite(ref_alpha)
    # document unit (averaged scores, 453 distinct values: the package would need ~1.5 GB per array)
    doc = krippendorff_alpha(reliability_matrix(esa, unit=("document_id", "system"), coder="condition"))
    assert doc.n_units == 923 and 0 < doc.alpha < 1
