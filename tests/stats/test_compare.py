"""``ddpcore.stats.compare`` / ``ddp stats compare`` against sacrebleu's own paired tests.

sacrebleu (a test dependency) is run through its private ``_paired_bs_test`` /
``_paired_ar_test`` with a tiny duck-typed "metric" whose sufficient statistics are
``[segment score, 1]`` (or ``[document sum, segment count]`` for document units) and whose
score is ``sum / count`` -- i.e. the mean of segment scores, the statistic ddpcore tests.
Integer scores and a power-of-two number of segments keep every sum and mean exact in
sacrebleu's float32 / float64 arithmetic and in ours, so with the same draws the p-values
must agree *exactly*.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import polars as pl
import pytest

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.stats.compare import adjust_pvalues, ar_swap_matrix, compare_arrays, compare_systems
from ddpcore.stats import CompareTests, ResampleOptions

significance = pytest.importorskip("sacrebleu.significance")


# --------------------------------------------------------------------------- sacrebleu harness


class _Score:
    def __init__(self, score: float) -> None:
        self.score = score


class MeanMetric:
    """The mean of segment scores, in the shape sacrebleu's significance functions call."""

    def _extract_corpus_statistics(self, hyps, refs):  # noqa: ANN001 - sacrebleu's signature
        return [list(map(float, h)) if np.ndim(h) else [float(h), 1.0] for h in hyps]

    def _aggregate_and_compute(self, stats):  # noqa: ANN001
        a = np.asarray(stats, dtype=np.float64).sum(axis=0)
        return _Score(a[0] / a[1])

    def _compute_score_from_stats(self, s):  # noqa: ANN001
        return _Score(float(s[0]) / float(s[1]))


def sacrebleu_pair(baseline_units, system_units, *, test: str, n: int, seed: int):
    """sacrebleu's procedure for one (baseline, system) pair; units are scores or [sum, count]."""
    m = MeanMetric()
    bl_stats = m._extract_corpus_statistics(baseline_units, None)
    info = {"M": (bl_stats, significance.Result(m._aggregate_and_compute(bl_stats).score))}
    fn = significance._paired_bs_test if test == "bs" else significance._paired_ar_test
    _, res = fn(info, "sys", list(system_units), None, {"M": m}, n_samples=n, seed=seed)
    return res["M"]


def _table(scores: dict[str, np.ndarray], seg_per_doc: int) -> pl.DataFrame:
    n = len(next(iter(scores.values())))
    return pl.DataFrame({
        "document_id": np.tile(np.arange(n) // seg_per_doc, len(scores)),
        "segment_id": np.tile(np.arange(n) % seg_per_doc, len(scores)),
        "system": np.repeat(list(scores), n),
        "score": np.concatenate(list(scores.values())).astype(np.float64),
    })


def _systems(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 101, n)
    return {
        "base": base,
        "up": np.clip(base + rng.integers(-10, 14, n), 0, 100),
        "down": np.clip(base + rng.integers(-13, 10, n), 0, 100),
        "same": np.clip(base + rng.integers(-6, 7, n), 0, 100),
    }


# --------------------------------------------------------------------------- exact agreement


@pytest.mark.parametrize("unit", ["segment", "document"])
def test_exact_agreement_with_sacrebleu_given_the_same_draws(unit: str) -> None:
    # 64 segments (16 documents x 4): every mean is k/64, exact in float32 and float64.
    # sacrebleu draws: bootstrap idxs = default_rng(seed).choice(n_units, (B, n_units)),
    # AR pos_sel = default_rng(seed).integers(2, (T, n_units), dtype=bool) -- its own code.
    scores = _systems(64)
    df = _table(scores, seg_per_doc=4)
    n_units = 64 if unit == "segment" else 16
    seed, b, t = 11, 1000, 2000
    idx = np.random.default_rng(seed).choice(n_units, size=(b, n_units), replace=True)
    keep = np.random.default_rng(seed).integers(2, size=(t, n_units), dtype=bool)
    res = compare_systems(df, "base", ar_keep=keep, options=ResampleOptions(indices=idx), tests=CompareTests(unit=unit, correction="none"))
    rows = {r["system"]: r for r in res.comparisons["score"].rows()}

    def units(v: np.ndarray) -> list:
        if unit == "segment":
            return list(v)
        return [[float(v[4 * d : 4 * d + 4].sum()), 4.0] for d in range(16)]

    for name in ("up", "down", "same"):
        bs = sacrebleu_pair(units(scores["base"]), units(scores[name]), test="bs", n=b, seed=seed)
        ar = sacrebleu_pair(units(scores["base"]), units(scores[name]), test="ar", n=t, seed=seed)
        r = rows[name]
        assert r["score"] == bs.score == ar.score
        assert r["p_bootstrap"] == bs.p_value, name
        assert r["p_ar"] == ar.p_value, name
        assert r["boot_mean"] == bs.mean  # sacrebleu estimate_ci: mean of the replicates
        assert r["ci"] == bs.ci  # half the distance between sorted[B//40] and sorted[B - B//40 - 1]


def test_seeded_generators_are_the_documented_ones() -> None:
    # compare_systems(seed=s) == compare_systems(indices=resample_indices(...), ar_keep=ar_swap_matrix(...))
    from ddpcore.stats.bootstrap import resample_indices

    scores = _systems(64, seed=3)
    df = _table(scores, seg_per_doc=4)
    a = compare_systems(df, "base", options=ResampleOptions(n_boot=200, seed=5), tests=CompareTests(n_ar=300))
    b = compare_systems(df, "base", ar_keep=ar_swap_matrix(300, 16, 5), options=ResampleOptions(indices=resample_indices(200, 16, 5)))
    ra, rb = a.comparisons["score"].rows(), b.comparisons["score"].rows()
    assert ra == rb
    assert a.signature["seed"] == 5 and b.signature["seed"] is None and "seed:user" in b.signature_line


def test_ar_swap_matrix_is_pcg64_jumped_bits() -> None:
    # written out by hand from the documented rule: bit u % 64 of word u // 64 of PCG64(seed).jumped()
    raw = np.random.PCG64(9).jumped().random_raw(3 * 2).reshape(3, 2)
    expect = np.array([[(int(raw[t, u // 64]) >> (u % 64)) & 1 for u in range(70)] for t in range(3)], dtype=bool)
    assert (ar_swap_matrix(3, 70, 9) == expect).all()


def test_within_monte_carlo_error_of_sacrebleu_with_its_own_draws() -> None:
    # ddpcore with its own generator vs sacrebleu with numpy default_rng(12345) draws, segment unit.
    # p-values are Monte-Carlo estimates of the same quantity: |difference| <= 4 binomial SEs.
    rng = np.random.default_rng(1)
    n = 200
    base = rng.normal(0.7, 0.1, n)
    scores = {"base": base, "up": base + rng.normal(0.012, 0.05, n), "flat": base + rng.normal(0.0, 0.05, n)}
    df = _table(scores, seg_per_doc=1)
    res = compare_systems(df, "base", options=ResampleOptions(n_boot=2000, seed=3), tests=CompareTests(unit="segment", n_ar=4000, correction="none"))
    rows = {r["system"]: r for r in res.comparisons["score"].rows()}
    for name in ("up", "flat"):
        bs = sacrebleu_pair(list(base), list(scores[name]), test="bs", n=2000, seed=12345)
        ar = sacrebleu_pair(list(base), list(scores[name]), test="ar", n=4000, seed=12345)
        for mine, theirs, n_mc in ((rows[name]["p_bootstrap"], bs.p_value, 2000), (rows[name]["p_ar"], ar.p_value, 4000)):
            p = 0.5 * (mine + theirs)
            se = np.sqrt(2 * max(p * (1 - p), 1 / n_mc) / n_mc)
            assert abs(mine - theirs) <= 4 * se + 1e-12, (name, mine, theirs)
        assert abs(rows[name]["ci"] - bs.ci) <= 0.25 * bs.ci  # same CI rule, different draws


def test_bootstrap_p_less_conservative_than_ar() -> None:
    # sacrebleu's bootstrap statistic |d_b| - mean|d_b| is a one-sided tail around the observed
    # difference; AR is two-sided around 0 -> on a clearly non-null pair p_bs ~ p_ar / 2 or less.
    rng = np.random.default_rng(2)
    n = 400
    base = rng.normal(0.7, 0.1, n)
    scores = {"base": base, "s": base + rng.normal(0.006, 0.05, n)}
    res = compare_systems(_table(scores, 1), "base", options=ResampleOptions(n_boot=4000, seed=0), tests=CompareTests(unit="segment", n_ar=10000, correction="none"))
    r = res.comparisons["score"].rows()[1]
    assert 0.005 < r["p_ar"] < 0.5  # an informative (non-extreme) example
    assert r["p_bootstrap"] < r["p_ar"]


# --------------------------------------------------------------------------- properties (hypothesis)

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def score_tables(draw):  # noqa: ANN001, ANN201
    n_docs = draw(st.integers(2, 6))
    segs = draw(st.lists(st.integers(1, 3), min_size=n_docs, max_size=n_docs))
    n_sys = draw(st.integers(2, 4))
    n = sum(segs)
    vals = draw(st.lists(st.integers(0, 100), min_size=n * n_sys, max_size=n * n_sys))
    doc = np.repeat(np.arange(n_docs), segs)
    seg = np.concatenate([np.arange(k) for k in segs])
    return pl.DataFrame({
        "document_id": np.tile(doc, n_sys), "segment_id": np.tile(seg, n_sys),
        "system": np.repeat([f"s{k}" for k in range(n_sys)], n),
        "score": np.array(vals, dtype=np.float64) / 4,
    })


KW = dict(n_boot=64, n_ar=64, seed=1)


@settings(max_examples=25, deadline=None)
@given(score_tables(), st.sampled_from(["document", "segment"]))
def test_system_against_itself_p1_diff0(df: pl.DataFrame, unit: str) -> None:
    dup = pl.concat([df, df.filter(pl.col("system") == "s0").with_columns(pl.lit("copy").alias("system"))])
    res = compare_systems(dup, "s0", options=ResampleOptions(n_boot=64, seed=1), tests=CompareTests(unit=unit, n_ar=64))
    r = next(r for r in res.comparisons["score"].rows() if r["system"] == "copy")
    assert r["diff"] == 0.0 and r["p_bootstrap"] == 1.0 and r["p_ar"] == 1.0 and r["verdict"] == "n.s."
    assert r["diff_ci_low"] == 0.0 == r["diff_ci_high"]


@settings(max_examples=25, deadline=None)
@given(score_tables(), st.integers(-40, 40), st.sampled_from(["document", "segment"]))
def test_constant_shift_moves_difference(df: pl.DataFrame, shift: int, unit: str) -> None:
    c = shift / 8  # exact in binary: the shifted means stay exact
    res0 = compare_systems(df, "s0", options=ResampleOptions(n_boot=64, seed=1), tests=CompareTests(unit=unit, n_ar=64)).comparisons["score"].rows()
    shifted = df.with_columns(pl.when(pl.col("system") == "s1").then(pl.col("score") + c).otherwise(pl.col("score")))
    res1 = compare_systems(shifted, "s0", options=ResampleOptions(n_boot=64, seed=1), tests=CompareTests(unit=unit, n_ar=64)).comparisons["score"].rows()
    assert res1[1]["diff"] == pytest.approx(res0[1]["diff"] + c, abs=1e-12)
    assert res1[1]["diff_ci_low"] == pytest.approx(res0[1]["diff_ci_low"] + c, abs=1e-9)
    raw = ("score", "diff", "diff_ci_low", "diff_ci_high", "p_bootstrap", "p_ar")
    # other systems untouched (their Holm-adjusted p may move: the family now holds a different p)
    assert [[r[k] for k in raw] for r in res1[2:]] == [[r[k] for k in raw] for r in res0[2:]]


@settings(max_examples=25, deadline=None)
@given(score_tables(), st.randoms(use_true_random=False), st.sampled_from(["document", "segment"]))
def test_permuting_rows_changes_nothing(df: pl.DataFrame, rnd, unit: str) -> None:  # noqa: ANN001
    perm = list(range(df.height))
    rnd.shuffle(perm)
    a = compare_systems(df, "s0", options=ResampleOptions(n_boot=64, seed=1), tests=CompareTests(unit=unit, n_ar=64))
    b = compare_systems(df[perm], "s0", options=ResampleOptions(n_boot=64, seed=1), tests=CompareTests(unit=unit, n_ar=64))
    assert a.to_dict() == b.to_dict()


@settings(max_examples=20, deadline=None)
@given(score_tables())
def test_p_values_in_range_and_holm_dominates(df: pl.DataFrame) -> None:
    res = compare_systems(df, "s0", options=ResampleOptions(n_boot=64, seed=1), tests=CompareTests(n_ar=64))
    for r in res.comparisons["score"].rows()[1:]:
        for k in ("p_bootstrap", "p_ar"):
            assert 1 / 65 <= r[k] <= 1.0 and r[k] <= r[k + "_adj"] <= 1.0
        assert r["p_value"] == max(r["p_bootstrap_adj"], r["p_ar_adj"])


def test_thread_count_does_not_change_results() -> None:
    df = _table(_systems(64, 4), 4)
    a = compare_systems(df, "base", options=ResampleOptions(threads=1), tests=CompareTests(n_ar=500))
    b = compare_systems(df, "base", options=ResampleOptions(threads=2), tests=CompareTests(n_ar=500))
    assert a.to_dict() == b.to_dict()


# --------------------------------------------------------------------------- corrections


def test_holm_and_bonferroni_by_hand() -> None:
    # hand-computed: m = 4; sorted p = .01 .02 .03 .5 -> Holm 4*.01=.04, 3*.02=.06, 2*.03=.06, max(.5, .06)=.5
    p = [0.03, 0.01, 0.5, 0.02]
    assert np.allclose(adjust_pvalues(p, "holm"), [0.06, 0.04, 0.5, 0.06])
    assert np.allclose(adjust_pvalues(p, "bonferroni"), [0.12, 0.04, 1.0, 0.08])
    assert np.allclose(adjust_pvalues([np.nan] + p, "holm")[1:], [0.06, 0.04, 0.5, 0.06])
    statsmodels = pytest.importorskip("statsmodels.stats.multitest")
    rng = np.random.default_rng(0)
    q = rng.random(17) ** 3
    assert np.allclose(adjust_pvalues(q, "holm"), statsmodels.multipletests(q, method="holm")[1])


# --------------------------------------------------------------------------- several metrics, direction, arrays


def test_several_metrics_and_lower_is_better() -> None:
    scores = _systems(64, 6)
    df = _table(scores, 4).with_columns((100 - pl.col("score")).alias("ter"))
    res = compare_systems(df, "base", metrics="score,ter", lower_is_better="ter", tests=CompareTests(n_ar=500))
    s, t = res.comparisons["score"].rows(), res.comparisons["ter"].rows()
    for a, b in zip(s, t):
        assert b["diff"] == -a["diff"]
        assert a["verdict"] == b["verdict"]  # ter = 100 - score, lower is better: same verdicts
    assert res.signature["lower_is_better"] == ["ter"]


def test_compare_arrays_matches_table_path() -> None:
    scores = _systems(64, 8)
    res = compare_systems(_table(scores, 4), "base", tests=CompareTests(n_ar=300, correction="none"))
    order = ["base", "down", "same", "up"]  # baseline first, then sorted
    sums = np.stack([np.asarray(scores[k], float).reshape(16, 4).sum(1) for k in order], axis=1)
    arr = compare_arrays(sums, np.full(16, 4.0), n_ar=300)
    rows = res.comparisons["score"].rows()
    assert [r["system"] for r in rows] == order
    assert np.array_equal(arr.p_ar[0, 1:], [r["p_ar"] for r in rows[1:]])
    assert np.array_equal(arr.p_bootstrap[0, 1:], [r["p_bootstrap"] for r in rows[1:]])


def test_document_level_table_without_segment_column() -> None:
    df = _table(_systems(16, 9), 1).drop("segment_id")
    res = compare_systems(df, "base", tests=CompareTests(n_ar=200))
    assert res.n_units == 16 and res.n_segments == 16


# --------------------------------------------------------------------------- bad input


def _bad(df: pl.DataFrame, **kw):  # noqa: ANN202
    tests = CompareTests(n_ar=10, confidence=kw.pop("confidence", 0.95))
    options = ResampleOptions(n_boot=10, indices=kw.pop("indices", None))
    return compare_systems(df, kw.pop("baseline", "base"), tests=tests, options=options, **kw)


def test_bad_input_errors() -> None:
    df = _table(_systems(8), 4)
    with pytest.raises(DDPDataError, match=r"\[D392\].*'nope'"):
        _bad(df, baseline="nope")
    with pytest.raises(DDPDataError, match=r"\[D393\].*system 'up'.*document 1.*segment 3"):
        _bad(df.filter(~((pl.col("system") == "up") & (pl.col("document_id") == 1) & (pl.col("segment_id") == 3))))
    nan = df.with_columns(pl.when((pl.col("system") == "down") & (pl.col("document_id") == 0) & (pl.col("segment_id") == 2))
                          .then(float("nan")).otherwise(pl.col("score")).alias("score"))
    with pytest.raises(DDPDataError, match=r"\[D394\].*system 'down', document 0, segment 2"):
        _bad(nan)
    with pytest.raises(DDPDataError, match=r"\[D396\]"):
        _bad(pl.concat([df, df.head(1)]))
    with pytest.raises(DDPDataError, match=r"\[D391\].*--score-col"):
        _bad(df, metrics="comet")
    for conf in (0.0, 1.0, 1.5, -0.1):
        with pytest.raises(DDPUsageError, match=r"\[D390\].*confidence"):
            _bad(df, confidence=conf)
    with pytest.raises(DDPUsageError, match=r"\[D390\]"):
        compare_systems(df, "base", options=ResampleOptions(n_boot=0))
    with pytest.raises(DDPDataError, match=r"\[D397\]"):
        _bad(df, indices=np.zeros((5, 3), dtype=int))
    with pytest.raises(DDPDataError, match=r"\[D397\]"):
        _bad(df, ar_keep=np.full((5, 2), 2))


# --------------------------------------------------------------------------- CLI


def _ddp(*argv: str, cwd) -> subprocess.CompletedProcess:  # noqa: ANN001
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *argv], cwd=cwd, capture_output=True, text=True)


def test_cli_json_signature_gate_and_formats(tmp_path) -> None:  # noqa: ANN001
    scores = _systems(64, 0)
    _table(scores, 4).write_csv(tmp_path / "s.csv")
    p = _ddp("stats", "compare", "s.csv", "--baseline", "base", "--n-ar", "500", "--seed", "3", "--fail-on", "worse",
             cwd=tmp_path)
    d = json.loads(p.stdout)
    assert d["signature"]["method"] == "compare" and d["signature_line"].startswith("bs:1000|ar:500|seed:3|unit:document")
    worse = [r["system"] for r in d["results"]["score"]["systems"] if r["verdict"] == "worse"]
    assert d["passed"] is (not worse) and p.returncode == (1 if worse else 0)
    if worse:
        assert len(p.stderr.strip().splitlines()) == 1 and all(w in p.stderr for w in worse)
    for fmt, marker in (("text", "signature: bs:"), ("tsv", "# signature: bs:"), ("markdown", "| system |"),
                        ("latex", "\\begin{tabular}")):
        q = _ddp("stats", "compare", "s.csv", "--baseline", "base", "--n-ar", "200", "-f", fmt, cwd=tmp_path)
        assert q.returncode == 0 and marker in q.stdout, q.stderr
    q = _ddp("stats", "compare", "s.csv", "--baseline", "base", "--confidence", "1", cwd=tmp_path)
    assert q.returncode == 2 and "[D390]" in q.stderr


# --------------------------------------------------------------------------- AR kernels


@pytest.mark.parametrize("n_units,n_cols,n_trials", [(1, 1, 5), (63, 2, 40), (130, 13, 77), (300, 9, 65), (67, 3, 130)])
def test_ar_kernels_equal_a_numpy_oracle(n_units: int, n_cols: int, n_trials: int) -> None:
    # oracle: the keep matrix of the documented generator, sigma = +1 / -1, one float matmul row by row
    from ddpcore._native import load
    from ddpcore.stats.compare import _ar_bitgen, _ar_counts, _pack_keep, _pcg64_halves

    kern = load("stats_compare")
    rng = np.random.default_rng(n_units)
    d = rng.integers(-5, 6, (n_units, n_cols)).astype(np.float64)  # integers: the oracle's sums are exact
    keep = ar_swap_matrix(n_trials, n_units, 4)
    sigma = np.where(keep, 1.0, -1.0)
    expect = (np.abs(sigma @ d) > np.abs(d.sum(axis=0))).sum(axis=0)
    obs = np.empty(n_cols)
    kern.observed_abs(d, obs)
    gen = _ar_counts(kern, d, n_trials, None, _pcg64_halves(_ar_bitgen(4)), 2)
    given = _ar_counts(kern, d, n_trials, _pack_keep(keep), (0, 0, 0, 0), 1)
    plain = np.zeros(n_cols, dtype=np.int64)
    kern.ar_exceed_pcg64(*_pcg64_halves(_ar_bitgen(4)), n_trials, d, obs, plain, 1)
    assert np.array_equal(gen, expect) and np.array_equal(given, expect) and np.array_equal(plain, expect)


def test_bit_identical_for_1_and_2_threads_in_fresh_processes() -> None:
    # non-integer data (where summation order would show); OMP and BLAS thread counts set per process
    code = (
        "import numpy as np, json; from ddpcore.stats import ResampleOptions; from ddpcore.stats.compare import compare_arrays\n"
        "rng = np.random.default_rng(0); s = rng.normal(size=(700, 2, 5)); c = rng.integers(1, 4, 700)\n"
        "a = compare_arrays(s, c, n_ar=150, options=ResampleOptions(n_boot=300, seed=2))\n"
        "print(json.dumps([x.tolist() for x in (a.boot_mean, a.ci_low, a.diff_ci_high, a.p_bootstrap, a.p_ar)]))\n"
    )
    import os

    outs = []
    for n in ("1", "2"):
        env = dict(os.environ, OMP_NUM_THREADS=n, OPENBLAS_NUM_THREADS=n)
        outs.append(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout)
    assert outs[0] == outs[1]


def test_ar_all_keep_and_all_swap_trials_never_exceed() -> None:
    # non-integer differences: the all-keep / all-swap trials reproduce |observed| exactly (same
    # association in the kernel), so they never count as "strictly greater"
    from ddpcore._native import load
    from ddpcore.stats.compare import _ar_counts, _pack_keep

    kern = load("stats_compare")
    rng = np.random.default_rng(5)
    for n_units in (5, 64, 131, 1000):
        d = rng.normal(size=(n_units, 11)) * 10.0 ** rng.integers(-3, 4, size=(1, 11))
        keep = np.zeros((6, n_units), dtype=bool)
        keep[::2] = True  # rows 0, 2, 4 all keep; rows 1, 3, 5 all swap
        assert (_ar_counts(kern, d, 6, _pack_keep(keep), (0, 0, 0, 0), 2) == 0).all()
