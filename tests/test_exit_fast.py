"""The ``ddp`` process ends without the interpreter's teardown (:func:`ddpcore.cli.main.exit_fast`, issue 25 §4)
but with everything Python's own exit does before it: non-daemon threads joined, ``atexit`` handlers run,
stdout and stderr flushed, the exit code kept."""
from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

PROBE = """
import atexit, sys, threading, time
from pathlib import Path
out = Path(sys.argv[1])

def later():
    time.sleep(0.3)
    (out / "thread").write_text("joined")

class Teardown:
    def __del__(self):
        (out / "teardown").write_text("ran")

keep = Teardown()  # alive until the interpreter's teardown
threading.Thread(target=later).start()  # not a daemon: the exit must wait for it
atexit.register(lambda: (out / "atexit").write_text("ran"))
sys.stdout.write("buffered, no newline")  # still in the buffer: the exit must flush it
from ddpcore.cli.main import exit_fast
exit_fast(int(sys.argv[2]))
"""


def _probe(tmp_path: Path, code: int, debug: bool) -> subprocess.CompletedProcess:
    # block-buffered stdout (a pipe, no PYTHONUNBUFFERED), so an exit that does not flush loses the probe's text
    env = {k: v for k, v in os.environ.items() if k not in ("DDPCORE_DEBUG", "PYTHONUNBUFFERED")}
    if debug:
        env["DDPCORE_DEBUG"] = "1"
    return subprocess.run([sys.executable, "-c", PROBE, str(tmp_path), str(code)], capture_output=True, text=True,
                          env=env, timeout=60)


@pytest.mark.parametrize("code", [0, 3])
def test_exit_fast_keeps_what_python_exit_does_and_skips_teardown(tmp_path: Path, code: int) -> None:
    proc = _probe(tmp_path, code, debug=False)
    assert proc.returncode == code, proc.stderr
    assert proc.stdout == "buffered, no newline"
    assert (tmp_path / "thread").read_text() == "joined"
    assert (tmp_path / "atexit").read_text() == "ran"
    # the teardown (objects freed one by one at the end) is what is skipped
    assert not (tmp_path / "teardown").exists()


def test_debug_keeps_the_full_teardown(tmp_path: Path) -> None:
    proc = _probe(tmp_path, 3, debug=True)
    assert proc.returncode == 3 and proc.stdout == "buffered, no newline"
    assert (tmp_path / "thread").exists() and (tmp_path / "atexit").exists()
    assert (tmp_path / "teardown").read_text() == "ran"  # the control: the probe's teardown does write


def test_console_script_ends_through_run() -> None:
    (ep,) = [e for e in entry_points(group="console_scripts") if e.name == "ddp"]
    assert ep.value == "ddpcore.cli.main:run"


@pytest.mark.parametrize(("argv", "code", "stream"), [
    (["--version"], 0, "stdout"),
    (["profile", "--no-such-option"], 2, "stderr"),
    (["profile", "no_such_file.jsonl"], 3, "stderr"),
])
def test_run_keeps_exit_codes_and_messages(tmp_path: Path, argv: list[str], code: int, stream: str) -> None:
    """``python -m ddpcore.cli.main`` ends through :func:`run`, as the console script does: argparse's own
    exits (``--version``, usage errors) and the commands' codes come out unchanged, with their one line."""
    proc = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *argv], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == code
    text = getattr(proc, stream)
    assert text.strip() and "Traceback" not in proc.stderr
    if code == 3:
        assert "[D102]" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_full_stdout_is_a_one_line_error_not_an_internal_one(tmp_path: Path) -> None:
    """stdout on a full device (``ddp info > /dev/full``): D138 naming what to do, exit 2; before, D999 ("please
    report"), as if ddpcore had a bug."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "info"], stdout=full, stderr=subprocess.PIPE,
                              text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ddp info: error: [D138] cannot write") and "D999" not in lines[0]
    assert "No space left on device" in lines[0]
