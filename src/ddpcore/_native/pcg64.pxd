# cython: language_level=3
"""The one PCG64 generator of the kernels: numpy.random.PCG64's stream, generated in C.

``cimport``-ed by ``stats_kernels`` (bootstrap) and ``stats_compare`` (approximate
randomization, chunked bootstrap). The C definitions below are placed ahead of each importing
module's own C code, which calls them from its OpenMP / target_clones loops; all state is
local to a ``ddp_pcg64`` value, so threads never share a generator.

``ddp_pcg64_init(g, state_hi, state_lo, inc_hi, inc_lo)``  a ``numpy.random.PCG64`` state
(``bit_generator.state["state"]``: 128-bit ``state`` and ``inc`` in 64-bit halves)
``ddp_pcg64_next(g)``           the next raw 64-bit word (``PCG64.random_raw``)
``ddp_pcg64_advance(g, delta)`` jump ahead by ``delta`` words in O(log delta) (``PCG64.advance``)
``ddp_pcg64_fill(out, n, state_hi, state_lo, inc_hi, inc_lo, skip)``  words ``skip ... skip + n - 1``
of a stream into ``out[0 .. n)`` (the AR masks, the raw-word exports)
``ddp_mulhi64(a, n)``           ``floor(a * n / 2**64)``: a raw word mapped to [0, n)
"""
from libc.stdint cimport int64_t, uint64_t

cdef extern from *:
    """
    #include <stdint.h>
    #ifndef DDP_PCG64_DEFINED
    #define DDP_PCG64_DEFINED
    /* floor(a * b / 2^64): maps a uniform 64-bit word a to [0, b) (Lemire's multiply-shift,
       without the rejection step; bias <= b / 2^64). */
    static inline uint64_t ddp_mulhi64(uint64_t a, uint64_t b) {
        return (uint64_t)(((unsigned __int128)a * (unsigned __int128)b) >> 64);
    }

    /* PCG64 (XSL-RR 128/64), the bit generator of numpy.random.PCG64: a 128-bit LCG
       state' = state * M + inc, output = rotr64(hi ^ lo, state' >> 122) of the new state. */
    typedef struct { unsigned __int128 state, inc; } ddp_pcg64;
    static const unsigned __int128 DDP_PCG_MULT =
        (((unsigned __int128)0x2360ED051FC65DA4ULL) << 64) | (unsigned __int128)0x4385DF649FCCF645ULL;

    static inline uint64_t ddp_pcg64_next(ddp_pcg64* g) {
        g->state = g->state * DDP_PCG_MULT + g->inc;
        uint64_t x = (uint64_t)(g->state >> 64) ^ (uint64_t)g->state;
        unsigned rot = (unsigned)(g->state >> 122);
        return (x >> rot) | (x << ((-rot) & 63));
    }

    /* Jump the LCG ahead by delta steps in O(log delta) (Brown 1994, arbitrary strides). */
    static inline void ddp_pcg64_advance(ddp_pcg64* g, uint64_t delta) {
        unsigned __int128 acc_mult = 1, acc_plus = 0, cur_mult = DDP_PCG_MULT, cur_plus = g->inc;
        while (delta > 0) {
            if (delta & 1) {
                acc_mult *= cur_mult;
                acc_plus = acc_plus * cur_mult + cur_plus;
            }
            cur_plus = (cur_mult + 1) * cur_plus;
            cur_mult *= cur_mult;
            delta >>= 1;
        }
        g->state = acc_mult * g->state + acc_plus;
    }

    static inline void ddp_pcg64_init(ddp_pcg64* g, uint64_t state_hi, uint64_t state_lo, uint64_t inc_hi, uint64_t inc_lo) {
        g->state = (((unsigned __int128)state_hi) << 64) | state_lo;
        g->inc = (((unsigned __int128)inc_hi) << 64) | inc_lo;
    }

    static inline void ddp_pcg64_fill(uint64_t* out, int64_t n, uint64_t state_hi, uint64_t state_lo,
                                      uint64_t inc_hi, uint64_t inc_lo, uint64_t skip) {
        ddp_pcg64 g;
        ddp_pcg64_init(&g, state_hi, state_lo, inc_hi, inc_lo);
        ddp_pcg64_advance(&g, skip);
        for (int64_t j = 0; j < n; ++j) out[j] = ddp_pcg64_next(&g);
    }
    #endif
    """
    ctypedef struct ddp_pcg64:
        pass
    uint64_t ddp_mulhi64(uint64_t a, uint64_t b) noexcept nogil
    uint64_t ddp_pcg64_next(ddp_pcg64* g) noexcept nogil
    void ddp_pcg64_advance(ddp_pcg64* g, uint64_t delta) noexcept nogil
    void ddp_pcg64_init(ddp_pcg64* g, uint64_t state_hi, uint64_t state_lo, uint64_t inc_hi, uint64_t inc_lo) noexcept nogil
    void ddp_pcg64_fill(uint64_t* out, int64_t n, uint64_t state_hi, uint64_t state_lo, uint64_t inc_hi, uint64_t inc_lo,
                        uint64_t skip) noexcept nogil
