"""``ddp select``: the rows of a test set whose DDP passes, written verbatim in the input's format."""
from __future__ import annotations

import argparse

from ._common import HelpFormatter, add_segment_columns

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
    p.add_argument("--summary-format", choices=("text", "json"), default="text",
                   help="summary on stdout (on stderr with -o -)")
    add_segment_columns(p, from_signature=True)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "select", help="keep the rows of a test set selected by DDP (verbatim, in the input's format)",
        description=(
            "Write the rows of INPUT whose discourse dependency passes (--min-ddp, --max-ddp, --top-share), "
            "in INPUT's own format: the same columns, values and order; JSONL/CSV/TSV rows are copied byte for "
            "byte. --level document keeps whole documents whose max DDP passes; --with-context keeps each selected "
            "segment with the earlier segments its DDP reaches into. Prints documents, segments and the DDP "
            "distribution before and after. Exit codes: 0 ok, 2 usage, 3 bad data (e.g. a profile of another "
            "input)."),
        formatter_class=HelpFormatter)
    add_common(p)
    s = p.add_argument_group("selection")
    s.add_argument("--min-ddp", type=float, default=None, metavar="X", help="keep units with DDP >= X (sentences)")
    s.add_argument("--max-ddp", type=float, default=None, metavar="Y", help="keep units with DDP <= Y (sentences)")
    s.add_argument("--top-share", type=float, default=None, metavar="F",
                   help="keep the share F (0-1] of units with the highest DDP (ties at the threshold kept)")
    s.add_argument("--level", choices=("segment", "document"), default="segment",
                   help="unit: segments (their DDP), or whole documents (their max DDP)")
    s.add_argument("--domain", action="append", default=None, metavar="D",
                   help="only units of domain D (repeat for several)")
    s.add_argument("--with-context", action="store_true",
                   help="also keep the earlier segments each selected segment's DDP reaches into")
    p.set_defaults(func=run)


def cols_from(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """Column names: the flags, else the profile's signature, else the defaults."""
    from pathlib import Path

    from ..ddp.select import profile_columns, read_signature

    return profile_columns(read_signature(Path(args.profile)), document=args.document_col,
                           segment=args.segment_col, domain=args.domain_col, text=args.text_col)


def check_target(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """Check -o before any work: the input's format, not an input, not the profile."""
    from pathlib import Path

    from ..ddp.select import input_format
    from ..errors import DDPUsageError
    from ..io.outputs import check_outputs
    from ..io.segments import _check_path

    _check_path(Path(args.input))
    fmt = input_format(args.input)
    text = fmt in ("jsonl", "csv", "tsv", "json")
    (target,) = check_outputs([("-o/--output", args.output)], inputs=[args.input, args.profile], formats=(fmt,),
                              stdout_format=fmt if text else None, sidecars=True)
    if target.format != fmt:  # pragma: no cover - check_outputs enforces formats
        raise DDPUsageError(f"-o {args.output}: must be {fmt} like the input", code="D634")
    return target


def emit_summary(args: argparse.Namespace, command: str, text: str, obj: dict) -> None:  # type: ignore[type-arg]
    import json
    import sys

    out = sys.stderr if args.output == "-" else sys.stdout
    if args.summary_format == "json":
        print(json.dumps(obj, sort_keys=True, indent=2), file=out)
    else:
        print(text, file=out)


def run(args: argparse.Namespace) -> int:
    from ..ddp.select import Criteria, format_summary, select

    crit = Criteria(min_ddp=args.min_ddp, max_ddp=args.max_ddp, top_share=args.top_share, level=args.level,
                    domains=tuple(args.domain or ()), with_context=args.with_context)
    crit.check()
    target = check_target(args)
    res = select(args.input, args.profile, crit, target, cols=cols_from(args))
    where = "stdout" if target.path is None else str(target.path)
    text = format_summary("ddp select", res.summary) + f"\nwrote {where} ({res.summary['after']['segments']} rows)"
    emit_summary(args, "ddp select", text, {"summary": res.summary, "output": where, "signature": res.signature})
    return 0
