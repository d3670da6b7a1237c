"""Sixth hunt, inputs: invisible characters at a line's edge, CSV/TSV profiles read back without their
sidecar, and the blindness battery's D511-D514 naming the file.

Each test below fails without its fix in ``src/ddpcore``; next to each expected value: how it was produced.
"""
from __future__ import annotations

import json
import warnings

import polars as pl
import pytest
from resume_helpers import crash_then_resume

import ddpcore
from ddpcore.cli.main import main
from ddpcore.io.segments import SegmentColumns, invisible_edges
from ddpcore.schema import INVISIBLE_EDGES

# ------------------------------------------------------------------ invisible characters at a line's edge
#
# split_units stripped a line's edge WHITE SPACE only: "\u200bJohn Smith" reached spaCy with U+200B stuck to
# "John", so the name was no PERSON re-mention of "John Smith" ("\u200bJohn Smith" first mention, or "Smith" an
# ORG), "\u200bHe" no pronoun: ddp 2 -> 0 and 3 -> 0 for the segments below (measured with `ddp profile` on
# these rows before the fix). The certification model read the raw text around each anchor, so its
# confidence moved too (ddp_certified 0 -> 2 on the last segment once the parse was fixed).

PLAIN = ["John Smith went to Paris.", "The weather was nice.", "John Smith met Paris Hilton there.",
         "He was happy.", "It rained.\nShe left."]
#: the characters tried: zero-width space, BOM, word joiner, non-joiner, joiner, soft hyphen, left-to-right mark
INVISIBLES = ["\u200b", "\ufeff", "\u2060", "\u200c", "\u200d", "\u00ad", "\u200e"]


def _rows(texts, doc="d1"):
    return [{"document_id": doc, "segment_id": i, "source": t} for i, t in enumerate(texts)]


def _dirty(ch: str) -> list[str]:
    """PLAIN with ``ch`` at the start of lines (and the end of one), never inside a line."""
    return [PLAIN[0], PLAIN[1] + ch, ch + PLAIN[2], ch + ch + PLAIN[3], "It rained.\n" + ch + "She left." + ch]


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_split_units_strips_invisible_characters_at_a_lines_edges_and_keeps_the_offsets():
    from ddpcore.pipeline.stages import split_units

    # expected by hand: the unit is the line without its edge characters; offset = characters before it
    u = split_units(pl.Series(["\u200bJohn Smith\ufeff", "a.\n \u2060He left.\u200b\n\u200b", "x\u200by"]))
    assert u.texts == ["John Smith", "a.", "He left.", "x\u200by"]  # inside a line: kept
    assert u.offset__unit.tolist() == [1, 0, 5, 0]
    assert u.seg__unit.tolist() == [0, 1, 1, 2]  # the invisible-only line is no unit


def test_invisible_edges_counts_the_segments_whose_lines_change():
    df = pl.DataFrame({"document_id": ["a"] * 6, "segment_id": list(range(6)),
                       "source": ["x\u200by", "ok\n\u200b\nok", "\u200bJohn", "a\n \u2060b", "a.\u200b ", "plain"]}
                      ).with_row_index("__row")
    # by hand: segment 0 has it inside a line, 1 an invisible-only line (no unit), 5 none; 2, 3, 4 change
    assert invisible_edges(df, SegmentColumns()) == {"segments": 3, "document": "a", "segment": 2,
                                                      "char": "U+200B", "row": 3}
    assert invisible_edges(df.filter(pl.col("segment_id").is_in([0, 1, 5])), SegmentColumns()) is None


@pytest.mark.spacy_model
@pytest.mark.parametrize("ch", INVISIBLES)
def test_invisible_characters_at_a_lines_edge_give_the_ddp_of_the_text_without_them(nlp, ch):
    ref = ddpcore.profile_anchors(pl.DataFrame(_rows(PLAIN)), nlp=nlp)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = ddpcore.profile_anchors(pl.DataFrame(_rows(_dirty(ch))), nlp=nlp)
    assert ref.segments["ddp"].to_list() == [0, 0, 2, 3, 5]  # the plain text's DDPs (John Smith, He, She)
    assert got.segments.drop("source").equals(ref.segments.drop("source"))  # ddp, ddp_certified, n_tokens...
    offsets = ["char_start", "char_end"]
    assert got.anchors.drop(offsets).equals(ref.anchors.drop(offsets))  # confidence and certified too
    # the offsets index the text as given
    texts = dict(zip(got.segments["segment_id"].to_list(), got.segments["source"].to_list()))
    for r in got.anchors.iter_rows(named=True):
        assert texts[r["segment_id"]][r["char_start"]:r["char_end"]] == r["text"]
    # said and recorded: 4 segments (1, 2, 3, 4) change; the first is segment 1
    entry = got.signature[INVISIBLE_EDGES]
    assert entry["segments"] == 4 and entry["segment"] == 1 and entry["char"] == f"U+{ord(ch):04X}"
    assert INVISIBLE_EDGES not in ref.signature
    assert any(INVISIBLE_EDGES in str(w.message) and "U+" in str(w.message) for w in caught)


@pytest.mark.spacy_model
def test_ddp_profile_says_and_records_invisible_edges_and_explain_agrees(tmp_path, capsys):
    src = _write_jsonl(tmp_path / "z.jsonl", _rows(_dirty("\u200b")))
    out = tmp_path / "z.csv"
    assert main(["profile", str(src), "-o", str(out), "-q", "--no-cache"]) == 0
    err = capsys.readouterr().err
    line = [ln for ln in err.splitlines() if INVISIBLE_EDGES in ln]
    assert len(line) == 1 and f"{src}, row 2, column 'source': 4 segment(s)" in line[0] and "U+200B" in line[0]
    sig = json.loads((tmp_path / "z.csv.signature.json").read_text())
    assert sig[INVISIBLE_EDGES] == {"segments": 4, "document": "d1", "segment": 1, "char": "U+200B", "row": 2}
    table = pl.read_csv(out)
    assert table["ddp"].to_list() == [0, 0, 2, 3, 5]  # as the plain text (see the test above)
    for seg in (2, 3, 4):  # explain re-profiles the document: the same DDP as the run
        assert ddpcore.explain(str(src), document_id="d1", segment_id=seg, cache=False).ddp == table["ddp"][seg]
        assert ddpcore.explain(str(out), document_id="d1", segment_id=seg, cache=False).ddp == table["ddp"][seg]
    # a clean input: no line, no entry
    clean = _write_jsonl(tmp_path / "c.jsonl", _rows(PLAIN))
    assert main(["profile", str(clean), "-o", str(tmp_path / "c.csv"), "-q", "--no-cache"]) == 0
    assert INVISIBLE_EDGES not in capsys.readouterr().err
    assert INVISIBLE_EDGES not in json.loads((tmp_path / "c.csv.signature.json").read_text())


def test_the_entry_counts_every_chunk_of_the_input_and_names_the_first_row(tmp_path):
    from ddpcore.io.sources import stage_input

    rows = _rows(["a b c"] * 5 + ["\u2060Zed"] + ["a"] * 3 + ["x\n\u200by", "\u200bq"], doc="d")
    st = stage_input(_write_jsonl(tmp_path / "in.jsonl", rows), SegmentColumns(), tmp_path / "w", chunk_rows=4)
    # by hand: rows 6 (U+2060) and 10, 11 (U+200B), in three chunks of 4 rows
    assert st.invisible_edges == {"segments": 3, "document": "d", "segment": 5, "char": "U+2060", "row": 6}


@pytest.mark.spacy_model
def test_a_resumed_run_records_the_entry_of_the_input_it_does_not_read_again(tmp_path, nlp):
    rows = [r | {"document_id": f"d{k}"} for k in range(4) for r in _rows(_dirty("\ufeff"))]
    src = _write_jsonl(tmp_path / "in.jsonl", rows)
    rep, said = crash_then_resume(src, tmp_path / "out.parquet", batch_chars=100)
    assert rep.signature[INVISIBLE_EDGES]["segments"] == 16  # 4 documents x 4 segments with U+FEFF at an edge
    assert any(INVISIBLE_EDGES in m for m in said)


# ------------------------------------------------------------------ CSV/TSV profiles without their sidecar
#
# A CSV/TSV profile's sidecar names its id columns, which read_table then keeps as written. Without it, a
# document id column holding 2.5 and 2.50 (or 1e3 and 1000) was read as decimals: 007 and 7 became 7.0, so
# ddpcore.summarize counted 3 documents where the run had 6 (and `ddp report` printed 3), `ddp agree` stopped
# with D432 and `ddp select --profile` with D637 ("document '7.0' ... appears more than once"), `ddp stratify`
# with D712 (all measured on this table before the fix).

IDS = [("007", 0), ("007", 1), ("7", 0), ("7", 1), ("2.5", 0), ("2.50", 0), ("1e3", 0), ("1000", 0)]


def _profile_table() -> pl.DataFrame:
    """A segment table as `ddp profile` writes it (every column, ids as text), 6 documents and 8 segments."""
    n = len(IDS)
    return pl.DataFrame({
        "document_id": [d for d, _ in IDS], "segment_id": [s for _, s in IDS], "domain": ["news"] * n,
        "n_sentences": [1] * n, "n_tokens": [4] * n, "n_anchors": [1] * n, "ddp": [0, 1, 0, 1, 0, 0, 0, 0],
        "ddp_certified": [0] * n, "first_sentence": [0, 1, 0, 1, 0, 0, 0, 0],
        "source": [f"Text number {i}." for i in range(n)]})


@pytest.fixture(params=["csv", "tsv"])
def bare_profile(tmp_path, request):
    path = tmp_path / f"ddp.{request.param}"
    _profile_table().write_csv(path, separator="," if request.param == "csv" else "\t")
    assert not (tmp_path / f"ddp.{request.param}.signature.json").exists()
    return path


def test_summarize_counts_the_documents_of_a_profile_without_its_sidecar(bare_profile):
    summary = ddpcore.summarize(bare_profile)
    assert summary.filter(pl.col("group") == "all")["documents"].item() == 6  # 007, 7, 2.5, 2.50, 1e3, 1000


def test_report_and_plot_read_the_ids_of_a_profile_without_its_sidecar_as_written(bare_profile, tmp_path):
    from ddpcore.report import plots
    from ddpcore.report.inputs import read_anchors

    df, _ = plots.load_profile(bare_profile)
    assert sorted(df["document_id"].unique().to_list()) == sorted({d for d, _ in IDS})
    anchors = tmp_path / "anchors.csv"
    pl.DataFrame({"document_id": ["2.5", "2.50"], "segment_id": [0, 0], "text": ["Bob", "Ann"]}).write_csv(anchors)
    assert read_anchors(anchors)[0]["document_id"].to_list() == ["2.5", "2.50"]  # joins the profile's ids


def test_agree_reads_two_profiles_without_their_sidecars(bare_profile):
    from ddpcore.gold.agree import agree

    res = agree(str(bare_profile), str(bare_profile))
    assert res.n_segments == 8


def test_select_and_stratify_read_a_profile_without_its_sidecar(bare_profile, tmp_path, capsys):
    src = _write_jsonl(tmp_path / "in.jsonl", [{"document_id": d, "segment_id": s, "source": f"Text number {i}."}
                                               for i, (d, s) in enumerate(IDS)])
    out = tmp_path / "sel.jsonl"
    assert main(["select", str(src), "--profile", str(bare_profile), "-o", str(out), "--min-ddp", "1"]) == 0
    assert [json.loads(x)["document_id"] for x in out.read_text().splitlines()] == ["007", "7"]
    from ddpcore.io.profiles import scan_profile

    frame = scan_profile(bare_profile).frame.collect()
    assert frame["document_id"].n_unique() == 6
    scores = _write_jsonl(tmp_path / "scores.jsonl", [{"document_id": d, "segment_id": s, "score": float(i)}
                                                      for i, (d, s) in enumerate(IDS)])
    capsys.readouterr()
    assert main(["stratify", str(bare_profile), str(scores), "--score-col", "score", "--n-boot", "10",
                 "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["signature"]["join"]["profile_segments"] == 8


# ------------------------------------------------------------------ the blindness battery names the file
#
# D511 ("the score table needs both conditions...") named no file and no column; D512 (a MIX system outside
# the DOC pool) no file, row or column; D513 and D514 no file (messages read before the fix).


def _battery_rows(**extra_rows):
    rows = []
    for d in range(3):
        for s in range(2):
            for sy in ("s1", "s2"):
                rows.append({"document_id": f"d{d}", "segment_id": s, "system": sy, "condition": "DOC",
                             "score": 50 + d + s})
                rows.append({"document_id": f"d{d}", "segment_id": s, "system": sy, "condition": "MIX",
                             "score": 50 + d + s, "source_system": sy})
    return rows


@pytest.mark.parametrize("case, argv, pattern", [
    ("d511", ["--margin", "1"], r"\[D511\] {path}, column 'condition': .*no row has 'MIX'"),
    ("d512", ["--margin", "1"], r"\[D512\] {path}, row 25, column 'source_system': MIX row of document 'd9'"),
    ("d513", ["--margin", "1"], r"\[D513\] {path}: 1 segment pair\(s\)"),
    ("d514", ["--margin-sd", "1"], r"\[D514\] {path}, column 'score': --margin-sd"),
])
def test_blindness_errors_name_the_file(tmp_path, capsys, case, argv, pattern):
    import re

    rows = _battery_rows()
    if case == "d511":
        rows = [r for r in rows if r["condition"] == "DOC"]
    elif case == "d512":  # row 25: the 24 rows above, then this one
        rows.append({"document_id": "d9", "segment_id": 0, "system": "s9", "condition": "MIX", "score": 1,
                     "source_system": "s9"})
    elif case == "d513":
        rows = [r for r in rows if r["document_id"] == "d0" and r["segment_id"] == 0 and r["system"] == "s1"]
    path = _write_jsonl(tmp_path / f"{case}.jsonl", rows)
    assert main(["blindness", str(path), *argv, "--n-boot", "10", "--n-boot-cluster", "10"]) == 3
    err = capsys.readouterr().err
    assert re.search(pattern.format(path=re.escape(str(path))), err), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
