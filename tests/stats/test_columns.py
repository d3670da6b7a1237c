"""The columns object (ddpcore.stats.TableColumns) and the clustering strategy table.

TableColumns: defaults from ddpcore.schema, the CLI flag of every role in error messages, renamed
columns through columns= giving the same numbers as the canonical names, and the per-role keywords
of 0.1.0 development (document=, segment=, ...) gone (a TypeError). Strategy table: every method of
cluster_systems reachable through it (same results as the method name), an unknown method is
D351 naming the known ones.
"""
from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

from ddpcore import schema
from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.stats import (
    TableColumns,
    bootstrap_system_means,
    bootstrap_tau,
    cluster_systems,
    load_long_table,
)
from ddpcore.stats.bootstrap import unit_keys
from ddpcore.stats.clustering import METHODS, STRATEGIES
from ddpcore.stats.columns import ROLES, check_columns
from ddpcore.stats import CompareTests, ResampleOptions


def _long(seed: int = 0, n_sys: int = 4, n_docs: int = 6, segs: int = 3) -> pl.DataFrame:
    """Long table: every system scores every segment under DOC and MIX, one annotator per document."""
    rng = np.random.default_rng(seed)
    rows = []
    for cond in ("DOC", "MIX"):
        for s in range(n_sys):
            for d in range(n_docs):
                for g in range(segs):
                    rows.append({"document_id": f"d{d}", "segment_id": g, "system": f"sys{s}",
                                 "annotator": f"a{d % 2}", "condition": cond, "domain": f"dom{d % 2}",
                                 "score": float(60 + 5 * s + rng.normal(0, 8))})
    return pl.DataFrame(rows)


RENAMES = {"document_id": "doc", "segment_id": "seg", "system": "sys", "annotator": "rater",
           "condition": "cond", "score": "esa", "domain": "genre"}
COLS = TableColumns(document="doc", segment="seg", system="sys", annotator="rater", condition="cond", score="esa",
                    domain="genre")


# --------------------------------------------------------------------------- the object


def test_defaults_come_from_schema():
    c = TableColumns()
    assert (c.document, c.segment, c.system, c.annotator, c.condition, c.score, c.text, c.domain) == (
        schema.DOCUMENT_ID, schema.SEGMENT_ID, schema.SYSTEM, schema.ANNOTATOR, schema.CONDITION, schema.SCORE,
        schema.SOURCE, schema.DOMAIN)
    assert ROLES == ("document", "segment", "system", "annotator", "condition", "score", "text", "domain")


def test_flags_name_each_column():
    c = TableColumns(document="doc", score="esa", annotator=None)
    flags = c.flags()
    assert flags["doc"] == "--document-col" and flags["esa"] == "--score-col"
    assert flags["segment_id"] == "--segment-col" and flags["source"] == "--text-col"
    assert flags["domain"] == "--domain-col" and flags["system"] == "--system-col"
    assert "annotator" not in flags  # no annotator column
    assert TableColumns.flag("condition") == "--condition-col"
    with pytest.raises(DDPUsageError, match="D311.*unknown column role 'speaker'"):
        TableColumns.flag("speaker")


def test_frozen_and_checked():
    c = TableColumns()
    with pytest.raises(AttributeError):
        c.score = "x"  # type: ignore[misc]
    assert c.replace(score="esa").score == "esa" and c.score == "score"
    with pytest.raises(DDPUsageError, match=r"D311.*TableColumns.document.*--document-col"):
        TableColumns(document=3)  # type: ignore[arg-type]
    with pytest.raises(DDPUsageError, match=r"D311.*TableColumns.score"):
        TableColumns(score=None)  # type: ignore[arg-type]


def test_check_columns_rules():
    assert check_columns(None, func="f") == TableColumns()
    assert check_columns(COLS, func="f") is COLS
    with pytest.raises(DDPUsageError, match=r"D311.*f\(columns=...\) must be a TableColumns, got dict"):
        check_columns({"document": "doc"}, func="f")  # type: ignore[arg-type]


@pytest.mark.parametrize("func", ["load_long_table", "bootstrap_tau", "bootstrap_system_means", "unit_keys",
                                  "cluster_systems", "compare_systems", "score_recoverability_r2", "blindness"])
def test_per_role_keywords_are_gone(func):
    """The per-role keywords (document=, ...) of 0.1.0 development were removed before any release:
    a TypeError, never a silent default column."""
    import inspect

    import importlib

    import ddpcore.stats as stats

    home = {"unit_keys": "bootstrap", "blindness": "blindness"}  # (stats.blindness is also a module name)
    fn = getattr(importlib.import_module(f"ddpcore.stats.{home[func]}"), func) if func in home else getattr(stats, func)
    params = inspect.signature(fn).parameters
    assert "document" not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values())


# --------------------------------------------------------------------------- error messages name the flag


@pytest.mark.parametrize("role", ["document", "system", "condition", "score"])
def test_missing_column_message_names_the_flag(role):
    df = _long(n_docs=3)
    cols = TableColumns().replace(**{role: "nope"})
    with pytest.raises(DDPDataError, match=rf"\[D301\].*{role} column 'nope'.*{TableColumns.flag(role)} NAME"):
        bootstrap_tau(df, "DOC", "MIX", columns=cols, options=ResampleOptions(n_boot=5))
    if role != "condition":  # the condition column is optional for clustering (see the next test)
        with pytest.raises(DDPDataError, match=rf"\[D301\].*'nope'.*{TableColumns.flag(role)}"):
            cluster_systems(df.filter(pl.col("condition") == "DOC"), "wmt25", columns=cols)


def test_null_key_message_names_the_flag():
    df = _long(n_docs=3).rename(RENAMES)
    df = df.with_columns(pl.when(pl.col("seg") == 1).then(None).otherwise(pl.col("sys")).alias("sys"))
    with pytest.raises(DDPDataError, match=r"D304.*column 'sys'.*--system-col"):
        load_long_table(df, columns=COLS)


def test_cluster_without_condition_column_names_the_flag():
    df = _long(n_docs=3).filter(pl.col("condition") == "DOC").drop("condition")
    with pytest.raises(DDPDataError, match=r"D301.*no condition column 'cond' \(--condition-col NAME\)"):
        cluster_systems(df, "wmt25", condition_value="DOC", columns=TableColumns(condition="cond"))


# --------------------------------------------------------------------------- columns= equals the canonical names


def test_load_long_table_columns_equal_canonical_names():
    df = _long(n_docs=3)
    renamed = df.rename(RENAMES)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # columns= never warns
        new = load_long_table(renamed, columns=COLS)
    assert new.drop("genre").equals(load_long_table(df).drop("domain"))


def test_bootstrap_tau_columns_equal_canonical_names(tmp_path):
    df = _long()
    renamed = df.rename(RENAMES)
    path = tmp_path / "t.parquet"
    renamed.write_parquet(path)
    ref = bootstrap_tau(df, "DOC", "MIX", options=ResampleOptions(n_boot=60, seed=3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = bootstrap_tau(path, "DOC", "MIX", columns=COLS, options=ResampleOptions(n_boot=60, seed=3))
    assert np.array_equal(new.replicates, ref.replicates, equal_nan=True)
    assert new.tau == ref.tau and new.signature == ref.signature
    with pytest.raises(TypeError, match="unexpected keyword argument 'document'"):
        bootstrap_tau(renamed, "DOC", "MIX", document="doc", options=ResampleOptions(n_boot=5))  # the removed per-role keywords


def test_bootstrap_system_means_and_unit_keys_columns_equal_canonical_names():
    df = _long()
    renamed = df.rename(RENAMES)
    ref = bootstrap_system_means(df, condition_value="DOC", unit="segment", options=ResampleOptions(n_boot=40, seed=1))
    new = bootstrap_system_means(renamed, condition_value="DOC", unit="segment", columns=COLS, options=ResampleOptions(n_boot=40, seed=1))
    assert np.array_equal(new.replicates, ref.replicates, equal_nan=True) and new.systems == ref.systems
    keys = unit_keys(renamed, unit="segment", columns=COLS)
    assert keys.equals(unit_keys(df, unit="segment"))


@pytest.mark.parametrize("method", ["bootstrap", "wmt24"])
def test_cluster_systems_columns_equal_canonical_names(method):
    df = _long()
    renamed = df.rename(RENAMES)
    kw = dict(condition_value="MIX", options=ResampleOptions(n_boot=80, seed=2), by_domain=method == "wmt24")
    ref = cluster_systems(df, method, **kw)
    new = cluster_systems(renamed, method, columns=COLS, **kw)
    assert new.to_dict() == ref.to_dict()


# --------------------------------------------------------------------------- clustering strategy table


def test_every_method_has_a_strategy():
    assert METHODS == ("bootstrap", "wmt25", "wmt24", "permutation")
    assert set(STRATEGIES) == set(METHODS)
    df = _long()
    for method in METHODS:
        res = cluster_systems(df, method, condition_value="DOC", pair_annotator=False, options=ResampleOptions(n_boot=50, seed=4))
        assert res.method == method and res.signature["method"] == method
        assert res.signature["test"] == STRATEGIES[method].test(False)
        assert len(res.order) == 4 and res.p_values.shape == (4, 4) and res.n_pairs.shape == (4, 4)
        resampling = STRATEGIES[method].resampling
        assert (res.signature["n_boot"] == 50) is resampling and (res.signature["seed"] == 4) is resampling
        assert (res.signature["unit"] == "document") is STRATEGIES[method].bootstrap_units
        assert (res.signature["pair_annotator"] is None) is (not STRATEGIES[method].pairs)
        assert sorted(s for c in res.clusters for s in c) == sorted(res.order)


def test_strategy_options_follow_the_table():
    df = _long()
    by_domain = [m for m in METHODS if STRATEGIES[m].by_domain]
    assert by_domain == ["wmt24"]
    for method in METHODS:
        if method in by_domain:
            res = cluster_systems(df, method, condition_value="DOC", by_domain=True)
            assert "Stouffer" in res.signature["test"]
        else:
            with pytest.raises(DDPUsageError, match=r"D351.*method='wmt24' only"):
                cluster_systems(df, method, condition_value="DOC", by_domain=True)
        if not STRATEGIES[method].bootstrap_units:
            with pytest.raises(DDPUsageError, match=r"D351.*indices apply to method='bootstrap' only"):
                cluster_systems(df, method, condition_value="DOC", options=ResampleOptions(indices=np.zeros((3, 6), dtype=np.int64)))
    # the default annotator pairing is per method (WMT24 pairs on segments)
    assert cluster_systems(df, "wmt24", condition_value="DOC").signature["pair_annotator"] is False
    assert cluster_systems(df, "wmt25", condition_value="DOC").signature["pair_annotator"] is True


def test_bootstrap_and_wmt25_share_the_rank_rule():
    # same rank/cluster rule (the WMT count rule; each reads significance its own way, two-sided
    # bootstrap p with the mean order, one-sided Wilcoxon p): fed the same p-values in mean order,
    # they give the same ranges and cuts. Expected by hand: system 0 beats 1 and 2 (p = 0.01), 1 vs 2
    # is not significant -> ranges 1-1, 2-3, 2-3 and one cut after the first.
    assert STRATEGIES["bootstrap"].rank_rule == STRATEGIES["wmt25"].rank_rule
    p = np.array([[np.nan, 0.01, 0.01], [0.9, np.nan, 0.3], [0.9, 0.7, np.nan]])
    for method in ("bootstrap", "wmt25"):
        best, worst, cuts = STRATEGIES[method].ranks(p, np.array([3.0, 2.0, 1.0]), 0.05)
        assert list(best) == [1, 2, 2] and list(worst) == [1, 3, 3] and cuts == [0]


@pytest.mark.parametrize("bad", ["anova", "WMT25", "", None, ["wmt25"]])
def test_unknown_method_is_d351(bad):
    with pytest.raises(DDPUsageError, match=r"D351.*unknown clustering method.*bootstrap, wmt25, wmt24, permutation"):
        cluster_systems(_long(n_docs=2), bad, condition_value="DOC")  # type: ignore[arg-type]


def test_compare_systems_columns_equal_canonical_names():
    from ddpcore.stats import compare_systems
    from ddpcore.stats.compare import unit_keys as compare_unit_keys

    df = _long().filter(pl.col("condition") == "DOC").drop("condition", "annotator", "domain")
    renamed = df.rename({"document_id": "doc", "segment_id": "seg", "system": "sys"})
    kw = dict(tests=CompareTests(n_ar=40), options=ResampleOptions(n_boot=40, seed=5))
    ref = compare_systems(df, "sys0", **kw).to_dict()
    cols = TableColumns(document="doc", segment="seg", system="sys")
    assert compare_systems(renamed, "sys0", columns=cols, **kw).to_dict() == ref
    # segment=None: document-level rows (one per document and system)
    docs = df.group_by("document_id", "system").agg(pl.col("score").mean())
    res = compare_systems(docs, "sys0", columns=TableColumns(segment=None), **kw)
    assert res.signature["unit"] == "document"
    with pytest.raises(DDPDataError, match=r"D391.*'nope'.*--system-col"):
        compare_systems(df, "sys0", columns=TableColumns(system="nope"), **kw)
    # compare keeps the input's column names in its unit keys
    assert compare_unit_keys(renamed, columns=cols).rename({"doc": "document_id"}).equals(compare_unit_keys(df))


def test_score_recoverability_columns_equal_canonical_names():
    from ddpcore.stats import score_recoverability_r2

    df = _long()
    renamed = df.rename(RENAMES)
    ref = score_recoverability_r2(df, predictor="DOC", target="MIX").to_dict()
    assert score_recoverability_r2(renamed, predictor="DOC", target="MIX", columns=COLS).to_dict() == ref
