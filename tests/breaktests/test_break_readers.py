"""Break tests for the input readers of ``ddp profile`` (``--reader``, ``--docs``, ``--txt-mode``)
and ``--documents`` (issue 9). Every row fails before a spaCy pipeline is loaded; see
``_harness.py`` for the promises checked on every row (exit code, one stderr line, inputs
unchanged, no stray files)."""
from __future__ import annotations

import json

from ._harness import Case, parametrize, run_case

FAST = 30.0
SRC = "CANARY GUID 1\nAnna came.\nShe left.\nThe cat slept.\n"
DOCS = "canary\tcanary\nnews\td1\nnews\td1\nsocial\td2\n"
WMT24 = {"wmt_en_source.txt": SRC, "wmt_en.docs": DOCS}
WMT25 = json.dumps({"doc_id": "d1", "domain": "news", "src_text": "A.\n\nB."}) + "\n"


def C(id, argv, exit, stderr, files=None, outputs=()):  # type: ignore[no-untyped-def]
    return Case(id=id, argv=tuple(argv), exit=exit, stderr=stderr, files=files or {}, outputs=tuple(outputs),
                timeout=FAST)


CASES = [
    # ---- .docs files
    C("docs-short", ["profile", "wmt_en_source.txt", "--reader", "wmt24"], 3,
      r"\[D603\].*wmt_en_source\.txt, line 4: no matching line in .*wmt_en\.docs \(wmt_en_source\.txt has 4 lines, "
      r"wmt_en\.docs 3\)", {"wmt_en_source.txt": SRC, "wmt_en.docs": DOCS.rsplit("social", 1)[0]}),
    C("docs-long", ["profile", "wmt_en_source.txt", "--reader", "wmt24"], 3, r"\[D603\].*wmt_en\.docs, line 5",
      {"wmt_en_source.txt": SRC, "wmt_en.docs": DOCS + "social\td2\n"}),
    C("docs-missing", ["profile", "wmt_en_source.txt", "--reader", "wmt24"], 3, r"\[D602\].*--docs",
      {"wmt_en_source.txt": SRC}),
    C("docs-explicit-missing", ["profile", "wmt_en_source.txt", "--reader", "wmt24", "--docs", "nope.docs"], 3,
      r"\[D102\].*nope\.docs", WMT24),
    C("docs-no-tab", ["profile", "wmt_en_source.txt", "--reader", "wmt24"], 3,
      r"\[D604\].*wmt_en\.docs, line 3: expected 'domain<TAB>document id'",
      {"wmt_en_source.txt": SRC, "wmt_en.docs": DOCS.replace("news\td1\nsocial", "d1\nsocial")}),
    C("docs-empty-id", ["profile", "a.txt", "--reader", "lines", "--docs", "a.docs"], 3,
      r"\[D604\].*a\.docs, line 2", {"a.txt": "One.\nTwo.\n", "a.docs": "d1\n\t\n"}),
    C("docs-bad-utf8", ["profile", "wmt_en_source.txt", "--reader", "wmt24"], 3, r"\[D104\].*wmt_en\.docs: line 2",
      {"wmt_en_source.txt": SRC, "wmt_en.docs": DOCS.encode().replace(b"d1", b"d\xff", 1)}),
    # ---- the source text
    C("wmt24-only-canary", ["profile", "s.txt", "--reader", "wmt24", "--docs", "s.docs"], 3, r"\[D606\]",
      {"s.txt": "CANARY GUID 1\n", "s.docs": "canary\tcanary\n"}),
    C("wmt24-empty-line", ["profile", "wmt_en_source.txt", "--reader", "wmt24"], 3, r"\[D111\].*empty source text",
      {"wmt_en_source.txt": SRC.replace("She left.", ""), "wmt_en.docs": DOCS}),
    C("wmt24-bad-utf8", ["profile", "wmt_en_source.txt", "--reader", "wmt24"], 3, r"\[D104\].*line 3",
      {"wmt_en_source.txt": SRC.encode().replace(b"She", b"Sh\xe9"), "wmt_en.docs": DOCS}),
    C("wmt25-no-src-text", ["profile", "d.jsonl", "--reader", "wmt25"], 3, r"\[D605\].*src_text",
      {"d.jsonl": json.dumps({"doc_id": "d1", "text": "x"}) + "\n"}),
    C("wmt25-no-doc-id", ["profile", "d.jsonl", "--reader", "wmt25"], 3, r"\[D605\].*doc_id",
      {"d.jsonl": json.dumps({"src_text": "x"}) + "\n"}),
    C("wmt25-empty-paragraph", ["profile", "d.jsonl", "--reader", "wmt25"], 3, r"\[D111\]",
      {"d.jsonl": json.dumps({"doc_id": "d1", "src_text": "A.\n\n\n\nB."}) + "\n"}),
    # ---- usage
    C("docs-with-wmt25", ["profile", "d.jsonl", "--reader", "wmt25", "--docs", "wmt_en.docs"], 2, r"\[D601\]",
      {"d.jsonl": WMT25, **WMT24}),
    C("docs-with-table", ["profile", "d.jsonl", "--docs", "wmt_en.docs"], 2, r"\[D601\]", {"d.jsonl": WMT25, **WMT24}),
    C("wmt24-on-folder", ["profile", "f", "--reader", "wmt24"], 2, r"\[D601\].*folder", {"f/a.txt": "A."}),
    C("txt-mode-on-file", ["profile", "d.jsonl", "--txt-mode", "paragraphs"], 2, r"\[D601\].*--txt-mode",
      {"d.jsonl": WMT25}),
    # ---- issue 19: binary content, quoted TSV, --shard codes
    C("jsonl-sparse-nul", ["profile", "x.jsonl", "-o", "o.parquet"], 3,
      r"\[D730\] .*x\.jsonl: byte offset 0: a NUL byte", {"x.jsonl": b"\x00" * 4096}),
    C("tsv-nul-late", ["profile", "x.tsv", "-o", "o.parquet"], 3, r"\[D730\] .*x\.tsv: byte offset 36: a NUL byte",
      {"x.tsv": b"document_id\tsegment_id\tsource\nd\t0\tA\n\x00\x00"}),
    C("lines-nul", ["profile", "a.txt", "--reader", "lines", "--docs", "a.docs", "-o", "o.parquet"], 3,
      r"\[D730\] .*a\.txt: byte offset 5: a NUL byte", {"a.txt": b"One.\n\x00Two.\n", "a.docs": "d1\nd1\n"}),
    C("parquet-named-jsonl", ["profile", "x.jsonl", "-o", "o.parquet"], 3,
      r"\[D731\] .*x\.jsonl: byte offset 0: the file is a Parquet file.*name it \.parquet", {"x.jsonl": b"PAR1xyz"}),
    C("gzip-named-csv", ["profile", "x.csv", "-o", "o.parquet"], 3, r"\[D731\] .*gzip-compressed.*\.gz",
      {"x.csv": b"\x1f\x8b\x08\x00rest"}),
    C("tsv-unterminated", ["profile", "x.tsv", "-o", "o.parquet"], 3,
      r"\[D103\] .*x\.tsv: line 3, byte column 5: a quoted field opened here is never closed",
      {"x.tsv": 'document_id\tsegment_id\tsource\nd\t0\t"a\tb"\nd\t1\t"open\nd\t2\tc\n'}),
    C("tsv-wrong-field-count", ["profile", "x.tsv", "-o", "o.parquet"], 3,
      r"\[D103\] .*x\.tsv: line 4, byte column 1: 4 fields where the header has 3",
      {"x.tsv": 'document_id\tsegment_id\tsource\nd\t0\t"two\nlines"\nd\t1\tx\ty\n'}),
    C("tsv-text-after-quote", ["profile", "x.tsv", "-o", "o.parquet"], 3,
      r"\[D103\] .*x\.tsv: line 2, byte column 9: text after the closing \"",
      {"x.tsv": 'document_id\tsegment_id\tsource\nd\t0\t"Hi," she said\n'}),
    C("shard-out-of-range", ["profile", "x.jsonl", "--shard", "3/2", "-o", "o.parquet"], 2,
      r"--shard: \[D173\] expected 0 <= I < N.*'3/2'", {"x.jsonl": WMT25}),
    C("shard-not-a-fraction", ["profile", "x.jsonl", "--shard", "abc", "-o", "o.parquet"], 2,
      r"--shard: \[D173\] expected I/N.*'abc'", {"x.jsonl": WMT25}),
    # ---- --documents is an output like the others
    C("documents-is-input", ["profile", "wmt_en_source.txt", "--reader", "wmt24", "--documents", "wmt_en.docs"], 2,
      r"\[D101\]", WMT24),
    C("documents-is-input-jsonl", ["profile", "d.jsonl", "--reader", "wmt25", "--documents", "d.jsonl"], 2,
      r"\[D133\].*--documents", {"d.jsonl": WMT25}),
    C("documents-is-output", ["profile", "d.jsonl", "--reader", "wmt25", "-o", "o.csv", "--documents", "o.csv"], 2,
      r"\[D134\]", {"d.jsonl": WMT25}),
    C("documents-on-sidecar", ["profile", "d.jsonl", "--reader", "wmt25", "-o", "o.csv", "--documents",
                               "o.csv.signature.json"], 2, r"\[D13[34]\]", {"d.jsonl": WMT25}),
    C("documents-stdout", ["profile", "d.jsonl", "--reader", "wmt25", "--documents", "-"], 2, r"\[D135\]",
      {"d.jsonl": WMT25}),
    C("documents-no-folder", ["profile", "d.jsonl", "--reader", "wmt25", "--documents", "nodir/d.parquet"], 2,
      r"\[D130\]", {"d.jsonl": WMT25}),
]


@parametrize(CASES)
def test_break_readers(case: Case, tmp_path) -> None:  # type: ignore[no-untyped-def]
    run_case(case, tmp_path)
