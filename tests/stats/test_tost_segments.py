"""tost_grouped's segmented kernel gives the same table as the factorise + group_moments path."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ddpcore._native import load
from ddpcore.stats.tost import tost_grouped


def _table(seed: int, n_groups: int = 40, nan: bool = False, keys: str = "int") -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, n_groups)
    g = np.repeat(np.arange(n_groups) * 3 - 20, sizes)
    x = np.round(rng.normal(50, 5, g.size), 1)
    y = x + np.round(rng.normal(0, 2, g.size), 1)
    const = np.isin(g, g[::7])
    y[const] = x[const] - 1.5  # zero-variance groups
    if nan:
        x[rng.random(g.size) < 0.1] = np.nan
    df = pl.DataFrame({"g": g, "x": x, "y": y, "h": g % 2})
    if keys == "str":
        df = df.with_columns(pl.format("s{}", pl.col("g") + 1000).alias("g"))
    return df


def _fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load("stats_segments"), "segment_moments", lambda *args: -1)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("case", ["int", "str", "two_cols", "nan_omit", "unpaired", "unsorted"])
def test_segmented_equals_group_moments(seed, case, monkeypatch):
    df = _table(seed, nan=case == "nan_omit", keys="str" if case == "str" else "int")
    by = ["h", "g"] if case == "two_cols" else "g"
    if case == "two_cols":
        df = df.sort(["h", "g"], maintain_order=True)
    if case == "unsorted":
        df = df.sample(fraction=1.0, shuffle=True, seed=seed)
    kw = dict(low=-3.0, high=3.0, nan_policy="omit" if case == "nan_omit" else "raise",
              paired=case != "unpaired")
    fast = tost_grouped(df, by, "x", "y", **kw)
    _fallback(monkeypatch)
    slow = tost_grouped(df, by, "x", "y", **kw)
    assert_frame_equal(fast, slow, check_exact=True)  # bit-for-bit, NaN where NaN


def test_segment_kernel_refuses_decreasing_keys():
    seg = load("stats_segments")
    out = [np.empty(3), np.empty(3), np.empty(3), np.empty(3, dtype=np.uint8), np.empty(3, dtype=np.int64)]
    keys = np.array([0, 0, 2, 1], dtype=np.int64)
    assert seg.segment_moments(keys, np.ones(4), None, *out) == -1
    keys = np.array([0, 0, 1, 1, 5], dtype=np.int64)
    k = seg.segment_moments(keys, np.array([1.0, 3.0, 2.0, 2.0, 7.0]), None, *out)
    # hand: segments {1,3}: n 2, mean 2, ss 2; {2,2}: constant 2; {7}: n 1, constant
    assert k == 3
    assert list(out[0]) == [2.0, 2.0, 1.0] and list(out[1]) == [2.0, 2.0, 7.0] and out[2][0] == 2.0
    assert list(out[3]) == [0, 1, 1] and list(out[4]) == [0, 2, 4]
