"""Every ``bash`` block of the README runs as written (issue 23 §4).

Each block runs with ``bash -e`` in a fresh temporary folder (``ddp`` from this interpreter's
environment on PATH, a temporary parse cache shared by the blocks, a temporary HOME). The first
comment lines of a block say what it needs, in words a reader sees too:

- ``# needs: NAME, NAME (...)``: the files or folders (``NAME/``) the block reads that a user
  brings; this test makes each from the bundled WMT25 English source (:data:`FIXTURES`), with
  synthetic scores keyed to its ids where a score table is needed;
- ``# not tested: REASON``: the block installs something, needs a cluster or data that is not
  bundled; it is skipped with that reason.

A block fails the test when any of its commands exits non-zero. The whole file is slow (several
``ddp profile`` runs; the shared parse cache keeps it to about one parse of the bundled source).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
pytestmark = [pytest.mark.slow, pytest.mark.spacy_model]


# ----------------------------------------------------------------------------- the blocks


def readme_blocks(text: str) -> list[tuple[int, str, str]]:
    """``(line, heading, body)`` of every ```bash block (line: 1-based line of the opening fence)."""
    out, heading, body, start = [], "", None, 0
    for i, line in enumerate(text.splitlines(), 1):
        if body is None and line.startswith("#"):
            heading = line.lstrip("#").strip()
        if body is None and line.strip() == "```bash":
            body, start = [], i
        elif body is not None and line.startswith("```"):
            out.append((start, heading, "\n".join(body) + "\n"))
            body = None
        elif body is not None:
            body.append(line)
    return out


def block_marks(body: str) -> tuple[list[str], str | None]:
    """The ``# needs:`` names and the ``# not tested:`` reason of a block (its leading comment lines)."""
    needs: list[str] = []
    skip = None
    for line in body.splitlines():
        if not line.startswith("#"):
            break
        if m := re.match(r"#\s*needs:\s*([^(]*)", line):
            needs += [n.strip() for n in re.split(r"[,\s]+", m.group(1)) if n.strip()]
        elif m := re.match(r"#\s*not tested:\s*(.*)", line):
            skip = m.group(1).strip()
    return needs, skip


BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------- fixtures from the bundled data


def _bundled():  # type: ignore[no-untyped-def]
    import polars as pl

    return pl.read_ndjson(str(files("ddpcore") / "data" / "wmt25_en_source.jsonl"))


def _rng(name: str):  # type: ignore[no-untyped-def]
    import zlib

    import numpy as np

    return np.random.default_rng(zlib.crc32(name.encode()))


def _short_docs(n: int):  # type: ignore[no-untyped-def]
    """``n`` short (news) documents of the bundled source, for the blocks that only show a flag."""
    import polars as pl

    df = _bundled()
    ids = df.filter(pl.col("domain") == "news")["document_id"].unique(maintain_order=True)[:n]
    return df.filter(pl.col("document_id").is_in(ids.to_list()))


def make_segments(d: Path) -> None:
    _bundled().write_ndjson(d / "segments.jsonl")


def make_corpus(d: Path) -> None:
    _short_docs(10).write_ndjson(d / "corpus.jsonl")


def make_docs_folder(d: Path) -> None:
    df = _short_docs(4)
    (d / "docs").mkdir()
    for (doc,), part in df.group_by("document_id", maintain_order=True):
        (d / "docs" / f"{doc}.txt").write_text("\n\n".join(part["source"].to_list()) + "\n", encoding="utf-8")


def make_in_tsv(d: Path) -> None:
    _short_docs(6).rename({"document_id": "doc", "segment_id": "seg_idx", "source": "src", "domain": "genre"}) \
        .select("doc", "seg_idx", "src", "genre").write_csv(d / "in.tsv", separator="\t")


def _wmt24_rows():  # type: ignore[no-untyped-def]
    """The bundled source without its literary chapters: a profile of it cannot explain rink_rats_chapter1,
    so a README block whose later line overwrites the ddp.parquet an earlier explain reads fails (D116)."""
    import polars as pl

    return _bundled().filter(pl.col("domain") != "literary")


def make_wmt24(d: Path) -> None:
    """The WMT24 layout: one segment per line after a canary line; the .docs file aligned with it."""
    df = _wmt24_rows()
    src = ["CANARY GUID 00000000-0000-0000-0000-000000000000"] + [s.replace("\n", " ") for s in df["source"]]
    (d / "wmt24_en_source.txt").write_text("\n".join(src) + "\n", encoding="utf-8")
    docs = ["canary\tcanary"] + [f"{dom}\t{doc}" for dom, doc in zip(df["domain"], df["document_id"])]
    (d / "wmt24_en.docs").write_text("\n".join(docs) + "\n", encoding="utf-8")


def make_txt_outputs(d: Path) -> None:
    """txt/<system>.txt aligned line by line with the WMT24 source (canary line included)."""
    n = _wmt24_rows().height
    (d / "txt").mkdir()
    for system in ("sysA", "sysB", "sysC"):
        lines = ["canary"] + [f"{system} translation of line {i + 1}" for i in range(n)]
        (d / "txt" / f"{system}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def make_outputs_jsonl(d: Path) -> None:
    import polars as pl

    df = _short_docs(10).select("document_id", "segment_id")
    rows = [df.with_columns(pl.lit(s).alias("system"), (pl.lit(f"{s}: ") + pl.col("document_id") + pl.lit(" ")
                                                         + pl.col("segment_id").cast(pl.String)).alias("text"))
            for s in ("A", "B", "C", "refA")]
    pl.concat(rows).write_ndjson(d / "outputs.jsonl")


def _keys(df):  # type: ignore[no-untyped-def]
    return df.select("document_id", "segment_id")


def make_ratings(d: Path) -> None:
    """Human ratings of DOC and MIX documents: 4 systems x 2 annotators x 2 conditions, 0-100, MIX within
    about a point of DOC (equivalent at margin 3)."""
    import polars as pl

    keys = _keys(_bundled())
    rng = _rng("ratings")
    parts = []
    for k, system in enumerate(("S1", "S2", "S3", "S4")):
        item = 60 + 8 * k + rng.normal(0, 6, keys.height)
        for annotator in ("a1", "a2"):
            for condition in ("DOC", "MIX"):
                score = item + rng.normal(0, 2, keys.height) + (0.3 if condition == "MIX" else 0)
                parts.append(keys.with_columns(pl.lit(system).alias("system"), pl.lit(annotator).alias("annotator"),
                                               pl.lit(condition).alias("condition"), pl.Series("score", score)))
    pl.concat(parts).write_csv(d / "ratings.csv")


def make_scores_csv(d: Path) -> None:
    """Segment scores of base, sysA (better) and sysB (the same): score, comet, chrf, ter."""
    import polars as pl

    keys = _keys(_bundled())
    rng = _rng("scores")
    base = rng.normal(0.7, 0.1, keys.height)
    parts = []
    for system, shift in (("base", 0.0), ("sysA", 0.05), ("sysB", 0.0)):
        noise = rng.normal(0, 0.02, keys.height)
        s = base + shift + noise
        parts.append(keys.with_columns(pl.lit(system).alias("system"), pl.Series("score", s), pl.Series("comet", s),
                                       pl.Series("chrf", 100 * s - 10), pl.Series("ter", 1 - s)))
    pl.concat(parts).write_csv(d / "scores.csv")


def make_doc_mix_scores(d: Path) -> None:
    """Scores of DOC and MIX documents of 5 systems: MIX about 8 points lower (an evaluation that notices)."""
    import polars as pl

    keys = _keys(_bundled())
    rng = _rng("doc_mix")
    systems = ("S1", "S2", "S3", "S4", "S5")
    parts = []
    for k, system in enumerate(systems):
        item = 50 + 6 * k + rng.normal(0, 5, keys.height)
        parts.append(keys.with_columns(pl.lit(system).alias("system"), pl.lit("DOC").alias("condition"),
                                       pl.lit(system).alias("source_system"), pl.Series("score", item)))
        mix = item - 8 + rng.normal(0, 2, keys.height)
        parts.append(keys.with_columns(pl.lit(system).alias("system"), pl.lit("MIX").alias("condition"),
                                       pl.lit(system).alias("source_system"), pl.Series("score", mix)))
    pl.concat(parts).write_parquet(d / "doc_mix_scores.parquet")


def make_scores_tsv(d: Path) -> None:
    """Metric scores under other id names (doc, seg_idx), as the WMT25 metric exports have them."""
    import polars as pl

    keys = _keys(_bundled()).rename({"document_id": "doc", "segment_id": "seg_idx"})
    rng = _rng("scores.tsv")
    parts = [keys.with_columns(pl.lit(s).alias("system"), pl.Series("XCOMET-XL", rng.uniform(0.3, 0.9, keys.height)),
                               pl.Series("MetricX-24-Hybrid-XL", rng.uniform(-10, 0, keys.height)))
             for s in ("S1", "S2")]
    pl.concat(parts).write_csv(d / "scores.tsv", separator="\t")


def make_gum_excerpt(d: Path) -> None:
    dest = d / "tests" / "data" / "gold"
    dest.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "data" / "gold" / "gum_excerpt.tar.xz", dest)


#: README name -> maker (writes it into the block's folder)
FIXTURES: dict[str, Callable[[Path], None]] = {
    "segments.jsonl": make_segments, "corpus.jsonl": make_corpus, "docs/": make_docs_folder, "in.tsv": make_in_tsv,
    "wmt24_en_source.txt": make_wmt24, "wmt24_en.docs": make_wmt24, "txt/": make_txt_outputs,
    "outputs.jsonl": make_outputs_jsonl, "ratings.csv": make_ratings, "scores.csv": make_scores_csv,
    "doc_mix_scores.parquet": make_doc_mix_scores, "scores.tsv": make_scores_tsv,
    "tests/data/gold/gum_excerpt.tar.xz": make_gum_excerpt,
}


# ----------------------------------------------------------------------------- the test


def test_marks_are_understood() -> None:
    """Every block is either run or skipped with its reason, and every name a block needs has a maker."""
    assert len(BLOCKS) >= 10
    for line, _heading, body in BLOCKS:
        needs, _skip = block_marks(body)
        unknown = [n for n in needs if n not in FIXTURES]
        assert not unknown, f"README line {line}: '# needs:' names without a fixture in {__name__}: {unknown}"


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("readme-cache")


@pytest.mark.parametrize(("line", "heading", "body"), BLOCKS, ids=[f"L{ln}-{h[:30]}" for ln, h, _ in BLOCKS])
def test_readme_block_runs_as_written(line: int, heading: str, body: str, tmp_path: Path, shared_cache: Path) -> None:
    needs, skip = block_marks(body)
    if skip is not None:
        pytest.skip(f"README line {line} ({heading}): {skip}")
    done: set[Callable[[Path], None]] = set()
    for name in needs:
        maker = FIXTURES[name]
        if maker not in done:
            maker(tmp_path)
            done.add(maker)
    home = tmp_path / ".home"
    home.mkdir()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "DDPCORE_CACHE": str(shared_cache), "HOME": str(home), "MPLBACKEND": "Agg"}
    env.pop("XDG_CACHE_HOME", None)
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", body], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=1800)
    tail = "\n".join(proc.stderr.splitlines()[-15:])
    assert proc.returncode == 0, f"README line {line} ({heading}) exited {proc.returncode}:\n{tail}"
    assert "Traceback" not in proc.stderr, tail
