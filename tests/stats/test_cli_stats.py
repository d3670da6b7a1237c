"""End-to-end tests of ``ddp stats`` (tost, tau, cluster, alpha) through ddpcore.cli.main.main and
one real subprocess; inputs are the vendored ESA/WMT24 fixtures (tests/data/stats-real)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ddpcore.cli.main import main
from ddpcore.io.esa import read_esa_wmt23
from ddpcore.stats import cluster_systems, tost_paired

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "stats-real"
ESA = FIXTURES / "esa-wmt23-ende-mini"
WMT24 = FIXTURES / "wmt24-genmt-mini"


@pytest.fixture(scope="module")
def esa_table(tmp_path_factory) -> Path:
    """The ESA fixture as a plain CSV long table (core columns + domain)."""
    df = read_esa_wmt23(ESA).select("document_id", "segment_id", "system", "annotator", "condition", "score", "domain")
    path = tmp_path_factory.mktemp("stats") / "esa.csv"
    df.write_csv(path)
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["stats", *argv])
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- tost


def test_tost_paired_json_matches_python_api(capsys, esa_table):
    code, out, _ = run(capsys, "tost", str(esa_table), "--a", "ESA-1", "--b", "ESA-2", "--margin", "3",
                       "--no-pair-annotator")
    assert code == 0
    d = json.loads(out)
    df = pl.read_csv(esa_table, infer_schema_length=None)
    a = df.filter(pl.col("condition") == "ESA-1").sort("document_id", "segment_id", "system")
    b = df.filter(pl.col("condition") == "ESA-2").sort("document_id", "segment_id", "system")
    ref = tost_paired(a["score"].to_numpy(), b["score"].to_numpy(), -3, 3)
    assert d["p_value"] == pytest.approx(ref.p_value, abs=1e-12)
    assert d["mean_diff"] == pytest.approx(ref.mean_diff, abs=1e-12)
    assert d["n"] == 312 and d["equivalent"] is ref.equivalent
    assert d["signature"]["ddpcore"] and d["signature"]["method"] == "tost_paired"
    assert d["signature"]["condition_a"] == "ESA-1"


def test_tost_independent_welch_matches_statsmodels(capsys, esa_table):
    from statsmodels.stats.weightstats import ttost_ind

    code, out, _ = run(capsys, "tost", str(esa_table), "--a", "ESA-1", "--b", "ESA-2", "--margin", "3",
                       "--independent", "--welch")
    assert code == 0
    d = json.loads(out)
    df = pl.read_csv(esa_table, infer_schema_length=None)
    x = df.filter(pl.col("condition") == "ESA-1")["score"].to_numpy()
    y = df.filter(pl.col("condition") == "ESA-2")["score"].to_numpy()
    # statsmodels 0.15: ttost_ind(x, y, -3, 3, usevar="unequal")[0] is the TOST p-value
    assert d["p_value"] == pytest.approx(ttost_ind(x, y, -3, 3, usevar="unequal")[0], abs=1e-12)
    assert d["design"] == "independent" and d["n"] == 624


def test_tost_gate_grouped_and_formats(capsys, esa_table):
    args = ["tost", str(esa_table), "--a", "ESA-1", "--b", "ESA-2", "--no-pair-annotator"]
    code, out, _ = run(capsys, *args, "--margin", "0.5", "--fail-on", "not-equivalent")
    assert code == 1 and json.loads(out)["equivalent"] is False
    code, out, _ = run(capsys, *args, "--margin", "0.5")
    assert code == 0  # no gate: the test ran
    code, out, _ = run(capsys, *args, "--margin", "3", "--by", "domain", "-f", "tsv")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].startswith("# signature: ") and json.loads(lines[0][len("# signature: "):])["method"] == "tost_grouped"
    header = lines[1].split("\t")
    assert header[0] == "domain" and "p_value" in header and len(lines) == 2 + 4
    code, out, _ = run(capsys, *args, "--bounds", "-2", "4", "-f", "text")
    assert code == 0 and "margins (-2, 4)" in out and "signature:" in out


def test_tost_pairs_by_annotator_by_default_and_explains(capsys, esa_table):
    # ESA-1 and ESA-2 are disjoint annotator pools: pairing on the annotator finds no pair
    code, _, err = run(capsys, "tost", str(esa_table), "--a", "ESA-1", "--b", "ESA-2", "--margin", "3")
    assert code == 3 and "D306" in err and "annotator" in err


# --------------------------------------------------------------------------- tau


def test_tau_json_and_gate(capsys, esa_table):
    args = ["tau", str(esa_table), "--a", "ESA-1", "--b", "ESA-2", "--n-boot", "500", "--seed", "3"]
    code, out, _ = run(capsys, *args)
    assert code == 0
    d = json.loads(out)
    assert -1 <= d["ci_low"] <= d["tau"] <= 1 and d["ci_high"] >= d["ci_low"]
    assert d["signature"]["n_boot"] == 500 and d["signature"]["seed"] == 3 and d["signature"]["unit"] == "document"
    code2, out2, _ = run(capsys, *args, "--fail-on", "different")
    assert json.loads(out2) == d
    assert code2 == (1 if d["ci_low"] < 0.667 else 0)
    code3, out3, _ = run(capsys, *args, "--tau-min", "-1", "--fail-on", "different")
    assert code3 == 0


# --------------------------------------------------------------------------- cluster


def test_cluster_single_condition_matches_api(capsys, esa_table):
    code, out, _ = run(capsys, "cluster", str(esa_table), "--in", "ESA-1", "--method", "wmt25", "--no-pair-annotator")
    assert code == 0
    d = json.loads(out)
    ref = cluster_systems(esa_table, "wmt25", condition_value="ESA-1", pair_annotator=False)
    assert d["order"] == list(ref.order)
    assert d["clusters"] == [list(c) for c in ref.clusters]
    np.testing.assert_allclose(np.array(d["p_values"], dtype=float), ref.p_values, equal_nan=True)
    assert d["signature"]["method"] == "wmt25"


def test_cluster_compare_two_conditions_and_gate(capsys, esa_table):
    args = ["cluster", str(esa_table), "--a", "ESA-1", "--b", "ESA-2", "--method", "bootstrap", "--n-boot", "300"]
    code, out, _ = run(capsys, *args, "--fail-on", "different")
    d = json.loads(out)
    assert set(d) == {"a", "b", "comparison", "signature"}
    assert code == (0 if d["comparison"]["same_clusters"] else 1)
    assert d["signature"]["n_boot"] == 300 and d["signature"]["seed"] == 0
    code, out, _ = run(capsys, *args, "-f", "tsv")
    rows = out.strip().splitlines()[1:]
    assert rows[0].split("\t") == ["condition", "position", "system", "mean", "rank_best", "rank_worst", "cluster"]
    assert len(rows) == 1 + 2 * 13
    code, _, err = run(capsys, "cluster", str(esa_table), "--in", "ESA-1", "--fail-on", "different")
    assert code == 2 and "D355" in err


def test_cluster_wmt24_reader_by_language_pair(capsys):
    code, out, _ = run(capsys, "cluster", str(WMT24), "--reader", "wmt24", "--waves", "2", "--lp", "en-cs",
                       "--method", "wmt24", "--by-domain", "-f", "text")
    assert code == 0
    assert "wmt24 clusters: 16 systems" in out and "signature: method=wmt24" in out


# --------------------------------------------------------------------------- alpha


def test_alpha_between_pools_and_gates(capsys, esa_table):
    import krippendorff

    code, out, _ = run(capsys, "alpha", str(esa_table), "--coder", "condition")
    assert code == 0
    d = json.loads(out)
    df = pl.read_csv(esa_table, infer_schema_length=None)
    wide = df.pivot(on="condition", index=["document_id", "segment_id", "system"], values="score")
    # krippendorff 0.8: krippendorff.alpha(reliability_data=<2 x 312>, level_of_measurement="interval")
    ref = krippendorff.alpha(reliability_data=wide.select("ESA-1", "ESA-2").to_numpy().T,
                             level_of_measurement="interval")
    assert d["alpha"] == pytest.approx(ref, abs=1e-12)
    assert d["n_pairable_units"] == 312 and d["signature"]["unit"] == "segment"
    code, _, _ = run(capsys, "alpha", str(esa_table), "--coder", "condition", "--min-alpha", "0.9",
                     "--fail-on", "below-min")
    assert code == 1
    code, _, err = run(capsys, "alpha", str(esa_table), "--in", "ESA-1")
    assert code == 3 and "D314" in err  # one annotation per item within a pool: undefined


# --------------------------------------------------------------------------- errors, reader, process


def test_bad_input_exit_codes(capsys, esa_table, tmp_path):
    code, _, err = run(capsys, "cluster", str(esa_table), "--in", "ESA-1", "--system-col", "engine")
    assert code == 3 and "D301" in err and "engine" in err
    nan = tmp_path / "nan.csv"
    pl.read_csv(esa_table, infer_schema_length=None).with_columns(
        pl.when(pl.col("segment_id") == 29).then(None).otherwise(pl.col("score")).alias("score")).write_csv(nan)
    code, _, err = run(capsys, "cluster", str(nan), "--in", "ESA-1")
    assert code == 3 and "D302" in err
    code, _, _ = run(capsys, "cluster", str(nan), "--in", "ESA-1", "--nan-policy", "omit", "--method", "wmt24")
    assert code == 0
    code, _, err = run(capsys, "tost", str(esa_table), "--a", "ESA-1", "--b", "ESA-2", "--margin", "3",
                       "--alpha", "0.7", "--no-pair-annotator")
    assert code == 2 and "alpha" in err
    code, _, err = run(capsys, "cluster", str(tmp_path / "missing.csv"))
    assert code == 3 and "not found" in err
    with pytest.raises(SystemExit) as exc:
        main(["stats", "tost", str(esa_table), "--a", "ESA-1", "--margin", "3"])
    assert exc.value.code == 2
    assert main(["stats"]) == 2


def test_reader_option_reads_esa_folder(capsys):
    code, out, _ = run(capsys, "tost", str(ESA), "--reader", "esa-wmt23", "--a", "ESA-1", "--b", "ESA-2",
                       "--margin", "3", "--no-pair-annotator")
    assert code == 0 and json.loads(out)["n"] == 312


def test_subprocess_cli_and_light_import(esa_table):
    proc = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "stats", "cluster", str(esa_table), "--in", "ESA-2",
                           "--method", "permutation", "--n-boot", "200", "-q", "--no-pair-annotator"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["method"] == "permutation" and d["signature"]["n_boot"] == 200 and len(d["order"]) == 13
    probe = subprocess.run([sys.executable, "-c", "import sys, ddpcore.cli.stats; "
                            "print(sorted(m for m in ('numpy', 'polars', 'scipy') if m in sys.modules))"],
                           capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip() == "[]"
