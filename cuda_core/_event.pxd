from cuda.bindings.cydriver cimport CUevent

from cuda_core._context cimport Context
from cuda_core._resource cimport HandleKeyedResource


cdef class Event(HandleKeyedResource):
    cdef CUevent _handle
    cdef Context _ctx
    cdef bint _timing
    cdef bint _blocking
    cdef bint _ipc
    cdef bint _recorded
    # IPC: opened from another process's descriptor (Event.from_ipc_descriptor); a driver
    # event of its own, destroyed by close() as any other.
    cdef bint _imported
    # IPC: the IPCEventDescriptor, made on first use of ipc_descriptor (exporter) or the one
    # the event was imported from; None until then. Written under critical_section(self).
    cdef object _ipc_desc
    # A graph node records or waits on the event (graph._definition.own_uses): the driver reads
    # the handle at every instantiation, clone and launch of that graph, so close() leaves the
    # handle (_destroy_later) and it is destroyed with the object, which the graphs' user
    # object keeps alive until the last of them is gone.
    cdef bint _graph_held
    cdef bint _destroy_later
    # IPC, imported: the same interprocess event opened again in other contexts, for their
    # streams to wait on (see wait_handle): {context handle: event handle}, both as ints.
    # None until needed; filled under critical_section(self), destroyed with the event.
    cdef dict _reopened


cdef class IPCEventDescriptor:
    # The 64 bytes of the CUipcEventHandle.
    cdef bytes _payload
    cdef bint _blocking
    cdef object __weakref__


# The handle a stream of context ``ctx`` waits on for ``ev``: its own, or, for an imported event
# opened in another device's context, the interprocess event opened again in ``ctx``
# (_event.pyx says why).
cdef CUevent wait_handle(Event ev, Context ctx) except NULL

# A new, unrecorded event in ``ctx``. ``for_record``: the caller records it at once (Stream.record),
# the only way an IPC-enabled event may be made; Device.create_event passes False.
cdef Event create_event(Context ctx, object options, bint for_record=*)
