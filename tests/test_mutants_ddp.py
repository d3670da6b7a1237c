"""Tests that kill mutants of the DDP reductions, certification, gold distances and curation which the
rest of the suite let through (mutation hunt, helper 58; the mutant table is in the hunt's report).

Every expected value comes from an independent computation written in the test (a slow, obvious loop
over the rows, the definition quoted from the docstring or docs next to it), or from scipy
(Clopper-Pearson via ``scipy.stats.binomtest``), never from the code under test.
"""
from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest


# --------------------------------------------------------------------------- document rows (--documents)


def test_document_shares_count_a_ddp_equal_to_the_threshold() -> None:
    """share_ddp_ge_t is the share of the document's segments with DDP >= t (docs: "DDP >= 1, 5, 15"): a
    segment at exactly 1, 5 or 15 counts (mutant: ``ddp > t``)."""
    from ddpcore.pipeline.documents import document_rows
    from ddpcore.schema import SegmentColumns

    ddp = {"a": [0, 1, 5, 15], "b": [5, 5, 14], "c": [15]}
    rows = [(d, v) for d, vs in ddp.items() for v in vs]
    seg = pl.DataFrame({"document_id": [d for d, _ in rows], "domain": ["x"] * len(rows),
                        "n_sentences": [1] * len(rows), "ddp": [v for _, v in rows]})
    got = document_rows(seg, SegmentColumns())
    for t in (1, 5, 15):
        # slow obvious loop: count the values >= t of each document, divide by its segment count
        want = [sum(1 for v in vs if v >= t) / len(vs) for vs in ddp.values()]
        assert got[f"share_ddp_ge_{t}"].to_list() == pytest.approx(want), t
    # by hand for the record: a: >=1 3/4, >=5 2/4, >=15 1/4; b: 1, 1, 0; c: 1, 1, 1
    assert got["share_ddp_ge_15"].to_list() == pytest.approx([0.25, 0.0, 1.0])


# --------------------------------------------------------------------------- entity-level gender (titles, first names)


def _entity_gender_oracle(gender: list[int], compat: list[int], ent: list[int], extra: int) -> list[int]:
    """stages._apply_entity_gender, by its docstring: every mention of an entity gets the gender any of its
    mentions shows; an entity whose mentions show both genders stays ungendered; a mention of no entity
    (-1) and a mention of an ungendered entity keep their compatibility bits."""
    masc, fem = 1, 2  # rules.MASC_SG, rules.FEM_SG (bit values written out)
    shown: dict[int, set[int]] = {}
    for g, e in zip(gender, ent):
        if e >= 0 and g:
            shown.setdefault(e, set()).add(g)
    out = []
    for c, e in zip(compat, ent):
        seen = shown.get(e, set()) if e >= 0 else set()
        if seen == {masc}:
            out.append(masc | extra)
        elif seen == {fem}:
            out.append(fem | extra)
        else:  # nothing shown, or both genders: unchanged
            out.append(c)
    return out


def test_entity_gender_spreads_one_gender_and_drops_disagreement() -> None:
    from ddpcore.pipeline.stages import _apply_entity_gender

    # entity 0: "Mr. Brown" (MASC) ... "Brown" (no title) -> both MASC
    # entity 1: "Mrs. Lee" ... "Mr. Lee" -> disagree: both keep their compat
    # entity 2: "Taylor" twice, no gender shown -> unchanged
    # item 6: a pronoun (no entity, -1) -> unchanged whatever its gender field
    gender = [1, 0, 2, 1, 0, 0, 2]
    ent = [0, 0, 1, 1, 2, 2, -1]
    person = 1 | 2 | 8  # PERSON compatibility of rule set "paper" (MASC_SG | FEM_SG | PL)
    compat = [person, person, person, person, person, person, 2]
    for extra in (0, 8):
        items = {"gender": np.array(gender, dtype=np.uint8), "compat": np.array(compat, dtype=np.uint8)}
        _apply_entity_gender(items, np.array(ent, dtype=np.int64), 3, extra)
        assert items["compat"].tolist() == _entity_gender_oracle(gender, compat, ent, extra), extra
    # by hand (extra 0): [1, 1, 11, 11, 11, 11, 2]
    assert _entity_gender_oracle(gender, compat, ent, 0) == [1, 1, 11, 11, 11, 11, 2]


# --------------------------------------------------------------------------- the anchors table's reference sentence


@pytest.mark.spacy_model
def test_reference_sentence_of_a_link_to_the_first_item_of_the_batch() -> None:
    """reference_sentence is the sentence the distance is measured to (README): for a name re-mention,
    its entity's first mention, so reference_sentence = sentence - distance_sentences. The first
    "Paris" is the batch's very first item (index 0), which must not read as "no reference" (mutant
    ``np.where(ref > 0, ...)`` gave -1)."""
    import ddpcore

    frame = pl.DataFrame({"document_id": ["d", "d"], "segment_id": [0, 1],
                          "source": ["Paris is large. Paris is old.", "Berlin is far. They said that Paris is nice."]})
    anc = ddpcore.profile_anchors(frame).anchors
    paris = anc.filter((pl.col("kind") == "entity") & (pl.col("text") == "Paris"))
    # by hand: "Paris" in sentences 0, 1 and 3 of the document; chained distances 1 and 3, both back to sentence 0
    assert paris["sentence"].to_list() == [0, 1, 3]
    assert paris["distance_sentences"].to_list()[1:] == [1, 3]
    assert paris["reference_sentence"].to_list()[1:] == [0, 0]
    for r in anc.filter((pl.col("kind") == "entity") & (pl.col("distance_sentences") > 0)).iter_rows(named=True):
        assert r["reference_sentence"] == r["sentence"] - r["distance_sentences"], r
    # entity_id (schema: document-level entity id, -1 for pronouns): the three "Paris" share one id, "Berlin" has
    # another, both >= 0, so no name reads as a pronoun (mutant: ids made local by the document's largest id,
    # which turned "Paris" into -1)
    ents = anc.filter(pl.col("kind") == "entity")
    ids = dict(zip(ents["text"].to_list(), ents["entity_id"].to_list()))
    assert set(paris["entity_id"].to_list()) == {ids["Paris"]}
    assert ids["Paris"] != ids["Berlin"] and min(ids.values()) >= 0
    assert set(anc.filter(pl.col("kind") == "pronoun")["entity_id"].to_list()) <= {-1}


# --------------------------------------------------------------------------- gender/number groups of the rule sets


def test_label_compatibility_of_the_rule_sets_is_the_documented_table() -> None:
    """Which pronoun groups may take up an entity of each label, written out from the rules' docstring
    ("Compatibility: PERSON <-> MASC_SG, FEM_SG, PL; ORG <-> NEUT_SG, PL; NORP <-> PL; every other entity
    label <-> NEUT_SG") and rule set refined's description ("person names never antecedents of
    they/them"). Mutants: NORP also NEUT_SG ("the Americans ... it"); refined PERSON also PL."""
    from ddpcore.anchors.rules import PAPER, REFINED, REFINED_NAMES

    groups = {"MASC_SG": 1, "FEM_SG": 2, "NEUT_SG": 4, "PL": 8}
    others = ("FAC", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE")
    paper = {"PERSON": {"MASC_SG", "FEM_SG", "PL"}, "ORG": {"NEUT_SG", "PL"}, "NORP": {"PL"},
             **{x: {"NEUT_SG"} for x in others}}
    refined = {**paper, "PERSON": {"MASC_SG", "FEM_SG"}}
    for rules, table in ((PAPER, paper), (REFINED, refined), (REFINED_NAMES, refined)):
        got = dict(rules.label_compat)
        assert set(got) == set(table), rules.name
        for label, names in table.items():
            assert got[label] == sum(groups[g] for g in names), (rules.name, label)


def _census(path: str) -> dict[str, float]:
    out: dict[str, float] = {}
    with open(path, encoding="ascii") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 2:
                out[parts[0].lower()] = float(parts[1])
    return out


def test_first_name_gender_at_exactly_the_ratio() -> None:
    """A first name on both census lists takes the gender whose frequency is *at least* min_ratio times the
    other's (rules.first_name_genders). With min_ratio chosen as a name's exact frequency ratio, that name
    is gendered (mutant ``m > min_ratio * f``: ungendered). Expected table: an obvious loop over the
    census files of the ``names`` package, read here."""
    names = pytest.importorskip("names")
    import os

    from ddpcore.anchors.rules import first_name_genders

    base = os.path.dirname(names.__file__)
    male, female = _census(os.path.join(base, "dist.male.first")), _census(os.path.join(base, "dist.female.first"))
    # a name more frequent as male, one more frequent as female, each with a ratio that multiplies back exactly
    both = [n for n in sorted(male) if n in female and male[n] > 0 and female[n] > 0]
    he = next(n for n in both if male[n] > female[n] and (male[n] / female[n]) * female[n] == male[n])
    she = next(n for n in both if female[n] > male[n] and (female[n] / male[n]) * male[n] == female[n])
    for name, ratio, want in ((he, male[he] / female[he], 1), (she, female[she] / male[she], 2)):
        table = first_name_genders(ratio)
        assert table.get(name) == want, (name, ratio)
        # the whole table against the loop
        oracle = {}
        for n in set(male) | set(female):
            m, f = male.get(n, 0.0), female.get(n, 0.0)
            if m > 0 and (f == 0 or m >= ratio * f):
                oracle[n] = 1
            elif f > 0 and (m == 0 or f >= ratio * m):
                oracle[n] = 2
        assert table == oracle


# --------------------------------------------------------------------------- curation: ddp sample --unit segment


def test_sample_by_segment_counts_only_the_added_context_rows() -> None:
    """sample_mask's fourth value (the signature's ``context_rows``) is the rows kept as context only, not the
    sampled ones too (mutant: every kept row). Expected: the documented draw (curate/sample.py docstring: a key
    per unit from Generator(PCG64(seed)).random(n_units), per bin the per_bin smallest keys) and the context
    rule of ``ddp select --with-context`` (the earlier segments of the document back to the one holding
    sentence first_sentence - ddp), both as plain loops."""
    from ddpcore.curate.sample import sample_mask
    from ddpcore.curate.select import Matched

    # one document of 6 one-sentence segments, one of 3
    doc = [0, 0, 0, 0, 0, 0, 1, 1, 1]
    ddp = [0, 1, 0, 4, 2, 5, 0, 2, 1]
    first = [0, 1, 2, 3, 4, 5, 0, 1, 2]
    m = Matched(doc=np.array(doc), ddp=np.array(ddp), first_sentence=np.array(first),
                n_sentences=np.ones(9, dtype=np.int64), domain=np.array([None] * 9, dtype=object),
                ids=pl.DataFrame({"document_id": [str(d) for d in doc], "segment_id": list(range(9))}))
    edges, per_bin = [0.0, 1.0, 3.0, math.inf], 1
    for seed in (0, 1, 7):
        keep, report, outside, added = sample_mask(m, edges, per_bin, "segment", seed)
        keys = np.random.Generator(np.random.PCG64(seed)).random(9).tolist()
        chosen = set()
        for lo, hi in zip(edges[:-1], edges[1:]):
            units = sorted((keys[i], i) for i in range(9) if lo <= ddp[i] < hi)
            chosen |= {i for _, i in units[:per_bin]}
        want = set(chosen)
        for i in chosen:
            target = max(first[i] - ddp[i], 0)
            want |= {j for j in range(9) if doc[j] == doc[i] and target <= first[j] <= first[i]}
        assert set(np.flatnonzero(keep).tolist()) == want, seed
        assert added == len(want) - len(chosen), seed
        assert outside == 0
        assert [r["achieved"] for r in report] == [1, 1, 1]


# --------------------------------------------------------------------------- gold distances


def _corpus(mentions: list[tuple], n_sentences: int, split: tuple = ()):  # type: ignore[no-untyped-def]
    """One document "d" of ``n_sentences``; mentions (sentence, chain, type, head, token_start, token_end)."""
    from ddpcore.io.gold import GoldCorpus

    return GoldCorpus(
        sentences=pl.DataFrame({"document_id": ["d"] * n_sentences, "sentence": list(range(n_sentences)),
                                "genre": ["g"] * n_sentences},
                               schema={"document_id": pl.String, "sentence": pl.Int32, "genre": pl.String}),
        mentions=pl.DataFrame(
            {"document_id": ["d"] * len(mentions), "sentence": [m[0] for m in mentions],
             "chain_id": [m[1] for m in mentions], "mention_type": [m[2] for m in mentions],
             "entity_type": [None] * len(mentions), "head_text": [m[3] for m in mentions],
             "token_start": [m[4] for m in mentions], "token_end": [m[5] for m in mentions]},
            schema={"document_id": pl.String, "sentence": pl.Int32, "chain_id": pl.String, "mention_type": pl.String,
                    "entity_type": pl.String, "head_text": pl.String, "token_start": pl.Int32, "token_end": pl.Int32}),
        split_antecedents=split,
    )


def test_a_sentence_with_first_mentions_only_has_no_chain_and_no_reference() -> None:
    """compute_gold_distances: gold_chain_id is null and gold_reference_sentence -1 when the distance is 0
    (docstring). Sentence 0 holds two first mentions, sentence 2 a first mention and a re-mention in the same
    sentence (distance 0 too); sentence 1 re-mentions chain a (distance 1, chain a, reference 0). Mutant
    ``gold_distance >= 0`` kept the zero distances as a chain and a reference."""
    from ddpcore.gold.validate import compute_gold_distances

    ments = [(0, "a", "PROP", "John", 0, 1), (0, "b", "PROP", "Mary", 2, 3), (1, "a", "PRON", "he", 0, 1),
             (2, "c", "PROP", "Paris", 0, 1), (2, "c", "PRON", "it", 3, 4)]
    for distance in ("chained", "nearest"):
        g = compute_gold_distances(_corpus(ments, 3), distance=distance)  # type: ignore[arg-type]
        # by hand: s0 0 / null / -1; s1 1 / a / 0; s2 0 / null / -1 (chain c starts in s2)
        assert g["gold_distance"].to_list() == [0, 1, 0]
        assert g["gold_chain_id"].to_list() == [None, "a", None]
        assert g["gold_reference_sentence"].to_list() == [-1, 0, -1]


def test_a_zero_mention_is_an_antecedent_only_in_the_ddp_scope() -> None:
    """docs/validation.md, gold scope ddp: a zero mention (an empty node, token_start == token_end) is no anchor
    DDP could find, so it is an antecedent only; the full scope counts it. Chain a: "John" (s0), a zero "he"
    (s3), "him" (s4). By hand, chained: full s3 = 3, s4 = 4; ddp s3 = 0, s4 = 4. Nearest: full s3 3, s4 1;
    ddp s3 0, s4 1 (the zero mention is still the nearest earlier mention). Mutant: ``token_end >= token_start``
    counted the zero mention in the ddp scope."""
    from ddpcore.gold.validate import compute_gold_distances

    ments = [(0, "a", "PROP", "John", 0, 1), (3, "a", "PRON", "he", 0, 0), (4, "a", "PRON", "him", 2, 3)]
    want = {("chained", "full"): [0, 0, 0, 3, 4], ("chained", "ddp"): [0, 0, 0, 0, 4],
            ("nearest", "full"): [0, 0, 0, 3, 1], ("nearest", "ddp"): [0, 0, 0, 0, 1]}
    for (distance, scope), dist in want.items():
        g = compute_gold_distances(_corpus(ments, 5), distance=distance, gold_scope=scope)  # type: ignore[arg-type]
        assert g["gold_distance"].to_list() == dist, (distance, scope)


def test_nested_mentions_of_one_chain_close_innermost_first(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """CoNLL-2012 brackets nest: a closing ``0)`` closes the latest open ``(0``. "[John , [the teacher]0 ,]0"
    (an apposition inside its chain's mention) has, by hand, the mentions tokens 2-4 "the teacher" and 0-5
    "John , the teacher ,". Mutant (``stack.pop(0)``, oldest first) read 0-4 and 2-5."""
    from ddpcore.io.gold import read_gold

    words = [("John", "NNP", "(0"), (",", ",", "-"), ("the", "DT", "(0"), ("teacher", "NN", "0)"), (",", ",", "0)"),
             ("smiled", "VBD", "-"), (".", ".", "-")]
    doc = "nw/test/00/test_0001"
    lines = ["#begin document (nw/test/00/test_0001); part 000"]
    lines += ["\t".join([doc, "0", str(i), w, pos, "*", "-", "-", "-", "-", "*", coref])
              for i, (w, pos, coref) in enumerate(words)]
    lines += ["", "#end document", ""]
    path = tmp_path / "nested.v4_gold_conll"
    path.write_text("\n".join(lines), encoding="utf-8")
    m = read_gold(path).mentions
    got = sorted(zip(m["token_start"].to_list(), m["token_end"].to_list(), m["text"].to_list()))
    assert got == [(0, 5, "John , the teacher ,"), (2, 4, "the teacher")]


def _tiny_over_estimate(anchor: str, span: tuple[int, int], sentence: int = 2,
                        ddp: tuple[int, ...] = (0, 1, 2, 3, 4, 5)) -> dict:  # type: ignore[type-arg]
    """compare_with_gold on tests/data/gold/conll2012/tiny.v4_gold_conll (chained gold of part 0:
    [0, 1, 0, 3, 4, 5]) with the DDP ``ddp`` of part 0 (by default one over-estimate: 2 at sentence 2, "The
    weather was bad .", tokens The/0 weather/1 was/2 bad/3 ./4; gold mention "The weather" = tokens 0-2 of
    chain 2, first mentioned in s2), reached by one anchor ``anchor`` at characters ``span`` of ``sentence``;
    returns the over-estimate row."""
    from pathlib import Path

    from ddpcore.gold.validate import compare_with_gold, compute_gold_distances
    from ddpcore.io.gold import read_gold

    doc = "nw/test/00/test_0000"
    corpus = read_gold(Path(__file__).resolve().parent / "data" / "gold" / "conll2012" / "tiny.v4_gold_conll")
    gold = compute_gold_distances(corpus, distance="chained")
    rows = [(doc, i, v) for i, v in enumerate(ddp)] + [(doc + "#1", i, v) for i, v in enumerate([0, 1])]
    seg = pl.DataFrame(rows, schema=["document_id", "segment_id", "ddp"], orient="row")
    anchors = pl.DataFrame({
        "document_id": [doc], "segment_id": [sentence], "anchor_index": [3], "kind": ["entity"], "label": ["PERSON"],
        "text": [anchor], "char_start": [span[0]], "char_end": [span[1]], "antecedent_kind": ["entity"],
        "antecedent_text": [anchor], "antecedent_sentence": [0], "distance_sentences": [ddp[sentence]]})
    res = compare_with_gold(gold, seg, anchors, corpus=corpus)
    assert res.over_estimates.height == 1
    return res.over_estimates.row(0, named=True)


def test_an_anchor_on_the_token_after_a_gold_mention_is_not_in_gold() -> None:
    """_diagnose: a gold mention covers tokens token_start <= t < token_end (end exclusive). "was" (chars
    12-15, token 2) follows the gold mention "The weather" (tokens 0-2): by hand no gold mention covers it,
    so the over-estimate is not_in_gold with no gold chain (mutant ``t <= token_end``: covered by chain 2, and
    diagnosed linked_too_far)."""
    over = _tiny_over_estimate("was", (12, 15))
    assert (over["anchor_gold_chain"], over["diagnosis"]) == (None, "not_in_gold")
    # and "weather" (token 1) inside the mention: chain 2, measured to s0 before the chain's first mention s2
    over = _tiny_over_estimate("weather", (4, 11))
    assert (over["anchor_gold_chain"], over["diagnosis"]) == ("2", "linked_too_far")


def test_an_anchor_in_nested_gold_mentions_takes_the_innermost_chain() -> None:
    """_diagnose: the gold mention covering the anchor's first token is the shortest one (then the leftmost).
    Sentence 5 of tiny is "[[The man 's]0 wife]1 smiled ."; "man" (chars 4-7, token 1) lies in "The man 's"
    (tokens 0-3, chain 0) and in "The man 's wife" (tokens 0-4, chain 1): by hand, chain 0 (mutant: the
    longest, chain 1). DDP 6 at s5 over gold 5, measured to s-1, before either chain's first mention (s0)."""
    over = _tiny_over_estimate("man", (4, 7), sentence=5, ddp=(0, 1, 0, 3, 4, 6))
    assert over["sentence"] == 5 and over["text"] == "The man 's wife smiled ."
    assert (over["anchor_gold_chain"], over["diagnosis"]) == ("0", "linked_too_far")


# --------------------------------------------------------------------------- certification: candidate features


def test_candidate_columns_are_the_documented_features() -> None:
    """certify.candidate_features: each candidate row = its anchor's features, then the one-hot chain position,
    log(1 + candidate distance), log(1 + sentences skipped = the anchor's full distance - the candidate's) and
    "antecedent_pronoun" (the anchor is a pronoun and the candidate is its antecedent, rank 3). Expected columns
    by a loop over hand-made candidates (mutants: skipped + 1; the pronoun flag on rank 4 "previous")."""
    from ddpcore.anchors import certify as C

    k = len(C.ANCHOR_FEATURES)
    feats = np.zeros((3, k))
    feats[:, C.ANCHOR_FEATURES.index("log_distance")] = [1.5, 2.5, 3.5]  # any anchor values, carried through
    feats[1, C.ANCHOR_FEATURES.index("pronoun")] = 1.0  # anchor 1 is a pronoun, anchors 0 and 2 names
    full = np.array([6, 4, 9])
    row, rank, dist = [0, 0, 0, 1, 1, 1, 2, 2], [0, 3, 4, 0, 3, 4, 0, 3], [6, 3, 1, 4, 2, 1, 9, 9 - 2]
    cand = C.Candidates(row=np.array(row), rank=np.array(rank), distance=np.array(dist))
    got = C.candidate_features(feats, cand, full)
    assert got.shape == (8, len(C.FEATURES))
    for i, (r, rk, d) in enumerate(zip(row, rank, dist)):
        want = list(feats[r])
        want += [1.0 if rk == j else 0.0 for j in range(len(C.CANDIDATES))]
        want += [math.log(1 + d), math.log(1 + (full[r] - d)), 1.0 if (r == 1 and rk == 3) else 0.0]
        assert got[i].tolist() == pytest.approx(want), i


# --------------------------------------------------------------------------- gold readers: mention type and head


def _conll_file(tmp_path, words: list[tuple[str, str, str]]):  # type: ignore[no-untyped-def]
    doc = "nw/test/00/test_0002"
    lines = [f"#begin document ({doc}); part 000"]
    lines += ["\t".join([doc, "0", str(i), w, pos, "*", "-", "-", "-", "-", "*", coref])
              for i, (w, pos, coref) in enumerate(words)]
    lines += ["", "#end document", ""]
    path = tmp_path / "g.v4_gold_conll"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def test_a_plural_proper_noun_mention_is_prop(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """io.gold._type_from_tags: PTB proper nouns NNP and NNPS make a PROP mention. "[The Americans]0 left ."
    with Americans/NNPS: head "Americans" (the last token: no stop tag), so PROP by hand (mutant: NOM)."""
    from ddpcore.io.gold import read_gold

    path = _conll_file(tmp_path, [("The", "DT", "(0"), ("Americans", "NNPS", "0)"), ("left", "VBD", "-"),
                                  (".", ".", "-")])
    m = read_gold(path).mentions.row(0, named=True)
    assert (m["head_text"], m["mention_type"]) == ("Americans", "PROP")


def test_a_span_without_pos_starting_with_a_stop_word_has_its_head_inside(tmp_path) -> None:  # type: ignore[no-untyped-def]  # noqa: E501
    """io.gold._head_from_words (no POS, LitBank): the head is the last token before the first comma,
    semicolon, colon or post-modifier word *after the first token*; "[that old man]0" has no such word after
    "that", so by hand the head is "man" (token 3 of "I saw that old man ."; mutant ``i >= 0``: the token
    before the span, "saw")."""
    from ddpcore.io.gold import read_gold

    path = _conll_file(tmp_path, [("I", "-", "-"), ("saw", "-", "-"), ("that", "-", "(0"), ("old", "-", "-"),
                                  ("man", "-", "0)"), (".", "-", "-")])
    m = read_gold(path).mentions.row(0, named=True)
    assert (m["token_start"], m["token_end"], m["head_token"], m["head_text"]) == (2, 5, 4, "man")
    assert m["mention_type"] == "NOM"
