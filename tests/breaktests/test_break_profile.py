"""Break tests for ``ddp profile`` / ``ddp explain`` input and output safety (issue 7).

Every row must fail in well under 5 s: outputs are checked and inputs read before any spaCy
pipeline is loaded. See ``_harness.py`` for the promises checked on every row.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import time

import polars as pl
import pytest

from ._harness import Case, parametrize, run_case

FAST = 30.0  # generous on a loaded 2-core machine; the rows below take ~1 s each

ROWS = [{"document_id": "d", "segment_id": i, "source": t} for i, t in enumerate(["Anna came.", "She left."])]
JSONL = "".join(json.dumps(r) + "\n" for r in ROWS)
CSV = "document_id,segment_id,source\nd,0,Anna came.\nd,1,She left.\n"


def _parquet(df: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.write_parquet(buf)
    return buf.getvalue()


PARQUET = _parquet(pl.DataFrame(ROWS))
LIST_IDS = _parquet(pl.DataFrame({"document_id": ["d"], "segment_id": [[1, 2]], "source": ["Anna came."]}))
TRUNCATED_GZ = gzip.compress(JSONL.encode())[:-12]
DEEP = "[" * 100_000 + "]" * 100_000


def _line(segment_id) -> str:  # type: ignore[no-untyped-def]
    return json.dumps({"document_id": "d", "segment_id": segment_id, "source": "She left."}) + "\n"


def C(id, argv, exit, stderr, files=None, outputs=()):  # type: ignore[no-untyped-def]
    return Case(id=id, argv=tuple(argv), exit=exit, stderr=stderr, files=files or {}, outputs=tuple(outputs), timeout=FAST)


CASES = [
    # ---- data loss: an output onto an input, two outputs on one path
    C("o-is-input-jsonl", ["profile", "in.jsonl", "-o", "in.jsonl"], 2, r"\[D133\].*in\.jsonl.*input", {"in.jsonl": JSONL}),
    C("o-is-input-csv", ["profile", "in.csv", "-o", "in.csv"], 2, r"\[D133\]", {"in.csv": CSV}),
    C("o-is-input-parquet", ["profile", "in.parquet", "-o", "in.parquet"], 2, r"\[D133\]", {"in.parquet": PARQUET}),
    C("o-is-input-other-spelling", ["profile", "in.jsonl", "-o", "./sub/../in.jsonl"], 2, r"\[D133\]",
      {"in.jsonl": JSONL, "sub/": ""}),
    C("anchors-is-input-jsonl", ["profile", "in.jsonl", "--anchors", "in.jsonl"], 2, r"\[D133\].*--anchors",
      {"in.jsonl": JSONL}),
    C("anchors-is-input-csv", ["profile", "in.csv", "--anchors", "in.csv"], 2, r"\[D133\]", {"in.csv": CSV}),
    C("sentences-is-input-parquet", ["profile", "in.parquet", "--sentences", "in.parquet"], 2, r"\[D133\]",
      {"in.parquet": PARQUET}),
    C("o-and-anchors-same-path", ["profile", "in.jsonl", "-o", "o.parquet", "--anchors", "o.parquet"], 2,
      r"\[D134\].*-o/--output and --anchors", {"in.jsonl": JSONL}),
    C("anchors-on-o-sidecar", ["profile", "in.jsonl", "-o", "o.csv", "--anchors", "o.csv.signature.json"], 2,
      r"\[D134\].*signature sidecar", {"in.jsonl": JSONL}),
    C("two-stdout", ["profile", "in.jsonl", "-o", "-", "--anchors", "-"], 2, r"\[D135\] --anchors: give a file name; only -o can write to stdout",
      {"in.jsonl": JSONL}),
    # ---- output paths checked before any work
    C("o-parent-is-file", ["profile", "in.jsonl", "-o", "afile/o.parquet"], 2, r"\[D130\].*afile is a file",
      {"in.jsonl": JSONL, "afile": "x"}),
    C("o-parent-missing", ["profile", "in.jsonl", "-o", "nowhere/o.parquet"], 2, r"\[D130\].*does not exist.*mkdir",
      {"in.jsonl": JSONL}),
    C("o-existing-dir", ["profile", "in.jsonl", "-o", "existing_dir"], 2, r"\[D132\].*existing_dir.*folder",
      {"in.jsonl": JSONL, "existing_dir/": ""}),
    C("o-xlsx", ["profile", "in.jsonl", "-o", "out.xlsx"], 2, r"\[D101\].*out\.xlsx.*\.xlsx", {"in.jsonl": JSONL}),
    C("o-parquet-gz", ["profile", "in.jsonl", "-o", "o.parquet.gz"], 2, r"\[D136\].*drop the \.gz", {"in.jsonl": JSONL}),
    # ---- inputs that crashed with a traceback
    C("id-2pow63-jsonl", ["profile", "in.jsonl"], 3, r"\[D107\].*row 2, column 'segment_id'.*9223372036854775808",
      {"in.jsonl": _line(0) + _line(2**63)}),
    C("id-1e30-jsonl", ["profile", "in.jsonl"], 3, r"\[D107\].*row 2.*1000000000000000000000000000000",
      {"in.jsonl": _line(0) + _line(10**30)}),
    C("id-2pow63-json", ["profile", "in.json"], 3, r"\[D107\].*row 2",
      {"in.json": json.dumps([json.loads(_line(0)), json.loads(_line(2**63))])}),
    C("id-2pow63-csv", ["profile", "in.csv"], 3, r"\[D107\].*in\.csv, row 2, column 'segment_id'",
      {"in.csv": "document_id,segment_id,source\nd,0,A.\nd,9223372036854775808,B.\n"}),
    C("doc-id-1e30-csv", ["profile", "in.csv"], 3, r"\[D107\].*column 'document_id'",
      {"in.csv": f"document_id,segment_id,source\n1,0,A.\n{10**30},0,B.\n"}),
    C("truncated-gz", ["profile", "in.jsonl.gz"], 3, r"\[D103\].*in\.jsonl\.gz.*truncated", {"in.jsonl.gz": TRUNCATED_GZ}),
    C("deep-jsonl", ["profile", "in.jsonl"], 3, r"\[D103\].*line 2.*nested too deeply",
      {"in.jsonl": _line(0) + '{"a": ' + DEEP + "}\n"}),
    C("deep-json", ["profile", "in.json"], 3, r"\[D103\].*in\.json.*nested too deeply", {"in.json": DEEP}),
    C("parquet-list-ids", ["profile", "in.parquet"], 3, r"\[D108\].*column 'segment_id'.*List\(Int64\)",
      {"in.parquet": LIST_IDS}),
    # ---- misleading messages
    C("empty-json-array", ["profile", "in.json"], 3, r"\[D106\].*empty", {"in.json": "[]"}),
    C("header-only-csv", ["profile", "in.csv"], 3, r"\[D106\].*no rows", {"in.csv": "document_id,segment_id,source\n"}),
    C("bad-id-row-2", ["profile", "in.jsonl"], 3, r"\[D112\].*row 2, column 'segment_id'",
      {"in.jsonl": _line(0) + _line(None)}),
    C("type-conflict-line-2", ["profile", "in.jsonl"], 3, r"\[D103\].*line 2, column 'segment_id'.*line 1",
      {"in.jsonl": _line(0) + _line([1])}),
    C("summary-by-missing", ["profile", "in.jsonl", "--summary-by", "genre"], 2,
      r"\[D137\].*genre.*available columns: document_id, segment_id", {"in.jsonl": JSONL}),
    C("explain-segment-missing", ["explain", "in.jsonl", "--document", "d", "--segment", "9"], 3,
      r"\[D117\].*2 segment\(s\): 0, 1", {"in.jsonl": JSONL}),
    C("explain-segment-missing-many", ["explain", "in.jsonl", "--document", "d", "--segment", "99"], 3,
      r"\[D117\].*12 segments, the first 10: 0, 1, .*, 9\)$", {"in.jsonl": "".join(_line(i) for i in range(12))}),
    C("explain-document-col", ["explain", "x.csv", "--document", "d1", "--segment", "0", "--document-col", "doc"], 3,
      r"\[D116\].*'d1'.*column 'doc'", {"x.csv": "doc,segment_id,source\nd,0,A.\n"}),
    C("explain-bad-sidecar", ["explain", "o.csv", "--document", "d", "--segment", "0"], 3,
      r"\[D103\].*o\.csv\.signature\.json", {"o.csv": CSV, "o.csv.signature.json": "{oops"}),
]


@parametrize(CASES)
def test_break_profile(case, tmp_path):
    start = time.monotonic()
    run_case(case, tmp_path)
    assert time.monotonic() - start < FAST


def test_symlink_loop_folder(tmp_path):
    os.symlink("loop", tmp_path / "loop")
    run_case(C("symlink-loop", ["profile", "loop"], 3, r"\[D102\].*loop.*symbolic link.*itself"), tmp_path)


def test_stale_temp_of_a_killed_run_is_not_left_on_failure(tmp_path):
    # a failing run does not create temp files, and leaves other names' temps alone
    (tmp_path / ".other.parquet.abcdefgh.tmp").write_bytes(b"")
    run_case(C("stale", ["profile", "in.jsonl", "-o", "o.xlsx"], 2, r"\[D101\]", {"in.jsonl": JSONL}), tmp_path)
    assert (tmp_path / ".other.parquet.abcdefgh.tmp").exists()
