"""The Ray engine on a real multi-node Ray (issue 24): ``ray.cluster_utils.Cluster`` starts a head
and two worker nodes as separate raylets on this machine, each with its own CPU; the temp folder
stands for the shared storage every node sees.

The oracle is the local engine (:func:`ddpcore.profile_anchors`) on the same input. What is
checked: equality on two nodes (the one fast test); a worker node removed mid-run
(``cluster.remove_node``) -> the same output, the lost batches run again; the driver SIGKILLed
after half the batches -> ``--resume`` finishes with identical output and parses only the
batches that were missing (counted from the parse cache's hits and misses); two runs sharing
one cache folder. Every cluster is shut down in a ``finally``.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from ddpcore.api import profile_anchors, summarize
from ddpcore.engines import parts as P
from ddpcore.engines import ray_engine as RE
from ddpcore.engines.local import Settings
from ddpcore.engines.ray_plan import plan_batches
from ddpcore.io.outputs import check_outputs
from ddpcore.io.segments import SegmentColumns
from ddpcore.io.sources import stage_input
from ddpcore.pipeline.cache import cache_wrapper

DATA = Path(__file__).parent / "data"
MINI = DATA / "wmt25_mini.jsonl"
COLS = SegmentColumns("document_id", "segment_id", "source", "domain")
ROLES = ("segments", "anchors", "sentences")
#: small batches: about 12 over the 18 documents of the input, so that a run has a middle
BATCH = 1500
#: GCS settings of the test cluster: a removed node is noticed in about 3 s, not 30
FAST_FAILURE = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 1000,
                "health_check_failure_threshold": 3}

pytestmark = pytest.mark.spacy_model


@pytest.fixture(scope="module")
def cluster():
    ray = pytest.importorskip("ray", reason="Ray is not installed here (pip install 'ddpcore[ray]')")
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False,
                                                      "_system_config": FAST_FAILURE})
    try:
        workers = [c.add_node(num_cpus=1) for _ in range(2)]
        c.wait_for_nodes()
        ray.init(address=c.address, log_to_driver=False)
        yield c, workers
    finally:
        ray.shutdown()
        c.shutdown()


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> Path:
    """The 'shared storage': the mini set three times over with its rows shuffled (documents interleave), as Parquet
    with row groups of 4 rows (actors read row groups in place) and as JSONL (staged by the driver)."""
    root = tmp_path_factory.mktemp("shared")
    mini = pl.read_ndjson(MINI)
    copies = [mini.with_columns(pl.col(COLS.document) + f"-{i}") for i in range(3)]  # 18 documents, 60 segments
    df = pl.concat(copies).sample(fraction=1.0, shuffle=True, seed=11)
    df.write_parquet(root / "in.parquet", row_group_size=4)
    df.write_ndjson(root / "in.jsonl")
    return root


@pytest.fixture(scope="module")
def reference(shared):
    return profile_anchors(shared / "in.jsonl", document_col=COLS.document, segment_col=COLS.segment,
                           text_col=COLS.text, domain_col=COLS.domain)


def _targets(out: Path, source: Path) -> dict:
    paths = [out / f"{r}.parquet" for r in ROLES]
    t = check_outputs([("-o", paths[0]), ("--anchors", paths[1]), ("--sentences", paths[2])], [source])
    return dict(zip(ROLES, t))


def _equal(out: Path, ref) -> dict:
    for role in ROLES:
        assert_frame_equal(getattr(ref, role), pl.read_parquet(out / f"{role}.parquet"))
    sig = json.loads(pq.read_schema(out / "segments.parquet").metadata[b"ddpcore.signature"])
    drop = {"input", "batches", "n_process", "engine", "actors", "cache"}
    assert {k: v for k, v in sig.items() if k not in drop} == {k: v for k, v in ref.signature.items() if k not in drop}
    return sig


def test_two_nodes_read_their_rows_and_write_their_parts(cluster, shared, reference, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    cache = tmp_path / "cache"
    rep = RE.profile_ray(shared / "in.parquet", _targets(out, shared / "in.parquet"), cols=COLS, n_process=2,
                         batch_chars=BATCH, source_name="in.parquet", parse_wrapper=cache_wrapper(cache))
    sig = _equal(out, reference)
    assert sig["engine"] == "ray" and sig["actors"] == 2 and sig["batches"] == rep.n_batches > 4
    assert sig["cache"]["misses"] > 0 and sig["cache"]["dir"] == str(cache)
    assert "on 2 node(s)" in rep.notes[-1] and "0 run again" in rep.notes[-1]
    # the DDP summary, built range by range on the driver, is the one of the local engine's whole segment table
    want = summarize(reference.segments, by=COLS.domain, document_col=COLS.document)
    assert rep.summary_frame is None and rep.summary is not None
    assert_frame_equal(rep.summary, want)
    assert sorted(p.name for p in out.iterdir()) == ["anchors.parquet", "segments.parquet", "sentences.parquet"]
    # the same run as a dataset (-o DIR/) from the JSONL input (staged on the shared folder by the driver),
    # its parse served by the cache the first run filled
    ds = RE.dataset_target(str(tmp_path / "ds") + "/")
    rep2 = RE.profile_ray(shared / "in.jsonl", {"segments": ds}, cols=COLS, n_process=2, batch_chars=BATCH,
                          source_name="in.jsonl", parse_wrapper=cache_wrapper(cache))
    seg, anc, sen, sig2 = P.read_dataset(str(tmp_path / "ds"))
    for role, got in zip(ROLES, (seg, anc, sen)):
        assert_frame_equal(getattr(reference, role), got)
    # every unit looked up once per run (the copies' repeated lines: hits of the actor that parsed them first)
    assert sig2["cache"]["misses"] == 0 and sig2["cache"]["hits"] == sig["cache"]["hits"] + sig["cache"]["misses"]
    assert_frame_equal(rep2.summary, want)
    manifest = P.read_manifest(str(tmp_path / "ds"))
    assert manifest["run"]["nodes"] == 2 and manifest["rows"]["segments"] == 60 == rep2.n_segments
    assert sorted(p.name for p in (tmp_path / "ds").iterdir()) == ["_SUCCESS", "anchors", "segments", "sentences"]


def test_a_worker_that_cannot_read_the_cache_or_the_input_fails_with_one_coded_error(cluster, shared, tmp_path):
    """A cache path under a file: D870 naming it, raised on the worker and re-raised by the driver, nothing
    left behind. A batch whose input chunk the worker cannot open: D862 naming the file. Neither hangs."""
    from dataclasses import replace

    import ray

    from ddpcore.engines.base import RunOptions
    from ddpcore.errors import DDPDataError
    from ddpcore.io.sources import Chunk

    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    out = tmp_path / "out"
    out.mkdir()
    t0 = time.monotonic()
    with pytest.raises(DDPDataError, match=r"^\[D870\] .*/blocker/cache: cannot read the parse cache \(a file is "
                                           r"where its folder should be\)"):
        RE.profile_ray(shared / "in.parquet", _targets(out, shared / "in.parquet"), cols=COLS, n_process=2,
                       batch_chars=BATCH, source_name="in.parquet", parse_wrapper=cache_wrapper(blocker / "cache"))
    assert list(out.iterdir()) == []  # no output, no work folder: nothing had finished
    plan = plan_batches(stage_input(shared / "in.parquet", COLS, None), BATCH)
    spec = plan.spec(0)
    gone = tmp_path / "gone.parquet"  # a chunk of the plan that this "node" does not see
    spec = replace(spec, chunks=tuple(Chunk(str(gone), c.row_start, c.row_stop, c.row_group) for c in spec.chunks))
    make = RE._worker_factory(ray, RunOptions(cols=COLS), "in.parquet", str(tmp_path / "ds"))
    with pytest.raises(DDPDataError, match=rf"^\[D862\] {gone}: file not found; check the path"):
        RE.run_pool(ray, [spec], make, 1, lambda r: None)
    assert time.monotonic() - t0 < 300  # (a hang would be stopped by the test timeout long before)


@pytest.mark.slow
def test_a_cache_the_workers_cannot_write_is_read_and_said_in_the_signature(cluster, shared, reference, tmp_path):
    """The cache's pipeline folder made read-only (``chattr +i``: root cannot create files in it either) after a
    run filled it with half the input: the Ray run uses its parses, stores nothing, gives the local engine's
    output, and says why in the signature (``cache.not_written``), the note and the warnings."""
    from ddpcore.engines.run import profile_to_files

    cache = tmp_path / "cache"
    half = tmp_path / "half.jsonl"
    pl.read_ndjson(shared / "in.jsonl").head(30).write_ndjson(half)
    profile_to_files(half, {"segments": check_outputs([("-o", tmp_path / "half.parquet")], [half])[0]}, cols=COLS,
                     parse_wrapper=cache_wrapper(cache))
    (folder,) = [p for p in cache.iterdir() if p.is_dir()]
    before = sorted(p.name for p in folder.iterdir())
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not supported here (needs CAP_LINUX_IMMUTABLE and ext4/xfs/btrfs)")
    out = tmp_path / "out"
    out.mkdir()
    said: list[str] = []
    try:
        rep = RE.profile_ray(shared / "in.parquet", _targets(out, shared / "in.parquet"), cols=COLS, n_process=2,
                             batch_chars=BATCH, source_name="in.parquet", parse_wrapper=cache_wrapper(cache),
                             warn=said.append)
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)
    sig = _equal(out, reference)
    assert sig["cache"]["hits"] > 0 and sig["cache"]["misses"] > 0 and sig["cache"]["dir"] == str(cache)
    assert sig["cache"]["not_written"] == "Operation not permitted"
    assert sorted(p.name for p in folder.iterdir()) == before
    assert f"the parse cache could not be written for {rep.n_batches} batch(es) (Operation not permitted)" in \
        rep.notes[-1]
    assert said and all("cannot write the parse cache" in w and "are not stored" in w for w in said)


def _holding_wrapper(node_id: str, flag: str, hold_s: float = 240.0):
    """A ``parse_wrapper`` whose parse, on the node ``node_id`` only, touches ``flag`` and then waits
    (up to ``hold_s`` seconds, so a test that fails cannot hang): the actor there is known to hold a
    batch while the test removes its node. Elsewhere it parses as usual. (A closure: Ray pickles it
    by value, the workers need not import this module.)"""

    def wrap(parser):
        def parse(texts, progress=None):
            import pathlib
            import time as _time

            import ray

            if ray.get_runtime_context().get_node_id() == node_id:
                pathlib.Path(flag).touch()
                end = _time.monotonic() + hold_s
                while _time.monotonic() < end:
                    _time.sleep(0.1)
            return parser.parse(texts, progress)

        return parse

    return wrap


@pytest.mark.slow
def test_a_node_lost_mid_run_gives_the_same_output(cluster, shared, reference, tmp_path):
    """The second worker node is removed while its actor is inside a batch (its parse holds until the
    node is gone: no race with how fast the batches run), so at least that batch is lost and must run
    again on the other node; the output is the local engine's."""
    c, workers = cluster
    out = tmp_path / "out"
    out.mkdir()
    flag = tmp_path / "holding"
    removed: list[bool] = []

    def remove_while_holding() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not flag.exists():
            time.sleep(0.05)
        if flag.exists():
            c.remove_node(workers[1], allow_graceful=False)
            removed.append(True)

    t = threading.Thread(target=remove_while_holding, daemon=True)
    t.start()
    try:
        rep = RE.profile_ray(shared / "in.parquet", _targets(out, shared / "in.parquet"), cols=COLS, n_process=2,
                             batch_chars=BATCH, source_name="in.parquet",
                             parse_wrapper=_holding_wrapper(workers[1].node_id, str(flag)))
    finally:
        t.join(60)
        if removed:
            workers[1] = c.add_node(num_cpus=1)  # the next tests get their two nodes back
            c.wait_for_nodes()
    assert removed, "the second node's actor never started a batch"
    _equal(out, reference)
    note = rep.notes[-1]
    retried = int(note.split(", ")[-1].split(" run again")[0].split()[-1])
    assert retried >= 1, note  # the batch held on the lost node (and any queued behind it) ran again
    assert "on 1 node(s)" in note, note  # every finished batch finished on the node that stayed


def _profile_cmd(source: Path, out: Path, address: str, cache: Path | str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "ddpcore.cli.main", "profile", str(source), "--engine", "ray", "--address",
            address, "-j", "2", "--batch-chars", str(BATCH), "--cache", str(cache), "-q",
            "--document-col", COLS.document, "--segment-col", COLS.segment, "--text-col", COLS.text,
            "--domain-col", COLS.domain, "-o", str(out / "segments.parquet"), "--anchors",
            str(out / "anchors.parquet"), "--sentences", str(out / "sentences.parquet"), *extra]


@pytest.mark.slow
def test_a_killed_driver_is_resumed_and_parses_only_the_missing_batches(cluster, shared, reference, tmp_path):
    c, _ = cluster
    out, cache = tmp_path / "out", tmp_path / "cache"
    out.mkdir()
    source = shared / "in.parquet"
    plan = plan_batches(stage_input(source, COLS, None), BATCH)
    units = plan.units_per_batch()
    markers = out / ".segments.parquet.ray.ddp-work" / P.MARKERS
    proc = subprocess.Popen(_profile_cmd(source, out, c.address, cache), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if markers.exists() and len(list(markers.glob("*.json"))) >= plan.n_batches // 2:
                break
            time.sleep(0.05)
        assert proc.poll() is None, f"the run ended before half its batches were killed: {proc.stderr.read()}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    # the killed driver's actors live on the cluster and Ray ends them asynchronously: a batch they were parsing
    # may still write its marker (a CI run counted 5 finished batches, then resumed 6). Count once the markers
    # have stopped changing (2 s, at most 60 s)
    done, stable_since, deadline = None, time.monotonic(), time.monotonic() + 60
    while time.monotonic() < deadline:
        now = sorted(int(p.stem) for p in markers.glob("*.json"))
        if now != done:
            done, stable_since = now, time.monotonic()
        elif time.monotonic() - stable_since >= 2.0:
            break
        time.sleep(0.1)
    assert done is not None and 0 < len(done) < plan.n_batches
    assert not (out / "segments.parquet").exists()
    rep = RE.profile_ray(source, _targets(out, source), cols=COLS, n_process=2, batch_chars=BATCH, resume=True,
                         source_name=str(source), parse_wrapper=cache_wrapper(cache), address=c.address)
    assert rep.resumed_batches == len(done)
    sig = _equal(out, reference)
    missing = [k for k in range(plan.n_batches) if k not in done]
    # every unit of the missing batches went through the cache once (a hit where the killed run had parsed it
    # before it could write the batch); nothing of the finished batches was parsed or even looked up again
    assert sig["cache"]["hits"] + sig["cache"]["misses"] == int(units[missing].sum())
    assert sig["cache"]["hits"] <= int(units[missing].sum())
    assert not (out / ".segments.parquet.ray.ddp-work").exists()


@pytest.mark.slow
def test_a_resumed_run_takes_the_saved_plan_and_never_reads_the_input(cluster, shared, reference, tmp_path,
                                                                       monkeypatch):
    """A run stopped after half its batches (a SIGINT raised on the driver as its results come in): the resumed
    run checks only the input's identity (and its checksum), loads the saved plan, and its actors read the chunks
    the first run staged, so it completes with the local engine's output without staging the input again. (The
    input overwritten with zeros of the same size and modification time, which this test once used to show that
    the input is not read, is now refused: tests/test_hunt4_runs.py.)"""
    import shutil

    from ddpcore.engines.base import RunInterrupted

    source = tmp_path / "in.jsonl"
    shutil.copy(shared / "in.jsonl", source)
    out = tmp_path / "out"
    out.mkdir()
    work = out / ".segments.parquet.ray.ddp-work"
    real = RE.run_pool

    def stop_after_half(ray, specs, make, n, on_result, account=None):
        seen = []

        def counted(result):
            on_result(result)
            seen.append(result["k"])
            if len(seen) >= len(specs) // 2:
                raise RE.RayStop(signal.SIGINT)

        return real(ray, specs, make, n, counted, account)

    monkeypatch.setattr(RE, "run_pool", stop_after_half)
    with pytest.raises(RunInterrupted):
        RE.profile_ray(source, _targets(out, source), cols=COLS, n_process=2, batch_chars=BATCH,
                       source_name="in.jsonl")
    monkeypatch.setattr(RE, "run_pool", real)
    done = sorted(int(p.stem) for p in (work / P.MARKERS).glob("*.json"))
    journal = json.loads((work / P.JOURNAL).read_text())
    assert 0 < len(done) < journal["n_batches"] and (work / P.PLAN).exists() and list((work / P.STAGED).iterdir())
    def no_staging(*args, **kwargs):
        raise AssertionError("the resumed run staged the input again")

    monkeypatch.setattr(RE, "_stage", no_staging)
    rep = RE.profile_ray(source, _targets(out, source), cols=COLS, n_process=2, batch_chars=BATCH, resume=True,
                         source_name="in.jsonl")
    assert rep.resumed_batches == len(done) and rep.n_batches == journal["n_batches"]
    _equal(out, reference)
    assert not work.exists()


@pytest.mark.slow
def test_a_resume_with_another_setting_is_refused(cluster, shared, tmp_path):
    c, _ = cluster
    out = tmp_path / "out"
    out.mkdir()
    work = out / ".segments.parquet.ray.ddp-work"
    work.mkdir()
    from ddpcore.engines.journal import journal_settings
    from ddpcore.engines.ray_plan import input_identity
    from ddpcore.errors import DDPUsageError

    settings = journal_settings(Settings(), COLS, None, BATCH, input_identity(shared / "in.parquet"),
                                {"engine": "ray", "reader": {"name": "table", "docs": None, "txt_mode": "lines"}})
    (work / P.JOURNAL).write_text(json.dumps({"version": 1, "settings": {**settings, "rules": "paper"}}))
    with pytest.raises(DDPUsageError, match=r"\[D170\] --resume: --rules differs .*used 'paper'"):
        RE.profile_ray(shared / "in.parquet", _targets(out, shared / "in.parquet"), cols=COLS, n_process=1,
                       batch_chars=BATCH, resume=True)


@pytest.mark.slow
@pytest.mark.parametrize("as_uri", [False, True], ids=["path", "file-uri"])
def test_two_runs_share_one_cache_folder(cluster, shared, reference, tmp_path, as_uri):
    """Two CLI runs at once on one cache, a folder or a file:// URI (pyarrow.fs: the code path of s3:// and
    gs://), no lock: both give the local engine's output, and a third run finds every unit."""
    c, _ = cluster
    cache = tmp_path / "cache"
    where = cache.as_uri() if as_uri else str(cache)
    outs = [tmp_path / "a", tmp_path / "b"]
    procs = []
    for out in outs:
        out.mkdir()
        cmd = _profile_cmd(shared / "in.parquet", out, c.address, where)
        cmd[cmd.index("-j") + 1] = "1"
        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    try:
        errs = [p.communicate(timeout=400)[1] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0, 0], errs
    sigs = [_equal(out, reference) for out in outs]
    total = sum(s["cache"]["hits"] + s["cache"]["misses"] for s in sigs) // 2
    assert all(s["cache"]["hits"] + s["cache"]["misses"] == total for s in sigs)
    third = tmp_path / "c"
    third.mkdir()
    sig = None
    rep = RE.profile_ray(shared / "in.parquet", _targets(third, shared / "in.parquet"), cols=COLS, n_process=2,
                         batch_chars=BATCH, parse_wrapper=cache_wrapper(where))
    sig = _equal(third, reference)
    assert sig["cache"] == {"hits": total, "misses": 0, "dir": where} and rep.n_segments == 60
    assert not [p for p in cache.rglob("*") if p.name.endswith(".tmp")]
    assert not os.environ.get("RAY_ADDRESS")
