cdef int ensure_driver() except -1
# Whether cuInit has succeeded in this process (no driver call).
cdef bint driver_ready() noexcept nogil
cdef int cuda_version() except -1
cpdef tuple driver_version()
cpdef int device_count() except -1
