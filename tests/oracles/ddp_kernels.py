"""Slow, obviously-correct reference implementations of the DDP kernels (test oracles).

They follow the written rules item by item with Python lists and dicts; the Cython
kernels in ``ddpcore._native.ddp_kernels`` must agree with them exactly.
"""
from __future__ import annotations

ENTITY, PRONOUN, NOUN = 0, 1, 2


def distances_oracle(docs, nearest=False):
    """``docs``: list of documents, each a list of items (dicts with kind, sentence,
    entity (entity id, noun-chain id for chained head nouns, or -1), compat, segment). Returns per-item (distance, antecedent, reference) lists
    (indices are positions within the document) and per-document dicts of segment and
    sentence DDP."""
    out = []
    for items in docs:
        result = []
        mentions = {}  # entity id -> list of item positions (in order)
        seg_ddp, sent_ddp = {}, {}
        for i, it in enumerate(items):
            dist = ante = ref = -1
            if it["kind"] == ENTITY:
                previous = mentions.get(it["entity"], [])
                if previous:
                    ref = previous[-1] if nearest else previous[0]
                    ante = previous[-1]
                    dist = it["sentence"] - items[ref]["sentence"]
                mentions.setdefault(it["entity"], []).append(i)
            elif it["kind"] == NOUN:
                if it["entity"] >= 0:  # head noun in a noun chain: no distance of its own
                    mentions.setdefault(it["entity"], []).append(i)
            elif it["kind"] == PRONOUN:
                # most recent earlier entity mention or head noun compatible with the group
                cands = [j for j in range(i) if items[j]["kind"] != PRONOUN and items[j]["compat"] & it["compat"]]
                if not cands:
                    dist = 1
                else:
                    ante = cands[-1]
                    c = items[ante]
                    if c["entity"] >= 0 and not nearest:
                        ref = mentions[c["entity"]][0]  # entity chain or noun chain
                    else:
                        ref = ante
                    dist = it["sentence"] - items[ref]["sentence"]
            result.append((dist, ante, ref))
            if it["kind"] != NOUN and dist >= 0:
                seg_ddp[it["segment"]] = max(seg_ddp.get(it["segment"], 0), dist)
                sent_ddp[it["gsentence"]] = max(sent_ddp.get(it["gsentence"], 0), dist)
        out.append((result, seg_ddp, sent_ddp))
    return out


def entity_ids_oracle(docs, person_label, merge=True):
    """``docs``: lists of entity items (dicts kind, label, tokens (tuple of token ids)).
    Returns, per document, a list of doc-local entity numbers (order of first appearance)
    for entity items and -1 for the rest; keys are the token tuples."""
    out = []
    for items in docs:
        ids, by_key, by_last = [], {}, {}
        for it in items:
            if it["kind"] != ENTITY:
                ids.append(-1)
                continue
            key = tuple(it["tokens"])
            e = None
            if merge and it["label"] == person_label and len(key) == 1 and key[0] in by_last:
                e = by_last[key[0]]
            if e is None:
                e = by_key.setdefault(key, len(set(by_key.values())))
            if merge and it["label"] == person_label and len(key) > 1:
                by_last[key[-1]] = e
            ids.append(e)
        out.append(ids)
    return out


# --------------------------------------------------------------------------- tokens -> items
#
# The oracle of ``extract_items`` (through the stage ``ddpcore.pipeline.stages.find_items``) and of
# ``sentence_starts`` (through ``number_sentences``). It works on *strings* (token text in lower
# case, POS/tag/dependency/entity-label names), reads the rules from a ``RuleSet`` the way the
# docstring of ``ddpcore.anchors.rules`` and the README's "DDP definition" word them, and only at
# the very end turns its string keys into the kernel's 64-bit hashes (``key_hash``).

_M64 = (1 << 64) - 1
#: salt of the noun-chain key space (kernel: "noun" in ASCII, 0x6E6F756E)
NOUN_SALT = int.from_bytes(b"noun", "big")


def splitmix_step(h, x):
    """splitmix64's finaliser applied to ``(h ^ x) + golden ratio`` (Steele, Lea & Flood 2014,
    constants as published: 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB)."""
    z = ((h ^ x) + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def key_hash(parts, h=0):
    """Order-sensitive hash of a sequence of integers (the entity key of the kernel)."""
    for p in parts:
        h = splitmix_step(h, p)
    return h


def sentence_starts_oracle(sent_start, is_space, unit_start):
    """Per token 1 where a sentence starts: every parse-unit start and every token spaCy marks as
    a sentence start (``sent_start == 1``) is a start; a start on a whitespace token moves to the
    next non-whitespace token (possibly in a later unit); starts that land on the same token count once."""
    n = len(sent_start)
    flags = [0] * n
    for s in range(n):
        if unit_start[s] or sent_start[s] == 1:
            t = s
            while t < n and is_space[t]:
                t += 1
            if t < n:
                flags[t] = 1
    return flags


def _lookup(pairs):
    return dict(pairs)


def extract_items_oracle(tokens, rules, *, has_parser=True, first_names=None):
    """Items of a token stream, in token order, as dicts with string keys.

    ``tokens``: list of dicts ``lower, pos, tag, dep, head`` (absolute index), ``iob`` ("B", "I",
    "O" or "" for missing), ``ent`` (label or ""), ``unit_start`` (bool). ``rules``: a
    ``ddpcore.anchors.rules.RuleSet``; ``first_names``: {first name: gender bit} when the rule set
    genders names (``name_gender``). Returns item dicts: ``token, end_token, kind, label, compat,
    key_parts`` (tuple of strings / label numbers, None when the item has no key), ``last_part``,
    ``n_key``, ``gender``.
    """
    from ddpcore.anchors.rules import ADDRESS_NOUNS, GROUP_BIT, NEUT_SG

    labels = list(rules.entity_labels)
    compat_of = _lookup(rules.label_compat)
    groups = _lookup(rules.pronoun_groups)
    titles = _lookup(rules.titles)
    names = dict(first_names or {}) if rules.name_gender else {}
    person = labels.index("PERSON") if "PERSON" in labels else -1
    n = len(tokens)
    items = []

    def span_end(b):
        # an entity span: its B token and the I tokens that follow it within the same parse unit
        e = b + 1
        while e < n and tokens[e]["iob"] == "I" and not tokens[e]["unit_start"]:
            e += 1
        return e

    # 1. which tokens lie in some entity span (any label: DATE spans hide pronouns too). A token
    #    tagged I counts as inside a span even when no B precedes it in its unit.
    inside = [t["iob"] in ("B", "I") for t in tokens]

    for i, t in enumerate(tokens):
        # ---- named-entity mentions: spans that begin at a B token with an anchor label
        if t["iob"] == "B" and t["ent"] in labels:
            end = span_end(i)
            lab = labels.index(t["ent"])
            span = list(range(i, end))
            # whitespace at either end of the span is not part of the key
            while span and tokens[span[0]]["pos"] == "SPACE":
                span.pop(0)
            while span and tokens[span[-1]]["pos"] == "SPACE":
                span.pop()
            # a leading "the", a trailing possessive
            if span and tokens[span[0]]["lower"] in rules.drop_leading:
                span.pop(0)
            if span and tokens[span[-1]]["lower"] in rules.drop_trailing:
                span.pop()
            # refined: one-token adjectival mentions of some labels ("American") are not anchors
            if (t["ent"] in rules.skip_adjective_labels and len(span) == 1
                    and tokens[span[0]]["pos"] == "ADJ"):
                continue
            # refined: a title at the start of the mention, else the token just before it (same unit)
            title = None
            if titles:
                if span and tokens[span[0]]["lower"] in titles:
                    title = span[0]
                elif i > 0 and not t["unit_start"] and tokens[i - 1]["lower"] in titles:
                    title = i - 1
            gender = titles[tokens[title]["lower"]] if (title is not None and lab == person) else 0
            if names and lab == person and gender == 0:
                # the first name: the first key token after a title at the start of the mention
                rest = span[1:] if (title is not None and span and title == span[0]) else span
                if rest and tokens[rest[0]]["lower"] in names:
                    gender = names[tokens[rest[0]]["lower"]]
            words = [tokens[k]["lower"] for k in span if tokens[k]["pos"] != "SPACE"]
            if not words:
                continue  # nothing left of the key: no mention (and its tokens are still inside a span)
            prefix = []
            if rules.key_with_label:
                prefix.append(("label", lab))
            if rules.key_with_title and title is not None and (not span or title < span[0]):
                prefix.append(("word", tokens[title]["lower"]))
            key = tuple(prefix) + tuple(("word", w) for w in words)
            last = ((("label", lab),) if rules.key_with_label else ()) + (("word", words[-1]),)
            items.append(dict(token=i, end_token=end, kind=ENTITY, label=lab,
                              compat=compat_of.get(t["ent"], NEUT_SG), key_parts=key, last_part=last,
                              n_key=len(words), gender=gender))
            continue
        if inside[i]:
            continue  # nothing inside an entity span is a pronoun or head noun
        # ---- pronoun anchors (pleonastic "it" is not)
        if t["pos"] == "PRON" and t["lower"] in groups and t["dep"] != "expl":
            bit = GROUP_BIT[groups[t["lower"]]]
            items.append(dict(token=i, end_token=i + 1, kind=PRONOUN, label=bit, compat=bit, key_parts=None,
                              last_part=None, n_key=0, gender=0))
            continue
        # ---- head nouns
        if t["pos"] != "NOUN":
            continue
        if not has_parser:
            # no parse: the last NOUN of a run of NOUN/PROPN tokens within a unit ...
            nxt = tokens[i + 1] if i + 1 < n and not tokens[i + 1]["unit_start"] else None
            head_noun = nxt is None or nxt["pos"] not in ("NOUN", "PROPN")
            # ... not before a hyphen ("ear-ring") or a possessive marker ("the man's") ...
            if nxt is not None and nxt["tag"] in ("HYPH", "POS"):
                head_noun = False
            # ... and not a term of address between punctuation ("Yes, my dear sir.")
            if head_noun and t["lower"] in ADDRESS_NOUNS and (nxt is None or nxt["pos"] == "PUNCT"):
                # the phrase before the noun: a maximal run of nouns, adjectives, determiners,
                # numbers and possessive pronouns within the unit
                phrase_start = i
                while (not tokens[phrase_start]["unit_start"] and phrase_start > 0
                       and (tokens[phrase_start - 1]["pos"] in ("NOUN", "PROPN", "ADJ", "DET", "NUM")
                            or tokens[phrase_start - 1]["tag"] == "PRP$")):
                    phrase_start -= 1
                before = None if (phrase_start == 0 or tokens[phrase_start]["unit_start"]) else tokens[phrase_start - 1]
                if before is None or before["pos"] == "PUNCT":
                    head_noun = False
        elif t["dep"] in rules.np_deps:
            head_noun = True
        elif t["dep"] == "conj":
            # conj of a noun-chunk head: walk up the conj chain to its first conjunct
            h, seen = t["head"], {i}
            while tokens[h]["dep"] == "conj" and tokens[h]["head"] != h and h not in seen:
                seen.add(h)
                h = tokens[h]["head"]
            head_noun = tokens[h]["dep"] in rules.np_deps
        else:
            head_noun = False
        if not head_noun:
            continue
        if t["tag"] in ("NNS", "NNPS"):
            compat = 8  # PL
        elif t["lower"] in rules.person_nouns:
            compat = 1 | 2 | 4  # MASC_SG | FEM_SG | NEUT_SG
            gender = dict(rules.gendered_nouns).get(t["lower"], 0)
            if gender:  # "man" takes he and it, not she; "woman" she and it, not he
                compat = (1 | 2 | 4) & ~(2 if gender == 1 else 1)
        else:
            compat = 4  # NEUT_SG
        person_noun = t["tag"] not in ("NNS", "NNPS") and t["lower"] in rules.person_nouns
        chained = rules.chain_nouns == 2 or (rules.chain_nouns == 1 and person_noun)
        items.append(dict(token=i, end_token=i + 1, kind=NOUN, label=-1, compat=compat,
                          key_parts=(("noun", t["lower"]),) if chained else None, last_part=None,
                          n_key=1 if chained else 0, gender=0))
    return items


def items_to_arrays(items, string_id):
    """The oracle's items as the kernel's arrays; ``string_id(word) -> int`` (spaCy's hash)."""
    import numpy as np

    def part(p):
        kind, v = p
        return v + 1 if kind == "label" else string_id(v)

    key, last = [], []
    for it in items:
        kp = it["key_parts"]
        if kp is None:
            key.append(0)
        elif kp[0][0] == "noun":
            key.append(key_hash([string_id(kp[0][1])], NOUN_SALT))
        else:
            key.append(key_hash([part(p) for p in kp]))
        last.append(key_hash([part(p) for p in it["last_part"]]) if it["last_part"] else 0)
    col = lambda name, dt: np.array([it[name] for it in items], dtype=dt)  # noqa: E731
    return {
        "token": col("token", np.int64), "end_token": col("end_token", np.int64), "kind": col("kind", np.int8),
        "label": col("label", np.int16), "compat": col("compat", np.uint8),
        "key": np.array(key, dtype=np.uint64), "last_token_key": np.array(last, dtype=np.uint64),
        "n_key": col("n_key", np.int16), "gender": col("gender", np.uint8),
    }
