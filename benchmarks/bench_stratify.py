"""Benchmark of ``ddp stratify`` (issue 9, section 8) and of the streaming ``ddp select``/``ddp sample``.

Problem (synthetic, seeded): a profile of 1,000,000 segments in 50,000 documents (20 segments each,
DDP drawn from a geometric-like distribution 0..400) and 10,000,000 score rows (10 systems x 1 M
segments; score = 80 - 0.05 DDP + noise), both Parquet. ``ddp stratify --by system`` = the lazy scan,
the join of 10 M rows to 1 M segments, per-group Spearman (1 M points each), binned means, LOWESS on a
20,000-point subsample and the document bootstrap (50,000 documents per group).

select/sample: a 1 M-row JSONL input (~110 MB) and its profile; ``ddp select --top-share 0.1
--with-context`` and ``ddp sample --per-bin 1000 --by segment`` as subprocesses, wall time and peak RSS.

    python benchmarks/stratify_table.py            # medians of repeated runs
    python -m pytest benchmarks/bench_stratify.py --benchmark-enable --benchmark-columns=median,iqr,rounds
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

N_SEG, SEG_PER_DOC, N_SYS = 1_000_000, 20, 10


def make_data(folder: Path, n_seg: int = N_SEG, n_sys: int = N_SYS, seed: int = 0) -> tuple[Path, Path]:
    """Write ``ddp.parquet`` (n_seg segments) and ``scores.parquet`` (n_sys x n_seg rows) into ``folder``."""
    import numpy as np
    import polars as pl
    import pyarrow.parquet as pq

    prof, scores = folder / "ddp.parquet", folder / "scores.parquet"
    if prof.exists() and scores.exists() and pl.scan_parquet(prof).select(pl.len()).collect().item() == n_seg:
        return prof, scores
    rng = np.random.default_rng(seed)
    doc = np.arange(n_seg) // SEG_PER_DOC
    seg = np.arange(n_seg) % SEG_PER_DOC
    ddp = np.minimum(rng.geometric(0.08, n_seg) - 1, 400)
    p = pl.DataFrame({"document_id": pl.Series(doc).cast(pl.String), "segment_id": seg, "domain": "x",
                      "n_sentences": np.full(n_seg, 3), "ddp": ddp, "first_sentence": seg * 3})
    t = p.to_arrow().replace_schema_metadata({b"ddpcore.signature": json.dumps(
        {"columns": {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"}}).encode()})
    pq.write_table(t, prof)
    s = pl.DataFrame({
        "system": np.repeat([f"sys{i:02d}" for i in range(n_sys)], n_seg),
        "document_id": pl.Series(np.tile(doc, n_sys)).cast(pl.String),
        "segment_id": np.tile(seg, n_sys),
        "score": 80 - 0.05 * np.tile(ddp, n_sys) + rng.normal(0, 10, n_sys * n_seg),
    })
    s.write_parquet(scores, row_group_size=1_000_000)
    return prof, scores


def run_stratify(prof: Path, scores: Path, n_boot: int, threads: int | None = None) -> Any:
    from ddpcore.cli.stratify import stratify_files  # ddp stratify's path: files read in io/, frames to stats

    return stratify_files(prof, scores, "score", by=["system"], n_boot=n_boot, seed=0, threads=threads)


def make_jsonl(folder: Path, n_rows: int = N_SEG) -> tuple[Path, Path]:
    """A JSONL input of n_rows segments (~110 bytes each) beside a matching profile."""
    import numpy as np
    import polars as pl

    src = folder / f"in_{n_rows}.jsonl"
    prof, _ = make_data(folder, n_seg=n_rows, n_sys=1) if n_rows != N_SEG else make_data(folder)
    if not src.exists():
        doc = np.arange(n_rows) // SEG_PER_DOC
        pl.DataFrame({"document_id": pl.Series(doc).cast(pl.String), "segment_id": np.arange(n_rows) % SEG_PER_DOC,
                      "i": np.arange(n_rows)}).select(
            "document_id", "segment_id",
            pl.format("Segment {} of a synthetic document, with a little text to copy.", "i").alias("source"),
            pl.lit("x").alias("domain")).write_ndjson(src)
    return src, prof


@pytest.mark.benchmark(group="stratify")
def test_bench_stratify_small(benchmark: Any, tmp_path: Path) -> None:
    prof, scores = make_data(tmp_path, n_seg=100_000, n_sys=10)
    benchmark(run_stratify, prof, scores, 200)
