"""benchmarks/gap_table.py's certification table: the precision split by certification and confidence.

Expected values are counted by hand from the six rows below; the intervals are checked against
statsmodels' ``proportion_confint(method="beta")`` (Clopper-Pearson), an independent implementation.
"""
from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest
from statsmodels.stats.proportion import proportion_confint

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from gap_table import certified_scores, clopper_pearson  # noqa: E402


def _frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    gap = pl.DataFrame({"ID": ["a", "b", "c", "d", "e", "f"],
                        "A-coref": [True, True, False, False, True, False],
                        "B-coref": [False, False, True, False, False, True]})
    pred = pl.DataFrame({"document_id": ["a", "b", "c", "d", "e", "f"],
                         # a: A right; b: B wrong; c: B right; d: A wrong (neither); e: no name (left out); f: A wrong
                         "pred_A": [True, False, False, True, False, True],
                         "pred_B": [False, True, True, False, False, False],
                         "certified": [True, True, False, None, True, False],
                         "confidence": [0.98, 0.85, 0.95, float("nan"), 0.99, 0.5]})
    return gap, pred


def test_certified_scores_counts_by_hand() -> None:
    gap, pred = _frames()
    s = certified_scores(gap, pred)
    assert s["n"] == 5  # e lands on neither name
    assert (s["all"]["n"], s["all"]["precision"]) == (5, 2 / 5)  # a, c right
    assert (s["certified"]["n"], s["certified"]["precision"]) == (2, 1 / 2)  # a right, b wrong
    assert (s["not certified"]["n"], s["not certified"]["precision"]) == (3, 1 / 3)  # c right; d (null), f wrong
    assert s["confidence [0.97, 1.00]"]["n"] == 1 and s["confidence [0.97, 1.00]"]["precision"] == 1.0  # a
    assert s["confidence [0.80, 0.90)"]["precision"] == 0.0  # b
    assert s["confidence [0.94, 0.97)"]["precision"] == 1.0  # c
    assert s["confidence [0.00, 0.80)"]["precision"] == 0.0  # f
    assert s["confidence [0.90, 0.94)"] == {"n": 0, "share": 0.0, "precision": None, "ci95": [None, None]}
    assert s["no confidence"]["n"] == 1  # d (NaN)
    assert sum(v["n"] for k, v in s.items() if k.startswith(("confidence", "no confidence"))) == 5


@pytest.mark.parametrize("k,n", [(0, 7), (3, 7), (7, 7), (62, 100), (141, 226)])
def test_clopper_pearson_matches_statsmodels(k: int, n: int) -> None:
    lo, hi = clopper_pearson(k, n)
    ref_lo, ref_hi = proportion_confint(k, n, alpha=0.05, method="beta")
    assert lo == pytest.approx(ref_lo, abs=1e-12) and hi == pytest.approx(ref_hi, abs=1e-12)
