"""Tests that kill the I/O-convention mutants the suite let through (helper 59).

Mutants were planted one at a time in a private copy of the tree, in the output-path checks
(:mod:`ddpcore.io.outputs`), the atomic writes (:mod:`ddpcore.io.tables`), the sidecars and signatures
(:mod:`ddpcore.io.sidecars`, :mod:`ddpcore.signature`, the resume journal), the profile re-readers
(:mod:`ddpcore.io.profiles`) and the input readers (line/row numbers, BOM, CRLF, gzip). Each test here fails
on the mutant named in its docstring and passes on the real code. Expected values come from the convention
as documented (docs/cli.md, docs/errors.md, the module docstrings) or from a slow obvious computation in the
test, never from the code under test.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest

from ddpcore.errors import DDPDataError, DDPUsageError


def _code(exc_info: pytest.ExceptionInfo[BaseException]) -> str:
    return str(exc_info.value).split("]")[0].lstrip("[")


# ------------------------------------------------------------------ output paths (io/outputs.py)


def test_an_unwritable_parent_is_d131_whatever_user_runs_the_tests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                     ) -> None:
    """Mutant: the D131 check of check_outputs (and of check_place) removed. The existing test is skipped as
    root (permission bits do not bind root), so the folder's refusal is given through os.access here: the check
    is documented as 'the parent folder is not writable' (os.access W_OK|X_OK)."""
    from ddpcore.io.outputs import check_outputs, check_place

    ro = tmp_path / "ro"
    ro.mkdir()
    real = os.access

    def access(path: object, mode: int, *a: object, **k: object) -> bool:
        if Path(os.fspath(path)) == ro and mode & os.W_OK:  # type: ignore[arg-type]
            return False
        return real(path, mode, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)
    with pytest.raises(DDPUsageError) as exc:
        check_outputs([("-o", ro / "a.csv")])
    assert _code(exc) == "D131" and "not writable" in str(exc.value)
    with pytest.raises(DDPUsageError) as exc:
        check_place("the documents table", ro / "a.docs")
    assert _code(exc) == "D131"
    with pytest.raises(DDPUsageError) as exc:  # a folder to be made below it: the nearest existing one counts
        check_place("--outputs-to", ro / "new" / "x.txt", make_parents=True)
    assert _code(exc) == "D131"
    check_outputs([("-o", tmp_path / "a.csv")])  # the writable folder beside it is fine


def test_two_outputs_that_are_hard_links_of_one_file_are_d134(tmp_path: Path) -> None:
    """Mutant: D134 compared resolved paths only, not (device, inode): two existing names of one file (a hard
    link) would be written one over the other."""
    from ddpcore.io.outputs import check_outputs

    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("x\n1\n")
    os.link(a, b)
    assert os.stat(a).st_ino == os.stat(b).st_ino  # one file, two names (the premise)
    with pytest.raises(DDPUsageError) as exc:
        check_outputs([("-o", a), ("--anchors", b)])
    assert _code(exc) == "D134" and "the same file" in str(exc.value)


def test_two_outputs_through_a_symlinked_folder_are_d134_before_either_exists(tmp_path: Path) -> None:
    """Mutant: file_identity compared absolute paths without resolving symlinks. Neither output exists yet (no
    inode to compare), so only the resolved path tells that ``link/o.csv`` and ``real/o.csv`` are one file."""
    from ddpcore.io.outputs import check_outputs

    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    with pytest.raises(DDPUsageError) as exc:
        check_outputs([("-o", tmp_path / "real" / "o.csv"), ("--sentences", tmp_path / "link" / "o.csv")])
    assert _code(exc) == "D134"
    # a dangling symlink output naming the other output's (not yet written) file
    (tmp_path / "alias.csv").symlink_to(tmp_path / "target.csv")
    with pytest.raises(DDPUsageError) as exc:
        check_outputs([("-o", tmp_path / "target.csv"), ("--anchors", tmp_path / "alias.csv")])
    assert _code(exc) == "D134"


def test_same_file_sees_a_hard_link_and_validate_plot_refuses_one_of_the_gold_file(tmp_path: Path) -> None:
    """Mutant: same_file compared resolved paths only. ``ddp validate --plot`` checks its plot against the gold
    inputs with it: a plot name that is a hard link of a gold file would overwrite the gold data."""
    from ddpcore.cli.validate import check_validate_outputs
    from ddpcore.io.outputs import file_identity, same_file

    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"a": 1}\n')
    plot = tmp_path / "fig.png"
    os.link(gold, plot)
    assert same_file(file_identity(gold), file_identity(plot))
    assert not same_file(file_identity(gold), file_identity(tmp_path / "other.png"))
    with pytest.raises(DDPUsageError) as exc:
        check_validate_outputs([str(gold)], None, str(plot))
    assert _code(exc) == "D133"


# ------------------------------------------------------------------ atomic writes (io/tables.py, OutputSet)


def test_outputs_get_the_permissions_open_would_give(tmp_path: Path) -> None:
    """Mutants: the chmod after mkstemp dropped (atomic_path, OutputSet.commit): every output and sidecar would
    be 0600, unreadable by the group a shared corpus folder is for. Expected: 0o666 & ~umask, what open() and a
    shell redirection give (with umask 022: 0644)."""
    from ddpcore.io.outputs import OutputSet
    from ddpcore.io.tables import write_tables_atomic

    old = os.umask(0o022)
    try:
        df = pl.DataFrame({"a": [1, 2]})
        write_tables_atomic([(df, tmp_path / "t.parquet"), (df, tmp_path / "t.csv")], metadata={"k": "v"},
                            sidecar=json.dumps({"method": "x"}))
        with open(tmp_path / "plain.txt", "w") as fh:  # what a normal open() gives (the reference)
            fh.write("x")
        want = os.stat(tmp_path / "plain.txt").st_mode & 0o777
        assert want == 0o644
        for name in ("t.parquet", "t.csv", "t.csv.signature.json"):
            assert os.stat(tmp_path / name).st_mode & 0o777 == want, name
        outs = OutputSet(tmp_path / ".journal")
        tmp = outs.temp(tmp_path / "set.csv")
        tmp.write_text("a\n1\n")
        outs.commit()
        assert os.stat(tmp_path / "set.csv").st_mode & 0o777 == want
    finally:
        os.umask(old)


def test_write_tables_atomic_refuses_a_gzipped_parquet_name_itself(tmp_path: Path) -> None:
    """Mutant: write_tables_atomic's own D136 check removed (an API caller that skipped check_outputs would get
    a Parquet file named .gz that no reader opens as Parquet, since .gz names a gzipped text format)."""
    from ddpcore.io.tables import write_tables_atomic

    with pytest.raises(DDPUsageError) as exc:
        write_tables_atomic([(pl.DataFrame({"a": [1]}), tmp_path / "t.parquet.gz")])
    assert _code(exc) == "D136"
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ reading a profile back (io/profiles.py)


def test_column_names_given_win_over_the_recorded_ones_which_win_over_the_defaults() -> None:
    """Mutant: profile_columns let the signature's recorded document column override the one given (an
    option such as ``ddp agree --document-col``, or ``ddpcore.summarize(document_col=)``). The documented order
    (its docstring): given, then recorded, then the defaults (document_id, segment_id, source, domain)."""
    from ddpcore.io.profiles import profile_columns

    sig = {"columns": {"document": "doc", "segment": "seg", "text": "txt", "domain": "genre"}}
    given = profile_columns(sig, document="D", segment="S", text="T", domain="G")
    assert (given.document, given.segment, given.text, given.domain) == ("D", "S", "T", "G")
    rec = profile_columns(sig)
    assert (rec.document, rec.segment, rec.text, rec.domain) == ("doc", "seg", "txt", "genre")
    none = profile_columns({"columns": {"document": "", "segment": 3}})  # empty text, not text: not names
    assert (none.document, none.segment, none.text, none.domain) == ("document_id", "segment_id", "source", "domain")


@pytest.mark.parametrize("key", ["certify", "reader"])
def test_load_signature_refuses_a_certify_or_reader_entry_that_is_not_an_object(tmp_path: Path, key: str) -> None:
    """Mutant: the strict reader checked only 'reader' (not 'certify'). Its docstring: 'a reader or certify
    entry that is not an object' is D103 naming the file; explain/agree/report would otherwise read
    sig['certify'].get(...) of a string (D999)."""
    from ddpcore.io.profiles import load_signature

    data = tmp_path / "p.csv"
    data.write_text("document_id,segment_id,ddp\nd,0,1\n")
    side = tmp_path / "p.csv.signature.json"
    side.write_text(json.dumps({"rules": "paper", key: "paper-v2"}))
    with pytest.raises(DDPDataError) as exc:
        load_signature(data)
    assert _code(exc) == "D103" and str(side) in str(exc.value) and repr(key) in str(exc.value)
    side.write_text(json.dumps({"rules": "paper", key: {"name": "x"}}))
    assert load_signature(data) == ({"rules": "paper", key: {"name": "x"}}, str(side))


# ------------------------------------------------------------------ readers: line numbers, BOM (io/tables.py, io/readers.py)


def test_invalid_utf8_names_its_line_and_byte_column(tmp_path: Path) -> None:
    """Mutant: decode_utf8's byte column one too small. 'x,' is two bytes, so the bad byte 0xe9 is byte column
    3 (1-based) of line 2; in a block read from the middle of a file the line counts on from the block's first
    line."""
    from ddpcore.io.tables import decode_utf8, read_table

    p = tmp_path / "bad.csv"
    p.write_bytes(b"a,b\nx,\xe9z\n")
    with pytest.raises(DDPDataError) as exc:
        read_table(p)
    assert _code(exc) == "D104" and "line 2, byte column 3: invalid UTF-8 byte 0xe9" in str(exc.value)
    with pytest.raises(DDPDataError) as exc:  # first byte of a line: column 1
        decode_utf8(b"ok\n\xffrest\n", p, first_line=41)
    assert "line 42, byte column 1:" in str(exc.value)


def test_line_numbers_count_on_across_blocks(tmp_path: Path) -> None:
    """Mutants: the line counters of iter_line_blocks and iter_jsonl_chunks off by one per block. Read with
    blocks of a few bytes, a bad byte on line 7 of a text file and a bad JSON record on line 7 of a JSON Lines
    file must still be named as line 7 (counted by hand below: six good lines come first)."""
    from ddpcore.io.readers import iter_line_blocks
    from ddpcore.io.tables import iter_jsonl_chunks

    txt = tmp_path / "s.txt"
    txt.write_bytes(b"".join(b"line %d\n" % i for i in range(1, 7)) + b"bad \xff\n" + b"line 8\n")
    with pytest.raises(DDPDataError) as exc:
        for _ in iter_line_blocks(txt, block_bytes=10):
            pass
    assert "line 7, byte column 5:" in str(exc.value)
    # and the lines themselves, in order and whole, whatever the block size
    good = tmp_path / "g.txt"
    good.write_bytes(b"".join(b"line %d\r\n" % i for i in range(1, 9)))
    got = [x for s in iter_line_blocks(good, block_bytes=7) for x in s.to_list()]
    assert got == [f"line {i}" for i in range(1, 9)]  # the CR of CRLF removed too
    js = tmp_path / "r.jsonl"
    js.write_text("".join(json.dumps({"a": i}) + "\n" for i in range(1, 7)) + '{"a": 7,}\n{"a": 8}\n')
    with pytest.raises(DDPDataError) as exc:
        for _ in iter_jsonl_chunks(js, chunk_bytes=12):
            pass
    assert _code(exc) == "D103" and "line 7," in str(exc.value)


def test_a_csv_with_a_bom_and_a_quoted_first_field_streams(tmp_path: Path) -> None:
    """Mutant: DelimitedScan did not skip the UTF-8 byte-order mark, so the streaming reader (a corpus run's
    iter_csv_chunks) took the '"' after it for a quote inside an unquoted field (D103) while the whole-file reader
    read the same file. Excel's 'CSV UTF-8' writes a BOM; the values are the ones written."""
    from ddpcore.io.tables import iter_csv_chunks, read_table

    p = tmp_path / "bom.csv"
    p.write_bytes(b'\xef\xbb\xbf"document_id",segment_id,source\n"d, 1",0,"A ""b""."\n')
    want = {"document_id": ["d, 1"], "segment_id": [0], "source": ['A "b".']}
    streamed = pl.concat([df for df, _ in iter_csv_chunks(p, "csv")])
    assert streamed.to_dict(as_series=False) == want
    assert read_table(p).to_dict(as_series=False) == want


def test_an_upper_case_gz_name_is_read_decompressed(tmp_path: Path) -> None:
    """Mutant: read_bytes compared the suffix case-sensitively, so ``T.CSV.GZ`` (the format is told from the
    name in any case, detect_format) was read as its compressed bytes (D730, a NUL byte). The expected frame is
    the one written, read back through gzip by hand."""
    import gzip

    from ddpcore.io.tables import read_table

    body = b"document_id,segment_id,source\nd,0,A.\nd,1,B.\n"
    p = tmp_path / "T.CSV.GZ"
    p.write_bytes(gzip.compress(body))
    assert gzip.decompress(p.read_bytes()) == body
    assert read_table(p).to_dict(as_series=False) == {"document_id": ["d", "d"], "segment_id": [0, 1],
                                                      "source": ["A.", "B."]}


# ------------------------------------------------------------------ more output-path and atomic-write mutants


def test_stale_temp_removal_leaves_a_symlink_of_that_name(tmp_path: Path) -> None:
    """Mutant: remove_stale_temps followed symlinks (entry.is_file()), so a symlink named like a temporary of
    the output was deleted. Its docstring: 'not other names, not folders, not symlinks'."""
    from ddpcore.io.tables import remove_stale_temps

    (tmp_path / "elsewhere").write_text("keep me")
    link = tmp_path / ".o.csv.abcd1234.tmp"
    link.symlink_to(tmp_path / "elsewhere")
    stale = tmp_path / ".o.csv.zzzz9999.tmp"
    stale.write_text("")
    assert remove_stale_temps(tmp_path / "o.csv") == [stale]
    assert link.is_symlink() and (tmp_path / "elsewhere").read_text() == "keep me"


def test_a_stamp_is_compared_with_the_span_it_records(tmp_path: Path) -> None:
    """Mutant: stamp_difference hashed STAMP_SPAN bytes whatever span the sidecar records. A stamp taken with
    another span (a hand-made sidecar, another build's) must be compared over that span: the file is unchanged,
    so no mismatch; changed in its first 4 bytes, the 'first 4 bytes' differ. Hashes by hashlib here."""
    import hashlib

    from ddpcore.io.sidecars import read_sidecar

    data = tmp_path / "t.csv"
    body = b"a,b\n" + b"".join(b"%d,%d\n" % (i, i) for i in range(100))
    data.write_bytes(body)
    stamp = {"bytes": len(body), "span": 4, "head_sha256": hashlib.sha256(body[:4]).hexdigest(),
             "tail_sha256": hashlib.sha256(body[-4:]).hexdigest()}
    (tmp_path / "t.csv.signature.json").write_text(json.dumps({"rules": "paper", "data": stamp}))
    found = read_sidecar(data)
    assert found is not None and found.mismatch is None and found.signature == {"rules": "paper"}
    data.write_bytes(b"x" + body[1:])
    found = read_sidecar(data)
    assert found is not None and "the SHA-256 of its first 4 bytes differs" in str(found.mismatch)


def test_resume_notices_another_sentence_unit_and_distance() -> None:
    """Mutants: 'sentence_unit' (or 'distance') dropped from the journal's settings: a resumed run with another
    setting would mix batches computed two ways in one output. Each setting that differs is D170 naming it."""
    from ddpcore.engines.journal import compare_settings, journal_settings
    from ddpcore.engines.local import Settings
    from ddpcore.schema import SegmentColumns

    cols = SegmentColumns()
    base = journal_settings(Settings(), cols, None, 1000, {"path": "x"})
    for changed, flag in ((Settings(sentence_unit="segment"), "sentence unit"), (Settings(distance="nearest"), "--distance")):
        other = journal_settings(changed, cols, None, 1000, {"path": "x"})
        with pytest.raises(DDPUsageError) as exc:
            compare_settings(base, other, "j.json")
        assert _code(exc) == "D170" and flag in str(exc.value)
    compare_settings(base, journal_settings(Settings(), cols, None, 1000, {"path": "x"}), "j.json")  # same: fine


def test_stratify_scan_keeps_decimal_ids_as_written(tmp_path: Path) -> None:
    """Mutant: scan_profile read a CSV profile without its id columns as keys, so the document ids '2.5' and
    '2.50' (two documents) were read as one number, 2.5 (as read_profile_table, its docstring: ids stay
    distinct with or without the sidecar)."""
    from ddpcore.io.profiles import scan_profile

    p = tmp_path / "p.csv"
    p.write_text("document_id,segment_id,ddp\n2.5,0,1\n2.50,0,2\n1e3,0,0\n")
    scan = scan_profile(p)
    got = scan.frame.collect()
    assert got["document_id"].to_list() == ["2.5", "2.50", "1e3"]
    assert got["document_id"].n_unique() == 3


def test_json_safe_turns_numpy_scalars_into_python_values() -> None:
    """Mutant: json_safe left numpy scalars as they were: an np.int64 setting (a seed, an n from a numpy
    computation) would make json.dumps of the signature fail (D999 at the end of a run), and a float32 NaN
    would stay NaN (not valid JSON) instead of null. Expected values: the Python values written by hand."""
    import math

    import numpy as np

    from ddpcore.signature import json_safe, signature

    got = json_safe({"n": np.int64(3), "x": np.float32(0.5), "nan": np.float32("nan"), "ok": np.bool_(True),
                     "inf": np.float32("-inf"), "arr": np.array([1, 2])})
    assert got == {"n": 3, "x": 0.5, "nan": None, "ok": True, "inf": "-inf", "arr": [1, 2]}
    assert type(got["n"]) is int and type(got["x"]) is float and type(got["ok"]) is bool
    text = json.dumps(signature("m", seed=np.int64(7), share=np.float32(math.nan)), allow_nan=False)
    assert json.loads(text)["seed"] == 7 and json.loads(text)["share"] is None


def test_a_txt_document_with_classic_mac_line_ends_splits_at_them(tmp_path: Path) -> None:
    """Mutant: iter_txt_folder turned CRLF into LF but left a lone CR, so a document with classic Mac line ends
    (CR alone) was one paragraph holding CRs instead of its paragraphs (a blank line = CR CR). Expected: the
    paragraphs written by hand, the same as the same text with LF line ends."""
    from ddpcore.io.readers import iter_txt_folder
    from ddpcore.schema import SegmentColumns

    (tmp_path / "mac.txt").write_bytes(b"First line.\rSecond line.\r\rNext paragraph.\r")
    (tmp_path / "unix.txt").write_bytes(b"First line.\nSecond line.\n\nNext paragraph.\n")
    frames = {df["document_id"][0]: df["source"].to_list() for df in iter_txt_folder(tmp_path, SegmentColumns())}
    assert frames["mac"] == ["First line.\nSecond line.", "Next paragraph."]
    assert frames["unix"] == frames["mac"]


def test_a_staged_input_numbers_its_rows_across_chunks(tmp_path: Path) -> None:
    """Mutant: stage_input validated each chunk without its row offset: the rows of every chunk were numbered
    from 0 again (duplicate input rows in the id index), and an empty text in a later chunk was named as a row
    of the first. Expected: rows 0..5 in input order; the empty text of data row 5 (1-based, header not
    counted: counted by hand in the file below) named as row 5."""
    import numpy as np

    from ddpcore.io.sources import ROW, stage_input
    from ddpcore.schema import SegmentColumns

    good = tmp_path / "in.csv"
    good.write_text("document_id,segment_id,source\n" + "".join(f"d,{i},Text {i}.\n" for i in range(6)))
    st = stage_input(str(good), SegmentColumns(), None, chunk_rows=2)
    assert len(st.chunks) == 3 and st.ids[ROW].to_list() == list(range(6))
    assert st.read_rows(np.array([4, 5]))["source"].to_list() == ["Text 4.", "Text 5."]
    bad = tmp_path / "bad.csv"
    bad.write_text("document_id,segment_id,source\n" + "".join(f"d,{i},{'' if i == 4 else f'Text {i}.'}\n"
                                                               for i in range(6)))
    with pytest.raises(DDPDataError) as exc:
        stage_input(str(bad), SegmentColumns(), None, chunk_rows=2)
    assert _code(exc) == "D111" and ", row 5, column 'source'" in str(exc.value)
