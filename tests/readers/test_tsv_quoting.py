"""Quoted TSV, UTF-8 BOM and binary input (issue 19, readers and curation byte fidelity).

Expected values come from independent writers/readers: the tables are written by polars
(``write_csv(separator="\\t")``) and pandas (``to_csv(sep="\\t")``), and each expected row's
bytes come from pandas writing that one row alone; the values read back are compared with the
frame that was written.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest

from ddpcore.cli.main import main
from ddpcore.io.sources import read_input, stage_input
from ddpcore.errors import DDPDataError
from ddpcore.io.segments import SegmentColumns
from ddpcore.io.tables import DelimitedScan, iter_csv_chunks, read_table

HOSTILE = ["tab\tinside", 'quote "inside" here', "line one\nline two", 'all three\t"x"\r\nend',
           '"starts with a quote', "ends with a quote\"", "plain", "", "5\" screen, comma"]


def frame(n: int = 27) -> pl.DataFrame:
    texts = [HOSTILE[i % len(HOSTILE)] or f"filler {i}" for i in range(n)]
    return pl.DataFrame({"document_id": [f"d{i // 4}" for i in range(n)], "segment_id": [i % 4 for i in range(n)],
                         "source": texts, "domain": ["news" if i % 2 else "lit\tx" for i in range(n)]})


def write(df: pl.DataFrame, path: Path, writer: str) -> None:
    if writer == "polars":
        df.write_csv(path, separator="\t")
    else:
        df.to_pandas().to_csv(path, sep="\t", index=False)


@pytest.mark.parametrize("writer", ["polars", "pandas"])
def test_quoted_tsv_round_trips(tmp_path: Path, writer: str) -> None:
    df = frame()
    p = tmp_path / "t.tsv"
    write(df, p, writer)
    assert b'"' in p.read_bytes()  # the writer quoted the hostile fields
    assert read_table(p).equals(df)
    assert pl.concat([c for c, _ in iter_csv_chunks(p, "tsv", chunk_rows=5)]).equals(df)
    got = read_input(p, SegmentColumns())
    assert got.drop("__row").equals(df)
    st = stage_input(p, SegmentColumns(), tmp_path / "w", chunk_rows=4)
    assert st.read_rows(np.arange(df.height)).drop("__row").equals(df)


@pytest.mark.parametrize("block", [1, 3, 7, 64])
def test_block_scan_agrees_with_whole_file(tmp_path: Path, block: int) -> None:
    """The block-by-block scan with tiny blocks (carries across every boundary) accepts the file,
    and finds a planted short row on the same line as the whole-file scan."""
    p = tmp_path / "t.tsv"
    write(frame(), p, "pandas")
    data = p.read_bytes()
    scan = DelimitedScan("tsv", p)
    for i in range(0, len(data), block):
        scan.feed(data[i:i + block])
    scan.feed(b"", final=True)
    lines = data.split(b"\n")
    bad_line = next(i for i, ln in enumerate(lines) if ln.startswith(b"d3\t"))  # 0-based physical line
    broken = b"\n".join(lines[:bad_line] + [b"d3\t9"] + lines[bad_line:])
    msgs = []
    for size in (len(broken), block):
        scan = DelimitedScan("tsv", p)
        with pytest.raises(DDPDataError) as exc:
            for i in range(0, len(broken), size):
                scan.feed(broken[i:i + size])
            scan.feed(b"", final=True)
        msgs.append(exc.value.message)
    assert msgs[0] == msgs[1] and f"line {bad_line + 1}," in msgs[0] and "2 fields where the header has 4" in msgs[0]


def test_plain_tsv_quotes_are_literal(tmp_path: Path) -> None:
    """No field starts with a quote: every quote is a character (pandas reads it so)."""
    p = tmp_path / "t.tsv"
    p.write_text('document_id\tsegment_id\tsource\nd\t0\t5" screen\nd\t1\tsay "hi\n', encoding="utf-8")
    want = pd.read_csv(p, sep="\t")
    assert read_table(p).to_pandas().equals(want)


def _profile(df: pl.DataFrame, path: Path) -> None:
    n = df.height
    pl.DataFrame({"document_id": df["document_id"], "segment_id": df["segment_id"], "domain": df["domain"],
                  "ddp": [i % 3 for i in range(n)], "first_sentence": list(range(n)),
                  "n_sentences": [1] * n}).write_parquet(path)


@pytest.mark.parametrize("writer", ["polars", "pandas"])
def test_select_copies_quoted_tsv_records(tmp_path: Path, writer: str) -> None:
    df = frame()
    src = tmp_path / "t.tsv"
    write(df, src, writer)
    _profile(df, tmp_path / "p.parquet")
    out = tmp_path / "o.tsv"
    assert main(["select", str(src), "--profile", str(tmp_path / "p.parquet"), "--min-ddp", "1", "-o", str(out)]) == 0
    keep = [i for i in range(df.height) if i % 3 >= 1]
    pdf = df.to_pandas()
    # independent: pandas writes each kept row alone (polars and pandas quote the same way here)
    want = pdf.head(0).to_csv(sep="\t", index=False).encode() + b"".join(
        pdf.iloc[[i]].to_csv(sep="\t", index=False, header=False).encode() for i in keep)
    assert out.read_bytes() == want


def _jsonl(rows: list[dict]) -> list[bytes]:
    return [json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in rows]


@pytest.mark.parametrize("first_kept", [True, False])
def test_select_jsonl_bom_first_line_verbatim(tmp_path: Path, first_kept: bool) -> None:
    df = frame(9)
    lines = _jsonl(df.to_dicts())
    lines[0] = b"\xef\xbb\xbf" + lines[0]
    src = tmp_path / "b.jsonl"
    src.write_bytes(b"".join(lines))
    _profile(df, tmp_path / "p.parquet")  # ddp = i % 3: row 0 has DDP 0
    out = tmp_path / "o.jsonl"
    crit = ["--max-ddp", "0"] if first_kept else ["--min-ddp", "1"]
    assert main(["select", str(src), "--profile", str(tmp_path / "p.parquet"), *crit, "-o", str(out)]) == 0
    keep = [i for i in range(9) if (i % 3 == 0) == first_kept]
    assert out.read_bytes() == b"".join(lines[i] for i in keep)
    assert read_table(src)["document_id"][0] == "d0"  # the BOM is not part of the first key


def test_sparse_file_fails_fast(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    with open(p, "wb") as fh:
        fh.truncate(2 << 30)  # 2 GiB of NUL bytes, no disk blocks
    for f in (lambda: read_table(p), lambda: list(iter_csv_chunks(p.rename(tmp_path / "x.tsv"), "tsv"))):
        t0 = time.perf_counter()
        with pytest.raises(DDPDataError) as exc:
            f()
        assert time.perf_counter() - t0 < 1.0
        assert exc.value.code == "D730" and "byte offset 0" in exc.value.message and "sparse" in exc.value.message
    os.unlink(tmp_path / "x.tsv")
