"""Round-10 hunt: names from users' files in the human-readable layouts (``-f text``, ``-f latex``, the
Markdown signature line).

``-f text`` printed a system, metric, domain or group name as it is: a line break split a table row over two
lines, a tab or CR shifted the columns, and the columns were padded by ``len`` (a CJK character takes two
terminal columns, a combining mark none), or to a fixed width a longer name overran. Now one rule for every
text table (docs/cli.md, Conventions): a character ``str.isprintable`` does not call printable is written as
``repr`` writes it, and columns are padded to terminal width. ``-f latex`` wrote ``"`` bare (babel's ngerman
makes it active) and a leading ``[``/``*`` after ``\\\\``; the Markdown signature line's code span was ended by
a backtick in a name.

Expected strings are written out by hand (the escapes are Python's ``repr`` of the character, e.g.
``repr("\\t") == "'\\\\t'"``); alignment is checked with the slow terminal-width oracle :func:`_cols` below
(unicodedata: East Asian W/F = 2 columns, combining marks 0, else 1 — what terminals such as xterm/VTE do);
numbers come from numpy/polars over the input table, never from ddpcore.
"""
from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ddpcore.cli.main import main

#: (name in the data, as a text table must show it: the control characters as Python's repr writes them)
NAMES = [
    ("new\nline", "new\\nline"),
    ("tab\there", "tab\\there"),
    ("cr\rx", "cr\\rx"),
    ("bell\x07x", "bell\\x07x"),
    ("ls\u2028x", "ls\\u2028x"),
    ("宋体系统", "宋体系统"),  # wide: 8 terminal columns
    ("e\u0301te", "e\u0301te"),  # combining acute: 3 terminal columns
    ("a-system-name-longer-than-twenty-eight-chars", "a-system-name-longer-than-twenty-eight-chars"),
    ("plain", "plain"),
]


def _cols(s: str) -> int:
    """Terminal columns of s, one character at a time (the oracle of the alignment checks)."""
    n = 0
    for c in s:
        if unicodedata.combining(c):
            continue
        n += 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
    return n


def _long(path: Path, names: list[str], conditions: tuple[str, ...] = ("A",), seed: int = 1) -> pl.DataFrame:
    """6 documents x 5 segments x every name x every condition; system k scores about 2k (well apart)."""
    rng = np.random.default_rng(seed)
    rows = [dict(document_id=f"d{d}", segment_id=s, system=name, condition=c, score=float(2 * k + rng.normal(0, .3)))
            for d in range(6) for s in range(5) for k, name in enumerate(names) for c in conditions]
    df = pl.DataFrame(rows)
    df.write_parquet(path)
    return df


def _means(df: pl.DataFrame, key: str = "system") -> dict[str, float]:
    """Expected: the polars group mean of the input's score column."""
    return {r[key]: r["score"] for r in df.group_by(key).agg(pl.col("score").mean()).to_dicts()}


# --------------------------------------------------------------------------- ddp stats cluster -f text


def test_stats_cluster_text_one_line_per_system_and_the_mean_column_aligned(tmp_path, capsys) -> None:
    """Before: 'new\\nline' printed over two lines, the CJK/long names pushed the mean column right, the combining
    name pulled it left (padding by len to a fixed 28)."""
    df = _long(tmp_path / "long.parquet", [n for n, _ in NAMES])
    assert main(["stats", "cluster", str(tmp_path / "long.parquet"), "--in", "A", "--n-boot", "100",
                 "-f", "text"]) == 0
    out = capsys.readouterr().out
    assert "\r" not in out and "\x07" not in out and "\u2028" not in out
    lines = out.split("\n")
    rows = [ln for ln in lines if ln.startswith("  ") and not ln.strip().startswith("-")]
    assert len(rows) == len(NAMES)  # one line per system
    shown = {want: name for name, want in NAMES}
    means = _means(df)
    ends = set()
    for ln in rows:
        body, mean = ln.rsplit(" ", 1)
        name = body.split(None, 2)[2].rstrip()
        assert name in shown, ln
        assert mean == f"{means[shown[name]]:.3f}"  # expected: polars group mean, 3 decimals
        ends.add(_cols(ln))
    assert len(ends) == 1, ends  # every row ends at the same terminal column


def test_stats_cluster_compared_conditions_list_moved_systems_on_one_line(tmp_path, capsys) -> None:
    names = ["new\nline", "tab\there", "s3"]
    rng = np.random.default_rng(2)
    rows = [dict(document_id=f"d{d}", segment_id=s, system=n, condition=c,
                 score=float((k if c == "A" else -k) * 2 + rng.normal(0, .3)))
            for d in range(6) for s in range(5) for k, n in enumerate(names) for c in ("A", "B")]
    pl.DataFrame(rows).write_parquet(tmp_path / "ab.parquet")
    assert main(["stats", "cluster", str(tmp_path / "ab.parquet"), "--a", "A", "--b", "B", "--n-boot", "100",
                 "-f", "text"]) == 0
    (line,) = [ln for ln in capsys.readouterr().out.split("\n") if ln.startswith("comparison:")]
    # the order is reversed in B (means 0, 2, 4 against 0, -2, -4, well apart), so the two outer systems changed
    # cluster and the middle one kept it; written with repr's escapes
    assert sorted(line.split("; moved: ")[1].split(", ")) == ["new\\nline", "s3"], line


# --------------------------------------------------------------------------- ddp stats compare -f text


def test_stats_compare_text_one_line_per_system_and_aligned(tmp_path, capsys) -> None:
    df = _long(tmp_path / "l.parquet", [n for n, _ in NAMES]).drop("condition")
    df.write_parquet(tmp_path / "cmp.parquet")
    assert main(["stats", "compare", str(tmp_path / "cmp.parquet"), "--baseline", "plain", "--n-boot", "200",
                 "--n-ar", "200", "-f", "text"]) == 0
    out = capsys.readouterr().out
    assert "\r" not in out and "\t" not in out
    block = out.split("\n\n")[0].split("\n")
    head, rule, rows = block[1], block[2], block[3:]
    assert len(rows) == len(NAMES)  # title, header, rule, then one line per system
    means = _means(df)
    shown = {want: name for name, want in NAMES}
    for ln in rows:
        assert _cols(ln) == _cols(head) == _cols(rule), ln  # right-aligned last column: same terminal width
        cut = _index_of_col(ln, _cols(rule.split("  ")[0]))  # the name column is as wide as its rule
        name, rest = ln[:cut].rstrip(), ln[cut:].split()
        assert name in shown, ln
        assert rest[0] == f"{means[shown[name]]:.3f}"  # expected: polars group mean, 3 decimals


def _index_of_col(s: str, col: int) -> int:
    """The index in s of the character that starts at terminal column col."""
    n = 0
    for i, c in enumerate(s):
        if n >= col:
            return i
        n += 0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
    return len(s)


# --------------------------------------------------------------------------- -f latex


def test_stats_compare_latex_quote_bracket_star_and_control_characters(tmp_path, capsys) -> None:
    """'"' was written bare (babel ngerman: an active shorthand), a row starting with '[' or '*' was read as the
    optional argument / star of the '\\\\' ending the row above, and a control character went to TeX as it is."""
    names = ['q"uote', "[x]", "*star", "bell\x07", "tab\tx", "base"]
    df = _long(tmp_path / "l.parquet", names).drop("condition")
    df.write_parquet(tmp_path / "cmp.parquet")
    assert main(["stats", "compare", str(tmp_path / "cmp.parquet"), "--baseline", "base", "--n-boot", "200",
                 "--n-ar", "200", "-f", "latex"]) == 0
    lines = capsys.readouterr().out.split("\n")
    body = lines[lines.index("\\midrule") + 1: lines.index("\\bottomrule")]
    firsts = [r.split(" & ")[0].removeprefix("\\textbf{").removesuffix("}") for r in body]
    # by hand: " -> \textquotedbl{}; a leading [ or * behind {}; BEL -> \x07 and TAB -> \t, backslash as
    # \textbackslash{}
    assert sorted(firsts) == sorted(["q\\textquotedbl{}uote", "{}[x]", "{}*star", "bell\\textbackslash{}x07",
                                     "tab\\textbackslash{}tx", "base"])
    assert all(not r.lstrip().startswith(("[", "*")) for r in body)
    assert all(" & {}" not in r for r in body)  # only a row's first cell needs the guard (not the '[lo, hi]' CIs)
    assert not any(c in "\n".join(body) for c in '"\x07\t')


def test_meta_latex_quote_and_leading_bracket_in_a_metric_name(tmp_path, capsys) -> None:
    rng = np.random.default_rng(3)
    docs, segs = [f"d{i}" for i in range(6) for _ in range(4)], [j for _ in range(6) for j in range(4)]
    pl.DataFrame({"document_id": docs, "segment_id": segs, "ddp": rng.integers(0, 30, len(docs))}) \
        .write_parquet(tmp_path / "prof.parquet")
    rows = []
    for d, s in zip(docs, segs):
        for k, name in enumerate(["A", "B", "C", "D"]):
            h = k + rng.normal()
            rows.append({"document_id": d, "segment_id": s, "system": name, "mqm": h,
                         'q"m': h + rng.normal(), "[m]": h + rng.normal()})
    pl.DataFrame(rows).write_parquet(tmp_path / "scores.parquet")
    assert main(["meta", str(tmp_path / "prof.parquet"), str(tmp_path / "scores.parquet"), "--human-col", "mqm",
                 "-f", "latex", "--n-boot", "50", "--n-perm", "50", "--stat", "pearson.none"]) == 0
    lines = capsys.readouterr().out.split("\n")
    body = lines[lines.index("\\midrule") + 1: lines.index("\\bottomrule")]
    assert sorted(r.split(" & ")[0] for r in body) == ["q\\textquotedbl{}m", "{}[m]"]  # by hand, as above


# --------------------------------------------------------------------------- ddp stratify -f text


def test_stratify_text_group_names_on_one_line(tmp_path, capsys) -> None:
    rng = np.random.default_rng(0)
    docs, segs = [f"d{i}" for i in range(10) for _ in range(4)], [j for _ in range(10) for j in range(4)]
    prof = pl.DataFrame({"document_id": docs, "segment_id": segs, "ddp": rng.integers(0, 10, 40)})
    prof.write_parquet(tmp_path / "p.parquet")
    sc = pl.DataFrame([{"document_id": d, "segment_id": s, "system": n, "m1": float(rng.normal())}
                       for d, s in zip(docs, segs) for n in ["s\tA", "s\nB", "s\rC"]])
    sc.write_parquet(tmp_path / "sc.parquet")
    assert main(["stratify", str(tmp_path / "p.parquet"), str(tmp_path / "sc.parquet"), "--score-col", "m1",
                 "--by", "system", "-f", "text", "--n-boot", "50"]) == 0
    out = capsys.readouterr().out
    heads = [ln for ln in out.split("\n") if ln.startswith("system=")]
    # by hand: the names with repr's escapes; n = 40 scored segments per system (the table built above)
    assert sorted(h.split(":")[0] for h in heads) == ["system=s\\nB", "system=s\\rC", "system=s\\tA"]
    assert all(": n=40," in h for h in heads)
    assert "\r" not in out and "\t" not in out
    assert len(out.rstrip("\n").split("\n")) == 3 * (1 + 5) + 1  # 3 groups x (head + 5 default bins) + join line


# --------------------------------------------------------------------------- ddp profile summary


def test_profile_summary_text_domains_on_one_line_and_aligned(tmp_path, capsys) -> None:
    doms = ["news\tx", "lit\nbook", "宋体", "plain"]
    rows = [{"document_id": f"d{i}", "segment_id": 0, "source": "John went home. He slept.", "domain": doms[i]}
            for i in range(4)]
    (tmp_path / "seg.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    assert main(["profile", str(tmp_path / "seg.jsonl"), "-o", str(tmp_path / "seg.parquet"), "-f", "text",
                 "--no-cache"]) == 0
    out = capsys.readouterr().out
    lines = out.split("\n")
    start = lines.index(next(ln for ln in lines if ln.startswith("domain ")))
    table = lines[start: start + 2 + len(doms) + 1]  # header, rule, one row per domain, the 'all' row
    assert sorted(ln.split("  ")[0] for ln in table[2:]) == sorted(["news\\tx", "lit\\nbook", "宋体", "plain", "all"])
    # every row ends at the header's terminal column; each domain has 1 document and 1 segment (built above)
    assert {_cols(ln) for ln in table} == {_cols(table[0])}
    assert all(ln.split()[1:3] == ["1", "1"] for ln in table[2:-1])


# --------------------------------------------------------------------------- ddp agree -f text


def test_agree_text_domains_on_one_line_and_aligned(tmp_path, capsys) -> None:
    """Before: a domain padded to a fixed 16 by len: 'lit\\nbook' split the row, a longer or CJK name shifted
    the figures."""
    rng = np.random.default_rng(0)
    doms = ["news\tx", "lit\nbook", "宋体", "e\u0301te", "a-very-long-domain-name-xyz"]
    docs = [f"d{i}" for i in range(10) for _ in range(4)]
    a = pl.DataFrame({"document_id": docs, "segment_id": [j for _ in range(10) for j in range(4)],
                      "domain": [doms[i % 5] for i in range(10) for _ in range(4)], "ddp": rng.integers(0, 10, 40)})
    b = a.with_columns(ddp=pl.col("ddp") + pl.Series(rng.integers(0, 3, 40)))
    a.write_parquet(tmp_path / "a.parquet")
    b.write_parquet(tmp_path / "b.parquet")
    assert main(["agree", str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"), "-f", "text"]) == 0
    lines = capsys.readouterr().out.split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith("domain "))
    table = lines[start: start + 1 + len(doms)]
    shown = {"news\\tx": "news\tx", "lit\\nbook": "lit\nbook", "宋体": "宋体", "e\u0301te": "e\u0301te",
             "a-very-long-domain-name-xyz": "a-very-long-domain-name-xyz"}
    assert {_cols(ln) for ln in table} == {_cols(table[0])}
    for ln in table[1:]:
        name = ln.split("  ")[0]
        d = shown[name]
        x, y = a.filter(pl.col("domain") == d)["ddp"].to_numpy(), b.filter(pl.col("domain") == d)["ddp"].to_numpy()
        assert ln.split()[-5:-2] == [f"{x.mean():.2f}", f"{y.mean():.2f}", f"{y.mean() - x.mean():+.2f}"]  # numpy


# --------------------------------------------------------------------------- ddp stats tost --by -f text


def test_stats_tost_by_group_text_one_line_per_group(tmp_path, capsys) -> None:
    rng = np.random.default_rng(5)
    rows = [dict(document_id=f"d{d}", segment_id=s, system="S", grp=g, condition=c, score=float(rng.normal()))
            for d in range(6) for s in range(5) for g in ("g\nx", "g\ty") for c in ("A", "B")]
    pl.DataFrame(rows).write_parquet(tmp_path / "t.parquet")
    assert main(["stats", "tost", str(tmp_path / "t.parquet"), "--a", "A", "--b", "B", "--margin", "5",
                 "--by", "grp", "-f", "text"]) == 0
    lines = capsys.readouterr().out.rstrip("\n").split("\n")
    # head, one line per group (30 pairs each, built above), the signature line
    assert len(lines) == 4 and sorted(ln.split(":")[0] for ln in lines[1:3]) == ["  g\\nx", "  g\\ty"]
    assert all("n=30 " in ln for ln in lines[1:3])


# --------------------------------------------------------------------------- ddp mix -f text


def test_mix_text_pool_on_one_line(tmp_path, capsys) -> None:
    pl.DataFrame([dict(document_id=f"d{d}", segment_id=s, system=n, text=f"{n} {s}")
                  for d in range(2) for s in range(3) for n in ["s\n1", "s\t2"]]).write_parquet(tmp_path / "o.parquet")
    assert main(["mix", str(tmp_path / "o.parquet"), "-o", str(tmp_path / "mix.jsonl"), "-f", "text"]) == 0
    (pool,) = [ln for ln in capsys.readouterr().out.split("\n") if ln.startswith("pool: ")]
    assert sorted(pool.removeprefix("pool: ").split(", ")) == ["s\\n1", "s\\t2"]  # by hand: repr's escapes


# --------------------------------------------------------------------------- ddp blindness -f text|markdown


def _blind(tmp_path: Path) -> Path:
    df = _long(tmp_path / "bl.parquet", ["s1", "s2", "s3", "s4"], conditions=("<i>D`OC</i>", "M\nIX"))
    df.write_parquet(tmp_path / "bl.parquet")
    return tmp_path / "bl.parquet"


BLIND = ["--a", "<i>D`OC</i>", "--b", "M\nIX", "--margin", "3", "--n-boot", "100", "--n-boot-cluster", "200",
         "--attribute", "nominal"]


def test_blindness_text_keeps_condition_names_on_one_line(tmp_path, capsys) -> None:
    path = _blind(tmp_path)
    assert main(["blindness", str(path), *BLIND, "-f", "text"]) == 0
    lines = capsys.readouterr().out.rstrip("\n").split("\n")
    assert lines[0] == "Blindness battery: <i>D`OC</i> vs M\\nIX"  # by hand: repr's escape of the line break
    assert any(ln.startswith("  M\\nIX rows scored for ") for ln in lines)
    assert lines[-1].startswith("signature: {") and all(ln.startswith("  ") for ln in lines[1:-1])


def test_blindness_markdown_signature_code_span_holds_a_backtick(tmp_path, capsys) -> None:
    """CommonMark 0.31, 6.1 Code spans: a span ends at the first backtick string of the opening's length, so
    `{... "D`OC" ...}` closed at the name's backtick (and the rest rendered as text, a stray span after it);
    the fence must be a longer run. Rendered by markdown-it-py, the code element now holds the whole JSON."""
    pytest.importorskip("markdown_it")
    import lxml.html
    from markdown_it import MarkdownIt

    path = _blind(tmp_path)
    assert main(["blindness", str(path), *BLIND, "-f", "json"]) == 0
    expected = json.loads(capsys.readouterr().out)["signature"]
    assert main(["blindness", str(path), *BLIND, "-f", "markdown"]) == 0
    doc = lxml.html.fromstring(f"<div>{MarkdownIt('commonmark').enable('table').render(capsys.readouterr().out)}</div>")
    (p,) = [p for p in doc.xpath("//p") if (p.text or "").startswith("Signature:")]
    (code,) = p.xpath("code")
    assert json.loads(code.text_content()) == expected and not (code.tail or "").strip()
    # the title: the condition names as written (no <i> element, the backtick no code span, the line break a <br>)
    (strong,) = doc.xpath("//p/strong")
    for br in strong.xpath(".//br"):
        br.tail = "\n" + (br.tail or "")
    assert strong.text_content() == "Blindness battery: <i>D`OC</i> vs M\nIX" and not strong.xpath(".//i|.//code")


# --------------------------------------------------------------------------- the shared helpers


def test_text_cell_and_md_code_by_hand() -> None:
    from markdown_it import MarkdownIt

    from ddpcore.io.tables import md_code, text_cell

    # repr's escapes of TAB, LF, CR, BEL, DEL, NEL, LINE SEPARATOR, a bidi override; printable text unchanged
    assert text_cell("a\tb\nc\rd\x07e\x7ff\x85g\u2028h\u202ei") == "a\\tb\\nc\\rd\\x07e\\x7ff\\x85g\\u2028h\\u202ei"
    # a backslash is doubled (round 14: a name "a\\tb" and one "a<TAB>b" must not print alike)
    assert text_cell("宋体 e\u0301 a\\b") == "宋体 e\u0301 a\\\\b" and text_cell(7) == "7"
    # CommonMark 6.1: the fence is a run longer than any inside; a space inside each fence when the content
    # starts or ends with a backtick (one space is stripped from each side when both are spaces)
    for s, want in [("ab", "`ab`"), ("a`b", "``a`b``"), ("a``b`", "``` a``b` ```"), ("`x", "`` `x ``"),
                    (" x ", "`  x  `")]:
        assert md_code(s) == want
        html = MarkdownIt("commonmark").render(want)
        import lxml.html

        assert lxml.html.fromstring(html).xpath("//code")[0].text_content() == s
