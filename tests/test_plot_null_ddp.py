"""``ddp plot`` and ``ddp report`` on a profile with a row without a DDP value (null): D781 (exit 3, one line)
naming the file, the row (1-based, the header not counted) and the column, as ``ddp select``/``sample`` refuse
it. Before, the row was dropped from the means and figures while the page still counted it (``N segments``
over means of N-1), exit 0."""
from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.cli.main import main

pytest.importorskip("matplotlib")

SIG = {"ddpcore": "0.1.0", "distance": "chained", "rules": "refined",
       "columns": {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"}}


def _profile(path: Path, col: str | None, row: int | None) -> Path:
    df = pl.DataFrame({"document_id": ["a", "a", "b", "b", "b"], "segment_id": [0, 1, 0, 1, 2],
                       "domain": ["news", "news", "fiction", "fiction", "fiction"], "n_sentences": [2] * 5,
                       "ddp": [0, 2, 1, 5, 3], "ddp_certified": [0, 1, 1, 4, 0], "first_sentence": [0, 2, 0, 2, 4],
                       "source": [f"Text {i}. More." for i in range(5)]})
    if col is not None:
        df = df.with_columns(pl.when(pl.int_range(pl.len()) == row).then(None).otherwise(pl.col(col)).alias(col))
    pq.write_table(df.to_arrow().replace_schema_metadata({b"ddpcore.signature": json.dumps(SIG).encode()}), path)
    return path


CASES = [("ddp", 0), ("ddp", 3), ("ddp_certified", 4)]


def _cmds(p: Path, out: Path, col: str) -> list[list[str]]:
    extra = [] if col == "ddp" else ["--ddp-col", col]
    return [["report", str(p), *extra, "-o", str(out.with_suffix(".html"))],
            ["plot", str(p), "--kind", "hist", *extra, "-o", str(out.with_suffix(".png"))],
            ["plot", str(p), "--kind", "ecdf", "--by", "domain", *extra, "-o", str(out.with_suffix(".svg"))]]


@pytest.mark.parametrize("col, row", CASES)
def test_null_ddp_is_d781_naming_file_row_and_column(tmp_path: Path, capsys, col: str, row: int) -> None:
    """The complete profile is drawn and reported (5 segments, the mean over all 5); the same profile with one
    null is refused by every command, naming that row."""
    ok = _profile(tmp_path / "ok.parquet", None, None)
    for cmd in _cmds(ok, tmp_path / "ok", col):
        assert main(cmd) == 0, capsys.readouterr().err
    capsys.readouterr()
    page = (tmp_path / "ok.html").read_text(encoding="utf-8")
    values = {"ddp": [0, 2, 1, 5, 3], "ddp_certified": [0, 1, 1, 4, 0]}[col]
    assert "5 segments;" in page and f'<td class="num">{sum(values) / 5:.1f}</td>' in page
    p = _profile(tmp_path / "rp_null.parquet", col, row)
    out = tmp_path / "out"
    for cmd in _cmds(p, out, col):
        assert main(cmd) == 3, cmd
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, err
        assert f"[D781] --ddp-col {col}: {p}, row {row + 1}, column {col}: no DDP value (null; 1 of 5 rows)" in err[0]
        assert not Path(cmd[-1]).exists()


def test_load_profile_raises_the_coded_error(tmp_path: Path) -> None:
    from ddpcore.errors import DDPDataError
    from ddpcore.report import plots

    p = _profile(tmp_path / "n.parquet", "ddp", 2)
    with pytest.raises(DDPDataError) as e:
        plots.load_profile(p)
    assert e.value.code == "D781" and "row 3, column ddp" in str(e.value)
