"""Events: mark a point in a stream, wait for it, time between two of them."""

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUevent, CUresult, CUDA_SUCCESS

from cuda_core._context cimport Context, ContextGuard, enter_context
from cuda_core._errors cimport HANDLE_RETURN, check_call
from cuda_core._resource cimport Resource

from cuda.bindings import driver as _driver_py

from cuda_core._options import EventOptions, check_or_create_options

__all__ = ["Event", "EventOptions"]


cdef class Event(Resource):
    """A CUDA event. Not constructible: use :meth:`Device.create_event` or
    :meth:`Stream.record`.

    ``end - start`` gives the milliseconds between two completed, recorded events that both
    have timing enabled.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Event objects cannot be instantiated directly; use "
                           "Device.create_event() or Stream.record()")

    cdef int _release(self) except -1:
        if self._handle != NULL:
            check_call(cydriver.cuEventDestroy(self._handle), "cuEventDestroy")
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._handle

    def close(self):
        """Destroy the event. Idempotent; work already recorded still completes.

        .. note:: Calls ``cuEventDestroy``.
        """
        Resource.close(self)

    @property
    def handle(self):
        """The ``cuda.bindings.driver.CUevent`` handle (``int(e.handle)`` is its address)."""
        self._check_open()
        return _driver_py.CUevent(<size_t>self._handle)

    @property
    def device(self):
        """The :class:`Device` whose context the event belongs to."""
        self._check_open()
        return self._ctx.device

    @property
    def context(self):
        """The :class:`Context` the event belongs to."""
        self._check_open()
        return self._ctx

    @property
    def is_timing_enabled(self):
        self._check_open()
        return bool(self._timing)

    @property
    def is_blocking_sync(self):
        self._check_open()
        return bool(self._blocking)

    @property
    def is_ipc_enabled(self):
        self._check_open()
        return bool(self._ipc)

    @property
    def is_done(self):
        """True once all work captured by the last record has completed (``cuEventQuery``).

        An event that was never recorded is done.
        """
        self._check_open()
        # cuEventQuery never blocks: keeping the GIL is cheaper than releasing it.
        cdef CUresult err = cydriver.cuEventQuery(self._handle)
        if err == CUDA_SUCCESS:
            return True
        if err == cydriver.CUDA_ERROR_NOT_READY:
            return False
        HANDLE_RETURN(err)

    def sync(self):
        """Block until the event has completed (``cuEventSynchronize``), GIL released."""
        cdef CUresult err
        self._check_open()
        with nogil:
            err = cydriver.cuEventSynchronize(self._handle)
        HANDLE_RETURN(err)

    def __sub__(self, other):
        """Milliseconds elapsed from ``other`` (the start) to ``self`` (the end)."""
        cdef float ms = 0
        cdef CUresult err
        if not isinstance(self, Event) or not isinstance(other, Event):
            return NotImplemented
        cdef Event end = <Event>self
        cdef Event start = <Event>other
        end._check_open()
        start._check_open()
        if not (end._timing and start._timing):
            raise RuntimeError(
                "elapsed time needs two events created with "
                "EventOptions(timing_enabled=True); timing is disabled on the "
                + ("start and end events" if not (end._timing or start._timing)
                   else "start event" if not start._timing else "end event"))
        if not (end._recorded and start._recorded):
            raise RuntimeError(
                "elapsed time needs two recorded events; the "
                + ("start and end events were" if not (end._recorded or start._recorded)
                   else "start event was" if not start._recorded else "end event was")
                + " never recorded (use Stream.record(event))")
        err = cydriver.cuEventElapsedTime(&ms, start._handle, end._handle)
        if err == cydriver.CUDA_ERROR_NOT_READY:
            raise RuntimeError("elapsed time needs completed events: the work before one of "
                               "them has not finished (call .sync() on the end event first)")
        HANDLE_RETURN(err)
        return ms

    def __rsub__(self, other):
        return NotImplemented

    def __isub__(self, other):
        return NotImplemented

    def __eq__(self, other):
        if not isinstance(other, Event):
            return NotImplemented
        return self._handle == (<Event>other)._handle

    def __hash__(self):
        return hash((Event, <size_t>self._handle))

    def __repr__(self):
        if self._closed:
            return "<Event closed>"
        return f"<Event handle=0x{<size_t>self._handle:x} device={self._ctx._device_id}>"


cdef Event create_event(Context ctx, object options):
    """A new, unrecorded event in ``ctx``."""
    cdef bint timing = False, blocking = False, ipc = False
    cdef unsigned int flags = cydriver.CU_EVENT_DISABLE_TIMING
    cdef CUevent handle = NULL
    cdef ContextGuard guard
    if options is not None:  # the defaults need no options object
        opts = check_or_create_options(EventOptions, options, "Event options")
        timing, blocking, ipc = opts.timing_enabled, opts.blocking_sync, opts.ipc_enabled
        if timing:
            flags = 0
        if blocking:
            flags |= cydriver.CU_EVENT_BLOCKING_SYNC
        if ipc:
            flags |= cydriver.CU_EVENT_INTERPROCESS
    enter_context(guard, ctx._handle)
    HANDLE_RETURN(cydriver.cuEventCreate(&handle, flags))
    cdef Event ev = Event.__new__(Event)
    ev._handle = handle
    ev._ctx = ctx
    ev._timing = timing
    ev._blocking = blocking
    ev._ipc = ipc
    return ev
