"""Compiled (Cython) kernels. Each kernel exists once; slow oracles live in tests/.

OpenMP wait policy
------------------
Importing this package (which happens before any kernel module is loaded) sets the OpenMP
runtime's wait policy to *passive* unless the user chose one: idle worker threads sleep at
once instead of spinning. On a busy machine a spinning worker takes the core that the thread
it waits for needs; with GNU OpenMP's default policy a 2-thread bootstrap ran 2.1x slower
than 1 thread at load 3-6 (issue 25, ``benchmarks/threads_table.py``). The runtime reads
``OMP_WAIT_POLICY`` once, when libgomp is loaded, so ddpcore sets the variable, loads libgomp
and restores the environment (child processes see the user's environment unchanged). When
libgomp was already loaded by another package the policy cannot be changed any more;
:data:`WAIT_POLICY` says which case applied. Set ``OMP_WAIT_POLICY=active`` to keep spinning.
"""
from __future__ import annotations

import importlib
import os
from types import ModuleType

from ..errors import DDPNativeError

#: the OpenMP library the kernels link (GNU OpenMP on Linux builds)
_LIBGOMP = "libgomp.so.1"


def _set_wait_policy() -> str:
    """Make the OpenMP runtime start with a passive wait policy unless the user set one.

    Returns how the policy was decided: ``"passive (ddpcore default)"``, ``"<value> (OMP_WAIT_POLICY)"``,
    ``"runtime default (OpenMP already loaded)"`` or ``"none (no OpenMP runtime)"``.
    """
    user = os.environ.get("OMP_WAIT_POLICY")
    if user:
        return f"{user.lower()} (OMP_WAIT_POLICY)"
    import ctypes

    try:
        ctypes.CDLL(_LIBGOMP, mode=getattr(os, "RTLD_NOLOAD", 4) | ctypes.RTLD_GLOBAL)
    except OSError:
        pass  # not loaded yet: its initialisation below reads the variable
    else:
        return "runtime default (OpenMP already loaded)"
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        ctypes.CDLL(_LIBGOMP, mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return "none (no OpenMP runtime)"
    finally:
        del os.environ["OMP_WAIT_POLICY"]
    return "passive (ddpcore default)"


#: how the OpenMP wait policy of this process was decided (see the module docstring)
WAIT_POLICY: str = _set_wait_policy()


def load(name: str) -> ModuleType:
    """Import ``ddpcore._native.<name>`` or raise a clear error when it was not built."""
    try:
        return importlib.import_module(f"ddpcore._native.{name}")
    except ImportError as exc:  # pragma: no cover - only on broken installs
        raise DDPNativeError(
            f"the compiled kernel module ddpcore._native.{name} is missing ({exc}). "
            "ddpcore was installed without building its Cython extensions: reinstall with "
            "`pip install .` in the ddpcore clone (`pip install -e .` for a development install; needs a C++ "
            "compiler) or `python setup.py build_ext --inplace`.",
            code="D901",
        ) from exc
