"""Tests of the ESA WMT23 and WMT24 ESA readers (ddpcore.io.esa, ddpcore.io.wmt).

Filter and mapping rules are checked on hand-built folders in tmp_path; the vendored mini
fixtures (tests/data/stats-real) check the real formats; tests marked shared_data compare the
full data sets against the counts in their SOURCE.md and against the derived wide TSV."""
from __future__ import annotations

import csv
import gzip
import io
import json
import os
import tarfile
from pathlib import Path

import polars as pl
import pytest

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.io.esa import read_esa_wmt23, read_esa_wmt23_wide
from ddpcore.io.wmt import read_texts, read_wmt24_esa

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "stats-real"
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"shared data folder {SHARED} is absent")


def _tar(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:xz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _csv(rows: list[list[str]]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue().encode()


def _snapshot(folder: Path) -> dict[str, tuple[int, float]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime) for p in folder.rglob("*")}


# --------------------------------------------------------------------------- ESA WMT23: rules


def _esa_folder(tmp_path: Path) -> Path:
    camp = "data/campaign-ruction-rc5/"
    docs = "\n".join(["news\tdocA", "news\tdocA", "social\tdocB"]) + "\n"
    items = [
        {"documentID": "docA#sys1", "itemID": 1, "_item": "sys1 | 0 | docA", "targetText": "Hallo Welt.", "sourceText": "s"},
        {"documentID": "docA#sys1", "itemID": 2, "_item": "sys1 | 1 | docA", "targetText": "Zweiter Satz.", "sourceText": "s"},
        {"documentID": "docB#sys2", "itemID": 3, "_item": "sys2 | 2 | docB", "targetText": "Dritter.", "sourceText": "s"},
        {"documentID": "ende-tutorial1", "itemID": 9, "_item": "x", "targetText": "t", "sourceText": "s"},
    ]
    spans = json.dumps([{"start_i": 0, "end_i": 4, "severity": "minor", "error_type": None},
                        {"start_i": "missing", "end_i": "missing", "severity": "major", "error_type": None}])
    rows = [
        # login, system, itemID, is_bad, src, tgt, score, document, flag, spans, start, end
        ["u1", "wmt23.sys1", "1", "TGT", "eng", "deu", "80", "docA#sys1", "False", spans, "10", "20"],
        ["u1", "wmt23.sys1", "2", "TGT", "eng", "deu", "70", "docA#sys1", "False", "[]", "30", "40"],
        ["u1", "wmt23.sys1", "2", "TGT", "eng", "deu", "10", "docA#sys1", "False", "[]", "25", "35"],  # older re-score: ignored
        ["u1", "wmt23.sys1", "1", "BAD", "eng", "deu", "5", "docA#sys1#bad1", "False", "[]", "1", "2"],
        ["u1", "tutorial", "9", "TGT", "eng", "deu", "100", "ende-tutorial1", "False", "[]", "1", "2"],
        ["u1", "wmt23.sys2", "3", "TGT", "eng", "deu", "55", "docB#sys2#duplicate", "False", "[]", "1", "2"],
        ["u2", "wmt23.sys2", "3", "TGT", "eng", "deu", "60", "docB#sys2", "False", "[]", "50", "60"],
        ["u3", "wmt23.sys2", "3", "TGT", "eng", "deu", "65", "docB#sys2", "False", "[]", "5", "6"],  # other login, later row wins
    ]
    mapping = b"AnnotatorID,protocol,login\nP1,ESA,u1\nP2,ESA,u2\n"
    folder = tmp_path / "esa"
    folder.mkdir()
    _tar(folder / "errorspanannotation_wmt23_en-de_data.tar.xz", {
        camp + "240315rc5ESA.scores.csv": _csv(rows),
        camp + "data/batches_wmt23_en-de_esa.json": json.dumps([{"items": items, "task": {}}]).encode(),
        camp + "Annotators_mapping.csv": mapping,
        "data/mt-metrics-eval-v2/wmt23/documents/en-de.docs": docs.encode(),
    })
    (folder / "esa_wmt23_en-de_scores_wide.tsv").write_text(
        "seg_idx\tdomain\tdoc\tsystem\tESA-1\tESAAI-1\n0\tnews\tdocA\tsys1\t80\t\n1\tnews\tdocA\tsys1\t70\t66.5\n"
        "2\tsocial\tdocB\tsys2\t65\t\n")
    return folder


def test_esa_rules_on_hand_built_folder(tmp_path):
    folder = _esa_folder(tmp_path)
    before = _snapshot(folder)
    df = read_esa_wmt23(folder, conditions=("ESA-1",))
    assert _snapshot(folder) == before  # nothing written into the data folder
    rows = {(r["line_id"], r["system"]): r for r in df.iter_rows(named=True)}
    assert set(rows) == {(0, "sys1"), (1, "sys1"), (2, "sys2")}  # BAD, tutorial, #duplicate dropped
    # the key convention: segment_id = position within the document. en-de.docs above reads
    # docA, docA, docB, so lines 0, 1, 2 are docA #0, docA #1, docB #0 (counted by hand)
    assert {k: (r["document_id"], r["segment_id"]) for k, r in rows.items()} == {
        (0, "sys1"): ("docA", 0), (1, "sys1"): ("docA", 1), (2, "sys2"): ("docB", 0)}
    assert rows[(1, "sys1")]["score"] == 70.0  # same login: newer end_time kept
    assert rows[(2, "sys2")]["score"] == 65.0 and rows[(2, "sys2")]["annotator"] == "u3"  # unmapped login kept
    a = rows[(0, "sys1")]
    assert a["annotator"] == "P1" and a["document_id"] == "docA" and a["domain"] == "news"
    # Appraise end_i is inclusive: (0, 4) covers "Hallo" -> half-open (0, 5); "missing" -> nulls
    assert a["error_spans"] == [{"span_start": 0, "span_end": 5, "severity": "minor"},
                                {"span_start": None, "span_end": None, "severity": "major"}]
    assert a["target_text"][a["error_spans"][0]["span_start"]: a["error_spans"][0]["span_end"]] == "Hallo"
    assert (a["time_start"], a["time_end"]) == (10.0, 20.0)


def test_esa_wide_only_conditions_and_errors(tmp_path):
    folder = _esa_folder(tmp_path)
    both = read_esa_wmt23(folder, conditions=("ESA-1", "ESAAI-1"))
    ai = both.filter(pl.col("condition") == "ESAAI-1")
    assert ai.height == 1 and ai["annotator"].null_count() == 1 and ai["score"][0] == 66.5
    # the TSV row "1 news docA sys1": seg_idx 1 is line 1 = the second line of docA
    assert ai.select("document_id", "segment_id", "line_id").row(0) == ("docA", 1, 1)
    assert both["condition"].to_list()[:3] == ["ESA-1"] * 3  # ordered as requested
    with pytest.raises(DDPUsageError, match="D155"):
        read_esa_wmt23(folder, conditions=("ESA-9",))
    with pytest.raises(DDPDataError, match="D152"):  # the hand-built tar has no ESA-2 export
        read_esa_wmt23(folder, conditions=("ESA-2",))
    with pytest.raises(DDPDataError, match="D150"):
        read_esa_wmt23(tmp_path / "nowhere")
    with pytest.raises(DDPUsageError, match="D155"):
        read_esa_wmt23_wide(folder, ["MQM-1"])


def test_esa_unknown_item_is_a_data_error(tmp_path):
    folder = _esa_folder(tmp_path)
    camp = "data/campaign-ruction-rc5/"
    with tarfile.open(folder / "errorspanannotation_wmt23_en-de_data.tar.xz", "r:xz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar}  # type: ignore[union-attr]
    members[camp + "240315rc5ESA.scores.csv"] += _csv([["u1", "wmt23.sys1", "77", "TGT", "eng", "deu", "1", "docA#sys1",
                                                        "False", "[]", "1", "2"]])
    _tar(folder / "errorspanannotation_wmt23_en-de_data.tar.xz", members)
    with pytest.raises(DDPDataError, match=r"D154.*row 9"):
        read_esa_wmt23(folder, conditions=("ESA-1",))


def test_esa_wide_tsv_of_another_test_set_is_refused(tmp_path):
    folder = _esa_folder(tmp_path)
    tsv = folder / "esa_wmt23_en-de_scores_wide.tsv"
    tsv.write_text(tsv.read_text().replace("2\tsocial\tdocB", "2\tsocial\tdocC"))
    with pytest.raises(DDPDataError, match=r"D186.*line 4, column 'doc': line 2 belongs to document docB"):
        read_esa_wmt23_wide(folder, ["ESA-1"])
    tsv.write_text(tsv.read_text().replace("2\tsocial\tdocC", "7\tsocial\tdocB"))
    with pytest.raises(DDPDataError, match=r"D186.*column 'seg_idx': '7' is not a line"):
        read_esa_wmt23(folder, conditions=("ESAAI-1",))
    # the TSV given as a file finds the archive (and its en-de.docs) beside it
    tsv.write_text(tsv.read_text().replace("7\tsocial\tdocB", "2\tsocial\tdocB"))
    assert read_esa_wmt23_wide(tsv, ["ESA-1"])["segment_id"].to_list() == [0, 1, 0]


# --------------------------------------------------------------------------- ESA WMT23: fixture


def _docs_lines(tar_path: Path) -> list[str]:
    """The document id of each WMT23 line, read straight from en-de.docs in the archive."""
    with tarfile.open(tar_path, "r:xz") as tar:
        raw = tar.extractfile("data/mt-metrics-eval-v2/wmt23/documents/en-de.docs").read()  # type: ignore[union-attr]
    return [line.split("\t")[1] for line in raw.decode().splitlines()]


def _expected_keys(doc_of_line: list[str]) -> dict[int, tuple[str, int]]:
    """line -> (document, position within the document), by a plain count (the test's oracle)."""
    seen: dict[str, int] = {}
    out = {}
    for line, doc in enumerate(doc_of_line):
        out[line] = (doc, seen.get(doc, 0))
        seen[doc] = seen.get(doc, 0) + 1
    return out


def test_esa_fixture_matches_wide_tsv():
    folder = FIXTURES / "esa-wmt23-ende-mini"
    raw = read_esa_wmt23(folder)
    wide = read_esa_wmt23_wide(folder, ["ESA-1", "ESA-2"])
    assert raw.group_by("condition").len().sort("condition")["len"].to_list() == [312, 312]
    expected = _expected_keys(_docs_lines(folder / "errorspanannotation_wmt23_en-de_data.tar.xz"))
    for table in (raw, wide):
        got = table.select("line_id", "document_id", "segment_id").unique()
        assert {r[0]: (r[1], r[2]) for r in got.iter_rows()} == {k: expected[k] for k in got["line_id"].to_list()}
    assert raw["segment_id"].max() < raw["line_id"].max()  # positions, not global lines
    joined = raw.join(wide, on=["document_id", "segment_id", "system", "condition"], how="full", suffix="_w")
    assert joined["score"].null_count() == 0 and joined["score_w"].null_count() == 0
    assert (joined["score"] == joined["score_w"]).all()
    assert (joined["line_id"] == joined["line_id_w"]).all()
    pools = raw.group_by("condition").agg(pl.col("annotator").unique()).sort("condition")
    esa1, esa2 = (set(x) for x in pools["annotator"].to_list())
    assert esa1.isdisjoint(esa2)
    spans = raw.explode("error_spans").unnest("error_spans").drop_nulls("span_start")
    assert spans.height > 0
    assert (spans["span_start"] < spans["span_end"]).all()
    assert (spans["span_end"] <= spans["target_text"].str.len_chars()).all()


def test_esa_fixture_joins_a_profile_reader_with_no_glue(tmp_path):
    """The ESA rows join the segments of `ddp profile --reader lines` (the profile's reader) on
    document_id + segment_id, and line_id agrees row by row. The WMT23 source text is not in the
    fixture; the key convention depends on the .docs file only, so a placeholder source of the
    same length is profiled-read here."""
    from ddpcore.io.readers import iter_aligned_lines
    from ddpcore.io.segments import SegmentColumns

    folder = FIXTURES / "esa-wmt23-ende-mini"
    doc_of_line = _docs_lines(folder / "errorspanannotation_wmt23_en-de_data.tar.xz")
    with tarfile.open(folder / "errorspanannotation_wmt23_en-de_data.tar.xz", "r:xz") as tar:
        (tmp_path / "en-de.docs").write_bytes(
            tar.extractfile("data/mt-metrics-eval-v2/wmt23/documents/en-de.docs").read())  # type: ignore[union-attr]
    (tmp_path / "en-de.txt").write_text("".join(f"line {i}\n" for i in range(len(doc_of_line))))
    seg = pl.concat(list(iter_aligned_lines(tmp_path / "en-de.txt", tmp_path / "en-de.docs", SegmentColumns(),
                                            wmt24=True)))
    raw = read_esa_wmt23(folder)
    joined = raw.join(seg, on=["document_id", "segment_id"], how="left", suffix="_p")
    assert joined["line_id_p"].null_count() == 0  # every annotation finds its segment
    assert (joined["line_id"] == joined["line_id_p"]).all()
    assert (joined["source"] == "line " + joined["line_id"].cast(pl.String)).all()  # the placeholder of that line


# --------------------------------------------------------------------------- WMT24: rules


def _wmt24_folder(tmp_path: Path, *, bad_line: bool = False) -> Path:
    folder = tmp_path / "wmt24"
    folder.mkdir()
    docs = ["canary\tcanary", "news\tdocN", "news\tdocN", "speech\tdocS"]
    (folder / "wmt24_en.docs").write_text("\n".join(docs) + "\n")
    (folder / "wmt24_en_source.txt").write_text("CANARY\nFirst.\nSecond.\nThird.\n")
    (folder / "annotator_mapping.json").write_text(json.dumps({"Anna": ["l1", "l2"]}))
    sp = json.dumps([{"start_i": 4, "end_i": 6, "severity": "major"}])
    rows = [
        ["l1", "sysA", "1", "TGT", "eng", "ces", "90", "docN", "False", sp, "1", "2"],
        ["l1", "sysA", "2", "TGT", "eng", "ces", "40", "docN", "False", "[]", "9", "10"],
        ["l1", "sysA", "2", "TGT", "eng", "ces", "45", "docN", "False", "[]", "3", "4"],  # older duplicate
        ["l2", "refA", "3", "TGT", "eng", "ces", "99", "docS", "False", "[]", "1", "2"],
        ["l3", "sysA", "3", "TGT", "eng", "ces", "50", "docS", "False",
         json.dumps([{"start_i": 6, "end_i": 7, "severity": "minor"}, {"start_i": 9, "end_i": 13, "severity": "minor"}]),
         "1", "2"],
        ["l1", "sysA", "1", "BAD", "eng", "ces", "10", "docN#bad", "False", "[]", "1", "2"],
        ["l1", "ende-tutorial1", "1000001", "TGT", "eng", "ces", "0", "ende-tutorial1", "False", "[]", "1", "2"],
        ["l1", "sysA", "1", "TGT", "eng", "ces", "11", "docN#incomplete", "False", "[]", "1", "2"],
        ["l1", "sysA", "1", "TGT", "eng", "ces", "12", "docN#dup", "False", "[]", "1", "2"],
    ]
    if bad_line:
        rows.append(["l1", "sysA", "3", "TGT", "eng", "ces", "12", "docN", "False", "[]", "1", "2"])
    (folder / "esa_generalMT2024_wave2.csv.gz").write_bytes(gzip.compress(_csv(rows)))
    _tar(folder / "wmt24_system_outputs_en-cs_en-hi_en-ja_en-zh.tar.xz", {
        "en-cs/sysA.txt": "canary\nPrvní věta.\nDruhá.\nTřetí 🙌 konec.\n".encode(),
        "en-cs/en-cs.refA.txt": "canary\nR1\nR2\nReference three.\n".encode(),
    })
    return folder


def test_wmt24_rules_on_hand_built_folder(tmp_path):
    folder = _wmt24_folder(tmp_path)
    before = _snapshot(folder)
    df = read_wmt24_esa(folder, waves=(2,))
    assert _snapshot(folder) == before
    got = {(r["system"], r["line_id"]): r for r in df.iter_rows(named=True)}
    assert set(got) == {("sysA", 1), ("sysA", 2), ("refA", 3), ("sysA", 3)}
    # the key convention: segment_id = position within the document, line_id = line of the files
    assert [(got[k]["document_id"], got[k]["segment_id"]) for k in sorted(got)] == [
        ("docS", 0), ("docN", 0), ("docN", 1), ("docS", 0)]
    assert got[("sysA", 2)]["score"] == 40.0  # the later time_end of the same login wins
    first = got[("sysA", 1)]
    assert first["annotator"] == "Anna" and first["lp"] == "en-cs" and first["wave"] == 2
    assert first["domain"] == "news" and first["source_text"] == "First."
    assert first["target_text"] == "První věta."
    assert first["error_spans"] == [{"span_start": 4, "span_end": 7, "severity": "major"}]
    assert first["target_text"][4:7] == "í v"
    assert got[("refA", 3)]["target_text"] == "Reference three."
    assert got[("sysA", 3)]["annotator"] == "l3"  # unmapped login kept
    # Appraise offsets count UTF-16 code units (the emoji is 2 units, 1 code point here)
    third = got[("sysA", 3)]
    (e1, e2) = third["error_spans"]
    assert third["target_text"][e1["span_start"]: e1["span_end"]] == "🙌"
    assert third["target_text"][e2["span_start"]: e2["span_end"]] == "konec"
    assert read_wmt24_esa(folder, waves=(2,), lps=["en-ja"]).height == 0
    assert read_wmt24_esa(folder, waves=(2,), with_text=False)["target_text"].null_count() == 4
    assert sorted(read_texts(folder)["en-cs"]) == ["refA", "sysA"]


def test_utf16_offsets_to_code_points():
    from ddpcore.io.esa import utf16_span_to_codepoints

    assert utf16_span_to_codepoints("abc", 0, 1) == (0, 2)  # inclusive end -> half-open
    text = "a🙌b😂c"  # UTF-16 units: a=0, 🙌=1-2, b=3, 😂=4-5, c=6
    assert utf16_span_to_codepoints(text, 1, 2) == (1, 2)
    assert utf16_span_to_codepoints(text, 3, 3) == (2, 3)
    assert utf16_span_to_codepoints(text, 4, 6) == (3, 5)
    assert utf16_span_to_codepoints(text, 0, 99) == (0, 5)  # clipped to the text


def test_wmt24_errors(tmp_path):
    with pytest.raises(DDPDataError, match="D164"):
        read_wmt24_esa(_wmt24_folder(tmp_path, bad_line=True), waves=(2,))
    folder = tmp_path / "wmt24"
    with pytest.raises(DDPDataError, match="D161"):  # wave 3 file absent
        read_wmt24_esa(folder, waves=(3,))
    with pytest.raises(DDPUsageError, match="D165"):
        read_wmt24_esa(folder, waves=(7,))
    with pytest.raises(DDPDataError, match="D160"):
        read_wmt24_esa(tmp_path / "missing")


def test_wmt24_fixture():
    df = read_wmt24_esa(FIXTURES / "wmt24-genmt-mini", waves=(2,))
    assert df.height == 432
    assert df["system"].n_unique() == 16 and df["line_id"].n_unique() == 27
    assert df.select("document_id", "segment_id").n_unique() == 27
    assert df["error_spans"].list.len().sum() == 184
    assert df["target_text"].null_count() == 0 and (df["target_text"].str.len_chars() > 0).all()
    assert set(df["domain"].unique()) == {"news", "social", "speech"}
    # each (system, line) is scored once in the wave
    assert df.group_by("system", "line_id").len()["len"].max() == 1


# --------------------------------------------------------------------------- full data (../shared/data)


@pytest.mark.shared_data
@needs_shared
def test_full_esa_matches_wide_tsv_and_source_counts():
    folder = SHARED / "esa-wmt23-ende"
    conds = ("ESA-1", "ESA-2", "ESA-IAA", "MQM-1", "MQM-IAA")
    raw = read_esa_wmt23(folder, conditions=conds)
    wide = read_esa_wmt23_wide(folder, list(conds))
    counts = dict(raw.group_by("condition").len().iter_rows())
    # SOURCE.md: ESA-1, ESA-2, MQM-1 cover 2,691 items; ESA-IAA and MQM-IAA 984
    assert counts == {"ESA-1": 2691, "ESA-2": 2691, "MQM-1": 2691, "ESA-IAA": 984, "MQM-IAA": 984}
    joined = raw.join(wide, on=["document_id", "segment_id", "system", "condition"], how="full", suffix="_w")
    assert joined["score"].null_count() == 0 and joined["score_w"].null_count() == 0
    assert (joined["score"] - joined["score_w"]).abs().max() == 0.0
    assert (joined["line_id"] == joined["line_id_w"]).all()
    pools = {c: set(raw.filter(pl.col("condition") == c)["annotator"].unique()) for c in ("ESA-1", "ESA-2")}
    # SOURCE.md: ESA (8 people) and ESA2 (10 people) have no annotator in common
    assert (len(pools["ESA-1"]), len(pools["ESA-2"])) == (8, 10)
    assert pools["ESA-1"].isdisjoint(pools["ESA-2"])
    e1 = raw.filter(pl.col("condition") == "ESA-1")
    assert e1["document_id"].n_unique() == 71 and e1["line_id"].n_unique() == 207
    assert e1.select("document_id", "segment_id").n_unique() == 207
    expected = _expected_keys(_docs_lines(folder / "errorspanannotation_wmt23_en-de_data.tar.xz"))
    assert all(expected[line] == (d, s) for line, d, s in raw.select("line_id", "document_id", "segment_id").unique()
               .iter_rows())


@pytest.mark.shared_data
@needs_shared
def test_full_esa_joins_the_wmt23_source_read_as_ddp_profile_reads_it(tmp_path):
    """`ddp profile sources/en-de.txt --reader wmt24 --docs documents/en-de.docs` (its reader, no
    spaCy): every ESA annotation joins its segment on document_id + segment_id; line_id and domain
    agree row by row."""
    from ddpcore.io.readers import iter_aligned_lines
    from ddpcore.io.segments import SegmentColumns

    folder = SHARED / "esa-wmt23-ende"
    names = {"src": "data/mt-metrics-eval-v2/wmt23/sources/en-de.txt",
             "docs": "data/mt-metrics-eval-v2/wmt23/documents/en-de.docs"}
    with tarfile.open(folder / "errorspanannotation_wmt23_en-de_data.tar.xz", "r:xz") as tar:
        for key, name in names.items():
            (tmp_path / f"en-de.{'txt' if key == 'src' else 'docs'}").write_bytes(tar.extractfile(name).read())  # type: ignore[union-attr]
    seg = pl.concat(list(iter_aligned_lines(tmp_path / "en-de.txt", tmp_path / "en-de.docs", SegmentColumns(),
                                            wmt24=True)))
    assert seg.height == 557  # SOURCE.md: 557 segments, no canary line in WMT23
    raw = read_esa_wmt23(folder, conditions=("ESA-1", "MQM-1"))
    joined = raw.join(seg, on=["document_id", "segment_id"], how="left", suffix="_p")
    assert joined["line_id_p"].null_count() == 0 and (joined["line_id"] == joined["line_id_p"]).all()
    assert (joined["domain"] == joined["domain_p"]).all()


@pytest.mark.shared_data
@needs_shared
def test_full_wmt24_counts():
    df = read_wmt24_esa(SHARED / "wmt24-genmt")
    # SOURCE.md: 15,846 (wave 2) and 8,839 (wave 3) valid rows; 105 and 77 of them are the
    # same login re-scoring an item, so one row per item remains
    per_wave = dict(df.group_by("wave").len().iter_rows())
    assert per_wave == {2: 15846 - 105, 3: 8839 - 77}
    assert df.group_by("lp", "system", "document_id", "segment_id").len()["len"].max() == 1
    assert df["target_text"].null_count() == 0
    assert os.path.exists(SHARED / "wmt24-genmt" / "esa_generalMT2024_wave2.csv.gz")
