from cuda_core._resource cimport Resource


# What an IPCBufferDescriptor names: a pool allocation (cuMemPoolExportPointer's 64 bytes), or a
# virtual-memory allocation whose chunks travel as POSIX file descriptors or as fabric handles.
cdef enum:
    KIND_POOL = 0
    KIND_VMM_FD = 1
    KIND_VMM_FABRIC = 2


cdef class IPCAllocationHandle(Resource):
    # The file descriptor this object owns and closes once; -1 after close().
    cdef int _fd
    # The exporting resource's uuid.UUID, or None.
    cdef object _uuid


cdef class _FdSet(Resource):
    # File descriptors owned together (one per chunk of an exported VMM allocation), closed
    # once, together.
    cdef tuple _fds


cdef class IPCBufferDescriptor:
    cdef int _kind
    # The buffer's size in bytes (>= 1).
    cdef size_t _size
    # KIND_POOL: the 64-byte CUmemPoolPtrExportData. Empty bytes for the VMM kinds.
    cdef bytes _payload
    # The VMM kinds: the size of each chunk, in order (they are mapped back to back).
    cdef tuple _chunks
    # KIND_VMM_FD: one file descriptor per chunk, owned by the descriptor; None otherwise.
    cdef _FdSet _fds
    # KIND_VMM_FABRIC: one 64-byte CUmemFabricHandle per chunk; () otherwise.
    cdef tuple _fabric
    cdef object __weakref__


# The checked file descriptor of `fd` (an int >= 0, not a bool), naming `what` in the error.
cdef int check_fd(object fd, str what) except -1
# A handle that takes ownership of `fd` (already checked).
cdef IPCAllocationHandle new_handle(int fd, object uuid)
# A pool descriptor; `payload` must be the 64 exported bytes (checked), `size` >= 1 (checked).
cdef IPCBufferDescriptor new_pool_descriptor(bytes payload, size_t size)
# A VMM descriptor (kind KIND_VMM_FD with `fds`, or KIND_VMM_FABRIC with `fabric`), checked:
# the chunk sizes are >= 1, as many as the fds or fabric handles, and sum to >= size.
cdef IPCBufferDescriptor new_vmm_descriptor(int kind, size_t size, tuple chunks, _FdSet fds,
                                            tuple fabric)
# A set owning the open file descriptors in `fds` (a tuple of ints).
cdef _FdSet new_fd_set(tuple fds)


# -- the registry of mapped resources (uuid.UUID -> weak reference), under a threading.RLock --

# The live resource registered under ``key``, or None.
cdef object registry_get(object key)
# Register ``obj`` under ``key`` unless a live object already is: returns the registered one.
cdef object registry_put(object key, object obj)
# Unregister ``key`` if ``obj`` is what it names.
cdef int registry_drop(object key, object obj) except -1
