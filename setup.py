"""Build the Cython kernels in src/ddpcore/_native/.

One set of compiler directives for every module (scikit-learn's policy). Set
``DDPCORE_DEBUG=1`` at build time to turn bounds checking and wraparound back on.
OpenMP is used when the compiler supports it (``prange`` in the resampling kernels);
set ``DDPCORE_NO_OPENMP=1`` to build single-threaded.
"""
from __future__ import annotations

import os
import sys
from glob import glob
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

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

compile_args = ["-O3"] if not DEBUG else ["-O0", "-g"]
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

setup(ext_modules=cythonize(extensions, compiler_directives=directives, quiet=True))
