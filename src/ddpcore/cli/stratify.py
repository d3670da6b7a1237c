"""``ddp stratify``: per-segment scores stratified by DDP (Spearman, binned means with document-bootstrap
CIs, LOWESS), per system/metric/domain group."""
from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from ._common import HelpFormatter, add_deprecated_alias, stderr_line
from ._scores import WIDE_READERS, add_score_reader, score_input


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "stratify", help="do scores change with DDP? (Spearman, binned means with CIs, LOWESS)",
        description=(
            "Join the DDP profile to per-segment scores (automatic metrics or human scores) and report per group "
            "(--by): n, Spearman rho between DDP and the score with its p, per DDP bin the mean score with a "
            "document-bootstrap 95% CI, and a LOWESS curve (statsmodels defaults). Inner join on the profile's "
            "document and segment columns (--document-col/--segment-col name the scores' columns). When more than --max-unjoined (1%) of the "
            "score rows or of the profile segments do not join, or of the scores are null, it stops with an error "
            "naming the first unmatched keys (--allow-partial-join: go on with the matched rows); any row left out "
            "is a warning on stderr and is counted in signature.join. Exit codes: 0 ok, 2 usage, 3 bad data."),
        formatter_class=HelpFormatter)
    p.add_argument("profile", metavar="DDP", help="`ddp profile` segment table (.parquet, or a text format)")
    p.add_argument("scores", metavar="SCORES", help="per-segment scores (.parquet, .csv, .tsv, .jsonl, .json; .gz)")
    p.add_argument("--score-col", required=True, type=_csv, metavar="C[,C...]",
                   help="score column; several columns are stacked into a 'metric' column usable in --by (a "
                        "long table with its own 'metric' column: give its one score column and --by system,metric)")
    p.add_argument("--by", type=_csv, default=[], metavar="COLS",
                   help="group columns of SCORES (or of the profile, e.g. domain), e.g. system,metric,domain")
    p.add_argument("--ddp-col", default="ddp", metavar="NAME",
                   help="the profile's DDP column to stratify by (e.g. ddp_certified: only the anchors whose link "
                        "is certain enough not to over-estimate); recorded in the signature")
    p.add_argument("--bins", default="0,1,5,15,50,inf", metavar="E,E,...",
                   help="increasing DDP bin edges in sentences; bins are [E_i, E_i+1)")
    add_score_reader(p, "SCORES")
    j = p.add_argument_group("join (the profile's document and segment columns = the scores' columns)")
    joins = "(default: the profile's name); PROFILE_COL=SCORES_COL joins another profile column"
    j.add_argument("--document-col", default=None, metavar="NAME",
                   help=f"the scores' document id column, joined to the profile's document column {joins}")
    j.add_argument("--segment-col", default=None, metavar="NAME",
                   help=f"the scores' segment id column, joined to the profile's segment column {joins} (e.g. "
                        "line_id=line_id: the 0-based line of --reader wmt24|lines)")
    add_deprecated_alias(j, "--on", "--document-col/--segment-col", "on", type=_csv, metavar="COLS")
    p.add_argument("--max-unjoined", type=float, default=0.01, metavar="SHARE",
                   help="largest share of the score rows without a profile segment, of the profile segments without "
                        "a score row, and of null or non-finite scores accepted (default 0.01 = 1%%); above it: "
                        "error D710/D711 (exit 3) unless --allow-partial-join")
    p.add_argument("--allow-partial-join", action="store_true",
                   help="stratify the matched rows even when more than --max-unjoined of a side does not join "
                        "(the rows left out are still a warning and are counted in signature.join)")
    p.add_argument("--strict-join", action="store_true",
                   help="any score row without a profile segment, or a null score, is an error (exit 3)")
    p.add_argument("--gap", type=_csv, default=None, metavar="A,B",
                   help="also stratify the score difference A - B between two values of --gap-col (paired per segment)")
    p.add_argument("--gap-col", default=None, metavar="COL", help="column holding A and B (default: first --by column)")
    p.add_argument("--n-boot", type=int, default=10_000, metavar="B", help="document-bootstrap replicates (0 = no CI)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="bootstrap and LOWESS-subsample seed (default: 0)")
    p.add_argument("--lowess-max-points", type=int, default=20_000, metavar="N",
                   help="fit LOWESS on a seeded subsample of N points in larger groups")
    p.add_argument("--threads", type=int, default=None, metavar="N", help="bootstrap threads (default: all cores)")
    p.add_argument("-f", "--format", dest="output_format", choices=("json", "tsv", "text"), default=None,
                   help="output format (default: json, or the -o file's extension: .json, .tsv, .txt for text)")
    p.add_argument("-o", "--output", default=None, metavar="PATH",
                   help="write the result to PATH (.json, .tsv or .txt for -f text, not compressed; the signature also goes to "
                        "PATH.signature.json) instead of stdout; an -f other than the extension's format, or a .gz, "
                        "is error D880 (checked before any work)")
    p.set_defaults(func=run)


def join_keys(document_col: str | None, segment_col: str | None, on: Sequence[str] | None,
              profile_document: str, profile_segment: str) -> list[str] | None:
    """The ``on=`` of :func:`ddpcore.stats.stratify.stratify` from ``--document-col/--segment-col``
    (each the scores' column name, or ``PROFILE_COL=SCORES_COL``) or the deprecated ``--on``;
    ``None`` when none is given (the profile's names on both sides)."""
    if document_col is None and segment_col is None:
        return list(on) if on else None
    if on:
        from ..errors import DDPUsageError

        raise DDPUsageError("--on is the old spelling of --document-col/--segment-col; give one or the other",
                            code="D881")

    def pair(given: str | None, profile_col: str) -> str:
        if given is None:
            return f"{profile_col}={profile_col}"
        return given if "=" in given else f"{profile_col}={given}"

    return [pair(document_col, profile_document), pair(segment_col, profile_segment)]


def stratify_files(profile: str | os.PathLike[str], scores: str | os.PathLike[str] | Any,
                   score_col: str | Sequence[str], *, ddp_col: str = "ddp", document_col: str | None = None,
                   segment_col: str | None = None, **options: Any) -> dict[str, Any]:
    """:func:`ddpcore.stats.stratify.stratify` on files, as ``ddp stratify`` runs it: the options are
    checked first (:func:`~ddpcore.stats.stratify.check_options`), then the profile is opened with
    :func:`ddpcore.io.profiles.scan_profile` and the scores with :func:`ddpcore.io.scores.scan_scores`
    (``scores`` may also be a polars frame: messages name it as a score reader named it,
    :func:`ddpcore.io.tables.frame_name`). ``document_col``/``segment_col``: the scores' id columns
    (see :func:`join_keys`); ``options``: the keywords of ``stratify``."""
    from ..io.profiles import scan_profile
    from ..io.scores import scan_scores
    from ..io.tables import frame_name
    from ..stats.stratify import check_options, comma_list, stratify

    options.update({k: comma_list(options[k]) for k in ("gap", "on") if k in options})  # a str: as the flags
    check_options(**{k: options[k] for k in ("by", "bins", "gap", "gap_col", "n_boot", "seed", "lowess_max_points",
                                             "max_unjoined") if k in options})
    prof = scan_profile(profile, ddp_col=ddp_col)
    options["on"] = join_keys(document_col, segment_col, options.get("on"), prof.cols.document, prof.cols.segment)
    is_path = isinstance(scores, (str, os.PathLike))
    frame = scan_scores(scores) if is_path else scores
    return stratify(prof.frame, frame, score_col, profile_signature=prof.signature, profile_name=str(profile),
                    scores_name=str(scores) if is_path else frame_name(scores), ddp_col=ddp_col, **options)


def run(args: argparse.Namespace) -> int:
    import sys

    from ..stats.bins import parse_bins
    from ..stats.stratify import dumps, to_text, to_tsv
    from ._common import check_result_output

    # before any work: -o's folder and extension (.json/.tsv; a .gz or an -f that disagrees: D880, as `ddp stats`);
    # settles args.output_format (json on stdout when neither -f nor -o gives one)
    target = check_result_output(args, [args.profile, args.scores], formats=("json", "tsv", "text"))
    edges = parse_bins(args.bins)
    if args.reader in WIDE_READERS:  # one column per score: --score-col names them (mtme: METRIC-REF, mqm)
        wanted = [args.score_col] if isinstance(args.score_col, str) else list(args.score_col)
        scores = score_input(args, args.scores, wanted, layout="wide")
    else:
        scores = score_input(args, args.scores)
    res = stratify_files(args.profile, scores, args.score_col, ddp_col=args.ddp_col, by=args.by, bins=edges,
                         document_col=args.document_col, segment_col=args.segment_col, on=args.on, gap=args.gap,
                         gap_col=args.gap_col, n_boot=args.n_boot, seed=args.seed,
                         strict_join=args.strict_join, lowess_max_points=args.lowess_max_points,
                         threads=args.threads, max_unjoined=args.max_unjoined,
                         allow_partial_join=args.allow_partial_join)
    fmt = args.output_format
    text = dumps(res) if fmt == "json" else to_tsv(res) if fmt == "tsv" else to_text(res)
    if fmt == "tsv":  # the signature (the DDP column binned, --by, the bins...) as a last comment line, as `ddp meta`
        import json

        from ..signature import json_safe

        sig = {k: v for k, v in res["signature"].items() if k != "profile_signature"}
        text += "# signature: " + json.dumps(json_safe(sig), sort_keys=True, allow_nan=False) + "\n"
    j = res["signature"]["join"]
    note = (f"ddp stratify: join: {j['score_rows']} score rows, {j['unmatched_score_rows']} without a profile "
            f"segment, {j['null_scores']} null scores; {j['unmatched_profile_segments']} of "
            f"{j['profile_segments']} profile segments without a score row")
    for w in res["signature"].get("warnings", []):
        stderr_line(f"ddp stratify: warning: {w}")
    if target is None:
        sys.stdout.write(text)
    else:
        import contextlib

        from ..io.sidecars import sidecar_text
        from ..io.tables import atomic_path

        with contextlib.ExitStack() as stack:
            tmp = stack.enter_context(atomic_path(target.path))
            tmp.write_text(text, encoding="utf-8")
            if target.sidecar is not None:  # the signature and the stamp of the finished file
                stack.enter_context(atomic_path(target.sidecar)).write_text(
                    sidecar_text(res["signature"], tmp, default=str), encoding="utf-8")
        stderr_line(f"ddp stratify: wrote {target.path} ({len(res['groups'])} groups)")
    if fmt != "text" or target is not None:
        print(note, file=sys.stderr)
    return 0
