"""``ddp profile``: per-segment DDP of a test set, a per-domain summary, Parquet output."""
from __future__ import annotations

import argparse

from ._common import add_extraction_options, add_segment_columns, bundled_default


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile",
        help="compute per-segment discourse dependency (DDP)",
        description=(
            "Compute per-segment discourse dependency (DDP, in sentences) of source documents. "
            "INPUT is a JSONL/CSV/TSV/JSON/Parquet table with document id, segment id, source text and "
            "optional domain columns, or a folder of .txt documents (blank line = segment boundary). "
            "Without INPUT, profiles the bundled WMT25 English source (87 documents, 332 segments). "
            "Prints a per-domain summary and writes the segment table."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("input", nargs="?", default=None, metavar="INPUT",
                   help="segment table or folder of .txt documents (default: bundled WMT25 English source)")
    p.add_argument("-o", "--output", default="ddp.parquet", metavar="PATH",
                   help="segment table to write (.parquet, .csv, .tsv, .jsonl); one row per input segment")
    p.add_argument("--anchors", default=None, metavar="PATH", help="also write the anchors table (one row per anchor)")
    p.add_argument("--sentences", default=None, metavar="PATH", help="also write per-sentence DDP")
    add_segment_columns(p)
    add_extraction_options(p)
    p.add_argument("--summary-by", default=None, metavar="COL", help="column to summarise by (default: the domain column)")
    p.add_argument("-f", "--format", choices=("text", "json"), default="text", help="summary output format (stdout)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from ..io.tables import write_tables_atomic
    from ..profiling import SIGNATURE_KEY, profile_anchors

    source = args.input if args.input is not None else bundled_default()
    result = profile_anchors(
        source,
        document=args.document_col,
        segment=args.segment_col,
        text=args.text_col,
        domain=args.domain_col,
        distance=args.distance,
        pipeline=args.pipeline,
        rules=args.rules,
        n_process=args.n_process,
        batch_size=args.batch_size,
        progress=not args.quiet and sys.stderr.isatty(),
        source_name=str(source),
    )
    outputs = [(result.segments, args.output)]
    if args.anchors:
        outputs.append((result.anchors, args.anchors))
    if args.sentences:
        outputs.append((result.sentences, args.sentences))
    signature = dict(result.signature, input=str(source))
    write_tables_atomic(outputs, metadata={SIGNATURE_KEY: json.dumps(signature, sort_keys=True)})
    summary = result.summary(by=args.summary_by or args.domain_col)
    if args.format == "json":
        print(json.dumps({"summary": summary.to_dicts(), "outputs": [str(d) for _, d in outputs],
                          "signature": signature}, indent=2))
    else:
        print(_format_summary(summary))
        print(f"\nwrote {', '.join(str(d) for _, d in outputs)}  "
              f"({result.segments.height} segments, {result.anchors.height} anchors; distance={args.distance}, "
              f"pipeline {signature['pipeline_name']} {signature['pipeline_version']}, rules {signature['rules']})")
    return 0


def _format_summary(summary) -> str:  # type: ignore[no-untyped-def]
    header = f"{'domain':<12}{'docs':>6}{'segments':>10}{'mean':>9}{'median':>8}{'p90':>8}{'max':>6}{'zero%':>8}"
    lines = ["DDP per domain (sentences)", header, "-" * len(header)]
    for r in summary.iter_rows(named=True):  # one row per domain
        lines.append(
            f"{str(r['group']):<12}{r['documents']:>6}{r['segments']:>10}{r['mean_ddp']:>9.1f}{r['median_ddp']:>8.1f}"
            f"{r['p90_ddp']:>8.1f}{r['max_ddp']:>6}{100 * r['zero_ddp_share']:>7.1f}%"
        )
    return "\n".join(lines)
