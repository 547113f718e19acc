# The DLPack ABI (https://dmlc.github.io/dlpack/latest/c_api.html), declared here from the
# specification as plain Cython structs, so that every module that cimports it gets the same C
# layout without a header file. Only what a 1.x producer needs is declared.
#
# Layout notes, from the specification:
#   * DLDeviceType is a C enum, so it is 4 bytes wide: declared as int32_t to pin the layout.
#   * DLManagedTensor (legacy, capsule name "dltensor") keeps the tensor first;
#     DLManagedTensorVersioned (1.x, "dltensor_versioned") starts with the version and keeps
#     the tensor last, after the flags.
#   * The deleter may be called by the consumer from any thread, without the GIL.

from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

# The version a producer states in DLManagedTensorVersioned.version.
cdef enum:
    DLPACK_MAJOR_VERSION = 1
    DLPACK_MINOR_VERSION = 0

# DLDeviceType values used here.
cdef enum:
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLCUDAManaged = 13

# DLDataTypeCode values used here.
cdef enum:
    kDLInt = 0
    kDLUInt = 1
    kDLFloat = 2

# DLManagedTensorVersioned.flags bits.
cdef enum:
    DLPACK_FLAG_BITMASK_READ_ONLY = 1
    DLPACK_FLAG_BITMASK_IS_COPIED = 2


cdef struct DLPackVersion:
    uint32_t major
    uint32_t minor


cdef struct DLDevice:
    int32_t device_type
    int32_t device_id


cdef struct DLDataType:
    uint8_t code
    uint8_t bits
    uint16_t lanes


cdef struct DLTensor:
    void* data
    DLDevice device
    int32_t ndim
    DLDataType dtype
    int64_t* shape
    int64_t* strides
    uint64_t byte_offset


cdef struct DLManagedTensor:
    DLTensor dl_tensor
    void* manager_ctx
    void (*deleter)(DLManagedTensor*) noexcept nogil


cdef struct DLManagedTensorVersioned:
    DLPackVersion version
    void* manager_ctx
    void (*deleter)(DLManagedTensorVersioned*) noexcept nogil
    uint64_t flags
    DLTensor dl_tensor


# The C exchange API (DLPack 1.3): a producer type's ``__dlpack_c_exchange_api__`` capsule,
# named "dlpack_exchange_api", points to a DLPackExchangeAPI that lives as long as the process.
# Every function returns 0, or -1 with the error reported (a Python exception set; the
# allocator reports through ``set_error`` instead). None may raise a C++ exception.

cdef enum:
    # The version of the DLPack specification that defines the exchange table.
    DLPACK_EXCHANGE_API_MINOR_VERSION = 3

cdef struct DLPackExchangeAPIHeader:
    DLPackVersion version
    # An older table of the same producer, for consumers of an older major version; or NULL.
    DLPackExchangeAPIHeader* prev_api

ctypedef void (*DLPackSetError)(void* error_ctx, const char* kind, const char* message) noexcept nogil

cdef struct DLPackExchangeAPI:
    DLPackExchangeAPIHeader header
    # A new owning tensor shaped as ``prototype`` (dtype, ndim, shape, device), allocated by
    # the producer; may be called without the GIL.
    int (*managed_tensor_allocator)(DLTensor* prototype, DLManagedTensorVersioned** out,
                                    void* error_ctx, DLPackSetError set_error) noexcept nogil
    # A new owning 1.x tensor of a Python object (no stream ordering).
    int (*managed_tensor_from_py_object_no_sync)(void* py_object,
                                                 DLManagedTensorVersioned** out) noexcept
    # A new Python object of the producer's type that takes over ``tensor`` (stolen, also on
    # failure).
    int (*managed_tensor_to_py_object_no_sync)(DLManagedTensorVersioned* tensor,
                                               void** out_py_object) noexcept
    # A borrowed tensor filled in place, valid until the caller returns; may be NULL.
    int (*dltensor_from_py_object_no_sync)(void* py_object, DLTensor* out) noexcept
    # The producer's current stream on a device (NULL for the host).
    int (*current_work_stream)(int32_t device_type, int32_t device_id,
                               void** out_stream) noexcept
