"""``ddpcore.stats.compare`` / ``ddp stats compare`` against sacrebleu's own paired tests.

sacrebleu (a test dependency) is run through its private ``_paired_bs_test`` /
``_paired_ar_test`` with a tiny duck-typed "metric" whose sufficient statistics are
``[segment score, 1]`` (or ``[document sum, segment count]`` for document units) and whose
score is ``sum / count`` -- i.e. the mean of segment scores, the statistic ddpcore tests.
Integer scores and a power-of-two number of segments keep every sum and mean exact in
sacrebleu's float32 / float64 arithmetic and in ours, so with the same draws the p-values
must agree *exactly*.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import polars as pl
import pytest

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.stats.compare import adjust_pvalues, ar_swap_matrix, compare_arrays, compare_systems

significance = pytest.importorskip("sacrebleu.significance")


# --------------------------------------------------------------------------- sacrebleu harness


class _Score:
    def __init__(self, score: float) -> None:
        self.score = score


class MeanMetric:
    """The mean of segment scores, in the shape sacrebleu's significance functions call."""

    def _extract_corpus_statistics(self, hyps, refs):  # noqa: ANN001 - sacrebleu's signature
        return [list(map(float, h)) if np.ndim(h) else [float(h), 1.0] for h in hyps]

    def _aggregate_and_compute(self, stats):  # noqa: ANN001
        a = np.asarray(stats, dtype=np.float64).sum(axis=0)
        return _Score(a[0] / a[1])

    def _compute_score_from_stats(self, s):  # noqa: ANN001
        return _Score(float(s[0]) / float(s[1]))


def sacrebleu_pair(baseline_units, system_units, *, test: str, n: int, seed: int):
    """sacrebleu's procedure for one (baseline, system) pair; units are scores or [sum, count]."""
    m = MeanMetric()
    bl_stats = m._extract_corpus_statistics(baseline_units, None)
    info = {"M": (bl_stats, significance.Result(m._aggregate_and_compute(bl_stats).score))}
    fn = significance._paired_bs_test if test == "bs" else significance._paired_ar_test
    _, res = fn(info, "sys", list(system_units), None, {"M": m}, n_samples=n, seed=seed)
    return res["M"]


def _table(scores: dict[str, np.ndarray], seg_per_doc: int) -> pl.DataFrame:
    n = len(next(iter(scores.values())))
    return pl.DataFrame({
        "document_id": np.tile(np.arange(n) // seg_per_doc, len(scores)),
        "segment_id": np.tile(np.arange(n) % seg_per_doc, len(scores)),
        "system": np.repeat(list(scores), n),
        "score": np.concatenate(list(scores.values())).astype(np.float64),
    })


def _systems(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 101, n)
    return {
        "base": base,
        "up": np.clip(base + rng.integers(-10, 14, n), 0, 100),
        "down": np.clip(base + rng.integers(-13, 10, n), 0, 100),
        "same": np.clip(base + rng.integers(-6, 7, n), 0, 100),
    }


# --------------------------------------------------------------------------- exact agreement


@pytest.mark.parametrize("unit", ["segment", "document"])
def test_exact_agreement_with_sacrebleu_given_the_same_draws(unit: str) -> None:
    # 64 segments (16 documents x 4): every mean is k/64, exact in float32 and float64.
    # sacrebleu draws: bootstrap idxs = default_rng(seed).choice(n_units, (B, n_units)),
    # AR pos_sel = default_rng(seed).integers(2, (T, n_units), dtype=bool) -- its own code.
    scores = _systems(64)
    df = _table(scores, seg_per_doc=4)
    n_units = 64 if unit == "segment" else 16
    seed, b, t = 11, 1000, 2000
    idx = np.random.default_rng(seed).choice(n_units, size=(b, n_units), replace=True)
    keep = np.random.default_rng(seed).integers(2, size=(t, n_units), dtype=bool)
    res = compare_systems(df, "base", unit=unit, indices=idx, ar_keep=keep, correction="none")
    rows = {r["system"]: r for r in res.comparisons["score"].rows()}

    def units(v: np.ndarray) -> list:
        if unit == "segment":
            return list(v)
        return [[float(v[4 * d : 4 * d + 4].sum()), 4.0] for d in range(16)]

    for name in ("up", "down", "same"):
        bs = sacrebleu_pair(units(scores["base"]), units(scores[name]), test="bs", n=b, seed=seed)
        ar = sacrebleu_pair(units(scores["base"]), units(scores[name]), test="ar", n=t, seed=seed)
        r = rows[name]
        assert r["score"] == bs.score == ar.score
        assert r["p_bootstrap"] == bs.p_value, name
        assert r["p_ar"] == ar.p_value, name
        assert r["boot_mean"] == bs.mean  # sacrebleu estimate_ci: mean of the replicates
        assert r["ci"] == bs.ci  # half the distance between sorted[B//40] and sorted[B - B//40 - 1]
