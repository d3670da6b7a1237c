# cython: language_level=3
"""Antecedent candidates, their features and a linear scorer (rule set ``learned``).

Every anchor (a pronoun or a named entity mention) gets as candidates the earlier entity
mentions and head nouns of its document that lie at most ``max_sentences`` sentences back.
Each (anchor, candidate) pair is described by the features of :data:`FEATURES` (float32),
computed from the item arrays of :func:`ddpcore._native.ddp_kernels.extract_items` and the
token columns. A linear model (one weight row per anchor kind: 0 pronoun, 1 name) scores
every candidate; an anchor links to its best candidate when the logistic of that score
exceeds the anchor kind's threshold, otherwise (weights files with ``fallback: rule``) to the
candidate today's linking rule picks, or to none.

Entry points (all take flat arrays through two grouped objects, ``cols`` and ``tables``;
:mod:`ddpcore.pipeline.antecedent` builds and checks them):

``item_attributes``       items + tokens -> per-item syntactic role, quotation, title flags
``candidate_features``    -> CSR: ``offsets__anchor`` (n_anchors + 1), ``anchor__anchor``
                          (item of each anchor), ``candidate__cand`` (item of each candidate),
                          ``X__cand_feat`` (n_cand, n_features) float32 (training, tests)
``link_antecedents``      the same features computed one row at a time and scored at once
                          (no matrix): ``link__item`` (best candidate above the threshold or
                          -1) and ``score__item`` (its probability; -1 for non-anchors)
``score_candidates``      scores of a CSR matrix (the same model), for tests and tuning
``learned_distances``     links -> clusters, per-anchor distances and DDP per sentence/segment

The feature layout (:data:`FEATURES`, :data:`LAYOUT_VERSION`) is the contract with the
weights file: :func:`ddpcore.pipeline.antecedent.load_antecedent_model` refuses a file written for
another layout. Bump :data:`LAYOUT_VERSION` whenever a feature changes meaning or order.
The kernels trust their inputs (no bounds checks in release builds); the slow oracle is
``tests/antecedent_oracle.py``.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport exp, log1p
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc
from libcpp.unordered_set cimport unordered_set

from .ddp_max cimport raise_ddp
from .hashsets cimport set_of
from .kinds cimport FEM_SG, KIND_ENTITY, KIND_NOUN, KIND_PRONOUN, MASC_SG, NEUT_SG, PL

cnp.import_array()

DEF ABSTAIN_LINK = -2

# syntactic roles of an item (its head token's dependency)
DEF ROLE_OTHER = 0
DEF ROLE_SUBJECT = 1
DEF ROLE_OBJECT = 2
DEF ROLE_POSSESSIVE = 3
DEF ROLE_PREP_OBJECT = 4

# quotation marks: 1 opens, 2 closes, 3 toggles (straight quotes)
DEF QUOTE_OPEN = 1
DEF QUOTE_CLOSE = 2
DEF QUOTE_TOGGLE = 3

DEF N_FEATURES = 52
DEF N_LABELS = 11

#: version of the feature layout below; a weights file must name the same version
LAYOUT_VERSION = 1
#: ``link__item`` value of a pronoun the model abstains on (best probability below the model's
#: ``abstain`` level, or no candidate): it measures no distance (-1), so it sets no DDP
ABSTAIN = ABSTAIN_LINK
#: entity labels of the one-hot block, in rule-set order (ddpcore.anchors.rules.ENTITY_LABELS)
LABELS = ("PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE")
#: feature names, in column order (a = anchor, c = candidate; ds = sentence distance)
FEATURES = (
    "sent_dist_log",        # log(1 + ds)
    "same_sentence",        # ds == 0
    "prev_sentence",        # ds == 1
    "tok_dist_log",         # log(1 + tokens from the end of c to the start of a), >= 0
    "rank_log",             # log(1 + candidates between c and a)
    "rule_choice",          # pronoun: the most recent compatible candidate; name: the most recent mention with a's entity key
    "agree",                # pronoun: c's compatibility bits hold a's group bit; name: same entity label
    "cand_gendered",        # c's compatibility is exactly MASC_SG or FEM_SG (a title / first name told the gender)
    "cand_plural",          # c's compatibility is exactly PL (plural noun, NORP)
    "same_key",             # a and c have one nonzero entity key (names)
    "same_last_token",      # a and c end in the same key token (names; "Griffin" / "Mrs. Griffin")
    "same_entity",          # a and c share the rule-based entity id
    "cand_subject", "cand_object", "cand_possessive", "cand_prep_object",
    "anchor_subject", "anchor_object", "anchor_possessive", "anchor_prep_object",
    "role_parallel",        # a and c have one role other than "other"
    "cand_entity",          # c is a named entity mention
    "cand_noun",            # c is a head noun
    "cand_person_noun",     # c is a head noun of the person-noun list
    "cand_title",           # c has a title (Mr., Dr. ...) before or at its start
    "salience_log",         # log(1 + mentions of c's entity before a) (1 for a noun without entity)
    "cand_first_mention",   # c is the first mention of its entity
    "cand_last_mention",    # c is the latest mention of its entity before a
    "anchor_in_quote", "cand_in_quote", "quote_mismatch",
    "label_PERSON", "label_NORP", "label_FAC", "label_ORG", "label_GPE", "label_LOC", "label_PRODUCT",
    "label_EVENT", "label_WORK_OF_ART", "label_LAW", "label_LANGUAGE",
    "pron_masc", "pron_fem", "pron_neut", "pron_plural",
    "anchor_reflexive",     # a is a reflexive pronoun
    "neut_x_noun",          # a is it/its and c a head noun
    "plural_x_noun",        # a is they/them and c a head noun
    "reflexive_x_same_sentence",
    "same_sentence_x_cand_subject",
    "agree_x_sent_dist_log",
)
assert len(FEATURES) == N_FEATURES
assert len(LABELS) == N_LABELS


cdef struct ItemView:
    const int8_t* kind
    const int16_t* label
    const uint8_t* compat
    const uint64_t* key
    const uint64_t* last_key
    const int32_t* ent
    const int32_t* sent
    const int64_t* tok
    const int64_t* end
    const int8_t* role
    const uint8_t* quote
    const uint8_t* title
    const uint8_t* reflexive
    uint8_t person_noun_compat


def item_attributes(cols, tables):
    """Per-item attributes the features read, each of shape (n_items,).

    ``cols``: ``token``/``end_token`` (int64 item spans, end exclusive), ``kind`` (int8),
    ``label`` (int16), ``lower``/``dep`` (uint64 token hashes, (n_tok,)), ``head`` (int64
    absolute head index, (n_tok,)), ``offsets__doc_tok`` (int64 (n_docs + 1,) token offsets of
    each document). ``tables``: uint64 hash arrays ``subject_deps``, ``object_deps``,
    ``possessive_deps``, ``prep_object_deps``, ``open_quotes``, ``close_quotes``,
    ``toggle_quotes``, ``titles``, ``reflexives``.

    Returns ``(role int8, quote uint8, title uint8, reflexive uint8)``: the role of the span's
    head token (the first token whose head lies outside the span; 0 other, 1 subject, 2 object,
    3 possessive, 4 prepositional object); 1 when the item's first token lies inside a
    quotation of its document (after an opening and before its closing mark; straight quotes
    toggle; the marks themselves are outside); 1 when an entity mention has a title at its
    start or on the token before it (within the document); 1 for a reflexive pronoun.
    """
    cdef const int64_t[::1] token__item = cols.token
    cdef const int64_t[::1] end__item = cols.end_token
    cdef const int8_t[::1] kind__item = cols.kind
    cdef const uint64_t[::1] lower__tok = cols.lower
    cdef const uint64_t[::1] dep__tok = cols.dep
    cdef const int64_t[::1] head__tok = cols.head
    cdef const int64_t[::1] tok_offsets = cols.offsets__doc_tok
    cdef unordered_set[uint64_t] subj = set_of(tables.subject_deps)
    cdef unordered_set[uint64_t] obj = set_of(tables.object_deps)
    cdef unordered_set[uint64_t] poss = set_of(tables.possessive_deps)
    cdef unordered_set[uint64_t] pobj = set_of(tables.prep_object_deps)
    cdef unordered_set[uint64_t] q_open = set_of(tables.open_quotes)
    cdef unordered_set[uint64_t] q_close = set_of(tables.close_quotes)
    cdef unordered_set[uint64_t] q_toggle = set_of(tables.toggle_quotes)
    cdef unordered_set[uint64_t] titles = set_of(tables.titles)
    cdef unordered_set[uint64_t] refl = set_of(tables.reflexives)
    cdef Py_ssize_t n = token__item.shape[0]
    cdef Py_ssize_t n_tok = lower__tok.shape[0]
    cdef Py_ssize_t n_docs = tok_offsets.shape[0] - 1
    role_a = np.zeros(n, dtype=np.int8)
    quote_a = np.zeros(n, dtype=np.uint8)
    title_a = np.zeros(n, dtype=np.uint8)
    refl_a = np.zeros(n, dtype=np.uint8)
    inside_tok = np.zeros(n_tok, dtype=np.uint8)
    cdef int8_t[::1] role = role_a
    cdef uint8_t[::1] quote = quote_a
    cdef uint8_t[::1] title = title_a
    cdef uint8_t[::1] reflexive = refl_a
    cdef uint8_t[::1] inside = inside_tok
    cdef Py_ssize_t d, t, i, k, h, t0, t1
    cdef bint open_
    cdef uint64_t dep
    with nogil:
        # quotation state per token, reset at each document start
        for d in range(n_docs):
            open_ = False
            for t in range(tok_offsets[d], tok_offsets[d + 1]):
                if q_open.count(lower__tok[t]):
                    open_ = True
                elif q_close.count(lower__tok[t]):
                    open_ = False
                elif q_toggle.count(lower__tok[t]):
                    open_ = not open_
                else:
                    inside[t] = open_
        d = 0
        for i in range(n):
            t0 = token__item[i]
            t1 = end__item[i]
            while d + 1 < n_docs and tok_offsets[d + 1] <= t0:
                d += 1
            h = t1 - 1
            for k in range(t0, t1):
                if head__tok[k] < t0 or head__tok[k] >= t1 or head__tok[k] == k:
                    h = k
                    break
            dep = dep__tok[h]
            if subj.count(dep):
                role[i] = ROLE_SUBJECT
            elif obj.count(dep):
                role[i] = ROLE_OBJECT
            elif poss.count(dep):
                role[i] = ROLE_POSSESSIVE
            elif pobj.count(dep):
                role[i] = ROLE_PREP_OBJECT
            quote[i] = inside[t0]
            if kind__item[i] == KIND_ENTITY:
                if titles.count(lower__tok[t0]) or (t0 > tok_offsets[d] and titles.count(lower__tok[t0 - 1])):
                    title[i] = 1
            elif kind__item[i] == KIND_PRONOUN:
                reflexive[i] = refl.count(lower__tok[t0]) > 0
    return role_a, quote_a, title_a, refl_a


cdef ItemView _view(cols, role, quote, title, reflexive, uint8_t person_noun_compat):
    cdef ItemView v
    cdef const int8_t[::1] kind = cols.kind
    cdef const int16_t[::1] label = cols.label
    cdef const uint8_t[::1] compat = cols.compat
    cdef const uint64_t[::1] key = cols.key
    cdef const uint64_t[::1] last_key = cols.last_token_key
    cdef const int32_t[::1] ent = cols.entity
    cdef const int32_t[::1] sent = cols.sentence
    cdef const int64_t[::1] tok = cols.token
    cdef const int64_t[::1] end = cols.end_token
    cdef const int8_t[::1] r = role
    cdef const uint8_t[::1] q = quote
    cdef const uint8_t[::1] ti = title
    cdef const uint8_t[::1] re = reflexive
    if kind.shape[0] == 0:
        v.kind = NULL
        return v
    v.kind = &kind[0]
    v.label = &label[0]
    v.compat = &compat[0]
    v.key = &key[0]
    v.last_key = &last_key[0]
    v.ent = &ent[0]
    v.sent = &sent[0]
    v.tok = &tok[0]
    v.end = &end[0]
    v.role = &r[0]
    v.quote = &q[0]
    v.title = &ti[0]
    v.reflexive = &re[0]
    v.person_noun_compat = person_noun_compat
    return v


cdef inline bint _is_anchor(const ItemView* v, Py_ssize_t i) noexcept nogil:
    return v.kind[i] == KIND_PRONOUN or v.kind[i] == KIND_ENTITY


cdef inline bint _compatible(const ItemView* v, Py_ssize_t a, Py_ssize_t c) noexcept nogil:
    """Today's rule: the candidates a rule-based link may take."""
    if v.kind[a] == KIND_PRONOUN:
        return (v.compat[c] & <uint8_t>v.label[a]) != 0
    return v.ent[a] >= 0 and v.ent[a] == v.ent[c]


cdef inline float _flag(bint x) noexcept nogil:
    return 1.0 if x else 0.0


cdef void _features(const ItemView* v, Py_ssize_t a, Py_ssize_t c, int32_t rank, bint rule_choice,
                    int32_t salience, bint first_mention, bint last_mention, float* x) noexcept nogil:
    cdef int32_t ds = v.sent[a] - v.sent[c]
    cdef int64_t dt = v.tok[a] - v.end[c]
    cdef bint pron = v.kind[a] == KIND_PRONOUN
    cdef uint8_t bit = <uint8_t>v.label[a] if pron else 0
    cdef bint agree
    cdef float sd_log = <float>log1p(<double>ds)
    cdef int f
    cdef int8_t ra = v.role[a]
    cdef int8_t rc = v.role[c]
    if dt < 0:
        dt = 0
    if pron:
        agree = (v.compat[c] & bit) != 0
    else:
        agree = v.kind[c] == KIND_ENTITY and v.label[c] == v.label[a]
    for f in range(N_FEATURES):
        x[f] = 0.0
    x[0] = sd_log
    x[1] = _flag(ds == 0)
    x[2] = _flag(ds == 1)
    x[3] = <float>log1p(<double>dt)
    x[4] = <float>log1p(<double>rank)
    x[5] = _flag(rule_choice)
    x[6] = _flag(agree)
    x[7] = _flag(v.compat[c] == MASC_SG or v.compat[c] == FEM_SG)
    x[8] = _flag(v.compat[c] == PL)
    x[9] = _flag(v.key[a] != 0 and v.key[a] == v.key[c])
    x[10] = _flag(v.kind[a] == KIND_ENTITY and v.kind[c] == KIND_ENTITY and v.last_key[a] != 0
                  and v.last_key[a] == v.last_key[c])
    x[11] = _flag(v.ent[a] >= 0 and v.ent[a] == v.ent[c])
    if rc >= ROLE_SUBJECT:
        x[11 + rc] = 1.0   # 12..15
    if ra >= ROLE_SUBJECT:
        x[15 + ra] = 1.0   # 16..19
    x[20] = _flag(ra != ROLE_OTHER and ra == rc)
    x[21] = _flag(v.kind[c] == KIND_ENTITY)
    x[22] = _flag(v.kind[c] == KIND_NOUN)
    x[23] = _flag(v.kind[c] == KIND_NOUN and v.compat[c] == v.person_noun_compat)
    x[24] = _flag(v.title[c] != 0)
    x[25] = <float>log1p(<double>salience)
    x[26] = _flag(first_mention)
    x[27] = _flag(last_mention)
    x[28] = _flag(v.quote[a] != 0)
    x[29] = _flag(v.quote[c] != 0)
    x[30] = _flag(v.quote[a] != v.quote[c])
    if v.kind[c] == KIND_ENTITY and 0 <= v.label[c] < N_LABELS:
        x[31 + v.label[c]] = 1.0   # 31..41
    if pron:
        x[42] = _flag(bit == MASC_SG)
        x[43] = _flag(bit == FEM_SG)
        x[44] = _flag(bit == NEUT_SG)
        x[45] = _flag(bit == PL)
        x[46] = _flag(v.reflexive[a] != 0)
        x[47] = _flag(bit == NEUT_SG and v.kind[c] == KIND_NOUN)
        x[48] = _flag(bit == PL and v.kind[c] == KIND_NOUN)
        x[49] = _flag(v.reflexive[a] != 0 and ds == 0)
    x[50] = _flag(ds == 0 and rc == ROLE_SUBJECT)
    x[51] = sd_log if agree else 0.0


cdef struct DocScratch:
    # per-entity state, indexed by the call-wide entity id (ids are unique per document, so
    # documents never share an entry and may run in parallel)
    int32_t* count
    int32_t* first
    int32_t* last


cdef int32_t _doc_pass(const ItemView* v, int64_t start, int64_t stop, int32_t max_sentences,
                       DocScratch s, bint emit, const int64_t* cand_offset, int32_t* cand_item,
                       float* X, const double* w, const double* bias, const double* thr_logit,
                       const uint8_t* fallback, const double* abst_logit, const uint8_t* abstains,
                       int32_t* link, float* score) noexcept nogil:
    """One document: enumerate every anchor's candidates (nearest first). With ``emit`` write
    their features into ``X`` (rows from ``cand_offset[a]``); with ``w`` score them and write
    the best link (:func:`_decide`).
    Returns the number of candidates of the document."""
    cdef Py_ssize_t a, c, i, rule_c
    cdef int32_t rank, n_cand = 0, sal, e
    cdef bint seen_compatible, rc, first_m, last_m
    cdef float row[N_FEATURES]
    cdef float* x
    cdef double sc, best_sc
    cdef Py_ssize_t best
    cdef int m, f
    cdef int64_t row_at
    i = start
    for a in range(start, stop):
        # entity state counts every item before a
        while i < a:
            e = v.ent[i]
            if e >= 0 and v.kind[i] != KIND_PRONOUN:
                s.count[e] += 1
                if s.first[e] < 0:
                    s.first[e] = <int32_t>i
                s.last[e] = <int32_t>i
            i += 1
        if not _is_anchor(v, a):
            continue
        m = 0 if v.kind[a] == KIND_PRONOUN else 1
        rank = 0
        seen_compatible = False
        best = -1
        best_sc = 0.0
        rule_c = -1
        row_at = cand_offset[a] if emit else 0
        c = a - 1
        while c >= start and v.sent[a] - v.sent[c] <= max_sentences:
            if v.kind[c] == KIND_PRONOUN:
                c -= 1
                continue
            rc = False
            if not seen_compatible and _compatible(v, a, c):
                rc = True
                seen_compatible = True
                rule_c = c
            e = v.ent[c]
            if e >= 0:
                sal = s.count[e]
                first_m = s.first[e] == c
                last_m = s.last[e] == c
            else:
                sal = 1
                first_m = True
                last_m = True
            x = &X[(row_at + rank) * N_FEATURES] if emit else &row[0]
            _features(v, a, c, rank, rc, sal, first_m, last_m, x)
            if emit:
                cand_item[row_at + rank] = <int32_t>c
            if w != NULL:
                sc = bias[m]
                for f in range(N_FEATURES):
                    sc = sc + w[m * N_FEATURES + f] * x[f]
                if best < 0 or sc > best_sc:
                    best = c
                    best_sc = sc
            rank += 1
            c -= 1
        n_cand += rank
        if w != NULL:
            link[a] = _decide(best, best_sc, rule_c, thr_logit[m], fallback[m], abstains[m], abst_logit[m])
            score[a] = <float>(1.0 / (1.0 + exp(-best_sc))) if best >= 0 else 0.0
    return n_cand


cdef inline int32_t _decide(Py_ssize_t best, double best_sc, Py_ssize_t rule_c, double thr_logit, uint8_t fallback,
                           uint8_t abstains, double abst_logit) noexcept nogil:
    """The link of one anchor: its best candidate when the score exceeds the threshold; else
    ABSTAIN when the model abstains (``abstains``) and the best score is below the abstain level
    or there is no candidate; else the rule's choice (the most recent compatible candidate) when
    ``fallback`` and there is one; else -1."""
    if best >= 0 and best_sc > thr_logit:
        return <int32_t>best
    if abstains != 0 and (best < 0 or best_sc < abst_logit):
        return ABSTAIN_LINK
    if fallback != 0 and rule_c >= 0:
        return <int32_t>rule_c
    return -1


def _logits(const double[::1] p):
    """log(p / (1 - p)) of each probability (-inf for 0)."""
    out = np.full(2, -np.inf)
    for m in range(2):
        if p[m] > 0.0:
            out[m] = np.log(p[m] / (1.0 - p[m]))
    return out


cdef DocScratch _scratch(Py_ssize_t n_entities):
    cdef DocScratch s
    cdef Py_ssize_t k, n = max(n_entities, 1)
    s.count = <int32_t*>malloc(n * sizeof(int32_t))
    s.first = <int32_t*>malloc(n * sizeof(int32_t))
    s.last = <int32_t*>malloc(n * sizeof(int32_t))
    if s.count == NULL or s.first == NULL or s.last == NULL:
        free(s.count)
        free(s.first)
        free(s.last)
        raise MemoryError()
    for k in range(n):
        s.count[k] = 0
        s.first[k] = -1
        s.last[k] = -1
    return s


cdef void _free(DocScratch s) noexcept:
    free(s.count)
    free(s.first)
    free(s.last)


def count_candidates(cols, role, quote, title, reflexive, Py_ssize_t n_entities, int32_t max_sentences,
                     uint8_t person_noun_compat):
    """Candidates of each item (n_items,) int64 (0 for non-anchors)."""
    cdef const int64_t[::1] offsets = cols.offsets__doc
    cdef Py_ssize_t n = cols.kind.shape[0]
    out = np.zeros(n, dtype=np.int64)
    cdef int64_t[::1] cnt = out
    cdef ItemView v = _view(cols, role, quote, title, reflexive, person_noun_compat)
    cdef Py_ssize_t a, c
    cdef int64_t start, k
    cdef Py_ssize_t d
    if n == 0:
        return out
    with nogil:
        for d in range(offsets.shape[0] - 1):
            start = offsets[d]
            for a in range(offsets[d], offsets[d + 1]):
                if not _is_anchor(&v, a):
                    continue
                k = 0
                c = a - 1
                while c >= start and v.sent[a] - v.sent[c] <= max_sentences:
                    if v.kind[c] != KIND_PRONOUN:
                        k += 1
                    c -= 1
                cnt[a] = k
    return out


def candidate_features(cols, role, quote, title, reflexive, Py_ssize_t n_entities, int32_t max_sentences,
                       uint8_t person_noun_compat):
    """Every anchor's candidates and their features, as CSR arrays.

    ``cols`` holds the item arrays (n_items,) in document order: ``kind`` int8, ``label`` int16
    (entity label index / pronoun group bit), ``compat`` uint8, ``key``/``last_token_key``
    uint64, ``entity`` int32 (rule-based entity id, -1 none; ids < ``n_entities``),
    ``sentence`` int32 (document-level), ``token``/``end_token`` int64, and ``offsets__doc``
    int64 (n_docs + 1,) item offsets of each document; ``role``/``quote``/``title``/``reflexive``
    come from :func:`item_attributes`. Candidates of an anchor are the earlier entity mentions
    and head nouns of its document at most ``max_sentences`` sentences back, nearest first.

    Returns ``(offsets__anchor int64 (n_anchors + 1,), anchor__anchor int32 (n_anchors,),
    candidate__cand int32 (n_cand,), X__cand_feat float32 (n_cand, n_features))``; anchors are
    the pronoun and entity items in item order, including those without candidates.
    """
    cdef const int64_t[::1] offsets = cols.offsets__doc
    kind = np.asarray(cols.kind)
    cnt = count_candidates(cols, role, quote, title, reflexive, n_entities, max_sentences, person_noun_compat)
    is_anchor = (kind == KIND_PRONOUN) | (kind == KIND_ENTITY)
    anchors = np.flatnonzero(is_anchor).astype(np.int32)
    offsets_anchor = np.zeros(len(anchors) + 1, dtype=np.int64)
    np.cumsum(cnt[anchors], out=offsets_anchor[1:])
    n_cand = int(offsets_anchor[len(anchors)])
    # per item: first row of its candidates (anchors only)
    item_offset = np.zeros(max(len(kind), 1), dtype=np.int64)
    item_offset[anchors] = offsets_anchor[:len(anchors)]
    cand = np.empty(n_cand, dtype=np.int32)
    X = np.empty((n_cand, N_FEATURES), dtype=np.float32)
    if len(kind) == 0:
        return offsets_anchor, anchors, cand, X
    cdef ItemView v = _view(cols, role, quote, title, reflexive, person_noun_compat)
    cdef DocScratch s = _scratch(n_entities)
    cdef int64_t[::1] io = item_offset
    cdef int32_t[::1] cand_v = cand
    cdef float[:, ::1] X_v = X
    cdef int32_t* cand_p = &cand_v[0] if n_cand else NULL
    cdef float* X_p = &X_v[0, 0] if n_cand else NULL
    cdef Py_ssize_t d
    try:
        with nogil:
            for d in range(offsets.shape[0] - 1):
                _doc_pass(&v, offsets[d], offsets[d + 1], max_sentences, s, True, &io[0], cand_p, X_p,
                          NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
    finally:
        _free(s)
    return offsets_anchor, anchors, cand, X


def link_antecedents(cols, role, quote, title, reflexive, Py_ssize_t n_entities, int32_t max_sentences,
                     uint8_t person_noun_compat, const double[:, ::1] weights, const double[::1] bias,
                     const double[::1] threshold, const uint8_t[::1] fallback, const double[::1] abstain,
                     int n_threads=1):
    """Score every anchor's candidates with the linear model and pick the links.

    Inputs as :func:`candidate_features`; ``weights`` (2, n_features) float64 (row 0 pronouns,
    row 1 names), ``bias`` (2,), ``threshold`` (2,) probabilities in (0, 1), ``fallback`` (2,)
    uint8 per row. The features are computed one row at a time (no matrix). The best candidate
    (highest score; ties: the nearest) becomes the link when ``1 / (1 + exp(-score)) >
    threshold``; otherwise, when ``fallback`` is 1, the rule's choice (the candidate of feature
    ``rule_choice``: a pronoun's most recent compatible candidate, a name's most recent mention
    of its rule-based entity) when there is one, else no link (-1). ``abstain`` (2,) probabilities
    in [0, threshold]: above 0, an anchor whose best probability is below it (or that has no
    candidate) gets ``ABSTAIN`` (-2) instead: the model declines to anchor it.

    Returns ``(link__item int32 (-1: no link, or not an anchor), score__item float32 (the
    best candidate's probability, 0 without candidates, -1 for non-anchors))``. Documents run
    in parallel (``n_threads``); results do not depend on it.
    """
    cdef const int64_t[::1] offsets = cols.offsets__doc
    cdef Py_ssize_t n = cols.kind.shape[0]
    link = np.full(n, -1, dtype=np.int32)
    score = np.full(n, -1.0, dtype=np.float32)
    if n == 0:
        return link, score
    cdef double thr_logit[2]
    cdef double abst_logit[2]
    cdef uint8_t abstains[2]
    cdef int m
    al = _logits(abstain)
    for m in range(2):
        thr_logit[m] = np.log(threshold[m] / (1.0 - threshold[m]))
        abst_logit[m] = al[m]
        abstains[m] = abstain[m] > 0.0
    cdef ItemView v = _view(cols, role, quote, title, reflexive, person_noun_compat)
    cdef DocScratch s = _scratch(n_entities)
    cdef int32_t[::1] link_v = link
    cdef float[::1] score_v = score
    cdef Py_ssize_t d
    try:
        with nogil:
            for d in prange(offsets.shape[0] - 1, num_threads=max(n_threads, 1), schedule="dynamic", chunksize=16):
                _doc_pass(&v, offsets[d], offsets[d + 1], max_sentences, s, False, NULL, NULL, NULL,
                          &weights[0, 0], &bias[0], &thr_logit[0], &fallback[0], &abst_logit[0], &abstains[0],
                          &link_v[0], &score_v[0])
    finally:
        _free(s)
    return link, score


def score_candidates(const int64_t[::1] offsets__anchor, const int32_t[::1] anchor__anchor,
                     const int32_t[::1] candidate__cand, const float[:, ::1] X, const int8_t[::1] model__anchor,
                     const double[:, ::1] weights, const double[::1] bias, const double[::1] threshold,
                     const uint8_t[::1] fallback, const double[::1] abstain, Py_ssize_t rule_col,
                     Py_ssize_t n_items):
    """:func:`link_antecedents` on a CSR matrix from :func:`candidate_features`:
    ``model__anchor`` (n_anchors,) 0 pronoun / 1 name; the rule's choice (the fallback) is the
    candidate whose column ``rule_col`` is 1. Returns ``(link__item, score__item)``."""
    cdef Py_ssize_t n_anchors = anchor__anchor.shape[0]
    cdef Py_ssize_t j, r, f, best, rule_c
    cdef int m
    cdef double sc, best_sc, tl
    link = np.full(n_items, -1, dtype=np.int32)
    score = np.full(n_items, -1.0, dtype=np.float32)
    cdef int32_t[::1] link_v = link
    cdef float[::1] score_v = score
    cdef Py_ssize_t n_feat = X.shape[1]
    cdef double thr_logit[2]
    cdef double abst_logit[2]
    cdef uint8_t abstains[2]
    al = _logits(abstain)
    for m in range(2):
        thr_logit[m] = np.log(threshold[m] / (1.0 - threshold[m]))
        abst_logit[m] = al[m]
        abstains[m] = abstain[m] > 0.0
    for j in range(n_anchors):
        m = model__anchor[j]
        tl = thr_logit[m]
        best = -1
        best_sc = 0.0
        rule_c = -1
        for r in range(offsets__anchor[j], offsets__anchor[j + 1]):
            if rule_c < 0 and X[r, rule_col] != 0:
                rule_c = candidate__cand[r]
            sc = bias[m]
            for f in range(n_feat):
                sc = sc + weights[m, f] * X[r, f]
            if best < 0 or sc > best_sc:
                best = candidate__cand[r]
                best_sc = sc
        link_v[anchor__anchor[j]] = _decide(best, best_sc, rule_c, tl, fallback[m], abstains[m], abst_logit[m])
        score_v[anchor__anchor[j]] = <float>(1.0 / (1.0 + exp(-best_sc))) if best >= 0 else 0.0
    return link, score


def learned_distances(
    const int64_t[::1] offsets__doc,
    const int8_t[::1] kind__item,
    const int32_t[::1] sentence__item,
    const int32_t[::1] link__item,
    const int32_t[::1] segment__item,
    const int32_t[::1] gsentence__item,
    Py_ssize_t n_segments,
    Py_ssize_t n_sentences,
    bint nearest,
):
    """Clusters and anchor distances (sentences) from the learned links.

    Items in document order: an entity mention joins the cluster of its link (a new cluster
    without one), a head noun starts its own cluster, a pronoun takes its link's cluster.
    Distance of a linked anchor: to the first item of the link's cluster (``nearest``: to the
    link itself); an unlinked entity mention is a first mention (-1); an unlinked pronoun
    gets 1 (today's rule when nothing compatible precedes it), an ABSTAIN pronoun -1 (no
    distance, no DDP); head nouns -1.

    Returns ``(distance__item int32, antecedent__item int32, reference__item int32,
    cluster__item int32 (-1 for pronouns), ddp__segment int32[n_segments],
    ddp__sentence int32[n_sentences])``; distances > 0 set the per-sentence and per-segment
    maxima (the DDP).
    """
    cdef Py_ssize_t n = kind__item.shape[0]
    distance = np.full(n, -1, dtype=np.int32)
    antecedent = np.full(n, -1, dtype=np.int32)
    reference = np.full(n, -1, dtype=np.int32)
    cluster = np.full(n, -1, dtype=np.int32)
    first_of = np.full(max(n, 1), -1, dtype=np.int32)
    ddp_seg = np.zeros(n_segments, dtype=np.int32)
    ddp_sent = np.zeros(n_sentences, dtype=np.int32)
    cdef int32_t[::1] dist = distance
    cdef int32_t[::1] ante = antecedent
    cdef int32_t[::1] ref = reference
    cdef int32_t[::1] cl = cluster
    cdef int32_t[::1] first = first_of
    cdef int32_t[::1] dseg = ddp_seg
    cdef int32_t[::1] dsent = ddp_sent
    cdef int32_t next_cluster = 0, l, r, d, k
    cdef Py_ssize_t i
    with nogil:
        for i in range(n):
            l = link__item[i]
            d = -1
            r = -1
            if kind__item[i] == KIND_NOUN:
                cl[i] = next_cluster
                first[next_cluster] = <int32_t>i
                next_cluster += 1
            elif kind__item[i] == KIND_ENTITY:
                if l >= 0:
                    k = cl[l]
                    cl[i] = k
                    r = l if nearest else first[k]
                    d = sentence__item[i] - sentence__item[r]
                    ante[i] = l
                else:
                    cl[i] = next_cluster
                    first[next_cluster] = <int32_t>i
                    next_cluster += 1
            elif kind__item[i] == KIND_PRONOUN:
                if l >= 0:
                    r = l if nearest else first[cl[l]]
                    d = sentence__item[i] - sentence__item[r]
                    ante[i] = l
                elif l != ABSTAIN_LINK:
                    d = 1
            dist[i] = d
            ref[i] = r
            if d > 0:
                raise_ddp(d, &dsent[gsentence__item[i]], &dseg[segment__item[i]])
    return distance, antecedent, reference, cluster, ddp_seg, ddp_sent
