from cuda.bindings.cydriver cimport CUevent

from cuda_core._context cimport Context
from cuda_core._resource cimport Resource


cdef class Event(Resource):
    cdef CUevent _handle
    cdef Context _ctx
    cdef bint _timing
    cdef bint _blocking
    cdef bint _ipc
    cdef bint _recorded


cdef Event create_event(Context ctx, object options)
