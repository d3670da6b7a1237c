"""``ddp validate --set-aside same-string-names`` (issue 21: the protocol of a gold that does not chain
repeated names): which segments each DDP column leaves out, and the figures over the rest.

The oracle :func:`slow_aside` is a loop over segments and anchors written from the definition in
docs/validation.md ("Setting aside same-string names"), not from the code under test: a segment is set
aside for a column when its value is > 0 and every anchor of the segment whose distance equals the value
is an ``entity`` anchor whose text, lower-cased with a leading "the ", a trailing possessive ('s, ') and curly
apostrophes and repeated spaces normalised, equals its antecedent's. The figures over the kept segments are checked against
``compute_column_metrics`` on the rows the oracle keeps (itself checked against scipy/statsmodels in
test_validate_columns.py). No spaCy: DDP values and anchors are given.
"""
from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore.cli.main import main
from ddpcore.errors import DDPUsageError
from ddpcore.gold.validate import (
    compare_with_gold, compute_column_metrics, compute_gold_metrics, format_validation_text, set_aside_mask,
)

NAMES = ["Obama", "the Church", "Church", "Mary's", "Mary’s", "Mary  s", "mary's", "Mary", "Mary 's",
         "the Pirates'", "Pirates", "he", None]


def norm(text: str | None) -> str:
    t = (text or "").lower().replace("’", "'")
    t = " ".join(t.split())
    if t.endswith("'s"):  # a possessive is the same name: "Mary's" = "Mary 's" = "Mary"
        t = t[:-2].rstrip()
    elif t.endswith("'"):  # "the Pirates'" = "the Pirates"
        t = t[:-1].rstrip()
    return t[4:] if t.startswith("the ") else t


def slow_aside(values: list[int], anchors: list[dict], dist: str) -> list[bool]:
    """Per segment (index = segment id of document 'd'): set aside or not, one anchor at a time."""
    out = []
    for seg, v in enumerate(values):
        reaching = [a for a in anchors if a["segment_id"] == seg and a[dist] == v]
        if v <= 0 or not reaching:
            out.append(False)
            continue
        out.append(all(a["kind"] == "entity" and a["antecedent_text"] is not None
                       and norm(a["text"]) == norm(a["antecedent_text"]) for a in reaching))
    return out


def frames(values: list[int], certified: list[int], anchors: list[dict], gold: list[int]
           ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    n = len(values)
    g = pl.DataFrame({"document_id": ["d"] * n, "sentence": list(range(n)), "genre": ["news"] * n,
                      "gold_distance": gold, "gold_chain_id": [None] * n, "gold_reference_sentence": [-1] * n},
                     schema_overrides={"gold_chain_id": pl.String})
    seg = pl.DataFrame({"document_id": ["d"] * n, "segment_id": list(range(n)), "ddp": values,
                        "ddp_certified": certified})
    schema = {"document_id": pl.String, "segment_id": pl.Int64, "anchor_index": pl.Int64, "kind": pl.String,
              "label": pl.String, "text": pl.String, "antecedent_kind": pl.String, "antecedent_text": pl.String,
              "antecedent_sentence": pl.Int64, "distance_sentences": pl.Int64, "distance_certified": pl.Int64}
    rows = [{"document_id": "d", "anchor_index": i, "label": "PERSON", "antecedent_kind": "entity",
             "antecedent_sentence": 0, **a} for i, a in enumerate(anchors)]
    an = pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)
    return g, seg, an


@st.composite
def cases(draw):  # type: ignore[no-untyped-def]
    n = draw(st.integers(1, 8))
    anchors = []
    for seg in range(n):
        for _ in range(draw(st.integers(0, 3))):
            d = draw(st.integers(-1, 4))
            anchors.append({"segment_id": seg, "kind": draw(st.sampled_from(["entity", "pronoun"])),
                            "text": draw(st.sampled_from(NAMES[:-1])), "antecedent_text": draw(st.sampled_from(NAMES)),
                            "distance_sentences": d, "distance_certified": draw(st.integers(0, max(d, 0)))})
    # the segment values are what a run gives: the largest anchor distance (0 without one)
    values = [max([max(a["distance_sentences"], 0) for a in anchors if a["segment_id"] == s], default=0)
              for s in range(n)]
    certified = [max([a["distance_certified"] for a in anchors if a["segment_id"] == s], default=0) for s in range(n)]
    gold = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    return values, certified, anchors, gold


@settings(max_examples=200, deadline=None)
@given(cases())
def test_mask_and_figures_match_the_loop(case) -> None:  # type: ignore[no-untyped-def]
    values, certified, anchors, gold = case
    g, seg, an = frames(values, certified, anchors, gold)
    res = compare_with_gold(g, seg, an, set_aside="same-string-names", tails=(1, 3))
    for col, dist, vals in (("ddp", "distance_sentences", values), ("ddp_certified", "distance_certified", certified)):
        want = slow_aside(vals, anchors, dist)
        assert res.segments[f"{col}_set_aside"].to_list() == want
        assert res.set_aside["segments"][col] == sum(want)
        keep = ~np.array(want)
        ref = compute_column_metrics(np.array(vals)[keep], np.array(gold)[keep], column=col, tails=(1, 3))
        assert res.columns[col].overall.to_dict() == ref.to_dict()
    keep = ~np.array(slow_aside(values, anchors, "distance_sentences"))
    assert res.overall == compute_gold_metrics(np.array(values)[keep], np.array(gold)[keep])
    # the over-estimates are those of the kept ddp segments
    want_over = [s for s in range(len(values)) if keep[s] and values[s] > gold[s]]
    assert res.over_estimates["sentence"].to_list() == want_over
    assert res.set_aside["rule"] == "same-string-names" and res.set_aside["of"] == len(values)


def test_a_fixed_case_by_hand() -> None:
    # segment 0: nothing; 1: "Obama" -> "Obama" at 3 (only a same-string name reaches 3: aside);
    # 2: "The Church" -> "church" at 2 and "he" at 2 (a pronoun reaches it too: kept);
    # 3: "Mary’s" -> "mary's" at 4 (aside), "Obama" -> "Barack Obama" at 1 (below the value: irrelevant);
    # 4: "Obama" -> "Barack Obama" at 2 (not the same string: kept)
    anchors = [
        {"segment_id": 1, "kind": "entity", "text": "Obama", "antecedent_text": "Obama", "distance_sentences": 3,
         "distance_certified": 0},
        {"segment_id": 2, "kind": "entity", "text": "The Church", "antecedent_text": "church",
         "distance_sentences": 2, "distance_certified": 2},
        {"segment_id": 2, "kind": "pronoun", "text": "he", "antecedent_text": "he", "distance_sentences": 2,
         "distance_certified": 1},
        {"segment_id": 3, "kind": "entity", "text": "Mary’s", "antecedent_text": "mary's", "distance_sentences": 4,
         "distance_certified": 4},
        {"segment_id": 3, "kind": "entity", "text": "Obama", "antecedent_text": "Barack Obama",
         "distance_sentences": 1, "distance_certified": 1},
        {"segment_id": 4, "kind": "entity", "text": "Obama", "antecedent_text": "Barack Obama",
         "distance_sentences": 2, "distance_certified": 2},
    ]
    values, certified, gold = [0, 3, 2, 4, 2], [0, 0, 2, 4, 2], [0, 0, 0, 0, 2]
    g, seg, an = frames(values, certified, anchors, gold)
    res = compare_with_gold(g, seg, an, set_aside="same-string-names")
    assert res.segments["ddp_set_aside"].to_list() == [False, True, False, True, False]
    # ddp_certified of segment 2 is reached by the name alone (the pronoun certifies 1): aside; segment 1 has 0
    assert res.segments["ddp_certified_set_aside"].to_list() == [False, False, True, True, False]
    assert res.set_aside == {"rule": "same-string-names", "segments": {"ddp": 2, "ddp_certified": 2}, "of": 5}
    # ddp over the kept segments 0, 2, 4: over-estimates 1 of 3 (segment 2: 2 > 0)
    assert (res.columns["ddp"].overall.over.count, res.columns["ddp"].overall.over.n) == (1, 3)
    assert res.over_estimates["sentence"].to_list() == [2]
    # without the rule every segment counts: over 3 of 5
    plain = compare_with_gold(g, seg, an)
    assert (plain.columns["ddp"].overall.over.count, plain.columns["ddp"].overall.over.n) == (3, 5)
    assert plain.set_aside == {} and "ddp_set_aside" not in plain.segments.columns
    text = format_validation_text(res)
    assert "set aside (same-string-names): 2 for ddp, 2 for ddp_certified of 5 segments" in text
    assert "5 gold sentences, ? documents" in text
    assert res.to_dict()["set_aside"]["segments"] == {"ddp": 2, "ddp_certified": 2}


def test_mask_alone_and_bad_rules() -> None:
    anchors = [{"segment_id": 0, "kind": "entity", "text": "IBM", "antecedent_text": "IBM",
                "distance_sentences": 1, "distance_certified": 1}]
    g, seg, an = frames([1], [1], anchors, [0])
    joined = seg.rename({"segment_id": "sentence"})
    assert set_aside_mask(joined, an, "ddp").tolist() == [True]
    assert set_aside_mask(joined, an, "ddp", "none").tolist() == [False]
    with pytest.raises(DDPUsageError, match=re.escape("[D446] unknown set-aside rule 'names'")):
        compare_with_gold(g, seg, an, set_aside="names")
    with pytest.raises(DDPUsageError, match=r"\[D446\] set_aside='same-string-names' needs the run's anchors"):
        compare_with_gold(g, seg, None, set_aside="same-string-names")


def test_cli_rejects_an_unknown_rule(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["validate", "x.conllu", "--set-aside", "names"])
    assert exc.value.code == 2
    assert "--set-aside" in capsys.readouterr().err


@pytest.mark.spacy_model
def test_cli_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    gum = Path(__file__).resolve().parents[1] / "data" / "gold" / "gum_excerpt.tar.xz"
    assert main(["validate", str(gum), "--gold-scope", "ddp", "--set-aside", "same-string-names"]) == 0
    cap = capsys.readouterr()
    d = json.loads(cap.out)
    assert d["signature"]["gold"]["set_aside"] == "same-string-names"
    n = d["set_aside"]["segments"]
    assert set(n) == set(d["columns"]) and d["set_aside"]["of"] == 38
    assert "ddp validate: set aside (same-string-names): " in cap.err
    for col, rep in d["columns"].items():
        assert rep["overall"]["n_segments"] == 38 - n[col]


def test_plot_draws_the_counted_segments(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The scatter plot shows the segments the ddp figures count: its legend's n agrees with the figures."""
    pytest.importorskip("matplotlib")
    import matplotlib.axes

    from ddpcore.gold.validate import plot_validation

    anchors = [{"segment_id": 1, "kind": "entity", "text": "IBM", "antecedent_text": "IBM", "distance_sentences": 2,
                "distance_certified": 2},
               {"segment_id": 2, "kind": "pronoun", "text": "it", "antecedent_text": "IBM", "distance_sentences": 1,
                "distance_certified": 0}]
    g, seg, an = frames([0, 2, 1], [0, 2, 0], anchors, [0, 0, 1])
    res = compare_with_gold(g, seg, an, set_aside="same-string-names")
    drawn: list[tuple[int, str]] = []
    real = matplotlib.axes.Axes.scatter

    def scatter(self, x, y, *args, **kwargs):  # type: ignore[no-untyped-def]
        drawn.append((len(x), kwargs.get("label", "")))
        return real(self, x, y, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "scatter", scatter)
    plot_validation(res, tmp_path / "p.png")
    assert drawn == [(2, "news (n=2, r=1.00)")] and (tmp_path / "p.png").stat().st_size > 1000


def test_plot_genres_beyond_the_colour_cycle_get_markers(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """GUM has 24 genres and matplotlib's colour cycle 10 colours: genres 1 and 11 were drawn alike. Now each
    pass through the cycle takes the next marker, so 24 genres are 24 distinct (colour, marker) pairs."""
    pytest.importorskip("matplotlib")
    import dataclasses

    import matplotlib.axes
    import polars as pl

    from ddpcore.gold.validate import plot_validation

    anchors = [{"segment_id": 1, "kind": "entity", "text": "IBM", "antecedent_text": "IBM", "distance_sentences": 2,
                "distance_certified": 2}]
    g, seg, an = frames([0, 2], [0, 2], anchors, [0, 0])
    res = compare_with_gold(g, seg, an)
    many = pl.concat([res.segments.with_columns(pl.lit(f"g{k:02d}").alias("genre")) for k in range(24)])
    res = dataclasses.replace(res, segments=many)
    drawn: list[tuple[str, str]] = []
    real = matplotlib.axes.Axes.scatter

    def scatter(self, x, y, *args, **kwargs):  # type: ignore[no-untyped-def]
        drawn.append((str(kwargs.get("color")), str(kwargs.get("marker"))))
        return real(self, x, y, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "scatter", scatter)
    plot_validation(res, tmp_path / "p.png")
    assert len(drawn) == 24 and len(set(drawn)) == 24
