"""``ddp profile`` / ``ddp explain`` on input files as curators have them: dictionary-encoded text
(pandas ``category``, Parquet dictionary pages), malformed ``.docs`` lines, blank lines of line-aligned
sources and empty WMT25 paragraphs named where the user finds them in the file."""
from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ddpcore.cli.main import main

TEXTS = ["John went home. He was tired.", "Mary saw him there. She smiled.", "The cat sat."]
DOCS = ["d1", "d1", "d2"]
SEGS = [0, 1, 0]


def _err_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = [ln for ln in capsys.readouterr().err.strip().splitlines() if ln.strip()]
    assert len(err) == 1, err
    return err[0]


# ---------------------------------------------------------------- dictionary-encoded text is text


def _write_dictionary_parquet(path: Path, row_groups: bool) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("document_id", pa.dictionary(pa.int32(), pa.string())), ("segment_id", pa.int64()),
                        ("source", pa.dictionary(pa.int32(), pa.string()))])
    if not row_groups:
        pq.write_table(pa.table({"document_id": pa.array(DOCS).dictionary_encode(), "segment_id": SEGS,
                                 "source": pa.array(TEXTS).dictionary_encode()}, schema=schema), path)
        return
    with pq.ParquetWriter(path, schema) as w:  # one row group per row, each with its own dictionary
        for d, s, t in zip(DOCS, SEGS, TEXTS):
            w.write_table(pa.table({"document_id": pa.array([d]).dictionary_encode(), "segment_id": [s],
                                    "source": pa.array([t]).dictionary_encode()}, schema=schema))


@pytest.mark.parametrize("row_groups", [False, True])
def test_dictionary_encoded_text_column_is_profiled_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            row_groups: bool) -> None:
    """Was: [D111] ... column 'source': expected text, found Categorical; choose the text column with --text-col."""
    src = tmp_path / "cat.parquet"
    _write_dictionary_parquet(src, row_groups)
    plain = tmp_path / "plain.parquet"
    pl.DataFrame({"document_id": DOCS, "segment_id": SEGS, "source": TEXTS}).write_parquet(plain)
    assert main(["profile", str(plain), "-o", str(tmp_path / "plain.csv"), "-q"]) == 0
    capsys.readouterr()
    assert main(["profile", str(src), "-o", str(tmp_path / "cat.csv"), "-q"]) == 0, capsys.readouterr().err
    got, want = pl.read_csv(tmp_path / "cat.csv"), pl.read_csv(tmp_path / "plain.csv")
    assert got.equals(want)
    assert got["source"].to_list() == TEXTS
    capsys.readouterr()
    assert main(["explain", str(src), "--document", "d1", "--segment", "1"]) == 0
    assert "DDP = 1 sentence(s)" in capsys.readouterr().out


def test_pandas_category_text_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pd = pytest.importorskip("pandas")
    src = tmp_path / "pd.parquet"
    pd.DataFrame({"document_id": DOCS, "segment_id": SEGS, "source": pd.Categorical(TEXTS)}).to_parquet(src)
    assert main(["profile", str(src), "-o", str(tmp_path / "o.jsonl"), "-q"]) == 0, capsys.readouterr().err
    out = pl.read_ndjson(tmp_path / "o.jsonl")
    assert out["source"].to_list() == TEXTS and out["ddp"].to_list() == [1, 1, 0]


# ---------------------------------------------------------------- .docs lines with a third field


@pytest.mark.parametrize("reader", ["lines", "wmt24"])
def test_docs_line_with_a_third_field_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 reader: str) -> None:
    """Was: exit 0 with the document id 'dA<TAB>x' (the line's 2nd and 3rd fields), silently mis-keyed."""
    canary = reader == "wmt24"
    (tmp_path / "s.txt").write_text(("CANARY GUID 1\n" if canary else "") + "John came.\nHe left.\nThe cat sat.\n")
    (tmp_path / "s.docs").write_text(("canary\tcanary\n" if canary else "") + "news\tdA\nnews\tdA\tx\nlit\tdB\n")
    out = tmp_path / "o.csv"
    assert main(["profile", str(tmp_path / "s.txt"), "--reader", reader, "--docs", str(tmp_path / "s.docs"),
                 "-o", str(out), "-q"]) == 3
    err = _err_line(capsys)
    assert "[D604]" in err and f"s.docs, line {3 if canary else 2}" in err and "news\\tdA\\tx" in err
    assert not out.exists()


def test_docs_line_with_a_trailing_tab_still_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.txt").write_text("John came.\nHe left.\n")
    (tmp_path / "s.docs").write_text("news\tdA\t\nnews\tdA\n")
    out = tmp_path / "o.csv"
    assert main(["profile", str(tmp_path / "s.txt"), "--reader", "lines", "-o", str(out), "-q"]) == 0
    assert pl.read_csv(out)["document_id"].to_list() == ["dA", "dA"]


# ---------------------------------------------------------------- blank lines and empty paragraphs


@pytest.mark.parametrize("command", ["profile", "explain"])
def test_blank_line_of_a_wmt24_source_names_its_file_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          command: str) -> None:
    """Was: '[D111] s_source.txt, row 2, column 'source': ...': row 2 of the reader's table (the canary
    dropped), a column the file does not have; the blank line is line 3 of the file."""
    (tmp_path / "s_source.txt").write_text("CANARY GUID 1\nJohn came.\n\nThe cat sat.\n")
    (tmp_path / "s.docs").write_text("canary\tcanary\nnews\tdA\nnews\tdA\nlit\tdB\n")
    argv = [command, str(tmp_path / "s_source.txt"), "--reader", "wmt24"]
    argv += ["-o", str(tmp_path / "o.csv"), "-q"] if command == "profile" else ["--document", "dA", "--segment", "0"]
    assert main(argv) == 3
    err = _err_line(capsys)
    assert "[D111]" in err and "s_source.txt, line 3:" in err and "empty source text" in err
    assert "document 'dA', segment 1" in err and "row 2" not in err and "column 'source'" not in err
    assert not (tmp_path / "o.csv").exists()


def test_blank_line_of_a_lines_source_in_a_later_chunk(tmp_path: Path) -> None:
    from ddpcore.errors import DDPDataError
    from ddpcore.io.sources import stage_input
    from ddpcore.schema import SegmentColumns

    lines = [f"Line {i}." for i in range(7)]
    lines[5] = "   "
    (tmp_path / "s.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "s.docs").write_text("".join(f"d{i // 3}\n" for i in range(7)))
    with pytest.raises(DDPDataError) as exc:
        stage_input(tmp_path / "s.txt", SegmentColumns(), tmp_path / "w", chunk_rows=2, reader="lines",
                    docs=tmp_path / "s.docs")
    assert exc.value.code == "D111" and "s.txt, line 6:" in str(exc.value) and "document 'd1', segment 2" in str(exc.value)


@pytest.mark.parametrize("text,segment", [("A.\n\n\n\nB.", 1), ("A.\n\nB.\n\n", 2), ("\n\nA.", 0)])
def test_empty_wmt25_paragraph_names_the_document_row_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                text: str, segment: int) -> None:
    """Was: '[D111] d.jsonl, row 4, column 'source': ...': row 4 of the paragraphs table, in a file of 2 rows
    with no column 'source'."""
    rows = [{"doc_id": "ok", "domain": "news", "src_text": "Fine.\n\nAlso fine."},
            {"doc_id": "bad", "domain": "news", "src_text": text}]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "o.csv"
    assert main(["profile", str(tmp_path / "d.jsonl"), "--reader", "wmt25", "-o", str(out), "-q"]) == 3
    err = _err_line(capsys)
    assert "[D111]" in err and "d.jsonl, row 2, field src_text:" in err and "empty source text" in err
    assert f"document 'bad', segment {segment}" in err and "column 'source'" not in err
    assert not out.exists()


def test_empty_wmt25_paragraph_in_a_later_chunk_names_its_row(tmp_path: Path, monkeypatch) -> None:
    import ddpcore.io.tables as T
    from ddpcore.errors import DDPDataError
    from ddpcore.io.sources import stage_input
    from ddpcore.schema import SegmentColumns

    monkeypatch.setattr(T, "JSONL_CHUNK_BYTES", 64)  # about one document per chunk
    rows = [{"doc_id": f"d{i}", "src_text": "One.\n\nTwo." if i != 4 else "One.\n\n\n\nTwo."} for i in range(6)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DDPDataError) as exc:
        stage_input(tmp_path / "d.jsonl", SegmentColumns(), tmp_path / "w", reader="wmt25")
    assert exc.value.code == "D111" and "d.jsonl, row 5, field src_text:" in str(exc.value)
    assert "document 'd4', segment 1" in str(exc.value)


# ---------------------------------------------------------------- a CSV/TSV header naming a column twice


@pytest.mark.parametrize("name,sep", [("x.csv", ","), ("x.tsv", "\t"), ("x.csv.gz", ",")])
@pytest.mark.parametrize("command", ["profile", "explain"])
def test_header_naming_a_column_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                                 sep: str, command: str) -> None:
    """Was: exit 0, the first 'source' column profiled and the second carried as 'source_duplicated_0'."""
    import gzip

    body = sep.join(["document_id", "segment_id", "source", "source"]) + "\n" + sep.join(["d1", "0", "A b.", "C d."]) + "\n"
    src = tmp_path / name
    src.write_bytes(gzip.compress(body.encode()) if name.endswith(".gz") else body.encode())
    out = tmp_path / "o.csv"
    argv = [command, str(src)] + (["-o", str(out), "-q"] if command == "profile" else ["--document", "d1",
                                                                                       "--segment", "0"])
    assert main(argv) == 3
    err = _err_line(capsys)
    assert "[D103]" in err and f"{name}: line 1: the header names the column 'source' twice (fields 3 and 4)" in err
    assert not out.exists()


def test_unnamed_trailing_columns_still_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "x.csv"
    src.write_text("document_id,segment_id,source,,\nd1,0,A b.,,\n")
    assert main(["profile", str(src), "-o", str(tmp_path / "o.jsonl"), "-q"]) == 0, capsys.readouterr().err


# ---------------------------------------------------------------- JSON Lines: one JSON type per column


MIXED = [  # (rows, column, line): the line where the column's JSON type changes
    ([("d1", 2, "He left."), ("d1", 1, "John came."), ("d1", "intro", "It rained.")], "segment_id", 3),
    ([("d1", 0, "A b."), ("d1", "1", "C d.")], "segment_id", 2),
    ([("d1", 0, "A b."), ("d1", 1, 5)], "source", 2),
    ([(1, 0, "A b."), ("d2", 0, "C d.")], "document_id", 2),
    ([("d1", 0, "A b."), ("d1", 1, True)], "source", 2),
]


@pytest.mark.parametrize("rows,column,line", MIXED)
@pytest.mark.parametrize("command", ["profile", "explain"])
def test_jsonl_column_of_mixed_json_types_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     rows: list, column: str, line: int, command: str) -> None:
    """Was: exit 0 with the numbers turned into text (segment ids 2, 1, "intro" read as text keep input
    order, where 2, 1 sort numerically: a silently different DDP); in a file of more than one 16 MiB
    block the same values were D103."""
    src = tmp_path / "x.jsonl"
    src.write_text("".join(json.dumps(dict(zip(("document_id", "segment_id", "source"), r))) + "\n" for r in rows))
    out = tmp_path / "o.csv"
    argv = [command, str(src)] + (["-o", str(out), "-q"] if command == "profile" else ["--document", "d1",
                                                                                       "--segment", "0"])
    assert main(argv) == 3
    err = _err_line(capsys)
    assert "[D103]" in err and f"x.jsonl: line {line}, column '{column}'" in err and "same type" in err
    assert not out.exists()


def test_jsonl_quoted_numbers_and_one_type_per_column_still_read(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"document_id": "7", "segment_id": "1", "source": "2024", "n": 1},
            {"document_id": "7", "segment_id": "0", "source": "John came.", "n": 1.5, "note": None},
            {"document_id": "8", "segment_id": "0", "source": "true", "n": None}]
    src = tmp_path / "x.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    assert main(["profile", str(src), "-o", str(tmp_path / "o.jsonl"), "-q"]) == 0, capsys.readouterr().err
    out = pl.read_ndjson(tmp_path / "o.jsonl")
    assert out["source"].to_list() == ["2024", "John came.", "true"] and out["segment_id"].to_list() == ["1", "0", "0"]


# ---------------------------------------------------------------- JSON: a lone surrogate escape is not text


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
@pytest.mark.parametrize("command", ["profile", "explain"])
def test_lone_surrogate_escape_is_refused_naming_line_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 suffix: str, command: str) -> None:
    """Was (profile): exit 0 with the escape read as a NUL character (the text silently changed);
    (explain): '[D103] x.jsonl: rows have inconsistent types ('utf-8' codec can't encode ...)', no line."""
    good = '{"document_id": "d1", "segment_id": 0, "source": "Hi \\ud83d\\ude00 there."}'
    bad = '{"document_id": "d1", "segment_id": 1, "source": "He \\ud83d left."}'
    src = tmp_path / f"x{suffix}"
    src.write_text(f"{good}\n{bad}\n" if suffix == ".jsonl" else f"[{good},\n{bad}]\n")
    out = tmp_path / "o.csv"
    argv = [command, str(src)] + (["-o", str(out), "-q"] if command == "profile" else ["--document", "d1",
                                                                                       "--segment", "0"])
    assert main(argv) == 3
    err = _err_line(capsys)
    where = "line 2" if suffix == ".jsonl" else "array element 2"
    assert "[D104]" in err and f"x{suffix}: {where}, column 'source': the escape \\ud83d" in err
    assert not out.exists()


def test_surrogate_pairs_and_nul_escapes_still_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"document_id": "d1", "segment_id": 0, "source": "Hi \U0001F600 there. A\x00b."}]
    src = tmp_path / "x.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))  # ensure_ascii: \ud83d\ude00 and \u0000
    assert main(["profile", str(src), "-o", str(tmp_path / "o.jsonl"), "-q"]) == 0, capsys.readouterr().err
    assert pl.read_ndjson(tmp_path / "o.jsonl")["source"].to_list() == [rows[0]["source"]]


# ---------------------------------------------------------------- a profile given as the input


def test_profiling_a_profile_replaces_its_computed_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Was: [D999] internal error: DuplicateError: projections contained duplicate output name 'ddp_certified'
    (a profile, or a select/sample output carrying one, given to ddp profile again)."""
    src = tmp_path / "x.jsonl"
    src.write_text("".join(json.dumps({"document_id": d, "segment_id": s, "source": t, "genre": "g"}) + "\n"
                           for d, s, t in zip(DOCS, SEGS, TEXTS)))
    first = tmp_path / "p.csv"
    assert main(["profile", str(src), "-o", str(first), "-q"]) == 0
    capsys.readouterr()
    again = tmp_path / "p2.csv"
    assert main(["profile", str(first), "-o", str(again), "-q"]) == 0, capsys.readouterr().err
    err = capsys.readouterr().err
    assert "p.csv already has the column(s) n_sentences, n_tokens, n_anchors, ddp, ddp_certified, first_sentence" in err
    a, b = pl.read_csv(first), pl.read_csv(again)
    assert a.columns == b.columns and a.equals(b)


# ---------------------------------------------------------------- JSON Lines: only "\n" ends a line


@pytest.mark.parametrize("nested", [False, True])
def test_jsonl_text_with_unescaped_line_separators(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   nested: bool) -> None:
    """Was: '[D103] x.jsonl: line 1, column 50: invalid JSON (Unterminated string ...)' from ddp explain (and from
    ddp profile where a block is parsed line by line, e.g. with a nested column) on a valid file whose text
    holds U+2028 or U+0085 unescaped (json.dumps(ensure_ascii=False) writes them so)."""
    rows = [{"document_id": "d1", "segment_id": 0, "source": "John went home.\u2028He was tired."},
            {"document_id": "d1", "segment_id": 1, "source": "Mary\u0085 smiled.\u2029She left."}]
    if nested:
        for r in rows:
            r["meta"] = {"k": [1]}
    src = tmp_path / "x.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "o.jsonl"
    assert main(["profile", str(src), "-o", str(out), "-q"]) == 0, capsys.readouterr().err
    assert pl.read_ndjson(out)["source"].to_list() == [r["source"] for r in rows]
    capsys.readouterr()
    assert main(["explain", str(src), "--document", "d1", "--segment", "1"]) == 0, capsys.readouterr().err
    assert main(["explain", str(out), "--document", "d1", "--segment", "1"]) == 0, capsys.readouterr().err


# ---------------------------------------------------------------- UTF-16 without a byte-order mark


@pytest.mark.parametrize("encoding,name", [("utf-16-le", "x.jsonl"), ("utf-16-be", "x.csv"), ("utf-16-le", "x.tsv.gz")])
def test_utf16_without_bom_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str], encoding: str,
                                    name: str) -> None:
    """Was: '[D730] x.jsonl: byte offset 1: a NUL byte, so this is binary data, not a text table' (the BOM-less
    UTF-16 that Windows tools write; with a BOM it was already D731 'UTF-16 text')."""
    import gzip

    sep = "\t" if ".tsv" in name else ","
    if name.endswith(".jsonl"):
        body = "".join(json.dumps({"document_id": d, "segment_id": s, "source": t}) + "\n"
                       for d, s, t in zip(DOCS, SEGS, TEXTS))
    else:
        body = sep.join(["document_id", "segment_id", "source"]) + "\r\n" + "".join(
            sep.join([d, str(s), t]) + "\r\n" for d, s, t in zip(DOCS, SEGS, TEXTS))
    data = body.encode(encoding)
    src = tmp_path / name
    src.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    out = tmp_path / "o.csv"
    assert main(["profile", str(src), "-o", str(out), "-q"]) == 3
    err = _err_line(capsys)
    order = "little" if encoding.endswith("le") else "big"
    assert "[D731]" in err and f"{name}: byte offset 0: the file is UTF-16 ({order}-endian) text without a byte-order mark" in err
    assert f"iconv -f utf-16{order[0]}e -t utf-8" in err and not out.exists()


# ---------------------------------------------------------------- two CSV files joined with their headers


@pytest.mark.parametrize("sep,suffix", [(",", ".csv"), ("\t", ".tsv")])
@pytest.mark.parametrize("command", ["profile", "explain"])
def test_a_repeated_header_row_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], sep: str, suffix: str,
                                          command: str) -> None:
    """Was: exit 0 with an extra segment 'source' of document 'document_id', and the segment ids read as text
    (their numeric order lost: 'He left.' (2) parsed before 'John came.' (1), a different DDP)."""
    head = sep.join(["document_id", "segment_id", "source"]) + "\n"
    a = head + sep.join(["d1", "2", "He left."]) + "\n" + sep.join(["d1", "1", "John came."]) + "\n"
    b = head + sep.join(["d2", "0", "It rained."]) + "\n"
    src = tmp_path / f"x{suffix}"
    src.write_text(a + b)
    out = tmp_path / "o.csv"
    argv = [command, str(src)] + (["-o", str(out), "-q"] if command == "profile" else ["--document", "d1",
                                                                                       "--segment", "1"])
    assert main(argv) == 3
    err = _err_line(capsys)
    assert "[D103]" in err and f"x{suffix}, row 3: the row repeats the header" in err
    assert not out.exists()


def test_header_words_as_values_are_not_a_header_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "x.csv"
    src.write_text("document_id,segment_id,source\ndocument_id,segment_id,The source.\nd1,source,source\n")
    assert main(["profile", str(src), "-o", str(tmp_path / "o.csv"), "-q"]) == 0, capsys.readouterr().err


# ---------------------------------------------------------------- --domain-col naming no column


def test_domain_col_differing_in_case_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Was: exit 0 and nothing on stderr, every segment without a domain (the per-domain summary one '(none)'
    row) because --domain-col genre named no column of a file whose header says 'Genre'."""
    src = tmp_path / "x.csv"
    src.write_text("document_id,segment_id,source,Genre\nd1,0,John came.,news\nd2,0,Mary left.,lit\n")
    assert main(["profile", str(src), "-o", str(tmp_path / "o.csv"), "--domain-col", "genre", "-q"]) == 0
    err = capsys.readouterr().err
    assert "--domain-col genre: no such column in" in err and "did you mean 'Genre'?" in err
    assert main(["profile", str(src), "-o", str(tmp_path / "o2.csv"), "--domain-col", "Genre", "-q"]) == 0
    out = capsys.readouterr()
    assert "--domain-col" not in out.err and "news" in out.out and "lit" in out.out
    assert main(["profile", str(src), "-o", str(tmp_path / "o3.csv"), "-q"]) == 0  # the default: optional
    assert "--domain-col" not in capsys.readouterr().err


def test_blank_line_of_an_mtme_source_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "wmt23"
    (root / "sources").mkdir(parents=True)
    (root / "documents").mkdir()
    (root / "sources" / "en-de.txt").write_text("John came.\nHe sat.\n\nThe cat sat.\n")
    (root / "documents" / "en-de.docs").write_text("news dA\nnews dA\nnews dA\nlit dB\n")
    assert main(["profile", str(root), "--reader", "mtme", "-o", str(tmp_path / "o.csv"), "-q"]) == 3
    err = _err_line(capsys)
    assert "[D111]" in err and "wmt23, line 3: empty source text (document 'dA', segment 2)" in err
