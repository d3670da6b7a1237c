"""Break tests of issue 19, helper 7: outputs inside a work folder, all-or-nothing renames,
two runs on one output, damaged ``--resume`` state, ``ddp merge`` of shards of a changed input.

Rows run through :func:`._harness.run_case` (exit code, one stderr line, inputs unchanged, no
stray files); cases the harness cannot express (a fault injected between renames, a live
second run) are plain pytest tests below.
"""
from __future__ import annotations

import json
from pathlib import Path

from ._harness import Case, parametrize, run_case

FAST = 60.0
ROWS = [{"document_id": "d", "segment_id": i, "source": t} for i, t in enumerate(["Anna came.", "She left."])]
JSONL = "".join(json.dumps(r) + "\n" for r in ROWS)


def C(id, argv, exit, stderr, files=None, outputs=(), **kw):  # type: ignore[no-untyped-def]
    return Case(id=id, argv=tuple(argv), exit=exit, stderr=stderr, files=files or {}, outputs=tuple(outputs),
                timeout=FAST, **kw)


CASES = [
    # ---- item 1: an output inside the run's own work folder was reported written, then deleted with the folder
    C("anchors-in-own-work-folder", ["profile", "in.jsonl", "-o", "o.parquet", "--anchors",
                                     ".o.parquet.ddp-work/a.parquet"], 2,
      r"\[D760\] --anchors \.o\.parquet\.ddp-work/a\.parquet: this is inside the work folder .*\.o\.parquet\.ddp-work",
      {"in.jsonl": JSONL, ".o.parquet.ddp-work/": ""}),
    C("anchors-in-own-work-folder-not-yet-made", ["profile", "in.jsonl", "-o", "o.parquet", "--anchors",
                                                  ".o.parquet.ddp-work/a.parquet"], 2, r"\[D760\]",
      {"in.jsonl": JSONL}),
    C("sentences-deep-in-work-folder", ["profile", "in.jsonl", "-o", "o.csv", "--sentences",
                                        ".o.csv.ddp-work/parts/s.csv"], 2, r"\[D760\] --sentences",
      {"in.jsonl": JSONL, ".o.csv.ddp-work/parts/": ""}),
    C("o-in-another-runs-work-folder", ["profile", "in.jsonl", "-o", ".x.parquet.ddp-work/o.parquet"], 2,
      r"\[D760\] -o/--output", {"in.jsonl": JSONL, ".x.parquet.ddp-work/": ""}),
    C("merge-output-in-work-folder", ["merge", "s0.parquet", "-o", ".m.parquet.ddp-work/m.parquet"], 2,
      r"\[D760\]", {"s0.parquet": b"not read", ".m.parquet.ddp-work/": ""}),
]


@parametrize(CASES)
def test_break(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_symlink_into_a_work_folder_is_refused(tmp_path: Path) -> None:
    from ddpcore.errors import DDPUsageError
    from ddpcore.io.outputs import check_outputs
    import pytest

    (tmp_path / ".o.parquet.ddp-work").mkdir()
    (tmp_path / "w").symlink_to(tmp_path / ".o.parquet.ddp-work")
    with pytest.raises(DDPUsageError, match=r"D760"):
        check_outputs([("--anchors", tmp_path / "w" / "a.parquet")])
    # a folder that merely contains the words is fine
    (tmp_path / "ddp-work").mkdir()
    assert check_outputs([("--anchors", tmp_path / "ddp-work" / "a.parquet")])[0].format == "parquet"


# ---------------------------------------------------------------- item 2: the renames, all or nothing

import os  # noqa: E402

import polars as pl  # noqa: E402
import pytest  # noqa: E402

MINI = Path(__file__).parents[1] / "data" / "wmt25_mini.jsonl"


def _profile_argv(tmp: Path, *extra: str) -> list[str]:
    return ["profile", str(MINI), "-q", "-j", "1", "--batch-chars", "1500", "-o", str(tmp / "o.parquet"),
            "--anchors", str(tmp / "a.csv"), "--sentences", str(tmp / "s.parquet"), *extra]


OUTS = ("o.parquet", "a.csv", "a.csv.signature.json", "s.parquet")


def _contents(tmp: Path) -> dict[str, bytes]:
    return {n: (tmp / n).read_bytes() for n in OUTS}


def _tables(tmp: Path) -> dict[str, object]:
    """What the outputs hold, without the signature (which counts parse-cache hits and misses)."""
    return {"o.parquet": pl.read_parquet(tmp / "o.parquet").to_dicts(), "s.parquet": pl.read_parquet(tmp / "s.parquet")
            .to_dicts(), "a.csv": (tmp / "a.csv").read_bytes(),
            "rules": json.loads((tmp / "a.csv.signature.json").read_text())["rules"]}


def _left_over(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name not in OUTS)


@pytest.fixture()
def old_outputs(tmp_path: Path) -> dict[str, bytes]:
    """Outputs of an earlier run (other rules, so old and new differ) in tmp_path."""
    from ddpcore.cli.main import main

    assert main(_profile_argv(tmp_path, "--rules", "paper")) == 0
    return _contents(tmp_path)


@pytest.mark.spacy_model
def test_a_failed_rename_leaves_every_output_old(tmp_path, old_outputs, monkeypatch, capsys):
    from ddpcore.cli.main import main
    import ddpcore.io.outputs as outputs

    real = os.replace
    calls = {"n": 0}

    def flaky(src, dst):  # the second rename onto an output fails (e.g. the disk went away)
        if str(src).endswith(".tmp") and Path(dst).name in OUTS:
            calls["n"] += 1
            if calls["n"] == 2:
                raise OSError(5, "Input/output error")
        return real(src, dst)

    monkeypatch.setattr(outputs.os, "replace", flaky)
    capsys.readouterr()
    assert main(_profile_argv(tmp_path)) == 4
    err = capsys.readouterr().err
    assert "[D761]" in err and "no output was changed" in err and len(err.strip().splitlines()) == 1, err
    assert calls["n"] == 2  # the first output had been replaced, and was put back
    assert _contents(tmp_path) == old_outputs
    assert _left_over(tmp_path) == []  # no temporary, no backup, no journal, no lock


@pytest.mark.spacy_model
def test_the_next_run_rolls_a_killed_commit_forward_and_warns(tmp_path, old_outputs, monkeypatch, capsys):
    """SIGKILL after the first rename, simulated: an exception no handler catches, and no clean-up
    of temporaries (a killed process runs none). The next run on the output finishes the
    replacement first (all new), says so, then runs."""
    from ddpcore.cli.main import main
    import ddpcore.io.outputs as outputs

    class Killed(BaseException):
        pass

    real = os.replace
    calls = {"n": 0}

    def killed_after_first(src, dst):
        if str(src).endswith(".tmp") and Path(dst).name in OUTS:
            calls["n"] += 1
            if calls["n"] == 2:
                raise Killed
        return real(src, dst)

    monkeypatch.setattr(outputs.os, "replace", killed_after_first)
    monkeypatch.setattr(outputs.OutputSet, "discard", lambda self: None)
    with pytest.raises(Killed):
        main(_profile_argv(tmp_path))
    monkeypatch.undo()
    (tmp_path / ".o.parquet.ddp-lock").unlink(missing_ok=True)  # a killed run's lock would be stale
    half = _contents(tmp_path)  # one output new, the others old: the state to repair
    assert sum(half[n] != old_outputs[n] for n in OUTS) == 1, [n for n in OUTS if half[n] != old_outputs[n]]
    assert (tmp_path / ".o.parquet.ddp-work" / "commit.json").exists()
    capsys.readouterr()
    assert main(_profile_argv(tmp_path)) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "stopped while putting its outputs in place" in err, err
    ref = tmp_path / "ref"
    ref.mkdir()
    assert main(_profile_argv(ref)) == 0
    assert _tables(tmp_path) == _tables(ref)
    assert _left_over(tmp_path) == ["ref"]


@pytest.mark.spacy_model
def test_sigterm_during_the_renames_is_held_until_all_are_in_place(tmp_path, old_outputs, monkeypatch, capsys):
    import signal

    from ddpcore.cli.main import main
    import ddpcore.io.outputs as outputs

    real = os.replace
    calls = {"n": 0}

    def term_after_first(src, dst):
        r = real(src, dst)
        if str(src).endswith(".tmp") and Path(dst).name in OUTS:
            calls["n"] += 1
            if calls["n"] == 1:
                os.kill(os.getpid(), signal.SIGTERM)  # arrives between the first and the second rename
        return r

    monkeypatch.setattr(outputs.os, "replace", term_after_first)
    capsys.readouterr()
    assert main(_profile_argv(tmp_path)) == 143
    err = capsys.readouterr().err
    assert "all of them completely" in err and len(err.strip().splitlines()) == 1, err
    assert calls["n"] == len(OUTS)  # every rename ran
    monkeypatch.undo()
    ref = tmp_path / "ref"
    ref.mkdir()
    assert main(_profile_argv(ref)) == 0
    assert _tables(tmp_path) == _tables(ref)
    assert _left_over(tmp_path) == ["ref"]
