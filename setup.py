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

An editable install (``pip install -e '.[extra]'``) builds in a fresh temporary folder each time,
and a non-editable one from a clone regenerates the .cpp files in a fresh build environment, so
both recompiled every kernel to add an extra. ``BuildExtChecked`` reuses the module of the previous
build (in place for an editable build, in build/lib otherwise) when nothing that goes into it
changed (stamp in ``build/ddpcore-stamps/``: SHA-256 of the sources, flags, versions, and of the
module file itself); ``--force`` builds anyway.

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


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


class BuildExtChecked(build_ext):
    """``build_ext`` that first proves the C++ compiler works (one tiny file, milliseconds)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:  # -j/--parallel not given: one compile job per usable core
            self.parallel = BUILD_JOBS

    def build_extensions(self) -> None:
        self._probe_cxx()
        super().build_extensions()

    def build_extension(self, ext: Extension) -> None:
        # pip install -e '.[extra]' and pip install '.[extra]' recompiled every kernel (405 s to add
        # matplotlib). The module of an earlier build is reused when its stamp matches: the same sources
        # (.cpp, .pyx, every .pxd: SHA-256), flags, directives, Cython, numpy, Python and compiler
        # settings, and the module file is still the one that was built.
        if self._reuse_built(ext):
            return
        paths = self._paths(ext)
        before = _mtime(paths[1]) if paths else None
        super().build_extension(ext)
        # only a module this build compiled gets a stamp (setuptools skips one it thinks up to date by
        # timestamps alone, which says nothing about the flags it was built with)
        if paths is not None and _mtime(paths[1]) != before:
            self._write_stamp(ext)

    def _paths(self, ext: Extension) -> tuple[Path, Path, Path] | None:
        if not hasattr(self, "_get_inplace_equivalent"):  # another setuptools: always build
            return None
        inplace, regular = self._get_inplace_equivalent(self.get_finalized_command("build_py"), ext)
        return Path(inplace), Path(regular), Path("build") / "ddpcore-stamps" / f"{ext.name}.json"

    @staticmethod
    def _inputs(ext: Extension) -> dict[str, object]:
        import hashlib

        import Cython

        digest = hashlib.sha256()
        pyx = [str(Path(src).with_suffix(".pyx")) for src in ext.sources]
        for src in sorted(set(ext.sources) | set(pyx) | set(glob("src/ddpcore/_native/*.pxd"))):
            if os.path.exists(src):
                text = Path(src).read_bytes()
                # Cython's metadata block names the build environment's temporary include folder; the
                # settings it records are in this stamp anyway
                a, b = text.find(b"/* BEGIN: Cython Metadata"), text.find(b"END: Cython Metadata */")
                if 0 <= a < b:
                    text = text[:a] + text[b:]
                digest.update(src.encode() + b"\0" + text + b"\0")
        env = {k: os.environ.get(k) for k in ("CC", "CXX", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "LDSHARED")}
        return {"sources_sha256": digest.hexdigest(), "compile_args": list(ext.extra_compile_args),
                "link_args": list(ext.extra_link_args), "directives": directives, "cython": Cython.__version__,
                "numpy": np.__version__, "python": sys.version, "env": env}

    def _reuse_built(self, ext: Extension) -> bool:
        """Reuse the module an earlier build made from the same inputs: in an editable build the in-place
        one (copied to where setuptools expects the build), otherwise the one in build/lib (a non-editable
        ``pip install '.[extra]'`` builds in the clone's build/ folder, which setuptools' timestamp check
        did not reuse once Cython had regenerated the .cpp files)."""
        import hashlib
        import json
        import shutil

        paths = self._paths(ext)
        if paths is None or self.force:
            return False
        inplace, regular, stamp = paths
        source = inplace if getattr(self, "editable_mode", False) else regular
        try:
            rec = json.loads(stamp.read_text(encoding="utf-8"))
            same = rec.get("inputs") == json.loads(json.dumps(self._inputs(ext))) and \
                rec.get("module_sha256") == hashlib.sha256(source.read_bytes()).hexdigest()
        except (OSError, ValueError):
            return False
        if not same:
            return False
        if source != regular:
            regular.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, regular)
        sys.stderr.write(f"ddpcore: {ext.name}: reusing the module built from the same sources and flags "
                         f"({source})\n")
        return True

    def _write_stamp(self, ext: Extension) -> None:
        import hashlib
        import json

        paths = self._paths(ext)
        if paths is None or not paths[1].exists():
            return
        _, regular, stamp = paths
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(json.dumps({"inputs": self._inputs(ext),
                                     "module_sha256": hashlib.sha256(regular.read_bytes()).hexdigest()},
                                    indent=1, sort_keys=True), encoding="utf-8")

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
