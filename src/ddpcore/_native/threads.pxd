# cython: language_level=3
"""OpenMP thread count helpers shared by the kernels (``cimport``-ed; a build without OpenMP
has one thread)."""

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static inline int ddp_omp_max_threads(void) { return omp_get_max_threads(); }
    #else
    static inline int ddp_omp_max_threads(void) { return 1; }
    #endif
    """
    int ddp_omp_max_threads() noexcept nogil


cdef inline int resolve_threads(int num_threads) noexcept nogil:
    """``num_threads`` when positive, else OpenMP's default (``OMP_NUM_THREADS`` or all cores)."""
    return num_threads if num_threads > 0 else ddp_omp_max_threads()
