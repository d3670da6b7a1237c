"""``--batch-size`` of every command that has it (explain, profile, validate: one definition in
``cli._common.add_extraction_options``) accepts whole numbers >= 1 only: anything else is one usage line
``[D212]`` with exit 2 at option parsing. Before, 0 or a negative size reached the parse (D999, exit 4:
ArrowInvalid / islice ValueError / broadcast ValueError) or, when the parse cache answered, passed unnoticed.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest

GOLD = Path(__file__).resolve().parent / "data" / "gold"
TINY = GOLD / "conll2012" / "tiny.v4_gold_conll"
BAD = ["0", "-2", "1.5", "abc", "", "1e3"]


def ddp(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def assert_d212(proc: subprocess.CompletedProcess[str], command: str, value: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith(f"ddp {command}: error: argument --batch-size: [D212] "), line
    assert f"not {value!r}" in line and ">= 1" in line
    assert "D999" not in line and "Traceback" not in proc.stderr
    assert proc.stdout == ""


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """The first 30 lines of the bundled WMT25 source, as in the bug report."""
    src = files("ddpcore") / "data" / "wmt25_en_source.jsonl"
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)[:30]
    p = tmp_path / "small.jsonl"
    p.write_text("".join(lines), encoding="utf-8")
    return p


def test_type_accepts_whole_numbers_from_one() -> None:
    from ddpcore.cli._common import batch_size_arg

    assert [batch_size_arg(t) for t in ("1", "7", "256", " 3 ")] == [1, 7, 256, 3]
    for t in [*BAD, "-0", "²", "+5", " "]:
        with pytest.raises(argparse.ArgumentTypeError, match=r"^\[D212\] "):
            batch_size_arg(t)


@pytest.mark.parametrize("value", BAD)
def test_validate_refuses_at_parsing(value: str) -> None:
    assert_d212(ddp("validate", str(TINY), f"--batch-size={value}"), "validate", value)


@pytest.mark.parametrize("value", ["0", "-2"])
def test_profile_and_explain_refuse_at_parsing(value: str, small: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.parquet"
    assert_d212(ddp("profile", str(small), "--no-cache", "--batch-size", value, "-o", str(out), "-j", "1"),
                "profile", value)
    assert not out.exists()
    assert_d212(ddp("explain", str(small), "--document", "rink_rats_chapter1", "--segment", "1",
                    "--batch-size", value), "explain", value)


@pytest.mark.spacy_model
def test_refused_with_a_warm_cache_and_a_valid_size_still_runs(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The bug report's second case: with the parse cache warm, --batch-size -2 was silently accepted."""
    monkeypatch.setenv("DDPCORE_CACHE", str(tmp_path / "cache"))
    warm = ddp("validate", str(TINY), "-q", "--batch-size", "1")
    assert warm.returncode == 0, warm.stderr
    # the hand-written file has 8 gold sentences (tests/gold/test_gold_distances.py), each one segment
    assert json.loads(warm.stdout)["overall"]["n_segments"] == 8
    assert_d212(ddp("validate", str(TINY), "-q", "--batch-size", "-2"), "validate", "-2")
    assert_d212(ddp("validate", str(TINY), "-q", "--batch-size=0"), "validate", "0")


@pytest.mark.parametrize("size", [0, -2, 1.5, True])
def test_python_api_refuses_it_too(size: object) -> None:
    """The Python API (``Parser``, behind ``profile_anchors`` and ``validate``) says D212 too, not ArrowInvalid."""
    from ddpcore.errors import DDPUsageError
    from ddpcore.pipeline.parse import Parser

    with pytest.raises(DDPUsageError) as e:
        Parser(None, batch_size=size)  # type: ignore[arg-type]
    assert e.value.code == "D212"
