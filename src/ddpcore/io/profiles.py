"""Reading a ``ddp profile`` output back: its signature (Parquet metadata or the text sidecar) and the
column names it records."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..schema import SIGNATURE_KEY, SegmentColumns

def read_signature(path: Path) -> dict[str, Any]:
    """The ``ddpcore.signature`` of a Parquet file, or of a text output's ``.signature.json`` sidecar."""
    from .tables import detect_format, read_parquet_metadata

    try:
        if detect_format(path) == "parquet":
            raw = read_parquet_metadata(path).get(SIGNATURE_KEY)
            return json.loads(raw) if raw else {}
        side = path.with_name(path.name + ".signature.json")
        return json.loads(side.read_text(encoding="utf-8")) if side.exists() else {}
    except (OSError, ValueError):
        return {}


def profile_columns(signature: dict[str, Any], *, document: str | None = None, segment: str | None = None,
                    domain: str | None = None, text: str | None = None) -> SegmentColumns:
    """Column names: given ones first, then the profile signature's ``columns``, then the defaults."""
    rec = signature.get("columns") if isinstance(signature.get("columns"), dict) else {}
    d = SegmentColumns()
    return SegmentColumns(document=document or rec.get("document") or d.document,
                          segment=segment or rec.get("segment") or d.segment,
                          text=text or rec.get("text") or d.text,
                          domain=domain or rec.get("domain") or d.domain)
