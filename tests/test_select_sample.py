"""``ddp select`` and ``ddp sample`` on hand-made profiles (no spaCy): selection and context
against the slow oracle in tests/oracles/curation.py, byte-identical rows, determinism, bin reports."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from oracles import curation as oracle
from ddpcore.cli.main import main
from ddpcore.curate import select as SEL
from ddpcore.errors import DDPDataError, DDPUsageError


def make_rows(n_docs: int = 12, seed: int = 0) -> list[dict]:
    """Random documents: 1-9 segments, 0-4 sentences each, DDP reaching at most to sentence 0."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(n_docs):
        first = 0
        dom = ["news", "literary", "social"][d % 3]
        for s in range(int(rng.integers(1, 10))):
            n = int(rng.integers(0, 5))
            reach = first + max(n - 1, 0)
            ddp = int(rng.integers(0, reach + 1)) if rng.random() < 0.7 else 0
            rows.append({"document_id": f"doc{d}", "segment_id": s, "domain": dom, "ddp": ddp,
                         "first_sentence": first, "n_sentences": n})
            first += n
    return rows


def write_profile(rows: list[dict], path: Path, signature: dict | None = None) -> Path:
    df = pl.DataFrame(rows).select("document_id", "segment_id", "domain",
                                   pl.col("n_sentences").cast(pl.Int32), pl.lit(3).alias("n_tokens"),
                                   pl.lit(1).alias("n_anchors"), pl.col("ddp").cast(pl.Int32),
                                   pl.col("first_sentence").cast(pl.Int32))
    t = df.to_arrow()
    sig = signature or {"columns": {"document": "document_id", "segment": "segment_id", "text": "source",
                                    "domain": "domain"}}
    t = t.replace_schema_metadata({b"ddpcore.signature": json.dumps(sig).encode()})
    pq.write_table(t, path)
    return path


def jsonl_lines(rows: list[dict]) -> list[bytes]:
    """Deliberately unusual but valid JSON: key order, spacing, escapes, a float written 1.50."""
    out = []
    for i, r in enumerate(rows):
        text = f"Seg {i} of {r['document_id']} — “quoted” \\u00e9"
        line = (f'{{ "source":"{text}",  "segment_id": {r["segment_id"]}, "document_id":"{r["document_id"]}",'
                f'"domain":"{r["domain"]}", "w": 1.50 }}')
        out.append(line.encode("utf-8") + (b"\r\n" if i % 5 == 0 else b"\n"))
    return out


def csv_records(rows: list[dict], sep: str = ",") -> tuple[bytes, list[bytes]]:
    header = f"document_id{sep}segment_id{sep}source{sep}domain\n".encode()
    recs = []
    for i, r in enumerate(rows):
        if sep == ",":
            text = f'"Line one, ""quoted""\nline two of {i}"' if i % 3 == 0 else f"plain {i}"
        else:
            text = f"tab text {i} with \"quote"
        recs.append(f"{r['document_id']}{sep}{r['segment_id']}{sep}{text}{sep}{r['domain']}\n".encode())
    return header, recs


@pytest.fixture()
def corpus(tmp_path: Path):
    rows = make_rows()
    prof = write_profile(rows, tmp_path / "ddp.parquet")
    lines = jsonl_lines(rows)
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"".join(lines[:7]) + b"\n  \n" + b"".join(lines[7:]))  # a blank line inside
    return rows, prof, src, lines


CRITERIA = [
    dict(min_ddp=2),
    dict(max_ddp=1),
    dict(min_ddp=1, max_ddp=4),
    dict(top_share=0.25),
    dict(top_share=1.0),
    dict(min_ddp=2, with_context=True),
    dict(top_share=0.1, with_context=True),
    dict(min_ddp=3, level="document"),
    dict(top_share=0.3, level="document"),
    dict(min_ddp=1, domains=("news",), with_context=True),
    dict(top_share=0.5, domains=("literary", "social")),
]


@pytest.mark.parametrize("crit", CRITERIA, ids=[json.dumps(c) for c in CRITERIA])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_selection_matches_oracle(tmp_path: Path, crit: dict, seed: int) -> None:
    rows = make_rows(15, seed)
    prof = write_profile(rows, tmp_path / "p.parquet")
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"".join(jsonl_lines(rows)))
    res = SEL.select(src, prof, SEL.Criteria(**crit))
    assert set(np.flatnonzero(res.keep).tolist()) == oracle.select(rows, **crit)


def test_context_reaches_back_to_holding_segment() -> None:
    # hand-made document: segments of 2, 0, 3, 1 sentences (first_sentence 0, 2, 2, 5);
    # segment 3 has DDP 4: sentence 5 - 4 = 1 is held by segment 0 -> segments 0..3 all kept
    rows = [dict(document_id="a", segment_id=i, domain=None, ddp=d, first_sentence=f, n_sentences=n)
            for i, (d, f, n) in enumerate([(0, 0, 2), (0, 2, 0), (0, 2, 3), (4, 5, 1)])]
    m = SEL.Matched(doc=np.zeros(4, dtype=np.int64), ddp=np.array([0, 0, 0, 4]), first_sentence=np.array([0, 2, 2, 5]),
                    n_sentences=np.array([2, 0, 3, 1]), domain=np.full(4, None), ids=pl.DataFrame())
    sel = np.array([False, False, False, True])
    assert SEL.context_mask(m, sel).tolist() == [True, True, True, True]
    # DDP 3: sentence 2 is held by segment 2 (segment 1 has no sentences) -> segments 2, 3
    m.ddp = np.array([0, 0, 0, 3])
    assert SEL.context_mask(m, sel).tolist() == [False, False, True, True]
    assert sorted(oracle.context(rows[:3] + [dict(rows[3], ddp=3)], {3})) == [2, 3]


def test_jsonl_rows_are_byte_identical(corpus, tmp_path: Path) -> None:
    rows, prof, src, lines = corpus
    out = tmp_path / "out.jsonl"
    assert main([ "select", str(src), "--profile", str(prof), "--min-ddp", "2", "-o", str(out)]) == 0
    keep = sorted(oracle.select(rows, min_ddp=2))
    assert out.read_bytes() == b"".join(lines[i] for i in keep)
    sig = json.loads((tmp_path / "out.jsonl.signature.json").read_text())
    assert sig["command"] == "select" and sig["criteria"]["min_ddp"] == 2 and sig["kept"]["segments"] == len(keep)


@pytest.mark.parametrize("sep,ext", [(",", "csv"), ("\t", "tsv")])
@pytest.mark.parametrize("gz", [False, True])
def test_csv_tsv_records_are_byte_identical(tmp_path: Path, sep: str, ext: str, gz: bool) -> None:
    rows = make_rows(10, 3)
    prof = write_profile(rows, tmp_path / "p.parquet")
    header, recs = csv_records(rows, sep)
    body = header + b"".join(recs)
    name = f"in.{ext}" + (".gz" if gz else "")
    src = tmp_path / name
    src.write_bytes(gzip.compress(body) if gz else body)
    out = tmp_path / (f"out.{ext}" + (".gz" if gz else ""))
    assert main(["select", str(src), "--profile", str(prof), "--top-share", "0.3", "--with-context", "-o", str(out)]) == 0
    keep = sorted(oracle.select(rows, top_share=0.3, with_context=True))
    got = gzip.decompress(out.read_bytes()) if gz else out.read_bytes()
    assert got == header + b"".join(recs[i] for i in keep)


def test_last_line_without_newline_and_small_blocks(tmp_path: Path) -> None:
    rows = make_rows(6, 4)
    lines = jsonl_lines(rows)
    data = b"".join(lines).rstrip(b"\r\n")
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    keep = np.zeros(len(rows), dtype=bool)
    keep[[0, 3, len(rows) - 1]] = True
    got = b"".join(SEL.iter_selected_bytes(src, "jsonl", keep, len(rows), block_bytes=7))
    want = lines[0] + lines[3] + lines[-1].rstrip(b"\r\n")
    assert got == want


def test_parquet_rows_and_metadata(tmp_path: Path) -> None:
    rows = make_rows(8, 5)
    prof = write_profile(rows, tmp_path / "p.parquet")
    df = pl.DataFrame(rows).select("document_id", "segment_id", "domain",
                                   pl.format("text {}", pl.col("segment_id")).alias("source"),
                                   pl.col("ddp").cast(pl.Float32).alias("extra"))
    t = df.to_arrow().replace_schema_metadata({b"mine": b"kept"})
    pq.write_table(t, tmp_path / "in.parquet", row_group_size=7)
    out = tmp_path / "out.parquet"
    assert main(["select", str(tmp_path / "in.parquet"), "--profile", str(prof), "--unit", "document",
                 "--min-ddp", "3", "-o", str(out)]) == 0
    keep = sorted(oracle.select(rows, min_ddp=3, level="document"))
    got = pq.read_table(out)
    assert got.schema.metadata[b"mine"] == b"kept" and b"ddpcore.signature" in got.schema.metadata
    assert got.drop_columns([]).to_pylist() == t.take(pa.array(keep)).to_pylist()
    assert got.schema.remove_metadata() == t.schema.remove_metadata()


def test_stdout_and_summary(corpus, capfd) -> None:
    rows, prof, src, lines = corpus
    assert main(["select", str(src), "--profile", str(prof), "--max-ddp", "0", "-o", "-"]) == 0
    cap = capfd.readouterr()
    keep = sorted(oracle.select(rows, max_ddp=0))
    assert cap.out.encode() == b"".join(lines[i] for i in keep)
    assert "before:" in cap.err and f"({len(keep)} segments)" in cap.err


def test_profile_of_another_input(corpus, tmp_path: Path) -> None:
    rows, prof, src, lines = corpus
    other = write_profile([dict(r, document_id=r["document_id"] + "x") for r in rows], tmp_path / "other.parquet")
    with pytest.raises(DDPDataError, match=r"D636.*document 'doc0', segment 0 is not in the profile"):
        SEL.select(src, other, SEL.Criteria(min_ddp=1))
    bigger = write_profile(rows + [dict(rows[0], segment_id=99)], tmp_path / "bigger.parquet")
    with pytest.raises(DDPDataError, match=r"D637.*segment 99 is not in the input"):
        SEL.select(src, bigger, SEL.Criteria(min_ddp=1))


def test_usage_errors(corpus, tmp_path: Path) -> None:
    rows, prof, src, lines = corpus
    with pytest.raises(DDPUsageError, match="D630"):
        SEL.select(src, prof, SEL.Criteria())
    with pytest.raises(DDPUsageError, match="D631"):
        SEL.select(src, prof, SEL.Criteria(top_share=1.5))
    with pytest.raises(DDPUsageError, match="D632"):
        SEL.select(src, prof, SEL.Criteria(min_ddp=5, max_ddp=1))
    with pytest.raises(DDPUsageError, match="D639.*domains: literary, news, social"):
        SEL.select(src, prof, SEL.Criteria(min_ddp=1, domains=("sport",)))


# ----------------------------------------------------------------------------- ddp sample

from ddpcore.curate import sample as SAM  # noqa: E402


@pytest.mark.parametrize("by", ["document", "segment"])
@pytest.mark.parametrize("seed", [0, 7])
def test_sample_matches_oracle(tmp_path: Path, by: str, seed: int) -> None:
    rows = make_rows(30, seed)
    prof = write_profile(rows, tmp_path / "p.parquet")
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"".join(jsonl_lines(rows)))
    edges = [0, 1, 3, 6, float("inf")]
    res = SAM.sample(src, prof, "0,1,3,6,inf", 3, by=by, seed=seed)
    want, report = oracle.sample(rows, edges, 3, by, seed)
    assert set(np.flatnonzero(res.keep).tolist()) == want
    assert [(b["available"], b["achieved"]) for b in res.bins] == report
    assert all(b["filled"] == (b["achieved"] >= 3) for b in res.bins)


def test_sample_same_bytes_twice_and_report(corpus, tmp_path: Path, capsys) -> None:
    rows, prof, src, lines = corpus
    outs = []
    for k in range(2):
        out = tmp_path / f"s{k}.jsonl"
        assert main(["sample", str(src), "--profile", str(prof), "--bins", "0,1,5,inf", "--per-bin", "2",
                     "--seed", "11", "-o", str(out)]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    keep, _ = oracle.sample(rows, [0, 1, 5, float("inf")], 2, "document", 11)
    assert outs[0] == b"".join(lines[i] for i in sorted(keep))  # input order, verbatim
    text = capsys.readouterr().out
    assert "target" in text and "achieved" in text
    # a bin with fewer units than asked is reported as not fillable
    res = SAM.sample(src, prof, "0,1,5,inf", 1000, seed=1)
    assert not any(b["filled"] for b in res.bins if b["available"] < 1000)
    assert "cannot be filled" in SAM.format_report(res, "document")
    sig = json.loads((tmp_path / "s0.jsonl.signature.json").read_text())
    assert sig["seed"] == 11 and sig["bins"] == [0.0, 1.0, 5.0, "inf"] and len(sig["report"]) == 3


def test_sample_seed_changes_sample(tmp_path: Path) -> None:
    rows = make_rows(40, 9)
    prof = write_profile(rows, tmp_path / "p.parquet")
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"".join(jsonl_lines(rows)))
    a = SAM.sample(src, prof, "0,2,inf", 3, seed=1).keep
    b = SAM.sample(src, prof, "0,2,inf", 3, seed=2).keep
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("bins,code", [("0,5,5", "D640"), ("5,1", "D640"), ("0,x", "D642"), ("3", "D642"),
                                       ("-1,2", "D640"), ("0,nan", "D640")])
def test_bad_bins(bins: str, code: str) -> None:
    with pytest.raises(DDPUsageError, match=code):
        SAM.parse_bins(bins)


# ----------------------------------------------------------------------------- --reader wmt24 / lines / wmt25


def _wmt24_layout(tmp_path: Path, rows: list[dict]) -> tuple[Path, Path]:
    """source.txt (canary line 0, one segment per line), source.docs, outputs/<lp>/<sys>.txt aligned."""
    src_lines = [b"CANARY GUID 0000"] + [f"segment {i} \xe9 of {r['document_id']}".encode() for i, r in enumerate(rows)]
    docs_lines = [b"canary\tcanary"] + [f"{r['domain']}\t{r['document_id']}".encode() for r in rows]
    (tmp_path / "source.txt").write_bytes(b"\n".join(src_lines) + b"\n")
    (tmp_path / "source.docs").write_bytes(b"\n".join(docs_lines) + b"\n")
    for lp, sysname in (("en-cs", "A"), ("en-cs", "B"), ("en-ja", "ref")):
        d = tmp_path / "outputs" / lp
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{sysname}.txt").write_bytes(b"\n".join([b"canary"] + [f"{sysname} {i}".encode() for i in range(len(rows))])
                                           + b"\n")
    return tmp_path / "source.txt", tmp_path / "source.docs"


def test_wmt24_layout_source_docs_and_outputs(tmp_path: Path) -> None:
    rows = make_rows(8, 6)  # already grouped by document, segment ids = positions
    prof = write_profile(rows, tmp_path / "p.parquet")
    src, docs = _wmt24_layout(tmp_path, rows)
    (tmp_path / "sel").mkdir()
    out = tmp_path / "sel" / "hi.txt"
    assert main(["select", str(src), "--reader", "wmt24", "--profile", str(prof), "--min-ddp", "2", "--with-context",
                 "--outputs", str(tmp_path / "outputs"), "-o", str(out)]) == 0
    keep = [0] + [i + 1 for i in sorted(oracle.select(rows, min_ddp=2, with_context=True))]  # canary line kept
    for produced, original in ((out, src), (tmp_path / "sel" / "hi.docs", docs),
                               (tmp_path / "sel" / "hi.outputs" / "en-cs" / "A.txt", tmp_path / "outputs/en-cs/A.txt"),
                               (tmp_path / "sel" / "hi.outputs" / "en-ja" / "ref.txt",
                                tmp_path / "outputs/en-ja/ref.txt")):
        lines = original.read_bytes().split(b"\n")
        assert produced.read_bytes() == b"".join(lines[i] + b"\n" for i in keep), produced
    assert json.loads((tmp_path / "sel" / "hi.txt.signature.json").read_text())["command"] == "select"


def test_wmt24_outputs_must_be_aligned(tmp_path: Path) -> None:
    rows = make_rows(3, 1)
    prof = write_profile(rows, tmp_path / "p.parquet")
    src, _ = _wmt24_layout(tmp_path, rows)
    (tmp_path / "outputs" / "en-cs" / "short.txt").write_bytes(b"one line\n")
    with pytest.raises(DDPDataError, match=r"D645.*short.txt has 1 lines"):
        SEL.select(src, prof, SEL.Criteria(min_ddp=0), tmp_path / "o.txt", reader="wmt24",
                   outputs=tmp_path / "outputs")
    assert not (tmp_path / "o.txt").exists()


def test_wmt25_documents_jsonl(tmp_path: Path) -> None:
    rows = make_rows(9, 2)
    prof = write_profile(rows, tmp_path / "p.parquet")
    docs: dict[str, list[dict]] = {}
    for r in rows:
        docs.setdefault(r["document_id"], []).append(r)
    lines = [json.dumps({"doc": d, "domain": rs[0]["domain"],
                         "src_text": "\n\n".join(f"para {r['segment_id']}" for r in rs)}).encode() + b"\n"
             for d, rs in docs.items()]
    src = tmp_path / "docs.jsonl"
    src.write_bytes(b"".join(lines))
    out = tmp_path / "o.jsonl"
    assert main(["sample", str(src), "--reader", "wmt25", "--profile", str(prof), "--bins", "0,2,inf",
                 "--per-bin", "2", "--seed", "4", "-o", str(out)]) == 0
    keep, _ = oracle.sample(rows, [0, 2, float("inf")], 2, "document", 4)
    kept_docs = {rows[i]["document_id"] for i in keep}
    assert out.read_bytes() == b"".join(ln for ln, d in zip(lines, docs) if d in kept_docs)
    with pytest.raises(DDPUsageError, match="D646"):
        SEL.select(src, prof, SEL.Criteria(min_ddp=1), out, reader="wmt25")
