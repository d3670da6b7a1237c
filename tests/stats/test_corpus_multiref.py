"""Multi-reference corpus metrics (``ddp stats compare --corpus-metric ... --reference-col A --reference-col B``).

sacrebleu scores a system against several references at once (BLEU clips each n-gram count by its largest
count in any reference and takes the closest reference length; chrF keeps the best-scoring reference per
segment; TER the fewest edits over the average reference length). Before, ddpcore took one reference column
only, and with ``--reader mtme`` always the first REF. Every expected score below is sacrebleu's own
``corpus_score(hyps, [ref1, ref2])`` on the same texts (sacrebleu 2.x, default settings).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from sacrebleu.metrics import BLEU, CHRF, TER

from ddpcore.cli.main import main
from ddpcore.errors import DDPUsageError
from ddpcore.stats.corpus import CorpusColumns, CorpusTest, compare_corpus_table, corpus_score, sufficient_stats

METRICS = {"bleu": BLEU, "chrf": CHRF, "ter": TER}
REF1 = ["the cat sat on the mat today", "a quick brown fox jumps over it", "we went to the market yesterday",
        "she reads a long book at night", "the weather is cold in winter", "he bought two new shoes there"]
REF2 = ["today the cat was sitting on the mat", "the fast brown fox leaps over it", "yesterday we walked to the market",
        "at night she reads a long novel", "in winter the weather is cold", "he purchased two new shoes there"]
HYPS = {"base": ["the cat sat on a mat", "the brown fox jumps over it", "we went to market yesterday",
                 "she reads a book at night", "it is cold in winter", "he bought new shoes there"],
        "A": ["today the cat sat on the mat", "a fast brown fox leaps over it", "yesterday we went to the market",
              "she reads a long novel at night", "in winter the weather is cold", "he purchased two shoes there"]}


def _rows() -> list[dict]:
    return [{"document_id": f"d{k // 3}", "segment_id": k, "system": s, "hyp": h, "r1": REF1[k], "r2": REF2[k]}
            for s, hs in HYPS.items() for k, h in enumerate(hs)]


@pytest.mark.parametrize("metric", ["bleu", "chrf", "ter"])
def test_summed_statistics_give_sacrebleus_multi_reference_score(metric: str) -> None:
    for hyps in HYPS.values():
        st = sufficient_stats(hyps, [REF1, REF2], metric)  # type: ignore[arg-type]
        want = METRICS[metric]().corpus_score(hyps, [REF1, REF2]).score  # sacrebleu, both references
        assert corpus_score(st.sum(axis=0), metric)[()] == pytest.approx(want, abs=1e-9)
        # one stream given as a list of strings is still the single-reference layout
        one = METRICS[metric]().corpus_score(hyps, [REF1]).score
        assert corpus_score(sufficient_stats(hyps, REF1, metric).sum(axis=0), metric)[()] == pytest.approx(one, abs=1e-9)
    # the second reference changes the score (else this test could not tell one reference from two)
    assert BLEU().corpus_score(HYPS["A"], [REF1, REF2]).score != BLEU().corpus_score(HYPS["A"], [REF1]).score


def test_compare_corpus_table_with_two_reference_columns() -> None:
    cols = CorpusColumns(hypothesis="hyp", reference=("r1", "r2"))
    res = compare_corpus_table(pl.DataFrame(_rows()), "base", ["bleu", "chrf", "ter"], columns=cols,
                               how=CorpusTest(n_boot=50, n_ar=50))
    for m in ("bleu", "chrf", "ter"):
        got = dict(zip(res.comparisons[m].systems, np.asarray(res.comparisons[m].score, dtype=float)))
        want = {s: METRICS[m]().corpus_score(h, [REF1, REF2]).score for s, h in HYPS.items()}
        assert got == pytest.approx(want, abs=1e-9)
    assert res.signature["n_references"] == 2 and res.signature["columns"]["reference"] == "r1,r2"
    assert "|n_references:2|" in res.signature_line


def test_cli_two_reference_columns_and_bad_spellings(tmp_path: Path, capsys) -> None:
    path = tmp_path / "t.csv"
    pl.DataFrame(_rows()).write_csv(path)
    base = ["stats", "compare", str(path), "--baseline", "base", "--corpus-metric", "bleu", "--n-boot", "40",
            "--n-ar", "40", "--hypothesis-col", "hyp"]
    assert main([*base, "--reference-col", "r1", "--reference-col", "r2"]) == 0
    js = json.loads(capsys.readouterr().out)
    got = {r["system"]: r["score"] for r in js["results"]["bleu"]["systems"]}
    assert got == {s: BLEU().corpus_score(h, [REF1, REF2]).score for s, h in HYPS.items()}  # sacrebleu, bit for bit
    assert main([*base, "--reference-col", "r1", "--reference-col", "r1"]) == 2
    assert "[D320]" in capsys.readouterr().err
    assert main([*base, "--reference-col", "r1", "--reference-col", "hyp"]) == 2
    assert "[D320]" in capsys.readouterr().err
    with pytest.raises(DDPUsageError):
        compare_corpus_table(pl.DataFrame(_rows()), "base", ["bleu"], columns=CorpusColumns(hypothesis="hyp", reference=()))


def _mtme(root: Path) -> None:
    for d in ("sources", "documents", "system-outputs/en-de", "references"):
        (root / d).mkdir(parents=True)
    (root / "sources/en-de.txt").write_text("".join(f"s{i}\n" for i in range(6)))
    (root / "documents/en-de.docs").write_text("".join(f"news doc{i // 3}\n" for i in range(6)))
    (root / "references/en-de.refA.txt").write_text("\n".join(REF1) + "\n")
    (root / "references/en-de.refB.txt").write_text("\n".join(REF2) + "\n")
    for s, hs in HYPS.items():
        (root / f"system-outputs/en-de/{s}.txt").write_text("\n".join(hs) + "\n")


def test_mtme_references_by_name(tmp_path: Path, capsys) -> None:
    root = tmp_path / "mt"
    _mtme(root)
    base = ["stats", "compare", str(root), "--reader", "mtme", "--baseline", "base", "--corpus-metric", "bleu,chrf",
            "--n-boot", "40", "--n-ar", "40"]
    assert main([*base, "--reference-col", "refA", "--reference-col", "refB"]) == 0
    out = capsys.readouterr()
    js = json.loads(out.out)
    for m in ("bleu", "chrf"):
        got = {r["system"]: r["score"] for r in js["results"][m]["systems"]}
        assert got == pytest.approx({s: METRICS[m]().corpus_score(h, [REF1, REF2]).score for s, h in HYPS.items()},
                                    abs=1e-9)
    assert js["signature"]["reference_file"] == "references/en-de.refA.txt, references/en-de.refB.txt"
    assert "2 references" not in out.err  # both used: nothing left out to say
    # one REF by name: that reference alone (refB), said that refA is not used
    assert main([*base, "--reference-col", "refB"]) == 0
    out = capsys.readouterr()
    js = json.loads(out.out)
    got = {r["system"]: r["score"] for r in js["results"]["bleu"]["systems"]}
    assert got == {s: BLEU().corpus_score(h, [REF2]).score for s, h in HYPS.items()}
    assert js["signature"]["reference_file"] == "references/en-de.refB.txt" and "2 references" in out.err
    assert main([*base, "--reference-col", "refC"]) == 3
    assert "[D827]" in capsys.readouterr().err
