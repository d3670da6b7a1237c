"""Benchmark of ``ddp stats compare`` (issue 13) against a loop over sacrebleu's own procedure.

Problem (fixed seed): 50 systems (one baseline + 49) x 10,000 documents x 3 segments =
1,500,000 rows of one metric; paired bootstrap B = 1,000 and approximate randomization
T = 10,000, every system against the baseline, document unit (documents resampled / swapped).

* **ddpcore**: ``compare_systems`` end to end from an in-memory polars table (validation,
  pairing, unit sums, bootstrap, AR, Holm correction) -- the work of one CLI call minus parsing.
* **sacrebleu loop**: what COMET users do today: for each system, sacrebleu 2.x's
  ``_paired_bs_test`` and ``_paired_ar_test`` (its ``significance.py``, called with a mean-score
  "metric" whose sufficient statistics are ``[document sum, segment count]``, i.e. the same
  document-level test). One system pair costs the same as any other (same sizes, same draws), so
  the loop is timed on ``SACRE_PAIRS`` pairs and scaled to 49; AR is timed at ``SACRE_AR`` trials
  and scaled to 10,000 (its cost is linear in the trials: one (T x n_units) boolean matrix and a
  Python call per trial). At the full size sacrebleu's AR would also allocate a 10,000 x 10,000
  float64 cast of its selector (0.8 GB) per pair.

Run with pytest-benchmark::

    python -m pytest benchmarks/bench_compare.py --benchmark-enable --benchmark-columns=median,iqr,rounds

or print the table (medians, ratio)::

    python benchmarks/compare_table.py [--quick]
"""
from __future__ import annotations

import time

import numpy as np
from ddpcore.stats import CompareTests, ResampleOptions

N_SYSTEMS, N_DOCS, SEG_PER_DOC = 50, 10_000, 3
N_BOOT, N_AR = 1_000, 10_000
SACRE_PAIRS, SACRE_AR = 2, 1_000


def score_table(n_systems: int = N_SYSTEMS, n_docs: int = N_DOCS, seg_per_doc: int = SEG_PER_DOC, seed: int = 0):
    """Segment scores (COMET-like, 0..1): document effect + system effect + noise."""
    import polars as pl

    rng = np.random.default_rng(seed)
    n_seg = n_docs * seg_per_doc
    doc = np.repeat(np.arange(n_docs), seg_per_doc)
    seg = np.tile(np.arange(seg_per_doc), n_docs)
    doc_eff = rng.normal(0, 0.08, n_docs)[doc]
    sys_eff = rng.normal(0, 0.004, n_systems)
    sys_eff[0] = 0.0
    scores = 0.75 + doc_eff[None, :] + sys_eff[:, None] + rng.normal(0, 0.05, (n_systems, n_seg))
    return pl.DataFrame({
        "document_id": np.tile(doc, n_systems),
        "segment_id": np.tile(seg, n_systems),
        "system": np.repeat([f"sys{k:02d}" for k in range(n_systems)], n_seg),
        "score": scores.reshape(-1),
    })


def run_ddpcore(table, *, n_boot: int = N_BOOT, n_ar: int = N_AR, threads: int | None = None):
    from ddpcore.stats.compare import compare_systems

    return compare_systems(table, "sys00", options=ResampleOptions(n_boot=n_boot, seed=0, threads=threads), tests=CompareTests(unit="document", test="both", n_ar=n_ar))


class _Score:
    def __init__(self, score: float) -> None:
        self.score = score


class MeanMetric:
    """Mean of segment scores in the shape sacrebleu's significance functions call
    (sufficient statistics ``[sum, count]`` per unit)."""

    def _extract_corpus_statistics(self, hyps, refs):  # noqa: ANN001
        return [list(h) for h in hyps]

    def _aggregate_and_compute(self, stats):  # noqa: ANN001
        a = np.asarray(stats, dtype=np.float64).sum(axis=0)
        return _Score(a[0] / a[1])

    def _compute_score_from_stats(self, s):  # noqa: ANN001
        return _Score(float(s[0]) / float(s[1]))


def document_stats(table) -> tuple[list[str], dict[str, list[list[float]]]]:
    """Per system, the per-document ``[sum, count]`` lists sacrebleu's procedure consumes."""
    import polars as pl

    agg = (table.group_by(["system", "document_id"]).agg(pl.col("score").sum().alias("s"), pl.len().alias("n"))
           .sort(["system", "document_id"]))
    out: dict[str, list[list[float]]] = {}
    for name, part in agg.group_by("system", maintain_order=True):
        out[str(name[0])] = np.column_stack([part["s"].to_numpy(), part["n"].to_numpy().astype(float)]).tolist()
    return sorted(out), out


def run_sacrebleu_loop(stats: dict[str, list[list[float]]], systems: list[str], *, n_boot: int = N_BOOT,
                       n_ar: int = SACRE_AR, pairs: int = SACRE_PAIRS) -> float:
    """Seconds for ``pairs`` (baseline, system) pairs of sacrebleu's bs + ar procedure."""
    from sacrebleu.significance import Result, _paired_ar_test, _paired_bs_test

    m = MeanMetric()
    bl = stats[systems[0]]
    info = {"M": (bl, Result(m._aggregate_and_compute(bl).score))}
    t = time.perf_counter()
    for name in systems[1 : 1 + pairs]:
        _paired_bs_test(info, name, stats[name], None, {"M": m}, n_samples=n_boot, seed=12345)
        _paired_ar_test(info, name, stats[name], None, {"M": m}, n_samples=n_ar, seed=12345)
    return time.perf_counter() - t


# --------------------------------------------------------------------------- pytest-benchmark


def test_compare_ddpcore(benchmark) -> None:  # noqa: ANN001
    table = score_table()
    res = benchmark.pedantic(run_ddpcore, args=(table,), rounds=3, iterations=1)
    assert len(res.comparisons["score"].systems) == N_SYSTEMS


def test_compare_sacrebleu_loop(benchmark) -> None:  # noqa: ANN001
    systems, stats = document_stats(score_table())
    benchmark.pedantic(run_sacrebleu_loop, args=(stats, systems), rounds=1, iterations=1)
