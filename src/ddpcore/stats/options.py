"""One options object for every resampling entry point: :class:`ResampleOptions`.

The table-level resampling functions (:func:`~ddpcore.stats.bootstrap_tau`,
:func:`~ddpcore.stats.bootstrap_system_means`, :func:`~ddpcore.stats.cluster_systems`,
:func:`~ddpcore.stats.compare_systems`, :func:`~ddpcore.stats.blindness`) and the array-level
ones (:func:`~ddpcore.stats.compare.compare_arrays`,
:func:`~ddpcore.stats.boundary_rate_difference`) take ``options=ResampleOptions(...)`` instead
of repeating the keywords ``n_boot, seed, threads, nan_policy, max_memory, max_seconds``::

    from ddpcore.stats import ResampleOptions, bootstrap_tau
    opts = ResampleOptions(n_boot=2000, seed=7, max_seconds=60)
    bootstrap_tau("scores.parquet", "DOC", "MIX", options=opts)

The ``ddp stats`` / ``ddp blindness`` CLIs build one from ``--n-boot --seed --threads
--nan-policy --max-memory --max-seconds`` (:func:`ddpcore.cli._common.resample_options`).

What is checked where
---------------------
The options are checked once, when the object is made (D311, naming the CLI flag): ``threads``
(an integer or ``None``), ``nan_policy``, ``max_memory`` (a size), ``max_seconds`` (seconds >= 0).
``n_boot`` and ``seed`` are checked by the entry point that uses them, because their meaning is
the entry point's: a method that does not resample (``cluster_systems(method="wmt25")``)
ignores them, explicit ``indices`` replace them (their shape depends on the table), and each statistic reports a bad value with
its own code (D311 bootstrap, D351 clustering, D390 compare).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Literal

from ..errors import DDPUsageError
from . import budget as _budget

NanPolicy = Literal["raise", "omit"]


@dataclasses.dataclass(frozen=True)
class ResampleOptions:
    """How a resampling statistic runs: replicates, seed, threads, missing scores, budget.

    Fields
    ------
    n_boot
        Replicates (bootstrap resamples, or permutations for ``cluster_systems(method=
        "permutation")``); ``None`` = the entry point's default (10,000 for ``bootstrap_tau``,
        ``bootstrap_system_means``, ``boundary_rate_difference`` and the tau of ``blindness``;
        1,000 for ``cluster_systems``, ``compare_systems`` and ``compare_arrays``).
    seed
        Seed of the documented PCG64 stream (see :mod:`ddpcore.stats.bootstrap`), default 0.
    threads
        OpenMP threads of the native kernels; ``None`` or ``0`` = ``OMP_NUM_THREADS`` or all
        cores (a negative number too, as the kernels read it). Results never depend on it.
        ``blindness`` defaults to 1 when no options are given.
    nan_policy
        ``"raise"``: a null/NaN score is D302; ``"omit"``: such rows are dropped (counted).
        Used by the entry points that read a long table.
    max_memory
        Memory limit: bytes or a size string (``"8G"``); ``None`` = ``DDPCORE_MAX_MEMORY`` or
        half the physical memory; ``0`` = no limit. Over it: D362 before the work.
    max_seconds
        Time limit in seconds; ``None`` = ``DDPCORE_MAX_SECONDS`` or 600; ``0`` = no limit.
        An extrapolated run time over it: D363 after the first block.
    progress
        A tqdm bar on stderr where the entry point has one (``cluster_systems``' resampling
        methods); never changes a result.
    indices
        Explicit bootstrap draws, an integer array of shape (n_boot, n_units) (entry ``[r, k]`` =
        the unit of draw k of replicate r, units in sorted key order): replaces the seeded
        generator, ``n_boot`` is then its row count. Taken by ``bootstrap_tau``,
        ``bootstrap_system_means``, ``cluster_systems(method="bootstrap")``, ``compare_systems``
        and ``compare_arrays``; checked there (shape and range depend on the table). Not part
        of ``==``.
    """

    n_boot: int | None = None
    seed: int = 0
    threads: int | None = None
    nan_policy: NanPolicy = "raise"
    max_memory: Any = None
    max_seconds: Any = None
    progress: bool = False
    indices: Any = dataclasses.field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.threads is not None and (isinstance(self.threads, bool) or not hasattr(self.threads, "__index__")):
            raise DDPUsageError(f"threads must be an integer (0 = all cores), got {self.threads!r} (--threads)",
                                code="D311")
        if self.nan_policy not in ("raise", "omit"):
            raise DDPUsageError(f"nan_policy must be 'raise' or 'omit', got {self.nan_policy!r} (--nan-policy)",
                                code="D311")
        if self.max_memory is not None:
            _budget.parse_size(self.max_memory)
        if self.max_seconds is not None:
            _budget.check_seconds(self.max_seconds)

    def replace(self, **changes: Any) -> ResampleOptions:
        """A copy with some fields changed (``dataclasses.replace``; checked again)."""
        return dataclasses.replace(self, **changes)

    def n_boot_or(self, default: int) -> Any:
        """``n_boot``, or ``default`` when it is ``None`` (the value is checked by the caller)."""
        return default if self.n_boot is None else self.n_boot

    @property
    def kernel_threads(self) -> int:
        """``threads`` as the native kernels take it (0 = their default)."""
        return 0 if self.threads is None else int(self.threads)

    def budget(self, what: str, *, flag: str = "--n-boot", time: bool = True) -> _budget.Budget:
        """The resolved :class:`~ddpcore.stats.budget.Budget` of a run described by ``what``
        (``time=False``: memory only, as for a single matrix)."""
        return _budget.resolve(self.max_memory, self.max_seconds if time else 0, what=what, flag=flag)


def check_options(options: ResampleOptions | None, *, func: str,
                  default: ResampleOptions | None = None) -> ResampleOptions:
    """``options`` itself, or ``default`` (else ``ResampleOptions()``) for ``None``; anything else is D311."""
    if options is None:
        return default if default is not None else ResampleOptions()
    if not isinstance(options, ResampleOptions):
        raise DDPUsageError(f"{func}(options=...) must be a ResampleOptions, got {type(options).__name__}",
                            code="D311")
    return options


__all__ = ["ResampleOptions", "check_options", "NanPolicy"]


def check_instance(value: Any, cls: type, *, func: str, name: str, code: str) -> Any:
    """``value`` if it is a ``cls``, a default ``cls()`` for ``None``; else the usage error ``code``
    naming ``func(name=...)`` (the grouped-options arguments of the statistics)."""
    if value is None:
        return cls()
    if not isinstance(value, cls):
        raise DDPUsageError(f"{func}({name}=...) must be a {cls.__name__}, got {type(value).__name__}", code=code)
    return value
