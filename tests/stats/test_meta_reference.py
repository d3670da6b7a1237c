"""``ddp meta`` against the expected values of google-research/mt-metrics-eval's own tests.

Each expected value names the test it was ported from (repository google-research/mt-metrics-eval,
files ``mt_metrics_eval/stats_test.py`` at commit 38882cc9d61d0ded5a656c60b7272700192bdfde and
``mt_metrics_eval/tau_optimization_test.py`` at 0b82d96b9a75ac392ddc44587fff2acae2c3c63e, read with the
code-search tool; their code is not copied). mt-metrics-eval's ``Correlation(num_sys, gold, metric)``
packs a (systems x items) matrix row by row, so item j of system s is entry ``s * num_items + j``.
"""
from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import scipy.stats

from ddpcore.stats.meta import (MetaTests, acc_eq_at, acc_eq_none, item_statistics, meta_evaluate,
                                pairwise_accuracy, _keep_bits)
from ddpcore.stats.options import ResampleOptions
from oracles import meta_oracle as O


def packed_frames(num_sys: int, gold: list, metrics: dict[str, list], one_doc_per_item: bool = True):
    """Profile and scores of an mt-metrics-eval packed vector (None = missing human score)."""
    n_items = len(gold) // num_sys
    rows = []
    for s in range(num_sys):
        for j in range(n_items):
            i = s * n_items + j
            rows.append({"document_id": f"d{j:02d}" if one_doc_per_item else "d", "segment_id": j if not one_doc_per_item else 0,
                         "system": f"s{s}", "human": None if gold[i] is None else float(gold[i]),
                         **{k: (None if v[i] is None else float(v[i])) for k, v in metrics.items()}})
    scores = pl.DataFrame(rows)
    prof = scores.select("document_id", "segment_id").unique().with_columns(pl.lit(0).alias("ddp"))
    return prof, scores


def run(prof, scores, **kw):
    return meta_evaluate(prof, scores, human_col="human", bins=[0, math.inf],
                         options=ResampleOptions(n_boot=kw.pop("n_boot", 0), seed=kw.pop("seed", 0)),
                         tests=MetaTests(**{"n_perm": 0, "spa_perm": 0, **kw}))


def test_kendall_variants_stats_test():
    # stats_test.py CorrelationTest.testKendallVariants: Correlation(1, [1, 2, 2, 3, 4], [2, 1, 1.5, 5, 3])
    g, m = [1, 2, 2, 3, 4], [2, 1, 1.5, 5, 3]
    one = item_statistics([g], [m], np.ones((1, 5), dtype=bool))
    assert one["tau_b"][0] == pytest.approx(0.316227766)  # variant='b'
    assert acc_eq_at(g, m) == 0.6                       # variant='acc23'
    assert acc_eq_at(g, m, epsilon=2) == 0.4            # variant='acc23', epsilon=2
    # stats_test.py CorrelationTest.testKendallWithTiesOpt: KendallWithTiesOpt(acc23, sample_rate=1.0) = 0.7
    assert acc_eq_none(np.array(g, float), np.array(m, float))[0] == 0.7


def test_kendall_variants_23_counts():
    # stats_test.py CorrelationFunctionsTest.testKendallVariants_23 / ...WithPositiveEpsilon: x = gold, y = metric;
    # their counts: epsilon 0 -> concordant 13, ties_both 1 of 21 pairs; epsilon 1 -> concordant 7, ties_both 3
    x = [1, 1, 1, 2, 2, 3, 4]
    y = [1, 1, 2, 2, 4, 3, 3]
    assert acc_eq_at(x, y) == (13 + 1) / 21
    assert acc_eq_at(x, y, epsilon=0.1) == (13 + 1) / 21
    assert acc_eq_at(x, y, epsilon=1.0) == (7 + 3) / 21
    assert O.acc23(x, y, 1.0) == (7 + 3) / 21


def test_tau_optimization_tests():
    # tau_optimization_test.py test_zero_threshold_is_best: metric [0, 2, 6, 8], human [1, 2, 3, 4] -> 0, 1.0
    assert acc_eq_none(np.array([1, 2, 3, 4.0]), np.array([0, 2, 6, 8.0])) == (1.0, 0.0)
    # test_nonzero_threshold_is_best: human [1, 1, 1, 4] -> best threshold 4, best tau 4/6
    best, eps = acc_eq_none(np.array([1, 1, 1, 4.0]), np.array([0, 2, 6, 8.0]))
    assert (best, eps) == (4 / 6, 4.0)


def test_tau_optimization_regression_example_by_item():
    # tau_optimization_test.py test_regression_example: rows of the 5 x 5 matrices are averaged over (their
    # tau_optimization averages row-wise; here a row = a segment, columns = systems); None entries filtered.
    # expected best_threshold 1, best_tau 0.4916666666666668
    metric = [[0, 5, 2, 3, 2], [None, 2, 1, 5, 3], [9, 1, 5, 3, 8], [9, 3, 4, 4, 1], [None] * 5]
    human = [[1, 5, 2, 1, 1], [4, 2, 2, 1, 4], [5, 9, 2, 8, 7], [7, 6, None, 3, 2], [None] * 5]
    rows = []
    for i in range(5):
        for s in range(5):
            rows.append({"document_id": f"d{i}", "segment_id": 0, "system": f"s{s}",
                         "human": None if human[i][s] is None else float(human[i][s]),
                         "m": None if metric[i][s] is None else float(metric[i][s])})
    scores = pl.DataFrame(rows)
    prof = scores.select("document_id", "segment_id").unique().with_columns(pl.lit(0).alias("ddp"))
    res = run(prof, scores)
    f = res.overall["metrics"]["m"]["acc_eq.item"]
    assert f["epsilon"] == 1.0
    assert f["value"] == pytest.approx(0.4916666666666668, abs=1e-15)
    # the two cells with a metric None (and a human score) are left out and said so
    assert any("missing metric score" in w for w in res.warnings)


def test_agreement_stats_test():
    # stats_test.py CorrelationFunctionsTest.testAgreement: gold [1, 2, 3, 3, 4], metric [1, 1, 2, 1, 2] -> 5 of 10
    assert pairwise_accuracy([1, 2, 3, 3, 4], [1, 1, 2, 1, 2]) == 0.5


def test_pearson_kendall_none_and_item_correlation_test():
    # stats_test.py CorrelationTest.testPearson / testKendall: Correlation(2, [1..6], [2, 1, 4, 3, 3, 7]):
    # none: Pearson 0.776, Kendall 0.552 (places=3); item: 1.00 and 1.00
    prof, scores = packed_frames(2, [1, 2, 3, 4, 5, 6], {"m": [2, 1, 4, 3, 3, 7]})
    f = run(prof, scores).overall["metrics"]["m"]
    assert f["pearson.none"]["value"] == pytest.approx(0.776, abs=5e-4)
    assert f["tau_b.none"]["value"] == pytest.approx(0.552, abs=5e-4)
    assert f["pearson.item"]["value"] == pytest.approx(1.0)
    assert f["tau_b.item"]["value"] == pytest.approx(1.0)
    # and scipy (1.x) on the same vectors
    assert f["pearson.none"]["value"] == pytest.approx(scipy.stats.pearsonr([1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 3, 7])[0])
    assert f["tau_b.none"]["value"] == pytest.approx(scipy.stats.kendalltau([1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 3, 7])[0])


def test_item_average_with_missing_entries():
    # stats_test.py AverageCorrelationTest.testAverageByItemWithMissingEntries: g [1, None, 3, 4, 5, 6],
    # m [2, 1, 8, 3, 5, 6], num_sys 2, item: mean of pearson([1, 4], [2, 3]) and pearson([3, 6], [8, 6])
    prof, scores = packed_frames(2, [1, None, 3, 4, 5, 6], {"m": [2, 1, 8, 3, 5, 6]})
    res = run(prof, scores)
    f = res.overall["metrics"]["m"]["pearson.item"]
    exp = (scipy.stats.pearsonr([1, 4], [2, 3])[0] + scipy.stats.pearsonr([3, 6], [8, 6])[0]) / 2
    assert f["value"] == pytest.approx(exp)
    assert f["n"] == 2 and f["n_undefined_items"] == 0
    assert res.overall["n_human_missing"] == 1  # counted, not read as 0


PERM_GOLD = [1, 2, 3, 4, 5, 5, 7, 8]
PERM_M1 = [1, 2, 3, 3, 7, 3, 5, 5]
PERM_M2 = [2, 1, 2, 6, 8, 8, 7, 6]


def test_permutation_sig_diff_delta_and_p():
    # stats_test.py PermutationSigDiffTest (Correlation(4, gold, metric)): delta = pearson(metric2) - pearson(metric1)
    # (testPearsonNoAvgNoEarlyStop), p > 0, and p = share of trials with c2 - c1 >= delta
    prof, scores = packed_frames(4, PERM_GOLD, {"m1": PERM_M1, "m2": PERM_M2})
    res = run(prof, scores, n_perm=1000)
    t = next(r for r in res.tests["metric_pairs"] if r["stat"] == "pearson.none")
    delta = scipy.stats.pearsonr(PERM_M2, PERM_GOLD)[0] - scipy.stats.pearsonr(PERM_M1, PERM_GOLD)[0]
    assert (t["a"], t["b"]) == ("m1", "m2")
    assert t["delta"] == pytest.approx(-delta)
    assert t["better"] == ("m2" if delta > 0 else "m1")
    assert 0 < t["p"] <= 1


@pytest.mark.parametrize("seed", [0, 3])
def test_permutation_equals_mt_metrics_eval_loop_given_the_same_coins(seed):
    """PermutationSigDiff flips one coin per score; ddp meta one per document (here: one item = one document,
    holding the item's 4 systems). Fed with the same coins (each score gets its document's coin), a
    transcription of PermutationSigDiff's loop (tests/oracles/meta_oracle.py) gives exactly our p."""
    prof, scores = packed_frames(4, PERM_GOLD, {"m1": PERM_M1, "m2": PERM_M2})
    n_perm = 400
    res = run(prof, scores, n_perm=n_perm, seed=seed)
    t = next(r for r in res.tests["metric_pairs"] if r["stat"] == "pearson.none")
    keep = _keep_bits(np.random.PCG64(seed).jumped(1), n_perm, 2)  # documents d00, d01 (sorted)
    # cell order of the packed vector: system-major, item j in document j
    coins = [[int(k[j]) for s in range(4) for j in range(2)] for k in keep]
    corr = lambda g, m: scipy.stats.pearsonr(g, m)[0]  # noqa: E731
    # their p is for "metric2 better"; ours is for the better-looking metric (m2 here when delta > 0)
    p_loop, delta = O.permutation_sig_diff_loop(PERM_GOLD, PERM_M1, PERM_M2, corr, coins)
    if delta < 0:
        p_loop, _ = O.permutation_sig_diff_loop(PERM_GOLD, PERM_M2, PERM_M1, corr, coins)
    assert t["p"] == p_loop
