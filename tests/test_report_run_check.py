"""``ddp report --anchors A --stratify S``: the anchors table and the stratify result must come from the
profile's run. Their signatures are compared with the profile's as ``ddp merge`` compares shards (every
setting both record: rules, distance, pipeline, input and its SHA-256, certify model, ...): a difference is
D681 (exit 3, one line naming the setting and both values); a side without a signature is not compared,
and a note on stderr and in the page says so. The anchors table is validated when it is read: a missing
column, a column of the wrong type or a null where ``ddp profile`` always writes a value is D680 naming the
file, the row and the column (a null distance_sentences was a D999 TypeError in the explain table).

Profiles and anchors are hand-made Parquet files with signatures shaped like a real run's (no spaCy), and one
test profiles a small input for real (two rule sets, and two shards merged)."""
from __future__ import annotations

import copy
import html as html_mod
import json
import math
import re
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.cli.main import main

pytest.importorskip("matplotlib")

#: a signature as `ddp profile` writes it (the keys that matter here)
RUN = {"ddpcore": "0.1.0", "distance": "chained", "rules": "refined", "rules_description": "paper + ...",
       "pipeline": "default", "pipeline_name": "en_core_web_sm", "pipeline_version": "3.8.0",
       "components": ["tok2vec", "tagger", "parser", "attribute_ruler", "ner"], "has_parser": True,
       "head_nouns": "dependency labels", "sentence_unit": "sentence", "input": "corpus.jsonl",
       "certify": {"file": "certify-v5.json", "sha256": "87a3" + "0" * 60, "threshold": 0.95, "version": 5},
       "columns": {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"},
       "batches": 1, "n_process": 1, "cache": {"dir": "/tmp/c", "hits": 0, "misses": 5}}

TEXTS = ["Alice Smith met Bob at the station. They talked.", "It was late. She left.",
         "Later, Alice called him again. He answered."]


def _write(df: pl.DataFrame, path: Path, sig: dict | None) -> Path:
    t = df.to_arrow()
    t = t.replace_schema_metadata(None if sig is None else {b"ddpcore.signature": json.dumps(sig).encode()})
    pq.write_table(t, path)
    return path


def _profile_df() -> pl.DataFrame:
    return pl.DataFrame({"document_id": ["a", "a", "a"], "segment_id": [0, 1, 2], "domain": ["news"] * 3,
                         "n_sentences": [2, 2, 2], "ddp": [0, 3, 4], "first_sentence": [0, 2, 4], "source": TEXTS})


def _anchors_df() -> pl.DataFrame:
    she, alice = TEXTS[1].index("She"), TEXTS[2].index("Alice")
    return pl.DataFrame({
        "document_id": ["a", "a", "a"], "segment_id": [0, 1, 2], "anchor_index": [0, 1, 2], "sentence": [0, 3, 4],
        "kind": ["entity", "pronoun", "entity"], "label": ["PERSON", "FEM_SG", "PERSON"],
        "text": ["Alice Smith", "She", "Alice"], "char_start": [0, she, alice], "char_end": [11, she + 3, alice + 5],
        "entity_id": [0, -1, 0], "antecedent_kind": ["first_mention", "entity", "entity"],
        "antecedent_text": [None, "Alice Smith", "Alice Smith"], "antecedent_sentence": [-1, 0, 0],
        "reference_sentence": [-1, 0, 0], "distance_sentences": [-1, 3, 4]})


@pytest.fixture()
def run(tmp_path: Path) -> tuple[Path, Path]:
    return (_write(_profile_df(), tmp_path / "ddp.parquet", RUN),
            _write(_anchors_df(), tmp_path / "anchors.parquet", RUN))


def _report(capsys, *args: str) -> tuple[int, list[str]]:
    code = main(["report", *args])
    return code, capsys.readouterr().err.strip().splitlines()


def _changed(sig: dict, key: str, value) -> dict:
    """``sig`` with ``key`` (``a.b`` for an entry of a dict setting) set to ``value`` (None: removed)."""
    out = copy.deepcopy(sig)
    head, _, sub = key.partition(".")
    target = out[head] if sub else out
    name = sub or head
    if value is None:
        target.pop(name, None)
    else:
        target[name] = value
    return out


def _meta(page: str) -> dict:
    return json.loads(html_mod.unescape(re.search(r'name="ddpcore-signature" content="([^"]*)"', page).group(1)))


# ---------------------------------------------------------------- bug 1: the anchors table of another run


def test_anchors_of_the_same_run_are_shown_without_a_note(run, tmp_path: Path, capsys) -> None:
    """The run's own anchors (and the same settings with other batches, processes, cache or engine: they do
    not change a result) are accepted and highlighted, with no note."""
    p, a = run
    out = tmp_path / "r.html"
    code, err = _report(capsys, str(p), "--anchors", str(a), "-o", str(out))
    assert code == 0 and err == [f"ddp report: wrote {out}"]
    page = out.read_text(encoding="utf-8")
    assert re.search(r'<mark class="anchor"[^>]*>Alice</mark> called', page) and 'class="warn"' not in page
    assert "notes" not in _meta(page)
    other = {**RUN, "batches": 7, "n_process": 4, "cache": {"dir": "/elsewhere"}, "engine": "ray", "actors": 3}
    a2 = _write(_anchors_df(), tmp_path / "a2.parquet", other)
    code, err = _report(capsys, str(p), "--anchors", str(a2), "-o", str(tmp_path / "r2.html"))
    assert code == 0 and len(err) == 1
    # ... but not another rule set with them
    a3 = _write(_anchors_df(), tmp_path / "a3.parquet", {**other, "rules": "paper"})
    code, err = _report(capsys, str(p), "--anchors", str(a3), "-o", str(tmp_path / "r3.html"))
    assert code == 3 and len(err) == 1 and "[D681]" in err[0] and "'rules' differs" in err[0]


@pytest.mark.parametrize("key, value", [
    ("rules", "paper"),                       # `--rules paper` anchors under a refined profile (the report)
    ("distance", "nearest"),
    ("input", "other.jsonl"),                 # another input
    ("pipeline_name", "en_core_web_trf"),
    ("certify.sha256", "ffff" + "0" * 60),    # another certify model
    ("shard", "0/2"),                         # one shard's anchors under the whole run's profile
])
def test_anchors_of_another_run_are_refused(run, tmp_path: Path, capsys, key: str, value) -> None:
    p, _ = run
    a = _write(_anchors_df(), tmp_path / "other_anchors.parquet", _changed(RUN, key, value))
    out = tmp_path / "r.html"
    code, err = _report(capsys, str(p), "--anchors", str(a), "-o", str(out))
    assert code == 3 and len(err) == 1, err
    line = err[0]
    head, _, sub = key.partition(".")
    mine = (RUN[head][sub] if sub else RUN.get(head, "(the whole run)"))
    assert line.startswith("ddp report: error: [D681] --anchors ") and "other_anchors.parquet" in line
    assert f"'{key}' differs" in line and repr(value)[:40] in line and repr(mine)[:40] in line
    assert not out.exists()


def test_input_digest_decides_over_the_input_name(run, tmp_path: Path, capsys) -> None:
    """Both record the input's SHA-256: the same bytes under two names are one input; other bytes under one
    name are not (the digest is named, as ddp merge names it)."""
    p = _write(_profile_df(), tmp_path / "p.parquet", {**RUN, "input_sha256": "ab" * 32})
    same = _write(_anchors_df(), tmp_path / "same.parquet",
                  {**RUN, "input": "/data/copy/corpus.jsonl", "input_sha256": "ab" * 32})
    code, err = _report(capsys, str(p), "--anchors", str(same), "-o", str(tmp_path / "r.html"))
    assert code == 0, err
    changed = _write(_anchors_df(), tmp_path / "changed.parquet", {**RUN, "input_sha256": "cd" * 32})
    code, err = _report(capsys, str(p), "--anchors", str(changed), "-o", str(tmp_path / "r2.html"))
    assert code == 3 and len(err) == 1 and "[D681]" in err[0] and "'input_sha256' differs" in err[0]


def test_anchors_without_a_signature_are_shown_with_a_note(run, tmp_path: Path, capsys) -> None:
    p, _ = run
    a = _write(_anchors_df(), tmp_path / "bare.parquet", None)
    out = tmp_path / "r.html"
    code, err = _report(capsys, str(p), "--anchors", str(a), "-o", str(out))
    assert code == 0
    assert len(err) == 2 and err[0].startswith("ddp report: note: --anchors ") and "bare.parquet" in err[0]
    assert "no ddpcore signature" in err[0] and "not checked" in err[0]
    page = out.read_text(encoding="utf-8")
    assert re.search(r'<p class="warn">note: --anchors bare\.parquet: the anchors table carries no ddpcore '
                     r"signature.*not checked</p>", page)
    assert any("bare.parquet" in n and "not checked" in n for n in _meta(page)["notes"])
    assert re.search(r'<mark class="anchor"[^>]*>Alice</mark> called', page)  # still shown


# ---------------------------------------------------------------- bug 2: a stratify result of another profile


def _stratify(profile: Path, path: Path) -> Path:
    from ddpcore.cli.stratify import stratify_files
    from ddpcore.stats.stratify import dumps

    scores = pl.DataFrame({"system": ["s"] * 3, "document_id": ["a"] * 3, "segment_id": [0, 1, 2],
                           "score": [90.0, 80.0, 70.0]})
    scores.write_csv(path.with_suffix(".csv"))
    res = stratify_files(profile, path.with_suffix(".csv"), "score", bins=[0, 1, 5, math.inf], n_boot=20, seed=1)
    path.write_text(dumps(res), encoding="utf-8")
    return path


@pytest.mark.parametrize("key, value", [("rules", "paper"), ("input", "other.jsonl")])
def test_stratify_result_of_another_profile_is_refused(run, tmp_path: Path, capsys, key: str, value) -> None:
    p, _ = run
    other = _write(_profile_df(), tmp_path / "other.parquet", _changed(RUN, key, value))
    s = _stratify(other, tmp_path / "s.json")
    assert json.loads(s.read_text())["signature"]["profile_signature"][key] == value  # what it records
    out = tmp_path / "r.html"
    code, err = _report(capsys, str(p), "--stratify", str(s), "-o", str(out))
    assert code == 3 and len(err) == 1, err
    assert err[0].startswith("ddp report: error: [D681] --stratify ") and "computed on another profile" in err[0]
    assert f"'{key}' differs" in err[0] and repr(value) in err[0] and repr(RUN[key]) in err[0]
    assert not out.exists()
    # the result computed on this profile is shown, with no note
    own = _stratify(p, tmp_path / "own.json")
    code, err = _report(capsys, str(p), "--stratify", str(own), "-o", str(out))
    assert code == 0 and err == [f"ddp report: wrote {out}"]


def test_stratify_result_without_a_profile_signature_is_shown_with_a_note(run, tmp_path: Path, capsys) -> None:
    p, _ = run
    res = json.loads(_stratify(p, tmp_path / "s.json").read_text())
    del res["signature"]["profile_signature"]
    s = tmp_path / "old.json"
    s.write_text(json.dumps(res), encoding="utf-8")
    out = tmp_path / "r.html"
    code, err = _report(capsys, str(p), "--stratify", str(s), "-o", str(out))
    assert code == 0 and len(err) == 2 and err[0].startswith("ddp report: note: --stratify ")
    assert "old.json" in err[0] and "not checked" in err[0]
    assert '<p class="warn">note: --stratify old.json' in out.read_text(encoding="utf-8")


# ---------------------------------------------------------------- bug 4: the anchors table's values


@pytest.mark.parametrize("column, row", [("distance_sentences", 2), ("distance_sentences", 0), ("char_start", 1),
                                         ("sentence", 2), ("antecedent_sentence", 1)])
def test_null_in_an_anchors_number_column_is_d680(run, tmp_path: Path, capsys, column: str, row: int) -> None:
    p, _ = run
    df = _anchors_df().with_columns(pl.when(pl.int_range(pl.len()) == row).then(None)
                                    .otherwise(pl.col(column)).alias(column))
    a = _write(df, tmp_path / "hand.parquet", RUN)
    out = tmp_path / "x.html"
    code, err = _report(capsys, str(p), "--anchors", str(a), "-o", str(out))
    assert code == 3 and len(err) == 1, err
    assert err[0].startswith(f"ddp report: error: [D680] --anchors {a}, row {row + 1}, column {column}: no value")
    assert "D999" not in err[0] and not out.exists()


def test_whole_null_distance_column_is_d680_row_1(run, tmp_path: Path, capsys) -> None:
    """The reproduction: every distance_sentences null (was D999, TypeError in the explain table)."""
    p, _ = run
    a = _write(_anchors_df().with_columns(distance_sentences=pl.lit(None, dtype=pl.Int64)), tmp_path / "n.parquet",
               RUN)
    code, err = _report(capsys, str(p), "--anchors", str(a), "-o", str(tmp_path / "x.html"))
    assert code == 3 and len(err) == 1
    assert f"[D680] --anchors {a}, row 1, column distance_sentences: no value (null; 3 of 3 rows" in err[0]


def test_anchors_values_of_the_wrong_kind_are_d680(run, tmp_path: Path, capsys) -> None:
    p, _ = run
    frac = _anchors_df().with_columns(pl.Series("char_end", [11.0, 15.5, 20.0]))
    cases = [(frac, "row 2, column char_end: 15.5 is not a whole number"),
             (_anchors_df().with_columns(pl.Series("confidence", [0.5, None, float("nan")])),
              "row 2, column confidence: no value"),
             (_anchors_df().with_columns(pl.Series("text", [1, 2, 3])), "row 1, column text: 1 is not text")]
    for df, want in cases:
        a = _write(df, tmp_path / "bad.parquet", RUN)
        code, err = _report(capsys, str(p), "--anchors", str(a), "-o", str(tmp_path / "x.html"))
        assert code == 3 and len(err) == 1 and "[D680]" in err[0] and want in err[0], err
    # a CSV anchors table with a word in a number column names its row (1-based, the header not counted)
    csv = tmp_path / "anchors.csv"
    _anchors_df().with_columns(pl.Series("sentence", ["0", "3", "four"])).write_csv(csv)
    (tmp_path / "anchors.csv.signature.json").write_text(json.dumps(RUN), encoding="utf-8")
    code, err = _report(capsys, str(p), "--anchors", str(csv), "-o", str(tmp_path / "x.html"))
    assert code == 3 and len(err) == 1 and "row 3, column sentence: 'four' is not a whole number" in err[0]


def test_null_confidence_of_an_unmeasured_anchor_is_nan(run, tmp_path: Path, capsys) -> None:
    """A JSON anchors table writes NaN as null: a null confidence of an anchor that measures nothing
    (distance <= 0) is read as NaN, the same page as the NaN itself."""
    p, _ = run
    cert = {"certified": [False, True, True], "distance_certified": [0, 3, 4]}
    pages = []
    for name, first in (("nan", float("nan")), ("null", None)):
        df = _anchors_df().with_columns(pl.Series("confidence", [first, 0.97, 0.99], dtype=pl.Float64),
                                        *(pl.Series(k, v) for k, v in cert.items()))
        a = _write(df, tmp_path / f"{name}.parquet", RUN)
        out = tmp_path / f"{name}.html"
        assert _report(capsys, str(p), "--anchors", str(a), "-o", str(out))[0] == 0
        pages.append(re.sub(r'<meta name="ddpcore-signature"[^>]*>', "", out.read_text(encoding="utf-8")))
    assert pages[0] == pages[1] and "certified (confidence 0.970 &gt;= " in pages[0]
    # a null confidence of a measured distance (3 sentences, row 2) is refused: the explain table needs it
    df = _anchors_df().with_columns(pl.Series("confidence", [float("nan"), None, 0.99], dtype=pl.Float64),
                                    *(pl.Series(k, v) for k, v in cert.items()))
    a = _write(df, tmp_path / "measured.parquet", RUN)
    code, err = _report(capsys, str(p), "--anchors", str(a), "-o", str(tmp_path / "m.html"))
    assert code == 3 and len(err) == 1, err
    assert f"[D680] --anchors {a}, row 2, column confidence: no value (null) for a distance of 3" in err[0]


def test_whole_numbers_stored_as_floats_give_the_same_page(run, tmp_path: Path, capsys) -> None:
    p, a = run
    ints = tmp_path / "ints.html"
    assert _report(capsys, str(p), "--anchors", str(a), "-o", str(ints))[0] == 0
    df = _anchors_df().with_columns(pl.col("char_start", "char_end", "distance_sentences").cast(pl.Float64))
    fl = _write(df, tmp_path / "floats.parquet", RUN)
    floats = tmp_path / "floats.html"
    assert _report(capsys, str(p), "--anchors", str(fl), "-o", str(floats))[0] == 0
    strip = lambda s: re.sub(r'<meta name="ddpcore-signature"[^>]*>', "", s)  # noqa: E731 (names the file)
    assert strip(floats.read_text(encoding="utf-8")) == strip(ints.read_text(encoding="utf-8"))


# ---------------------------------------------------------------- real runs


MINI = Path(__file__).parent / "data" / "wmt25_mini.jsonl"


@pytest.mark.spacy_model
def test_real_runs(tmp_path: Path, capsys) -> None:
    """`ddp profile` outputs: a run's own anchors pass with no note (also after `ddp merge`); another rule
    set's, another input's or one shard's anchors are D681."""
    src = tmp_path / "in.jsonl"
    src.write_bytes(MINI.read_bytes())
    half = tmp_path / "half.jsonl"
    half.write_text("".join(MINI.read_text(encoding="utf-8").splitlines(keepends=True)[:8]), encoding="utf-8")
    common = ["-q", "-j", "1"]
    assert main(["profile", str(src), *common, "-o", str(tmp_path / "p.parquet"),
                 "--anchors", str(tmp_path / "a.parquet")]) == 0
    assert main(["profile", str(src), *common, "--rules", "paper", "-o", str(tmp_path / "pp.parquet"),
                 "--anchors", str(tmp_path / "pa.parquet")]) == 0
    assert main(["profile", str(half), *common, "-o", str(tmp_path / "h.parquet"),
                 "--anchors", str(tmp_path / "ha.parquet")]) == 0
    for i in range(2):
        assert main(["profile", str(src), *common, "--shard", f"{i}/2", "-o", str(tmp_path / f"s{i}.parquet"),
                     "--anchors", str(tmp_path / f"sa{i}.parquet")]) == 0
    assert main(["merge", *(str(tmp_path / f"{x}{i}.parquet") for i in range(2) for x in ("s", "sa")),
                 "-o", str(tmp_path / "m.parquet"), "--anchors", str(tmp_path / "ma.parquet"), "-q"]) == 0
    # a text output: JSON writes the NaN confidence of an anchor that measures nothing as null
    assert main(["profile", str(src), *common, "-o", str(tmp_path / "j.jsonl"),
                 "--anchors", str(tmp_path / "ja.jsonl")]) == 0
    capsys.readouterr()
    out = str(tmp_path / "r.html")
    for prof, anc in (("p", "a"), ("pp", "pa"), ("m", "ma"), ("j.jsonl", "ja.jsonl"), ("p", "ja.jsonl")):
        prof, anc = (prof if "." in prof else f"{prof}.parquet"), (anc if "." in anc else f"{anc}.parquet")
        code, err = _report(capsys, str(tmp_path / prof), "--anchors", str(tmp_path / anc), "-o", out)
        assert code == 0 and err == [f"ddp report: wrote {out}"], err
    for prof, anc, what in (("p", "pa", "'rules' differs: 'refined' in the profile's signature, 'paper'"),
                            ("p", "ha", "'input' differs"), ("m", "sa0", "'shard' differs")):
        code, err = _report(capsys, str(tmp_path / f"{prof}.parquet"), "--anchors", str(tmp_path / f"{anc}.parquet"),
                            "-o", out)
        assert code == 3 and len(err) == 1 and "[D681]" in err[0] and what in err[0], err
