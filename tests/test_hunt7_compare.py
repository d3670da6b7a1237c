"""Round-7 hunt on ``ddp stats compare --corpus-metric``: wrong answers given with exit 0, and crashes.

Every expected value comes from sacrebleu itself (2.6.0 when written): ``BLEU()/CHRF()/TER().corpus_score``
on the texts as written, or ``sacrebleu.significance._paired_bs_test`` / ``_paired_ar_test``; or it is
worked out by hand where said. Small synthetic tables in ``tmp_path`` only.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ddpcore.cli.main import main

sacrebleu = pytest.importorskip("sacrebleu")
significance = pytest.importorskip("sacrebleu.significance")
from sacrebleu.metrics import BLEU, CHRF, TER  # noqa: E402

METRICS = {"bleu": BLEU, "chrf": CHRF, "ter": TER}
REFS = ["the cat sat on the mat", "a dog ran fast", "big red house", "the tree is small", "blue sky today",
        "hello world again"]
BASE = ["the cat sat", "a dog", "big red house", "the tree", "blue sky", "hello world"]
SYS_A = ["the cat sat on", "a dog ran fast", "big house", "the tree is small", "blue", "hello world again"]


def _rows(hyps: dict[str, list[str]], refs: list[str], per_doc: int = 3) -> list[dict]:
    return [{"document_id": f"d{i // per_doc}", "segment_id": i, "system": s, "hypothesis": h, "reference": r}
            for s, hs in hyps.items() for i, (h, r) in enumerate(zip(hs, refs))]


def _run(capsys, path: Path, *extra: str, metrics: str = "bleu,chrf,ter") -> tuple[int, dict | None, str]:
    code = main(["stats", "compare", str(path), "--baseline", "base", "--corpus-metric", metrics, "--n-boot", "60",
                 "--n-ar", "60", *extra])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code in (0, 1) and out.out.strip() else None), out.err


def _scores(js: dict, metric: str) -> dict[str, float]:
    return {r["system"]: r["score"] for r in js["results"][metric]["systems"]}


def _sacrebleu_scores(hyps: dict[str, list[str]], refs: list[str], metric: str) -> dict[str, float]:
    # sacrebleu's own corpus score of each system on the texts as written
    return {s: METRICS[metric]().corpus_score(h, [refs]).score for s, h in hyps.items()}


# --------------------------------------------------------------------------- readers: texts as written


def test_csv_texts_that_look_like_numbers_stay_texts(tmp_path, capsys) -> None:
    """Was D999 (AttributeError: 'float' object has no attribute 'rstrip'): the CSV reader turned a hypothesis
    column of digits into numbers (``2.50`` -> 2.5) before sacrebleu saw it."""
    refs = ["1", "2.50", "3", "4", "5 6 7 8 9 10", "007"]
    hyps = {"base": ["1", "2.50", "3", "4", "5 6 7 8 9", "6"], "A": ["1", "2.5", "30", "4", "5 6 7 8", "007"]}
    path = tmp_path / "num.csv"
    pl.DataFrame(_rows(hyps, refs)).write_csv(path)
    code, js, err = _run(capsys, path)
    assert code == 0, err
    for m in METRICS:
        assert _scores(js, m) == _sacrebleu_scores(hyps, refs, m)  # exact: sacrebleu corpus_score on the strings


def test_a_number_in_a_json_text_column_is_d951(tmp_path, capsys) -> None:
    rows = _rows({"base": BASE, "A": SYS_A}, REFS)
    rows[4]["hypothesis"] = 7  # JSON number, not a text: the column is Int64 -> refused, naming row and column
    for r in rows:
        if r is not rows[4]:
            r["hypothesis"] = len(r["hypothesis"])
    path = tmp_path / "t.json"
    path.write_text(json.dumps(rows))
    code, _, err = _run(capsys, path)
    assert code == 3 and "[D951]" in err and "row 1, column 'hypothesis' (--hypothesis-col)" in err


def test_edge_texts_match_sacrebleu_in_every_reader(tmp_path, capsys) -> None:
    """Empty and whitespace-only lines, tabs, quotes, commas, CJK, emoji, combining accents and CRLF line ends
    give sacrebleu's corpus scores exactly in every table reader. (Before the fixes only BLEU's last bit was
    off here: A 51.675253161899015 against sacrebleu's 51.67525316189902.)"""
    hyps = {"base": ["", "  a dog  ", "big\t\"red\" house", "the, tree", "猫が座った 😀", "cafe\u0301 noir"],
            "A": ["   ", "a dog ran fast", "", "the tree is small", "猫が座る", "café noir"]}
    refs = ["the cat sat", "a dog ran fast", "big red house", "the tree is small", "猫がマットに座った 😀👍🏽",
            "café noir"]
    df = pl.DataFrame(_rows(hyps, refs))
    for name in ("t.parquet", "t.csv", "t.tsv", "t.jsonl", "crlf.csv"):
        path = tmp_path / name
        if name.endswith("parquet"):
            df.write_parquet(path)
        elif name.endswith("jsonl"):
            df.write_ndjson(path)
        else:
            df.write_csv(path, separator="\t" if name.endswith("tsv") else ",")
            if name.startswith("crlf"):
                path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
        code, js, err = _run(capsys, path)
        assert code == 0, (name, err)
        for m in METRICS:
            assert _scores(js, m) == _sacrebleu_scores(hyps, refs, m), (name, m)


# --------------------------------------------------------------------------- pairing


def test_a_system_with_a_segment_the_baseline_lacks_is_d393(tmp_path, capsys) -> None:
    """Was exit 0: the extra segment was silently dropped and A scored on the baseline's segments only."""
    rows = _rows({"base": BASE, "A": SYS_A}, REFS)
    rows.append({"document_id": "d9", "segment_id": 99, "system": "A", "hypothesis": "x", "reference": "x"})
    path = tmp_path / "extra.parquet"
    pl.DataFrame(rows).write_parquet(path)
    code, _, err = _run(capsys, path)
    assert code == 3 and "[D393]" in err and "system 'A' has a score for document 'd9', segment 99" in err


def test_a_duplicate_row_is_d396_naming_it(tmp_path, capsys) -> None:
    """Was a misleading D393 ("system 'base' lacks 0 of the baseline's 7 segments"); with only the
    baseline's row doubled, the join doubled the segment for every system."""
    rows = _rows({"base": BASE, "A": SYS_A}, REFS)
    rows.append(dict(rows[0]))  # row 13 repeats row 1 (base, d0, segment 0)
    path = tmp_path / "dup.parquet"
    pl.DataFrame(rows).write_parquet(path)
    code, _, err = _run(capsys, path)
    assert code == 3 and "[D396]" in err and "row 13: duplicate row for system 'base', document 'd0', segment 0" in err


def test_a_reference_that_differs_between_systems_is_d950(tmp_path, capsys) -> None:
    """Was exit 0: each system was scored against the reference text of its own rows."""
    rows = _rows({"base": BASE, "A": SYS_A}, REFS)
    rows[7]["reference"] = "something else"  # A's reference of segment 1
    path = tmp_path / "ref.parquet"
    pl.DataFrame(rows).write_parquet(path)
    code, _, err = _run(capsys, path)
    assert code == 3 and "[D950]" in err and "document 'd0', segment 1: system 'A'" in err


def test_only_the_baseline_is_d392(tmp_path, capsys) -> None:
    """Was D999 (ValueError: cannot reshape array of size 0)."""
    path = tmp_path / "one.parquet"
    pl.DataFrame(_rows({"base": BASE}, REFS)).write_parquet(path)
    code, _, err = _run(capsys, path)
    assert code == 3 and "[D392]" in err and "only the baseline 'base'" in err


def test_comet_json_with_variance_reads_one_row_per_segment(tmp_path, capsys) -> None:
    """Was a bogus D393 ("system 'base' lacks 0 of the baseline's 10 segments"): the COMET reader's long layout
    gave each segment one row per score (COMET, variance), doubling the texts."""
    obj = {f"{s}.txt": [{"src": "s", "mt": h, "ref": r, "COMET": 0.5, "variance": 0.1} for h, r in zip(hs, REFS)]
           for s, hs in (("base", BASE), ("A", SYS_A))}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(obj))
    code, js, err = _run(capsys, path, "--reader", "comet", "--hypothesis-col", "mt", "--reference-col", "ref",
                         metrics="bleu")
    assert code == 0, err
    assert _scores(js, "bleu") == _sacrebleu_scores({"base": BASE, "A": SYS_A}, REFS, "bleu")


def test_mtme_records_which_reference_was_used(tmp_path, capsys) -> None:
    root = tmp_path / "mt"
    for d in ("sources", "documents", "system-outputs/en-de", "references"):
        (root / d).mkdir(parents=True)
    (root / "sources/en-de.txt").write_text("".join(f"s{i}\n" for i in range(6)))
    (root / "documents/en-de.docs").write_text("".join(f"news doc{i // 3}\n" for i in range(6)))
    (root / "references/en-de.refA.txt").write_text("\r\n".join(REFS) + "\r\n")
    (root / "references/en-de.refB.txt").write_text("\n".join(r[::-1] for r in REFS) + "\n")
    (root / "system-outputs/en-de/base.txt").write_text("\n".join(BASE) + "\n")
    (root / "system-outputs/en-de/A.txt").write_text("\n".join(SYS_A) + "\n")
    code, js, err = _run(capsys, root, "--reader", "mtme", metrics="bleu")
    assert code == 0, err
    assert js["signature"]["reference_file"] == "references/en-de.refA.txt" and "2 references" in err
    # scored against refA (CRLF line ends removed), by sacrebleu
    assert _scores(js, "bleu") == _sacrebleu_scores({"base": BASE, "A": SYS_A}, REFS, "bleu")


# --------------------------------------------------------------------------- what is measured


def test_bleu_zero_for_both_is_not_significantly_worse(tmp_path, capsys) -> None:
    """Was verdict "worse" with diff +0 and p = 1/(B+1) (exit 1 under --fail-on worse): every segment is shorter
    than 4 words, so BLEU is 0 for both systems in the data and in every replicate and trial."""
    refs = ["a b", "c d", "e f", "g h", "i j", "k l"]
    hyps = {"base": ["a x", "c y", "e", "g", "i", "k"], "A": ["x b", "y", "f", "h", "j", "l m"]}
    # sacrebleu: both BLEU 0 and its paired tests return their floor 1/(60+1) ("significant")
    m = BLEU()
    st = m._extract_corpus_statistics(hyps["base"], [refs])
    bl = m._aggregate_and_compute(st)
    _, bs = significance._paired_bs_test({"b": (st, bl)}, "A", hyps["A"], [refs], {"b": m}, n_samples=60, seed=0)
    assert bs["b"].score == 0.0 and bs["b"].p_value == 1 / 61
    path = tmp_path / "zero.parquet"
    pl.DataFrame(_rows(hyps, refs)).write_parquet(path)
    code, js, err = _run(capsys, path, "--unit", "segment", "--fail-on", "worse", metrics="bleu")
    assert code == 0, err
    a = js["results"]["bleu"]["systems"][1]
    assert (a["score"], a["diff"], a["p_bootstrap"], a["p_ar"], a["verdict"]) == (0.0, 0.0, 1.0, 1.0, "n.s.")
    assert "score exactly the baseline's 0" in err and "p_ties" in js["signature"]


def test_integer_document_ids_are_units_in_numeric_order(tmp_path, capsys) -> None:
    """Was: document ids cast to text before numbering, so document 10 came before 2 and a seeded run drew
    other documents than the documented generator over ``unit_keys`` order (CLI != API)."""
    from ddpcore.stats.compare import unit_keys
    from ddpcore.stats.corpus import compare_corpus, sufficient_stats

    rng = np.random.default_rng(3)
    words = "the cat sat on a mat dog ran fast big small red blue house tree".split()
    refs = [" ".join(rng.choice(words, rng.integers(2, 9))) for _ in range(24)]
    hyps = {s: [" ".join(w if rng.random() > p else str(rng.choice(words)) for w in r.split()) for r in refs]
            for s, p in (("base", 0.3), ("A", 0.4))}
    rows = [{"document_id": i // 2 + 1, "segment_id": i % 2, "system": s, "hypothesis": h, "reference": refs[i],
             "score": 1.0} for s, hs in hyps.items() for i, h in enumerate(hs)]
    df = pl.DataFrame(rows)
    path = tmp_path / "intdoc.parquet"
    df.write_parquet(path)
    order = {d: k for k, d in enumerate(unit_keys(df, unit="document", baseline="base")["document_id"].to_list())}
    assert list(order) == list(range(1, 13))  # numeric order
    codes = np.array([order[i // 2 + 1] for i in range(24)])
    st = np.stack([sufficient_stats(hyps[s], refs, "bleu") for s in ("base", "A")])
    want = compare_corpus(st, "bleu", unit_codes=codes, n_boot=60, n_ar=60, seed=0)
    code, js, err = _run(capsys, path, metrics="bleu")
    assert code == 0, err
    a = js["results"]["bleu"]["systems"][1]
    assert (a["boot_mean"], a["p_bootstrap"], a["p_ar"]) == (want.boot_mean[1], want.p_bootstrap[1], want.p_ar[1])


def test_reported_bleu_is_sacrebleus_to_the_last_bit() -> None:
    """Was 75.19760309383662 against sacrebleu's 75.19760309383663 (numpy's SIMD exp/log vs math's)."""
    from ddpcore.stats.corpus import compare_corpus, sufficient_stats

    refs = ["1", "2.50", "3", "4", "5 6 7 8 9 10", "007"]
    hyps = [["1", "2.50", "3", "4", "5 6 7 8 9", "6"], ["1", "2.5", "30", "4", "5 6 7 8", "007"]]
    st = np.stack([sufficient_stats(h, refs, "bleu") for h in hyps])
    r = compare_corpus(st, "bleu", n_boot=10, n_ar=10)
    want = [BLEU().corpus_score(h, [refs]).score for h in hyps]  # sacrebleu
    assert list(r.score) == want and r.diff[1] == want[1] - want[0]


# --------------------------------------------------------------------------- flags


def test_a_score_column_named_like_a_corpus_metric_is_d952(tmp_path, capsys) -> None:
    """Was exit 0 with the segment-mean 'bleu' column silently replaced by the corpus BLEU (printed twice)."""
    path = tmp_path / "t.parquet"
    pl.DataFrame(_rows({"base": BASE, "A": SYS_A}, REFS)).with_columns(bleu=pl.lit(1.0)).write_parquet(path)
    code, _, err = _run(capsys, path, "--score-col", "bleu", metrics="bleu")
    assert code == 2 and "[D952]" in err


def test_corpus_flags_are_checked(tmp_path, capsys) -> None:
    """Were: --n-boot 0 silently run with 1,000 replicates (signature n_boot:1000); --lower-is-better bleu or
    a name of nothing silently ignored; --lower-is-better ter refused (D390) beside a --score-col."""
    path = tmp_path / "t.parquet"
    pl.DataFrame(_rows({"base": BASE, "A": SYS_A}, REFS)).with_columns(comet=pl.lit(0.5)).write_parquet(path)
    code, _, err = _run(capsys, path, "--n-boot", "0", metrics="bleu")
    assert code == 2 and "[D390] n_boot must be a positive integer, got 0 (--n-boot)" in err
    for flag in ("bleu", "nosuch"):
        code, _, err = _run(capsys, path, "--lower-is-better", flag, metrics="bleu")
        assert code == 2 and "[D390]" in err and flag in err
    code, js, err = _run(capsys, path, "--score-col", "comet", "--lower-is-better", "ter", metrics="ter")
    assert code == 0, err
    assert js["results"]["ter"]["lower_is_better"] is True


def test_corpus_signature_line_names_test_confidence_alpha(tmp_path, capsys) -> None:
    """Was ``...|seed:0|correction:holm`` whatever --test/--confidence/--alpha (the only signature of -f tsv)."""
    path = tmp_path / "t.parquet"
    pl.DataFrame(_rows({"base": BASE, "A": SYS_A}, REFS)).write_parquet(path)
    code, js, err = _run(capsys, path, "--test", "bootstrap", "--confidence", "0.9", "--alpha", "0.1", metrics="bleu")
    assert code == 0, err
    assert js["signature_line"].endswith("|correction:holm|test:bootstrap|confidence:0.9|alpha:0.1")


def test_seed_determinism(tmp_path, capsys) -> None:
    """Regression guard: the same --seed repeats the run exactly, another seed draws other replicates."""
    path = tmp_path / "t.parquet"
    pl.DataFrame(_rows({"base": BASE, "A": SYS_A}, REFS, per_doc=1)).write_parquet(path)
    runs = [_run(capsys, path, "--seed", s, metrics="chrf")[1]["results"]["chrf"]["systems"][1]
            for s in ("5", "5", "6")]
    assert runs[0] == runs[1] and runs[0]["boot_mean"] != runs[2]["boot_mean"]


def test_a_null_id_is_d399_naming_the_row(tmp_path, capsys) -> None:
    """Was a misleading D393 ("system 'base' lacks 1 of the baseline's 6 segments"): a null document id never
    joins, not even with its own row."""
    rows = _rows({"base": BASE, "A": SYS_A}, REFS)
    rows[2]["document_id"] = None  # row 3
    path = tmp_path / "null.parquet"
    pl.DataFrame(rows).write_parquet(path)
    code, _, err = _run(capsys, path)
    assert code == 3 and "[D399]" in err and "row 3: null (or NaN) value in column 'document_id'" in err
