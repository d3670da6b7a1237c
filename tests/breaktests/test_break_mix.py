"""Break tests of ``ddp mix`` and ``ddp blindness`` (issue 10): hostile input fails cleanly, one stderr line.

Rows follow tests/breaktests/_harness.py: exit code, one stderr line matching the pattern, no
traceback, inputs unchanged, no stray files.
"""
from __future__ import annotations

from pathlib import Path

from ._harness import Case, parametrize, run_case

HEAD = "document_id,segment_id,system,text\n"


def _outputs(docs: dict[str, int], systems: list[str], drop: tuple[str, int, str] | None = None) -> str:
    rows = [HEAD]
    for d, n in docs.items():
        for s in range(n):
            for sy in systems:
                if drop != (d, s, sy):
                    rows.append(f"{d},{s},{sy},{d}-{s}-{sy}\n")
    return "".join(rows)


def _scores(conds: tuple[str, ...] = ("DOC", "MIX"), mix_system: str | None = None) -> str:
    rows = ["document_id,segment_id,system,condition,score\n"]
    for c in conds:
        for d in range(4):
            for s in range(3):
                for k, sy in enumerate(("A", "B", "C")):
                    name = mix_system if (c == "MIX" and mix_system and d == 2 and k == 0) else sy
                    rows.append(f"d{d},{s},{name},{c},{50 + 10 * k + d + s}\n")
    return "".join(rows)


GOOD = _outputs({"a": 4, "b": 3}, ["X", "Y", "Z"])
MIX = ("mix", "o.csv", "--seed", "0", "-o", "m.csv", "--assignment", "a.csv")
BL = ("blindness", "s.csv", "--n-boot", "50", "--n-boot-cluster", "20")

CASES = [
    Case("mix-pool-of-one", MIX, 3, r"\[D500\].*1 system", files={"o.csv": _outputs({"a": 3}, ["X"])}),
    Case("mix-pool-flag-one", MIX + ("--pool", "X"), 3, r"\[D500\]", files={"o.csv": GOOD}),
    Case("mix-missing-output", MIX, 3, r"\[D502\].*document 'b', segment 1.*system 'Y'",
         files={"o.csv": _outputs({"a": 4, "b": 3}, ["X", "Y", "Z"], drop=("b", 1, "Y"))}),
    Case("mix-pool-absent-system", MIX + ("--pool", "X,Q"), 3, r"\[D502\].*document 'a'.*system 'Q'",
         files={"o.csv": GOOD}),
    Case("mix-duplicate-output", MIX, 3, r"\[D503\].*document 'a', segment 0.*'X'",
         files={"o.csv": GOOD + "a,0,X,again\n"}),
    Case("mix-missing-text-col", MIX + ("--text-col", "tgt"), 3, r"\[D110\].*'tgt'.*--text-col",
         files={"o.csv": GOOD}),
    Case("mix-forbid-adjacent-two", MIX + ("--forbid-adjacent-repeat",), 2, r"\[D505\].*at least 3",
         files={"o.csv": _outputs({"a": 4}, ["X", "Y"])}),
    # --seed defaults to 0 and --assignment to M.assignment.csv beside -o M.csv (issue 23): the default is checked too
    Case("mix-default-assignment-is-input", ("mix", "m.assignment.csv", "-o", "m.csv"), 2,
         r"\[D133\].*--assignment m.assignment.csv", files={"m.assignment.csv": GOOD}),
    Case("mix-negative-seed", ("mix", "o.csv", "--seed", "-1", "-o", "m.csv", "--assignment", "a.csv"), 2,
         r"\[D311\].*seed", files={"o.csv": GOOD}),
    Case("mix-output-is-input", ("mix", "o.csv", "--seed", "0", "-o", "o.csv", "--assignment", "a.csv"), 2,
         r"\[D133\]", files={"o.csv": GOOD}),
    Case("mix-same-two-outputs", ("mix", "o.csv", "--seed", "0", "-o", "m.csv", "--assignment", "m.csv"), 2,
         r"\[D134\]", files={"o.csv": GOOD}),
    Case("mix-bad-extension", ("mix", "o.csv", "--seed", "0", "-o", "m.xlsx", "--assignment", "a.csv"), 2,
         r"\[D101\]", files={"o.csv": GOOD}),
    Case("mix-wmt24-without-docs", ("mix", "--reader", "wmt24", "--outputs", "o/", "--seed", "0", "-o", "m.csv",
                                    "--assignment", "a.csv"), 2, r"\[D506\].*--docs", files={"o/": ""}),
    Case("mix-wmt24-misaligned", ("mix", "--reader", "wmt24", "--docs", "x.docs", "--outputs", "o", "--seed", "0",
                                  "-o", "m.csv", "--assignment", "a.csv"), 3, r"\[D507\].*'B' has 2 lines",
         files={"x.docs": "news\td1\nnews\td1\nnews\td2\n", "o/A.txt": "1\n2\n3\n", "o/B.txt": "1\n2\n"}),
    Case("mix-infeasible-gate", MIX + ("--fail-on", "infeasible"), 1, r"gate infeasible failed.*\(b\)",
         files={"o.csv": _outputs({"a": 4, "b": 2}, ["X", "Y", "Z"])}, outputs=("m.csv", "a.csv",
                                                                               "m.csv.signature.json",
                                                                               "a.csv.signature.json")),
    Case("blindness-margin-zero", BL + ("--margin", "0"), 2, r"\[D510\].*--margin", files={"s.csv": _scores()}),
    Case("blindness-margin-negative", BL + ("--margin", "-2"), 2, r"\[D510\]", files={"s.csv": _scores()}),
    Case("blindness-margin-sd-nan", BL + ("--margin-sd", "nan"), 2, r"\[D510\]", files={"s.csv": _scores()}),
    Case("blindness-no-margin", BL, 2, r"--margin", files={"s.csv": _scores()}),
    Case("blindness-one-condition", BL + ("--margin", "3"), 3, r"\[D511\].*'MIX'.*found: 'DOC'",
         files={"s.csv": _scores(("DOC",))}),
    Case("blindness-wrong-conditions", BL + ("--margin", "3", "--b", "MX"), 3,
         r"\[D511\].*found: 'DOC', 'MIX'", files={"s.csv": _scores()}),
    Case("blindness-mix-system-not-in-pool", BL + ("--margin", "3"), 3,
         r"\[D512\].*document 'd2'.*system 'Q'", files={"s.csv": _scores(mix_system="Q")}),
    Case("blindness-alpha", BL + ("--margin", "3", "--alpha", "0.7"), 2, r"\[D510\].*alpha",
         files={"s.csv": _scores()}),
    Case("blindness-output-json-only", BL + ("--margin", "3", "-o", "r.csv"), 2, r"\[D101\]",
         files={"s.csv": _scores()}),
    Case("blindness-missing-file", ("blindness", "nope.csv", "--margin", "3"), 3, r"\[D\d+\].*nope\.csv"),
]


@parametrize(CASES)
def test_break_mix(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)
