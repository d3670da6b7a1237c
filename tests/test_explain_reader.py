"""``ddp explain`` takes the reader settings (``--reader``, ``--docs``, ``--txt-mode``) and the column
names back from a profile's signature, as it does for rules/distance/pipeline (issue 9): a profile
made with ``--reader wmt24`` is explained without repeating the flags, from its carried-through
text or, when the output has no text column, from its recorded input read again the same way.
Expected DDP values are the profile's own ``ddp`` column for the segment."""
from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.cli.main import main

pytestmark = pytest.mark.spacy_model

SRC = ("CANARY GUID 0000 do not train on this\n"
       "Maria Keller opened the bakery in Leeds in 1998.\n"
       "The shop was small. Customers queued outside every morning.\n"
       "Years later, she sold it to a cousin.\n"
       "The committee met on Monday.\n"
       "It approved the budget.\n")
DOCS = "canary\tcanary\nnews\td-bakery\nnews\td-bakery\nnews\td-bakery\nsocial\td-committee\nsocial\td-committee\n"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture()
def wmt24(tmp_path: Path) -> Path:
    (tmp_path / "wmt_en_source.txt").write_text(SRC, encoding="utf-8")
    (tmp_path / "wmt_en.docs").write_text(DOCS, encoding="utf-8")
    return tmp_path


def _strip_text(path: Path, dest: Path) -> Path:
    """The profile without its text column; the signature (schema metadata) stays."""
    t = pq.read_table(path)
    pq.write_table(t.drop(["source"]), dest)
    return dest


def test_explain_a_wmt24_profile_without_repeating_the_flags(wmt24: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(wmt24)
    code, _, err = _run(capsys, "profile", "wmt_en_source.txt", "--reader", "wmt24", "-o", "p.parquet", "-q")
    assert code == 0, err
    seg = pl.read_parquet("p.parquet")
    # the reader's key convention: segment ids are positions in the document, line_id the file line
    assert seg.select("document_id", "segment_id", "line_id").rows() == [
        ("d-bakery", 0, 1), ("d-bakery", 1, 2), ("d-bakery", 2, 3), ("d-committee", 0, 4), ("d-committee", 1, 5)]
    row = seg.filter(pl.col("document_id") == "d-bakery", pl.col("segment_id") == 2).row(0, named=True)
    assert row["ddp"] > 0  # "she" reaches back to Maria Keller two segments earlier
    code, out, err = _run(capsys, "explain", "p.parquet", "--document", "d-bakery", "--segment", "2", "-f", "json")
    assert code == 0, err
    assert json.loads(out)["ddp"] == row["ddp"]
    assert "reader 'wmt24'" in err and "docs 'wmt_en.docs'" in err and "from p.parquet" in err
    assert len(err.strip().splitlines()) == 1
    # the input itself needs the flag (a .txt is not a table), and with it gives the same answer
    code, _, err = _run(capsys, "explain", "wmt_en_source.txt", "--document", "d-bakery", "--segment", "2")
    assert code == 2 and "[D101]" in err
    code, out, err = _run(capsys, "explain", "wmt_en_source.txt", "--reader", "wmt24", "--document", "d-bakery",
                          "--segment", "2", "-f", "json")
    assert code == 0, err
    assert json.loads(out)["ddp"] == row["ddp"] and err == ""


def test_an_output_without_text_is_explained_from_its_recorded_input(wmt24: Path, tmp_path_factory, capsys,
                                                                    monkeypatch) -> None:
    monkeypatch.chdir(wmt24)
    assert main(["profile", "wmt_en_source.txt", "--reader", "wmt24", "-o", "p.parquet", "-q"]) == 0
    capsys.readouterr()  # the profile's summary
    seg = pl.read_parquet("p.parquet")
    bare = _strip_text(wmt24 / "p.parquet", wmt24 / "bare.parquet")
    elsewhere = tmp_path_factory.mktemp("cwd")
    monkeypatch.chdir(elsewhere)  # the recorded paths are relative: found beside the output
    for doc, s in (("d-bakery", 2), ("d-committee", 1)):
        code, out, err = _run(capsys, "explain", str(bare), "--document", doc, "--segment", str(s), "-f", "json")
        assert code == 0, err
        want = seg.filter(pl.col("document_id") == doc, pl.col("segment_id") == s)["ddp"][0]
        assert json.loads(out)["ddp"] == want
        assert "reader 'wmt24'" in err
    # the input is not there: D188 names what to do
    other = tmp_path_factory.mktemp("alone")
    lone = _strip_text(wmt24 / "p.parquet", other / "bare.parquet")
    code, _, err = _run(capsys, "explain", str(lone), "--document", "d-bakery", "--segment", "2")
    assert code == 3 and "[D188]" in err and "'wmt_en_source.txt'" in err and len(err.strip().splitlines()) == 1
    # another input under the same name: D189 (the document's segments differ)
    (other / "wmt_en_source.txt").write_text(SRC.replace("Years later, she sold it to a cousin.\n", ""))
    (other / "wmt_en.docs").write_text(DOCS.replace("news\td-bakery\n", "", 1))
    code, _, err = _run(capsys, "explain", str(lone), "--document", "d-bakery", "--segment", "2")
    assert code == 3 and "[D189]" in err and "2 segment(s) here but 3" in err


def test_txt_mode_comes_back_from_the_signature(tmp_path: Path, capsys, monkeypatch) -> None:
    folder = tmp_path / "novel"
    folder.mkdir()
    # a hard-wrapped paragraph: in paragraphs mode its lines are one text; "He" reaches back to Tom
    (folder / "ch1.txt").write_text("Tom Baker walked to the old mill\nat the edge of town.\n\n"
                                    "The river was high that spring.\nRain had fallen for weeks.\n\n"
                                    "He waited there until\ndark.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["profile", "novel", "--txt-mode", "paragraphs", "-o", "p.parquet", "-q"]) == 0
    capsys.readouterr()  # the profile's summary
    seg = pl.read_parquet("p.parquet")
    assert seg["source"][0] == "Tom Baker walked to the old mill at the edge of town."  # joined by the reader
    bare = _strip_text(tmp_path / "p.parquet", tmp_path / "bare.parquet")
    want = seg.filter(pl.col("segment_id") == 2)["ddp"][0]
    code, out, err = _run(capsys, "explain", str(bare), "--document", "ch1", "--segment", "2", "-f", "json")
    assert code == 0, err
    res = json.loads(out)
    assert res["ddp"] == want and "txt-mode 'paragraphs'" in err
    # re-read in paragraphs mode: the segment has one sentence, as in the profile; lines mode (given
    # on the command line, it wins over the signature) parses each line as a sentence: 2
    assert res["n_sentences"] == seg.filter(pl.col("segment_id") == 2)["n_sentences"][0] == 1
    code, out, err = _run(capsys, "explain", str(bare), "--document", "ch1", "--segment", "2", "-f", "json",
                          "--txt-mode", "lines")
    assert code == 0, err
    assert json.loads(out)["n_sentences"] == 2 and "txt-mode" not in err
    assert os.path.exists(folder / "ch1.txt")
