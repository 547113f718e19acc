from cuda.bindings.cydriver cimport CUdeviceptr

from cuda_core._memory._memory_resource cimport MemoryResource
from cuda_core._resource cimport Resource
from cuda_core._stream cimport Stream


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
    # Both, and _dealloc_stream's swaps, under critical_section(self) (free-threaded CPython).
    cdef int _exports
    cdef bint _deferred
    # Pointer attributes of a buffer without a resource, queried once: see _alloc.ATTR_*.
    cdef int _attr_flags
    cdef int _attr_device
    # IPC, last, so that the fields above (the launch path's first) keep their places: the
    # descriptor the buffer was exported with or imported from (None until then), and whether
    # it was imported from another process.
    cdef object _ipc_desc
    cdef bint _mapped

    cdef int _free(self) except -1
    cdef MemoryResource _public_mr(self)
    cdef MemoryResource _open_mr(self)
    cdef int _export_released(self) noexcept
    cdef int _query_attributes(self) except -1
    cdef int _attr_bits(self) except -1
    cdef int _export_acquired(self) except -1
    cdef object _memory_kind(self, str name, int flag)
    cdef tuple _dl_device(self)


# Buffer's IPC members, implemented in _memory._ipc, which cimports this module (so this one
# cannot cimport it) and registers them, once, while it is imported: ``export(buf)`` gives
# ``buf.ipc_descriptor`` (``buf`` open), ``import_(cls, mr, desc, stream)`` the buffer of
# ``cls.from_ipc_descriptor(mr, desc, stream=stream)`` (``cls`` Buffer or a subclass, the
# other arguments unchecked), ``reduce(buf)`` ``buf.__reduce__()``.
ctypedef object (*ipc_export_fn)(Buffer buf)
ctypedef object (*ipc_import_fn)(object cls, object mr, object desc, object stream)
ctypedef object (*ipc_reduce_fn)(Buffer buf)
cdef int register_ipc(ipc_export_fn export, ipc_import_fn import_,
                      ipc_reduce_fn reduce) except -1

cdef Buffer as_buffer(object obj, str what)
cdef Buffer new_buffer(CUdeviceptr ptr, size_t size, MemoryResource mr, Stream stream)
cdef int init_buffer(Buffer buf, CUdeviceptr ptr, size_t size, MemoryResource mr,
                     Stream stream) except -1
