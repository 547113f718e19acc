"""Streams: ordered queues of GPU work."""

import os

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUcontext, CUevent, CUresult, CUstream, CUDA_SUCCESS

from cuda_core._context cimport (Context, ContextGuard, body_capture_ends, context_from_handle,
                                 context_gone, current_context, enter_context, exit_context,
                                 refuse_during_body_capture)
from cuda_core._checks cimport check_int, type_name
from cuda_core._checks import ArgumentTypeError, SizeOverflowError
from cuda_core._driver cimport ensure_driver
from cuda_core._driver import per_thread_default_stream_requested
from cuda_core._errors cimport HANDLE_RETURN, check_call, make_driver_error
from cuda_core._resource cimport Resource
from cuda_core._event cimport Event, create_event, wait_handle

from cuda.bindings import driver as _driver_py

from cuda_core._options import StreamOptions, check_or_create_options

__all__ = ["Stream", "StreamOptions", "LEGACY_DEFAULT_STREAM", "PER_THREAD_DEFAULT_STREAM"]


cdef class Stream(Resource):
    """An ordered queue of GPU work. Not constructible: use :meth:`Device.create_stream`,
    :meth:`Stream.from_handle` or the default streams.

    A stream created by :meth:`Device.create_stream` is owned and destroyed by ``close()`` or
    when it is garbage-collected; a wrapped stream (``from_handle``, or any object with
    ``__cuda_stream__``) is never destroyed by this library.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Stream objects cannot be instantiated directly; use "
                           "Device.create_stream() or Stream.from_handle()")

    cdef int _release(self) except -1:
        cdef CUresult err
        self._owner = None
        if self._owned and not self._wedged:
            body_capture_ends(self._handle)
            with nogil:  # as every destroy in a finalizer (DESIGN.md, the calls that wait)
                # A capture still in progress (its GraphBuilder is being collected in the same
                # reference cycle, after this stream) ends before the stream goes.
                end_capture(self._handle)
                err = cydriver.cuStreamDestroy(self._handle)
            check_call(err, "cuStreamDestroy")
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._handle

    cdef bint _orphaned(self) noexcept:
        return self._owned and context_gone(self._ctx)

    cdef int _check_ready(self) except -1:
        """Raise if closed; bring the driver up for the default-stream constants, which exist
        before it is (their first direct driver call must say why it fails, if it does).
        A wrapped stream of another library's context (not a primary or green one) is checked
        to be alive: that library may have destroyed the context, and the stream with it,
        and the driver may crash on the dangling handle."""
        self._check_open()
        if self._ctx is None:
            ensure_driver()
        elif (not self._owned and not self._ctx._is_primary and self._ctx._green == NULL
                and context_gone(self._ctx)):
            raise make_driver_error(cydriver.CUDA_ERROR_CONTEXT_IS_DESTROYED,
                                    "this Stream's context was destroyed (cuCtxDestroy by the "
                                    "code that made it), and the stream with it")
        return 0

    cdef Context _resolve_ctx(self):
        if self._ctx is not None:
            return self._ctx
        return current_context()

    @staticmethod
    def from_handle(handle):
        """Wrap an existing ``CUstream``/``cudaStream_t`` given by its address.

        The stream's lifetime is not managed: the caller keeps it alive while the returned
        object is used, and ``close()`` does not destroy it. ``0``, ``1``
        (``CU_STREAM_LEGACY``) and ``2`` (``CU_STREAM_PER_THREAD``) name the default streams of
        the context current at each call. As in cuda.core, the address may be any int: Python's
        ``bool`` (``False`` is 0, ``True`` is 1) or an object with ``__index__`` (a NumPy
        integer), or a ``cuda.bindings.driver.CUstream``.
        """
        if type(handle) is not int and not isinstance(handle, _driver_py.CUstream):
            try:
                handle = check_int(handle, "handle")
            except ArgumentTypeError:  # NumPy's bool is no int either (see check_int)
                raise ArgumentTypeError(f"handle must be a stream address (int) or a "
                                        f"cuda.bindings.driver.CUstream, not "
                                        f"{type_name(handle)}") from None
        return wrap_handle(_stream_address(handle, "handle"), None)

    def close(self):
        """Destroy the stream if this object owns it; otherwise forget the wrapped handle.

        Idempotent. Work already queued still runs to completion. On the default streams this
        is a no-op.

        .. note:: Calls ``cuStreamDestroy`` for an owned stream.
        """
        if is_default_handle(self._handle) and not self._owned:
            return
        self._close()

    @property
    def handle(self):
        """The ``cuda.bindings.driver.CUstream`` handle (``int(s.handle)`` is its address)."""
        self._check_open()
        return _driver_py.CUstream(<size_t>self._handle)

    def __cuda_stream__(self):
        """The stream protocol, version 0: ``(0, address)``."""
        self._check_open()
        return (0, <size_t>self._handle)

    @property
    def context(self):
        """The :class:`Context` the stream belongs to (for the unbound default streams, the
        context current on the calling thread)."""
        self._check_open()
        return self._resolve_ctx()

    @property
    def device(self):
        """The :class:`Device` the stream's work runs on."""
        self._check_open()
        return self._resolve_ctx().device

    @property
    def resources(self):
        """:class:`DeviceResources` of the stream's context: a green context's own SMs for a
        stream made by :meth:`Context.create_stream`, else the device's."""
        self._check_ready()
        return self._resolve_ctx().resources

    @property
    def is_nonblocking(self):
        """True if the stream does not synchronize with the legacy default stream."""
        cdef unsigned int flags = 0
        cdef ContextGuard guard
        self._check_ready()
        enter_context(guard, self._bind_ctx)
        HANDLE_RETURN(cydriver.cuStreamGetFlags(self._handle, &flags))
        return bool(flags & cydriver.CU_STREAM_NON_BLOCKING)

    @property
    def priority(self):
        """The stream's priority; lower numbers run first."""
        cdef int prio = 0
        cdef ContextGuard guard
        self._check_ready()
        enter_context(guard, self._bind_ctx)
        HANDLE_RETURN(cydriver.cuStreamGetPriority(self._handle, &prio))
        return prio

    def sync(self):
        """Block until all work queued on the stream has completed, GIL released.

        .. note:: Calls ``cuStreamSynchronize``.
        """
        cdef CUresult err
        cdef ContextGuard guard
        self._check_ready()
        refuse_during_body_capture(NULL, self._handle, "Stream.sync()")
        if self._bind_ctx == NULL:
            # An idle stream answers cuStreamQuery at once, for less than releasing and
            # re-taking the GIL around cuStreamSynchronize costs; only busy streams wait.
            err = cydriver.cuStreamQuery(self._handle)
            if err == CUDA_SUCCESS:
                return
            if err != cydriver.CUDA_ERROR_NOT_READY:
                HANDLE_RETURN(err)
        with nogil:
            enter_context(guard, self._bind_ctx)
            err = cydriver.cuStreamSynchronize(self._handle)
            exit_context(guard)
        HANDLE_RETURN(err)

    @property
    def is_done(self):
        """True when all work queued on the stream has completed (``cuStreamQuery``)."""
        cdef CUresult err
        cdef ContextGuard guard
        self._check_ready()
        refuse_during_body_capture(NULL, self._handle, "Stream.is_done")
        enter_context(guard, self._bind_ctx)
        err = cydriver.cuStreamQuery(self._handle)
        exit_context(guard)
        if err == CUDA_SUCCESS:
            return True
        if err == cydriver.CUDA_ERROR_NOT_READY:
            return False
        HANDLE_RETURN(err)

    def record(self, event=None, options=None):
        """Record an event at the current end of the stream and return it.

        .. note:: Calls ``cuEventRecord``.

        Parameters
        ----------
        event : Event, optional
            An event to re-record (not an IPC-enabled one: those are recorded once). When
            None, a new event is created in the stream's context.
        options : EventOptions or dict, optional
            Options for the new event; only when ``event`` is None. This is how IPC-enabled
            events are made: ``options=EventOptions(ipc_enabled=True)``.

        Returns
        -------
        Event
        """
        cdef Event ev
        cdef Context ctx
        cdef ContextGuard guard
        cdef CUresult err
        self._check_open()
        ctx = self._resolve_ctx()
        if event is None:
            ev = create_event(ctx, options, True)
        else:
            if options is not None:
                raise ValueError("record(): options apply only when a new event is created "
                                 "(event=None)")
            if not isinstance(event, Event):
                raise TypeError(f"record(): event must be an Event or None, not "
                                f"{type(event).__name__}")
            ev = <Event>event
            ev._check_open()
            if ev._ipc:  # bound to the record that made it (cuda.core's rule)
                raise TypeError("an IPC-enabled event is recorded once; record a new one with "
                                "Stream.record(options=...)")
            if ev._ctx._handle != ctx._handle:
                raise ValueError(f"record(): the event belongs to device {ev._ctx._device_id} "
                                 f"but the stream to device {ctx._device_id}")
        enter_context(guard, self._bind_ctx)
        with nogil:  # blocks while the stream's queue is full (DESIGN.md, the calls that wait)
            err = cydriver.cuEventRecord(ev._handle, self._handle)
        HANDLE_RETURN(err)
        ev._recorded = True
        return ev

    def create_graph_builder(self):
        """A :class:`~cuda_core.graph.GraphBuilder` capturing on this stream, which stays
        open when the builder is closed."""
        from cuda_core.graph._builder import _builder_on

        self._check_open()
        return _builder_on(self, False)

    def wait(self, event_or_stream):
        """Make all future work on this stream wait for an event or another stream.

        .. note:: Calls ``cuStreamWaitEvent``.

        Parameters
        ----------
        event_or_stream : Event, Stream, or an object with ``__cuda_stream__``
            For an event, waits for its last record. For a stream, waits for all the work
            queued on it so far (through a temporary event).
        """
        cdef Event ev
        cdef Stream other
        cdef ContextGuard guard
        cdef CUresult err
        cdef CUevent handle
        self._check_open()
        if not isinstance(event_or_stream, Event):
            other = as_stream(event_or_stream, "wait()")
            other._check_open()
            if (same_stream(<size_t>other._handle, <size_t>self._handle)
                    and other._bind_ctx == self._bind_ctx):
                return
            # Closing the temporary event right after the wait is safe: the driver keeps what
            # the wait needs until it is satisfied.
            ev = other.record()
            try:
                self.wait(ev)
            finally:
                ev.close()
            return
        ev = <Event>event_or_stream
        ev._check_open()
        handle = ev._handle
        if ev._imported:  # through its opening in this stream's context (_event.wait_handle)
            handle = wait_handle(ev, self._resolve_ctx())
        enter_context(guard, self._bind_ctx)
        with nogil:  # blocks while the stream's queue is full (DESIGN.md, the calls that wait)
            err = cydriver.cuStreamWaitEvent(self._handle, handle, 0)
        HANDLE_RETURN(err)

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return NotImplemented
        return same_stream(<size_t>self._handle, <size_t>(<Stream>other)._handle)

    def __hash__(self):
        return hash((Stream, canonical_stream(<size_t>self._handle)))

    def __repr__(self):
        if self._closed:
            return "<Stream closed>"
        name = {0: "legacy default", 1: "legacy default", 2: "per-thread default"}.get(
            <size_t>self._handle)
        if name is not None:
            return f"<Stream {name}>"
        return f"<Stream handle=0x{<size_t>self._handle:x}>"


cdef extern from "Python.h":
    # Declared without Cython's error check: the caller tells the error apart itself.
    unsigned long long _long_as_u64 "PyLong_AsUnsignedLongLong"(object value) noexcept
    void* PyErr_Occurred()
    void PyErr_Clear()


cdef size_t _stream_address(object handle, str what) except? 0:
    cdef unsigned long long address
    if type(handle) is int:  # the common case, a launch on a __cuda_stream__ object
        address = _long_as_u64(handle)
        if address != <unsigned long long>-1 or PyErr_Occurred() == NULL:
            return <size_t>address
        PyErr_Clear()  # negative, or wider than 64 bits: refused below
    if isinstance(handle, bool):
        raise TypeError(f"{what} must be a stream address (int), not bool")
    if isinstance(handle, int):
        value = handle
    elif isinstance(handle, _driver_py.CUstream):
        value = int(handle)
    else:
        raise TypeError(f"{what} must be a stream address (int) or a "
                        f"cuda.bindings.driver.CUstream, not {type(handle).__name__}")
    if value < 0 or value >= (1 << 64):
        raise SizeOverflowError(f"{what}={value} is not a valid stream address")
    return value


cdef Stream _new_stream(CUstream handle, Context ctx, object owner, bint owned):
    cdef Stream s = Stream.__new__(Stream)
    s._handle = handle
    s._ctx = ctx
    s._owner = owner
    s._owned = owned
    return s


cdef Stream new_owned_stream(CUstream handle, Context ctx):
    return _new_stream(handle, ctx, None, True)


# Addresses below this are in the first page, which no process maps: no stream lives there.
cdef size_t _FIRST_PAGE_END = 4096


cdef Stream wrap_handle(size_t address, object owner):
    # The handle as given: Stream.from_handle(0).handle is 0, as in cuda.core (numba-cuda
    # round-trips it through int()); it equals LEGACY_DEFAULT_STREAM all the same.
    cdef CUstream handle = <CUstream>address
    cdef CUcontext ctx_handle = NULL
    cdef Context ctx = None
    if not is_default_handle(handle) and address < _FIRST_PAGE_END:
        # The driver would read a stream at that address: the first page is never mapped.
        raise ValueError(f"{address:#x} is not a stream: a CUstream is the address of the "
                         f"driver's stream object (0, 1 and 2 name the default streams)")
    ensure_driver()
    if not is_default_handle(handle):
        HANDLE_RETURN(cydriver.cuStreamGetCtx(handle, &ctx_handle))
        ctx = context_from_handle(ctx_handle)
    return _new_stream(handle, ctx, owner, False)


cdef class StreamHolder(Resource):
    """A Resource whose work goes to the Stream it holds (see _stream.pxd)."""


cdef Stream as_stream(object obj, str what):
    """``obj`` as a Stream: a Stream itself, a StreamHolder's (a GraphBuilder's capture stream),
    or a non-owning wrapper of a ``__cuda_stream__`` object that keeps the object alive."""
    if isinstance(obj, Stream):
        return <Stream>obj
    if isinstance(obj, StreamHolder):
        (<StreamHolder>obj)._check_open()
        return (<StreamHolder>obj)._stream
    return wrap_handle(<size_t>protocol_stream_handle(obj, what), obj)


cdef Stream require_stream(object stream, str what):
    """The ``stream=`` argument of allocate/copy/fill: required, never implied."""
    if stream is None:
        raise TypeError(f"{what}: stream is required (a Stream or an object with "
                        f"__cuda_stream__); pass Device.default_stream for the default stream")
    return as_stream(stream, what)


cdef Stream optional_stream(object stream, str what):
    """An optional ``stream=`` argument: None stays None, anything else is :func:`as_stream`'s."""
    if stream is None:
        return None
    return as_stream(stream, what)


cdef bint is_foreign_stream(object obj):
    """Whether as_stream would wrap ``obj`` through its ``__cuda_stream__`` (it is neither a
    Stream nor a StreamHolder: a GraphBuilder)."""
    return not isinstance(obj, Stream) and not isinstance(obj, StreamHolder)


cdef CUstream protocol_stream_handle(object obj, str what) except NULL:
    """The stream ``obj.__cuda_stream__()`` names, checked; 0 becomes CU_STREAM_LEGACY (so
    the result is never NULL). Called at every launch on such an object: the method is called
    without making a bound method, and the checks are type compares in the common case."""
    cdef tuple answer
    try:
        info = obj.__cuda_stream__()
    except (AttributeError, TypeError):
        _check_protocol_method(obj, what)
        raise  # raised inside __cuda_stream__
    if type(info) is tuple:
        answer = <tuple>info
    elif isinstance(info, tuple):
        answer = tuple(info)  # a tuple subclass's __len__ may disagree with its items
    else:
        answer = None
    if (answer is None or len(answer) != 2 or type(answer[0]) is not int
            or not isinstance(answer[1], int)):
        raise TypeError(f"{what}: {type(obj).__name__}.__cuda_stream__() must return "
                        f"(version, address) as two ints, got {info!r}")
    if answer[0] != 0:
        raise ValueError(f"{what}: unsupported __cuda_stream__ protocol version {answer[0]} "
                         f"(supported: 0)")
    cdef size_t address = _stream_address(answer[1], what)
    return <CUstream>(address if address else cydriver.CU_STREAM_LEGACY)


cdef int _check_protocol_method(object obj, str what) except -1:
    """Raise the TypeError for an ``obj`` without a callable ``__cuda_stream__``; return 0
    when it has one (an error from calling it was then raised inside it)."""
    try:
        protocol = obj.__cuda_stream__
    except AttributeError:
        raise ArgumentTypeError(f"{what}: expected a Stream or an object with __cuda_stream__, "
                                f"not {type(obj).__name__}") from None
    if not callable(protocol):
        raise TypeError(f"{what}: {type(obj).__name__}.__cuda_stream__ must be a method "
                        f"returning (version, address)")
    return 0


cdef int check_priority(object priority, int* prio) except -1:
    """``StreamOptions.priority`` checked against the range of the current context's device,
    stored in ``prio``; None leaves ``prio`` as it is."""
    cdef int least = 0, greatest = 0
    if priority is None:
        return 0
    HANDLE_RETURN(cydriver.cuCtxGetStreamPriorityRange(&least, &greatest))
    if not (greatest <= priority <= least):
        raise ValueError(f"StreamOptions.priority={priority} is outside this "
                         f"device's range {greatest} (highest) to {least} (lowest)")
    prio[0] = priority
    return 0


cdef Stream create_stream(Context ctx, object options):
    cdef unsigned int flags = cydriver.CU_STREAM_NON_BLOCKING
    cdef int prio = 0
    cdef CUstream handle = NULL
    priority = None
    if options is not None:  # the defaults need no options object
        opts = check_or_create_options(StreamOptions, options, "Stream options")
        if not opts.nonblocking:
            flags = 0
        priority = opts.priority
    cdef ContextGuard guard
    enter_context(guard, ctx._handle)
    check_priority(priority, &prio)
    HANDLE_RETURN(cydriver.cuStreamCreateWithPriority(&handle, flags, prio))
    return _new_stream(handle, ctx, None, True)


# Read at each first use of a device's default stream on a thread (the result is cached).
_per_thread_requested = per_thread_default_stream_requested


cdef Stream default_stream_for(Context ctx):
    """The default stream of ``ctx``'s device: per-thread when
    CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM asks for it, else legacy; bound to ``ctx``."""
    per_thread = _per_thread_requested()
    cdef CUstream handle = <CUstream>(cydriver.CU_STREAM_PER_THREAD if per_thread
                                      else cydriver.CU_STREAM_LEGACY)
    cdef Stream s = _new_stream(handle, ctx, None, False)
    s._bind_ctx = ctx._handle
    return s


LEGACY_DEFAULT_STREAM = _new_stream(<CUstream>cydriver.CU_STREAM_LEGACY, None, None, False)
PER_THREAD_DEFAULT_STREAM = _new_stream(<CUstream>cydriver.CU_STREAM_PER_THREAD, None, None,
                                        False)
