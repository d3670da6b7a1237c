"""System outputs in the WMT24 layout as a long table (``ddp mix --reader wmt24``).

The layout: a ``.docs`` file with one line ``domain<TAB>document_id`` per source line, and
one ``.txt`` file per system with one translation per line, aligned with the source.
``OUTPUTS`` is either a folder of such ``.txt`` files or the WMT24 archive
``wmt24_system_outputs_en-cs_en-hi_en-ja_en-zh.tar.xz`` (``<lp>/<system>.txt``; read with
:func:`ddpcore.io.wmt.read_texts`, pick one language pair with ``lp``). A file named
``<lp>.refA.txt`` is the human reference, system ``refA``. The canary line (``.docs`` line
``canary<TAB>canary``) is dropped. Nothing is written.

Returned columns: ``document_id`` (str), ``segment_id`` (int, the 0-based position of the
segment within its document), ``line_id`` (int, the 0-based line of the aligned files, canary
included), ``system`` (str), ``text`` (str), ``domain`` (str): the key convention of ``ddp
profile --reader wmt24`` (:func:`ddpcore.io.readers.iter_aligned_lines`) and of the WMT24 ESA
scores (:func:`ddpcore.io.wmt.read_wmt24_esa`), so MIX rows join to the profile and the scores
of the same test set on ``document_id, segment_id``.
"""
from __future__ import annotations

import tarfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DDPDataError, DDPUsageError

if TYPE_CHECKING:
    import polars as pl

CANARY = "canary"


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _read_docs(path: Path) -> tuple[list[str], list[str]]:
    try:
        raw = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise DDPDataError(f"{path}: documents file (--docs) not found", code="D507") from None
    except UnicodeDecodeError as exc:
        raise DDPDataError(f"{path}: not UTF-8 ({exc})", code="D507") from None
    domains, docs = [], []
    for i, line in enumerate(_lines(raw), 1):
        parts = line.split("\t")
        if len(parts) != 2 or not parts[1]:
            raise DDPDataError(f"{path}, line {i}: expected 'domain<TAB>document_id', got {line[:60]!r}", code="D507")
        domains.append(parts[0])
        docs.append(parts[1])
    if not docs:
        raise DDPDataError(f"{path}: documents file is empty", code="D507")
    return domains, docs


def _read_folder(folder: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in sorted(folder.glob("*.txt")):
        name = f.name[: -len(".txt")]
        system = "refA" if name.endswith(".refA") else name
        try:
            out[system] = _lines(f.read_bytes().decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise DDPDataError(f"{f}: not UTF-8 ({exc})", code="D507") from None
    return out


def _read_archive(path: Path, lp: str | None) -> dict[str, list[str]]:
    from .wmt import OUTPUTS_TAR, read_texts

    if path.name == OUTPUTS_TAR:
        by_lp = read_texts(path.parent, [lp] if lp else None)
    else:
        by_lp = {}
        try:
            with tarfile.open(path, mode="r:*") as tar:
                for member in tar:
                    if not member.isfile() or not member.name.endswith(".txt"):
                        continue
                    parts = member.name.split("/")
                    mlp, fname = (parts[-2] if len(parts) > 1 else "", parts[-1])
                    if lp and mlp != lp:
                        continue
                    system = "refA" if fname.endswith(".refA.txt") else fname[: -len(".txt")]
                    fh = tar.extractfile(member)
                    assert fh is not None
                    by_lp.setdefault(mlp, {})[system] = fh.read().decode("utf-8").split("\n")
        except (tarfile.TarError, EOFError, OSError, UnicodeDecodeError) as exc:
            raise DDPDataError(f"{path}: cannot read the archive ({exc})", code="D507") from None
    if not by_lp:
        raise DDPDataError(f"{path}: no .txt outputs" + (f" for language pair {lp}" if lp else ""), code="D507")
    if len(by_lp) > 1:
        raise DDPUsageError(f"{path} holds several language pairs ({', '.join(sorted(by_lp))}); pick one with --lp",
                            code="D506")
    texts = next(iter(by_lp.values()))
    return {s: _lines("\n".join(v)) for s, v in texts.items()}


def read_wmt_outputs(docs: str | Path, outputs: str | Path, *, lp: str | None = None) -> pl.DataFrame:
    """Long table of system outputs from a ``.docs`` file and a folder/archive of ``.txt`` files.

    Parameters
    ----------
    docs : ``domain<TAB>document_id`` per source line
    outputs : folder of ``<system>.txt`` or a tar archive of ``<lp>/<system>.txt``
    lp : language pair to read from an archive holding several

    Returns
    -------
    polars.DataFrame with ``document_id, segment_id, line_id, system, text, domain``; one row
    per (system, line), the canary line dropped, sorted by system then line. ``segment_id`` is
    the position within the document, ``line_id`` the 0-based line (module docstring).
    """
    import numpy as np
    import polars as pl

    domains, doc_ids = _read_docs(Path(docs))
    out = Path(outputs)
    if out.is_dir():
        texts = _read_folder(out)
    elif out.is_file():
        texts = _read_archive(out, lp)
    else:
        raise DDPDataError(f"{out}: outputs folder or archive (--outputs) not found", code="D507")
    if not texts:
        raise DDPDataError(f"{out}: no .txt system outputs found", code="D507")
    n = len(doc_ids)
    for system, lines in texts.items():
        if len(lines) != n:
            raise DDPDataError(f"{out}: system '{system}' has {len(lines)} lines, the documents file {n}; the files "
                               "must be aligned line by line", code="D507")
    # as ddp profile --reader wmt24 (io.readers.iter_aligned_lines): the canary line is .docs line
    # 'canary<TAB>canary', and a segment's id is its 0-based position within its document
    keep = np.array([not (d == CANARY and dom == CANARY) for d, dom in zip(doc_ids, domains)])
    lines_idx = np.flatnonzero(keep)
    kept_docs = np.asarray(doc_ids, dtype=object)[lines_idx]
    position = pl.DataFrame({"d": kept_docs.tolist()}, schema={"d": pl.String}).select(
        pl.int_range(pl.len(), dtype=pl.Int64).over("d").alias("p"))["p"].to_numpy()
    systems = sorted(texts)
    frame = pl.DataFrame({
        "document_id": np.tile(kept_docs, len(systems)).tolist(),
        "segment_id": np.tile(position.astype(np.int64), len(systems)),
        "line_id": np.tile(lines_idx.astype(np.int64), len(systems)),
        "system": np.repeat(np.asarray(systems, dtype=object), lines_idx.size).tolist(),
        "text": [texts[s][i] for s in systems for i in lines_idx],
        "domain": np.tile(np.asarray(domains, dtype=object)[lines_idx], len(systems)).tolist(),
    }, schema={"document_id": pl.String, "segment_id": pl.Int64, "line_id": pl.Int64, "system": pl.String,
               "text": pl.String, "domain": pl.String})
    return frame
