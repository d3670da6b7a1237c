"""``ddp explain``: show why one segment has its DDP."""
from __future__ import annotations

import argparse

from ._common import HelpFormatter, add_extraction_options, add_reader_options, add_segment_columns, stderr_line


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explain",
        help="show the anchors, antecedents and distances behind one segment's DDP",
        description=(
            "For one segment, list each anchor (named entity / pronoun + group), its antecedent (text and "
            "sentence) and its distance, so you can see why the DDP is what it is. SOURCE is an output of "
            "`ddp profile` (Parquet, or a text table with its .signature.json sidecar: its rules, distance, "
            "pipeline, columns and reader settings (--reader, --docs, --txt-mode) are reused unless given here; "
            "its source text is re-parsed, or, when it has none, its recorded input is read again as the profile "
            "read it) or an input: a table/folder, or any --reader input. Only the segment's document is parsed."
        ),
        formatter_class=HelpFormatter,
    )
    p.add_argument("source", metavar="DDP_OR_INPUT", help="ddp profile output (.parquet, or .csv/.tsv/.jsonl/.json with its sidecar) or input table/folder")
    p.add_argument("--document", required=True, metavar="ID", help="document id (a value; --document-col names the column)")
    p.add_argument("--segment", required=True, metavar="ID",
                   help="segment id within the document (a value; --segment-col names the column)")
    add_reader_options(p, from_signature=True)
    add_segment_columns(p, from_signature=True)
    add_extraction_options(p, from_signature=True)
    p.add_argument("-f", "--format", choices=("text", "json"), default="text", help="output format")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from ..explain import explain
    from .profile import _write_stdout

    # only options given on the command line; the output's recorded signature fills the rest
    given = {"document_col": args.document_col, "segment_col": args.segment_col, "text_col": args.text_col,
             "domain_col": args.domain_col, "distance": args.distance, "pipeline": args.pipeline, "rules": args.rules, "certify_model": args.certify_model,
             "reader": args.reader, "docs": args.docs, "txt_mode": args.txt_mode}
    kwargs = {k: v for k, v in given.items() if v is not None}
    result = explain(args.source, document_id=args.document, segment_id=args.segment, n_process=args.n_process,
                     batch_size=args.batch_size, **kwargs)
    if result.inherited:
        from ..anchors.certify_model import DEFAULT_CERTIFY_MODEL

        shown = ", ".join(f"{k.replace('_', '-')} {v!r}" for k, v in result.inherited.items()
                          if k in ("rules", "distance", "pipeline")
                          or (k == "certify_model" and v != DEFAULT_CERTIFY_MODEL))  # a user's model is named
        cols = [f"{k.removesuffix('_col')} {v!r}" for k, v in result.inherited.items()
                if k in ("document_col", "segment_col", "text_col", "domain_col")]
        if cols:
            shown = ", ".join([*([shown] if shown else []), "columns " + ", ".join(cols)])
        read = [f"{k.replace('_', '-')} {v!r}" for k, v in result.inherited.items() if k in ("reader", "docs", "txt_mode")]
        if read:
            shown = ", ".join([*([shown] if shown else []), *read])
        stderr_line(f"using {shown} from {result.settings_from}")
    out = json.dumps(result.to_dict(), indent=2, default=str) if args.format == "json" else result.to_text()
    _write_stdout(lambda fh: fh.write((out + "\n").encode()))
    return 0
