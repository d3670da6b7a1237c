"""Gold distance per sentence: hand-worked document, and the vectorised code vs a naive oracle."""
from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore.io.gold import GoldCorpus, read_gold
from ddpcore.gold.validate import compute_gold_distances

from oracles.gold import naive_gold_distances

DOC = "nw/test/00/test_0000"

# Hand-worked from tests/data/gold/conll2012/tiny.v4_gold_conll, part 000:
#   s0 [John Smith]0 met [Mary]1 .          s3 [Mary]1 left .
#   s1 [He]0 liked [her]1 .                 s4 [It]2 rained on [Smith]0 .
#   s2 [The weather]2 was bad .             s5 [[The man 's]0 wife]1 smiled .
# chained, full:      s1 max(1-0, 1-0)=1; s3 3-0=3; s4 max(It 4-2, Smith 4-0)=4; s5 max(5-0, 5-0)=5
# nearest, full:      s3 3-1=2 (Mary in s1 as "her"); s4 max(4-2, 4-1)=3; s5 max(chain0 5-4, chain1 5-3)=2
# restricted (NOM "The weather", "The man 's", "The man 's wife" removed):
#   chained: s4 It is now chain 2's first mention -> Smith 4-0=4; s5 has no mention left -> 0
#   nearest: s4 Smith 4-1=3; s5 0
HAND = {
    ("chained", False): [0, 1, 0, 3, 4, 5],
    ("nearest", False): [0, 1, 0, 2, 3, 2],
    ("chained", True): [0, 1, 0, 3, 4, 0],
    ("nearest", True): [0, 1, 0, 2, 3, 0],
}


@pytest.fixture(scope="module")
def tiny() -> GoldCorpus:
    return read_gold(Path(__file__).resolve().parents[1] / "data" / "gold" / "conll2012" / "tiny.v4_gold_conll")


@pytest.mark.parametrize(("distance", "restricted"), list(HAND))
def test_hand_worked_document(tiny: GoldCorpus, distance: str, restricted: bool) -> None:
    scope = "restricted" if restricted else "full"
    g = compute_gold_distances(tiny, distance=distance, gold_scope=scope)  # type: ignore[arg-type]
    part0 = g.filter(pl.col("document_id") == DOC)
    assert part0["gold_distance"].to_list() == HAND[(distance, restricted)]
    # part 001 is its own document: s1 "Spain ... him" both reach back one sentence
    part1 = g.filter(pl.col("document_id") == DOC + "#1")
    assert part1["gold_distance"].to_list() == [0, 1]


def test_responsible_chain_and_reference(tiny: GoldCorpus) -> None:
    g = compute_gold_distances(tiny, distance="nearest").filter(pl.col("document_id") == DOC)
    # s4: Smith (chain 0) measured to s1 ("He") beats It (chain 2, to s2); s5 tie-free: chain 1 to s3
    assert g["gold_chain_id"].to_list() == [None, "0", None, "1", "0", "1"]
    assert g["gold_reference_sentence"].to_list() == [-1, 0, -1, 1, 1, 3]
    assert g["genre"].unique().to_list() == ["nw"]


def test_bad_distance_mode(tiny: GoldCorpus) -> None:
    from ddpcore.errors import DDPUsageError

    with pytest.raises(DDPUsageError, match="chained"):
        compute_gold_distances(tiny, distance="furthest")  # type: ignore[arg-type]


mention_st = st.tuples(
    st.sampled_from(["d1", "d2"]), st.integers(0, 7), st.sampled_from(["a", "b", "c", "d"]),
    st.sampled_from(["PROP", "NOM", "PRON"]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(mention_st, max_size=30), st.sampled_from(["chained", "nearest"]), st.booleans())
def test_matches_naive_oracle(mentions: list, distance: str, restricted: bool) -> None:
    sentences = [(d, s) for d in ("d1", "d2") for s in range(8)]
    corpus = GoldCorpus(
        sentences=pl.DataFrame({
            "document_id": [d for d, _ in sentences], "sentence": [s for _, s in sentences], "genre": ["g"] * len(sentences),
        }, schema={"document_id": pl.String, "sentence": pl.Int32, "genre": pl.String}),
        mentions=pl.DataFrame({
            "document_id": [m[0] for m in mentions], "sentence": [m[1] for m in mentions],
            "chain_id": [m[2] for m in mentions], "mention_type": [m[3] for m in mentions],
        }, schema={"document_id": pl.String, "sentence": pl.Int32, "chain_id": pl.String, "mention_type": pl.String}),
    )
    got = compute_gold_distances(corpus, distance=distance,  # type: ignore[arg-type]
                                 gold_scope="restricted" if restricted else "full")
    want = naive_gold_distances(mentions, sentences, distance=distance, restricted=restricted)
    assert dict(zip(zip(got["document_id"], got["sentence"]), got["gold_distance"])) == want
    if distance == "chained":
        # restricting the gold can only shorten chained distances (fewer anaphors, later first mentions)
        full = compute_gold_distances(corpus, distance="chained")["gold_distance"]
        part = compute_gold_distances(corpus, distance="chained", gold_scope="restricted")["gold_distance"]
        assert (part <= full).all()
