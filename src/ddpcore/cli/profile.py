"""``ddp profile``: per-segment DDP of a test set, a per-domain summary, Parquet output."""
from __future__ import annotations

import argparse

from ._common import (HelpFormatter, add_extraction_options, add_reader_options, add_segment_columns, bundled_default,
                      reader_kwargs, stderr_line)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile",
        help="compute per-segment discourse dependency (DDP)",
        description=(
            "Compute per-segment discourse dependency (DDP, in sentences) of source documents. "
            "INPUT is a JSONL/CSV/TSV/JSON/Parquet table with document id, segment id, source text and "
            "optional domain columns, or a folder of .txt documents (blank line = segment boundary); "
            "--reader wmt24|wmt25|lines reads the WMT24 .txt+.docs, WMT25 documents JSONL and aligned "
            "text formats (see docs/readers.md). "
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
                        "PATH.signature.json, Parquet in its metadata. With --engine ray, a folder (DIR/, or a "
                        "pyarrow.fs URI such as s3://bucket/run/) keeps the run's Parquet dataset there: one part per "
                        "batch and table, a _SUCCESS manifest with the signature")
    p.add_argument("--anchors", default=None, metavar="PATH", help="also write the anchors table (one row per anchor)")
    p.add_argument("--sentences", default=None, metavar="PATH", help="also write per-sentence DDP")
    p.add_argument("--documents", default=None, metavar="PATH",
                   help="also write one row per document: document id, domain, n_segments, n_sentences, max_ddp, "
                        "mean_ddp, the shares of segments with DDP >= 1, 5 and 15, max_ddp_certified and "
                        "mean_ddp_certified")
    p.add_argument("--stdout-format", choices=("jsonl", "csv", "tsv", "json"), default="jsonl",
                   help="format of the segment table with -o - (no signature sidecar)")
    add_reader_options(p)
    add_segment_columns(p)
    add_extraction_options(p)
    p.add_argument("--summary-by", default=None, metavar="COL", help="input column to summarise by (default: the domain column)")
    p.add_argument("-f", "--format", choices=("text", "json"), default="text", help="summary output format (on stdout; on stderr with -o -)")
    r = p.add_argument_group("long runs")
    r.add_argument("--resume", action="store_true",
                   help="continue an interrupted run of the same command from its last finished batch (the journal "
                        "is kept in .OUTPUT.ddp-work/ beside the segment output); refused if a setting differs. "
                        "After a finished run there is nothing recorded to continue and it starts over, except "
                        "with --engine ray -o DIR/: the finished dataset of the same settings and input is kept "
                        "as the output (nothing to resume)")
    r.add_argument("--progress", choices=("auto", "bar", "plain", "none"), default="auto",
                   help="progress on stderr: bar (segments/s, words/s, ETA), plain (one line every 5 s, for logs "
                        "and CI), none; auto = bar on a terminal, else none")
    r.add_argument("--shard", type=_shard_arg, default=None, metavar="I/N",
                   help="profile only the documents hashed to shard I of N (0-based; for job arrays such as Slurm); "
                        "outputs must be .parquet; combine the N shards with `ddp merge`")
    r.add_argument("--batch-chars", type=int, default=None, metavar="N",
                   help="characters of text per batch of whole documents (memory and resume granularity; default: "
                        "1000000 with the local engine, about four batches per actor with --engine ray)")
    c = p.add_argument_group("parse cache").add_mutually_exclusive_group()
    c.add_argument("--cache", default=None, metavar="DIR",
                   help="parse cache folder: lines parsed by an earlier run with the same pipeline are read from it, "
                        "not parsed again (default: $DDPCORE_CACHE, else $XDG_CACHE_HOME/ddpcore, else "
                        "~/.cache/ddpcore; see `ddp cache info`)")
    c.add_argument("--no-cache", action="store_true", help="parse every line, read and store nothing in the cache")
    e = p.add_argument_group("engine")
    e.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local: this machine (-j processes); ray: the same stages on Ray actors, one spaCy pipeline "
                        "per actor, -j actors (auto = the cluster's CPUs), same output; needs "
                        "the [ray] extra (pip install 'ray[data]==2.60.0'; from a clone pip install '.[ray]'); the workers read the input and write their parts on storage every "
                        "node sees (the input, the output's folder and --cache must be there); --resume works, "
                        "--shard does not")
    e.add_argument("--start-method", choices=("fork", "spawn"), default=None,
                   help="how -j N > 1 starts its worker processes (local engine): fork = load the spaCy pipeline "
                        "once and fork the workers from this process (they share its memory and start at once; "
                        "the default on Linux), spawn = fresh processes that each load the pipeline (the default "
                        "elsewhere). Default: $DDPCORE_START_METHOD if set")
    e.add_argument("--address", default=None, metavar="ADDR",
                   help="Ray cluster to run on with --engine ray (HOST:6379, ray://HOST:10001 or auto; default "
                        "$RAY_ADDRESS, else a local Ray on the available cores)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output (same as --progress none)")
    p.add_argument("--profile-time", action="store_true",
                   help="after the run, print to stderr the seconds spent in each spaCy component (summed over the "
                        "parse processes) and in each ddpcore stage (read, parse, sentences, extract, link, "
                        "distances, assemble, write): what a --pipeline preset buys on your text (local engine)")
    p.set_defaults(func=run)


def _shard_arg(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"[D173] expected I/N such as 0/4 (shard I of N, 0-based), not {text!r}") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"[D173] expected 0 <= I < N (shard I of N, 0-based; e.g. 0/{max(n, 2)}), "
                                         f"not {text!r}")
    return i, n


def _mtme_source(path: str) -> str:
    """``--reader mtme`` INPUT given as a language-pair path ``FOLDER/LP`` (``wmt23/en-de``, which names no
    file or folder; ``--help`` and docs/readers.md offer it): the run reads and records ``FOLDER/sources/LP.txt``,
    the same test set, so that the input checks of a run (resume journal, shard digest), which need a path that
    exists, see the source file. A test-set folder or ``sources/LP.txt`` is kept as given; any other missing
    path is the reader's error (D820 not a test set, D821 no such language pair), before any work."""
    from pathlib import Path

    from ..io.fs import is_uri
    from ..io.mtme import resolve_mtme

    p = Path(path)
    if is_uri(str(path)) or p.exists() or p.is_symlink():
        return path
    return str(resolve_mtme(p).source)


def _ray_dataset(args: argparse.Namespace, options: list, source: object) -> list | None:
    """``-o DIR/`` (or a URI) with ``--engine ray``: the dataset target, alone (D868 for other outputs);
    None for a file output."""
    from ..errors import DDPUsageError
    from ..io.fs import is_uri

    out = str(args.output)
    if not (out.endswith("/") or is_uri(out)):
        return None
    if args.engine != "ray":
        raise DDPUsageError(f"-o/--output {out}: a dataset folder (or URI) is written by --engine ray only; give the "
                            "local engine a file name (e.g. ddp.parquet)", code="D868")
    others = [opt for opt, value in options[1:] if value]
    if others:
        raise DDPUsageError(f"{others[0]}: with -o {out} (a dataset) the anchors and sentences are parts of the dataset; "
                            f"drop {others[0]}, or write -o to a file", code="D868")
    from ..engines.ray_engine import dataset_target

    return [dataset_target(out, "-o/--output", (source, args.docs))]


def run(args: argparse.Namespace) -> int:
    import contextlib
    import json
    import shlex
    import sys

    from ..pipeline import stage_times
    from ._common import resolve_rules
    from ..engines import get_engine
    from ..engines.base import RunInterrupted, RunOptions
    from ..engines.local import Settings
    from ..errors import DDPUsageError
    from ..io.outputs import check_outputs
    from ..io.segments import SegmentColumns

    source = args.input if args.input is not None else bundled_default()
    if args.reader == "mtme" and args.input is not None:
        source = _mtme_source(source)
    if args.batch_chars is not None and args.batch_chars < 1:
        raise DDPUsageError("--batch-chars must be at least 1", code="D172")
    engine = get_engine(args.engine)
    if args.profile_time and engine.name != "local":
        raise DDPUsageError("--profile-time times the local engine's processes; drop it or use --engine local",
                            code="D211")
    # every output is checked before the input is read or a pipeline loaded
    options = [("-o/--output", args.output), ("--anchors", args.anchors), ("--sentences", args.sentences),
               ("--documents", args.documents)]
    for option, value in options[1:]:  # stdout carries -o's table or the summary, never a second table
        if value == "-":
            raise DDPUsageError(f"{option}: give a file name; only -o can write to stdout", code="D135")
    checked = _ray_dataset(args, options, source) or \
        check_outputs(options, [source, args.docs], stdout_format=args.stdout_format, sidecars=True)
    by_option = {t.option: t for t in checked}
    targets = {role: by_option.get(opt)
               for role, (opt, _) in zip(("segments", "anchors", "sentences", "documents"), options)}
    cols = SegmentColumns(args.document_col, args.segment_col, args.text_col, args.domain_col)
    by = args.summary_by or args.domain_col
    progress = "none" if args.quiet else args.progress
    if progress == "auto":
        progress = "bar" if sys.stderr.isatty() else "none"
    argv = [a for a in sys.argv[1:] if a != "--resume"]

    def warn(message: str) -> None:  # one "ddp profile: warning: ..." line on stderr
        stderr_line(f"ddp profile: warning: {message}")

    run_options = RunOptions(
        cols=cols, settings=Settings(distance=args.distance, sentence_unit="sentence",
                                    rules=resolve_rules(args.rules, args.certify_model)),
        pipeline=args.pipeline, n_process=args.n_process, batch_size=args.batch_size, batch_chars=args.batch_chars,
        progress=progress, summary_by=by, source_name=str(source), warn=warn, **reader_kwargs(args),
        resume=args.resume, resume_hint="rerun with --resume: ddp " + " ".join(shlex.quote(a) for a in argv) + " --resume",
        shard=args.shard, start_method=args.start_method, address=args.address, quiet=args.quiet,
        parse_wrapper=None if args.no_cache else _cache_wrapper(args.cache, warn, checked, [source, args.docs]))
    engine.check(run_options)  # e.g. --resume with Ray (D193), Ray missing (D190): before the input is read
    timing = stage_times.record() if args.profile_time else contextlib.nullcontext()
    try:
        with timing as times:
            report = engine.run(source, targets, run_options)
    except RunInterrupted as exc:
        print(f"ddp profile: {exc.message}", file=sys.stderr)
        if engine.name == "ray":
            # Ray is already shut down and nothing is left to write; leave now: the interpreter's own
            # teardown can abort inside Ray's core worker (exit -6 instead of 143/130, seen on a CI run)
            import os

            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(exc.exit_code)
        return exc.exit_code
    for note in report.notes:
        if not note.startswith("resuming"):
            stderr_line(f"ddp profile: note: {note}")
    signature = report.signature
    names = [str(t.path) if t.path is not None else "<stdout>" for t in targets.values() if t is not None]
    summary = report.summary
    if summary is None:  # an engine that returns the segment frame, not the streamed summary
        from ..api import summarize

        summary = summarize(report.summary_frame, by=by, document_col=cols.document)
    from ..io.tables import one_line
    from ..pipeline.summary import total_note

    note = total_note(summary, by)
    if note:  # a group named 'all': the total row is '(all)', said here and named in the JSON's summary_total
        stderr_line(f"ddp profile: note: {note}")
    if args.format == "json":
        text = json.dumps({"summary": summary.to_dicts(), "summary_by": by,
                           "summary_total": summary["group"][-1] if summary.height else None, "outputs": names,
                           "signature": signature}, indent=2)
    else:
        text = (_format_summary(summary, by) +
                f"\n\nwrote {one_line(', '.join(names))}  "
                f"({report.n_segments} segments, {report.n_anchors} anchors; distance={signature['distance']}, "
                f"pipeline {signature['pipeline_name']} {signature['pipeline_version']}, rules {signature['rules']}"
                + ("; c. columns: ddp_certified, the certified lower bound" if "mean_ddp_certified" in summary.columns
                   else "") + ")")
    if targets["segments"] is not None and targets["segments"].stdout:  # the table owns stdout
        print(text, file=sys.stderr)
    else:
        _write_stdout(lambda fh: fh.write((text + "\n").encode()))
    if args.profile_time:
        print(stage_times.format_times(times, n_process=signature.get("n_process")), file=sys.stderr)
    return 0


def _cache_wrapper(cache: str | None, warn, checked: list, inputs: list):  # type: ignore[no-untyped-def]
    """The parse cache's ``parse_wrapper`` (its folder checked against the outputs and inputs now);
    imported only for a run that uses the cache (``--no-cache`` never imports it)."""
    from ..pipeline.cache import cache_wrapper

    return cache_wrapper(cache, warn=warn, outputs=[p for t in checked for p in (t.path, t.sidecar)], inputs=inputs)


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
    from ..io.tables import text_cell, text_pad, text_width

    by = text_cell(by)
    groups = [text_cell(g) for g in summary["group"].to_list()]  # a group name on one line, aligned by its width
    w = max([text_width(by), *map(text_width, groups)]) + 2
    cert = "mean_ddp_certified" in summary.columns  # the certified lower bound's figures, after ddp's
    header = (f"{text_pad(by, w)}{'docs':>6}{'segments':>10}{'mean':>9}{'median':>8}{'p90':>8}{'max':>6}{'zero%':>8}"
              + (f"{'c.mean':>9}{'c.median':>9}{'c.p90':>8}{'c.max':>6}{'c.zero%':>8}" if cert else ""))
    lines = [f"DDP per {by} (sentences)", header, "-" * text_width(header)]

    def figures(r: dict, suffix: str = "", med: int = 8) -> str:  # type: ignore[type-arg]
        if r[f"mean_ddp{suffix}"] is None:  # no DDP value in the group (null DDPs only)
            return f"{'-':>9}{'-':>{med}}{'-':>8}{'-':>6}{'-':>8}"
        return (f"{r[f'mean_ddp{suffix}']:>9.1f}{r[f'median_ddp{suffix}']:>{med}.1f}{r[f'p90_ddp{suffix}']:>8.1f}"
                f"{r[f'max_ddp{suffix}']:>6}{100 * r[f'zero_ddp{suffix}_share']:>7.1f}%")

    for g, r in zip(groups, summary.iter_rows(named=True)):  # one row per group
        lines.append(f"{text_pad(g, w)}{r['documents']:>6}{r['segments']:>10}{figures(r)}"
                     + (figures(r, "_certified", 9) if cert else ""))
    return "\n".join(lines)
