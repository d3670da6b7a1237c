"""Mutation-hunt killers for the statistics (helper 57).

Each test below kills a small planted bug ("mutant") in ``src/ddpcore/stats`` that every existing test let pass;
the mutant is named in the docstring. Expected values come from scipy or from slow loops written here, never from
the code under test.
"""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from ddpcore.stats import (CompareTests, ResampleOptions, bootstrap_tau, cluster_systems, compare_systems,
                           kendall_tau_b, tost_paired, tost_power)
from ddpcore.stats.compare import compare_arrays


# --------------------------------------------------------------------------- Kendall tau


def test_kendall_auto_rule_is_exact_up_to_n_33() -> None:
    """Mutant: ``n <= 33`` -> ``n < 33`` in the auto rule of ``kendall_tau_b`` (n = 33 then took the normal
    approximation). scipy's ``method="auto"`` uses the exact distribution for untied data with n <= 33."""
    rng = np.random.default_rng(57)
    for n in (33, 34):
        x = np.arange(n, dtype=float)
        y = x + rng.normal(0, 12, n)  # untied, moderate association
        ref = stats.kendalltau(x, y)  # scipy: exact at n = 33, asymptotic at n = 34 (tau not extreme)
        exact = stats.kendalltau(x, y, method="exact").pvalue
        asym = stats.kendalltau(x, y, method="asymptotic").pvalue
        assert abs(exact - asym) > 1e-6  # the two rules give visibly different p here
        got = kendall_tau_b(x, y)
        assert got.p_value == pytest.approx(ref.pvalue, rel=1e-12)
        assert got.signature["p_value_method"] == ("exact" if n == 33 else "asymptotic")


# --------------------------------------------------------------------------- bootstrap tau


def _tau_table() -> pl.DataFrame:
    """3 documents of 1, 2 and 3 segments, 3 systems, 2 conditions; small integer scores so that system means tie
    in some replicates (in one condition and not the other)."""
    rows = []
    scores = {  # (condition, system) -> score of each of the 6 segments, in document order d0 | d1 d1 | d2 d2 d2
        ("A", "s0"): [3, 2, 2, 1, 3, 2], ("A", "s1"): [3, 3, 3, 1, 3, 1], ("A", "s2"): [2, 2, 3, 1, 3, 1],
        ("B", "s0"): [2, 2, 3, 1, 3, 3], ("B", "s1"): [3, 1, 3, 3, 1, 2], ("B", "s2"): [2, 1, 2, 2, 3, 3],
    }
    seg_doc = [("d0", 0), ("d1", 0), ("d1", 1), ("d2", 0), ("d2", 1), ("d2", 2)]
    for (cond, system), vals in scores.items():
        for (doc, seg), v in zip(seg_doc, vals):
            rows.append((doc, seg, system, cond, float(v)))
    return pl.DataFrame(rows, schema=["document_id", "segment_id", "system", "condition", "score"], orient="row")


def _loop_means(df: pl.DataFrame, cond: str, docs: list[str], weighting: str) -> list[float]:
    """System means (systems sorted) of condition ``cond`` over the drawn documents (with multiplicity): the mean
    of the rows (``segment``) or the mean of the document means (``document``); a plain Python loop."""
    out = []
    for s in sorted(set(df["system"].to_list())):
        if weighting == "segment":
            vals = [r["score"] for d in docs for r in df.iter_rows(named=True)
                    if r["document_id"] == d and r["condition"] == cond and r["system"] == s]
            out.append(sum(vals) / len(vals))
        else:
            doc_means = []
            for d in docs:
                vals = [r["score"] for r in df.iter_rows(named=True)
                        if r["document_id"] == d and r["condition"] == cond and r["system"] == s]
                doc_means.append(sum(vals) / len(vals))
            out.append(sum(doc_means) / len(doc_means))
    return out


def test_bootstrap_tau_share_tied_counts_a_tie_in_either_condition() -> None:
    """Mutant: the tie flag of a replicate ``.any(axis=(1, 2))`` -> ``.all(...)`` (a replicate counted as tied only
    when every adjacent pair of system means ties in both conditions). ``share_tied`` is the share of replicates in
    which some two systems have the same mean under either condition; here from a loop over the drawn documents."""
    df = _tau_table()
    docs = ["d0", "d1", "d2"]  # units in sorted document order
    idx = np.array([[0, 1, 2], [0, 0, 1], [2, 2, 2], [1, 2, 2], [0, 2, 1], [1, 1, 0], [0, 0, 0], [2, 1, 1]])
    tied, one_side_only = [], 0
    for row in idx:
        drawn = [docs[k] for k in row]
        ma, mb = (_loop_means(df, c, drawn, "segment") for c in ("A", "B"))
        ta, tb = len(set(ma)) < len(ma), len(set(mb)) < len(mb)
        tied.append(ta or tb)
        one_side_only += ta != tb
    assert one_side_only == 4 and sum(tied) == 6  # the data exercise the "either condition" rule
    res = bootstrap_tau(df, "A", "B", options=ResampleOptions(indices=idx))
    assert res.share_tied == pytest.approx(np.mean(tied), abs=1e-15)


def test_bootstrap_tau_document_weighting_means_are_means_of_document_means() -> None:
    """Mutant: ``weighting="document"`` without resetting the counts to one per document (the system means became
    the sum of document means over the number of rows). The tau replicates did not change (every system has the same
    rows), so only the reported means catch it; expected: mean of the per-document means, by a loop."""
    df = _tau_table()
    res = bootstrap_tau(df, "A", "B", weighting="document", options=ResampleOptions(n_boot=50, seed=1))
    for cond, got in (("A", res.means_a), ("B", res.means_b)):
        want = _loop_means(df, cond, ["d0", "d1", "d2"], "document")
        assert [got[s] for s in ("s0", "s1", "s2")] == pytest.approx(want, rel=1e-13)
    seg = bootstrap_tau(df, "A", "B", options=ResampleOptions(n_boot=50, seed=1))
    want = _loop_means(df, "A", ["d0", "d1", "d2"], "segment")
    assert [seg.means_a[s] for s in ("s0", "s1", "s2")] == pytest.approx(want, rel=1e-13)


# --------------------------------------------------------------------------- clustering (WMT25)


def test_wmt25_significance_is_p_strictly_below_alpha() -> None:
    """Mutant: wmt25's significance ``p < alpha`` -> ``p <= alpha``. Four paired differences 1, 2, 3, 4 give the
    exact one-sided Wilcoxon p = 1/16 (all signs positive: 1 of 2**4 sign patterns), from scipy here; at alpha
    equal to that p the pair does not differ (one cluster), just above it, it does."""
    d = np.array([1.0, 2.0, 3.0, 4.0])
    p = stats.wilcoxon(d, alternative="greater").pvalue  # scipy 1.17: exact, 0.0625
    assert p == 1 / 16
    rows = [{"document_id": "doc0", "segment_id": s, "system": name, "score": 50.0 + (d[s] if name == "good" else 0)}
            for s in range(4) for name in ("good", "base")]
    df = pl.DataFrame(rows)
    at = cluster_systems(df, "wmt25", alpha=p, min_pairs=0)
    assert at.p_values[0, 1] == p
    assert at.clusters == (("good", "base"),)
    assert at.rank_ranges == {"good": (1, 2), "base": (1, 2)}
    above = cluster_systems(df, "wmt25", alpha=float(np.nextafter(p, 1.0)), min_pairs=0)
    assert above.clusters == (("good",), ("base",))
    assert above.rank_ranges == {"good": (1, 1), "base": (2, 2)}


def _wmt25_loop(sig: np.ndarray) -> tuple[list[int], list[int], list[int]]:
    """WMT25 ``humeval/05-compute_clusters.py`` rules as slow loops over positions (0-based, best first): best =
    1 + systems listed above that are significantly better, worst = S - systems listed below that are significantly
    worse; a cluster ends after position c when every system up to c has worst <= c + 1 and every later system
    has best > c + 1 (``does_cluster_end_here``)."""
    s = sig.shape[0]
    best = [1 + sum(bool(sig[k, i]) for k in range(i)) for i in range(s)]
    worst = [s - sum(bool(sig[i, k]) for k in range(i + 1, s)) for i in range(s)]
    cuts = [c for c in range(s - 1)
            if all(worst[j] <= c + 1 for j in range(c + 1)) and all(best[k] > c + 1 for k in range(c + 1, s))]
    return best, worst, cuts


def test_wmt25_cut_with_non_transitive_significance() -> None:
    """Mutant: the WMT25 cut ``min best of the rest > c + 1`` -> ``>= c + 1``. A beats B, B beats C, A does not
    beat C (non-transitive, as thin paired samples give): C's best rank is 2, B's worst rank is 2, so B and C may
    share rank 2 and no cluster may end after B. Expected from the loop transcription above."""
    from ddpcore.stats.clustering import STRATEGIES

    alpha = 0.05
    p = np.full((3, 3), 0.9)  # p[i, j]: one-sided p that i is better than j
    p[0, 1] = p[1, 2] = 0.01  # A > B, B > C; p[0, 2] = 0.9: A not better than C
    np.fill_diagonal(p, np.nan)
    means = np.array([3.0, 2.0, 1.0])
    best, worst, cuts = STRATEGIES["wmt25"].ranks(p, means, alpha)
    want = _wmt25_loop(p < alpha)
    assert (best.tolist(), worst.tolist(), list(cuts)) == want
    assert want == ([1, 2, 2], [2, 2, 3], [])  # one cluster of three


# --------------------------------------------------------------------------- compare (paired bootstrap)


def _two_doc_table() -> pl.DataFrame:
    """Two documents of one segment: the baseline scores 0 and 0, the system 2 and 0 (observed difference +1)."""
    return pl.DataFrame({"document_id": ["d0", "d0", "d1", "d1"], "segment_id": [0, 0, 0, 0],
                         "system": ["base", "sys", "base", "sys"], "score": [0.0, 2.0, 0.0, 0.0],
                         "ter": [0.0, 2.0, 0.0, 0.0]})


#: four bootstrap draws of the two documents: (d0, d0), (d1, d1), (d0, d1), (d1, d0)
_IDX = np.array([[0, 0], [1, 1], [0, 1], [1, 0]])


def _sacrebleu_p() -> float:
    """sacrebleu 2.x ``paired_bs`` p by hand for the table and draws above: replicate deltas (system - baseline
    mean over the drawn documents) 2, 0, 1, 1; a = |delta|, stats = a - mean(a) = 1, -1, 0, 0; observed |diff| = 1;
    p = (#{stats > 1} + 1) / (B + 1) = (0 + 1) / 5 (strictly greater: the replicate at exactly 1 does not count)."""
    deltas = [np.mean([[2.0, 0.0][k] for k in row]) for row in _IDX]
    a = np.abs(deltas)
    return (int(np.sum(a - a.mean() > 1.0)) + 1) / (len(deltas) + 1)


def test_paired_bootstrap_p_counts_strictly_greater() -> None:
    """Mutant: ``stats > obs`` -> ``stats >= obs`` in the paired bootstrap p (sacrebleu counts strictly greater)."""
    want = _sacrebleu_p()
    assert want == 0.2
    arr = compare_arrays(np.array([[0.0, 2.0], [0.0, 0.0]]), np.array([1.0, 1.0]), baseline=0, test="bootstrap",
                         options=ResampleOptions(indices=_IDX))
    assert arr.p_bootstrap[0, 1] == want


def test_compare_significance_and_verdict_direction() -> None:
    """Mutants: ``significant = p < alpha`` -> ``<=`` (at p == alpha = 1/5 the system is not significant) and the
    verdict's direction reversed (a significant system with the higher score is ``better``, ``worse`` on a
    lower-is-better metric). p = 1/5 from :func:`_sacrebleu_p`; the system's mean 1 is above the baseline's 0."""
    p = _sacrebleu_p()
    df = _two_doc_table()
    opts = ResampleOptions(indices=_IDX)
    at = compare_systems(df, "base", metrics=["score"], options=opts,
                         tests=CompareTests(test="bootstrap", correction="none", alpha=p))
    row = at.comparisons["score"]
    assert row.p_bootstrap[1] == p
    assert not bool(row.significant[1]) and row.verdict == ["baseline", "n.s."]
    above = float(np.nextafter(p, 1.0))
    res = compare_systems(df, "base", metrics=["score", "ter"], lower_is_better=["ter"], options=opts,
                          tests=CompareTests(test="bootstrap", correction="none", alpha=above))
    assert res.comparisons["score"].verdict == ["baseline", "better"]
    assert res.comparisons["ter"].verdict == ["baseline", "worse"]


# --------------------------------------------------------------------------- power


def test_tost_power_with_zero_sd_on_a_margin_is_zero() -> None:
    """Mutant: ``sd = 0`` power ``low < true_diff < high`` -> ``<=`` (a true difference exactly on a margin counted
    as always equivalent). With sd = 0 every sample's mean difference is ``true_diff`` itself, and TOST needs it
    strictly inside (low, high) (Schuirmann's H1: low < d < high), so the power is 1 inside and 0 on a margin;
    the paired TOST of such a sample agrees (zero variance on the margin: p = 0.5, not equivalent)."""
    assert tost_power(10, 0.0, -1.0, 1.0, true_diff=0.5) == 1.0
    assert tost_power(10, 0.0, -1.0, 1.0, true_diff=1.0) == 0.0
    assert tost_power(10, 0.0, -1.0, 1.0, true_diff=-1.0) == 0.0
    on_margin = tost_paired(np.full(10, 3.0), np.full(10, 2.0), -1.0, 1.0)  # differences all exactly 1 = high
    assert not on_margin.equivalent


def test_tost_n_needed_counts_a_power_reached_exactly() -> None:
    """Mutant: the bisection of ``tost_n_needed`` ``f(mid) >= power`` -> ``>`` (a sample size whose power equals the
    target exactly was skipped). "Reaches power" includes equality: with the target set to the power of n = 6
    itself, the smallest n reaching it is 6 by definition (powers of 5, 6, 7 checked increasing first; n = 6 is
    not a power of two, so the bisection, not the doubling, decides it)."""
    sd, low, high = 1.0, -0.8, 0.8
    powers = [tost_power(n, sd, low, high) for n in (5, 6, 7)]
    assert powers[0] < powers[1] < powers[2] < 1.0
    from ddpcore.stats import tost_n_needed

    assert tost_n_needed(sd, low, high, power=powers[1]) == 6
    assert tost_n_needed(sd, low, high, power=float(np.nextafter(powers[1], 1.0))) == 7
