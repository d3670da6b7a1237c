"""Reader for the WMT24 General MT ESA human evaluation (waves 2 and 3) with error spans.

Folder layout of the WMT24 general MT release (as distributed by the organisers)::

    esa_generalMT2024_wave2.csv.gz, esa_generalMT2024_wave3.csv.gz   Appraise exports, no header
    annotator_mapping.json     {annotator name: [Appraise logins]}
    wmt24_en_source.txt        998 lines, line 0 is the canary
    wmt24_en.docs              998 lines "domain<TAB>doc_id"
    wmt24_system_outputs_en-cs_en-hi_en-ja_en-zh.tar.xz   <lp>/<system>.txt, <lp>/<lp>.refA.txt

:func:`read_wmt24_esa` returns the statistics long table (one row per annotation)::

    document_id   str    WMT24 document id
    segment_id    int    0-based position of the segment within its document (the key convention of
                         ``ddp profile --reader wmt24``, :mod:`ddpcore.io.readers`: a profile joins on
                         ``document_id, segment_id`` with no glue)
    line_id       int    line in the 998-line source/system files (line 0 = canary, never scored)
    system        str    system name ("refA" = human reference)
    annotator     str    person from annotator_mapping.json (the login where unmapped)
    condition     str    "ESA"
    score         f64    ESA score 0-100
    domain        str    literary | news | social | speech
    lp            str    language pair, e.g. "en-cs"
    wave          i64    2 or 3
    login         str    Appraise account
    error_spans   list[struct{span_start: i64, span_end: i64, severity: str}]
                         half-open code-point offsets into ``target_text``. The export counts
                         UTF-16 code units (Appraise runs in a browser: an emoji is 2 units) with
                         an inclusive end (both checked against the texts); converted with
                         :func:`ddpcore.io.appraise.utf16_span_to_codepoints`. Omission markers
                         ("missing") have null offsets
    target_text   str    system output line (null with ``with_text=False``)
    source_text   str    English source line (null with ``with_text=False``)
    time_start, time_end  f64  unix seconds

Filtering follows the organisers' description in the WMT24 repo (``humeval/tools.py``
``load_data``): quality-control rows (``tgt_type != "TGT"``), tutorial documents and document
ids containing ``#incomplete``, ``#dup`` or ``#bad`` are dropped; when one login scored the same
(system, document, line) twice, the later ``time_end`` wins. ``line_id`` must point at a line of
the stated document (checked; a mismatch raises ``[D164]``).

Everything is decompressed in memory (:mod:`gzip`, :mod:`tarfile`); nothing is written.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import tarfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import DDPDataError, DDPUsageError
from .appraise import parse_error_spans

if TYPE_CHECKING:
    import polars as pl

WAVE_FILES = {2: "esa_generalMT2024_wave2.csv.gz", 3: "esa_generalMT2024_wave3.csv.gz"}
OUTPUTS_TAR = "wmt24_system_outputs_en-cs_en-hi_en-ja_en-zh.tar.xz"
LANG3 = {"eng": "en", "ces": "cs", "hin": "hi", "zho": "zh", "jpn": "ja", "rus": "ru", "ukr": "uk",
         "deu": "de", "isl": "is", "spa": "es"}
_COLUMNS = ("login", "system", "line_id", "tgt_type", "src_lang3", "tgt_lang3", "score", "document_id",
            "unused_flag", "error_spans", "time_start", "time_end")
_DROP_DOC_MARKERS = ("#incomplete", "#dup", "#bad", "tutorial")


def _folder(path: str | Path) -> Path:
    folder = Path(path)
    if not folder.is_dir():
        raise DDPDataError(
            f"{folder}: WMT24 data folder not found; pass the folder holding {WAVE_FILES[2]} "
            "(the folder of the WMT24 general MT release)", code="D160")
    return folder


def _spans(raw: str, where: str, text: str) -> list[dict[str, Any]]:
    try:
        spans = parse_error_spans(raw, where=where, text=text)
    except DDPDataError as exc:
        raise DDPDataError(str(exc).split("] ", 1)[-1], code="D163") from None
    return [{k: s[k] for k in ("span_start", "span_end", "severity")} for s in spans]


def read_texts(path: str | Path, lps: Sequence[str] | None = None) -> dict[str, dict[str, list[str]]]:
    """System outputs from the tar: ``{lp: {system: [998 lines]}}`` (the reference is ``refA``)."""
    tar_path = _folder(path) / OUTPUTS_TAR
    if not tar_path.exists():
        raise DDPDataError(f"{tar_path}: system-output archive not found", code="D161")
    out: dict[str, dict[str, list[str]]] = {}
    try:
        with tarfile.open(tar_path, mode="r:xz") as tar:
            for member in tar:
                if not member.isfile() or not member.name.endswith(".txt"):
                    continue
                lp, fname = member.name.split("/")[-2:]
                if lps is not None and lp not in lps:
                    continue
                system = "refA" if fname == f"{lp}.refA.txt" else fname[: -len(".txt")]
                fh = tar.extractfile(member)
                assert fh is not None
                out.setdefault(lp, {})[system] = fh.read().decode("utf-8").split("\n")
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise DDPDataError(f"{tar_path}: cannot read the xz tar archive ({exc})", code="D161") from None
    return out


def _positions(doc_ids: Sequence[str]) -> list[int]:
    """0-based position of each line within its document (the ``.docs`` lines; the canary line
    0 is its own document), as :func:`ddpcore.io.readers.iter_aligned_lines` numbers segments."""
    import polars as pl

    return pl.DataFrame({"d": list(doc_ids)}).select(pl.int_range(pl.len()).over("d").alias("p"))["p"].to_list()


def _csv_records(text: str, name: str, columns: Sequence[str], code: str) -> Iterator[tuple[int, dict[str, str]]]:
    """``(row number, row)`` of the header-less CSV ``text``, each row a dict of ``columns``
    (numbers 1-based); a row with another number of fields is ``code`` naming ``name`` and the row."""
    for rowno, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if len(row) != len(columns):
            raise DDPDataError(f"{name}: row {rowno}: expected {len(columns)} fields, got {len(row)}", code=code)
        yield rowno, dict(zip(columns, row))


def _schema() -> dict[str, Any]:
    import polars as pl

    return {
        "document_id": pl.Utf8, "segment_id": pl.Int64, "line_id": pl.Int64, "system": pl.Utf8, "annotator": pl.Utf8,
        "condition": pl.Utf8, "score": pl.Float64, "domain": pl.Utf8, "lp": pl.Utf8, "wave": pl.Int64,
        "login": pl.Utf8,
        "error_spans": pl.List(pl.Struct({"span_start": pl.Int64, "span_end": pl.Int64, "severity": pl.Utf8})),
        "target_text": pl.Utf8, "source_text": pl.Utf8, "time_start": pl.Float64, "time_end": pl.Float64,
    }


def read_wmt24_esa(
    path: str | Path,
    *,
    waves: Sequence[int] = (2, 3),
    lps: Sequence[str] | None = None,
    with_text: bool = True,
    absent_lp: Literal["empty", "raise"] = "empty",
) -> pl.DataFrame:
    """Read the WMT24 ESA waves into the statistics long table.

    Parameters
    ----------
    path : the ``wmt24-genmt`` folder
    waves : which waves to read (2 and/or 3)
    lps : keep only these language pairs (e.g. ``["en-ja"]``); default all
    absent_lp : a pair of ``lps`` the waves do not have: ``"empty"`` (no rows for it), or ``"raise"``: D821 naming
        the pairs they have (``--lp`` of the score commands: a misspelt pair is not "no rows", nor dropped in silence)
    with_text : attach ``target_text``/``source_text`` (needed for errors per 1,000 characters
        and span positions). The outputs archive is read either way: the Appraise span offsets
        count UTF-16 code units and are converted to code points against the target text.

    Returns
    -------
    polars.DataFrame, one row per annotation, columns as in the module docstring, sorted by
    lp, system, line_id.
    """
    import polars as pl

    folder = _folder(path)
    bad = [w for w in waves if w not in WAVE_FILES]
    if bad:
        raise DDPUsageError(f"unknown WMT24 wave(s) {bad}; available: 2, 3", code="D165")
    try:
        mapping = json.loads((folder / "annotator_mapping.json").read_text("utf-8"))
        docs = [line.split("\t") for line in (folder / "wmt24_en.docs").read_text("utf-8").split("\n") if line]
        sources = (folder / "wmt24_en_source.txt").read_text("utf-8").split("\n")
    except FileNotFoundError as exc:
        raise DDPDataError(f"{exc.filename}: missing from the WMT24 folder", code="D161") from None
    login_to_person = {login: person for person, logins in mapping.items() for login in logins}
    position = _positions([d[1] if len(d) > 1 else "" for d in docs])
    rows: list[dict[str, Any]] = []
    present: set[str] = set()  # the language pairs of the waves read, before ``lps`` keeps some
    for wave in waves:
        fname = WAVE_FILES[wave]
        try:
            text = gzip.decompress((folder / fname).read_bytes()).decode("utf-8")
        except FileNotFoundError:
            raise DDPDataError(f"{folder / fname}: wave file not found", code="D161") from None
        except (OSError, EOFError) as exc:
            raise DDPDataError(f"{folder / fname}: not a valid gzip file ({exc})", code="D161") from None
        latest: dict[tuple[str, str, str, int, str], dict[str, Any]] = {}
        for rowno, rec in _csv_records(text, fname, _COLUMNS, "D163"):
            doc = rec["document_id"]
            if rec["tgt_type"] != "TGT" or "tutorial" in rec["system"] or any(m in doc for m in _DROP_DOC_MARKERS):
                continue
            lp = f"{LANG3.get(rec['src_lang3'], rec['src_lang3'])}-{LANG3.get(rec['tgt_lang3'], rec['tgt_lang3'])}"
            present.add(lp)
            if lps is not None and lp not in lps:
                continue
            line = int(rec["line_id"])
            if not 0 < line < len(docs) or docs[line][1] != doc:
                raise DDPDataError(
                    f"{fname}: row {rowno}, column 'line_id': line {line} is not in document {doc}", code="D164")
            entry = {
                "document_id": doc, "segment_id": position[line], "line_id": line, "system": rec["system"],
                "annotator": login_to_person.get(rec["login"], rec["login"]), "condition": "ESA",
                "score": float(rec["score"]), "domain": docs[line][0], "lp": lp, "wave": wave,
                "login": rec["login"],
                "error_spans": (rec["error_spans"], f"{fname}, row {rowno}, column 'error_spans'"),
                "target_text": None, "source_text": sources[line] if with_text else None,
                "time_start": float(rec["time_start"]), "time_end": float(rec["time_end"]),
            }
            key = (rec["login"], rec["system"], doc, line, lp)
            prev = latest.get(key)
            if prev is None or entry["time_end"] >= prev["time_end"]:
                latest[key] = entry
        rows.extend(latest.values())
    absent = [lp for lp in dict.fromkeys(lps or ()) if lp not in present]
    if absent and absent_lp == "raise":
        raise DDPDataError(f"{folder}: no language pair {', '.join(absent)} in wave(s) {', '.join(map(str, waves))} "
                           f"(has {', '.join(sorted(present)) or 'none'}); choose --lp from those", code="D821")
    # the span offsets are UTF-16 based (Appraise): the target texts are needed to convert them
    texts = read_texts(folder, sorted({r["lp"] for r in rows})) if rows else {}
    for r in rows:
        try:
            target = texts[r["lp"]][r["system"]][r["line_id"]]
        except (KeyError, IndexError):
            raise DDPDataError(
                f"{folder / OUTPUTS_TAR}: no output for system {r['system']} ({r['lp']}), line {r['line_id']}",
                code="D162") from None
        r["error_spans"] = _spans(*r["error_spans"], text=target)
        r["target_text"] = target if with_text else None
    df = pl.DataFrame(rows, schema=_schema())
    return df.sort("lp", "system", "line_id", "annotator")
