"""ddpcore: discourse dependency (DDP) profiling and MT evaluation statistics.

``import ddpcore`` is cheap: spaCy, polars and the compiled kernels are imported on
first use. Public entry points::

    ddpcore.profile(table_or_path, ...) -> polars.DataFrame     # segment-level DDP
    ddpcore.profile_anchors(...) -> (segments, anchors)
    ddpcore.stats                                              # statistics engine

Importing ``polars`` before or after ``ddpcore`` and then calling any ddpcore function
(or ``import ddpcore.namespace``) registers the ``DataFrame.ddp`` namespace.
"""
from __future__ import annotations

import sys
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "profile": ("ddpcore.profiling", "profile"),
    "profile_anchors": ("ddpcore.profiling", "profile_anchors"),
    "ProfileResult": ("ddpcore.profiling", "ProfileResult"),
    "explain": ("ddpcore.profiling", "explain"),
    "summarize": ("ddpcore.profiling", "summarize"),
}

__all__ = ["__version__", *sorted(_LAZY), "stats"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        mod_name, attr = _LAZY[name]
        value = getattr(importlib.import_module(mod_name), attr)
        globals()[name] = value
        return value
    if name == "stats":
        import importlib

        return importlib.import_module("ddpcore.stats")
    raise AttributeError(f"module 'ddpcore' has no attribute {name!r}")


if "polars" in sys.modules:  # cheap: polars is already loaded, so register df.ddp now
    from . import namespace as _namespace  # noqa: F401
