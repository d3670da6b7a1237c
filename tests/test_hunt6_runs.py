"""Sixth hunt: a Ray ``--resume`` of a finished dataset, figures with more series than colours, and the
significance level of ``ddp blindness``'s system clusters.

Each test fails without its fix in ``src/ddpcore``:

* ``ddp profile --engine ray -o DIR/ --resume`` after a run that finished deleted the finished dataset and
  profiled everything again. The dataset is the output and its manifest now records the run's settings and
  input (as its journal did): a ``--resume`` with the same settings keeps it ("nothing to resume: N of N
  batches done"), another setting is D170 and the dataset stays, a damaged part starts over with a warning.
* ``ddp plot --kind hist|ecdf --by COL`` drew series 9, 17 ... in the colour and line style of series 1:
  two domains looked identical. Beyond the 8 colours a series now gets another line style, beyond 32 a
  marker too; more series than one figure tells apart is D931.
* ``ddp blindness`` clustered the systems at alpha 0.05 whatever ``--alpha`` said, and said nowhere at which
  level; the clusterings' warnings (e.g. too few ``--n-boot-cluster`` resamples for that level) were dropped.
  ``--alpha`` is now the level of every test of the battery (its meaning in ``ddp stats cluster``), recorded
  as ``cluster_alpha`` in the signature and ``evidence.clusters.alpha``; the warnings are said (D930 with
  ``--strict``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ddpcore.cli.main import main
from ddpcore.errors import DDPUsageError
from ddpcore.io.segments import SegmentColumns

DATA = Path(__file__).parent / "data"
MINI = DATA / "wmt25_mini.jsonl"
COLS = SegmentColumns("document_id", "segment_id", "source", "domain")
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}


# ------------------------------------------------------------------ 1. Ray --resume of a finished dataset


def _files(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.read_bytes())
            for p in folder.rglob("*") if p.is_file()}


def _dataset(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A finished ``-o DIR/`` Ray dataset of the mini set (one actor) and its run's report."""
    from ddpcore.engines import ray_engine as RE

    ds = tmp_path / "ds"
    rep = RE.profile_ray(MINI, {"segments": RE.dataset_target(str(ds) + "/")}, cols=COLS, n_process=1)
    assert (ds / "_SUCCESS").exists() and not (ds / "journal.json").exists()
    return ds, rep


@pytest.mark.spacy_model
@pytest.mark.slow
def test_ray_resume_of_a_finished_dataset_keeps_it_and_profiles_nothing(ray_local, tmp_path, monkeypatch) -> None:
    """It removed the finished dataset and profiled every batch again; now nothing is staged, started or
    written, the note says "nothing to resume", and the summary, counts and signature are the finished run's."""
    from ddpcore.engines import parts as P
    from ddpcore.engines import ray_engine as RE

    ds, first = _dataset(tmp_path)
    manifest = P.read_manifest(str(ds))
    assert manifest[P.RESUME_SETTINGS]["input"]["path"] == str(MINI)  # what the --resume compares
    before = _files(ds)

    def no_work(*args, **kwargs):
        raise AssertionError("the finished dataset was profiled again")

    for name in ("_stage", "ray_session", "_old_journal"):
        monkeypatch.setattr(RE, name, no_work)
    rep = RE.profile_ray(MINI, {"segments": RE.dataset_target(str(ds) + "/")}, cols=COLS, n_process=1, resume=True)
    n = first.n_batches
    assert [x for x in rep.notes if x.startswith("nothing to resume")] == [
        f"nothing to resume: {n} of {n} batches done; {ds} holds the finished output of this command (same settings "
        "and input) and is kept as it is (rerun without --resume to profile again)"]
    assert_frame_equal(rep.summary, first.summary)
    assert (rep.n_segments, rep.n_anchors, rep.n_batches, rep.resumed_batches) == \
        (first.n_segments, first.n_anchors, n, n)
    assert rep.signature == first.signature == manifest["signature"]
    assert _files(ds) == before  # not one byte or modification time changed


@pytest.mark.spacy_model
@pytest.mark.slow
def test_ray_resume_of_a_finished_dataset_refuses_another_setting_and_redoes_a_damaged_one(ray_local,
                                                                                           tmp_path) -> None:
    """Another setting, or another --summary-by column than the parts have: refused, the finished dataset kept
    (it was deleted). A damaged part: a warning, and the run starts over to the same tables."""
    from ddpcore.engines import parts as P
    from ddpcore.engines import ray_engine as RE
    from ddpcore.engines.local import Settings

    ds, first = _dataset(tmp_path)
    tables = P.read_dataset(str(ds))
    before = _files(ds)
    target = {"segments": RE.dataset_target(str(ds) + "/")}
    with pytest.raises(DDPUsageError, match=r"^\[D170\] --resume: --distance differs from the settings the finished "
                                            r"run recorded in .*_SUCCESS \(the finished run used 'chained', this one "
                                            r"'nearest'\); .*without --resume to start over"):
        RE.profile_ray(MINI, target, cols=COLS, n_process=1, resume=True, settings=Settings(distance="nearest"))
    with pytest.raises(DDPUsageError, match=r"^\[D137\] --summary-by nope: no such column in the finished dataset"):
        RE.profile_ray(MINI, target, cols=COLS, n_process=1, resume=True, summary_by="nope")
    assert _files(ds) == before
    part = ds / "sentences" / P.part_name(0)
    part.write_bytes(part.read_bytes() + b"x")
    said: list[str] = []
    rep = RE.profile_ray(MINI, target, cols=COLS, n_process=1, resume=True, warn=said.append)
    assert said and said[0].startswith(f"--resume: the finished dataset {ds} is damaged ({part}: ")
    assert said[0].endswith("starting from the beginning")
    assert not any(x.startswith("nothing to resume") for x in rep.notes)
    assert not any("no interrupted Ray run" in x for x in rep.notes)  # the warning said why, once
    for got, want in zip(P.read_dataset(str(ds))[:3], tables[:3]):
        assert_frame_equal(got, want)


@pytest.mark.spacy_model
@pytest.mark.slow
def test_ddp_profile_resume_of_a_finished_ray_dataset_says_nothing_to_resume(ray_local, tmp_path) -> None:
    """The command: exit 0, the summary on stdout, one note on stderr, no Ray started (the dataset is read)."""
    ds, first = _dataset(tmp_path)
    before = _files(ds)
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", str(MINI), "--engine", "ray", "-j", "1",
                        "-o", f"{ds}/", "--resume", "-q"], capture_output=True, text=True, env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    n = first.n_batches
    assert r.stderr.splitlines() == [
        f"ddp profile: note: nothing to resume: {n} of {n} batches done; {ds} holds the finished output of this "
        "command (same settings and input) and is kept as it is (rerun without --resume to profile again)"]
    assert f"wrote {ds}  ({first.n_segments} segments, {first.n_anchors} anchors" in r.stdout
    assert _files(ds) == before


# ------------------------------------------------------------------ 2. figures with more series than colours


def _domains(n: int, per: int = 6) -> pl.DataFrame:
    rng = np.random.default_rng(n)
    k = n * per
    return pl.DataFrame({"document_id": [f"d{i // 2}" for i in range(k)], "segment_id": [i % 2 for i in range(k)],
                         "domain": [f"dom{i % n:03d}" for i in range(k)], "ddp": rng.integers(0, 40, k)})


def _line_style(line) -> tuple:  # type: ignore[no-untyped-def]
    from matplotlib.colors import to_hex

    return to_hex(line.get_color()), line.get_linestyle(), line.get_marker()


@pytest.mark.parametrize("n", [12, 40])
def test_ecdf_series_beyond_the_palette_are_told_apart(n: int) -> None:
    """Series 9 had series 1's colour and line: now every curve differs in colour, line style or marker."""
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (the [plot] extra)")
    from ddpcore.report import plots

    fig = plots.ecdf_figure(_domains(n), by="domain")
    try:
        ax = fig.axes[0]
        lines = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
        assert len(lines) == n
        styles = [_line_style(ln) for ln in lines]
        assert len(set(styles)) == n, styles
        legend = [_line_style(h) for h in ax.get_legend().legend_handles]
        assert legend == styles  # the legend shows each curve's whole style
        assert styles[8][:2] == (plots.PALETTE[0].lower(), "--")  # series 9: series 1's colour, dashed
    finally:
        plots.pyplot().close(fig)


def _dashes(style) -> tuple:  # type: ignore[no-untyped-def]
    """A line style (a name, or the (offset, dashes) a histogram's outline keeps) as its dash pattern, hashable."""
    import matplotlib

    if isinstance(style, str):
        name = {"-": None, "--": "dashed", ":": "dotted", "-.": "dashdot"}[style]
        return 0.0, None if name is None else tuple(float(x) for x in matplotlib.rcParams[f"lines.{name}_pattern"])
    offset, seq = style
    return float(offset), None if seq is None else tuple(float(x) for x in seq)


@pytest.mark.parametrize("n", [12, 40])
def test_hist_series_beyond_the_palette_are_told_apart(n: int) -> None:
    """The outlined histograms of series 1 and 9 were the same colour and line: now each outline differs in
    colour or line style, and beyond 32 series a marker on each bar's top tells them apart."""
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (the [plot] extra)")
    from matplotlib.colors import to_hex

    from ddpcore.report import plots

    df = _domains(n)
    fig = plots.hist_figure(df, by="domain")
    try:
        ax = fig.axes[0]
        outlines = [(to_hex(p.get_edgecolor()), _dashes(p.get_linestyle())) for p in ax.patches]
        assert len(outlines) == n
        styles = []
        for i, (colour, dashes) in enumerate(outlines):
            st = plots.series_style(i)
            assert (colour, dashes) == (st.colour.lower(), _dashes(st.linestyle))
            styles.append((colour, st.linestyle, st.marker))
        assert len(set(outlines)) == (n if n <= 32 else 32)  # beyond 32 outlines repeat: the markers tell apart
        assert len(set(styles)) == n
        # the markers are drawn: one marker line per series beyond 32, in its colour
        want = sorted((s[0], s[2]) for s in styles if s[2] is not None)
        got = sorted((to_hex(ln.get_color()), ln.get_marker()) for ln in ax.get_lines())
        assert got == want and (n <= 32) == (not got)
        # the segments under each series' bar tops are the series' own counts
        edges = plots.hist_edges(int(df["ddp"].max()))
        for ln in ax.get_lines():
            i = styles.index(next(s for s in styles if (s[0], s[2]) == (to_hex(ln.get_color()), ln.get_marker())))
            dom = sorted(df["domain"].unique())[i]
            counts, _ = np.histogram(df.filter(pl.col("domain") == dom)["ddp"].to_numpy(), bins=edges)
            assert ln.get_ydata().tolist() == counts[counts > 0].tolist()
        legend = [_line_style(h) for h in ax.get_legend().legend_handles]
        assert legend == [(c, ls, "None" if m is None else m) for c, ls, m in styles]
    finally:
        plots.pyplot().close(fig)


def test_every_series_style_differs_up_to_the_limit_and_more_is_refused(tmp_path, capsys) -> None:
    """Styles repeat after MAX_SERIES: a --by column with more values is refused before drawing (D931)."""
    from ddpcore.report import plots

    styles = [plots.series_style(i) for i in range(plots.MAX_SERIES)]
    assert len(set(styles)) == plots.MAX_SERIES == 256
    assert styles[:8] == [plots.SeriesStyle(c, "-", None) for c in plots.PALETTE]  # 8 domains: as before
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (the [plot] extra)")
    path = tmp_path / "many.parquet"
    _domains(plots.MAX_SERIES + 1, per=1).write_parquet(path)
    for kind in ("hist", "ecdf"):
        assert main(["plot", str(path), "--kind", kind, "--by", "domain", "-o", str(tmp_path / f"{kind}.png")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == ["ddp plot: error: [D931] --by domain: 257 values are more series than one figure tells apart "
                       "(at most 256: 8 colours x 4 line styles x 8 markers); plot a column with fewer values, or "
                       "filter the table first"]
        assert not (tmp_path / f"{kind}.png").exists()
    _domains(plots.MAX_SERIES, per=1).write_parquet(path)
    plots.pyplot().close(plots.ecdf_figure(pl.read_parquet(path), by="domain"))  # 256: drawn


def test_report_with_more_domains_than_a_figure_tells_apart_draws_them_together(tmp_path, capsys) -> None:
    """`ddp report` has no --by: its per-domain figures would repeat styles beyond 256 domains, so it draws all
    segments together and says so (stderr, page and its signature), rather than failing or mixing domains up."""
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (the [plot] extra)")
    from ddpcore.report import plots

    path = tmp_path / "many.parquet"
    _domains(plots.MAX_SERIES + 1, per=2).write_parquet(path)
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0
    note = (f"the profile {path} has 257 domains, more than one figure tells apart (256): the histogram and ECDF "
            "show all segments together (the per-domain table lists every domain)")
    assert f"ddp report: note: {note}" in capsys.readouterr().err.splitlines()
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert page.count("more than one figure tells apart (256)") == 2  # the note on the page, in its signature


# ------------------------------------------------------------------ 3. the clusters' level in ddp blindness


def _scores(tmp_path: Path) -> Path:
    from ddpcore.stats.blindness import simulate_scores

    path = tmp_path / "scores.csv"
    # seed 0: the DOC clusters at alpha 0.05 (one cluster) and at 0.3 (two) differ
    simulate_scores(n_documents=12, n_segments=3, n_systems=6, seed=0, system_sd=1.0).write_csv(path)
    return path


def _blindness(path: Path, *extra: str, capsys) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = main(["blindness", str(path), "--margin", "1", "--n-boot", "100", "--n-boot-cluster", "200",
                 "--attribute", "nominal", *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_blindness_clusters_at_its_alpha_and_records_it(tmp_path, capsys) -> None:
    """--alpha 0.3 changed the TOST and the power but the clusters stayed at 0.05, recorded nowhere: now the
    clusters are cluster_systems' at --alpha (as ddp stats cluster --alpha), in the JSON, text and signature."""
    from ddpcore.stats import TableColumns, cluster_systems
    from ddpcore.stats.options import ResampleOptions

    path = _scores(tmp_path)
    table = pl.read_csv(path)
    results = {}
    for alpha in (0.05, 0.3):
        code, out, _ = _blindness(path, "--alpha", str(alpha), capsys=capsys)
        assert code == 0
        res = json.loads(out)
        c = res["evidence"]["clusters"]
        assert c["alpha"] == alpha and res["signature"]["cluster_alpha"] == alpha == res["signature"]["alpha"]
        for cond, key in (("DOC", "clusters_a"), ("MIX", "clusters_b")):
            want = cluster_systems(table, "bootstrap", alpha=alpha, condition_value=cond,
                                   options=ResampleOptions(n_boot=200, seed=0),
                                   columns=TableColumns(annotator=None))
            assert c[key] == [list(x) for x in want.clusters]
        results[alpha] = c["clusters_a"]
    assert results[0.05] != results[0.3]  # the level decides the answer, so it must be the one asked for
    code, out, _ = _blindness(path, "--alpha", "0.3", "-f", "text", capsys=capsys)
    assert code == 0 and "clusters (bootstrap, alpha 0.3)" in out and '"cluster_alpha": 0.3' in out
    code, out, _ = _blindness(path, "-f", "markdown", capsys=capsys)
    assert code == 0 and "| clusters (bootstrap, alpha 0.05) |" in out


def test_blindness_says_the_clusterings_warnings_and_strict_refuses_them(tmp_path, capsys) -> None:
    """200 resamples leave fewer than one in the 0.25 % tail of alpha 0.005: ddp stats cluster warns, blindness
    dropped it. Now one warning line for both conditions naming --n-boot-cluster; --strict: D930, exit 3."""
    path = _scores(tmp_path)
    code, out, err = _blindness(path, "--alpha", "0.005", capsys=capsys)
    assert code == 0
    res = json.loads(out)
    thin = [w for w in res["warnings"] if "replicate(s)" in w]
    assert len(thin) == 1 and thin[0].startswith("clusters DOC and MIX: the bootstrap p-value of each system pair "
                                                  "rests on 200 replicate(s), fewer than one in a 0.25% tail")
    assert thin[0].endswith("; use --n-boot-cluster 400 or more (default 1,000)")
    assert f"ddp blindness: warning: {thin[0]}" in err.splitlines()
    assert res["signature"]["n_warnings"] == len(res["warnings"])
    code, out, err = _blindness(path, "--alpha", "0.005", "--strict", capsys=capsys)
    assert code == 3 and out == ""
    assert err.splitlines() == [f"ddp blindness: error: [D930] {thin[0]}; --strict makes this an error: act on the "
                                "warning (e.g. raise --n-boot-cluster for this --alpha), or drop --strict"]
