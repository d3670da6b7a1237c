"""``ddp plot``: DDP histogram / ECDF of a profile, or the curves of a ``ddp stratify`` result."""
from __future__ import annotations

import argparse

from ._common import HelpFormatter


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plot", help="plot the DDP distribution (hist, ecdf) or stratify curves (needs ddpcore[plot])",
        description=(
            "Draw a figure (.png or .svg, from the -o extension). --kind hist|ecdf: the DDP distribution of a "
            "`ddp profile` segment table (--by domain: one curve per domain). --kind curves: a `ddp stratify` JSON "
            "result: per group the binned mean score with its 95%% CI bar and the LOWESS curve. Needs matplotlib: "
            "pip install 'ddpcore[plot]'. Exit codes: 0 ok, 2 usage, 3 bad data."),
        formatter_class=HelpFormatter)
    p.add_argument("input", metavar="INPUT", help="DDP.parquet (segment table of `ddp profile`) for hist/ecdf; "
                                                   "STRATIFY.json (`ddp stratify -f json`) for curves")
    p.add_argument("--kind", choices=("hist", "ecdf", "curves"), default="hist", help="what to draw")
    p.add_argument("--by", default=None, metavar="COL",
                   help="hist/ecdf: one curve per value of this profile column (e.g. domain)")
    p.add_argument("--title", default=None, help="figure title (default: describes the data)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="output figure: FILE.png or FILE.svg")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from ..errors import DDPUsageError
    from ..report import plots

    out = plots.check_file_output("-o/--output", args.output, [args.input], plots.FIGURE_FORMATS)
    plots.pyplot()  # a missing matplotlib fails before reading anything
    if args.kind == "curves":
        if args.by:
            raise DDPUsageError("--by applies to --kind hist/ecdf; the curves follow the stratify --by groups",
                                code="D673")
        res = plots.load_stratify(args.input)
        fig = plots.curves_figure(res, title=args.title)
        what = f"{len(res['groups']) + len(res.get('gaps', []))} groups"
    else:
        if str(args.input).lower().endswith(".json") and not str(args.input).lower().endswith(".signature.json"):
            import json

            try:
                with open(args.input, encoding="utf-8") as fh:
                    is_strat = isinstance(json.load(fh), dict)
            except (OSError, ValueError):
                is_strat = False
            if is_strat:
                raise DDPUsageError(f"{args.input} looks like a `ddp stratify` result; use --kind curves",
                                    code="D673")
        df, sig = plots.load_profile(args.input)
        make = plots.hist_figure if args.kind == "hist" else plots.ecdf_figure
        fig = make(df, by=args.by, signature=sig, title=args.title)
        what = f"{df.height} segments"
    plots.save_figure(fig, out)
    print(f"ddp plot: wrote {out} ({args.kind}, {what})", file=sys.stderr)
    return 0
