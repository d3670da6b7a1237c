"""Benchmark of the ``ddp blindness`` battery (issue 10, section 5).

Problem: 20 systems x 2,000 documents x 2 conditions (DOC, MIX), simulated metric
(:func:`ddpcore.stats.blindness.simulate_scores`), with 1 segment per document (80,000 rows) and
with 5 (400,000 rows). The battery: paired TOST at segment level, Kendall tau with a document
bootstrap (B = 10,000), bootstrap clusters in both conditions (B = 1,000), power analysis, verdict.
Timed end to end from an in-memory polars table (the CLI adds reading the file and imports).

    python benchmarks/blindness_table.py          # medians of repeated runs, per component
    python -m pytest benchmarks/bench_blindness.py --benchmark-enable --benchmark-columns=median,iqr,rounds
"""
from __future__ import annotations

from typing import Any

import pytest
from ddpcore.stats import BlindnessDesign, ResampleOptions, TableColumns

N_SYS, N_DOCS = 20, 2000
N_BOOT, N_BOOT_CLUSTER = 10_000, 1000


def make_table(segments_per_doc: int = 1, seed: int = 0) -> Any:
    from ddpcore.stats.blindness import simulate_scores

    return simulate_scores(N_DOCS, segments_per_doc, N_SYS, shift=0.0, seed=seed)


def battery(table: Any, threads: int | None = 1) -> Any:
    from ddpcore.stats.blindness import blindness

    return blindness(table, margin=3, options=ResampleOptions(n_boot=N_BOOT, seed=0, threads=threads), design=BlindnessDesign(n_boot_cluster=N_BOOT_CLUSTER))


def components(table: Any) -> dict[str, Any]:
    """The battery's parts, one callable each (for the per-component table)."""
    import numpy as np

    from ddpcore.stats.bootstrap import bootstrap_tau
    from ddpcore.stats.clustering import cluster_systems
    from ddpcore.stats.power import tost_power_analysis

    return {
        "bootstrap_tau (B = 10,000), default threads": lambda: bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(n_boot=N_BOOT, seed=0)),
        "bootstrap_tau (B = 10,000), threads=1": lambda: bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(n_boot=N_BOOT, seed=0, threads=1)),
        "cluster_systems bootstrap x 2 (B = 1,000)": lambda: [
            cluster_systems(table, "bootstrap", condition_value=c, columns=TableColumns(annotator=None),
                            options=ResampleOptions(n_boot=N_BOOT_CLUSTER))
            for c in ("DOC", "MIX")],
        "power analysis": lambda: tost_power_analysis(int(table.height // 2), float(np.std(table["score"].to_numpy())), -3, 3),
    }


@pytest.fixture(scope="module", params=[1, 5], ids=["1seg", "5seg"])
def table(request: Any) -> Any:
    return make_table(request.param)


def test_battery(benchmark: Any, table: Any) -> None:
    res = benchmark.pedantic(battery, args=(table,), rounds=3, iterations=1, warmup_rounds=1)
    assert res.verdict == "blind"
