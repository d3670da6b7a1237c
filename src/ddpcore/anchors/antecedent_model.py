"""The trained antecedent scorer's weights file: located, loaded and checked against the compiled
kernel's feature layout (errors D240-D249), once per file version per process. The link stage that
uses it is :mod:`ddpcore.pipeline.antecedent`."""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DDPDataError

#: folder of the packaged weights (a bare file name in ``RuleSet.antecedent_model`` is looked up here)
DATA_DIR = Path(__file__).resolve().parent / "data"


#: the ``format`` field every weights file carries
WEIGHTS_FORMAT = "ddpcore-antecedent-weights"


#: anchor kinds of the two weight rows
MODEL_ROWS: tuple[str, ...] = ("pronoun", "name")


#: what an anchor whose best candidate scores below the threshold gets, per weight row: the value
#: with index 0 leaves it unlinked (a pronoun: distance 1; a name: a first mention; the meaning of
#: a file without the field, i.e. weights version 1), ``"rule"`` links it to today's rule's choice
FALLBACKS: tuple[tuple[str, str], ...] = (("distance1", "rule"), ("first_mention", "rule"))


def kernel() -> Any:
    """The compiled ``antecedent`` extension module (the link stage's scoring kernel), loaded once."""
    from .._native import load

    return load("antecedent")


def feature_layout() -> tuple[int, tuple[str, ...], tuple[str, ...]]:
    """``(LAYOUT_VERSION, FEATURES, LABELS)`` of the compiled kernel."""
    k = kernel()
    return int(k.LAYOUT_VERSION), tuple(k.FEATURES), tuple(k.LABELS)


@dataclass(frozen=True)
class AntecedentModel:
    """A loaded weights file: ``weights`` (2, n_features) float64 (row 0 pronouns, row 1 names),
    ``bias`` (2,), ``threshold`` (2,) probabilities in (0, 1), ``max_sentences`` the candidate
    cap (sentences back), ``fallback`` (2,) uint8 (1: below the threshold, link to the rule's
    choice; 0: leave unlinked; see :data:`FALLBACKS`), ``abstain`` (2,) probabilities in [0,
    threshold] (above 0: an anchor whose best candidate scores below it, or that has none, is no
    anchor; names: always 0), ``sha256`` of the file, ``recipe`` how it was made."""

    weights: np.ndarray
    bias: np.ndarray
    threshold: np.ndarray
    max_sentences: int
    fallback: np.ndarray = field(default_factory=lambda: np.zeros(2, dtype=np.uint8))
    abstain: np.ndarray = field(default_factory=lambda: np.zeros(2, dtype=np.float64))
    path: str = ""
    sha256: str = ""
    recipe: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"weights_file": os.path.basename(self.path), "sha256": self.sha256,
                "threshold": [float(t) for t in self.threshold], "max_sentences": self.max_sentences,
                "fallback": [FALLBACKS[r][int(f)] for r, f in enumerate(self.fallback)],
                "abstain": [float(a) for a in self.abstain]}


def weights_path(name: str) -> Path:
    """The weights file a rule set names: a bare file name is a packaged file, else a path."""
    p = Path(name)
    return DATA_DIR / name if p.name == name and not p.is_absolute() else p


def _bad(path: Path, what: str, code: str) -> DDPDataError:
    return DDPDataError(f"{path}: {what}; retrain with scripts/train_antecedent.py or reinstall ddpcore", code=code)


def load_antecedent_model(path: str | os.PathLike[str]) -> AntecedentModel:
    """Read and check a weights file against the compiled kernel's feature layout.

    Raises :class:`DDPDataError` with one line naming the file: D240 unreadable, D241 not a
    weights file (bad JSON or missing fields), D242 another layout version, D243 other feature
    names or order, D244 a weight row of the wrong length or a non-finite value, a threshold
    outside (0, 1) or a negative cap, D245 entity labels other than the kernel's, D246 a
    ``fallback`` other than those of :data:`FALLBACKS` (a model without one: unlinked) or an
    ``abstain`` level outside [0, threshold] (names: only 0; a model without one: 0, never).
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise DDPDataError(f"{p}: cannot read the antecedent weights file ({exc.strerror or exc}); "
                           "reinstall ddpcore or pass an existing file", code="D240") from None
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(p, f"not a JSON weights file ({exc})", "D241") from None
    if not isinstance(doc, dict) or doc.get("format") != WEIGHTS_FORMAT:
        raise _bad(p, f"not a ddpcore antecedent weights file (field 'format' must be {WEIGHTS_FORMAT!r})", "D241")
    missing = [k for k in ("layout_version", "features", "labels", "max_sentences", "models") if k not in doc]
    if missing:
        raise _bad(p, f"weights file lacks the field(s) {', '.join(missing)}", "D241")
    version, features, labels = feature_layout()
    if doc["layout_version"] != version:
        raise _bad(p, f"feature layout version {doc['layout_version']!r}, but this ddpcore's kernel has version "
                      f"{version}", "D242")
    names = doc["features"]
    if not isinstance(names, list) or tuple(names) != features:
        if not isinstance(names, list):
            detail = "field 'features' is not a list"
        else:
            at = next((i for i, (a, b) in enumerate(zip(names, features)) if a != b), min(len(names), len(features)))
            got = names[at] if at < len(names) else "(end)"
            want = features[at] if at < len(features) else "(end)"
            detail = f"{len(names)} features, the kernel {len(features)}; feature {at} is {got!r}, the kernel's {want!r}"
        raise _bad(p, f"feature layout differs from the kernel's ({detail})", "D243")
    if not isinstance(doc["labels"], list) or tuple(doc["labels"]) != labels:
        raise _bad(p, f"entity labels {doc['labels']!r} differ from the kernel's {list(labels)!r}", "D245")
    models = doc["models"]
    if not isinstance(models, dict) or any(m not in models for m in MODEL_ROWS):
        raise _bad(p, f"field 'models' must hold {' and '.join(MODEL_ROWS)}", "D241")
    weights = np.zeros((len(MODEL_ROWS), len(features)), dtype=np.float64)
    bias = np.zeros(len(MODEL_ROWS), dtype=np.float64)
    threshold = np.zeros(len(MODEL_ROWS), dtype=np.float64)
    fallback = np.zeros(len(MODEL_ROWS), dtype=np.uint8)
    abstain = np.zeros(len(MODEL_ROWS), dtype=np.float64)
    for r, name in enumerate(MODEL_ROWS):
        m = models[name]
        fb = m.get("fallback", FALLBACKS[r][0]) if isinstance(m, dict) else FALLBACKS[r][0]
        if fb not in FALLBACKS[r]:
            raise _bad(p, f"model {name!r} fallback {fb!r} is not one of {' or '.join(map(repr, FALLBACKS[r]))}",
                       "D246")
        fallback[r] = FALLBACKS[r].index(fb)
        ab = m.get("abstain", 0.0) if isinstance(m, dict) else 0.0
        try:
            raw_w, raw_b, raw_t = m["weights"], m["bias"], m["threshold"]
            if not isinstance(raw_w, list) or any(isinstance(v, bool) or not isinstance(v, (int, float))
                                                  for v in [*raw_w, raw_b, raw_t]):
                raise TypeError  # nested lists, text, true/false or null are no weights
            w = np.asarray(raw_w, dtype=np.float64)
            bias[r] = float(raw_b)
            threshold[r] = float(raw_t)
        except (KeyError, TypeError, ValueError, OverflowError):  # OverflowError: an integer beyond a float
            raise _bad(p, f"model {name!r} needs numeric 'weights', 'bias' and 'threshold'", "D244") from None
        if w.shape != (len(features),):
            raise _bad(p, f"model {name!r} has {w.size} weights for {len(features)} features", "D244")
        if not (np.isfinite(w).all() and math.isfinite(bias[r])):
            raise _bad(p, f"model {name!r} has a non-finite weight or bias", "D244")
        if not 0.0 < threshold[r] < 1.0:
            raise _bad(p, f"model {name!r} threshold {threshold[r]} is outside (0, 1)", "D244")
        if isinstance(ab, bool) or not isinstance(ab, (int, float)) or not 0.0 <= ab <= threshold[r] \
                or (name != "pronoun" and ab != 0):
            limit = f"[0, {threshold[r]}] (the threshold)" if name == "pronoun" else "0 (names never abstain)"
            raise _bad(p, f"model {name!r} abstain {ab!r} must be a number in {limit}", "D246")
        abstain[r] = float(ab)
        weights[r] = w
    cap = doc["max_sentences"]
    if not isinstance(cap, int) or isinstance(cap, bool) or cap < 0:
        raise _bad(p, f"max_sentences must be an integer >= 0, got {cap!r}", "D244")
    return AntecedentModel(weights=weights, bias=bias, threshold=threshold, max_sentences=cap, fallback=fallback,
                           abstain=abstain, path=str(p), sha256=hashlib.sha256(raw).hexdigest(),
                           recipe=dict(doc.get("recipe") or {}))
