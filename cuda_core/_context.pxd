from cuda.bindings.cydriver cimport CUcontext


cdef class Context:
    cdef CUcontext _handle
    cdef int _device_id
    cdef bint _is_primary
    cdef object __weakref__


cdef Context primary_context(int device_id)
cdef int primary_ordinal(CUcontext handle) noexcept nogil
cdef int adopt_primary(CUcontext handle) except -2
cdef Context context_from_handle(CUcontext handle)
cdef Context current_context()
cdef int push_if_needed(CUcontext ctx) except -1 nogil
cdef int pop_pushed() except -1 nogil
