"""DDP profiling: segment table → spaCy token arrays → anchors → distances → DDP.

Public entry points: :func:`profile` (segment-level DDP as a polars DataFrame),
:func:`profile_anchors` (segments, anchors, sentences and the run signature),
:func:`summarize` (per-domain table) and :func:`explain` (why one segment has its DDP).

Units: ``sentence`` and ``distance_sentences`` count sentences over the whole document
(0..K-1); a segment's ``ddp`` is the maximum anchor distance of its sentences, in
sentences (0 when it has none).
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import numbers
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from . import schema
from .anchors.rules import KIND_NAMES, RuleSet, get_rules  # noqa: F401  (KIND_NAMES re-exported)
from .errors import DDPDataError, DDPUsageError
from .io.segments import ROW, SegmentColumns, read_segments
from .pipeline.extract import head_noun_source
from .signature import run_signature

if TYPE_CHECKING:
    import polars as pl

Distance = Literal["chained", "nearest"]
SentenceUnit = Literal["sentence", "segment"]


@dataclass(frozen=True)
class ProfileResult:
    """Output of :func:`profile_anchors`.

    ``segments``: one row per input segment, input order (``document_id, segment_id,
    domain, n_sentences, n_tokens, n_anchors, ddp, first_sentence`` + extra input columns);
    ``anchors``: one row per anchor (entity mention or pronoun), document order;
    ``sentences``: one row per sentence (``document_id, segment_id, sentence,
    sentence_ddp``); ``signature``: settings and versions that reproduce the run.
    """

    segments: pl.DataFrame
    anchors: pl.DataFrame
    sentences: pl.DataFrame
    signature: dict[str, Any] = field(default_factory=dict)

    def summary(self, by: str | None = None) -> pl.DataFrame:
        return summarize(self.segments, by=by or self.signature.get("columns", {}).get("domain", schema.DOMAIN),
                         document_col=self.signature.get("columns", {}).get("document", schema.DOCUMENT_ID))

    def signature_json(self) -> str:
        return json.dumps(self.signature, sort_keys=True)


@dataclass(frozen=True)
class ProfileOptions:
    """The less common settings of :func:`profile_anchors` (each named as its ``ddp profile`` flag).

    ``distance``: ``"chained"`` measures an anchor back to its entity's first mention, ``"nearest"``
    to the most recent previous mention (ablation; ``--distance``). ``sentence_unit``: ``"segment"``
    counts every input segment as one sentence unit (spaCy's pieces of a segment share its index),
    to align with gold sentences (Python only: ``ddp validate`` uses it; the CLI has no flag). ``reader``, ``docs``, ``txt_mode``: the input
    reader (``"table"|"wmt24"|"wmt25"|"lines"``), the ``.docs`` file of ``wmt24``/``lines`` and the
    ``.txt`` folder mode (``"lines"|"paragraphs"``), as :func:`ddpcore.io.sources.iter_input_chunks`
    (hard-wrapped text warns with ``warnings.warn``). ``n_threads``: threads of the distance kernel.
    ``batch_size``: texts per spaCy batch. ``progress``: a progress bar on stderr while parsing.
    ``source_name``: the input's name in error messages (default: the path, or ``<table>``); the signature
    of an in-memory run has no ``input`` (nor ``batches``/``n_process``: the keys only a ``ddp profile`` file
    run records), but it records the ``reader`` settings as ``ddp profile`` does.
    ``engine``: ``"local"`` or ``"ray"`` (the same stages on Ray actors, ``pip install '.[ray]'``:
    ``n_process`` is then the number of actors, ``"auto"`` the cluster's CPUs; ``address`` the Ray
    cluster, default ``$RAY_ADDRESS``, else a local Ray; ``nlp``, ``progress``, ``n_threads`` and the
    parse cache are not used; :mod:`ddpcore.engines.ray_engine`).
    """

    distance: Distance = "chained"
    sentence_unit: SentenceUnit = "sentence"
    reader: str = "table"
    docs: str | os.PathLike[str] | None = None
    txt_mode: str = "lines"
    n_threads: int = 1
    batch_size: int = 256
    progress: bool = False
    source_name: str | None = None
    engine: Literal["local", "ray"] = "local"
    address: str | None = None


def profile_anchors(
    source: Any,
    *,
    document_col: str = schema.DOCUMENT_ID,
    segment_col: str = schema.SEGMENT_ID,
    text_col: str = schema.SOURCE,
    domain_col: str = schema.DOMAIN,
    rules: str | RuleSet | None = None,
    pipeline: str | None = None,
    nlp: Any = None,
    n_process: int | str = 1,
    cache: str | os.PathLike[str] | bool | None = None,
    options: ProfileOptions | None = None,
) -> ProfileResult:
    """Profile discourse dependency of every segment of ``source``.

    Parameters
    ----------
    source : path | folder | polars/pandas DataFrame | pyarrow Table
        Segment table (``document_col``, ``segment_col`` ids and ``text_col``; optional
        ``domain_col``) or a folder of ``.txt`` documents (blank line = segment boundary); any input
        of ``options.reader``.
    document_col, segment_col, text_col, domain_col : str
        Column names (``--document-col`` ... of ``ddp profile``).
    rules : str | RuleSet, optional
        Anchor rule set: ``"refined"`` (the default), ``"paper"``, ``"refined-names"`` or ``"learned"``.
    pipeline : str, optional
        spaCy pipeline preset (``default``/``sm``, ``fast``: no parser, ``md``) or any installed
        name/path.
    nlp : spacy.Language, optional
        An already loaded pipeline: it parses when ``n_process == 1``, and forked workers (the
        Linux default) parse with it too; spawned workers load ``pipeline`` by name instead.
    n_process : int | "auto"
        spaCy worker processes (``"auto"``: every available core for inputs of at least
        50,000 characters with forked workers, the Linux default, or 150,000 with spawned ones,
        else 1; :data:`ddpcore.engines.run.AUTO_MIN_CHARS`).
    cache : path | bool, optional
        Parse cache: ``None``/``True`` the default folder (``$DDPCORE_CACHE``, else
        ``$XDG_CACHE_HOME/ddpcore``, else ``~/.cache/ddpcore``), a path another folder,
        ``False`` none. Cached lines are not parsed again (``signature["cache"]`` counts them).
    options : ProfileOptions, optional
        Distance mode, sentence unit, reader, threads, batch size, progress, engine.
    """
    from .engines.local import Settings

    o = options if options is not None else ProfileOptions()
    if not isinstance(o, ProfileOptions):
        raise TypeError(f"options must be a ddpcore.api.ProfileOptions, not {type(o).__name__}")
    if o.distance not in ("chained", "nearest"):
        raise DDPUsageError(f"distance must be 'chained' or 'nearest', not {o.distance!r}", code="D205")
    if o.sentence_unit not in ("sentence", "segment"):
        raise DDPUsageError(f"sentence_unit must be 'sentence' or 'segment', not {o.sentence_unit!r}", code="D206")
    _check_n_process(n_process)
    _check_cache(cache)
    if isinstance(o.n_threads, bool) or not isinstance(o.n_threads, numbers.Integral):
        raise DDPUsageError(f"n_threads must be a whole number of threads (0 or less: OpenMP's default), "
                            f"not {o.n_threads!r}", code="D263")
    ruleset = get_rules(rules)  # a bad rules or weights file first (D24x), before anything is loaded
    if nlp is not None and not (callable(getattr(nlp, "pipe", None)) and hasattr(nlp, "max_length")):
        raise DDPUsageError(f"nlp must be a loaded spaCy pipeline (spacy.load(...)), not {type(nlp).__name__} "
                            f"{nlp!r:.60}; name an installed pipeline with pipeline= instead", code="D264")
    cols = SegmentColumns(document_col, segment_col, text_col, domain_col)
    name = o.source_name or (str(source) if isinstance(source, (str, os.PathLike)) else "<table>")
    if o.engine != "local":
        from .engines.ray_engine import engine_arg, profile_frame_ray

        engine_arg(o.engine)  # D192, before the input is read
        frame = _read(source, cols, o)
        replaced = {**_replaced(frame, cols, name), **_invisible(frame, cols, name, source)}
        seg_r, anc_r, sent_r, sig_r = profile_frame_ray(
            frame, cols=cols, pipeline=pipeline, n_actors=n_process, address=o.address,
            settings=Settings(distance=o.distance, sentence_unit=o.sentence_unit, rules=ruleset),
            batch_size=o.batch_size, source_name=name)
        reader = _reader_signature(source, o)
        return ProfileResult(segments=seg_r, anchors=anc_r, sentences=sent_r,
                             signature={**sig_r, **replaced, **({"reader": reader} if reader is not None else {})})
    settings = Settings(distance=o.distance, sentence_unit=o.sentence_unit, rules=ruleset, n_threads=int(o.n_threads))
    frame = _read(source, cols, o)
    replaced = {**_replaced(frame, cols, name), **_invisible(frame, cols, name, source)}
    result = _profile_local(frame, cols, settings, _Parse(pipeline, n_process, o.batch_size, o.progress, nlp, cache),
                            name, reader=_reader_signature(source, o))
    return dataclasses.replace(result, signature={**result.signature, **replaced}) if replaced else result


def _replaced(frame: pl.DataFrame, cols: SegmentColumns, name: str) -> dict[str, Any]:
    """The input columns the segment table replaces (an input that is itself a profile), said with
    ``warnings.warn`` as ``ddp profile`` says them on stderr; returns their signature entry (empty when none)."""
    replaced = schema.replaced_columns(frame.columns, cols)
    if replaced:
        warnings.warn(schema.replaced_note(name, replaced), UserWarning, stacklevel=3)
    return {schema.REPLACED_COLUMNS: replaced} if replaced else {}


def _invisible(frame: pl.DataFrame, cols: SegmentColumns, name: str, source: Any) -> dict[str, Any]:
    """The segments with a line that starts or ends with invisible characters, which the parse leaves out, and
    those the parse reads in another form (:func:`ddpcore.io.segments.normalised_text`), said with
    ``warnings.warn`` as ``ddp profile`` says them on stderr; returns their signature entries (empty when
    none). The row is named for an input file (an in-memory table may be a selection of the caller's)."""
    from .io.segments import invisible_edges, normalised_text

    out: dict[str, Any] = {}
    entry = invisible_edges(frame, cols, rows=isinstance(source, (str, os.PathLike)))
    if entry is not None:
        warnings.warn(schema.invisible_edges_note(name, entry, cols.text), UserWarning, stacklevel=3)
        out[schema.INVISIBLE_EDGES] = entry
    forms = normalised_text(frame, cols, rows=isinstance(source, (str, os.PathLike)))
    if forms is not None:  # the segments the parse reads in another form (NFC, invisible characters inside a line)
        warnings.warn(schema.normalised_text_note(name, forms, cols.text), UserWarning, stacklevel=3)
        out[schema.NORMALISED_TEXT] = forms
    return out


def _check_n_process(n_process: Any) -> None:
    """``n_process``: ``"auto"`` or a whole number >= 1 (an int, or its digits as text), else D207
    (``int()`` would have raised a bare ValueError, or truncated ``2.5`` and taken ``True`` as 1)."""
    if n_process == "auto":
        return
    ok = (isinstance(n_process, numbers.Integral) and not isinstance(n_process, bool)) or (
        isinstance(n_process, str) and n_process.strip().isascii() and n_process.strip().isdigit())
    if not ok or int(n_process) < 1:
        raise DDPUsageError(f"n_process must be 'auto' or a whole number of processes >= 1, not {n_process!r}",
                            code="D207")


def _check_cache(cache: Any) -> None:
    """``cache``: None, True, False or a folder (str / os.PathLike), else D262."""
    if cache is None or isinstance(cache, (bool, str, os.PathLike)):
        return
    raise DDPUsageError(f"cache must be None/True (the default folder), False (no cache) or a folder path, "
                        f"not {type(cache).__name__} {cache!r}", code="D262")


def _reader_signature(source: Any, o: ProfileOptions) -> dict[str, Any] | None:
    """The signature's ``reader`` key, as ``ddp profile`` records it: the reader, its ``.docs`` file and
    the ``.txt`` folder mode when not the defaults (None for the default table reader)."""
    if o.reader == "table" and o.txt_mode == "lines":
        return None
    from .io.sources import resolve_docs

    docs = resolve_docs(source, o.reader, o.docs)
    return {"name": o.reader, "docs": None if docs is None else str(docs), "txt_mode": o.txt_mode}


@dataclass(frozen=True)
class _Parse:
    """How :func:`_profile_local` parses: the ``pipeline``, ``n_process``, ``batch_size``, ``progress``,
    ``nlp`` and ``cache`` arguments of :func:`profile_anchors`."""

    pipeline: str | None
    n_process: int | str
    batch_size: int
    progress: bool
    nlp: Any
    cache: Any


def _profile_local(frame: pl.DataFrame, cols: SegmentColumns, settings: Any, how: _Parse, name: str,
                   reader: dict[str, Any] | None = None) -> ProfileResult:
    """The local in-memory run: ``frame`` (validated, with ``ROW``) in batches through
    :func:`ddpcore.engines.local.iter_profile`; tables concatenated, segments back in input order.
    The signature records the ``reader`` settings (when not the defaults) as ``ddp profile``'s does."""
    import polars as pl

    from .pipeline.cache import cache_wrapper
    from .engines.local import BATCH_CHARS, batches_from_frame, iter_profile, order_segments
    from .pipeline.parse import Parser, resolve_start_method
    from .engines.run import resolve_n_process

    df = order_segments(frame, cols)
    n_process = resolve_n_process(how.n_process, int(df[cols.text].str.len_chars().sum()))
    bar = None
    if how.progress:
        from tqdm.auto import tqdm

        from .io.sources import unit_counts

        n_units = int(unit_counts(df[cols.text]).sum())  # as the parse counts them (a lone CR breaks a line)
        bar = tqdm(total=n_units, unit="line", desc="parsing", leave=False, mininterval=0.5)
    tick: Callable[[int], None] | None = bar.update if bar is not None else None
    seg_parts, anc_parts, sent_parts = [], [], []
    try:
        # a caller's loaded pipeline parses in this process, and in forked workers (which share it);
        # spawned workers load the pipeline by name
        with Parser(how.pipeline, n_process=n_process, batch_size=how.batch_size,
                    nlp=how.nlp if (n_process == 1 or resolve_start_method() == "fork") else None) as parser:
            wrapper = cache_wrapper(how.cache)
            cached = wrapper(parser) if wrapper is not None else None
            for res in iter_profile(batches_from_frame(df, cols, BATCH_CHARS), parser, settings,
                                    source_name=name, progress=tick, parse=cached):
                seg_parts.append(res.segments)
                anc_parts.append(res.anchors)
                sent_parts.append(res.sentences)
            info = parser.info()
            if cached is not None:
                cached.flush()
    finally:
        if bar is not None:
            bar.close()
    signature = run_signature(info, settings, cols, head_nouns=head_noun_source(info),
                              extra={**({"reader": reader} if reader is not None else {}),
                                     **(cached.signature() if cached is not None else {})},
                              warn=lambda m: warnings.warn(m, UserWarning, stacklevel=4))
    return ProfileResult(segments=pl.concat(seg_parts).sort(ROW).drop(ROW), anchors=pl.concat(anc_parts),
                         sentences=pl.concat(sent_parts), signature=signature)


def _read(source: Any, cols: SegmentColumns, o: ProfileOptions) -> pl.DataFrame:
    """The validated input (:func:`ddpcore.io.sources.read_input`); wrapped-text warnings go to ``warnings``."""
    import warnings

    from .io.sources import read_input

    # said as ddp profile says them on stderr: wrapped text, a domain_col= that names no column
    def warn(m: str) -> None:
        warnings.warn(m, UserWarning, stacklevel=5)

    if o.reader == "table" and o.docs is None and o.txt_mode == "lines" and not (
            isinstance(source, (str, os.PathLike)) and os.path.isdir(source)):
        return read_segments(source, cols, warn=warn)
    return read_input(source, cols, reader=o.reader, docs=o.docs, txt_mode=o.txt_mode, warn=warn)


def profile(source: Any, **kwargs: Any) -> pl.DataFrame:
    """Segment-level DDP of ``source`` (one row per input segment): ``profile_anchors(source, ...).segments``,
    with the same keyword arguments (see :func:`profile_anchors`)."""
    return profile_anchors(source, **kwargs).segments


# help(ddpcore.profile) and inspect show profile_anchors' keywords, not **kwargs; calls are checked by it
profile.__signature__ = inspect.signature(profile_anchors).replace(  # type: ignore[attr-defined]
    return_annotation="pl.DataFrame")


def summarize(segments: Any, *, by: str | None = schema.DOMAIN,
              document_col: str = schema.DOCUMENT_ID) -> pl.DataFrame:
    """Per-group DDP summary of a segment table: documents, segments, mean / median / p90 /
    max DDP (sentences) and the share of zero-DDP segments (``mean_ddp`` ... ``zero_ddp_share``), then,
    when the table has ``ddp_certified`` (every ``ddp profile`` output), the same five figures of the
    certified lower bound (``mean_ddp_certified``, ``median_ddp_certified``, ``p90_ddp_certified``,
    ``max_ddp_certified``, ``zero_ddp_certified_share``), plus an ``all`` row, always the last (the
    total; labelled ``(all)`` when a group is itself named ``all``, so that no two rows share a name:
    :func:`ddpcore.pipeline.summary.distinct_label`). ``by``: the
    column to group by (``None``: only the ``all`` row; the default ``"domain"`` when the table
    has no such column: only the ``all`` row; any other column the table lacks: D137, as
    ``ddp profile --summary-by``); ``document_col``: the document id column.

    ``segments``: a profiled segment table (``ddp`` and ``document_col`` columns) as a polars,
    pandas or pyarrow table, a polars LazyFrame or the path of a ``ddp profile`` output (its signature's
    document and domain columns are the defaults of ``document_col`` and ``by`` there). DDP values
    are whole numbers of sentences: a ``ddp`` (or ``ddp_certified``) column that is not numeric, or holds
    fractions or NaN, is refused (D260) rather than truncated; a null DDP counts as a segment but not as a value.

    Quantiles use linear interpolation (numpy's default). The same computation as ``ddp profile``'s
    summary, which it builds batch by batch (:class:`ddpcore.pipeline.summary.SummaryAccumulator`).
    """
    import polars as pl

    from .io.profiles import profile_columns, read_profile_table, read_signature
    from .io.tables import read_table, require_columns
    from .pipeline.summary import SummaryAccumulator

    if isinstance(segments, (str, os.PathLike)):  # the ids as written, with or without the sidecar (007 is not 7)
        # the document and domain columns the output's signature records (`ddp profile --document-col doc
        # --domain-col genre`), unless named here: as every command that reads a profile back
        cols = profile_columns(read_signature(segments),
                               document=None if document_col == schema.DOCUMENT_ID else document_col)
        df = read_profile_table(segments, cols)
        document_col = cols.document
        by = cols.domain if by == schema.DOMAIN and cols.domain in df.columns else by
    else:
        df = segments if isinstance(segments, pl.DataFrame) else read_table(segments)
    name = str(segments) if isinstance(segments, (str, os.PathLike)) else "<table>"
    if schema.DDP not in df.columns:
        raise DDPDataError(f"{name}: no '{schema.DDP}' column, so not a profiled segment table; summarize the "
                           f"output of ddpcore.profile (available columns: {', '.join(df.columns)})", code="D260")
    require_columns(df, [document_col], name, flags={document_col: "document_col="})
    for column in (c for c in schema.DDP_COLUMNS if c in df.columns):  # ddp, and ddp_certified when there
        ddp = df[column]
        if ddp.dtype.is_float():
            if not bool(((ddp.is_nan() | (ddp != ddp.round(0))).fill_null(False)).any()):
                ddp = None  # whole numbers stored as floats (e.g. a pandas column with nulls)
        elif ddp.dtype.is_integer() or ddp.dtype == pl.Null:
            ddp = None
        if ddp is not None:
            found = (f"{ddp.dtype} values that are not (e.g. {_first_bad_ddp(ddp)!r})" if ddp.dtype.is_float()
                     else f"{ddp.dtype} values")
            raise DDPDataError(f"{name}, column '{column}': expected whole numbers of sentences, found {found}; "
                               "summarize the output of ddpcore.profile", code="D260")
    if by is not None and by not in df.columns and by != schema.DOMAIN:
        raise DDPUsageError(f"summarize(by={by!r}): no such column in {name}; available columns: "
                            f"{', '.join(df.columns)}", code="D137")
    if by is not None and by in df.columns and (df[by].dtype.is_nested() or df[by].dtype == pl.Object):
        raise DDPUsageError(f"summarize(by={by!r}): the column holds {df[by].dtype} values; group by a column "
                            "of text, numbers or categories", code="D137")
    return SummaryAccumulator(by, document_col).add(df).table()


def _first_bad_ddp(col: pl.Series) -> Any:
    """The first value of a float ``ddp`` column that is not a whole number (for D260's message)."""
    bad = col.filter((col.is_nan() | (col != col.round(0))).fill_null(False))
    return bad[0] if bad.len() else None
