# cython: language_level=3
"""Segmented per-group moments over rows already sorted by group (``tost_grouped``).

When a table's rows come grouped (every group's rows contiguous, groups in ascending key
order), each group is one segment: its sum, then its squared deviations, are taken while the
segment is in cache, and no per-group accumulator is written at random. The arithmetic is the
arithmetic of ``stats_kernels.group_moments`` in the same order (sum in row order, mean =
sum / n or the exact common value, then sum of squared deviations in row order), so the
results are bit-for-bit the same.

Kernels
-------
``segment_moments``  per-segment n, mean, ss, constant flag and first row; -1 if keys decrease
``scan_values``      one pass: any non-finite value? any |value| > limit? (validation fast path)
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport isnan, isfinite, fabs, NAN
from libc.stdint cimport int64_t, uint8_t

cnp.import_array()


def segment_moments(
    const int64_t[::1] keys__row,
    const double[::1] x__row,
    const double[::1] y__row,
    double[::1] n__seg,
    double[::1] mean__seg,
    double[::1] ss__seg,
    uint8_t[::1] constant__seg,
    int64_t[::1] first_row__seg,
):
    """Moments of ``x - y`` (or ``x`` when ``y__row`` is None) over runs of equal keys.

    ``keys__row`` (int64, shape (n_rows,)) must be non-decreasing; a run of equal keys is one
    segment. Outputs (shape (>= n_segments,)): count of non-NaN values, mean, sum of squared
    deviations, "all values equal" flag (``mean`` then holds that exact value; a segment with
    no value gets NaN, NaN, 0) and the first row of each segment. Returns the number of
    segments, or -1 as soon as a key is smaller than the one before (rows not grouped in
    ascending order), or -2 if there are more segments than output slots.
    """
    cdef Py_ssize_t n = keys__row.shape[0], cap = n__seg.shape[0]
    cdef Py_ssize_t i, start, end, s = 0
    cdef double v, m, total, first, cnt, acc
    cdef bint paired = y__row is not None
    cdef bint const_
    cdef const double* xp = &x__row[0] if n > 0 else NULL
    cdef const double* yp = NULL
    cdef const int64_t* kp = &keys__row[0] if n > 0 else NULL
    if paired and n > 0:
        yp = &y__row[0]
    with nogil:
        start = 0
        while start < n:
            end = start + 1
            while end < n and kp[end] == kp[start]:
                end += 1
            if end < n and kp[end] < kp[start]:
                s = -1
                break
            if s >= cap:
                s = -2
                break
            cnt = 0.0
            total = 0.0
            first = 0.0
            const_ = 1
            for i in range(start, end):
                v = xp[i] - yp[i] if paired else xp[i]
                if isnan(v):
                    continue
                if cnt == 0.0:
                    first = v
                elif v != first:
                    const_ = 0
                cnt += 1.0
                total += v
            first_row__seg[s] = start
            n__seg[s] = cnt
            if cnt == 0.0:
                mean__seg[s] = NAN
                ss__seg[s] = NAN
                constant__seg[s] = 0
            elif const_:
                mean__seg[s] = first
                ss__seg[s] = 0.0
                constant__seg[s] = 1
            else:
                m = total / cnt
                acc = 0.0
                for i in range(start, end):
                    v = xp[i] - yp[i] if paired else xp[i]
                    if isnan(v):
                        continue
                    v = v - m
                    acc += v * v
                mean__seg[s] = m
                ss__seg[s] = acc
                constant__seg[s] = 0
            s += 1
            start = end
    return s


def scan_values(const double[::1] a__row, double limit):
    """(any non-finite value, any finite value with |v| > limit) of one array, in one pass."""
    cdef Py_ssize_t i, n = a__row.shape[0]
    cdef bint bad = 0, big = 0
    cdef double v
    with nogil:
        for i in range(n):
            v = a__row[i]
            if not isfinite(v):
                bad = 1
            elif fabs(v) > limit:
                big = 1
    return bool(bad), bool(big)
