"""Bug hunt 10, messages and signature consistency left from earlier hunts (helper 42).

- Messages that named no file: ``ddp stratify`` D651 (``--by`` not a column), D653 (``--strict-join``) and the
  ``--gap`` D655 messages; ``ddp mix`` D500 (pool too small), D502 (a missing output) and D503 (a duplicated
  output, now with its rows); ``ddp plot`` D673 (``--by`` not a column) and D674 (a stratify result without
  groups). ``ddp mix --pool`` with a system that is not in the table said "no outputs of the pooled systems"
  (every name wrong) or "no output of pooled system 'X'" (one wrong): now the typo is named, as for
  ``--exclude-system``.
- ``ddp explain`` said nothing of a sidecar of another file when a DDP setting (``--rules``...) was given on the
  command line, though its other settings (distance, column names...) were still used: now one warning.
- ``ddp report``: ``reader.docs`` (the ``.docs`` file of ``--reader lines/wmt24``) is recorded as the command line
  gave it, so the same file profiled from another working folder was D681 "of another run"; it is now compared
  as the ``input`` entry is (one file, or the same bytes).
- ``signed_columns`` (which columns of a CSV/TSV are read as ids/text) trusted the column names of a sidecar of
  another file: they now add nothing, and a column they would have retyped is said.
- ``ddp agree --document-col/--segment-col`` applied to both runs: two runs profiled with different column names
  could not be compared with the option at all; a run without the named column now uses the column its own
  signature records (said on stderr), and two unsigned runs get one error naming both (D933).
- ``ddp meta`` joined on ``document_id``/``segment_id`` whatever the profile's columns; it now takes the
  profile's own id columns from its signature (as ``ddp stratify``), and says so.

Expected values: correlations with numpy (``np.corrcoef``) / scipy, shares and rows with plain loops over the
rows written here.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ddpcore.cli.main import main

#: a hand-made profile (no spaCy), written with renamed columns (doc, seg, genre, txt)
PROFILE = {"doc": ["d1", "d1", "d1", "d2", "d2", "d3"], "seg": [0, 1, 2, 0, 1, 0],
           "genre": ["news", "news", "news", "social", "social", "news"], "n_sentences": [1, 2, 1, 3, 1, 2],
           "ddp": [0, 2, 7, 0, 3, 1], "first_sentence": [0, 1, 3, 0, 3, 0], "txt": ["a", "b", "c", "d", "e", "f"]}
COLUMNS = {"document": "doc", "segment": "seg", "domain": "genre", "text": "txt"}


def _write_profile(path: Path, data: dict | None = None) -> Path:
    from ddpcore.io.tables import write_tables_atomic

    sig = {"ddpcore": "0.1.0", "rules": "refined", "distance": "chained", "columns": COLUMNS, "input": "in.jsonl"}
    write_tables_atomic([(pl.DataFrame(data or PROFILE), path)], sidecar=json.dumps(sig))
    return path


def _error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ": error: " in ln]
    assert len(lines) == 1, err
    return lines[0]


def _warnings(stderr: str) -> list[str]:
    return [ln.split(": warning: ", 1)[1] for ln in stderr.splitlines() if ": warning: " in ln]


# ------------------------------------------------------------------ 1. messages that named no file


def test_stratify_by_not_a_column_names_both_files(tmp_path: Path, capsys) -> None:
    prof = _write_profile(tmp_path / "p.csv")
    scores = tmp_path / "s.csv"
    pl.DataFrame({"doc": PROFILE["doc"], "seg": PROFILE["seg"], "score": [1.0, 2, 3, 4, 5, 6]}).write_csv(scores)
    assert main(["stratify", str(prof), str(scores), "--score-col", "score", "--by", "nope", "--n-boot", "0"]) == 2
    line = _error(capsys)
    assert "[D651] --by nope: not a column of the scores" in line
    assert str(scores) in line and str(prof) in line, line


def test_stratify_strict_join_names_the_scores(tmp_path: Path, capsys) -> None:
    prof = _write_profile(tmp_path / "p.csv")
    scores = tmp_path / "s.csv"
    pl.DataFrame({"doc": ["d1", "zz"], "seg": [0, 0], "score": [1.0, 2.0]}).write_csv(scores)
    assert main(["stratify", str(prof), str(scores), "--score-col", "score", "--strict-join", "--n-boot", "0"]) == 3
    line = _error(capsys)
    assert "[D653]" in line and str(scores) in line and "'zz'" in line, line


def test_stratify_gap_without_pairs_names_the_files(tmp_path: Path, capsys) -> None:
    prof = _write_profile(tmp_path / "p.csv")
    scores = tmp_path / "s.csv"
    # system A scores d1 only, B scores d2 only: no segment is scored by both
    pl.DataFrame({"doc": ["d1", "d1", "d1", "d2", "d2"], "seg": [0, 1, 2, 0, 1], "score": [1.0, 2, 3, 4, 5],
                  "system": ["A", "A", "A", "B", "B"]}).write_csv(scores)
    assert main(["stratify", str(prof), str(scores), "--score-col", "score", "--by", "system", "--gap", "A,B",
                 "--n-boot", "0", "--allow-partial-join"]) == 3
    line = _error(capsys)
    assert "[D655] --gap A,B:" in line and str(scores) in line and str(prof) in line, line


def _mix_rows() -> list[dict]:
    return [{"document_id": d, "segment_id": s, "system": sy, "text": f"{d}-{s}-{sy}"}
            for d in ("d1", "d2") for s in range(3) for sy in ("A", "B", "C")]


@pytest.mark.parametrize("case", ["pool_of_one", "missing", "pool_typo", "pool_all_typos"])
def test_mix_errors_name_the_file(tmp_path: Path, capsys, case: str) -> None:
    rows = _mix_rows()
    argv = []
    if case == "pool_of_one":
        argv, code = ["--pool", "A"], "D500"
    elif case == "missing":
        rows = rows[:-1]  # d2, segment 2, system C
        code = "D502"
    elif case == "pool_typo":
        argv, code = ["--pool", "A,X"], "D502"
    else:
        argv, code = ["--pool", "X,Y"], "D502"
    table = tmp_path / "outputs.csv"
    pl.DataFrame(rows).write_csv(table)
    assert main(["mix", str(table), "-o", str(tmp_path / "mix.csv"), *argv]) == 3
    line = _error(capsys)
    assert f"[{code}] {table}:" in line, line
    if case == "missing":
        assert "document 'd2', segment 2: no output of pooled system 'C'" in line
    if case == "pool_typo":  # the typo is named, not "no output of pooled system 'X'" on every segment
        assert "--pool 'X': no such system in the table" in line and "systems: A, B, C" in line, line
    if case == "pool_all_typos":  # was "no outputs of the pooled systems"
        assert "--pool 'X', 'Y': no such system in the table" in line, line
    assert not (tmp_path / "mix.csv").exists()


def test_mix_duplicate_output_names_the_file_and_rows(tmp_path: Path, capsys) -> None:
    rows = _mix_rows()
    rows.insert(10, dict(rows[4]))  # d1, segment 1, system B twice
    table = tmp_path / "outputs.csv"
    pl.DataFrame(rows).write_csv(table)
    # the rows (1-based, header not counted) holding that (document, segment, system), by a plain loop
    key = (rows[4]["document_id"], rows[4]["segment_id"], rows[4]["system"])
    want = [i + 1 for i, r in enumerate(rows) if (r["document_id"], r["segment_id"], r["system"]) == key]
    assert want == [5, 11]
    assert main(["mix", str(table), "-o", str(tmp_path / "mix.csv")]) == 3
    line = _error(capsys)
    assert f"[D503] {table}, rows 5, 11: document 'd1', segment 1: system 'B' has 2 outputs" in line, line


def test_plot_messages_name_the_file(tmp_path: Path, capsys) -> None:
    pytest.importorskip("matplotlib")
    prof = _write_profile(tmp_path / "p.csv")
    assert main(["plot", str(prof), "--kind", "hist", "--by", "nope", "-o", str(tmp_path / "h.png")]) == 2
    line = _error(capsys)
    assert "[D673] --by nope:" in line and str(prof) in line, line
    strat = tmp_path / "st.json"
    strat.write_text(json.dumps({"groups": []}), encoding="utf-8")
    assert main(["plot", str(strat), "--kind", "curves", "-o", str(tmp_path / "c.png")]) == 3
    line = _error(capsys)
    assert f"[D674] {strat}: the stratify result has no groups to plot" in line, line


# ------------------------------------------------------------------ 2. explain: a sidecar of another file, a setting given


def _ddp(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


TEXTS = ["Anna Berg moved to Oslo in May. The city was cold.", "Berg stayed inside for weeks.",
         "Nobody called. It rained every day.", "Anna Berg finally left in June."]


@pytest.mark.spacy_model
def test_explain_says_a_sidecar_of_another_file_when_a_setting_is_given(tmp_path: Path) -> None:
    rows = [{"document_id": "doc", "segment_id": i, "source": t} for i, t in enumerate(TEXTS)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    r = _ddp(tmp_path, "profile", "in.jsonl", "-o", "p.csv", "-q", "--no-cache")
    assert r.returncode == 0, r.stderr
    # the table changed by hand after the run (a column added): its sidecar no longer fits it
    pl.read_csv(tmp_path / "p.csv").with_columns(checked=pl.lit(1)).write_csv(tmp_path / "p.csv")
    for setting in (["--rules", "paper"], ["--distance", "nearest"]):
        r = _ddp(tmp_path, "explain", "p.csv", "--document", "doc", "--segment", "3", *setting)
        assert r.returncode == 0, r.stderr
        warn = _warnings(r.stderr)
        assert len(warn) == 1 and warn[0].startswith("p.csv.signature.json is not the signature of p.csv"), \
            (setting, r.stderr)
        assert "were used" in warn[0] and "document_col" in warn[0], warn[0]


# ------------------------------------------------------------------ 3. report: reader.docs from another working folder


def test_run_difference_reader_docs_one_file_under_two_names(tmp_path: Path, monkeypatch) -> None:
    """The profile recorded 'src.docs' (run inside x/), the anchors 'x/src.docs' (run from above): one file."""
    from ddpcore.report.inputs import run_difference

    x = tmp_path / "x"
    x.mkdir()
    (x / "src.txt").write_text("a\nb\n", encoding="utf-8")
    (x / "src.docs").write_text("news\td1\nnews\td1\n", encoding="utf-8")
    (tmp_path / "other.docs").write_text("news\td1\nnews\td2\n", encoding="utf-8")
    base = {"rules": "refined", "distance": "chained", "input": "src.txt"}
    a = {**base, "reader": {"name": "lines", "docs": "src.docs", "txt_mode": "lines"}}
    b = {**base, "input": "x/src.txt", "reader": {"name": "lines", "docs": "x/src.docs", "txt_mode": "lines"}}
    monkeypatch.chdir(tmp_path)
    assert run_difference(a, b, (str(x / "p.csv"), str(x / "a.csv"))) is None
    monkeypatch.chdir(x)
    assert run_difference(a, b, ("p.csv", "a.csv")) is None
    other = {**b, "reader": {"name": "lines", "docs": "other.docs", "txt_mode": "lines"}}
    assert run_difference(a, other, ("p.csv", "a.csv")) == ("reader.docs", "src.docs", "other.docs")
    # ./src.docs and src.docs are one name
    dot = {**a, "reader": {"name": "lines", "docs": "./src.docs", "txt_mode": "lines"}}
    assert run_difference(a, dot) is None


@pytest.mark.spacy_model
def test_report_lines_reader_profiled_from_another_working_folder(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    x = tmp_path / "x"
    x.mkdir()
    (x / "src.txt").write_text("John Smith arrived in Paris.\nHe liked the city.\nMary met him there.\nShe was "
                               "happy.\n", encoding="utf-8")
    (x / "src.docs").write_text("news\td1\nnews\td1\nnews\td2\nnews\td2\n", encoding="utf-8")
    assert _ddp(x, "profile", "src.txt", "--reader", "lines", "-o", "p.csv", "-q", "--no-cache").returncode == 0
    r = _ddp(tmp_path, "profile", "x/src.txt", "--reader", "lines", "-o", "x/q.csv", "--anchors", "x/a.csv", "-q",
             "--no-cache")
    assert r.returncode == 0, r.stderr
    r = _ddp(x, "report", "p.csv", "--anchors", "a.csv", "-o", "r.html")
    assert r.returncode == 0 and "[D681]" not in r.stderr, r.stderr


# ------------------------------------------------------------------ 4. signed_columns: a sidecar of another file


def test_signed_columns_ignore_a_sidecar_of_another_file(tmp_path: Path) -> None:
    from ddpcore.io.tables import read_table, write_tables_atomic

    # q.csv's own sidecar names its column n as the text column: n is read as text there, rightly
    write_tables_atomic([(pl.DataFrame({"doc": ["a", "b"], "n": [1, 2]}), tmp_path / "q.csv")],
                        sidecar=json.dumps({"columns": {"document": "doc", "text": "n"}}))
    assert read_table(tmp_path / "q.csv").schema["n"] == pl.String
    # t.csv, another table, with q.csv's sidecar copied beside it: its n holds numbers and is read as numbers
    pl.DataFrame({"doc": ["a", "b", "c"], "n": [1, 2, 3]}).write_csv(tmp_path / "t.csv")
    shutil.copy(tmp_path / "q.csv.signature.json", tmp_path / "t.csv.signature.json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = read_table(tmp_path / "t.csv")
    assert df.schema["n"].is_integer() and df["n"].to_list() == [1, 2, 3]
    said = [str(w.message) for w in caught]
    assert len(said) == 1 and "t.csv.signature.json is not the signature of" in said[0] \
        and "column names (n, doc) are not used" in said[0], said


# ------------------------------------------------------------------ 5. agree with different column names; meta's keys


def test_agree_runs_with_different_column_names(tmp_path: Path, capsys) -> None:
    from ddpcore.io.tables import write_tables_atomic

    a_ddp, b_ddp = [0, 2, 1, 4], [0, 3, 1, 4]
    docs, segs = ["d1", "d1", "d2", "d2"], [0, 1, 0, 1]
    pl.DataFrame({"doc": docs, "seg": segs, "ddp": a_ddp}).write_csv(tmp_path / "a.csv")  # no signature
    # B: a signed run whose own columns are document_id / segment_id, rows in another order
    order = [3, 1, 0, 2]
    write_tables_atomic([(pl.DataFrame({"document_id": [docs[i] for i in order], "segment_id": [segs[i] for i in order],
                                        "ddp": [b_ddp[i] for i in order]}), tmp_path / "b.csv")],
                        sidecar=json.dumps({"columns": {"document": "document_id", "segment": "segment_id",
                                                        "text": "source", "domain": "domain"}}))
    assert main(["agree", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--document-col", "doc",
                 "--segment-col", "seg"]) == 0
    out = capsys.readouterr()
    got = json.loads(out.out)
    # expected: numpy's Pearson r and a plain loop over the paired values
    assert got["n_segments"] == 4
    assert got["pearson"] == pytest.approx(np.corrcoef(a_ddp, b_ddp)[0, 1], abs=1e-12)
    assert got["share_identical"] == sum(x == y for x, y in zip(a_ddp, b_ddp)) / 4
    warn = _warnings(out.err)
    assert len(warn) == 2 and all(w.startswith(f"B ({tmp_path / 'b.csv'}): no column") for w in warn), out.err
    # two unsigned runs with other names: one error naming both
    pl.DataFrame({"document_id": docs, "segment_id": segs, "ddp": b_ddp}).write_csv(tmp_path / "c.csv")
    assert main(["agree", str(tmp_path / "a.csv"), str(tmp_path / "c.csv"), "--document-col", "doc",
                 "--segment-col", "seg"]) == 3
    line = _error(capsys)
    assert "[D933]" in line and str(tmp_path / "a.csv") in line and str(tmp_path / "c.csv") in line, line


def test_meta_joins_on_the_profiles_own_id_columns(tmp_path: Path, capsys) -> None:
    from ddpcore.io.tables import write_tables_atomic

    rng = np.random.default_rng(1)
    docs = [f"d{i}" for i in range(8) for _ in range(4)]
    segs = [j for _ in range(8) for j in range(4)]
    write_tables_atomic([(pl.DataFrame({"doc": docs, "seg": segs, "ddp": rng.integers(0, 20, 32).tolist(),
                                        "n_sentences": [1] * 32, "first_sentence": segs}), tmp_path / "p.csv")],
                        sidecar=json.dumps({"columns": COLUMNS}))
    rows = []
    for d, s in zip(docs, segs):
        for sy in ("A", "B", "C"):
            h = float(rng.normal())
            rows.append({"doc": d, "seg": s, "system": sy, "mqm": h, "m1": h + float(rng.normal())})
    pl.DataFrame(rows).write_csv(tmp_path / "s.csv")
    assert main(["meta", str(tmp_path / "p.csv"), str(tmp_path / "s.csv"), "--human-col", "mqm", "--n-boot", "0",
                 "--n-perm", "0", "--spa-perm", "0", "-f", "json"]) == 0
    out = capsys.readouterr()
    res = json.loads(out.out)
    assert "--document-col doc, --segment-col seg: the profile's id columns" in out.err, out.err
    assert res["signature"]["columns"]["document"] == "doc" and res["signature"]["columns"]["segment"] == "seg"
    # every score row joins (each (doc, seg) is a profile segment): overall Pearson over all rows, by numpy
    want = np.corrcoef([r["m1"] for r in rows], [r["mqm"] for r in rows])[0, 1]
    assert res["overall"]["metrics"]["m1"]["pearson.none"]["value"] == pytest.approx(want, abs=1e-9)
