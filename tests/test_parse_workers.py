"""Parse worker processes (issue 11, section 3): forked and spawned workers parse exactly what one
process parses, a forked worker never needs polars/pyarrow/the kernels (whose thread pools do not
survive a fork), the start method is chosen and checked, and signals reach workers as before.

The oracle for every parse is ``_parse_chunk`` on the ``nlp`` fixture in this process (spaCy's
own ``nlp.pipe``, no worker); for whole runs it is :func:`ddpcore.profile_anchors` (the in-memory
path, one process). Worker tests use a few short texts: they start processes on 2 shared cores.
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

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ddpcore.anchors import spacy_extract as X
from ddpcore.pipeline import parse as P
from ddpcore.errors import DDPUsageError

DATA = Path(__file__).parent / "data"
MINI = DATA / "wmt25_mini.jsonl"
LINUX = sys.platform.startswith("linux")


def _mini_texts() -> list[str]:
    from ddpcore.pipeline.stages import split_units

    return split_units(pl.read_ndjson(MINI)["source"]).texts


def _assert_same_arrays(a: X.TokenArrays, b: X.TokenArrays) -> None:
    for f in X.TokenArrays.__dataclass_fields__:
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype, f
        np.testing.assert_array_equal(x, y, err_msg=f)


# ------------------------------------------------------------------ no spaCy


def test_start_method_comes_from_the_argument_then_the_environment_then_the_platform(monkeypatch):
    monkeypatch.delenv(P.START_METHOD_ENV, raising=False)
    assert P.resolve_start_method() == ("fork" if LINUX else "spawn")
    monkeypatch.setenv(P.START_METHOD_ENV, "spawn")
    assert P.resolve_start_method() == "spawn"
    assert P.Parser(n_process=2).start_method == "spawn"
    if LINUX:
        assert P.resolve_start_method("fork") == "fork"
    monkeypatch.setenv(P.START_METHOD_ENV, "forkserver")
    with pytest.raises(DDPUsageError, match=r"^\[D220\] \$DDPCORE_START_METHOD 'forkserver': expected one of "
                                            r"fork, spawn$"):
        P.resolve_start_method()
    with pytest.raises(DDPUsageError, match=r"^\[D220\] start method 'thread'"):
        P.Parser(n_process=2, start_method="thread")


def test_a_bad_start_method_in_the_environment_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    from ddpcore.cli.main import main

    monkeypatch.setenv(P.START_METHOD_ENV, "threads")
    rc = main(["profile", str(MINI), "-o", str(tmp_path / "o.parquet"), "-q", "-j", "2", "--no-cache"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "[D220]" in err and "DDPCORE_START_METHOD" in err, err
    assert not (tmp_path / "o.parquet").exists()


@pytest.mark.parametrize("total", [0, 3_000, 5_001, 30_000, 823_203, 5_000_000])
@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("first", [None, 20_000])
def test_guided_chunks_cover_the_text_and_cap_the_first_chunk_of_each_worker(total, n, first):
    cuts = P._guided_cuts(total, n, first=first)
    sizes = np.diff(np.r_[0, cuts, total])
    assert sizes.sum() == total and (sizes > 0).all() if total else len(cuts) == 0
    assert (sizes <= 200_000).all()
    if first is not None:
        assert (sizes[:n] <= first).all()
    rest = sizes[n if first is not None else 0:]
    assert (np.diff(rest) <= 0).all()  # the others shrink towards the end (load balance)


# ------------------------------------------------------------------ spaCy workers


@pytest.mark.spacy_model
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_workers_parse_exactly_what_one_process_parses(method, nlp, monkeypatch):
    if method == "fork" and not LINUX:
        pytest.skip("fork is the default on Linux only")
    texts = _mini_texts()
    monkeypatch.setattr(P, "FIRST_CHUNK_CHARS", 1_000)  # several chunks, both workers busy
    assert len(P.chunk_bounds(np.array([len(t) for t in texts]), 2)) > 4
    # the parent has used polars' thread pool: a forked worker that touched polars would hang here
    pl.DataFrame({"g": np.arange(200_000) % 7, "x": np.arange(200_000)}).group_by("g").agg(pl.col("x").sum())
    ref = X._parse_chunk(nlp, texts, 256)
    ref_rev = X._parse_chunk(nlp, texts[::-1], 256)
    with P.Parser(n_process=2, start_method=method) as parser:
        parser.start()
        got = parser.parse(texts)
        got_rev = parser.parse(texts[::-1])  # the same workers serve a second batch
        info = parser.info()
    _assert_same_arrays(ref, got)
    _assert_same_arrays(ref_rev, got_rev)
    assert info == X.pipeline_info(nlp, None)


@pytest.mark.spacy_model
def test_the_forked_worker_path_needs_neither_polars_nor_pyarrow(nlp):
    # a forked worker runs _forked_init and _forked_parse; here they run in a process where those
    # modules cannot be imported (the pipeline is loaded first: the parent does that before fork)
    texts = ["Mary met John. She liked him.", "It rained."]
    code = (
        "import json, os, sys\n"
        "from ddpcore.anchors.spacy_extract import load_pipeline\n"
        "from ddpcore.pipeline import parse as P\n"
        "nlp = load_pipeline(None)\n"
        "for m in ('polars', 'pyarrow'):\n"
        "    sys.modules.pop(m, None)\n"
        "    sys.modules[m] = None\n"
        "P._forked_init(nlp, os.getppid())\n"
        f"arr = P._forked_parse(({texts!r}, 256))\n"
        "print(json.dumps({f: getattr(arr, f).tolist() for f in arr.__dataclass_fields__}))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    ref = X._parse_chunk(nlp, texts, 256)  # the same texts through nlp.pipe in this process
    assert got == {f: getattr(ref, f).tolist() for f in ref.__dataclass_fields__}
    assert got["n_tokens__unit"] == [8, 3]


@pytest.mark.spacy_model
@pytest.mark.skipif(not LINUX, reason="fork is the default on Linux only")
def test_forked_workers_parse_after_the_parent_ran_polars_and_openmp_threads():
    """libgomp and polars' pool do not survive fork(): a child that entered an OpenMP region or a
    polars query after its parent did would hang. The ``fast`` preset runs a compiled kernel in
    the worker (the attribute ruler), so this is the path that could."""
    from ddpcore._native import load

    fast = X.load_pipeline("fast")
    texts = _mini_texts()
    ref = X._parse_chunk(fast, texts, 256)
    pl.DataFrame({"g": np.arange(200_000) % 7, "x": np.arange(200_000)}).group_by("g").agg(pl.col("x").sum())
    flip = np.ones((64, 50), dtype=np.uint8)
    load("stats_cluster").sign_flip_sums(flip, np.ones((50, 30)), np.zeros((64, 30)), 2)  # 2 OpenMP threads
    done: dict[str, X.TokenArrays] = {}
    with P.Parser("fast", n_process=2, start_method="fork", nlp=fast) as parser:
        parser._ensure_pool()  # fork from this thread: libgomp's thread pool belongs to the thread that ran it
        t = threading.Thread(target=lambda: done.setdefault("arr", parser.parse(texts)), daemon=True)
        t.start()
        t.join(timeout=120)
        if t.is_alive():
            for proc in parser._pool._processes.values():
                proc.kill()
            pytest.fail("forked workers hung (they entered an OpenMP region or polars after the parent did)")
    _assert_same_arrays(ref, done["arr"])


@pytest.mark.spacy_model
@pytest.mark.skipif(not LINUX, reason="fork is the default on Linux only")
def test_forked_workers_ignore_sigint_and_end_on_sigterm(nlp):
    with P.Parser(n_process=2, start_method="fork", nlp=nlp) as parser:
        parser.parse(["One sentence."])
        pids = list(parser._pool._processes)
        assert len(pids) == 2
        for pid in pids:
            os.kill(pid, signal.SIGINT)  # Ctrl-C reaches the process group; the parent decides
        _assert_same_arrays(X._parse_chunk(nlp, ["Mary met John."] * 3, 256),
                            parser.parse(["Mary met John."] * 3))
        os.kill(pids[0], signal.SIGTERM)  # not the parent's Python handler: the worker ends
        end = time.monotonic() + 10
        while time.monotonic() < end and parser._pool._processes.get(pids[0]) is not None \
                and parser._pool._processes[pids[0]].is_alive():
            time.sleep(0.05)
        assert not parser._pool._processes[pids[0]].is_alive()
        with pytest.raises(DDPUsageError, match=r"^\[D209\] a spaCy worker process died .*Retry with n_process=1"):
            parser.parse(["It rained."])


@pytest.mark.spacy_model
@pytest.mark.slow
@pytest.mark.skipif(not LINUX, reason="fork is the default on Linux only")
@pytest.mark.parametrize("early", [False, True], ids=["at-first-parse", "loaded-while-staging"])
def test_profile_j2_writes_what_one_process_computes(tmp_path, nlp, monkeypatch, early):
    from ddpcore.cli.main import main
    from ddpcore.engines import run
    from ddpcore.api import profile_anchors

    monkeypatch.delenv(P.START_METHOD_ENV, raising=False)
    monkeypatch.setattr(P, "FIRST_CHUNK_CHARS", 1_000)
    monkeypatch.setattr(run, "START_WORKERS_EARLY", early)  # early: the pipeline loads in a thread, then fork
    out = [tmp_path / f"{t}.parquet" for t in ("seg", "anc", "sent")]
    rc = main(["profile", str(MINI), "-o", str(out[0]), "--anchors", str(out[1]), "--sentences", str(out[2]),
               "-q", "-j", "2", "--no-cache", "--batch-chars", "3000", "-f", "json"])
    assert rc == 0
    ref = profile_anchors(MINI, nlp=nlp)
    for path, exp in zip(out, (ref.segments, ref.anchors, ref.sentences)):
        assert_frame_equal(exp, pl.read_parquet(path))
    sig = json.loads(pl.read_parquet_metadata(out[0])["ddpcore.signature"])
    assert sig["n_process"] == 2 and sig["batches"] >= 2  # the workers serve several batches


@pytest.mark.spacy_model
@pytest.mark.slow
@pytest.mark.parametrize("method", ["fork"] + (["spawn"] if os.environ.get("DDPCORE_TEST_SPAWN") else []))
def test_ctrl_c_with_workers_stops_them_and_says_how_to_resume(tmp_path, method):
    wmt25 = Path(__file__).parents[1] / "src" / "ddpcore" / "data" / "wmt25_en_source.jsonl"
    out = tmp_path / "ddp.parquet"
    proc = subprocess.Popen([sys.executable, "-m", "ddpcore.cli.main", "profile", str(wmt25), "-o", str(out), "-q",
                             "-j", "2", "--no-cache", "--batch-chars", "5000", "--start-method", method],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, start_new_session=True)
    parts = tmp_path / f".{out.name}.ddp-work" / "parts"
    end = time.monotonic() + 180
    while time.monotonic() < end and proc.poll() is None and not list(parts.glob("*.done")):
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read().decode()
    kids = [int(x) for x in subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                           text=True).stdout.split()]
    assert len(kids) >= 2
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    _, err = proc.communicate(timeout=60)
    err = err.decode()
    assert proc.returncode == 130, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "interrupted (SIGINT)" in lines[0] and "--resume" in lines[0], err
    assert not out.exists()
    end = time.monotonic() + 10
    while time.monotonic() < end and any(_alive(k) for k in kids):
        time.sleep(0.05)
    assert not any(_alive(k) for k in kids)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.spacy_model
@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_a_pipeline_error_in_a_worker_keeps_its_own_code(tmp_path, method):
    """A pipeline folder without NER or a sentence splitter is refused when it loads ([D204]). Under
    spawn the workers load it: the parent must report the loader's [D204], not a dead pool ([D209]).
    Under fork the parent loads it before forking, so the same error comes from the parent."""
    import spacy

    path = tmp_path / "blank_en"
    spacy.blank("en").to_disk(path)
    with pytest.raises(DDPUsageError, match=r"^\[D204\] spaCy pipeline .* lacks the components DDP needs: ner"):
        with P.Parser(n_process=2, start_method=method, pipeline=str(path)) as parser:
            parser.parse(["One sentence.", "Another one."])


def test_ddp_errors_keep_their_code_and_class_across_processes():
    """Pickling (how a worker's error reaches the parent) keeps class, code and message."""
    import pickle

    from ddpcore.errors import DDPDataError

    for err in (DDPUsageError("bad pattern", code="D210"), DDPDataError("bad row")):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and back.code == err.code and str(back) == str(err)


@pytest.mark.spacy_model
@pytest.mark.skipif(not LINUX, reason="fork is the default on Linux only")
def test_profile_anchors_forks_workers_from_the_callers_pipeline(monkeypatch):
    """A caller's loaded ``fast`` pipeline, with ``pipeline`` left unset (which names the default):
    forked workers must parse with that object (no parser: the signature says so, and the output is
    the one-process output), not load the default pipeline by name."""
    from polars.testing import assert_frame_equal as _eq

    from ddpcore.api import profile_anchors

    monkeypatch.delenv(P.START_METHOD_ENV, raising=False)
    fast = X.load_pipeline("fast")
    df = pl.DataFrame({"document_id": ["d"] * 6, "segment_id": list(range(6)),
                       "source": ["Mary met John in Paris. She liked him."] * 6})
    one = profile_anchors(df, nlp=fast, n_process=1)
    two = profile_anchors(df, nlp=fast, n_process=2)
    assert one.signature["has_parser"] is False and two.signature["has_parser"] is False
    assert "parser" not in two.signature["components"]
    _eq(one.segments, two.segments)
    _eq(one.anchors, two.anchors)
