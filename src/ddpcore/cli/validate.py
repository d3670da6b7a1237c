"""``ddp validate``: DDP against gold coreference distances (paper Appendix A.1)."""
from __future__ import annotations

import argparse

from ._common import add_extraction_options


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="validate DDP against gold coreference (LitBank, GUM/OntoGUM, CoNLL-2012)",
        description=(
            "Compare DDP with gold coreference distances, one gold sentence = one segment. The gold distance "
            "of a sentence mirrors --distance: over its mentions whose chain was mentioned in an earlier "
            "sentence, the distance back to the chain's first mention (chained) or to its latest earlier "
            "mention (nearest); 0 if none. Prints Pearson r, Spearman rho, the shares of under/exact/over "
            "estimates and the mean signed error (DDP - gold, sentences) per genre and overall."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("gold", nargs="+", metavar="GOLD",
                   help="gold files, folders or tar archives (.tar.xz etc. are read without extracting)")
    p.add_argument("--format", dest="gold_format", choices=("litbank", "conllu", "conll2012"), default=None,
                   help="gold format (default: detected from file names: .conllu, .ann+.txt, *_brat.conll, *.conll/*_conll)")
    p.add_argument("--restricted", action="store_true",
                   help="restricted gold: keep only proper-name and pronoun mentions (the types DDP models)")
    p.add_argument("--strict", action="store_true",
                   help="fail on unbalanced gold coreference brackets instead of dropping the mention with a warning")
    add_extraction_options(p)
    p.add_argument("-f", "--output-format", dest="output_format", choices=("json", "text"), default="json",
                   help="report format on stdout")
    p.add_argument("--plot", default=None, metavar="FILE",
                   help="write a scatter plot of DDP vs gold distance (.png, .pdf, .svg; needs ddpcore[plot])")
    p.add_argument("--over-estimates", default=None, metavar="FILE",
                   help="write the over-estimated segments with the anchor responsible (.csv, .tsv, .jsonl, .parquet)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no warnings on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from ..validation import format_validation_text, plot_validation, validate

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
        format=args.gold_format,
        distance=args.distance,
        pipeline=args.pipeline,
        rules=args.rules,
        restricted=args.restricted,
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
    if args.output_format == "json":
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(format_validation_text(result))
    return 0
