"""Per-segment annotation time against a per-task loop."""
from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import polars as pl
import pytest

from ddpcore.errors import DDPDataError
from ddpcore.stats.timing import annotation_time_per_segment


def loop_oracle(df: pl.DataFrame, max_gap: float = 120.0) -> dict[str, float]:
    out = {}
    for task in sorted(set(df["task_id"].to_list())):
        sub = df.filter(pl.col("task_id") == task)
        times = sorted(sub["timestamp"].to_list())
        active = sum(b - a for a, b in zip(times, times[1:]) if b - a <= max_gap)
        out[task] = active / len(set(sub["segment_id"].to_list()))
    return out


def test_matches_loop_and_drops_long_gaps():
    rng = np.random.default_rng(0)
    rows = []
    for t in range(20):
        clock = 0.0
        for s in range(int(rng.integers(1, 8))):
            for _ in range(int(rng.integers(1, 4))):
                clock += float(rng.choice([rng.uniform(1, 60), rng.uniform(121, 900), 120.0]))
                rows.append((f"task{t:02d}", s, clock))
    df = pl.DataFrame(rows, schema=["task_id", "segment_id", "timestamp"], orient="row").sample(fraction=1.0, shuffle=True, seed=1)
    out = annotation_time_per_segment(df)
    oracle = loop_oracle(df)
    assert out["task_id"].to_list() == sorted(oracle)
    assert np.allclose(out["seconds_per_segment"].to_numpy(), [oracle[t] for t in sorted(oracle)], rtol=1e-12)
    assert (out["n_gaps_dropped"] > 0).any()


def test_hand_example_with_datetimes_and_two_columns():
    t0 = datetime(2025, 1, 1, 12, 0, 0)
    df = pl.DataFrame(
        {
            "annotator": ["a", "a", "a"],
            "segment_id": [1, 2, 3],
            "start_time": [t0, t0 + timedelta(seconds=40), t0 + timedelta(seconds=400)],
            "end_time": [t0 + timedelta(seconds=30), t0 + timedelta(seconds=70), t0 + timedelta(seconds=460)],
        }
    )
    out = annotation_time_per_segment(df, task="annotator", time=["start_time", "end_time"])
    # actions at 0, 30, 40, 70, 400, 460 s: gaps 30, 10, 30, (330 dropped), 60 -> 130 s over 3 segments
    assert out["active_seconds"].to_list() == [130.0] and out["n_gaps_dropped"].to_list() == [1]
    assert out["seconds_per_segment"].to_list() == [pytest.approx(130.0 / 3)]


def test_errors():
    df = pl.DataFrame({"task_id": ["a", "a"], "segment_id": [1, 2], "timestamp": [1.0, None]})
    with pytest.raises(DDPDataError, match="D317"):
        annotation_time_per_segment(df)
    with pytest.raises(DDPDataError, match=r"D301.*'ts'"):
        annotation_time_per_segment(df, time="ts")
    bad = pl.DataFrame({"task_id": ["a", "a"], "n": [2, 3], "timestamp": [1.0, 2.0]})
    with pytest.raises(DDPDataError, match="several values"):
        annotation_time_per_segment(bad, n_segments="n")
