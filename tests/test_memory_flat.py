"""Memory flat in the corpus (issue 25 §3): the compact id index, the batch plan over document
runs and the streamed assembly give what the whole-table path gives.

Oracles (none shares code with what it checks):
- batches: :func:`ddpcore.engines.local.order_segments` + :func:`batches_from_frame` on the whole
  table read at once (the in-memory path: polars joins and sorts on the id strings), and a plain
  Python loop over rows for the first-appearance order;
- duplicate ids: the message of the whole-table check (``stage_input`` without the index, i.e.
  :func:`ddpcore.io.segments.check_unique_ids` over every id at once);
- assembly: the concatenated parts sorted by input row (polars), first rows per document by a loop;
- end to end: :func:`ddpcore.profile_anchors` (the in-memory profile).
No timing or RSS here: ``benchmarks/memory_table.py`` measures memory.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from ddpcore.engines.batch_plan import plan_batches
from ddpcore.engines.local import batches_from_frame, order_segments
from ddpcore.errors import DDPDataError
from ddpcore.io.id_index import DOC_A, DOC_B, IdIndex, canonical_ids
from ddpcore.io.segments import ROW, SegmentColumns
from ddpcore.io.sources import stage_input

COLS = SegmentColumns()
DATA = Path(__file__).parent / "data"
MINI = DATA / "wmt25_mini.jsonl"


@pytest.fixture(autouse=True)
def _small_jsonl_blocks(monkeypatch):
    """JSON Lines are staged in blocks of bytes: small blocks make several chunks of a small file."""
    import ddpcore.io.tables as tables

    monkeypatch.setattr(tables, "JSONL_CHUNK_BYTES", 120)


def _stage(tmp: Path, df: pl.DataFrame, fmt: str, chunk_rows: int, compact: bool = True, name: str = "in"):
    src = tmp / f"{name}.{fmt}"
    if fmt == "parquet":
        df.write_parquet(src, row_group_size=chunk_rows)
    else:
        df.write_ndjson(src)
    work = tmp / (f"{name}-w" if compact else f"{name}-w-old")
    return stage_input(src, COLS, work, chunk_rows=chunk_rows, index_path=work / "ids.parquet" if compact else None)


def _new_batches(staged, batch_chars: int) -> list[pl.DataFrame]:
    from ddpcore.engines.run import _batch_frames

    plan = plan_batches(staged.index, batch_chars)
    return [b.frame for b in _batch_frames(staged, plan, range(plan.n_batches))]


def _old_batches(df: pl.DataFrame, batch_chars: int) -> list[pl.DataFrame]:
    from ddpcore.io.segments import read_segments

    whole = read_segments(df, COLS)
    return [b.frame for b in batches_from_frame(order_segments(whole, COLS), COLS, batch_chars)]


@st.composite
def tables(draw) -> pl.DataFrame:
    """Segment tables with documents interleaved or contiguous and every kind of segment id."""
    n = draw(st.integers(1, 40))
    n_docs = draw(st.integers(1, 6))
    docs = draw(st.lists(st.integers(0, n_docs - 1), min_size=n, max_size=n))
    if draw(st.booleans()):
        docs = sorted(docs)  # contiguous documents (one run each)
    kind = draw(st.sampled_from(["int", "str-int", "str", "float"]))
    counters: dict[int, int] = {}
    segs: list[object] = []
    perm = draw(st.permutations(range(n)))  # unique within a document, in no particular order
    for d, p in zip(docs, perm):
        counters[d] = counters.get(d, 0) + 1
        v = p * 3 + 1
        segs.append({"int": v, "str-int": f" {v}", "str": f"s{v}x", "float": v / 4}[kind])
    if kind == "str-int" and draw(st.booleans()):
        segs[draw(st.integers(0, n - 1))] = "not-a-number"  # one id that does not parse: input order
    lengths = draw(st.lists(st.integers(1, 60), min_size=n, max_size=n))
    doc_ids = [f"d{d}" for d in docs]
    return pl.DataFrame({"document_id": doc_ids, "segment_id": segs,
                         "source": [("w " * (k // 2 + 1)).strip() + "." for k in lengths]})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(df=tables(), fmt=st.sampled_from(["jsonl", "parquet"]), chunk_rows=st.integers(1, 9),
       batch_chars=st.integers(1, 300))
def test_batches_equal_the_whole_table_path(tmp_path_factory, df, fmt, chunk_rows, batch_chars):
    tmp = tmp_path_factory.mktemp("plan")
    staged = _stage(tmp, df, fmt, chunk_rows)
    new = _new_batches(staged, batch_chars)
    old = _old_batches(staged.read_rows(np.arange(staged.n_rows)).drop(ROW), batch_chars)
    assert len(new) == len(old)
    for a, b in zip(new, old):
        assert_frame_equal(a.select(sorted(a.columns)), b.select(sorted(b.columns)), check_dtypes=False)
    # the plan's document order is first appearance, by a plain loop over rows
    plan = plan_batches(staged.index, batch_chars)
    first: dict[object, int] = {}
    for r, d in enumerate(df["document_id"].to_list()):
        first.setdefault(d, r)
    assert plan.doc_first_row.tolist() == sorted(first.values())
    assert plan.n_segments == df.height == int(plan.seg_per_batch.sum())


def test_input_order_within_documents_is_kept_when_an_id_does_not_parse(tmp_path):
    # segment ids that all parse sort numerically; one that does not makes the whole input keep row order
    df = pl.DataFrame({"document_id": ["a", "b", "a", "a"], "segment_id": ["10", "1", "2", "x"],
                       "source": ["One.", "Two.", "Three.", "Four."]})
    staged = _stage(tmp_path, df, "jsonl", chunk_rows=2)
    assert staged.index.segment_ints is False
    (batch,) = _new_batches(staged, 10**6)
    assert batch[ROW].to_list() == [0, 2, 3, 1]
    staged = _stage(tmp_path, df.with_columns(pl.Series("segment_id", ["10", "1", "2", "3"])), "jsonl", 2,
                    name="ints")
    (batch,) = _new_batches(staged, 10**6)
    assert batch[ROW].to_list() == [2, 3, 0, 1]  # a: 2, 3, 10; then b


def test_canonical_ids_compare_as_the_unified_dtype():
    ints = canonical_ids(pl.Series([1, 2, 2**62 + 1]))
    floats = canonical_ids(pl.Series([1.0, 2.0, 2.5]))
    assert ints[:2].to_list() == floats[:2].to_list()  # 1 == 1.0 as after widening to float
    assert floats[2] != ints[2] and len(set(canonical_ids(pl.Series([0.5, 2.5, -0.0, 0.0])).to_list())) == 3
    assert canonical_ids(pl.Series([2**62, 2**62 + 1])).n_unique() == 2  # large integers stay distinct


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_duplicate_ids_across_chunks_give_the_whole_table_message(tmp_path, fmt):
    df = pl.DataFrame({"document_id": ["a", "b", "c", "b", "a", "c"], "segment_id": [1, 1, 1, 2, 1, 1],
                       "source": ["x."] * 6})
    msgs = []
    for compact in (False, True):
        with pytest.raises(DDPDataError) as exc:
            _stage(tmp_path, df, fmt, chunk_rows=2, compact=compact)
        msgs.append((exc.value.code, str(exc.value)))
    assert msgs[0] == msgs[1]
    assert msgs[1][0] == "D113" and "rows 1 and 3" in msgs[1][1], msgs


def test_duplicate_across_integer_and_float_chunks_is_found(tmp_path):
    # chunk 1 has integer segment ids, chunk 2 floats: widened to float, 1 and 1.0 are the same id
    src = tmp_path / "in.jsonl"
    src.write_text('{"document_id": "a", "segment_id": 1, "source": "x."}\n'
                   '{"document_id": "a", "segment_id": 2, "source": "y."}\n'
                   '{"document_id": "a", "segment_id": 1.0, "source": "z."}\n'
                   '{"document_id": "a", "segment_id": 3.5, "source": "w."}\n')
    msgs = []
    for work in ("old", "new"):
        with pytest.raises(DDPDataError) as exc:
            stage_input(src, COLS, tmp_path / work, chunk_rows=2,
                        index_path=(tmp_path / work / "ids.parquet") if work == "new" else None)
        msgs.append(str(exc.value))
    assert msgs[0] == msgs[1] and "[D113]" in msgs[1] and "rows 1 and 3" in msgs[1], msgs


def test_hash_collisions_between_distinct_pairs_are_not_duplicates(tmp_path, monkeypatch):
    # every pair hashes alike: all rows are candidates, the values say there is no duplicate
    import ddpcore.io.id_index as ix

    real = ix.index_chunk

    def colliding(frame, cols, chars, units):
        arrays, ints = real(frame, cols, chars, units)
        arrays[ix.PAIR] = np.zeros_like(arrays[ix.PAIR])
        return arrays, ints

    monkeypatch.setattr(ix, "index_chunk", colliding)
    df = pl.DataFrame({"document_id": ["a", "b", "a"], "segment_id": [1, 1, 2], "source": ["x."] * 3})
    staged = _stage(tmp_path, df, "jsonl", chunk_rows=2)
    assert staged.index.duplicate_candidates().tolist() == [0, 1, 2]
    with pytest.raises(DDPDataError, match=r"\[D113\].*rows 1 and 3"):
        _stage(tmp_path, df.with_columns(pl.Series("segment_id", [1, 1, 1])), "jsonl", 2, name="dup")


def test_documents_sharing_a_key_stop_the_batch_with_d855(tmp_path, monkeypatch):
    import ddpcore.io.id_index as ix

    real = ix.index_chunk

    def same_key(frame, cols, chars, units):
        arrays, ints = real(frame, cols, chars, units)
        arrays[DOC_A] = np.full_like(arrays[DOC_A], 7)
        arrays[DOC_B] = np.full_like(arrays[DOC_B], 9)
        return arrays, ints

    monkeypatch.setattr(ix, "index_chunk", same_key)
    df = pl.DataFrame({"document_id": ["a", "b", "a"], "segment_id": [2, 1, 1], "source": ["x."] * 3})
    staged = _stage(tmp_path, df, "jsonl", chunk_rows=2)
    with pytest.raises(DDPDataError, match=r"\[D855\].*'a' and 'b'|\[D855\].*'b' and 'a'"):
        _new_batches(staged, 10**6)


def test_index_file_is_checked_when_reopened(tmp_path):
    df = pl.DataFrame({"document_id": ["a", "b"], "segment_id": [1, 1], "source": ["x.", "y."]})
    staged = _stage(tmp_path, df, "jsonl", chunk_rows=1)
    meta = staged.index.to_json()
    again = IdIndex.open(staged.index.path, meta)
    assert again == staged.index
    with pytest.raises(ValueError):
        IdIndex.open(staged.index.path, {**meta, "n_rows": 3})
    staged.index.path.write_bytes(b"")
    with pytest.raises(ValueError):
        IdIndex.open(staged.index.path, meta)


# ------------------------------------------------------------------------- the assembly


def _parts(tmp: Path, batches: list[list[int]], shuffled_writes: bool) -> tuple[Path, pl.DataFrame]:
    """Hand-made parts of batches holding the given input rows (documents whole per batch)."""
    from ddpcore import schema
    from ddpcore.io.sinks import write_part

    parts = tmp / "parts"
    parts.mkdir()
    rows_all = []
    order = list(range(len(batches)))
    if shuffled_writes:
        order = order[::-1]  # the last batch finishes first
    for k in order:
        rows = sorted(batches[k])
        seg = pl.DataFrame({ROW: pl.Series(rows, dtype=pl.UInt32), "document_id": [f"d{r % 3 + 3 * k}" for r in rows],
                            "segment_id": rows, "domain": ["news" if r % 2 else "lit" for r in rows],
                            schema.DDP: [r % 4 for r in rows], schema.N_TOKENS: [5] * len(rows)})
        anc = pl.DataFrame({"document_id": [f"d{r % 3 + 3 * k}" for r in rows], "anchor": [f"a{r}" for r in rows]})
        write_part(parts / f"{k:06d}.segments.parquet", seg)
        write_part(parts / f"{k:06d}.anchors.parquet", anc)
        write_part(parts / f"{k:06d}.sentences.parquet", anc.rename({"anchor": "sentence"}))
        (parts / f"{k:06d}.done").write_text(json.dumps({"segments": len(rows), "anchors": len(rows),
                                                         "min_row": rows[0], "max_row": rows[-1], "words": 0}))
        rows_all.append(seg)
    return parts, pl.concat(rows_all)


@pytest.mark.parametrize("shard_keys", [False, True])
@pytest.mark.parametrize("shuffled", [False, True])
def test_assembly_streams_segments_in_input_order(tmp_path, monkeypatch, shard_keys, shuffled):
    import ddpcore.engines.assembly as asm
    from ddpcore.io.outputs import OutputSet, check_outputs

    monkeypatch.setattr(asm, "ASSEMBLE_ROWS", 4)  # several ranges, each touching several parts
    batches = [[0, 3, 6, 9, 12], [1, 4, 7, 10], [2, 5, 8, 11, 13]]  # rows interleave across batches
    parts, whole = _parts(tmp_path, batches, shuffled)
    out = tmp_path / "out"
    out.mkdir()
    t = check_outputs([("-o", out / "s.parquet"), ("--anchors", out / "a.parquet")], [])
    targets = {"segments": t[0], "anchors": t[1], "sentences": None}
    outs = OutputSet(tmp_path / "commit.json")
    summary, n_anchors = asm.assemble_outputs(parts, 3, targets, {"x": 1}, 14, None, COLS, outs.temp,
                                              shard_keys=shard_keys)
    outs.commit()
    seg = pl.read_parquet(out / "s.parquet")
    expected = whole.sort(ROW)
    if shard_keys:
        assert seg["input_row"].to_list() == list(range(14))
        expected = expected.rename({ROW: "input_row"}).with_columns(pl.col("input_row").cast(pl.Int64))
    else:
        expected = expected.drop(ROW)
    assert_frame_equal(seg, expected)
    assert n_anchors == 14 and summary.filter(pl.col("group") == "all")["segments"].item() == 14
    anc = pl.read_parquet(out / "a.parquet")
    assert anc.height == 14
    if shard_keys:  # the first input row of each document, by a loop over the segment rows
        first: dict[str, int] = {}
        for r, d in zip(whole[ROW].to_list(), whole["document_id"].to_list()):
            first[d] = min(first.get(d, r), r)
        assert anc["document_first_row"].to_list() == [first[d] for d in anc["document_id"].to_list()]
    assert sorted(p.name for p in out.iterdir()) == ["a.parquet", "s.parquet"]  # no temporaries left


# ------------------------------------------------------------------------------ end to end


def _run(tmp: Path, src: Path, **kw):
    from ddpcore.anchors.rules import get_rules
    from ddpcore.engines.local import Settings
    from ddpcore.engines.run import ROLES, profile_to_files
    from ddpcore.io.outputs import check_outputs

    names = [tmp / "s.parquet", tmp / "a.parquet", tmp / "t.parquet"]
    t = check_outputs([("-o", names[0]), ("--anchors", names[1]), ("--sentences", names[2])], [src])
    rep = profile_to_files(src, dict(zip(ROLES, t)), cols=COLS, settings=Settings(rules=get_rules(None)),
                           n_process=1, **kw)
    return rep, names


@pytest.mark.spacy_model
def test_interleaved_run_equals_the_in_memory_profile_and_leaves_no_work_folder(tmp_path):
    from ddpcore.api import profile_anchors
    from ddpcore.engines.run import work_dir_for

    df = pl.read_ndjson(MINI).sample(fraction=1.0, shuffle=True, seed=11)
    df = df.with_columns(pl.col("segment_id").cast(pl.String))  # text ids that all parse
    src = tmp_path / "in.jsonl"
    df.write_ndjson(src)
    out = tmp_path / "out"
    out.mkdir()
    rep, names = _run(out, src, batch_chars=700)
    assert rep.n_batches > 2
    ref = profile_anchors(src)
    for path, exp in zip(names, (ref.segments, ref.anchors, ref.sentences)):
        assert_frame_equal(exp, pl.read_parquet(path))
    assert not work_dir_for(names[0].resolve()).exists()
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in names)


@pytest.mark.spacy_model
def test_failures_leave_no_output_and_no_temporary(tmp_path, monkeypatch):
    from ddpcore.engines.run import work_dir_for

    # bad data (a duplicate id two chunks apart): nothing written, no work folder
    df = pl.read_ndjson(MINI)
    dup = pl.concat([df, df.head(1)])
    src = tmp_path / "dup.jsonl"
    dup.write_ndjson(src)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(DDPDataError, match=r"\[D113\]"):
        _run(out, src)
    assert list(out.iterdir()) == []
    # a crash while the outputs are assembled: no output, no temporary; the work folder stays for --resume
    import ddpcore.io.sinks as sinks

    real = sinks.Sink.write
    calls = {"n": 0}

    def failing(self, piece):
        calls["n"] += 1
        if calls["n"] > 1:
            raise OSError(28, "No space left on device")
        return real(self, piece)

    monkeypatch.setattr(sinks.Sink, "write", failing)
    with pytest.raises(OSError):
        _run(out, MINI, batch_chars=1500)
    work = work_dir_for(Path(os.path.abspath(out / "s.parquet")))
    assert [p.name for p in out.iterdir() if not p.name.startswith(".")] == []
    assert [p.name for p in out.iterdir()] == [work.name] and (work / "ids.parquet").exists()
    monkeypatch.setattr(sinks.Sink, "write", real)
    rep, names = _run(out, MINI, batch_chars=1500, resume=True)  # and the resumed run completes
    assert rep.resumed_batches == rep.n_batches and not work.exists()
