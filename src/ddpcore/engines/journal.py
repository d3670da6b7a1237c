"""The settings a ``--resume`` must share with the interrupted run, for both engines.

The local engine (:mod:`.run`) and the Ray engine (:mod:`.ray_engine`) write the same record to
their journals and compare it the same way: one definition here, so a setting added to one engine's
check cannot be forgotten in the other's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..errors import DDPUsageError

if TYPE_CHECKING:
    from ..io.segments import SegmentColumns
    from .local import Settings

#: what each journal key means, in D170 messages
FLAG = {"pipeline": "--pipeline", "distance": "--distance", "rules": "--rules", "sentence_unit": "sentence unit",
        "certify": "the certification model (--certify-model, or the shipped weights)",
        "columns": "the --*-col options", "batch_chars": "--batch-chars", "input": "the input file",
        "ddpcore": "the ddpcore version", "shard": "--shard", "reader": "--reader/--docs/--txt-mode",
        "engine": "--engine", "input_sha256": "the input file"}


def journal_settings(settings: Settings, cols: SegmentColumns, pipeline: str | None, batch_chars: int,
                     identity: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The journal's ``settings`` record: version, pipeline, distance, rules, the certification model's
    digests, sentence unit, column names, batch size (characters) and the input's identity, plus
    ``extra`` (the engine's own keys: shard, reader, engine)."""
    return {
        "ddpcore": __version__,
        "pipeline": pipeline or "default",
        "distance": settings.distance,
        "rules": settings.rules.name,
        "certify": settings.rules.certify_digests(),
        "sentence_unit": settings.sentence_unit,
        "columns": {"document": cols.document, "segment": cols.segment, "text": cols.text, "domain": cols.domain},
        "batch_chars": batch_chars,
        "input": identity,
        **(extra or {}),
    }


def compare_settings(old: dict[str, Any], new: dict[str, Any], journal: object) -> None:
    """D170 naming the first setting (in key order) that differs from the interrupted run's journal ``journal``."""
    # the input's SHA-256 (recorded by --shard runs only) last: another --shard is named as such
    for key in sorted(set(old) | set(new), key=lambda k: (k == "input_sha256", k)):
        if old.get(key) != new.get(key):
            what = FLAG.get(key, key)
            detail = ("the input changed (size, modification time or path) since the interrupted run" if key == "input"
                      else "the input's content changed since the interrupted run" if key == "input_sha256"
                      else f"the interrupted run used {old.get(key)!r}, this one {new.get(key)!r}")
            raise DDPUsageError(
                f"--resume: {what} differs from the interrupted run's journal {journal} ({detail}); rerun with the "
                "same settings to resume, or without --resume to start over", code="D170")


__all__ = ["FLAG", "compare_settings", "journal_settings"]
