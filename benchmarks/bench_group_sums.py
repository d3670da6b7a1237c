"""Per-group sums that do not depend on the row order (``ddpcore.stats._table.group_sums``, used for the system and
cell means of tau, cluster, compare and blindness) against what a user would otherwise write: ``np.bincount`` (fast,
but its bits depend on the row order) and a sort by value within each group (order-free, O(n log n)).

1,000,000 rows of N(70, 10) scores (the float path; integer scores take ``np.bincount`` itself), 20 groups and 50,000
groups, fixed seed.

    python -m pytest benchmarks/bench_group_sums.py --benchmark-enable --benchmark-columns=median,iqr,rounds
    python benchmarks/bench_group_sums.py        # a table of medians and ratios from one run
"""
from __future__ import annotations

import statistics
import time

import numpy as np
import pytest

from ddpcore.stats._table import _sorted_group_sums, group_sums

N = 1_000_000


def _data(n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.integers(0, n_groups, N), rng.normal(70, 10, N)


METHODS = {
    "ddpcore group_sums (limbs)": group_sums,
    "np.bincount (order-dependent)": lambda c, v, g: np.bincount(c, weights=v, minlength=g),
    "sorted within groups": lambda c, v, g: _sorted_group_sums(c, v + 0.0, g),
}


@pytest.mark.parametrize("n_groups", [20, 50_000])
@pytest.mark.parametrize("method", list(METHODS))
def test_group_sums(benchmark, method: str, n_groups: int) -> None:
    codes, values = _data(n_groups)
    benchmark(METHODS[method], codes, values, n_groups)


def main() -> None:
    print("| groups | method | median ms (9 runs) | ratio to np.bincount |")
    print("|---:|---|---:|---:|")
    for n_groups in (20, 50_000):
        codes, values = _data(n_groups)
        med = {}
        for name, f in METHODS.items():
            times = []
            for _ in range(9):
                t0 = time.perf_counter()
                f(codes, values, n_groups)
                times.append(time.perf_counter() - t0)
            med[name] = statistics.median(times)
        base = med["np.bincount (order-dependent)"]
        for name, m in med.items():
            print(f"| {n_groups:,} | {name} | {m * 1e3:.1f} | {m / base:.1f} |")


if __name__ == "__main__":
    main()
