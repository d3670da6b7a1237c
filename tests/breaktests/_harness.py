"""Break-test harness: run one ``ddp`` command on hostile input and check that it fails cleanly.

A break test is one row of a table (:class:`Case`): the command, the input files it gets
(created in a fresh temporary folder, the working directory of the command), the expected
exit code and a regular expression for the single line it must print on stderr. Every row
is checked for the same promises (issue 7):

- the exit code is the expected one (0 ok, 1 a ``--fail-on`` gate, 2 usage, 3 bad data,
  4 internal error);
- no traceback reaches the user, and a failing command prints exactly one non-empty line on
  stderr (plus any ``warning:`` lines the row allows), matching ``stderr``;
- every input file is byte-for-byte unchanged;
- no file appears besides the row's declared ``outputs`` (no half-written output, no
  temporary file left behind).

Rows live in ``test_break_*.py`` files, one per area (profile/io, stats, validate/cli).
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

#: seconds one command may take; break tests fail fast, before any pipeline is loaded
TIMEOUT = 120


@dataclass(frozen=True)
class Case:
    """One break test.

    ``argv`` follows ``ddp`` and is run with the temporary folder as working directory, so
    relative names refer to ``files``. ``files`` maps relative paths to contents (``str`` is
    written as UTF-8, ``bytes`` as is; a name ending in ``/`` makes a folder). ``stderr`` is a
    regular expression searched in the one stderr line. ``outputs`` are the files the command
    is expected to create (relative paths); anything else new is a defect.
    """

    id: str
    argv: tuple[str, ...]
    exit: int
    stderr: str
    files: dict[str, str | bytes] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()
    stdin: bytes | None = None
    allow_warnings: bool = False
    env: dict[str, str] = field(default_factory=dict)
    timeout: float = TIMEOUT


def _snapshot(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "symlink:" + os.readlink(p)
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def make_files(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        p = root / rel
        if rel.endswith("/"):
            p.mkdir(parents=True, exist_ok=True)
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")


def run_case(case: Case, tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    """Run ``case`` in ``tmp_path`` and assert every promise of the module docstring."""
    make_files(tmp_path, case.files)
    before = _snapshot(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "DDPCORE_DEBUG"}
    env.setdefault("DDPCORE_CACHE", str(tmp_path.parent / f".cache-{tmp_path.name}"))
    env.update(case.env)
    proc = subprocess.run(
        [sys.executable, "-m", "ddpcore.cli.main", *case.argv],
        cwd=tmp_path,
        input=case.stdin if case.stdin is not None else b"",
        capture_output=True,
        timeout=case.timeout,
        env=env,
    )
    err = proc.stderr.decode("utf-8", "replace")
    ctx = f"ddp {' '.join(case.argv)}\n--- exit {proc.returncode}\n--- stderr:\n{err}"
    assert "Traceback" not in err, ctx
    assert proc.returncode == case.exit, ctx
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if case.allow_warnings:
        lines = [ln for ln in lines if "warning" not in ln.lower()]
    if case.exit != 0:
        assert len(lines) == 1, f"expected one line on stderr\n{ctx}"
    if case.stderr:
        assert any(re.search(case.stderr, ln) for ln in lines), f"stderr does not match {case.stderr!r}\n{ctx}"
    after = _snapshot(tmp_path)
    for rel, digest in before.items():
        assert after.get(rel) == digest, f"input {rel} was changed or removed\n{ctx}"
    new = sorted(set(after) - set(before))
    assert new == sorted(case.outputs), f"unexpected files {new} (expected {sorted(case.outputs)})\n{ctx}"
    return proc


def parametrize(cases: list[Case]):  # type: ignore[no-untyped-def]
    """``@parametrize(CASES)`` over a table of cases, with their ids."""
    ids = [c.id for c in cases]
    assert len(set(ids)) == len(ids), "break-test ids must be unique"
    return pytest.mark.parametrize("case", cases, ids=ids)


def check_stderr_code(proc: subprocess.CompletedProcess[bytes], code: str) -> None:
    assert re.search(rf"\[{code}\]", proc.stderr.decode()), proc.stderr.decode()
