"""``ddp plot --kind curves`` reads a ``ddp stratify`` result only when the plots can read all of it: a damaged
one is D671 naming the file and the part (a tester's report: ``"bins": "x"``, ``"lowess": 5`` was D999)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ddpcore.errors import DDPDataError
from ddpcore.report.plots import load_stratify
from ddpcore.stats.stratify import dumps, stratify


@pytest.fixture(scope="module")
def good() -> dict:
    """A real result: ``stratify`` on a small profile and score table, written as the CLI writes it."""
    n = 12
    prof = pl.DataFrame({"document_id": [f"d{i // 3}" for i in range(n)], "segment_id": list(range(n)),
                         "ddp": [0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 0, 1]})
    scores = prof.select("document_id", "segment_id").with_columns(score=pl.Series(np.linspace(0, 1, n)))
    return json.loads(dumps(stratify(prof, scores, "score", n_boot=0)))


def _write(tmp_path: Path, res: dict) -> Path:
    p = tmp_path / "r.json"
    p.write_text(json.dumps(res), encoding="utf-8")
    return p


def test_a_real_result_is_read(tmp_path: Path, good: dict) -> None:
    assert load_stratify(_write(tmp_path, good)) == good


@pytest.mark.parametrize(("damage", "part"), [
    (lambda r: r["groups"][0].update(bins="x"), "groups[0] has no list of 'bins'"),
    (lambda r: r["groups"][0].update(lowess=5), "groups[0].lowess is not a curve"),
    (lambda r: r["groups"][0]["lowess"].update(y=[1.0]), "groups[0].lowess is not a curve"),
    (lambda r: r["groups"][0]["bins"][1].update(mean="high"), "groups[0].bins[1] is not a bin"),
    (lambda r: r["groups"][0]["bins"][0].pop("low"), "groups[0].bins[0] is not a bin"),
    (lambda r: r["groups"][0]["bins"][0].update(n=True), "groups[0].bins[0] is not a bin"),
    (lambda r: r["groups"][0].update(spearman=[]), "groups[0].spearman is not an object"),
    (lambda r: r.update(gaps={}), "'gaps' is not a list"),
])
def test_damaged_results_are_d671(tmp_path: Path, good: dict, damage, part: str) -> None:
    res = copy.deepcopy(good)
    damage(res)
    with pytest.raises(DDPDataError) as e:
        load_stratify(_write(tmp_path, res))
    assert e.value.code == "D671" and part in str(e.value) and "r.json" in str(e.value)
