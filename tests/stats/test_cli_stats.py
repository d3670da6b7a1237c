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
    code, out, err = run(capsys, *args, "--margin", "0.5", "--fail-on", "not-equivalent")
    d = json.loads(out)
    assert code == 1 and d["equivalent"] is False and d["passed"] is False
    assert d["condition_a"] == "ESA-1" and d["condition_b"] == "ESA-2" and "a" not in d and "b" not in d
    assert d["signature"]["fail_on"] == "not-equivalent"
    # one line: what failed and by how much (the CI and the margins)
    (line,) = err.strip().splitlines()
    assert (f"gate not-equivalent failed: 90% CI of mean(ESA-1 - ESA-2) [{d['ci_low']:.3f}, {d['ci_high']:.3f}] "
            "not inside (-0.5, 0.5)") in line
    code, out, err = run(capsys, *args, "--margin", "5", "--fail-on", "not-equivalent")
    assert code == 0 and json.loads(out)["passed"] is True and err == ""
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
    assert "passed" not in d  # only with a gate
    code2, out2, err2 = run(capsys, *args, "--fail-on", "different")
    d2 = json.loads(out2)
    assert d2.pop("passed") is (d["ci_low"] >= 0.667)
    assert d2["signature"].pop("fail_on") == "different"
    assert d2 == d
    assert code2 == (1 if d["ci_low"] < 0.667 else 0)
    if code2 == 1:
        assert f"gate different failed: lower bound of the 95% CI of tau, {d['ci_low']:.3f}, is below --tau-min 0.667" in err2
    code3, out3, _ = run(capsys, *args, "--tau-min", "-1", "--fail-on", "different")
    assert code3 == 0 and json.loads(out3)["passed"] is True


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
    assert set(d) == {"condition_a", "condition_b", "clusters_a", "clusters_b", "comparison", "signature", "passed"}
    assert d["clusters_a"]["signature"]["condition"] == "ESA-1" and d["condition_b"] == "ESA-2"
    assert code == (0 if d["comparison"]["same_clusters"] else 1) and d["passed"] is (code == 0)
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
    assert d["signature"]["min_alpha"] == 0.667
    code, out, err = run(capsys, "alpha", str(esa_table), "--coder", "condition", "--min-alpha", "0.9",
                         "--fail-on", "below-min")
    assert code == 1 and json.loads(out)["passed"] is False
    assert json.loads(out)["signature"]["min_alpha"] == 0.9
    assert f"gate below-min failed: alpha {ref:.3f} is below --min-alpha 0.9" in err
    code, _, err = run(capsys, "alpha", str(esa_table), "--in", "ESA-1")
    assert code == 3 and "D314" in err  # one annotation per item within a pool: undefined


# --------------------------------------------------------------------------- errors, reader, process


def test_bad_input_exit_codes(capsys, esa_table, tmp_path):
    code, _, err = run(capsys, "cluster", str(esa_table), "--in", "ESA-1", "--system-col", "engine")
    assert code == 3 and "D301" in err and "engine" in err
    nan = tmp_path / "nan.csv"
    pl.read_csv(esa_table, infer_schema_length=None).with_columns(
        pl.when((pl.col("document_id") == "cnn.151755") & (pl.col("segment_id") == 0)).then(None).otherwise(pl.col("score")).alias("score")).write_csv(nan)
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


# --------------------------------------------------------------------------- issue 7: one consistent CLI


def test_mixed_conditions_refused_by_alpha_and_cluster(capsys, esa_table):
    # the ESA table holds ESA-1 and ESA-2: alpha over annotators would pool two experiments
    for argv in (["alpha", str(esa_table)], ["cluster", str(esa_table), "--method", "wmt25"]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == ""
        assert "[D361]" in err and "'ESA-1', 'ESA-2'" in err and "--in COND" in err
        assert "condition_value" not in err
    code, _, err = run(capsys, "alpha", str(esa_table), "--in", "ESA-3")
    assert code == 3 and "D305" in err


def test_deprecated_column_aliases_still_work_and_warn(capsys, esa_table):
    new = ["cluster", str(esa_table), "--in", "ESA-1", "--method", "wmt25", "--no-pair-annotator"]
    code, out_new, err = run(capsys, *new, "--document-col", "document_id", "--score-col", "score")
    cluster_notes = [ln for ln in err.strip().splitlines() if ln.startswith("ddp stats cluster: warning: ")]
    assert code == 0 and err.strip().splitlines() == cluster_notes  # thin-pair/rank notes of the mini table
    code, out_old, err = run(capsys, *new, "--document", "document_id", "--score", "score")
    assert code == 0 and out_old == out_new
    lines = [ln for ln in err.strip().splitlines() if ln not in cluster_notes]
    assert len(lines) == 2 and all("deprecated" in ln and "warning" in ln for ln in lines)
    assert "--document-col" in lines[0] and "--score-col" in lines[1]
    # the alias really selects the column: a wrong name through the old flag is the same error
    code, _, err = run(capsys, *new, "--system", "engine")
    assert code == 3 and "D301" in err and "--system-col" in err


def test_help_prints_each_default_once_and_every_option_has_help():
    import argparse
    import io
    from contextlib import redirect_stdout

    from ddpcore.cli.main import build_parser

    parser = build_parser()
    stats = next(a for a in parser._subparsers._group_actions[0].choices["stats"]._actions
                 if isinstance(a, argparse._SubParsersAction))
    for name in ("tost", "tau", "cluster", "alpha"):
        sub = stats.choices[name]
        buf = io.StringIO()
        with redirect_stdout(buf):
            sub.print_help()
        text = " ".join(buf.getvalue().split())
        assert "(default: None)" not in text and "(default: True)" not in text and "(default: False)" not in text
        for action in sub._actions:
            if action.help is not argparse.SUPPRESS:
                assert action.help, (name, action.option_strings)
        if name == "tost":
            assert "--paired paired design (the default)" in text
            assert "--independent independent samples instead of pairs" in text
        # an option's help never carries two defaults
        assert "(default: " not in text.split("(default: ", 1)[-1].split(")")[0]
        for chunk in text.split("--")[1:]:
            assert chunk.count("(default:") <= 1, chunk


def test_undefined_result_is_an_error_not_nan(capsys, tmp_path):
    # one pair only: TOST cannot be computed; exit 3 with a code instead of "nan" and exit 0
    one = tmp_path / "one.csv"
    one.write_text("document_id,segment_id,system,condition,score\nd1,1,s1,A,1\nd1,1,s1,B,2\n")
    code, out, err = run(capsys, "tost", str(one), "--a", "A", "--b", "B", "--margin", "3")
    assert code == 3 and out == "" and "[D364]" in err and "n = 1" in err
