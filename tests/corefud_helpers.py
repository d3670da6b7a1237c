"""Shared by the CorefUD gold tests (test_hunt9_corefud.py, test_hunt10_gold.py): a stand-in for the spaCy run of
``ddp validate``, so a test reads a gold file it wrote and checks what the reader and the report make of it."""
from __future__ import annotations

import types
from typing import Any

import polars as pl
import pytest

import ddpcore.gold.validate as V


def stand_in_validate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace the spaCy run of ``ddp validate``: DDP 0 for every gold sentence, no anchors."""
    schema = {"document_id": pl.String, "segment_id": pl.Int64, "anchor_index": pl.Int64, "kind": pl.String,
              "label": pl.String, "text": pl.String, "antecedent_kind": pl.String, "antecedent_text": pl.String,
              "antecedent_sentence": pl.Int64, "distance_sentences": pl.Int64, "distance_certified": pl.Int64}

    def profile_gold(corpus: Any, **kw: Any) -> tuple[Any, dict[str, float]]:
        s = corpus.sentences
        seg = pl.DataFrame({"document_id": s["document_id"], "segment_id": s["sentence"].cast(pl.Int64),
                            "ddp": [0] * s.height})
        run = types.SimpleNamespace(segments=seg, anchors=pl.DataFrame([], schema=schema), signature={"stand_in": True})
        return run, {"words": 1.0, "seconds": 1.0, "words_per_second": 1.0}

    monkeypatch.setattr(V, "profile_gold", profile_gold)
