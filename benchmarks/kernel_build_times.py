"""Where the kernel build goes: per-module Cython (.pyx -> .cpp) and C++ compile time.

Not a test. Run from a scratch copy of the tree (it rewrites the .cpp files and builds into
``build/ktime``), one module at a time on one core, with the release directives and flags of
setup.py (``DDPCORE_DEBUG=1`` for the debug ones)::

    cp -r setup.py pyproject.toml README.md src /tmp/ktime && cd /tmp/ktime
    python <repo>/benchmarks/kernel_build_times.py

Prints a Markdown table: module, Cython seconds, C++ seconds, .cpp size. Results: benchmarks/kernels_pxd.md
and docs/install.md (where the build time goes; -g vs -g0 vs -O2/-O1).
"""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import time
from glob import glob
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension

sys.path.insert(0, os.getcwd())
DEBUG = os.environ.get("DDPCORE_DEBUG", "0") == "1"


def main() -> None:
    directives = {"language_level": 3, "boundscheck": DEBUG, "wraparound": DEBUG, "initializedcheck": DEBUG,
                  "cdivision": not DEBUG, "nonecheck": DEBUG, "embedsignature": True}
    # setup.py's flags: release builds drop the debug information Python's CFLAGS ask for (-g0), the same
    # machine code; DDPCORE_KTIME_FLAGS="-O2" etc. appends flags to compare (docs/install.md)
    opt = ["-O0", "-g"] if DEBUG else ["-O3", "-g0"]
    opt += os.environ.get("DDPCORE_KTIME_FLAGS", "").split()
    cxx = os.environ.get("CXX", "g++")
    inc = [np.get_include(), sysconfig.get_paths()["include"]]
    Path("build/ktime").mkdir(parents=True, exist_ok=True)
    rows = []
    for pyx in sorted(glob("src/ddpcore/_native/*.pyx")):
        name = "ddpcore._native." + Path(pyx).stem
        ext = Extension(name, [pyx], language="c++")
        t0 = time.perf_counter()
        cythonize([ext], compiler_directives=directives, force=True, quiet=True)
        t1 = time.perf_counter()
        cpp = pyx[:-4] + ".cpp"
        # the flags of the setup.py build log: Python's CFLAGS (-DNDEBUG -g -fwrapv -O3 -Wall), then setup.py's
        cmd = [cxx, "-Wsign-compare", "-DNDEBUG", "-g", "-fwrapv", "-O3", "-Wall", "-fPIC",
               "-DNPY_NO_DEPRECATED_API=NPY_1_7_API_VERSION", *[f"-I{i}" for i in inc], "-c", cpp,
               "-o", f"build/ktime/{Path(pyx).stem}.o", *opt, "-fopenmp"]
        subprocess.run(cmd, check=True, capture_output=True)
        t2 = time.perf_counter()
        rows.append((Path(pyx).stem, t1 - t0, t2 - t1, os.path.getsize(cpp)))
        print(f"{rows[-1][0]}: cython {t1 - t0:.1f} s, c++ {t2 - t1:.1f} s", file=sys.stderr)
    print("| module | Cython s | C++ s | .cpp lines |\n|---|---:|---:|---:|")
    for stem, tc, tx, size in rows:
        lines = sum(1 for _ in open(f"src/ddpcore/_native/{stem}.cpp", encoding="utf-8"))
        print(f"| {stem} | {tc:.1f} | {tx:.1f} | {lines} |")
    tc, tx = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"| **total** | {tc:.1f} | {tx:.1f} | |")


if __name__ == "__main__":
    main()
