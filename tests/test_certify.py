"""Certified DDP (issue 21): features and candidate distances against slow per-anchor oracles, the
confidence rule, the weights-file checks (D250-D258) and the certified columns of a real profile.

The oracles (:func:`naive_features`, :func:`naive_candidates`) walk the anchors one by one in plain
Python: chain statistics by scanning the earlier mentions of the same entity, the PERSON window by
scanning the five sentences before, the anchors before in the same sentence by scanning the
sentence, the surface tests with Python's ``re`` on the text around the anchor, the candidate
distances by scanning the chain's mentions; the package computes the same with polars expressions
(Rust regex engine, window functions, joins).
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore.anchors import certify as C
from ddpcore.anchors.certify_model import CERTIFY_FORMAT, load_certify_model
from ddpcore.errors import DDPDataError

ROOT = Path(__file__).resolve().parents[1]


def naive_features(anchors: list[dict], texts: dict[tuple[str, int], str]) -> np.ndarray:
    rows = []
    for i, a in enumerate(anchors):
        text = texts[(a["document_id"], a["segment_id"])]
        after = text[a["char_end"]:a["char_end"] + 80].lower()
        before = text[max(a["char_start"] - 12, 0):a["char_start"]].lower()
        low = a["text"].lower()
        pro, ent = a["kind"] == "pronoun", a["kind"] == "entity"
        d = a["distance_sentences"]
        lg = max(a["sentence"] - a["antecedent_sentence"], 0)
        # same-entity mentions before this one, in (sentence, segment, anchor_index) order
        key = (a["sentence"], a["segment_id"], a["anchor_index"])
        chain = sorted((b["sentence"], b["segment_id"], b["anchor_index"]) for b in anchors
                       if b["document_id"] == a["document_id"] and b["entity_id"] == a["entity_id"])
        pos = chain.index(key)
        sents = [c[0] for c in chain[:pos + 1]]
        gaps = [sents[j] - sents[j - 1] for j in range(1, len(sents))]
        gap = gaps[-1] if gaps else 0
        max_gap = max([0] + gaps)
        recent = sum(1 for g in gaps if 0 <= g <= 10)
        persons = {b["entity_id"] for b in anchors if b["document_id"] == a["document_id"] and b["kind"] == "entity"
                   and b["label"] == "PERSON" and a["sentence"] - 5 <= b["sentence"] < a["sentence"]}
        ante = (a["antecedent_text"] or "").lower()
        l1 = lambda x: math.log1p(max(x, 0))  # noqa: E731
        f = [float(pro)]
        f += [float(a["label"] == x) for x in C.LABELS]
        f += [float(a["antecedent_kind"] == x) for x in C.ANTECEDENT_KINDS]
        f += [float(pro and low == x) for x in C.PRONOUN_FORMS]
        f += [l1(d), float(d == 1), l1(d) * pro, l1(lg), l1(d - lg)]
        f += [ent * l1(pos), ent * l1(max_gap), ent * l1(gap)]
        f += [float(pro and re.search(p, after) is not None) for p in (C.SEEM, C.WEATHER, C.EXTRAPOSITION, C.CLEFT)]
        f += [float(re.search(r"(?:^|[.!?:;][\"”’)]*\s+|[\"“‘(]\s*)$", before) is not None or a["char_start"] == 0),
              float(re.search(r"^\s*or\s", after) is not None), float(re.search(r"\sor\s*$", before) is not None),
              float(re.search(r"^\s*(?:$|[?.!])", after) is not None),
              float(len(a["text"].split())) if ent else 0.0, float(re.search(r"\d", a["text"]) is not None),
              float(a["text"].upper() == a["text"] and len(a["text"]) > 1 and re.search("[A-Za-z]", a["text"]) is not None),
              float(ent and re.sub(r"^the\s+", "", low) == re.sub(r"^the\s+", "", ante)),
              float(ent and low in ante), l1(a["sentence"]), l1(len(persons)), ent * l1(recent),
              ent * l1(a["sentence"] - sents[0])]
        # the anchors before this one in its sentence (anchor_index order)
        same = [b for b in anchors if b["document_id"] == a["document_id"] and b["sentence"] == a["sentence"]
                and b["anchor_index"] < a["anchor_index"]]
        n_ent = sum(b["kind"] == "entity" for b in same)
        n_per = sum(b["kind"] == "entity" and b["label"] == "PERSON" for b in same)
        n_grp = sum(b["kind"] == "entity" and b["label"] in ("ORG", "NORP", "GPE") for b in same)
        compatible = pro and ((a["label"] in ("MASC_SG", "FEM_SG") and n_per > 0)
                              or (a["label"] == "NEUT_SG" and n_ent > n_per) or (a["label"] == "PL" and n_grp > 0))
        quotes = sum(ch in '"“”' for ch in text[:a["char_start"]])
        words_after = re.match(r"\s*(\S+)", after)
        word = words_after.group(1) if words_after else ""
        f += [l1(n_ent), l1(sum(b["kind"] == "pronoun" for b in same)), float(compatible), float(quotes % 2 == 1),
              a["char_start"] / max(len(text), 1),
              float(pro and re.match(r"(?:is|was|are|were|'s|’s|isn't|wasn't|isn’t|wasn’t)\b", word) is not None),
              float(pro and re.match(r"(?:would|will|can|could|may|might|must|should|'ll|’ll|'d|’d)\b", word) is not None),
              float(pro and re.match(r"(?:has|had|have|'ve|’ve)\b", word) is not None),
              float(re.search(r"(?:^|\s)(?:in|on|at|of|for|with|to|from|by|about|into|like|than)\s*$", before) is not None),
              l1(len((a["antecedent_text"] or "").split())),
              float(a["antecedent_kind"] == "noun" and (a["antecedent_text"] or "")[:1].isupper()
                    and (a["antecedent_text"] or "")[:1].isascii())]
        # the parse columns (ddpcore.pipeline.roles), read as they stand in the row
        f += [float(a["role"] == x) for x in C.PARSE_ROLES]
        f += [float(a["antecedent_role"] == x) for x in C.PARSE_ROLES]
        n_cand = a["n_candidates"]
        f += [float(a["role"] == a["antecedent_role"]), l1(n_cand or 0) if pro else 0.0,
              float(pro and n_cand == 0), float(pro and n_cand == 1)]
        assert len(f) == len(C.ANCHOR_FEATURES), (len(f), len(C.ANCHOR_FEATURES))
        rows.append(f)
    return np.array(rows, dtype=np.float64).reshape(len(anchors), len(C.ANCHOR_FEATURES))


def _naive_chain_key(anchors: list[dict], b: dict) -> tuple | None:
    """A row's chain: its entity (a name), its antecedent's entity or the noun mention it links to (a pronoun)."""
    if b["kind"] == "entity":
        return ("entity", b["document_id"], b["entity_id"])
    if b["antecedent_kind"] == "entity":
        ids = [c["entity_id"] for c in anchors if c["kind"] == "entity" and c["document_id"] == b["document_id"]
               and c["sentence"] == b["antecedent_sentence"] and c["text"] == b["antecedent_text"]]
        return ("entity", b["document_id"], min(ids)) if ids else None
    if b["antecedent_kind"] == "noun":
        return ("noun", b["document_id"], b["antecedent_sentence"], b["antecedent_text"])
    return None


def naive_candidates(anchors: list[dict]) -> list[tuple[int, int, int]]:
    """(anchor row, rank, distance) of every candidate, by scanning each anchor's chain."""
    out = []
    for i, a in enumerate(anchors):
        s, d = a["sentence"], a["distance_sentences"]
        if d <= 0:
            continue
        ref, ante = a["reference_sentence"], a["antecedent_sentence"]
        eid = None
        if a["kind"] == "entity":
            eid = a["entity_id"]
        elif a["antecedent_kind"] == "entity":
            ids = [b["entity_id"] for b in anchors if b["kind"] == "entity" and b["document_id"] == a["document_id"]
                   and b["sentence"] == ante and b["text"] == a["antecedent_text"]]
            eid = min(ids) if ids else None
        cands = [(0, d)]  # the full distance as the table has it
        if eid is not None:
            chain = sorted({b["sentence"] for b in anchors if b["kind"] == "entity"
                            and b["document_id"] == a["document_id"] and b["entity_id"] == eid})
            chain = [m for m in chain if ref <= m <= ante and m < s]
            cands += [(r, s - chain[r]) for r in (1, 2) if r < len(chain)]
            cands.append((3, s - ante))
        key = _naive_chain_key(anchors, a)
        if key is not None:  # rank 4: the nearest earlier sentence with a mention (name or pronoun) of the chain
            before = [b["sentence"] for b in anchors if b["sentence"] < s and _naive_chain_key(anchors, b) == key]
            if before:
                cands.append((4, s - max(before)))
        seen: set[int] = set()
        for rank, dist in sorted(cands):
            if 0 < dist <= d and dist not in seen:
                seen.add(dist)
                out.append((i, rank, dist))
    return out


WORDS = ["it", "is", "hard", "to", "say", "He", "she", "his", "or", "her", "Paris", "Anna", "seems", "raining",
         "was", "that", "the", "Bank", "?", "ORG", "2020", "they", ".", "would", "has", "in", '"', "“", "isn't"]


@st.composite
def anchor_tables(draw):  # type: ignore[no-untyped-def]
    n_docs = draw(st.integers(1, 2))
    anchors, texts = [], {}
    for d in range(n_docs):
        doc = f"d{d}"
        n_seg = draw(st.integers(1, 8))
        sent = 0
        for s in range(n_seg):
            sent += draw(st.integers(0 if s else 0, 6))  # sentence gaps 0..6 between segments: chains with gaps > 10
            words = draw(st.lists(st.sampled_from(WORDS), min_size=3, max_size=12))
            text = " ".join(words)
            texts[(doc, s)] = text
            n_a = draw(st.integers(0, 4))
            for k in range(n_a):
                w = draw(st.integers(0, len(words) - 1))
                start = len(" ".join(words[:w])) + (1 if w else 0)
                kind = draw(st.sampled_from(["entity", "pronoun"]))
                label = draw(st.sampled_from(["PERSON", "ORG", "GPE"] if kind == "entity" else ["MASC_SG", "NEUT_SG", "PL"]))
                dist = draw(st.integers(-1, min(sent, 20)))
                ref = sent - dist if dist >= 0 else -1
                # the antecedent between the reference (the chain's first mention) and the anchor
                ante_s = draw(st.integers(ref, sent)) if dist >= 0 else -1
                ante_kind = draw(st.sampled_from(["entity", "noun", "none", "first_mention"]))
                anchors.append({
                    "document_id": doc, "segment_id": s, "anchor_index": len([a for a in anchors if a["document_id"] == doc]),
                    "sentence": sent, "kind": kind, "label": label, "text": words[w], "char_start": start,
                    "char_end": start + len(words[w]),
                    "entity_id": draw(st.integers(0, 1)) if kind == "entity" else -1,
                    "antecedent_kind": ante_kind,
                    "antecedent_text": draw(st.sampled_from(WORDS)) if ante_kind in ("entity", "noun") else None,
                    "antecedent_sentence": ante_s, "reference_sentence": ref,
                    "distance_sentences": dist,
                    "role": draw(st.sampled_from(["other", *C.PARSE_ROLES])),
                    "antecedent_role": draw(st.sampled_from(["none", "other", *C.PARSE_ROLES])),
                    "n_candidates": draw(st.integers(0, 4)) if kind == "pronoun" else None,
                })
    return anchors, texts


def _frames(anchors, texts):  # type: ignore[no-untyped-def]
    schema = {"document_id": pl.String, "segment_id": pl.Int64, "anchor_index": pl.Int64, "sentence": pl.Int64,
              "kind": pl.String, "label": pl.String, "text": pl.String, "char_start": pl.Int64, "char_end": pl.Int64,
              "entity_id": pl.Int64, "antecedent_kind": pl.String, "antecedent_text": pl.String,
              "antecedent_sentence": pl.Int64, "reference_sentence": pl.Int64, "distance_sentences": pl.Int64,
              "role": pl.String, "antecedent_role": pl.String, "n_candidates": pl.Int64}
    for row in anchors:  # hand-written rows without the parse columns: a subject, its antecedent's role unknown
        row.setdefault("role", "subject")
        row.setdefault("antecedent_role", "none" if row["antecedent_kind"] in ("none", "first_mention") else "other")
        row.setdefault("n_candidates", 1 if row["kind"] == "pronoun" else None)
    a = pl.DataFrame(anchors, schema=schema)
    t = pl.DataFrame({"document_id": [k[0] for k in texts], "segment_id": [k[1] for k in texts],
                      "source": list(texts.values())})
    return a, t


@settings(max_examples=120, deadline=None, derandomize=True)
@given(anchor_tables())
def test_features_equal_the_per_anchor_oracle(table) -> None:  # type: ignore[no-untyped-def]
    anchors, texts = table
    a, t = _frames(anchors, texts)
    got = C.anchor_features(a, t)
    want = naive_features(anchors, texts)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@settings(max_examples=120, deadline=None, derandomize=True)
@given(anchor_tables())
def test_candidates_equal_the_per_anchor_oracle(table) -> None:  # type: ignore[no-untyped-def]
    anchors, texts = table
    a, _ = _frames(anchors, texts)
    c = C.chain_candidates(a)
    assert list(zip(c.row.tolist(), c.rank.tolist(), c.distance.tolist())) == naive_candidates(anchors)


def test_features_of_hand_cases() -> None:
    """Extraposed and weather *it*, generic *his or her*, a repeated name (values worked out by hand)."""
    texts = {("d", 0): "Anna met Bob.", ("d", 1): "It is hard to say whether his or her team won.",
             ("d", 2): "It was raining when Anna left."}
    anchors = [
        dict(document_id="d", segment_id=0, anchor_index=0, sentence=0, kind="entity", label="PERSON", text="Anna",
             char_start=0, char_end=4, entity_id=0, antecedent_kind="first_mention", antecedent_text=None,
             antecedent_sentence=-1, reference_sentence=-1, distance_sentences=-1),
        dict(document_id="d", segment_id=1, anchor_index=1, sentence=1, kind="pronoun", label="NEUT_SG", text="It",
             char_start=0, char_end=2, entity_id=-1, antecedent_kind="none", antecedent_text=None,
             antecedent_sentence=-1, reference_sentence=0, distance_sentences=1),
        dict(document_id="d", segment_id=1, anchor_index=2, sentence=1, kind="pronoun", label="MASC_SG", text="his",
             char_start=26, char_end=29, entity_id=-1, antecedent_kind="entity", antecedent_text="Anna",
             antecedent_sentence=0, reference_sentence=0, distance_sentences=1),
        dict(document_id="d", segment_id=2, anchor_index=3, sentence=2, kind="entity", label="PERSON", text="Anna",
             char_start=20, char_end=24, entity_id=0, antecedent_kind="entity", antecedent_text="Anna",
             antecedent_sentence=0, reference_sentence=0, distance_sentences=2),
    ]
    a, t = _frames(anchors, texts)
    f = dict(zip(C.ANCHOR_FEATURES, C.anchor_features(a, t).T))
    assert list(f["extraposition"]) == [0, 1, 0, 0]
    assert list(f["next_be"]) == [0, 1, 0, 0]  # "It is"; "It was" of segment 2 is not an anchor here
    assert list(f["log_pronouns_before"]) == pytest.approx([0, 0, math.log(2), 0])  # "his" after "It"
    assert list(f["compatible_before"]) == [0, 0, 0, 0]  # no PERSON name before "his" in its sentence
    assert list(f["followed_by_or"]) == [0, 0, 1, 0]
    assert list(f["sentence_initial"]) == [1, 1, 0, 0]
    assert list(f["same_string"]) == [0, 0, 0, 1]
    assert f["log_since_first"][3] == pytest.approx(math.log(3))  # sentence 2 - first mention 0, log1p
    assert f["log_persons_5"][3] == pytest.approx(math.log(2))  # one PERSON entity (Anna) in sentences 0..1
    assert f["log_mentions_before"][3] == pytest.approx(math.log(2))


def _model_doc(**over):  # type: ignore[no-untyped-def]
    n = len(C.FEATURES)
    doc = {"format": CERTIFY_FORMAT, "version": 5, "features": list(C.FEATURES), "weights": [0.1] * n,
           "mean": [0.0] * n, "scale": [1.0] * n, "bias": -1.0, "threshold": 0.8, "threshold_name": 0.85,
           "threshold_long": 0.9, "long_distance": 15, "long_full_only": True}
    doc.update(over)
    return doc


@pytest.mark.parametrize("long_full_only,version", [(True, 5), (False, 5), (True, 4)])
def test_certify_rule_matches_the_logistic_formula(tmp_path: Path, long_full_only: bool, version: int) -> None:
    """Confidence, certified and distance_certified against scalar arithmetic and loops per candidate;
    below 15 sentences a pronoun candidate needs 0.6 and a name's 0.5 (layout 4: 0.6 for both)."""
    rng = np.random.default_rng(3)
    n = len(C.FEATURES)
    w, mean, scale = rng.normal(size=n), rng.normal(size=n), rng.uniform(0.5, 2, size=n)
    p = tmp_path / "m.json"
    doc = _model_doc(weights=w.tolist(), mean=mean.tolist(), scale=scale.tolist(), bias=0.3, threshold=0.6,
                     threshold_name=0.5, threshold_long=0.7, long_full_only=long_full_only, version=version)
    if version == 4:
        del doc["threshold_name"]
    p.write_text(json.dumps(doc))
    t_name = 0.5 if version == 5 else 0.6
    model = load_certify_model(p, C.FEATURES)
    n_anchors = 40
    d = rng.integers(-1, 30, size=n_anchors)
    rows, ranks, dists = [], [], []
    for i in np.flatnonzero(d > 0):  # the full distance, then up to three shorter ones
        shorter = sorted(set(rng.integers(1, d[i] + 1, size=3).tolist()) - {int(d[i])}, reverse=True)
        for rank, x in enumerate([int(d[i])] + shorter):
            rows.append(i), ranks.append(rank), dists.append(x)
    cand = C.Candidates(row=np.array(rows), rank=np.array(ranks), distance=np.array(dists))
    X = rng.normal(size=(len(rows), n))
    is_pronoun = rng.random(n_anchors) < 0.5  # the "pronoun" feature: 1 for a pronoun anchor's candidates, else 0
    X[:, C.FEATURES.index("pronoun")] = is_pronoun[rows].astype(float)
    res = C.certify(X, cand, d, model)
    want_dc = [0] * n_anchors
    for k in range(len(rows)):  # plain scalar arithmetic per candidate
        z = sum((X[k, j] - mean[j]) / scale[j] * w[j] for j in range(n)) + 0.3
        c = 1 - 1 / (1 + math.exp(-z))
        long = dists[k] >= 15
        need = 0.7 if long else (0.6 if is_pronoun[rows[k]] else t_name)
        ok = c >= need and not (long and long_full_only and ranks[k] > 0)
        if ok:
            want_dc[rows[k]] = max(want_dc[rows[k]], dists[k])
        if ranks[k] == 0:
            assert res.confidence[rows[k]] == pytest.approx(c, rel=1e-12)
            assert res.certified[rows[k]] == ok
    assert res.distance_certified.tolist() == want_dc
    for i in np.flatnonzero(d <= 0):
        assert math.isnan(res.confidence[i]) and not res.certified[i] and res.distance_certified[i] == 0
    assert (res.distance_certified[res.certified] == d[res.certified]).all()  # a certified full distance counts whole


@pytest.mark.parametrize("change,code", [
    (lambda p: p.write_bytes(b"\xff\xfe"), "D251"),
    (lambda p: p.write_text("[1, 2]"), "D251"),
    (lambda p: p.write_text(json.dumps({**_model_doc(), "format": "other"})), "D251"),
    (lambda p: p.write_text(json.dumps({k: v for k, v in _model_doc().items() if k != "bias"})), "D251"),
    (lambda p: p.write_text(json.dumps(_model_doc(version=99))), "D252"),
    (lambda p: p.write_text(json.dumps(_model_doc(features=list(C.FEATURES)[:-1] + ["other"]))), "D253"),
    (lambda p: p.write_text(json.dumps(_model_doc(weights=[0.0]))), "D254"),
    (lambda p: p.write_text(json.dumps(_model_doc()).replace('"mean": [0.0', '"mean": [NaN')), "D255"),
    (lambda p: p.write_text(json.dumps(_model_doc(threshold=1.5))), "D256"),
    (lambda p: p.write_text(json.dumps(_model_doc(long_distance=0))), "D256"),
    (lambda p: p.write_text(json.dumps(_model_doc(scale=[0.0] * len(C.FEATURES)))), "D257"),
    (lambda p: p.write_text(json.dumps(_model_doc(long_full_only=1))), "D258"),
    (lambda p: p.write_text(json.dumps({k: v for k, v in _model_doc().items() if k != "long_full_only"})), "D251"),
    (lambda p: p.write_text(json.dumps(_model_doc(version=1))), "D252"),  # layout 1: one row per anchor
    (lambda p: p.write_text(json.dumps(_model_doc(version=2))), "D252"),  # layout 2: no parse features
    (lambda p: p.write_text(json.dumps(_model_doc(version=3))), "D252"),  # layout 3: no "previous" candidate
    (lambda p: p.write_text(json.dumps({k: v for k, v in _model_doc().items() if k != "threshold_name"})), "D251"),
    (lambda p: p.write_text(json.dumps(_model_doc(threshold_name=-0.1))), "D256"),
])
def test_bad_model_files_are_coded_errors(tmp_path: Path, change, code: str) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "m.json"
    change(p)
    with pytest.raises(DDPDataError, match=rf"\[{code}\] {re.escape(str(p))}"):
        load_certify_model(p, C.FEATURES)


def test_missing_model_file_is_d250(tmp_path: Path) -> None:
    with pytest.raises(DDPDataError, match=r"\[D250\]"):
        load_certify_model(tmp_path / "nope.json", C.FEATURES)


def test_chain_continuity_boundaries() -> None:
    """Mentions of one entity at sentences 0, 10, 21 and 22: gaps 10 (recent), 11 (not), 1; worked out by hand."""
    sents = [0, 10, 21, 22]
    texts = {("d", s): "Anna spoke." for s in sents}
    anchors = [dict(document_id="d", segment_id=s, anchor_index=i, sentence=s, kind="entity", label="PERSON",
                    text="Anna", char_start=0, char_end=4, entity_id=0,
                    antecedent_kind="entity" if i else "first_mention", antecedent_text="Anna" if i else None,
                    antecedent_sentence=sents[i - 1] if i else -1, reference_sentence=0 if i else -1,
                    distance_sentences=s if i else -1)
               for i, s in enumerate(sents)]
    a, t = _frames(anchors, texts)
    f = dict(zip(C.ANCHOR_FEATURES, C.anchor_features(a, t).T))
    assert np.allclose(f["log_recent_mentions"], np.log1p([0, 1, 1, 2]))
    assert np.allclose(f["log_max_gap"], np.log1p([0, 10, 11, 11]))
    assert np.allclose(f["log_gap"], np.log1p([0, 10, 11, 1]))
    assert np.allclose(f["log_persons_5"], np.log1p([0, 0, 0, 1]))  # sentence 21 is within 5 before 22
    np.testing.assert_allclose(C.anchor_features(a, t), naive_features(anchors, texts), atol=1e-12)


def test_candidates_of_a_long_chain() -> None:
    """Anna at sentences 0, 2, 5, 9, 14, 20, then "she" at 21 -> Anna (20): worked out by hand."""
    sents = [0, 2, 5, 9, 14, 20]
    texts = {("d", s): "Anna spoke." for s in sents} | {("d", 21): "Then she left."}
    anchors = [dict(document_id="d", segment_id=s, anchor_index=i, sentence=s, kind="entity", label="PERSON",
                    text="Anna", char_start=0, char_end=4, entity_id=0,
                    antecedent_kind="entity" if i else "first_mention", antecedent_text="Anna" if i else None,
                    antecedent_sentence=sents[i - 1] if i else -1, reference_sentence=0 if i else -1,
                    distance_sentences=s if i else -1)
               for i, s in enumerate(sents)]
    anchors.append(dict(document_id="d", segment_id=21, anchor_index=6, sentence=21, kind="pronoun", label="FEM_SG",
                        text="she", char_start=5, char_end=8, entity_id=-1, antecedent_kind="entity",
                        antecedent_text="Anna", antecedent_sentence=20, reference_sentence=0, distance_sentences=21))
    a, _ = _frames(anchors, texts)
    c = C.chain_candidates(a)
    got = {(r, k): d for r, k, d in zip(c.row.tolist(), c.rank.tolist(), c.distance.tolist())}
    assert {k: d for (r, k), d in got.items() if r == 5} == {0: 20, 1: 18, 2: 15, 3: 6}  # Anna at 20
    assert {k: d for (r, k), d in got.items() if r == 6} == {0: 21, 1: 19, 2: 16, 3: 1}  # she at 21
    assert {k: d for (r, k), d in got.items() if r == 1} == {0: 2}  # Anna at 2: the antecedent is the first mention
    assert list(zip(c.row.tolist(), c.rank.tolist(), c.distance.tolist())) == naive_candidates(anchors)


def test_previous_candidate_counts_linked_pronouns() -> None:
    """Rank 4 ("previous"), worked out by hand: Anna (sentence 0); "she" at 3 and at 5, both linked to Anna at 0;
    "it" at 7 and at 9 linked to the noun "the box" at 6; "it" at 10 linked to "the box" at 8 (another mention)."""
    def row(i, s, kind, label, text, eid, ante_kind, ante_text, ante_s, ref, d):  # type: ignore[no-untyped-def]
        return dict(document_id="d", segment_id=s, anchor_index=i, sentence=s, kind=kind, label=label, text=text,
                    char_start=0, char_end=len(text), entity_id=eid, antecedent_kind=ante_kind,
                    antecedent_text=ante_text, antecedent_sentence=ante_s, reference_sentence=ref,
                    distance_sentences=d)
    anchors = [row(0, 0, "entity", "PERSON", "Anna", 0, "first_mention", None, -1, -1, -1),
               row(1, 3, "pronoun", "FEM_SG", "she", -1, "entity", "Anna", 0, 0, 3),
               row(2, 5, "pronoun", "FEM_SG", "she", -1, "entity", "Anna", 0, 0, 5),
               row(3, 7, "pronoun", "NEUT_SG", "it", -1, "noun", "the box", 6, 6, 1),
               row(4, 9, "pronoun", "NEUT_SG", "it", -1, "noun", "the box", 6, 6, 3),
               row(5, 10, "pronoun", "NEUT_SG", "it", -1, "noun", "the box", 8, 8, 2)]
    texts = {("d", a["segment_id"]): a["text"] + " is here." for a in anchors}
    a, _ = _frames(anchors, texts)
    c = C.chain_candidates(a)
    got: dict[int, dict[int, int]] = {}
    for r, k, d in zip(c.row.tolist(), c.rank.tolist(), c.distance.tolist()):
        got.setdefault(r, {})[k] = d
    assert got[1] == {0: 3}  # she at 3: full = antecedent = previous (Anna at 0), kept once at rank 0
    assert got[2] == {0: 5, 4: 2}  # she at 5: back to "she" at 3
    assert got[3] == {0: 1}  # the first pronoun of the box: nothing earlier of its chain but the noun itself
    assert got[4] == {0: 3, 4: 2}  # it at 9: back to "it" at 7 (same noun mention)
    assert got[5] == {0: 2}  # it at 10 links to another mention of "the box": another chain
    assert list(zip(c.row.tolist(), c.rank.tolist(), c.distance.tolist())) == naive_candidates(anchors)


@pytest.mark.spacy_model
def test_profile_carries_the_certified_columns() -> None:
    """ddp_certified = max distance_certified over the anchors (0 without one), checked by loops over the
    tables; distance_certified is one of the anchor's candidate distances (naive_candidates) or 0."""
    import dataclasses

    import ddpcore
    from ddpcore.anchors.rules import certify_model_for, get_rules

    run = ddpcore.profile_anchors(str(ROOT / "tests" / "data" / "wmt25_mini.jsonl"))
    seg, anc, sen = run.segments, run.anchors, run.sentences
    model = certify_model_for(get_rules(None))
    best: dict[tuple, int] = {}
    best_sent: dict[tuple, int] = {}
    rows = list(anc.iter_rows(named=True))
    cands: dict[int, set[int]] = {}
    for i, _, dist in naive_candidates(rows):
        cands.setdefault(i, set()).add(dist)
    partial = 0
    for i, r in enumerate(rows):
        d, dc = r["distance_sentences"], r["distance_certified"]
        if d > 0:
            assert 0.0 <= r["confidence"] <= 1.0
            thr = (model.threshold_long if d >= model.long_distance
                   else model.threshold if r["kind"] == "pronoun" else model.threshold_name)
            assert r["certified"] == (r["confidence"] >= thr)
            assert dc == d if r["certified"] else (dc == 0 or dc in cands[i] and dc < d)
            partial += 0 < dc < d
        else:
            assert math.isnan(r["confidence"]) and not r["certified"] and dc == 0
        k = (r["document_id"], r["segment_id"])
        ks = (r["document_id"], r["sentence"])
        best[k] = max(best.get(k, 0), dc)
        best_sent[ks] = max(best_sent.get(ks, 0), dc)
    for r in seg.iter_rows(named=True):
        assert r["ddp_certified"] == best.get((r["document_id"], r["segment_id"]), 0)
        assert r["ddp_certified"] <= r["ddp"]
    for r in sen.iter_rows(named=True):
        assert r["sentence_ddp_certified"] == best_sent.get((r["document_id"], r["sentence"]), 0)
    assert seg.columns.index("ddp_certified") == seg.columns.index("ddp") + 1
    assert anc["certified"].any() and not anc["certified"].all()  # the model certifies some anchors, not all
    assert partial > 0  # and some anchors only in part (a shorter distance of their chain)
    # no certification model: no certified columns, and ddp itself unchanged
    bare = dataclasses.replace(get_rules(None), certify_model="")
    run0 = ddpcore.profile_anchors(str(ROOT / "tests" / "data" / "wmt25_mini.jsonl"), rules=bare)
    assert "ddp_certified" not in run0.segments.columns and "certified" not in run0.anchors.columns
    assert "distance_certified" not in run0.anchors.columns
    assert run0.segments["ddp"].to_list() == seg["ddp"].to_list()


def test_a_broken_model_fails_before_any_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    import ddpcore
    from ddpcore.anchors.rules import get_rules
    from ddpcore.pipeline import parse

    bad = tmp_path / "m.json"
    bad.write_text(json.dumps(_model_doc(version=7)))
    monkeypatch.setattr(parse.Parser, "__init__", lambda *a, **k: pytest.fail("parsed before the model was checked"))
    rules = dataclasses.replace(get_rules(None), certify_model=str(bad))
    with pytest.raises(DDPDataError, match=r"\[D252\]"):
        ddpcore.profile_anchors(str(ROOT / "tests" / "data" / "wmt25_mini.jsonl"), rules=rules)


def test_confidence_does_not_depend_on_the_batch(tmp_path: Path) -> None:
    """The same anchor scored in a batch of 1, 7 or 5,000 rows gets the same bits (outputs may not
    depend on batching; a BLAS matrix product would change the summation order with the row count)."""
    rng = np.random.default_rng(11)
    n = len(C.FEATURES)
    p = tmp_path / "m.json"
    p.write_text(json.dumps(_model_doc(weights=rng.normal(size=n).tolist(), mean=rng.normal(size=n).tolist(),
                                       scale=rng.uniform(0.1, 3, size=n).tolist(), bias=0.7)))
    model = load_certify_model(p, C.FEATURES)
    X = rng.normal(size=(5000, n)) * 10
    whole = C.confidence_of(X, model)
    for size in (1, 7, 333):
        part = np.concatenate([C.confidence_of(X[i:i + size], model) for i in range(0, 5000, size)])
        assert np.array_equal(part, whole)


def _column_loop_confidence(X: np.ndarray, model) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The numpy form of ``confidence_of`` before its native kernel (ddpcore 2026-12-06): standardise the
    whole matrix, add feature j's term to every row's logit in the order j = 0, 1, ..."""
    z = (X - model.mean) / model.scale
    logit = np.full(z.shape[0], model.bias, dtype=np.float64)
    for j in range(z.shape[1]):
        logit += z[:, j] * model.weights[j]
    with np.errstate(over="ignore"):
        return 1.0 - 1.0 / (1.0 + np.exp(-logit))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 300), st.integers(0, 2**31 - 1), st.sampled_from(["C", "F", "strided"]))
def test_native_confidence_is_the_column_loop_bit_for_bit(tmp_path_factory, n_rows: int, seed: int,  # type: ignore[no-untyped-def]
                                                           layout: str) -> None:
    rng = np.random.default_rng(seed)
    n = len(C.FEATURES)
    p = tmp_path_factory.mktemp("m") / "m.json"
    p.write_text(json.dumps(_model_doc(weights=(rng.normal(size=n) * 3).tolist(), mean=rng.normal(size=n).tolist(),
                                       scale=rng.uniform(0.01, 5, size=n).tolist(), bias=float(rng.normal()))))
    model = load_certify_model(p, C.FEATURES)
    X = rng.normal(size=(2 * n_rows, n)) * rng.choice([1e-3, 1.0, 50.0], size=n)
    X[rng.random(X.shape) < 0.3] = 0.0  # one-hot features are mostly 0
    X = X[::2] if layout == "strided" else (np.asfortranarray(X[:n_rows]) if layout == "F" else X[:n_rows])
    assert C.confidence_of(X, model).tobytes() == _column_loop_confidence(np.array(X), model).tobytes()


def test_explain_shows_a_confidence_on_its_side_of_the_threshold() -> None:
    """Expected strings worked out by hand: 0.93996 rounds to 0.940 at 3 decimals, which would read as
    reaching 0.94; 4 decimals (0.9400) still do, 5 (0.93996) do not."""
    from ddpcore.explain import _confidence_text

    assert _confidence_text(0.93996, 0.94) == "0.93996"
    assert _confidence_text(0.946, 0.94) == "0.946"
    assert _confidence_text(0.94, 0.94) == "0.940"  # exactly at the threshold: certified, 3 decimals suffice
    assert _confidence_text(0.5, None) == "0.500"


def test_explain_names_the_threshold_of_the_anchor_kind() -> None:
    """A layout-5 signature: a pronoun's full distance needs ``threshold``, a name's ``threshold_name``,
    either at 15 sentences or more ``threshold_long``; a layout-4 signature (no ``threshold_name``) has one
    short threshold for both."""
    from ddpcore.explain import _threshold_of

    v5 = {"threshold": 0.95, "threshold_name": 0.9, "threshold_long": 0.97, "long_distance": 15}
    assert _threshold_of(v5, 3, "pronoun") == 0.95
    assert _threshold_of(v5, 3, "entity") == 0.9
    assert _threshold_of(v5, 15, "entity") == 0.97 and _threshold_of(v5, 40, "pronoun") == 0.97
    v4 = {"threshold": 0.94, "threshold_long": 0.94, "long_distance": 15}
    assert _threshold_of(v4, 3, "entity") == 0.94 == _threshold_of(v4, 3, "pronoun")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.sampled_from([0, 1, 2**40, -(2**40), 2**61]), st.integers(0, 5)),
                min_size=0, max_size=40))
def test_codes_are_dense_and_equal_for_equal_tuples(rows: list[tuple[int, int, int]]) -> None:
    """``_codes`` (chain_candidates' grouping) against a dict: codes 0..k-1 in the tuples' sorted order, equal
    exactly for equal tuples; the 2**40 and 2**61 values force the packing to densify on the way."""
    cols = [np.array([r[k] for r in rows], dtype=np.int64) for k in range(3)]
    got = C._codes(*cols).tolist()
    want_of = {t: i for i, t in enumerate(sorted(set(rows)))}
    assert got == [want_of[r] for r in rows]



@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(0, 2**31 - 1))
def test_candidate_confidence_is_the_matrix_path_bit_for_bit(tmp_path_factory, n_anchors: int,  # type: ignore[no-untyped-def]
                                                             seed: int) -> None:
    """The pipeline's ``candidate_confidence`` (a partial logit per anchor, continued per candidate) gives the
    bits of ``confidence_of(candidate_features(...))``, and ``certify_anchors``' reduction equals ``certify``'s."""
    rng = np.random.default_rng(seed)
    n = len(C.FEATURES)
    p = tmp_path_factory.mktemp("m") / "m.json"
    p.write_text(json.dumps(_model_doc(weights=(rng.normal(size=n) * 2).tolist(), mean=rng.normal(size=n).tolist(),
                                       scale=rng.uniform(0.05, 4, size=n).tolist(), bias=float(rng.normal()),
                                       threshold=0.6, threshold_name=0.5, threshold_long=0.7)))
    model = load_certify_model(p, C.FEATURES)
    feats = rng.normal(size=(n_anchors, len(C.ANCHOR_FEATURES))) * 5
    feats[:, C.ANCHOR_FEATURES.index("pronoun")] = rng.random(n_anchors) < 0.5
    d = rng.integers(-1, 30, size=n_anchors)
    rows, ranks, dists = [], [], []
    for i in np.flatnonzero(d > 0):
        for rank in sorted(rng.choice(5, size=int(rng.integers(1, 6)), replace=False)):
            rows.append(i), ranks.append(int(rank)), dists.append(int(rng.integers(1, d[i] + 1)) if rank else int(d[i]))
    cand = C.Candidates(row=np.array(rows, dtype=np.int64), rank=np.array(ranks, dtype=np.int64),
                        distance=np.array(dists, dtype=np.int64))
    want = C.confidence_of(C.candidate_features(feats, cand, d), model)
    got = C.candidate_confidence(feats, cand, d, model)
    assert got.tobytes() == want.tobytes()
    a = C.certify(C.candidate_features(feats, cand, d), cand, d, model)
    b = C._certified(got, feats[cand.row, C.ANCHOR_FEATURES.index("pronoun")] > 0.5, cand, d, model)
    assert np.array_equal(a.confidence, b.confidence, equal_nan=True)
    assert np.array_equal(a.certified, b.certified) and np.array_equal(a.distance_certified, b.distance_certified)


def test_a_confidence_equal_to_the_threshold_is_certified(tmp_path: Path) -> None:
    """"Certified when the confidence reaches the threshold": a confidence exactly at a threshold counts, one
    ulp below it does not (a planted ``>`` passed every other test, whose random confidences never sit on a
    threshold). ``_certified`` takes the confidences directly, so they can be put on the thresholds."""
    p = tmp_path / "m.json"
    p.write_text(json.dumps(_model_doc(threshold=0.8, threshold_name=0.85, threshold_long=0.9)))
    model = load_certify_model(p, C.FEATURES)
    below = lambda t: float(np.nextafter(t, 0.0))  # noqa: E731
    # anchors: a pronoun at 3, a name at 4, a pronoun at 20 (long), each with one full-distance candidate, twice:
    # once exactly at its threshold, once one ulp below
    cand = C.Candidates(row=np.arange(6), rank=np.zeros(6, dtype=np.int64), distance=np.array([3, 4, 20, 3, 4, 20]))
    conf = np.array([0.8, 0.85, 0.9, below(0.8), below(0.85), below(0.9)])
    pronoun = np.array([True, False, True, True, False, True])
    res = C._certified(conf, pronoun, cand, np.array([3, 4, 20, 3, 4, 20]), model)
    assert res.certified.tolist() == [True, True, True, False, False, False]
    assert res.distance_certified.tolist() == [3, 4, 20, 0, 0, 0]
