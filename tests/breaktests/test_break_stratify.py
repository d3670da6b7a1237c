"""Break tests of ``ddp stratify`` for issue 19, "No wrong answer with exit 0": a join that loses a side,
null scores, a duplicated profile key and scores that would overflow (D710-D713, D360).

Rows follow tests/breaktests/_harness.py: exit code, one stderr line matching the pattern (plus
``warning:`` lines where allowed), no traceback, inputs unchanged, no stray files. Rows that exit 0
and name a ``warning:`` line in ``stderr`` check that the dropped rows are said on stderr.
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from ._harness import Case, parametrize, run_case


def _parquet(df: pl.DataFrame, signature: dict) -> bytes:
    buf = io.BytesIO()
    pq.write_table(df.to_arrow().replace_schema_metadata({b"ddpcore.signature": json.dumps(signature).encode()}), buf)
    return buf.getvalue()


SIG = {"columns": {"document": "document_id", "segment": "segment_id", "domain": "domain"}}
# 10 documents x 10 segments = 100 profile segments; 5 "speech" documents have ids prefixed vid_ (as WMT25)
DOCS = [f"vid_v{k}" if k < 5 else f"d{k}" for k in range(10)]
PROF = pl.DataFrame({"document_id": [d for d in DOCS for _ in range(10)], "segment_id": list(range(10)) * 10,
                     "domain": ["speech" if d.startswith("vid_") else "news" for d in DOCS for _ in range(10)],
                     "ddp": [(7 * i) % 23 for i in range(100)]})
PROFILE = _parquet(PROF, SIG)
DUP_PROFILE = _parquet(pl.concat([PROF, PROF.slice(37, 1)]), SIG)


def scores_csv(doc_ids: list[str] | None = None, score: list[str] | None = None, systems: tuple[str, ...] = ("X", "Y"),
               extra: str = "") -> str:
    """Two systems scoring every profile segment; ``doc_ids`` renames documents, ``score`` overrides cells."""
    ids = doc_ids or [d for d in DOCS for _ in range(10)]
    rows = []
    for k, sy in enumerate(systems):
        for i in range(100):
            v = score[i] if score is not None and k == 0 else f"{50 + (i * 13) % 37 - 10 * k}"
            rows.append(f"{sy},{ids[i]},{i % 10},{v}")
    return "system,document_id,segment_id,score\n" + "\n".join(rows) + "\n" + extra


NO_PREFIX = [d.removeprefix("vid_") for d in DOCS for _ in range(10)]  # the score table drops the prefix
ONE_MISS = [d for d in DOCS for _ in range(10)]
NANS = [f"{i}" if i % 4 else "NaN" for i in range(100)]  # 25 NaN scores of system X (12.5 % of 200 rows)
ONE_NAN = ["NaN"] + [str(i) for i in range(1, 100)]  # one null score of 200 rows (0.5 %)
HUGE = ["1e308"] + [str(i) for i in range(1, 100)]
HUGE_NEG = [str(i) for i in range(50)] + ["-1e308"] + [str(i) for i in range(51, 100)]
BASE = {"ddp.parquet": PROFILE}
ST = ("stratify", "ddp.parquet", "s.csv", "--score-col", "score", "--n-boot", "20")

CASES = [
    # the join loses every speech segment: an error naming the unmatched keys of both sides and the shares
    Case("stratify-join-prefix-mismatch", ST, 3,
         r"\[D710\].*100 of 200 score rows of s\.csv \(50 %\) have no profile segment \(first: "
         r"document_id='v0', segment_id=0.*50 of 100 segments of the profile ddp\.parquet \(50 %\) have no score row "
         r"\(first: document_id='vid_v0', segment_id=0.*--allow-partial-join",
         files={**BASE, "s.csv": scores_csv(NO_PREFIX)}),
    Case("stratify-join-prefix-mismatch-to-file", ST + ("-o", "r.json"), 3, r"\[D710\]",
         files={**BASE, "s.csv": scores_csv(NO_PREFIX)}),
    # --allow-partial-join: goes on, and the loss is still said on stderr
    Case("stratify-join-partial-allowed", ST + ("--allow-partial-join", "-o", "r.json"), 0,
         r"warning: 100 of 200 score rows \(50 %\) have no profile segment",
         files={**BASE, "s.csv": scores_csv(NO_PREFIX)}, outputs=("r.json", "r.json.signature.json")),
    Case("stratify-join-partial-allowed-profile-side", ST + ("--allow-partial-join", "-o", "r.json"), 0,
         r"warning: 50 of 100 profile segments \(50 %\) have no score row \(first: document_id='vid_v0'",
         files={**BASE, "s.csv": scores_csv(NO_PREFIX)}, outputs=("r.json", "r.json.signature.json")),
    # a raised --max-unjoined accepts the loss, still with a warning
    Case("stratify-join-max-unjoined-raised", ST + ("--max-unjoined", "0.6"), 0,
         r"warning: 100 of 200 score rows", files={**BASE, "s.csv": scores_csv(NO_PREFIX)}),
    # below the default 1 %: one unknown score row of 201 (0.5 %) is a warning, not an error
    Case("stratify-join-below-share-warns", ST, 0,
         r"warning: 1 of 201 score rows \(0\.498 %\) have no profile segment.*document_id='zz', segment_id=3",
         files={**BASE, "s.csv": scores_csv(extra="X,zz,3,1\n")}),
    # only the profile side: the scores cover 3 of 10 documents
    Case("stratify-join-profile-side", ST, 3,
         r"\[D710\].*70 of 100 segments of the profile ddp\.parquet \(70 %\) have no score row",
         files={**BASE, "s.csv": "system,document_id,segment_id,score\n" + "".join(
             f"X,{d},{s},{s}\n" for d in DOCS[:3] for s in range(10))}),
    Case("stratify-max-unjoined-above-one", ST + ("--max-unjoined", "2"), 2, r"\[D713\].*between 0 and 1",
         files={**BASE, "s.csv": scores_csv()}),
    Case("stratify-max-unjoined-negative", ST + ("--max-unjoined", "-0.1"), 2, r"\[D713\]",
         files={**BASE, "s.csv": scores_csv()}),
    Case("stratify-max-unjoined-nan", ST + ("--max-unjoined", "nan"), 2, r"\[D713\]",
         files={**BASE, "s.csv": scores_csv()}),
    # null / NaN scores
    Case("stratify-nan-scores", ST, 3,
         r"\[D711\].*25 of 200 score rows \(12\.5 %\) have a null or non-finite score \(first: document_id='vid_v0', "
         r"segment_id=0", files={**BASE, "s.csv": scores_csv(score=NANS)}),
    Case("stratify-nan-scores-allowed", ST + ("--allow-partial-join",), 0,
         r"warning: 25 null or non-finite score\(s\) left out", files={**BASE, "s.csv": scores_csv(score=NANS)}),
    Case("stratify-one-nan-warns", ST, 0, r"warning: 1 null or non-finite score\(s\) left out",
         files={**BASE, "s.csv": scores_csv(score=ONE_NAN)}),
    Case("stratify-all-nan", ST + ("--allow-partial-join",), 3, r"\[D711\].*nothing to stratify",
         files={**BASE, "s.csv": "system,document_id,segment_id,score\nX,d5,0,NaN\nX,d5,1,\n"}),
    # a profile key twice would join each score row twice
    Case("stratify-duplicate-profile-key", ST, 3,
         r"\[D712\].*\(document_id='vid_v3', segment_id=7\) is on 2 profile rows",
         files={"ddp.parquet": DUP_PROFILE, "s.csv": scores_csv()}),
    # scores that overflow a sum: refused with the file, row and column (no RuntimeWarning, no null mean)
    Case("stratify-score-1e308", ST, 3, r"\[D360\] s\.csv, row 1, column 'score': score 1e\+308 is too large",
         files={**BASE, "s.csv": scores_csv(score=HUGE)}),
    Case("stratify-score-minus-1e308-no-boot", ST[:5] + ("--n-boot", "0"), 3,
         r"\[D360\] s\.csv, row 51, column 'score': score -1e\+308",
         files={**BASE, "s.csv": scores_csv(score=HUGE_NEG)}),
    Case("stratify-score-1e308-second-column", ST[:3] + ("--score-col", "a,b", "--n-boot", "0"), 3,
         r"\[D360\] s\.csv, row 2, column 'b'",
         files={**BASE, "s.csv": "document_id,segment_id,a,b\n" + "".join(
             f"{d},{s},{s},{'1.5e308' if (d, s) == ('vid_v0', 1) else s}\n" for d in DOCS for s in range(10))}),
    # a segment scored twice within a group weighs double: said on stderr
    Case("stratify-repeated-row-warns", ST + ("--by", "system"), 0,
         r"warning: 1 of 2 group\(s\) score some segments more often than others.*system='X'.*"
         r"\(document_id='d9', segment_id=9\) 2 times", files={**BASE, "s.csv": scores_csv(extra="X,d9,9,70\n")}),
    # --strict-join keeps its meaning (any unmatched row is an error)
    Case("stratify-strict-join-below-share", ST + ("--strict-join",), 3, r"\[D653\].*document_id='zz'",
         files={**BASE, "s.csv": scores_csv(extra="X,zz,3,1\n")}),
]


@parametrize(CASES)
def test_break(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_partial_join_accounting_in_json(tmp_path: Path) -> None:
    """The JSON of an allowed partial join: counts of both sides, shares and first keys, against the fixture
    (100 of 200 score rows and 50 of 100 segments unmatched: the five vid_ documents)."""
    case = CASES[2]
    run_case(case, tmp_path)
    j = json.loads((tmp_path / "r.json").read_text())["signature"]["join"]
    side = json.loads((tmp_path / "r.json.signature.json").read_text())["join"]
    assert j == side
    assert (j["score_rows"], j["matched_score_rows"], j["unmatched_score_rows"]) == (200, 100, 100)
    assert (j["profile_segments"], j["matched_profile_segments"], j["unmatched_profile_segments"]) == (100, 50, 50)
    assert j["unmatched_score_share"] == 0.5 and j["unmatched_profile_share"] == 0.5
    assert j["first_unmatched_score_keys"][0] == {"document_id": "v0", "segment_id": 0}
    assert j["first_unmatched_profile_keys"][0] == {"document_id": "vid_v0", "segment_id": 0}
    assert j["allow_partial_join"] is True and j["max_unjoined"] == 0.01
    warn = json.loads((tmp_path / "r.json").read_text())["signature"]["warnings"]
    assert any("100 of 200 score rows" in w for w in warn)
