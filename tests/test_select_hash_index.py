"""``ddp select`` pass 1 matches input rows to the profile by a 64-bit hash of the ids, checked
exactly. These tests force hash collisions (a weak hash patched in) and check that the result and
the error messages are those of an exact join: the expected values come from the same call with
the real hash (whose collisions are practically absent at this size), and the expected error
rows/ids are written by hand from the tiny inputs below."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ddpcore.curate import select as SEL
from ddpcore.errors import DDPDataError

REAL_HASH = SEL._id_hash


def rows(n: int = 30) -> list[dict]:
    return [dict(document_id=f"d{i // 4}", segment_id=i % 4, source=f"text {i}", domain="a" if i % 3 else "b")
            for i in range(n)]


def write(tmp: Path, inp: list[dict], prof_rows: list[dict]) -> tuple[Path, Path]:
    src = tmp / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in inp))
    prof = tmp / "ddp.parquet"
    pl.DataFrame([dict(document_id=r["document_id"], segment_id=r["segment_id"], domain=r["domain"],
                       ddp=(7 * i) % 5, first_sentence=i % 4, n_sentences=1)
                  for i, r in enumerate(prof_rows)]).write_parquet(prof)
    return src, prof


def weak(first_attempts: int):
    """A hash that maps every id to 3 values in the first ``first_attempts`` attempts, the real hash after."""
    def h(df: pl.DataFrame, cols, attempt: int = 0) -> np.ndarray:
        real = REAL_HASH(df, cols, attempt)
        return real if attempt >= first_attempts else real % np.uint64(3)
    return h


def test_profile_collisions_rehash_same_selection(tmp_path: Path, monkeypatch) -> None:
    src, prof = write(tmp_path, rows(), rows())
    crit = SEL.Criteria(top_share=0.3, with_context=True)
    want = SEL.select(src, prof, crit)  # real hash
    monkeypatch.setattr(SEL, "_id_hash", weak(1))  # attempt 0: 30 ids on 3 hashes -> rehash
    got = SEL.select(src, prof, crit)
    assert got.keep.tolist() == want.keep.tolist() and got.summary == want.summary


def as_d0(df: pl.DataFrame, cols, attempt: int = 0) -> np.ndarray:
    """The real hash, except that ids of document 'zz' hash as ('d0', segment % 2): ('zz', 0) and
    ('zz', 2) share the hash of the profile row ('d0', 0) while being other ids."""
    real = REAL_HASH(df, cols, attempt)
    zz = (df[cols.document].cast(pl.String) == "zz").to_numpy()
    if not zz.any():
        return real
    fake = df.with_columns(pl.lit("d0").alias(cols.document), pl.col(cols.segment).cast(pl.Int64) % 2)
    return np.where(zz, REAL_HASH(fake, cols, attempt), real)


def zz(seg: int) -> dict:
    return dict(rows()[0], document_id="zz", segment_id=seg)


def test_missing_row_colliding_with_profile_row_is_missing(tmp_path: Path, monkeypatch) -> None:
    # input rows 31, 32 (1-based) are ('zz', 0), ('zz', 2): not in the profile, both hashed like ('d0', 0)
    # -> not matched to ('d0', 0), not duplicates of each other: D636 naming row 31, 2 rows missing
    src, prof = write(tmp_path, rows() + [zz(0), zz(2)], rows())
    monkeypatch.setattr(SEL, "_id_hash", as_d0)
    with pytest.raises(DDPDataError, match=r"D636.*row 31: document 'zz', segment 0 is not in the profile .*"
                                           r"\(2 input row\(s\) missing\)"):
        SEL.select(src, prof, SEL.Criteria(top_share=0.5))


def test_true_duplicates_among_colliding_missing_rows(tmp_path: Path, monkeypatch) -> None:
    # rows 31 and 33 are the same id ('zz', 0); row 32 ('zz', 2) shares their hash: D113 names 31 and 33
    src, prof = write(tmp_path, rows() + [zz(0), zz(2), zz(0)], rows())
    monkeypatch.setattr(SEL, "_id_hash", as_d0)
    with pytest.raises(DDPDataError, match=r"D113.*rows 31 and 33.*document 'zz', segment 0"):
        SEL.select(src, prof, SEL.Criteria(top_share=0.5))


def test_collision_does_not_match_a_profile_row(tmp_path: Path, monkeypatch) -> None:
    # the input has ('zz', 0) instead of ('d0', 0): same hash, other id -> D636 for row 1 (not a match
    # that would leave the profile row ('d0', 0) "used")
    inp = rows()
    inp[0] = zz(0)
    src, prof = write(tmp_path, inp, rows())
    monkeypatch.setattr(SEL, "_id_hash", as_d0)
    with pytest.raises(DDPDataError, match=r"D636.*row 1: document 'zz', segment 0 is not in the profile"):
        SEL.select(src, prof, SEL.Criteria(top_share=0.5))


def test_profile_always_colliding_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    src, prof = write(tmp_path, rows(), rows())
    monkeypatch.setattr(SEL, "_id_hash", weak(99))
    with pytest.raises(DDPDataError, match=r"D637.*cannot index its ids"):
        SEL.select(src, prof, SEL.Criteria(top_share=0.5))
