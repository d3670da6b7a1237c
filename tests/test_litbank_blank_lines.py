"""LitBank brat ``.txt``: blank lines (or lines of spaces) at the end hold no sentence and are ignored; a
blank line before the last sentence is D412 naming the .txt and its line. Before, each blank line became a
sentence without tokens and the run failed with D111 naming an internal table ("<table>, row 79")."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ddpcore.errors import DDPDataError
from ddpcore.io.gold import read_gold

LITBANK = Path(__file__).resolve().parent / "data" / "gold" / "litbank" / "tsv"
STEM = "271_black_beauty_brat"


def copy_litbank(dest: Path) -> Path:
    dest.mkdir()
    for p in LITBANK.iterdir():
        shutil.copy(p, dest / p.name)
    return dest / f"{STEM}.txt"


def original_lines() -> list[str]:
    return (LITBANK / f"{STEM}.txt").read_text(encoding="utf-8").split("\n")[:-1]  # the file ends with "\n"


def unreferenced_line() -> int:
    """A 0-based sentence of the .txt that no MENTION record of the .ann starts or ends in."""
    used = set()
    for line in (LITBANK / f"{STEM}.ann").read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if parts[0] == "MENTION":
            used |= {int(parts[2]), int(parts[4])}
    free = [i for i in range(1, len(original_lines()) - 1) if i not in used]
    assert free, "every sentence of the fixture has a mention"
    return free[0]


@pytest.mark.parametrize("tail", ["\n\n", "   \n\t\n\n", " "])
def test_trailing_blank_lines_are_ignored(tmp_path: Path, tail: str) -> None:
    txt = copy_litbank(tmp_path / "lb")
    with open(txt, "a", encoding="utf-8") as fh:
        fh.write(tail)
    got = read_gold([tmp_path / "lb"])
    want = read_gold([LITBANK])
    n = len(original_lines())  # 78: one sentence per line of the original file
    assert got.sentences.height == want.sentences.height == n
    assert got.sentences["text"].to_list() == original_lines()
    assert got.mentions.equals(want.mentions)


def test_blank_line_inside_is_d412_naming_the_txt_and_line(tmp_path: Path) -> None:
    txt = copy_litbank(tmp_path / "lb")
    i = unreferenced_line()
    lines = original_lines()
    lines[i] = "  "
    txt.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DDPDataError) as err:
        read_gold([tmp_path / "lb"])
    assert err.value.code == "D412"
    assert str(err.value).startswith(f"[D412] {txt}: line {i + 1} is blank; ")


def test_cli(tmp_path: Path) -> None:
    """The bug report's case runs; a blank line inside fails with exit 3 and one line naming file and line."""
    inner = copy_litbank(tmp_path / "inner")
    i = unreferenced_line()
    lines = original_lines()
    lines[i] = ""
    inner.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "validate", "inner"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 3, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"ddp validate: error: [D412] inner/{STEM}.txt: line {i + 1} is blank; "), proc.stderr


@pytest.mark.spacy_model
def test_cli_trailing_blank_lines(tmp_path: Path) -> None:
    txt = copy_litbank(tmp_path / "lb")
    with open(txt, "a", encoding="utf-8") as fh:
        fh.write("\n\n")
    proc = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "validate", "lb", "-q"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["overall"]["n_segments"] == len(original_lines())
    assert report["signature"]["gold"]["sentences"] == len(original_lines())
