"""Memory and time budget of the resampling statistics (bootstrap, permutation).

Every resampling entry point (``bootstrap_tau``, ``bootstrap_system_means``,
``resample_sums``, ``resample_indices``, ``cluster_systems`` with ``method="bootstrap"`` or
``"permutation"``, ``boundary_rate_difference``, ``compare_arrays`` / ``compare_systems`` for
both ``n_boot`` and ``n_ar``) checks its budget *before* the work:

* **memory**: ``fixed + n_boot * bytes_per_replicate`` (the arrays the function keeps per
  replicate, e.g. 8 bytes per tau replicate, plus its bounded block buffers) must not exceed
  ``max_memory``; otherwise D362 (usage error) with the estimate and the largest ``n_boot``
  that fits. Replicates are computed in blocks of bounded size, so nothing else grows with
  ``n_boot``.
* **time**: the first block of replicates is timed; ``elapsed / done * n_boot`` is the
  estimate. Above ``max_seconds`` the run stops with D363 (usage error), the estimate, the
  measured cost per replicate and the ``n_boot`` that fits. The first block is at most a few
  million elementary operations, so a refused run costs well under a second.

Limits: ``max_memory`` (bytes, or a size string such as ``"8G"``) defaults to the environment
variable ``DDPCORE_MAX_MEMORY`` or half of the machine's physical memory; ``max_seconds``
defaults to ``DDPCORE_MAX_SECONDS`` or 600. ``0`` (or ``inf``) disables a limit. The CLI
exposes both as ``--max-memory`` / ``--max-seconds``.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import DDPUsageError

DEFAULT_MAX_SECONDS = 600.0
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: Any) -> float:
    """``"8G"``, ``"512M"``, ``"1.5T"``, ``"2000000"`` (bytes) -> bytes; ``0`` -> inf (no limit)."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        raw = str(text).strip().upper().removesuffix("IB").removesuffix("B")
        unit = raw[-1:] if raw[-1:] in _UNITS else ""
        try:
            value = float(raw[: len(raw) - len(unit)]) * _UNITS[unit]
        except ValueError:
            raise DDPUsageError(f"memory limit must be a size such as 8G, 512M or a number of bytes, got {text!r} "
                                "(--max-memory, DDPCORE_MAX_MEMORY)", code="D311") from None
    if math.isnan(value) or value < 0:
        raise DDPUsageError(f"memory limit must be >= 0 (0 = no limit), got {text!r} (--max-memory)", code="D311")
    return math.inf if value == 0 else value


def physical_memory() -> float:
    """The machine's physical memory in bytes (8 GiB where the platform does not say)."""
    try:
        return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 8.0 * (1 << 30)


def fmt_bytes(n: float) -> str:
    """``n`` bytes for a message: ``1.5 GiB``, ``12.0 MiB``, ``512 B``."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def fmt_seconds(s: float) -> str:
    """``s`` seconds for a message: ``2.0 h``, ``3.5 min``, ``12.3 s``."""
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 60:
        return f"{s / 60:.1f} min"
    return f"{s:.1f} s"


@dataclass
class Budget:
    """Resolved limits plus the clock of the current run."""

    max_memory: float
    max_seconds: float
    what: str = "resampling"
    flag: str = "--n-boot"
    #: the name of the replicate count in messages (``n_boot``, ``n_ar``)
    count: str = "n_boot"
    _t0: float = field(default_factory=time.perf_counter)

    def check_memory(self, n_boot: int, bytes_per_replicate: float, fixed: float = 0.0) -> float:
        """Raise D362 when ``fixed + n_boot * bytes_per_replicate`` exceeds the limit; return the estimate."""
        need = float(fixed) + float(n_boot) * float(bytes_per_replicate)
        if need > self.max_memory:
            fit = int((self.max_memory - fixed) // bytes_per_replicate) if bytes_per_replicate > 0 else 0
            hint = (f"lower {self.flag} to at most {fit:,}" if fit >= 1 else "use a smaller table")
            raise DDPUsageError(
                f"{self.what} with {self.count}={int(n_boot):,} needs about {fmt_bytes(need)} of memory, over the "
                f"limit of {fmt_bytes(self.max_memory)}; {hint}, or raise the limit with --max-memory SIZE "
                "(max_memory= in Python, or DDPCORE_MAX_MEMORY; 0 = no limit)",
                code="D362",
            )
        return need

    def start(self) -> None:
        self._t0 = time.perf_counter()

    def check_time(self, done: int, total: int) -> float:
        """After ``done`` of ``total`` replicates: raise D363 when the extrapolated time exceeds the limit."""
        if done <= 0 or done >= total or math.isinf(self.max_seconds):
            return 0.0
        elapsed = max(time.perf_counter() - self._t0, 1e-9)
        per = elapsed / done
        estimate = per * total
        if estimate > self.max_seconds:
            fit = max(1, int(self.max_seconds / per))
            raise DDPUsageError(
                f"{self.what} with {self.count}={int(total):,} would take about {fmt_seconds(estimate)} "
                f"({per * 1e6:.3g} us per replicate, measured on the first {done:,}), over the limit of "
                f"{fmt_seconds(self.max_seconds)}; lower {self.flag} to about {fit:,}, or raise the limit with "
                "--max-seconds S (max_seconds= in Python, or DDPCORE_MAX_SECONDS; 0 = no limit)",
                code="D363",
            )
        return estimate


def resolve(max_memory: Any = None, max_seconds: Any = None, *, what: str = "resampling",
            flag: str = "--n-boot") -> Budget:
    """Limits from the arguments, else the environment, else the defaults (see module docstring)."""
    if max_memory is None:
        env = os.environ.get("DDPCORE_MAX_MEMORY")
        mem = parse_size(env) if env else physical_memory() / 2
    else:
        mem = parse_size(max_memory)
    if max_seconds is None:
        env = os.environ.get("DDPCORE_MAX_SECONDS")
        raw: Any = env if env else DEFAULT_MAX_SECONDS
    else:
        raw = max_seconds
    sec = check_seconds(raw)
    return Budget(max_memory=mem, max_seconds=math.inf if sec == 0 else sec, what=what, flag=flag)


def check_seconds(value: Any) -> float:
    """A time limit in seconds (``--max-seconds``, ``DDPCORE_MAX_SECONDS``): a number >= 0 (0 = no
    limit). Raises D311 otherwise."""
    try:
        sec = float(value)
    except (TypeError, ValueError):
        raise DDPUsageError(f"time limit must be a number of seconds, got {value!r} (--max-seconds, "
                            "DDPCORE_MAX_SECONDS)", code="D311") from None
    if math.isnan(sec) or sec < 0:
        raise DDPUsageError(f"time limit must be >= 0 seconds (0 = no limit), got {value!r} (--max-seconds)",
                            code="D311")
    return sec


def check_seed(seed: Any) -> int:
    """A seed for numpy's SeedSequence: an integer in [0, 2**128). Raises D311 otherwise."""
    if isinstance(seed, bool) or not isinstance(seed, (int,)) and not (hasattr(seed, "__index__")):
        raise DDPUsageError(f"seed must be a non-negative integer, got {seed!r} (--seed)", code="D311")
    value = int(seed)
    if not 0 <= value < 2**128:
        raise DDPUsageError(f"seed must be an integer in [0, 2**128), got {value} (--seed)", code="D311")
    return value


def check_n_boot(n_boot: Any, flag: str = "--n-boot") -> int:
    """``n_boot`` as an int when it is a whole number of at least 1 (not a bool, not a float); else D311 naming ``flag``."""
    if isinstance(n_boot, bool) or not hasattr(n_boot, "__index__"):
        raise DDPUsageError(f"n_boot must be a positive integer, got {n_boot!r} ({flag})", code="D311")
    value = int(n_boot)
    if value < 1:
        raise DDPUsageError(f"n_boot must be at least 1, got {value} ({flag})", code="D311")
    return value
