"""ddpcore: discourse dependency (DDP) profiling and MT evaluation statistics.

``import ddpcore`` is cheap: spaCy, polars and the compiled kernels are imported on
first use. Public entry points::

    ddpcore.profile(table_or_path, ...) -> polars.DataFrame     # segment-level DDP
    ddpcore.profile_anchors(...) -> ProfileResult               # .segments, .anchors, .sentences, .signature
    ddpcore.explain(path, document_id=..., segment_id=...)     # why one segment has its DDP
    ddpcore.stats                                              # statistics engine

Importing ``polars`` before or after ``ddpcore`` and then calling any ddpcore function
(or ``import ddpcore.namespace``) registers the ``DataFrame.ddp`` namespace.
"""
from __future__ import annotations

import sys
from typing import Any

from ._version import __version__

_LAZY = {
    "profile": ("ddpcore.api", "profile"),
    "profile_anchors": ("ddpcore.api", "profile_anchors"),
    "ProfileResult": ("ddpcore.api", "ProfileResult"),
    "explain": ("ddpcore.explain", "explain"),
    "summarize": ("ddpcore.api", "summarize"),
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


def __dir__() -> list[str]:
    """``dir(ddpcore)``: the public API (lazy names included) and the module dunders, not the
    helpers this file imports (``sys``, ``Any``, ``annotations``)."""
    return sorted({*__all__, *(n for n in globals() if n.startswith("__") and n.endswith("__"))})


def _register_namespace() -> None:
    from . import namespace  # noqa: F401  (registers DataFrame.ddp)


class _PolarsHook:
    """Meta-path hook: register ``DataFrame.ddp`` right after polars is imported.

    ``import ddpcore`` must not import polars (≈ 0.2 s); this hook waits for the user's
    own ``import polars`` and then registers the namespace, so the import order of the
    two packages does not matter.
    """

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "polars":
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_and_register(module: Any) -> None:
            exec_module(module)
            sys.modules[name] = module
            try:
                _register_namespace()
            except Exception:  # pragma: no cover - never break the user's polars import
                pass

        loader.exec_module = exec_and_register  # type: ignore[method-assign]
        return spec


if "polars" in sys.modules:  # polars already loaded: register df.ddp now (cheap)
    _register_namespace()
elif not any(isinstance(h, _PolarsHook) for h in sys.meta_path):
    sys.meta_path.insert(0, _PolarsHook())
