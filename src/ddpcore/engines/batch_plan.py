"""The batches of a local run, planned from the compact id index in memory that grows with the
number of *document runs*, not with the corpus.

A document run is a stretch of consecutive input rows of one document (an input whose
documents are contiguous has one run per document; the worst case, documents interleaved
row by row, one run per segment). :func:`plan_batches` reads the id index
(:class:`ddpcore.io.id_index.IdIndex`) one row group at a time and keeps, per run, its first
row, length, characters and parse units; it groups the runs by their 128-bit document key,
orders the documents by first appearance (the order of
:func:`ddpcore.engines.local.order_segments`), keeps a shard's documents, and cuts batches of
whole documents exactly as :func:`ddpcore.engines.local.document_batches` does. About 40 bytes
a run, plus a few bytes a document; the rows of one batch are produced when the batch is read
(:meth:`BatchPlan.batch_rows`). Segments within a document are ordered in the batch (the batch
holds whole documents, so the within-document order never changes which batch a row is in).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import DDPUsageError
from ..io.id_index import DOC_A, DOC_B, IDX_CHARS, IDX_UNITS, IdIndex
from .local import batch_of_documents


@dataclass(frozen=True)
class BatchPlan:
    """Document runs in processing order and the batches over them.

    ``run_start``/``run_len`` (n_runs,) int64: first input row and row count of each run;
    ``run_doc`` (n_runs,) int64: its document, numbered 0.. in processing order (first appearance);
    ``doc_first_row`` (n_docs,) int64: the first input row of each document; ``batch_runs``
    (n_batches + 1,) int64: run bounds of each batch; ``seg_per_batch``/``units_per_batch``
    (n_batches,) int64: segments and parse units of each batch; ``n_input_documents``: distinct
    documents of the whole input (before a shard is chosen)."""

    run_start: np.ndarray
    run_len: np.ndarray
    run_doc: np.ndarray
    doc_first_row: np.ndarray
    batch_runs: np.ndarray
    seg_per_batch: np.ndarray
    units_per_batch: np.ndarray
    n_input_documents: int

    @property
    def n_batches(self) -> int:
        return len(self.batch_runs) - 1

    @property
    def n_segments(self) -> int:
        return int(self.seg_per_batch.sum())

    def batch_rows(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows of batch ``k`` in processing order (n_k,) int64 and the document of each, numbered
        from 0 within the batch (n_k,) int64."""
        a, b = int(self.batch_runs[k]), int(self.batch_runs[k + 1])
        start, length = self.run_start[a:b], self.run_len[a:b]
        total = int(length.sum())
        offset = np.repeat(start - (np.cumsum(length) - length), length)
        rows = offset + np.arange(total, dtype=np.int64)
        docs = np.repeat(self.run_doc[a:b] - self.run_doc[a], length)
        return rows, docs


def document_runs(index: IdIndex) -> dict[str, np.ndarray]:
    """The runs of equal document key in input order: ``start``, ``len``, ``chars``, ``units``
    (int64) and the key halves ``a``, ``b`` (uint64), each (n_runs,). A run never spans two row
    groups of the index (two adjacent runs of one document are harmless: they sort together)."""
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("start", "len", "chars", "units", "a", "b")}
    for first, g in index.iter_groups([DOC_A, DOC_B, IDX_CHARS, IDX_UNITS]):
        a, b = g[DOC_A], g[DOC_B]
        n = len(a)
        if n == 0:
            continue
        starts = np.flatnonzero(np.r_[True, (a[1:] != a[:-1]) | (b[1:] != b[:-1])])
        parts["start"].append(starts + first)
        parts["len"].append(np.diff(np.r_[starts, n]))
        parts["chars"].append(np.add.reduceat(g[IDX_CHARS].astype(np.int64), starts))
        parts["units"].append(np.add.reduceat(g[IDX_UNITS].astype(np.int64), starts))
        parts["a"].append(a[starts])
        parts["b"].append(b[starts])
    return {k: (np.concatenate(v) if v else np.zeros(0, dtype=np.uint64 if k in "ab" else np.int64))
            for k, v in parts.items()}


def plan_batches(index: IdIndex, batch_chars: int, shard: tuple[int, int] | None = None,
                 shard_of: Callable[[np.ndarray, int], np.ndarray] | None = None) -> BatchPlan:
    """Plan the batches of ``index`` (see the module docstring). ``shard=(i, N)`` keeps the documents
    whose :func:`ddpcore.engines.run.shard_of_documents` is ``i``; ``shard_of(first_rows, N)`` gives
    that shard for the documents starting at ``first_rows`` (sorted input rows; it reads their ids).
    D174 when no document falls in the shard."""
    runs = document_runs(index)
    n_runs = len(runs["start"])
    # documents: runs grouped by key; lexsort is stable, so a group's first run is its first row
    by_key = np.lexsort((runs["b"], runs["a"]))
    ka, kb = runs["a"][by_key], runs["b"][by_key]
    new_group = np.r_[True, (ka[1:] != ka[:-1]) | (kb[1:] != kb[:-1])] if n_runs else np.zeros(0, dtype=bool)
    del ka, kb
    group_sorted = np.cumsum(new_group) - 1
    group_first_row = runs["start"][by_key[new_group]]
    first_row_of_run = np.empty(n_runs, dtype=np.int64)
    first_row_of_run[by_key] = group_first_row[group_sorted]
    del by_key, group_sorted, new_group
    n_docs = len(group_first_row)
    # processing order: documents by first row (first appearance); a document's runs in input order
    if n_runs and np.any(first_row_of_run[1:] < first_row_of_run[:-1]):
        order = np.argsort(first_row_of_run, kind="stable")
        runs = {k: v[order] for k, v in runs.items()}
        first_row_of_run = first_row_of_run[order]
        del order
    new_doc = np.r_[True, first_row_of_run[1:] != first_row_of_run[:-1]] if n_runs else np.zeros(0, dtype=bool)
    run_doc = np.cumsum(new_doc) - 1
    doc_first_row = first_row_of_run[new_doc]
    if shard is not None:
        assert shard_of is not None
        mine = shard_of(doc_first_row, shard[1]) == shard[0]
        if not mine.any():
            raise DDPUsageError(f"--shard {shard[0]}/{shard[1]}: no document of the input hashes to this shard "
                                f"(the input has {n_docs} documents); use fewer shards", code="D174")
        keep = mine[run_doc]
        runs = {k: v[keep] for k, v in runs.items()}
        renumber = np.cumsum(mine) - 1
        run_doc = renumber[run_doc[keep]]
        doc_first_row = doc_first_row[mine]
        new_doc = np.r_[True, run_doc[1:] != run_doc[:-1]]
    doc_start_run = np.flatnonzero(new_doc)
    doc_chars = np.add.reduceat(runs["chars"], doc_start_run) if len(doc_start_run) else np.zeros(0, np.int64)
    batch_of_doc = batch_of_documents(doc_chars, batch_chars)
    n_batches = int(batch_of_doc[-1]) + 1 if len(batch_of_doc) else 0
    batch_doc_bounds = np.searchsorted(batch_of_doc, np.arange(n_batches + 1))
    batch_runs = np.r_[doc_start_run, len(run_doc)][batch_doc_bounds].astype(np.int64)
    cut = batch_runs[:-1]
    seg = np.add.reduceat(runs["len"], cut) if n_batches else np.zeros(0, np.int64)
    units = np.add.reduceat(runs["units"], cut) if n_batches else np.zeros(0, np.int64)
    return BatchPlan(runs["start"].astype(np.int64), runs["len"].astype(np.int64), run_doc.astype(np.int64),
                     doc_first_row.astype(np.int64), batch_runs, seg.astype(np.int64), units.astype(np.int64),
                     n_docs)
