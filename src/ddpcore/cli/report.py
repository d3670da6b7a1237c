"""``ddp report``: a self-contained HTML report of a DDP profile."""
from __future__ import annotations

import argparse

from ._common import HelpFormatter, stderr_line


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="one self-contained HTML report of a profile (needs matplotlib: the [plot] extra)",
        description=(
            "Write one self-contained HTML file (inline CSS and SVG; nothing is fetched from a network): the "
            "per-domain DDP table, the DDP histogram and ECDF, the top-k highest-DDP segments overall and per domain "
            "with the anchor, its antecedent and the first mention a chained distance runs to highlighted (with "
            "--anchors), the `ddp stratify` curves and numbers (with --stratify) and the run signature; paths are "
            "shown as file names (the page names no local folder). The --anchors table and the --stratify result "
            "must come from the profile's run (their signatures are compared with the profile's: D681 when they "
            "differ; one without a signature is not checked, and a note on stderr and in the page says so); every "
            "profile row needs a DDP value (a null is D781). Needs matplotlib: pip install 'matplotlib>=3.7' (the [plot] extra; from a clone pip install '.[plot]'). "
            "Exit codes: 0 ok, 2 usage, 3 bad data."),
        formatter_class=HelpFormatter)
    p.add_argument("profile", metavar="DDP", help="segment table of `ddp profile` (.parquet, or a text format)")
    p.add_argument("--stratify", default=None, metavar="STRATIFY.json",
                   help="a `ddp stratify -f json` result computed on this profile (the profile signature it records "
                        "must match the profile's, else D681)")
    p.add_argument("--anchors", default=None, metavar="ANCHORS.parquet",
                   help="the --anchors table written by the same `ddp profile` command (its signature must match the "
                        "profile's: rules, distance, pipeline, input, certify model ...; else D681)")
    p.add_argument("--top", type=int, default=10, metavar="K", help="highest-DDP segments to show")
    p.add_argument("--top-per-domain", type=int, default=3, metavar="K",
                   help="then the K highest-DDP segments of each domain (DDP > 0; 0 = none)")
    p.add_argument("--ddp-col", default="ddp", metavar="NAME",
                   help="the profile's DDP column of the table, figures and top-K (e.g. ddp_certified); a --stratify "
                        "result must have been computed on the same column; recorded in the report's signature")
    p.add_argument("--title", default=None, metavar="TEXT", help="page title (default: names the profile)")
    p.add_argument("-o", "--output", required=True, metavar="FILE.html", help="output HTML file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..report import plots
    from ..report.html import write_report

    out = plots.check_file_output("-o/--output", args.output, [args.profile, args.stratify, args.anchors],
                                  ("html", "htm"))
    plots.pyplot()
    write_report(str(out), args.profile, stratify=args.stratify, anchors=args.anchors, top=args.top,
                 top_per_domain=args.top_per_domain, title=args.title, ddp_col=args.ddp_col,
                 warn=lambda m: stderr_line(f"ddp report: note: {m}"))
    stderr_line(f"ddp report: wrote {out}")
    return 0
