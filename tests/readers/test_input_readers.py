"""Input readers of ``ddp profile`` (issue 9, sections 1-2): ``--reader wmt24|wmt25|lines``,
``.txt`` folders with ``--txt-mode``, the wrapped-text warning, the key convention shared with
the ESA/WMT24 score reader, and ``--documents``.

Hand-made fixtures are written into ``tmp_path``; the vendored ``tests/data/stats-real/
wmt24-genmt-mini`` set (see its SOURCE.md) gives the no-glue join to real ESA scores; tests
marked ``shared_data`` use the full WMT24/WMT25 files.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ddpcore.io.sources import iter_input_chunks, read_input, stage_input
from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.io.readers import default_docs, wrapped_width
from ddpcore.io.segments import ROW, SegmentColumns

REPO = Path(__file__).resolve().parents[2]
MINI = REPO / "tests" / "data" / "stats-real" / "wmt24-genmt-mini"
SHARED = REPO.parent / "shared" / "data"
BUNDLED = REPO / "src" / "ddpcore" / "data" / "wmt25_en_source.jsonl"
COLS = SegmentColumns()

WMT24_SRC = ("CANARY GUID 26b5c67b-0000\n"
             "Anna came home. She was tired.\nHer brother met her at the door.\nHe smiled.\n"
             "The cat slept.\nIt purred loudly.\n")
WMT24_DOCS = "canary\tcanary\nnews\tdocA\nnews\tdocA\nnews\tdocA\nsocial\tdocB\nsocial\tdocB\n"


def _wmt24(tmp_path: Path, src: str = WMT24_SRC, docs: str = WMT24_DOCS, name: str = "test_en_source") -> Path:
    (tmp_path / f"{name}.txt").write_text(src, encoding="utf-8")
    (tmp_path / "test_en.docs").write_text(docs, encoding="utf-8")
    return tmp_path / f"{name}.txt"


def _all(source, **kw) -> pl.DataFrame:  # type: ignore[no-untyped-def]
    return pl.concat([df for df, _ in iter_input_chunks(source, COLS, **kw)])


# ------------------------------------------------------------------------------------ wmt24


def test_wmt24_canary_positions_line_id(tmp_path):
    src = _wmt24(tmp_path)
    df = _all(src, reader="wmt24")
    assert df.columns == ["document_id", "segment_id", "source", "domain", "line_id"]
    assert df["document_id"].to_list() == ["docA"] * 3 + ["docB"] * 2
    assert df["segment_id"].to_list() == [0, 1, 2, 0, 1]
    assert df["line_id"].to_list() == [1, 2, 3, 4, 5]  # the canary is line 0 and is dropped
    assert df["domain"].to_list() == ["news"] * 3 + ["social"] * 2
    assert df["source"][0] == "Anna came home. She was tired."
    assert default_docs(src) == tmp_path / "test_en.docs"  # wmt24_en_source.txt -> wmt24_en.docs


def test_wmt24_chunks_carry_positions(tmp_path):
    src = _wmt24(tmp_path)
    whole = _all(src, reader="wmt24")
    for rows in (1, 2, 4):
        assert_frame_equal(_all(src, reader="wmt24", chunk_rows=rows), whole)
    st = stage_input(src, COLS, tmp_path / "work", reader="wmt24", chunk_rows=2)
    assert st.n_rows == 5 and st.ids[COLS.segment].to_list() == [0, 1, 2, 0, 1]
    assert st.read_rows(pl.Series([0, 4]).to_numpy())["line_id"].to_list() == [1, 5]


def test_wmt24_docs_mismatch_names_the_line(tmp_path):
    src = _wmt24(tmp_path, docs=WMT24_DOCS.rsplit("social", 1)[0])  # last .docs line missing
    with pytest.raises(DDPDataError, match=r"\[D603\].*test_en_source\.txt, line 6: no matching line in .*test_en\.docs"):
        _all(src, reader="wmt24")
    src = _wmt24(tmp_path, docs=WMT24_DOCS + "social\tdocB\n")
    with pytest.raises(DDPDataError, match=r"\[D603\].*test_en\.docs, line 7") as exc:
        _all(src, reader="wmt24", chunk_rows=2)
    assert "\n" not in str(exc.value)


def test_wmt24_bad_docs_line_and_missing_docs(tmp_path):
    src = _wmt24(tmp_path, docs=WMT24_DOCS.replace("news\tdocA\nnews", "news docA\nnews", 1))
    with pytest.raises(DDPDataError, match=r"\[D604\].*test_en\.docs, line 2: expected 'domain<TAB>document id'"):
        _all(src, reader="wmt24")
    (tmp_path / "test_en.docs").unlink()
    with pytest.raises(DDPDataError, match=r"\[D602\].*--docs"):
        _all(src, reader="wmt24")
    with pytest.raises(DDPUsageError, match=r"\[D601\]"):
        _all(tmp_path, reader="wmt24")
    with pytest.raises(DDPUsageError, match=r"\[D601\]"):
        _all(BUNDLED, reader="wmt25", docs=src)


# ------------------------------------------------------------------------------------ lines


def test_lines_reader_with_doc_id_only_docs(tmp_path):
    (tmp_path / "a.txt").write_text("One.\r\nTwo.\nThree.")  # CRLF and no final newline
    (tmp_path / "ids.docs").write_text("d1\nd1\nd2\n")
    df = _all(tmp_path / "a.txt", reader="lines", docs=tmp_path / "ids.docs")
    assert df["source"].to_list() == ["One.", "Two.", "Three."]
    assert df["segment_id"].to_list() == [0, 1, 0] and df["line_id"].to_list() == [0, 1, 2]
    assert df["domain"].null_count() == 3
    (tmp_path / "ids.docs").write_text("news\td1\nnews\td1\nx\td2\n")
    assert _all(tmp_path / "a.txt", reader="lines", docs=tmp_path / "ids.docs")["domain"].to_list() == [
        "news", "news", "x"]


# ------------------------------------------------------------------------------------ wmt25


def test_wmt25_blank_line_paragraphs(tmp_path):
    p = tmp_path / "docs.jsonl"
    rows = [{"doc_id": "d1", "domain": "news", "src_text": "Title\nLine two.\n\nSecond para. \n\nThird."},
            {"doc_id": "d2", "domain": "speech", "src_text": "Only one."}]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    df = _all(p, reader="wmt25")
    assert df["document_id"].to_list() == ["d1"] * 3 + ["d2"]
    assert df["segment_id"].to_list() == [0, 1, 2, 0]
    assert df["source"].to_list() == ["Title\nLine two.", "Second para. ", "Third.", "Only one."]  # verbatim
    p.write_text(json.dumps({"doc": "d1", "text": "x"}) + "\n")
    with pytest.raises(DDPDataError, match=r"\[D605\].*src_text"):
        _all(p, reader="wmt25")


@pytest.mark.shared_data
def test_wmt25_reader_reproduces_the_bundled_source():
    df = read_input(SHARED / "wmt25-genmt" / "wmt25_en_source_docs.jsonl", COLS, reader="wmt25").drop(ROW)
    bundled = pl.read_ndjson(BUNDLED)
    assert_frame_equal(df, bundled.select(df.columns))
    segs = pl.read_ndjson(SHARED / "wmt25-genmt" / "wmt25_en_source_segments.jsonl")
    assert df["segment_id"].to_list() == segs["seg_idx"].to_list()


# ------------------------------------------------------------------------------ .txt folders

PROSE = ("The old harbour had changed little since the war, and the fishermen who still worked "
         "there spoke of the storms as if they were relatives who visited too often and stayed "
         "too long, bringing nothing but trouble and leaving the boats in pieces on the shingle. ")


def _novel(folder: Path, wrapped: bool) -> Path:
    folder.mkdir()
    paras = [PROSE * 3, PROSE * 2, PROSE * 4]
    body = "\n\n".join(textwrap.fill(p.strip(), 70) if wrapped else p.strip() for p in paras)
    (folder / "novel.txt").write_text(body + "\n", encoding="utf-8")
    return folder


def test_wrapped_text_warning(tmp_path):
    wrapped, flat = _novel(tmp_path / "wrapped", True), _novel(tmp_path / "flat", False)
    assert wrapped_width((wrapped / "novel.txt").read_text()) == 70 or 60 <= wrapped_width(
        (wrapped / "novel.txt").read_text()) <= 70
    assert wrapped_width((flat / "novel.txt").read_text()) is None
    got: list[str] = []
    lines = _all(wrapped, warn=got.append)
    assert len(got) == 1 and "\n" not in got[0]
    assert "wrapped" in got[0] and "--txt-mode paragraphs" in got[0]
    assert lines.height == 3 and "\n" in lines["source"][0]  # lines mode keeps the lines
    got.clear()
    _all(flat, warn=got.append)
    _all(wrapped, txt_mode="paragraphs", warn=got.append)
    assert got == []  # unwrapped text, or paragraphs mode: no warning
    paras = _all(wrapped, txt_mode="paragraphs")
    assert paras["source"].to_list() == _all(flat)["source"].to_list()  # joined with spaces = the unwrapped text
    one_sentence_per_line = tmp_path / "sents"
    one_sentence_per_line.mkdir()
    (one_sentence_per_line / "s.txt").write_text("\n".join(["He came home late that night."] * 20))
    got.clear()
    _all(one_sentence_per_line, warn=got.append)
    assert got == []


def test_txt_mode_is_for_folders(tmp_path):
    with pytest.raises(DDPUsageError, match=r"\[D601\].*--txt-mode"):
        _all(BUNDLED, txt_mode="paragraphs")


# ------------------------------------------------------- streaming, --documents, key convention


def test_profile_to_files_reader_and_documents(tmp_path):
    """A reader's output through profile_to_files equals profile_anchors of the same rows read
    whole; --documents equals a polars group-by over the segment output."""
    import ddpcore
    from ddpcore.anchors.rules import get_rules
    from ddpcore.engines.local import Settings
    from ddpcore.engines.run import profile_to_files
    from ddpcore.io.outputs import check_outputs

    src = _wmt24(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    t = check_outputs([("-o", out / "seg.parquet"), ("--documents", out / "docs.csv")], [src], sidecars=True)
    targets = {"segments": t[0], "anchors": None, "sentences": None, "documents": t[1]}
    rep = profile_to_files(src, targets, cols=COLS, settings=Settings(rules=get_rules(None)), n_process=1,
                           batch_chars=40, reader="wmt24")  # several batches
    assert rep.n_batches > 1 and rep.signature["reader"]["name"] == "wmt24"
    seg = pl.read_parquet(out / "seg.parquet")
    whole = read_input(src, COLS, reader="wmt24").drop(ROW)
    ref = ddpcore.profile_anchors(whole, cache=False).segments
    assert_frame_equal(seg, ref)
    docs = pl.read_csv(out / "docs.csv")
    oracle = seg.group_by("document_id", maintain_order=True).agg(
        pl.col("domain").first(), pl.len().cast(pl.Int64).alias("n_segments"), pl.col("n_sentences").sum(),
        pl.col("ddp").max().alias("max_ddp"), pl.col("ddp").mean().alias("mean_ddp"),
        *((pl.col("ddp") >= k).mean().alias(f"share_ddp_ge_{k}") for k in (1, 5, 15)),
        pl.col("ddp_certified").max().alias("max_ddp_certified"),
        pl.col("ddp_certified").mean().alias("mean_ddp_certified"))
    assert_frame_equal(docs, oracle, check_dtypes=False)
    sig = json.loads((out / "docs.csv.signature.json").read_text())
    assert sig["reader"] == {"name": "wmt24", "docs": str(tmp_path / "test_en.docs"), "txt_mode": "lines"}
    assert sorted(os.listdir(out)) == ["docs.csv", "docs.csv.signature.json", "seg.parquet"]


def test_wmt24_profile_joins_esa_scores_without_glue():
    """The vendored mini WMT24 set: profile rows and ESA rows share (document_id, segment_id)
    and line_id, so a plain join matches every annotation to its segment's DDP."""
    import ddpcore
    from ddpcore.io.wmt import read_wmt24_esa

    esa = read_wmt24_esa(MINI, waves=(2,))
    rows = _all(MINI / "wmt24_en_source.txt", reader="wmt24")  # the mini set blanks other documents' lines
    rows = rows.filter(pl.col("document_id").is_in(esa["document_id"].unique().implode()))
    assert (rows["source"].str.len_chars() > 0).all()
    prof = ddpcore.profile(rows, cache=False)
    joined = esa.join(prof, on=["document_id", "segment_id"], how="left")
    assert joined.height == esa.height == 432
    assert joined["ddp"].null_count() == 0
    assert (joined["line_id"] == joined["line_id_right"]).all()
    assert (joined["source_text"] == joined["source"]).all()
    assert (joined["domain"] == joined["domain_right"]).all()


@pytest.mark.shared_data
def test_full_wmt24_profile_joins_esa(tmp_path):
    from ddpcore.io.wmt import read_wmt24_esa

    src = SHARED / "wmt24-genmt" / "wmt24_en_source.txt"
    out = tmp_path / "ddp.parquet"
    proc = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", str(src), "--reader", "wmt24",
                           "-o", str(out), "--documents", str(tmp_path / "docs.parquet"), "--no-cache", "-q"],
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    prof = pl.read_parquet(out)
    assert prof.height == 997 and prof["document_id"].n_unique() == 170
    esa = read_wmt24_esa(SHARED / "wmt24-genmt", with_text=True)
    joined = esa.join(prof, on=["document_id", "segment_id"], how="inner")
    assert joined.height == esa.height
    assert (joined["line_id"] == joined["line_id_right"]).all()
    assert (joined["source_text"] == joined["source"]).all()
    docs = pl.read_parquet(tmp_path / "docs.parquet")
    assert docs.height == 170 and docs["n_segments"].sum() == 997


def test_cli_wrapped_warning_and_documents(tmp_path):
    folder = _novel(tmp_path / "book", True)
    env = {**os.environ, "DDPCORE_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", str(folder), "-o",
                           str(tmp_path / "s.parquet"), "--documents", str(tmp_path / "d.parquet"), "-q", "-j", "1"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    warn = [ln for ln in proc.stderr.splitlines() if "wrapped" in ln]
    assert len(warn) == 1 and warn[0].startswith("ddp profile: warning: ") and "--txt-mode paragraphs" in warn[0]
    docs = pl.read_parquet(tmp_path / "d.parquet")
    assert docs["document_id"].to_list() == ["novel"] and docs["n_segments"].to_list() == [3]
    import pyarrow.parquet as pq

    meta = pq.read_schema(tmp_path / "d.parquet").metadata
    assert b"ddpcore.signature" in meta and meta[b"ddpcore.table"] == b"documents"
