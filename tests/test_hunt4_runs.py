"""Long runs, fourth hunt: what ``--resume`` (both engines), ``-o -`` and the Ray actors let through.

Each test fails without its fix in ``src/ddpcore``: a Ray ``--resume`` after spaCy or the pipeline changed
mixed two parses with exit 0 (the local engine refused, D170); a Ray actor on a node with another install
mixed its parses into the run's; a Ray ``--resume`` refused for a changed setting (D170) deleted the finished
batches it told the user to resume; an input replaced in place by one of the same size and modification time
was resumed (Parquet: its new rows mixed with the old batches; JSONL/CSV: the old staged rows profiled under
the new file's name); a ``-o -`` run killed with SIGKILL left its ``ddp-work-*`` folder in the temporary folder
for good (the Ray engine's too: it was named so that its own clean-up never found it).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from ddpcore.engines import run as run_mod
from ddpcore.engines.run import ROLES, profile_to_files, work_dir_for
from ddpcore.errors import DDPError, DDPUsageError
from ddpcore.io.outputs import check_outputs

# the mini set, its output targets, run options and the uninterrupted reference run: tests/test_hunt_runs.py's
from tests.test_hunt_runs import ENV, MINI, _kw, _same, _targets, reference  # noqa: E402,F401

COLS = _kw()["cols"]

from tests.test_run import _crash_after  # noqa: E402  (the simulated crash of tests/test_run.py)


# ------------------------------------------------- an input replaced by one of the same size and time


def _replace_keeping_size_and_time(path: Path, old: bytes, new: bytes) -> None:
    """Change the content of ``path`` (every ``old`` becomes ``new``, same length) and put back its size and
    modification time: what ``cp --preserve`` of an edited copy, or a sync tool, leaves."""
    assert len(old) == len(new)
    st = path.stat()
    raw = path.read_bytes()
    assert old in raw
    path.write_bytes(raw.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "csv"])
def test_resume_refuses_an_input_replaced_by_one_of_the_same_size_and_time(tmp_path, reference, fmt) -> None:
    """The journal compared path, size and modification time only: the resumed run profiled the rest of the new
    content (a Parquet input is read in place: old and new rows mixed in one output), or the old staged copy
    under the new file's name, with exit 0. Now D170 naming the input's content; the finished batches are kept,
    and the original content resumes."""
    src = tmp_path / f"in.{fmt}"
    df = pl.read_ndjson(MINI)
    if fmt == "parquet":
        df.write_parquet(src, compression="uncompressed", statistics=False, row_group_size=4)
    elif fmt == "csv":
        df.write_csv(src)
    else:
        shutil.copy(MINI, src)
    original = src.read_bytes()
    st = src.stat()
    out = tmp_path / "out"
    out.mkdir()
    targets, paths = _targets(out, [src])
    with pytest.raises(RuntimeError, match="simulated crash"):
        profile_to_files(src, targets, **_kw(), parse_wrapper=_crash_after(2))
    work = work_dir_for(paths[0])
    word = next(w for w in (b" she ", b" he ", b" they ") if w in original)
    _replace_keeping_size_and_time(src, word, word.upper())  # pronouns become other tokens: other anchors
    with pytest.raises(DDPUsageError, match=r"^\[D170\] --resume: the input file differs .*the input's content "
                                            r"changed since the interrupted run.*without --resume to start over"):
        profile_to_files(src, targets, **_kw(), resume=True)
    assert len(list((work / "parts").glob("*.done"))) == 2  # kept for a resume on the original input
    assert not any(p.exists() for p in paths)
    src.write_bytes(original)
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    rep = profile_to_files(src, targets, **_kw(), resume=True)
    assert rep.resumed_batches == 2
    _same(paths, reference)


def test_a_journal_without_the_input_checksum_is_refused_saying_why(tmp_path) -> None:
    from ddpcore.engines.journal import compare_settings

    old = {"input": {"path": "x"}, "batch_chars": 1}
    with pytest.raises(DDPUsageError, match=r"D170.*records no checksum of the input's content"):
        compare_settings(old, {**old, "input_sha256": "ab" * 32}, "journal.json")


# --------------------------------------------------- stdout runs killed with SIGKILL


def _fake_work(base: Path, name: str, owner: dict | None, age: float) -> Path:
    d = base / name
    (d / "parts").mkdir(parents=True)
    (d / "parts" / "000000.done").write_text("{}")
    if owner is not None:
        (d / run_mod.TEMP_WORK_OWNER).write_text(json.dumps(owner))
    then = time.time() - age
    for p in (d / "parts" / "000000.done", d / "parts", d / run_mod.TEMP_WORK_OWNER, d):
        if p.exists():
            os.utime(p, (then, then))
    return d


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_only_provably_abandoned_stdout_work_folders_are_removed(tmp_path) -> None:
    host = socket.gethostname()
    dead = {"pid": _dead_pid(), "host": host, "start": "1"}
    old = run_mod.STALE_WORK_SECONDS + 60
    gone = _fake_work(tmp_path, "ddp-work-gone", dead, old)
    young = _fake_work(tmp_path, "ddp-work-young", dead, 5)  # its run may be in another PID namespace
    live = _fake_work(tmp_path, "ddp-work-live", run_mod._owner(), old)  # this process: alive
    reused = _fake_work(tmp_path, "ddp-work-reused", {"pid": os.getpid(), "host": host, "start": "1"}, old)
    elsewhere = _fake_work(tmp_path, "ddp-work-elsewhere", {**dead, "host": host + "-other"}, old)
    unowned = _fake_work(tmp_path, "ddp-work-unowned", None, old)  # an older ddpcore's, or one being created
    other = _fake_work(tmp_path, "not-ddp-work-x", dead, old)
    assert sorted(p.name for p in run_mod.remove_abandoned_work(tmp_path)) == [gone.name, reused.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (young, live, elsewhere, unowned, other))


def _wait_for(pred, timeout: float = 120.0) -> None:
    t0 = time.monotonic()
    while not pred():
        assert time.monotonic() - t0 < timeout
        time.sleep(0.1)


def test_a_later_run_removes_the_work_folder_of_a_stdout_run_killed_with_sigkill(tmp_path) -> None:
    """``ddp profile IN -o -`` keeps its work folder in the temporary folder; SIGKILL runs no handler, so it
    stayed there for good. The next run removes it (once its owner is gone and it is old) and says so."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**ENV, "TMPDIR": str(tmp)}
    big = tmp_path / "big.jsonl"
    mini = pl.read_ndjson(MINI)
    pl.concat([mini.with_columns(pl.col("document_id") + f"-{i}") for i in range(20)]).write_ndjson(big)
    cmd = [sys.executable, "-m", "ddpcore.cli.main", "profile", str(big), "-o", "-", "-q", "--batch-chars", "1500"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        _wait_for(lambda: any((d / "parts").is_dir() and list((d / "parts").glob("*.done"))
                              for d in tmp.glob("ddp-work-*")) or proc.poll() is not None)
        assert proc.poll() is None, "the run finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    left = list(tmp.glob("ddp-work-*"))
    assert len(left) == 1 and (left[0] / run_mod.TEMP_WORK_OWNER).exists()
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", str(MINI), "-o", "-", "-q"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and left[0].exists()  # a few seconds old: not yet provably abandoned
    then = time.time() - run_mod.STALE_WORK_SECONDS - 60
    for p in [left[0], *left[0].iterdir()]:
        os.utime(p, (then, then))
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", str(MINI), "-o", "-", "-q"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert not left[0].exists()
    said = [ln for ln in r.stderr.splitlines() if "temporary work folder" in ln]
    assert len(said) == 1 and str(left[0]) in said[0], r.stderr
    assert list(tmp.iterdir()) == []  # and the run's own folder is gone too


def test_a_ray_stdout_run_keeps_its_work_folder_where_its_clean_up_finds_it(tmp_path, monkeypatch) -> None:
    """The Ray engine's ``-o -`` folder was ``ddp-ray-*`` without an owner file, while its clean-up of folders
    left by killed runs looks for ``.ddp-ray-work-*`` with one: a killed run's folder was never removed."""
    import tempfile

    from ddpcore.engines import ray_engine as RE

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    [seg] = check_outputs([("-o", "-")], [MINI], stdout_format="csv")
    where = RE.work_location({"segments": seg})
    assert where.temporary and where.local.parent == tmp_path
    assert RE._old_journal(where, False, print, []) is None  # the run's own start keeps the owner file
    assert RE.remove_stale_work(tmp_path) == []  # this process owns it: alive
    (where.local / "owner").write_text(f"{_dead_pid()}:1\n")  # the run was killed (SIGKILL)
    assert RE.remove_stale_work(tmp_path) == [where.local.name]
    assert not where.local.exists()


# ------------------------------------------------------------------------------ Ray


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ddpcore[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _ray_crashed_run(tmp_path: Path, src: Path, monkeypatch) -> tuple[dict, list[Path], Path]:
    """A Ray run whose every batch finished, killed before it assembled its outputs: its dataset (parts, markers,
    journal with the pipeline) stays for --resume."""
    from ddpcore.engines import ray_engine as RE

    targets, paths = _targets(tmp_path, [src])

    def crash(*args, **kwargs):
        raise RuntimeError("simulated crash")

    with monkeypatch.context() as m:
        m.setattr(RE, "_finish", crash)
        with pytest.raises(RuntimeError, match="simulated crash"):
            RE.profile_ray(src, targets, cols=COLS, n_process=2, batch_chars=1500)
    work = tmp_path / ".segments.parquet.ray.ddp-work"
    assert (work / "journal.json").exists()
    return targets, paths, work


@pytest.mark.spacy_model
@pytest.mark.slow
def test_ray_resume_refuses_a_changed_pipeline_and_keeps_its_batches(ray_local, tmp_path, monkeypatch, reference):
    """The local engine refuses (D170) a --resume whose spaCy or pipeline changed; the Ray engine parsed the
    missing batches with the new one and assembled them with the old ones, exit 0. Now every actor checks the
    pipeline before it parses: D170, no part written. And a D170 for a setting deleted the whole dataset."""
    from ddpcore.anchors.rules import get_rules
    from ddpcore.engines import parts as P
    from ddpcore.engines import ray_engine as RE
    from ddpcore.engines.local import Settings

    targets, paths, work = _ray_crashed_run(tmp_path, MINI, monkeypatch)
    n = json.loads((work / "journal.json").read_text())["n_batches"]
    for k in (0, 1):  # two batches the interrupted run had not finished
        P.drop_batch(str(work), k)
    # another setting: refused, and the interrupted run's batches stay (they were deleted)
    with pytest.raises(DDPUsageError, match=r"^\[D170\] --resume: --rules differs"):
        RE.profile_ray(MINI, targets, cols=COLS, n_process=2, batch_chars=1500, resume=True,
                       settings=Settings(rules=get_rules("paper")))
    assert len(list((work / P.MARKERS).glob("*.json"))) == n - 2
    journal_path = work / "journal.json"
    journal = json.loads(journal_path.read_text())
    real = dict(journal["pipeline_info"])
    journal["pipeline_info"] = {**real, "pipeline_version": "3.7.1"}  # what the interrupted run parsed with
    journal_path.write_text(json.dumps(journal))
    with pytest.raises(DDPUsageError, match=r"^\[D170\] --resume: the spaCy pipeline differs .*3\.7\.1.*"
                                            r"without --resume to start over"):
        RE.profile_ray(MINI, targets, cols=COLS, n_process=2, batch_chars=1500, resume=True)
    assert not any(p.exists() for p in paths)
    assert sorted(int(p.stem) for p in (work / P.MARKERS).glob("*.json")) == list(range(2, n))
    assert not (work / "segments" / P.part_name(0)).exists() and not (work / "segments" / P.part_name(1)).exists()
    journal = json.loads(journal_path.read_text())
    journal["pipeline_info"] = real
    journal_path.write_text(json.dumps(journal))
    rep = RE.profile_ray(MINI, targets, cols=COLS, n_process=2, batch_chars=1500, resume=True)
    assert rep.resumed_batches == n - 2
    _same(paths, reference)


@pytest.mark.spacy_model
@pytest.mark.slow
def test_ray_resume_refuses_a_jsonl_input_replaced_by_one_of_the_same_size_and_time(ray_local, tmp_path,
                                                                                      monkeypatch) -> None:
    """The Ray driver checked path, size and modification time, then profiled the rest from the chunks it had
    staged: the old rows under the new file's name, exit 0."""
    from ddpcore.engines import parts as P
    from ddpcore.engines import ray_engine as RE

    src = tmp_path / "in.jsonl"
    shutil.copy(MINI, src)
    targets, paths, work = _ray_crashed_run(tmp_path, src, monkeypatch)
    P.drop_batch(str(work), 0)
    word = next(w for w in (b" she ", b" he ", b" they ") if w in src.read_bytes())
    _replace_keeping_size_and_time(src, word, word.upper())
    with pytest.raises(DDPUsageError, match=r"^\[D170\] --resume: the input file differs .*content changed"):
        RE.profile_ray(src, targets, cols=COLS, n_process=2, batch_chars=1500, resume=True)
    assert work.exists() and not any(p.exists() for p in paths)


@pytest.mark.spacy_model
@pytest.mark.slow
def test_a_ray_actor_with_another_pipeline_refuses_before_it_writes(ray_local, tmp_path) -> None:
    """An actor on a node whose spaCy or pipeline differs from the one the run's batches were parsed with
    parsed and wrote its batch like any other: D763 now, and nothing of its batch in the dataset."""
    from ddpcore.engines import ray_engine as RE
    from ddpcore.engines.base import RunOptions
    from ddpcore.engines.ray_plan import plan_batches
    from ddpcore.io.sources import stage_input

    src = tmp_path / "in.parquet"
    pl.read_ndjson(MINI).write_parquet(src, row_group_size=4)
    plan = plan_batches(stage_input(src, COLS, None), 1500)
    ds = tmp_path / "ds"
    other = {"spacy": "3.0.0", "pipeline_name": "en_core_web_md", "pipeline_version": "3.0.0",
             "components": ["tok2vec"], "pos_source": "pipeline"}
    for resumed, code in ((False, "D763"), (True, "D170")):
        make = RE._worker_factory(ray_local, RunOptions(cols=COLS), "in.parquet", str(ds),
                                  lambda: {"info": other, "journal": "journal.json", "resumed": resumed})
        with pytest.raises(DDPError) as exc:
            RE.run_pool(ray_local, [plan.spec(0)], make, 1, lambda r: None)
        assert exc.value.code == code and "3.0.0" in str(exc.value)
        assert not ds.exists() or not any(p.is_file() for p in ds.rglob("*"))


def test_a_batch_parsed_by_another_pipeline_in_a_fresh_ray_run_is_dropped(tmp_path, monkeypatch) -> None:
    """Batches handed out before the first one finished carry no expected pipeline: the driver compares each
    result with the first one's, drops a batch of another pipeline (so --resume profiles it again) and stops
    with D763. No Ray needed: the pool is replaced by one that reports two results."""
    from ddpcore.engines import parts as P
    from ddpcore.engines import ray_engine as RE
    from ddpcore.engines.base import RunOptions
    from ddpcore.engines.ray_plan import plan_batches
    from ddpcore.io.sources import stage_input

    src = tmp_path / "in.parquet"
    pl.read_ndjson(MINI).write_parquet(src, row_group_size=4)
    plan = plan_batches(stage_input(src, COLS, None), 1500)
    ds = tmp_path / "ds"
    P.prepare(str(ds))
    info = {"spacy": "3.8.0", "pipeline_name": "en_core_web_md", "pipeline_version": "3.8.0",
            "components": ["tok2vec", "parser"], "pos_source": "pipeline"}
    other = {**info, "spacy": "3.7.5"}
    for k in (0, 1):
        for role in P.ROLES:
            P.fs.write_bytes_atomic(P.part_location(str(ds), role, k), b"x")
        P.fs.write_json_atomic(P.marker_location(str(ds), k), {"k": k})
    seen = {}

    def pool(ray, refs, make, n, on_result, account=None):
        seen["expect"] = make.expect
        assert make.expect() is None  # a fresh run: nothing expected before the first batch finishes
        on_result({"k": 0, "marker": {"words": 1}, "info": info, "node": "aaaa"})
        assert make.expect()["info"] == info and make.expect()["resumed"] is False
        on_result({"k": 1, "marker": {"words": 1}, "info": other, "node": "bbbbbbbbbbbbbbbb"})
        return RE.PoolAccount()

    monkeypatch.setattr(RE, "run_pool", pool)
    monkeypatch.setattr(RE, "_worker_factory", lambda ray, o, name, dataset, expect=None:
                        type("F", (), {"expect": staticmethod(expect)})())
    b = RE._Batches(plan, {}, 0, {"settings": {}}, 2)
    where = RE._Where(str(ds), False, ds)
    with pytest.raises(DDPError, match=r"^\[D763\] the Ray actor on node bbbbbbbbbbbb parses with .*3\.7\.5.*"
                                       r"were parsed with .*3\.8\.0"):
        RE._profile_todo(None, b, RunOptions(cols=COLS, progress="none"), where, "in.parquet", print)
    assert sorted(b.done) == [0]
    assert (ds / P.MARKERS / "000000.json").exists() and not (ds / P.MARKERS / "000001.json").exists()
    assert not (ds / "segments" / P.part_name(1)).exists()
    assert json.loads((ds / P.JOURNAL).read_text())["pipeline_info"] == info


# ------------------------------------------------------- a pipeline folder retrained in place


def test_resume_refuses_a_pipeline_folder_changed_in_place(tmp_path, reference) -> None:
    """``--pipeline PATH``: the journal compared the pipeline's meta.json name, version and components, which a
    pipeline retrained in place keeps (``spacy train`` writes version 0.0.0 every time): the resumed run mixed
    the old weights' parses with the new ones', exit 0. Now D170 naming the pipeline folder."""
    import importlib.util

    from ddpcore.anchors.spacy_extract import resolve_pipeline

    package = Path(importlib.util.find_spec(resolve_pipeline(None)).origin).parent
    [installed] = [d for d in package.iterdir() if d.is_dir() and (d / "meta.json").exists()]
    model = tmp_path / "model"
    shutil.copytree(installed, model)
    out = tmp_path / "out"
    out.mkdir()
    targets, paths = _targets(out, [MINI])
    with pytest.raises(RuntimeError, match="simulated crash"):
        profile_to_files(MINI, targets, **_kw(), pipeline=str(model), parse_wrapper=_crash_after(2))
    weights = model / "ner" / "model"
    original = weights.read_bytes()
    st = weights.stat()
    changed = bytearray(original)
    changed[len(changed) // 2] ^= 0x01  # one weight changed, same size and time: "retrained"
    weights.write_bytes(bytes(changed))
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(DDPUsageError, match=r"^\[D170\] --resume: the pipeline folder \(--pipeline PATH\) differs "
                                            r".*its files changed since the interrupted run"):
        profile_to_files(MINI, targets, **_kw(), pipeline=str(model), resume=True)
    assert len(list((work_dir_for(paths[0]) / "parts").glob("*.done"))) == 2
    weights.write_bytes(original)
    rep = profile_to_files(MINI, targets, **_kw(), pipeline=str(model), resume=True)
    assert rep.resumed_batches == 2
    _same(paths, reference)
