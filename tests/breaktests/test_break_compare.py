"""Break tests of ``ddp stats compare`` (issue 13): hostile input fails cleanly, one stderr line.

Rows follow tests/breaktests/_harness.py: exit code, one stderr line matching the pattern, no
traceback, inputs unchanged, no stray files.
"""
from __future__ import annotations

from pathlib import Path

from ._harness import Case, parametrize, run_case

HEAD = "document_id,segment_id,system,score\n"


def _rows(systems: dict[str, list[str]]) -> str:
    """CSV with 2 documents x 2 segments per system; values given as strings (may be 'nan', '')."""
    out = [HEAD]
    for name, vals in systems.items():
        for i, v in enumerate(vals):
            out.append(f"d{i // 2},{i % 2},{name},{v}\n")
    return "".join(out)


GOOD = _rows({"base": ["1", "2", "3", "4"], "A": ["2", "3", "4", "5"], "B": ["0", "1", "2", "3"]})
MISSING_DOC = GOOD + "".join(f"d2,{k},base,1\n" for k in range(2)) + "".join(f"d2,{k},B,1\n" for k in range(2))
NAN = _rows({"base": ["1", "2", "3", "4"], "A": ["2", "nan", "4", "5"]})
EMPTY_SCORE = _rows({"base": ["1", "2", "3", "4"], "A": ["2", "3", "", "5"]})
TEXT_SCORE = _rows({"base": ["1", "2", "3", "4"], "A": ["2", "3", "good", "5"]})
DUP = GOOD + "d0,0,A,7\n"
ONLY_BASE = _rows({"base": ["1", "2", "3", "4"]})
CMD = ("stats", "compare", "s.csv", "--baseline", "base", "--n-boot", "50", "--n-ar", "50")

CASES = [
    Case("compare-baseline-absent", ("stats", "compare", "s.csv", "--baseline", "nope"), 3,
         r"\[D392\].*baseline 'nope'", files={"s.csv": GOOD}),
    Case("compare-unpaired-system", CMD, 3, r"\[D393\].*system 'A'.*document 'd2'", files={"s.csv": MISSING_DOC}),
    Case("compare-nan-score", CMD, 3, r"\[D394\].*system 'A', document 'd0', segment 1", files={"s.csv": NAN}),
    Case("compare-empty-score", CMD, 3, r"\[D394\].*system 'A', document 'd1', segment 0",
         files={"s.csv": EMPTY_SCORE}),
    Case("compare-text-score", CMD, 3, r"\[D395\].*'good'.*system 'A'", files={"s.csv": TEXT_SCORE}),
    Case("compare-duplicate-row", CMD, 3, r"\[D396\].*system 'A', document 'd0', segment 0", files={"s.csv": DUP}),
    Case("compare-only-baseline", CMD, 3, r"\[D392\].*nothing to compare", files={"s.csv": ONLY_BASE}),
    Case("compare-missing-metric", CMD + ("--score-col", "comet"), 3, r"\[D391\].*'comet'.*--score-col",
         files={"s.csv": GOOD}),
    Case("compare-missing-document-col", CMD + ("--document-col", "doc"), 3, r"\[D391\].*'doc'",
         files={"s.csv": GOOD}),
    Case("compare-empty-table", CMD, 3, r"\[D\d+\]", files={"s.csv": HEAD}),
    Case("compare-confidence-1", CMD + ("--confidence", "1"), 2, r"\[D390\].*confidence", files={"s.csv": GOOD}),
    Case("compare-confidence-0", CMD + ("--confidence", "0"), 2, r"\[D390\].*confidence", files={"s.csv": GOOD}),
    Case("compare-confidence-nan", CMD + ("--confidence", "nan"), 2, r"\[D390\].*confidence", files={"s.csv": GOOD}),
    Case("compare-alpha-2", CMD + ("--alpha", "2"), 2, r"\[D390\].*alpha", files={"s.csv": GOOD}),
    Case("compare-n-boot-0", ("stats", "compare", "s.csv", "--baseline", "base", "--n-boot", "0"), 2,
         r"\[D390\].*n_boot", files={"s.csv": GOOD}),
    Case("compare-n-ar-negative", ("stats", "compare", "s.csv", "--baseline", "base", "--n-ar", "-5"), 2,
         r"\[D390\].*n_ar", files={"s.csv": GOOD}),
    Case("compare-negative-seed", CMD + ("--seed", "-1"), 2, r"\[D390\].*seed", files={"s.csv": GOOD}),
    Case("compare-lower-is-better-unknown", CMD + ("--lower-is-better", "ter"), 2, r"\[D390\].*ter",
         files={"s.csv": GOOD}),
    Case("compare-file-missing", ("stats", "compare", "nope.csv", "--baseline", "base"), 3, r"\[D\d+\].*nope\.csv"),
    Case("compare-gate-worse", CMD + ("--fail-on", "worse", "--correction", "none", "--alpha", "0.5"), 1,
         r"--fail-on worse: .*B \(score -1", files={"s.csv": GOOD}),
    # issue 19: the budget (was MemoryError -> D999) and results beyond float64 (were inf with exit 0)
    Case("compare-n-boot-1e9-memory", ("stats", "compare", "s.csv", "--baseline", "base", "--n-boot", "1000000000"), 2,
         r"\[D362\].*n_boot=1,000,000,000.*--n-boot", files={"s.csv": GOOD}),
    Case("compare-n-ar-time", ("stats", "compare", "s.csv", "--baseline", "base", "--n-ar", "1000000000",
                               "--max-seconds", "0.05"), 2, r"\[D363\].*n_ar=1,000,000,000.*--n-ar",
         files={"s.csv": GOOD}),
    Case("compare-diff-beyond-float64", CMD, 3, r"\[D720\].*float64 range",
         files={"s.csv": _rows({"base": ["-1.7e308"] * 4, "A": ["1.7e308"] * 4})}),
    Case("compare-gate-ok", CMD + ("--fail-on", "worse", "-f", "text", "--exclude-system", "B"), 0, "",
         files={"s.csv": GOOD}),
]


@parametrize(CASES)
def test_break_compare(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)
