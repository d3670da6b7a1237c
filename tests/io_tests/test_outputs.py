"""ddpcore.io.outputs.check_outputs: every output path is checked before any work (issue 7)."""
from __future__ import annotations

import gzip
import json
import os
import sys

import polars as pl
import pytest

from ddpcore.errors import DDPUsageError
from ddpcore.io.outputs import check_outputs, sidecar_path
from ddpcore.io.tables import read_table, remove_stale_temps, write_tables_atomic


def _code(exc_info) -> str:
    return str(exc_info.value).split("]")[0].lstrip("[")


def _refused(code, outputs, inputs=(), **kw):
    with pytest.raises(DDPUsageError) as exc:
        check_outputs(outputs, inputs, **kw)
    assert _code(exc) == code, str(exc.value)
    return str(exc.value)


def test_valid_outputs_give_targets(tmp_path):
    ts = check_outputs([("-o", tmp_path / "a.parquet"), ("--anchors", tmp_path / "b.csv.gz"), ("--x", None)],
                       [tmp_path / "in.jsonl"])
    assert [(t.option, t.format, t.gzip) for t in ts] == [("-o", "parquet", False), ("--anchors", "csv", True)]
    assert ts[0].sidecar is None
    assert ts[1].sidecar == tmp_path / "b.csv.gz.signature.json"


def test_unknown_extension(tmp_path):
    msg = _refused("D101", [("-o", tmp_path / "out.xlsx")])
    assert "out.xlsx" in msg and ".xlsx" in msg and ".parquet" in msg
    _refused("D101", [("-o", tmp_path / "noext")])


def test_format_not_allowed_here(tmp_path):
    _refused("D101", [("-o", tmp_path / "a.parquet")], formats=("csv", "json"))


def test_parquet_gz_refused(tmp_path):
    assert "drop the .gz" in _refused("D136", [("-o", tmp_path / "a.parquet.gz")])


def test_parent_missing_or_a_file(tmp_path):
    msg = _refused("D130", [("-o", tmp_path / "nope" / "a.csv")])
    assert "does not exist" in msg and "mkdir" in msg
    (tmp_path / "afile").write_text("x")
    msg = _refused("D130", [("-o", tmp_path / "afile" / "o.parquet")])
    assert "is a file" in msg
    msg = _refused("D130", [("-o", tmp_path / "afile" / "deeper" / "o.parquet")])
    assert "afile is a file" in msg


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root ignores permissions")
def test_parent_not_writable(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        assert "not writable" in _refused("D131", [("-o", ro / "a.csv")])
    finally:
        ro.chmod(0o755)


def test_output_is_existing_folder(tmp_path):
    (tmp_path / "d.parquet").mkdir()
    assert "existing folder" in _refused("D132", [("-o", tmp_path / "d.parquet")])


@pytest.mark.parametrize("name", ["in.jsonl", "in.csv", "in.parquet"])
def test_output_is_input(tmp_path, name):
    inp = tmp_path / name
    inp.write_text("x")
    _refused("D133", [("-o", inp)], [inp])
    _refused("D133", [("-o", tmp_path / "ok.parquet"), ("--anchors", inp)], [inp])
    # the same file through another spelling, a symlink and a hard link
    _refused("D133", [("-o", tmp_path / "." / name)], [inp])
    (tmp_path / f"link-{name}").symlink_to(inp)
    _refused("D133", [("-o", tmp_path / f"link-{name}")], [inp])
    os.link(inp, tmp_path / f"hard-{name}")
    _refused("D133", [("-o", tmp_path / f"hard-{name}")], [inp])


def test_output_inside_input_folder_is_fine(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("x")
    check_outputs([("-o", tmp_path / "docs" / "ddp.csv")], [tmp_path / "docs"])


def test_sidecar_may_not_hit_an_input_or_output(tmp_path):
    inp = tmp_path / "o.csv.signature.json"
    inp.write_text("[]")
    _refused("D133", [("-o", tmp_path / "o.csv")], [inp], sidecars=True)
    _refused("D134", [("-o", tmp_path / "o.csv"), ("--anchors", tmp_path / "o.csv.signature.json")], sidecars=True)
    check_outputs([("-o", tmp_path / "o.csv")], [inp], sidecars=False)


def test_two_outputs_one_path(tmp_path):
    msg = _refused("D134", [("-o", tmp_path / "o.parquet"), ("--anchors", tmp_path / "o.parquet")])
    assert "-o" in msg and "--anchors" in msg
    (tmp_path / "x").mkdir()
    _refused("D134", [("-o", tmp_path / "o.parquet"), ("--anchors", tmp_path / "x" / ".." / "o.parquet")])
    (tmp_path / "real.csv").write_text("a\n1\n")
    (tmp_path / "alias.csv").symlink_to(tmp_path / "real.csv")
    assert "same file" in _refused("D134", [("-o", tmp_path / "real.csv"), ("--sentences", tmp_path / "alias.csv")])


def test_stdout(tmp_path):
    (t,) = check_outputs([("-o", "-")], stdout_format="jsonl")
    assert t.stdout and t.path is None and t.format == "jsonl" and t.sidecar is None
    _refused("D135", [("-o", "-")])  # command does not allow stdout
    _refused("D135", [("-o", "-")], stdout_format="parquet")
    assert "standard output" in _refused("D135", [("-o", "-"), ("--anchors", "-")], stdout_format="csv")


def test_gz_output_roundtrip_and_sidecar(tmp_path):
    df = pl.DataFrame({"document_id": ["d", "d"], "segment_id": [0, 1], "source": ["A.", "B."]})
    out, anchors = tmp_path / "o.csv.gz", tmp_path / "a.parquet"
    write_tables_atomic([(df, out), (df, anchors)], metadata={"k": "v"}, sidecar=json.dumps({"rules": "paper"}))
    assert gzip.decompress(out.read_bytes()).startswith(b"document_id,segment_id,source")
    assert read_table(out).equals(df)
    side = json.loads(sidecar_path(out).read_text())
    assert side.pop("data")["bytes"] == out.stat().st_size  # the stamp of its data file (io.sidecars)
    assert side == {"rules": "paper"}
    assert not sidecar_path(anchors).exists()  # Parquet keeps it in its metadata
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet", "o.csv.gz", "o.csv.gz.signature.json"]


@pytest.mark.parametrize("name", ["o.jsonl.gz", "o.tsv.gz", "o.json.gz"])
def test_gz_text_formats_roundtrip(tmp_path, name):
    df = pl.DataFrame({"document_id": ["d"], "segment_id": [0], "source": ["A."]})
    write_tables_atomic([(df, tmp_path / name)])
    assert gzip.decompress((tmp_path / name).read_bytes())
    assert read_table(tmp_path / name).equals(df)


def test_stale_temps_of_that_output_are_removed(tmp_path):
    stale = [tmp_path / ".o.parquet.ab12cd_9.tmp", tmp_path / ".o.parquet.zzzzzzzz.tmp"]
    keep = [tmp_path / ".other.parquet.ab12cd_9.tmp", tmp_path / ".o.parquet.x.tmp", tmp_path / "o.parquet.ab12cd_9.tmp",
            tmp_path / ".o.parquet.gz.ab12cd_9.tmp"]
    for p in stale + keep:
        p.write_bytes(b"")
    df = pl.DataFrame({"a": [1]})
    write_tables_atomic([(df, tmp_path / "o.parquet")])
    assert not any(p.exists() for p in stale)
    assert all(p.exists() for p in keep)
    assert remove_stale_temps(tmp_path / "other.parquet") == [keep[0]]


def test_failed_write_leaves_nothing(tmp_path):
    good = pl.DataFrame({"a": [1]})
    bad = pl.DataFrame({"a": [[1, 2]]})  # nested lists cannot be written as CSV
    with pytest.raises(Exception):
        write_tables_atomic([(good, tmp_path / "a.parquet"), (bad, tmp_path / "b.csv")], sidecar="{}")
    assert list(tmp_path.iterdir()) == []
