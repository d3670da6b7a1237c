"""Metrics and the DDP-vs-gold join (no spaCy: DDP values are given)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ddpcore.errors import DDPDataError
from ddpcore.io.gold import read_gold
from ddpcore.validation import compare_with_gold, compute_gold_distances, compute_gold_metrics, format_validation_text

TINY = Path(__file__).resolve().parents[1] / "data" / "gold" / "conll2012" / "tiny.v4_gold_conll"
DOC = "nw/test/00/test_0000"


def test_metrics_hand_worked() -> None:
    m = compute_gold_metrics([0, 1, 2, 5], [0, 2, 2, 3])
    # errors DDP - gold = [0, -1, 0, 2]
    assert (m.n_segments, m.share_under, m.share_exact, m.share_over) == (4, 0.25, 0.5, 0.25)
    assert m.mean_signed_error == pytest.approx(0.25)
    # hand-worked: sum dx*dy = 7, sum dx^2 = 14, sum dy^2 = 4.75 -> r = 7 / sqrt(66.5)
    assert m.pearson == pytest.approx(7 / np.sqrt(66.5))  # 0.858395
    # ranks x = [1, 2, 3, 4], y = [1, 2.5, 2.5, 4] -> rho = 4.5 / sqrt(5 * 4.5)
    assert m.spearman == pytest.approx(4.5 / np.sqrt(22.5))  # 0.948683


def test_metrics_undefined_correlations() -> None:
    m = compute_gold_metrics([0, 0, 0], [1, 2, 3])
    assert m.pearson is None and m.spearman is None and m.share_under == pytest.approx(1.0)
    assert compute_gold_metrics([], []).n_segments == 0
    d = m.to_dict()
    assert set(d) == {"n_segments", "pearson", "spearman", "share_under", "share_exact", "share_over", "mean_signed_error"}


def _segments(ddp: dict[str, list[int]]) -> pl.DataFrame:
    rows = [(doc, i, v) for doc, vals in ddp.items() for i, v in enumerate(vals)]
    return pl.DataFrame(rows, schema=["document_id", "segment_id", "ddp"], orient="row")


def test_compare_with_gold_over_estimates() -> None:
    corpus = read_gold(TINY)
    gold = compute_gold_distances(corpus, distance="chained")  # part 0: [0, 1, 0, 3, 4, 5], part 1: [0, 1]
    seg = _segments({DOC: [0, 1, 2, 3, 1, 5], DOC + "#1": [0, 1]})
    anchors = pl.DataFrame({
        "document_id": [DOC, DOC, DOC], "segment_id": [2, 2, 4], "anchor_index": [3, 4, 6],
        "kind": ["pronoun", "entity", "entity"], "label": ["NEUT_SG", "PERSON", "PERSON"],
        "text": ["It", "weather", "Smith"], "antecedent_kind": ["noun", "entity", "entity"],
        "antecedent_text": ["John", "weather", "John Smith"], "antecedent_sentence": [0, 0, 0],
        "distance_sentences": [2, 2, 4],
    })
    res = compare_with_gold(gold, seg, anchors, sentence_text=corpus.sentences.select("document_id", "sentence", "text"))
    # 8 sentences: s2 over (2 > 0), s4 under (1 < 4), 6 exact
    assert res.overall.n_segments == 8
    assert (res.overall.share_over, res.overall.share_under) == (1 / 8, 1 / 8)
    assert res.over_estimates.height == 1
    over = res.over_estimates.row(0, named=True)
    # the first anchor (by anchor_index) whose distance equals the segment's DDP is responsible
    assert (over["sentence"], over["anchor_text"], over["anchor_kind"], over["error"]) == (2, "It", "pronoun", 2)
    assert over["text"] == "The weather was bad ."
    causes = res.over_estimate_causes.to_dicts()
    assert causes == [{"anchor_kind": "pronoun", "anchor_label": "NEUT_SG", "antecedent_kind": "noun",
                       "n_segments": 1, "excess_sentences": 2}]
    assert list(res.by_genre) == ["nw"]
    text = format_validation_text(res)
    assert "nw" in text and "'It' [NEUT_SG] -> noun 'John'" in text
    d = res.to_dict()
    assert set(d) >= {"overall", "by_genre", "signature"} and d["n_over_estimates"] == 1


def test_compare_with_gold_missing_sentence() -> None:
    gold = compute_gold_distances(read_gold(TINY))
    seg = _segments({DOC: [0, 1, 2, 3, 1, 5]})  # part 1 missing
    with pytest.raises(DDPDataError, match=r"\[D423\] no DDP for gold sentence 0 of document 'nw/test/00/test_0000#1'"):
        compare_with_gold(gold, seg)


def test_by_genre_split() -> None:
    gold = pl.DataFrame({
        "document_id": ["a", "a", "b", "b"], "sentence": [0, 1, 0, 1], "genre": ["news", "news", "fiction", "fiction"],
        "gold_distance": [0, 2, 0, 5], "gold_chain_id": [None, "x", None, "y"], "gold_reference_sentence": [-1, 0, -1, 0],
    })
    seg = _segments({"a": [0, 2], "b": [0, 1]})
    res = compare_with_gold(gold, seg)
    assert list(res.by_genre) == ["fiction", "news"]
    assert res.by_genre["news"].share_exact == 1.0
    assert res.by_genre["fiction"].share_under == 0.5
    assert res.by_genre["fiction"].mean_signed_error == -2.0
