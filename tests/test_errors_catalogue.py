"""docs/errors.md is the full catalogue of error codes, generated from the source (issue 20).

The test regenerates the catalogue with ``scripts/errors_catalogue.py`` and fails when the
committed page differs (a code added, removed or re-worded without regenerating it), and checks
that every code the source raises is on the page.
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _catalogue():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("errors_catalogue", ROOT / "scripts" / "errors_catalogue.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def test_docs_errors_md_is_current() -> None:
    cat = _catalogue()
    want = cat.render(cat.collect())
    got = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert got == want, "docs/errors.md is out of date: run `python scripts/errors_catalogue.py`"


def test_every_raised_code_is_documented() -> None:
    page = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| (D\d{3}) \|", page, flags=re.M))
    raised = set()
    for p in (ROOT / "src" / "ddpcore").rglob("*.py"):
        raised |= set(re.findall(r'code="(D\d{3})"', p.read_text(encoding="utf-8")))
    raised.discard("D000")
    assert raised - documented == set(), f"codes raised but not in docs/errors.md: {sorted(raised - documented)}"
    assert len(documented) > 200  # the walker found the codes at all (a planted empty collect() fails here)
