"""Readers on the full gold corpora in ../shared/data, checked against the counts in their SOURCE.md
(computed there independently by the data curator)."""
from __future__ import annotations

import polars as pl
import pytest

from ddpcore.io.gold import read_gold

from .conftest import require_shared

pytestmark = pytest.mark.shared_data


def _successive_gaps(mentions: pl.DataFrame) -> pl.Series:
    """Sentence gaps between successive mentions of a chain that lie in different sentences."""
    m = mentions.sort("document_id", "chain_id", "sentence", "token_start")
    gap = m.select((pl.col("sentence") - pl.col("sentence").shift(1).over("document_id", "chain_id")).alias("gap"))["gap"]
    return gap.filter(gap > 0)


def test_litbank_both_forms() -> None:
    tsv = read_gold(require_shared("litbank-coref", "litbank_coref_tsv.tar.xz"))
    d = tsv.to_dict()
    # litbank-coref/SOURCE.md: 100 documents, 8,562 sentences, 210,532 tokens,
    # 29,103 mentions (PRON 15,816; NOM 9,737; PROP 3,550)
    assert (d["documents"], d["sentences"], d["mentions"]) == (100, 8562, 29103)
    (g,) = d["by_genre"]
    assert (g["genre"], g["tokens"], g["mentions_PRON"], g["mentions_NOM"], g["mentions_PROP"]) == (
        "fiction", 210532, 15816, 9737, 3550)
    # SOURCE.md: successive same-chain mentions in different sentences: n = 11,383, mean 4.19, max 133
    gaps = _successive_gaps(tsv.mentions)
    assert (gaps.len(), gaps.max()) == (11383, 133) and round(gaps.mean(), 2) == 4.19
    conll = read_gold(require_shared("litbank-coref", "litbank_coref_conll.tar.xz"))
    assert conll.sentences["tokens"].to_list() == tsv.sentences["tokens"].to_list()
    assert conll.mentions.height == tsv.mentions.height


def test_gum_and_ontogum() -> None:
    gum = read_gold(require_shared("gum-coref", "gum_dep_conllu_with_coref.tar.xz"))
    onto = read_gold(require_shared("gum-coref", "ontogum_conllu.tar.xz"))
    # gum-coref/SOURCE.md: 263 docs, 14,597 sentences, 251,725 tokens, 71,153 GUM / 32,629 OntoGUM mentions
    assert (gum.n_documents, gum.sentences.height, int(gum.sentences["n_tokens"].sum())) == (263, 14597, 251725)
    assert gum.mentions.height == 71153 and not gum.warnings
    # OntoGUM GENTLE_poetry_road has one mention whose brackets do not match ("(2" ... "3)"): dropped, 2 warnings
    assert onto.mentions.height == 32629 - 1 and len(onto.warnings) == 2
    assert all("GENTLE_poetry_road" in w for w in onto.warnings)
    assert onto.sentences["text"].to_list() == gum.sentences["text"].to_list()
    by = {r["genre"]: r for r in gum.to_dict()["by_genre"]}
    onto_by = {r["genre"]: r for r in onto.to_dict()["by_genre"]}
    # SOURCE.md table: news 24 docs / 765 sentences / 17,182 tokens / 5,018 GUM / 2,181 OntoGUM mentions;
    # fiction 19 / 1,070 / 17,501 / 4,975 / 2,853
    assert [by["news"][k] for k in ("documents", "sentences", "tokens", "mentions")] == [24, 765, 17182, 5018]
    assert [by["fiction"][k] for k in ("documents", "sentences", "tokens", "mentions")] == [19, 1070, 17501, 4975]
    assert (onto_by["news"]["mentions"], onto_by["fiction"]["mentions"]) == (2181, 2853)
    assert len(by) == 23  # `grep meta::genre | sort -u`: 24 GUM+GENTLE genres minus reddit (excluded, SOURCE.md)
    # SOURCE.md: successive same-entity mentions in different sentences, GUM layer: news max 56, fiction max 63,
    # overall max 182
    genre_of = gum.sentences.select("document_id", "genre").unique()
    m = gum.mentions.join(genre_of, on="document_id")
    assert _successive_gaps(m.filter(pl.col("genre") == "news")).max() == 56
    assert _successive_gaps(m.filter(pl.col("genre") == "fiction")).max() == 63
    assert _successive_gaps(gum.mentions).max() == 182
