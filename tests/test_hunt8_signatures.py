"""Bug hunt 8, signatures and the commands that read a ddpcore output back (helper 34).

- a signature that is valid JSON but not an object (a sidecar ``[1, 2]``, Parquet metadata ``[1]``) made
  ``ddp select``/``ddp sample`` fail with D999 (``'list' object has no attribute 'get'``); it is no signature
  (``read_signature`` gives ``{}``), as for the other lenient readers;
- ``ddp merge`` of a shard whose Parquet signature is not JSON, not an object, or records a ``shard`` that is
  not ``I/N`` was D999 (JSONDecodeError, ValueError); now D175 naming the file;
- ``ddpcore.summarize(PATH)`` of a profile written with ``--document-col doc --domain-col genre`` ignored the
  column names its signature records: D110 on ``document_id``, and with ``document_col="doc"`` the per-domain
  rows were silently dropped (only ``all``);
- ``ddp select --profile P.parquet`` whose id columns are missing listed only the columns it had read
  (``columns: ddp, first_sentence, n_sentences``), not the profile's, so the message hid the names to give;
- ``ddp explain OUTPUT`` re-parsed with the settings of a signature that is not that of the table (a sidecar
  copied from another output, a table edited) and printed another DDP than the output's row, in silence;
- ``ddp report P --ddp-col NAME --anchors A`` on a profile without a ``ddp`` column was D999 (KeyError).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

#: a hand-made profile (no parse needed): 3 documents, 2 domains
PROFILE = {
    "document_id": ["d1", "d1", "d1", "d2", "d2", "d3"],
    "segment_id": [0, 1, 2, 0, 1, 0],
    "domain": ["news", "news", "news", "social", "social", "news"],
    "n_sentences": [1, 2, 1, 3, 1, 2],
    "ddp": [0, 2, 7, 0, 3, 1],
    "first_sentence": [0, 1, 3, 0, 3, 0],
    "source": ["a", "b", "c", "d", "e", "f"],
}
RENAMED = {"document_id": "doc", "segment_id": "seg", "domain": "genre", "source": "txt"}
COLUMNS = {"document": "doc", "segment": "seg", "domain": "genre", "text": "txt"}


def _ddp(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def _input(tmp_path: Path) -> Path:
    """The input the hand-made profile is "of": one JSON line per segment, in profile order."""
    path = tmp_path / "in.jsonl"
    rows = pl.DataFrame(PROFILE).select("document_id", "segment_id", "domain", "source")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows.iter_rows(named=True)), encoding="utf-8")
    return path


# ------------------------------------------------------------------ a signature that is not a JSON object


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("command", ["select", "sample"])
def test_select_sample_signature_not_an_object(tmp_path: Path, fmt: str, command: str) -> None:
    _input(tmp_path)
    if fmt == "csv":
        pl.DataFrame(PROFILE).write_csv(tmp_path / "p.csv")
        (tmp_path / "p.csv.signature.json").write_text("[1, 2]\n", encoding="utf-8")
    else:
        table = pa.table(PROFILE).replace_schema_metadata({b"ddpcore.signature": b"[1]"})
        pq.write_table(table, tmp_path / "p.parquet")
    extra = ["--min-ddp", "2"] if command == "select" else ["--per-bin", "10", "--unit", "segment"]
    r = _ddp(tmp_path, command, "in.jsonl", "--profile", f"p.{fmt}", "-o", "out.jsonl", *extra)
    assert r.returncode == 0, r.stderr
    assert "D999" not in r.stderr
    lines = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    got = [(d["document_id"], d["segment_id"]) for d in map(json.loads, lines)]
    if command == "select":  # a plain loop over the profile: the segments with ddp >= 2
        want = [(d, s) for d, s, x in zip(PROFILE["document_id"], PROFILE["segment_id"], PROFILE["ddp"]) if x >= 2]
        assert got == want
    else:  # 10 per bin is more than any bin holds: every segment, in input order
        assert got == list(zip(PROFILE["document_id"], PROFILE["segment_id"]))


def test_read_signature_of_a_list_is_empty(tmp_path: Path) -> None:
    from ddpcore.io.profiles import read_signature

    pl.DataFrame(PROFILE).write_csv(tmp_path / "p.csv")
    (tmp_path / "p.csv.signature.json").write_text('["columns"]', encoding="utf-8")
    assert read_signature(tmp_path / "p.csv") == {}


# ------------------------------------------------------------------ ddp merge of a shard with a damaged signature


@pytest.mark.parametrize(("text", "what"), [
    (b'{"shard": ', "is not valid JSON"),
    (b"[1]", "is not a JSON object"),
    (b'{"shard": "x"}', "records shard 'x'"),
    (b'{"shard": null}', "records shard None"),
    (b'{"shard": "1/2/3"}', "records shard '1/2/3'"),
    (b'{"shard": "5/2"}', "records shard '5/2'"),
])
def test_merge_damaged_shard_signature(tmp_path: Path, text: bytes, what: str) -> None:
    meta = {b"ddpcore.signature": text, b"ddpcore.table": b"segments"}
    pq.write_table(pa.table(PROFILE).replace_schema_metadata(meta), tmp_path / "s0.parquet")
    r = _ddp(tmp_path, "merge", "s0.parquet", "-o", "m.parquet")
    assert r.returncode == 3, r.stderr
    assert r.stderr.startswith("ddp merge: error: [D175] s0.parquet: the signature in its Parquet metadata") \
        and what in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "m.parquet").exists()


# ------------------------------------------------------------------ summarize(PATH) and the signature's columns


def _summary_by_loop(by: str) -> dict[str, tuple[int, int, float, float, float, int, float]]:
    """The per-group summary computed by a plain loop and numpy (linear quantiles, numpy's default)."""
    groups: dict[str, list[int]] = {}
    for g, d in zip(PROFILE[by], PROFILE["ddp"]):
        groups.setdefault(g, []).append(d)
    groups["all"] = list(PROFILE["ddp"])
    out = {}
    for g, vals in groups.items():
        docs = {d for d, gg in zip(PROFILE["document_id"], PROFILE[by]) if g == "all" or gg == g}
        v = np.array(vals, dtype=float)
        out[g] = (len(docs), len(vals), float(v.mean()), float(np.median(v)), float(np.quantile(v, 0.9)),
                  int(v.max()), float((v == 0).mean()))
    return out


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_summarize_path_reads_signature_columns(tmp_path: Path, fmt: str) -> None:
    import ddpcore

    df = pl.DataFrame(PROFILE).rename(RENAMED)
    sig = json.dumps({"ddpcore": "0.1.0", "columns": COLUMNS})
    path = tmp_path / f"p.{fmt}"
    if fmt == "csv":
        df.write_csv(path)
        (tmp_path / "p.csv.signature.json").write_text(sig, encoding="utf-8")
    else:
        pq.write_table(df.to_arrow().replace_schema_metadata({b"ddpcore.signature": sig.encode()}), path)
    want = _summary_by_loop("domain")
    for kwargs in ({}, {"document_col": "doc"}):  # the default, and the document column named by hand
        got = ddpcore.summarize(path, **kwargs)
        assert got["group"].to_list() == ["news", "social", "all"]
        for row in got.iter_rows(named=True):
            w = want[row["group"]]
            assert (row["documents"], row["segments"], row["max_ddp"]) == (w[0], w[1], w[5])
            assert row["mean_ddp"] == pytest.approx(w[2]) and row["median_ddp"] == pytest.approx(w[3])
            assert row["p90_ddp"] == pytest.approx(w[4]) and row["zero_ddp_share"] == pytest.approx(w[6])
    assert ddpcore.summarize(path, by=None)["group"].to_list() == ["all"]


# ------------------------------------------------------------------ select: D635 names the profile's columns


def test_select_parquet_missing_ids_names_the_profiles_columns(tmp_path: Path) -> None:
    _input(tmp_path)
    pq.write_table(pl.DataFrame(PROFILE).rename(RENAMED).to_arrow(), tmp_path / "p.parquet")  # no signature
    r = _ddp(tmp_path, "select", "in.jsonl", "--profile", "p.parquet", "-o", "out.jsonl", "--min-ddp", "1")
    assert r.returncode == 3 and "[D635]" in r.stderr, r.stderr
    listed = r.stderr.split("(columns: ")[1].split(")")[0].split(", ")
    assert listed == list(pl.DataFrame(PROFILE).rename(RENAMED).columns)  # every column, so 'doc' and 'seg' are named


# ------------------------------------------------------------------ report --ddp-col on a profile without 'ddp'


def test_report_renamed_ddp_column_with_anchors(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    prof = pl.DataFrame(PROFILE).rename({"ddp": "ddp_x"})
    prof.write_csv(tmp_path / "p.csv")
    anchors = pl.DataFrame({
        "document_id": ["d1", "d1"], "segment_id": [1, 2], "sentence": [2, 3], "kind": ["entity", "pronoun"],
        "label": ["PERSON", "FEM_SG"], "text": ["b", "c"], "char_start": [0, 0], "char_end": [1, 1],
        "entity_id": [0, 0], "antecedent_kind": ["entity", "entity"], "antecedent_text": ["a", "a"],
        "antecedent_sentence": [0, 0], "reference_sentence": [0, 0], "distance_sentences": [2, 3],
    })
    anchors.write_csv(tmp_path / "a.csv")
    r = _ddp(tmp_path, "report", "p.csv", "--ddp-col", "ddp_x", "--anchors", "a.csv", "-o", "r.html")
    assert r.returncode == 0, r.stderr
    assert "D999" not in r.stderr
    assert "d1" in (tmp_path / "r.html").read_text(encoding="utf-8")


# ------------------------------------------------------------------ explain: the re-parse against the output's own row


EXPLAIN_TEXT = ["Anna Berg moved to Oslo in May. The city was cold.", "Berg stayed inside for weeks.",
                "Nobody called. It rained every day.", "Anna Berg finally left in June."]


@pytest.fixture(scope="module")
def explained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-document profile (CSV and sidecar) written by `ddp profile`."""
    d = tmp_path_factory.mktemp("explain")
    rows = [{"document_id": "doc", "segment_id": i, "source": t} for i, t in enumerate(EXPLAIN_TEXT)]
    (d / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    r = _ddp(d, "profile", "in.jsonl", "-o", "p.csv", "-q", "--no-cache")
    assert r.returncode == 0, r.stderr
    return d


def test_explain_says_when_the_output_row_disagrees(explained: Path, tmp_path: Path) -> None:
    prof = pl.read_csv(explained / "p.csv")
    last = prof.filter(pl.col("segment_id") == 3)
    ddp = int(last["ddp"][0])
    assert ddp > 0  # 'Anna Berg' of the last segment is a re-mention: the fixture measures something
    # the output as written: the re-parse gives its own row's value, and nothing is said
    ok = _ddp(explained, "explain", "p.csv", "--document", "doc", "--segment", "3")
    assert ok.returncode == 0, ok.stderr
    assert "warning" not in ok.stderr and f"DDP = {ddp} sentence(s)" in ok.stdout
    # the table edited by hand (its signature kept): the row now says ddp + 5, the re-parse still gives ddp
    shutil.copy(explained / "p.csv.signature.json", tmp_path / "p.csv.signature.json")
    shutil.copy(explained / "in.jsonl", tmp_path / "in.jsonl")
    prof.with_columns(pl.when(pl.col("segment_id") == 3).then(pl.col("ddp") + 5).otherwise(pl.col("ddp"))
                      .alias("ddp")).write_csv(tmp_path / "p.csv")
    r = _ddp(tmp_path, "explain", "p.csv", "--document", "doc", "--segment", "3")
    assert r.returncode == 0, r.stderr
    assert f"DDP = {ddp} sentence(s)" in r.stdout
    warn = [ln for ln in r.stderr.splitlines() if ln.startswith("ddp explain: warning:")]
    assert len(warn) == 1 and f"gives ddp {ddp} where the output's row says {ddp + 5}" in warn[0], r.stderr
    # a setting given on the command line: the output's own value is not what is explained, nothing to say of the
    # row; the table edited after it was written no longer fits its sidecar's stamp, which is said (hunt 10: the other
    # settings still come from that sidecar)
    r2 = _ddp(tmp_path, "explain", "p.csv", "--document", "doc", "--segment", "3", "--distance", "chained")
    assert r2.returncode == 0 and "where the output's row says" not in r2.stderr, r2.stderr
    warn2 = [ln for ln in r2.stderr.splitlines() if ln.startswith("ddp explain: warning:")]
    assert len(warn2) == 1 and "p.csv.signature.json is not the signature of p.csv" in warn2[0], r2.stderr


# ------------------------------------------------------------------ a stratify result whose signature is not an object


def test_plot_curves_stratify_signature_not_an_object(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    res = {"groups": [{"bins": [{"low": 0, "high": 1, "n": 2, "mean": 0.5, "ci_low": 0.1, "ci_high": 0.9}]}],
           "signature": [1]}
    (tmp_path / "s.json").write_text(json.dumps(res), encoding="utf-8")
    r = _ddp(tmp_path, "plot", "s.json", "--kind", "curves", "-o", "c.png")
    assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr
    assert "[D671] s.json: not a `ddp stratify` JSON result ('signature' is not an object)" in r.stderr
    assert not (tmp_path / "c.png").exists()
    res["signature"] = {"by": [], "ddp_col": "ddp"}  # the same result with an object: drawn
    (tmp_path / "s.json").write_text(json.dumps(res), encoding="utf-8")
    assert _ddp(tmp_path, "plot", "s.json", "--kind", "curves", "-o", "c.png").returncode == 0
