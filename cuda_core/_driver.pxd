cdef int ensure_driver() except -1
cdef int cuda_version() except -1
cpdef tuple driver_version()
cpdef int device_count() except -1
