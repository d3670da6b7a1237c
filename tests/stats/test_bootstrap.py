"""Bootstrap of system means and ranking tau: oracle loop, generator, threads, errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from stats_oracles import bootstrap_tau_loop, percentile_type7, synthetic_long_table

from ddpcore._native import load
from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.stats import TableColumns
from ddpcore.stats.bootstrap import (
    bootstrap_system_means,
    bootstrap_tau,
    pcg64_start,
    resample_indices,
    resample_sums,
    unit_keys,
)
from ddpcore.stats import ResampleOptions


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    return synthetic_long_table(seed=4, n_docs=10, n_systems=5)


def test_generator_is_numpy_pcg64():
    # the in-kernel PCG64 reproduces numpy 2.x PCG64(seed).random_raw word for word,
    # including jumps ahead (used to start each replicate at its own offset)
    kernels = load("stats_kernels")
    for seed in (0, 1, 2**40 + 7):
        ref = np.random.PCG64(seed).random_raw(3000)
        out = np.empty(1000, dtype=np.uint64)
        kernels.pcg64_raw(*pcg64_start(seed), 0, out)
        assert np.array_equal(out, ref[:1000])
        kernels.pcg64_raw(*pcg64_start(seed), 1777, out)
        assert np.array_equal(out, ref[1777:2777])


def test_resample_indices_formula():
    raw = np.random.PCG64(5).random_raw(4 * 37).reshape(4, 37)
    expected = np.array([[(int(w) * 37) >> 64 for w in row] for row in raw])  # exact 128-bit product
    assert np.array_equal(resample_indices(4, 37, 5), expected)


def test_seeded_sums_equal_explicit_indices_and_loop():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(53, 6))
    values[:, 2] = values[:, 0]  # a duplicated column takes the de-duplicated path
    values[:, 3] = 2.0  # a constant integer column sums to 2 * n_units without resampling
    values[:, 4] = 0.1  # a constant non-integer column is still resampled (floating-point sums)
    idx = resample_indices(40, 53, 9)
    seeded = resample_sums(values, n_boot=40, seed=9)
    explicit = resample_sums(values, n_boot=None, indices=idx)
    loop = np.stack([values[row].sum(axis=0) for row in idx])
    assert np.array_equal(seeded, explicit)
    assert np.allclose(seeded, loop, rtol=1e-13, atol=1e-12)
    assert (seeded[:, 3] == 106.0).all() and np.array_equal(seeded[:, 4], loop[:, 4])
    assert np.array_equal(resample_sums(values[:, 3:4], n_boot=40, seed=9), np.full((40, 1), 106.0))


def test_bootstrap_tau_equals_oracle_loop(table):
    idx = resample_indices(25, 10, 3)
    res = bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(indices=idx))
    oracle = bootstrap_tau_loop(table, "DOC", "MIX", idx)
    assert np.allclose(res.replicates, oracle, rtol=0, atol=1e-12, equal_nan=True)
    seeded = bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(n_boot=25, seed=3))
    assert np.array_equal(seeded.replicates, res.replicates, equal_nan=True)
    assert seeded.seed == 3 and res.seed is None and res.signature["indices"] == "user"


def test_bootstrap_tau_segment_unit_and_document_weighting(table):
    n_seg = unit_keys(table, unit="segment", conditions=("DOC", "MIX")).height
    idx = resample_indices(15, n_seg, 1)
    res = bootstrap_tau(table, "DOC", "MIX", unit="segment", options=ResampleOptions(indices=idx))
    assert res.n_units == n_seg
    assert np.allclose(res.replicates, bootstrap_tau_loop(table, "DOC", "MIX", idx, unit="segment"), atol=1e-12, equal_nan=True)
    idx = resample_indices(15, 10, 2)
    res = bootstrap_tau(table, "DOC", "MIX", weighting="document", options=ResampleOptions(indices=idx))
    oracle = bootstrap_tau_loop(table, "DOC", "MIX", idx, weighting="document")
    assert np.allclose(res.replicates, oracle, atol=1e-12, equal_nan=True)


def test_point_estimate_and_summary(table):
    res = bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(n_boot=500, seed=0))
    means = table.group_by(["condition", "system"]).agg(pl.col("score").mean()).sort("system")
    a = means.filter(pl.col("condition") == "DOC")["score"].to_numpy()
    b = means.filter(pl.col("condition") == "MIX")["score"].to_numpy()
    ref = stats.kendalltau(a, b)  # scipy 1.17 kendalltau of the two mean vectors
    assert res.tau == ref.statistic and res.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    ok = res.replicates[np.isfinite(res.replicates)]
    # percentile interval: Hyndman-Fan definition 7 computed by hand (stats_oracles.percentile_type7)
    assert res.ci_low == pytest.approx(percentile_type7(ok, 2.5), abs=1e-12)
    assert res.ci_high == pytest.approx(percentile_type7(ok, 97.5), abs=1e-12)
    assert res.share_below_tau_min == np.mean(ok < 0.667)
    assert res.systems == [f"sys{k}" for k in range(5)]
    assert res.means_a["sys0"] == pytest.approx(a[0], rel=1e-13)
    d = res.to_dict()
    json.dumps(d)
    assert "replicates" not in d and len(res.to_dict(include_replicates=True)["replicates"]) == 500
    assert d["signature"]["n_boot"] == 500 and d["signature"]["seed"] == 0 and d["signature"]["unit"] == "document"


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), n_sys=st.integers(2, 7), n_docs=st.integers(2, 9))
def test_properties_tau_range_and_same_seed(seed, n_sys, n_docs):
    df = synthetic_long_table(seed=seed % 1000, n_docs=n_docs, n_systems=n_sys, annotators=1, integer_scores=True)
    r1 = bootstrap_tau(df, "DOC", "MIX", options=ResampleOptions(n_boot=60, seed=seed))
    r2 = bootstrap_tau(df, "DOC", "MIX", options=ResampleOptions(n_boot=60, seed=seed))
    assert np.array_equal(r1.replicates, r2.replicates, equal_nan=True)
    ok = r1.replicates[np.isfinite(r1.replicates)]
    assert ((ok >= -1) & (ok <= 1)).all()
    assert r1.n_undefined == int(np.isnan(r1.replicates).sum())


def test_threads_do_not_change_replicates(table):
    r1 = bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(n_boot=300, seed=11, threads=1))
    r2 = bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(n_boot=300, seed=11, threads=2))
    assert np.array_equal(r1.replicates, r2.replicates, equal_nan=True)
    values = np.random.default_rng(2).normal(size=(200, 7))
    assert np.array_equal(resample_sums(values, n_boot=333, seed=5, threads=1), resample_sums(values, n_boot=333, seed=5, threads=2))


def test_omp_num_threads_environment(tmp_path, table):
    path = tmp_path / "t.parquet"
    table.write_parquet(path)
    code = (
        "import sys, numpy as np; from ddpcore.stats import ResampleOptions; from ddpcore.stats.bootstrap import bootstrap_tau; "
        "r = bootstrap_tau(sys.argv[1], 'DOC', 'MIX', options=ResampleOptions(n_boot=400, seed=7)); np.save(sys.argv[2], r.replicates)"
    )
    outs = []
    for n in ("1", "2"):
        out = tmp_path / f"r{n}.npy"
        env = {**os.environ, "OMP_NUM_THREADS": n}
        subprocess.run([sys.executable, "-c", code, str(path), str(out)], check=True, env=env, timeout=120)
        outs.append(np.load(out))
    assert np.array_equal(outs[0], outs[1], equal_nan=True)


def test_undefined_replicates_are_counted():
    # sysB only appears in doc1, so a replicate without doc1 has no mean for sysB
    df = pl.DataFrame(
        {
            "document_id": ["doc0"] * 4 + ["doc1"] * 6,
            "segment_id": [0] * 10,
            "system": ["sysA", "sysC", "sysA", "sysC", "sysA", "sysB", "sysC", "sysA", "sysB", "sysC"],
            "condition": ["DOC", "DOC", "MIX", "MIX", "DOC", "DOC", "DOC", "MIX", "MIX", "MIX"],
            "score": [1.0, 3.0, 1.5, 3.5, 2.0, 5.0, 4.0, 2.5, 5.5, 4.5],
        }
    )
    idx = np.array([[0, 0], [0, 1], [1, 1]])
    res = bootstrap_tau(df, "DOC", "MIX", options=ResampleOptions(indices=idx))
    assert np.isnan(res.replicates[0]) and res.n_undefined == 1 and res.replicates[2] == 1.0


def test_system_means_replicates(table):
    res = bootstrap_system_means(table, condition_value="DOC", options=ResampleOptions(n_boot=20, seed=1))
    idx = resample_indices(20, 10, 1)
    docs = unit_keys(table, conditions=("DOC",))["document_id"].to_list()
    doc_rows = table.filter(pl.col("condition") == "DOC")
    for r in (0, 7, 19):
        sample = pl.concat([doc_rows.filter(pl.col("document_id") == docs[k]) for k in idx[r]])
        m = sample.group_by("system").agg(pl.col("score").mean()).sort("system")["score"].to_numpy()
        assert np.allclose(res.replicates[r], m, rtol=1e-13)
    assert res.replicates.shape == (20, 5)


def test_bad_input(table, tmp_path):
    with pytest.raises(DDPDataError, match=r"\[D310\].*sys4.*'MIX'"):
        bootstrap_tau(table.filter(~((pl.col("system") == "sys4") & (pl.col("condition") == "MIX"))), "DOC", "MIX", options=ResampleOptions(n_boot=5))
    with pytest.raises(DDPDataError, match=r"\[D305\].*'SEG'"):
        bootstrap_tau(table, "DOC", "SEG", options=ResampleOptions(n_boot=5))
    with pytest.raises(DDPDataError, match=r"\[D302\].*nan_policy='omit'"):
        bootstrap_tau(table.with_columns(pl.when(pl.col("segment_id") == 1).then(None).otherwise(pl.col("score")).alias("score")), "DOC", "MIX", options=ResampleOptions(n_boot=5))
    with pytest.raises(DDPDataError, match=r"\[D313\].*\(n_boot, 10\)"):
        bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(indices=np.zeros((5, 9), dtype=int)))
    with pytest.raises(DDPDataError, match=r"\[D313\].*\[0, 10\)"):
        bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(indices=np.full((5, 10), 10)))
    with pytest.raises(DDPUsageError, match="n_boot=4 but indices has 5 rows"):
        bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(n_boot=4, indices=np.zeros((5, 10), dtype=int)))
    with pytest.raises(DDPDataError, match=r"\[D301\].*'doc'.*--document"):
        bootstrap_tau(table, "DOC", "MIX", columns=TableColumns(document="doc"), options=ResampleOptions(n_boot=5))
    with pytest.raises(DDPDataError, match="D310"):
        bootstrap_tau(table.filter(pl.col("system") == "sys0"), "DOC", "MIX", options=ResampleOptions(n_boot=5))
    with pytest.raises(DDPUsageError, match="weighting='document'"):
        bootstrap_tau(table, "DOC", "MIX", unit="segment", weighting="document", options=ResampleOptions(n_boot=5))
    with pytest.raises(DDPUsageError, match="n_boot"):
        bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(n_boot=0))


def test_column_keywords_and_files(table, tmp_path):
    renamed = table.rename({"document_id": "doc", "system": "sys", "score": "esa", "condition": "cond"})
    path = tmp_path / "t.tsv"
    renamed.write_csv(path, separator="\t")
    a = bootstrap_tau(path, "DOC", "MIX", columns=TableColumns(document="doc", system="sys", score="esa", condition="cond"), options=ResampleOptions(n_boot=50, seed=2))
    b = bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(n_boot=50, seed=2))
    assert np.array_equal(a.replicates, b.replicates, equal_nan=True) and a.tau == b.tau
    c = bootstrap_tau(table.to_pandas(), "DOC", "MIX", options=ResampleOptions(n_boot=50, seed=2))
    assert np.array_equal(c.replicates, b.replicates, equal_nan=True)


def test_exclude_systems(table):
    res = bootstrap_tau(table, "DOC", "MIX", exclude_systems=["sys4"], options=ResampleOptions(n_boot=30, seed=0))
    assert res.systems == ["sys0", "sys1", "sys2", "sys3"]
    ref = bootstrap_tau(table.filter(pl.col("system") != "sys4"), "DOC", "MIX", options=ResampleOptions(n_boot=30, seed=0))
    assert np.array_equal(res.replicates, ref.replicates, equal_nan=True)


# ---------------------------------------------------------------- issue 7: bounded blocks and the budget


def test_blocks_reproduce_the_one_shot_replicates(table, monkeypatch):
    """Streaming in blocks (16 replicates each here) changes nothing: the replicates equal the
    pure-Python loop oracle that rebuilds every resampled table (stats_oracles.bootstrap_tau_loop)
    on the documented index matrix, and the column sums equal numpy fancy indexing of integer values."""
    import ddpcore.stats.bootstrap as bs

    monkeypatch.setattr(bs, "_BLOCK_WORK", 1)  # -> blocks of 16 replicates
    n_boot = 101  # 7 blocks, the last one partial and odd (the kernel draws replicates in pairs)
    res = bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(n_boot=n_boot, seed=11))
    n_units = unit_keys(table, conditions=("DOC", "MIX")).height
    idx = resample_indices(n_boot, n_units, 11)
    oracle = bootstrap_tau_loop(table, "DOC", "MIX", idx)
    assert np.allclose(res.replicates, oracle, atol=1e-12, equal_nan=True)
    rng = np.random.default_rng(5)
    vals = rng.integers(-50, 50, size=(n_units, 5)).astype(float)  # integers: every summation order is exact
    blocks = list(bs.iter_resample_sums(vals, n_boot=n_boot, seed=11))
    assert len(blocks) == 7 and [r0 for r0, _ in blocks] == list(range(0, n_boot, 16))
    np.testing.assert_array_equal(np.concatenate([b for _, b in blocks]), vals[idx].sum(axis=1))


def test_memory_budget_refuses_before_allocating(table):
    # 10**12 replicates would need ~18 TB; refused at once (no allocation, no work), for Python users too
    with pytest.raises(DDPUsageError, match=r"\[D362\] bootstrap_tau .*n_boot=1,000,000,000,000 needs about "
                                            r"16\.\d TiB .*lower --n-boot to at most"):
        bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(n_boot=10**12, max_memory="1G"))
    with pytest.raises(DDPUsageError, match=r"\[D362\] resample_sums"):
        resample_sums(np.ones((10, 4)), n_boot=10**11)
    with pytest.raises(DDPUsageError, match=r"\[D362\] resample_indices"):
        resample_indices(10**9, 1000, 0, max_memory="1G")
    with pytest.raises(DDPUsageError, match=r"\[D362\] bootstrap_system_means"):
        bootstrap_system_means(table, condition_value="DOC", options=ResampleOptions(n_boot=10**10, max_memory="1G"))
    # the limit is exact: 1,000 replicates of tau fit 1 GiB
    assert bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(n_boot=1000, max_memory="1G")).n_boot == 1000


def test_time_budget_extrapolates_from_the_first_block(table, monkeypatch):
    import ddpcore.stats.bootstrap as bs
    from ddpcore.stats import budget as _budget

    monkeypatch.setattr(bs, "_BLOCK_WORK", 1)
    # any measured cost per replicate times 10**9 replicates is over 1 s
    with pytest.raises(DDPUsageError, match=r"\[D363\] bootstrap_tau .*would take about .* us per replicate, "
                                            r"measured on the first 16\b"):
        bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(n_boot=10**9, max_seconds=1, max_memory=0))
    # the rule itself: estimate = elapsed / done * total
    b = _budget.Budget(max_memory=1e9, max_seconds=10.0)
    b._t0 -= 2.0  # 2 s for the first 100 replicates -> 20 ms each -> 1,000 replicates = 20 s > 10 s
    with pytest.raises(DDPUsageError, match=r"\[D363\].*about 20\.\d s .*lower --n-boot to about 49\d"):
        b.check_time(100, 1000)
    assert _budget.resolve(None, 0).max_seconds == float("inf")  # 0 = no limit
    assert _budget.parse_size("1.5G") == 1.5 * 2**30 and _budget.parse_size("512MiB") == 512 * 2**20


def test_seed_and_n_boot_values_are_usage_errors(table):
    for kw in ({"seed": -1}, {"seed": 2**128}, {"seed": 1.5}, {"n_boot": 0}, {"n_boot": -3}, {"n_boot": 2.5}):
        with pytest.raises(DDPUsageError, match="D311"):
            bootstrap_tau(table, "DOC", "MIX", options=ResampleOptions(**{"n_boot": 10, **kw}))


def test_system_means_refuse_pooled_conditions(table):
    with pytest.raises(DDPUsageError, match=r"\[D361\].*'DOC', 'MIX'.*condition_value='DOC'"):
        bootstrap_system_means(table, options=ResampleOptions(n_boot=10))
    assert bootstrap_system_means(table, condition_value="DOC", options=ResampleOptions(n_boot=10)).replicates.shape[0] == 10


@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.5])
def test_percentile_interval_and_share_below_on_many_distinct_replicates(confidence):
    """The CI bounds are the (1 -/+ confidence)/2 percentiles of the defined replicates, by hand (Hyndman-Fan 7,
    stats_oracles.percentile_type7), and ``share_below_tau_min`` counts replicates strictly below tau_min. With 5
    systems tau takes 11 values and the 2.5th and 5th percentiles of 500 replicates coincide, so a wrong level went
    unnoticed (a planted 5/95 in place of 2.5/97.5 passed every test); 12 systems give 67 values. tau_min is set to
    a value replicates take, so "<" and "<=" differ."""
    df = synthetic_long_table(seed=4, n_docs=8, n_systems=12, annotators=1)
    res = bootstrap_tau(df, "DOC", "MIX", confidence=confidence, options=ResampleOptions(n_boot=400, seed=11))
    ok = res.replicates[np.isfinite(res.replicates)]
    assert len(np.unique(ok)) > 15  # the replicates spread over many values
    lo, hi = 50 * (1 - confidence), 50 * (1 + confidence)
    assert res.ci_low == pytest.approx(percentile_type7(ok, lo), abs=1e-12)
    assert res.ci_high == pytest.approx(percentile_type7(ok, hi), abs=1e-12)
    assert percentile_type7(ok, lo) != percentile_type7(ok, 2 * lo)  # the level is visible in this sample
    values, counts = np.unique(ok, return_counts=True)
    tau_min = float(values[len(values) // 2])  # a value some replicates take
    at = bootstrap_tau(df, "DOC", "MIX", confidence=confidence, tau_min=tau_min,
                       options=ResampleOptions(n_boot=400, seed=11))
    assert at.share_below_tau_min == sum(1 for v in ok if v < tau_min) / len(ok)
    assert at.share_below_tau_min != sum(1 for v in ok if v <= tau_min) / len(ok)
