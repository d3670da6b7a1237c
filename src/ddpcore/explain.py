"""``explain``: why one segment has its DDP (its anchors, antecedents and distances)."""
from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import schema
from .errors import DDPDataError
from .io.segments import ROW, SegmentColumns
from .api import ProfileOptions, profile_anchors
from .schema import SIGNATURE_KEY
from .signature import json_safe

if TYPE_CHECKING:
    import polars as pl


@dataclass(frozen=True)
class ExplainResult:
    """Why one segment has its DDP: its anchors, antecedents and distances.

    ``anchors`` has the columns of the anchors table for this segment only; ``ddp`` is the
    segment DDP in sentences; sentences are numbered over the whole document.
    """

    document: str
    segment: str
    ddp: int
    #: the segment's certified DDP (max over its certified anchors); None when the run certifies nothing
    ddp_certified: int | None
    n_sentences: int
    first_sentence: int
    text: str
    anchors: pl.DataFrame
    signature: dict[str, Any]
    #: where recorded settings were taken from (Parquet file or ``.signature.json`` sidecar), if anywhere
    settings_from: str | None = None
    #: the settings taken from that signature (not given by the caller), e.g. ``{"rules": "paper"}``
    inherited: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON-safe values (:func:`ddpcore.signature.json_safe`: an anchor's NaN
        ``confidence``, the one of an anchor the model does not score, becomes ``None``), so that
        ``json.dumps(result.to_dict())`` (``ddp explain -f json``) is valid JSON."""
        return json_safe({
            "document": self.document,
            "segment": self.segment,
            "ddp": self.ddp,
            "ddp_certified": self.ddp_certified,
            "n_sentences": self.n_sentences,
            "first_sentence": self.first_sentence,
            "anchors": self.anchors.to_dicts(),
            "signature": self.signature,
            "settings_from": self.settings_from,
            "inherited": self.inherited,
        })

    def to_text(self) -> str:
        """A readable table; ``*`` marks the anchors that set the segment's DDP."""
        last = self.first_sentence + self.n_sentences - 1
        cert = self.signature.get("certify") or {}
        head = f"document {self.document!r}, segment {self.segment!r}: DDP = {self.ddp} sentence(s)"
        if self.ddp_certified is not None:
            short = (f">= {cert.get('threshold')}" if cert.get("threshold_name") in (None, cert.get("threshold"))
                     else f">= {cert.get('threshold')} (pronouns) / {cert.get('threshold_name')} (names)")
            head += (f"; certified DDP = {self.ddp_certified} (model {cert.get('file')}, an anchor is certified at "
                     f"confidence {short}, >= {cert.get('threshold_long')} from "
                     f"{cert.get('long_distance')} sentences)")
        lines = [
            head,
            f"sentences {self.first_sentence}..{last} of the document; distance mode "
            f"{self.signature.get('distance')}, rules {self.signature.get('rules')}",
            "",
        ]
        if self.anchors.height == 0:
            lines.append("no anchors (no named-entity re-mention or 3rd-person pronoun): DDP = 0")
            return "\n".join(lines)
        for row in self.anchors.iter_rows(named=True):  # display only: a handful of rows
            d = row[schema.DISTANCE_SENTENCES]
            mark = "*" if d == self.ddp and d > 0 else " "
            what = f"{row[schema.KIND]} {row[schema.LABEL]}"
            if row[schema.ANTECEDENT_KIND] == "first_mention":
                why = "first mention of this entity: no distance"
            elif row[schema.ANTECEDENT_KIND] == "none":
                why = "no compatible antecedent before it: distance 1"
            else:
                why = (f"-> {row[schema.ANTECEDENT_KIND]} {row[schema.ANTECEDENT_TEXT]!r} "
                       f"(sentence {row[schema.ANTECEDENT_SENTENCE]})")
                if row[schema.REFERENCE_SENTENCE] != row[schema.ANTECEDENT_SENTENCE]:
                    why += f", entity first mentioned in sentence {row[schema.REFERENCE_SENTENCE]}"
                why += f": {row[schema.SENTENCE]} - {row[schema.REFERENCE_SENTENCE]} = {d}"
            if schema.CERTIFIED in row and d > 0:
                why += _parse_evidence(row)
                thr = _threshold_of(cert, d, row[schema.KIND])
                conf = row[schema.CONFIDENCE]
                part = row.get(schema.DISTANCE_CERTIFIED)
                shown = _confidence_text(conf, thr)
                if row[schema.CERTIFIED]:
                    why += f"; certified (confidence {shown} >= {thr})"
                elif part:  # partial credit: a shorter, measured distance of its chain is certain
                    why += (f"; not certified (confidence {shown} < {thr}); its chain is certified back {part} "
                            "sentence(s) (partial credit in the certified DDP)")
                else:
                    why += f"; not certified (confidence {shown} < {thr}: abstains from the certified DDP)"
            lines.append(f"{mark} s{row[schema.SENTENCE]:<5} {row[schema.TEXT]!r:<24} {what:<18} {why}")
        return "\n".join(lines)


def _threshold_of(cert: dict[str, Any], distance: int, kind: str) -> float | None:
    """The confidence an anchor of ``kind`` needs for a full distance of ``distance`` sentences under the
    signature's model ``cert``: ``threshold_long`` from ``long_distance`` sentences, else ``threshold`` for
    a pronoun and ``threshold_name`` for a name (a layout-4 model's signature has one: ``threshold``)."""
    if distance >= (cert.get("long_distance") or 0):
        return cert.get("threshold_long")
    if kind == "pronoun" or cert.get("threshold_name") is None:
        return cert.get("threshold")
    return cert.get("threshold_name")


def _confidence_text(conf: float, threshold: float | None) -> str:
    """``conf`` to 3 decimals, or as many more (up to 9) as it takes to stay on its side of ``threshold``
    (0.93996 against 0.94 reads "0.93996 < 0.94", not "0.940 < 0.94")."""
    if threshold is None or conf != conf:
        return f"{conf:.3f}"
    above = conf >= threshold
    for k in range(3, 10):
        text = f"{conf:.{k}f}"
        if (float(text) >= threshold) == above:
            return text
    return repr(float(conf))


def _parse_evidence(row: dict[str, Any]) -> str:
    """What the parse says of an anchor's link, as the certification model reads it (profiles made before
    the parse columns existed have none): the anchor's role, its antecedent's, and for a pronoun how many
    compatible candidates it had to choose from."""
    role = row.get(schema.ROLE)
    if role is None:
        return ""
    out = f" [{role}"
    ante = row.get(schema.ANTECEDENT_ROLE)
    if ante not in (None, "none"):
        out += f" -> {ante}"
    n = row.get(schema.N_CANDIDATES)
    if n is not None:
        out += f"; {n} compatible candidate{'' if n == 1 else 's'} in reach"
    return out + "]"


#: the reader settings of ``explain`` (``ddp explain --reader/--docs/--txt-mode``)
READER_KEYS = ("reader", "docs", "txt_mode")
#: keywords of :func:`ddpcore.api.profile_anchors` that ``explain`` passes on as given
PROFILE_KEYS = ("document_col", "segment_col", "text_col", "domain_col", "rules", "pipeline", "nlp", "n_process",
                "cache")
#: :class:`ddpcore.api.ProfileOptions` fields that ``explain`` takes flat (the reader's are read apart)
OPTION_KEYS = ("distance", "sentence_unit", "n_threads", "batch_size", "progress")


def _document_rows(df: pl.DataFrame, cols: SegmentColumns, document: Any, segment: Any) -> pl.DataFrame:
    """The rows of ``document`` in ``df`` (ids matched as strings): D116 when the document is not
    there, D117 when it has no segment ``segment`` (both name a few ids that are there)."""
    import polars as pl

    sub = df.filter(pl.col(cols.document).cast(pl.String) == str(document))
    if sub.height == 0:
        ids = df[cols.document].unique(maintain_order=True)
        sample = ", ".join(map(str, ids.head(5).to_list()))
        raise DDPDataError(f"document {document!r} not found in column '{cols.document}' ({len(ids)} documents, "
                           f"the first: {sample})", code="D116")
    if sub.filter(pl.col(cols.segment).cast(pl.String) == str(segment)).height == 0:
        sample = ", ".join(map(str, sub[cols.segment].head(10).to_list()))
        more = f"{sub.height} segments, the first 10: " if sub.height > 10 else f"{sub.height} segment(s): "
        raise DDPDataError(
            f"segment {segment!r} not found in document {document!r} (column '{cols.segment}'; {more}{sample})",
            code="D117",
        )
    return sub


def _in_run_order(df: pl.DataFrame, cols: SegmentColumns, document: Any) -> tuple[pl.DataFrame, pl.Series | None]:
    """The rows of ``document`` in ``df`` (the whole input), to be profiled alone in the segment order a run
    over the whole input gives them. A run decides on the whole input whether text segment ids sort
    numerically (every id parses as an integer) or keep input order
    (:func:`ddpcore.engines.local.segment_keys`); the document alone may decide otherwise (its ids all parse
    where another document's do not), and a different order is a different sentence numbering, so a different
    DDP. Then its segment ids are replaced by their ranks in the run's order (which the profile of the document
    alone sorts as the run does) and the ids are returned, in that order, for :func:`_run_ids_back`;
    otherwise the rows as they are and ``None``."""
    import polars as pl

    from .engines.local import segment_keys

    key = "__run_key"
    whole = df.with_row_index(ROW)
    whole = whole.with_columns(segment_keys(whole, cols).alias(key))
    doc = whole.filter(pl.col(cols.document).cast(pl.String) == str(document))
    run = doc.sort(key, ROW)
    alone = doc.with_columns(segment_keys(doc, cols).alias(key)).sort(key, ROW)
    if run[ROW].equals(alone[ROW]):
        return doc.drop(ROW, key), None
    return (run.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias(cols.segment)).drop(ROW, key),
            run[cols.segment])


def _run_ids_back(frame: pl.DataFrame, seg_col: str, run_ids: pl.Series | None) -> pl.DataFrame:
    """``frame`` (a table of the profile of :func:`_in_run_order`'s rows) with the segment ranks replaced by
    the segment ids ``run_ids`` (unchanged when ``None``)."""
    if run_ids is None or seg_col not in frame.columns:
        return frame
    return frame.with_columns(run_ids.gather(frame[seg_col]).alias(seg_col))


def _profile_arguments(opts: dict[str, Any], named: bool = True) -> tuple[dict[str, Any], ProfileOptions]:
    """``opts`` (flat) as :func:`ddpcore.api.profile_anchors` keywords and its :class:`ProfileOptions`;
    ``certify_model`` becomes the rule set with that certification model (checked before the parse), ``named``
    by the caller (kept by a pipeline without a parser, ``RuleSet.certify_model_named``) unless it was taken
    from the output's signature (then replaced again as the run replaced it)."""
    opts = dict(opts)
    certify_model = opts.pop("certify_model", None)
    if certify_model is not None:
        import dataclasses

        from .anchors.rules import get_rules

        opts["rules"] = get_rules(dataclasses.replace(get_rules(opts.get("rules")), certify_model=certify_model,
                                                      certify_model_named=named))
    unknown = sorted(set(opts) - set(PROFILE_KEYS) - set(OPTION_KEYS))
    if unknown:
        raise TypeError(f"explain() got unexpected keyword argument(s) {', '.join(unknown)}")
    return ({k: v for k, v in opts.items() if k in PROFILE_KEYS},
            ProfileOptions(**{k: v for k, v in opts.items() if k in OPTION_KEYS}))


def _inherit(sig: dict[str, Any], opts: dict[str, Any], read_opts: dict[str, Any], output: Any) -> dict[str, Any]:
    """Fill ``opts`` (profile settings) and ``read_opts`` (reader settings), in place, with what the
    signature ``sig`` of ``output`` records for every key the caller did not give; returns what was taken."""
    inherited: dict[str, Any] = {}
    recorded = {f"{key}_col": sig.get("columns", {}).get(key) for key in ("document", "segment", "text", "domain")}
    recorded.update(distance=sig.get("distance"), rules=sig.get("rules"), sentence_unit=sig.get("sentence_unit"))
    pipe = sig.get("pipeline")
    recorded["pipeline"] = None if pipe in (None, "default") else pipe
    recorded["certify_model"] = _recorded_certify_model(sig, output) if "certify_model" not in opts else None
    for key, value in recorded.items():
        if key not in opts and value is not None:
            opts[key] = inherited[key] = value
    rec = sig.get("reader") or {}
    for key, value in (("reader", rec.get("name")), ("docs", rec.get("docs")), ("txt_mode", rec.get("txt_mode"))):
        if key not in read_opts and value is not None:
            read_opts[key] = inherited[key] = value
    return inherited


def _recorded_certify_model(sig: dict[str, Any], output: Any) -> str | None:
    """The certification model the signature ``sig`` of ``output`` records: a packaged one by its name (a
    model the run put in place of another for a pipeline without a parser: the one it replaced, which the
    same pipeline replaces again), a file of the user's where it is found with the recorded sha256 (as
    recorded, relative to the working folder, or beside ``output``); ``None`` when none is recorded. A
    user's file that is not found (or differs) is a warning: ``ddp_certified`` is then explained with the
    default model and may differ from the output's; ``--certify-model PATH`` names the file."""
    import hashlib

    from .anchors.certify_model import DATA_DIR

    cert = sig.get("certify") or {}
    replaced, name, sha = cert.get("replaces"), cert.get("file"), cert.get("sha256")
    if isinstance(replaced, str) and replaced and (DATA_DIR / replaced).is_file():
        return replaced
    if not isinstance(name, str) or not name:
        return None

    def sha_of(path: Path) -> str | None:
        try:
            return hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            return None

    if (DATA_DIR / name).is_file() and (not sha or sha_of(DATA_DIR / name) == sha):
        # a run without a parser that kept a packaged model (named by its path): by its path again, which
        # the same pipeline keeps too (by its bare name the default would be replaced by the parser-free one)
        return str(DATA_DIR / name) if cert.get("pipeline_has_parser") is False else name
    found = _locate(name, output)
    if found is not None and found.is_file() and (not sha or sha_of(found) == sha):
        return str(found)
    where = "differs from the recorded one" if found is not None else "is not found in the working folder or beside it"
    warnings.warn(
        f"{output}: its ddp_certified was computed with the certification model {name} (sha256 "
        f"{str(sha)[:12]}...), which {where}; the certified DDP below uses the default model and may differ from "
        "the output's: pass --certify-model PATH to use the recorded model", stacklevel=3)
    return None


def _locate(recorded: str, output: Any) -> Path | None:
    """A path recorded in an output's signature: as recorded (relative to the working folder), else
    relative to the output's folder, else beside the output by its name; None when none exists."""
    rec = Path(recorded)
    base = Path(output).parent
    for cand in (rec, base / rec, base / rec.name):
        if cand.exists():
            return cand
    return None


def _recorded_input(output: Any, sig: dict[str, Any], table: pl.DataFrame, cols: SegmentColumns,
                    read_opts: dict[str, Any], document: Any) -> pl.DataFrame:
    """The segments of the input recorded in ``sig``, read with ``read_opts``; checked against the
    output's own rows of ``document`` (the same segment ids)."""
    import polars as pl

    from .io.sources import read_input

    name = sig.get("input")
    where = _locate(str(name), output) if name and name != "<table>" else None
    if where is None:
        raise DDPDataError(
            f"{output}: has no text column '{cols.text}' to re-parse, and its input {name!r} (from its signature) is "
            f"not found as recorded or beside it; run `ddp explain` on the input itself (with the reader options of "
            "the profile run)", code="D188")
    opts = dict(read_opts)
    if opts.get("docs") is not None:
        docs = _locate(str(opts["docs"]), output)
        if docs is None:
            raise DDPDataError(f"{output}: the .docs file {opts['docs']!r} of its input (from its signature) is not "
                               "found as recorded or beside it; pass it with --docs PATH", code="D188")
        opts["docs"] = docs
    df = read_input(where, cols, **opts).drop(ROW)
    key = [c for c in (cols.document, cols.segment) if c in table.columns]
    if len(key) == 2:
        mine = table.filter(pl.col(cols.document).cast(pl.String) == str(document))[cols.segment].cast(pl.String)
        theirs = df.filter(pl.col(cols.document).cast(pl.String) == str(document))[cols.segment].cast(pl.String)
        if mine.len() and sorted(mine.to_list()) != sorted(theirs.to_list()):
            raise DDPDataError(
                f"{where}: document {document!r} has {theirs.len()} segment(s) here but {mine.len()} in {output}; "
                "this is not the input the output was made from (or it was read with other reader options)",
                code="D189")
    return df


def explain(source: Any, *, document_id: Any = None, segment_id: Any = None, **kwargs: Any) -> ExplainResult:
    """Explain the DDP of segment ``segment_id`` of document ``document_id`` (ids, matched as strings).

    ``source`` is an input (a segment table or ``.txt`` folder, or any input of a ``reader=``:
    ``"wmt24"``/``"lines"`` with ``docs=``, ``"wmt25"``; ``txt_mode=`` for folders, as
    :func:`ddpcore.io.sources.read_input`), or an output of ``ddp profile``: a Parquet file
    (signature in its metadata) or a CSV/TSV/JSONL/JSON file with its ``<file>.signature.json``
    sidecar. The recorded signature supplies the distance mode, rules, pipeline, column names
    and reader settings not given in ``kwargs``: the keywords of :func:`ddpcore.profile_anchors`
    (``document_col=``, ``segment_col=``, ``text_col=``, ``domain_col=``, ``rules=``, ``pipeline=``,
    ``nlp=``, ``n_process=``, ``cache=``) and the fields of :class:`ddpcore.api.ProfileOptions`
    (``distance=``, ``reader=``, ``docs=``, ``txt_mode=``, ``batch_size=``...), given flat, plus
    ``certify_model=`` (a certification model file); ``ExplainResult.inherited`` says which settings
    came from where. The
    output's carried-through source text (what the reader made of the input) is re-parsed; an
    output without its text column is explained from the recorded input, read again with the
    recorded reader settings (found as recorded, or beside the output; D188 when it is not
    there, D189 when it does not hold the output's segments of the document). Only the
    segment's document is parsed.

    As everywhere else, ``document_col=`` and ``segment_col=`` name columns; the ids are
    ``document_id=`` and ``segment_id=`` (keywords only).
    """
    import polars as pl

    if document_id is None or segment_id is None:
        raise TypeError("explain() needs document_id= and segment_id= (the ids; document_col= and segment_col= "
                        "name the columns)")
    document, segment = document_id, segment_id

    from .io.profiles import load_signature
    from .io.tables import read_table

    opts = {k: v for k, v in kwargs.items() if v is not None}
    given = set(opts)  # what the caller set; the signature fills the rest
    table: Any = source
    mismatch: list[str] = []  # a sidecar whose data stamp does not fit the output (said with the row check)
    sig, settings_from = (load_signature(source, on_mismatch=mismatch.append) if isinstance(source, (str, os.PathLike))
                          else (None, None))
    read_opts = {k: opts.pop(k) for k in READER_KEYS if k in opts}  # how the input is read, not parse settings
    inherited = _inherit(sig, opts, read_opts, source) if sig is not None else {}
    if sig is not None:
        table = read_table(source, text_columns=(opts.get("text_col") or schema.SOURCE,),
                           key_columns=(opts.get("document_col") or schema.DOCUMENT_ID,
                                        opts.get("segment_col") or schema.SEGMENT_ID))
    opts = {k: v for k, v in opts.items() if v is not None}
    doc_col = opts.setdefault("document_col", schema.DOCUMENT_ID)
    seg_col = opts.setdefault("segment_col", schema.SEGMENT_ID)
    from .io.sources import read_input

    cols = SegmentColumns(doc_col, seg_col, opts.setdefault("text_col", schema.SOURCE),
                          opts.setdefault("domain_col", schema.DOMAIN))
    if sig is not None and cols.text not in table.columns:
        # an output without its text: explain from the recorded input, read as the run read it
        df = _recorded_input(source, sig, table, cols, read_opts, document)
    else:
        df = read_input(table, cols, **(read_opts if sig is None else {})).drop(ROW)
    sub = _document_rows(df, cols, document, segment)
    sub, run_ids = _in_run_order(df, cols, document)
    keep = [c for c in (doc_col, seg_col, cols.text, cols.domain) if c in sub.columns]
    flat, options = _profile_arguments(opts, named="certify_model" in given)
    if isinstance(source, (str, os.PathLike)) and options is not None and options.source_name is None:
        import dataclasses

        options = dataclasses.replace(options, source_name=str(source))  # messages name the file, not <table>
    result = profile_anchors(sub.select(keep), **flat, options=options)
    seg_row = _run_ids_back(result.segments, seg_col, run_ids).filter(pl.col(seg_col).cast(pl.String) == str(segment))
    anchors = _run_ids_back(result.anchors, seg_col, run_ids).filter(pl.col(seg_col).cast(pl.String) == str(segment))
    if sig is not None:
        _check_recorded_ddp(source, settings_from, table, cols, document, segment, seg_row, given, inherited, sig,
                            result.signature, mismatch[0] if mismatch else None)
    return ExplainResult(
        document=str(document),
        segment=str(segment),
        ddp=int(seg_row[schema.DDP][0]),
        ddp_certified=int(seg_row[schema.DDP_CERTIFIED][0]) if schema.DDP_CERTIFIED in seg_row.columns else None,
        n_sentences=int(seg_row[schema.N_SENTENCES][0]),
        first_sentence=int(seg_row[schema.FIRST_SENTENCE][0]),
        text=str(seg_row[cols.text][0]),
        anchors=anchors,
        signature=result.signature,
        settings_from=settings_from,
        inherited=inherited,
    )


#: the settings that change a segment's DDP: given by the caller, the output's own DDP is not what is explained
_DDP_SETTINGS = frozenset({"rules", "distance", "pipeline", "nlp", "sentence_unit"})


def _check_recorded_ddp(output: Any, settings_from: str | None, table: pl.DataFrame, cols: SegmentColumns,
                        document: Any, segment: Any, seg_row: pl.DataFrame, given: set[str],
                        inherited: dict[str, Any], sig: dict[str, Any], now: dict[str, Any],
                        mismatch: str | None = None) -> None:
    """A warning when the re-parse of a profile output's segment, with every setting its signature records
    (none given by the caller), does not give the ``ddp`` (and, with the recorded certification model, the
    ``ddp_certified``) the output's own row holds: what is explained is then not what the output says
    (a signature of another run, a table edited by hand, or another spaCy or pipeline than the run's).
    ``mismatch``: the sidecar's data stamp does not fit the output (:func:`ddpcore.io.profiles.load_signature`):
    said as the reason, or, when the row agrees, in a warning of its own (the settings may be another run's)."""
    import polars as pl

    if given & _DDP_SETTINGS or schema.DDP not in table.columns or cols.document not in table.columns \
            or cols.segment not in table.columns:
        if mismatch is not None:  # no row check to say it with: said here (the other settings are still used)
            used = ", ".join(sorted(inherited)) or "none"
            warnings.warn(f"{mismatch}: the settings it records and the command line does not give were used "
                          f"({used}), but they may be another run's (profile the input again for a table and "
                          "signature that agree)", stacklevel=3)
        return
    rows = table.filter((pl.col(cols.document).cast(pl.String) == str(document))
                        & (pl.col(cols.segment).cast(pl.String) == str(segment)))
    names = [schema.DDP] + ([schema.DDP_CERTIFIED] if "certify_model" in inherited else [])
    differ = []
    for name in names:
        if rows.height != 1 or name not in rows.columns or name not in seg_row.columns:
            continue
        try:
            mine = int(float(rows[name][0]))
        except (TypeError, ValueError):
            continue
        if mine != int(seg_row[name][0]):
            differ.append(f"{name} {int(seg_row[name][0])} where the output's row says {mine}")
    if not differ and mismatch is not None:
        warnings.warn(f"{mismatch}: its settings were used, and the re-parse of document {str(document)!r}, segment "
                      f"{str(segment)!r} with them gives the output's own value, but they may be another run's "
                      "(profile the input again for a table and signature that agree)", stacklevel=3)
    if not differ:
        return
    keys = ("spacy", "pipeline_name", "pipeline_version")
    then, here = [sig.get(k) for k in keys], [now.get(k) for k in keys]
    why = mismatch if mismatch is not None else (
        f"spaCy/pipeline {' '.join(map(str, here))} is installed, the run used {' '.join(map(str, then))}"
        if then != here and all(then) else
        f"the signature ({settings_from}) is not that of the run that wrote this table (copied from another "
        "output?), or the table was edited")
    warnings.warn(f"{output}: document {str(document)!r}, segment {str(segment)!r}: the re-parse with the settings "
                  f"its signature records gives {' and '.join(differ)}: {why}; what follows explains the re-parse, "
                  "not the output's value (profile the input again for a table and signature that agree)",
                  stacklevel=3)


class _CallableModule(type(json)):  # type(json) is types.ModuleType
    """This module, callable as :func:`explain`: importing the submodule (``from ddpcore.explain import
    ExplainResult``, or ddpcore itself importing it) binds ``ddpcore.explain`` to the module in place of
    the function, and ``ddpcore.explain(path, ...)`` must go on working."""

    def __call__(self, source: Any, *, document_id: Any = None, segment_id: Any = None,
                 **kwargs: Any) -> ExplainResult:
        return explain(source, document_id=document_id, segment_id=segment_id, **kwargs)


def _make_callable() -> None:
    import inspect
    import sys

    module = sys.modules[__name__]
    module.__class__ = _CallableModule
    module.__signature__ = inspect.signature(explain)  # type: ignore[attr-defined]  # inspect / help()


_make_callable()
