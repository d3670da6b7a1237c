"""Reader for the ESA paper data: WMT23 English→German with repeated annotation.

Folder layout of the ESA WMT23 en-de release (as distributed by its authors)::

    errorspanannotation_wmt23_en-de_data.tar.xz   raw Appraise exports + batch files + WMT23 texts
    esa_wmt23_en-de_scores_wide.tsv               one row per (segment, system), one column per protocol

:func:`read_esa_wmt23` returns the statistics long table (one row per annotation)::

    document_id   str    WMT23 document id, e.g. "aj-english.33941"
    segment_id    int    0-based line in the WMT23 en-de test set (557 lines)
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
``itemID`` is mapped to the WMT23 line through the batch file (``items[]._item`` =
``"system | line | doc"``); when one login scored an item twice the later ``end_time`` wins;
when two logins scored the same item the later row in the export wins (the repo's behaviour,
which produced the ``.seg.score`` files). The campaign rc5 document
``elitr_minuting-19#GPT4-5shot`` was split between two accounts with overlapping item ids: the
account ending in ``07`` scored its items 90 and 91 as lines 398 and 399.

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

if TYPE_CHECKING:
    import polars as pl

TAR_NAME = "errorspanannotation_wmt23_en-de_data.tar.xz"
WIDE_NAME = "esa_wmt23_en-de_scores_wide.tsv"
_CAMPAIGN = "data/campaign-ruction-rc5/"
_MTME = "data/mt-metrics-eval-v2/wmt23/"

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
    return [tuple(line.split("\t")[:2]) for line in raw.decode("utf-8").splitlines()]  # type: ignore[misc]


def _raw_protocol(protocol: str, members: dict[str, bytes], docs: list[tuple[str, str]],
                  annotators: dict[tuple[str, str], str]) -> list[dict[str, Any]]:
    export, batch, label = RAW_PROTOCOLS[protocol]
    items = _batch_items(members[_CAMPAIGN + "data/" + batch], batch)
    text = members[_CAMPAIGN + export].decode("utf-8")
    chosen: dict[tuple[int, str], dict[str, Any]] = {}
    for rowno, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if len(row) != len(_EXPORT_COLUMNS):
            raise DDPDataError(f"{export}: row {rowno}: expected {len(_EXPORT_COLUMNS)} fields, got {len(row)}",
                               code="D153")
        rec = dict(zip(_EXPORT_COLUMNS, row))
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
        if docs[line][1] != document_id:
            raise DDPDataError(
                f"{export}: row {rowno}: line {line} belongs to document {docs[line][1]}, not {document_id}",
                code="D154")
        where = f"{export}, row {rowno}, column 'error_spans'"
        spans = parse_error_spans(rec["error_spans"], where=where, text=target)
        entry = {
            "document_id": document_id,
            "segment_id": line,
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
        "document_id": pl.Utf8, "segment_id": pl.Int64, "system": pl.Utf8, "annotator": pl.Utf8,
        "condition": pl.Utf8, "score": pl.Float64, "domain": pl.Utf8, "login": pl.Utf8,
        "error_spans": pl.List(pl.Struct({"span_start": pl.Int64, "span_end": pl.Int64, "severity": pl.Utf8})),
        "target_text": pl.Utf8, "time_start": pl.Float64, "time_end": pl.Float64,
    }


def read_esa_wmt23_wide(path: str | Path, conditions: Sequence[str] | None = None) -> pl.DataFrame:
    """Scores from ``esa_wmt23_en-de_scores_wide.tsv`` as a long table (no annotator, no spans).

    Parameters
    ----------
    path : folder holding the TSV (or the TSV itself)
    conditions : protocol columns to keep (default all of :data:`WIDE_PROTOCOLS`)

    Returns one row per (segment, system, protocol) with a score; empty cells are dropped.
    """
    import polars as pl

    p = Path(path)
    tsv = p if p.is_file() else _folder(p) / WIDE_NAME
    if not tsv.exists():
        raise DDPDataError(f"{tsv}: wide score table not found", code="D151")
    wide = pl.read_csv(tsv, separator="\t", infer_schema_length=0)
    wanted = list(conditions) if conditions is not None else [c for c in WIDE_PROTOCOLS if c in wide.columns]
    for cond in wanted:
        if cond not in wide.columns:
            raise DDPUsageError(
                f"{tsv}: no column {cond!r}; available protocols: {', '.join(c for c in wide.columns[4:])}",
                code="D155")
    long = wide.unpivot(index=["seg_idx", "domain", "doc", "system"], on=wanted,
                        variable_name="condition", value_name="score")
    long = long.filter(pl.col("score").is_not_null() & (pl.col("score") != ""))
    return long.select(
        pl.col("doc").alias("document_id"),
        pl.col("seg_idx").cast(pl.Int64).alias("segment_id"),
        pl.col("system"),
        pl.lit(None, dtype=pl.Utf8).alias("annotator"),
        pl.col("condition"),
        pl.col("score").cast(pl.Float64),
        pl.col("domain"),
    ).sort("condition", "system", "segment_id")


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
    sorted by condition, system, segment_id.
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
    frames = []
    if raw:
        names = {_MTME + "documents/en-de.docs", _CAMPAIGN + "Annotators_mapping.csv"}
        for c in raw:
            export, batch, _ = RAW_PROTOCOLS[c]
            names |= {_CAMPAIGN + export, _CAMPAIGN + "data/" + batch}
        members = _read_members(folder / TAR_NAME, names)
        docs = _documents(members[_MTME + "documents/en-de.docs"])
        annotators = _annotator_map(members[_CAMPAIGN + "Annotators_mapping.csv"])
        rows: list[dict[str, Any]] = []
        for c in raw:
            rows.extend(_raw_protocol(c, members, docs, annotators))
        frames.append(pl.DataFrame(rows, schema=_schema()))
    wide_only = [c for c in conditions if c not in RAW_PROTOCOLS]
    if wide_only:
        wide = read_esa_wmt23_wide(folder, wide_only)
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
            .sort("_o", "system", "segment_id").drop("_o"))
