from libc.stdint cimport int32_t
from cuda.bindings.cydriver cimport CUdeviceptr


cdef object make_capsule(CUdeviceptr data, size_t nbytes, int32_t device_type,
                         int32_t device_id, object keepalive, bint versioned)
