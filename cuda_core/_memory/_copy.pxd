from cuda.bindings.cydriver cimport CUdeviceptr

from cuda_core._stream cimport Stream


cdef int copy_bytes(CUdeviceptr dst, CUdeviceptr src, size_t n, Stream s) except -1
cdef int fill_bytes(CUdeviceptr dst, size_t size, object value, Stream s) except -1
