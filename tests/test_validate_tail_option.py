"""``ddp validate --tail``: comma-separated whole numbers >= 1 (docs/validation.md), anything else is D443,
exit 2, one line. Before, empty items were dropped: ``5,`` ``,5`` ``5,,15`` were read as 5 / 5,15."""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from ddpcore.cli.validate import _tails

TINY = Path(__file__).resolve().parent / "data" / "gold" / "conll2012" / "tiny.v4_gold_conll"
BAD = ["5,", ",5", "5,,15", " ", "", ",", "5, ,15", "0", "5,0", "-5", "+5", "1.5", "1e3", "²", "5;15"]


def test_type() -> None:
    for text in BAD:  # before: 5, / ,5 / 5,,15 / "5, ,15" accepted, "²" a ValueError (argparse: no code)
        with pytest.raises(argparse.ArgumentTypeError) as err:
            _tails(text)
        assert str(err.value) == (f"[D443] --tail {text!r}: give whole numbers of sentences >= 1 separated by "
                                  "commas, e.g. --tail 5,15")
    for text, want in [("5", (5,)), ("5,15", (5, 15)), ("15,5,5", (5, 15)), ("5, 15", (5, 15)), (" 1 ,3 ", (1, 3))]:
        assert _tails(text) == want


def test_cli_exit_2_one_line() -> None:
    for text in ["5,", ",5", "5,,15", " "]:
        proc = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "validate", str(TINY), f"--tail={text}"],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 2, (text, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and proc.stdout == ""
        assert lines[0].startswith(f"ddp validate: error: argument --tail: [D443] --tail {text!r}: ")
