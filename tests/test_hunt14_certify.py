"""Bug hunt 14: the certification model at run time (loading, swapping for a pipeline without a parser,
recording, explaining).

Defects fixed here (each test below fails without its fix):

* a model file whose ``recipe`` or ``figures`` is not an object, or whose ``weights``/``mean``/``scale`` hold a
  list, ``true`` or ``null``, loaded (D999 at the first use; nested weights only after the whole parse);
  ``long_distance`` 15.7 was cut to 15 in silence; a threshold of 0 (every distance certified, a pronoun's
  default distance too) or 1 was accepted: now D251 / D255 / D256 at load, before any parse;
* the ``relative_position`` feature was divided by polars, which divides by a column holding one value (a
  batch of one segment) as a product with the reciprocal: an anchor's ``confidence`` depended, in its last
  bit, on the batching (``--batch-chars``) and ``ddp explain`` of a one-segment document disagreed with the
  anchors table;
* ``ddp explain`` of a ``--pipeline fast`` output certified with the shipped parser model named by its path
  (kept, ``parse_features: "absent"``) re-ran with the parser-free model (the recorded file by its bare name
  is the default, which a parser-free pipeline replaces), and blamed the output's signature for the difference.
"""
from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.anchors import certify as C
from ddpcore.anchors.certify_model import CERTIFY_FORMAT, DATA_DIR, DEFAULT_CERTIFY_MODEL, load_certify_model
from ddpcore.cli.main import main
from ddpcore.errors import DDPDataError

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "wmt25_mini.jsonl"
N = len(C.FEATURES)


def _doc(**over):  # type: ignore[no-untyped-def]
    doc = {"format": CERTIFY_FORMAT, "version": 5, "features": list(C.FEATURES), "weights": [0.1] * N,
           "mean": [0.0] * N, "scale": [1.0] * N, "bias": -1.0, "threshold": 0.8, "threshold_name": 0.85,
           "threshold_long": 0.9, "long_distance": 15, "long_full_only": True}
    doc.update(over)
    return doc


BAD = [
    ("recipe-list", _doc(recipe=[1, 2]), "D251", "field 'recipe' must be an object"),
    ("recipe-str", _doc(recipe="fast"), "D251", "field 'recipe' must be an object"),
    ("figures-list", _doc(figures=[0.5]), "D251", "field 'figures' must be an object"),
    ("weights-nested", _doc(weights=[[0.1]] * N), "D255", "field 'weights' holds a value that is not a number"),
    ("weights-bool", _doc(weights=[True] * N), "D255", "field 'weights' holds a value that is not a number"),
    ("mean-null", _doc(mean=[None] * N), "D255", "field 'mean' holds a value that is not a number"),
    ("long-distance-fraction", _doc(long_distance=15.7), "D256", "field 'long_distance' must be a whole number"),
    ("threshold-0", _doc(threshold=0), "D256", "field 'threshold' is 0: a threshold must lie strictly between"),
    ("threshold-name-0", _doc(threshold_name=0.0), "D256", "field 'threshold_name' is 0"),
    ("threshold-long-1", _doc(threshold_long=1), "D256", "field 'threshold_long' is 1"),
]


@pytest.mark.parametrize("doc,code,what", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_model_fields_are_coded_errors_at_load(tmp_path: Path, doc, code: str, what: str) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "m.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(DDPDataError) as e:
        load_certify_model(p, C.FEATURES)
    assert str(e.value).startswith(f"[{code}] {p}: {what}")
    assert "\n" not in str(e.value)


def test_whole_long_distance_as_float_still_loads(tmp_path: Path) -> None:
    """15.0 is a whole number of sentences (what a JSON writer may make of 15): read as 15."""
    p = tmp_path / "m.json"
    p.write_text(json.dumps(_doc(long_distance=15.0, threshold=0.01, threshold_long=0.99)))
    m = load_certify_model(p, C.FEATURES)
    assert m.long_distance == 15 and isinstance(m.long_distance, int)
    assert (m.threshold, m.threshold_long) == (0.01, 0.99)


CLI_BAD = [(b[0], json.dumps(b[1]), b[2]) for b in BAD if b[0] in ("recipe-list", "weights-nested", "threshold-0",
                                                                  "long-distance-fraction")] + [
    ("not-json", "{\"format\": ", "D251"),
    ("wrong-version", json.dumps(_doc(version=6)), "D252"),
    ("order", json.dumps(_doc(features=[C.FEATURES[1], C.FEATURES[0], *C.FEATURES[2:]])), "D253"),
    ("nan-threshold", json.dumps(_doc(threshold=float("nan"))), "D256"),
]


@pytest.mark.parametrize("content,code", [c[1:] for c in CLI_BAD], ids=[c[0] for c in CLI_BAD])
def test_cli_refuses_a_bad_model_before_any_parse(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch, content: str, code: str) -> None:
    """One D-coded line, exit 3 (docs/errors.md), no parser loaded, no cache folder made, no output written."""
    from ddpcore.pipeline import parse

    monkeypatch.setattr(parse.Parser, "__init__", lambda *a, **k: pytest.fail("parsed before the model was checked"))
    (tmp_path / "m.json").write_text(content)
    out, cache = tmp_path / "out.parquet", tmp_path / "cache"
    rc = main(["profile", str(MINI), "-o", str(out), "--certify-model", str(tmp_path / "m.json"), "--cache", str(cache),
               "-q"])
    err = capsys.readouterr().err.strip()
    assert rc == 3, err
    assert err.startswith(f"ddp profile: error: [{code}] ") and "\n" not in err and "D999" not in err
    assert not out.exists() and not cache.exists()


@pytest.mark.parametrize("what", ["directory", "typo"])
def test_cli_refuses_a_model_path_that_is_no_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str) -> None:
    (tmp_path / "m.json").mkdir()
    model = tmp_path / ("m.json" if what == "directory" else "m.jsno")
    rc = main(["profile", str(MINI), "-o", str(tmp_path / "o.parquet"), "--certify-model", str(model), "--no-cache",
               "-q"])
    err = capsys.readouterr().err.strip()
    assert rc == 3 and err.startswith(f"ddp profile: error: [D250] {model}: cannot read the certification model")


def test_relative_position_does_not_depend_on_the_batch() -> None:
    """The same anchor in a table of one segment and of two gets the same features, bit for bit; the
    expected ``relative_position`` is Python's (IEEE, correctly rounded) division of its character offset by
    its segment's length. 129 / 467 is a pair whose product with the reciprocal, 129 * (1 / 467), is one bit
    off the quotient (checked in the test, so that it can fail)."""
    text = "x" * 129 + "He" + "y" * (467 - 131)
    assert 129 / 467 != 129 * (1 / 467)
    row = dict(document_id="d", segment_id=0, anchor_index=0, sentence=0, kind="pronoun", label="MASC_SG", text="He",
               char_start=129, char_end=131, entity_id=-1, antecedent_kind="none", antecedent_text=None,
               antecedent_sentence=-1, reference_sentence=-1, distance_sentences=1, role="subject",
               antecedent_role="none", n_candidates=0)
    types = {"document_id": pl.String, "segment_id": pl.Int64, "anchor_index": pl.Int64, "sentence": pl.Int64,
             "kind": pl.String, "label": pl.String, "text": pl.String, "char_start": pl.Int64, "char_end": pl.Int64,
             "entity_id": pl.Int64, "antecedent_kind": pl.String, "antecedent_text": pl.String,
             "antecedent_sentence": pl.Int64, "reference_sentence": pl.Int64, "distance_sentences": pl.Int64,
             "role": pl.String, "antecedent_role": pl.String, "n_candidates": pl.Int64}
    rows = [row, dict(row, anchor_index=1)]  # two anchors of one segment: its length repeats in one column
    one = C.anchor_features(pl.DataFrame(rows, schema=types),
                            pl.DataFrame({"document_id": ["d"], "segment_id": [0], "source": [text]}))
    other = dict(row, document_id="e", char_start=0, char_end=2)
    two = C.anchor_features(pl.DataFrame([*rows, other], schema=types),
                            pl.DataFrame({"document_id": ["d", "e"], "segment_id": [0, 0], "source": [text, "He left."]}))
    k = C.ANCHOR_FEATURES.index("relative_position")
    assert one[:, k].tolist() == [129 / 467] * 2 and two[:, k].tolist() == [129 / 467] * 2 + [0.0]
    assert (one == two[:2]).all()


# --------------------------------------------------------------------------- a whole run, its tables and explain


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """wmt25_mini (20 segments, 7 documents, one of them a single segment) profiled with its anchors and
    sentences tables, once in one batch and once a batch per document (--batch-chars 1)."""
    d = tmp_path_factory.mktemp("run")
    cache = d / "cache"
    paths = {"seg": d / "seg.parquet", "anc": d / "anc.parquet", "sen": d / "sen.parquet",
             "anc1": d / "anc1.parquet", "cache": cache}
    assert main(["profile", str(MINI), "-o", str(paths["seg"]), "--anchors", str(paths["anc"]), "--sentences",
                 str(paths["sen"]), "--cache", str(cache), "-j", "1", "-q"]) == 0
    assert main(["profile", str(MINI), "-o", str(d / "seg1.parquet"), "--anchors", str(paths["anc1"]),
                 "--batch-chars", "1", "--cache", str(cache), "-j", "1", "-q"]) == 0
    return paths


def test_confidence_bits_do_not_depend_on_the_batch_size(run: dict[str, Path]) -> None:
    whole, batched = pl.read_parquet(run["anc"]), pl.read_parquet(run["anc1"])
    assert whole.height == batched.height > 50
    keys = ["document_id", "segment_id", "anchor_index"]
    a, b = whole.sort(keys), batched.sort(keys)
    for x, y in zip(a["confidence"].to_list(), b["confidence"].to_list()):
        assert (math.isnan(x) and math.isnan(y)) or x == y, (x, y)  # bit for bit, not approx
    assert a["distance_certified"].to_list() == b["distance_certified"].to_list()


def test_every_table_records_the_model(run: dict[str, Path]) -> None:
    want = load_certify_model(DATA_DIR / DEFAULT_CERTIFY_MODEL, C.FEATURES)
    for key in ("seg", "anc", "sen"):
        sig = json.loads(pq.read_schema(run[key]).metadata[b"ddpcore.signature"])
        cert = sig["certify"]
        assert (cert["file"], cert["sha256"], cert["version"]) == (DEFAULT_CERTIFY_MODEL, want.sha256, want.version)
        assert (cert["threshold"], cert["threshold_name"], cert["threshold_long"]) == \
            (want.threshold, want.threshold_name, want.threshold_long)
        assert cert["pipeline_has_parser"] is True and "replaces" not in cert


def test_certified_columns_follow_the_recorded_thresholds(run: dict[str, Path]) -> None:
    """A slow loop over the anchors table: ``certified`` is the full distance's confidence against the threshold
    of its anchor's kind and distance that the signature records (docs/validation.md: pronouns ``threshold``,
    names ``threshold_name`` below ``long_distance`` sentences, ``threshold_long`` from there); a certified
    anchor counts its full distance; no anchor counts more than its distance; a first mention has NaN."""
    cert = json.loads(pq.read_schema(run["anc"]).metadata[b"ddpcore.signature"])["certify"]
    n_cert = 0
    for r in pl.read_parquet(run["anc"]).iter_rows(named=True):
        d = r["distance_sentences"]
        if d <= 0:
            assert math.isnan(r["confidence"]) and not r["certified"] and r["distance_certified"] == 0
            continue
        thr = cert["threshold_long"] if d >= cert["long_distance"] else \
            cert["threshold"] if r["kind"] == "pronoun" else cert["threshold_name"]
        assert r["certified"] == (r["confidence"] >= thr), r
        assert 0 <= r["distance_certified"] <= d
        if r["certified"]:
            assert r["distance_certified"] == d
            n_cert += 1
    assert n_cert > 5  # the run certifies something (the loop is not vacuous)


def test_segment_and_sentence_certified_ddp_are_the_max_of_their_anchors(run: dict[str, Path]) -> None:
    """ddp_certified (sentence_ddp_certified) = the largest distance_certified of the segment's (sentence's)
    anchors, 0 without any: a plain loop over every row of the anchors table for every segment."""
    anchors = pl.read_parquet(run["anc"]).to_dicts()
    segs = pl.read_parquet(run["seg"]).to_dicts()
    for s in segs:
        best = 0
        for a in anchors:
            if a["document_id"] == s["document_id"] and a["segment_id"] == s["segment_id"]:
                best = max(best, a["distance_certified"])
        assert s["ddp_certified"] == best, s
        assert s["ddp_certified"] <= s["ddp"]
    assert sum(s["ddp_certified"] for s in segs) > 0
    for t in pl.read_parquet(run["sen"]).to_dicts():
        best = 0
        for a in anchors:
            if (a["document_id"], a["segment_id"], a["sentence"]) == (t["document_id"], t["segment_id"], t["sentence"]):
                best = max(best, a["distance_certified"])
        assert t["sentence_ddp_certified"] == best, t


def test_explain_of_every_segment_agrees_with_the_anchors_table(run: dict[str, Path]) -> None:
    """``ddp explain`` of each segment of the output (same model, inherited from the signature): the same
    certified, confidence (bit for bit) and distance_certified per anchor as the run's anchors table, and
    the segment's ddp_certified; the text says certified exactly for the table's certified anchors."""
    from ddpcore.explain import explain

    anchors = pl.read_parquet(run["anc"])
    keys = ["anchor_index"]
    for s in pl.read_parquet(run["seg"]).iter_rows(named=True):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "the re-parse gives ... where the output's row says"
            warnings.filterwarnings("ignore", message=".*parse cache folder.*")
            ex = explain(run["seg"], document_id=s["document_id"], segment_id=s["segment_id"], cache=str(run["cache"]))
        assert ex.ddp_certified == s["ddp_certified"]
        mine = anchors.filter((pl.col("document_id") == s["document_id"])
                              & (pl.col("segment_id") == s["segment_id"])).sort(keys)
        got = ex.anchors.sort(keys)
        assert got["certified"].to_list() == mine["certified"].to_list()
        assert got["distance_certified"].to_list() == mine["distance_certified"].to_list()
        for x, y in zip(got["confidence"].to_list(), mine["confidence"].to_list()):
            assert (math.isnan(x) and math.isnan(y)) or x == y, (s["document_id"], s["segment_id"], x, y)
        lines = [ln for ln in ex.to_text().splitlines() if ln[:3] in ("* s", "  s")]
        for ln, c in zip(lines, mine.sort("sentence", "anchor_index")["certified"].to_list()):
            assert ("; certified (" in ln) == c, ln


# --------------------------------------------------------------------------- --pipeline fast


@pytest.fixture(scope="module")
def fast_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """wmt25_mini profiled with --pipeline fast: with the default model (replaced by the parser-free one) and
    with the shipped parser model named by its path (kept, parse features absent)."""
    d = tmp_path_factory.mktemp("fast")
    out = {"swapped": d / "swapped.parquet", "kept": d / "kept.parquet", "cache": d / "cache"}
    assert main(["profile", str(MINI), "-o", str(out["swapped"]), "--pipeline", "fast", "--cache", str(out["cache"]),
                 "-j", "1", "-q"]) == 0
    assert main(["profile", str(MINI), "-o", str(out["kept"]), "--pipeline", "fast", "--certify-model",
                 str(DATA_DIR / DEFAULT_CERTIFY_MODEL), "--cache", str(out["cache"]), "-j", "1", "-q"]) == 0
    return out


def test_fast_records_which_model_and_the_columns_differ(fast_runs: dict[str, Path]) -> None:
    sig = {k: json.loads(pq.read_schema(fast_runs[k]).metadata[b"ddpcore.signature"])["certify"]
           for k in ("swapped", "kept")}
    assert sig["swapped"]["file"] == "certify-v5-noparser.json" and sig["swapped"]["replaces"] == DEFAULT_CERTIFY_MODEL
    assert sig["swapped"]["pipeline_has_parser"] is False and sig["swapped"]["trained_with_parser"] is False
    assert sig["kept"]["file"] == DEFAULT_CERTIFY_MODEL and sig["kept"]["parse_features"] == "absent"
    assert "replaces" not in sig["kept"] and sig["swapped"]["sha256"] != sig["kept"]["sha256"]
    a, b = (pl.read_parquet(fast_runs[k]) for k in ("swapped", "kept"))
    assert a["ddp"].to_list() == b["ddp"].to_list()  # the same parse...
    assert a["ddp_certified"].to_list() != b["ddp_certified"].to_list()  # ...not the same numbers under two labels
    assert a["ddp_certified"].sum() > b["ddp_certified"].sum()  # the parse model without a parse certifies less


def test_explain_of_a_fast_run_keeps_the_recorded_parser_model(fast_runs: dict[str, Path]) -> None:
    """Explaining the run that kept the shipped parser model re-runs that model (not the parser-free one the
    bare name would be swapped for): every segment's ddp_certified is the output's, with no warning that the
    signature is of another run; the swapped run still explains with the parser-free model."""
    from ddpcore.explain import explain

    for key, file in (("kept", DEFAULT_CERTIFY_MODEL), ("swapped", "certify-v5-noparser.json")):
        out = pl.read_parquet(fast_runs[key])
        assert key == "swapped" or out["ddp_certified"].to_list() != \
            pl.read_parquet(fast_runs["swapped"])["ddp_certified"].to_list()  # the two models tell apart
        for s in out.iter_rows(named=True):
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                ex = explain(fast_runs[key], document_id=s["document_id"], segment_id=s["segment_id"],
                             cache=str(fast_runs["cache"]))
            assert not [w for w in said if "re-parse" in str(w.message)], [str(w.message) for w in said]
            assert ex.signature["certify"]["file"] == file
            assert ex.ddp_certified == s["ddp_certified"], (key, s)


@pytest.mark.parametrize("command", ["profile", "explain", "validate"])
def test_an_empty_certify_model_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    """``--certify-model ""`` (an unset shell variable) profiled without any certified column, exit 0, nothing
    said (the rule set's empty model means no certification); now D321, exit 2, before anything is read."""
    out = tmp_path / "o.parquet"
    argv = [command, str(MINI), "--certify-model", ""] + (["-o", str(out), "--no-cache", "-q"] if command == "profile"
                                                        else ["--document", "d", "--segment", "0"]
                                                        if command == "explain" else [])
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert e.value.code == 2 and f"ddp {command}: error: argument --certify-model: [D321] an empty path" in err
    assert not out.exists()


@pytest.mark.parametrize("key,value,code", [("weights", "[" + ", ".join(["0.1"] * (N - 1) + ["1" + "0" * 400]) + "]", "D255"),
                                            ("bias", "1" + "0" * 400, "D256"), ("threshold_long", "2" + "0" * 400, "D256")])
def test_an_integer_too_large_for_a_float_is_a_coded_error(tmp_path: Path, key: str, value: str, code: str) -> None:
    """JSON integers have no size limit; one of 401 digits raised OverflowError (D999) where a float was made."""
    p = tmp_path / "m.json"
    p.write_text(json.dumps({**_doc(), key: "@"}).replace('"@"', value))
    with pytest.raises(DDPDataError, match=rf"^\[{code}\] .*field '{key}'"):
        load_certify_model(p, C.FEATURES)
