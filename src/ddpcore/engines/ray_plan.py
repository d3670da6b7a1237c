"""The Ray engine's plan: batches of whole documents cut from the id index, and what each actor
needs to read its batch's rows itself.

The driver of a Ray run holds only the **plan** (:class:`RayPlan`): five integers per segment
(input row, document ordinal, segment key, batch, parse units) and the list of input chunks
(Parquet row groups of the input read in place, or chunks staged on shared storage). Each batch
is handed to an actor as a :class:`BatchSpec` — the chunks that hold its rows and the rows'
numbers and ordering keys, a few kB — and the actor reads the rows
(:meth:`BatchSpec.read`), so the texts never pass through the driver or the object store.

The same input, batch size and columns always give the same plan, which is what lets
``--resume`` take the parts of an interrupted run as the journal (:mod:`ddpcore.engines.parts`).
The plan is also saved in the dataset folder (:func:`save_plan`, ``plan.bin``, its checksum in
the journal): a resumed run loads it (:func:`load_plan`) after checking that the input's path,
size, modification time and content checksum and the settings are the interrupted run's (D170), and
does not stage or plan the input again; only a missing or damaged plan makes it read and plan the input anew.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._version import __version__
from ..errors import DDPUsageError
from ..io.segments import ROW, SegmentColumns
from ..io.sources import CHARS, UNITS, Chunk, StagedInput
from .local import DOC, SEGKEY, Settings, document_batches, segment_keys
from .parts import PLAN
from ..pipeline.stages import Batch

if TYPE_CHECKING:
    import polars as pl


@dataclass(frozen=True)
class BatchSpec:
    """What an actor needs to read batch ``k`` itself.

    ``chunks``: the input chunks holding its rows (paths or URIs every node sees). ``frame_ref``
    instead, for an in-memory table: an object-store reference to the batch frame itself. ``rows``
    (n,) int64 sorted input rows; ``doc`` and ``segkey`` (n,) int64 their document ordinal and
    segment key, in the order of ``rows``. ``schema``: the unified input schema (polars dtypes).
    """

    k: int
    chunks: tuple[Chunk, ...]
    rows: np.ndarray
    doc: np.ndarray
    segkey: np.ndarray
    schema: dict[str, Any]
    cols: SegmentColumns
    name: str
    n_units: int
    frame_ref: Any = None

    def read(self) -> Batch:
        """The batch's rows (``ROW``, ``DOC`` renumbered from 0, input columns), in document order."""
        import polars as pl

        if self.frame_ref is not None:  # an in-memory table: the batch frame itself, from the object store
            import ray

            return Batch(ray.get(self.frame_ref), self.cols)
        frame = StagedInput(list(self.chunks), pl.DataFrame(), self.cols, self.schema, self.name).read_rows(self.rows)
        keys = pl.DataFrame({ROW: self.rows.astype(np.uint32), DOC: self.doc, SEGKEY: self.segkey})
        keyed = (frame.with_columns(pl.col(ROW).cast(pl.UInt32)).join(keys, on=ROW, how="left")
                 .sort([DOC, SEGKEY, ROW]))
        return Batch(keyed.with_columns((pl.col(DOC) - pl.col(DOC).min()).alias(DOC)).drop(SEGKEY), self.cols)

    def spec(self) -> BatchSpec:
        """Itself (a :class:`BatchRef` makes its spec when the batch is handed out)."""
        return self


@dataclass(frozen=True)
class BatchRef:
    """Batch ``k`` of ``plan`` before its :class:`BatchSpec` is made: the pool holds one of these per
    batch waiting (a few bytes) and makes the spec (24 bytes per row) only when it hands the batch out."""

    k: int
    n_units: int
    name: str
    plan: RayPlan

    def spec(self) -> BatchSpec:
        return self.plan.spec(self.k)


@dataclass
class RayPlan:
    """The batches of a run, numeric only (processing order: documents by first appearance,
    segments by id). Arrays are (n_segments,): ``row`` input row, ``doc`` document ordinal,
    ``segkey`` segment key (int64), ``batch`` batch number, ``units`` parse units (the others
    32-bit: about 28 bytes per segment); ``bounds``
    (n_batches + 1,) the plan positions where each batch starts. ``chunks``/``schema``: the input."""

    row: np.ndarray
    doc: np.ndarray
    segkey: np.ndarray
    batch: np.ndarray
    units: np.ndarray
    chars: np.ndarray
    bounds: np.ndarray
    chunks: list[Chunk]
    schema: dict[str, Any]
    cols: SegmentColumns
    name: str
    batch_chars: int

    @property
    def n_batches(self) -> int:
        return len(self.bounds) - 1

    @property
    def n_segments(self) -> int:
        return len(self.row)

    def segments_per_batch(self) -> np.ndarray:
        """(n_batches,) segments of each batch."""
        return np.diff(self.bounds)

    def units_per_batch(self) -> np.ndarray:
        """(n_batches,) parse units of each batch."""
        return np.add.reduceat(self.units.astype(np.int64), self.bounds[:-1]) if self.n_segments else np.zeros(0, np.int64)

    def chars_per_batch(self) -> np.ndarray:
        """(n_batches,) characters of text of each batch."""
        return np.add.reduceat(self.chars.astype(np.int64), self.bounds[:-1]) if self.n_segments else np.zeros(0, np.int64)

    def refs(self, ks: list[int]) -> list[BatchRef]:
        """A :class:`BatchRef` for each batch of ``ks``."""
        units = self.units_per_batch()
        return [BatchRef(k, int(units[k]), self.name, self) for k in ks]

    def spec(self, k: int, frame_ref: Any = None) -> BatchSpec:
        """The :class:`BatchSpec` of batch ``k`` (the chunks that hold its rows, its rows sorted)."""
        a, b = int(self.bounds[k]), int(self.bounds[k + 1])
        order = np.argsort(self.row[a:b], kind="stable")
        rows = self.row[a:b][order].astype(np.int64)
        lo, hi = int(rows[0]), int(rows[-1])
        chunks = tuple(c for c in self.chunks if c.row_start <= hi and c.row_stop > lo)
        if frame_ref is not None:
            chunks = ()
        return BatchSpec(k, chunks, rows, self.doc[a:b][order].astype(np.int64), self.segkey[a:b][order],
                         self.schema, self.cols, self.name, int(self.units[a:b].sum()), frame_ref)


def first_appearance(values: pl.Series) -> np.ndarray:
    """Ordinal (n,) int32 of each value in order of first appearance (``d, e, d`` -> ``0, 1, 0``).

    A 64-bit hash of each value, numbered with ``np.unique``: about 40 bytes per value at the peak,
    half of polars' ``replace_strict`` over the strings. Exact: used only when the hashes have as
    many distinct values as the strings (no collision), else the strings themselves are numbered."""
    import polars as pl

    h = values.hash(seed=0).to_numpy()
    uniq, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    del h
    if len(uniq) != values.n_unique():  # a hash collision (about 1 in 10^7 at a million documents)
        distinct = values.unique(maintain_order=True)
        return values.replace_strict(distinct, pl.int_range(0, distinct.len(), eager=True),
                                     return_dtype=pl.Int32).to_numpy()
    rank = np.empty(len(uniq), dtype=np.int32)
    rank[np.argsort(first, kind="stable")] = np.arange(len(uniq), dtype=np.int32)
    return rank[np.asarray(inverse).reshape(-1)]


def plan_batches(staged: StagedInput, batch_chars: int) -> RayPlan:
    """Order the id index of ``staged`` (documents by first appearance, segments by id) and cut it
    into batches of whole documents of about ``batch_chars`` characters
    (:func:`~ddpcore.engines.local.document_batches`). The id index is consumed (``staged.ids``
    is left empty): the plan keeps no id strings."""

    ids, cols = staged.ids, staged.cols
    staged.ids = ids.head(0)  # consumed: its columns are freed as the plan is built
    row = ids[ROW].to_numpy().astype(np.uint32, copy=False)
    doc = first_appearance(ids.drop_in_place(cols.document))
    segkey = segment_keys(ids, cols).to_numpy().astype(np.int64, copy=False)
    order = np.lexsort((row, segkey, doc))
    row, doc, segkey = row[order], doc[order], segkey[order]
    chars = ids[CHARS].to_numpy()[order].astype(np.int32)
    units = ids[UNITS].to_numpy()[order].astype(np.int32)
    del order
    batch = document_batches(doc, chars, batch_chars).astype(np.int32)
    bounds = np.searchsorted(batch, np.arange(int(batch[-1]) + 2)) if len(batch) else np.zeros(1, np.int64)
    return RayPlan(row, doc, segkey, batch, units, chars, bounds.astype(np.int64), list(staged.chunks),
                   dict(staged.schema), cols, staged.name, int(batch_chars))


# ------------------------------------------------------------------------- the saved plan

#: the plan of a run, saved in its dataset folder for ``--resume`` (the journal records its checksum)
PLAN_FILE = PLAN
_PLAN_ARRAYS = ("row", "doc", "segkey", "batch", "units", "chars", "bounds")


#: the first bytes of a saved plan; then the header's length (8 bytes, little-endian), the header (JSON),
#: and the arrays' bytes one after the other (the header gives each array's dtype and length)
_PLAN_MAGIC = b"DDPPLAN1"
#: bytes of an array written at a time (a view of the array: no copy)
_WRITE_SLICE = 1 << 20


def save_plan(plan: RayPlan, dataset: str) -> dict[str, Any]:
    """Write ``plan`` to ``dataset/plan.bin`` (atomically): its arrays, its chunks and the input
    schema (an empty Arrow IPC frame), so that ``--resume`` needs neither the input nor its id
    index on the driver. Streamed from views of the arrays, 1 MiB at a time: the driver holds no
    copy of them. Returns the journal's ``plan`` entry (file, size, BLAKE2b, segments, batches)."""
    import base64
    import io
    import json

    import polars as pl

    from ..io import fs

    schema = io.BytesIO()
    pl.DataFrame(schema=plan.schema).write_ipc(schema)
    arrays = [np.ascontiguousarray(getattr(plan, a)) for a in _PLAN_ARRAYS]
    header = json.dumps({
        "arrays": [[a, x.dtype.str, len(x)] for a, x in zip(_PLAN_ARRAYS, arrays)],
        "chunks": [[c.path, c.row_start, c.row_stop, c.row_group] for c in plan.chunks], "name": plan.name,
        "batch_chars": plan.batch_chars, "schema": base64.b64encode(schema.getvalue()).decode("ascii"),
    }).encode("utf-8")

    def write(fh: Any) -> None:
        fh.write(_PLAN_MAGIC + len(header).to_bytes(8, "little") + header)
        for x in arrays:  # one iteration per array, then per MiB of it
            view = memoryview(x).cast("B")
            for at in range(0, len(view), _WRITE_SLICE):
                fh.write(view[at:at + _WRITE_SLICE])

    size, digest = fs.write_stream_atomic(fs.join(dataset, PLAN_FILE), write)
    return {"file": PLAN_FILE, "size": size, "digest": digest, "n_segments": plan.n_segments,
            "n_batches": plan.n_batches}


def _parse_plan(data: bytes, cols: SegmentColumns) -> RayPlan:
    """The :class:`RayPlan` of a saved plan's bytes (ValueError, KeyError... when they are not one)."""
    import base64
    import io
    import json

    import polars as pl

    if data[:len(_PLAN_MAGIC)] != _PLAN_MAGIC:
        raise ValueError("not a saved ddpcore plan")
    at = len(_PLAN_MAGIC) + 8
    end = at + int.from_bytes(data[len(_PLAN_MAGIC):at], "little")
    head = json.loads(data[at:end].decode("utf-8"))
    arrays = {}
    for name, dtype, n in head["arrays"]:  # one iteration per array (seven)
        dt = np.dtype(dtype)
        arrays[name] = np.frombuffer(data, dtype=dt, count=int(n), offset=end)  # (read-only views of the bytes)
        end += dt.itemsize * int(n)
    if end != len(data) or set(arrays) != set(_PLAN_ARRAYS):
        raise ValueError("a saved plan of another length")
    chunks = [Chunk(str(p), int(a), int(b), None if g is None else int(g)) for p, a, b, g in head["chunks"]]
    schema = dict(pl.read_ipc(io.BytesIO(base64.b64decode(head["schema"]))).schema)
    return RayPlan(**arrays, chunks=chunks, schema=schema, cols=cols, name=str(head["name"]),
                   batch_chars=int(head["batch_chars"]))


def load_plan(dataset: str, entry: Any, cols: SegmentColumns) -> tuple[RayPlan | None, str]:
    """The plan saved by :func:`save_plan` as the journal's ``entry`` records it, and ``""``; or
    ``(None, why)`` when it is missing, damaged (size or checksum) or its chunks are gone (the
    caller then reads the input again)."""
    from ..io import fs

    if not isinstance(entry, dict) or entry.get("file") != PLAN_FILE:
        return None, "the interrupted run's journal records no saved plan"
    where = fs.join(dataset, PLAN_FILE)
    try:
        data = fs.read_bytes(where)
    except FileNotFoundError:
        return None, f"its saved plan {where} is missing"
    if len(data) != entry.get("size") or fs.digest(data) != entry.get("digest"):
        return None, f"its saved plan {where} does not match the checksum its journal recorded"
    try:
        plan = _parse_plan(data, cols)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        return None, f"its saved plan {where} cannot be read ({type(exc).__name__})"
    for path in dict.fromkeys(c.path for c in plan.chunks):  # one look-up per distinct file (one for a Parquet input)
        if fs.file_info(path) is None:
            return None, f"the input chunk {path} the workers read is gone"
    if plan.n_segments != entry.get("n_segments") or plan.n_batches != entry.get("n_batches"):
        return None, f"its saved plan {where} does not match its journal"
    return plan, ""


# ------------------------------------------------------------------------------ the journal

def input_identity(source: Any, docs: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """What identifies the input for ``--resume``: path (or URI), size and modification time."""
    from ..io.fs import fingerprint, is_uri
    from ..io.sources import input_fingerprint

    if is_uri(source):
        return fingerprint(source)
    return input_fingerprint(source, docs)


__all__ = ["BatchRef", "BatchSpec", "PLAN_FILE", "RayPlan", "input_identity", "load_plan",
           "plan_batches", "save_plan"]
