"""``ddp`` entry point.

Each subcommand lives in its own module under ``ddpcore.cli`` exposing
``register(subparsers)`` (builds its argparse parser, sets ``func``). Those modules
import only argparse at module level so that ``ddp --help`` stays fast; heavy imports
(spaCy, scipy, polars) happen inside the handler.

Exit codes: 0 ran (and passed any ``--fail-on`` gate), 1 a ``--fail-on`` gate failed,
2 usage error, 3 bad input data, 4 internal error (``[D999]``, a bug: please report) or a
broken installation (``D9xx``), 130 interrupted. Every failure prints one line on stderr;
``DDPCORE_DEBUG=1`` adds the traceback of an internal error. A closed stdout (``ddp ... | head``)
ends the command quietly with exit 0.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import re
import sys
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

#: subcommand modules, in help order
SUBCOMMANDS = ("profile", "explain", "stats", "validate", "agree", "info", "merge", "cache", "mix", "blindness", "metric-s", "select", "sample", "stratify", "meta", "plot", "report")

EXIT_OK, EXIT_FAIL_GATE, EXIT_USAGE, EXIT_DATA, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130

#: environment variable that shows the traceback of an internal error
DEBUG_ENV = "DDPCORE_DEBUG"

EPILOG = """exit codes:
  0    success (and every --fail-on gate passed)
  1    a --fail-on gate failed
  2    usage error: bad option, argument or output path
  3    bad input data (the message names file, row and column)
  4    internal error [D999] (a bug: please report it; rerun with DDPCORE_DEBUG=1 for the
       traceback) or a broken installation (D9xx)
  130  interrupted (Ctrl-C)
Every error is one line on stderr starting with a searchable code such as [D111].
"""


#: a message that already carries its code (an option's own check, e.g. ``[D230] unknown gold scope``)
_HAS_CODE = re.compile(r"\[D\d{3}\]")


class DDPArgumentParser(argparse.ArgumentParser):
    """argparse with one-line usage errors (``ddp CMD: error: [D001] ... (see 'ddp CMD --help')``; a message
    that already has its code keeps it).

    Subparsers inherit the class, so every subcommand reports bad options the same way.
    """

    def error(self, message: str) -> NoReturn:
        message = _one_line(message)
        if not _HAS_CODE.search(message):  # argparse's own findings (unknown option, bad choice, missing argument)
            message = f"[D001] {message}"
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


class _VersionAction(argparse.Action):
    """``-V/--version``: computed only when asked for (reads package metadata, loads no model)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        from .info import version_text

        print(version_text())
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``ddp`` parser with every subcommand, or with ``command``'s alone (a name of
    :data:`SUBCOMMANDS`): a run of one command imports that command's module only, not the other
    sixteen and what their options import (readers, score formats; ~0.03 CPU-s of a cold start)."""
    parser = DDPArgumentParser(
        prog="ddp",
        description=(
            "ddpcore: discourse dependency (DDP) profiling of MT test sets and\n"
            "evaluation statistics (TOST, ranking tau, clustering, agreement)."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action=_VersionAction,
                        help="print the versions of ddpcore, spaCy and the default pipeline, and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS if command is None else (command,):
        try:
            module = importlib.import_module(f"ddpcore.cli.{name.replace('-', '_')}")
        except ModuleNotFoundError as exc:
            if exc.name == f"ddpcore.cli.{name}":
                continue  # subcommand not part of this build
            raise
        module.register(sub)
    return parser


#: allocator settings of a ``ddp profile`` process, each only when the user's environment does not set it
#: and before polars / pyarrow are loaded (both read them once, at start; polars appends
#: ``_RJEM_MALLOC_CONF`` to its own defaults, so these win): jemalloc in polars returns freed pages at once, Arrow allocates from the system allocator instead of its own
#: jemalloc pool. Without them each batch after the first peaked 50-100 MiB above the first
#: (freed memory kept by the two allocators): 200 k cache-served segments 445 -> 361 MiB, 10 k
#: 316 -> 290 MiB (benchmarks/memory_table.py, issue 25 §3); outputs are unchanged.
ALLOCATOR_ENV = {"_RJEM_MALLOC_CONF": "dirty_decay_ms:0,muzzy_decay_ms:0", "ARROW_DEFAULT_MEMORY_POOL": "system"}


#: glibc malloc's mmap threshold for ``ddp profile`` (bytes; glibc's ``M_MMAP_THRESHOLD``). glibc raises
#: its threshold each time a large block is freed (up to 32 MiB), after which the batches' arrays come from
#: the heap, whose freed holes are kept: with a fixed 128 KiB threshold every large array is its own mapping,
#: returned at ``free``. Measured (benchmarks/memory_table.py, cache-served): peak RSS at 1 M segments
#: 395 -> 327 MiB, at 10 k 306 -> 289 MiB; outputs are unchanged. ``MALLOC_MMAP_THRESHOLD_`` set by the
#: user wins (glibc read it at start-up).
MMAP_THRESHOLD = 128 * 1024


def _set_allocators() -> None:
    """Apply :data:`ALLOCATOR_ENV` (see there) if neither polars nor pyarrow is loaded yet, and glibc's
    :data:`MMAP_THRESHOLD` unless the user set ``MALLOC_MMAP_THRESHOLD_`` (nothing off glibc)."""
    if "polars" in sys.modules or "pyarrow" in sys.modules:
        return
    for key, value in ALLOCATOR_ENV.items():
        os.environ.setdefault(key, value)
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ and sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None)
            libc.mallopt(ctypes.c_int(-3), ctypes.c_int(MMAP_THRESHOLD))  # M_MMAP_THRESHOLD
        except (OSError, AttributeError):  # not glibc (musl has no mallopt): its own allocator's defaults
            pass


#: commands that parse with spaCy in the ``ddp`` process itself
PARSE_COMMANDS = ("profile", "validate", "explain", "agree")
#: OpenBLAS threads of a parsing ``ddp`` process, only when the user's environment does not set it and
#: before numpy loads OpenBLAS (it reads the variable once). spaCy's models multiply through their own
#: single-threaded BLIS; numpy's OpenBLAS threads only spin beside the parse. Measured (issue 25 §4,
#: 2026-12-07, quiet 2-core machine, paired medians): a 20-segment `ddp profile` 2.09 -> 1.97 CPU-s,
#: the bundled WMT25 source (36 k words) 9.46 -> 9.22 CPU-s at the same wall time (5.42 / 5.33 s);
#: outputs identical.
BLAS_THREADS_ENV = {"OPENBLAS_NUM_THREADS": "1"}


def _set_parse_threads() -> None:
    """Apply :data:`BLAS_THREADS_ENV` (see there) unless numpy is loaded already or the user set it."""
    if "numpy" in sys.modules:
        return
    for key, value in BLAS_THREADS_ENV.items():
        os.environ.setdefault(key, value)


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` runs when its first word names one (``ddp profile ...``), else None
    (``ddp``, ``ddp -V``, ``ddp --help``, an unknown word: the full parser answers those)."""
    return argv[0] if argv and argv[0] in SUBCOMMANDS else None


def _subparser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]
    return parser


def _one_line(text: str, limit: int = 2000, *, squash: bool = False) -> str:
    """A message on one stderr line, as every warning line is (:func:`ddpcore.io.tables.one_line`: a line
    break or tab in a name from the data written ``\\n``, ``\\t``, so the name is shown as it is, not as
    another name); ``squash``: whitespace runs become one space instead (a Python exception's own text of a
    D999 line, laid out over lines, is not data). Cut to ``limit`` characters."""
    from ..io.tables import one_line

    text = " ".join(str(text).split()) if squash else one_line(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _stdout_closed() -> bool:
    """True when stdout is a pipe whose reading end was closed (``| head``)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False  # replaced stdout (tests, notebooks): a BrokenPipeError is not about it
    try:
        import select
        import stat

        if not stat.S_ISFIFO(os.fstat(fd).st_mode) and not stat.S_ISSOCK(os.fstat(fd).st_mode):
            return False
        poller = select.poll()
    except (OSError, AttributeError):  # no poll() (Windows): assume the pipe is stdout
        return True
    poller.register(fd, 0)  # POLLERR/POLLHUP are always reported
    return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))


def _silence_stdout() -> None:
    """The standard recipe: point stdout at devnull so the interpreter's final flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):
        pass


#: errno values of a write that failed for the machine's reasons (full disk or quota, too large a file, an I/O
#: error, a read-only file system): D138, not an internal error
_WRITE_FAILURES = frozenset(getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG", "EIO", "EROFS")
                            if hasattr(errno, name))


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ddp``; returns the exit code (see the module docstring)."""
    command = "ddp"
    try:
        words = list(sys.argv[1:] if argv is None else argv)
        if argv is None and _command_of(words) == "profile":  # the ddp process itself, not a caller's main([...])
            _set_allocators()
        if argv is None and _command_of(words) in PARSE_COMMANDS:
            _set_parse_threads()
        parser = build_parser(_command_of(words))
        args, extra = parser.parse_known_args(words)
        if extra:  # name the subcommand whose options were wrong, not just "ddp"
            sub = _subparser(parser, getattr(args, "command", None))
            sub.error(f"unrecognized arguments: {' '.join(extra)}")
        if getattr(args, "func", None) is None:
            parser.print_help()
            return EXIT_USAGE
        # `ddp stats tau`, `ddp cache clear`: errors carry the name the command's warnings and notes carry
        action = getattr(args, f"{args.command}_command", None)
        command = f"ddp {args.command}" + (f" {action}" if isinstance(action, str) else "")
        code = _run(args, command)
        sys.stdout.flush()  # surface a closed pipe here, not at interpreter exit
        return code
    except OSError as exc:
        # BrokenPipeError from Python; polars raises a plain OSError "Broken pipe (os error 32)"
        if (isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE or "os error 32" in str(exc)) \
                and _stdout_closed():
            _silence_stdout()
            return EXIT_OK
        if _write_failed(command, exc):  # the disk or quota is full, or the device failed: not a bug of ddpcore
            return EXIT_USAGE
        return _internal_error(command, exc)
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        if argv is None:  # the `ddp` process itself (not a caller's main([...])): it exits next
            _ignore_further_interrupts()
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the last line of defence
        if _write_failed(command, exc):  # polars' ComputeError "... (os error 28)"
            return EXIT_USAGE
        return _internal_error(command, exc)


def _write_failed(command: str, exc: BaseException) -> bool:
    """Say ``[D138]`` for a write that failed for the machine's reasons (an ``OSError``, or polars' error
    wrapping one: :func:`ddpcore.errors.write_failure_errno`); False for any other error."""
    from ..errors import write_failure_errno

    number = write_failure_errno(exc)
    if number is None:
        return False
    target = f"{exc.filename}" if getattr(exc, "filename", None) else "an output (or stdout)"
    reason = (exc.strerror if isinstance(exc, OSError) else None) or os.strerror(number)
    print(f"{command}: error: [D138] cannot write {target}: {reason}; free space or write "
          "elsewhere, then run the command again", file=sys.stderr)
    _silence_stdout()
    return True


@contextlib.contextmanager
def _warnings_as_lines(command: str) -> Iterator[None]:
    """Python warnings raised while a command runs (the API's, e.g. of ``explain``'s profiling) as one
    ``<command>: warning: <message>`` line on stderr, like the commands' own, not a source excerpt."""
    import warnings

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        print(f"{command}: warning: {_one_line(str(message))}", file=sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def _run(args: argparse.Namespace, command: str) -> int:
    from ..errors import DDPDataError, DDPError, DDPUsageError

    try:
        with _warnings_as_lines(command):
            return int(args.func(args) or 0)
    except DDPUsageError as exc:
        print(f"{command}: error: {_one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except DDPDataError as exc:
        print(f"{command}: error: {_one_line(str(exc))}", file=sys.stderr)
        return EXIT_DATA
    except DDPError as exc:  # DDPNativeError (D9xx): a broken installation
        print(f"{command}: error: {_one_line(str(exc))}", file=sys.stderr)
        return EXIT_INTERNAL


def _ignore_further_interrupts() -> None:
    """After the one ``interrupted`` line, the exit must not print more: a Ctrl-C that arrives while the
    interpreter shuts down (joining a finished pool's threads) would print a KeyboardInterrupt traceback
    ("Exception ignored in: <module 'threading'>", seen on a CI run of ``ddp validate -j 2``)."""
    import signal

    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread (main() called from a thread): nothing to do
        pass


def _internal_error(command: str, exc: BaseException) -> int:
    if os.environ.get(DEBUG_ENV, "0") not in ("", "0"):
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    print(
        f"{command}: error: [D999] internal error: {type(exc).__name__}: {_one_line(str(exc), 500, squash=True)} "
        f"(please report; rerun with {DEBUG_ENV}=1 for the traceback)",
        file=sys.stderr,
    )
    return EXIT_INTERNAL


def run() -> NoReturn:
    """The ``ddp`` console command: :func:`main`, then the end of the process without the interpreter's
    teardown (:func:`exit_fast`). Call :func:`main` (which returns the exit code) from Python."""
    try:
        code = main()
    except SystemExit as exc:  # argparse's --help / --version / usage errors end through SystemExit
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    exit_fast(code)


def exit_fast(code: int) -> NoReturn:
    """End the ``ddp`` process with ``code`` as the interpreter would, minus its teardown.

    Python's own exit first joins the threads that are not daemons (and runs what ``threading``
    registered for the end: worker pools are shut down), then runs the ``atexit`` handlers and flushes
    stdout and stderr; this does the same, in that order. What it skips is the last part: freeing every
    object and module one by one (spaCy's vocabulary and weights, polars, pyarrow), which cost a
    20-segment ``ddp profile`` about 0.19 CPU-s of its ~1.9 (issue 25 §4; the operating system frees the
    memory at once). Outputs are complete by then: each is written to a temporary file, closed and renamed
    before the command returns. ``DDPCORE_DEBUG=1`` keeps the full teardown (for leak and warning hunts).
    """
    import threading

    shutdown = getattr(threading, "_shutdown", None)
    if os.environ.get(DEBUG_ENV, "0") not in ("", "0") or shutdown is None:
        sys.exit(code)
    try:
        shutdown()
        import atexit

        atexit._run_exitfuncs()
    except KeyboardInterrupt:  # a Ctrl-C while threads finish: the interpreter's own exit takes over
        sys.exit(EXIT_INTERRUPTED if code == EXIT_OK else code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError as exc:  # what was left in the buffer (e.g. --help text) did not fit: said, not lost silently
            if exc.errno in _WRITE_FAILURES and stream is sys.stdout:
                with contextlib.suppress(OSError, ValueError):
                    print(f"ddp: error: [D138] cannot write stdout: {exc.strerror or exc}; free space or write "
                          "elsewhere, then run the command again", file=sys.stderr, flush=True)
                code = code or EXIT_USAGE
        except (ValueError, AttributeError):  # a closed or replaced stream: nothing more can reach it
            pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
