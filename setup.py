"""Build the Cython kernels in src/ddpcore/_native/.

One set of compiler directives for every module (scikit-learn's policy). Set
``DDPCORE_DEBUG=1`` at build time to turn bounds checking and wraparound back on.
OpenMP is used when the compiler supports it (``prange`` in the resampling kernels);
set ``DDPCORE_NO_OPENMP=1`` to build single-threaded.

Code shared by several kernels lives once in ``src/ddpcore/_native/*.pxd`` (``kinds``,
``hashsets``, ``pcg64``, ``threads``: cdef inline functions, enums and C helpers, nothing to
build on its own), ``cimport``-ed relatively by the ``.pyx`` modules. The same directives and
the debug switch apply to that code in every module that cimports it, and ``cythonize``
re-generates a module whenever a ``.pxd`` it cimports changes.

Before building, a trivial C++ file is compiled with the configured compiler; when that fails
the build stops with one message naming what to install, instead of pip's raw
"Could not build wheels".

Build time (``benchmarks/kernel_build_times.py``, docs/install.md): the modules are Cythonized and
compiled in parallel, one job per core this process may use (``DDPCORE_BUILD_JOBS=N`` for another
number; ``python setup.py build_ext -j N`` still wins), and release builds add ``-g0``: Python's own
CFLAGS carry ``-g``, and the debug information was most of the compile time and 85 % of every ``.so``
while the machine code is byte-identical with and without it (``objdump -d`` of every module), so no
kernel changes speed. ``DDPCORE_DEBUG=1`` keeps ``-O0 -g``.
"""
from __future__ import annotations

import os
import sys
from glob import glob
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NO_COMPILER = """
==============================================================================
ddpcore: no working C++ compiler found ({detail}).

ddpcore compiles its Cython kernels at install time and needs a C++ compiler:
  Debian/Ubuntu:  sudo apt install g++
  Fedora/RHEL:    sudo dnf install gcc-c++
  macOS:          xcode-select --install
  Windows:        "Desktop development with C++" from the Visual Studio Build Tools
Then run the install again (pip install -e .). A different compiler can be
chosen with the CXX/CC environment variables.
==============================================================================
"""


class BuildExtChecked(build_ext):
    """``build_ext`` that first proves the C++ compiler works (one tiny file, milliseconds)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:  # -j/--parallel not given: one compile job per usable core
            self.parallel = BUILD_JOBS

    def build_extensions(self) -> None:
        self._probe_cxx()
        super().build_extensions()

    def _probe_cxx(self) -> None:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="ddpcore-cxx-probe-") as tmp:
            src = os.path.join(tmp, "probe.cpp")
            with open(src, "w", encoding="utf-8") as fh:
                fh.write("#include <vector>\nint main() { std::vector<int> v(1); return v[0]; }\n")
            try:
                self.compiler.compile([src], output_dir=tmp)
            except Exception as exc:  # CompileError, DistutilsExecError, a missing executable (OSError)
                detail = " ".join(str(exc).split()) or type(exc).__name__
                sys.stderr.write(NO_COMPILER.format(detail=detail[:300]))
                raise SystemExit("ddpcore: a C++ compiler is required to build (see the message above)") from None

DEBUG = os.environ.get("DDPCORE_DEBUG", "0") == "1"
OPENMP = os.environ.get("DDPCORE_NO_OPENMP", "0") != "1" and sys.platform.startswith("linux")

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": not DEBUG,
    "nonecheck": DEBUG,
    "embedsignature": True,
}

def _build_jobs() -> int:
    """``DDPCORE_BUILD_JOBS``, else the cores this process may run on (CPU affinity), at least 1."""
    env = os.environ.get("DDPCORE_BUILD_JOBS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise SystemExit(f"ddpcore: DDPCORE_BUILD_JOBS={env!r} is not a whole number of jobs") from None
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


BUILD_JOBS = _build_jobs()
# -g0 after Python's CFLAGS (-g ... -O3): no debug information, the same machine code
compile_args = ["-O3", "-g0"] if not DEBUG else ["-O0", "-g"]
link_args: list[str] = []
if OPENMP:
    compile_args.append("-fopenmp")
    link_args.append("-fopenmp")

extensions = []
for pyx in sorted(glob("src/ddpcore/_native/*.pyx")):
    name = "ddpcore._native." + Path(pyx).stem
    extensions.append(
        Extension(
            name,
            [pyx],
            include_dirs=[np.get_include()],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
            extra_compile_args=compile_args,
            extra_link_args=link_args,
            language="c++",
        )
    )

# Cythonize in worker processes only where they fork (a spawned worker would re-run this file)
CYTHON_JOBS = BUILD_JOBS if sys.platform.startswith("linux") else 0
setup(
    ext_modules=cythonize(extensions, compiler_directives=directives, quiet=True, nthreads=CYTHON_JOBS),
    cmdclass={"build_ext": BuildExtChecked},
)
