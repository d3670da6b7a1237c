"""An output name that is not UTF-8 (a raw byte from the shell) is D141 before any work, naming the byte; it was
D999 (UnicodeEncodeError) after the whole parse."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.skipif(sys.platform == "win32" or os.fsencode("x") == b"", reason="POSIX byte file names")
@pytest.mark.parametrize("command", [["profile", "in.jsonl", "-o"], ["profile", "in.jsonl", "-o", "ok.parquet",
                                                                      "--anchors"]])
def test_non_utf8_output_name_is_d141(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "in.jsonl").write_text('{"document_id": "d", "segment_id": 0, "source": "Ann left."}\n')
    bad = os.fsdecode(b"o\xfe.parquet")
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *command, bad], cwd=tmp_path, capture_output=True,
                       timeout=120)
    err = r.stderr.decode("utf-8")
    assert r.returncode == 2 and err.count("\n") == 1 and "[D141]" in err and "o\\xfe.parquet" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
