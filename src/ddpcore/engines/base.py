"""What every engine shares: the options of one file-to-file run, its report, and the
:class:`Engine` protocol that the local engine (:class:`ddpcore.engines.run.LocalEngine`) and the
Ray engine (:class:`ddpcore.engines.ray_engine.RayEngine`) implement, so that ``ddp profile``
calls one interface (:func:`ddpcore.engines.get_engine`)."""
from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..schema import SegmentColumns
from .local import Settings

if TYPE_CHECKING:
    import polars as pl

    from ..io.outputs import OutputTarget
    from ..pipeline.parse import Parser


@dataclass(frozen=True)
class RunOptions:
    """How one file-to-file run goes: everything but the input and the output targets.

    ``cols``/``settings``: input columns and what is computed (distance, sentence unit, rules).
    ``n_process``: parse processes (local) or actors (Ray); ``"auto"`` or a number.
    ``batch_size``: texts per spaCy batch. ``batch_chars``: characters of text per batch of whole
    documents; ``None`` = the engine's default (local: :data:`ddpcore.engines.local.BATCH_CHARS`;
    Ray: about four batches per actor). ``progress``: ``bar|plain|none``. ``summary_by``: the
    column the summary groups by. ``reader``/``docs``/``txt_mode``/``warn``: the input reader
    (:func:`ddpcore.io.sources.iter_input_chunks`); ``warn(message)`` also receives every
    fallback the run takes. ``resume`` (+ ``resume_hint``, the command that resumes) and
    ``parse_wrapper(parser)`` (the parse cache): both engines. Local engine only: ``shard=(i, N)``,
    ``start_method``, ``signature_extra`` (keys added to the signature). Ray only: ``address``, ``quiet``.
    """

    cols: SegmentColumns = field(default_factory=SegmentColumns)
    settings: Settings = field(default_factory=Settings)
    pipeline: str | None = None
    n_process: int | str = "auto"
    batch_size: int = 256
    batch_chars: int | None = None
    progress: str = "none"
    summary_by: str | None = None
    source_name: str | None = None
    reader: str = "table"
    docs: str | os.PathLike[str] | None = None
    txt_mode: str = "lines"
    warn: Callable[[str], None] | None = None
    resume: bool = False
    resume_hint: str = "rerun the same command with --resume"
    shard: tuple[int, int] | None = None
    parse_wrapper: Callable[[Parser], Callable[..., Any]] | None = None
    signature_extra: dict[str, Any] | None = None
    start_method: str | None = None
    address: str | None = None
    quiet: bool = False

    def name_of(self, source: Any) -> str:
        """The input's name in signatures and messages: ``source_name``, else the path, else ``<table>``."""
        return self.source_name or (str(source) if isinstance(source, (str, os.PathLike)) else "<table>")


def warner(warn: Callable[[str], None] | None) -> Callable[[str], None]:
    """``warn``, or a function printing a ``ddp profile: warning:`` line on stderr."""
    if warn is not None:
        return warn

    def say(message: str) -> None:
        import sys

        from ..io.tables import one_line

        print(one_line(f"ddp profile: warning: {message}"), file=sys.stderr, flush=True)
    return say


@contextlib.contextmanager
def stop_signals(handler: Callable[[int, Any], None]) -> Iterator[None]:
    """``handler(signum, frame)`` for SIGINT and SIGTERM while the block runs, the previous handlers
    back after it; nothing outside the main thread (Python delivers signals there only)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in old:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


class RunInterrupted(BaseException):
    """SIGINT/SIGTERM stopped a run; ``exit_code`` is 130 or 143; ``message`` says how to resume."""

    def __init__(self, signum: int, message: str) -> None:
        super().__init__(message)
        self.signum = signum
        self.exit_code = 128 + signum
        self.message = message


@dataclass
class RunReport:
    """What a file-to-file run did: ``signature`` (as written into the outputs), the DDP summary
    table (``summary``: :func:`ddpcore.api.summarize` of the segments, computed while the outputs
    were written; or ``summary_frame``, the document, summary column and DDP of every segment, for
    the caller to summarise), counts, and ``resumed_batches`` (batches taken from an interrupted
    run's journal)."""

    signature: dict[str, Any]
    summary_frame: pl.DataFrame | None
    n_segments: int
    n_anchors: int
    n_batches: int
    resumed_batches: int = 0
    notes: list[str] = field(default_factory=list)
    summary: pl.DataFrame | None = None


@runtime_checkable
class Engine(Protocol):
    """A way to run the profiling stages over a corpus, file to file.

    ``name`` is the ``--engine`` value. :meth:`check` refuses (:class:`~ddpcore.errors.DDPUsageError`)
    options the engine cannot honour, before the input is read or a pipeline loaded;
    :meth:`run` profiles ``source`` into ``targets`` (roles ``segments``, ``anchors``,
    ``sentences``, ``documents``; :func:`ddpcore.io.outputs.check_outputs`) and returns a
    :class:`RunReport`, raising :class:`RunInterrupted` on SIGINT/SIGTERM.
    """

    name: str

    def check(self, options: RunOptions) -> None: ...

    def run(self, source: Any, targets: Mapping[str, OutputTarget | None], options: RunOptions) -> RunReport: ...
