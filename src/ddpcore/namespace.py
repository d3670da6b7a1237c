"""``DataFrame.ddp`` namespace: ``df.ddp.profile(text_col="source", document_col="document_id")``.

Registered when this module is imported; ``import ddpcore`` imports it automatically
if polars is already loaded, and every ddpcore entry point that loads polars does too.
"""
from __future__ import annotations

from typing import Any

import polars as pl


@pl.api.register_dataframe_namespace("ddp")
class DDPNamespace:
    """DDP methods on a polars DataFrame of segments."""

    def __init__(self, df: pl.DataFrame) -> None:
        self._df = df

    def profile(
        self,
        *,
        document_col: str = "document_id",
        segment_col: str = "segment_id",
        text_col: str = "source",
        domain_col: str = "domain",
        **kwargs: Any,
    ) -> pl.DataFrame:
        """Segment-level DDP of this frame (one row per row, same order); the other keywords are
        those of :func:`ddpcore.profile_anchors`."""
        from .api import profile

        return profile(self._df, document_col=document_col, segment_col=segment_col, text_col=text_col,
                       domain_col=domain_col, **kwargs)

    def profile_anchors(self, **kwargs: Any) -> Any:
        """Segments, anchors and sentences of this frame; see ``ddpcore.profile_anchors``."""
        from .api import profile_anchors

        return profile_anchors(self._df, **kwargs)

    def summarize(self, by: str | None = "domain", document_col: str = "document_id") -> pl.DataFrame:
        """Per-domain DDP summary of a profiled segment frame (needs a ``ddp`` column)."""
        from .api import summarize

        return summarize(self._df, by=by, document_col=document_col)
