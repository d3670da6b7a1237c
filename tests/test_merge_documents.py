"""``ddp merge --documents``: the documents shards of ``ddp profile --shard i/N --documents PATH``
merge into the documents table of an unsharded run (issue 9).

Documents are hashed to shards before batches are cut (``ddpcore.engines.run._plan``), so a
document's row is complete in its one shard; the merge orders the rows by
``document_first_row``. The expected table is the unsharded run's own ``--documents`` output,
and that one is checked against a plain loop over the unsharded segment table."""
from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from ddpcore.cli.main import main

MINI = Path(__file__).parent / "data" / "wmt25_mini.jsonl"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """An unsharded run and the 3 shards of the same input (documents interleaved in the input)."""
    tmp = tmp_path_factory.mktemp("merge-docs")
    src = tmp / "inter.jsonl"
    pl.read_ndjson(MINI).sample(fraction=1.0, shuffle=True, seed=7).write_ndjson(src)
    common = [str(src), "-q", "-j", "1"]
    assert main(["profile", *common, "-o", str(tmp / "ref.parquet"), "--documents", str(tmp / "refdocs.parquet")]) == 0
    for i in range(3):
        assert main(["profile", *common, "--shard", f"{i}/3", "-o", str(tmp / f"s{i}.parquet"),
                     "--documents", str(tmp / f"d{i}.parquet")]) == 0
    return tmp


def _loop_documents(seg: pl.DataFrame) -> list[dict]:
    """The documents table by a plain loop over segment rows (documents by first appearance)."""
    out: dict[str, dict] = {}
    for r in seg.iter_rows(named=True):
        d = out.setdefault(r["document_id"], {"document_id": r["document_id"], "domain": r["domain"], "ddp": [],
                                              "n_sentences": 0})
        d["ddp"].append(r["ddp"])
        d["n_sentences"] += r["n_sentences"]
    rows = []
    for d in out.values():
        v = d.pop("ddp")
        rows.append({**d, "n_segments": len(v), "max_ddp": max(v), "mean_ddp": sum(v) / len(v),
                     **{f"share_ddp_ge_{t}": sum(x >= t for x in v) / len(v) for t in (1, 5, 15)}})
    return rows


@pytest.mark.spacy_model
def test_merged_documents_equal_the_unsharded_run(runs: Path, capsys) -> None:
    shards = [str(runs / f"{x}{i}.parquet") for i in range(3) for x in "ds"]
    out = runs / "docs.parquet"
    assert main(["merge", *reversed(shards), "-o", str(runs / "seg.parquet"), "--documents", str(out), "-q"]) == 0
    ref = pl.read_parquet(runs / "refdocs.parquet")
    got = pl.read_parquet(out)
    assert_frame_equal(ref, got)
    assert_frame_equal(pl.read_parquet(runs / "ref.parquet"), pl.read_parquet(runs / "seg.parquet"))
    # the unsharded documents table itself, against a loop over the unsharded segments
    loop = _loop_documents(pl.read_parquet(runs / "ref.parquet"))
    assert [r["document_id"] for r in loop] == got["document_id"].to_list()
    for want, have in zip(loop, got.iter_rows(named=True)):
        for k, v in want.items():
            assert have[k] == v if not isinstance(v, float) else math.isclose(have[k], v, abs_tol=1e-12), (k, want, have)
    sig = json.loads(pq.read_metadata(out).metadata[b"ddpcore.signature"])
    assert "shard" not in sig and sig["merged_shards"] == 3
    assert len({pl.read_parquet(runs / f"d{i}.parquet").height for i in range(3)}) > 1  # the shards differ in size
    # --documents alone, and a text format with its sidecar
    csv = runs / "docs.csv"
    assert main(["merge", *[s for s in shards if "/d" in s], "--documents", str(csv), "-q"]) == 0
    assert_frame_equal(pl.read_csv(csv), ref, check_dtypes=False)
    assert (runs / "docs.csv.signature.json").exists()


@pytest.mark.spacy_model
def test_documents_shards_without_the_order_key(runs: Path, tmp_path: Path, capsys) -> None:
    """Documents shards written before they carried document_first_row are ordered from the segment
    shards; without those the merge says what to give."""
    old = []
    for i in range(3):
        t = pq.read_table(runs / f"d{i}.parquet")
        path = tmp_path / f"old{i}.parquet"
        pq.write_table(t.drop(["document_first_row"]), path)  # the schema metadata (signature) stays
        old.append(str(path))
    segs = [str(runs / f"s{i}.parquet") for i in range(3)]
    out = tmp_path / "docs.parquet"
    assert main(["merge", *old, *segs, "--documents", str(out), "-q"]) == 0
    assert_frame_equal(pl.read_parquet(runs / "refdocs.parquet"), pl.read_parquet(out))
    capsys.readouterr()
    assert main(["merge", *old, "--documents", str(tmp_path / "x.parquet")]) == 2
    err = capsys.readouterr().err
    assert "[D187]" in err and "segment shards" in err and not (tmp_path / "x.parquet").exists()


@pytest.mark.spacy_model
def test_documents_shards_that_do_not_fit(runs: Path, tmp_path: Path, capsys) -> None:
    # a document with rows in two shards: not the shards of one run
    d0 = pq.read_table(runs / "d0.parquet")
    d1 = pq.read_table(runs / "d1.parquet")
    bad = pl.concat([pl.from_arrow(d1), pl.from_arrow(d0).head(1)])
    t = bad.to_arrow().replace_schema_metadata(d1.schema.metadata)
    pq.write_table(t, tmp_path / "d1.parquet")
    files = [str(runs / "d0.parquet"), str(tmp_path / "d1.parquet"), str(runs / "d2.parquet")]
    assert main(["merge", *files, "--documents", str(tmp_path / "x.parquet")]) == 3
    err = capsys.readouterr().err
    first = pl.from_arrow(d0)["document_id"][0]
    assert "[D187]" in err and repr(first) in err and not (tmp_path / "x.parquet").exists()
    # a documents shard of another run (other settings): refused like the other tables
    assert main(["profile", str(MINI), "-q", "-j", "1", "--rules", "paper", "--shard", "1/3",
                 "-o", str(tmp_path / "p1.parquet"), "--documents", str(tmp_path / "pd1.parquet")]) == 0
    capsys.readouterr()
    files = [str(runs / "d0.parquet"), str(tmp_path / "pd1.parquet"), str(runs / "d2.parquet")]
    assert main(["merge", *files, "--documents", str(tmp_path / "x.parquet")]) == 3
    assert "[D176]" in capsys.readouterr().err
    # documents shards given without --documents: D177 names the option
    every = [str(runs / f"{x}{i}.parquet") for i in range(3) for x in "ds"]
    assert main(["merge", *every, "-o", str(tmp_path / "y.parquet")]) == 2
    assert "--documents PATH" in capsys.readouterr().err
