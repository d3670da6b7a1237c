"""``ddp agree`` / ddpcore.agree on hand-made runs written like ``ddp profile`` outputs."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from ddpcore.gold.agree import agree
from ddpcore.cli.main import main
from ddpcore.errors import DDPDataError
from ddpcore.io.tables import write_table_atomic

A = [0, 3, 10, 20, 2, 0]
B = [0, 3, 12, 40, 2, 1]
DOMAINS = ["literary", "literary", "literary", "literary", "news", "news"]


def _run(path: Path, ddp: list[int], *, docs: list[str] | None = None, segs: list[int] | None = None,
         domains: list[str] | None = None, pipeline: str = "sm") -> Path:
    df = pl.DataFrame({
        "document_id": docs or ["d1", "d1", "d2", "d2", "d3", "d3"],
        "segment_id": segs or [0, 1, 0, 1, 0, 1],
        "domain": domains or DOMAINS,
        "ddp": ddp,
    })
    sig = {"pipeline": pipeline, "rules": "paper", "distance": "chained",
           "columns": {"document": "document_id", "segment": "segment_id", "domain": "domain"}}
    write_table_atomic(df, path, metadata={"ddpcore.signature": json.dumps(sig)})
    return path


def test_hand_worked(tmp_path: Path) -> None:
    r = agree(_run(tmp_path / "a.parquet", A), _run(tmp_path / "b.parquet", B, pipeline="md"))
    # |B - A| = [0, 0, 2, 20, 0, 1]
    assert r.n_segments == 6 and r.share_identical == 0.5 and r.share_within == pytest.approx(5 / 6)
    assert r.pearson == pytest.approx(stats.pearsonr(A, B).statistic)  # scipy 1.17 pearsonr
    assert r.spearman == pytest.approx(stats.spearmanr(A, B).statistic)
    lit, news = r.domains
    # literary: A mean 33/4 = 8.25, B 55/4 = 13.75; news: A 1.0, B 1.5
    assert (lit.domain, lit.mean_a, lit.mean_b, lit.shift) == ("literary", 8.25, 13.75, 5.5)
    assert (news.mean_a, news.mean_b, news.shift) == (1.0, 1.5, 0.5)
    assert r.ordering_a == r.ordering_b == ("literary", "news") and r.ordering_preserved
    # zero-DDP shares: literary 1/4 in both; news 1/2 in A, 0 in B -> ascending order flips
    assert r.zero_ordering_a == ("literary", "news") and r.zero_ordering_b == ("news", "literary")
    assert not r.zero_ordering_preserved
    assert r.signature_b["pipeline"] == "md"
    assert json.loads(json.dumps(r.to_dict()))["share_identical"] == 0.5


def test_identical_runs(tmp_path: Path) -> None:
    a = _run(tmp_path / "a.parquet", A)
    r = agree(a, a)
    assert r.share_identical == 1.0 and r.pearson == pytest.approx(1.0) and all(d.shift == 0 for d in r.domains)


def test_mismatched_document(tmp_path: Path) -> None:
    a = _run(tmp_path / "a.parquet", A)
    b = _run(tmp_path / "b.parquet", B, docs=["d1", "d1", "d2", "d2", "dX", "dX"])
    with pytest.raises(DDPDataError, match=r"\[D433\] document 'd3' is in A \(.*a.parquet\) but not in B"):
        agree(a, b)


def test_mismatched_segment_cli_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _run(tmp_path / "a.parquet", A)
    b = _run(tmp_path / "b.parquet", B, segs=[0, 1, 0, 2, 0, 1])
    assert main(["agree", str(a), str(b)]) == 3
    err = capsys.readouterr().err
    assert "document 'd2' segment '1' is in A" in err and "[D433]" in err


def test_domain_clash_and_duplicates(tmp_path: Path) -> None:
    a = _run(tmp_path / "a.parquet", A)
    b = _run(tmp_path / "b.parquet", B, domains=["literary"] * 4 + ["social", "news"])
    with pytest.raises(DDPDataError, match=r"\[D434\] document 'd3' segment '0' has domain 'news'"):
        agree(a, b)
    c = _run(tmp_path / "c.parquet", B, segs=[0, 0, 0, 1, 0, 1])
    with pytest.raises(DDPDataError, match=r"\[D432\].*document 'd1' segment '0' appears more than once"):
        agree(a, c)


def test_cli_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _run(tmp_path / "a.parquet", A)
    b = _run(tmp_path / "b.csv", B)  # any table works; no signature then
    assert main(["agree", str(a), str(b), "-f", "text"]) == 0
    out = capsys.readouterr().out
    assert "identical            50.0%" in out and "literary > news" in out and "-> preserved" in out
    assert main(["agree", str(a), str(b), "--within", "1"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["within"] == 1 and d["share_within"] == pytest.approx(4 / 6) and d["signature_b"] == {}
    assert np.isclose(d["domains"][0]["shift"], 5.5)


def _two_columns(path: Path) -> Path:
    """One run with both DDP columns: ``ddp`` = A, ``ddp_certified`` = B (hand-made, as above)."""
    df = pl.DataFrame({"document_id": ["d1", "d1", "d2", "d2", "d3", "d3"], "segment_id": [0, 1, 0, 1, 0, 1],
                       "domain": DOMAINS, "ddp": A, "ddp_certified": B})
    write_table_atomic(df, path, metadata={"ddpcore.signature": json.dumps({"rules": "refined"})})
    return path


def test_ddp_col_b_compares_a_runs_two_columns(tmp_path: Path) -> None:
    run = _two_columns(tmp_path / "r.parquet")
    r = agree(run, run, ddp_col="ddp", ddp_col_b="ddp_certified")
    # the same numbers as test_hand_worked, whose runs hold A and B in their ddp columns
    assert r.share_identical == 0.5 and r.share_within == pytest.approx(5 / 6)
    assert r.spearman == pytest.approx(stats.spearmanr(A, B).statistic)  # scipy
    assert (r.ddp_col_a, r.ddp_col_b) == ("ddp", "ddp_certified")
    both = agree(run, run, ddp_col="ddp_certified")  # one name for both runs
    assert both.share_identical == 1.0 and both.ddp_col_b == "ddp_certified"
    assert both.domains[0].mean_a == pytest.approx(np.mean(B[:4]))  # literary under ddp_certified: 55/4


def test_ddp_col_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = str(_two_columns(tmp_path / "r.parquet"))
    assert main(["agree", run, run, "--b-ddp-col", "ddp_certified"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["share_identical"] == 0.5 and out["ddp_col_b"] == "ddp_certified"
    assert main(["agree", run, run, "--b-ddp-col", "ddp_cert"]) == 2
    err = capsys.readouterr().err
    assert "[D780] --b-ddp-col ddp_cert" in err and "ddp_certified" in err
    assert main(["agree", run, run, "--ddp-col", "nope"]) == 2
    assert "[D780] --ddp-col nope: A (" in capsys.readouterr().err
