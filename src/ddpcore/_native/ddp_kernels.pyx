# cython: language_level=3
"""DDP kernels over flat token / item arrays (no spaCy, no Arrow, no validation).

Three stages, each one pass over contiguous arrays:

``extract_items``      tokens  -> items (entity mentions, pronouns, head-noun candidates)
``assign_entity_ids``  items   -> dense entity ids, unique over the call (entity keys + PERSON merge,
                       keyed head nouns of noun chains)
``compute_distances``  items   -> per-anchor distance (sentences), per-sentence and per-segment DDP

Array naming: ``X__tok`` is indexed by token, ``X__item`` by item, ``X__doc`` by document,
``offsets__doc`` has ``n_docs + 1`` entries delimiting each document's items.

The kernels are compiled without bounds checks (``setup.py``; ``DDPCORE_DEBUG=1`` turns them
on): they trust their inputs. The stage functions of :mod:`ddpcore.pipeline.stages` build those
inputs, and :func:`ddpcore.pipeline.extract.extract_items` checks the shapes, dtypes and index
ranges of ``extract_items``' inputs before calling it. The slow oracles live in
``tests/oracle.py``.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint64_t
from libcpp.unordered_map cimport unordered_map
from libcpp.unordered_set cimport unordered_set

from .ddp_max cimport raise_ddp
from .hashsets cimport map_of, set_of
from .kinds cimport KIND_ENTITY, KIND_NOUN, KIND_PRONOUN
from .threads cimport resolve_threads

cnp.import_array()

# ENT_IOB codes of spaCy's Doc.to_array: 0 missing, 1 I, 2 O, 3 B
DEF IOB_I = 1
DEF IOB_B = 3


cdef inline uint64_t _mix(uint64_t h, uint64_t x) noexcept nogil:
    # splitmix64 finaliser applied to (h ^ x) + golden ratio; order-sensitive key hashing
    cdef uint64_t z = (h ^ x) + <uint64_t>0x9E3779B97F4A7C15
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


def extract_items(tokens, tables):
    """Find entity mentions, pronoun anchors and head-noun candidates, in token order.

    ``tokens`` holds the token columns, each of length ``n_tok`` (attributes ``lower``, ``tag``,
    ``dep``, ``enttype``: uint64 StringStore hashes; ``pos`` int32; ``head`` int64 absolute
    token index; ``iob`` int8; ``unit_start`` uint8), ``tables`` the rule tables of a rule set
    (:class:`ddpcore.pipeline.extract.RuleTables`: hashes from spaCy's StringStore, group bits,
    noun compatibility bits and switches). Call it through
    :func:`ddpcore.pipeline.extract.extract_items`, which validates both. Returns a dict of
    item-level arrays:

    ``token`` (int64, first token), ``end_token`` (int64, exclusive), ``kind`` (int8: 0
    entity, 1 pronoun, 2 noun), ``label`` (int16: index into ``label_hashes`` for entities,
    group bit for pronouns, -1 for nouns), ``compat`` (uint8 bit mask of pronoun groups
    the item can be an antecedent of; for pronouns its own group bit), ``key`` (uint64
    entity key hash), ``last_token_key`` (uint64: the key a one-token mention of the key's
    last token would have; 0 for pronouns and nouns), ``n_key`` (int16 number of key tokens),
    ``gender`` (uint8: for PERSON mentions the MASC_SG (1) / FEM_SG (2) bit told by a title
    before or at the start of the span ("Mrs.") or else by the first name (``name_hashes``);
    0 when unknown or not a person).

    ``chain_nouns`` (1: singular person nouns, 2: every head noun) gives head nouns a key,
    so repeated nouns ("the man ... the man") form chains that pronoun links can follow.
    Without a dependency parse (``heads_from_tags``), a head noun is the last ``NOUN`` of
    a run of nouns/proper nouns, unless the next token of its unit is tagged ``HYPH``
    (``tag_hyph``: "ear-ring") or ``POS`` (``tag_possessive``: "the man's"), or the noun is a
    term of address (``address_hashes``: "sir") in a vocative frame: the next token is
    punctuation (``pos_punct``) or the unit ends, and the first token before the noun's
    phrase (skipping ``NOUN``/``PROPN``/``ADJ``/``DET``/``NUM`` and ``PRP$``) is punctuation
    or the unit starts ("Yes, my dear sir."). Refinements: ``key_with_title`` puts a title token into the key ("Mrs. Griffin" differs
    from "Griffin"); ``key_with_label`` makes the label part of the key; ``label_skip_adj[l]``
    drops one-token mentions of label ``l`` whose token is an adjective ("American").
    Empty refinement tables (``title_hashes``, ``name_hashes``, ``label_skip_adj``) switch
    those refinements off.
    """
    # token columns (n_tok,)
    cdef const uint64_t[::1] lower__tok = tokens.lower
    cdef const int32_t[::1] pos__tok = tokens.pos
    cdef const uint64_t[::1] tag__tok = tokens.tag
    cdef const uint64_t[::1] dep__tok = tokens.dep
    cdef const int64_t[::1] head__tok = tokens.head
    cdef const int8_t[::1] iob__tok = tokens.iob
    cdef const uint64_t[::1] enttype__tok = tokens.enttype
    cdef const uint8_t[::1] unit_start__tok = tokens.unit_start
    # rule tables
    cdef const uint64_t[::1] pronoun_hashes = tables.pronoun_hashes
    cdef const int64_t[::1] pronoun_group_bits = tables.pronoun_group_bits
    cdef const uint64_t[::1] label_hashes = tables.label_hashes
    cdef const int64_t[::1] label_compat = tables.label_compat
    cdef const uint64_t[::1] np_dep_hashes = tables.np_dep_hashes
    cdef const uint64_t[::1] person_noun_hashes = tables.person_noun_hashes
    cdef const uint64_t[::1] gendered_noun_hashes = tables.gendered_noun_hashes
    cdef const int64_t[::1] gendered_noun_bits = tables.gendered_noun_bits
    cdef const uint64_t[::1] drop_leading_hashes = tables.drop_leading_hashes
    cdef const uint64_t[::1] drop_trailing_hashes = tables.drop_trailing_hashes
    cdef uint64_t dep_expl = tables.dep_expl
    cdef uint64_t dep_conj = tables.dep_conj
    cdef uint64_t tag_plural = tables.tag_plural
    cdef uint64_t tag_plural_proper = tables.tag_plural_proper
    cdef int32_t pos_pron = tables.pos_pron
    cdef int32_t pos_noun = tables.pos_noun
    cdef int32_t pos_space = tables.pos_space
    cdef uint8_t plural_noun_compat = tables.plural_noun_compat
    cdef uint8_t person_noun_compat = tables.person_noun_compat
    cdef uint8_t noun_compat = tables.noun_compat
    cdef uint64_t noun_key_salt = tables.noun_key_salt
    # refinements (rule sets other than "paper")
    cdef const uint64_t[::1] title_hashes = tables.title_hashes
    cdef const int64_t[::1] title_bits = tables.title_bits
    cdef const uint64_t[::1] name_hashes = tables.name_hashes
    cdef const int64_t[::1] name_bits = tables.name_bits
    cdef const int64_t[::1] label_skip_adj = tables.label_skip_adj
    cdef int32_t pos_adj = tables.pos_adj
    cdef int16_t person_label = tables.person_label
    cdef bint key_with_label = tables.key_with_label
    cdef bint key_with_title = tables.key_with_title
    cdef bint heads_from_tags = tables.heads_from_tags
    cdef int32_t pos_propn = tables.pos_propn
    cdef int chain_nouns = tables.chain_nouns
    # head nouns from tags (heads_from_tags)
    cdef uint64_t tag_hyph = tables.tag_hyph
    cdef uint64_t tag_possessive = tables.tag_possessive
    cdef uint64_t tag_prp_poss = tables.tag_prp_poss
    cdef int32_t pos_punct = tables.pos_punct
    cdef int32_t pos_det = tables.pos_det
    cdef int32_t pos_num = tables.pos_num
    cdef const uint64_t[::1] address_hashes = tables.address_hashes

    cdef Py_ssize_t n = lower__tok.shape[0]
    cdef unordered_map[uint64_t, int64_t] pron_map = map_of(pronoun_hashes, pronoun_group_bits)
    cdef unordered_map[uint64_t, int64_t] label_map
    cdef unordered_set[uint64_t] np_deps = set_of(np_dep_hashes)
    cdef unordered_set[uint64_t] person_nouns = set_of(person_noun_hashes)
    cdef unordered_set[uint64_t] drop_lead = set_of(drop_leading_hashes)
    cdef unordered_set[uint64_t] drop_trail = set_of(drop_trailing_hashes)
    cdef unordered_set[uint64_t] address = set_of(address_hashes)
    cdef int32_t p
    cdef Py_ssize_t i, j, k, end, key_start, key_end, h, steps, title_tok
    cdef unordered_map[uint64_t, int64_t] title_map
    cdef unordered_map[uint64_t, int64_t] name_map
    cdef unordered_map[uint64_t, int64_t] noun_gender_map
    cdef bint use_noun_gender = gendered_noun_hashes.shape[0] > 0
    cdef bint is_person_noun
    cdef bint use_titles = title_hashes.shape[0] > 0
    cdef bint use_names = name_hashes.shape[0] > 0
    cdef bint use_skip = label_skip_adj.shape[0] > 0
    cdef uint8_t gender
    for i in range(label_hashes.shape[0]):
        label_map[label_hashes[i]] = i
    if use_titles:
        title_map = map_of(title_hashes, title_bits)
    if use_names:
        name_map = map_of(name_hashes, name_bits)
    if use_noun_gender:
        noun_gender_map = map_of(gendered_noun_hashes, gendered_noun_bits)

    out_token = np.empty(n, dtype=np.int64)
    out_end = np.empty(n, dtype=np.int64)
    out_kind = np.empty(n, dtype=np.int8)
    out_label = np.empty(n, dtype=np.int16)
    out_compat = np.empty(n, dtype=np.uint8)
    out_key = np.zeros(n, dtype=np.uint64)
    out_last_key = np.zeros(n, dtype=np.uint64)
    out_nkey = np.zeros(n, dtype=np.int16)
    out_gender = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] o_gender = out_gender
    cdef int64_t[::1] o_token = out_token
    cdef int64_t[::1] o_end = out_end
    cdef int8_t[::1] o_kind = out_kind
    cdef int16_t[::1] o_label = out_label
    cdef uint8_t[::1] o_compat = out_compat
    cdef uint64_t[::1] o_key = out_key
    cdef uint64_t[::1] o_last_key = out_last_key
    cdef int16_t[::1] o_nkey = out_nkey
    cdef Py_ssize_t m = 0
    cdef uint64_t key, last_key
    cdef int64_t lab
    cdef int nkey
    cdef bint inside_entity, is_root

    with nogil:
        for i in range(n):
            inside_entity = iob__tok[i] == IOB_B or iob__tok[i] == IOB_I
            if iob__tok[i] == IOB_B and label_map.count(enttype__tok[i]):
                # entity span: B followed by I tokens of the same parse unit
                end = i + 1
                while end < n and iob__tok[end] == IOB_I and not unit_start__tok[end]:
                    end += 1
                key_start = i
                key_end = end
                while key_start < key_end and pos__tok[key_start] == pos_space:
                    key_start += 1
                while key_end > key_start and pos__tok[key_end - 1] == pos_space:
                    key_end -= 1
                if key_start < key_end and drop_lead.count(lower__tok[key_start]):
                    key_start += 1
                if key_end > key_start and drop_trail.count(lower__tok[key_end - 1]):
                    key_end -= 1
                lab = label_map[enttype__tok[i]]
                if (use_skip and label_skip_adj[lab] and key_end - key_start == 1
                        and pos__tok[key_start] == pos_adj):
                    continue
                key = 0
                nkey = 0
                last_key = 0
                gender = 0
                title_tok = -1
                if use_titles:
                    if key_start < key_end and title_map.count(lower__tok[key_start]):
                        title_tok = key_start
                    elif i > 0 and not unit_start__tok[i] and title_map.count(lower__tok[i - 1]):
                        title_tok = i - 1
                    if lab == person_label and title_tok >= 0:
                        gender = <uint8_t>title_map[lower__tok[title_tok]]
                if key_with_label:
                    key = _mix(key, <uint64_t>(lab + 1))
                if key_with_title and title_tok >= 0 and title_tok < key_start:
                    key = _mix(key, lower__tok[title_tok])
                if use_names and lab == person_label and gender == 0:
                    k = key_start + 1 if title_tok == key_start else key_start
                    if k < key_end and name_map.count(lower__tok[k]) and key_end - k >= 1:
                        gender = <uint8_t>name_map[lower__tok[k]]
                for k in range(key_start, key_end):
                    if pos__tok[k] == pos_space:
                        continue
                    key = _mix(key, lower__tok[k])
                    last_key = lower__tok[k]
                    nkey += 1
                # the key a one-token mention of the last token would have (PERSON merge)
                last_key = _mix(_mix(0, <uint64_t>(lab + 1)) if key_with_label else 0, last_key)
                if nkey > 0:
                    o_gender[m] = gender
                    o_token[m] = i
                    o_end[m] = end
                    o_kind[m] = KIND_ENTITY
                    o_label[m] = <int16_t>lab
                    o_compat[m] = <uint8_t>label_compat[lab]
                    o_key[m] = key
                    o_last_key[m] = last_key
                    o_nkey[m] = <int16_t>nkey
                    m += 1
                continue
            if inside_entity:
                continue
            if pos__tok[i] == pos_pron and pron_map.count(lower__tok[i]) and dep__tok[i] != dep_expl:
                o_token[m] = i
                o_end[m] = i + 1
                o_kind[m] = KIND_PRONOUN
                o_label[m] = <int16_t>pron_map[lower__tok[i]]
                o_compat[m] = <uint8_t>pron_map[lower__tok[i]]
                m += 1
                continue
            if pos__tok[i] == pos_noun:
                if heads_from_tags:
                    # no dependency parse (fast preset): the last noun of a run of nouns ...
                    is_root = (i + 1 >= n or unit_start__tok[i + 1]
                               or (pos__tok[i + 1] != pos_noun and pos__tok[i + 1] != pos_propn))
                    # ... not followed by a hyphen (compound) or a possessive marker ...
                    if is_root and i + 1 < n and not unit_start__tok[i + 1] and (
                            tag__tok[i + 1] == tag_hyph or tag__tok[i + 1] == tag_possessive):
                        is_root = False
                    # ... and not a term of address between punctuation (a vocative)
                    if is_root and address.count(lower__tok[i]) and (
                            i + 1 >= n or unit_start__tok[i + 1] or pos__tok[i + 1] == pos_punct):
                        j = i
                        while j > 0 and not unit_start__tok[j]:
                            p = pos__tok[j - 1]
                            if (p == pos_noun or p == pos_propn or p == pos_adj or p == pos_det or p == pos_num
                                    or tag__tok[j - 1] == tag_prp_poss):
                                j -= 1
                            else:
                                break
                        if j == 0 or unit_start__tok[j] or pos__tok[j - 1] == pos_punct:
                            is_root = False
                else:
                    is_root = np_deps.count(dep__tok[i]) > 0
                if not heads_from_tags and not is_root and dep__tok[i] == dep_conj:
                    h = head__tok[i]
                    steps = 0
                    while dep__tok[h] == dep_conj and head__tok[h] != h and steps < 1000:
                        h = head__tok[h]
                        steps += 1
                    is_root = np_deps.count(dep__tok[h]) > 0
                if is_root:
                    o_token[m] = i
                    o_end[m] = i + 1
                    o_kind[m] = KIND_NOUN
                    o_label[m] = -1
                    is_person_noun = False
                    if tag__tok[i] == tag_plural or tag__tok[i] == tag_plural_proper:
                        o_compat[m] = plural_noun_compat
                    elif person_nouns.count(lower__tok[i]):
                        is_person_noun = True
                        o_compat[m] = person_noun_compat
                        if use_noun_gender and noun_gender_map.count(lower__tok[i]):
                            # a gendered person noun ("man", "queen") is no antecedent of the other gender
                            o_compat[m] = <uint8_t>noun_gender_map[lower__tok[i]]
                    else:
                        o_compat[m] = noun_compat
                    if chain_nouns == 2 or (chain_nouns == 1 and is_person_noun):
                        # repeated head nouns form chains (the salt keeps noun keys apart from entity keys)
                        o_key[m] = _mix(noun_key_salt, lower__tok[i])
                        o_nkey[m] = 1
                    m += 1
    return {
        "token": out_token[:m].copy(),
        "end_token": out_end[:m].copy(),
        "kind": out_kind[:m].copy(),
        "label": out_label[:m].copy(),
        "compat": out_compat[:m].copy(),
        "key": out_key[:m].copy(),
        "last_token_key": out_last_key[:m].copy(),
        "n_key": out_nkey[:m].copy(),
        "gender": out_gender[:m].copy(),
    }


def sentence_starts(
    const int8_t[::1] sent_start__tok,
    const int32_t[::1] pos__tok,
    const uint8_t[::1] unit_start__tok,
    int32_t pos_space,
):
    """Sentence-start flags (uint8) per token: a parse unit's first token and every
    token spaCy marks ``is_sent_start``, moved forward past whitespace tokens so that
    no sentence consists of whitespace only."""
    cdef Py_ssize_t n = sent_start__tok.shape[0]
    out = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] flag = out
    cdef bint pending = False
    cdef Py_ssize_t i
    with nogil:
        for i in range(n):
            if unit_start__tok[i] or sent_start__tok[i] == 1:
                pending = True
            if pending and pos__tok[i] != pos_space:
                flag[i] = 1
                pending = False
    return out


def assign_entity_ids(
    const int64_t[::1] offsets__doc,
    const int8_t[::1] kind__item,
    const int16_t[::1] label__item,
    const uint64_t[::1] key__item,
    const uint64_t[::1] last_token_key__item,
    const int16_t[::1] nkey__item,
    int16_t person_label,
    bint person_merge,
):
    """Dense entity ids, unique over the whole input, for entity items and keyed head
    nouns (noun chains; -1 otherwise).

    Within a document, mentions with equal keys share an id. With ``person_merge``, a
    one-token PERSON mention whose token equals the last token of an earlier multi-token
    PERSON key joins the most recent such entity. Returns ``(entity_id__item, n_entities)``.
    """
    cdef Py_ssize_t n_docs = offsets__doc.shape[0] - 1
    cdef Py_ssize_t n = kind__item.shape[0]
    out = np.full(n, -1, dtype=np.int32)
    cdef int32_t[::1] eid = out
    cdef unordered_map[uint64_t, int32_t] by_key
    cdef unordered_map[uint64_t, int32_t] by_last
    cdef int32_t next_id = 0
    cdef Py_ssize_t d, i
    cdef int32_t e
    with nogil:
        for d in range(n_docs):
            by_key.clear()
            by_last.clear()
            for i in range(offsets__doc[d], offsets__doc[d + 1]):
                if kind__item[i] == KIND_PRONOUN or (kind__item[i] == KIND_NOUN and key__item[i] == 0):
                    continue
                e = -1
                if person_merge and label__item[i] == person_label and nkey__item[i] == 1:
                    if by_last.count(key__item[i]):
                        e = by_last[key__item[i]]
                if e < 0:
                    if by_key.count(key__item[i]):
                        e = by_key[key__item[i]]
                    else:
                        e = next_id
                        next_id += 1
                        by_key[key__item[i]] = e
                if person_merge and label__item[i] == person_label and nkey__item[i] > 1:
                    # indexed by the key a one-token mention of the last token would have
                    by_last[last_token_key__item[i]] = e
                eid[i] = e
    return out, int(next_id)


def compute_distances(
    const int64_t[::1] offsets__doc,
    const int8_t[::1] kind__item,
    const int32_t[::1] sentence__item,
    const int32_t[::1] entity__item,
    const uint8_t[::1] compat__item,
    const int32_t[::1] segment__item,
    const int32_t[::1] gsentence__item,
    Py_ssize_t n_entities,
    Py_ssize_t n_segments,
    Py_ssize_t n_sentences,
    bint nearest,
    int n_threads=1,
):
    """Anchor distances (in sentences) and their per-sentence / per-segment maxima.

    Parameters (``n_items`` items in document order, documents delimited by ``offsets__doc``):
    ``kind__item`` 0 entity / 1 pronoun / 2 noun candidate; ``sentence__item`` document-level
    sentence index; ``entity__item`` dense entity id (entity mentions and keyed head nouns of
    noun chains, from ``assign_entity_ids``) or -1; ``compat__item``
    antecedent bit mask (entities, nouns) or own group bit (pronouns); ``segment__item`` and
    ``gsentence__item`` global segment / sentence row the item belongs to.

    Returns ``(distance__item int32 (-1: first mention or noun), antecedent__item int32
    (linked item or -1), reference__item int32 (item the distance is measured to or -1),
    ddp__segment int32[n_segments], ddp__sentence int32[n_sentences])``. Documents are
    independent, so they run in parallel (``n_threads``; 0 or less = OpenMP's default, ``OMP_NUM_THREADS``
    or all cores); results do not depend on it.
    """
    cdef Py_ssize_t n_docs = offsets__doc.shape[0] - 1
    cdef Py_ssize_t n = kind__item.shape[0]
    distance = np.empty(n, dtype=np.int32)  # every element is written by the kernel
    if n >= 2**31 - 1 or n_sentences >= 2**31 - 1:
        raise ValueError("compute_distances handles fewer than 2**31 - 1 items and sentences per call")
    antecedent = np.empty(n, dtype=np.int32)  # item indices fit int32 (checked above)
    reference = np.empty(n, dtype=np.int32)
    ddp_seg = np.zeros(n_segments, dtype=np.int32)
    ddp_sent = np.zeros(n_sentences, dtype=np.int32)
    first_item = np.full(max(n_entities, 1), -1, dtype=np.int32)
    last_item = np.full(max(n_entities, 1), -1, dtype=np.int32)
    cdef int32_t[::1] dist = distance
    cdef int32_t[::1] ante = antecedent
    cdef int32_t[::1] ref = reference
    cdef int32_t[::1] dseg = ddp_seg
    cdef int32_t[::1] dsent = ddp_sent
    cdef int32_t[::1] first = first_item
    cdef int32_t[::1] last = last_item
    cdef Py_ssize_t d
    cdef int nt = resolve_threads(n_threads)
    with nogil:
        for d in prange(n_docs, num_threads=nt, schedule="dynamic", chunksize=64):
            _distances_one_doc(offsets__doc[d], offsets__doc[d + 1], kind__item, sentence__item,
                               entity__item, compat__item, segment__item, gsentence__item, nearest,
                               dist, ante, ref, dseg, dsent, first, last)
    return distance, antecedent, reference, ddp_seg, ddp_sent


cdef void _distances_one_doc(
    int64_t start, int64_t stop,
    const int8_t[::1] kind, const int32_t[::1] sent, const int32_t[::1] ent,
    const uint8_t[::1] compat, const int32_t[::1] seg, const int32_t[::1] gsent, bint nearest,
    int32_t[::1] dist, int32_t[::1] ante, int32_t[::1] ref, int32_t[::1] dseg, int32_t[::1] dsent,
    int32_t[::1] first, int32_t[::1] last,
) noexcept nogil:
    # cand[b]: latest antecedent compatible with the pronoun group whose bit is b (1, 2, 4, 8)
    cdef int32_t cand[9]
    cdef int64_t i
    cdef int32_t c, r, a
    cdef int32_t e, d
    cdef uint8_t bits
    cdef int8_t k
    cdef int b
    for b in range(9):
        cand[b] = -1
    for i in range(start, stop):
        k = kind[i]
        d = -1
        a = -1
        r = -1
        bits = compat[i]
        if k == KIND_PRONOUN:
            c = cand[bits] if bits <= 8 else -1
            if c < 0:
                d = 1
            else:
                a = c
                if not nearest and ent[c] >= 0:
                    r = first[ent[c]]  # entity, or head noun of a noun chain
                else:
                    r = c
                d = sent[i] - sent[r]
        else:
            if k == KIND_ENTITY:
                e = ent[i]
                if first[e] < 0:
                    first[e] = i
                else:
                    a = last[e]
                    r = a if nearest else first[e]
                    d = sent[i] - sent[r]
                last[e] = i
            elif ent[i] >= 0:
                # head noun of a noun chain: remember its first occurrence, no distance
                e = ent[i]
                if first[e] < 0:
                    first[e] = i
                last[e] = i
            # entity or noun: the latest antecedent for its compatible groups
            if bits & 1:
                cand[1] = i
            if bits & 2:
                cand[2] = i
            if bits & 4:
                cand[4] = i
            if bits & 8:
                cand[8] = i
        dist[i] = d
        ante[i] = a
        ref[i] = r
        if d > 0:
            raise_ddp(d, &dsent[gsent[i]], &dseg[seg[i]])


def entity_key(const uint64_t[::1] token_hashes):
    """The entity key hash ``extract_items`` computes for a sequence of token hashes."""
    cdef uint64_t key = 0
    cdef Py_ssize_t i
    for i in range(token_hashes.shape[0]):
        key = _mix(key, token_hashes[i])
    return key


def standardised_logit(const double[:, ::1] x, const double[::1] mean, const double[::1] scale,
                       const double[::1] weights, double bias, const double[::1] start=None):
    """The logit of a standardised logistic model for every row of ``x`` (``(n_rows, n_features)``
    float64, C order): ``bias + sum_j ((x[i, j] - mean[j]) / scale[j]) * weights[j]``, summed over ``j``
    in order (the certification model, :func:`ddpcore.anchors.certify.confidence_of`). Each row is
    computed on its own in the same operations and order as the column-by-column numpy loop, so a
    row gets the same bits whatever the number of rows. ``start`` (float64 ``(n_rows,)``, optional): each
    row's sum starts there instead of at ``bias`` -- the partial logit over the features before these,
    so that a model's features can be summed in two calls (the same bits as one call over all of them).
    Returns float64 ``(n_rows,)``."""
    cdef Py_ssize_t n = x.shape[0], f = x.shape[1], i, j
    if mean.shape[0] != f or scale.shape[0] != f or weights.shape[0] != f:
        raise ValueError(f"standardised_logit: {f} features, but mean/scale/weights have "
                         f"{mean.shape[0]}/{scale.shape[0]}/{weights.shape[0]}")
    if start is not None and start.shape[0] != n:
        raise ValueError(f"standardised_logit: {n} rows, but start has {start.shape[0]}")
    out_a = np.empty(n, dtype=np.float64)
    cdef double[::1] out = out_a
    cdef double acc, z
    cdef bint has_start = start is not None
    with nogil:
        for i in range(n):
            acc = start[i] if has_start else bias
            for j in range(f):
                z = (x[i, j] - mean[j]) / scale[j]
                acc = acc + z * weights[j]
            out[i] = acc
    return out_a
