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


#: elementary operations below which a kernel left at its default thread count runs on one thread:
#: starting a team (waking a sleeping worker) and joining it at the end of the loop costs tens of
#: microseconds on an idle machine and up to a scheduler time slice on a busy one, more than a
#: second thread saves on ~1 ms of work (issue 25)
cdef enum:
    MIN_PARALLEL_WORK = 1048576


cdef inline int threads_for(int num_threads, double work) noexcept nogil:
    """``resolve_threads(num_threads)``, except that the default (``num_threads <= 0``) is one thread
    for less than ``MIN_PARALLEL_WORK`` operations. An explicit count is kept as given."""
    if num_threads <= 0 and work < <double>MIN_PARALLEL_WORK:
        return 1
    return resolve_threads(num_threads)
