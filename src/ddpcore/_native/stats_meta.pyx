# cython: language_level=3
"""Kernels of ``ddp meta`` (metric-human agreement): pair enumeration for the tie calibration of
``acc_eq`` without grouping, and the weighted Kendall counts of a document-bootstrap replicate.

No validation, no I/O: :mod:`ddpcore.stats.meta` checks shapes and values and calls these.
Slow, obviously-correct oracles live in ``tests/oracles/meta_oracle.py``.

Kernels
-------
``tie_entries_sorted``  the pairs whose class changes when the metric's tie threshold passes their
                        metric difference (human tie: gained; concordant: lost), for one vector sorted
                        by metric score
``item_pairs``          per segment over its systems: Pearson, tau-b, pair counts and the tie-calibration
                        entries of ``acc_eq`` grouped by item
``tau_b_weighted_reps`` Kendall tau-b of every document-bootstrap replicate (points weighted by their
                        document's multiplicity), O(n log L) per replicate with a Fenwick tree over
                        the ranking of L distinct values, OpenMP over replicates
``argsort_f64``          the stable ascending order of a float64 vector (LSD radix sort of the IEEE bit patterns,
                        8-bit digits, passes whose digit is the same for every key skipped): the order of the
                        tie-calibration entries by |metric difference|, ~3x numpy's argsort on millions
``calibrate_bins``      the tie threshold of ``acc_eq`` grouped by item for every bin at once, in one pass over
                        the entries sorted by |metric difference|, and each item's flipped pairs at its bin's
                        threshold
``acc_eq_weighted_reps`` acc23 at a fixed tie threshold of every document-bootstrap replicate (the same
                        weights), O(n log n) per replicate: a Fenwick tree over human ranks for the
                        concordant pairs beyond the threshold, a sliding window for the human ties within it
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange, threadid
from libc.math cimport sqrt, INFINITY, NAN
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memcpy, memset
from libc.stdlib cimport malloc, free

from .threads cimport resolve_threads as _threads
from .meta_i32 cimport ddp_meta_has_avx2, ddp_tau_block_i32, ddp_acc_block_i32, ddp_tau_acc_block_i32

cnp.import_array()


def tie_entries_sorted(const double[::1] h__pt, const double[::1] m__pt, double[::1] diff__ent,
                       int8_t[::1] sign__ent):
    """Pairs i < j of points sorted by metric score (``m__pt`` ascending, so ``m[j] - m[i] >= 0``).

    A pair whose metric difference ``d = m[j] - m[i]`` is > 0 changes class when the tie threshold
    epsilon reaches d (``|d| <= epsilon`` makes it a metric tie): a pair tied in the human scores
    becomes a correct tie (``sign +1``, a gain), a concordant pair (``h[j] > h[i]``) stops counting
    (``sign -1``, a loss); a discordant pair stays wrong and is not written. ``diff__ent`` and
    ``sign__ent`` must hold n (n - 1) / 2 entries. Returns ``(n_entries, con0, ties_both0)``: the
    entries written, the concordant pairs and the pairs tied in both at epsilon = 0.
    """
    cdef Py_ssize_t n = h__pt.shape[0], i, j, k = 0
    cdef int64_t con0 = 0, tb0 = 0
    cdef double d, dh
    with nogil:
        for i in range(n):
            for j in range(i + 1, n):
                d = m__pt[j] - m__pt[i]
                dh = h__pt[j] - h__pt[i]
                if d == 0.0:
                    if dh == 0.0:
                        tb0 += 1
                    continue
                if dh == 0.0:
                    diff__ent[k] = d
                    sign__ent[k] = 1
                    k += 1
                elif dh > 0.0:
                    con0 += 1
                    diff__ent[k] = d
                    sign__ent[k] = -1
                    k += 1
    return k, con0, tb0


cdef enum:
    _RADIX_BITS = 8
    _RADIX = 256  # 1 << _RADIX_BITS
    _RADIX_PASSES = 8  # 64 / 8


cdef struct _KeyIdx:
    uint64_t key
    int64_t idx


cdef inline uint64_t _f64_key(double x) noexcept nogil:
    """The order-preserving transform of a double's bit pattern (negative: all bits flipped, else the sign
    bit set); -0.0 is +0.0."""
    cdef uint64_t u
    memcpy(&u, &x, 8)
    if u == (<uint64_t>1 << 63):
        u = 0  # -0.0 is +0.0 (equal values keep their index order, as in numpy)
    if u >> 63:
        return ~u
    return u | (<uint64_t>1 << 63)


cdef inline double _f64_from_key(uint64_t u) noexcept nogil:
    """The inverse of :func:`_f64_key` (-0.0 comes back as +0.0)."""
    cdef double x
    if u >> 63:
        u = u & ~(<uint64_t>1 << 63)
    else:
        u = ~u
    memcpy(&x, &u, 8)
    return x


cdef _KeyIdx* _radix_sort(_KeyIdx* rec, _KeyIdx* rec2, Py_ssize_t n, Py_ssize_t* count) noexcept nogil:
    """Stable LSD radix sort of ``n`` (key, payload) records by key, 8 bits per pass, a pass whose digit is
    the same in every key skipped; ``rec2`` the scratch, ``count`` ``_RADIX_PASSES * _RADIX`` counters.
    Returns the buffer holding the sorted records (``rec`` or ``rec2``)."""
    cdef Py_ssize_t i, b, p, run, c, shift
    cdef Py_ssize_t* cnt
    cdef _KeyIdx* tr
    cdef uint64_t u
    memset(count, 0, _RADIX_PASSES * _RADIX * sizeof(Py_ssize_t))
    for i in range(n):
        u = rec[i].key
        for p in range(_RADIX_PASSES):
            count[p * _RADIX + <Py_ssize_t>((u >> (p * _RADIX_BITS)) & (_RADIX - 1))] += 1
    for p in range(_RADIX_PASSES):
        shift = p * _RADIX_BITS
        cnt = count + p * _RADIX
        if cnt[(rec[0].key >> shift) & (_RADIX - 1)] == n:
            continue  # one digit value for every key: the pass would not move anything
        run = 0
        for b in range(_RADIX):
            c = cnt[b]
            cnt[b] = run
            run += c
        for i in range(n):
            b = <Py_ssize_t>((rec[i].key >> shift) & (_RADIX - 1))
            rec2[cnt[b]] = rec[i]
            cnt[b] += 1
        tr = rec
        rec = rec2
        rec2 = tr
    return rec


cdef int _radix_buffers(Py_ssize_t n, _KeyIdx** rec, _KeyIdx** rec2, Py_ssize_t** count) except -1:
    """The records, their scratch and the digit counters of :func:`_radix_sort` for ``n`` records (the caller
    frees all three); MemoryError, with nothing left allocated, when one fails."""
    rec[0] = <_KeyIdx*>malloc(<size_t>n * sizeof(_KeyIdx))
    rec2[0] = <_KeyIdx*>malloc(<size_t>n * sizeof(_KeyIdx))
    count[0] = <Py_ssize_t*>malloc(_RADIX_PASSES * _RADIX * sizeof(Py_ssize_t))
    if rec[0] == NULL or rec2[0] == NULL or count[0] == NULL:
        free(rec[0]); free(rec2[0]); free(count[0])
        rec[0] = NULL
        rec2[0] = NULL
        count[0] = NULL
        raise MemoryError()
    return 0


def argsort_f64(const double[::1] x__n, int64_t[::1] order__n):
    """The stable ascending order of ``x`` into ``order`` (same length): ``x[order]`` is sorted and equal
    values keep their index order, i.e. ``numpy.argsort(x, kind="stable")``. NaN is not allowed (the caller
    checks); -0.0 and +0.0 are equal. LSD radix sort of (key, index) records (:func:`_radix_sort`), the key
    the order-preserving transform of the bit patterns. O(n) time, 32 n bytes of scratch."""
    cdef Py_ssize_t n = x__n.shape[0], i
    if order__n.shape[0] != n:
        raise ValueError("argsort_f64: order must have the length of x")
    if n == 0:
        return
    cdef _KeyIdx* rec = NULL
    cdef _KeyIdx* rec2 = NULL
    cdef Py_ssize_t* count = NULL
    cdef _KeyIdx* srt
    _radix_buffers(n, &rec, &rec2, &count)
    try:
        with nogil:
            for i in range(n):
                rec[i].key = _f64_key(x__n[i])
                rec[i].idx = i
            srt = _radix_sort(rec, rec2, n, count)
            for i in range(n):
                order__n[i] = srt[i].idx
    finally:
        free(rec)
        free(rec2)
        free(count)


def sort_entries(const int64_t[::1] item__ent, const double[::1] adm__ent, const double[::1] sign__ent,
                 int64_t[::1] item__out, double[::1] adm__out, double[::1] sign__out):
    """The tie-calibration entries sorted by ``adm`` (``|metric difference|`` >= 0) ascending, stable: the
    outputs equal ``x[numpy.argsort(adm, kind="stable")]`` for each of the three inputs, without the three
    random gathers (each record carries its item, with the sign (+1 / -1) in the top bit, through the radix
    passes of :func:`argsort_f64`). ``item`` in 0 .. 2**63 - 1; a -0.0 in ``adm`` comes back as +0.0."""
    cdef Py_ssize_t n = adm__ent.shape[0], i
    if not (item__ent.shape[0] == sign__ent.shape[0] == item__out.shape[0] == adm__out.shape[0]
            == sign__out.shape[0] == n):
        raise ValueError("sort_entries: every array must have the length of adm")
    if n == 0:
        return
    cdef _KeyIdx* rec = NULL
    cdef _KeyIdx* rec2 = NULL
    cdef Py_ssize_t* count = NULL
    cdef _KeyIdx* srt
    cdef uint64_t top = <uint64_t>1 << 63
    _radix_buffers(n, &rec, &rec2, &count)
    try:
        with nogil:
            for i in range(n):
                rec[i].key = _f64_key(adm__ent[i])
                rec[i].idx = <int64_t>(<uint64_t>item__ent[i] | (top if sign__ent[i] < 0.0 else 0))
            srt = _radix_sort(rec, rec2, n, count)
            for i in range(n):
                adm__out[i] = _f64_from_key(srt[i].key)
                item__out[i] = <int64_t>(<uint64_t>srt[i].idx & ~top)
                sign__out[i] = -1.0 if <uint64_t>srt[i].idx & top else 1.0
    finally:
        free(rec)
        free(rec2)
        free(count)


def calibrate_bins(const int64_t[::1] item__ent, const double[::1] adm__ent, const double[::1] sign__ent,
                   const int64_t[::1] bin__item, const double[::1] w__item, const double[::1] base__bin,
                   double[::1] eps__bin, double[::1] flip__item):
    """``acc_eq.item``'s tie calibration of every bin in one pass (what ``calibrate_ties(presorted=True)``
    and the flip count do bin by bin on the entries of the bin's items, in the same order and with the same
    floating-point operations, so the results are identical).

    Entries sorted by ``adm`` ascending (pairs whose class changes when the threshold reaches ``adm``; ``sign``
    +1 a gain, -1 a loss); ``bin__item`` each item's bin (< 0: in none), ``w__item`` its weight (1 / its pairs
    / the bin's items with a pair), ``base__bin`` the objective at threshold 0. The objective of bin b after
    a run of equal ``adm`` is ``base[b] + sum of sign * w`` over its entries so far; ``eps[b]`` is the
    smallest ``adm`` reaching its maximum, 0 unless that maximum exceeds ``base[b]``; ``flip[item]`` the sum of
    ``sign`` over the item's entries with ``adm <= eps[its bin]`` (0 for an item in no bin).
    """
    cdef Py_ssize_t n = item__ent.shape[0], n_bins = base__bin.shape[0], n_items = bin__item.shape[0]
    cdef Py_ssize_t i, it, b, t, n_touched = 0
    cdef double obj
    if adm__ent.shape[0] != n or sign__ent.shape[0] != n or w__item.shape[0] != n_items \
            or flip__item.shape[0] != n_items or eps__bin.shape[0] != n_bins:
        raise ValueError("calibrate_bins: array lengths disagree")
    cdef double* cum = <double*>malloc((n_bins + 1) * sizeof(double))
    cdef double* best = <double*>malloc((n_bins + 1) * sizeof(double))
    cdef Py_ssize_t* touched = <Py_ssize_t*>malloc((n_bins + 1) * sizeof(Py_ssize_t))
    cdef uint8_t* is_touched = <uint8_t*>malloc(n_bins + 1)
    if cum == NULL or best == NULL or touched == NULL or is_touched == NULL:
        free(cum); free(best); free(touched); free(is_touched)
        raise MemoryError()
    try:
        with nogil:
            for b in range(n_bins):
                cum[b] = 0.0
                best[b] = -INFINITY
                eps__bin[b] = 0.0
                is_touched[b] = 0
            for i in range(n):
                it = item__ent[i]
                b = bin__item[it]
                if b >= 0:
                    cum[b] = cum[b] + sign__ent[i] * w__item[it]
                    if not is_touched[b]:
                        is_touched[b] = 1
                        touched[n_touched] = b
                        n_touched += 1
                if i == n - 1 or adm__ent[i + 1] != adm__ent[i]:  # the end of a run of equal |dm|
                    for t in range(n_touched):
                        b = touched[t]
                        obj = base__bin[b] + cum[b]
                        if obj > best[b]:
                            best[b] = obj
                            eps__bin[b] = adm__ent[i]
                        is_touched[b] = 0
                    n_touched = 0
            for b in range(n_bins):
                if not (best[b] > base__bin[b]):
                    eps__bin[b] = 0.0
            for it in range(n_items):
                flip__item[it] = 0.0
            for i in range(n):
                it = item__ent[i]
                b = bin__item[it]
                if b >= 0 and adm__ent[i] <= eps__bin[b]:
                    flip__item[it] = flip__item[it] + sign__ent[i]
    finally:
        free(cum)
        free(best)
        free(touched)
        free(is_touched)


cdef double* _replicate_buffers(Py_ssize_t n, Py_ssize_t n_rep, Py_ssize_t width, int num_threads,
                                double[::1] out__rep, int* nt) except? NULL:
    """The per-thread work buffers of a replicate kernel (``width`` doubles each; at most one thread per
    replicate). NULL (and ``out`` NaN) when there is no point or no replicate; MemoryError when it fails."""
    nt[0] = _threads(num_threads)
    if n == 0 or n_rep == 0:
        out__rep[:] = NAN
        return NULL
    if nt[0] > n_rep:
        nt[0] = <int>n_rep
    cdef double* buf = <double*>malloc(<size_t>nt[0] * <size_t>width * sizeof(double))
    if buf == NULL:
        raise MemoryError()
    return buf


cdef double _tau_b_weighted(const int64_t* h_rank, const int64_t* m_rank, const int64_t* doc,
                            const double* w_doc, Py_ssize_t n, Py_ssize_t n_m_ranks, double* tree,
                            double* mt) noexcept nogil:
    """tau-b of the points sorted by h rank, each point weighted by its document's multiplicity."""
    cdef Py_ssize_t i, j, k, g0
    cdef double s = 0.0, wt = 0.0, th = 0.0, tm = 0.0, seen = 0.0, grp, wi, le, lt, n0
    for k in range(n_m_ranks + 1):
        tree[k] = 0.0
        mt[k] = 0.0
    i = 0
    while i < n:
        g0 = i
        grp = 0.0
        while i < n and h_rank[i] == h_rank[g0]:
            wi = w_doc[doc[i]]
            if wi != 0.0:
                # one prefix query: the inserted weight with m rank <= m_rank[i]; those with an equal m rank
                # are mt[m_rank[i]] (mt holds the inserted weight per m rank), so lt = le - mt
                le = 0.0
                k = m_rank[i]
                while k > 0:
                    le += tree[k]
                    k -= k & (-k)
                lt = le - mt[m_rank[i]]
                # earlier runs have a smaller h: a smaller m is concordant, a larger m discordant
                s += wi * (lt - (seen - le))
                grp += wi
            i += 1
        th += grp * (grp - 1.0) / 2.0
        for j in range(g0, i):
            wi = w_doc[doc[j]]
            if wi != 0.0:
                k = m_rank[j]
                mt[k] += wi
                while k <= n_m_ranks:
                    tree[k] += wi
                    k += k & (-k)
        seen += grp
    wt = seen
    for k in range(1, n_m_ranks + 1):
        tm += mt[k] * (mt[k] - 1.0) / 2.0
    n0 = wt * (wt - 1.0) / 2.0
    if n0 - th <= 0.0 or n0 - tm <= 0.0:
        return NAN
    # one product under the root: the same bits whichever of the two rankings is the tree's (the caller may swap them)
    return s / sqrt((n0 - th) * (n0 - tm))


cdef enum:
    _RB = 32  # most replicates per pass of tau_b_weighted_reps (the per-pass arrays' size)

#: largest trees (ranks) walked for 32 and for 8 replicates at once (:func:`block_width`): 16 B per rank and
#: replicate; above, the block's trees no longer stay in the caches
cdef enum:
    _BLOCK32_MAX_RANKS = 2048
    _BLOCK8_MAX_RANKS = 16384
BLOCK32_MAX_RANKS = _BLOCK32_MAX_RANKS
BLOCK_MAX_RANKS = _BLOCK8_MAX_RANKS


cdef Py_ssize_t _block_weights(const double* w, Py_ssize_t n_rep, Py_ssize_t n_doc, Py_ssize_t r0, Py_ssize_t rb,
                               double* wt) noexcept nogil:
    """The document weights of replicates ``r0 .. r0 + rb - 1`` of ``w`` ((n_rep, n_doc), C order) into ``wt``
    ((n_doc, rb), document-major); replicates past ``n_rep`` weigh 0. Returns how many are real."""
    cdef Py_ssize_t nv = n_rep - r0, d, q
    if nv > rb:
        nv = rb
    for d in range(n_doc):
        for q in range(rb):
            wt[d * rb + q] = w[(r0 + q) * n_doc + d] if q < nv else 0.0
    return nv


#: the blocked walks' arithmetic (:func:`set_block_path`): 0 auto, 1 doubles, 2 32-bit integers on the
#: baseline instruction set, 3 32-bit integers with AVX2
cdef int _PATH = 0
cdef int _HAS_AVX2 = ddp_meta_has_avx2()
#: a replicate's total weight (points counted with their multiplicity) below which the 32-bit walk is
#: exact and gives the double walk's bits: every tree node, count and difference is then below 2**27 in
#: magnitude, and every product and sum taken in double precision (at most 2**52) is exact, as in the
#: double walk
I32_MAX_TOTAL = 1 << 26
_PATH_NAMES = {"auto": 0, "f64": 1, "i32": 2, "i32-avx2": 3}


def set_block_path(str name) -> None:
    """Which arithmetic the blocked walks of :func:`tau_b_weighted_reps` and :func:`acc_eq_weighted_reps`
    use: ``"auto"`` (the default: 32-bit integer trees when the weights allow them exactly, with AVX2 when
    the CPU has it, else doubles), ``"f64"`` (double trees), ``"i32"`` (integer trees, baseline
    instructions) or ``"i32-avx2"``. Every path gives the same bits; tests and benchmarks pin one."""
    global _PATH
    if name not in _PATH_NAMES:
        raise ValueError(f"set_block_path: one of {sorted(_PATH_NAMES)}, got {name!r}")
    if name == "i32-avx2" and not _HAS_AVX2:
        raise ValueError("set_block_path: this CPU (or this build) has no AVX2")
    _PATH = _PATH_NAMES[name]


def block_path() -> str:
    """The arithmetic ``"auto"`` resolves to here when the weights allow integers (``"i32-avx2"`` or
    ``"i32"``), or the pinned one."""
    if _PATH == 0:
        return "i32-avx2" if _HAS_AVX2 else "i32"
    return {1: "f64", 2: "i32", 3: "i32-avx2"}[_PATH]


def _int_weights_ok(const double[:, ::1] w__rep_doc, const int64_t[::1] doc__pt) -> bool:
    """Whether every weight is a whole number >= 0 and every replicate's total weight (each point counted
    ``w[r, doc]`` times) is below :data:`I32_MAX_TOTAL`: the 32-bit walk is then exact."""
    w = np.asarray(w__rep_doc)
    if w.size == 0:
        return True
    if not (np.all(w >= 0.0) and np.all(w == np.floor(w)) and float(w.max()) < I32_MAX_TOTAL):
        return False
    per_doc = np.bincount(np.asarray(doc__pt), minlength=w.shape[1]).astype(np.float64)
    return float((w @ per_doc).max()) < I32_MAX_TOTAL


cdef int _i32_mode(Py_ssize_t rb, const double[:, ::1] w__rep_doc, const int64_t[::1] doc__pt) except -1:
    """-1 never (errors raise); 0: the double walk; 1: 32-bit, baseline; 2: 32-bit, AVX2."""
    if _PATH == 1 or (rb != 32 and rb != 8):
        return 0
    if not _int_weights_ok(w__rep_doc, doc__pt):
        if _PATH >= 2:
            raise ValueError("the 32-bit walk was pinned (set_block_path) but the weights are not whole "
                             f"numbers >= 0 with every replicate's total below {I32_MAX_TOTAL}")
        return 0
    if _PATH == 2:
        return 1
    return 2 if _HAS_AVX2 else 1


cdef int32_t* _i32_buffers(Py_ssize_t n_blocks, Py_ssize_t width, int num_threads, int* nt) except NULL:
    """The per-thread work buffers of a 32-bit blocked walk (``width`` integers each; at most one thread per
    block); MemoryError when it fails."""
    nt[0] = _threads(num_threads)
    if nt[0] > n_blocks:
        nt[0] = <int>n_blocks
    cdef int32_t* buf = <int32_t*>malloc(<size_t>nt[0] * <size_t>width * sizeof(int32_t))
    if buf == NULL:
        raise MemoryError()
    return buf


cdef Py_ssize_t _block_weights_i32(const double* w, Py_ssize_t n_rep, Py_ssize_t n_doc, Py_ssize_t r0,
                                   Py_ssize_t rb, int32_t* wt) noexcept nogil:
    """:func:`_block_weights` into 32-bit integers (the weights are whole numbers, checked by the caller).
    Returns how many replicates are real."""
    cdef Py_ssize_t nv = n_rep - r0, d, q
    if nv > rb:
        nv = rb
    for d in range(n_doc):
        for q in range(rb):
            wt[d * rb + q] = <int32_t>w[(r0 + q) * n_doc + d] if q < nv else 0
    return nv


cdef void _tau_b_block(const int64_t* h_rank, const int64_t* m_rank, const int64_t* doc, const double* wt,
                       Py_ssize_t n, Py_ssize_t n_m_ranks, double* tree, double* mt, double* out,
                       Py_ssize_t n_valid, Py_ssize_t rb) noexcept nogil:
    """:func:`_tau_b_weighted` of ``rb`` (<= ``_RB``) replicates in one walk: ``wt`` (D, rb) their document
    weights, ``tree``/``mt`` ((n_m_ranks + 1) * rb) their Fenwick trees and per-rank weights, node-major so
    one node of all ``rb`` trees is contiguous. Zero-weight points add exact zeros (no branch), and every
    count is an integer-valued double, so each replicate's value has the bits of the one-replicate walk."""
    cdef Py_ssize_t i, j, k, kb, g0, q
    cdef double s[_RB]
    cdef double th[_RB]
    cdef double tm[_RB]
    cdef double seen[_RB]
    cdef double grp[_RB]
    cdef double le[_RB]
    cdef const double* wrow
    cdef double n0
    memset(tree, 0, <size_t>(n_m_ranks + 1) * rb * sizeof(double))
    memset(mt, 0, <size_t>(n_m_ranks + 1) * rb * sizeof(double))
    for q in range(rb):
        s[q] = 0.0
        th[q] = 0.0
        tm[q] = 0.0
        seen[q] = 0.0
    i = 0
    while i < n:
        g0 = i
        for q in range(rb):
            grp[q] = 0.0
        while i < n and h_rank[i] == h_rank[g0]:
            wrow = wt + doc[i] * rb
            for q in range(rb):
                le[q] = 0.0
            k = m_rank[i]
            while k > 0:
                for q in range(rb):
                    le[q] += tree[k * rb + q]
                k -= k & (-k)
            kb = m_rank[i] * rb
            for q in range(rb):
                # as in _tau_b_weighted: lt = le - mt; earlier runs have a smaller h
                s[q] += wrow[q] * ((le[q] - mt[kb + q]) - (seen[q] - le[q]))
                grp[q] += wrow[q]
            i += 1
        for q in range(rb):
            th[q] += grp[q] * (grp[q] - 1.0) / 2.0
        for j in range(g0, i):
            wrow = wt + doc[j] * rb
            k = m_rank[j]
            for q in range(rb):
                mt[k * rb + q] += wrow[q]
            while k <= n_m_ranks:
                for q in range(rb):
                    tree[k * rb + q] += wrow[q]
                k += k & (-k)
        for q in range(rb):
            seen[q] += grp[q]
    for k in range(1, n_m_ranks + 1):
        for q in range(rb):
            tm[q] += mt[k * rb + q] * (mt[k * rb + q] - 1.0) / 2.0
    for q in range(n_valid):
        n0 = seen[q] * (seen[q] - 1.0) / 2.0
        if n0 - th[q] <= 0.0 or n0 - tm[q] <= 0.0:
            out[q] = NAN
        else:
            out[q] = s[q] / sqrt((n0 - th[q]) * (n0 - tm[q]))


def tau_b_weighted_reps(const int64_t[::1] h_rank__pt, const int64_t[::1] m_rank__pt, const int64_t[::1] doc__pt,
                        const double[:, ::1] w__rep_doc, Py_ssize_t n_m_ranks, double[::1] out__rep,
                        int num_threads=0):
    """Kendall tau-b of every bootstrap replicate: point i counts ``w[r, doc[i]]`` times in replicate r.

    Points sorted by h rank (1-based dense ranks of h and m). Copies of one point are tied in both
    (as ``scipy.stats.kendalltau`` counts repeated rows). NaN when the replicate's h or m is constant.
    Replicates go in blocks (:func:`block_width`: 32 or 8 by the tree's size, one per walk for large
    trees) through one walk (:func:`_tau_b_block`), one block per thread at a time; each replicate's counts are exact, so the result does not depend on the number of threads
    or on the blocking (the same bits as :func:`tau_b_weighted_one`). O(n log n_m_ranks) per block.
    The two rankings may be swapped (points sorted by m rank, the tree over h ranks): the counts are
    exact integers and the final division uses their product, so either orientation gives the same
    bits and the caller puts the tree over the ranking with fewer distinct values.
    """
    cdef Py_ssize_t n = h_rank__pt.shape[0], n_rep = w__rep_doc.shape[0], n_doc = w__rep_doc.shape[1]
    cdef Py_ssize_t rb = block_width(n_m_ranks), n_blocks, b, r0, q, d, nv, r
    if rb > 1 and n_rep <= 8:  # few replicates (a point value: one): a block no wider than they need
        rb = 1 if n_rep == 1 else 8
    cdef Py_ssize_t width
    cdef int nt = 0
    cdef double* buf
    cdef double* tree
    cdef double* mt
    cdef double* wt
    cdef double* res
    if rb == 1:  # trees too large to keep several in the caches: one replicate per walk
        width = 2 * (n_m_ranks + 1)
        buf = _replicate_buffers(n, n_rep, width, num_threads, out__rep, &nt)
        if buf == NULL:
            return
        try:
            for r in prange(n_rep, nogil=True, schedule="dynamic", num_threads=nt):
                tree = buf + <Py_ssize_t>threadid() * width
                out__rep[r] = _tau_b_weighted(&h_rank__pt[0], &m_rank__pt[0], &doc__pt[0], &w__rep_doc[r, 0],
                                              n, n_m_ranks, tree, tree + n_m_ranks + 1)
        finally:
            free(buf)
        return
    n_blocks = (n_rep + rb - 1) // rb
    cdef int mode = _i32_mode(rb, w__rep_doc, doc__pt) if n > 0 and n_rep > 0 else 0
    cdef int32_t* ibuf
    cdef int32_t* itree
    if mode:
        width = 2 * (n_m_ranks + 1) * rb + n_doc * rb  # tree, per-rank weights, document weights
        ibuf = _i32_buffers(n_blocks, width, num_threads, &nt)
        try:
            for b in prange(n_blocks, nogil=True, schedule="dynamic", num_threads=nt):
                itree = ibuf + <Py_ssize_t>threadid() * width
                r0 = b * rb
                nv = _block_weights_i32(&w__rep_doc[0, 0], n_rep, n_doc, r0, rb, itree + 2 * (n_m_ranks + 1) * rb)
                ddp_tau_block_i32(mode - 1, rb, &h_rank__pt[0], &m_rank__pt[0], &doc__pt[0],
                                  itree + 2 * (n_m_ranks + 1) * rb, n, n_m_ranks, itree,
                                  itree + (n_m_ranks + 1) * rb, &out__rep[r0], nv)
        finally:
            free(ibuf)
        return
    width = 2 * (n_m_ranks + 1) * rb + n_doc * rb + rb
    buf = _replicate_buffers(n, n_blocks, width, num_threads, out__rep, &nt)
    if buf == NULL:
        return
    try:
        for b in prange(n_blocks, nogil=True, schedule="dynamic", num_threads=nt):
            tree = buf + <Py_ssize_t>threadid() * width
            mt = tree + (n_m_ranks + 1) * rb
            wt = mt + (n_m_ranks + 1) * rb
            res = wt + n_doc * rb
            r0 = b * rb
            nv = _block_weights(&w__rep_doc[0, 0], n_rep, n_doc, r0, rb, wt)
            _tau_b_block(&h_rank__pt[0], &m_rank__pt[0], &doc__pt[0], wt, n, n_m_ranks, tree, mt, res, nv, rb)
            for q in range(nv):
                out__rep[r0 + q] = res[q]
    finally:
        free(buf)


def tau_acc_weighted_reps(const int64_t[::1] g_rank__pt, const int64_t[::1] t_rank__pt, const double[::1] m__pt,
                          const int64_t[::1] doc__pt, const double[:, ::1] w__rep_doc, Py_ssize_t n_t_ranks,
                          double eps, double[::1] tau__rep, double[::1] acc__rep, int num_threads=0) -> bool:
    """tau-b and acc23 at the tie threshold ``eps`` of every bootstrap replicate in one walk (point i counts
    ``w[r, doc[i]]`` times in replicate r): the values of :func:`tau_b_weighted_reps` (walked in metric order,
    the tree over the human's ranks) and of :func:`acc_eq_weighted_reps`, bit for bit.

    Points sorted by the metric: ``g_rank__pt`` its dense ranks (ascending), ``m__pt`` its scores, ``t_rank__pt``
    the human's dense ranks (1..``n_t_ranks``). acc23's concordant pairs beyond ``eps`` come from the tau
    walk's tree, less the pairs still within ``eps`` (the window behind each point, scanned with its human
    ties): the extra work is the windows' total length, so the caller uses it where the windows are short
    (continuous metric scores, a small threshold). Only the 32-bit walk (blocks of 32, or 8 for few
    replicates): returns False, computing nothing, when the weights do not allow it exactly
    (:func:`set_block_path` ``"f64"``, fractional weights, a replicate's total weight from ``I32_MAX_TOTAL``) or
    the tree is too large for a blocked walk; the caller then calls the two kernels.
    """
    cdef Py_ssize_t n = g_rank__pt.shape[0], n_rep = w__rep_doc.shape[0], n_doc = w__rep_doc.shape[1]
    cdef Py_ssize_t rb = block_width(n_t_ranks), n_blocks, b, r0, nv, width
    if rb > 1 and n_rep <= 8:
        rb = 8
    if n == 0 or n_rep == 0:
        tau__rep[:] = NAN
        acc__rep[:] = NAN
        return True
    cdef int mode = _i32_mode(rb, w__rep_doc, doc__pt)
    if mode == 0:
        return False
    cdef int nt = 0
    n_blocks = (n_rep + rb - 1) // rb
    width = 2 * (n_t_ranks + 1) * rb + n_doc * rb  # tree, per-rank weights, document weights
    # points per document (the copies of a point are pairs tied in both: counted from the documents)
    cdef int64_t[::1] n_doc_pt = np.bincount(np.asarray(doc__pt), minlength=n_doc).astype(np.int64)
    cdef int32_t* ibuf = _i32_buffers(n_blocks, width, num_threads, &nt)
    cdef int32_t* itree
    try:
        for b in prange(n_blocks, nogil=True, schedule="dynamic", num_threads=nt):
            itree = ibuf + <Py_ssize_t>threadid() * width
            r0 = b * rb
            nv = _block_weights_i32(&w__rep_doc[0, 0], n_rep, n_doc, r0, rb, itree + 2 * (n_t_ranks + 1) * rb)
            ddp_tau_acc_block_i32(mode - 1, rb, &g_rank__pt[0], &t_rank__pt[0], &m__pt[0], &doc__pt[0],
                                  itree + 2 * (n_t_ranks + 1) * rb, &n_doc_pt[0], n_doc, n, n_t_ranks, eps, itree,
                                  itree + (n_t_ranks + 1) * rb, &tau__rep[r0], &acc__rep[r0], nv)
    finally:
        free(ibuf)
    return True


cpdef Py_ssize_t block_width(Py_ssize_t n_m_ranks) noexcept nogil:
    """Replicates per walk of :func:`tau_b_weighted_reps` for a tree of ``n_m_ranks`` ranks: the trees of a
    block stay in the caches (32 up to 2,048 ranks, 8 up to 16,384, else 1). Measured (one thread, 400 k
    points, human on ~30 levels): 0.80 / 1.20 / 4.95 ms per replicate with 32 / 8 / 1; with 10 k ranks 8
    beat 32 (0.07 against 0.10) and with 100 k-400 k ranks 1 was as fast as 8 or faster."""
    if n_m_ranks <= _BLOCK32_MAX_RANKS:
        return 32
    if n_m_ranks <= _BLOCK8_MAX_RANKS:
        return 8
    return 1


def tau_b_weighted_one(const int64_t[::1] h_rank__pt, const int64_t[::1] m_rank__pt, const int64_t[::1] doc__pt,
                       const double[::1] w__doc, Py_ssize_t n_m_ranks) -> float:
    """:func:`tau_b_weighted_reps` of one replicate, one point at a time (the walk the blocked kernel must
    match bit for bit; tests compare the two)."""
    cdef Py_ssize_t n = h_rank__pt.shape[0]
    if n == 0:
        return NAN
    cdef double* buf = <double*>malloc(<size_t>2 * (n_m_ranks + 1) * sizeof(double))
    if buf == NULL:
        raise MemoryError()
    cdef double v
    try:
        v = _tau_b_weighted(&h_rank__pt[0], &m_rank__pt[0], &doc__pt[0], &w__doc[0], n, n_m_ranks, buf,
                            buf + n_m_ranks + 1)
    finally:
        free(buf)
    return v


def item_pairs(const double[:, ::1] h__item_sys, const double[:, ::1] m__item_sys, const uint8_t[:, ::1] ok__item_sys,
               double[::1] pearson__item, double[::1] tau__item, double[::1] pairs__item, double[::1] con0__item,
               double[::1] tie0__item, int64_t[::1] item__ent, double[::1] adm__ent, double[::1] sign__ent):
    """Per segment (row) over its valid systems: Pearson r, Kendall tau-b, the number of pairs, the
    concordant pairs and the pairs tied in both at epsilon 0, and the tie-calibration entries (pairs
    whose class flips when epsilon reaches ``|dm|``: +1 a human tie, -1 a concordant pair), in row order.

    NaN r / tau for a row with fewer than 2 valid cells or a constant human or metric row (constant
    decided on the values: max == min). The entry arrays must hold n_items * n_sys (n_sys - 1) / 2
    values. Returns the number of entries written.
    """
    cdef Py_ssize_t n_items = h__item_sys.shape[0], n_sys = h__item_sys.shape[1], i, a, b, k = 0
    cdef double n, sh, sm, mh, mm, dh, dm, cov, vh, vm, hmin, hmax, mmin, mmax, s, th, tm, p, c0, t0, r
    with nogil:
        for i in range(n_items):
            n = 0.0
            sh = 0.0
            sm = 0.0
            hmin = INFINITY
            hmax = -INFINITY
            mmin = INFINITY
            mmax = -INFINITY
            for a in range(n_sys):
                if ok__item_sys[i, a]:
                    n += 1.0
                    sh += h__item_sys[i, a]
                    sm += m__item_sys[i, a]
                    if h__item_sys[i, a] < hmin:
                        hmin = h__item_sys[i, a]
                    if h__item_sys[i, a] > hmax:
                        hmax = h__item_sys[i, a]
                    if m__item_sys[i, a] < mmin:
                        mmin = m__item_sys[i, a]
                    if m__item_sys[i, a] > mmax:
                        mmax = m__item_sys[i, a]
            if n < 2.0 or hmin == hmax or mmin == mmax:
                pearson__item[i] = NAN
            else:
                mh = sh / n
                mm = sm / n
                cov = 0.0
                vh = 0.0
                vm = 0.0
                for a in range(n_sys):
                    if ok__item_sys[i, a]:
                        dh = h__item_sys[i, a] - mh
                        dm = m__item_sys[i, a] - mm
                        cov += dh * dm
                        vh += dh * dh
                        vm += dm * dm
                r = cov / sqrt(vh * vm)
                pearson__item[i] = 1.0 if r > 1.0 else (-1.0 if r < -1.0 else r)
            s = 0.0
            th = 0.0
            tm = 0.0
            p = 0.0
            c0 = 0.0
            t0 = 0.0
            for a in range(n_sys):
                if not ok__item_sys[i, a]:
                    continue
                for b in range(a + 1, n_sys):
                    if not ok__item_sys[i, b]:
                        continue
                    p += 1.0
                    dh = h__item_sys[i, a] - h__item_sys[i, b]
                    dm = m__item_sys[i, a] - m__item_sys[i, b]
                    if dh == 0.0:
                        th += 1.0
                        if dm == 0.0:
                            tm += 1.0
                            t0 += 1.0
                        else:
                            item__ent[k] = i
                            adm__ent[k] = dm if dm > 0.0 else -dm
                            sign__ent[k] = 1.0
                            k += 1
                    elif dm == 0.0:
                        tm += 1.0
                    elif (dh > 0.0) == (dm > 0.0):
                        s += 1.0
                        c0 += 1.0
                        item__ent[k] = i
                        adm__ent[k] = dm if dm > 0.0 else -dm
                        sign__ent[k] = -1.0
                        k += 1
                    else:
                        s -= 1.0
            pairs__item[i] = p
            con0__item[i] = c0
            tie0__item[i] = t0
            if p - th <= 0.0 or p - tm <= 0.0:
                tau__item[i] = NAN
            else:
                r = s / sqrt(p - th) / sqrt(p - tm)
                tau__item[i] = 1.0 if r > 1.0 else (-1.0 if r < -1.0 else r)
    return k


cdef double _acc_eq_weighted(const double* m_a, const int64_t* h_rank_a, const int64_t* doc_a,
                             const double* m_b, const int64_t* h_rank_b, const int64_t* doc_b,
                             const double* w_doc, Py_ssize_t n, Py_ssize_t n_h_ranks, double eps,
                             double* tree) noexcept nogil:
    """acc23 at threshold eps of the points weighted by their document's multiplicity.

    ``*_a``: the points sorted by m ascending; ``*_b``: sorted by (h rank, m) ascending."""
    cdef Py_ssize_t i, j, k, lo
    cdef double wj, wi, wt = 0.0, good = 0.0, below, win
    for k in range(n_h_ranks + 1):
        tree[k] = 0.0
    # concordant pairs whose metric difference exceeds eps: for each j (m order) every i with
    # m[j] - m[i] > eps has been inserted (keyed by h rank); those with a smaller h rank are concordant
    i = 0
    for j in range(n):
        wj = w_doc[doc_a[j]]
        while i < j and m_a[j] - m_a[i] > eps:
            wi = w_doc[doc_a[i]]
            if wi != 0.0:
                k = h_rank_a[i]
                while k <= n_h_ranks:
                    tree[k] += wi
                    k += k & (-k)
            i += 1
        if wj != 0.0:
            below = 0.0
            k = h_rank_a[j] - 1
            while k > 0:
                below += tree[k]
                k -= k & (-k)
            good += wj * below
            wt += wj
            # the copies of one point are pairs tied in both: correct
            good += wj * (wj - 1.0) / 2.0
    # pairs tied by the humans whose metric difference is within eps (same h rank, m[j] - m[lo] <= eps)
    lo = 0
    win = 0.0
    for j in range(n):
        if j > 0 and h_rank_b[j] != h_rank_b[j - 1]:
            lo = j
            win = 0.0
        while lo < j and m_b[j] - m_b[lo] > eps:
            win -= w_doc[doc_b[lo]]
            lo += 1
        wj = w_doc[doc_b[j]]
        good += wj * win
        win += wj
    if wt < 2.0:
        return NAN
    return good / (wt * (wt - 1.0) / 2.0)


cdef void _acc_eq_block(const double* m_a, const int64_t* h_rank_a, const int64_t* doc_a,
                        const double* m_b, const int64_t* h_rank_b, const int64_t* doc_b,
                        const double* wt, Py_ssize_t n, Py_ssize_t n_h_ranks, double eps,
                        double* tree, double* out, Py_ssize_t n_valid, Py_ssize_t rb) noexcept nogil:
    """:func:`_acc_eq_weighted` of ``rb`` (<= ``_RB``) replicates in one walk: ``wt`` (D, rb) their document
    weights, ``tree`` ((n_h_ranks + 1) * rb) their Fenwick trees, node-major. Zero-weight points add exact
    zeros (no branch), and every count is an integer-valued double, so each replicate's value has the bits
    of the one-replicate walk."""
    cdef Py_ssize_t i, j, k, lo, q
    cdef double good[_RB]
    cdef double tot[_RB]
    cdef double below[_RB]
    cdef double win[_RB]
    cdef const double* wj
    cdef const double* wi
    memset(tree, 0, <size_t>(n_h_ranks + 1) * rb * sizeof(double))
    for q in range(rb):
        good[q] = 0.0
        tot[q] = 0.0
    # concordant pairs beyond eps (m order; the tree over h ranks), as in _acc_eq_weighted
    i = 0
    for j in range(n):
        while i < j and m_a[j] - m_a[i] > eps:
            wi = wt + doc_a[i] * rb
            k = h_rank_a[i]
            while k <= n_h_ranks:
                for q in range(rb):
                    tree[k * rb + q] += wi[q]
                k += k & (-k)
            i += 1
        wj = wt + doc_a[j] * rb
        for q in range(rb):
            below[q] = 0.0
        k = h_rank_a[j] - 1
        while k > 0:
            for q in range(rb):
                below[q] += tree[k * rb + q]
            k -= k & (-k)
        for q in range(rb):
            good[q] += wj[q] * below[q] + wj[q] * (wj[q] - 1.0) / 2.0
            tot[q] += wj[q]
    # pairs tied by the humans within eps ((h rank, m) order; a window per h rank)
    lo = 0
    for q in range(rb):
        win[q] = 0.0
    for j in range(n):
        if j > 0 and h_rank_b[j] != h_rank_b[j - 1]:
            lo = j
            for q in range(rb):
                win[q] = 0.0
        while lo < j and m_b[j] - m_b[lo] > eps:
            wi = wt + doc_b[lo] * rb
            for q in range(rb):
                win[q] -= wi[q]
            lo += 1
        wj = wt + doc_b[j] * rb
        for q in range(rb):
            good[q] += wj[q] * win[q]
            win[q] += wj[q]
    for q in range(n_valid):
        out[q] = NAN if tot[q] < 2.0 else good[q] / (tot[q] * (tot[q] - 1.0) / 2.0)


def acc_eq_weighted_reps(const double[::1] m__a, const int64_t[::1] h_rank__a, const int64_t[::1] doc__a,
                         const double[::1] m__b, const int64_t[::1] h_rank__b, const int64_t[::1] doc__b,
                         const double[:, ::1] w__rep_doc, Py_ssize_t n_h_ranks, double eps, double[::1] out__rep,
                         int num_threads=0, Py_ssize_t block=0):
    """acc23 at the fixed tie threshold ``eps`` of every bootstrap replicate: point i counts ``w[r, doc[i]]``
    times in replicate r (mt-metrics-eval ``KendallVariants(variant="acc23", epsilon=eps)`` on the
    replicate's cells, copies included: the copies of one cell are pairs tied in both).

    The same points twice: ``*__a`` sorted by metric score ascending, ``*__b`` sorted by (human rank, metric
    score) ascending; 1-based dense human ranks. Correct pairs: concordant with ``m[j] - m[i] > eps``, or
    tied by the humans with ``|dm| <= eps``. NaN when the replicate has fewer than 2 points. Replicates go
    in blocks of :func:`block_width` (32 for up to 2,048 human ranks) through one walk
    (:func:`_acc_eq_block`), one block per thread at a time; each count is exact, so the result does not
    depend on the number of threads or on the blocking (the bits of the one-replicate walk, which
    ``block=1`` forces). O(n log n_h_ranks) per block.
    """
    cdef Py_ssize_t n = m__a.shape[0], n_rep = w__rep_doc.shape[0], n_doc = w__rep_doc.shape[1], r
    cdef Py_ssize_t rb = block_width(n_h_ranks) if block == 0 else block, width, n_blocks, b, r0, nv, q, d
    if rb < 1 or rb > _RB:
        raise ValueError(f"acc_eq_weighted_reps: block must be 0 (auto) or 1..{_RB}, got {block}")
    if block == 0 and rb > 1 and n_rep <= 8:  # few replicates (a point value: one): a block no wider than needed
        rb = 1 if n_rep == 1 else 8
    cdef int nt = 0
    cdef double* buf
    cdef double* tree
    cdef double* wt
    cdef double* res
    if rb == 1:
        width = n_h_ranks + 1
        buf = _replicate_buffers(n, n_rep, width, num_threads, out__rep, &nt)
        if buf == NULL:
            return
        try:
            for r in prange(n_rep, nogil=True, schedule="dynamic", num_threads=nt):
                out__rep[r] = _acc_eq_weighted(&m__a[0], &h_rank__a[0], &doc__a[0], &m__b[0], &h_rank__b[0],
                                               &doc__b[0], &w__rep_doc[r, 0], n, n_h_ranks, eps,
                                               buf + <Py_ssize_t>threadid() * width)
        finally:
            free(buf)
        return
    n_blocks = (n_rep + rb - 1) // rb
    cdef int mode = _i32_mode(rb, w__rep_doc, doc__a) if n > 0 and n_rep > 0 else 0
    cdef int32_t* ibuf
    cdef int32_t* itree
    if mode:
        width = (n_h_ranks + 1) * rb + n_doc * rb  # tree, document weights
        ibuf = _i32_buffers(n_blocks, width, num_threads, &nt)
        try:
            for b in prange(n_blocks, nogil=True, schedule="dynamic", num_threads=nt):
                itree = ibuf + <Py_ssize_t>threadid() * width
                r0 = b * rb
                nv = _block_weights_i32(&w__rep_doc[0, 0], n_rep, n_doc, r0, rb, itree + (n_h_ranks + 1) * rb)
                ddp_acc_block_i32(mode - 1, rb, &m__a[0], &h_rank__a[0], &doc__a[0], &m__b[0], &h_rank__b[0],
                                  &doc__b[0], itree + (n_h_ranks + 1) * rb, n, n_h_ranks, eps, itree,
                                  &out__rep[r0], nv)
        finally:
            free(ibuf)
        return
    width = (n_h_ranks + 1) * rb + n_doc * rb + rb
    buf = _replicate_buffers(n, n_blocks, width, num_threads, out__rep, &nt)
    if buf == NULL:
        return
    try:
        for b in prange(n_blocks, nogil=True, schedule="dynamic", num_threads=nt):
            tree = buf + <Py_ssize_t>threadid() * width
            wt = tree + (n_h_ranks + 1) * rb
            res = wt + n_doc * rb
            r0 = b * rb
            nv = _block_weights(&w__rep_doc[0, 0], n_rep, n_doc, r0, rb, wt)
            _acc_eq_block(&m__a[0], &h_rank__a[0], &doc__a[0], &m__b[0], &h_rank__b[0], &doc__b[0], wt, n,
                          n_h_ranks, eps, tree, res, nv, rb)
            for q in range(nv):
                out__rep[r0 + q] = res[q]
    finally:
        free(buf)


def signed_doc_sums(const double[:, ::1] x__unit_col, const int64_t[::1] slot__unit, const uint8_t[:, ::1] keep__trial_unit,
                    double[:, :, ::1] out__slot_trial_col, int num_threads=0):
    """Per-document permuted sums of every trial: ``out[slot[u], t, :] += x[u, :]`` if ``keep[t, u]`` else
    ``-x[u, :]``, units in order (each sum accumulated unit by unit, as ``np.add.reduceat`` over the signed
    rows does). ``slot__unit`` (n_units,) the unit's document slot 0..n_slots-1, non-decreasing; ``out``
    (n_slots, T, n_col) zeroed here. Threads over trials: each (slot, trial) sum belongs to one thread, so
    the result does not depend on the number of threads."""
    cdef Py_ssize_t n_u = x__unit_col.shape[0], n_col = x__unit_col.shape[1], T = keep__trial_unit.shape[0]
    cdef Py_ssize_t t, u, c, d
    cdef double* o
    cdef const double* xr
    out__slot_trial_col[:, :, :] = 0.0
    if n_u == 0 or T == 0 or n_col == 0:
        return
    cdef int nt = _threads(num_threads)
    if nt > T:
        nt = <int>T
    for t in prange(T, nogil=True, schedule="static", num_threads=nt):
        for u in range(n_u):
            d = slot__unit[u]
            o = &out__slot_trial_col[d, t, 0]
            xr = &x__unit_col[u, 0]
            if keep__trial_unit[t, u]:
                for c in range(n_col):
                    o[c] = o[c] + xr[c]
            else:
                for c in range(n_col):
                    o[c] = o[c] - xr[c]


def spa_from_sums(const double[:, :, ::1] perm__rep_trial_col, const double[:, ::1] tot__rep_col, Py_ssize_t n_sets,
                  double[:, ::1] out__rep_metric, int num_threads=0):
    """Soft pairwise accuracy from permuted and observed per-system sums, for every replicate.

    Columns are ``n_sets`` score sets (set 0 the human, then the metrics) of n_sys systems each
    (``col = g * n_sys + i``). p_ij of set g = share of the trials with ``perm[t, i] - perm[t, j] >=
    tot[i] - tot[j]``; ``out[r, g - 1] = 1 - mean over pairs i < j |p_ij(0) - p_ij(g)|``. One replicate per
    thread, sequential inside: independent of the thread count.
    """
    cdef Py_ssize_t n_rep = perm__rep_trial_col.shape[0], T = perm__rep_trial_col.shape[1]
    cdef Py_ssize_t n_col = perm__rep_trial_col.shape[2], n_sys = n_col // n_sets, r, g, i, j, t, a, b
    cdef Py_ssize_t cnt, cnt0
    cdef double obs, acc, n_pairs = n_sys * (n_sys - 1) / 2.0
    cdef int nt = _threads(num_threads)
    if n_rep == 0:
        return
    if nt > n_rep:
        nt = <int>n_rep
    for r in prange(n_rep, nogil=True, schedule="static", num_threads=nt):
        for g in range(1, n_sets):
            out__rep_metric[r, g - 1] = 0.0
        for i in range(n_sys):
            for j in range(i + 1, n_sys):
                obs = tot__rep_col[r, i] - tot__rep_col[r, j]
                cnt0 = 0
                for t in range(T):  # counted without a branch: each comparison is a coin flip to a predictor
                    cnt0 = cnt0 + (perm__rep_trial_col[r, t, i] - perm__rep_trial_col[r, t, j] >= obs)
                for g in range(1, n_sets):
                    a = g * n_sys + i
                    b = g * n_sys + j
                    obs = tot__rep_col[r, a] - tot__rep_col[r, b]
                    cnt = 0
                    for t in range(T):
                        cnt = cnt + (perm__rep_trial_col[r, t, a] - perm__rep_trial_col[r, t, b] >= obs)
                    acc = <double>(cnt0 - cnt)
                    if acc < 0:
                        acc = -acc
                    out__rep_metric[r, g - 1] += acc  # an integer count: exact, so equal SPAs are equal floats
        for g in range(1, n_sets):
            out__rep_metric[r, g - 1] = 1.0 - out__rep_metric[r, g - 1] / (T * n_pairs)
