"""Tests written to kill mutants of ``tests/mutants.py`` that the rest of the suite let through.

Each expected value is computed independently of the code under test (``statistics``/``scipy``
on hand-built replicates, or written out by hand), with the source beside it.
"""
from __future__ import annotations

import statistics

import numpy as np
import polars as pl
import pytest
from scipy import stats

from ddpcore.stats.bootstrap import bootstrap_tau
from ddpcore.stats import ResampleOptions

# 4 documents x 4 systems x 2 conditions, one segment per (document, system, condition).
# Scores chosen so that system means tie in some replicates (tau-b and tau-a then differ).
_SCORES = {
    # condition "a": per document, the scores of systems s0..s3
    "a": [[1, 2, 3, 4], [2, 2, 3, 3], [4, 1, 1, 2], [0, 3, 2, 2]],
    "b": [[2, 1, 3, 3], [1, 2, 2, 4], [3, 3, 1, 0], [1, 1, 4, 2]],
}
_SYSTEMS = ["s0", "s1", "s2", "s3"]
# replicate draws of the 4 documents (rows = replicates), written by hand
_INDICES = np.array([
    [0, 1, 2, 3],
    [0, 0, 1, 1],
    [2, 2, 3, 3],
    [0, 2, 2, 1],
    [3, 3, 3, 0],
    [1, 1, 1, 1],
    [0, 3, 1, 2],
    [2, 1, 0, 0],
])


def _table() -> pl.DataFrame:
    rows = []
    for cond, per_doc in _SCORES.items():
        for d, scores in enumerate(per_doc):
            for s, v in zip(_SYSTEMS, scores):
                rows.append({"document_id": f"d{d}", "segment_id": 0, "system": s, "condition": cond,
                             "score": float(v)})
    return pl.DataFrame(rows)


def _reference_replicates() -> list[float]:
    """tau-b per replicate from first principles: system means over the drawn documents (one
    segment per document and system, so segment weighting = plain mean), scipy.stats.kendalltau
    (tau-b, scipy's default variant)."""
    out = []
    for draw in _INDICES:
        means = {c: [statistics.fmean(_SCORES[c][d][s] for d in draw) for s in range(4)] for c in ("a", "b")}
        tau = stats.kendalltau(means["a"], means["b"]).statistic
        out.append(float(tau))
    return out


def test_bootstrap_tau_replicates_are_tau_b_with_ties():
    # kills M08 (tie correction dropped in the tau_b_rows kernel): at least one replicate has tied
    # system means, where tau-a = (C - D) / 6 differs from tau-b = (C - D) / sqrt((6 - tx)(6 - ty))
    ref = _reference_replicates()
    res = bootstrap_tau(_table(), "a", "b", tau_min=0.5, options=ResampleOptions(indices=_INDICES))
    got = res.replicates
    ok = [i for i, r in enumerate(ref) if np.isfinite(r)]
    assert len(ok) >= 5
    # a replicate with ties in the means, checked by hand: replicate 0 (all documents) gives
    # means a = (7/4, 2, 9/4, 11/4), b = (7/4, 7/4, 10/4, 9/4): b ties s0/s1 (t_y = 1);
    # concordant pairs 4 (s0s2 s0s3 s1s2 s1s3), discordant 1 (s2s3), tau-b = 3 / sqrt(6 * 5)
    assert np.isclose(ref[0], 3 / np.sqrt(30))
    assert np.isclose(got[0], 3 / np.sqrt(30))
    np.testing.assert_allclose(got[ok], np.array(ref)[ok], rtol=0, atol=1e-12)


def test_replicate_sd_is_the_sample_sd():
    # kills M04 (std(ddof=1) -> std()): replicate_sd is the n - 1 standard deviation of the
    # defined replicates (statistics.stdev is the sample SD, n - 1 in the denominator)
    ref = [r for r in _reference_replicates() if np.isfinite(r)]
    res = bootstrap_tau(_table(), "a", "b", options=ResampleOptions(indices=_INDICES))
    assert res.replicate_sd == np.float64(statistics.stdev(ref)) or np.isclose(
        res.replicate_sd, statistics.stdev(ref), rtol=1e-12, atol=0)
    assert not np.isclose(statistics.stdev(ref), statistics.pstdev(ref))  # the two really differ here
    assert np.isclose(res.replicate_mean, statistics.fmean(ref), rtol=1e-12)


@pytest.mark.spacy_model
def test_entity_key_drops_a_leading_the(nlp):
    # kills M07 (rules.drop_leading emptied): README "The DDP definition" — the entity key is the
    # case-folded text without a leading "the". Parse (en_core_web_sm 3.8.0, checked by hand):
    # sentence 0 "The United Nations met in May." has ORG "The United Nations" ("The" inside the
    # span), sentence 1 "Later, United Nations officials left." has ORG "United Nations".
    # Both keys are "united nations": one entity, second mention at distance 1 - 0 = 1.
    from ddpcore.api import profile_anchors

    text = "The United Nations met in May. Later, United Nations officials left."
    df = pl.DataFrame({"document_id": ["d"], "segment_id": [0], "source": [text]})
    r = profile_anchors(df, nlp=nlp)
    ents = r.anchors.filter(pl.col("kind") == "entity")
    assert ents["text"].to_list() == ["The United Nations", "United Nations"]
    assert ents["entity_id"].n_unique() == 1
    assert ents["distance_sentences"].to_list() == [-1, 1]
    assert r.segments["ddp"].to_list() == [1]


# --------------------------------------------------------------------------- issue 19: boundaries (M16-M18)


def test_spearman_on_exactly_two_pairs_matches_scipy():
    # M16 (n < 2 -> n <= 2): two pairs are the smallest valid input. scipy.stats.spearmanr gives
    # rho = +-1 (0.9999999999999999 by its product-moment arithmetic) and p = NaN (0 degrees of freedom)
    from ddpcore.errors import DDPDataError
    from ddpcore.stats import spearman

    for y in ([3.0, 5.0], [5.0, 3.0]):
        ref = stats.spearmanr([1.0, 2.0], y)
        res = spearman([1.0, 2.0], y)
        assert res.n == 2
        assert res.statistic == pytest.approx(float(ref.statistic), abs=1e-15)
        assert np.isnan(res.p_value) and np.isnan(ref.pvalue)
    with pytest.raises(DDPDataError, match=r"\[D309\].*at least 2 pairs, got 1"):
        spearman([1.0], [2.0])


def test_tost_n_needed_refuses_power_one_and_accepts_just_below():
    # M17 (0 < power < 1 -> 0 < power <= 1): power 1 is never reached by a finite sample
    from ddpcore.errors import DDPUsageError
    from ddpcore.stats.power import tost_n_needed, tost_power

    for bad in (1.0, 0.0, 1.5):
        with pytest.raises(DDPUsageError, match=r"\[D520\].*power must be in \(0, 1\)"):
            tost_n_needed(1.0, -0.5, 0.5, power=bad)
    n = tost_n_needed(1.0, -0.5, 0.5, power=0.999)
    # the smallest n: its power reaches 0.999, n - 1's does not (tost_power is checked against
    # the exact TOST power integral elsewhere, tests/stats/test_power.py)
    assert tost_power(n, 1.0, -0.5, 0.5) >= 0.999 > tost_power(n - 1, 1.0, -0.5, 0.5)


def test_timing_refuses_max_gap_zero_and_accepts_a_tiny_positive_gap():
    # M18 (max_gap > 0 -> max_gap >= 0): a zero gap limit would drop every gap silently
    from ddpcore.errors import DDPUsageError
    from ddpcore.stats.timing import annotation_time_per_segment

    df = pl.DataFrame({"task_id": ["t", "t", "t", "u", "u"], "segment_id": [0, 1, 1, 0, 0],
                       "timestamp": [0.0, 0.5, 2.5, 10.0, 10.0]})
    for bad in (0, 0.0, -1.0):
        with pytest.raises(DDPUsageError, match=r"\[D311\].*max_gap must be positive"):
            annotation_time_per_segment(df, max_gap=bad)
    out = annotation_time_per_segment(df, max_gap=1.0).sort("task_id")
    # by hand: task t gaps 0.5 (kept) and 2.0 (dropped) over 2 segments; task u one gap of 0 s
    assert out["active_seconds"].to_list() == [0.5, 0.0]
    assert out["n_gaps_dropped"].to_list() == [1, 0]
    tiny = annotation_time_per_segment(df, max_gap=1e-9).sort("task_id")
    assert tiny["n_gaps_dropped"].to_list() == [2, 0] and tiny["active_seconds"].to_list() == [0.0, 0.0]
