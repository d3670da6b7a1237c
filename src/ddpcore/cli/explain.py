"""``ddp explain``: show why one segment has its DDP."""
from __future__ import annotations

import argparse

from ._common import add_extraction_options, add_segment_columns


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explain",
        help="show the anchors, antecedents and distances behind one segment's DDP",
        description=(
            "For one segment, list each anchor (named entity / pronoun + group), its antecedent (text and "
            "sentence) and its distance, so you can see why the DDP is what it is. SOURCE is a Parquet file "
            "written by `ddp profile` (its settings are reused) or an input table/folder. Only the segment's "
            "document is parsed."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("source", metavar="DDP_OR_INPUT", help="ddp profile output (.parquet) or input table/folder")
    p.add_argument("--document", required=True, metavar="ID", help="document id")
    p.add_argument("--segment", required=True, metavar="ID", help="segment id within the document")
    add_segment_columns(p)
    add_extraction_options(p)
    p.add_argument("-f", "--format", choices=("text", "json"), default="text", help="output format")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from ..profiling import explain

    # only pass options the user changed, so a profile's recorded settings win otherwise
    defaults = {"document_col": "document_id", "segment_col": "segment_id", "text_col": "source",
                "domain_col": "domain", "distance": "chained", "pipeline": None, "rules": None}
    names = {"document_col": "document", "segment_col": "segment", "text_col": "text", "domain_col": "domain",
             "distance": "distance", "pipeline": "pipeline", "rules": "rules"}
    kwargs = {names[k]: getattr(args, k) for k, v in defaults.items() if getattr(args, k) != v}
    kwargs["n_process"] = args.n_process
    result = explain(args.source, args.document, args.segment, **kwargs)
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2, default=str))
    else:
        print(result.to_text())
    return 0
