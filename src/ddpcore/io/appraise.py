"""Appraise exports: the error-span JSON and offsets shared by every Appraise-based reader.

Appraise (the annotation tool of the WMT human evaluations and of the ESA campaigns) stores
each item's error spans as JSON (a list of ``{"start_i", "end_i", "severity", "error_type"}``,
or ``{"errors": [...]}``) with end-inclusive offsets in UTF-16 code units. The ESA WMT23 reader
(:mod:`ddpcore.io.esa`) and the WMT24 reader (:mod:`ddpcore.io.wmt`) both parse them here.
"""
from __future__ import annotations

import json
from typing import Any

from ..errors import DDPDataError


def utf16_span_to_codepoints(text: str, start_i: int, end_i: int) -> tuple[int, int]:
    """Appraise span ``[start_i, end_i]`` -> half-open code-point offsets ``[start, end)``.

    Appraise runs in the browser: its offsets index JavaScript strings, i.e. UTF-16 code units,
    and ``end_i`` is inclusive. For text without characters beyond U+FFFF (no surrogate pairs)
    this is ``(start_i, end_i + 1)``; otherwise each offset is moved to the code point holding
    that code unit (an emoji counts 2 units in Appraise, 1 code point here). Offsets past the
    text are clipped to its length.
    """
    if all(ord(ch) <= 0xFFFF for ch in text):
        return min(start_i, len(text)), min(end_i + 1, len(text))
    unit_starts = []  # UTF-16 offset at which each code point starts
    pos = 0
    for ch in text:
        unit_starts.append(pos)
        pos += 2 if ord(ch) > 0xFFFF else 1
    import bisect

    start = max(0, bisect.bisect_right(unit_starts, start_i) - 1)
    end = bisect.bisect_left(unit_starts, end_i + 1)
    return min(start, len(text)), min(max(end, start), len(text))


def parse_error_spans(raw: str, *, where: str, text: str | None = None) -> list[dict[str, Any]]:
    """Appraise span JSON -> list of {span_start, span_end (half-open code points), severity, error_type}.

    With ``text`` the UTF-16, end-inclusive Appraise offsets are converted by
    :func:`utf16_span_to_codepoints`; without it they are only made half-open (``end_i + 1``)."""
    if raw in ("", "[]", "None"):
        return []
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DDPDataError(f"{where}: error_spans is not valid JSON ({exc.msg})", code="D153") from None
    if isinstance(obj, dict):
        obj = obj.get("errors", [])
    spans = []
    for span in obj:
        start, end = span.get("start_i"), span.get("end_i")
        if isinstance(start, int) and isinstance(end, int):
            s, e = utf16_span_to_codepoints(text, start, end) if text is not None else (start, end + 1)
        else:  # "missing": an omission marker without a position
            s = e = None
        spans.append({"span_start": s, "span_end": e, "severity": str(span.get("severity")),
                      "error_type": span.get("error_type")})
    return spans


__all__ = ["parse_error_spans", "utf16_span_to_codepoints"]
