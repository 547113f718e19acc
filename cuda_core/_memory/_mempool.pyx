"""The stream-ordered memory pools behind DeviceMemoryResource, PinnedMemoryResource and
ManagedMemoryResource: allocation, free, pool attributes and peer access, written once.

A pool resource either wraps a pool the driver already has (a device's current pool: not
owned, ``close()`` does nothing) or creates its own (owned: destroyed by ``close()`` or when the
resource is collected). Buffers keep their resource alive, so an owned pool outlives every
buffer allocated from it that is still open; a pool destroyed with allocations outstanding is
released by the driver once the last of them is freed.
"""

from collections.abc import MutableSet

cimport cython
from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUcontext, CUdeviceptr, CUmemoryPool, CUresult, CUstream,
                                     CUDA_SUCCESS, cuuint64_t)

from cuda_core._checks cimport check_bool, check_int, check_size
from cuda_core._context cimport ContextGuard, enter_context, exit_context, primary_context
from cuda_core._driver cimport device_count
from cuda_core._errors cimport HANDLE_RETURN, check_call
from cuda_core._memory._alloc cimport (current_or_primary, raise_alloc_error, require_stream,
                                       stream_context)
from cuda_core._memory._buffer cimport MemoryResource, deallocate_checked, new_buffer
from cuda_core._resource cimport Resource
from cuda_core._stream cimport Stream

from cuda.bindings import driver as _driver_py

from cuda_core._device import Device

__all__ = ["MemoryPoolAttributes", "PeerAccessibleBySetProxy"]


cdef int raise_release_threshold(CUmemoryPool pool) except -1:
    """Let the pool keep the memory it has once reserved (threshold: unlimited), instead of
    giving it back to the OS at every synchronization, when nobody configured it (0, the
    driver default). A later allocation then reuses it instead of mapping new memory."""
    cdef cuuint64_t threshold = 0
    HANDLE_RETURN(cydriver.cuMemPoolGetAttribute(
        pool, cydriver.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold))
    if threshold == 0:
        threshold = <cuuint64_t>-1
        HANDLE_RETURN(cydriver.cuMemPoolSetAttribute(
            pool, cydriver.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold))
    return 0


@cython.auto_pickle(False)
cdef class _MemPool(MemoryResource):
    """Base of the pool-backed resources (not public). The resource owns its pool when it
    created it: ``_release`` (close, or the finalizer) destroys it then."""

    cdef int _release(self) except -1:
        if self._inited and self._owned:
            check_call(cydriver.cuMemPoolDestroy(self._pool), "cuMemPoolDestroy")
        return 0

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
        self._inited = True
        return 0

    cdef int _check_usable(self) except -1:
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
        self._check_usable()
        s._check_open()
        if size == 0:
            return 0
        ctx = stream_context(s)
        with nogil:
            enter_context(guard, ctx)
            err = self._driver_alloc(&ptr, size, s._handle)
            exit_context(guard)
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
        with nogil:
            enter_context(guard, ctx)
            err = cydriver.cuMemFreeAsync(ptr, handle)
            exit_context(guard)
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
        Calls ``cuMemFreeAsync``. Works after an owned pool was closed: the driver
        releases the pool once its last allocation is freed.
        """
        deallocate_checked(self, ptr, size, stream, f"{type(self).__name__}.deallocate()")

    @property
    def handle(self):
        """The pool, a ``cuda.bindings.driver.CUmemoryPool`` (``int(mr.handle)`` is its
        address)."""
        self._check_usable()
        return _driver_py.CUmemoryPool(<size_t>self._pool)

    @property
    def is_handle_owned(self):
        """True if this resource created the pool (and destroys it on close)."""
        return bool(self._owned)

    @property
    def is_ipc_enabled(self):
        """True if the pool can be shared with other processes."""
        return bool(self._ipc)

    @property
    def is_mapped(self):
        """True for a resource imported from another process. Always False until IPC import
        exists."""
        return False

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
        self._check_usable()
        cdef MemoryPoolAttributes attrs = MemoryPoolAttributes.__new__(MemoryPoolAttributes)
        attrs._mr = self
        return attrs

    @property
    def peer_accessible_by(self):
        """The other devices that can access this pool's memory: a live, mutable set of
        :class:`Device` (``add``/``discard``/assignment change the access rights).

        .. note:: Reads with ``cuMemPoolGetAccess``, changes with ``cuMemPoolSetAccess``.
        """
        self._check_usable()
        return PeerAccessibleBySetProxy._create(self)

    @peer_accessible_by.setter
    def peer_accessible_by(self, devices):
        self._check_usable()
        wanted = set(_peer_ordinals(self, devices))
        current = set(self._peer_ordinals_with_access())
        self._set_peer_access(sorted(wanted - current), True)
        self._set_peer_access(sorted(current - wanted), False)

    def close(self):
        """Destroy the pool if this resource created it; otherwise do nothing. Idempotent.

        Buffers still allocated from the pool stay valid until they are freed.

        .. note:: Calls ``cuMemPoolDestroy`` for an owned pool.
        """
        if self._inited and self._owned:  # a shared pool stays open
            Resource.close(self)

    def __repr__(self):
        where = "host" if self._dev_id < 0 else f"device {self._dev_id}"
        state = " closed" if self._closed else ""
        owned = "owned" if self._owned else "shared"
        return f"<{type(self).__name__} {where} ({owned} pool){state}>"

    # -- peer access (used by the proxy) --------------------------------------------------------

    def _peer_ordinals_with_access(self):
        cdef cydriver.CUmemLocation loc
        cdef cydriver.CUmemAccess_flags flags
        self._check_usable()
        out = []
        for i in range(device_count()):
            if i == self._dev_id:
                continue
            loc.type = cydriver.CU_MEM_LOCATION_TYPE_DEVICE
            loc.id = i
            flags = cydriver.CU_MEM_ACCESS_FLAGS_PROT_NONE
            HANDLE_RETURN(cydriver.cuMemPoolGetAccess(&flags, self._pool, &loc))
            if flags == cydriver.CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
                out.append(i)
        return out

    def _set_peer_access(self, ordinals, bint enable):
        cdef cydriver.CUmemAccessDesc desc[64]
        cdef size_t n = 0
        self._check_usable()
        ordinals = list(ordinals)
        while ordinals:
            chunk, ordinals = ordinals[:64], ordinals[64:]
            n = 0
            for i in chunk:
                desc[n].location.type = cydriver.CU_MEM_LOCATION_TYPE_DEVICE
                desc[n].location.id = i
                desc[n].flags = (cydriver.CU_MEM_ACCESS_FLAGS_PROT_READWRITE if enable
                                 else cydriver.CU_MEM_ACCESS_FLAGS_PROT_NONE)
                n += 1
            HANDLE_RETURN(cydriver.cuMemPoolSetAccess(self._pool, desc, n))


def _peer_ordinals(_MemPool mr, devices):
    """Validate devices for peer access: Device or int, each able to access the pool's device."""
    if isinstance(devices, (Device, int)):
        devices = (devices,)
    elif isinstance(devices, (str, bytes)) or not hasattr(type(devices), "__iter__"):
        raise TypeError(f"peer_accessible_by: expected a Device, an int or an iterable of them, "
                        f"not {type(devices).__name__}")
    out = []
    for d in devices:
        if isinstance(d, bool) or not isinstance(d, (Device, int)):
            raise TypeError(f"peer_accessible_by: expected Device or int items, not "
                            f"{type(d).__name__}")
        dev = Device(d)
        if dev.device_id == mr._dev_id:
            continue  # the pool's own device always has access
        if mr._dev_id >= 0 and not dev.can_access_peer(mr._dev_id):
            raise ValueError(f"peer_accessible_by: device {dev.device_id} cannot access the "
                             f"memory of device {mr._dev_id} (no peer access between them)")
        out.append(dev.device_id)
    return out


class _LiveSet(MutableSet):
    """A set the driver keeps (a pool's peers, a managed buffer's mappings), read and changed
    through the driver at each operation. Not constructible directly: ``_origin`` names the
    attribute that gives one."""

    __slots__ = ("_owner",)
    _origin = None

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__} cannot be instantiated directly; use "
                           f"{self._origin}")

    @classmethod
    def _create(cls, owner):
        proxy = object.__new__(cls)
        proxy._owner = owner
        return proxy

    def _items(self):
        """The members, as a list, from the driver."""
        raise NotImplementedError

    def __iter__(self):
        return iter(self._items())

    def __len__(self):
        return len(self._items())

    def __repr__(self):
        return f"{{{', '.join(repr(x) for x in self)}}}"


class PeerAccessibleBySetProxy(_LiveSet):
    """The devices other than its own that can access a pool's memory: a live, mutable set of
    :class:`Device`. Not constructible directly: use ``mr.peer_accessible_by``."""

    __slots__ = ()
    _origin = "DeviceMemoryResource.peer_accessible_by"

    def _items(self):
        return [Device(i) for i in self._owner._peer_ordinals_with_access()]

    def __contains__(self, device):
        if isinstance(device, bool) or not isinstance(device, (Device, int)):
            return False
        return Device(device).device_id in self._owner._peer_ordinals_with_access()

    def add(self, device):
        """Let ``device`` (a Device or ordinal) read and write the pool's memory."""
        self._owner._set_peer_access(_peer_ordinals(self._owner, (device,)), True)

    def discard(self, device):
        """Take away ``device``'s access to the pool's memory."""
        if isinstance(device, bool) or not isinstance(device, (Device, int)):
            raise TypeError(f"peer_accessible_by: expected a Device or int, not "
                            f"{type(device).__name__}")
        ordinal = Device(device).device_id
        if ordinal == self._owner.device_id:
            raise ValueError("peer_accessible_by: the pool's own device cannot lose access")
        self._owner._set_peer_access([ordinal], False)


def _counter_property(int which, str doc):
    """A read-only property of :class:`_MemoryCounters`: the counter ``which`` (a
    ``_COUNTER_*`` index), read at each access."""
    def getter(_MemoryCounters self):
        return self._counter(which)

    return property(getter, doc=doc)


def _high_mark_property(int which, str stem):
    """The property ``<stem>_high`` of :class:`_MemoryCounters`: the high mark ``which`` of
    the counter ``<stem>_current``, read at each access; setting it to 0 resets it."""
    cdef str name = f"{stem}_high"

    def getter(_MemoryCounters self):
        return self._counter(which)

    def setter(_MemoryCounters self, value):
        self._reset(which, value, name)

    return property(getter, setter, doc=f"The high mark of ``{stem}_current`` (int); set it "
                                        f"to 0 to reset it.")


@cython.auto_pickle(False)
cdef class _MemoryCounters:
    """The usage counters that a memory pool and a device's graph memory both keep, read from
    the driver at each access; the high marks can only be reset, to 0. A subclass reads and
    resets one counter (a ``_COUNTER_*`` index) in ``_counter``/``_reset_counter``."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__} cannot be instantiated directly; use "
                           f"{self._origin()}")

    cdef str _origin(self):
        return "a memory resource's attributes"

    cdef object _counter(self, int which):
        raise NotImplementedError

    cdef int _reset_counter(self, int which) except -1:
        raise NotImplementedError

    cdef int _reset(self, int which, object value, str name) except -1:
        if check_int(value, name) != 0:
            raise ValueError(f"{name} can only be reset, to 0; got {value}")
        return self._reset_counter(which)

    reserved_mem_current = _counter_property(_COUNTER_RESERVED_CURRENT,
                                             "Bytes of memory reserved now (int).")
    reserved_mem_high = _high_mark_property(_COUNTER_RESERVED_HIGH, "reserved_mem")
    used_mem_current = _counter_property(_COUNTER_USED_CURRENT, "Bytes in use now (int): "
                                         "allocated to buffers from the pool, or to graphs.")
    used_mem_high = _high_mark_property(_COUNTER_USED_HIGH, "used_mem")


# The pool attributes of the counters, in _COUNTER_* order.
cdef cydriver.CUmemPool_attribute[4] _POOL_COUNTERS = [
    cydriver.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, cydriver.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
    cydriver.CU_MEMPOOL_ATTR_USED_MEM_CURRENT, cydriver.CU_MEMPOOL_ATTR_USED_MEM_HIGH]


def _bool_attribute(cydriver.CUmemPool_attribute attr, str name, str doc):
    """A read-write bool property of :class:`MemoryPoolAttributes`: the pool attribute
    ``attr``, read and written at each access; ``name`` is the property's, for messages."""
    def getter(MemoryPoolAttributes self):
        return self._get_bool(attr)

    def setter(MemoryPoolAttributes self, value):
        self._set_bool(attr, value, name)

    return property(getter, setter, doc=doc)


@cython.auto_pickle(False)
cdef class MemoryPoolAttributes(_MemoryCounters):
    """A pool's attributes, read from and written to the driver at each access. Not
    constructible: use ``mr.attributes``.

    .. note:: Reads with ``cuMemPoolGetAttribute``, writes with ``cuMemPoolSetAttribute``.
    """

    cdef _MemPool _mr

    cdef str _origin(self):
        return "DeviceMemoryResource.attributes"

    cdef object _get_bool(self, cydriver.CUmemPool_attribute attr):
        cdef int value = 0
        self._mr._check_usable()
        HANDLE_RETURN(cydriver.cuMemPoolGetAttribute(self._mr._pool, attr, &value))
        return bool(value)

    cdef int _set_bool(self, cydriver.CUmemPool_attribute attr, object value,
                       str name) except -1:
        cdef int v = 1 if check_bool(value, name) else 0
        self._mr._check_usable()
        return HANDLE_RETURN(cydriver.cuMemPoolSetAttribute(self._mr._pool, attr, &v))

    cdef object _get_u64(self, cydriver.CUmemPool_attribute attr):
        cdef cuuint64_t value = 0
        self._mr._check_usable()
        HANDLE_RETURN(cydriver.cuMemPoolGetAttribute(self._mr._pool, attr, &value))
        return value

    cdef int _set_u64(self, cydriver.CUmemPool_attribute attr, cuuint64_t value) except -1:
        self._mr._check_usable()
        return HANDLE_RETURN(cydriver.cuMemPoolSetAttribute(self._mr._pool, attr, &value))

    cdef object _counter(self, int which):
        return self._get_u64(_POOL_COUNTERS[which])

    cdef int _reset_counter(self, int which) except -1:
        return self._set_u64(_POOL_COUNTERS[which], 0)

    reuse_follow_event_dependencies = _bool_attribute(
        cydriver.CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, "reuse_follow_event_dependencies",
        "Reuse memory freed on another stream once an event dependency orders it (bool).")
    reuse_allow_opportunistic = _bool_attribute(
        cydriver.CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, "reuse_allow_opportunistic",
        "Reuse memory whose free has already completed on another stream (bool).")
    reuse_allow_internal_dependencies = _bool_attribute(
        cydriver.CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
        "reuse_allow_internal_dependencies",
        "Let the driver insert dependencies to reuse memory freed on another stream (bool).")

    @property
    def release_threshold(self):
        """Bytes of reserved memory the pool keeps at a synchronization instead of giving them
        back to the OS (int)."""
        return self._get_u64(cydriver.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)

    @release_threshold.setter
    def release_threshold(self, value):
        self._set_u64(cydriver.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                      check_size(value, "release_threshold"))

    def __repr__(self):
        try:
            return (f"<MemoryPoolAttributes used={self.used_mem_current} "
                    f"reserved={self.reserved_mem_current} "
                    f"release_threshold={self.release_threshold}>")
        except Exception:
            return "<MemoryPoolAttributes>"
