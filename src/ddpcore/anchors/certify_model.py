"""The certification model of ``ddp_certified``: a weights file located, loaded and checked (D250-D258, D330-D331).

The file is JSON (``format`` ``"ddpcore-certify-weights"``, layout ``version`` 5): the feature names
in kernel order (they must equal :data:`ddpcore.anchors.certify.FEATURES`: an anchor's features,
then those of one candidate distance of it), a logistic model over standardised features
(``mean``, ``scale``, ``weights``, ``bias``; it predicts the probability that a candidate distance
over-estimates the gold distance of the anchor's sentence), the three confidence thresholds
(below ``long_distance`` sentences ``threshold`` for pronoun anchors and ``threshold_name`` for
name anchors; ``threshold_long`` at and above, for both),
``long_full_only`` (at and above ``long_distance`` only full distances are certified), the
out-of-fold figures they were chosen on and the recipe that rebuilds the file
(``python scripts/train_certify.py --check``). A file that does not fit fails at load, before any
parse. ``recipe.parser`` ``false`` marks a model trained on a pipeline without a dependency parser
(the shipped :data:`NOPARSER_CERTIFY_MODEL`, which ``ddp_certified`` uses in place of the default
when the pipeline has none: :meth:`ddpcore.anchors.rules.RuleSet.for_pipeline`). Layouts 1 (one row per anchor, no ``long_full_only``), 2 (candidate rows without the parse
features of the anchors table's ``role``, ``antecedent_role`` and ``n_candidates``) and 3 (four chain
positions, without the ``previous`` candidate) are no longer read: their features differ. Layout 4
(the features of layout 5, one short threshold for both kinds of anchor, no ``threshold_name``) is
read with ``threshold_name`` equal to ``threshold``; layout 5 is not readable by a build that reads
only 4 (it would ignore the names' threshold and certify other anchors).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import DDPDataError

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np

#: folder of the packaged weights
DATA_DIR = Path(__file__).resolve().parent / "data"
#: the shipped model (a bare file name is looked up in DATA_DIR)
DEFAULT_CERTIFY_MODEL = "certify-v5.json"
#: the shipped model trained without the parse features (``--pipeline fast``), used in place of the default
#: when the pipeline has no dependency parser
NOPARSER_CERTIFY_MODEL = "certify-v5-noparser.json"
CERTIFY_FORMAT = "ddpcore-certify-weights"
#: versions of the file layout this build reads
CERTIFY_VERSIONS = (4, 5)


@dataclass(frozen=True)
class CertifyModel:
    """A loaded certification model: ``weights``, ``mean``, ``scale`` (n_features,) float64,
    ``bias``; ``threshold`` (pronoun anchors) / ``threshold_name`` (name anchors) below
    ``long_distance`` sentences and ``threshold_long`` at and above, confidences in [0, 1];
    ``long_distance`` in sentences; ``path``, ``sha256`` and ``version`` of the file; ``recipe`` and ``figures`` as written."""

    weights: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    bias: float
    threshold: float
    threshold_long: float
    long_distance: int
    long_full_only: bool
    version: int
    threshold_name: float | None = None  # None: the same as ``threshold`` (layout 4)
    path: str = ""
    sha256: str = ""
    recipe: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.threshold_name is None:
            object.__setattr__(self, "threshold_name", self.threshold)

    @property
    def trained_with_parser(self) -> bool:
        """Whether the model was trained on a pipeline with a dependency parser (it then weighs the
        parse features: ``role``, ``antecedent_role``); files without ``recipe.parser`` were."""
        return self.recipe.get("parser", True) is not False

    def to_dict(self) -> dict[str, Any]:
        """What a signature records of the model."""
        return {"file": os.path.basename(self.path), "version": self.version, "sha256": self.sha256,
                "threshold": self.threshold, "threshold_name": self.threshold_name,
                "threshold_long": self.threshold_long,
                "long_distance": self.long_distance, "long_full_only": self.long_full_only,
                "trained_with_parser": self.trained_with_parser}


def certify_model_path(name: str | None) -> Path:
    """The weights file ``name`` names: a path that exists (relative to the working folder), else a bare
    file name of a packaged file (``certify-v5.json``), else the path as given, so that the error of a
    missing file (D250) names the path the user gave, not a packaged file that does not exist either."""
    name = name or DEFAULT_CERTIFY_MODEL
    p = Path(name)
    if p.exists() or p.name != name or p.is_absolute():
        return p
    packaged = DATA_DIR / name
    return packaged if packaged.is_file() else p


def _bad(path: Path, what: str, code: str) -> DDPDataError:
    return DDPDataError(f"{path}: {what}; rebuild it with scripts/train_certify.py or reinstall ddpcore", code=code)


def _vector(doc: dict[str, Any], key: str, n: int, path: Path) -> np.ndarray:
    import numpy as np

    v = doc.get(key)
    if not isinstance(v, list) or len(v) != n:
        raise _bad(path, f"field '{key}' must be a list of {n} numbers (one per feature)", "D254")
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):  # a list, true, null, "1"
        raise _bad(path, f"field '{key}' holds a value that is not a number", "D255")
    try:
        arr = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        raise _bad(path, f"field '{key}' holds a value that is not a number", "D255") from None
    except OverflowError:  # an integer of hundreds of digits: no float holds it
        raise _bad(path, f"field '{key}' holds a non-finite value (a number too large for a float)", "D255") from None
    if not np.isfinite(arr).all():
        raise _bad(path, f"field '{key}' holds a non-finite value (NaN or infinity)", "D255")
    return arr


def _number(doc: dict[str, Any], key: str, path: Path, lo: float, hi: float) -> float:
    v = doc.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi or not math.isfinite(v):
        raise _bad(path, f"field '{key}' must be a finite number in [{lo:g}, {hi:g}], got {v!r}", "D256")
    return float(v)


def _threshold(doc: dict[str, Any], key: str, path: Path) -> float:
    """A confidence threshold: a number in [0, 1] (D256), and neither 0 (every distance certified, the default
    distance of a pronoun without an antecedent too) nor 1 (none, but a confidence that rounds to 1)."""
    t = _number(doc, key, path, 0.0, 1.0)
    if not 0.0 < t < 1.0:
        raise _bad(path, f"field '{key}' is {t:g}: a threshold must lie strictly between 0 and 1 (at 0 every "
                         "distance is certified, at 1 only a confidence that rounds to 1)", "D256")
    return t


def load_certify_model(path: str | os.PathLike[str], features: tuple[str, ...]) -> CertifyModel:
    """Read and check a certification weights file against the feature list of this build.

    Errors (:class:`DDPDataError`, one line naming the file): D250 unreadable, D251 not a
    certification weights file (bad JSON, wrong ``format``, missing fields, a ``recipe`` or ``figures`` that
    is not an object), D252 a layout
    version this build does not read, D253 other features than this build computes, D254 a vector
    of the wrong length, D255 a non-finite or non-numeric value, D256 a threshold, bias or distance
    out of range (a threshold of 0 or 1, a ``long_distance`` that is not a whole number), D257 a zero
    or negative scale, D258 a ``long_full_only`` that is not a boolean, D330 a ``recipe.parser`` that is not
    a boolean (the string ``"false"`` or ``0`` would read as a model trained with a parser, and a pipeline
    without one would warn about, or keep, the wrong model), D331 a ``threshold_long`` below both short
    thresholds (``threshold``, ``threshold_name``): ``scripts/train_certify.py`` never chooses one (its
    long threshold is at least the lower short one), and such a model would certify the longest distances,
    where an over-estimate costs most, at a lower confidence than any shorter one; it is refused rather than
    loaded with a warning, as a hand-edited or mis-assembled file most likely is.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise DDPDataError(f"{p}: cannot read the certification model ({exc.strerror or exc}); check --certify-model",
                           code="D250") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(p, f"not JSON ({exc})", "D251") from None
    if not isinstance(doc, dict) or doc.get("format") != CERTIFY_FORMAT:
        raise _bad(p, f"not a ddpcore certification model (field 'format' must be {CERTIFY_FORMAT!r})", "D251")
    missing = [k for k in ("version", "features", "weights", "mean", "scale", "bias", "threshold", "threshold_long",
                           "long_distance", "long_full_only") if k not in doc]
    if missing:
        raise _bad(p, f"lacks the field(s) {', '.join(missing)}", "D251")
    if doc["version"] not in CERTIFY_VERSIONS:
        raise _bad(p, f"layout version {doc['version']!r}; this build reads version(s) "
                      f"{', '.join(map(str, CERTIFY_VERSIONS))}", "D252")
    if not isinstance(doc["features"], list) or tuple(doc["features"]) != tuple(features):
        got = doc["features"] if isinstance(doc["features"], list) else []
        diff = sorted(set(map(str, got)) ^ set(features))[:5]
        raise _bad(p, f"its features differ from this build's {len(features)} features"
                      f"{' (e.g. ' + ', '.join(diff) + ')' if diff else ' (order)'}", "D253")
    n = len(features)
    weights, mean, scale = (_vector(doc, k, n, p) for k in ("weights", "mean", "scale"))
    if (scale <= 0).any():
        raise _bad(p, "field 'scale' holds a zero or negative value", "D257")
    bias = _number(doc, "bias", p, -1e6, 1e6)
    threshold = _threshold(doc, "threshold", p)
    threshold_long = _threshold(doc, "threshold_long", p)
    if doc["version"] >= 5:
        if "threshold_name" not in doc:
            raise _bad(p, "lacks the field(s) threshold_name", "D251")
        threshold_name = _threshold(doc, "threshold_name", p)
    else:  # layout 4: one short threshold for both kinds of anchor
        threshold_name = threshold
    long_distance = _number(doc, "long_distance", p, 1, 1e9)
    if not long_distance.is_integer():  # a number of sentences; not cut to an integer in silence
        raise _bad(p, f"field 'long_distance' must be a whole number of sentences, got {doc['long_distance']!r}",
                   "D256")
    for key in ("recipe", "figures"):
        if not isinstance(doc.get(key) or {}, dict):
            raise _bad(p, f"field '{key}' must be an object (name: value), got {type(doc[key]).__name__}", "D251")
    if not isinstance(doc["long_full_only"], bool):
        raise _bad(p, f"field 'long_full_only' must be true or false, got {doc['long_full_only']!r}", "D258")
    recipe = doc.get("recipe") or {}
    if "parser" in recipe and not isinstance(recipe["parser"], bool):  # "false" would read as trained with one
        raise _bad(p, f"field 'recipe.parser' must be true or false (whether the model was trained with a "
                      f"dependency parser), got {recipe['parser']!r}", "D330")
    if threshold_long < min(threshold, threshold_name):  # the training protocol never chooses one
        raise _bad(p, f"field 'threshold_long' is {threshold_long:g}, below both short thresholds (threshold "
                      f"{threshold:g}, threshold_name {threshold_name:g}): the longest distances would be certified "
                      "at a lower confidence than any shorter one, which the training protocol never chooses", "D331")
    return CertifyModel(weights=weights, mean=mean, scale=scale, bias=bias, threshold=threshold,
                        threshold_long=threshold_long, threshold_name=threshold_name, long_distance=int(long_distance),
                        long_full_only=doc["long_full_only"], version=int(doc["version"]),
                        path=str(p), sha256=hashlib.sha256(raw).hexdigest(), recipe=dict(doc.get("recipe") or {}),
                        figures=dict(doc.get("figures") or {}))


_T = TypeVar("_T")


def load_once(cache: dict[tuple[str, int, int], _T], path: Path, load: Callable[[], _T]) -> _T:
    """``load()``, kept in ``cache`` per version of the file at ``path`` (its path, mtime and size;
    a file that cannot be stat'ed is one version): a changed file is loaded again."""
    try:
        st = path.stat()
        key = (str(path), st.st_mtime_ns, st.st_size)
    except OSError:
        key = (str(path), -1, -1)
    if key not in cache:
        cache[key] = load()
    return cache[key]


_MODELS: dict[tuple[str, int, int], CertifyModel] = {}


def certify_model(name: str | None, features: tuple[str, ...]) -> CertifyModel:
    """The checked model ``name`` names (default: the shipped one), loaded once per file version per process."""
    path = certify_model_path(name)
    return load_once(_MODELS, path, lambda: load_certify_model(path, features))
