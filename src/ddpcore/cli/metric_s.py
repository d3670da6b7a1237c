"""``ddp metric-s``: DiscoX Metric-S scores from a judge's JSONL item lists.

Only argparse is imported at module level (``ddp --help`` stays fast).
"""
from __future__ import annotations

import argparse
from typing import Any

from ._common import HelpFormatter

COLUMNS = ("id", "accuracy", "fluency", "appropriateness", "total", "status", "n_unknown_labels", "error")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "metric-s",
        help="DiscoX Metric-S scores (accuracy 60 + fluency 20 + appropriateness 20) from judge item lists",
        description=(
            "Score each line of JUDGEMENTS.jsonl (a judge's accuracy_items, checkpoint_items, fluency_items, "
            "appropriateness_items; severity labels in Chinese or English) with Metric-S. --mapping code follows "
            "the released code (-5/-10/-50 per Major/Critical/Extremely Critical accuracy error, -5 per failed "
            "checkpoint, -2 per fluency issue, -5 per appropriateness issue); --mapping paper uses the paper's "
            "2/5/10/50. instruction_following: false scores 0; a judge_error or an unparseable line is an error "
            "row (null scores, counted), never full marks. See docs/metric-s.md."
        ),
        formatter_class=HelpFormatter,
    )
    p.add_argument("judgements", metavar="JUDGEMENTS.jsonl", help="one judge reply per line (JSON object)")
    p.add_argument("--mapping", choices=("code", "paper"), default="code",
                   help="deduction table (default: %(default)s)")
    p.add_argument("-f", "--format", choices=("json", "tsv", "text"), default="json",
                   help="stdout format: rows (json/tsv) or a summary (text); with -o, the summary (default: %(default)s)")
    p.add_argument("-o", "--output", default=None, metavar="PATH",
                   help="write the rows to PATH (.tsv, .csv, .jsonl, .json or .parquet; text formats get a "
                        ".signature.json sidecar)")
    p.set_defaults(func=run)


def _frame(rows: list[Any]) -> Any:
    import polars as pl

    return pl.DataFrame(
        {c: [getattr(r, c) for r in rows] for c in COLUMNS},
        schema={"id": pl.String, "accuracy": pl.Float64, "fluency": pl.Float64, "appropriateness": pl.Float64,
                "total": pl.Float64, "status": pl.String, "n_unknown_labels": pl.Int64, "error": pl.String},
    )


def _text(summary: dict[str, Any], mapping: str) -> str:
    def f(v: Any) -> str:
        return "n/a" if v is None else f"{v:.2f}"

    return "\n".join([
        f"Metric-S ({mapping} mapping): {summary['n_rows']} judgements, {summary['n_scored']} scored, "
        f"{summary['n_errors']} error rows, {summary['n_instruction_following_failed']} instruction-following "
        f"failures (scored 0), {summary['n_unknown_labels']} unknown labels",
        f"mean total {f(summary['mean_total'])} (accuracy {f(summary['mean_accuracy'])}, fluency "
        f"{f(summary['mean_fluency'])}, appropriateness {f(summary['mean_appropriateness'])})",
    ]) + "\n"


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from ..io.outputs import check_outputs
    from ..io.tables import write_tables_atomic
    from ..scoring import metric_s, read_judgements, summarize
    from ..stats import json_safe, signature

    if args.output:
        check_outputs([("-o/--output", args.output)], inputs=[args.judgements], sidecars=True)
    rows = metric_s(read_judgements(args.judgements), mapping=args.mapping)
    summary = summarize(rows)
    sig = signature("metric_s", mapping=args.mapping)
    frame = _frame(rows)
    if args.output:
        write_tables_atomic([(frame, args.output)], metadata={"ddpcore_signature": json.dumps(sig)},
                            sidecar=json.dumps(sig, indent=2) + "\n")
        if args.format == "text":
            sys.stdout.write(_text(summary, args.mapping))
        else:
            sys.stdout.write(json.dumps(json_safe({"summary": summary, "output": args.output, "signature": sig}),
                                        ensure_ascii=False, indent=2) + "\n")
        return 0
    if args.format == "json":
        doc = {"rows": frame.to_dicts(), "summary": summary, "signature": sig}
        sys.stdout.write(json.dumps(json_safe(doc), ensure_ascii=False, indent=2) + "\n")
    elif args.format == "tsv":
        sys.stdout.write(frame.write_csv(separator="\t", null_value=""))
    else:
        sys.stdout.write(_text(summary, args.mapping))
    return 0
