"""CSV/TSV columns of integers written otherwise than plainly ("03", "007", "+3") are read as text, so that
ids such as "03" and "3" stay two ids (a tester's report: two documents merged into one, exit 0)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore.io.scores import scan_scores
from ddpcore.io.tables import PLAIN_INT, first_not_plain_int, iter_csv_chunks, read_table


def _plain_by_loop(value: str) -> bool:
    """Independent oracle: the text is what ``str(int(value))`` gives back (Python's own integer form)."""
    try:
        return str(int(value)) == value and value.strip() == value and not value.startswith("+")
    except ValueError:
        return False


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.from_regex(r"\A[+-]?0*[0-9]{1,4}\Z"), st.none()), min_size=1, max_size=30))
def test_first_not_plain_int_matches_python(values: list[str | None]) -> None:
    want = next((i for i, v in enumerate(values) if v is not None and not _plain_by_loop(v)), None)
    assert first_not_plain_int(pl.Series(values, dtype=pl.String)) == want


@pytest.mark.parametrize(("text", "plain"), [("0", True), ("-7", True), ("120", True), ("03", False),
                                             ("+3", False), ("-0", False), ("00", False), ("1e3", False)])
def test_plain_int_pattern(text: str, plain: bool) -> None:
    assert bool(re.match(PLAIN_INT, text)) is plain


def _write(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("where", ["first", "late"])
def test_padded_ids_stay_text_in_every_reader(tmp_path: Path, where: str) -> None:
    """The whole-file reader, the chunked reader and the lazy score scan agree; a zero-padded id after
    30 plain ones (beyond the first chunk) still makes the column text, not the number 123."""
    rows = [f"{i},{i},{i * 0.5}" for i in range(30)]
    rows.insert(0 if where == "first" else 30, "0123,5,1.0")
    p = _write(tmp_path / "t.csv", "document_id,segment_id,score", rows)
    whole = read_table(p)
    chunked = pl.concat([df for df, _ in iter_csv_chunks(p, "csv", chunk_rows=7)])
    lazy = scan_scores(p).collect()
    for df in (whole, chunked, lazy):
        assert df.schema["document_id"] == pl.String and df.schema["segment_id"] == pl.Int64
        assert df.schema["score"] == pl.Float64
        assert "0123" in df["document_id"].to_list() and "123" not in df["document_id"].to_list()
        assert df["document_id"].n_unique() == 31
    assert whole.equals(chunked) and whole.equals(lazy)


def test_plain_integers_keep_their_type(tmp_path: Path) -> None:
    p = _write(tmp_path / "t.tsv", "document_id\tsegment_id\tscore", ["1\t2\t0.5", "-3\t0\t1"])
    for df in (read_table(p), pl.concat([d for d, _ in iter_csv_chunks(p, "tsv")]), scan_scores(p).collect()):
        assert df.schema["document_id"] == pl.Int64 and df["document_id"].to_list() == [1, -3]


def _ddp(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DDPCORE_CACHE": str(cwd / "cache")}
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env=env)


def test_profile_keeps_documents_03_and_3_apart(tmp_path: Path) -> None:
    """The tester's case: before the fix every id became the integer 3, one document, and "She" in
    document 3 was measured back to "Mary Smith" of document 03."""
    _write(tmp_path / "in.csv", "document_id,segment_id,source",
           ['03,0,"Mary Smith went to Paris."', '03,1,"It was cold."', '3,2,"She liked the city."',
            '3,3,"Mary came back later."'])
    r = _ddp("profile", "in.csv", "-o", "out.parquet", "--no-cache", "-j", "1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert out["document_id"].to_list() == ["03", "03", "3", "3"]
    r = _ddp("explain", "in.csv", "--document", "3", "--segment", "2", "-f", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Mary Smith" not in r.stdout  # the other document's name is no antecedent
    r = _ddp("explain", "in.csv", "--document", "03", "--segment", "0", "-f", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["document"] == "03"
