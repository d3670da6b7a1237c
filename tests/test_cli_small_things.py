"""The small things a user trips on (issue 23 §4): the D101 of a .txt given to the table reader names the
readers that read it, D111 never says "segment None", and ``dir(ddpcore)`` shows the API only."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ddpcore.cli.main import main


def test_profile_txt_hints_the_line_readers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x.txt").write_text("Hello world.\nHe left.\n", encoding="utf-8")
    assert main(["profile", str(tmp_path / "x.txt"), "-o", str(tmp_path / "x.parquet"), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "[D101]" in err[0] and "--reader wmt24" in err[0] and "--reader lines" in err[0]
    assert not (tmp_path / "x.parquet").exists()
    # another unknown extension keeps the plain message (no reader hint where it does not apply)
    (tmp_path / "x.dat").write_text("a\n")
    assert main(["profile", str(tmp_path / "x.dat"), "-o", str(tmp_path / "y.parquet"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "[D101]" in err and "--reader" not in err


def test_empty_text_with_a_missing_segment_id_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"document_id": "a", "segment_id": 0, "source": "Fine."},
            {"document_id": "a", "segment_id": None, "source": "  "}]
    (tmp_path / "z.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["profile", str(tmp_path / "z.jsonl"), "-o", str(tmp_path / "z.parquet"), "-q"]) == 3
    err = capsys.readouterr().err
    assert "[D111]" in err and "row 2" in err and "segment id missing" in err and "None" not in err
    assert "document 'a'" in err


def test_dir_ddpcore_is_the_api() -> None:
    """In a fresh interpreter (nothing else imported): no helper names of ddpcore/__init__.py."""
    code = "import ddpcore; print(' '.join(dir(ddpcore)))"
    names = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert not {"Any", "sys", "annotations"} & set(names)
    assert {"profile", "profile_anchors", "explain", "stats", "summarize", "__version__"} <= set(names)
    assert all(not n.startswith("_") or n.startswith("__") for n in names)
