"""Deprecated module path, kept for one release: use :mod:`ddpcore.ddp.validate`."""
from __future__ import annotations

import warnings

from .ddp.validate import (  # noqa: F401
    GoldMetrics, ValidationResult, compare_with_gold, compute_gold_distances, compute_gold_metrics, correlation,
    format_validation_text, plot_validation, profile_gold, validate,
)

warnings.warn("ddpcore.validation is deprecated and will be removed in the next release; use ddpcore.ddp.validate",
              DeprecationWarning, stacklevel=2)
