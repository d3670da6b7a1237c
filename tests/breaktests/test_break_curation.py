"""Break tests of ``ddp select``, ``ddp sample`` and ``ddp stratify`` (issue 9, "Bad input").

Rows follow tests/breaktests/_harness.py: exit code, one stderr line matching the pattern, no
traceback, inputs unchanged, no stray files (nothing is written when a command fails).
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from ._harness import Case, parametrize, run_case


def _parquet(df: pl.DataFrame, signature: dict | None = None) -> bytes:
    t = df.to_arrow()
    if signature is not None:
        t = t.replace_schema_metadata({b"ddpcore.signature": json.dumps(signature).encode()})
    buf = io.BytesIO()
    pq.write_table(t, buf)
    return buf.getvalue()


SIG = {"columns": {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"}}
ROWS = [("a", 0, 0, 0, 2), ("a", 1, 3, 2, 1), ("b", 0, 0, 0, 1), ("b", 1, 1, 1, 3)]  # doc, seg, ddp, first, n
PROFILE = _parquet(pl.DataFrame({
    "document_id": [r[0] for r in ROWS], "segment_id": [r[1] for r in ROWS], "domain": ["news"] * 4,
    "n_sentences": [r[4] for r in ROWS], "ddp": [r[2] for r in ROWS], "first_sentence": [r[3] for r in ROWS]}), SIG)
OTHER = _parquet(pl.DataFrame({
    "document_id": ["a", "a", "c", "b"], "segment_id": [0, 1, 0, 1], "domain": ["news"] * 4,
    "n_sentences": [1] * 4, "ddp": [0] * 4, "first_sentence": [0, 1, 0, 1]}), SIG)
NO_DDP = _parquet(pl.DataFrame({"document_id": ["a"], "segment_id": [0]}), SIG)
JSONL = "".join(json.dumps({"document_id": d, "segment_id": s, "source": f"text {d}{s}", "domain": "news"}) + "\n"
                for d, s, *_ in ROWS)
SCORES = "system,document_id,segment_id,score\n" + "".join(
    f"{sy},{d},{s},{50 + k}\n" for sy in ("X", "Y") for k, (d, s, *_) in enumerate(ROWS))
FILES = {"in.jsonl": JSONL, "ddp.parquet": PROFILE, "s.csv": SCORES}
SEL = ("select", "in.jsonl", "--profile", "ddp.parquet")
SAM = ("sample", "in.jsonl", "--profile", "ddp.parquet", "--per-bin", "1")
STR = ("stratify", "ddp.parquet", "s.csv", "--n-boot", "20")

CASES = [
    # select
    Case("select-profile-of-other-input", SEL[:3] + ("other.parquet", "--min-ddp", "1", "-o", "o.jsonl"), 3,
         r"\[D636\].*document 'b', segment 0 is not in the profile", files={**FILES, "other.parquet": OTHER}),
    Case("select-profile-bigger", ("select", "small.jsonl", "--profile", "ddp.parquet", "--min-ddp", "1", "-o",
                                   "o.jsonl"), 3, r"\[D637\].*document 'b', segment 0 is not in the input",
         files={**FILES, "small.jsonl": JSONL.splitlines(keepends=True)[0] + JSONL.splitlines(keepends=True)[1]}),
    Case("select-profile-missing-ddp", SEL[:3] + ("bad.parquet", "--min-ddp", "1", "-o", "o.jsonl"), 3,
         r"\[D635\].*ddp", files={**FILES, "bad.parquet": NO_DDP}),
    Case("select-profile-absent", SEL[:3] + ("none.parquet", "--min-ddp", "1", "-o", "o.jsonl"), 3,
         r"\[D635\].*not found", files=FILES),
    Case("select-output-is-input", SEL + ("--min-ddp", "1", "-o", "in.jsonl"), 2, r"\[D133\]", files=FILES),
    Case("select-output-is-profile", ("select", "in.parquet", "--profile", "ddp.parquet", "--min-ddp", "1", "-o",
                                      "ddp.parquet"), 2, r"\[D133\]",
         files={**FILES, "in.parquet": _parquet(pl.read_ndjson(io.BytesIO(JSONL.encode())))}),
    Case("select-other-format", SEL + ("--min-ddp", "1", "-o", "o.csv"), 2, r"\[D101\].*jsonl", files=FILES),
    Case("select-no-criterion", SEL + ("-o", "o.jsonl"), 2, r"\[D630\]", files=FILES),
    Case("select-bad-share", SEL + ("--top-share", "0", "-o", "o.jsonl"), 2, r"\[D631\]", files=FILES),
    Case("select-min-above-max", SEL + ("--min-ddp", "5", "--max-ddp", "1", "-o", "o.jsonl"), 2, r"\[D632\]",
         files=FILES),
    Case("select-unknown-domain", SEL + ("--min-ddp", "0", "--domain", "sport", "-o", "o.jsonl"), 2,
         r"\[D639\].*domains: news", files=FILES),
    Case("select-folder-input", ("select", "docs", "--profile", "ddp.parquet", "--min-ddp", "1", "-o", "o.jsonl"), 2,
         r"\[D633\]", files={**FILES, "docs/": "", "docs/a.txt": "Hello.\n"}),
    Case("select-bad-json-line", SEL + ("--min-ddp", "1", "-o", "o.jsonl"), 3, r"\[D103\].*line 5",
         files={**FILES, "in.jsonl": JSONL + "{not json\n"}),
    Case("select-ok", SEL + ("--min-ddp", "1", "-o", "o.jsonl"), 0, "", files=FILES,
         outputs=("o.jsonl", "o.jsonl.signature.json")),
    Case("select-wmt24-output-not-txt", ("select", "src.txt", "--reader", "wmt24", "--profile", "ddp.parquet",
                                         "--min-ddp", "1", "-o", "o.jsonl"), 2, r"\[D634\].*\.txt",
         files={**FILES, "src.txt": "CANARY GUID x\nx\n", "src.docs": "canary\tcanary\nnews\ta\n"}),
    Case("select-wmt24-docs-output-is-input", ("select", "src.txt", "--reader", "wmt24", "--docs", "o.docs",
                                               "--profile", "ddp.parquet", "--min-ddp", "1", "-o", "o.txt"),
         2, r"\[D133\].*would write o.docs",
         files={**FILES, "src.txt": "CANARY GUID x\nx\n", "o.docs": "canary\tcanary\nnews\ta\n"}),
    Case("select-outputs-with-table", SEL + ("--min-ddp", "1", "--outputs", "d", "-o", "o.jsonl"), 2, r"\[D645\]",
         files={**FILES, "d/": ""}),
    # sample
    Case("sample-bins-not-increasing", SAM + ("--bins", "0,5,3", "-o", "o.jsonl"), 2,
         r"\[D640\].*5 is followed by 3", files=FILES),
    Case("sample-bins-equal", SAM + ("--bins", "0,1,1,inf", "-o", "o.jsonl"), 2, r"\[D640\]", files=FILES),
    Case("sample-bins-text", SAM + ("--bins", "0,a", "-o", "o.jsonl"), 2, r"\[D642\]", files=FILES),
    Case("sample-per-bin-zero", ("sample", "in.jsonl", "--profile", "ddp.parquet", "--per-bin", "0", "-o",
                                 "o.jsonl"), 2, r"\[D641\]", files=FILES),
    Case("sample-output-is-input", SAM + ("-o", "in.jsonl"), 2, r"\[D133\]", files=FILES),
    Case("sample-profile-of-other-input", SAM[:3] + ("other.parquet", "--per-bin", "1", "-o", "o.jsonl"), 3,
         r"\[D636\].*document 'b', segment 0", files={**FILES, "other.parquet": OTHER}),
    # stratify
    Case("stratify-unknown-score-col", STR + ("--score-col", "esa"), 2,
         r"\[D650\].*available columns: system, document_id, segment_id, score", files=FILES),
    Case("stratify-unknown-by", STR + ("--score-col", "score", "--by", "sys"), 2,
         r"\[D651\].*--by sys.*available columns: system", files=FILES),
    Case("stratify-bins-not-increasing", STR + ("--score-col", "score", "--bins", "0,15,5"), 2, r"\[D640\]",
         files=FILES),
    Case("stratify-missing-join-col", ("stratify", "ddp.parquet", "r.csv", "--score-col", "score"), 2,
         r"\[D652\].*'document_id' missing.*--document-col/--segment-col",
         files={**FILES, "r.csv": SCORES.replace("document_id", "doc")}),
    Case("stratify-strict-join", STR + ("--score-col", "score", "--strict-join"), 3,
         r"\[D653\].*document_id='zz'", files={**FILES, "s.csv": SCORES + "X,zz,0,1\n"}),
    Case("stratify-nothing-joins", STR + ("--score-col", "score"), 3, r"\[D656\]",
         files={**FILES, "s.csv": "system,document_id,segment_id,score\nX,q,0,1\n"}),
    Case("stratify-text-score", STR + ("--score-col", "system"), 3,
         r"\[D654\] s\.csv, row 1, column 'system': 'X' is not a number", files=FILES),
    # issue 19: D654 names the row of the first value that is not a number
    Case("stratify-na-score-row", STR + ("--score-col", "score"), 3,
         r"\[D654\] s\.csv, row 9, column 'score': 'n/a' is not a number",
         files={**FILES, "s.csv": SCORES + "X,zz,0,n/a\n"}),
    # issue 19: TSV scores quoted as pandas/polars write them; an unparseable one names the line
    Case("stratify-tsv-unterminated", ("stratify", "ddp.parquet", "s.tsv", "--score-col", "score"), 3,
         r"\[D103\] s\.tsv: line 3, byte column 5: a quoted field opened here is never closed",
         files={**FILES, "s.tsv": "document_id\tsegment_id\tscore\na\t0\t1\na\t1\t\"2\nb\t0\t3\n"}),
    # issue 19: select of a TSV: quoting and field counts checked, naming the line
    Case("select-tsv-short-row", ("select", "in.tsv", "--profile", "ddp.parquet", "--min-ddp", "1", "-o", "o.tsv"), 3,
         r"\[D103\] in\.tsv: line 5, byte column 1: 3 fields where the header has 4",
         files={**FILES, "in.tsv": "document_id\tsegment_id\tsource\tdomain\na\t0\t\"x\ty\"\tnews\n"
                                   "a\t1\t\"two\nlines\"\tnews\nb\t0\tnews\nb\t1\tz\tnews\n"}),
    Case("select-tsv-stray-quote", ("select", "in.tsv", "--profile", "ddp.parquet", "--min-ddp", "1", "-o", "o.tsv"),
         3, r"\[D103\] in\.tsv: line 3, byte column 6: a \" inside an unquoted field",
         files={**FILES, "in.tsv": "document_id\tsegment_id\tsource\tdomain\na\t0\t\"x\"\tnews\n"
                                   "a\t1\t5\" tv\tnews\nb\t0\tw\tnews\nb\t1\tz\tnews\n"}),
    Case("select-jsonl-nul", ("select", "in.jsonl", "--profile", "ddp.parquet", "--min-ddp", "1", "-o", "o.jsonl"), 3,
         r"\[D730\] in\.jsonl: byte offset 12: a NUL byte",
         files={**FILES, "in.jsonl": JSONL.encode()[:12] + b"\x00" * 64 + JSONL.encode()[12:]}),
    Case("stratify-gap-unknown", STR + ("--score-col", "score", "--by", "system", "--gap", "X,Q"), 2,
         r"\[D655\].*'Q'", files=FILES),
    Case("stratify-output-is-input", STR + ("--score-col", "score", "-o", "s.csv"), 2, r"\[D101\]|\[D133\]",
         files=FILES),
    Case("stratify-output-json-is-profile", ("stratify", "ddp.parquet", "s.json", "--score-col", "score", "-o",
                                             "s.json"), 2, r"\[D133\]",
         files={**FILES, "s.json": json.dumps([{"document_id": "a", "segment_id": 0, "score": 1}])}),
    Case("stratify-ok-to-file", STR + ("--score-col", "score", "-o", "r.json"), 0, "", files=FILES,
         outputs=("r.json", "r.json.signature.json")),
]


@parametrize(CASES)
def test_break(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)
