# cython: language_level=3
"""Keys of the parse cache: 128-bit MurmurHash3 (x64) of every parse unit, in one pass.

``hash_units(data, offsets)`` hashes the UTF-8 bytes ``data[offsets[i]:offsets[i+1]]`` of
each of the ``n`` units (an Arrow ``large_string`` array's two buffers) and returns an
``(n, 2)`` uint64 array (``h1, h2``: the 16-byte digest as two little-endian words). The
hash is the reference MurmurHash3_x64_128 (Austin Appleby, public domain), so keys are
identical on every platform and in every release that keeps ``CACHE_FORMAT``.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

cnp.import_array()

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    static inline uint64_t ddp_rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
    static inline uint64_t ddp_fmix64(uint64_t k) {
        k ^= k >> 33; k *= 0xff51afd7ed558ccdULL; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ULL; k ^= k >> 33;
        return k;
    }
    static inline uint64_t ddp_load64_le(const uint8_t* p) {
        uint64_t v = 0;
        for (int i = 7; i >= 0; --i) v = (v << 8) | (uint64_t)p[i];
        return v;
    }
    static void ddp_mmh3_x64_128(const uint8_t* data, int64_t len, uint32_t seed, uint64_t* out) {
        const int64_t nblocks = len / 16;
        uint64_t h1 = seed, h2 = seed;
        const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
        for (int64_t i = 0; i < nblocks; i++) {
            uint64_t k1 = ddp_load64_le(data + i * 16), k2 = ddp_load64_le(data + i * 16 + 8);
            k1 *= c1; k1 = ddp_rotl64(k1, 31); k1 *= c2; h1 ^= k1;
            h1 = ddp_rotl64(h1, 27); h1 += h2; h1 = h1 * 5 + 0x52dce729;
            k2 *= c2; k2 = ddp_rotl64(k2, 33); k2 *= c1; h2 ^= k2;
            h2 = ddp_rotl64(h2, 31); h2 += h1; h2 = h2 * 5 + 0x38495ab5;
        }
        const uint8_t* tail = data + nblocks * 16;
        uint64_t k1 = 0, k2 = 0;
        switch (len & 15) {
            case 15: k2 ^= ((uint64_t)tail[14]) << 48;
            case 14: k2 ^= ((uint64_t)tail[13]) << 40;
            case 13: k2 ^= ((uint64_t)tail[12]) << 32;
            case 12: k2 ^= ((uint64_t)tail[11]) << 24;
            case 11: k2 ^= ((uint64_t)tail[10]) << 16;
            case 10: k2 ^= ((uint64_t)tail[9]) << 8;
            case 9: k2 ^= ((uint64_t)tail[8]);
                k2 *= c2; k2 = ddp_rotl64(k2, 33); k2 *= c1; h2 ^= k2;
            case 8: k1 ^= ((uint64_t)tail[7]) << 56;
            case 7: k1 ^= ((uint64_t)tail[6]) << 48;
            case 6: k1 ^= ((uint64_t)tail[5]) << 40;
            case 5: k1 ^= ((uint64_t)tail[4]) << 32;
            case 4: k1 ^= ((uint64_t)tail[3]) << 24;
            case 3: k1 ^= ((uint64_t)tail[2]) << 16;
            case 2: k1 ^= ((uint64_t)tail[1]) << 8;
            case 1: k1 ^= ((uint64_t)tail[0]);
                k1 *= c1; k1 = ddp_rotl64(k1, 31); k1 *= c2; h1 ^= k1;
        }
        h1 ^= (uint64_t)len; h2 ^= (uint64_t)len;
        h1 += h2; h2 += h1;
        h1 = ddp_fmix64(h1); h2 = ddp_fmix64(h2);
        h1 += h2; h2 += h1;
        out[0] = h1; out[1] = h2;
    }
    """
    void ddp_mmh3_x64_128(const uint8_t* data, int64_t len, uint32_t seed, uint64_t* out) nogil


def hash_units(const uint8_t[::1] data, const int64_t[::1] offsets, uint32_t seed=0):
    """MurmurHash3_x64_128 of each unit: ``data`` (n_bytes,) uint8, ``offsets`` (n+1,) int64
    byte offsets (non-decreasing, ``offsets[n] <= n_bytes``) -> (n, 2) uint64 ``(h1, h2)``."""
    cdef Py_ssize_t n = offsets.shape[0] - 1
    if n < 0:
        raise ValueError("offsets must have at least one entry")
    if n > 0 and (offsets[0] < 0 or offsets[n] > data.shape[0]):
        raise ValueError("offsets out of the data buffer")
    out = np.empty((max(n, 0), 2), dtype=np.uint64)
    cdef uint64_t[:, ::1] o = out
    cdef Py_ssize_t i
    cdef const uint8_t* base = &data[0] if data.shape[0] > 0 else NULL
    cdef uint8_t empty = 0
    if base == NULL:
        base = &empty
    with nogil:
        for i in range(n):
            if offsets[i + 1] < offsets[i]:
                with gil:
                    raise ValueError("offsets must be non-decreasing")
            ddp_mmh3_x64_128(base + offsets[i], offsets[i + 1] - offsets[i], seed, &o[i, 0])
    return out
