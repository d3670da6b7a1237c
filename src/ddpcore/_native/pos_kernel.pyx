# cython: language_level=3
"""spaCy's attribute ruler as compiled hash tables, applied over flat token arrays.

``apply_ruler`` computes, for every token, the POS / TAG / DEP that spaCy's
``AttributeRuler`` would set, from the token attribute columns its patterns read and the
rules compiled by :func:`ddpcore.anchors.pos_rules.compile_pos_rules` (which documents the
table layout and validates everything; this kernel trusts its inputs and runs without
bounds checks).

Semantics (spaCy 3 ``AttributeRuler.match`` + ``set_annotations``): every pattern is
matched against the *original* attribute values of a parse unit (matches never cross
units); a match of rule ``r`` sets rule ``r``'s attributes on the token ``index`` of the
match; when several matches set the same attribute of one token, the rule added last (the
highest ``r``) wins. Tokens no rule reaches keep their input values.

Candidates are found through one hash table per dispatch column (the value of a token in
that column -> the sequences whose first-token condition can hold); sequences without such
a condition are tried at every token. Every candidate is then checked condition by
condition (sorted value sets, binary search), so the dispatch tables only ever narrow the
search.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector
from cython.operator cimport dereference as deref

cnp.import_array()


cdef inline bint _in_sorted(const uint64_t[::1] values, int64_t lo, int64_t hi, uint64_t x) noexcept nogil:
    # is x among values[lo:hi] (sorted ascending)?
    cdef int64_t mid, stop = hi
    while lo < hi:
        mid = (lo + hi) >> 1
        if values[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo < stop and values[lo] == x


def apply_ruler(values__tok_attr, n_tokens__unit, pos__tok, tag__tok, dep__tok, rules):
    """POS (int32), TAG and DEP (uint64 StringStore hashes) of ``n_tok`` tokens after the rules.

    ``values__tok_attr``: uint64 ``(n_tok, n_attr)`` C-contiguous, the attribute columns the
    rules read (``rules.attrs``, as ``Doc.to_array`` returns them); ``n_tokens__unit``: int64
    ``(n_units,)`` tokens per parse unit (sum ``n_tok``); ``pos__tok`` int32, ``tag__tok`` and
    ``dep__tok`` uint64 ``(n_tok,)``: the values before the rules. ``rules``: a
    :class:`ddpcore.anchors.pos_rules.PosRules`. Returns three new arrays ``(pos, tag, dep)``.
    """
    cdef const uint64_t[:, ::1] X = values__tok_attr
    cdef const int64_t[::1] n_tok_unit = n_tokens__unit
    cdef const int32_t[::1] pos_in = pos__tok
    cdef const uint64_t[::1] tag_in = tag__tok
    cdef const uint64_t[::1] dep_in = dep__tok
    # sequences (n_seq,) and their conditions (n_cond,)
    cdef const int32_t[::1] seq_rule = rules.seq_rule
    cdef const int32_t[::1] seq_len = rules.seq_len
    cdef const int32_t[::1] seq_target = rules.seq_target
    cdef const int64_t[::1] seq_cond_start = rules.seq_cond_start
    cdef const int32_t[::1] cond_offset = rules.cond_offset
    cdef const int32_t[::1] cond_attr = rules.cond_attr
    cdef const uint8_t[::1] cond_negate = rules.cond_negate
    cdef const int64_t[::1] cond_value_start = rules.cond_value_start
    cdef const uint64_t[::1] cond_values = rules.cond_values
    # dispatch: slot -> column; group g = (slot, value) -> sequences group_seq[group_seq_start[g]:...]
    cdef const int32_t[::1] slot_attr = rules.dispatch_slot_attr
    cdef const int32_t[::1] group_slot = rules.dispatch_group_slot
    cdef const uint64_t[::1] group_value = rules.dispatch_group_value
    cdef const int64_t[::1] group_seq_start = rules.dispatch_group_seq_start
    cdef const int32_t[::1] group_seq = rules.dispatch_group_seq
    cdef const int32_t[::1] always_seq = rules.always_seq
    # outputs of each rule (n_rules,)
    cdef const int32_t[::1] rule_pos = rules.rule_pos
    cdef const uint8_t[::1] rule_sets_pos = rules.rule_sets_pos
    cdef const uint64_t[::1] rule_tag = rules.rule_tag
    cdef const uint8_t[::1] rule_sets_tag = rules.rule_sets_tag
    cdef const uint64_t[::1] rule_dep = rules.rule_dep
    cdef const uint8_t[::1] rule_sets_dep = rules.rule_sets_dep

    cdef Py_ssize_t n = pos_in.shape[0]
    cdef Py_ssize_t n_slots = slot_attr.shape[0]
    cdef Py_ssize_t n_always = always_seq.shape[0]
    cdef vector[unordered_map[uint64_t, int64_t]] tables
    tables.resize(n_slots)
    cdef Py_ssize_t g, u, i, k, j, j_end, s, start, end, t, target
    for g in range(group_slot.shape[0]):
        tables[group_slot[g]][group_value[g]] = g

    best_pos = np.full(n, -1, dtype=np.int32)
    best_tag = np.full(n, -1, dtype=np.int32)
    best_dep = np.full(n, -1, dtype=np.int32)
    cdef int32_t[::1] b_pos = best_pos
    cdef int32_t[::1] b_tag = best_tag
    cdef int32_t[::1] b_dep = best_dep
    cdef unordered_map[uint64_t, int64_t].iterator hit
    cdef int32_t r
    cdef bint ok, found

    with nogil:
        start = 0
        for u in range(n_tok_unit.shape[0]):
            end = start + n_tok_unit[u]
            for i in range(start, end):
                # candidates from the dispatch tables, then the sequences tried everywhere
                for k in range(n_slots + 1):
                    if k < n_slots:
                        hit = tables[k].find(X[i, slot_attr[k]])
                        if hit == tables[k].end():
                            continue
                        g = deref(hit).second
                        j = group_seq_start[g]
                        j_end = group_seq_start[g + 1]
                    else:
                        j = 0
                        j_end = n_always
                    while j < j_end:
                        if k < n_slots:
                            s = group_seq[j]
                        else:
                            s = always_seq[j]
                        j += 1
                        if i + seq_len[s] > end:
                            continue
                        ok = True
                        for t in range(seq_cond_start[s], seq_cond_start[s + 1]):
                            found = _in_sorted(cond_values, cond_value_start[t], cond_value_start[t + 1],
                                               X[i + cond_offset[t], cond_attr[t]])
                            if found == <bint>cond_negate[t]:
                                ok = False
                                break
                        if not ok:
                            continue
                        target = i + seq_target[s]
                        r = seq_rule[s]
                        if rule_sets_pos[r] and r > b_pos[target]:
                            b_pos[target] = r
                        if rule_sets_tag[r] and r > b_tag[target]:
                            b_tag[target] = r
                        if rule_sets_dep[r] and r > b_dep[target]:
                            b_dep[target] = r
            start = end

    out_pos = np.array(pos__tok, dtype=np.int32, copy=True)
    out_tag = np.array(tag__tok, dtype=np.uint64, copy=True)
    out_dep = np.array(dep__tok, dtype=np.uint64, copy=True)
    cdef int32_t[::1] o_pos = out_pos
    cdef uint64_t[::1] o_tag = out_tag
    cdef uint64_t[::1] o_dep = out_dep
    with nogil:
        for i in range(n):
            if b_pos[i] >= 0:
                o_pos[i] = rule_pos[b_pos[i]]
            if b_tag[i] >= 0:
                o_tag[i] = rule_tag[b_tag[i]]
            if b_dep[i] >= 0:
                o_dep[i] = rule_dep[b_dep[i]]
    return out_pos, out_tag, out_dep
