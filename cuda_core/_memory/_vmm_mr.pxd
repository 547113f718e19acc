from cuda.bindings.cydriver cimport CUcontext, CUdeviceptr, CUmemAllocationProp

from cuda_core._memory._memory_resource cimport MemoryResource
from cuda_core._resource cimport Resource


cdef class _Allocation(Resource):
    # The reserved address range, how much of it is mapped, the granularity of its chunks.
    cdef CUdeviceptr base
    cdef size_t reserved
    cdef size_t mapped
    cdef size_t granularity
    # The physical chunks (_vmm_mr._Chunk: handle, offset, size, opts), in offset order.
    cdef list chunks
    cdef int _dev_id
    # Set by the resource's free once it has waited for the work that may use the memory;
    # an allocation finalized without that waits for the whole device first.
    cdef bint _waited
    # Imported from another process (_vmm_ipc): its chunks are imported handles, released as
    # a local allocation's; it cannot be resized.
    cdef bint _imported


cdef class VirtualMemoryResource(MemoryResource):
    cdef int _dev_id
    # The VirtualMemoryResourceOptions in use (the resource's own copy).
    cdef object _config
    # Every live allocation, by base address.
    cdef dict _allocations

    cdef int _fill_prop(self, CUmemAllocationProp* prop, object opts) except -1
    cdef size_t _granularity(self, CUmemAllocationProp* prop, object opts) except 0
    # Grant the access of ``opts`` (self, peers) to [addr, addr + size), plus the CPU's when
    # the memory is host memory (``host`` is its location type; -1 for device memory).
    cdef int _grant_access(self, CUdeviceptr addr, size_t size, object opts, int host) except -1
    cdef int _set_access(self, CUdeviceptr addr, size_t size, object opts) except -1
    cdef object _map_new(self, CUdeviceptr addr, size_t size, object opts)
    cdef CUcontext _ctx(self) except? NULL


cdef _Allocation _new_allocation(CUdeviceptr base, size_t reserved, size_t granularity,
                                 int dev_id)
