"""ddpcore.pipeline.roles: the parse columns of the anchors table (role, antecedent_role, n_candidates).

Every vectorised function is checked against a slow, obviously-correct loop written here, on fixed
vectors and hypothesis-generated ones; the end-to-end check parses a real sentence with the pinned
spaCy pipeline and reads the roles spaCy's own Token.dep_ gives.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore.pipeline import roles

# ----------------------------------------------------------------------------- slow references


def slow_head_tokens(start, end, head):
    out = []
    for s, e in zip(start, end):
        found = None
        for t in range(s, e):
            if not (s <= head[t] < e):
                found = t
                break
        out.append(e - 1 if found is None else found)
    return np.array(out, dtype=np.int64)


def slow_candidates(kind, compat, sent, doc, reach):
    out = []
    for i in range(len(kind)):
        if kind[i] != 1:
            out.append(-1)
            continue
        bit = int(compat[i])
        if bit not in (1, 2, 4, 8):
            out.append(0)
            continue
        n = 0
        for j in range(i):
            if doc[j] == doc[i] and kind[j] != 1 and (int(compat[j]) & bit) and sent[j] >= sent[i] - reach:
                n += 1
        out.append(n)
    return np.array(out, dtype=np.int64)


# ----------------------------------------------------------------------------- head tokens


def test_head_tokens_fixed():
    # tokens 0..5: "Bank of America said it"; heads: Bank->said(3), of->Bank(0), America->of(1), said->said, it->said
    head = np.array([3, 0, 1, 3, 3, 3], dtype=np.int64)
    start = np.array([0, 4, 1], dtype=np.int64)
    end = np.array([3, 5, 3], dtype=np.int64)
    # "Bank of America" -> Bank (0); "it" -> it (4); "of America" -> of (1): the expected values by reading the heads
    assert roles.head_tokens(start, end, head).tolist() == [0, 4, 1]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, n - 1), min_size=n, max_size=n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(1, 4)), min_size=0, max_size=10))))
def test_head_tokens_matches_loop(case):
    heads, spans = case
    n = len(heads)
    head = np.array(heads, dtype=np.int64)
    start = np.array([s for s, _ in spans], dtype=np.int64)
    end = np.array([min(s + k, n) for s, k in spans], dtype=np.int64)
    assert roles.head_tokens(start, end, head).tolist() == slow_head_tokens(start, end, head).tolist()


# ----------------------------------------------------------------------------- candidates


def _case(kind, compat, sent, doc):
    n_tok = len(kind)
    items = {"kind": np.array(kind, np.int8), "compat": np.array(compat, np.uint8),
             "token": np.arange(n_tok, dtype=np.int64)}
    index = SimpleNamespace(sent__tok=np.array(sent, np.int64), seg__tok=np.arange(n_tok, dtype=np.int64))
    seg_doc = np.array(doc, np.int64)  # one segment per item: the segment ordinal is the item's
    return items, index, seg_doc


def test_candidates_fixed():
    # doc 0: a name fit for he/she (compat 3) in s0, a noun fit for it (4) in s1, "he" (1) in s3, "it" (4) in s3;
    # doc 1: "it" (4) in s0 with nothing before. Reach 2: "he" sees s1..s3 (no name: 0), "it" sees the noun (1).
    items, index, seg_doc = _case(kind=[0, 2, 1, 1, 1], compat=[3, 4, 1, 4, 4], sent=[0, 1, 3, 3, 0],
                                  doc=[0, 0, 0, 0, 1])
    assert roles.compatible_candidates(items, index, seg_doc, reach=2).tolist() == [-1, -1, 0, 1, 0]
    assert roles.compatible_candidates(items, index, seg_doc, reach=3).tolist() == [-1, -1, 1, 1, 0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 15), st.integers(0, 3), st.booleans()),
                min_size=0, max_size=40), st.integers(0, 4))
def test_candidates_match_loop(rows, reach):
    # rows in document / sentence order: (kind, compat, sentence step, new document?)
    kind, compat, sent, doc = [], [], [], []
    d, s = 0, 0
    for k, c, step, new_doc in rows:
        if new_doc and kind:
            d, s = d + 1, 0
        s += step
        kind.append(k)
        compat.append(1 << (c % 4) if k == 1 and c < 12 else c)  # pronouns mostly carry one group bit
        sent.append(s)
        doc.append(d)
    items, index, seg_doc = _case(kind, compat, sent, doc)
    got = roles.compatible_candidates(items, index, seg_doc, reach=reach)
    assert got.tolist() == slow_candidates(kind, compat, sent, doc, reach).tolist()


# ----------------------------------------------------------------------------- roles end to end


@pytest.fixture(scope="module")
def profiled():
    import polars as pl

    from ddpcore.api import profile_anchors

    text = ("Barack Obama met the Santorum campaign staff. He thanked them. "
            "It is hard to say what the staff thought of his speech.")
    table = pl.DataFrame({"document_id": ["d"], "segment_id": [0], "source": [text]})
    return text, profile_anchors(table).anchors


def test_roles_follow_spacy_dependencies(profiled):
    import spacy

    from ddpcore.anchors.spacy_extract import DEFAULT_PIPELINE

    text, anchors = profiled
    doc = spacy.load(DEFAULT_PIPELINE)(text)
    by_start = {t.idx: t for t in doc}
    for row in anchors.iter_rows(named=True):
        span = doc.char_span(row["char_start"], row["char_end"])
        assert span is not None, row
        dep = span.root.dep_  # spaCy's own head of the span
        want = next((r for r, deps in roles.ROLE_DEPS.items() if dep in deps), "other")
        assert row["role"] == want, (row["text"], dep)
        assert by_start[row["char_start"]].text == row["text"].split()[0]
    # pronouns count candidates, names do not
    kinds = dict(zip(anchors["text"], anchors["kind"]))
    for row in anchors.iter_rows(named=True):
        assert (row["n_candidates"] is None) == (kinds[row["text"]] == "entity")
    # the antecedent's role is that of the anchor row with the antecedent's text in its sentence (or "none")
    for row in anchors.iter_rows(named=True):
        if row["antecedent_text"] is None:
            assert row["antecedent_role"] == "none"
