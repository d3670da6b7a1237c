"""One error hierarchy with stable, searchable codes.

Every error ddpcore raises on purpose derives from :class:`DDPError`. Messages start
with a code (``[D101]``) so they can be searched in the README and issue tracker, and
say what to do next. The CLI maps :class:`DDPUsageError` to exit code 2,
:class:`DDPDataError` to exit code 3 and any other :class:`DDPError` (a broken install,
D9xx) to exit code 4; an exception that is not a :class:`DDPError` is a bug and becomes
``[D999] internal error`` with exit code 4 (``ddpcore.cli.main``).

Code ranges (docs/errors.md lists every code, generated from the source by
``scripts/errors_catalogue.py``): D0xx command line, D1xx input files, tables, outputs and runs,
D2xx anchor extraction, spaCy and the rule sets' weights files, D3xx statistics input and budgets,
D4xx gold coreference and validation, D5xx MIX, blindness, plots and Metric-S, D6xx curation,
stratify and report, D7xx the checks of issue 19 (in tens: blindness, stratify, stats, binary
input, Metric-S, cache, output sets, Ray/interruption, --ddp-col, stats options), D9xx
install/build and internal errors (D999: a bug).
"""
from __future__ import annotations

from pathlib import Path


class DDPError(Exception):
    """Base class of all ddpcore errors."""

    code: str = "D000"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        if code is not None:
            self.code = code
        self.message = message
        super().__init__(f"[{self.code}] {message}")

    def __reduce__(self) -> tuple:
        # keeps the code when the error crosses a process boundary (a worker's error re-raised
        # in the parent); the default would rebuild it from the formatted text, under the class code
        return (_rebuild, (type(self), self.message, self.code))


class DDPUsageError(DDPError):
    """Bad options or arguments (CLI exit code 2)."""

    code = "D001"


class DDPDataError(DDPError, ValueError):
    """Bad input data: missing columns, bad bytes, duplicates, NaN... (CLI exit code 3)."""

    code = "D100"


class DDPNativeError(DDPError, ImportError):
    """The compiled kernels are missing (package installed without building)."""

    code = "D900"


def _rebuild(cls: type[DDPError], message: str, code: str) -> DDPError:
    return cls(message, code=code)


def where(path: str | Path | None, row: int | None = None, column: str | None = None) -> str:
    """Format a location ``file, row R, column 'c'`` for error messages (rows are 1-based)."""
    parts = []
    if path is not None:
        parts.append(str(path))
    if row is not None:
        parts.append(f"row {row}")
    if column is not None:
        parts.append(f"column '{column}'")
    return ", ".join(parts) if parts else "<input>"


#: errno names of a write that failed for the machine's reasons (full disk or quota, too large a file, an I/O
#: error, a read-only file system): not a bug of ddpcore
WRITE_FAILURE_ERRNOS = ("ENOSPC", "EDQUOT", "EFBIG", "EIO", "EROFS")


def write_failure_errno(exc: BaseException) -> int | None:
    """The errno of ``exc`` when it is a write that failed for the machine's reasons
    (:data:`WRITE_FAILURE_ERRNOS`), else None. polars raises such failures as an ``OSError`` without
    ``errno`` or a ``ComputeError``, both saying ``(os error 28)`` in their text: read from there."""
    import errno as _errno
    import re

    codes = {getattr(_errno, n) for n in WRITE_FAILURE_ERRNOS if hasattr(_errno, n)}
    number = exc.errno if isinstance(exc, OSError) else None
    if number is None and (isinstance(exc, OSError) or type(exc).__module__.startswith("polars")):
        found = re.search(r"\(os error (\d+)\)", str(exc))
        number = int(found.group(1)) if found else None
    return number if number in codes else None
