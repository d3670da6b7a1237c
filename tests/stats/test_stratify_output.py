"""``ddp stratify -o/-f`` follow ``ddp stats``: a result file is not compressed (``-o r.json.gz`` is D880,
as ``ddp stats tost -o x.json.gz``), an ``-f`` that disagrees with ``-o``'s extension is D880 (it used to be
ignored: ``-f text -o r.json`` wrote JSON), both checked before any work (no input is read, nothing is
written). Without ``-f`` the extension picks the format.

The expected error line is the one ``ddp stats tost`` prints for the same ``-o``/``-f`` (the shared rule);
the expected TSV is parsed with the csv module and compared with the JSON result's numbers.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.cli.main import main

N = 12


@pytest.fixture()
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    prof = tmp_path / "p.parquet"
    df = pl.DataFrame({"document_id": [f"d{i // 4}" for i in range(N)], "segment_id": [f"s{i}" for i in range(N)],
                       "ddp": [2 * i for i in range(N)]})
    sig = {"columns": {"document": "document_id", "segment": "segment_id"}}
    pq.write_table(df.to_arrow().replace_schema_metadata({b"ddpcore.signature": json.dumps(sig).encode()}), prof)
    scores = tmp_path / "s.csv"
    pl.DataFrame({"document_id": [f"d{i // 4}" for i in range(N)], "segment_id": [f"s{i}" for i in range(N)],
                  "score": [float(i % 5) for i in range(N)], "condition": ["a", "b"] * (N // 2)}).write_csv(scores)
    return prof, scores


def error_line(argv: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(argv)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert out == ""
    return rc, lines[0]


def stats_error(scores: Path, extra: list[str], capsys) -> str:
    rc, line = error_line(["stats", "tost", str(scores), "--a", "a", "--b", "b", "--margin", "0.1", *extra], capsys)
    assert rc == 2 and "[D880]" in line, line
    return line.split("error: ", 1)[1]


@pytest.mark.parametrize("extra", [["-o", "r.json.gz"], ["-o", "r.tsv.gz"], ["-f", "json", "-o", "r.json.gz"],
                                   ["-f", "text", "-o", "r.json"], ["-f", "tsv", "-o", "r.json"],
                                   ["-f", "json", "-o", "r.tsv"], ["-f", "text", "-o", "r.tsv"]],
                         ids=lambda e: "_".join(e))
def test_output_conflicts_are_the_d880_of_ddp_stats(inputs, tmp_path: Path, capsys, monkeypatch, extra) -> None:
    prof, scores = inputs
    monkeypatch.chdir(tmp_path)
    if "text" not in extra:  # ddp stats has no text format: its line for the same -o/-f is the expectation
        want = stats_error(scores, extra, capsys)
    else:
        o = extra[extra.index("-o") + 1]
        ext = o.rsplit(".", 1)[1]
        want = (f"[D880] -o {o}: a .{ext} file cannot hold -f text; use -f {ext}, another extension, "
                "or -o - (stdout) for text")
    rc, line = error_line(["stratify", str(prof), str(scores), "--score-col", "score", "--n-boot", "0", *extra], capsys)
    assert rc == 2
    assert line == f"ddp stratify: error: {want}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.parquet", "s.csv"]  # nothing written


def test_output_is_checked_before_any_input_is_read(tmp_path: Path, capsys) -> None:
    """D880 comes first even when neither input exists (before: the .gz was written, uncompressed)."""
    rc, line = error_line(["stratify", str(tmp_path / "none.parquet"), str(tmp_path / "none.csv"), "--score-col",
                           "score", "-o", str(tmp_path / "r.json.gz")], capsys)
    assert rc == 2 and "[D880]" in line and "drop the .gz" in line
    assert not (tmp_path / "r.json.gz").exists()


def test_gz_is_refused_not_written_uncompressed(inputs, tmp_path: Path, capsys) -> None:
    prof, scores = inputs
    out = tmp_path / "r.json.gz"
    rc, line = error_line(["stratify", str(prof), str(scores), "--score-col", "score", "--n-boot", "0", "-o", str(out)],
                          capsys)
    assert rc == 2 and "[D880]" in line
    assert not out.exists() and not Path(f"{out}.signature.json").exists()
    with pytest.raises(FileNotFoundError):
        gzip.open(out).read()


def test_extension_picks_the_format_and_a_matching_f_is_fine(inputs, tmp_path: Path, capsys) -> None:
    """-o r.tsv (no -f) and -f tsv -o r2.tsv write the same TSV, whose numbers are the JSON result's; -f text
    with -o r.json is refused (it used to write JSON)."""
    prof, scores = inputs
    base = ["stratify", str(prof), str(scores), "--score-col", "score", "--n-boot", "0"]
    assert main([*base, "-o", str(tmp_path / "r.json")]) == 0
    res = json.loads((tmp_path / "r.json").read_text())
    assert main([*base, "-o", str(tmp_path / "r.tsv")]) == 0
    assert main([*base, "-f", "tsv", "-o", str(tmp_path / "r2.tsv")]) == 0
    t1, t2 = (tmp_path / "r.tsv").read_text(), (tmp_path / "r2.tsv").read_text()
    assert t1 == t2
    rows = list(csv.DictReader(io.StringIO(t1), delimiter="\t"))
    bins = [r for r in rows if r["kind"] == "group"]  # one row per bin of the one group
    assert [int(r["bin_n"]) for r in bins] == [b["n"] for b in res["groups"][0]["bins"]]
    assert sum(int(r["bin_n"]) for r in bins) == N
    capsys.readouterr()
    assert main([*base, "-f", "text", "-o", str(tmp_path / "r3.json")]) == 2
    assert "[D880]" in capsys.readouterr().err
    assert not (tmp_path / "r3.json").exists()
