"""``ddp plot`` and ``ddp report``: figures (valid PNG/SVG, titles, axis labels, palette colours) and the
self-contained HTML report rendered in headless Chromium. Profiles and anchors are hand-made Parquet files
with a signature (no spaCy)."""
from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.cli.main import main

pytest.importorskip("matplotlib")
from ddpcore.report.plots import PALETTE  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SIG = {"ddpcore": "0.1.0", "distance": "chained", "rules": "refined", "pipeline_name": "en_core_web_sm",
       "columns": {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"}}


def write_parquet(df: pl.DataFrame, path: Path, sig: dict | None = SIG) -> Path:
    t = df.to_arrow()
    if sig is not None:
        t = t.replace_schema_metadata({b"ddpcore.signature": json.dumps(sig).encode()})
    pq.write_table(t, path)
    return path


@pytest.fixture()
def profile(tmp_path: Path) -> tuple[Path, Path]:
    # document a (news): 3 segments, sentences 0..5; document b (fiction): 2 segments, sentences 0..3
    texts = ["Alice Smith met <Bob> at the station. They talked.",
             "It was late. She & he left.",
             "Later, Alice called him again. He answered.",
             "The ship sailed. The captain slept.",
             "Hours passed. He woke at dawn."]
    seg = pl.DataFrame({
        "document_id": ["a", "a", "a", "b", "b"], "segment_id": [0, 1, 2, 0, 1],
        "domain": ["news", "news", "news", "fiction", "fiction"], "n_sentences": [2, 2, 2, 2, 2],
        "n_tokens": [10, 8, 9, 7, 6], "n_anchors": [2, 2, 2, 1, 1], "ddp": [0, 2, 4, 0, 3],
        "first_sentence": [0, 2, 4, 0, 2], "source": texts})
    s2 = texts[2]
    s4 = texts[4]
    anc = pl.DataFrame({
        "document_id": ["a", "a", "a", "b"], "segment_id": [0, 1, 2, 1], "anchor_index": [0, 0, 0, 0],
        "sentence": [0, 3, 4, 3], "kind": ["entity", "pronoun", "entity", "pronoun"],
        "label": ["PERSON", "she", "PERSON", "he"],
        "text": ["Alice Smith", "She", "Alice", "He"],
        "char_start": [0, 13, s2.index("Alice"), s4.index("He")],
        "char_end": [11, 16, s2.index("Alice") + 5, s4.index("He") + 2],
        "entity_id": [0, 0, 0, 1], "antecedent_kind": ["first_mention", "entity", "entity", "noun"],
        "antecedent_text": [None, "Alice Smith", "Alice Smith", "The captain"],
        "antecedent_sentence": [-1, 0, 0, 1], "reference_sentence": [-1, 0, 0, 0],
        "distance_sentences": [-1, 3, 4, 3]})
    return (write_parquet(seg, tmp_path / "ddp.parquet"),
            write_parquet(anc, tmp_path / "anchors.parquet", {**SIG, "table": "anchors"}))


def stratify_json(profile_path: Path, path: Path) -> Path:
    """A real `ddp stratify` JSON result (two systems, scores falling with DDP)."""
    from ddpcore.cli.stratify import stratify_files as stratify
    from ddpcore.stats.stratify import dumps

    scores = pl.DataFrame({"system": ["sysA"] * 5 + ["sysB"] * 5,
                           "document_id": ["a", "a", "a", "b", "b"] * 2, "segment_id": [0, 1, 2, 0, 1] * 2,
                           "score": [90.0, 80.0, 70.0, 88.0, 75.0, 85.0, 70.0, 60.0, 80.0, 66.0]})
    scores.write_csv(path.with_suffix(".scores.csv"))
    res = stratify(profile_path, path.with_suffix(".scores.csv"), "score", by=["system"], bins=[0, 1, 5, math.inf],
                   n_boot=200, seed=1)
    path.write_text(dumps(res), encoding="utf-8")
    return path


def svg_texts(path: Path) -> str:
    return " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text(encoding="utf-8")))


# ---------------------------------------------------------------- plots


@pytest.mark.parametrize("kind", ["hist", "ecdf"])
def test_plot_profile_png_and_svg(profile, tmp_path: Path, kind: str, capsys) -> None:
    p, _ = profile
    png = tmp_path / f"{kind}.png"
    assert main(["plot", str(p), "--kind", kind, "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == PNG_MAGIC
    svg = tmp_path / f"{kind}.svg"
    assert main(["plot", str(p), "--kind", kind, "--by", "domain", "-o", str(svg)]) == 0
    text = svg.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text and text.rstrip().endswith("</svg>")
    words = svg_texts(svg)
    assert "DDP (sentences, symlog scale)" in words  # the DDP axis of every figure (issue 23)
    assert ("segments" in words) if kind == "hist" else ("share of segments with DDP ≤ x" in words)
    assert "5 segments, 2 documents" in words
    assert "fiction (n=2)" in words and "news (n=3)" in words
    colours = set(c.upper() for c in re.findall(r"#[0-9a-fA-F]{6}", text))
    assert PALETTE[0].upper() in colours and PALETTE[1].upper() in colours  # one palette colour per domain
    assert not list(tmp_path.glob(".*.tmp"))  # atomic write left no temp file


SVG_NS = "{http://www.w3.org/2000/svg}"
DC_NS = "{http://purl.org/dc/elements/1.1/}"


def _bare(elem):
    """``elem`` with whitespace-only text and tails dropped (layout whitespace is not content)."""
    for e in elem.iter():
        if e.text is not None and not e.text.strip():
            e.text = None
        if e.tail is not None and not e.tail.strip():
            e.tail = None
    return elem


@pytest.mark.parametrize("kind", ["hist", "ecdf"])
def test_plot_writes_its_signature_into_the_figure(profile, tmp_path: Path, kind: str) -> None:
    import xml.etree.ElementTree as ET

    from PIL import Image

    from ddpcore import __version__

    p, _ = profile
    # the input by its file name, no local folder (as ddp report shows paths: PATHS_NOTE)
    from ddpcore.report.html import PATHS_NOTE

    want = {"ddpcore": __version__, "figure": kind, "input": p.name, "ddp_col": "ddp", "input_signature": SIG,
            "paths": PATHS_NOTE}
    svg = tmp_path / f"{kind}.svg"
    assert main(["plot", str(p), "--kind", kind, "-o", str(svg)]) == 0
    root = ET.parse(svg).getroot()  # the written file is well-formed XML
    assert root.tag == f"{SVG_NS}svg"
    meta = root.findall(f"{SVG_NS}metadata")
    assert len(meta) == 1
    desc = meta[0].find(f".//{DC_NS}description")
    assert desc is not None and json.loads(desc.text) == want
    assert meta[0].find(f".//{DC_NS}date") is None  # no date: the same input gives the same file
    png = tmp_path / f"{kind}.png"
    assert main(["plot", str(p), "--kind", kind, "-o", str(png)]) == 0
    with Image.open(png) as im:
        assert json.loads(im.text["ddpcore.signature"]) == want


def test_plot_curves_pages_carry_the_stratify_signature(profile, tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    j = stratify_json(profile[0], tmp_path / "strat.json")
    out = tmp_path / "curves.svg"
    assert main(["plot", str(j), "--kind", "curves", "-o", str(out)]) == 0
    desc = ET.parse(out).getroot().find(f"{SVG_NS}metadata//{DC_NS}description")
    got = json.loads(desc.text)
    assert got["figure"] == "curves" and got["input"] == j.name  # the file name: no local folder
    from ddpcore.signature import shareable

    # the stratify result's signature, its local folders dropped (file names kept)
    assert got["input_signature"] == shareable(json.loads(j.read_text(encoding="utf-8"))["signature"])


def test_inline_svg_is_the_written_svg_without_its_metadata(profile, tmp_path: Path) -> None:
    """``svg_text`` (the figures inlined in the HTML report) cuts out exactly the ``<metadata>`` element:
    the rest equals the SVG file ``save_figure`` writes of the same figure, element for element."""
    import xml.etree.ElementTree as ET

    from ddpcore.report import plots

    df, sig = plots.load_profile(profile[0])
    full = tmp_path / "full.svg"
    plots.save_figure(plots.hist_figure(df, by="domain", signature=sig), full, signature={"k": "v"})
    inline = plots.svg_text(plots.hist_figure(df, by="domain", signature=sig))
    assert inline.startswith("<svg") and inline.rstrip().endswith("</svg>")
    got = ET.fromstring(inline)  # well-formed: no stray piece of the cut
    assert got.find(f".//{SVG_NS}metadata") is None and "metadata" not in inline
    ref = ET.parse(full).getroot()
    ref.remove(ref.find(f"{SVG_NS}metadata"))
    assert ET.tostring(_bare(got)) == ET.tostring(_bare(ref))
    # and every figure inlined in the report parses the same way
    out = tmp_path / "report.html"
    assert main(["report", str(profile[0]), "-o", str(out)]) == 0
    blocks = re.findall(r"<svg\b.*?</svg>", out.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 2
    for b in blocks:
        assert ET.fromstring(b).find(f".//{SVG_NS}metadata") is None


def test_the_signature_of_a_pq_profile_is_read(profile, tmp_path: Path) -> None:
    from ddpcore.report import plots

    pq_file = tmp_path / "ddp.PQ"
    shutil.copy(profile[0], pq_file)
    # the reader takes .pq (any case) as Parquet; the signature reader now follows the same rule
    assert plots.read_signature(pq_file) == SIG
    assert plots.load_profile(pq_file)[1] == SIG


def test_plot_curves(profile, tmp_path: Path) -> None:
    j = stratify_json(profile[0], tmp_path / "strat.json")
    out = tmp_path / "curves.svg"
    assert main(["plot", str(j), "--kind", "curves", "-o", str(out)]) == 0
    words = svg_texts(out)
    assert "DDP (sentences, symlog scale)" in words and "mean score" in words
    assert "score by DDP: bin means with 95% document-bootstrap CIs and LOWESS" in words
    assert re.search(r"sysA \(ρ=[-+]\d\.\d\d\)", words) and "sysB (ρ=" in words
    colours = set(c.upper() for c in re.findall(r"#[0-9a-fA-F]{6}", out.read_text()))
    assert {PALETTE[0].upper(), PALETTE[1].upper()} <= colours
    png = tmp_path / "curves.png"
    assert main(["plot", str(j), "--kind", "curves", "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == PNG_MAGIC


def many_groups_json(profile_path: Path, path: Path, n_systems: int = 20) -> Path:
    """A real `ddp stratify` result of n_systems x 2 metrics (--by system,metric), as a long scores table."""
    from ddpcore.cli.stratify import stratify_files as stratify
    from ddpcore.stats.stratify import dumps

    rows = []
    for k in range(n_systems):
        for m, scale in (("m1", 1.0), ("m2", 0.01)):
            for j, (d, s) in enumerate(zip(["a", "a", "a", "b", "b"], [0, 1, 2, 0, 1])):
                rows.append({"system": f"sys{k:02d}", "metric": m, "document_id": d, "segment_id": s,
                             "score": scale * (50.0 + k + 7 * j - (3 * j if k % 2 else 0))})
    scores = path.with_suffix(".scores.csv")
    pl.DataFrame(rows).write_csv(scores)
    res = stratify(profile_path, scores, "score", by=["system", "metric"], bins=[0, 1, 5, math.inf], n_boot=50, seed=1)
    path.write_text(dumps(res), encoding="utf-8")
    return path


def test_plot_curves_removes_the_pages_of_an_earlier_longer_run(profile, tmp_path: Path, capsys) -> None:
    """4 pages (--max-panels 2 on 6 panels: 2+1+2+1), then 2 pages, then everything on one figure:
    each run leaves exactly its own figures; an unrelated file beside them is kept."""
    j = many_groups_json(profile[0], tmp_path / "many.json")
    out = tmp_path / "curves.svg"
    other = tmp_path / "curves-notes.svg"
    other.write_text("<svg/>", encoding="utf-8")

    def figures():
        return sorted(x.name for x in tmp_path.glob("curves*.svg") if x != other)

    assert main(["plot", str(j), "--kind", "curves", "--max-panels", "2", "-o", str(out)]) == 0
    assert figures() == [f"curves-p0{k}.svg" for k in range(1, 5)]
    capsys.readouterr()
    assert main(["plot", str(j), "--kind", "curves", "--max-panels", "4", "-o", str(out)]) == 0
    assert figures() == ["curves-p01.svg", "curves-p02.svg"]
    assert "removed 2 stale figure(s) of an earlier run" in capsys.readouterr().err
    assert main(["plot", str(j), "--kind", "curves", "--max-panels", "12", "-o", str(out)]) == 0
    assert figures() == ["curves.svg"] and other.exists()
    assert "removed 2 stale figure(s)" in capsys.readouterr().err
    assert main(["plot", str(j), "--kind", "curves", "--max-panels", "4", "-o", str(out)]) == 0
    assert figures() == ["curves-p01.svg", "curves-p02.svg"]  # the single figure is replaced by pages


def test_plot_curves_many_groups_are_split_and_paged(profile, tmp_path: Path, capsys) -> None:
    from ddpcore.report.plots import curve_pages, curve_panels, curves_figures, load_stratify

    j = many_groups_json(profile[0], tmp_path / "many.json")
    # 20 systems x 2 metrics: each metric panel has 20 series > 8 colours -> 3 panels of 8, 8, 4 systems
    # (systems sorted by name: sys00-sys07, sys08-sys15, sys16-sys19); --max-panels 4 -> one metric per page
    out = tmp_path / "curves.svg"
    assert main(["plot", str(j), "--kind", "curves", "--max-panels", "4", "-o", str(out)]) == 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "wrote 2 figures" in err and "curves-p01.svg ... curves-p02.svg" in err
    assert "40 groups in 6 panels, at most 4 per figure" in err and "more than 8 system values (up to 20)" in err
    assert not out.exists() and sorted(x.name for x in tmp_path.glob("curves*")) == ["curves-p01.svg", "curves-p02.svg"]
    for page, metric in ((1, "m1"), (2, "m2")):
        words = svg_texts(tmp_path / f"curves-p0{page}.svg")
        assert f"(page {page} of 2)" in words
        assert [f"{metric} [system {a}-{b} of 20]" in words for a, b in ((1, 8), (9, 16), (17, 20))] == [True] * 3
        # every system is in the legends of its metric's page once
        assert sorted(re.findall(r"(sys\d\d) \(ρ=", words)) == [f"sys{k:02d}" for k in range(20)]
    # the parts of one metric share their y range
    res = load_stratify(j)
    layout = curve_panels(res)
    assert [len(v) for v in layout.panels.values()] == [8, 8, 4, 8, 8, 4]
    assert curve_pages(layout, 4) == [list(layout.panels)[:3], list(layout.panels)[3:]]
    assert curve_pages(layout, 12) == [list(layout.panels)]
    names = list(layout.panels)  # a family larger than a page fills whole pages; the next family starts anew
    assert curve_pages(layout, 2) == [names[0:2], names[2:3], names[3:5], names[5:6]]
    figs = curves_figures(res, max_panels=4)
    try:
        for fig in figs:
            lims = {ax.get_ylim() for ax in fig.axes if ax.get_visible()}
            assert len(lims) == 1, lims
        assert figs[0].axes[0].get_ylim() != figs[1].axes[0].get_ylim()  # m2 is on another scale
    finally:
        import matplotlib.pyplot as plt

        for fig in figs:
            plt.close(fig)
    # the default (12 panels per figure) fits: -o itself is written, and the note says what was split
    png = tmp_path / "one.png"
    assert main(["plot", str(j), "--kind", "curves", "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == PNG_MAGIC and "in 6 panel(s)" in capsys.readouterr().err
    # the report embeds every page: 4 panels per figure there, so one metric (3 panels) per figure
    from ddpcore.report.html import REPORT_PANELS, render

    page = render(str(profile[0]), stratify=str(j), top=2)
    assert REPORT_PANELS == 4 and page.count('<figure id="fig-curves') == 2
    assert 'id="fig-curves"' in page and 'id="fig-curves-2"' in page and "(page 2 of 2)" in page
    assert main(["plot", str(j), "--kind", "curves", "--max-panels", "0", "-o", str(tmp_path / "z.png")]) == 2
    assert "[D561]" in capsys.readouterr().err and not list(tmp_path.glob("z*"))
    assert main(["plot", str(profile[0]), "--kind", "hist", "--max-panels", "3", "-o", str(tmp_path / "z.png")]) == 2
    assert "[D561]" in capsys.readouterr().err


def test_curves_figure_keeps_its_panel_limit(profile, tmp_path: Path) -> None:
    from ddpcore.errors import DDPUsageError
    from ddpcore.report.plots import curves_figure, load_stratify

    res = load_stratify(many_groups_json(profile[0], tmp_path / "many.json"))
    with pytest.raises(DDPUsageError, match=r"D675.*6 panels.*--max-panels"):
        curves_figure(res, max_panels=5)


def test_plot_bad_usage(profile, tmp_path: Path, capsys) -> None:
    p, _ = profile
    assert main(["plot", str(p), "--kind", "hist", "-o", str(tmp_path / "x.pdf")]) == 2
    assert "[D672]" in capsys.readouterr().err
    assert main(["plot", str(p), "--kind", "hist", "-o", str(p)]) == 2  # .parquet: not a figure
    assert main(["plot", str(p), "--kind", "hist", "-o", str(tmp_path / "no" / "x.png")]) == 2
    assert "[D677]" in capsys.readouterr().err
    assert main(["plot", str(p), "--kind", "hist", "--by", "genre", "-o", str(tmp_path / "x.png")]) == 2
    assert "[D673]" in capsys.readouterr().err and not (tmp_path / "x.png").exists()
    assert main(["plot", str(p), "--kind", "curves", "-o", str(tmp_path / "x.png")]) == 3
    assert "[D671]" in capsys.readouterr().err


def test_plot_without_matplotlib(profile, tmp_path: Path, monkeypatch, capsys) -> None:
    import builtins

    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    p, _ = profile
    assert main(["plot", str(p), "--kind", "hist", "-o", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "[D670]" in err and "pip install '.[plot]'" in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------- report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium(tmp: Path, url: str, *extra: str) -> subprocess.CompletedProcess:
    prof = tmp / f"chrome-profile-{len(list(tmp.glob('chrome-profile-*')))}"
    return subprocess.run([CHROMIUM, *CHROME_FLAGS, f"--user-data-dir={prof}", *extra, url],
                          capture_output=True, text=True, timeout=120)


def _console_messages(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln]


def test_report_html_content(profile, tmp_path: Path, capsys) -> None:
    p, a = profile
    j = stratify_json(p, tmp_path / "strat.json")
    out = tmp_path / "report.html"
    assert main(["report", str(p), "--anchors", str(a), "--stratify", str(j), "--top", "3", "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 3  # hist, ECDF, curves
    # self-contained: no external script, stylesheet, image or font
    assert not re.search(r"<(script|link|img|iframe)\b", page) and "@import" not in page
    assert not re.search(r"url\((?!#)", page) and not re.search(r"(src|href)=\"(?!#)", page)
    # the per-domain table (summarize) and the signature
    assert "<td>news</td>" in page and "<td>fiction</td>" in page and "&quot;rules&quot;: &quot;refined&quot;" in page
    # top segments: a/2 (DDP 4), b/1 (DDP 3), a/1 (DDP 2), text escaped, anchor + antecedent highlighted
    top = _top_section(page)
    order = [top.index(f"document <b>{d}</b>, segment <b>{s}</b>") for d, s in (("a", 2), ("b", 1), ("a", 1))]
    assert order == sorted(order) and "segment <b>0</b>" not in top
    assert "&lt;Bob&gt;" in page and "<Bob>" not in page and "She &amp; he" in page
    assert re.search(r'<mark class="anchor"[^>]*>Alice</mark> called', page)
    assert re.search(r'<mark class="antecedent"[^>]*>Alice Smith</mark> met', page)  # context of a/2: segment 0
    assert re.search(r'<mark class="anchor"[^>]*>He</mark> woke', page)
    # without anchors/stratify: still a report, with a note
    out2 = tmp_path / "plain.html"
    assert main(["report", str(p), "-o", str(out2)]) == 0
    plain = out2.read_text(encoding="utf-8")
    assert plain.count("<svg") == 2 and "--anchors ANCHORS.parquet" in plain and "<mark class=\"anchor\" title" not in plain


def _top_section(page: str) -> str:
    start = page.index("<h2>Top ")
    end = page.find("<h2>", start + 1)
    return page[start:end if end >= 0 else len(page)]


def test_report_anchors_with_the_profiles_own_id_columns(profile, tmp_path: Path, capsys) -> None:
    # `ddp profile --document-col doc --segment-col seg` names the id columns doc/seg in both tables and
    # in the signature; the report was refused with D680 (missing document_id, segment_id)
    p, a = profile
    ref = tmp_path / "ref.html"
    assert main(["report", str(p), "--anchors", str(a), "-o", str(ref)]) == 0
    sig = {**SIG, "columns": {**SIG["columns"], "document": "doc", "segment": "seg"}}
    names = {"document_id": "doc", "segment_id": "seg"}
    p2 = write_parquet(pl.read_parquet(p).rename(names), tmp_path / "custom.parquet", sig)
    a2 = write_parquet(pl.read_parquet(a).rename(names), tmp_path / "custom_anchors.parquet",
                       {**sig, "table": "anchors"})
    out = tmp_path / "custom.html"
    assert main(["report", str(p2), "--anchors", str(a2), "-o", str(out)]) == 0, capsys.readouterr().err
    page = out.read_text(encoding="utf-8")
    # the same segments with the same anchors and antecedents highlighted as under the default names
    assert _top_section(page) == _top_section(ref.read_text(encoding="utf-8"))
    assert re.search(r'<mark class="anchor"[^>]*>Alice</mark> called', page)
    assert page.count('<mark class="anchor"') == 3  # the three anchors the reference highlights
    # an anchors table that lacks the profile's id columns is still refused, naming them
    assert main(["report", str(p2), "--anchors", str(a), "-o", str(tmp_path / "bad.html")]) == 3
    assert re.search(r"\[D680\] --anchors: missing column\(s\) doc, seg", capsys.readouterr().err)


def test_report_bad_usage(profile, tmp_path: Path, capsys) -> None:
    p, a = profile
    assert main(["report", str(p), "-o", str(tmp_path / "r.pdf")]) == 2
    assert "[D672]" in capsys.readouterr().err
    assert main(["report", str(p), "--anchors", str(a), "-o", str(a)]) == 2
    err = capsys.readouterr().err
    assert "[D672]" in err  # .parquet is not .html; an input named .html is refused as D678:
    h = tmp_path / "in.html"
    h.write_text("x")
    assert main(["report", str(p), "--stratify", str(h), "-o", str(h)]) == 2
    assert "[D678]" in capsys.readouterr().err
    assert main(["report", str(p), "--top", "0", "-o", str(tmp_path / "r.html")]) == 2
    assert "[D679]" in capsys.readouterr().err and not (tmp_path / "r.html").exists()
    bad = write_parquet(pl.DataFrame({"document_id": ["a"], "x": [1]}), tmp_path / "bad.parquet")
    assert main(["report", str(p), "--anchors", str(bad), "-o", str(tmp_path / "r.html")]) == 3
    assert "[D680]" in capsys.readouterr().err and not (tmp_path / "r.html").exists()


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (Debian package 'chromium'; "
                                             ".ci/run installs it when apt-get is available)")
def test_report_in_headless_chromium(profile, tmp_path: Path) -> None:
    from matplotlib.image import imread

    p, a = profile
    j = stratify_json(p, tmp_path / "strat.json")
    out = tmp_path / "report.html"
    assert main(["report", str(p), "--anchors", str(a), "--stratify", str(j), "-o", str(out)]) == 0
    url = out.resolve().as_uri()
    # the detector works: a page with a console error is caught
    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><script>console.error("ddpcore-probe")</script></body></html>')
    probe = _chromium(tmp_path, bad.resolve().as_uri(), "--enable-logging=stderr", "--v=0", "--dump-dom")
    assert any("ddpcore-probe" in m for m in _console_messages(probe.stderr)), probe.stderr[-2000:]
    # the report: loads (DOM dumped), no console message at all, the SVG plots are in the DOM
    run = _chromium(tmp_path, url, "--enable-logging=stderr", "--v=0", "--dump-dom")
    assert run.returncode == 0, run.stderr[-2000:]
    assert _console_messages(run.stderr) == []
    dom = run.stdout
    assert dom.count("<svg") == 3 and 'id="fig-hist"' in dom and 'id="fig-curves"' in dom
    assert dom.count("<path") > 20 and 'class="anchor"' in dom
    # the screenshot is not blank: the top of the page (table + histogram) has plenty of non-white pixels,
    # and the palette's blue is drawn
    shot = tmp_path / "shot.png"
    run = _chromium(tmp_path, url, f"--screenshot={shot}", "--window-size=1200,2000", "--hide-scrollbars")
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    img = imread(str(shot))[..., :3]
    assert img.shape[:2] == (2000, 1200)
    non_white = (img < 0.9).any(axis=2).mean()
    assert non_white > 0.02, non_white
    blue = (abs(img[..., 0] - 0x00 / 255) < 0.08) & (abs(img[..., 1] - 0x72 / 255) < 0.08) \
        & (abs(img[..., 2] - 0xB2 / 255) < 0.08)
    assert blue.sum() > 200, int(blue.sum())
