"""Only ``-o`` of ``ddp profile`` writes to stdout: ``--anchors -`` and ``--sentences -`` are D135 like
``--documents -`` (a tester's report: the anchors' JSON Lines and the summary table were mixed on stdout, exit 0)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("option", ["--anchors", "--sentences", "--documents"])
def test_second_tables_cannot_go_to_stdout(tmp_path: Path, option: str) -> None:
    (tmp_path / "in.jsonl").write_text('{"document_id": "d", "segment_id": 0, "source": "Ann left."}\n')
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", "in.jsonl", "-o", "p.parquet", option, "-"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == f"ddp profile: error: [D135] {option}: give a file name; only -o can write to stdout\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]  # refused before any work
