"""Odd table inputs get a coded one-line error or the right answer, never D999 or a silent guess
(tester's A5, A7, A8, B1, B3, B4, C6).

* A5: ``--exclude-system`` naming no system (a typo) is D704 in ``stats tau`` and ``stats compare``, as
  in ``ddp blindness`` (it was ignored: the system stayed in).
* A7: ``stats cluster --method wmt24 --by-domain`` with a segment whose domain differs between systems is
  D352 naming the segment and the domains (it tested each system's rows in another domain).
* A8: a Date score column is D303 (was read as days). B4: nested id/score columns are D108/D303 naming the
  file and the column in every stats subcommand (was D999).
* B1: ``stats tost --by system|annotator`` (columns already in the pairing key) gives one test per group;
  the score or condition column, or a column given twice, is D311 (all were D999 DuplicateError).
* B3: integer ids beyond the int64 range (a 26-digit plain integer in a CSV) are ordered numerically like
  any integer id (was D999 i128 -> i64).
* C6: TOST margin errors name --margin / --bounds (they named --low/--high, which do not exist).

Expectations are independent: statsmodels ``ttost_paired``, scipy ``wilcoxon`` / ``kendalltau`` and
Stouffer's formula, polars for counts, and the same table with the ids renumbered in the same order.
"""
from __future__ import annotations

import datetime as dt
import json

import numpy as np
import polars as pl
import pytest
from scipy import special, stats
from statsmodels.stats.weightstats import ttost_paired

from ddpcore.cli.main import main
from _long_table import long_table as _long, run_stats as _run

KEYS = ["document_id", "segment_id", "system", "annotator"]






def _one_error(err: str, code: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"[{code}]" in lines[0] and "D999" not in lines[0], err
    return lines[0]


# --------------------------------------------------------------------------- A5 exclude-system


def test_exclude_system_typo_is_refused(tmp_path, capsys):
    df = _long()
    long_path, wide_path = tmp_path / "base.csv", tmp_path / "cmp.csv"
    df.write_csv(long_path)
    wide = df.filter(pl.col("condition") == "DOC").drop("condition", "annotator")
    wide.write_csv(wide_path)
    systems = sorted(df["system"].unique().to_list())
    assert "S1" not in systems
    for argv in (("tau", str(long_path), "--a", "DOC", "--b", "MIX", "--n-boot", "50"),
                 ("compare", str(wide_path), "--baseline", "s2", "--n-boot", "50", "--n-ar", "50")):
        code, out, err = _run(capsys, *argv, "--exclude-system", "S1")
        assert code == 3 and out == ""
        line = _one_error(err, "D704")
        assert f"--exclude-system 'S1': no such system in the table; systems: {', '.join(systems)}" in line
        assert argv[1] in line
    # spelt right it is left out: tau over the other three systems = scipy's kendalltau of their means
    code, out, _ = _run(capsys, "tau", str(long_path), "--a", "DOC", "--b", "MIX", "--n-boot", "50",
                        "--exclude-system", "s1")
    d = json.loads(out)
    m = df.filter(pl.col("system") != "s1").group_by("condition", "system").agg(pl.col("score").mean()).sort("system")
    ref = stats.kendalltau(m.filter(pl.col("condition") == "DOC")["score"], m.filter(pl.col("condition") == "MIX")["score"])
    assert code == 0 and d["systems"] == ["s2", "s3", "s4"] and d["tau"] == pytest.approx(ref.statistic, abs=1e-12)


# --------------------------------------------------------------------------- A7 domains


def test_wmt24_by_domain_refuses_a_segment_with_two_domains(tmp_path, capsys):
    df = _long().with_columns((pl.col("segment_id") % 2).cast(pl.String).alias("domain"))
    good, bad = tmp_path / "dom.csv", tmp_path / "dom_bad.csv"
    df.write_csv(good)
    df.with_columns(pl.when(pl.col("system") == "s1").then(pl.lit("9")).otherwise(pl.col("domain"))
                    .alias("domain")).write_csv(bad)
    code, out, err = _run(capsys, "cluster", str(bad), "--in", "DOC", "--method", "wmt24", "--by-domain")
    assert code == 3 and out == ""
    line = _one_error(err, "D352")
    n_bad = df.filter(pl.col("condition") == "DOC").select("document_id", "segment_id").unique().height
    assert f"{n_bad} segment(s) carry different domains" in line and str(bad) in line
    assert "document_id='d0', segment_id=0: domain '0' for system(s) s2, s3, s4; domain '9' for system(s) s1" in line
    # one domain per segment: Stouffer over the per-domain two-sided scipy Wilcoxon p-values
    code, out, _ = _run(capsys, "cluster", str(good), "--in", "DOC", "--method", "wmt24", "--by-domain")
    d = json.loads(out)
    doc = df.filter(pl.col("condition") == "DOC")
    i, j = d["order"][0], d["order"][-1]
    z = []
    for dom in ("0", "1"):
        part = doc.filter(pl.col("domain") == dom).pivot(on="system", index=["document_id", "segment_id"],
                                                         values="score")
        p = stats.wilcoxon(part[i].to_numpy() - part[j].to_numpy()).pvalue
        z.append(special.ndtri(1 - p))
    ref = 1 - special.ndtr(sum(z) / np.sqrt(len(z)))
    assert code == 0 and d["p_values"][0][-1] == pytest.approx(ref, abs=1e-12)


# --------------------------------------------------------------------------- A8, B4 types


@pytest.fixture(scope="module")
def odd_tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("odd")
    df = _long()
    days = (pl.lit(dt.date(2020, 1, 1)) + pl.duration(days=pl.col("score").round().cast(pl.Int64))).alias("score")
    tables = {
        "datescore": (df.with_columns(days), "D303", "score"),
        "listscore": (df.with_columns(pl.col("score").map_elements(lambda v: [v], return_dtype=pl.List(pl.Float64))),
                      "D303", "score"),
        "structscore": (df.with_columns(pl.struct(pl.col("score").alias("v")).alias("score")), "D303", "score"),
        "listdoc": (df.with_columns(pl.col("document_id").map_elements(lambda v: [v],
                                                                       return_dtype=pl.List(pl.String))),
                    "D108", "document_id"),
    }
    out = {}
    for name, (t, code, col) in tables.items():
        t.write_parquet(root / f"{name}.parquet")
        wide = t.filter(pl.col("condition") == "DOC").drop("condition", "annotator")
        wide.write_parquet(root / f"{name}_wide.parquet")
        out[name] = (root / f"{name}.parquet", root / f"{name}_wide.parquet", code, col)
    return out


@pytest.mark.parametrize("name", ["datescore", "listscore", "structscore", "listdoc"])
def test_odd_column_types_are_coded_errors(odd_tables, capsys, name):
    path, wide, code, col = odd_tables[name]
    assert pl.read_parquet(path).schema[col] not in (pl.Float64, pl.String)  # the type under test, as written
    for argv in (("tost", str(path), "--a", "DOC", "--b", "MIX", "--margin", "3"),
                 ("tost", str(path), "--a", "DOC", "--b", "MIX", "--margin", "3", "--independent"),
                 ("tau", str(path), "--a", "DOC", "--b", "MIX", "--n-boot", "50"),
                 ("cluster", str(path), "--in", "DOC", "--n-boot", "50"),
                 ("cluster", str(path), "--in", "DOC", "--method", "wmt25"),
                 ("alpha", str(path), "--coder", "condition")):
        rc, out, err = _run(capsys, *argv)
        assert rc == 3 and out == "", argv
        line = _one_error(err, code)
        assert str(path) in line and f"column '{col}'" in line, line
    rc, out, err = _run(capsys, "compare", str(wide), "--baseline", "s1", "--n-boot", "50", "--n-ar", "50")
    assert rc == 3 and out == ""
    line = _one_error(err, "D395" if code == "D303" else "D108")
    assert str(wide) in line and f"'{col}'" in line


# --------------------------------------------------------------------------- B1 tost --by


def test_tost_by_a_pairing_column_is_one_test_per_group(tmp_path, capsys):
    df = _long()
    path = tmp_path / "base.csv"
    df.write_csv(path)
    a = df.filter(pl.col("condition") == "DOC").select(*KEYS, pl.col("score").alias("x"))
    b = df.filter(pl.col("condition") == "MIX").select(*KEYS, pl.col("score").alias("y"))
    pairs = a.join(b, on=KEYS)
    for col in ("system", "annotator"):
        code, out, err = _run(capsys, "tost", str(path), "--a", "DOC", "--b", "MIX", "--margin", "3", "--by", col)
        assert code == 0, err
        d = json.loads(out)
        assert [g[col] for g in d["groups"]] == sorted(pairs[col].unique().to_list())
        for g in d["groups"]:
            part = pairs.filter(pl.col(col) == g[col])
            p, _, _ = ttost_paired(part["x"].to_numpy(), part["y"].to_numpy(), -3, 3)
            assert g["p_value"] == pytest.approx(p, abs=1e-12) and g["n"] == part.height


@pytest.mark.parametrize("by,what", [("score", "cannot group by the score column"),
                                     ("condition", "cannot group by the condition column"),
                                     ("segment_id,segment_id", "'segment_id' twice")])
def test_tost_by_role_or_repeated_column_is_a_usage_error(tmp_path, capsys, by, what):
    path = tmp_path / "base.csv"
    _long().write_csv(path)
    assert len(by.split(",")) != len(set(by.split(","))) or by in ("score", "condition")
    for design in ((), ("--independent",)):
        code, out, err = _run(capsys, "tost", str(path), "--a", "DOC", "--b", "MIX", "--margin", "3", "--by", by,
                              *design)
        assert code == 2 and out == ""
        assert what in _one_error(err, "D311")


# --------------------------------------------------------------------------- B3 ids beyond int64


def test_ids_beyond_int64_are_ordered_like_integers(tmp_path, capsys):
    df = _long()
    # 7, 1e22, 2e22: a plain 23-digit integer in a CSV (polars reads it as Int128); the same order as 0, 1, 2
    big = {0: "7", 1: "10000000000000000000000", 2: "20000000000000000000000"}
    huge = tmp_path / "hugeid.csv"
    small = tmp_path / "smallid.csv"
    df.with_columns(pl.col("segment_id").replace_strict(big, return_dtype=pl.String)).write_csv(huge)
    df.write_csv(small)
    assert pl.read_csv(huge).schema["segment_id"] == pl.Int128
    wide_h, wide_s = tmp_path / "cmp_huge.csv", tmp_path / "cmp_small.csv"
    for src, dst in ((huge, wide_h), (small, wide_s)):
        pl.read_csv(src).filter(pl.col("condition") == "DOC").drop("condition", "annotator").write_csv(dst)
    runs = [("compare", "{w}", "--baseline", "s1", "--n-boot", "50", "--n-ar", "50", "--unit", "segment"),
            ("cluster", "{t}", "--in", "DOC", "--method", "wmt25"),
            ("cluster", "{t}", "--in", "DOC", "--n-boot", "50", "--unit", "segment"),
            ("tau", "{t}", "--a", "DOC", "--b", "MIX", "--n-boot", "50", "--unit", "segment"),
            ("tost", "{t}", "--a", "DOC", "--b", "MIX", "--margin", "3"),
            ("alpha", "{t}", "--coder", "condition")]
    for argv in runs:
        got = []
        for t, w in ((huge, wide_h), (small, wide_s)):
            code, out, err = _run(capsys, *(a.format(t=t, w=w) for a in argv))
            assert code == 0, err
            d = json.loads(out)
            d.pop("signature", None), d.pop("signature_line", None), d.pop("warnings", None)
            got.append(d)
        assert got[0] == got[1], argv
    # and the wmt25 p-value is scipy's one-sided Wilcoxon on the segment pairs
    code, out, _ = _run(capsys, "cluster", str(huge), "--in", "DOC", "--method", "wmt25", "--no-pair-annotator")
    d = json.loads(out)
    x = df.filter(pl.col("condition") == "DOC").pivot(on="system", index=["document_id", "segment_id"],
                                                     values="score")
    i, j = d["order"][0], d["order"][-1]
    ref = stats.wilcoxon(x[i].to_numpy() - x[j].to_numpy(), alternative="greater").pvalue
    assert d["p_values"][0][-1] == pytest.approx(ref, abs=1e-12)


# --------------------------------------------------------------------------- C6 margin flags


@pytest.mark.parametrize("flags", [("--margin", "nan"), ("--bounds", "3", "1"), ("--margin=-2",)])
def test_tost_margin_errors_name_the_real_flags(tmp_path, capsys, flags):
    path = tmp_path / "base.csv"
    _long().write_csv(path)
    code, out, err = _run(capsys, "tost", str(path), "--a", "DOC", "--b", "MIX", *flags)
    assert code == 2 and out == ""
    line = _one_error(err, "D311")
    assert "--margin" in line and "--bounds" in line and "--low" not in line and "--high" not in line
    # the flags named are the parser's own (its help lists --margin and --bounds, and no --low/--high)
    try:
        main(["stats", "tost", "--help"])
    except SystemExit:
        pass
    helptext = capsys.readouterr().out
    assert "--margin EPS" in helptext and "--bounds LOW HIGH" in helptext
    assert "--low" not in helptext and "--high" not in helptext
