"""``ddp stats``: TOST, ranking tau, system clustering and agreement over a long table.

Subcommands ``tost``, ``tau``, ``cluster``, ``alpha``. Each parses its options and calls a public
function of :mod:`ddpcore.stats` (or a reader of :mod:`ddpcore.io`); output is JSON by default
(``-f text|json|tsv``) and always carries the result's signature. ``--fail-on`` turns a
result into exit code 1 for CI gates (0 = ran and passed, 2 = usage, 3 = bad data).

Only argparse is imported at module level (``ddp --help`` stays fast).
"""
from __future__ import annotations

import argparse
import sys
from typing import Any
from ._common import (add_budget, add_deprecated_alias, add_result_output, check_result_output, fmt_number,
                      resample_options, stderr_line, write_result)

from ._scores import READERS, add_score_reader, score_input  # noqa: F401  (one reader set for every score command)


# --------------------------------------------------------------------------- parser


def _csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a default once, and only where it says something (not for on/off flags, None or [])."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if ("%(default)" in text or action.nargs == 0 or action.default in (None, argparse.SUPPRESS)
                or isinstance(action.default, bool) or action.default == []):
            return text
        return super()._get_help_string(action)


def _column(group: Any, new: str, old: str, dest: str, default: str, help: str) -> None:
    group.add_argument(new, dest=dest, default=default, metavar="NAME", help=help)
    add_deprecated_alias(group, old, new, dest, metavar="NAME")


def _add_common(p: argparse.ArgumentParser, *, annotator: bool = True) -> None:
    p.add_argument("table", metavar="TABLE",
                   help="long table (.csv, .tsv, .jsonl, .json, .parquet; .gz for text) with one row per "
                        "annotation, or a data folder with --reader")
    add_score_reader(p)
    c = p.add_argument_group("columns (long-table column names)")
    _column(c, "--document-col", "--document", "document", "document_id", "document id column")
    _column(c, "--segment-col", "--segment", "segment", "segment_id", "segment id column")
    _column(c, "--system-col", "--system", "system", "system", "system column")
    if annotator:
        _column(c, "--annotator-col", "--annotator", "annotator", "annotator",
                "annotator column (optional in the table; empty string = none)")
    _column(c, "--condition-col", "--condition", "condition", "condition", "condition column")
    _column(c, "--score-col", "--score", "score", "score", "score column")
    c.add_argument("--nan-policy", choices=("raise", "omit"), default="raise",
                   help="a missing (null/NaN) score is an error (raise) or its row is dropped (omit)")
    o = p.add_argument_group("output")
    add_result_output(o, ("json", "text", "tsv"))
    o.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")


def register(sub: argparse._SubParsersAction) -> None:
    fmt = _HelpFormatter
    stats = sub.add_parser(
        "stats",
        help="evaluation statistics: TOST, ranking tau, system clusters, agreement",
        description=(
            "Statistics of two evaluation conditions over a long table with one row per annotation "
            "(document_id, segment_id, system, annotator, condition, score). JSON output by default; every "
            "result carries its signature (ddpcore version, method, n_boot, seed). Exit codes: 0 ran and "
            "passed, 1 a --fail-on gate failed, 2 usage error, 3 bad data."
        ),
        formatter_class=fmt,
    )
    ssub = stats.add_subparsers(dest="stats_command", metavar="SUBCOMMAND")
    stats.set_defaults(func=lambda args: _no_subcommand(stats))

    _register_tost(ssub, fmt)
    _register_tau(ssub, fmt)
    _register_cluster(ssub, fmt)
    _register_alpha(ssub, fmt)

    # ---- compare (every system against a baseline; ddpcore.cli.stats_compare)
    from .stats_compare import register_compare

    register_compare(ssub, fmt)


def _register_tost(ssub: argparse._SubParsersAction, fmt: type) -> None:
    """``ddp stats tost``."""
    p = ssub.add_parser(
        "tost", formatter_class=fmt, help="equivalence of two conditions (two one-sided tests)",
        description=(
            "TOST equivalence test of conditions A and B: paired (default; rows sharing document, segment, "
            "system and annotator are pairs) or independent. Equivalent when the 1-2*alpha confidence "
            "interval of mean(A - B) lies inside (low, high)."))
    _add_common(p)
    p.add_argument("--a", required=True, metavar="COND", help="condition A (value of the condition column)")
    p.add_argument("--b", required=True, metavar="COND", help="condition B")
    m = p.add_mutually_exclusive_group(required=True)
    m.add_argument("--margin", type=float, metavar="EPS", help="symmetric margin: low = -EPS, high = EPS")
    m.add_argument("--bounds", type=float, nargs=2, metavar=("LOW", "HIGH"), help="asymmetric margins")
    p.add_argument("--alpha", type=float, default=0.05, metavar="P", help="level of each one-sided test")
    d = p.add_mutually_exclusive_group()
    d.add_argument("--paired", dest="paired", action="store_true", default=True,
                   help="paired design (the default)")
    d.add_argument("--independent", dest="paired", action="store_false",
                   help="independent samples instead of pairs (pooled variance; --welch for unequal)")
    p.add_argument("--welch", action="store_true", help="independent design: Welch (unequal variances)")
    p.add_argument("--by", type=_csv_list, default=[], metavar="COL[,COL]",
                   help="one test per group of these columns (e.g. metric,domain), vectorised")
    p.add_argument("--pair-annotator", action=argparse.BooleanOptionalAction, default=None,
                   help="pair on the annotator too (default: when the table has an annotator column); "
                        "--no-pair-annotator for two disjoint annotator pools scoring the same items")
    p.add_argument("--unpaired", choices=("raise", "drop"), default="raise",
                   help="rows without a partner in the other condition: error (raise) or ignore (drop)")
    p.add_argument("--fail-on", choices=("not-equivalent",), default=None,
                   help="exit 1 when any test is not equivalent")
    p.set_defaults(func=run_tost)


def _register_tau(ssub: argparse._SubParsersAction, fmt: type) -> None:
    """``ddp stats tau``."""
    p = ssub.add_parser(
        "tau", formatter_class=fmt, help="Kendall tau-b between two conditions' system rankings, bootstrap CI",
        description=(
            "Kendall tau-b between the system rankings (system means) of conditions A and B with a percentile "
            "CI from resampling documents (or segments) with replacement."))
    _add_common(p, annotator=False)
    p.add_argument("--a", required=True, metavar="COND", help="condition A")
    p.add_argument("--b", required=True, metavar="COND", help="condition B")
    _add_resampling(p, n_boot=10_000, n_boot_help="bootstrap replicates", seed_help="seed of the resampling generator",
                    unit_help="resampling unit")
    p.add_argument("--weighting", choices=("segment", "document"), default="segment",
                   help="system mean over rows (segment) or mean of per-document means (document)")
    p.add_argument("--tau-min", type=float, default=0.667, metavar="X",
                   help="threshold for the share of replicates below it")
    p.add_argument("--confidence", type=float, default=0.95, metavar="P", help="percentile interval level")
    p.add_argument("--exclude-system", action="append", default=[], metavar="NAME",
                   help="leave a system out of the ranking (repeatable), e.g. refA")
    p.add_argument("--fail-on", choices=("different",), default=None,
                   help="exit 1 when the CI lower bound is below --tau-min (rankings not shown to agree)")
    add_budget(p)
    p.set_defaults(func=run_tau)


def _add_resampling(p: argparse.ArgumentParser, *, n_boot: int, n_boot_help: str, seed_help: str,
                    unit_help: str) -> None:
    """``--n-boot``, ``--seed`` and ``--unit`` (document or segment resampling) of ``stats tau`` and
    ``stats cluster``, in that order."""
    p.add_argument("--n-boot", type=int, default=n_boot, metavar="B", help=n_boot_help)
    p.add_argument("--seed", type=int, default=0, metavar="N", help=seed_help)
    p.add_argument("--unit", choices=("document", "segment"), default="document", help=unit_help)


def _register_cluster(ssub: argparse._SubParsersAction, fmt: type) -> None:
    """``ddp stats cluster``."""
    p = ssub.add_parser(
        "cluster", formatter_class=fmt, help="rank systems and group them into indistinguishable clusters",
        description=(
            "Rank systems by mean score and cluster them with pairwise tests: bootstrap (the paper: pairwise "
            "bootstrap, B = 1,000), wmt25 (one-sided Wilcoxon, WMT25 rank ranges), wmt24 (two-sided Wilcoxon, "
            "optionally per domain + Stouffer), permutation (mt-metrics-eval sign-flip test, greedy ranks). "
            "With --a/--b, clusters both conditions and compares them."))
    _add_common(p)
    p.add_argument("--method", choices=("bootstrap", "wmt25", "wmt24", "permutation"), default="bootstrap",
                   help="pairwise test and cluster rule")
    p.add_argument("--in", dest="condition_value", default=None, metavar="COND",
                   help="use only this condition (needed when the table holds several)")
    p.add_argument("--a", default=None, metavar="COND", help="compare the clusters of conditions A and B")
    p.add_argument("--b", default=None, metavar="COND", help="see --a")
    p.add_argument("--alpha", type=float, default=0.05, metavar="P", help="significance level")
    _add_resampling(p, n_boot=1000, n_boot_help="resamples / permutations", seed_help="seed (bootstrap, permutation)",
                    unit_help="bootstrap resampling unit")
    p.add_argument("--by-domain", action="store_true", help="wmt24: per-domain tests combined with Stouffer")
    _column(p, "--domain-col", "--domain", "domain", "domain", "domain column (for --by-domain)")
    p.add_argument("--pair-annotator", action=argparse.BooleanOptionalAction, default=None,
                   help="pair observations on the annotator too (default: yes when the column exists, "
                        "except --method wmt24)")
    p.add_argument("--min-pairs", type=int, default=None, metavar="N",
                   help="wmt25, wmt24, permutation: warn (and record in pair_floor and the signature) when a "
                        "system comparison rests on fewer than N paired observations; default 100, 0 = no floor")
    p.add_argument("--fail-on", choices=("different",), default=None,
                   help="with --a/--b: exit 1 when the two conditions cluster the systems differently")
    add_budget(p)
    p.set_defaults(func=run_cluster)


def _register_alpha(ssub: argparse._SubParsersAction, fmt: type) -> None:
    """``ddp stats alpha``."""
    p = ssub.add_parser(
        "alpha", formatter_class=fmt, help="Krippendorff's alpha (inter-annotator agreement)",
        description=(
            "Krippendorff's alpha over units of analysis: segment = (document, segment, system), document = "
            "(document, system) with each coder's scores averaged within the unit. Coders are the annotator "
            "column, or the condition column (--coder condition, e.g. two annotator pools)."))
    _add_common(p)
    p.add_argument("--unit", choices=("segment", "document"), default="segment", help="unit of analysis")
    p.add_argument("--level", choices=("interval", "ratio", "nominal", "ordinal"), default="interval",
                   help="level of measurement")
    p.add_argument("--coder", choices=("annotator", "condition"), default="annotator", help="what counts as a coder")
    p.add_argument("--in", dest="condition_value", default=None, metavar="COND",
                   help="use only this condition (with --coder annotator; needed when the table holds several)")
    p.add_argument("--znorm", action="store_true",
                   help="z-normalise scores per annotator first (per condition when there is no annotator column)")
    p.add_argument("--min-alpha", type=float, default=0.667, metavar="X", help="threshold for --fail-on below-min")
    p.add_argument("--fail-on", choices=("below-min",), default=None, help="exit 1 when alpha < --min-alpha")
    p.set_defaults(func=run_alpha)


def _no_subcommand(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


# --------------------------------------------------------------------------- input


def _input(args: argparse.Namespace, conditions: list[str] | None = None) -> Any:
    """TABLE as given (a path read by the statistics functions) or a reader's long table; ``-o`` is
    checked first (before anything is read)."""
    args._target = check_result_output(args, [args.table])
    return score_input(args, args.table, conditions)


def _annotator(args: argparse.Namespace) -> str | None:
    return getattr(args, "annotator", None) or None


def _columns(args: argparse.Namespace) -> Any:
    """The :class:`ddpcore.stats.TableColumns` of the ``--*-col`` flags (``--annotator-col ""`` = none;
    a subcommand without an annotator or domain flag keeps the default)."""
    from ..stats import TableColumns

    cols = TableColumns(document=args.document, segment=args.segment, system=args.system,
                        condition=args.condition, score=args.score, annotator=_annotator(args))
    if getattr(args, "domain", None):
        cols = cols.replace(domain=args.domain)
    return cols


def _progress(args: argparse.Namespace) -> bool:
    return not args.quiet and sys.stderr.isatty()


# --------------------------------------------------------------------------- output


def _emit(args: argparse.Namespace, payload: dict[str, Any], text: str, tsv_rows: list[dict[str, Any]]) -> None:
    import json
    import os

    if args.output_format == "json":
        from ..signature import json_safe

        # NaN as null and inf as "inf" (json_safe), never the invalid NaN/Infinity tokens
        out = json.dumps(json_safe(payload), indent=2, sort_keys=False, allow_nan=False)
    elif args.output_format == "text":
        out = text
    else:
        out = _tsv(tsv_rows, payload.get("signature"))
    if args.output_format != "json" and "passed" in payload:  # the gate's verdict in every format, as JSON's passed
        gate = f"gate --fail-on {args.fail_on}: {'passed' if payload['passed'] else 'FAILED'}"
        out = f"{out}\n{gate}" if args.output_format == "text" else f"{out}\n# {gate}"
    target = getattr(args, "_target", None)
    if target is not None:
        write_result(target, out, payload.get("signature"), f"ddp stats {args.stats_command}")
        return
    try:
        print(out)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `ddp stats ... | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _tsv(rows: list[dict[str, Any]], signature: Any) -> str:
    import json

    from ..io.tables import tsv_line

    if not rows:
        return ""
    cols = list(rows[0])
    lines = ["# signature: " + json.dumps(signature, sort_keys=True), tsv_line(cols)]
    for r in rows:  # a name holding a tab, quote or line break is quoted (RFC 4180), as the table readers read it
        lines.append(tsv_line([json.dumps(r[c]) if isinstance(r[c], (list, dict)) else r[c] for c in cols]))
    return "\n".join(lines)


def _f(x: Any, nd: int = 3) -> str:
    return fmt_number(x, nd)


def _gate(args: argparse.Namespace, payload: dict[str, Any], failed: bool, gate: str, why: str) -> int:
    """Record the gate in the payload (``passed``; its settings in the signature) and return the exit code.

    The one-line reason is printed on stderr by :func:`_report_gate` after the result."""
    if args.fail_on is None:
        return 0
    payload["passed"] = not failed
    payload["signature"] = dict(payload.get("signature") or {}, fail_on=args.fail_on)
    args._gate_message = f"gate {gate} failed: {why}" if failed else None
    return 1 if failed else 0


def _report_gate(args: argparse.Namespace) -> None:
    msg = getattr(args, "_gate_message", None)
    if msg:
        stderr_line(f"ddp stats {args.stats_command}: {msg}")


def _undefined(what: str, hint: str) -> None:
    from ..errors import DDPDataError

    raise DDPDataError(f"{what} is undefined (NaN) for this table; {hint}", code="D364")


def _sig_line(sig: dict[str, Any]) -> str:
    keys = ("method", "n_boot", "seed", "unit", "alpha", "min_pairs", "ddpcore")
    return "signature: " + ", ".join(f"{k}={sig[k]}" for k in keys if sig.get(k) is not None)


# --------------------------------------------------------------------------- tost


def run_tost(args: argparse.Namespace) -> int:
    from ..stats import SCORE_A, SCORE_B, json_safe, load_long_table, pair_conditions, tost_grouped, tost_ind, tost_paired
    from ..stats.columns import check_group_keys, check_key_types
    from ..stats.tost import TOO_FEW_RULE, tost_grouped_signature

    low, high = (-args.margin, args.margin) if args.margin is not None else tuple(args.bounds)
    table = _input(args, [args.a, args.b])
    loaded: dict[str, Any] = {}
    paired_counts: dict[str, Any] = {}
    df = load_long_table(table, columns=_columns(args),
                         required=("condition", "score") if not args.paired else
                         ("document", "segment", "condition", "score"), nan_policy=args.nan_policy, counts=loaded,
                         rating_keys=args.by)  # one rating per --by group (e.g. per metric), not a repeat
    by = check_group_keys(args.by, args.a, args.b)
    check_key_types(df, by, str(args.table), "--by")
    if args.paired:
        data = pair_conditions(df, args.a, args.b, annotator=args.pair_annotator, unpaired=args.unpaired,
                               extra_keys=by, counts=paired_counts)
        x, y = SCORE_A, SCORE_B
    else:
        import polars as pl

        cond = pl.col("condition").cast(pl.String)
        data = df.select(*by, pl.when(cond == str(args.a)).then(pl.col("score")).alias(SCORE_A),
                         pl.when(cond == str(args.b)).then(pl.col("score")).alias(SCORE_B))
        x, y = SCORE_A, SCORE_B
    n_dropped, dropped_sig, warnings = _tost_dropped(args, loaded, paired_counts)
    if args.by:
        out = tost_grouped(data, by, x, y, low, high, alpha=args.alpha, paired=args.paired,
                           equal_var=not args.welch, nan_policy=args.nan_policy)
        sig = dict(tost_grouped_signature(low, high, args.alpha, args.paired, not args.welch, args.nan_policy),
                   condition_a=str(args.a), condition_b=str(args.b), **dropped_sig)
        rows = json_safe(out.to_dicts())  # NaN -> None: an undefined figure is never shown as a number
        few = [r for r in rows if r["status"] == "too_few"]
        if few:  # p = 1 and no interval there: said and recorded, not left to read as a plausible test
            warnings.append(f"{len(few)} of {len(rows)} groups have too few observations for a test (status too_few: "
                            "no t statistic and no interval, p = 1, not equivalent; first "
                            f"{', '.join(f'{c}={few[0][c]}' for c in args.by)}: n = {few[0]['n']}); {TOO_FEW_RULE}")
            stderr_line(f"ddp stats tost: warning: {warnings[-1]}")
        payload = {"condition_a": str(args.a), "condition_b": str(args.b), "groups": rows,
                   "n_groups": len(rows), "all_equivalent": bool(out["equivalent"].all()), "n_omitted": n_dropped,
                   **({"warnings": warnings} if warnings else {}), "signature": sig}
        bad = [r for r in rows if not r["equivalent"]]
        why = ""
        if bad:
            r = bad[0]
            why = (f"{len(bad)} of {len(rows)} groups not equivalent; first "
                   f"{', '.join(f'{c}={r[c]}' for c in args.by)}: {_ci_why(args, r, low, high)}")
        code = _gate(args, payload, bool(bad), "not-equivalent", why)
        from ..io.tables import text_cell

        head = (f"TOST {text_cell(args.a)} vs {text_cell(args.b)}: margins ({low:g}, {high:g}), alpha {args.alpha}, "
                f"{len(rows)} groups")
        lines = [head] + [
            f"  {' / '.join(text_cell(r[c]) for c in args.by)}: " + (
                f"too few observations for a test (n={r['n']}) NOT equivalent" if r["status"] == "too_few" else
                f"diff {_f(r['mean_diff'])} [{_f(r['ci_low'])}, {_f(r['ci_high'])}] p={_f(r['p_value'], 4)} "
                f"n={r['n']} {'equivalent' if r['equivalent'] else 'NOT equivalent'}") for r in rows]
        _emit(args, payload, "\n".join(lines + [_sig_line(sig)]), rows)
    else:
        if args.paired:
            res = tost_paired(data[x].to_numpy(), data[y].to_numpy(), low, high, alpha=args.alpha,
                              nan_policy=args.nan_policy)
        else:
            res = tost_ind(data[x].drop_nulls().to_numpy(), data[y].drop_nulls().to_numpy(), low, high,
                           alpha=args.alpha, equal_var=not args.welch, nan_policy=args.nan_policy)
        if res.status == "too_few":
            _undefined(f"TOST of {args.a} vs {args.b} with n = {res.n}",
                       "it needs at least 2 pairs (paired) or 3 scores (independent); check the conditions and the "
                       "pairing (--pair-annotator/--no-pair-annotator)")
        d = res.to_dict()
        d["n_omitted"] = int(d.get("n_omitted") or 0) + n_dropped
        d["signature"] = dict(d.get("signature") or {}, condition_a=str(args.a), condition_b=str(args.b), **dropped_sig)
        for w in d.pop("warnings", None) or ():  # the test's own (TostResult.warnings), after the loader's
            stderr_line(f"ddp stats tost: warning: {w}")
            warnings.append(w)
        if warnings:
            d["warnings"] = warnings
        payload = {"condition_a": str(args.a), "condition_b": str(args.b), **d}
        code = _gate(args, payload, not res.equivalent, "not-equivalent", _ci_why(args, d, low, high))
        from ..io.tables import text_cell

        text = (f"TOST {text_cell(args.a)} vs {text_cell(args.b)} ({d['design']}, n={d['n']}): "
                f"mean diff {_f(d['mean_diff'])} "
                f"[{_f(d['ci_low'])}, {_f(d['ci_high'])}] ({100 * (1 - 2 * args.alpha):g}% CI), "
                f"margins ({low:g}, {high:g}), p={_f(d['p_value'], 4)} -> "
                f"{'equivalent' if d['equivalent'] else 'NOT equivalent'}\n{_sig_line(d['signature'])}")
        _emit(args, payload, text, [{k: v for k, v in payload.items() if k not in ("signature", "warnings")}])
    _report_gate(args)
    return code


def _tost_dropped(args: argparse.Namespace, loaded: dict[str, Any],
                  paired: dict[str, Any]) -> tuple[int, dict[str, Any], list[str]]:
    """Rows dropped before the test (a missing score under --nan-policy omit, no partner under --unpaired
    drop): their count, the signature entries that record them, and the warning lines (said on stderr
    here, recorded in the JSON by the caller)."""
    n_missing = int(loaded.get("n_omitted") or 0)
    n_unpaired = int(paired.get("n_unpaired") or 0)
    warnings = []
    if n_missing:
        warnings.append(f"{n_missing} row(s) with a missing (null/NaN) score dropped (--nan-policy omit; first: "
                        f"row {loaded.get('first_omitted_row')})")
    if n_unpaired:
        warnings.append(f"{n_unpaired} row(s) without a partner in the other condition dropped (--unpaired drop; "
                        f"e.g. {paired.get('unpaired_example')})")
    sig: dict[str, Any] = {"nan_policy": args.nan_policy, "n_omitted_missing": n_missing}
    if args.paired:
        sig.update(unpaired=args.unpaired, n_omitted_unpaired=n_unpaired)
    for w in warnings:
        stderr_line(f"ddp stats tost: warning: {w}")
    return n_missing + n_unpaired, sig, warnings


def _ci_why(args: argparse.Namespace, r: dict[str, Any], low: float, high: float) -> str:
    diff = f"mean({args.a} - {args.b})" if args.paired else f"mean({args.a}) - mean({args.b})"
    if r.get("ci_low") is None or r.get("ci_high") is None:
        return f"{diff}: too few observations for a test (n = {r.get('n')})"
    return (f"{100 * (1 - 2 * args.alpha):g}% CI of {diff} [{_f(r['ci_low'])}, {_f(r['ci_high'])}] "
            f"not inside ({low:g}, {high:g})")


# --------------------------------------------------------------------------- tau


def _finite(args: argparse.Namespace, dest: str, flag: str) -> None:
    """D311 before any work when a threshold flag is not a finite number (``nan`` or ``inf`` would make
    its gate meaningless and its JSON invalid)."""
    import math

    from ..errors import DDPUsageError

    value = getattr(args, dest)
    if not math.isfinite(value):
        raise DDPUsageError(f"{flag} must be a finite number, got {value}", code="D311")


def _say(args: argparse.Namespace, warnings: Any, label: str = "") -> None:
    for w in warnings:
        stderr_line(f"ddp stats {args.stats_command}: warning: {label}{w}")


def run_tau(args: argparse.Namespace) -> int:
    from ..stats import bootstrap_tau

    _finite(args, "tau_min", "--tau-min")
    table = _input(args, [args.a, args.b])
    res = bootstrap_tau(table, args.a, args.b, unit=args.unit, weighting=args.weighting, tau_min=args.tau_min,
                        confidence=args.confidence, exclude_systems=args.exclude_system, columns=_columns(args),
                        options=resample_options(args))
    import math

    _say(args, res.warnings)
    if math.isnan(res.tau):
        _undefined(f"Kendall tau between {args.a} and {args.b}",
                   "one condition gives every system the same mean (no ranking); check the score column")
    if math.isnan(res.ci_low):
        _undefined(f"the bootstrap CI of tau ({res.n_undefined} of {res.n_boot} replicates undefined)",
                   "every resample left a system without rows or all means tied; use more documents, "
                   "--unit segment or --exclude-system")
    d = res.to_dict()
    d["fails_tau_min"] = bool(not res.ci_low >= args.tau_min)
    code = _gate(args, d, d["fails_tau_min"], "different",
                 f"lower bound of the {100 * args.confidence:g}% CI of tau, {_f(res.ci_low)}, is below "
                 f"--tau-min {args.tau_min:g}")
    from ..io.tables import text_cell

    text = (f"Kendall tau-b {text_cell(args.a)} vs {text_cell(args.b)} over {len(res.systems)} systems: "
            f"tau {_f(res.tau)} "
            f"(p={_f(res.p_value, 4)}), {100 * args.confidence:g}% CI [{_f(res.ci_low)}, {_f(res.ci_high)}] "
            f"from {res.n_boot} {args.unit} resamples; {100 * res.share_below_tau_min:.1f}% of replicates "
            f"below tau_min={args.tau_min}\n{_sig_line(d['signature'])}")
    row = {k: d[k] for k in ("condition_a", "condition_b", "tau", "p_value", "ci_low", "ci_high",
                             "share_below_tau_min", "replicate_mean", "replicate_sd", "n_boot", "seed", "unit",
                             "n_units")}
    _emit(args, d, text, [row])
    _report_gate(args)
    return code


# --------------------------------------------------------------------------- cluster


def _cluster_rows(res: Any) -> list[dict[str, Any]]:
    return [{"condition": res.signature.get("condition"), "position": k + 1, "system": s,
             "mean": res.means[s], "rank_best": res.rank_ranges[s][0], "rank_worst": res.rank_ranges[s][1],
             "cluster": res.cluster_of(s)} for k, s in enumerate(res.order)]


def _cluster_text(res: Any) -> str:
    from ..io.tables import text_cell, text_pad, text_width

    cond = res.signature.get("condition")
    lines = [f"{res.method} clusters" + (f" ({text_cell(cond)})" if cond else "") +
             f": {len(res.order)} systems, {len(res.clusters)} clusters, alpha {res.alpha}"]
    names = {s: text_cell(s) for s in res.order}  # one line each, the mean column aligned after the longest
    width = max([28, *(text_width(n) for n in names.values())])
    for k, members in enumerate(res.clusters, 1):
        for s in members:
            b, w = res.rank_ranges[s]
            lines.append(f"  {k:>3}  {b:>2}-{w:<2}  {text_pad(names[s], width)} {res.means[s]:8.3f}")
        if k < len(res.clusters):
            lines.append("  " + "-" * (width + 18))
    floor = res.pair_floor
    if floor is not None:
        lines.append(f"pairs per comparison: min {floor['n_pairs_min']}, max {floor['n_pairs_max']}; "
                     f"{floor['n_below']} of {floor['n_comparisons']} below --min-pairs {floor['min_pairs']}")
    for c in res.rank_conflicts:
        lines.append(f"rank conflict: {text_cell(c['reason'])}")
    return "\n".join(lines)


def _cluster_warnings(res: Any, label: str = "") -> None:
    for w in res.warnings:
        stderr_line(f"ddp stats cluster: warning: {label}{w}")


def run_cluster(args: argparse.Namespace) -> int:
    from ..errors import DDPUsageError
    from ..stats import cluster_systems, compare_clusters

    if (args.a is None) != (args.b is None):
        raise DDPUsageError("give both --a and --b to compare two conditions", code="D355")
    if args.a is not None and args.condition_value is not None:
        raise DDPUsageError("use either --in COND or --a/--b", code="D355")
    if args.fail_on == "different" and args.a is None:
        raise DDPUsageError("--fail-on different needs --a and --b (two conditions to compare)", code="D355")
    conds = [args.a, args.b] if args.a is not None else [args.condition_value]
    table = _input(args, [c for c in conds if c is not None])
    kw = dict(alpha=args.alpha, unit=args.unit, by_domain=args.by_domain, pair_annotator=args.pair_annotator,
              min_pairs=args.min_pairs, columns=_columns(args), options=resample_options(args, progress=_progress(args)))
    if args.a is None:
        res = cluster_systems(table, args.method, condition_value=args.condition_value, **kw)
        d = res.to_dict()
        _cluster_warnings(res)
        _emit(args, d, _cluster_text(res) + "\n" + _sig_line(res.signature), _cluster_rows(res))
        return 0
    ra = cluster_systems(table, args.method, condition_value=args.a, **kw)
    rb = cluster_systems(table, args.method, condition_value=args.b, **kw)
    cmp = compare_clusters(ra, rb)
    _cluster_warnings(ra, f"{args.a}: ")
    _cluster_warnings(rb, f"{args.b}: ")
    _say(args, cmp.warnings)
    payload = {"condition_a": str(args.a), "condition_b": str(args.b), "clusters_a": ra.to_dict(),
               "clusters_b": rb.to_dict(), "comparison": cmp.to_dict(),
               "signature": dict(ra.signature, condition=None, condition_a=str(args.a), condition_b=str(args.b))}
    code = _gate(args, payload, not cmp.same_clusters, "different",
                 f"{args.a} and {args.b} cluster the systems differently ({cmp.n_clusters_a} vs "
                 f"{cmp.n_clusters_b} clusters" + (f"; moved: {', '.join(cmp.moved)}" if cmp.moved else "") + ")")
    from ..io.tables import text_cell

    text = "\n\n".join([
        _cluster_text(ra), _cluster_text(rb),
        f"comparison: {cmp.n_clusters_a} vs {cmp.n_clusters_b} clusters; same clusters: {cmp.same_clusters}; "
        f"{cmp.n_same_index}/{len(cmp.systems)} systems at the same cluster index, "
        f"{cmp.n_adjacent_index}/{len(cmp.systems)} at the same or an adjacent one"
        + (f"; moved: {', '.join(map(text_cell, cmp.moved))}" if cmp.moved else ""),
        _sig_line(payload["signature"]),
    ])
    _emit(args, payload, text, _cluster_rows(ra) + _cluster_rows(rb))
    _report_gate(args)
    return code


# --------------------------------------------------------------------------- alpha


def run_alpha(args: argparse.Namespace) -> int:
    import polars as pl

    from ..errors import DDPUsageError
    from ..stats import (check_conditions, check_single_condition, krippendorff_alpha, load_long_table,
                         reliability_matrix, znormalize)

    if args.coder == "condition" and args.condition_value is not None:
        raise DDPUsageError("--in selects one condition; with --coder condition the conditions are the coders",
                            code="D355")
    _finite(args, "min_alpha", "--min-alpha")
    table = _input(args, [args.condition_value] if args.condition_value else None)
    needs = ["document", "system", "score"] + (["segment"] if args.unit == "segment" else [])
    needs += ["condition"] if (args.coder == "condition" or args.condition_value) else []
    loaded: dict[str, Any] = {}
    df = load_long_table(table, columns=_columns(args), required=needs, nan_policy=args.nan_policy, counts=loaded)
    if args.condition_value is not None:
        check_conditions(df, [args.condition_value])
        df = df.filter(pl.col("condition").cast(pl.String) == str(args.condition_value))
    elif args.coder == "annotator":
        check_single_condition(df, "--in COND")
    if args.coder == "annotator" and "annotator" not in df.columns:
        raise DDPUsageError("--coder annotator needs an annotator column (--annotator-col NAME)", code="D355")
    if args.znorm:
        df = znormalize(df, by="annotator" if "annotator" in df.columns else "condition")
    unit = ["document_id", "system"] if args.unit == "document" else ["document_id", "segment_id", "system"]
    data = reliability_matrix(df, unit=unit, coder=args.coder, score="score", source=str(args.table))
    res = krippendorff_alpha(data, level=args.level)
    d = res.to_dict()
    d.pop("warnings", None)
    n_omitted = int(loaded.get("n_omitted") or 0)
    warnings = ([f"{n_omitted} row(s) with a missing (null/NaN) score dropped (--nan-policy omit; first: row "
                 f"{loaded.get('first_omitted_row')})"] if n_omitted else []) + list(res.warnings)
    if warnings:  # recorded in the output (JSON) as well as said on stderr
        d["warnings"] = warnings
    for w in warnings:
        stderr_line(f"ddp stats alpha: warning: {w}")
    d["signature"] = dict(d.get("signature") or {}, unit=args.unit, coder=args.coder, znorm=bool(args.znorm),
                          condition=args.condition_value, min_alpha=args.min_alpha, nan_policy=args.nan_policy,
                          n_omitted=n_omitted)
    if d["alpha"] is None:
        _undefined("Krippendorff's alpha", "check that units have two ratings that are not all equal")
    code = _gate(args, d, not d["alpha"] >= args.min_alpha, "below-min",
                 f"alpha {_f(d['alpha'])} is below --min-alpha {args.min_alpha:g}")
    text = (f"Krippendorff's alpha ({args.level}, unit={args.unit}, coder={args.coder}"
            f"{', z-normalised' if args.znorm else ''}): {_f(d['alpha'])} over {d['n_pairable_units']} pairable "
            f"units ({d['n_pairable_values']} values, {d['n_coders']} coders)\n{_sig_line(d['signature'])}")
    _emit(args, d, text, [{k: v for k, v in d.items() if k not in ("signature", "warnings")}])
    _report_gate(args)
    return code
