"""The Ray engine's output as a partitioned dataset on shared storage: one Parquet part per
finished batch and table, written by the actor that profiled the batch.

Layout of a dataset folder (a local path every node sees, or a ``pyarrow.fs`` URI)::

    journal.json                  settings and input identity of the run (what --resume checks)
    plan.bin                      the plan: batches of input rows (a resumed run reads it, not the input)
    segments/part-NNNNNN.parquet  batch NNNNNN's segment rows (document order; ``input_row``: 0-based input row)
    anchors/part-NNNNNN.parquet   its anchor rows
    sentences/part-NNNNNN.parquet its sentence rows
    _parts/NNNNNN.json            the batch's marker: rows, words, units, size and BLAKE2b of each part
    staged/NNNNNN.parquet         a non-Parquet input's rows, staged by the driver for the workers
    _SUCCESS                      the manifest, written last: signature, every part with its checksum,
                                  the journal's settings (a --resume of the finished dataset reuses it)

Every file is written under a temporary name and renamed (:func:`ddpcore.io.fs.write_bytes_atomic`);
a batch counts as finished once its marker exists, after its three parts. The markers are the
run's journal: ``--resume`` keeps every batch whose parts have the sizes its marker records
(:func:`finished_batches`) and the assembly checks every part's checksum as it reads it
(:func:`read_part`, D864). When the run completes, ``_SUCCESS`` replaces the markers, the
journal, the plan and the staged chunks.

With ``-o FILE`` the outputs are assembled from the parts (:func:`assemble`: segments in input
order, anchors and sentences in document order, exactly the local engine's files) and the
dataset, kept beside the output as ``.FILE.ray.ddp-work/``, is removed. With ``-o DIR/`` the
dataset is the output: :func:`read_dataset` reads it back (verified) as the local engine's tables.
"""
from __future__ import annotations

import io
import json
import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import schema
from ..errors import DDPDataError
from ..io import fs
from ..io.segments import ROW, SegmentColumns
from ..io.sidecars import sidecar_text
from ..pipeline.summary import SummaryAccumulator
from ..schema import SIGNATURE_KEY, TABLE_KEY

if TYPE_CHECKING:
    import polars as pl

    from ..io.outputs import OutputTarget

ROLES = ("segments", "anchors", "sentences")
#: the 0-based input row of every segment in the dataset's segment parts
INPUT_ROW = "input_row"
JOURNAL = "journal.json"
#: the run's plan (:func:`ddpcore.engines.ray_plan.save_plan`): what ``--resume`` needs instead of the input
PLAN = "plan.bin"
MARKERS = "_parts"
MANIFEST = "_SUCCESS"
#: chunks of a non-Parquet input staged by the driver for the workers (:func:`ddpcore.io.sources.stage_input`)
STAGED = "staged"
MANIFEST_KIND = "ddpcore ray dataset"
#: the manifest's copy of the run's journal settings: what ``--resume`` of a finished dataset compares (D170)
RESUME_SETTINGS = "settings"
#: rows of the segment output assembled at a time
ASSEMBLE_ROWS = 20_000
#: what the manifest keeps of each batch's marker
BATCH_KEYS = ("seconds", "node", "units", "words", "cache_hits", "cache_misses", "min_row", "max_row")
#: decoded parts kept while the segments are assembled in input order
PART_CACHE = 8


def part_name(k: int) -> str:
    """File name of batch ``k``'s part of a table (``part-000042.parquet``)."""
    return f"part-{k:06d}.parquet"


def part_location(dataset: str, role: str, k: int) -> str:
    """Where batch ``k``'s part of table ``role`` lives."""
    return fs.join(dataset, role, part_name(k))


def marker_location(dataset: str, k: int) -> str:
    """Where the completion marker of batch ``k`` lives (written after all of its parts)."""
    return fs.join(dataset, MARKERS, f"{k:06d}.json")


def _parquet(df: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.write_parquet(buf, compression="zstd", row_group_size=20_000)
    return buf.getvalue()


def write_batch(dataset: str, k: int, segments: pl.DataFrame, anchors: pl.DataFrame, sentences: pl.DataFrame,
                extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write batch ``k``'s three parts, then its marker (each atomically); return the marker.

    ``segments`` carries ``ROW`` (stored as ``input_row``, int64). ``extra``: more marker keys
    (the actor's ``units``, cache hits...). Called on the actor that profiled the batch.
    """
    import polars as pl

    rows = segments[ROW]
    tables = {"segments": segments.rename({ROW: INPUT_ROW}).with_columns(pl.col(INPUT_ROW).cast(pl.Int64)),
              "anchors": anchors, "sentences": sentences}
    files = {}
    for role, df in tables.items():  # one iteration per table
        data = _parquet(df)
        fs.write_bytes_atomic(part_location(dataset, role, k), data)
        files[role] = {"rows": df.height, "size": len(data), "digest": fs.digest(data)}
    marker = {"k": k, "files": files, "min_row": int(rows.min()) if len(rows) else 0,
              "max_row": int(rows.max()) if len(rows) else -1,
              "words": int(segments[schema.N_TOKENS].sum()), **(extra or {})}
    fs.write_json_atomic(marker_location(dataset, k), marker)
    return marker


def prepare(dataset: str) -> None:
    """Create the dataset's folders (nothing on an object store)."""
    for sub in (*ROLES, MARKERS):
        fs.make_dirs(fs.join(dataset, sub))


def finished_batches(dataset: str, n_batches: int, say: Callable[[str], None]) -> dict[int, dict[str, Any]]:
    """The markers of the batches an interrupted run finished whole: a readable marker whose three
    parts exist with the sizes it records. A damaged batch is removed and said (it is profiled again)."""
    done: dict[int, dict[str, Any]] = {}
    for name in fs.list_files(fs.join(dataset, MARKERS)):  # one iteration per finished batch
        if not name.endswith(".json") or not name[:-5].isdigit():
            continue
        k = int(name[:-5])
        try:
            if k >= n_batches:
                raise ValueError(f"batch {k} is beyond the plan's {n_batches} batches")
            m = fs.read_json(marker_location(dataset, k))
            for role in ROLES:
                want = m["files"][role]
                got = fs.file_info(part_location(dataset, role, k))
                if got is None:
                    raise FileNotFoundError(f"no {role} part")
                if got[0] != int(want["size"]):
                    raise ValueError(f"the {role} part has {got[0]} bytes, its marker says {want['size']}")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            say(f"--resume: finished batch {k} of the interrupted run is damaged ({_reason(exc)}); profiling it again")
            drop_batch(dataset, k)
            continue
        done[k] = m
    return done


def drop_batch(dataset: str, k: int) -> None:
    """Remove batch ``k``'s marker and parts (marker first: a batch without its marker is not finished)."""
    fs.remove(marker_location(dataset, k))
    for role in ROLES:
        fs.remove(part_location(dataset, role, k))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r} in its marker"
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def read_part(dataset: str, role: str, k: int, entry: dict[str, Any]) -> pl.DataFrame:
    """Batch ``k``'s part of ``role``, its size and checksum checked against ``entry`` (the
    marker's or manifest's record); D864 when they differ (the batch's marker is removed, so that
    ``--resume`` profiles it again)."""
    import polars as pl

    return pl.read_parquet(io.BytesIO(check_part(dataset, role, k, entry)))


def check_part(dataset: str, role: str, k: int, entry: dict[str, Any]) -> bytes:
    """The bytes of batch ``k``'s part of ``role``, once its size and checksum match ``entry``; D864 (and
    the batch's marker removed) as :func:`read_part` says."""
    where = part_location(dataset, role, k)
    try:
        data = fs.read_bytes(where)
    except FileNotFoundError:
        data = None
    if data is None or len(data) != int(entry["size"]) or fs.digest(data) != entry["digest"]:
        what = "is missing" if data is None else "does not match the checksum its marker recorded"
        fs.remove(marker_location(dataset, k))
        raise DDPDataError(f"{where}: this part of the Ray run {what} (damaged or overwritten on the shared storage); "
                           "rerun the same command with --resume to profile that batch again", code="D864")
    return data


# -------------------------------------------------------------------------------- assembly


class _Parts:
    """Decoded segment parts, a few at a time (the assembly in input order visits a part once
    per range of rows it overlaps)."""

    def __init__(self, dataset: str, markers: dict[int, dict[str, Any]]) -> None:
        self.dataset, self.markers = dataset, markers
        self._cache: OrderedDict[int, pl.DataFrame] = OrderedDict()

    def get(self, k: int) -> pl.DataFrame:
        if k in self._cache:
            self._cache.move_to_end(k)
            return self._cache[k]
        df = read_part(self.dataset, "segments", k, self.markers[k]["files"]["segments"])
        self._cache[k] = df
        while len(self._cache) > PART_CACHE:
            self._cache.popitem(last=False)
        return df


def assemble(dataset: str, markers: dict[int, dict[str, Any]], targets: dict[str, OutputTarget | None],
             signature: dict[str, Any], n_rows: int, summary_by: str | None, cols: SegmentColumns,
             temp: Callable[[Any], Any]) -> tuple[pl.DataFrame, int]:
    """Write the ``-o`` files from the parts to temporaries (``temp(dest)``; the caller commits
    them together): segments in input order without ``input_row``, anchors and sentences in
    document order, documents batch by batch. Returns the DDP summary table (built range by range,
    :class:`~ddpcore.pipeline.summary.SummaryAccumulator`: no row per segment is kept) and the anchor count."""
    import polars as pl

    from ..io.sinks import Sink

    ks = sorted(markers)
    sig_json = json.dumps(signature, sort_keys=True)
    n_anchors = sum(int(markers[k]["files"]["anchors"]["rows"]) for k in ks)
    summary = SummaryAccumulator(summary_by or cols.domain, cols.document)

    def sink_for(role: str) -> Any:
        target = targets.get(role)
        if target is None:
            return None
        meta = {SIGNATURE_KEY: sig_json, TABLE_KEY: role}
        if target.path is None:
            return Sink(sys.stdout.buffer, target.format, gzip_=False, metadata=meta)
        return Sink(temp(target.path), target.format, gzip_=target.gzip, metadata=meta)

    def close(role: str, sink: Any, empty: Any) -> None:
        """Close ``role``'s output, then write its sidecar: the stamp of the complete data file."""
        sink.close(empty_schema=empty)
        target = targets.get(role)
        if target is not None and target.sidecar is not None and sink.path is not None:
            temp(target.sidecar).write_text(sidecar_text(signature, sink.path), encoding="utf-8")

    parts = _Parts(dataset, markers)
    sink = sink_for("segments")
    lo_row = np.array([markers[k]["min_row"] for k in ks], dtype=np.int64)
    hi_row = np.array([markers[k]["max_row"] for k in ks], dtype=np.int64)
    empty = None
    for lo in range(0, n_rows, ASSEMBLE_ROWS):  # one iteration per range of input rows
        hi = lo + ASSEMBLE_ROWS
        use = [ks[i] for i in np.flatnonzero((lo_row < hi) & (hi_row >= lo))]
        pieces = [parts.get(k).filter((pl.col(INPUT_ROW) >= lo) & (pl.col(INPUT_ROW) < hi)) for k in use]
        if not pieces:
            continue
        piece = pl.concat(pieces).sort(INPUT_ROW).drop(INPUT_ROW)
        empty = piece.schema
        summary.add(piece)
        if sink is not None:
            sink.write(piece)
        del pieces, piece
    if sink is not None:
        close("segments", sink, empty)
    for role in ("anchors", "sentences"):
        sink = sink_for(role)
        if sink is None:
            continue
        empty = None
        for k in ks:  # one iteration per batch (document order)
            piece = read_part(dataset, role, k, markers[k]["files"][role])
            empty = piece.schema
            sink.write(piece)
        close(role, sink, empty)
    if targets.get("documents") is not None:
        from ..pipeline.documents import document_rows

        sink = sink_for("documents")
        empty = None
        for k in ks:  # whole documents per batch
            rows = document_rows(parts.get(k).drop(INPUT_ROW), cols)
            empty = rows.schema
            sink.write(rows)
        close("documents", sink, empty)
    return summary.table(), n_anchors


def dataset_summary(dataset: str, markers: dict[int, dict[str, Any]], summary_by: str | None,
                    cols: SegmentColumns) -> tuple[pl.DataFrame, int]:
    """The DDP summary table (:func:`ddpcore.api.summarize`) and anchor count of a dataset left as the
    output (``-o DIR/``), read from its segment parts (checksums verified) one at a time, in batch order."""
    summary = SummaryAccumulator(summary_by or cols.domain, cols.document)
    for k in sorted(markers):  # one iteration per batch: one decoded part at a time
        summary.add(read_part(dataset, "segments", k, markers[k]["files"]["segments"]))
    n_anchors = sum(int(m["files"]["anchors"]["rows"]) for m in markers.values())
    return summary.table(), n_anchors


def write_manifest(dataset: str, markers: dict[int, dict[str, Any]], signature: dict[str, Any],
                   accounting: dict[str, Any], settings: dict[str, Any] | None = None) -> None:
    """Write ``_SUCCESS`` (signature, every part with rows, size and checksum, the run's accounting and
    ``settings``: the journal's, what a ``--resume`` of the finished dataset compares), then remove the
    markers and the journal it replaces."""
    ks = sorted(markers)
    manifest = {
        "kind": MANIFEST_KIND, "signature": signature, "n_batches": len(ks),
        **({RESUME_SETTINGS: settings} if settings is not None else {}),
        "parts": {role: [{"k": k, "file": f"{role}/{part_name(k)}", **markers[k]["files"][role]} for k in ks]
                  for role in ROLES},
        "rows": {role: sum(int(markers[k]["files"][role]["rows"]) for k in ks) for role in ROLES},
        "run": accounting,
        # per batch: what its actor reported (seconds from reading its rows to writing its marker)
        "batches": [{"k": k, **{key: markers[k][key] for key in BATCH_KEYS if key in markers[k]}} for k in ks],
    }
    fs.write_json_atomic(fs.join(dataset, MANIFEST), manifest)
    for k in ks:
        fs.remove(marker_location(dataset, k))
    fs.remove(fs.join(dataset, JOURNAL))
    fs.remove(fs.join(dataset, PLAN))
    for sub in (MARKERS, STAGED):
        fs.remove_tree(fs.join(dataset, sub))


def read_manifest(dataset: str) -> dict[str, Any]:
    """The ``_SUCCESS`` manifest of a finished dataset (D864 if it is missing or not one)."""
    where = fs.join(dataset, MANIFEST)
    try:
        m = fs.read_json(where)
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        m = None
    if not isinstance(m, dict) or m.get("kind") != MANIFEST_KIND:
        raise DDPDataError(f"{where}: no finished ddpcore Ray dataset here (no readable _SUCCESS manifest); the run "
                           "that writes it did not finish: rerun it with --resume", code="D864")
    return m


def manifest_markers(manifest: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """The batches of a finished dataset's manifest as markers (``{k: {"files": {role: entry}}}``, what
    :func:`dataset_summary` and :func:`read_part` take)."""
    markers: dict[int, dict[str, Any]] = {}
    for role in ROLES:
        for e in manifest["parts"][role]:
            markers.setdefault(int(e["k"]), {"files": {}})["files"][role] = e
    return markers


def read_dataset(dataset: str) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, dict[str, Any]]:
    """A finished dataset (``-o DIR/``) as ``(segments, anchors, sentences, signature)``: the local
    engine's tables (segments in input order without ``input_row``), every part's checksum checked."""
    import polars as pl

    m = read_manifest(dataset)
    tables = []
    for role in ROLES:
        frames = [read_part(dataset, role, int(e["k"]), e) for e in m["parts"][role]]
        df = pl.concat(frames)
        tables.append(df.sort(INPUT_ROW).drop(INPUT_ROW) if role == "segments" else df)
    return tables[0], tables[1], tables[2], m["signature"]


__all__ = ["ASSEMBLE_ROWS", "INPUT_ROW", "MANIFEST", "RESUME_SETTINGS", "assemble", "check_part", "dataset_summary",
           "drop_batch", "finished_batches", "manifest_markers",
           "part_location", "prepare", "read_dataset", "read_manifest", "read_part", "write_batch", "write_manifest"]
