"""``ddpcore.pipeline.extract``: the checks that run before the (unchecked) extraction kernel, the
rule data taken from ``anchors/rules.py``, and the names of the item arrays."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ddpcore.anchors import rules
from ddpcore.anchors.spacy_extract import pos_id, string_hashes
from ddpcore.pipeline.extract import ITEM_DTYPES, RuleTables, TokenColumns, extract_items


def _tokens(words, pos, tags, deps, heads, iob=None, unit_start=None) -> TokenColumns:
    n = len(words)
    starts = np.zeros(n, np.uint8)
    starts[0] = 1
    return TokenColumns(
        lower=string_hashes(words), pos=np.array([pos_id(p) for p in pos], np.int32), tag=string_hashes(tags),
        dep=string_hashes(deps), head=np.array(heads, np.int64),
        iob=np.full(n, 2, np.int8) if iob is None else np.array(iob, np.int8), enttype=np.zeros(n, np.uint64),
        unit_start=starts if unit_start is None else np.array(unit_start, np.uint8),
    )


@pytest.fixture(scope="module")
def man_and_dogs() -> TokenColumns:
    # "man saw dogs and man": nouns heading noun chunks (nsubj, dobj, conj of dobj)
    return _tokens(["man", "saw", "dogs", "and", "man"], ["NOUN", "VERB", "NOUN", "CCONJ", "NOUN"],
                   ["NN", "VBD", "NNS", "CC", "NN"], ["nsubj", "ROOT", "dobj", "cc", "conj"], [1, 1, 1, 2, 2])


def test_items_have_documented_dtypes_and_rule_bits(man_and_dogs):
    items = extract_items(man_and_dogs, RuleTables.compile(dataclasses.replace(rules.PAPER, chain_nouns=1)))
    assert {k: v.dtype for k, v in items.items()} == {k: np.dtype(v) for k, v in ITEM_DTYPES.items()}
    assert items["token"].tolist() == [0, 2, 4]
    # person noun, plural noun, person noun: the compatibility bits of anchors/rules.py
    assert items["compat"].tolist() == [rules.MASC_SG | rules.FEM_SG | rules.NEUT_SG, rules.PL,
                                        rules.MASC_SG | rules.FEM_SG | rules.NEUT_SG]
    # chain_nouns=1: the two "man" share a key, "dogs" (not a person noun) has none
    assert items["key"][0] == items["key"][2] != 0 and items["key"][1] == 0


def test_rule_data_is_read_from_the_tables(man_and_dogs):
    tables = RuleTables.compile(rules.PAPER)
    changed = dataclasses.replace(tables, plural_noun_compat=rules.NEUT_SG | rules.PL, noun_compat=0,
                                  person_noun_compat=rules.MASC_SG)
    assert extract_items(man_and_dogs, changed)["compat"].tolist() == [rules.MASC_SG, rules.NEUT_SG | rules.PL,
                                                                       rules.MASC_SG]
    a = extract_items(man_and_dogs, dataclasses.replace(tables, chain_nouns=2))["key"]
    b = extract_items(man_and_dogs, dataclasses.replace(tables, chain_nouns=2, noun_key_salt=12345))["key"]
    assert a[0] == a[2] and b[0] == b[2] and a[0] != b[0]


@pytest.mark.parametrize("change, error, message", [
    (dict(pos=np.zeros(5, np.int64)), TypeError, "TokenColumns.pos must have dtype int32"),
    (dict(iob=np.zeros(4, np.int8)), ValueError, "same length"),
    (dict(lower=np.zeros((5, 1), np.uint64)), ValueError, "1-d"),
    (dict(tag=np.zeros(10, np.uint64)[::2]), ValueError, "C-contiguous"),
    (dict(head=np.array([1, 1, 1, 2, 5], np.int64)), ValueError, r"in \[0, 5\), got 5 at token 4"),
    (dict(head=np.array([1, 1, -1, 2, 2], np.int64)), ValueError, "got -1 at token 2"),
    (dict(dep=[0, 0, 0, 0, 0]), TypeError, "must be a numpy array"),
])
def test_bad_token_columns_are_refused(man_and_dogs, change, error, message):
    with pytest.raises(error, match=message):
        extract_items(dataclasses.replace(man_and_dogs, **change), RuleTables.compile(rules.PAPER))


@pytest.mark.parametrize("change, error, message", [
    (lambda t: dict(label_compat=t.label_compat[:-1]), ValueError, "label_hashes and .label_compat"),
    (lambda t: dict(title_hashes=t.title_hashes.astype(np.int64)), TypeError, "title_hashes must have dtype uint64"),
    (lambda t: dict(title_bits=t.title_bits[:-1]), ValueError, "title_hashes and .title_bits"),
    (lambda t: dict(label_skip_adj=np.ones(3, np.int64)), ValueError, "one flag per label"),
    (lambda t: dict(person_label=len(t.label_hashes)), ValueError, "person_label"),
    (lambda t: dict(pronoun_group_bits=t.pronoun_group_bits * 3), ValueError, "group bits"),
    (lambda t: dict(chain_nouns=3), ValueError, "chain_nouns"),
    (lambda t: dict(noun_compat=256), ValueError, "noun_compat"),
])
def test_bad_rule_tables_are_refused(man_and_dogs, change, error, message):
    tables = RuleTables.compile(rules.REFINED)
    with pytest.raises(error, match=message):
        extract_items(man_and_dogs, dataclasses.replace(tables, **change(tables)))


def test_items_hold_only_the_documented_names(man_and_dogs):
    """The old name ``"last"`` (of ``"last_token_key"``) is gone: an unknown name is a plain KeyError."""
    items = extract_items(man_and_dogs, RuleTables.compile(rules.PAPER))
    assert sorted(items) == sorted(ITEM_DTYPES)
    for name in ("last", "no such array"):
        with pytest.raises(KeyError):
            items[name]
