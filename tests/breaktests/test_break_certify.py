"""Break tests of the certification model (issue 21): a weights file that does not fit fails with its
code at load, before any input is read or a pipeline loaded, and leaves no output behind."""
from __future__ import annotations

import json

from ddpcore.anchors.certify import FEATURES

from ._harness import Case, parametrize, run_case

N = len(FEATURES)
SEG = '{"document_id": "d", "segment_id": 0, "source": "Anna met Bob. She smiled."}\n'


def model(**over: object) -> str:
    doc = {"format": "ddpcore-certify-weights", "version": 5, "features": list(FEATURES), "weights": [0.0] * N,
           "mean": [0.0] * N, "scale": [1.0] * N, "bias": 0.0, "threshold": 0.9, "threshold_name": 0.9,
           "threshold_long": 0.9,
           "long_distance": 15, "long_full_only": True}
    doc.update(over)
    return json.dumps(doc)


def case(id: str, content: str | bytes, code: str, what: str) -> Case:
    return Case(id, ("profile", "in.jsonl", "-o", "out.parquet", "--certify-model", "m.json"), 3,
                rf"^ddp profile: error: \[{code}\] m\.json: {what}", files={"in.jsonl": SEG, "m.json": content})


CASES = [
    Case("certify-missing", ("profile", "in.jsonl", "-o", "out.parquet", "--certify-model", "nope.json"), 3,
         r"\[D250\] .*nope\.json: cannot read the certification model", files={"in.jsonl": SEG}),
    case("certify-not-json", b"\xff{", "D251", "not JSON"),
    case("certify-wrong-format", json.dumps({"format": "ddpcore-antecedent-weights"}), "D251", "not a ddpcore certification model"),
    case("certify-version", model(version=1), "D252", "layout version 1"),
    case("certify-features", model(features=list(FEATURES[:-1])), "D253", "its features differ"),
    case("certify-short-weights", model(weights=[1.0]), "D254", "field 'weights' must be a list of"),
    case("certify-nan", model().replace('"bias": 0.0', '"bias": NaN'), "D256", "field 'bias' must be a finite number"),
    case("certify-inf-weight", model().replace('"weights": [0.0', '"weights": [Infinity'), "D255", "field 'weights' holds a non-finite"),
    case("certify-threshold", model(threshold=2), "D256", "field 'threshold' must be a finite number in \\[0, 1\\]"),
    case("certify-threshold-name", model(threshold_name=None), "D256",
         "field 'threshold_name' must be a finite number in \\[0, 1\\]"),
    case("certify-zero-scale", model(scale=[0.0] * N), "D257", "field 'scale' holds a zero"),
    case("certify-long-full-only", model(long_full_only="yes"), "D258", "field 'long_full_only' must be true or false"),
]


@parametrize(CASES)
def test_break_certify(case: Case, tmp_path) -> None:  # type: ignore[no-untyped-def]
    run_case(case, tmp_path)
