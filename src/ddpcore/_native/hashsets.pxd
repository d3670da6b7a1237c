# cython: language_level=3
"""Hash tables of StringStore hashes built from flat arrays (``cimport``-ed by the kernels)."""
from libc.stdint cimport int64_t, uint64_t
from libcpp.unordered_map cimport unordered_map
from libcpp.unordered_set cimport unordered_set


cdef inline unordered_set[uint64_t] set_of(const uint64_t[::1] values):
    """The set of ``values`` (uint64, shape (k,))."""
    cdef unordered_set[uint64_t] s
    cdef Py_ssize_t i
    for i in range(values.shape[0]):
        s.insert(values[i])
    return s


cdef inline unordered_map[uint64_t, int64_t] map_of(const uint64_t[::1] keys, const int64_t[::1] values):
    """``keys[i] -> values[i]`` (both shape (k,)); a repeated key keeps its last value."""
    cdef unordered_map[uint64_t, int64_t] m
    cdef Py_ssize_t i
    for i in range(keys.shape[0]):
        m[keys[i]] = values[i]
    return m
