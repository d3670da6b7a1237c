"""Hunt 14 (helper 53): the certified column (``--ddp-col ddp_certified``) through every curating and reporting
command, on a real ``ddp profile`` run (12 news/social documents of the bundled WMT25 source, parsed once per
session with --no-cache) and a seeded score table of 4 systems.

Expected values come from independent code on the profile: polars filters and sorts, numpy means and
``np.corrcoef``, ``scipy.stats.spearmanr``/``pearsonr``, never from the code under test.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ddpcore.cli.main import main
from ddpcore.errors import DDPDataError, DDPUsageError

BUNDLED = Path(__file__).resolve().parents[1] / "src" / "ddpcore" / "data" / "wmt25_en_source.jsonl"
CERT = "ddp_certified"


@pytest.fixture(scope="session")
def run(tmp_path_factory):
    """(folder, source JSONL, profile.parquet, sentences.parquet, scores.parquet)."""
    d = tmp_path_factory.mktemp("h53")
    src_all = pl.read_ndjson(BUNDLED)
    docs = src_all.filter(pl.col("domain").is_in(["news", "social"]))["document_id"].unique(
        maintain_order=True).to_list()[:12]
    src = d / "small.jsonl"
    src_all.filter(pl.col("document_id").is_in(docs)).write_ndjson(src)
    prof, sent = d / "prof.parquet", d / "sent.parquet"
    assert main(["profile", str(src), "-o", str(prof), "--sentences", str(sent), "--no-cache", "-q"]) == 0
    p = pl.read_parquet(prof)
    assert (p["ddp"] != p[CERT]).sum() > 10 and (p[CERT] >= 3).sum() > 10  # the two columns really differ
    rng = np.random.default_rng(53)
    rows = [{"document_id": r["document_id"], "segment_id": r["segment_id"], "system": s,
             "esa": float(80 - 3 * k - 0.3 * r[CERT] + rng.normal(0, 4)),
             "xcomet": float(0.8 - 0.004 * r["ddp"] + rng.normal(0, 0.05))}
            for r in p.iter_rows(named=True) for k, s in enumerate("ABCD")]
    scores = d / "scores.parquet"
    pl.DataFrame(rows).write_parquet(scores)
    return d, src, prof, sent, scores


def _one_error(capsys, code: str) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"[{code}]" in err[0], err
    assert "Traceback" not in err[0] and "D999" not in err[0]
    return err[0]


# ----------------------------------------------------------------------------- select / sample by hand


def test_select_min_ddp_on_the_certified_column_is_a_polars_filter(run, tmp_path: Path) -> None:
    d, src, prof, _, _ = run
    out = tmp_path / "sel.jsonl"
    assert main(["select", str(src), "--profile", str(prof), "--min-ddp", "3", "--ddp-col", CERT,
                 "-o", str(out)]) == 0
    got = pl.read_ndjson(out).select("document_id", "segment_id").rows()
    # expected: the profile rows with ddp_certified >= 3, in profile (= input) order, by a polars filter
    want = pl.read_parquet(prof).filter(pl.col(CERT) >= 3).select("document_id", "segment_id").rows()
    assert got == want
    assert json.loads((tmp_path / "sel.jsonl.signature.json").read_text())["ddp_col"] == CERT


def test_select_from_a_csv_profile_without_its_sidecar_uses_the_same_column(run, tmp_path: Path) -> None:
    d, src, prof, _, _ = run
    csv = tmp_path / "prof.csv"
    pl.read_parquet(prof).write_csv(csv)  # no .signature.json beside it
    out = tmp_path / "sel.jsonl"
    assert main(["select", str(src), "--profile", str(csv), "--top-share", "0.25", "--ddp-col", CERT,
                 "-o", str(out)]) == 0
    p = pl.read_parquet(prof)
    k = math.ceil(0.25 * p.height)
    thr = sorted(p[CERT].to_list(), reverse=True)[k - 1]  # the k-th highest certified DDP, ties kept
    want = p.filter(pl.col(CERT) >= thr).select("document_id", "segment_id").rows()
    assert pl.read_ndjson(out).select("document_id", "segment_id").rows() == want


# ----------------------------------------------------------------------------- select --evaluate


def test_evaluate_refuses_a_per_sentence_table(run, tmp_path: Path, capsys) -> None:
    """Before: exit 0, 'join: -N scored segment(s) have no profile row' and every score joined to each of the
    segment's sentences. Now D637 naming the file and the repeated key."""
    d, _, _, sent, scores = run
    rc = main(["select", "--evaluate", str(scores), "--profile", str(sent), "--human-col", "esa",
               "--ddp-col", "sentence_ddp_certified", "--n-random", "20", "-o", str(tmp_path / "ev.json")])
    assert rc == 3
    err = _one_error(capsys, "D637")
    assert str(sent) in err and "more than once" in err
    assert not (tmp_path / "ev.json").exists()


@pytest.mark.parametrize("kind", ["missing", "bool", "text", "nan", "sentences"])
def test_evaluate_selection_api_checks_the_ddp_column(run, kind: str) -> None:
    """Before: a polars ColumnNotFoundError / InvalidOperationError (no D-code), booleans read as DDP 0/1 and
    numeric text as numbers in silence, a per-sentence table joined once per sentence. Now as the CLI."""
    from ddpcore.curate.evaluate import evaluate_selection

    d, _, prof, sent, scores = run
    p = pl.read_parquet(prof)
    col, code = CERT, "D781"
    if kind == "missing":
        p, code = p.drop(CERT), "D780"
    elif kind == "bool":
        p = p.with_columns(pl.col(CERT) > 0)
    elif kind == "text":
        p = p.with_columns(pl.when(pl.int_range(pl.len()) == 2).then(pl.lit("x"))
                           .otherwise(pl.col(CERT).cast(pl.String)).alias(CERT))
    elif kind == "nan":
        p = p.with_columns(pl.when(pl.int_range(pl.len()) == 2).then(float("nan"))
                           .otherwise(pl.col(CERT).cast(pl.Float64)).alias(CERT))
    else:
        p, col, code = pl.read_parquet(sent), "sentence_ddp_certified", "D637"
    with pytest.raises((DDPDataError, DDPUsageError)) as e:
        evaluate_selection(pl.read_parquet(scores), p, human_col="esa", ddp_col=col, profile_name="P")
    assert e.value.code == code and "P" in str(e.value)
    if kind == "missing":
        assert "ddp, first_sentence" in str(e.value)  # names the columns the profile has


def test_evaluate_api_and_cli_agree_and_select_by_the_certified_column(run, tmp_path: Path) -> None:
    from ddpcore.curate.evaluate import EvaluateOptions, evaluate_selection

    d, _, prof, _, scores = run
    out = tmp_path / "ev.json"
    assert main(["select", "--evaluate", str(scores), "--profile", str(prof), "--human-col", "esa",
                 "--ddp-col", CERT, "--ties", "input", "--budgets", "0.1,0.5", "--n-random", "30",
                 "-o", str(out)]) == 0
    cli = json.loads(out.read_text())
    api = evaluate_selection(pl.read_parquet(scores), pl.read_parquet(prof), human_col="esa", ddp_col=CERT,
                             options=EvaluateOptions(budgets=(0.1, 0.5), n_random=30, ties="input"))
    assert cli["signature"]["ddp_col"] == api.signature["ddp_col"] == CERT
    p = pl.read_parquet(prof).with_row_index("__i")
    s = pl.read_parquet(scores)
    for t_cli, t_api, b in zip(cli["budgets"], api.tables, (0.1, 0.5)):
        assert t_cli["mean_human"]["selected"] == pytest.approx(t_api["mean_human"]["selected"], abs=1e-12)
        # by hand: the ceil(b n) segments of highest ddp_certified (stable: profile order among ties), the
        # mean of all their systems' esa scores
        k = math.ceil(b * p.height)
        top = p.sort([CERT, "__i"], descending=[True, False]).head(k).select("document_id", "segment_id")
        want = float(s.join(top, on=["document_id", "segment_id"])["esa"].mean())
        assert t_cli["mean_human"]["selected"] == pytest.approx(want, abs=1e-9)


def test_evaluate_markdown_names_the_column(run) -> None:
    from ddpcore.curate.evaluate import EvaluateOptions, evaluate_selection, render_markdown

    d, _, prof, _, scores = run
    res = evaluate_selection(pl.read_parquet(scores), pl.read_parquet(prof), human_col="esa", ddp_col=CERT,
                             options=EvaluateOptions(budgets=(0.5,), n_random=10))
    assert f"selected by {CERT}" in render_markdown(res).splitlines()[0]


# ----------------------------------------------------------------------------- meta


def _meta_api(prof_df, scores, col=CERT):
    from ddpcore.stats.meta import MetaTests, meta_evaluate
    from ddpcore.stats.options import ResampleOptions

    return meta_evaluate(prof_df, pl.read_parquet(scores), human_col="esa", score_col="xcomet", ddp_col=col,
                         bins="0,1,15,inf", options=ResampleOptions(n_boot=30),
                         tests=MetaTests(n_perm=10, spa_perm=5, spa_ci_perm=2))


@pytest.mark.parametrize("kind", ["missing", "bool", "text"])
def test_meta_api_checks_the_ddp_column_as_the_cli(run, kind: str) -> None:
    """Before: a missing column was D813 (the CLI: D780), booleans were binned as DDP 0/1 in silence and a text
    value was a polars InvalidOperationError."""
    d, _, prof, _, scores = run
    p = pl.read_parquet(prof)
    p, code = {"missing": (p.drop(CERT), "D780"),
               "bool": (p.with_columns(pl.col(CERT) > 0), "D781"),
               "text": (p.with_columns(pl.when(pl.int_range(pl.len()) == 2).then(pl.lit("x"))
                                       .otherwise(pl.col(CERT).cast(pl.String)).alias(CERT)), "D781")}[kind]
    with pytest.raises((DDPDataError, DDPUsageError)) as e:
        _meta_api(p, scores)
    assert e.value.code == code and CERT in str(e.value)


def test_meta_bins_are_of_the_certified_column_through_api_and_cli(run, tmp_path: Path) -> None:
    from scipy.stats import pearsonr

    d, _, prof, _, scores = run
    out = tmp_path / "m.json"
    assert main(["meta", str(prof), str(scores), "--human-col", "esa", "--score-col", "xcomet", "--ddp-col", CERT,
                 "--bins", "0,1,15,inf", "--n-boot", "30", "--n-perm", "10", "--spa-perm", "5",
                 "--spa-ci-perm", "2", "-o", str(out)]) == 0
    cli = json.loads(out.read_text())
    api = _meta_api(pl.read_parquet(prof), scores)
    assert cli["signature"]["ddp_col"] == CERT
    j = pl.read_parquet(scores).join(pl.read_parquet(prof), on=["document_id", "segment_id"])
    for b_cli, b_api, (lo, hi) in zip(cli["bins"], api.bins, [(0, 1), (1, 15), (15, math.inf)]):
        sub = j.filter((pl.col(CERT) >= lo) & (pl.col(CERT) < hi))  # the bin by a polars filter
        assert b_cli["n_segments_scored"] == b_api["n_segments_scored"] == sub.select("document_id", "segment_id"
                                                                                       ).unique().height
        want = pearsonr(sub["esa"], sub["xcomet"]).statistic  # scipy, over the bin's (segment, system) cells
        got = b_cli["metrics"]["xcomet"]["pearson.none"]["value"]
        assert got == pytest.approx(want, abs=1e-9)
        assert b_api["metrics"]["xcomet"]["pearson.none"]["value"] == pytest.approx(got, abs=1e-12)


def test_meta_markdown_and_latex_name_the_column(run, capsys) -> None:
    """Before: the table heads read `DDP [0, 1)` whichever column was binned (stdout has no signature)."""
    d, _, prof, _, scores = run
    for fmt, want in (("markdown", f"DDP ({CERT}) [15, inf)"), ("latex", r"DDP (ddp\_certified) [15, inf)")):
        assert main(["meta", str(prof), str(scores), "--human-col", "esa", "--score-col", "xcomet", "--ddp-col",
                     CERT, "--bins", "0,1,15,inf", "--n-boot", "20", "--n-perm", "10", "--spa-perm", "5",
                     "--spa-ci-perm", "2", "-f", fmt]) == 0
        assert want in capsys.readouterr().out


# ----------------------------------------------------------------------------- plot and report


@pytest.mark.parametrize("cmd", [["plot", "--kind", "hist"], ["plot", "--kind", "ecdf"], ["report"]])
def test_plot_and_report_refuse_a_per_sentence_table(run, tmp_path: Path, capsys, cmd: list[str]) -> None:
    """Before: exit 0, the sentences drawn and counted as 'segments', and the report's top-K listing one segment
    several times (once per sentence)."""
    pytest.importorskip("matplotlib")
    d, _, _, sent, _ = run
    out = tmp_path / ("r.html" if cmd == ["report"] else "f.svg")
    assert main([cmd[0], str(sent), *cmd[1:], "--ddp-col", "sentence_ddp_certified", "-o", str(out)]) == 3
    err = _one_error(capsys, "D671")
    assert str(sent) in err and "more than once" in err and "--sentences" in err
    assert not out.exists()


def test_report_table_is_of_the_certified_column(run, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    import html
    import re

    d, _, prof, _, _ = run
    out = tmp_path / "r.html"
    assert main(["report", str(prof), "--ddp-col", CERT, "--top", "4", "-o", str(out)]) == 0
    page = out.read_text()
    meta = re.search(r'<meta name="ddpcore-signature" content="([^"]*)">', page)
    assert json.loads(html.unescape(meta.group(1)))["ddp_col"] == CERT
    p = pl.read_parquet(prof)
    # the 'all' row's max and the top-4 by a sort in Python (ties in profile order)
    row = re.search(r'<tr class="all">(.*?)</tr>', page).group(1)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row)
    assert cells[-2] == str(p[CERT].max())
    top = sorted(range(p.height), key=lambda i: (-p[CERT][i], i))[:4]
    got = re.findall(r"document <b>([^<]*)</b>, segment <b>([^<]*)</b>", page)[:4]
    assert got == [(p["document_id"][i], str(p["segment_id"][i])) for i in top]


# ----------------------------------------------------------------------------- stratify, agree: API = CLI


def test_stratify_api_and_cli_bin_the_certified_column(run, tmp_path: Path) -> None:
    from scipy.stats import spearmanr

    from ddpcore.io.profiles import read_signature
    from ddpcore.stats import stratify

    d, _, prof, _, scores = run
    out = tmp_path / "s.json"
    assert main(["stratify", str(prof), str(scores), "--score-col", "esa", "--ddp-col", CERT, "--bins",
                 "0,1,5,inf", "--n-boot", "30", "-o", str(out)]) == 0
    cli = json.loads(out.read_text())
    api = stratify(pl.read_parquet(prof), pl.read_parquet(scores), "esa", ddp_col=CERT, bins="0,1,5,inf",
                   n_boot=30, profile_signature=read_signature(prof))
    j = pl.read_parquet(scores).join(pl.read_parquet(prof), on=["document_id", "segment_id"])
    rho = spearmanr(j[CERT], j["esa"]).statistic  # scipy on the joined rows
    for res in (cli, api):
        g = res["groups"][0]
        assert res["signature"]["ddp_col"] == CERT
        assert g["spearman"]["rho"] == pytest.approx(rho, abs=1e-12)
        for b, (lo, hi) in zip(g["bins"], [(0, 1), (1, 5), (5, math.inf)]):
            sub = j.filter((pl.col(CERT) >= lo) & (pl.col(CERT) < hi))["esa"]
            assert b["n"] == sub.len() and b["mean"] == pytest.approx(float(sub.mean()), abs=1e-9)


def test_agree_a_run_against_its_own_certified_column(run, capsys) -> None:
    from scipy.stats import pearsonr, spearmanr

    from ddpcore.gold.agree import agree

    d, _, prof, _, _ = run
    assert main(["agree", str(prof), str(prof), "--b-ddp-col", CERT]) == 0
    cli = json.loads(capsys.readouterr().out)
    api = agree(str(prof), str(prof), ddp_col="ddp", ddp_col_b=CERT).to_dict()
    p = pl.read_parquet(prof)
    a, b = p["ddp"].to_numpy(), p[CERT].to_numpy()
    for res in (cli, api):
        assert (res["ddp_col_a"], res["ddp_col_b"]) == ("ddp", CERT)
        assert res["pearson"] == pytest.approx(pearsonr(a, b).statistic, abs=1e-12)
        assert res["spearman"] == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)
        assert res["share_identical"] == pytest.approx(float(np.mean(a == b)), abs=1e-15)


def test_stats_stratify_stays_the_function_after_its_module_is_imported(run) -> None:
    """Before: once ``ddpcore.stats.stratify`` (the submodule) had been imported, as ``ddp stratify``, ``ddp
    report`` and ``ddp plot`` do, ``ddpcore.stats.stratify(...)`` was the module: TypeError, not callable
    (likewise ``blindness`` and ``lowess``). In a fresh interpreter, so that no earlier test decides the order."""
    import subprocess
    import sys

    d, _, prof, _, scores = run
    code = ("import ddpcore.stats.stratify, ddpcore.stats.blindness, ddpcore.stats.lowess\n"
            "import polars as pl, ddpcore\n"
            "from ddpcore.stats import blindness, lowess\n"
            "assert callable(blindness) and callable(lowess)\n"
            f"r = ddpcore.stats.stratify(pl.read_parquet({str(prof)!r}), pl.read_parquet({str(scores)!r}), 'esa', "
            "ddp_col='ddp_certified', n_boot=10)\n"
            "print(r['signature']['ddp_col'])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == CERT
