"""Nothing is dropped, averaged or left out in silence; every JSON is valid (tester's A3, A4, A6, C3, C5).

* A4: rows dropped by ``--unpaired drop`` / ``--nan-policy omit`` are counted on stderr and recorded
  (``n_omitted`` and the policies in the signature) by ``stats tost``; ``stats tau``, ``stats cluster`` and
  ``stats alpha`` record ``nan_policy`` and ``n_omitted`` in the signature and say a dropped row.
* A3: ``stats alpha --coder condition`` with several annotators of one condition rating a segment is
  D307 (the docs: one coder rating one segment twice is D307, the condition being the coder); it used
  to average them into a per-pool mean.
* C5: alpha's D307 names the file, not ``<table>``.
* A6: ``--min-alpha nan`` / ``--tau-min nan`` are D311 before any work (were exit 1 and ``NaN`` in JSON).
* C3: ``stats cluster --a/--b``: a system missing from one condition is a warning on stderr too.

Expectations come from independent computations: polars anti-joins and null counts, statsmodels'
``ttost_paired``, the krippendorff package.
"""
from __future__ import annotations

import json

import krippendorff
import numpy as np
import polars as pl
import pytest
from statsmodels.stats.weightstats import ttost_paired

from _long_table import long_table as _long, run_stats as _run

KEYS = ["document_id", "segment_id", "system", "annotator"]






def _warnings(err: str, command: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith(f"ddp stats {command}: warning:")]


# --------------------------------------------------------------------------- A4 tost


def test_tost_unpaired_drop_is_counted_said_and_recorded(tmp_path, capsys):
    df = _long()
    miss = df.filter(~((pl.col("document_id") == "d1") & (pl.col("condition") == "MIX")))
    path = tmp_path / "missmix.csv"
    miss.write_csv(path)
    a = miss.filter(pl.col("condition") == "DOC").select(*KEYS, pl.col("score").alias("x"))
    b = miss.filter(pl.col("condition") == "MIX").select(*KEYS, pl.col("score").alias("y"))
    lonely = a.join(b, on=KEYS, how="anti").height + b.join(a, on=KEYS, how="anti").height
    assert lonely == 12
    code, out, err = _run(capsys, "tost", str(path), "--a", "DOC", "--b", "MIX", "--margin", "3", "--unpaired", "drop")
    assert code == 0
    d = json.loads(out)
    assert d["n_omitted"] == lonely
    sig = d["signature"]
    assert sig["unpaired"] == "drop" and sig["n_omitted_unpaired"] == lonely and sig["n_omitted_missing"] == 0
    said = _warnings(err, "tost")
    assert len(said) == 1 and f"{lonely} row(s) without a partner" in said[0] and "--unpaired drop" in said[0]
    assert d["warnings"] == [said[0].split("warning: ", 1)[1]]
    # the test itself is statsmodels' on the pairs that remain
    pairs = a.join(b, on=KEYS).sort(KEYS)
    p, _, _ = ttost_paired(pairs["x"].to_numpy(), pairs["y"].to_numpy(), -3, 3)
    assert d["p_value"] == pytest.approx(p, abs=1e-12) and d["n"] == pairs.height
    # TSV carries the count too
    code, out, _ = _run(capsys, "tost", str(path), "--a", "DOC", "--b", "MIX", "--margin", "3", "--unpaired", "drop",
                        "-f", "tsv")
    head, row = out.strip().splitlines()[1:3]
    assert dict(zip(head.split("\t"), row.split("\t")))["n_omitted"] == str(lonely)
    assert '"unpaired": "drop"' in out.splitlines()[0]


def test_tost_nan_row_and_its_partner_are_both_counted(tmp_path, capsys):
    df = _long().with_columns(pl.when(pl.int_range(pl.len()) == 5).then(None).otherwise(pl.col("score"))
                              .alias("score"))
    path = tmp_path / "null.csv"
    df.write_csv(path)
    n_null = df["score"].null_count()
    kept = df.filter(pl.col("score").is_not_null())
    a = kept.filter(pl.col("condition") == "DOC").select(*KEYS, pl.col("score").alias("x"))
    b = kept.filter(pl.col("condition") == "MIX").select(*KEYS, pl.col("score").alias("y"))
    lonely = a.join(b, on=KEYS, how="anti").height + b.join(a, on=KEYS, how="anti").height
    assert (n_null, lonely) == (1, 1)
    for by in ((), ("--by", "system")):
        code, out, err = _run(capsys, "tost", str(path), "--a", "DOC", "--b", "MIX", "--margin", "3",
                              "--nan-policy", "omit", "--unpaired", "drop", *by)
        assert code == 0
        d = json.loads(out)
        assert d["n_omitted"] == n_null + lonely
        sig = d["signature"]
        assert sig["nan_policy"] == "omit" and sig["n_omitted_missing"] == n_null
        assert sig["unpaired"] == "drop" and sig["n_omitted_unpaired"] == lonely
        said = _warnings(err, "tost")
        assert len(said) == 2 and "missing (null/NaN) score dropped" in said[0] and "row 6" in said[0]
    # --by: one statsmodels test per system on the remaining pairs
    pairs = a.join(b, on=KEYS)
    for g in d["groups"]:
        part = pairs.filter(pl.col("system") == g["system"])
        p, _, _ = ttost_paired(part["x"].to_numpy(), part["y"].to_numpy(), -3, 3)
        assert g["p_value"] == pytest.approx(p, abs=1e-12) and g["n"] == part.height


# --------------------------------------------------------------------------- A4 tau, cluster, alpha


def test_tau_cluster_alpha_record_the_nan_policy_and_the_dropped_rows(tmp_path, capsys):
    df = _long().with_columns(pl.when(pl.int_range(pl.len()).is_in([5, 40])).then(None).otherwise(pl.col("score"))
                              .alias("score"))
    path = tmp_path / "null.csv"
    df.write_csv(path)
    n_null = df["score"].null_count()
    assert n_null == 2
    runs = {"tau": ("tau", "--a", "DOC", "--b", "MIX", "--n-boot", "100"),
            "cluster": ("cluster", "--in", "DOC", "--n-boot", "100"),
            "alpha": ("alpha", "--coder", "condition")}
    for name, (cmd, *rest) in runs.items():
        code, out, err = _run(capsys, cmd, str(path), *rest, "--nan-policy", "omit")
        assert code == 0, name
        d = json.loads(out)
        assert d["signature"]["nan_policy"] == "omit" and d["signature"]["n_omitted"] == n_null, name
        said = [w for w in _warnings(err, cmd) if "missing (null/NaN) score dropped" in w]
        assert len(said) == 1 and f"{n_null} row(s)" in said[0], name
        assert any(f"{n_null} row(s) with a missing" in w for w in d["warnings"]), name
        # the clean table records the policy and 0
        clean = tmp_path / "clean.csv"
        df.filter(pl.col("score").is_not_null()).write_csv(clean)
        code, out, err = _run(capsys, cmd, str(clean), *rest)
        d = json.loads(out)
        assert d["signature"]["nan_policy"] == "raise" and d["signature"]["n_omitted"] == 0, name
        assert "score dropped" not in err


# --------------------------------------------------------------------------- A3, C5 alpha coders


def _pools(n_ann: int, seed: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(5):
        for s in range(3):
            for sy in ("x", "y"):
                t = rng.integers(40, 100)
                for c in ("P1", "P2"):
                    for a in range(n_ann):
                        rows.append(dict(document_id=f"d{d}", segment_id=s, system=sy, annotator=f"{c}a{a}",
                                         condition=c, score=float(t + rng.normal(0, 15))))
    return pl.DataFrame(rows)


def test_alpha_coder_condition_refuses_several_annotators_of_one_pool(tmp_path, capsys):
    pools = _pools(3)
    path = tmp_path / "pools.csv"
    pools.write_csv(path)
    per = pools.group_by("condition", "document_id", "segment_id", "system").len()
    assert per["len"].max() == 3  # three ratings of one segment by one coder (the pool)
    code, out, err = _run(capsys, "alpha", str(path), "--coder", "condition", "-f", "text")
    assert code == 3 and out == ""
    line = err.strip()
    assert "\n" not in line and line.startswith("ddp stats alpha: error: [D307]") and str(path) in line
    assert "condition='P1'" in line and "'P1a0', 'P1a1', 'P1a2'" in line and "rows 1, 2, 3" in line
    # one annotator per pool: allowed, and alpha equals the krippendorff package on the pools as coders
    one = tmp_path / "one.csv"
    _pools(1).write_csv(one)
    code, out, _ = _run(capsys, "alpha", str(one), "--coder", "condition")
    assert code == 0
    wide = _pools(1).pivot(on="condition", index=["document_id", "segment_id", "system"], values="score")
    ref = krippendorff.alpha(reliability_data=wide.select("P1", "P2").to_numpy().T, level_of_measurement="interval")
    assert json.loads(out)["alpha"] == pytest.approx(ref, abs=1e-12)
    # --coder annotator within a pool is the documented way to use the three annotators
    code, out, _ = _run(capsys, "alpha", str(path), "--coder", "annotator", "--in", "P1")
    wide = pools.filter(pl.col("condition") == "P1").pivot(on="annotator", index=["document_id", "segment_id",
                                                                                   "system"], values="score")
    ref = krippendorff.alpha(reliability_data=wide.drop("document_id", "segment_id", "system").to_numpy().T,
                             level_of_measurement="interval")
    assert code == 0 and json.loads(out)["alpha"] == pytest.approx(ref, abs=1e-12)


def test_alpha_repeated_rating_names_the_file(tmp_path, capsys):
    df = _long().drop("annotator")
    twice = df.with_columns(pl.when((pl.col("condition") == "MIX") & (pl.col("system") == "s3")
                                    & (pl.col("segment_id") == 0) & (pl.col("document_id") == "d1"))
                            .then(pl.lit("d0")).otherwise(pl.col("document_id")).alias("document_id"))
    path = tmp_path / "noann2.csv"
    twice.write_csv(path)
    dup = twice.with_row_index("r").filter(pl.struct("condition", "document_id", "segment_id", "system")
                                           .is_duplicated())
    rows = (dup["r"] + 1).to_list()
    code, out, err = _run(capsys, "alpha", str(path), "--coder", "condition")
    assert code == 3 and out == ""
    assert f"[D307] {path}, rows {rows[0]}, {rows[1]}:" in err and "<table>" not in err


# --------------------------------------------------------------------------- A6 thresholds


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_thresholds_are_usage_errors(tmp_path, capsys, value):
    path = tmp_path / "base.csv"
    _long().write_csv(path)
    for argv, flag in ((("alpha", str(path), "--coder", "condition", f"--min-alpha={value}", "--fail-on", "below-min"),
                        "--min-alpha"),
                       (("tau", str(path), "--a", "DOC", "--b", "MIX", "--n-boot", "50", f"--tau-min={value}",
                         "--fail-on", "different"), "--tau-min")):
        code, out, err = _run(capsys, *argv)
        assert code == 2 and out == "", argv
        assert f"[D311] {flag} must be a finite number, got {float(value)}" in err
    # a finite threshold gates as before: alpha vs --min-alpha, a plain comparison
    code, out, _ = _run(capsys, "alpha", str(path), "--coder", "condition", "--min-alpha", "0.99", "--fail-on",
                        "below-min")
    d = json.loads(out)
    assert code == (1 if d["alpha"] < 0.99 else 0) and d["signature"]["min_alpha"] == 0.99
    from ddpcore.errors import DDPUsageError
    from ddpcore.stats import ResampleOptions, bootstrap_tau

    with pytest.raises(DDPUsageError, match=r"\[D311\] tau_min must be a finite number"):
        bootstrap_tau(_long(), "DOC", "MIX", tau_min=float(value), options=ResampleOptions(n_boot=10))


# --------------------------------------------------------------------------- C3 cluster --a/--b


def test_cluster_a_b_says_which_systems_one_condition_lacks(tmp_path, capsys):
    df = _long().filter(~((pl.col("system") == "s4") & (pl.col("condition") == "MIX")))
    path = tmp_path / "nos4mix.csv"
    df.write_csv(path)
    sets = {c: set(df.filter(pl.col("condition") == c)["system"].to_list()) for c in ("DOC", "MIX")}
    only_a = sorted(sets["DOC"] - sets["MIX"])
    assert only_a == ["s4"]
    code, out, err = _run(capsys, "cluster", str(path), "--a", "DOC", "--b", "MIX", "--n-boot", "100")
    assert code == 0
    d = json.loads(out)
    assert d["comparison"]["only_in_a"] == only_a and d["comparison"]["only_in_b"] == []
    said = [w for w in _warnings(err, "cluster") if "only, not under" in w]
    assert len(said) == 1 and "condition 'DOC' only, not under 'MIX': s4" in said[0]
    assert d["comparison"]["warnings"] == [said[0].split("warning: ", 1)[1]]
    assert len(d["comparison"]["systems"]) == len(sets["DOC"] & sets["MIX"])
