"""The mt-metrics-eval data layout (``--reader mtme``): sources, documents, system outputs, human and metric scores.

google-research/mt-metrics-eval keeps one test set (e.g. ``wmt23``) as a folder::

    sources/LP.txt                       one source segment per line (LP = language pair, e.g. en-de)
    references/LP.REF.txt                one reference per line (REF = refA, synthetic_ref, ...)
    system-outputs/LP/SYSTEM.txt         one translation per line
    documents/LP.docs                    "DOMAIN DOCNAME" per line (whitespace-separated), aligned with the source
    human-scores/LP.NAME.seg.score       "SYSTEM SCORE" per line; each system's lines in source order
    human-scores/LP.NAME.sys.score       "SYSTEM SCORE" per system
    metric-scores/LP/METRIC-REF.seg.score  the same for a metric (REF = the reference it used, "src" for QE)
    metric-scores/LP/METRIC-REF.sys.score

``None`` marks a missing score (mt-metrics-eval ``data.ReadScoreFile``: ``float(score) if score != 'None'
else None``). Lines are split on whitespace, as mt-metrics-eval does.

Readers
-------
:func:`iter_mtme_source` (``ddp profile --reader mtme``): the source + documents as the profile readers'
segment frames: ``document_id``, ``segment_id`` (0-based position within the document, the key
convention of :mod:`ddpcore.io.readers`), ``source``, ``domain`` and ``line_id`` (0-based line).

:func:`read_mtme_scores` (``ddp stats ... --reader mtme``): the segment scores as one table keyed by
(``document_id``, ``segment_id``, ``system``), with ``line_id`` and ``domain``; ``layout="wide"``
gives one Float64 column per score file (the human scores under their NAME, e.g. ``mqm``, the
metrics under METRIC-REF, e.g. ``BLEU-refA``); ``layout="long"`` gives the statistics long table
(``condition`` = that name, ``score``). ``None`` stays null (never 0); :class:`MtmeScores` counts the
nulls per column and the caller reports them. ``with_text=True`` adds ``hypothesis`` (the system
output) and ``reference`` (the ``references/LP.REF.txt`` line) for corpus metrics.

Checks: a ``.docs``, output, reference or a system's block of a ``.seg.score`` file whose line count
differs from the source is D823/D825/D828 naming the file and both counts; a line that is not
``SYSTEM SCORE`` is D824 naming the file and line; a score that is neither a number nor ``None`` is D826.
Error codes D820-D829.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import DDPDataError, DDPUsageError
from ..schema import SegmentColumns

if TYPE_CHECKING:
    import polars as pl

#: error codes raised here
ERROR_CODES = {
    "D820": "not an mt-metrics-eval test-set folder (no sources/ folder) or source file",
    "D821": "the language pair is ambiguous or not in the test set",
    "D822": "a .docs line is not 'DOMAIN DOCNAME'",
    "D823": "the .docs file and the source have different line counts",
    "D824": "a score line is not 'SYSTEM SCORE'",
    "D825": "a system's block of a .seg.score file has a line count different from the source",
    "D826": "a score is neither a number nor None",
    "D827": "a requested human score or metric is not in the test set",
    "D828": "a system output or reference has a line count different from the source",
    "D829": "no score file to read",
}

Layout = Literal["wide", "long"]
Warn = Callable[[str], None]
HYPOTHESIS = "hypothesis"
REFERENCE = "reference"


@dataclasses.dataclass(frozen=True)
class MtmeSet:
    """One language pair of an mt-metrics-eval test set: ``root`` (the test-set folder) and ``lp``."""

    root: Path
    lp: str

    @property
    def source(self) -> Path:
        return self.root / "sources" / f"{self.lp}.txt"

    @property
    def docs(self) -> Path:
        return self.root / "documents" / f"{self.lp}.docs"

    def human_files(self, level: str = "seg") -> dict[str, Path]:
        """NAME -> ``human-scores/LP.NAME.LEVEL.score`` (sorted by name)."""
        d = self.root / "human-scores"
        pre, suf = f"{self.lp}.", f".{level}.score"
        return {p.name[len(pre):-len(suf)]: p for p in sorted(d.glob(f"{pre}*{suf}"))} if d.is_dir() else {}

    def metric_files(self, level: str = "seg") -> dict[str, Path]:
        """METRIC-REF -> ``metric-scores/LP/METRIC-REF.LEVEL.score`` (sorted by name)."""
        d = self.root / "metric-scores" / self.lp
        suf = f".{level}.score"
        return {p.name[:-len(suf)]: p for p in sorted(d.glob(f"*{suf}"))} if d.is_dir() else {}

    def outputs(self) -> dict[str, Path]:
        d = self.root / "system-outputs" / self.lp
        return {p.stem: p for p in sorted(d.glob("*.txt"))} if d.is_dir() else {}

    def references(self) -> dict[str, Path]:
        d = self.root / "references"
        pre = f"{self.lp}."
        return {p.name[len(pre):-4]: p for p in sorted(d.glob(f"{pre}*.txt"))} if d.is_dir() else {}


def resolve_mtme(path: str | os.PathLike[str], lp: str | None = None) -> MtmeSet:
    """The :class:`MtmeSet` of ``path``: a test-set folder (``wmt23/``; ``lp`` or its only language
    pair), a language-pair path ``wmt23/en-de`` (no such folder needed), or a source file
    ``wmt23/sources/en-de.txt``. D820 when it is none of these, D821 for a missing or ambiguous pair."""
    p = Path(path)
    if p.is_file():
        if p.parent.name != "sources" or p.suffix != ".txt":
            raise DDPDataError(f"{p}: --reader mtme reads an mt-metrics-eval test set; give the test-set folder "
                               "(with sources/, documents/, ...) or its sources/LP.txt file", code="D820")
        root, lp = p.parent.parent, lp or p.stem
    elif p.is_dir() and (p / "sources").is_dir():
        root = p
    elif not p.exists() and (p.parent / "sources").is_dir():  # wmt23/en-de
        root, lp = p.parent, lp or p.name
    else:
        what = "does not exist" if not p.exists() else "has no sources/ folder"
        raise DDPDataError(f"{p}: {what}; --reader mtme reads an mt-metrics-eval test-set folder (sources/, "
                           "documents/, system-outputs/, human-scores/, metric-scores/)", code="D820")
    lps = sorted(q.stem for q in (root / "sources").glob("*.txt"))
    if lp is None:
        if len(lps) != 1:
            raise DDPUsageError(f"{root}: holds {len(lps)} language pairs ({', '.join(lps) or 'none'}); name one: "
                                f"{root}/sources/LP.txt or {root}/LP", code="D821")
        lp = lps[0]
    if lp not in lps:
        raise DDPDataError(f"{root}: no language pair {lp} (sources/ has {', '.join(lps) or 'none'})", code="D821")
    return MtmeSet(root, lp)


# ----------------------------------------------------------------------------- lines


def _lines(path: Path) -> pl.Series:
    """Every line of a text file (no terminators), read block by block (D104/D730 from the readers)."""
    import polars as pl

    from .readers import iter_line_blocks

    if not path.is_file():
        raise DDPDataError(f"{path}: file not found; the mt-metrics-eval layout needs it", code="D102")
    blocks = list(iter_line_blocks(path))
    return pl.concat(blocks) if blocks else pl.Series("l", [], dtype=pl.String)


def _check_count(path: Path, n: int, n_source: int, source: Path, code: str) -> None:
    if n != n_source:
        raise DDPDataError(f"{path}: {n} lines, but the source {source} has {n_source}; the mt-metrics-eval files "
                           "of one language pair have one line per source segment", code=code)


def read_documents(ms: MtmeSet, n_source: int) -> pl.DataFrame:
    """``documents/LP.docs`` as ``domain``, ``document_id``, ``segment_id`` (0-based position in its
    document) and ``line_id``, shape (n_source, 4). D822 names a bad line; D823 a count mismatch."""
    import polars as pl

    lines = _lines(ms.docs)
    _check_count(ms.docs, lines.len(), n_source, ms.source, "D823")
    parts = pl.DataFrame({"l": lines}).with_row_index("line_id").with_columns(
        pl.col("l").str.strip_chars().str.extract_groups(r"^(\S+)\s+(\S+)$").alias("g"))
    df = parts.select(pl.col("line_id").cast(pl.Int64), pl.col("g").struct.field("1").alias("domain"),
                      pl.col("g").struct.field("2").alias("document_id"), "l")
    bad = df.filter(pl.col("document_id").is_null())
    if bad.height:
        raise DDPDataError(f"{ms.docs}, line {int(bad['line_id'][0]) + 1}: expected 'DOMAIN DOCNAME', found "
                           f"{bad['l'][0][:60]!r}", code="D822")
    return df.select("domain", "document_id", pl.int_range(pl.len()).over("document_id").cast(pl.Int64)
                     .alias("segment_id"), "line_id")


def iter_mtme_source(path: str | os.PathLike[str], cols: SegmentColumns = SegmentColumns(), *,
                     lp: str | None = None) -> Iterator[pl.DataFrame]:
    """``ddp profile --reader mtme``: one frame (n_source rows) with ``cols.document``, ``cols.segment``
    (0-based position in the document, int64), ``cols.text``, ``cols.domain`` and ``line_id``."""
    import polars as pl

    ms = resolve_mtme(path, lp)
    text = _lines(ms.source)
    if text.len() == 0:
        raise DDPDataError(f"{ms.source}: the file has no segments", code="D606")
    docs = read_documents(ms, text.len())
    yield docs.select(pl.col("document_id").alias(cols.document), pl.col("segment_id").alias(cols.segment),
                      text.alias(cols.text), pl.col("domain").alias(cols.domain), pl.col("line_id"))


# ----------------------------------------------------------------------------- scores


def read_seg_score_file(path: Path, n_source: int, source: Path | None = None) -> pl.DataFrame:
    """One ``.seg.score`` file as ``system``, ``line_id`` (0-based source line) and ``score`` (Float64,
    null for ``None``), shape (n_systems * n_source, 3). D824: a line that is not ``SYSTEM SCORE``;
    D826: a score that is not a number or None; D825: a system with a line count other than ``n_source``."""
    import polars as pl

    lines = _lines(path)
    g = pl.DataFrame({"l": lines}).with_row_index("i").with_columns(
        pl.col("l").str.extract_groups(r"^\s*(\S+)\s+(\S+)\s*$").alias("g"))
    df = g.select("i", "l", pl.col("g").struct.field("1").alias("system"), pl.col("g").struct.field("2").alias("raw"))
    bad = df.filter(pl.col("system").is_null() & (pl.col("l").str.strip_chars() != ""))
    if bad.height:
        raise DDPDataError(f"{path}, line {int(bad['i'][0]) + 1}: expected 'SYSTEM SCORE', found {bad['l'][0][:60]!r}",
                           code="D824")
    df = df.filter(pl.col("system").is_not_null()).with_columns(
        pl.when(pl.col("raw") == "None").then(None).otherwise(pl.col("raw")).cast(pl.Float64, strict=False)
        .alias("score"))
    bad = df.filter(pl.col("score").is_null() & (pl.col("raw") != "None"))
    if bad.height:
        raise DDPDataError(f"{path}, line {int(bad['i'][0]) + 1}: score {bad['raw'][0][:30]!r} is neither a number "
                           "nor None", code="D826")
    counts = df.group_by("system", maintain_order=True).len()
    off = counts.filter(pl.col("len") != n_source)
    if off.height:
        s, n = off["system"][0], int(off["len"][0])
        raise DDPDataError(f"{path}: system {s} has {n} lines, but the source {source or 'file'} has {n_source}; each "
                           "system needs one score line per source segment ('None' for a missing one)", code="D825")
    return df.select("system", pl.int_range(pl.len()).over("system").cast(pl.Int64).alias("line_id"), "score")


@dataclasses.dataclass(frozen=True)
class MtmeScores:
    """:func:`read_mtme_scores`: ``table`` and, per score column, ``n_missing`` (``None`` lines) and
    ``n_rows``; ``files`` maps each column to the file it was read from."""

    table: pl.DataFrame
    columns: list[str]
    n_missing: dict[str, int]
    n_rows: int
    files: dict[str, str]
    ms: MtmeSet
    absent: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    def missing_note(self) -> str | None:
        """One line naming the columns with ``None`` scores and how many, or None."""
        miss = {k: v for k, v in self.n_missing.items() if v}
        absent = {k: v for k, v in self.absent.items() if v}
        if not miss and not absent:
            return None
        parts = []
        if miss:
            items = ", ".join(f"{k} {v}" for k, v in list(miss.items())[:8])
            more = f" and {len(miss) - 8} more columns" if len(miss) > 8 else ""
            parts.append(f"'None' scores kept as null, never 0: {items}{more}")
        if absent:
            items = ", ".join(f"{k} lacks {'/'.join(v[:3])}" for k, v in list(absent.items())[:4])
            more = f" and {len(absent) - 4} more columns" if len(absent) > 4 else ""
            parts.append(f"systems a score file does not list are null too: {items}{more}")
        return f"{self.ms.root} {self.ms.lp} ({self.n_rows} rows): " + "; ".join(parts)

    def signature(self) -> dict[str, Any]:
        return {"reader": "mtme", "root": str(self.ms.root), "lp": self.ms.lp, "files": dict(self.files),
                "n_missing": dict(self.n_missing), "absent_systems": dict(self.absent), "n_rows": self.n_rows}


def _pick(kind: str, have: dict[str, Path], want: Sequence[str] | None, ms: MtmeSet) -> dict[str, Path]:
    if want is None:
        return have
    missing = [w for w in want if w not in have]
    if missing:
        raise DDPDataError(f"{ms.root} {ms.lp}: no {kind} {', '.join(missing)}; the test set has "
                           f"{', '.join(have) or 'none'}", code="D827")
    return {w: have[w] for w in want}


def read_mtme_scores(path: str | os.PathLike[str], *, lp: str | None = None,
                     human: Sequence[str] | None = None, metrics: Sequence[str] | None = (),
                     layout: Layout = "wide", with_text: bool = False, reference: str | Sequence[str] | None = None,
                     warn: Warn | None = None) -> MtmeScores:
    """Segment-level scores of one language pair.

    Parameters
    ----------
    path, lp
        As :func:`resolve_mtme`.
    human
        Human score NAMEs (``mqm``, ``da-sqm``); None = every ``human-scores/LP.*.seg.score``.
    metrics
        METRIC-REF names (``BLEU-refA``); None = every metric; ``()`` (default) = none.
    layout
        ``"wide"``: one row per (document, segment, system), one Float64 column per score
        (null = ``None`` in the file, or a system the file does not list). ``"long"``: one row per
        (document, segment, system, condition) with ``condition`` = the score name and ``score``.
    with_text, reference
        Add ``hypothesis`` (``system-outputs/LP/SYSTEM.txt``) and ``reference`` (the
        ``references/LP.REF.txt`` line; ``reference`` = REF, default the only or first one) columns;
        systems without an output file are dropped from the text table (listed by ``warn``). Several REFs
        (a sequence): ``reference`` holds the first, and each REF also gets a column of its own name
        (``refA``, ``refB``: multi-reference corpus metrics).

    Rows: the systems of the score files (and outputs), every source line each; keys ``document_id``,
    ``segment_id`` (position in the document), ``line_id``, ``domain``, ``system``.
    """
    import polars as pl

    if layout not in ("wide", "long"):
        raise DDPUsageError(f"layout must be wide or long, got {layout!r}", code="D829")
    ms = resolve_mtme(path, lp)
    n_source = _lines(ms.source).len()
    docs = read_documents(ms, n_source)
    files = {**_pick("human score", ms.human_files(), human, ms),
             **_pick("metric", ms.metric_files(), metrics, ms)}
    if not files and not with_text:
        raise DDPDataError(f"{ms.root} {ms.lp}: no segment score file to read (human-scores/{ms.lp}.NAME.seg.score, "
                           f"metric-scores/{ms.lp}/METRIC-REF.seg.score)", code="D829")
    frames = {name: read_seg_score_file(f, n_source, ms.source) for name, f in files.items()}
    systems = list(dict.fromkeys(s for fr in frames.values() for s in fr["system"].unique(maintain_order=True)))
    if with_text:
        outs = ms.outputs()
        missing = [s for s in systems if s not in outs]
        if missing and warn is not None:
            warn(f"{ms.root} {ms.lp}: {len(missing)} scored system(s) without an output file dropped from the text "
                 f"table: {', '.join(missing[:10])}")
        systems = [s for s in outs if s in systems] if systems else list(outs)
    keys = pl.DataFrame({"system": systems}, schema={"system": pl.String}).join(
        docs, how="cross").select("document_id", "segment_id", "line_id", "domain", "system")
    table = keys
    for name, fr in frames.items():
        table = table.join(fr.rename({"score": name}), on=["system", "line_id"], how="left", maintain_order="left")
    if with_text:
        table = table.join(_texts(ms, systems, n_source), on=["system", "line_id"], how="left", maintain_order="left")
        refs = ms.references()
        if not refs:
            raise DDPDataError(f"{ms.root}/references: no {ms.lp}.REF.txt reference file", code="D828")
        wanted = [reference] if isinstance(reference, str) else list(reference or [next(iter(refs))])
        for ref in wanted:
            if ref not in refs:
                raise DDPDataError(f"{ms.root}/references: no reference {ref} (has {', '.join(refs)})", code="D827")
        columns: dict[str, Any] = {}
        for i, ref in enumerate(wanted):
            rl = _lines(refs[ref])
            _check_count(refs[ref], rl.len(), n_source, ms.source, "D828")
            if i == 0:
                columns[REFERENCE] = rl
            if len(wanted) > 1:
                if ref in table.columns or ref in (REFERENCE, "line_id"):
                    raise DDPDataError(f"{ms.root}/references: reference {ref!r} has the name of a column of the text "
                                       "table; score it alone (the default) or rename the file", code="D827")
                columns[ref] = rl
        table = table.join(pl.DataFrame({"line_id": pl.int_range(0, n_source, eager=True, dtype=pl.Int64),
                                         **columns}), on="line_id", how="left", maintain_order="left")
    n_rows = table.height
    n_missing = {name: int(fr["score"].null_count()) for name, fr in frames.items()}
    absent = {name: [s for s in systems if s not in set(fr["system"].unique().to_list())] for name, fr in frames.items()}
    res_cols = list(frames)
    if layout == "long":
        table = table.unpivot(index=[c for c in table.columns if c not in frames], on=res_cols,
                              variable_name="condition", value_name="score")
    out = MtmeScores(table=table, columns=res_cols, n_missing=n_missing, n_rows=n_rows,
                     files={k: str(v) for k, v in files.items()}, ms=ms, absent=absent)
    note = out.missing_note()
    if note and warn is not None:
        warn(note)
    return out


def _texts(ms: MtmeSet, systems: Sequence[str], n_source: int) -> pl.DataFrame:
    import polars as pl

    outs = ms.outputs()
    frames = []
    for s in systems:
        lines = _lines(outs[s])
        _check_count(outs[s], lines.len(), n_source, ms.source, "D828")
        frames.append(pl.DataFrame({"system": [s] * n_source, "line_id": list(range(n_source)), HYPOTHESIS: lines},
                                   schema={"system": pl.String, "line_id": pl.Int64, HYPOTHESIS: pl.String}))
    return pl.concat(frames) if frames else pl.DataFrame(schema={"system": pl.String, "line_id": pl.Int64,
                                                                 HYPOTHESIS: pl.String})


def read_mtme_sys_scores(path: str | os.PathLike[str], name: str, *, lp: str | None = None) -> dict[str, float | None]:
    """System-level scores of one human score NAME or metric METRIC-REF (``.sys.score``): system -> score."""
    ms = resolve_mtme(path, lp)
    files = {**ms.human_files("sys"), **ms.metric_files("sys")}
    f = _pick("system-level score", files, [name], ms)[name]
    lines = _lines(f)
    out: dict[str, float | None] = {}
    for i, line in enumerate(lines.to_list()):  # one line per system: small
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2:
            raise DDPDataError(f"{f}, line {i + 1}: expected 'SYSTEM SCORE', found {line[:60]!r}", code="D824")
        try:
            out[parts[0]] = None if parts[1] == "None" else float(parts[1])
        except ValueError:
            raise DDPDataError(f"{f}, line {i + 1}: score {parts[1][:30]!r} is neither a number nor None",
                               code="D826") from None
    return out


def read_mtme_sys_table(path: str | os.PathLike[str], names: Sequence[str], *, lp: str | None = None
                        ) -> tuple[dict[str, dict[str, float | None]], dict[str, str]]:
    """The ``.sys.score`` files of several human score NAMEs / metric METRIC-REFs: ``({name: {system: score}},
    {name: file})`` (``None`` kept for a missing score). D827 names a NAME without a system-level file."""
    ms = resolve_mtme(path, lp)
    files = _pick("system-level score", {**ms.human_files("sys"), **ms.metric_files("sys")}, list(names), ms)
    return ({n: read_mtme_sys_scores(path, n, lp=ms.lp) for n in names}, {n: str(f) for n, f in files.items()})


__all__ = ["ERROR_CODES", "HYPOTHESIS", "REFERENCE", "MtmeScores", "MtmeSet", "iter_mtme_source", "read_documents",
           "read_mtme_scores", "read_mtme_sys_scores", "read_mtme_sys_table", "read_seg_score_file", "resolve_mtme"]
