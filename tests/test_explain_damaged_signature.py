"""``ddp explain`` on an output whose signature is damaged: D103 naming the file, exit 3, and nothing else on
stderr (a tester's report: a sidecar ``{"columns": "oops"}``, ``[1, 2]``, a ``reader`` or ``certify`` that is not
an object, and invalid JSON in Parquet metadata were D999)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROWS = {"document_id": ["d", "d"], "segment_id": [0, 1], "source": ["Ann met Bo.", "She left."], "ddp": [0, 1]}


def _explain(cwd: Path, name: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "explain", name, "--document", "d", "--segment",
                           "1"], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("sidecar", "what"), [
    ("{bad", "is not valid JSON"), ("[1, 2]", "expected a JSON object"),
    ('{"columns": "oops"}', "'columns' to map"), ('{"reader": "oops"}', "'reader' to be an object"),
    ('{"certify": 3}', "'certify' to be an object"),
])
def test_damaged_sidecar(tmp_path: Path, sidecar: str, what: str) -> None:
    pl.DataFrame(ROWS).write_csv(tmp_path / "p.csv")
    (tmp_path / "p.csv.signature.json").write_text(sidecar, encoding="utf-8")
    r = _explain(tmp_path, "p.csv")
    assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("ddp explain: error: [D103] p.csv.signature.json") and what in r.stderr


@pytest.mark.parametrize(("text", "what"), [("{bad", "is not valid JSON"), ('{"columns": "oops"}', "'columns' to map")])
def test_damaged_parquet_signature(tmp_path: Path, text: str, what: str) -> None:
    table = pa.table(ROWS).replace_schema_metadata({b"ddpcore.signature": text.encode()})
    pq.write_table(table, tmp_path / "p.parquet")
    r = _explain(tmp_path, "p.parquet")
    assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("ddp explain: error: [D103] p.parquet: the signature in its Parquet metadata")
    assert what in r.stderr and "--rules/--distance/--pipeline" in r.stderr


def test_an_intact_sidecar_is_still_used(tmp_path: Path) -> None:
    pl.DataFrame(ROWS).write_csv(tmp_path / "p.csv")
    (tmp_path / "p.csv.signature.json").write_text(json.dumps({"rules": "paper", "distance": "chained"}))
    r = _explain(tmp_path, "p.csv")
    assert r.returncode == 0, r.stderr
    assert "rules 'paper'" in r.stderr  # "using rules 'paper' ... from p.csv.signature.json"
