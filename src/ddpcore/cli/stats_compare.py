"""``ddp stats compare``: every system against a baseline (paired bootstrap + approximate randomization).

:func:`register_compare` adds the subcommand to the ``ddp stats`` subparsers; the handler
calls :func:`ddpcore.stats.compare.compare_systems` and prints JSON (default), text, TSV,
Markdown or LaTeX. ``--fail-on worse|not-better`` turns the result into exit code 1 with
one line on stderr naming the systems and by how much.

Only argparse is imported at module level (``ddp --help`` stays fast).
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from ._common import (add_deprecated_alias, add_result_output, check_result_output, fmt_number, resample_options,
                      stderr_line, write_result)
from ._scores import add_score_reader, score_input

FORMATS = ("json", "text", "tsv", "markdown", "latex")


def _append_csv(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(t.strip() for t in v.split(",") if t.strip())
    return list(dict.fromkeys(out))


def register_compare(ssub: argparse._SubParsersAction, fmt: type[argparse.HelpFormatter]) -> None:
    """Add ``compare`` to the ``ddp stats`` subcommands."""
    p = ssub.add_parser(
        "compare", formatter_class=fmt,
        help="is each system significantly better than the baseline? (paired bootstrap + AR, any metric)",
        description=(
            "Every system against --baseline on a long score table (document_id, segment_id, system, one or "
            "more metric columns): system mean with bootstrap CI, paired difference with CI, a paired bootstrap "
            "p-value (sacrebleu --paired-bs) and an approximate-randomization p-value (sacrebleu --paired-ar), "
            "corrected for multiple comparisons across systems. --unit document (default) resamples and swaps "
            "whole documents; --unit segment is sacrebleu's setting. Exit codes: 0 ok, 1 a --fail-on gate "
            "failed, 2 usage error, 3 bad data. See docs/stats-compare.md."))
    p.add_argument("table", metavar="SCORES",
                   help="long table (.csv, .tsv, .jsonl, .json, .parquet; .gz for text): one row per (document, "
                        "segment, system), one column per metric")
    p.add_argument("--baseline", required=True, metavar="SYS", help="the baseline system (value of the system column)")
    add_score_reader(p, "SCORES")
    c = p.add_argument_group("columns")
    c.add_argument("--document-col", dest="document", default="document_id", metavar="NAME",
                   help="document id column")
    c.add_argument("--segment-col", dest="segment", default="segment_id", metavar="NAME",
                   help="segment id column (absent with the default name: one row per document and system)")
    c.add_argument("--system-col", dest="system", default="system", metavar="NAME", help="system column")
    c.add_argument("--score-col", dest="metrics", action="append",
                   metavar="NAME[,NAME]", help="score column(s), one per metric: repeatable or a comma list; one "
                                               "table per metric (default: score)")
    add_deprecated_alias(c, "--metric-col", "--score-col", "metrics", append=True, metavar="NAME[,NAME]")
    c.add_argument("--lower-is-better", action="append", default=None, metavar="NAME[,NAME]",
                   help="metric columns where lower is better (e.g. ter): flips better/worse")
    c.add_argument("--exclude-system", action="append", default=[], metavar="NAME",
                   help="leave a system out (repeatable)")
    k = p.add_argument_group("corpus metrics (from sacrebleu's sufficient statistics; docs/stats-compare.md)")
    k.add_argument("--corpus-metric", action="append", default=None, metavar="NAME[,NAME]",
                   help="bleu, chrf and/or ter computed on the corpus (sums of per-segment statistics, not a mean of "
                        "segment scores) from --hypothesis-col and --reference-col; resampled by --unit like the "
                        "other metrics (segment = sacrebleu --paired-bs/--paired-ar); needs sacrebleu installed")
    k.add_argument("--tokenize", default=None, metavar="NAME",
                   help="BLEU's sacrebleu tokenizer: 13a, intl, zh, ja-mecab, ko-mecab, char, none, ... (default: 13a; "
                        "with --reader mtme and a Chinese, Japanese or Korean target, say which one: 13a does not split "
                        "such text into words, and WMT's BLEU uses zh / ja-mecab / ko-mecab)")
    k.add_argument("--hypothesis-col", default="hypothesis", metavar="NAME",
                   help="system output text column (--reader mtme: read from system-outputs/)")
    k.add_argument("--reference-col", action="append", default=None, metavar="NAME",
                   help="reference text column (default: reference); repeat it to score against several references "
                        "at once, as sacrebleu does (--reader mtme: a REF of references/LP.REF.txt, e.g. --reference-col "
                        "refA --reference-col refB; default the first REF)")
    t = p.add_argument_group("tests")
    t.add_argument("--unit", choices=("document", "segment"), default="document",
                   help="resampling / swapping unit")
    t.add_argument("--test", choices=("bootstrap", "ar", "both"), default="both",
                   help="which p-values (bootstrap CIs are always reported); with both, a system must pass both")
    t.add_argument("--n-boot", type=int, default=1000, metavar="B", help="bootstrap resamples (sacrebleu: 1000)")
    t.add_argument("--n-ar", type=int, default=10_000, metavar="T", help="approximate-randomization trials "
                                                                         "(sacrebleu: 10000)")
    t.add_argument("--seed", type=int, default=0, metavar="N", help="seed of both generators")
    t.add_argument("--correction", choices=("holm", "bonferroni", "none"), default="holm",
                   help="multiple-comparison correction across the compared systems (per metric)")
    t.add_argument("--confidence", type=float, default=0.95, metavar="P", help="confidence level of the CIs, in (0, 1)")
    t.add_argument("--alpha", type=float, default=0.05, metavar="P", help="significance level (after correction)")
    t.add_argument("--threads", type=int, default=None, metavar="N",
                   help="OpenMP threads (results do not depend on it; default: $OMP_NUM_THREADS, else all cores)")
    from ._common import add_budget

    add_budget(p)
    o = p.add_argument_group("output")
    add_result_output(o, FORMATS)
    o.add_argument("--fail-on", choices=("worse", "not-better"), default=None,
                   help="exit 1 when a system is significantly worse than the baseline (worse) or when a system is "
                        "not significantly better (not-better)")
    o.add_argument("-q", "--quiet", action="store_true", help="accepted for symmetry with the other subcommands")
    p.set_defaults(func=run_compare)


# --------------------------------------------------------------------------- handler


def run_compare(args: argparse.Namespace) -> int:
    from ..stats import TableColumns
    from ..stats.compare import CompareTests, compare_systems

    target = check_result_output(args, [args.table])  # before anything is read
    tests = CompareTests(unit=args.unit, test=args.test, n_ar=args.n_ar, correction=args.correction,
                         alpha=args.alpha, confidence=args.confidence)
    corpus = _append_csv(getattr(args, "corpus_metric", None))
    lower_is_better = _append_csv(args.lower_is_better)
    if corpus:  # an unknown name is D835 before any work (it was a KeyError, D999, after the segment metrics)
        from ..stats.corpus import check_corpus_flags

        lower_is_better = check_corpus_flags(corpus, _append_csv(args.metrics), lower_is_better)
    if args.tokenize is not None:  # BLEU's tokenizer: refused where nothing would use it, checked before any work
        from ..errors import DDPUsageError
        from ..stats.corpus import check_tokenize

        if "bleu" not in corpus:
            raise DDPUsageError(f"--tokenize {args.tokenize}: the tokenizer of corpus BLEU; give --corpus-metric bleu "
                                "or leave --tokenize out", code="D953")
        check_tokenize(args.tokenize)
    res = None
    if not corpus or args.metrics:
        res = compare_systems(
            score_input(args, args.table, _append_csv(args.metrics) or ["score"], layout="wide"), args.baseline,
            metrics=_append_csv(args.metrics) or ["score"],
            lower_is_better=lower_is_better, exclude_systems=args.exclude_system, tests=tests,
            columns=TableColumns(document=args.document, segment=args.segment or None, system=args.system),
            options=resample_options(args),
        )
    if corpus:
        res = _with_corpus(args, corpus, res)
    for w in res.warnings:  # recorded in the JSON (warnings) as well
        stderr_line(f"ddp stats compare: warning: {w}")
    payload = res.to_dict()
    passed = True
    bad: list[dict[str, Any]] = []
    if args.fail_on:
        passed, bad = res.gate(args.fail_on)
        payload["fail_on"] = args.fail_on
        payload["passed"] = passed
        payload["signature"]["fail_on"] = args.fail_on  # gate settings belong to the reproducible run
    out = render(res, args.output_format, payload)
    if target is not None:
        write_result(target, out, payload.get("signature"), "ddp stats compare")
    else:
        _print(out)
    if not passed:
        stderr_line(gate_message(res, args.fail_on, bad))
        return 1
    return 0


def _with_corpus(args: argparse.Namespace, corpus: list[str], res: Any) -> Any:
    """The corpus-metric comparisons (:func:`ddpcore.stats.corpus.compare_corpus_table`), merged into ``res``."""
    import dataclasses

    from ..stats.corpus import CorpusColumns, CorpusTest, compare_corpus_table

    how = CorpusTest(unit=args.unit, test=args.test, n_boot=args.n_boot, n_ar=args.n_ar, seed=args.seed,
                     correction=args.correction, confidence=args.confidence, alpha=args.alpha)  # checked first (D311)
    reference = target = None
    ref_cols = tuple(args.reference_col or ("reference",))
    if args.reader == "mtme":
        from ..io.mtme import REFERENCE, read_mtme_scores, resolve_mtme
        from ..io.tables import name_frame

        ms = resolve_mtme(args.table, lp=args.lp[0] if args.lp else None)
        refs = list(ms.references())
        given = args.reference_col is not None and ref_cols != (REFERENCE,)
        names = [refs[0] if refs and c == REFERENCE else c for c in ref_cols] if given else None
        mt = read_mtme_scores(args.table, lp=args.lp[0] if args.lp else None, human=[], metrics=(), with_text=True,
                              reference=names, warn=lambda m: stderr_line(f"ddp stats compare: note: {m}"))
        table: Any = name_frame(mt.table, f"{args.table} (--reader mtme)")  # messages name the test set
        target = mt.ms.lp.rpartition("-")[2].split("_")[0].lower()  # en-zh -> zh, en-ko_KR -> ko
        used = names or refs[:1]
        reference = ", ".join(f"references/{mt.ms.lp}.{r}.txt" for r in used)
        ref_cols = tuple(names) if names is not None and len(names) > 1 else (REFERENCE,)
        if len(refs) > len(used):  # what is measured: say which reference(s) the scores are against
            stderr_line(f"ddp stats compare: note: {mt.ms.root}: {len(refs)} references ({', '.join(refs)}); corpus "
                        f"metrics use {reference} (recorded in the signature; repeat --reference-col REF to score "
                        "against several)")
    else:  # wide: one row per (document, segment, system) whatever score columns the reader has
        table = score_input(args, args.table, layout="wide")
    columns = CorpusColumns(hypothesis=args.hypothesis_col,
                            reference=ref_cols[0] if len(ref_cols) == 1 else ref_cols, document=args.document,
                            segment=args.segment, system=args.system)
    tokenize, tok_note = _tokenize(args, corpus, target)
    cres = compare_corpus_table(table, args.baseline, corpus, columns=columns, how=how,
                                exclude_systems=args.exclude_system, tokenize=tokenize)
    if reference is not None:
        cres = dataclasses.replace(cres, signature={**cres.signature, "reference_file": reference})
    if tok_note:  # BLEU with 13a on text it does not split into words: said and recorded
        cres = dataclasses.replace(cres, signature={**cres.signature, "tokenize_note": tok_note},
                                   warnings=(*cres.warnings, tok_note))
    ignored = [flag for flag, value in (("--threads", args.threads), ("--max-memory", args.max_memory),
                                        ("--max-seconds", args.max_seconds)) if value is not None]
    if ignored:  # the corpus path has no budget check and no OpenMP kernel: say so rather than seem to obey
        note = (f"{', '.join(ignored)}: not applied to the corpus metrics ({', '.join(corpus)}), which run without a "
                "budget check or threads" + ("; they apply to the --score-col metrics" if res is not None else ""))
        cres = dataclasses.replace(cres, signature={**cres.signature, "ignored_options": ignored},
                                   warnings=(*cres.warnings, note))
    if res is None:
        return cres
    sig = dict(res.signature, corpus=cres.signature)
    return dataclasses.replace(res, metrics=[*res.metrics, *cres.metrics],
                               comparisons={**res.comparisons, **cres.comparisons}, signature=sig,
                               warnings=tuple(dict.fromkeys([*res.warnings, *cres.warnings])))


def _tokenize(args: argparse.Namespace, corpus: list[str], target: str | None) -> tuple[str, str]:
    """BLEU's tokenizer (``--tokenize``, else 13a) and, when BLEU runs on a target language 13a does not split
    into words (``--reader mtme``: the language pair names it) without ``--tokenize``, the warning that says so."""
    from ..stats.corpus import DEFAULT_TOKENIZE, LANGUAGE_TOKENIZE

    if args.tokenize is not None:
        return args.tokenize, ""
    if "bleu" in corpus and target in LANGUAGE_TOKENIZE:
        return DEFAULT_TOKENIZE, (f"corpus BLEU on a {target} target uses the 13a tokenizer, which does not split "
                                  f"{target} text into words: scores and p-values are not those of sacrebleu "
                                  f"-l xx-{target} or WMT (tokenizer {LANGUAGE_TOKENIZE[target]}); give --tokenize "
                                  f"{LANGUAGE_TOKENIZE[target]} (or --tokenize 13a to keep this and silence the warning)")
    return DEFAULT_TOKENIZE, ""


def gate_message(res: Any, fail_on: str, bad: list[dict[str, Any]]) -> str:
    """One line: which systems failed the gate and by how much."""
    what = "significantly worse than" if fail_on == "worse" else "not significantly better than"
    items = [f"{r['system']} ({r['metric']} {r['diff']:+.4g}, p={r['p_value']:.3g})" for r in bad[:10]]
    more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
    return (f"ddp stats compare: --fail-on {fail_on}: {len(bad)} system/metric pair(s) {what} baseline "
            f"'{res.baseline}': {', '.join(items)}{more}")


def _print(out: str) -> None:
    import os

    try:
        print(out)
        sys.stdout.flush()
    except BrokenPipeError:  # `ddp stats compare ... | head`: the reader left
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


# --------------------------------------------------------------------------- rendering


def _fmt(x: Any, nd: int = 3) -> str:
    return fmt_number(x, nd, missing="—")


def _fmt_p(x: Any) -> str:
    if x is None:
        return "—"
    return f"{x:.4f}" if x >= 1e-4 else f"{x:.1e}"


def _columns(res: Any) -> list[tuple[str, str]]:
    """(key, header) of the table columns, in order."""
    cols = [("system", "system"), ("score", "score"), ("ci", "±CI"), ("diff", "Δ vs baseline"),
            ("diff_ci", "Δ CI")]
    if res.test in ("bootstrap", "both"):
        cols.append(("p_bootstrap_adj", "p (bs)"))
    if res.test in ("ar", "both"):
        cols.append(("p_ar_adj", "p (ar)"))
    cols.append(("verdict", "verdict"))
    return cols


def _cells(r: dict[str, Any], cols: list[tuple[str, str]]) -> list[str]:
    out = []
    for key, _ in cols:
        if key == "diff_ci":
            out.append("" if r["is_baseline"] else f"[{_fmt(r['diff_ci_low'])}, {_fmt(r['diff_ci_high'])}]")
        elif key == "diff":
            out.append("" if r["is_baseline"] else f"{r['diff']:+.3f}")
        elif key.startswith("p_"):
            out.append("" if r["is_baseline"] else _fmt_p(r.get(key)))
        elif key == "verdict":
            out.append("baseline" if r["is_baseline"] else r["verdict"])
        else:
            out.append(_fmt(r[key]))
    return out


def _title(res: Any, metric: str) -> str:
    comp = res.comparisons[metric]
    corr = {"holm": "Holm", "bonferroni": "Bonferroni", "none": "uncorrected"}[res.correction]
    return (f"{metric} ({'lower' if comp.lower_is_better else 'higher'} is better) vs baseline {res.baseline}: "
            f"{res.unit} unit ({res.n_units} units, {res.n_segments} segments), {100 * res.confidence:g}% CIs, "
            f"p-values {corr}, alpha {res.alpha:g}")


def render(res: Any, fmt: str, payload: dict[str, Any] | None = None) -> str:
    """The result as ``json`` | ``text`` | ``tsv`` | ``markdown`` | ``latex``."""
    import json

    payload = payload if payload is not None else res.to_dict()
    if fmt == "json":
        from ..signature import json_safe

        return json.dumps(json_safe(payload), indent=2, allow_nan=False)  # NaN as null, never the NaN token
    cols = _columns(res)
    if fmt == "tsv":
        from ..io.tables import tsv_line

        keys = list(res.rows()[0])
        lines = [f"# signature: {res.signature_line}", tsv_line(keys)]
        for r in res.rows():
            lines.append(tsv_line([r[k] for k in keys]))
        if payload.get("fail_on"):  # the gate's verdict, as the other formats record it
            lines.append(f"# gate --fail-on {payload['fail_on']}: {'passed' if payload['passed'] else 'FAILED'}")
        return "\n".join(lines)
    blocks = []
    for m in res.metrics:
        rows = res.comparisons[m].rows()
        cells = [_cells(r, cols) for r in rows]
        heads = [h for _, h in cols]
        if fmt == "text":
            from ..io.tables import text_cell, text_pad, text_width

            cells = [[text_cell(x) if i == 0 else x for i, x in enumerate(c)] for c in cells]  # a name on one line
            widths = [max(text_width(h), *(text_width(c[i]) for c in cells)) for i, h in enumerate(heads)]
            line = lambda vals: "  ".join(text_pad(v, w, "<" if i == 0 else ">")  # noqa: E731
                                          for i, (v, w) in enumerate(zip(vals, widths)))
            blocks.append("\n".join([text_cell(_title(res, m)), line(heads), line(["-" * w for w in widths])]
                                    + [line(c) for c in cells]))
        elif fmt == "markdown":
            from ..io.tables import md_cell

            align = ["---"] + ["---:"] * (len(heads) - 2) + ["---"]
            md = [f"**{md_cell(m)}** — {_md(_title(res, m).rsplit(': ', 1)[1])}", "",
                  "| " + " | ".join(heads) + " |", "|" + "|".join(align) + "|"]
            for c, r in zip(cells, rows):
                c = [md_cell(x) if i == 0 else _md(x) for i, x in enumerate(c)]  # the system name as written
                if r["verdict"] in ("better", "worse"):
                    c[0] = f"**{c[0]}**"
                md.append("| " + " | ".join(c) + " |")
            blocks.append("\n".join(md))
        elif fmt == "latex":
            spec = "l" + "r" * (len(heads) - 2) + "l"
            tex = [f"% {' '.join(_title(res, m).splitlines())}", f"\\begin{{tabular}}{{{spec}}}", "\\toprule",
                   " & ".join(_tex(h) for h in heads) + " \\\\", "\\midrule"]
            for c, r in zip(cells, rows):
                c = [_tex(x, i == 0) for i, x in enumerate(c)]
                if r["verdict"] in ("better", "worse"):
                    c[0] = f"\\textbf{{{c[0]}}}"
                tex.append(" & ".join(c) + " \\\\")
            tex += ["\\bottomrule", "\\end{tabular}"]
            blocks.append("\n".join(tex))
        else:  # pragma: no cover - argparse restricts the choices
            raise ValueError(fmt)
    sig = res.signature_line
    from ..io.tables import md_code

    tail = {"text": f"signature: {sig}", "markdown": f"Signature: {md_code(sig)}", "latex": f"% signature: {sig}"}[fmt]
    if payload.get("fail_on"):
        status = "passed" if payload["passed"] else "FAILED"
        tail += ({"text": "\n", "markdown": "  \n", "latex": "\n% "}[fmt] + f"gate --fail-on {payload['fail_on']}: {status}")
    return "\n\n".join(blocks + [tail])


def _md(s: str) -> str:
    return s.replace("|", "\\|")


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
        "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "Δ": r"$\Delta$", "±": r"$\pm$",
        "—": "--",
        # as written in any font encoding (OT1 prints < > | as inverted marks and a dash; babel's ngerman makes
        # '"' active); tex_cell writes a line break in a name as the two characters \n (a bare one would end a
        # % comment line, and a blank line inside a cell is a paragraph break tabular refuses)
        "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", '"': r"\textquotedbl{}"}


def _tex(s: str, row_start: bool = False) -> str:
    from ..io.tables import tex_cell

    return tex_cell(s, _TEX, row_start=row_start)
