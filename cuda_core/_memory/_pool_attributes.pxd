from cuda.bindings.cydriver cimport CUmemoryPool

from cuda_core._resource cimport Resource


# The counters of _MemoryCounters.
cdef enum:
    _COUNTER_RESERVED_CURRENT = 0
    _COUNTER_RESERVED_HIGH = 1
    _COUNTER_USED_CURRENT = 2
    _COUNTER_USED_HIGH = 3


cdef class _MemoryCounters:
    cdef str _origin(self)
    cdef object _counter(self, int which)
    cdef int _reset_counter(self, int which) except -1
    cdef int _reset(self, int which, object value, str name) except -1


# MemoryPoolAttributes of ``pool``, the pool of the resource ``mr`` (_mempool's attributes).
cdef object new_pool_attributes(Resource mr, CUmemoryPool pool)
