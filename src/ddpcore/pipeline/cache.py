"""The parse cache: nothing is parsed twice.

A *parse unit* is a stripped, non-empty line of a segment: exactly one string that
:meth:`~ddpcore.pipeline.parse.Parser.parse` receives. Its parse (the unit's token arrays,
:class:`~ddpcore.anchors.spacy_extract.TokenArrays`) depends only on the unit text and the
pipeline, so it is kept on disk and reused by every later run, whatever its rules, distance
mode, segmentation or corpus.

Layout under the cache folder (:func:`ddpcore.config.cache_dir`, ``--cache DIR``)::

    ddpcore-cache.json                           marker: this folder is a ddpcore parse cache
    <pipeline_name>-<version>-<fingerprint>/     one folder per pipeline fingerprint
        ddpcore-pipeline.json   marker: the folder's fingerprint (the folder name is its id)
        info.json        pipeline_info of the pipeline (a fully cached run needs no spaCy)
        strings.json     spaCy string/POS ids the rule sets use (spaCy-version specific)
        <time>-<pid>-<rand>.parquet   immutable shards, written to a temp file and renamed

``info.json`` and ``strings.json`` carry a BLAKE2b ``checksum`` of their content; one that
does not match (a flipped bit or flag) or cannot be read is reported once (``warning:``),
ignored (the pipeline details come from the pipeline, the ids from spaCy: the answer is the
uncached one) and written again. Files written before checksums existed are ignored the same
way, without a warning.

``ddp cache clear`` (:func:`clear_cache`) removes only what ddpcore wrote: in a folder with
the marker, the files of this layout (names as above); in a folder written before markers
existed, only if its name is a fingerprint id and its ``info.json`` has that fingerprint or a
shard there passes its checksum, and then only the layout's files (shards checksum-verified).
Anything else stays; a folder that is not a cache is refused (``[D750]``). A marker that is damaged is
written again by the next run that uses its folder. A pipeline folder whose (intact) marker records
another fingerprint than its name (renamed or copied by hand) holds another configuration's parses: a
run never reads or writes it (one ``warning:``, ``cache.not_written`` in the signature), ``ddp cache
info`` flags it (``foreign``) and ``ddp cache clear`` removes it. A symbolic link to a pipeline folder is
read by runs, so ``ddp cache info`` counts it and ``ddp cache clear`` empties the folder it names (the
link stays). A clear that runs beside other clears or runs skips the files they removed and leaves a
folder a run stored new parses in (``busy``); a run whose folder was cleared makes it again for its next
parses, and a shard removed under it is parsed again (one ``warning:``, not called corrupted).

The fingerprint is a hash of the pipeline's canonical name, version and enabled components (plus
the compiled attribute ruler's version when POS comes from it: the ``fast`` preset),
the spaCy version and :data:`CACHE_FORMAT`; it is read from the pipeline package's
``meta.json`` without loading the pipeline or importing spaCy. A shard holds one row per
unit: ``k0, k1`` (the unit's 16-byte MurmurHash3_x64_128 key as two uint64), ``n_tokens``
and one ``large_list`` column per token attribute (the token arrays flattened, with per-unit
offsets). Its schema metadata ``ddpcore.cache`` holds a BLAKE2b checksum of every column;
a shard whose checksum does not match (or that cannot be read) is reported once, removed,
and its units are parsed again. The metadata also names the pipeline folder the shard was written in
(``folder``); a shard that names another folder (copied by hand from another configuration's folder) is
never read: reported once, removed, its units parsed again, and listed under ``cache.foreign`` in the
signature, as is an intact ``info.json`` holding the details of another folder's configuration (ignored and
written again). A shard of an older ddpcore records no folder (nor anything else naming its configuration): it is
trusted, and a run served parses from such shards says so once and lists them under ``cache.unstamped``.

Several processes may share one cache, a local folder or a ``pyarrow.fs`` URI alike, without a
lock: shards are never modified, names are unique (time, process id, random), a shard is written
under a temporary name and appears only once complete (``os.replace``; ``FileSystem.move`` at a
URI: a rename on ``file://`` and HDFS, a whole-object copy on object stores), and every reader
verifies a shard's checksum before using it; the same unit stored twice is harmless (the first
copy found wins).

A cache that cannot be **written** (a read-only mount, no permission, a full disk) is a warning:
its parses are still used when its folder exists, the new parses are not stored, and the run's
signature says so (``cache.not_written``: the reason). A cache that cannot be **read** (a file
where its folder or a folder above it should be, a folder that cannot be listed) is ``[D870]``,
one coded error naming the path, on a Ray worker as on the driver.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import sys
import time
import uuid
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..anchors import spacy_extract as X
from ..anchors.spacy_extract import TokenArrays
from ..io.fs import parquet_source, replace, storage_path

if TYPE_CHECKING:
    import polars as pl

    from .parse import Parser

#: bump when the shard layout or the unit key changes (part of every fingerprint)
CACHE_FORMAT = 1
#: schema metadata key of a shard
SHARD_META_KEY = b"ddpcore.cache"
INFO_FILE = "info.json"
STRINGS_FILE = "strings.json"
SHARD_SUFFIX = ".parquet"
#: marker of a cache root folder and of a pipeline folder (written when the folder is first used)
ROOT_MARKER = "ddpcore-cache.json"
FOLDER_MARKER = "ddpcore-pipeline.json"
ROOT_MARKER_KIND = "ddpcore parse cache"
FOLDER_MARKER_KIND = "ddpcore parse cache pipeline folder"
#: names ddpcore writes inside a pipeline folder (shards, temp files of shards/JSON files, write probes)
SHARD_NAME = re.compile(r"[0-9a-f]+-[0-9]+-[0-9a-f]{8}\.parquet")
TEMP_NAME = re.compile(r"\.(?:[0-9a-f]+-[0-9]+-[0-9a-f]{8}|(?:info|strings|ddpcore-pipeline|ddpcore-cache)\.json\."
                       r"[0-9]+\.[0-9a-f]{8}|probe-[0-9]+-[0-9a-f]{8})(?:\.tmp)?")
#: a pipeline folder's name (:func:`fingerprint_id`)
FOLDER_NAME = re.compile(r"[A-Za-z0-9._]+-[^/\\]*-[0-9a-f]{16}")
#: token attributes stored per unit (``n_tokens__unit`` is the ``n_tokens`` column)
TOKEN_FIELDS: tuple[str, ...] = ("lower", "pos", "tag", "dep", "head", "iob", "enttype", "sent_start", "idx", "end")
TOKEN_DTYPES: dict[str, Any] = {
    "lower": np.uint64, "pos": np.int32, "tag": np.uint64, "dep": np.uint64, "head": np.int64, "iob": np.int8,
    "enttype": np.uint64, "sent_start": np.int8, "idx": np.int64, "end": np.int64,
}
#: decoded shards kept in memory during a run (bytes of token arrays)
DECODED_BUDGET = 256 * 2**20



# ------------------------------------------------------------------------------ keys


def unit_keys(texts: Sequence[str]) -> np.ndarray:
    """Cache keys (n_units, 2) uint64 of ``texts``: MurmurHash3_x64_128 of each UTF-8 text
    (``k0, k1`` = the 16-byte digest as two little-endian words), computed in one native pass."""
    import polars as pl

    from .._native import load

    if len(texts) == 0:
        return np.zeros((0, 2), dtype=np.uint64)
    # Arrow large_string buffers via polars (pa.array(list) would import pandas)
    arr = pl.Series(texts, dtype=pl.String).to_arrow(compat_level=pl.CompatLevel.oldest())
    if hasattr(arr, "combine_chunks"):
        arr = arr.combine_chunks()
    _, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[arr.offset:arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return load("unit_hash").hash_units(data, np.ascontiguousarray(offsets))


# ------------------------------------------------------------------------- gathering


def token_starts(toks: TokenArrays) -> np.ndarray:
    """First token (n_units,) int64 of each unit of ``toks``."""
    n = toks.n_tokens__unit.astype(np.int64)
    return np.cumsum(n) - n


def gather_units(parts: Sequence[TokenArrays], part__unit: np.ndarray, row__unit: np.ndarray) -> TokenArrays:
    """Assemble ``n`` units in order: unit ``i`` of the result is unit ``row__unit[i]`` of
    ``parts[part__unit[i]]`` (both (n,) int arrays). One vectorised gather per part and field."""
    part__unit = np.asarray(part__unit, dtype=np.int64)
    row__unit = np.asarray(row__unit, dtype=np.int64)
    n = len(part__unit)
    ntok = np.zeros(n, dtype=np.int64)
    sels = []
    for p, part in enumerate(parts):
        sel = np.flatnonzero(part__unit == p)
        sels.append(sel)
        if len(sel):
            ntok[sel] = part.n_tokens__unit[row__unit[sel]]
    out_start = np.cumsum(ntok) - ntok
    total = int(ntok.sum())
    out = {f: np.empty(total, dtype=TOKEN_DTYPES[f]) for f in TOKEN_FIELDS}
    for part, sel in zip(parts, sels):
        if not len(sel):
            continue
        lens = ntok[sel]
        m = int(lens.sum())
        if m == 0:
            continue
        rel = np.arange(m, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
        src = np.repeat(token_starts(part)[row__unit[sel]], lens) + rel
        dst = np.repeat(out_start[sel], lens) + rel
        for f in TOKEN_FIELDS:
            out[f][dst] = getattr(part, f)[src]
    return TokenArrays(**out, n_tokens__unit=ntok)


def take_units(toks: TokenArrays, rows: np.ndarray) -> TokenArrays:
    """The units ``rows`` (k,) of ``toks``, in that order."""
    return gather_units([toks], np.zeros(len(rows), dtype=np.int64), rows)


# ---------------------------------------------------------------------- fingerprints


def _meta_path(pipeline: str | None) -> Path | None:
    """The ``meta.json`` of an installed pipeline package or pipeline folder, found without
    importing it; None when it cannot be located."""
    import importlib.util

    target = X.resolve_pipeline(pipeline)
    if os.path.isdir(target):
        base = Path(target)
    else:
        if not target.replace("-", "_").isidentifier():
            return None
        try:
            spec = importlib.util.find_spec(target.replace("-", "_"))
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        base = Path(next(iter(spec.submodule_search_locations)))
    if (base / "meta.json").is_file():
        return base / "meta.json"
    found = sorted(base.glob("*/meta.json")) or sorted(base.glob("*/*/meta.json"))
    return found[0] if found else None


def static_fingerprint(pipeline: str | None) -> dict[str, Any] | None:
    """What a pipeline's parses depend on, read without loading it (``meta.json`` + package
    metadata): ``format, spacy, pipeline_name, pipeline_version, components`` (the enabled
    components exactly as :func:`~ddpcore.anchors.spacy_extract.load_pipeline` leaves them).
    None when the pipeline's meta cannot be found (the fingerprint then comes from the loaded
    pipeline, :func:`fingerprint_from_info`)."""
    import importlib.metadata as md

    path = _meta_path(pipeline)
    if path is None:
        return None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
        spacy_version = md.version("spacy")
    except (OSError, ValueError, md.PackageNotFoundError):
        return None
    enabled = set(meta.get("pipeline") or [])
    exclude = set(X.UNUSED_COMPONENTS)
    if pipeline in X.NO_PARSER_PRESETS:
        exclude.add("parser")
        enabled.add("senter")
    if pipeline in X.COMPILED_RULER_PRESETS:
        exclude.add("attribute_ruler")
    order = meta.get("components") or meta.get("pipeline") or []
    components = [c for c in order if c in enabled and c not in exclude]
    fp = {"format": CACHE_FORMAT, "spacy": spacy_version, "pipeline_name": X.canonical_pipeline_name(meta),
          "pipeline_version": meta.get("version"), "components": components}
    if pipeline in X.COMPILED_RULER_PRESETS:
        fp["pos"] = _compiled_pos_key()
    return with_weights(fp, pipeline)


def with_weights(fp: dict[str, Any], pipeline: str | None) -> dict[str, Any]:
    """``fp`` with the SHA-256 of a pipeline folder's files (``--pipeline PATH``:
    :func:`~ddpcore.anchors.spacy_extract.pipeline_folder_digest`) under ``weights``: a pipeline retrained in
    place keeps the name and version of its ``meta.json``, and must not be served the old weights' parses.
    An installed pipeline (a package name) is left as it is: reinstalling changes its version."""
    digest = X.pipeline_folder_digest(X.resolve_pipeline(pipeline)) if pipeline else None
    return {**fp, "weights": digest} if digest is not None else fp


def _compiled_pos_key() -> str:
    """Fingerprint entry of parses whose POS came from the compiled attribute ruler."""
    from ..anchors.pos_rules import POS_RULES_VERSION

    return f"compiled_attribute_ruler-v{POS_RULES_VERSION}"


def fingerprint_from_info(info: dict[str, Any]) -> dict[str, Any]:
    """The fingerprint of a loaded pipeline (its :func:`pipeline_info`)."""
    fp = {"format": CACHE_FORMAT, "spacy": info.get("spacy"), "pipeline_name": info.get("pipeline_name"),
          "pipeline_version": info.get("pipeline_version"), "components": list(info.get("components") or [])}
    if info.get("pos_source") == "compiled_attribute_ruler":  # absent otherwise: older folders stay valid
        fp["pos"] = _compiled_pos_key()
    if info.get("weights"):  # a pipeline folder's files (with_weights); absent for installed pipelines
        fp["weights"] = info["weights"]
    return fp


def fingerprint_id(fp: dict[str, Any]) -> str:
    """Folder name of a fingerprint: ``<pipeline_name>-<version>-<16 hex digits>``."""
    digest = hashlib.blake2b(json.dumps(fp, sort_keys=True).encode(), digest_size=8).hexdigest()
    name = "".join(ch if ch.isalnum() or ch in "._" else "_" for ch in str(fp.get("pipeline_name")))
    return f"{name}-{fp.get('pipeline_version')}-{digest}"


# --------------------------------------------------------------------------- shards


def _checksum(keys: np.ndarray, n_tokens: np.ndarray, flat: dict[str, np.ndarray]) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(np.ascontiguousarray(keys, dtype=np.uint64).tobytes())
    h.update(np.ascontiguousarray(n_tokens, dtype=np.int64).tobytes())
    for f in TOKEN_FIELDS:
        h.update(np.ascontiguousarray(flat[f], dtype=TOKEN_DTYPES[f]).tobytes())
    return h.hexdigest()


def _np(arr: Any, dtype: Any) -> np.ndarray:
    """A null-free primitive Arrow array (or chunked array) as numpy, through its buffer
    (``Array.to_numpy`` imports pandas, which costs more than a cached run)."""
    if hasattr(arr, "combine_chunks"):
        arr = arr.combine_chunks()
    buf = arr.buffers()[1]
    if buf is None:
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype)[arr.offset:arr.offset + len(arr)]


def _list_values(col: Any, dtype: Any) -> np.ndarray:
    """The flat values of a ``large_list`` column (``ListArray.flatten`` would import pyarrow.compute)."""
    arr = col.combine_chunks() if hasattr(col, "combine_chunks") else col
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset:arr.offset + len(arr) + 1]
    values = _np(arr.values, dtype)
    return values[int(offsets[0]):int(offsets[-1])] if len(offsets) else values[:0]


class ShardError(Exception):
    """A shard that cannot be read or fails its checksum."""


def _arrow(values: np.ndarray) -> Any:
    """A 1-d numeric numpy array as a pyarrow Array over the same bytes (no nulls). ``pa.array`` would
    do it too, but it imports pandas to look for pandas types first (~0.35 CPU-s on every cold run)."""
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def write_shard(folder: Path, keys: np.ndarray, toks: TokenArrays) -> Path:
    """Store ``toks`` (n_units) under ``keys`` (n_units, 2) as a new immutable shard
    (temp file + rename); returns its path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n_tokens = toks.n_tokens__unit.astype(np.int64)
    offsets = _arrow(np.concatenate([[0], np.cumsum(n_tokens)]).astype(np.int64))
    flat = {f: np.ascontiguousarray(getattr(toks, f), dtype=TOKEN_DTYPES[f]) for f in TOKEN_FIELDS}
    cols = {"k0": _arrow(keys[:, 0]), "k1": _arrow(keys[:, 1]), "n_tokens": _arrow(n_tokens)}
    for f in TOKEN_FIELDS:
        cols[f] = pa.LargeListArray.from_arrays(offsets, _arrow(flat[f]))
    meta = {"format": CACHE_FORMAT, "units": int(len(keys)), "tokens": int(n_tokens.sum()),
            "checksum": _checksum(keys, n_tokens, flat), "folder": folder.name}
    table = pa.table(cols).replace_schema_metadata({SHARD_META_KEY: json.dumps(meta).encode()})
    name = f"{time.time_ns():x}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp = folder / f".{name}.tmp"
    final = folder / f"{name}{SHARD_SUFFIX}"
    try:
        sink = pa.BufferOutputStream()  # (bytes, then one write: a local folder or a pyarrow.fs URI alike)
        pq.write_table(table, sink, compression="zstd", row_group_size=1 << 20)
        tmp.write_bytes(sink.getvalue().to_pybytes())
        replace(tmp, final)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return final


def read_shard_keys(path: Path) -> tuple[np.ndarray, str | None]:
    """The keys (n_units, 2) uint64 of a shard and the pipeline folder it was written in (its
    ``folder``, the :func:`fingerprint_id` of its parses; None for a shard written before shards
    recorded it). Raises :class:`ShardError`."""
    import pyarrow.parquet as pq

    try:
        with pq.ParquetFile(parquet_source(path)) as fh:  # (pq.read_table would import pyarrow.dataset and pandas)
            t = fh.read(columns=["k0", "k1"])
        keys = np.stack([_np(t["k0"], np.uint64), _np(t["k1"], np.uint64)], axis=1)
        owner = json.loads((t.schema.metadata or {}).get(SHARD_META_KEY, b"{}")).get("folder")
    except Exception as exc:  # any reader failure: a truncated or foreign file
        raise ShardError(f"{type(exc).__name__}: {exc}") from None
    return keys, owner if isinstance(owner, str) else None


def read_shard(path: Path) -> tuple[np.ndarray, TokenArrays]:
    """Keys (n_units, 2) and token arrays of a shard, checksum verified (raises :class:`ShardError`)."""
    import pyarrow.parquet as pq

    try:
        with pq.ParquetFile(parquet_source(path)) as fh:
            t = fh.read()
        meta = json.loads((t.schema.metadata or {})[SHARD_META_KEY])
        keys = np.stack([_np(t["k0"], np.uint64), _np(t["k1"], np.uint64)], axis=1)
        n_tokens = _np(t["n_tokens"], np.int64)
        flat = {f: _list_values(t[f], TOKEN_DTYPES[f]) for f in TOKEN_FIELDS}
    except Exception as exc:
        raise ShardError(f"unreadable ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})") from None
    if meta.get("format") != CACHE_FORMAT or any(len(flat[f]) != int(n_tokens.sum()) for f in TOKEN_FIELDS):
        raise ShardError("inconsistent shard (format or token counts)")
    if _checksum(keys, n_tokens, flat) != meta.get("checksum"):
        raise ShardError("checksum mismatch")
    return keys, TokenArrays(**flat, n_tokens__unit=n_tokens)


def _write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_text(json.dumps(data, sort_keys=True, indent=1), encoding="utf-8")
        replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


#: key of the checksum inside ``info.json`` and ``strings.json``
JSON_CHECKSUM_KEY = "checksum"


def _json_checksum(data: dict[str, Any]) -> str:
    """BLAKE2b of the canonical JSON of ``data`` (keys sorted, no spaces), without its checksum."""
    body = {k: v for k, v in data.items() if k != JSON_CHECKSUM_KEY}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.blake2b(text.encode("ascii"), digest_size=16).hexdigest()


def write_checked_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` plus its checksum (temp file + rename)."""
    _write_json_atomic(path, {**data, JSON_CHECKSUM_KEY: _json_checksum(data)})


def read_checked_json(path: Path) -> tuple[dict[str, Any] | None, str]:
    """``(data, status)`` of a checksummed JSON file: status ``ok`` (data without its checksum),
    ``missing``, ``legacy`` (written before checksums: not trusted, data None), ``corrupted``
    (unreadable, not a JSON object, or a checksum that does not match: data None)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, "missing"
    except OSError:
        return None, "corrupted"
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None, "corrupted"
    if not isinstance(data, dict):
        return None, "corrupted"
    if JSON_CHECKSUM_KEY not in data:
        return None, "legacy"
    if data[JSON_CHECKSUM_KEY] != _json_checksum(data):
        return None, "corrupted"
    return {k: v for k, v in data.items() if k != JSON_CHECKSUM_KEY}, "ok"


def shard_files(folder: Path, strict: bool = False) -> list[Path]:
    """The shards of a pipeline folder: files named as :func:`write_shard` names them (any other
    ``.parquet`` file there is not ddpcore's and is never read, counted or removed). A folder that
    cannot be listed has none, or raises its OSError when ``strict``."""
    try:
        return sorted(p for p in folder.iterdir() if SHARD_NAME.fullmatch(p.name) and p.is_file())
    except OSError:
        if strict:
            raise
        return []


# ------------------------------------------------------------------------------ store


class _Store:
    """One fingerprint folder: the key index of its shards (in memory), reads and writes."""

    def __init__(self, folder: Path, warn: Callable[[str], None]) -> None:
        import polars as pl

        self.folder = folder
        self.warn = warn
        self.shards: list[Path] = []
        self.dead: set[int] = set()
        self.dropped: list[str] = []
        self.gone: list[str] = []  # shards removed by someone else since this run listed them (said once)
        self.foreign: list[str] = []  # shards written in another pipeline folder (copied by hand): never read
        # shards of an older ddpcore, which recorded no folder: nothing in them names their configuration, so they
        # are trusted; those this run serves parses from are said once and recorded (``cache.unstamped``)
        self._unstamped: set[int] = set()
        self.unstamped: list[str] = []
        self._decoded: OrderedDict[int, TokenArrays] = OrderedDict()
        self._decoded_bytes = 0
        parts = []
        for path in shard_files(folder, strict=True):
            try:
                keys, owner = read_shard_keys(path)
            except ShardError as exc:
                self._drop(path, str(exc))
                continue
            if owner is not None and owner != folder.name:  # another configuration's parses, copied by hand
                self._foreign(path, owner)
                continue
            sid = len(self.shards)
            if owner is None:
                self._unstamped.add(sid)
            self.shards.append(path)
            parts.append(self._frame(keys, sid))
        self.index: pl.DataFrame = (pl.concat(parts) if parts else self._frame(np.zeros((0, 2), np.uint64), 0)
                                    ).unique(subset=["k0", "k1"], keep="first", maintain_order=True)

    @staticmethod
    def _frame(keys: np.ndarray, sid: int) -> pl.DataFrame:
        import polars as pl

        n = len(keys)
        return pl.DataFrame({"k0": keys[:, 0], "k1": keys[:, 1], "shard": np.full(n, sid, dtype=np.int32),
                             "row": np.arange(n, dtype=np.int64)},
                            schema={"k0": pl.UInt64, "k1": pl.UInt64, "shard": pl.Int32, "row": pl.Int64})

    def _drop(self, path: Path, why: str) -> None:
        if not path.exists():  # not corrupted: removed since this run listed it (`ddp cache clear`, another run)
            if not self.gone:
                self.warn(f"parse cache shard {path} was removed while this run used the cache (`ddp cache clear`?); "
                          "its units, and those of any other shard removed meanwhile, are parsed again")
            self.gone.append(path.name)
            return
        self.dropped.append(path.name)
        try:
            path.unlink()
            fate = "removed"
        except OSError as exc:  # a read-only cache: the shard stays, and is skipped on every run
            fate = (f"could not be removed ({exc.strerror or exc}; delete it, or `ddp cache clear`), skipped")
        self.warn(f"parse cache shard {path} is corrupted ({why}); {fate}, its units are parsed again")

    def _foreign(self, path: Path, owner: str) -> None:
        self.foreign.append(path.name)
        try:
            path.unlink()
            fate = "removed"
        except OSError as exc:  # a read-only cache: the shard stays, and is skipped on every run
            fate = f"could not be removed ({exc.strerror or exc}; delete it), skipped"
        self.warn(f"parse cache shard {path} was written in the pipeline folder {owner}, not {self.folder.name} "
                  f"(copied by hand?): it holds another pipeline configuration's parses; {fate}, its units are "
                  "parsed again")

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(shard, row) (n,) of each key; shard -1 where the key is not cached."""
        import polars as pl

        q = pl.DataFrame({"k0": keys[:, 0], "k1": keys[:, 1]}, schema={"k0": pl.UInt64, "k1": pl.UInt64})
        j = q.join(self.index, on=["k0", "k1"], how="left", maintain_order="left")
        return (j["shard"].fill_null(-1).to_numpy().astype(np.int64),
                j["row"].fill_null(-1).to_numpy().astype(np.int64))

    def fetch(self, sid: int) -> TokenArrays | None:
        """The token arrays of shard ``sid`` (verified), or None if it is corrupted (then
        reported, removed from the index and deleted)."""
        if sid in self._decoded:
            self._decoded.move_to_end(sid)
            return self._decoded[sid]
        if sid in self.dead:
            return None
        path = self.shards[sid]
        try:
            _, toks = read_shard(path)
        except ShardError as exc:
            self.dead.add(sid)
            self.index = self.index.filter(self.index["shard"] != sid)
            self._drop(path, str(exc))
            return None
        if sid in self._unstamped:
            if not self.unstamped:
                self.warn(f"parse cache folder {self.folder} holds {len(self._unstamped)} shard(s) written by an older "
                          "ddpcore, which did not record their pipeline folder; their parses are trusted as this "
                          "configuration's (if shards were copied here from another folder, clear it: `ddp cache "
                          f"clear --cache {self.folder.parent} --pipeline {self.folder.name}`); recorded as cache.unstamped")
            self.unstamped.append(path.name)
        size = sum(getattr(toks, f).nbytes for f in TOKEN_FIELDS)
        self._decoded[sid] = toks
        self._decoded_bytes += size
        while self._decoded_bytes > DECODED_BUDGET and len(self._decoded) > 1:
            _, old = self._decoded.popitem(last=False)
            self._decoded_bytes -= sum(getattr(old, f).nbytes for f in TOKEN_FIELDS)
        return toks

    def store(self, keys: np.ndarray, toks: TokenArrays) -> None:
        """Write a shard of new units and add them to the index."""
        import polars as pl

        path = write_shard(self.folder, keys, toks)
        sid = len(self.shards)
        self.shards.append(path)
        self.index = pl.concat([self.index, self._frame(keys, sid)]).unique(
            subset=["k0", "k1"], keep="first", maintain_order=True)


# ----------------------------------------------------------------------------- the cache


def resolve_cache(cache: str | os.PathLike[str] | bool | None) -> Path | None:
    """The cache folder of a ``cache`` argument: ``None``/``True`` the default location
    (:func:`ddpcore.config.cache_dir`), a path that folder, ``False`` no cache (None). An empty path is
    D183: it would make the current folder the cache (``Path("")`` is ``.``), which nobody asks for."""
    from ..config import cache_dir

    if cache is False:
        return None
    if cache is None or cache is True:
        return cache_dir()
    if not str(os.fspath(cache)).strip():
        from ..errors import DDPUsageError

        raise DDPUsageError(f"the cache folder is empty ({os.fspath(cache)!r}: --cache DIR, or cache= in Python); name a "
                            "folder, leave it out for the default one, or use --no-cache (cache=False)", code="D183")
    return storage_path(cache)  # a local folder, or a StoragePath for a pyarrow.fs URI (s3://, gs://...)


def default_warn(message: str) -> None:
    """Python API warnings: a :class:`RuntimeWarning` (one line)."""
    warnings.warn(message, RuntimeWarning, stacklevel=4)


def stderr_warn(prefix: str) -> Callable[[str], None]:
    """CLI warnings: one line ``<prefix>: warning: <message>`` on stderr."""

    def warn(message: str) -> None:
        from ..io.tables import one_line  # a name (a path) holding a line break stays on the one line

        print(one_line(f"{prefix}: warning: {message}"), file=sys.stderr, flush=True)

    return warn


def _readable_folder(folder: Path) -> bool:
    """Whether ``folder`` exists as a folder (False also when that cannot be looked up)."""
    try:
        return folder.is_dir()
    except OSError:
        return False


def blocked_folder(path: Path) -> str | None:
    """Why no folder can be at ``path`` (a local path): a file is there or above it, or a symbolic link
    to nothing is (``mkdir`` cannot follow it); None when it is a folder or can be made one."""
    if not isinstance(path, Path):
        return None
    for p in [path, *path.parents]:
        try:
            if p.is_symlink() and not p.exists():
                return f"{p} is a symbolic link to {os.readlink(p)}, which does not exist"
            if p.exists():
                return None if p.is_dir() else "a file is where its folder should be"
        except OSError:
            return None
    return None


def _unreadable(where: Path, exc: OSError) -> Exception:
    """``[D870]``: the parse cache at ``where`` cannot be read (a file where its folder should be, or a
    folder that cannot be listed): one coded error, on the driver or on a Ray worker alike."""
    from ..errors import DDPDataError

    why = (blocked_folder(where) or "a file is where its folder should be") \
        if isinstance(exc, (NotADirectoryError, FileExistsError)) else (exc.strerror or " ".join(str(exc).split())[:200])
    return DDPDataError(f"{where}: cannot read the parse cache ({why}); give a folder every node of the cluster sees "
                        "with --cache DIR or DDPCORE_CACHE, or run with --no-cache", code="D870")


@dataclass
class CachedParse:
    """The parse function of a run with the cache: ``(texts, progress) -> TokenArrays`` like
    :meth:`Parser.parse`. Units found in the cache are read from it; the others are parsed
    (each distinct text once), stored and everything is reassembled in input order.
    ``hits``/``misses`` count units served by the cache and units parsed."""

    parser: Parser
    root: Path
    warn: Callable[[str], None] = default_warn
    hits: int = 0
    misses: int = 0
    enabled: bool = True
    _store: _Store | None = None
    _folder: Path | None = None
    _info_saved: bool = False
    _strings_saved: int = -1
    _warmed: bool = False
    _weights: str | None = None
    _fp: dict[str, Any] = field(default_factory=dict)
    _seen: set[str] = field(default_factory=set)
    corrupted: list[str] = field(default_factory=list)
    #: cache files of another pipeline configuration found in this one's folder (copied by hand): not used
    foreign: list[str] = field(default_factory=list)
    #: why the cache could not be written (None: it could): its parses are still read when its folder exists
    not_written: str | None = None

    # -- set-up (on the first call, so opening the cache costs nothing when nothing is parsed)
    def _open(self) -> None:
        if self._store is not None or not self.enabled:
            return
        fp = None if self.parser.loaded else static_fingerprint(self.parser.pipeline)
        if fp is None:
            fp = with_weights(fingerprint_from_info(self.parser.info()), self.parser.pipeline)
        self._weights = fp.get("weights")
        self._fp = fp
        folder = self.root / fingerprint_id(fp)
        foreign = marker_folder(folder)
        if foreign is not None and foreign != folder.name:
            # a folder renamed or copied by hand: its parses are another pipeline configuration's
            self.enabled = False
            self.not_written = f"{folder.name} holds the parses of another pipeline configuration ({foreign})"
            self.warn(f"parse cache folder {folder} holds the parses of another pipeline configuration (its "
                      f"{FOLDER_MARKER} names {foreign}: renamed or copied by hand?); not used, this run parses every "
                      f"line and stores nothing (remove it: `ddp cache clear --cache {self.root} --pipeline "
                      f"{folder.name}`)")
            return
        try:
            folder.mkdir(parents=True, exist_ok=True)
            probe = folder / f".probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            probe.write_bytes(b"")
            probe.unlink()
            _mark(self.root, folder, fp)
        except (NotADirectoryError, FileExistsError) as exc:  # the cache, or a folder above it, is a file
            raise _unreadable(self.root, exc) from None
        except OSError as exc:
            self.not_written = exc.strerror or str(exc)
            if not _readable_folder(folder):  # nothing to read: the run goes without the cache
                self.enabled = False
                self.warn(f"cannot write the parse cache at {self.root} ({self.not_written}); running without the "
                          "cache (choose another folder with --cache DIR or DDPCORE_CACHE, or --no-cache)")
                return
            self.warn(f"cannot write the parse cache at {self.root} ({self.not_written}); its parses are used, but "
                      "the new parses of this run are not stored (make the folder writable, or choose another one "
                      "with --cache DIR)")
        self._folder = folder
        info, status = read_checked_json(folder / INFO_FILE)
        if status == "corrupted":
            self._corrupted(folder / INFO_FILE, "the pipeline's details are read from the pipeline")
        if info is not None and fingerprint_from_info(info) == fp:
            info["pipeline"] = self.parser.pipeline or "default"
            info.pop("weights", None)  # the cache's key, not a detail of the pipeline the signature shows
            self.parser.provide_info(info)
            self._info_saved = True
        elif info is not None and _other_folder(self.root, folder, info):
            # intact, but the details of the configuration of another folder of this cache (copied by hand):
            # said and recorded, not used. (A pipeline whose loaded details differ from its meta.json writes
            # an info.json that names no folder: ignored in silence, as before.)
            self.foreign.append(INFO_FILE)
            again = "it is written again" if self.not_written is None else "the cache cannot be written"
            self.warn(f"parse cache file {folder / INFO_FILE} holds the details of another pipeline configuration, "
                      f"that of the folder {fingerprint_id(fingerprint_from_info(info))} (copied by hand?); ignored: "
                      f"the pipeline's details are read from the pipeline, and {again}")
        strings, status = read_checked_json(folder / STRINGS_FILE)
        if status == "corrupted":
            self._corrupted(folder / STRINGS_FILE, "the spaCy ids come from spaCy")
        if strings is not None and strings.get("spacy") == fp["spacy"]:
            try:
                ids = {str(k): int(v) for k, v in strings.get("strings", {}).items()}
                pos = {str(k): int(v) for k, v in strings.get("pos", {}).items()}
            except (AttributeError, TypeError, ValueError):  # a checksummed file of another shape: not ours
                ids, pos = {}, {}
            for k, v in ids.items():
                X.STRING_IDS.setdefault(k, v)
            for k, v in pos.items():
                X.POS_IDS.setdefault(k, v)
            self._strings_saved = len(X.STRING_IDS) + len(X.POS_IDS)
        self._spacy_version = fp["spacy"]
        try:
            self._store = _Store(folder, self.warn)
        except OSError as exc:  # the folder cannot be listed
            raise _unreadable(folder, exc) from None

    def _corrupted(self, path: Path, fallback: str) -> None:
        self.corrupted.append(path.name)
        again = "the file is written again" if self.not_written is None else "the cache cannot be written"
        self.warn(f"parse cache file {path} is corrupted (checksum mismatch or unreadable); ignored: {fallback}, "
                  f"and {again}")

    def signature(self) -> dict[str, Any]:
        """The ``cache`` entry of a run signature (``corrupted``: the cache files found corrupted and
        not used, only when there were any)."""
        entry: dict[str, Any] = {"hits": self.hits, "misses": self.misses,
                                 "dir": str(self.root) if self.enabled else None}
        dropped = self.corrupted + (self._store.dropped if self._store is not None else [])
        if dropped:
            entry["corrupted"] = sorted(dropped)
        foreign = self.foreign + (self._store.foreign if self._store is not None else [])
        if foreign:
            entry["foreign"] = sorted(foreign)
        if self._store is not None and self._store.unstamped:  # shards of an older ddpcore served (trusted)
            entry["unstamped"] = sorted(self._store.unstamped)
        if self.not_written is not None:
            entry["not_written"] = self.not_written
        return {"cache": entry}

    # -- the parse function
    def __call__(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> TokenArrays:
        self._open()
        store = self._store
        if store is None:
            self.misses += len(texts)
            return self.parser.parse(texts, progress)
        n = len(texts)
        if n == 0:
            return TokenArrays.empty()
        keys = unit_keys(texts)
        shard, row = store.lookup(keys)
        # read the hit shards (a corrupted one turns its units into misses)
        parts: list[TokenArrays] = []
        part = np.full(n, -1, dtype=np.int64)
        for sid in np.unique(shard[shard >= 0]):
            toks = store.fetch(int(sid))
            sel = shard == sid
            if toks is None:
                shard[sel] = -1
                continue
            part[sel] = len(parts)
            parts.append(toks)
        hit = part >= 0
        n_hit = int(hit.sum())
        self.hits += n_hit
        self.misses += n - n_hit
        if progress and n_hit:
            progress(n_hit)
        miss = np.flatnonzero(~hit)
        if len(miss):
            # each distinct text once, in order of first appearance
            uniq, first, inverse = np.unique(keys[miss], axis=0, return_index=True, return_inverse=True)
            order = np.argsort(first, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            todo = miss[first[order]]
            parsed = self.parser.parse([texts[int(i)] for i in todo], progress)
            if progress and len(miss) > len(todo):
                progress(len(miss) - len(todo))
            part[miss] = len(parts)
            row[miss] = rank[np.asarray(inverse).reshape(-1)]
            parts.append(parsed)
            if self.not_written is None:
                self._save(keys[todo], parsed)
        return gather_units(parts, part, row)

    def _save(self, keys: np.ndarray, parsed: TokenArrays) -> None:
        """Store new parses and what a later fully cached run needs (pipeline info, spaCy ids)."""
        assert self._store is not None and self._folder is not None
        try:
            try:
                self._store.store(keys, parsed)
            except FileNotFoundError:  # the folder was removed during the run (`ddp cache clear`): made again
                self._folder.mkdir(parents=True, exist_ok=True)
                _mark(self.root, self._folder, self._fp)
                self._info_saved, self._strings_saved = False, -1
                self._store.store(keys, parsed)
            self._save_info()
            self._save_strings()
        except OSError as exc:  # the store stays readable: its index knows only the shards that were written
            self.not_written = exc.strerror or str(exc)
            self.warn(f"cannot write the parse cache at {self.root} ({self.not_written}); new parses of this "
                      "run are not stored")

    def _save_info(self) -> None:
        if not self._info_saved:
            assert self._folder is not None
            info = self.parser.info()
            write_checked_json(self._folder / INFO_FILE, {**info, "weights": self._weights} if self._weights else info)
            self._info_saved = True

    def _save_strings(self) -> None:
        """Record the spaCy ids every built-in rule set needs (spaCy is imported by now)."""
        if "spacy" not in sys.modules:
            return
        if not self._warmed:
            self._warmed = True
            from ..anchors.rules import get_rules
            from .stages import refinement_tables, rule_tables

            for name in ("paper", "refined"):
                rs = get_rules(name)
                with contextlib.suppress(Exception):
                    rule_tables(rs)
                    refinement_tables(rs, has_parser=False)
        count = len(X.STRING_IDS) + len(X.POS_IDS)
        if count == self._strings_saved:
            return
        assert self._folder is not None
        path = self._folder / STRINGS_FILE
        old, _ = read_checked_json(path)  # (a concurrent run's ids; a corrupted or legacy file is replaced)
        if old is None or old.get("spacy") != self._spacy_version:
            old = {}
        data = {"spacy": self._spacy_version, "strings": {**old.get("strings", {}), **X.STRING_IDS},
                "pos": {**old.get("pos", {}), **X.POS_IDS}}
        write_checked_json(path, data)
        self._strings_saved = count

    def flush(self) -> None:
        """Save spaCy ids computed after the last store (called at the end of a run)."""
        if self._folder is not None and self.enabled and self.not_written is None:
            with contextlib.suppress(OSError):
                self._save_info()  # (a corrupted or legacy info.json of a fully cached run; info is known by now)
                self._save_strings()


def _other_folder(root: Path, folder: Path, info: dict[str, Any]) -> bool:
    """Whether ``info`` (an intact ``info.json`` of ``folder``) is the pipeline info of another pipeline folder
    of the cache ``root``: its fingerprint names a folder there other than ``folder`` (copied from it by hand)."""
    try:
        other = fingerprint_id(fingerprint_from_info(info))
    except (TypeError, ValueError):
        return False
    return other != folder.name and _readable_folder(root / other)


def cache_wrapper(cache: str | os.PathLike[str] | bool | None, *,
                  warn: Callable[[str], None] = default_warn, outputs: Sequence[Any] = (),
                  inputs: Sequence[Any] = ()) -> Callable[[Parser], CachedParse] | None:
    """A ``parse_wrapper`` for :func:`~ddpcore.engines.run.profile_to_files` (None when ``cache``
    is False): ``wrapper(parser)`` returns the :class:`CachedParse` of that parser. The cache
    folder is checked against the run's ``outputs`` and ``inputs`` now (:func:`check_cache_path`)."""
    check_cache_path(cache, outputs=outputs, inputs=inputs)
    root = resolve_cache(cache)
    if root is None:
        return None

    def wrap(parser: Parser) -> CachedParse:
        return CachedParse(parser, root, warn)

    return wrap


# ------------------------------------------------------------------------- maintenance


def _mark(root: Path, folder: Path, fp: dict[str, Any]) -> None:
    """Write the root and pipeline-folder markers that are missing or damaged (raises OSError): a
    damaged marker left in place would make ``ddp cache clear`` keep it (and its folder) on every clear,
    and refuse the cache (D750) once nothing else in it is recognised."""
    if not is_marked_root(root):
        write_checked_json(root / ROOT_MARKER, {"kind": ROOT_MARKER_KIND, "format": CACHE_FORMAT})
    if marker_folder(folder) != folder.name:  # (a marker naming another folder never reaches here: _open)
        write_checked_json(folder / FOLDER_MARKER, {"kind": FOLDER_MARKER_KIND, "fingerprint": fp})


def marker_folder(folder: Path) -> str | None:
    """The folder name (:func:`fingerprint_id`) of the fingerprint that ``folder``'s marker records;
    None when it has no marker, or one that is damaged or not ddpcore's."""
    marker, _ = read_checked_json(folder / FOLDER_MARKER)
    fp = marker.get("fingerprint") if marker is not None and marker.get("kind") == FOLDER_MARKER_KIND else None
    if not isinstance(fp, dict):
        return None
    try:
        return fingerprint_id(fp)
    except (TypeError, ValueError):  # (a checksummed marker of another shape)
        return None


def is_marked_root(root: Path) -> bool:
    """Whether ``root`` carries the cache marker ddpcore writes when it first uses a cache folder."""
    marker, _ = read_checked_json(root / ROOT_MARKER)
    return marker is not None and marker.get("kind") == ROOT_MARKER_KIND


def _any_json(path: Path) -> dict[str, Any] | None:
    """A JSON object file with or without a checksum (None if unreadable): for recognising folders only."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def folder_kind(folder: Path) -> str | None:
    """``marked`` (a pipeline folder with ddpcore's marker, whose fingerprint is the folder's
    name), ``foreign`` (its name is a fingerprint id, and ddpcore's marker in it records another
    fingerprint: a folder renamed or copied by hand, never read by a run), ``legacy`` (written
    before markers existed: its name is a fingerprint id and its ``info.json`` has that fingerprint,
    or one of its shards passes its checksum) or None (not a folder ddpcore wrote: never read as a
    cache, never cleared). A symbolic link to a folder is judged by that folder (a run reads it)."""
    if not folder.is_dir():
        return None
    marked = marker_folder(folder)
    if marked == folder.name:
        return "marked"
    if not FOLDER_NAME.fullmatch(folder.name):
        return None
    if marked is not None:
        return "foreign"
    info = _any_json(folder / INFO_FILE)
    if info is not None:
        with contextlib.suppress(Exception):
            if fingerprint_id(fingerprint_from_info(info)) == folder.name:
                return "legacy"
    for shard in shard_files(folder):
        try:
            read_shard(shard)
        except ShardError:
            continue
        return "legacy"
    return None


def cache_folders(root: Path) -> list[tuple[Path, str]]:
    """The pipeline folders of ``root`` ddpcore wrote, with their :func:`folder_kind`."""
    if not root.is_dir():
        return []
    found = []
    for folder in sorted(root.iterdir()):
        kind = folder_kind(folder)
        if kind is not None:
            found.append((folder, kind))
    return found


def _owned_files(folder: Path, kind: str) -> tuple[list[Path], list[Path]]:
    """(files of the cache layout ddpcore wrote, every other entry) in a recognised pipeline folder.
    In a ``legacy`` or ``foreign`` folder a shard counts as ddpcore's only if it passes its checksum, the
    marker only if it is ddpcore's (checksum and kind). A folder removed meanwhile (a concurrent clear) has none."""
    owned, other = [], []
    fixed = {INFO_FILE, STRINGS_FILE} | ({FOLDER_MARKER} if kind == "marked" else set())
    try:
        entries = sorted(folder.iterdir())
    except FileNotFoundError:
        return [], []
    for p in entries:
        name = p.name
        ours = p.is_file() and not p.is_symlink() and (
            name in fixed or TEMP_NAME.fullmatch(name) is not None or SHARD_NAME.fullmatch(name) is not None
            or (name == FOLDER_MARKER and marker_folder(folder) is not None))
        if ours and kind != "marked" and SHARD_NAME.fullmatch(name):
            try:
                read_shard(p)
            except ShardError:
                ours = False
        if not ours and not (p.is_symlink() or p.exists()):  # removed meanwhile (a concurrent clear or run): neither
            continue
        (owned if ours else other).append(p)
    return owned, other


def _file_size(path: Path) -> int:
    """Bytes of ``path`` (0 when it is gone: removed by a concurrent clear or run)."""
    try:
        return path.stat().st_size if path.is_file() else 0
    except OSError:
        return 0


def cache_summary(root: Path) -> dict[str, Any]:
    """What :func:`cache_info` reports: location, shard/unit counts and bytes per pipeline folder
    (only the folders ddpcore wrote, :func:`cache_folders`; ``is_cache``: the folder has the cache
    marker or such a folder). ``units``/``tokens`` count each cached line once, however many shards
    hold it (concurrent runs may each store the same line); ``foreign``: a folder a run does not read
    (:func:`folder_kind`)."""
    import pyarrow.parquet as pq

    pipelines = []
    folders = cache_folders(root)
    for folder, kind in folders:
        shards = shard_files(folder)
        bad = 0
        keys, n_tokens = [], []
        for s in shards:
            try:
                with pq.ParquetFile(parquet_source(s)) as fh:
                    t = fh.read(columns=["k0", "k1", "n_tokens"])
                keys.append(np.stack([_np(t["k0"], np.uint64), _np(t["k1"], np.uint64)], axis=1))
                n_tokens.append(_np(t["n_tokens"], np.int64))
            except Exception:  # unreadable: counted, reported (unless removed meanwhile)
                bad += s.exists()
        units = tokens = 0
        if keys:
            _, first = np.unique(np.concatenate(keys), axis=0, return_index=True)
            units, tokens = len(first), int(np.concatenate(n_tokens)[first].sum())
        owned, _ = _owned_files(folder, kind) if kind == "marked" else ([*shards, folder / INFO_FILE,
                                                                            folder / STRINGS_FILE], [])
        size = sum(_file_size(f) for f in owned)
        info = _any_json(folder / INFO_FILE) or {}
        pipelines.append({
            "folder": folder.name, "pipeline_name": info.get("pipeline_name"),
            "pipeline_version": info.get("pipeline_version"), "spacy": info.get("spacy"),
            "components": info.get("components"), "shards": len(shards), "units": units, "tokens": tokens,
            "unreadable_shards": bad, "bytes": size, "marked": kind == "marked", "foreign": kind == "foreign",
        })
    return {"dir": str(root), "exists": root.is_dir(), "is_cache": is_marked_root(root) or bool(folders),
            "format": CACHE_FORMAT, "units": sum(p["units"] for p in pipelines),
            "shards": sum(p["shards"] for p in pipelines), "bytes": sum(p["bytes"] for p in pipelines),
            "pipelines": pipelines}


def pipeline_folder(pipeline: str | None) -> str | None:
    """The name of the cache folder ``ddp profile --pipeline PIPELINE`` parses into (``None``: the default
    pipeline): :func:`fingerprint_id` of :func:`static_fingerprint`, the derivation :class:`CachedParse`
    uses, so presets and aliases name the folder of their pipeline configuration (``default``, ``sm``,
    ``en_core_web_sm`` one folder; ``fast``, parser-free with the compiled attribute ruler, its own).
    None when the pipeline's ``meta.json`` cannot be found (not installed). Never loads spaCy."""
    fp = static_fingerprint(pipeline)
    return None if fp is None else fingerprint_id(fp)


def pipeline_names_of_folder(folder: str) -> list[str]:
    """The ``--pipeline`` presets and documented names (:data:`~ddpcore.anchors.spacy_extract.PRESETS`,
    :data:`~ddpcore.anchors.spacy_extract.ALIASES`, the default package) whose runs use the cache folder
    ``folder`` (:func:`pipeline_folder`), in that order."""
    names = [*X.PRESETS, X.DEFAULT_PIPELINE, *X.ALIASES]
    return [n for n in dict.fromkeys(names) if pipeline_folder(n) == folder]


@dataclass
class PipelineSelection:
    """How :func:`clear_cache` read its ``pipeline`` argument.

    ``how``: ``"folder"`` (the name of a pipeline folder in the cache), ``"configuration"`` (a pipeline as
    ``ddp profile --pipeline`` takes it: a preset, an installed name or a path; ``folder`` is the one
    folder its runs use, :func:`pipeline_folder`, and ``same_folder`` the other presets/names that use it
    too) or ``"name"`` (not an installed pipeline, so its folder cannot be derived: every folder of that
    pipeline name, ``<name>-<version>-<fingerprint>``)."""

    requested: str
    how: str
    folder: str | None = None
    same_folder: list[str] = field(default_factory=list)

    def matches(self, name: str) -> bool:
        if self.how == "name":
            return name.startswith(self.requested + "-")
        return name == self.folder

    def to_dict(self) -> dict[str, Any]:
        return {"requested": self.requested, "how": self.how, "folder": self.folder, "same_folder": self.same_folder}


def select_pipeline(folders: Sequence[str], pipeline: str) -> PipelineSelection:
    """What ``--pipeline PIPELINE`` of ``ddp cache clear`` names among the cache's pipeline ``folders``
    (:class:`PipelineSelection`): a folder name as is; else the folder of that pipeline configuration,
    derived as ``ddp profile --pipeline PIPELINE`` derives it; else (a pipeline not installed here) every
    folder of that pipeline name."""
    if pipeline in folders:
        return PipelineSelection(pipeline, "folder", pipeline)
    target = pipeline_folder(pipeline)
    if target is not None:
        return PipelineSelection(pipeline, "configuration", target,
                                 [n for n in pipeline_names_of_folder(target) if n != pipeline])
    return PipelineSelection(pipeline, "name")


@dataclass
class ClearReport:
    """What :func:`clear_cache` did: pipeline folders cleared (``removed``; their names in ``folders``),
    bytes freed, the entries it kept in them because ddpcore did not write them (or, in a folder older
    than the marker, a shard that fails its checksum), and how a ``pipeline`` argument was read
    (``selection``)."""

    removed: int = 0
    freed: int = 0
    kept: list[Path] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    selection: PipelineSelection | None = None
    #: the cache's pipeline folders (all of them, before clearing)
    present: list[str] = field(default_factory=list)
    #: cleared folders that stay because files appeared in them during the clear (a run using the cache)
    busy: list[str] = field(default_factory=list)


def clear_cache(root: Path, pipeline_folder: str | None = None) -> ClearReport:
    """Remove the parses of the cache's pipeline folders, or of those ``pipeline_folder`` names
    (:func:`select_pipeline`: a folder name; a pipeline as ``ddp profile --pipeline`` takes it, a preset,
    an installed name or a path, naming the one folder its runs use; or, for a pipeline not installed,
    every folder of that pipeline name): only the files ddpcore wrote (:func:`folder_kind`,
    :func:`_owned_files`); a folder left empty is removed too (a symbolic link to a folder stays, the
    folder it names emptied), any other file stays. A file or folder removed meanwhile (a concurrent
    clear, a run dropping a corrupted shard) is skipped, and a folder a run wrote into meanwhile stays
    (``busy``). Raises ``[D750]`` (nothing removed) when ``root`` exists, is not empty and is not a
    ddpcore cache (no marker, no pipeline folder ddpcore wrote)."""
    from ..errors import DDPUsageError

    report = ClearReport()
    if not root.is_dir():
        if pipeline_folder is not None:
            report.selection = select_pipeline([], pipeline_folder)
        return report
    folders = cache_folders(root)
    if not folders and not is_marked_root(root) and any(root.iterdir()):
        raise DDPUsageError(
            f"{root} is not a ddpcore parse cache (no {ROOT_MARKER} marker and no pipeline folder written by "
            "ddpcore); nothing removed. Check --cache DIR / $DDPCORE_CACHE (`ddp cache info` shows the folder)",
            code="D750")
    report.present = [f.name for f, _ in folders]
    if pipeline_folder is not None:
        report.selection = select_pipeline(report.present, pipeline_folder)
    for folder, kind in folders:
        if report.selection is not None and not report.selection.matches(folder.name):
            continue
        report.folders.append(folder.name)
        owned, other = _owned_files(folder, kind)
        # the marker goes last: an interrupted clear leaves a folder that is still recognised
        owned.sort(key=lambda p: p.name == FOLDER_MARKER)
        for f in owned:
            try:
                size = f.stat().st_size
                f.unlink()
            except FileNotFoundError:  # removed meanwhile (another clear, or a run that found it corrupted)
                continue
            report.freed += size
        report.removed += 1
        if other:
            report.kept.extend(other)
        elif not folder.is_symlink():
            try:
                folder.rmdir()
            except FileNotFoundError:  # removed meanwhile by another clear
                pass
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                report.busy.append(folder.name)  # a run stored parses in it during the clear
    return report


def check_cache_path(cache: str | os.PathLike[str] | bool | None, *, outputs: Sequence[Any] = (),
                     inputs: Sequence[Any] = (), option: str = "--cache") -> None:
    """Refuse, before any work, a cache folder that is one of the run's outputs (or inside one)
    or one of its inputs: ``[D751]``. ``outputs``/``inputs``: paths (None skipped)."""
    from ..errors import DDPUsageError

    root = resolve_cache(cache)
    if root is None or not isinstance(root, Path):  # a URI is never one of the run's local paths
        return

    def ident(p: Path) -> tuple[str, tuple[int, int] | None]:
        try:
            resolved = str(p.resolve(strict=False))
        except (OSError, RuntimeError):
            resolved = os.path.abspath(p)
        try:
            st = os.stat(p)
            return resolved, (st.st_dev, st.st_ino)
        except OSError:
            return resolved, None

    mine = ident(root)
    ancestors = {ident(p)[0] for p in [root, *root.parents]}
    for role, paths in (("output", outputs), ("input", inputs)):
        for p in paths:
            if p is None or str(p) in ("", "-"):
                continue
            other = ident(Path(os.fspath(p)).expanduser())
            same = other[0] == mine[0] or (other[1] is not None and other[1] == mine[1])
            if same or (role == "output" and other[0] in ancestors):
                raise DDPUsageError(
                    f"{option} {root} is {'the' if same else 'inside the'} {role} path {p}; the parse cache is a "
                    f"folder of its own: pass another --cache DIR (or --no-cache)", code="D751")


__all__ = [
    "CACHE_FORMAT", "CachedParse", "ClearReport", "PipelineSelection", "cache_folders", "cache_wrapper",
    "cache_summary", "check_cache_path", "clear_cache", "fingerprint_from_info", "folder_kind",
    "fingerprint_id", "gather_units", "pipeline_folder", "pipeline_names_of_folder", "resolve_cache",
    "select_pipeline", "static_fingerprint", "take_units", "unit_keys", "with_weights",
]
