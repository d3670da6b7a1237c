"""Rank ranges (WMT count rule), rank conflicts and the pairs-per-comparison floor of
ddpcore.stats.cluster_systems / ``ddp stats cluster`` (issue 19, item 1).

Expected values come from plain loops in this file over scipy.stats.wilcoxon (the call the WMT
scripts make) and over the rows themselves, never from the code under test."""
from __future__ import annotations

import json
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from ddpcore.cli.main import main
from ddpcore.errors import DDPUsageError
from ddpcore.io.esa import read_esa_wmt23
from ddpcore.stats import cluster_systems
from ddpcore.stats import ResampleOptions

MINI = Path(__file__).resolve().parents[1] / "data" / "stats-real" / "esa-wmt23-ende-mini"
SHARED_ESA = Path(__file__).resolve().parents[3] / "shared" / "data" / "esa-wmt23-ende"


@pytest.fixture(scope="module")
def mini():
    return read_esa_wmt23(MINI)


def _rows(df, condition: str) -> list[dict]:
    return [r for r in df.select("document_id", "segment_id", "system", "annotator", "condition", "score")
            .to_dicts() if r["condition"] == condition]


def _pairs_by_key(rows, with_annotator):
    acc = defaultdict(lambda: defaultdict(list))
    for r in rows:
        key = (r["document_id"], r["segment_id"]) + ((r["annotator"],) if with_annotator else ())
        acc[key][r["system"]].append(r["score"])
    return {k: {s: sum(v) / len(v) for s, v in d.items()} for k, d in acc.items()}


def _order(rows):
    by = defaultdict(list)
    for r in rows:
        by[r["system"]].append(r["score"])
    means = {s: sum(v) / len(v) for s, v in by.items()}
    return sorted(means, key=lambda s: (-means[s], s))


def _wilcoxon_greater(d):
    if not any(x != 0 for x in d):
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(scipy.stats.wilcoxon(d, alternative="greater").pvalue)


def _oracle_wmt25(rows, with_annotator, alpha=0.05):
    """Loop oracle: one-sided scipy Wilcoxon per ordered pair; WMT count rule
    best = 1 + #(above and significantly better), worst = S - #(below and significantly worse)."""
    obs = _pairs_by_key(rows, with_annotator)
    order = _order(rows)
    n = {(a, b): sum(1 for v in obs.values() if a in v and b in v) for a in order for b in order}
    better = {}
    for a in order:
        for b in order:
            if a != b:
                d = [v[a] - v[b] for v in obs.values() if a in v and b in v]
                better[(a, b)] = bool(d) and _wilcoxon_greater(d) < alpha
    ranges = []
    for i, a in enumerate(order):
        lo = 1 + sum(better[(b, a)] for b in order[:i])
        hi = len(order) - sum(better[(a, b)] for b in order[i + 1:])
        ranges.append((lo, hi))
    return order, ranges, better, n


def _walk(order, better):
    """The WMT25 script's walk (the rule before issue 19), to show the test tells them apart."""
    out = []
    for i, a in enumerate(order):
        lo = i + 1
        for b in reversed(order[:i]):
            if better[(b, a)]:
                break
            lo -= 1
        hi = i + 1
        for b in order[i + 1:]:
            if better[(a, b)]:
                break
            hi += 1
        out.append((lo, hi))
    return out


def test_wmt25_ranges_follow_the_count_rule_on_thin_real_pairs(mini):
    # ESA-1 of the vendored mini fixture with annotator pairing: few pairs, non-transitive tests
    rows = _rows(mini, "ESA-1")
    res = cluster_systems(mini, "wmt25", condition_value="ESA-1", pair_annotator=True)
    order, ranges, better, _ = _oracle_wmt25(rows, True)
    assert list(res.order) == order
    assert [res.rank_ranges[s] for s in order] == ranges
    assert _walk(order, better) != ranges  # the data tell the two rules apart
    # clusters: no rank range crosses a cluster boundary
    pos = 0
    for members in res.clusters:
        lo, hi = pos + 1, pos + len(members)
        for s in members:
            b, w = res.rank_ranges[s]
            assert lo <= b and w <= hi, (s, b, w, lo, hi)
        pos = hi


def test_rank_conflicts_are_exactly_the_out_of_order_pairs(mini):
    rows = _rows(mini, "ESA-1")
    res = cluster_systems(mini, "wmt25", condition_value="ESA-1", pair_annotator=True)
    order, ranges, better, n = _oracle_wmt25(rows, True)
    expected = {(order[i], order[j]) for i in range(len(order)) for j in range(i + 1, len(order))
                if ranges[j][0] < ranges[i][0] or ranges[j][1] < ranges[i][1]}
    got = {(c["above"], c["below"]) for c in res.rank_conflicts if c["kind"] == "order"}
    assert expected and got == expected
    for c in res.rank_conflicts:
        a, b, k = c["above"], c["below"], c["witness"]
        if c["kind"] == "order":
            # the witness is a real non-transitivity: better than a but not b, or b beats it and a does not
            assert (better[(k, a)] and not better[(k, b)]) or (better[(b, k)] and not better[(a, k)])
            assert a in c["reason"] and b in c["reason"] and "not transitive" in c["reason"]
        else:
            assert c["kind"] == "inverted" and better[(b, a)] and order.index(b) > order.index(a)
    inverted = {(order[i], order[j]) for i in range(len(order)) for j in range(i + 1, len(order))
                if better[(order[j], order[i])]}
    assert {(c["above"], c["below"]) for c in res.rank_conflicts if c["kind"] == "inverted"} == inverted
    assert res.signature["n_rank_conflicts"] == len(res.rank_conflicts)
    assert any("rank-range conflict" in w for w in res.warnings)


def test_pair_floor_counts_the_comparisons_below_it(mini):
    rows = _rows(mini, "ESA-1")
    obs = _pairs_by_key(rows, True)
    order = _order(rows)
    counts = {(a, b): sum(1 for v in obs.values() if a in v and b in v)
              for i, a in enumerate(order) for b in order[i + 1:]}
    floor = sorted(counts.values())[len(counts) // 2]  # a floor that splits the comparisons
    res = cluster_systems(mini, "wmt25", condition_value="ESA-1", pair_annotator=True, min_pairs=floor)
    pf = res.pair_floor
    below = [[a, b, c] for (a, b), c in counts.items() if c < floor]
    assert pf["min_pairs"] == floor and pf["n_comparisons"] == len(counts)
    assert pf["n_pairs_min"] == min(counts.values()) and pf["n_pairs_max"] == max(counts.values())
    assert pf["below"] == below and pf["n_below"] == len(below) > 0
    assert res.signature["min_pairs"] == floor and res.signature["n_below_min_pairs"] == len(below)
    assert res.signature["n_pairs_min"] == min(counts.values())
    assert any(f"fewer than {floor} paired observations" in w for w in res.warnings)
    # the floor at the smallest count: nothing below it, no warning about pairs
    low = cluster_systems(mini, "wmt25", condition_value="ESA-1", pair_annotator=True,
                          min_pairs=min(counts.values()))
    assert low.pair_floor["n_below"] == 0 and not any("paired observations" in w for w in low.warnings)
    # one more than the smallest count: exactly the comparisons at the minimum are below it
    one = cluster_systems(mini, "wmt25", condition_value="ESA-1", pair_annotator=True,
                          min_pairs=min(counts.values()) + 1)
    assert one.pair_floor["n_below"] == sum(c == min(counts.values()) for c in counts.values())
    # default floor 100 (documented) and 0 = no floor
    assert cluster_systems(mini, "wmt24", condition_value="ESA-1").pair_floor["min_pairs"] == 100
    off = cluster_systems(mini, "wmt24", condition_value="ESA-1", min_pairs=0)
    assert off.pair_floor["n_below"] == 0 and off.signature["min_pairs"] == 0


def test_min_pairs_bad_values(mini):
    with pytest.raises(DDPUsageError, match=r"\[D351\].*applies to method="):
        cluster_systems(mini, "bootstrap", condition_value="ESA-1", min_pairs=10)
    for bad in (-1, 2.5, True, "10"):
        with pytest.raises(DDPUsageError, match=r"\[D351\] min_pairs must be an integer >= 0"):
            cluster_systems(mini, "wmt25", condition_value="ESA-1", min_pairs=bad)
    boot = cluster_systems(mini, "bootstrap", condition_value="ESA-1", options=ResampleOptions(n_boot=50))
    assert boot.pair_floor is None and boot.signature["min_pairs"] is None


def test_cli_warns_and_records(mini, tmp_path, capsys):
    table = tmp_path / "esa.parquet"
    mini.drop("error_spans").write_parquet(table)
    code = main(["stats", "cluster", str(table), "--in", "ESA-1", "--method", "wmt25", "-q"])
    out, err = capsys.readouterr()
    assert code == 0
    d = json.loads(out)
    lines = err.strip().splitlines()
    assert all(line.startswith("ddp stats cluster: warning: ") for line in lines) and len(lines) == 2
    assert d["pair_floor"]["n_below"] == d["signature"]["n_below_min_pairs"] > 0
    assert d["rank_conflicts"] and d["warnings"] == [line.split("warning: ", 1)[1] for line in lines]
    code = main(["stats", "cluster", str(table), "--in", "ESA-1", "--method", "wmt25", "-q", "-f", "text",
                 "--no-pair-annotator", "--min-pairs", "0"])
    out, err = capsys.readouterr()
    assert code == 0 and "below --min-pairs 0" in out and "min_pairs=0" in out
    assert main(["stats", "cluster", str(table), "--in", "ESA-1", "--min-pairs", "5"]) == 2
    assert "[D351]" in capsys.readouterr().err


@pytest.mark.shared_data
def test_real_esa_default_pairing_is_flagged():
    if not SHARED_ESA.is_dir():
        pytest.skip("../shared/data/esa-wmt23-ende is absent")
    df = read_esa_wmt23(SHARED_ESA, conditions=["ESA-1"])
    res = cluster_systems(df, "wmt25", condition_value="ESA-1")
    # the numbers: 13-76 paired observations per comparison under annotator pairing
    assert res.pair_floor["n_pairs_min"] == 13 and res.pair_floor["n_pairs_max"] == 76
    assert res.pair_floor["n_below"] == 78
    # every range that breaks the listing order is explained
    order = list(res.order)
    out_of_order = {(a, b) for i, a in enumerate(order) for b in order[i + 1:]
                    if res.rank_ranges[b][0] < res.rank_ranges[a][0] or res.rank_ranges[b][1] < res.rank_ranges[a][1]}
    assert out_of_order == {(c["above"], c["below"]) for c in res.rank_conflicts if c["kind"] == "order"}
    assert ("GPT4-5shot", "ONLINE-W") in out_of_order
    # segment pairing: 207 pairs everywhere, nothing below the floor
    seg = cluster_systems(df, "wmt25", condition_value="ESA-1", pair_annotator=False)
    assert seg.pair_floor["n_pairs_min"] == 207 and seg.pair_floor["n_below"] == 0
    assert np.all(seg.n_pairs[~np.eye(13, dtype=bool)] == 207)


def test_inverted_one_sided_significance_is_reported():
    # A's mean is higher only through one outlier; B beats A on 20 of 21 pairs, so the one-sided
    # Wilcoxon (scipy) calls the lower-mean B significantly better than A
    import polars as pl

    rows = [{"document_id": "d", "segment_id": 0, "system": "A", "score": 100.0},
            {"document_id": "d", "segment_id": 0, "system": "B", "score": 0.0}]
    for k in range(1, 21):
        rows += [{"document_id": "d", "segment_id": k, "system": "A", "score": 50.0},
                 {"document_id": "d", "segment_id": k, "system": "B", "score": 51.0}]
    p_ref = scipy.stats.wilcoxon([51.0 - 50.0] * 20 + [-100.0], alternative="greater").pvalue
    assert p_ref < 0.05
    res = cluster_systems(pl.DataFrame(rows), "wmt25", min_pairs=0)
    assert res.order == ("A", "B")
    assert res.p_values[1, 0] == pytest.approx(p_ref, rel=1e-12)
    assert [c["kind"] for c in res.rank_conflicts] == ["inverted"]
    assert res.rank_conflicts[0]["above"] == "A" and res.rank_conflicts[0]["below"] == "B"
    assert res.rank_ranges == {"A": (1, 2), "B": (1, 2)}  # B is not listed below A as "worse"
    assert len(res.warnings) == 1 and "rank-range conflict" in res.warnings[0]


def test_rank_rules_at_p_equal_to_alpha() -> None:
    """The three rules at the boundary p == alpha, which permutation p-values reach ((k + 1) / (n + 1) = 0.05 at
    n = 19, k = 0): the greedy ranks (WMT25) split when some p <= alpha (clustering.py's docstring), a win or loss
    needs p < alpha, the straddle clusters join a pair when p > alpha (WMT24 get_clusters) or p >= alpha (not
    significant). A planted ``<`` in the greedy rule and ``<=`` in the wins passed every other test."""
    import numpy as np

    from ddpcore.stats.clustering import _clusters_straddle, _greedy_ranks, _ranges_wins_losses

    alpha = 0.05
    above = float(np.nextafter(alpha, 1.0))
    at = np.array([[np.nan, alpha], [alpha, np.nan]])
    over = np.array([[np.nan, above], [above, np.nan]])
    assert _greedy_ranks(at, alpha).tolist() == [1, 2]
    assert _greedy_ranks(over, alpha).tolist() == [1, 1]
    means = np.array([2.0, 1.0])
    assert [x.tolist() for x in _ranges_wins_losses(at, means, alpha)] == [[1, 1], [2, 2]]  # no win at p == alpha
    below = float(np.nextafter(alpha, 0.0))
    sig = np.array([[np.nan, below], [below, np.nan]])
    assert [x.tolist() for x in _ranges_wins_losses(sig, means, alpha)] == [[1, 2], [1, 2]]
    assert _clusters_straddle(at, alpha, strict_greater=True) == [0]  # p > alpha joins: a cut
    assert _clusters_straddle(at, alpha, strict_greater=False) == []  # p >= alpha is not significant: joined
