"""``ddp stratify`` checks the values of its DDP column (``--ddp-col``) as ``select``/``sample``/``plot`` do:
a negative, fractional, NaN or infinite value is D781 (exit 3, one line naming the profile file, the
1-based row and the column). Before the fix a negative value fell below every bin (n=30, bins holding
fewer rows, exit 0), a fractional one was truncated by an Int64 cast (2.5 binned as 2) and NaN/inf were
an internal error (D999, exit 4).

The profiles are hand-made with polars; the expected row is found by a plain Python loop over the values.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.cli.main import main
from ddpcore.errors import DDPDataError

N = 12
GOOD = [3 * i + 1 for i in range(N)]  # 1, 4, ..., 34: whole numbers >= 0


def write_profile(path: Path, extra: dict[str, list]) -> Path:
    df = pl.DataFrame({"document_id": [f"d{i // 4}" for i in range(N)], "segment_id": [f"s{i}" for i in range(N)],
                       "ddp": GOOD, **extra}, strict=False)
    sig = {"columns": {"document": "document_id", "segment": "segment_id"}}
    pq.write_table(df.to_arrow().replace_schema_metadata({b"ddpcore.signature": json.dumps(sig).encode()}), path)
    return path


def write_scores(path: Path) -> Path:
    pl.DataFrame({"document_id": [f"d{i // 4}" for i in range(N)], "segment_id": [f"s{i}" for i in range(N)],
                  "score": [i / (N - 1) for i in range(N)]}).write_csv(path)
    return path


def first_bad_row(values: list) -> int:
    """1-based row of the first value that is not a whole number >= 0 (nulls are fine), by a loop."""
    for i, v in enumerate(values):
        if v is None:
            continue
        if not (math.isfinite(v) and v >= 0 and v == int(v)):
            return i + 1
    raise AssertionError("no bad value")


def with_bad(value: float, at: int) -> list:
    vals: list = [float(v) for v in GOOD]
    vals[at] = value
    return vals


CASES = {
    "shifted-negative": [v - 20 for v in GOOD],  # the bug report: ddp - 200 on a real profile
    "one-negative": [v if i != 7 else -1 for i, v in enumerate(GOOD)],
    "fractional": with_bad(2.5, 5),
    "inf": with_bad(math.inf, 3),
    "minus-inf": with_bad(-math.inf, 9),
    "nan": with_bad(math.nan, 4),
    "fractional-after-null": [None, *with_bad(0.5, 6)[1:]],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_ddp_values_are_d781_naming_file_row_and_column(tmp_path: Path, capsys, case: str) -> None:
    vals = CASES[case]
    prof = write_profile(tmp_path / "p.parquet", {"ddp_x": vals})
    scores = write_scores(tmp_path / "s.csv")
    rc = main(["stratify", str(prof), str(scores), "--score-col", "score", "--ddp-col", "ddp_x", "--n-boot", "0",
               "-f", "text"])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert rc == 3, (rc, err)
    assert out == ""
    assert len(lines) == 1 and "[D781]" in lines[0], lines
    row = first_bad_row(vals)
    assert f"{prof}, row {row}:" in lines[0]
    assert "--ddp-col ddp_x" in lines[0]
    bad = vals[row - 1]
    assert repr(bad) in lines[0] or repr(float(bad)) in lines[0]


def test_negative_values_no_longer_leave_rows_out_of_the_bins(tmp_path: Path, capsys) -> None:
    """The reported case: with the shifted column every bin count used to sum to fewer than n, silently."""
    shifted = [v - 20 for v in GOOD]
    prof = write_profile(tmp_path / "p.parquet", {"ddp_shift": shifted})
    scores = write_scores(tmp_path / "s.csv")
    out = tmp_path / "r.json"
    rc = main(["stratify", str(prof), str(scores), "--score-col", "score", "--ddp-col", "ddp_shift", "--n-boot", "0",
               "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 3 and "[D781]" in err
    assert not out.exists()
    assert sum(v < 0 for v in shifted) > 0  # the rows that used to drop out of the bins


def test_library_stratify_raises_d781_on_a_frame(tmp_path: Path) -> None:
    """``ddpcore.stats.stratify.stratify`` on polars frames (no files) checks the values too."""
    from ddpcore.stats.stratify import stratify

    vals = with_bad(1.5, 2)
    prof = pl.DataFrame({"document_id": [f"d{i // 4}" for i in range(N)], "segment_id": [f"s{i}" for i in range(N)],
                         "ddp": vals})
    scores = pl.read_csv(write_scores(tmp_path / "s.csv"))
    with pytest.raises(DDPDataError) as e:
        stratify(prof, scores, "score", n_boot=0, profile_name="prof.parquet")
    assert e.value.code == "D781"
    assert f"prof.parquet, row {first_bad_row(vals)}:" in str(e.value)


def test_whole_float_values_and_nulls_still_stratify_like_a_loop(tmp_path: Path, capsys) -> None:
    """Whole numbers stored as floats (and nulls) are DDP values: the bins match a loop over the rows;
    the same column with one 2.5 is D781 (it used to be binned as 2, silently)."""
    vals: list = [float(v) for v in GOOD]
    vals[0] = None
    prof = write_profile(tmp_path / "p.parquet", {"ddp_f": vals, "ddp_g": with_bad(2.5, 0)})
    scores = write_scores(tmp_path / "s.csv")
    edges = [0, 5, 15, math.inf]
    out = tmp_path / "r.json"
    assert main(["stratify", str(prof), str(scores), "--score-col", "score", "--ddp-col", "ddp_f", "--n-boot", "0",
                 "--bins", "0,5,15,inf", "--allow-partial-join", "-o", str(out)]) == 0
    res = json.loads(out.read_text())
    score = [i / (N - 1) for i in range(N)]
    want = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = [score[i] for i, v in enumerate(vals) if v is not None and lo <= v < hi]
        want.append((len(sel), sum(sel) / len(sel) if sel else None))
    got = [(b["n"], b["mean"]) for b in res["groups"][0]["bins"]]
    assert [n for n, _ in got] == [n for n, _ in want]
    assert all((g is None and w is None) or g == pytest.approx(w, abs=1e-12) for (_, g), (_, w) in zip(got, want))
    capsys.readouterr()
    rc = main(["stratify", str(prof), str(scores), "--score-col", "score", "--ddp-col", "ddp_g", "--n-boot", "0",
               "--bins", "0,5,15,inf", "-f", "text"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 3 and len(err) == 1 and "[D781]" in err[0] and "row 1:" in err[0] and "2.5" in err[0]
