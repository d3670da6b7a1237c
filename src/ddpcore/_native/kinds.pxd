# cython: language_level=3
"""Item kinds and pronoun group bits shared by the kernels (``cimport``-ed, nothing at run time).

Kind codes in the order of :data:`ddpcore.anchors.rules.KIND_NAMES` ("entity", "pronoun",
"noun"); group bits as :data:`ddpcore.anchors.rules.MASC_SG` ... ``PL``. ``tests/test_kernels_shared.py``
checks both against the Python definitions.
"""

cdef enum:
    KIND_ENTITY = 0
    KIND_PRONOUN = 1
    KIND_NOUN = 2

cdef enum:
    MASC_SG = 1
    FEM_SG = 2
    NEUT_SG = 4
    PL = 8
