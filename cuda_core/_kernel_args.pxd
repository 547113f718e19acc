from cpython.ref cimport PyObject


# One argument's inline storage: 16 bytes, 16-byte aligned (fits a complex<double>). Declared
# verbatim here, not in a header, so a module that cimports this .pxd needs no include path.
cdef extern from *:
    """
    #ifndef CUDA_CORE_ARG_SLOT_DEFINED
    #define CUDA_CORE_ARG_SLOT_DEFINED
    struct alignas(16) cuda_core_arg_slot {
        unsigned char bytes[16];
    };
    #endif
    """
    cdef struct cuda_core_arg_slot:
        unsigned char bytes[16]


cdef enum:
    # Launches with up to this many arguments pack them without touching the heap.
    INLINE_ARGS = 32


cdef struct ParamHolder:
    # kernelParams for the driver: ptrs[i] points at argument i's bytes, which live in a slot
    # (scalars converted from Python) or inside the argument object itself (NumPy scalars,
    # ctypes objects), which the caller keeps alive until the driver call returns.
    void** ptrs
    size_t* sizes
    cuda_core_arg_slot* slots
    Py_ssize_t count
    void* heap
    void* inline_ptrs[INLINE_ARGS]
    size_t inline_sizes[INLINE_ARGS]
    cuda_core_arg_slot inline_slots[INLINE_ARGS]


cdef int holder_init(ParamHolder* h, Py_ssize_t count) except -1
cdef void holder_release(ParamHolder* h) noexcept
# ``accepts``: the kernel's parameter-type table (_param_types.pxd), or NULL where the declared
# types are not known; then no argument's kind is checked.
cdef int pack_args(ParamHolder* h, PyObject** items, const size_t* expected,
                   const unsigned char* accepts) except -1
