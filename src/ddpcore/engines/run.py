"""Corpus-scale profiling to files: bounded memory, a journal, resume, clean interruption.

:func:`profile_to_files` is what ``ddp profile`` runs. It keeps a *work folder* beside the
segment output (``.<output>.ddp-work/``)::

    journal.json          settings, input fingerprint, pipeline info (what --resume checks)
    staged/               the input as Parquet chunks (not for a Parquet input: read in place)
    ids.parquet           the compact id index (:mod:`ddpcore.io.id_index`: 28 bytes a segment)
    parts/NNNNNN.*.parquet  the three tables of each finished batch, then NNNNNN.done

Memory holds the batch plan (:mod:`ddpcore.engines.batch_plan`: about 40 bytes per run of
consecutive rows of one document), one batch and one assembly range at a time, never the
input's ids, texts or token arrays; what grows with the corpus is the summary frame (16 bytes
a segment). When every batch is done the outputs are assembled from the parts
(:mod:`ddpcore.engines.assembly`: segments in input order, anchors and sentences in document
order), written to temporary files and renamed together, and the work folder is removed. After a crash or
SIGKILL the same command with ``--resume`` picks up after the last finished batch and
writes the same outputs as an uninterrupted run.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._version import __version__
from .. import schema
from ..schema import INVISIBLE_EDGES, NORMALISED_TEXT, invisible_edges_note, normalised_text_note
from ..errors import DDPError, DDPUsageError, write_failure_errno
from ..io.segments import ROW, SegmentColumns
from ..io.sinks import Sink, write_part  # noqa: F401 (Sink: re-exported for callers of the engine)
from ..signature import run_signature
from .assembly import ASSEMBLE_ROWS, ROLES, SHARD_DOC_ROW, SHARD_ROW, assemble_outputs  # noqa: F401 (re-exported)
from .base import RunInterrupted, RunOptions, RunReport, stop_signals, warner
from .batch_plan import BatchPlan, plan_batches
from .journal import check_same_pipeline, compare_settings, journal_settings, pipeline_identity
from ..pipeline import stage_times
from .local import BATCH_CHARS, DOC, SEGKEY, Settings, iter_profile, segment_keys
from ..pipeline.extract import head_noun_source
from ..pipeline.parse import Parser, end_processes
from ..io.sources import StagedInput, identity_files, input_fingerprint, resolve_docs, stage_input, write_json_atomic
from ..pipeline.stages import Batch

if TYPE_CHECKING:
    import polars as pl

    from ..io.outputs import OutputTarget

#: 2: the compact id index (``ids.parquet`` of :mod:`ddpcore.io.id_index`, described in ``staged.index``)
JOURNAL_VERSION = 2
#: below this many characters of text ``-j auto`` uses one process, by how workers start.
#: Measured on 2 quiet cores (``benchmarks/scale_table.py`` part d, LitBank, no cache, median of 3):
#: spawned workers (each imports spaCy and loads the pipeline): -j 2 vs -j 1 was 0.83x at 50 k
#: characters, 1.11x at 100 k, 1.67x at 200 k, break-even near 75 k, so 150 k keeps a margin;
#: forked workers (the pipeline loaded once, small first chunks): 1.19x at 25 k, 1.34x at 50 k,
#: 1.40x at 75 k, 1.52x at 100 k, 1.57x at 150 k: -j 2 already wins at 25 k; 50 k keeps a margin
AUTO_MIN_CHARS: dict[str, int] = {"fork": 50_000, "spawn": 150_000}
#: with -j N > 1 and no parse cache, start the workers before the input is staged (spawn: the
#: worker processes; fork: the pipeline loads in a background thread), so the start-up overlaps
#: the staging. Off: it bought nothing measurable (``benchmarks/startup_table.py``, 150 k words
#: of LitBank on 2 quiet cores: 32.4 s with fork, 31.0 s without; staging takes well under a
#: second). With a cache a re-run may parse nothing, so it never applies there.
START_WORKERS_EARLY = False


#: signature key of a shard's input content (SHA-256), compared by ``ddp merge``
INPUT_DIGEST = "input_sha256"


def input_digest(source: str | os.PathLike[str], docs: str | os.PathLike[str] | None = None) -> str:
    """SHA-256 of the input's bytes (a folder: of its ``.txt`` files, names, sizes and contents, in
    name order; with ``docs``, of the ``.docs`` file too). Shards of one job array may run on machines
    whose copies differ in modification time, so the content is what identifies the input."""
    import hashlib

    h = hashlib.sha256()
    p = Path(source)
    files = sorted(f for f in p.iterdir() if f.suffix.lower() == ".txt") if p.is_dir() else [p]
    if docs is not None:
        files.append(Path(docs))
    several = p.is_dir() or len(files) > 1  # one file: the plain SHA-256 of its bytes (sha256sum)
    try:
        for f in files:
            if several:
                h.update(f.name.encode("utf-8") + b"\0" + str(f.stat().st_size).encode() + b"\0")
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
    except OSError as exc:
        from ..errors import DDPDataError

        raise DDPDataError(f"{exc.filename or p}: cannot read ({exc.strerror})", code="D102") from None
    return h.hexdigest()


# ----------------------------------------------------------------------------- helpers


def available_cores() -> int:
    """CPU cores this process may run on (CPU affinity where the OS has it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


def resolve_n_process(n_process: int | str, total_chars: int, start_method: str | None = None) -> int:
    """``"auto"``: every available core when the input has at least :data:`AUTO_MIN_CHARS` characters
    for the workers' start method (``start_method``, else ``$DDPCORE_START_METHOD``, else the
    platform's: fork on Linux), else 1; an integer is taken as given (≥ 1)."""
    if n_process == "auto":
        from ..pipeline.parse import resolve_start_method

        cores = available_cores()
        return cores if (cores > 1 and total_chars >= AUTO_MIN_CHARS[resolve_start_method(start_method)]) else 1
    n = int(n_process)
    if n < 1:
        raise DDPUsageError("-j/--n-process must be 'auto' or at least 1", code="D207")
    return n


def work_dir_for(target: Path) -> Path:
    """The work folder of a run whose segment output is ``target``."""
    return target.parent / f".{target.name}.ddp-work"


def shard_of_documents(documents: pl.Series, n_shards: int) -> np.ndarray:
    """Shard (0..n_shards-1) of each document id: CRC-32 of its text form, modulo ``n_shards``
    (stable across processes, machines and versions). One hash per distinct document."""
    import zlib

    uniq = documents.cast(pl_string()).unique(maintain_order=True)
    codes = np.fromiter((zlib.crc32(str(d).encode("utf-8")) for d in uniq.to_list()), dtype=np.uint64,
                        count=len(uniq))
    lookup = dict(zip(uniq.to_list(), (codes % np.uint64(n_shards)).astype(np.int64).tolist()))
    return documents.cast(pl_string()).replace_strict(lookup, return_dtype=pl_int64()).to_numpy()


def pl_string() -> Any:
    """``polars.String``, imported when first needed (keeps ``import ddpcore`` light)."""
    import polars as pl

    return pl.String


def pl_int64() -> Any:
    """``polars.Int64``, imported when first needed (keeps ``import ddpcore`` light)."""
    import polars as pl

    return pl.Int64


def _document_shards(staged: StagedInput, first_rows: np.ndarray, n_shards: int) -> np.ndarray:
    """Shard (:func:`shard_of_documents`) of the documents whose first input rows are ``first_rows``
    (sorted), their ids read from the staged input a slice at a time."""
    out = np.empty(len(first_rows), dtype=np.int64)
    step = 20_000
    for a in range(0, len(first_rows), step):  # one iteration per slice of documents
        ids = staged.read_rows(first_rows[a:a + step])[staged.cols.document]
        out[a:a + step] = shard_of_documents(ids, n_shards)
    return out


def _batch_frames(staged: StagedInput, plan: BatchPlan, todo: Sequence[int]) -> Iterator[Batch]:
    """The batches ``todo`` of ``plan``: their rows read back from the staged input, ordered by
    document (first appearance), segment key (:func:`ddpcore.engines.local.segment_keys` over the
    whole input) and input row, ``DOC`` numbered from 0 in each batch. D855 if two documents of a
    batch share their id-index key."""
    import polars as pl

    from ..io.id_index import document_key_collision

    cols = staged.cols
    all_ints = staged.index.segment_ints if staged.index is not None else None
    for k in todo:
        rows, docs = plan.batch_rows(k)
        by_row = np.argsort(rows, kind="stable")
        frame = staged.read_rows(rows[by_row])  # ascending input rows
        keyed = frame.with_columns(pl.col(ROW).cast(pl.UInt32), pl.Series(DOC, docs[by_row]))
        keyed = keyed.with_columns(segment_keys(keyed, cols, all_ints).alias(SEGKEY)).sort([DOC, SEGKEY, ROW])
        ids = keyed[cols.document]
        new_id = ids.ne_missing(ids.shift(1)).fill_null(True).to_numpy()
        d = keyed[DOC].to_numpy()
        new_doc = np.r_[True, d[1:] != d[:-1]]
        if not np.array_equal(new_id, new_doc):
            at = int(np.flatnonzero(new_id != new_doc)[0])
            raise document_key_collision(staged.name, cols, ids[at - 1], ids[at])
        batch = Batch(keyed.drop(SEGKEY), cols)
        # nothing of this batch but the Batch itself stays referenced while the consumer works on it,
        # and nothing at all while the next batch is read (the second batch's peak is the first's)
        del rows, docs, by_row, frame, keyed, ids, new_id, d, new_doc
        yield batch
        del batch


# ------------------------------------------------------------------------------- progress


class Progress:
    """Progress on stderr: ``bar`` (tqdm: segments/s, words/s, ETA), ``plain`` (one line every
    ``interval`` seconds, for logs and CI) or ``none``."""

    def __init__(self, mode: str, total_segments: int, *, done_segments: int = 0, interval: float = 5.0) -> None:
        self.mode = mode
        self.total = total_segments
        self.done = float(done_segments)
        self.words = 0
        self.start = time.monotonic()
        self.start_done = done_segments
        self.interval = interval
        self._last = 0.0
        self._bar: Any = None
        if mode == "bar":
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total_segments, initial=done_segments, unit="seg", desc="profile",
                             dynamic_ncols=True, mininterval=0.5, leave=False)

    def advance(self, segments: float) -> None:
        self.done += segments
        if self._bar is not None:
            self._bar.update(segments)
        elif self.mode == "plain":
            now = time.monotonic()
            if now - self._last >= self.interval:
                self._last = now
                print(self.line(), file=sys.stderr, flush=True)

    def add_words(self, n: int) -> None:
        self.words += n
        if self._bar is not None:
            el = max(time.monotonic() - self.start, 1e-9)
            self._bar.set_postfix_str(f"{self.words / el:,.0f} words/s", refresh=False)

    def line(self) -> str:
        el = max(time.monotonic() - self.start, 1e-9)
        rate = (self.done - self.start_done) / el
        left = max(self.total - self.done, 0.0)
        eta = time.strftime("%H:%M:%S", time.gmtime(left / rate)) if rate > 0 else "?"
        pct = 100.0 * self.done / max(self.total, 1)
        return (f"profile: {int(self.done):,}/{self.total:,} segments ({pct:.1f} %), {rate:,.0f} segments/s, "
                f"{self.words / el:,.0f} words/s, ETA {eta}")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self.mode == "plain":
            print(self.line(), file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------ signals


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM (and SIGINT) raise :class:`_Stop` in the main thread while the run is on."""
    def handler(signum: int, frame: Any) -> None:
        raise _Stop(signum)

    with stop_signals(handler):
        yield


def threading_main() -> bool:
    """Whether the caller runs on the main thread (only there can signal handlers be installed)."""
    import threading

    return threading.current_thread() is threading.main_thread()


class _Stop(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


# ------------------------------------------------------------------------------ the lock

#: name of the commit journal in the work folder (:class:`ddpcore.io.outputs.OutputSet`)
COMMIT_JOURNAL = "commit.json"


def lock_path_for(target: Path) -> Path:
    """The lock of a run whose segment output is ``target``: ``.<name>.ddp-lock`` beside it."""
    return target.parent / f".{target.name}.ddp-lock"


def _proc_start(pid: int) -> str | None:
    """Start time of process ``pid`` (clock ticks since boot, /proc), ``"Z"`` for a zombie, None if unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return "Z" if fields[0] == "Z" else fields[19]


def _holder_alive(info: dict[str, Any]) -> bool:
    """Whether the process that wrote a lock still runs (a dead one, or a reused pid, holds nothing)."""
    import socket

    if info.get("host") != socket.gethostname():
        return True  # another machine's run (shared file system): cannot be checked from here
    pid = int(info.get("pid", -1))
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    start = _proc_start(pid)
    if start == "Z":
        return False
    return not (start is not None and info.get("start") is not None and start != info["start"])


class RunLock:
    """``.<output>.ddp-lock``: one ddp run at a time per segment output.

    Created with O_EXCL and holding the pid, host and process start time of its run; a lock whose
    process is gone (or whose pid now names another process) is stale and is taken over. A live
    holder is refused with D762."""

    def __init__(self, target: Path) -> None:
        self.path = lock_path_for(target)
        self.target = target
        self.owned = False

    def acquire(self) -> None:
        import socket

        me = {"pid": os.getpid(), "host": socket.gethostname(), "start": _proc_start(os.getpid())}
        # enough rounds for a damaged lock, waited on 0.2 s a round, to reach the age (5 s) at which it is stale
        for _ in range(40):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except PermissionError as exc:  # the access check passed, the file system still refused (root-squash, /sys)
                raise DDPUsageError(f"-o {self.target}: cannot create files in {self.target.parent} "
                                    f"({exc.strerror or exc}); choose a folder you can write to", code="D131") from None
            except FileExistsError:
                try:
                    info = json.loads(self.path.read_text(encoding="utf-8"))
                except FileNotFoundError:
                    continue
                except (OSError, ValueError):
                    # being written this instant, or damaged: damaged only once it is a few seconds old
                    try:
                        young = time.time() - self.path.stat().st_mtime < 5.0
                    except FileNotFoundError:
                        continue
                    if young:
                        time.sleep(0.2)
                        continue
                    info = {}
                if isinstance(info, dict) and info and _holder_alive(info):
                    where = "" if info.get("host") == me["host"] else f" on {info.get('host')}"
                    raise DDPUsageError(
                        f"another ddp run is writing {self.target} (pid {info.get('pid')}{where}); wait for it to finish "
                        f"or choose another -o (if no such run is alive, delete {self.path})", code="D762") from None
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)  # stale: its process is gone
                continue
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(me, fh)
            except BaseException:  # a full disk: no empty lock left behind to block the next run
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
                raise
            self.owned = True
            return
        raise DDPUsageError(f"could not take the lock {self.path} of {self.target} (other runs keep taking it, or it "
                            "is damaged and dated in the future); wait for them to finish or choose another -o (if no "
                            f"ddp run is writing {self.target}, delete {self.path})", code="D762")

    def release(self) -> None:
        if not self.owned:
            return
        self.owned = False
        try:
            if json.loads(self.path.read_text(encoding="utf-8")).get("pid") == os.getpid():
                os.unlink(self.path)
        except (OSError, ValueError):
            pass


# ---------------------------------------------------------------------------- the run


class LocalEngine:
    """The local engine (``--engine local``): :func:`profile_to_files` on this machine."""

    name = "local"

    def check(self, options: RunOptions) -> None:
        """Every option applies locally; nothing to refuse."""

    def run(self, source: Any, targets: Mapping[str, OutputTarget | None], options: RunOptions) -> RunReport:
        return profile_to_files(source, dict(targets), options)


def profile_to_files(source: Any, targets: dict[str, OutputTarget], options: RunOptions | None = None,
                     **fields: Any) -> RunReport:
    """Profile ``source`` into the output ``targets`` (roles ``segments``, ``anchors``,
    ``sentences``, ``documents``; checked with :func:`ddpcore.io.outputs.check_outputs`) in bounded
    memory, holding the segment output's :class:`RunLock` (D762 while another live run holds it).

    ``options`` (:class:`~ddpcore.engines.base.RunOptions`), or its fields as keywords
    (``cols=``, ``settings=``, ``n_process=``, ``resume=``, ``shard=``...). ``resume``: continue an
    interrupted run of the same settings (refused, D170, if they differ). ``parse_wrapper(parser)``
    returns the parse function to use (the parse cache). ``shard=(i, N)`` profiles only the
    documents hashed to shard ``i`` of ``N`` (:func:`shard_of_documents`); its Parquet outputs keep
    ``input_row`` (segments) and ``document_first_row`` (anchors, sentences, documents) so that
    :func:`ddpcore.engines.merge.merge_shards` can rebuild the unsharded outputs. The reader
    (``reader``/``docs``/``txt_mode``) is recorded in the journal and, when not the default, in the
    signature as ``reader``. A ``documents`` target gets one row per document
    (:mod:`ddpcore.pipeline.documents`). Raises :class:`RunInterrupted` on SIGINT/SIGTERM after
    stopping the workers and removing temporary files (the journal stays for ``--resume``).
    """
    from dataclasses import replace

    opts = replace(options, **fields) if options is not None else RunOptions(**fields)
    if opts.batch_chars is None:
        opts = replace(opts, batch_chars=BATCH_CHARS)
    seg = targets["segments"]
    lock = RunLock(Path(seg.path)) if seg is not None and seg.path is not None else None
    if lock is not None:
        lock.acquire()
    try:
        return _profile_run(source, targets, opts)
    finally:
        if lock is not None:
            lock.release()


@dataclass
class _Live:
    """What a run holds open: the parser (its workers) and the progress display."""

    parser: Parser | None = None
    progress: Progress | None = None

    def close(self) -> None:
        """Stop the workers now (an interrupted or failed run) and close the progress display."""
        if self.parser is not None:
            _kill(self.parser)
            self.parser = None
        if self.progress is not None:
            self.progress.close()
            self.progress = None


@dataclass
class _Plan:
    """The batches of a run: ``plan`` (:func:`ddpcore.engines.batch_plan.plan_batches`), the batches
    finished by an interrupted run (``done``) and the ones to profile (``todo``), and the resolved
    number of parse processes."""

    plan: BatchPlan
    n_batches: int
    done: list[int]
    todo: list[int]
    n_proc: int
    done_segments: int


def _profile_run(source: Any, targets: dict[str, OutputTarget], o: RunOptions) -> RunReport:
    """The run behind :func:`profile_to_files`: the journal step (:func:`_open_work`), the plan
    step (:func:`_stage`, :func:`_plan_batches`), the loop (:func:`_profile_batches`) and the
    assembly (:func:`_assemble`), then the interruption report."""
    import polars as pl

    from ..io.outputs import OutputSet

    say = _sayer(o.warn)
    name = o.name_of(source)
    notes: list[str] = _abandoned_work_notes()
    work, tmp_root = _work_folder(targets["segments"], o.resume, say)
    docs_path, extra = _run_extra(source, targets, o)
    jsettings = _journal_settings(source, o, docs_path, extra, resumable=tmp_root is None)
    journal = _open_journal(work, tmp_root is not None, jsettings, o.resume, say, notes)
    parts = work / "parts"
    stop: _Stop | None = None
    outs = OutputSet(work / COMMIT_JOURNAL)
    live = _Live()
    assembling = False  # writing the outputs (not the work folder)
    try:
        with _signals_raise():
            if (START_WORKERS_EARLY and o.parse_wrapper is None and not o.resume and o.n_process != "auto"
                    and resolve_n_process(o.n_process, 0) > 1):
                # -j N without a parse cache (every line gets parsed): the workers start (or the pipeline
                # loads, to fork them) while the input is staged. With a cache they start at the first miss.
                live.parser = Parser(o.pipeline, n_process=int(o.n_process), batch_size=o.batch_size,
                                     start_method=o.start_method)
                live.parser.start()
            staged = _stage(source, o, work, journal, docs_path, name, say)
            _check_nested_columns(staged.schema, targets, o, name)
            replaced = _note_replaced_columns(staged.schema, o, name, say)
            replaced.update(_note_invisible_edges(staged.invisible_edges, o, name, say,
                                                  normalised=staged.normalised_text))
            run_plan = _plan_batches(staged, o, work, journal, notes, say)
            info, parse_sig = _profile_batches(staged, run_plan, o, work, journal, live, name)
            signature = run_signature(info, o.settings, o.cols, head_nouns=head_noun_source(info),
                                      run={"input": name, "batches": run_plan.n_batches, "n_process": run_plan.n_proc},
                                      extra={**extra, **replaced, **parse_sig}, warn=say)
            assembling = True
            with stage_times.stage("write"):
                summary, n_anchors = assemble_outputs(parts, run_plan.n_batches, dict(targets), signature,
                                                      staged.n_rows, o.summary_by, o.cols, outs.temp,
                                                      shard_keys=o.shard is not None)
                outs.commit()  # every output in place together, or none (D761)
    except _Stop as exc:
        stop = exc
    except DDPError as exc:
        if exc.code == "D170":  # another pipeline on --resume: the interrupted run's batches stay for it
            raise
        if exc.code == "D761" and assembling and tmp_root is None:
            raise _outputs_not_placed(exc, parts, work, o.resume_hint) from None
        # bad data or options: nothing to resume; leave no work folder behind
        if tmp_root is None:
            shutil.rmtree(work, ignore_errors=True)
        raise
    except Exception as exc:
        number = write_failure_errno(exc)
        if number is None and type(exc).__module__.startswith("polars"):
            number = _probe_write(parts if parts.exists() else work)  # polars' writer may say only "Invalid thrift"
        if number is None:
            raise
        # a full disk or quota, a read-only or failing device: the finished batches stay for --resume
        raise _write_failed(exc, number, targets, parts, work, tmp_root is not None, o.resume_hint,
                            assembling) from None
    finally:
        outs.discard()  # temporaries of outputs not put in place
        live.close()
        if tmp_root is not None:
            shutil.rmtree(tmp_root, ignore_errors=True)
    if stop is not None:
        raise _interrupted(stop, outs, parts, work, tmp_root is not None, o.resume_hint)
    if tmp_root is None:
        shutil.rmtree(work, ignore_errors=True)
    return RunReport(signature=signature, summary_frame=None, summary=summary, n_segments=run_plan.plan.n_segments,
                     n_anchors=n_anchors, n_batches=run_plan.n_batches, resumed_batches=len(run_plan.done),
                     notes=notes)


_sayer = warner  # ``warn``, or a ``ddp profile: warning:`` line on stderr


# ------------------------------------------------------------------------- the journal step


def _work_folder(seg_target: OutputTarget, resume: bool, say: Callable[[str], None]) -> tuple[Path, str | None]:
    """The work folder (``.<output>.ddp-work`` beside the segment output, after finishing an
    interrupted commit there), or a temporary folder (second value) when the segments go to stdout."""
    from ..io.outputs import recover_commit

    if seg_target.path is not None:
        # absolute, so that --resume from another working folder finds the same work folder and chunks
        work = work_dir_for(Path(os.path.abspath(seg_target.path)))
        placed = recover_commit(work / COMMIT_JOURNAL)
        if placed:
            say(f"an earlier run was stopped while putting its outputs in place; finished that, so "
                f"{', '.join(map(str, placed))} now hold(s) that run's complete new output")
        return work, None
    if resume:
        raise DDPUsageError("--resume needs the segment table written to a file (-o PATH), not to stdout",
                            code="D171")
    tmp_root = tempfile.mkdtemp(prefix=TEMP_WORK_PREFIX)
    write_json_atomic(Path(tmp_root) / TEMP_WORK_OWNER, _owner())  # what a later run checks before removing it
    return Path(tmp_root), tmp_root


#: prefix of the temporary work folder (in the system's temporary folder) of a run whose segments go to stdout
TEMP_WORK_PREFIX = "ddp-work-"
#: the file naming the run (pid, host, process start time) that owns such a folder
TEMP_WORK_OWNER = "owner.json"
#: a temporary work folder whose run is gone is removed by a later run once nothing in it changed for this long
#: (seconds): a second guard, after the owner check, against a live run the owner check cannot see (another PID
#: namespace sharing the temporary folder under the same host name)
STALE_WORK_SECONDS = 600.0


def _owner() -> dict[str, Any]:
    import socket

    return {"pid": os.getpid(), "host": socket.gethostname(), "start": _proc_start(os.getpid())}


def _newest_change(folder: Path) -> float:
    """Latest modification time of ``folder`` and of the folders in it (a file written or renamed in
    ``parts/`` or ``staged/`` changes that folder's time)."""
    newest = folder.stat().st_mtime
    with os.scandir(folder) as entries:
        for e in entries:  # one iteration per entry of the work folder (a handful)
            with contextlib.suppress(OSError):
                if e.is_dir(follow_symlinks=False):
                    newest = max(newest, e.stat(follow_symlinks=False).st_mtime)
    return newest


def remove_abandoned_work(folder: str | os.PathLike[str] | None = None, *,
                          min_age: float = STALE_WORK_SECONDS) -> list[Path]:
    """Remove the temporary work folders of ``-o -`` runs killed with SIGKILL (no handler removes them) from
    ``folder`` (default: the system's temporary folder); returns them. Removed only when provably abandoned:
    this user's, its owner file names a process of this host that no longer runs (or whose pid now names
    another process), and nothing in it changed for ``min_age`` seconds. A folder without a readable owner file
    (a run creating it, or an older ddpcore's) is left alone."""
    import socket

    base = Path(folder if folder is not None else tempfile.gettempdir())
    host, uid, now = socket.gethostname(), os.getuid() if hasattr(os, "getuid") else None, time.time()
    removed: list[Path] = []
    try:
        entries = [e for e in os.scandir(base) if e.name.startswith(TEMP_WORK_PREFIX)]
    except OSError:
        return removed
    for e in entries:  # one iteration per ddp-work-* folder in the temporary folder
        try:
            if not e.is_dir(follow_symlinks=False) or (uid is not None and e.stat().st_uid != uid):
                continue
            info = json.loads((Path(e.path) / TEMP_WORK_OWNER).read_text(encoding="utf-8"))
            if not isinstance(info, dict) or info.get("host") != host or _holder_alive(info):
                continue
            if now - _newest_change(Path(e.path)) < min_age:
                continue
        except (OSError, ValueError, TypeError):
            continue
        shutil.rmtree(e.path, ignore_errors=True)
        if not os.path.exists(e.path):
            removed.append(Path(e.path))
    return removed


def _run_extra(source: Any, targets: dict[str, OutputTarget], o: RunOptions
               ) -> tuple[Path | None, dict[str, Any]]:
    """The ``.docs`` file of the reader and the signature keys of this run's options: ``signature_extra``,
    ``reader`` (when not the default), ``shard`` and ``input_sha256`` (shard runs; D173 checks)."""
    docs_path = resolve_docs(source, o.reader, o.docs)
    extra = dict(o.signature_extra or {})
    if o.reader != "table" or o.txt_mode != "lines":
        extra["reader"] = {"name": o.reader, "docs": None if docs_path is None else str(docs_path),
                           "txt_mode": o.txt_mode}
    if o.shard is not None:
        i, n = o.shard
        if not (0 <= i < n):
            raise DDPUsageError(f"--shard {i}/{n}: expected i/N with 0 <= i < N", code="D173")
        bad = [t.option for t in targets.values() if t is not None and t.format != "parquet"]
        if bad:
            raise DDPUsageError(f"--shard writes Parquet shards for `ddp merge`; give {bad[0]} a .parquet name",
                                code="D173")
        extra["shard"] = f"{i}/{n}"
        if isinstance(source, (str, os.PathLike)):  # ddp merge refuses shards of different inputs (D176)
            extra[INPUT_DIGEST] = input_digest(*identity_files(source, o.reader, o.docs))
    return docs_path, extra


def _open_journal(work: Path, temporary: bool, jsettings: dict[str, Any], resume: bool,
                  say: Callable[[str], None], notes: list[str]) -> dict[str, Any]:
    """The journal of this run: an interrupted run's (``resume``, settings compared: D170) or a new
    one; an earlier work folder not resumed is removed (a note says so). Creates ``work/parts``."""
    journal_path = work / "journal.json"
    journal: dict[str, Any] = {}
    if work.exists() and not temporary:
        if resume and journal_path.exists():
            old = _read_journal(journal_path)
            if old is None:
                say(f"--resume: the journal {journal_path} is empty or damaged, so the interrupted run's settings "
                    "cannot be checked; starting from the beginning")
                notes.append(f"--resume: the journal {journal_path} was empty or damaged; started from the beginning")
                shutil.rmtree(work, ignore_errors=True)
            else:
                compare_settings(old.get("settings", {}), jsettings, journal_path)
                journal = old
        else:
            if not resume:
                notes.append(f"removed the work folder of an earlier interrupted run ({work}); "
                             "use --resume to continue such a run")
            shutil.rmtree(work, ignore_errors=True)
    elif resume:
        notes.append("--resume: no interrupted run of this output found; starting from the beginning")
    (work / "parts").mkdir(parents=True, exist_ok=True)
    journal.setdefault("version", JOURNAL_VERSION)
    journal["settings"] = jsettings
    return journal


# ---------------------------------------------------------------------------- the plan step


def _stage(source: Any, o: RunOptions, work: Path, journal: dict[str, Any], docs_path: Path | None,
           name: str, say: Callable[[str], None]) -> StagedInput:
    """The staged input: the interrupted run's (:func:`_load_staged`), else the input staged into
    ``work`` now (id index, schema and chunk list recorded in the journal). D137: ``summary_by`` missing."""
    import polars as pl

    staged = _load_staged(journal, work, o.cols, name, say)
    if staged is None:
        with stage_times.stage("read"):
            # an absolute path in the chunks of a Parquet input (read in place): --resume from elsewhere
            src = Path(os.path.abspath(source)) if isinstance(source, (str, os.PathLike)) else source
            staged = stage_input(src, o.cols, work, name=name, reader=o.reader, docs=docs_path,
                                 txt_mode=o.txt_mode, warn=o.warn, index_path=work / "ids.parquet")
        assert staged.index is not None
        pl.DataFrame(schema=staged.schema).write_parquet(work / "schema.parquet")
        # the files staged in the work folder, with their checksums: --resume re-reads the input if one is damaged
        mine = [c.path for c in staged.chunks if c.row_group is None] + [str(work / "ids.parquet"),
                                                                          str(work / "schema.parquet")]
        journal["staged"] = {"chunks": [[c.path, c.row_start, c.row_stop, c.row_group] for c in staged.chunks],
                             "index": staged.index.to_json(), PART_DIGEST: {f: _file_digest(Path(f)) for f in mine},
                             INVISIBLE_EDGES: staged.invisible_edges, NORMALISED_TEXT: staged.normalised_text}
        write_json_atomic(work / "journal.json", journal)
    if o.summary_by is not None and o.summary_by not in staged.schema:
        raise DDPUsageError(
            f"--summary-by {o.summary_by}: no such column in {name}; available columns: "
            f"{', '.join(staged.schema)}", code="D137")
    return staged


def _note_replaced_columns(schema: Any, o: RunOptions, name: str, say: Callable[[str], None]) -> dict[str, Any]:
    """Say (stderr) which input columns the segment table replaces with this run's values (an input that
    is itself a profile: ``ddp``, ``ddp_certified``, ``n_sentences``, ...); returns the signature entry
    that records them (``{"replaced_columns": [...]}``, empty when none)."""
    from ..schema import REPLACED_COLUMNS, replaced_columns, replaced_note

    old = replaced_columns(schema, o.cols)
    if old:
        say(replaced_note(name, old))
    return {REPLACED_COLUMNS: old} if old else {}


def _note_invisible_edges(entry: dict[str, Any] | None, o: RunOptions, name: str,
                          say: Callable[[str], None], *, normalised: dict[str, Any] | None = None) -> dict[str, Any]:
    """Say (stderr) that segments have lines starting or ending with invisible characters, which the parse
    leaves out (:func:`ddpcore.pipeline.stages.split_units`), and (``normalised``) that segments are parsed in
    another form (:func:`ddpcore.pipeline.stages.view_units`); returns the signature entries that record them
    (``{"invisible_line_edges": {...}, "normalised_text": {...}}``, empty when none)."""
    out: dict[str, Any] = {}
    if entry:
        say(invisible_edges_note(name, entry, o.cols.text))
        out[INVISIBLE_EDGES] = entry
    if normalised:
        say(normalised_text_note(name, normalised, o.cols.text))
        out[NORMALISED_TEXT] = normalised
    return out


def _check_nested_columns(schema: Any, targets: dict[str, OutputTarget], o: RunOptions, name: str) -> None:
    """Before the parse: an input column of lists or structs cannot go where it would fail after it (D139:
    ``--summary-by`` on it; D140: a CSV/TSV segment output, which carries the input's columns and cannot
    hold nested values)."""
    nested = {c: dt for c, dt in schema.items() if dt.is_nested()}
    if not nested:
        return
    if o.summary_by in nested:
        raise DDPUsageError(f"--summary-by {o.summary_by}: the column holds {nested[o.summary_by]} values in {name}, "
                            "which cannot group a summary; choose a column of text or numbers", code="D139")
    seg = targets.get("segments")
    if seg is not None and seg.format in ("csv", "tsv"):
        cols = ", ".join(f"'{c}' ({dt})" for c, dt in nested.items())
        where = seg.path if seg.path is not None else "-"
        raise DDPUsageError(f"{seg.option} {where}: {name} has column(s) of lists or structs, {cols}, which the "
                            f"segment table carries and {seg.format.upper()} cannot hold; write .jsonl or .parquet, or "
                            "drop the column(s) from the input", code="D140")


def _plan_batches(staged: StagedInput, o: RunOptions, work: Path, journal: dict[str, Any], notes: list[str],
                  say: Callable[[str], None]) -> _Plan:
    """Cut the staged input into batches (:func:`ddpcore.engines.batch_plan.plan_batches`, shard
    applied), keep the batches an interrupted run finished whole (:func:`_finished_batches`) and
    resolve ``-j``."""
    assert staged.index is not None
    plan = plan_batches(staged.index, int(o.batch_chars or BATCH_CHARS), o.shard,
                        shard_of=lambda rows, n: _document_shards(staged, rows, n))
    n_batches = plan.n_batches
    if journal.get("n_batches") != n_batches:
        journal["n_batches"] = n_batches
        write_json_atomic(work / "journal.json", journal)
    done = _finished_batches(work / "parts", n_batches, say)
    done_set = set(done)
    todo = [k for k in range(n_batches) if k not in done_set]
    n_proc = resolve_n_process(o.n_process, staged.index.total_chars, o.start_method)
    done_segments = int(plan.seg_per_batch[done].sum()) if done else 0
    if done:
        notes.append(f"resuming: {len(done)} of {n_batches} batches ({done_segments:,} of {plan.n_segments:,} "
                     "segments) were finished by the interrupted run")
        print(f"ddp profile: {notes[-1]}", file=sys.stderr, flush=True)
    return _Plan(plan, n_batches, done, todo, n_proc, done_segments)


# -------------------------------------------------------------------------------- the loop


def _profile_batches(staged: StagedInput, rp: _Plan, o: RunOptions, work: Path, journal: dict[str, Any],
                     live: _Live, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Profile the batches ``rp.todo`` into ``work/parts`` (three Parquet parts and a ``.done``
    marker per batch, the journal's ``pipeline_info`` after the first). Returns the pipeline info
    and the parse function's signature keys (the parse cache's hits and misses)."""
    parts = work / "parts"
    journal_path = work / "journal.json"
    plan = rp.plan
    live.progress = prog = Progress(o.progress, plan.n_segments, done_segments=rp.done_segments)
    if live.parser is None:
        live.parser = Parser(o.pipeline, n_process=rp.n_proc, batch_size=o.batch_size, start_method=o.start_method)
    parser = live.parser
    parse_fn = o.parse_wrapper(parser) if o.parse_wrapper is not None else None
    batch_units = plan.seg_per_batch
    units_per_batch = plan.units_per_batch
    current = {"k": 0}
    todo = rp.todo

    def tick(n_units: int) -> None:
        k = current["k"]
        prog.advance(n_units * batch_units[k] / max(int(units_per_batch[k]), 1))

    live_words: dict[int, int] = {}  # batch -> tokens the parser reported while parsing it

    def words(n_tokens: int) -> None:  # Parser.parse calls it after each chunk: words/s move while a batch parses
        k = current["k"]
        live_words[k] = live_words.get(k, 0) + n_tokens
        prog.add_words(n_tokens)

    tick.words = words  # type: ignore[attr-defined]

    def parsing(i: int) -> None:
        current["k"] = todo[i]

    results = iter_profile(_batch_frames(staged, plan, todo), parser, o.settings, source_name=name,
                           progress=tick, parse=parse_fn, parsing=parsing, prefetch=rp.n_proc > 1)
    earlier = journal.get("pipeline_info")  # the interrupted run's pipeline (a resumed run)
    for k in todo:
        res = next(results)
        if earlier is not None:  # its batches and this run's must come from one pipeline, else D170
            _check_same_pipeline(earlier, parser.info(), journal_path)
            earlier = None
        with stage_times.stage("write"):
            digests = {role: write_part(parts / f"{k:06d}.{role}.parquet", df)
                       for role, df in zip(ROLES, (res.segments, res.anchors, res.sentences))}
        rows = res.segments[ROW]
        marker = {"segments": res.segments.height, "anchors": res.anchors.height,
                  "min_row": int(rows.min()), "max_row": int(rows.max()),
                  "words": int(res.segments[schema.N_TOKENS].sum()), PART_DIGEST: digests}
        del res, rows  # the batch's tables are in its parts: not held while the next batch runs
        if "pipeline_info" not in journal:
            journal["pipeline_info"] = parser.info()
            write_json_atomic(journal_path, journal)
        write_json_atomic(parts / f"{k:06d}.done", marker)
        # the batch's exact count (cache hits were not parsed, a prefetched batch may have reported already)
        prog.add_words(marker["words"] - live_words.pop(k, 0))
    info = journal.get("pipeline_info") or parser.info()
    if "pipeline_info" not in journal:
        journal["pipeline_info"] = info
        write_json_atomic(journal_path, journal)
    if hasattr(parse_fn, "flush"):
        parse_fn.flush()
    parser.close()
    live.parser = None
    prog.close()
    live.progress = None
    return info, (parse_fn.signature() if hasattr(parse_fn, "signature") else {})


_pipeline_identity = pipeline_identity  # (kept under these names for callers of the engine)
_check_same_pipeline = check_same_pipeline


def _journal_settings(source: Any, o: RunOptions, docs_path: Path | None, extra: dict[str, Any], *,
                      resumable: bool) -> dict[str, Any]:
    """What the journal records of this run (:func:`~ddpcore.engines.journal.journal_settings`), with the
    SHA-256 of a file input when the run can be resumed: --resume compares it besides size and modification
    time, so an input replaced in place by one of the same size and time does not mix its rows with the
    interrupted run's batches (D170). 0.07 s per 100 MiB (measured, page cache warm; a cold read is the disk's
    speed), against hours of parsing for such an input; --shard runs record it already (in the signature).
    Not for -o -: never resumed."""
    id_source, id_docs = identity_files(source, o.reader, o.docs)  # mtme: sources/LP.txt + documents/LP.docs
    jsettings = journal_settings(o.settings, o.cols, o.pipeline, int(o.batch_chars or BATCH_CHARS),
                                 input_fingerprint(id_source, id_docs), extra)
    if resumable and INPUT_DIGEST not in jsettings and isinstance(source, (str, os.PathLike)):
        jsettings[INPUT_DIGEST] = input_digest(id_source, id_docs)
    return jsettings


def _abandoned_work_notes() -> list[str]:
    """The run's first notes: the work folders of killed ``-o -`` runs removed (:func:`remove_abandoned_work`)."""
    stale = remove_abandoned_work()
    if not stale:
        return []
    return [f"removed {len(stale)} temporary work folder(s) of killed ddp runs that wrote to stdout "
            f"({', '.join(map(str, stale))}): their processes are gone and nothing in them changed for "
            f"{STALE_WORK_SECONDS / 60:.0f} minutes"]


def _outputs_not_placed(exc: DDPError, parts: Path, work: Path, resume_hint: str) -> DDPError:
    """D761 of a run whose every batch was profiled but whose outputs could not be put in place (a device
    gone, permissions changed under the run): the batches stay in ``work``, so ``--resume`` writes the outputs
    without parsing again."""
    n_done = len(list(parts.glob("*.done"))) if parts.exists() else 0
    return DDPError(f"{exc.message}; the {n_done} profiled batch(es) are kept in {work}: after fixing the cause, "
                    f"{resume_hint} to write the outputs without profiling again", code="D761")


def _interrupted(stop: _Stop, outs: Any, parts: Path, work: Path, temporary: bool, resume_hint: str
                 ) -> RunInterrupted:
    """The :class:`RunInterrupted` of a run stopped by ``stop`` (the work folder is removed if the
    outputs were already all in place: nothing is left to resume)."""
    n_done = len(list(parts.glob("*.done"))) if parts.exists() else 0
    what = "SIGTERM" if stop.signum == signal.SIGTERM else "interrupted (SIGINT)"
    if outs.committed:  # the signal was held back while the outputs were put in place
        if not temporary:
            shutil.rmtree(work, ignore_errors=True)
        return RunInterrupted(stop.signum, f"{what} while the outputs were put in place: stopped after writing "
                              f"all of them completely ({', '.join(map(str, outs.destinations))})")
    if temporary:
        msg = f"{what}: stopped; nothing was written (output to stdout cannot be resumed)"
    else:
        msg = (f"{what}: stopped after {n_done} finished batch(es); no output was written. To continue, "
               f"{resume_hint}")
    return RunInterrupted(stop.signum, msg)


class RunWriteError(DDPUsageError, OSError):
    """``[D785]``: the run could not write its work folder or outputs (a full disk or quota, a read-only or
    failing device). Also an :class:`OSError` (``errno`` set) for callers that catch the failure as one."""


def _probe_write(folder: Path, size: int = 1 << 20) -> int | None:
    """After a polars error that names no cause: the errno (:func:`~ddpcore.errors.write_failure_errno`)
    with which writing ``size`` bytes to ``folder`` fails now (a full disk or quota, a read-only
    device), else None (the error was something else)."""
    probe = folder / f".ddp-probe-{os.getpid()}.tmp"
    try:
        with open(probe, "wb") as fh:
            fh.write(b"\0" * size)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        return write_failure_errno(exc)
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    return None


def _write_failed(exc: BaseException, number: int, targets: dict[str, OutputTarget], parts: Path, work: Path,
                  temporary: bool, resume_hint: str, assembling: bool) -> DDPError:
    """``[D785]`` for a run whose work folder or outputs could not be written (full disk or quota,
    read-only or failing device; ``number``: the errno): where, why, and that the finished batches
    are kept for ``--resume`` (a part written halfway is removed, so it frees its space)."""
    for tmp in (parts.glob("*.tmp") if parts.exists() else ()):
        with contextlib.suppress(OSError):
            tmp.unlink()
    reason = (exc.strerror if isinstance(exc, OSError) else None) or os.strerror(number)
    named = getattr(exc, "filename", None)
    outputs = ", ".join(str(t.path) for t in targets.values() if t is not None and t.path is not None)
    where = str(named) if named else (f"the outputs ({outputs or '-'})" if assembling else
                                      f"the work folder {work}" if not temporary else
                                      f"the run's temporary folder {work} (TMPDIR chooses another)")
    n_done = len(list(parts.glob("*.done"))) if parts.exists() else 0
    if temporary:
        then = "run the command again"
    else:
        then = (f"{resume_hint} (its {n_done} finished batch(es) in {work} are kept and not profiled again)"
                if n_done else f"{resume_hint}")
    err = RunWriteError(f"cannot write {where}: {reason}; no output was changed. Free space, then {then}",
                        code="D785")
    err.errno = number
    return err


def _kill(parser: Parser) -> None:
    """Stop worker processes now (terminate, not wait)."""
    pool = parser._pool
    procs = list(getattr(pool, "_processes", {}).values()) if pool is not None else []
    parser.close()
    end_processes(procs)


def _read_journal(path: Path) -> dict[str, Any] | None:
    """The journal of an interrupted run, or None if it is empty or damaged (no settings to compare)."""
    try:
        journal = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(journal, dict) or not isinstance(journal.get("settings"), dict):
        return None
    return journal


def _finished_batches(parts: Path, n_batches: int, say: Callable[[str], None]) -> list[int]:
    """Batches an interrupted run finished whose parts are whole: a readable marker and three
    readable Parquet parts with the rows the marker counts. A damaged batch (zero-length part,
    truncated marker...) is removed and said: it is profiled again. One check per batch."""
    done: list[int] = []
    for marker in sorted(parts.glob("*.done")):
        import pyarrow.parquet as pq  # only when there is a marker (a resumed run)

        try:
            k = int(marker.name.split(".")[0])
        except ValueError:
            continue
        try:
            if k >= n_batches:
                raise ValueError(f"batch {k} is beyond the plan's {n_batches} batches")
            m = json.loads(marker.read_text(encoding="utf-8"))
            int(m["min_row"]), int(m["max_row"]), int(m["words"])
            for role in ROLES:
                n = pq.read_metadata(parts / f"{k:06d}.{role}.parquet").num_rows
                want = m.get(role)
                if want is not None and int(want) != n:
                    raise ValueError(f"the {role} part has {n} rows, its marker says {want}")
                digest = (m.get(PART_DIGEST) or {}).get(role)  # (markers of older runs have none)
                if digest is not None and _file_digest(parts / f"{k:06d}.{role}.parquet") != digest:
                    raise ValueError(f"the {role} part fails its checksum (damaged after it was written)")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            say(f"--resume: finished batch {k} of the interrupted run is damaged ({_reason(exc)}); profiling it again")
            for f in parts.glob(f"{k:06d}.*"):
                with contextlib.suppress(OSError):
                    f.unlink()
            continue
        done.append(k)
    return done


#: key of a finished batch's marker: the BLAKE2b of each of its parts (:func:`ddpcore.io.sinks.write_part`)
PART_DIGEST = "blake2b"


def _file_digest(path: Path) -> str:
    """BLAKE2b (16 bytes, hex) of a file's bytes, read a block at a time."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"missing {Path(exc.filename).name if exc.filename else 'file'}"
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r} in its marker"
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def _load_staged(journal: dict[str, Any], work: Path, cols: SegmentColumns, name: str,
                 say: Callable[[str], None] | None = None) -> StagedInput | None:
    """The staged input of the interrupted run, or None to stage the input again (none staged yet;
    or a chunk, the id index or the schema missing or unreadable, which ``say`` reports)."""
    st = journal.get("staged")
    ids_path = work / "ids.parquet"
    if not st or not ids_path.exists() or "index" not in st:
        return None
    import polars as pl
    import pyarrow.parquet as pq

    from ..io.id_index import IdIndex
    from ..io.sources import Chunk

    try:
        chunks = [Chunk(p, a, b, g) for p, a, b, g in st["chunks"]]
        for c in chunks:
            if c.row_group is None:  # a chunk staged in the work folder holds exactly its rows
                n = pq.read_metadata(c.path).num_rows
                if n != c.row_stop - c.row_start:
                    raise ValueError(f"{Path(c.path).name} has {n} rows, expected {c.row_stop - c.row_start}")
            elif not Path(c.path).exists():
                raise FileNotFoundError(2, "no such file", c.path)
        for f, digest in (st.get(PART_DIGEST) or {}).items():  # (journals of older runs have none)
            if _file_digest(Path(f)) != digest:
                raise ValueError(f"{Path(f).name} fails its checksum (damaged after it was written)")
        index = IdIndex.open(ids_path, st["index"])
        schema = dict(pl.read_parquet_schema(work / "schema.parquet"))
    except (OSError, ValueError, KeyError, TypeError, pl.exceptions.PolarsError) as exc:
        if say is not None:
            say(f"--resume: the staged input of the interrupted run is damaged ({_reason(exc)}); reading the input "
                "again (its finished batches are kept)")
        return None
    edges, forms = st.get(INVISIBLE_EDGES), st.get(NORMALISED_TEXT)
    return StagedInput(chunks, pl.DataFrame(), cols, schema, name, index,
                       invisible_edges=edges if isinstance(edges, dict) else None,
                       normalised_text=forms if isinstance(forms, dict) else None)


def _assemble(parts: Path, n_batches: int, targets: dict[str, OutputTarget], signature: dict[str, Any],
              n_rows: int, summary_by: str | None, cols: SegmentColumns, temp: Any,
              shard_keys: bool = False) -> tuple[pl.DataFrame, int]:
    """:func:`ddpcore.engines.assembly.assemble_outputs` (kept under this name for callers of the engine)."""
    return assemble_outputs(parts, n_batches, dict(targets), signature, n_rows, summary_by, cols, temp, shard_keys)
