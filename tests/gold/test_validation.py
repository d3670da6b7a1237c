"""Metrics and the DDP-vs-gold join (no spaCy: DDP values are given)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ddpcore.errors import DDPDataError
from ddpcore.io.gold import read_gold
from ddpcore.gold.validate import compare_with_gold, compute_gold_distances, compute_gold_metrics, format_validation_text

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


@pytest.mark.parametrize(("first", "diagnosis"), [("weather", "linked_too_far"), ("bad", "not_in_gold")])
def test_compare_with_gold_over_estimates(first: str, diagnosis: str) -> None:
    corpus = read_gold(TINY)
    gold = compute_gold_distances(corpus, distance="chained")  # part 0: [0, 1, 0, 3, 4, 5], part 1: [0, 1]
    seg = _segments({DOC: [0, 1, 2, 3, 1, 5], DOC + "#1": [0, 1]})
    # s2 = "The weather was bad .": two anchors reach back 2 sentences; "weather" (chars 4-11) lies in the
    # gold mention "The weather" (chain 2, first mentioned in s2), "bad" (chars 16-19) in no gold mention
    spans = {"weather": (4, 11), "bad": (16, 19)}
    second = "bad" if first == "weather" else "weather"
    anchors = pl.DataFrame({
        "document_id": [DOC, DOC, DOC], "segment_id": [2, 2, 4], "anchor_index": [3, 4, 6],
        "kind": ["entity", "entity", "entity"], "label": ["PRODUCT", "ORG", "PERSON"],
        "text": [first, second, "Smith"], "char_start": [spans[first][0], spans[second][0], 13],
        "char_end": [spans[first][1], spans[second][1], 18], "antecedent_kind": ["entity", "entity", "entity"],
        "antecedent_text": [first, second, "John Smith"], "antecedent_sentence": [0, 0, 0],
        "distance_sentences": [2, 2, 4],
    })
    res = compare_with_gold(gold, seg, anchors, corpus=corpus)
    # 8 sentences: s2 over (2 > 0), s4 under (1 < 4), 6 exact
    assert res.overall.n_segments == 8
    assert (res.overall.share_over, res.overall.share_under) == (1 / 8, 1 / 8)
    assert res.over_estimates.height == 1
    over = res.over_estimates.row(0, named=True)
    # the first anchor (by anchor_index) whose distance equals the segment's DDP is responsible
    assert (over["sentence"], over["anchor_text"], over["error"], over["diagnosis"]) == (2, first, 2, diagnosis)
    assert over["anchor_gold_chain"] == ("2" if first == "weather" else None)
    assert over["text"] == "The weather was bad ."
    causes = res.over_estimate_causes.to_dicts()
    assert causes == [{"anchor_kind": "entity", "anchor_label": "PRODUCT" , "antecedent_kind": "entity",
                       "diagnosis": diagnosis, "n_segments": 1, "excess_sentences": 2}]
    assert list(res.by_genre) == ["nw"]
    text = format_validation_text(res)
    assert "nw" in text and f"'{first}' [PRODUCT] -> entity '{first}' (s0) [{diagnosis}]" in text
    d = res.to_dict()
    assert set(d) >= {"overall", "by_genre", "signature"} and d["n_over_estimates"] == 1


def test_token_index_on_raw_text() -> None:
    from ddpcore.gold.validate import _token_index

    # CoNLL-U keeps raw text ("didn't") while tokens split it: characters map to the token holding them
    tokens = ["She", "did", "n't", "go", "."]
    text = "She didn't go."
    assert [_token_index(text, tokens, c) for c in (0, 4, 7, 11, 13)] == [0, 1, 2, 3, 4]
    assert _token_index("abc", ["x"], 0) == -1


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
