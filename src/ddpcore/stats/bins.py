"""DDP bins: ``--bins 0,1,5,15,50,inf`` parsed and applied (half-open ``[e_i, e_{i+1})``, in sentences)."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..errors import DDPUsageError

def parse_bins(text: str | Sequence[float], flag: str = "--bins") -> list[float]:
    """``"0,1,5,15,50,inf"`` -> increasing edges (at least two). Not numbers: D642; not strictly
    increasing: D640; NaN or negative: D640 (DDP is a count of sentences)."""
    if isinstance(text, str):
        try:
            edges = [float(t) for t in text.split(",") if t.strip()]
        except ValueError:
            raise DDPUsageError(f"{flag} {text}: expected numbers separated by commas, e.g. 0,1,5,15,50,inf",
                                code="D642") from None
    else:
        edges = [float(t) for t in text]
    if len(edges) < 2:
        raise DDPUsageError(f"{flag}: give at least two edges (one bin), e.g. 0,1,5,15,50,inf", code="D642")
    if any(math.isnan(e) for e in edges) or edges[0] < 0:
        raise DDPUsageError(f"{flag}: edges must be numbers >= 0 (sentences), got {edges}", code="D640")
    bad = next((i for i in range(1, len(edges)) if not edges[i] > edges[i - 1]), None)
    if bad is not None:
        raise DDPUsageError(f"{flag}: edges must increase, but {edges[bad - 1]:g} is followed by {edges[bad]:g}",
                            code="D640")
    return edges


def bin_of(values: np.ndarray, edges: Sequence[float]) -> np.ndarray:
    """Bin index of each value for half-open bins ``[e_i, e_{i+1})``; -1 outside every bin. Shape (n,)."""
    e = np.asarray(edges, dtype=np.float64)
    b = np.searchsorted(e, values.astype(np.float64), side="right") - 1
    b[(b < 0) | (b >= e.size - 1)] = -1
    return b
