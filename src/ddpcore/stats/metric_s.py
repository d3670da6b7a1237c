"""DiscoX Metric-S scores from judge item lists, and metric-human pairwise consistency.

Metric-S (DiscoX) scores a translation from an LLM judge's item lists: accuracy starts at 60,
fluency at 20, appropriateness at 20; each listed issue deducts points by its severity; each
dimension is clamped at 0; the total is their sum (0-100). Two deduction tables:

``mapping="code"`` (default) -- exactly the released evaluation code (DiscoX ``eval/eval_res.py``,
``calculate_score``): only the keys its judges emit are read (``问题严重程度`` for a severity,
``判断结果`` for a checkpoint verdict), and a label counts only when it is one of the strings below,
character for character (no trimming, no case folding):

=================  ============================================================  =========
dimension          label                                                         points
=================  ============================================================  =========
accuracy           整体无问题                                                        0
                   普通, Major                                                    -5
                   严重, Critical                                                 -10
                   非常严重, Extremely Critical                                   -50
                   anything else, or no ``问题严重程度`` (unknown)                  -5
checkpoint         错误 (failed rubric checkpoint, counts as accuracy)            -5
                   正确                                                            0
                   anything else, or no ``判断结果`` (unknown)                      0
fluency            有问题                                                          -2
                   无问题, 整体无问题                                                0
                   anything else (Minor, Major, 轻微 ... included; unknown)          0
appropriateness    有问题                                                          -5
                   无问题, 整体无问题                                                0
                   anything else (unknown)                                         0
=================  ============================================================  =========

``mapping="paper"`` -- the paper's severities (§3.4): minor 2, major 5, critical 10, extremely
critical 50, for an item of any dimension that carries a severity label (轻微 / Minor is minor;
普通 / Major is major). An item without one (有问题) takes its dimension's level from the
paper's Appendix E: fluency errors minor (2), appropriateness errors major (5). Failed
checkpoints are major (5); an unknown accuracy label (a bare 有问题 included) counts as major (5). Under ``paper``
labels are matched after trimming and case-folding, the severity is read from ``问题严重程度``
or ``severity`` and a checkpoint's verdict from ``判断结果``, ``result`` or ``verdict``.

Unknown labels are counted per row (``n_unknown_labels``) under both mappings.

Rows that cannot be scored are never given marks:

* ``instruction_following: false`` -- the output is not a translation: every score is 0
  (status ``instruction_following_failed``), as in the released code;
* ``judge_error`` set, a line that is not a JSON object, or an item list that is not a list of
  objects -- status ``error``, scores null, counted in ``n_errors`` (the released code turns a
  failed judge call into an empty list, i.e. full marks);
* a record with none of the four item lists (absent or null) is not a judge reply at all: a
  data error ``[D740]`` naming the record, never 100.

Consistency (DiscoX §4.2): both score sets are min-max normalised to [0, 1] with their scale
ranges; at segment level every pair of systems scored on the same item is compared; a
difference below ``tie_threshold`` (default 0.05) is a tie; a pair is consistent when both sides
prefer the same system or both are ties. At system level the same rule is applied to the
systems' mean scores.
"""
from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import warnings
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np

from ..errors import DDPDataError, DDPUsageError

Mapping = Literal["code", "paper"]
DIMENSIONS = ("accuracy", "fluency", "appropriateness")
START = {"accuracy": 60.0, "fluency": 20.0, "appropriateness": 20.0}
ITEM_KEYS = ("accuracy_items", "checkpoint_items", "fluency_items", "appropriateness_items")
SEVERITY_KEYS = ("问题严重程度", "severity")
VERDICT_KEYS = ("判断结果", "result", "verdict")

STATUS_OK, STATUS_IF_FAILED, STATUS_ERROR = "ok", "instruction_following_failed", "error"

# canonical severities
_NONE, _MINOR, _MAJOR, _CRITICAL, _EXTREME, _ISSUE = "none", "minor", "major", "critical", "extreme", "issue"
_LABELS = {
    "整体无问题": _NONE, "无问题": _NONE, "none": _NONE, "no issue": _NONE, "no issues": _NONE,
    "轻微": _MINOR, "次要": _MINOR, "minor": _MINOR,
    "普通": _MAJOR, "major": _MAJOR,
    "严重": _CRITICAL, "critical": _CRITICAL,
    "非常严重": _EXTREME, "extremely critical": _EXTREME,
    "有问题": _ISSUE, "issue": _ISSUE,
}
_VERDICTS = {"错误": "fail", "incorrect": "fail", "fail": "fail", "failed": "fail", "wrong": "fail",
             "正确": "pass", "correct": "pass", "pass": "pass", "passed": "pass"}
_PAPER = {_MINOR: 2.0, _MAJOR: 5.0, _CRITICAL: 10.0, _EXTREME: 50.0, _NONE: 0.0}
# mapping="code": the released tables, keyed by the exact label strings the released code
# accepts, read only from the keys it reads. (dimension -> (item key, {label: points}, default
# points of a label not in the table)). Points are deductions (positive numbers).
_CODE_KEY = {"accuracy": "问题严重程度", "checkpoint": "判断结果", "fluency": "问题严重程度",
             "appropriateness": "问题严重程度"}
_CODE_TABLE = {
    "accuracy": {"整体无问题": 0.0, "普通": 5.0, "Major": 5.0, "严重": 10.0, "Critical": 10.0,
                 "非常严重": 50.0, "Extremely Critical": 50.0},
    "checkpoint": {"错误": 5.0, "正确": 0.0},
    "fluency": {"无问题": 0.0, "整体无问题": 0.0, "有问题": 2.0},
    "appropriateness": {"无问题": 0.0, "整体无问题": 0.0, "有问题": 5.0},
}
_CODE_UNKNOWN = {"accuracy": 5.0, "checkpoint": 0.0, "fluency": 0.0, "appropriateness": 0.0}


@dataclasses.dataclass(frozen=True)
class MetricSRow:
    """One scored judgement (scores None for an error row)."""

    id: str
    accuracy: float | None
    fluency: float | None
    appropriateness: float | None
    total: float | None
    status: str
    n_unknown_labels: int = 0
    error: str | None = None
    #: item lists absent or null in a scored record (read as empty: full marks in that dimension)
    missing_lists: tuple[str, ...] = ()


def _label(item: dict[str, Any], keys: Sequence[str]) -> str | None:
    for k in keys:
        if k in item and item[k] is not None:
            return str(item[k]).strip().casefold()
    return None


def _code_deduction(dim: str, item: dict[str, Any]) -> tuple[float, bool]:
    """(points, unknown) under the released tables: exact string labels under the released key."""
    value = item.get(_CODE_KEY[dim])
    table = _CODE_TABLE[dim]
    if isinstance(value, str) and value in table:  # a non-string value is never a label
        return table[value], False
    return _CODE_UNKNOWN[dim], True


def _deduction(dim: str, item: dict[str, Any], mapping: str) -> tuple[float, bool]:
    """(points deducted, label unknown) for one item of ``dim``."""
    if mapping == "code":
        return _code_deduction(dim, item)
    if dim == "checkpoint":
        verdict = _VERDICTS.get(_label(item, VERDICT_KEYS) or "")
        if verdict is None:
            return 0.0, True  # unknown verdict counts as correct
        return (5.0 if verdict == "fail" else 0.0), False
    sev = _LABELS.get(_label(item, SEVERITY_KEYS) or "")
    if dim == "accuracy":
        if sev in _PAPER:
            return _PAPER[sev], False
        return 5.0, True  # no severity (unknown, or a bare 有问题): the paper gives accuracy no default level
    per_issue = 2.0 if dim == "fluency" else 5.0
    if sev is None:
        return 0.0, True  # unknown label deducts nothing
    if sev == _NONE:
        return 0.0, False
    if sev == _ISSUE:
        return per_issue, False
    return _PAPER[sev], False


def _no_lists_error(where: str, record: dict[str, Any]) -> DDPDataError:
    rid = f" (id {str(record['id'])[:80]!r})" if record.get("id") is not None else ""
    return DDPDataError(
        f"{where}{rid}: none of {', '.join(ITEM_KEYS)} is present: not a judge reply, and ddpcore never scores "
        "it as full marks; give the judge's item lists (an empty list where the judge listed no issue), or set "
        "judge_error on the record to count it as an error row", code="D740")


def score_judgement(record: Any, mapping: Mapping = "code", row_id: str | None = None,
                    where: str | None = None) -> MetricSRow:
    """Metric-S scores of one judgement record (a dict as parsed from one JSONL line).

    ``record`` holds ``accuracy_items``, ``checkpoint_items``, ``fluency_items``,
    ``appropriateness_items`` (lists of objects; one or more may be absent = empty, but not
    all four), optionally ``instruction_following`` and ``judge_error``. Anything else (not a
    dict, a list that is not a list of objects) gives an error row. A record with none of the
    four lists (absent or null) raises ``DDPDataError`` [D740] naming ``where`` (default
    "record ``row_id``"): the released code's failure mode scores such a reply 100.
    """
    rid = row_id if row_id is not None else str(record.get("id")) if isinstance(record, dict) and "id" in record else ""
    if not isinstance(record, dict):
        return MetricSRow(rid, None, None, None, None, STATUS_ERROR, error="judge reply is not a JSON object")
    if record.get("judge_error"):
        return MetricSRow(rid, None, None, None, None, STATUS_ERROR, error=f"judge_error: {record['judge_error']}"[:200])
    follows = record.get("instruction_following")
    if follows is False:
        return MetricSRow(rid, 0.0, 0.0, 0.0, 0.0, STATUS_IF_FAILED)
    if follows is not None and not isinstance(follows, bool):
        # "false" (a string), 0, or the judge's raw text ("是否存在问题：是") would otherwise be scored as a
        # translation that follows the instruction: full marks where the judge may have said it does not
        return MetricSRow(rid, None, None, None, None, STATUS_ERROR,
                          error=f"instruction_following is {str(follows)[:60]!r} ({type(follows).__name__}), not "
                                "true or false: cannot tell whether the output is a translation")
    if all(record.get(key) is None for key in ITEM_KEYS):
        raise _no_lists_error(where or f"record {rid or '?'}", record)
    scores = dict(START)
    unknown = 0
    for key in ITEM_KEYS:
        items = record.get(key, [])
        if items is None:
            items = []
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            return MetricSRow(rid, None, None, None, None, STATUS_ERROR,
                              error=f"{key} is not a list of objects (unparseable judge reply)")
        dim = key.removesuffix("_items")
        target = "accuracy" if dim == "checkpoint" else dim
        for item in items:
            pts, unk = _deduction(dim, item, mapping)
            scores[target] -= pts
            unknown += int(unk)
    acc, flu, app = (max(scores[d], 0.0) for d in DIMENSIONS)
    missing = tuple(key for key in ITEM_KEYS if record.get(key) is None)
    return MetricSRow(rid, acc, flu, app, acc + flu + app, STATUS_OK, n_unknown_labels=unknown,
                      missing_lists=missing)


def metric_s(records: Iterable[Any] | str | os.PathLike[str], mapping: Mapping = "code", *,
             source: str | None = None, line_numbers: Sequence[int] | None = None) -> list[MetricSRow]:
    """Metric-S rows for an iterable of judgement records (dicts; anything else = error row), one row
    per record in order, or for the path of a JSONL file of them (read by :func:`read_judgements_lines`,
    as ``ddp metric-s`` reads it: the same rows, errors naming the file's lines).

    Rows without an ``id`` get their 1-based position as id. See the module docstring for the
    deduction tables (``mapping="code"`` or ``"paper"``). ``source`` and ``line_numbers`` (the
    file line of each record, as from :func:`read_judgements_lines`) only name the record in a
    [D740] error, and the two records of a repeated ``id`` (D556: it would count twice in every mean).
    A table (polars/pandas frame) or a single record (a dict) is D920: iterating it would give one error
    row per column or key, not a score.
    """
    if mapping not in ("code", "paper"):
        raise DDPUsageError(f"mapping must be 'code' or 'paper', got {mapping!r} (--mapping)", code="D550")
    if isinstance(records, (str, os.PathLike)):  # a JSONL path (iterated, it gave one error row per character)
        source = source if source is not None else os.fspath(records)
        records, line_numbers = read_judgements_lines(os.fspath(records))
    elif isinstance(records, (dict, bytes)) or hasattr(records, "columns"):
        raise DDPUsageError(
            f"metric_s: records must be judge records (an iterable of dicts, e.g. frame.to_dicts() or "
            f"read_judgements(path)) or the path of a JSONL file, got {type(records).__name__}", code="D920")
    out = []
    seen: dict[str, str] = {}  # an id given by the records -> where it was first
    positional: dict[str, str] = {}  # the position-id of a record without an id -> where it is
    for i, rec in enumerate(records, 1):
        given = isinstance(rec, dict) and rec.get("id") is not None
        rid = str(rec["id"]) if given else str(i)
        if line_numbers is not None:
            where = f"{source or 'input'}: line {line_numbers[i - 1]}"
        else:
            where = f"{source + ': ' if source else ''}record {i}"
        if given:
            if rid in seen:  # counted twice in every mean: refused, not averaged in silence
                raise DDPDataError(
                    f"{where}, column id: {rid[:80]!r} is the id of {seen[rid].rsplit(': ', 1)[-1]} too; each "
                    "item is judged once (a judge run appended twice?): remove one of the two records",
                    code="D556")
            seen[rid] = where
        if (not given and rid in seen) or (given and rid in positional):
            # a record without an id is named by its position: two rows with one id, which is which?
            a, b = (where, seen[rid]) if not given else (positional[rid], where)
            raise DDPDataError(
                f"{a} has no id and is named by its position {rid!r}, which {b.rsplit(': ', 1)[-1]} gives as its id: "
                "two output rows would share the id; give every record an id (or none)", code="D556")
        if not given:
            positional[rid] = where
        out.append(score_judgement(rec, mapping, rid, where=where))
    return out


def read_judgements_lines(path: str) -> tuple[list[Any], list[int]]:
    """Parse a JSONL file: one record per non-blank line, with its 1-based line number; a line
    that is not JSON becomes the sentinel ``None`` (scored as an error row). A UTF-8 byte-order mark
    at the start of the file is skipped, as every ddpcore reader does. Raises D102 (exit 3, as the
    other readers) if the file is missing, a folder or cannot be read, D551 (naming the line and byte
    column) if it is not UTF-8, D552 if it holds no record, D741 (naming the line) if a line nests
    JSON deeper than the parser can follow."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise DDPDataError(f"{path}: file not found; check the path", code="D102") from None
    except IsADirectoryError:
        raise DDPDataError(f"{path}: is a folder, expected a JSONL file", code="D102") from None
    except OSError as exc:
        raise DDPDataError(f"{path}: cannot read file ({exc.strerror or exc}); check permissions",
                           code="D102") from None
    try:
        text = data.decode("utf-8-sig")  # the BOM of the first line only (a BOM later on is a bad line)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DDPDataError(f"{path}: line {line}, byte column {col}: not UTF-8 text (byte 0x{data[exc.start]:02x}); "
                           "expected JSONL in UTF-8 (re-encode it, e.g. `iconv -f latin1 -t utf-8`)",
                           code="D551") from None
    lines = text.splitlines()
    records: list[Any] = []
    numbers: list[int] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except RecursionError:
            raise DDPDataError(
                f"{path}: line {n}: JSON nested too deeply for the parser (Python's recursion limit); "
                "a judge reply is a flat object of item lists - fix or remove the line", code="D741") from None
        except ValueError:
            records.append(None)
        numbers.append(n)
    if not records:
        raise DDPDataError(f"{path}: no judgements (the file is empty)", code="D552")
    return records, numbers


def read_judgements(path: str) -> list[Any]:
    """The records of :func:`read_judgements_lines` (same errors), without line numbers."""
    return read_judgements_lines(path)[0]


def summarize(rows: Sequence[MetricSRow]) -> dict[str, Any]:
    """Counts and mean scores of the scored rows (error rows excluded, counted)."""
    scored = [r for r in rows if r.status != STATUS_ERROR]

    def mean(attr: str) -> float | None:
        return None if not scored else float(np.mean([getattr(r, attr) for r in scored]))

    return {
        "n_rows": len(rows), "n_scored": len(scored),
        "n_errors": sum(r.status == STATUS_ERROR for r in rows),
        "n_instruction_following_failed": sum(r.status == STATUS_IF_FAILED for r in rows),
        "n_unknown_labels": sum(r.n_unknown_labels for r in rows),
        "n_rows_missing_lists": sum(bool(r.missing_lists) for r in rows),
        "mean_accuracy": mean("accuracy"), "mean_fluency": mean("fluency"),
        "mean_appropriateness": mean("appropriateness"), "mean_total": mean("total"),
    }


# --------------------------------------------------------------------------- consistency


@dataclasses.dataclass(frozen=True)
class ConsistencyResult:
    """Pairwise ranking agreement between a metric and human scores."""

    segment_consistency: float  # share of consistent system pairs within items
    n_segment_pairs: int
    system_consistency: float  # share of consistent pairs of system means
    n_system_pairs: int
    tie_threshold: float
    human_tie_threshold: float
    #: what makes the figures degenerate (e.g. every pair of one side a tie), also given with ``warnings.warn``
    warnings: tuple[str, ...] = ()


# a difference within this relative distance of the tie threshold is the threshold itself, not "below" it:
# 70 and 65 of 100 normalise to 0.7 - 0.65 = 0.04999999999999993 in floating point, a 5-point gap (0.05)
_TIE_REL = 1e-9


def _below(d: np.ndarray | float, t: float) -> np.ndarray | bool:
    """``|d| < t`` of normalised differences, rounding noise at the threshold not counted as below it."""
    return np.abs(d) < t * (1.0 - _TIE_REL)


def _consistent(dm: np.ndarray, dh: np.ndarray, t: float, th: float) -> np.ndarray:
    tie_m = _below(dm, t)
    tie_h = _below(dh, th)
    return (tie_m & tie_h) | (~tie_m & ~tie_h & (np.sign(dm) == np.sign(dh)))


def _pairs_within(group_sorted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (i, j), i < j, of rows with equal ``group_sorted`` (rows sorted by group), vectorised."""
    n = group_sorted.size
    start = np.r_[0, np.flatnonzero(group_sorted[1:] != group_sorted[:-1]) + 1]
    size = np.diff(np.r_[start, n])
    end_of_row = np.repeat(start + size, size)  # one past the group's last row, per row
    after = end_of_row - np.arange(n) - 1  # partners after each row
    i = np.repeat(np.arange(n), after)
    first_partner = np.repeat(np.cumsum(after) - after, after)
    j = i + 1 + (np.arange(i.size) - first_partner)
    return i, j


def _missing_id(v: Any) -> bool:
    """None, NaN, NaT or pandas' NA (whose comparison is neither True nor False)."""
    if v is None:
        return True
    try:
        return bool(v != v)
    except (TypeError, ValueError):
        return True


def _id_keys(values: Sequence[Any], what: str) -> np.ndarray:
    """The ``item=``/``system=`` ids as text keys, one per row: numbers compared as numbers (1, 1.0 and numpy's 1
    are one id, ``"1"``), any other id as its text. A missing id (None, NaN, NA) or numbers mixed with text
    (is ``1`` the item ``"1"``?) is D555 naming the position: an id must never merge or split in silence."""
    obj = np.asarray(values, dtype=object)
    if obj.ndim != 1:
        raise DDPDataError(f"{what} ids must be a flat sequence, one per (item, system)", code="D555")
    keys: list[str] = []
    first: dict[bool, int] = {}
    for k, v in enumerate(obj.tolist()):
        if _missing_id(v):
            n = sum(_missing_id(x) for x in obj.tolist())
            raise DDPDataError(f"{what} id at position {k} is missing ({v!r}; {n} of {obj.size} such ids); give "
                               f"every score its {what}, or drop those rows", code="D555")
        number = isinstance(v, numbers.Real) and not isinstance(v, bool)
        first.setdefault(number, k)
        if number:
            f = float(v)
            keys.append(str(int(v)) if isinstance(v, numbers.Integral) else str(int(f)) if f.is_integer() else repr(f))
        else:
            keys.append(str(v))
    if len(first) == 2:
        a, b = obj[first[True]], obj[first[False]]
        raise DDPDataError(f"{what} ids mix numbers (position {first[True]}: {a!r}) and other values (position "
                           f"{first[False]}: {b!r}); give every {what} id as a number or every one as text",
                           code="D555")
    return np.asarray(keys, dtype=str)


def _range(value: Any, flag: str) -> tuple[float, float]:
    """``metric_range``/``human_range``: two finite real numbers, low < high (D554)."""
    try:
        lo, hi = value
    except (TypeError, ValueError):
        lo = hi = None
    if not all(isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x) for x in (lo, hi)) \
            or not hi > lo:  # type: ignore[operator]
        raise DDPUsageError(f"{flag}: a score range needs two finite numbers low < high, got {value!r}", code="D554")
    return float(lo), float(hi)  # type: ignore[arg-type]


def metric_human_consistency(
    item: Sequence[Any],
    system: Sequence[Any],
    metric: Sequence[float],
    human: Sequence[float],
    metric_range: tuple[float, float] = (0.0, 100.0),
    human_range: tuple[float, float] = (0.0, 100.0),
    tie_threshold: float = 0.05,
    human_tie_threshold: float | None = None,
) -> ConsistencyResult:
    """Pairwise ranking consistency of ``metric`` with ``human`` (DiscoX §4.2).

    Parameters
    ----------
    item, system : sequence, shape (n,)
        The item (segment/document) and system of each score; one row per (item, system). Numbers are
        compared as numbers (``1`` and ``1.0`` are one item), other ids as text; a missing id (None, NaN)
        or numbers mixed with text is D555.
    metric, human : sequence of float, shape (n,)
        Scores on the scales ``metric_range`` / ``human_range`` (min-max normalised to [0, 1]).
    tie_threshold : float
        Normalised metric differences below it are ties (0.05 in the paper).
    human_tie_threshold : float, optional
        The same for human scores (default: ``tie_threshold``).
    """
    if not all(isinstance(x, numbers.Real) and not isinstance(x, bool)
               for x in (tie_threshold, tie_threshold if human_tie_threshold is None else human_tie_threshold)):
        raise DDPUsageError("tie thresholds must be numbers (tie_threshold=, human_tie_threshold=), got "
                            f"{tie_threshold!r} and {human_tie_threshold!r}", code="D554")
    t = float(tie_threshold)
    th = t if human_tie_threshold is None else float(human_tie_threshold)
    if not (math.isfinite(t) and t >= 0 and math.isfinite(th) and th >= 0):
        raise DDPUsageError("tie thresholds must be finite and >= 0 (tie_threshold=, human_tie_threshold=)",
                            code="D554")
    metric_range, human_range = _range(metric_range, "metric_range"), _range(human_range, "human_range")
    raw_scores = []
    for what, values in (("metric", metric), ("human", human)):
        try:  # a text label ("n/a") in a score column is bad data, not a crash
            raw_scores.append(np.asarray(values, dtype=np.float64))
        except (TypeError, ValueError) as exc:
            raise DDPDataError(f"{what} scores must be numbers, one per (item, system): {exc}", code="D555") from None
        if raw_scores[-1].ndim != 1:
            raise DDPDataError(f"{what} scores must be a flat sequence, one number per (item, system)", code="D555")
    (mr, hr), wm, wh = raw_scores, metric_range[1] - metric_range[0], human_range[1] - human_range[0]
    m, h = (mr - metric_range[0]) / wm, (hr - human_range[0]) / wh
    it, sy = _id_keys(item, "item"), _id_keys(system, "system")
    if not (m.size == h.size == it.size == sy.size):
        raise DDPDataError("item, system, metric and human must have the same length", code="D555")
    if np.isnan(m).any() or np.isnan(h).any():
        raise DDPDataError("metric and human scores must not be missing (drop error rows first)", code="D555")
    for what, norm, (lo, hi), flag in (("metric", m, metric_range, "metric_range"),
                                       ("human", h, human_range, "human_range")):
        # a score outside its declared scale (e.g. a 0-100 score with the range (0, 1), or inf) would normalise
        # outside [0, 1] and make the tie threshold mean something else: every pair a tie, or none
        out = ~((norm >= 0.0) & (norm <= 1.0))
        if out.any():
            k = int(np.flatnonzero(out)[0])
            raw = np.asarray(metric if what == "metric" else human, dtype=np.float64)[k]
            raise DDPDataError(
                f"{what} score {raw:g} (position {k}) lies outside its scale {flag}=({lo:g}, {hi:g}) "
                f"({int(out.sum())} of {out.size} such scores); give the scale the scores are on (e.g. {flag}=(0, 1) "
                "for scores in [0, 1], (0, 100) for percentages), or rescale them", code="D555")
    notes = []
    for what, norm, tt, flag in (("metric", m, t, "metric_range"), ("human", h, th, "human_range")):
        span = float(norm.max() - norm.min()) if norm.size else 0.0
        if norm.size > 1 and _below(span, tt):  # every difference below the threshold: all ties, whatever the ranking
            notes.append(f"every {what} pair is a tie: the {what} scores span {span:.3g} of their scale {flag}, less "
                         f"than the tie threshold {tt:g}; if the scores are on another scale (e.g. 0-1 scores with the "
                         f"default {flag}=(0, 100)), give it")
    for note in notes:
        warnings.warn(note, UserWarning, stacklevel=2)
    key = np.char.add(np.char.add(it, "\x00"), sy)
    if np.unique(key).size != key.size:
        raise DDPDataError("an (item, system) pair appears twice; one score per system and item", code="D555")
    order = np.argsort(it, kind="stable")
    i, j = _pairs_within(it[order])
    i, j = order[i], order[j]
    # differences (and means) on the raw scale, normalised once: 70 - 65 = 5 of 100 is 0.05 exactly, and equal
    # means of integer scores stay equal (normalising each score first adds rounding noise to both)
    seg = _consistent((mr[i] - mr[j]) / wm, (hr[i] - hr[j]) / wh, t, th)
    systems, inv = np.unique(sy, return_inverse=True)
    cnt = np.bincount(inv).astype(np.float64)
    n_items = np.unique(it).size
    if systems.size > 1 and (cnt < n_items).any():  # (item, system) is unique: cnt = the items of each system
        short = np.flatnonzero(cnt < n_items)
        note = (f"systems are scored on different items ({', '.join(f'{systems[k]} on {int(cnt[k])}' for k in short[:3])}"
                f"{', ...' if short.size > 3 else ''} of {n_items} items): the system-level figure compares means over "
                "different documents; keep only the items every system is scored on to compare like with like")
        notes.append(note)
        warnings.warn(note, UserWarning, stacklevel=2)
    mm = np.bincount(inv, weights=mr) / cnt
    hm = np.bincount(inv, weights=hr) / cnt
    a, b = np.triu_indices(systems.size, k=1)
    sys_ok = _consistent((mm[a] - mm[b]) / wm, (hm[a] - hm[b]) / wh, t, th)
    return ConsistencyResult(
        segment_consistency=float(seg.mean()) if seg.size else float("nan"), n_segment_pairs=int(seg.size),
        system_consistency=float(sys_ok.mean()) if sys_ok.size else float("nan"), n_system_pairs=int(sys_ok.size),
        tie_threshold=t, human_tie_threshold=th, warnings=tuple(notes),
    )


__all__ = ["MetricSRow", "metric_s", "score_judgement", "read_judgements", "read_judgements_lines", "summarize",
           "ConsistencyResult", "metric_human_consistency"]
