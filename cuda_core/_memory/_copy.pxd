from cuda.bindings.cydriver cimport CUdeviceptr, CUmemcpyAttributes

from cuda_core._stream cimport Stream


cdef int copy_bytes(CUdeviceptr dst, CUdeviceptr src, size_t n, Stream s) except -1
cdef int fill_bytes(CUdeviceptr dst, size_t size, object value, Stream s) except -1
cdef int check_batch_stream(Stream s, str what) except -1
cdef int check_not_capturing(Stream s, str what) except -1
cdef int fill_attributes(object options, CUmemcpyAttributes* out, str what) except -1
cdef str during_api_call_refusal(str what, str needs)
cdef object check_copy_options(object options, Stream s, str what)
cdef int copy_with_options(CUdeviceptr dst, CUdeviceptr src, size_t n, Stream s,
                           object options, str what) except -1
