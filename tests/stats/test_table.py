"""Long-table loading, validation, pairing and factorisation."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.stats import TableColumns
from ddpcore.stats._table import factorize, json_safe, load_long_table, pair_conditions


def table(**over) -> pl.DataFrame:
    base = {
        "document_id": ["d1", "d1", "d2", "d2", "d1", "d1", "d2", "d2"],
        "segment_id": [0, 1, 0, 1, 0, 1, 0, 1],
        "system": ["A"] * 8,
        "annotator": ["x", "x", "y", "y", "x", "x", "y", "y"],
        "condition": ["DOC"] * 4 + ["MIX"] * 4,
        "score": [80.0, 70.0, 90.0, 60.0, 82.0, 71.0, 88.0, 65.0],
    }
    base.update(over)
    return pl.DataFrame(base)


def test_load_renames_and_accepts_all_inputs(tmp_path):
    df = table().rename({"document_id": "doc", "score": "esa"})
    out = load_long_table(df, columns=TableColumns(document="doc", score="esa"))
    assert out.columns[:2] == ["document_id", "segment_id"] and "score" in out.columns
    assert out.schema["score"] == pl.Float64
    for other in (df.to_pandas(), df.to_arrow()):
        assert load_long_table(other, columns=TableColumns(document="doc", score="esa")).equals(out)
    path = tmp_path / "t.csv"
    df.write_csv(path)
    assert load_long_table(path, columns=TableColumns(document="doc", score="esa")).equals(out)


def test_missing_columns_name_the_flag():
    with pytest.raises(DDPDataError, match=r"\[D301\].*document column 'doc'.*--document-col NAME.*available columns"):
        load_long_table(table(), columns=TableColumns(document="doc"))
    with pytest.raises(DDPDataError, match=r"\[D301\].*annotator column 'rater'"):
        load_long_table(table(), columns=TableColumns(annotator="rater"))
    # the default annotator name may be absent: the table just has no annotator column
    out = load_long_table(table().drop("annotator"))
    assert "annotator" not in out.columns
    # annotator=None: no annotator role, so pairing falls back to items (document, segment, system)
    no_ann = load_long_table(table(), columns=TableColumns(annotator=None))
    assert "annotator" not in no_ann.columns
    assert pair_conditions(no_ann, "DOC", "MIX").columns[:3] == ["document_id", "segment_id", "system"]


def test_score_validation_and_nan_policy():
    with pytest.raises(DDPDataError, match=r"\[D303\].*row 2.*'abc'"):
        load_long_table(table(score=["1", "abc", "3", "4", "5", "6", "7", "8"]))
    assert load_long_table(table(score=["1", "2", "3", "4", "5", "6", "7", "8"]))["score"].dtype == pl.Float64
    bad = table(score=[80.0, None, 90.0, np.nan, 82.0, 71.0, 88.0, 65.0])
    with pytest.raises(DDPDataError, match=r"\[D302\] <table>, row 2.*2 missing.*--nan-policy omit"):
        load_long_table(bad)
    assert load_long_table(bad, nan_policy="omit").height == 6
    with pytest.raises(DDPDataError, match="D302"):
        load_long_table(table(score=[np.inf] + [1.0] * 7))
    with pytest.raises(DDPDataError, match=r"\[D304\].*row 3.*system"):
        load_long_table(table(system=["A", "A", None, "A", "A", "A", "A", "A"]))
    with pytest.raises(DDPDataError, match="D309"):
        load_long_table(table().clear())
    with pytest.raises(DDPUsageError, match="nan_policy"):
        load_long_table(table(), nan_policy="drop")


def test_pair_conditions():
    df = load_long_table(table())
    pairs = pair_conditions(df, "DOC", "MIX")
    assert pairs.columns == ["document_id", "segment_id", "system", "annotator", "score_a", "score_b"]
    assert pairs["score_a"].to_list() == [80.0, 70.0, 90.0, 60.0] and pairs["score_b"].to_list() == [82.0, 71.0, 88.0, 65.0]
    with pytest.raises(DDPDataError, match=r"\[D305\].*'SEG'.*DOC, MIX"):
        pair_conditions(df, "DOC", "SEG")
    # different annotators under the two conditions: no pair on (..., annotator)
    other = load_long_table(table(annotator=["x", "x", "y", "y", "u", "u", "v", "v"]))
    with pytest.raises(DDPDataError, match=r"\[D306\].*--no-pair-annotator"):
        pair_conditions(other, "DOC", "MIX")
    assert pair_conditions(other, "DOC", "MIX", annotator=False).height == 4
    unpaired = load_long_table(table().filter(~((pl.col("condition") == "MIX") & (pl.col("segment_id") == 1))))
    with pytest.raises(DDPDataError, match=r"\[D306\] 2 row\(s\) have no partner.*unpaired='drop'"):
        pair_conditions(unpaired, "DOC", "MIX")
    assert pair_conditions(unpaired, "DOC", "MIX", unpaired="drop").height == 2
    # a repeated rating is refused when the table is loaded (issue 19: one rule for every command)
    with pytest.raises(DDPDataError, match=r"\[D307\].*'DOC'.*document_id='d1'"):
        load_long_table(pl.concat([table(), table().head(1)]))
    with pytest.raises(DDPUsageError):
        pair_conditions(df, "DOC", "DOC")


@settings(max_examples=60, deadline=None)
@given(
    a=st.lists(st.sampled_from(["b", "a", "é", "Z", "10", "9"]), min_size=1, max_size=60),
    seed=st.integers(0, 1000),
)
def test_factorize_matches_sorted_group_keys(a, seed):
    rng = np.random.default_rng(seed)
    df = pl.DataFrame({"s": a, "i": rng.integers(-3, 4, len(a)), "big": rng.integers(0, 2, len(a)) * 10**15})
    for cols in (["s"], ["i"], ["s", "i"], ["i", "big", "s"]):
        codes, keys = factorize(df, cols)
        expected = df.select(cols).unique().sort(cols)
        assert keys.equals(expected)
        assert df.select(cols).equals(keys[codes])


def test_json_safe():
    assert json_safe({"a": float("nan"), "b": float("inf"), "c": (1, np.float64(-np.inf)), "d": np.int64(3)}) == {
        "a": None, "b": "inf", "c": [1, "-inf"], "d": 3,
    }
