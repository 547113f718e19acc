from cuda.bindings.cydriver cimport CUcontext, CUdeviceptr, CUmemoryPool

from cuda_core._memory._buffer cimport MemoryResource
from cuda_core._stream cimport Stream


cdef class _MemPool(MemoryResource):
    cdef CUmemoryPool _pool
    # The device the pool's memory lives on; -1 for host pools.
    cdef int _dev_id
    cdef bint _owned
    cdef bint _ipc
    cdef bint _inited
    cdef bint _closed
    # "<Class>.allocate()", for error messages without formatting on the hot path.
    cdef str _what

    cdef int _check_open(self) except -1
    cdef int _setup(self, CUmemoryPool pool, int dev_id, bint owned, bint ipc,
                    str what) except -1
    cdef CUdeviceptr _alloc_ptr(self, size_t size, Stream s) except? 0
    cdef CUcontext _fallback_context(self) except? NULL


cdef int raise_release_threshold(CUmemoryPool pool) except -1
