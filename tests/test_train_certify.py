"""scripts/train_certify.py's threshold search (issue 21, layout 5), against slow, independent versions.

``choose`` ranks threshold triples by ``_spearman``, a fast Spearman over integer ranks. Checks here:
- ``_avg_ranks`` and ``_spearman`` against ``scipy.stats.rankdata`` and ``scipy.stats.spearmanr``.
- ``choose`` against a brute-force loop. That loop scores every triple with the script's scipy-based
  ``metrics``, applies the documented rule, and works on synthetic candidates.
- ``certified`` against a per-candidate loop: a pronoun's candidate needs ``t_pronoun``, a name's needs
  ``t_name``, and at 15 sentences or more a full distance needs ``tl``.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata, spearmanr

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tc():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("train_certify", ROOT / "scripts" / "train_certify.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["train_certify"] = module
    spec.loader.exec_module(module)
    return module


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=2, max_size=300), st.integers(0, 2**31 - 1))
def test_fast_spearman_is_scipys(tc, dc: list[int], seed: int) -> None:  # type: ignore[no-untyped-def]
    v = np.array(dc, dtype=np.int64)
    assert np.array_equal(tc._avg_ranks(v), rankdata(v))
    gd = np.random.default_rng(seed).integers(0, 25, len(v))
    got = tc._spearman(v, rankdata(gd))
    if v.std() == 0 or gd.std() == 0:
        assert got == 0.0
    else:
        assert got == pytest.approx(spearmanr(v, gd)[0], abs=1e-12)


def _gold(rng: np.random.Generator, n_seg: int, n_cand: int) -> dict:
    """Synthetic candidates of one gold: positions, distances, ranks, kinds, labels, documents."""
    pos = rng.integers(0, n_seg, n_cand)
    gd = rng.integers(0, 20, n_seg) * (rng.random(n_seg) < 0.6)
    d = np.maximum(1, gd[pos] + rng.integers(-3, 6, n_cand))
    d[rng.random(n_cand) < 0.1] = 15  # distances at the tail's edge, where >= and > differ
    return {"pos": pos, "d": d, "rank": rng.integers(0, 3, n_cand), "pronoun": rng.random(n_cand) < 0.5,
            "y": d > gd[pos], "gd": gd, "gdoc": np.arange(n_seg) // 10, "doc": pos // 10}


def test_certified_is_the_per_candidate_rule(tc) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(5)
    D = _gold(rng, 60, 400)
    p = rng.random(400)
    rows = rng.random(400) < 0.9
    got = tc.certified(D, p, rows, 0.7, 0.4, 0.8)
    for k in range(400):
        need = 0.8 if D["d"][k] >= 15 else (0.7 if D["pronoun"][k] else 0.4)
        want = rows[k] and 1 - p[k] >= need and (D["d"][k] < 15 or D["rank"][k] == 0)
        assert got[k] == want, k


@pytest.mark.parametrize("seed,min_tail", [(11, 0.6), (3, 0.3), (4, 0.5), (7, 0.8)])
def test_choose_is_the_brute_force_rule(tc, monkeypatch: pytest.MonkeyPatch, seed: int,  # type: ignore[no-untyped-def]
                                        min_tail: float) -> None:
    """On a small grid, ``choose`` picks the triple a loop over every triple with scipy's figures picks:
    over-estimated share at most max_over on every gold, then the most golds at the tail target, then the
    highest mean Spearman (the first such triple in grid order; long never below both short ones)."""
    grid = (0.5, 0.7, 0.8, 0.9)
    monkeypatch.setattr(tc, "GRID", grid)
    rng = np.random.default_rng(seed)
    data = {"a": _gold(rng, 80, 600), "b": _gold(rng, 50, 400)}
    # informative predictions: candidates that over-estimate get a higher p_over
    p = {n: np.clip(0.35 * D["y"] + rng.random(len(D["y"])) * 0.65, 0, 1) for n, D in data.items()}
    rows = {n: rng.random(len(D["y"])) < 0.8 for n, D in data.items()}
    max_over = 0.2
    best = None
    for t in grid:
        for tn in grid:
            for tl in grid:
                if tl < min(t, tn):
                    continue
                ok, n_tail, sps = True, 0, []
                for n, D in data.items():
                    m = tc.seg_metrics(D, tc.segment_ddp(D, tc.certified(D, p[n], rows[n], t, tn, tl)),
                                       np.unique(D["doc"][rows[n]]))
                    if m["share_over"] > max_over:
                        ok = False
                        break
                    n_tail += int(m["tail_precision_15"] is not None and m["tail_precision_15"] >= min_tail)
                    sps.append(m["spearman"] or 0.0)
                if ok and (best is None or (n_tail, float(np.mean(sps))) > best[0]):
                    best = ((n_tail, float(np.mean(sps))), (t, tn, tl))
    assert best is not None  # the synthetic data leave some triple within max_over
    assert tc.choose(data, p, rows, max_over, min_tail) == best[1]
    # nothing qualifies: the most conservative triple
    assert tc.choose(data, p, rows, -1.0, min_tail) == (grid[-1],) * 3


def test_choose_puts_the_tail_target_before_spearman(tc, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """A constructed gold where the tail decides. Certifying the long candidates at 0.8 adds three right
    ones (gold 30, certified 16: Spearman rises) and one wrong one at exactly 15 sentences (gold 0). The
    tail precision at DDP >= 15 is then 4/5 < 0.9, so ``choose`` must take 0.9, where only the sure
    right one (confidence 0.95) is certified, with tail precision 1. Under a tail counted from 16 sentences
    on (``>`` for ``>=``), 0.8 would pass too and win on Spearman."""
    monkeypatch.setattr(tc, "GRID", (0.8, 0.9))
    n_seg = 20
    gd = np.zeros(n_seg, dtype=np.int64)
    gd[[1, 2, 3, 4]] = [20, 30, 30, 30]
    gd[10:] = 2  # positive segments without a candidate
    pos = np.array([0, 1, 2, 3, 4])
    d = np.array([15, 20, 16, 16, 16])
    conf = np.array([0.85, 0.95, 0.85, 0.85, 0.85])
    D = {"pos": pos, "d": d, "rank": np.zeros(5, dtype=np.int64), "pronoun": np.zeros(5, bool), "y": d > gd[pos],
         "gd": gd, "gdoc": np.zeros(n_seg, dtype=np.int64), "doc": np.zeros(5, dtype=np.int64)}
    rows = {"g": np.ones(5, bool)}
    t = tc.choose({"g": D}, {"g": 1 - conf}, rows, 1.0, 0.9)
    assert t[2] == 0.9
    # the premise: at 0.8 the Spearman correlation is the higher one
    sp = {tl: tc.metrics(tc.segment_ddp(D, tc.certified(D, 1 - conf, rows["g"], 0.9, 0.9, tl)), gd)["spearman"]
          for tl in (0.8, 0.9)}
    assert sp[0.8] > sp[0.9]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12), st.integers(0, 2**31 - 1))
def test_set_aside_is_the_per_segment_rule(tc, n_segments: int, seed: int) -> None:  # type: ignore[no-untyped-def]
    """``set_aside`` (the --tables rows with same-string names set aside) against a loop over segments: a
    segment is set aside when its value is > 0 and every anchor of it reaching the value is a same-string
    name re-mention (the rule of ``ddp validate --set-aside same-string-names``, tests/gold/test_set_aside.py)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 30))
    pos = rng.integers(0, n_segments, n)
    d = rng.integers(0, 5, n)
    same = rng.random(n) < 0.5
    value = np.zeros(n_segments, dtype=np.int64)
    np.maximum.at(value, pos, d)
    want = []
    for s in range(n_segments):
        reaching = [i for i in range(n) if pos[i] == s and d[i] == value[s]]
        want.append(bool(value[s] > 0 and reaching and all(same[i] for i in reaching)))
    assert tc.set_aside(n_segments, pos, d, same, value).tolist() == want
