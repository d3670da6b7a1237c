"""Bug hunt 7: the public Python API given the same data in unusual but valid containers (polars DataFrame /
LazyFrame, pandas with nullable or categorical dtypes, pyarrow tables and arrays, Enum columns, masked arrays)
and with column names that collide with the names ddpcore uses itself. Each test failed before its fix, with a
wrong answer given without an error or with a raw polars/pyarrow traceback instead of a ``[Dnnn]`` message.

Expected values say where they come from: by hand, scipy / statsmodels / the ``krippendorff`` package, or an
obviously-correct Python loop written here.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import ddpcore
import ddpcore.stats as S
from ddpcore.errors import DDPDataError, DDPUsageError

MINI = pl.read_ndjson(Path(__file__).parent / "data" / "wmt25_mini.jsonl")


def _long_table(n_docs: int = 6, n_systems: int = 4, seed: int = 1) -> pl.DataFrame:
    """A small long table (document, segment, system, condition, score): DOC and MIX per (document, segment,
    system), 1-3 segments per document."""
    rng = np.random.default_rng(seed)
    rows = []
    effect = rng.normal(0, 3, n_systems)
    for d in range(n_docs):
        for s in range(int(rng.integers(1, 4))):
            for k in range(n_systems):
                for c in ("DOC", "MIX"):
                    rows.append((f"doc{d:03d}", s, f"sys{k}", c, float(70 + effect[k] + rng.normal(0, 8))))
    return pl.DataFrame(rows, schema=["document_id", "segment_id", "system", "condition", "score"], orient="row")


# ---------------------------------------------------------------- profile: names ddpcore uses itself


def test_an_input_column_named_like_the_segment_sort_key_is_refused_not_dropped(tmp_path, capsys):
    """An input column '__segkey' was overwritten by the engines' segment sort key and then dropped from the
    output without a word (every other extra input column is carried through): now D265, as '__row'."""
    df = MINI.head(2).with_columns(pl.Series("__segkey", [11, 12]))
    with pytest.raises(DDPDataError, match=r"\[D265\] <table>, column '__segkey': the name is reserved"):
        ddpcore.profile(df, cache=False)
    from ddpcore.cli.main import main

    src = tmp_path / "in.parquet"
    df.write_parquet(src)
    assert main(["profile", str(src), "-o", str(tmp_path / "o.parquet"), "--no-cache", "-q", "-j", "1"]) == 3
    assert "[D265]" in capsys.readouterr().err and not (tmp_path / "o.parquet").exists()


@pytest.mark.parametrize(("option", "name", "table"), [
    ("document_col", "ddp", "segment table"),            # was polars' DuplicateError
    ("segment_col", "n_tokens", "segment table"),        # DuplicateError
    ("text_col", "first_sentence", "segment table"),     # the text column silently replaced by the sentence index
    ("text_col", "ddp_certified", "segment table"),      # InvalidOperationError (text cast to integers)
    ("domain_col", "n_anchors", "segment table"),        # DuplicateError
    ("document_col", "sentence", "anchors table"),       # DuplicateError in the anchors table
    ("segment_col", "sentence_ddp", "sentences table"),
    ("domain_col", "n_segments", "document table"),      # ddp profile --documents
])
def test_a_column_option_naming_a_column_the_run_writes_is_d970(option, name, table):
    role = {"document_col": "document_id", "segment_col": "segment_id", "text_col": "source",
            "domain_col": "domain"}[option]
    df = MINI.head(2).rename({role: name})
    flag = "--" + option.replace("_col", "-col")
    for src in (df, df.to_pandas(), df.to_arrow(), df.lazy()):
        with pytest.raises(DDPUsageError, match=rf"\[D970\] {flag} {name} .* writes in its {table}"):
            ddpcore.profile(src, cache=False, **{option: name})


def test_the_cli_refuses_a_text_column_named_first_sentence(tmp_path, capsys):
    from ddpcore.cli.main import main

    src = tmp_path / "in.csv"
    MINI.head(2).rename({"source": "first_sentence"}).write_csv(src)
    assert main(["profile", str(src), "--text-col", "first_sentence", "-o", str(tmp_path / "o.parquet"),
                 "--no-cache", "-q", "-j", "1"]) == 2
    assert "[D970] --text-col first_sentence" in capsys.readouterr().err


def test_a_text_column_named_like_an_anchor_column_still_works(nlp):
    """The anchors table has a 'text' column (the anchor's text) but carries no segment text: no clash."""
    seg = ddpcore.profile(MINI.head(2).rename({"source": "text"}), text_col="text", nlp=nlp, cache=False)
    want = ddpcore.profile(MINI.head(2), nlp=nlp, cache=False)
    assert seg.rename({"text": "source"}).equals(want)


def test_the_api_says_when_domain_col_names_no_column(nlp):
    """``ddp profile --domain-col genre`` says on stderr that no column is so named; the API said nothing and
    summarised every segment as '(none)'."""
    df = MINI.head(2).rename({"domain": "Genre"})
    with pytest.warns(UserWarning, match=r"--domain-col genre: no such column in <table>.*did you mean 'Genre'"):
        res = ddpcore.profile_anchors(df, domain_col="genre", nlp=nlp, cache=False)
    assert res.summary()["group"].to_list() == ["(none)", "all"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the default name absent, or the named column present: nothing said
        ddpcore.profile(MINI.head(2).drop("domain"), nlp=nlp, cache=False)
        ddpcore.profile(df, domain_col="Genre", nlp=nlp, cache=False)


@pytest.mark.parametrize("one_column", [
    lambda: MINI.head(2).to_arrow()["source"],              # pyarrow ChunkedArray
    lambda: MINI.head(2).to_arrow()["source"].chunk(0),     # pyarrow Array
    lambda: MINI.head(2).to_pandas()["source"],             # pandas Series
])
def test_a_single_column_is_d105_not_an_attribute_error(one_column):
    """pl.from_arrow / pl.from_pandas give a Series for these, and the readers failed on it with
    AttributeError ('Series' object has no attribute 'height' / 'columns')."""
    for call in (lambda v: ddpcore.profile(v, cache=False), ddpcore.summarize, S.load_long_table):
        with pytest.raises(DDPUsageError, match=r"\[D105\] expected a file path or a polars/pandas/pyarrow table"):
            call(one_column())


# ---------------------------------------------------------------- tost_grouped


GROUPS = pl.DataFrame({"g": ["a", "a", "a", "b", "b", "b", "b"],
                       "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.5, 7.0],
                       "y": [1.5, 2.0, 2.5, 4.0, 5.5, 6.0, 7.5]})


@pytest.mark.parametrize("name", ["n", "status", "p_value", "n_x"])
def test_tost_grouped_refuses_a_group_column_named_like_a_result_column(name):
    """Was: the result's 'n' (or 'status'...) column replaced the group column of that name, so the groups
    could not be told apart (a group column 'n' read 3, 4: the pair counts)."""
    with pytest.raises(DDPUsageError, match=rf"\[D311\] group column '{name}' .* rename the column"):
        S.tost_grouped(GROUPS.rename({"g": name}), name, "x", "y", -1, 1, paired=name != "n_x")


@pytest.mark.parametrize(("by", "pattern"), [(["g", "g"], "twice"), ([], "at least one group column")])
def test_tost_grouped_bad_group_lists_are_d311(by, pattern):
    """Were polars' DuplicateError and InvalidOperationError."""
    with pytest.raises(DDPUsageError, match=rf"\[D311\].*{pattern}"):
        S.tost_grouped(GROUPS, by, "x", "y", -1, 1)


@pytest.mark.parametrize("dtype", [pl.UInt64, pl.Int128])
def test_tost_grouped_takes_group_ids_beyond_the_int64_range(dtype):
    """A UInt64 (or Int128) group column with ids >= 2**63 failed with polars' InvalidOperationError (the
    fast path cast it to Int64). Expected: the statistics of the same groups under text ids; group 1 by hand:
    d = x - y = (-0.5, 0, 0.5), mean 0, se = 0.5 / sqrt(3), t_lower = 1 / se = 3.4641 on 2 df,
    p = (1 - t / sqrt(t**2 + 2)) / 2 = 0.037090; and statsmodels' ttost_paired."""
    from statsmodels.stats.weightstats import ttost_paired

    big = 2**63 + 5
    df = GROUPS.with_columns(pl.Series("g", [1, 1, 1, big, big, big, big], dtype=dtype))
    got = S.tost_grouped(df, "g", "x", "y", -1, 1)
    assert got["g"].to_list() == [1, big] and got["n"].to_list() == [3, 4]
    want = S.tost_grouped(GROUPS, "g", "x", "y", -1, 1)
    assert got.drop("g").equals(want.drop("g"))
    assert got["p_value"][0] == pytest.approx((1 - 3.4641016151377544 / math.sqrt(12 + 2)) / 2, rel=1e-12)
    for k, rows in ((0, slice(0, 3)), (1, slice(3, 7))):
        p_sm = ttost_paired(GROUPS["x"].to_numpy()[rows], GROUPS["y"].to_numpy()[rows], -1, 1)[0]
        assert got["p_value"][k] == pytest.approx(p_sm, rel=1e-12)


# ---------------------------------------------------------------- znormalize, reliability_matrix, alpha


def test_znormalize_keeps_an_input_column_named_like_its_helpers():
    """Input columns '__mean' and '__sd' were overwritten by the helper columns and then dropped."""
    from scipy.stats import zscore

    df = pl.DataFrame({"annotator": ["a", "a", "a", "b", "b"], "score": [1.0, 2.0, 4.0, 3.0, 5.0],
                       "__mean": [9, 9, 9, 9, 9], "__sd": [1, 2, 3, 4, 5]})
    out = S.znormalize(df)
    assert out.columns == df.columns
    assert out["__mean"].to_list() == [9] * 5 and out["__sd"].to_list() == [1, 2, 3, 4, 5]
    want = np.r_[zscore([1.0, 2.0, 4.0]), zscore([3.0, 5.0])]  # scipy, ddof 0
    np.testing.assert_allclose(out["score"].to_numpy(), want, rtol=1e-14)


def test_znormalize_bad_inputs_are_ddpcore_errors():
    """A text score that is no number was polars' InvalidOperationError, by=[] its ComputeError."""
    with pytest.raises(DDPDataError, match=r"\[D303\] row 2, column 'score': score 'x' is not a number"):
        S.znormalize(pl.DataFrame({"annotator": ["a", "a"], "score": ["1", "x"]}))
    with pytest.raises(DDPUsageError, match=r"\[D311\] znormalize needs at least one group column"):
        S.znormalize(pl.DataFrame({"annotator": ["a", "a"], "score": [1.0, 2.0]}), by=[])
    # numbers written as text are numbers, as before
    assert S.znormalize(pl.DataFrame({"annotator": ["a", "a"], "score": ["1", "3"]}))["score"].to_list() == [-1.0, 1.0]


def _alpha_pairs(m: np.ndarray) -> float:
    """Krippendorff's interval alpha straight from the pairwise definition (a loop over units and pairs)."""
    units = [[v for v in m[:, u] if not math.isnan(v)] for u in range(m.shape[1])]
    units = [u for u in units if len(u) >= 2]
    pooled = [v for u in units for v in u]
    n = len(pooled)
    d_o = sum(sum((a - b) ** 2 for i, a in enumerate(u) for j, b in enumerate(u) if i != j) / (len(u) - 1)
              for u in units) / n
    d_e = sum((a - b) ** 2 for i, a in enumerate(pooled) for j, b in enumerate(pooled) if i != j) / (n * (n - 1))
    return 1 - d_o / d_e


RATINGS = np.array([[1.0, 2.0, np.nan], [1.0, 2.0, 4.0], [2.0, 2.0, 3.0]])


@pytest.mark.parametrize("container", [
    lambda: pd.DataFrame(RATINGS).astype("Float64"),                                   # pd.NA: was D303
    lambda: pd.DataFrame([[1, 2, None], [1, 2, 4], [2, 2, 3]]).astype("Int64"),       # pd.NA: was D303
    lambda: pl.DataFrame(RATINGS, orient="row").fill_nan(None).lazy(),                # LazyFrame: was D303
    lambda: np.ma.masked_array(np.nan_to_num(RATINGS, nan=9.0), mask=np.isnan(RATINGS)),  # mask was ignored
])
def test_krippendorff_alpha_reads_missing_ratings_in_every_container(container):
    """Expected: 0.7454545... from the pairwise loop above, and the ``krippendorff`` package (0.9.0) gives
    0.7454545454545454 on the NaN matrix. The masked array's hidden 9.0 was used as a rating (alpha 0.63)."""
    want = _alpha_pairs(RATINGS)
    assert want == pytest.approx(0.7454545454545455, rel=1e-12)
    got = S.krippendorff_alpha(container())
    assert got.alpha == pytest.approx(want, rel=1e-12) and got.n_pairable_values == 8
    boot = S.krippendorff_alpha_bootstrap(container(), n_boot=200, seed=3)
    ref = S.krippendorff_alpha_bootstrap(RATINGS, n_boot=200, seed=3)
    assert np.array_equal(boot.replicates, ref.replicates, equal_nan=True)


def test_reliability_matrix_with_a_unit_column_named_like_its_helper():
    """A unit or coder column named '__score' collided with the helper column (polars' DuplicateError)."""
    df = pl.DataFrame({"document_id": ["d1", "d1", "d2", "d2"], "system": ["s", "s", "s", "s"],
                       "annotator": ["a", "b", "a", "b"], "score": [1.0, 2.0, 3.0, 5.0]})
    want = S.reliability_matrix(df)
    got = S.reliability_matrix(df.rename({"system": "__score"}), unit=("document_id", "__score"))
    assert np.array_equal(got.matrix, want.matrix) and want.matrix.tolist() == [[1.0, 3.0], [2.0, 5.0]]
    with pytest.raises(DDPUsageError, match=r"\[D311\] reliability_matrix needs"):
        S.reliability_matrix(df, coder="system")  # the coder is a unit column (was DuplicateError)
    with pytest.raises(DDPUsageError, match=r"\[D311\] reliability_matrix needs"):
        S.reliability_matrix(df, unit=[])


# ---------------------------------------------------------------- long tables: NaN ids, Enum ids


def _nan_segments(df: pl.DataFrame) -> pl.DataFrame:
    seg = pl.col("segment_id").cast(pl.Float64)
    return df.with_columns(pl.when(pl.col("segment_id") == 1).then(float("nan")).otherwise(seg).alias("segment_id"))


def test_a_nan_id_is_missing_in_every_container():
    """pandas hands a NaN id over as null (D304), polars and pyarrow kept it as one more segment and the
    statistic ran: the same table was refused as a pandas frame and analysed as a polars one."""
    df = _nan_segments(_long_table())
    for src in (df, df.to_arrow(), df.to_pandas(), df.lazy()):
        with pytest.raises(DDPDataError, match=r"\[D304\] <table>, row \d+, column 'segment_id': \d+ null \(or NaN\)"):
            S.bootstrap_system_means(src, condition_value="DOC", unit="segment",
                                     options=S.ResampleOptions(n_boot=10))
        with pytest.raises(DDPDataError, match=r"\[D399\] <table>, row \d+: null \(or NaN\) value in column 'segment_id'"):
            S.compare_systems(df.filter(pl.col("condition") == "DOC").drop("condition"), "sys0",
                              options=S.ResampleOptions(n_boot=10))
    dom = _long_table().filter(pl.col("condition") == "DOC").with_columns(
        pl.when(pl.col("document_id") == "doc005").then(float("nan")).otherwise(1.0).alias("domain"))
    for src in (dom, dom.to_pandas()):  # polars: was D304 from deep inside; pandas: D352
        with pytest.raises(DDPDataError, match=r"\[D352\] <table>, column 'domain': \d+ row\(s\) with a null domain"):
            S.cluster_systems(src, "wmt24", by_domain=True)


def _tau_loop(df: pl.DataFrame, indices: np.ndarray) -> np.ndarray:
    """Replicate taus of bootstrap_tau (unit document, segment weighting) by rebuilding each resampled table:
    units are the sorted document ids, systems sorted; scipy's kendalltau of the two conditions' means."""
    from scipy.stats import kendalltau

    docs = sorted(set(df["document_id"].to_list()))
    systems = sorted(set(df["system"].to_list()))
    rows = {d: [r for r in df.iter_rows(named=True) if r["document_id"] == d] for d in docs}
    out = []
    for draw in indices:
        sample = [r for k in draw for r in rows[docs[k]]]
        means = [[np.mean([r["score"] for r in sample if r["condition"] == c and r["system"] == s]) for s in systems]
                 for c in ("DOC", "MIX")]
        out.append(kendalltau(means[0], means[1]).statistic)
    return np.array(out)


def test_enum_ids_sort_as_text_so_the_bootstrap_is_the_same():
    """An Enum column sorted by its categories' order (polars), not by its text: the units were numbered in
    another order, so the same data and seed gave other replicates (ci_low -0.33 vs 0.0 here) and the systems
    came back in the Enum's order. Expected: the String table's result, and a loop over explicit draws."""
    df = _long_table()
    enum = df.with_columns(
        pl.col("system").cast(pl.Enum(sorted(df["system"].unique().to_list(), reverse=True))),
        pl.col("document_id").cast(pl.Enum(sorted(df["document_id"].unique().to_list(), reverse=True))))
    opts = S.ResampleOptions(n_boot=60, seed=3)
    want = S.bootstrap_tau(df, "DOC", "MIX", options=opts)
    got = S.bootstrap_tau(enum, "DOC", "MIX", options=opts)
    assert got.systems == want.systems == ["sys0", "sys1", "sys2", "sys3"]
    assert np.array_equal(got.replicates, want.replicates, equal_nan=True)
    from ddpcore.stats.bootstrap import resample_indices

    loop = _tau_loop(df, resample_indices(60, 6, 3))
    np.testing.assert_allclose(got.replicates, loop, rtol=1e-12, atol=1e-12)
    r_enum = S.score_recoverability_r2(enum, "DOC", "MIX")  # sorted by the Enum's order: last-bit differences
    r_text = S.score_recoverability_r2(df, "DOC", "MIX")
    assert (r_enum.r2, r_enum.slope, r_enum.intercept) == (r_text.r2, r_text.slope, r_text.intercept)


@pytest.mark.parametrize("container", ["pandas", "arrow", "lazy", "path"])
def test_the_public_table_helpers_take_every_container(container, tmp_path):
    """pair_conditions / check_conditions / check_single_condition failed on pandas, pyarrow, LazyFrame and
    path inputs with AttributeError/TypeError, and check_single_condition let a two-condition pyarrow table
    pass (a Table's ``.columns`` are its arrays)."""
    df = _long_table(n_docs=3, n_systems=2)
    src: object = {"pandas": df.to_pandas(), "arrow": df.to_arrow(), "lazy": df.lazy()}.get(container)
    if container == "path":
        df.write_parquet(tmp_path / "t.parquet")
        src = tmp_path / "t.parquet"
    assert S.pair_conditions(src, "DOC", "MIX").equals(S.pair_conditions(df, "DOC", "MIX"))
    with pytest.raises(DDPUsageError, match=r"\[D361\] the table holds 2 conditions"):
        S.check_single_condition(src)
    with pytest.raises(DDPDataError, match=r"\[D305\] condition 'X' has no rows"):
        S.check_conditions(src, ["DOC", "X"])


# ---------------------------------------------------------------- annotation time


ACTIONS = pl.DataFrame({"task_id": ["t1"] * 4 + ["t2"] * 3, "timestamp": [0.0, 10, 200, 230, 5, 6, 8],
                        "segment_id": [0, 1, 1, 2, 0, 0, 1]})


def test_annotation_time_takes_durations():
    """A Duration column (a pandas timedelta: time since the task started) failed with polars'
    InvalidOperationError. By hand: t1 gaps 10, 190 (> 120 s, dropped), 30 -> 40 s over 3 segments;
    t2 gaps 1, 2 -> 3 s over 2 segments."""
    want = S.annotation_time_per_segment(ACTIONS)
    assert want["active_seconds"].to_list() == [40.0, 3.0]
    assert want["seconds_per_segment"].to_list() == [pytest.approx(40 / 3), 1.5]
    dur = ACTIONS.with_columns(pl.duration(seconds=pl.col("timestamp")).alias("timestamp"))
    assert S.annotation_time_per_segment(dur).equals(want)
    pdf = ACTIONS.to_pandas().assign(timestamp=lambda p: pd.to_timedelta(p["timestamp"], unit="s"))
    assert S.annotation_time_per_segment(pdf).equals(want)


def test_annotation_time_odd_arguments_are_ddpcore_errors():
    """Were polars' InvalidOperationError (Time), DuplicateError (a task column named like a result column or
    the helper '__t') and ComputeError (no task column); a timestamp column given twice counted every action
    twice."""
    tod = ACTIONS.with_columns(
        (pl.datetime(2024, 1, 1) + pl.duration(seconds=pl.col("timestamp"))).dt.time().alias("timestamp"))
    with pytest.raises(DDPDataError, match=r"\[D317\] timestamp column 'timestamp' holds times of day"):
        S.annotation_time_per_segment(tod)
    with pytest.raises(DDPUsageError, match=r"\[D311\] task column 'n_segments' has the name of a column"):
        S.annotation_time_per_segment(ACTIONS.rename({"task_id": "n_segments"}), task="n_segments")
    with pytest.raises(DDPUsageError, match=r"\[D311\] give at least one task column"):
        S.annotation_time_per_segment(ACTIONS, task=[])
    with pytest.raises(DDPUsageError, match=r"\[D311\] time= names the column 'timestamp' twice"):
        S.annotation_time_per_segment(ACTIONS, time=["timestamp", "timestamp"])
    got = S.annotation_time_per_segment(ACTIONS.rename({"task_id": "__t"}), task="__t")
    assert got.rename({"__t": "task_id"}).equals(S.annotation_time_per_segment(ACTIONS))


# ---------------------------------------------------------------- containers agree (regression sweep)


def test_statistics_agree_across_containers(tmp_path):
    """The same long table as polars, LazyFrame, pandas (shuffled index, categorical and nullable dtypes),
    pyarrow (dictionary-encoded, large_string, many chunks, an unused timestamp column) and a Parquet path:
    identical bootstrap tau, clustering and TOST results."""
    df = _long_table(n_docs=5, n_systems=3)
    t = df.to_arrow()
    pdf = df.to_pandas()
    path = tmp_path / "long.parquet"
    df.write_parquet(path)
    strs = ["document_id", "system", "condition"]
    variants = [
        df.lazy(), pdf.set_axis(np.arange(len(pdf))[::-1] + 7), pdf.astype({c: "category" for c in strs}),
        pdf.astype({**{c: "string[pyarrow]" for c in strs}, "segment_id": "Int64", "score": "Float64"}),
        pa.table({c: (t[c].dictionary_encode() if c in strs else t[c]) for c in t.column_names}),
        t.cast(pa.schema([pa.field(f.name, pa.large_string() if f.name in strs else f.type) for f in t.schema])),
        pa.Table.from_batches(t.to_batches(max_chunksize=3)),
        t.append_column("ts", pa.array(pd.date_range("2020", periods=t.num_rows, freq="s"))), path,
    ]
    opts = S.ResampleOptions(n_boot=50, seed=5)

    def results(src):
        return (S.bootstrap_tau(src, "DOC", "MIX", options=opts).to_dict(include_replicates=True),
                S.cluster_systems(src, condition_value="DOC", options=opts).to_dict())

    def no_sig(d):
        return {k: v for k, v in d.items() if k != "signature"}

    want = [no_sig(r) for r in results(df)]
    for v in variants:
        assert [no_sig(r) for r in results(v)] == want


def test_decimal_ids_of_a_csv_stay_as_written_in_the_statistics(tmp_path):
    """The statistics read a CSV path without naming its id columns, so polars read ids 1.5 and 1.50 as the
    number 1.5: two documents became one (5 resampling units in memory, 4 from the file) without a word.
    ddp profile already reads such ids as written (docs/readers.md). Expected: the file's result equals the
    in-memory table of strings."""
    rows = [(d, 0, s, c, 60.0 + 3 * i + 7 * j + (c == "MIX"))
            for i, d in enumerate(["1.5", "1.50", "2.0", "3.25", "4.5"]) for j, s in enumerate("ABC")
            for c in ("DOC", "MIX")]
    df = pl.DataFrame(rows, schema=["document_id", "segment_id", "system", "condition", "score"], orient="row")
    path = tmp_path / "dec.csv"
    df.write_csv(path)
    assert pl.read_csv(path)["document_id"].dtype == pl.Float64  # what polars alone makes of the file
    opts = S.ResampleOptions(n_boot=40, seed=2)
    want, got = S.bootstrap_tau(df, "DOC", "MIX", options=opts), S.bootstrap_tau(path, "DOC", "MIX", options=opts)
    assert got.n_units == want.n_units == 5
    assert np.array_equal(got.replicates, want.replicates, equal_nan=True)
    assert S.load_long_table(path)["document_id"].to_list()[::6] == ["1.5", "1.50", "2.0", "3.25", "4.5"]
    one = df.filter(pl.col("condition") == "DOC").drop("condition")
    one.write_csv(tmp_path / "one.csv")
    assert S.compare_systems(tmp_path / "one.csv", "A", options=opts).n_units == 5
