"""``ddp sample``/``ddp select`` write valid JSON (an open bin edge or an infinite bound is ``"inf"``, as
``ddp stratify`` writes it, never a bare ``Infinity``), and a thin sample is said on stderr as well as in
the report and the sidecar. Hand-made profiles (no spaCy)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.cli.main import main

#: documents and the DDP of each of their segments: max DDP 0, 0, 0, 3, 7, 9
DOCS = {"a1": [0, 0], "a2": [0], "a3": [0, 0, 0], "b1": [0, 3], "c1": [7], "c2": [2, 9]}
BINS = [0.0, 1.0, 5.0, math.inf]


def strict(text: str) -> object:
    def refuse(token: str) -> object:
        raise ValueError(f"not JSON: {token}")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture()
def corpus(tmp_path: Path) -> tuple[Path, Path]:
    rows = [{"document_id": d, "segment_id": s, "domain": "news", "n_sentences": 1, "ddp": v, "first_sentence": s}
            for d, vs in DOCS.items() for s, v in enumerate(vs)]
    pl.DataFrame(rows).write_parquet(tmp_path / "p.parquet")
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"document_id": r["document_id"], "segment_id": r["segment_id"],
                                       "source": "x"}) + "\n" for r in rows), encoding="utf-8")
    ids = [{k: r[k] for k in ("document_id", "segment_id")} for r in rows]
    pl.DataFrame(ids).write_parquet(tmp_path / "in.parquet")
    return src, tmp_path / "p.parquet"


def per_bin() -> list[int]:
    """Documents per bin [low, high) by their max DDP, counted here."""
    return [sum(1 for vs in DOCS.values() if lo <= max(vs) < hi) for lo, hi in zip(BINS, BINS[1:])]


def test_sample_json_is_valid_with_an_open_bin(corpus: tuple[Path, Path], tmp_path: Path,
                                               capfd: pytest.CaptureFixture[str]) -> None:
    src, prof = corpus
    out = tmp_path / "s.jsonl"
    assert main(["sample", str(src), "--profile", str(prof), "--bins", "0,1,5,inf", "--per-bin", "1", "-o", str(out),
                 "-f", "json"]) == 0
    cap = capfd.readouterr()
    printed = strict(cap.out)
    side = strict((tmp_path / "s.jsonl.signature.json").read_text())
    for bins in (printed["bins"], printed["signature"]["report"], side["report"]):
        assert [(b["low"], b["high"]) for b in bins] == [(0.0, 1.0), (1.0, 5.0), (5.0, "inf")]
        assert [b["available"] for b in bins] == per_bin()
    assert side["bins"] == [0.0, 1.0, 5.0, "inf"]
    # Parquet: the signature in the metadata is valid JSON too
    pout = tmp_path / "s.parquet"
    assert main(["sample", str(tmp_path / "in.parquet"), "--profile", str(prof), "--bins", "0,1,5,inf",
                 "--per-bin", "1", "-o", str(pout)]) == 0
    sig = strict(pq.read_schema(pout).metadata[b"ddpcore.signature"].decode())
    assert sig["report"][-1]["high"] == "inf"


def test_select_with_an_infinite_bound_writes_valid_json(corpus: tuple[Path, Path], tmp_path: Path,
                                                         capfd: pytest.CaptureFixture[str]) -> None:
    src, prof = corpus
    out = tmp_path / "o.jsonl"
    assert main(["select", str(src), "--profile", str(prof), "--min-ddp", "3", "--max-ddp", "inf", "-o", str(out),
                 "-f", "json"]) == 0
    printed = strict(capfd.readouterr().out)
    side = strict((tmp_path / "o.jsonl.signature.json").read_text())
    assert side["criteria"]["max_ddp"] == "inf" == printed["signature"]["criteria"]["max_ddp"]
    assert len(out.read_text().splitlines()) == sum(v >= 3 for vs in DOCS.values() for v in vs)


def test_a_thin_sample_is_said_on_stderr(corpus: tuple[Path, Path], tmp_path: Path,
                                         capfd: pytest.CaptureFixture[str]) -> None:
    src, prof = corpus
    n = 2
    have = per_bin()  # [3, 1, 2]: only [1, 5) has fewer than 2 documents
    thin = [i for i, k in enumerate(have) if k < n]
    assert main(["sample", str(src), "--profile", str(prof), "--bins", "0,1,5,inf", "--per-bin", str(n),
                 "-o", str(tmp_path / "t.jsonl")]) == 0
    err = [ln for ln in capfd.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("ddp sample: note: "), err
    assert f"{len(thin)} of {len(have)} bins cannot be filled" in err[0]
    for i in range(len(have)):
        hi = "inf" if math.isinf(BINS[i + 1]) else f"{BINS[i + 1]:g}"
        shown = f"[{BINS[i]:g}, {hi}) {min(have[i], n)} of {n}"
        assert (shown in err[0]) == (i in thin), err[0]
    side = json.loads((tmp_path / "t.jsonl.signature.json").read_text())
    assert [not b["filled"] for b in side["report"]] == [k < n for k in have]
    # a full sample says nothing on stderr
    assert main(["sample", str(src), "--profile", str(prof), "--bins", "0,1,5,inf", "--per-bin", "1",
                 "-o", str(tmp_path / "f.jsonl")]) == 0
    assert capfd.readouterr().err.strip() == ""


def test_units_outside_every_bin_are_said_on_stderr(corpus: tuple[Path, Path], tmp_path: Path,
                                                    capfd: pytest.CaptureFixture[str]) -> None:
    src, prof = corpus
    outside = sum(1 for vs in DOCS.values() if not (1 <= max(vs) < 5))  # bins 1,5 only
    assert main(["sample", str(src), "--profile", str(prof), "--bins", "1,5", "--per-bin", "1",
                 "-o", str(tmp_path / "t.jsonl")]) == 0
    err = [ln for ln in capfd.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and f"{outside} documents lie outside every bin" in err[0], err
