# cython: language_level=3
"""The blocked replicate walks of ``stats_meta`` (``tau_b_weighted_reps``, ``acc_eq_weighted_reps``) with
32-bit integer Fenwick trees, compiled twice: for AVX2 and for the baseline instruction set, chosen at run
time (``ddp_meta_has_avx2``). ``cimport``-ed by ``stats_meta.pyx`` only.

Why integers: every count of these walks is an exact integer (the document weights of a bootstrap
replicate are whole multiplicities), so a tree of 32-bit integers holds the same values as the tree of
doubles in half the bytes, and one 256-bit register adds 8 replicates' nodes at once instead of 4. Each
product and sum that leaves the tree is taken in double precision exactly as the double walk takes it,
so a replicate's value has the bits of the double walk (``_tau_b_block``, ``_acc_eq_block``) whenever
every count is below 2**26 (the caller checks the largest replicate's total weight; tests compare the
two walks bit for bit on both instruction sets).

Layout as in the double walks: ``wt`` (n_doc, RB) document weights of the block's replicates
(document-major), ``tree``/``mt`` ((L + 1) * RB) node-major, so one node of all RB trees is contiguous.
"""

from libc.stdint cimport int32_t, int64_t, uint64_t


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #include <math.h>
    #if defined(__GNUC__)
    #define DDP_I32_INLINE static inline __attribute__((always_inline))
    #else
    #define DDP_I32_INLINE static inline
    #endif
    #if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    #define DDP_I32_HAVE_AVX2_BUILD 1
    #define DDP_I32_AVX2 __attribute__((target("avx2")))
    #else
    #define DDP_I32_HAVE_AVX2_BUILD 0
    #define DDP_I32_AVX2
    #endif

    /* a finished group of the walk (points g0 .. i - 1, equal first rank) into the per-rank weights `mt` and
       the Fenwick trees over the second ranking `rank` */
    template <int RB>
    DDP_I32_INLINE void ddp_i32_insert_group(const int64_t* rank, const int64_t* doc, const int32_t* wt,
                                             Py_ssize_t g0, Py_ssize_t i, Py_ssize_t L, int32_t* tree, int32_t* mt) {
        for (Py_ssize_t j = g0; j < i; j++) {
            const int32_t* w = wt + doc[j] * RB;
            Py_ssize_t k = rank[j];
            int32_t* mrow = mt + k * RB;
            for (int q = 0; q < RB; q++) mrow[q] += w[q];
            for (; k <= L; k += k & (-k)) {
                int32_t* node = tree + k * RB;
                for (int q = 0; q < RB; q++) node[q] += w[q];
            }
        }
    }

    /* tau-b counts of RB replicates: points sorted by the walk's first ranking (h_rank), Fenwick trees over
       the second (m_rank, 1..L); s = concordant - discordant, th / tm the pairs tied in h / in m. */
    template <int RB>
    DDP_I32_INLINE void ddp_tau_block_i32_t(const int64_t* h_rank, const int64_t* m_rank, const int64_t* doc,
                                            const int32_t* wt, Py_ssize_t n, Py_ssize_t L, int32_t* tree,
                                            int32_t* mt, double* out, Py_ssize_t n_valid) {
        double s[RB], th[RB], tm[RB];
        int32_t seen[RB], grp[RB], le[RB];
        memset(tree, 0, (size_t)(L + 1) * RB * sizeof(int32_t));
        memset(mt, 0, (size_t)(L + 1) * RB * sizeof(int32_t));
        for (int q = 0; q < RB; q++) { s[q] = 0.0; th[q] = 0.0; tm[q] = 0.0; seen[q] = 0; }
        Py_ssize_t i = 0;
        while (i < n) {
            Py_ssize_t g0 = i;
            for (int q = 0; q < RB; q++) grp[q] = 0;
            while (i < n && h_rank[i] == h_rank[g0]) {
                const int32_t* w = wt + doc[i] * RB;
                for (int q = 0; q < RB; q++) le[q] = 0;
                for (Py_ssize_t k = m_rank[i]; k > 0; k -= k & (-k)) {
                    const int32_t* node = tree + k * RB;
                    for (int q = 0; q < RB; q++) le[q] += node[q];
                }
                const int32_t* mrow = mt + m_rank[i] * RB;
                for (int q = 0; q < RB; q++) {
                    /* as the double walk: w * ((le - mt) - (seen - le)), every term an exact integer */
                    s[q] += (double)w[q] * (double)((le[q] - mrow[q]) - (seen[q] - le[q]));
                    grp[q] += w[q];
                }
                i++;
            }
            for (int q = 0; q < RB; q++) th[q] += (double)grp[q] * ((double)grp[q] - 1.0) / 2.0;
            ddp_i32_insert_group<RB>(m_rank, doc, wt, g0, i, L, tree, mt);
            for (int q = 0; q < RB; q++) seen[q] += grp[q];
        }
        for (Py_ssize_t k = 1; k <= L; k++) {
            const int32_t* mrow = mt + k * RB;
            for (int q = 0; q < RB; q++) tm[q] += (double)mrow[q] * ((double)mrow[q] - 1.0) / 2.0;
        }
        for (Py_ssize_t q = 0; q < n_valid; q++) {
            double sq = (double)seen[q];
            double n0 = sq * (sq - 1.0) / 2.0;
            out[q] = (n0 - th[q] <= 0.0 || n0 - tm[q] <= 0.0) ? NAN : s[q] / sqrt((n0 - th[q]) * (n0 - tm[q]));
        }
    }

    /* acc23 at eps of RB replicates: *_a sorted by m, *_b by (h rank, m); tree over h ranks 1..L. */
    template <int RB>
    DDP_I32_INLINE void ddp_acc_block_i32_t(const double* m_a, const int64_t* h_rank_a, const int64_t* doc_a,
                                            const double* m_b, const int64_t* h_rank_b, const int64_t* doc_b,
                                            const int32_t* wt, Py_ssize_t n, Py_ssize_t L, double eps,
                                            int32_t* tree, double* out, Py_ssize_t n_valid) {
        double good[RB];
        int32_t tot[RB], below[RB], win[RB];
        memset(tree, 0, (size_t)(L + 1) * RB * sizeof(int32_t));
        for (int q = 0; q < RB; q++) { good[q] = 0.0; tot[q] = 0; }
        Py_ssize_t i = 0;
        for (Py_ssize_t j = 0; j < n; j++) {
            while (i < j && m_a[j] - m_a[i] > eps) {
                const int32_t* wi = wt + doc_a[i] * RB;
                for (Py_ssize_t k = h_rank_a[i]; k <= L; k += k & (-k)) {
                    int32_t* node = tree + k * RB;
                    for (int q = 0; q < RB; q++) node[q] += wi[q];
                }
                i++;
            }
            const int32_t* wj = wt + doc_a[j] * RB;
            for (int q = 0; q < RB; q++) below[q] = 0;
            for (Py_ssize_t k = h_rank_a[j] - 1; k > 0; k -= k & (-k)) {
                const int32_t* node = tree + k * RB;
                for (int q = 0; q < RB; q++) below[q] += node[q];
            }
            for (int q = 0; q < RB; q++) {
                double w = (double)wj[q];
                good[q] += w * (double)below[q] + w * (w - 1.0) / 2.0;
                tot[q] += wj[q];
            }
        }
        Py_ssize_t lo = 0;
        for (int q = 0; q < RB; q++) win[q] = 0;
        for (Py_ssize_t j = 0; j < n; j++) {
            if (j > 0 && h_rank_b[j] != h_rank_b[j - 1]) {
                lo = j;
                for (int q = 0; q < RB; q++) win[q] = 0;
            }
            while (lo < j && m_b[j] - m_b[lo] > eps) {
                const int32_t* wi = wt + doc_b[lo] * RB;
                for (int q = 0; q < RB; q++) win[q] -= wi[q];
                lo++;
            }
            const int32_t* wj = wt + doc_b[j] * RB;
            for (int q = 0; q < RB; q++) {
                good[q] += (double)wj[q] * (double)win[q];
                win[q] += wj[q];
            }
        }
        for (Py_ssize_t q = 0; q < n_valid; q++) {
            double t = (double)tot[q];
            out[q] = t < 2.0 ? NAN : good[q] / (t * (t - 1.0) / 2.0);
        }
    }

    /* tau-b and acc23 at eps of RB replicates in one walk (the tau walk in metric order, the tree over the
       human's ranks): g_rank the metric's ranks (the walk's groups, ascending), t_rank the human's (the tree,
       1..L), m the metric scores in the same order. acc23's correct pairs beyond the tie threshold are the
       tau tree's lower-ranked weight minus the window of earlier groups still within eps (x in [lo, g0)),
       and its human ties within eps are scanned in that window and among the group's earlier cells
       (x in [lo, i)): O(n log L + sum of the windows) per block, the acc walk's pointer test exactly. */
    template <int RB>
    DDP_I32_INLINE void ddp_tau_acc_block_i32_t(const int64_t* g_rank, const int64_t* t_rank, const double* m,
                                                const int64_t* doc, const int32_t* wt, const int64_t* n_doc_pt,
                                                Py_ssize_t n_doc, Py_ssize_t n, Py_ssize_t L, double eps,
                                                int32_t* tree, int32_t* mt, double* out_tau, double* out_acc,
                                                Py_ssize_t n_valid) {
        /* every count is a whole number below 2**52 (the caller's bound): unsigned 64-bit sums of 32 x 32-bit
           products, turned into doubles only at the end, hold the double walks' exact values */
        uint64_t lo_w[RB], hi_w[RB], win_lt[RB], win_eq[RB], th[RB], tm[RB], cp[RB];
        uint32_t seen[RB], grp[RB], le[RB], bw[RB], tw[RB];
        memset(tree, 0, (size_t)(L + 1) * RB * sizeof(int32_t));
        memset(mt, 0, (size_t)(L + 1) * RB * sizeof(int32_t));
        for (int q = 0; q < RB; q++) { lo_w[q] = 0; hi_w[q] = 0; win_lt[q] = 0; win_eq[q] = 0; th[q] = 0; tm[q] = 0;
                                       cp[q] = 0; seen[q] = 0; }
        const uint32_t* uw = (const uint32_t*)wt;
        const uint32_t* utree = (const uint32_t*)tree;
        const uint32_t* umt = (const uint32_t*)mt;
        Py_ssize_t i = 0, lo = 0;
        while (i < n) {
            Py_ssize_t g0 = i;
            for (int q = 0; q < RB; q++) grp[q] = 0;
            while (i < n && g_rank[i] == g_rank[g0]) {
                const uint32_t* w = uw + doc[i] * RB;
                const Py_ssize_t hi = t_rank[i];
                for (int q = 0; q < RB; q++) le[q] = 0;
                for (Py_ssize_t k = hi; k > 0; k -= k & (-k)) {
                    const uint32_t* node = utree + k * RB;
                    for (int q = 0; q < RB; q++) le[q] += node[q];
                }
                const uint32_t* mrow = umt + hi * RB;
                for (int q = 0; q < RB; q++) {
                    /* earlier groups: le - mt below the point's human rank, seen - le above it */
                    lo_w[q] += (uint64_t)w[q] * (uint64_t)(le[q] - mrow[q]);
                    hi_w[q] += (uint64_t)w[q] * (uint64_t)(seen[q] - le[q]);
                    grp[q] += w[q];
                }
                /* the acc walk's pointer: [0, lo) are beyond the threshold (m[i] - m[x] > eps); [lo, i) is the
                   window, whose earlier-group cells below are not correct pairs and whose human ties are */
                while (lo < i && m[i] - m[lo] > eps) lo++;
                if (lo < i) {
                    for (int q = 0; q < RB; q++) { bw[q] = 0; tw[q] = 0; }
                    for (Py_ssize_t x = lo; x < i; x++) {
                        const uint32_t* wx = uw + doc[x] * RB;
                        const uint32_t eq = -(uint32_t)(t_rank[x] == hi);
                        const uint32_t lt = -(uint32_t)((t_rank[x] < hi) & (x < g0));
                        for (int q = 0; q < RB; q++) { tw[q] += wx[q] & eq; bw[q] += wx[q] & lt; }
                    }
                    for (int q = 0; q < RB; q++) {
                        win_lt[q] += (uint64_t)w[q] * (uint64_t)bw[q];
                        win_eq[q] += (uint64_t)w[q] * (uint64_t)tw[q];
                    }
                }
                i++;
            }
            for (int q = 0; q < RB; q++) th[q] += (uint64_t)grp[q] * (uint64_t)(grp[q] - 1) / 2;
            ddp_i32_insert_group<RB>(t_rank, doc, wt, g0, i, L, tree, mt);
            for (int q = 0; q < RB; q++) seen[q] += grp[q];
        }
        for (Py_ssize_t k = 1; k <= L; k++) {
            const uint32_t* mrow = umt + k * RB;
            for (int q = 0; q < RB; q++) tm[q] += (uint64_t)mrow[q] * (uint64_t)(mrow[q] - (mrow[q] > 0)) / 2;
        }
        /* the copies of one point are pairs tied in both (acc23: correct): sum over documents of
           (points of d) * w (w - 1) / 2, from the documents, not per point */
        for (Py_ssize_t d = 0; d < n_doc; d++) {
            const uint32_t* w = uw + d * RB;
            const uint64_t c = (uint64_t)n_doc_pt[d];
            for (int q = 0; q < RB; q++) cp[q] += c * ((uint64_t)w[q] * (uint64_t)(w[q] - (w[q] > 0)) / 2);
        }
        for (Py_ssize_t q = 0; q < n_valid; q++) {
            const double sq = (double)seen[q];
            const double n0 = sq * (sq - 1.0) / 2.0;
            const double s = (double)((int64_t)lo_w[q] - (int64_t)hi_w[q]);
            const double dth = (double)th[q], dtm = (double)tm[q];
            out_tau[q] = (n0 - dth <= 0.0 || n0 - dtm <= 0.0) ? NAN : s / sqrt((n0 - dth) * (n0 - dtm));
            out_acc[q] = sq < 2.0 ? NAN : (double)(lo_w[q] - win_lt[q] + win_eq[q] + cp[q]) / n0;
        }
    }

    /* one instantiation per instruction set and block width (32 and 8); `avx2` selects the AVX2 one */
    #define DDP_I32_DEFINE(RB)                                                                              \
    static void ddp_tau_block_i32_##RB##_base(const int64_t* a, const int64_t* b, const int64_t* d,         \
            const int32_t* wt, Py_ssize_t n, Py_ssize_t L, int32_t* tree, int32_t* mt, double* out,         \
            Py_ssize_t nv) { ddp_tau_block_i32_t<RB>(a, b, d, wt, n, L, tree, mt, out, nv); }                \
    DDP_I32_AVX2 static void ddp_tau_block_i32_##RB##_avx2(const int64_t* a, const int64_t* b,              \
            const int64_t* d, const int32_t* wt, Py_ssize_t n, Py_ssize_t L, int32_t* tree, int32_t* mt,     \
            double* out, Py_ssize_t nv) { ddp_tau_block_i32_t<RB>(a, b, d, wt, n, L, tree, mt, out, nv); }   \
    static void ddp_acc_block_i32_##RB##_base(const double* ma, const int64_t* ha, const int64_t* da,       \
            const double* mb, const int64_t* hb, const int64_t* db, const int32_t* wt, Py_ssize_t n,         \
            Py_ssize_t L, double eps, int32_t* tree, double* out, Py_ssize_t nv) {                           \
        ddp_acc_block_i32_t<RB>(ma, ha, da, mb, hb, db, wt, n, L, eps, tree, out, nv); }                     \
    DDP_I32_AVX2 static void ddp_acc_block_i32_##RB##_avx2(const double* ma, const int64_t* ha,             \
            const int64_t* da, const double* mb, const int64_t* hb, const int64_t* db, const int32_t* wt,    \
            Py_ssize_t n, Py_ssize_t L, double eps, int32_t* tree, double* out, Py_ssize_t nv) {             \
        ddp_acc_block_i32_t<RB>(ma, ha, da, mb, hb, db, wt, n, L, eps, tree, out, nv); }
    DDP_I32_DEFINE(32)
    DDP_I32_DEFINE(8)

    #define DDP_I32_TAU_ACC_ARGS g, t, m, d, wt, npd, nd, n, L, eps, tree, mt, o_tau, o_acc, nv
    template <int RB>
    static void ddp_tau_acc_block_i32_base(const int64_t* g, const int64_t* t, const double* m, const int64_t* d,
            const int32_t* wt, const int64_t* npd, Py_ssize_t nd, Py_ssize_t n, Py_ssize_t L, double eps,
            int32_t* tree, int32_t* mt, double* o_tau, double* o_acc, Py_ssize_t nv) {
        ddp_tau_acc_block_i32_t<RB>(DDP_I32_TAU_ACC_ARGS); }
    template <int RB>
    DDP_I32_AVX2 static void ddp_tau_acc_block_i32_avx2(const int64_t* g, const int64_t* t, const double* m,
            const int64_t* d, const int32_t* wt, const int64_t* npd, Py_ssize_t nd, Py_ssize_t n, Py_ssize_t L,
            double eps, int32_t* tree, int32_t* mt, double* o_tau, double* o_acc, Py_ssize_t nv) {
        ddp_tau_acc_block_i32_t<RB>(DDP_I32_TAU_ACC_ARGS); }
    static inline void ddp_tau_acc_block_i32(int avx2, Py_ssize_t rb, const int64_t* g, const int64_t* t,
            const double* m, const int64_t* d, const int32_t* wt, const int64_t* npd, Py_ssize_t nd, Py_ssize_t n,
            Py_ssize_t L, double eps, int32_t* tree, int32_t* mt, double* o_tau, double* o_acc, Py_ssize_t nv) {
        if (rb == 32) {
            if (avx2) ddp_tau_acc_block_i32_avx2<32>(DDP_I32_TAU_ACC_ARGS);
            else ddp_tau_acc_block_i32_base<32>(DDP_I32_TAU_ACC_ARGS);
        } else {
            if (avx2) ddp_tau_acc_block_i32_avx2<8>(DDP_I32_TAU_ACC_ARGS);
            else ddp_tau_acc_block_i32_base<8>(DDP_I32_TAU_ACC_ARGS);
        }
    }

    static inline int ddp_meta_has_avx2(void) {
    #if DDP_I32_HAVE_AVX2_BUILD
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") ? 1 : 0;
    #else
        return 0;
    #endif
    }

    static inline void ddp_tau_block_i32(int avx2, Py_ssize_t rb, const int64_t* a, const int64_t* b,
            const int64_t* d, const int32_t* wt, Py_ssize_t n, Py_ssize_t L, int32_t* tree, int32_t* mt,
            double* out, Py_ssize_t nv) {
        if (rb == 32) {
            if (avx2) ddp_tau_block_i32_32_avx2(a, b, d, wt, n, L, tree, mt, out, nv);
            else ddp_tau_block_i32_32_base(a, b, d, wt, n, L, tree, mt, out, nv);
        } else {
            if (avx2) ddp_tau_block_i32_8_avx2(a, b, d, wt, n, L, tree, mt, out, nv);
            else ddp_tau_block_i32_8_base(a, b, d, wt, n, L, tree, mt, out, nv);
        }
    }

    static inline void ddp_acc_block_i32(int avx2, Py_ssize_t rb, const double* ma, const int64_t* ha,
            const int64_t* da, const double* mb, const int64_t* hb, const int64_t* db, const int32_t* wt,
            Py_ssize_t n, Py_ssize_t L, double eps, int32_t* tree, double* out, Py_ssize_t nv) {
        if (rb == 32) {
            if (avx2) ddp_acc_block_i32_32_avx2(ma, ha, da, mb, hb, db, wt, n, L, eps, tree, out, nv);
            else ddp_acc_block_i32_32_base(ma, ha, da, mb, hb, db, wt, n, L, eps, tree, out, nv);
        } else {
            if (avx2) ddp_acc_block_i32_8_avx2(ma, ha, da, mb, hb, db, wt, n, L, eps, tree, out, nv);
            else ddp_acc_block_i32_8_base(ma, ha, da, mb, hb, db, wt, n, L, eps, tree, out, nv);
        }
    }
    """
    int ddp_meta_has_avx2() noexcept nogil
    void ddp_tau_block_i32(int avx2, Py_ssize_t rb, const int64_t* a, const int64_t* b, const int64_t* d,
                           const int32_t* wt, Py_ssize_t n, Py_ssize_t L, int32_t* tree, int32_t* mt,
                           double* out, Py_ssize_t nv) noexcept nogil
    void ddp_acc_block_i32(int avx2, Py_ssize_t rb, const double* ma, const int64_t* ha, const int64_t* da,
                           const double* mb, const int64_t* hb, const int64_t* db, const int32_t* wt,
                           Py_ssize_t n, Py_ssize_t L, double eps, int32_t* tree, double* out,
                           Py_ssize_t nv) noexcept nogil
    void ddp_tau_acc_block_i32(int avx2, Py_ssize_t rb, const int64_t* g, const int64_t* t, const double* m,
                               const int64_t* d, const int32_t* wt, const int64_t* npd, Py_ssize_t nd,
                               Py_ssize_t n, Py_ssize_t L, double eps,
                               int32_t* tree, int32_t* mt, double* o_tau, double* o_acc,
                               Py_ssize_t nv) noexcept nogil
