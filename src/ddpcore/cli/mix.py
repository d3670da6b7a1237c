"""``ddp mix``: build MIX documents (the counterfactual condition of the ESA blindness study).

The handler calls :func:`ddpcore.curate.mix.build_mix` and writes the MIX table (``-o``) and the
assignment table (``--assignment``) atomically, with the signature (Parquet schema metadata
``ddpcore.signature`` or a ``.signature.json`` sidecar). stdout gets a JSON (or text) summary;
MIX documents shorter than the pool are reported (stderr warning; ``--fail-on infeasible``
makes them exit 1).

Only argparse is imported at module level (``ddp --help`` stays fast).
"""
from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any
from ..schema import SIGNATURE_KEY
from ._common import stderr_line



def _csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def register(sub: argparse._SubParsersAction) -> None:
    from .stats import _HelpFormatter

    p = sub.add_parser(
        "mix", formatter_class=_HelpFormatter,
        help="build MIX documents (each segment from another system) for a blindness test",
        description=(
            "For every document and every pooled system, write one MIX document whose nominal system is that "
            "system: the source segments keep their order and each position takes one pooled system's "
            "translation. When the document has at least as many segments as the pool has systems, every pooled "
            "system contributes at least one segment and the nominal system exactly one; shorter documents get "
            "distinct systems other than the nominal one and are reported. Same seed -> byte-identical output. "
            "Exit codes: 0 ok, 1 --fail-on gate failed, 2 usage, 3 bad data. See docs/mix-blindness.md."))
    p.add_argument("table", nargs="?", default=None, metavar="OUTPUTS",
                   help="long table of system outputs (document_id, segment_id, system, text; .csv .tsv .jsonl "
                        ".json .parquet); not used with --reader wmt24")
    r = p.add_argument_group("input")
    r.add_argument("--reader", choices=("table", "wmt24"), default="table",
                   help="OUTPUTS as a long table, or the WMT24 layout (--docs and --outputs)")
    r.add_argument("--docs", default=None, metavar="DOCS",
                   help="--reader wmt24: 'domain<TAB>document_id' per line; segment_id is the 0-based position "
                        "within the document (as ddp profile --reader wmt24), line_id the 0-based line")
    r.add_argument("--outputs", default=None, metavar="DIR",
                   help="--reader wmt24: folder of <system>.txt aligned with DOCS, or a tar archive of "
                        "<lp>/<system>.txt")
    r.add_argument("--lp", default=None, metavar="LP", help="--reader wmt24: language pair inside the archive")
    c = p.add_argument_group("columns")
    c.add_argument("--document-col", dest="document", default="document_id", metavar="NAME", help="document id column")
    c.add_argument("--segment-col", dest="segment", default="segment_id", metavar="NAME",
                   help="segment id column (integer ids sort numerically, others keep input order)")
    c.add_argument("--system-col", dest="system", default="system", metavar="NAME", help="system column")
    c.add_argument("--text-col", dest="text", default="text", metavar="NAME", help="translation column")
    m = p.add_argument_group("construction")
    m.add_argument("--seed", type=int, default=0, metavar="N",
                   help="seed of the assignment generator (numpy PCG64); recorded in the signature")
    m.add_argument("--pool", type=_csv_list, default=None, metavar="A,B,...",
                   help="pooled systems (default: every system in OUTPUTS)")
    m.add_argument("--exclude-system", action="append", default=[], metavar="NAME",
                   help="leave a system out of the pool (repeatable), e.g. refA; it must be in OUTPUTS (D704)")
    m.add_argument("--forbid-adjacent-repeat", action="store_true",
                   help="no two adjacent segments of a MIX document from the same system (pool of 3 or more)")
    o = p.add_argument_group("output")
    o.add_argument("-o", "--output", required=True, metavar="MIX",
                   help="MIX table: document, segment, system (nominal), text, source_system")
    o.add_argument("--assignment", default=None, metavar="ASSIGN",
                   help="assignment table (which system each MIX segment came from): document, system (nominal), "
                        "segment, source_system, position, feasible (default: MIX_STEM.assignment.EXT beside -o, "
                        "e.g. mix.parquet -> mix.assignment.parquet)")
    o.add_argument("-f", "--format", dest="output_format", choices=("json", "text"), default="json",
                   help="summary on stdout")
    o.add_argument("--fail-on", choices=("infeasible",), default=None,
                   help="exit 1 when a document is shorter than the pool (coverage constraint infeasible)")
    p.set_defaults(func=run_mix)


def default_assignment(output: str) -> Any:
    """``--assignment`` when not given: ``<stem>.assignment<suffixes>`` beside ``-o`` (``mix.csv.gz`` ->
    ``mix.assignment.csv.gz``)."""
    from pathlib import Path

    out = Path(output)
    suffixes = "".join(out.suffixes[-2:]) if out.suffix.lower() == ".gz" else out.suffix
    stem = out.name[: len(out.name) - len(suffixes)] if suffixes else out.name
    return out.with_name(f"{stem}.assignment{suffixes}")


def run_mix(args: argparse.Namespace) -> int:
    import json

    from ..errors import DDPUsageError
    from ..io.outputs import check_outputs

    if args.reader == "wmt24":
        if args.docs is None or args.outputs is None:
            raise DDPUsageError("--reader wmt24 needs --docs DOCS and --outputs DIR", code="D506")
        if args.table is not None:
            raise DDPUsageError("--reader wmt24 reads --docs and --outputs; drop the OUTPUTS argument", code="D506")
        inputs = [args.docs, args.outputs]
    else:
        if args.table is None:
            raise DDPUsageError("give OUTPUTS (a long table) or --reader wmt24 --docs DOCS --outputs DIR", code="D506")
        if args.docs or args.outputs or args.lp:
            raise DDPUsageError("--docs/--outputs/--lp apply to --reader wmt24 only", code="D506")
        inputs = [args.table]
    if args.assignment is None:
        args.assignment = str(default_assignment(args.output))
    targets = check_outputs([("-o/--output", args.output), ("--assignment", args.assignment)], inputs, sidecars=True)
    from ..io.tables import write_tables_atomic
    from ..curate.mix import build_mix
    from ..signature import json_safe

    if args.reader == "wmt24":
        from ..io.wmt_outputs import read_wmt_outputs

        source: Any = read_wmt_outputs(args.docs, args.outputs, lp=args.lp)
        # segment_id = position within the document (as ddp profile --reader wmt24), line_id = line number
        cols = dict(document="document_id", segment="segment_id", system="system", text="text",
                    carry=("line_id",), name=f"{args.outputs} (--reader wmt24, --docs {args.docs})")
    else:
        source = args.table
        cols = dict(document=args.document, segment=args.segment, system=args.system, text=args.text)
    with warnings.catch_warnings():  # the empty outputs are said below, once, as a ddp warning
        warnings.simplefilter("ignore", UserWarning)
        res = build_mix(source, seed=args.seed, pool=args.pool, exclude_systems=args.exclude_system,
                        forbid_adjacent_repeat=args.forbid_adjacent_repeat, **cols)
    if res.empty_note():
        stderr_line(f"ddp mix: warning: {res.empty_note()}")
    sig = dict(res.signature, reader=args.reader, lp=args.lp)
    sig_json = json.dumps(sig, sort_keys=True)
    write_tables_atomic([(res.mix, targets[0].path), (res.assignment, targets[1].path)],
                        metadata={SIGNATURE_KEY: sig_json}, sidecar=sig_json)
    summary = res.summary()
    summary["signature"] = sig
    summary["outputs"] = {"mix": str(targets[0].path), "assignment": str(targets[1].path)}
    failed = bool(args.fail_on == "infeasible" and res.infeasible.height)
    if args.fail_on:
        summary["fail_on"] = args.fail_on
        summary["passed"] = not failed
    if args.output_format == "json":
        out = json.dumps(json_safe(summary), indent=2, allow_nan=False)
    else:
        from ..io.tables import one_line, text_cell

        out = (f"MIX: {res.n_documents} documents x {len(res.pool)} pooled systems = "
               f"{res.n_documents * len(res.pool)} MIX documents ({res.mix.height} rows), seed {res.seed}"
               f"{', no adjacent repeats' if res.forbid_adjacent_repeat else ''}\n"
               f"pool: {', '.join(map(text_cell, res.pool))}\n"
               f"infeasible (shorter than the pool): {res.infeasible.height} MIX documents in "
               f"{len(summary['infeasible_documents'])} documents\n"
               f"wrote {one_line(targets[0].path)} and {one_line(targets[1].path)}\nsignature: {sig_json}")
        if args.fail_on:  # the gate's verdict, as -f json's passed
            out += f"\ngate --fail-on {args.fail_on}: {'FAILED' if failed else 'passed'}"
    print(out)
    sys.stdout.flush()
    if res.infeasible.height:
        docs = summary["infeasible_documents"]
        shown = ", ".join(str(d) for d in docs[:5]) + (f" and {len(docs) - 5} more" if len(docs) > 5 else "")
        what = (f"{len(docs)} document(s) have fewer segments than the {len(res.pool)} pooled systems ({shown}): "
                "their MIX documents use distinct systems other than the nominal one, not every pooled system")
        if failed:
            stderr_line(f"ddp mix: gate infeasible failed: {what}")
            return 1
        stderr_line(f"ddp mix: warning: {what}")
    return 0
