from cuda.bindings.cydriver cimport CUdeviceptr

from cuda_core._resource cimport Resource
from cuda_core._stream cimport Stream


cdef class MemoryResource(Resource):
    # True only for an object whose exact type is one of the built-in resources: Buffer then
    # frees through _deallocate_c, without a Python call. A Python subclass leaves it False, so
    # that its own deallocate() is always the one called.
    cdef bint _c_dealloc

    cdef int _deallocate_c(self, CUdeviceptr ptr, size_t size, Stream stream) except -1


cdef class _DeviceOnlyMemoryResource(MemoryResource):
    # The device whose memory the resource allocates.
    cdef int _dev_id


cdef class Buffer(Resource):
    # The device pointer, readable from Cython without a Python call (the launcher's path).
    # Resource's _closed sits just before it, in the same cache line: a launch reads one cache
    # line of the buffer, the one the interpreter has just touched for the reference count.
    cdef CUdeviceptr _ptr
    cdef size_t _size
    # Owning buffer: the resource that frees _ptr. None for a view or an owner-kept buffer.
    cdef MemoryResource _mr
    # Kept alive until close(); never freed by the buffer.
    cdef object _owner
    # The stream that orders the eventual free (the allocation stream unless changed).
    cdef Stream _dealloc_stream
    # Live DLPack exports; while any exists, close() defers the free to the last one's end.
    cdef int _exports
    cdef bint _deferred
    # Pointer attributes of a buffer without a resource, queried once: see _ATTR_* bits.
    cdef int _attr_flags
    cdef int _attr_device

    cdef int _free(self) except -1
    cdef int _export_released(self) noexcept
    cdef int _query_attributes(self) except -1
    cdef object _memory_kind(self, str name, int flag)
    cdef tuple _dl_device(self)


cdef Buffer as_buffer(object obj, str what)
cdef Buffer new_buffer(CUdeviceptr ptr, size_t size, MemoryResource mr, Stream stream)
cdef int init_buffer(Buffer buf, CUdeviceptr ptr, size_t size, MemoryResource mr,
                     Stream stream) except -1
cdef int deallocate_checked(MemoryResource mr, object ptr, object size, object stream,
                            str what) except -1
