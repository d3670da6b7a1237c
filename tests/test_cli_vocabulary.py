"""One flag vocabulary (issue 23 §1): every option of every ``ddp`` parser is in the one table of
docs/cli.md, a concept has one spelling, and the old spellings are hidden aliases that warn.

The parsers are walked from :func:`ddpcore.cli.main.build_parser`, so a subcommand added later is
held to the table without touching this file. Each command is its own test case: a failure names
the command and the flags to add to docs/cli.md (or to rename).
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from ddpcore.cli._common import DeprecatedAlias
from ddpcore.cli.main import build_parser, main

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


# ----------------------------------------------------------------------------- the table


def _section(text: str, title: str) -> list[list[str]]:
    """The rows (cells, backticks stripped) of the Markdown table under ``## title``."""
    part = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in part.splitlines():
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        cells = [c.strip().replace("`", "") for c in line.strip().strip("|").split("|")]
        rows.append(cells)
    return rows[1:]  # the header


def _cmds(cell: str) -> set[str]:
    return {c.strip() for c in cell.split(",") if c.strip()}


def _load_table() -> tuple[dict[str, tuple[str, set[str]]], dict[str, tuple[str, set[str]]], dict[str, set[str]],
                           set[str]]:
    text = DOC.read_text(encoding="utf-8")
    flags = {}
    for flag, meaning, _type, cmds in _section(text, "Flags"):
        assert flag not in flags, f"docs/cli.md: {flag} has two rows; one flag, one meaning"
        flags[flag] = (meaning, _cmds(cmds))
    deprecated = {old: (new, _cmds(cmds)) for old, new, cmds in _section(text, "Deprecated spellings")}
    removed = {old: _cmds(cmds) for old, _new, cmds in _section(text, "Removed spellings")}
    homonyms = {row[0] for row in _section(text, "Homonyms")}
    return flags, deprecated, removed, homonyms


FLAGS, DEPRECATED, REMOVED, HOMONYMS = _load_table()


def _walk(parser: argparse.ArgumentParser, name: str = ""):  # type: ignore[no-untyped-def]
    yield name or "ddp", parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, p in action.choices.items():
                yield from _walk(p, f"{name} {sub}".strip())


PARSERS = dict(_walk(build_parser()))


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and "-h" not in a.option_strings]


def _key(action: argparse.Action) -> str:
    return ", ".join(action.option_strings)


def _visible(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in _options(parser) if a.help != argparse.SUPPRESS]


#: a command whose known vocabulary problem belongs to another owner; strict: fixing it makes this fail,
#: so the entry is removed then
KNOWN: dict[str, str] = {}


def _case(cmd: str):  # type: ignore[no-untyped-def]
    if cmd in KNOWN:
        return pytest.param(cmd, marks=pytest.mark.xfail(reason=KNOWN[cmd], strict=True))
    return cmd


COMMANDS = list(PARSERS)
CONCEPT_CASES = [_case(c) for c in PARSERS]


# ----------------------------------------------------------------------------- every parser vs the table


@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_flag_is_in_the_table(cmd: str) -> None:
    """A visible option must be a row of docs/cli.md listing this command; a hidden one a deprecated or
    removed spelling of this command; every option has help text."""
    parser = PARSERS[cmd]
    missing, not_listed, hidden, no_help = [], [], [], []
    for a in _options(parser):
        key = _key(a)
        if a.help == argparse.SUPPRESS:
            ok = (isinstance(a, DeprecatedAlias) and key in DEPRECATED and cmd in DEPRECATED[key][1]) or \
                 (not isinstance(a, DeprecatedAlias) and key in REMOVED and cmd in REMOVED[key])
            if not ok:
                hidden.append(key)
            continue
        if not (a.help or "").strip():
            no_help.append(key)
        if key not in FLAGS:
            missing.append(key)
        elif cmd not in FLAGS[key][1]:
            not_listed.append(key)
    assert not missing, f"ddp {cmd}: flags not in docs/cli.md (add a row, or use the existing flag): {missing}"
    assert not not_listed, f"ddp {cmd}: add '{cmd}' to the commands of these docs/cli.md rows: {not_listed}"
    assert not hidden, (f"ddp {cmd}: hidden options that are not a listed deprecated (DeprecatedAlias) or "
                        f"removed spelling: {hidden}")
    assert not no_help, f"ddp {cmd}: options without help text: {no_help}"


@pytest.mark.parametrize("cmd", CONCEPT_CASES)
def test_one_name_per_concept(cmd: str) -> None:
    """No visible flag is an old spelling of another flag (unless docs/cli.md lists it as a homonym: the
    same word for a different thing, e.g. explain --document ID); two visible options never store into
    the same place (a --x/--no-x or --paired/--independent switch pair is one concept); column flags end in
    -col; --seed is an int defaulting to 0; -f is always -f/--format."""
    parser = PARSERS[cmd]
    old_visible = [k for a in _visible(parser) for k in a.option_strings if k in DEPRECATED and k not in HOMONYMS]
    assert not old_visible, (f"ddp {cmd}: {old_visible} are old spellings (docs/cli.md, Deprecated spellings): "
                             f"use {[DEPRECATED[k][0] for k in old_visible]}")
    by_dest: dict[str, list[argparse.Action]] = {}
    for a in _visible(parser):
        by_dest.setdefault(a.dest, []).append(a)
    for dest, acts in by_dest.items():
        switches = all(isinstance(a, (argparse._StoreTrueAction, argparse._StoreFalseAction)) for a in acts)
        assert len(acts) == 1 or switches, f"ddp {cmd}: {[_key(a) for a in acts]} are two names of '{dest}'"
    for a in _visible(parser):
        long = [o for o in a.option_strings if o.startswith("--")]
        first = (a.help or "").split(";")[0].split(":")[0].lower()
        if a.metavar in ("NAME", "COL") and re.search(r"\bcolumn\b", first) and not long[0].endswith(("-col", "-by")):
            pytest.fail(f"ddp {cmd}: {long[0]} names a column; spell it --...-col")
        if "--seed" in a.option_strings:
            assert a.type is int and a.default == 0 and not a.required, f"ddp {cmd}: --seed must default to 0"
        if "-f" in a.option_strings or "--format" in a.option_strings:
            assert a.option_strings == ["-f", "--format"], f"ddp {cmd}: spell the format flag -f/--format"


def test_table_rows_match_the_parsers() -> None:
    """No stale row: each command a row lists really has the flag (visible), each deprecated spelling is a
    DeprecatedAlias of the listed commands, and a homonym is visible somewhere."""
    have: dict[str, set[str]] = {}
    deprecated: dict[str, set[str]] = {}
    for cmd, parser in PARSERS.items():
        for a in _options(parser):
            (have if a.help != argparse.SUPPRESS else deprecated if isinstance(a, DeprecatedAlias) else {}) \
                .setdefault(_key(a), set()).add(cmd)
    stale = {f: sorted(cmds - have.get(f, set())) for f, (_, cmds) in FLAGS.items() if cmds - have.get(f, set())}
    assert not stale, f"docs/cli.md lists commands that do not have the flag: {stale}"
    stale = {f: sorted(cmds ^ deprecated.get(f, set())) for f, (_, cmds) in DEPRECATED.items()
             if cmds != deprecated.get(f, set())}
    assert not stale, f"docs/cli.md, Deprecated spellings: the commands differ from the parsers: {stale}"
    assert HOMONYMS <= set(have), f"homonyms that no command has: {HOMONYMS - set(have)}"
    meanings = [m.lower() for m, _ in FLAGS.values()]
    assert len(meanings) == len(set(meanings)), "two rows of docs/cli.md mean the same thing: one concept, two names"


def test_same_flag_same_type_everywhere() -> None:
    """A numeric flag has one type on every command (--n-boot int, --alpha float, ...)."""
    types: dict[str, set[str]] = {}
    for parser in PARSERS.values():
        for a in _visible(parser):
            if a.type in (int, float):
                types.setdefault(_key(a), set()).add(a.type.__name__)
    mixed = {k: v for k, v in types.items() if len(v) > 1}
    assert not mixed, f"numeric flags with two types: {mixed}"


def test_deprecated_aliases_warn_and_store_into_the_new_flag(capsys: pytest.CaptureFixture[str]) -> None:
    """Each DeprecatedAlias of each parser: one warning line naming the new flag; the value lands where the
    new flag puts it (planted bug: an alias that stores elsewhere or stays silent fails here)."""
    n = 0
    for cmd, parser in PARSERS.items():
        news = {o: a for a in _visible(parser) for o in a.option_strings}
        for a in _options(parser):
            if not isinstance(a, DeprecatedAlias):
                continue
            value = a.choices[0] if a.choices else "x"
            ns = argparse.Namespace(**{a.dest: None})
            a(parser, ns, value, a.option_strings[0])
            err = capsys.readouterr().err.splitlines()
            assert err == [f"{parser.prog}: warning: {a.option_strings[0]} is deprecated and will be removed in the "
                           f"next release; use {a.new}"], err
            stored = getattr(ns, a.dest)
            assert stored in (value, [value]), (cmd, a.option_strings, stored)
            targets = [news[o] for o in re.split(r"[/ ]", a.new) if o in news]
            assert targets and any(t.dest == a.dest for t in targets) or a.dest == "on", \
                f"ddp {cmd}: {a.option_strings[0]} does not store where {a.new} does"
            n += 1
    assert n >= 20


# ----------------------------------------------------------------------------- the aliases end to end


def _scores(path: Path) -> Path:
    rows = ["document_id,segment_id,system,comet"]
    for d in range(4):
        for s in range(3):
            for sysname, off in (("base", 0.0), ("A", 0.1), ("B", -0.05)):
                rows.append(f"d{d},{s},{sysname},{0.5 + off + 0.01 * ((d * 7 + s * 3) % 5)}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_compare_metric_col_alias_equals_score_col(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = _scores(tmp_path / "s.csv")
    base = ("stats", "compare", str(t), "--baseline", "base", "--n-boot", "50", "--n-ar", "50")
    code, new, err = _run(capsys, *base, "--score-col", "comet")
    assert code == 0 and err == ""
    code, old, err = _run(capsys, *base, "--metric-col", "comet")
    assert code == 0 and old == new
    assert err.splitlines() == ["ddp stats compare: warning: --metric-col is deprecated and will be removed in the "
                                "next release; use --score-col"]
    assert json.loads(new)["metrics"] == ["comet"]


def test_stats_output_file_and_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """-o FILE.json: the same JSON as stdout, written with a signature sidecar; -o FILE.tsv picks tsv;
    a -f the extension cannot hold is D880 before any work; -o the input is D133."""
    t = _scores(tmp_path / "s.csv")
    base = ("stats", "compare", str(t), "--baseline", "base", "--n-boot", "50", "--n-ar", "50", "--score-col",
            "comet")
    _, stdout_json, _ = _run(capsys, *base)
    out = tmp_path / "r.json"
    code, so, err = _run(capsys, *base, "-o", str(out))
    assert code == 0 and so == "" and f"wrote {out}" in err
    assert out.read_text() == stdout_json
    sig = json.loads((tmp_path / "r.json.signature.json").read_text())
    assert sig.pop("data")["bytes"] == out.stat().st_size and sig == json.loads(stdout_json)["signature"]
    code, _, _ = _run(capsys, *base, "-o", str(tmp_path / "r.tsv"))
    assert code == 0 and (tmp_path / "r.tsv").read_text().startswith("# signature: ")
    code, _, err = _run(capsys, *base, "-f", "markdown", "-o", str(tmp_path / "x.json"))
    assert code == 2 and "[D880]" in err and not (tmp_path / "x.json").exists()
    code, _, err = _run(capsys, *base, "-o", str(t))
    assert code == 2 and "[D101]" in err  # a .csv result: json or tsv only
    tsv = tmp_path / "s.tsv"
    tsv.write_text(t.read_text().replace(",", "\t"))
    code, _, err = _run(capsys, *("stats", "compare", str(tsv)) + base[3:], "-o", str(tsv))
    assert code == 2 and "[D133]" in err and tsv.read_text().startswith("document_id\t")


def test_stats_tost_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = ["document_id,segment_id,system,condition,score"]
    for d in range(5):
        for s in range(2):
            for c, off in (("A", 0.0), ("B", 0.01)):
                rows.append(f"d{d},{s},S,{c},{(d * 3 + s) % 4 + off}")
    t = tmp_path / "t.csv"
    t.write_text("\n".join(rows) + "\n")
    argv = ("stats", "tost", str(t), "--a", "A", "--b", "B", "--margin", "1", "--annotator-col", "")
    _, stdout_json, _ = _run(capsys, *argv)
    code, so, _ = _run(capsys, *argv, "-o", str(tmp_path / "r.json"))
    assert code == 0 and so == "" and (tmp_path / "r.json").read_text() == stdout_json
    code, so, _ = _run(capsys, *argv, "-o", "-", "-f", "text")
    assert code == 0 and so.startswith("TOST A vs B")


def test_mix_defaults_seed_0_and_assignment_beside_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = ["document_id,segment_id,system,text"] + [f"d{d},{s},{y},{y} {d} {s}" for d in range(2) for s in range(3)
                                                     for y in "ABC"]
    (tmp_path / "o.csv").write_text("\n".join(rows) + "\n")
    code, out, _ = _run(capsys, "mix", str(tmp_path / "o.csv"), "-o", str(tmp_path / "m.csv"))
    assert code == 0
    d = json.loads(out)
    assert d["signature"]["seed"] == 0 and d["outputs"]["assignment"] == str(tmp_path / "m.assignment.csv")
    first = (tmp_path / "m.csv").read_bytes()
    code, _, _ = _run(capsys, "mix", str(tmp_path / "o.csv"), "-o", str(tmp_path / "m2.csv"), "--seed", "0",
                      "--assignment", str(tmp_path / "a2.csv"))
    assert code == 0 and (tmp_path / "m2.csv").read_bytes() == first  # the default IS seed 0


def _profile_and_scores(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A small profile (Parquet with its signature), its input table and per-segment scores under other
    id names (doc, seg_idx)."""
    import polars as pl
    import pyarrow.parquet as pq

    rows = [{"document_id": f"d{d}", "segment_id": s, "domain": "news", "source": f"Text {d} {s}.",
             "ddp": (d + s) % 4, "first_sentence": s, "n_sentences": 1} for d in range(6) for s in range(4)]
    inp = tmp_path / "in.jsonl"
    pl.DataFrame(rows).select("document_id", "segment_id", "domain", "source").write_ndjson(inp)
    prof = tmp_path / "p.parquet"
    t = pl.DataFrame(rows).select("document_id", "segment_id", "domain", pl.col("n_sentences").cast(pl.Int32),
                                  pl.lit(3).alias("n_tokens"), pl.lit(1).alias("n_anchors"),
                                  pl.col("ddp").cast(pl.Int32), pl.col("first_sentence").cast(pl.Int32)).to_arrow()
    sig = {"columns": {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"}}
    pq.write_table(t.replace_schema_metadata({b"ddpcore.signature": json.dumps(sig).encode()}), prof)
    scores = tmp_path / "s.csv"
    pl.DataFrame([{"doc": r["document_id"], "seg_idx": r["segment_id"], "system": sy,
                   "comet": 0.5 + 0.1 * r["ddp"] + (0.05 if sy == "A" else 0)} for r in rows for sy in "AB"]
                 ).write_csv(scores)
    return inp, prof, scores


def test_stratify_on_alias_equals_document_col_segment_col(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, prof, scores = _profile_and_scores(tmp_path)
    base = ("stratify", str(prof), str(scores), "--score-col", "comet", "--by", "system", "--n-boot", "20")
    code, new, err = _run(capsys, *base, "--document-col", "doc", "--segment-col", "seg_idx")
    assert code == 0 and "warning" not in err
    code, old, err = _run(capsys, *base, "--on", "doc,seg_idx")
    assert code == 0 and json.loads(old)["groups"] == json.loads(new)["groups"]
    assert "ddp stratify: warning: --on is deprecated and will be removed in the next release; use " \
           "--document-col/--segment-col" in err.splitlines()
    # PROFILE_COL=SCORES_COL on one side, the profile's name on the other
    code, pairs, _ = _run(capsys, *base, "--document-col", "document_id=doc", "--segment-col", "seg_idx")
    assert code == 0 and json.loads(pairs)["groups"] == json.loads(new)["groups"]
    code, _, err = _run(capsys, *base, "--document-col", "doc", "--on", "doc,seg_idx")
    assert code == 2 and "[D881]" in err
    # without the flags the profile's names are looked for in the scores: the message names the new flags
    code, _, err = _run(capsys, *base)
    assert code == 2 and "--document-col/--segment-col" in err and "--on" not in err.replace("--on is", "")


def test_select_sample_format_and_unit_aliases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inp, prof, _ = _profile_and_scores(tmp_path)
    sel = ("select", str(inp), "--profile", str(prof), "--min-ddp", "2", "-o")
    code, new, err = _run(capsys, *sel, str(tmp_path / "a.jsonl"), "-f", "json", "--unit", "document")
    assert code == 0 and err == ""
    code, old, err = _run(capsys, *sel, str(tmp_path / "b.jsonl"), "--summary-format", "json", "--level", "document")
    assert code == 0 and json.loads(old)["summary"] == json.loads(new)["summary"]
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert [ln.split(":")[1].strip() for ln in err.splitlines()] == ["warning", "warning"]
    assert "use -f/--format" in err and "use --unit" in err
    sam = ("sample", str(inp), "--profile", str(prof), "--per-bin", "2", "--seed", "3", "-f", "json", "-o")
    code, new, _ = _run(capsys, *sam, str(tmp_path / "c.jsonl"), "--unit", "segment")
    code2, old, err = _run(capsys, *sam, str(tmp_path / "d.jsonl"), "--by", "segment")
    assert code == code2 == 0 and "use --unit" in err
    assert (tmp_path / "c.jsonl").read_bytes() == (tmp_path / "d.jsonl").read_bytes()
    assert json.loads(new)["written"] == [str(tmp_path / "c.jsonl"), str(tmp_path / "c.jsonl.signature.json")]


def test_select_outputs_names_every_file_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--reader wmt24 --outputs: the summary says the .docs, every system file and the sidecar (issue 23 §4;
    it said only 'wrote sel/top.txt')."""
    import polars as pl
    import pyarrow.parquet as pq

    n = 8
    rows = [{"document_id": f"d{i // 4}", "segment_id": i % 4, "domain": "news", "ddp": i % 3, "first_sentence": i % 4,
             "n_sentences": 1, "line_id": i + 1} for i in range(n)]
    (tmp_path / "src.txt").write_text("CANARY GUID 0\n" + "".join(f"line {i}\n" for i in range(n)))
    (tmp_path / "src.docs").write_text("canary\tcanary\n" + "".join(f"news\t{r['document_id']}\n" for r in rows))
    for lp, system in (("en-cs", "A"), ("en-cs", "B"), ("en-ja", "ref")):
        (tmp_path / "outputs" / lp).mkdir(parents=True, exist_ok=True)
        (tmp_path / "outputs" / lp / f"{system}.txt").write_text("canary\n" + "".join(f"{system} {i}\n" for i in range(n)))
    t = pl.DataFrame(rows).select("document_id", "segment_id", "domain", pl.col("n_sentences").cast(pl.Int32),
                                  pl.lit(3).alias("n_tokens"), pl.lit(1).alias("n_anchors"),
                                  pl.col("ddp").cast(pl.Int32), pl.col("first_sentence").cast(pl.Int32),
                                  "line_id").to_arrow()
    sig = {"columns": {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"}}
    pq.write_table(t.replace_schema_metadata({b"ddpcore.signature": json.dumps(sig).encode()}), tmp_path / "p.parquet")
    (tmp_path / "sel").mkdir()
    out = tmp_path / "sel" / "top.txt"
    argv = ("select", str(tmp_path / "src.txt"), "--reader", "wmt24", "--profile", str(tmp_path / "p.parquet"),
            "--min-ddp", "1", "--outputs", str(tmp_path / "outputs"), "-o", str(out))
    code, text, _ = _run(capsys, *argv)
    assert code == 0
    wrote = text.strip().splitlines()[-1]
    for f in ("top.docs", "top.txt.signature.json", "A.txt", "B.txt", "ref.txt"):
        assert f in wrote, wrote
    code, js, _ = _run(capsys, *argv, "-f", "json")
    written = json.loads(js)["written"]
    expected = [out, out.with_suffix(".docs"), *(tmp_path / "sel" / "top.outputs" / lp / f for lp, f in
                                                 (("en-cs", "A.txt"), ("en-cs", "B.txt"), ("en-ja", "ref.txt"))),
                tmp_path / "sel" / "top.txt.signature.json"]
    assert sorted(written) == sorted(str(p) for p in expected)
    assert all(Path(p).is_file() for p in written)


def test_help_text_has_no_doubled_percent() -> None:
    """argparse %-formats help strings but not descriptions or epilogs: a '95%%' written in a
    description is printed as '95%%' (stratify, plot and meta did). Every rendered help page, the
    top level and each subcommand's, shows a plain '%'."""
    shown = [(name or "ddp", p.format_help()) for name, p in _walk(build_parser())]
    bad = [name for name, text in shown if "%%" in text]
    assert len(shown) > 20 and not bad, f"'%%' printed in the --help of: {bad}"
