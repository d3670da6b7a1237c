# cython: language_level=3
"""The DDP rule of the distance kernels (``cimport``-ed by ``ddp_kernels`` and ``antecedent``).

The DDP of a sentence, and of a segment, is the largest distance (in sentences) of its anchors;
both start at 0, and an anchor without a distance (<= 0) sets neither.
"""
from libc.stdint cimport int32_t


cdef inline void raise_ddp(int32_t d, int32_t* ddp_sentence, int32_t* ddp_segment) noexcept nogil:
    """Raise the anchor's sentence DDP ``*ddp_sentence`` and segment DDP ``*ddp_segment`` to its
    distance ``d`` where ``d`` is larger."""
    if d > ddp_sentence[0]:
        ddp_sentence[0] = d
    if d > ddp_segment[0]:
        ddp_segment[0] = d
