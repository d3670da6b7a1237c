"""The one-way flow of the package, proved on its imports (issue 20).

Every ``ddpcore`` module belongs to one layer; a module may import (at module level or lazily
inside a function, both count) only from its own layer or a lower one, never from a higher one,
and the import graph between modules has no cycle. A private name (``_x``) is imported only
within its own layer. The layers, lowest first::

    errors, schema, config, _version -> _native -> io -> anchors -> pipeline -> engines
    -> api (api, explain, namespace) -> stats -> curate, gold -> report -> cli

The package root (``ddpcore/__init__.py``) sits above everything: it only re-exports lazily.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ddpcore

PACKAGE = Path(ddpcore.__file__).parent

#: layer of each top-level name under ddpcore (a module or a sub-package), lowest first
LAYERS: list[set[str]] = [
    {"errors", "schema", "config", "_version", "signature", "data"},
    {"_native"},
    {"io"},
    {"anchors"},
    {"pipeline"},
    {"engines"},
    {"api", "explain", "namespace"},
    {"stats"},
    {"curate", "gold"},
    {"report"},
    {"cli"},
    {""},  # the package root
]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, str, int]]:
    """(imported module, imported name or '', line) for every ddpcore import in ``path``."""
    mod = _module_name(path)
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "ddpcore" or target.startswith("ddpcore."):
                for alias in node.names:
                    out.append((target, alias.name, node.lineno))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "ddpcore" or alias.name.startswith("ddpcore."):
                    out.append((alias.name, "", node.lineno))
    return out


MODULES = sorted(PACKAGE.rglob("*.py"))
ALL = {_module_name(p) for p in MODULES}


def _resolve(target: str, name: str) -> str:
    """The module an import really reaches: ``from ddpcore.io import tables`` reaches ``ddpcore.io.tables``."""
    full = f"{target}.{name}" if name else target
    return full if full in ALL else target


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _edges() -> list[tuple[str, str, str, int]]:
    edges = []
    for path in MODULES:
        src = _module_name(path)
        for target, name, line in _imports(path):
            edges.append((src, _resolve(target, name), name, line))
    return edges


def test_every_module_has_a_layer() -> None:
    unknown = sorted({_layer(m) for m in ALL} - set(RANK))
    assert not unknown, f"modules outside every layer: {unknown} (add them to LAYERS in this test)"


def test_no_upward_import() -> None:
    bad = []
    for src, dst, name, line in _edges():
        if RANK[_layer(dst)] > RANK[_layer(src)]:
            bad.append(f"{src}:{line} imports {dst} ({name or 'module'})")
    assert not bad, "imports against the flow:\n" + "\n".join(bad)


def test_no_private_name_across_layers() -> None:
    bad = []
    for src, dst, name, line in _edges():
        if _layer(src) == _layer(dst) or not name:
            continue
        private_name = name.startswith("_") and not name.startswith("__")
        private_module = any(p.startswith("_") and not p.startswith("__") for p in dst.split(".")[2:])
        if private_name or private_module:
            bad.append(f"{src}:{line} imports {dst}.{name}")
    assert not bad, "private names imported across a layer:\n" + "\n".join(bad)


def test_no_import_cycle() -> None:
    graph: dict[str, set[str]] = {m: set() for m in ALL}
    for src, dst, _name, _line in _edges():
        if dst != src and dst in graph and not (src.startswith(dst + ".") and dst + ".__init__" not in ALL):
            # importing one's own parent package for a name defined in its __init__ is an edge too
            graph[src].add(dst)
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("planted", ["upward", "cycle"])
def test_the_checks_catch_a_planted_edge(planted: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walker itself: an upward edge and a 2-cycle planted into the edge list are found."""
    real = _edges()
    extra = [("ddpcore.io.tables", "ddpcore.cli.main", "main", 1)]
    if planted == "cycle":
        extra = [("ddpcore.stats.tost", "ddpcore.stats.bootstrap", "x", 1),
                 ("ddpcore.stats.bootstrap", "ddpcore.stats.tost", "y", 1)]
    monkeypatch.setattr(__import__(__name__), "_edges", lambda: real + extra)
    check = test_no_upward_import if planted == "upward" else test_no_import_cycle
    with pytest.raises(AssertionError):
        check()
