"""``ddp merge``: combine the shards of ``ddp profile --shard i/N`` into the unsharded outputs."""
from __future__ import annotations

import argparse

from ._common import HelpFormatter, stderr_line


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "merge",
        help="combine the shards of `ddp profile --shard i/N`",
        description=(
            "Combine the Parquet shards written by `ddp profile --shard I/N` (one run per shard, e.g. a Slurm job "
            "array) into the tables an unsharded run writes: segments in input order, anchors, sentences and "
            "documents (--documents: one row per document) in document order. SHARD files are told apart by their metadata (table and shard), in any order; all N "
            "shards of each table are needed, from runs with the same input (each shard records the SHA-256 of its input; shards of a changed input are refused, D176) and settings."
        ),
        formatter_class=HelpFormatter,
    )
    p.add_argument("shards", nargs="+", metavar="SHARD", help="shard files (.parquet) of any of the four tables")
    p.add_argument("-o", "--output", default=None, metavar="PATH",
                   help="merged segment table (.parquet, .csv, .tsv, .jsonl, .json; '-' = stdout as JSONL)")
    p.add_argument("--anchors", default=None, metavar="PATH", help="merged anchors table")
    p.add_argument("--sentences", default=None, metavar="PATH", help="merged sentences table")
    p.add_argument("--documents", default=None, metavar="PATH",
                   help="merged documents table (the shards of `ddp profile --shard I/N --documents PATH`; a document "
                        "lies in one shard, so its row is copied, in the document order of an unsharded run)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary line on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..engines.merge import merge_shards
    from ..errors import DDPUsageError
    from ..io.outputs import check_outputs

    options = [("-o/--output", args.output), ("--anchors", args.anchors), ("--sentences", args.sentences),
               ("--documents", args.documents)]
    if not any(path for _, path in options):
        raise DDPUsageError("give at least one output: -o PATH (segments), --anchors PATH, --sentences PATH or "
                            "--documents PATH", code="D177")
    if args.documents == "-":
        raise DDPUsageError("--documents: give a file name; only -o can write to stdout", code="D135")
    checked = {t.option: t for t in check_outputs(options, args.shards, stdout_format="jsonl", sidecars=True)}
    targets = {role: checked.get(opt)
               for role, (opt, _) in zip(("segments", "anchors", "sentences", "documents"), options)}
    def warn(message: str) -> None:
        stderr_line(f"ddp merge: warning: {message}")

    sig = merge_shards(args.shards, targets, warn=warn)
    if not args.quiet:
        names = [str(t.path) if t.path else "<stdout>" for t in targets.values() if t is not None]
        stderr_line(f"ddp merge: merged {sig['merged_shards']} shards into {', '.join(names)}")
    return 0
