"""``ddp agree``: the signature sidecar of text outputs, the --*-col hint, DDP values that are not whole
numbers of sentences >= 0 (text such as NA, negative, fractional, infinite) and ``--within`` named in its
error. Runs are hand-made files written like ``ddp profile`` outputs (no spaCy); every expectation is
computed here from the numbers the test writes."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ddpcore.errors import DDPDataError
from ddpcore.gold.agree import agree

DOCS = ["d1", "d1", "d2", "d2", "d3", "d3"]
SEGS = [0, 1, 0, 1, 0, 1]
DOMAINS = ["news", "news", "news", "news", "fiction", "fiction"]
A = [0, 3, 10, 20, 2, 0]
B = [0, 3, 12, 40, 2, 1]
#: a signature as `ddp profile` writes it, for a run profiled with --document-col doc --segment-col seg
SIG = {"ddpcore": "0.1.0", "pipeline": "default", "pipeline_name": "en_core_web_sm", "pipeline_version": "3.8.0",
       "rules": "refined", "distance": "chained",
       "columns": {"document": "doc", "segment": "seg", "text": "src", "domain": "dom"}}


def _table(ddp: list, *, names: tuple[str, str, str] = ("doc", "seg", "dom")) -> pl.DataFrame:
    d, s, m = names
    return pl.DataFrame({d: DOCS, s: SEGS, m: DOMAINS, "ddp": ddp})


def _parquet(path: Path, df: pl.DataFrame, sig: object = SIG, raw: bytes | None = None) -> Path:
    t = df.to_arrow()
    meta = raw if raw is not None else (None if sig is None else json.dumps(sig).encode())
    t = t.replace_schema_metadata(None if meta is None else {b"ddpcore.signature": meta})
    pq.write_table(t, path)
    return path


def _csv(path: Path, df: pl.DataFrame, sidecar: str | None = None) -> Path:
    df.write_csv(path)
    if sidecar is not None:
        Path(f"{path}.signature.json").write_text(sidecar, encoding="utf-8")
    return path


def _ddp(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "[D999]" not in proc.stderr
    return lines[0]


# ----------------------------------------------------------------------------- bug 1: the sidecar


def test_agree_reads_the_sidecar_of_a_text_run(tmp_path: Path) -> None:
    """A CSV run with its .signature.json (non-default column names) is read as its signature says."""
    a = _parquet(tmp_path / "a.parquet", _table(A))
    b = _csv(tmp_path / "b.csv", _table(B), json.dumps({**SIG, "rules": "paper"}, indent=2))
    x, y = np.array(A, float), np.array(B, float)
    proc = _ddp("agree", "a.parquet", "b.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["n_segments"] == 6
    assert got["pearson"] == pytest.approx(float(np.corrcoef(x, y)[0, 1]))
    assert got["share_identical"] == pytest.approx(float(np.mean(x == y)))  # 3 of 6
    assert got["share_within"] == pytest.approx(float(np.mean(np.abs(y - x) <= 5)))  # 5 of 6
    assert got["signature_b"] == {**SIG, "rules": "paper"}
    news = next(d for d in got["domains"] if d["domain"] == "news")
    assert news["mean_b"] - news["mean_a"] == pytest.approx((12 + 40 + 3 - 10 - 20 - 3) / 4)
    text = _ddp("agree", "a.parquet", "b.csv", "-f", "text", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "B: (no signature)" not in text.stdout
    assert "B: pipeline=default, pipeline_name=en_core_web_sm, pipeline_version=3.8.0, rules=paper, " \
           "distance=chained" in text.stdout
    # the API reads it too
    assert agree(a, b).signature_b["rules"] == "paper"


def test_agree_missing_column_names_the_real_option(tmp_path: Path) -> None:
    """No signature and no document_id column: the hint names --document-col (agree's option)."""
    _parquet(tmp_path / "a.parquet", _table(A))
    _csv(tmp_path / "b.csv", _table(B))  # no sidecar: default names, which the table lacks
    proc = _ddp("agree", "a.parquet", "b.csv", cwd=tmp_path)
    assert proc.returncode == 3
    line = _one_error_line(proc)
    assert "[D110]" in line and "b.csv" in line and "'document_id'" in line
    assert "with --document-col)" in line
    ok = _ddp("agree", "a.parquet", "b.csv", "--document-col", "doc", "--segment-col", "seg",
              "--domain-col", "dom", cwd=tmp_path)
    assert ok.returncode == 0 and json.loads(ok.stdout)["n_segments"] == 6


@pytest.mark.parametrize("content, what", [
    ("{bad", "is not valid JSON"),
    ("[1, 2]", "is not a ddpcore signature (expected a JSON object)"),
    ('{"columns": "oops"}', "'columns'"),
    ('{"columns": {"document": 3}}', "'columns'"),
])
def test_agree_damaged_sidecar_is_a_data_error(tmp_path: Path, content: str, what: str) -> None:
    """A damaged sidecar is D103 naming it (not ignored, not an internal error), even when the table has the
    default column names (before the fix agree ran on such a file as if it had no signature)."""
    _parquet(tmp_path / "a.parquet", _table(A, names=("document_id", "segment_id", "domain")), sig=None)
    _csv(tmp_path / "b.csv", _table(B, names=("document_id", "segment_id", "domain")), content)
    proc = _ddp("agree", "a.parquet", "b.csv", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    line = _one_error_line(proc)
    assert "[D103]" in line and "b.csv.signature.json" in line and what in line
    assert "ddp profile" in line and "--document-col" in line  # what to do


@pytest.mark.parametrize("raw, what", [(b"{bad", "not valid JSON"), (b"[1, 2]", "JSON object"),
                                       (b'{"columns": "oops"}', "'columns'")])
def test_agree_damaged_parquet_signature_is_a_data_error(tmp_path: Path, raw: bytes, what: str) -> None:
    _parquet(tmp_path / "a.parquet", _table(A, names=("document_id", "segment_id", "domain")), raw=raw)
    _parquet(tmp_path / "b.parquet", _table(B))
    proc = _ddp("agree", "a.parquet", "b.parquet", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    line = _one_error_line(proc)
    assert "[D103]" in line and "a.parquet" in line and what in line


# ----------------------------------------------------------------------------- bugs 2 and 3: DDP values


@pytest.mark.parametrize("bad, shown", [(-5, "-5"), (2.5, "2.5"), (float("inf"), "inf"), (-1.0, "-1.0")])
def test_agree_refuses_values_that_are_not_ddp(tmp_path: Path, bad: object, shown: str) -> None:
    """The file, the 1-based data row and the column of the first bad value; exit 3, one line. (Default
    column names and no signature: this checks the values alone.)"""
    row = 4  # data row 4 (index 3), the header not counted
    if isinstance(bad, str):
        values: list = [str(v) for v in B]
    elif isinstance(bad, int):
        values = list(B)
    else:
        values = [float(v) for v in B]
    values[row - 1] = bad
    names = ("document_id", "segment_id", "domain")
    _parquet(tmp_path / "a.parquet", _table(A, names=names), sig=None)
    _csv(tmp_path / "b.csv", _table(values, names=names))
    proc = _ddp("agree", "a.parquet", "b.csv", cwd=tmp_path)
    assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr)
    line = _one_error_line(proc)
    assert "[D445]" in line and "b.csv" in line and f"row {row}," in line and "column 'ddp'" in line
    assert f"{shown} is not a DDP value" in line


def test_agree_api_refuses_bad_ddp_and_counts_them() -> None:
    """Whole numbers stored as floats are DDP values; the first bad row is named, all are counted. (A column of
    text, even of digits, is D781 as in select/sample/stratify/meta: tests/test_hunt15_messages.py.)"""
    kw = {"document": "doc", "segment": "seg", "domain": "dom"}
    r = agree(_table([float(v) for v in A]), _table(list(B)), **kw)
    assert r.n_segments == 6 and r.share_identical == pytest.approx(3 / 6)
    with pytest.raises(DDPDataError, match=r"\[D445\] A, row 2, column 'ddp': -2\.0 is not a DDP value.*3 such row"):
        agree(_table([0.0, -2.0, 2.5, 1.0, 7.0, -3.0]), _table([float(v) for v in B]), **kw)
    with pytest.raises(DDPDataError, match=r"\[D445\] B, row 6, column 'ddp': inf is not a DDP value"):
        agree(_table(A), _table([0.0, 3.0, 12.0, 40.0, 2.0, float("inf")]), **kw)


# ----------------------------------------------------------------------------- bug 4: --within


def test_agree_negative_within_names_the_option(tmp_path: Path) -> None:
    _parquet(tmp_path / "a.parquet", _table(A))
    proc = _ddp("agree", "a.parquet", "a.parquet", "--within", "-1", cwd=tmp_path)
    assert proc.returncode == 2
    line = _one_error_line(proc)
    assert "[D435]" in line and "--within -1" in line
    ok = _ddp("agree", "a.parquet", "a.parquet", "--within", "0", cwd=tmp_path)
    assert ok.returncode == 0 and json.loads(ok.stdout)["share_within"] == 1.0
