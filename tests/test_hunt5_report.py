"""Hunt 5 (helper): silent wrong answers in ``ddp report``, ``ddp plot`` and ``ddp blindness``.

Every expected value is recomputed here from the input tables with numpy / polars / scipy (written next
to the assertion), or comes from another ddpcore command run on the same data (``ddp stats tost|tau|
cluster``), never from the code under test."""
from __future__ import annotations

import html as html_mod
import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

pytest.importorskip("matplotlib")

from ddpcore.cli.main import main  # noqa: E402
from ddpcore.report import plots  # noqa: E402
from ddpcore.stats.blindness import simulate_scores  # noqa: E402

SIG = {"ddpcore": "0.1.0", "distance": "chained", "rules": "refined", "pipeline_name": "en_core_web_sm",
       "columns": {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"}}


# ------------------------------------------------------------------------------------------- fixtures


def _profile(n: int = 60, seed: int = 4) -> pl.DataFrame:
    """A profile-shaped table: 3 domains, documents of 1-4 segments, DDP with zeros and a long tail, and a
    ddp_certified column that is not the ddp column (about half of it)."""
    rng = np.random.default_rng(seed)
    ddp = np.where(rng.random(n) < 0.2, 0, rng.geometric(0.08, n)).astype(np.int64)
    return pl.DataFrame({
        "document_id": [f"d{i // 3}" for i in range(n)], "segment_id": [i % 3 for i in range(n)],
        "domain": [("news", "social", "speech")[(i // 3) % 3] for i in range(n)],
        "n_sentences": [2] * n, "ddp": ddp, "ddp_certified": ddp // 2,
        "first_sentence": [2 * (i % 3) for i in range(n)], "source": [f"text {i}" for i in range(n)]})


def _write(df: pl.DataFrame, path: Path, sig: dict | None = SIG) -> Path:
    """The table at ``path`` with its signature: Parquet metadata, or a ``.signature.json`` sidecar."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        t = df.to_arrow()
        if sig is not None:
            t = t.replace_schema_metadata({b"ddpcore.signature": json.dumps(sig).encode()})
        pq.write_table(t, path)
    else:
        df.write_csv(path) if path.suffix == ".csv" else df.write_ndjson(path)
        if sig is not None:
            Path(f"{path}.signature.json").write_text(json.dumps(sig), encoding="utf-8")
    return path


def _summary_rows(page: str) -> dict[str, list[str]]:
    """The per-domain table of a report: {group: [documents, segments, mean, median, p90, max, zero share]}."""
    i = page.index("<table>")
    body = page[i:page.index("</table>", i)]
    out = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body)[1:]:
        cells = [html_mod.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        out[cells[0]] = cells[1:]
    return out


def _expected_rows(df: pl.DataFrame, col: str) -> dict[str, list[str]]:
    """The same table recomputed with numpy: mean, np.median, np.percentile(90, linear), max, share of 0."""
    out = {}
    groups = [(k, df.filter(pl.col("domain") == k)) for k in sorted(df["domain"].unique().to_list())] \
        if "domain" in df.columns else []
    for name, g in [*groups, ("all", df)]:
        v = g[col].to_numpy().astype(float)
        out[name] = [f"{g['document_id'].n_unique():,}", f"{g.height:,}", f"{v.mean():.1f}", f"{np.median(v):.1f}",
                     f"{np.percentile(v, 90):.1f}", f"{int(v.max()):,}", f"{100 * (v == 0).mean():.1f}%"]
    return out


def _report(tmp_path: Path, profile: Path, *extra: str, name: str = "r.html") -> str:
    out = tmp_path / name
    assert main(["report", str(profile), "-o", str(out), *extra]) == 0
    return out.read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------- ddp report


@pytest.mark.parametrize("col", ["ddp", "ddp_certified"])
def test_report_numbers_equal_numpy(tmp_path: Path, col: str) -> None:
    df = _profile()
    page = _report(tmp_path, _write(df, tmp_path / "p.parquet"), "--ddp-col", col, "--top", "7")
    assert _summary_rows(page) == _expected_rows(df, col)  # numpy on the same column
    lab = "DDP" if col == "ddp" else col
    assert f"<h2>{lab} per domain</h2>" in page and f"<th>p90 {lab}</th>" in page
    assert (f"DDP column <b>{col}</b>" in page) == (col != "ddp")  # the page says which column it shows
    assert f"{df.height:,} segments" in page
    # top 7: polars sort by the column, ties in profile order
    ranked = df.with_row_index("r").sort([col, "r"], descending=[True, False]).head(7)
    got = [int(i) for i in re.findall(r'<div class="seg" id="top-(\d+)">', page)]
    assert got == ranked["r"].to_list()
    metas = re.findall(r'id="top-\d+"><div class="meta">(.*?)</div>', page)
    assert [int(re.search(rf"{lab} (\d+)</b>", m).group(1)) for m in metas] == ranked[col].to_list()
    # per domain: the 3 highest with the column > 0, ties in profile order
    for dom in ("news", "social", "speech"):
        sec = page.split(f'<h3 id="domain-{dom}">')[1].split("<h3")[0].split("<h2")[0]
        got = [int(i) for i in re.findall(r'(?:id="dom-|href="#top-)(\d+)"', sec)]
        exp = (df.with_row_index("r").filter((pl.col("domain") == dom) & (pl.col(col) > 0))
               .sort([col, "r"], descending=[True, False]).head(3)["r"].to_list())
        assert got == exp
    meta = re.search(r'<meta name="ddpcore-signature" content="([^"]*)">', page)
    sig = json.loads(html_mod.unescape(meta.group(1)))
    assert sig["ddp_col"] == col and sig["profile_signature"]["rules"] == "refined"


def test_report_same_numbers_from_csv_jsonl_parquet(tmp_path: Path) -> None:
    df = _profile(45, seed=9)

    def strip(page: str) -> str:  # what names the input file differs; everything else must not
        page = re.sub(r"<title>.*?</title>|<h1>.*?</h1>", "", page)
        return re.sub(r'<meta name="ddpcore-signature"[^>]*>|<pre class="sig">.*?</pre>', "", page, flags=re.S)

    pages = {ext: _report(tmp_path, _write(df, tmp_path / f"p.{ext}"), "--ddp-col", "ddp_certified",
                          name=f"r_{ext}.html") for ext in ("parquet", "csv", "jsonl")}
    assert _summary_rows(pages["csv"]) == _expected_rows(df, "ddp_certified")
    assert strip(pages["csv"]) == strip(pages["parquet"]) == strip(pages["jsonl"])


def test_report_escapes_text_and_is_self_contained(tmp_path: Path) -> None:
    df = pl.DataFrame({"document_id": ['d<script>alert(1)</script>', 'd&"q\''], "segment_id": ["s<b>", "s'&"],
                       "domain": ["x<i>", "y&z"], "ddp": [3, 0], "ddp_certified": [1, 0],
                       "source": ['a <script>x</script> & "b"', "c"]})
    page = _report(tmp_path, _write(df, tmp_path / "e.parquet"))
    assert "<script" not in page.lower()  # every data string escaped (html.escape)
    assert "d&lt;script&gt;alert(1)&lt;/script&gt;" in page and "y&amp;z" in page and "s&#x27;&amp;" in page
    # nothing fetched: the only URLs are XML namespaces of the inline SVG
    urls = set(re.findall(r"""(?:src|href)\s*=\s*["']?(https?:[^"'\s>]+)""", page))
    assert urls == set()
    assert not re.search(r"<(?:link|script|img|iframe)\b", page)


def test_report_one_segment_and_all_zero_and_huge(tmp_path: Path) -> None:
    one = pl.DataFrame({"document_id": ["d"], "segment_id": [0], "domain": ["a"], "ddp": [5], "source": ["x"]})
    page = _report(tmp_path, _write(one, tmp_path / "one.parquet"), name="one.html")
    assert _summary_rows(page) == _expected_rows(one, "ddp") and "<h2>Top 1 segments by DDP</h2>" in page
    zero = pl.DataFrame({"document_id": ["d", "e"], "segment_id": [0, 0], "domain": ["a", "b"], "ddp": [0, 0],
                         "source": ["x", "y"]})
    page = _report(tmp_path, _write(zero, tmp_path / "zero.parquet"), name="zero.html")
    assert _summary_rows(page)["all"] == ["2", "2", "0.0", "0.0", "0.0", "0", "100.0%"]  # by hand
    huge = pl.DataFrame({"document_id": ["d", "e", "f"], "segment_id": [0, 0, 0], "domain": ["a", "a", "a"],
                         "ddp": [10 ** 12, 3, 2 ** 62], "source": ["x", "y", "z"]})
    page = _report(tmp_path, _write(huge, tmp_path / "huge.parquet"), name="huge.html")
    assert _summary_rows(page) == _expected_rows(huge, "ddp")
    assert "4,611,686,018,427,387,904" in page  # max = 2**62, exact


@pytest.mark.parametrize("value", [None, float("nan"), float("inf"), -1.0])
def test_report_and_plot_refuse_a_missing_ddp(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             value: float | None) -> None:
    df = pl.DataFrame({"document_id": ["d", "e"], "segment_id": [0, 0], "ddp": [1.0, value], "source": ["x", "y"]})
    p = _write(df, tmp_path / "bad.parquet")
    for argv in (["report", str(p), "-o", str(tmp_path / "r.html")], ["plot", str(p), "-o", str(tmp_path / "f.svg")]):
        rc = main(argv)
        err = capsys.readouterr().err
        assert rc != 0 and "[D781]" in err and "row 2" in err and "Traceback" not in err
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "f.svg").exists()


def test_report_without_domain_column_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Defect: a profile whose domain column is gone (`ddp profile` always writes one) gave a 'DDP per
    domain' table with only the 'all' row and no word about it."""
    df = _profile(12).drop("domain")
    page = _report(tmp_path, _write(df, tmp_path / "nodom.parquet"))
    assert list(_summary_rows(page)) == ["all"]
    assert "has no &#x27;domain&#x27; column" in page
    assert "has no 'domain' column" in capsys.readouterr().err
    meta = re.search(r'<meta name="ddpcore-signature" content="([^"]*)">', page)
    assert any("no 'domain' column" in n for n in json.loads(html_mod.unescape(meta.group(1)))["notes"])


# ------------------------------------------------------------------------------------------- ddp plot


@pytest.mark.parametrize("col", ["ddp", "ddp_certified"])
def test_plot_hist_and_ecdf_data_equal_numpy(col: str) -> None:
    df = _profile(80, seed=2)
    v = df[col].to_numpy()
    edges = plots.hist_edges(int(v.max()))
    # documented edges: one bin per value 0-4, then 5, 7, 10, 15, 20, 30, 50, 70, 100 ... past the max
    manual = [0, 1, 2, 3, 4, 5]
    for m in (7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500):
        if manual[-1] > v.max():
            break
        manual.append(m)
    assert edges.tolist() == manual
    fig = plots.hist_figure(df, ddp_col=col)
    heights = [p.get_height() for p in fig.axes[0].patches]
    # bin k holds edges[k] <= d < edges[k+1] (counted by hand, not np.histogram)
    assert heights == [int(((v >= edges[k]) & (v < edges[k + 1])).sum()) for k in range(len(edges) - 1)]
    assert heights == np.histogram(v, edges)[0].tolist()
    fig = plots.ecdf_figure(df, ddp_col=col)
    line = fig.axes[0].lines[0]
    x, y = line.get_xdata(), line.get_ydata()
    for q in np.unique(v):  # the step value at q (where="post": the last point at x == q) = share of v <= q
        assert y[np.searchsorted(x, q, side="right") - 1] == pytest.approx((v <= q).mean(), abs=1e-12)
    assert (x[0], y[0], x[-1], y[-1]) == (v.min(), 0.0, v.max(), 1.0)
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.mark.parametrize("ext", ["png", "svg"])
def test_plot_output_carries_signature_and_column(tmp_path: Path, ext: str) -> None:
    p = _write(_profile(), tmp_path / "p.parquet")
    out = tmp_path / f"f.{ext}"
    assert main(["plot", str(p), "--ddp-col", "ddp_certified", "-o", str(out)]) == 0
    if ext == "png":
        from PIL import Image

        text = Image.open(out).info["ddpcore.signature"]
    else:
        text = html_mod.unescape(re.search(r"<dc:description>(.*?)</dc:description>",
                                           out.read_text(encoding="utf-8"), re.S).group(1))
    sig = json.loads(text)
    assert sig["ddp_col"] == "ddp_certified" and sig["figure"] == "hist" and sig["input_signature"] == SIG


def test_plot_wrong_extension_is_usage_before_reading(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the input does not exist: a D672 (not a read error) shows the extension was checked first
    assert main(["plot", str(tmp_path / "missing.parquet"), "-o", str(tmp_path / "f.pdf")]) == 2
    assert "[D672]" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing.parquet"), "-o", str(tmp_path / "r.svg")]) == 2
    assert "[D672]" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------- ddp blindness


def _blind(tmp_path: Path, table: Path, *extra: str, capsys: pytest.CaptureFixture[str]) -> tuple[dict, str]:
    out = tmp_path / "b.json"
    rc = main(["blindness", str(table), "--attribute", "nominal", "-o", str(out), *extra])
    err = capsys.readouterr().err
    assert rc == 0, err
    return json.loads(out.read_text(encoding="utf-8")), err


def _stats(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    main(argv)
    return json.loads(capsys.readouterr().out)


def test_blindness_equals_stats_commands_and_scipy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from scipy import stats

    t = tmp_path / "s.csv"
    simulate_scores(12, 3, 5, shift=0.3, seed=1).write_csv(t)
    res, _ = _blind(tmp_path, t, "--margin", "1", "--n-boot", "400", "--n-boot-cluster", "60", "--seed", "3",
                    capsys=capsys)
    ev = res["evidence"]
    tost = _stats(["stats", "tost", str(t), "--a", "DOC", "--b", "MIX", "--margin", "1"], capsys)
    for k in ("p_value", "mean_diff", "ci_low", "ci_high", "n", "df", "equivalent"):
        assert ev["tost"][k] == tost[k], k
    tau = _stats(["stats", "tau", str(t), "--a", "DOC", "--b", "MIX", "--n-boot", "400", "--seed", "3"], capsys)
    for k in ("tau", "ci_low", "ci_high", "share_below_tau_min", "p_value"):
        assert ev["ranking"][k] == tau[k], k
    cl = _stats(["stats", "cluster", str(t), "--a", "DOC", "--b", "MIX", "--n-boot", "60", "--seed", "3"], capsys)
    assert ev["clusters"]["clusters_a"] == cl["clusters_a"]["clusters"]
    assert ev["clusters"]["clusters_b"] == cl["clusters_b"]["clusters"]
    # scipy: the paired t on DOC - MIX per (document, segment, system), margin 1, alpha 0.05
    w = pl.read_csv(t).pivot(on="condition", index=["document_id", "segment_id", "system"], values="score")
    d = w["DOC"].to_numpy() - w["MIX"].to_numpy()
    se = d.std(ddof=1) / np.sqrt(d.size)
    crit = stats.t.ppf(0.95, d.size - 1)
    p = max(stats.t.sf((d.mean() + 1) / se, d.size - 1), stats.t.cdf((d.mean() - 1) / se, d.size - 1))
    assert ev["tost"]["ci_low"] == pytest.approx(d.mean() - crit * se, rel=1e-12)
    assert ev["tost"]["p_value"] == pytest.approx(p, rel=1e-9)
    # scipy Kendall tau-b of the system means
    means = pl.read_csv(t).group_by("condition", "system").agg(pl.col("score").mean()).sort("system")
    ma = means.filter(pl.col("condition") == "DOC")["score"].to_numpy()
    mb = means.filter(pl.col("condition") == "MIX")["score"].to_numpy()
    assert ev["ranking"]["tau"] == pytest.approx(stats.kendalltau(ma, mb).statistic, abs=1e-12)
    # --unit document: pairs of (document, system) means
    res, _ = _blind(tmp_path, t, "--margin", "1", "--unit", "document", "--n-boot", "50", "--n-boot-cluster", "20",
                    capsys=capsys)
    m = pl.read_csv(t).group_by("document_id", "system", "condition").agg(pl.col("score").mean()) \
        .pivot(on="condition", index=["document_id", "system"], values="score")
    dd = m["DOC"].to_numpy() - m["MIX"].to_numpy()
    assert res["evidence"]["tost"]["n"] == dd.size
    assert res["evidence"]["tost"]["mean_diff"] == pytest.approx(dd.mean(), rel=1e-12)


def _rule(ev: dict, alpha: float, tau_min: float) -> str:
    """docs/mix-blindness.md 'Verdict', written out: sensitive when the 1-2 alpha CI lies wholly beyond the
    margin (ci_low > X or ci_high < -X) or the tau CI upper bound < tau_min; blind when TOST concludes
    equivalence (p < alpha) and the rankings do not differ (a defined tau);
    inconclusive otherwise."""
    t, r, x = ev["tost"], ev["ranking"], ev["tost"]["margin"]
    if t["ci_low"] > x or t["ci_high"] < -x or (r is not None and r["ci_high"] is not None
                                               and r["ci_high"] < tau_min):
        return "sensitive"
    equivalent = t["p_value"] < alpha  # ddpcore.stats.tost: equivalent = p_value < alpha
    if equivalent and (r is None or r.get("tau") is not None):
        return "blind"
    return "inconclusive"


@pytest.mark.parametrize("shift,rank_noise,margin,alpha", [
    (0.0, 0.0, 1.0, 0.05), (3.0, 0.0, 1.0, 0.05), (0.0, 6.0, 2.0, 0.05), (0.5, 0.0, 0.7, 0.05),
    (0.0, 0.0, 0.3, 0.10), (1.2, 0.0, 1.0, 0.01)])
def test_blindness_verdict_follows_the_documented_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       shift: float, rank_noise: float, margin: float,
                                                       alpha: float) -> None:
    t = tmp_path / "s.csv"
    simulate_scores(10, 3, 5, shift=shift, rank_noise=rank_noise, seed=7).write_csv(t)
    res, _ = _blind(tmp_path, t, "--margin", str(margin), "--alpha", str(alpha), "--n-boot", "300",
                    "--n-boot-cluster", "30", capsys=capsys)
    assert res["verdict"] == _rule(res["evidence"], alpha, 0.667)


def test_blindness_boundaries_follow_the_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Boundaries: the margin equal to a CI bound (p == alpha in exact arithmetic) and a CI lower bound equal to
    the margin (not 'wholly beyond' it: ci_low > X is strict). The verdict and `ddp stats tost` agree and follow
    the documented rule (equivalent = p < alpha, tests/stats/test_tost.py::test_equivalent_is_p_strictly_below_alpha).
    Noted, left alone: at the first boundary rounding gives p = 0.04999999999999999, so the TOST says equivalent
    with a CI whose upper bound equals the margin."""
    from ddpcore.stats.tost import tost_paired

    df = simulate_scores(4, 2, 3, shift=0.2, seed=1)  # found by a search over seeds; margin = its CI upper bound
    w = df.pivot(on="condition", index=["document_id", "segment_id", "system"], values="score")
    x, y = w["DOC"].to_numpy(), w["MIX"].to_numpy()
    eps = tost_paired(x, y, -1, 1).ci_high
    t = tmp_path / "edge.csv"
    df.write_csv(t)
    st = _stats(["stats", "tost", str(t), "--a", "DOC", "--b", "MIX", "--margin", repr(eps)], capsys)
    res, _ = _blind(tmp_path, t, "--margin", repr(eps), "--n-boot", "200", "--n-boot-cluster", "20", capsys=capsys)
    ev = res["evidence"]["tost"]
    assert ev["ci_high"] == eps and ev["equivalent"] == st["equivalent"] == (st["p_value"] < 0.05)
    assert res["verdict"] == _rule(res["evidence"], 0.05, 0.667)
    # a CI lower bound equal to the margin is not wholly beyond it
    far = df.with_columns(pl.when(pl.col("condition") == "MIX").then(pl.col("score") - 10).otherwise(pl.col("score")))
    far.write_csv(t)
    lo = tost_paired(x, y - 10, -1, 1).ci_low
    res, _ = _blind(tmp_path, t, "--margin", repr(lo), "--n-boot", "200", "--n-boot-cluster", "20", capsys=capsys)
    assert res["evidence"]["tost"]["ci_low"] == lo and res["evidence"]["tost"]["ci_beyond_margin"] is False
    assert res["verdict"] == _rule(res["evidence"], 0.05, 0.667)
    assert not any("lies wholly beyond the margin" in r for r in res["reasons"])


def test_blindness_one_document_reason_names_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Defect: a blind verdict on one document gave the reason 'rankings not compared (3 system)' (3 systems
    were there; the ranking was skipped because of the single document)."""
    d = simulate_scores(1, 6, 3, seed=5).filter(pl.col("condition") == "DOC")
    t = tmp_path / "one.csv"
    pl.concat([d, d.with_columns(pl.lit("MIX").alias("condition"), pl.col("score") - 0.5)]).write_csv(t)
    res, err = _blind(tmp_path, t, "--margin", "1", capsys=capsys)
    assert res["verdict"] == "blind"  # differences all 0.5, inside ±1; no ranking (said)
    assert "1 document" in res["evidence"]["skipped"]["ranking"] and "1 document" in err
    assert "rankings not compared (1 document;" in res["reasons"][1]
    assert "3 system" not in " ".join(res["reasons"])


def test_blindness_fallbacks_are_said_and_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = simulate_scores(6, 3, 3, seed=5)
    t = tmp_path / "x.csv"
    base.filter(pl.col("system") == "sys00").write_csv(t)  # one system
    res, err = _blind(tmp_path, t, "--margin", "1", capsys=capsys)
    assert "1 DOC system" in err and res["evidence"]["ranking"] is None and res["evidence"]["clusters"] is None
    assert "ranking" in res["evidence"]["skipped"] and res["signature"]["n_warnings"] == len(res["warnings"]) == 1
    # missing MIX scores: D302 by default, counted and said with --nan-policy omit
    miss = (pl.col("condition") == "MIX") & (pl.col("document_id") == "doc00001") & (pl.col("segment_id") == 0)
    base.with_columns(pl.when(miss).then(None).otherwise(pl.col("score")).alias("score")).write_csv(t)
    assert main(["blindness", str(t), "--margin", "1", "--attribute", "nominal"]) == 3
    assert "[D302]" in capsys.readouterr().err
    res, err = _blind(tmp_path, t, "--margin", "1", "--nan-policy", "omit", "--n-boot", "100",
                      "--n-boot-cluster", "20", capsys=capsys)
    assert res["evidence"]["n_omitted"] == res["signature"]["n_omitted"] == 3 and "3 row(s)" in err
    assert res["evidence"]["tost"]["n"] == 6 * 3 * 3 - 3 and res["evidence"]["tost"]["unpaired_a"] == 3


def test_blindness_seed_determinism(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = tmp_path / "s.csv"
    simulate_scores(8, 2, 4, rank_noise=3, seed=2).write_csv(t)
    args = ("--margin", "1", "--n-boot", "300", "--n-boot-cluster", "30")
    a, _ = _blind(tmp_path, t, *args, "--seed", "5", capsys=capsys)
    b, _ = _blind(tmp_path, t, *args, "--seed", "5", capsys=capsys)
    c, _ = _blind(tmp_path, t, *args, "--seed", "6", capsys=capsys)
    assert a == b and a["signature"]["seed"] == 5 and c["signature"]["seed"] == 6
    assert a["evidence"]["ranking"]["share_below_tau_min"] != c["evidence"]["ranking"]["share_below_tau_min"]


def test_plot_signature_names_no_local_folder(tmp_path: Path) -> None:
    """The figure's signature held the input's absolute path and the profile's cache folder (e.g.
    /root/.cache/ddpcore), where `ddp report` shows file names only: a figure is made to be shared."""
    sig_in = {**SIG, "cache": {"dir": "/home/someone/.cache/ddpcore", "hits": 3, "misses": 0}}
    p = _write(_profile(), tmp_path / "p.parquet", sig_in)
    out = tmp_path / "f.svg"
    assert main(["plot", str(p), "-o", str(out)]) == 0
    text = html_mod.unescape(re.search(r"<dc:description>(.*?)</dc:description>",
                                       out.read_text(encoding="utf-8"), re.S).group(1))
    sig = json.loads(text)
    assert sig["input"] == "p.parquet" and sig["input_signature"]["cache"]["dir"] == "ddpcore"
    assert str(tmp_path) not in text and "/home/someone" not in text and "paths" in sig
