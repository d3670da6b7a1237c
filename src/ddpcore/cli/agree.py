"""``ddp agree``: agreement between two DDP runs over the same segments (paper Appendix A.3)."""
from __future__ import annotations

import argparse

from ._common import HelpFormatter


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "agree",
        help="agreement of two DDP runs over the same segments (Pearson, Spearman, %% identical, domain shifts)",
        description=(
            "Compare two DDP runs over the same segments (e.g. two extractors, each written by "
            "`ddp profile -o run.parquet`): Pearson r, Spearman rho, % identical, % within +/-N sentences, "
            "per-domain mean shift (B - A) and whether the ordering of domains by mean DDP is preserved. "
            "The column names are read from each run's signature (Parquet metadata, or the .signature.json "
            "sidecar of a text output) unless given. A document or segment present in only one run, or a DDP "
            "value that is not a whole number of sentences >= 0, is an error (exit 3)."
        ),
        formatter_class=HelpFormatter,
    )
    p.add_argument("a", metavar="A", help="first run (from `ddp profile`: Parquet, or a text table with its "
                                          ".signature.json sidecar; or any table with a ddp column)")
    p.add_argument("b", metavar="B", help="second run, over the same segments")
    p.add_argument("--within", type=int, default=5, metavar="N",
                   help="tolerance in sentences for the 'within' share, >= 0 (default: %(default)s)")
    p.add_argument("--document-col", default=None, metavar="NAME",
                   help="document id column (default: from the run's signature, else document_id; a run without it "
                        "whose signature names its own uses that one)")
    p.add_argument("--segment-col", default=None, metavar="NAME",
                   help="segment id column (default: from the run's signature, else segment_id; a run without it "
                        "whose signature names its own uses that one)")
    p.add_argument("--domain-col", default=None, metavar="NAME",
                   help="domain column (default: from the run's signature, else domain)")
    p.add_argument("--ddp-col", default="ddp", metavar="NAME",
                   help="the DDP column compared (in both runs unless --b-ddp-col is given): ddp, or ddp_certified "
                        "(default: %(default)s)")
    p.add_argument("--b-ddp-col", default=None, metavar="NAME",
                   help="B's DDP column when it differs from A's, e.g. `ddp agree run.parquet run.parquet --ddp-col "
                        "ddp --b-ddp-col ddp_certified` compares a run's two columns (default: --ddp-col)")
    p.add_argument("-f", "--format", choices=("json", "text"), default="json",
                   help="report format on stdout (default: %(default)s)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from ..gold.agree import agree, format_agreement_text

    result = agree(args.a, args.b, within=args.within, document=args.document_col, segment=args.segment_col,
                   domain=args.domain_col, ddp_col=args.ddp_col, ddp_col_b=args.b_ddp_col)
    print(json.dumps(result.to_dict(), indent=2) if args.format == "json" else format_agreement_text(result))
    return 0
