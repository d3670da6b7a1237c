"""``--ddp-col`` (issue 21): select, sample, stratify, plot and report by ``ddp`` or ``ddp_certified``.

The profile is hand-made with polars and carries both columns, ``ddp_certified`` differing from ``ddp``
on many rows. Expected values come from independent code: the slow loops of tests/oracles/curation.py
(select, sample) run on rows whose ``ddp`` is replaced by the chosen column, scipy.stats.spearmanr and a
Python loop for the binned means (stratify), numpy for the histogram counts. No spaCy.
"""
from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from oracles import curation as oracle
from test_select_sample import jsonl_lines, make_rows

from ddpcore.cli.main import main
from ddpcore.curate import sample as SAM
from ddpcore.curate import select as SEL
from ddpcore.errors import DDPDataError

COLS = ["ddp", "ddp_certified"]


def with_certified(rows: list[dict], seed: int) -> list[dict]:
    """``ddp_certified`` <= ``ddp``: a random share of each segment's DDP (0 on about a third)."""
    rng = np.random.default_rng(100 + seed)
    return [{**r, "ddp_certified": int(rng.integers(0, r["ddp"] + 1)) if rng.random() < 0.66 else 0} for r in rows]


def write_profile(rows: list[dict], path: Path) -> Path:
    df = pl.DataFrame(rows).select("document_id", "segment_id", "domain",
                                   pl.col("n_sentences").cast(pl.Int32), pl.col("ddp").cast(pl.Int32),
                                   pl.col("ddp_certified").cast(pl.Int32), pl.col("first_sentence").cast(pl.Int32))
    sig = {"columns": {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"}}
    pq.write_table(df.to_arrow().replace_schema_metadata({b"ddpcore.signature": json.dumps(sig).encode()}), path)
    return path


def as_col(rows: list[dict], col: str) -> list[dict]:
    """The rows as the oracle reads them: ``ddp`` = the chosen column."""
    return [{**r, "ddp": r[col]} for r in rows]


@pytest.fixture()
def data(tmp_path: Path):
    rows = with_certified(make_rows(25, 3), 3)
    assert sum(r["ddp"] != r["ddp_certified"] for r in rows) > len(rows) // 4  # the columns really differ
    prof = write_profile(rows, tmp_path / "p.parquet")
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"".join(jsonl_lines(rows)))
    return rows, prof, src


CRITERIA = [dict(min_ddp=2), dict(max_ddp=1), dict(top_share=0.3), dict(min_ddp=2, with_context=True),
            dict(min_ddp=3, level="document"), dict(top_share=0.2, domains=("news",), with_context=True)]


@pytest.mark.parametrize("col", COLS)
@pytest.mark.parametrize("crit", CRITERIA, ids=[json.dumps(c) for c in CRITERIA])
def test_select_by_either_column_matches_the_oracle(data, col: str, crit: dict) -> None:
    rows, prof, src = data
    res = SEL.select(src, prof, SEL.Criteria(**crit), ddp_col=col)
    assert set(np.flatnonzero(res.keep).tolist()) == oracle.select(as_col(rows, col), **crit)
    assert res.signature["ddp_col"] == col and res.summary["ddp_col"] == col
    kept = [r[col] for i, r in enumerate(rows) if res.keep[i]]
    assert res.summary["after"]["max"] == max(kept)  # the summary describes the chosen column


def test_the_two_columns_select_different_rows(data) -> None:
    rows, prof, src = data
    a = SEL.select(src, prof, SEL.Criteria(min_ddp=2), ddp_col="ddp").keep
    b = SEL.select(src, prof, SEL.Criteria(min_ddp=2), ddp_col="ddp_certified").keep
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("col", COLS)
@pytest.mark.parametrize("by", ["document", "segment"])
def test_sample_by_either_column_matches_the_oracle(data, col: str, by: str) -> None:
    rows, prof, src = data
    res = SAM.sample(src, prof, "0,1,3,6,inf", 3, by=by, seed=5, ddp_col=col)
    want, report = oracle.sample(as_col(rows, col), [0, 1, 3, 6, math.inf], 3, by, 5)
    assert set(np.flatnonzero(res.keep).tolist()) == want
    assert [(b["available"], b["achieved"]) for b in res.bins] == report
    assert res.signature["ddp_col"] == col


def test_cli_select_sample_record_the_column_and_refuse_unknown(data, tmp_path: Path, capsys) -> None:
    rows, prof, src = data
    out = tmp_path / "o.jsonl"
    assert main(["select", str(src), "--profile", str(prof), "--min-ddp", "2", "--ddp-col", "ddp_certified",
                 "-o", str(out)]) == 0
    sig = json.loads((tmp_path / "o.jsonl.signature.json").read_text())
    assert sig["ddp_col"] == "ddp_certified"
    want = oracle.select(as_col(rows, "ddp_certified"), min_ddp=2)
    assert len(out.read_bytes().splitlines()) == len(want)
    assert "DDP (ddp_certified) mean" in capsys.readouterr().out
    for cmd in (["select", str(src), "--profile", str(prof), "--min-ddp", "2"],
                ["sample", str(src), "--profile", str(prof), "--per-bin", "2"]):
        assert main([*cmd, "--ddp-col", "ddp_typo", "-o", str(tmp_path / "x.jsonl")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "[D780]" in err[0] and "ddp_typo" in err[0]
        assert "ddp, ddp_certified" in err[0]  # names the columns the profile has
    assert main(["select", str(src), "--profile", str(prof), "--min-ddp", "2", "--ddp-col", "domain",
                 "-o", str(tmp_path / "x.jsonl")]) == 3
    assert "[D781]" in capsys.readouterr().err


def test_a_fractional_ddp_column_is_refused(data, tmp_path: Path) -> None:
    rows, _, src = data
    df = pl.DataFrame(rows).with_columns((pl.col("ddp_certified") + 0.5).alias("ddp_certified"))
    p = tmp_path / "frac.parquet"
    df.write_parquet(p)
    with pytest.raises(DDPDataError) as e:
        SEL.select(src, p, SEL.Criteria(min_ddp=1), ddp_col="ddp_certified")
    assert e.value.code == "D781" and "row 1" in str(e.value)


# ----------------------------------------------------------------------------- stratify


def slow_stratify(rows: list[dict], scores: list[dict], col: str, edges: list[float]) -> tuple[float, list]:
    """Spearman (scipy) and the per-bin (n, mean) by a loop over the joined rows."""
    from scipy.stats import spearmanr

    ddp = {(r["document_id"], r["segment_id"]): r[col] for r in rows}
    x = [ddp[(s["document_id"], s["segment_id"])] for s in scores]
    y = [s["score"] for s in scores]
    bins = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        v = [b for a, b in zip(x, y) if lo <= a < hi]
        bins.append((len(v), sum(v) / len(v) if v else None))
    return float(spearmanr(x, y).statistic), bins


@pytest.mark.parametrize("col", COLS)
def test_stratify_by_either_column_matches_scipy_and_a_loop(data, tmp_path: Path, col: str) -> None:
    rows, prof, _ = data
    rng = np.random.default_rng(0)
    scores = [{"document_id": r["document_id"], "segment_id": r["segment_id"],
               "score": float(80 - 2 * r["ddp_certified"] + rng.normal(0, 5))} for r in rows]
    s = tmp_path / "s.csv"
    pl.DataFrame(scores).write_csv(s)
    out = tmp_path / f"{col}.json"
    assert main(["stratify", str(prof), str(s), "--score-col", "score", "--ddp-col", col, "--bins", "0,1,3,inf",
                 "--n-boot", "50", "-o", str(out)]) == 0
    res = json.loads(out.read_text())
    rho, bins = slow_stratify(rows, scores, col, [0, 1, 3, math.inf])
    g = res["groups"][0]
    assert g["spearman"]["rho"] == pytest.approx(rho, abs=1e-12)
    assert [(b["n"], b["mean"]) for b in g["bins"]] == [(n, pytest.approx(m, abs=1e-9) if m is not None else None)
                                                        for n, m in bins]
    assert res["signature"]["ddp_col"] == col
    assert json.loads((tmp_path / f"{col}.json.signature.json").read_text())["ddp_col"] == col


def test_stratify_unknown_column_is_exit_2_naming_the_columns(data, tmp_path: Path, capsys) -> None:
    rows, prof, _ = data
    s = tmp_path / "s.csv"
    pl.DataFrame(rows).select("document_id", "segment_id", pl.lit(1.0).alias("score")).write_csv(s)
    assert main(["stratify", str(prof), str(s), "--score-col", "score", "--ddp-col", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "[D780]" in err[0] and "ddp_certified" in err[0]


# ----------------------------------------------------------------------------- plot and report


def svg_signature(path: Path) -> dict:
    import xml.etree.ElementTree as ET

    desc = ET.parse(path).getroot().find("{http://www.w3.org/2000/svg}metadata//"
                                         "{http://purl.org/dc/elements/1.1/}description")
    return json.loads(desc.text)


@pytest.mark.parametrize("col", COLS)
def test_plot_hist_draws_the_chosen_column(data, tmp_path: Path, col: str) -> None:
    pytest.importorskip("matplotlib")
    from ddpcore.report import plots

    rows, prof, _ = data
    out = tmp_path / "h.svg"
    assert main(["plot", str(prof), "--kind", "hist", "--ddp-col", col, "-o", str(out)]) == 0
    assert svg_signature(out)["ddp_col"] == col
    df, sig = plots.load_profile(prof, ddp_col=col)
    fig = plots.hist_figure(df, ddp_col=col)
    heights = [int(p.get_height()) for p in fig.axes[0].patches]
    values = [r[col] for r in rows]
    edges = plots.hist_edges(max(values)).tolist()  # one bin per value to 4, then widening [low, high) bins
    want = [sum(1 for v in values if lo <= v < hi) for lo, hi in zip(edges[:-1], edges[1:])]  # by a loop
    assert heights == want and sum(heights) == len(rows)
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_plot_curves_and_report_follow_the_stratify_column(data, tmp_path: Path, capsys) -> None:
    pytest.importorskip("matplotlib")
    rows, prof, _ = data
    s = tmp_path / "s.csv"
    pl.DataFrame(rows).select("document_id", "segment_id", (100 - pl.col("ddp")).cast(pl.Float64).alias("score")
                              ).write_csv(s)
    j = tmp_path / "st.json"
    assert main(["stratify", str(prof), str(s), "--score-col", "score", "--ddp-col", "ddp_certified",
                 "--n-boot", "20", "-o", str(j)]) == 0
    c = tmp_path / "c.svg"
    assert main(["plot", str(j), "--kind", "curves", "-o", str(c)]) == 0
    assert svg_signature(c)["ddp_col"] == "ddp_certified"
    capsys.readouterr()
    assert main(["plot", str(j), "--kind", "curves", "--ddp-col", "ddp", "-o", str(c)]) == 2
    assert "[D782]" in capsys.readouterr().err
    r = tmp_path / "r.html"
    assert main(["report", str(prof), "--stratify", str(j), "-o", str(r)]) == 2  # default ddp != ddp_certified
    assert "[D782]" in capsys.readouterr().err
    assert main(["report", str(prof), "--stratify", str(j), "--ddp-col", "ddp_certified", "--top", "3",
                 "-o", str(r)]) == 0
    page = r.read_text()
    meta = re.search(r'<meta name="ddpcore-signature" content="([^"]*)">', page)
    assert json.loads(html.unescape(meta.group(1)))["ddp_col"] == "ddp_certified"
    # the top 3 are the 3 highest ddp_certified segments (ties in profile order), by a sort in Python
    top = sorted(range(len(rows)), key=lambda i: (-rows[i]["ddp_certified"], i))[:3]
    got = re.findall(r"document <b>([^<]*)</b>, segment <b>([^<]*)</b>", page)[:3]
    assert got == [(rows[i]["document_id"], str(rows[i]["segment_id"])) for i in top]
    assert main(["report", str(prof), "--ddp-col", "nope", "-o", str(r)]) == 2
    assert "[D780]" in capsys.readouterr().err
