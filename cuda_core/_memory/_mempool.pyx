"""The stream-ordered memory pools behind DeviceMemoryResource, PinnedMemoryResource and
ManagedMemoryResource: the pool's creation, allocation, free, peer access and the IPC members,
written once (the pool's attributes are ``_pool_attributes``).

A pool resource either wraps a pool the driver already has (a device's current pool: not
owned, ``close()`` does nothing) or creates its own (owned: destroyed by ``close()`` or when the
resource is collected). Buffers keep their resource alive, so an owned pool outlives every
buffer allocated from it that is still open. An owned pool is destroyed only once every free
queued into it has run (a free still pending when its pool is destroyed makes the driver crash
later, in ``cuStreamDestroy`` of the free's stream): the release waits for the streams of those
frees. One closed while allocations are in use is destroyed by the free of the last of them.

A *mapped* resource is an IPC-enabled pool of another process imported into this one
(``from_allocation_handle``, or unpickled; built in ``_memory._ipc``). It cannot allocate; it
imports buffers (``Buffer.from_ipc_descriptor``), whose frees go through the import table of
``_memory._ipc_table``. Closing it detaches it from the imported pool, which is destroyed once
no mapped resource and no imported buffer uses it.
"""

cimport cython
from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUcontext, CUdeviceptr, CUmemoryPool, CUresult, CUstream,
                                     CUDA_SUCCESS, cuuint64_t)
from libc.string cimport memset

from cuda_core._checks cimport check_size
from cuda_core._context cimport (ContextGuard, body_capture_in, context_gone, enter_context,
                                 exit_context, primary_context)
from cuda_core._errors cimport HANDLE_RETURN, check_call
from cuda_core._memory._alloc cimport current_or_primary, raise_alloc_error, stream_context
from cuda_core._memory._buffer cimport new_buffer
from cuda_core._memory._memory_resource cimport MemoryResource, deallocate_checked
from cuda_core._memory._ipc_base cimport (IPCAllocationHandle, new_handle, registry_drop,
                                          registry_get, registry_put)
from cuda_core._memory._ipc_table cimport (pointer_release, pool_detach, pool_forget,
                                           pool_stats)
from cuda_core._memory._peer_access cimport (PEER_REPLACE, apply_peer_access, peer_changes,
                                             peer_edit, peer_items, peer_ordinals)
from cuda_core._memory._pool_attributes cimport new_pool_attributes
from cuda_core._resource cimport Resource
from cuda_core._stream cimport Stream, is_capturing, require_stream

from cuda.bindings import driver as _driver_py

from cuda_core import _mp
from cuda_core._memory._peer_access import (  # the test hook, and the live set, re-exported
    PeerAccessibleBySetProxy, _set_access_calls)

__all__ = ["PeerAccessibleBySetProxy"]


# The streams of frees an owned pool remembers (_MemPool._note_free); more: the whole context
# is waited for before the pool is destroyed.
cdef enum:
    _MAX_FREE_STREAMS = 8


cdef str _not_ipc(_MemPool mr, str what):
    """The message for an IPC member of a resource that is not IPC-enabled."""
    name = type(mr).__name__
    if name in ("DeviceMemoryResource", "PinnedMemoryResource"):
        fix = f"create it with {name}Options(ipc_enabled=True)"
    else:
        fix = "only DeviceMemoryResource and PinnedMemoryResource pools can be shared"
    return f"{what}: this {name} is not IPC-enabled; {fix}"


cdef object _uuid_class():
    import uuid
    return uuid.UUID


# The driver refuses pool calls (creation, attributes, access) while the calling thread is in
# a global or thread-local stream capture, and invalidates the capture. None of them is stream
# work, so ours makes them in relaxed mode and then gives the thread its own mode back: a
# resource can be made during a capture (as in cuda.core 1.3).

cdef cydriver.CUstreamCaptureMode relax_capture() except *:
    """Put this thread in relaxed capture mode; returns its mode, for restore_capture."""
    cdef cydriver.CUstreamCaptureMode mode = cydriver.CU_STREAM_CAPTURE_MODE_RELAXED
    HANDLE_RETURN(cydriver.cuThreadExchangeStreamCaptureMode(&mode))
    return mode


cdef int restore_capture(cydriver.CUstreamCaptureMode mode) except -1:
    HANDLE_RETURN(cydriver.cuThreadExchangeStreamCaptureMode(&mode))
    return 0


cdef CUresult create_pool(CUmemoryPool* pool, cydriver.CUmemAllocationType kind,
                          cydriver.CUmemLocationType where, int where_id, bint ipc,
                          size_t max_size) except *:
    """A new pool of ``kind`` memory at the location (``where``, ``where_id``), shareable
    through POSIX file descriptors when ``ipc``, holding at most ``max_size`` bytes (0: the
    driver chooses): every pool resource creates its pool here. cuMemPoolCreate in relaxed
    capture mode; returns its result."""
    cdef cydriver.CUmemPoolProps props
    memset(&props, 0, sizeof(props))
    props.allocType = kind
    props.handleTypes = (cydriver.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR if ipc
                         else cydriver.CU_MEM_HANDLE_TYPE_NONE)
    props.location.type = where
    props.location.id = where_id
    props.maxSize = max_size
    mode = relax_capture()
    err = cydriver.cuMemPoolCreate(pool, &props)
    restore_capture(mode)
    return err


cdef int raise_release_threshold(CUmemoryPool pool) except -1:
    """Let the pool keep the memory it has once reserved (threshold: unlimited), instead of
    giving it back to the OS at every synchronization, when nobody configured it (0, the
    driver default). A later allocation then reuses it instead of mapping new memory."""
    cdef cuuint64_t threshold = 0
    cdef CUresult err
    mode = relax_capture()
    err = cydriver.cuMemPoolGetAttribute(pool, cydriver.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                         &threshold)
    if err == CUDA_SUCCESS and threshold == 0:
        threshold = <cuuint64_t>-1
        err = cydriver.cuMemPoolSetAttribute(pool, cydriver.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                             &threshold)
    restore_capture(mode)
    HANDLE_RETURN(err)
    return 0


@cython.auto_pickle(False)
cdef class _MemPool(MemoryResource):
    """Base of the pool-backed resources (not public). The resource owns its pool when it
    created it: ``_release`` (close, or the finalizer) destroys it then."""

    cdef int _release(self) except -1:
        cdef CUresult err = CUDA_SUCCESS
        cdef ContextGuard guard
        cdef CUcontext ctx
        cdef IPCAllocationHandle handle = self._handle
        if not self._inited:
            return 0
        if self._mapped:
            # Unregistered first: a lookup must not find a closed resource.
            if self._uuid is not None:
                registry_drop(self._uuid, self)
            ctx = self._fallback_context()
            with nogil:
                enter_context(guard, ctx)
                err = pool_detach(self._state)
                exit_context(guard)
        elif self._owned:
            try:
                # A pool with allocations in use (closed explicitly, with buffers open), or
                # with frees that cannot be waited for yet, is destroyed by a later free
                # (_deallocate_c), once they have run.
                with cython.critical_section(self):  # as _note_free reads it
                    self._destroy_deferred = True
                if self._wait_for_frees():
                    self._destroy_when_unused()
            finally:
                if handle is not None:
                    handle.close()
            return 0
        # The handle's descriptor is closed whatever the pool's fate (fds already sent live on
        # in the processes that received them).
        if handle is not None:
            handle.close()
        return check_call(err, "cuMemPoolDestroy")

    def __dealloc__(self):
        if self._state != NULL:
            pool_forget(self._state)
            self._state = NULL

    cdef size_t _address(self) noexcept:
        return <size_t>self._pool

    cdef int _setup(self, CUmemoryPool pool, int dev_id, bint owned, bint ipc,
                    str what) except -1:
        self._pool = pool
        self._dev_id = dev_id
        self._owned = owned
        self._ipc = ipc
        self._what = what
        self._what_size = f"{what}: size"
        if ipc:
            import uuid
            self._uuid = uuid.uuid4()
            _mp.ensure_reducers()
        self._inited = True
        if ipc:
            # The driver refuses to export a pointer (cuMemPoolExportPointer: INVALID_VALUE)
            # from a pool that was never exported itself: export it now, as a new pool is.
            self.allocation_handle
        return 0

    cdef int _note_free(self, Stream stream) except -1:
        """Remember the stream a free into this owned pool was queued on (see the .pxd); 1
        when the pool's destroy waits for its last free (_destroy_deferred), else 0. Read in
        the section close() sets it in: a free either is remembered before (close() waits for
        it) or sees the flag (and may be the last)."""
        cdef list streams
        with cython.critical_section(self):  # (free-threaded: frees from several threads)
            streams = self._free_streams
            if streams is None:
                streams = self._free_streams = []
            for seen in streams:
                if seen is stream:
                    return self._destroy_deferred
            if len(streams) < _MAX_FREE_STREAMS:
                streams.append(stream)
            else:
                self._free_overflow = True
            return self._destroy_deferred

    cdef bint _wait_for_frees(self) except -1:
        """Wait until every free queued into this pool so far has run; False where one cannot
        be waited for now (its context or stream is capturing a conditional body, which the
        wait would invalidate: _context.pxd), and stays to be waited for by the next call.
        Best effort: a stream or context that fails to synchronize (a sticky error) is not
        waited for again."""
        cdef Stream s
        cdef CUcontext ctx
        cdef ContextGuard guard
        cdef list later = []
        with cython.critical_section(self):
            streams, self._free_streams = self._free_streams, None
            overflow, self._free_overflow = self._free_overflow, False
        if overflow:
            streams = [None]
        for item in streams or ():
            if item is not None and (<Stream>item)._ctx is not None and \
                    context_gone((<Stream>item)._ctx):
                continue  # reset or destroyed by other code: its work went with it
            if item is None or (<Stream>item)._closed:
                # The legacy default stream, or a stream closed since (the driver still runs
                # its work): all the context's work.
                ctx = self._fallback_context() if item is None else stream_context(<Stream>item)
                if body_capture_in(ctx, NULL):
                    later.append(item)
                    continue
                with nogil:
                    enter_context(guard, ctx)
                    cydriver.cuCtxSynchronize()
                    exit_context(guard)
            else:
                s = <Stream>item
                if body_capture_in(NULL, s._handle):
                    later.append(item)
                    continue
                with nogil:
                    cydriver.cuStreamSynchronize(s._handle)
        if not later:
            return True
        with cython.critical_section(self):
            if self._free_streams is not None:
                later.extend(self._free_streams)
            self._free_streams = later
        return False

    cdef int _destroy_when_unused(self) except -1:
        """Destroy the pool of a closed resource once no allocation of it is in use (after
        _wait_for_frees: every free queued has run)."""
        cdef cuuint64_t used = 0
        cdef CUresult err
        cdef bint mine
        if not self._destroy_deferred:
            return 0
        with nogil:
            err = cydriver.cuMemPoolGetAttribute(
                self._pool, cydriver.CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used)
        if err == CUDA_SUCCESS and used != 0:
            return 0
        # Several threads may get here at once (the last frees, and close()): the one that
        # clears the flag destroys the pool.
        with cython.critical_section(self):
            mine = self._destroy_deferred
            self._destroy_deferred = False
        if not mine:
            return 0
        with nogil:
            err = cydriver.cuMemPoolDestroy(self._pool)
        return check_call(err, "cuMemPoolDestroy")

    cdef int _check_ready(self) except -1:
        if not self._inited:
            raise RuntimeError(f"this {type(self).__name__} was not initialized (its __init__ "
                               f"did not run)")
        return self._check_open()

    cdef CUcontext _fallback_context(self) except? NULL:
        """The context for a free with no stream: the device's primary context, or for a host
        pool the current context (device 0's primary context when there is none)."""
        if self._dev_id >= 0:
            return primary_context(self._dev_id)._handle
        return current_or_primary(-1)

    cdef CUresult _driver_alloc(self, CUdeviceptr* ptr, size_t size, CUstream s) noexcept nogil:
        """The allocation call, in the stream's context (a subclass may allocate otherwise)."""
        return cydriver.cuMemAllocFromPoolAsync(ptr, size, self._pool, s)

    cdef CUdeviceptr _alloc_ptr(self, size_t size, Stream s) except? 0:
        cdef CUdeviceptr ptr = 0
        cdef CUcontext ctx
        cdef CUresult err
        cdef ContextGuard guard
        cdef bint capturing
        self._check_ready()
        if self._mapped:
            raise TypeError(f"{self._what}: this resource is mapped from another process and "
                            f"can only import buffers (Buffer.from_ipc_descriptor)")
        s._check_open()
        if size == 0:
            return 0
        ctx = stream_context(s)
        with nogil:
            enter_context(guard, ctx)
            capturing = is_capturing(s._handle)
            if not capturing:
                err = self._driver_alloc(&ptr, size, s._handle)
            exit_context(guard)
        if capturing:
            # As cuda.core documents: a pool allocates outside graphs only.
            raise RuntimeError(f"{self._what}: the stream is a capturing stream; a pool "
                               f"resource cannot allocate into a graph (use "
                               f"GraphMemoryResource, whose memory belongs to the graph)")
        if err != CUDA_SUCCESS:
            raise_alloc_error(err, size, self._what)
        return ptr

    def allocate(self, size, *, stream):
        """Allocate ``size`` bytes from the pool, ordered on ``stream``.

        Parameters
        ----------
        size : int
            Number of bytes (0 gives an empty buffer at address 0).
        stream : Stream
            Orders the allocation, and by default the buffer's eventual free (keyword-only,
            required).

        Returns
        -------
        Buffer

        Raises
        ------
        CUDAOutOfMemoryError
            When the pool cannot grow; the message names the size.

        Notes
        -----
        Calls ``cuMemAllocFromPoolAsync``.
        """
        cdef size_t n = check_size(size, self._what_size)
        cdef Stream s = require_stream(stream, self._what)
        cdef CUdeviceptr ptr = self._alloc_ptr(n, s)
        return new_buffer(ptr, n, self, s)

    cdef int _deallocate_c(self, CUdeviceptr ptr, size_t size, Stream stream) except -1:
        cdef CUstream handle
        cdef CUcontext ctx
        cdef CUresult err
        cdef ContextGuard guard
        if ptr == 0:
            return 0
        if stream is None:
            handle = <CUstream>cydriver.CU_STREAM_LEGACY
            ctx = self._fallback_context()
        else:
            stream._check_open()
            handle = stream._handle
            ctx = stream_context(stream)
        if self._mapped:
            return self._release_import(ptr, handle, ctx)
        with nogil:
            enter_context(guard, ctx)
            err = cydriver.cuMemFreeAsync(ptr, handle)
            exit_context(guard)
        HANDLE_RETURN(err)
        if self._owned:
            if self._note_free(stream):  # closed with buffers open: this may be the last
                if self._wait_for_frees():
                    self._destroy_when_unused()
        return 0

    cdef int _release_import(self, CUdeviceptr ptr, CUstream handle, CUcontext ctx) except -1:
        """A mapped resource's free: one reference of an imported pointer dropped; the last one
        unmaps it (see _ipc_table)."""
        cdef bint found = False
        cdef CUresult err
        cdef ContextGuard guard
        if ctx == NULL:  # an unbound default stream: the context current now (as the driver)
            ctx = current_or_primary(self._dev_id)
        with nogil:
            enter_context(guard, ctx)
            err = pointer_release(self._state, ptr, handle, &found)
            exit_context(guard)
        if not found:
            raise ValueError(f"{type(self).__name__}.deallocate(): ptr 0x{ptr:x} is not a "
                             f"buffer imported through this resource (or it was freed already)")
        return HANDLE_RETURN(err)

    def deallocate(self, ptr, size, *, stream=None):
        """Return memory to the pool, ordered on ``stream``.

        Parameters
        ----------
        ptr : int
            An address this resource allocated.
        size : int
            Its size.
        stream : Stream, optional
            The stream that orders the free. None orders it on the legacy default stream of
            the pool's device, which does not wait for work on non-blocking streams: pass the
            stream the memory was last used on.

        Notes
        -----
        Calls ``cuMemFreeAsync``. Works after an owned pool was closed: the free of its last
        allocation destroys the pool, once that free has run. On a mapped resource, ``ptr`` must
        be a buffer it imported (else ValueError): the memory is unmapped here once the last
        buffer imported from the same allocation is freed.
        """
        deallocate_checked(self, ptr, size, stream, f"{type(self).__name__}.deallocate()")

    @property
    def handle(self):
        """The pool, a ``cuda.bindings.driver.CUmemoryPool`` (``int(mr.handle)`` is its
        address)."""
        self._check_ready()
        return _driver_py.CUmemoryPool(<size_t>self._pool)

    @property
    def is_handle_owned(self):
        """True if this resource created the pool, or imported it (a mapped resource), and
        gives it back on close."""
        return bool(self._owned)

    @property
    def is_ipc_enabled(self):
        """True if the pool can be shared with other processes: created with
        ``ipc_enabled=True``, or mapped from another process."""
        return bool(self._ipc)

    @property
    def is_mapped(self):
        """True for a resource mapped from another process (``from_allocation_handle``, or
        unpickled). It imports buffers (:meth:`Buffer.from_ipc_descriptor`) and cannot
        allocate."""
        return bool(self._mapped)

    @property
    def uuid(self):
        """The ``uuid.UUID`` that names an IPC-enabled resource across processes (made with its
        pool); for a mapped resource, the exporter's (from its allocation handle or
        :meth:`register`), or None when not known. None for a resource that is not
        IPC-enabled."""
        return self._uuid

    @property
    def allocation_handle(self):
        """The :class:`~cuda_core._memory._ipc_base.IPCAllocationHandle` (a file descriptor)
        another process maps this pool with (``from_allocation_handle``).

        Made when an IPC-enabled resource is created (the driver exports no buffer of a pool
        that was never exported) and kept: every access returns the same object, which the
        resource owns and closes with itself. If it was closed, the next access exports a new
        one. A mapped resource gives the handle it was imported with, so that the pool can be
        passed on.

        Raises
        ------
        RuntimeError
            If the resource is not IPC-enabled or is closed (or, mapped, its handle was
            closed).

        Notes
        -----
        Calls ``cuMemPoolExportToShareableHandle`` (POSIX file descriptor).
        """
        cdef int fd = -1
        cdef CUresult err
        cdef ContextGuard guard
        cdef CUcontext ctx
        cdef IPCAllocationHandle h
        what = f"{type(self).__name__}.allocation_handle"
        self._check_ready()
        if not self._ipc:
            raise RuntimeError(_not_ipc(self, what))
        ctx = self._fallback_context()  # before the section: it may wait for a lock
        with cython.critical_section(self):
            h = self._handle
            if h is None or h._closed:
                if self._mapped:
                    raise RuntimeError(f"{what}: the handle this mapped resource was imported "
                                       f"with is closed; an imported pool cannot be exported "
                                       f"again")
                # With the GIL held: releasing it would suspend the critical section.
                enter_context(guard, ctx)
                err = cydriver.cuMemPoolExportToShareableHandle(
                    &fd, self._pool, cydriver.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)
                exit_context(guard)
                check_call(err, "cuMemPoolExportToShareableHandle")
                h = new_handle(fd, self._uuid)
                self._handle = h
        return h

    def register(self, uuid):
        """Register this mapped resource under ``uuid`` (its exporter's :attr:`uuid`), so that
        buffers pickled with plain :mod:`pickle` find it (:meth:`from_registry`).

        Parameters
        ----------
        uuid : uuid.UUID

        Returns
        -------
        The resource registered under ``uuid``: one registered before (and still alive), or
        this one.

        Raises
        ------
        TypeError
            If ``uuid`` is not a ``uuid.UUID``.
        ValueError
            If this resource already has another uuid.
        RuntimeError
            If this resource is not mapped (exporters are never registered: imports into them
            are refused), or is closed.
        """
        what = f"{type(self).__name__}.register()"
        if not isinstance(uuid, _uuid_class()):
            raise TypeError(f"{what}: uuid must be a uuid.UUID, not {type(uuid).__name__}")
        self._check_ready()
        if not self._mapped:
            raise RuntimeError(f"{what}: only a mapped resource (from_allocation_handle) can "
                               f"be registered")
        if self._uuid is not None and self._uuid != uuid:
            raise ValueError(f"{what}: this resource's uuid is {self._uuid}, not {uuid}")
        registered = registry_put(uuid, self)
        if registered is self:
            self._uuid = uuid
        return registered

    @classmethod
    def from_registry(cls, uuid):
        """The mapped resource registered under ``uuid`` in this process (:meth:`register`;
        unpickling a resource through :mod:`multiprocessing` registers it).

        Parameters
        ----------
        uuid : uuid.UUID
            The exporting resource's :attr:`uuid`.

        Returns
        -------
        The live mapped resource registered under ``uuid``.

        Raises
        ------
        TypeError
            If the registered resource is not a ``cls``.
        RuntimeError
            If no live resource is registered under ``uuid`` (which is always so for a key
            that is not a ``uuid.UUID``, as in cuda.core).
        """
        what = f"{cls.__name__}.from_registry()"
        hash(uuid)  # an unhashable key: TypeError, as cuda.core's lookup
        if not isinstance(uuid, _uuid_class()):
            raise RuntimeError(f"{what}: no memory resource is registered under {uuid!r}: the "
                               f"keys are uuid.UUID, not {type(uuid).__name__}")
        mr = registry_get(uuid)
        if mr is None:
            raise RuntimeError(f"no mapped memory resource with uuid {uuid} in this process; "
                               f"send the resource through multiprocessing first, or call "
                               f"from_allocation_handle(...).register(uuid)")
        if not isinstance(mr, cls):
            raise TypeError(f"{what}: the resource registered under {uuid} is a "
                            f"{type(mr).__name__}, not a {cls.__name__}")
        return mr

    def _ipc_stats(self):
        """Test hook: ``(attached resources, mappings, references, objects, dead)`` of a mapped
        resource's imported pool (see ``_ipc_table``); None for other resources."""
        if self._state == NULL:
            return None
        return pool_stats(self._state)

    @property
    def device_id(self):
        """The device the pool's memory lives on; -1 for host memory."""
        return self._dev_id

    @property
    def is_device_accessible(self):
        """True: the memory of a device pool is its device's; the devices are granted access
        to a host pool's, and managed memory is accessible from every device."""
        return True

    @property
    def is_host_accessible(self):
        """True for host (pinned) and managed pools, False for device pools."""
        return bool(self._host_access)

    @property
    def attributes(self):
        """:class:`MemoryPoolAttributes`: the pool's reuse policy, release threshold and usage
        counters, live (read from the driver at each access)."""
        self._check_ready()
        return new_pool_attributes(self, self._pool)

    @property
    def peer_accessible_by(self):
        """The other devices that can access this pool's memory: a live, mutable set of
        :class:`Device` (:class:`PeerAccessibleBySetProxy`). Items may be given as Devices or
        ordinals; the pool's own device always has access and is ignored wherever it is given.
        Assigning an iterable replaces the set in one driver call.

        Access is per process: a mapped device pool starts with no peers, whatever the exporter
        granted (a mapped host pool grants the devices access itself, as creation does).

        .. note:: Reads with ``cuMemPoolGetAccess``; each change, a bulk one included, is one
           ``cuMemPoolSetAccess`` (a change remaps every allocation of the pool: one call lets
           the driver do them together).
        """
        self._check_ready()
        return PeerAccessibleBySetProxy._create(self)

    @peer_accessible_by.setter
    def peer_accessible_by(self, devices):
        self._check_ready()
        self._peer_edit(PEER_REPLACE, (peer_items(devices),))

    def close(self):
        """Destroy the pool if this resource created it; otherwise do nothing. Idempotent.

        Buffers still allocated from the pool stay valid until they are freed.

        .. note:: Calls ``cuMemPoolDestroy`` for an owned pool.
        """
        if self._inited and self._owned:  # a shared pool stays open
            self._close()

    def __repr__(self):
        where = "host" if self._dev_id < 0 else f"device {self._dev_id}"
        state = " closed" if self._closed else ""
        kind = "mapped" if self._mapped else ("owned" if self._owned else "shared")
        ipc = ", ipc" if self._ipc and not self._mapped else ""
        if self._uuid is not None:
            ipc += f", uuid {self._uuid.hex[:8]}"
        return f"<{type(self).__name__} {where} ({kind} pool{ipc}){state}>"

    # -- peer access (used by the proxy) --------------------------------------------------------

    # Each pushes the pool's context when none is current (a thread that never chose one).

    def _peer_ordinals_with_access(self):
        cdef ContextGuard guard
        self._check_ready()
        enter_context(guard, self._fallback_context())
        return peer_ordinals(self._pool, self._dev_id)

    def _peer_edit(self, int op, tuple others):
        """A bulk change of the peer set (see _peer_access.peer_edit), in a critical section:
        two threads' read-modify-write of one pool take turns."""
        cdef ContextGuard guard
        self._check_ready()
        changes = peer_changes(self._dev_id, op, others)  # checked before the section
        enter_context(guard, self._fallback_context())
        with cython.critical_section(self):
            peer_edit(self._pool, self._dev_id, op, changes)

    def _apply_peer_access(self, list add, list remove):
        cdef ContextGuard guard
        self._check_ready()
        enter_context(guard, self._fallback_context())
        apply_peer_access(self._pool, add, remove)
