"""The Cython DDP kernels against the slow oracles in tests/oracles/ddp_kernels.py (hypothesis)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore._native import load
from oracles.ddp_kernels import ENTITY, NOUN, PRONOUN, distances_oracle, entity_ids_oracle, key_hash

K = load("ddp_kernels")
GROUP_BITS = (1, 2, 4, 8)


@st.composite
def documents(draw, max_docs=4, max_items=40):
    """Random item streams: sentences non-decreasing, segments grouping sentences."""
    docs = []
    for _ in range(draw(st.integers(1, max_docs))):
        n = draw(st.integers(0, max_items))
        items, sentence, segment = [], 0, 0
        for _ in range(n):
            if draw(st.integers(0, 3)) == 0:
                sentence += draw(st.integers(1, 5))
                if draw(st.booleans()):
                    segment += 1
            kind = draw(st.sampled_from((ENTITY, PRONOUN, NOUN)))
            if kind == PRONOUN:
                compat = draw(st.sampled_from(GROUP_BITS))
                entity = -1
            else:
                compat = draw(st.integers(1, 15))
                if kind == ENTITY:
                    entity = draw(st.integers(0, 5))
                else:  # head nouns: sometimes part of a noun chain (ids apart from entities)
                    entity = draw(st.sampled_from((-1, -1, 6, 7)))
            items.append(dict(kind=kind, sentence=sentence, segment=segment, entity=entity, compat=compat))
        docs.append(items)
    return docs


def _flatten(docs):
    kind, sent, ent, compat, seg, gsent, offsets = [], [], [], [], [], [], [0]
    ent_base = seg_base = sent_base = 0
    for items in docs:
        n_ent = max([it["entity"] for it in items] + [-1]) + 1
        n_seg = max([it["segment"] for it in items] + [-1]) + 1
        n_sent = max([it["sentence"] for it in items] + [-1]) + 1
        for it in items:
            kind.append(it["kind"])
            sent.append(it["sentence"])
            ent.append(it["entity"] + ent_base if it["entity"] >= 0 else -1)
            compat.append(it["compat"])
            seg.append(it["segment"] + seg_base)
            gsent.append(it["sentence"] + sent_base)
            it["gsentence"] = it["sentence"] + sent_base
            it["gsegment"] = it["segment"] + seg_base
        ent_base += n_ent
        seg_base += n_seg
        sent_base += n_sent
        offsets.append(len(kind))
    return dict(
        offsets=np.array(offsets, np.int64), kind=np.array(kind, np.int8), sent=np.array(sent, np.int32),
        ent=np.array(ent, np.int32), compat=np.array(compat, np.uint8), seg=np.array(seg, np.int32),
        gsent=np.array(gsent, np.int32), n_ent=ent_base, n_seg=seg_base, n_sent=sent_base,
    )


def _run(flat, nearest, n_threads=1):
    return K.compute_distances(
        flat["offsets"], flat["kind"], flat["sent"], flat["ent"], flat["compat"], flat["seg"], flat["gsent"],
        flat["n_ent"], flat["n_seg"], flat["n_sent"], nearest, n_threads,
    )


@pytest.mark.parametrize("nearest", [False, True], ids=["chained", "nearest"])
@settings(max_examples=300, deadline=None)
@given(docs=documents())
def test_distances_match_oracle(docs, nearest):
    flat = _flatten(docs)
    dist, ante, ref, ddp_seg, ddp_sent = _run(flat, nearest)
    expected = distances_oracle(docs, nearest=nearest)
    pos = 0
    for items, (res, seg_ddp, sent_ddp) in zip(docs, expected):
        start = pos
        for it, (d, a, r) in zip(items, res):
            assert dist[pos] == d
            assert ante[pos] == (a + start if a >= 0 else -1)
            assert ref[pos] == (r + start if r >= 0 else -1)
            pos += 1
        for it in items:
            assert ddp_seg[it["gsegment"]] == seg_ddp.get(it["segment"], 0)
            assert ddp_sent[it["gsentence"]] == sent_ddp.get(it["gsentence"], 0)


@settings(max_examples=100, deadline=None)
@given(docs=documents(max_docs=8))
def test_thread_count_does_not_change_results(docs):
    flat = _flatten(docs)
    for a, b in zip(_run(flat, False, 1), _run(flat, False, 2)):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=200, deadline=None)
@given(docs=documents())
def test_ddp_properties(docs):
    """A segment's DDP is the max of its sentences' DDP; a sentence's DDP is the max of its anchors'
    positive distances (0 without one), both recomputed here from the kernel's own distances."""
    flat = _flatten(docs)
    dist, _, _, ddp_seg, ddp_sent = _run(flat, False)
    for s in set(flat["gsent"].tolist()):
        ds = [int(d) for d, g, k in zip(dist, flat["gsent"], flat["kind"]) if g == s and k != NOUN and d > 0]
        assert ddp_sent[s] == max(ds, default=0)
    seg_of_sent = {}
    for items in docs:
        for it in items:
            seg_of_sent[it["gsentence"]] = it["gsegment"]
    for s, g in seg_of_sent.items():
        assert ddp_sent[s] <= ddp_seg[g]
    for g in set(seg_of_sent.values()):
        assert ddp_seg[g] == max(ddp_sent[s] for s, gg in seg_of_sent.items() if gg == g)


@st.composite
def entity_streams(draw):
    docs = []
    for _ in range(draw(st.integers(1, 4))):
        items = []
        for _ in range(draw(st.integers(0, 30))):
            kind = draw(st.sampled_from((ENTITY, ENTITY, PRONOUN)))
            label = draw(st.integers(0, 2))
            tokens = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
            items.append(dict(kind=kind, label=label, tokens=tokens))
        docs.append(items)
    return docs


@settings(max_examples=300, deadline=None)
@given(docs=entity_streams(), merge=st.booleans())
def test_entity_ids_match_oracle(docs, merge):
    person = 0
    kind, label, key, last, nkey, offsets = [], [], [], [], [], [0]
    for items in docs:
        for it in items:
            toks = np.array(it["tokens"], dtype=np.uint64)
            kind.append(it["kind"])
            label.append(it["label"])
            # keys hashed by the oracle's own splitmix64 (tests/oracles/ddp_kernels.py), not by the kernel's entity_key
            key.append(key_hash(int(t) for t in toks))
            last.append(key_hash([int(toks[-1])]))
            nkey.append(len(toks))
        offsets.append(len(kind))
    eid, n_ent = K.assign_entity_ids(
        np.array(offsets, np.int64), np.array(kind, np.int8), np.array(label, np.int16),
        np.array(key, np.uint64), np.array(last, np.uint64), np.array(nkey, np.int16), person, merge,
    )
    expected = entity_ids_oracle(docs, person, merge=merge)
    for d, ids in enumerate(expected):
        got = eid[offsets[d]:offsets[d + 1]]
        ents = got[got >= 0]
        base = ents.min() if len(ents) else 0
        np.testing.assert_array_equal(np.where(got >= 0, got - base, -1), np.array(ids, dtype=np.int64))
    assert n_ent == sum(len({i for i in ids if i >= 0}) for ids in expected)


@settings(max_examples=150, deadline=None)
@given(docs=documents(max_docs=3), data=st.data())
def test_resegmenting_changes_aggregation_never_distances(docs, data):
    """Moving segment boundaries (between sentences) leaves every anchor distance and every
    sentence DDP unchanged; segment DDP follows as the max over the new segments."""
    flat = _flatten(docs)
    dist_a, ante_a, ref_a, _, sent_a = _run(flat, False)
    # new segmentation: a random non-decreasing segment id per distinct sentence
    gs = flat["gsent"]
    uniq = np.unique(gs)
    cuts = np.array(data.draw(st.lists(st.booleans(), min_size=len(uniq), max_size=len(uniq))), dtype=np.int64)
    new_seg_of_sent = np.cumsum(cuts)
    flat2 = dict(flat)
    flat2["seg"] = new_seg_of_sent[np.searchsorted(uniq, gs)].astype(np.int32)
    flat2["n_seg"] = int(new_seg_of_sent.max()) + 1 if len(uniq) else 0
    dist_b, ante_b, ref_b, seg_b, sent_b = _run(flat2, False)
    np.testing.assert_array_equal(dist_a, dist_b)
    np.testing.assert_array_equal(sent_a, sent_b)
    for g in range(flat2["n_seg"]):
        members = uniq[new_seg_of_sent == g]
        assert seg_b[g] == (sent_b[members].max() if len(members) else 0)


@settings(max_examples=200, deadline=None)
@given(tokens=st.lists(st.integers(0, 2**64 - 1), max_size=6))
def test_entity_key_is_splitmix_chain(tokens):
    """``entity_key`` against the oracle's splitmix64 chain (published constants, tests/oracles/ddp_kernels.py)."""
    assert K.entity_key(np.array(tokens, dtype=np.uint64)) == key_hash(tokens)
