"""``--certify-model PATH``: a path the user gives is resolved against the working folder first; a bare
name of a packaged model (certify-v5.json) still finds the packaged file; a path that exists nowhere is
reported as the user gave it (D250), not as the packaged folder's ``.../anchors/data/nope.json``."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ddpcore.anchors import certify_model as cm

TINY = Path(__file__).resolve().parent / "data" / "gold" / "conll2012" / "tiny.v4_gold_conll"
PACKAGED = Path(cm.__file__).resolve().parent / "data"


def ddp(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def test_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cm.certify_model_path("nope.json") == Path("nope.json")  # before: PACKAGED / "nope.json"
    assert cm.certify_model_path("sub/nope.json") == Path("sub/nope.json")
    # packaged names still find the packaged files
    for name in ("certify-v5.json", "certify-v5-noparser.json"):
        assert cm.certify_model_path(name) == PACKAGED / name
    assert cm.certify_model_path(None) == PACKAGED / "certify-v5.json"
    # a file of the user's in the working folder comes first, even with a packaged model's name
    shutil.copy(PACKAGED / "certify-v5.json", tmp_path / "certify-v5.json")
    assert cm.certify_model_path("certify-v5.json") == Path("certify-v5.json")


def test_cli_names_the_missing_file_as_given(tmp_path: Path) -> None:
    proc = ddp("validate", str(TINY), "--certify-model", "nope.json", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert lines[0] == ("ddp validate: error: [D250] nope.json: cannot read the certification model "
                        "(No such file or directory); check --certify-model")
    # a model of the user's under a relative path is read from the working folder (it is loaded before any
    # parse: a damaged file fails with its own path, D251, showing which file was read)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "mine.json").write_text("{not json", encoding="utf-8")
    proc = ddp("validate", str(TINY), "--certify-model", "models/mine.json", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith("ddp validate: error: [D251] models/mine.json: not JSON")
    (tmp_path / "nope.json").write_text("[]", encoding="utf-8")  # now a bare name that exists here
    proc = ddp("validate", str(TINY), "--certify-model", "nope.json", cwd=tmp_path)
    assert proc.returncode == 3 and proc.stderr.startswith("ddp validate: error: [D251] nope.json: not a ddpcore")
