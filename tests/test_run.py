"""Corpus-scale runs (issue 8): streaming output equals the in-memory result, resume after a crash,
SIGTERM/SIGKILL, settings checked on resume, workers that exit with their parent.

The oracle for every output is :func:`ddpcore.profile_anchors` on the same input (the in-memory
path, itself checked against hand-derived values in test_profile.py); the streaming path shares
its stage functions but not its reading, batching, ordering or writing code.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ddpcore.anchors.rules import get_rules
from ddpcore.engines.local import Settings, document_batches
from ddpcore.api import profile_anchors
from ddpcore.engines.run import ROLES, profile_to_files, resolve_n_process, work_dir_for
from ddpcore.io.outputs import check_outputs
from ddpcore.io.segments import SegmentColumns

DATA = Path(__file__).parent / "data"
MINI = DATA / "wmt25_mini.jsonl"
WMT25 = Path(__file__).parents[1] / "src" / "ddpcore" / "data" / "wmt25_en_source.jsonl"


def _targets(tmp: Path, ext: str, inputs: list[Path]) -> tuple[dict, list[Path]]:
    paths = [tmp / f"{role}.{ext}" for role in ROLES]
    t = check_outputs([("-o", paths[0]), ("--anchors", paths[1]), ("--sentences", paths[2])], inputs)
    return dict(zip(ROLES, t)), paths


def _read(path: Path) -> pl.DataFrame:
    if path.suffix == ".parquet":
        return pl.read_parquet(path)
    return pl.read_csv(path, infer_schema_length=None)


def _same_as_reference(paths: list[Path], ref, ext: str) -> None:
    for path, role in zip(paths, ROLES):
        exp = getattr(ref, role)
        if ext == "csv":  # compare what a CSV round trip of the in-memory table gives
            exp = pl.read_csv(exp.write_csv().encode(), infer_schema_length=None)
        assert_frame_equal(exp, _read(path))


@pytest.fixture(scope="module")
def interleaved(tmp_path_factory) -> Path:
    """The mini set with its rows shuffled: documents interleave in the input."""
    df = pl.read_ndjson(MINI).sample(fraction=1.0, shuffle=True, seed=7)
    path = tmp_path_factory.mktemp("inter") / "inter.jsonl"
    df.write_ndjson(path)
    return path


# ------------------------------------------------------------------ batching (no spaCy)


def test_document_batches_keep_documents_whole_and_respect_the_size():
    doc = [0, 0, 0, 1, 2, 2, 3, 3, 3, 3]
    chars = [5, 5, 5, 40, 3, 3, 1, 1, 1, 1]
    import numpy as np

    b = document_batches(np.array(doc), np.array(chars), batch_chars=10)
    # hand-derived: doc 0 (15 chars) alone reaches 10; doc 1 (40) alone; docs 2+3 (10) together
    assert b.tolist() == [0, 0, 0, 1, 2, 2, 2, 2, 2, 2]
    # one batch when the limit is large; one document per batch when it is tiny
    assert set(document_batches(np.array(doc), np.array(chars), 10**9).tolist()) == {0}
    assert document_batches(np.array(doc), np.array(chars), 1).tolist() == [0, 0, 0, 1, 2, 2, 3, 3, 3, 3]


def test_auto_processes_depend_on_input_size(monkeypatch):
    import ddpcore.engines.run as run

    monkeypatch.setattr(run, "available_cores", lambda: 2)
    monkeypatch.delenv("DDPCORE_START_METHOD", raising=False)
    for method, threshold in (("fork", 50_000), ("spawn", 150_000)):  # benchmarks/scale_table.py part d
        assert run.AUTO_MIN_CHARS[method] == threshold
        assert resolve_n_process("auto", threshold - 1, method) == 1
        assert resolve_n_process("auto", threshold, method) == 2
    monkeypatch.setenv("DDPCORE_START_METHOD", "spawn")  # the environment decides when no method is given
    assert resolve_n_process("auto", 100_000) == 1
    monkeypatch.setenv("DDPCORE_START_METHOD", "fork")
    assert resolve_n_process("auto", 100_000) == 2
    assert resolve_n_process(3, 10) == 3
    monkeypatch.setattr(run, "available_cores", lambda: 1)
    assert resolve_n_process("auto", 10**9) == 1


# ------------------------------------------------------------------ streaming == in-memory


@pytest.mark.spacy_model
@pytest.mark.parametrize("ext", ["parquet", "csv"])
def test_streaming_output_equals_in_memory_result(tmp_path, nlp, interleaved, ext):
    for source in (MINI, interleaved):
        ref = profile_anchors(source, nlp=nlp)
        targets, paths = _targets(tmp_path, ext, [source])
        rep = profile_to_files(source, targets, cols=SegmentColumns(), settings=Settings(rules=get_rules(None)),
                               n_process=1, batch_chars=1500)
        assert rep.n_batches >= 4  # several batches, so batching and re-ordering are exercised
        _same_as_reference(paths, ref, ext)
        assert not work_dir_for(paths[0]).exists()  # the work folder goes once the outputs are written
        if ext == "csv":
            sig = json.loads((tmp_path / "segments.csv.signature.json").read_text())
            assert sig["rules"] == "refined" and sig["batches"] == rep.n_batches


@pytest.mark.spacy_model
def test_streaming_reads_parquet_row_groups_and_csv_chunks(tmp_path, nlp, interleaved):
    df = pl.read_ndjson(interleaved)
    pq_in = tmp_path / "in.parquet"
    df.write_parquet(pq_in, row_group_size=3)  # 7 row groups
    no_domain = tmp_path / "nodomain.parquet"  # the optional domain column absent: read as null
    df.drop("domain").write_parquet(no_domain, row_group_size=4)
    ref_nd = profile_anchors(df.drop("domain"), nlp=nlp)
    targets, paths = _targets(tmp_path, "parquet", [no_domain])
    profile_to_files(no_domain, targets, cols=SegmentColumns(), settings=Settings(rules=get_rules(None)),
                     n_process=1, batch_chars=2000)
    _same_as_reference(paths, ref_nd, "parquet")
    csv_in = tmp_path / "in.csv"
    df.write_csv(csv_in)
    ref = profile_anchors(interleaved, nlp=nlp)
    for source in (pq_in, csv_in):
        targets, paths = _targets(tmp_path, "parquet", [source])
        profile_to_files(source, targets, cols=SegmentColumns(), settings=Settings(rules=get_rules(None)),
                         n_process=1, batch_chars=2000)
        _same_as_reference(paths, ref, "parquet")


# ------------------------------------------------------------------ resume


def _crash_after(n_batches: int):
    calls = {"n": 0}

    def wrap(parser):
        def parse(texts, progress=None):
            if calls["n"] >= n_batches:
                raise RuntimeError("simulated crash")
            calls["n"] += 1
            return parser.parse(texts, progress)
        return parse

    return wrap


@pytest.mark.spacy_model
def test_resume_after_a_crash_writes_what_an_uninterrupted_run_writes(tmp_path, nlp, interleaved):
    ref = profile_anchors(interleaved, nlp=nlp, rules="paper")
    targets, paths = _targets(tmp_path, "parquet", [interleaved])
    settings = Settings(rules=get_rules("paper"))
    kw = dict(cols=SegmentColumns(), settings=settings, n_process=1, batch_chars=1500)
    with pytest.raises(RuntimeError, match="simulated crash"):
        profile_to_files(interleaved, targets, parse_wrapper=_crash_after(2), **kw)
    work = work_dir_for(paths[0])
    assert len(list((work / "parts").glob("*.done"))) == 2
    assert not any(p.exists() for p in paths)  # nothing half-written
    # other settings: refused, naming the setting, journal kept
    from ddpcore.errors import DDPUsageError

    with pytest.raises(DDPUsageError, match=r"D170.*--rules.*'paper'.*'refined'"):
        profile_to_files(interleaved, targets, resume=True, **{**kw, "settings": Settings(rules=get_rules(None))})
    # another certification model: refused too (its batches would mix two models' ddp_certified)
    import dataclasses

    from ddpcore.anchors.certify_model import NOPARSER_CERTIFY_MODEL, certify_model_path

    other = dataclasses.replace(get_rules("paper"), certify_model=str(certify_model_path(NOPARSER_CERTIFY_MODEL)))
    with pytest.raises(DDPUsageError, match=r"D170.*certification model"):
        profile_to_files(interleaved, targets, resume=True, **{**kw, "settings": Settings(rules=other)})
    assert work.exists()
    rep = profile_to_files(interleaved, targets, resume=True, **kw)
    assert rep.resumed_batches == 2 and rep.n_batches > 2
    _same_as_reference(paths, ref, "parquet")
    assert not work.exists()


@pytest.mark.spacy_model
def test_a_run_without_resume_starts_over_and_says_so(tmp_path, interleaved):
    targets, paths = _targets(tmp_path, "parquet", [interleaved])
    kw = dict(cols=SegmentColumns(), settings=Settings(rules=get_rules(None)), n_process=1, batch_chars=1500)
    with pytest.raises(RuntimeError):
        profile_to_files(interleaved, targets, parse_wrapper=_crash_after(1), **kw)
    rep = profile_to_files(interleaved, targets, **kw)
    assert rep.resumed_batches == 0
    assert any("interrupted run" in n and "--resume" in n for n in rep.notes)


# ------------------------------------------------------------------ signals (subprocess)


def _ddp(*argv: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ddpcore.cli.main", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, **kw)


def _wait_for(pred, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(x) for x in out]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.spacy_model
@pytest.mark.slow
def test_sigterm_stops_cleanly_and_resume_finishes_identically(tmp_path, nlp):
    out = tmp_path / "ddp.parquet"
    anchors = tmp_path / "anchors.parquet"
    argv = [str(WMT25), "-o", str(out), "--anchors", str(anchors), "-q", "-j", "1", "--batch-chars", "20000"]
    proc = _ddp("profile", *argv, cwd=tmp_path)
    work = work_dir_for(out)
    _wait_for(lambda: len(list((work / "parts").glob("*.done"))) >= 1 or proc.poll() is not None)
    assert proc.poll() is None, proc.stderr.read().decode()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    err = err.decode()
    assert proc.returncode == 143, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "--resume" in lines[0] and "Traceback" not in err, err
    assert not out.exists() and not anchors.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", *argv, "--resume", "--progress", "plain"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "resuming" in r.stderr
    ref = profile_anchors(WMT25, nlp=nlp)
    assert_frame_equal(ref.segments, pl.read_parquet(out))
    assert_frame_equal(ref.anchors, pl.read_parquet(anchors))
    assert not work.exists()


@pytest.mark.spacy_model
@pytest.mark.slow
def test_workers_exit_when_their_parent_is_killed(tmp_path):
    out = tmp_path / "ddp.parquet"
    proc = _ddp("profile", str(WMT25), "-o", str(out), "-q", "-j", "2", "--batch-chars", "20000", cwd=tmp_path)
    _wait_for(lambda: len(_children(proc.pid)) >= 2 or proc.poll() is not None)
    time.sleep(1.0)
    kids = _children(proc.pid)
    assert proc.poll() is None and len(kids) >= 2, proc.stderr.read().decode()
    proc.kill()  # SIGKILL: no handler runs in the parent
    proc.wait()
    _wait_for(lambda: not any(_alive(k) for k in kids), timeout=10)
    # the journal survives a SIGKILL
    assert (work_dir_for(out) / "journal.json").exists()


# ------------------------------------------------------------------ shards and merge


@pytest.mark.spacy_model
def test_three_shards_merged_equal_the_unsharded_run(tmp_path, nlp, interleaved, capsys):
    from ddpcore.cli.main import main
    from ddpcore.engines.run import shard_of_documents

    ref = profile_anchors(interleaved, nlp=nlp)
    docs = pl.read_ndjson(interleaved)["document_id"]
    # the hash is CRC-32 of the id text (zlib), so shards are stable across machines
    import zlib

    assert shard_of_documents(docs, 3).tolist() == [zlib.crc32(d.encode()) % 3 for d in docs.to_list()]
    assert len(set(shard_of_documents(docs, 3).tolist())) == 3  # every shard gets documents here
    files = []
    for i in range(3):
        argv = ["profile", str(interleaved), "-q", "-j", "1", "--shard", f"{i}/3", "-o", str(tmp_path / f"s{i}.parquet"),
                "--anchors", str(tmp_path / f"a{i}.parquet"), "--sentences", str(tmp_path / f"t{i}.parquet")]
        assert main(argv) == 0
        files += [tmp_path / f"{x}{i}.parquet" for x in "sat"]
    # shards given in any order
    code = main(["merge", *map(str, reversed(files)), "-o", str(tmp_path / "seg.csv"), "--anchors",
                 str(tmp_path / "anc.parquet"), "--sentences", str(tmp_path / "sen.parquet"), "-q"])
    assert code == 0, capsys.readouterr().err
    _same_as_reference([tmp_path / "seg.csv"], ref, "csv")
    assert_frame_equal(ref.anchors, pl.read_parquet(tmp_path / "anc.parquet"))
    assert_frame_equal(ref.sentences, pl.read_parquet(tmp_path / "sen.parquet"))
    # a missing shard, a shard given twice, a text-format shard output: usage errors
    capsys.readouterr()
    assert main(["merge", *map(str, files[:6]), "-o", str(tmp_path / "x.parquet")]) == 2
    assert "D177" in capsys.readouterr().err
    assert main(["merge", str(files[0]), str(files[0]), "-o", str(tmp_path / "x.parquet")]) == 2
    assert "D177" in capsys.readouterr().err
    assert main(["profile", str(interleaved), "-q", "--shard", "0/3", "-o", str(tmp_path / "s.csv")]) == 2
    assert "D173" in capsys.readouterr().err
