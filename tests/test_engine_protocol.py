"""Engines behind one protocol, one run-signature builder, profile_to_files in steps (issue 20).

Expected values are written out by hand from the inputs of each call (the signature layout of
``docs``/the README: version, pipeline info, settings, columns, then the run's own keys), or
read from the source with ``ast`` (function lengths, where signatures are built).
"""
from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import ddpcore
from ddpcore._version import __version__
from ddpcore.anchors.rules import get_rules
from ddpcore.cli.main import main
from ddpcore.engines import get_engine
from ddpcore.engines.base import Engine, RunOptions, RunReport
from ddpcore.engines.local import Settings
from ddpcore.errors import DDPUsageError
from ddpcore.schema import SegmentColumns
from ddpcore.signature import run_signature

SRC = Path(ddpcore.__file__).parent
INFO = {"pipeline": "default", "pipeline_name": "en_core_web_sm", "pipeline_version": "3.8.0", "has_parser": True}


def test_run_signature_lays_out_every_key_once():
    rules = get_rules("paper")
    settings = Settings(distance="nearest", sentence_unit="segment", rules=rules)
    cols = SegmentColumns("doc", "seg", "txt", "dom")
    sig = run_signature(INFO, settings, cols, head_nouns="dependency labels",
                        run={"input": "x.jsonl", "batches": 3, "n_process": 2},
                        extra={"engine": "ray", "actors": 2, "n_process": 1})
    # written out by hand from the arguments above
    assert sig == {
        "ddpcore": __version__, "pipeline": "default", "pipeline_name": "en_core_web_sm", "pipeline_version": "3.8.0",
        "has_parser": True, "distance": "nearest", "rules": "paper", "rules_description": rules.description,
        "certify": rules.certify_info(), "head_nouns": "dependency labels", "sentence_unit": "segment",
        "columns": {"document": "doc", "segment": "seg", "text": "txt", "domain": "dom"},
        "input": "x.jsonl", "batches": 3, "n_process": 1, "engine": "ray", "actors": 2,
    }
    assert run_signature(INFO, settings, cols, head_nouns="h").keys() == {
        "ddpcore", *INFO, "distance", "rules", "rules_description", "certify", "head_nouns", "sentence_unit", "columns"}


def test_a_run_signature_is_built_in_one_place_only():
    """Every engine's signature comes from signature.run_signature: no other module spells the
    keys that only a run signature has (the in-memory API, the journaled run, the Ray engine)."""
    builders = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "rules_description"
                                                  for k in node.keys):
                builders.append(str(path.relative_to(SRC)))
    assert builders == ["signature.py"]
    callers = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if "run_signature(" in p.read_text()
                     and p.name != "signature.py")
    assert callers == ["api.py", "engines/ray_engine.py", "engines/run.py"]


def test_profile_to_files_is_split_into_steps_under_80_lines():
    tree = ast.parse((SRC / "engines" / "run.py").read_text(encoding="utf-8"))
    lengths = {n.name: n.end_lineno - n.lineno + 1 for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    for step in ("profile_to_files", "_profile_run", "_work_folder", "_run_extra", "_open_journal", "_stage",
                 "_plan_batches", "_profile_batches", "_interrupted"):
        assert step in lengths
    assert max(lengths.values()) <= 80, sorted(lengths.items(), key=lambda kv: -kv[1])[:3]


def test_both_engines_implement_the_protocol():
    local, ray = get_engine("local"), get_engine("ray")
    assert isinstance(local, Engine) and isinstance(ray, Engine)
    assert (local.name, ray.name) == ("local", "ray")
    local.check(RunOptions(resume=True, shard=(0, 2)))  # every option applies locally
    with pytest.raises(DDPUsageError, match=r"\[D192\]"):
        get_engine("spark")


@pytest.mark.parametrize(("options", "flag"), [(RunOptions(shard=(1, 3)), "--shard")])  # --resume works with Ray (issue 24)
def test_the_ray_engine_refuses_the_local_options_before_reading_anything(options, flag):
    with pytest.raises(DDPUsageError, match=rf"\[D193\] {flag} is for the local engine"):
        get_engine("ray").check(options)


def test_run_options_take_no_unknown_field():
    from ddpcore.engines.run import profile_to_files

    with pytest.raises(TypeError, match="n_actors"):
        profile_to_files("x.jsonl", {"segments": None}, n_actors=2)


def test_profile_shows_the_keywords_of_profile_anchors():
    prof = inspect.signature(ddpcore.profile)
    full = inspect.signature(ddpcore.profile_anchors)
    assert list(prof.parameters) == list(full.parameters)
    assert [p.default for p in prof.parameters.values()] == [p.default for p in full.parameters.values()]
    import pydoc

    shown = pydoc.render_doc(ddpcore.profile, renderer=pydoc.plaintext)  # what help() prints
    assert "**kwargs" not in shown and "document_col: 'str' = 'document_id'" in shown
    assert "options: 'ProfileOptions | None' = None" in shown
    with pytest.raises(TypeError, match="n_actors"):
        ddpcore.profile(pl.DataFrame({"document_id": ["d"], "segment_id": [0], "source": ["x"]}), n_actors=2)


class _Recorder:
    """An engine that records what ``ddp profile`` hands it and returns a small report."""

    name = "local"

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def check(self, options: RunOptions) -> None:
        self.calls.append(("check", options))

    def run(self, source: Any, targets: Any, options: RunOptions) -> RunReport:
        self.calls.append(("run", options))
        frame = pl.DataFrame({"document_id": ["a", "a", "b"], "domain": ["news"] * 3, "ddp": [0, 2, 4]})
        sig = {"distance": "chained", "pipeline_name": "p", "pipeline_version": "1", "rules": "refined",
               "n_process": 1}
        return RunReport(signature=sig, summary_frame=frame, n_segments=3, n_anchors=0, n_batches=1)


@pytest.mark.parametrize(("argv", "batch_chars", "method"), [([], None, None),
                                                             (["--batch-chars", "5000", "--start-method", "spawn"],
                                                              5000, "spawn")])
def test_ddp_profile_calls_one_engine_interface(monkeypatch, tmp_path, capsys, argv, batch_chars, method):
    import ddpcore.engines as E

    rec = _Recorder()
    monkeypatch.setattr(E, "get_engine", lambda name: rec)
    rc = main(["profile", "-o", str(tmp_path / "p.parquet"), "-q", "--no-cache", "-f", "json", *argv])
    assert rc == 0
    assert [c for c, _ in rec.calls] == ["check", "run"]  # checked before it runs
    opts = rec.calls[1][1]
    assert opts is rec.calls[0][1]
    assert (opts.batch_chars, opts.start_method, opts.resume, opts.shard) == (batch_chars, method, False, None)
    out = json.loads(capsys.readouterr().out)
    # the summary of the recorded frame: 2 documents, 3 segments, mean DDP 2 (by hand)
    assert out["summary"][-1]["segments"] == 3 and out["summary"][-1]["mean_ddp"] == 2.0


def test_start_method_reaches_the_parse_workers(monkeypatch, tmp_path, capsys):
    """--start-method is handed to the Parser of the run (it was parsed and then dropped)."""
    import ddpcore.engines.run as R

    seen = {}

    class Stop(BaseException):  # not caught by the command line: ends the run right at the parser
        pass

    def fake_parser(pipeline, **kwargs):
        seen.update(kwargs)
        raise Stop

    monkeypatch.setattr(R, "Parser", fake_parser)
    with pytest.raises(Stop):
        main(["profile", "-o", str(tmp_path / "p.parquet"), "-q", "--no-cache", "-j", "2", "--start-method", "spawn"])
    assert seen["start_method"] == "spawn" and seen["n_process"] == 2


def test_sinks_live_in_io():
    from ddpcore.engines import merge, run
    from ddpcore.io import sinks

    assert run.Sink is sinks.Sink and run.write_part is sinks.write_part
    assert "class Sink" not in (SRC / "engines" / "run.py").read_text()
    assert "from ..io.sinks import Sink" in inspect.getsource(merge._write_merged)  # merge writes with io's Sink
