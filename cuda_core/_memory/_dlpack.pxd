from libc.stdint cimport int32_t, int64_t, uint8_t
from cuda.bindings.cydriver cimport CUdeviceptr

from cuda_core._stream cimport Stream


cdef object make_capsule(CUdeviceptr data, size_t nbytes, int32_t device_type,
                         int32_t device_id, object keepalive, bint versioned)
cdef void* make_tensor(void* data, int32_t device_type, int32_t device_id, int ndim,
                       const int64_t* shape, const int64_t* strides, uint8_t code, uint8_t bits,
                       bint readonly, object keepalive, bint versioned) except NULL
cdef object make_tensor_capsule(void* data, int32_t device_type, int32_t device_id, int ndim,
                                const int64_t* shape, const int64_t* strides, uint8_t code,
                                uint8_t bits, bint readonly, object keepalive, bint versioned)
# Buffer.__dlpack_device__ and Buffer.__dlpack__, less what needs the Buffer itself (this
# module cannot cimport _buffer, which cimports it).
cdef tuple dlpack_device(bint dev_acc, bint host_acc, bint managed, int dev_id)
cdef object export_args(object stream, object max_version, object dl_device, object copy,
                        bint* versioned, str who=*)
cdef int export_target(object want, object stream, Stream producer, int* dev_type,
                       int* dev_id, str who=*) except -1
