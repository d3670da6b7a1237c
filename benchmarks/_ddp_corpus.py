"""Benchmark corpora for DDP: LitBank novels (real long documents) and synthetic item streams."""
from __future__ import annotations

import re
import tarfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
NOVELS = SHARED / "litbank-novels" / "litbank_original_novels.tar.xz"
BUNDLED = REPO / "src" / "ddpcore" / "data" / "wmt25_en_source.jsonl"


def litbank_segments(max_words: int = 150_000, max_docs: int = 100):
    """Segment table from LitBank novels: paragraphs (hard-wrapped lines joined) as segments,
    whole novels in file order until ``max_words`` whitespace tokens. Needs ../shared/data."""
    import polars as pl

    if not NOVELS.exists():
        raise FileNotFoundError(f"{NOVELS} not found: the LitBank novels live in the shared data folder")
    docs, segs, texts, words = [], [], [], 0
    with tarfile.open(NOVELS) as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile() and m.name.endswith(".txt")), key=lambda m: m.name)
        for m in members[:max_docs]:
            raw = tar.extractfile(m).read().decode("utf-8")
            paras = [re.sub(r"\s*\n\s*", " ", p).strip() for p in re.split(r"\n\s*\n", raw)]
            paras = [p for p in paras if p]
            for i, p in enumerate(paras):
                docs.append(Path(m.name).stem)
                segs.append(i)
                texts.append(p)
                words += len(p.split())
                if words >= max_words:
                    break
            if words >= max_words:
                break
    return pl.DataFrame({"document_id": docs, "segment_id": segs, "source": texts}), words


def synthetic_items(n_items: int, items_per_doc: int = 2_000, n_entities_per_doc: int = 60, seed: int = 0):
    """Flat item arrays as ``compute_distances`` takes them: documents of ``items_per_doc``
    items, ~50 % entity mentions over ``n_entities_per_doc`` entities, 35 % pronouns, 15 %
    head nouns, one new sentence every ~4 items, one segment every ~3 sentences."""
    rng = np.random.default_rng(seed)
    n_docs = n_items // items_per_doc
    n = n_docs * items_per_doc
    kind = rng.choice(np.array([0, 1, 2], np.int8), size=n, p=[0.5, 0.35, 0.15]).astype(np.int8)
    doc = np.repeat(np.arange(n_docs), items_per_doc)
    step = (rng.random(n) < 0.25).astype(np.int64)
    step[np.arange(0, n, items_per_doc)] = 0
    gsent = np.cumsum(step) + doc  # globally increasing; new doc starts a sentence
    doc_first = gsent[np.arange(0, n, items_per_doc)]
    sent = (gsent - np.repeat(doc_first, items_per_doc)).astype(np.int32)
    seg = (gsent // 3).astype(np.int32)
    local_ent = rng.integers(0, n_entities_per_doc, size=n)
    ent = np.where(kind == 0, local_ent + doc * n_entities_per_doc, -1).astype(np.int32)
    compat = np.where(kind == 1, rng.choice(np.array([1, 2, 4, 8], np.uint8), size=n),
                      rng.choice(np.array([4, 7, 8, 12, 11], np.uint8), size=n)).astype(np.uint8)
    offsets = np.arange(0, n + 1, items_per_doc, dtype=np.int64)
    return dict(offsets=offsets, kind=kind, sent=sent, ent=ent, compat=compat, seg=seg, gsent=gsent.astype(np.int32),
                n_ent=n_docs * n_entities_per_doc, n_seg=int(seg.max()) + 1, n_sent=int(gsent.max()) + 1)


def python_dict_distances(it) -> tuple[list, list]:
    """The plain-Python implementation a user would otherwise write: dicts per document."""
    offsets, kind, sent, ent, compat, seg = (it["offsets"].tolist(), it["kind"].tolist(), it["sent"].tolist(),
                                             it["ent"].tolist(), it["compat"].tolist(), it["seg"].tolist())
    dist = [-1] * len(kind)
    seg_ddp: dict[int, int] = {}
    for d in range(len(offsets) - 1):
        first: dict[int, int] = {}
        last_cand: dict[int, int] = {}
        for i in range(offsets[d], offsets[d + 1]):
            k = kind[i]
            if k == 1:
                c = last_cand.get(compat[i])
                if c is None:
                    dist[i] = 1
                elif kind[c] == 0:
                    dist[i] = sent[i] - first[ent[c]]
                else:
                    dist[i] = sent[i] - sent[c]
                seg_ddp[seg[i]] = max(seg_ddp.get(seg[i], 0), dist[i])
                continue
            if k == 0:
                e = ent[i]
                if e in first:
                    dist[i] = sent[i] - first[e]
                    seg_ddp[seg[i]] = max(seg_ddp.get(seg[i], 0), dist[i])
                else:
                    first[e] = sent[i]
            for bit in (1, 2, 4, 8):
                if compat[i] & bit:
                    last_cand[bit] = i
    return dist, [seg_ddp.get(s, 0) for s in range(it["n_seg"])]
