"""``ddp meta -o``: a folder that refuses a new file although the access check passes (root on /proc, a
root-squashed NFS export) is D131 before any work - it used to fail only once every statistic was computed
(D999, then D131 from the atomic write). ``-o x.md``/``-o x.tex`` pass the same checks as ``-o x.json``
(D130 for a missing folder, D132 for a folder, D133 for an input), where they had hand-made D807s."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

import ddpcore.stats.meta as meta_mod
from ddpcore.cli.main import main


def _inputs(tmp: Path) -> tuple[str, str]:
    prof = ["document_id,segment_id,ddp"] + [f"d{d},{s},{(d * 3 + s) % 9}" for d in range(6) for s in range(3)]
    rows = [f"d{d},{s},{sy},{-(d + s + i) % 7},{(d * s + i) % 5 + 0.5}"
            for d in range(6) for s in range(3) for i, sy in enumerate("ABC")]
    (tmp / "p.csv").write_text("\n".join(prof) + "\n")
    (tmp / "s.csv").write_text("document_id,segment_id,system,mqm,m1\n" + "\n".join(rows) + "\n")
    return str(tmp / "p.csv"), str(tmp / "s.csv")


@pytest.mark.parametrize("ext", [".json", ".md"])
def test_folder_refusing_new_files_is_d131_before_any_work(tmp_path, capsys, monkeypatch, ext):
    prof, sc = _inputs(tmp_path)
    refusing = tmp_path / "out"
    refusing.mkdir()
    real = tempfile.mkstemp

    def mkstemp(*a, **k):  # the file system of out/ refuses new files (as /proc does for root)
        if Path(k.get("dir") or ".").resolve() == refusing.resolve():
            raise FileNotFoundError(2, "No such file or directory")
        return real(*a, **k)

    def no_work(*a, **k):
        raise AssertionError("meta_evaluate ran before -o was found unusable")

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(meta_mod, "meta_evaluate", no_work)
    rc = main(["meta", prof, sc, "--human-col", "mqm", "--n-boot", "0", "--n-perm", "0", "-o",
               str(refusing / f"r{ext}")])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith(f"ddp meta: error: [D131] -o/--output {refusing / f'r{ext}'}: cannot create "
                                      f"files in {refusing}"), err
    assert list(refusing.iterdir()) == []


@pytest.mark.parametrize("ext", [".md", ".tex"])
def test_markdown_and_latex_files_get_the_checks_of_every_output(tmp_path, capsys, ext):
    prof, sc = _inputs(tmp_path)
    base = ["meta", prof, sc, "--human-col", "mqm", "--n-boot", "0", "--n-perm", "0"]
    assert main([*base, "-o", str(tmp_path / "missing" / "r.json")]) == 2
    want = capsys.readouterr().err.replace("r.json", f"r{ext}")
    assert "[D130]" in want
    assert main([*base, "-o", str(tmp_path / "missing" / f"r{ext}")]) == 2  # was D807
    assert capsys.readouterr().err == want
    (tmp_path / f"d{ext}").mkdir()
    assert main([*base, "-o", str(tmp_path / f"d{ext}")]) == 2
    assert "[D132]" in capsys.readouterr().err  # was D807
    (tmp_path / f"r{ext}.signature.json").mkdir()  # the sidecar's place is a folder
    assert main([*base, "-o", str(tmp_path / f"r{ext}")]) == 2
    assert "[D132] the signature sidecar of -o/--output" in capsys.readouterr().err  # was written after the work
