"""The per-group DDP summary (``ddp profile``'s table on stdout, :func:`ddpcore.api.summarize`),
built piece by piece so that a run never holds a row per segment for it.

A piece (any rows of a segment table) adds, per group, a histogram of its DDP values (segments per
DDP value) and its distinct documents (64-bit hashes of the ids). The table is computed from these
alone: the mean, the median and the 90th percentile (linear interpolation between order
statistics, numpy's and polars' default) and the maximum are exact functions of the histogram.
Memory: one histogram row per distinct (group, DDP) pair, one document row per (group, document).
When the pieces have ``ddp_certified`` (the certified lower bound), the same figures of it are computed
from a second histogram, in columns named with ``_certified`` (:data:`CERTIFIED_COLUMNS`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import schema

if TYPE_CHECKING:
    from collections.abc import Iterable

    import polars as pl

#: the label of a segment whose group value is null
NULL_GROUP = "(none)"
#: the label of the total row, unless a group has that name (then :func:`distinct_label` of it: ``(all)``)
TOTAL_GROUP = "all"
#: pieces kept before they are merged into one histogram / one document list
_MERGE_EVERY = 64
_G, _D, _N, _DOC = "__group", "__ddp", "__n", "__doc"
#: the figures of a group, for ``ddp`` and (named with ``_certified``) for ``ddp_certified``
FIGURES = ("mean_ddp", "median_ddp", "p90_ddp", "max_ddp", "zero_ddp_share")
CERTIFIED_COLUMNS = ("mean_ddp_certified", "median_ddp_certified", "p90_ddp_certified", "max_ddp_certified",
                     "zero_ddp_certified_share")


def distinct_label(base: str, taken: Iterable[object]) -> str:
    """The label of a row ddpcore adds to a table of groups (a total row, the segments without a domain):
    ``base``, or ``(base)``, ``((base))``... the first that is not among the group names ``taken``, so that
    it never reads as a group of the data (a domain named ``all`` beside the total row ``all``)."""
    names = {str(t) for t in taken if t is not None}
    label = base
    while label in names:
        label = f"({label})"
    return label


def total_note(summary: pl.DataFrame, by: str | None) -> str:
    """One line when the total row (the last row of :meth:`SummaryAccumulator.table`) is not labelled
    :data:`TOTAL_GROUP` because a group has that name; ``""`` otherwise."""
    if not summary.height:
        return ""
    label = str(summary["group"][-1])
    if label == TOTAL_GROUP:
        return ""
    return (f"a {by or 'group'} value is named '{TOTAL_GROUP}', so the summary's total row (every segment) is "
            f"labelled '{label}', and the row '{TOTAL_GROUP}' is that {by or 'group'}")


class SummaryAccumulator:
    """Accumulates :meth:`add`-ed pieces of a segment table; :meth:`table` gives the summary:
    per group of ``by`` (cast to text, nulls as ``"(none)"``; ``None`` or a column the pieces lack:
    no group rows) and an ``all`` row (the total; ``(all)`` when a group is named ``all``:
    :func:`distinct_label`, :func:`total_note`), the columns ``group, documents, segments, mean_ddp,
    median_ddp, p90_ddp, max_ddp, zero_ddp_share`` (DDP in sentences; documents counted by
    ``document_col``), then the same figures of ``cert_col`` (:data:`CERTIFIED_COLUMNS`) when the first
    piece has that column (every piece must then have it)."""

    def __init__(self, by: str | None, document_col: str = schema.DOCUMENT_ID, ddp_col: str = schema.DDP,
                 cert_col: str | None = schema.DDP_CERTIFIED) -> None:
        self.by, self.document_col, self.ddp_col, self.cert_col = by, document_col, ddp_col, cert_col
        self._hist: list[pl.DataFrame] = []
        self._chist: list[pl.DataFrame] = []
        self._docs: list[pl.DataFrame] = []
        self._grouped: bool | None = None
        self._certified: bool | None = None

    def add(self, piece: pl.DataFrame) -> SummaryAccumulator:
        """Count the rows of ``piece`` (needs ``document_col`` and ``ddp_col``; ``by`` when grouped)."""
        import polars as pl

        grouped = self.by is not None and self.by in piece.columns
        if self._grouped is None:
            self._grouped = grouped
        if self._certified is None:
            self._certified = self.cert_col is not None and self.cert_col in piece.columns
        # nulls stay null here: their label (NULL_GROUP, or a distinct one when a group has that name) is given
        # by table(), once every group name is known. A NaN of a float column is no value either, and null: pandas
        # hands its NaN over as null, polars and pyarrow keep it, and one table must give one summary in each
        group = pl.col(self.by) if self._grouped else pl.lit("")
        if self._grouped and piece.schema[self.by].is_float():
            group = group.fill_nan(None)
        group = group.cast(pl.String) if self._grouped else group
        rows = piece.select(group.alias(_G), pl.col(self.ddp_col).cast(pl.Int64).alias(_D),
                            pl.col(self.document_col).hash(seed=0).alias(_DOC))
        self._hist.append(rows.group_by(_G, _D).agg(pl.len().cast(pl.Int64).alias(_N)))
        if self._certified:
            cert = piece.select(group.alias(_G), pl.col(self.cert_col).cast(pl.Int64).alias(_D))
            self._chist.append(cert.group_by(_G, _D).agg(pl.len().cast(pl.Int64).alias(_N)))
        self._docs.append(rows.select(_G, _DOC).unique())
        if len(self._hist) >= _MERGE_EVERY:
            self._hist, self._docs = [self._merged_hist()], [self._merged_docs()]
            self._chist = [self._merged_hist(self._chist)] if self._certified else []
        return self

    def _merged_hist(self, hists: list[pl.DataFrame] | None = None) -> pl.DataFrame:
        import polars as pl

        return pl.concat(self._hist if hists is None else hists).group_by(_G, _D).agg(pl.col(_N).sum())

    def _merged_docs(self) -> pl.DataFrame:
        import polars as pl

        return pl.concat(self._docs).unique()

    def table(self) -> pl.DataFrame:
        """The summary: one row per group (sorted by its text), then the total row, ``all`` (``(all)`` when
        a group is named ``all``)."""
        import polars as pl

        empty = pl.DataFrame(schema={_G: pl.String, _D: pl.Int64, _N: pl.Int64})
        if self._hist:
            hist, docs = self._merged_hist(), self._merged_docs()
        else:
            hist = empty
            docs = pl.DataFrame(schema={_G: pl.String, _DOC: pl.UInt64})
        chist = self._merged_hist(self._chist) if self._chist else empty
        rows = []

        def figures(h: pl.DataFrame) -> tuple[object, ...]:
            valued = h.filter(pl.col(_D).is_not_null())  # a null DDP counts as a segment, not as a value
            return _row("", 0, 0, valued[_D].to_numpy(), valued[_N].to_numpy())[3:]

        def row(name: str, h: pl.DataFrame, d: pl.DataFrame, c: pl.DataFrame) -> tuple[object, ...]:
            return (name, d[_DOC].n_unique(), int(h[_N].sum()), *figures(h),
                    *(figures(c) if self._certified else ()))

        values = hist[_G].unique().to_list() if self._grouped else []
        names = [v for v in values if v is not None]
        groups = [(name, pl.col(_G) == name) for name in names]
        if None in values:  # segments without a group value: "(none)", or "((none))" when a group is so named
            groups.append((distinct_label(NULL_GROUP, names), pl.col(_G).is_null()))
        groups.sort(key=lambda g: g[0])
        for name, where in groups:
            rows.append(row(name, hist.filter(where), docs.filter(where), chist.filter(where)))
        rows.append(row(distinct_label(TOTAL_GROUP, [g[0] for g in groups]), hist.group_by(_D).agg(pl.col(_N).sum()),
                        docs, chist.group_by(_D).agg(pl.col(_N).sum())))
        types = (pl.Float64, pl.Float64, pl.Float64, pl.Int64, pl.Float64)
        return pl.DataFrame(rows, schema={"group": pl.String, "documents": pl.UInt32, "segments": pl.UInt32,
                                          **dict(zip(FIGURES, types)),
                                          **(dict(zip(CERTIFIED_COLUMNS, types)) if self._certified else {})},
                            orient="row")


def _row(name: str, n_docs: int, n_rows: int, ddp: np.ndarray, count: np.ndarray) -> tuple[object, ...]:
    """One summary row from a group's histogram: ``n_rows`` segments, of which ``count[i]`` have the
    (non-null) DDP ``ddp[i]``."""
    keep = count > 0
    ddp, count = ddp[keep].astype(np.int64), count[keep]
    n = int(count.sum())
    if n == 0:
        return (name, n_docs, n_rows, None, None, None, None, None)
    order = np.argsort(ddp, kind="stable")
    ddp, count = ddp[order], count[order]
    cum = np.cumsum(count)

    def quantile(q: float) -> float:
        pos = q * (n - 1)
        lo = int(np.floor(pos))
        hi = min(lo + 1, n - 1)
        v_lo = float(ddp[np.searchsorted(cum, lo, side="right")])
        v_hi = float(ddp[np.searchsorted(cum, hi, side="right")])
        return v_lo + (pos - lo) * (v_hi - v_lo)

    mean = float((ddp * count).sum()) / n
    zero = float(count[ddp == 0].sum()) / n
    return (name, n_docs, n_rows, mean, quantile(0.5), quantile(0.9), int(ddp[-1]), zero)
