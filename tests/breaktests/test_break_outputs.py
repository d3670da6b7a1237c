"""Break tests of issue 19, helper 7: outputs inside a work folder, all-or-nothing renames,
two runs on one output, damaged ``--resume`` state, ``ddp merge`` of shards of a changed input.

Rows run through :func:`._harness.run_case` (exit code, one stderr line, inputs unchanged, no
stray files); cases the harness cannot express (a fault injected between renames, a live
second run) are plain pytest tests below.
"""
from __future__ import annotations

import json
from pathlib import Path

from ._harness import Case, parametrize, run_case

FAST = 60.0
ROWS = [{"document_id": "d", "segment_id": i, "source": t} for i, t in enumerate(["Anna came.", "She left."])]
JSONL = "".join(json.dumps(r) + "\n" for r in ROWS)


def C(id, argv, exit, stderr, files=None, outputs=(), **kw):  # type: ignore[no-untyped-def]
    return Case(id=id, argv=tuple(argv), exit=exit, stderr=stderr, files=files or {}, outputs=tuple(outputs),
                timeout=FAST, **kw)


CASES = [
    # ---- item 1: an output inside the run's own work folder was reported written, then deleted with the folder
    C("anchors-in-own-work-folder", ["profile", "in.jsonl", "-o", "o.parquet", "--anchors",
                                     ".o.parquet.ddp-work/a.parquet"], 2,
      r"\[D760\] --anchors \.o\.parquet\.ddp-work/a\.parquet: this is inside the work folder .*\.o\.parquet\.ddp-work",
      {"in.jsonl": JSONL, ".o.parquet.ddp-work/": ""}),
    C("anchors-in-own-work-folder-not-yet-made", ["profile", "in.jsonl", "-o", "o.parquet", "--anchors",
                                                  ".o.parquet.ddp-work/a.parquet"], 2, r"\[D760\]",
      {"in.jsonl": JSONL}),
    C("sentences-deep-in-work-folder", ["profile", "in.jsonl", "-o", "o.csv", "--sentences",
                                        ".o.csv.ddp-work/parts/s.csv"], 2, r"\[D760\] --sentences",
      {"in.jsonl": JSONL, ".o.csv.ddp-work/parts/": ""}),
    C("o-in-another-runs-work-folder", ["profile", "in.jsonl", "-o", ".x.parquet.ddp-work/o.parquet"], 2,
      r"\[D760\] -o/--output", {"in.jsonl": JSONL, ".x.parquet.ddp-work/": ""}),
    C("merge-output-in-work-folder", ["merge", "s0.parquet", "-o", ".m.parquet.ddp-work/m.parquet"], 2,
      r"\[D760\]", {"s0.parquet": b"not read", ".m.parquet.ddp-work/": ""}),
]


@parametrize(CASES)
def test_break(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_symlink_into_a_work_folder_is_refused(tmp_path: Path) -> None:
    from ddpcore.errors import DDPUsageError
    from ddpcore.io.outputs import check_outputs
    import pytest

    (tmp_path / ".o.parquet.ddp-work").mkdir()
    (tmp_path / "w").symlink_to(tmp_path / ".o.parquet.ddp-work")
    with pytest.raises(DDPUsageError, match=r"D760"):
        check_outputs([("--anchors", tmp_path / "w" / "a.parquet")])
    # a folder that merely contains the words is fine
    (tmp_path / "ddp-work").mkdir()
    assert check_outputs([("--anchors", tmp_path / "ddp-work" / "a.parquet")])[0].format == "parquet"
