from cuda.bindings.cydriver cimport CUdeviceptr

from cuda_core._resource cimport Resource
from cuda_core._stream cimport Stream


cdef class MemoryResource(Resource):
    # True only for an object whose exact type is one of the built-in resources: Buffer then
    # frees through _deallocate_c, without a Python call. A Python subclass leaves it False, so
    # that its own deallocate() is always the one called.
    cdef bint _c_dealloc
    # True for a resource of the package's own that frees what it never allocated (a graphics
    # mapping, whose free is the unmap): buffers show no memory resource for it, as for a view.
    cdef bint _internal

    cdef int _deallocate_c(self, CUdeviceptr ptr, size_t size, Stream stream) except -1


cdef class _DeviceOnlyMemoryResource(MemoryResource):
    # The device whose memory the resource allocates.
    cdef int _dev_id


cdef int deallocate_checked(MemoryResource mr, object ptr, object size, object stream,
                            str what) except -1
