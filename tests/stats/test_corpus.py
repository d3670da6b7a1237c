"""``ddpcore.stats.corpus``: corpus BLEU/chrF/TER from sufficient statistics, against sacrebleu itself.

Expected values are produced in the test run by sacrebleu 2.x (a test dependency; 2.6.0 when this
was written): ``BLEU()/CHRF()/TER()._compute_score_from_stats`` for the scores and
``sacrebleu.significance._paired_bs_test`` / ``_paired_ar_test`` (the code behind ``sacrebleu
--paired-bs`` / ``--paired-ar``) for the p-values, fed the same draws: sacrebleu's bootstrap indices
are ``np.random.default_rng(seed).choice(n, size=(B, n), replace=True)`` and its AR mask
``default_rng(seed).integers(2, size=(T, n), dtype=bool)`` (significance.py), which we pass to
:func:`compare_corpus` as ``indices`` / ``ar_keep``.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore.errors import DDPDataError
from ddpcore.stats.corpus import N_STATS, compare_corpus, corpus_score, sufficient_stats

sacrebleu = pytest.importorskip("sacrebleu")
significance = pytest.importorskip("sacrebleu.significance")
from sacrebleu.metrics import BLEU, CHRF, TER  # noqa: E402

WORDS = "the a cat dog sat on mat house big small red blue ran quickly slowly and".split()
METRICS = {"bleu": BLEU, "chrf": CHRF, "ter": TER}


def _corpus(n: int, seed: int, noise: float) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    refs = [" ".join(rng.choice(WORDS, rng.integers(3, 12))) for _ in range(n)]
    hyps = []
    for r in refs:
        w = r.split()
        w = [x if rng.random() > noise else str(rng.choice(WORDS)) for x in w]
        if rng.random() < 0.2:
            w = w[: max(1, len(w) - 2)]
        hyps.append(" ".join(w))
    return hyps, refs


@pytest.mark.parametrize("metric", ["bleu", "chrf", "ter"])
def test_corpus_score_equals_sacrebleu(metric: str) -> None:
    m = METRICS[metric]()
    for seed in range(5):
        hyps, refs = _corpus(40, seed, 0.3)
        s = sufficient_stats(hyps, refs, metric)  # type: ignore[arg-type]
        assert s.shape == (40, N_STATS[metric])
        ref = m.corpus_score(hyps, [refs]).score  # sacrebleu 2.x corpus_score
        assert corpus_score(s.sum(0), metric) == pytest.approx(ref, rel=1e-13, abs=1e-12)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=6, max_size=6), st.lists(st.integers(0, 2), min_size=4, max_size=4))
def test_bleu_formula_any_counts(v: list[int], c: list[int]) -> None:
    # sacrebleu BLEU._compute_score_from_stats on arbitrary count vectors (several zero-match orders,
    # zero totals, short hypotheses) against the vectorised formula
    sys_len, ref_len = v[0], v[1]
    totals = sorted(v[2:6], reverse=True)
    correct = [min(x, t) for x, t in zip(c, totals)]
    stats = [sys_len, ref_len, *correct, *totals]
    ref = BLEU()._compute_score_from_stats(list(stats)).score
    assert corpus_score(np.array(stats, float), "bleu") == pytest.approx(ref, rel=1e-13, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 20), min_size=18, max_size=18))
def test_chrf_formula_any_counts(v: list[int]) -> None:
    stats = []
    for i in range(6):
        h, r, mt = v[3 * i: 3 * i + 3]
        stats += [h, r, min(mt, h, r)]
    ref = CHRF()._compute_score_from_stats(list(stats)).score
    assert corpus_score(np.array(stats, float), "chrf") == pytest.approx(ref, rel=1e-13, abs=1e-12)


def test_ter_formula_edges() -> None:
    for stats in ([0, 0], [3, 0], [2, 10], [7.5, 3.25]):
        ref = TER()._compute_score_from_stats(list(stats)).score
        assert corpus_score(np.array(stats, float), "ter") == pytest.approx(ref, rel=1e-15)


def _sacrebleu_pair(metric: str, bl: tuple, sy: tuple, test: str, n: int, seed: int):
    m = METRICS[metric]()
    bl_stats = m._extract_corpus_statistics(bl[0], [bl[1]])
    info = {metric: (bl_stats, m._aggregate_and_compute(bl_stats))}
    fn = significance._paired_bs_test if test == "bs" else significance._paired_ar_test
    _, res = fn(info, "sys", sy[0], [sy[1]], {metric: m}, n_samples=n, seed=seed)
    return res[metric]


@pytest.mark.parametrize("metric", ["bleu", "chrf", "ter"])
def test_paired_tests_equal_sacrebleu_given_the_same_draws(metric: str) -> None:
    n, b, t, seed = 60, 300, 400, 11
    hyps_bl, refs = _corpus(n, 3, 0.35)
    hyps_a, _ = _corpus(n, 3, 0.25)
    hyps_b, _ = _corpus(n, 4, 0.35)
    _, refs_b = _corpus(n, 4, 0.35)
    hyps_b = [h for h in hyps_b]  # another system on the same references
    hyps_b = [h if i % 3 else hb for i, (h, hb) in enumerate(zip(hyps_bl, hyps_b))]
    systems = [hyps_bl, hyps_a, hyps_b]
    stats = np.stack([sufficient_stats(h, refs, metric) for h in systems])  # type: ignore[arg-type]
    idx = np.random.default_rng(seed).choice(n, size=(b, n), replace=True)  # sacrebleu _paired_bs_test
    keep = np.random.default_rng(seed).integers(2, size=(t, n), dtype=bool)  # sacrebleu _paired_ar_test pos_sel
    r = compare_corpus(stats, metric, indices=idx, ar_keep=keep, n_ar=t)  # type: ignore[arg-type]
    for i in (1, 2):
        bs = _sacrebleu_pair(metric, (hyps_bl, refs), (systems[i], refs), "bs", b, seed)
        ar = _sacrebleu_pair(metric, (hyps_bl, refs), (systems[i], refs), "ar", t, seed)
        assert r.score[i] == pytest.approx(bs.score, rel=1e-13)
        assert r.p_bootstrap[i] == bs.p_value  # type: ignore[index]
        assert r.p_ar[i] == ar.p_value  # type: ignore[index]
        assert r.boot_mean[i] == pytest.approx(bs.mean, rel=1e-6)  # sacrebleu sums float32 stats
        lo, hi = r.ci_low[i], r.ci_high[i]
        assert 0.5 * (hi - lo) == pytest.approx(bs.ci, rel=1e-5, abs=1e-9)


def _slow_doc_bootstrap(stats: np.ndarray, codes: np.ndarray, idx: np.ndarray, metric: str) -> np.ndarray:
    """Obviously-correct loop: per replicate, concatenate the drawn documents' segments, sum, score."""
    out = np.empty((stats.shape[0], idx.shape[0]))
    for b in range(idx.shape[0]):
        segs = np.concatenate([np.flatnonzero(codes == u) for u in idx[b]])
        for s in range(stats.shape[0]):
            out[s, b] = corpus_score(stats[s, segs].sum(0), metric)  # type: ignore[arg-type]
    return out


def test_document_resampling_against_a_loop() -> None:
    n = 48
    hyps_bl, refs = _corpus(n, 5, 0.3)
    hyps_a, _ = _corpus(n, 5, 0.2)
    stats = np.stack([sufficient_stats(h, refs, "bleu") for h in (hyps_bl, hyps_a)])
    codes = np.repeat(np.arange(12), 4)
    rng = np.random.default_rng(2)
    idx = rng.integers(0, 12, size=(50, 12))
    r = compare_corpus(stats, "bleu", unit_codes=codes, indices=idx, test="bootstrap")
    reps = _slow_doc_bootstrap(stats, codes, idx, "bleu")
    srt = np.sort(reps, axis=1)
    k = int(np.floor(50 * 0.05 / 2 + 1e-9))
    np.testing.assert_allclose(r.ci_low, srt[:, k], rtol=1e-12)
    np.testing.assert_allclose(r.ci_high, srt[:, 49 - k], rtol=1e-12)
    d = reps - reps[0]
    a = np.abs(d[1])
    p = (np.sum(a - a.mean() > abs(r.diff[1])) + 1) / 51
    assert r.p_bootstrap[1] == p  # type: ignore[index]


def test_identical_system_is_not_significant_and_seeded_runs_repeat() -> None:
    hyps, refs = _corpus(30, 1, 0.3)
    s = sufficient_stats(hyps, refs, "chrf")
    stats = np.stack([s, s, s * 0 + s])
    r1 = compare_corpus(stats, "chrf", n_boot=100, n_ar=100, seed=5)
    r2 = compare_corpus(stats, "chrf", n_boot=100, n_ar=100, seed=5)
    assert r1.p_bootstrap[1] == 1.0 and r1.p_ar[1] == 1.0  # type: ignore[index]
    np.testing.assert_array_equal(r1.ci_low, r2.ci_low)


def test_bad_stats_refused() -> None:
    with pytest.raises(DDPDataError, match="D836"):
        corpus_score(np.array([1.0, -1.0]), "ter")
    with pytest.raises(DDPDataError, match="D836"):
        compare_corpus(np.zeros((2, 3, 4)), "bleu")


# --------------------------------------------------------------------------- the table front end


def _long_table(seed: int = 7):
    import polars as pl

    rows = []
    rng = np.random.default_rng(seed)
    for d in range(5):
        for s in range(4):
            hyps, refs = _corpus(1, int(rng.integers(1 << 30)), 0.0)
            for system, noise in (("base", 0.3), ("B", 0.1), ("C", 0.6), ("gone", 0.2)):
                w = [x if rng.random() > noise else str(rng.choice(WORDS)) for x in refs[0].split()]
                rows.append({"doc": f"d{d}", "seg": s, "sys": system, "hyp": " ".join(w), "ref": refs[0]})
    return pl.DataFrame(rows)


def test_compare_corpus_table_scores_are_sacrebleus_corpus_scores() -> None:
    """Each system's score is sacrebleu's BLEU().corpus_score over its segments in (document, segment)
    order; rows in any order give the same result; excluded systems are gone; the baseline comes first."""
    from ddpcore.stats.corpus import CorpusColumns, CorpusTest, compare_corpus_table

    t = _long_table()
    cols = CorpusColumns(hypothesis="hyp", reference="ref", document="doc", segment="seg", system="sys")
    how = CorpusTest(unit="document", test="both", n_boot=50, n_ar=50, seed=3)
    res = compare_corpus_table(t, "base", ["bleu"], columns=cols, how=how, exclude_systems=["gone"])
    shuffled = compare_corpus_table(t.sample(fraction=1.0, shuffle=True, seed=1), "base", ["bleu"], columns=cols,
                                    how=how, exclude_systems=["gone"])
    comp = res.comparisons["bleu"]
    assert comp.systems == ["base", "B", "C"]
    for i, system in enumerate(comp.systems):
        part = t.filter(t["sys"] == system).sort("doc", "seg")
        want = BLEU().corpus_score(part["hyp"].to_list(), [part["ref"].to_list()]).score  # sacrebleu 2.x
        assert comp.score[i] == pytest.approx(want, rel=1e-13)
    np.testing.assert_array_equal(comp.diff, comp.score - comp.score[0])
    np.testing.assert_array_equal(shuffled.comparisons["bleu"].p_value, comp.p_value)
    assert res.n_units == 5 and res.n_segments == 20 and res.signature["columns"]["hypothesis"] == "hyp"
    # one name given as a str is that system, not its letters (as compare_systems / bootstrap_tau take it)
    one = compare_corpus_table(t, "base", ["bleu"], columns=cols, how=how, exclude_systems="gone")
    assert one.comparisons["bleu"].systems == comp.systems
    np.testing.assert_array_equal(one.comparisons["bleu"].p_value, comp.p_value)


def test_compare_corpus_table_errors() -> None:
    from ddpcore.stats.corpus import CorpusColumns, compare_corpus_table

    t = _long_table()
    cols = CorpusColumns(hypothesis="hyp", reference="ref", document="doc", segment="seg", system="sys")
    with pytest.raises(DDPDataError, match=r"D837.*'nope' \(--reference-col\)"):
        compare_corpus_table(t, "base", ["bleu"], columns=CorpusColumns(hypothesis="hyp", reference="nope"))
    with pytest.raises(DDPDataError, match="D392"):
        compare_corpus_table(t, "zzz", ["bleu"], columns=cols)
    with pytest.raises(DDPDataError, match=r"D393.*system 'C' has no score for document 'd0', segment 0 .*\(5 missing\)"):
        compare_corpus_table(t.filter(~((t["sys"] == "C") & (t["seg"] == 0))), "base", ["bleu"], columns=cols)
