"""Rows whose DDP lies outside every ``--bins`` bin are said (a warning in ``signature["warnings"]``) instead of
vanishing from the bins in silence (a tester's report: ``--bins 10,100`` left 22 of 30 rows in no bin)."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from ddpcore.stats.stratify import stratify

DDP = [0, 1, 3, 7, 12, 20, 40, 150, 9, 10]


def _frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    n = len(DDP)
    prof = pl.DataFrame({"document_id": [f"d{i // 2}" for i in range(n)], "segment_id": list(range(n)), "ddp": DDP})
    scores = pl.DataFrame({"document_id": prof["document_id"], "segment_id": prof["segment_id"],
                           "score": np.linspace(0.0, 1.0, n)})
    return prof, scores


@pytest.mark.parametrize(("bins", "low", "high"), [("10,100", 10, 100), ("0,5", 0, 5), ("2,inf", 2, float("inf"))])
def test_rows_outside_the_bins_are_said(bins: str, low: float, high: float) -> None:
    prof, scores = _frames()
    res = stratify(prof, scores, "score", n_boot=0, bins=bins)
    outside = sum(1 for d in DDP if not low <= d < high)  # the loop the warning must agree with
    group = res["groups"][0]
    assert group["n"] == len(DDP) and sum(b["n"] for b in group["bins"]) == len(DDP) - outside
    said = [w for w in res["signature"]["warnings"] if "outside the bins" in w]
    assert said == [f"{outside:,} of {len(DDP):,} score rows have a DDP outside the bins [{low:g}, {high:g}) (--bins) "
                    "and are in no bin: each group's n and Spearman count them, its bins do not"]


def test_default_bins_cover_every_row() -> None:
    prof, scores = _frames()
    res = stratify(prof, scores, "score", n_boot=0)
    assert not [w for w in res["signature"]["warnings"] if "outside the bins" in w]
    assert sum(b["n"] for b in res["groups"][0]["bins"]) == len(DDP)


def test_text_join_line_counts_unused_segments_for_what_they_are() -> None:
    """A profile segment with a score but no DDP value is "unused", not "without a score" (a tester's report)."""
    from ddpcore.stats.stratify import to_text

    prof, scores = _frames()
    prof = prof.with_columns(pl.when(pl.col("segment_id") == 3).then(None).otherwise(pl.col("ddp")).alias("ddp"))
    text = to_text(stratify(prof, scores, "score", n_boot=0))
    assert f"1 of {len(DDP)} profile segments unused (no score row, only null scores, or no DDP value)" in text
