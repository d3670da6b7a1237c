"""Break tests of ``ddp metric-s`` (issue 10): hostile input, one row each."""
from __future__ import annotations

from ._harness import Case, parametrize, run_case

GOOD = '{"id": "a", "accuracy_items": []}\n'

CASES = [
    Case("metric-s-missing-file", ("metric-s", "nope.jsonl"), 3, r"\[D102\] nope\.jsonl: file not found"),
    Case("metric-s-folder", ("metric-s", "dir/"), 3, r"\[D102\].*folder", files={"dir/": ""}),
    Case("metric-s-empty", ("metric-s", "e.jsonl"), 3, r"\[D552\].*empty", files={"e.jsonl": "\n\n"}),
    Case("metric-s-not-utf8", ("metric-s", "b.jsonl"), 3, r"\[D551\].*not UTF-8", files={"b.jsonl": b"\xff\xfe{}\n"}),
    Case("metric-s-bad-mapping", ("metric-s", "g.jsonl", "--mapping", "both"), 2, r"invalid choice",
         files={"g.jsonl": GOOD}),
    Case("metric-s-output-is-input", ("metric-s", "g.jsonl", "-o", "g.jsonl"), 2, r"\[D1\d\d\]|same file",
         files={"g.jsonl": GOOD}),
    Case("metric-s-output-bad-ext", ("metric-s", "g.jsonl", "-o", "out.xyz"), 2, r"\[D101\]",
         files={"g.jsonl": GOOD}),
    # garbage lines are error rows, not a crash and not full marks
    Case("metric-s-garbage-lines", ("metric-s", "g.jsonl", "-f", "text"), 0, "",
         files={"g.jsonl": "[1, 2]\nnull\n{\"accuracy_items\": {\"a\": 1}}\n\"text\"\n"}),
    # issue 19: a record with no item list at all is not full marks (the released code's failure mode)
    Case("metric-s-no-item-lists", ("metric-s", "g.jsonl"), 3,
         r"^ddp metric-s: error: \[D740\] g\.jsonl: line 3 \(id 'b'\): none of accuracy_items, checkpoint_items, "
         r"fluency_items, appropriateness_items is present",
         files={"g.jsonl": GOOD + "\n" + '{"id": "b", "fluency_items": null}\n'}),
    Case("metric-s-no-item-lists-with-output", ("metric-s", "g.jsonl", "-o", "s.parquet"), 3, r"\[D740\] g\.jsonl: line 1",
         files={"g.jsonl": '{"id": "a", "score": 100}\n' + GOOD}),
    # issue 19: deep nesting was D999 (RecursionError)
    Case("metric-s-deep-nesting", ("metric-s", "g.jsonl"), 3,
         r"^ddp metric-s: error: \[D741\] g\.jsonl: line 2: JSON nested too deeply",
         files={"g.jsonl": GOOD + '{"accuracy_items": ' + "[" * 100_000 + "]" * 100_000 + "}\n"}),
    Case("metric-s-deep-nesting-id", ("metric-s", "g.jsonl", "-o", "s.tsv"), 3, r"\[D741\] g\.jsonl: line 1:",
         files={"g.jsonl": '{"id": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}\n"}),
    # issue 19: unknown labels (here: English key and label, unknown to the released code) are warned about
    Case("metric-s-unknown-labels-warned", ("metric-s", "g.jsonl", "-f", "text"), 0,
         r"^ddp metric-s: warning: 2 item label\(s\) unknown to the code mapping \(first on line 1\)",
         files={"g.jsonl": '{"fluency_items": [{"问题严重程度": "minor"}], "appropriateness_items": [{"severity": "有问题"}]}\n'}),
    Case("metric-s-missing-lists-warned", ("metric-s", "g.jsonl"), 0,
         r"^ddp metric-s: warning: 1 scored judgement\(s\) lack some item lists \(first on line 1: checkpoint_items, "
         r"fluency_items, appropriateness_items\)", files={"g.jsonl": GOOD}),
    Case("metric-s-output-written", ("metric-s", "g.jsonl", "-o", "s.tsv"), 0, "",
         files={"g.jsonl": GOOD}, outputs=("s.tsv", "s.tsv.signature.json")),
]


@parametrize(CASES)
def test_break_metric_s(case, tmp_path):
    run_case(case, tmp_path)
