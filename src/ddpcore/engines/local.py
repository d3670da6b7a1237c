"""The local driver: batches of whole documents through the stages, one batch at a time.

:func:`iter_profile` is the one loop every engine shares: for each :class:`Batch` it splits
the segment texts into parse units, parses them (:class:`~ddpcore.pipeline.parse.Parser`), runs
the array stages (:func:`~ddpcore.pipeline.stages.run_stages`) and yields the batch's three
tables. Batches hold whole documents, so every result of a batch (sentence numbers,
entity ids, distances) is the same whatever the batching.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..anchors.rules import RuleSet, get_rules
from ..errors import DDPDataError
from ..io.segments import ROW, SEGMENT_KEY, SegmentColumns
from ..pipeline.parse import Parser
from ..pipeline.stage_times import stage
from ..pipeline.stages import DOC, Batch, RuleArrays, Units, run_stages, view_units

if TYPE_CHECKING:
    import polars as pl

#: default size of a batch, in characters of segment text (whole documents; a longer
#: document is a batch of its own). About 170 k words: large enough for 2 workers to
#: stay busy, small enough that a batch's token arrays stay in the tens of MB.
BATCH_CHARS = 1_000_000
#: sort key of a segment within its document (see :func:`order_segments`); an input column of this name is
#: refused when the input is read (D265, ddpcore.io.segments.RESERVED_COLUMNS)
SEGKEY = SEGMENT_KEY


@dataclass(frozen=True)
class Settings:
    """What a run computes (everything but the parse): distance mode, sentence unit, rules."""

    distance: str = "chained"
    sentence_unit: str = "sentence"
    rules: RuleSet = get_rules(None)
    n_threads: int = 1


@dataclass(frozen=True)
class BatchResult:
    """The tables of one batch: ``segments`` (with ``ROW``, input order within the batch),
    ``anchors`` and ``sentences`` (document order); ``n_units`` parse units in the batch."""

    segments: pl.DataFrame
    anchors: pl.DataFrame
    sentences: pl.DataFrame
    n_units: int


def segment_keys(df: pl.DataFrame, cols: SegmentColumns, all_ints: bool | None = None) -> pl.Series:
    """Sort key of each segment within its document: integer ids (or strings that all parse
    as integers) sort numerically, floats as floats; other ids keep input order (``ROW``).
    ``all_ints``: whether the text ids of the whole input all parse (``df`` is one batch of it;
    None: decide on ``df``)."""
    import polars as pl

    seg = df[cols.segment]
    if seg.dtype.is_integer():
        return seg.cast(pl.Int64)
    if seg.dtype.is_float():
        return seg
    as_int = seg.cast(pl.String).str.strip_chars().cast(pl.Int64, strict=False)
    ok = as_int.null_count() == 0 if all_ints is None else all_ints
    return as_int if ok else df[ROW].cast(pl.Int64)


def order_segments(df: pl.DataFrame, cols: SegmentColumns) -> pl.DataFrame:
    """Sort rows: documents in order of first appearance (``DOC`` = their ordinal), segments
    by :func:`segment_keys` within a document, ties by input row."""
    import polars as pl

    doc_order = df.select(pl.col(cols.document).unique(maintain_order=True)).with_row_index(DOC)
    return (
        df.with_columns(segment_keys(df, cols).alias(SEGKEY))
        .join(doc_order.with_columns(pl.col(DOC).cast(pl.Int64)), on=cols.document, how="left")
        .sort([DOC, SEGKEY, ROW])
    )


def document_batches(doc__seg: np.ndarray, chars__seg: np.ndarray, batch_chars: int = BATCH_CHARS) -> np.ndarray:
    """Batch number (n_seg,) of each segment: consecutive whole documents, a new batch once
    ``batch_chars`` characters are reached. ``doc__seg`` is non-decreasing."""
    n = len(doc__seg)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    doc_start = np.flatnonzero(np.r_[True, doc__seg[1:] != doc__seg[:-1]])
    batch_of_doc = batch_of_documents(np.add.reduceat(chars__seg.astype(np.int64), doc_start), batch_chars)
    return np.repeat(batch_of_doc, np.diff(np.r_[doc_start, n]))


def batch_of_documents(chars__doc: np.ndarray, batch_chars: int = BATCH_CHARS) -> np.ndarray:
    """Batch number (n_doc,) of each document of ``chars__doc`` (characters of each, in processing
    order): consecutive whole documents, a new batch once ``batch_chars`` characters are reached."""
    # greedy over cumulative sizes at document ends (a document never splits); one loop
    # iteration per batch, each a binary search
    cum_end = np.cumsum(chars__doc.astype(np.int64))
    batch_of_doc = np.empty(len(chars__doc), dtype=np.int64)
    start_total, b, i = 0, 0, 0
    while i < len(chars__doc):
        j = int(np.searchsorted(cum_end, start_total + batch_chars, side="left"))
        j = min(max(j, i), len(chars__doc) - 1)
        batch_of_doc[i:j + 1] = b
        start_total = int(cum_end[j])
        i, b = j + 1, b + 1
    return batch_of_doc


def batches_from_frame(df: pl.DataFrame, cols: SegmentColumns, batch_chars: int = BATCH_CHARS) -> Iterator[Batch]:
    """Cut an ordered segment frame (:func:`order_segments`) into batches of whole documents;
    ``DOC`` is renumbered 0.. within each batch."""
    import polars as pl

    if df.height == 0:
        return
    doc = df[DOC].to_numpy().astype(np.int64)
    chars = df[cols.text].str.len_chars().to_numpy()
    batch = document_batches(doc, chars, batch_chars)
    cuts = np.flatnonzero(np.r_[True, batch[1:] != batch[:-1], True])
    for a, b in zip(cuts[:-1], cuts[1:]):
        part = df.slice(int(a), int(b - a))
        first = int(part[DOC][0])
        yield Batch(part.with_columns((pl.col(DOC) - first).alias(DOC)).drop(SEGKEY, strict=False), cols)


def check_line_lengths(batch: Batch, texts: list[str], seg__unit: np.ndarray, max_len: int,
                       source_name: str) -> None:
    """Refuse (D115) a parse unit longer than the parser's limit, naming the input row."""
    if not texts:
        return
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    over = np.flatnonzero(lengths > max_len)
    if len(over):
        s = int(seg__unit[over[0]])
        row = int(batch.frame[ROW][s]) + 1
        raise DDPDataError(
            f"{source_name}, row {row}, column '{batch.cols.text}': a line of {int(lengths[over[0]]):,} characters "
            f"exceeds the parser limit of {max_len:,}; split the segment into smaller segments or lines",
            code="D115",
        )


def iter_profile(
    batches: Iterable[Batch],
    parser: Parser,
    settings: Settings,
    *,
    source_name: str = "<table>",
    progress: Callable[[int], None] | None = None,
    parse: Callable[[list[str], Callable[[int], None] | None], Any] | None = None,
    parsing: Callable[[int], None] | None = None,
    prefetch: bool = False,
) -> Iterator[BatchResult]:
    """Run every stage over ``batches``; yields one :class:`BatchResult` per batch.

    ``parse(texts, progress)`` replaces ``parser.parse`` (the parse cache wraps it);
    ``progress(n)`` is called with the number of parse units finished, and ``parsing(i)``
    before the ``i``-th batch (0-based, iteration order) starts parsing. With ``prefetch``
    (worth it when parsing runs in worker processes) the next batch is parsed, from a helper
    thread that only waits on the workers, while this one goes through the array stages, so
    the workers never idle between batches. Parses still run one at a time, in order.
    """
    parse_fn = parse or parser.parse

    def prepare(i: int, batch: Batch) -> tuple[Batch, Units, Any]:
        units = view_units(batch.frame[batch.cols.text])
        check_line_lengths(batch, units.texts, units.seg__unit, parser.max_length, source_name)
        return batch, units, i

    def do_parse(job: tuple[Batch, Units, Any]) -> Any:
        if parsing is not None:
            parsing(job[2])
        with stage("parse"):
            return parse_fn(job[1].texts, progress)

    rule_arrays: RuleArrays | None = None

    def finish(job: tuple[Batch, Units, Any], toks: Any) -> BatchResult:
        nonlocal rule_arrays
        batch, units, _ = job
        if rule_arrays is None:
            rule_arrays = RuleArrays.compile(settings.rules, has_parser=parser.info()["has_parser"])
        seg, anc, sent = run_stages(batch, toks, units, rule_arrays, distance=settings.distance,
                                    sentence_unit=settings.sentence_unit, n_threads=settings.n_threads)
        return BatchResult(seg, anc, sent, len(units.texts))

    if not prefetch:
        for i, batch in enumerate(batches):
            job = prepare(i, batch)
            del batch
            result = finish(job, do_parse(job))
            del job  # the batch's frame and units are not held while the consumer writes the result
            yield result
            del result  # nor its tables while the next batch is read
        return
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ddp-parse")
    try:
        pending: tuple[tuple[Batch, Units, Any], Any] | None = None
        for i, batch in enumerate(batches):
            job = prepare(i, batch)
            future = pool.submit(do_parse, job)
            if pending is not None:
                yield finish(pending[0], pending[1].result())
            pending = (job, future)
        if pending is not None:
            yield finish(pending[0], pending[1].result())
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
