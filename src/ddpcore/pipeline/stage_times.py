"""Where a run's time goes: seconds per ddpcore stage and per spaCy component (``--profile-time``).

:func:`record` turns timing on for the duration of a run and returns a :class:`RunTimes`:

* ddpcore stages, wall seconds in the main process: each stage function is wrapped with
  :func:`timed_stage` (a no-op unless :func:`record` is active) and other steps use
  :func:`stage`; ``other`` is the rest of the wall time (start-up, planning, the journal);
* spaCy components, seconds inside the parse processes summed over all of them: every parse
  process (the main one with ``-j 1``, each worker otherwise) times the tokenizer, each enabled
  component, the compiled attribute ruler and the conversion to token arrays
  (:mod:`ddpcore.anchors.spacy_extract`, exclusive times: a component's time excludes the
  upstream components its generator pulls from) and writes its totals to a file in a folder
  named by :data:`~ddpcore.anchors.spacy_extract.TIMING_ENV`, which worker processes inherit.

With more than one parse process the next batch is parsed while this one goes through the
other stages, so the stage times can add up to more than the wall time; component times add
up to about ``n_process`` times the parse time.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..anchors import spacy_extract as X

F = TypeVar("F", bound=Callable[..., Any])

#: stage names in table order (``other``: wall time outside every stage)
STAGES: tuple[str, ...] = ("read", "parse", "sentences", "extract", "link", "distances", "assemble", "write")


@dataclass
class RunTimes:
    """Seconds of one run: ``stages`` (name -> wall seconds in the main process), ``components``
    (name -> seconds summed over the parse processes, in pipeline order), ``wall`` (seconds of
    the whole run), ``processes`` (parse processes that reported), ``units``/``tokens`` parsed."""

    stages: dict[str, float] = field(default_factory=dict)
    components: dict[str, float] = field(default_factory=dict)
    wall: float = 0.0
    processes: int = 0
    units: int = 0
    tokens: int = 0

    @property
    def other(self) -> float:
        """Wall seconds outside every stage (start-up, planning, journal); can be negative when
        parsing overlaps the other stages (``-j`` > 1)."""
        return self.wall - sum(self.stages.values())

    def to_dict(self) -> dict[str, Any]:
        return {"wall_seconds": self.wall, "stages": dict(self.stages), "other_seconds": self.other,
                "components": dict(self.components), "parse_processes": self.processes, "units": self.units,
                "tokens": self.tokens}


_ACTIVE: RunTimes | None = None
_LOCK = threading.Lock()


@contextlib.contextmanager
def stage(name: str) -> Iterator[None]:
    """Charge the wall time of the block to stage ``name`` while :func:`record` is active."""
    if _ACTIVE is None:
        yield
        return
    t0 = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - t0
        with _LOCK:
            if _ACTIVE is not None:
                _ACTIVE.stages[name] = _ACTIVE.stages.get(name, 0.0) + elapsed


def timed_stage(name: str) -> Callable[[F], F]:
    """Decorator: every call of the function is charged to stage ``name`` (see :func:`stage`)."""
    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if _ACTIVE is None:
                return fn(*args, **kwargs)
            with stage(name):
                return fn(*args, **kwargs)
        return timed  # type: ignore[return-value]
    return wrap


@contextlib.contextmanager
def record() -> Iterator[RunTimes]:
    """Time everything run inside the block; the yielded :class:`RunTimes` is filled when the
    block ends (also when it raises). Not reentrant: one timed run at a time per process."""
    global _ACTIVE
    if _ACTIVE is not None:
        raise RuntimeError("stage_times.record() is already active")
    times = RunTimes()
    folder = tempfile.mkdtemp(prefix="ddpcore-times-")
    previous = os.environ.get(X.TIMING_ENV)
    os.environ[X.TIMING_ENV] = folder
    X.reset_component_clock()
    _ACTIVE = times
    t0 = time.perf_counter()
    try:
        yield times
    finally:
        times.wall = time.perf_counter() - t0
        _ACTIVE = None
        if previous is None:
            os.environ.pop(X.TIMING_ENV, None)
        else:
            os.environ[X.TIMING_ENV] = previous
        _collect(Path(folder), times)
        X.reset_component_clock()
        for p in Path(folder).iterdir():
            with contextlib.suppress(OSError):
                p.unlink()
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def _collect(folder: Path, times: RunTimes) -> None:
    """Sum the per-process component files of ``folder`` into ``times`` (order: load, tokenizer,
    then components as first seen, then the token-array conversion)."""
    totals: dict[str, float] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # a worker killed while writing: its rename never happened
            continue
        times.processes += 1 if data.get("units") else 0
        times.units += int(data.get("units", 0))
        times.tokens += int(data.get("tokens", 0))
        for name, sec in data.get("seconds", {}).items():
            totals[name] = totals.get(name, 0.0) + float(sec)
    last = (X.COMPILED_RULER_COMPONENT, X.TO_ARRAY_COMPONENT)
    first = [n for n in (X.LOAD_COMPONENT, "tokenizer") if n in totals]
    middle = [n for n in totals if n not in first and n not in last]
    times.components = {n: totals[n] for n in [*first, *middle, *(n for n in last if n in totals)]}


def format_times(times: RunTimes, *, n_process: int | None = None) -> str:
    """The ``--profile-time`` table (plain text, one line per component and stage)."""
    lines = [f"time per stage and component: {times.wall:.2f} s wall, {times.units:,} lines "
             f"({times.tokens:,} tokens) parsed by {times.processes} process(es)"]
    comp_total = sum(times.components.values())
    w = max([len(n) for n in [*times.components, *STAGES, "other (start-up, planning)"]] + [10]) + 2
    lines.append(f"  {'spaCy component':<{w}}{'seconds':>9}{'share':>8}   (inside the parse processes, summed)")
    if not times.components:
        lines.append("  (no line was parsed: every line came from the parse cache)")
    for name, sec in times.components.items():
        lines.append(f"  {name:<{w}}{sec:>9.2f}{_share(sec, comp_total):>8}")
    if times.components:
        lines.append(f"  {'total':<{w}}{comp_total:>9.2f}{_share(comp_total, comp_total):>8}")
    lines.append(f"  {'ddpcore stage':<{w}}{'seconds':>9}{'share':>8}   (wall time of the run)")
    for name in [*STAGES, *(n for n in times.stages if n not in STAGES)]:
        sec = times.stages.get(name, 0.0)
        lines.append(f"  {name:<{w}}{sec:>9.2f}{_share(sec, times.wall):>8}")
    lines.append(f"  {'other (start-up, planning)':<{w}}{times.other:>9.2f}{_share(times.other, times.wall):>8}")
    lines.append(f"  {'wall':<{w}}{times.wall:>9.2f}{_share(times.wall, times.wall):>8}")
    if (n_process or 1) > 1:
        lines.append("  with -j > 1 the next batch is parsed while this one runs the other stages: stage times can "
                     "add up to more than the wall time")
    return "\n".join(lines)


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole > 0 else "—"
