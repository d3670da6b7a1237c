"""``blindness``: which system a MIX row is scored for, said in the result (issue 19).

Expected TOST values come from an independent implementation: a slow Python loop that pairs the
rows by hand (dict of lists keyed by (document, segment, system)) and statsmodels'
``ttost_paired`` on the paired means.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import polars as pl
import pytest
from statsmodels.stats.weightstats import ttost_paired

from ddpcore.errors import DDPDataError
from ddpcore.stats.blindness import blindness
from ddpcore.stats import BlindnessDesign, BlindnessInputs, ResampleOptions



def _table(seed: int = 0, n_docs: int = 10, n_seg: int = 3, n_sys: int = 4) -> pl.DataFrame:
    """DOC: each system's translation; MIX: nominal system k holds system (k + 1 + d + g mod ...)'s
    translation, scored like that translation plus noise (blind by construction under source)."""
    rng = np.random.default_rng(seed)
    quality = np.linspace(40, 70, n_sys)
    rows = []
    for d in range(n_docs):
        for g in range(n_seg):
            eff = rng.normal(0, 5)
            for k in range(n_sys):
                rows.append((f"d{d}", g, f"s{k}", "DOC", quality[k] + eff + rng.normal(0, 1), None))
                src = (k + 1 + (d + g) % (n_sys - 1)) % n_sys
                rows.append((f"d{d}", g, f"s{k}", "MIX", quality[src] + eff + rng.normal(0, 1), f"s{src}"))
    return pl.DataFrame(rows, schema=["document_id", "segment_id", "system", "condition", "score", "source_system"],
                        orient="row")


def _slow_tost(df: pl.DataFrame, use_source: bool, eps: float) -> tuple[float, int]:
    cells: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: {"DOC": [], "MIX": []})
    for r in df.iter_rows(named=True):
        sy = r["source_system"] if (use_source and r["condition"] == "MIX") else r["system"]
        cells[(r["document_id"], r["segment_id"], sy)][r["condition"]].append(r["score"])
    pairs = [(np.mean(v["DOC"]), np.mean(v["MIX"])) for v in cells.values() if v["DOC"] and v["MIX"]]
    x, y = np.array(pairs).T
    p, _, _ = ttost_paired(x, y, -eps, eps)
    return float(p), len(pairs)


def test_source_attribution_recorded_and_equal_to_a_hand_pairing() -> None:
    df = _table()
    seen: list[str] = []
    r = blindness(df, margin=3, warn=seen.append, options=ResampleOptions(n_boot=200), design=BlindnessDesign(n_boot_cluster=50))
    p, n = _slow_tost(df, True, 3)
    assert r.evidence["tost"]["p_value"] == pytest.approx(p, rel=1e-9) and r.evidence["tost"]["n"] == n
    assert r.attribute_used == "source" and r.evidence["attribute"] == "source" and r.signature["attribute"] == "source"
    assert "column 'source_system'" in r.attribute_reason and seen == [] and r.warnings == []
    d = r.to_dict()
    assert d["attribute_used"] == "source" and d["attribute_reason"] == r.attribute_reason
    assert r.verdict == "blind"


def test_auto_fallback_to_nominal_warns_records_and_strict_refuses() -> None:
    df = _table().drop("source_system")
    with pytest.warns(UserWarning, match="--attribute auto fell back to nominal"):
        r = blindness(df, margin=3, options=ResampleOptions(n_boot=200), design=BlindnessDesign(n_boot_cluster=50))
    p, n = _slow_tost(df.with_columns(pl.lit(None).alias("source_system")), False, 3)
    assert r.evidence["tost"]["p_value"] == pytest.approx(p, rel=1e-9) and r.evidence["tost"]["n"] == n
    d = r.to_dict()
    assert d["attribute_used"] == "nominal" and d["attribute_reason"].startswith("--attribute auto fell back")
    assert d["signature"]["attribute_requested"] == "auto" and d["signature"]["n_warnings"] == 1
    assert len(d["warnings"]) == 1 and "no 'source_system' column" in d["warnings"][0]
    assert r.verdict == "sensitive"  # the nominal ranking is reshuffled: a different answer, now said
    with pytest.raises(DDPDataError, match=r"D700.*--strict makes this an error"):
        blindness(df, margin=3, options=ResampleOptions(n_boot=200), design=BlindnessDesign(strict=True, n_boot_cluster=50))
    # chosen explicitly: no warning, strict accepts it
    seen: list[str] = []
    r2 = blindness(df, margin=3, warn=seen.append, options=ResampleOptions(n_boot=200), design=BlindnessDesign(attribute="nominal", strict=True, n_boot_cluster=50))
    assert seen == [] and r2.attribute_reason.startswith("--attribute nominal") and r2.verdict == "sensitive"


def test_required_columns_name_what_exists() -> None:
    df = _table()
    with pytest.raises(DDPDataError, match=r"D301.*'src' \(--source-system-col\) is missing; available columns: "
                                           r"document_id, segment_id, system, condition, score, source_system"):
        blindness(df, margin=3, options=ResampleOptions(n_boot=200), design=BlindnessDesign(n_boot_cluster=50), inputs=BlindnessInputs(source_system="src", required=["source_system"]))
    # not required: the optional default name is simply absent -> fallback with its warning
    with pytest.warns(UserWarning, match="no 'src' column"):
        assert blindness(df, margin=3, options=ResampleOptions(n_boot=200), design=BlindnessDesign(n_boot_cluster=50), inputs=BlindnessInputs(source_system="src")).attribute_used == "nominal"


def test_battery_budget_names_the_cluster_flag() -> None:
    from ddpcore.errors import DDPUsageError

    with pytest.raises(DDPUsageError, match=r"D363\] blindness clusters DOC \(--n-boot-cluster 1,000,000,000\).*"
                                             r"lower --n-boot-cluster to about"):
        blindness(_table(n_docs=40), margin=3, options=ResampleOptions(n_boot=200, max_seconds=10), design=BlindnessDesign(n_boot_cluster=10**9))
