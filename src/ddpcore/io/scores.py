"""Reading a per-segment score table for ``ddp stratify``: a lazy polars scan of .parquet, .csv,
.tsv, .jsonl (.json and .gz are read eagerly), with the readers' quoting rules for CSV/TSV.

:data:`SCORE_READERS` (the choices of every score command's ``--reader``) and
:func:`read_score_input` (their one dispatch): ``table`` (the path as given), ``esa-wmt23``,
``wmt24``, ``mtme`` (:mod:`ddpcore.io.mtme`), ``wmt25-scores`` and ``comet``
(:mod:`ddpcore.io.wmt25_scores`).

Error codes: D102 file not found, D103 (CSV/TSV that cannot be parsed, naming the line), D658 a
table that cannot be read.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DDPDataError, DDPUsageError

if TYPE_CHECKING:
    import polars as pl


def scan_scores(path: str | os.PathLike[str], *, text_columns: Sequence[str] = (),
                key_columns: Sequence[str] = ()) -> pl.LazyFrame:
    """A lazy scan of a score table (.parquet, .csv, .tsv, .jsonl; .json and .gz are read eagerly).
    ``text_columns``, ``key_columns``: columns of a CSV/TSV file read as text, and id columns kept as written,
    as :func:`ddpcore.io.tables.read_table` reads them."""
    import polars as pl

    from .tables import detect_format, read_table, scan_csv_lossless, scan_delimited_file

    p = Path(path)
    if not p.exists():
        raise DDPDataError(f"{p}: file not found; check the path", code="D102")
    fmt = detect_format(p)
    try:
        if p.suffix.lower() == ".gz" or fmt == "json":
            return read_table(p, text_columns=text_columns, key_columns=key_columns).lazy()
        if fmt == "parquet":
            return pl.scan_parquet(p)
        if fmt in ("csv", "tsv"):
            quoted = scan_delimited_file(p, fmt)  # the readers' quoting rules (TSV as CSV); D103 names the line
            return scan_csv_lossless(p, fmt, quoted, text_columns, key_columns)
        scan = pl.scan_ndjson(p, infer_schema_length=10000)
        _check_repeated_keys(p, scan)
        return scan
    except DDPDataError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise DDPDataError(f"{p}: cannot read ({str(exc).splitlines()[0]})", code="D658") from None


def _check_repeated_keys(path: Path, scan: pl.LazyFrame) -> None:
    """D103 for a JSON Lines score table that names a key twice in one object, as every other reader of
    ddpcore refuses it (:func:`ddpcore.io.tables.read_table`): polars' scan keeps the first value where
    Python's json keeps the last. Flat memory, no loop over lines: the keys written (a ``"`` then ``:``,
    counted block by block with numpy) cannot outnumber the values the scan reads (its non-null count)
    unless a key repeats; only a file where they do (``null`` values, ``":`` inside a text, a key spaced from
    its colon) is read block by block with the exact check (:func:`ddpcore.io.tables.iter_jsonl_chunks`,
    about 2.6 s per million rows)."""
    import numpy as np
    import polars as pl

    from .tables import JSONL_CHUNK_BYTES, iter_jsonl_chunks, iter_line_bytes

    written = 0
    spaced = False
    for data, _last in iter_line_bytes(path, JSONL_CHUNK_BYTES):
        a = np.frombuffer(data, dtype=np.uint8)
        colon = np.flatnonzero(a == ord(":"))
        colon = colon[colon > 0]
        before = a[colon - 1]
        written += int((before == ord('"')).sum())
        spaced = spaced or bool(np.isin(before, (ord(" "), ord("\t"), ord("\r"))).any())
    values = int(sum(scan.select(pl.all().count()).collect().row(0)))  # non-null values read (one pass)
    if written <= values and not spaced:
        return
    for _ in iter_jsonl_chunks(path):  # raises D103 naming the line and the key (or another defect of a line)
        pass


#: the readers of a score table (``ddp stats * --reader``): one tuple for every command
SCORE_READERS = ("table", "esa-wmt23", "wmt24", "mtme", "wmt25-scores", "comet")


def read_score_input(table: Any, reader: str = "table", *, conditions: Sequence[str] | None = None,
                     waves: Sequence[int] = (2, 3), lps: Sequence[str] | None = None, layout: str = "long",
                     metrics: Sequence[str] | None = (), warn: Callable[[str], None] | None = None) -> Any:
    """TABLE as given (``reader="table"``) or a reader's score table.

    ``conditions``: the conditions a command needs (ESA protocols, mtme human score or metric names);
    ``waves``/``lps``: the WMT24 waves and language pairs (``lps[0]`` picks an mtme or WMT25 pair);
    ``layout``: ``"long"`` (one row per condition: ``condition``, ``score``) or ``"wide"`` (one column
    per score) for the mtme and WMT25 readers; ``metrics``: mtme metric names to read too (None = all).
    ``warn`` gets the readers' one-line notes (missing scores counted, never zero).
    """
    if reader not in SCORE_READERS:
        raise DDPUsageError(f"--reader {reader}: unknown score reader; choose one of {', '.join(SCORE_READERS)}",
                            code="D830")
    if reader == "table":
        return table
    from .tables import name_frame

    # the reader's in-memory table keeps naming what was read (D302... name it, not <table>)
    return name_frame(_read_with(table, reader, conditions=conditions, waves=waves, lps=lps, layout=layout,
                                 metrics=metrics, warn=warn), f"{table} (--reader {reader})")


def _read_with(table: Any, reader: str, *, conditions: Sequence[str] | None, waves: Sequence[int],
               lps: Sequence[str] | None, layout: str, metrics: Sequence[str] | None,
               warn: Callable[[str], None] | None) -> Any:
    """The table ``reader`` (not ``table``) reads from ``table`` (:func:`read_score_input`)."""
    if reader == "esa-wmt23":
        from .esa import read_esa_wmt23

        conds = [c for c in (conditions or []) if c] or ["ESA-1", "ESA-2"]
        return read_esa_wmt23(table, conditions=list(dict.fromkeys(conds)))
    if reader == "wmt24":
        from .wmt import read_wmt24_esa

        return read_wmt24_esa(table, waves=list(waves), lps=list(lps) if lps else None, with_text=False,
                              absent_lp="raise")
    if reader == "mtme":
        from .mtme import resolve_mtme, read_mtme_scores

        ms = resolve_mtme(table, lps[0] if lps else None)
        conds = [c for c in (conditions or []) if c]
        humans = ms.human_files()
        human = [c for c in conds if c in humans] if conds else None
        extra = [c for c in conds if c not in humans]
        want = None if metrics is None else list(dict.fromkeys([*(metrics or ()), *extra]))
        return read_mtme_scores(ms.root, lp=ms.lp, human=human, metrics=want, layout=layout,  # type: ignore[arg-type]
                                warn=warn).table
    from .wmt25_scores import read_comet_json, read_wmt25_scores

    if reader == "comet":
        return read_comet_json(table, layout=layout, warn=warn)
    return read_wmt25_scores(table, lp=lps[0] if lps else None, metrics=conditions or None, layout=layout,
                             warn=warn)


def table_schema(lf: pl.LazyFrame, name: str) -> dict[str, Any]:
    """The column names and polars types of a lazy table; D658 naming ``name`` when it cannot be read."""
    try:
        return dict(lf.collect_schema())
    except Exception as exc:  # noqa: BLE001
        raise DDPDataError(f"{name}: cannot read ({str(exc).splitlines()[0]})", code="D658") from None


__all__ = ["SCORE_READERS", "read_score_input", "scan_scores", "table_schema"]
