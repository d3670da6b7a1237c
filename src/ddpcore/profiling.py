"""Deprecated module path, kept for one release: use ``ddpcore.profile`` / ``ddpcore.profile_anchors`` /
``ddpcore.explain``, or :mod:`ddpcore.ddp.profile` and :mod:`ddpcore.ddp.explain`."""
from __future__ import annotations

import warnings

from .ddp.explain import ExplainResult, explain
from .ddp.profile import SIGNATURE_KEY, ProfileResult, profile, profile_anchors, summarize
from .ddp.stages import KIND_NAMES

__all__ = ["ExplainResult", "explain", "SIGNATURE_KEY", "ProfileResult", "profile", "profile_anchors", "summarize",
           "KIND_NAMES"]

warnings.warn("ddpcore.profiling is deprecated and will be removed in the next release; use ddpcore.ddp.profile "
              "(or ddpcore.profile / ddpcore.profile_anchors / ddpcore.explain)", DeprecationWarning, stacklevel=2)
