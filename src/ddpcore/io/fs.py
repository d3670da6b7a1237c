"""Files on shared storage: local paths and ``pyarrow.fs`` filesystem URIs, read and written alike.

A *location* is a local path (``/mnt/shared/run``, on a folder every node mounts) or a
filesystem URI that :func:`pyarrow.fs.FileSystem.from_uri` understands (``file:///...``,
``s3://bucket/key``, ``gs://...``, ``hdfs://...``, ``abfs://...``). The Ray engine's workers
read their input rows and write their result parts through these functions, so the driver
never holds the data. Every write is atomic: a temporary name in the same folder, then a
rename (``os.replace`` locally; ``FileSystem.move`` elsewhere: on object stores a ``PUT`` is
whole or absent, so the temporary object is never seen as a part).

Every failure is a :class:`~ddpcore.errors.DDPDataError` naming the location (D860-D864).
"""
from __future__ import annotations

import hashlib
import json
import os
import uuid
from typing import TYPE_CHECKING, Any

from ..errors import DDPDataError

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq


def is_uri(location: Any) -> bool:
    """Whether ``location`` is a filesystem URI (``scheme://...``) rather than a local path."""
    s = os.fspath(location) if isinstance(location, os.PathLike) else location
    return isinstance(s, str) and "://" in s and s.split("://", 1)[0].isidentifier()


def resolve(location: str | os.PathLike[str]) -> tuple[pafs.FileSystem, str]:
    """``(filesystem, path inside it)`` of a location (a local path: the local filesystem and its
    absolute path). D860 when the URI's filesystem cannot be opened (unknown scheme, no credentials)."""
    import pyarrow.fs as pafs

    if not is_uri(location):
        return pafs.LocalFileSystem(), os.path.abspath(os.fspath(location))
    try:
        return pafs.FileSystem.from_uri(str(location))
    except Exception as exc:  # ArrowInvalid, ArrowNotImplementedError, OSError... by scheme
        raise DDPDataError(f"{location}: cannot open this storage location ({_first(exc)}); give a local path on "
                           "storage every node sees or a pyarrow.fs URI (file://, s3://, gs://, hdfs://)",
                           code="D860") from None


def join(location: str | os.PathLike[str], *names: str) -> str:
    """``location/name/...`` (URIs and local paths alike; a trailing ``/`` of ``location`` is dropped)."""
    base = os.fspath(location).rstrip("/")
    return "/".join([base, *names]) if is_uri(base) else os.path.join(base, *names)


def _first(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] or type(exc).__name__


def _fail(location: Any, what: str, exc: BaseException, code: str = "D862") -> DDPDataError:
    return DDPDataError(f"{location}: cannot {what} ({_first(exc)}); check that every node of the cluster sees "
                        "this storage and may read and write it", code=code)


def exists(location: str | os.PathLike[str]) -> bool:
    """Whether a file or folder exists at ``location``."""
    import pyarrow.fs as pafs

    fs, path = resolve(location)
    try:
        return fs.get_file_info(path).type != pafs.FileType.NotFound
    except OSError as exc:
        raise _fail(location, "look up", exc) from None


def file_info(location: str | os.PathLike[str]) -> tuple[int, int] | None:
    """``(size in bytes, modification time in ns)`` of a file, or None if it does not exist."""
    import pyarrow.fs as pafs

    fs, path = resolve(location)
    try:
        info = fs.get_file_info(path)
    except OSError as exc:
        raise _fail(location, "look up", exc) from None
    if info.type == pafs.FileType.NotFound:
        return None
    mtime = info.mtime_ns if info.mtime_ns is not None else 0
    return int(info.size or 0), int(mtime)


def make_dirs(location: str | os.PathLike[str]) -> None:
    """Create the folder ``location`` and its parents (an object store has no folders: nothing to do)."""
    fs, path = resolve(location)
    try:
        fs.create_dir(path, recursive=True)
    except OSError as exc:
        raise _fail(location, "create the folder", exc) from None


def list_files(location: str | os.PathLike[str]) -> list[str]:
    """Names (not paths) of the files directly in folder ``location``; [] if it does not exist."""
    import pyarrow.fs as pafs

    fs, path = resolve(location)
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except OSError as exc:
        raise _fail(location, "list", exc) from None
    return sorted(i.base_name for i in infos if i.type == pafs.FileType.File)


def remove(location: str | os.PathLike[str]) -> None:
    """Remove the file ``location`` if it exists."""
    fs, path = resolve(location)
    try:
        fs.delete_file(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exists(location):
            raise _fail(location, "remove", exc) from None


def remove_tree(location: str | os.PathLike[str]) -> None:
    """Remove the folder ``location`` and everything in it, if it exists."""
    fs, path = resolve(location)
    if not exists(location):
        return
    try:
        fs.delete_dir(path)
    except OSError as exc:
        raise _fail(location, "remove the folder", exc) from None


def read_bytes(location: str | os.PathLike[str]) -> bytes:
    """The bytes of the file ``location`` (FileNotFoundError if it does not exist)."""
    fs, path = resolve(location)
    try:
        with fs.open_input_stream(path) as fh:
            return bytes(fh.read())
    except FileNotFoundError:
        raise
    except OSError as exc:
        if file_info(location) is None:
            raise FileNotFoundError(2, "no such file", str(location)) from None
        raise _fail(location, "read", exc) from None


def _write_atomic(location: str | os.PathLike[str], write: Any) -> None:
    """``write(stream)`` fills a temporary name in ``location``'s folder, which is then renamed onto it
    (``os.replace`` for a path, the filesystem's move for a URI); on failure the temporary file is removed
    and the error names ``location``."""
    fs, path = resolve(location)
    folder, _, name = path.rpartition("/")
    tmp = f"{folder}/.{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        with fs.open_output_stream(tmp) as raw:
            write(raw)
        if is_uri(location):
            fs.move(tmp, path)
        else:
            os.replace(tmp, path)
    except OSError as exc:
        try:
            fs.delete_file(tmp)
        except OSError:
            pass
        raise _fail(location, "write", exc) from None


def write_bytes_atomic(location: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``location`` through a temporary name in the same folder, then rename."""
    _write_atomic(location, lambda raw: raw.write(data))


class _Hashing:
    """A write-only file object over ``raw`` that counts and BLAKE2b-hashes what passes through it
    (unseekable: a zip writer then streams, as to a pipe)."""

    def __init__(self, raw: Any) -> None:
        self.raw, self.size, self.hash = raw, 0, hashlib.blake2b(digest_size=16)

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self.raw.write(view)
        self.hash.update(view)
        self.size += len(view)
        return len(view)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        pass

    def read(self, *args: Any) -> bytes:  # (numpy.savez takes an object with ``read`` for a file object)
        raise OSError("write-only stream")


def write_stream_atomic(location: str | os.PathLike[str], write: Any) -> tuple[int, str]:
    """``write(fh)`` streams a file to ``location`` through a temporary name, then the rename of
    :func:`write_bytes_atomic`; the file's bytes are never held whole. Returns its size and
    BLAKE2b (:func:`digest`)."""
    hashed: list[_Hashing] = []

    def through_hash(raw: Any) -> None:
        hashed.append(_Hashing(raw))
        write(hashed[0])

    _write_atomic(location, through_hash)
    return hashed[0].size, hashed[0].hash.hexdigest()


def digest(data: bytes) -> str:
    """BLAKE2b (16 bytes, hex) of ``data``: the checksum of every part and manifest."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def write_json_atomic(location: str | os.PathLike[str], obj: Any) -> None:
    """``obj`` as JSON (keys sorted) at ``location``, atomically."""
    write_bytes_atomic(location, (json.dumps(obj, sort_keys=True, indent=1) + "\n").encode("utf-8"))


def read_json(location: str | os.PathLike[str]) -> Any:
    """The JSON at ``location`` (FileNotFoundError if absent, ValueError if not JSON)."""
    return json.loads(read_bytes(location).decode("utf-8"))


def parquet_bytes(table: pa.Table, metadata: dict[str, str] | None = None) -> bytes:
    """``table`` as Parquet file bytes (zstd), with ``metadata`` added to its schema metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if metadata:
        meta = {**(table.schema.metadata or {}), **{k.encode(): v.encode() for k, v in metadata.items()}}
        table = table.replace_schema_metadata(meta)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", row_group_size=20_000)
    return sink.getvalue().to_pybytes()


def read_parquet_bytes(data: bytes, columns: list[str] | None = None) -> pa.Table:
    """A Parquet file's table from its bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with pq.ParquetFile(pa.BufferReader(data)) as fh:
        return fh.read(columns=columns)


def open_parquet(location: str | os.PathLike[str]) -> pq.ParquetFile:
    """A :class:`pyarrow.parquet.ParquetFile` on ``location`` (path or URI); D862 if it cannot be opened."""
    import pyarrow.parquet as pq

    if not is_uri(location):
        try:
            return pq.ParquetFile(os.fspath(location))
        except FileNotFoundError:
            raise DDPDataError(f"{location}: file not found; check the path (every node of the cluster must see "
                               "it at this path)", code="D862") from None
        except Exception as exc:
            raise _fail(location, "read it as Parquet", exc) from None
    fs, path = resolve(location)
    try:
        return pq.ParquetFile(fs.open_input_file(path))
    except FileNotFoundError:
        raise DDPDataError(f"{location}: file not found; check the URI", code="D862") from None
    except Exception as exc:
        raise _fail(location, "read it as Parquet", exc) from None


def fingerprint(location: str | os.PathLike[str]) -> dict[str, Any]:
    """What identifies an input at a URI for ``--resume``: the URI, size and modification time."""
    info = file_info(location)
    if info is None:
        raise DDPDataError(f"{location}: file not found; check the URI", code="D862")
    return {"path": str(location), "size": info[0], "mtime_ns": info[1]}


class StoragePath:
    """A :class:`pathlib.Path`-like handle on a location at a ``pyarrow.fs`` URI: the subset of
    ``Path`` the parse cache uses (``/``, ``name``, ``parent``, ``with_name``, ``exists``,
    ``is_dir``, ``is_file``, ``mkdir``, ``iterdir``, ``read_bytes``/``read_text``,
    ``write_bytes``/``write_text``, ``unlink``, ``rmdir``, ``stat``), so that a cache folder on
    ``s3://``/``gs://`` works like a local one. :func:`replace` renames, :func:`parquet_source`
    opens for Parquet reading. Holds only the URI (cheap to send to Ray actors)."""

    def __init__(self, uri: str, kind: str | None = None) -> None:
        self.uri = uri.rstrip("/")
        self._kind = kind  # "file" / "dir" when known from a listing

    def __truediv__(self, name: str) -> StoragePath:
        return StoragePath(f"{self.uri}/{name}")

    def __str__(self) -> str:
        return self.uri

    def __repr__(self) -> str:
        return f"StoragePath({self.uri!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StoragePath) and other.uri == self.uri

    def __hash__(self) -> int:
        return hash(self.uri)

    def __lt__(self, other: StoragePath) -> bool:
        return self.uri < other.uri

    @property
    def name(self) -> str:
        return self.uri.rpartition("/")[2]

    @property
    def parent(self) -> StoragePath:
        return StoragePath(self.uri.rpartition("/")[0])

    def with_name(self, name: str) -> StoragePath:
        return self.parent / name

    def expanduser(self) -> StoragePath:
        return self

    def _type(self) -> str:
        import pyarrow.fs as pafs

        if self._kind is None:
            fsys, path = resolve(self.uri)
            t = fsys.get_file_info(path).type
            return {pafs.FileType.File: "file", pafs.FileType.Directory: "dir"}.get(t, "none")
        return self._kind

    def exists(self) -> bool:
        return self._type() != "none"

    def is_dir(self) -> bool:
        return self._type() == "dir"

    def is_file(self) -> bool:
        return self._type() == "file"

    def is_symlink(self) -> bool:
        return False

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        fsys, path = resolve(self.uri)
        fsys.create_dir(path, recursive=parents)

    def iterdir(self) -> list[StoragePath]:
        import pyarrow.fs as pafs

        fsys, path = resolve(self.uri)
        infos = fsys.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        return [StoragePath(f"{self.uri}/{i.base_name}", "dir" if i.type == pafs.FileType.Directory else "file")
                for i in infos]

    def read_bytes(self) -> bytes:
        fsys, path = resolve(self.uri)
        with fsys.open_input_stream(path) as fh:
            return bytes(fh.read())

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)

    def write_bytes(self, data: bytes) -> None:
        fsys, path = resolve(self.uri)
        with fsys.open_output_stream(path) as fh:
            fh.write(data)

    def write_text(self, text: str, encoding: str = "utf-8") -> None:
        self.write_bytes(text.encode(encoding))

    def unlink(self, missing_ok: bool = False) -> None:
        fsys, path = resolve(self.uri)
        try:
            fsys.delete_file(path)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def rmdir(self) -> None:
        fsys, path = resolve(self.uri)
        fsys.delete_dir(path)

    def stat(self) -> os.stat_result:
        info = file_info(self.uri)
        if info is None:
            raise FileNotFoundError(2, "no such file", self.uri)
        return os.stat_result((0, 0, 0, 0, 0, 0, info[0], 0, info[1] // 10**9, 0))


def storage_path(location: str | os.PathLike[str]) -> Any:
    """A :class:`StoragePath` for a URI, else a :class:`pathlib.Path` (``~`` expanded)."""
    from pathlib import Path

    return StoragePath(str(location)) if is_uri(location) else Path(os.fspath(location)).expanduser()


def replace(src: Any, dst: Any) -> None:
    """Rename ``src`` to ``dst`` (both :class:`pathlib.Path` or both :class:`StoragePath`), replacing ``dst``."""
    if isinstance(src, StoragePath):
        fsys, a = resolve(src.uri)
        fsys.move(a, resolve(dst.uri)[1])
    else:
        os.replace(src, dst)


def parquet_source(path: Any) -> Any:
    """What :class:`pyarrow.parquet.ParquetFile` reads for ``path`` (a local path as is; a
    :class:`StoragePath` opened as a random-access file)."""
    if isinstance(path, StoragePath):
        fsys, p = resolve(path.uri)
        return fsys.open_input_file(p)
    return path


__all__ = ["StoragePath", "digest", "exists", "file_info", "fingerprint", "is_uri", "join", "list_files", "make_dirs",
           "open_parquet", "parquet_bytes", "parquet_source", "read_bytes", "read_json", "read_parquet_bytes",
           "remove", "remove_tree", "replace", "resolve", "storage_path", "write_bytes_atomic", "write_json_atomic",
           "write_stream_atomic"]
