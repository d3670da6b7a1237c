"""Compiled (Cython) kernels. Each kernel exists once; slow oracles live in tests/."""
from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import DDPNativeError


def load(name: str) -> ModuleType:
    """Import ``ddpcore._native.<name>`` or raise a clear error when it was not built."""
    try:
        return importlib.import_module(f"ddpcore._native.{name}")
    except ImportError as exc:  # pragma: no cover - only on broken installs
        raise DDPNativeError(
            f"the compiled kernel module ddpcore._native.{name} is missing ({exc}). "
            "ddpcore was installed without building its Cython extensions: reinstall with "
            "`pip install -e .` (needs a C++ compiler) or `python setup.py build_ext --inplace`.",
            code="D901",
        ) from exc
