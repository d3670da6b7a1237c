"""Reader for the ESA paper data: WMT23 English→German with repeated annotation.

Folder layout of the ESA WMT23 en-de release (as distributed by its authors)::

    errorspanannotation_wmt23_en-de_data.tar.xz   raw Appraise exports + batch files + WMT23 texts
    esa_wmt23_en-de_scores_wide.tsv               one row per (segment, system), one column per protocol

:func:`read_esa_wmt23` returns the statistics long table (one row per annotation)::

    document_id   str    WMT23 document id, e.g. "aj-english.33941"
    segment_id    int    0-based position of the segment within its document (the key convention
                         of ``ddp profile`` and :mod:`ddpcore.io.readers`: a profile of the WMT23
                         source, ``ddp profile sources/en-de.txt --reader wmt24 --docs
                         documents/en-de.docs``, joins on ``document_id, segment_id`` with no glue)
    line_id       int    0-based line in the WMT23 en-de test set (557 lines; the line of the
                         source, reference, system-output and ``.docs`` files)
    system        str    system name ("refA" is the reference translation)
    annotator     str    person id from Annotators_mapping.csv (login where unmapped; null for
                         protocols read from the wide TSV, which carries no annotator)
    condition     str    protocol: ESA-1, ESA-2, ESA-IAA, MQM-1, MQM-IAA (raw), any wide-TSV column
    score         f64    ESA 0-100 slider; MQM = -(1 minor + 5 major + 25 critical), -0.1 punctuation
    domain        str    news | social | speech | user_review
    login         str    Appraise account
    error_spans   list[struct{span_start: i64, span_end: i64, severity: str}]
                         half-open code-point offsets into ``target_text``. Appraise stores
                         UTF-16 code-unit offsets with an inclusive end (checked against the
                         texts), converted by :func:`utf16_span_to_codepoints`; omissions
                         ("missing") have null offsets
    target_text   str    the translation the annotator saw (Appraise ``targetText``)
    time_start, time_end  f64  unix seconds

Rules (re-implemented from the description of the repo's ``scripts/ESA/utils.py``):
quality-control rows (``is_bad != TGT``), tutorial and ``#duplicate`` documents are dropped;
``itemID`` is mapped to the WMT23 line (``line_id``) through the batch file (``items[]._item`` =
``"system | line | doc"``); when one login scored an item twice the later ``end_time`` wins;
when two logins scored the same item the later row in the export wins (the repo's behaviour,
which produced the ``.seg.score`` files). The campaign rc5 document
``elitr_minuting-19#GPT4-5shot`` was split between two accounts with overlapping item ids: the
account ending in ``07`` scored its items 90 and 91 as lines 398 and 399. The document of each line,
and so ``segment_id``, comes from the test set's ``documents/en-de.docs`` inside the archive (one
``domain<TAB>doc_id`` line per test-set line); the wide TSV's ``seg_idx`` is that same line number
(``line_id``) and its ``doc`` column is checked against the ``.docs`` file ([D186] on a mismatch).

The reader decompresses in memory with :mod:`tarfile` and never writes into the data folder.
"""
from __future__ import annotations

import csv
import io
import json
import tarfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DDPDataError, DDPUsageError
from .appraise import parse_error_spans, utf16_span_to_codepoints  # noqa: F401  (public here since 0.x)
from .wmt import _csv_records, _positions

if TYPE_CHECKING:
    import polars as pl

TAR_NAME = "errorspanannotation_wmt23_en-de_data.tar.xz"
WIDE_NAME = "esa_wmt23_en-de_scores_wide.tsv"
_CAMPAIGN = "data/campaign-ruction-rc5/"
_MTME = "data/mt-metrics-eval-v2/wmt23/"
_DOCS = _MTME + "documents/en-de.docs"

#: protocol -> (Appraise export, batch file, Annotators_mapping protocol label or None)
RAW_PROTOCOLS: dict[str, tuple[str, str, str | None]] = {
    "ESA-1": ("240315rc5ESA.scores.csv", "batches_wmt23_en-de_esa.json", "ESA"),
    "ESA-2": ("240520rc6ESA.scores.csv", "batches_wmt23_en-de_esa.json", "ESA2"),
    "ESA-IAA": ("240521rc6ESA.scores.csv", "batches_wmt23_en-de_esa.json", None),
    "MQM-1": ("240315rc5MQM.scores.csv", "batches_wmt23_en-de_mqm.json", "MQM"),
    "MQM-IAA": ("240521rc6MQM.scores.csv", "batches_wmt23_en-de_mqm.json", None),
}

#: protocols only available as scores in the wide TSV (no annotator, no spans): the GEMBA batch
#: file that maps their item ids to lines is missing from the snapshot.
WIDE_PROTOCOLS = (
    "ESA-1", "ESA-2", "ESA-IAA", "MQM-1", "MQM-IAA", "ESAAI-1", "ESAAI-2", "ESAAI-IAA",
    "LLM", "WMT-MQM", "WMT-DASQM",
)

_EXPORT_COLUMNS = (
    "login", "system", "item_id", "item_type", "source_lang", "target_lang", "score",
    "appraise_document", "unused_flag", "error_spans", "time_start", "time_end",
)
_MQM_WEIGHTS = {"minor": -1.0, "major": -5.0, "critical": -25.0, "undecided": 0.0}
_BUG_DOCUMENT = "elitr_minuting-19#GPT4-5shot"


def _folder(path: str | Path) -> Path:
    folder = Path(path)
    if folder.is_file() and folder.name == TAR_NAME:
        folder = folder.parent
    if not folder.is_dir():
        raise DDPDataError(
            f"{folder}: ESA WMT23 data folder not found; pass the folder holding {TAR_NAME} "
            f"and {WIDE_NAME} (the ESA WMT23 en-de release folder)",
            code="D150",
        )
    return folder


def _read_members(tar_path: Path, names: Iterable[str]) -> dict[str, bytes]:
    """Stream ``tar_path`` once and return the bytes of the wanted members."""
    wanted = set(names)
    out: dict[str, bytes] = {}
    if not tar_path.exists():
        raise DDPDataError(f"{tar_path}: archive not found; the ESA raw exports live there", code="D151")
    try:
        with tarfile.open(tar_path, mode="r:xz") as tar:
            for member in tar:
                if member.name in wanted and member.isfile():
                    fh = tar.extractfile(member)
                    assert fh is not None
                    out[member.name] = fh.read()
                    if len(out) == len(wanted):
                        break
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise DDPDataError(f"{tar_path}: cannot read the xz tar archive ({exc})", code="D151") from None
    missing = sorted(wanted - set(out))
    if missing:
        raise DDPDataError(f"{tar_path}: archive lacks {', '.join(missing)}", code="D152")
    return out


def _mqm_score(spans: list[dict[str, Any]]) -> float:
    score = 0.0
    for span in spans:
        etype = span.get("error_type")
        if etype is not None and "Punctuation" in str(etype):
            score += -0.1
        else:
            score += _MQM_WEIGHTS.get(span["severity"], 0.0)
    return score


def _batch_items(raw: bytes, name: str) -> dict[str, tuple[int, str]]:
    """Map ``"<itemID>#<documentID>"`` -> (WMT23 line, targetText) from an Appraise batch file."""
    try:
        batches = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DDPDataError(f"{name}: invalid JSON ({exc.msg})", code="D153") from None
    mapping: dict[str, tuple[int, str]] = {}
    for batch in batches:
        for item in batch["items"]:
            doc = item["documentID"]
            if "tutorial" in doc:
                continue
            parts = item["_item"].split(" | ")
            try:
                line = int(parts[1])
            except (IndexError, ValueError):
                continue  # quality-control items carry no WMT line
            key = f"{item['itemID']}#{doc}"
            if doc == _BUG_DOCUMENT and line in (398, 399):
                key = f"bug{line}"
            mapping[key] = (line, item["targetText"])
    return mapping


def _annotator_map(raw: bytes) -> dict[tuple[str, str], str]:
    """(protocol label, login) -> annotator id from Annotators_mapping.csv."""
    text = raw.decode("utf-8-sig")
    out: dict[tuple[str, str], str] = {}
    for row in csv.reader(io.StringIO(text)):
        if len(row) >= 3 and row[0] and row[0] != "AnnotatorID":
            out[(row[1], row[2])] = row[0]
    return out


def _documents(raw: bytes) -> list[tuple[str, str]]:
    """``(domain, doc_id)`` of each WMT23 line, from the ``.docs`` file."""
    return [tuple(line.split("\t")[:2]) for line in raw.decode("utf-8").splitlines()]  # type: ignore[misc]


def _docs_of(folder: Path) -> list[tuple[str, str]]:
    """The ``.docs`` lines of the WMT23 test set, read from the archive in ``folder``."""
    return _documents(_read_members(folder / TAR_NAME, [_DOCS])[_DOCS])


def _raw_protocol(protocol: str, members: dict[str, bytes], docs: list[tuple[str, str]], position: list[int],
                  annotators: dict[tuple[str, str], str]) -> list[dict[str, Any]]:
    """Rows of one raw protocol; ``position[line]`` is the line's 0-based position in its document."""
    export, batch, label = RAW_PROTOCOLS[protocol]
    items = _batch_items(members[_CAMPAIGN + "data/" + batch], batch)
    text = members[_CAMPAIGN + export].decode("utf-8")
    chosen: dict[tuple[int, str], dict[str, Any]] = {}
    for rowno, rec in _csv_records(text, export, _EXPORT_COLUMNS, "D153"):
        adoc = rec["appraise_document"]
        if rec["item_type"] != "TGT" or "tutorial" in adoc or "#duplicate" in adoc:
            continue
        key = f"{rec['item_id']}#{adoc}"
        if adoc == _BUG_DOCUMENT and rec["login"].endswith("07") and rec["item_id"] in ("90", "91"):
            key = "bug398" if rec["item_id"] == "90" else "bug399"
        if key not in items:
            raise DDPDataError(f"{export}: row {rowno}: item {key} is not in {batch}", code="D154")
        line, target = items[key]
        document_id, system = adoc.split("#")[0], adoc.split("#")[1]
        if not 0 <= line < len(docs) or docs[line][1] != document_id:
            raise DDPDataError(
                f"{export}: row {rowno}: line {line} belongs to document "
                f"{docs[line][1] if 0 <= line < len(docs) else '(none: past the end of en-de.docs)'}, not {document_id}",
                code="D154")
        where = f"{export}, row {rowno}, column 'error_spans'"
        spans = parse_error_spans(rec["error_spans"], where=where, text=target)
        entry = {
            "document_id": document_id,
            "segment_id": position[line],
            "line_id": line,
            "system": system,
            "annotator": annotators.get((label, rec["login"]), rec["login"]) if label else rec["login"],
            "condition": protocol,
            "score": _mqm_score(spans) if protocol.startswith("MQM") else float(rec["score"]),
            "domain": docs[line][0],
            "login": rec["login"],
            "error_spans": [{k: s[k] for k in ("span_start", "span_end", "severity")} for s in spans],
            "target_text": target,
            "time_start": float(rec["time_start"]),
            "time_end": float(rec["time_end"]),
        }
        ikey = (line, system)
        prev = chosen.get(ikey)
        if prev is not None and prev["login"] == entry["login"] and prev["time_end"] > entry["time_end"]:
            continue  # the same person re-scored: keep the newer score
        chosen[ikey] = entry
    return list(chosen.values())


def _schema() -> dict[str, Any]:
    import polars as pl

    return {
        "document_id": pl.Utf8, "segment_id": pl.Int64, "line_id": pl.Int64, "system": pl.Utf8, "annotator": pl.Utf8,
        "condition": pl.Utf8, "score": pl.Float64, "domain": pl.Utf8, "login": pl.Utf8,
        "error_spans": pl.List(pl.Struct({"span_start": pl.Int64, "span_end": pl.Int64, "severity": pl.Utf8})),
        "target_text": pl.Utf8, "time_start": pl.Float64, "time_end": pl.Float64,
    }


def _keys(docs: list[tuple[str, str]]) -> pl.DataFrame:
    """One row per WMT23 line: ``line_id``, ``__doc``, ``__domain``, ``segment_id`` (position in the document)."""
    import polars as pl

    return pl.DataFrame({
        "line_id": list(range(len(docs))), "__doc": [d[1] if len(d) > 1 else "" for d in docs],
        "__domain": [d[0] for d in docs], "segment_id": _positions([d[1] if len(d) > 1 else "" for d in docs]),
    }, schema={"line_id": pl.Int64, "__doc": pl.Utf8, "__domain": pl.Utf8, "segment_id": pl.Int64})


def _wide(tsv: Path, conditions: Sequence[str] | None, docs: list[tuple[str, str]]) -> pl.DataFrame:
    import polars as pl

    if not tsv.exists():
        raise DDPDataError(f"{tsv}: wide score table not found", code="D151")
    wide = pl.read_csv(tsv, separator="\t", infer_schema_length=0)
    wanted = list(conditions) if conditions is not None else [c for c in WIDE_PROTOCOLS if c in wide.columns]
    for cond in wanted:
        if cond not in wide.columns:
            raise DDPUsageError(
                f"{tsv}: no column {cond!r}; available protocols: {', '.join(c for c in wide.columns[4:])}",
                code="D155")
    # seg_idx is the WMT23 line: its document and position come from en-de.docs (checked against 'doc')
    keyed = wide.with_row_index("__row").with_columns(pl.col("seg_idx").cast(pl.Int64, strict=False).alias("line_id"))
    keyed = keyed.join(_keys(docs), on="line_id", how="left", maintain_order="left")
    bad = keyed.filter(pl.col("__doc").is_null() | (pl.col("__doc") != pl.col("doc")))
    if bad.height:
        r = bad.row(0, named=True)
        at = f"{tsv}, line {int(r['__row']) + 2}"  # 1-based file line, after the header
        if r["__doc"] is None:
            raise DDPDataError(f"{at}, column 'seg_idx': {r['seg_idx']!r} is not a line of the WMT23 test set "
                               f"(en-de.docs in {TAR_NAME} has {len(docs)} lines); use the TSV of this release",
                               code="D186")
        raise DDPDataError(f"{at}, column 'doc': line {r['line_id']} belongs to document {r['__doc']} in en-de.docs, "
                           f"not {r['doc']}; use the TSV of this release", code="D186")
    long = keyed.unpivot(index=["line_id", "segment_id", "domain", "doc", "system"], on=wanted,
                         variable_name="condition", value_name="score")
    long = long.filter(pl.col("score").is_not_null() & (pl.col("score") != ""))
    return long.select(
        pl.col("doc").alias("document_id"),
        pl.col("segment_id"),
        pl.col("line_id"),
        pl.col("system"),
        pl.lit(None, dtype=pl.Utf8).alias("annotator"),
        pl.col("condition"),
        pl.col("score").cast(pl.Float64),
        pl.col("domain"),
    ).sort("condition", "system", "line_id")


def read_esa_wmt23_wide(path: str | Path, conditions: Sequence[str] | None = None) -> pl.DataFrame:
    """Scores from ``esa_wmt23_en-de_scores_wide.tsv`` as a long table (no annotator, no spans).

    Parameters
    ----------
    path : folder holding the TSV and the archive (or the TSV itself, with the archive beside it:
        its ``documents/en-de.docs`` gives each line's document and position)
    conditions : protocol columns to keep (default all of :data:`WIDE_PROTOCOLS`)

    Returns one row per (segment, system, protocol) with a score, empty cells dropped; columns
    ``document_id``, ``segment_id`` (position within the document), ``line_id`` (the TSV's
    ``seg_idx`` = WMT23 line), ``system``, ``annotator`` (null), ``condition``, ``score``,
    ``domain``; sorted by condition, system, line_id.
    """
    p = Path(path)
    if p.is_file():
        tsv, folder = p, p.parent
    else:
        folder = _folder(p)
        tsv = folder / WIDE_NAME
    if not tsv.exists():
        raise DDPDataError(f"{tsv}: wide score table not found", code="D151")
    return _wide(tsv, conditions, _docs_of(folder))


def read_esa_wmt23(
    path: str | Path,
    *,
    conditions: Sequence[str] = ("ESA-1", "ESA-2"),
) -> pl.DataFrame:
    """Read ESA WMT23 en-de annotations into the statistics long table.

    Parameters
    ----------
    path : the ``esa-wmt23-ende`` folder
    conditions : protocols to read. ESA-1, ESA-2, ESA-IAA, MQM-1 and MQM-IAA come from the raw
        Appraise exports (annotator, error spans, target text, timings); any other
        :data:`WIDE_PROTOCOLS` entry comes from the wide TSV with null annotator and spans.

    Returns
    -------
    polars.DataFrame with the columns listed in the module docstring, one row per annotation,
    keyed by ``document_id`` + ``segment_id`` (position within the document), with the WMT23
    line as ``line_id``; sorted by condition (as requested), system, line_id.
    """
    import polars as pl

    folder = _folder(path)
    unknown = [c for c in conditions if c not in RAW_PROTOCOLS and c not in WIDE_PROTOCOLS]
    if unknown:
        raise DDPUsageError(
            f"unknown ESA WMT23 condition(s) {', '.join(unknown)}; choose from "
            f"{', '.join(dict.fromkeys([*RAW_PROTOCOLS, *WIDE_PROTOCOLS]))}",
            code="D155")
    raw = [c for c in conditions if c in RAW_PROTOCOLS]
    names = {_DOCS}
    if raw:
        names.add(_CAMPAIGN + "Annotators_mapping.csv")
        for c in raw:
            export, batch, _ = RAW_PROTOCOLS[c]
            names |= {_CAMPAIGN + export, _CAMPAIGN + "data/" + batch}
    members = _read_members(folder / TAR_NAME, names)
    docs = _documents(members[_DOCS])
    frames = []
    if raw:
        position = _positions([d[1] if len(d) > 1 else "" for d in docs])
        annotators = _annotator_map(members[_CAMPAIGN + "Annotators_mapping.csv"])
        rows: list[dict[str, Any]] = []
        for c in raw:
            rows.extend(_raw_protocol(c, members, docs, position, annotators))
        frames.append(pl.DataFrame(rows, schema=_schema()))
    wide_only = [c for c in conditions if c not in RAW_PROTOCOLS]
    if wide_only:
        wide = _wide(folder / WIDE_NAME, wide_only, docs)
        frames.append(wide.with_columns(
            pl.lit(None, dtype=pl.Utf8).alias("login"),
            pl.lit(None, dtype=_schema()["error_spans"]).alias("error_spans"),
            pl.lit(None, dtype=pl.Utf8).alias("target_text"),
            pl.lit(None, dtype=pl.Float64).alias("time_start"),
            pl.lit(None, dtype=pl.Float64).alias("time_end"),
        ).select(list(_schema())))
    out = pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=_schema())
    order = {c: i for i, c in enumerate(conditions)}
    return (out.with_columns(pl.col("condition").replace_strict(order, return_dtype=pl.Int64).alias("_o"))
            .sort("_o", "system", "line_id").drop("_o"))
