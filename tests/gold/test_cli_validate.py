"""``ddp validate`` end to end on the hand-written CoNLL-2012 file and a vendored GUM excerpt (loads spaCy)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest

from ddpcore.cli.main import main

GOLD = Path(__file__).resolve().parents[1] / "data" / "gold"
TINY = GOLD / "conll2012" / "tiny.v4_gold_conll"
KEYS = {"n_segments", "pearson", "spearman", "share_under", "share_exact", "share_over", "mean_signed_error"}

pytestmark = pytest.mark.spacy_model


def test_json_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(TINY), "-q", "--rules", "paper"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d["overall"]) == KEYS and set(d["by_genre"]) == {"nw"}
    assert d["overall"]["n_segments"] == 8
    # by hand (README "DDP definition", rules paper, chained) on the en_core_web_sm 3.8.0 parse of each sentence:
    # John Smith/Mary PERSON, Smith (s4) ORG, Spain GPE, no other entity; nouns heading chunks: weather, wife.
    #   doc 1: s0 0; s1 He/her -> Mary (s0) 1; s2 0; s3 Mary 3-0 = 3; s4 It -> weather (s2) 2, Smith first ORG;
    #          s5 0 ("man" is a possessive, not a chunk head; no anchor)   -> DDP   [0, 1, 0, 3, 2, 0]
    #   doc 2: s0 0; s1 Spain 1-0 = 1, him no antecedent 1                 -> DDP   [0, 1]
    #   gold (test_gold_distances.HAND chained, full; doc 2: Spain 1)     -> [0, 1, 0, 3, 4, 5] + [0, 1]
    # under: s4, s5 of doc 1 = 2/8; exact 6/8; over 0
    o = d["overall"]
    assert (o["share_under"], o["share_exact"], o["share_over"]) == pytest.approx((2 / 8, 6 / 8, 0.0), abs=1e-12)
    sig = d["signature"]
    assert sig["gold"]["formats"] == ["conll2012"] and sig["gold"]["distance"] == "chained"
    assert sig["profile"]["sentence_unit"] == "segment" and sig["profile"]["rules"] == "paper"
    assert d["timing"]["words"] == 40  # tokens of the 8 hand-written sentences: (5+4+5+3+5+6) + (8+4)
    # the columns object repeats the ddp figures with counts and intervals; the tails from --tail (default 5,15)
    c = d["columns"]["ddp"]["overall"]
    assert (c["under"]["count"], c["exact"]["count"], c["over"]["count"], c["n_segments"]) == (2, 6, 0, 8)
    assert d["tails"] == [5, 15] and [t["k"] for t in c["tails"]] == [5, 15]
    # DDP [0, 1, 0, 3, 2, 0, 0, 1] never reaches 5; gold [0, 1, 0, 3, 4, 5, 0, 1] does once (s5 of doc 1)
    assert c["tails"][0]["precision"] == {"count": 0, "n": 0, "share": None, "ci_low": None, "ci_high": None}
    assert (c["tails"][0]["recall"]["count"], c["tails"][0]["recall"]["n"]) == (0, 1)
    assert set(d["columns"]) <= {"ddp", "ddp_certified"} and sig["gold"]["ddp_columns"] == list(d["columns"])


def test_tail_option_and_text_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(TINY), "-q", "--rules", "paper", "--tail", "3,1,3", "-f", "text"]) == 0
    out = capsys.readouterr().out
    assert "column ddp (" in out and "precision@1" in out and "recall@3" in out and "precision@5" not in out
    # gold >= 3 in s3, s4, s5 of doc 1; DDP >= 3 only in s3 (DDP [0, 1, 0, 3, 2, 0] + [0, 1]) -> recall@3 = 1 of 3
    # overall: the one genre nw is also the overall row; 1/3 with scipy's exact interval [0.84, 90.57] %
    assert " 33.3 [ 0.8,  90.6] /3" in out


def test_segments_align_with_gold_sentences(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every gold sentence is one segment; DDP sentence indices are gold indices (no drift)."""
    from ddpcore.gold.validate import validate

    res = validate([TINY], distance="nearest")
    seg = res.segments.filter(pl.col("document_id") == "nw/test/00/test_0000")
    assert seg["sentence"].to_list() == list(range(6))
    assert seg["gold_distance"].to_list() == [0, 1, 0, 2, 3, 2]  # hand-worked in test_gold_distances.py
    # by hand (README "DDP definition", default rules refined, nearest) on the en_core_web_sm 3.8.0 parse of each
    # sentence (John Smith/Mary PERSON, Smith in s4 ORG; head nouns weather, wife):
    #   s1 He/her -> Mary, 1 - 0 = 1; s3 "Mary left ." re-mentions Mary: gold measures to "her" (s1), DDP's
    #   nearest mode to the previous *entity* mention, s0: 3 - 0 = 3; s4 It -> weather (s2) 4 - 2 = 2 and Smith
    #   is a first ORG mention; s5 no anchor
    assert seg["ddp"].to_list() == [0, 1, 0, 3, 2, 0]


def test_text_report_plot_and_over_estimates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    plot, over = tmp_path / "scatter.png", tmp_path / "over.csv"
    code = main(["validate", str(GOLD / "gum_excerpt.tar.xz"), "-f", "text", "-q", "--plot", str(plot),
                 "--over-estimates", str(over)])
    assert code == 0
    out = capsys.readouterr().out
    assert "genre" in out and "interview" in out and "news" in out and "overall" in out and "words/s" in out
    assert plot.stat().st_size > 5000 and plot.read_bytes()[:4] == b"\x89PNG"
    table = pl.read_csv(over)
    assert {"document_id", "sentence", "ddp", "gold_distance", "anchor_text", "anchor_label"} <= set(table.columns)
    assert (table["ddp"] > table["gold_distance"]).all()


def test_plot_without_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    assert main(["validate", str(TINY), "--plot", str(tmp_path / "p.png")]) == 2
    assert "pip install '.[plot]'" in capsys.readouterr().err
    assert not (tmp_path / "p.png").exists()


def test_bad_gold_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "missing.conllu")]) == 3
    assert "[D401]" in capsys.readouterr().err
    odd = tmp_path / "x.gold"
    odd.write_text("x\n")
    assert main(["validate", str(odd)]) == 2
    assert "--gold-format" in capsys.readouterr().err
