"""Signatures: what every ddpcore result records so that it can be reproduced (version, method,
settings), as JSON-safe values. ``SIGNATURE_KEY`` (:mod:`ddpcore.schema`) is where Parquet outputs keep it."""
from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ._version import __version__
from .schema import SegmentColumns


class _Rules(Protocol):
    name: str
    description: str

    def certify_info(self, *, has_parser: bool = True) -> dict[str, object] | None: ...

    def certify_note(self, has_parser: bool) -> str | None: ...


class RunSettings(Protocol):
    """What :func:`run_signature` reads of a run's settings (:class:`ddpcore.engines.local.Settings`)."""

    distance: str
    sentence_unit: str
    rules: _Rules


def run_signature(info: Mapping[str, Any], settings: RunSettings, cols: SegmentColumns, *, head_nouns: str,
                  run: Mapping[str, Any] | None = None, extra: Mapping[str, Any] | None = None,
                  warn: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The signature of a profiling run, the one builder of every engine's (in-memory
    :func:`ddpcore.profile_anchors`, the journaled file run, the Ray engine).

    ``{"ddpcore": <version>, **info, distance, rules, rules_description, certify, head_nouns,
    sentence_unit, columns, **run, **extra}``: ``info`` is the pipeline's
    (:meth:`ddpcore.pipeline.parse.Parser.info`: names, versions, components), ``head_nouns``
    what head nouns came from (:func:`ddpcore.pipeline.extract.head_noun_source`), ``run`` what
    a file run adds (``input``, ``batches``, ``n_process``) and ``extra`` the engine's own keys
    (``reader``, ``shard``, ``input_sha256``, ``cache``, ``engine``/``actors``...). A key of
    ``extra`` replaces one of ``run`` (the Ray engine's ``n_process``: its actors).
    ``warn`` is given the line that says how a pipeline without a dependency parser changed
    ``ddp_certified`` (:meth:`ddpcore.anchors.rules.RuleSet.certify_note`), when it did.
    """
    has_parser = bool(info.get("has_parser", True))
    note = settings.rules.certify_note(has_parser)
    if note is not None and warn is not None:
        warn(note)
    return {
        "ddpcore": __version__,
        **info,
        "distance": settings.distance,
        "rules": settings.rules.name,
        "rules_description": settings.rules.description,
        "certify": settings.rules.certify_info(has_parser=has_parser),
        "head_nouns": head_nouns,
        "sentence_unit": settings.sentence_unit,
        "columns": {"document": cols.document, "segment": cols.segment, "text": cols.text, "domain": cols.domain},
        **(run or {}),
        **(extra or {}),
    }


def signature(method: str, **options: Any) -> dict[str, Any]:
    """Return the reproducibility signature recorded by every result.

    ``{"ddpcore": <version>, "method": <method>, **options}`` with JSON-safe values
    (see :func:`json_safe`).
    """
    sig: dict[str, Any] = {"ddpcore": __version__, "method": method}
    for key, value in options.items():
        sig[key] = json_safe(value)
    return sig


class AsDict:
    """Mixin of the frozen ``...Result`` dataclasses: ``to_dict()`` is every field as a JSON-safe
    value (:func:`json_safe`: numpy to Python, NaN to ``None``, infinities to strings)."""

    def to_dict(self) -> dict[str, Any]:
        import dataclasses

        return json_safe(dataclasses.asdict(self))  # type: ignore[call-overload]


def json_safe(value: Any) -> Any:
    """Convert numpy scalars/arrays and tuples to Python values; NaN -> ``None``, +-inf -> ``"inf"``/``"-inf"``."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a hard dependency
        np = None  # type: ignore[assignment]
    if np is not None:
        if isinstance(value, np.ndarray):
            return [json_safe(v) for v in value.tolist()]
        if isinstance(value, np.generic):
            value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def figure_metadata(fmt: str, signature: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``savefig(metadata=)`` of a figure in format ``fmt`` (``png``, ``svg``, ``pdf``) carrying ``signature``:
    the signature as JSON in the SVG ``<metadata>`` (``dc:description``, and no date, so that the file is
    reproducible), else under the key ``ddpcore.signature`` (a PNG text chunk, a PDF document-information
    entry). ASCII JSON: PNG text is latin-1."""
    import json

    from .schema import SIGNATURE_KEY

    sig = json.dumps(signature, sort_keys=True) if signature is not None else None
    if fmt == "svg":
        return {"Date": None, **({"Description": sig} if sig is not None else {})}
    return {SIGNATURE_KEY: sig} if sig is not None else None


# ------------------------------------------------------------------ shareable signatures (reports, figures)


def shareable(obj: Any, home: str | None = None) -> Any:
    r"""``obj`` (a signature: dicts, lists, strings, numbers) with nothing that names the local machine's
    folders, so a report can be shared: an absolute path (POSIX ``/...``, Windows ``C:\...`` or
    ``\\server\...``) becomes its file name; in a longer string (a warning naming a file) the home folder
    (``home``, default the user's) becomes ``~`` and an absolute POSIX path (or ``~/...``) starting a word
    keeps only its file name; a relative path is kept. Dict keys are kept. Used by ``ddp report`` and the
    signature of ``ddp plot``'s figures."""
    home = os.path.expanduser("~") if home is None else home
    home = home.rstrip("/\\") if home and home not in ("/", "~") else None

    def one(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: one(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [one(x) for x in v]
        if not isinstance(v, str):
            return v
        if "\n" not in v and (v.startswith("/") or re.match(r"^(?:[A-Za-z]:[\\/]|\\\\)", v)):
            name = re.split(r"[\\/]", v.rstrip("/\\"))[-1]
            return name or v
        v = v.replace(home, "~") if home else v
        return _EMBEDDED_DIRS.sub("", v)  # '... read /srv/data/x.tsv (3 rows)' -> '... read x.tsv (3 rows)'

    return one(obj)


def display_path(path: str | None) -> str | None:
    """A path as the report shows it (:func:`shareable`): relative as given, absolute as its file name."""
    return None if path is None else shareable(str(path))


#: the folders of an absolute POSIX path (or one under ~) that starts a word of a longer string (a message):
#: '/srv/data/' of '/srv/data/x.tsv'
_EMBEDDED_DIRS = re.compile(r"(?<![^\s'\"(\[=])~?/(?:[^\s/'\"]+/)+(?=[^\s/'\"])")


#: how the report shows paths (recorded in its signature)
PATHS_NOTE = "absolute paths shown as file names, the home folder as ~ (the report names no local folder)"
