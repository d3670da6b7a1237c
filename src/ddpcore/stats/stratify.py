"""Scores stratified by DDP: does a metric or human score change with discourse dependency?

:func:`stratify` joins a DDP profile (one row per segment: document, segment, ``ddp`` in
sentences, domain) to a table of per-segment scores and reports, per group of ``by`` columns
(e.g. system, metric, domain):

- ``n``: scored segments in the group (after the join and after dropping null/non-finite scores);
- ``spearman``: ρ between DDP and the score and its two-sided p, exactly
  :func:`ddpcore.stats.spearman` (= ``scipy.stats.spearmanr``); ``null`` below 3 points or for a
  constant input;
- ``bins``: per DDP bin ``[low, high)`` the number of scores, their mean and a **document
  bootstrap** 95 % percentile CI: the group's documents are resampled with replacement
  (:func:`ddpcore.stats.bootstrap.resample_sums`, the documented PCG64 generator, ``seed``), each
  replicate's bin mean is (sum of the drawn documents' scores in the bin) / (their count); replicates
  that draw no document with a score in the bin are left out of that bin's CI; the CI is
  ``numpy.nanpercentile(..., [2.5, 97.5])`` (linear interpolation). One draw of documents serves every
  bin of a replicate, and every group with the same set of documents (e.g. all systems of a test set:
  the same seed gives them the same draws, so their CIs are those of separate runs). A bin without
  scores has ``n`` 0 and null mean and CI; a bin whose scores all
  come from one document has a mean and a null CI (resampling one document cannot give an interval);
- ``lowess``: the LOWESS curve of score on DDP with statsmodels' defaults (``frac`` 2/3, 3
  robustness iterations, ``delta`` 0; :func:`ddpcore.stats.lowess`), reported at the distinct DDP
  values (tied x share one fit, as in statsmodels). A group with more than ``lowess_max_points``
  points is fitted on a seeded uniform subsample of that many points (recorded in the signature).

Several score columns are stacked into a ``metric`` column usable in ``by`` (a scores table that
already has a ``metric`` column then needs one score column: ``--by metric`` would be ambiguous,
D560); with one score column, ``metric`` is an ordinary column of the scores (a long table of
system, metric, score rows).

With ``gap=(A, B)`` the same is computed for the score difference A − B between two values of
``gap_col`` (default: the first ``by`` column), paired on the join keys and the other ``by`` columns.

Join: by default on the profile's document and segment columns (names from its signature), which
the scores must have; ``on`` names other columns. Inner join; score rows without a profile segment,
null or non-finite scores and profile segments without any score are counted with their shares and first
keys (``signature["join"]``) and each kind left out is a line of ``signature["warnings"]`` (the CLI prints
them as ``warning:`` lines). More than ``max_unjoined`` (0.01) of the score rows or of the profile
segments unmatched is D710, of the scores null D711, unless ``allow_partial_join``; a profile key on two
rows is D712; a finite |score| above 1e100 is D360 (file, row, column). With ``strict_join`` any
unmatched score row or null score is a D653 data error naming the first.
The heavy part (join, per-group/document/bin sums) runs in Polars lazy; numpy per group.

Frames only: :func:`stratify` takes the profile and the scores as polars DataFrames or LazyFrames
(+ the profile's signature and the names to show); it opens no file. ``ddp stratify`` reads them
with :func:`ddpcore.io.profiles.scan_profile` and :func:`ddpcore.io.scores.scan_scores`
(:func:`ddpcore.cli.stratify.stratify_files` does both for Python callers).
"""
from __future__ import annotations

import json
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._version import __version__
from .. import schema as S
from ..errors import DDPDataError, DDPUsageError
from ..io.scores import scan_scores, table_schema  # noqa: F401  (scan_scores re-exported)
from ._table import MAX_ABS_SCORE

if TYPE_CHECKING:
    import polars as pl

DEFAULT_BINS = (0.0, 1.0, 5.0, 15.0, 50.0, math.inf)
#: pseudo-column holding the score column's name when several score columns are given
METRIC = "metric"
SCORE = "__score"
DOCK = "__doc"
DDPK = "__ddp"
SEGK = "__seg"
LOWESS_MAX_POINTS = 20_000
#: default largest share of either side of the join (score rows, profile segments) and of null scores
#: that may stay unmatched without ``allow_partial_join`` (D710, D711)
MAX_UNJOINED = 0.01
#: unmatched keys named in messages and in ``signature["join"]``
FIRST_KEYS = 5


def _pct(share: float) -> str:
    return f"{100 * share:.3g} %"


def _keys_dict(row: dict[str, Any], cols: Sequence[str]) -> dict[str, Any]:
    return {c: row[c] for c in cols}


def _keys_text(row: dict[str, Any], cols: Sequence[str]) -> str:
    return ", ".join(f"{c}={row[c]!r}" for c in cols)


def _first_text(keys: list[dict[str, Any]], k: int = 3) -> str:
    return "; ".join(_keys_text(r, list(r)) for r in keys[:k]) + (" ..." if len(keys) > k else "")


def _raise_too_large(slf: pl.LazyFrame, sname: str, score_cols: Sequence[str]) -> None:
    """D360 naming the first row (1-based, in file order) and column with a finite |score| > MAX_ABS_SCORE."""
    import polars as pl

    cond = [(pl.col(c).cast(pl.Float64).abs() > MAX_ABS_SCORE) & pl.col(c).cast(pl.Float64).is_finite()
            for c in score_cols]
    hit = (slf.with_row_index("__row", offset=1).filter(pl.any_horizontal(cond))
           .select("__row", *score_cols).head(1).collect())
    row = hit.row(0, named=True) if hit.height else None
    col = next((c for c in score_cols if row is not None and row[c] is not None and math.isfinite(row[c])
                and abs(row[c]) > MAX_ABS_SCORE), score_cols[0])
    where = f"{sname}, row {row['__row']}, column '{col}': score {row[col]:g}" if row else f"{sname}: a score"
    raise DDPDataError(
        f"{where} is too large in magnitude (|score| > {MAX_ABS_SCORE:g}; sums, means and the LOWESS fit would "
        "overflow); rescale the score column (e.g. divide it by a power of ten)", code="D360")


def comma_list(value: str | Sequence[str] | None) -> Sequence[str] | None:
    """``gap=``/``on=`` given as one str, read as their flags read it (``--gap A,B``, ``--on COLS``):
    comma-separated items, not the str's characters; a sequence is kept as it is."""
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    return value


def parse_on(on: Sequence[str] | None, doc: str, seg: str) -> list[tuple[str, str]]:
    """Join keys as (profile column, scores column) pairs. ``None``: the profile's document and
    segment columns in both. Two bare names: the scores' names of the document and segment columns.
    ``P=S`` items pair any profile column with a scores column; another bare name is the same in both."""
    if not on:
        return [(doc, doc), (seg, seg)]
    items = [o.strip() for o in on if o.strip()]
    if len(items) == 2 and all("=" not in o for o in items):
        return [(doc, items[0]), (seg, items[1])]
    out = []
    for o in items:
        p, _, s = o.partition("=")
        out.append((p.strip(), (s or p).strip()))
    return out


@dataclass
class _Prepared:
    frame: pl.DataFrame      # by columns, DOCK, SEGK, DDPK, SCORE (rows with a finite score)
    by: list[str]
    join: dict[str, Any]
    prof_signature: dict[str, Any]
    warnings: list[str]
    prof_keys: pl.DataFrame  # the profile's join key columns and SEGK


def _not_numeric(slf: pl.LazyFrame, name: str, col: str, dtype: Any) -> DDPDataError:
    """D654 naming the file, the first row (1-based, header not counted) whose ``col`` value is not a
    number, the column and the value (error path only)."""
    import polars as pl

    val = pl.col(col).cast(pl.String) if dtype == pl.String else pl.col(col)
    bad = pl.col(col).is_not_null() & (val.cast(pl.Float64, strict=False).is_null() if dtype == pl.String
                                       else pl.lit(True))
    try:
        hit = slf.with_row_index("__r", offset=1).filter(bad).select("__r", pl.col(col).cast(pl.String)).head(1).collect()
    except Exception:  # noqa: BLE001 - a nested type that does not print as text
        hit = None
    if hit is None or hit.height == 0:
        return DDPDataError(f"{name}, column '{col}': scores must be numbers, found {dtype}", code="D654")
    return DDPDataError(f"{name}, row {int(hit['__r'][0])}, column '{col}': {str(hit[col][0])[:40]!r} is not a number "
                        f"(the column holds {dtype}); scores must be numbers", code="D654")


def _empty_text(slf: pl.LazyFrame, col: str, dtype: Any) -> bool:
    """True for a text column without a single value: a CSV/TSV score column whose every field is empty is
    read as String, but it holds no score, not a text one; its rows are null scores (D711), as a Parquet or
    JSON column of nulls is. One scan, on the error path only (a non-numeric score column)."""
    import polars as pl

    return dtype == pl.String and not slf.select(pl.col(col).is_not_null().any()).collect().item()


def _lazy(frame: Any, what: str) -> pl.LazyFrame:
    """A polars DataFrame or LazyFrame as a LazyFrame (anything else: a usage error naming ``what``)."""
    import polars as pl

    if isinstance(frame, (pl.LazyFrame, pl.DataFrame)):
        return frame.lazy()  # a LazyFrame's lazy() is the frame itself
    raise DDPUsageError(f"stratify: {what} must be a polars DataFrame or LazyFrame (read files with "
                        "ddpcore.io.profiles.scan_profile and ddpcore.io.scores.scan_scores), got "
                        f"{type(frame).__name__}", code="D657")


@dataclass(frozen=True)
class _JoinPolicy:
    """How :func:`stratify` joins the scores to the profile: ``on`` (None = the profile's document and
    segment columns), ``strict`` (any unmatched row or null score is D653), ``max_unjoined`` and
    ``allow_partial`` (D710/D711)."""

    on: Sequence[str] | None = None
    strict: bool = False
    max_unjoined: float = MAX_UNJOINED
    allow_partial: bool = False


@dataclass(frozen=True)
class _Inputs:
    """The two checked sides of the join (step 1 of :func:`_prepare`)."""

    plf: pl.LazyFrame
    slf: pl.LazyFrame
    pschema: Any
    sschema: Any
    document: str                 # the profile's document column
    keys: list[tuple[str, str]]   # (profile column, scores column) join pairs
    s_by: list[str]               # by/extra columns taken from the scores (or the stacked METRIC)
    p_by: list[str]               # by/extra columns taken from the profile
    multi: bool                   # several score columns, stacked into METRIC

    @property
    def pk(self) -> list[str]:
        return [pc for pc, _ in self.keys]

    @property
    def skeys(self) -> list[str]:
        return list(dict.fromkeys(sc for _, sc in self.keys))


def _check_inputs(profile: Any, psig: dict[str, Any], ppath: str, scores: Any, sname: str,
                  score_cols: Sequence[str], by_all: list[str], on: Sequence[str] | None, ddp_col: str) -> _Inputs:
    """Step 1: both frames, their columns, the join keys, the score and ``by`` columns (D635, D652, D650,
    D654, D560, D651)."""
    import polars as pl

    from ..io.profiles import check_ddp_col, profile_columns

    cols = profile_columns(psig)
    plf = _lazy(profile, "the profile")
    pschema = table_schema(plf, ppath)
    check_ddp_col(pschema, ddp_col, ppath, pschema.get(ddp_col))
    for c in (cols.document, cols.segment, ddp_col):
        if c not in pschema:
            raise DDPDataError(f"{ppath}: column '{c}' missing; expected a `ddp profile` segment table (columns: "
                               f"{', '.join(pschema)})", code="D635")
    slf = _lazy(scores, "the scores")
    sschema = table_schema(slf, sname)
    keys = parse_on(on, cols.document, cols.segment)
    for pc, sc in keys:
        if pc not in pschema:
            raise DDPUsageError(f"join column {pc}: not a column of the profile {ppath}; its columns: {', '.join(pschema)}",
                                code="D652")
        if sc not in sschema:
            hint = "" if on else " (name the scores' document and segment columns with --document-col/--segment-col)"
            raise DDPUsageError(f"{sname}: join column '{sc}' missing{hint}; available columns: {', '.join(sschema)}",
                                code="D652")
    if not score_cols:
        raise DDPUsageError("--score-col: give the score column", code="D650")
    for c in score_cols:
        if c not in sschema:
            raise DDPUsageError(f"--score-col {c}: not a column of {sname}; available columns: {', '.join(sschema)}",
                                code="D650")
        if not (sschema[c].is_numeric() or sschema[c] == pl.Null) and not _empty_text(slf, c, sschema[c]):
            raise _not_numeric(slf, sname, c, sschema[c])
    multi = len(score_cols) > 1
    if multi and METRIC in by_all and (METRIC in sschema or METRIC in pschema):
        where = sname if METRIC in sschema else str(ppath)
        raise DDPUsageError(
            f"--by {METRIC}: ambiguous: {where} has a column '{METRIC}', and the {len(score_cols)} --score-col columns "
            f"({', '.join(score_cols)}) are stacked into a '{METRIC}' column too; give one --score-col to group by the "
            f"existing column, or rename it", code="D560")
    avail_by = [c for c in sschema if c not in score_cols] + ([METRIC] if multi else []) + \
        [c for c in pschema if c not in sschema and c not in (S.DDP, ddp_col)]
    for b in by_all:
        if b not in avail_by:
            raise DDPUsageError(f"--by {b}: not a column of the scores {sname} or the profile {ppath}; available "
                                f"columns: {', '.join(dict.fromkeys(avail_by))}; group by one of them", code="D651")
    s_by = [b for b in dict.fromkeys(by_all) if b in sschema or (multi and b == METRIC)]
    p_by = [b for b in dict.fromkeys(by_all) if b not in s_by]
    return _Inputs(plf, slf, pschema, sschema, cols.document, keys, s_by, p_by, multi)


def _long_scores(inp: _Inputs, score_cols: Sequence[str]) -> pl.LazyFrame:
    """Step 2: the scores as keys, ``by`` columns and one float score column SCORE (several score columns
    unpivoted into METRIC; METRIC is that pseudo-column only then, otherwise a real column)."""
    import polars as pl

    base = list(dict.fromkeys([sc for _, sc in inp.keys] + [b for b in inp.s_by if not (inp.multi and b == METRIC)]))
    if inp.multi:
        slong = inp.slf.select(*base, *score_cols).unpivot(
            index=base, on=list(score_cols), variable_name=METRIC, value_name=SCORE)
    else:
        slong = inp.slf.select(*base, pl.col(score_cols[0]).alias(SCORE))
    return slong.with_columns(pl.col(SCORE).cast(pl.Float64))


def _profile_table(inp: _Inputs, ppath: str, ddp_col: str) -> pl.DataFrame:
    """Step 3: the profile (one row per segment, small) collected with integer document codes DOCK (sorted
    id order, the bootstrap's unit order), row numbers SEGK and DDPK, so the 10 M-row join carries no
    strings. A join key on two profile rows would pair each of its score rows with two DDP values: D712.
    A DDP value that is not a whole number >= 0 (negative, fractional, NaN, infinite) is D781 naming the
    profile, the row and the column (nulls are left out of the join, with a warning): a negative value
    would fall below every bin and a fractional one would be truncated by the Int64 cast."""
    import polars as pl

    from ..io.profiles import check_ddp_values

    pk = inp.pk
    prof_df = inp.plf.select(*dict.fromkeys(pk + [inp.document] + inp.p_by), pl.col(ddp_col).alias(DDPK)).collect()
    raw = prof_df.get_column(DDPK)
    check_ddp_values(pl.DataFrame({ddp_col: raw.cast(pl.Float64) if raw.dtype == pl.Decimal else raw}), ddp_col,
                     ppath)
    prof_df = prof_df.with_columns(pl.col(DDPK).cast(pl.Int64))
    prof_df = prof_df.with_columns(
        (pl.col(inp.document).rank("dense") - 1).cast(pl.UInt32).alias(DOCK),
        pl.int_range(pl.len(), dtype=pl.UInt32).alias(SEGK), pl.lit(True).alias("__hit"))
    pdup = prof_df.filter(pl.struct(pk).is_duplicated()) if pk else prof_df.head(0)
    if pdup.height:
        first = pdup.row(0, named=True)
        same = prof_df.filter(pl.all_horizontal([pl.col(c) == first[c] for c in pk])).height
        raise DDPDataError(
            f"{ppath}: the join key ({_keys_text(first, pk)}) is on {same} profile rows ({pdup.height} rows share "
            "a key with another row), so a score row would join twice; join on columns that name one segment each "
            "(--document-col/--segment-col PROFILE_COL=SCORES_COL) or give the segment table of one `ddp profile` run", code="D712")
    return prof_df


def _finite_score() -> pl.Expr:
    import polars as pl

    return (pl.col(SCORE).is_not_null() & pl.col(SCORE).is_finite()).fill_null(False)


def _left_join(inp: _Inputs, slong: pl.LazyFrame, prof_df: pl.DataFrame) -> pl.LazyFrame:
    """Step 4: every score row with its profile segment (``__hit`` null where there is none); ids compare
    as text when the two sides' types differ; the scores' row order is kept (float sums, LOWESS ties)."""
    import polars as pl

    lk, rk = [], []
    for (pc, sc) in inp.keys:
        if inp.pschema[pc] != inp.sschema[sc]:
            lk.append(pl.col(sc).cast(pl.String))
            rk.append(pl.col(pc).cast(pl.String))
        else:
            lk.append(pl.col(sc))
            rk.append(pl.col(pc))
    pk = inp.pk
    right = prof_df.select(*dict.fromkeys(pk), *[b for b in inp.p_by if b not in pk], DOCK, SEGK, DDPK, "__hit").lazy()
    return slong.join(right, left_on=lk, right_on=rk, how="left", suffix="__prof", maintain_order="left")


def _collect_join(inp: _Inputs, joined: pl.LazyFrame, sname: str) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Step 5, one pass over one plan: the joined rows (no strings) with ``__hit``/``__ok`` flags, the
    first unmatched score keys and the first null-score keys (D658 when the scores cannot be read)."""
    import polars as pl

    s_by, p_by = inp.s_by, inp.p_by
    keep_cols = [b if b in s_by else (f"{b}__prof" if b in inp.sschema else b) for b in s_by + p_by]
    skeys = inp.skeys
    finite = _finite_score()
    full_lf = joined.select(*[pl.col(k).alias(b) for k, b in zip(keep_cols, s_by + p_by)], DOCK, SEGK, DDPK, SCORE,
                            pl.col("__hit").is_not_null().alias("__hit"), finite.alias("__ok"))
    miss_lf = (joined.filter(pl.col("__hit").is_null()).select(*skeys).unique(maintain_order=True)
               .head(FIRST_KEYS))
    null_lf = joined.filter(pl.col("__hit").is_not_null() & ~finite).select(*skeys).head(FIRST_KEYS)
    try:
        full, miss_df, null_df = pl.collect_all([full_lf, miss_lf, null_lf])
    except Exception as exc:  # noqa: BLE001
        raise DDPDataError(f"{sname}: cannot read ({str(exc).splitlines()[0]})", code="D658") from None
    return full, miss_df, null_df


def _join_report(inp: _Inputs, full: pl.DataFrame, miss_df: pl.DataFrame, null_df: pl.DataFrame,
                 prof_df: pl.DataFrame, policy: _JoinPolicy, sname: str,
                 score_cols: Sequence[str]) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Step 6: the rows kept (matched, finite score, profile DDP; a finite |score| over MAX_ABS_SCORE is
    D360) and ``signature["join"]``: counts, shares and first keys of every kind of row left out."""
    import polars as pl

    hit = full["__hit"]
    no_ddp = full["__hit"] & full[DDPK].is_null()  # a profile segment without a DDP value
    good = hit & full["__ok"] & ~no_ddp
    n_unmatched = int((~hit).sum())
    n_null = int((hit & ~full["__ok"]).sum())
    n_no_ddp = int((no_ddp & full["__ok"]).sum())
    big = good & (full[SCORE].abs() > MAX_ABS_SCORE)
    if big.any():
        _raise_too_large(inp.slf, sname, score_cols)
    frame = full.filter(good).drop("__hit", "__ok")
    n_prof = prof_df.height
    matched_segs = full.filter(hit)[SEGK].unique()
    n_prof_unmatched = int(n_prof - matched_segs.len())
    prof_miss = prof_df.filter(~pl.col(SEGK).is_in(matched_segs.implode())).head(FIRST_KEYS) \
        if n_prof_unmatched else prof_df.head(0)
    n_rows = int(full.height)
    skeys, pk = inp.skeys, inp.pk
    join = {"on": [{"profile": pc, "scores": sc} for pc, sc in inp.keys], "score_rows": n_rows,
            "matched_score_rows": n_rows - n_unmatched, "unmatched_score_rows": n_unmatched,
            "unmatched_score_share": (n_unmatched / n_rows) if n_rows else 0.0,
            "first_unmatched_score_keys": [_keys_dict(r, skeys) for r in miss_df.iter_rows(named=True)],
            "null_scores": n_null, "null_score_share": (n_null / n_rows) if n_rows else 0.0,
            "first_null_score_keys": [_keys_dict(r, skeys) for r in null_df.iter_rows(named=True)],
            "scores_on_segments_without_ddp": n_no_ddp,
            "profile_segments": int(n_prof), "matched_profile_segments": int(n_prof - n_prof_unmatched),
            "unmatched_profile_segments": n_prof_unmatched,
            "unmatched_profile_share": (n_prof_unmatched / n_prof) if n_prof else 0.0,
            "first_unmatched_profile_keys": [_keys_dict(r, pk) for r in prof_miss.iter_rows(named=True)],
            "profile_segments_without_score": int(n_prof - frame[SEGK].n_unique()),
            "documents": int(frame[DOCK].n_unique()),
            "used_score_rows": int(frame.height),
            "max_unjoined": float(policy.max_unjoined), "allow_partial_join": bool(policy.allow_partial)}
    return frame, join


def _check_join(inp: _Inputs, joined: pl.LazyFrame, frame: pl.DataFrame, join: dict[str, Any],
                policy: _JoinPolicy, ppath: str, sname: str) -> None:
    """Step 7: the join policy: strict (D653), nothing matched (D656), either side unmatched over
    ``max_unjoined`` (D710), null scores over it (D711), no usable row (D711)."""
    import polars as pl

    keys, max_unjoined = inp.keys, policy.max_unjoined
    n_rows, n_unmatched, n_null = join["score_rows"], join["unmatched_score_rows"], join["null_scores"]
    n_prof, n_prof_unmatched = join["profile_segments"], join["unmatched_profile_segments"]
    if policy.strict and (n_unmatched or n_null):
        bad = joined.filter(pl.col("__hit").is_null() | ~_finite_score()).head(1).collect().row(0, named=True)
        what = "has no profile segment" if bad["__hit"] is None else "has a null or non-finite score"
        ids = ", ".join(f"{sc}={bad[sc]!r}" for _, sc in keys)
        raise DDPDataError(
            f"--strict-join: {sname}: score row ({ids}) {what} ({n_unmatched} unmatched row(s), "
            f"{n_null} null score(s)); drop --strict-join to count and skip them", code="D653")
    if frame.height == 0 and n_unmatched == n_rows:
        raise DDPDataError(f"no score row of {sname} matches a segment of the profile {ppath} (join on "
                           f"{', '.join(f'{p}={s}' for p, s in keys)}); check --document-col/--segment-col and that the profile is of the "
                           "scored source", code="D656")
    # the join must cover both sides, but for a small share (--max-unjoined)
    sides = []
    if n_unmatched and join["unmatched_score_share"] > max_unjoined:
        sides.append(f"{n_unmatched:,} of {n_rows:,} score rows of {sname} ({_pct(join['unmatched_score_share'])}) "
                     f"have no profile segment (first: {_first_text(join['first_unmatched_score_keys'])})")
    if n_prof_unmatched and join["unmatched_profile_share"] > max_unjoined:
        sides.append(f"{n_prof_unmatched:,} of {n_prof:,} segments of the profile {ppath} "
                     f"({_pct(join['unmatched_profile_share'])}) have no score row (first: "
                     f"{_first_text(join['first_unmatched_profile_keys'])})")
    if sides and not policy.allow_partial:
        raise DDPDataError(
            f"join on {', '.join(f'{p}={s}' for p, s in keys)}: " + "; ".join(sides)
            + f"; more than --max-unjoined {max_unjoined:g} of a side: check the ids (--document-col/--segment-col, a prefix one side lacks) "
            "or give --allow-partial-join to stratify the matched rows only", code="D710")
    if n_null and join["null_score_share"] > max_unjoined and not policy.allow_partial:
        raise DDPDataError(
            f"{sname}: {n_null:,} of {n_rows:,} score rows ({_pct(join['null_score_share'])}) have a null or "
            f"non-finite score (first: {_first_text(join['first_null_score_keys'])}), more than --max-unjoined "
            f"{max_unjoined:g}; fill or drop them, or give --allow-partial-join to leave them out", code="D711")
    if frame.height == 0:
        raise DDPDataError(f"{sname}: no matched score row has a finite score and a profile DDP; nothing to "
                           "stratify", code="D711")


def _join_warnings(join: dict[str, Any]) -> list[str]:
    """Step 8: one line per kind of row left out (``signature["warnings"]``, the CLI's ``warning:`` lines)."""
    n_rows, n_unmatched, n_null = join["score_rows"], join["unmatched_score_rows"], join["null_scores"]
    n_prof, n_prof_unmatched = join["profile_segments"], join["unmatched_profile_segments"]
    n_no_ddp = join["scores_on_segments_without_ddp"]
    warnings = []
    if n_unmatched:
        warnings.append(f"{n_unmatched:,} of {n_rows:,} score rows ({_pct(join['unmatched_score_share'])}) have no "
                        f"profile segment and are left out (first: {_first_text(join['first_unmatched_score_keys'])})")
    if n_prof_unmatched:
        warnings.append(f"{n_prof_unmatched:,} of {n_prof:,} profile segments ({_pct(join['unmatched_profile_share'])})"
                        f" have no score row (first: {_first_text(join['first_unmatched_profile_keys'])})")
    if n_null:
        warnings.append(f"{n_null:,} null or non-finite score(s) left out (first: "
                        f"{_first_text(join['first_null_score_keys'])})")
    if n_no_ddp:
        warnings.append(f"{n_no_ddp:,} score row(s) on profile segments without a DDP value left out")
    return warnings


def _prepare(profile: Any, psig: dict[str, Any], ppath: str, scores: Any, sname: str, score_cols: Sequence[str],
             by: Sequence[str], policy: _JoinPolicy, extra_keys: Sequence[str] = (), *,
             ddp_col: str = S.DDP) -> _Prepared:
    """The joined rows of :func:`stratify` and the join's account, in the named steps above."""
    inp = _check_inputs(profile, psig, ppath, scores, sname, score_cols, list(by) + list(extra_keys), policy.on,
                        ddp_col)
    slong = _long_scores(inp, score_cols)
    prof_df = _profile_table(inp, ppath, ddp_col)
    joined = _left_join(inp, slong, prof_df)
    full, miss_df, null_df = _collect_join(inp, joined, sname)
    frame, join = _join_report(inp, full, miss_df, null_df, prof_df, policy, sname, score_cols)
    del full
    _check_join(inp, joined, frame, join, policy, ppath, sname)
    return _Prepared(frame, list(by), join, psig, _join_warnings(join), prof_df.select(*dict.fromkeys(inp.pk), SEGK))


def _rows_per_segment(prep: _Prepared, by: list[str]) -> None:
    """Score rows per profile segment within each group, into ``prep.join`` (min, max, groups where they
    differ). Rows of one segment are pooled as separate points: equal counts (e.g. every system scores
    every segment) weigh segments alike; unequal counts (a repeated row, a system missing some segments)
    weigh some segments more, which is a warning naming the first such group and segment."""
    import polars as pl

    f = prep.frame
    per = f.group_by([*by, SEGK]).len("__n")
    rng = per.group_by(by).agg(pl.col("__n").min().alias("__min"), pl.col("__n").max().alias("__max")) if by \
        else per.select(pl.col("__n").min().alias("__min"), pl.col("__n").max().alias("__max"))
    uneven = rng.filter(pl.col("__min") != pl.col("__max"))
    prep.join["rows_per_segment"] = {"min": int(rng["__min"].min()), "max": int(rng["__max"].max()),
                                     "groups_with_unequal_counts": int(uneven.height), "groups": int(rng.height)}
    if uneven.height:
        u = uneven.sort(by, nulls_last=True).row(0, named=True) if by else uneven.row(0, named=True)
        cond = [pl.col(b) == u[b] if u[b] is not None else pl.col(b).is_null() for b in by]
        top = per.filter(*cond).sort(["__n", SEGK], descending=[True, False]).row(0, named=True) if by else \
            per.sort(["__n", SEGK], descending=[True, False]).row(0, named=True)
        where = ", ".join(f"{b}={u[b]!r}" for b in by) or "all rows"
        hit = prep.prof_keys.filter(pl.col(SEGK) == top[SEGK])
        seg_key = {c: v for c, v in hit.row(0, named=True).items() if c != SEGK} if hit.height else {}
        prep.warnings.append(
            f"{uneven.height} of {rng.height} group(s) score some segments more often than others, so those segments "
            f"weigh more in the bin means (first: {where}: {u['__min']} to {u['__max']} rows per segment, e.g. "
            f"({_keys_text(seg_key, list(seg_key)) or 'segment ' + str(top[SEGK])}) {top['__n']} times); "
            "add the column that tells the rows apart (e.g. system, annotator) to --by, or drop repeated rows")


def _group_coverage(prep: _Prepared, by: list[str], max_unjoined: float, allow_partial_join: bool) -> None:
    """Profile segments covered by each group, into ``prep.join["group_coverage"]`` (issue 19).

    The overall join check counts a profile segment matched when *any* score row joins it; a group
    (e.g. ``--by system``) whose rows miss some segments its peers cover would silently rest on fewer
    segments. A group is expected to cover every used segment with its segment-level ``by`` values
    (the ``by`` columns constant within a segment, e.g. ``domain``; the others, e.g. ``system``, split
    one segment's rows). Groups short of that are a warning naming the first one and one missing
    segment; a group missing more than ``max_unjoined`` of its segments is D710 unless
    ``allow_partial_join`` (as for the overall join). Polars group-bys only (no Python loop over rows)."""
    import polars as pl

    f = prep.frame
    if not by or f.height == 0:
        return
    per_seg = f.group_by(SEGK).agg([pl.col(b).n_unique().alias(b) for b in by]).select(
        [pl.col(b).max() for b in by]).row(0, named=True)
    seg_by = [b for b in by if per_seg[b] <= 1]  # properties of the segment (profile side)
    if len(seg_by) == len(by):
        return  # the groups partition the segments: nothing to compare
    segs = f.select(SEGK, *seg_by).unique()
    expected = (segs.group_by(seg_by).len("__expected") if seg_by
                else pl.DataFrame({"__expected": [segs.height]}, schema={"__expected": pl.UInt32}))
    got = f.group_by(by).agg(pl.col(SEGK).n_unique().alias("__got"))
    cov = got.join(expected, on=seg_by, how="left", nulls_equal=True) if seg_by else got.join(expected, how="cross")
    cov = cov.with_columns((1.0 - pl.col("__got") / pl.col("__expected")).alias("__missing"))
    short = cov.filter(pl.col("__got") < pl.col("__expected")).sort(["__missing", *by], descending=[True] + [False] * len(by),
                                                                    nulls_last=True)
    info: dict[str, Any] = {"groups": int(cov.height), "groups_short": int(short.height),
                            "max_missing_share": float(short["__missing"][0]) if short.height else 0.0,
                            "first_short_group": None}
    prep.join["group_coverage"] = info
    if not short.height:
        return
    g = short.row(0, named=True)
    where = ", ".join(f"{b}={g[b]!r}" for b in by)
    match = [pl.col(b) == g[b] if g[b] is not None else pl.col(b).is_null() for b in seg_by]
    pool = segs.filter(*match) if match else segs
    have = f.filter(*[pl.col(b) == g[b] if g[b] is not None else pl.col(b).is_null() for b in by])[SEGK].unique()
    miss = pool.filter(~pl.col(SEGK).is_in(have.implode())).sort(SEGK).head(1)[SEGK].to_list()
    hit = prep.prof_keys.filter(pl.col(SEGK) == miss[0]) if miss else prep.prof_keys.head(0)
    seg_key = {c: v for c, v in hit.row(0, named=True).items() if c != SEGK} if hit.height else {}
    info["first_short_group"] = {"group": {b: g[b] for b in by}, "segments": int(g["__got"]),
                                 "of": int(g["__expected"]), "first_missing": seg_key}
    text = (f"{short.height} of {cov.height} group(s) cover fewer profile segments than the join gives them "
            f"(first: {where}: {g['__got']} of {g['__expected']} segments, missing e.g. "
            f"({_keys_text(seg_key, list(seg_key))})), so those groups rest on other segments than their peers")
    if g["__missing"] > max_unjoined and not allow_partial_join:
        raise DDPDataError(
            f"{text}; {_pct(g['__missing'])} of that group's segments have no score row, more than --max-unjoined "
            f"{max_unjoined:g}: add the missing score rows, or give --allow-partial-join to stratify the matched "
            "rows only", code="D710")
    prep.warnings.append(text + " (signature.join.group_coverage)")


def _outside_bins(prep: _Prepared, edges: np.ndarray) -> None:
    """A warning (``signature["warnings"]``, the CLI's ``warning:`` lines) for the rows whose DDP lies outside
    every bin of ``edges`` (float64, (n_bins + 1,); e.g. ``--bins 10,100``): they count in a group's ``n`` and
    Spearman but in none of its bins, so the bins' ``n`` add up to less than the group's."""
    ddp = prep.frame[DDPK].to_numpy()
    low, high = float(edges[0]), float(edges[-1])
    outside = int(np.count_nonzero((ddp < low) | (ddp >= high)))
    if outside:
        prep.warnings.append(
            f"{outside:,} of {ddp.size:,} score rows have a DDP outside the bins [{low:g}, {high:g}) (--bins) and are in "
            "no bin: each group's n and Spearman count them, its bins do not")


def _bins_of(ddp: np.ndarray, edges: np.ndarray) -> np.ndarray:
    b = np.searchsorted(edges, ddp.astype(np.float64), side="right") - 1
    b[(b < 0) | (b >= edges.size - 1)] = -1
    return b


def _nan_none(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _group_stats(doc: np.ndarray, ddp: np.ndarray, score: np.ndarray, edges: np.ndarray, seed: int,
                 lowess_max: int) -> tuple[dict[str, Any], np.ndarray, np.ndarray, np.ndarray]:
    """Statistics of one group but the CIs: arrays (n,) of global document codes, DDP and score.

    Returns (partial result, ``present`` (bool, (n_docs_global,)): the group's documents = its
    resampling units, and their per-bin score sums and counts, each (n_present, n_bins))."""
    from .correlation import spearman
    from .lowess import lowess

    n = int(score.size)
    out: dict[str, Any] = {"n": n}
    if n >= 3:
        r = spearman(ddp, score)
        out["spearman"] = {"rho": _nan_none(r.statistic), "p": _nan_none(r.p_value)}
    else:
        out["spearman"] = {"rho": None, "p": None}
    n_bins = edges.size - 1
    b = _bins_of(ddp, edges)
    inb = b >= 0
    n_docs = int(doc.max()) + 1
    cell = doc[inb] * n_bins + b[inb]
    sums = np.bincount(cell, weights=score[inb], minlength=n_docs * n_bins).reshape(n_docs, n_bins)
    cnts = np.bincount(cell, minlength=n_docs * n_bins).reshape(n_docs, n_bins).astype(np.float64)
    present = np.bincount(doc, minlength=n_docs) > 0
    x, y = ddp.astype(np.float64), score
    if n > lowess_max:
        pick = np.sort(np.random.Generator(np.random.PCG64(seed)).choice(n, lowess_max, replace=False))
        x, y = x[pick], y[pick]
    if x.size >= 2:
        fit = lowess(y, x)
        first = np.r_[True, fit.x[1:] != fit.x[:-1]]
        out["lowess"] = {"x": fit.x[first].tolist(), "y": fit.fitted[first].tolist()}
    else:
        out["lowess"] = {"x": x.tolist(), "y": y.tolist()}
    return out, present, sums[present], cnts[present]


def _pow2_scale(a: np.ndarray) -> float:
    """1.0, or the power of two 2**-e that brings max |a| to at most 1 when it is above 2**300 (about 2e90)."""
    m = float(np.abs(a).max()) if a.size else 0.0
    if not m > 2.0 ** 300:
        return 1.0
    return 2.0 ** -math.frexp(m)[1]


def _cis(sums: list[np.ndarray], cnts: list[np.ndarray], n_boot: int, seed: int,
         threads: int | None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Document-bootstrap 95 % CIs of the bin means of groups that share their documents (the same
    units, so one resampling serves them all: replicate r draws the same documents for every group,
    and identical count columns are summed once). Each sums/cnts array is (n_units, n_bins); returns
    (ci_low, ci_high) per group, NaN where a bin has fewer than two documents."""
    from .bootstrap import resample_sums

    n_bins = sums[0].shape[1]
    # a document's bin sum of scores near MAX_ABS_SCORE can exceed what resample_sums accepts: such a
    # group's sums are scaled by a power of two (exact in binary floating point) and its means scaled back
    scales = [_pow2_scale(s) for s in sums]
    vals = np.hstack([np.hstack([s * f, c]) for s, c, f in zip(sums, cnts, scales)])
    rep = resample_sums(vals, n_boot=n_boot, seed=seed, threads=threads)
    out = []
    for k, c in enumerate(cnts):
        r = rep[:, 2 * n_bins * k: 2 * n_bins * (k + 1)]
        with np.errstate(invalid="ignore", divide="ignore"):
            means = (r[:, :n_bins] / r[:, n_bins:]) / scales[k]
        means[r[:, n_bins:] == 0] = np.nan
        ok = ((c > 0).sum(axis=0) >= 2) & ~np.isnan(means).all(axis=0)  # a one-document bin has no CI
        lo, hi = np.full(n_bins, np.nan), np.full(n_bins, np.nan)
        if ok.any():
            q = np.nanpercentile(means[:, ok], [2.5, 97.5], axis=0)
            lo[ok], hi[ok] = q[0], q[1]
        out.append((lo, hi))
    return out


def _groups(frame: pl.DataFrame, by: list[str], edges: np.ndarray, n_boot: int, seed: int, lowess_max: int,
            threads: int | None) -> list[dict[str, Any]]:
    import polars as pl

    if by:
        # groups in first-appearance order (rows keep the scores' order inside each), then the few
        # groups sorted by their key (nulls last): no sort of the whole table
        parts = frame.partition_by(by, maintain_order=True, as_dict=False)
        keys = pl.DataFrame([p.select(by).row(0) for p in parts], schema=frame.select(by).schema, orient="row")
        order = keys.with_row_index("__k").sort(by, nulls_last=True, maintain_order=True)["__k"].to_list()
        parts = [parts[i] for i in order]
    else:
        parts = [frame]
    n_bins = edges.size - 1
    res, units, sums, cnts = [], [], [], []
    for g in parts:  # one iteration per group (systems x metrics), not per row
        doc = g[DOCK].to_numpy().astype(np.int64)  # global document codes
        stats, present, s_, c_ = _group_stats(doc, g[DDPK].to_numpy(), g[SCORE].to_numpy().astype(np.float64),
                                              edges, seed, lowess_max)
        key = {b: g[b][0] for b in by}
        res.append({**{k: (v if not isinstance(v, float) or math.isfinite(v) else None) for k, v in key.items()},
                    **stats})
        units.append(np.flatnonzero(present).tobytes())
        sums.append(s_)
        cnts.append(c_)
    cis: list[tuple[np.ndarray, np.ndarray]] = [(np.full(n_bins, np.nan), np.full(n_bins, np.nan))] * len(parts)
    if n_boot > 0:
        batches: dict[bytes, list[int]] = {}
        for k, u in enumerate(units):
            batches.setdefault(u, []).append(k)
        for ks in batches.values():  # one resampling per set of documents (usually one for all groups)
            for k, ci in zip(ks, _cis([sums[k] for k in ks], [cnts[k] for k in ks], n_boot, seed, threads)):
                cis[k] = ci
    for r, s_, c_, (lo, hi) in zip(res, sums, cnts, cis):
        tot_s, tot_c = s_.sum(axis=0), c_.sum(axis=0)
        r["bins"] = [{"low": float(edges[i]), "high": float(edges[i + 1]), "n": int(tot_c[i]),
                      "mean": _nan_none(tot_s[i] / tot_c[i]) if tot_c[i] else None,
                      "ci_low": _nan_none(lo[i]) if tot_c[i] else None,
                      "ci_high": _nan_none(hi[i]) if tot_c[i] else None} for i in range(n_bins)]
        r["lowess"] = r.pop("lowess")  # key order: by columns, n, spearman, bins, lowess
    return res


def check_options(*, by: Sequence[str] = (), bins: str | Sequence[float] = DEFAULT_BINS, gap: Sequence[str] | None = None,
                  gap_col: str | None = None, n_boot: int = 10_000, seed: int = 0,
                  lowess_max_points: int = LOWESS_MAX_POINTS, max_unjoined: float = MAX_UNJOINED
                  ) -> tuple[np.ndarray, str | None]:
    """The checks of :func:`stratify` that need no data (the CLI runs them before reading a file):
    bins (D640/D642), ``n_boot``/``seed``/``lowess_max_points`` (D657), ``max_unjoined`` (D713) and
    ``gap`` (D655). Returns the bin edges (float64, shape (n_bins + 1,)) and the gap column (or None)."""
    from .bins import parse_bins

    edges = np.asarray(parse_bins(list(bins) if not isinstance(bins, str) else bins), dtype=np.float64)
    by = [by] if isinstance(by, str) else list(by)  # one column's name, as in stratify
    gap = comma_list(gap)  # "A,B" as --gap reads it
    for flag, v in (("--n-boot", n_boot), ("--seed", seed), ("--lowess-max-points", lowess_max_points)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):  # "100" or None: a bare TypeError below
            raise DDPUsageError(f"{flag} must be a whole number, got {v!r} ({flag[2:].replace('-', '_')}= in Python)",
                                code="D657")
    if n_boot < 0 or seed < 0:
        raise DDPUsageError(f"--n-boot and --seed must be >= 0, got {n_boot} and {seed}", code="D657")
    if lowess_max_points < 2:
        raise DDPUsageError("--lowess-max-points must be at least 2", code="D657")
    if not (isinstance(max_unjoined, (int, float)) and 0.0 <= max_unjoined <= 1.0):
        raise DDPUsageError(f"--max-unjoined must be a share between 0 and 1 (0.01 = 1 %), got {max_unjoined}",
                            code="D713")
    gcol = None
    if gap is not None:
        if len(gap) != 2:
            raise DDPUsageError(f"--gap: give two values A,B, got {','.join(gap)}", code="D655")
        gcol = gap_col or (by[0] if by else None)
        if gcol is None:
            raise DDPUsageError("--gap A,B needs the column holding A and B: --by (its first column) or --gap-col",
                                code="D655")
    return edges, gcol


@dataclass(frozen=True)
class _Curves:
    """What :func:`_groups` computes per group: the DDP bin edges (float64, (n_bins + 1,)), the document
    bootstrap (``n_boot`` replicates, ``seed``, ``threads``) and the LOWESS subsample size."""

    edges: np.ndarray
    n_boot: int
    seed: int
    lowess_max_points: int
    threads: int | None

    def groups(self, frame: pl.DataFrame, by: list[str]) -> list[dict[str, Any]]:
        return _groups(frame, by, self.edges, self.n_boot, self.seed, self.lowess_max_points, self.threads)


def _gap_groups(prep: _Prepared, by: list[str], gap: tuple[str, str], gcol: str, curves: _Curves,
                names: str = "the scores") -> list[dict[str, Any]]:
    """The groups of the score difference A - B of ``gap = (A, B)``, two values of ``gcol``, paired per profile
    segment within the other ``by`` columns (D655: a value missing, a side scoring a segment twice, no pair;
    ``names``: the joined files, for the messages); ``prep.join["gap_pairs"]`` counts the pairs."""
    import polars as pl

    f = prep.frame
    vals = f[gcol].cast(pl.String)
    a, b = gap
    have = sorted(set(vals.unique().drop_nulls().to_list()))
    for v in (a, b):
        if v not in have:
            raise DDPUsageError(f"--gap {a},{b}: {names}: {v!r} is not a value of '{gcol}'; values: {', '.join(have[:30])}"
                                + (" ..." if len(have) > 30 else ""), code="D655")
    rest = [c for c in by if c != gcol]
    # pair on the profile's segment (document + DDP + the join keys are implied by the row's segment)
    f = f.with_columns(vals.alias("__g"))
    key = [c for c in f.columns if c not in (gcol, SCORE, "__g")]  # segment, document, DDP, other by columns
    fa = f.filter(pl.col("__g") == a).select(*key, pl.col(SCORE).alias("__a"))
    fb = f.filter(pl.col("__g") == b).select(*key, pl.col(SCORE).alias("__b"))
    for side, fx in ((a, fa), (b, fb)):
        dup = fx.filter(pl.struct(key).is_duplicated())
        if dup.height:
            raise DDPUsageError(
                f"--gap {a},{b}: {names}: {gcol} {side!r} scores {dup.select(SEGK).n_unique()} segment(s) more than once "
                f"({dup.height} rows) within the other --by columns, so A and B cannot be paired; add the column "
                "that tells them apart (e.g. lp, annotator) to --by", code="D655")
    paired = fa.join(fb, on=key, how="inner", nulls_equal=True, maintain_order="left").with_columns(
        (pl.col("__a") - pl.col("__b")).alias(SCORE), pl.lit(f"{a} - {b}").alias(gcol))
    if paired.height == 0:
        raise DDPDataError(f"--gap {a},{b}: {names}: no segment is scored for both {a!r} and {b!r} (column '{gcol}'); "
                           "give two values that score the same segments", code="D655")
    gaps = curves.groups(paired.select(*[c for c in [gcol, *rest] if c in paired.columns], DOCK, DDPK, SCORE),
                         [gcol, *rest])
    prep.join["gap_pairs"] = int(paired.height)
    return gaps


def _signature(prep: _Prepared, profile_name: str, scores_name: str | None, score_cols: list[str], ddp_col: str,
               curves: _Curves, gap: Sequence[str] | None, gcol: str | None) -> dict[str, Any]:
    """``result["signature"]`` of :func:`stratify`: settings, methods, the join's account and warnings."""
    return {
        "ddpcore": __version__, "method": "stratify", "profile": profile_name,
        "scores": scores_name if scores_name is not None else "<table>",
        "score_col": score_cols if len(score_cols) > 1 else score_cols[0], "ddp_col": ddp_col, "by": prep.by,
        "bins": [("inf" if math.isinf(e) else float(e)) for e in curves.edges], "n_boot": int(curves.n_boot),
        "seed": int(curves.seed),
        "ci": "document bootstrap, 95% percentile (numpy.nanpercentile, linear)",
        "rng": "numpy PCG64(seed).random_raw, row-major; unit = floor(raw * n_units / 2**64)",
        "spearman": "ddpcore.stats.spearman (scipy.stats.spearmanr)",
        "lowess": {"frac": 2.0 / 3.0, "it": 3, "delta": 0.0, "max_points": int(curves.lowess_max_points),
                   "subsample": "numpy Generator(PCG64(seed)).choice(n, max_points, replace=False)"},
        "gap": ({"col": gcol, "a": str(gap[0]), "b": str(gap[1])} if gap is not None else None),
        "join": prep.join, "warnings": prep.warnings, "profile_signature": prep.prof_signature,
    }


def stratify(profile: pl.DataFrame | pl.LazyFrame, scores: pl.DataFrame | pl.LazyFrame,
             score_col: str | Sequence[str], *, profile_signature: dict[str, Any] | None = None,
             profile_name: str = "<profile>", scores_name: str | None = None, ddp_col: str = S.DDP,
             by: Sequence[str] = (), bins: str | Sequence[float] = DEFAULT_BINS, on: Sequence[str] | None = None,
             gap: Sequence[str] | None = None, gap_col: str | None = None, n_boot: int = 10_000, seed: int = 0,
             strict_join: bool = False, lowess_max_points: int = LOWESS_MAX_POINTS,
             threads: int | None = None, max_unjoined: float = MAX_UNJOINED,
             allow_partial_join: bool = False) -> dict[str, Any]:
    """Join DDP to scores and stratify; returns the JSON-ready dict
    ``{"groups": [...], ("gaps": [...],) "signature": {...}}`` described in the module docstring.

    ``profile``: the ``ddp profile`` segment table (one row per segment; document and segment id
    columns named by ``profile_signature["columns"]``, else the defaults, and the DDP column
    ``ddp_col`` in sentences); ``scores``: one row per scored segment (and system, metric, ...).
    Both are polars frames: read files with :func:`ddpcore.io.profiles.scan_profile` and
    :func:`ddpcore.io.scores.scan_scores` (``ddp stratify`` does). ``profile_name`` and
    ``scores_name`` (e.g. the file paths) name them in messages and in the signature.
    ``ddp_col`` is the DDP column binned and correlated (``--ddp-col``: e.g. ``ddp_certified``);
    a name the profile does not have is D780. ``by``: the group columns (``--by``; one name or a sequence of
    names); ``bins``: DDP bin edges in sentences, bins ``[e_i, e_{i+1})``; ``n_boot``: document-bootstrap
    replicates (whole documents are the resampling unit; 0 = no CI). ``gap`` (two values A, B) and ``on``
    (join keys, :func:`parse_on`): a sequence, or one str of comma-separated items as ``--gap``/``--on`` take."""
    by = [by] if isinstance(by, str) else list(by)  # one column's name, not its characters (as score_col)
    gap, on = comma_list(gap), comma_list(on)  # a str as --gap A,B and --on COLS read it, not its characters
    edges, gcol = check_options(by=by, bins=bins, gap=gap, gap_col=gap_col, n_boot=n_boot, seed=seed,
                                lowess_max_points=lowess_max_points, max_unjoined=max_unjoined)
    score_cols = [score_col] if isinstance(score_col, str) else list(score_col)
    psig = dict(profile_signature or {})
    ppath = str(Path(profile_name))
    policy = _JoinPolicy(on, strict_join, float(max_unjoined), allow_partial_join)
    prep = _prepare(profile, psig, ppath, scores, scores_name or "<scores>", score_cols, by, policy,
                    extra_keys=[gcol] if gcol else [], ddp_col=ddp_col)
    _rows_per_segment(prep, by)
    _group_coverage(prep, by, policy.max_unjoined, allow_partial_join)
    curves = _Curves(edges, n_boot, seed, lowess_max_points, threads)
    _outside_bins(prep, edges)
    result: dict[str, Any] = {"groups": curves.groups(prep.frame, by)}
    if gap is not None and gcol is not None:
        result["gaps"] = _gap_groups(prep, by, (str(gap[0]), str(gap[1])), gcol, curves,
                                     f"{scores_name or '<scores>'} joined to the profile {ppath}")
    result["signature"] = _signature(prep, profile_name, scores_name, score_cols, ddp_col, curves, gap, gcol)
    return result


def to_tsv(result: dict[str, Any]) -> str:
    """One line per group x bin: by columns, group n, rho, p, bin low/high, n, mean, CI."""
    rows: list[list[Any]] = []
    by = result["signature"]["by"]
    gcol = (result["signature"].get("gap") or {}).get("col")
    header = ["kind", *by, *([gcol] if gcol and gcol not in by else []), "n", "rho", "p", "low", "high", "bin_n",
              "mean", "ci_low", "ci_high"]
    for kind in ("groups", "gaps"):
        for g in result.get(kind, []):
            for b in g["bins"]:
                rows.append([kind[:-1], *[g.get(c) for c in header[1:header.index("n")]], g["n"],
                             g["spearman"]["rho"], g["spearman"]["p"], b["low"], b["high"], b["n"], b["mean"],
                             b["ci_low"], b["ci_high"]])

    from ..io.tables import tsv_field

    def cell(v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, float):
            return "inf" if math.isinf(v) else f"{v:.6g}"
        return tsv_field(v)  # a group name with a tab, quote or line break is quoted (RFC 4180)
    return "\n".join("\t".join(cell(v) for v in r) for r in [header, *rows]) + "\n"


def to_text(result: dict[str, Any]) -> str:
    """A readable table: per group ρ (p) and the binned means with CIs."""
    from ..io.tables import text_cell

    lines = []
    by = result["signature"]["by"]
    gcol = (result["signature"].get("gap") or {}).get("col")
    col = result["signature"].get("ddp_col", S.DDP)
    lab = "DDP" if col == S.DDP else f"DDP ({text_cell(col)})"
    for kind in ("groups", "gaps"):
        for g in result.get(kind, []):  # a group name on one line (text_cell)
            name = ", ".join(f"{text_cell(c)}={text_cell(g.get(c))}"
                             for c in ([gcol] if kind == "gaps" and gcol not in by else []) + by) or "all"
            rho, p = g["spearman"]["rho"], g["spearman"]["p"]
            rs = "n/a" if rho is None else f"{rho:+.3f} (p={p:.2g})"
            lines.append(f"{'gap ' if kind == 'gaps' else ''}{name}: n={g['n']}, Spearman rho {rs}")
            for b in g["bins"]:
                hi = "inf" if math.isinf(b["high"]) else f"{b['high']:g}"
                if b["mean"] is None:
                    lines.append(f"  {lab} [{b['low']:g}, {hi}): n=0")
                    continue
                ci = "" if b["ci_low"] is None else f"  95% CI [{b['ci_low']:.4g}, {b['ci_high']:.4g}]"
                lines.append(f"  {lab} [{b['low']:g}, {hi}): n={b['n']}, mean {b['mean']:.4g}{ci}")
    j = result["signature"]["join"]
    lines.append(f"join: {j['score_rows']} score rows, {j['unmatched_score_rows']} without a profile segment, "
                 f"{j['null_scores']} null scores; {j['profile_segments_without_score']} of "
                 f"{j['profile_segments']} profile segments unused (no score row, only null scores, or no DDP value)")
    return "\n".join(lines) + "\n"


def dumps(result: dict[str, Any]) -> str:
    """``result`` (of :func:`stratify`) as the indented JSON that ``ddp stratify -f json`` writes (NaN as null)."""
    from ._table import json_safe

    return json.dumps(json_safe(result), indent=1, allow_nan=False) + "\n"


__all__ = ["check_options", "dumps", "stratify", "to_text", "to_tsv"]
