from cuda.bindings.cydriver cimport CUcontext, CUdeviceptr, CUresult
from libc.stdint cimport int32_t

from cuda_core._stream cimport Stream


cdef bint device_supports(object dev, str name) except -1
cdef int raise_alloc_error(CUresult err, size_t size, str what) except -1
cdef CUcontext stream_context(Stream s) noexcept
cdef CUcontext current_or_primary(int device_id) except? NULL
cdef int sync_stream(Stream s) except -1
cdef int sync_context(CUcontext ctx) except -1
cdef int free_after(CUdeviceptr ptr, Stream stream, CUcontext ctx, bint host) except -1


# What the driver says of a pointer (pointer_kind): the bits of Buffer._attr_flags.
cdef enum:
    ATTR_QUERIED = 1
    ATTR_DEVICE = 2      # device-accessible
    ATTR_HOST = 4        # host-accessible
    ATTR_MANAGED = 8
    ATTR_PINNED = 16     # page-locked host memory known to the driver
cdef int pointer_kind(CUdeviceptr ptr, int32_t* dev_id) except -1
