"""``ddp select``/``ddp sample`` on a profile without rows or with rows without a DDP value: a coded error
naming the file (and the row and column), never an internal error and never a missing DDP read as 0.
Hand-made profiles (no spaCy)."""
from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ddpcore.cli.main import main
from ddpcore.curate import select as SEL
from ddpcore.errors import DDPDataError

DOCS = [("a", 3), ("b", 4), ("c", 2)]  # documents and their segment counts


def rows() -> list[dict]:
    out = []
    for d, n in DOCS:
        for s in range(n):
            out.append({"document_id": d, "segment_id": s, "domain": "news", "n_sentences": 1,
                        "ddp": s, "first_sentence": s})
    return out


def write_input(tmp_path: Path) -> Path:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"document_id": r["document_id"], "segment_id": r["segment_id"],
                                       "source": f"Segment {i}."}) + "\n" for i, r in enumerate(rows())),
                   encoding="utf-8")
    return src


def run(capfd: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, list[str]]:
    code = main(argv)
    return code, [ln for ln in capfd.readouterr().err.splitlines() if ln.strip()]


CMDS = {"select": ["--max-ddp", "0"], "sample": ["--bins", "0,1,inf", "--per-bin", "1", "--unit", "segment"]}


@pytest.mark.parametrize("cmd", sorted(CMDS))
def test_a_profile_without_rows_is_a_data_error(tmp_path: Path, capfd: pytest.CaptureFixture[str], cmd: str) -> None:
    src = write_input(tmp_path)
    pl.DataFrame(rows()).head(0).write_parquet(tmp_path / "empty.parquet")
    out = tmp_path / "e.jsonl"
    code, err = run(capfd, [cmd, str(src), "--profile", str(tmp_path / "empty.parquet"), *CMDS[cmd], "-o", str(out)])
    assert code == 3 and len(err) == 1 and "[D106]" in err[0] and "empty.parquet" in err[0], err
    assert not out.exists() and not (tmp_path / "e.jsonl.signature.json").exists()


def test_matching_against_a_profile_without_rows_names_the_first_input_row(tmp_path: Path) -> None:
    """:func:`index_and_match` itself (the Python API, past :func:`load_profile`): D636, not an IndexError."""
    src = write_input(tmp_path)
    frame = pl.DataFrame(rows()).head(0).with_columns(pl.col("domain").cast(pl.String))
    prof = SEL.Profile(frame, SEL.profile_columns({}), {}, "empty.parquet")
    with pytest.raises(DDPDataError) as e:
        SEL.index_and_match(src, prof)
    msg = str(e.value)
    assert e.value.code == "D636" and "row 1" in msg and f"({len(rows())} input row(s) missing)" in msg


@pytest.mark.parametrize("cmd", sorted(CMDS))
def test_a_null_ddp_is_d781_naming_file_row_and_column(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                                       cmd: str) -> None:
    src = write_input(tmp_path)
    rs = rows()
    gaps = [None if i % 3 == 2 else r["ddp"] for i, r in enumerate(rs)]  # rows 3, 6, 9 (1-based) have no DDP
    first_null = gaps.index(None) + 1
    n_null = gaps.count(None)
    pl.DataFrame(rs).with_columns(pl.Series("ddp_gaps", gaps, dtype=pl.Int64)).write_parquet(tmp_path / "g.parquet")
    out = tmp_path / "g.jsonl"
    code, err = run(capfd, [cmd, str(src), "--profile", str(tmp_path / "g.parquet"), "--ddp-col", "ddp_gaps",
                            *CMDS[cmd], "-o", str(out)])
    assert code == 3 and len(err) == 1 and "[D781]" in err[0], err
    assert f"g.parquet, row {first_null}, column ddp_gaps" in err[0] and f"{n_null} of {len(rs)} rows" in err[0]
    assert not out.exists()
    # the rows with a DDP are still selected as before: the full column works
    code, err = run(capfd, [cmd, str(src), "--profile", str(tmp_path / "g.parquet"), *CMDS[cmd], "-o", str(out)])
    assert code == 0, err


def test_a_null_first_sentence_is_d910(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The context of --with-context reads first_sentence: a missing one is not sentence 0 either."""
    src = write_input(tmp_path)
    rs = rows()
    fs = [r["first_sentence"] for r in rs]
    fs[4] = None
    pl.DataFrame(rs).with_columns(pl.Series("first_sentence", fs, dtype=pl.Int64)).write_parquet(tmp_path / "f.parquet")
    code, err = run(capfd, ["select", str(src), "--profile", str(tmp_path / "f.parquet"), "--min-ddp", "2",
                            "--with-context", "-o", str(tmp_path / "o.jsonl")])
    assert code == 3 and len(err) == 1 and "[D910]" in err[0] and "row 5, column first_sentence" in err[0], err
