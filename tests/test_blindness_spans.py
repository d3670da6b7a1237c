"""``ddp blindness --spans-col``: a spans column that is not a list of {span_start, span_end} objects.

Before, every such column was an internal error (D999): a column of nulls (``explode`` on dtype null), a list
of lists (expected Struct), objects with other keys (``span_start`` not found), JSON text read from a CSV
(``explode`` on str). A span beyond its segment was ``[D316] span 1: ...`` without the file, row or column, and
a span without offsets (both null: the omission markers of the ESA exports) was dropped in silence.

Now: the JSON text of a CSV/TSV column is parsed into that shape (the same answer as the list column); any
other shape is one coded line (D316, exit 3) naming the file and the column (and the row of a text that is
not such a list); a bad span names the file, the data row (1-based) and the column; a span with one offset
missing is refused like other bad offsets; spans without any offset are left out with a warning on stderr,
counted in the evidence and in the signature.
"""
from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ddpcore.cli.main import main

SPAN = [{"span_start": 0, "span_end": 2}]
BL = ["--margin", "1", "--n-boot", "60", "--n-boot-cluster", "20"]
SPANS = ["--spans-col", "error_spans", "--text-col", "text"]


def _table() -> pl.DataFrame:
    rows = [{"document_id": f"d{d}", "segment_id": i, "system": s, "text": f"{s} document {d} segment {i}.",
             "source_system": s} for d in range(4) for i in range(3) for s in ("sysA", "sysB", "sysC")]
    o = pl.DataFrame(rows).with_columns(condition=pl.lit("DOC"))
    t = pl.concat([o, o.with_columns(condition=pl.lit("MIX"))])
    return t.with_columns(score=(pl.int_range(pl.len()) % 7).cast(pl.Float64))


def _run(capsys: pytest.CaptureFixture[str], path: Path, *extra: str) -> tuple[int, dict | None, list[str]]:
    code = main(["blindness", str(path), *BL, *extra])
    cap = capsys.readouterr()
    return code, (json.loads(cap.out) if code == 0 else None), [ln for ln in cap.err.splitlines() if ln.strip()]


@pytest.mark.parametrize("name, value", [
    ("b_null.parquet", None),
    ("b_ll.parquet", [[0, 2]]),
    ("b_keys.parquet", [{"start": 0, "end": 2}]),
    ("b_int.parquet", 3),
    ("b_text_offsets.parquet", [{"span_start": "0", "span_end": "2"}]),
], ids=["all-null", "list-of-lists", "other-keys", "integers", "text-offsets"])
def test_wrong_shape_is_one_coded_line(tmp_path: Path, capsys, name: str, value) -> None:
    path = tmp_path / name
    t = _table()
    column = pl.lit(None) if value is None else pl.Series([value] * t.height)
    t.with_columns(column.alias("error_spans")).write_parquet(path)
    code, _, err = _run(capsys, path, *SPANS)
    assert code == 3 and len(err) == 1, err
    assert err[0].startswith("ddp blindness: error: [D316]") and "D999" not in err[0]
    assert f"{path}, column 'error_spans' (--spans-col)" in err[0]
    assert "a list of {span_start, span_end} objects" in err[0]


def test_json_text_from_csv_gives_the_list_column_answer(tmp_path: Path, capsys) -> None:
    t = _table()
    spans = [SPAN if i % 3 else [{"span_start": 3, "span_end": 9}, {"span_start": 1, "span_end": 4}]
             for i in range(t.height)]
    t.with_columns(error_spans=pl.Series(spans)).write_parquet(tmp_path / "ok.parquet")
    t.with_columns(error_spans=pl.Series([json.dumps(s) for s in spans])).write_csv(tmp_path / "spans.csv")
    t.with_columns(error_spans=pl.Series([json.dumps(s) for s in spans])).write_csv(tmp_path / "spans.tsv",
                                                                                   separator="\t")
    code, want, err = _run(capsys, tmp_path / "ok.parquet", *SPANS)
    assert code == 0, err
    assert want is not None and want["evidence"]["boundary_spans"]["n_spans_a"] == sum(map(len, spans)) // 2
    for f in ("spans.csv", "spans.tsv"):
        code, got, err = _run(capsys, tmp_path / f, *SPANS)
        assert code == 0, err
        assert got is not None and got["evidence"] == want["evidence"] and got["verdict"] == want["verdict"]


@pytest.mark.parametrize("text, what", [
    ("[{oops", "not JSON"),
    ('{"span_start": 0, "span_end": 2}', "not a list"),
    ("[[0, 2]]", "JSON list"),
    ('[{"start": 0, "end": 2}]', "keys start, end"),
])
def test_json_text_that_is_not_spans_names_the_row(tmp_path: Path, capsys, text: str, what: str) -> None:
    t = _table()
    bad = 7  # 0-based index of the bad row: data row 8
    col = [json.dumps(SPAN)] * t.height
    col[bad] = text
    path = tmp_path / "b_spans.csv"
    t.with_columns(error_spans=pl.Series(col)).write_csv(path)
    code, _, err = _run(capsys, path, *SPANS)
    assert code == 3 and len(err) == 1, err
    assert "[D316]" in err[0] and f"{path}, row {bad + 1}, column 'error_spans'" in err[0] and what in err[0]


@pytest.mark.parametrize("bad, span, what", [
    (1, {"span_start": 5, "span_end": 100000}, "ends after the segment"),
    (40, {"span_start": 4, "span_end": 2}, "ends before it starts"),
    (65, {"span_start": None, "span_end": 2}, "span_start is missing"),
])
def test_bad_span_names_file_row_and_column(tmp_path: Path, capsys, bad: int, span: dict, what: str) -> None:
    t = _table()
    spans = [SPAN] * t.height
    spans[bad] = [SPAN[0], span]
    path = tmp_path / "b_beyond.parquet"
    t.with_columns(error_spans=pl.Series(spans)).write_parquet(path)
    code, _, err = _run(capsys, path, *SPANS)
    assert code == 3 and len(err) == 1, err
    assert "[D316]" in err[0] and f"{path}, row {bad + 1}, column 'error_spans' (--spans-col), span 2:" in err[0]
    assert what in err[0]


def test_bad_span_row_counts_rows_dropped_by_nan_policy_omit(tmp_path: Path, capsys) -> None:
    t = _table()
    spans = [SPAN] * t.height
    spans[20] = [{"span_start": 0, "span_end": 500}]
    score = pl.when(pl.int_range(pl.len()).is_in([0, 5])).then(None).otherwise(pl.col("score"))
    path = tmp_path / "omit.parquet"
    t.with_columns(error_spans=pl.Series(spans), score=score).write_parquet(path)
    code, _, err = _run(capsys, path, *SPANS, "--nan-policy", "omit")
    assert code == 3 and f"{path}, row 21, column 'error_spans'" in err[-1], err


def test_spans_without_offsets_are_said_and_recorded(tmp_path: Path, capsys) -> None:
    t = _table()
    spans = [SPAN] * t.height
    none = {"span_start": None, "span_end": None}
    spans[2] = [SPAN[0], none]  # a DOC row
    spans[t.height - 1] = [none, none]  # a MIX row
    path = tmp_path / "omission.parquet"
    t.with_columns(error_spans=pl.Series(spans)).write_parquet(path)
    code, res, err = _run(capsys, path, *SPANS)
    assert code == 0 and res is not None
    warn = [ln for ln in err if "have no offsets" in ln]
    assert len(warn) == 1 and warn[0].startswith("ddp blindness: warning: 3 error span(s)"), err
    ev = res["evidence"]["boundary_spans"]
    half = t.height // 2
    assert (ev["n_spans_a"], ev["n_spans_b"]) == (half, half - 1)
    assert (ev["n_spans_without_offsets_a"], ev["n_spans_without_offsets_b"]) == (1, 2)
    assert res["signature"]["n_spans_without_offsets"] == 3
    assert any("have no offsets" in w for w in res["warnings"])
    # --strict: an error, as every other warning
    code, _, err = _run(capsys, path, *SPANS, "--strict")
    assert code == 3 and len(err) == 1 and "[D703]" in err[0]


def test_default_spans_column_of_nulls_is_skipped_not_an_error(tmp_path: Path, capsys) -> None:
    """Without --spans-col the span rate is optional: a column of nulls (any type) is skipped, with the reason."""
    path = tmp_path / "nulls.parquet"
    _table().with_columns(error_spans=pl.lit(None), target_text=pl.col("text")).write_parquet(path)
    code, res, err = _run(capsys, path)
    assert code == 0, err
    assert res is not None and res["evidence"]["boundary_spans"] is None
    assert "null in every" in res["evidence"]["skipped"]["boundary_spans"]
