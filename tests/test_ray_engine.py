"""The Ray Data engine (issue 8, section 6): its output equals the local engine's.

The oracle is :func:`ddpcore.profile_anchors` with the local engine on the same input (itself
checked against hand-derived values in test_profile.py). The Ray tests start a local Ray with
two CPUs once for the module and skip, saying why, only where Ray cannot be imported; the
tests of the error paths and of the batching helpers need no Ray.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import numpy as np
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from ddpcore.anchors.rules import get_rules
from ddpcore.cli.main import main
from ddpcore.engines import ray_engine as RE
from ddpcore.engines.local import BATCH_CHARS, Settings, order_segments
from ddpcore.api import ProfileOptions, profile_anchors
from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.io.outputs import check_outputs
from ddpcore.io.segments import SegmentColumns, read_segments

DATA = Path(__file__).parent / "data"
MINI = DATA / "wmt25_mini.jsonl"
ROLES = ("segments", "anchors", "sentences")
COLS = SegmentColumns("document_id", "segment_id", "source", "domain")
#: signature keys only a file run has (the in-memory reference has none of them)
FILE_RUN_KEYS = {"input", "batches", "n_process", "engine", "actors"}


def _same_signature(sig: dict, ref: dict) -> bool:
    """Same settings and versions; ``cache`` (parse-cache statistics) differs from run to run."""
    return ({k: v for k, v in sig.items() if k not in FILE_RUN_KEYS | {"cache"}}
            == {k: v for k, v in ref.items() if k != "cache"})


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray", reason="Ray is not installed here (pip install 'ddpcore[ray]'): the Ray "
                                            "engine cannot run")
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'ddpcore[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def interleaved(tmp_path_factory) -> Path:
    """The mini set with its rows shuffled: documents interleave in the input."""
    df = pl.read_ndjson(MINI).sample(fraction=1.0, shuffle=True, seed=7)
    path = tmp_path_factory.mktemp("inter") / "inter.jsonl"
    df.write_ndjson(path)
    return path


def _targets(tmp: Path, inputs: list[Path]) -> tuple[dict, list[Path]]:
    paths = [tmp / f"{role}.parquet" for role in ROLES]
    t = check_outputs([("-o", paths[0]), ("--anchors", paths[1]), ("--sentences", paths[2])], inputs)
    return dict(zip(ROLES, t)), paths


def _check_files(paths: list[Path], ref) -> dict:
    for path, role in zip(paths, ROLES):
        assert_frame_equal(getattr(ref, role), pl.read_parquet(path))
    sig = json.loads(pq.read_schema(paths[0]).metadata[b"ddpcore.signature"])
    assert sig["engine"] == "ray"
    assert _same_signature(sig, ref.signature)
    return sig


# --------------------------------------------------------------------------- with Ray


def _run_files(source: Path, rules: str, tmp_path: Path) -> list[Path]:
    targets, paths = _targets(tmp_path, [source])
    # small batches: several batches over two actors, finishing in any order
    rep = RE.profile_ray(source, targets, cols=COLS, settings=Settings(rules=get_rules(rules)), n_process=2,
                         batch_chars=1500, source_name=str(source))
    sig = json.loads(pq.read_schema(paths[0]).metadata[b"ddpcore.signature"])
    assert sig["batches"] == rep.n_batches > 2 and sig["actors"] == 2
    assert rep.n_segments == 20 and rep.n_anchors == pl.read_parquet(paths[1]).height
    assert not list(tmp_path.glob(".*ddp-work"))  # the dataset of parts is gone once the files are assembled
    return paths


def _run_cli(source: Path, rules: str, tmp_path: Path, capsys) -> list[Path]:
    _, paths = _targets(tmp_path, [source])
    code = main(["profile", str(source), "--engine", "ray", "-j", "2", "--rules", rules, "-q",
                 "--batch-chars", "2000", "-o", str(paths[0]), "--anchors", str(paths[1]),
                 "--sentences", str(paths[2])])
    assert code == 0
    assert "20 segments" in capsys.readouterr().out
    return paths


# each input with each rule set, through each way in (profile_ray, the command line, profile_anchors)
@pytest.mark.spacy_model
@pytest.mark.slow
@pytest.mark.parametrize(("which", "rules", "entry"), [
    ("mini", "refined", "files"), ("interleaved", "paper", "files"),
    ("interleaved", "refined", "cli"), ("mini", "paper", "api"),
])
def test_ray_engine_output_equals_the_local_engine(ray_local, tmp_path, nlp, interleaved, capsys, which, rules,
                                                   entry):
    source = MINI if which == "mini" else interleaved
    ref = profile_anchors(source, nlp=nlp, rules=rules)
    if entry == "api":
        got = profile_anchors(source, n_process=2, rules=rules, options=ProfileOptions(engine="ray"))
        for role in ROLES:
            assert_frame_equal(getattr(ref, role), getattr(got, role))
        assert got.signature["engine"] == "ray" and _same_signature(got.signature, ref.signature)
        return
    paths = _run_files(source, rules, tmp_path) if entry == "files" else _run_cli(source, rules, tmp_path, capsys)
    _check_files(paths, ref)


@pytest.mark.spacy_model
@pytest.mark.slow
def test_an_error_on_an_actor_reaches_the_caller_with_its_code(ray_local, tmp_path):
    src = tmp_path / "long.jsonl"
    pl.DataFrame({"document_id": ["d", "e"], "segment_id": [0, 0],
                  "source": ["A short line.", "x" * 1_000_001]}).write_ndjson(src)
    targets, _ = _targets(tmp_path, [src])
    with pytest.raises(DDPDataError, match=r"row 2, column 'source'.*exceeds the parser limit") as exc:
        RE.profile_ray(src, targets, cols=COLS, settings=Settings(), n_process=2, batch_chars=100)
    assert exc.value.code == "D115"
    assert not (tmp_path / "segments.parquet").exists()


# ------------------------------------------------------------------------ without Ray


def test_a_missing_ray_is_a_one_line_usage_error(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(DDPUsageError, match=r"pip install '\.\[ray\]'") as exc:
        RE.import_ray()
    assert exc.value.code == "D190"
    assert main(["profile", str(MINI), "--engine", "ray", "-o", str(tmp_path / "o.parquet")]) == 2
    err = capsys.readouterr().err.strip()
    assert "D190" in err and "pip install '.[ray]'" in err and len(err.splitlines()) == 1
    with pytest.raises(DDPUsageError, match="D190"):
        profile_anchors(MINI, options=ProfileOptions(engine="ray"))


@pytest.mark.parametrize("flags", [["--shard", "0/2"]])
def test_local_only_options_are_refused_with_ray(tmp_path, capsys, flags):
    assert main(["profile", str(MINI), "--engine", "ray", "-o", str(tmp_path / "o.parquet"), *flags]) == 2
    err = capsys.readouterr().err
    assert "D193" in err and flags[0] in err


def test_an_unknown_engine_is_refused():
    with pytest.raises(DDPUsageError, match="D192"):
        profile_anchors(MINI, options=ProfileOptions(engine="spark"))


def test_importing_ddpcore_and_the_cli_does_not_import_ray():
    code = ("import sys, ddpcore, ddpcore.api, ddpcore.cli.main, ddpcore.cli.profile, ddpcore.engines.ray_engine; "
            "sys.exit(1 if 'ray' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_auto_batch_size_aims_at_several_batches_per_actor():
    assert RE.auto_batch_chars(1_000_000, 2) == 125_000
    assert RE.auto_batch_chars(10_000, 2) == RE.MIN_AUTO_BATCH_CHARS
    assert RE.auto_batch_chars(10**9, 2) == BATCH_CHARS


def test_actors_default_to_the_cluster_cpus_and_never_exceed_them():
    class FakeRay:
        @staticmethod
        def cluster_resources() -> dict:
            return {"CPU": 6.0}

    assert RE.resolve_actors("auto", FakeRay) == 6
    assert RE.resolve_actors(4, FakeRay) == 4
    assert RE.resolve_actors(16, FakeRay) == 6
    with pytest.raises(DDPUsageError, match="D207"):
        RE.resolve_actors(0, FakeRay)


@pytest.mark.parametrize("chars", [1, 1500, 10**6])
def test_each_batch_spec_reads_exactly_the_local_engines_batch(interleaved, tmp_path, chars):
    """What an actor reads for batch k (its chunks + row numbers, no Ray) is the local engine's batch k
    (:func:`batches_from_frame` over the whole ordered table): same rows, columns, order and DOC numbers."""
    from ddpcore.engines.local import batches_from_frame
    from ddpcore.engines.ray_plan import plan_batches
    from ddpcore.io.sources import stage_input

    src = tmp_path / "in.parquet"
    pl.read_ndjson(interleaved).write_parquet(src, row_group_size=3)  # 7 row groups: batches span several
    plan = plan_batches(stage_input(src, COLS, None), chars)
    local = list(batches_from_frame(order_segments(read_segments(src, COLS), COLS), COLS, chars))
    assert plan.n_batches == len(local) and plan.segments_per_batch().sum() == 20
    for k, want in enumerate(local):
        spec = plan.spec(k)
        assert all(c.row_group is not None for c in spec.chunks) and len(spec.chunks) <= 7
        assert_frame_equal(spec.read().frame, want.frame)


def test_the_saved_plan_is_the_plan_and_a_damaged_one_is_refused(interleaved, tmp_path):
    """``save_plan``/``load_plan`` (what ``--resume`` reads instead of the input): the same arrays, chunks,
    schema and batch specs as the plan planned from the input; a flipped byte, a missing file, a chunk that is
    gone or a journal entry of another plan give None and the reason."""
    from ddpcore.engines.ray_plan import PLAN_FILE, load_plan, plan_batches, save_plan
    from ddpcore.io.sources import stage_input

    ds = str(tmp_path / "ds")
    os.makedirs(ds)
    src = tmp_path / "in.parquet"
    pl.read_ndjson(interleaved).write_parquet(src, row_group_size=7)
    plan = plan_batches(stage_input(src, COLS, None), 1500)
    entry = save_plan(plan, ds)
    got, why = load_plan(ds, entry, COLS)
    assert why == "" and got is not None and got.n_batches == plan.n_batches > 2
    for a in ("row", "doc", "segkey", "batch", "units", "chars", "bounds"):
        assert np.array_equal(getattr(got, a), getattr(plan, a)) and getattr(got, a).dtype == getattr(plan, a).dtype
    assert got.chunks == plan.chunks and got.schema == plan.schema and got.name == plan.name
    for k in range(plan.n_batches):
        assert_frame_equal(got.spec(k).read().frame, plan.spec(k).read().frame)
    assert load_plan(ds, {**entry, "n_batches": entry["n_batches"] + 1}, COLS)[1].endswith("does not match its journal")
    uri = (tmp_path / "ds-uri").as_uri()  # the dataset at a pyarrow.fs URI: written through its output stream
    os.makedirs(tmp_path / "ds-uri")
    at_uri, why = load_plan(uri, save_plan(plan, uri), COLS)
    assert why == "" and np.array_equal(at_uri.row, plan.row) and np.array_equal(at_uri.bounds, plan.bounds)
    assert (tmp_path / "ds-uri" / PLAN_FILE).read_bytes() == (tmp_path / "ds" / PLAN_FILE).read_bytes()
    path = tmp_path / "ds" / PLAN_FILE
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert load_plan(ds, entry, COLS)[0] is None and "does not match the checksum" in load_plan(ds, entry, COLS)[1]
    entry = save_plan(plan, ds)
    src.rename(tmp_path / "moved.parquet")
    assert load_plan(ds, entry, COLS) == (None, f"the input chunk {src} the workers read is gone")
    path.unlink()
    assert load_plan(ds, entry, COLS)[1].endswith("is missing")
    assert load_plan(ds, None, COLS) == (None, "the interrupted run's journal records no saved plan")


def test_a_part_that_does_not_match_its_checksum_is_refused(tmp_path):
    from ddpcore.engines import parts as P

    ds = str(tmp_path / "ds")
    P.prepare(ds)
    seg = pl.DataFrame({"__row": pl.Series([0, 1], dtype=pl.UInt32), "n_tokens": [3, 4]})
    m = P.write_batch(ds, 0, seg, pl.DataFrame({"a": [1]}), pl.DataFrame({"b": [2]}))
    assert P.finished_batches(ds, 1, print) == {0: m}
    assert_frame_equal(P.read_part(ds, "anchors", 0, m["files"]["anchors"]), pl.DataFrame({"a": [1]}))
    part = Path(P.part_location(ds, "anchors", 0))
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte, same size: only the checksum sees it
    part.write_bytes(bytes(data))
    with pytest.raises(DDPDataError, match=r"\[D864\].*does not match the checksum") as exc:
        P.read_part(ds, "anchors", 0, m["files"]["anchors"])
    assert "--resume" in str(exc.value)
    assert P.finished_batches(ds, 1, print) == {}  # its marker is gone: --resume profiles the batch again
    part.write_bytes(b"")
    said: list[str] = []
    P.write_batch(ds, 0, seg, pl.DataFrame({"a": [1]}), pl.DataFrame({"b": [2]}))
    Path(P.part_location(ds, "sentences", 0)).write_bytes(b"short")  # a truncated part
    assert P.finished_batches(ds, 1, said.append) == {} and "damaged" in said[0]


def test_a_dataset_output_is_checked_before_any_work(tmp_path, capsys):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    for out, why in ((tmp_path / "no" / "such" / "ds", "does not exist"), (tmp_path / "full", "not a ddpcore Ray")):
        assert main(["profile", str(MINI), "--engine", "ray", "-o", f"{out}/"]) == 2
        err = capsys.readouterr().err
        assert "[D867]" in err and why in err
    assert main(["profile", str(MINI), "-o", f"{tmp_path / 'ds'}/"]) == 2
    assert "[D868]" in capsys.readouterr().err
    assert main(["profile", str(MINI), "--engine", "ray", "-o", f"{tmp_path / 'ds'}/", "--anchors",
                 str(tmp_path / "a.parquet")]) == 2
    assert "[D868] --anchors" in capsys.readouterr().err
    assert (tmp_path / "full" / "notes.txt").read_text() == "mine" and not (tmp_path / "ds").exists()


def test_uri_inputs_and_datasets_go_through_pyarrow_fs(tmp_path):
    from ddpcore.errors import DDPDataError as DataError
    from ddpcore.io import fs
    from ddpcore.io.sources import stage_input

    src = tmp_path / "in.parquet"
    pl.read_ndjson(MINI).write_parquet(src, row_group_size=5)
    uri = src.as_uri()  # file:///...: the same code path as s3:// or gs://
    staged = stage_input(uri, COLS, None, name=uri)
    assert [c.path for c in staged.chunks] == [uri] * 4
    assert_frame_equal(staged.read_rows(np.arange(20)).drop("__row"),
                       read_segments(src, COLS).drop("__row"), check_dtypes=False)
    ds = fs.join((tmp_path / "ds").as_uri(), "segments", "x.json")
    fs.make_dirs(fs.join((tmp_path / "ds").as_uri(), "segments"))
    fs.write_json_atomic(ds, {"a": 1})
    assert fs.read_json(ds) == {"a": 1} and fs.list_files(fs.join((tmp_path / "ds").as_uri(), "segments")) == ["x.json"]
    with pytest.raises(DataError, match=r"\[D860\]"):
        fs.resolve("nosuchscheme://bucket/x")
    with pytest.raises(DataError, match=r"\[D862\].*not found"):
        fs.open_parquet((tmp_path / "gone.parquet").as_uri())
    with pytest.raises(DDPUsageError, match=r"\[D861\]"):
        stage_input((tmp_path / "in.jsonl").as_uri(), COLS, None)


def test_an_unreachable_cluster_is_a_usage_error_not_a_dead_process(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed here (pip install 'ddpcore[ray]')")
    with pytest.raises(ConnectionError, match="nothing answers"):
        RE._check_reachable("127.0.0.1:1")
    # a fresh process: Ray would end it (exit 15) if it tried to join a cluster that is not there
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", str(MINI), "--engine", "ray",
                        "--address", "127.0.0.1:1", "-o", str(tmp_path / "o.parquet")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "[D191]" in r.stderr and "127.0.0.1:1" in r.stderr


# ------------------------------------------------- interruption, -q and clean-up (issue 19)


def _ray_cmd(tmp_path: Path, *extra: str) -> list[str]:
    # --no-cache: a run served by a warm parse cache ends before the signal can reach it
    return [sys.executable, "-m", "ddpcore.cli.main", "profile", str(MINI), "--engine", "ray", "-j", "2",
            "--no-cache", "-o", str(tmp_path / "o.parquet"), *extra]


def _wait_for_ray(proc: subprocess.Popen, tmp_path: Path, timeout: float = 240.0, parts: bool = False) -> str:
    """Wait until the run's work folder exists and its local Ray runs (a raylet carries the run's
    owner mark); return the owner token."""
    import time

    from ddpcore.engines import ray_reaper

    deadline = time.monotonic() + timeout
    token = ray_reaper.owner_token(proc.pid)  # the driver's: its local Ray carries it
    while time.monotonic() < deadline and proc.poll() is None:
        # parts: the run has planned (its journal written after the _parts folder and the plan): a kill before
        # that has nothing to resume (seen once under load, with the fixed 2 s wait alone)
        if len(ray_reaper.marked_pids(token)) >= 3 and (not parts or (
                list(tmp_path.glob(".o.parquet.ray.ddp-work/_parts"))
                and (tmp_path / ".o.parquet.ray.ddp-work" / "journal.json").exists())):
            time.sleep(2.0)
            return token
        time.sleep(0.3)
    pytest.fail(f"the Ray run did not start within {timeout} s (exit {proc.poll()})")


def _no_ray_left(token: str, tmp_path: Path, within: float = 20.0, parts: bool = True) -> None:
    import time

    from ddpcore.engines import ray_reaper

    deadline = time.monotonic() + within
    while time.monotonic() < deadline and ray_reaper.marked_pids(token):
        time.sleep(0.5)
    left = ray_reaper.marked_pids(token)
    for pid in left:  # do not leak them into the rest of the session
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
    assert not left, f"Ray processes of the run still alive {within} s after it ended: {left}"
    if parts:  # the dataset of finished parts stays for --resume
        assert (tmp_path / ".o.parquet.ray.ddp-work" / "journal.json").exists()


@pytest.mark.spacy_model
@pytest.mark.slow
def test_a_quiet_ray_run_prints_nothing_on_stderr(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'ddpcore[ray]')")
    r = subprocess.run(_ray_cmd(tmp_path, "-q"), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # before: Ray's C++ core printed "[... E ...] core_worker.cc: Actor ... has constructor arguments ..."
    assert r.stderr == ""
    assert "20 segments" in r.stdout and (tmp_path / "o.parquet").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.parquet"]


@pytest.mark.spacy_model
@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code", "what"), [(15, 143, "SIGTERM"), (2, 130, r"interrupted \(SIGINT\)")])
def test_a_signal_shuts_ray_down_and_exits_with_one_line(tmp_path, signum, code, what):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'ddpcore[ray]')")
    proc = subprocess.Popen(_ray_cmd(tmp_path, "-q"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        token = _wait_for_ray(proc, tmp_path)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    # before: exit 15 and Ray's "*** SIGTERM received ... PC: @ ..." stack dumps
    assert proc.returncode == code, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and re.match(rf"ddp profile: {what}: stopped the Ray run after \d+ finished batch\(es\); "
                                        r"no output was written. To continue, rerun with --resume", lines[0])
    assert not (tmp_path / "o.parquet").exists()
    _no_ray_left(token, tmp_path, within=20.0, parts=False)


@pytest.mark.spacy_model
@pytest.mark.slow
def test_a_killed_driver_leaves_no_ray_process_and_its_parts_for_resume(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'ddpcore[ray]')")
    proc = subprocess.Popen(_ray_cmd(tmp_path, "-q"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        token = _wait_for_ray(proc, tmp_path, parts=True)
        proc.kill()  # SIGKILL: no handler of the driver runs
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    # before: the raylet's DashboardAgent and RuntimeEnvAgent stayed alive
    _no_ray_left(token, tmp_path, within=20.0)


def test_a_rerun_removes_the_work_folders_of_dead_runs_only(tmp_path):
    from ddpcore.engines import ray_reaper

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / ".ddp-ray-work-1-stale"
    stale.mkdir()
    (stale / "owner").write_text(f"{dead.pid}:12345\n")  # the pid has exited
    (stale / "parts").mkdir()
    live = tmp_path / ".ddp-ray-work-2-live"
    live.mkdir()
    (live / "owner").write_text(ray_reaper.owner_token() + "\n")  # this process: alive
    reused = tmp_path / ".ddp-ray-work-3-reused"
    reused.mkdir()  # this pid, but another start time: the pid was reused, its owner is gone
    (reused / "owner").write_text(f"{os.getpid()}:1\n")
    creating = tmp_path / ".ddp-ray-work-4-new"
    creating.mkdir()  # no owner file yet: a run creating it
    assert RE.remove_stale_work(tmp_path) == [stale.name, reused.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name, creating.name]


@pytest.mark.spacy_model
def test_the_parse_cache_works_at_a_pyarrow_fs_uri(tmp_path):
    """``--cache file:///...`` (the code path of s3:// and gs://): the second run parses nothing, and
    the shards and markers are the ones a local cache folder holds."""
    from ddpcore.engines.run import profile_to_files
    from ddpcore.pipeline.cache import cache_wrapper, shard_files

    uri = (tmp_path / "cache").as_uri()
    sigs = []
    for r in range(2):
        out = tmp_path / f"o{r}.parquet"
        rep = profile_to_files(MINI, {"segments": check_outputs([("-o", out)], [MINI])[0]}, cols=COLS,
                               parse_wrapper=cache_wrapper(uri))
        sigs.append(rep.signature["cache"])
    assert sigs[0]["misses"] > 0 and sigs[1] == {"hits": sigs[0]["hits"] + sigs[0]["misses"], "misses": 0,
                                                 "dir": uri}
    assert_frame_equal(pl.read_parquet(tmp_path / "o0.parquet"), pl.read_parquet(tmp_path / "o1.parquet"))
    folders = [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]
    assert len(folders) == 1 and shard_files(folders[0]) and (tmp_path / "cache" / "ddpcore-cache.json").exists()
    assert not [p for p in folders[0].iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("seed", range(6))
def test_the_lean_duplicate_id_check_names_the_first_two_rows_a_loop_finds(seed):
    """check_unique_ids (hash + numpy sort, issue 24's driver memory) against a dict loop over the rows."""
    from ddpcore.io.segments import ROW, check_unique_ids

    rng = np.random.default_rng(seed)
    n = 300
    docs = [f"d{v}" for v in rng.integers(0, 40, n)]
    segs = rng.integers(0, 12 if seed % 2 else 400, n).tolist()
    df = pl.DataFrame({ROW: np.arange(n, dtype=np.uint32), "document_id": docs, "segment_id": segs})
    seen: dict = {}
    dup_rows = []
    for i, key in enumerate(zip(docs, segs)):  # the oracle: every row whose id appeared before, and its twin
        if key in seen:
            dup_rows += [seen[key], i]
        seen.setdefault(key, i)
    cols = SegmentColumns("document_id", "segment_id", "source", None)
    if not dup_rows:
        check_unique_ids(df, cols, "t")
        return
    first = sorted({r for r in dup_rows if (docs[r], segs[r]) in {(docs[j], segs[j]) for j in dup_rows}})
    key = (docs[first[0]], segs[first[0]])
    twins = sorted(r for r in range(n) if (docs[r], segs[r]) == key)
    second = sorted(set(first))[1]
    with pytest.raises(DDPDataError, match=rf"rows {first[0] + 1} and {second + 1}, .*D113|\[D113\] t, rows "
                                           rf"{first[0] + 1} and {second + 1},") as exc:
        check_unique_ids(df, cols, "t")
    assert exc.value.code == "D113" and f"document {key[0]!r}" in str(exc.value) and twins[0] == first[0]


@pytest.mark.parametrize("seed", range(4))
def test_first_appearance_numbers_values_as_a_loop_does(seed, monkeypatch):
    """ray_plan.first_appearance against a dict loop, also on the path taken after a hash collision."""
    from ddpcore.engines import ray_plan

    rng = np.random.default_rng(seed)
    values = [f"doc{v}" for v in rng.integers(0, 50, 400)]
    seen: dict = {}
    want = [seen.setdefault(v, len(seen)) for v in values]
    assert ray_plan.first_appearance(pl.Series(values)).tolist() == want
    monkeypatch.setattr(pl.Series, "n_unique", lambda self: -1)  # as if two ids shared a hash
    assert ray_plan.first_appearance(pl.Series(values)).tolist() == want


@pytest.mark.spacy_model
def test_bad_input_is_refused_on_the_driver_with_the_local_engines_code(tmp_path):
    """Validation happens while the driver reads the id index (before Ray starts): same code, file, row
    and column as the local engine; no dataset folder is left."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'ddpcore[ray]')")
    from ddpcore.engines.run import profile_to_files

    src = tmp_path / "dup.jsonl"
    pl.DataFrame({"document_id": ["d", "e", "d"], "segment_id": [0, 0, 0],
                  "source": ["One.", "Two.", "Three."]}).write_ndjson(src)
    errors = []
    for engine in ("local", "ray"):
        out = tmp_path / f"{engine}.parquet"
        target = {"segments": check_outputs([("-o", out)], [src])[0]}
        run = RE.profile_ray if engine == "ray" else profile_to_files
        with pytest.raises(DDPDataError) as exc:
            run(src, target, cols=COLS, n_process=1)
        errors.append(str(exc.value))
    assert errors[0] == errors[1] and "[D113]" in errors[0] and "rows 1 and 3" in errors[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dup.jsonl"]


def test_the_ray_engine_is_split_into_steps_and_spells_its_options_once():
    """Issue 20: no function of the Ray engine's modules over 80 lines; profile_ray takes RunOptions
    (or its fields) instead of repeating profile_frame_ray's keyword list."""
    import ast
    import inspect

    src = Path(RE.__file__).parent
    for name in ("ray_engine.py", "parts.py", "ray_plan.py"):
        tree = ast.parse((src / name).read_text(encoding="utf-8"))
        lengths = {n.name: n.end_lineno - n.lineno + 1 for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert max(lengths.values()) <= 80, (name, sorted(lengths.items(), key=lambda kv: -kv[1])[:3])
    params = list(inspect.signature(RE.profile_ray).parameters)
    assert params == ["source", "targets", "options", "fields"]
    shared = set(inspect.signature(RE.profile_frame_ray).parameters) & set(params)
    assert shared == set()
