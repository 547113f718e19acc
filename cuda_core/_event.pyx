"""Events: mark a point in a stream, wait for it, time between two of them, share one with
another process.

An IPC-enabled event (``Stream.record(options=EventOptions(ipc_enabled=True))``) is shared
through its :class:`IPCEventDescriptor`, or by sending the event itself through
:mod:`multiprocessing`. The importing process opens the descriptor with
``cuIpcOpenEventHandle``, which gives a new driver event on every call (two imports of one
descriptor are two independent events, each destroyed by its own ``close``), so imports need no
bookkeeping in this process.
"""

cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.string cimport memcpy

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUcontext, CUdevice, CUevent, CUipcEventHandle, CUresult,
                                     CUDA_SUCCESS)

from cuda_core._atomic cimport load_int, store_int
from cuda_core._context cimport (Context, ContextGuard, context_from_handle, context_gone,
                                 enter_context, exit_context, primary_context)
from cuda_core._driver cimport ensure_driver
from cuda_core._errors cimport HANDLE_RETURN, check_call, make_driver_error
from cuda_core._resource cimport HandleKeyedResource

from cuda.bindings import driver as _driver_py

from cuda_core import _mp
from cuda_core._options import EventOptions, check_or_create_options

__all__ = ["Event", "EventOptions"]


# -- process-wide flags, each written once with an atomic store ---------------------------------

# Whether the multiprocessing reducers are registered (cuda_core._mp.ensure_reducers ran).
cdef int _mp_ready = 0
# Per device ordinal: 0 not known yet, 1 interprocess events supported, 2 not supported.
cdef enum:
    _IPC_SLOTS = 64
cdef int _ipc_support[_IPC_SLOTS]


cdef inline int _ensure_mp() except -1:
    if load_int(&_mp_ready):
        return 0
    _mp.ensure_reducers()
    store_int(&_mp_ready, 1)
    return 0


cdef int _check_ipc_supported(int ordinal) except -1:
    """RuntimeError unless device ``ordinal`` supports interprocess events (read once)."""
    cdef int known = 0
    cdef int value = 0
    cdef CUdevice dev = 0
    if 0 <= ordinal < _IPC_SLOTS:
        known = load_int(&_ipc_support[ordinal])
    if known == 0:
        HANDLE_RETURN(cydriver.cuDeviceGet(&dev, ordinal))
        HANDLE_RETURN(cydriver.cuDeviceGetAttribute(
            &value, cydriver.CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, dev))
        known = 1 if value else 2
        if 0 <= ordinal < _IPC_SLOTS:
            store_int(&_ipc_support[ordinal], known)
    if known == 2:
        raise RuntimeError(f"device {ordinal} does not support interprocess events "
                           f"(properties.ipc_event_supported is False)")
    return 0


@cython.no_gc_clear  # __dealloc__ reads _ctx: the collector must not clear it first
cdef class Event(HandleKeyedResource):
    """A CUDA event. Not constructible: use :meth:`Device.create_event` or
    :meth:`Stream.record`.

    ``end - start`` gives the milliseconds between two completed, recorded events that both
    have timing enabled.

    An IPC-enabled event, made by ``Stream.record(options=EventOptions(ipc_enabled=True))``,
    can be waited on by other processes: send it through :mod:`multiprocessing` (a Queue, a
    Pipe, a ``Process`` argument), or send its :attr:`ipc_descriptor` and import that with
    :meth:`from_ipc_descriptor`. Such an event is recorded once (recording it again raises
    ``TypeError``: record a new one), never records timing, and must stay alive in the
    exporting process until every importer is done with it: what an imported event does once
    its exporter destroyed the original is undefined in the driver. Plain :mod:`pickle`
    refuses events.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Event objects cannot be instantiated directly; use "
                           "Device.create_event() or Stream.record()")

    cdef int _release(self) except -1:
        cdef CUresult err
        cdef CUevent other
        reopened = None
        if self._imported:
            # The openings in other contexts (wait_handle), taken under the section wait_handle
            # fills them in: _closed is set already, so none is added after this.
            with cython.critical_section(self):
                reopened = self._reopened
                self._reopened = None
        if reopened is not None:
            for handle in (<dict>reopened).values():
                other = <CUevent><size_t>handle
                with nogil:
                    err = cydriver.cuEventDestroy(other)
                check_call(err, "cuEventDestroy")
        if self._handle != NULL and self._graph_held:
            self._destroy_later = True  # a graph's node uses it (see the .pxd): __dealloc__
        elif self._handle != NULL:
            with nogil:  # as every destroy in a finalizer (DESIGN.md, the calls that wait)
                err = cydriver.cuEventDestroy(self._handle)
            check_call(err, "cuEventDestroy")
        return 0

    def __dealloc__(self):
        cdef CUevent handle = self._handle
        if self._destroy_later and handle != NULL and self._ctx is not None \
                and not context_gone(self._ctx):
            self._handle = NULL
            with nogil:  # nobody is told of a failure here: the object is gone
                cydriver.cuEventDestroy(handle)

    cdef size_t _address(self) noexcept:
        return <size_t>self._handle

    cdef bint _orphaned(self) noexcept:
        return self._handle != NULL and context_gone(self._ctx)

    def close(self):
        """Destroy the event. Idempotent; work already recorded still completes. An event a
        graph's node records or waits on is destroyed once that graph, its clones and the
        executable graphs made from them are gone; this object refuses every use from now on.

        .. note:: Calls ``cuEventDestroy``.
        """
        self._close()

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
        """True if the event records timestamps (``EventOptions.timing_enabled``)."""
        self._check_open()
        return bool(self._timing)

    @property
    def is_blocking_sync(self):
        """True if :meth:`sync` blocks the calling thread instead of spinning."""
        self._check_open()
        return bool(self._blocking)

    @property
    def is_ipc_enabled(self):
        """True if the event can be shared with other processes: an IPC-enabled event, or one
        imported from another process."""
        self._check_open()
        return bool(self._ipc)

    # -- IPC -----------------------------------------------------------------------------------

    @property
    def ipc_descriptor(self):
        """The :class:`IPCEventDescriptor` another process opens this event with
        (:meth:`from_ipc_descriptor`).

        Made on first use and kept; an imported event gives the descriptor it was imported
        from, so that it can be passed on.

        Raises
        ------
        RuntimeError
            If the event is not IPC-enabled, or is closed.

        Notes
        -----
        Calls ``cuIpcGetEventHandle`` once.
        """
        cdef CUipcEventHandle handle
        cdef ContextGuard guard
        self._check_open()
        if not self._ipc:
            raise RuntimeError("Event.ipc_descriptor: this event is not IPC-enabled; record "
                               "one with Stream.record(options=EventOptions(ipc_enabled=True))")
        # Check, export and store as one step: two threads get the same descriptor. The driver
        # call keeps the GIL (releasing the thread state would suspend the section).
        with cython.critical_section(self):
            desc = self._ipc_desc
            if desc is None:
                enter_context(guard, self._ctx._handle)
                HANDLE_RETURN(cydriver.cuIpcGetEventHandle(&handle, self._handle))
                desc = _new_descriptor(
                    PyBytes_FromStringAndSize(handle.reserved, sizeof(CUipcEventHandle)),
                    self._blocking)
                self._ipc_desc = desc
        return desc

    @classmethod
    def from_ipc_descriptor(cls, ipc_descriptor):
        """Open, in the current context, an event another process exported.

        Parameters
        ----------
        ipc_descriptor : IPCEventDescriptor
            :attr:`ipc_descriptor` of the exporting process's event.

        Returns
        -------
        Event
            An IPC-enabled event without timing, recorded (so that :meth:`sync`,
            :attr:`is_done` and ``Stream.wait`` see the exporter's record), owned by this
            process: :meth:`close` it when done. Each import is a new driver event, also for
            a descriptor imported before.

        Raises
        ------
        TypeError
            If ``ipc_descriptor`` is not an :class:`IPCEventDescriptor`.
        RuntimeError
            If no CUDA context is current (call ``Device(n).set_current()`` first).
        CUDAError
            If the driver refuses the descriptor: exported by this same process, or the
            exporting event was destroyed.

        Notes
        -----
        Calls ``cuIpcOpenEventHandle``. The exporting process must keep its event alive until
        this one is done with it.
        """
        cdef CUcontext current = NULL
        if type(ipc_descriptor) is not IPCEventDescriptor:
            raise TypeError(f"Event.from_ipc_descriptor(): ipc_descriptor must be an "
                            f"IPCEventDescriptor (Event.ipc_descriptor in the exporting "
                            f"process), not {type(ipc_descriptor).__name__}")
        ensure_driver()
        HANDLE_RETURN(cydriver.cuCtxGetCurrent(&current))
        if current == NULL:
            raise RuntimeError("Event.from_ipc_descriptor(): no CUDA context is current; call "
                               "Device(n).set_current() first")
        return _import_event(context_from_handle(current), <IPCEventDescriptor>ipc_descriptor,
                             "Event.from_ipc_descriptor()")

    def __reduce__(self):
        _ensure_mp()  # so that the next multiprocessing pickle finds the reducer
        raise TypeError("Event objects are sent through multiprocessing (IPC-enabled events) "
                        "or as event.ipc_descriptor")

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

    def __repr__(self):
        if self._closed:
            return "<Event closed>"
        kind = " imported" if self._imported else " ipc" if self._ipc else ""
        return f"<Event handle=0x{<size_t>self._handle:x} device={self._ctx._device_id}{kind}>"


@cython.final
cdef class IPCEventDescriptor:
    """What another process opens an IPC-enabled event with (:meth:`Event.from_ipc_descriptor`).

    Made by :attr:`Event.ipc_descriptor`: the driver's 64-byte interprocess handle of the event
    and whether it blocks on :meth:`Event.sync`. Two descriptors are equal (and hash alike)
    when both are the same. Plain :mod:`pickle` carries it; unpickling checks its shape (what
    it names is only checked by the driver, when it is opened).
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("IPCEventDescriptor objects cannot be created directly; use "
                           "Event.ipc_descriptor")

    @classmethod
    def _init(cls, reserved, is_blocking_sync):
        """A descriptor from its 64 bytes and blocking flag, checked (private; what pickles
        call)."""
        if type(reserved) is not bytes:
            raise TypeError(f"reserved must be bytes, not {type(reserved).__name__}")
        if len(<bytes>reserved) != sizeof(CUipcEventHandle):
            raise ValueError(f"an event descriptor's payload is {sizeof(CUipcEventHandle)} "
                             f"bytes (a CUipcEventHandle), not {len(<bytes>reserved)}")
        if type(is_blocking_sync) is not bool:
            raise TypeError(f"is_blocking_sync must be a bool, not "
                            f"{type(is_blocking_sync).__name__}")
        return _new_descriptor(<bytes>reserved, is_blocking_sync)

    def __eq__(self, other):
        if type(other) is not IPCEventDescriptor:
            return NotImplemented
        return (self._blocking == (<IPCEventDescriptor>other)._blocking
                and self._payload == (<IPCEventDescriptor>other)._payload)

    def __hash__(self):
        return hash((IPCEventDescriptor, self._payload, self._blocking))

    def __reduce__(self):
        return IPCEventDescriptor._init, (self._payload, bool(self._blocking))

    def __repr__(self):
        return (f"<IPCEventDescriptor {self._payload[:8].hex()}... "
                f"blocking_sync={bool(self._blocking)}>")


cdef IPCEventDescriptor _new_descriptor(bytes payload, bint blocking):
    cdef IPCEventDescriptor desc = IPCEventDescriptor.__new__(IPCEventDescriptor)
    desc._payload = payload
    desc._blocking = blocking
    return desc


cdef CUevent _open_descriptor(IPCEventDescriptor desc, bint keep_gil, str what) except NULL:
    """``cuIpcOpenEventHandle`` of ``desc`` in the current context: a new driver event on every
    call. ``keep_gil`` for a caller inside a critical section (releasing the thread state
    would suspend it)."""
    cdef CUipcEventHandle handle
    cdef CUevent opened = NULL
    cdef CUresult err
    memcpy(handle.reserved, <const char*>desc._payload, sizeof(CUipcEventHandle))
    if keep_gil:
        err = cydriver.cuIpcOpenEventHandle(&opened, handle)
    else:
        with nogil:
            err = cydriver.cuIpcOpenEventHandle(&opened, handle)
    if err != CUDA_SUCCESS:
        raise make_driver_error(err, f"{what}: ipc_descriptor: cuIpcOpenEventHandle refused it "
                                     f"(exported by this same process, or the exporting event "
                                     f"was destroyed?)")
    return opened


cdef Event _import_event(Context ctx, IPCEventDescriptor desc, str what):
    """The event ``desc`` names, opened in ``ctx`` (which the caller made current)."""
    cdef Event ev = Event.__new__(Event)  # first: nothing to undo if it fails
    cdef CUevent opened = _open_descriptor(desc, False, what)
    ev._handle = opened
    ev._ctx = ctx
    ev._blocking = desc._blocking
    ev._ipc = True
    ev._imported = True
    ev._recorded = True
    ev._ipc_desc = desc
    return ev


cdef CUevent wait_handle(Event ev, Context ctx) except NULL:
    """What a stream of ``ctx`` waits on for ``ev`` (``Stream.wait``): the event's own handle,
    except for an imported event opened in another context. A stream waiting on such an
    event directly kills the process: on two NVLink-connected H200s (driver 580) the driver
    dies with SIGSEGV inside ``cuStreamWaitEvent`` when the interprocess event was opened in
    the other device's context, with raw driver calls as well (tools/gpu/
    probe_ipc_event_devices.py), while the same wait on the event opened in the stream's own
    context works. So, for a stream of another device, the descriptor is opened again in
    ``ctx``, once per context (the driver gives a new event for the same interprocess event on
    every open), and kept until the event is closed. A stream of the event's own device waits
    on the event itself."""
    cdef CUevent opened
    cdef ContextGuard guard
    if not ev._imported or ev._ctx._device_id == ctx._device_id:
        return ev._handle
    key = <size_t>ctx._handle
    with cython.critical_section(ev):
        ev._check_open()
        if ev._reopened is None:
            ev._reopened = {}
        found = ev._reopened.get(key)
        if found is None:
            enter_context(guard, ctx._handle)
            opened = _open_descriptor(<IPCEventDescriptor>ev._ipc_desc, True,
                                      "Stream.wait() of an event imported on another device")
            exit_context(guard)
            found = <size_t>opened
            ev._reopened[key] = found
    return <CUevent><size_t>found


cdef Event create_event(Context ctx, object options, bint for_record=False):
    """A new, unrecorded event in ``ctx`` (see _event.pxd)."""
    cdef bint timing = False, blocking = False, ipc = False
    cdef unsigned int flags = cydriver.CU_EVENT_DISABLE_TIMING
    cdef ContextGuard guard
    if options is not None:  # the defaults need no options object
        if type(options) is EventOptions:  # the common case, without a Python call
            opts = options
        else:
            opts = check_or_create_options(EventOptions, options, "Event options")
        timing, blocking, ipc = opts.timing_enabled, opts.blocking_sync, opts.ipc_enabled
        if timing:
            flags = 0
        if blocking:
            flags |= cydriver.CU_EVENT_BLOCKING_SYNC
        if ipc:
            # The driver shares only events without timestamps; an IPC event is bound to the
            # one record that makes it (cuda.core's rules, and its exception type).
            if timing:
                raise TypeError("IPC-enabled events cannot record timing: use "
                                "EventOptions(ipc_enabled=True, timing_enabled=False)")
            if not for_record:
                raise TypeError("IPC-enabled events are created by "
                                "Stream.record(options=EventOptions(ipc_enabled=True))")
            _check_ipc_supported(ctx._device_id)
            _ensure_mp()
            flags |= cydriver.CU_EVENT_INTERPROCESS
    cdef Event ev = Event.__new__(Event)  # first: nothing to undo if it fails
    enter_context(guard, ctx._handle)
    HANDLE_RETURN(cydriver.cuEventCreate(&ev._handle, flags))
    ev._ctx = ctx
    ev._timing = timing
    ev._blocking = blocking
    ev._ipc = ipc
    return ev


# -- multiprocessing ---------------------------------------------------------------------------

def _reduce_event(Event ev):
    """How multiprocessing sends an Event: an IPC-enabled one as its device (by UUID) and its
    descriptor; any other is refused."""
    from cuda_core._memory._ipc_base import device_uuid

    ev._check_open()
    if not ev._ipc:
        raise TypeError("only IPC-enabled events can be sent to another process: record one "
                        "with Stream.record(options=EventOptions(ipc_enabled=True))")
    return _rebuild_event, (device_uuid(ev._ctx._device_id), ev.ipc_descriptor)


def _rebuild_event(str device_uuid not None, IPCEventDescriptor desc not None):
    """Unpickle an event sent through multiprocessing: opened in the current context, as
    :meth:`Event.from_ipc_descriptor` does; where no context is current (a ``Process``
    argument, unpickled before the child's code runs), in the primary context of the device
    with that UUID, made current only for the call."""
    from cuda_core._memory._ipc_base import device_from_uuid

    cdef CUcontext current = NULL
    cdef Context ctx
    cdef ContextGuard guard
    ensure_driver()  # a Process argument is unpickled before anything else used the driver
    HANDLE_RETURN(cydriver.cuCtxGetCurrent(&current))
    if current != NULL:
        return _import_event(context_from_handle(current), desc, "unpickling an Event")
    ctx = primary_context(device_from_uuid(device_uuid))
    enter_context(guard, ctx._handle)
    return _import_event(ctx, desc, "unpickling an Event")


_mp.add_reducer(Event, _reduce_event)
