"""`ddp select` / `ddp sample` on a profile whose sentence-count columns are not whole numbers: a coded
data error (D910, exit 3) naming the file, row and column, never an internal error (found in a review:
a profile CSV whose `first_sentence` column held text crashed with D999)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ddpcore.cli.main import main

ROWS = [("d0", 0, "Anna came. She left."), ("d0", 1, "Then she came back."), ("d1", 0, "It rained.")]


def _files(tmp_path: Path, column: str, values: list[str]) -> tuple[Path, Path]:
    src = tmp_path / "in.tsv"
    src.write_text("document_id\tsegment_id\tsource\n" + "".join(f"{d}\t{s}\t{t}\n" for d, s, t in ROWS))
    good = {"n_sentences": ["2", "1", "1"], "first_sentence": ["0", "2", "0"]}
    good[column] = values
    prof = tmp_path / "profile.csv"
    prof.write_text("document_id,segment_id,domain,n_sentences,ddp,first_sentence\n" + "".join(
        f"{d},{s},news,{good['n_sentences'][i]},1,{good['first_sentence'][i]}\n" for i, (d, s, _) in enumerate(ROWS)))
    return src, prof


@pytest.mark.parametrize("command", [["select", "--min-ddp", "1"], ["sample", "--per-bin", "1", "--seed", "1"]])
@pytest.mark.parametrize("column,values,row,shown", [
    ("first_sentence", ["0", "Sentence one.", "0"], 2, "'Sentence one.'"),  # text: the first non-number
    ("n_sentences", ["2", "1.5", "1"], 2, "1.5"),
    ("n_sentences", ["2", "1", "-1"], 3, "-1"),
])
def test_bad_sentence_counts_are_d910(tmp_path: Path, capsys, command, column, values, row, shown) -> None:
    src, prof = _files(tmp_path, column, values)
    out = tmp_path / "out.tsv"
    rc = main([command[0], str(src), "--profile", str(prof), *command[1:], "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 3, err
    assert "[D910]" in err and f"row {row}, column {column}" in err and str(prof) in err and shown in err, err
    assert not out.exists()


def test_good_counts_pass(tmp_path: Path) -> None:
    src, prof = _files(tmp_path, "n_sentences", ["2", "1", "1"])
    out = tmp_path / "out.tsv"
    assert main(["select", str(src), "--profile", str(prof), "--min-ddp", "1", "-o", str(out)]) == 0
    assert out.read_text().count("\n") == 4  # header + the three segments at DDP 1
