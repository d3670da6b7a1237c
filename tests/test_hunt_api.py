"""The Python API as a client uses it (``ddpcore.profile``/``profile_anchors``/``summarize``, the
``DataFrame.ddp`` namespace): bad arguments fail with a ddpcore error naming what to do (not a bare
ValueError/TypeError/AttributeError from deep inside, nor a silent truncation), and the run signature
records what ``ddp profile`` records for the same input."""
from __future__ import annotations

import json
import warnings

import polars as pl
import pytest

import ddpcore
from ddpcore.api import ProfileOptions, profile_anchors, summarize
from ddpcore.errors import DDPDataError, DDPUsageError

MINI = pl.read_ndjson(__import__("pathlib").Path(__file__).parent / "data" / "wmt25_mini.jsonl")


def _wmt25_docs(tmp_path):
    """The first two documents of the mini set as a WMT25 documents JSONL (paragraph = segment)."""
    path = tmp_path / "docs25.jsonl"
    rows = []
    for (doc, dom), g in MINI.head(4).group_by(["document_id", "domain"], maintain_order=True):
        rows.append(json.dumps({"doc_id": doc, "domain": dom, "src_text": "\n\n".join(g["source"].to_list())}))
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------- signature = the CLI's


def test_api_signature_records_the_reader_as_the_cli(tmp_path, nlp):
    """The API's signature had no ``reader``: a wmt25 run's signature looked like a table run's (and
    ``explain`` of a result re-read the input as a table). Every key ``ddp profile`` records, the API
    records the same, but the file run's own (``input``, ``batches``, ``n_process``)."""
    import pyarrow.parquet as pq

    from ddpcore.cli.main import main

    src = _wmt25_docs(tmp_path)
    out = tmp_path / "cli.parquet"
    assert main(["profile", str(src), "--reader", "wmt25", "-o", str(out), "--no-cache", "-q", "-j", "1"]) in (0, None)
    cli_sig = json.loads(pq.read_schema(out).metadata[b"ddpcore.signature"])
    res = profile_anchors(str(src), nlp=nlp, cache=False, options=ProfileOptions(reader="wmt25"))
    assert res.segments.equals(pl.read_parquet(out))
    assert res.signature["reader"] == {"name": "wmt25", "docs": None, "txt_mode": "lines"}
    assert {k: v for k, v in cli_sig.items() if k not in ("input", "batches", "n_process")} == res.signature


def test_api_signature_of_a_default_table_run_has_no_reader(nlp):
    res = profile_anchors(MINI.head(2), nlp=nlp, cache=False)
    assert "reader" not in res.signature and "input" not in res.signature
    folder = profile_anchors(MINI.head(2), nlp=nlp, cache=False, options=ProfileOptions(txt_mode="paragraphs"))
    assert folder.signature["reader"] == {"name": "table", "docs": None, "txt_mode": "paragraphs"}


# ---------------------------------------------------------------- argument checks


@pytest.mark.parametrize("bad", ["many", 2.5, True, 0, -1, "0"])
def test_bad_n_process_is_d207(bad):
    """``n_process="many"`` raised a bare ValueError from int(); 2.5 was truncated to 2, True taken as 1."""
    with pytest.raises(DDPUsageError, match=r"\[D207\].*n_process"):
        ddpcore.profile(MINI.head(1), n_process=bad, cache=False)


def test_n_process_as_digits_still_works(nlp):
    assert ddpcore.profile(MINI.head(1), n_process="1", nlp=nlp, cache=False).height == 1


@pytest.mark.parametrize("bad", [3, 1.0, ["dir"]])
def test_bad_cache_is_d262(bad):
    """``cache=3`` raised ``TypeError: expected str, bytes or os.PathLike`` after the pipeline loaded."""
    with pytest.raises(DDPUsageError, match=r"\[D262\] cache must be"):
        ddpcore.profile(MINI.head(1), cache=bad)


@pytest.mark.parametrize("bad", ["4", 1.5, None, True])
def test_bad_n_threads_is_d263(bad):
    """``ProfileOptions(n_threads="4")`` raised ``TypeError: an integer is required`` from the kernel,
    after the whole parse."""
    with pytest.raises(DDPUsageError, match=r"\[D263\] n_threads"):
        ddpcore.profile(MINI.head(1), cache=False, options=ProfileOptions(n_threads=bad))


def test_nlp_must_be_a_loaded_pipeline():
    """``nlp="en_core_web_sm"`` (a name where a loaded pipeline goes) raised
    ``AttributeError: 'str' object has no attribute 'max_length'``."""
    with pytest.raises(DDPUsageError, match=r"\[D264\].*pipeline="):
        ddpcore.profile(MINI.head(1), nlp="en_core_web_sm", cache=False)


def test_namespace_passes_the_checks_on():
    with pytest.raises(DDPUsageError, match=r"\[D207\]"):
        MINI.head(1).ddp.profile(n_process="many")


# ---------------------------------------------------------------- summarize


def _segments() -> pl.DataFrame:
    return pl.DataFrame({"document_id": ["a", "a", "b", "b"], "segment_id": [0, 1, 0, 1],
                         "domain": ["news", "news", "speech", "speech"], "ddp": [0, 3, 1, 8]})


def test_summarize_refuses_fractional_ddp_instead_of_truncating():
    """A float ``ddp`` column was cast to Int64: 0.5/3.5/1.5/8.5 summarised as 0/3/1/8 (mean 3.0, not 3.5)."""
    seg = _segments().with_columns(pl.col("ddp") + 0.5)
    with pytest.raises(DDPDataError, match=r"\[D260\].*'ddp'.*0\.5"):
        summarize(seg)
    with pytest.raises(DDPDataError, match=r"\[D260\]"):
        summarize(_segments().with_columns(pl.lit(float("nan")).alias("ddp")))
    with pytest.raises(DDPDataError, match=r"\[D260\].*String"):
        summarize(_segments().with_columns(pl.col("ddp").cast(pl.String)))


def test_summarize_takes_whole_floats_as_ints():
    whole = summarize(_segments().with_columns(pl.col("ddp").cast(pl.Float64)))
    assert whole.equals(summarize(_segments()))


def test_summarize_missing_columns_are_ddpcore_errors():
    """A table without ``ddp`` (an unprofiled frame) or without the document column raised polars'
    ColumnNotFoundError."""
    with pytest.raises(DDPDataError, match=r"\[D260\].*no 'ddp' column.*ddpcore.profile"):
        summarize(_segments().drop("ddp"))
    with pytest.raises(DDPDataError, match=r"\[D110\].*document_id.*document_col="):
        summarize(_segments().drop("document_id"))


def test_summarize_by_a_missing_column_is_refused_like_the_cli():
    """``by="domian"`` (a typo) silently gave only the ``all`` row; ``ddp profile --summary-by`` refuses
    a missing column (D137). The default ``by="domain"`` on a table without it still gives the all row."""
    with pytest.raises(DDPUsageError, match=r"\[D137\].*domian"):
        summarize(_segments(), by="domian")
    with pytest.raises(DDPUsageError, match=r"\[D137\]"):
        _segments().ddp.summarize(by="domian")
    only_all = summarize(_segments().drop("domain"))
    assert only_all["group"].to_list() == ["all"] and only_all["segments"].to_list() == [4]
    assert summarize(_segments(), by=None)["group"].to_list() == ["all"]


def test_summarize_accepts_lazy_pandas_arrow_and_paths(tmp_path):
    """A LazyFrame raised TypeError, a pandas frame 'unhashable type: Expr', a path AttributeError."""
    want = summarize(_segments())
    assert want["mean_ddp"].to_list() == [1.5, 4.5, 3.0]
    assert summarize(_segments().lazy()).equals(want)
    assert summarize(_segments().to_pandas()).equals(want)
    assert summarize(_segments().to_arrow()).equals(want)
    _segments().write_parquet(tmp_path / "seg.parquet")
    assert summarize(tmp_path / "seg.parquet").equals(want)
    assert summarize(str(tmp_path / "seg.parquet")).equals(want)
    with pytest.raises(DDPUsageError, match=r"\[D105\]"):
        summarize([{"ddp": 1}])


def test_no_warnings_from_a_plain_run(nlp):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = profile_anchors(MINI.head(2), nlp=nlp, cache=False)
        res.summary()


# ---------------------------------------------------------------- in-memory inputs


def test_pandas_frames_polars_cannot_take_are_d266():
    """pl.from_pandas' ArrowTypeError / ArrowInvalid / ValueError escaped (a text column mixing numbers
    and text, ids mixing numbers and text, duplicated column names)."""
    pdf = MINI.head(2).to_pandas()
    mixed_text = pdf.copy()
    mixed_text["source"] = mixed_text["source"].astype(object)
    mixed_text.loc[1, "source"] = 5
    mixed_ids = pdf.copy()
    mixed_ids["segment_id"] = mixed_ids["segment_id"].astype(object)
    mixed_ids.loc[1, "segment_id"] = "x"
    import pandas as pd

    dup = pd.concat([pdf, pdf[["source"]]], axis=1)
    for bad in (mixed_text, mixed_ids, dup):
        with pytest.raises(DDPDataError, match=r"\[D266\] <table>: cannot convert the pandas table"):
            ddpcore.profile(bad, cache=False)


def test_a_column_named_like_the_internal_row_number_is_d265():
    """A ``__row`` input column failed with polars' DuplicateError (``ddp profile``: D999 internal error)."""
    with pytest.raises(DDPDataError, match=r"\[D265\].*'__row'.*rename or drop"):
        ddpcore.profile(MINI.head(2).with_columns(pl.lit(1).alias("__row")), cache=False)


def test_cli_reports_the_row_column_as_d265(tmp_path, capsys):
    from ddpcore.cli.main import main

    src = tmp_path / "in.parquet"
    MINI.head(2).with_columns(pl.lit(1).alias("__row")).write_parquet(src)
    assert main(["profile", str(src), "-o", str(tmp_path / "o.parquet"), "--no-cache", "-q", "-j", "1"]) == 3
    assert "[D265]" in capsys.readouterr().err


# ---------------------------------------------------------------- explain


def test_explain_to_dict_is_valid_json(nlp):
    """ExplainResult.to_dict() kept the NaN ``confidence`` of unscored anchors: ``ddp explain -f json``
    printed ``NaN``, which is not JSON (jq, JavaScript and json.loads(parse_constant=...) refuse it)."""
    res = ddpcore.explain(MINI, document_id="newrepublic.com.12623", segment_id=1, nlp=nlp, cache=False)
    assert res.anchors["confidence"].is_nan().any()  # the input has unscored anchors

    def refuse(const: str) -> None:
        raise ValueError(f"not JSON: {const}")

    d = json.loads(json.dumps(res.to_dict()), parse_constant=refuse)
    assert len(d["anchors"]) == res.anchors.height
    assert any(a["confidence"] is None for a in d["anchors"])
    assert d["ddp"] == res.ddp and d["document"] == "newrepublic.com.12623"


def test_ddpcore_explain_stays_callable_after_its_module_is_imported(tmp_path):
    """``from ddpcore.explain import ExplainResult`` (or ddpcore importing the module itself, e.g. the
    HTML report) rebound ``ddpcore.explain`` to the submodule: ``ddpcore.explain(...)`` then raised
    ``TypeError: 'module' object is not callable``. A fresh interpreter: in this one the lazy
    attribute may already have been resolved."""
    import subprocess
    import sys

    code = (
        "import inspect, ddpcore\n"
        "from ddpcore.explain import ExplainResult\n"
        "from ddpcore.errors import DDPDataError\n"
        "assert callable(ddpcore.explain), type(ddpcore.explain)\n"
        "assert 'document_id' in inspect.signature(ddpcore.explain).parameters\n"
        "try:\n"
        f"    ddpcore.explain({str(tmp_path / 'missing.jsonl')!r}, document_id='d', segment_id=0)\n"
        "except DDPDataError as exc:\n"
        "    print(exc.code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "D102"
