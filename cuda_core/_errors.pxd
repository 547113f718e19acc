from cuda.bindings.cydriver cimport CUresult, CUDA_SUCCESS


cdef int _raise_driver_error(CUresult err) except -1 nogil


cdef inline int HANDLE_RETURN(CUresult err) except -1 nogil:
    """Check a driver return code: free on success, takes the GIL only to raise."""
    if err == CUDA_SUCCESS:
        return 0
    return _raise_driver_error(err)


cdef object make_driver_error(CUresult err, str prefix=*)
# Every later driver error says that this process is a child forked after cuInit.
cdef void mark_forked_child() noexcept nogil


cdef inline int check_call(CUresult err, str call) except -1:
    """Check the return code of one named driver call (a release, a creation): the error
    names it (``"cuStreamDestroy: CUDA_ERROR_...: ..."``)."""
    if err == CUDA_SUCCESS:
        return 0
    raise make_driver_error(err, call)
