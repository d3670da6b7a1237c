# cython: language_level=3
"""Wilcoxon signed-rank statistics for many tests at once (no polars, no validation, no I/O).

``ddpcore.stats.clustering`` validates input and turns these statistics into p-values; the
oracle is ``scipy.stats.wilcoxon`` (tests/stats/test_cluster.py).

For each test the non-NaN differences are collected, zeros counted and dropped (scipy's
``zero_method="wilcox"``), the rest sorted by absolute value (``std::sort``), and each run of
equal absolute values gets the average of its 1-based positions as rank. Outputs per test:

``r_plus``     sum of the ranks of the positive differences
``tie_term``   sum over tie groups of t**3 - t
``n_obs``      non-NaN differences (zeros included)
``n_zero``     zero differences
``has_ties``   1 if some tie group has t > 1

Array naming: ``X__test`` indexed by test, ``x__key_sys`` a (keys x systems) score matrix,
``i__pair``/``j__pair`` the two systems of each pair (difference = x[:, i] - x[:, j]).
Tests run in parallel (OpenMP ``prange``); each test is computed by one thread, so results do
not depend on the number of threads.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint8_t

cnp.import_array()


cdef extern from *:
    """
    #include <algorithm>
    #include <cmath>
    #include <cstdlib>
    #include <cstdint>

    /* Signed-rank statistics of n differences d[k] = a[k*stride] - (b ? b[k*stride] : 0);
       NaN differences are absent. buf: scratch space for n doubles. */
    static inline void ddp_signed_rank(const double* a, const double* b, Py_ssize_t stride, Py_ssize_t n,
                                       double* buf, double* r_plus, double* tie_term, int64_t* n_obs,
                                       int64_t* n_zero, uint8_t* has_ties) {
        Py_ssize_t c = 0, obs = 0, zero = 0;
        for (Py_ssize_t k = 0; k < n; ++k) {
            double d = b ? a[k * stride] - b[k * stride] : a[k * stride];
            if (std::isnan(d)) continue;
            ++obs;
            if (d == 0.0) { ++zero; continue; }
            buf[c++] = d;
        }
        std::sort(buf, buf + c, [](double x, double y) { return std::fabs(x) < std::fabs(y); });
        double rp = 0.0, tt = 0.0;
        uint8_t ties = 0;
        Py_ssize_t s = 0;
        while (s < c) {
            Py_ssize_t e = s + 1;
            double v = std::fabs(buf[s]);
            while (e < c && std::fabs(buf[e]) == v) ++e;
            double rank = 0.5 * (double)(s + 1 + e);  /* mean of positions s+1 .. e */
            Py_ssize_t pos = 0;
            for (Py_ssize_t q = s; q < e; ++q) pos += buf[q] > 0.0;
            rp += rank * (double)pos;
            double t = (double)(e - s);
            if (e - s > 1) { ties = 1; tt += t * t * t - t; }
            s = e;
        }
        *r_plus = rp; *tie_term = tt; *n_obs = obs; *n_zero = zero; *has_ties = ties;
    }
    """
    void ddp_signed_rank(const double* a, const double* b, Py_ssize_t stride, Py_ssize_t n, double* buf,
                         double* r_plus, double* tie_term, int64_t* n_obs, int64_t* n_zero,
                         uint8_t* has_ties) noexcept nogil


from libc.stdlib cimport malloc, free

from .threads cimport threads_for as _threads_for


def signed_rank_rows(
    const double[:, ::1] d__test_obs,
    double[::1] r_plus__test,
    double[::1] tie_term__test,
    int64_t[::1] n_obs__test,
    int64_t[::1] n_zero__test,
    uint8_t[::1] has_ties__test,
    int num_threads=0,
):
    """Statistics of each row of ``d`` (shape (n_tests, n_obs), NaN = absent difference)."""
    cdef Py_ssize_t n_tests = d__test_obs.shape[0], n = d__test_obs.shape[1], t
    cdef double* buf
    cdef int failed = 0
    cdef int nt = _threads_for(num_threads, <double>n_tests * <double>n * 16.0)
    if n_tests == 0:
        return
    for t in prange(n_tests, nogil=True, schedule="dynamic", num_threads=nt):
        buf = <double*>malloc((n + 1) * sizeof(double))
        if buf == NULL:
            failed = 1
        else:
            ddp_signed_rank(&d__test_obs[t, 0] if n > 0 else NULL, NULL, 1, n, buf, &r_plus__test[t],
                            &tie_term__test[t], &n_obs__test[t], &n_zero__test[t], &has_ties__test[t])
            free(buf)
    if failed:
        raise MemoryError("signed_rank_rows: cannot allocate the sort buffer")


def signed_rank_pairs(
    const double[:, ::1] x__key_sys,
    const int64_t[::1] i__pair,
    const int64_t[::1] j__pair,
    double[::1] r_plus__pair,
    double[::1] tie_term__pair,
    int64_t[::1] n_obs__pair,
    int64_t[::1] n_zero__pair,
    uint8_t[::1] has_ties__pair,
    int num_threads=0,
):
    """Statistics of ``x[:, i] - x[:, j]`` for every pair (``x`` (n_keys, n_systems), NaN = absent)."""
    cdef Py_ssize_t n_pairs = i__pair.shape[0], n = x__key_sys.shape[0], s = x__key_sys.shape[1], p
    cdef double* buf
    cdef const double* base
    cdef int failed = 0
    cdef int nt = _threads_for(num_threads, <double>n_pairs * <double>n * 16.0)
    if n_pairs == 0 or n == 0:
        for p in range(n_pairs):
            r_plus__pair[p] = 0.0
            tie_term__pair[p] = 0.0
            n_obs__pair[p] = 0
            n_zero__pair[p] = 0
            has_ties__pair[p] = 0
        return
    base = &x__key_sys[0, 0]
    for p in prange(n_pairs, nogil=True, schedule="dynamic", num_threads=nt):
        buf = <double*>malloc((n + 1) * sizeof(double))
        if buf == NULL:
            failed = 1
        else:
            ddp_signed_rank(base + i__pair[p], base + j__pair[p], s, n, buf, &r_plus__pair[p],
                            &tie_term__pair[p], &n_obs__pair[p], &n_zero__pair[p], &has_ties__pair[p])
            free(buf)
    if failed:
        raise MemoryError("signed_rank_pairs: cannot allocate the sort buffer")


cdef extern from *:
    """
    /* Sign-flip sums of permutations r0..r1-1: out[r, :] = sum_k (+-1) d[k, :], keys in order.
       restrict + AVX2 clone so gcc vectorises the inner loop. */
    __attribute__((target_clones("avx2", "default")))
    static void ddp_sign_flip_block(const uint8_t* __restrict__ flip, Py_ssize_t n_keys,
                                    const double* __restrict__ d, Py_ssize_t p,
                                    double* __restrict__ out, Py_ssize_t r0, Py_ssize_t r1) {
        for (Py_ssize_t r = r0; r < r1; ++r)
            for (Py_ssize_t j = 0; j < p; ++j) out[r * p + j] = 0.0;
        for (Py_ssize_t k = 0; k < n_keys; ++k) {
            const double* __restrict__ dk = d + k * p;
            for (Py_ssize_t r = r0; r < r1; ++r) {
                double* __restrict__ acc = out + r * p;
                if (flip[r * n_keys + k]) { for (Py_ssize_t j = 0; j < p; ++j) acc[j] += dk[j]; }
                else { for (Py_ssize_t j = 0; j < p; ++j) acc[j] -= dk[j]; }
            }
        }
    }
    """
    void ddp_sign_flip_block(const uint8_t* flip, Py_ssize_t n_keys, const double* d, Py_ssize_t p,
                             double* out, Py_ssize_t r0, Py_ssize_t r1) noexcept nogil


def sign_flip_sums(
    const uint8_t[:, ::1] flip__perm_key,
    const double[:, ::1] d__key_pair,
    double[:, ::1] out__perm_pair,
    int num_threads=0,
):
    """Sign-flip permutation sums ``out[r, p] = sum_k (2 * flip[r, k] - 1) * d[k, p]``.

    Shapes: ``flip`` (n_perm, n_keys) with entries 0/1, ``d`` (n_keys, n_pairs) paired differences
    (0 where a pair has no observation), ``out`` (n_perm, n_pairs). Keys are added in order for
    every permutation; blocks of 8 permutations per thread share each key's row of ``d`` (cache
    reuse), so results do not depend on the thread count. Replaces a BLAS product, whose
    multi-threading degrades badly on oversubscribed machines.
    """
    cdef Py_ssize_t n_perm = flip__perm_key.shape[0], n_keys = flip__perm_key.shape[1]
    cdef Py_ssize_t n_pairs = d__key_pair.shape[1], r, k, j, blk, r0, r1
    cdef Py_ssize_t rows_per_block = 8  # 8 accumulators of n_pairs doubles stay in L1/L2
    cdef Py_ssize_t n_blocks = (n_perm + rows_per_block - 1) // rows_per_block
    cdef int nt = _threads_for(num_threads, <double>n_perm * <double>n_keys * <double>n_pairs)
    if n_perm == 0 or n_pairs == 0:
        return
    if n_keys == 0:
        for r in range(n_perm):
            for j in range(n_pairs):
                out__perm_pair[r, j] = 0.0
        return
    for blk in prange(n_blocks, nogil=True, schedule="dynamic", num_threads=nt):
        r0 = blk * rows_per_block
        r1 = min(r0 + rows_per_block, n_perm)
        ddp_sign_flip_block(&flip__perm_key[0, 0], n_keys, &d__key_pair[0, 0], n_pairs, &out__perm_pair[0, 0], r0, r1)
