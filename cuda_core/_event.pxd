from cuda.bindings.cydriver cimport CUevent

from cuda_core._context cimport Context


cdef class Event:
    cdef CUevent _handle
    cdef Context _ctx
    cdef bint _timing
    cdef bint _blocking
    cdef bint _ipc
    cdef bint _recorded
    cdef bint _closed
    cdef object __weakref__

    cdef int _check_open(self) except -1


cdef Event create_event(Context ctx, object options)
