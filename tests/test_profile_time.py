"""`ddp profile --profile-time`: seconds per spaCy component and per ddpcore stage (issue 11 §4).

No timing thresholds: the tests check that the table names every component of the loaded
pipeline and every stage, that no time is negative, and that the parts add up (stages to the
wall time of a one-process run, components to at most the parse stage that contains them).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from ddpcore.anchors import spacy_extract as X
from ddpcore.cli.main import main
from ddpcore.pipeline import stage_times
from ddpcore.io.tables import read_parquet_metadata

MINI = Path(__file__).parent / "data" / "wmt25_mini.jsonl"
ROW = re.compile(r"^  (?P<name>.+?)\s+(?P<sec>-?\d+\.\d\d)\s+(?P<share>\S+)$")


def _table(stderr: str) -> tuple[str, dict[str, float], dict[str, float]]:
    """(header line, component seconds, stage seconds incl. 'other ...' and 'wall') of the table."""
    lines = stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("time per stage and component:"))
    comps: dict[str, float] = {}
    stages: dict[str, float] = {}
    target = comps
    for line in lines[start + 1:]:
        if line.startswith("  ddpcore stage"):
            target = stages
            continue
        m = ROW.match(line)
        if m:
            target[m["name"]] = float(m["sec"])
    return lines[start], comps, stages


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.spacy_model
@pytest.mark.parametrize("preset", ["default", "fast"])
def test_table_lists_every_component_and_stage_and_adds_up(tmp_path, capsys, preset):
    out = tmp_path / "ddp.parquet"
    code, _, err = _run(capsys, "profile", str(MINI), "-o", str(out), "-q", "--no-cache", "-j", "1",
                        "--pipeline", preset, "--profile-time")
    assert code == 0
    header, comps, stages = _table(err)
    sig = json.loads(read_parquet_metadata(out)["ddpcore.signature"])
    expected = ["tokenizer", *sig["components"], X.TO_ARRAY_COMPONENT]
    if preset == "fast":
        assert "attribute_ruler" not in sig["components"]
        expected.append(X.COMPILED_RULER_COMPONENT)
    assert set(expected) <= set(comps), (expected, comps)
    assert X.LOAD_COMPONENT in comps  # one process: the pipeline is loaded inside the run
    assert set(stage_times.STAGES) <= set(stages)
    assert all(v >= 0 for v in comps.values()) and all(stages[s] >= 0 for s in stage_times.STAGES)
    assert stages["other (start-up, planning)"] >= -0.01
    # one process: the stages do not overlap, so they and "other" make up the wall time (2-decimal rounding)
    total = sum(stages[s] for s in stage_times.STAGES) + stages["other (start-up, planning)"]
    assert abs(total - stages["wall"]) <= 0.01 * (len(stage_times.STAGES) + 2)
    assert sum(stages[s] for s in stage_times.STAGES) >= 0.5 * stages["wall"]  # the stages are where the time goes
    # the components run inside the parse stage
    assert abs(comps["total"] - sum(v for k, v in comps.items() if k != "total")) <= 0.01 * len(comps)
    assert comps["total"] <= stages["parse"] + 0.05
    assert "parsed by 1 process(es)" in header and "wall" in header


@pytest.mark.spacy_model
@pytest.mark.slow
def test_worker_processes_report_their_components(tmp_path, capsys):
    out = tmp_path / "ddp.parquet"
    code, _, err = _run(capsys, "profile", str(MINI), "-o", str(out), "-q", "--no-cache", "-j", "2",
                        "--profile-time")
    assert code == 0
    header, comps, stages = _table(err)
    sig = json.loads(read_parquet_metadata(out)["ddpcore.signature"])
    assert sig["n_process"] == 2
    assert {"tokenizer", *sig["components"]} <= set(comps) and all(v >= 0 for v in comps.values())
    assert int(re.search(r"parsed by (\d+) process", header)[1]) >= 1
    assert "more than the wall time" in err  # -j > 1: parsing overlaps the other stages
    assert X.TIMING_ENV not in os.environ  # the run restores the environment


def test_ray_engine_refuses_profile_time(tmp_path, capsys):
    code, _, err = _run(capsys, "profile", str(MINI), "-o", str(tmp_path / "x.parquet"), "--engine", "ray",
                        "--profile-time")
    assert code == 2 and "[D211]" in err and len(err.strip().splitlines()) == 1


def test_process_files_are_summed_in_pipeline_order(tmp_path, monkeypatch):
    """Two worker files (as `_ComponentClock.dump` writes them) add up component by component."""
    a = {"seconds": {"(load pipeline)": 1.0, "tokenizer": 0.5, "tok2vec": 2.0, "ner": 3.0, "(token arrays)": 0.25},
         "units": 10, "tokens": 100}
    b = {"seconds": {"(load pipeline)": 1.5, "tokenizer": 0.25, "tok2vec": 1.0, "ner": 1.0, "(token arrays)": 0.5},
         "units": 5, "tokens": 40}
    idle = {"seconds": {"(load pipeline)": 2.0}, "units": 0, "tokens": 0}  # a worker that got no chunk
    for name, data in (("1.json", a), ("2.json", b), ("3.json", idle)):
        (tmp_path / name).write_text(json.dumps(data))
    (tmp_path / "4.json.tmp").write_text("{")  # a worker killed mid-write: ignored
    times = stage_times.RunTimes()
    stage_times._collect(tmp_path, times)
    # sums by hand from a, b and idle
    assert times.components == {"(load pipeline)": 4.5, "tokenizer": 0.75, "tok2vec": 3.0, "ner": 4.0,
                                "(token arrays)": 0.75}
    assert list(times.components) == ["(load pipeline)", "tokenizer", "tok2vec", "ner", "(token arrays)"]
    assert (times.processes, times.units, times.tokens) == (2, 15, 140)


def test_component_times_are_exclusive_of_upstream_components(monkeypatch):
    """Chained generators as spaCy builds them: with a fake clock, upstream work advancing the
    clock 1 per item and downstream work 2 per item give exactly 3 and 6 for 3 items."""
    now = [0.0]
    monkeypatch.setattr(X.time, "perf_counter", lambda: now[0])
    clock = X._ComponentClock()

    def upstream():
        for i in range(3):
            now[0] += 1.0
            yield i

    def downstream(items):
        for i in items:
            now[0] += 2.0
            yield i

    chain = clock.timed_iter(downstream(clock.timed_iter(upstream(), "up")), "down")
    with clock.frame("outer"):
        assert list(chain) == [0, 1, 2]
        now[0] += 0.5
    assert clock.seconds == {"up": 3.0, "down": 6.0, "outer": 0.5}


def test_stages_are_free_when_not_recording():
    calls = []

    @stage_times.timed_stage("extract")
    def work(x):
        calls.append(x)
        return x + 1

    assert work(1) == 2 and stage_times._ACTIVE is None
    with stage_times.record() as times:
        assert os.environ[X.TIMING_ENV]
        assert work(2) == 3
        with stage_times.stage("write"):
            pass
    assert calls == [1, 2] and set(times.stages) == {"extract", "write"} and times.wall >= 0
    assert all(v >= 0 for v in times.stages.values()) and X.TIMING_ENV not in os.environ
