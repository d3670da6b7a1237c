"""Break tests of issue 19, helper 7: outputs inside a work folder, all-or-nothing renames,
two runs on one output, damaged ``--resume`` state, ``ddp merge`` of shards of a changed input.

Rows run through :func:`._harness.run_case` (exit code, one stderr line, inputs unchanged, no
stray files); cases the harness cannot express (a fault injected between renames, a live
second run) are plain pytest tests below.
"""
from __future__ import annotations

import json
import re
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
    # no temporary, no backup, no lock; the profiled batches stay for --resume (they were deleted: a failure at
    # the very end of a long run lost all of it)
    assert "profiled batch(es) are kept in" in err and "--resume to write the outputs without profiling again" in err
    assert _left_over(tmp_path) == [".o.parquet.ddp-work"]
    monkeypatch.setattr(outputs.os, "replace", real)
    calls["n"] = 0
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert main(_profile_argv(fresh)) == 0
    assert main(_profile_argv(tmp_path, "--resume")) == 0
    err = capsys.readouterr().err
    assert re.search(r"resuming: (\d+) of \1 batches", err), err  # every batch finished: nothing parsed again
    assert _tables(tmp_path) == _tables(fresh)  # the outputs of an uninterrupted run
    assert _left_over(tmp_path) == ["fresh"]


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


# ---------------------------------------------------------------- item 3: two runs on one output

def _lock_of(pid: int) -> str:
    import socket

    from ddpcore.engines.run import _proc_start

    return json.dumps({"pid": pid, "host": socket.gethostname(), "start": _proc_start(pid)})


def test_a_live_run_holds_the_output(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "in.jsonl").write_text(JSONL)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = tmp_path / ".o.parquet.ddp-lock"
        lock.write_text(_lock_of(holder.pid))
        (tmp_path / ".o.parquet.ddp-work").mkdir()  # the live run's work folder: must survive
        (tmp_path / ".o.parquet.ddp-work" / "journal.json").write_text("{}")
        case = C("live-lock", ["profile", "in.jsonl", "-o", "o.parquet"], 2,
                 rf"\[D762\] another ddp run is writing o\.parquet \(pid {holder.pid}\); wait for it to finish or "
                 r"choose another -o")
        run_case(case, tmp_path)  # exit 2, one line, lock and work folder untouched, nothing new
    finally:
        holder.kill()
        holder.wait()


def test_a_dead_runs_lock_is_taken_over(tmp_path: Path) -> None:
    import subprocess
    import sys

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "in.jsonl").write_text(JSONL)
    lock = tmp_path / ".o.parquet.ddp-lock"
    lock.write_text(_lock_of(dead.pid))
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", "in.jsonl", "-o", "o.parquet", "-q",
                        "-j", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=FAST)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "o.parquet"]  # the stale lock is gone


def test_a_reused_pid_does_not_hold_the_lock(tmp_path: Path) -> None:
    from ddpcore.engines.run import RunLock

    import socket

    lock = tmp_path / ".o.parquet.ddp-lock"
    # our own pid, alive, but with another start time: the run that wrote the lock is gone
    lock.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "start": "1"}))
    rl = RunLock(tmp_path / "o.parquet")
    rl.acquire()
    assert json.loads(lock.read_text())["start"] != "1"
    rl.release()
    assert not lock.exists()


@pytest.mark.spacy_model
@pytest.mark.slow
def test_a_second_run_on_the_same_output_is_refused_while_the_first_runs(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    wmt25 = Path(__file__).parents[2] / "src" / "ddpcore" / "data" / "wmt25_en_source.jsonl"
    argv = [sys.executable, "-m", "ddpcore.cli.main", "profile", str(wmt25), "-o", "o.parquet", "-q", "-j", "1",
            "--no-cache", "--batch-chars", "20000"]
    first = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        end = time.monotonic() + 60
        while not (tmp_path / ".o.parquet.ddp-work" / "parts").exists() and first.poll() is None:
            assert time.monotonic() < end
            time.sleep(0.05)
        second = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=FAST)
        assert first.poll() is None, "the first run ended before the second started: test not exercised"
        assert second.returncode == 2, second.stderr
        assert f"[D762] another ddp run is writing o.parquet (pid {first.pid})" in second.stderr
        _, err = first.communicate(timeout=120)
        assert first.returncode == 0, err.decode()
    finally:
        if first.poll() is None:
            first.kill()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.parquet"]


# ---------------------------------------------------------------- item 4: damaged --resume state


def _interrupted(tmp: Path, source: Path, out: Path, n_done: int = 2) -> Path:
    """Leave the work folder of a run that crashed after ``n_done`` batches (as test_run.py does)."""
    from ddpcore.anchors.rules import get_rules
    from ddpcore.engines.local import Settings
    from ddpcore.engines.run import ROLES, profile_to_files, work_dir_for
    from ddpcore.io.outputs import check_outputs
    from ddpcore.io.segments import SegmentColumns

    calls = {"n": 0}

    def wrap(parser):  # type: ignore[no-untyped-def]
        def parse(texts, progress=None):  # type: ignore[no-untyped-def]
            if calls["n"] >= n_done:
                raise RuntimeError("simulated crash")
            calls["n"] += 1
            return parser.parse(texts, progress)
        return parse

    names = [out, out.with_name("a.csv"), out.with_name("s.parquet")]
    t = check_outputs([("-o", names[0]), ("--anchors", names[1]), ("--sentences", names[2])], [source])
    with pytest.raises(RuntimeError, match="simulated crash"):
        profile_to_files(source, dict(zip(ROLES, t)), cols=SegmentColumns(), settings=Settings(rules=get_rules(None)),
                         n_process=1, batch_chars=1500, parse_wrapper=wrap)
    work = work_dir_for(Path(os.path.abspath(out)))
    assert len(list((work / "parts").glob("*.done"))) == n_done
    return work


def _resume(cwd: Path, out: str, source: str, capsys) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    from ddpcore.cli.main import main

    os.chdir(cwd)
    capsys.readouterr()
    code = main(["profile", source, "-q", "-j", "1", "--batch-chars", "1500", "-o", out, "--anchors",
                 str(Path(out).with_name("a.csv")), "--sentences", str(Path(out).with_name("s.parquet")), "--resume"])
    return code, capsys.readouterr().err


@pytest.fixture()
def reference(tmp_path_factory) -> dict[str, object]:
    """The outputs of an uninterrupted run (the oracle for every resumed run below)."""
    from ddpcore.cli.main import main

    ref = tmp_path_factory.mktemp("ref")
    assert main(_profile_argv(ref)) == 0
    return _tables(ref)


@pytest.mark.spacy_model
def test_resume_from_another_working_folder(tmp_path, monkeypatch, capsys, reference):
    a, b = tmp_path / "a", tmp_path / "b" / "c"  # two depths: the relative paths of one are wrong from the other
    a.mkdir(), b.mkdir(parents=True)
    src = tmp_path / "in.jsonl"
    src.write_bytes(MINI.read_bytes())
    for staged_source in (src, tmp_path / "in.parquet"):  # a staged input and a Parquet input read in place
        if staged_source.suffix == ".parquet":
            pl.read_ndjson(src).write_parquet(staged_source, row_group_size=4)
            for f in tmp_path.iterdir():
                if f.name in OUTS:
                    f.unlink()
        monkeypatch.chdir(a)
        _interrupted(a, Path("..") / staged_source.name, Path("../o.parquet"))
        code, err = _resume(b, "../../o.parquet", str(Path("../..") / staged_source.name), capsys)
        assert code == 0, err
        assert "warning" not in err and "resuming: 2 of" in err, err  # the staged input and both batches reused
        got = _tables(tmp_path)
        assert got == reference, staged_source.name
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["a", "b", "in.jsonl", *OUTS]
                                                                    + (["in.parquet"] if staged_source.suffix ==
                                                                       ".parquet" else []))


@pytest.mark.spacy_model
@pytest.mark.parametrize("damage", ["empty-journal", "journal-without-settings", "zero-length-part",
                                    "zero-length-marker", "missing-part", "missing-staged-chunk",
                                    "zero-length-staged-chunk", "zero-length-id-index"])
def test_damaged_resume_state_is_redone_not_a_crash(tmp_path, monkeypatch, capsys, reference, damage):
    monkeypatch.chdir(tmp_path)
    work = _interrupted(tmp_path, MINI, tmp_path / "o.parquet")
    parts = work / "parts"
    target = {
        "empty-journal": work / "journal.json",
        "zero-length-part": parts / "000001.anchors.parquet",
        "zero-length-marker": parts / "000000.done",
        "missing-part": parts / "000000.sentences.parquet",
        "missing-staged-chunk": work / "staged" / "000000.parquet",
        "zero-length-staged-chunk": work / "staged" / "000000.parquet",
        "zero-length-id-index": work / "ids.parquet",
    }.get(damage)
    if damage == "journal-without-settings":
        (work / "journal.json").write_text("{}")
    elif damage.startswith("missing"):
        target.unlink()
    else:
        target.write_bytes(b"")
    code, err = _resume(tmp_path, str(tmp_path / "o.parquet"), str(MINI), capsys)
    assert code == 0, err
    warnings = [ln for ln in err.splitlines() if "warning:" in ln]
    assert len(warnings) == 1 and "--resume" in warnings[0], err
    expect = {"empty-journal": "journal", "journal-without-settings": "journal", "zero-length-part": "batch 1",
              "zero-length-marker": "batch 0", "missing-part": "batch 0", "missing-staged-chunk": "staged input",
              "zero-length-staged-chunk": "staged input", "zero-length-id-index": "staged input"}[damage]
    assert expect in warnings[0], err
    assert _tables(tmp_path) == reference
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(OUTS)


# ---------------------------------------------------------------- item 5: merge of shards of a changed input


@pytest.mark.spacy_model
def test_merge_refuses_shards_of_a_changed_input(tmp_path, monkeypatch, capsys):
    import hashlib
    import pyarrow.parquet as pq

    from ddpcore.cli.main import main

    monkeypatch.chdir(tmp_path)
    src = tmp_path / "in.jsonl"
    src.write_bytes(MINI.read_bytes())
    argv = ["profile", "in.jsonl", "-q", "-j", "1", "--shard"]
    assert main([*argv, "0/2", "-o", "s0.parquet"]) == 0
    # the recorded fingerprint is the SHA-256 of the input's bytes (hashlib here, independently)
    sig = json.loads(pq.read_schema("s0.parquet").metadata[b"ddpcore.signature"])
    assert sig["input_sha256"] == hashlib.sha256(MINI.read_bytes()).hexdigest()
    # same input again: the shards merge
    assert main([*argv, "1/2", "-o", "s1.parquet"]) == 0
    capsys.readouterr()
    assert main(["merge", "s0.parquet", "s1.parquet", "-o", "m.parquet", "-q"]) == 0
    assert "warning" not in capsys.readouterr().err
    # the input changes (one word of a document in shard 0) before shard 1 runs: same path, same settings
    rows = pl.read_ndjson(src)
    rows.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(pl.col("source") + " Indeed.")
                      .otherwise(pl.col("source")).alias("source")).write_ndjson(src)
    assert main([*argv, "1/2", "-o", "s1.parquet"]) == 0
    capsys.readouterr()
    assert main(["merge", "s0.parquet", "s1.parquet", "-o", "m2.parquet", "-q"]) == 3
    err = capsys.readouterr().err
    assert "[D176]" in err and "different input" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "m2.parquet").exists()


def test_merge_of_shards_without_a_fingerprint_warns_and_records_it(tmp_path, capsys):
    from ddpcore.cli.main import main

    def shard(i: int, doc: str) -> None:
        sig = {"shard": f"{i}/2", "distance": "chained", "input": "in.jsonl", "columns": {"document": "document_id"}}
        df = pl.DataFrame({"document_id": [doc], "segment_id": [0], "ddp": [1], "input_row": [i]})
        import pyarrow.parquet as pq

        t = df.to_arrow()
        t = t.replace_schema_metadata({"ddpcore.signature": json.dumps(sig), "ddpcore.table": "segments"})
        pq.write_table(t, tmp_path / f"s{i}.parquet")

    shard(0, "a")
    shard(1, "b")
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "s0.parquet"), str(tmp_path / "s1.parquet"), "-o",
                 str(tmp_path / "m.csv"), "-q"]) == 0
    err = capsys.readouterr().err
    assert "ddp merge: warning:" in err and "not checked" in err, err
    sig = json.loads((tmp_path / "m.csv.signature.json").read_text())
    assert sig["input_check"].startswith("none")
