"""Bug hunt 11 (docs examples): every command of the user docs (README.md and docs/*.md) runs as written.

The commands are read from the pages at test time, so a page and this file cannot drift apart:

* every ``ddp ...`` line of a shell block parses with the ``ddp`` parser (a flag that no longer exists,
  a value outside a flag's choices, a subcommand that is gone fail here), and every inline ``ddp ...``
  span of the prose uses flags its subcommand has;
* every ``ddpcore.x.y`` name and ``from ddpcore... import`` of the pages resolves, and the keywords of
  the documented calls exist in the signatures;
* the blocks that can run offline on small data run as written (no spaCy: fixtures below, a synthetic
  profile with its signature where a profile is read; the mt-metrics-eval block, which profiles a
  6-line source, is marked ``spacy_model``), each command exiting 0 (1 allowed for a ``--fail-on`` gate).

Defects these tests found (each failed before its fix):

* ``ddp profile en-de.txt --reader wmt24|lines`` run in an mt-metrics-eval ``sources/`` folder said
  ``[D602] no .docs file found`` although docs/readers.md promises the ``../documents/<stem>.docs``
  lookup: for a bare or ``../`` relative path ``Path.parent.parent`` is ``.``, so it looked in
  ``./documents/``. It now looks one folder up lexically (``../documents/en-de.docs``).
* the D861 message (``--engine ray`` with a dataset at a URI) told the user to ``convert it with
  `ddp convert```, a command ddpcore does not have; it now says how to convert (a Parquet table).
* the Python-only messages of ``metric_human_consistency`` and ``binom_test`` named flags that no
  command has (``--tie-threshold``, ``--alternative``); they now name the keywords.
* docs/stats-cli.md documented ``cluster_systems(method=..., n_boot=1000)``, a ``TypeError``
  (``n_boot`` is a field of ``options=ResampleOptions``); docs/curation.md's ``-o sel/high.txt``
  stopped with D130 in a fresh folder (``mkdir -p sel`` added).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import io
import json
import re
import shlex
import shutil
import zlib
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.cli.main import SUBCOMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
#: the user docs; docs/errors.md is generated from the source (its messages are checked below instead)
PAGES = [ROOT / "README.md"] + [p for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "errors.md"]
SHELL = {"", "bash", "sh", "shell", "console"}


# ----------------------------------------------------------------------------- reading the pages


def fenced_blocks(text: str) -> list[tuple[int, str, list[tuple[int, str]]]]:
    """``(line of the fence, language, [(line, text)])`` of every fenced block."""
    out, body, start, lang = [], None, 0, ""
    for i, line in enumerate(text.splitlines(), 1):
        if body is None and line.startswith("```"):
            body, start, lang = [], i, line[3:].strip()
        elif body is not None and line.startswith("```"):
            out.append((start, lang, body))
            body = None
        elif body is not None:
            body.append((i, line))
    return out


def logical_lines(body: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The block's lines with ``\\`` continuations joined (line number of the first)."""
    out, cur, first = [], "", None
    for i, line in body:
        first = i if first is None else first
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        out.append((first, cur + line))
        cur, first = "", None
    return out


def ddp_argvs(line: str) -> list[list[str]]:
    """The argument lists of the ``ddp`` commands of one shell line (comments, redirections, pipes,
    ``&&`` and leading ``VAR=value`` assignments removed)."""
    try:
        toks = shlex.split(line, comments=True)
    except ValueError:
        return []
    cmds, cur = [], []
    for t in toks:
        if t in ("&&", "||", "|", ";"):
            cmds.append(cur)
            cur = []
        else:
            cur.append(t)
    cmds.append(cur)
    out = []
    for c in cmds:
        while c and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", c[0]):
            c = c[1:]
        if not c or c[0] != "ddp":
            continue
        argv, skip = [], False
        for t in c[1:]:
            if skip:
                skip = False
            elif t in (">", "2>", ">>", "<"):
                skip = True
            else:
                argv.append(t)
        out.append(argv)
    return out


def _commands() -> list[tuple[str, int, list[str]]]:
    out = []
    for page in PAGES:
        for _start, lang, body in fenced_blocks(page.read_text(encoding="utf-8")):
            if lang in SHELL:
                for line, text in logical_lines(body):
                    out += [(page.name, line, argv) for argv in ddp_argvs(text)]
    return out


def _inline() -> list[tuple[str, int, str]]:
    out = []
    for page in PAGES:
        for i, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            out += [(page.name, i, m.group(1)) for m in re.finditer(r"`(ddp [^`]+)`", line)]
    return out


COMMANDS = _commands()
INLINE = _inline()
PARSER = build_parser()


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def _command_parser(argv: list[str]) -> tuple[argparse.ArgumentParser | None, list[str]]:
    """The parser of the (sub)command ``argv`` names and the rest of ``argv``; None for a word that names
    no subcommand."""
    p, rest = PARSER, list(argv)
    while rest and _subparsers(p):
        sub = _subparsers(p)
        if rest[0] not in sub:
            return (None, rest) if not rest[0].startswith("-") else (p, rest)
        p, rest = sub[rest[0]], rest[1:]
    return p, rest


# ----------------------------------------------------------------------------- every documented command parses


def test_the_pages_have_commands() -> None:
    """The extraction found the pages' commands at all (a broken reader would pass every test below)."""
    assert len(COMMANDS) > 100
    pages = {p for p, _, _ in COMMANDS}
    assert {"curation.md", "stats-cli.md", "stats-compare.md", "mix-blindness.md", "readers.md", "meta.md"} <= pages


@pytest.mark.parametrize(("page", "line", "argv"), COMMANDS, ids=[f"{p}:{ln}" for p, ln, _ in COMMANDS])
def test_documented_command_parses(page: str, line: int, argv: list[str]) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            PARSER.parse_args(argv)
        except SystemExit as exc:
            assert not exc.code, f"{page}:{line}: `ddp {shlex.join(argv)}` does not parse: {err.getvalue().strip()}"


def test_inline_commands_use_existing_flags() -> None:
    """``ddp CMD --flag`` in the prose: CMD is a subcommand (or a placeholder such as ``ddp stats *``)
    and each flag is one of its options."""
    bad = []
    for page, line, span in INLINE:
        for argv in ddp_argvs(span):
            p, rest = _command_parser(argv)
            if p is None:
                continue  # a placeholder or a quoted message ("ddp stats tau: note: ...")
            for t in rest:
                opt = t.split("=", 1)[0]
                if re.match(r"^--?[A-Za-z]", opt) and opt not in p._option_string_actions:
                    bad.append(f"{page}:{line}: `{span}`: {opt}")
    assert not bad, "flags the parser does not have:\n" + "\n".join(bad)


def test_messages_name_existing_commands() -> None:
    """A message or help text that tells the user to run `ddp WORD ...` names a real subcommand
    (D861 said `ddp convert`)."""
    bad = []
    for path in sorted((ROOT / "src" / "ddpcore").rglob("*.py")):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in re.finditer(r"`ddp ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?", line):
                word, second = m.group(1), m.group(2)
                if word not in SUBCOMMANDS:
                    bad.append(f"{path.relative_to(ROOT)}:{i}: `ddp {word}`")
                elif second and _subparsers(_subparsers(PARSER)[word]) and second not in _subparsers(
                        _subparsers(PARSER)[word]):
                    bad.append(f"{path.relative_to(ROOT)}:{i}: `ddp {word} {second}`")
    assert not bad, "messages naming commands that do not exist:\n" + "\n".join(bad)


def test_python_messages_name_keywords_not_missing_flags() -> None:
    """The Python-only functions' usage errors name their keywords, not flags no command has."""
    from ddpcore.errors import DDPUsageError
    from ddpcore.stats.binom import binom_test
    from ddpcore.stats.metric_s import metric_human_consistency

    with pytest.raises(DDPUsageError, match="D554") as exc:
        metric_human_consistency(["i", "i"], ["a", "b"], [1.0, 2.0], [1.0, 2.0], tie_threshold=-1)
    assert "--tie-threshold" not in str(exc.value) and "tie_threshold" in str(exc.value)
    with pytest.raises(DDPUsageError, match="D540") as exc:
        binom_test(3, 10, alternative="bigger")
    assert "--alternative" not in str(exc.value) and "alternative" in str(exc.value)


# ----------------------------------------------------------------------------- Python names and calls


def _resolve(name: str):  # type: ignore[no-untyped-def]
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for j in range(2, min(i, len(parts) - 1) + 1):
            # a module path a user reads attribute by attribute (``ddpcore.stats.stratify.stratify``) must not
            # pass through a package attribute that is no module (``ddpcore.stats.stratify`` is the function)
            parent = importlib.import_module(".".join(parts[:j - 1]))
            if not inspect.ismodule(getattr(parent, parts[j - 1], None)):
                raise AttributeError(f"{'.'.join(parts[:j])} is not the module {'.'.join(parts[:j])} as an attribute")
        for attr in parts[i:]:
            obj = getattr(obj, attr)  # AttributeError: the name is gone
        return obj
    raise ImportError(name)


def test_documented_names_resolve() -> None:
    bad = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        names = set(re.findall(r"(?<![\w.-])ddpcore(?:\.[A-Za-z_]\w*)+", text))
        for mod, what in re.findall(r"from (ddpcore[\w.]*) import ([\w, ]+)", text):
            names |= {f"{mod}.{n.strip()}" for n in what.split(",") if n.strip()}
        for name in sorted(names):
            if name == "ddpcore.signature":  # the Parquet metadata key, not a module
                continue
            try:
                _resolve(name)
            except (ImportError, AttributeError) as exc:
                bad.append(f"{page.name}: {name} ({exc!r})")
    assert not bad, "\n".join(bad)


def _documented_callables() -> dict[str, Callable[..., object]]:
    """Short names a page may call without a module: the public functions and option classes."""
    out: dict[str, Callable[..., object]] = {}
    for mod in ("ddpcore", "ddpcore.api", "ddpcore.stats"):
        m = importlib.import_module(mod)
        for n in getattr(m, "__all__", []):
            obj = getattr(m, n, None)
            if callable(obj):
                out[n] = obj
    return out


#: docs/validation.md may not be edited in this round; its one wrong call is reported instead
#: (``profile_anchors(..., sentence_unit="segment")``: ``sentence_unit`` is a ``ProfileOptions`` field)
CALL_PAGES = [p for p in PAGES if p.name != "validation.md"]


@pytest.mark.parametrize("page", CALL_PAGES, ids=[p.name for p in CALL_PAGES])
def test_documented_call_keywords_exist(page: Path) -> None:
    """``f(..., kw=...)`` on a page: ``kw`` is a parameter of ``f`` (nested calls checked on their own)."""
    short = _documented_callables()
    call = re.compile(r"(?<![\w.)])((?:ddpcore\.)?[A-Za-z_][\w.]*)\(((?:[^()]|\([^()]*\))*)\)")
    bad = []
    for i, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        for m in call.finditer(line):
            name, args = m.group(1), m.group(2)
            if name.startswith("ddpcore."):
                try:
                    fn = _resolve(name)
                except (ImportError, AttributeError):
                    continue  # test_documented_names_resolve says so
            elif name in short:
                fn = short[name]
            else:
                continue
            flat = re.sub(r"\([^()]*\)", "()", args)
            kws = set(re.findall(r"(?:^|[,(]\s*)([A-Za-z_]\w*)\s*=(?!=)", flat))
            try:
                params = inspect.signature(fn).parameters
            except (TypeError, ValueError):
                continue
            if any(p.kind is p.VAR_KEYWORD for p in params.values()):
                continue
            missing = sorted(k for k in kws if k not in params)
            if missing:
                bad.append(f"{page.name}:{i}: {name}(...) has no {missing}")
    assert not bad, "\n".join(bad)


# ----------------------------------------------------------------------------- .docs found one folder up


def test_docs_file_found_in_the_wmt_layout_from_the_sources_folder(tmp_path: Path, monkeypatch) -> None:
    """docs/readers.md: ``en-de.txt`` -> ``../documents/en-de.docs`` (the WMT repository layout), also when
    the source is given as a bare name inside ``sources/`` (was D602: it looked in ``./documents/``)."""
    from ddpcore.io.readers import default_docs
    from ddpcore.io.sources import iter_input_chunks
    from ddpcore.schema import SegmentColumns

    (tmp_path / "sources").mkdir()
    (tmp_path / "documents").mkdir()
    (tmp_path / "sources" / "en-de.txt").write_text("The cat sat.\nIt left.\nA dog came.\n", encoding="utf-8")
    (tmp_path / "documents" / "en-de.docs").write_text("news\td1\nnews\td1\nnews\td2\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path / "sources")
    assert default_docs(Path("en-de.txt")) == Path("..") / "documents" / "en-de.docs"
    frames = [f for f, _ in iter_input_chunks("en-de.txt", SegmentColumns(), reader="lines")]
    # the documents of the three lines, as written in the .docs file above
    assert pl.concat(frames)["document_id"].to_list() == ["d1", "d1", "d2"]
    monkeypatch.chdir(tmp_path)  # from the test set's folder it was and is found
    assert default_docs(Path("sources/en-de.txt")) == Path("documents/en-de.docs")
    monkeypatch.chdir(tmp_path / "documents")
    assert default_docs(Path("../sources/en-de.txt")) == Path("..") / "documents" / "en-de.docs"


# ----------------------------------------------------------------------------- fixtures for the runnable blocks


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def _bundled() -> pl.DataFrame:
    return pl.read_ndjson(str(files("ddpcore") / "data" / "wmt25_en_source.jsonl"))


SIG = {"columns": {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"}}


def _write_profile(frame: pl.DataFrame, path: Path) -> None:
    pq.write_table(frame.to_arrow().replace_schema_metadata({b"ddpcore.signature": json.dumps(SIG).encode()}), path)


def _synthetic_profile(src: pl.DataFrame) -> pl.DataFrame:
    """A `ddp profile`-shaped table of ``src`` (one sentence per segment, seeded DDP values)."""
    rng = _rng("profile")
    ddp = rng.choice([0, 0, 1, 3, 7, 16, 20, 60], src.height)
    return src.select("document_id", "segment_id", "domain").with_columns(
        pl.lit(1).alias("n_sentences"), pl.Series("ddp", ddp),
        pl.Series("ddp_certified", np.minimum(ddp, rng.choice([0, 1, 5, 20], src.height))),
        pl.int_range(pl.len()).over("document_id").alias("first_sentence"))


def make_segments(d: Path) -> None:
    """segments.jsonl / .csv: the bundled source; ddp.parquet: its synthetic profile."""
    src = _bundled()
    src.write_ndjson(d / "segments.jsonl")
    src.write_csv(d / "segments.csv")
    _write_profile(_synthetic_profile(src), d / "ddp.parquet")


def make_wmt24(d: Path) -> None:
    """The WMT24 layout of the bundled source without its literary chapters (canary line first), txt/ with
    three aligned systems, and ddp24.parquet, the profile of those rows."""
    src = _bundled().filter(pl.col("domain") != "literary")
    lines = ["CANARY GUID 00000000-0000-0000-0000-000000000000"] + [s.replace("\n", " ") for s in src["source"]]
    (d / "wmt24_en_source.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    docs = ["canary\tcanary"] + [f"{a}\t{b}" for a, b in zip(src["domain"], src["document_id"])]
    (d / "wmt24_en.docs").write_text("\n".join(docs) + "\n", encoding="utf-8")
    (d / "txt").mkdir()
    for system in ("sysA", "sysB"):
        out = ["canary"] + [f"{system} {i}" for i in range(src.height)]
        (d / "txt" / f"{system}.txt").write_text("\n".join(out) + "\n", encoding="utf-8")
    _write_profile(_synthetic_profile(src), d / "ddp24.parquet")


def make_scores_tsv(d: Path) -> None:
    """Metric scores of 2 systems keyed both ways (doc/seg_idx as the WMT25 exports, document_id/segment_id)."""
    keys = _bundled().select("document_id", "segment_id")
    rng = _rng("scores.tsv")
    parts = [keys.with_columns(pl.col("document_id").alias("doc"), pl.col("segment_id").alias("seg_idx"),
                               pl.lit(s).alias("system"), pl.Series("XCOMET-XL", rng.uniform(0.3, 0.9, keys.height)),
                               pl.Series("CometKiwi-XL", rng.uniform(0.4, 0.9, keys.height)))
             for s in ("S1", "S2")]
    pl.concat(parts).write_csv(d / "scores.tsv", separator="\t")


def make_esa(d: Path) -> None:
    """Human scores of 3 systems in 2 language pairs (esa.parquet: system, lp, score)."""
    keys = _bundled().select("document_id", "segment_id")
    rng = _rng("esa")
    parts = [keys.with_columns(pl.lit(s).alias("system"), pl.lit(lp).alias("lp"),
                               pl.Series("score", rng.normal(80 - 5 * k, 8, keys.height)))
             for k, s in enumerate(("refA", "Unbabel-Tower70B", "Llama3-70B")) for lp in ("en-cs", "en-hi")]
    pl.concat(parts).write_parquet(d / "esa.parquet")


def make_table(d: Path) -> None:
    """TABLE of docs/stats-cli.md: a long table (4 systems incl. refA, 2 annotators, DOC/MIX, a metric and a
    domain column); MIX a little below DOC."""
    keys = _bundled().filter(pl.col("domain") == "news").select("document_id", "segment_id", "domain")
    rng = _rng("TABLE")
    parts = []
    for k, system in enumerate(("refA", "S1", "S2", "S3")):
        item = 70 + 6 * k + rng.normal(0, 5, keys.height)
        for annotator in ("a1", "a2"):
            for condition, shift in (("DOC", 0.0), ("MIX", -0.5)):
                parts.append(keys.with_columns(
                    pl.lit(system).alias("system"), pl.lit(annotator).alias("annotator"),
                    pl.lit(condition).alias("condition"), pl.lit("esa").alias("metric"),
                    pl.Series("score", item + shift + rng.normal(0, 2, keys.height))))
    pl.concat(parts).write_csv(d / "TABLE.csv")


def make_stats_data(d: Path) -> None:
    """The folders of docs/stats-cli.md's readers: the bundled excerpts of ESA WMT23 en-de and WMT24."""
    shutil.copytree(DATA / "stats-real" / "esa-wmt23-ende-mini", d / "esa-wmt23-ende")
    shutil.copytree(DATA / "stats-real" / "wmt24-genmt-mini", d / "wmt24-genmt")


def make_mix_inputs(d: Path) -> None:
    """outputs.jsonl (3 systems + refA), the WMT24 .docs and outputs archive (the bundled WMT24 excerpt) and
    scores.parquet: DOC and MIX scores of 4 systems with source_system, MIX about 8 points lower."""
    keys = _bundled().filter(pl.col("domain") == "news").select("document_id", "segment_id")
    rows = [keys.with_columns(pl.lit(s).alias("system"), pl.lit(f"{s} text").alias("text"))
            for s in ("A", "B", "C", "refA")]
    pl.concat(rows).write_ndjson(d / "outputs.jsonl")
    for name in ("wmt24_en.docs", "wmt24_system_outputs_en-cs_en-hi_en-ja_en-zh.tar.xz"):
        shutil.copy(DATA / "stats-real" / "wmt24-genmt-mini" / name, d / name)
    rng = _rng("doc_mix")
    parts = []
    for k, system in enumerate(("S1", "S2", "S3", "S4")):
        item = 50 + 6 * k + rng.normal(0, 5, keys.height)
        for condition, shift in (("DOC", 0.0), ("MIX", -8.0)):
            parts.append(keys.with_columns(pl.lit(system).alias("system"), pl.lit(condition).alias("condition"),
                                           pl.lit(system).alias("source_system"),
                                           pl.Series("score", item + shift + rng.normal(0, 2, keys.height))))
    pl.concat(parts).write_parquet(d / "scores.parquet")


def make_compare_inputs(d: Path) -> None:
    """scores.csv / scores.parquet (base, sysA better, sysB equal; score, comet, chrf, ter, and the texts),
    outputs.parquet / outputs.csv (hypothesis, reference, ref1, ref2)."""
    keys = _bundled().filter(pl.col("domain") == "news").select("document_id", "segment_id")
    rng = _rng("compare")
    words = "the cat sat on a mat and the dog ran far away from it".split()
    refs = [" ".join(rng.choice(words, 8)) for _ in range(keys.height)]
    base = rng.normal(0.7, 0.1, keys.height)
    parts = []
    for system, shift in (("base", 0.0), ("sysA", 0.05), ("sysB", 0.0)):
        s = base + shift + rng.normal(0, 0.02, keys.height)
        hyp = refs if system == "sysA" else [" ".join(rng.choice(words, 8)) for _ in range(keys.height)]
        parts.append(keys.with_columns(pl.lit(system).alias("system"), pl.Series("score", s), pl.Series("comet", s),
                                       pl.Series("chrf", 100 * s - 10), pl.Series("ter", 1 - s),
                                       pl.Series("hypothesis", hyp), pl.Series("reference", refs),
                                       pl.Series("ref1", refs), pl.Series("ref2", [r[::-1] for r in refs])))
    table = pl.concat(parts)
    table.write_csv(d / "scores.csv")
    table.write_parquet(d / "scores.parquet")
    table.write_parquet(d / "outputs.parquet")
    table.write_csv(d / "outputs.csv")


def make_wmt23(d: Path) -> None:
    """wmt23/: the bundled mt-metrics-eval toy with the system names of the docs (sysA -> ONLINE-A), a second
    reference refB and a second human score da-sqm (mqm + 5 where mqm is given)."""
    root = d / "wmt23"
    shutil.copytree(DATA / "mtme" / "toy", root)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        path.write_text(path.read_text(encoding="utf-8").replace("sysA", "ONLINE-A"), encoding="utf-8")
        if path.name == "sysA.txt":
            path.rename(path.with_name("ONLINE-A.txt"))
    shutil.copy(root / "references" / "en-de.refA.txt", root / "references" / "en-de.refB.txt")
    for level in ("seg", "sys"):
        lines = (root / "human-scores" / f"en-de.mqm.{level}.score").read_text(encoding="utf-8").splitlines()
        out = [f"{s}\t{float(v) + 5}" if v != "None" else f"{s}\t{5.0}"
               for s, v in (ln.split() for ln in lines)]
        (root / "human-scores" / f"en-de.da-sqm.{level}.score").write_text("\n".join(out) + "\n", encoding="utf-8")


def make_meta_inputs(d: Path) -> None:
    """ddp.parquet: the bundled `ddp meta` fixture profile (tests/data/meta) with its signature;
    scores.parquet: its scores with the docs' column names (mqm, esa, COMET, XCOMET)."""
    prof = pl.read_csv(DATA / "meta" / "profile.tsv", separator="\t")
    _write_profile(prof, d / "ddp.parquet")
    scores = pl.read_csv(DATA / "meta" / "scores.tsv", separator="\t", null_values="None")
    scores.rename({"good": "COMET", "local": "XCOMET"}).with_columns((pl.col("mqm") * 10 + 100).alias("esa")) \
        .write_parquet(d / "scores.parquet")


#: (page, a line that identifies the block, fixture makers, {documented text: what runs here}).
#: A substitution adapts a command to the bundled data only where the data cannot match the page (it says why).
RUNS: list[tuple[str, str, tuple[Callable[[Path], None], ...], dict[str, str]]] = [
    ("curation.md", "ddp stratify ddp.parquet scores.tsv --score-col XCOMET-XL --ddp-col ddp_certified",
     (make_segments, make_scores_tsv), {}),
    ("curation.md", "ddp select segments.jsonl --profile ddp.parquet --min-ddp 15 -o high.jsonl",
     (make_segments, make_wmt24),
     # one profile cannot cover both the bundled source (literary included: --domain literary) and the
     # WMT24-layout rows made without it
     {"--reader wmt24 --profile ddp.parquet": "--reader wmt24 --profile ddp24.parquet"}),
    ("curation.md", "ddp sample segments.jsonl --profile ddp.parquet --bins", (make_segments,), {}),
    ("curation.md", "ddp stratify ddp.parquet scores.tsv --score-col XCOMET-XL --by system",
     (make_segments, make_scores_tsv, make_esa), {}),
    ("stats-cli.md", "ddp stats tost    TABLE --a DOC --b MIX --margin 3",
     (make_table, make_stats_data),
     {"TABLE": "TABLE.csv",  # the page's placeholder
      "--lp en-cs": "--lp en-cs --waves 2"}),  # the bundled WMT24 excerpt holds wave 2 only
    ("mix-blindness.md", "ddp mix outputs.jsonl --seed 0 -o mix.parquet", (make_mix_inputs,), {}),
    ("stats-compare.md", "ddp stats compare scores.csv --baseline base   ", (make_compare_inputs,), {}),
    ("stats-compare.md", "ddp stats compare outputs.parquet --baseline base --corpus-metric bleu,chrf,ter",
     (make_compare_inputs, make_wmt23), {}),
    ("meta.md", "ddp meta ddp.parquet scores.parquet --human-col mqm -f markdown -o meta.md", (make_meta_inputs,), {}),
]

#: the same, for blocks that profile (spaCy): the mt-metrics-eval block of docs/readers.md (a 6-line source)
SPACY_RUNS: list[tuple[str, str, tuple[Callable[[Path], None], ...], dict[str, str]]] = [
    ("readers.md", "ddp profile wmt23/en-de --reader mtme -o ddp23.parquet", (make_wmt23,),
     {"--min-ddp 5": "--min-ddp 1"}),  # the toy's 6 segments reach DDP 2 at most
]


def _block(page: str, marker: str) -> list[tuple[int, str]]:
    """The logical lines of the one shell block of ``page`` that holds ``marker``."""
    found = [logical_lines(body) for _s, lang, body in fenced_blocks((ROOT / "docs" / page).read_text("utf-8"))
             if lang in SHELL and any(marker in text for _i, text in logical_lines(body))]
    assert len(found) == 1, f"docs/{page}: {len(found)} shell blocks hold {marker!r}; update RUNS in {__name__}"
    return found[0]


def _run_block(page: str, marker: str, makers: tuple[Callable[[Path], None], ...], subs: dict[str, str],
               tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> int:
    lines = _block(page, marker)
    for old in subs:
        assert any(old in text for _i, text in lines), f"docs/{page}: {old!r} is no longer in the block"
    for make in dict.fromkeys(makers):
        make(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("DDPCORE_CACHE", str(tmp_path / ".cache"))
    ran = 0
    for line, text in lines:
        for old, new in subs.items():
            text = text.replace(old, new)
        words = shlex.split(text, comments=True)
        if words[:2] == ["mkdir", "-p"]:
            for folder in words[2:]:
                (tmp_path / folder).mkdir(parents=True, exist_ok=True)
            continue
        for argv in ddp_argvs(text):
            code = main(argv)
            err = capsys.readouterr().err
            allowed = {0, 1} if "--fail-on" in argv else {0}
            assert code in allowed, f"docs/{page}:{line}: `ddp {shlex.join(argv)}` exited {code}:\n{err[-2000:]}"
            assert "Traceback" not in err, err
            ran += 1
    return ran


@pytest.mark.parametrize(("page", "marker", "makers", "subs"), RUNS, ids=[f"{p}:{m[:40]}" for p, m, _, _ in RUNS])
def test_documented_block_runs(page: str, marker: str, makers, subs, tmp_path: Path, monkeypatch, capsys) -> None:
    if any(m is make_compare_inputs for m in makers) and "corpus-metric" in marker:
        pytest.importorskip("sacrebleu")
    if page == "curation.md" and "--stratify" in "".join(t for _i, t in _block(page, marker)):
        pytest.importorskip("matplotlib")
    assert _run_block(page, marker, makers, subs, tmp_path, monkeypatch, capsys) >= 1


@pytest.mark.spacy_model
@pytest.mark.parametrize(("page", "marker", "makers", "subs"), SPACY_RUNS, ids=[p for p, _, _, _ in SPACY_RUNS])
def test_documented_block_runs_with_spacy(page: str, marker: str, makers, subs, tmp_path: Path, monkeypatch,
                                          capsys) -> None:
    pytest.importorskip("sacrebleu")
    assert _run_block(page, marker, makers, subs, tmp_path, monkeypatch, capsys) >= 5
