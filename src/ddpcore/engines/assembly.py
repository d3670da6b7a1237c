"""The local engine's outputs, streamed from the finished batches' parts in input order.

Each finished batch of a run leaves three Parquet parts in the work folder beside the output
(``parts/NNNNNN.{segments,anchors,sentences}.parquet``, its rows sorted by input row within the
segment part, and a ``NNNNNN.done`` marker with the batch's row range). :func:`assemble_outputs`
writes the outputs from them to temporary files (the caller's :class:`ddpcore.io.outputs.OutputSet`
puts them all in place together, or none):

- segments in input order, :data:`ASSEMBLE_ROWS` input rows at a time, each range read from the
  parts whose row range overlaps it (batches may have finished in any order: only their rows count);
- anchors, sentences and documents batch by batch (document order, whole documents per batch).

Memory holds one range or one part, plus the summary's histograms (:class:`ddpcore.pipeline.summary.
SummaryAccumulator`: a row per (group, DDP value) and per (group, document), never one per segment). Shard runs (``shard_keys``)
keep ``input_row`` in the segments and ``document_first_row`` in the other tables for
``ddp merge``; a document is whole in its batch, so its first row comes from that batch's
segment part.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..io.segments import ROW, SegmentColumns
from ..io.sidecars import sidecar_text
from ..io.sinks import Sink
from ..pipeline.summary import SummaryAccumulator
from ..schema import SIGNATURE_KEY, TABLE_KEY

if TYPE_CHECKING:
    import polars as pl

    from ..io.outputs import OutputTarget

ROLES = ("segments", "anchors", "sentences")
#: rows of the segment output assembled at a time (the segment table carries the input text:
#: 20,000 rows of long paragraphs are ~10 MB; larger pieces made the assembly the memory peak)
ASSEMBLE_ROWS = 20_000
#: ordering keys kept in shard outputs (``--shard``) for ``ddp merge``
SHARD_ROW = "input_row"
SHARD_DOC_ROW = "document_first_row"


def part_path(parts: Path, k: int, role: str) -> Path:
    """Batch ``k``'s part of table ``role``."""
    return parts / f"{k:06d}.{role}.parquet"


def _first_rows(parts: Path, k: int, cols: SegmentColumns) -> pl.DataFrame:
    """Document id → ``document_first_row`` (int64) of batch ``k``'s documents (whole in the batch)."""
    import polars as pl

    seg = pl.read_parquet(part_path(parts, k, "segments"), columns=[cols.document, ROW])
    return seg.group_by(cols.document).agg(pl.col(ROW).min().cast(pl.Int64).alias(SHARD_DOC_ROW))


def _with_first_rows(piece: pl.DataFrame, parts: Path, k: int, cols: SegmentColumns) -> pl.DataFrame:
    return piece.join(_first_rows(parts, k, cols), on=cols.document, how="left", maintain_order="left")


def _sidecar(target: OutputTarget, signature: dict[str, Any], temp: Callable[[Any], Path], sink: Sink | None) -> None:
    """The sidecar of ``target``, once its data file (``sink``, closed) is complete: it records its stamp."""
    if target.sidecar is not None and sink is not None and sink.path is not None:
        temp(target.sidecar).write_text(sidecar_text(signature, sink.path), encoding="utf-8")


def _sink(target: OutputTarget | None, role: str, sig_json: str, temp: Callable[[Any], Path]) -> Sink | None:
    if target is None:
        return None
    meta = {SIGNATURE_KEY: sig_json, TABLE_KEY: role}
    if target.path is not None:
        return Sink(temp(target.path), target.format, gzip_=target.gzip, metadata=meta)
    return Sink(sys.stdout.buffer, target.format, gzip_=False, metadata=meta)


def _write_documents(parts: Path, n_batches: int, target: OutputTarget, signature: dict[str, Any],
                     cols: SegmentColumns, temp: Callable[[Any], Path], shard_keys: bool) -> None:
    """The ``--documents`` table from the segment parts (:func:`ddpcore.pipeline.documents.document_rows`),
    batch by batch; a shard run keeps ``document_first_row`` for ``ddp merge``, as anchors do."""
    import polars as pl

    from ..pipeline.documents import document_rows

    meta = {SIGNATURE_KEY: json.dumps(signature, sort_keys=True), TABLE_KEY: "documents"}
    assert target.path is not None
    sink = Sink(temp(target.path), target.format, gzip_=target.gzip, metadata=meta)
    empty = None
    for k in range(n_batches):  # one iteration per batch
        rows = document_rows(pl.read_parquet(part_path(parts, k, "segments")), cols)
        if shard_keys:
            rows = _with_first_rows(rows, parts, k, cols)
        empty = rows.schema
        sink.write(rows)
    sink.close(empty_schema=empty)
    _sidecar(target, signature, temp, sink)


def _write_segments(parts: Path, markers: list[dict[str, Any]], sink: Sink | None, n_rows: int,
                    summary: SummaryAccumulator, shard_keys: bool) -> None:
    """The segment table in input order, :data:`ASSEMBLE_ROWS` rows at a time, each range also
    added to ``summary``."""
    import polars as pl

    files = [part_path(parts, k, "segments") for k in range(len(markers))]
    for lo in range(0, n_rows, ASSEMBLE_ROWS):  # one iteration per range of input rows
        hi = lo + ASSEMBLE_ROWS
        use = [f for f, m in zip(files, markers) if m["min_row"] < hi and m["max_row"] >= lo]
        if not use:
            continue
        piece = pl.scan_parquet(use).filter((pl.col(ROW) >= lo) & (pl.col(ROW) < hi)).collect().sort(ROW)
        piece = (piece.rename({ROW: SHARD_ROW}).with_columns(pl.col(SHARD_ROW).cast(pl.Int64))
                 if shard_keys else piece.drop(ROW))
        summary.add(piece)
        if sink is not None:
            sink.write(piece)


def assemble_outputs(parts: Path, n_batches: int, targets: dict[str, OutputTarget | None],
                     signature: dict[str, Any], n_rows: int, summary_by: str | None, cols: SegmentColumns,
                     temp: Callable[[Any], Path], shard_keys: bool = False) -> tuple[pl.DataFrame, int]:
    """Write the outputs from the parts of batches ``0..n_batches-1`` to temporaries (``temp(dest)``,
    :meth:`ddpcore.io.outputs.OutputSet.temp`; the caller commits them all together); return the
    summary table (:func:`ddpcore.api.summarize` of the segment table, grouped by ``summary_by`` or
    the domain column, computed range by range) and the anchor count. ``n_rows``: input rows (the segment rows are looked up in ranges of input rows)."""
    import polars as pl

    sig_json = json.dumps(signature, sort_keys=True)
    markers = [json.loads((parts / f"{k:06d}.done").read_text()) for k in range(n_batches)]
    n_anchors = sum(m["anchors"] for m in markers)
    summary = SummaryAccumulator(summary_by or cols.domain, cols.document)
    for role in ROLES:
        target = targets.get(role)
        if target is None and role != "segments":
            continue
        sink = _sink(target, role, sig_json, temp)
        first = part_path(parts, 0, role)
        part_schema = pl.read_parquet_schema(first) if n_batches else None
        if role == "segments":
            _write_segments(parts, markers, sink, n_rows, summary, shard_keys)
            empty = ({(SHARD_ROW if k == ROW else k): (pl.Int64 if k == ROW else v) for k, v in part_schema.items()}
                     if shard_keys else {k: v for k, v in part_schema.items() if k != ROW}) if part_schema else None
        else:
            for k in range(n_batches):  # one iteration per batch (document order)
                if sink is not None:
                    piece = pl.read_parquet(part_path(parts, k, role))
                    sink.write(_with_first_rows(piece, parts, k, cols) if shard_keys else piece)
            empty = ({**part_schema, SHARD_DOC_ROW: pl.Int64} if shard_keys else part_schema) if part_schema else None
        if sink is not None:
            sink.close(empty_schema=empty)
        if target is not None:
            _sidecar(target, signature, temp, sink)
    if targets.get("documents") is not None:  # one row per document, batch by batch (whole documents)
        _write_documents(parts, n_batches, targets["documents"], signature, cols, temp, shard_keys)
    return summary.table(), n_anchors
