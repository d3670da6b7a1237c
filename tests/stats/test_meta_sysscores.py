"""``ddp meta --reader mtme --system-scores files``: overall's system-level pairwise accuracy from the test
set's ``.sys.score`` files (as mt-metrics-eval's ``stats.Agreement`` on ``human-scores/LP.NAME.sys.score``
and ``metric-scores/LP/METRIC-REF.sys.score``), the bins on cell means.

The mt-metrics-eval tree is written by ``_tree`` into tmp_path (the layout of tests/data/mtme/toy, with
4 systems and 2 metrics; numbers invented). Expected values: the slow loop ``meta_oracle.agreement`` over
the systems' file scores (file order, None left out) and, for the bins, over the cell means.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ddpcore.cli.main import main
from ddpcore.errors import DDPUsageError
from ddpcore.stats.meta import MetaTests, SystemScores, meta_evaluate
from ddpcore.stats.options import ResampleOptions
from oracles import meta_oracle as O

SYSTEMS = ["s1", "s2", "s3", "s4"]
DOCS = ["d1"] * 3 + ["d2"] * 3 + ["d3"] * 2
DDP = [0, 0, 3, 0, 4, 6, 0, 2]
# human (mqm) and metric segment scores: rows = source lines, columns = SYSTEMS
HUM = np.array([[0, -1, -5, -2], [-1, 0, -3, -4], [0, -2, -1, -6], [-1, -1, -8, 0],
                [0, -3, -2, -1], [-2, 0, -9, -1], [0, -1, -1, -3], [-4, 0, -2, -1]], dtype=float)
rng = np.random.default_rng(4)
MET = {"A-refA": np.round(HUM / 10 + rng.normal(scale=0.3, size=HUM.shape), 3),
       "B-src": np.round(-HUM / 10 + rng.normal(scale=0.3, size=HUM.shape), 3)}
# system-level files: deliberately not the means of the segment scores (a corpus-level metric, say);
# s4 has no human system score (None), so it is left out of the file-based pairwise accuracy
SYS = {"mqm": {"s1": -0.9, "s2": -1.1, "s3": -3.9, "s4": None},
       "A-refA": {"s1": 0.8, "s2": 0.7, "s3": 0.1, "s4": 0.3},
       "B-src": {"s1": 0.2, "s2": 0.9, "s3": 0.5, "s4": 0.4}}


def _tree(root: Path) -> None:
    n = len(DOCS)
    (root / "sources").mkdir(parents=True)
    (root / "sources" / "en-de.txt").write_text("".join(f"Source sentence {i}.\n" for i in range(n)))
    (root / "documents").mkdir()
    (root / "documents" / "en-de.docs").write_text("".join(f"news {d}\n" for d in DOCS))
    (root / "human-scores").mkdir()
    (root / "metric-scores" / "en-de").mkdir(parents=True)

    def seg(arr):
        return "".join(f"{s}\t{arr[i, k]:g}\n" for k, s in enumerate(SYSTEMS) for i in range(n))

    def sys_(d):
        return "".join(f"{s}\t{'None' if v is None else v}\n" for s, v in d.items())
    (root / "human-scores" / "en-de.mqm.seg.score").write_text(seg(HUM))
    (root / "human-scores" / "en-de.mqm.sys.score").write_text(sys_(SYS["mqm"]))
    for m, arr in MET.items():
        (root / "metric-scores" / "en-de" / f"{m}.seg.score").write_text(seg(arr))
        (root / "metric-scores" / "en-de" / f"{m}.sys.score").write_text(sys_(SYS[m]))


def _profile(path: Path) -> None:
    seg_ids, last, k = [], None, 0
    for d in DOCS:
        k = k + 1 if d == last else 0
        seg_ids.append(k)
        last = d
    pl.DataFrame({"document_id": DOCS, "segment_id": seg_ids, "ddp": DDP}).write_csv(path, separator="\t")


def _file_agreement(metric):
    use = [s for s in SYSTEMS if SYS["mqm"][s] is not None and SYS[metric][s] is not None]
    return O.agreement([SYS["mqm"][s] for s in use], [SYS[metric][s] for s in use]), len(use)


def test_files_for_overall_cells_for_bins(tmp_path, capsys):
    root = tmp_path / "wmt"
    _tree(root)
    prof = tmp_path / "profile.tsv"
    _profile(prof)
    base = ["meta", str(prof), str(root), "--reader", "mtme", "--lp", "en-de", "--human-col", "mqm", "--bins", "0,1,inf",
            "--n-boot", "50", "--n-perm", "0", "--spa-perm", "20", "-o", "-"]
    assert main(base) == 0
    cells = json.loads(capsys.readouterr().out)
    assert main(base + ["--system-scores", "files"]) == 0
    files = json.loads(capsys.readouterr().out)
    assert files["signature"]["system_scores"]["overall"] == "files"
    assert files["signature"]["system_scores"]["source"]["mqm"].endswith("en-de.mqm.sys.score")
    assert cells["signature"]["system_scores"] == "cells"
    lines = np.arange(len(DOCS))
    for m in MET:
        f = files["overall"]["metrics"][m]["pairwise_accuracy.sys"]
        want, n = _file_agreement(m)
        assert f["value"] == pytest.approx(want) and f["n"] == n == 3
        assert f["ci_status"] == "not_computed" and ".sys.score" in f["ci_reason"]
        # the cell-mean value is kept beside it, and equals the loop over the cell means
        want_cells = O.agreement(HUM.mean(0).tolist(), MET[m].mean(0).tolist())
        assert f["value_cell_means"] == pytest.approx(want_cells)
        assert cells["overall"]["metrics"][m]["pairwise_accuracy.sys"]["value"] == pytest.approx(want_cells)
        # bins: still cell means over the bin's cells, identical with and without the files
        for b_files, b_cells, (lo, hi) in zip(files["bins"], cells["bins"], [(0, 1), (1, np.inf)]):
            sel = lines[(np.array(DDP) >= lo) & (np.array(DDP) < hi)]
            want_bin = O.agreement(HUM[sel].mean(0).tolist(), MET[m][sel].mean(0).tolist())
            assert b_files["metrics"][m]["pairwise_accuracy.sys"]["value"] == pytest.approx(want_bin)
            assert b_files["metrics"][m] == b_cells["metrics"][m]
    # the two sources differ on this tree (otherwise the test could not tell them apart)
    assert any(files["overall"]["metrics"][m]["pairwise_accuracy.sys"]["value"]
               != cells["overall"]["metrics"][m]["pairwise_accuracy.sys"]["value"] for m in MET)


def test_files_need_mtme_and_every_file(tmp_path, capsys):
    root = tmp_path / "wmt"
    _tree(root)
    prof = tmp_path / "profile.tsv"
    _profile(prof)
    scores = tmp_path / "scores.tsv"
    pl.DataFrame({"document_id": ["d1"], "segment_id": [0], "system": ["s1"], "mqm": [0.0], "x": [1.0]}).write_csv(
        scores, separator="\t")
    assert main(["meta", str(prof), str(scores), "--human-col", "mqm", "--system-scores", "files"]) == 2
    assert "D883" in capsys.readouterr().err
    (root / "metric-scores" / "en-de" / "B-src.sys.score").unlink()
    assert main(["meta", str(prof), str(root), "--reader", "mtme", "--human-col", "mqm", "--n-boot", "0",
                 "--system-scores", "files"]) == 3
    err = capsys.readouterr().err
    assert "D827" in err and "B-src" in err


def test_api_requires_every_name():
    prof = pl.DataFrame({"document_id": ["d1", "d1", "d2"], "segment_id": [0, 1, 0], "ddp": [0, 1, 2]})
    rows = [{"document_id": d, "segment_id": s, "system": k, "human": float(i + j), "a": float(i * j)}
            for i, (d, s) in enumerate([("d1", 0), ("d1", 1), ("d2", 0)]) for j, k in enumerate(["x", "y", "z"])]
    with pytest.raises(DDPUsageError, match="D882"):
        meta_evaluate(prof, pl.DataFrame(rows), human_col="human", options=ResampleOptions(n_boot=0),
                      tests=MetaTests(n_perm=0, spa_perm=0), system_scores=SystemScores({"human": {"x": 1.0}}))
