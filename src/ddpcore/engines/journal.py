"""The settings a ``--resume`` must share with the interrupted run, for both engines.

The local engine (:mod:`.run`) and the Ray engine (:mod:`.ray_engine`) write the same record to
their journals and compare it the same way: one definition here, so a setting added to one engine's
check cannot be forgotten in the other's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..anchors.spacy_extract import pipeline_folder_digest
from ..errors import DDPError, DDPUsageError

if TYPE_CHECKING:
    from ..io.segments import SegmentColumns
    from .local import Settings

#: what each journal key means, in D170 messages
FLAG = {"pipeline": "--pipeline", "distance": "--distance", "rules": "--rules", "sentence_unit": "sentence unit",
        "certify": "the certification model (--certify-model, or the shipped weights)",
        "columns": "the --*-col options", "batch_chars": "--batch-chars", "input": "the input file",
        "ddpcore": "the ddpcore version", "shard": "--shard", "reader": "--reader/--docs/--txt-mode",
        "engine": "--engine", "input_sha256": "the input file",
        "pipeline_sha256": "the pipeline folder (--pipeline PATH)"}


def journal_settings(settings: Settings, cols: SegmentColumns, pipeline: str | None, batch_chars: int,
                     identity: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The journal's ``settings`` record: version, pipeline, distance, rules, the certification model's
    digests, sentence unit, column names, batch size (characters) and the input's identity, plus
    ``extra`` (the engine's own keys: shard, reader, engine); for a pipeline given as a folder, the SHA-256 of
    its files (:func:`pipeline_folder_digest`)."""
    folder = pipeline_folder_digest(pipeline)
    return {
        **({"pipeline_sha256": folder} if folder is not None else {}),
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


def compare_settings(old: dict[str, Any], new: dict[str, Any], journal: object, *, finished: bool = False) -> None:
    """D170 naming the first setting (in key order) that differs from the interrupted run's journal ``journal``
    (``finished``: from the settings a finished Ray dataset's manifest ``journal`` records)."""
    run = "finished" if finished else "interrupted"
    # the checksums of the input and of a pipeline folder last: another --shard, --pipeline... is named as such
    for key in sorted(set(old) | set(new), key=lambda k: (k in ("input_sha256", "pipeline_sha256"), k)):
        if old.get(key) != new.get(key):
            what = FLAG.get(key, key)
            detail = (f"the input changed (size, modification time or path) since the {run} run" if key == "input"
                      else "its journal records no checksum of the input's content (an older ddpcore), so whether "
                           "the input changed cannot be checked" if key == "input_sha256" and key not in old
                      else f"the input's content changed since the {run} run, though its size and modification "
                           "time did not" if key == "input_sha256"
                      else f"its files changed since the {run} run (retrained or replaced in place)"
                      if key == "pipeline_sha256" and key in old and key in new
                      else "its journal records no checksum of the pipeline folder (an older ddpcore)"
                      if key == "pipeline_sha256" and key not in old
                      else f"the {run} run used {old.get(key)!r}, this one {new.get(key)!r}")
            record = f"the settings the finished run recorded in {journal}" if finished else \
                f"the interrupted run's journal {journal}"
            raise DDPUsageError(
                f"--resume: {what} differs from {record} ({detail}); rerun with the same settings to "
                f"{'reuse its output' if finished else 'resume'}, or without --resume to start over", code="D170")


def pipeline_identity(info: dict[str, Any]) -> dict[str, Any]:
    """What a parse depends on in a :func:`~ddpcore.anchors.spacy_extract.pipeline_info` (as the parse
    cache's fingerprint: spaCy, the pipeline's name, version and components, compiled POS)."""
    return {"spacy": info.get("spacy"), "pipeline_name": info.get("pipeline_name"),
            "pipeline_version": info.get("pipeline_version"), "components": list(info.get("components") or []),
            "compiled_pos": info.get("pos_source") == "compiled_attribute_ruler"}


def show_pipeline(info: dict[str, Any]) -> str:
    """``NAME VERSION (components) with spaCy X`` of a pipeline info."""
    x = pipeline_identity(info)
    return (f"{x['pipeline_name']} {x['pipeline_version']} ({', '.join(x['components'])}) with spaCy "
            f"{x['spacy']}")


def check_same_pipeline(earlier: dict[str, Any], now: dict[str, Any], journal: object) -> None:
    """``--resume``: D170 when the pipeline behind the same ``--pipeline`` changed since the interrupted run
    whose journal is ``journal`` (spaCy or the pipeline package upgraded, a pipeline folder replaced): its
    batches would mix two parses. Both engines (the Ray engine on every actor, before a part is written)."""
    if pipeline_identity(earlier) == pipeline_identity(now):
        return
    raise DDPUsageError(f"--resume: the spaCy pipeline differs from the interrupted run's journal {journal} "
                        f"(the interrupted run parsed with {show_pipeline(earlier)}, this one with "
                        f"{show_pipeline(now)}: spaCy or the pipeline was changed since); reinstall that pipeline to "
                        "resume, or rerun without --resume to start over", code="D170")


def check_actor_pipeline(expected: dict[str, Any], now: dict[str, Any], node: str, journal: object) -> None:
    """Ray: D763 when the actor on ``node`` loads another spaCy or pipeline than the one this run's finished
    batches were parsed with (``expected``, recorded in ``journal``): nodes with different installs must not
    mix their parses in one output."""
    if pipeline_identity(expected) == pipeline_identity(now):
        return
    raise DDPError(f"the Ray actor on node {node[:12]} parses with {show_pipeline(now)}, but this run's batches "
                   f"were parsed with {show_pipeline(expected)} (recorded in {journal}); every node of the cluster "
                   "must have the same spaCy and pipeline installed: align them, then rerun with --resume to keep "
                   "the finished batches", code="D763")


__all__ = ["FLAG", "check_actor_pipeline", "check_same_pipeline", "compare_settings", "journal_settings",
           "pipeline_folder_digest", "pipeline_identity", "show_pipeline"]
