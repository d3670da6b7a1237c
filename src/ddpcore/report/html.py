"""``ddp report``: one self-contained HTML file (inline CSS and inline SVG, nothing fetched) with the
per-domain DDP table, the DDP histogram and ECDF (symlog DDP axis), the top-k highest-DDP segments and the
top few of each domain with the anchor, the antecedent and the first mention a chained distance runs to
highlighted (what ``ddp explain`` shows, with its table), the stratify curves and numbers (join accounting,
bin table with n, mean and CI, n_boot, seed) when given, and the run signature. All text from the data is escaped with :func:`html.escape`.

Error codes: D679 ``--top`` not positive, D610 ``--top-per-domain`` negative, D680 the anchors table lacks
needed columns or holds a value the page cannot use (wrong type, null: :mod:`ddpcore.report.inputs`), D681
an anchors table or a stratify result of another run than the profile (their signatures differ), D781 a
profile row without a DDP value, D671 the profile lacks the document/segment id columns its signature (or
the default) names, D103 a damaged signature (unreadable sidecar or metadata, not a JSON object, bad
``columns``). An anchors table or a stratify result without a signature is not compared: a note says so
(stderr and the page).

A report is meant to be shared: every path it shows (title, signature, ``<meta>``) is relative as given or a
file name, and the home folder never appears (:func:`shareable`). The Parquet signature of the profile is
not changed.
"""
from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import schema as S
from ..errors import DDPDataError, DDPUsageError
from ..io.profiles import check_sentence_counts
from ..pipeline.summary import NULL_GROUP, distinct_label
from ..signature import PATHS_NOTE, display_path, shareable  # noqa: F401  (shareable re-exported)
from . import plots

if TYPE_CHECKING:
    import polars as pl

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em auto;max-width:1100px;
 padding:0 1em;color:#1a1a1a;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.92em}th,td{padding:.25em .7em;border-bottom:1px solid #e4e4e4}
th{text-align:left;background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.all td{font-weight:600;border-top:2px solid #999}
figure{margin:1em 0}figure svg{max-width:100%;height:auto}
.seg{border:1px solid #ddd;border-radius:6px;padding:.6em .9em;margin:.8em 0;background:#fcfcfc}
.seg .meta{font-size:.88em;color:#444;margin-bottom:.3em}.seg .text{white-space:pre-wrap;max-height:16em;
 overflow:auto}
mark.anchor{background:#E69F00;color:#000;padding:0 .15em;border-radius:3px;font-weight:600}
mark.antecedent{background:#56B4E9;color:#000;padding:0 .15em;border-radius:3px;font-weight:600}
mark.first{background:#009E73;color:#000;padding:0 .15em;border-radius:3px;font-weight:600}
.ctx.first{border-left-color:#009E73}details.explain{margin-top:.4em;font-size:.88em}
details.explain pre{background:#f6f6f6;padding:.5em;overflow:auto;white-space:pre}p.seen{margin:.3em 0}
.ctx{font-size:.9em;color:#333;border-left:3px solid #56B4E9;padding-left:.6em;margin-top:.4em;
 white-space:pre-wrap;max-height:10em;overflow:auto}
pre.sig{background:#f6f6f6;padding:.8em;font-size:.82em;overflow:auto;white-space:pre-wrap}
.legend mark{font-size:.9em}.note{color:#555;font-size:.9em}
.warn{color:#8a4b00;background:#fff4e0;border-left:3px solid #E69F00;padding:.3em .6em;font-size:.92em}
h3{font-size:1.05em;margin-top:1.2em}
"""


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _num(v: Any, digits: int = 1) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else _e(v)


def summary_table(df: pl.DataFrame, signature: dict[str, Any], ddp_col: str = S.DDP,
                  notes: list[str] | None = None) -> str:
    """Per-domain documents, segments and the distribution of the DDP column ``ddp_col``; the total row is the
    last (``all``, or ``(all)`` when a domain is named ``all``: then a line is added to ``notes``)."""
    import polars as pl

    from ..api import summarize
    from ..pipeline.summary import total_note

    cols = signature.get("columns", {}) or {}
    dom = cols.get("domain") or S.DOMAIN
    doc = cols.get("document") or S.DOCUMENT_ID
    src = df if ddp_col == S.DDP else df.with_columns(pl.col(ddp_col).alias(S.DDP))  # summarize reads 'ddp'
    t = summarize(src, by=dom if dom in df.columns else None, document_col=doc)
    note = total_note(t, dom)
    if note and notes is not None:
        notes.append(note)
    lab = plots.ddp_label(ddp_col)
    head = ["domain", "documents", "segments", f"mean {lab}", f"median {lab}", f"p90 {lab}", f"max {lab}",
            f"zero-{lab} share"]
    rows = []
    for i, r in enumerate(t.iter_rows(named=True)):
        cls = ' class="all"' if i == t.height - 1 else ""  # the total row, whatever its label
        cells = [f"<td>{_e(r['group'])}</td>"] + [
            f'<td class="num">{_num(r[k])}</td>' for k in ("documents", "segments", "mean_ddp", "median_ddp",
                                                            "p90_ddp", "max_ddp")]
        z = r["zero_ddp_share"]
        cells.append(f'<td class="num">{"" if z is None else f"{100 * z:.1f}%"}</td>')
        rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
    return ("<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>"
            + '<p class="note">DDP in sentences: how far back a segment must look to resolve its named entities '
              "and pronouns.</p>")


def _highlight(text: str, spans: list[tuple[int, int, str, str]]) -> str:
    """Escape ``text`` and wrap the (start, end, css class, title) spans in ``<mark>`` (overlaps skipped)."""
    out, pos = [], 0
    for start, end, cls, title in sorted(spans):
        if start < pos or end <= start or end > len(text):
            continue
        out.append(_e(text[pos:start]))
        out.append(f'<mark class="{cls}" title="{_e(title)}">{_e(text[start:end])}</mark>')
        pos = end
    out.append(_e(text[pos:]))
    return "".join(out)


def _find(text: str, needle: str | None) -> tuple[int, int] | None:
    if not needle:
        return None
    i = text.find(needle)
    return (i, i + len(needle)) if i >= 0 else None


@dataclass(frozen=True)
class FirstMention:
    """The mention a chained distance runs to (``reference_sentence``), found in the anchors table:
    its text, sentence, segment and character span in that segment's text (None when not found)."""

    text: str | None
    sentence: int
    segment: Any
    span: tuple[int, int] | None


def first_mention(doc_anchors: pl.DataFrame, anchor: dict[str, Any], seg_col: str) -> FirstMention | None:
    """The first mention of the entity an anchor's distance is measured to, when it is not the linked
    antecedent (``reference_sentence != antecedent_sentence``: the chained distance runs past the
    antecedent to the entity's first mention, as ``ddp explain`` says). ``doc_anchors``: the anchors
    rows of the anchor's document. The entity is the antecedent's (its ``entity_id``); without one,
    the mention in the reference sentence whose text is the antecedent's, else the only
    first mention in that sentence; None when the distance is measured to the antecedent itself."""
    import polars as pl

    ref, ant = anchor.get(S.REFERENCE_SENTENCE), anchor.get(S.ANTECEDENT_SENTENCE)
    if ref is None or ant is None or ref < 0 or ref == ant:
        return None
    names = doc_anchors.filter(pl.col(S.KIND) != "pronoun") if S.KIND in doc_anchors.columns else doc_anchors
    at_ref = names.filter(pl.col(S.SENTENCE) == ref)
    pick = at_ref.head(0)
    if S.ENTITY_ID in names.columns:
        ent = names.filter((pl.col(S.SENTENCE) == ant) & (pl.col(S.TEXT) == anchor.get(S.ANTECEDENT_TEXT)))
        ids = [e for e in ent[S.ENTITY_ID].to_list() if e is not None and e >= 0]
        if ids:
            pick = at_ref.filter(pl.col(S.ENTITY_ID) == ids[0])
    if pick.height == 0:
        pick = at_ref.filter(pl.col(S.TEXT) == anchor.get(S.ANTECEDENT_TEXT))
    if pick.height == 0 and S.ANTECEDENT_KIND in at_ref.columns:
        firsts = at_ref.filter(pl.col(S.ANTECEDENT_KIND) == "first_mention")
        pick = firsts if firsts.height == 1 else pick
    if pick.height == 0:
        return FirstMention(None, int(ref), None, None)
    row = pick.row(0, named=True)
    return FirstMention(row[S.TEXT], int(ref), row[seg_col], (int(row[S.CHAR_START]), int(row[S.CHAR_END])))


#: the columns of the anchors table that ``ddp explain``'s table needs (ExplainResult.to_text)
EXPLAIN_COLUMNS = (S.SENTENCE, S.TEXT, S.KIND, S.LABEL, S.ANTECEDENT_KIND, S.ANTECEDENT_TEXT,
                   S.ANTECEDENT_SENTENCE, S.REFERENCE_SENTENCE, S.DISTANCE_SENTENCES)


def _explain_block(r: dict[str, Any], seg_anchors: pl.DataFrame, signature: dict[str, Any], doc: str, seg: str,
                   text: str) -> str:
    """The ``ddp explain`` table of one segment (:meth:`ddpcore.explain.ExplainResult.to_text` on the
    segment's rows of the anchors table, nothing re-parsed), folded in a ``<details>``."""
    from ..explain import ExplainResult

    if any(c not in seg_anchors.columns for c in EXPLAIN_COLUMNS) or S.N_SENTENCES not in r \
            or S.FIRST_SENTENCE not in r or S.DDP not in r:  # (a profile whose DDP column is renamed: --ddp-col)
        return ""
    if S.CERTIFIED in seg_anchors.columns and S.CONFIDENCE not in seg_anchors.columns:
        seg_anchors = seg_anchors.drop(S.CERTIFIED)
    certified = isinstance(signature.get("certify"), dict) and bool(signature["certify"])  # else not recorded
    res = ExplainResult(document=str(r[doc]), segment=str(r[seg]), ddp=int(r[S.DDP] or 0),
                        ddp_certified=r.get(S.DDP_CERTIFIED) if certified else None,
                        n_sentences=int(r[S.N_SENTENCES] or 0), first_sentence=int(r[S.FIRST_SENTENCE] or 0),
                        text=text, anchors=seg_anchors.sort(S.SENTENCE), signature=signature)
    return ('<details class="explain"><summary><code>ddp explain</code> of this segment (* = sets the DDP)</summary>'
            f'<pre>{_e(res.to_text())}</pre></details>')


def _context(df: pl.DataFrame, doc: str, seg: str, txt: str, d: Any, seg_id: Any,
             span: tuple[int, int] | None, needle: str | None, cls: str, title: str) -> str | None:
    """The text of segment ``seg_id`` of document ``d`` with ``span`` (or the first ``needle``) marked."""
    import polars as pl

    src = df.filter((pl.col(doc).cast(pl.String) == str(d)) & (pl.col(seg).cast(pl.String) == str(seg_id)))
    if src.height == 0 or txt not in df.columns:
        return None
    ctx = str(src[txt][0] or "")
    hit = span if span is not None and 0 <= span[0] < span[1] <= len(ctx) else _find(ctx, needle)
    return _highlight(ctx, [(*hit, cls, title)]) if hit else _e(ctx)


def _segment_of_sentence(df: pl.DataFrame, doc: str, d: Any, sentence: int) -> Any:
    import polars as pl

    if S.FIRST_SENTENCE not in df.columns:
        return None
    src = df.filter((pl.col(doc).cast(pl.String) == str(d)) & (pl.col(S.FIRST_SENTENCE) <= sentence)
                    ).sort(S.FIRST_SENTENCE).tail(1)
    return src.row(0, named=True) if src.height else None


def segment_block(df: pl.DataFrame, r: dict[str, Any], anchors: pl.DataFrame | None, signature: dict[str, Any],
                  ddp_col: str = S.DDP, block_id: str | None = None) -> str:
    """One segment of the top list: its text with the anchors that set ``ddp_col`` marked, per anchor one
    line (anchor -> antecedent -> the first mention a chained distance runs to, and the distance as
    ``ddp explain`` computes it), the earlier segment holding that mention, and the ``ddp explain`` table."""
    import polars as pl

    cols = signature.get("columns", {}) or {}
    doc, seg = cols.get("document") or S.DOCUMENT_ID, cols.get("segment") or S.SEGMENT_ID
    txt, dom = cols.get("text") or S.SOURCE, cols.get("domain") or S.DOMAIN
    only_certified = anchors is not None and ddp_col == S.DDP_CERTIFIED and S.CERTIFIED in anchors.columns
    has_text = txt in df.columns
    d, s_id, ddp = r[doc], r[seg], r[ddp_col]
    text = str(r[txt]) if has_text and r[txt] is not None else ""
    meta = (f"document <b>{_e(d)}</b>, segment <b>{_e(s_id)}</b>"
            + (f", domain {_e(r[dom])}" if dom in df.columns else "")
            + f": <b>{_e(plots.ddp_label(ddp_col))} {_e(ddp)}</b> sentence(s)")
    spans: list[tuple[int, int, str, str]] = []
    extra: list[str] = []
    explain = ""
    if anchors is not None:
        doc_anchors = anchors.filter(pl.col(doc).cast(pl.String) == str(d))
        a = doc_anchors.filter(pl.col(seg).cast(pl.String) == str(s_id))
        if only_certified and S.DISTANCE_CERTIFIED in a.columns:
            # the certified DDP is the largest certified distance: an anchor's full distance, or the certain
            # part of its chain (partial credit)
            setting = a.filter(pl.col(S.DISTANCE_CERTIFIED) == ddp) if ddp and ddp > 0 else a.head(0)
        else:
            setting = a.filter(pl.col(S.DISTANCE_SENTENCES) == ddp) if ddp and ddp > 0 else a.head(0)
            if only_certified:
                setting = setting.filter(pl.col(S.CERTIFIED).fill_null(False))
        first = r.get(S.FIRST_SENTENCE)
        n_here = r.get(S.N_SENTENCES) or 0

        def here(sentence: Any) -> bool:
            return first is not None and sentence is not None and first <= sentence < first + n_here

        shown: set[Any] = set()
        for ar in setting.iter_rows(named=True):  # display only: the few anchors that set one segment's DDP
            spans.append((int(ar[S.CHAR_START]), int(ar[S.CHAR_END]), "anchor",
                          f"anchor (sentence {ar[S.SENTENCE]}), distance {ddp}"))
            ant, ant_s, ref_s = ar[S.ANTECEDENT_TEXT], ar[S.ANTECEDENT_SENTENCE], ar.get(S.REFERENCE_SENTENCE)
            line = f"<b>{_e(ar[S.TEXT])}</b> (sentence {_e(ar[S.SENTENCE])})"
            if ar.get(S.ANTECEDENT_KIND) == "none":
                extra.append(f"<div>{line}: no compatible antecedent before it, distance {_e(ddp)}</div>")
                continue
            line += f" &rarr; antecedent <b>{_e(ant)}</b> (sentence {_e(ant_s)})"
            fm = first_mention(doc_anchors, ar, seg)
            if here(ant_s):
                hit = _find(text[: int(ar[S.CHAR_START])], ant) or _find(text, ant)
                if hit:
                    spans.append((*hit, "antecedent", f"antecedent (sentence {ant_s})"))
            if fm is not None:  # chained: the distance runs on to the entity's first mention
                line += (f" &rarr; first mention <b>{_e(fm.text) if fm.text else '(not in the anchors table)'}</b> "
                         f"(sentence {fm.sentence}" + (f", segment {_e(fm.segment)}" if fm.segment is not None
                                                        else "") + ")")
                target, target_s, target_text, span = "first", fm.sentence, fm.text, fm.span
            else:
                target, target_s, target_text, span = "antecedent", ant_s, ant, None
            full = ar.get(S.DISTANCE_SENTENCES)
            if only_certified and full is not None and full != ddp:
                dist = (f"certified distance {_e(ddp)}: the certain part of its chain (partial credit; full "
                        f"distance {_e(ar[S.SENTENCE])} &minus; {_e(ref_s)} = {_e(full)} is not certified)")
            else:
                dist = (f"distance {_e(ar[S.SENTENCE])} &minus; {_e(ref_s)} = {_e(ddp)}" if ref_s is not None
                        and ref_s >= 0 else f"distance {_e(ddp)}")
            line += f", {dist}"
            if fm is not None and here(fm.sentence) and fm.span is not None and fm.segment is not None \
                    and str(fm.segment) == str(s_id):
                spans.append((*fm.span, "first", f"first mention (sentence {fm.sentence})"))
                extra.append(f"<div>{line}</div>")
                continue
            if target_s is None or target_s < 0 or here(target_s) or not has_text:
                extra.append(f"<div>{line}</div>")
                continue
            holder = fm.segment if fm is not None and fm.segment is not None else None
            if holder is None:
                row = _segment_of_sentence(df, doc, d, int(target_s))
                holder = None if row is None else row[seg]
            key = (target, str(holder), target_s)
            body = None if holder is None or key in shown else _context(
                df, doc, seg, txt, d, holder, span, target_text, target,
                f"{'first mention' if target == 'first' else 'antecedent'} (sentence {target_s})")
            if body is None:
                extra.append(f"<div>{line}" + (f", in segment {_e(holder)} (shown above)" if key in shown else "")
                             + "</div>")
            else:
                shown.add(key)
                extra.append(f'<div>{line}, in segment {_e(holder)}:</div><div class="ctx {target}">{body}</div>')
        if setting.height == 0 and ddp and ddp > 0:
            extra.append('<div class="note">no anchor with this distance in the anchors table (is it the '
                         "anchors table of this profile?)</div>")
        explain = _explain_block(r, a, signature, doc, seg, text)
    body = _highlight(text, spans) if text else '<span class="note">(the profile has no text column)</span>'
    ident = f' id="{_e(block_id)}"' if block_id else ""
    return (f'<div class="seg"{ident}><div class="meta">{meta}</div><div class="text">{body}</div>'
            + "".join(extra) + explain + "</div>")


LEGEND = ('<p class="legend"><mark class="anchor">anchor</mark> the mention that sets the DDP; '
          '<mark class="antecedent">antecedent</mark> the earlier mention it resolves to; '
          '<mark class="first">first mention</mark> of that entity, where a chained distance is measured to '
          "(when it is not the antecedent).</p>")


def _check_top_inputs(df: pl.DataFrame, anchors: pl.DataFrame | None, signature: dict[str, Any]) -> None:
    cols = signature.get("columns", {}) or {}
    doc, seg = cols.get("document") or S.DOCUMENT_ID, cols.get("segment") or S.SEGMENT_ID
    if doc not in df.columns or seg not in df.columns:
        raise DDPDataError(f"the profile has no '{doc}'/'{seg}' columns; give the segment table of `ddp profile`",
                           code="D671")
    if anchors is not None:
        # the anchors table names its id columns as the profile does (--document-col/--segment-col: signature)
        need = [doc, seg, S.TEXT, S.CHAR_START, S.CHAR_END, S.ANTECEDENT_TEXT,
                S.ANTECEDENT_SENTENCE, S.DISTANCE_SENTENCES, S.SENTENCE]
        miss = [c for c in need if c not in anchors.columns]
        if miss:
            raise DDPDataError(f"--anchors: missing column(s) {', '.join(miss)}; give the --anchors table of "
                               "`ddp profile`", code="D680")


def _ranked(df: pl.DataFrame, ddp_col: str) -> pl.DataFrame:
    """Segments with a DDP, highest first, ties in profile order (``__row``: the profile row)."""
    import polars as pl

    return (df.with_row_index("__row").filter(pl.col(ddp_col).is_not_null())
            .sort([ddp_col, "__row"], descending=[True, False]))


def top_segments(df: pl.DataFrame, anchors: pl.DataFrame | None, signature: dict[str, Any], k: int,
                 ddp_col: str = S.DDP) -> str:
    """The ``k`` segments of highest ``ddp_col`` (ties in profile order), with the anchors that set it;
    each segment block has the id ``top-<profile row>``."""
    _check_top_inputs(df, anchors, signature)
    parts = [LEGEND]
    if anchors is None:
        parts.append('<p class="note">Give <code>--anchors ANCHORS.parquet</code> (written by <code>ddp profile '
                     '--anchors</code>) to highlight the anchor and antecedent of each segment.</p>')
    for r in _ranked(df, ddp_col).head(k).iter_rows(named=True):
        parts.append(segment_block(df, r, anchors, signature, ddp_col, block_id=f"top-{r['__row']}"))
    return "".join(parts)


def domain_top_segments(df: pl.DataFrame, anchors: pl.DataFrame | None, signature: dict[str, Any], k: int,
                   shown: int, ddp_col: str = S.DDP) -> str:
    """Per domain, its ``k`` segments of highest ``ddp_col`` above 0; a segment already among the overall top
    ``shown`` is one line linking to it (``#top-<row>``). '' without a domain column or with one domain."""
    import polars as pl

    cols = signature.get("columns", {}) or {}
    dom = cols.get("domain") or S.DOMAIN
    doc, seg = cols.get("document") or S.DOCUMENT_ID, cols.get("segment") or S.SEGMENT_ID
    if k < 1 or dom not in df.columns or df[dom].n_unique() < 2:
        return ""
    _check_top_inputs(df, anchors, signature)
    ranked = _ranked(df, ddp_col)
    overall = set(ranked.head(shown)["__row"].to_list())
    lab = plots.ddp_label(ddp_col)
    parts = [f'<p class="note">The {k} highest-{_e(lab)} segments of each domain ({_e(lab)} &gt; 0; a segment of '
             f"the overall top {shown} links to it above).</p>"]
    # segments without a domain: "(none)", or "((none))" when a domain has that name (never merged with it)
    null_label = distinct_label(NULL_GROUP, ranked[dom].cast(pl.String).drop_nulls().unique().to_list())
    group = pl.col(dom).cast(pl.String).fill_null(null_label)
    names = sorted(ranked.select(group)[dom].unique().to_list())
    for name in names:
        sub = ranked.filter((group == name) & (pl.col(ddp_col) > 0)).head(k)
        parts.append(f'<h3 id="domain-{_e(name)}">{_e(name)}</h3>')
        if sub.height == 0:
            parts.append(f'<p class="note">no segment of this domain has {_e(lab)} &gt; 0.</p>')
        for r in sub.iter_rows(named=True):
            if r["__row"] in overall:
                parts.append(f'<p class="seen">document <b>{_e(r[doc])}</b>, segment <b>{_e(r[seg])}</b>: '
                             f'<b>{_e(lab)} {_e(r[ddp_col])}</b> &mdash; <a href="#top-{r["__row"]}">shown in the '
                             "overall top list</a></p>")
            else:
                parts.append(segment_block(df, r, anchors, signature, ddp_col, block_id=f"dom-{r['__row']}"))
    return "".join(parts)


def _g(v: Any) -> str:
    """A score statistic with 4 significant digits ('' for null)."""
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return ""
    return f"{v:.4g}"


def _share(v: Any) -> str:
    return f"{100 * v:.3g}%" if isinstance(v, (int, float)) and not isinstance(v, bool) else ""


def _keys(keys: Any) -> str:
    if not isinstance(keys, list) or not keys:
        return ""
    return "; ".join(", ".join(f"{_e(k)}={_e(repr(v))}" for k, v in r.items()) for r in keys if isinstance(r, dict))


def stratify_join_table(j: dict[str, Any]) -> str:
    """The join accounting of a ``ddp stratify`` result (``signature.join``), both sides."""
    if not isinstance(j, dict) or not j:
        return '<p class="note">The stratify result records no join accounting.</p>'
    on = ", ".join(f"{_e(o.get('profile'))}={_e(o.get('scores'))}" for o in j.get("on", []) if isinstance(o, dict))
    n_rows, n_prof = j.get("score_rows"), j.get("profile_segments")
    un_s, un_p = j.get("unmatched_score_rows"), j.get("unmatched_profile_segments",
                                                         j.get("profile_segments_without_score"))
    rows = [("score rows", n_rows, (n_rows - un_s) if isinstance(n_rows, int) and isinstance(un_s, int) else None,
             un_s, j.get("unmatched_score_share"), _keys(j.get("first_unmatched_score_keys"))),
            ("profile segments", n_prof,
             (n_prof - un_p) if isinstance(n_prof, int) and isinstance(un_p, int) else None,
             un_p, j.get("unmatched_profile_share"), _keys(j.get("first_unmatched_profile_keys"))),
            ("null or non-finite scores", n_rows, None, j.get("null_scores"), j.get("null_score_share"),
             _keys(j.get("first_null_score_keys")))]
    head = ["side", "rows", "matched", "unmatched / left out", "share", "first unmatched keys"]
    body = "".join(
        f"<tr><td>{_e(side)}</td><td class=\"num\">{_num(n)}</td><td class=\"num\">{_num(m)}</td>"
        f"<td class=\"num\">{_num(u)}</td><td class=\"num\">{_share(sh)}</td><td>{k}</td></tr>"
        for side, n, m, u, sh, k in rows)
    mu = j.get("max_unjoined")
    policy = (f"--max-unjoined {_e(mu)}" if mu is not None else "no --max-unjoined gate recorded (older result)") + \
        ("; --allow-partial-join" if j.get("allow_partial_join") else "")
    used = j.get("used_score_rows")
    return ('<table class="join"><thead><tr>' + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
            + body + "</tbody></table>"
            + f'<p class="note">Join on {on or "(not recorded)"}; {policy}; '
            + (f"{_num(used)} score rows used, " if used is not None else "")
            + f"{_num(j.get('documents'))} documents.</p>")


def stratify_bin_table(res: dict[str, Any]) -> str:
    """Per group (and gap) and DDP bin: n, mean and 95 % CI, with the group's Spearman rho."""
    sig = res.get("signature", {}) or {}
    by = [c for c in (sig.get("by") or []) if isinstance(c, str)]
    gcol = (sig.get("gap") or {}).get("col") if isinstance(sig.get("gap"), dict) else None
    cols = by + ([gcol] if gcol and gcol not in by else [])
    head = [*(cols or ["group"]), "n", "Spearman ρ (p)", "DDP bin", "bin n", "mean", "95% CI"]
    no_ci = "no CI (--n-boot 0)" if sig.get("n_boot") == 0 else "no CI (one document)"
    rows = []
    for kind in ("groups", "gaps"):
        for g in res.get(kind, []) or []:
            if not isinstance(g, dict):
                continue
            bins = [b for b in g.get("bins", []) if isinstance(b, dict)]
            sp = g.get("spearman") or {}
            rho, p = sp.get("rho"), sp.get("p")
            rs = "n/a" if not isinstance(rho, (int, float)) else f"{rho:+.3f}" + \
                (f" ({p:.2g})" if isinstance(p, (int, float)) else "")
            span = f' rowspan="{max(len(bins), 1)}"'
            lead = "".join(f"<td{span}>{_e(g.get(c))}</td>" for c in cols) if cols else \
                f"<td{span}>{'gap' if kind == 'gaps' else 'all'}</td>"
            lead += f'<td class="num"{span}>{_num(g.get("n"))}</td><td class="num"{span}>{_e(rs)}</td>'
            for i, b in enumerate(bins or [{}]):
                lo, hi = b.get("low"), b.get("high")
                hi_s = "∞" if hi in ("inf", None) or (isinstance(hi, float) and math.isinf(hi)) else f"{hi:g}"
                lo_s = f"{lo:g}" if isinstance(lo, (int, float)) else _e(lo)
                ci = (f"[{_g(b.get('ci_low'))}, {_g(b.get('ci_high'))}]" if b.get("ci_low") is not None
                      else "" if b.get("mean") is None else no_ci)
                rows.append(f"<tr>{lead if i == 0 else ''}<td>[{lo_s}, {_e(hi_s)})</td>"
                            f'<td class="num">{_num(b.get("n"))}</td><td class="num">{_g(b.get("mean"))}</td>'
                            f'<td class="num">{_e(ci)}</td></tr>')
    return ('<table class="bins"><thead><tr>' + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def stratify_section(res: dict[str, Any]) -> str:
    """The numbers of a ``ddp stratify`` result: warnings, join accounting, the bin table, n_boot and seed."""
    sig = res.get("signature", {}) or {}
    warn = [w for w in (sig.get("warnings") or []) if isinstance(w, str)]
    parts = [f'<p class="warn">warning: {_e(w)}</p>' for w in warn]
    parts.append("<h3>Join</h3>")
    parts.append(stratify_join_table(sig.get("join") or {}))
    parts.append("<h3>Mean score per DDP bin</h3>")
    nb, seed = sig.get("n_boot"), sig.get("seed")
    sc = sig.get("score_col")
    score = ", ".join(str(c) for c in sc) if isinstance(sc, list) else sc
    parts.append(f'<p class="note">CIs: {_e(sig.get("ci", "document bootstrap, 95% percentile"))}; n_boot '
                 f"{_e(nb if nb is not None else '(not recorded)')}, seed {_e(seed if seed is not None else '(not recorded)')}; "
                 f"score column{'s' if isinstance(sc, list) and len(sc) > 1 else ''} {_e(score)}.</p>")
    n_groups = len(res.get("groups") or []) + len(res.get("gaps") or [])
    table = stratify_bin_table(res)
    if n_groups > OPEN_GROUPS:  # folded: the figures above already show every group
        table = (f"<details><summary>{n_groups} groups &times; {len(sig.get('bins') or []) - 1 or ''} bins "
                 f"(click to open)</summary>{table}</details>")
    parts.append(table)
    return "".join(parts)


#: a bin table of more groups than this is folded in a <details> element
OPEN_GROUPS = 12




def report_signature(profile: str, sig: dict[str, Any], *, stratify: str | None, anchors: str | None, top: int,
                     ddp_col: str, top_per_domain: int = 0, notes: list[str] | None = None) -> dict[str, Any]:
    """The signature of a report (in its ``<meta name="ddpcore-signature">``): ddpcore version, inputs, the
    DDP column shown (``--ddp-col``), ``top``, ``top_per_domain``, the profile's own signature and, when
    there are any, the ``notes`` of the input checks (what could not be compared), every path made
    shareable (:func:`shareable`: file names, no local folder)."""
    from .._version import __version__

    out = {"ddpcore": __version__, "report": "ddp report", "profile": display_path(profile), "ddp_col": ddp_col,
           "stratify": display_path(stratify), "anchors": display_path(anchors), "top": int(top),
           "top_per_domain": int(top_per_domain), "paths": PATHS_NOTE, "profile_signature": shareable(sig)}
    if notes:
        out["notes"] = shareable(list(notes))
    return out


def check_profile_columns(df: pl.DataFrame, signature: dict[str, Any], profile: str) -> None:
    """The document and segment id columns the report reads (named by the profile's signature, else
    ``document_id``/``segment_id``) must be columns of the profile: else D671 naming the file, the column and
    where its name came from (a profile written with --document-col/--segment-col whose signature was lost
    or belongs to another file)."""
    cols = signature.get("columns") or {}
    for key, default in (("document", S.DOCUMENT_ID), ("segment", S.SEGMENT_ID)):
        name = cols.get(key) or default
        if name in df.columns:
            continue
        if cols.get(key):
            why = (f"its signature names '{name}' as the {key} id column, but the table has no such column; the "
                   "file and its signature do not match: regenerate both with `ddp profile`")
        elif signature:
            why = (f"its signature names no {key} id column and the table has no '{name}' column; regenerate it "
                   "with `ddp profile`")
        else:
            side = "its Parquet metadata" if str(profile).lower().endswith((".parquet", ".pq")) else \
                f"{profile}.signature.json"
            why = (f"no ddpcore signature names its {key} id column (looked in {side}), and the table has no "
                   f"'{name}' column; regenerate it with `ddp profile` (which records its column names), or put its "
                   "signature back")
        raise DDPDataError(f"{profile}, column '{name}': {why} (columns: {', '.join(df.columns[:20])})",
                           code="D671")


def render(profile: str, *, stratify: str | None = None, anchors: str | None = None, top: int = 10,
           title: str | None = None, ddp_col: str = S.DDP, top_per_domain: int = 3,
           warn: Callable[[str], None] | None = None) -> str:
    """The report as an HTML string; ``ddp_col`` is the DDP column of the table, the figures and the top-K
    (a ``stratify`` result computed on another column is D782); ``top_per_domain`` (>= 0) segments of
    highest DDP per domain follow the overall ``top``. Paths in the page are shareable (:func:`shareable`).

    The ``anchors`` table and the ``stratify`` result must be of the profile's run (their signatures are
    compared with the profile's, :func:`ddpcore.report.inputs.check_same_run`: D681), and the anchors
    table must hold what the page reads (:func:`ddpcore.report.inputs.check_anchors`: D680). What could not
    be compared (a side without a signature) is a note: in the page, in the report's signature and given
    to ``warn`` (``ddp report`` prints it on stderr)."""
    if top < 1:
        raise DDPUsageError(f"--top must be at least 1, got {top}", code="D679")
    if top_per_domain < 0:
        raise DDPUsageError(f"--top-per-domain must be 0 or more, got {top_per_domain}", code="D610")
    from .inputs import ANCHORS, STRATIFY, check_anchors, check_same_run, read_anchors

    df, raw_sig = plots.load_profile(profile, ddp_col=ddp_col, strict=True)
    check_profile_columns(df, raw_sig, profile)
    if anchors is not None:  # the explain blocks place sentences by these counts: a missing count is not 0
        check_sentence_counts(df, [c for c in (S.FIRST_SENTENCE, S.N_SENTENCES) if c in df.columns], str(profile))
    notes: list[str] = []
    anc = None
    if anchors is not None:
        anc, anc_sig = read_anchors(anchors)
        anc = check_anchors(anc, raw_sig, anchors)  # an anchors table at all (D680), then of this run (D681)
        notes += check_same_run(profile, raw_sig, anchors, anc_sig, ANCHORS)
    strat = plots.load_stratify(stratify) if stratify is not None else None
    if strat is not None:
        plots.check_result_ddp_col(strat, ddp_col, stratify)
        ssig = strat.get("signature") if isinstance(strat.get("signature"), dict) else {}
        psig = ssig.get("profile_signature")
        notes += check_same_run(profile, raw_sig, stratify, psig if isinstance(psig, dict) else None, STRATIFY)
        strat = {**strat, "signature": shareable(ssig)}
    sig = shareable(raw_sig)
    dom = (sig.get("columns", {}) or {}).get("domain") or S.DOMAIN
    if dom not in df.columns:  # `ddp profile` always writes it (null without domains): a table edited since
        notes.append(f"the profile {profile} has no '{dom}' column (the domain column "
                     f"{'its signature names' if (raw_sig.get('columns') or {}).get('domain') else 'by default'}), "
                     "so the per-domain table has only the 'all' row and there are no per-domain figures or top "
                     "segments")
    by = dom if dom in df.columns and df[dom].n_unique() > 1 else None
    if by is not None and df[dom].n_unique() > plots.MAX_SERIES:  # (plots.check_series: D931 names a --by)
        notes.append(f"the profile {profile} has {df[dom].n_unique():,} domains, more than one figure tells apart "
                     f"({plots.MAX_SERIES}): the histogram and ECDF show all segments together (the per-domain "
                     "table lists every domain)")
        by = None
    hist = plots.svg_text(plots.hist_figure(df, by=by, signature=sig, ddp_col=ddp_col))
    ecdf = plots.svg_text(plots.ecdf_figure(df, by=by, signature=sig, ddp_col=ddp_col))
    table = summary_table(df, sig, ddp_col, notes)  # before the notes are shown: a domain named 'all' adds one
    lab = plots.ddp_label(ddp_col)
    head = title or f"DDP report: {display_path(profile)}"
    body = [f"<h1>{_e(head)}</h1>",
            f'<p class="note">{df.height:,} segments; written by ddpcore {_e(sig.get("ddpcore", ""))}; '
            f"distance {_e(sig.get('distance', ''))}, rules {_e(sig.get('rules', ''))}, pipeline "
            f"{_e(sig.get('pipeline_name', ''))} {_e(sig.get('pipeline_version', ''))}"
            + ("" if ddp_col == S.DDP else f"; DDP column <b>{_e(ddp_col)}</b>") + "</p>",
            *(f'<p class="warn">note: {_e(shareable(n))}</p>' for n in notes),
            f"<h2>{_e(lab)} per domain</h2>", table,
            f"<h2>{_e(lab)} distribution</h2>", f'<figure id="fig-hist">{hist}</figure>', f'<figure id="fig-ecdf">{ecdf}</figure>',
            f"<h2>Top {min(top, df.height)} segments by {_e(lab)}</h2>", top_segments(df, anc, sig, top, ddp_col)]
    per_domain = domain_top_segments(df, anc, sig, top_per_domain, top, ddp_col) if top_per_domain else ""
    if per_domain:
        body += [f"<h2>Top {top_per_domain} segments by {_e(lab)} per domain</h2>", per_domain]
    if strat is not None:
        body.append("<h2>Scores by DDP (ddp stratify)</h2>")
        # pages of at most 4 panels (2 x 2): a page is drawn near its own width in the page, so text stays legible
        for k, fig in enumerate(plots.curves_figures(strat, max_panels=REPORT_PANELS)):
            body.append(f'<figure id="fig-curves{"" if k == 0 else f"-{k + 1}"}">{plots.svg_text(fig)}</figure>')
        body.append(stratify_section(strat))
    body += ["<h2>Run signature</h2>",
             f'<p class="note">{_e(PATHS_NOTE)}.</p>',
             f'<pre class="sig">{_e(json.dumps(sig, indent=2, sort_keys=True, default=str)) if sig else "(none recorded)"}</pre>']
    rsig = json.dumps(report_signature(profile, raw_sig, stratify=stratify, anchors=anchors, top=top, ddp_col=ddp_col,
                                       top_per_domain=top_per_domain, notes=notes), sort_keys=True, default=str)
    for note in notes if warn is not None else ():  # once the page is made: an error stays the only line
        warn(note)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<meta name=\"ddpcore-signature\" content=\"{_e(rsig)}\">"
            f"<title>{_e(head)}</title><style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


#: stratify-curve panels per figure in the report
REPORT_PANELS = 4


def write_report(dest: str, profile: str, **kwargs: Any) -> None:
    """Render the HTML report of the profile at ``profile`` (:func:`render`, same keywords) and write it to
    ``dest`` through a temporary file and a rename."""
    from ..io.tables import atomic_path

    text = render(profile, **kwargs)
    with atomic_path(dest) as tmp:
        tmp.write_text(text, encoding="utf-8")
