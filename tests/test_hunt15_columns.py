"""Hunt 15 (helper 55): both DDP columns, ``ddp`` (best estimate) and ``ddp_certified`` (certified lower
bound), in every output.

Defects fixed here (each test fails without its fix):

1. ``ddp profile --documents`` had ``max_ddp``/``mean_ddp`` but no certified counterpart: it now ends with
   ``max_ddp_certified``/``mean_ddp_certified`` (the old columns keep their places); ``ddp merge`` of
   documents shards whose columns differ (two builds) was a D999, now D332 (and an older shard without
   ``document_first_row`` beside a newer one merges, ordered by the segment shards, as documented).
2. ``ddpcore.summarize`` and ``ddp profile``'s printed summary gave figures of ``ddp`` only: they now give
   the same five figures of ``ddp_certified`` (``*_ddp_certified`` columns; ``c.`` columns in the text).
3. ``ddp profile --pipeline fast --certify-model certify-v5.json`` (the default model named by its bare
   name) was replaced by the parser-free model as if not named; a named model is now kept (with the
   warning docs/validation.md promises), the default swap stays when nothing is named.
4. A certification model whose ``recipe.parser`` is the string ``"false"`` loaded as trained with a
   parser (now D330); one whose ``threshold_long`` is below both short thresholds loaded (now D331).

Expected values are computed in the tests from the segment table with polars group-bys / numpy
(``np.percentile``'s default linear interpolation), never from the code under test.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.anchors.certify import FEATURES
from ddpcore.anchors.certify_model import DATA_DIR, DEFAULT_CERTIFY_MODEL, NOPARSER_CERTIFY_MODEL, load_certify_model
from ddpcore.cli.main import main
from ddpcore.errors import DDPDataError

TESTS = Path(__file__).resolve().parent
MINI = TESTS / "data" / "wmt25_mini.jsonl"
OLD_DOCUMENT_COLUMNS = ["document_id", "domain", "n_segments", "n_sentences", "max_ddp", "mean_ddp",
                        "share_ddp_ge_1", "share_ddp_ge_5", "share_ddp_ge_15"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _sig(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(pq.read_schema(path).metadata[b"ddpcore.signature"])


# ------------------------------------------------------------------ 1. the documents table


def _want_documents(seg: pl.DataFrame) -> pl.DataFrame:
    """The certified document columns by a plain polars group-by of the segment table."""
    return seg.group_by("document_id", maintain_order=True).agg(
        pl.col("ddp_certified").max().alias("max_ddp_certified"),
        pl.col("ddp_certified").cast(pl.Float64).mean().alias("mean_ddp_certified"))


def test_document_rows_of_a_table_with_the_certified_column() -> None:
    from ddpcore.pipeline.documents import document_rows
    from ddpcore.schema import SegmentColumns

    seg = pl.DataFrame({"document_id": ["a", "a", "a", "b", "c", "c"], "domain": ["x"] * 3 + ["y"] * 3,
                        "n_sentences": [1, 2, 3, 1, 2, 2], "ddp": [0, 4, 20, 1, 7, 3],
                        "ddp_certified": [0, 2, 16, 0, 7, 1]})
    got = document_rows(seg, SegmentColumns())
    assert got.columns == [*OLD_DOCUMENT_COLUMNS, "max_ddp_certified", "mean_ddp_certified"]
    # by hand: a: max(0,2,16)=16, mean 18/3=6; b: 0, 0; c: max(7,1)=7, mean 4
    assert got["max_ddp_certified"].to_list() == [16, 0, 7]
    assert got["mean_ddp_certified"].to_list() == pytest.approx([6.0, 0.0, 4.0])
    assert got.select("document_id", "max_ddp_certified", "mean_ddp_certified").equals(_want_documents(seg))
    # a table without ddp_certified (a rule set without a certification model) keeps the old columns
    assert document_rows(seg.drop("ddp_certified"), SegmentColumns()).columns == OLD_DOCUMENT_COLUMNS


@pytest.fixture(scope="module")
def shard_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One unsharded run and the two shards of the same input, each with --documents."""
    d = tmp_path_factory.mktemp("shards")
    assert main(["profile", str(MINI), "-o", str(d / "full.parquet"), "--documents", str(d / "docs.parquet"),
                 "-q", "--no-cache"]) == 0
    for i in (0, 1):
        assert main(["profile", str(MINI), "--shard", f"{i}/2", "-o", str(d / f"s.{i}.parquet"),
                     "--documents", str(d / f"d.{i}.parquet"), "-q", "--no-cache"]) == 0
    return d


@pytest.mark.spacy_model
def test_profile_documents_has_the_certified_columns(shard_run: Path) -> None:
    seg = pl.read_parquet(shard_run / "full.parquet")
    docs = pl.read_parquet(shard_run / "docs.parquet")
    assert docs.columns == [*OLD_DOCUMENT_COLUMNS, "max_ddp_certified", "mean_ddp_certified"]
    got = docs.select("document_id", "max_ddp_certified", "mean_ddp_certified")
    assert got.equals(_want_documents(seg))
    # the old columns are what they were: ddp's max and mean
    old = seg.group_by("document_id", maintain_order=True).agg(pl.col("ddp").max().alias("max_ddp"),
                                                               pl.col("ddp").cast(pl.Float64).mean().alias("mean_ddp"))
    assert docs.select("document_id", "max_ddp", "mean_ddp").equals(old)
    assert (docs["max_ddp_certified"] <= docs["max_ddp"]).all()


@pytest.mark.spacy_model
def test_merged_documents_shards_keep_the_certified_columns(shard_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = shard_run
    code, _, err = _run(capsys, "merge", *(str(d / f) for f in ("s.0.parquet", "s.1.parquet", "d.0.parquet",
                                                                   "d.1.parquet")),
                        "-o", str(d / "m.parquet"), "--documents", str(d / "md.parquet"), "-q")
    assert code == 0, err
    assert pl.read_parquet(d / "md.parquet").equals(pl.read_parquet(d / "docs.parquet"))


def _rewrite(src: Path, dst: Path, drop: list[str]) -> None:
    t = pq.read_table(src)
    pq.write_table(t.drop_columns(drop).replace_schema_metadata(t.schema.metadata), dst)


@pytest.mark.spacy_model
def test_documents_shards_of_two_builds_are_d332_not_d999(shard_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A documents shard without the certified columns (an older build) beside a newer one: before, polars'
    'schema lengths differ' (D999, exit 4); now D332 naming both files."""
    d = shard_run
    _rewrite(d / "d.1.parquet", d / "old.d.1.parquet", ["max_ddp_certified", "mean_ddp_certified"])
    code, _, err = _run(capsys, "merge", str(d / "s.0.parquet"), str(d / "s.1.parquet"), str(d / "d.0.parquet"),
                        str(d / "old.d.1.parquet"), "-o", str(d / "m2.parquet"), "--documents", str(d / "md2.parquet"),
                        "-q")
    assert code == 3 and "[D332]" in err and "old.d.1.parquet" in err and "max_ddp_certified" in err, err
    assert not (d / "md2.parquet").exists()


@pytest.mark.spacy_model
def test_an_older_documents_shard_without_first_row_merges(shard_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A documents shard without ``document_first_row`` (older build) beside a newer one is ordered by the
    segment shards (merge.py's documented fallback); before, the concat failed (D999)."""
    d = shard_run
    _rewrite(d / "d.1.parquet", d / "nofr.d.1.parquet", ["document_first_row"])
    code, _, err = _run(capsys, "merge", str(d / "s.0.parquet"), str(d / "s.1.parquet"), str(d / "d.0.parquet"),
                        str(d / "nofr.d.1.parquet"), "-o", str(d / "m3.parquet"), "--documents",
                        str(d / "md3.parquet"), "-q")
    assert code == 0, err
    assert pl.read_parquet(d / "md3.parquet").equals(pl.read_parquet(d / "docs.parquet"))


# ------------------------------------------------------------------ 2. the summary


def _numpy_figures(x: np.ndarray) -> list[float]:
    return [x.mean(), np.median(x), np.percentile(x, 90), x.max(), (x == 0).mean()]


def _check_summary(summary: list[dict], seg: pl.DataFrame, by: str) -> None:  # type: ignore[type-arg]
    for row in summary:
        g = seg if row["group"] == "all" else seg.filter(pl.col(by).cast(pl.String) == row["group"])
        for col, names in (("ddp", ("mean_ddp", "median_ddp", "p90_ddp", "max_ddp", "zero_ddp_share")),
                           ("ddp_certified", ("mean_ddp_certified", "median_ddp_certified", "p90_ddp_certified",
                                              "max_ddp_certified", "zero_ddp_certified_share"))):
            assert np.allclose([row[n] for n in names], _numpy_figures(g[col].to_numpy()), rtol=0, atol=1e-9), \
                (row["group"], col)


def test_summarize_gives_the_certified_figures() -> None:
    import ddpcore

    seg = pl.DataFrame({"document_id": ["a", "a", "a", "b", "c", "c", "c"], "domain": ["x"] * 4 + ["y"] * 3,
                        "ddp": [0, 4, 20, 1, 7, 3, 9], "ddp_certified": [0, 2, 16, 0, 7, 0, 5]})
    got = ddpcore.summarize(seg)
    assert got.columns[:8] == ["group", "documents", "segments", "mean_ddp", "median_ddp", "p90_ddp", "max_ddp",
                               "zero_ddp_share"]  # the old columns first, as they were
    assert got["group"].to_list() == ["x", "y", "all"]
    _check_summary(got.to_dicts(), seg, "domain")
    # without the column: ddp's figures alone, as before
    assert "mean_ddp_certified" not in ddpcore.summarize(seg.drop("ddp_certified")).columns


def test_summarize_refuses_fractional_certified_values() -> None:
    import ddpcore

    seg = pl.DataFrame({"document_id": ["a", "b"], "ddp": [1, 2], "ddp_certified": [0.5, 1.0]})
    with pytest.raises(DDPDataError, match=r"\[D260\] <table>, column 'ddp_certified': expected whole numbers"):
        ddpcore.summarize(seg)


@pytest.mark.spacy_model
def test_profile_summary_prints_both_columns(shard_run: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    seg = pl.read_parquet(shard_run / "full.parquet")
    code, out, err = _run(capsys, "profile", str(MINI), "-o", str(tmp_path / "o.parquet"), "-q", "-f", "json",
                          "--summary-by", "document_id")
    assert code == 0, err
    res = json.loads(out)
    _check_summary(res["summary"], seg, "document_id")
    code, out, err = _run(capsys, "profile", str(MINI), "-o", str(tmp_path / "t.parquet"), "-q")
    assert code == 0, err
    lines = out.splitlines()
    header = lines[1]
    assert header.split()[-5:] == ["c.mean", "c.median", "c.p90", "c.max", "c.zero%"]
    rows = [ln for ln in lines[3:] if ln.strip() and not ln.startswith("wrote")]
    assert rows and all(len(ln) == len(header) for ln in rows)  # aligned under the header
    total = next(ln for ln in rows if ln.startswith("all "))
    x = seg["ddp_certified"].to_numpy()
    assert total.split()[-5:] == [f"{x.mean():.1f}", f"{np.median(x):.1f}", f"{np.percentile(x, 90):.1f}",
                                  str(x.max()), f"{100 * (x == 0).mean():.1f}%"]
    assert "c. columns: ddp_certified" in lines[-1]


# ------------------------------------------------------------------ 3. a named default model on a parser-free pipeline


def test_a_named_default_model_is_kept_without_a_parser() -> None:
    from ddpcore.anchors.rules import get_rules
    from ddpcore.cli._common import resolve_rules

    rules = get_rules(None)
    assert rules.for_pipeline(False).certify_model == NOPARSER_CERTIFY_MODEL  # not named: the swap stays
    named = resolve_rules(None, DEFAULT_CERTIFY_MODEL)
    assert named.certify_model == DEFAULT_CERTIFY_MODEL and named.for_pipeline(False) is named
    info = named.certify_info(has_parser=False)
    assert info["file"] == DEFAULT_CERTIFY_MODEL and info["parse_features"] == "absent" and "replaces" not in info
    assert "trained with one" in named.certify_note(False)
    api_named = dataclasses.replace(rules, certify_model_named=True)
    assert api_named.for_pipeline(False) is api_named


@pytest.mark.spacy_model
@pytest.mark.parametrize("named", [True, False], ids=["named", "not-named"])
def test_profile_fast_with_the_default_model_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   named: bool) -> None:
    src = tmp_path / "in.jsonl"
    pl.read_ndjson(MINI).head(4).write_ndjson(src)
    out = tmp_path / "o.parquet"
    code, _, err = _run(capsys, "profile", str(src), "--pipeline", "fast", "-o", str(out), "-q", "--no-cache",
                        *(["--certify-model", DEFAULT_CERTIFY_MODEL] if named else []))
    assert code == 0, err
    cert = _sig(out)["certify"]
    if named:  # kept, with the warning and parse_features "absent" (docs/validation.md)
        assert cert["file"] == DEFAULT_CERTIFY_MODEL and cert["parse_features"] == "absent"
        assert "replaces" not in cert and "trained with one" in err
    else:  # the default swap
        assert cert["file"] == NOPARSER_CERTIFY_MODEL and cert["replaces"] == DEFAULT_CERTIFY_MODEL
        assert "parser-free certification model" in err


@pytest.mark.spacy_model
def test_explain_api_keeps_a_named_model_and_swaps_an_inherited_one(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """``explain(certify_model=...)`` names the model (kept on `fast`); the model inherited from a swapped
    run's signature is swapped again, as the run did."""
    from ddpcore.explain import explain

    src = tmp_path / "in.jsonl"
    pl.read_ndjson(MINI).head(4).write_ndjson(src)
    first = pl.read_ndjson(src).row(0, named=True)
    with pytest.warns(UserWarning, match="trained with one"):
        res = explain(src, document_id=first["document_id"], segment_id=first["segment_id"], pipeline="fast",
                      certify_model=DEFAULT_CERTIFY_MODEL)
    assert res.signature["certify"]["file"] == DEFAULT_CERTIFY_MODEL
    out = tmp_path / "o.parquet"
    assert main(["profile", str(src), "--pipeline", "fast", "-o", str(out), "-q", "--no-cache"]) == 0
    capsys.readouterr()
    with pytest.warns(UserWarning, match="parser-free"):
        res = explain(out, document_id=first["document_id"], segment_id=first["segment_id"])
    assert res.signature["certify"]["file"] == NOPARSER_CERTIFY_MODEL


# ------------------------------------------------------------------ 4. model files the protocol never writes


def _model(**over: object) -> dict:  # type: ignore[type-arg]
    doc = json.loads((DATA_DIR / NOPARSER_CERTIFY_MODEL).read_text(encoding="utf-8"))
    doc.update(over)
    return doc


def _load(tmp_path: Path, doc: dict):  # type: ignore[no-untyped-def,type-arg]
    p = tmp_path / "m.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    return load_certify_model(p, FEATURES)


@pytest.mark.parametrize("value", ["false", "true", 0, None, [False]])
def test_recipe_parser_not_a_boolean_is_d330(tmp_path: Path, value: object) -> None:
    doc = _model()
    doc["recipe"] = {**doc["recipe"], "parser": value}
    with pytest.raises(DDPDataError, match=r"^\[D330\] .*field 'recipe.parser' must be true or false"):
        _load(tmp_path, doc)


def test_recipe_parser_booleans_and_absent_still_load(tmp_path: Path) -> None:
    doc = _model()
    assert _load(tmp_path, doc).trained_with_parser is False  # the shipped parser-free model: "parser": false
    doc["recipe"] = {**doc["recipe"], "parser": True}
    assert _load(tmp_path, doc).trained_with_parser is True
    del doc["recipe"]["parser"]
    assert _load(tmp_path, doc).trained_with_parser is True  # older files: trained with a parser


@pytest.mark.parametrize("t,tn,tl,ok", [
    (0.95, 0.92, 0.91, False),  # below both short thresholds: D331
    (0.95, 0.92, 0.92, True),   # equal to the lower one: the protocol's bound (tl >= min(t, tn))
    (0.95, 0.92, 0.93, True),   # between them: the shipped models
    (0.9, 0.9, 0.97, True),
])
def test_long_threshold_below_both_short_ones_is_d331(tmp_path: Path, t: float, tn: float, tl: float,
                                                      ok: bool) -> None:
    doc = _model(threshold=t, threshold_name=tn, threshold_long=tl)
    if ok:
        assert _load(tmp_path, doc).threshold_long == tl
    else:
        with pytest.raises(DDPDataError, match=r"^\[D331\] .*field 'threshold_long' is 0.91, below both short"):
            _load(tmp_path, doc)


def test_layout4_long_threshold_below_its_one_short_threshold_is_d331(tmp_path: Path) -> None:
    doc = _model(version=4, threshold=0.95, threshold_long=0.9)
    del doc["threshold_name"]
    with pytest.raises(DDPDataError, match=r"^\[D331\]"):
        _load(tmp_path, doc)


def test_cli_refuses_such_a_model_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _model()
    doc["recipe"] = {**doc["recipe"], "parser": "false"}
    m = tmp_path / "m.json"
    m.write_text(json.dumps(doc), encoding="utf-8")
    code, _, err = _run(capsys, "profile", str(MINI), "-o", str(tmp_path / "o.parquet"), "--certify-model", str(m))
    assert code == 3 and err.startswith("ddp profile: error: [D330]") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o.parquet").exists()
