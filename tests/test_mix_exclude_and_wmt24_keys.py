"""``ddp mix``: ``--exclude-system`` and the segment keys of ``--reader wmt24``.

1. ``--exclude-system NAME`` with a NAME that is not a system of the table (a typo: ``refa`` for ``refA``) was
   ignored in silence (the pool kept ``refA``, exit 0), while ``ddp blindness --exclude-system refa`` refuses
   it (D704). Now mix refuses it the same way (D704, exit 3, one line naming the file and the systems there),
   and the flag means one thing with ``--pool`` too: the pool minus the excluded systems (docs/mix-blindness.md).
2. ``ddp mix --reader wmt24`` wrote ``segment_id`` = the line number of the files (canary included), while
   ``ddp profile --reader wmt24`` and the WMT24 ESA scores key a segment by its 0-based position within its
   document (docs/readers.md), so MIX rows did not join to the profile or the scores of the same test set.
   Now ``segment_id`` is the position and ``line_id`` the line, as the profile reader writes them.
"""
from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ddpcore.cli.main import main

SYSTEMS = ["refA", "sysA", "sysB", "sysC"]


def _outputs(path: Path) -> Path:
    rows = [{"document_id": d, "segment_id": i, "system": s, "text": f"{s} {d}/{i}"}
            for d, n in (("d1", 5), ("d2", 4)) for i in range(n) for s in SYSTEMS]
    pl.DataFrame(rows).write_ndjson(path)
    return path


# ------------------------------------------------------------------ 1. --exclude-system


def test_exclude_system_typo_is_d704_as_in_blindness(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _outputs(tmp_path / "outputs.jsonl")
    out = tmp_path / "ex.parquet"
    assert main(["mix", str(src), "--exclude-system", "refa", "-o", str(out), "-f", "text"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "[D704]" in err[0] and str(src) in err[0] and "'refa'" in err[0]
    assert "systems: " + ", ".join(sorted(SYSTEMS)) in err[0]
    assert not out.exists() and not (tmp_path / "ex.assignment.parquet").exists()
    # ddp blindness gives the same code for the same mistake
    scores = pl.read_ndjson(src).with_columns(condition=pl.lit("DOC"), score=pl.col("segment_id").cast(pl.Float64))
    scores = pl.concat([scores, scores.with_columns(condition=pl.lit("MIX"))])
    scores.write_parquet(tmp_path / "scores.parquet")
    assert main(["blindness", str(tmp_path / "scores.parquet"), "--margin", "1", "--exclude-system", "refa",
                 "--n-boot", "20", "--n-boot-cluster", "10"]) == 3
    assert "[D704]" in capsys.readouterr().err


def test_exclude_system_leaves_the_system_out_of_the_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _outputs(tmp_path / "outputs.jsonl")
    cases = [(["--exclude-system", "refA"], ["sysA", "sysB", "sysC"]),
             (["--exclude-system", "refA", "--exclude-system", "sysC"], ["sysA", "sysB"]),
             # with --pool: the pool minus the excluded systems (was: --exclude-system ignored)
             (["--pool", "sysA,sysB,refA", "--exclude-system", "refA"], ["sysA", "sysB"])]
    for k, (flags, want) in enumerate(cases):
        out = tmp_path / f"m{k}.parquet"
        assert main(["mix", str(src), *flags, "-o", str(out)]) == 0, flags
        summary = json.loads(capsys.readouterr().out)
        excluded = [flags[i + 1] for i, f in enumerate(flags) if f == "--exclude-system"]
        assert summary["pool"] == want and summary["signature"]["exclude_systems"] == excluded
        mix = pl.read_parquet(out)
        assert sorted(mix["system"].unique()) == want and sorted(mix["source_system"].unique()) == want
        assert not set(excluded) & set(mix["source_system"].to_list())


# ------------------------------------------------------------------ 2. --reader wmt24 keys

DOCS = ["news\td1", "news\td1", "news\td1", "speech\td2", "canary\tcanary", "news\td3", "news\td3"]


def _wmt24(tmp_path: Path) -> tuple[Path, Path, Path]:
    w = tmp_path / "w24"
    (w / "outs").mkdir(parents=True)
    (w / "en.docs").write_text("\n".join(DOCS) + "\n")
    for s in ("sysA", "sysB", "refA"):
        (w / "outs" / f"{s}.txt").write_text("".join(f"{s} line {i}\n" for i in range(len(DOCS))))
    (w / "en.txt").write_text("".join(f"John went home on day {i}. He slept.\n" for i in range(len(DOCS))))
    return w / "en.docs", w / "outs", w / "en.txt"


def _expected_keys() -> list[tuple[str, int, int]]:
    """(document, position within the document, line) of every non-canary line, counted by hand."""
    seen: dict[str, int] = {}
    keys = []
    for line, entry in enumerate(DOCS):
        dom, doc = entry.split("\t")
        if (dom, doc) == ("canary", "canary"):
            continue
        keys.append((doc, seen.get(doc, 0), line))
        seen[doc] = seen.get(doc, 0) + 1
    return keys


def test_wmt24_mix_keys_are_positions_within_the_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs, outs, source = _wmt24(tmp_path)
    out = tmp_path / "w.csv"
    assert main(["mix", "--reader", "wmt24", "--docs", str(docs), "--outputs", str(outs), "-o", str(out),
                 "-f", "text"]) == 0
    capsys.readouterr()
    mix = pl.read_csv(out)
    assert mix.columns[:3] == ["document_id", "segment_id", "line_id"]
    want = _expected_keys()
    assert sorted(set(mix.select("document_id", "segment_id", "line_id").iter_rows())) == sorted(want)
    d3 = mix.filter(pl.col("document_id") == "d3")
    assert sorted(set(d3["segment_id"])) == [0, 1] and sorted(set(d3["line_id"])) == [5, 6]
    # the text of a MIX row is its source system's line `line_id` (the line number is kept right)
    assert (mix["text"] == mix["source_system"] + " line " + mix["line_id"].cast(pl.String)).all()
    asg = pl.read_csv(tmp_path / "w.assignment.csv")
    assert sorted(set(asg.select("document_id", "segment_id", "line_id").iter_rows())) == sorted(want)
    # the keys ddp profile --reader wmt24 gives the same source lines (its reader, without parsing)
    from ddpcore.io.readers import iter_aligned_lines
    from ddpcore.schema import SegmentColumns

    prof = pl.concat(list(iter_aligned_lines(source, docs, SegmentColumns(), wmt24=True)))
    assert sorted(prof.select("document_id", "segment_id", "line_id").iter_rows()) == sorted(want)


def test_wmt24_mix_pairs_with_doc_scores_in_blindness(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The documented flow: DOC scores keyed as the profile / the ESA scores (position within the document),
    MIX scores from the ddp mix table; ddp blindness pairs every MIX row with its DOC translation."""
    docs, outs, _ = _wmt24(tmp_path)
    out = tmp_path / "w.parquet"
    assert main(["mix", "--reader", "wmt24", "--docs", str(docs), "--outputs", str(outs), "-o", str(out)]) == 0
    capsys.readouterr()
    mix = pl.read_parquet(out)
    systems = ["refA", "sysA", "sysB"]
    doc_rows = [{"document_id": d, "segment_id": p, "system": s, "text": f"{s} line {line}"}
                for d, p, line in _expected_keys() for s in systems]
    # a function of the translation (system effect + line): the same translation scores the same
    score = (pl.col("text").str.slice(0, 4).replace_strict({"refA": 0, "sysA": 10, "sysB": 20}, return_dtype=pl.Int64)
             + pl.col("text").str.slice(-1).cast(pl.Int64)).cast(pl.Float64)
    table = pl.concat([
        pl.DataFrame(doc_rows).with_columns(condition=pl.lit("DOC"), source_system=pl.col("system"), score=score),
        mix.select("document_id", "segment_id", "system", "text", "source_system")
           .with_columns(condition=pl.lit("MIX"), score=score),
    ], how="diagonal")
    table.write_parquet(tmp_path / "scores.parquet")
    assert main(["blindness", str(tmp_path / "scores.parquet"), "--margin", "1", "--n-boot", "50",
                 "--n-boot-cluster", "20"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert not [w for w in res["warnings"] if "left out of the paired TOST" in w], res["warnings"]
    tost = res["evidence"]["tost"]
    # every (document, segment, system) a MIX row used pairs with its DOC row: same translation, same score
    n_pairs = mix.select("document_id", "segment_id", "source_system").unique().height
    assert tost["n"] == n_pairs and tost["unpaired_b"] == 0
    assert tost["unpaired_a"] == len(doc_rows) - n_pairs  # DOC translations no MIX document used (short docs)
    assert tost["mean_diff"] == 0.0
