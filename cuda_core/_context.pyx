"""CUDA contexts.

A device's primary context is retained once per process, the first time any thread calls
``Device.set_current()`` for it, and is never released before exit: streams, events and memory
of every thread hang off it, and other libraries (CuPy, PyTorch, the CUDA runtime) share it.
One :class:`Context` object stands for it in every thread.

Objects created for a device (streams, events) are created in that device's context even when
another context is current on the calling thread: a ``ContextGuard`` (``_context.pxd``) makes
it current around the driver call, and costs one ``cuCtxGetCurrent`` when it already is.
"""

import threading

cimport cython
from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUcontext, CUdevice, CUresult, CUstream, CUDA_SUCCESS

from cuda_core._atomic cimport load_int, load_ptr, store_int, store_ptr
from cuda_core._driver cimport driver_ready, ensure_driver
from cuda_core._errors cimport HANDLE_RETURN, make_driver_error
from cuda_core._resource cimport HandleKeyedResource

from cuda.bindings import driver as _driver_py

__all__ = ["Context"]

_primary_lock = threading.Lock()
cdef dict _primary = {}  # device ordinal -> Context, process-wide

# The same primary contexts' handles by ordinal, for C code that maps the current context to a
# device without Python (a launch on an unbound default stream). Each slot is written once,
# under _primary_lock, from NULL to a handle the process keeps until exit, and
# _primary_slots only grows; both are read and written atomically (_atomic.pxd), so a reader
# racing with a write sees NULL (or the old count) and takes the slow path, which gives the
# same answer.
cdef enum:
    _PRIMARY_SLOTS = 64
cdef CUcontext _primary_handles[_PRIMARY_SLOTS]
cdef int _primary_slots = 0


cdef class Context(HandleKeyedResource):
    """A CUDA context. Not constructible: use :attr:`Device.context` (a device's primary
    context) or :meth:`Device.create_context` (a green context).

    ``close()`` on a primary context is a no-op (and ``is_closed`` stays False), since it is
    shared by every thread and by other libraries for the whole life of the process; so it is
    on the context a green stream's :attr:`Stream.context` returns (the stream keeps it). A
    green context is released once it is closed (or collected) and the last stream and event
    made in it are gone: they keep it alive, so closing it never leaves them on a destroyed
    context.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Context objects cannot be instantiated directly; use Device.context "
                           "after Device.set_current(), or Device.create_context()")

    @property
    def handle(self):
        """The ``cuda.bindings.driver.CUcontext`` handle (``int(ctx.handle)`` is its address);
        for a green context, the one ``cuCtxFromGreenCtx`` gives."""
        self._check_open()
        return _driver_py.CUcontext(<size_t>self._handle)

    @property
    def device(self):
        """The :class:`Device` this context belongs to."""
        self._check_open()
        from cuda_core._device import Device
        return Device(self._device_id)

    @property
    def is_green(self):
        """True for a green context (made by :meth:`Device.create_context`)."""
        return self._green != NULL

    @property
    def is_primary(self):
        """True for a device's primary context."""
        return bool(self._is_primary)

    @property
    def resources(self):
        """:class:`DeviceResources`: a green context's own resources (its SM partition), or
        the whole device's for any other context."""
        self._check_open()
        from cuda_core._green import context_resources
        return context_resources(self)

    def create_stream(self, options=None):
        """Create a stream on this green context: its work runs on the context's SMs only.

        .. note:: Calls ``cuGreenCtxStreamCreate`` (CUDA 12.5+).

        Parameters
        ----------
        options : StreamOptions or dict, optional
            ``priority``; ``nonblocking`` must stay True (the driver makes only non-blocking
            streams on green contexts).

        Returns
        -------
        Stream
            It keeps this context alive.

        Raises
        ------
        RuntimeError
            On a context that is not green (use :meth:`Device.create_stream`), or a closed one.
        """
        self._check_open()
        if self._green == NULL:
            raise RuntimeError("Context.create_stream() is for green contexts only; use "
                               "Device.create_stream() for a device's primary context")
        from cuda_core._green import green_stream
        return green_stream(self, options)

    cdef int _release(self) except -1:
        # A user's green context: drop its hold on the view; the owner goes with the view's
        # last holder. _view_of reads _keep in the same section (free-threaded CPython).
        with cython.critical_section(self):
            view, self._keep = self._keep, None
        view = None
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._handle

    def __repr__(self):
        kind = "primary" if self._is_primary else ("green" if self._green != NULL else "context")
        closed = " (closed)" if self._closed else ""
        return (f"<Context {kind} of device {self._device_id} "
                f"handle=0x{<size_t>self._handle:x}{closed}>")


cdef Context _new_context(CUcontext handle, int device_id, bint is_primary):
    cdef Context ctx = Context.__new__(Context)
    ctx._handle = handle
    ctx._id = context_id(handle)
    ctx._device_id = device_id
    ctx._is_primary = is_primary
    ctx._non_owning = True
    return ctx


cdef unsigned long long context_id(CUcontext handle) noexcept:
    """The driver's unique ID of a live context; 0 where the driver cannot say."""
    cdef unsigned long long cid = 0
    if cydriver.cuCtxGetId(handle, &cid) != CUDA_SUCCESS:
        return 0
    return cid


cdef bint _gone(CUcontext handle, unsigned long long known) noexcept:
    """Whether the context ``handle`` is destroyed, or is no longer the one whose ID was
    ``known`` (0: not known)."""
    cdef unsigned long long cid = 0
    cdef CUresult err = cydriver.cuCtxGetId(handle, &cid)
    if err == CUDA_SUCCESS:
        return known != 0 and cid != known
    return (err == cydriver.CUDA_ERROR_CONTEXT_IS_DESTROYED
            or err == cydriver.CUDA_ERROR_INVALID_CONTEXT)


cdef bint context_gone(Context ctx) noexcept:
    # driver_ready(): without it nothing was made in a context (or there is no driver).
    return ctx is not None and driver_ready() and _gone(ctx._handle, ctx._id)


cdef bint current_context_gone() noexcept:
    cdef CUcontext handle = NULL
    if not driver_ready() or cydriver.cuCtxGetCurrent(&handle) != CUDA_SUCCESS:
        return False
    return handle != NULL and _gone(handle, 0)


cdef Context primary_context(int device_id):
    """The device's primary context, retained on first request (the driver is initialized)."""
    cdef Context ctx = _primary.get(device_id)
    if ctx is not None:
        return ctx
    with _primary_lock:
        ctx = _primary.get(device_id)
        if ctx is None:
            ctx = _retain_primary(device_id)
    return ctx


cdef Context live_primary_context(int device_id):
    cdef Context ctx = primary_context(device_id)
    if not context_gone(ctx):
        return ctx
    with _primary_lock:
        ctx = _primary[device_id]
        if context_gone(ctx):
            # The same handle comes back (the device's primary context object), so the C
            # table of handles stays right; the Context is a new one, and objects made in the
            # destroyed context keep the old one, which context_gone() tells apart.
            ctx = _retain_primary(device_id)
    return ctx


cdef Context _retain_primary(int device_id):
    """Retain the device's primary context and make it the process's Context for the device
    (under _primary_lock)."""
    global _primary_slots
    cdef CUcontext handle = NULL
    cdef CUdevice dev
    HANDLE_RETURN(cydriver.cuDeviceGet(&dev, device_id))
    HANDLE_RETURN(cydriver.cuDevicePrimaryCtxRetain(&handle, dev))
    cdef Context ctx = _new_context(handle, device_id, True)
    _primary[device_id] = ctx
    if device_id < _PRIMARY_SLOTS:
        store_ptr(<void**>&_primary_handles[device_id], <void*>handle)
        if device_id >= _primary_slots:
            store_int(&_primary_slots, device_id + 1)
    return ctx


cdef int primary_ordinal(CUcontext handle) noexcept nogil:
    """The ordinal of the device whose primary context (retained here) is ``handle``, else -1.
    A few compares: no Python, no driver call."""
    cdef int i
    for i in range(load_int(&_primary_slots)):
        if <CUcontext>load_ptr(<void**>&_primary_handles[i]) == handle:
            return i
    return -1


cdef int adopt_primary(CUcontext current) except -2:
    """As :func:`primary_ordinal` for ``current``, the calling thread's current context, also
    when it is a primary context that another library made active: it is retained here from
    then on, so the next look-up is the fast one. -1 for a context that is not a primary one;
    an inactive primary is never created."""
    cdef CUdevice dev = 0
    cdef unsigned int flags = 0
    cdef int active = 0
    cdef int ordinal = primary_ordinal(current)
    if ordinal >= 0 or current == NULL:
        return ordinal
    HANDLE_RETURN(cydriver.cuCtxGetDevice(&dev))
    if dev < load_int(&_primary_slots) and load_ptr(<void**>&_primary_handles[dev]) != NULL:
        return -1  # that device's primary is known, and it is not this context
    HANDLE_RETURN(cydriver.cuDevicePrimaryCtxGetState(dev, &flags, &active))
    if active and primary_context(<int>dev)._handle == current:
        return <int>dev
    return -1


cdef Context context_from_handle(CUcontext handle):
    """The Context object for a raw handle: the known primary one, or a new non-owning view."""
    cdef CUdevice dev = 0
    cdef int ordinal = primary_ordinal(handle)
    if ordinal >= 0:
        return _primary[ordinal]
    with _primary_lock:  # a snapshot: another thread may retain a primary meanwhile
        known = list(_primary.values())
    for ctx in known:  # ordinals beyond the C table
        if (<Context>ctx)._handle == handle:
            return ctx
    cdef unsigned int flags = 0
    cdef int active = 0
    cdef ContextGuard guard
    enter_context(guard, handle)
    HANDLE_RETURN(cydriver.cuCtxGetDevice(&dev))
    exit_context(guard)
    # Another library may have made the primary context (e.g. CUDA runtime users): it is ours
    # to share if it is active. An inactive primary cannot be this handle, and retaining it
    # would create it, so it is left alone.
    HANDLE_RETURN(cydriver.cuDevicePrimaryCtxGetState(dev, &flags, &active))
    if active:
        primary = primary_context(<int>dev)
        if primary._handle == handle:
            return primary
    return _new_context(handle, <int>dev, False)


cdef Context current_context(str what=None):
    """The context current on this thread; CUDAError when there is none (the message starts
    with ``what`` when given)."""
    cdef CUcontext handle = NULL
    ensure_driver()
    HANDLE_RETURN(cydriver.cuCtxGetCurrent(&handle))
    if handle == NULL:
        message = "no CUDA context is current on this thread (call Device.set_current() first)"
        raise make_driver_error(cydriver.CUDA_ERROR_INVALID_CONTEXT,
                                f"{what}: {message}" if what else message)
    return context_from_handle(handle)


cdef int current_ordinal() except -1:
    """The device of the context current on this thread, or 0 when none is (as ``Device()``)."""
    cdef CUdevice dev = 0
    cdef CUresult err
    ensure_driver()
    err = cydriver.cuCtxGetDevice(&dev)
    if err == cydriver.CUDA_ERROR_INVALID_CONTEXT:
        return 0
    HANDLE_RETURN(err)
    return dev


# The bodies being captured (_context.pxd): (context, stream) addresses, changed under
# _body_lock; _body_count is their number, read atomically without the lock.
_body_lock = threading.Lock()
cdef list _bodies = []
cdef int _body_count = 0


cdef int body_capture_begins(CUcontext ctx, CUstream stream) except -1:
    with _body_lock:
        _bodies.append((<size_t>ctx, <size_t>stream))
        store_int(&_body_count, len(_bodies))
    return 0


cdef int body_capture_ends(CUstream stream) except -1:
    if not any_body_capture():
        return 0
    with _body_lock:
        for i, (_, body_stream) in enumerate(_bodies):
            if body_stream == <size_t>stream:
                del _bodies[i]
                store_int(&_body_count, len(_bodies))
                break
    return 0


cdef bint any_body_capture() noexcept:
    return load_int(&_body_count) != 0


cdef bint body_capture_in(CUcontext ctx, CUstream stream) except -1:
    if not any_body_capture():
        return False
    with _body_lock:
        for body_ctx, body_stream in _bodies:
            if ((ctx != NULL and body_ctx == <size_t>ctx)
                    or (stream != NULL and body_stream == <size_t>stream)):
                return True
    return False


cdef int refuse_during_body_capture(CUcontext ctx, CUstream stream, str what) except -1:
    if not body_capture_in(ctx, stream):
        return 0
    raise make_driver_error(
        cydriver.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
        f"{what}: not while a conditional body is being captured "
        f"{'in this context' if ctx != NULL else 'on this stream'} (the driver would "
        f"invalidate that capture, and an invalidated body corrupts the graph that holds it); "
        f"end the body's building first")


cdef CUresult _pop_context(CUcontext* popped) noexcept nogil:
    # The guard's exit: a pop after our own successful push cannot fail in a way the caller
    # could act on, and a destructor has no way to raise.
    return cydriver.cuCtxPopCurrent(popped)


cdef extern from *:
    """
    static inline void cuda_core_guard_arm(cuda_core_ContextGuard& guard,
                                           CUresult (*pop)(CUcontext*)) {
        guard.pop = pop;
    }
    """
    void _arm_guard "cuda_core_guard_arm"(ContextGuard& guard,
                                          CUresult (*pop)(CUcontext*) noexcept nogil) noexcept nogil


cdef int enter_context(ContextGuard& guard, CUcontext ctx) except -1 nogil:
    """Make ``ctx`` current until ``guard`` goes out of scope (see _context.pxd)."""
    cdef CUcontext current = NULL
    if ctx == NULL:
        return 0
    guard.exit()  # a guard entered twice pops its first context before pushing the second
    HANDLE_RETURN(cydriver.cuCtxGetCurrent(&current))
    if current == ctx:
        return 0
    HANDLE_RETURN(cydriver.cuCtxPushCurrent(ctx))
    _arm_guard(guard, _pop_context)
    return 0
