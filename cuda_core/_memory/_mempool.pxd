from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUcontext, CUdeviceptr, CUmemoryPool, CUresult, CUstream

from cuda_core._memory._memory_resource cimport MemoryResource
from cuda_core._memory._ipc_base cimport IPCAllocationHandle
from cuda_core._memory._ipc_table cimport ImportedPool
from cuda_core._stream cimport Stream


cdef class _MemPool(MemoryResource):
    cdef CUmemoryPool _pool
    # The device the pool's memory lives on; -1 for host pools.
    cdef int _dev_id
    cdef bint _owned
    cdef bint _ipc
    cdef bint _inited
    # Host and managed pools: the host can access the memory too.
    cdef bint _host_access
    # "<Class>.allocate()" and "<Class>.allocate(): size", for error messages without
    # formatting on the hot path.
    cdef str _what
    cdef str _what_size
    # IPC. A mapped resource (imported from another process: from_allocation_handle, or
    # unpickled) has _mapped set and holds its share of the imported pool (_state, set once,
    # never NULL for a mapped resource until its __dealloc__). _uuid: the uuid.UUID of an
    # IPC-enabled resource (made with the pool), of a mapped one's exporter (None if unknown).
    # _handle: the allocation handle, made on first use and owned (the exporter's; a mapped
    # resource keeps the duplicate it imported from, to pass the pool on).
    cdef bint _mapped
    cdef object _uuid
    cdef IPCAllocationHandle _handle
    cdef ImportedPool* _state

    # Frees still to wait for before the pool may be destroyed (owned pools only): the driver
    # crashes later, in cuStreamDestroy of its stream, when a free into a pool is still pending
    # as the pool is destroyed. _free_streams: the Streams frees were queued on since the last
    # wait (None stands for the legacy default stream), at most _MAX_FREE_STREAMS of them;
    # _free_overflow: frees on more streams than that (the wait is then the whole context's).
    # _destroy_deferred: closed while allocations were in use; the free of the last destroys it.
    # All three are read and written under critical_section(self) (free-threaded CPython).
    cdef list _free_streams
    cdef bint _free_overflow
    cdef bint _destroy_deferred

    cdef int _check_ready(self) except -1
    cdef int _note_free(self, Stream stream) except -1  # 1: _destroy_deferred is set
    cdef bint _wait_for_frees(self) except -1
    cdef int _destroy_when_unused(self) except -1
    cdef int _setup(self, CUmemoryPool pool, int dev_id, bint owned, bint ipc,
                    str what) except -1
    cdef CUresult _driver_alloc(self, CUdeviceptr* ptr, size_t size, CUstream s) noexcept nogil
    cdef CUdeviceptr _alloc_ptr(self, size_t size, Stream s) except? 0
    cdef CUcontext _fallback_context(self) except? NULL
    cdef int _release_import(self, CUdeviceptr ptr, CUstream handle, CUcontext ctx) except -1


cdef cydriver.CUstreamCaptureMode relax_capture() except *
cdef int restore_capture(cydriver.CUstreamCaptureMode mode) except -1
cdef CUresult create_pool(CUmemoryPool* pool, cydriver.CUmemAllocationType kind,
                          cydriver.CUmemLocationType where, int where_id, bint ipc,
                          size_t max_size) except *
cdef int raise_release_threshold(CUmemoryPool pool) except -1
