"""``ddp select``: the rows of a test set whose DDP passes, written verbatim in the input's format."""
from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

from ._common import (HelpFormatter, add_deprecated_alias, add_reader_options, add_segment_columns, stderr_line,
                      write_result)

HELP_OUTPUT = ("output file in the input's own format (.jsonl/.csv/.tsv/.json/.parquet, .gz for text formats; "
               "'-' = stdout for text inputs, and the summary goes to stderr); text outputs get "
               "OUTPUT.signature.json, Parquet the signature in its metadata")


def add_common(p: argparse.ArgumentParser) -> None:
    """INPUT, --profile, -o and the column flags (shared with ``ddp sample``)."""
    p.add_argument("input", metavar="INPUT", help="the table the profile was made from (.jsonl, .csv, .tsv, .json, "
                                                  ".parquet; .gz for text formats)")
    p.add_argument("--profile", required=True, metavar="DDP",
                   help="the `ddp profile` segment table of INPUT (ids, ddp, first_sentence, n_sentences, domain)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help=HELP_OUTPUT)
    p.add_argument("--ddp-col", default="ddp", metavar="NAME",
                   help="the profile's DDP column every criterion, bin, context and summary uses (e.g. ddp_certified: "
                        "only the anchors whose link is certain enough not to over-estimate); recorded in the "
                        "signature")
    # default None, resolved later: an explicit -f text must be told from the default (select --evaluate: D880)
    p.add_argument("-f", "--format", choices=("text", "json"), default=None,
                   help="summary format (default: text; on stdout; on stderr with -o -)")
    add_deprecated_alias(p, "--summary-format", "-f/--format", "format", choices=("text", "json"))
    add_segment_columns(p, from_signature=True)
    add_reader_options(p, from_signature=True)  # --reader: default the one the profile's signature records
    for action in p._actions:  # the reader and the columns come from the --profile's signature; --docs does not
        if action.dest in ("reader", "document_col", "segment_col", "text_col", "domain_col") and action.help:
            action.help = action.help.replace("the output's signature", "the --profile's signature")
        elif action.dest == "docs" and action.help:
            action.help = action.help.replace("from the output's signature, else ", "")
        elif action.dest == "txt_mode" and action.help:
            action.help = action.help.replace(" (default: from the output's signature, else lines)", "")
    g = p.add_argument_group("WMT layout (--reader wmt24|lines|mtme)")
    g.add_argument("--outputs", default=None, metavar="DIR",
                   help="also filter every .txt under DIR (system outputs, references; aligned line by line with "
                        "the source) by the same lines")
    g.add_argument("--outputs-to", default=None, metavar="DIR2",
                   help="where the filtered --outputs files go, same relative paths (default: OUT_STEM.outputs/ "
                        "beside OUT)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "select", help="keep the rows of a test set selected by DDP (verbatim, in the input's format)",
        description=(
            "Write the rows of INPUT whose discourse dependency passes (--min-ddp, --max-ddp, --top-share), "
            "in INPUT's own format: the same columns, values and order; JSONL/CSV/TSV rows are copied byte for "
            "byte. --unit document keeps whole documents whose max DDP passes; --with-context keeps each selected "
            "segment with the earlier segments its DDP reaches into. Prints documents, segments and the DDP "
            "distribution before and after. Exit codes: 0 ok, 2 usage, 3 bad data (e.g. a profile of another "
            "input)."),
        formatter_class=HelpFormatter)
    add_common(p)
    for action in p._actions:  # with --evaluate, -f is the format of the report -o names
        if "-f" in action.option_strings:
            action.help = ("summary format (default: text; on stdout; on stderr with -o -); with --evaluate, the "
                           "report's format (default: text, or the -o file's extension: .json = json, .md/.txt = "
                           "text, the Markdown report); an -f the -o file's extension contradicts is D880")
    s = p.add_argument_group("selection")
    s.add_argument("--min-ddp", type=float, default=None, metavar="X", help="keep units with DDP >= X (sentences)")
    s.add_argument("--max-ddp", type=float, default=None, metavar="Y", help="keep units with DDP <= Y (sentences)")
    s.add_argument("--top-share", type=float, default=None, metavar="F",
                   help="keep the share F (0-1] of units with the highest DDP (ties at the threshold kept)")
    s.add_argument("--unit", dest="level", choices=("segment", "document"), default="segment",
                   help="unit: segments (their DDP), or whole documents (their max DDP)")
    add_deprecated_alias(s, "--level", "--unit", "level", choices=("segment", "document"))
    s.add_argument("--domain", action="append", default=None, metavar="D",
                   help="only units of domain D (repeat for several)")
    s.add_argument("--with-context", action="store_true",
                   help="also keep the earlier segments each selected segment's DDP reaches into (--unit segment "
                        "only: --unit document keeps whole documents, context included; together: D890)")
    add_evaluate_options(p)
    p.set_defaults(func=run)


def cols_from(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """Column names: the flags, else the profile's signature, else the defaults."""
    from pathlib import Path

    from ..curate.select import profile_columns, read_signature

    return profile_columns(read_signature(Path(args.profile)), document=args.document_col,
                           segment=args.segment_col, domain=args.domain_col, text=args.text_col)


def reader_from_profile(args: argparse.Namespace) -> str:
    """Set ``args.reader`` when ``--reader`` was not given: the reader the profile's signature records (as
    ``ddp explain`` takes it from the output's signature), else ``table``; returns the note that says so
    (``""`` when nothing was taken). A ``--reader`` given on the command line wins, as in ``ddp explain``.
    ``--evaluate`` reads a score table, not the profiled input: ``table``."""
    from pathlib import Path

    if args.reader is not None:
        return ""
    args.reader = "table"
    if getattr(args, "evaluate", False):
        return ""
    from ..curate.select import read_signature
    from ..io.readers import READERS

    rec = read_signature(Path(args.profile)).get("reader")
    name = rec.get("name") if isinstance(rec, dict) else None
    if name is None or name == "table":
        return ""
    if name not in READERS:
        return (f"--profile {args.profile} records reader {name!r}, which this ddpcore does not have; {args.input} "
                "was read as a table; give --reader to choose")
    args.reader = name
    return (f"{args.input} read with --reader {name}, as recorded in the signature of --profile {args.profile}; "
            "give --reader to read it otherwise")


@contextlib.contextmanager
def inherited_reader(args: argparse.Namespace, command: str) -> Iterator[None]:
    """Run a select/sample with :func:`reader_from_profile`: the note goes to stderr when the run ends well,
    and into the one-line message of an error it ends with (so that the error says how INPUT was read)."""
    from ..errors import DDPError

    note = reader_from_profile(args)
    try:
        yield
    except DDPError as exc:
        if not note:
            raise
        raise type(exc)(f"{exc.message} ({note})", code=exc.code) from None
    if note:
        stderr_line(f"{command}: note: {note}")


def _check_layout_target(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """-o of --reader wmt24|lines (OUT.txt + OUT.docs) or wmt25 (OUT.jsonl) and every file it writes
    besides (the signature sidecar, the .docs, the filtered --outputs files): each in a folder that exists
    (or can be made, for --outputs-to), none an existing folder (D132), none an input, whether the input,
    the profile, the .docs or an --outputs file (D133), no two on one path (D134); before any work."""
    from pathlib import Path

    from ..curate.select import check_layout_files, layout_files, outputs_folder
    from ..errors import DDPUsageError
    from ..io.outputs import file_identity, same_file
    from ..io.sources import resolve_docs

    out = Path(args.output)
    want = ".jsonl" if args.reader == "wmt25" else ".txt"
    if args.output == "-" or out.suffix.lower() != want:
        raise DDPUsageError(f"-o {args.output}: --reader {args.reader} writes the input's layout; give a {want} file "
                            "name" + (" (its .docs is written beside it)" if want == ".txt" else ""), code="D634")
    outputs = Path(args.outputs) if args.outputs is not None else None
    if outputs is not None:
        if args.reader not in ("wmt24", "lines", "mtme"):
            raise DDPUsageError("--outputs is for --reader wmt24, lines or mtme", code="D645")
        dest = outputs_folder(out, args.outputs_to)
        if same_file(file_identity(dest), file_identity(outputs)):
            raise DDPUsageError(f"--outputs-to {dest}: is the --outputs folder; the outputs would overwrite "
                                "themselves, choose another folder", code="D133")
    if args.reader == "mtme":  # the test set's sources/LP.txt and documents/LP.docs (D820/D821 before any work)
        from ..curate.select import mtme_layout

        source, docs = mtme_layout(args.input, args.docs)
    else:
        source, docs = Path(args.input), resolve_docs(args.input, args.reader, args.docs)
    files = layout_files(source, out, "wmt25" if args.reader == "wmt25" else "lines", docs, outputs,
                         args.outputs_to)
    check_layout_files(files, [source, args.profile, docs])
    return out


def check_target(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """Check -o before any work: the input's format, not an input, not the profile."""
    from pathlib import Path

    from ..curate.select import input_format
    from ..errors import DDPUsageError
    from ..io.outputs import check_outputs
    from ..io.segments import check_input_path

    if getattr(args, "txt_mode", None) not in (None, "lines"):  # it would be ignored: a folder cannot be written back
        raise DDPUsageError(f"--txt-mode {args.txt_mode}: is for a folder of .txt documents, which select and sample "
                            "cannot write back (D633); give the table or line file the profile was made from",
                            code="D601")
    if getattr(args, "reader", "table") != "mtme":  # an mt-metrics-eval FOLDER/LP names no file (resolved below)
        check_input_path(Path(args.input))
    if getattr(args, "reader", "table") != "table":
        return _check_layout_target(args)
    if args.outputs is not None:
        raise DDPUsageError("--outputs is for --reader wmt24, lines or mtme", code="D645")
    fmt = input_format(args.input)
    text = fmt in ("jsonl", "csv", "tsv", "json")
    (target,) = check_outputs([("-o/--output", args.output)], inputs=[args.input, args.profile], formats=(fmt,),
                              stdout_format=fmt if text else None, sidecars=True)
    if target.format != fmt:  # pragma: no cover - check_outputs enforces formats
        raise DDPUsageError(f"-o {args.output}: must be {fmt} like the input", code="D634")
    return target


def where_written(target) -> str:  # type: ignore[no-untyped-def]
    path = getattr(target, "path", target)
    return "stdout" if path is None else str(path)


def wrote_line(where: str, n_segments: int, written: list) -> str:  # type: ignore[type-arg]
    """``wrote OUT (N segments)`` and every other file the run wrote (.docs, --outputs files, signature
    sidecars), grouped by folder so a WMT layout of 30 system files stays readable."""
    import os

    from ..io.tables import one_line  # a path holding a line break stays on the one line

    others = [str(w) for w in written if str(w) != where]
    line = f"wrote {one_line(where)} ({n_segments} segments)"
    if not others:
        return line
    by_dir: dict[str, list[str]] = {}
    for w in others:
        by_dir.setdefault(os.path.dirname(w), []).append(os.path.basename(w))
    parts = [f"{os.path.join(d, names[0])}" if len(names) == 1 else
             f"{len(names)} files in {d or '.'}{os.sep}: {', '.join(names)}" for d, names in by_dir.items()]
    return line + "; also " + one_line("; ".join(parts))


def writes_signature(args: argparse.Namespace) -> bool:
    """Whether the run's signature is written anywhere: not with -o - and a text summary (no sidecar for
    stdout; only the -f json summary prints it)."""
    return not (args.output == "-" and args.format != "json")


def emit_summary(args: argparse.Namespace, command: str, text: str, obj: dict) -> None:  # type: ignore[type-arg]
    import json
    import sys

    from ..signature import json_safe

    out = sys.stderr if args.output == "-" else sys.stdout
    if args.format == "json":  # valid JSON: an open bin's edge is "inf", never a bare Infinity
        print(json.dumps(json_safe(obj), sort_keys=True, indent=2, allow_nan=False), file=out)
    else:
        print(text, file=out)


def _budgets(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give shares in (0, 1] separated by commas") from None


#: the namespace attribute holding the dests of the --evaluate options given on the command line
GIVEN = "_evaluate_options_given"


class _Recorded(argparse.Action):
    """Mixin: note in ``namespace.<GIVEN>`` that the option was given (its default may equal a given value,
    e.g. ``--seed 0``)."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[no-untyped-def]
        super().__call__(parser, namespace, values, option_string)  # type: ignore[misc]
        setattr(namespace, GIVEN, {**getattr(namespace, GIVEN, {}), self.dest: option_string})


class _RecordedStore(_Recorded, argparse._StoreAction):
    pass


class _RecordedAppend(_Recorded, argparse._AppendAction):
    pass


class _RecordedTrue(_Recorded, argparse._StoreTrueAction):
    pass


def add_evaluate_options(p: argparse.ArgumentParser) -> None:
    """``--evaluate`` and its options (:mod:`ddpcore.curate.evaluate`)."""
    e = p.add_argument_group("evaluate (--evaluate: is the DDP-selected subset a better test set than random?)")
    e.add_argument("--evaluate", action="store_true",
                   help="instead of writing rows: INPUT is a score table (one row per document, segment, system with "
                        "the --human-col column) or, with --reader mtme, an mt-metrics-eval test-set folder; for each "
                        "--budgets share, the top-DDP subset (by --ddp-col, per --unit) is compared with --n-random "
                        "random subsets of the same size: mean human score, share of perfect scores, per-system Kendall "
                        "tau-b of DDP vs human, system clusters, Spearman with the full ranking, percentiles and the "
                        "budget for parity with random (docs/meta.md). -o takes the report ('-' = stdout; a .json file "
                        "holds JSON, a .md or .txt file the Markdown report: the extension gives the format)")
    # every option records that it was given (GIVEN): without --evaluate it is D871, never silently ignored
    e.add_argument("--human-col", default="score", metavar="NAME", action=_RecordedStore,
                   help="the human score column (with --reader mtme: a human score name such as mqm or da-sqm)")
    e.add_argument("--budgets", type=_budgets, default=(0.05, 0.1, 0.25, 0.5), metavar="B[,B]", action=_RecordedStore,
                   help="subset sizes as shares of the units (default: 0.05,0.1,0.25,0.5)")
    e.add_argument("--n-random", type=int, default=1000, metavar="R", action=_RecordedStore,
                   help="random subsets per budget")
    e.add_argument("--seed", type=int, default=0, action=_RecordedStore, metavar="N",
                   help="seed of the random subsets, the tie-break and the parity orderings (default: 0)")
    e.add_argument("--alpha", type=float, default=0.05, action=_RecordedStore, metavar="P",
                   help="level of the Wilcoxon tests that separate clusters")
    e.add_argument("--system-col", default="system", metavar="NAME", action=_RecordedStore,
                   help="system column of the score table")
    e.add_argument("--exclude-system", default=[], metavar="NAME", action=_RecordedAppend,
                   help="leave a system out (repeatable; e.g. a human reference scored as a system; a name the "
                        "score table does not have is D872; default: none)")
    e.add_argument("--perfect-score", type=float, default=None, metavar="X", action=_RecordedStore,
                   help="the score counted as perfect (default: the highest human score in the table, e.g. 0 for MQM)")
    e.add_argument("--ties", choices=("random", "input"), default="random", action=_RecordedStore,
                   help="how units with equal DDP are ordered where a budget cuts through them: a seeded random "
                        "order (random) or the profile's row order (input, as subset2evaluate's stable sort); "
                        "--evaluate only: a --top-share selection keeps every unit tied at its threshold")
    e.add_argument("--strict-join", action=_RecordedTrue,
                   help="exit 3 when joining scores and profile drops rows (default: counted on stderr and in "
                        "the report's warnings)")


#: the options of a row selection, which --evaluate does not apply (its subsets are the top-DDP budgets)
SELECT_ONLY = (("min_ddp", "--min-ddp"), ("max_ddp", "--max-ddp"), ("top_share", "--top-share"),
               ("domain", "--domain"), ("with_context", "--with-context"), ("outputs", "--outputs"),
               ("outputs_to", "--outputs-to"))


def check_mode_options(args: argparse.Namespace) -> None:
    """D871 (before any work): an --evaluate option without --evaluate, or a selection option with it; either
    would be ignored, and the answer would not be the one asked for."""
    from ..errors import DDPUsageError

    if getattr(args, "evaluate", False):
        bad = [flag for dest, flag in SELECT_ONLY  # --max-ddp 0 is given: 0 == False, so no `in (None, False)`
               if getattr(args, dest, None) is not None and getattr(args, dest) is not False]
        if bad:
            raise DDPUsageError(
                f"{', '.join(bad)}: not an option of --evaluate, which compares the top-DDP subset of each --budgets "
                "share with random subsets of all the scored segments; drop it, or select the rows first (ddp "
                "select without --evaluate) and evaluate the selected score table", code="D871")
        return
    bad = list(dict.fromkeys(getattr(args, GIVEN, {}).values()))
    if bad:
        hint = (" (a --top-share selection keeps every unit tied at its threshold: the note on stderr and the "
                "signature's top_share say how many)" if "--ties" in bad else "")
        raise DDPUsageError(f"{', '.join(bad)}: option(s) of --evaluate only; ddp select without --evaluate would "
                            f"ignore them{hint}; add --evaluate or drop them", code="D871")


#: the report files of ``--evaluate``: extension -> the ``-f`` it holds (text is the Markdown report)
EVALUATE_EXTENSIONS = {".json": "json", ".md": "text", ".markdown": "text", ".txt": "text"}


def evaluate_format(args: argparse.Namespace) -> str:
    """The format of the ``--evaluate`` report, settled before any work: ``-f`` when given, else the -o file's
    extension (:data:`EVALUATE_EXTENSIONS`), else text (Markdown). ``-o -`` (stdout) takes any ``-f``. A file
    with another extension is D101; an ``-f`` the file's extension contradicts (``-f json -o r.md``) is D880,
    as for every result file (:func:`ddpcore.cli._common.check_result_output`)."""
    from pathlib import Path

    from ..errors import DDPUsageError

    given = args.format
    if args.output == "-":
        return given or "text"
    ext = Path(args.output).suffix.lower()
    fmt = EVALUATE_EXTENSIONS.get(ext)
    if fmt is None:
        raise DDPUsageError(f"-o/--output {args.output}: unknown report format (extension '{ext or '(none)'}'); use "
                            ".json, .md or .txt (the extension gives the format), or -o - for stdout", code="D101")
    if given is not None and given != fmt:
        raise DDPUsageError(f"-o {args.output}: a {ext} file cannot hold -f {given}; use -f {fmt}, another extension, "
                            f"or -o - (stdout) for {given}", code="D880")
    return fmt


def run_evaluate(args: argparse.Namespace) -> int:
    """``ddp select --evaluate``: read, join, evaluate, report."""
    import json
    from pathlib import Path

    from ..curate.evaluate import EvaluateOptions, evaluate_selection, render_markdown
    from ..curate.select import load_profile
    from ..errors import DDPUsageError
    from ..io.outputs import OutputTarget, check_claims, check_place, file_identity, same_file
    from ..io.tables import md_code, read_table

    opts = EvaluateOptions(budgets=tuple(args.budgets), n_random=args.n_random, seed=args.seed, level=args.level,
                           alpha=args.alpha, perfect=args.perfect_score, ties=args.ties)
    opts.check()
    if args.reader not in ("table", "mtme"):
        raise DDPUsageError(f"--evaluate reads a score table (--reader table) or an mt-metrics-eval folder "
                            f"(--reader mtme), not --reader {args.reader}", code="D840")
    fmt = evaluate_format(args)  # before any work
    out = None if args.output == "-" else Path(args.output)
    if out is not None:
        check_place("-o", out)  # not a folder, in an existing, writable folder (D132, D130, D131)
        for i in (args.input, args.profile):
            if same_file(file_identity(out), file_identity(Path(i))):
                raise DDPUsageError(f"-o {out}: is the input {i}; choose another report name", code="D133")
        target = OutputTarget("-o/--output", out, fmt)  # the report and its signature sidecar, as `ddp stats`
        check_place("the signature sidecar of -o/--output", target.sidecar)
        check_claims([("-o/--output", out), ("the signature sidecar of -o/--output", target.sidecar)],
                     [args.input, args.profile])
    cols = cols_from(args)
    prof = load_profile(args.profile, cols, need=(args.ddp_col,), ddp_col=args.ddp_col)

    def warn(msg: str) -> None:
        stderr_line(f"ddp select --evaluate: warning: {msg}")

    reader_notes: list[str] = []
    if args.reader == "mtme":
        from ..io.mtme import read_mtme_scores

        def note(msg: str) -> None:
            reader_notes.append(msg)
            warn(msg)

        scores = read_mtme_scores(args.input, human=[args.human_col], warn=note).table
    else:
        scores = read_table(args.input)
    res = evaluate_selection(scores, prof.frame, human_col=args.human_col, ddp_col=args.ddp_col,
                             document_col=cols.document, segment_col=cols.segment, system_col=args.system_col,
                             exclude_systems=args.exclude_system, strict_join=args.strict_join, options=opts, warn=warn,
                             name=str(args.input), profile_name=f"--profile {args.profile}")
    res.warnings[:0] = reader_notes  # the reader's counts of None scores belong to the report too
    res.signature.update({"input": str(args.input), "profile": str(args.profile), "reader": args.reader})
    text = (json.dumps(res.to_dict(), indent=2) if fmt == "json"
            else render_markdown(res) + "\n\nSignature: " + md_code(json.dumps(res.signature, sort_keys=True)))
    if out is None:
        print(text)
    else:
        write_result(target, text, res.signature, "ddp select --evaluate")
    return 0


def run(args: argparse.Namespace) -> int:
    with inherited_reader(args, "ddp select"):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from ..curate.select import Criteria, format_summary, select, top_share_note

    check_mode_options(args)
    if getattr(args, "evaluate", False):
        return run_evaluate(args)

    crit = Criteria(min_ddp=args.min_ddp, max_ddp=args.max_ddp, top_share=args.top_share, level=args.level,
                    domains=tuple(args.domain or ()), with_context=args.with_context)
    crit.check()
    target = check_target(args)
    res = select(args.input, args.profile, crit, target, cols=cols_from(args), reader=args.reader, docs=args.docs,
                 outputs=args.outputs, outputs_to=args.outputs_to, ddp_col=args.ddp_col)
    note = top_share_note(res.signature.get("top_share"), args.ddp_col, signature=writes_signature(args))
    if note:  # more kept than asked (ties at the threshold): said on stderr and in the signature
        stderr_line(f"ddp select: note: {note}")
    where = where_written(target)
    text = format_summary("ddp select", res.summary) + "\n" + wrote_line(where, res.summary["after"]["segments"],
                                                                         res.written)
    emit_summary(args, "ddp select", text, {"summary": res.summary, "output": where,
                                            "written": [str(w) for w in res.written], "signature": res.signature})
    return 0
