"""Issue 23 §3, the report a curator can share: the first mention a chained distance runs to, top-N per
domain, one curves panel per metric scale, titles inside their figure, the symlog DDP histogram, the
stratify numbers and shareable paths. Expected values come from the hand-made fixtures below (each
written next to its assertion) or from plain-Python loops over the same rows (the oracles here), never
from the code under test."""
from __future__ import annotations

import html as html_mod
import json
import math
import os
import re
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("matplotlib")

from ddpcore.cli.main import main  # noqa: E402
from ddpcore.report import html as H  # noqa: E402
from ddpcore.report import plots  # noqa: E402
from test_report import SIG, _top_section, stratify_json, write_parquet  # noqa: E402


# ---------------------------------------------------------------- a chained profile (hand-made)
#
# document c (news), two segments of 3 sentences each (sentences 0-2 and 3-5):
#   s0 "Alice Smith arrived."  entity, first mention (entity 0)
#   s3 "Alice waved."          entity 0 -> antecedent "Alice Smith" (s0), distance 3 - 0 = 3
#   s5 "she smiled"            pronoun -> antecedent "Alice" (s3); chained: the distance runs on to the
#                              entity's first mention in s0: 5 - 0 = 5 = the segment's DDP
# document d (fiction), one segment with DDP 2 (pronoun to a noun two sentences back).
SEG0 = "Alice Smith arrived. The rain fell. It stopped."
SEG1 = "Alice waved. Bob left. Then she smiled."
SEGD = "The captain slept. Nothing moved. He woke."


@pytest.fixture()
def chained(tmp_path: Path) -> tuple[Path, Path]:
    seg = pl.DataFrame({
        "document_id": ["c", "c", "d"], "segment_id": [0, 1, 0], "domain": ["news", "news", "fiction"],
        "n_sentences": [3, 3, 3], "n_tokens": [9, 9, 8], "n_anchors": [2, 2, 1], "ddp": [1, 5, 2],
        "first_sentence": [0, 3, 0], "source": [SEG0, SEG1, SEGD]})
    anc = pl.DataFrame({
        "document_id": ["c", "c", "c", "c", "d"], "segment_id": [0, 0, 1, 1, 0], "anchor_index": [0, 1, 2, 3, 0],
        "sentence": [0, 2, 3, 5, 2], "kind": ["entity", "pronoun", "entity", "pronoun", "pronoun"],
        "label": ["PERSON", "NEUT_SG", "PERSON", "FEM_SG", "MASC_SG"],
        "text": ["Alice Smith", "It", "Alice", "she", "He"],
        "char_start": [0, SEG0.index("It"), 0, SEG1.index("she"), SEGD.index("He")],
        "char_end": [11, SEG0.index("It") + 2, 5, SEG1.index("she") + 3, SEGD.index("He") + 2],
        "entity_id": [0, -1, 0, -1, -1],
        "antecedent_kind": ["first_mention", "noun", "entity", "entity", "noun"],
        "antecedent_text": [None, "rain", "Alice Smith", "Alice", "The captain"],
        "antecedent_sentence": [-1, 1, 0, 3, 0], "reference_sentence": [-1, 1, 0, 0, 0],
        "distance_sentences": [-1, 1, 3, 5, 2]})
    return (write_parquet(seg, tmp_path / "chain.parquet"),
            write_parquet(anc, tmp_path / "chain_anchors.parquet", {**SIG, "table": "anchors"}))


def _block(page: str, doc: str, seg: int) -> str:
    """The first segment block of document ``doc``, segment ``seg`` in the page."""
    i = page.index(f"document <b>{doc}</b>, segment <b>{seg}</b>")
    start = page.rindex('<div class="seg"', 0, i)
    return page[start:page.index('<div class="seg"', i) if '<div class="seg"' in page[i:] else len(page)]


def test_anchor_line_runs_on_to_the_first_mention(chained, tmp_path: Path) -> None:
    p, a = chained
    out = tmp_path / "r.html"
    assert main(["report", str(p), "--anchors", str(a), "--top", "3", "-o", str(out)]) == 0
    block = _block(out.read_text(encoding="utf-8"), "c", 1)
    # 'she' (s5) -> antecedent 'Alice' (s3) -> first mention 'Alice Smith' (s0, segment 0): 5 - 0 = 5
    text = re.sub(r"<[^>]+>", "", block)
    assert "she (sentence 5) → antecedent Alice (sentence 3) → first mention Alice Smith (sentence 0, " \
           "segment 0), distance 5 − 0 = 5" in html_mod.unescape(text)
    # the antecedent is marked in this segment, the first mention in the context box of segment 0
    assert re.search(r'<mark class="anchor"[^>]*>she</mark>', block)
    assert re.search(r'<mark class="antecedent"[^>]*>Alice</mark> waved', block)
    assert re.search(r'<div class="ctx first"><mark class="first"[^>]*>Alice Smith</mark> arrived', block)
    # the folded `ddp explain` table says the same (ExplainResult.to_text on these rows)
    assert "entity first mentioned in sentence 0: 5 - 0 = 5" in html_mod.unescape(block)
    # a distance measured to the antecedent itself (d/0: reference = antecedent sentence) has no first mention
    other = _block(out.read_text(encoding="utf-8"), "d", 0)
    assert "first mention" not in re.sub(r"<[^>]+>", "", other).replace("the first mention", "")
    assert "distance 2 − 0 = 2" in html_mod.unescape(re.sub(r"<[^>]+>", "", other))


def test_first_mention_found_by_entity_not_by_text(chained) -> None:
    """Two mentions in the reference sentence: the one of the antecedent's entity is chosen, even when
    another mention there has the antecedent's text (a planted 'match by text first' fails this)."""
    _, a = chained
    anc = pl.read_parquet(a)
    extra = anc.head(1).with_columns(
        pl.lit("Alice").alias("text"), pl.lit(7, pl.Int64).alias("entity_id"),
        pl.lit(12, pl.Int64).alias("char_start"), pl.lit(17, pl.Int64).alias("char_end"))
    doc = pl.concat([extra, anc]).filter(pl.col("document_id") == "c")  # entity 7 'Alice' listed first
    she = doc.filter(pl.col("text") == "she").row(0, named=True)
    fm = H.first_mention(doc, she, "segment_id")
    assert fm is not None and (fm.text, fm.sentence, fm.segment, fm.span) == ("Alice Smith", 0, 0, (0, 11))
    # the antecedent itself is the reference: no first mention to show
    assert H.first_mention(doc, doc.filter(pl.col("text") == "It").row(0, named=True), "segment_id") is None


# ---------------------------------------------------------------- top N per domain


def _domain_sections(page: str) -> dict[str, list[tuple[str, str]]]:
    """domain -> [(document, segment)] in the order the per-domain section lists them."""
    start = page.index("segments by DDP per domain</h2>")
    end = page.find("<h2>", start)
    sec = page[start:end if end >= 0 else len(page)]
    out: dict[str, list[tuple[str, str]]] = {}
    for m in re.finditer(r'<h3 id="domain-([^"]*)">.*?(?=<h3 id="domain-|$)', sec, flags=re.S):
        out[html_mod.unescape(m.group(1))] = re.findall(
            r"(?:<div class=\"meta\">|<p class=\"seen\">)document <b>([^<]*)</b>, segment <b>([^<]*)</b>", m.group(0))
    return out


def _oracle_per_domain(rows: list[dict], k: int) -> dict[str, list[tuple[str, str]]]:
    """Per domain, the k rows of highest DDP above 0, ties in profile order: a sort of (-ddp, row)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for dom in sorted({r["domain"] for r in rows}):
        ranked = sorted((-r["ddp"], i) for i, r in enumerate(rows) if r["domain"] == dom and r["ddp"] > 0)
        out[dom] = [(rows[i]["document_id"], str(rows[i]["segment_id"])) for _, i in ranked[:k]]
    return out


def test_top_per_domain_lists_each_domain_and_links_the_overall_top(chained, tmp_path: Path) -> None:
    p, a = chained
    page = H.render(str(p), anchors=str(a), top=1, top_per_domain=2)
    # overall top 1: c/1 (DDP 5); news: c/1 (linked, already shown) then c/0 (DDP 1); fiction: d/0 (DDP 2)
    assert _domain_sections(page) == {"fiction": [("d", "0")], "news": [("c", "1"), ("c", "0")]}
    assert re.search(r'<p class="seen">document <b>c</b>, segment <b>1</b>.*?<a href="#top-1">', page)
    assert 'id="top-1"' in _top_section(page)  # the link target exists
    assert 'id="dom-2"' in page and 'id="dom-0"' in page  # d/0 is profile row 2, c/0 row 0
    assert "segments by DDP per domain</h2>" not in H.render(str(p), anchors=str(a), top=1, top_per_domain=0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["news", "social", "speech"]), st.one_of(st.just(0), st.integers(0, 30))),
                min_size=2, max_size=25), st.integers(1, 4), st.integers(1, 3))
def test_top_per_domain_matches_a_sort(rows, k, top) -> None:
    recs = [{"document_id": f"doc{i // 3}", "segment_id": i % 3, "domain": d, "ddp": v, "source": f"text {i}"}
            for i, (d, v) in enumerate(rows)]
    # one domain per document, as profiles have: the domain of a document's first row
    first = {}
    for r in recs:
        r["domain"] = first.setdefault(r["document_id"], r["domain"])
    if len({r["domain"] for r in recs}) < 2:
        return
    df = pl.DataFrame(recs)
    # the section alone (render() also draws the figures: slow); render() puts it under this heading
    page = "segments by DDP per domain</h2>" + H.domain_top_segments(df, None, SIG, k, top)
    assert _domain_sections(page) == _oracle_per_domain(recs, k)


# ---------------------------------------------------------------- curves: one panel per metric


def _two_metric_result(tmp: Path, profile_path: Path, by: list[str]) -> dict:
    """A real stratify result over two score columns on scales 100x apart (XCOMET-like 0-1 and MetricX-like
    -25-0), stacked into the 'metric' column."""
    from ddpcore.cli.stratify import stratify_files as stratify
    from ddpcore.stats.stratify import dumps

    recs = []
    for sysname, off in (("sysA", 0.0), ("sysB", 0.05)):
        for j, (d, s) in enumerate(zip(["a", "a", "a", "b", "b"], [0, 1, 2, 0, 1])):
            recs.append({"system": sysname, "document_id": d, "segment_id": s,
                         "xcomet": 0.5 + off + 0.04 * j, "metricx": -20.0 + 3 * j + 10 * off})
    scores = tmp / "two.csv"
    pl.DataFrame(recs).write_csv(scores)
    res = stratify(profile_path, scores, ["xcomet", "metricx"], by=by, bins=[0, 1, 5, math.inf], n_boot=50, seed=3)
    return json.loads(dumps(res))


@pytest.mark.parametrize("by", [["metric"], ["metric", "system"], ["system", "metric"]])
def test_curves_one_panel_per_metric(tmp_path: Path, by: list[str]) -> None:
    seg = pl.DataFrame({"document_id": ["a", "a", "a", "b", "b"], "segment_id": [0, 1, 2, 0, 1],
                        "domain": ["news"] * 3 + ["fiction"] * 2, "ddp": [0, 2, 4, 0, 3],
                        "first_sentence": [0, 2, 4, 0, 2], "n_sentences": [2] * 5})
    p = write_parquet(seg, tmp_path / "p.parquet")
    res = _two_metric_result(tmp_path, p, by)
    layout = plots.curve_panels(res)
    # every panel holds one metric, and each metric has its own panel (the same metric in every series)
    metrics = {name: {g.get("metric") for _, g in series} for name, series in layout.panels.items()}
    assert all(len(m) == 1 for m in metrics.values()), metrics
    assert sorted(m.pop() for m in metrics.values()) == ["metricx", "xcomet"]
    assert layout.scale == {name: next(iter({g.get("metric") for _, g in s})) for name, s in layout.panels.items()}
    figs = plots.curves_figures(res)
    try:
        axes = [ax for ax in figs[0].axes if ax.get_visible()]
        assert len(axes) == 2
        assert sorted(ax.get_ylabel() for ax in axes) == ["mean metricx", "mean xcomet"]
        (lo1, hi1), (lo2, hi2) = sorted(ax.get_ylim() for ax in axes)
        assert hi1 < lo2  # the two scales do not share a range: XCOMET is not flattened
    finally:
        import matplotlib.pyplot as plt

        for f in figs:
            plt.close(f)


def test_metric_column_name_is_stratify_s() -> None:
    from ddpcore.stats.stratify import METRIC

    assert plots.METRIC_COL == METRIC


# ---------------------------------------------------------------- titles inside the figure


def _inside(fig, artist) -> bool:
    fig.canvas.draw()
    box = artist.get_window_extent(fig.canvas.get_renderer())
    w, h = fig.canvas.get_width_height()
    return box.x0 >= 0 and box.x1 <= w and box.y1 <= h


@pytest.mark.parametrize("n_panels", [1, 2, 4])
def test_curves_title_is_not_clipped(tmp_path: Path, n_panels: int) -> None:
    """The figure's suptitle lies inside the figure (matplotlib clips a wider one at both edges, as the
    issue saw): drawn, measured by the renderer."""
    groups = [{"system": f"system-with-a-long-name-{k}", "n": 5, "spearman": {"rho": -0.1, "p": 0.5},
               "bins": [{"low": 0, "high": 1, "n": 2, "mean": 0.5, "ci_low": 0.4, "ci_high": 0.6}],
               "lowess": {"x": [0, 1], "y": [0.5, 0.4]}} for k in range(n_panels)]
    for g in groups:
        g["metric"] = g["system"]
    res = {"groups": groups, "signature": {"by": ["metric"], "score_col": ["XCOMET-XL", "MetricX-24-Hybrid-XL",
                                                                          "CometKiwi-XL", "GEMBA-ESA-CMDA"]}}
    figs = plots.curves_figures(res, max_panels=4)
    try:
        assert _inside(figs[0], figs[0]._suptitle)
        assert "\n" in figs[0]._suptitle.get_text() or n_panels == 4
    finally:
        import matplotlib.pyplot as plt

        for f in figs:
            plt.close(f)


@given(st.text(alphabet=st.characters(min_codepoint=65, max_codepoint=122), min_size=1, max_size=300),
       st.floats(3.0, 20.0), st.sampled_from([10, 12, 13]))
def test_wrap_title_keeps_words_and_width(text, width, size) -> None:
    out = plots.wrap_title(text, width, size)
    per_line = max(20, int(width * 72.0 / (0.6 * size)) - 2)
    assert out.split() == text.split() or out == text  # words kept, in order
    assert all(len(ln) <= per_line or " " not in ln for ln in out.split("\n"))


# ---------------------------------------------------------------- the histogram on the symlog axis


@given(st.integers(0, 100_000))
def test_hist_edges_cover_every_value_once(top) -> None:
    e = plots.hist_edges(top).tolist()
    assert e[:5] == [0, 1, 2, 3, 4][: len(e[:5])] and all(a < b for a, b in zip(e, e[1:]))
    assert e[-2] <= top < e[-1]  # the last bin holds the maximum, no empty bin beyond it
    assert all(b / a <= 2.0 for a, b in zip(e[4:], e[5:]) if a)  # log-even: each bin at most doubles


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 600), min_size=1, max_size=200))
def test_histogram_counts_match_a_loop(values) -> None:
    df = pl.DataFrame({"document_id": [f"d{i}" for i in range(len(values))], "segment_id": [0] * len(values),
                       "ddp": values})
    fig = plots.hist_figure(df, signature=SIG)
    try:
        ax = fig.axes[0]
        assert ax.get_xscale() == "symlog"
        edges = plots.hist_edges(max(values)).tolist()
        want = [sum(1 for v in values if lo <= v < hi) for lo, hi in zip(edges, edges[1:])]  # the oracle
        got = [int(round(r.get_height())) for r in ax.patches]
        assert got == want
        assert [r.get_x() for r in ax.patches] == pytest.approx(edges[:-1])
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_ecdf_and_hist_by_domain_on_symlog(chained) -> None:
    df, sig = plots.load_profile(chained[0])
    for make in (plots.hist_figure, plots.ecdf_figure):
        fig = make(df, by="domain", signature=sig)
        try:
            assert fig.axes[0].get_xscale() == "symlog" and "symlog" in fig.axes[0].get_xlabel()
        finally:
            import matplotlib.pyplot as plt

            plt.close(fig)


# ---------------------------------------------------------------- the stratify numbers


def test_stratify_numbers_match_a_loop(tmp_path: Path) -> None:
    """The bin table's n and mean per (system, bin) equal a loop over the joined rows; CI bounds, n_boot
    and seed are the stratify result's; the join counts are the JSON's."""
    seg = pl.DataFrame({"document_id": ["a", "a", "a", "b", "b"], "segment_id": [0, 1, 2, 0, 1],
                        "domain": ["news"] * 3 + ["fiction"] * 2, "ddp": [0, 2, 4, 0, 3],
                        "first_sentence": [0, 2, 4, 0, 2], "n_sentences": [2] * 5,
                        "source": ["x"] * 5})
    p = write_parquet(seg, tmp_path / "p.parquet")
    j = stratify_json(p, tmp_path / "s.json")
    res = json.loads(j.read_text(encoding="utf-8"))
    page = H.render(str(p), stratify=str(j), top=1)
    sec = page[page.index("<h3>Mean score per DDP bin</h3>"):]
    assert "n_boot 200, seed 1" in sec
    scores = pl.read_csv(j.with_suffix(".scores.csv"))
    ddp = {(r["document_id"], r["segment_id"]): r["ddp"] for r in seg.iter_rows(named=True)}
    rows = re.findall(r"<tr>(.*?)</tr>", sec[sec.index('<table class="bins">'):sec.index("</table>")], flags=re.S)
    cells = [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r, flags=re.S)] for r in rows]
    system = None
    seen = 0
    for c in cells:
        if not c:  # the header row
            continue
        if len(c) == 7:
            system, c = c[0], c[3:]
        lo_s, hi_s = re.match(r"\[(\S+), (\S+)\)", c[0]).groups()
        lo, hi = float(lo_s), math.inf if hi_s == "∞" else float(hi_s)
        vals = [r["score"] for r in scores.iter_rows(named=True)
                if r["system"] == system and lo <= ddp[(r["document_id"], r["segment_id"])] < hi]
        assert c[1] == f"{len(vals):,}"
        if vals:
            assert float(c[2]) == pytest.approx(sum(vals) / len(vals), rel=1e-3)
            g = next(g for g in res["groups"] if g["system"] == system)
            b = next(b for b in g["bins"] if b["low"] == lo)
            assert c[3] == f"[{b['ci_low']:.4g}, {b['ci_high']:.4g}]"
        seen += 1
    assert seen == 6  # 2 systems x 3 bins
    join = res["signature"]["join"]
    jt = page[page.index('<table class="join">'):]
    assert f'<td class="num">{join["score_rows"]:,}</td>' in jt and "Join on document_id=document_id" in jt


# ---------------------------------------------------------------- shareable paths


def _oracle_shareable(v, home: str):
    """Independent: pathlib for the file name, str.replace for the home folder."""
    from pathlib import PurePosixPath, PureWindowsPath

    if isinstance(v, dict):
        return {k: _oracle_shareable(x, home) for k, x in v.items()}
    if isinstance(v, list):
        return [_oracle_shareable(x, home) for x in v]
    if isinstance(v, str) and "\n" not in v:
        if v.startswith("/") and v.strip("/"):
            return PurePosixPath(v).name
        if re.match(r"^[A-Za-z]:\\", v):
            return PureWindowsPath(v).name
    if not isinstance(v, str):
        return v
    v = v.replace(home, "~")  # then a path inside a message: each space-separated /a/b/name or ~/a/name
    return " ".join(PurePosixPath(t).name if (t.startswith("/") or t.startswith("~/")) and t.count("/") >= 2
                    and not t.endswith("/") else t for t in v.split(" "))


def test_shareable_fixed_vectors() -> None:
    home = "/home/curator"
    sig = {"input": "/home/curator/wmt/in.jsonl", "cache": {"dir": "/home/curator/.cache/ddpcore", "hits": 3},
           "rel": "data/in.jsonl", "win": "C:\\Users\\c\\in.txt", "note": "read from /home/curator/x (ok)",
           "warn": "4 of 9 rows of /srv/scores/s.tsv have no profile segment", "bare": "under /home/curator only",
           "list": ["/srv/a/b.parquet", "plain", 1.5, None], "ddpcore": "0.1.0"}
    want = {"input": "in.jsonl", "cache": {"dir": "ddpcore", "hits": 3}, "rel": "data/in.jsonl", "win": "in.txt",
            "note": "read from ~/x (ok)",
            "warn": "4 of 9 rows of s.tsv have no profile segment", "bare": "under ~ only", "list": ["b.parquet", "plain", 1.5, None], "ddpcore": "0.1.0"}
    assert H.shareable(sig, home=home) == want == _oracle_shareable(sig, home)


_seg = st.text(alphabet="abcxyz_.-0123456789", min_size=1, max_size=8).filter(lambda s: s not in (".", ".."))


@given(st.recursive(
    st.one_of(st.integers(), st.none(), st.lists(_seg, min_size=1, max_size=4).map(lambda p: "/" + "/".join(p)),
              st.lists(_seg, min_size=1, max_size=3).map(lambda p: "/home/u/" + "/".join(p)),
              st.lists(_seg, min_size=1, max_size=3).map("/".join),
              _seg.map(lambda s: f"see /home/u/{s} here")),
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(_seg, kids, max_size=3)), max_leaves=12))
def test_shareable_matches_the_oracle_and_leaks_no_folder(obj) -> None:
    got = H.shareable(obj, home="/home/u")
    assert got == _oracle_shareable(obj, "/home/u")
    assert "/home/u" not in json.dumps(got)


def test_report_names_no_local_folder(tmp_path: Path, monkeypatch, chained) -> None:
    home = tmp_path / "home" / "curator"
    home.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    p, a = chained
    sig = {**SIG, "input": str(home / "corpora" / "wmt25.jsonl"), "cache": {"dir": str(home / ".cache" / "ddpcore")}}
    prof = write_parquet(pl.read_parquet(p), home / "ddp.parquet", sig)
    out = tmp_path / "r.html"
    assert main(["report", str(prof), "--anchors", str(a), "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert str(home) not in page and str(tmp_path) not in page and "/home/curator" not in page
    assert "<h1>DDP report: ddp.parquet</h1>" in page and "&quot;input&quot;: &quot;wmt25.jsonl&quot;" in page
    meta = json.loads(html_mod.unescape(re.search(r'name="ddpcore-signature" content="([^"]*)"', page).group(1)))
    assert meta["profile"] == "ddp.parquet" and meta["anchors"] == "chain_anchors.parquet"
    assert meta["profile_signature"]["cache"]["dir"] == "ddpcore" and meta["top_per_domain"] == 3
    # the profile's own Parquet signature is not touched
    stored = json.loads(pq.read_schema(prof).metadata[b"ddpcore.signature"])
    assert stored["input"] == str(home / "corpora" / "wmt25.jsonl")


def test_top_per_domain_negative_is_d610(chained) -> None:
    from ddpcore.errors import DDPUsageError

    with pytest.raises(DDPUsageError, match=r"D610.*--top-per-domain"):
        H.render(str(chained[0]), top_per_domain=-1)
    assert os.sep  # keep os imported for the HOME test above


def test_certified_ddp_set_by_partial_credit_is_shown(chained) -> None:
    """--ddp-col ddp_certified: the anchor that sets it is found by its distance_certified (issue 21's
    partial credit: the certain part of an uncertain chain), and its line says so. Segment c/1: 'Alice'
    (full distance 3) abstains; 'she' (full distance 5, uncertain) is certified back 2 sentences, so
    ddp_certified = 2 - an anchor no full distance of 2 would find."""
    seg_path, anc_path = chained
    df = pl.read_parquet(seg_path).with_columns(pl.Series("ddp_certified", [0, 2, 0]))
    anc = pl.read_parquet(anc_path).with_columns(
        pl.Series("certified", [None, False, False, False, False]),
        pl.Series("confidence", [None, 0.5, 0.4, 0.6, 0.1]),
        pl.Series("distance_certified", [0, 0, 0, 2, 0]))
    row = df.row(1, named=True)
    html = H.segment_block(df, row, anc, SIG, ddp_col="ddp_certified")
    assert "<b>she</b>" in html and "partial credit" in html and "full distance 5 &minus; 0 = 5" in html
    assert "no anchor with this distance" not in html
    # the explain text of the same rows says why 'she' counts 2 and 'Alice' nothing
    from ddpcore.explain import ExplainResult

    sig = {"certify": {"threshold": 0.93, "threshold_long": 0.93, "long_distance": 15, "file": "m.json"}}
    text = ExplainResult(document="c", segment="1", ddp=5, ddp_certified=2, n_sentences=3, first_sentence=3,
                         text=SEG1, anchors=anc.filter(pl.col("segment_id") == 1), signature=sig).to_text()
    she = next(line for line in text.splitlines() if "'she'" in line)
    alice = next(line for line in text.splitlines() if "'Alice'" in line)
    assert "certified back 2 sentence(s) (partial credit" in she
    assert "abstains from the certified DDP" in alice
