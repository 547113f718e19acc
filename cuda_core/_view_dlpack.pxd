from cpython.ref cimport PyObject

from cuda_core._memory._dlpack_abi cimport DLPackExchangeAPI


cdef extern from *:
    """
    static inline PyObject* cuda_core_smv_steal(PyObject* o) { return o; }
    static inline int cuda_core_smv_raise(void) { return -1; }
    """
    # A new reference handed to Cython as an object it owns.
    object steal "cuda_core_smv_steal"(PyObject* o)
    # Propagate the exception already set.
    int raise_current "cuda_core_smv_raise"() except -1


# The DLPack exchange with a producer, as a view consumes it: which protocol an object speaks,
# the __dlpack__ calls and their capsule, the C exchange table, a consumed tensor's deleter.
cdef object dlpack_method(object obj)
cdef int protocol(object obj) except -1
cdef void* export_tensor(object obj, object stream, bint no_sync, str who,
                         bint* versioned, object method) except NULL
cdef void delete_tensor(void* managed, bint versioned) noexcept
cdef int exchange_api(object obj, const DLPackExchangeAPI** api) except -1
