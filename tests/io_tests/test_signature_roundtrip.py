"""Every ``ddp`` command that writes Parquet records its signature under ``ddpcore.signature``.

Each case runs one command on small bundled data (tests/data/, or a few rows built here) with
Parquet outputs, then reads every output back with pyarrow: the schema metadata must hold the
key :data:`ddpcore.schema.SIGNATURE_KEY` (``"ddpcore.signature"``, the key every reader --
merge, select, explain, agree, plot -- looks for), as a JSON object carrying the ddpcore
version. (Issue 19: ``ddp metric-s`` wrote ``"ddpcore_signature"``, a key no reader reads.)
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

import ddpcore
from ddpcore.schema import SIGNATURE_KEY

DATA = Path(__file__).resolve().parents[1] / "data"
MINI = DATA / "wmt25_mini.jsonl"
JUDGEMENTS = DATA / "metric_s_judgements.jsonl"
CONLL = DATA / "gold" / "conll2012" / "tiny.v4_gold_conll"


def test_signature_key_constant():
    assert SIGNATURE_KEY == "ddpcore.signature"


def _ddp(cwd: Path, *argv: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, f"ddp {' '.join(argv)}\n{proc.stderr}"


def _check_signature(path: Path) -> dict:
    meta = pq.read_schema(path).metadata or {}
    keys = sorted(k.decode() for k in meta)
    assert SIGNATURE_KEY.encode() in meta, f"{path.name}: no {SIGNATURE_KEY!r} in the Parquet metadata (keys: {keys})"
    sig = json.loads(meta[SIGNATURE_KEY.encode()])
    assert isinstance(sig, dict), f"{path.name}: signature is not a JSON object"
    assert sig.get("ddpcore") == ddpcore.__version__, f"{path.name}: signature without the ddpcore version: {sig}"
    return sig


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """A folder with the bundled mini test set as Parquet (select/sample write the input's format)
    and a small long table of system outputs for mix."""
    root = tmp_path_factory.mktemp("sigroundtrip")
    pl.read_ndjson(MINI).write_parquet(root / "in.parquet")
    rows = [{"document_id": d, "segment_id": s, "system": sy, "text": f"System {sy} translates {d}, segment {s}."}
            for d in ("d1", "d2") for s in range(3) for sy in ("A", "B", "C")]
    pl.DataFrame(rows).write_parquet(root / "outputs.parquet")
    return root


@pytest.fixture(scope="module")
def profiled(work: Path) -> Path:
    """``ddp profile`` of in.parquet with all four tables as Parquet."""
    _ddp(work, "profile", "in.parquet", "-o", "p.parquet", "--anchors", "p_anchors.parquet", "--sentences",
         "p_sentences.parquet", "--documents", "p_documents.parquet", "-q")
    return work


@pytest.mark.spacy_model
def test_profile_all_tables(profiled: Path):
    for name in ("p.parquet", "p_anchors.parquet", "p_sentences.parquet", "p_documents.parquet"):
        _check_signature(profiled / name)


@pytest.mark.spacy_model
def test_select(profiled: Path):
    _ddp(profiled, "select", "in.parquet", "--profile", "p.parquet", "-o", "selected.parquet", "--min-ddp", "1")
    _check_signature(profiled / "selected.parquet")


@pytest.mark.spacy_model
def test_sample(profiled: Path):
    _ddp(profiled, "sample", "in.parquet", "--profile", "p.parquet", "-o", "sampled.parquet", "--per-bin", "1",
         "--seed", "0")
    _check_signature(profiled / "sampled.parquet")


@pytest.mark.spacy_model
def test_profile_shards_and_merge(profiled: Path):
    tables = ("seg", "anc", "sen", "doc")
    for i in (0, 1):
        _ddp(profiled, "profile", "in.parquet", "--shard", f"{i}/2", "-o", f"seg{i}.parquet", "--anchors",
             f"anc{i}.parquet", "--sentences", f"sen{i}.parquet", "--documents", f"doc{i}.parquet", "-q")
        for t in tables:
            _check_signature(profiled / f"{t}{i}.parquet")
    _ddp(profiled, "merge", *(f"{t}{i}.parquet" for t in tables for i in (0, 1)), "-o", "m_seg.parquet",
         "--anchors", "m_anc.parquet", "--sentences", "m_sen.parquet", "--documents", "m_doc.parquet")
    for t in tables:
        _check_signature(profiled / f"m_{t}.parquet")


def test_mix(work: Path):
    _ddp(work, "mix", "outputs.parquet", "--seed", "0", "-o", "mix.parquet", "--assignment", "assignment.parquet")
    _check_signature(work / "mix.parquet")
    _check_signature(work / "assignment.parquet")


def test_metric_s(work: Path):
    _ddp(work, "metric-s", str(JUDGEMENTS), "--mapping", "paper", "-o", "metric_s.parquet")
    sig = _check_signature(work / "metric_s.parquet")
    assert sig["method"] == "metric_s" and sig["mapping"] == "paper"


@pytest.mark.spacy_model
def test_validate_over_estimates(work: Path):
    _ddp(work, "validate", str(CONLL), "--over-estimates", "over.parquet", "-q")
    _check_signature(work / "over.parquet")
