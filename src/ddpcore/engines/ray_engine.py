"""The Ray Data engine: the same stages as the local engine, on the actors of a Ray cluster.

``pip install 'ddpcore[ray]'``; ``ddp profile IN -o OUT --engine ray [--address ADDR]`` or
``ddpcore.profile(..., engine="ray")``. How a run goes:

1. **Read and plan on the driver.** The input is read and validated by the local engine's
   own reader (:func:`~ddpcore.io.sources.stage_input` for files, in bounded memory;
   :func:`~ddpcore.io.segments.read_segments` for in-memory tables), so every bad-input error
   keeps its code and message. Segments are ordered (:func:`~ddpcore.engines.local.order_segments`)
   and cut into batches of whole documents (:func:`~ddpcore.engines.local.document_batches`).
2. **Hand the batches to Ray Data.** Each batch becomes one Arrow block in the Ray object
   store (``ray.data.from_arrow_refs``), largest first so that long documents do not end
   the run on one actor. The rows travel through the object store, not the file system,
   so the workers of a multi-node cluster need ddpcore installed but not the input file.
   (The driver reads the input, not Ray Data's file readers: they would need the input on
   storage every node can see, and they cut files into blocks by size, splitting
   documents; a ``groupby(document)`` shuffle to put them back costs more than the whole
   parse of a small corpus on two cores.)
3. **Profile on actors.** ``map_batches(ProfileActor, concurrency=N, batch_size=None)``:
   each actor loads the spaCy pipeline once (a :class:`~ddpcore.pipeline.parse.Parser` with
   ``n_process=1``) and runs :func:`~ddpcore.engines.local.iter_profile` — the local engine's
   loop over :func:`~ddpcore.pipeline.stages.split_units`, :meth:`Parser.parse
   <ddpcore.pipeline.parse.Parser.parse>` and :func:`~ddpcore.pipeline.stages.run_stages` — on every
   batch of its block. It returns one row per batch: the three tables as Arrow IPC bytes.
4. **Assemble on the driver**, with the local engine's writer: segments in input order,
   anchors and sentences in document order, the run signature (plus ``"engine": "ray"``
   and ``"actors"``) in the Parquet metadata.

Batches hold whole documents and every result of a batch depends only on its documents,
so the output equals the local engine's whatever the batching, the number of actors or
the order in which batches finish. Not supported with Ray: ``--resume`` (a failed Ray run
starts over; Ray itself retries a batch whose actor died), ``--shard`` (Ray already spreads
the work), the parse cache. Ray is imported only inside this module's functions.
"""
from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import schema
from ..errors import DDPDataError, DDPError, DDPUsageError
from ..io.segments import ROW, SegmentColumns
from .base import RunInterrupted, RunOptions, RunReport
from .local import BATCH_CHARS, DOC, SEGKEY, Settings, document_batches, iter_profile, order_segments
from ..pipeline.extract import head_noun_source
from ..signature import run_signature
from ..pipeline.stages import Batch

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

    from ..io.outputs import OutputTarget

#: install hint of every "Ray is missing" message
INSTALL_HINT = "pip install 'ddpcore[ray]'"
#: batch number column of the blocks handed to Ray (plan order = document order)
BATCH = "__batch"
#: rows of that batch (a block must hold whole batches: checked by the actor)
BATCH_ROWS = "__batch_rows"
#: smallest automatic batch, in characters (smaller batches cost more in Ray overhead than they gain)
MIN_AUTO_BATCH_CHARS = 20_000
#: batches per actor aimed at by the automatic batch size (load balance vs per-batch overhead)
BATCHES_PER_ACTOR = 4
ROLES = ("segments", "anchors", "sentences")


# ---------------------------------------------------------------------------- Ray access


def import_ray() -> Any:
    """``ray`` with Ray Data, or a one-line usage error (D190) saying how to install it."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise DDPUsageError(
            f"the Ray engine needs Ray Data, which is not installed ({exc}); install it with {INSTALL_HINT}",
            code="D190") from None
    return ray


def _quiet_ray(ray: Any, quiet: bool = False) -> None:
    """Ray Data's progress bars, INFO and WARNING lines off (ddpcore reports progress itself);
    ``quiet``: its ERROR lines too (``-q``)."""
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    with contextlib.suppress(AttributeError):
        ctx.print_on_execution_start = False
    with contextlib.suppress(AttributeError):
        ctx.enable_operator_progress_bars = False
    for name in ("ray", "ray.data", "ray.data._internal"):
        logging.getLogger(name).setLevel(logging.CRITICAL if quiet else logging.ERROR)


#: environment of ``ray.init`` while it starts a local Ray: no C++ stack dumps on SIGTERM (the
#: driver's SIGTERM is handled by ddpcore: one line, exit 143)
_INIT_ENV = {"RAY_DISABLE_FAILURE_SIGNAL_HANDLER": "1"}
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
    SIGTERM's with one that exits 15); a SIGTERM while ``ray.init`` runs raises ``_Stop``.
    """
    import signal

    from .run import _Stop

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
                        ray.init(num_cpus=num_cpus or available_cores(), **kwargs)
                finally:
                    if env is not None:
                        os.environ["RAY_ADDRESS"] = env
        except SystemExit as exc:  # ray.init's own SIGTERM handler: sys.exit(15)
            with contextlib.suppress(Exception):
                ray.shutdown()
            if own_signals and exc.code == signal.SIGTERM:
                raise _Stop(signal.SIGTERM) from None
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


class ProfileActor:
    """A Ray Data actor: loads the spaCy pipeline once, then profiles blocks of batches.

    ``__call__(block)`` takes an Arrow table of whole batches (``BATCH``, ``BATCH_ROWS``,
    ``ROW``, ``DOC`` and the input columns; rows of a batch in document order) and returns
    one row per batch: ``BATCH`` (int64), ``segments``/``anchors``/``sentences`` (the
    batch's tables as Arrow IPC bytes), ``n_units``, ``info`` (pipeline info, JSON) and
    ``error`` (``""``, or a JSON ddpcore error raised by the batch: re-raised by the driver).
    """

    def __init__(self, pipeline: str | None, batch_size: int, settings: Settings, cols: SegmentColumns,
                 source_name: str) -> None:
        from ..pipeline.parse import Parser

        self.settings = settings
        self.cols = cols
        self.source_name = source_name
        self.parser = Parser(pipeline, n_process=1, batch_size=batch_size)
        self.error = ""
        try:
            self.info = json.dumps(self.parser.info())  # loads the pipeline, once per actor
        except DDPError as exc:
            self.info, self.error = "{}", _error_json(exc)

    def __call__(self, block: pa.Table) -> pa.Table:
        import polars as pl
        import pyarrow as pa

        df = pl.from_arrow(block)
        assert isinstance(df, pl.DataFrame)
        ids = df[BATCH].to_numpy().astype(np.int64)
        cuts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1], True])
        keys = ids[cuts[:-1]]
        sizes = np.diff(cuts)
        expected = df[BATCH_ROWS].to_numpy()[cuts[:-1]]
        if len(np.unique(keys)) != len(keys) or not np.array_equal(sizes, expected):
            raise RuntimeError("ddpcore Ray engine: a block does not hold whole batches (a document was split)")
        out: dict[str, list[Any]] = {BATCH: [], "segments": [], "anchors": [], "sentences": [], "n_units": [],
                                     "info": [], "error": []}
        batches = (Batch(df.slice(int(a), int(b - a)).drop(BATCH, BATCH_ROWS), self.cols)
                   for a, b in zip(cuts[:-1], cuts[1:]))
        results = iter_profile(batches, self.parser, self.settings, source_name=self.source_name) \
            if not self.error else iter(())
        for k in keys:  # one iteration per batch
            error, tables, n_units = self.error, [b""] * 3, 0
            if not error:
                try:
                    res = next(results)
                    tables = [_ipc(res.segments), _ipc(res.anchors), _ipc(res.sentences)]
                    n_units = res.n_units
                except DDPError as exc:
                    error = _error_json(exc)
                    results = iter(())
            for key, value in zip(ROLES, tables):
                out[key].append(value)
            out[BATCH].append(int(k))
            out["n_units"].append(int(n_units))
            out["info"].append(self.info)
            out["error"].append(error)
        return pa.table({
            BATCH: pa.array(out[BATCH], pa.int64()),
            **{r: pa.array(out[r], pa.large_binary()) for r in ROLES},
            "n_units": pa.array(out["n_units"], pa.int64()),
            "info": pa.array(out["info"], pa.string()),
            "error": pa.array(out["error"], pa.string()),
        })


def _error_json(exc: DDPError) -> str:
    msg = str(exc)
    prefix = f"[{exc.code}] "
    kind = "data" if isinstance(exc, DDPDataError) else "usage" if isinstance(exc, DDPUsageError) else "other"
    return json.dumps({"kind": kind, "code": exc.code, "message": msg[len(prefix):] if msg.startswith(prefix) else msg})


def _raise_error(payload: str) -> None:
    e = json.loads(payload)
    cls = {"data": DDPDataError, "usage": DDPUsageError}.get(e["kind"], DDPError)
    raise cls(e["message"], code=e["code"])


# ------------------------------------------------------------------------------ the run


@dataclass(frozen=True)
class RayBatchResult:
    """Tables of batch ``k`` (plan order) as the actors returned them."""

    k: int
    segments: pl.DataFrame
    anchors: pl.DataFrame
    sentences: pl.DataFrame
    n_units: int
    info: dict[str, Any]


def run_batches(
    ray: Any,
    batches: Iterable[tuple[int, pl.DataFrame]],
    *,
    cols: SegmentColumns,
    settings: Settings,
    pipeline: str | None,
    n_actors: int,
    batch_size: int = 256,
    source_name: str = "<table>",
) -> Iterator[RayBatchResult]:
    """Profile ``batches`` — ``(k, frame)`` with ``frame`` a :class:`Batch` frame (``ROW``,
    ``DOC`` renumbered from 0, input columns; document order) — on ``n_actors`` Ray actors.

    Yields one :class:`RayBatchResult` per batch as the actors finish them (any order).
    A ddpcore error raised on an actor (e.g. D115, a line too long) is raised here as the
    same class with the same code and message.
    """
    import polars as pl

    refs, sizes = [], []
    for k, frame in batches:
        table = frame.with_columns(pl.lit(k, pl.Int64).alias(BATCH),
                                   pl.lit(frame.height, pl.Int64).alias(BATCH_ROWS)).to_arrow()
        refs.append(ray.put(table))
        sizes.append(int(frame[cols.text].str.len_chars().sum()))
    if not refs:
        return
    order = np.argsort(-np.asarray(sizes), kind="stable")  # largest batches first
    ds = ray.data.from_arrow_refs([refs[i] for i in order])
    n = max(1, min(n_actors, len(refs)))
    out = ds.map_batches(
        ProfileActor,
        fn_constructor_kwargs=dict(pipeline=pipeline, batch_size=batch_size, settings=settings, cols=cols,
                                   source_name=source_name),
        batch_size=None, batch_format="pyarrow", zero_copy_batch=True, num_cpus=1,
        compute=ray.data.ActorPoolStrategy(size=n),
    )
    for table in out.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=0):
        rows = table.to_pydict()
        for i, k in enumerate(rows[BATCH]):  # one iteration per batch
            if rows["error"][i]:
                _raise_error(rows["error"][i])
            yield RayBatchResult(int(k), *(_from_ipc(rows[r][i]) for r in ROLES), int(rows["n_units"][i]),
                                 json.loads(rows["info"][i]))


def check_pipeline(pipeline: str | None) -> None:
    """Fail on the driver, with the loader's own message, when ``pipeline`` is not installed."""
    from ..pipeline.parse import check_available

    check_available(pipeline)


def signature_of(info: dict[str, Any], settings: Settings, cols: SegmentColumns, *, n_actors: int,
                 n_batches: int, input_name: str | None) -> dict[str, Any]:
    """The run signature (:func:`ddpcore.signature.run_signature`) plus ``engine`` and ``actors``;
    a file run (``input_name``) also records ``input``, ``batches`` and ``n_process`` (= actors)."""
    run = {"input": input_name, "batches": n_batches, "n_process": n_actors} if input_name is not None else None
    return run_signature(info, settings, cols, head_nouns=head_noun_source(info), run=run,
                         extra={"engine": "ray", "actors": n_actors})


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
    Returns ``(segments, anchors, sentences, signature)`` exactly as the local
    :func:`~ddpcore.api.profile_anchors` builds them (segments in input order without
    ``ROW``, anchors and sentences in document order), the signature with ``engine``/``actors``.
    """
    import polars as pl

    from .local import batches_from_frame

    check_pipeline(pipeline)
    ordered = order_segments(df, cols)
    with ray_session(address) as ray:
        n = resolve_actors(n_actors, ray)
        chars = batch_chars or auto_batch_chars(int(ordered[cols.text].str.len_chars().sum()), n)
        batches = list(batches_from_frame(ordered, cols, chars))
        results = sorted(run_batches(ray, ((k, b.frame) for k, b in enumerate(batches)), cols=cols,
                                     settings=settings, pipeline=pipeline, n_actors=n, batch_size=batch_size,
                                     source_name=source_name), key=lambda r: r.k)
    segments = pl.concat([r.segments for r in results]).sort(ROW).drop(ROW)
    anchors = pl.concat([r.anchors for r in results])
    sentences = pl.concat([r.sentences for r in results])
    sig = signature_of(results[0].info, settings, cols, n_actors=min(n, len(batches)), n_batches=len(batches),
                       input_name=None)
    return segments, anchors, sentences, sig


def _plan_batches(ids: pl.DataFrame, cols: SegmentColumns, batch_chars: int) -> pl.DataFrame:
    """The id index ordered (documents by first appearance, segments by id) with batch numbers."""
    import polars as pl

    from ..io.sources import CHARS

    ordered = order_segments(ids, cols)
    batch = document_batches(ordered[DOC].to_numpy().astype(np.int64), ordered[CHARS].to_numpy(), batch_chars)
    return ordered.with_columns(pl.Series(BATCH, batch))


def _staged_batches(staged: Any, plan: pl.DataFrame) -> Iterator[tuple[int, pl.DataFrame]]:
    """``(k, frame)`` of every planned batch, its rows read back from the staged chunks."""
    import polars as pl

    batch_of = plan[BATCH].to_numpy()
    bounds = np.searchsorted(batch_of, np.arange(int(batch_of[-1]) + 2))
    for k in range(int(batch_of[-1]) + 1):  # one iteration per batch
        sel = plan.slice(int(bounds[k]), int(bounds[k + 1] - bounds[k]))
        rows = np.sort(sel[ROW].to_numpy().astype(np.int64))
        keyed = (
            staged.read_rows(rows).with_columns(pl.col(ROW).cast(pl.UInt32))
            .join(sel.select(pl.col(ROW).cast(pl.UInt32), DOC, SEGKEY), on=ROW, how="left")
            .sort([DOC, SEGKEY, ROW])
        )
        yield k, keyed.with_columns((pl.col(DOC) - pl.col(DOC).min()).alias(DOC)).drop(SEGKEY)


class RayEngine:
    """The Ray engine (``--engine ray``): the stages on Ray actors (:func:`profile_ray`)."""

    name = "ray"

    def check(self, options: RunOptions) -> None:
        """D193 for the local engine's ``resume``/``shard``; D190 (before the input is read) when Ray is missing."""
        for flag, used in (("--resume", options.resume), ("--shard", options.shard is not None)):
            if used:
                raise DDPUsageError(f"{flag} is for the local engine; --engine ray cannot use it (Ray spreads the "
                                    "work itself and a failed Ray run starts over)", code="D193")
        import_ray()

    def run(self, source: Any, targets: Mapping[str, OutputTarget | None], options: RunOptions) -> RunReport:
        """Profile ``source`` into ``targets`` on Ray actors (``options.n_process`` actors; the
        parse cache, ``start_method`` and ``signature_extra`` are the local engine's)."""
        return _profile_ray_run(source, dict(targets), options)


def profile_ray(
    source: Any,
    targets: dict[str, OutputTarget | None],
    *,
    cols: SegmentColumns,
    settings: Settings,
    pipeline: str | None = None,
    n_actors: int | str = "auto",
    address: str | None = None,
    batch_chars: int | None = None,
    batch_size: int = 256,
    progress: str = "none",
    summary_by: str | None = None,
    source_name: str | None = None,
    reader_options: dict[str, Any] | None = None,
    quiet: bool = False,
) -> RunReport:
    """``ddp profile --engine ray``: profile ``source`` on Ray actors into the output ``targets``
    (roles ``segments``, ``anchors``, ``sentences``, ``documents``, as for
    :func:`~ddpcore.engines.run.profile_to_files`), with the same rows, order and values as the
    local engine.

    ``n_actors``: actors, each loading the pipeline once (``"auto"``: the cluster's CPUs).
    ``address``: Ray cluster to join (default ``$RAY_ADDRESS``; none: a local Ray on the
    available cores). ``batch_chars``: characters per batch of whole documents (default:
    about four batches per actor, see :func:`auto_batch_chars`). ``progress``: ``bar``,
    ``plain`` or ``none`` (advances as batches finish). ``reader_options``: ``reader``,
    ``docs``, ``txt_mode``, ``warn`` of the input reader. The input is staged in a temporary
    work folder beside the segment output, removed at the end (no ``--resume``), also when
    this process is killed (a :class:`Reaper` watches it); work folders of killed runs whose
    watchdog died too are removed by the next run in the same folder (a note says so).
    ``quiet``: nothing of Ray on stderr. SIGINT and SIGTERM stop the run and shut Ray down:
    :class:`~ddpcore.engines.base.RunInterrupted` (exit 130 / 143 on the command line).
    """
    options = RunOptions(cols=cols, settings=settings, pipeline=pipeline, n_process=n_actors, address=address,
                         batch_chars=batch_chars, batch_size=batch_size, progress=progress, summary_by=summary_by,
                         source_name=source_name, quiet=quiet, **(reader_options or {}))
    return _profile_ray_run(source, targets, options)


def _profile_ray_run(source: Any, targets: dict[str, OutputTarget | None], o: RunOptions) -> RunReport:
    """:func:`profile_ray` with its :class:`~ddpcore.engines.base.RunOptions`."""
    from ..io.outputs import OutputSet
    from ..io.sinks import write_part
    from .run import COMMIT_JOURNAL, Progress, _assemble, _signals_raise, _Stop
    from ..io.sources import CHARS, stage_input, write_json_atomic

    cols, settings, pipeline, address = o.cols, o.settings, o.pipeline, o.address
    name = o.name_of(source)
    check_pipeline(pipeline)
    seg_target = targets["segments"]
    parent = Path(seg_target.path).parent if seg_target is not None and seg_target.path is not None else None
    notes = []
    stale = remove_stale_work(Path(parent) if parent is not None else Path(tempfile.gettempdir()))
    if stale:
        notes.append(f"removed {len(stale)} work folder(s) left by killed Ray run(s): {', '.join(stale)}")
    report_progress: Progress | None = None
    stop: _Stop | None = None
    reaper: Reaper | None = None
    work: Path | None = None
    outs: OutputSet | None = None
    with _signals_raise():
        try:
            from .ray_reaper import owner_token

            work = Path(tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{os.getpid()}-", dir=parent))
            (work / "owner").write_text(owner_token() + "\n")
            outs = OutputSet(work / COMMIT_JOURNAL)
            # the watchdog ends the local Ray and removes the work folder if this process is killed
            reaper = Reaper(work) if not (address or os.environ.get("RAY_ADDRESS")) else None
            staged = stage_input(source, cols, work, name=name, reader=o.reader, docs=o.docs, txt_mode=o.txt_mode,
                                 warn=o.warn)
            if o.summary_by is not None and o.summary_by not in staged.schema:
                raise DDPUsageError(f"--summary-by {o.summary_by}: no such column in {name}; available columns: "
                                    f"{', '.join(staged.schema)}", code="D137")
            with ray_session(address, quiet=o.quiet, reaper=reaper, own_signals=True) as ray:
                n = resolve_actors(o.n_process, ray)
                chars = o.batch_chars or auto_batch_chars(int(staged.ids[CHARS].sum()), n)
                plan = _plan_batches(staged.ids, cols, chars)
                n_batches = int(plan[BATCH].max()) + 1
                seg_per_batch = np.bincount(plan[BATCH].to_numpy(), minlength=n_batches)
                parts = work / "parts"
                parts.mkdir()
                report_progress = Progress(o.progress, plan.height)
                info: dict[str, Any] = {}
                for res in run_batches(ray, _staged_batches(staged, plan), cols=cols, settings=settings,
                                       pipeline=pipeline, n_actors=n, batch_size=o.batch_size, source_name=name):
                    for role, df in zip(ROLES, (res.segments, res.anchors, res.sentences)):
                        write_part(parts / f"{res.k:06d}.{role}.parquet", df)
                    rows = res.segments[ROW]
                    words = int(res.segments[schema.N_TOKENS].sum())
                    write_json_atomic(parts / f"{res.k:06d}.done", {
                        "segments": res.segments.height, "anchors": res.anchors.height,
                        "min_row": int(rows.min()), "max_row": int(rows.max()), "words": words})
                    info = info or res.info
                    report_progress.advance(float(seg_per_batch[res.k]))
                    report_progress.add_words(words)
                report_progress.close()
                report_progress = None
            signature = signature_of(info, settings, cols, n_actors=min(n, n_batches), n_batches=n_batches,
                                     input_name=name)
            summary, n_anchors = _assemble(parts, n_batches, targets, signature, plan.height, o.summary_by, cols,
                                           outs.temp)
            outs.commit()  # every output in place together, or none (D761)
        except _Stop as exc:
            stop = exc
        finally:
            if outs is not None:
                outs.discard()  # temporaries of outputs not put in place
            if report_progress is not None:
                report_progress.close()
            if work is not None:
                shutil.rmtree(work, ignore_errors=True)
            if reaper is not None:
                reaper.close()
    if stop is not None:
        import signal

        what = "SIGTERM" if stop.signum == signal.SIGTERM else "interrupted (SIGINT)"
        if outs is not None and outs.committed:  # the signal was held back while the outputs were put in place
            raise RunInterrupted(stop.signum, f"{what} while the outputs were put in place: stopped after writing "
                                 f"all of them completely ({', '.join(map(str, outs.destinations))})")
        raise RunInterrupted(stop.signum, f"{what}: stopped the Ray run; no output was written (a Ray run cannot "
                                          "be resumed: run the command again)")
    return RunReport(signature=signature, summary_frame=summary, n_segments=plan.height, n_anchors=n_anchors,
                     n_batches=n_batches, notes=notes)


def engine_arg(engine: str) -> str:
    """Validate an ``engine`` argument (``"local"`` or ``"ray"``)."""
    if engine not in ("local", "ray"):
        raise DDPUsageError(f"engine must be 'local' or 'ray', not {engine!r}", code="D192")
    return engine


__all__ = ["ProfileActor", "RayEngine", "auto_batch_chars", "engine_arg", "import_ray", "profile_frame_ray", "profile_ray",
           "ray_session", "resolve_actors", "run_batches"]
