"""Check every output path of a command before any work is done.

A command that writes files calls :func:`check_outputs` right after parsing its options,
before it reads large inputs or loads a spaCy pipeline, so that a bad output path fails in
milliseconds instead of after minutes of parsing, and so that no output can overwrite an
input or another output of the same run.

Example (``ddp profile``)::

    from ddpcore.io.outputs import check_outputs

    targets = check_outputs(
        [("-o/--output", args.output), ("--anchors", args.anchors), ("--sentences", args.sentences)],
        inputs=[args.input],
    )
    # ... later: write to targets[i].path (None for stdout), format targets[i].format

Only the standard library is imported here (the CLI imports this module before polars).

Error codes (all :class:`~ddpcore.errors.DDPUsageError`, CLI exit code 2):

- D101 unknown output extension
- D130 the parent folder does not exist, or is not a folder
- D131 the parent folder is not writable
- D132 the output is an existing folder
- D133 the output is one of the inputs (would overwrite the input data)
- D134 two outputs on one path (one would overwrite the other)
- D141 an output name that is not valid UTF-8
- D135 ``-`` (standard output) not allowed here (binary format, or more than one output to stdout)
- D136 compressed Parquet name (``.parquet.gz``): Parquet is compressed internally
- D760 the output lies inside a run's work folder (``.NAME.ddp-work/``), which the run deletes
"""
from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Union

from ..errors import DDPUsageError
from .sidecars import SIDECAR_SUFFIX, sidecar_path  # noqa: F401  (re-exported)
from .tables import detect_format, remove_stale_temps  # noqa: F401  (re-exported)

PathArg = Union[str, "os.PathLike[str]"]

#: formats that can be written (``.gz`` allowed for the text ones)
ALL_FORMATS = ("csv", "tsv", "jsonl", "json", "parquet")
TEXT_FORMATS = ("csv", "tsv", "jsonl", "json")
#: suffix of the work folder of a long run (``.<output>.ddp-work``, :func:`ddpcore.engines.run.work_dir_for`)
WORK_SUFFIX = ".ddp-work"
STDOUT = "-"


@dataclass(frozen=True)
class OutputTarget:
    """One checked output.

    ``path`` is the path as given (``None`` for standard output), ``format`` one of
    :data:`ALL_FORMATS`, ``gzip`` whether the name ends in ``.gz`` (text formats only),
    ``option`` the option that named it (for messages).
    """

    option: str
    path: Path | None
    format: str
    gzip: bool = False

    @property
    def stdout(self) -> bool:
        return self.path is None

    @property
    def sidecar(self) -> Path | None:
        """``<output>.signature.json`` for text formats written to a file, else ``None``."""
        if self.path is None or self.format == "parquet":
            return None
        return sidecar_path(self.path)


def file_identity(path: Path) -> tuple[str, tuple[int, int] | None]:
    """(resolved path, (st_dev, st_ino) if the file exists)."""
    try:
        resolved = str(path.resolve(strict=False))
    except (OSError, RuntimeError):  # symlink loop: compare the absolute path instead
        resolved = os.path.abspath(path)
    try:
        st = os.stat(path)
        ino: tuple[int, int] | None = (st.st_dev, st.st_ino)
    except OSError:
        ino = None
    return resolved, ino


def same_file(a: tuple[str, tuple[int, int] | None], b: tuple[str, tuple[int, int] | None]) -> bool:
    """Whether two ``(resolved path, (st_dev, st_ino) or None)`` keys name one file: the same path, or the same
    existing inode (a hard link, a symlink resolved elsewhere)."""
    return a[0] == b[0] or (a[1] is not None and a[1] == b[1])


def check_outputs(
    outputs: Sequence[tuple[str, PathArg | None]],
    inputs: Iterable[PathArg | None] = (),
    *,
    formats: Collection[str] = ALL_FORMATS,
    stdout_format: str | None = None,
    sidecars: bool = False,
) -> list[OutputTarget]:
    """Validate output paths before any work; return one :class:`OutputTarget` per given output.

    Parameters
    ----------
    outputs
        ``(option, path)`` pairs, e.g. ``[("-o/--output", "ddp.parquet"), ("--anchors", None)]``;
        pairs whose path is ``None`` or ``""`` are skipped (option not given). ``option`` is
        used in messages.
    inputs
        Paths the command reads (files or folders; ``None`` skipped). No output may be the
        same file as an input (same resolved path, or same device and inode: hard links and
        symlinks are caught).
    formats
        Allowed output formats (subset of :data:`ALL_FORMATS`).
    stdout_format
        Format written when an output is ``-`` (standard output); ``None`` refuses ``-``.
        Must be a text format; at most one output may be ``-``.
    sidecars
        Also reserve ``<output>.signature.json`` of every text-format file output: it may not be
        an existing folder (D132), and no other output and no input may be that path.

    Checks, in order, for each output: it is not inside a run's work folder (D760), not an existing folder (D132), the extension
    names an allowed format (D101; ``.parquet.gz`` D136), the parent folder exists and is a
    folder (D130) and is writable (D131); ``-`` is used at most once and only for text formats
    (D135); every sidecar is not an existing folder (D132); no output or sidecar is an input (D133)
    and no two share a path (D134). Second paths a command derives otherwise (a ``.docs`` file
    beside ``-o``, per-system files) are checked with :func:`check_place` and :func:`check_claims`.

    Raises
    ------
    DDPUsageError
        with one of the codes above; the message names the option, the path and what to do.
    """
    targets: list[OutputTarget] = []
    for option, raw in outputs:
        if raw is None or str(raw) == "":
            continue
        if str(raw) == STDOUT:
            if stdout_format is None or stdout_format not in TEXT_FORMATS:
                what = "binary Parquet" if stdout_format == "parquet" else "this output"
                raise DDPUsageError(
                    f"{option} -: cannot write {what} to standard output; give a file name "
                    f"(.csv, .tsv, .jsonl or .json can go to stdout where the command allows it)",
                    code="D135",
                )
            targets.append(OutputTarget(option, None, stdout_format))
            continue
        path = Path(raw)
        targets.append(_check_one(option, path, formats))

    # at most one stdout output
    to_stdout = [t for t in targets if t.stdout]
    if len(to_stdout) > 1:
        raise DDPUsageError(
            f"{to_stdout[0].option} and {to_stdout[1].option} both write to standard output ('-'); "
            "write all but one of them to files",
            code="D135",
        )

    claimed: list[tuple[str, PathArg]] = []
    for t in targets:
        if t.path is None:
            continue
        claimed.append((t.option, t.path))
        if sidecars and t.sidecar is not None:
            what = f"the signature sidecar of {t.option}"
            check_place(what, t.sidecar)  # a folder of that name: D132 now, not after the work
            claimed.append((what, t.sidecar))
    check_claims(claimed, inputs)
    return targets


def check_place(what: str, path: PathArg, *, make_parents: bool = False) -> None:
    """Check one file a command will write, before any work: not inside a run's work folder (D760),
    not an existing folder (D132), in an existing folder (D130) that is writable (D131).

    For the second paths a command derives from its options (a signature sidecar, a ``.docs`` file
    beside ``-o``, the per-system files of ``--outputs-to``); ``what`` names it in messages. With
    ``make_parents`` the folder may be missing (the command creates it): the nearest existing folder
    above it must then be a folder and writable.
    """
    p = Path(path)
    _check_name(what, p)
    _check_not_in_work_folder(what, p)
    if p.is_dir():
        raise DDPUsageError(
            f"{what} {p}: is an existing folder, where this command writes a file; remove or rename the folder, "
            "or choose another output name",
            code="D132",
        )
    parent = p.parent if str(p.parent) else Path(".")
    up = parent
    while make_parents and str(up) not in ("", ".", "/") and not os.path.lexists(up):
        up = up.parent
    if not up.exists():
        raise DDPUsageError(f"{what} {p}: the folder {parent} does not exist; create it first (mkdir -p {parent})",
                            code="D130")
    if not up.is_dir():
        raise DDPUsageError(f"{what} {p}: {up} is a file, not a folder; choose an output in an existing folder",
                            code="D130")
    if not os.access(up, os.W_OK | os.X_OK):
        raise DDPUsageError(f"{what} {p}: the folder {up} is not writable; choose another folder or fix its "
                            "permissions", code="D131")


def check_claims(written: Iterable[tuple[str, PathArg]], inputs: Iterable[PathArg | None] = ()) -> None:
    """No file a command writes is one of its inputs (D133), and no two of them are one file (D134).

    ``written``: ``(what, path)`` pairs of every file the run writes (outputs and their second paths:
    sidecars, ``.docs``, per-system files); ``inputs``: every file or folder it reads (``None``, ``""``
    and ``-`` skipped). Files are the same when their resolved paths are, or their device and inode
    (hard links, symlinks).
    """
    in_ids = []
    for inp in inputs:
        if inp is None or str(inp) in ("", STDOUT):
            continue
        in_ids.append((Path(inp), file_identity(Path(inp))))
        side = sidecar_path(inp)  # an input's signature sidecar is read with it (its settings, columns)
        if os.path.isfile(side):
            in_ids.append((side, file_identity(side)))
    claimed = [(what, Path(path), file_identity(Path(path))) for what, path in written]
    # look-ups by resolved path and by (device, inode): linear in the number of files (a WMT layout
    # writes one file per system)
    in_by: dict[object, Path] = {}
    for inp, (res, ino) in reversed(in_ids):
        in_by[("p", res)] = inp
        if ino is not None:
            in_by[("i", ino)] = inp
    for option, path, (res, ino) in claimed:
        inp = in_by.get(("p", res)) or (in_by.get(("i", ino)) if ino is not None else None)
        if inp is not None:
            raise DDPUsageError(
                f"{option} {path}: this is the input file {inp}; writing it would destroy the input, "
                "choose another output name",
                code="D133",
            )
    seen: dict[object, tuple[str, Path]] = {}
    for opt_b, path_b, (res, ino) in claimed:
        first = seen.get(("p", res)) or (seen.get(("i", ino)) if ino is not None else None)
        if first is not None:
            opt_a, path_a = first
            same = f"{path_a}" if str(path_a) == str(path_b) else f"{path_a} and {path_b} (the same file)"
            raise DDPUsageError(
                f"{opt_a} and {opt_b} both write {same}; one would overwrite the other, "
                "give each output its own name",
                code="D134",
            )
        seen[("p", res)] = (opt_b, path_b)
        if ino is not None:
            seen.setdefault(("i", ino), (opt_b, path_b))


def inside_work_folder(path: PathArg) -> Path | None:
    """The work folder (``.NAME.ddp-work``) that ``path`` lies in, spelled or resolved, else ``None``.

    A long run removes its work folder when it finishes (and a run without ``--resume``
    removes the one an interrupted run left), so a file written there is lost.
    """
    p = Path(path)
    candidates = [Path(os.path.abspath(p))]
    try:
        candidates.append(p.resolve(strict=False))
    except (OSError, RuntimeError):
        pass
    for c in candidates:
        for folder in c.parents:
            if folder.name.startswith(".") and folder.name.endswith(WORK_SUFFIX):
                return folder
    return None


def _check_name(what: str, path: Path) -> None:
    """D141: a name that is not UTF-8 (bytes the file system gave, shown as surrogates) cannot go into the
    signature, the messages or a JSON report; found before any work, not as D999 at the end."""
    try:
        os.fspath(path).encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(path).decode("utf-8", "backslashreplace")  # the raw byte as \\xNN
        raise DDPUsageError(f"{what} {shown}: the name is not valid UTF-8, which the output's signature and messages "
                            "need; choose a UTF-8 name", code="D141") from None


def _check_not_in_work_folder(what: str, path: Path) -> None:
    """D760: ``path`` lies inside a run's work folder, which the run deletes when it ends."""
    work = inside_work_folder(path)
    if work is not None:
        raise DDPUsageError(
            f"{what} {path}: this is inside the work folder {work} of a ddp run, which the run deletes when it "
            "ends; write the output somewhere else",
            code="D760",
        )


def _check_one(option: str, path: Path, formats: Collection[str]) -> OutputTarget:
    _check_name(option, path)
    gz = path.suffix.lower() == ".gz"
    _check_not_in_work_folder(option, path)
    if path.is_dir():
        raise DDPUsageError(
            f"{option} {path}: is an existing folder; give a file name inside it (e.g. {path / 'ddp.parquet'})",
            code="D132",
        )
    try:
        fmt = detect_format(path)
    except DDPUsageError:
        ext = "".join(path.suffixes[-2:]) if gz else path.suffix
        allowed = ", ".join(f".{f}" for f in formats)
        raise DDPUsageError(
            f"{option} {path}: unknown output format (extension '{ext or '(none)'}'); use {allowed}"
            + (" (add .gz to compress a text format)" if set(formats) & set(TEXT_FORMATS) else ""),
            code="D101",
        ) from None
    if fmt == "parquet" and gz:
        raise DDPUsageError(
            f"{option} {path}: Parquet is compressed internally and cannot be gzipped; drop the .gz",
            code="D136",
        )
    if fmt not in formats:
        allowed = ", ".join(f".{f}" for f in formats)
        raise DDPUsageError(f"{option} {path}: {fmt} output is not supported here; use {allowed}", code="D101")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        # an existing file somewhere up the path is the more useful message
        up = parent
        while str(up) not in ("", ".", "/") and not up.exists():
            up = up.parent
        if up.exists() and not up.is_dir():
            raise DDPUsageError(
                f"{option} {path}: {up} is a file, not a folder; choose an output in an existing folder",
                code="D130",
            )
        raise DDPUsageError(
            f"{option} {path}: the folder {parent} does not exist; create it first (mkdir -p {parent})",
            code="D130",
        )
    if not parent.is_dir():
        raise DDPUsageError(
            f"{option} {path}: {parent} is a file, not a folder; choose an output in an existing folder",
            code="D130",
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise DDPUsageError(
            f"{option} {path}: the folder {parent} is not writable; choose another folder or fix its permissions",
            code="D131",
        )
    return OutputTarget(option, path, fmt, gz)


# ------------------------------------------------------------------ all-or-nothing replacement

#: suffix of the copy of an existing output kept while a set of outputs is being replaced
BACKUP_SUFFIX = ".ddp-old"


def _backup_path(dest: Path) -> Path:
    return dest.with_name(f".{dest.name}{BACKUP_SUFFIX}")


def _write_json(path: Path, obj: object) -> None:
    import json

    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, sort_keys=True, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _remove(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class OutputSet:
    """Several outputs written to temporary files and put in place together, all or nothing.

    ``temp(dest)`` gives a temporary path beside ``dest`` (an output or its sidecar) to write;
    :meth:`commit` then replaces every destination. The commit first records every
    ``(temporary, destination)`` pair in ``journal`` (JSON, written with fsync), keeps a hard link
    (else a copy) of every existing destination as ``.NAME.ddp-old``, and only then renames the
    temporaries over the destinations, with SIGINT/SIGTERM held back meanwhile (delivered once all are in place). If a rename fails,
    the destinations already replaced get their old files back and :class:`~ddpcore.errors.DDPError`
    D761 says that nothing was changed (or, if restoring failed too, exactly which outputs are new and
    which old). If the process is killed mid-way (SIGKILL, power), the journal stays:
    :func:`recover_commit` at the next start finishes the replacement (every temporary is complete
    before the journal is written), so the outputs are then all new. :meth:`discard` removes the
    temporaries of an unfinished set.
    """

    def __init__(self, journal: PathArg) -> None:
        self.journal = Path(journal)
        self.entries: list[tuple[Path, Path]] = []
        self.committed = False

    def temp(self, dest: PathArg) -> Path:
        import tempfile

        dest = Path(dest)
        remove_stale_temps(dest)
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent if str(dest.parent) else ".")
        os.close(fd)
        self.entries.append((Path(os.path.abspath(tmp)), Path(os.path.abspath(dest))))
        return Path(tmp)

    @property
    def destinations(self) -> list[Path]:
        return [d for _, d in self.entries]

    def discard(self) -> None:
        if self.committed:
            return
        for tmp, _ in self.entries:
            _remove(tmp)

    def commit(self) -> None:
        import signal
        import threading

        umask = os.umask(0)
        os.umask(umask)
        for tmp, _ in self.entries:
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files; give what open() would
        # SIGINT/SIGTERM are held back, not masked: a mask binds one thread, and the kernel hands a
        # process signal to any thread that does not mask it (polars' pool, a parse helper)
        main = threading.current_thread() is threading.main_thread()
        held = (signal.SIGINT, signal.SIGTERM)
        pending: list[int] = []
        old = {s: signal.getsignal(s) for s in held} if main else {}
        for s in old:
            signal.signal(s, lambda signum, frame: pending.append(signum))
        try:
            backups = {dest: _backup_path(dest) for _, dest in self.entries if os.path.lexists(dest)}
            done: list[Path] = []
            try:
                # the journal first: whatever happens after it, recover_commit can finish and clean up
                _write_json(self.journal, {"pid": os.getpid(), "entries": [
                    {"tmp": str(t), "dest": str(d), "backup": str(backups[d]) if d in backups else None}
                    for t, d in self.entries]})
                for dest, bak in backups.items():
                    _remove(bak)
                    try:
                        os.link(dest, bak)
                    except OSError:  # no hard links on this file system: a copy
                        import shutil

                        shutil.copy2(dest, bak)
                for tmp, dest in self.entries:
                    os.replace(tmp, dest)
                    done.append(dest)
            except OSError as exc:
                self._roll_back(done, backups, exc)
            for bak in backups.values():
                _remove(bak)
            _remove(self.journal)
            self.committed = True
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            if pending:  # a held signal arrives now, to the handler it was meant for
                h = old[pending[0]]
                if callable(h):
                    h(pending[0], None)
                elif h == signal.SIG_DFL:
                    os.kill(os.getpid(), pending[0])

    def _roll_back(self, done: list[Path], backups: dict[Path, Path], exc: OSError) -> None:
        from ..errors import DDPError

        failed: list[str] = []
        for dest in done:
            try:
                if dest in backups:
                    os.replace(backups[dest], dest)
                else:
                    os.unlink(dest)
            except OSError:
                failed.append(str(dest))
        for tmp, _ in self.entries:
            _remove(tmp)
        reason = f"{type(exc).__name__}: {exc.strerror or exc}"
        names = ", ".join(str(d) for d in self.destinations)
        if not failed:
            for bak in backups.values():
                _remove(bak)
            _remove(self.journal)
            raise DDPError(f"could not put the outputs in place ({reason}); no output was changed ({names} are as "
                           "before); fix the cause and rerun", code="D761") from None
        _remove(self.journal)  # the temporaries are gone: nothing to roll forward; the backups below stay
        for dest, bak in backups.items():
            if str(dest) not in failed:
                _remove(bak)
        kept = ", ".join(f"{d} (old file kept as {_backup_path(Path(d))})" for d in failed if Path(d) in backups)
        new_only = [d for d in failed if Path(d) not in backups]
        old = [str(d) for d in self.destinations if str(d) not in failed]
        raise DDPError(f"could not put the outputs in place ({reason}) nor restore them: NEW (this run): "
                       f"{', '.join(failed)}; OLD or absent: {', '.join(old) or 'none'}"
                       + (f"; restore by hand: {kept}" if kept else "")
                       + (f"; delete {', '.join(new_only)}" if new_only else ""), code="D761") from None


def recover_commit(journal: PathArg) -> list[Path]:
    """Finish the replacement recorded in ``journal`` by a run killed while renaming its outputs.

    Every temporary in the journal is complete (it is written before the journal), so the
    replacement is rolled forward: the outputs are then all new. Returns the destinations that
    this call put in place (empty if there was no pending replacement).
    """
    import json

    journal = Path(journal)
    try:
        data = json.loads(journal.read_text(encoding="utf-8"))
        entries = [(Path(e["tmp"]), Path(e["dest"]), e.get("backup")) for e in data["entries"]]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError):  # not a journal this code wrote: nothing to roll forward
        _remove(journal)
        return []
    placed: list[Path] = []
    for tmp, dest, _ in entries:
        if tmp.exists():
            os.replace(tmp, dest)
            placed.append(dest)
    for _, _, bak in entries:
        if bak:
            _remove(Path(bak))
    _remove(journal)
    return placed
