"""An input column of lists (JSON Lines) is refused before the parse where it cannot go: a CSV/TSV segment
table (D140) or ``--summary-by`` (D139); before, both were D999 after the whole parse, leaving a work folder."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

ROWS = [{"document_id": "d1", "segment_id": 0, "source": "John came.", "tags": ["x"]},
        {"document_id": "d1", "segment_id": 1, "source": "He left.", "tags": []}]


def _ddp(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", "in.jsonl", *args, "-q", "--no-cache"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("args", "code", "fmt"), [
    (("-o", "out.csv"), "D140", "CSV"), (("-o", "out.tsv.gz"), "D140", "TSV"),
    (("-o", "-", "--stdout-format", "csv"), "D140", "CSV"), (("-o", "out.parquet", "--summary-by", "tags"), "D139", None),
])
def test_refused_before_the_parse(tmp_path: Path, args: tuple[str, ...], code: str, fmt: str | None) -> None:
    r = _ddp(tmp_path, *args)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and f"[{code}]" in r.stderr and "'tags'" in r.stderr.replace(
        "--summary-by tags", "'tags'")
    if fmt:
        assert f"{fmt} cannot hold" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]  # no output, no work folder


def test_jsonl_and_parquet_keep_the_lists(tmp_path: Path) -> None:
    r = _ddp(tmp_path, "-o", "out.parquet")
    assert r.returncode == 0, r.stderr
    assert pl.read_parquet(tmp_path / "out.parquet")["tags"].to_list() == [["x"], []]
