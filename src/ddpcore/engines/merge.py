"""``ddp merge``: rebuild the outputs of an unsharded run from the shards of ``ddp profile --shard i/N``.

Each shard holds whole documents (documents are hashed to shards by their id,
:func:`ddpcore.engines.run.shard_of_documents`, before batches are cut), so merging is ordering:
segments by ``input_row`` (input order), anchors, sentences and documents (``--documents``, one
row per document, :mod:`ddpcore.pipeline.documents`) by ``document_first_row`` (the document order of
an unsharded run: documents by first appearance), keeping each shard's own order within a
document. A document's row is therefore complete in its one shard and is copied, not recomputed;
a document found in two documents shards is refused (D187). Documents shards written before they
carried ``document_first_row`` are ordered from the segment shards when those are given (else
D187). The ordering keys are dropped and the signature loses its shard. Shards must come from the
same input (the SHA-256 of its bytes, recorded by each shard: D176 if they differ) and settings, and
all N shards must be given once.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import DDPDataError, DDPUsageError
from ..schema import SIGNATURE_KEY
from ..schema import TABLE_KEY

#: settings that must agree between shards (everything but the shard and the run's own counts)
_VARYING = {"shard", "batches", "n_process", "cache"}


def _read_meta(path: Path) -> tuple[dict[str, Any], str]:
    from ..io.tables import read_parquet_metadata

    try:
        meta = read_parquet_metadata(path)
    except FileNotFoundError:
        raise DDPDataError(f"{path}: file not found; check the path", code="D102") from None
    except Exception as exc:
        raise DDPDataError(f"{path}: not a readable Parquet file ({exc})", code="D103") from None
    if SIGNATURE_KEY not in meta or TABLE_KEY not in meta:
        raise DDPDataError(f"{path}: not a shard written by `ddp profile --shard i/N` (no signature/table metadata)",
                           code="D175")
    try:
        sig = json.loads(meta[SIGNATURE_KEY])
    except ValueError as exc:
        sig, bad = None, f"is not valid JSON ({str(exc).splitlines()[0]})"
    else:
        bad = None if isinstance(sig, dict) else "is not a JSON object"
    if bad is None and "shard" in sig and not _shard_ok(sig["shard"]):
        bad = f"records shard {sig['shard']!r}, not I/N with 0 <= I < N"
    if bad is not None:
        raise DDPDataError(f"{path}: the signature in its Parquet metadata {bad}, so it is no shard `ddp merge` can "
                           "place; rerun its `ddp profile --shard i/N` job", code="D175")
    if "shard" not in sig:
        raise DDPDataError(f"{path}: written by a run without --shard; only shards can be merged", code="D175")
    return sig, meta[TABLE_KEY]


def _shard_ok(shard: Any) -> bool:
    """Whether a signature's ``shard`` is ``"I/N"`` with whole numbers ``0 <= I < N`` (as ``--shard`` takes it)."""
    import re

    m = re.fullmatch(r"(\d+)/(\d+)", shard) if isinstance(shard, str) else None
    return m is not None and int(m.group(1)) < int(m.group(2))


def _documents_order(files: list[str], seg_files: list[str] | None, document: str) -> Any:
    """The merged documents table, in the document order of an unsharded run.

    ``files``: the documents shards (one row per document); ``seg_files``: the segment shards if
    given (their ``input_row`` orders documents shards that lack ``document_first_row``)."""
    import polars as pl

    from .run import SHARD_DOC_ROW, SHARD_ROW

    frames = [_read_table(f).with_columns(pl.lit(i, dtype=pl.Int64).alias("__shard"))
              for i, f in enumerate(files)]
    for f, frame in zip(files[1:], frames[1:]):  # shards written by two builds (one without the certified columns)
        theirs, ours = (set(fr.columns) - {SHARD_DOC_ROW} for fr in (frame, frames[0]))
        if theirs != ours:
            odd = sorted(theirs ^ ours)
            raise DDPDataError(f"{f}: its columns differ from {files[0]}'s ({', '.join(odd)} in one of them only): the "
                               "documents shards were written by different ddpcore versions; rerun every shard with "
                               "one version, then merge", code="D332")
    # a shard without document_first_row (an older one) gets nulls there: ordered by the segment shards below
    docs = pl.concat(frames, how="diagonal_relaxed")
    dup = docs.filter(pl.col(document).is_duplicated())
    if dup.height:
        first = dup[document][0]
        where = sorted(dup.filter(pl.col(document) == first)["__shard"].to_list())
        raise DDPDataError(f"document {first!r} has a row in two documents shards ({files[where[0]]} and "
                           f"{files[where[1]]}); a document belongs to one shard, so these are not the shards of one "
                           "`ddp profile --shard i/N --documents` run", code="D187")
    if SHARD_DOC_ROW not in docs.columns or docs[SHARD_DOC_ROW].null_count():
        if seg_files is None:
            raise DDPUsageError(f"{files[0]}: this documents shard has no '{SHARD_DOC_ROW}' column (written by an "
                                "older ddpcore); give the segment shards of the same run too, so the document order "
                                "can be recovered", code="D187")
        first_rows = (pl.scan_parquet(seg_files).group_by(document)
                      .agg(pl.col(SHARD_ROW).min().cast(pl.Int64).alias("__first")).collect())
        docs = docs.join(first_rows, on=document, how="left", maintain_order="left")
        if docs["__first"].null_count():
            missing = docs.filter(pl.col("__first").is_null())[document][0]
            raise DDPDataError(f"document {missing!r} of the documents shards has no segment in the segment shards; "
                               "give the shards of one run", code="D187")
        docs = docs.drop([c for c in (SHARD_DOC_ROW,) if c in docs.columns]).rename({"__first": SHARD_DOC_ROW})
    return docs.sort(SHARD_DOC_ROW, maintain_order=True).drop(SHARD_DOC_ROW, "__shard")


def merge_shards(shards: Sequence[str | os.PathLike[str]], outputs: dict[str, Any],
                 warn: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Merge shard tables into ``outputs`` (role → :class:`~ddpcore.io.outputs.OutputTarget`;
    roles ``segments``, ``anchors``, ``sentences``, ``documents``). Returns the merged signature.

    Every role given in ``outputs`` needs all N shards of that table among ``shards``; the
    shards of a role are told apart by their metadata, so their order on the command line
    does not matter.
    """
    from .run import INPUT_DIGEST

    by_role, reference, n_total = _index_shards(shards)
    _check_complete(by_role, outputs, n_total)
    signature = {**reference, "merged_shards": n_total}
    if INPUT_DIGEST not in reference:  # shards of an older ddpcore: the input cannot be compared
        signature["input_check"] = "none (shards without input_sha256)"  # said once the merge is written
    tables = [(target, _merged_table(role, by_role, reference, n_total)) for role, target in outputs.items()
              if target is not None]
    _write_merged(tables, signature, warn)
    if "input_check" in signature and warn is not None:
        warn("the shards carry no input fingerprint (written by an older ddpcore), so whether they were made "
             "from the same input is not checked; recorded as input_check in the signature")
    return signature


def _index_shards(shards: Sequence[str | os.PathLike[str]]) -> tuple[dict[str, dict[int, Path]], dict[str, Any], int]:
    """Each shard file by table role and shard number, the signature they share (every key but the
    varying ones) and N; D176 for a shard of another run or input, D177 for one given twice."""
    from .run import INPUT_DIGEST

    first: Path | None = None
    by_role: dict[str, dict[int, Path]] = {}
    reference: dict[str, Any] | None = None
    n_total: int | None = None
    for raw in shards:
        path = Path(raw)
        sig, role = _read_meta(path)
        i, n = (int(x) for x in str(sig["shard"]).split("/"))
        common = {k: v for k, v in sig.items() if k not in _VARYING}
        if reference is None:
            reference, n_total, first = common, n, path
        else:
            diff = sorted(k for k in set(reference) | set(common) if reference.get(k) != common.get(k))
            if INPUT_DIGEST in reference and INPUT_DIGEST not in diff:
                # the same input bytes, read from another path (a node's local copy, a relative path):
                # the content identifies the input, not where it lay
                diff = [k for k in diff if k != "input" and not (k == "reader" and _same_reader(reference, common))]
            if INPUT_DIGEST in diff:
                raise DDPDataError(f"{path}: shard made from a different input than {first} (the SHA-256 of the input "
                                   "differs: the input changed between the shard runs); rerun every shard on the same "
                                   "input, then merge", code="D176")
            if diff or n != n_total:
                what = diff[0] if diff else "number of shards"
                raise DDPDataError(f"{path}: shard of another run ({what} differs from the first shard's); merge only "
                                   "shards of one `ddp profile --shard i/N` command", code="D176")
        if i in by_role.setdefault(role, {}):
            raise DDPUsageError(f"{path}: shard {i}/{n} of the {role} table given twice "
                                f"(also {by_role[role][i]})", code="D177")
        by_role[role][i] = path
    assert reference is not None and n_total is not None
    return by_role, reference, n_total


def _same_reader(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two shards read their input the same way, wherever their ``.docs`` file lay."""
    ra, rb = a.get("reader"), b.get("reader")
    if not (isinstance(ra, dict) and isinstance(rb, dict)):
        return ra == rb
    return {k: v for k, v in ra.items() if k != "docs"} == {k: v for k, v in rb.items() if k != "docs"} \
        and (ra.get("docs") is None) == (rb.get("docs") is None)


def _check_complete(by_role: dict[str, dict[int, Path]], outputs: dict[str, Any], n_total: int) -> None:
    """D177 unless every wanted table has all ``n_total`` shards and every given table an output."""
    import polars as pl

    from .run import SHARD_DOC_ROW

    for role, target in outputs.items():
        if target is None:
            continue
        have = by_role.get(role, {})
        missing = [i for i in range(n_total) if i not in have]
        if missing:
            raise DDPUsageError(f"the {role} table lacks shard(s) {', '.join(f'{i}/{n_total}' for i in missing)}; "
                                f"give all {n_total} shards", code="D177")
    wanted = {r for r, t in outputs.items() if t is not None}
    if "documents" in wanted and "segments" not in wanted and "segments" in by_role:
        if any(SHARD_DOC_ROW not in pl.read_parquet_schema(f) for f in by_role.get("documents", {}).values()):
            wanted.add("segments")  # older documents shards: the segment shards give their order
    extra = sorted(set(by_role) - wanted)
    if extra:
        raise DDPUsageError(f"shards of the {extra[0]} table were given but no output for them "
                            f"({'-o' if extra[0] == 'segments' else '--' + extra[0]} PATH)", code="D177")


def _merged_table(role: str, by_role: dict[str, dict[int, Path]], reference: dict[str, Any],
                  n_total: int) -> pl.DataFrame:
    """The ``role`` table of all shards in input order (segments by input row, the others by
    document row, stable within a shard's document)."""
    import polars as pl

    from .run import SHARD_DOC_ROW, SHARD_ROW

    files = [str(by_role[role][i]) for i in range(n_total)]
    if role == "documents":
        segs = [str(by_role["segments"][i]) for i in range(n_total)] if len(by_role.get("segments", {})) == n_total \
            else None
        document = (reference.get("columns") or {}).get("document", "document_id")
        return _documents_order(files, segs, document)
    key = SHARD_ROW if role == "segments" else SHARD_DOC_ROW
    # ordering keys are small; the sort is by them alone, stable within a shard's document
    return pl.concat([_read_table(f) for f in files], how="vertical_relaxed").sort(key, maintain_order=True).drop(key)


def _read_table(path: str) -> pl.DataFrame:
    """A shard's rows; D103 naming the file when its data cannot be read (a damaged copy whose footer,
    read first by :func:`_read_meta`, is intact)."""
    import polars as pl

    try:
        return pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise DDPDataError(f"{path}: not a readable Parquet file ({' '.join(str(exc).split())[:200]}); copy the "
                           "shard again or rerun its `ddp profile --shard i/N` job", code="D103") from None


def _write_merged(tables: list[tuple[Any, pl.DataFrame]], signature: dict[str, Any],
                  warn: Callable[[str], None] | None) -> None:
    """Write every merged table (and its signature sidecar) as one all-or-nothing output set
    (D761), first finishing a merge killed while putting its outputs in place."""
    from ..io.outputs import OutputSet, recover_commit
    from ..io.sidecars import sidecar_text
    from ..io.sinks import Sink

    sig_json = json.dumps(signature, sort_keys=True)
    files_out = [t.path for t, _ in tables if t.path is not None]
    journal = (Path(files_out[0]).parent / f".{Path(files_out[0]).name}.ddp-merge.json") if files_out else None
    if journal is not None:
        placed = recover_commit(journal)  # an earlier merge killed while putting its outputs in place
        if placed and warn is not None:
            warn(f"an earlier merge was stopped while putting its outputs in place; finished that, so "
                 f"{', '.join(map(str, placed))} now hold(s) that merge's complete new output")
    outs = OutputSet(journal) if journal is not None else None
    try:
        for target, merged in tables:
            meta = {SIGNATURE_KEY: sig_json, TABLE_KEY: "merged"}
            if target.path is None:
                import sys

                sink = Sink(sys.stdout.buffer, target.format, gzip_=False, metadata=meta)
            else:
                assert outs is not None
                sink = Sink(outs.temp(target.path), target.format, gzip_=target.gzip, metadata=meta)
            sink.write(merged)
            sink.close(empty_schema=merged.schema)
            if target.sidecar is not None and sink.path is not None:
                assert outs is not None
                outs.temp(target.sidecar).write_text(sidecar_text(signature, sink.path), encoding="utf-8")
        if outs is not None:
            outs.commit()  # every merged table in place together, or none (D761)
    finally:
        if outs is not None:
            outs.discard()
