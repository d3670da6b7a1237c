"""``ddp validate``'s outputs carry the run's signature and their path checks name the user's path.

* ``--over-estimates FILE`` in a text format (.csv, .tsv, .jsonl, .csv.gz) writes ``FILE.signature.json``
  (before: none; only .parquet had its signature), and that sidecar path is checked before any work;
* ``--plot FILE`` (.png, .svg, .pdf) embeds the signature as ``ddp plot`` does (before: none);
* a ``--plot`` folder/writability error names ``--plot nodir/x.png``, not an internal ``x.png.csv``
  stand-in, and the stand-in can no longer collide with a gold input or an existing folder.

The expected signature is the ``signature`` object of the same run's JSON report on stdout.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

GOLD = Path(__file__).resolve().parent / "data" / "gold"
TINY = GOLD / "conll2012" / "tiny.v4_gold_conll"


def ddp(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def one_error(proc: subprocess.CompletedProcess[str], code: int) -> str:
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def pdf_info_string(data: bytes, key: str) -> str:
    """The literal string value of ``/key (...)`` in a PDF's document information (PDF 32000-1, 7.3.4.2:
    backslash escapes, balanced parentheses)."""
    m = re.search(rb"/" + re.escape(key.encode()) + rb"\s*\(", data)
    assert m is not None, f"no /{key} in the PDF"
    out, depth, i = bytearray(), 0, m.end()
    escapes = {ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t", ord("b"): b"\b", ord("f"): b"\f"}
    while True:
        c = data[i]
        if c == ord("\\"):
            nxt = data[i + 1]
            out += escapes.get(nxt, bytes([nxt]))
            i += 2
            continue
        if c == ord("("):
            depth += 1
        elif c == ord(")"):
            if depth == 0:
                return out.decode("latin-1")
            depth -= 1
        out.append(c)
        i += 1


# --------------------------------------------------------------------------- --over-estimates sidecar


@pytest.mark.spacy_model
@pytest.mark.parametrize("name", ["over.tsv", "over.jsonl", "over.csv.gz"])
def test_text_over_estimates_get_the_signature_sidecar(tmp_path: Path, name: str) -> None:
    out = tmp_path / name
    proc = ddp("validate", str(TINY), "-q", "--over-estimates", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert out.is_file()
    side = tmp_path / (name + ".signature.json")
    assert side.is_file(), "no signature sidecar beside the text output"
    sig = json.loads(side.read_text(encoding="utf-8"))
    assert sig.pop("data")["bytes"] == out.stat().st_size  # the stamp of the output (io.sidecars)
    assert sig == report["signature"]
    # what the run was: the gold file and format given, the default chained distance and full scope
    assert sig["gold"]["paths"] == [str(TINY)] and sig["gold"]["formats"] == ["conll2012"]
    assert sig["gold"]["distance"] == "chained" and sig["gold"]["scope"] == "full"


@pytest.mark.spacy_model
def test_csv_and_parquet_carry_the_same_kind_of_signature(tmp_path: Path) -> None:
    """.csv gets the sidecar, .parquet keeps the signature in its metadata and gets none; each equals its
    run's report (two runs: the cache counts in the signatures differ between them)."""
    import pyarrow.parquet as pq

    csv, parquet = tmp_path / "over.csv", tmp_path / "over.parquet"
    proc = ddp("validate", str(TINY), "-q", "--over-estimates", str(csv))
    assert proc.returncode == 0, proc.stderr
    side = json.loads((tmp_path / "over.csv.signature.json").read_text())
    assert side.pop("data")["bytes"] == csv.stat().st_size and side == json.loads(proc.stdout)["signature"]
    proc = ddp("validate", str(TINY), "-q", "--over-estimates", str(parquet))
    assert proc.returncode == 0, proc.stderr
    meta = pq.read_schema(parquet).metadata
    assert json.loads(meta[b"ddpcore.signature"]) == json.loads(proc.stdout)["signature"]
    assert not (tmp_path / "over.parquet.signature.json").exists()


def test_the_sidecar_path_is_checked_before_any_work(tmp_path: Path) -> None:
    """A gold input that is the sidecar of --over-estimates would be overwritten: D133 before the run."""
    gold = tmp_path / "over.csv.signature.json"
    shutil.copy(TINY, gold)
    before = gold.read_bytes()
    line = one_error(ddp("validate", str(gold), "--gold-format", "conll2012", "-q",
                         "--over-estimates", str(tmp_path / "over.csv")), 2)
    assert "[D133]" in line and "signature sidecar of --over-estimates" in line
    assert gold.read_bytes() == before and not (tmp_path / "over.csv").exists()


# --------------------------------------------------------------------------- --plot signature


@pytest.mark.spacy_model
@pytest.mark.parametrize("ext", ["png", "svg", "pdf"])
def test_plot_carries_the_signature(tmp_path: Path, ext: str) -> None:
    pytest.importorskip("matplotlib")
    plot = tmp_path / f"scatter.{ext}"
    proc = ddp("validate", str(TINY), "-q", "--plot", str(plot))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no matplotlib warning about the PDF information key either
    want = json.loads(proc.stdout)["signature"]
    if ext == "png":
        from PIL import Image

        with Image.open(plot) as im:
            assert im.format == "PNG"
            got = json.loads(im.text["ddpcore.signature"])
    elif ext == "svg":
        import xml.etree.ElementTree as ET

        root = ET.parse(plot).getroot()
        desc = root.find(".//{http://purl.org/dc/elements/1.1/}description")
        assert desc is not None and desc.text
        got = json.loads(desc.text)
    else:
        # the test's own PDF string reader, first on a hand-written literal with the escapes it handles
        lit = b"<< /Producer (x) /ddpcore.signature ({\"a\": \"b\\\\u00e9 \\(c\\) (d)\"}) >>"
        assert pdf_info_string(lit, "ddpcore.signature") == '{"a": "b\\u00e9 (c) (d)"}'
        data = plot.read_bytes()
        assert data.startswith(b"%PDF")
        got = json.loads(pdf_info_string(data, "ddpcore.signature"))
    assert got == want


# --------------------------------------------------------------------------- --plot path messages


def test_plot_in_a_missing_folder_names_the_users_path(tmp_path: Path) -> None:
    line = one_error(ddp("validate", str(TINY), "--plot", "nodir/x.png", cwd=tmp_path), 2)
    assert line == ("ddp validate: error: [D130] --plot nodir/x.png: the folder nodir does not exist; "
                    "create it first (mkdir -p nodir)")


def test_plot_under_a_file_names_the_users_path(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    line = one_error(ddp("validate", str(TINY), "--plot", "afile/x.svg", cwd=tmp_path), 2)
    assert "[D130] --plot afile/x.svg: afile is a file, not a folder" in line and ".csv" not in line


@pytest.mark.spacy_model
def test_plot_beside_a_gold_input_or_folder_named_like_the_old_stand_in(tmp_path: Path) -> None:
    """The stand-in x.png.csv is no output: a gold input of that name (before: D133, "this is the input
    file") or a folder of that name (before: D132) does not stop --plot x.png."""
    pytest.importorskip("matplotlib")
    shutil.copy(TINY, tmp_path / "x.png.csv")
    proc = ddp("validate", "x.png.csv", "--gold-format", "conll2012", "-q", "--plot", "x.png", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "x.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (tmp_path / "y.svg.csv").mkdir()
    proc = ddp("validate", str(TINY), "-q", "--plot", "y.svg", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "y.svg").is_file()
