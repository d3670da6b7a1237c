"""``ddp cache info`` and ``ddp cache clear``: the parse cache of ``ddp profile``.

Errors: D180 the cache path is not a folder, D181 ``--pipeline`` names no folder of the cache (a
folder name, or the folder ``ddp profile --pipeline NAME`` parses into: presets and aliases resolved the
same way),
D182 a cache folder cannot be removed, D750 the folder is not a ddpcore parse cache (nothing removed).
"""
from __future__ import annotations

import argparse

from ._common import HelpFormatter, stderr_line


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cache",
        help="show or clear the parse cache",
        description=(
            "The parse cache keeps the spaCy parse of every line `ddp profile` has parsed, per pipeline, so that a "
            "re-run with other --rules/--distance, or a corpus sharing lines with an earlier one, parses nothing "
            "twice. Location: --cache DIR, else $DDPCORE_CACHE, else $XDG_CACHE_HOME/ddpcore, else ~/.cache/ddpcore."
        ),
        formatter_class=HelpFormatter,
    )
    csub = p.add_subparsers(dest="cache_command", metavar="ACTION")
    info = csub.add_parser("info", help="location, cached lines, size, per pipeline", formatter_class=HelpFormatter,
                           description="Print the cache location, the number of cached lines (parse units), "
                                       "shards and bytes, overall and per pipeline folder.")
    info.add_argument("--cache", default=None, metavar="DIR", help="cache folder (default: the user cache folder)")
    info.add_argument("-f", "--format", choices=("text", "json"), default="text", help="output format")
    info.set_defaults(func=run_info)
    clear = csub.add_parser("clear", help="remove cached parses", formatter_class=HelpFormatter,
                            description="Remove the cached parses (every pipeline, or one with --pipeline). "
                                        "Only what ddpcore wrote is removed: the pipeline folders it "
                                        "marked (or, for caches older than the marker, folders whose name, "
                                        "info.json and shard checksums match its layout), and in them only its own "
                                        "files; a folder that is not a parse cache is refused (D750).")
    clear.add_argument("--cache", default=None, metavar="DIR", help="cache folder (default: the user cache folder)")
    clear.add_argument("--pipeline", default=None, metavar="NAME",
                       help="remove only the parses of this pipeline, named as for ddp profile (a preset, or an "
                            "installed name or path: the one folder its runs use; presets that run the same "
                            "configuration, e.g. default, sm and en_core_web_sm, share it, fast has its own), or a "
                            "folder as listed by `ddp cache info`; a pipeline that is not installed: every folder "
                            "of that pipeline name")
    clear.add_argument("-f", "--format", choices=("text", "json"), default="text", help="output format")
    clear.set_defaults(func=run_clear)
    p.set_defaults(func=_no_action, cache_parser=p)


def _no_action(args: argparse.Namespace) -> int:
    args.cache_parser.print_help()
    return 2


def _root(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from ..pipeline.cache import blocked_folder, resolve_cache
    from ..errors import DDPUsageError

    root = resolve_cache(args.cache if args.cache is not None else True)
    assert root is not None
    # a file, a file above it, or a link to nothing: `ddp profile` could not use it either (D870)
    blocked = None if root.is_dir() else ("" if root.exists() else blocked_folder(root))
    if blocked is not None:
        where = f"{root} ({blocked})" if blocked else root
        raise DDPUsageError(f"cache path {where} is not a folder; pass a folder with --cache DIR", code="D180")
    return root


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} TB"  # pragma: no cover


def run_info(args: argparse.Namespace) -> int:
    import json

    from ..config import cache_dir_source
    from ..pipeline.cache import cache_summary

    root = _root(args)
    summary = cache_summary(root)
    summary["source"] = "--cache" if args.cache is not None else cache_dir_source()
    if args.format == "json":
        print(json.dumps(summary, indent=2))
        return 0
    state = ("" if summary["is_cache"] else ", not a ddpcore parse cache: `ddp cache clear` refuses it"
             ) if summary["exists"] else ", not created yet"
    lines = [f"parse cache: {root}  ({summary['source']}{state})",
             f"{summary['units']:,} cached lines in {summary['shards']:,} shards, {_size(summary['bytes'])}"]
    for pl in summary["pipelines"]:
        name = f"{pl['pipeline_name'] or '?'} {pl['pipeline_version'] or ''}".strip()
        bad = f", {pl['unreadable_shards']} unreadable" if pl["unreadable_shards"] else ""
        foreign = ("; its marker names another pipeline configuration (renamed or copied by hand?): runs do not "
                   "use it, `ddp cache clear --pipeline FOLDER` removes it") if pl.get("foreign") else ""
        lines.append(f"  {pl['folder']}: {name}, spaCy {pl['spacy'] or '?'}, components "
                     f"{','.join(pl['components'] or []) or '?'}: {pl['units']:,} lines, {pl['shards']:,} shards"
                     f"{bad}, {_size(pl['bytes'])}{foreign}")
    print("\n".join(lines))
    return 0


def run_clear(args: argparse.Namespace) -> int:
    import json

    from ..pipeline.cache import clear_cache
    from ..errors import DDPUsageError

    root = _root(args)
    try:
        report = clear_cache(root, args.pipeline)
    except OSError as exc:
        raise DDPUsageError(f"cannot remove cached parses under {root}: {exc.strerror or exc}", code="D182") from None
    sel = report.selection
    if sel is not None and report.removed == 0:
        raise DDPUsageError(f"--pipeline {args.pipeline}: no such pipeline folder in the cache {root}: "
                            f"{_not_found(sel, report.present)}; `ddp cache info` lists them", code="D181")
    if report.kept:
        names = ", ".join(str(p.relative_to(root)) for p in report.kept[:5])
        more = f" and {len(report.kept) - 5} more" if len(report.kept) > 5 else ""
        stderr_line(f"ddp cache clear: warning: kept {len(report.kept)} entr{'y' if len(report.kept) == 1 else 'ies'} "
                    f"ddpcore did not write (or that fail their checksum) in the cache's pipeline folders: {names}{more}")
    if report.busy:
        stderr_line(f"ddp cache clear: warning: {', '.join(report.busy)}: a run stored new parses there during the "
                    "clear (a run is using the cache); they stay")
    if args.format == "json":
        out: dict = {"dir": str(root), "removed_folders": report.removed, "bytes_freed": report.freed,
                     "kept": [str(p) for p in report.kept], "folders": report.folders, "busy": report.busy}
        if sel is not None:
            out["pipeline"] = dict(sel.to_dict(), note=_what(sel, report))
        print(json.dumps(out))
    else:
        what = f": {_what(sel, report)}" if sel is not None else ""
        print(f"removed {report.removed} pipeline folder(s) from {root} ({_size(report.freed)} freed){what}")
    return 0


def _others(sel, present: list[str]) -> list[str]:  # type: ignore[no-untyped-def]
    """The cache's folders of the same pipeline name as the selected folder, not selected."""
    if not sel.folder:
        return []
    stem = sel.folder.split("-", 1)[0] + "-"
    return [f for f in present if f.startswith(stem) and not sel.matches(f)]


def _what(sel, report) -> str:  # type: ignore[no-untyped-def]
    """Which folder(s) --pipeline named and why (the text output and the JSON note)."""
    folders = ", ".join(report.folders)
    if sel.how == "folder":
        return f"{folders} (the folder named by --pipeline)"
    if sel.how == "name":
        return (f"{folders}: every folder of pipeline name {sel.requested} (it is not an installed pipeline here, "
                "so the folder of its configuration cannot be derived)")
    shared = (f"; --pipeline {', '.join(sel.same_folder)} use the same folder by design (the same pipeline "
              "configuration)") if sel.same_folder else ""
    others = _others(sel, report.present)
    kept = (f"; other folders of this pipeline stay (another configuration or spaCy version; give the folder name "
            f"to remove one): {', '.join(others)}") if others else ""
    return f"{folders}, the folder `ddp profile --pipeline {sel.requested}` parses into{shared}{kept}"


def _not_found(sel, present: list[str]) -> str:  # type: ignore[no-untyped-def]
    """Why --pipeline named no folder (the D181 message)."""
    if sel.how == "name":
        return ("it is neither a folder name there, nor an installed pipeline (whose folder would be derived as "
                "ddp profile derives it), nor the pipeline name of a folder there; give a folder name")
    others = _others(sel, present)
    there = (f"; folders of this pipeline there (another configuration or spaCy version; give the folder name to "
             f"remove one): {', '.join(others)}") if others else ""
    return f"its folder {sel.folder}, the one `ddp profile --pipeline {sel.requested}` parses into, is not there{there}"
