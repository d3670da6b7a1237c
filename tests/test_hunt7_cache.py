"""Hunt 7: the parse cache and `ddp cache` under damage, hand edits and concurrent use.

Each test fails without its fix: a pipeline folder renamed by hand served another configuration's
parses; damaged markers were never repaired (clear then kept them, and refused the cache with D750);
concurrent clears, or a clear while a run stored parses, stopped with D182 (or D999 in `cache info`);
a run whose folder was cleared lost all its parses; a shard removed by a clear was reported
"corrupted"; a symbolic link to a pipeline folder was read by runs but invisible to `cache info`/`clear`;
`cache info` counted a line stored twice (two concurrent runs) twice; and `cache info` called a path under
a file, or a link to nothing, "not created yet" where `ddp profile` cannot use it.
"""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from test_cache import FAKE_INFO, OTHER_INFO, FakeParser, OtherParser, fake_arrays, same_arrays
from test_cache import cache_folder as _folder

from ddpcore.pipeline import cache as C

REPO = Path(__file__).resolve().parents[1]
MINI = REPO / "tests" / "data" / "wmt25_mini.jsonl"



def _shards(root: Path) -> list[Path]:
    return sorted(root.rglob(f"*{C.SHARD_SUFFIX}"))


# ------------------------------------------------------------------ another configuration's folder


def test_a_pipeline_folder_renamed_by_hand_is_not_read(tmp_path):
    """Its marker names another fingerprint: the run parses every line (never the other configuration's
    parses), stores nothing there, says so once and in the signature; `clear` then removes all of it."""
    texts = ["alpha beta", "gamma delta epsilon"]
    C.CachedParse(OtherParser(), tmp_path)(texts)
    (tmp_path / _folder(OTHER_INFO)).rename(tmp_path / _folder(FAKE_INFO))
    seen: list[str] = []
    parser = FakeParser()
    run = C.CachedParse(parser, tmp_path, warn=seen.append)
    assert same_arrays(run(texts), fake_arrays(texts))  # was: OtherParser's parses, hits == 2
    assert same_arrays(run(texts), fake_arrays(texts))
    assert parser.calls == [texts, texts] and run.hits == 0 and len(seen) == 1
    assert "holds the parses of another pipeline configuration" in seen[0] and _folder(OTHER_INFO) in seen[0]
    sig = run.signature()["cache"]
    assert sig["dir"] is None and _folder(OTHER_INFO) in sig["not_written"]
    run.flush()
    folder = tmp_path / _folder(FAKE_INFO)
    assert C.read_checked_json(folder / C.INFO_FILE)[0]["components"] == OTHER_INFO["components"]  # not rewritten
    (pipe,) = C.cache_summary(tmp_path)["pipelines"]
    assert pipe["foreign"] is True and pipe["marked"] is False
    report = C.clear_cache(tmp_path, _folder(FAKE_INFO))
    assert report.removed == 1 and report.kept == [] and not folder.exists()
    C.CachedParse(FakeParser(), tmp_path)(texts)
    again = C.CachedParse(FakeParser(), tmp_path, warn=pytest.fail)
    assert same_arrays(again(texts), fake_arrays(texts)) and again.hits == 2


@pytest.mark.spacy_model
def test_ddp_profile_with_a_renamed_fast_folder_equals_a_run_without_cache(tmp_path):
    """End to end: the `fast` preset's folder renamed to the default pipeline's name."""
    def ddp(*args):
        r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", str(MINI), "-q", "-j", "1", *args],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        return r

    cache = tmp_path / "c"
    ddp("-o", str(tmp_path / "fast.parquet"), "--pipeline", "fast", "--cache", str(cache))
    (cache / C.pipeline_folder("fast")).rename(cache / C.pipeline_folder("default"))
    r = ddp("-o", str(tmp_path / "cached.parquet"), "--anchors", str(tmp_path / "cached_a.parquet"),
            "--cache", str(cache))
    assert "another pipeline configuration" in r.stderr
    ddp("-o", str(tmp_path / "plain.parquet"), "--anchors", str(tmp_path / "plain_a.parquet"), "--no-cache")
    for name in ("", "_a"):
        assert pl.read_parquet(tmp_path / f"cached{name}.parquet").equals(pl.read_parquet(tmp_path / f"plain{name}.parquet"))
    sig = json.loads(__import__("pyarrow.parquet").parquet.read_schema(tmp_path / "cached.parquet")
                     .metadata[b"ddpcore.signature"])
    assert sig["cache"]["hits"] == 0 and "another pipeline configuration" in sig["cache"]["not_written"]


# ------------------------------------------------------------------------------ damaged markers


def test_damaged_markers_are_written_again(tmp_path):
    texts = ["a b", "c"]
    C.CachedParse(FakeParser(), tmp_path)(texts)
    folder = tmp_path / _folder(FAKE_INFO)
    for marker in (tmp_path / C.ROOT_MARKER, folder / C.FOLDER_MARKER):
        data = bytearray(marker.read_bytes())
        data[len(data) // 2] ^= 0x01
        marker.write_bytes(bytes(data))
    run = C.CachedParse(FakeParser(), tmp_path, warn=pytest.fail)
    assert same_arrays(run(texts), fake_arrays(texts)) and run.hits == 2
    assert C.is_marked_root(tmp_path) and C.folder_kind(folder) == "marked"
    report = C.clear_cache(tmp_path)
    assert report.removed == 1 and report.kept == [] and not folder.exists()  # was: the marker kept
    assert C.clear_cache(tmp_path).removed == 0  # was: D750, not a ddpcore parse cache


# ------------------------------------------------------------------------- concurrent use


def test_clear_skips_files_removed_meanwhile_and_keeps_a_folder_written_meanwhile(tmp_path, monkeypatch, capsys):
    """Another clear removed some files after this one listed them, and a run stored a shard: no D182."""
    from ddpcore.cli.main import main

    C.CachedParse(FakeParser(), tmp_path)(["a b"])
    C.CachedParse(FakeParser(), tmp_path)(["c d"])
    folder = tmp_path / _folder(FAKE_INFO)
    listed = C._owned_files

    def racing(f, kind):
        owned, other = listed(f, kind)
        for p in [p for p in owned if p.suffix == C.SHARD_SUFFIX][:1] + [f / C.INFO_FILE]:
            p.unlink()  # another clear got there first
        C.write_shard(f, C.unit_keys(["e f"]), fake_arrays(["e f"]))  # a run stores new parses
        return owned, other

    monkeypatch.setattr(C, "_owned_files", racing)
    assert main(["cache", "clear", "--cache", str(tmp_path), "-f", "json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["removed_folders"] == 1 and out["busy"] == [folder.name] and out["kept"] == []
    assert "a run stored new parses there during the clear" in captured.err
    assert len(_shards(tmp_path)) == 1  # the run's new shard stays


def test_cache_info_while_a_folder_is_removed(tmp_path, monkeypatch, capsys):
    from ddpcore.cli.main import main

    C.CachedParse(FakeParser(), tmp_path)(["a b"])
    folder = tmp_path / _folder(FAKE_INFO)
    found = C.cache_folders

    def racing(root):
        listed = found(root)
        monkeypatch.setattr(C, "cache_folders", found)
        C.clear_cache(root)  # a concurrent clear, after this listing
        return listed

    monkeypatch.setattr(C, "cache_folders", racing)
    assert main(["cache", "info", "--cache", str(tmp_path)]) == 0, capsys.readouterr().err  # was: D999
    assert not folder.exists()


def test_a_run_whose_folder_is_cleared_keeps_its_new_parses(tmp_path):
    seen: list[str] = []
    run = C.CachedParse(FakeParser(), tmp_path, warn=seen.append)
    run(["a b"])
    assert C.clear_cache(tmp_path).removed == 1
    assert same_arrays(run(["c d e"]), fake_arrays(["c d e"]))
    assert seen == [] and "not_written" not in run.signature()["cache"]  # was: No such file or directory
    again = C.CachedParse(FakeParser(), tmp_path, warn=pytest.fail)
    assert same_arrays(again(["c d e"]), fake_arrays(["c d e"])) and again.hits == 1
    assert C.folder_kind(tmp_path / _folder(FAKE_INFO)) == "marked"


def test_shards_removed_while_a_run_reads_are_not_called_corrupted(tmp_path):
    C.CachedParse(FakeParser(), tmp_path)(["a b"])
    C.CachedParse(FakeParser(), tmp_path)(["c d"])
    C.CachedParse(FakeParser(), tmp_path)(["e f"])
    seen: list[str] = []
    run = C.CachedParse(FakeParser(), tmp_path, warn=seen.append)
    run(["a b"])  # the run has listed the shards
    for shard in _shards(tmp_path)[1:]:
        shard.unlink()  # `ddp cache clear`, or another run
    texts = ["c d", "e f"]
    assert same_arrays(run(texts), fake_arrays(texts)) and run.misses == 2
    assert len(seen) == 1 and "was removed while this run used the cache" in seen[0]
    assert "corrupted" not in run.signature()["cache"]


def test_cache_info_counts_a_line_stored_by_two_runs_once(tmp_path):
    texts = ["a b", "c d e", "f"]
    runs = [C.CachedParse(FakeParser(), tmp_path) for _ in range(2)]
    for run in runs:
        run._open()  # both list the (empty) folder before either stores: two concurrent runs
    for run in runs:
        run(texts)
    assert len(_shards(tmp_path)) == 2
    summary = C.cache_summary(tmp_path)
    tokens = int(fake_arrays(texts).n_tokens__unit.sum())
    assert summary["units"] == 3 and summary["pipelines"][0]["tokens"] == tokens  # was: 6 and twice the tokens


# --------------------------------------------------------------------------------- paths


def test_a_symlinked_pipeline_folder_is_shown_and_cleared(tmp_path):
    """A run reads parses through a link to a pipeline folder; `cache info` counts them and `clear` removes
    them (the files ddpcore wrote; the link stays), so a run after the clear parses again."""
    elsewhere = tmp_path / "elsewhere"
    C.CachedParse(FakeParser(), elsewhere)(["a b", "c"])
    root = tmp_path / "root"
    root.mkdir()
    link = root / _folder(FAKE_INFO)
    link.symlink_to(elsewhere / _folder(FAKE_INFO))
    run = C.CachedParse(FakeParser(), root, warn=pytest.fail)
    run(["a b", "c"])
    assert run.hits == 2
    assert C.cache_summary(root)["units"] == 2  # was: 0
    report = C.clear_cache(root)
    assert report.removed == 1 and report.freed > 0 and link.is_symlink() and _shards(elsewhere) == []
    again = C.CachedParse(FakeParser(), root)
    again(["a b", "c"])
    assert again.hits == 0


def test_cache_commands_refuse_a_path_no_run_can_use(tmp_path, capsys):
    from ddpcore.cli.main import main
    from ddpcore.errors import DDPDataError

    blocker = tmp_path / "file"
    blocker.write_text("x")
    dangling = tmp_path / "link"
    dangling.symlink_to(tmp_path / "gone")
    for path in (blocker / "sub", dangling, dangling / "sub"):
        for cmd in ("info", "clear"):
            assert main(["cache", cmd, "--cache", str(path)]) == 2  # was: 0, "not created yet"
            err = capsys.readouterr().err
            assert "[D180]" in err and err.count("\n") == 1
    assert "symbolic link" in err
    with pytest.raises(DDPDataError, match=r"\[D870\] .*symbolic link to .*gone, which does not exist"):
        C.CachedParse(FakeParser(), dangling, warn=pytest.fail)(["a"])


def test_a_corrupted_file_in_a_read_only_cache_is_not_promised_to_be_written(tmp_path, monkeypatch):
    C.CachedParse(FakeParser(), tmp_path)(["a b"])
    (tmp_path / _folder(FAKE_INFO) / C.INFO_FILE).write_text('{"checksum": "0"}')  # fails its checksum

    def read_only(*args):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(C, "_mark", read_only)
    seen: list[str] = []
    run = C.CachedParse(FakeParser(), tmp_path, warn=seen.append)
    assert same_arrays(run(["a b"]), fake_arrays(["a b"])) and run.hits == 1
    (line,) = [s for s in seen if "info.json" in s]
    assert "written again" not in line and "cannot be written" in line


def test_cache_info_counts_lines_across_shards(tmp_path):
    """(a sanity check of the distinct count: shards with no line in common add up)"""
    texts = [f"w{i} x" for i in range(50)]
    C.CachedParse(FakeParser(), tmp_path)(texts[:20])
    C.CachedParse(FakeParser(), tmp_path)(texts)
    summary = C.cache_summary(tmp_path)
    assert summary["units"] == 50 and summary["shards"] == 2
    assert summary["pipelines"][0]["tokens"] == int(np.sum(fake_arrays(texts).n_tokens__unit))
