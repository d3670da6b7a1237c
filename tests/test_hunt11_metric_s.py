"""Bug hunt 11 (helper 46): DiscoX Metric-S (``--mapping paper``) and metric-human consistency against the paper.

Defects fixed, each with a regression test below:

1. ``metric_human_consistency``: a gap of exactly the tie threshold counted as a tie for most score pairs.
   Metric-S scores move in 2/5/10/50-point steps, so a 5-point gap (0.05 of the 0-100 scale) is common; in
   floating point 0.70 - 0.65 = 0.04999999999999993 < 0.05, so 70 vs 65 was a tie while 100 vs 95
   (0.050000000000000044) was not. The paper counts a tie when the difference is *below* 0.05. The "every pair
   is a tie" warning fired on the same rounding noise.
2. ``metric_human_consistency``: systems scored on different items (error rows dropped for one system) were
   compared by means over different documents, in silence; now said (``warnings``, ``UserWarning``).
3. ``metric_human_consistency``: a score that is not a number ("n/a") or a nested list raised a bare
   ``ValueError``; now ``[D555]``.
4. ``metric_s(mapping="paper")``: an accuracy item labelled 有问题 / issue (no severity) was deducted the
   default 5 points without being counted in ``n_unknown_labels`` (docs/metric-s.md: accuracy "other / missing
   -5, counted unknown"; the paper's Appendix E gives accuracy no single level), so ``ddp metric-s`` gave no
   warning.

5. ``metric_s``: a record without an ``id`` is named by its record number; when another record gives that
   number as its id, two output rows shared one id, exit 0. Now ``[D556]`` naming both lines.

Expected values come from the slow, independent implementations below (exact ``fractions.Fraction``
arithmetic for the consistency measure; a loop over the documented paper table for Metric-S), or from hand
arithmetic written beside them -- never from ddpcore.
"""
from __future__ import annotations

import itertools
import json
import warnings
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore.errors import DDPDataError
from ddpcore.stats.metric_s import metric_human_consistency, metric_s

# ============================================================================ consistency oracle


def slow_consistency(item, system, metric, human, metric_range=(0, 100), human_range=(0, 100), t=0.05, th=None):
    """DiscoX §4.2 / App. G, read as ddpcore documents it: "expert scores [are] normalized with metric scores to
    [0, 1]" (min-max with the declared scale) and compared by pairwise ranking; "ties counted as consistent when
    [normalised] score differences were below 0.05" (the same threshold for human scores unless given). Segment
    level: every pair of systems scored on the same item; system level: every pair of system means (each system's
    mean over the items it is scored on). Exact rational arithmetic: no rounding anywhere."""
    th = t if th is None else th
    t, th = Fraction(str(t)), Fraction(str(th))

    def norm(x, rng):
        lo, hi = Fraction(str(rng[0])), Fraction(str(rng[1]))
        return (Fraction(str(x)) - lo) / (hi - lo)

    def sign(x):
        return (x > 0) - (x < 0)

    def consistent(dm, dh):
        tie_m, tie_h = abs(dm) < t, abs(dh) < th
        if tie_m and tie_h:
            return True
        if tie_m or tie_h:
            return False
        return sign(dm) == sign(dh)

    rows = [(i, s, norm(m, metric_range), norm(h, human_range)) for i, s, m, h in zip(item, system, metric, human)]
    seg = []
    for a, b in itertools.combinations(rows, 2):
        if a[0] == b[0]:
            seg.append(consistent(a[2] - b[2], a[3] - b[3]))
    means = {}
    for s in dict.fromkeys(r[1] for r in rows):
        mine = [r for r in rows if r[1] == s]
        means[s] = (sum(r[2] for r in mine) / len(mine), sum(r[3] for r in mine) / len(mine))
    sysp = [consistent(means[a][0] - means[b][0], means[a][1] - means[b][1])
            for a, b in itertools.combinations(means, 2)]
    frac = (lambda v: Fraction(sum(v), len(v)) if v else None)
    return frac(seg), len(seg), frac(sysp), len(sysp)


def _ours(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        r = metric_human_consistency(*args, **kw)
    seg = None if r.n_segment_pairs == 0 else r.segment_consistency
    sysc = None if r.n_system_pairs == 0 else r.system_consistency
    return seg, r.n_segment_pairs, sysc, r.n_system_pairs


def _same(ours, slow):
    assert ours[1] == slow[1] and ours[3] == slow[3]
    for o, s in ((ours[0], slow[0]), (ours[2], slow[2])):
        assert (o is None) == (s is None)
        if o is not None:
            assert o == pytest.approx(float(s), abs=1e-12)


# ---------------------------------------------------------------- 1. a gap of exactly the threshold is no tie


@pytest.mark.parametrize("a,b", [(70, 65), (60, 55), (35, 30), (15, 10), (100, 95), (57, 52)])
def test_a_gap_of_exactly_the_threshold_is_not_a_tie(a, b):
    """Metric prefers s1 by exactly 5 of 100 points (0.05, not below 0.05: no tie); humans prefer s1 by 20.
    By hand (and slow_consistency): consistent, 1/1 at both levels. Before the fix 70 vs 65 gave 0.0 (a metric
    tie against a human preference) while 100 vs 95 gave 1.0."""
    args = (["d", "d"], ["s1", "s2"], [a, b], [80, 60])
    assert slow_consistency(*args) == (1, 1, 1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nor "every metric pair is a tie": the span is 0.05, not below it
        r = metric_human_consistency(*args)
    assert (r.segment_consistency, r.system_consistency, r.warnings) == (1.0, 1.0, ())
    # a gap of 4 points (0.04) is a tie: inconsistent with the human preference (hand: 0/1)
    assert _ours(["d", "d"], ["s1", "s2"], [a, a - 4], [80, 60]) == (0.0, 1, 0.0, 1)


def test_human_side_and_0_1_scale_gap_of_exactly_the_threshold():
    """The same on the human side, and on scores already on [0, 1] given as decimals: 0.70 vs 0.65 is a 0.05
    gap (no tie). slow_consistency reads the decimals exactly (Fraction of their text)."""
    args = (["d", "d"], ["s1", "s2"], [0.9, 0.2], [0.70, 0.65])
    kw = dict(metric_range=(0, 1), human_range=(0, 1))
    assert slow_consistency(*args, **kw) == (1, 1, 1, 1)
    assert _ours(*args, **kw) == (1.0, 1, 1.0, 1)
    # human scores on a 1-5 scale (0.05 of a 4-point span is 0.2): 3.4 vs 3.2 is no tie, 3.4 vs 3.25 is
    args = (["d", "d"], ["s1", "s2"], [90, 20], [3.4, 3.2])
    assert slow_consistency(*args, human_range=(1, 5)) == (1, 1, 1, 1)
    assert _ours(*args, human_range=(1, 5)) == (1.0, 1, 1.0, 1)
    args = (["d", "d"], ["s1", "s2"], [90, 20], [3.4, 3.25])
    assert _ours(*args, human_range=(1, 5)) == (0.0, 1, 0.0, 1)


def test_equal_system_means_stay_equal_with_no_tie_threshold():
    """tie_threshold=0 (no ties): A scores 0 and 15, B 5 and 10 (of 100), both mean 7.5 = 0.075; humans score
    both 50 and 50: the means are equal on both sides (sign 0 = sign 0): consistent (hand; slow loop agrees).
    Normalising each score first gave 0.075 vs 0.07500000000000001 in floating point: "A < B", inconsistent."""
    args = (["d1", "d1", "d2", "d2"], ["A", "B", "A", "B"], [0, 5, 15, 10], [50, 50, 50, 50])
    assert slow_consistency(*args, t=0.0, th=0.0)[2:] == (1, 1)
    assert _ours(*args, tie_threshold=0.0)[2:] == (1.0, 1)


# Metric-S-like scores (5-point steps hit the 0.05 threshold often), human scores in half points
_score_m = st.integers(0, 20).map(lambda k: 5 * k)
_score_h = st.integers(0, 200).map(lambda k: k / 2)


@st.composite
def _consistency_data(draw):
    n_items = draw(st.integers(1, 5))
    n_sys = draw(st.integers(1, 5))
    cells = [(f"d{i}", f"s{s}") for i in range(n_items) for s in range(n_sys)]
    keep = draw(st.lists(st.booleans(), min_size=len(cells), max_size=len(cells)))
    cells = [c for c, k in zip(cells, keep) if k] or cells[:1]
    cells = draw(st.permutations(cells))
    metric = [draw(_score_m) for _ in cells]
    human = [draw(_score_h) for _ in cells]
    return [c[0] for c in cells], [c[1] for c in cells], metric, human


@settings(max_examples=200, deadline=None)
@given(_consistency_data(), st.sampled_from([(0.05, None), (0.1, 0.05), (0.0, 0.0), (0.05, 0.2)]))
def test_consistency_matches_the_slow_exact_loop(data, thresholds):
    t, th = thresholds
    _same(_ours(*data, tie_threshold=t, human_tie_threshold=th), slow_consistency(*data, t=t, th=th))


# ---------------------------------------------------------------- 2. systems scored on different items


def test_systems_on_different_items_are_said():
    """A scored on d1 and d2, B on d1 only (its d2 row was an error row, dropped). Segment level: d1 only,
    A 80 > B 60 and humans agree -> 1/1. System level (documented reading: each system's own mean): A's mean
    includes d2 (human 20): A (0.85, 0.50) vs B (0.60, 0.60) -> metric prefers A, humans B -> 0/1 (slow loop
    agrees). The figure compares means over different documents: that is now said, not left silent."""
    args = (["d1", "d1", "d2"], ["A", "B", "A"], [80, 60, 90], [80, 60, 20])
    assert slow_consistency(*args) == (1, 1, 0, 1)
    with pytest.warns(UserWarning, match=r"systems are scored on different items \(B on 1 of 2 items\)"):
        r = metric_human_consistency(*args)
    assert (r.segment_consistency, r.system_consistency) == (1.0, 0.0)
    assert len(r.warnings) == 1 and "different documents" in r.warnings[0]
    with warnings.catch_warnings():  # full coverage: no such note
        warnings.simplefilter("error")
        full = metric_human_consistency(["d1", "d1", "d2", "d2"], ["A", "B", "A", "B"], [80, 60, 90, 20],
                                        [80, 60, 20, 10])
    assert full.warnings == ()


# ---------------------------------------------------------------- 3. scores that are not numbers


@pytest.mark.parametrize("metric", [["80", "n/a"], [[80], [60]], [[80, 60]]], ids=["text", "nested", "2d"])
def test_a_score_that_is_not_a_number_is_d555(metric):
    with pytest.raises(DDPDataError, match=r"\[D555\] metric scores must be"):
        metric_human_consistency(["d1", "d1"], ["A", "B"], metric, [80, 60])
    with pytest.raises(DDPDataError, match=r"\[D555\] human scores must be"):
        metric_human_consistency(["d1", "d1"], ["A", "B"], [80, 60], metric)


# ============================================================================ Metric-S, paper mapping

# The paper (§3.4): "accuracy, fluency, and appropriateness scores, weighted at 60, 20, and 20 points;
# severity deductions are 2, 5, 10, or 50 points" for minor, major, critical, extremely critical errors;
# App. E: "Fluency errors are minor, while Appropriateness errors are major" (an item without a severity);
# §3.3: rubric (checkpoint) violations count as accuracy. Label spellings, the checkpoint weight (5), the clamp
# at 0 and the treatment of unknown labels are those of the `paper` column of docs/metric-s.md.
P_WEIGHT = {"minor": 2, "major": 5, "critical": 10, "extremely critical": 50}
P_ALIAS = {"轻微": "minor", "minor": "minor", "普通": "major", "major": "major", "严重": "critical",
           "critical": "critical", "非常严重": "extremely critical", "extremely critical": "extremely critical"}
P_NONE = {"整体无问题", "无问题", "none"}
P_FAIL = {"错误", "incorrect", "fail", "wrong"}
P_PASS = {"正确", "correct", "pass"}
DOC_LABELS = sorted(set(P_ALIAS) | P_NONE | P_FAIL | P_PASS | {"有问题", "Extremely Critical", "Major", "Minor"})


def slow_paper_score(record):
    """(accuracy, fluency, appropriateness, total, n_unknown) by the docs' paper table, one item at a time."""

    def label(item, keys):
        for k in keys:  # the first of the keys present with a value
            if k in item and item[k] is not None:
                v = item[k]
                return v.strip().casefold() if isinstance(v, str) else object()  # a non-string is no label
        return None

    acc, flu, app, unknown = 60, 20, 20, 0
    for item in record.get("accuracy_items") or []:
        lab = label(item, ("问题严重程度", "severity"))
        if lab in P_NONE:
            pass
        elif lab in P_ALIAS:
            acc -= P_WEIGHT[P_ALIAS[lab]]
        else:  # other / missing (a bare 有问题 included: accuracy has no single level in App. E): -5, unknown
            acc -= 5
            unknown += 1
    for item in record.get("checkpoint_items") or []:
        lab = label(item, ("判断结果", "result", "verdict"))
        if lab in P_FAIL:
            acc -= 5
        elif lab not in P_PASS:
            unknown += 1  # unknown verdict: 0, counted
    dims = {}
    for key, per_issue, start in (("fluency_items", 2, 20), ("appropriateness_items", 5, 20)):
        score = start
        for item in record.get(key) or []:
            lab = label(item, ("问题严重程度", "severity"))
            if lab == "有问题":
                score -= per_issue
            elif lab in P_ALIAS:
                score -= P_WEIGHT[P_ALIAS[lab]]
            elif lab not in P_NONE:
                unknown += 1
        dims[key] = max(score, 0)
    acc = max(acc, 0)
    flu, app = dims["fluency_items"], dims["appropriateness_items"]
    return float(acc), float(flu), float(app), float(acc + flu + app), unknown


def _paper(record):
    (row,) = metric_s([record], mapping="paper")
    assert row.status == "ok", row
    return row.accuracy, row.fluency, row.appropriateness, row.total, row.n_unknown_labels


def test_paper_bare_issue_label_in_accuracy_is_counted_unknown():
    """有问题 / issue carries no severity; in accuracy it takes the default 5 and must be counted (and so warned
    about by ddp metric-s), as docs/metric-s.md says for any other accuracy label. Hand: 60 - 5 - 5 = 50, 2
    unknown. Before the fix: 50 with 0 unknown, in silence."""
    record = {"accuracy_items": [{"问题严重程度": "有问题"}, {"severity": "Issue"}]}
    assert slow_paper_score(record) == (50.0, 20.0, 20.0, 90.0, 2)
    assert _paper(record) == (50.0, 20.0, 20.0, 90.0, 2)


def test_paper_cli_warns_about_a_bare_issue_in_accuracy(tmp_path, capsys):
    from ddpcore.cli.main import main

    src = tmp_path / "j.jsonl"
    src.write_text(json.dumps({"id": "a", "accuracy_items": [{"问题严重程度": "有问题"}], "checkpoint_items": [],
                               "fluency_items": [], "appropriateness_items": []}, ensure_ascii=False) + "\n",
                   encoding="utf-8")
    assert main(["metric-s", str(src), "--mapping", "paper"]) == 0
    out = capsys.readouterr()
    assert "1 item label(s) unknown to the paper mapping (first on line 1)" in out.err
    assert json.loads(out.out)["summary"]["n_unknown_labels"] == 1


@pytest.mark.parametrize("record,expected", [
    # §D.2.3's worked example shape: 60 - 10 - 5 = 45; fluency 20 - 7 x 2 = 6; appropriateness 20 -> 71
    ({"accuracy_items": [{"severity": "Critical"}, {"severity": "major"}], "checkpoint_items": [],
      "fluency_items": [{"问题严重程度": "有问题"}] * 7, "appropriateness_items": []}, (45.0, 6.0, 20.0, 71.0, 0)),
    # clamp at 0 per dimension, not on the total: 60 - 50 - 50 -> 0; 20 - 50 -> 0; 20 - 2 = 18 -> 18
    ({"accuracy_items": [{"问题严重程度": "非常严重"}] * 2, "fluency_items": [{"severity": " EXTREMELY critical "}],
      "appropriateness_items": [{"问题严重程度": "轻微"}]}, (0.0, 0.0, 18.0, 18.0, 0)),
    # zero issues, empty lists: 100; checkpoint verdicts: incorrect 5, pass 0, "maybe" unknown 0
    ({"accuracy_items": [], "checkpoint_items": [{"result": "Incorrect"}, {"verdict": "PASS"}, {"判断结果": "maybe"}],
      "fluency_items": [], "appropriateness_items": []}, (55.0, 20.0, 20.0, 95.0, 1)),
    # a non-string label is unknown; the first key present wins (问题严重程度 over severity)
    ({"accuracy_items": [{"问题严重程度": 5, "severity": "minor"}, {"问题严重程度": None, "severity": "minor"}],
      "fluency_items": [{"severity": ["minor"]}]}, (53.0, 20.0, 20.0, 93.0, 2)),
])
def test_paper_fixed_vectors(record, expected):
    assert slow_paper_score(record) == expected  # the slow loop agrees with the hand arithmetic
    assert _paper(record) == expected


_EXTRA_ALIASES = {"次要", "no issue", "no issues", "issue", "failed", "passed"}  # ddpcore aliases the docs do not list
_variant = st.sampled_from([str, str.upper, str.lower, str.title, lambda s: f"  {s}", lambda s: f"{s}\u3000 "])
_label = (st.tuples(st.sampled_from(DOC_LABELS), _variant).map(lambda p: p[1](p[0]))
          | st.text(max_size=4).filter(lambda s: s.strip().casefold() not in _EXTRA_ALIASES)
          | st.sampled_from([None, 0, 5, 2.5, True, ["major"]]))
_item = st.fixed_dictionaries({}, optional={k: _label for k in ("问题严重程度", "severity", "判断结果", "result",
                                                                "verdict", "问题类型")})


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({k: st.lists(_item, max_size=10) for k in
                              ("accuracy_items", "checkpoint_items", "fluency_items", "appropriateness_items")}))
def test_paper_mapping_matches_the_slow_loop(record):
    assert _paper(record) == slow_paper_score(record)


# ---------------------------------------------------------------- 5. a position-id equal to a given id


def test_a_record_without_id_whose_number_is_another_records_id_is_d556(tmp_path, capsys):
    """Line 2 has no id (named "2" by position), line 3 gives id "2": the output had two rows "2" (exit 0)."""
    from ddpcore.cli.main import main

    empty = {"accuracy_items": [], "checkpoint_items": [], "fluency_items": [], "appropriateness_items": []}
    src = tmp_path / "j.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in [{"id": "a", **empty}, empty, {"id": "2", **empty}]) + "\n",
                   encoding="utf-8")
    assert main(["metric-s", str(src)]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"ddp metric-s: error: [D556] {src}: line 2 has no id and is named by its position '2', "
                          "which line 3 gives as its id") and err.count("\n") == 1
    with pytest.raises(DDPDataError, match=r"\[D556\] record 3 has no id .* which record 1 gives as its id"):
        metric_s([{"id": 3, **empty}, empty, empty])  # the given id first, the numbered record later
    assert [r.id for r in metric_s([{"id": "a", **empty}, empty, {"id": "b", **empty}])] == ["a", "2", "b"]
