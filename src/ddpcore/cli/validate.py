"""``ddp validate``: DDP against gold coreference distances (paper Appendix A.1)."""
from __future__ import annotations

import argparse

from ._common import HelpFormatter, add_extraction_options, resolve_rules, stderr_line
from ..schema import SIGNATURE_KEY

GOLD_FORMATS = ("litbank", "conllu", "conll2012")
GOLD_SCOPES = ("full", "restricted", "ddp")  # = ddpcore.gold.validate.GOLD_SCOPES (not imported: keeps --help fast)
DEFAULT_TAILS = (5, 15)  # = ddpcore.gold.validate.DEFAULT_TAILS
OUTPUT_FORMATS = ("json", "text")
PLOT_EXTENSIONS = (".png", ".pdf", ".svg")
SET_ASIDE_RULES = ("none", "same-string-names")  # = ddpcore.gold.validate.SET_ASIDE_RULES


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="validate DDP against gold coreference (LitBank, GUM/OntoGUM, CoNLL-2012)",
        description=(
            "Compare DDP with gold coreference distances, one gold sentence = one segment. The gold distance "
            "of a sentence mirrors --distance: over its mentions whose chain was mentioned in an earlier "
            "sentence, the distance back to the chain's first mention (chained) or to its latest earlier "
            "mention (nearest); 0 if none; --gold-scope chooses which gold mentions count. For every DDP column of the "
            "run (ddp and, when present, ddp_certified), per genre and overall: Pearson r, Spearman rho, the shares "
            "of under/exact/over estimates with exact 95% intervals, the mean signed error (DDP - gold, "
            "sentences), tail precision and recall at each --tail k, and for ddp_certified the coverage (share of "
            "segments with gold > 0 that have ddp_certified > 0)."
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
    p.add_argument("--strict", action="store_true",
                   help="fail on unbalanced gold coreference brackets instead of dropping the mention with a warning")
    p.add_argument("--tail", type=_tails, action="append", default=None, metavar="K[,K...]",
                   help="tail thresholds k in sentences, a comma list, repeatable (--tail 5 --tail 15 = --tail 5,15; "
                        "default: 5,15): tail precision = of the segments with DDP >= k, the share with gold >= k; tail "
                        "recall = of the segments with gold >= k, the share with DDP >= k; each with its exact 95%% "
                        "(Clopper-Pearson) interval")
    add_extraction_options(p)
    p.add_argument("--set-aside", dest="set_aside", choices=SET_ASIDE_RULES, default="none",
                   help="segments each DDP column's figures leave out: none (default), or same-string-names = those "
                        "whose value comes only from re-mentions of a name by the same string (every anchor reaching "
                        "it is a name whose text equals its antecedent's), for a gold that does not chain repeated "
                        "names, e.g. one that annotates pronouns and their antecedents; the counts are said on "
                        "stderr and recorded in the report")
    p.add_argument("-f", "--format", dest="format", type=_output_format, default="json", metavar="{json,text}",
                   help="report format on stdout (default: json)")
    # removed spellings (issue 20): one line naming the new one, exit 2
    p.add_argument("--restricted", action="store_true", dest="removed_restricted", help=argparse.SUPPRESS)
    p.add_argument("--output-format", dest="removed_output_format", default=None, help=argparse.SUPPRESS)
    p.add_argument("--plot", default=None, metavar="FILE",
                   help="write a scatter plot of DDP vs gold distance (.png, .pdf, .svg; needs matplotlib: the [plot] extra)")
    p.add_argument("--over-estimates", default=None, metavar="FILE",
                   help="write the over-estimated segments with the anchor responsible (.csv, .tsv, .jsonl, .parquet)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no warnings on stderr")
    p.set_defaults(func=run)


def _gold_scope(text: str) -> str:
    """argparse type of --gold-scope: an unknown value is a one-line usage error (exit 2)."""
    if text not in GOLD_SCOPES:
        raise argparse.ArgumentTypeError(f"[D230] unknown gold scope {text!r}; choose one of: {', '.join(GOLD_SCOPES)}")
    return text


def _tails(text: str) -> tuple[int, ...]:
    """argparse type of --tail: comma-separated whole numbers >= 1, sorted, repeats dropped (else D443, exit 2).
    Spaces around a number are allowed; an empty item (``5,``, ``,5``, ``5,,15``, blank) is not."""
    parts = [t.strip() for t in text.split(",")]
    try:
        ok = all(t.isascii() and t.isdigit() and int(t) >= 1 for t in parts)
    except ValueError:  # int() refuses more digits than sys.get_int_max_str_digits() (argparse: "invalid _tails value")
        ok = False
    if not ok:
        raise argparse.ArgumentTypeError(
            f"[D443] --tail {text!r}: give whole numbers of sentences >= 1 separated by commas, e.g. --tail 5,15")
    return tuple(sorted({int(t) for t in parts}))


def all_tails(given: list[tuple[int, ...]] | None) -> tuple[int, ...]:
    """The thresholds of every --tail (each one a comma list: repeated, they add up), sorted, repeats dropped;
    :data:`DEFAULT_TAILS` when none is given."""
    return tuple(sorted({k for ks in given for k in ks})) if given else DEFAULT_TAILS


def _output_format(text: str) -> str:
    """argparse type of -f/--format: json or text; a gold format here (its removed meaning) names --gold-format."""
    if text in OUTPUT_FORMATS:
        return text
    if text in GOLD_FORMATS:
        raise argparse.ArgumentTypeError(
            f"[D444] -f/--format is the report format (json, text); the gold format is --gold-format {text}")
    raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(OUTPUT_FORMATS)})")


def _check_removed(args: argparse.Namespace) -> None:
    """The spellings removed in this release (issue 20) are one-line usage errors naming the new one."""
    from ..errors import DDPUsageError

    if args.removed_restricted:
        raise DDPUsageError("--restricted was removed; use --gold-scope restricted", code="D444")
    if args.removed_output_format is not None:
        raise DDPUsageError(f"--output-format was removed; use -f/--format {args.removed_output_format}", code="D444")


def check_validate_outputs(gold: list[str], over_estimates: str | None, plot: str | None) -> None:
    """Check --over-estimates and --plot before any work: extension, folder, writable, not an input,
    not the same file twice (D101, D130-D134 from :mod:`ddpcore.io.outputs`; D441 plot extension)."""
    from pathlib import Path

    from ..errors import DDPUsageError
    from ..io.outputs import file_identity, same_file, check_outputs

    check_outputs([("--over-estimates", over_estimates)], inputs=gold, formats=("csv", "tsv", "jsonl", "parquet"),
                  sidecars=True)
    if not plot:
        return
    path = Path(plot)
    if path.suffix.lower() not in PLOT_EXTENSIONS:
        raise DDPUsageError(
            f"--plot {plot}: unknown plot format (extension '{path.suffix or '(none)'}'); use "
            + ", ".join(PLOT_EXTENSIONS),
            code="D441",
        )
    if path.is_dir():
        raise DDPUsageError(f"--plot {plot}: is an existing folder; give a file name inside it "
                            f"(e.g. {path / 'validation.png'})", code="D132")
    # the work-folder, folder and writability checks of io.outputs, run on a table-named stand-in in
    # the same folder (never created; io.outputs knows no figure formats), with its messages naming the
    # user's path; then the input and duplicate checks on the plot path itself
    stand_in = path.with_name(path.name + ".csv")
    while stand_in.is_dir():  # the stand-in's own name must not trip the existing-folder check
        stand_in = stand_in.with_name("_" + stand_in.name)
    try:
        check_outputs([("--plot", stand_in)])
    except DDPUsageError as exc:
        raise DDPUsageError(exc.message.replace(f"--plot {stand_in}", f"--plot {plot}"), code=exc.code) from None
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

    _check_removed(args)
    check_validate_outputs(args.gold, args.over_estimates, args.plot)
    if args.plot:  # fail before the long run if matplotlib is missing (D425)
        from ..gold.validate import pyplot

        pyplot()
    result = validate(
        args.gold,
        format=args.gold_format,
        distance=args.distance,
        pipeline=args.pipeline,
        rules=resolve_rules(args.rules, args.certify_model),
        gold_scope=args.gold_scope or "full",
        n_process=args.n_process,
        batch_size=args.batch_size,
        progress=not args.quiet and sys.stderr.isatty(),
        strict=args.strict,
        tails=all_tails(args.tail),
        set_aside=args.set_aside,
    )
    if result.set_aside and not args.quiet:
        from ..gold.validate import set_aside_note

        stderr_line(f"ddp validate: {set_aside_note(result.set_aside)}")
    if result.undefined and not args.quiet:  # never a null in silence: which figures, and why
        from ..gold.validate import undefined_note

        for line in undefined_note(result.undefined):
            stderr_line(f"ddp validate: note: {line}")
    for note in result.signature.get("gold", {}).get("notes", [])[:5]:  # how a gold file was read where it did not say
        stderr_line(f"ddp validate: note: {note}")
    gold_sig = result.signature.get("gold", {})
    repaired, rebuilt = gold_sig.get("repaired_brackets", 0), gold_sig.get("rebuilt_texts", 0)
    if repaired and not args.quiet:
        print(f"ddp validate: warning: {repaired} unbalanced gold coreference bracket(s) repaired by dropping the "
              "mention (use --strict to fail instead)", file=sys.stderr)
        for w in [w for w in gold_sig.get("warnings", []) if not w.startswith("[D413]")][:5]:
            stderr_line(f"  {w}")
    if rebuilt:  # said even with -q: the text measured is not the file's
        print(f"ddp validate: warning: in {rebuilt} gold file(s) a sentence's '# text' does not spell its word forms; "
              "those texts were rebuilt from the forms (use --strict to fail instead)", file=sys.stderr)
        for w in [w for w in gold_sig.get("warnings", []) if w.startswith("[D413]")][:5]:
            stderr_line(f"  {w}")
    if args.over_estimates:  # the signature in Parquet's metadata, else in FILE.signature.json
        from ..io.tables import write_tables_atomic

        sig_json = json.dumps(result.signature, sort_keys=True)
        write_tables_atomic([(result.over_estimates, args.over_estimates)], metadata={SIGNATURE_KEY: sig_json},
                            sidecar=sig_json)
    if args.plot:  # the signature embedded in the figure (PNG text chunk, SVG and PDF metadata)
        plot_validation(result, args.plot)
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(format_validation_text(result))
    return 0
