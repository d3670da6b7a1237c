"""The real-data battery of issue 3 (benchmarks/real_data_stats.py) on ../shared/data, each headline
number re-derived with an independent tool (statsmodels, scipy, krippendorff, the loop oracles of
test_cluster.py, plain Python)."""
from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import scipy.stats

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SHARED = REPO.parent / "shared" / "data"
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(HERE))

pytestmark = [
    pytest.mark.shared_data,
    pytest.mark.skipif(not SHARED.is_dir(), reason=f"shared data folder {SHARED} is absent"),
]


@pytest.fixture(scope="module")
def esa():
    import real_data_stats

    return real_data_stats.esa_battery(n_boot_tau=2000, n_boot_cluster=1000, seed=0)


@pytest.fixture(scope="module")
def esa_raw():
    from ddpcore.io.esa import read_esa_wmt23

    return read_esa_wmt23(SHARED / "esa-wmt23-ende", conditions=("ESA-1", "ESA-2"))


@pytest.fixture(scope="module")
def esa_wide(esa_raw):
    return esa_raw.pivot(on="condition", index=["document_id", "segment_id", "system"], values="score").sort(
        "document_id", "segment_id", "system")


def test_esa_items_and_pools(esa):
    assert esa["items_per_condition"] == {"ESA-1": 2691, "ESA-2": 2691}
    assert esa["annotators"] == {"ESA-1": 8, "ESA-2": 10}


def test_esa_tost_matches_statsmodels(esa, esa_wide):
    from statsmodels.stats.weightstats import ttost_ind, ttost_paired

    x, y = esa_wide["ESA-1"].to_numpy(), esa_wide["ESA-2"].to_numpy()
    for row in esa["tost"]:
        eps = row["eps"]
        if row["design"] == "paired":
            # statsmodels 0.15: ttost_paired(x, y, -eps, eps)[0]
            ref = ttost_paired(x, y, -eps, eps)[0]
            assert row["n"] == 2691
        else:
            # statsmodels 0.15: ttost_ind(x, y, -eps, eps)[0] (pooled variance)
            ref = ttost_ind(x, y, -eps, eps)[0]
        assert row["p_value"] == pytest.approx(ref, rel=1e-9)
        assert row["mean_diff"] == pytest.approx(float(np.mean(x) - np.mean(y)), abs=1e-9)
    paired3 = next(r for r in esa["tost"] if r["design"] == "paired" and r["eps"] == 3)
    # the pools differ by 2.7 points: not equivalent within +-3, equivalent within +-5
    assert paired3["equivalent"] is False
    assert next(r for r in esa["tost"] if r["design"] == "paired" and r["eps"] == 5)["equivalent"] is True


def test_esa_tau_point_matches_scipy_and_ci_brackets_replicates(esa, esa_raw):
    means = esa_raw.group_by("condition", "system").agg(pl.col("score").mean()).pivot(
        on="condition", index="system", values="score").sort("system")
    # scipy 1.17: scipy.stats.kendalltau(means ESA-1, means ESA-2) (variant b)
    ref = scipy.stats.kendalltau(means["ESA-1"].to_numpy(), means["ESA-2"].to_numpy())
    full = esa["tau"][0]
    assert full["systems"] == 13 and full["n_units"] == 71
    assert full["tau"] == pytest.approx(ref.statistic, abs=1e-12)
    assert full["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert -1 <= full["ci_low"] <= full["replicate_mean"] <= full["ci_high"] <= 1
    assert 0 < full["share_below_0.667"] < 1


def test_esa_alpha_matches_krippendorff_package(esa, esa_wide, esa_raw):
    import krippendorff

    # krippendorff 0.8: krippendorff.alpha(reliability_data=<2 x 2691>, level_of_measurement="interval")
    ref = krippendorff.alpha(reliability_data=esa_wide.select("ESA-1", "ESA-2").to_numpy().T,
                             level_of_measurement="interval")
    assert esa["alpha"]["segment/raw"]["alpha"] == pytest.approx(ref, abs=1e-12)
    doc = esa_raw.group_by("condition", "document_id", "system").agg(pl.col("score").mean()).pivot(
        on="condition", index=["document_id", "system"], values="score")
    # document level: continuous pool means (the krippendorff package needs minutes here); alpha
    # from its definition by brute force over all value pairs: 1 - D_o / D_e with
    # D_o = 1/n sum_u 1/(m_u - 1) sum_{i != j in u} (v_i - v_j)^2, D_e = 1/(n(n-1)) sum_{i != j} (v_i - v_j)^2
    units = doc.select("ESA-1", "ESA-2").to_numpy()  # every unit has both values (m_u = 2)
    values = units.ravel()
    n = values.size
    d_o = sum(2 * (a - b) ** 2 for a, b in units) / n
    d_e = float(((values[:, None] - values[None, :]) ** 2).sum()) / (n * (n - 1))
    assert esa["alpha"]["document/raw"]["alpha"] == pytest.approx(1 - d_o / d_e, abs=1e-12)
    assert esa["alpha"]["document/raw"]["units"] == doc.height


def test_esa_clusters_match_loop_oracles(esa, esa_raw):
    from test_cluster import oracle_wmt24, oracle_wmt25

    for cond in ("ESA-1", "ESA-2"):
        rows = esa_raw.filter(pl.col("condition") == cond).select(
            "document_id", "segment_id", "system", "annotator", "score", "domain").to_dicts()
        _, ranges, clusters = oracle_wmt25(rows, 0.05, with_annotator=False)
        assert esa["clusters"]["wmt25"][cond]["clusters"] == clusters
        _, _, clusters24, _ = oracle_wmt24(rows, 0.05, by_domain=False)
        assert esa["clusters"]["wmt24"][cond]["clusters"] == clusters24
    for method in ("bootstrap", "wmt25", "wmt24", "permutation"):
        for cond in ("ESA-1", "ESA-2"):
            flat = [s for c in esa["clusters"][method][cond]["clusters"] for s in c]
            assert sorted(flat) == sorted(esa_raw["system"].unique().to_list())


def test_esa_error_rates_match_plain_python(esa, esa_raw):
    for cond in ("ESA-1", "ESA-2"):
        part = esa_raw.filter(pl.col("condition") == cond)
        counts = [len(s) for s in part["error_spans"].to_list()]
        texts = part["target_text"].to_list()
        per_k = [1000 * c / len(unicodedata.normalize("NFC", t)) for c, t in zip(counts, texts)]
        got = esa["errors"][cond]
        assert got["errors_per_annotation"] == pytest.approx(sum(counts) / len(counts), abs=1e-12)
        assert got["errors_per_1000_chars_mean"] == pytest.approx(sum(per_k) / len(per_k), abs=1e-9)
        mids = [((s["span_start"] + s["span_end"]) / 2) / len(t)
                for spans, t in zip(part["error_spans"].to_list(), texts) for s in spans if s["span_start"] is not None]
        rate = sum(1 for m in mids if m < 0.2 or m > 0.8) / len(mids)
        assert got["boundary_span_rate"] == pytest.approx(rate, abs=1e-12)
    bd = esa["errors"]["boundary_difference"]
    assert bd["ci_low"] <= bd["difference"] <= bd["ci_high"]


@pytest.fixture(scope="module")
def wmt24():
    import real_data_stats

    return real_data_stats.wmt24_battery(n_boot_cluster=500, seed=0)


def _plain_wmt24_annotation_counts():
    """Annotations per target language from the raw Appraise CSVs with the csv module only: the organisers'
    filter of SOURCE.md (drop tgt_type BAD, document ids ending #bad/#dup/#incomplete, tutorial items), then one
    annotation per (wave, login, system, document, line) (a login re-scoring an item counts once)."""
    import csv
    import gzip
    import io

    items: dict[str, set] = {}
    for wave in (2, 3):
        raw = gzip.decompress((SHARED / "wmt24-genmt" / f"esa_generalMT2024_wave{wave}.csv.gz").read_bytes())
        for row in csv.reader(io.StringIO(raw.decode("utf-8"))):
            login, system, line, tgt_type, _src, tgt, _score, doc = row[:8]
            if tgt_type == "BAD" or doc.endswith(("#bad", "#dup", "#incomplete")) or "tutorial" in doc + system:
                continue
            items.setdefault(tgt, set()).add((wave, login, system, doc, line))
    return {lang: len(v) for lang, v in items.items()}


def test_wmt24_per_language_pair(wmt24):
    from ddpcore.io.wmt import read_wmt24_esa
    from test_cluster import oracle_wmt24

    assert sorted(wmt24) == ["en-cs", "en-hi", "en-ja", "en-zh"]
    # SOURCE.md: en-cs 4,767 / en-hi 3,291 / en-ja 3,877 + 4,417 / en-zh 3,911 + 4,422 valid rows before
    # dropping same-login re-scores; after it, counted by the plain csv loop below
    plain = _plain_wmt24_annotation_counts()
    assert plain == {"ces": 4752, "hin": 3267, "jpn": 8242, "zho": 8242}
    assert [wmt24[lp]["annotations"] for lp in ("en-cs", "en-hi", "en-ja", "en-zh")] == [
        plain["ces"], plain["hin"], plain["jpn"], plain["zho"]]
    for lp, row in wmt24.items():
        assert 0 < row["boundary_span_rate"] < 1 and 0 < row["error_free_rate_spans"] < 1
        assert row["spans_positioned"] <= row["spans"]
    hi = read_wmt24_esa(SHARED / "wmt24-genmt", lps=["en-hi"], with_text=False).select(
        "document_id", "segment_id", "system", "score", "domain").to_dicts()
    _, _, clusters, _ = oracle_wmt24(hi, 0.05, by_domain=True)
    assert wmt24["en-hi"]["clusters"]["wmt24"]["clusters"] == clusters
