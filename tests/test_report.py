"""``ddp plot`` and ``ddp report``: figures (valid PNG/SVG, titles, axis labels, palette colours) and the
self-contained HTML report rendered in headless Chromium. Profiles and anchors are hand-made Parquet files
with a signature (no spaCy)."""
from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.cli.main import main

pytest.importorskip("matplotlib")
from ddpcore.report.plots import PALETTE  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SIG = {"ddpcore": "0.1.0", "distance": "chained", "rules": "refined", "pipeline_name": "en_core_web_sm",
       "columns": {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"}}


def write_parquet(df: pl.DataFrame, path: Path, sig: dict | None = SIG) -> Path:
    t = df.to_arrow()
    if sig is not None:
        t = t.replace_schema_metadata({b"ddpcore.signature": json.dumps(sig).encode()})
    pq.write_table(t, path)
    return path


@pytest.fixture()
def profile(tmp_path: Path) -> tuple[Path, Path]:
    # document a (news): 3 segments, sentences 0..5; document b (fiction): 2 segments, sentences 0..3
    texts = ["Alice Smith met <Bob> at the station. They talked.",
             "It was late. She & he left.",
             "Later, Alice called him again. He answered.",
             "The ship sailed. The captain slept.",
             "Hours passed. He woke at dawn."]
    seg = pl.DataFrame({
        "document_id": ["a", "a", "a", "b", "b"], "segment_id": [0, 1, 2, 0, 1],
        "domain": ["news", "news", "news", "fiction", "fiction"], "n_sentences": [2, 2, 2, 2, 2],
        "n_tokens": [10, 8, 9, 7, 6], "n_anchors": [2, 2, 2, 1, 1], "ddp": [0, 2, 4, 0, 3],
        "first_sentence": [0, 2, 4, 0, 2], "source": texts})
    s2 = texts[2]
    s4 = texts[4]
    anc = pl.DataFrame({
        "document_id": ["a", "a", "a", "b"], "segment_id": [0, 1, 2, 1], "anchor_index": [0, 0, 0, 0],
        "sentence": [0, 3, 4, 3], "kind": ["entity", "pronoun", "entity", "pronoun"],
        "label": ["PERSON", "she", "PERSON", "he"],
        "text": ["Alice Smith", "She", "Alice", "He"],
        "char_start": [0, 13, s2.index("Alice"), s4.index("He")],
        "char_end": [11, 16, s2.index("Alice") + 5, s4.index("He") + 2],
        "entity_id": [0, 0, 0, 1], "antecedent_kind": ["first_mention", "entity", "entity", "noun"],
        "antecedent_text": [None, "Alice Smith", "Alice Smith", "The captain"],
        "antecedent_sentence": [-1, 0, 0, 1], "reference_sentence": [-1, 0, 0, 0],
        "distance_sentences": [-1, 3, 4, 3]})
    return (write_parquet(seg, tmp_path / "ddp.parquet"),
            write_parquet(anc, tmp_path / "anchors.parquet", {**SIG, "table": "anchors"}))


def stratify_json(profile_path: Path, path: Path) -> Path:
    """A real `ddp stratify` JSON result (two systems, scores falling with DDP)."""
    from ddpcore.stats.stratify import dumps, stratify

    scores = pl.DataFrame({"system": ["sysA"] * 5 + ["sysB"] * 5,
                           "document_id": ["a", "a", "a", "b", "b"] * 2, "segment_id": [0, 1, 2, 0, 1] * 2,
                           "score": [90.0, 80.0, 70.0, 88.0, 75.0, 85.0, 70.0, 60.0, 80.0, 66.0]})
    scores.write_csv(path.with_suffix(".scores.csv"))
    res = stratify(profile_path, path.with_suffix(".scores.csv"), "score", by=["system"], bins=[0, 1, 5, math.inf],
                   n_boot=200, seed=1)
    path.write_text(dumps(res), encoding="utf-8")
    return path


def svg_texts(path: Path) -> str:
    return " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text(encoding="utf-8")))


# ---------------------------------------------------------------- plots


@pytest.mark.parametrize("kind", ["hist", "ecdf"])
def test_plot_profile_png_and_svg(profile, tmp_path: Path, kind: str, capsys) -> None:
    p, _ = profile
    png = tmp_path / f"{kind}.png"
    assert main(["plot", str(p), "--kind", kind, "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == PNG_MAGIC
    svg = tmp_path / f"{kind}.svg"
    assert main(["plot", str(p), "--kind", kind, "--by", "domain", "-o", str(svg)]) == 0
    text = svg.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text and text.rstrip().endswith("</svg>")
    words = svg_texts(svg)
    assert "DDP (sentences)" in words
    assert ("segments" in words) if kind == "hist" else ("share of segments with DDP ≤ x" in words)
    assert "5 segments, 2 documents" in words
    assert "fiction (n=2)" in words and "news (n=3)" in words
    colours = set(c.upper() for c in re.findall(r"#[0-9a-fA-F]{6}", text))
    assert PALETTE[0].upper() in colours and PALETTE[1].upper() in colours  # one palette colour per domain
    assert not list(tmp_path.glob(".*.tmp"))  # atomic write left no temp file


def test_plot_curves(profile, tmp_path: Path) -> None:
    j = stratify_json(profile[0], tmp_path / "strat.json")
    out = tmp_path / "curves.svg"
    assert main(["plot", str(j), "--kind", "curves", "-o", str(out)]) == 0
    words = svg_texts(out)
    assert "DDP (sentences, symlog scale)" in words and "mean score" in words
    assert "score by DDP: bin means with 95% document-bootstrap CIs and LOWESS" in words
    assert re.search(r"sysA \(ρ=[-+]\d\.\d\d\)", words) and "sysB (ρ=" in words
    colours = set(c.upper() for c in re.findall(r"#[0-9a-fA-F]{6}", out.read_text()))
    assert {PALETTE[0].upper(), PALETTE[1].upper()} <= colours
    png = tmp_path / "curves.png"
    assert main(["plot", str(j), "--kind", "curves", "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == PNG_MAGIC


def test_plot_bad_usage(profile, tmp_path: Path, capsys) -> None:
    p, _ = profile
    assert main(["plot", str(p), "--kind", "hist", "-o", str(tmp_path / "x.pdf")]) == 2
    assert "[D672]" in capsys.readouterr().err
    assert main(["plot", str(p), "--kind", "hist", "-o", str(p)]) == 2  # .parquet: not a figure
    assert main(["plot", str(p), "--kind", "hist", "-o", str(tmp_path / "no" / "x.png")]) == 2
    assert "[D677]" in capsys.readouterr().err
    assert main(["plot", str(p), "--kind", "hist", "--by", "genre", "-o", str(tmp_path / "x.png")]) == 2
    assert "[D673]" in capsys.readouterr().err and not (tmp_path / "x.png").exists()
    assert main(["plot", str(p), "--kind", "curves", "-o", str(tmp_path / "x.png")]) == 3
    assert "[D671]" in capsys.readouterr().err


def test_plot_without_matplotlib(profile, tmp_path: Path, monkeypatch, capsys) -> None:
    import builtins

    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    p, _ = profile
    assert main(["plot", str(p), "--kind", "hist", "-o", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "[D670]" in err and "pip install 'ddpcore[plot]'" in err and len(err.strip().splitlines()) == 1
