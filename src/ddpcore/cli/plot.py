"""``ddp plot``: DDP histogram / ECDF of a profile, or the curves of a ``ddp stratify`` result."""
from __future__ import annotations

import argparse

from ._common import HelpFormatter, stderr_line


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plot", help="plot the DDP distribution (hist, ecdf) or stratify curves (needs matplotlib: the [plot] extra)",
        description=(
            "Draw a figure (.png or .svg, from the -o extension). --kind hist|ecdf: the DDP distribution of a "
            "`ddp profile` segment table (--by domain: one curve per domain). --kind curves: a `ddp stratify` JSON "
            "result: per group the binned mean score with its 95% CI bar and the LOWESS curve; the first --by column of "
            "the stratify run gives the coloured series of a panel (at most 8: a panel with more is split into "
            "panels of 8 that share one y range), the other --by columns give the panels; with more panels than "
            "--max-panels the figure is paged: -o curves.png writes curves-p01.png, curves-p02.png, ... (one line "
            "on stderr lists them and says what was split). Needs matplotlib: "
            "pip install 'matplotlib>=3.7' (the [plot] extra; from a clone pip install '.[plot]'). "
            "Exit codes: 0 ok, 2 usage, 3 bad data."),
        formatter_class=HelpFormatter)
    p.add_argument("input", metavar="INPUT", help="DDP.parquet (segment table of `ddp profile`) for hist/ecdf; "
                                                   "STRATIFY.json (`ddp stratify -f json`) for curves")
    p.add_argument("--kind", choices=("hist", "ecdf", "curves"), default="hist", help="what to draw")
    p.add_argument("--by", default=None, metavar="COL",
                   help="hist/ecdf: one curve per value of this profile column (e.g. domain); beyond the 8 "
                        "colours a curve gets another line style, then a marker, so no two look alike (at most "
                        "256 values, D931)")
    p.add_argument("--ddp-col", default=None, metavar="NAME",
                   help="hist/ecdf: the profile's DDP column to draw (default ddp; e.g. ddp_certified); curves: "
                        "the column the stratify result must have been computed on (default: the one it records); "
                        "recorded in the figure's signature")
    p.add_argument("--title", default=None, metavar="TEXT", help="figure title (default: describes the data)")
    p.add_argument("--max-panels", type=int, default=None, metavar="N",
                   help="curves: at most N panels per figure; more panels go to further figures named "
                        "STEM-p01.EXT, STEM-p02.EXT, ... beside -o (default: 12, a 3 x 4 grid)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="output figure: FILE.png or FILE.svg")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import DDPUsageError
    from ..report import plots

    out = plots.check_file_output("-o/--output", args.output, [args.input], plots.FIGURE_FORMATS)
    if args.max_panels is not None and args.kind != "curves":
        raise DDPUsageError("--max-panels applies to --kind curves", code="D561")
    max_panels = plots.MAX_PANELS if args.max_panels is None else args.max_panels
    if max_panels < 1:  # before anything is read
        raise DDPUsageError(f"--max-panels must be at least 1, got {max_panels}", code="D561")
    plots.pyplot()  # a missing matplotlib fails before reading anything
    if args.kind == "curves":
        if args.by:
            raise DDPUsageError("--by applies to --kind hist/ecdf; the curves follow the stratify --by groups",
                                code="D673")
        res = plots.load_stratify(args.input)
        if not res.get("groups") and not res.get("gaps"):
            from ..errors import DDPDataError

            raise DDPDataError(f"{args.input}: the stratify result has no groups to plot; run `ddp stratify` on "
                               "scores that join the profile", code="D674")
        col = plots.check_result_ddp_col(res, args.ddp_col, args.input)
        written = plots.write_curves(res, out, title=args.title, max_panels=max_panels, inputs=[args.input],
                                     signature=plots.figure_signature("curves", args.input, res.get("signature") or {},
                                                                      col))
        stderr_line(f"ddp plot: {written.note()}")
        return 0
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
    col = args.ddp_col or "ddp"
    df, sig = plots.load_profile(args.input, ddp_col=col)
    if args.by is not None and args.by not in df.columns:  # named here: the figure functions see a frame, not a file
        raise DDPUsageError(f"--by {args.by}: not a column of {args.input}; available: {', '.join(df.columns)}",
                            code="D673")
    make = plots.hist_figure if args.kind == "hist" else plots.ecdf_figure
    fig = make(df, by=args.by, signature=sig, title=args.title, ddp_col=col)
    what = f"{df.height} segments" + ("" if col == "ddp" else f", {col}")
    plots.save_figure(fig, out, signature=plots.figure_signature(args.kind, args.input, sig, col))
    stderr_line(f"ddp plot: wrote {out} ({args.kind}, {what})")
    return 0
