"""The shared output check (:mod:`ddpcore.io.outputs`) checks the second paths of an output before any
work: a signature sidecar ``<out>.signature.json`` that is an existing folder is D132 (exit 2) at once,
for every command that reserves sidecars (``ddp select``, ``ddp sample``, ``ddp profile``, ...), and
nothing is written. :func:`check_place` and :func:`check_claims` check the paths a command derives
otherwise (a ``.docs`` beside ``-o``, per-system files)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest

from ddpcore.cli.main import main
from ddpcore.errors import DDPUsageError
from ddpcore.io.outputs import check_outputs


def files_under(root: Path) -> set[str]:
    return {os.path.relpath(os.path.join(d, n), root) for d, dirs, names in os.walk(root) for n in [*dirs, *names]}


def test_check_outputs_refuses_a_sidecar_that_is_a_folder(tmp_path: Path) -> None:
    (tmp_path / "x.csv.signature.json").mkdir()
    with pytest.raises(DDPUsageError) as e:
        check_outputs([("-o/--output", tmp_path / "x.csv")], sidecars=True)
    assert e.value.code == "D132" and "x.csv.signature.json" in str(e.value)
    # Parquet has no sidecar (its signature is in its metadata); without sidecars=True none is reserved
    (tmp_path / "x.parquet.signature.json").mkdir()
    assert check_outputs([("-o", tmp_path / "x.parquet")], sidecars=True)[0].sidecar is None
    assert check_outputs([("-o", tmp_path / "x.csv")])[0].path == tmp_path / "x.csv"


def test_check_place_and_claims(tmp_path: Path) -> None:
    from ddpcore.io.outputs import check_claims, check_place

    (tmp_path / "f.docs").mkdir()
    with pytest.raises(DDPUsageError) as e:
        check_place("the .docs", tmp_path / "f.docs")
    assert e.value.code == "D132"
    with pytest.raises(DDPUsageError) as e:
        check_place("-o", tmp_path / "missing" / "o.txt")
    assert e.value.code == "D130"
    check_place("--outputs-to", tmp_path / "missing" / "deeper" / "o.txt", make_parents=True)  # made by the run
    (tmp_path / "file").write_text("x")
    with pytest.raises(DDPUsageError) as e:
        check_place("--outputs-to", tmp_path / "file" / "deeper" / "o.txt", make_parents=True)
    assert e.value.code == "D130"
    src = tmp_path / "src.txt"
    src.write_text("a\n")
    os.link(src, tmp_path / "hard.txt")
    with pytest.raises(DDPUsageError) as e:  # a hard link of the input is the input
        check_claims([("-o", tmp_path / "out.txt"), ("--outputs-to", tmp_path / "hard.txt")], [src])
    assert e.value.code == "D133" and "hard.txt" in str(e.value)
    with pytest.raises(DDPUsageError) as e:
        check_claims([("-o", tmp_path / "o.txt"), ("the .docs", tmp_path / "d.docs"),
                      ("--outputs-to", tmp_path / "sub" / ".." / "o.txt")], [src])
    assert e.value.code == "D134" and str(e.value).startswith("[D134] -o and --outputs-to")
    check_claims([("-o", tmp_path / "o.txt"), ("the .docs", tmp_path / "o.docs")], [src])  # distinct: fine


def _profile_and_input(tmp_path: Path) -> tuple[Path, Path]:
    prof = pl.DataFrame({"document_id": ["a", "a"], "segment_id": [0, 1], "domain": ["news", "news"],
                         "n_sentences": [1, 1], "ddp": [0, 1], "first_sentence": [0, 1]})
    prof.write_parquet(tmp_path / "p.parquet")
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"document_id": "a", "segment_id": i, "source": f"Sentence {i}."}) + "\n"
                           for i in range(2)), encoding="utf-8")
    return tmp_path / "p.parquet", src


@pytest.mark.parametrize("argv", [["select", "--min-ddp", "1"], ["sample", "--per-bin", "1"]])
def test_select_and_sample_refuse_a_sidecar_folder_before_any_work(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                                                    argv: list[str]) -> None:
    prof, src = _profile_and_input(tmp_path)
    (tmp_path / "y.jsonl.signature.json").mkdir()
    before = files_under(tmp_path)
    code = main([argv[0], str(src), "--profile", str(prof), *argv[1:], "-o", str(tmp_path / "y.jsonl")])
    err = [ln for ln in capfd.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1 and "[D132]" in err[0] and "y.jsonl.signature.json" in err[0], err
    assert files_under(tmp_path) == before


def test_profile_refuses_a_sidecar_folder_before_any_work(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    _, src = _profile_and_input(tmp_path)
    (tmp_path / "x.csv.signature.json").mkdir()
    before = files_under(tmp_path)
    code = main(["profile", str(src), "-o", str(tmp_path / "x.csv"), "-q"])
    err = [ln for ln in capfd.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1 and "[D132]" in err[0] and "x.csv.signature.json" in err[0], err
    assert files_under(tmp_path) == before
