"""The options objects of the statistics API (issue 20): ResampleOptions (every resampling entry
point), CompareTests (compare_systems) and BlindnessDesign / BlindnessInputs (blindness).

Checked once when made, with the messages and codes the keywords had; frozen; the same numbers as
the defaults they replace; and the CLI builds them from the same flags (ddpcore.cli._common).
Expected values: the default-argument calls of the same functions (an options object must not
change a result), and the budget messages of ddpcore.stats.budget.resolve (the one parser of the
limits before this change)."""
from __future__ import annotations

import argparse
import dataclasses

import numpy as np
import pytest

from ddpcore.errors import DDPUsageError
from ddpcore.stats import (
    BlindnessDesign,
    BlindnessInputs,
    CompareTests,
    ResampleOptions,
    bootstrap_tau,
    cluster_systems,
    compare_systems,
)
from ddpcore.stats import budget as _budget
from ddpcore.stats.blindness import blindness, simulate_scores
from ddpcore.stats.options import check_options


@pytest.fixture(scope="module")
def table():
    return simulate_scores(12, 3, 5, shift=1.0, seed=4)


# --------------------------------------------------------------------------- checked once, same messages


@pytest.mark.parametrize("kw, match", [
    ({"threads": 1.5}, r"\[D311\] threads must be an integer.*--threads"),
    ({"threads": True}, r"\[D311\] threads must be an integer"),
    ({"nan_policy": "drop"}, r"\[D311\] nan_policy must be 'raise' or 'omit', got 'drop' \(--nan-policy\)"),
    ({"max_memory": "lots"}, r"\[D311\] memory limit must be a size.*'lots'"),
    ({"max_memory": -1}, r"\[D311\] memory limit must be >= 0"),
    ({"max_seconds": -1.0}, r"\[D311\] time limit must be >= 0 seconds \(0 = no limit\), got -1.0 \(--max-seconds\)"),
    ({"max_seconds": "soon"}, r"\[D311\] time limit must be a number of seconds, got 'soon'"),
])
def test_bad_options_refused_when_made(kw, match):
    with pytest.raises(DDPUsageError, match=match):
        ResampleOptions(**kw)


@pytest.mark.parametrize("kw", [{"max_memory": "lots"}, {"max_seconds": -1.0}, {"max_seconds": "soon"}])
def test_limit_messages_equal_the_budget_parser(kw):
    # the reference: ddpcore.stats.budget.resolve, which parsed the max_memory= / max_seconds= keywords
    with pytest.raises(DDPUsageError) as ref:
        _budget.resolve(kw.get("max_memory"), kw.get("max_seconds"))
    with pytest.raises(DDPUsageError) as got:
        ResampleOptions(**kw)
    assert str(got.value) == str(ref.value)


def test_frozen_replace_rechecks_and_indices_not_compared():
    opts = ResampleOptions(n_boot=50, seed=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.seed = 4  # type: ignore[misc]
    assert opts.replace(seed=4).seed == 4 and opts.seed == 3
    with pytest.raises(DDPUsageError, match="nan_policy"):
        opts.replace(nan_policy="skip")  # type: ignore[arg-type]
    a = ResampleOptions(indices=np.zeros((2, 3), dtype=np.int64))
    assert a == ResampleOptions(indices=np.ones((2, 3), dtype=np.int64))  # arrays are not compared
    assert ResampleOptions().n_boot_or(7) == 7 and ResampleOptions(n_boot=5).n_boot_or(7) == 5
    assert ResampleOptions().kernel_threads == 0 and ResampleOptions(threads=3).kernel_threads == 3


def test_only_an_options_object_is_taken():
    with pytest.raises(DDPUsageError, match=r"D311.*f\(options=\.\.\.\) must be a ResampleOptions, got dict"):
        check_options({"n_boot": 5}, func="f")  # type: ignore[arg-type]
    with pytest.raises(DDPUsageError, match=r"bootstrap_tau\(options=\.\.\.\) must be a ResampleOptions"):
        bootstrap_tau(simulate_scores(4, 2, 3, seed=0), "DOC", "MIX", options={"n_boot": 5})  # type: ignore[arg-type]


def test_n_boot_and_seed_keep_each_statistic_code(table):
    # n_boot/seed are checked by the entry point that uses them, with its own code (as before)
    with pytest.raises(DDPUsageError, match=r"\[D311\] n_boot must be at least 1, got 0 \(--n-boot\)"):
        bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(n_boot=0))
    with pytest.raises(DDPUsageError, match=r"\[D351\] n_boot must be an integer >= 1, got 0"):
        cluster_systems(table, "bootstrap", condition_value="DOC", options=ResampleOptions(n_boot=0))
    # a method that does not resample ignores them
    assert cluster_systems(table, "wmt25", condition_value="DOC",
                           options=ResampleOptions(n_boot=0, seed=-1)).signature["n_boot"] is None
    doc = table.filter(table["condition"] == "DOC")
    with pytest.raises(DDPUsageError, match=r"\[D390\] n_boot must be a positive integer, got 0 \(--n-boot\)"):
        compare_systems(doc, "sys00", options=ResampleOptions(n_boot=0))


# --------------------------------------------------------------------------- the same numbers as the defaults


def test_defaults_equal_explicit_default_options(table):
    ref = bootstrap_tau(table, "DOC", "MIX")
    got = bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(n_boot=10_000, seed=0))
    assert np.array_equal(ref.replicates, got.replicates, equal_nan=True) and ref.signature == got.signature
    c_ref = cluster_systems(table, "bootstrap", condition_value="MIX")
    c_got = cluster_systems(table, "bootstrap", condition_value="MIX", options=ResampleOptions(n_boot=1000))
    assert c_ref.to_dict() == c_got.to_dict()
    doc = table.filter(table["condition"] == "DOC")
    m_ref = compare_systems(doc, "sys00", options=ResampleOptions(n_boot=200), tests=CompareTests(n_ar=300))
    m_got = compare_systems(doc, "sys00", options=ResampleOptions(n_boot=200, threads=1),
                            tests=CompareTests(unit="document", test="both", n_ar=300, correction="holm",
                                               alpha=0.05, confidence=0.95))
    assert m_ref.to_dict() == m_got.to_dict()


def test_user_indices_through_the_options(table):
    # explicit draws: the identity resample (each document once) reproduces the full-sample tau
    n_docs = table["document_id"].n_unique()
    idx = np.tile(np.arange(n_docs), (3, 1))
    res = bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(indices=idx))
    assert res.n_boot == 3 and res.seed is None and res.signature["indices"] == "user"
    assert np.allclose(res.replicates, res.tau)


# --------------------------------------------------------------------------- CompareTests, BlindnessDesign/Inputs


@pytest.mark.parametrize("kw, match", [
    ({"test": "t"}, r"\[D390\] test must be one of bootstrap, ar, both, got 't' \(--test\)"),
    ({"correction": "fdr"}, r"\[D390\] correction must be one of holm, bonferroni, none"),
    ({"unit": "word"}, r"\[D390\] unit must be 'document' or 'segment'"),
    ({"alpha": 1.5}, r"\[D390\] alpha must lie strictly between 0 and 1, got 1.5 \(--alpha\)"),
    ({"confidence": 0}, r"\[D390\] confidence must lie strictly between 0 and 1"),
])
def test_compare_tests_checked_when_made(kw, match):
    with pytest.raises(DDPUsageError, match=match):
        CompareTests(**kw)


@pytest.mark.parametrize("kw, match", [
    ({"alpha": 0.6}, r"\[D510\] alpha must be in \(0, 0.5\)"),
    ({"tau_min": 2.0}, r"\[D510\] tau_min must be in \[-1, 1\]"),
    ({"confidence": 1.0}, r"\[D510\] confidence must be in \(0, 1\)"),
    ({"unit": "word"}, r"\[D510\] unit must be 'segment' or 'document'"),
    ({"attribute": "x"}, r"\[D510\] attribute must be auto, source or nominal"),
    ({"n_boot_cluster": 0}, r"\[D311\] n_boot must be at least 1, got 0 \(--n-boot-cluster\)"),
])
def test_blindness_design_checked_when_made(kw, match):
    with pytest.raises(DDPUsageError, match=match):
        BlindnessDesign(**kw)


def test_blindness_inputs_and_defaults(table):
    with pytest.raises(DDPUsageError, match=r"\[D510\] required= takes source_system, spans, text, seg"):
        BlindnessInputs(required=["spans", "colour"])
    with pytest.raises(DDPUsageError, match=r"blindness\(design=\.\.\.\) must be a BlindnessDesign"):
        blindness(table, margin=3, design={"unit": "segment"})  # type: ignore[arg-type]
    fast = dict(options=ResampleOptions(n_boot=300), design=BlindnessDesign(n_boot_cluster=50, attribute="nominal"))
    ref = blindness(table, margin=3, **fast)
    # threads does not change a number; the default options are threads=1
    assert blindness(table, margin=3, options=ResampleOptions(n_boot=300, threads=2),
                     design=fast["design"]).to_dict() == ref.to_dict()
    assert ref.signature["n_boot"] == 300 and ref.signature["n_boot_cluster"] == 50


# --------------------------------------------------------------------------- the CLI builds them from its flags


def test_cli_builds_the_options_from_the_flags():
    from ddpcore.cli._common import resample_options

    args = argparse.Namespace(n_boot=7, seed=3, max_memory="1G", max_seconds=5.0, nan_policy="omit")
    assert resample_options(args) == ResampleOptions(n_boot=7, seed=3, max_memory="1G", max_seconds=5.0,
                                                     nan_policy="omit")
    # a command without --threads keeps the default; fields the command sets itself win
    assert resample_options(args, progress=True).threads is None and resample_options(args, progress=True).progress
