# cython: language_level=3
"""Kernels of ``ddp stats compare``: paired approximate randomization over flat arrays.

No validation, no I/O: :mod:`ddpcore.stats.compare` checks shapes and values and calls these.

Array naming as in ``stats_kernels``: ``X__unit`` is indexed by resampling unit (document or
segment), ``X__col`` by a compared column (one (metric, system) pair), ``X__trial`` by an
approximate-randomization trial, ``X__word`` by a 64-bit word of a trial's swap mask.

Kernels
-------
``ar_exceed_pcg64``   AR exceedance counts; swap masks drawn from numpy's PCG64 stream in-kernel
``ar_exceed_bits``    AR exceedance counts; swap masks given by the caller (packed bits)
``ar_exceed_chunked`` the same on column-chunked data with per-group tables of signed sums (the path
                      compare.py uses; ``observed_abs_chunked`` gives its observed values)
``bootstrap_sums_chunked`` bootstrap column sums (multiplicity-weighted, units in order), register-tiled
``pcg64_words``       raw words of that PCG64 stream (tests, exports)

The statistic of trial t for column k is ``|sum_u sigma[t, u] * d[u, k]|`` with
``sigma = +1`` where bit u of the trial's mask is set (the unit keeps its assignment) and
``-1`` where it is clear (the baseline's and the system's scores of unit u are swapped); a
trial *exceeds* when that value is strictly greater than ``|sum_u d[u, k]|`` (the observed
difference, summed in the same unit order, so an all-ones or all-zeros mask ties exactly and
never exceeds). Each trial is summed sequentially in unit order by one thread and the counts
are integers, so the results are bit-identical for any number of threads.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange, threadid
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport malloc, free

from .pcg64 cimport ddp_pcg64, ddp_pcg64_advance, ddp_pcg64_fill, ddp_pcg64_init, ddp_pcg64_next
from .threads cimport ddp_omp_max_threads, threads_for

cnp.import_array()


cdef extern from *:
    """
    #include <stdint.h>
    #include <stdlib.h>
    #include <string.h>
    #include <math.h>

    /* One block of nt trials: acc (nt x n_cols) = signed sums of the rows of d (n_units x n_cols)
       under the trials' masks (bits: nt x n_words, bit u of trial i = unit u keeps its side);
       counts[k] += number of trials whose |acc| > obs_abs[k]. The nt x n_cols accumulators stay
       in L1 while each row of d is read once per block. */
    __attribute__((target_clones("avx2", "default")))
    static void ddpc_ar_block(const double* __restrict d, Py_ssize_t n_units, Py_ssize_t n_cols,
                              const uint64_t* __restrict bits, Py_ssize_t n_words, int nt,
                              const double* __restrict obs_abs, double* __restrict acc,
                              int64_t* __restrict counts) {
        memset(acc, 0, sizeof(double) * (size_t)nt * (size_t)n_cols);
        for (Py_ssize_t u = 0; u < n_units; ++u) {
            const double* __restrict row = d + u * n_cols;
            const Py_ssize_t w = u >> 6;
            const unsigned b = (unsigned)(u & 63);
            for (int i = 0; i < nt; ++i) {
                const double s = ((bits[(Py_ssize_t)i * n_words + w] >> b) & 1ULL) ? 1.0 : -1.0;
                double* __restrict a = acc + (Py_ssize_t)i * n_cols;
                for (Py_ssize_t k = 0; k < n_cols; ++k) a[k] += s * row[k];
            }
        }
        for (int i = 0; i < nt; ++i) {
            const double* a = acc + (Py_ssize_t)i * n_cols;
            for (Py_ssize_t k = 0; k < n_cols; ++k) counts[k] += (fabs(a[k]) > obs_abs[k]);
        }
    }

    /* Register-tiled variant of ddpc_ar_block for column-chunked data: dc is (n_chunks x n_units x 8)
       (8 columns per chunk, zero-padded), bits (nt_pad x n_words) with nt_pad a multiple of TR
       (padding trials are computed and ignored). Each TR x 8 tile of signed sums lives in registers
       while the chunk's rows stream once per tile; every sum is accumulated in unit order, exactly as
       ddpc_ar_block and ddpc_observed do, so the results are bit-identical to them. */
    typedef double ddpc_v4d __attribute__((vector_size(32)));

    #define DDPC_UB 64  /* units per block of the bootstrap kernel */

    /* Nibble-table variant (the one ar_exceed_chunked uses). Per 64-unit block and chunk, the 16 groups
       of 4 units get a table of the 16 signed sums of their rows (bit j of the pattern set = unit 4g + j
       keeps its side), built as ((s0 d0 + s1 d1) + s2 d2) + s3 d3; each trial then adds one table row
       per group (no multiplications). A trial's sum = the groups' signed sums added in unit order;
       ddpc_nib_observed adds the all-keep rows in the same order, so the all-keep trial equals the
       observed sum exactly (and the all-swap trial its negation). Units past n_units count as zeros. */
    template <int TR>
    static inline __attribute__((always_inline))
    void ddpc_nib_tiles(const double* __restrict dc, Py_ssize_t n_units, Py_ssize_t n_chunks,
                        const uint64_t* __restrict bits, Py_ssize_t n_words, int nt, int nt_pad,
                        const double* __restrict obs_abs, int64_t* __restrict counts,
                        ddpc_v4d* __restrict park, ddpc_v4d* __restrict tab /* 16 x 16 x 2 */) {
        for (Py_ssize_t q = 0; q < (Py_ssize_t)nt_pad * n_chunks * 2; ++q) park[q] = (ddpc_v4d){0.0, 0.0, 0.0, 0.0};
        const ddpc_v4d zero = {0.0, 0.0, 0.0, 0.0};
        for (Py_ssize_t ub = 0; ub < n_units; ub += 64) {
            const int n = (int)(n_units - ub < 64 ? n_units - ub : 64);
            const int n_groups = (n + 3) / 4;
            const Py_ssize_t w = ub >> 6;
            for (Py_ssize_t c = 0; c < n_chunks; ++c) {
                const double* __restrict rows = dc + (c * n_units + ub) * 8;
                for (int g = 0; g < n_groups; ++g) {
                    ddpc_v4d* t = tab + g * 32;
                    ddpc_v4d r[4][2];
                    for (int j = 0; j < 4; ++j) {
                        if (4 * g + j < n) { memcpy(&r[j][0], rows + (4 * g + j) * 8, 32); memcpy(&r[j][1], rows + (4 * g + j) * 8 + 4, 32); }
                        else { r[j][0] = zero; r[j][1] = zero; }
                    }
                    /* level 1: patterns of unit 0 */
                    t[0 * 2] = -r[0][0]; t[0 * 2 + 1] = -r[0][1];
                    t[1 * 2] = r[0][0];  t[1 * 2 + 1] = r[0][1];
                    for (int j = 1; j < 4; ++j) {
                        const int half = 1 << j;
                        for (int v = half - 1; v >= 0; --v) {  /* descending: t[v] is read before overwritten */
                            const ddpc_v4d a0 = t[v * 2], a1 = t[v * 2 + 1];
                            t[(v | half) * 2] = a0 + r[j][0];     t[(v | half) * 2 + 1] = a1 + r[j][1];
                            t[v * 2] = a0 - r[j][0];              t[v * 2 + 1] = a1 - r[j][1];
                        }
                    }
                }
                for (int i0 = 0; i0 < nt_pad; i0 += TR) {
                    ddpc_v4d lo[TR], hi[TR];
                    uint64_t m[TR];
                    for (int i = 0; i < TR; ++i) {
                        lo[i] = park[((Py_ssize_t)(i0 + i) * n_chunks + c) * 2];
                        hi[i] = park[((Py_ssize_t)(i0 + i) * n_chunks + c) * 2 + 1];
                        m[i] = bits[(Py_ssize_t)(i0 + i) * n_words + w];
                    }
                    for (int g = 0; g < n_groups; ++g) {
                        const ddpc_v4d* t = tab + g * 32;
                        for (int i = 0; i < TR; ++i) {
                            const unsigned nib = (unsigned)((m[i] >> (4 * g)) & 15ULL);
                            lo[i] += t[nib * 2];
                            hi[i] += t[nib * 2 + 1];
                        }
                    }
                    for (int i = 0; i < TR; ++i) {
                        park[((Py_ssize_t)(i0 + i) * n_chunks + c) * 2] = lo[i];
                        park[((Py_ssize_t)(i0 + i) * n_chunks + c) * 2 + 1] = hi[i];
                    }
                }
            }
        }
        for (int i = 0; i < nt; ++i)
            for (Py_ssize_t c = 0; c < n_chunks; ++c)
                for (int j = 0; j < 4; ++j) {
                    counts[c * 8 + j] += (fabs(park[((Py_ssize_t)i * n_chunks + c) * 2][j]) > obs_abs[c * 8 + j]);
                    counts[c * 8 + 4 + j] += (fabs(park[((Py_ssize_t)i * n_chunks + c) * 2 + 1][j]) > obs_abs[c * 8 + 4 + j]);
                }
    }

    __attribute__((target_clones("avx2", "default")))
    static void ddpc_nib_tiles4(const double* dc, Py_ssize_t n_units, Py_ssize_t n_chunks, const uint64_t* bits,
                                Py_ssize_t n_words, int nt, int nt_pad, const double* obs_abs, int64_t* counts,
                                ddpc_v4d* park, ddpc_v4d* tab) {
        ddpc_nib_tiles<4>(dc, n_units, n_chunks, bits, n_words, nt, nt_pad, obs_abs, counts, park, tab);
    }

    /* |observed| per column with the nibble kernel's association: per chunk, groups of 4 units in
       order, each group ((d0 + d1) + d2) + d3, added to the running sum. */
    static void ddpc_nib_observed(const double* dc, Py_ssize_t n_units, Py_ssize_t n_chunks, double* out) {
        for (Py_ssize_t c = 0; c < n_chunks; ++c) {
            for (int j = 0; j < 8; ++j) {
                double acc = 0.0;
                for (Py_ssize_t u0 = 0; u0 < n_units; u0 += 4) {
                    double t = dc[(c * n_units + u0) * 8 + j];
                    for (int k = 1; k < 4; ++k) t = t + ((u0 + k < n_units) ? dc[(c * n_units + u0 + k) * 8 + j] : 0.0);
                    acc += t;
                }
                out[c * 8 + j] = fabs(acc);
            }
        }
    }

    /* trials [t0, t0 + nt) on chunked data; masks from the generator (stream words t*n_words ...)
       or, when given_bits is not NULL, copied from the caller's (n_trials x n_words) matrix. */
    static int ddpc_ar_chunked(uint64_t shi, uint64_t slo, uint64_t ihi, uint64_t ilo, const uint64_t* given_bits,
                               Py_ssize_t t0, int nt, const double* dc, Py_ssize_t n_units, Py_ssize_t n_chunks,
                               Py_ssize_t n_words, const double* obs_abs, int64_t* counts) {
        const int nt_pad = (nt + 3) / 4 * 4;
        uint64_t* bits = (uint64_t*)calloc((size_t)nt_pad * (size_t)n_words + 1, sizeof(uint64_t));
        if (!bits) return -1;
        if (given_bits) {
            memcpy(bits, given_bits + t0 * n_words, sizeof(uint64_t) * (size_t)nt * (size_t)n_words);
        } else {
            ddp_pcg64_fill(bits, (int64_t)nt * n_words, shi, slo, ihi, ilo, (uint64_t)t0 * (uint64_t)n_words);
        }
        ddpc_v4d* park = (ddpc_v4d*)aligned_alloc(32, sizeof(ddpc_v4d) * 2 * (size_t)nt_pad * (size_t)n_chunks + 32);
        ddpc_v4d* tab = (ddpc_v4d*)aligned_alloc(32, sizeof(ddpc_v4d) * 16 * 32);
        if (!park || !tab) { free(bits); free(park); free(tab); return -1; }
        ddpc_nib_tiles4(dc, n_units, n_chunks, bits, n_words, nt, nt_pad, obs_abs, counts, park, tab);
        free(bits);
        free(park);
        free(tab);
        return 0;
    }

    /* Trials [t0, t0 + nt) from the generator: trial t uses raw words t*n_words ... of the stream. */
    static int ddpc_ar_block_pcg64(uint64_t shi, uint64_t slo, uint64_t ihi, uint64_t ilo,
                                   Py_ssize_t t0, int nt, const double* d, Py_ssize_t n_units,
                                   Py_ssize_t n_cols, Py_ssize_t n_words, const double* obs_abs,
                                   int64_t* counts) {
        uint64_t* bits = (uint64_t*)malloc(sizeof(uint64_t) * (size_t)nt * (size_t)n_words + 8);
        double* acc = (double*)malloc(sizeof(double) * (size_t)nt * (size_t)n_cols + 8);
        if (!bits || !acc) { free(bits); free(acc); return -1; }
        ddp_pcg64_fill(bits, (int64_t)nt * n_words, shi, slo, ihi, ilo, (uint64_t)t0 * (uint64_t)n_words);
        ddpc_ar_block(d, n_units, n_cols, bits, n_words, nt, obs_abs, acc, counts);
        free(bits);
        free(acc);
        return 0;
    }

    static int ddpc_ar_block_bits(const uint64_t* bits, int nt, const double* d, Py_ssize_t n_units,
                                  Py_ssize_t n_cols, Py_ssize_t n_words, const double* obs_abs,
                                  int64_t* counts) {
        double* acc = (double*)malloc(sizeof(double) * (size_t)nt * (size_t)n_cols + 8);
        if (!acc) return -1;
        ddpc_ar_block(d, n_units, n_cols, bits, n_words, nt, obs_abs, acc, counts);
        free(acc);
        return 0;
    }

    /* observed |sum_u d[u, k]| in unit order (the all-ones trial reproduces it exactly) */
    static void ddpc_observed(const double* d, Py_ssize_t n_units, Py_ssize_t n_cols, double* out) {
        for (Py_ssize_t k = 0; k < n_cols; ++k) out[k] = 0.0;
        for (Py_ssize_t u = 0; u < n_units; ++u)
            for (Py_ssize_t k = 0; k < n_cols; ++k) out[k] += 1.0 * d[u * n_cols + k];
        for (Py_ssize_t k = 0; k < n_cols; ++k) out[k] = fabs(out[k]);
    }

    """
    int ddpc_ar_block_pcg64(uint64_t shi, uint64_t slo, uint64_t ihi, uint64_t ilo,
                            Py_ssize_t t0, int nt, const double* d, Py_ssize_t n_units,
                            Py_ssize_t n_cols, Py_ssize_t n_words, const double* obs_abs,
                            int64_t* counts) nogil
    int ddpc_ar_block_bits(const uint64_t* bits, int nt, const double* d, Py_ssize_t n_units,
                           Py_ssize_t n_cols, Py_ssize_t n_words, const double* obs_abs,
                           int64_t* counts) nogil
    void ddpc_observed(const double* d, Py_ssize_t n_units, Py_ssize_t n_cols, double* out) nogil
    void ddpc_nib_observed(const double* dc, Py_ssize_t n_units, Py_ssize_t n_chunks, double* out) nogil
    int ddpc_ar_chunked(uint64_t shi, uint64_t slo, uint64_t ihi, uint64_t ilo, const uint64_t* given_bits,
                        Py_ssize_t t0, int nt, const double* dc, Py_ssize_t n_units, Py_ssize_t n_chunks,
                        Py_ssize_t n_words, const double* obs_abs, int64_t* counts) nogil


cdef int _block_trials(Py_ssize_t n_cols) noexcept nogil:
    """Trials per block: the block's accumulators (trials x columns doubles) fit in ~16 KB of L1."""
    cdef Py_ssize_t nt = 2048 // (n_cols if n_cols > 0 else 1)
    if nt < 1:
        return 1
    if nt > 32:
        return 32
    return <int>nt


def observed_abs(const double[:, ::1] d__unit_col, double[::1] out__col):
    """``out[k] = |sum_u d[u, k]|``, summed in unit order (as every AR trial is)."""
    if d__unit_col.shape[0] == 0 or d__unit_col.shape[1] == 0:
        out__col[:] = 0.0
        return
    with nogil:
        ddpc_observed(&d__unit_col[0, 0], d__unit_col.shape[0], d__unit_col.shape[1], &out__col[0])


def ar_exceed_pcg64(
    uint64_t state_hi,
    uint64_t state_lo,
    uint64_t inc_hi,
    uint64_t inc_lo,
    Py_ssize_t n_trials,
    const double[:, ::1] d__unit_col,
    const double[::1] obs_abs__col,
    int64_t[::1] out__col,
    int num_threads=0,
):
    """Exceedance counts of ``n_trials`` AR trials whose masks come from a PCG64 stream.

    ``(state, inc)`` is a ``numpy.random.PCG64`` state in 64-bit halves. Trial t's mask is raw
    words ``t * n_words ... (t + 1) * n_words - 1`` of the stream (``n_words = ceil(n_units / 64)``),
    bit ``u % 64`` of word ``u // 64`` for unit u. ``out`` (n_cols,) receives the counts.
    """
    cdef Py_ssize_t n_units = d__unit_col.shape[0], n_cols = d__unit_col.shape[1]
    cdef Py_ssize_t n_words = (n_units + 63) // 64
    cdef int tb = _block_trials(n_cols)
    cdef Py_ssize_t n_blocks = (n_trials + tb - 1) // tb
    cdef int nt = threads_for(num_threads, <double>n_trials * <double>n_units * <double>n_cols)
    cdef Py_ssize_t blk, k, t0
    cdef int tid, failed = 0, this_nt
    out__col[:] = 0
    if n_trials <= 0 or n_units == 0 or n_cols == 0:
        return
    counts = np.zeros((nt, n_cols), dtype=np.int64)
    cdef int64_t[:, ::1] cnt = counts
    cdef const double* dp = &d__unit_col[0, 0]
    cdef const double* op = &obs_abs__col[0]
    for blk in prange(n_blocks, nogil=True, schedule="dynamic", num_threads=nt):
        tid = threadid()
        t0 = blk * tb
        this_nt = <int>(n_trials - t0 if n_trials - t0 < tb else tb)
        if ddpc_ar_block_pcg64(state_hi, state_lo, inc_hi, inc_lo, t0, this_nt, dp, n_units, n_cols,
                               n_words, op, &cnt[tid, 0]) != 0:
            failed += 1
    if failed:
        raise MemoryError()
    np.asarray(out__col)[:] = counts.sum(axis=0)


def ar_exceed_bits(
    const uint64_t[:, ::1] bits__trial_word,
    const double[:, ::1] d__unit_col,
    const double[::1] obs_abs__col,
    int64_t[::1] out__col,
    int num_threads=0,
):
    """Exceedance counts for caller-given masks: ``bits`` (n_trials, ceil(n_units / 64)), bit
    ``u % 64`` of word ``u // 64`` set = unit u keeps its assignment."""
    cdef Py_ssize_t n_trials = bits__trial_word.shape[0], n_words = bits__trial_word.shape[1]
    cdef Py_ssize_t n_units = d__unit_col.shape[0], n_cols = d__unit_col.shape[1]
    cdef int tb = _block_trials(n_cols)
    cdef Py_ssize_t n_blocks = (n_trials + tb - 1) // tb
    cdef int nt = threads_for(num_threads, <double>n_trials * <double>n_units * <double>n_cols)
    cdef Py_ssize_t blk, t0
    cdef int tid, failed = 0, this_nt
    out__col[:] = 0
    if n_trials <= 0 or n_units == 0 or n_cols == 0:
        return
    if n_words < (n_units + 63) // 64:
        raise ValueError("bits has too few words per trial")
    counts = np.zeros((nt, n_cols), dtype=np.int64)
    cdef int64_t[:, ::1] cnt = counts
    cdef const double* dp = &d__unit_col[0, 0]
    cdef const double* op = &obs_abs__col[0]
    cdef const uint64_t* bp = &bits__trial_word[0, 0]
    for blk in prange(n_blocks, nogil=True, schedule="dynamic", num_threads=nt):
        tid = threadid()
        t0 = blk * tb
        this_nt = <int>(n_trials - t0 if n_trials - t0 < tb else tb)
        if ddpc_ar_block_bits(bp + t0 * n_words, this_nt, dp, n_units, n_cols, n_words, op, &cnt[tid, 0]) != 0:
            failed += 1
    if failed:
        raise MemoryError()
    np.asarray(out__col)[:] = counts.sum(axis=0)


def pcg64_words(uint64_t state_hi, uint64_t state_lo, uint64_t inc_hi, uint64_t inc_lo, uint64_t skip,
                uint64_t[::1] out):
    """Raw PCG64 words ``skip ... skip + len(out) - 1`` of the stream (tests, exports)."""
    if out.shape[0]:
        with nogil:
            ddp_pcg64_fill(&out[0], out.shape[0], state_hi, state_lo, inc_hi, inc_lo, skip)


def max_threads() -> int:
    return ddp_omp_max_threads()


def ar_exceed_chunked(
    uint64_t state_hi,
    uint64_t state_lo,
    uint64_t inc_hi,
    uint64_t inc_lo,
    Py_ssize_t n_trials,
    const double[:, :, ::1] d__chunk_unit_8,
    const double[::1] obs_abs__col,
    int64_t[::1] out__col,
    bits__trial_word=None,
    int num_threads=0,
):
    """Exceedance counts on column-chunked differences (the fast path; same results as
    :func:`ar_exceed_pcg64` / :func:`ar_exceed_bits`).

    ``d`` has shape (n_chunks, n_units, 8): columns ``8c .. 8c + 7`` of the (n_units x n_cols)
    difference matrix, zero-padded; ``obs_abs`` and ``out`` have ``8 * n_chunks`` entries.
    Masks come from the PCG64 stream (as :func:`ar_exceed_pcg64`) unless ``bits`` (uint64,
    (n_trials, ceil(n_units / 64))) is given, in which case ``n_trials`` is its row count.
    """
    cdef Py_ssize_t n_chunks = d__chunk_unit_8.shape[0], n_units = d__chunk_unit_8.shape[1]
    cdef Py_ssize_t n_words = (n_units + 63) // 64
    cdef Py_ssize_t n_cols = n_chunks * 8
    cdef const uint64_t[:, ::1] given
    cdef const uint64_t* gp = NULL
    if bits__trial_word is not None:
        given = bits__trial_word
        if given.shape[1] < n_words:
            raise ValueError("bits has too few words per trial")
        if given.shape[1] != n_words:
            raise ValueError("bits must have exactly ceil(n_units / 64) words per trial")
        n_trials = given.shape[0]
        if n_trials > 0:
            gp = &given[0, 0]
    cdef int tb = 64
    cdef Py_ssize_t n_blocks = (n_trials + tb - 1) // tb
    cdef int nt = threads_for(num_threads, <double>n_trials * <double>n_units * 8.0 * <double>n_chunks)
    cdef Py_ssize_t blk, t0
    cdef int tid, failed = 0, this_nt
    np.asarray(out__col)[:] = 0
    if n_trials <= 0 or n_units == 0 or n_chunks == 0:
        return
    if obs_abs__col.shape[0] < n_cols or out__col.shape[0] < n_cols:
        raise ValueError("obs_abs and out need 8 * n_chunks entries")
    counts = np.zeros((nt, n_cols), dtype=np.int64)
    cdef int64_t[:, ::1] cnt = counts
    cdef const double* dp = &d__chunk_unit_8[0, 0, 0]
    cdef const double* op = &obs_abs__col[0]
    for blk in prange(n_blocks, nogil=True, schedule="dynamic", num_threads=nt):
        tid = threadid()
        t0 = blk * tb
        this_nt = <int>(n_trials - t0 if n_trials - t0 < tb else tb)
        if ddpc_ar_chunked(state_hi, state_lo, inc_hi, inc_lo, gp, t0, this_nt, dp, n_units, n_chunks, n_words,
                           op, &cnt[tid, 0]) != 0:
            failed += 1
    if failed:
        raise MemoryError()
    np.asarray(out__col)[:n_cols] = counts.sum(axis=0)


cdef extern from *:
    """
    /* Bootstrap sums on chunked data: out[r, 8c + j] = sum_u mult[r][u] * dc[c][u][j], summed over the
       units in order (so the result does not depend on threads, BLAS or the CPU: no fused multiply-add,
       see the target list). Same tiling as the AR kernel: 64-unit blocks, the block's multiplicities
       copied to `sg`, 4 replicates x 8 columns of sums in registers, parked between unit blocks. */
    template <int TR>
    static inline __attribute__((always_inline))
    void ddpc_wsum_tiles(const double* __restrict dc, Py_ssize_t n_units, Py_ssize_t n_chunks,
                         const double* __restrict mult, int nr, int nr_pad, double* __restrict out,
                         Py_ssize_t out_stride, ddpc_v4d* __restrict park, double* __restrict sg) {
        for (Py_ssize_t q = 0; q < (Py_ssize_t)nr_pad * n_chunks * 2; ++q) park[q] = (ddpc_v4d){0.0, 0.0, 0.0, 0.0};
        for (Py_ssize_t ub = 0; ub < n_units; ub += DDPC_UB) {
            const int n = (int)(n_units - ub < DDPC_UB ? n_units - ub : DDPC_UB);
            for (int i = 0; i < nr_pad; ++i)
                for (int b = 0; b < n; ++b) sg[i * DDPC_UB + b] = (i < nr) ? mult[(Py_ssize_t)i * n_units + ub + b] : 0.0;
            for (Py_ssize_t c = 0; c < n_chunks; ++c) {
                const double* __restrict rows = dc + (c * n_units + ub) * 8;
                for (int i0 = 0; i0 < nr_pad; i0 += TR) {
                    ddpc_v4d lo[TR], hi[TR];
                    for (int i = 0; i < TR; ++i) {
                        lo[i] = park[((Py_ssize_t)(i0 + i) * n_chunks + c) * 2];
                        hi[i] = park[((Py_ssize_t)(i0 + i) * n_chunks + c) * 2 + 1];
                    }
                    for (int b = 0; b < n; ++b) {
                        ddpc_v4d r0, r1;
                        memcpy(&r0, rows + b * 8, sizeof r0);
                        memcpy(&r1, rows + b * 8 + 4, sizeof r1);
                        for (int i = 0; i < TR; ++i) {
                            const double md = sg[(i0 + i) * DDPC_UB + b];
                            const ddpc_v4d mv = {md, md, md, md};
                            lo[i] += mv * r0;
                            hi[i] += mv * r1;
                        }
                    }
                    for (int i = 0; i < TR; ++i) {
                        park[((Py_ssize_t)(i0 + i) * n_chunks + c) * 2] = lo[i];
                        park[((Py_ssize_t)(i0 + i) * n_chunks + c) * 2 + 1] = hi[i];
                    }
                }
            }
        }
        for (int i = 0; i < nr; ++i)
            for (Py_ssize_t c = 0; c < n_chunks; ++c)
                for (int j = 0; j < 4; ++j) {
                    out[(Py_ssize_t)i * out_stride + c * 8 + j] = park[((Py_ssize_t)i * n_chunks + c) * 2][j];
                    out[(Py_ssize_t)i * out_stride + c * 8 + 4 + j] = park[((Py_ssize_t)i * n_chunks + c) * 2 + 1][j];
                }
    }

    /* avx2 without fma on purpose: separate multiply and add round the same on every x86-64 CPU */
    __attribute__((target_clones("avx2", "default")))
    static void ddpc_wsum_tiles4(const double* dc, Py_ssize_t n_units, Py_ssize_t n_chunks, const double* mult,
                                 int nr, int nr_pad, double* out, Py_ssize_t out_stride, ddpc_v4d* park, double* sg) {
        ddpc_wsum_tiles<4>(dc, n_units, n_chunks, mult, nr, nr_pad, out, out_stride, park, sg);
    }

    /* replicates [r0, r0 + nr) (nr <= 32): multiplicities from the PCG64 stream (replicate r = raw words
       r * n_units ...) or from idx (n_rep x n_units draws), then the weighted sums into out rows r0.. */
    static int ddpc_boot_block(uint64_t shi, uint64_t slo, uint64_t ihi, uint64_t ilo, const int64_t* idx,
                               Py_ssize_t r0, int nr, const double* dc, Py_ssize_t n_units, Py_ssize_t n_chunks,
                               double* out, Py_ssize_t out_stride) {
        const int nr_pad = (nr + 3) / 4 * 4;
        double* mult = (double*)calloc((size_t)nr * (size_t)n_units + 1, sizeof(double));
        ddpc_v4d* park = (ddpc_v4d*)aligned_alloc(32, sizeof(ddpc_v4d) * 2 * (size_t)nr_pad * (size_t)n_chunks + 32);
        double* sg = (double*)aligned_alloc(32, sizeof(double) * 32 * DDPC_UB);
        if (!mult || !park || !sg) { free(mult); free(park); free(sg); return -1; }
        for (int i = 0; i < nr; ++i) {
            double* m = mult + (Py_ssize_t)i * n_units;
            if (idx) {
                const int64_t* row = idx + (r0 + i) * n_units;
                for (Py_ssize_t k = 0; k < n_units; ++k) m[row[k]] += 1.0;
            } else {
                ddp_pcg64 g;
                ddp_pcg64_init(&g, shi, slo, ihi, ilo);
                ddp_pcg64_advance(&g, (uint64_t)(r0 + i) * (uint64_t)n_units);
                for (Py_ssize_t k = 0; k < n_units; ++k) m[ddp_mulhi64(ddp_pcg64_next(&g), (uint64_t)n_units)] += 1.0;
            }
        }
        ddpc_wsum_tiles4(dc, n_units, n_chunks, mult, nr, nr_pad, out + r0 * out_stride, out_stride, park, sg);
        free(mult);
        free(park);
        free(sg);
        return 0;
    }
    """
    int ddpc_boot_block(uint64_t shi, uint64_t slo, uint64_t ihi, uint64_t ilo, const int64_t* idx,
                        Py_ssize_t r0, int nr, const double* dc, Py_ssize_t n_units, Py_ssize_t n_chunks,
                        double* out, Py_ssize_t out_stride) nogil


def bootstrap_sums_chunked(
    uint64_t state_hi,
    uint64_t state_lo,
    uint64_t inc_hi,
    uint64_t inc_lo,
    const double[:, :, ::1] d__chunk_unit_8,
    double[:, ::1] out__rep_col,
    index__rep_draw=None,
    int num_threads=0,
):
    """Bootstrap column sums of chunked per-unit values: ``out[r, 8c + j] = sum_u m[r, u] * d[c, u, j]``
    with ``m[r, u]`` the multiplicity of unit u among replicate r's ``n_units`` draws.

    Draws: PCG64 raw words ``r * n_units ...`` mapped by ``floor(raw * n_units / 2**64)`` (the
    generator of ``ddpcore.stats.bootstrap``), or ``index`` (int64, (n_rep, n_units), range-checked).
    ``out`` has n_rep rows and at least ``8 * n_chunks`` columns. Replicates run in parallel in blocks
    of 32; each sum runs over the units in order, so results do not depend on the thread count.
    """
    cdef Py_ssize_t n_chunks = d__chunk_unit_8.shape[0], n_units = d__chunk_unit_8.shape[1]
    cdef Py_ssize_t n_rep = out__rep_col.shape[0], stride = out__rep_col.shape[1]
    cdef const int64_t[:, ::1] idx
    cdef const int64_t* ip = NULL
    if stride < 8 * n_chunks:
        raise ValueError("out needs 8 * n_chunks columns")
    if index__rep_draw is not None:
        idx = index__rep_draw
        if idx.shape[0] != n_rep or idx.shape[1] != n_units:
            raise ValueError("index must have shape (n_rep, n_units)")
        if n_rep > 0:
            ip = &idx[0, 0]
    cdef int nt = threads_for(num_threads, <double>n_rep * <double>n_units * 8.0 * <double>n_chunks)
    cdef Py_ssize_t n_blocks = (n_rep + 31) // 32, blk, r0
    cdef int failed = 0, this_nr
    if n_rep == 0 or n_units == 0 or n_chunks == 0:
        return
    cdef const double* dp = &d__chunk_unit_8[0, 0, 0]
    cdef double* op = &out__rep_col[0, 0]
    for blk in prange(n_blocks, nogil=True, schedule="dynamic", num_threads=nt):
        r0 = blk * 32
        this_nr = <int>(n_rep - r0 if n_rep - r0 < 32 else 32)
        if ddpc_boot_block(state_hi, state_lo, inc_hi, inc_lo, ip, r0, this_nr, dp, n_units, n_chunks, op,
                           stride) != 0:
            failed += 1
    if failed:
        raise MemoryError()


def observed_abs_chunked(const double[:, :, ::1] d__chunk_unit_8, double[::1] out__col):
    """``|sum_u d[u, k]|`` per column of chunked data, in the association of :func:`ar_exceed_chunked`
    (groups of 4 units, ``((d0 + d1) + d2) + d3``, added in unit order)."""
    cdef Py_ssize_t n_chunks = d__chunk_unit_8.shape[0], n_units = d__chunk_unit_8.shape[1]
    if out__col.shape[0] < 8 * n_chunks:
        raise ValueError("out needs 8 * n_chunks entries")
    if n_chunks == 0 or n_units == 0:
        np.asarray(out__col)[:] = 0.0
        return
    with nogil:
        ddpc_nib_observed(&d__chunk_unit_8[0, 0, 0], n_units, n_chunks, &out__col[0])
