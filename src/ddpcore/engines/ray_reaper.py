"""Watchdog of a local Ray started by ``ddp profile --engine ray`` (run as a script, stdlib only).

``python ray_reaper.py TOKEN [WORK]``: blocks on its stdin, a pipe whose other end only the
driver holds. When the pipe closes — the driver ended, normally or killed with SIGKILL — it
ends every process whose environment carries ``DDPCORE_RAY_OWNER=TOKEN`` (the GCS, raylet,
agents and workers of the driver's local Ray: they inherit it from the driver at
``ray.init``) and removes the work folder ``WORK``. Ray's own fate sharing ends the GCS and
raylet with the driver, but not the raylet's dashboard and runtime-env agents, which hang
trying to report the raylet's death to the dead GCS.

The same functions serve the driver (:mod:`ddpcore.engines.ray_engine`) to clean up after a run
whose watchdog was killed too.
"""
from __future__ import annotations

import os
import shutil
import signal
import sys
import time

#: environment variable marking the processes of one driver's local Ray: ``PID:START``
OWNER_ENV = "DDPCORE_RAY_OWNER"


def start_time(pid: int) -> str | None:
    """Start time of process ``pid`` (clock ticks since boot, from /proc) or None if it is gone.
    Without /proc: ``"?"`` if the pid exists (pid reuse cannot be told apart there)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return "?"
        return "?"
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    return fields[19].decode() if len(fields) > 19 else None  # field 22 of stat(5)


def owner_token(pid: int | None = None) -> str:
    """``PID:START`` of this process (or ``pid``): names it even after its pid is reused."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{start_time(pid)}"


def owner_alive(token: str) -> bool:
    """True while the process that wrote ``token`` runs."""
    pid, _, start = token.strip().partition(":")
    try:
        now = start_time(int(pid))
    except ValueError:
        return False
    return now is not None and (now == start or "?" in (now, start))


def marked_pids(token: str) -> list[int]:
    """Processes (other than this one) whose environment has ``OWNER_ENV=token`` (Linux /proc)."""
    want = f"{OWNER_ENV}={token}".encode()
    me = os.getpid()
    out = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for name in entries:  # one iteration per process of the machine
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue  # gone, or another user's
        if want in env.split(b"\0"):
            out.append(int(name))
    return out


def kill_marked(token: str, rounds: int = 3, pause: float = 0.3) -> int:
    """SIGKILL every process marked with ``token`` (a few rounds: a dying raylet may still start one)."""
    killed: set[int] = set()
    for _ in range(rounds):
        pids = [p for p in marked_pids(token) if p not in killed]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except OSError:
                pass
        if not pids:
            break
        time.sleep(pause)
    return len(killed)


def main(argv: list[str]) -> int:
    """The watchdog's entry (``argv``: program, owner token, optional work folder): waits for the driver's
    pipe on stdin to close, then ends every process marked with the token and removes the work folder;
    returns 0."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of the terminal is the driver's to handle
    token = argv[1]
    work = argv[2] if len(argv) > 2 and argv[2] else None
    try:
        while sys.stdin.buffer.read(65536):
            pass  # the driver never writes: this waits for the pipe to close
    except OSError:
        pass
    kill_marked(token)
    if work is not None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
