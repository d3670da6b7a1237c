"""Statistics on degenerate and edge-case inputs, against independent references (hunt 8): Krippendorff's alpha of
identical non-integer ratings and of ratings far from 0 (point and bootstrap), alpha over a single unit, a TOST
group with too few observations, ``ddp meta`` with a constant human column, and the WMT24 Stouffer combination of a
domain with p = 1 and a domain whose p is below the float resolution of ``1 - p``.

Every expected value comes from the ``krippendorff`` package, statsmodels, scipy or a loop written here."""
from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import polars as pl
import pytest
import scipy.stats

from ddpcore.cli.main import main
from ddpcore.errors import DDPDataError
from ddpcore.stats import cluster_systems, krippendorff_alpha, krippendorff_alpha_bootstrap

# ---------------------------------------------------------------- Krippendorff's alpha


@pytest.mark.parametrize("value", [0.1, 0.7, 1 / 3])
def test_alpha_of_identical_non_integer_ratings_is_d314_not_a_number(value):
    """Was: interval alpha -0.43 (0.1, 0.7) or 1.0 (1/3) with exit 0: the grand and unit means of equal values
    such as 0.1 are off by an ulp, so the expected disagreement was rounding noise instead of exactly 0."""
    data = np.full((3, 7), value)
    with pytest.raises(ValueError, match="more than one value"):  # the reference refuses it too
        krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    with pytest.raises(DDPDataError) as err:
        krippendorff_alpha(data, level="interval")
    assert err.value.code == "D314"


def test_alpha_cli_of_identical_ratings_is_exit_3(tmp_path, capsys):
    rows = [{"document_id": f"d{d}", "segment_id": s, "system": "X", "annotator": a, "condition": "A", "score": 0.1}
            for d in range(3) for s in range(2) for a in ("ann1", "ann2", "ann3")]
    path = tmp_path / "alpha.csv"
    pl.DataFrame(rows).write_csv(path)
    assert main(["stats", "alpha", str(path)]) == 3
    captured = capsys.readouterr()
    assert "[D314]" in captured.err and captured.out == ""


def _ratings(offset: float) -> np.ndarray:
    rng = np.random.default_rng(0)
    base = rng.integers(0, 5, size=(3, 20)).astype(float)
    base[0, :3] = np.nan
    return base + offset


@pytest.mark.parametrize("offset", [1e12, 1e14, 1e15])
def test_alpha_interval_of_ratings_far_from_zero_matches_krippendorff(offset):
    """Was: 1e-5 off at 1e14 (the unit means lost the digits of the small differences)."""
    x = _ratings(offset)
    # reference: the krippendorff package, which works on differences of the values (exact here)
    expected = krippendorff.alpha(reliability_data=x, level_of_measurement="interval")
    assert krippendorff_alpha(x, level="interval").alpha == pytest.approx(expected, rel=1e-12, abs=1e-14)


def test_alpha_bootstrap_of_ratings_far_from_zero_equals_krippendorff_per_replicate():
    """Was: at an offset of 1e8, 44 of 60 replicates undefined and the rest wrong (CI [-0.33, 0.67] around a point
    alpha of 0.43); at 1e10 a CI of [0.9999, 0.99997] that does not contain the point. The one-pass sums
    n * sum(v^2) - (sum v)^2 cancelled catastrophically. Ratings of size 1e-7 were D544 (every replicate
    'undefined': the rounding guard was 1e-12 * n^2, not relative to the ratings' scale)."""
    rng = np.random.default_rng(0)
    base = rng.integers(0, 5, size=(3, 20)).astype(float)
    base[1] = base[0] + rng.integers(-1, 2, 20)
    n_boot, seed = 60, 3
    for x in (base + 1e8, base + 1e10, base * 1e-7):  # the last: was D544 (every replicate below the n^2 guard)
        res = krippendorff_alpha_bootstrap(x, "interval", n_boot=n_boot, seed=seed)
        # reference: the documented draws (one block of default_rng(seed).integers(0, U, (n_boot, U))), each
        # replicate's alpha by the krippendorff package on the drawn units (a unit drawn k times is k columns)
        draws = np.random.default_rng(seed).integers(0, x.shape[1], size=(n_boot, x.shape[1]))
        expected = np.array([krippendorff.alpha(reliability_data=x[:, d], level_of_measurement="interval")
                             for d in draws])
        assert res.n_undefined == 0
        np.testing.assert_allclose(res.replicates, expected, rtol=1e-9, atol=1e-12)
        assert res.ci_low <= res.alpha <= res.ci_high


def test_alpha_over_a_single_unit_is_said_and_recorded(tmp_path, capsys):
    """Alpha over one pairable unit is 0 whatever the ratings (its observed and expected disagreement are the same
    pairs): was printed as 0.000 with nothing said."""
    for scores in ((1.0, 5.0), (1.0, 1.5)):
        # reference: the krippendorff package gives 0 for any single unit
        assert krippendorff.alpha(reliability_data=[[scores[0]], [scores[1]]],
                                  level_of_measurement="interval") == pytest.approx(0.0, abs=1e-15)
    rows = [{"document_id": "d0", "segment_id": 0, "system": "X", "annotator": a, "condition": "A", "score": v}
            for a, v in (("ann1", 1.0), ("ann2", 5.0))]
    path = tmp_path / "one.csv"
    pl.DataFrame(rows).write_csv(path)
    assert main(["stats", "alpha", str(path)]) == 0
    captured = capsys.readouterr()
    d = json.loads(captured.out)
    assert d["alpha"] == pytest.approx(0.0, abs=1e-15) and d["n_pairable_units"] == 1
    assert any("single pairable unit" in w for w in d["warnings"])
    assert "warning: alpha rests on a single pairable unit" in captured.err


# ---------------------------------------------------------------- ddp stats tost --by: a group too small to test


def _tost_table(tmp_path: Path) -> str:
    rows = [{"document_id": "d1", "segment_id": i, "system": "s1", "condition": c, "score": float(v)}
            for i, (a, b) in enumerate([(1, 0), (3, 1), (2, 2), (5, 3)]) for c, v in (("A", a), ("B", b))]
    rows += [{"document_id": "d1", "segment_id": 0, "system": "s2", "condition": "A", "score": 1.0},
             {"document_id": "d1", "segment_id": 0, "system": "s2", "condition": "B", "score": 5.0}]
    path = tmp_path / "tost.csv"
    pl.DataFrame(rows).write_csv(path)
    return str(path)


def test_tost_by_group_with_too_few_pairs_is_said_recorded_and_never_nan(tmp_path, capsys):
    """Was: the group of one pair printed as `diff -4.000 [nan, nan] p=1.0000 ... NOT equivalent` (text), the gate
    line said `90% CI ... [nan, nan] not inside (-3, 3)`, and nothing warned that no test was possible."""
    from statsmodels.stats.weightstats import ttost_paired

    path = _tost_table(tmp_path)
    base = ["stats", "tost", path, "--a", "A", "--b", "B", "--margin", "3", "--by", "system"]
    assert main(base) == 0
    captured = capsys.readouterr()
    d = json.loads(captured.out)
    s1, s2 = d["groups"]
    # reference for the group that can be tested: statsmodels' paired TOST
    p_ref = ttost_paired(np.array([1.0, 3, 2, 5]), np.array([0.0, 1, 2, 3]), -3, 3)[0]
    assert s1["status"] == "ok" and s1["p_value"] == pytest.approx(p_ref, rel=1e-12)
    assert s2["status"] == "too_few" and s2["ci_low"] is None and not s2["equivalent"]
    assert any("too few observations" in w and "system=s2" in w for w in d["warnings"])
    assert "ddp stats tost: warning: 1 of 2 groups have too few observations" in captured.err

    assert main(base + ["-f", "text", "--fail-on", "not-equivalent"]) == 1
    captured = capsys.readouterr()
    assert "nan" not in captured.out and "nan" not in captured.err
    assert "s2: too few observations for a test (n=1)" in captured.out
    assert "too few observations for a test (n = 1)" in captured.err  # the gate line


# ---------------------------------------------------------------- ddp meta: a constant human column


def _meta_files(tmp_path: Path, constant_human_bin: bool) -> tuple[str, str, pl.DataFrame]:
    """6 documents x 4 segments x 3 systems; ddp 0 for documents d0-d2, 20 for d3-d5. The human score is 2.0 on
    every cell of the ddp-0 bin when ``constant_human_bin``."""
    rng = np.random.default_rng(11)
    prof, rows = [], []
    for d in range(6):
        for s in range(4):
            prof.append({"document_id": f"d{d}", "segment_id": s, "ddp": 0 if d < 3 else 20})
            for k, name in enumerate("ABC"):
                h = 2.0 if (constant_human_bin and d < 3) else float(rng.integers(0, 6) + k)
                rows.append({"document_id": f"d{d}", "segment_id": s, "system": name, "mqm": h,
                             "comet": float(np.round(rng.normal(k, 1.0), 3))})
    p, sc = tmp_path / "profile.csv", tmp_path / "scores.csv"
    pl.DataFrame(prof).write_csv(p)
    frame = pl.DataFrame(rows)
    frame.write_csv(sc)
    return str(p), str(sc), frame


def _pairwise_accuracy_loop(frame: pl.DataFrame) -> float:
    """mt-metrics-eval stats.Agreement by hand: system means, share of pairs with sign(dh) == sign(dm)."""
    means = frame.group_by("system").agg(pl.col("mqm").mean(), pl.col("comet").mean()).sort("system")
    h, m = means["mqm"].to_list(), means["comet"].to_list()
    pairs = [(i, j) for i in range(len(h)) for j in range(i + 1, len(h))]
    return sum(np.sign(h[i] - h[j]) == np.sign(m[i] - m[j]) for i, j in pairs) / len(pairs)


def test_meta_constant_human_bin_is_undefined_for_acc_eq_item_and_pairwise_accuracy(tmp_path, capsys):
    """Was: in a bin whose human scores are all equal, acc_eq.item = 1.0 (every pair a human tie, so any metric is
    'perfect' at a large tie threshold) and pairwise_accuracy.sys = 0.0, both status ok with intervals, while
    the other statistics of the bin said 'human scores are constant in this bin' (docs/meta.md: undefined)."""
    prof, scores, frame = _meta_files(tmp_path, constant_human_bin=True)
    assert main(["meta", prof, scores, "--human-col", "mqm", "--score-col", "comet", "--bins", "0,10,inf",
                 "--n-boot", "50", "--n-perm", "0", "--spa-perm", "50"]) == 0
    d = json.loads(capsys.readouterr().out)
    flat, varying = d["bins"][0]["metrics"]["comet"], d["bins"][1]["metrics"]["comet"]
    for stat in ("acc_eq.item", "pairwise_accuracy.sys", "pearson.none", "acc_eq.none"):
        assert flat[stat]["status"] == "undefined" and flat[stat]["value"] is None, stat
        assert "human scores are constant" in flat[stat]["reason"], stat
        assert flat[stat]["ci_low"] is None
    # the bin with varying human scores keeps its figure: stats.Agreement computed by hand on its cells
    hi = frame.filter(pl.col("document_id").is_in(["d3", "d4", "d5"]))
    assert varying["pairwise_accuracy.sys"]["status"] == "ok"
    assert varying["pairwise_accuracy.sys"]["value"] == pytest.approx(_pairwise_accuracy_loop(hi), abs=1e-15)
    assert varying["acc_eq.item"]["status"] == "ok"
    # and so does overall (human scores vary across the two bins)
    assert d["overall"]["metrics"]["comet"]["pairwise_accuracy.sys"]["value"] == pytest.approx(
        _pairwise_accuracy_loop(frame), abs=1e-15)


# ---------------------------------------------------------------- wmt24 --by-domain: Stouffer with p = 1 and p ~ 0


def test_wmt24_stouffer_with_a_p1_domain_and_a_tiny_p_domain_is_1_not_nan(tmp_path, capsys):
    """Was: p_values null (NaN: Phi^-1(1 - p) is +inf for p below 1.1e-16 and -inf for p = 1, and inf - inf is
    NaN), the two systems cut into two clusters although neither is significantly better (rank ranges 1-2 each),
    a numpy 'invalid value encountered in add' on stderr, and a warning saying the combination is 1."""
    n = 150
    rows = []
    for i in range(n):  # domain news: X better on every segment, by distinct amounts
        rows += [{"document_id": "dA", "segment_id": i, "system": "X", "domain": "news", "score": 60.0 + i * 0.01},
                 {"document_id": "dA", "segment_id": i, "system": "Y", "domain": "news", "score": 50.0}]
    for i, (x, y) in enumerate([(2.0, 1.0), (1.0, 2.0)]):  # domain speech: the differences balance exactly
        rows += [{"document_id": "dB", "segment_id": i, "system": "X", "domain": "speech", "score": x},
                 {"document_id": "dB", "segment_id": i, "system": "Y", "domain": "speech", "score": y}]
    # reference: scipy's two-sided Wilcoxon per domain; the news p is below the resolution of 1 - p
    p_news = scipy.stats.wilcoxon(np.arange(n) * 0.01 + 10.0).pvalue
    p_speech = scipy.stats.wilcoxon([1.0, -1.0]).pvalue
    assert 1.0 - p_news == 1.0 and p_speech == 1.0
    # the documented rule (docs/stats-cli.md): a domain with p_k = 1 makes the Stouffer combination 1
    table = pl.DataFrame(rows)
    res = cluster_systems(table, "wmt24", by_domain=True, min_pairs=0)
    assert res.p_values[0, 1] == 1.0 and res.p_values[1, 0] == 1.0
    assert [list(c) for c in res.clusters] == [["X", "Y"]]
    path = tmp_path / "stouffer.csv"
    table.write_csv(path)
    assert main(["stats", "cluster", str(path), "--method", "wmt24", "--by-domain", "--min-pairs", "0"]) == 0
    captured = capsys.readouterr()
    d = json.loads(captured.out)
    assert d["p_values"] == [[None, 1.0], [1.0, None]] and d["clusters"] == [["X", "Y"]]
    assert "invalid value" not in captured.err
