"""Bug hunt 6 (outputs): what a result file holds, what a signature claims, and which row is the total.

Defects this file pins (each test failed before its fix):

* ``ddp select --evaluate -f json -o r.md`` wrote JSON into a .md file, and ``-f text -o r.json`` Markdown into
  a .json file (``-f`` defaulted to text, so an explicit ``-f text`` could not be told from no ``-f``); an
  ``-o`` of another extension (``r.html``) got Markdown. Now ``-f`` and the extension must agree (D880, as
  ``ddp stats *``/``meta``/``stratify``/``blindness``), the extension gives the format without ``-f``, and
  another extension is D101; all before any work.
* ``ddp select --unit document --with-context`` changed nothing (whole documents hold their context) while its
  signature recorded ``with_context: true``: now D890 (exit 2).
* A domain literally named ``all``: ``ddp agree`` merged the segments without a domain into it (its row for
  them was named ``all`` too); the per-domain summary (``ddp profile``, ``ddpcore.summarize``, ``ddp report``)
  printed two rows named ``all``, the domain and the total; ``ddp validate``'s text tables likewise with a
  genre named ``overall``. The total row (and agree's row of the segments without a domain) now never
  carries a name the data has: ``(all)``, ``(none)``, ``(overall)``, said on stderr and recorded.
"""
from __future__ import annotations

import html as html_mod
import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.cli.main import main

DATA = Path(__file__).parent / "data"
MINI = DATA / "wmt25_mini.jsonl"
SIG = {"ddpcore": "0.1.0", "distance": "chained", "rules": "refined", "pipeline_name": "en_core_web_sm",
       "columns": {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"}}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _rows(n_docs: int = 12, seed: int = 5) -> list[dict]:
    """Documents of 1-5 segments with DDP reaching back inside them; domains news/lit."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(n_docs):
        first = 0
        for s in range(int(rng.integers(1, 6))):
            n = int(rng.integers(1, 4))
            rows.append({"document_id": f"d{d}", "segment_id": s, "domain": ("news", "lit")[d % 2],
                         "ddp": int(rng.integers(0, first + 1)), "first_sentence": first, "n_sentences": n})
            first += n
    return rows


def _profile(rows: list[dict], path: Path) -> Path:
    df = pl.DataFrame(rows).with_columns(pl.col("ddp").alias("ddp_certified"), pl.lit(3).alias("n_tokens"),
                                         pl.lit(1).alias("n_anchors"))
    t = df.to_arrow().replace_schema_metadata({b"ddpcore.signature": json.dumps(SIG).encode()})
    pq.write_table(t, path)
    return path


@pytest.fixture()
def corpus(tmp_path: Path) -> tuple[list[dict], Path, Path, Path]:
    rows = _rows()
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"document_id": r["document_id"], "segment_id": r["segment_id"],
                                       "domain": r["domain"], "source": f"text {i}"}) + "\n"
                           for i, r in enumerate(rows)))
    rng = np.random.default_rng(2)
    scores = pl.DataFrame([(r["document_id"], r["segment_id"], s, float(-int(rng.integers(0, 5))))
                           for r in rows for s in "ABC"],
                          schema=["document_id", "segment_id", "system", "score"], orient="row")
    scores.write_csv(tmp_path / "s.csv")
    return rows, src, _profile(rows, tmp_path / "p.parquet"), tmp_path / "s.csv"


# ----------------------------------------------------------------------------- 1. select --evaluate: -f and -o


def _evaluate(capsys: pytest.CaptureFixture[str], corpus, *extra: str) -> tuple[int, str, str]:
    _, _, prof, scores = corpus
    return _run(capsys, "select", "--evaluate", str(scores), "--profile", str(prof), "--budgets", "0.5",
                "--n-random", "10", *extra)


@pytest.mark.parametrize("fmt,name,want", [("json", "r.md", "text"), ("text", "r.json", "json"),
                                           ("json", "r.txt", "text"), ("text", "r.JSON", "json")])
def test_evaluate_refuses_an_f_the_extension_contradicts(corpus, tmp_path: Path, capsys, monkeypatch,
                                                         fmt: str, name: str, want: str) -> None:
    """Before: exit 0 and JSON in r.md (-f json won over the extension) or Markdown in r.json (an explicit
    -f text was the default, and the .json extension won). Refused before the profile is even read."""
    import ddpcore.curate.select as sel_mod

    def no_work(*a, **k):  # type: ignore[no-untyped-def]
        raise AssertionError("the profile was read before -f/-o were checked")

    monkeypatch.setattr(sel_mod, "load_profile", no_work)
    out = tmp_path / name
    code, stdout, err = _evaluate(capsys, corpus, "-f", fmt, "-o", str(out))
    assert code == 2 and stdout == "" and not out.exists()
    ext = Path(name).suffix.lower()
    assert err.strip() == (f"ddp select: error: [D880] -o {out}: a {ext} file cannot hold -f {fmt}; use -f {want}, "
                           f"another extension, or -o - (stdout) for {fmt}")


def test_evaluate_extension_gives_the_format(corpus, tmp_path: Path, capsys) -> None:
    """Without -f: .json holds JSON, .md/.txt the Markdown report (what -f text prints on stdout); with an -f
    that agrees, the same bytes; -o - takes any -f."""
    code, md_stdout, _ = _evaluate(capsys, corpus, "-o", "-")
    assert code == 0 and "|" in md_stdout and not md_stdout.lstrip().startswith("{")
    code, json_stdout, _ = _evaluate(capsys, corpus, "-f", "json", "-o", "-")
    assert code == 0 and json.loads(json_stdout)["budgets"][0]["budget"] == 0.5
    for name, extra, want in (("a.json", [], json_stdout), ("b.json", ["-f", "json"], json_stdout),
                              ("c.md", [], md_stdout), ("d.md", ["-f", "text"], md_stdout),
                              ("e.txt", [], md_stdout), ("f.markdown", [], md_stdout)):
        out = tmp_path / name
        code, stdout, err = _evaluate(capsys, corpus, *extra, "-o", str(out))
        assert code == 0 and stdout == "" and f"wrote {out}" in err, err
        assert out.read_text() == want, name


@pytest.mark.parametrize("name", ["r.html", "report", "r.md.gz", "r.tsv"])
def test_evaluate_refuses_an_unknown_report_extension(corpus, tmp_path: Path, capsys, name: str) -> None:
    """Before: the Markdown report went into any file name (r.html, r.tsv, no extension)."""
    out = tmp_path / name
    code, _, err = _evaluate(capsys, corpus, "-o", str(out))
    assert code == 2 and "[D101]" in err and "use .json, .md or .txt" in err and not out.exists()
    assert len(err.strip().splitlines()) == 1


def test_select_and_sample_summary_format_unchanged(corpus, tmp_path: Path, capsys) -> None:
    """-f is the summary's format where -o is the table: no -f = text, -f json = JSON, whatever -o's extension."""
    _, src, prof, _ = corpus
    code, stdout, _ = _run(capsys, "select", str(src), "--profile", str(prof), "--min-ddp", "1",
                           "-o", str(tmp_path / "o.jsonl"))
    assert code == 0 and stdout.startswith("ddp select: before:")
    code, stdout, _ = _run(capsys, "select", str(src), "--profile", str(prof), "--min-ddp", "1", "-f", "json",
                           "-o", str(tmp_path / "o2.jsonl"))
    assert code == 0 and json.loads(stdout)["summary"]["after"]["segments"] > 0
    code, stdout, _ = _run(capsys, "sample", str(src), "--profile", str(prof), "--per-bin", "1",
                           "-o", str(tmp_path / "o3.jsonl"))
    assert code == 0 and "ddp sample: before:" in stdout
    code, stdout, _ = _run(capsys, "sample", str(src), "--profile", str(prof), "--per-bin", "1", "-f", "json",
                           "-o", str(tmp_path / "o4.jsonl"))
    assert code == 0 and "bins" in json.loads(stdout)


# ----------------------------------------------------------------------------- 2. --with-context --unit document


def test_with_context_with_unit_document_is_refused(corpus, tmp_path: Path, capsys) -> None:
    """Before: exit 0, the same rows as without --with-context, and signature with_context: true."""
    _, src, prof, _ = corpus
    out = tmp_path / "o.jsonl"
    code, stdout, err = _run(capsys, "select", str(src), "--profile", str(prof), "--unit", "document",
                             "--min-ddp", "1", "--with-context", "-o", str(out))
    assert code == 2 and stdout == "" and not out.exists() and not Path(f"{out}.signature.json").exists()
    assert err.startswith("ddp select: error: [D890] --with-context with --unit document") and "drop --with-context" in err
    from ddpcore.curate.select import Criteria
    from ddpcore.errors import DDPUsageError

    with pytest.raises(DDPUsageError) as ei:
        Criteria(min_ddp=1, level="document", with_context=True).check()
    assert ei.value.code == "D890"
    # unchanged: --with-context with segments, --unit document without it
    assert main(["select", str(src), "--profile", str(prof), "--min-ddp", "1", "--with-context", "-o", str(out)]) == 0
    assert json.loads(Path(f"{out}.signature.json").read_text())["criteria"]["with_context"] is True
    assert main(["select", str(src), "--profile", str(prof), "--unit", "document", "--min-ddp", "1",
                 "-o", str(tmp_path / "doc.jsonl")]) == 0


# ----------------------------------------------------------------------------- 3. rows named as the total


def _agree_runs(tmp_path: Path, domains: list[str | None], shift: int = 1) -> tuple[Path, Path]:
    rows = [{"document_id": f"d{d}", "segment_id": s, "domain": dom, "ddp": (d + s) % 3}
            for d, dom in enumerate(domains) for s in range(3)]
    a = pl.DataFrame(rows, schema={"document_id": pl.String, "segment_id": pl.Int64, "domain": pl.String,
                                   "ddp": pl.Int64})
    a.write_csv(tmp_path / "a.csv")
    a.with_columns(pl.col("ddp") + shift * (pl.col("segment_id") == 1).cast(pl.Int64)).write_csv(tmp_path / "b.csv")
    return tmp_path / "a.csv", tmp_path / "b.csv"


def test_agree_keeps_segments_without_domain_apart_from_a_domain_named_all(tmp_path: Path, capsys) -> None:
    """Before: the 3 segments without a domain were counted in the domain 'all' (one row 'all', n = 9)."""
    a, b = _agree_runs(tmp_path, ["all", "news", None, "all"])
    code, stdout, _ = _run(capsys, "agree", str(a), str(b))
    assert code == 0
    res = json.loads(stdout)
    got = {d["domain"]: d["n_segments"] for d in res["domains"]}
    assert got == {"all": 6, "news": 3, "(none)": 3} and res["no_domain"] == "(none)"
    # means recomputed by hand: the domain 'all' is documents d0 and d3 only
    df = pl.read_csv(a)
    want = df.filter(pl.col("domain") == "all")["ddp"].mean()
    assert next(d for d in res["domains"] if d["domain"] == "all")["mean_a"] == pytest.approx(want)
    code, text, _ = _run(capsys, "agree", str(a), str(b), "-f", "text")
    table = [line.split()[0] for line in text.splitlines()[text.splitlines().index(
        next(x for x in text.splitlines() if x.startswith("domain "))) + 1:] if line and line[0] != " "][:3]
    assert sorted(table) == ["(none)", "all", "news"]
    assert "(segments without a domain: the row '(none)')" in text


def test_agree_no_domain_labels(tmp_path: Path, capsys) -> None:
    from ddpcore.gold.agree import agree

    a, b = _agree_runs(tmp_path, ["news", "(none)", None])  # a domain named '(none)' and segments without one
    r = agree(a, b)
    assert {d.domain: d.n_segments for d in r.domains} == {"news": 3, "(none)": 3, "((none))": 3}
    assert r.no_domain == "((none))"
    a, b = _agree_runs(tmp_path, [None, None])  # no domain at all: one row of every segment, as before
    r = agree(a, b)
    assert [(d.domain, d.n_segments) for d in r.domains] == [("all", 6)] and r.no_domain == "all"
    a, b = _agree_runs(tmp_path, ["all", "news"])  # every segment has a domain: nothing to label
    r = agree(a, b)
    assert {d.domain for d in r.domains} == {"all", "news"} and r.no_domain is None


def test_summarize_total_row_is_not_named_as_a_domain() -> None:
    """Before: two rows 'all' (the domain's 2 segments, then the total's 4); filtering group == 'all' got both."""
    from ddpcore.api import summarize
    from ddpcore.pipeline.summary import distinct_label, total_note

    df = pl.DataFrame({"document_id": ["a", "a", "b", "c"], "domain": ["all", "all", "news", "(all)"],
                       "ddp": [1, 2, 0, 3]})
    t = summarize(df)
    assert t["group"].to_list() == ["(all)", "all", "news", "((all))"]
    assert t["group"].n_unique() == t.height
    assert t.row(-1, named=True)["segments"] == 4 and t.filter(pl.col("group") == "all")["segments"].item() == 2
    assert "labelled '((all))'" in total_note(t, "domain")
    plain = summarize(df.filter(pl.col("domain") == "news"))
    assert plain["group"].to_list() == ["news", "all"] and total_note(plain, "domain") == ""
    assert distinct_label("all", ["x", None]) == "all" and distinct_label("all", ["all", "(all)"]) == "((all))"


def test_report_total_row_distinct(tmp_path: Path, capsys) -> None:
    pytest.importorskip("matplotlib")
    rows = _rows()
    for r in rows:
        if r["domain"] == "lit":
            r["domain"] = "all"
    for r, i in zip(rows, range(len(rows))):
        r["source"] = f"text {i}"
    prof = _profile(rows, tmp_path / "p.parquet")
    out = tmp_path / "r.html"
    code, _, err = _run(capsys, "report", str(prof), "-o", str(out))
    assert code == 0, err
    page = out.read_text()
    i = page.index("<table>")
    body = page[i:page.index("</table>", i)]
    trs = re.findall(r"<tr([^>]*)>(.*?)</tr>", body)[1:]
    names = [html_mod.unescape(re.findall(r"<td[^>]*>(.*?)</td>", tr)[0]) for _, tr in trs]
    assert names == ["all", "news", "(all)"]  # before: all, news, all
    assert [cls for cls, _ in trs] == ["", "", ' class="all"']  # before: the domain row styled as the total too
    segs = [int(re.findall(r"<td[^>]*>(.*?)</td>", tr)[2]) for _, tr in trs]
    assert segs == [sum(r["domain"] == "all" for r in rows), sum(r["domain"] == "news" for r in rows), len(rows)]
    assert "ddp report: note: a domain value is named 'all'" in err
    meta = re.search(r'<meta name="ddpcore-signature" content="([^"]*)">', page)
    assert any("labelled '(all)'" in n for n in json.loads(html_mod.unescape(meta.group(1)))["notes"])


def test_validate_text_total_row_distinct() -> None:
    """A gold genre named 'overall': the text tables printed two rows 'overall'."""
    from ddpcore.gold.validate import ColumnReport, _column_tables, compute_column_metrics

    x, y = np.array([0.0, 1, 2, 3, 4, 5]), np.array([0.0, 1, 1, 3, 5, 5])
    per = {"overall": compute_column_metrics(x[:3], y[:3]), "news": compute_column_metrics(x[3:], y[3:])}
    lines = _column_tables("ddp", ColumnReport(overall=compute_column_metrics(x, y), by_genre=per), (5,))
    first = [ln.split()[0] for ln in lines if ln.split() and ln.split()[0] in ("overall", "news", "(overall)")]
    assert first == ["overall", "news", "(overall)", "overall", "news", "(overall)"]


@pytest.mark.spacy_model
def test_profile_summary_total_row_distinct(tmp_path: Path, capsys) -> None:
    """`ddp profile` on the bundled mini set with its news domain renamed 'all'."""
    src = tmp_path / "mini.jsonl"
    src.write_text(MINI.read_text().replace('"domain": "news"', '"domain": "all"'))
    n_all = sum('"domain": "all"' in line for line in src.read_text().splitlines())
    assert n_all > 0
    code, stdout, err = _run(capsys, "profile", str(src), "-o", str(tmp_path / "p.parquet"), "-q", "-f", "json")
    assert code == 0, err
    res = json.loads(stdout)
    groups = [r["group"] for r in res["summary"]]
    assert groups[-1] == "(all)" == res["summary_total"] and len(set(groups)) == len(groups)
    assert next(r for r in res["summary"] if r["group"] == "all")["segments"] == n_all
    assert res["summary"][-1]["segments"] == 20
    assert "ddp profile: note: a domain value is named 'all', so the summary's total row" in err
