"""A new Ray run of ``-o DIR/`` (without ``--resume``) over a finished dataset keeps that dataset until the new
run finishes.

Before, the finished dataset was deleted when the new run started, so a rerun that failed (bad input, a lost
cluster, Ctrl-C) left the user with no output at all: "nothing lost on failure" did not hold. The finished
dataset is now moved aside (``.DIR.ddp-previous``, one rename) and removed only when the new run finishes;
a run that fails with nothing a ``--resume`` could continue puts it back in place; a run stopped with finished
batches keeps it aside (a line says where) until a run of DIR finishes.

The first two tests run Ray; the others test the aside logic on folders laid out as a Ray dataset is.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from ddpcore.errors import DDPDataError
from ddpcore.engines import parts as P
from ddpcore.io.segments import SegmentColumns

DATA = Path(__file__).parent / "data"
MINI = DATA / "wmt25_mini.jsonl"
COLS = SegmentColumns("document_id", "segment_id", "source", "domain")


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.spacy_model
@pytest.mark.slow
def test_a_failed_rerun_leaves_the_finished_dataset_and_a_good_one_replaces_it(ray_local, tmp_path) -> None:
    from ddpcore.engines import ray_engine as RE

    ds = tmp_path / "ds"
    target = RE.dataset_target(str(ds) + "/")
    RE.profile_ray(MINI, {"segments": target}, cols=COLS, n_process=1)
    before = _files(ds)
    assert "_SUCCESS" in before

    bad = tmp_path / "bad.jsonl"  # a row without the text column: bad data, found while the input is staged
    bad.write_text('{"document_id": "d", "segment_id": 1, "domain": "news"}\n')
    said: list[str] = []
    with pytest.raises(DDPDataError):
        RE.profile_ray(bad, {"segments": RE.dataset_target(str(ds) + "/")}, cols=COLS, n_process=1, warn=said.append)
    assert _files(ds) == before  # the finished dataset, byte for byte (before the fix: the folder was gone)
    assert not (tmp_path / ".ds.ddp-previous").exists()
    assert any("back in place" in s for s in said), said

    rep = RE.profile_ray(MINI, {"segments": RE.dataset_target(str(ds) + "/")}, cols=COLS, n_process=1)
    assert (ds / "_SUCCESS").exists() and not (tmp_path / ".ds.ddp-previous").exists()
    assert any("replaced the earlier finished dataset" in n for n in rep.notes), rep.notes


# ---------------------------------------------------------------- the aside logic, without Ray


def _finished_dataset(folder: Path, mark: str) -> None:
    folder.mkdir(parents=True)
    (folder / P.MANIFEST).write_text(mark)
    (folder / "part-0.parquet").write_text(mark)


def _where(ds: Path):  # type: ignore[no-untyped-def]
    from ddpcore.engines import ray_engine as RE

    return RE._Where(str(ds), True, ds)


def test_a_stopped_rerun_with_finished_batches_keeps_the_old_dataset_aside(tmp_path) -> None:
    from ddpcore.engines import ray_engine as RE

    ds = tmp_path / "ds"
    _finished_dataset(ds, "old")
    where = _where(ds)
    notes: list[str] = []
    assert RE._old_journal(where, False, print, notes) is None
    aside = tmp_path / ".ds.ddp-previous"
    assert _files(aside) == {P.MANIFEST: b"old", "part-0.parquet": b"old"} and not ds.exists()
    ds.mkdir()  # the new run's partial dataset: a journal and a finished batch
    (ds / P.JOURNAL).write_text("{}")
    line = RE._end_aside(where, finished=False, resumable=True)
    assert line is not None and str(aside) in line
    assert aside.exists() and (ds / P.JOURNAL).exists()  # both kept: --resume continues DIR

    # the next run without --resume: DIR is unfinished, the aside is still the last finished dataset
    where2 = _where(ds)
    RE._old_journal(where2, False, print, [])
    assert where2.previous == aside and _files(aside)[P.MANIFEST] == b"old" and not ds.exists()
    assert RE._end_aside(where2, finished=False, resumable=False) is not None  # failed, nothing done: put back
    assert _files(ds) == {P.MANIFEST: b"old", "part-0.parquet": b"old"} and not aside.exists()


def test_a_newer_finished_dataset_replaces_an_older_aside_and_a_finished_run_removes_it(tmp_path) -> None:
    from ddpcore.engines import ray_engine as RE

    ds = tmp_path / "ds"
    aside = tmp_path / ".ds.ddp-previous"
    _finished_dataset(aside, "older")  # left by a run killed after it finished DIR
    _finished_dataset(ds, "newer")
    where = _where(ds)
    RE._old_journal(where, False, print, [])
    assert _files(aside)[P.MANIFEST] == b"newer" and not ds.exists()
    ds.mkdir()
    (ds / P.MANIFEST).write_text("newest")
    assert RE._end_aside(where, finished=True, resumable=False) is None
    assert not aside.exists() and (ds / P.MANIFEST).read_text() == "newest"


def test_a_uri_or_a_file_output_sets_nothing_aside(tmp_path) -> None:
    from ddpcore.engines import ray_engine as RE

    assert RE._Where("s3://bucket/ds", True, None).aside is None
    assert RE._Where(str(tmp_path / ".o.ray.ddp-work"), False, tmp_path / ".o.ray.ddp-work").aside is None
