"""``ddp meta`` without ``--score-col`` infers the metric columns (docs/meta.md: "every other numeric column";
in a text column ``None``, ``NaN``, ``null``, ``NA`` and an empty field mean "no score"). A CSV metric column
with one cell that is not a number is text to the CSV reader: it used to be dropped in silence (exit 0, one
metric fewer); it is a metric all the same, so the bad cell is the D812 that ``--score-col`` gives. A metric
column spelled with mt-metrics-eval's ``None`` used to be dropped too. A text column that is mostly words is
not a metric, and the output's warnings (signature included) say so when some of its values are numbers."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ddpcore.cli.main import main

FAST = ["--n-boot", "0", "--n-perm", "0", "--spa-perm", "20"]


def _inputs(tmp: Path, *, m1=None, extra=None) -> tuple[str, str]:
    """A profile (10 documents x 4 segments) and a score table (4 systems): mqm, m1 (written as text by
    ``m1(row, value)``), m2 and the ``extra`` columns {name: [cell per row]}."""
    rng = np.random.default_rng(0)
    prof, rows = ["document_id,segment_id,ddp"], []
    for d in range(10):
        for s in range(4):
            prof.append(f"doc{d},{s},{int(rng.choice([0, 0, 2, 7, 20]))}")
            for i, sy in enumerate("ABCD"):
                h = float(-rng.integers(0, 10) - i)
                rows.append((f"doc{d}", s, sy, h, h + rng.normal(0, 2), rng.normal(0, 1)))
    header = "document_id,segment_id,system,mqm,m1,m2" + "".join(f",{c}" for c in (extra or {}))
    lines = [header]
    for r, (d, s, sy, h, a, b) in enumerate(rows):
        cell = m1(r, a) if m1 else repr(a)
        lines.append(f"{d},{s},{sy},{h},{cell},{b}" + "".join(f",{v[r]}" for v in (extra or {}).values()))
    (tmp / "prof.csv").write_text("\n".join(prof) + "\n")
    (tmp / "sc.csv").write_text("\n".join(lines) + "\n")
    return str(tmp / "prof.csv"), str(tmp / "sc.csv")


def test_inferred_text_metric_with_a_word_is_d812_like_score_col(tmp_path, capsys):
    prof, sc = _inputs(tmp_path, m1=lambda r, v: "bad" if r == 3 else repr(v))
    assert main(["meta", prof, sc, "--human-col", "mqm", *FAST, "--score-col", "m1,m2"]) == 3
    named = capsys.readouterr()
    assert main(["meta", prof, sc, "--human-col", "mqm", *FAST]) == 3  # was 0, reporting m2 only
    inferred = capsys.readouterr()
    assert inferred.out == "" and len(inferred.err.splitlines()) == 1
    # the same D812 (file, row, column, value) as with --score-col, and why the column counts as a metric
    assert inferred.err.startswith(named.err.rstrip("\n"))
    assert "[D812] " in inferred.err and "row 4, column 'm1': 'bad' is not a number" in inferred.err
    assert "159 of its 160 values are numbers" in inferred.err and "--score-col" in inferred.err


def test_inferred_text_metric_with_missing_spellings_is_a_metric(tmp_path, capsys):
    """m1 written with 'None' for two missing scores (mt-metrics-eval's spelling) is text to the CSV reader;
    it is inferred as a metric, and the answer is that of --score-col m1,m2. A words-only column (domain)
    is not a metric."""
    prof, sc = _inputs(tmp_path, m1=lambda r, v: "None" if r in (5, 77) else repr(v),
                       extra={"domain": ["news" if r % 2 else "social" for r in range(160)]})
    assert main(["meta", prof, sc, "--human-col", "mqm", *FAST]) == 0
    inferred = json.loads(capsys.readouterr().out)
    assert inferred["signature"]["metrics"] == ["m1", "m2"]  # was ["m2"]: m1 dropped in silence
    assert main(["meta", prof, sc, "--human-col", "mqm", *FAST, "--score-col", "m1,m2"]) == 0
    named = json.loads(capsys.readouterr().out)
    assert inferred["overall"] == named["overall"] and inferred["bins"] == named["bins"]
    assert inferred["overall"]["metrics"]["m1"]["pearson.none"]["n"] == 158  # the two 'None' left out


def test_text_column_of_words_with_some_numbers_is_said_not_dropped_in_silence(tmp_path, capsys):
    notes = ["fine" if r % 10 else str(r) for r in range(160)]  # 16 of 160 values are numbers
    prof, sc = _inputs(tmp_path, extra={"note": notes})
    assert main(["meta", prof, sc, "--human-col", "mqm", *FAST]) == 0
    out = capsys.readouterr()
    res = json.loads(out.out)
    assert res["signature"]["metrics"] == ["m1", "m2"]
    want = "column 'note' is text (16 of 160 values are numbers, the others words) and is not read as a metric"
    assert any(w.startswith(want) for w in res["signature"]["warnings"])
    assert any(w.startswith(want) for w in res["warnings"])
    assert f"ddp meta: warning: {want}" in out.err
