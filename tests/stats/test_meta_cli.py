"""``ddp meta`` end to end on the fixtures in tests/data/meta (see its SOURCE.md), and on the WMT23 en-de
MQM data of the shared folder when it is there (marker ``shared_data``)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ddpcore.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "data" / "meta"
PROF, SCORES = str(DATA / "profile.tsv"), str(DATA / "scores.tsv")
BASE = ["meta", PROF, SCORES, "--human-col", "mqm", "--n-boot", "200", "--n-perm", "200", "--spa-perm", "100"]


def test_json_stdout(capsys):
    assert main(BASE) == 0
    out = capsys.readouterr()
    d = json.loads(out.out)
    assert [b["label"] for b in d["bins"]] == ["[0, 1)", "[1, 5)", "[5, 15)", "[15, 50)", "[50, inf)"]
    assert d["overall"]["metrics"]["good"]["acc_eq.item"]["status"] == "ok"
    assert d["bins"][4]["metrics"]["good"]["pearson.none"]["reason"] == "no scored cell in this bin"
    assert d["overall"]["n_human_missing"] == 28
    assert "28 of 192 joined rows have no human score" in out.err
    assert d["signature"]["method"] == "meta" and d["signature"]["seed"] == 0


def test_fail_on_gate_exit_1_and_pass(capsys):
    assert main(BASE + ["--fail-on", "local:pearson.item:15"]) == 1
    err = capsys.readouterr().err
    assert "significant drop" in err and "local pearson.item in [15, 50)" in err
    assert main(BASE + ["--fail-on", "good:pearson.item:15"]) == 0


@pytest.mark.parametrize("fmt,ext,marker", [("markdown", ".md", "| metric |"), ("latex", ".tex", "\\begin{tabular}"),
                                            ("tsv", ".tsv", "bin\tlow\thigh"), ("json", ".json", '"overall"')])
def test_output_files_with_signature(tmp_path, capsys, fmt, ext, marker):
    out = tmp_path / f"meta{ext}"
    assert main(BASE + ["-o", str(out)]) == 0
    assert marker in out.read_text()
    sig = json.loads((tmp_path / f"meta{ext}.signature.json").read_text())
    assert sig["method"] == "meta" and sig["n_perm"] == 200
    assert main(BASE + ["-f", fmt]) == 0
    assert marker in capsys.readouterr().out


def test_usage_errors(tmp_path, capsys):
    assert main(BASE + ["-o", str(tmp_path / "x.html")]) == 2
    assert "[D101]" in capsys.readouterr().err  # an unknown result extension, as in every command
    assert main(BASE + ["-o", str(tmp_path / "x.md"), "-f", "json"]) == 2
    assert "[D880]" in capsys.readouterr().err  # -f and the extension disagree, as in every command
    assert main(BASE + ["-o", SCORES]) == 2  # never writes over an input
    assert main(BASE + ["--fail-on", "good:pearson"]) == 2
    assert "D805" in capsys.readouterr().err
    assert main(["meta", PROF, SCORES, "--human-col", "nope"]) == 2
    assert "D800" in capsys.readouterr().err


def test_strict_join_exit_3(tmp_path, capsys):
    bad = tmp_path / "scores.tsv"
    bad.write_text(Path(SCORES).read_text() + "ghost\t0\tsys0\t1.0\t1.0\t1.0\n")
    assert main(["meta", PROF, str(bad), "--human-col", "mqm", "--n-boot", "0", "--n-perm", "0", "--strict-join"]) == 3
    assert "D803" in capsys.readouterr().err
    assert main(["meta", PROF, str(bad), "--human-col", "mqm", "--n-boot", "0", "--n-perm", "0"]) == 0
    assert "1 of 193 score rows have no profile segment" in capsys.readouterr().err


WMT23 = "errorspanannotation_wmt23_en-de_data.tar.xz"


@pytest.mark.shared_data
def test_wmt23_mqm_real_data(shared_data, tmp_path):
    """The real-data path on a few metrics: extract the mt-metrics-eval tree, profile its source, convert,
    run ``ddp meta``. Slow (a spaCy parse of 557 segments)."""
    tar = shared_data / "esa-wmt23-ende" / WMT23
    if not tar.exists():
        pytest.skip(f"{tar} is absent")
    import tarfile

    with tarfile.open(tar) as tf:
        members = [m for m in tf.getmembers() if m.name.startswith("data/mt-metrics-eval-v2/wmt23/")
                   and ("/documents/" in m.name or "/sources/" in m.name or "en-de.mqm.seg" in m.name
                        or Path(m.name).name in ("BLEU-refA.seg.score", "COMET-refA.seg.score",
                                                 "CometKiwi-src.seg.score"))]
        tf.extractall(tmp_path, members=members, filter="data")
    root = tmp_path / "data" / "mt-metrics-eval-v2" / "wmt23"
    prof = tmp_path / "profile.parquet"
    assert main(["profile", str(root / "sources" / "en-de.txt"), "--reader", "lines", "--docs",
                 str(root / "documents" / "en-de.docs"), "-j", "1", "-o", str(prof)]) == 0
    scores = tmp_path / "scores.parquet"
    script = Path(__file__).resolve().parents[2] / "scripts" / "mtme_to_table.py"
    subprocess.run([sys.executable, str(script), str(root), "en-de", "--human", "mqm", "-o", str(scores)], check=True)
    out = tmp_path / "meta.json"
    assert main(["meta", str(prof), str(scores), "--human-col", "mqm", "--n-boot", "200", "--n-perm", "200",
                 "-o", str(out)]) == 0
    d = json.loads(out.read_text())
    assert set(d["overall"]["metrics"]) == {"BLEU-refA", "COMET-refA", "CometKiwi-src"}
    assert d["overall"]["n_segments"] == 557 and d["signature"]["join"]["systems"] == 12
    comet = d["overall"]["metrics"]["COMET-refA"]
    bleu = d["overall"]["metrics"]["BLEU-refA"]
    assert comet["acc_eq.item"]["status"] == "ok" and bleu["acc_eq.item"]["value"] < comet["acc_eq.item"]["value"]
    assert d["overall"]["n_human_missing"] > 0
    # the same through B's reader (--reader mtme): refA is left out by the metrics that lack it (a warning)
    out2 = tmp_path / "meta2.json"
    assert main(["meta", str(prof), str(root), "--reader", "mtme", "--lp", "en-de", "--human-col", "mqm",
                 "--n-boot", "200", "--n-perm", "200", "-o", str(out2)]) == 0
    d2 = json.loads(out2.read_text())
    assert d2["overall"]["metrics"] == d["overall"]["metrics"]
    shutil.rmtree(root)


def test_ci_max_points_auto_number_and_bad_value(capsys):
    """``--ci-max-points``: auto by default (recorded as such), a number of cells, or exit 2 naming the value."""
    assert main(BASE) == 0
    assert json.loads(capsys.readouterr().out)["signature"]["ci_max_points"] == "auto"
    assert main(BASE + ["--ci-max-points", "5"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["signature"]["ci_max_points"] == 5
    f = d["overall"]["metrics"]["good"]["tau_b.none"]
    assert f["ci_status"] == "not_computed" and f["ci_reason"] == "more than ci_max_points 5 cells (--ci-max-points)"
    for bad in ("many", "-3"):  # argparse's usage error: exit 2
        with pytest.raises(SystemExit) as exc:
            main(BASE + ["--ci-max-points", bad])
        assert exc.value.code == 2 and repr(bad) in capsys.readouterr().err
