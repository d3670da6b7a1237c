"""Bug hunt 5 (curation): ``ddp select``, ``ddp select --evaluate`` and ``ddp sample`` against independent
computations (slow loops written here, scipy, numpy), on hand-made profiles (no spaCy).

Defects this file pins (each test failed before its fix):

* ``select --top-share F`` keeps every unit tied at the threshold, which can be far more than F (asked 50 %,
  kept 100 %) and was said nowhere: now a ``ddp select: note:`` line and ``signature.top_share``.
* ``select`` without ``--evaluate`` ignored ``--ties``/``--seed``/``--budgets``/... in silence, and
  ``--evaluate`` ignored ``--min-ddp``/``--domain``/``--top-share``/``--with-context``: D871.
* ``--evaluate`` kept the first of two scores of one (document, segment, system) in silence: D873;
  an ``--exclude-system`` name the table does not have left every system in, in silence: D872;
  score rows without a system vanished without a word (now counted in the warnings); text segment ids and
  a human score that is not a number were internal errors (D999): text ids now join, ``n/a`` is D654.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from scipy import stats

from ddpcore.cli.main import main


# ----------------------------------------------------------------------------- fixtures and loops


def make_rows(n_docs: int = 14, seed: int = 3) -> list[dict]:
    """Documents of 1-8 segments, 0-4 sentences each; DDP reaches at most to sentence 0; many ties at 0/1."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(n_docs):
        first = 0
        for s in range(int(rng.integers(1, 9))):
            n = int(rng.integers(0, 5))
            ddp = int(rng.integers(0, first + max(n - 1, 0) + 1)) if rng.random() < 0.6 else int(rng.integers(0, 2))
            rows.append({"document_id": f"d{d}", "segment_id": s, "domain": ["news", "lit", "social"][d % 3],
                         "ddp": ddp, "ddp_certified": ddp // 2, "first_sentence": first, "n_sentences": n})
            first += n
    return rows


def write_profile(rows: list[dict], path: Path, seg_type: pl.DataType = pl.Int64) -> Path:
    df = pl.DataFrame(rows).with_columns(pl.col("segment_id").cast(seg_type), pl.lit(3).alias("n_tokens"),
                                         pl.lit(1).alias("n_anchors"))
    t = df.to_arrow().replace_schema_metadata({b"ddpcore.signature": json.dumps(
        {"columns": {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"}}
    ).encode()})
    pq.write_table(t, path)
    return path


def write_input(rows: list[dict], path: Path) -> list[bytes]:
    """JSONL with unusual spacing, key order and line endings; returns the lines (bytes, newline included)."""
    lines = []
    for i, r in enumerate(rows):
        line = (f'{{"source": "seg {i} “x”",  "segment_id":{r["segment_id"]}, "document_id": "{r["document_id"]}",'
                f' "domain":"{r["domain"]}", "w": 1.50}}').encode() + (b"\r\n" if i % 4 == 0 else b"\n")
        lines.append(line)
    path.write_bytes(b"".join(lines))
    return lines


@pytest.fixture()
def corpus(tmp_path: Path):  # type: ignore[no-untyped-def]
    rows = make_rows()
    src = tmp_path / "in.jsonl"
    lines = write_input(rows, src)
    prof = write_profile(rows, tmp_path / "p.parquet")
    return rows, lines, src, prof


def loop_select(rows, col="ddp", mn=None, mx=None, top=None, unit="segment", doms=(), ctx=False):  # type: ignore[no-untyped-def]
    """Row indices kept, by one loop per unit: the documented rules restated (docs/curation.md)."""
    if unit == "document":
        dmax: dict = {}
        for r in rows:
            dmax[r["document_id"]] = max(dmax.get(r["document_id"], -1), r[col])
        units = list(dmax)
        value = dmax
        elig = [u for u in units if not doms or any(r["domain"] in doms for r in rows if r["document_id"] == u)]
    else:
        units = list(range(len(rows)))
        value = {i: rows[i][col] for i in units}
        elig = [i for i in units if not doms or rows[i]["domain"] in doms]
    ok = [u for u in elig if (mn is None or value[u] >= mn) and (mx is None or value[u] <= mx)]
    if top is not None:
        vals = sorted((value[u] for u in elig), reverse=True)
        thr = vals[math.ceil(top * len(vals) - 1e-9) - 1]  # the ceil(F n)-th highest
        ok = [u for u in ok if value[u] >= thr]
    if unit == "document":
        return [i for i, r in enumerate(rows) if r["document_id"] in set(ok)]
    keep = set(ok)
    if ctx:  # every earlier segment of the document from the one holding sentence first_sentence - ddp
        for i in ok:
            r = rows[i]
            reach = max(r["first_sentence"] - r[col], 0)
            for j, s in enumerate(rows):
                if s["document_id"] == r["document_id"] and (s["first_sentence"], j) <= (r["first_sentence"], i) \
                        and s["first_sentence"] + s["n_sentences"] > reach:
                    keep.add(j)
    return sorted(keep)


def numpy_summary(x: np.ndarray, docs: int) -> dict:
    """The documented summary recomputed on the written rows' DDP values."""
    x = x.astype(float)
    return {"documents": docs, "segments": int(x.size), "mean": round(float(x.mean()), 3),
            "median": float(np.median(x)), "p90": float(np.percentile(x, 90)), "max": int(x.max()),
            "share_ge_1": round(float((x >= 1).mean()), 4), "share_ge_5": round(float((x >= 5).mean()), 4),
            "share_ge_15": round(float((x >= 15).mean()), 4)}


# ----------------------------------------------------------------------------- select: checked and correct


@pytest.mark.parametrize("col", ["ddp", "ddp_certified"])
@pytest.mark.parametrize("args,kw", [
    (["--min-ddp", "3"], {"mn": 3}), (["--max-ddp", "0"], {"mx": 0}), (["--min-ddp", "1", "--max-ddp", "4"],
                                                                     {"mn": 1, "mx": 4}),
    (["--top-share", "0.2"], {"top": 0.2}), (["--top-share", "0.37", "--min-ddp", "2"], {"top": 0.37, "mn": 2}),
    (["--top-share", "0.2", "--with-context"], {"top": 0.2, "ctx": True}),
    (["--min-ddp", "2", "--with-context", "--domain", "news", "--domain", "lit"],
     {"mn": 2, "ctx": True, "doms": ("news", "lit")}),
    (["--unit", "document", "--top-share", "0.3"], {"unit": "document", "top": 0.3}),
    (["--unit", "document", "--min-ddp", "4", "--domain", "social"], {"unit": "document", "mn": 4, "doms": ("social",)}),
])
def test_select_rows_and_summary_equal_the_loop(corpus, tmp_path: Path, capsys, col, args, kw) -> None:
    rows, lines, src, prof = corpus
    out = tmp_path / "o.jsonl"
    assert main(["select", str(src), "--profile", str(prof), "--ddp-col", col, "-f", "json", *args,
                 "-o", str(out)]) == 0
    keep = loop_select(rows, col, **kw)
    assert out.read_bytes() == b"".join(lines[i] for i in keep)  # byte copies, input order
    summary = json.loads(capsys.readouterr().out)["summary"]
    if not keep:
        assert summary["after"] == {"documents": 0, "segments": 0}
        return
    want = numpy_summary(np.array([rows[i][col] for i in keep]), len({rows[i]["document_id"] for i in keep}))
    assert {k: summary["after"][k] for k in want} == want


def test_with_context_sentence_arithmetic_by_hand(tmp_path: Path) -> None:
    """One document, segments (first_sentence, n_sentences): s0 (0,3) s1 (3,0) s2 (3,2) s3 (5,4) s4 (9,1).
    s4 has DDP 5: it reaches sentence 9 - 5 = 4, held by s2 (sentences 3-4): keep s2, s3, s4, not s1
    (empty) nor s0. s3 with DDP 2 reaches sentence 3, held by s2 (s1 holds no sentence): s2, s3. s3 with DDP 3
    reaches sentence 2, held by s0 (0-2): s0, s1 (empty, between), s2, s3."""
    spec = [(0, 3, 0), (3, 0, 0), (3, 2, 0), (5, 4, 0), (9, 1, 5)]
    rows = [{"document_id": "a", "segment_id": i, "domain": "news", "ddp": d, "ddp_certified": 0,
             "first_sentence": f, "n_sentences": n} for i, (f, n, d) in enumerate(spec)]
    src, prof = tmp_path / "in.jsonl", write_profile(rows, tmp_path / "p.parquet")
    lines = write_input(rows, src)
    out = tmp_path / "o.jsonl"
    assert main(["select", str(src), "--profile", str(prof), "--min-ddp", "5", "--with-context", "-o", str(out)]) == 0
    assert out.read_bytes() == lines[2] + lines[3] + lines[4]
    rows[3]["ddp"], rows[4]["ddp"] = 2, 0
    write_profile(rows, prof)
    assert main(["select", str(src), "--profile", str(prof), "--min-ddp", "2", "--with-context", "-o", str(out)]) == 0
    assert out.read_bytes() == lines[2] + lines[3]
    rows[3]["ddp"] = 3
    write_profile(rows, prof)
    assert main(["select", str(src), "--profile", str(prof), "--min-ddp", "3", "--with-context", "-o", str(out)]) == 0
    assert out.read_bytes() == lines[0] + lines[1] + lines[2] + lines[3]


def test_select_csv_tsv_parquet_agree_with_jsonl(corpus, tmp_path: Path) -> None:
    rows, lines, src, prof = corpus
    df = pl.DataFrame(rows).select("document_id", pl.col("segment_id").cast(pl.Int32), "domain",
                                   (pl.col("ddp") * 0.5).alias("f"), pl.lit("a,\"b\"\nc").alias("source"))
    args = ["--top-share", "0.25", "--with-context"]
    keep = loop_select(rows, top=0.25, ctx=True)
    for name, write in (("in.csv", lambda p: df.write_csv(p)), ("in.tsv", lambda p: df.write_csv(p, separator="\t")),
                        ("in.parquet", lambda p: df.write_parquet(p, row_group_size=7))):
        path = tmp_path / name
        write(path)
        out = tmp_path / ("o" + path.suffix)
        assert main(["select", str(path), "--profile", str(prof), *args, "-o", str(out)]) == 0
        if name.endswith("parquet"):
            got = pl.read_parquet(out)
            assert pq.read_schema(out).remove_metadata() == pq.read_schema(path).remove_metadata()
        else:
            got = pl.read_csv(out, separator="\t" if name.endswith("tsv") else ",",
                              schema_overrides={"segment_id": pl.Int32})
        assert got.equals(df[keep]), name


# ----------------------------------------------------------------------------- select: defects


def test_top_share_ties_kept_are_said_and_recorded(tmp_path: Path, capsys) -> None:
    """10 segments, DDP 9, 7, 0 x 8. --top-share 0.5 asks ceil(0.5 * 10) = 5 units; the 5th highest has DDP 0
    and 8 segments share it, so all 10 are kept (share 1.0): said on stderr and in signature.top_share."""
    rows = [{"document_id": "a", "segment_id": i, "domain": "news", "ddp": d, "ddp_certified": 0,
             "first_sentence": i, "n_sentences": 1} for i, d in enumerate([9, 7] + [0] * 8)]
    src, prof = tmp_path / "in.jsonl", write_profile(rows, tmp_path / "p.parquet")
    write_input(rows, src)
    out = tmp_path / "o.jsonl"
    assert main(["select", str(src), "--profile", str(prof), "--top-share", "0.5", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "ddp select: note: --top-share 0.5 asked for 5 of the 10 segments" in err
    assert "8 segments share that value, so 10 (100.0%) are kept" in err
    sig = json.loads(Path(str(out) + ".signature.json").read_text())
    assert sig["top_share"] == {"top_share": 0.5, "unit": "segment", "eligible_units": 10, "asked_units": 5,
                                "threshold": 0, "kept_units": 10, "kept_share": 1.0, "tied_at_threshold": 8}
    # no tie at the cut (0.2 -> 2 units: DDP 9 and 7): recorded, no note
    assert main(["select", str(src), "--profile", str(prof), "--top-share", "0.2", "-o", str(out)]) == 0
    assert "note" not in capsys.readouterr().err
    assert json.loads(Path(str(out) + ".signature.json").read_text())["top_share"]["kept_units"] == 2


@pytest.mark.parametrize("extra", [["--ties", "input"], ["--seed", "5"], ["--budgets", "0.3"], ["--n-random", "9"],
                                   ["--exclude-system", "x"], ["--strict-join"], ["--perfect-score", "0"],
                                   ["--seed", "0"], ["--alpha", "0.1"], ["--human-col", "score"]])
def test_evaluate_options_without_evaluate_are_refused(corpus, tmp_path: Path, capsys, extra) -> None:
    rows, lines, src, prof = corpus
    out = tmp_path / "o.jsonl"
    assert main(["select", str(src), "--profile", str(prof), "--top-share", "0.1", *extra, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "[D871]" in err and extra[0] in err and "Traceback" not in err
    assert not out.exists()


# ----------------------------------------------------------------------------- select --evaluate


def make_scores(rows: list[dict], systems: str = "ABCD", seed: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    out = []
    for r in rows:
        for k, s in enumerate(systems):
            out.append((r["document_id"], r["segment_id"], s, float(-int(rng.integers(0, 4)) * (1 + k % 2)
                                                                   - (r["ddp"] > 3) * int(rng.integers(0, 3)))))
    return pl.DataFrame(out, schema=["document_id", "segment_id", "system", "score"], orient="row")


def test_evaluate_against_the_loop(corpus, tmp_path: Path) -> None:
    """Budget 0.3, 200 random subsets, --ties random and input, seeds 0 and 4: the selection is the top
    ceil(0.3 n) segments by DDP with ties by PCG64([seed, 2]).permutation(n) (input: row order); random subset r
    is argsort(PCG64(seed).random((200, n))[r])[:k]; percentile 100 (#below + #equal / 2) / 200; tau-b and
    Spearman by scipy."""
    rows, _, _, prof = corpus
    sc = make_scores(rows)
    sc.write_csv(tmp_path / "s.csv")
    n, systems = len(rows), ["A", "B", "C", "D"]
    h = np.array([[sc.filter((pl.col("document_id") == r["document_id"]) & (pl.col("segment_id") == r["segment_id"])
                             & (pl.col("system") == s))["score"][0] for s in systems] for r in rows])
    ddp = np.array([r["ddp"] for r in rows], float)
    for seed in (0, 4):
        for ties in ("random", "input"):
            out = tmp_path / "r.json"
            assert main(["select", "--evaluate", str(tmp_path / "s.csv"), "--profile", str(prof), "--budgets", "0.3",
                         "--n-random", "200", "--seed", str(seed), "--ties", ties, "-o", str(out)]) == 0
            got = json.loads(out.read_text())["budgets"][0]
            k = math.ceil(0.3 * n)
            tie = np.random.Generator(np.random.PCG64([seed, 2])).permutation(n) if ties == "random" else np.arange(n)
            sel = sorted(range(n), key=lambda i: (-ddp[i], tie[i]))[:k]
            u = np.random.Generator(np.random.PCG64(seed)).random((200, n))
            subsets = [np.argsort(u[j], kind="stable")[:k] for j in range(200)]
            rnd = np.array([h[i].mean() for i in subsets])
            x = h[sel].mean()
            assert got["n_units"] == k and got["mean_human"]["selected"] == pytest.approx(x)
            assert got["mean_human"]["random_mean"] == pytest.approx(rnd.mean())
            # the percentile on exact integer sums (scores are whole numbers, every subset has k segments x 4
            # systems): a random subset with the selection's sum is a tie (seed 0 / random has one: 1.75, not 2.0)
            xs, rs = int(h[sel].sum()), np.array([int(h[i].sum()) for i in subsets])
            assert got["mean_human"]["percentile"] == 100 * (np.sum(rs < xs) + 0.5 * np.sum(rs == xs)) / 200
            assert got["share_perfect"]["selected"] == pytest.approx((h[sel] == h.max()).mean())
            tau = np.nanmean([stats.kendalltau(ddp[sel], h[sel, j]).statistic for j in range(4)])
            assert got["tau_estimator"]["selected"] == pytest.approx(tau)
            assert got["spearman"]["selected"] == pytest.approx(stats.spearmanr(h[sel].mean(0), h.mean(0)).statistic)


def test_percentile_counts_rounding_ties_as_ties() -> None:
    """0.1 + 0.2 != 0.3 in floating point: a random subset whose mean is the selection's up to rounding is a tie
    (half a count), not below: 100 (1 + 0.5) / 3 = 50."""
    from ddpcore.curate.evaluate import _percentile

    assert _percentile(0.3, np.array([0.1 + 0.2, 0.0, 1.0])) == 50.0
    assert _percentile(0.0, np.array([0.0, -1.0, 1e-20])) == pytest.approx(100 * (1 + 0.5 * 2) / 3)


def _evaluate(tmp_path: Path, prof: Path, scores: pl.DataFrame, *extra: str) -> int:
    scores.write_csv(tmp_path / "s.csv")
    return main(["select", "--evaluate", str(tmp_path / "s.csv"), "--profile", str(prof), "--budgets", "0.5",
                 "--n-random", "20", *extra, "-o", str(tmp_path / "r.json")])


@pytest.mark.parametrize("extra", [["--min-ddp", "2"], ["--max-ddp", "0"], ["--top-share", "0.5"],
                                   ["--domain", "news"], ["--with-context"]])
def test_selection_options_with_evaluate_are_refused(corpus, tmp_path: Path, capsys, extra) -> None:
    rows, _, _, prof = corpus
    assert _evaluate(tmp_path, prof, make_scores(rows), *extra) == 2
    err = capsys.readouterr().err
    assert "[D871]" in err and extra[0] in err and not (tmp_path / "r.json").exists()


def test_evaluate_refuses_a_segment_scored_twice(corpus, tmp_path: Path, capsys) -> None:
    """A (document, segment, system) key on rows 1 and 2 (-25, then the original score): the pivot kept the
    first in silence."""
    rows, _, _, prof = corpus
    sc = make_scores(rows)
    dup = pl.concat([sc.head(1).with_columns(pl.lit(-25.0).alias("score")), sc])
    assert _evaluate(tmp_path, prof, dup) == 3
    err = capsys.readouterr().err
    assert "[D873]" in err and "rows 1 and 2" in err and "document 'd0', segment 0, system 'A' is scored twice" in err


def test_evaluate_unknown_exclude_system(corpus, tmp_path: Path, capsys) -> None:
    rows, _, _, prof = corpus
    assert _evaluate(tmp_path, prof, make_scores(rows), "--exclude-system", "refA") == 2
    err = capsys.readouterr().err
    assert "[D872] --exclude-system refA: not a system of" in err and "systems: A, B, C, D" in err
    assert _evaluate(tmp_path, prof, make_scores(rows), "--exclude-system", "D") == 0
    assert json.loads((tmp_path / "r.json").read_text())["n_systems"] == 3


def test_evaluate_rows_without_a_system_are_counted(corpus, tmp_path: Path, capsys) -> None:
    rows, _, _, prof = corpus
    sc = make_scores(rows).with_columns(pl.when(pl.col("system") == "A").then(None).otherwise(pl.col("system"))
                                       .alias("system"))
    assert _evaluate(tmp_path, prof, sc) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["n_systems"] == 3
    msg = f"{len(rows)} score row(s) have no system"
    assert msg in capsys.readouterr().err and any(msg in w for w in rep["warnings"])


def test_evaluate_text_segment_ids_join_and_bad_scores(corpus, tmp_path: Path, capsys) -> None:
    """Segment ids 's0', 's1', ... on both sides give the report of the integer ids (they were D999)."""
    rows, _, _, prof = corpus
    sc = make_scores(rows)
    assert _evaluate(tmp_path, prof, sc) == 0
    want = json.loads((tmp_path / "r.json").read_text())
    text_rows = [{**r, "segment_id": f"s{r['segment_id']}"} for r in rows]
    prof_t = write_profile(text_rows, tmp_path / "pt.parquet", pl.String)
    sc_t = sc.with_columns(pl.format("s{}", pl.col("segment_id")).alias("segment_id"))
    assert _evaluate(tmp_path, prof_t, sc_t) == 0
    got = json.loads((tmp_path / "r.json").read_text())
    assert got["budgets"] == want["budgets"] and got["n_items"] == len(rows)
    bad = sc.with_columns(pl.when(pl.int_range(pl.len()) == 8).then(pl.lit("n/a"))
                          .otherwise(pl.col("score").cast(pl.String)).alias("score"))
    capsys.readouterr()
    assert _evaluate(tmp_path, prof, bad) == 3
    err = capsys.readouterr().err
    assert "[D654]" in err and "row 9, column 'score': 'n/a' is not a number" in err and "D999" not in err


# ----------------------------------------------------------------------------- sample: checked and correct


def loop_sample(rows, edges, n, by, seed, col="ddp"):  # type: ignore[no-untyped-def]
    """The documented draw: units in first-appearance order get PCG64(seed).random(n_units); each bin
    [e_i, e_i+1) takes its n smallest keys; segments bring their context; (rows kept, [(available, achieved)])."""
    if by == "document":
        units = list(dict.fromkeys(r["document_id"] for r in rows))
        val = [max(r[col] for r in rows if r["document_id"] == u) for u in units]
    else:
        units = list(range(len(rows)))
        val = [r[col] for r in rows]
    keys = np.random.Generator(np.random.PCG64(seed)).random(len(units))
    chosen, report = [], []
    for b in range(len(edges) - 1):
        members = sorted((j for j in range(len(units)) if edges[b] <= val[j] < edges[b + 1]), key=lambda j: keys[j])
        chosen += members[:n]
        report.append((len(members), min(n, len(members))))
    if by == "document":
        keep = [i for i, r in enumerate(rows) if r["document_id"] in {units[j] for j in chosen}]
    else:
        keep = sorted({i for j in chosen for i in [units[j], *_ctx_of(rows, units[j], col)]})
    return keep, report


def _ctx_of(rows, i, col):  # type: ignore[no-untyped-def]
    r = rows[i]
    reach = max(r["first_sentence"] - r[col], 0)
    return [j for j, s in enumerate(rows) if s["document_id"] == r["document_id"]
            and (s["first_sentence"], j) <= (r["first_sentence"], i) and s["first_sentence"] + s["n_sentences"] > reach]


@pytest.mark.parametrize("by", ["document", "segment"])
@pytest.mark.parametrize("bins,n,seed", [("0,1,5,15,50,inf", 2, 0), ("0,2,10", 3, 7), ("1,3,100", 40, 1),
                                         ("0,inf", 5, 2)])
def test_sample_rows_and_report_equal_the_loop(corpus, tmp_path: Path, capsys, by, bins, n, seed) -> None:
    rows, lines, src, prof = corpus
    edges = [float(e) for e in bins.split(",")]
    out = tmp_path / "s.jsonl"
    assert main(["sample", str(src), "--profile", str(prof), "--bins", bins, "--per-bin", str(n), "--unit", by,
                 "--seed", str(seed), "-f", "json", "-o", str(out)]) == 0
    cap = capsys.readouterr()
    keep, report = loop_sample(rows, edges, n, by, seed)
    assert out.read_bytes() == b"".join(lines[i] for i in keep)
    o = json.loads(cap.out)
    assert [(b["available"], b["achieved"]) for b in o["bins"]] == report
    thin = [b for b in o["bins"] if not b["filled"]]
    assert [(b["available"], b["achieved"]) for b in thin] == [r for r in report if r[0] < n]
    assert ("cannot be filled" in cap.err) == bool(thin)
    sig = json.loads(Path(str(out) + ".signature.json").read_text())
    assert [r["filled"] for r in sig["report"]] == [a >= n for a, _ in report]
    # the same draw from a Parquet and a CSV copy of the input (same rows, same order)
    df = pl.read_ndjson(src)
    for name, write in (("c.csv", lambda p: df.write_csv(p)), ("c.parquet", lambda p: df.write_parquet(p))):
        write(tmp_path / name)
        o2 = tmp_path / ("s2" + Path(name).suffix)
        assert main(["sample", str(tmp_path / name), "--profile", str(prof), "--bins", bins, "--per-bin", str(n),
                     "--unit", by, "--seed", str(seed), "-o", str(o2)]) == 0
        got = pl.read_csv(o2) if name.endswith("csv") else pl.read_parquet(o2)
        assert list(zip(got["document_id"], got["segment_id"])) == [(rows[i]["document_id"], rows[i]["segment_id"])
                                                                    for i in keep]
