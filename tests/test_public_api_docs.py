"""Every public function of the library (not the CLI modules, not the compiled kernels) has type hints on
its parameters and return value and a docstring (the project's standard: "type hints on public functions;
docstrings that state array shapes and units"). Public: a module-level function whose name does not start
with ``_`` defined in that module of ``ddpcore`` (re-exports are checked where they are defined)."""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import ddpcore


def _public_functions() -> list[tuple[str, object]]:
    found = []
    for info in pkgutil.walk_packages(ddpcore.__path__, "ddpcore."):
        if "._native" in info.name or ".cli" in info.name:
            continue
        mod = importlib.import_module(info.name)
        for name, obj in vars(mod).items():
            if name.startswith("_") or not inspect.isfunction(obj) or obj.__module__ != mod.__name__:
                continue
            found.append((f"{info.name}.{name}", obj))
    return found


FUNCTIONS = _public_functions()


def test_the_walk_finds_the_library() -> None:
    # a walk that found nothing would make the two tests below pass vacuously
    names = {n for n, _ in FUNCTIONS}
    assert len(FUNCTIONS) > 300
    assert {"ddpcore.stats.tost.tost_paired", "ddpcore.stats.tost.tost_ind", "ddpcore.curate.select.select"} <= names


def test_public_functions_are_annotated() -> None:
    missing = []
    for name, fn in FUNCTIONS:
        sig = inspect.signature(fn)
        if sig.return_annotation is inspect.Signature.empty:
            missing.append(f"{name}: return")
        missing += [f"{name}: {p.name}" for p in sig.parameters.values()
                    if p.annotation is inspect.Parameter.empty and p.name not in ("self", "cls")]
    assert not missing, "public functions without type hints:\n" + "\n".join(missing)


def test_public_functions_have_docstrings() -> None:
    missing = [name for name, fn in FUNCTIONS if not (inspect.getdoc(fn) or "").strip()]
    assert not missing, "public functions without a docstring:\n" + "\n".join(missing)


@pytest.mark.parametrize("name", ["ddpcore.stats.budget.fmt_bytes", "ddpcore.io.outputs.same_file"])
def test_examples_of_what_was_missing_are_now_covered(name: str) -> None:
    assert name in {n for n, _ in FUNCTIONS}
