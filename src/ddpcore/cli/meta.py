"""``ddp meta``: metric-human agreement by DDP bin (issue 22): segment-level Pearson, Kendall tau-b and the
tie-calibrated acc_eq (no grouping and averaged by item), system-level pairwise accuracy and SPA, with
document-bootstrap CIs, a document-swap permutation test between metrics and a bin-vs-first-bin test.

Only argparse is imported at module level (``ddp --help`` stays fast); the handler calls
:func:`ddpcore.stats.meta.meta_evaluate`.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from ._common import RESULT_EXTENSIONS, HelpFormatter, add_budget, probe_folder, resample_options, stderr_line
from ._scores import add_score_reader

FORMATS = ("json", "tsv", "markdown", "latex")
#: the extensions of -o: the natural one of each format, as every result-printing command (cli._common)
_EXT = {ext: fmt for ext, fmt in RESULT_EXTENSIONS.items() if fmt in FORMATS}

FAIL_ON_HELP = (
    "CI gate, repeatable: METRIC:STAT:DDP exits 1 when, in a bin whose lower edge is >= DDP, METRIC's STAT is "
    "significantly below its value in the first bin (bootstrap test b, Holm across metrics, --alpha). METRIC is a "
    "metric column or '*' (every metric); STAT one of pearson.none, tau_b.none, pearson.item, tau_b.item, "
    "acc_eq.item, pairwise_accuracy.sys. Example: --fail-on 'XCOMET:acc_eq.item:15' = \"XCOMET's agreement at "
    "DDP >= 15 is significantly below its agreement at DDP 0\"")


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _cells_or_auto(text: str) -> int | None:
    """``--ci-max-points``: a number of cells (>= 0) or ``auto`` (None)."""
    if text.strip().lower() == "auto":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of cells or 'auto', got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of cells >= 0 or 'auto', got {text!r}")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "meta", formatter_class=HelpFormatter,
        help="does the metric agree with humans at high DDP? (correlations and accuracy per DDP bin, with tests)",
        description=(
            "Join the DDP profile to a score table (one row per document, segment and system, a human score column "
            "and metric columns) and report per DDP bin and overall, for each metric: segment-level Pearson, Kendall "
            "tau-b and the tie-calibrated pairwise accuracy acc_eq (Deutsch et al. 2023), each over all cells (.none) "
            "and averaged over segments (.item, as the WMT23 metrics task); system-level pairwise accuracy and soft "
            "pairwise accuracy (SPA); document-bootstrap 95% CIs. Tests: metric A vs B within a bin (PERM-BOTH "
            "permutation, swapping whole documents; Holm across metric pairs) and each bin vs the first bin "
            "(bootstrap; Holm across metrics). Missing human scores are counted and left out, never read as 0; a "
            "statistic that cannot be computed is marked undefined with its reason. Exit codes: 0 ok, 1 a --fail-on "
            "gate failed, 2 usage, 3 bad data. See docs/meta.md."))
    p.add_argument("profile", metavar="DDP", help="`ddp profile` segment table (.parquet, or a text format)")
    p.add_argument("scores", metavar="SCORES",
                   help="score table (.parquet, .csv, .tsv, .jsonl, .json; .gz): one row per (document, segment, "
                        "system) with the human score and metric columns (or the long form, --metric-name-col)")
    add_score_reader(p, "SCORES")
    c = p.add_argument_group("columns")
    c.add_argument("--human-col", required=True, metavar="NAME",
                   help="human score column (e.g. mqm); in the long form the metric name of the human rows")
    c.add_argument("--score-col", action="append", default=None, metavar="NAME[,NAME]",
                   help="metric score column(s), repeatable or a comma list (default: every other numeric column); "
                        "with --metric-name-col (long form) the one value column (default: score)")
    c.add_argument("--document-col", default=None, metavar="NAME",
                   help="document id column of SCORES (default: the profile's, as its signature records; else "
                        "document_id)")
    c.add_argument("--segment-col", default=None, metavar="NAME",
                   help="segment id column of SCORES (default: the profile's, as its signature records; else "
                        "segment_id)")
    c.add_argument("--system-col", default="system", metavar="NAME", help="system column of SCORES")
    c.add_argument("--metric-name-col", default=None, metavar="NAME",
                   help="long form: SCORES has one row per (document, segment, system, metric) with the metric's "
                        "name in this column and its value in --score-col")
    c.add_argument("--ddp-col", default="ddp", metavar="NAME", help="the profile's DDP column (e.g. ddp_certified)")
    c.add_argument("--bins", default="0,1,5,15,50,inf", metavar="E,E,...",
                   help="increasing DDP bin edges in sentences; bins are [E_i, E_i+1)")
    c.add_argument("--system-scores", choices=("cells", "files"), default="cells",
                   help="system scores of overall's pairwise_accuracy.sys: the mean over the scored cells (cells), "
                        "or with --reader mtme the test set's .sys.score files, as mt-metrics-eval (files; the "
                        "bins keep cell means)")
    c.add_argument("--strict-join", action="store_true",
                   help="any score row without a profile segment is an error (exit 3); without it such rows are "
                        "counted on stderr and in the output's warnings")
    t = p.add_argument_group("resampling and tests")
    t.add_argument("--n-boot", type=int, default=1000, metavar="B",
                   help="document-bootstrap replicates of the CIs and of the bin-vs-first test (0 = none)")
    t.add_argument("--n-perm", type=int, default=10_000, metavar="T",
                   help="document-swap trials of the metric-vs-metric test (0 = no test)")
    t.add_argument("--spa-perm", type=int, default=1000, metavar="T",
                   help="segment-swap trials of each SPA p-value (Thompson et al. 2024 use 1000)")
    t.add_argument("--spa-ci-perm", type=int, default=20, metavar="T",
                   help="trials of the SPA p-values inside each bootstrap replicate: the first T of the point "
                        "value's masks, held fixed (0 = no SPA interval)")
    t.add_argument("--pairs", choices=("all", "none"), default="all",
                   help="metric pairs of the metric-vs-metric test")
    t.add_argument("--alpha", type=float, default=0.05, metavar="P", help="significance level after Holm")
    t.add_argument("--max-pairs", type=int, default=20_000_000, metavar="N",
                   help="largest number of cell pairs over which acc_eq.none's tie threshold is calibrated pair by "
                        "pair in one bin (above: on --tie-sample seeded pairs)")
    t.add_argument("--tie-sample", type=int, default=100_000, metavar="N",
                   help="in a bin of more than --max-pairs cell pairs, calibrate acc_eq.none's tie threshold on N "
                        "pairs drawn with --seed (mt-metrics-eval's sample_rate; a bin of at most N pairs uses every "
                        "pair); the accuracy at that threshold is exact over every pair, and said in the warnings "
                        "(0 = not computed there)")
    t.add_argument("--ci-max-points", type=_cells_or_auto, default=None, metavar="N|auto",
                   help="largest bin (cells) whose tau_b.none and acc_eq.none are bootstrapped (above: no interval, "
                        "with the reason). auto (default): for tau_b.none 500,000 when the human or the metric takes "
                        "at most 16,384 distinct values in the bin (human scores on levels: MQM, ESA, DA; 0.4 s per "
                        "metric for 400,000 cells x 1,000 replicates on 2 threads), else 10,000 (both finer: ~12x "
                        "slower per cell); for acc_eq.none 500,000 when the human takes at most 16,384 distinct "
                        "values (about as much again, almost nothing where it rides on tau_b.none's walk: a "
                        "continuous metric with few cells within its tie threshold), else 50,000")
    t.add_argument("--seed", type=int, default=0, metavar="N",
                   help="seed of the bootstrap, permutation and SPA generators")
    t.add_argument("--threads", type=int, default=None, metavar="N",
                   help="OpenMP threads (results do not depend on it; default: $OMP_NUM_THREADS, else all cores)")
    add_budget(p)
    o = p.add_argument_group("output")
    o.add_argument("-f", "--format", dest="output_format", choices=FORMATS, default=None,
                   help="json (every figure, test and the signature), tsv (one line per bin, metric and statistic), "
                        "markdown or latex (one table per statistic) (default: json, or the -o file's extension)")
    o.add_argument("-o", "--output", default="-", metavar="PATH",
                   help="'-' = stdout; a .json, .tsv, .md or .tex file is written atomically, with the signature in "
                        "PATH.signature.json (checked before any work)")
    o.add_argument("--stat", action="append", default=None, metavar="STAT[,STAT]",
                   help="statistics shown in markdown/latex (default: all), e.g. acc_eq.item,pearson.item")
    o.add_argument("--fail-on", action="append", default=[], metavar="METRIC:STAT:DDP", help=FAIL_ON_HELP)
    p.set_defaults(func=run)


def _check_output(out: str, fmt: str | None, inputs: list[str]) -> tuple[Any, str]:
    """(path or None, format): the -o file checked before any work (folder exists, is writable and takes a
    new file, not an input, not a folder: the checks of every output, :func:`ddpcore.io.outputs.check_outputs`);
    the extension gives the format unless -f names it (they must agree: D880, as for every result file; an unknown extension is D101)."""
    from pathlib import Path

    from ..errors import DDPUsageError
    from ..io.outputs import check_claims, check_outputs, check_place, sidecar_path

    if out in ("-", ""):
        return None, fmt or "json"
    path = Path(out)
    ext_fmt = _EXT.get(path.suffix.lower())
    if ext_fmt is None:
        raise DDPUsageError(f"-o {out}: unknown extension '{path.suffix or '(none)'}'; use .json, .tsv, .md or .tex, "
                            "or -o - for stdout", code="D101")
    if fmt is not None and fmt != ext_fmt:
        raise DDPUsageError(f"-o {out}: a {path.suffix} file cannot hold -f {fmt}; use -f {ext_fmt} or another "
                            "extension, or -o - (stdout) for that format", code="D880")
    if ext_fmt in ("json", "tsv"):
        (target,) = check_outputs([("-o/--output", out)], inputs=inputs, formats=("json", "tsv"), sidecars=True)
    else:  # .md / .tex: the same checks (check_outputs knows table formats only)
        sidecar = ("the signature sidecar of -o/--output", sidecar_path(path))
        check_place("-o/--output", path)
        check_place(*sidecar)
        check_claims([("-o/--output", path), sidecar], inputs)
    probe_folder("-o/--output", path)
    return path, ext_fmt


def _profile_keys(args: argparse.Namespace) -> None:
    """``--document-col``/``--segment-col`` not given: the profile's own id columns, as its signature records
    them (as ``ddp stratify`` joins), for a score table (the readers write ``document_id``/``segment_id``); a
    name other than the default is said on stderr (the result's signature records the columns)."""
    from ..io.profiles import profile_columns, read_signature

    if args.document_col is not None and args.segment_col is not None:
        return
    rec = profile_columns(read_signature(args.profile)) if args.reader == "table" else \
        profile_columns({})
    taken, other = [], False
    for flag, attr, name, default in (("--document-col", "document_col", rec.document, "document_id"),
                                      ("--segment-col", "segment_col", rec.segment, "segment_id")):
        if getattr(args, attr) is None:
            setattr(args, attr, name)
            taken.append(f"{flag} {name}")
            other = other or name != default
    if other:
        stderr_line(f"ddp meta: note: {', '.join(taken)}: the profile's id columns, as the signature of {args.profile} "
                    "records them; give --document-col/--segment-col to join on other columns of SCORES")


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from ..io.profiles import scan_profile
    from ..io.scores import scan_scores
    from ..stats.bins import parse_bins
    from ..stats.meta import STATS, MetaColumns, MetaTests, check_roles, dumps, meta_evaluate, parse_fail_on, \
        to_latex, to_markdown, to_tsv

    edges = parse_bins(args.bins)
    path, fmt = _check_output(args.output, args.output_format, [args.profile, args.scores])
    tests = MetaTests(n_perm=args.n_perm, spa_perm=args.spa_perm, alpha=args.alpha, pairs=args.pairs,
                      max_pairs=args.max_pairs, tie_sample=args.tie_sample,
                      ci_max_points=args.ci_max_points, spa_ci_perm=args.spa_ci_perm)
    stats = [s for v in (args.stat or []) for s in _csv(v)] or list(STATS)
    bad = [s for s in stats if s not in STATS]
    if bad:
        from ..errors import DDPUsageError

        raise DDPUsageError(f"--stat {bad[0]}: not a statistic; choose from {', '.join(STATS)}", code="D806")
    metric_cols = [m for v in (args.score_col or []) for m in _csv(v)] or None
    long_form = args.metric_name_col is not None
    for spec in args.fail_on:  # grammar checked before any work (metric names after the join)
        parse_fail_on(spec, (None if long_form else metric_cols) or [spec.rsplit(":", 2)[0]])
    _profile_keys(args)
    columns = MetaColumns(document=args.document_col, segment=args.segment_col, system=args.system_col,
                          metric_name=args.metric_name_col)
    check_roles(dataclasses.replace(columns, human=args.human_col), metric_cols)  # D311, before anything is read
    opts = resample_options(args)
    prof = scan_profile(args.profile, ddp_col=args.ddp_col)
    if args.reader == "table":
        table = scan_scores(args.scores)
    else:  # a reader's wide table: one column per score (mtme: the human NAME and METRIC-REF columns)
        from ..io.scores import read_score_input

        table = read_score_input(args.scores, args.reader, conditions=[args.human_col, *(metric_cols or [])],
                                 waves=args.waves, lps=args.lp, layout="wide",
                                 metrics=metric_cols if metric_cols else None,
                                 warn=lambda m: stderr_line(f"ddp meta: note: {m}"))
        if metric_cols is None:
            keys = {args.document_col, args.segment_col, args.system_col, args.human_col, "line_id", "domain"}
            metric_cols = [c for c, t in table.schema.items() if c not in keys and t.is_numeric()]
    sys_scores = None
    if args.system_scores == "files":
        if args.reader != "mtme":
            from ..errors import DDPUsageError

            raise DDPUsageError(f"--system-scores files reads an mt-metrics-eval tree's .sys.score files: give "
                                f"--reader mtme (got --reader {args.reader}), or use --system-scores cells", code="D883")
        from ..io.mtme import read_mtme_sys_table
        from ..stats.meta import SystemScores

        sys_scores = SystemScores(*read_mtme_sys_table(args.scores, [args.human_col, *(metric_cols or [])],
                                                       lp=args.lp[0] if args.lp else None))
    res = meta_evaluate(prof.frame, table, human_col=args.human_col, score_col=metric_cols,
                        columns=columns,
                        bins=edges, ddp_col=args.ddp_col, strict_join=args.strict_join,
                        profile_signature=prof.signature, profile_name=str(args.profile),
                        scores_name=str(args.scores), options=opts, tests=tests, system_scores=sys_scores)
    passed, fails, notes = res.gate(args.fail_on) if args.fail_on else (True, [], [])
    if args.fail_on:
        res.signature["fail_on"] = list(args.fail_on)
        res.signature["gate"] = {"passed": passed, "failures": fails, "notes": notes}
    for w in res.warnings:
        stderr_line(f"ddp meta: warning: {w}")
    text = {"json": lambda: dumps(res), "tsv": lambda: to_tsv(res), "markdown": lambda: to_markdown(res, stats),
            "latex": lambda: to_latex(res, stats)}[fmt]()
    if path is None:
        sys.stdout.write(text)
    else:
        import contextlib

        from ..io.outputs import sidecar_path
        from ..io.sidecars import sidecar_text
        from ..io.tables import atomic_path
        from ..signature import json_safe

        with contextlib.ExitStack() as stack:
            tmp = stack.enter_context(atomic_path(path))
            tmp.write_text(text, encoding="utf-8")  # then its sidecar: the signature and the stamp of the file
            stack.enter_context(atomic_path(sidecar_path(path))).write_text(
                sidecar_text(json_safe(res.signature), tmp), encoding="utf-8")
        stderr_line(f"ddp meta: wrote {path} and {sidecar_path(path)}")
    j = res.signature["join"]
    print(f"ddp meta: join: {j['score_rows']} score rows, {j['unmatched_score_rows']} without a profile segment, "
          f"{j['human_missing']} without a human score; {j['cells_used']} cells of {j['systems']} systems and "
          f"{len(res.metrics)} metrics used", file=sys.stderr)
    for n in notes:
        stderr_line(f"ddp meta: --fail-on: {n}")
    if not passed:
        items = [f"{f['metric']} {f['stat']} in {f['bin']} ({f['diff']:+.3f} vs {f['first_bin']}, "
                 f"p_holm={f['p_below_holm']:.3g})" for f in fails[:10]]
        stderr_line(f"ddp meta: --fail-on: {len(fails)} significant drop(s) below the first bin: {'; '.join(items)}"
                    + (f" and {len(fails) - 10} more" if len(fails) > 10 else ""))
        return 1
    return 0
