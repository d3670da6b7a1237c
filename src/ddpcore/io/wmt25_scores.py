"""Score tables users have: the WMT25 automatic-scores JSONL and COMET's ``--to_json`` output.

:func:`read_wmt25_scores` (``--reader wmt25-scores``) reads the organisers'
``data/automatic_scores/<system>.jsonl`` rows, one per (system, language pair, document)::

    {"system": "AMI", "language_pair": "en-is_IS", "domain": "literary", "document_id": "rink_rats_chapter1",
     "metric_scores": {"CometKiwi-XL": [0.72, 0.75, ...], "XCOMET-XL": [...], ...}}

(``system`` is absent in the per-system files: the file stem is the system then.) Each metric holds
one value per segment (paragraph) of the document, in order; segment ``k`` of the array is
``segment_id`` ``k`` (the key convention of ``ddp profile --reader wmt25``: 0-based paragraph
position). A null inside an array is a missing score, kept null and counted (never 0). Arrays of
one row with different lengths are D831 naming the line. Note: the organisers' files drop the
``vid_`` prefix of speech document ids, which the WMT25 source keeps.

:func:`read_comet_json` (``--reader comet``) reads ``comet-score ... --to_json OUT.json``:
``{"path/to/system.txt": [{"src": ..., "mt": ..., "ref": ..., "COMET": score}, ...], ...}``, one entry
per hypothesis file, segments in line order. System = the file name without ``.txt``; line ``i`` is
``line_id`` ``i``; with ``docs`` (a ``.docs`` file, ``DOMAIN DOCNAME`` or ``DOCNAME`` per line) the
document and position within it follow, else every line is its own document (announced by ``warn``).

Both return the wide table (``document_id``, ``segment_id``, ``system`` [, ``language_pair``,
``domain``, ``line_id``], one Float64 column per metric) or, ``layout="long"``, the statistics long
table (``condition`` = metric, ``score``). Error codes D830-D834.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DDPDataError, DDPUsageError

if TYPE_CHECKING:
    import polars as pl

#: error codes raised here
ERROR_CODES = {
    "D830": "unknown score reader or layout",
    "D831": "WMT25 automatic scores: a row's per-segment arrays have different lengths, or a field is missing",
    "D832": "WMT25 automatic scores: the language pair is not in the file, or several are and none was chosen",
    "D833": "COMET --to_json: not the COMET JSON layout (an object of lists of segment objects with a COMET score)",
    "D834": "COMET --to_json: the systems have different segment counts, or the .docs file another line count",
}

Warn = Callable[[str], None]
KEYS = ("document_id", "segment_id", "system")


def _long(df: pl.DataFrame, metrics: Sequence[str], layout: str) -> pl.DataFrame:
    if layout == "wide":
        return df
    if layout != "long":
        raise DDPUsageError(f"layout must be wide or long, got {layout!r}", code="D830")
    return df.unpivot(index=[c for c in df.columns if c not in metrics], on=list(metrics),
                      variable_name="condition", value_name="score")


def _note_missing(df: pl.DataFrame, metrics: Sequence[str], what: str, warn: Warn | None) -> dict[str, int]:
    miss = {m: int(df[m].null_count()) for m in metrics}
    bad = {m: v for m, v in miss.items() if v}
    if bad and warn is not None:
        warn(f"{what}: missing scores kept as null, never 0: "
             + ", ".join(f"{m} {v} of {df.height}" for m, v in bad.items()))
    return miss


def read_wmt25_scores(path: str | os.PathLike[str], *, lp: str | None = None, metrics: Sequence[str] | None = None,
                      layout: str = "wide", warn: Warn | None = None) -> pl.DataFrame:
    """The WMT25 automatic-scores JSONL (``.gz`` allowed) as a segment table.

    ``lp``: keep this ``language_pair`` (required when the file holds several); ``metrics``: the
    metric names to keep (default all). Wide rows: one per (document, segment, system), shape
    (n_segments * n_systems, 5 + n_metrics), columns ``document_id``, ``segment_id`` (int64, 0-based
    position in the document), ``system``, ``language_pair``, ``domain``, then the metrics (Float64).
    """
    import polars as pl

    from .tables import check_binary, read_bytes

    p = Path(path)
    data = read_bytes(p)
    check_binary(data[:65536], p)
    try:
        raw = pl.read_ndjson(data, infer_schema_length=None) if data.strip() else pl.DataFrame()
    except Exception as exc:  # noqa: BLE001
        raise DDPDataError(f"{p}: not JSON Lines ({str(exc).splitlines()[0][:120]})", code="D831") from None
    frames = []
    if raw.height:
        need = [c for c in ("language_pair", "document_id", "metric_scores") if c not in raw.columns]
        if need:
            raise DDPDataError(f"{p}: field {', '.join(need)} missing; --reader wmt25-scores reads the WMT25 "
                               "automatic-scores JSONL (system, language_pair, domain, document_id, metric_scores)",
                               code="D831")
        if not isinstance(raw.schema["metric_scores"], pl.Struct):
            raise DDPDataError(f"{p}: metric_scores holds {raw.schema['metric_scores']}, not an object of "
                               "per-segment arrays", code="D831")
        raw = raw.with_columns(pl.int_range(0, raw.height, dtype=pl.Int64).alias("__line"))
        if "system" not in raw.columns:
            stem = p.name.split(".")[0]
            raw = raw.with_columns(pl.lit(stem).alias("system"))
        if "domain" not in raw.columns:
            raw = raw.with_columns(pl.lit(None, dtype=pl.String).alias("domain"))
        frames.append(raw.select("__line", pl.col("system").cast(pl.String), pl.col("language_pair").cast(pl.String),
                                 pl.col("domain").cast(pl.String), pl.col("document_id").cast(pl.String),
                                 pl.col("metric_scores").struct.unnest()))
    if not frames:
        raise DDPDataError(f"{p}: the file has no rows", code="D831")
    df = pl.concat(frames, how="diagonal_relaxed")
    all_metrics = [c for c in df.columns if c not in ("__line", "system", "language_pair", "domain", "document_id")]
    lps = df["language_pair"].unique().sort().to_list()
    if lp is None and len(lps) > 1:
        raise DDPUsageError(f"{p}: holds {len(lps)} language pairs ({', '.join(map(str, lps[:8]))}"
                            f"{', ...' if len(lps) > 8 else ''}); choose one with --lp", code="D832")
    if lp is not None:
        if lp not in lps:
            raise DDPDataError(f"{p}: no language pair {lp} (has {', '.join(map(str, lps[:12]))})", code="D832")
        df = df.filter(pl.col("language_pair") == lp)
    if metrics:
        want = list(metrics)
    else:  # every metric with a value for this pair (a metric no row of the pair carries is left out, said by warn)
        want = [m for m in all_metrics if df[m].null_count() < df.height]
        gone = [m for m in all_metrics if m not in want]
        if gone and warn is not None:
            warn(f"{p}{' ' + lp if lp else ''}: metric(s) {', '.join(gone)} have no scores for this language pair; "
                 "left out")
    unknown = [m for m in want if m not in all_metrics]
    if unknown:
        raise DDPDataError(f"{p}: no metric {', '.join(unknown)} (has {', '.join(all_metrics)})", code="D831")
    # a metric absent from a row (e.g. chrF++ in a few rows) is a null list: one null per segment
    lens = df.select("__line", *[pl.col(m).list.len().alias(m) for m in want])
    ref_len = pl.max_horizontal(*[pl.col(m) for m in want])
    bad = lens.with_columns(ref_len.alias("__n")).filter(
        pl.any_horizontal(*[pl.col(m).is_not_null() & (pl.col(m) != pl.col("__n")) for m in want]))
    if bad.height:
        row = bad.row(0, named=True)
        got = ", ".join(f"{m} {row[m]}" for m in want if row[m] is not None)
        raise DDPDataError(f"{p}, line {row['__line'] + 1}: the per-segment arrays have different lengths ({got}); "
                           "each metric needs one value per segment", code="D831")
    df = df.with_columns(lens.with_columns(ref_len.alias("__n"))["__n"].fill_null(0).alias("__n"))
    filled = [pl.coalesce(pl.col(m).cast(pl.List(pl.Float64)),
                          pl.lit([], dtype=pl.List(pl.Float64))).alias(m) for m in want]
    df = df.with_columns(filled)
    # rows where a metric was absent: pad to __n with nulls so the explode stays aligned
    df = df.with_columns([pl.when(pl.col(m).list.len() == pl.col("__n")).then(pl.col(m))
                          .otherwise(pl.int_ranges(0, pl.col("__n")).list.eval(pl.element().cast(pl.Float64) * None))
                          .alias(m) for m in want])
    df = df.with_columns(pl.int_ranges(0, pl.col("__n"), dtype=pl.Int64).alias("segment_id"))
    out = df.explode(["segment_id", *want]).filter(pl.col("segment_id").is_not_null())
    out = out.select("document_id", "segment_id", "system", "language_pair", "domain", *want)
    dup = out.select(KEYS + ("language_pair",)).is_duplicated()
    if dup.any():
        r = out.filter(dup).row(0, named=True)
        raise DDPDataError(f"{p}: document {r['document_id']} of system {r['system']} ({r['language_pair']}) appears "
                           "in more than one row", code="D831")
    _note_missing(out, want, f"{p}{' ' + lp if lp else ''}", warn)
    return _long(out, want, layout)


def _read_docs(docs: Path, n: int) -> pl.DataFrame:
    import polars as pl

    from .readers import iter_line_blocks

    lines = pl.concat(list(iter_line_blocks(docs)) or [pl.Series("l", [], dtype=pl.String)])
    if lines.len() != n:
        raise DDPDataError(f"{docs}: {lines.len()} lines, but the COMET JSON has {n} segments per system",
                           code="D834")
    parts = pl.DataFrame({"l": lines.str.strip_chars()}).with_columns(
        pl.col("l").str.extract_groups(r"^(?:(\S+)\s+)?(\S+)$").alias("g"))
    df = parts.select(pl.col("g").struct.field("1").alias("domain"), pl.col("g").struct.field("2").alias("document_id"))
    if df["document_id"].null_count():
        i = int(df["document_id"].is_null().arg_max() or 0)
        raise DDPDataError(f"{docs}, line {i + 1}: expected 'DOMAIN DOCNAME' or 'DOCNAME'", code="D834")
    return df.with_row_index("line_id").with_columns(pl.col("line_id").cast(pl.Int64),
                                                     pl.int_range(pl.len()).over("document_id").cast(pl.Int64)
                                                     .alias("segment_id"))


def read_comet_json(path: str | os.PathLike[str], *, docs: str | os.PathLike[str] | None = None,
                    layout: str = "wide", metric: str = "COMET", warn: Warn | None = None) -> pl.DataFrame:
    """``comet-score --to_json`` output as a segment table: ``document_id``, ``segment_id``, ``system``,
    ``line_id``, ``domain``, ``src``/``mt``/``ref`` texts when present, and the ``COMET`` score (and
    ``variance`` with MC dropout), shape (n_systems * n_segments, ...)."""
    import polars as pl

    from .tables import read_bytes

    p = Path(path)
    import json

    try:
        obj = json.loads(read_bytes(p))
    except json.JSONDecodeError as exc:
        raise DDPDataError(f"{p}, line {exc.lineno} column {exc.colno}: not JSON ({exc.msg})", code="D833") from None
    if not isinstance(obj, dict) or not obj or not all(isinstance(v, list) for v in obj.values()):
        raise DDPDataError(f"{p}: expected COMET --to_json output, an object mapping each hypothesis file to its list "
                           "of segments", code="D833")
    frames = []
    n0 = None
    for name, segs in obj.items():
        if n0 is None:
            n0 = len(segs)
        if len(segs) != n0:
            raise DDPDataError(f"{p}: {name} has {len(segs)} segments, {next(iter(obj))} has {n0}; the systems of one "
                               "COMET run score the same source lines", code="D834")
        try:
            df = pl.DataFrame(segs, infer_schema_length=None)
        except Exception as exc:  # noqa: BLE001
            raise DDPDataError(f"{p}: {name}: segments are not objects ({str(exc).splitlines()[0]})",
                               code="D833") from None
        if metric not in df.columns:
            raise DDPDataError(f"{p}: {name}: the segments have no {metric!r} score (fields: {', '.join(df.columns)})",
                               code="D833")
        sysname = Path(name).name
        sysname = sysname[:-4] if sysname.endswith(".txt") else sysname
        frames.append(df.with_columns(pl.lit(sysname).alias("system"),
                                      pl.int_range(pl.len(), dtype=pl.Int64).alias("line_id")))
    df = pl.concat(frames, how="diagonal_relaxed")
    scores = [c for c in (metric, "variance") if c in df.columns]
    df = df.with_columns([pl.col(c).cast(pl.Float64, strict=False) for c in scores])
    assert n0 is not None
    if docs is not None:
        keys = _read_docs(Path(docs), n0)
    else:
        keys = pl.DataFrame({"line_id": pl.int_range(0, n0, eager=True, dtype=pl.Int64)}).with_columns(
            pl.col("line_id").cast(pl.String).alias("document_id"), pl.lit(0, dtype=pl.Int64).alias("segment_id"),
            pl.lit(None, dtype=pl.String).alias("domain"))
        if warn is not None:
            warn(f"{p}: no .docs file given, so each of the {n0} lines is its own document (document resampling = "
                 "segment resampling); give the test set's .docs to keep documents together")
    out = df.join(keys, on="line_id", how="left", maintain_order="left")
    texts = [c for c in ("src", "mt", "ref") if c in out.columns]
    out = out.select("document_id", "segment_id", "system", "line_id", "domain", *texts, *scores)
    _note_missing(out, scores, str(p), warn)
    return _long(out, scores, layout)


__all__ = ["ERROR_CODES", "read_comet_json", "read_wmt25_scores"]
