"""Document-level rows of a profile (``ddp profile --documents PATH``).

One row per document, in the order of the segment output (documents by first appearance)::

    <document column>  the input's document id column (name and values as in the input)
    <domain column>    the document's domain (its first segment's; null without a domain)
    n_segments         u32  segments of the document
    n_sentences        i64  sentences of the document (sum over its segments)
    max_ddp            i64  highest segment DDP (sentences)
    mean_ddp           f64  mean segment DDP (sentences)
    share_ddp_ge_1, share_ddp_ge_5, share_ddp_ge_15
                       f64  share (0-1) of the document's segments with DDP >= 1, 5, 15
    max_ddp_certified  i64  highest segment ``ddp_certified`` (the certified lower bound; sentences)
    mean_ddp_certified f64  mean segment ``ddp_certified`` (sentences)

The two certified columns come last, when the segments have ``ddp_certified`` (a run whose rule set
has a certification model: every ``ddp profile`` run), so the columns before them stay in place.

:func:`document_rows` aggregates any frame of whole documents, so a run computes the rows
batch by batch while it assembles the outputs (a batch always holds whole documents) and
never holds more than one batch's segments and one small row per document.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import schema

if TYPE_CHECKING:
    import polars as pl

    from ..io.segments import SegmentColumns

#: DDP thresholds (sentences) of the ``share_ddp_ge_*`` columns
SHARE_THRESHOLDS = schema.DOCUMENT_SHARE_THRESHOLDS
DOCUMENT_STATS = schema.DOCUMENT_STATS


def document_rows(segments: pl.DataFrame, cols: SegmentColumns) -> pl.DataFrame:
    """One row per document of ``segments`` (a segment output, or a batch part of one: whole
    documents; columns ``cols.document``, ``cols.domain``, ``n_sentences``, ``ddp``, and
    ``ddp_certified`` when there is one), in order of first appearance; columns as in the module docstring."""
    import polars as pl

    dom = pl.col(cols.domain).first() if cols.domain in segments.columns else pl.lit(None, dtype=pl.String)
    ddp, cert = pl.col(schema.DDP), pl.col(schema.DDP_CERTIFIED)
    return segments.group_by(cols.document, maintain_order=True).agg(
        dom.alias(cols.domain),
        pl.len().alias("n_segments"),
        pl.col(schema.N_SENTENCES).sum().cast(pl.Int64).alias("n_sentences"),
        ddp.max().cast(pl.Int64).alias("max_ddp"),
        ddp.cast(pl.Float64).mean().alias("mean_ddp"),
        *((ddp >= t).cast(pl.Float64).mean().alias(f"share_ddp_ge_{t}") for t in SHARE_THRESHOLDS),
        *((cert.max().cast(pl.Int64).alias(schema.DOCUMENT_CERTIFIED_STATS[0]),
           cert.cast(pl.Float64).mean().alias(schema.DOCUMENT_CERTIFIED_STATS[1]))
          if schema.DDP_CERTIFIED in segments.columns else ()),
    )
