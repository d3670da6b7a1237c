"""Long runs and their failure modes: a full disk, a pipeline changed before --resume, damaged locks,
shards of one input read from different paths, the setting --resume names.

Each test fails without its fix in ``src/ddpcore``: a full disk was ``[D999]`` (polars hides the
errno) and lost the hint to resume; a pipeline changed before --resume mixed two parses; an empty lock younger than
5 s refused the next run without naming it; ``ddp merge`` refused shards of the same bytes read from
another path; ``--resume --shard`` named ``input_sha256`` instead of ``--shard``.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ddpcore.engines import run as run_mod
from ddpcore.engines.run import ROLES, RunLock, lock_path_for, profile_to_files, work_dir_for
from ddpcore.errors import DDPUsageError, write_failure_errno
from ddpcore.io.outputs import check_outputs
from ddpcore.io.segments import SegmentColumns

DATA = Path(__file__).parent / "data"
MINI = DATA / "wmt25_mini.jsonl"
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}


def _ddp(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *args], capture_output=True, text=True,
                          cwd=cwd, env=ENV, timeout=300)


def _targets(tmp: Path, inputs: list[Path]) -> tuple[dict, list[Path]]:
    paths = [tmp / f"{role}.parquet" for role in ROLES]
    t = check_outputs([("-o", paths[0]), ("--anchors", paths[1]), ("--sentences", paths[2])], inputs)
    return dict(zip(ROLES, t)), paths


def _kw() -> dict:
    return dict(cols=SegmentColumns(), n_process=1, batch_chars=1500)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> list[pl.DataFrame]:
    """The three tables of an uninterrupted run on the mini set (same batch size as the tests)."""
    tmp = tmp_path_factory.mktemp("ref")
    targets, paths = _targets(tmp, [MINI])
    profile_to_files(MINI, targets, **_kw())
    return [pl.read_parquet(p) for p in paths]


def _same(paths: list[Path], ref: list[pl.DataFrame]) -> None:
    for p, exp in zip(paths, ref):
        assert_frame_equal(exp, pl.read_parquet(p))


# ------------------------------------------------------------------ a full disk


def test_write_failure_errno_reads_polars_errors() -> None:
    assert write_failure_errno(OSError(errno.ENOSPC, "No space left on device", "x")) == errno.ENOSPC
    # polars: an OSError without errno, or a ComputeError, saying "(os error 28)"
    assert write_failure_errno(OSError("No space left on device (os error 28)")) == errno.ENOSPC
    assert write_failure_errno(pl.exceptions.ComputeError(
        "parquet: File out of specification: underlying IO error: No space left on device (os error 28)")) == 28
    assert write_failure_errno(OSError("No such file or directory (os error 2)")) is None
    assert write_failure_errno(ValueError("(os error 28)")) is None
    assert write_failure_errno(pl.exceptions.ComputeError("parquet: Invalid thrift: transport error")) is None


def _fail_part_writes(monkeypatch, after: int, exc: BaseException) -> None:
    """``write_part`` fails like a full disk once ``after`` parts are written."""
    real = run_mod.write_part
    count = {"n": 0}

    def write_part(path, df):  # type: ignore[no-untyped-def]
        if count["n"] >= after:
            path.with_name(path.name + ".tmp").write_bytes(b"PAR1 half")  # what a failed writer leaves
            raise exc
        count["n"] += 1
        real(path, df)

    monkeypatch.setattr(run_mod, "write_part", write_part)


@pytest.mark.parametrize("exc", [
    pl.exceptions.ComputeError("parquet: File out of specification: underlying IO error: No space left on device "
                               "(os error 28)"),
    OSError("No space left on device (os error 28)"),
    OSError(errno.EDQUOT, "Disk quota exceeded"),
], ids=["polars-compute", "polars-oserror", "quota"])
def test_full_disk_while_profiling_is_d785_and_resume_finishes(tmp_path, monkeypatch, reference, exc) -> None:
    targets, paths = _targets(tmp_path, [MINI])
    _fail_part_writes(monkeypatch, 6, exc)  # two batches finished (three parts each)
    with pytest.raises(DDPUsageError) as info:
        profile_to_files(MINI, targets, **_kw(), resume_hint="rerun with --resume: ddp profile X --resume")
    msg = str(info.value)
    assert info.value.code == "D785" and "--resume" in msg and "2 finished batch(es)" in msg, msg
    assert isinstance(info.value, OSError) and info.value.errno in (errno.ENOSPC, errno.EDQUOT)  # API callers
    work = work_dir_for(paths[0])
    assert work.is_dir() and len(list((work / "parts").glob("*.done"))) == 2  # kept for --resume
    assert not list((work / "parts").glob("*.tmp"))  # the half-written part freed its space
    assert not any(p.exists() for p in paths)
    monkeypatch.undo()
    rep = profile_to_files(MINI, targets, **_kw(), resume=True)
    assert rep.resumed_batches == 2
    _same(paths, reference)
    assert not work.exists()


def test_full_disk_while_writing_the_outputs_is_d785(tmp_path, monkeypatch, reference) -> None:
    from ddpcore.io import sinks

    targets, paths = _targets(tmp_path, [MINI])

    def full(self, df):  # type: ignore[no-untyped-def]
        raise OSError("No space left on device (os error 28)")

    monkeypatch.setattr(sinks.Sink, "write", full)
    with pytest.raises(DDPUsageError, match=r"D785.*the outputs.*No space left on device.*--resume"):
        profile_to_files(MINI, targets, **_kw(), resume_hint="rerun with --resume")
    assert not any(p.exists() for p in paths)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    monkeypatch.undo()
    rep = profile_to_files(MINI, targets, **_kw(), resume=True)
    assert rep.resumed_batches == rep.n_batches  # nothing profiled again
    _same(paths, reference)


def test_write_part_raises_the_real_oserror_and_leaves_no_temporary(tmp_path, monkeypatch) -> None:
    from ddpcore.io.sinks import write_part

    def full(self, data):  # type: ignore[no-untyped-def]
        Path.write_text(self, "half")
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(OSError) as info:
        write_part(tmp_path / "000000.segments.parquet", pl.DataFrame({"a": [1, 2]}))
    assert info.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []


def test_cli_says_d138_not_d999_when_polars_hides_the_errno(tmp_path, monkeypatch, capsys) -> None:
    from ddpcore.cli.main import main
    from ddpcore.io import sinks

    shards = []
    for i in range(2):
        out = tmp_path / f"s{i}.parquet"
        r = _ddp("profile", str(MINI), "-o", str(out), "--shard", f"{i}/2", "-q")
        assert r.returncode == 0, r.stderr
        shards.append(str(out))

    def full(self, df):  # type: ignore[no-untyped-def]
        raise pl.exceptions.ComputeError("parquet: underlying IO error: No space left on device (os error 28)")

    monkeypatch.setattr(sinks.Sink, "write", full)
    code = main(["merge", *shards, "-o", str(tmp_path / "m.parquet"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "[D138]" in err and "No space left on device" in err and "D999" not in err, err
    assert not (tmp_path / "m.parquet").exists()


def _tmpfs(path: Path, size: str) -> bool:
    path.mkdir()
    if shutil.which("mount") is None:
        return False
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    return r.returncode == 0


def test_a_really_full_disk_then_resume(tmp_path) -> None:
    """End to end on a small tmpfs (needs permission to mount; skipped otherwise)."""
    disk = tmp_path / "disk"
    if not _tmpfs(disk, "3m"):
        pytest.skip("cannot mount a tmpfs here")
    try:
        rows = [json.loads(x) for x in MINI.read_text().splitlines()]
        src = tmp_path / "med.jsonl"
        with open(src, "w") as fh:
            for k in range(30):
                for r in rows:
                    fh.write(json.dumps({**r, "document_id": f"{r['document_id']}#{k}"}) + "\n")
        args = [str(src), "--anchors", str(disk / "a.parquet"), "--no-cache", "-q", "--batch-chars", "20000"]
        ref = _ddp("profile", *args[:1], "-o", str(tmp_path / "ref.parquet"), "--anchors", str(tmp_path / "ref_a.parquet"),
                   *args[3:])
        assert ref.returncode == 0, ref.stderr
        filler = disk / "filler"
        filler.write_bytes(b"\0" * (2_600 * 1024))
        r = _ddp("profile", "-o", str(disk / "o.parquet"), *args)
        assert r.returncode == 2, r.stderr
        assert "[D785]" in r.stderr and "--resume" in r.stderr and "D999" not in r.stderr, r.stderr
        filler.unlink()
        r = _ddp("profile", "-o", str(disk / "o.parquet"), *args, "--resume")
        assert r.returncode == 0, r.stderr
        assert_frame_equal(pl.read_parquet(tmp_path / "ref.parquet"), pl.read_parquet(disk / "o.parquet"))
        assert_frame_equal(pl.read_parquet(tmp_path / "ref_a.parquet"), pl.read_parquet(disk / "a.parquet"))
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)


# ---------------------------------------------------------------------- locks


def test_an_empty_lock_of_a_killed_run_is_taken_over_once_stale(tmp_path) -> None:
    target = tmp_path / "out.parquet"
    lock = lock_path_for(target)
    lock.write_text("")  # killed between creating the lock and writing it (or a full disk)
    t0 = time.monotonic()
    rl = RunLock(target)
    rl.acquire()  # was D762 "other runs keep taking it" for 5 s
    assert time.monotonic() - t0 < 9
    assert json.loads(lock.read_text())["pid"] == os.getpid()
    rl.release()
    assert not lock.exists()


def test_a_lock_that_stays_unreadable_names_the_file_to_delete(tmp_path) -> None:
    target = tmp_path / "out.parquet"
    lock = lock_path_for(target)
    lock.write_text("")
    future = time.time() + 3600  # clock skew on a shared file system
    os.utime(lock, (future, future))
    with pytest.raises(DDPUsageError, match=r"D762.*delete .*\.out\.parquet\.ddp-lock"):
        RunLock(target).acquire()


def test_a_lock_that_cannot_be_written_is_not_left_behind(tmp_path, monkeypatch) -> None:
    target = tmp_path / "out.parquet"

    def full(obj, fh, *a, **k):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(run_mod.json, "dump", full)
    with pytest.raises(OSError):
        RunLock(target).acquire()
    monkeypatch.undo()
    assert not lock_path_for(target).exists()


# ----------------------------------------------------------------- shards, merge, resume


def test_merge_takes_shards_of_the_same_bytes_read_from_another_path(tmp_path) -> None:
    node = tmp_path / f"node-{uuid.uuid4().hex[:6]}"
    node.mkdir()
    copy = node / "mini.jsonl"
    shutil.copy(MINI, copy)
    ref = tmp_path / "ref.parquet"
    assert _ddp("profile", str(MINI), "-o", str(ref), "-q").returncode == 0
    s0, s1 = tmp_path / "s0.parquet", tmp_path / "s1.parquet"
    r = _ddp("profile", str(MINI), "-o", str(s0), "--shard", "0/2", "-q")
    assert r.returncode == 0, r.stderr
    r = _ddp("profile", "mini.jsonl", "-o", str(s1), "--shard", "1/2", "-q", cwd=node)  # a node's local copy
    assert r.returncode == 0, r.stderr
    r = _ddp("merge", str(s0), str(s1), "-o", str(tmp_path / "m.parquet"), "-q")
    assert r.returncode == 0, r.stderr
    assert_frame_equal(pl.read_parquet(ref), pl.read_parquet(tmp_path / "m.parquet"))
    # other bytes: still refused
    copy.write_text(MINI.read_text().replace("Trump", "Biden"))
    r = _ddp("profile", "mini.jsonl", "-o", str(s1), "--shard", "1/2", "-q", cwd=node)
    assert r.returncode == 0, r.stderr
    r = _ddp("merge", str(s0), str(s1), "-o", str(tmp_path / "m2.parquet"), "-q")
    assert r.returncode == 3 and "[D176]" in r.stderr and "different input" in r.stderr, r.stderr


def test_resume_with_another_shard_names_shard(tmp_path) -> None:
    from ddpcore.engines.journal import compare_settings

    old = {"input": {"path": "x"}, "batch_chars": 1}
    new = {**old, "shard": "0/2", "input_sha256": "ab" * 32}
    with pytest.raises(DDPUsageError, match=r"D170.*--shard differs") as info:
        compare_settings(old, new, "journal.json")
    assert "input_sha256" not in str(info.value)
    with pytest.raises(DDPUsageError, match=r"D170.*the input file differs.*content changed"):
        compare_settings({**new, "input_sha256": "cd" * 32}, new, "journal.json")


from tests.test_run import _crash_after  # noqa: E402  (the simulated crash of tests/test_run.py)


def test_resume_refuses_a_pipeline_changed_since_the_interrupted_run(tmp_path, reference) -> None:
    """The same --pipeline, but spaCy or the pipeline package upgraded (or its folder replaced) between the
    crash and --resume: the batches of the two parses were mixed, with exit 0 and the old version in the
    signature."""
    targets, paths = _targets(tmp_path, [MINI])
    with pytest.raises(RuntimeError, match="simulated crash"):
        profile_to_files(MINI, targets, **_kw(), parse_wrapper=_crash_after(2))
    work = work_dir_for(paths[0])
    journal_path = work / "journal.json"
    journal = json.loads(journal_path.read_text())
    real = dict(journal["pipeline_info"])
    journal["pipeline_info"] = {**real, "pipeline_version": "3.7.1"}  # what the interrupted run parsed with
    journal_path.write_text(json.dumps(journal))
    with pytest.raises(DDPUsageError, match=r"D170.*spaCy pipeline differs.*3\.7\.1.*without --resume"):
        profile_to_files(MINI, targets, **_kw(), resume=True)
    assert not any(p.exists() for p in paths)
    assert len(list((work / "parts").glob("*.done"))) == 2  # kept: reinstalling that pipeline resumes
    journal = json.loads(journal_path.read_text())
    journal["pipeline_info"] = real
    journal_path.write_text(json.dumps(journal))
    rep = profile_to_files(MINI, targets, **_kw(), resume=True)
    assert rep.resumed_batches == 2
    _same(paths, reference)


def test_merge_of_a_shard_damaged_inside_is_d103_naming_it(tmp_path) -> None:
    """A shard copy damaged in its data pages (its footer, read first, intact) was [D999]."""
    import struct

    shards = []
    for i in range(2):
        out = tmp_path / f"s{i}.parquet"
        r = _ddp("profile", str(MINI), "-o", str(out), "--shard", f"{i}/2", "-q")
        assert r.returncode == 0, r.stderr
        shards.append(out)
    raw = bytearray(shards[1].read_bytes())
    footer = struct.unpack("<i", bytes(raw[-8:-4]))[0]
    for at in range(4, len(raw) - footer - 8):  # every data page byte, not the footer
        raw[at] ^= 0x5A
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(bytes(raw))
    r = _ddp("merge", str(shards[0]), str(damaged), "-o", str(tmp_path / "m.parquet"))
    assert r.returncode == 3, r.stderr
    assert "[D103]" in r.stderr and "damaged.parquet" in r.stderr and "D999" not in r.stderr, r.stderr
    assert not (tmp_path / "m.parquet").exists()


def test_resume_redoes_a_finished_batch_whose_part_was_damaged_inside(tmp_path, reference) -> None:
    """docs/outputs-and-runs.md: a finished batch whose parts are unreadable is profiled again. A part damaged
    in its data pages (footer and row count intact: a torn write after power loss, a bad block) passed the
    check and failed the assembly with [D999]."""
    import struct

    targets, paths = _targets(tmp_path, [MINI])
    with pytest.raises(RuntimeError, match="simulated crash"):
        profile_to_files(MINI, targets, **_kw(), parse_wrapper=_crash_after(2))
    part = work_dir_for(paths[0]) / "parts" / "000001.anchors.parquet"
    raw = bytearray(part.read_bytes())
    footer = struct.unpack("<i", bytes(raw[-8:-4]))[0]
    for at in range(4, len(raw) - footer - 8):
        raw[at] ^= 0x5A
    part.write_bytes(bytes(raw))
    said: list[str] = []
    rep = profile_to_files(MINI, targets, **_kw(), resume=True, warn=said.append)
    assert rep.resumed_batches == 1
    assert any("batch 1" in m and "checksum" in m for m in said), said
    _same(paths, reference)


def test_resume_reads_the_input_again_when_a_staged_chunk_was_damaged_inside(tmp_path, reference) -> None:
    """docs/outputs-and-runs.md: a staged chunk that is unreadable makes --resume read the input again. One
    damaged in its data pages (footer and row count intact) passed the check and failed with [D999]."""
    import struct

    targets, paths = _targets(tmp_path, [MINI])
    with pytest.raises(RuntimeError, match="simulated crash"):
        profile_to_files(MINI, targets, **_kw(), parse_wrapper=_crash_after(2))
    chunk = sorted((work_dir_for(paths[0]) / "staged").glob("*.parquet"))[0]
    raw = bytearray(chunk.read_bytes())
    footer = struct.unpack("<i", bytes(raw[-8:-4]))[0]
    for at in range(4, len(raw) - footer - 8):
        raw[at] ^= 0x5A
    chunk.write_bytes(bytes(raw))
    said: list[str] = []
    rep = profile_to_files(MINI, targets, **_kw(), resume=True, warn=said.append)
    assert rep.resumed_batches == 2  # the finished batches are kept
    assert any("staged input" in m and "checksum" in m for m in said), said
    _same(paths, reference)
