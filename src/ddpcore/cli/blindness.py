"""``ddp blindness``: does an evaluation notice MIX documents? Battery, power analysis and verdict.

Calls :func:`ddpcore.stats.blindness.blindness` and prints JSON (default), text or a Markdown
table a paper can paste; ``-o FILE.json`` writes the JSON result there instead (atomically, with a
``FILE.json.signature.json`` sidecar; ``-o -`` = stdout).
``--fail-on blind|sensitive`` exits 1 (one stderr line) when the verdict is that value.

Only argparse is imported at module level (``ddp --help`` stays fast).
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from ._common import add_result_output, check_result_output, resample_options, stderr_line, write_result


def register(sub: argparse._SubParsersAction) -> None:
    from ._scores import add_score_reader
    from .stats import _HelpFormatter

    p = sub.add_parser(
        "blindness", formatter_class=_HelpFormatter,
        help="DOC vs MIX: is the evaluation blind to document coherence? (TOST, tau, clusters, power, verdict)",
        description=(
            "Seed-001 battery on a long score table (document_id, segment_id, system, condition, score): paired "
            "TOST of mean(A - B), Kendall tau between the A and B system rankings with a document-bootstrap CI, "
            "system clusters in both conditions, the boundary-localised error-span rate (when a spans column is "
            "present) and score recoverability R^2 (when a SEG condition is present); then the power of the "
            "paired TOST and a verdict: blind, sensitive or inconclusive. "
            "Columns: every verdict needs document_id, segment_id, system, condition and score (--*-col); "
            "the paired design of the study (a DOC-MIX pair holds the same translation) also needs "
            "source_system on the MIX rows (written by ddp mix): without it --attribute auto falls back to "
            "nominal with a warning (--strict: exit 3, D700). Optional evidence, not part of the verdict: "
            "error_spans + target_text (span rate), a SEG condition (R^2). Every fallback, dropped row or "
            "undefined ranking is a 'warning:' line on stderr and in the JSON 'warnings'; --strict makes "
            "each an error. Exit codes: 0 ok, 1 --fail-on gate failed, 2 usage, 3 bad data. "
            "See docs/mix-blindness.md."))
    p.add_argument("table", metavar="SCORES", help="long score table (.csv .tsv .jsonl .json .parquet; .gz for text), "
                                                   "or a data folder with --reader")
    add_score_reader(p, "SCORES")
    p.add_argument("--a", default="DOC", metavar="COND", help="coherent condition (value of the condition column)")
    p.add_argument("--b", default="MIX", metavar="COND", help="MIX condition")
    m = p.add_mutually_exclusive_group(required=True)
    m.add_argument("--margin", type=float, metavar="X", help="equivalence margin in score units: (-X, X)")
    m.add_argument("--margin-sd", type=float, metavar="K", help="margin in SDs of the paired differences")
    p.add_argument("--unit", choices=("segment", "document"), default="segment",
                   help="TOST pairs: (document, segment, system) or (document, system) means")
    p.add_argument("--method", choices=("bootstrap", "wmt25", "wmt24", "permutation"), default="bootstrap",
                   help="clustering method")
    p.add_argument("--n-boot", type=int, default=10_000, metavar="B", help="tau bootstrap replicates (documents)")
    p.add_argument("--n-boot-cluster", type=int, default=1000, metavar="B", help="cluster resamples/permutations")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed of every resampling generator (numpy PCG64)")
    p.add_argument("--alpha", type=float, default=0.05, metavar="P",
                   help="significance level: of each one-sided TOST test (CI 1 - 2 alpha), of the power analysis "
                        "and of the pairwise tests that cluster the systems (as ddp stats cluster --alpha); "
                        "recorded as alpha and cluster_alpha in the signature")
    p.add_argument("--tau-min", type=float, default=0.667, metavar="X",
                   help="rankings differ when the tau CI lies below it")
    p.add_argument("--confidence", type=float, default=0.95, metavar="P", help="tau CI level")
    p.add_argument("--seg", default=None, metavar="COND",
                   help="isolated-segment condition for the recoverability R^2; default SEG, used when present; "
                        "given explicitly, a missing condition is an error (D705)")
    p.add_argument("--attribute", choices=("auto", "source", "nominal"), default="auto",
                   help="score MIX rows for their source system (source; the column must exist, D301), their "
                        "system column (nominal), or source when the source-system column exists (auto; the "
                        "fallback to nominal is a warning, an error with --strict). JSON: attribute_used, "
                        "attribute_reason")
    p.add_argument("--strict", action="store_true",
                   help="make every warning an error (exit 3): the --attribute auto fallback and MIX rows "
                        "without a source system (D700), an undefined ranking or fewer than 2 systems (D702), "
                        "rows dropped by --nan-policy omit or unpaired keys (D703), a warning of the system clustering "
                        "such as too few --n-boot-cluster resamples for --alpha (D930)")
    p.add_argument("--exclude-system", action="append", default=[], metavar="NAME",
                   help="leave a system out (repeatable), e.g. refA")
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="OpenMP threads of the resampling kernels; 0 = all cores (results do not depend on it; 1 "
                        "was 3-9x faster than 2 on a 2-core machine busy with other jobs)")
    c = p.add_argument_group("columns")
    c.add_argument("--document-col", dest="document", default="document_id", metavar="NAME", help="document id column")
    c.add_argument("--segment-col", dest="segment", default="segment_id", metavar="NAME", help="segment id column")
    c.add_argument("--system-col", dest="system", default="system", metavar="NAME", help="system column")
    c.add_argument("--condition-col", dest="condition", default="condition", metavar="NAME", help="condition column")
    c.add_argument("--score-col", dest="score", default="score", metavar="NAME", help="score column")
    c.add_argument("--source-system-col", dest="source_system", default=None, metavar="NAME",
                   help="MIX rows: the system that produced the segment (written by ddp mix); default "
                        "source_system; given explicitly, a missing column is an error (D301)")
    c.add_argument("--spans-col", dest="spans", default=None, metavar="NAME",
                   help="error spans (list of {span_start, span_end}); default error_spans, the span rate is "
                        "skipped when absent; given explicitly, a missing column is an error (D301)")
    c.add_argument("--text-col", dest="text", default=None, metavar="NAME",
                   help="target text (segment length for the span positions); default target_text")
    c.add_argument("--nan-policy", choices=("raise", "omit"), default="raise",
                   help="missing score: error (D302) or drop the row (a warning with the count; JSON n_omitted)")
    from ._common import add_budget

    add_budget(p)
    o = p.add_argument_group("output")
    add_result_output(o, ("json", "text", "markdown"), file_formats=("json",))
    o.add_argument("--fail-on", choices=("blind", "sensitive"), default=None,
                   help="exit 1 when the verdict is blind (e.g. a metric that should see documents) or sensitive")
    p.set_defaults(func=run_blindness)


def run_blindness(args: argparse.Namespace) -> int:
    import json

    target = check_result_output(args, [args.table], file_formats=("json",))  # before any work
    from ..stats.blindness import BlindnessDesign, BlindnessInputs, blindness
    from ..signature import json_safe
    from ..stats.columns import TableColumns

    explicit = {"seg": args.seg, "source_system": args.source_system, "spans": args.spans, "text": args.text}
    defaults = {"seg": "SEG", "source_system": "source_system", "spans": "error_spans", "text": "target_text"}
    given = {k: (v if v is not None else defaults[k]) for k, v in explicit.items()}

    pending: list[str] = []  # printed once the battery has run: a failing run prints its one error line only

    design = BlindnessDesign(unit=args.unit, method=args.method, n_boot_cluster=args.n_boot_cluster,
                             alpha=args.alpha, tau_min=args.tau_min, confidence=args.confidence,
                             attribute=args.attribute, exclude_systems=args.exclude_system, strict=args.strict)
    inputs = BlindnessInputs(source_system=given["source_system"], spans=given["spans"], text=given["text"],
                             seg=given["seg"], required=[k for k, v in explicit.items() if v is not None])
    from ._scores import score_input

    table = score_input(args, args.table, [args.a, args.b] + ([args.seg] if args.seg else []))
    res = blindness(table, args.a, args.b, margin=args.margin, margin_sd=args.margin_sd, design=design,
                    inputs=inputs, columns=TableColumns(document=args.document, segment=args.segment,
                                                        system=args.system, condition=args.condition,
                                                        score=args.score),
                    options=resample_options(args), warn=pending.append)
    for message in pending:
        stderr_line(f"ddp blindness: warning: {message}")
    payload = res.to_dict()
    failed = args.fail_on is not None and res.verdict == args.fail_on
    if args.fail_on:
        payload["fail_on"] = args.fail_on
        payload["passed"] = not failed
        payload["signature"] = dict(payload["signature"], fail_on=args.fail_on)
    out = (json.dumps(json_safe(payload), indent=2, allow_nan=False) if args.output_format == "json"
           else render(payload, args.output_format))
    if target is not None:
        write_result(target, out, payload["signature"], "ddp blindness")
    else:
        try:
            print(out)
            sys.stdout.flush()
        except BrokenPipeError:  # pragma: no cover
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if failed:
        stderr_line(f"ddp blindness: gate {args.fail_on} failed: verdict {res.verdict}: {'; '.join(res.reasons)}")
        return 1
    return 0


def _f(x: Any, nd: int = 3) -> str:
    if x is None:
        return "—"
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:.{nd}f}" if abs(x) >= 1e-3 or x == 0 else f"{x:.2e}"


def _pct(x: Any) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def _pts(x: Any) -> str:
    return "—" if x is None else f"{100 * x:+.1f}"


def rows(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """(statistic, value) rows of the text and Markdown tables."""
    ev = payload["evidence"]
    t, pw = ev["tost"], ev["power"]
    a, b = payload["condition_a"], payload["condition_b"]
    pct = f"{100 * (1 - 2 * t['alpha']):g} %"
    out = [
        ("verdict", f"**{payload['verdict']}**"),
        (f"paired TOST, {t['unit']} pairs", f"n = {t['n']:,}, mean({a} − {b}) = {_f(t['mean_diff'])}, "
                                             f"{pct} CI [{_f(t['ci_low'])}, {_f(t['ci_high'])}], margin ±{_f(t['margin'])}, "
                                             f"p = {_f(t['p_value'], 4)} → "
                                             f"{'equivalent' if t['equivalent'] else 'not equivalent'}"),
        ("SD of paired differences", _f(t["sd_diff"])),
        ("power (true difference 0)", f"{_f(pw['power'])} (nct approximation {_f(pw['power_nct'])})"),
        ("pairs for 80 % power", _f(pw["n_needed"])),
        ("smallest difference detected with 80 % power (two-sided t)", _f(pw["mdd_80"])),
    ]
    if payload.get("attribute_reason"):
        out.append((f"{b} rows scored for", f"{payload.get('attribute_used')} ({payload['attribute_reason']})"))
    r = ev.get("ranking")
    if r:
        if r.get("tau") is None or r.get("ci_low") is None or r.get("ci_high") is None:
            value = f"undefined ({r.get('tau_undefined_reason') or 'tied system means'})"
        else:
            value = (f"{_f(r['tau'])}, {100 * r['confidence']:g} % CI [{_f(r['ci_low'])}, {_f(r['ci_high'])}] "
                     f"({r['n_boot']:,} document resamples), {_pct(r['share_below_tau_min'])} of replicates < "
                     f"{r['tau_min']:g}")
            if r.get("tau_undefined_reason"):
                value += f"; {r['tau_undefined_reason']}"
        out.append((f"Kendall tau-b, {len(r['systems'])} systems", value))
    c = ev.get("clusters")
    if c:
        level = f", alpha {c['alpha']:g}" if c.get("alpha") is not None else ""
        out.append((f"clusters ({c['method']}{level})", f"{len(c['clusters_a'])} / {len(c['clusters_b'])}; same: "
                    f"{_f(c['same_clusters'])}; moved: {', '.join(c['comparison']['moved']) or 'none'}"))
    s = ev.get("boundary_spans")
    if s:
        out.append(("boundary-localised span rate", f"{_pct(s['rate_a'])} vs {_pct(s['rate_b'])}, difference "
                    f"{_pts(s['difference'])} pts [{_pts(s['ci_low'])}, {_pts(s['ci_high'])}]"))
    rec = ev.get("recoverability")
    if rec:
        out.append(("recoverability R²", ", ".join(f"{k} {_f(v['r2'])}" for k, v in rec.items())))
    for w in payload.get("warnings") or []:
        out.append(("warning", w))
    out.append(("reasons", "; ".join(payload["reasons"])))
    return out


def render(payload: dict[str, Any], fmt: str) -> str:
    """Text or Markdown rendering of a blindness result payload."""
    import json

    sig = json.dumps(payload["signature"], sort_keys=True)
    title = f"Blindness battery: {payload['condition_a']} vs {payload['condition_b']}"
    tail = ""
    if payload.get("fail_on"):
        tail = f"gate --fail-on {payload['fail_on']}: {'passed' if payload['passed'] else 'FAILED'}"
    if fmt == "markdown":
        from ..io.tables import md_cell, md_code

        lines = [f"**Blindness battery: {md_cell(payload['condition_a'])} vs {md_cell(payload['condition_b'])}**",
                 "", "| statistic | value |", "|---|---|"]
        # condition and system names inside the rows: a '|' or a line break would end the cell or the row
        lines += [f"| {md_cell(k, markup=True)} | {md_cell(v, markup=True)} |" for k, v in rows(payload)]
        lines += ["", f"Signature: {md_code(sig)}"] + ([tail] if tail else [])
        return "\n".join(lines)
    from ..io.tables import text_cell, text_pad, text_width

    cells = [(text_cell(k), text_cell(v.replace("**", ""))) for k, v in rows(payload)]  # names on one line
    width = max(text_width(k) for k, _ in cells)
    lines = [text_cell(title)] + [f"  {text_pad(k, width)}  {v}" for k, v in cells]
    return "\n".join(lines + [f"signature: {sig}"] + ([tail] if tail else []))
