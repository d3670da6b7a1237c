"""The parse cache and a pipeline folder retrained in place (``--pipeline PATH``).

A retrained pipeline keeps the name, version and components of its ``meta.json`` (``spacy train`` writes
version 0.0.0 every time), which were the whole cache key: every later run was served the old weights'
parses, exit 0. The key now holds the SHA-256 of the folder's files.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest

from ddpcore.anchors.spacy_extract import pipeline_folder_digest, resolve_pipeline
from ddpcore.pipeline import cache as C

REPO = Path(__file__).resolve().parents[1]
MINI = REPO / "tests" / "data" / "wmt25_mini.jsonl"


def _installed_folder() -> Path:
    package = Path(importlib.util.find_spec(resolve_pipeline(None)).origin).parent
    [folder] = [d for d in package.iterdir() if d.is_dir() and (d / "meta.json").exists()]
    return folder


def _retrain(model: Path) -> None:
    """Change one byte of the NER weights, keeping size and modification time (and meta.json)."""
    weights = model / "ner" / "model"
    st = weights.stat()
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_the_fingerprint_of_a_folder_follows_its_files(tmp_path: Path) -> None:
    meta = {"lang": "en", "name": "core_web_sm", "version": "0.0.0", "pipeline": ["tok2vec", "parser", "ner"]}
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    (tmp_path / "ner").mkdir()
    (tmp_path / "ner" / "model").write_bytes(b"weights-1")
    fp = C.static_fingerprint(str(tmp_path))
    # the digest is the SHA-256 over relative name, size and bytes of each file (hashlib here, by hand)
    import hashlib

    h = hashlib.sha256()
    for rel in sorted(["meta.json", os.path.join("ner", "model")]):
        body = (tmp_path / rel).read_bytes()
        h.update(rel.encode() + b"\0" + str(len(body)).encode() + b"\0" + body)
    assert fp["weights"] == h.hexdigest() == pipeline_folder_digest(str(tmp_path))
    (tmp_path / "ner" / "model").write_bytes(b"weights-2")  # same size, same meta.json
    assert C.fingerprint_id(C.static_fingerprint(str(tmp_path))) != C.fingerprint_id(fp)
    # an installed pipeline named by its package keeps a key without weights (its version changes instead)
    assert "weights" not in (C.static_fingerprint(None) or {})


@pytest.mark.spacy_model
def test_a_pipeline_folder_retrained_in_place_is_parsed_again(tmp_path: Path) -> None:
    from ddpcore import profile_anchors

    model = tmp_path / "model"
    shutil.copytree(_installed_folder(), model)
    cache = tmp_path / "c"
    first = profile_anchors(MINI, cache=cache, pipeline=str(model))
    n_units = first.signature["cache"]["misses"]
    again = profile_anchors(MINI, cache=cache, pipeline=str(model))
    assert again.signature["cache"]["hits"] == n_units and again.signature["cache"]["misses"] == 0
    _retrain(model)
    retrained = profile_anchors(MINI, cache=cache, pipeline=str(model))
    # before: hits == n_units, the old weights' parses served
    assert retrained.signature["cache"] == {"hits": 0, "misses": n_units, "dir": str(cache)}
    assert "weights" not in retrained.signature  # the key is the cache's, not a pipeline detail
    served = profile_anchors(MINI, cache=cache, pipeline=str(model))  # and the new parses are cached in turn
    assert served.signature["cache"]["hits"] == n_units
    assert served.segments.equals(retrained.segments)
    assert len([d for d in cache.iterdir() if d.is_dir()]) == 2
