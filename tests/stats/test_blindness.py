"""``ddpcore.stats.blindness`` and ``ddp blindness`` on simulated metrics whose truth is known."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from statsmodels.stats.weightstats import ttost_paired

from ddpcore.cli.main import main
from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.stats.blindness import blindness, simulate_scores
from ddpcore.stats.bootstrap import bootstrap_tau
from ddpcore.stats.power import tost_power
from ddpcore.stats import BlindnessDesign, ResampleOptions



def test_blind_metric_is_blind() -> None:
    r = blindness(simulate_scores(40, 5, 8, shift=0.0, seed=1), margin=3, options=ResampleOptions(n_boot=500), design=BlindnessDesign(n_boot_cluster=200))
    assert r.verdict == "blind"
    assert r.evidence["tost"]["equivalent"] and not r.evidence["ranking"]["rankings_differ"]
    assert r.power > 0.99 and r.to_dict()["signature"]["method"] == "blindness"


def test_shifted_metric_is_sensitive() -> None:
    r = blindness(simulate_scores(40, 5, 8, shift=6.0, seed=1), margin=3, options=ResampleOptions(n_boot=500), design=BlindnessDesign(n_boot_cluster=200))
    assert r.verdict == "sensitive"
    t = r.evidence["tost"]
    assert t["ci_high"] < -3  # mean(DOC - MIX) = -6 +- noise
    assert t["mean_diff"] == pytest.approx(-6.0, abs=0.5)


def test_reranked_metric_is_sensitive_through_the_rankings() -> None:
    # no mean shift, but MIX reorders systems completely: rank_noise >> system spread
    df = simulate_scores(200, 3, 8, shift=0.0, system_sd=0.5, rank_noise=0.0, seed=3, noise=1.0)
    rev = df.with_columns(pl.when(pl.col("condition") == "MIX").then(
        pl.col("score") - 2 * (pl.col("score").mean().over("system", "condition") - 70)).otherwise(pl.col("score")))
    r = blindness(rev, margin=3, options=ResampleOptions(n_boot=500), design=BlindnessDesign(n_boot_cluster=200))
    assert r.evidence["ranking"]["ci_high"] < 0.667
    assert r.verdict == "sensitive" and any("rankings differ" in x for x in r.reasons)


def test_handful_of_documents_is_inconclusive_with_power() -> None:
    # 3 documents x 1 segment x 3 systems, noisy: 9 pairs cannot establish +-1
    df = simulate_scores(3, 1, 3, shift=0.0, noise=4.0, seed=4)
    r = blindness(df, margin=1, options=ResampleOptions(n_boot=500), design=BlindnessDesign(unit="segment", n_boot_cluster=200))
    assert r.verdict == "inconclusive"
    assert r.power < 0.8 and r.n_needed is not None and r.n_needed > 9
    assert any("underpowered" in x for x in r.reasons)


def test_tost_equals_statsmodels_and_tau_equals_bootstrap_tau() -> None:
    df = simulate_scores(20, 4, 6, shift=0.5, seed=7)
    r = blindness(df, margin=2, options=ResampleOptions(n_boot=500), design=BlindnessDesign(n_boot_cluster=200))
    doc = df.filter(pl.col("condition") == "DOC").sort("document_id", "segment_id", "system")["score"].to_numpy()
    mix = df.filter(pl.col("condition") == "MIX").sort("document_id", "segment_id", "system")["score"].to_numpy()
    p, _, _ = ttost_paired(doc, mix, -2, 2)
    assert r.evidence["tost"]["p_value"] == pytest.approx(p, rel=1e-10)
    tau = bootstrap_tau(df, "DOC", "MIX", options=ResampleOptions(n_boot=500, seed=0))
    assert r.evidence["ranking"]["ci_low"] == tau.ci_low and r.evidence["ranking"]["tau"] == tau.tau
    sd = float(np.std(doc - mix, ddof=1))
    assert r.evidence["power"]["power"] == pytest.approx(tost_power(doc.size, sd, -2, 2), abs=1e-12)


def test_margin_sd_and_document_unit() -> None:
    df = simulate_scores(30, 4, 5, seed=2)
    r = blindness(df, margin_sd=0.5, options=ResampleOptions(n_boot=500), design=BlindnessDesign(unit="document", n_boot_cluster=200))
    t = r.evidence["tost"]
    assert t["n"] == 30 * 5 and t["margin"] == pytest.approx(0.5 * t["sd_diff"])


def test_source_attribution_of_mix_rows() -> None:
    df = simulate_scores(10, 4, 4, seed=5)
    mix = df.filter(pl.col("condition") == "MIX").with_columns(
        pl.col("system").alias("source_system"), pl.lit("sys00").alias("system"))
    both = pl.concat([df.filter(pl.col("condition") == "DOC").with_columns(pl.lit(None, pl.String).alias("source_system")), mix])
    r = blindness(both, margin=3, options=ResampleOptions(n_boot=500), design=BlindnessDesign(n_boot_cluster=200))
    assert r.evidence["attribute"] == "source" and r.evidence["tost"]["unpaired_a"] == 0
    stray = both.with_columns(pl.when(pl.col("condition") == "MIX").then(pl.lit("ghost")).otherwise(
        pl.col("source_system")).alias("source_system"))
    with pytest.raises(DDPDataError, match=r"D512.*document 'doc00000'.*'ghost'"):
        blindness(stray, margin=3, options=ResampleOptions(n_boot=500), design=BlindnessDesign(n_boot_cluster=200))


def test_recoverability_and_spans_when_given() -> None:
    df = simulate_scores(15, 3, 4, seed=6, conditions=("DOC", "MIX"))
    seg = simulate_scores(15, 3, 4, seed=6, conditions=("SEG", "X")).filter(pl.col("condition") == "SEG")
    full = pl.concat([df, seg]).with_columns(
        pl.lit("abcdefghij").alias("target_text"),
        pl.struct(span_start=pl.col("segment_id"), span_end=pl.col("segment_id") + 1).implode().over(
            "document_id", "segment_id", "system", "condition").alias("error_spans"))
    r = blindness(full, margin=3, options=ResampleOptions(n_boot=500), design=BlindnessDesign(n_boot_cluster=200))
    assert set(r.evidence["recoverability"]) == {"SEG->DOC", "SEG->MIX"}
    assert r.evidence["boundary_spans"]["n_spans_a"] == df.height // 2


def test_bad_input() -> None:
    df = simulate_scores(5, 2, 3)
    with pytest.raises(DDPUsageError, match="D510"):
        blindness(df, margin=0)
    with pytest.raises(DDPUsageError, match="D510"):
        blindness(df, margin=-1)
    with pytest.raises(DDPDataError, match=r"D511.*found: 'DOC', 'MIX'"):
        blindness(df, "DOC", "MEX", margin=1)


def test_cli_formats_and_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "s.csv"
    simulate_scores(20, 3, 5, seed=1).write_csv(src)
    out = tmp_path / "r.json"
    # simulated scores have no source_system column: --attribute nominal says so (auto would warn)
    args = ["blindness", str(src), "--margin", "3", "--n-boot", "300", "--n-boot-cluster", "100", "--attribute", "nominal"]
    assert main(args) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["verdict"] == "blind" and "signature" in payload
    assert main(args + ["-o", str(out)]) == 0  # -o FILE: the result goes there instead of stdout (issue 23)
    assert capsys.readouterr().out == "" and json.loads(out.read_text()) == payload
    side = json.loads((tmp_path / "r.json.signature.json").read_text())
    assert side.pop("data")["bytes"] == out.stat().st_size and side == payload["signature"]  # + the stamp of r.json
    assert main(args + ["-f", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "| verdict | **blind** |" in md and "Signature:" in md
    assert main(args + ["-f", "text", "--fail-on", "blind"]) == 1
    cap = capsys.readouterr()
    assert cap.err.count("\n") == 1 and "gate blind failed" in cap.err


def test_renamed_columns_agree() -> None:
    """Renamed columns through ``columns=TableColumns(...)`` give the same verdict and TOST as the
    canonical names; the default call warns nothing; the removed per-role keywords are a TypeError."""
    import warnings

    from ddpcore.stats import TableColumns

    df = simulate_scores(20, 4, 5, shift=0.0, seed=3)
    renamed = df.rename({"score": "s", "document_id": "doc"})
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        base = blindness(df, margin=3, options=ResampleOptions(n_boot=500), design=BlindnessDesign(n_boot_cluster=200))
        new = blindness(renamed, margin=3, columns=TableColumns(score="s", document="doc"), options=ResampleOptions(n_boot=500), design=BlindnessDesign(n_boot_cluster=200))
    assert new.verdict == base.verdict
    assert new.evidence["tost"] == base.evidence["tost"]
    with pytest.raises(TypeError, match="unexpected keyword argument 'score'"):
        blindness(renamed, margin=3, score="s", document="doc", options=ResampleOptions(n_boot=500), design=BlindnessDesign(n_boot_cluster=200))
