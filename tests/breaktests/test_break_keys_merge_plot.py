"""Break tests of the issue-9 follow-ups: the ESA WMT23 key convention (D186), ``ddp merge
--documents`` (D187), ``ddp explain`` from an output without text (D188, D189), ``ddp stratify``
with a real ``metric`` column (D560) and ``ddp plot --max-panels`` (D561).

Rows follow tests/breaktests/_harness.py: exit code, one stderr line matching the pattern, no
traceback, inputs unchanged, no stray files. None of them loads a spaCy pipeline."""
from __future__ import annotations

import io
import json
import tarfile

import polars as pl
import pyarrow.parquet as pq

from ._harness import Case, parametrize, run_case

FAST = 60.0


def _parquet(df: pl.DataFrame, meta: dict[str, str] | None = None) -> bytes:
    t = df.to_arrow()
    if meta:
        t = t.replace_schema_metadata({k.encode(): v.encode() for k, v in meta.items()})
    buf = io.BytesIO()
    pq.write_table(t, buf)
    return buf.getvalue()


def _tar_xz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# ---- ESA WMT23: a wide TSV whose doc column disagrees with en-de.docs in the archive
ESA_TAR = _tar_xz({"data/mt-metrics-eval-v2/wmt23/documents/en-de.docs": b"news\tdocA\nnews\tdocA\nsocial\tdocB\n"})
WIDE = ("seg_idx\tdomain\tdoc\tsystem\tESAAI-1\tESAAI-2\n0\tnews\tdocA\ts1\t80\t70\n1\tnews\tdocA\ts1\t60\t65\n"
        "2\tsocial\tdocZ\ts1\t50\t55\n")
ESA = {"esa/errorspanannotation_wmt23_en-de_data.tar.xz": ESA_TAR, "esa/esa_wmt23_en-de_scores_wide.tsv": WIDE}

# ---- merge: documents shards of one run (signature + table metadata), document 'a' in both
COLS = {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"}


def _docs_shard(i: int, ids: list[str], key: bool = True) -> bytes:
    sig = {"columns": COLS, "rules": "refined", "distance": "chained", "shard": f"{i}/2", "input": "in.jsonl"}
    df = pl.DataFrame({"document_id": ids, "domain": ["news"] * len(ids), "n_segments": [1] * len(ids),
                       "max_ddp": [0] * len(ids)})
    if key:
        df = df.with_columns(pl.int_range(pl.len()).alias("document_first_row") + 10 * i)
    return _parquet(df, {"ddpcore.signature": json.dumps(sig), "ddpcore.table": "documents"})


# ---- explain: a profile without its text column
PROFILE_SIG = {"columns": COLS, "rules": "refined", "distance": "chained", "pipeline": "default", "input": "in.jsonl"}
BARE = _parquet(pl.DataFrame({"document_id": ["a", "a"], "segment_id": [0, 1], "ddp": [0, 1]}),
                {"ddpcore.signature": json.dumps(PROFILE_SIG)})
ONE_SEG = json.dumps({"document_id": "a", "segment_id": 0, "source": "Anna came."}) + "\n"

# ---- stratify: two score columns stacked into 'metric' and a real 'metric' column
PROFILE = _parquet(pl.DataFrame({"document_id": ["a", "a", "b"], "segment_id": [0, 1, 0], "ddp": [0, 2, 5]}),
                   {"ddpcore.signature": json.dumps({"columns": COLS})})
WIDE_SCORES = "document_id,segment_id,system,metric,m1,m2\na,0,X,old,1,2\na,1,X,old,2,3\nb,0,X,old,3,4\n"

# ---- plot: a stratify result
STRAT = json.dumps({"groups": [{"system": "X", "n": 3, "spearman": {"rho": None, "p": None},
                                "bins": [{"low": 0, "high": 1, "n": 1, "mean": 1.0, "ci_low": None, "ci_high": None}],
                                "lowess": {"x": [0], "y": [1.0]}}],
                    "signature": {"by": ["system"], "score_col": "score"}})


def C(id, argv, exit, stderr, files=None, outputs=()):  # type: ignore[no-untyped-def]
    return Case(id=id, argv=tuple(argv), exit=exit, stderr=stderr, files=files or {}, outputs=tuple(outputs),
                timeout=FAST)


CASES = [
    C("esa-wide-doc-mismatch", ["stats", "tost", "esa", "--reader", "esa-wmt23", "--a", "ESAAI-1", "--b", "ESAAI-2",
                                "--margin", "3", "--no-pair-annotator"], 3,
      r"\[D186\].*esa_wmt23_en-de_scores_wide\.tsv, line 4, column 'doc': line 2 belongs to document docB", ESA),
    C("merge-document-in-two-shards", ["merge", "d0.parquet", "d1.parquet", "--documents", "docs.parquet"], 3,
      r"\[D187\] document 'a' has a row in two documents shards",
      {"d0.parquet": _docs_shard(0, ["a", "b"]), "d1.parquet": _docs_shard(1, ["c", "a"])}),
    C("merge-documents-without-order", ["merge", "d0.parquet", "d1.parquet", "--documents", "docs.parquet"], 2,
      r"\[D187\].*no 'document_first_row' column.*give the segment shards",
      {"d0.parquet": _docs_shard(0, ["a"], key=False), "d1.parquet": _docs_shard(1, ["b"], key=False)}),
    C("merge-documents-to-stdout", ["merge", "d0.parquet", "d1.parquet", "--documents", "-"], 2, r"\[D135\]",
      {"d0.parquet": _docs_shard(0, ["a"]), "d1.parquet": _docs_shard(1, ["b"])}),
    C("explain-no-text-no-input", ["explain", "bare.parquet", "--document", "a", "--segment", "1"], 3,
      r"\[D188\] bare\.parquet: has no text column 'source'.*input 'in\.jsonl'.*not found", {"bare.parquet": BARE}),
    C("explain-no-text-other-input", ["explain", "bare.parquet", "--document", "a", "--segment", "1"], 3,
      r"\[D189\].*in\.jsonl: document 'a' has 1 segment\(s\) here but 2 in bare\.parquet",
      {"bare.parquet": BARE, "in.jsonl": ONE_SEG}),
    C("stratify-metric-ambiguous", ["stratify", "ddp.parquet", "s.csv", "--score-col", "m1,m2", "--by", "system,metric",
                                    "--n-boot", "0"], 2,
      r"\[D560\] --by metric: ambiguous: s\.csv has a column 'metric'", {"ddp.parquet": PROFILE, "s.csv": WIDE_SCORES}),
    C("plot-max-panels-zero", ["plot", "s.json", "--kind", "curves", "--max-panels", "0", "-o", "c.png"], 2,
      r"\[D561\] --max-panels must be at least 1", {"s.json": STRAT}),
    C("plot-max-panels-hist", ["plot", "ddp.parquet", "--kind", "hist", "--max-panels", "4", "-o", "c.png"], 2,
      r"\[D561\] --max-panels applies to --kind curves", {"ddp.parquet": PROFILE}),
]


@parametrize(CASES)
def test_break(case: Case, tmp_path) -> None:  # type: ignore[no-untyped-def]
    run_case(case, tmp_path)
