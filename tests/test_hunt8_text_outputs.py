"""Round-8 hunt: names from users' files (systems, metrics, conditions, domains) in every text output.

Each test writes a small table in ``tmp_path`` whose names hold a ``|``, a tab, a line break, a ``"``, HTML,
``$`` or look like numbers (``007`` beside ``7``), runs the command, and reads the output back as its format
defines: TSV with polars (``comment_prefix="#"``, every field as text) and the csv module, Markdown with
markdown-it-py (CommonMark + GFM tables) and lxml. The expected values come from numpy/scipy over the input
table (said at each assertion), never from ddpcore.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import scipy.stats

from ddpcore.cli.main import main

#: system names that break a naive TSV or Markdown table, or collide when read as numbers
NAMES = ["a|b", "tab\there", "new\nline", 'q"uote', "007", "7", "<script>x</script>", "*em*", "#hash", "c,d"]


def _long(path: Path, names: list[str] = NAMES, conditions: tuple[str, ...] = ("A",), seed: int = 1) -> pl.DataFrame:
    """6 documents x 5 segments x every name x every condition; system k scores about k."""
    rng = np.random.default_rng(seed)
    rows = [dict(document_id=f"d{d}", segment_id=s, system=name, condition=c, score=float(k + rng.normal(0, 1)))
            for d in range(6) for s in range(5) for k, name in enumerate(names) for c in conditions]
    df = pl.DataFrame(rows)
    df.write_parquet(path)
    return df


def _read_tsv(text: str) -> pl.DataFrame:
    return pl.read_csv(io.StringIO(text), separator="\t", comment_prefix="#", infer_schema=False)


def _csv_rows(text: str) -> list[list[str]]:
    """The records of a TSV by the csv module, without the '# signature' comment lines."""
    return [r for r in csv.reader(io.StringIO(text, newline=""), delimiter="\t") if not (r and r[0].startswith("#"))]


def _md_tables(text: str) -> list[list[list[str]]]:
    """Every table of a Markdown text as rendered by markdown-it (GFM tables): rows of cell texts, a <br>
    read as a line break."""
    from markdown_it import MarkdownIt
    import lxml.html

    html = MarkdownIt("commonmark").enable("table").render(text)
    doc = lxml.html.fromstring(f"<div>{html}</div>")
    out = []
    for table in doc.xpath("//table"):
        rows = []
        for tr in table.xpath(".//tbody/tr"):
            cells = []
            for td in tr.xpath("td"):
                for br in td.xpath(".//br"):
                    br.tail = "\n" + (br.tail or "")
                cells.append(td.text_content())
            rows.append(cells)
        out.append(rows)
    return out


# --------------------------------------------------------------------------- ddp stats * -f tsv


def test_stats_cluster_tsv_reads_back_every_system_name(tmp_path, capsys) -> None:
    """`ddp stats cluster -f tsv` wrote names as they are: a tab split a row into one column more, a line break
    into two rows, so polars/csv read shifted rows (systems 'tab', 'new'). Now quoted as RFC 4180."""
    df = _long(tmp_path / "long.parquet")
    out = tmp_path / "c.tsv"
    assert main(["stats", "cluster", str(tmp_path / "long.parquet"), "--in", "A", "--n-boot", "100", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    got = _read_tsv(text)
    # expected: the input's system names and their mean scores (polars group mean of the input rows)
    means = {r["system"]: r["score"] for r in df.group_by("system").agg(pl.col("score").mean()).to_dicts()}
    assert sorted(got["system"].to_list()) == sorted(NAMES)
    for s, m in zip(got["system"], got["mean"]):
        assert float(m) == pytest.approx(means[s], rel=1e-12)
    rows = _csv_rows(text)
    assert len(rows) == 1 + len(NAMES) and all(len(r) == len(rows[0]) for r in rows)
    assert sorted(r[rows[0].index("system")] for r in rows[1:]) == sorted(NAMES)


def test_stats_tost_by_group_tsv_keeps_group_names(tmp_path, capsys) -> None:
    """`ddp stats tost --by` with group values holding a tab or line break: the same, now quoted."""
    df = _long(tmp_path / "long.parquet", names=["s1", "s2"], conditions=("A", "B"))
    groups = {"s1": "g\tone", "s2": "g\ntwo"}
    df = df.with_columns(pl.col("system").replace_strict(groups).alias("grp"))
    df.write_parquet(tmp_path / "long.parquet")
    assert main(["stats", "tost", str(tmp_path / "long.parquet"), "--a", "A", "--b", "B", "--margin", "1", "--by", "grp",
                 "-f", "tsv"]) == 0
    got = _read_tsv(capsys.readouterr().out)
    assert sorted(got["grp"].to_list()) == sorted(groups.values())
    for g, n in zip(got["grp"], got["n"]):  # expected n: rows of condition A in the group (= pairs)
        assert int(n) == df.filter((pl.col("grp") == g) & (pl.col("condition") == "A")).height


# --------------------------------------------------------------------------- ddp stats compare -f tsv|markdown


def _compare_table(path: Path) -> pl.DataFrame:
    df = _long(path.with_suffix(".tmp.parquet"))
    df = df.drop("condition")
    df.write_parquet(path)
    return df


def test_stats_compare_tsv_reads_back_every_system_name(tmp_path, capsys) -> None:
    df = _compare_table(tmp_path / "cmp.parquet")
    assert main(["stats", "compare", str(tmp_path / "cmp.parquet"), "--baseline", "7", "--n-boot", "200",
                 "--n-ar", "200", "-f", "tsv"]) == 0
    got = _read_tsv(capsys.readouterr().out)
    means = {r["system"]: r["score"] for r in df.group_by("system").agg(pl.col("score").mean()).to_dicts()}
    assert sorted(got["system"].to_list()) == sorted(NAMES)  # '007' and '7' stay two systems
    for s, m in zip(got["system"], got["score"]):  # expected: the mean score of the system's rows
        assert float(m) == pytest.approx(means[s], rel=1e-9)


def test_stats_compare_markdown_renders_every_system_name(tmp_path, capsys) -> None:
    """`-f markdown` escaped only '|': a line break cut the row in two, '<script>x</script>' vanished as HTML,
    '*em*' rendered as 'em' in italics. Rendered by markdown-it, the first column now reads as the input."""
    df = _compare_table(tmp_path / "cmp.parquet")
    assert main(["stats", "compare", str(tmp_path / "cmp.parquet"), "--baseline", "7", "--n-boot", "200",
                 "--n-ar", "200", "-f", "markdown"]) == 0
    (table,) = _md_tables(capsys.readouterr().out)
    assert sorted(r[0] for r in table) == sorted(NAMES) and all(len(r) == len(table[0]) for r in table)
    means = {r["system"]: r["score"] for r in df.group_by("system").agg(pl.col("score").mean()).to_dicts()}
    for r in table:  # expected: the mean score, printed with 3 decimals
        assert r[1] == f"{means[r[0]]:.3f}"


def test_stats_compare_markdown_title_with_colon_in_the_baseline(tmp_path, capsys) -> None:
    """The Markdown title kept the text after the first ': ' of the plain title, so a baseline named 'x: y'
    leaked ': y' into it."""
    df = _compare_table(tmp_path / "cmp.parquet")
    df.with_columns(pl.col("system").replace({"7": "base: line"})).write_parquet(tmp_path / "cmp.parquet")
    assert main(["stats", "compare", str(tmp_path / "cmp.parquet"), "--baseline", "base: line", "--n-boot", "200",
                 "--n-ar", "200", "-f", "markdown"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("**score** — document unit (6 units, 30 segments)"), first


def test_stats_compare_latex_keeps_names_inside_the_table(tmp_path, capsys) -> None:
    """`-f latex`: a line break in the metric name ended the leading '%' comment, so the rest of the title was
    typeset before the table; '<', '>' and '|' were written bare, which LaTeX's default (OT1) fonts print as
    inverted marks and a dash. (No LaTeX here: the check is on the text, by the LaTeX rules just said.)"""
    df = _compare_table(tmp_path / "cmp.parquet")
    df.rename({"score": "sc\nore"}).write_parquet(tmp_path / "cmp.parquet")
    assert main(["stats", "compare", str(tmp_path / "cmp.parquet"), "--baseline", "7", "--score-col", "sc\nore",
                 "--n-boot", "200", "--n-ar", "200", "-f", "latex"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = lines[:lines.index("\\begin{tabular}{lrrrrrrl}")]
    assert head and all(x.startswith("%") for x in head)  # nothing typeset outside the tabular
    body = "\n".join(lines)
    assert "\\textless{}script\\textgreater{}x\\textless{}/script\\textgreater{}" in body
    assert "a\\textbar{}b" in body and "<script>" not in body and "a|b" not in body


# --------------------------------------------------------------------------- ddp meta -f tsv|markdown


def _meta_inputs(tmp_path: Path, metrics: tuple[str, ...] = ("m\tb", 'q"m', "m|c")) -> tuple[Path, Path, pl.DataFrame]:
    rng = np.random.default_rng(3)
    docs, segs = [f"d{i}" for i in range(6) for _ in range(4)], [j for _ in range(6) for j in range(4)]
    prof = pl.DataFrame({"document_id": docs, "segment_id": segs, "ddp": rng.integers(0, 30, len(docs))})
    prof.write_parquet(tmp_path / "prof.parquet")
    rows = []
    for d, s in zip(docs, segs):
        for k, name in enumerate(["A", "B", "C", "D"]):
            h = k + rng.normal()
            rows.append({"document_id": d, "segment_id": s, "system": name, "mqm": h,
                         **{m: h + rng.normal() for m in metrics}})
    sc = pl.DataFrame(rows)
    sc.write_parquet(tmp_path / "scores.parquet")
    return tmp_path / "prof.parquet", tmp_path / "scores.parquet", sc


def test_meta_tsv_keeps_metric_names(tmp_path, capsys) -> None:
    """`ddp meta -f tsv` turned a tab in a metric name into a space ('m\\tb' read back as 'm b', a name that
    another metric may have) and wrote a line break as it is (a row cut in two). Now quoted."""
    prof, scores, sc = _meta_inputs(tmp_path)
    assert main(["meta", str(prof), str(scores), "--human-col", "mqm", "-f", "tsv", "--n-boot", "50",
                 "--n-perm", "50"]) == 0
    got = _read_tsv(capsys.readouterr().out)
    assert set(got["metric"].to_list()) == {"m\tb", 'q"m', "m|c"}
    for m in ("m\tb", 'q"m', "m|c"):  # expected: scipy's Pearson r over every cell (overall, no grouping)
        row = got.filter((pl.col("bin") == "overall") & (pl.col("metric") == m) & (pl.col("stat") == "pearson.none"))
        assert float(row["value"][0]) == pytest.approx(scipy.stats.pearsonr(sc["mqm"], sc[m]).statistic, rel=1e-5)


def test_meta_markdown_renders_metric_names(tmp_path, capsys) -> None:
    prof, scores, _ = _meta_inputs(tmp_path, metrics=("m\nx", "<b>m</b>", "m|c"))
    assert main(["meta", str(prof), str(scores), "--human-col", "mqm", "-f", "markdown", "--n-boot", "50",
                 "--n-perm", "50"]) == 0
    tables = _md_tables(capsys.readouterr().out)
    assert tables and all(sorted(r[0] for r in t) == sorted(["m\nx", "<b>m</b>", "m|c"]) for t in tables)


@pytest.mark.parametrize("name", ["__ddp", "__doc", "__hit"])
def test_meta_metric_named_like_a_working_column_is_refused(tmp_path, capsys, name) -> None:
    """A metric column named '__ddp' (or '__doc', '__hit'...) was overwritten by ddp meta's own join columns: the
    metric's scores read as the DDP values (every segment in another bin) or the document codes (Pearson 0.03
    instead of 0.9), exit 0. Now D971 naming the column."""
    prof, scores, sc = _meta_inputs(tmp_path, metrics=("m1",))
    sc.rename({"m1": name}).write_parquet(scores)
    assert main(["meta", str(prof), str(scores), "--human-col", "mqm", "-f", "tsv", "--n-boot", "50",
                 "--n-perm", "50"]) == 3
    err = capsys.readouterr().err
    assert "[D971]" in err and repr(name) in err and "D999" not in err


def test_meta_long_form_metric_named_like_a_key_column_is_refused(tmp_path, capsys) -> None:
    """Long form (--metric-name-col): a metric named 'system' was a D999 (duplicate column after the pivot)."""
    prof, scores, sc = _meta_inputs(tmp_path, metrics=("m1", "m2"))
    long = sc.unpivot(index=["document_id", "segment_id", "system"], variable_name="metric", value_name="score")
    long.with_columns(pl.col("metric").replace({"m2": "system"})).write_parquet(scores)
    assert main(["meta", str(prof), str(scores), "--metric-name-col", "metric", "--human-col", "mqm",
                 "--n-boot", "50", "--n-perm", "50"]) == 3
    err = capsys.readouterr().err
    assert "[D971]" in err and "'system'" in err and "D999" not in err


# --------------------------------------------------------------------------- ddp stratify -f tsv


def test_stratify_tsv_keeps_group_names(tmp_path, capsys) -> None:
    prof, scores, sc = _meta_inputs(tmp_path, metrics=("m1",))
    names = {"A": "a\tb", "B": "n\nl", "C": 'q"', "D": "#d"}
    sc = sc.with_columns(pl.col("system").replace_strict(names))
    sc.write_parquet(scores)
    assert main(["stratify", str(prof), str(scores), "--score-col", "m1", "--by", "system", "-f", "tsv",
                 "--n-boot", "50"]) == 0
    got = _read_tsv(capsys.readouterr().out)
    assert set(got["system"].to_list()) == set(names.values())
    joined = sc.join(pl.read_parquet(prof), on=["document_id", "segment_id"])
    for r in got.filter(pl.col("bin_n") != "0").iter_rows(named=True):  # expected: numpy mean of the bin's scores
        x = joined.filter((pl.col("system") == r["system"]) & (pl.col("ddp") >= float(r["low"]))
                          & (pl.col("ddp") < float(r["high"])))["m1"].to_numpy()
        assert int(r["bin_n"]) == x.size and float(r["mean"]) == pytest.approx(np.mean(x), rel=1e-5)


# --------------------------------------------------------------------------- ddp blindness -f markdown


def test_blindness_markdown_condition_names_keep_the_table(tmp_path, capsys) -> None:
    """Condition names in the statistic column were not escaped at all (a '|' added a cell) and a line break in
    either column cut the row: every rendered row now has the two cells."""
    df = _long(tmp_path / "bl.parquet", names=["s1", "s2", "s3", "s4"], conditions=("D|OC", "M\nIX"))
    df.write_parquet(tmp_path / "bl.parquet")
    assert main(["blindness", str(tmp_path / "bl.parquet"), "--a", "D|OC", "--b", "M\nIX", "--margin", "3",
                 "--n-boot", "100", "--n-boot-cluster", "200", "--attribute", "nominal", "-f", "markdown"]) == 0
    (table,) = _md_tables(capsys.readouterr().out)
    assert all(len(r) == 2 for r in table)
    assert "M\nIX rows scored for" in [r[0] for r in table]


# --------------------------------------------------------------------------- ddp select --evaluate


@pytest.mark.parametrize("name", ["__e", "__row", "document_id"])
def test_select_evaluate_system_named_like_a_column(name) -> None:
    """The human scores were pivoted to one column per system name: a system '__e' or '__row' was read as the
    DDP or the row numbers (tau 1.0 for it, exit 0), 'document_id' was a D999 (duplicate column)."""
    from ddpcore.curate.evaluate import EvaluateOptions, evaluate_selection

    rng = np.random.default_rng(0)
    n = 40
    e = rng.integers(0, 10, n).astype(float)
    h = rng.normal(size=(n, 3)) + np.array([0.0, 1.0, 2.0])
    systems = ["A", name, "C"]
    rows = [{"document_id": f"d{i // 4}", "segment_id": i % 4, "system": s, "mqm": float(h[i, j])}
            for i in range(n) for j, s in enumerate(systems)]
    prof = pl.DataFrame({"document_id": [f"d{i // 4}" for i in range(n)], "segment_id": [i % 4 for i in range(n)],
                         "ddp": e})
    res = evaluate_selection(pl.DataFrame(rows), prof, human_col="mqm",
                             options=EvaluateOptions(budgets=(1.0,), n_random=5))
    t = res.tables[0]
    # budget 1.0 keeps every segment: expected mean human score = numpy mean of h; Kendall estimator = mean over
    # systems of scipy.stats.kendalltau(DDP, human scores of the system)
    assert t["mean_human"]["selected"] == pytest.approx(h.mean(), rel=1e-12)
    tau = np.mean([scipy.stats.kendalltau(e, h[:, j]).statistic for j in range(3)])
    assert t["tau_estimator"]["selected"] == pytest.approx(tau, rel=1e-9)


# --------------------------------------------------------------------------- ddp plot / ddp report


def test_plot_and_report_draw_dollar_signs_as_written(tmp_path, capsys) -> None:
    """A domain '$\\foo$' was parsed as matplotlib mathtext: D999 (unknown symbol) in `ddp plot --by domain` and
    `ddp report`; 'cost $5-$10' was drawn as math. Labels are now text."""
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(4)
    n = 24
    prof = pl.DataFrame({"document_id": [f"d{i // 4}" for i in range(n)], "segment_id": [i % 4 for i in range(n)],
                         "domain": ["$\\foo$", "cost $5-$10"] * (n // 2), "ddp": rng.integers(0, 12, n),
                         "ddp_certified": np.zeros(n, dtype=np.int64), "first_sentence": ["x"] * n})
    prof.write_parquet(tmp_path / "p.parquet")
    assert main(["plot", str(tmp_path / "p.parquet"), "--by", "domain", "-o", str(tmp_path / "p.svg")]) == 0
    svg = (tmp_path / "p.svg").read_text(encoding="utf-8")
    assert "$\\foo$ (n=12)" in svg and "cost $5-$10 (n=12)" in svg  # expected: 12 segments per domain (n / 2)
    assert main(["report", str(tmp_path / "p.parquet"), "-o", str(tmp_path / "r.html")]) == 0
    assert "cost $5-$10" in (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "D999" not in capsys.readouterr().err
