"""``ddp profile``: per-segment DDP of a test set, a per-domain summary, Parquet output."""
from __future__ import annotations

import argparse

from ._common import HelpFormatter, add_extraction_options, add_segment_columns, bundled_default


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
        formatter_class=HelpFormatter,
    )
    p.add_argument("input", nargs="?", default=None, metavar="INPUT",
                   help="segment table or folder of .txt documents (default: bundled WMT25 English source)")
    p.add_argument("-o", "--output", default="ddp.parquet", metavar="PATH",
                   help="segment table to write (.parquet, .csv, .tsv, .jsonl, .json; .gz compresses a text "
                        "format; '-' writes it to stdout, see --stdout-format, and the summary goes to stderr); "
                        "one row per input segment. Text formats get the run signature in "
                        "PATH.signature.json, Parquet in its metadata")
    p.add_argument("--anchors", default=None, metavar="PATH", help="also write the anchors table (one row per anchor)")
    p.add_argument("--sentences", default=None, metavar="PATH", help="also write per-sentence DDP")
    p.add_argument("--stdout-format", choices=("jsonl", "csv", "tsv", "json"), default="jsonl",
                   help="format of the segment table with -o - (no signature sidecar)")
    add_segment_columns(p)
    add_extraction_options(p)
    p.add_argument("--summary-by", default=None, metavar="COL", help="input column to summarise by (default: the domain column)")
    p.add_argument("-f", "--format", choices=("text", "json"), default="text", help="summary output format (on stdout; on stderr with -o -)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from ..errors import DDPUsageError
    from ..io.outputs import check_outputs
    from ..io.segments import ROW, SegmentColumns, read_segments
    from ..io.tables import write_tables_atomic, write_text_table
    from ..profiling import SIGNATURE_KEY, profile_anchors

    source = args.input if args.input is not None else bundled_default()
    # every output is checked before the input is read or a pipeline loaded
    targets = check_outputs(
        [("-o/--output", args.output), ("--anchors", args.anchors), ("--sentences", args.sentences)],
        [source], stdout_format=args.stdout_format, sidecars=True,
    )
    cols = SegmentColumns(args.document_col, args.segment_col, args.text_col, args.domain_col)
    table = read_segments(source, cols).drop(ROW)  # bad input fails here, before the pipeline loads
    by = args.summary_by or args.domain_col
    if by not in table.columns:
        raise DDPUsageError(
            f"--summary-by {by}: no such column in {source}; available columns: {', '.join(table.columns)}",
            code="D137",
        )
    result = profile_anchors(
        table,
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
    tables = [result.segments]
    if args.anchors:
        tables.append(result.anchors)
    if args.sentences:
        tables.append(result.sentences)
    signature = dict(result.signature, input=str(source))
    sig_json = json.dumps(signature, sort_keys=True)
    files = [(df, t.path) for df, t in zip(tables, targets) if t.path is not None]
    write_tables_atomic(files, metadata={SIGNATURE_KEY: sig_json},
                        sidecar=json.dumps(signature, sort_keys=True, indent=2))
    to_stdout = [(df, t) for df, t in zip(tables, targets) if t.path is None]
    for df, t in to_stdout:
        if not _write_stdout(lambda fh, df=df, t=t: write_text_table(df, t.format, fh)):
            return 0
    names = [str(t.path) if t.path is not None else "<stdout>" for t in targets]
    summary = result.summary(by=by)
    if args.format == "json":
        text = json.dumps({"summary": summary.to_dicts(), "summary_by": by, "outputs": names,
                           "signature": signature}, indent=2)
    else:
        text = (_format_summary(summary, by) +
                f"\n\nwrote {', '.join(names)}  "
                f"({result.segments.height} segments, {result.anchors.height} anchors; distance={signature['distance']}, "
                f"pipeline {signature['pipeline_name']} {signature['pipeline_version']}, rules {signature['rules']})")
    if to_stdout:  # the table owns stdout: the summary goes to stderr
        print(text, file=sys.stderr)
    else:
        _write_stdout(lambda fh: fh.write((text + "\n").encode()))
    return 0


def _write_stdout(write) -> bool:  # type: ignore[no-untyped-def]
    """Run ``write(binary stdout)``; False if the reader went away (``| head``): not an error."""
    import errno
    import os
    import sys

    try:
        write(sys.stdout.buffer)
        sys.stdout.flush()
        return True
    except OSError as exc:
        # BrokenPipeError from Python; polars' writers raise a plain OSError "Broken pipe (os error 32)"
        if not (isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE or "os error 32" in str(exc)):
            raise
        # silence the interpreter's own flush at exit too
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return False


def _format_summary(summary, by: str = "domain") -> str:  # type: ignore[no-untyped-def]
    groups = [str(g) for g in summary["group"].to_list()]
    w = max([len(by), *map(len, groups)]) + 2
    header = f"{by:<{w}}{'docs':>6}{'segments':>10}{'mean':>9}{'median':>8}{'p90':>8}{'max':>6}{'zero%':>8}"
    lines = [f"DDP per {by} (sentences)", header, "-" * len(header)]
    for r in summary.iter_rows(named=True):  # one row per group
        lines.append(
            f"{str(r['group']):<{w}}{r['documents']:>6}{r['segments']:>10}{r['mean_ddp']:>9.1f}{r['median_ddp']:>8.1f}"
            f"{r['p90_ddp']:>8.1f}{r['max_ddp']:>6}{100 * r['zero_ddp_share']:>7.1f}%"
        )
    return "\n".join(lines)
