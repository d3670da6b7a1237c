"""Defects noticed in the bug hunts of 2026-12-07 and left alone then, now fixed.

1. ``ddp blindness`` on a table of one document stopped with ``[D364] <table>: ... use unit='segment'
   (ddp stats tau --unit segment)``: the error of the tau bootstrap it calls, naming no file and advising
   another command. The ranking and cluster parts resample documents, so with one document they are now
   skipped like with one system: a D702 note on stderr and in the JSON (``warnings``, ``evidence.skipped``),
   the verdict resting on the paired TOST; ``--strict`` makes it the D702 error.
2. ``ddp report --anchors`` read a null ``first_sentence`` / ``n_sentences`` of the profile as 0 in its
   explain blocks (a wrong sentence placement, exit 0); ``ddp select`` refused the same with D910. Both now
   use one check, :func:`ddpcore.io.profiles.check_sentence_counts`.
3. ``ddp metric-s -f tsv -o FILE`` printed the summary as JSON; it is now one TSV row under its header.
4. ``ddp stats``/``compare``/``blindness``/``mix`` JSON: a NaN reaching the writer was written as the
   invalid token ``NaN``; the payload now goes through :func:`ddpcore.signature.json_safe` (NaN as null)
   and ``allow_nan=False``.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import polars as pl
import pytest

from ddpcore.cli.main import main

BL = ["--margin", "1", "--n-boot", "60", "--n-boot-cluster", "20"]


def _blind_table(n_docs: int) -> pl.DataFrame:
    rows = [{"document_id": f"d{d}", "segment_id": i, "system": s, "source_system": s}
            for d in range(n_docs) for i in range(6) for s in ("sysA", "sysB", "sysC")]
    o = pl.DataFrame(rows).with_columns(condition=pl.lit("DOC"))
    t = pl.concat([o, o.with_columns(condition=pl.lit("MIX"))])
    return t.with_columns(score=(pl.int_range(pl.len()) % 7).cast(pl.Float64))


def test_blindness_one_document_skips_the_ranking_with_a_note(tmp_path: Path, capsys) -> None:
    path = tmp_path / "one.parquet"
    _blind_table(1).write_parquet(path)
    assert main(["blindness", str(path), *BL]) == 0
    cap = capsys.readouterr()
    out = json.loads(cap.out)
    assert "D364" not in cap.err and "1 document: no ranking and no clusters" in cap.err
    assert any("1 document: no ranking" in w for w in out["warnings"])
    skipped = out["evidence"]["skipped"]
    assert "1 document" in skipped["ranking"] and "1 document" in skipped["clusters"]
    assert out["evidence"]["ranking"] is None and out["evidence"]["clusters"] is None
    assert out["evidence"]["tost"]["p_value"] is not None  # the verdict rests on the paired TOST


def test_blindness_one_document_strict_is_d702(tmp_path: Path, capsys) -> None:
    path = tmp_path / "one.parquet"
    _blind_table(1).write_parquet(path)
    assert main(["blindness", str(path), *BL, "--strict"]) == 3
    err = capsys.readouterr().err
    assert "[D702]" in err and "score at least 2 documents" in err


def test_blindness_two_documents_still_ranks(tmp_path: Path, capsys) -> None:
    """The skip is for one document only: two documents keep the tau bootstrap and the clusters."""
    path = tmp_path / "two.parquet"
    _blind_table(2).write_parquet(path)
    assert main(["blindness", str(path), *BL]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["evidence"]["ranking"] is not None and "ranking" not in out["evidence"]["skipped"]


# ------------------------------------------------------------------ 2. report: null sentence counts

def _report_inputs(tmp_path: Path, column: str, value) -> tuple[Path, Path]:
    from tests.test_report_run_check import RUN, _anchors_df, _profile_df, _write

    prof = _profile_df().with_columns(pl.when(pl.col("segment_id") == 1).then(value).otherwise(pl.col(column))
                                      .alias(column))
    return (_write(prof, tmp_path / "ddp.parquet", RUN), _write(_anchors_df(), tmp_path / "anchors.parquet", RUN))


@pytest.mark.parametrize("column", ["first_sentence", "n_sentences"])
def test_report_refuses_a_null_sentence_count_with_anchors(tmp_path: Path, capsys, column: str) -> None:
    pytest.importorskip("matplotlib")
    p, a = _report_inputs(tmp_path, column, None)
    assert main(["report", str(p), "--anchors", str(a), "-o", str(tmp_path / "r.html")]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "[D910]" in err[0] and f"{p}, row 2, column {column}" in err[0], err
    assert not (tmp_path / "r.html").exists()


def test_report_without_anchors_does_not_need_the_counts(tmp_path: Path, capsys) -> None:
    pytest.importorskip("matplotlib")
    p, _ = _report_inputs(tmp_path, "first_sentence", None)
    assert main(["report", str(p), "-o", str(tmp_path / "r.html")]) == 0


def test_select_uses_the_shared_check(tmp_path: Path) -> None:
    from ddpcore.errors import DDPDataError
    from ddpcore.io.profiles import check_sentence_counts

    df = pl.DataFrame({"first_sentence": [0, 2, None], "n_sentences": [2, 2, 1]})
    with pytest.raises(DDPDataError, match=r"--profile p.parquet, row 3, column first_sentence") as e:
        check_sentence_counts(df, ["n_sentences", "first_sentence"], "--profile p.parquet")
    assert e.value.code == "D910"
    check_sentence_counts(df.head(2), ["n_sentences", "first_sentence"], "x")  # whole numbers pass
    for bad in ([0, -1], [0.5, 1.0], ["0", "x"]):
        with pytest.raises(DDPDataError):
            check_sentence_counts(pl.DataFrame({"n_sentences": bad}), ["n_sentences"], "x")


# ------------------------------------------------------------------ 3. metric-s -f tsv -o

def test_metric_s_tsv_summary_with_output(tmp_path: Path, capsys) -> None:
    src = Path(__file__).parent / "data" / "metric_s_judgements.jsonl"
    out = tmp_path / "rows.tsv"
    assert main(["metric-s", str(src), "-f", "tsv", "-o", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2, lines  # a header and one row, not JSON
    row = dict(zip(lines[0].split("\t"), lines[1].split("\t")))
    assert row["output"] == str(out) and int(row["n_rows"]) == pl.read_csv(out, separator="\t").height
    assert main(["metric-s", str(src), "-f", "json", "-o", str(tmp_path / "rows2.tsv")]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert float(row["mean_total"]) == summary["mean_total"] and int(row["n_errors"]) == summary["n_errors"]


# ------------------------------------------------------------------ 4. strict JSON

def _strict(text: str):
    def no(c):
        raise AssertionError(f"invalid JSON token {c}")
    return json.loads(text, parse_constant=no)


def test_stats_json_writes_nan_as_null(capsys) -> None:
    from ddpcore.cli.stats import _emit

    args = argparse.Namespace(output_format="json", stats_command="tau")
    _emit(args, {"tau": float("nan"), "ci": [float("inf"), 1.0], "signature": {}}, "", [])
    got = _strict(capsys.readouterr().out)
    assert got["tau"] is None and got["ci"] == ["inf", 1.0]


def test_compare_json_writes_nan_as_null() -> None:
    from ddpcore.cli.stats_compare import render

    assert _strict(render(None, "json", {"delta": float("nan")})) == {"delta": None}


# ------------------------------------------------------------------ 5. found by the round-3 hunters, left to me

def test_an_empty_cache_folder_is_d183(tmp_path: Path, capsys, monkeypatch) -> None:
    """``--cache ''`` (and ``cache=''``) made the current folder the parse cache in silence (``Path('')`` is
    ``.``); ``ddp cache clear --cache ''`` would have worked on it."""
    from ddpcore.errors import DDPUsageError
    from ddpcore.pipeline.cache import resolve_cache

    monkeypatch.chdir(tmp_path)
    for value in ("", "  "):
        with pytest.raises(DDPUsageError) as e:
            resolve_cache(value)
        assert e.value.code == "D183"
    assert main(["cache", "info", "--cache", ""]) == 2
    assert "[D183]" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    assert resolve_cache(str(tmp_path / "c")) == tmp_path / "c" and resolve_cache(False) is None


def test_a_nan_id_is_a_missing_id(tmp_path: Path) -> None:
    """A NaN in a float id column was taken as an id (a null one is D112)."""
    from ddpcore.errors import DDPDataError
    from ddpcore.io.segments import SegmentColumns, read_segments

    df = pl.DataFrame({"document_id": ["d", "d"], "segment_id": [1.0, float("nan")], "source": ["A b.", "C d."]})
    with pytest.raises(DDPDataError, match=r"t.parquet, row 2, column 'segment_id': missing id \(NaN\)") as e:
        read_segments(df, SegmentColumns(), name="t.parquet")
    assert e.value.code == "D112"
    read_segments(df.head(1), SegmentColumns(), name="t.parquet")  # a float id that is a number is kept


def test_reserved_input_columns_are_d265(tmp_path: Path, capsys) -> None:
    """An input column named ``__doc`` was dropped from the profile in silence (the pipeline's own batch
    column of that name replaced it); ``__row`` was already refused. Other ``__`` names are kept."""
    from ddpcore.io.segments import RESERVED_COLUMNS
    from ddpcore.pipeline.arrays import DOC

    assert DOC in RESERVED_COLUMNS
    path = tmp_path / "res.parquet"
    pl.DataFrame({"document_id": ["d"], "segment_id": [1], "source": ["Mary came."], "__doc": ["x"]}).write_parquet(path)
    assert main(["profile", str(path), "-o", str(tmp_path / "o.parquet"), "-q", "--no-cache"]) == 3
    err = capsys.readouterr().err
    assert "[D265]" in err and "column '__doc'" in err and not (tmp_path / "o.parquet").exists()


def test_a_corrupted_shard_that_cannot_be_removed_is_not_said_removed(tmp_path: Path, monkeypatch) -> None:
    """A read-only cache: the warning said "removed" while the corrupted shard stayed; it now says it could
    not be removed, and how to clear it (the shard is still skipped and its units parsed again)."""
    import ddpcore.pipeline.cache as C
    from tests.test_cache import FakeParser, fake_arrays, same_arrays, shard_files

    texts = ["one", "two three"]
    C.CachedParse(FakeParser(), tmp_path)(texts)
    (shard,) = shard_files(tmp_path)
    shard.write_bytes(shard.read_bytes()[:100])  # truncated
    real_unlink = Path.unlink

    def refuse(self: Path, *a, **k) -> None:
        if self == shard:
            raise PermissionError(13, "Permission denied")
        return real_unlink(self, *a, **k)

    monkeypatch.setattr(Path, "unlink", refuse)
    seen: list[str] = []
    run = C.CachedParse(FakeParser(), tmp_path, warn=seen.append)
    assert same_arrays(run(texts), fake_arrays(texts)) and run.misses == 2
    assert len(seen) == 1 and "could not be removed (Permission denied" in seen[0] and "; removed" not in seen[0]
    assert shard.exists()


def test_conll2012_short_lines_with_a_coref_column_are_refused(tmp_path: Path) -> None:
    """A simplified CoNLL-2012 layout (fewer than 12 columns) whose last column is coreference: the reader
    reads coreference only from the 12-column layout, so this gave a gold without a single mention (every
    gold distance 0) and exit 0. Short lines without such a column are still read."""
    from ddpcore.errors import DDPDataError
    from ddpcore.io.gold import read_gold

    short = tmp_path / "short.v4_gold_conll"
    short.write_text("#begin document (d); part 000\n"
                     "d\t0\t0\tMary\tNNP\t(1)\n" "d\t0\t1\tleft\tVBD\t-\n" "d\t0\t2\t.\t.\t-\n\n"
                     "d\t0\t0\tShe\tPRP\t(1)\n" "d\t0\t1\treturned\tVBD\t-\n\n#end document\n", encoding="utf-8")
    with pytest.raises(DDPDataError, match=r"short.v4_gold_conll: line 2: the last column '\(1\)' looks like a "
                                           r"coreference column.*got 6") as e:
        read_gold(short)
    assert e.value.code == "D408"
    plain = tmp_path / "plain.v4_gold_conll"
    plain.write_text(short.read_text(encoding="utf-8").replace("\t(1)\n", "\t-\n"), encoding="utf-8")
    assert read_gold(plain).mentions.height == 0  # no coreference column: nothing to refuse
