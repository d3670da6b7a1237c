"""Issue 19, helper 8: interrupted ``ddp validate -j 2`` and the SVG figures of ``ddp plot``/``ddp report``.

``ddp validate -j 2`` interrupted with Ctrl-C (SIGINT to the process group, as a terminal sends it)
must end its spaCy workers and exit 130 at once with one line; before, the interpreter's exit
waited for the workers to finish the chunk they were parsing (up to 200,000 characters each:
seconds on a quiet machine, 30 s and more on a busy one).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

GOLD = Path(__file__).resolve().parents[1] / "data" / "gold"
ONTOGUM_DOC = GOLD / "ontogum" / "GUM_interview_brotherhood.conllu"


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] not in "ZX"
    except (OSError, IndexError):
        return False


@pytest.mark.spacy_model
@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc to watch the workers")
def test_validate_j2_interrupted_ends_its_workers_and_exits_130_at_once(tmp_path: Path) -> None:
    # 800 copies of one OntoGUM document (2.1 M characters of gold text), "the" made "the<i>" in copy i so
    # that the copies' sentences differ (identical lines are parsed once): the parse of a 1 M-character
    # batch goes to the two workers in chunks of up to 200,000 characters, several seconds each
    gold = tmp_path / "gold"
    gold.mkdir()
    text = ONTOGUM_DOC.read_text(encoding="utf-8")
    name = "GUM_interview_brotherhood"
    with open(gold / "big.conllu", "w", encoding="utf-8") as fh:
        for i in range(800):  # one iteration per document copy
            copy = text.replace(f"# newdoc id = {name}", f"# newdoc id = {name}_{i}", 1)
            fh.write(re.sub(r"(?<=[\t ])the(?=[\t ])", f"the{i}", copy))
            fh.write("\n" if not text.endswith("\n\n") else "")
    env = dict(os.environ, DDPCORE_CACHE=str(tmp_path / "cache"))  # every line is parsed
    proc = subprocess.Popen([sys.executable, "-m", "ddpcore.cli.main", "validate", str(gold), "-j", "2", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while len(_children(proc.pid)) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        workers = _children(proc.pid)
        assert len(workers) >= 2, f"the workers did not start (exit {proc.poll()})"
        time.sleep(3.0)  # past the first small chunks: each worker is inside a large one
        assert proc.poll() is None, "the run ended before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole process group
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60 and (proc.poll() is None or any(_alive(w) for w in workers)):
            time.sleep(0.05)
        took = time.monotonic() - t0
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["ddp validate: interrupted"]
    assert out == ""  # no result printed for an interrupted run
    # at once: the workers are ended (terminate, 2 s at most to join), not waited for
    assert took < 3.0, f"exited {took:.1f} s after SIGINT"
    assert not any(_alive(w) for w in workers)
