from cuda.bindings.cydriver cimport CUdeviceptr, CUmemoryPool, CUresult, CUstream


# One pool imported from another process (cuMemPoolImportFromShareableHandle), shared by every
# mapped resource the driver gave the same pool handle, with its table of imported pointers.
# Opaque here; defined in _ipc_table.pyx.
cdef extern from *:
    """
    struct cuda_core_ImportedPool;
    """
    ctypedef struct ImportedPool "cuda_core_ImportedPool":
        pass

# Every function below runs with the GIL released and returns a CUresult: CUDA_SUCCESS or the
# code of the driver call that failed. They take the one IPC mutex, under which no Python runs.
# The caller makes a context current first (any context of the process for a pool; the
# stream's for a release).
#
# Import the pool that the POSIX file descriptor ``fd`` shares (the fd stays open: the caller
# owns it) and attach a mapped resource to it: *state is shared by every import that gave the
# same pool, and counts the attachment and the object that holds it.
cdef CUresult pool_import(int fd, ImportedPool** state) noexcept nogil
# The driver's pool handle (valid while a resource is attached).
cdef CUmemoryPool pool_handle(ImportedPool* state) noexcept nogil
# A mapped resource is closed: the pool is destroyed once no resource is attached and no
# imported pointer is in use.
cdef CUresult pool_detach(ImportedPool* state) noexcept nogil
# The object that held ``state`` is gone (its __dealloc__): the memory of a dead state is freed
# once no object refers to it. Never fails.
cdef void pool_forget(ImportedPool* state) noexcept nogil
# Import one pool allocation, named by the 64 bytes of ``key`` (a CUmemPoolPtrExportData):
# once per process while it is in use (a second import shares the mapping and counts a
# reference). *ptr is the address, *end one past the allocation's last byte, *ordinal the
# device the driver reports. CUDA_ERROR_INVALID_HANDLE once the pool is destroyed.
cdef CUresult pointer_import(ImportedPool* state, const unsigned char* key, CUdeviceptr* ptr,
                             size_t* end, int* ordinal) noexcept nogil
# Drop one reference to the imported ``ptr``; the last one frees it on ``stream``
# (cuMemFreeAsync) and forgets it. *found is False when ``ptr`` is not an import of this pool
# in use (nothing is done).
cdef CUresult pointer_release(ImportedPool* state, CUdeviceptr ptr, CUstream stream,
                              bint* found) noexcept nogil
# (attached resources, mappings, references, objects, dead): for tests.
cdef tuple pool_stats(ImportedPool* state)
