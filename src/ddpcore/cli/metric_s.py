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
            "the released code exactly (its keys 问题严重程度 / 判断结果 and its exact labels: -5/-10/-50 per "
            "普通/严重/非常严重 (Major/Critical/Extremely Critical) accuracy error, -5 per unknown accuracy label, "
            "-5 per 错误 checkpoint, -2 per 有问题 fluency item, -5 per 有问题 appropriateness item, any other "
            "label 0); --mapping paper uses the paper's 2/5/10/50 and also reads English keys and labels. Unknown "
            "labels are counted and warned about. instruction_following: false scores 0; a judge_error or an "
            "unparseable line is an error row (null scores, counted); a record with no item list at all is an "
            "error [D740], never full marks. See docs/metric-s.md."
        ),
        formatter_class=HelpFormatter,
    )
    p.add_argument("judgements", metavar="JUDGEMENTS.jsonl", help="one judge reply per line (JSON object)")
    p.add_argument("--mapping", choices=("code", "paper"), default="code",
                   help="deduction table (default: %(default)s)")
    p.add_argument("-f", "--format", choices=("json", "tsv", "text"), default="json",
                   help="stdout format: rows (json/tsv) or a summary (text); with -o, the summary in this format "
                        "(json: with the signature; tsv: one row under its header) (default: %(default)s)")
    p.add_argument("-o", "--output", default=None, metavar="PATH",
                   help="write the rows to PATH (.tsv, .csv, .jsonl, .json or .parquet; text formats get a "
                        ".signature.json sidecar; checked before any work); '-' = stdout, as without -o")
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
        f"failures (scored 0), {summary['n_unknown_labels']} unknown labels, {summary['n_rows_missing_lists']} "
        "judgements lacking some item lists",
        f"mean total {f(summary['mean_total'])} (accuracy {f(summary['mean_accuracy'])}, fluency "
        f"{f(summary['mean_fluency'])}, appropriateness {f(summary['mean_appropriateness'])})",
    ]) + "\n"


def _warn(summary: dict[str, Any], rows: list[Any], lines: list[int], mapping: str) -> None:
    """``warning:`` lines for what changes the measurement: unknown labels, error rows."""
    import sys

    n_unknown = summary["n_unknown_labels"]
    if n_unknown:
        first = next(n for r, n in zip(rows, lines) if r.n_unknown_labels)
        if mapping == "code":
            rule = ("scored as the released code does: -5 in accuracy, 0 in checkpoint, fluency and appropriateness; "
                    "it reads only the keys 问题严重程度 / 判断结果 and its exact labels - --mapping paper also "
                    "reads English keys and labels")
        else:
            rule = "scored -5 in accuracy, 0 in checkpoint, fluency and appropriateness"
        print(f"ddp metric-s: warning: {n_unknown} item label(s) unknown to the {mapping} mapping (first on line "
              f"{first}), {rule}; counted in n_unknown_labels", file=sys.stderr)
    if summary["n_rows_missing_lists"]:
        r, n = next((r, n) for r, n in zip(rows, lines) if r.missing_lists)
        print(f"ddp metric-s: warning: {summary['n_rows_missing_lists']} scored judgement(s) lack some item lists "
              f"(first on line {n}: {', '.join(r.missing_lists)}), read as empty lists (no deduction in that "
              "dimension); counted in n_rows_missing_lists", file=sys.stderr)
    if summary["n_errors"]:
        first = next(n for r, n in zip(rows, lines) if r.status == "error")
        print(f"ddp metric-s: warning: {summary['n_errors']} of {summary['n_rows']} judgement(s) are error rows "
              f"(first on line {first}): null scores, left out of the means; counted in n_errors", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from ..io.outputs import check_outputs
    from ..io.tables import write_tables_atomic
    from ..schema import SIGNATURE_KEY
    from ..stats.metric_s import metric_s, read_judgements_lines, summarize
    from ..stats import json_safe, signature
    from ._common import probe_folder

    if args.output == "-":  # '-' = stdout, as for every other command: the rows in -f's format
        args.output = None
    if args.output:  # before any work: extension, folder (exists, writable, takes a new file), not the input
        (target,) = check_outputs([("-o/--output", args.output)], inputs=[args.judgements], sidecars=True)
        probe_folder("-o/--output", target.path)
    records, lines = read_judgements_lines(args.judgements)
    rows = metric_s(records, mapping=args.mapping, source=args.judgements, line_numbers=lines)
    summary = summarize(rows)
    _warn(summary, rows, lines, args.mapping)
    sig = signature("metric_s", mapping=args.mapping)
    frame = _frame(rows)
    if args.output:
        write_tables_atomic([(frame, args.output)], metadata={SIGNATURE_KEY: json.dumps(sig)},
                            sidecar=json.dumps(sig, indent=2) + "\n")
        if args.format == "text":
            sys.stdout.write(_text(summary, args.mapping))
        elif args.format == "tsv":  # the summary as one TSV row under its header, as -f asks
            import polars as pl

            sys.stdout.write(pl.DataFrame([{**summary, "output": args.output}]).write_csv(separator="\t", null_value=""))
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
