"""Bug hunt 12 (helper 47): ``ddp stats cluster`` rank ranges, clusters and their warnings.

Expected values come from plain loops in this file over scipy.stats.wilcoxon / scipy.stats.norm (the calls
WMT24's humeval/tools.py makes) and over the rows themselves, never from the code under test.

* The WMT24 mini data: the rank ranges and clusters of ``--method wmt24`` (with and without --by-domain) are
  exactly tools.py's ``(1 + losses, S - wins)`` and ``get_clusters``; the "GPT-4 (ranks 1-16) listed above
  Claude-3.5 (ranks 2-12)" lines are expected (non-transitive significance on 27 pairs per comparison), and the
  one stderr line now says that they are not an error.
* ``--domain-col NAME`` with a table that also has a column literally named ``domain``: D999 (duplicate
  column); a NAME the table lacks silently used the ``domain`` column; a role column (``document_id``) was
  renamed away (D999).
* A null domain was reported at a row number of the filtered frame (one condition's rows), not of the input.
* The bootstrap with a system rated in a single document: significant without a word.
* wmt24 with two systems of equal mean that differ significantly: tools.py counts a loss for both, so the
  first-listed system's range misses its own position; nothing was said.
"""
from __future__ import annotations

import json
import math
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import scipy.stats
from cluster_helpers import tools_py_clusters

from ddpcore.cli.main import main
from ddpcore.io.wmt import read_wmt24_esa
from ddpcore.stats import ResampleOptions, cluster_systems

WMT24 = Path(__file__).resolve().parent / "data" / "stats-real" / "wmt24-genmt-mini"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["stats", "cluster", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _wilcoxon(d: list[float]) -> float:
    """scipy.stats.wilcoxon two-sided with its defaults (tools.py's call); 1.0 without a non-zero difference."""
    if not any(x != 0 for x in d):
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(scipy.stats.wilcoxon(d, alternative="two-sided").pvalue)


def _tools_py(rows: list[dict], by_domain: bool, alpha: float = 0.05):
    """WMT24 humeval/tools.py as plain loops: segment pairing, per-domain Wilcoxon + Stouffer
    (``1 - Phi(sum Phi^-1(1 - p_k) / sqrt K)``) and macro means with ``by_domain``; ranges
    ``(1 + losses, S - wins)`` (a loss: p < alpha and not a higher mean); ``get_clusters``."""
    obs: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    dom: dict[tuple, str] = {}
    per: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        k = (r["document_id"], r["segment_id"])
        obs[k][r["system"]].append(r["score"])
        dom.setdefault(k, r["domain"])
        per[r["system"]][r["domain"]].append(r["score"])
    x = {k: {s: sum(v) / len(v) for s, v in d.items()} for k, d in obs.items()}
    if by_domain:
        means = {s: sum(sum(v) / len(v) for v in d.values()) / len(d) for s, d in per.items()}
    else:
        means = {s: sum(sum(v) for v in d.values()) / sum(len(v) for v in d.values()) for s, d in per.items()}
    order = sorted(means, key=lambda s: (-means[s], s))

    def pval(a: str, b: str) -> float:
        keys = [k for k, v in x.items() if a in v and b in v]
        if not keys:
            return 1.0
        if not by_domain:
            return _wilcoxon([x[k][a] - x[k][b] for k in keys])
        zs = [scipy.stats.norm.ppf(1 - _wilcoxon([x[k][a] - x[k][b] for k in keys if dom[k] == g]))
              for g in sorted({dom[k] for k in keys})]
        return float(1 - scipy.stats.norm.cdf(sum(zs) / math.sqrt(len(zs))))

    p = {}
    for i, a in enumerate(order):  # two-sided: p(a, b) = p(b, a)
        for b in order[i + 1:]:
            p[(a, b)] = p[(b, a)] = pval(a, b)
    ranges = {}
    for a in order:
        wins = sum(1 for b in order if b != a and p[(a, b)] < alpha and means[a] > means[b])
        losses = sum(1 for b in order if b != a and p[(a, b)] < alpha and not means[a] > means[b])
        ranges[a] = (losses + 1, len(order) - wins)
    clusters = tools_py_clusters(order, p, alpha)
    return order, means, ranges, clusters, p


def _domain_table() -> pl.DataFrame:
    """4 systems x 8 documents x 5 segments, two domains by document, integer scores (ties)."""
    rng = np.random.default_rng(1)
    rows = []
    for d in range(8):
        for s in range(5):
            base = rng.normal(60, 10)
            for k, sysname in enumerate("ABCD"):
                rows.append({"document_id": f"d{d}", "segment_id": s, "system": sysname,
                             "score": float(round(base + 6 * (3 - k) + rng.normal(0, 6))),
                             "region": "news" if d % 2 else "social"})
    return pl.DataFrame(rows)


# --------------------------------------------------------------------------- the WMT24 mini data


@pytest.mark.parametrize("by_domain", [False, True])
def test_wmt24_ranges_and_clusters_on_the_mini_data_are_tools_py(by_domain):
    df = read_wmt24_esa(WMT24, waves=(2,), lps=["en-cs"])
    if by_domain:  # scipy's small tied per-domain samples take its slow permutation path: 8 of the 16 systems
        df = df.filter(pl.col("system").is_in(["refA", "GPT-4", "Claude-3.5", "CommandR-plus", "Unbabel-Tower70B",
                                               "CUNI-MH", "Llama3-70B", "CUNI-GA"]))
    order, means, ranges, clusters, _ = _tools_py(df.to_dicts(), by_domain)
    res = cluster_systems(df, "wmt24", by_domain=by_domain)
    assert list(res.order) == order
    assert res.means == pytest.approx(means, abs=1e-9)
    assert res.rank_ranges == ranges
    assert [list(c) for c in res.clusters] == clusters
    # ranges out of the listing order are tools.py's too (non-transitive significance on 27 pairs per comparison)
    out_of_order = [(a, b) for i, a in enumerate(order) for b in order[i + 1:]
                    if ranges[b][0] < ranges[a][0] or ranges[b][1] < ranges[a][1]]
    assert out_of_order and {(c["above"], c["below"]) for c in res.rank_conflicts} >= set(out_of_order)


def test_rank_conflict_warning_says_it_is_expected(capsys):
    code, out, err = _run(capsys, str(WMT24), "--reader", "wmt24", "--waves", "2", "--lp", "en-cs",
                          "--method", "wmt24", "--by-domain", "-f", "json")
    assert code == 0
    d = json.loads(out)
    lines = [ln for ln in err.splitlines() if "rank-range conflict" in ln]
    assert len(lines) == 1, "one summary line on stderr, not one per conflict"
    assert f"{len(d['rank_conflicts'])} rank-range conflict(s)" in lines[0] and len(d["rank_conflicts"]) > 10
    assert "not an error" in lines[0] and "read each system's rank range" in lines[0]


# --------------------------------------------------------------------------- --domain-col


def test_domain_col_with_a_column_called_domain_is_used_not_refused(tmp_path, capsys):
    df = _domain_table()
    # a column literally named 'domain' that is not the chosen one: labels by segment parity (would change the tests)
    both = df.with_columns(domain=pl.when(pl.col("segment_id") % 2 == 0).then(pl.lit("x")).otherwise(pl.lit("y")))
    path = tmp_path / "both.csv"
    both.write_csv(path)
    code, out, err = _run(capsys, str(path), "--method", "wmt24", "--by-domain", "--domain-col", "region",
                          "--min-pairs", "0")
    assert code == 0, err
    d = json.loads(out)
    order, means, ranges, clusters, p = _tools_py(df.rename({"region": "domain"}).to_dicts(), by_domain=True)
    assert d["order"] == order and d["means"] == pytest.approx(means, abs=1e-9)
    assert {s: tuple(v) for s, v in d["rank_ranges"].items()} == ranges and d["clusters"] == clusters
    got = np.array(d["p_values"], dtype=float)
    want = np.array([[np.nan if a == b else p[(a, b)] for b in order] for a in order])
    np.testing.assert_allclose(got, want, rtol=1e-9, equal_nan=True)


def test_domain_col_the_table_lacks_is_an_error_even_with_a_domain_column(tmp_path, capsys):
    path = tmp_path / "t.csv"
    _domain_table().rename({"region": "domain"}).write_csv(path)
    code, out, err = _run(capsys, str(path), "--method", "wmt24", "--by-domain", "--domain-col", "nope")
    assert code == 3 and out == ""
    assert "[D352]" in err and "'nope'" in err and str(path) in err and "D999" not in err


def test_domain_col_may_name_a_role_column(tmp_path, capsys):
    """--domain-col document_id: one Stouffer stratum per document (the document column stays the document)."""
    df = _domain_table()
    path = tmp_path / "t.csv"
    df.drop("region").write_csv(path)
    code, out, err = _run(capsys, str(path), "--method", "wmt24", "--by-domain", "--domain-col", "document_id",
                          "--min-pairs", "0")
    assert code == 0, err
    d = json.loads(out)
    order, means, ranges, clusters, _ = _tools_py(df.with_columns(domain=pl.col("document_id")).to_dicts(), True)
    assert d["order"] == order and d["means"] == pytest.approx(means, abs=1e-9)
    assert {s: tuple(v) for s, v in d["rank_ranges"].items()} == ranges and d["clusters"] == clusters


def test_null_domain_is_named_by_its_ids_not_a_filtered_row_number(tmp_path, capsys):
    df = _domain_table().rename({"region": "domain"})
    a = df.with_columns(condition=pl.lit("X"))
    b = df.with_columns(condition=pl.lit("Y"))
    b = b.with_columns(domain=pl.when(pl.int_range(pl.len()) == 4).then(None).otherwise(pl.col("domain")))
    path = tmp_path / "t.csv"
    pl.concat([a, b]).write_csv(path)
    bad = b.row(4, named=True)  # data row a.height + 5 of the file, the 5th row of condition Y
    code, _, err = _run(capsys, str(path), "--in", "Y", "--method", "wmt24", "--by-domain")
    assert code == 3 and "[D352]" in err and str(path) in err and "column 'domain'" in err
    assert f"document_id={bad['document_id']!r}" in err and f"system={bad['system']!r}" in err
    assert "row 5" not in err


# --------------------------------------------------------------------------- bootstrap: a system in one document


def test_bootstrap_system_rated_in_one_document_is_said(tmp_path, capsys):
    rng = np.random.default_rng(3)
    rows = [{"document_id": f"d{d:02d}", "segment_id": s, "system": "B",
             "score": float(np.clip(round(rng.normal(70, 15)), 0, 100))} for d in range(12) for s in range(4)]
    rows += [{"document_id": "d00", "segment_id": s, "system": "D", "score": 62.0 + s} for s in range(4)]
    rows += [{"document_id": f"d{d:02d}", "segment_id": 0, "system": "E", "score": 65.0} for d in range(3)]
    # systems whose rows lie in exactly one document, by a plain loop
    docs = defaultdict(set)
    for r in rows:
        docs[r["system"]].add(r["document_id"])
    lone = sorted(s for s, v in docs.items() if len(v) == 1)
    assert lone == ["D"]
    path = tmp_path / "t.csv"
    pl.DataFrame(rows).write_csv(path)
    code, out, err = _run(capsys, str(path), "--n-boot", "200")
    assert code == 0
    d = json.loads(out)
    assert d["signature"]["n_systems_one_unit"] == len(lone)
    said = [w for w in d["warnings"] if "single document" in w]
    assert len(said) == 1 and "(D)" in said[0] and "1 system(s)" in said[0]
    assert err.count("single document") == 1
    # --unit segment: every system has several segments
    res = cluster_systems(pl.DataFrame(rows), "bootstrap", unit="segment", options=ResampleOptions(n_boot=200))
    assert res.signature["n_systems_one_unit"] == 0 and not any("single segment" in w for w in res.warnings)


# --------------------------------------------------------------------------- wmt24: equal means that differ


def test_wmt24_equal_means_that_differ_are_a_position_conflict():
    # A: +1 on 19 segments and -19 on one (mean equal to B's); scipy's Wilcoxon calls the pair different
    rows = []
    for i in range(20):
        rows.append({"document_id": f"d{i}", "segment_id": 0, "system": "A", "score": 50.0 + (1 if i < 19 else -19)})
        rows.append({"document_id": f"d{i}", "segment_id": 0, "system": "B", "score": 50.0})
    rows = [dict(r, domain="news") for r in rows]
    order, means, ranges, clusters, p = _tools_py(rows, by_domain=False)
    assert means["A"] == means["B"] and p[("A", "B")] < 0.05
    assert order == ["A", "B"] and ranges == {"A": (2, 2), "B": (2, 2)}  # tools.py: a loss for both
    res = cluster_systems(pl.DataFrame(rows), "wmt24", min_pairs=0)
    assert res.rank_ranges == ranges and [list(c) for c in res.clusters] == clusters
    pos = [c for c in res.rank_conflicts if c["kind"] == "position"]
    assert [c["above"] for c in pos] == ["A"] and "position 1" in pos[0]["reason"]
    assert res.signature["n_rank_conflicts"] == len(res.rank_conflicts) >= 1
    assert any("rank-range conflict" in w for w in res.warnings)
