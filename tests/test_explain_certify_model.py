"""``ddp explain`` on an output certified with a user's model uses that model (found by its recorded name and
sha256, in the working folder or beside the output), and says so when it cannot: a tester's report had
explain give certified DDP 2 where the output holds 8, silently, exit 0."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import polars as pl
import pytest

from ddpcore.anchors.certify_model import DATA_DIR, DEFAULT_CERTIFY_MODEL
from ddpcore.explain import explain

SOURCE = Path(__file__).resolve().parents[1] / "src" / "ddpcore" / "data" / "wmt25_en_source.jsonl"
DOC = "rink_rats_chapter1"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A profile of 6 bundled segments certified with a lax model (thresholds 0.5: more is certified)."""
    d = tmp_path_factory.mktemp("certified")
    (d / "in.jsonl").write_text("".join(SOURCE.read_text(encoding="utf-8").splitlines(keepends=True)[:6]),
                                encoding="utf-8")
    model = json.loads((DATA_DIR / DEFAULT_CERTIFY_MODEL).read_text(encoding="utf-8"))
    model.update(threshold=0.5, threshold_name=0.5, threshold_long=0.5)
    (d / "lax.json").write_text(json.dumps(model), encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", "in.jsonl", "-o", "out.parquet",
                        "--certify-model", "lax.json", "-j", "1", "-q", "--no-cache"],
                       cwd=d, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return d


def _recorded(run: Path) -> dict[int, int]:
    out = pl.read_parquet(run / "out.parquet")
    return dict(zip(out["segment_id"].to_list(), out["ddp_certified"].to_list()))


def _differing_segment(run: Path) -> int:
    """A segment whose certified DDP under the lax model differs from the default model's (the control that
    makes the tests below able to fail)."""
    rec = _recorded(run)
    for seg, value in rec.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            default = explain(run / "out.parquet", document_id=DOC, segment_id=seg,
                              certify_model=DEFAULT_CERTIFY_MODEL).ddp_certified
        if default != value:
            return seg
    raise AssertionError("no segment tells the two models apart")


def test_explain_uses_the_recorded_users_model(run: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seg = _differing_segment(run)
    want = _recorded(run)[seg]
    for cwd in (run, tmp_path):  # the model in the working folder; then only beside the output
        monkeypatch.chdir(cwd)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            res = explain(run / "out.parquet", document_id=DOC, segment_id=seg)
        assert res.ddp_certified == want
        assert res.signature["certify"]["file"] == "lax.json"
        assert Path(res.inherited["certify_model"]).resolve() == (run / "lax.json").resolve()


@pytest.mark.parametrize("change", ["missing", "edited"])
def test_a_missing_or_changed_model_is_said(run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            change: str) -> None:
    seg = _differing_segment(run)
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(run / "out.parquet", copy / "out.parquet")
    if change == "edited":
        model = json.loads((run / "lax.json").read_text(encoding="utf-8"))
        model["threshold"] = 0.6
        (copy / "lax.json").write_text(json.dumps(model), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.warns(UserWarning, match=r"certification model lax\.json .*--certify-model PATH"):
        res = explain(copy / "out.parquet", document_id=DOC, segment_id=seg)
    assert res.signature["certify"]["file"] == DEFAULT_CERTIFY_MODEL  # the output says which model it used
    assert "certify_model" not in res.inherited


def test_the_cli_says_which_model_it_took(run: Path) -> None:
    """``ddp explain`` names the recorded model on its "using ... from" line (the Python API: ``inherited``)."""
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "explain", "out.parquet", "--document", DOC,
                        "--segment", "0"], cwd=run, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "certify-model 'lax.json'" in r.stderr.splitlines()[0]
