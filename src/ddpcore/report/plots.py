"""Figures of a DDP profile and of ``ddp stratify`` results (matplotlib, Agg backend).

- :func:`hist_figure`: segments per DDP bin (:func:`hist_edges`: one per value to 4, then widening bins),
  optionally one outlined histogram per domain, on the symlog DDP axis of the curves;
- :func:`ecdf_figure`: the share of segments with DDP <= x, optionally one curve per domain (symlog axis);
- :func:`curves_figures`: per stratify group, the binned mean score with its 95 % CI bar and the LOWESS
  curve, on a symlog DDP axis (0 and 300 sentences on one readable axis); at most 8 series per panel
  (a larger panel is split, its parts sharing one y range) and at most :data:`MAX_PANELS` panels per
  figure (more go to further pages: :func:`page_paths` names their files ``STEM-p01.EXT`` ...).

Colours: the Okabe-Ito colour-blind-safe palette (:data:`PALETTE`); series beyond its 8 colours (hist and
ECDF with ``--by``) add a line style, then a marker (:func:`series_style`), so no two series of a figure look
alike (more than :data:`MAX_SERIES` is D931). matplotlib is imported lazily;
without it :func:`pyplot` raises a one-line D670 usage error naming :data:`INSTALL_HINT`.

Error codes: D670 matplotlib missing, D671 the plot input lacks a needed column / is not a stratify
result, D672 unknown output extension for a figure, D673 ``--by`` column missing, D674 nothing to plot,
D675 more panels than one figure holds (:func:`curves_figure`), D561 ``--max-panels`` below 1, D931 more
``--by`` values than one figure tells apart (:func:`check_series`), D781 a
DDP column value that is not a whole number >= 0, or none (null) (:func:`load_profile`).
"""
from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import schema
from ..errors import DDPDataError, DDPUsageError
from ..io.profiles import check_ddp_col, check_no_null_ddp, read_signature  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    import polars as pl

#: Okabe & Ito (2008), black moved last and yellow (low contrast on white) next to last
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
#: line styles of the series beyond the palette: series 0-7 solid, 8-15 dashed, 16-23 dotted, 24-31 dash-dot
LINESTYLES = ("-", "--", ":", "-.")
#: markers of the series beyond colours x line styles (32): none, then one marker per further 32 series
MARKERS = (None, "o", "s", "^", "D", "v", "P", "X")
#: series one figure tells apart: every (colour, line style, marker) once
MAX_SERIES = len(PALETTE) * len(LINESTYLES) * len(MARKERS)


@dataclass(frozen=True)
class SeriesStyle:
    """How series ``i`` of a figure is drawn (:func:`series_style`): no two series of a figure share all three."""

    colour: str
    linestyle: str
    marker: str | None


def series_style(i: int) -> SeriesStyle:
    """The style of the ``i``-th series (0-based) of a figure: the palette colour ``i mod 8``, then, beyond the
    palette, another line style for each further 8 series and a marker for each further 32, so that no two of
    the first :data:`MAX_SERIES` series look alike (more is D931: :func:`check_series`)."""
    n, k = len(PALETTE), len(PALETTE) * len(LINESTYLES)
    return SeriesStyle(PALETTE[i % n], LINESTYLES[(i // n) % len(LINESTYLES)], MARKERS[(i // k) % len(MARKERS)])


def check_series(n: int, by: str | None) -> None:
    """D931 when ``n`` series (values of the ``--by`` column) are more than one figure tells apart."""
    if n > MAX_SERIES:
        raise DDPUsageError(f"--by {by}: {n:,} values are more series than one figure tells apart (at most "
                            f"{MAX_SERIES}: {len(PALETTE)} colours x {len(LINESTYLES)} line styles x {len(MARKERS)} "
                            "markers); plot a column with fewer values, or filter the table first", code="D931")
FIGURE_FORMATS = ("png", "svg")
#: what installs matplotlib: from a clone of the repository (the package is not on an index yet)
INSTALL_HINT = "`pip install 'matplotlib>=3.7'` (the [plot] extra; from a ddpcore clone `pip install '.[plot]'`)"
#: the stacked score-column name of ``ddp stratify`` (stats.stratify.METRIC): always a panel, never a series
METRIC_COL = "metric"
RC = {
    "font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11, "legend.fontsize": 9,
    "xtick.labelsize": 10, "ytick.labelsize": 10, "axes.spines.top": False, "axes.spines.right": False,
    "axes.grid": True, "grid.alpha": 0.3, "svg.fonttype": "none", "svg.hashsalt": "ddpcore",
    # labels are names from the data (domains, systems, metrics): a '$' is a dollar sign, never mathtext (a
    # domain '$\\foo$' was an internal error, 'cost $5-$10' drawn as '5-' in math italics)
    "text.parse_math": False,
}


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or a D670 usage error when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        raise DDPUsageError(f"plots need matplotlib, which is not installed; install it with {INSTALL_HINT}",
                            code="D670") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure_format(path: str | os.PathLike[str], option: str = "-o/--output") -> str:
    """``png`` or ``svg`` from the extension, else a D672 usage error."""
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in FIGURE_FORMATS:
        what = f"unknown figure format (extension '.{ext}')" if ext else "no extension"
        raise DDPUsageError(f"{option} {path}: {what}; use .png or .svg", code="D672")
    return ext


def figure_signature(kind: str, input_path: str | os.PathLike[str] | None, source: dict[str, Any],
                     ddp_col: str = schema.DDP) -> dict[str, Any]:
    """The signature a figure carries: ddpcore version, figure kind, input, the DDP column drawn
    (``--ddp-col``; for curves the one the stratify result used) and the input's own signature, with no
    local folder in it, as ``ddp report`` shows them (:func:`ddpcore.signature.shareable`: a figure is made
    to be shared; an absolute path becomes its file name, the home folder ``~``)."""
    from .._version import __version__
    from ..signature import PATHS_NOTE, shareable

    return shareable({"ddpcore": __version__, "figure": kind, "input": None if input_path is None else str(input_path),
                      "ddp_col": ddp_col, "input_signature": source}) | {"paths": PATHS_NOTE}


def ddp_label(ddp_col: str = schema.DDP) -> str:
    """``DDP`` for the default column, else the column's name: axis labels and titles name the column drawn."""
    return "DDP" if ddp_col == schema.DDP else ddp_col


def result_ddp_col(result: dict[str, Any]) -> str:
    """The DDP column a ``ddp stratify`` result was computed on (``ddp`` for results that do not record it)."""
    col = (result.get("signature") or {}).get("ddp_col") if isinstance(result.get("signature"), dict) else None
    return col if isinstance(col, str) and col else schema.DDP


def check_result_ddp_col(result: dict[str, Any], ddp_col: str | None, where: str) -> str:
    """The stratify result's DDP column; D782 when ``ddp_col`` (``--ddp-col``, None = not given) names another
    (a figure or report would mix two DDP columns)."""
    have = result_ddp_col(result)
    if ddp_col is not None and ddp_col != have:
        raise DDPUsageError(f"--ddp-col {ddp_col}: the stratify result {where} was computed on the DDP column "
                            f"'{have}'; give --ddp-col {have}, or run `ddp stratify ... --ddp-col {ddp_col}` again",
                            code="D782")
    return have


def _save_metadata(fmt: str, signature: dict[str, Any] | None) -> dict[str, Any] | None:
    """``savefig(metadata=)``: no date in SVG (reproducible files); the signature as JSON in the SVG
    ``<metadata>`` (``dc:description``) or in a PNG text chunk ``ddpcore.signature``."""
    from ..signature import figure_metadata

    return figure_metadata(fmt, signature)


#: what to do about a damaged profile signature (``ddp report``)
SIGNATURE_HINT = "regenerate the profile with `ddp profile` (it writes the signature with the table)"


def load_profile(path: str | os.PathLike[str], ddp_col: str = schema.DDP, *, strict: bool = False
                 ) -> tuple[pl.DataFrame, dict[str, Any]]:
    """The segment table of ``ddp profile`` and its signature; D671 without a ``ddp`` column, D780 without
    the ``ddp_col`` asked for (``--ddp-col``), D781 when that column holds no DDP values or a row has none
    (null: :func:`check_no_null_ddp`). With ``strict``
    (``ddp report``, which needs the column names it records) a damaged signature is D103
    (:func:`ddpcore.gold.agree.load_profile_signature`); else it is read as :func:`read_signature` reads it
    (``{}`` when absent, unreadable or not a JSON object)."""
    from ..io.profiles import check_ddp_values, read_profile_table

    df = read_profile_table(Path(path))  # the ids as written, with or without the sidecar
    check_ddp_col(df.columns, ddp_col, str(path), df.schema.get(ddp_col))
    if ddp_col not in df.columns:
        raise DDPDataError(f"{path}: no '{schema.DDP}' column; give the segment table written by `ddp profile` "
                           f"(columns: {', '.join(df.columns[:20])})", code="D671")
    check_ddp_values(df, ddp_col, str(path))
    check_no_null_ddp(df, ddp_col, str(path))
    if strict:
        from ..gold.agree import load_profile_signature

        sig = load_profile_signature(path, hint=SIGNATURE_HINT)[0]
    else:
        sig = read_signature(path)
        sig = sig if isinstance(sig, dict) else {}
    check_one_row_per_segment(df, sig or {}, str(path))
    return df, sig


def check_one_row_per_segment(df: pl.DataFrame, signature: dict[str, Any], where: str) -> None:
    """A segment table has one row per (document, segment) (the id columns ``signature`` records, else the
    defaults; a table without them is not checked): a key on two rows is D671 naming ``where`` and both rows.
    A ``ddp profile --sentences`` table (one row per sentence) would otherwise be drawn and counted as
    segments, and ``ddp report`` would list one segment several times among its top-K."""
    import polars as pl

    from ..io.profiles import profile_columns

    pc = profile_columns(signature)
    if pc.document not in df.columns or pc.segment not in df.columns:
        return
    dup = df.select(pl.struct(pc.document, pc.segment).is_duplicated().alias("__d"))["__d"]
    if not dup.any():
        return
    i = int(dup.arg_true()[0])
    d, s = df[pc.document][i], df[pc.segment][i]
    j = int(df.with_row_index("__i").filter(pl.col(pc.document).eq_missing(d) & pl.col(pc.segment).eq_missing(s)
                                            )["__i"][1])
    kind = " (one row per sentence: a `ddp profile --sentences` table)" if schema.SENTENCE in df.columns else ""
    raise DDPDataError(f"{where}, rows {i + 1} and {j + 1}: document {d!r}, segment {s!r} appears more than once"
                       f"{kind}; give the segment table written by `ddp profile -o` (one row per segment)",
                       code="D671")


def load_stratify(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A ``ddp stratify`` JSON result; D671 when it is not one."""
    try:
        res = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DDPDataError(f"{path}: not a readable `ddp stratify` JSON file ({exc})", code="D671") from None
    if not isinstance(res, dict) or not isinstance(res.get("groups"), list) or \
            any(not isinstance(g, dict) or "bins" not in g for g in res["groups"]):
        raise DDPDataError(f"{path}: not a `ddp stratify` JSON result (needs a 'groups' list with 'bins'); "
                           "write one with `ddp stratify ... -f json -o FILE.json`", code="D671")
    problem = _stratify_problem(res)
    if problem:
        raise DDPDataError(f"{path}: not a `ddp stratify` JSON result ({problem}); write one with "
                           "`ddp stratify ... -f json -o FILE.json`", code="D671")
    return res


def _stratify_problem(res: dict[str, Any]) -> str | None:
    """The first part of a ``ddp stratify`` result that the curve plots cannot read (None when all is
    readable): every group (``groups``, ``gaps``) an object whose ``bins`` is a list of objects with numeric
    ``low``/``high``, a whole ``n`` and numeric-or-null ``mean``/``ci_low``/``ci_high``; ``lowess`` null or
    ``x``/``y`` lists of numbers of one length; ``spearman`` null or an object with a numeric-or-null ``rho``;
    ``signature`` null or an object."""
    def number(v: Any, null: bool = False) -> bool:
        if v is None:
            return null
        if isinstance(v, str):  # JSON has no infinity: stratify writes "inf"
            return v in ("inf", "Infinity")
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if not isinstance(res.get("signature"), (dict, type(None))):  # read for the panels, the column and the run
        return "'signature' is not an object"
    for kind in ("groups", "gaps"):
        groups = res.get(kind, [])
        if not isinstance(groups, list):
            return f"'{kind}' is not a list"
        for i, g in enumerate(groups):
            at = f"{kind}[{i}]"
            if not isinstance(g, dict) or not isinstance(g.get("bins"), list):
                return f"{at} has no list of 'bins'"
            for j, b in enumerate(g["bins"]):
                if not (isinstance(b, dict) and number(b.get("low")) and number(b.get("high"))
                        and isinstance(b.get("n"), int) and not isinstance(b.get("n"), bool)
                        and all(number(b.get(k), null=True) for k in ("mean", "ci_low", "ci_high"))):
                    return f"{at}.bins[{j}] is not a bin (low, high, n, mean, ci_low, ci_high)"
            lw = g.get("lowess")
            if lw is not None and not (isinstance(lw, dict) and isinstance(lw.get("x", []), list)
                                       and isinstance(lw.get("y", []), list)
                                       and len(lw.get("x", [])) == len(lw.get("y", []))
                                       and all(number(v, null=True) for v in [*lw.get("x", []), *lw.get("y", [])])):
                return f"{at}.lowess is not a curve (lists x and y of numbers, of one length)"
            sp = g.get("spearman")
            if sp is not None and not (isinstance(sp, dict) and number(sp.get("rho"), null=True)):
                return f"{at}.spearman is not an object with a numeric rho"
    return None


def _groups_of(df: pl.DataFrame, by: str | None, ddp_col: str = schema.DDP) -> list[tuple[str, Any]]:
    import numpy as np
    import polars as pl

    if by is None:
        return [("all segments", df[ddp_col].drop_nulls().to_numpy().astype(np.float64))]
    if by not in df.columns:
        raise DDPUsageError(f"--by {by}: no such column; available: {', '.join(df.columns)}", code="D673")
    from ..pipeline.summary import NULL_GROUP, distinct_label

    # rows without a value: "(none)", or "((none))" when a value is so named (never merged with it)
    null_label = distinct_label(NULL_GROUP, df[by].cast(pl.String).drop_nulls().unique().to_list())
    g = df.with_columns(pl.col(by).cast(pl.String).fill_null(null_label).alias("__g"))
    check_series(g["__g"].n_unique(), by)
    out = []
    for name in sorted(g["__g"].unique().to_list()):
        out.append((name, g.filter(pl.col("__g") == name)[ddp_col].drop_nulls().to_numpy().astype(np.float64)))
    return out


def _title_suffix(df: pl.DataFrame, signature: dict[str, Any]) -> str:
    cols = signature.get("columns")
    docs = (cols.get("document") if isinstance(cols, dict) else None) or schema.DOCUMENT_ID
    nd = df[docs].n_unique() if docs in df.columns else None
    return f"{df.height:,} segments" + (f", {nd:,} documents" if nd is not None else "")


def hist_figure(df: pl.DataFrame, *, by: str | None = None, signature: dict[str, Any] | None = None,
                title: str | None = None, ddp_col: str = schema.DDP) -> Any:
    """Histogram of segment DDP (the column ``ddp_col``; one bar per DDP value up to 60 values, wider bins
    beyond)."""
    import numpy as np

    plt = pyplot()
    groups = _groups_of(df, by, ddp_col)
    lab = ddp_label(ddp_col)
    vals = np.concatenate([v for _, v in groups]) if groups else np.array([])
    if vals.size == 0:
        raise DDPDataError("no segments with a DDP value to plot", code="D674")
    top = int(vals.max())
    edges = hist_edges(top)
    wide = edges.size > 6  # some bins hold more than one DDP value
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(8, 4.8), layout="constrained")
        if by is None:
            ax.hist(vals, bins=edges, color=PALETTE[0], edgecolor="white", linewidth=0.5, label="all segments")
        else:
            handles = []
            for i, (name, v) in enumerate(groups):
                st = series_style(i)
                label = f"{name} (n={v.size:,})"
                ax.hist(v, bins=edges, histtype="step", linewidth=2.0, color=st.colour, linestyle=st.linestyle,
                        label=label)
                if st.marker is not None:  # beyond colours x line styles: a marker on each bar's top
                    counts, _ = np.histogram(v, bins=edges)
                    keep = counts > 0
                    ax.plot(_bar_centres(edges)[keep], counts[keep], linestyle="none", marker=st.marker,
                            color=st.colour, markersize=5, label=None)
                handles.append(_legend_handle(st, label))
            _series_legend(fig, ax, by, handles=handles)
        symlog_ddp_axis(ax, float(edges[-1]), left=0.0)
        ax.set_xlabel(f"{lab} (sentences, symlog scale); bins [0, 1), [1, 2) ..."
                      + (" [5, 7), [7, 10), [10, 15), [15, 20), [20, 30) ..." if wide else ""))
        ax.set_ylabel("segments per bin" if wide else "segments")
        ax.set_title(wrap_title(title or f"{lab} distribution ({_title_suffix(df, signature or {})})", 8, 12))
    return fig


def ecdf_figure(df: pl.DataFrame, *, by: str | None = None, signature: dict[str, Any] | None = None,
                title: str | None = None, ddp_col: str = schema.DDP) -> Any:
    """Empirical CDF of segment DDP (the column ``ddp_col``): the share of segments with DDP <= x."""
    import numpy as np

    plt = pyplot()
    groups = _groups_of(df, by, ddp_col)
    lab = ddp_label(ddp_col)
    if not any(v.size for _, v in groups):
        raise DDPDataError("no segments with a DDP value to plot", code="D674")
    xmax = max(float(v.max()) for _, v in groups if v.size)
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(8, 4.8), layout="constrained")
        for i, (name, v) in enumerate(groups):
            if v.size == 0:
                continue
            x = np.sort(v)
            y = np.arange(1, x.size + 1) / x.size
            x = np.concatenate([[x[0]], x, [xmax]])  # every curve runs on to the largest DDP at 1
            y = np.concatenate([[0.0], y, [1.0]])
            st = series_style(i)
            ax.step(x, y, where="post", linewidth=2.0, color=st.colour, linestyle=st.linestyle, marker=st.marker,
                    markevery=max(1, x.size // 8), markersize=5,
                    label=name if by is None else f"{name} (n={v.size:,})")
        if by is not None:
            _series_legend(fig, ax, by, loc="lower right")
        symlog_ddp_axis(ax, xmax, left=-0.1)
        ax.set_xlabel(f"{lab} (sentences, symlog scale)")
        ax.set_ylabel(f"share of segments with {lab} ≤ x")
        ax.set_ylim(0, 1.02)
        ax.set_title(wrap_title(title or f"{lab} cumulative distribution ({_title_suffix(df, signature or {})})",
                                8, 12))
    return fig


def _bar_centres(edges: Any) -> Any:
    """The middle of each histogram bin on the symlog DDP axis (:func:`_bin_centre`)."""
    import numpy as np

    return np.asarray([_bin_centre(float(lo), float(hi), float(hi))[0] for lo, hi in zip(edges[:-1], edges[1:])])


#: series a legend inside the axes holds; more go beside the axes, in columns of at most :data:`LEGEND_ROWS`
LEGEND_INSIDE = 12
LEGEND_ROWS = 24


def _series_legend(fig: Any, ax: Any, by: str, *, handles: list[Any] | None = None, loc: str = "best") -> None:
    """The legend of a figure's series: inside the axes for a few, else beside them in columns (the figure
    widened to keep the axes' width), so that a long legend never squeezes the axes away."""
    n = len(handles) if handles is not None else len(ax.get_legend_handles_labels()[0])
    kw: dict[str, Any] = {"title": by, "frameon": False} | ({"handles": handles} if handles is not None else {})
    if n <= LEGEND_INSIDE:
        ax.legend(loc=loc, **kw)
        return
    ncols = math.ceil(n / LEGEND_ROWS)
    fig.set_figwidth(fig.get_figwidth() + 2.1 * ncols)
    fig.set_figheight(max(fig.get_figheight(), 0.25 * math.ceil(n / ncols) + 1.2))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), ncols=ncols, fontsize=8, borderaxespad=0.0, **kw)


def _legend_handle(st: SeriesStyle, label: str) -> Any:
    """A legend entry showing the whole style of a series (colour, line style and marker)."""
    from matplotlib.lines import Line2D

    return Line2D([], [], color=st.colour, linestyle=st.linestyle, marker=st.marker, linewidth=2.0, markersize=5,
                  label=label)


def _group_name(g: dict[str, Any], cols: list[str]) -> str:
    return ", ".join(f"{g.get(c)}" for c in cols) or "all"


def _bin_centre(low: float, high: float, xmax: float) -> tuple[float, float]:
    """Centre of ``[low, high)`` on the symlog(linthresh=1) axis, and the drawn right edge."""
    hi = high if math.isfinite(high) else max(xmax, low * 2.0, low + 1.0)

    def t(x: float) -> float:
        return x if x <= 1 else 1.0 + math.log10(x)

    def inv(y: float) -> float:
        return y if y <= 1 else 10 ** (y - 1.0)

    return inv((t(low) + t(hi)) / 2.0), hi


#: panels per figure of ``ddp plot --kind curves`` (3 columns x 4 rows); more go to further pages
MAX_PANELS = 12


@dataclass(frozen=True)
class CurvePanels:
    """The panels of a stratify result, in drawing order.

    ``panels`` maps a panel title to its series ``[(series name, group dict)]`` (at most
    ``len(PALETTE)`` each); ``family`` maps a panel title to the panel it was split from (the
    chunks of one split panel share their y range); ``split`` says what was split, for the
    one-line note (``None`` when nothing was)."""

    panels: dict[str, list[tuple[str, dict[str, Any]]]]
    family: dict[str, str]
    split: str | None
    #: panel title -> the metric (value of the ``metric`` column) its y axis shows, when one is
    scale: dict[str, str] = field(default_factory=dict)


def curve_panels(result: dict[str, Any]) -> CurvePanels:
    """Lay a ``ddp stratify`` result out in panels.

    The first ``by`` column gives the series of a panel (one colour each); the other ``by`` columns
    give the panels (e.g. ``--by system,metric``: one panel per metric, one colour per system). The
    ``metric`` column always gives panels, whatever its place in ``by`` (``--by metric``: one panel
    per metric; ``--by metric,system``: as ``--by system,metric``), because metrics on different
    scales flatten each other on one y axis. A
    panel with more series than the palette has colours (8) is split into consecutive panels of at
    most 8 series each, titled ``<panel> [<column> 1-8 of 36]``; they share one y range.
    """
    sig = result.get("signature", {}) or {}
    by = list(sig.get("by") or [])
    gap = sig.get("gap") or None
    items: list[tuple[str, str, dict[str, Any]]] = []  # (panel, series, group)
    scales: dict[str, str] = {}  # panel -> the metric its y axis shows
    kinds = [("groups", "")] + ([("gaps", "gap ")] if result.get("gaps") else [])
    gcols = [gap["col"]] + [c for c in by if c != gap["col"]] if gap else by
    for kind, prefix in kinds:
        cols = _metric_last(gcols if kind == "gaps" else by)
        metric_only = cols == [METRIC_COL]  # --by metric: one panel per metric, one series each
        for g in result.get(kind, []):
            series = "all" if metric_only else str(g.get(cols[0])) if cols else "all"
            if metric_only:
                panel = prefix + str(g.get(METRIC_COL))
            else:
                panel = prefix + (_group_name(g, cols[1:]) if len(cols) > 1 else (prefix and series or "scores"))
            if kind == "gaps" and len(cols) <= 1 and not metric_only:
                panel = f"gap {series}"
            if METRIC_COL in cols and (metric_only or cols[0] != METRIC_COL):
                scales[panel] = str(g.get(METRIC_COL))
            items.append((panel, series, g))
    if not items:
        raise DDPDataError("the stratify result has no groups to plot", code="D674")
    base: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for panel, series, g in items:
        base.setdefault(panel, []).append((series, g))
    panels: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    family: dict[str, str] = {}
    k = len(PALETTE)
    split = [(name, len(v)) for name, v in base.items() if len(v) > k]
    for name, series in base.items():
        if len(series) <= k:
            panels[name], family[name] = series, name
            continue
        what = by[0] if by else "series"
        for lo in range(0, len(series), k):
            hi = min(lo + k, len(series))
            title = f"{name} [{what} {lo + 1}-{hi} of {len(series)}]" if name not in ("scores", "all") else \
                f"{what} {lo + 1}-{hi} of {len(series)}"
            panels[title], family[title] = series[lo:hi], name
            if name in scales:
                scales[title] = scales[name]
    note = None
    if split:
        most = max(n for _, n in split)
        note = (f"{len(split)} panel(s) with more than {k} {by[0] if by else 'series'} values (up to {most}) split "
                f"into panels of at most {k}")
    return CurvePanels(panels, family, note, {n: scales[n] for n in panels if n in scales})


def _metric_last(cols: list[str]) -> list[str]:
    """The group columns with ``metric`` moved last: the first column gives the series of a panel, the
    others the panels, and metrics on different scales (XCOMET 0-1, MetricX -25-0) must not share a
    y axis, so a metric is always a panel of its own."""
    if METRIC_COL not in cols or len(cols) == 1:
        return list(cols)
    return [c for c in cols if c != METRIC_COL] + [METRIC_COL]


def curve_pages(layout: CurvePanels, max_panels: int = MAX_PANELS) -> list[list[str]]:
    """The panel titles of each figure, in order, at most ``max_panels`` (>= 1) per figure.

    The parts of a split panel (one metric's systems 1-8, 9-16, ...) stay on one page when they fit
    on one: pages are filled panel family by panel family, a family that does not fit on the rest
    of a page starts a new one, and a family larger than a page fills whole pages."""
    if max_panels < 1:
        raise DDPUsageError(f"--max-panels must be at least 1, got {max_panels}", code="D561")
    families: dict[str, list[str]] = {}
    for name in layout.panels:
        families.setdefault(layout.family[name], []).append(name)
    pages: list[list[str]] = []
    cur: list[str] = []
    for names in families.values():
        if cur and len(cur) + len(names) > max_panels:
            pages.append(cur)
            cur = []
        for name in names:
            if len(cur) == max_panels:
                pages.append(cur)
                cur = []
            cur.append(name)
    if cur:
        pages.append(cur)
    return [pg for pg in pages if pg]


def _y_range(series: list[tuple[str, dict[str, Any]]]) -> tuple[float, float] | None:
    ys: list[float] = []
    for _, g in series:
        for b in g["bins"]:
            ys += [float(b[key]) for key in ("mean", "ci_low", "ci_high") if b.get(key) is not None]
        ys += [float(y) for y in (g.get("lowess") or {}).get("y") or [] if y is not None]
    ys = [y for y in ys if math.isfinite(y)]
    if not ys:
        return None
    lo, hi = min(ys), max(ys)
    pad = (hi - lo) * 0.06 or abs(hi) * 0.06 or 1.0
    return lo - pad, hi + pad


def curves_figures(result: dict[str, Any], *, title: str | None = None, max_panels: int = MAX_PANELS) -> list[Any]:
    """Binned mean score with 95 % CI bars and the LOWESS curve, per stratify group (and gap): one
    figure per page of at most ``max_panels`` panels (:func:`curve_panels` lays them out; every page
    has the same grid, and the title of a page says "page k of n" when there are several)."""
    layout = curve_panels(result)
    pages = curve_pages(layout, max_panels)
    ncols = _ncols(min(len(layout.panels), max_panels))
    return [_curves_page(result, layout, names, ncols, title, (k + 1, len(pages)))
            for k, names in enumerate(pages)]


def curves_figure(result: dict[str, Any], *, title: str | None = None, max_panels: int = 60) -> Any:
    """One figure of every panel of :func:`curves_figures`; more than ``max_panels`` panels is a D675
    usage error (use :func:`curves_figures` to page them)."""
    layout = curve_panels(result)
    if len(layout.panels) > max_panels:
        raise DDPUsageError(f"{len(layout.panels)} panels is too many to read in one figure (at most {max_panels}); "
                            "plot them on several pages (ddp plot --kind curves --max-panels N) or stratify fewer "
                            "groups", code="D675")
    names = list(layout.panels)
    return _curves_page(result, layout, names, _ncols(len(names)), title, (1, 1))


def _ncols(n: int) -> int:
    return 1 if n == 1 else 2 if n <= 4 else 3


def _curves_page(result: dict[str, Any], layout: CurvePanels, names: list[str], ncols: int, title: str | None,
                 page: tuple[int, int]) -> Any:
    plt = pyplot()
    sig = result.get("signature", {}) or {}
    by = list(sig.get("by") or [])
    panels = layout.panels
    nrows = math.ceil(len(names) / ncols)
    score = sig.get("score_col", "score")
    score = ", ".join(score) if isinstance(score, list) else str(score)
    shared = {fam: _y_range([s for n, v in panels.items() if layout.family[n] == fam for s in v])
              for fam in set(layout.family.values()) if list(layout.family.values()).count(fam) > 1}
    with plt.rc_context(RC):
        below = any(len(panels[n]) > 2 for n in names)  # legends under the axes need room
        fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols + (1.5 if ncols == 1 else 0),
                                                        (4.8 if below else 3.9) * nrows),
                                 layout="constrained", squeeze=False)
        for ax in axes.flat[len(names):]:
            ax.set_visible(False)
        for ax, name in zip(axes.flat, names):
            xmax = 1.0
            for _, g in panels[name]:
                xs = (g.get("lowess") or {}).get("x") or []
                xmax = max([xmax, *[float(x) for x in xs if x is not None]])
            for i, (series, g) in enumerate(panels[name]):
                colour = PALETTE[i % len(PALETTE)]
                bx, by_, lo, hi, left, right = [], [], [], [], [], []
                for b in g["bins"]:
                    if b.get("mean") is None:
                        continue
                    c, right_edge = _bin_centre(float(b["low"]), float(b["high"]), xmax)
                    bx.append(c)
                    by_.append(b["mean"])
                    lo.append(b["mean"] - b["ci_low"] if b.get("ci_low") is not None else 0.0)
                    hi.append(b["ci_high"] - b["mean"] if b.get("ci_high") is not None else 0.0)
                    left.append(c - float(b["low"]))
                    right.append(right_edge - c)
                rho = (g.get("spearman") or {}).get("rho")
                label = f"{series} (ρ={rho:+.2f})" if rho is not None else series
                if bx:
                    ax.errorbar(bx, by_, yerr=[lo, hi], fmt="o", color=colour, markersize=6, capsize=4,
                                elinewidth=1.6, label=label)
                    ax.errorbar(bx, by_, xerr=[left, right], fmt="none", color=colour, alpha=0.35, elinewidth=1.0)
                lw = g.get("lowess") or {}
                if lw.get("x"):
                    ax.plot(lw["x"], lw["y"], color=colour, linewidth=1.8, linestyle="-" if bx else "--",
                            label=None if bx else label)
            if name.startswith("gap "):
                ax.axhline(0.0, color="#555555", linewidth=0.8, linestyle=":")
            yr = shared.get(layout.family[name])
            if yr is not None:
                ax.set_ylim(*yr)
            symlog_ddp_axis(ax, xmax, left=-0.1)
            ax.set_title(name if len(panels) > 1 or name not in ("scores", "all")
                         else f"{score} by {ddp_label(result_ddp_col(result))}")
            ax.set_xlabel(f"{ddp_label(result_ddp_col(result))} (sentences, symlog scale)")
            ylab = layout.scale.get(name) or (score if "," not in score else "score")
            ax.set_ylabel(f"mean {ylab}" if not name.startswith("gap ") else f"{ylab} difference")
            legend_title = by[0] if by and len(panels[name]) > 1 else None
            if len(panels[name]) > 2:  # below the axes, where it covers no point
                ax.legend(frameon=False, fontsize=8, title=legend_title, title_fontsize=8, loc="upper center",
                          bbox_to_anchor=(0.5, -0.2), ncols=2, borderaxespad=0.0, columnspacing=1.2)
            else:
                ax.legend(frameon=False, fontsize=8, title=legend_title)
        head = title or f"{score} by {ddp_label(result_ddp_col(result))}: bin means with 95% document-bootstrap CIs and LOWESS"
        head += f" (page {page[0]} of {page[1]})" if page[1] > 1 else ""
        fig.suptitle(wrap_title(head, fig.get_figwidth(), 13), fontsize=13)
    return fig


def wrap_title(text: str, width_in: float, fontsize: float) -> str:
    """``text`` broken into lines that fit a figure ``width_in`` inches wide at ``fontsize`` points
    (a line holds about width * 72 / (0.6 * fontsize) characters, a bound for DejaVu Sans at its
    widest common letters; matplotlib clips a suptitle wider than its figure at both edges)."""
    import textwrap

    per_line = max(20, int(width_in * 72.0 / (0.6 * fontsize)) - 2)
    return "\n".join(textwrap.wrap(text, per_line, break_long_words=False, break_on_hyphens=False)) or text


#: DDP ticks of every symlog DDP axis (sentences)
DDP_TICKS = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000)


def symlog_ddp_axis(ax: Any, xmax: float, left: float) -> None:
    """The DDP x axis of every figure: symlog (linear in [0, 1], logarithmic beyond), so DDP 0 and
    DDP 300 sit on one readable axis; ticks 0, 1, 2, 5, 10, 20, 50 ... up to about ``xmax``."""
    from matplotlib.ticker import FixedLocator, FormatStrFormatter, NullLocator

    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(left=left)
    ticks = [t for t in DDP_TICKS if t <= max(xmax, 1.0) * 1.5]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.xaxis.set_minor_locator(NullLocator())


def hist_edges(top: int) -> Any:
    """Histogram bin edges (sentences) for DDP values ``0..top`` on the symlog axis: one bin per value for
    0-4, then bins that widen in the steps 5, 7, 10, 15, 20, 30, 50, 70, 100 ... (about equal widths on
    the log part of the axis). Bin ``k`` holds the whole DDP values ``edges[k] <= d < edges[k+1]`` and is drawn
    from ``edges[k]`` to ``edges[k+1]``, as the DDP bins of the curves are. Shape ``(n_bins + 1,)``."""
    import numpy as np

    edges = [0, 1, 2, 3, 4, 5]
    decade = 1
    while edges[-1] <= top:
        for m in (7, 10, 15, 20, 30, 50):
            edges.append(m * decade)
        decade *= 10
    edges = [e for e in edges if e <= top] + [next(e for e in edges if e > top)]
    return np.asarray(edges, dtype=np.float64)


def page_paths(dest: str | os.PathLike[str], n_pages: int) -> list[Path]:
    """Where the pages of a figure go: ``dest`` itself for one page, else ``STEM-p01.EXT`` ...
    ``STEM-pNN.EXT`` beside it (zero-padded to the width of ``n_pages``, at least 2 digits)."""
    d = Path(dest)
    if n_pages <= 1:
        return [d]
    width = max(2, len(str(n_pages)))
    return [d.with_name(f"{d.stem}-p{k:0{width}d}{d.suffix}") for k in range(1, n_pages + 1)]


@dataclass(frozen=True)
class CurvesWritten:
    """What :func:`write_curves` wrote: the figure files (one per page), the number of stratify groups
    (and gaps), of panels, the panels per figure and what was split (``None``: nothing)."""

    paths: list[Path]
    n_groups: int
    n_panels: int
    max_panels: int
    split: str | None
    #: figures of an earlier run at this output that this run did not rewrite, deleted
    removed: tuple[Path, ...] = ()

    def note(self) -> str:
        """One line for stderr."""
        split = f"; {self.split.replace(' split', ' were split')}" if self.split else ""
        gone = f"; removed {len(self.removed)} stale figure(s) of an earlier run" if self.removed else ""
        if len(self.paths) == 1:
            return f"wrote {self.paths[0]} (curves: {self.n_groups} groups in {self.n_panels} panel(s){split}){gone}"
        return (f"wrote {len(self.paths)} figures {self.paths[0]} ... {self.paths[-1].name} (curves: {self.n_groups} "
                f"groups in {self.n_panels} panels, at most {self.max_panels} per figure, --max-panels{split}){gone}")


def stale_pages(dest: str | os.PathLike[str], written: Sequence[Path], inputs: Sequence[Any] = ()) -> list[Path]:
    """Figures an earlier run left at the output ``dest`` that the pages ``written`` now replace:
    ``STEM-pNN.EXT`` files (:func:`page_paths`) beside ``dest`` that were not written, and ``dest``
    itself when this run wrote pages instead. Input files are never listed."""
    import re

    d = Path(dest)
    keep = {Path(p).resolve() for p in written}
    keep |= {Path(x).resolve() for x in inputs if isinstance(x, (str, os.PathLike))}
    pattern = re.compile(rf"^{re.escape(d.stem)}-p\d{{2,}}{re.escape(d.suffix)}$")
    parent = d.parent if str(d.parent) else Path(".")
    found = [p for p in parent.iterdir() if pattern.match(p.name)] if parent.is_dir() else []
    if len(written) > 1:
        found.append(d)
    return sorted(p for p in found if p.is_file() and not p.is_symlink() and p.resolve() not in keep)


def write_curves(result: dict[str, Any], dest: str | os.PathLike[str], *, title: str | None = None,
                 max_panels: int = MAX_PANELS, inputs: Sequence[Any] = (),
                 signature: dict[str, Any] | None = None) -> CurvesWritten:
    """Draw the curves of a stratify result and write them: to ``dest`` when they fit on one figure,
    else to the pages :func:`page_paths` names (each checked as ``dest`` was, before drawing)."""
    layout = curve_panels(result)
    pages = curve_pages(layout, max_panels)
    dests = page_paths(dest, len(pages))
    if len(dests) > 1:
        for d in dests:
            check_file_output("-o/--output", d, list(inputs), FIGURE_FORMATS)
    figs = curves_figures(result, title=title, max_panels=max_panels)
    save_figures(figs, dests, signature=signature)
    removed = stale_pages(dest, dests, inputs)
    for p in removed:  # only once every new page is in place
        p.unlink(missing_ok=True)
    return CurvesWritten(dests, len(result.get("groups", [])) + len(result.get("gaps", []) or []),
                         len(layout.panels), max_panels, layout.split, tuple(removed))


def save_figures(figs: list[Any], dests: list[Path], fmt: str | None = None,
                 signature: dict[str, Any] | None = None) -> list[Path]:
    """Write several figures, each atomically; they appear together (renamed after every one was
    drawn), and every figure is closed. ``signature`` is embedded in each (:func:`_save_metadata`)."""
    import contextlib

    from ..io.tables import atomic_path

    plt = pyplot()
    try:
        with contextlib.ExitStack() as stack:
            for fig, dest in zip(figs, dests):
                tmp = stack.enter_context(atomic_path(dest))
                f = fmt or figure_format(dest)
                with plt.rc_context(RC):
                    fig.savefig(tmp, format=f, dpi=120, metadata=_save_metadata(f, signature))
    finally:
        for fig in figs:
            plt.close(fig)
    return list(dests)


def save_figure(fig: Any, dest: str | os.PathLike[str], fmt: str | None = None,
                signature: dict[str, Any] | None = None) -> Path:
    """Write ``fig`` atomically (PNG at 120 dpi, or SVG with text as text) and close it; ``signature``
    is embedded (SVG ``<metadata>``, PNG text chunk ``ddpcore.signature``)."""
    from ..io.tables import atomic_path

    plt = pyplot()
    fmt = fmt or figure_format(dest)
    try:
        with atomic_path(dest) as tmp, plt.rc_context(RC):
            fig.savefig(tmp, format=fmt, dpi=120, metadata=_save_metadata(fmt, signature))
    finally:
        plt.close(fig)
    return Path(dest)


def svg_text(fig: Any) -> str:
    """``fig`` as an inline ``<svg>`` element (no XML prolog/doctype, no ``<metadata>``: the report
    carries the signature itself), for HTML; closes the figure."""
    plt = pyplot()
    buf = io.StringIO()
    try:
        with plt.rc_context(RC):
            fig.savefig(buf, format="svg", metadata={"Date": None})
    finally:
        plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    a, b = text.find("<metadata>"), text.find("</metadata>")
    return text[:a] + text[b + len("</metadata>"):] if 0 <= a < b else text


__all__ = ["MAX_SERIES", "SeriesStyle", "check_series", "series_style",
           "MAX_PANELS", "PALETTE", "CurvePanels", "check_result_ddp_col", "ddp_label", "result_ddp_col", "curve_pages", "curve_panels", "curves_figure", "curves_figures",
           "check_no_null_ddp", "ecdf_figure", "figure_format", "figure_signature", "hist_figure", "load_profile", "load_stratify", "page_paths", "save_figure",
           "save_figures", "stale_pages", "svg_text", "write_curves"]


def check_file_output(option: str, path: str | os.PathLike[str], inputs: list[Any],
                      exts: tuple[str, ...]) -> Path:
    """Check a figure/HTML output before any work, as :func:`ddpcore.io.outputs.check_outputs` does for
    tables: the extension (D672), not an existing folder (D676), the parent folder exists and is
    writable (D677), and it is not one of the inputs (D678; same resolved path or same inode)."""
    from ..io.outputs import file_identity, same_file

    p = Path(path)
    if str(path) == "-":
        raise DDPUsageError(f"{option} -: cannot write this output to standard output; give a file name "
                            f"({', '.join('.' + e for e in exts)})", code="D672")
    if p.is_dir():
        raise DDPUsageError(f"{option} {p}: is an existing folder; give a file name inside it", code="D676")
    ext = p.suffix.lower().lstrip(".")
    if ext not in exts:
        what = f"unknown output format (extension '.{ext}')" if ext else "no extension"
        raise DDPUsageError(f"{option} {p}: {what}; use {', '.join('.' + e for e in exts)}", code="D672")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise DDPUsageError(f"{option} {p}: the folder {parent} does not exist (or is a file); create it first "
                            f"(mkdir -p {parent})", code="D677")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise DDPUsageError(f"{option} {p}: the folder {parent} is not writable; choose another folder",
                            code="D677")
    me = file_identity(p)
    for inp in inputs:
        if inp is None or str(inp) in ("", "-"):
            continue
        if same_file(me, file_identity(Path(inp))):
            raise DDPUsageError(f"{option} {p}: this is the input file {inp}; writing it would destroy the input, "
                                "choose another output name", code="D678")
    return p
