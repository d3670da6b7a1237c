"""Bug hunt 6 (docs): the user docs (docs/*.md) run against the tool; where a page described what a user would
rightly expect and the tool did otherwise, the tool was fixed. Each test here failed before its fix.

* ``ddp stats tost TABLE --by metric,domain`` (docs/stats-cli.md) on a table with an annotator column and one row
  per metric and annotation stopped with D307 "the rating occurs 2 times": the repeated-rating check ignored the
  ``--by`` columns, which tell those rows apart. They now join its key (``load_long_table(rating_keys=)``).
* ``ddp stats compare --corpus-metric NAME`` with a name other than bleu/chrf/ter was an internal error
  (``[D999] KeyError``) after the segment-mean comparison had run; docs/stats-compare.md says D835. Now D835
  (exit 2) before any work, in the command and in ``compare_corpus_table``.
* ``ddp stratify`` on a CSV/TSV score column whose every field is empty (read as text) said D654 "scores must be
  numbers, found String"; the same column in Parquet or JSONL is null scores, D711 (docs/curation.md: "or no
  usable score at all"). Now D711 for both.
* ``ddp meta`` read a negative or fractional DDP (every other command that reads a profile says D781) and put it
  in no bin, only in ``overall``; now D781 naming the row. And with segments without a DDP value it warned that
  they "have no score row" when they had score rows (left out for their missing DDP, said in its own warning).
* ``ddp profile wmt23/en-de --reader mtme`` (docs/readers.md, docs/meta.md, ``--help``: "give the folder, FOLDER/LP
  or sources/LP.txt") stopped with ``[D102] wmt23/en-de: file not found``: the run's input checks need a path
  that exists. It now reads (and records) ``wmt23/sources/en-de.txt``, the same test set.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.cli.main import main

DATA = Path(__file__).parent / "data"
DOCS = Path(__file__).resolve().parents[1] / "docs"
SIG = {"columns": {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"}}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _profile(path: Path, ddp: list[float | None], *, n_docs: int = 6, n_segs: int = 4) -> Path:
    """A `ddp profile`-shaped segment table with its signature (n_docs x n_segs segments, ddp given per row)."""
    rows = [{"document_id": f"d{d}", "segment_id": s, "domain": "news", "n_sentences": 1,
             "first_sentence": s} for d in range(n_docs) for s in range(n_segs)]
    t = pl.DataFrame(rows).with_columns(pl.Series("ddp", ddp)).to_arrow()
    pq.write_table(t.replace_schema_metadata({b"ddpcore.signature": json.dumps(SIG).encode()}), path)
    return path


# ----------------------------------------------------------------------------- stats tost --by


def _metric_table(path: Path, *, repeat: bool = False) -> Path:
    """One row per (document, segment, system, annotator, condition, metric): two metrics per annotation."""
    rows = []
    for d in range(6):
        for s in range(2):
            for sy, off in (("A", 0.0), ("B", 1.0)):
                for ann in ("x", "y"):
                    for cond in ("DOC", "MIX"):
                        for metric in ("esa", "mqm"):
                            v = 50 + off + ((d * 7 + s * 3 + (ann == "y") + (cond == "MIX") * 2) % 5) * 0.1
                            rows.append({"document_id": f"d{d}", "segment_id": s, "system": sy, "annotator": ann,
                                         "condition": cond, "metric": metric, "domain": "news" if d % 2 else "social",
                                         "score": v + (metric == "mqm")})
    if repeat:  # a real repeat within one metric: the same rating pasted twice
        rows.append(dict(rows[0]))
    pl.DataFrame(rows).write_csv(path)
    return path


@pytest.mark.parametrize("design", [(), ("--independent", "--welch")])
def test_tost_by_metric_reads_one_row_per_metric_and_annotation(tmp_path: Path, capsys, design) -> None:
    t = _metric_table(tmp_path / "t.csv")
    code, out, err = _run(capsys, "stats", "tost", t, "--a", "DOC", "--b", "MIX", "--margin", "3",
                          "--by", "metric,domain", *design)
    assert code == 0, err
    d = json.loads(out)
    assert d["n_groups"] == 4 and {(g["metric"], g["domain"]) for g in d["groups"]} == {
        ("esa", "news"), ("esa", "social"), ("mqm", "news"), ("mqm", "social")}


def test_tost_by_still_refuses_a_rating_repeated_within_its_group(tmp_path: Path, capsys) -> None:
    t = _metric_table(tmp_path / "t.csv", repeat=True)
    code, _, err = _run(capsys, "stats", "tost", t, "--a", "DOC", "--b", "MIX", "--margin", "3", "--by", "metric")
    assert code == 3 and "[D307]" in err and "metric='esa'" in err
    # without --by the metric rows are repeats of one rating: still D307, naming the key without the metric
    t2 = _metric_table(tmp_path / "t2.csv")
    code, _, err = _run(capsys, "stats", "tost", t2, "--a", "DOC", "--b", "MIX", "--margin", "3")
    assert code == 3 and "[D307]" in err


def test_load_long_table_rating_keys(tmp_path: Path) -> None:
    from ddpcore.errors import DDPDataError
    from ddpcore.stats import load_long_table

    t = _metric_table(tmp_path / "t.csv")
    with pytest.raises(DDPDataError, match=r"\[D307\]"):
        load_long_table(str(t))
    df = load_long_table(str(t), rating_keys=["metric", "no_such_column"])
    assert df.height == pl.read_csv(t).height


# ----------------------------------------------------------------------------- stats compare --corpus-metric


def _compare_table(path: Path) -> Path:
    rows = [{"document_id": f"d{d}", "segment_id": s, "system": sy, "score": 0.5 + 0.1 * (sy == "A") + 0.01 * s,
             "hypothesis": f"{sy} {d} {s}", "reference": f"ref {d} {s}"}
            for d in range(4) for s in range(3) for sy in ("base", "A")]
    pl.DataFrame(rows).write_csv(path)
    return path


@pytest.mark.parametrize("extra", [(), ("--score-col", "score")])
def test_compare_unknown_corpus_metric_is_d835_before_any_work(tmp_path: Path, capsys, extra) -> None:
    t = _compare_table(tmp_path / "s.csv")
    code, out, err = _run(capsys, "stats", "compare", t, "--baseline", "base", "--corpus-metric", "bleu,nope",
                          "--n-boot", "20", "--n-ar", "20", *extra)
    assert code == 2 and out == ""
    assert "[D835]" in err and "'nope'" in err and "D999" not in err and len(err.strip().splitlines()) == 1


def test_compare_corpus_table_checks_the_names(tmp_path: Path) -> None:
    from ddpcore.errors import DDPUsageError
    from ddpcore.stats.corpus import check_corpus_metrics, compare_corpus_table

    t = _compare_table(tmp_path / "s.csv")
    with pytest.raises(DDPUsageError, match=r"\[D835\].*'BLEU'"):
        compare_corpus_table(str(t), "base", ["BLEU"])
    assert check_corpus_metrics(["bleu", "ter"]) == ["bleu", "ter"]
    with pytest.raises(DDPUsageError, match=r"\[D835\]"):
        check_corpus_metrics("bleu")  # a string is not a list of names


# ----------------------------------------------------------------------------- stratify: an empty CSV column


def test_stratify_empty_csv_score_column_is_null_scores_not_text(tmp_path: Path, capsys) -> None:
    prof = _profile(tmp_path / "p.parquet", [float(i % 5) for i in range(24)])
    keys = [{"document_id": f"d{d}", "segment_id": s, "system": "A"} for d in range(6) for s in range(4)]
    csv = tmp_path / "s.csv"
    csv.write_text("document_id,segment_id,system,comet\n" +
                   "".join(f"{k['document_id']},{k['segment_id']},A,\n" for k in keys), encoding="utf-8")
    code, _, err = _run(capsys, "stratify", prof, csv, "--score-col", "comet", "--n-boot", "10")
    assert code == 3 and "[D711]" in err and "[D654]" not in err
    code, _, err = _run(capsys, "stratify", prof, csv, "--score-col", "comet", "--n-boot", "10",
                        "--allow-partial-join")
    assert code == 3 and "[D711]" in err
    # the same column in JSON Lines (nulls) said D711 before the fix too: CSV and JSONL now agree
    pl.DataFrame(keys).with_columns(pl.lit(None, dtype=pl.Float64).alias("comet")).write_ndjson(tmp_path / "s.jsonl")
    code, _, err2 = _run(capsys, "stratify", prof, tmp_path / "s.jsonl", "--score-col", "comet", "--n-boot", "10")
    assert code == 3 and "[D711]" in err2
    # a text value that is not a number is still D654 naming the row
    csv.write_text(csv.read_text().replace("d0,1,A,\n", "d0,1,A,n/a\n"), encoding="utf-8")
    code, _, err = _run(capsys, "stratify", prof, csv, "--score-col", "comet", "--n-boot", "10")
    assert code == 3 and "[D654]" in err and "row 2" in err


# ----------------------------------------------------------------------------- meta: DDP values


def _meta_scores(path: Path) -> Path:
    rows = [{"document_id": f"d{d}", "segment_id": s, "system": sy, "mqm": float(-((d + s + i) % 4)),
             "metric": float(-((d + s + i) % 4)) + 0.1 * ((d * 3 + s) % 3)}
            for d in range(6) for s in range(4) for i, sy in enumerate(("A", "B", "C"))]
    pl.DataFrame(rows).write_parquet(path)
    return path


@pytest.mark.parametrize("bad", [-1.0, 2.5])
def test_meta_refuses_a_ddp_that_is_not_a_whole_number(tmp_path: Path, capsys, bad: float) -> None:
    ddp = [float(i % 7) for i in range(24)]
    ddp[5] = bad
    prof = _profile(tmp_path / "p.parquet", ddp)
    code, out, err = _run(capsys, "meta", prof, _meta_scores(tmp_path / "s.parquet"), "--human-col", "mqm",
                          "--n-boot", "10", "--n-perm", "10")
    assert code == 3 and out == "" and "[D781]" in err and "row 6" in err


def test_meta_segments_without_ddp_are_not_said_to_lack_scores(tmp_path: Path, capsys) -> None:
    ddp: list[float | None] = [float(i % 7) for i in range(24)]
    ddp[1] = ddp[2] = None
    prof = _profile(tmp_path / "p.parquet", ddp)
    code, out, err = _run(capsys, "meta", prof, _meta_scores(tmp_path / "s.parquet"), "--human-col", "mqm",
                          "--n-boot", "10", "--n-perm", "10")
    assert code == 0, err
    assert "6 score rows are on profile segments without a DDP value" in err
    assert "have no score row" not in err  # every profile segment has its 3 score rows
    join = json.loads(out)["signature"]["join"]
    assert join["profile_segments"] == 24 and join["scored_segments"] == 24


# ----------------------------------------------------------------------------- profile --reader mtme FOLDER/LP


def test_profile_mtme_language_pair_path(tmp_path: Path, capsys) -> None:
    root = tmp_path / "wmt23"
    shutil.copytree(DATA / "mtme" / "toy", root)
    out = tmp_path / "a.parquet"
    code, _, err = _run(capsys, "profile", root / "en-de", "--reader", "mtme", "-o", out, "-q", "-j", "1")
    assert code == 0, err
    code, _, err = _run(capsys, "profile", root / "sources" / "en-de.txt", "--reader", "mtme", "-o",
                        tmp_path / "b.parquet", "-q", "-j", "1")
    assert code == 0, err
    a, b = pl.read_parquet(out), pl.read_parquet(tmp_path / "b.parquet")
    assert a.height == 6 and a.equals(b)
    sig = json.loads(pq.read_schema(out).metadata[b"ddpcore.signature"])
    assert sig["reader"]["name"] == "mtme"
    # a language pair the test set does not have is the reader's D821, not "file not found"
    code, _, err = _run(capsys, "profile", root / "xx-yy", "--reader", "mtme", "-o", tmp_path / "c.parquet", "-q")
    assert code == 3 and "[D821]" in err and "D102" not in err


# ----------------------------------------------------------------------------- doc guards


def test_stats_cli_page_lists_every_score_reader() -> None:
    """docs/stats-cli.md's flag table listed three of the six score readers."""
    from ddpcore.io.scores import SCORE_READERS

    row = next(ln for ln in (DOCS / "stats-cli.md").read_text(encoding="utf-8").splitlines()
               if ln.startswith("| `--reader "))
    listed = re.search(r"`--reader ([^`]+)`", row).group(1).replace("\\|", "|").split("|")
    assert listed == list(SCORE_READERS)


def test_stratify_gap_example_groups_by_the_gap_column_first() -> None:
    """docs/curation.md showed `--by lp,system --gap refA,...`: --gap-col defaults to the first --by column
    (lp), so the example stopped with D655."""
    text = (DOCS / "curation.md").read_text(encoding="utf-8")
    for m in re.finditer(r"--by ([\w,]+) --gap ([^\s`]+)", text):
        assert m.group(1).split(",")[0] == "system", m.group(0)
