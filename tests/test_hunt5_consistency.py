"""Fifth hunt: the same quantity reported differently by two commands, two formats, or the CLI and the API.

Each test below fails without its fix in ``src/ddpcore``; next to each expected value: how it was produced.
"""
from __future__ import annotations

import json

import polars as pl
import pytest

import ddpcore
from ddpcore.cli.main import main

# ------------------------------------------------------------------ explain vs profile: segment order
#
# A run decides on the WHOLE input whether text segment ids sort numerically (every id parses as an
# integer) or keep input order (README: "integer ids sort numerically, other ids keep input order";
# ddpcore.engines.local.segment_keys). `ddp explain` profiled the segment's document alone, so a document
# whose ids all parse ("2", "1") was re-ordered numerically while the run (another document has ids "x",
# "y") kept its input order: another sentence numbering, another DDP for the same segment.

MIXED_IDS = [
    {"document_id": "A", "segment_id": "2", "domain": "news",
     "source": "Then she told Mary that the report was late. She apologized to her boss."},
    {"document_id": "A", "segment_id": "1", "domain": "news",
     "source": "Mary Smith works at Acme Corp in Boston. Acme Corp makes widgets. The company is old."},
    {"document_id": "B", "segment_id": "x", "domain": "news",
     "source": "John Brown lives in Paris. He likes it there."},
    {"document_id": "B", "segment_id": "y", "domain": "news",
     "source": "Paris is big. John Brown walks every day. He is happy."},
]


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _explained(source, seg_table):
    """(ddp, ddp_certified, n_sentences, first_sentence) of every segment by ddpcore.explain, and as the table says."""
    got, want = [], []
    for r in seg_table.iter_rows(named=True):
        e = ddpcore.explain(str(source), document_id=r["document_id"], segment_id=r["segment_id"], cache=False)
        got.append((r["document_id"], r["segment_id"], e.ddp, e.ddp_certified, e.n_sentences, e.first_sentence))
        want.append((r["document_id"], r["segment_id"], r["ddp"], r["ddp_certified"], r["n_sentences"],
                     r["first_sentence"]))
    return got, want


def test_explain_keeps_the_runs_segment_order_when_another_document_has_text_ids(tmp_path):
    src = _write_jsonl(tmp_path / "mixed.jsonl", MIXED_IDS)
    out = tmp_path / "mixed.parquet"
    assert main(["profile", str(src), "-o", str(out), "--no-cache", "-q", "-j", "1"]) in (0, None)
    seg = pl.read_parquet(out)
    # by hand: ids "x"/"y" do not parse, so every document keeps input order; in A, segment "2" (2 sentences)
    # comes first: sentences 0-1, then segment "1" (3 sentences): sentences 2-4
    a = {r["segment_id"]: r for r in seg.filter(pl.col("document_id") == "A").iter_rows(named=True)}
    assert (a["2"]["first_sentence"], a["2"]["n_sentences"]) == (0, 2)
    assert (a["1"]["first_sentence"], a["1"]["n_sentences"]) == (2, 3)
    # explain, on the profile (signature) and on the input itself, says what the profile says, segment by segment
    for source in (out, src):
        got, want = _explained(source, seg)
        assert got == want, source
    e = ddpcore.explain(str(out), document_id="A", segment_id="2", cache=False)
    assert e.anchors["segment_id"].to_list() == ["2"] * e.anchors.height  # the ids, not the ranks explain sorts by
    assert e.anchors["segment_id"].dtype == pl.String


# ------------------------------------------------------------------ a CSV/TSV profile read back
#
# A CSV/TSV output was read back by `ddpcore.summarize`, `ddp report`, `ddp plot`, `ddp agree`, `ddp select` and
# `ddp stratify` with polars' inferred types: a document id column holding "1e3" is read as decimals, so "007" and
# "7" both become 7.0: one document in the summary where `ddp profile` itself counted two (`agree`, `select` and
# `stratify` refused the profile: "document '7.0' appears more than once"). The sidecar signature names the id
# columns, which are now read as written.

DECIMAL_IDS = [
    {"document_id": d, "segment_id": s, "domain": dom, "source": text}
    for d, dom in (("007", "news"), ("7", "news"), ("1e3", "social"))
    for s, text in enumerate(("Mary Smith works at Acme Corp in Boston. She likes it.",
                              "Acme Corp makes widgets. Mary Smith is happy. She sings."))
]


@pytest.fixture(scope="module")
def decimal_id_profiles(tmp_path_factory):
    """The DECIMAL_IDS input profiled once per format; the summary `ddp profile -f json` printed for each."""
    import contextlib

    d = tmp_path_factory.mktemp("decimal-ids")
    src = _write_jsonl(d / "ids.jsonl", DECIMAL_IDS)
    printed = {}
    for ext in ("parquet", "csv", "tsv", "csv.gz"):
        out = d / f"summary-{ext}.json"
        with open(out, "w", encoding="utf-8") as fh, contextlib.redirect_stdout(fh):  # a file: `ddp` writes bytes
            assert main(["profile", str(src), "-o", str(d / f"p.{ext}"), "--documents", str(d / f"docs.{ext}"),
                         "-f", "json", "--no-cache", "-q", "-j", "1"]) in (0, None)
        printed[ext] = json.loads(out.read_text(encoding="utf-8"))["summary"]
    return d, src, printed


@pytest.mark.parametrize("ext", ["csv", "tsv", "csv.gz"])
def test_summarize_of_a_text_profile_counts_the_documents_the_run_counted(decimal_id_profiles, ext):
    d, _, printed = decimal_id_profiles
    # by hand: DECIMAL_IDS has 3 distinct document ids ("007", "7", "1e3"), two in news, one in social
    expected = {"news": 2, "social": 1, "all": 3}
    assert {r["group"]: r["documents"] for r in printed[ext]} == expected  # what `ddp profile` printed
    assert dict(ddpcore.summarize(str(d / f"p.{ext}")).select("group", "documents").iter_rows()) == expected
    assert ddpcore.summarize(str(d / f"p.{ext}")).to_dicts() == ddpcore.summarize(str(d / "p.parquet")).to_dicts()
    from ddpcore.io.tables import read_table

    # the documents table read back: one row per document id, as written
    assert read_table(d / f"docs.{ext}")["document_id"].to_list() == ["007", "7", "1e3"]


def test_report_agree_select_stratify_read_a_csv_profile_as_the_parquet_one(decimal_id_profiles, tmp_path, capsys):
    import re

    d, src, _ = decimal_id_profiles
    csv, parquet = d / "p.csv", d / "p.parquet"
    # report: the documents column of its summary table (by hand: 2 news, 1 social, 3 in all)
    assert main(["report", str(csv), "-o", str(tmp_path / "r.html")]) in (0, None)
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    table = html[html.index("<table>"): html.index("</table>")]
    rows = [re.findall(r"<td[^>]*>([^<]*)</td>", r) for r in table.split("<tr")[2:]]
    assert [(r[0], r[1]) for r in rows] == [("news", "2"), ("social", "1"), ("all", "3")]
    # agree of the CSV and the Parquet profile of one run: every segment identical (was D432)
    capsys.readouterr()
    assert main(["agree", str(parquet), str(csv)]) in (0, None)
    res = json.loads(capsys.readouterr().out)
    assert (res["n_segments"], res["share_identical"]) == (6, 1.0)  # by hand: 6 input rows, one run
    # select with a CSV profile: 3 documents before (was D637)
    assert main(["select", str(src), "--profile", str(csv), "-o", str(tmp_path / "s.jsonl"), "--min-ddp", "0",
                 "-f", "json"]) in (0, None)
    assert json.loads(capsys.readouterr().out)["summary"]["before"]["documents"] == 3
    # stratify with a CSV profile joins one score per segment (was D712)
    scores = tmp_path / "scores.jsonl"
    _write_jsonl(scores, [{"document_id": r["document_id"], "segment_id": r["segment_id"], "score": float(i)}
                          for i, r in enumerate(DECIMAL_IDS)])
    for prof in (parquet, csv):
        assert main(["stratify", str(prof), str(scores), "--score-col", "score", "--n-boot", "0",
                     "-f", "json"]) in (0, None)
        assert json.loads(capsys.readouterr().out)["groups"][0]["n"] == 6


# ------------------------------------------------------------------ guards: what was found consistent
#
# Not defects (these agreed on the bundled set and on tests/data/wmt25_mini.jsonl): kept so that they go on
# agreeing. Expected values are recomputed here independently (numpy / polars on the segment table).

MINI = "tests/data/wmt25_mini.jsonl"


def test_tables_summary_and_select_agree_with_an_independent_computation(tmp_path):
    import contextlib

    import numpy as np

    out = {t: tmp_path / f"{t}.parquet" for t in ("seg", "anc", "sent", "docs")}
    summary_file = tmp_path / "summary.json"
    with open(summary_file, "w", encoding="utf-8") as fh, contextlib.redirect_stdout(fh):
        assert main(["profile", MINI, "-o", str(out["seg"]), "--anchors", str(out["anc"]), "--sentences",
                     str(out["sent"]), "--documents", str(out["docs"]), "-f", "json", "--no-cache", "-q",
                     "-j", "1"]) in (0, None)
    printed = json.loads(summary_file.read_text(encoding="utf-8"))["summary"]
    seg, anc, sent, docs = (pl.read_parquet(out[t]) for t in ("seg", "anc", "sent", "docs"))
    k = ["document_id", "segment_id"]
    # per segment: max over its sentences / anchors (first mentions are -1; no anchor: 0)
    s = sent.group_by(k).agg(pl.col("sentence_ddp").max().alias("s"), pl.col("sentence_ddp_certified").max().alias("sc"),
                             pl.len().alias("n"), pl.col("sentence").min().alias("first"))
    a = anc.group_by(k).agg(pl.col("distance_sentences").max().clip(0).alias("a"),
                            pl.col("distance_certified").max().alias("ac"), pl.len().alias("na"))
    j = seg.join(s, on=k, how="left").join(a, on=k, how="left").fill_null(0)
    assert j["ddp"].to_list() == j["s"].to_list() == j["a"].to_list()
    assert j["ddp_certified"].to_list() == j["sc"].to_list() == j["ac"].to_list()
    assert j["n_sentences"].to_list() == j["n"].to_list()
    assert j["first_sentence"].to_list() == j["first"].to_list()
    assert j["n_anchors"].to_list() == j["na"].to_list()
    # documents: aggregates of their segments
    d = seg.group_by("document_id", maintain_order=True).agg(
        pl.len().alias("n_segments"), pl.col("ddp").max().alias("max_ddp"), pl.col("ddp").mean().alias("mean_ddp"),
        (pl.col("ddp") >= 15).mean().alias("share_ddp_ge_15"))
    assert docs.select(d.columns).with_columns(pl.col("n_segments").cast(pl.UInt32)).equals(
        d.with_columns(pl.col("n_segments").cast(pl.UInt32)))
    # the printed summary, summarize() and numpy (linear-interpolation percentiles, numpy's default)
    assert printed == ddpcore.summarize(str(out["seg"])).to_dicts()
    for row in printed:
        g = seg if row["group"] == "all" else seg.filter(pl.col("domain") == row["group"])
        x = g["ddp"].to_numpy()
        assert row["documents"] == g["document_id"].n_unique() and row["segments"] == x.size
        assert np.allclose([row["mean_ddp"], row["median_ddp"], row["p90_ddp"], row["max_ddp"], row["zero_ddp_share"]],
                           [x.mean(), np.median(x), np.percentile(x, 90), x.max(), (x == 0).mean()], rtol=0, atol=1e-9)
    # select's "before" (a selection that keeps everything) says the same
    sel = tmp_path / "sel.json"
    with open(sel, "w", encoding="utf-8") as fh, contextlib.redirect_stdout(fh):
        assert main(["select", MINI, "--profile", str(out["seg"]), "-o", str(tmp_path / "all.jsonl"),
                     "--min-ddp", "0", "-f", "json"]) in (0, None)
    before = json.loads(sel.read_text(encoding="utf-8"))["summary"]["before"]
    every = next(r for r in printed if r["group"] == "all")
    assert (before["documents"], before["segments"], before["max"]) == (every["documents"], every["segments"],
                                                                      every["max_ddp"])
    assert before["median"] == every["median_ddp"] and abs(before["p90"] - every["p90_ddp"]) < 1e-9
    assert abs(before["mean"] - every["mean_ddp"]) < 5e-4  # select rounds the mean to 3 decimals
