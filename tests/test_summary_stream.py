"""The streamed DDP summary (issue 25 §3: ``ddp profile`` no longer keeps a row per segment for its
summary table) against the whole-frame polars computation it replaces, kept here as the oracle:
the same groups, counts, mean, median, p90 (polars ``quantile(0.9, "linear")``), max and zero share,
whatever the pieces the frame is cut into."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from ddpcore.api import summarize
from ddpcore.pipeline.summary import SummaryAccumulator


def oracle(segments: pl.DataFrame, by: str | None, document: str = "document_id") -> pl.DataFrame:
    """The summary as ddpcore computed it before the streamed one: polars over the whole frame."""
    aggs = [
        pl.col(document).n_unique().alias("documents"),
        pl.len().alias("segments"),
        pl.col("ddp").mean().alias("mean_ddp"),
        pl.col("ddp").median().alias("median_ddp"),
        pl.col("ddp").quantile(0.9, "linear").alias("p90_ddp"),
        pl.col("ddp").max().cast(pl.Int64).alias("max_ddp"),
        (pl.col("ddp") == 0).mean().alias("zero_ddp_share"),
    ]
    total = segments.select(pl.lit("all").alias("group"), *aggs)
    if by is None or by not in segments.columns:
        return total
    per = (segments.with_columns(pl.col(by).cast(pl.String).fill_null("(none)").alias("group"))
           .group_by("group").agg(*aggs).sort("group"))
    return pl.concat([per, total.cast(per.schema)])


def _frame(ddp: list[int | None], docs: list[int], groups: list[str | None]) -> pl.DataFrame:
    return pl.DataFrame({"document_id": [f"d{d}" for d in docs], "domain": groups, "ddp": ddp},
                        schema={"document_id": pl.String, "domain": pl.String, "ddp": pl.Int64})


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 60).flatmap(lambda n: st.tuples(
    st.lists(st.one_of(st.integers(0, 30), st.integers(0, 500)), min_size=n, max_size=n),
    st.lists(st.integers(0, 8), min_size=n, max_size=n),
    st.lists(st.sampled_from(["news", "literary", None, "speech"]), min_size=n, max_size=n),
    st.lists(st.integers(1, 7), min_size=1, max_size=6))))
def test_pieces_give_the_whole_frame_summary(case):
    ddp, docs, groups, cuts = case
    frame = _frame(ddp, docs, groups)
    acc = SummaryAccumulator("domain", "document_id")
    start = 0
    for size in cuts * 20:  # pieces of varying sizes until the frame is used up
        if start >= frame.height:
            break
        acc.add(frame.slice(start, size))
        start += size
    if start < frame.height:
        acc.add(frame.slice(start))
    assert_frame_equal(acc.table(), oracle(frame, "domain"))
    assert_frame_equal(summarize(frame, by="domain"), oracle(frame, "domain"))
    assert_frame_equal(summarize(frame, by=None), oracle(frame, None))


def test_fixed_vector():
    # by hand: news [0, 2, 4] -> mean 2, median 2, p90 at position 1.8 between 2 and 4 = 3.6, zero 1/3;
    # literary [10] ; all [0, 2, 4, 10] -> mean 4, median 3, p90 at 2.7: 4 + 0.7 * 6 = 8.2, zero 1/4
    f = _frame([0, 2, 4, 10], [1, 1, 2, 3], ["news", "news", "news", "literary"])
    t = summarize(f, by="domain")
    assert t["group"].to_list() == ["literary", "news", "all"]
    assert t["documents"].to_list() == [1, 2, 3] and t["segments"].to_list() == [1, 3, 4]
    assert t["mean_ddp"].to_list() == [10.0, 2.0, 4.0] and t["median_ddp"].to_list() == [10.0, 2.0, 3.0]
    assert t["p90_ddp"].to_list() == pytest.approx([10.0, 3.6, 8.2]) and t["max_ddp"].to_list() == [10, 4, 10]
    assert t["zero_ddp_share"].to_list() == [0.0, 1 / 3, 0.25]


def test_many_pieces_are_merged_and_nulls_and_empty():
    rng = np.random.default_rng(3)
    n = 5_000
    f = _frame(rng.integers(0, 40, n).tolist(), rng.integers(0, 300, n).tolist(),
               rng.choice(["a", "b", "c"], n).tolist())
    acc = SummaryAccumulator("domain")
    for lo in range(0, n, 37):  # > 64 pieces: the merge step runs
        acc.add(f.slice(lo, 37))
    assert_frame_equal(acc.table(), oracle(f, "domain"))
    with_null = _frame([None, 3, 0], [1, 1, 2], ["a", None, "a"])
    assert_frame_equal(summarize(with_null, by="domain"), oracle(with_null, "domain"))
    empty = _frame([], [], [])
    assert_frame_equal(summarize(empty, by="domain"), oracle(empty, "domain"), check_dtypes=False)
