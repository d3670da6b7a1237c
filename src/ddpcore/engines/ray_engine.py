"""The Ray engine: the local engine's stages on the actors of a Ray cluster, disk to disk.

``pip install 'ray[data]==2.60.0'`` (the ``[ray]`` extra); ``ddp profile IN -o OUT --engine ray [--address ADDR]`` or
``ddpcore.profile(..., engine="ray")``. The design keeps the driver small (issue 24):

1. **Read the id index and plan on the driver.** The input is read once and validated by the
   local engine's own reader (:func:`~ddpcore.io.sources.stage_input`: every bad-input error
   keeps its code and message, naming file, row and column) — a Parquet input (a local path on
   storage every node sees, or a ``pyarrow.fs`` URI such as ``s3://``) in place, row group by
   row group; another format is staged as Parquet chunks into the run's dataset folder on the
   shared storage. The driver keeps only the id index, turned into a numeric plan of batches of
   whole documents (:mod:`ddpcore.engines.ray_plan`).
2. **Workers read their own input.** Each batch goes to an actor (:class:`BatchWorker`, a
   plain Ray actor holding one spaCy pipeline) as a :class:`~ddpcore.engines.ray_plan.BatchSpec`
   of a few kB: the chunks that hold its rows and the rows' numbers. The actor reads the rows
   itself (Parquet row groups), so texts never pass through the driver or the object store.
3. **Workers write their own output.** The actor runs :func:`~ddpcore.engines.local.iter_profile`
   (with the parse cache, ``--cache`` on shared storage, when given) and writes the batch's three
   tables as Parquet parts of a dataset, then a marker (:mod:`ddpcore.engines.parts`, each file
   atomically); only the marker (rows, words, checksums) goes back to the driver.
4. **Assemble or leave the dataset.** With ``-o FILE`` the driver assembles the local engine's
   files from the parts (checksums verified) and removes the dataset; with ``-o DIR/`` the dataset
   is the output, completed by a ``_SUCCESS`` manifest holding the signature.

**Resume.** The markers are the journal: ``--resume`` keeps every batch whose parts are whole
and profiles the others; a changed input or setting is refused (D170) as locally. The driver of
a resumed run does not stage or plan the input again: it checks the input's identity (path, size,
modification time, and the SHA-256 of a local input's bytes) and loads the plan the interrupted run saved
(``plan.bin``, checksummed); every actor checks that it loads the pipeline the finished batches were
parsed with before it parses a batch (D170 on --resume, D763 between the nodes of one run). A
``--resume`` of ``-o DIR/`` whose run finished reuses the dataset (its manifest records the journal's
settings: D170 when they differ; "nothing to resume: N of N batches done"), :func:`_reuse_finished`. **Faults.**
An actor that dies (its node is lost) is replaced and its batches run again, at most
:data:`MAX_BATCH_RETRIES` times each (D863 beyond); a killed driver leaves the finished parts
for ``--resume``; a worker that cannot read the input or the parts is one coded error (D862).
Batches hold whole documents and every result of a batch depends only on its documents, so the
output equals the local engine's whatever the batching, the actors or the order of finishing.
Not supported with Ray: ``--shard`` (Ray already spreads the work). Ray is imported only inside
this module's functions (and on the actors).
"""
from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DDPDataError, DDPError, DDPUsageError
from ..schema import INVISIBLE_EDGES, NORMALISED_TEXT
from ..io import fs
from ..io.segments import ROW, SegmentColumns
from . import parts as P
from .base import RunInterrupted, RunOptions, RunReport, stop_signals, warner
from .journal import check_actor_pipeline, check_same_pipeline, compare_settings, journal_settings, pipeline_identity
from .local import BATCH_CHARS, Settings, iter_profile
from .ray_plan import (BatchRef, BatchSpec, RayPlan, input_identity, load_plan, plan_batches,
                       save_plan)
from ..pipeline.extract import head_noun_source
from ..signature import run_signature

if TYPE_CHECKING:
    import polars as pl

    from ..io.outputs import OutputTarget
    from ..pipeline.stages import Batch

#: install hint of every "Ray is missing" message
INSTALL_HINT = "pip install 'ray[data]==2.60.0' (the [ray] extra; from a ddpcore clone pip install '.[ray]')"
#: smallest automatic batch, in characters (smaller batches cost more in Ray overhead than they gain)
MIN_AUTO_BATCH_CHARS = 20_000
#: batches per actor aimed at by the automatic batch size (load balance vs per-batch overhead)
BATCHES_PER_ACTOR = 4
#: batches queued on each actor (one running, one waiting: the actor never idles between batches)
IN_FLIGHT_PER_ACTOR = 2
#: times one batch may be lost with its actor (a lost node) before the run gives up (D863)
MAX_BATCH_RETRIES = 3
#: seconds without any finished batch while the cluster has no CPU left before the run gives up (D866)
NO_CPU_TIMEOUT = 60.0
#: the format of an output target that is a dataset folder (``-o DIR/``)
DATASET = "dataset"
ROLES = P.ROLES


class RayStop(BaseException):
    """SIGINT/SIGTERM during a Ray run (raised in the main thread by :func:`_signals_raise`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


#: while Ray's own C code waits (``ray.wait``/``ray.get``), a signal is only recorded here and raised
#: as :class:`RayStop` when the call returns (an exception raised inside it becomes a SystemError)
_DEFERRED: dict[str, Any] = {"on": False, "signum": None}


@contextlib.contextmanager
def _deferred_signals() -> Iterator[None]:
    """Around a blocking Ray call: a SIGINT/SIGTERM is raised as :class:`RayStop` once it returns."""
    _DEFERRED["on"] = True
    try:
        yield
    finally:
        _DEFERRED["on"] = False
    if _DEFERRED["signum"] is not None:
        signum, _DEFERRED["signum"] = _DEFERRED["signum"], None
        raise RayStop(signum)


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM and SIGINT raise :class:`RayStop` in the main thread while the run is on
    (deferred to the end of a blocking Ray call: :func:`_deferred_signals`)."""
    def handler(signum: int, frame: Any) -> None:
        if _DEFERRED["on"]:
            _DEFERRED["signum"] = signum
            return
        raise RayStop(signum)

    with stop_signals(handler):
        yield


# ---------------------------------------------------------------------------- Ray access


def import_ray() -> Any:
    """``ray``, or a one-line usage error (D190) saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise DDPUsageError(
            f"the Ray engine needs Ray, which is not installed ({exc}); install it with {INSTALL_HINT}",
            code="D190") from None
    return ray


def _quiet_ray(ray: Any, quiet: bool = False) -> None:
    """Ray's INFO and WARNING lines off (ddpcore reports progress itself); ``quiet``: its ERROR lines too (``-q``)."""
    for name in ("ray", "ray.data", "ray.data._internal"):
        logging.getLogger(name).setLevel(logging.CRITICAL if quiet else logging.ERROR)


#: environment of ``ray.init`` while it starts a local Ray: no C++ stack dumps on SIGTERM (the
#: driver's SIGTERM is handled by ddpcore: one line, exit 143); the actors at the driver's priority
#: (Ray starts its workers at niceness 15: on a machine shared with other work they got a fraction
#: of the CPU the local engine gets, 2-3x its per-batch time at load 20). A user's own setting wins.
_INIT_ENV = {"RAY_DISABLE_FAILURE_SIGNAL_HANDLER": "1", "RAY_worker_niceness": "0"}
#: ... and, under ``-q``, only fatal lines from Ray's C++ core (its ``E`` lines go to the driver's stderr)
_QUIET_ENV = {"RAY_BACKEND_LOG_LEVEL": "fatal"}
#: prefix of the work folders of Ray runs; the folder holds an ``owner`` file (``PID:START``)
WORK_PREFIX = ".ddp-ray-work-"


class Reaper:
    """A watchdog process (:mod:`ddpcore.engines.ray_reaper`) that ends the local Ray started by this
    process and removes ``work`` when this process ends — also when it is killed with SIGKILL,
    which no handler sees. :meth:`close` ends it normally (it then cleans up what is left)."""

    def __init__(self, work: Path | None = None) -> None:
        import subprocess
        import sys

        from . import ray_reaper

        self.token = ray_reaper.owner_token()
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", ray_reaper.__file__, self.token, str(work) if work is not None else ""],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def close(self, timeout: float = 5.0) -> None:
        import subprocess

        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout)


def remove_stale_work(folder: Path) -> list[str]:
    """Remove the Ray work folders in ``folder`` whose owner process is gone (a run killed with
    SIGKILL together with its watchdog), and end the Ray processes that run left. Returns their names."""
    from . import ray_reaper

    removed = []
    for work in sorted(folder.glob(WORK_PREFIX + "*")):  # one iteration per stale folder
        try:
            token = (work / "owner").read_text().strip()
        except OSError:
            continue  # a run that is still creating it, or not a ddpcore Ray folder
        if not token or ray_reaper.owner_alive(token):
            continue
        ray_reaper.kill_marked(token)
        shutil.rmtree(work, ignore_errors=True)
        removed.append(work.name)
    return removed


@contextlib.contextmanager
def _init_environment(quiet: bool, owner: str | None) -> Iterator[None]:
    """Environment (and, under ``quiet``, stderr) of the process while ``ray.init`` runs.

    ``owner`` marks every process of the local Ray (``DDPCORE_RAY_OWNER``, inherited by the GCS
    and raylet, and from the raylet by agents and workers) for the :class:`Reaper`. Under
    ``quiet`` file descriptor 2 points at devnull: Ray's core prints a line on start-up that no
    setting turns off.
    """
    from .ray_reaper import OWNER_ENV

    env = dict(_INIT_ENV, **(_QUIET_ENV if quiet else {}))
    if owner is not None:
        env[OWNER_ENV] = owner
    saved = {k: os.environ.get(k) for k in env}
    for k, v in env.items():
        if k == OWNER_ENV or k not in os.environ:  # the user's own Ray settings win
            os.environ[k] = v
    fd_saved = None
    if quiet:
        import sys

        with contextlib.suppress(Exception):
            sys.stderr.flush()
        with contextlib.suppress(OSError):
            fd_saved = os.dup(2)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            os.close(null)
    try:
        yield
    finally:
        if fd_saved is not None:
            os.dup2(fd_saved, 2)
            os.close(fd_saved)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None, *, quiet: bool = False,
                reaper: Reaper | None = None, own_signals: bool = False) -> Iterator[Any]:
    """Connect to Ray for one run and yield the ``ray`` module.

    An already initialised Ray (``ray.init`` called by the caller) is used as it is and left
    running. Otherwise ``address`` (default ``$RAY_ADDRESS``) names the cluster to join
    (``"auto"``, ``HOST:6379`` or ``ray://HOST:10001``); without one a local Ray is started
    with ``num_cpus`` CPUs (default: the available cores) and shut down afterwards. A local
    Ray is owned by this process: a :class:`Reaper` (``reaper``, or one made here) ends its
    processes when this process ends, SIGKILL included.

    ``quiet``: nothing of Ray on stderr (``ddp profile -q``). ``own_signals``: the SIGINT and
    SIGTERM handlers in effect before ``ray.init`` are put back after it (``ray.init`` replaces
    SIGTERM's with one that exits 15); a SIGTERM while ``ray.init`` runs raises :class:`RayStop`.
    """
    import signal

    ray = import_ray()
    if ray.is_initialized():
        _quiet_ray(ray, quiet)
        yield ray
        return
    from .run import available_cores

    addr = address or os.environ.get("RAY_ADDRESS") or None
    kwargs: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False,
                                  logging_level=logging.CRITICAL if quiet else logging.ERROR, configure_logging=True)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} if own_signals else {}
    own_reaper = None
    if not addr and reaper is None:
        reaper = own_reaper = Reaper()
    try:
        try:
            if addr:
                _check_reachable(addr)
                with _init_environment(quiet, None):
                    ray.init(address=addr, **kwargs)
            else:
                env = os.environ.pop("RAY_ADDRESS", None)  # an empty RAY_ADDRESS must not mean "connect"
                try:
                    with _init_environment(quiet, reaper.token if reaper is not None else None):
                        # address="local": a Ray of our own, never one another user's run left in /tmp/ray
                        ray.init(address="local", num_cpus=num_cpus or available_cores(), **kwargs)
                finally:
                    if env is not None:
                        os.environ["RAY_ADDRESS"] = env
        except SystemExit as exc:  # ray.init's own SIGTERM handler: sys.exit(15)
            with contextlib.suppress(Exception):
                ray.shutdown()
            if own_signals and exc.code == signal.SIGTERM:
                raise RayStop(signal.SIGTERM) from None
            raise
        except Exception as exc:  # ConnectionError, RuntimeError, ValueError... depending on the Ray version
            with contextlib.suppress(Exception):
                ray.shutdown()
            where = f"the Ray cluster at {addr}" if addr else "a local Ray instance"
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise DDPUsageError(
                f"cannot start or join {where} ({first}); start a cluster with `ray start --head` and pass its "
                "address with --address or RAY_ADDRESS, or leave both unset for a local Ray", code="D191") from None
        for s, h in handlers.items():
            signal.signal(s, h)
        _quiet_ray(ray, quiet)
        try:
            yield ray
        finally:
            for s in handlers:  # a second signal must not cut the shutdown short
                signal.signal(s, signal.SIG_IGN)
            try:
                ray.shutdown()
            finally:
                for s, h in handlers.items():
                    signal.signal(s, h)
    finally:
        if own_reaper is not None:
            own_reaper.close()


def _check_reachable(addr: str, timeout: float = 5.0) -> None:
    """A ``HOST:PORT`` cluster address must accept a TCP connection: Ray ends the whole process
    (no Python exception) when its GCS cannot be reached, so this is checked first."""
    import socket

    if "://" in addr or ":" not in addr:
        return  # "auto" and ray:// client addresses fail in Python
    host, _, port = addr.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except (OSError, ValueError) as exc:
        raise ConnectionError(f"nothing answers at {addr}: {exc}") from None


def resolve_actors(n_actors: int | str, ray: Any) -> int:
    """Actors to start: ``"auto"`` = the CPUs of the Ray cluster; an integer ≥ 1 as given,
    at most the cluster's CPUs (each actor takes one CPU)."""
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    if n_actors == "auto":
        return cpus
    n = int(n_actors)
    if n < 1:
        raise DDPUsageError("-j/--n-process must be 'auto' or at least 1", code="D207")
    return min(n, cpus)


def auto_batch_chars(total_chars: int, n_actors: int) -> int:
    """Batch size for Ray when none is given: about :data:`BATCHES_PER_ACTOR` batches per
    actor, between :data:`MIN_AUTO_BATCH_CHARS` and the local default :data:`BATCH_CHARS`."""
    want = -(-int(total_chars) // max(1, n_actors * BATCHES_PER_ACTOR))
    return int(min(BATCH_CHARS, max(MIN_AUTO_BATCH_CHARS, want)))


# --------------------------------------------------------------------------------- actor


def _ipc(df: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.write_ipc(buf)
    return buf.getvalue()


def _from_ipc(data: bytes) -> pl.DataFrame:
    import polars as pl

    return pl.read_ipc(io.BytesIO(data))


def _error_json(exc: DDPError) -> str:
    msg = str(exc)
    prefix = f"[{exc.code}] "
    kind = "data" if isinstance(exc, DDPDataError) else "usage" if isinstance(exc, DDPUsageError) else "other"
    return json.dumps({"kind": kind, "code": exc.code, "message": msg[len(prefix):] if msg.startswith(prefix) else msg})


def _raise_error(payload: str) -> None:
    e = json.loads(payload)
    cls = {"data": DDPDataError, "usage": DDPUsageError}.get(e["kind"], DDPError)
    raise cls(e["message"], code=e["code"])


class BatchWorker:
    """A Ray actor (one CPU): one spaCy pipeline, loaded at its first batch, and the batches it is given.

    ``profile(spec)`` reads the batch's rows (:meth:`BatchSpec.read`), runs the local engine's
    stages on them (:func:`~ddpcore.engines.local.iter_profile`, through ``parse_wrapper(parser)``
    — the parse cache — when given) and, with a ``dataset``, writes the three tables as parts
    (:func:`ddpcore.engines.parts.write_batch`). Returns a dict: ``k``; ``marker`` (the batch's
    rows, words, units, cache hits/misses, seconds, part checksums); ``tables`` (the three
    tables as Arrow IPC bytes, only without a dataset); ``info`` (pipeline info); ``node``;
    ``warnings`` (of the parse cache: said by the driver); ``error`` (``""`` or a ddpcore error
    as JSON, re-raised by the driver with its code).
    """

    def __init__(self, pipeline: str | None, batch_size: int, settings: Settings, source_name: str,
                 parse_wrapper: Callable[[Any], Any] | None, dataset: str | None) -> None:
        from ..pipeline.parse import Parser

        self.settings, self.source_name, self.dataset = settings, source_name, dataset
        self.parser = Parser(pipeline, n_process=1, batch_size=batch_size)
        self.warnings: list[str] = []
        self.parse = parse_wrapper(self.parser) if parse_wrapper is not None else None
        if self.parse is not None and hasattr(self.parse, "warn"):
            self.parse.warn = self.warnings.append  # said on the driver, not lost in a worker's log
        self._next: Batch | None = None
        self._results: Iterator[Any] | None = None

    def _feed(self) -> Iterator[Batch]:
        while True:  # one batch per profile() call: the rule tables are compiled once per actor
            assert self._next is not None
            yield self._next

    def ready(self) -> str:
        """The node this actor runs on (answered once the actor has started: a replacement's signal)."""
        import ray

        return str(ray.get_runtime_context().get_node_id())

    def _cache_counts(self) -> tuple[int, int]:
        return int(getattr(self.parse, "hits", 0)), int(getattr(self.parse, "misses", 0))

    def check_pipeline(self, expected: dict[str, Any], node: str) -> None:
        """Before a batch is parsed: the pipeline this actor loads must be ``expected["info"]``, the one the
        run's batches were parsed with (D170 when it comes from the interrupted run's journal, else D763)."""
        now = self.parser.info()
        if expected.get("resumed"):
            check_same_pipeline(expected["info"], now, expected.get("journal"))
        check_actor_pipeline(expected["info"], now, node, expected.get("journal"))

    def profile(self, spec: BatchSpec, expected: dict[str, Any] | None = None) -> dict[str, Any]:
        """Profile batch ``spec`` (see the class); ``expected``: ``{"info", "journal", "resumed"}``, the
        pipeline the run's batches were parsed with, checked before the batch is parsed (:meth:`check_pipeline`)."""
        import ray

        t0 = time.perf_counter()
        out: dict[str, Any] = {"k": spec.k, "error": "", "node": ray.get_runtime_context().get_node_id()}
        try:
            if expected is not None:
                self.check_pipeline(expected, out["node"])
            self._next = spec.read()
            if self._results is None:
                self._results = iter_profile(self._feed(), self.parser, self.settings, source_name=self.source_name,
                                             parse=self.parse)
            h0, m0 = self._cache_counts()
            try:
                res = next(self._results)
            except BaseException:
                self._results = None  # the generator is finished by the exception
                raise
            if hasattr(self.parse, "flush"):
                self.parse.flush()
            h1, m1 = self._cache_counts()
            extra = {"units": int(res.n_units), "seconds": round(time.perf_counter() - t0, 4), "node": out["node"]}
            if self.parse is not None:
                entry = self.parse.signature().get("cache", {}) if hasattr(self.parse, "signature") else {}
                extra.update(cache_hits=h1 - h0, cache_misses=m1 - m0, cache_dir=entry.get("dir"))
                if entry.get("not_written"):  # the cache could not be written on this actor: said in the summary
                    extra["cache_not_written"] = entry["not_written"]
                for key in ("corrupted", "foreign", "unstamped"):  # cache files this actor did not use (or trusted)
                    if entry.get(key):
                        extra[f"cache_{key}"] = list(entry[key])
            if self.dataset is not None:
                out["marker"] = P.write_batch(self.dataset, spec.k, res.segments, res.anchors, res.sentences, extra)
            else:
                out["tables"] = [_ipc(t) for t in (res.segments, res.anchors, res.sentences)]
                out["marker"] = {**extra, "words": int(res.segments["n_tokens"].sum())}
            out["info"] = self.parser.info()
        except DDPError as exc:
            out["error"] = _error_json(exc)
        except OSError as exc:
            out["error"] = _error_json(DDPDataError(
                f"{getattr(exc, 'filename', None) or spec.name}: batch {spec.k} cannot be read or written on node "
                f"{out['node'][:12]} ({exc.strerror or exc}); every node of the cluster must see the input and the "
                "output folder at the same path or URI", code="D862"))
        except Exception as exc:  # noqa: BLE001 - anything else, named, instead of a Ray traceback
            out["error"] = _error_json(DDPError(
                f"batch {spec.k} of {spec.name} failed on node {out['node'][:12]} ({type(exc).__name__}: "
                f"{' '.join(str(exc).split())[:200]}); rerun with --resume to retry the unfinished batches",
                code="D865"))
        out["warnings"] = list(self.warnings)
        self.warnings.clear()
        return out


# ---------------------------------------------------------------------------------- the pool


@dataclass
class PoolAccount:
    """What the actor pool did: batches finished, batch runs lost with their actor and run again
    (``retried``), actors started to replace dead ones, the nodes that finished batches."""

    finished: int = 0
    retried: int = 0
    replaced_actors: int = 0
    nodes: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _lost_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """The exceptions of a batch lost with its actor (actor or worker died, node gone)."""
    ex = ray.exceptions
    names = ("RayActorError", "ActorDiedError", "ActorUnavailableError", "WorkerCrashedError", "NodeDiedError",
             "ObjectLostError", "OwnerDiedError", "LocalRayletDiedError")
    return tuple(getattr(ex, n) for n in names if isinstance(getattr(ex, n, None), type))


def run_pool(ray: Any, specs: list[BatchSpec] | list[BatchRef], make_worker: Callable[[], Any], n_actors: int,
             on_result: Callable[[dict[str, Any]], None], account: PoolAccount | None = None) -> PoolAccount:
    """Profile ``specs`` (a :class:`~ddpcore.engines.ray_plan.BatchRef` makes its spec only when its
    batch is handed out) on ``n_actors`` actors (``make_worker()`` starts one), largest batches
    first, :data:`IN_FLIGHT_PER_ACTOR` queued per actor; ``on_result(result)`` for every finished
    batch (any order). A batch lost with its actor is queued again, at most
    :data:`MAX_BATCH_RETRIES` times (then D863); the dead actor is replaced while the cluster has a
    CPU for it, and the replacement gets batches only once it has started (:class:`_Pool`), so a
    replacement that waits for a CPU never holds batches back. An error of a batch is raised with
    its code. D866 when nothing finishes for :data:`NO_CPU_TIMEOUT` seconds while the cluster has no CPU.
    ``make_worker.expect()``, when set (:func:`_worker_factory`): the pipeline each batch handed out must be
    parsed with (:meth:`BatchWorker.profile`), or None."""
    account = account or PoolAccount()
    lost = _lost_errors(ray)
    queue = deque(sorted(specs, key=lambda s: -s.n_units))
    pool = _Pool(ray, make_worker, max(1, min(n_actors, len(specs))), account, getattr(make_worker, "expect", None))
    attempts: dict[int, int] = {}
    start = time.monotonic()
    try:
        pool.fill(queue)
        quiet_since = time.monotonic()
        while pool.inflight or (queue and pool.pending):  # one iteration per finished (or lost) batch
            with _deferred_signals():
                ready, _ = ray.wait([*pool.inflight, *pool.pending], num_returns=1, timeout=0.5)
            if not ready:
                _check_stalled(ray, quiet_since)
                continue
            quiet_since = time.monotonic()
            ref = ready[0]
            if ref in pool.pending:
                pool.started(ref, lost)
                pool.fill(queue)
                continue
            slot, gen, spec = pool.inflight.pop(ref)
            pool.load[slot] -= 1
            try:
                with _deferred_signals():
                    result = ray.get(ref)
            except lost as exc:
                _requeue(spec, exc, attempts, account)
                pool.lost(slot, gen)
                queue.appendleft(spec)
                pool.fill(queue)
                continue
            account.warnings.extend(result.get("warnings") or ())
            if result["error"]:
                _raise_error(result["error"])
            account.finished += 1
            account.nodes.add(result["node"])
            on_result(result)
            pool.fill(queue)
    finally:
        account.seconds += time.monotonic() - start
        pool.close()
    if queue:  # (cannot happen: a slot always remains, started or starting)
        raise DDPError(f"{len(queue)} batch(es) were left without an actor; rerun with --resume", code="D865")
    return account


class _Pool:
    """The actors of :func:`run_pool`: slot ``i`` holds ``actors[i]`` (its ``generation`` counts
    replacements), ``load`` batches queued on it; ``inflight`` maps a batch's result reference to
    ``(slot, generation, spec)``; ``pending`` the ``ready()`` reference of a replacement not yet
    started to its slot. ``active``: the slots still in use (the pool shrinks with the cluster)."""

    def __init__(self, ray: Any, make_worker: Callable[[], Any], n: int, account: PoolAccount,
                 expect: Callable[[], dict[str, Any] | None] | None = None) -> None:
        self.ray, self.make_worker, self.account, self.expect = ray, make_worker, account, expect
        self.actors = [make_worker() for _ in range(n)]
        self.generation = [0] * n
        self.load = [0] * n
        self.active = set(range(n))
        self.inflight: dict[Any, tuple[int, int, BatchSpec | BatchRef]] = {}
        self.pending: dict[Any, int] = {}

    def fill(self, queue: deque[BatchSpec | BatchRef]) -> None:
        waiting = set(self.pending.values())
        for slot in sorted(self.active - waiting):
            while self.load[slot] < IN_FLIGHT_PER_ACTOR and queue:
                spec = queue.popleft()
                expected = self.expect() if self.expect is not None else None
                args = (spec.spec(),) if expected is None else (spec.spec(), expected)
                self.inflight[self.actors[slot].profile.remote(*args)] = (slot, self.generation[slot], spec)
                self.load[slot] += 1

    def lost(self, slot: int, gen: int) -> None:
        """A batch of ``slot`` was lost with its actor: replace the actor (once per generation) where
        the cluster still has a CPU for it, else retire the slot (one slot always remains)."""
        if gen != self.generation[slot]:
            return  # the actor was already replaced
        self.generation[slot] += 1
        with contextlib.suppress(Exception):
            self.ray.kill(self.actors[slot], no_restart=True)
        cpus = int(self.ray.cluster_resources().get("CPU", 0))
        if cpus >= len(self.active) or len(self.active) == 1:
            self.actors[slot] = self.make_worker()
            self.pending[self.actors[slot].ready.remote()] = slot
            self.account.replaced_actors += 1
        else:
            self.active.discard(slot)

    def started(self, ref: Any, lost: tuple[type[BaseException], ...]) -> None:
        """The replacement of ``pending[ref]`` answered (it may take batches) or died (replaced again,
        at most :data:`MAX_BATCH_RETRIES` times per slot, then the slot is retired)."""
        slot = self.pending.pop(ref)
        try:
            with _deferred_signals():
                self.ray.get(ref)
        except lost as exc:
            if self.generation[slot] <= MAX_BATCH_RETRIES:
                self.lost(slot, self.generation[slot])
            elif len(self.active) > 1:
                self.active.discard(slot)
            else:
                first = " ".join(str(exc).split())[:200] or type(exc).__name__
                raise DDPError(f"the Ray actors keep dying as they start ({self.generation[slot]} replacements; last: "
                               f"{type(exc).__name__}: {first}); check that every node has ddpcore and the pipeline "
                               "installed, then rerun with --resume to keep the finished batches",
                               code="D863") from None

    def close(self) -> None:
        for a in self.actors:
            with contextlib.suppress(Exception):
                self.ray.kill(a, no_restart=True)


def _requeue(spec: BatchSpec | BatchRef, exc: BaseException, attempts: dict[int, int], account: PoolAccount) -> None:
    """Count one loss of batch ``spec.k``; D863 once it was lost more than :data:`MAX_BATCH_RETRIES` times."""
    attempts[spec.k] = attempts.get(spec.k, 0) + 1
    account.retried += 1
    if attempts[spec.k] > MAX_BATCH_RETRIES:
        first = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise DDPError(f"batch {spec.k} of {spec.name} was lost with its actor {attempts[spec.k]} times (last: "
                       f"{type(exc).__name__}: {first}); the cluster keeps losing nodes or workers: check its logs, "
                       "then rerun with --resume to keep the finished batches", code="D863")


def _check_stalled(ray: Any, quiet_since: float) -> None:
    """D866 when no batch finished for :data:`NO_CPU_TIMEOUT` seconds and the cluster has no CPU left."""
    if time.monotonic() - quiet_since < NO_CPU_TIMEOUT:
        return
    if ray.cluster_resources().get("CPU", 0) < 1:
        raise DDPError(f"no batch finished for {NO_CPU_TIMEOUT:.0f} s and the Ray cluster has no CPU left (its worker "
                       "nodes are gone); add nodes, then rerun with --resume to keep the finished batches",
                       code="D866")


def _worker_factory(ray: Any, o: RunOptions, name: str, dataset: str | None,
                    expect: Callable[[], dict[str, Any] | None] | None = None) -> Callable[[], Any]:
    """``make_worker()`` for :func:`run_pool`: a :class:`BatchWorker` on one CPU, actors spread over the nodes.
    ``expect`` (kept as ``make_worker.expect``): the pipeline the batches must be parsed with, or None."""
    remote = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0, scheduling_strategy="SPREAD")(BatchWorker)

    def make() -> Any:
        return remote.remote(o.pipeline, o.batch_size, o.settings, name, o.parse_wrapper, dataset)

    make.expect = expect  # type: ignore[attr-defined]
    return make


# --------------------------------------------------------------------------- in memory


def check_pipeline(pipeline: str | None) -> None:
    """Fail on the driver, with the loader's own message, when ``pipeline`` is not installed."""
    from ..pipeline.parse import check_available

    check_available(pipeline)


def signature_of(info: dict[str, Any], settings: Settings, cols: SegmentColumns, *, n_actors: int,
                 n_batches: int, input_name: str | None, extra: dict[str, Any] | None = None,
                 warn: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The run signature (:func:`ddpcore.signature.run_signature`) plus ``engine`` and ``actors``;
    a file run (``input_name``) also records ``input``, ``batches`` and ``n_process`` (= actors);
    ``warn`` as there."""
    run = {"input": input_name, "batches": n_batches, "n_process": n_actors} if input_name is not None else None
    return run_signature(info, settings, cols, head_nouns=head_noun_source(info), run=run,
                         extra={**(extra or {}), "engine": "ray", "actors": n_actors}, warn=warn)


def profile_frame_ray(
    df: pl.DataFrame,
    *,
    cols: SegmentColumns,
    settings: Settings,
    pipeline: str | None = None,
    n_actors: int | str = "auto",
    address: str | None = None,
    batch_chars: int | None = None,
    batch_size: int = 256,
    source_name: str = "<table>",
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, dict[str, Any]]:
    """In-memory Ray run (``profile_anchors(..., engine="ray")``).

    ``df``: a validated segment table with ``ROW`` (:func:`~ddpcore.io.segments.read_segments`).
    Its batches go to the actors through the object store (the table is in this process
    already); the tables come back the same way. Returns ``(segments, anchors, sentences,
    signature)`` exactly as the local :func:`~ddpcore.api.profile_anchors` builds them (segments
    in input order without ``ROW``, anchors and sentences in document order).
    """
    import polars as pl

    from .local import batches_from_frame, order_segments

    check_pipeline(pipeline)
    o = RunOptions(cols=cols, settings=settings, pipeline=pipeline, batch_size=batch_size)
    ordered = order_segments(df, cols)
    results: dict[int, dict[str, Any]] = {}
    with ray_session(address) as ray:
        n = resolve_actors(n_actors, ray)
        chars = batch_chars or auto_batch_chars(int(ordered[cols.text].str.len_chars().sum()), n)
        batches = list(batches_from_frame(ordered, cols, chars))
        specs = [BatchSpec(k, (), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), {}, cols,
                           source_name, int(b.frame[cols.text].str.len_chars().sum()), ray.put(b.frame))
                 for k, b in enumerate(batches)]
        run_pool(ray, specs, _worker_factory(ray, o, source_name, None), n,
                 lambda r: results.__setitem__(r["k"], r))
    for k in sorted(results):  # actors on nodes with different installs must not mix their parses (D763)
        check_actor_pipeline(results[0]["info"], results[k]["info"], str(results[k].get("node", "?")),
                             "the first batch's result")
    tables = [[_from_ipc(results[k]["tables"][i]) for k in sorted(results)] for i in range(3)]
    segments = pl.concat(tables[0]).sort(ROW).drop(ROW)
    sig = signature_of(results[0]["info"], settings, cols, n_actors=min(n, len(batches)), n_batches=len(batches),
                       input_name=None, warn=lambda m: warnings.warn(m, UserWarning, stacklevel=4))
    return segments, pl.concat(tables[1]), pl.concat(tables[2]), sig


# ------------------------------------------------------------------------------ file runs


def dataset_target(location: str, option: str = "-o/--output", inputs: tuple[Any, ...] = ()) -> OutputTarget:
    """The output target of ``-o DIR/`` with ``--engine ray``: a folder (local, or a ``pyarrow.fs``
    URI) where the run leaves its dataset (:mod:`ddpcore.engines.parts`). A local folder's parent
    must be an existing writable folder, the folder itself empty or a ddpcore Ray dataset, and no
    input may lie inside it (D867). ``path`` holds the location as given, as a string."""
    from ..io.outputs import OutputTarget

    loc = location.rstrip("/") or "/"
    if not fs.is_uri(loc):
        p = Path(loc)
        parent = p.parent
        why = None
        if not parent.is_dir():
            why = f"the folder {parent} does not exist; create it first (mkdir -p {parent})"
        elif not os.access(parent, os.W_OK | os.X_OK):
            why = f"the folder {parent} is not writable; choose another folder or fix its permissions"
        elif p.exists() and not p.is_dir():
            why = "is a file; a trailing / names a dataset folder: give a new or empty folder"
        elif p.is_dir() and any(p.iterdir()) and not any((p / f).exists() for f in (P.MANIFEST, P.JOURNAL)):
            why = "is a folder that holds other files and is not a ddpcore Ray dataset; give a new or empty folder"
        else:
            inside = [i for i in inputs if i is not None and not fs.is_uri(i)
                      and Path(os.path.abspath(i)).is_relative_to(os.path.abspath(p))]
            if inside:
                why = f"holds the input {inside[0]}; writing the dataset there could destroy it, choose another folder"
        if why is not None:
            raise DDPUsageError(f"{option} {location}: {why}", code="D867")
    return OutputTarget(option, loc, DATASET)  # type: ignore[arg-type]


@dataclass
class _Where:
    """Where a file run keeps its dataset: ``dataset`` (location), ``keep`` (``-o DIR/``: the
    dataset is the output), ``local`` (its local path, None for a URI; the commit journal and
    staged chunks go there)."""

    dataset: str
    keep: bool
    local: Path | None
    temporary: bool = False
    previous: Path | None = None  # ``-o DIR/``: an earlier finished dataset, kept aside until this run finishes

    @property
    def aside(self) -> Path | None:
        """Where an earlier finished ``-o DIR/`` dataset waits while a new run replaces it
        (``.DIR.ddp-previous`` beside it; None for a URI or a file output)."""
        if not self.keep or self.local is None:
            return None
        return self.local.parent / f".{self.local.name}.ddp-previous"


def work_location(targets: Mapping[str, OutputTarget | None]) -> _Where:
    """The dataset folder of a run: ``-o DIR/`` itself; else ``.NAME.ray.ddp-work`` beside the
    segment output ``-o NAME`` (a folder the output checks refuse to write into: D760); a
    temporary folder for ``-o -`` (one machine only; ``.ddp-ray-work-*`` with its ``owner``, removed by a later
    run if this one is killed)."""
    seg = targets["segments"]
    if seg is not None and seg.format == DATASET:
        loc = str(seg.path)
        return _Where(loc, True, None if fs.is_uri(loc) else Path(os.path.abspath(loc)))
    if seg is not None and seg.path is not None:
        p = Path(os.path.abspath(seg.path))
        local = p.parent / f".{p.name}.ray.ddp-work"
        return _Where(str(local), False, local)
    from . import ray_reaper

    # named and owned as :func:`remove_stale_work` expects: a later run removes it if this one is killed (SIGKILL)
    tmp = Path(tempfile.mkdtemp(prefix=WORK_PREFIX))
    (tmp / "owner").write_text(ray_reaper.owner_token() + "\n")
    return _Where(str(tmp), False, tmp, temporary=True)


_sayer = warner  # ``warn``, or a ``ddp profile: warning:`` line on stderr


def _old_journal(where: _Where, resume: bool, say: Callable[[str], None], notes: list[str],
                 said: bool = False) -> dict[str, Any] | None:
    """The journal of the interrupted run to resume (None: start from the beginning). Without
    ``resume``, the dataset of an earlier run is removed (a note says so; ``said``: a line already said
    why a finished dataset is not reused)."""
    journal_at = fs.join(where.dataset, P.JOURNAL)
    present = fs.exists(journal_at) or fs.exists(fs.join(where.dataset, P.MANIFEST))
    if resume and fs.exists(journal_at):
        try:
            old = fs.read_json(journal_at)
            if isinstance(old, dict) and isinstance(old.get("settings"), dict):
                return old
        except (ValueError, UnicodeDecodeError):
            pass
        say(f"--resume: the journal {journal_at} is empty or damaged, so the interrupted run's settings cannot be "
            "checked; starting from the beginning")
    elif resume:
        if not said:
            notes.append("--resume: no interrupted Ray run of this output found; starting from the beginning")
    elif _set_aside(where):
        notes.append(f"replaced the earlier finished dataset {where.dataset} (kept at {where.previous} until this "
                     "run finished, so a failed run would have left it)")
    elif present:
        notes.append(f"removed the dataset of an earlier Ray run ({where.dataset}); use --resume to continue such a run")
    if present or (where.local is not None and where.local.exists() and not where.keep and not where.temporary):
        fs.remove_tree(where.dataset)  # (a -o - run's new temporary folder holds only its owner file: kept)
    return None


def _finished(dataset: Path) -> bool:
    """A local ``-o DIR/`` dataset whose run finished: a manifest and no journal."""
    return (dataset / P.MANIFEST).exists() and not (dataset / P.JOURNAL).exists()


def _set_aside(where: _Where) -> bool:
    """Before a new run (not ``--resume``) writes ``-o DIR/``: move an earlier *finished* dataset aside
    (:attr:`_Where.aside`, one rename) instead of deleting it, so a run that fails or is stopped before it
    finishes leaves the user's finished output (:func:`_end_aside`). An aside left by a killed run that
    still holds the last finished dataset is kept (``DIR`` then holds an unfinished run). Sets
    ``where.previous``; False when nothing was set aside (a URI, or no finished dataset anywhere)."""
    aside = where.aside
    if aside is None or where.local is None:
        return False
    if _finished(where.local):
        if aside.exists():
            shutil.rmtree(aside)  # (an older finished dataset: the one in DIR is newer)
        os.replace(where.local, aside)
    if not aside.exists():
        return False
    where.previous = aside
    return True


def _end_aside(where: _Where, finished: bool, resumable: bool) -> str | None:
    """After a ``-o DIR/`` run: the dataset set aside is removed when the run ``finished``; put back in
    place when the run failed with nothing a ``--resume`` could continue; else kept (a line says where).
    Also removes an aside a killed run left when this run finished."""
    aside = where.aside
    if aside is None or not aside.exists():
        return None
    if finished:
        shutil.rmtree(aside, ignore_errors=True)
        return None
    if not resumable and where.previous is not None:
        shutil.rmtree(where.local, ignore_errors=True)  # type: ignore[arg-type]
        os.replace(aside, where.local)  # type: ignore[arg-type]
        return f"the earlier finished dataset {where.dataset} is back in place, unchanged"
    return (f"the earlier finished dataset is kept at {aside} until a run of {where.dataset} finishes "
            f"(move it back by hand to keep it instead)")


def _reuse_finished(source: Any, o: RunOptions, where: _Where, say: Callable[[str], None],
                    notes: list[str]) -> RunReport | bool:
    """``--resume`` of ``-o DIR/`` whose run finished (``_SUCCESS``, no journal): the finished dataset is the
    output, kept as it is, when the settings and the input its manifest records are this command's (else
    D170, as for an interrupted run); its summary is read from its parts (checksums verified). Else False (not
    such a dataset) or True (profile from the beginning; a line said why: a manifest without settings, written
    by an older ddpcore, or a damaged part)."""
    manifest_at = fs.join(where.dataset, P.MANIFEST)
    if not (o.resume and where.keep) or fs.exists(fs.join(where.dataset, P.JOURNAL)) or not fs.exists(manifest_at):
        return False
    try:
        m = P.read_manifest(where.dataset)
    except DDPDataError:
        return False  # (an unreadable manifest: no finished run to reuse)
    old = m.get(P.RESUME_SETTINGS)
    if not isinstance(old, dict) or not old.get("batch_chars"):
        notes.append(f"--resume: the finished dataset {where.dataset} records no settings (an older ddpcore wrote "
                     "it), so whether it matches this command cannot be checked; starting from the beginning")
        return True
    ident = _input_identity(source, o)
    compare_settings(old, _settings_of(ident, o, int(o.batch_chars or old["batch_chars"])), manifest_at,
                     finished=True)
    markers = P.manifest_markers(m)
    try:
        if o.summary_by is not None and markers:
            first = P.read_part(where.dataset, "segments", min(markers), markers[min(markers)]["files"]["segments"])
            if o.summary_by not in first.columns:
                raise DDPUsageError(f"--summary-by {o.summary_by}: no such column in the finished dataset "
                                    f"{where.dataset}; available columns: "
                                    f"{', '.join(c for c in first.columns if c != P.INPUT_ROW)}", code="D137")
        summary, n_anchors = P.dataset_summary(where.dataset, markers, o.summary_by, o.cols)
        for k, marker in markers.items():  # (the segment parts were read: every other part's checksum too)
            for role in ("anchors", "sentences"):
                P.check_part(where.dataset, role, k, marker["files"][role])
    except DDPDataError as exc:
        if exc.code != "D864":
            raise
        say(f"--resume: the finished dataset {where.dataset} is damaged ({exc.message.split(';')[0]}); "
            "starting from the beginning")
        return True
    n = int(m.get("n_batches") or len(markers))
    notes.append(f"nothing to resume: {n} of {n} batches done; {where.dataset} holds the finished output of this "
                 "command (same settings and input) and is kept as it is (rerun without --resume to profile again)")
    return RunReport(signature=m["signature"], summary_frame=None, summary=summary,
                     n_segments=int(m["rows"]["segments"]), n_anchors=n_anchors, n_batches=n, resumed_batches=n,
                     notes=notes)


def _stage(source: Any, o: RunOptions, where: _Where, name: str) -> Any:
    """Read and validate the input on the driver, keeping only its id index: a Parquet input (path
    or URI) in place; another format staged as Parquet chunks into the dataset folder (D861 when
    that folder is a URI: stage it as Parquet first). D137: ``summary_by`` missing."""
    from ..io.sources import resolve_docs, stage_input

    parquet = isinstance(source, (str, os.PathLike)) and str(source).lower().endswith((".parquet", ".pq"))
    if where.local is None and not (parquet and o.reader == "table"):
        raise DDPUsageError(f"{name}: with a dataset at a URI ({where.dataset}) the input must be a Parquet file the "
                            "workers can read, with --reader table (convert it to a Parquet table first, e.g. "
                            "with polars: `pl.read_ndjson(PATH).write_parquet(...)`; or give a local output folder)",
                            code="D861")
    src = source if not isinstance(source, (str, os.PathLike)) or fs.is_uri(source) else Path(os.path.abspath(source))
    fs.make_dirs(where.dataset)
    staged = stage_input(src, o.cols, where.local, name=name, reader=o.reader,
                         docs=resolve_docs(source, o.reader, o.docs) if not fs.is_uri(source) else None,
                         txt_mode=o.txt_mode, warn=o.warn)
    if o.summary_by is not None and o.summary_by not in staged.schema:
        raise DDPUsageError(f"--summary-by {o.summary_by}: no such column in {name}; available columns: "
                            f"{', '.join(staged.schema)}", code="D137")
    return staged


@dataclass
class _Batches:
    """The plan of a file run and its batches: ``done`` (markers of every finished batch, by number),
    ``resumed`` (how many were finished by the interrupted run), the journal and the pipeline info."""

    plan: RayPlan
    done: dict[int, dict[str, Any]]
    resumed: int
    journal: dict[str, Any]
    n_actors: int
    fresh: set[int] = field(default_factory=set)


def _input_identity(source: Any, o: RunOptions, content: bool = True) -> dict[str, Any]:
    """The input's identity in the journal (``input``: path, size, modification time) and, for a local file
    or folder, the SHA-256 of its content (``input_sha256``, as the local engine's journal: an input replaced
    in place by one of the same size and time is refused on --resume, D170; not with ``content`` False: a
    ``-o -`` run, never resumed). Computed once per run."""
    if not isinstance(source, (str, os.PathLike)):
        return {"input": {"path": None}}
    from ..io.sources import identity_files

    id_source, id_docs = identity_files(source, o.reader, o.docs)  # mtme: sources/LP.txt + documents/LP.docs
    ident: dict[str, Any] = {"input": input_identity(id_source, id_docs if o.reader == "mtme" else o.docs)}
    if content and not fs.is_uri(source):  # (at a URI: its size and modification time only; hashing would download it)
        from .run import INPUT_DIGEST, input_digest

        ident[INPUT_DIGEST] = input_digest(id_source, id_docs)
    return ident


def _settings_of(ident: dict[str, Any], o: RunOptions, chars: int) -> dict[str, Any]:
    """The journal's settings of this run (what a resumed run must share with the interrupted one);
    ``ident``: :func:`_input_identity`."""
    reader = {"name": o.reader, "docs": None if o.docs is None else str(o.docs), "txt_mode": o.txt_mode}
    extra = {"engine": "ray", "reader": reader, **{k: v for k, v in ident.items() if k != "input"}}
    return journal_settings(o.settings, o.cols, o.pipeline, int(chars), ident["input"], extra)


def _saved_plan(ident: dict[str, Any], o: RunOptions, where: _Where, old: dict[str, Any] | None, name: str,
                notes: list[str]) -> RayPlan | None:
    """``--resume``: the interrupted run's saved plan (:func:`~ddpcore.engines.ray_plan.load_plan`), once
    the input's identity (path, size, modification time, content checksum) and the settings are checked
    against its journal (D170) — the input is not staged or planned again. None (the input is read and planned anew): no journal, or
    a journal without a usable plan (a note says why). D137 (``--summary-by``) from the saved schema."""
    if old is None:
        return None
    chars = o.batch_chars or old["settings"].get("batch_chars")
    if not chars:
        return None
    compare_settings(old["settings"], _settings_of(ident, o, int(chars)), fs.join(where.dataset, P.JOURNAL))
    plan, why = load_plan(where.dataset, old.get("plan"), o.cols)
    if plan is None:
        notes.append(f"--resume: {why}; reading the input again to plan the run")
        return None
    if o.summary_by is not None and o.summary_by not in plan.schema:
        raise DDPUsageError(f"--summary-by {o.summary_by}: no such column in {name}; available columns: "
                            f"{', '.join(plan.schema)}", code="D137")
    return plan


def _plan_run(ray: Any, staged: Any, saved: RayPlan | None, ident: dict[str, Any], o: RunOptions, where: _Where,
              old: dict[str, Any] | None, say: Callable[[str], None], notes: list[str],
              extra_journal: dict[str, Any] | None = None) -> _Batches:
    """Resolve actors and batch size (a resumed run keeps the interrupted run's), compare the
    settings with the interrupted run's (D170), plan (or take the ``saved`` plan of the interrupted
    run), save the plan and write the journal (with ``extra_journal``: what a resumed run, which does not
    read the input again, takes from it), keep the finished batches."""
    n = resolve_actors(o.n_process, ray)
    from ..io.sources import CHARS

    if saved is not None:
        chars = saved.batch_chars
    else:
        chars = o.batch_chars or (old["settings"].get("batch_chars") if old else None) or \
            auto_batch_chars(int(staged.ids[CHARS].sum()), n)
    settings = _settings_of(ident, o, int(chars))
    if old is not None:
        compare_settings(old["settings"], settings, fs.join(where.dataset, P.JOURNAL))
    plan = saved if saved is not None else plan_batches(staged, int(chars))  # (consumes the id index)
    P.prepare(where.dataset)
    entry = old["plan"] if saved is not None else save_plan(plan, where.dataset)
    journal = {"version": 1, "settings": settings, "n_batches": plan.n_batches, "plan": entry,
               **({"pipeline_info": old["pipeline_info"]} if old and "pipeline_info" in old else {}),
               **(extra_journal or {})}
    fs.write_json_atomic(fs.join(where.dataset, P.JOURNAL), journal)
    done = P.finished_batches(where.dataset, plan.n_batches, say) if old is not None else {}
    if done:
        seg = int(plan.segments_per_batch()[sorted(done)].sum())
        notes.append(f"resuming: {len(done)} of {plan.n_batches} batches ({seg:,} of {plan.n_segments:,} segments) "
                     "were finished by the interrupted run")
        print(f"ddp profile: {notes[-1]}", file=sys.stderr, flush=True)
    return _Batches(plan, done, len(done), journal, n)


def _profile_todo(ray: Any, b: _Batches, o: RunOptions, where: _Where, name: str, say: Callable[[str], None]
                  ) -> PoolAccount:
    """Profile the batches not finished yet on the actors, which write their parts; progress per batch."""
    from .run import Progress

    plan = b.plan
    seg_per_batch = plan.segments_per_batch()
    todo = [k for k in range(plan.n_batches) if k not in b.done]
    prog = Progress(o.progress, plan.n_segments, done_segments=int(seg_per_batch[sorted(b.done)].sum()))
    journal_at = fs.join(where.dataset, P.JOURNAL)
    # the interrupted run's pipeline (D170 on every actor before it parses), else this run's first batch's (D763)
    resumed = "pipeline_info" in b.journal

    def expect() -> dict[str, Any] | None:
        info = b.journal.get("pipeline_info")
        return None if info is None else {"info": info, "journal": journal_at, "resumed": resumed}

    def finished(result: dict[str, Any]) -> None:
        k = int(result["k"])
        if "pipeline_info" not in b.journal:
            b.journal["pipeline_info"] = result["info"]
            fs.write_json_atomic(journal_at, b.journal)
        elif pipeline_identity(result["info"]) != pipeline_identity(b.journal["pipeline_info"]):
            P.drop_batch(where.dataset, k)  # handed out before the first batch finished: not kept for --resume
            check_actor_pipeline(b.journal["pipeline_info"], result["info"], str(result.get("node", "?")), journal_at)
        b.done[k] = result["marker"]
        b.fresh.add(k)
        prog.advance(float(seg_per_batch[k]))
        prog.add_words(int(result["marker"]["words"]))

    try:
        account = run_pool(ray, plan.refs(todo), _worker_factory(ray, o, name, where.dataset, expect),
                           b.n_actors, finished)
    finally:
        prog.close()
    for w in dict.fromkeys(account.warnings):
        say(w)
    return account


def _accounting(b: _Batches, account: PoolAccount) -> dict[str, Any]:
    """The run's accounting (notes and the manifest): batches profiled here, resumed, retried; words/s
    over the cluster (words of this run's batches / seconds from the first batch handed out to the last
    finished, actor start-up included)."""
    seconds = account.seconds
    words = sum(int(b.done[k].get("words", 0)) for k in b.fresh)
    unstored = [b.done[k]["cache_not_written"] for k in sorted(b.fresh) if b.done[k].get("cache_not_written")]
    return {"batches": b.plan.n_batches, "profiled": account.finished, "resumed": b.resumed,
            "cache_not_written": len(unstored), **({"cache_not_written_why": unstored[0]} if unstored else {}),
            "retried": account.retried, "replaced_actors": account.replaced_actors, "nodes": len(account.nodes),
            "actors": b.n_actors, "seconds": round(seconds, 3),
            "words_per_second": round(words / seconds, 1) if seconds > 0 and account.finished else None}


def _cache_entry(o: RunOptions, done: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """The signature's ``cache`` entry (as the local engine's): hits and misses of the batches
    profiled by this run (``done``: their markers), the folder the actors used."""
    if o.parse_wrapper is None:
        return {}
    ms = [m for m in done.values() if "cache_hits" in m]
    folder = next((m["cache_dir"] for m in ms if m.get("cache_dir")), None)
    entry = {"hits": sum(int(m["cache_hits"]) for m in ms), "misses": sum(int(m["cache_misses"]) for m in ms),
             "dir": folder}
    for key in ("corrupted", "foreign", "unstamped"):  # as the local engine's: cache files not used (or trusted)
        names = sorted({str(n) for m in ms for n in m.get(f"cache_{key}", ())})
        if names:
            entry[key] = names
    why = next((m["cache_not_written"] for m in ms if m.get("cache_not_written")), None)
    if why is not None:  # as the local engine's signature: why the new parses were not stored
        entry["not_written"] = why
    return {"cache": entry}


def _finish(where: _Where, b: _Batches, targets: dict[str, OutputTarget | None], signature: dict[str, Any],
            o: RunOptions, accounting: dict[str, Any]) -> tuple[pl.DataFrame, int]:
    """``-o DIR/``: the ``_SUCCESS`` manifest; ``-o FILE``: the files assembled from the verified parts,
    put in place together (D761), then the dataset removed."""
    from ..io.outputs import OutputSet

    if where.keep:
        summary, n_anchors = P.dataset_summary(where.dataset, b.done, o.summary_by, o.cols)
        P.write_manifest(where.dataset, b.done, signature, accounting, b.journal["settings"])
        return summary, n_anchors
    assert where.local is not None
    outs = OutputSet(where.local / "commit.json")
    try:
        summary, n_anchors = P.assemble(where.dataset, b.done, targets, signature, b.plan.n_segments, o.summary_by,
                                        o.cols, outs.temp)
        outs.commit()  # every output in place together, or none
    finally:
        outs.discard()
    fs.remove_tree(where.dataset)
    return summary, n_anchors


class RayEngine:
    """The Ray engine (``--engine ray``): the stages on Ray actors (:func:`profile_ray`)."""

    name = "ray"

    def check(self, options: RunOptions) -> None:
        """D193 for ``--shard`` (local engine only); D190 (before the input is read) when Ray is missing."""
        if options.shard is not None:
            raise DDPUsageError("--shard is for the local engine; --engine ray cannot use it (Ray spreads the work "
                                "itself; --resume continues an interrupted Ray run)", code="D193")
        import_ray()

    def run(self, source: Any, targets: Mapping[str, OutputTarget | None], options: RunOptions) -> RunReport:
        """Profile ``source`` into ``targets`` on Ray actors (:func:`profile_ray`)."""
        return profile_ray(source, dict(targets), options)


def profile_ray(source: Any, targets: dict[str, OutputTarget | None], options: RunOptions | None = None,
                **fields: Any) -> RunReport:
    """``ddp profile --engine ray``: profile ``source`` on Ray actors into the output ``targets``
    (roles ``segments``, ``anchors``, ``sentences``, ``documents`` as for
    :func:`~ddpcore.engines.run.profile_to_files`; or ``segments`` = :func:`dataset_target`, the
    dataset left as the output), with the same rows, order and values as the local engine.

    ``options`` (:class:`~ddpcore.engines.base.RunOptions`), or its fields as keywords. Ray uses:
    ``n_process`` (actors, each loading the pipeline once; ``"auto"``: the cluster's CPUs),
    ``address`` (cluster to join, default ``$RAY_ADDRESS``; none: a local Ray on the available
    cores), ``batch_chars`` (default: about four batches per actor, :func:`auto_batch_chars`),
    ``resume`` (keep the finished parts of an interrupted run: D170 if its settings differ),
    ``parse_wrapper`` (the parse cache: its folder must be on storage every node sees),
    ``progress``, ``summary_by``, the reader options, ``warn`` and ``quiet`` (nothing of Ray on
    stderr). Holds the segment output's :class:`~ddpcore.engines.run.RunLock`. SIGINT and SIGTERM
    stop the run and shut Ray down: :class:`~ddpcore.engines.base.RunInterrupted` (exit 130/143),
    the finished parts kept for ``--resume``.
    """
    from .run import RunLock

    o = replace(options, **fields) if options is not None else RunOptions(**fields)
    seg = targets["segments"]
    lock = RunLock(Path(os.path.abspath(str(seg.path)))) if seg is not None and seg.path is not None and \
        not fs.is_uri(str(seg.path)) else None
    if lock is not None:
        lock.acquire()
    try:
        return _profile_ray_run(source, targets, o)
    finally:
        if lock is not None:
            lock.release()


def _profile_ray_run(source: Any, targets: dict[str, OutputTarget | None], o: RunOptions) -> RunReport:
    """:func:`profile_ray`: the old journal, staging on the driver, the plan, the actors, then the
    manifest or the assembly; the interruption report."""
    name, say, notes = o.name_of(source), _sayer(o.warn), []
    check_pipeline(o.pipeline)
    where = work_location(targets)
    stale = remove_stale_work(where.local.parent if where.local is not None else Path(tempfile.gettempdir()))
    if stale:
        notes.append(f"removed {len(stale)} work folder(s) left by killed Ray run(s): {', '.join(stale)}")
    reused = _reuse_finished(source, o, where, say, notes)
    if isinstance(reused, RunReport):
        _end_aside(where, finished=True, resumable=False)  # (an aside a killed run left: DIR is the output)
        return reused
    b: _Batches | None = None
    finished = False
    try:
        with _signals_raise():
            old = _old_journal(where, o.resume, say, notes, said=reused)
            ident = _input_identity(source, o, content=not where.temporary)
            saved = _saved_plan(ident, o, where, old, name, notes)
            staged = _stage(source, o, where, name) if saved is None else None
            from .run import _note_invisible_edges, _note_replaced_columns

            replaced = _note_replaced_columns(staged.schema if staged is not None else saved.schema, o, name, say)
            # (a resumed run does not read the input again: the interrupted run's journal has the entry)
            edges = staged.invisible_edges if staged is not None else (old or {}).get(INVISIBLE_EDGES)
            forms = staged.normalised_text if staged is not None else (old or {}).get(NORMALISED_TEXT)
            replaced.update(_note_invisible_edges(edges if isinstance(edges, dict) else None, o, name, say,
                                                  normalised=forms if isinstance(forms, dict) else None))
            with ray_session(o.address, quiet=o.quiet, own_signals=True) as ray:
                b = _plan_run(ray, staged, saved, ident, o, where, old, say, notes,
                              extra_journal={INVISIBLE_EDGES: replaced.get(INVISIBLE_EDGES),
                                             NORMALISED_TEXT: replaced.get(NORMALISED_TEXT)})
                account = _profile_todo(ray, b, o, where, name, say)
            accounting = _accounting(b, account)
            info = b.journal.get("pipeline_info") or {}
            signature = signature_of(info, o.settings, o.cols, n_actors=min(b.n_actors, b.plan.n_batches),
                                     n_batches=b.plan.n_batches, input_name=name,
                                     extra={**replaced, **_cache_entry(o, {k: b.done[k] for k in b.fresh})},
                                     warn=say)
            summary, n_anchors = _finish(where, b, targets, signature, o, accounting)
        finished = True
        _end_aside(where, finished=True, resumable=False)
    except RayStop as stop:
        raise _interrupted(stop, b, o) from None
    except DDPError as exc:
        if exc.code != "D170" and (b is None or not b.done):  # nothing finished: nothing to resume (D170: the
            # interrupted run's batches stay for a --resume with its settings)
            with contextlib.suppress(DDPError):
                fs.remove_tree(where.dataset) if not where.keep or b is None else None
        raise
    finally:
        if where.temporary:
            shutil.rmtree(where.dataset, ignore_errors=True)
        if not finished:  # a failed or stopped run: the earlier finished -o DIR/ dataset back, or where it waits
            with contextlib.suppress(OSError):
                line = _end_aside(where, finished=False, resumable=b is not None and bool(b.done))
                if line:
                    say(line)
    if not o.quiet or accounting["retried"] or accounting["cache_not_written"]:  # -q: said only when something failed
        notes.append(_account_note(accounting))
    return RunReport(signature=signature, summary_frame=None, summary=summary, n_segments=b.plan.n_segments, n_anchors=n_anchors,
                     n_batches=b.plan.n_batches, resumed_batches=b.resumed, notes=notes)


def _account_note(a: dict[str, Any]) -> str:
    rate = f", {a['words_per_second']:,.0f} words/s over the cluster" if a.get("words_per_second") else ""
    unstored = (f"; the parse cache could not be written for {a['cache_not_written']} batch(es) "
                f"({a['cache_not_written_why']}): their new parses are not stored") if a.get("cache_not_written") else ""
    return (f"Ray: {a['profiled']} of {a['batches']} batches profiled on {a['nodes']} node(s) by {a['actors']} "
            f"actor(s){rate}; {a['resumed']} resumed from the interrupted run, {a['retried']} run again after "
            f"their actor was lost{unstored}")


def _interrupted(stop: RayStop, b: _Batches | None, o: RunOptions) -> RunInterrupted:
    what = "SIGTERM" if stop.signum == signal.SIGTERM else "interrupted (SIGINT)"
    n_done = len(b.done) if b is not None else 0
    return RunInterrupted(stop.signum, f"{what}: stopped the Ray run after {n_done} finished batch(es); no output "
                                       f"was written. To continue, {o.resume_hint}")


def engine_arg(engine: str) -> str:
    """Validate an ``engine`` argument (``"local"`` or ``"ray"``)."""
    if engine not in ("local", "ray"):
        raise DDPUsageError(f"engine must be 'local' or 'ray', not {engine!r}", code="D192")
    return engine


__all__ = ["BatchWorker", "DATASET", "PoolAccount", "RayEngine", "RayStop", "auto_batch_chars", "dataset_target",
           "engine_arg", "import_ray", "profile_frame_ray", "profile_ray", "ray_session", "resolve_actors", "run_pool",
           "work_location"]
