"""The signature sidecar of a text output (``OUTPUT.signature.json``) and what ties it to its data file.

A text output (``.csv``, ``.tsv``, ``.jsonl``, ``.json``, each optionally ``.gz``, and the other files a command
writes beside one) carries its run's signature in a sidecar file. Nothing in a file name ties the two: a sidecar
copied from another output, or left from an earlier run whose data file was then replaced by hand, would be read
as the signature of a table it does not describe. So every writer records in the sidecar, under
:data:`DATA_KEY`, a stamp of the data file (:func:`data_stamp`: its size in bytes and the SHA-256 of its first
and last MiB, taken from the finished temporary file just before it is renamed into place), through
:func:`sidecar_text`; every reader goes through :func:`read_sidecar`, which parses it, strips the stamp (so a
sidecar's signature equals the Parquet metadata's of the same run) and compares the stamp with the data file:
O(1) in the size of the file. A sidecar without the stamp (an older ddpcore, or a hand-made one) is read as
before.

What a reader does about a damaged sidecar (:attr:`Sidecar.damaged`) or one of another file
(:attr:`Sidecar.mismatch`) is the reader's choice (:mod:`ddpcore.io.profiles`): the commands whose answer is
made from the recorded settings refuse it, the others say it (:func:`warn_sidecar`) and record it.

Only the standard library is imported here (the CLI reads sidecars before it imports polars).
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: suffix of the signature sidecar written next to text-format outputs
SIDECAR_SUFFIX = ".signature.json"
#: the sidecar's key holding the stamp of its data file (not part of the signature: stripped on read)
DATA_KEY = "data"
#: bytes hashed at each end of the data file
STAMP_SPAN = 1 << 20
#: where a reader that goes on with a sidecar of another file records that, in the signature it read
MISMATCH_KEY = "sidecar_mismatch"


def sidecar_path(path: str | os.PathLike[str]) -> Path:
    """The signature sidecar of a text-format output: ``<output>.signature.json``."""
    p = Path(path)
    return p.with_name(p.name + SIDECAR_SUFFIX)


def data_stamp(path: str | os.PathLike[str], span: int = STAMP_SPAN) -> dict[str, Any]:
    """What ties a sidecar to the data file ``path`` (the bytes on disk, compressed if it is): ``bytes`` (its
    size), ``head_sha256`` and ``tail_sha256`` (SHA-256 of its first and last ``span`` bytes; one file shorter
    than ``span`` is hashed whole, twice) and ``span``. Reads at most ``2 * span`` bytes."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        head = hashlib.sha256(fh.read(span)).hexdigest()
        fh.seek(max(0, size - span))
        tail = hashlib.sha256(fh.read(span)).hexdigest()
    return {"bytes": size, "head_sha256": head, "tail_sha256": tail, "span": span}


def sidecar_text(signature: Mapping[str, Any], data_file: str | os.PathLike[str], **dumps: Any) -> str:
    """The text of the sidecar of ``data_file`` (the finished temporary data file, before it is renamed into
    place): ``signature`` plus :data:`DATA_KEY` = :func:`data_stamp` of it, as JSON (``dumps``: keywords of
    :func:`json.dumps`; default ``sort_keys=True, indent=2``), with a final newline. The one writer of every
    sidecar."""
    opts: dict[str, Any] = {"sort_keys": True, "indent": 2, **dumps}
    stamped = {**{k: v for k, v in signature.items() if k != DATA_KEY}, DATA_KEY: data_stamp(data_file)}
    return json.dumps(stamped, **opts) + "\n"


def stamp_difference(stamp: Any, data_file: str | os.PathLike[str]) -> str | None:
    """How the data file differs from the ``stamp`` its sidecar records (None when it matches, or when the
    stamp is not one this build reads: nothing to compare)."""
    if not isinstance(stamp, Mapping):
        return None
    size, span = stamp.get("bytes"), stamp.get("span", STAMP_SPAN)
    if not (isinstance(size, int) and isinstance(span, int) and span > 0):
        return None
    try:
        now = data_stamp(data_file, span)
    except OSError:
        return None
    if now["bytes"] != size:
        return f"it records a data file of {size:,} bytes, {Path(data_file).name} has {now['bytes']:,}"
    for key, where in (("head_sha256", "first"), ("tail_sha256", "last")):
        if stamp.get(key) != now[key]:
            return (f"{Path(data_file).name} has the recorded size ({size:,} bytes) but other content (the SHA-256 "
                    f"of its {where} {span:,} bytes differs)")
    return None


@dataclass(frozen=True)
class Sidecar:
    """A text output's sidecar as read: ``path`` (the sidecar), ``data`` (its data file), ``signature`` (the
    JSON object without :data:`DATA_KEY`; None when damaged), ``damaged`` (why it cannot be read: not
    readable, not valid JSON, not a JSON object; a message naming the sidecar), ``mismatch`` (why it is not the
    signature of ``data``: a message naming both files; None when it fits or records no stamp)."""

    path: Path
    data: Path
    signature: dict[str, Any] | None
    damaged: str | None = None
    mismatch: str | None = None

    def problem(self) -> str | None:
        """The one line that says what is wrong with the sidecar (None when nothing is)."""
        if self.damaged is not None:
            return self.damaged
        if self.mismatch is not None:
            return (f"{self.path} is not the signature of {self.data}: {self.mismatch} (a sidecar copied from "
                    f"another output, or {self.data} changed after it was written)")
        return None


def read_sidecar(data_file: str | os.PathLike[str]) -> Sidecar | None:
    """The sidecar of ``data_file`` (None when there is no such file), parsed and checked against the data
    file's stamp (:func:`stamp_difference`). The one reader of every sidecar: it never raises."""
    data = Path(data_file)
    side = sidecar_path(data)
    if not side.is_file():
        return None
    try:
        text = side.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        return Sidecar(side, data, None, damaged=f"{side}: not a readable signature file ({exc})")
    try:
        sig = json.loads(text)
    except ValueError as exc:
        return Sidecar(side, data, None, damaged=f"{side} is not valid JSON ({str(exc).splitlines()[0]})")
    if not isinstance(sig, dict):
        return Sidecar(side, data, None, damaged=f"{side} is not a ddpcore signature (expected a JSON object)")
    stamp = sig.pop(DATA_KEY, None)
    return Sidecar(side, data, sig, mismatch=stamp_difference(stamp, data) if stamp is not None else None)


def warn_sidecar(found: Sidecar | None) -> None:
    """Say a damaged sidecar, or one of another file, once (a Python warning: ``ddp COMMAND: warning: ...`` on
    stderr), for the readers that go on without it (damaged) or with it (mismatch)."""
    line = found.problem() if found is not None else None
    if found is None or line is None:
        return
    import warnings

    then = ("; read without it (the default column names and no recorded settings): delete or regenerate it"
            if found.damaged is not None else
            f"; its settings and column names are used as recorded, and the run records this ({MISMATCH_KEY} in "
            "the profile signature): regenerate the output, or delete the sidecar")
    warnings.warn(line + then, UserWarning, stacklevel=2)


__all__ = ["DATA_KEY", "MISMATCH_KEY", "SIDECAR_SUFFIX", "STAMP_SPAN", "Sidecar", "data_stamp", "read_sidecar",
           "sidecar_path", "sidecar_text", "stamp_difference", "warn_sidecar"]
