"""A DDP-stratified sample of a test set, written verbatim in the input's format (``ddp sample``).

Units are documents (``by="document"``, value = the max DDP of their segments; a sampled document
is kept whole) or segments (``by="segment"``, value = their DDP; each sampled segment is kept with
the earlier segments its DDP reaches into, as ``ddp select --with-context``). Bins are half-open
``[edges[i], edges[i+1])`` in sentences (the last edge may be ``inf``); edges must increase
(D640). Each unit gets a random key from ``numpy.random.Generator(numpy.random.PCG64(seed)).random(n_units)``
(units in order of first appearance in the input); in every bin the ``per_bin`` units with the
smallest keys are taken (all of them when the bin has fewer: the report says the bin cannot be
filled). The same input, profile, bins, N and seed give the same bytes. Output rows keep the
input's order. Units whose value lies outside every bin are never sampled (counted in the report).
"""
from __future__ import annotations

import math
import numbers
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import DDPUsageError
from ..signature import json_safe
from ..io.segments import SegmentColumns
from .select import InputOptions, Matched, base_signature, context_mask, doc_max, keep_summary, kept_counts
from ..stats.bins import bin_of, parse_bins  # noqa: F401  (re-exported)

RNG = "numpy Generator(PCG64(seed)).random(n_units); per bin the per_bin smallest keys"


@dataclass
class SampleResult:
    """``keep`` (bool per input row), ``bins`` (one report dict per bin), the summary and signature."""

    keep: np.ndarray
    bins: list[dict[str, Any]]
    summary: dict[str, Any]
    signature: dict[str, Any] = field(default_factory=dict)
    outside: int = 0
    context_rows: int = 0
    written: list[Any] = field(default_factory=list)  # every file written (Paths; outputs, .docs, sidecars)


def sample_mask(m: Matched, edges: Sequence[float], per_bin: int, by: str, seed: int
                ) -> tuple[np.ndarray, list[dict[str, Any]], int, int]:
    """(keep per input row, per-bin report, units outside every bin, rows added as context)."""
    if per_bin < 1:
        raise DDPUsageError(f"--per-bin must be at least 1, got {per_bin}", code="D641")
    if by not in ("document", "segment"):
        raise DDPUsageError(f"--unit must be document or segment, got {by!r}", code="D641")
    value = doc_max(m.doc, m.ddp) if by == "document" else m.ddp
    n_units = value.size
    try:
        keys = np.random.Generator(np.random.PCG64(int(seed))).random(n_units)
    except (TypeError, ValueError) as exc:
        raise DDPUsageError(f"--seed must be a non-negative integer, got {seed!r} ({exc})", code="D641") from None
    b = bin_of(value, edges)
    n_bins = len(edges) - 1
    order = np.lexsort((keys, b))  # by bin, then key
    bs = b[order]
    first = np.searchsorted(bs, bs, side="left")
    rank = np.arange(n_units) - first
    take_s = (bs >= 0) & (rank < per_bin)
    chosen = np.zeros(n_units, dtype=bool)
    chosen[order[take_s]] = True
    avail = np.bincount(b[b >= 0], minlength=n_bins)
    got = np.bincount(b[chosen], minlength=n_bins)
    if by == "document":
        keep = chosen[m.doc]
        added = 0
    else:
        keep = context_mask(m, chosen)
        added = int(keep.sum() - chosen.sum())
    report = [{"low": float(edges[i]), "high": float(edges[i + 1]), "available": int(avail[i]), "target": int(per_bin),
               "achieved": int(got[i]), "filled": bool(got[i] >= per_bin)} for i in range(n_bins)]
    return keep, report, int((b < 0).sum()), added


def sample(source: str | os.PathLike[str], profile: str | os.PathLike[str], bins: str | Sequence[float],
           per_bin: int, *, by: str = "document", seed: int = 0, target: Any = None,
           cols: SegmentColumns | None = None, reader: str = "table", docs: str | os.PathLike[str] | None = None,
           outputs: str | os.PathLike[str] | None = None, outputs_to: str | os.PathLike[str] | None = None,
           ddp_col: str = "ddp") -> SampleResult:
    """Draw the stratified sample and (with ``target``) write it; see the module docstring. ``ddp_col``:
    the profile's DDP column the bins, the context and the summary use (``--ddp-col``). ``per_bin`` (units
    per bin, documents or segments as ``by``) and ``seed`` are whole numbers, as ``--per-bin``/``--seed``
    (a fraction or a text is D641, not rounded: ``per_bin=2.5`` drew 3 units a bin and recorded 2)."""
    edges = parse_bins(bins)
    for flag, value in (("--per-bin", per_bin), ("--seed", seed)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise DDPUsageError(f"{flag} must be a whole number, got {value!r} ({flag[2:].replace('-', '_')}= in "
                                "Python)", code="D641")
    if per_bin < 1:
        raise DDPUsageError(f"--per-bin must be at least 1, got {per_bin}", code="D641")
    io = InputOptions(cols, reader, docs, ddp_col, outputs, outputs_to)
    io.check_unit(by)
    index, prof, m = io.prepare(source, profile)
    keep, report, outside, added = sample_mask(m, edges, per_bin, by, seed)
    summary = keep_summary(m, keep, ddp_col)
    sig = {**base_signature("sample", source, prof, index), "bins": [_edge(e) for e in edges],
           "per_bin": int(per_bin), "by": by, "seed": int(seed), "rng": RNG,
           "report": json_safe(report),  # an open last bin's "high" is "inf", as in "bins": valid JSON
           "outside_bins": outside,
           "context_rows": added, "kept": kept_counts(summary)}
    return SampleResult(keep, report, summary, sig, outside, added, io.write(index, m, keep, target, sig))


def _edge(e: float) -> float | str:
    return "inf" if math.isinf(e) else e


def format_report(res: SampleResult, by: str) -> str:
    """One line per bin: target vs achieved, and which bins cannot be filled."""
    unit = "documents" if by == "document" else "segments"
    lines = [f"bin [low, high)   available  target  achieved ({unit})"]
    for r in res.bins:
        hi = "inf" if math.isinf(r["high"]) else f"{r['high']:g}"
        rng = f"[{r['low']:g}, {hi})"
        note = "" if r["filled"] else f"  cannot be filled: only {r['available']} {unit} in this bin"
        lines.append(f"{rng:17s} {r['available']:9d} {r['target']:7d} {r['achieved']:9d}{note}")
    if res.outside:
        lines.append(f"{res.outside} {unit} lie outside every bin (not sampled)")
    if res.context_rows:
        lines.append(f"{res.context_rows} earlier segments added as context of the sampled segments")
    return "\n".join(lines)


__all__ = ["SampleResult", "bin_of", "format_report", "parse_bins", "sample", "sample_mask"]
