"""``ddp validate``: DDP against gold coreference distances (paper Appendix A.1)."""
from __future__ import annotations

import argparse

from ._common import HelpFormatter, add_extraction_options

GOLD_FORMATS = ("litbank", "conllu", "conll2012")
GOLD_SCOPES = ("full", "restricted", "ddp")  # = ddpcore.gold.validate.GOLD_SCOPES (not imported: keeps --help fast)
OUTPUT_FORMATS = ("json", "text")
PLOT_EXTENSIONS = (".png", ".pdf", ".svg")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="validate DDP against gold coreference (LitBank, GUM/OntoGUM, CoNLL-2012)",
        description=(
            "Compare DDP with gold coreference distances, one gold sentence = one segment. The gold distance "
            "of a sentence mirrors --distance: over its mentions whose chain was mentioned in an earlier "
            "sentence, the distance back to the chain's first mention (chained) or to its latest earlier "
            "mention (nearest); 0 if none; --gold-scope chooses which gold mentions count. Prints Pearson r, Spearman rho, the shares of under/exact/over "
            "estimates and the mean signed error (DDP - gold, sentences) per genre and overall."
        ),
        formatter_class=HelpFormatter,
    )
    p.add_argument("gold", nargs="+", metavar="GOLD",
                   help="gold files, folders or tar archives (.tar.xz etc. are read without extracting)")
    p.add_argument("--gold-format", dest="gold_format", choices=GOLD_FORMATS, default=None,
                   help="gold format (default: detected from file names: .conllu, .ann+.txt, *_brat.conll, "
                        "*.conll/*_conll)")
    p.add_argument("--gold-scope", dest="gold_scope", type=_gold_scope, default=None, metavar="{full,restricted,ddp}",
                   help="which gold mentions count (default: full): full = every mention; restricted = proper-name "
                        "and pronoun mentions only; ddp = the kinds DDP anchors (named mentions and 3rd-person "
                        "pronouns count, nominal mentions are antecedents only, 1st/2nd-person pronouns are removed)")
    p.add_argument("--restricted", action="store_true",
                   help="deprecated: use --gold-scope restricted")
    p.add_argument("--strict", action="store_true",
                   help="fail on unbalanced gold coreference brackets instead of dropping the mention with a warning")
    add_extraction_options(p)
    # -f/--format is the output format, as in every ddp command. Until the next release, --format also
    # accepts a gold format (its old meaning) with a deprecation warning: hence the wider choices.
    p.add_argument("-f", "--format", dest="format", choices=OUTPUT_FORMATS + GOLD_FORMATS, default=None,
                   metavar="{json,text}",
                   help="report format on stdout (default: json); a gold format here is deprecated, "
                        "use --gold-format")
    p.add_argument("--output-format", dest="output_format_old", choices=OUTPUT_FORMATS, default=None,
                   help=argparse.SUPPRESS)  # deprecated spelling of -f/--format
    p.add_argument("--plot", default=None, metavar="FILE",
                   help="write a scatter plot of DDP vs gold distance (.png, .pdf, .svg; needs ddpcore[plot])")
    p.add_argument("--over-estimates", default=None, metavar="FILE",
                   help="write the over-estimated segments with the anchor responsible (.csv, .tsv, .jsonl, .parquet)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no warnings on stderr")
    p.set_defaults(func=run)


def _gold_scope(text: str) -> str:
    """argparse type of --gold-scope: an unknown value is a one-line usage error (exit 2)."""
    if text not in GOLD_SCOPES:
        raise argparse.ArgumentTypeError(f"[D230] unknown gold scope {text!r}; choose one of: {', '.join(GOLD_SCOPES)}")
    return text


def _resolve_scope(args: argparse.Namespace, warn) -> str:  # type: ignore[no-untyped-def]
    """The gold scope from --gold-scope and the deprecated --restricted."""
    from ..errors import DDPUsageError

    if not args.restricted:
        return args.gold_scope or "full"
    warn("--restricted is deprecated and will be removed in the next release; use --gold-scope restricted")
    if args.gold_scope not in (None, "restricted"):
        raise DDPUsageError(f"--restricted and --gold-scope {args.gold_scope} disagree; give only --gold-scope",
                            code="D232")
    return "restricted"


def _resolve_formats(args: argparse.Namespace, warn) -> tuple[str | None, str]:  # type: ignore[no-untyped-def]
    """(gold format, output format) from --gold-format, -f/--format and the deprecated spellings."""
    from ..errors import DDPUsageError

    gold, out = args.gold_format, "json"
    if args.format in GOLD_FORMATS:
        warn("--format for the gold format is deprecated and will select the output format in the next "
             f"release; use --gold-format {args.format}")
        if gold is not None and gold != args.format:
            raise DDPUsageError(f"--gold-format {gold} and --format {args.format} disagree; give only --gold-format",
                                code="D442")
        gold = args.format
    elif args.format is not None:
        out = args.format
    if args.output_format_old is not None:
        warn(f"--output-format is deprecated; use -f/--format {args.output_format_old}")
        if args.format in OUTPUT_FORMATS and args.format != args.output_format_old:
            raise DDPUsageError(f"--format {args.format} and --output-format {args.output_format_old} disagree; "
                                "give only -f/--format", code="D442")
        out = args.output_format_old
    return gold, out


def check_validate_outputs(gold: list[str], over_estimates: str | None, plot: str | None) -> None:
    """Check --over-estimates and --plot before any work: extension, folder, writable, not an input,
    not the same file twice (D101, D130-D134 from :mod:`ddpcore.io.outputs`; D441 plot extension)."""
    from pathlib import Path

    from ..errors import DDPUsageError
    from ..io.outputs import file_identity, same_file, check_outputs

    check_outputs([("--over-estimates", over_estimates)], inputs=gold, formats=("csv", "tsv", "jsonl", "parquet"))
    if not plot:
        return
    path = Path(plot)
    if path.suffix.lower() not in PLOT_EXTENSIONS:
        raise DDPUsageError(
            f"--plot {plot}: unknown plot format (extension '{path.suffix or '(none)'}'); use "
            + ", ".join(PLOT_EXTENSIONS),
            code="D441",
        )
    # the folder, writability, input and duplicate checks of io.outputs, with a table-named stand-in
    # in the same folder (the stand-in is never created) plus the identity checks on the plot path itself
    stand_in = str(path.with_name(path.name + ".csv"))
    check_outputs([("--plot", stand_in)], inputs=gold)
    if path.is_dir():
        raise DDPUsageError(f"--plot {plot}: is an existing folder; give a file name inside it "
                            f"(e.g. {path / 'validation.png'})", code="D132")
    me = file_identity(path)
    for inp in gold:
        if same_file(me, file_identity(Path(inp))):
            raise DDPUsageError(f"--plot {plot}: this is the input file {inp}; writing it would destroy the input, "
                                "choose another output name", code="D133")
    if over_estimates and same_file(me, file_identity(Path(over_estimates))):
        raise DDPUsageError(f"--over-estimates and --plot both write {plot}; give each output its own name",
                            code="D134")


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from ..gold.validate import format_validation_text, plot_validation, validate

    def warn(message: str) -> None:
        if not args.quiet:
            print(f"ddp validate: warning: {message}", file=sys.stderr)

    gold_format, output_format = _resolve_formats(args, warn)
    gold_scope = _resolve_scope(args, warn)
    check_validate_outputs(args.gold, args.over_estimates, args.plot)
    if args.plot:  # fail before the long run if matplotlib is missing
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            from ..errors import DDPUsageError

            raise DDPUsageError(
                "--plot needs matplotlib, which is not installed; install it with `pip install 'ddpcore[plot]'`",
                code="D425",
            ) from None
    result = validate(
        args.gold,
        format=gold_format,
        distance=args.distance,
        pipeline=args.pipeline,
        rules=args.rules,
        gold_scope=gold_scope,
        n_process=args.n_process,
        batch_size=args.batch_size,
        progress=not args.quiet and sys.stderr.isatty(),
        strict=args.strict,
    )
    repaired = result.signature.get("gold", {}).get("repaired_brackets", 0)
    if repaired and not args.quiet:
        print(f"ddp validate: warning: {repaired} unbalanced gold coreference bracket(s) repaired by dropping the "
              "mention (use --strict to fail instead)", file=sys.stderr)
        for w in result.signature["gold"].get("warnings", [])[:5]:
            print(f"  {w}", file=sys.stderr)
    if args.over_estimates:
        from ..io.tables import write_table_atomic

        write_table_atomic(result.over_estimates, args.over_estimates,
                           metadata={"ddpcore.validation": json.dumps(result.signature, sort_keys=True)})
    if args.plot:
        plot_validation(result, args.plot)
    if output_format == "json":
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(format_validation_text(result))
    return 0
