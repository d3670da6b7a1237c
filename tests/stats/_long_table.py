"""The small long table the stats tests of the 2026-12-07 fixes share, and a CLI runner."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from ddpcore.cli.main import main


def long_table(n_docs: int = 6, seed: int = 0) -> pl.DataFrame:
    """document_id, segment_id, system, annotator, condition, score: 4 systems 5 points apart, 3 segments a
    document, DOC and MIX one point apart (shape: ``n_docs * 3 * 4 * 2`` rows)."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(n_docs):
        for s in range(3):
            for i, sy in enumerate(["s1", "s2", "s3", "s4"]):
                b = 70 + 5 * i + rng.normal(0, 5)
                for c in ("DOC", "MIX"):
                    rows.append(dict(document_id=f"d{d}", segment_id=s, system=sy, annotator=f"a{(d + i) % 3}",
                                     condition=c, score=b + rng.normal(0, 3) + (c == "MIX")))
    return pl.DataFrame(rows)


def run_stats(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``ddp stats ARGV`` in process: exit code, stdout, stderr."""
    code = main(["stats", *argv])
    out, err = capsys.readouterr()
    return code, out, err
