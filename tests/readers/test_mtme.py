"""``--reader mtme`` (ddpcore.io.mtme) on the hand-written tree in tests/data/mtme/toy (see its SOURCE.md).

Expected values are read off the fixture files by eye / by the plain-Python loop ``_loop_scores``
(the mt-metrics-eval reading rule, ``data.ReadScoreFile``: ``sysname, score = line.split()``;
``float(score) if score != 'None' else None``; each system's lines in source order).
"""
from __future__ import annotations

import shutil
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.io.mtme import iter_mtme_source, read_mtme_scores, read_mtme_sys_scores, resolve_mtme
from ddpcore.io.scores import SCORE_READERS, read_score_input
from ddpcore.io.sources import read_input

TOY = Path(__file__).resolve().parents[1] / "data" / "mtme" / "toy"
REAL = Path("/tmp/ddpcore-mtme-wmt23")  # extracted by test_real_tree when the shared data is present


def _loop_scores(path: Path) -> dict[str, list[float | None]]:
    out: dict[str, list[float | None]] = {}
    for line in path.read_text().splitlines():
        name, score = line.split()
        out.setdefault(name, []).append(None if score == "None" else float(score))
    return out


def test_source_frame_matches_the_files() -> None:
    (df,) = list(iter_mtme_source(TOY))
    assert df.columns == ["document_id", "segment_id", "source", "domain", "line_id"]
    assert df["document_id"].to_list() == ["doc-a"] * 4 + ["doc-b"] * 2
    assert df["segment_id"].to_list() == [0, 1, 2, 3, 0, 1]
    assert df["domain"].to_list() == ["news"] * 4 + ["social"] * 2  # TAB and space both split
    assert df["source"].to_list() == (TOY / "sources" / "en-de.txt").read_text().splitlines()
    # the same through the profile readers' entry point, and the three ways to name the pair
    same = read_input(TOY, reader="mtme")
    assert same["source"].to_list() == df["source"].to_list()
    for p in (TOY, TOY / "en-de", TOY / "sources" / "en-de.txt"):
        assert resolve_mtme(p).lp == "en-de"


@pytest.mark.parametrize("layout", ["wide", "long"])
def test_scores_equal_a_loop_and_none_stays_null(layout: str) -> None:
    notes: list[str] = []
    res = read_mtme_scores(TOY, metrics=None, layout=layout, warn=notes.append)  # type: ignore[arg-type]
    loops = {"mqm": _loop_scores(TOY / "human-scores" / "en-de.mqm.seg.score"),
             "COMET-refA": _loop_scores(TOY / "metric-scores" / "en-de" / "COMET-refA.seg.score")}
    t = res.table
    if layout == "long":
        t = t.pivot(on="condition", index=["document_id", "segment_id", "line_id", "system"], values="score")
    for name, per_sys in loops.items():
        for s, vals in per_sys.items():
            got = t.filter(pl.col("system") == s).sort("line_id")[name].to_list()
            assert got == vals, (name, s)
    assert res.n_missing == {"mqm": 1, "COMET-refA": 6}  # None lines, counted
    assert notes and "mqm 1" in notes[0] and "never 0" in notes[0]


def test_text_columns_for_corpus_metrics() -> None:
    t = read_mtme_scores(TOY, human=[], with_text=True).table
    a = t.filter(pl.col("system") == "sysA").sort("line_id")
    assert a["hypothesis"].to_list() == (TOY / "system-outputs" / "en-de" / "sysA.txt").read_text().splitlines()
    assert a["reference"].to_list() == (TOY / "references" / "en-de.refA.txt").read_text().splitlines()


def test_sys_scores() -> None:
    assert read_mtme_sys_scores(TOY, "COMET-refA") == {"sysA": 0.773, "sysB": 0.402, "refA": None}


def test_score_input_dispatch_long_table_for_stats() -> None:
    assert "mtme" in SCORE_READERS
    t = read_score_input(TOY, "mtme", conditions=["mqm", "COMET-refA"])
    assert set(t["condition"].unique()) == {"mqm", "COMET-refA"}
    assert t.filter(pl.col("condition") == "mqm")["score"].null_count() == 1


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "toy"
    shutil.copytree(TOY, dst)
    return dst


def test_line_count_mismatches_are_named(tmp_path: Path) -> None:
    t = _copy(tmp_path)
    f = t / "human-scores" / "en-de.mqm.seg.score"
    lines = f.read_text().splitlines()
    f.write_text("\n".join(lines[:-1]) + "\n")  # refA loses its last line
    with pytest.raises(DDPDataError, match=r"D825.*en-de\.mqm\.seg\.score: system refA has 5 lines.*has 6"):
        read_mtme_scores(t)
    t2 = _copy(tmp_path / "b")
    d = t2 / "documents" / "en-de.docs"
    d.write_text(d.read_text() + "news doc-c\n")
    with pytest.raises(DDPDataError, match=r"D823.*en-de\.docs: 7 lines.*has 6"):
        list(iter_mtme_source(t2))
    t3 = _copy(tmp_path / "c")
    o = t3 / "system-outputs" / "en-de" / "sysB.txt"
    o.write_text(o.read_text() + "extra\n")
    with pytest.raises(DDPDataError, match=r"D828.*sysB\.txt: 7 lines"):
        read_mtme_scores(t3, with_text=True)


def test_bad_lines_and_names(tmp_path: Path) -> None:
    t = _copy(tmp_path)
    f = t / "metric-scores" / "en-de" / "COMET-refA.seg.score"
    f.write_text(f.read_text().replace("sysA 0.80", "sysA zero"))
    with pytest.raises(DDPDataError, match=r"D826.*line 2"):
        read_mtme_scores(t, metrics=None)
    f.write_text(f.read_text().replace("sysA zero", "sysA0.80"))
    with pytest.raises(DDPDataError, match=r"D824.*line 2"):
        read_mtme_scores(t, metrics=None)
    with pytest.raises(DDPDataError, match="D827"):
        read_mtme_scores(TOY, human=["esa"])
    with pytest.raises(DDPDataError, match="D820"):
        resolve_mtme(tmp_path / "nowhere")
    two = _copy(tmp_path / "d")
    (two / "sources" / "en-fr.txt").write_text("x\n")
    with pytest.raises(DDPUsageError, match="D821"):
        resolve_mtme(two)


def test_cli_profile_and_stats(tmp_path: Path) -> None:
    out = tmp_path / "p.parquet"
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", str(TOY), "--reader", "mtme", "-o",
                        str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    prof = pl.read_parquet(out)
    assert prof.height == 6 and prof["document_id"].to_list()[-1] == "doc-b"
    # refA's COMET-refA lines are all None: read as null (dropped by --nan-policy omit), so tau refuses refA;
    # had None been read as 0, tau would have run on a made-up score
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "stats", "tau", str(TOY), "--reader", "mtme",
                        "--a", "mqm", "--b", "COMET-refA", "--nan-policy", "omit", "--n-boot", "20"],
                       capture_output=True, text=True)
    assert r.returncode == 3 and "D310" in r.stderr and "refA" in r.stderr, r.stderr
    assert "COMET-refA 6" in r.stderr  # the reader's count of None lines on stderr
    # stratify reads the wide layout (one column per --score-col): the None lines are the nulls D711 counts
    strat = [sys.executable, "-m", "ddpcore.cli.main", "stratify", str(out), str(TOY), "--reader", "mtme",
             "--score-col", "mqm,COMET-refA", "--by", "system", "--n-boot", "20", "-f", "json"]
    r = subprocess.run(strat, capture_output=True, text=True)
    assert r.returncode == 3 and "D711" in r.stderr and "7 of 36 score rows" in r.stderr, r.stderr  # 1 + 6 None
    r = subprocess.run([*strat, "--allow-partial-join"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["signature"]["score_col"] == ["mqm", "COMET-refA"]


@pytest.mark.shared_data
def test_real_tree(shared_data: Path) -> None:
    import tarfile

    root = REAL / "data" / "mt-metrics-eval-v2" / "wmt23"
    if not root.is_dir():
        with tarfile.open(shared_data / "esa-wmt23-ende" / "errorspanannotation_wmt23_en-de_data.tar.xz") as tf:
            members = [m for m in tf.getmembers() if m.name.startswith("data/mt-metrics-eval-v2/wmt23/")]
            tf.extractall(REAL, members=members, filter="data")
    (src,) = list(iter_mtme_source(root))
    assert src.height == 557
    res = read_mtme_scores(root, metrics=None)
    assert res.n_missing["mqm"] == 1261 and res.n_missing["da-sqm"] == 104  # `grep -c None` of the two files
    assert len(res.columns) == 2 + 68
    # against the wide TSV the ESA release derived from the same .seg.score files (no value changed)
    wide = pl.read_csv(shared_data / "esa-wmt23-ende" / "esa_wmt23_en-de_scores_wide.tsv", separator="\t",
                       null_values=[""], infer_schema_length=100000)
    j = res.table.join(wide.select(pl.col("seg_idx").cast(pl.Int64).alias("line_id"), "system",
                                   pl.col("WMT-MQM").cast(pl.Float64)), on=["line_id", "system"], how="inner")
    assert j.height > 7000
    both = j.filter(pl.col("mqm").is_not_null() | pl.col("WMT-MQM").is_not_null())
    assert (both["mqm"] - both["WMT-MQM"]).abs().max() < 1e-9
    assert both["mqm"].null_count() == both["WMT-MQM"].null_count()
