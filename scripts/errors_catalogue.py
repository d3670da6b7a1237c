"""Write docs/errors.md, the catalogue of every error code ddpcore raises, from the source itself.

Every ``DDPUsageError / DDPDataError / DDPError(..., code="Dnnn")`` call and every ``[Dnnn]``
literal in ``src/ddpcore`` is one entry: the code, the exit code of its class (2 usage, 3 bad
data, 4 internal / install), the modules that raise it and the message (f-string fields shown as
``{...}``). ``tests/test_errors_catalogue.py`` regenerates the text and fails when the committed
file differs, so a new code cannot land undocumented. Run: ``python scripts/errors_catalogue.py``.
"""
from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "ddpcore"
OUT = ROOT / "docs" / "errors.md"
CODE = re.compile(r"\[?(D\d{3})\]?")
EXIT = {"DDPUsageError": 2, "DDPDataError": 3}
RANGES = [
    ("D0xx", "command line (argument parsing)"),
    ("D1xx", "input files and tables, output paths, runs, shards, resume"),
    ("D2xx", "anchor extraction: spaCy pipelines, rule sets, antecedent weights, workers"),
    ("D3xx", "statistics input, resampling budgets"),
    ("D4xx", "gold coreference and `ddp validate` / `ddp agree`"),
    ("D5xx", "MIX, blindness, plots, Metric-S, WMT system outputs"),
    ("D6xx", "curation (`select`, `sample`), `stratify`, `report`"),
    ("D70x", "`blindness` fallbacks and budgets"),
    ("D71x", "`stratify` joins"),
    ("D72x", "`stats` floors and budgets"),
    ("D73x", "binary or mislabelled text input"),
    ("D74x", "Metric-S records"),
    ("D75x", "the parse cache"),
    ("D76x", "output sets, locks, resume"),
    ("D77x", "Ray, interruption, report inputs"),
    ("D78x", "profiles read back (DDP values), writing outputs"),
    ("D80x–D81x", "`meta`"),
    ("D82x–D83x", "mt-metrics-eval and score readers, corpus metrics (`stats compare`)"),
    ("D84x, D87x, D89x", "`select --evaluate`, `select` options"),
    ("D85x–D86x", "id indexes, cluster-scale Ray, remote files"),
    ("D88x", "result files (`-o` extensions and formats)"),
    ("D90x", "install / build"),
    ("D93x", "`blindness` warnings under `--strict`, plot series, signature sidecars of another file"),
    ("D95x", "`stats compare --corpus-metric` inputs"),
    ("D97x", "column options that name an output column"),
    ("D99x", "internal (D999: a bug, please report it)"),
]


def _render(node: ast.AST | None) -> str:
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{...}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _render(node.left) + _render(node.right)
    return "{...}"


def _func_name(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _subclass_exits() -> None:
    """Add to :data:`EXIT` every error class of ``src/ddpcore`` that derives (at any depth) from a class in it
    (``class RunWriteError(DDPUsageError, OSError)`` exits 2, as its base does)."""
    bases: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                                    for b in node.bases]
    changed = True
    while changed:
        changed = False
        for name, bs in bases.items():
            if name not in EXIT:
                known = [EXIT[b] for b in bs if b in EXIT]
                if known:
                    EXIT[name] = known[0]
                    changed = True


def collect() -> dict[str, dict]:
    _subclass_exits()
    entries: dict[str, dict] = defaultdict(lambda: {"exit": set(), "modules": set(), "messages": []})
    for path in sorted(SRC.rglob("*.py")):
        mod = ".".join(path.relative_to(SRC.parent).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        seen_in_calls: set[int] = set()
        for node in ast.walk(tree):  # docstrings document codes, they do not raise them
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                seen_in_calls.add(id(node.value))
        # helpers of this module that raise a code they are given: their error class, for its exit code
        raises: dict[str, set[int]] = defaultdict(set)
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.Lambda)) and hasattr(fn, "name"):
                for sub in ast.walk(fn):
                    if isinstance(sub, ast.Call) and _func_name(sub) in EXIT:
                        raises[fn.name].add(EXIT[_func_name(sub)])
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):  # {"D823": "message", ...}: codes a helper looks up
                for key, value in zip(node.keys, node.values):
                    if isinstance(key, ast.Constant) and isinstance(key.value, str) and re.fullmatch(r"D\d{3}", key.value):
                        e = entries[key.value]
                        e["modules"].add(mod)
                        msg = _render(value)
                        if msg and msg != "{...}" and msg not in e["messages"]:
                            e["messages"].append(msg)
            if not isinstance(node, ast.Call):
                continue
            for kw in node.keywords:
                if kw.arg == "code" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    code = kw.value.value
                    if not re.fullmatch(r"D\d{3}", code):
                        continue
                    e = entries[code]
                    e["exit"].add(EXIT.get(_func_name(node), 4) if _func_name(node).endswith("Error") else None)
                    e["modules"].add(mod)
                    msg = _render(node.args[0]) if node.args else ""
                    if msg and msg not in e["messages"]:
                        e["messages"].append(msg)
                    seen_in_calls.add(id(kw.value))
            # a code passed positionally to a helper that raises it (``_refuse_first(bad, "D431", lambda r: ...)``)
            for k, arg in enumerate(node.args):
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and re.fullmatch(r"D\d{3}", arg.value):
                    e = entries[arg.value]
                    e["exit"].update(raises.get(_func_name(node)) or {None})
                    e["modules"].add(mod)
                    for other in [*node.args[k + 1:], *node.args[:k][::-1]]:  # the message after the code, else before
                        body = other.body if isinstance(other, ast.Lambda) else other
                        msg = _render(body) if isinstance(body, (ast.Constant, ast.JoinedStr, ast.BinOp)) else ""
                        if msg and msg not in e["messages"]:
                            e["messages"].append(msg)
                            break
                    seen_in_calls.add(id(arg))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in seen_in_calls:
                for m in re.finditer(r"\[(D\d{3})\]", node.value):
                    e = entries[m.group(1)]
                    e["modules"].add(mod)
                    text = node.value[m.end():].strip()
                    if text and text not in e["messages"] and len(e["messages"]) < 3:
                        e["messages"].append(text)
    entries.pop("D000", None)
    return dict(entries)


def render(entries: dict[str, dict]) -> str:
    lines = [
        "# Error codes",
        "",
        "Every error ddpcore raises on purpose is one line starting with its code, `[Dnnn]`, that names the",
        "file, row and column where it can and says what to do. Exit codes: 2 a usage error (bad option or",
        "output path), 3 bad data, 4 a broken install or an internal error (D999: a bug, please report it",
        "with `ddp info`); 1 is a `--fail-on` gate. This page is generated from the source",
        "(`python scripts/errors_catalogue.py`); a test fails when it is out of date.",
        "",
        "| range | area |",
        "|---|---|",
        *[f"| {r} | {a} |" for r, a in RANGES],
        "",
        "| code | exit | raised in | message (`{...}`: filled in at run time) |",
        "|---|---|---|---|",
    ]
    for code in sorted(entries):
        e = entries[code]
        exits = sorted(x for x in e["exit"] if x is not None)
        exit_s = "/".join(str(x) for x in exits) or "—"
        mods = ", ".join(f"`{m.removeprefix('ddpcore.')}`" for m in sorted(e["modules"]))
        msgs = [m.replace("|", "\\|").replace("\n", " ") for m in e["messages"][:2]]
        msg = " · ".join(m if len(m) <= 160 else m[:157] + "..." for m in msgs) or "—"
        lines.append(f"| {code} | {exit_s} | {mods} | {msg} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    entries = collect()
    text = render(entries)
    if "--check" in sys.argv:
        return 0 if OUT.read_text(encoding="utf-8") == text else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({len(entries)} codes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
