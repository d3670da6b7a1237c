"""Signatures: what every ddpcore result records so that it can be reproduced (version, method,
settings), as JSON-safe values. ``SIGNATURE_KEY`` (:mod:`ddpcore.schema`) is where Parquet outputs keep it."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ._version import __version__

def signature(method: str, **options: Any) -> dict[str, Any]:
    """Return the reproducibility signature recorded by every result.

    ``{"ddpcore": <version>, "method": <method>, **options}`` with JSON-safe values
    (see :func:`json_safe`).
    """
    sig: dict[str, Any] = {"ddpcore": __version__, "method": method}
    for key, value in options.items():
        sig[key] = json_safe(value)
    return sig


def json_safe(value: Any) -> Any:
    """Convert numpy scalars/arrays and tuples to Python values; NaN -> ``None``, +-inf -> ``"inf"``/``"-inf"``."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a hard dependency
        np = None  # type: ignore[assignment]
    if np is not None:
        if isinstance(value, np.ndarray):
            return [json_safe(v) for v in value.tolist()]
        if isinstance(value, np.generic):
            value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
