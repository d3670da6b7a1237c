# cython: language_level=3
"""Statistics kernels over flat arrays (no polars, no validation, no I/O).

The public functions in ``ddpcore.stats`` validate their input and call these. Slow,
obviously-correct oracles live in ``tests/stats/stats_oracles.py`` and the tests.

Array naming: ``X__row`` is indexed by table row, ``X__grp`` by group, ``X__unit`` by
resampling unit (document or segment), ``X__rep`` by bootstrap replicate, ``X__col`` by a
column of per-unit sufficient statistics (e.g. sum and count of each system).

Kernels
-------
``group_moments``          per-group n, mean, sum of squared deviations, constant flag
``resample_sums_pcg64``    bootstrap column sums; units drawn from numpy's PCG64 stream in-kernel
``resample_sums_indices``  bootstrap column sums; unit indices given by the caller
``pcg64_raw``              raw words of that PCG64 stream (tests)
``dense_codes``            order-preserving dense codes of integer keys (factorisation)
``ratio_pair_sum``         Krippendorff ratio-metric expected disagreement over distinct values
``tau_b_rows``             Kendall tau-b between the two rows of many small rankings
``count_discordant``       discordant pairs of a rank sequence (Fenwick tree, O(n log n))
``lowess_pass``            one LOWESS pass (local linear, tricube, robustness weights)

All replicate loops use OpenMP ``prange`` over replicates; each replicate is computed
sequentially by one thread, so results do not depend on the number of threads. The loops are
scheduled dynamically in chunks of a few replicates: on a busy machine a thread that lost its
core does not hold the others at the end of the loop (a static split waits for its share).
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport sqrt, fabs, isnan, NAN
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport malloc, free

from .pcg64 cimport ddp_pcg64, ddp_pcg64_advance, ddp_pcg64_fill, ddp_pcg64_init, ddp_pcg64_next
from .threads cimport ddp_omp_max_threads, threads_for as _threads_for

cnp.import_array()


cdef extern from *:
    """
    /* Draws per chunk: the chunk's unit indices (2 x 128 words, 2 KB) are generated, their
       rows prefetched, then summed; 2 x 128 rows of up to 16 columns fit L1d. */
    #define DDP_CHUNK 128

    /* Add the drawn rows of one chunk to the running sums of the W columns starting at jb of
       one or two replicates. The partial sums live in registers for the chunk and in acc1 /
       acc2 between chunks; each column's sum is accumulated in draw order, so the value does
       not depend on the chunk size. `idx1`/`idx2` hold the drawn row offsets. */
    template <int W>
    static inline void ddp_sum_block(const double* base, Py_ssize_t jb, const Py_ssize_t* idx1,
                                     const Py_ssize_t* idx2, Py_ssize_t n_draws, double* acc1, double* acc2) {
        double a[W], b[W];
        for (int j = 0; j < W; ++j) a[j] = acc1[jb + j];
        if (idx2) {
            for (int j = 0; j < W; ++j) b[j] = acc2[jb + j];
            for (Py_ssize_t k = 0; k < n_draws; ++k) {
                const double* r1 = base + idx1[k] + jb;
                const double* r2 = base + idx2[k] + jb;
                for (int j = 0; j < W; ++j) { a[j] += r1[j]; b[j] += r2[j]; }
            }
            for (int j = 0; j < W; ++j) acc2[jb + j] = b[j];
        } else {
            for (Py_ssize_t k = 0; k < n_draws; ++k) {
                const double* r1 = base + idx1[k] + jb;
                for (int j = 0; j < W; ++j) a[j] += r1[j];
            }
        }
        for (int j = 0; j < W; ++j) acc1[jb + j] = a[j];
    }

    /* All n_cols columns (an even number): one pass over the draws when n_cols <= 16 (each
       drawn row is read once; 2 x 16 partial sums fit the vector registers), else passes
       over blocks of 16 columns and a remainder. */
    static inline void ddp_sum_rows(const double* base, Py_ssize_t n_cols, const Py_ssize_t* idx1,
                                    const Py_ssize_t* idx2, Py_ssize_t n_draws, double* acc1, double* acc2) {
        Py_ssize_t jb = 0;
        for (; n_cols - jb > 16; jb += 16) ddp_sum_block<16>(base, jb, idx1, idx2, n_draws, acc1, acc2);
        switch (n_cols - jb) {
            case 2: ddp_sum_block<2>(base, jb, idx1, idx2, n_draws, acc1, acc2); break;
            case 4: ddp_sum_block<4>(base, jb, idx1, idx2, n_draws, acc1, acc2); break;
            case 6: ddp_sum_block<6>(base, jb, idx1, idx2, n_draws, acc1, acc2); break;
            case 8: ddp_sum_block<8>(base, jb, idx1, idx2, n_draws, acc1, acc2); break;
            case 10: ddp_sum_block<10>(base, jb, idx1, idx2, n_draws, acc1, acc2); break;
            case 12: ddp_sum_block<12>(base, jb, idx1, idx2, n_draws, acc1, acc2); break;
            case 14: ddp_sum_block<14>(base, jb, idx1, idx2, n_draws, acc1, acc2); break;
            case 16: ddp_sum_block<16>(base, jb, idx1, idx2, n_draws, acc1, acc2); break;
            default: break;  /* n_cols is even: no other remainder */
        }
    }

    /* Prefetch every cache line of a row of `bytes` bytes (the gather's memory latency then
       overlaps the generation of the rest of the chunk). */
    static inline void ddp_prefetch_row(const double* row, Py_ssize_t bytes) {
        const char* p = (const char*)row;
        const char* last = p + bytes - 1;
        for (; p <= last; p += 64) __builtin_prefetch(p, 0, 3);
        __builtin_prefetch(last, 0, 3);
    }

    /* Bootstrap replicates r and r + 1 (the second only if `two`): each starts from a copy of
       the generator jumped to its own offset (skip, skip + n_draws) and draws n_draws units;
       their rows of `base` (n_units x n_cols, n_cols even) are summed into acc
       (and acc + n_cols). The draws are made in chunks of DDP_CHUNK: the chunk's indices of
       both replicates are generated (the two LCG chains are independent, so drawing both
       hides the latency of the 128-bit multiply) and their rows prefetched, then the chunk
       is summed. All state is local, so concurrent calls from OpenMP threads are
       independent and the result does not depend on which thread runs them.
       target_clones: an AVX2 build is picked at load time where the CPU supports it. */
    __attribute__((target_clones("avx2", "default")))
    static int ddp_pcg64_replicates(uint64_t state_hi, uint64_t state_lo, uint64_t inc_hi, uint64_t inc_lo,
                                    uint64_t skip, const double* base, uint64_t n_units,
                                    Py_ssize_t n_cols, Py_ssize_t n_draws, double* acc, int two) {
        Py_ssize_t idx1[DDP_CHUNK], idx2[DDP_CHUNK];
        const Py_ssize_t row_bytes = n_cols * (Py_ssize_t)sizeof(double);
        const int prefetch = (uint64_t)row_bytes * n_units > ((uint64_t)1 << 20);  /* values beyond L2 */
        double* acc2 = acc + n_cols;
        ddp_pcg64 g1;
        ddp_pcg64_init(&g1, state_hi, state_lo, inc_hi, inc_lo);
        ddp_pcg64_advance(&g1, skip);
        ddp_pcg64 g2 = g1;
        for (Py_ssize_t j = 0; j < n_cols; ++j) acc[j] = 0.0;
        if (two) {
            ddp_pcg64_advance(&g2, (uint64_t)n_draws);
            for (Py_ssize_t j = 0; j < n_cols; ++j) acc2[j] = 0.0;
        }
        for (Py_ssize_t k0 = 0; k0 < n_draws; k0 += DDP_CHUNK) {
            const Py_ssize_t m = n_draws - k0 < DDP_CHUNK ? n_draws - k0 : DDP_CHUNK;
            if (two) {
                for (Py_ssize_t k = 0; k < m; ++k) {
                    idx1[k] = (Py_ssize_t)ddp_mulhi64(ddp_pcg64_next(&g1), n_units) * n_cols;
                    idx2[k] = (Py_ssize_t)ddp_mulhi64(ddp_pcg64_next(&g2), n_units) * n_cols;
                    if (prefetch) { ddp_prefetch_row(base + idx1[k], row_bytes); ddp_prefetch_row(base + idx2[k], row_bytes); }
                }
            } else {
                for (Py_ssize_t k = 0; k < m; ++k) {
                    idx1[k] = (Py_ssize_t)ddp_mulhi64(ddp_pcg64_next(&g1), n_units) * n_cols;
                    if (prefetch) ddp_prefetch_row(base + idx1[k], row_bytes);
                }
            }
            ddp_sum_rows(base, n_cols, idx1, two ? idx2 : NULL, m, acc, acc2);
        }
        return 0;
    }
    """
    int ddp_pcg64_replicates(uint64_t state_hi, uint64_t state_lo, uint64_t inc_hi, uint64_t inc_lo,
                             uint64_t skip, const double* base, uint64_t n_units,
                             Py_ssize_t n_cols, Py_ssize_t n_draws, double* acc, int two) nogil


# --------------------------------------------------------------------------- grouped moments


def group_moments(
    const int64_t[::1] codes__row,
    const double[::1] x__row,
    const double[::1] y__row,
    Py_ssize_t n_groups,
    double[::1] n__grp,
    double[::1] mean__grp,
    double[::1] ss__grp,
    uint8_t[::1] constant__grp,
):
    """Per-group count, mean, sum of squared deviations and "all values equal" flag.

    The values are ``x - y`` when ``y__row`` is given (paired differences, computed on the
    fly) and ``x`` when it is None. NaN values are skipped. Two passes: sums (-> mean),
    then squared deviations from the group mean. ``constant__grp[g]`` is 1 when every
    non-NaN value of group g equals its first one exactly (and the group has at least one
    value); ``mean__grp`` then holds that exact value. Outputs must have ``n_groups``
    entries. Returns the number of NaN values skipped.
    """
    cdef Py_ssize_t i, g, n = codes__row.shape[0]
    cdef double v, m
    cdef int64_t n_nan = 0
    cdef bint paired = y__row is not None
    cdef const double* xp = &x__row[0] if n > 0 else NULL
    cdef const double* yp = NULL
    if paired and n > 0:
        yp = &y__row[0]
    cdef double* first = <double*>malloc(max(n_groups, 1) * sizeof(double))
    cdef double* total = <double*>malloc(max(n_groups, 1) * sizeof(double))
    if first == NULL or total == NULL:
        free(first)
        free(total)
        raise MemoryError()
    try:
        with nogil:
            for g in range(n_groups):
                n__grp[g] = 0.0
                total[g] = 0.0
                ss__grp[g] = 0.0
                constant__grp[g] = 1
            for i in range(n):
                v = xp[i] - yp[i] if paired else xp[i]
                if isnan(v):
                    n_nan += 1
                    continue
                g = codes__row[i]
                if n__grp[g] == 0.0:
                    first[g] = v
                elif v != first[g]:
                    constant__grp[g] = 0
                n__grp[g] += 1.0
                total[g] += v
            for g in range(n_groups):
                if n__grp[g] > 0.0:
                    if constant__grp[g]:
                        mean__grp[g] = first[g]
                    else:
                        mean__grp[g] = total[g] / n__grp[g]
                else:
                    mean__grp[g] = NAN
                    ss__grp[g] = NAN
                    constant__grp[g] = 0
            for i in range(n):
                v = xp[i] - yp[i] if paired else xp[i]
                if isnan(v):
                    continue
                g = codes__row[i]
                if not constant__grp[g]:
                    m = v - mean__grp[g]
                    ss__grp[g] += m * m
    finally:
        free(first)
        free(total)
    return n_nan


# --------------------------------------------------------------------------- bootstrap sums


def max_threads() -> int:
    """Number of threads OpenMP uses by default (``OMP_NUM_THREADS`` or all cores)."""
    return ddp_omp_max_threads()


cdef inline void _add_row(const double* row, double* acc, Py_ssize_t n_cols) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(n_cols):
        acc[j] += row[j]


def resample_sums_indices(
    const int64_t[:, ::1] index__rep_draw,
    const double[:, ::1] values__unit_col,
    double[:, ::1] out__rep_col,
    int num_threads=0,
):
    """Bootstrap column sums for caller-given unit indices (already range-checked).

    Shapes: ``index`` (n_rep, n_draws) with entries in [0, n_units), ``values``
    (n_units, n_cols), ``out`` (n_rep, n_cols).
    """
    cdef Py_ssize_t n_rep = index__rep_draw.shape[0], n_draws = index__rep_draw.shape[1]
    cdef Py_ssize_t n_cols = values__unit_col.shape[1]
    cdef Py_ssize_t r, k, j
    cdef const double* base = &values__unit_col[0, 0]
    cdef const int64_t* idx = &index__rep_draw[0, 0]
    cdef double* out = &out__rep_col[0, 0]
    cdef double* acc
    cdef int nt = _threads_for(num_threads, <double>n_rep * <double>n_draws * <double>n_cols)
    if n_rep == 0:
        return
    for r in prange(n_rep, nogil=True, schedule="dynamic", chunksize=4, num_threads=nt):
        acc = out + r * n_cols
        for j in range(n_cols):
            acc[j] = 0.0
        for k in range(n_draws):
            _add_row(base + idx[r * n_draws + k] * n_cols, acc, n_cols)


def resample_sums_pcg64(
    uint64_t state_hi,
    uint64_t state_lo,
    uint64_t inc_hi,
    uint64_t inc_lo,
    const double[:, ::1] values__unit_col,
    double[:, ::1] out__rep_col,
    Py_ssize_t n_draws,
    int num_threads=0,
):
    """Bootstrap column sums drawing units from numpy's PCG64 stream, generated in-kernel.

    ``(state, inc)`` is a ``numpy.random.PCG64`` state (128-bit values split in 64-bit
    halves). Replicate r uses raw words ``r * n_draws ... (r + 1) * n_draws - 1`` of that
    stream (each replicate jumps ahead to its offset), so the draws are exactly those of
    ``PCG64(seed).random_raw(n_rep * n_draws)``, mapped by ``floor(raw * n_units / 2**64)``,
    whatever the number of threads.

    Shapes: ``values`` (n_units, n_cols) and ``out`` (n_rep, n_cols) with n_cols even (pad
    with a zero column).
    """
    cdef Py_ssize_t p, r, n_pairs = (out__rep_col.shape[0] + 1) // 2, n_rep = out__rep_col.shape[0]
    cdef Py_ssize_t n_units = values__unit_col.shape[0], n_cols = values__unit_col.shape[1]
    cdef const double* base = &values__unit_col[0, 0]
    cdef double* out = &out__rep_col[0, 0]
    cdef int nt = _threads_for(num_threads, <double>n_rep * <double>n_draws * <double>n_cols)
    cdef int failed = 0
    if n_cols % 2 != 0 or out__rep_col.shape[1] != n_cols:
        raise ValueError("resample_sums_pcg64 needs an even n_cols and matching out columns")
    if n_rep == 0:
        return
    for p in prange(n_pairs, nogil=True, schedule="dynamic", chunksize=1, num_threads=nt):
        r = 2 * p
        if ddp_pcg64_replicates(state_hi, state_lo, inc_hi, inc_lo, <uint64_t>r * <uint64_t>n_draws,
                                base, <uint64_t>n_units, n_cols, n_draws, out + r * n_cols, r + 1 < n_rep) != 0:
            failed += 1
    if failed:
        raise MemoryError()


def pcg64_raw(uint64_t state_hi, uint64_t state_lo, uint64_t inc_hi, uint64_t inc_lo, uint64_t skip, uint64_t[::1] out):
    """Raw PCG64 words ``skip ... skip + len(out) - 1`` of the stream (for tests/exports)."""
    if out.shape[0]:
        with nogil:
            ddp_pcg64_fill(&out[0], out.shape[0], state_hi, state_lo, inc_hi, inc_lo, skip)


# --------------------------------------------------------------------------- Kendall tau-b


cdef inline double _tau_b_small(const double* a, const double* b, Py_ssize_t n) noexcept nogil:
    """tau-b of two length-n vectors by the O(n^2) pair count; NaN if undefined.

    Same final arithmetic as scipy.stats.kendalltau:
    (con - dis) / sqrt(tot - xtie) / sqrt(tot - ytie), clipped to [-1, 1].
    """
    cdef Py_ssize_t i, j
    cdef int64_t con_minus_dis = 0, xtie = 0, ytie = 0, tot
    cdef double da, db, tau
    for i in range(n):
        if isnan(a[i]) or isnan(b[i]):
            return NAN
    for i in range(n):
        for j in range(i + 1, n):
            da = a[i] - a[j]
            db = b[i] - b[j]
            if da == 0.0:
                xtie += 1
            if db == 0.0:
                ytie += 1
            if da != 0.0 and db != 0.0:
                if (da > 0.0) == (db > 0.0):
                    con_minus_dis += 1
                else:
                    con_minus_dis -= 1
    tot = <int64_t>(n * (n - 1) // 2)
    if xtie == tot or ytie == tot:
        return NAN
    tau = <double>con_minus_dis / sqrt(<double>(tot - xtie)) / sqrt(<double>(tot - ytie))
    if tau > 1.0:
        tau = 1.0
    elif tau < -1.0:
        tau = -1.0
    return tau


def tau_b_rows(const double[:, ::1] a__rep_sys, const double[:, ::1] b__rep_sys, double[::1] out__rep, int num_threads=0):
    """Kendall tau-b between ``a[r, :]`` and ``b[r, :]`` for every row r (n small, O(n^2)).

    NaN in a row, or a row of all-equal values, gives NaN (scipy returns NaN there too).
    """
    cdef Py_ssize_t r, n_rep = a__rep_sys.shape[0], n = a__rep_sys.shape[1]
    cdef int nt = _threads_for(num_threads, <double>n_rep * <double>n * <double>n / 2.0)
    if n < 2:
        out__rep[:] = NAN
        return
    if n_rep == 0:
        return
    for r in prange(n_rep, nogil=True, schedule="dynamic", chunksize=256, num_threads=nt):
        out__rep[r] = _tau_b_small(&a__rep_sys[r, 0], &b__rep_sys[r, 0], n)


def count_discordant(const int64_t[::1] y_rank__row) -> int:
    """Number of pairs i < j with ``y[i] > y[j]`` (ranks are 1-based dense, max <= n).

    Used after sorting rows by (x, y): within equal x the y ranks are ascending, so these
    are exactly the discordant pairs of Kendall's tau. Fenwick tree, O(n log n).
    """
    cdef Py_ssize_t n = y_rank__row.shape[0], i, k
    cdef int64_t m = 0, dis = 0, seen_le
    for i in range(n):
        if y_rank__row[i] > m:
            m = y_rank__row[i]
    cdef int64_t* tree = <int64_t*>malloc((m + 1) * sizeof(int64_t))
    if tree == NULL:
        raise MemoryError()
    try:
        with nogil:
            for k in range(m + 1):
                tree[k] = 0
            for i in range(n):
                # seen so far with rank <= y[i]
                seen_le = 0
                k = y_rank__row[i]
                while k > 0:
                    seen_le += tree[k]
                    k -= k & (-k)
                dis += i - seen_le
                k = y_rank__row[i]
                while k <= m:
                    tree[k] += 1
                    k += k & (-k)
    finally:
        free(tree)
    return dis


# --------------------------------------------------------------------------- factorisation


def dense_codes(const int64_t[::1] values__row, int64_t lo, int64_t span, int64_t[::1] codes__row):
    """Order-preserving dense codes of integers in ``[lo, lo + span)``.

    Writes ``codes__row[i]`` = rank of ``values__row[i]`` among the distinct values and returns
    ``(k, first__code)``: the number of distinct values and, per code, the first row holding it.
    O(n + span) time, ``span`` bytes + ``8 * span`` bytes of scratch.
    """
    cdef Py_ssize_t i, n = values__row.shape[0]
    cdef int64_t v, k = 0
    cdef int64_t* remap = <int64_t*>malloc(max(span, 1) * sizeof(int64_t))
    if remap == NULL:
        raise MemoryError()
    try:
        with nogil:
            for v in range(span):
                remap[v] = -1
            for i in range(n):
                remap[values__row[i] - lo] = 0
            for v in range(span):
                if remap[v] == 0:
                    remap[v] = k
                    k += 1
        first = np.full(k, -1, dtype=np.int64)
        _fill_codes(values__row, lo, remap, codes__row, first)
    finally:
        free(remap)
    return int(k), first


cdef void _fill_codes(const int64_t[::1] values__row, int64_t lo, const int64_t* remap, int64_t[::1] codes__row, int64_t[::1] first__code) noexcept:
    cdef Py_ssize_t i, n = values__row.shape[0]
    cdef int64_t c
    with nogil:
        for i in range(n - 1, -1, -1):
            c = remap[values__row[i] - lo]
            codes__row[i] = c
            first__code[c] = i


# --------------------------------------------------------------------------- Krippendorff ratio


def ratio_pair_sum(const double[::1] values__val, const double[::1] counts__val, int num_threads=0) -> float:
    """``sum_{c != k} n_c n_k ((v_c - v_k) / (v_c + v_k))^2`` over distinct values (0 where v_c + v_k = 0).

    O(V^2) time, O(V) memory; rows are summed in parallel into a per-row buffer and then
    added in order, so the result does not depend on the number of threads.
    """
    cdef Py_ssize_t V = values__val.shape[0], c, k
    cdef double s, d, acc, total = 0.0
    cdef int nt = _threads_for(num_threads, <double>V * <double>V / 2.0)
    row = np.zeros(V, dtype=np.float64)
    cdef double[::1] row__val = row
    if V < 2:
        return 0.0
    for c in prange(V, nogil=True, schedule="dynamic", num_threads=nt):
        acc = 0.0
        for k in range(c + 1, V):
            s = values__val[c] + values__val[k]
            if s != 0.0:
                d = (values__val[c] - values__val[k]) / s
                acc = acc + counts__val[k] * d * d
        row__val[c] = acc
    for c in range(V):
        total += counts__val[c] * row__val[c]
    return 2.0 * total


# --------------------------------------------------------------------------- LOWESS


def lowess_pass(
    const double[::1] x__pt,
    const double[::1] y__pt,
    const double[::1] robust__pt,
    Py_ssize_t k,
    double delta,
    double[::1] fit__pt,
):
    """One LOWESS pass over points sorted by x (Cleveland 1979, local linear fit).

    For each fitted point: the k nearest neighbours form a window [left, right) that slides
    right while x_i is beyond the midpoint of x[left] and x[right]; the radius is the larger
    distance from x_i to the window ends; weights are tricube(|x_j - x_i| / radius) times the
    robustness weights, normalised to sum 1. With fewer than two weights above 1e-12 the
    fit is y_i itself; otherwise it is the weighted least-squares line at x_i (weighted
    spread of x floored at 1e-12). Points within ``delta`` of the last fitted point are
    skipped and linearly interpolated; points tied in x reuse the fit of the first.
    These are the conventions of statsmodels' lowess, which the tests check to 1e-10.
    """
    cdef Py_ssize_t n = x__pt.shape[0], i = 0, last = -1, left = 0, right = k, j, m, stop
    cdef double xi, radius, w, wsum, xbar, spread, fit, d, cut, a
    cdef int nonzero
    cdef double* wt = <double*>malloc(max(k, 1) * sizeof(double))
    if wt == NULL:
        raise MemoryError()
    try:
        with nogil:
            for j in range(n):
                fit__pt[j] = 0.0
            while n > 0:
                xi = x__pt[i]
                while right < n and xi > (x__pt[left] + x__pt[right]) / 2.0:
                    left += 1
                    right += 1
                radius = xi - x__pt[left]
                if x__pt[right - 1] - xi > radius:
                    radius = x__pt[right - 1] - xi
                wsum = 0.0
                nonzero = 0
                # radius 0 (one point, or the whole window tied with x_i): every distance is 0/0,
                # no usable weight, so the fit is y_i (statsmodels' NaN weights end the same way)
                for j in range(left, right if radius > 0.0 else left):
                    d = fabs(x__pt[j] - xi) / radius
                    d = 1.0 - d * d * d
                    w = d * d * d * robust__pt[j]
                    wt[j - left] = w
                    wsum += w
                    if w > 1e-12:
                        nonzero += 1
                if nonzero < 2:
                    fit__pt[i] = y__pt[i]
                else:
                    xbar = 0.0
                    for j in range(left, right):
                        wt[j - left] /= wsum
                        xbar += wt[j - left] * x__pt[j]
                    spread = 0.0
                    for j in range(left, right):
                        spread += wt[j - left] * (x__pt[j] - xbar) * (x__pt[j] - xbar)
                    if spread < 1e-12:
                        spread = 1e-12
                    fit = 0.0
                    for j in range(left, right):
                        fit += wt[j - left] * (1.0 + (xi - xbar) * (x__pt[j] - xbar) / spread) * y__pt[j]
                    fit__pt[i] = fit
                if last < i - 1:  # interpolate the points skipped because of delta
                    for m in range(last + 1, i):
                        a = (x__pt[m] - x__pt[last]) / (x__pt[i] - x__pt[last])
                        fit__pt[m] = a * fit__pt[i] + (1.0 - a) * fit__pt[last]
                # next point to fit: the last one within delta (ties copy the fit); `stop` is
                # the first point beyond delta, or the last point scanned
                last = i
                cut = x__pt[last] + delta
                stop = last
                m = last + 1
                while m < n:
                    stop = m
                    if x__pt[m] > cut:
                        break
                    if x__pt[m] == x__pt[last]:
                        fit__pt[m] = fit__pt[last]
                        last = m
                    m += 1
                i = stop - 1 if stop - 1 > last + 1 else last + 1
                if last >= n - 1:
                    break
    finally:
        free(wt)
