"""pytest-benchmark: ``ddp meta`` (``meta_evaluate``) on the issue-22 size (20 systems x 20,000 segments x
5 metrics, 1,000 document resamples, 10,000 permutations) and a small size. Measured, never asserted.

    pytest benchmarks/bench_meta.py --benchmark-only -p no:cacheprovider
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from meta_table import make_data  # noqa: E402


@pytest.fixture(scope="module")
def data():
    return make_data()


@pytest.mark.parametrize("n_perm", [0, 10_000])
def test_meta_issue22_size(benchmark, data, n_perm):
    from ddpcore.stats.meta import MetaTests, meta_evaluate
    from ddpcore.stats.options import ResampleOptions

    prof, scores = data
    benchmark.pedantic(meta_evaluate, args=(prof, scores),
                       kwargs={"human_col": "human", "bins": [0, 1, 5, 15, 50, math.inf],
                               "options": ResampleOptions(n_boot=1000, seed=0), "tests": MetaTests(n_perm=n_perm)},
                       rounds=3, iterations=1)
