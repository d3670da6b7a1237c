"""``ddp sample``: a DDP-stratified sample of a test set, written verbatim in the input's format."""
from __future__ import annotations

import argparse

from ._common import HelpFormatter, add_deprecated_alias, stderr_line
from .select import (add_common, check_target, cols_from, emit_summary, inherited_reader, where_written,
                     writes_signature, wrote_line)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sample", help="a DDP-stratified sample of a test set (verbatim, in the input's format)",
        description=(
            "Draw at most N units per DDP bin (bins [low, high) in sentences): --unit document bins documents by "
            "their max DDP and keeps them whole; --unit segment keeps segments with the earlier segments their DDP "
            "reaches into. Deterministic for a seed (the same bytes twice). Writes INPUT's rows in its own format "
            "and order and reports target vs achieved counts per bin, saying which bins cannot be filled."),
        formatter_class=HelpFormatter)
    add_common(p)
    s = p.add_argument_group("sample")
    s.add_argument("--bins", default="0,1,5,15,50,inf", metavar="E,E,...",
                   help="increasing bin edges in sentences; bins are [E_i, E_i+1)")
    s.add_argument("--per-bin", type=int, required=True, metavar="N", help="units to draw per bin (at most)")
    s.add_argument("--unit", dest="by", choices=("document", "segment"), default="document",
                   help="sampling unit: whole documents (binned by their max DDP) or segments")
    add_deprecated_alias(s, "--by", "--unit", "by", choices=("document", "segment"))
    s.add_argument("--seed", type=int, default=0, metavar="N", help="random seed (numpy PCG64)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with inherited_reader(args, "ddp sample"):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from ..curate.sample import format_report, parse_bins, sample
    from ..curate.select import format_summary
    from ..errors import DDPUsageError

    parse_bins(args.bins)
    if args.per_bin < 1:
        raise DDPUsageError(f"--per-bin must be at least 1, got {args.per_bin}", code="D641")
    target = check_target(args)
    res = sample(args.input, args.profile, args.bins, args.per_bin, by=args.by, seed=args.seed, target=target,
                 cols=cols_from(args), reader=args.reader, docs=args.docs, outputs=args.outputs,
                 outputs_to=args.outputs_to, ddp_col=args.ddp_col)
    note = thin_note(res, args.by, signature=writes_signature(args))
    if note:  # a thin sample is said on stderr too, not only in the summary (the sidecar has "filled": false)
        stderr_line(f"ddp sample: note: {note}")
    where = where_written(target)
    text = (format_report(res, args.by) + "\n" + format_summary("ddp sample", res.summary)
            + "\n" + wrote_line(where, res.summary["after"]["segments"], res.written))
    emit_summary(args, "ddp sample", text, {"bins": res.bins, "outside_bins": res.outside,
                                            "context_rows": res.context_rows, "summary": res.summary,
                                            "output": where, "written": [str(w) for w in res.written],
                                            "signature": res.signature})
    return 0


def thin_note(res, by: str, signature: bool = True) -> str:  # type: ignore[no-untyped-def]
    """One line naming the bins that cannot be filled and the units outside every bin; ``""`` when the
    sample is full (every bin has its N units). ``signature``: whether the run writes one (not with -o - and a
    text summary; :func:`ddpcore.curate.select.recorded_note`)."""
    import math

    from ..curate.select import recorded_note

    unit = "documents" if by == "document" else "segments"
    thin = [r for r in res.bins if not r["filled"]]
    filled = '"filled": false'
    parts = []
    if thin:
        shown = ", ".join(f"[{r['low']:g}, {'inf' if math.isinf(r['high']) else format(r['high'], 'g')}) "
                          f"{r['achieved']} of {r['target']}" for r in thin)
        parts.append(f"{len(thin)} of {len(res.bins)} bins cannot be filled (only the {unit} they have): {shown}; "
                     f"the sample is thinner there ({recorded_note(filled, signature)})")
    if res.outside:
        parts.append(f"{res.outside} {unit} lie outside every bin and are never sampled "
                     f"({recorded_note('outside_bins', signature)})")
    return "; ".join(parts)
