"""The objects that carry memory between processes: an allocation handle (a pool's file
descriptor) and a buffer descriptor (what names one allocation); and the registry of the
resources mapped from other processes.

Neither can be constructed directly: :attr:`MemoryResource.allocation_handle` and
:attr:`Buffer.ipc_descriptor` make them, and unpickling rebuilds them. A descriptor read from a
pickle is checked for shape before any driver call sees it; what it names is only checked by
the import (see :meth:`Buffer.from_ipc_descriptor`).
"""

import threading
import weakref

from libc.errno cimport errno
from libc.stdint cimport SIZE_MAX
from posix.unistd cimport close as c_close

from cuda.bindings.cydriver cimport CUmemFabricHandle, CUmemPoolPtrExportData

from cuda_core._resource cimport Resource

from cuda_core import _mp

__all__ = []

# The exported bytes of one pool allocation, and of one fabric handle.
cdef Py_ssize_t _POOL_PAYLOAD = sizeof(CUmemPoolPtrExportData)
cdef Py_ssize_t _FABRIC_PAYLOAD = sizeof(CUmemFabricHandle)


cdef int check_fd(object fd, str what) except -1:
    if type(fd) is not int:
        if isinstance(fd, bool) or not isinstance(fd, int):
            raise TypeError(f"{what} must be a file descriptor (an int), not {type(fd).__name__}")
        fd = int(fd)
    if fd < 0 or fd > 2147483647:
        raise ValueError(f"{what} must be a file descriptor (an int >= 0), not {fd}")
    return fd


cdef int _close_fd(int fd) except -1:
    if c_close(fd) != 0:
        raise OSError(errno, f"close({fd}) failed")
    return 0


cdef class IPCAllocationHandle(Resource):
    """The file descriptor that shares an IPC-enabled memory pool with another process.

    Made by :attr:`DeviceMemoryResource.allocation_handle` (and the pinned resource's); another
    process maps the pool with ``DeviceMemoryResource.from_allocation_handle(device, handle)``.
    The object owns the descriptor and closes it once (:meth:`close`, or when it is finalized).
    Plain :mod:`pickle` cannot carry a file descriptor: send the handle through
    :mod:`multiprocessing` (a Queue, a Pipe, a ``Process`` argument), which gives the receiver
    its own descriptor.
    """

    def __cinit__(self, *args, **kwargs):
        # No descriptor until new_handle gives one: a zeroed field would be fd 0, which the
        # finalizer of a refused construction (or of a bare __new__) would close.
        self._fd = -1

    def __init__(self, *args, **kwargs):
        raise RuntimeError("IPCAllocationHandle objects cannot be created directly; use "
                           "DeviceMemoryResource.allocation_handle")

    @classmethod
    def _init(cls, handle, uuid=None):
        """A handle owning the open file descriptor ``handle`` (private)."""
        if uuid is not None:
            import uuid as uuid_module
            if not isinstance(uuid, uuid_module.UUID):
                raise TypeError(f"uuid must be a uuid.UUID or None, not {type(uuid).__name__}")
        return new_handle(check_fd(handle, "handle"), uuid)

    def __int__(self):
        if self._closed:  # a ValueError, as cuda.core 1.2.2 raises
            raise ValueError("this IPCAllocationHandle is closed: it has no file descriptor")
        return self._fd

    @property
    def handle(self):
        """The file descriptor (an int); ValueError once the handle is closed."""
        if self._closed:
            raise ValueError("this IPCAllocationHandle is closed: it has no file descriptor")
        return self._fd

    @property
    def uuid(self):
        """The ``uuid.UUID`` of the resource that exported the pool, or None."""
        return self._uuid

    cdef int _release(self) except -1:
        cdef int fd = self._fd
        self._fd = -1
        if fd >= 0:
            _close_fd(fd)
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._fd if self._fd >= 0 else 0

    def __reduce__(self):
        _mp.ensure_reducers()
        raise TypeError("an IPCAllocationHandle holds a file descriptor, which only "
                        "multiprocessing can send (a Queue, a Pipe, a Process argument, or "
                        "multiprocessing.reduction.send_handle)")

    def __repr__(self):
        if self._closed:
            return "<IPCAllocationHandle closed>"
        return f"<IPCAllocationHandle fd={self._fd} uuid={self._uuid}>"


cdef IPCAllocationHandle new_handle(int fd, object uuid):
    cdef IPCAllocationHandle h = IPCAllocationHandle.__new__(IPCAllocationHandle)
    h._fd = fd
    h._uuid = uuid
    _mp.ensure_reducers()
    return h


def _reduce_handle(IPCAllocationHandle h):
    h._check_open()
    return _rebuild_handle, (_mp.dup_fd(h._fd), h._uuid)


def _rebuild_handle(token, uuid):
    return new_handle(_mp.detach_fd(token), uuid)


cdef class _FdSet(Resource):
    """File descriptors owned together and closed together (private)."""

    def __cinit__(self, *args, **kwargs):
        self._fds = ()  # none owned until new_fd_set gives them

    def __init__(self, *args, **kwargs):
        raise RuntimeError("_FdSet objects cannot be created directly")

    cdef int _release(self) except -1:
        cdef tuple fds = self._fds
        self._fds = ()
        failed = None
        for fd in fds:
            try:
                _close_fd(fd)
            except OSError as exc:  # close the others: report the first failure after
                failed = failed or exc
        if failed is not None:
            raise failed
        return 0

    @property
    def fds(self):
        """The open file descriptors (a tuple of ints)."""
        self._check_open()
        return self._fds


cdef _FdSet new_fd_set(tuple fds):
    cdef _FdSet s = _FdSet.__new__(_FdSet)
    s._fds = fds
    return s


cdef class IPCBufferDescriptor:
    """What another process imports one buffer with (:meth:`Buffer.from_ipc_descriptor`).

    Made by :attr:`Buffer.ipc_descriptor`. A descriptor of a pool buffer is an opaque token of
    64 bytes and the buffer's :attr:`size`; it pickles with plain :mod:`pickle`. A descriptor of
    a :class:`VirtualMemoryResource` buffer with ``handle_type="posix_fd"`` owns one file
    descriptor per chunk of the allocation and travels only through :mod:`multiprocessing`.

    .. warning::
        Importing a descriptor trusts the process that wrote it: see
        :meth:`Buffer.from_ipc_descriptor`. Never unpickle one read from a file, a socket or a
        user.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("IPCBufferDescriptor objects cannot be created directly; use "
                           "Buffer.ipc_descriptor")

    @classmethod
    def _init(cls, payload, size):
        """A pool descriptor from its exported bytes and size, checked (private)."""
        return _pool_descriptor(payload, size)

    @property
    def size(self):
        """The size of the buffer in bytes."""
        return self._size

    def __reduce__(self):
        _mp.ensure_reducers()
        if self._kind == KIND_POOL:
            return _pool_descriptor, (self._payload, self._size)
        if self._kind == KIND_VMM_FABRIC:
            return _fabric_descriptor, (self._size, self._chunks, self._fabric)
        raise TypeError("this IPCBufferDescriptor holds file descriptors (a VirtualMemoryResource "
                        "with handle_type='posix_fd'), which only multiprocessing can send")

    def __repr__(self):
        kind = ("pool", "posix_fd", "fabric")[self._kind]
        return f"<IPCBufferDescriptor {kind} size={self._size}>"


cdef size_t _check_size(object size) except 0:
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError(f"size must be an int, not {type(size).__name__}")
    if size < 1 or size > SIZE_MAX:
        raise ValueError(f"size must be between 1 and {SIZE_MAX} bytes, not {size}")
    return size


cdef IPCBufferDescriptor _new_descriptor(int kind, size_t size):
    cdef IPCBufferDescriptor d = IPCBufferDescriptor.__new__(IPCBufferDescriptor)
    d._kind = kind
    d._size = size
    d._payload = b""
    d._chunks = ()
    d._fabric = ()
    _mp.ensure_reducers()
    return d


cdef IPCBufferDescriptor new_pool_descriptor(bytes payload, size_t size):
    if payload is None or len(payload) != _POOL_PAYLOAD:
        raise ValueError(f"a pool buffer descriptor's payload is {_POOL_PAYLOAD} bytes, not "
                         f"{0 if payload is None else len(payload)}")
    _check_size(size)
    cdef IPCBufferDescriptor d = _new_descriptor(KIND_POOL, size)
    d._payload = payload
    return d


cdef IPCBufferDescriptor new_vmm_descriptor(int kind, size_t size, tuple chunks, _FdSet fds,
                                            tuple fabric):
    if kind == KIND_VMM_FD:
        if fds is None or fabric:
            raise ValueError("a posix_fd descriptor carries file descriptors, not fabric handles")
        count = len(fds._fds)
    elif kind == KIND_VMM_FABRIC:
        if fds is not None:
            raise ValueError("a fabric descriptor carries fabric handles, not file descriptors")
        for h in fabric:
            if type(h) is not bytes or len(h) != _FABRIC_PAYLOAD:
                raise ValueError(f"a fabric handle is {_FABRIC_PAYLOAD} bytes")
        count = len(fabric)
    else:
        raise ValueError(f"not a virtual-memory descriptor kind: {kind}")
    if not chunks or len(chunks) != count:
        raise ValueError(f"a descriptor of {len(chunks)} chunks needs as many handles, not {count}")
    total = 0
    for c in chunks:
        total += _check_size(c)
    if total < _check_size(size):
        raise ValueError(f"the chunks hold {total} bytes, less than the size, {size}")
    cdef IPCBufferDescriptor d = _new_descriptor(kind, size)
    d._chunks = chunks
    d._fds = fds
    d._fabric = fabric
    return d


def _pool_descriptor(payload, size):
    """Unpickle a pool descriptor: the payload's type and length and the size are checked."""
    if type(payload) is not bytes:
        raise TypeError(f"payload must be bytes, not {type(payload).__name__}")
    return new_pool_descriptor(payload, _check_size(size))


def _fabric_descriptor(size, chunks, fabric):
    if type(chunks) is not tuple or type(fabric) is not tuple:
        raise TypeError("chunks and fabric must be tuples")
    return new_vmm_descriptor(KIND_VMM_FABRIC, _check_size(size), chunks, None, fabric)


def _reduce_descriptor(IPCBufferDescriptor d):
    if d._kind != KIND_VMM_FD:
        return d.__reduce__()
    return _fd_descriptor, (d._size, d._chunks, tuple(_mp.dup_fd(fd) for fd in d._fds.fds))


def _fd_descriptor(size, chunks, tokens):
    fds = []
    try:
        for token in tokens:
            fds.append(_mp.detach_fd(token))
        owned = new_fd_set(tuple(fds))
    except BaseException:
        for fd in fds:
            c_close(fd)
        raise
    if type(chunks) is not tuple:
        owned.close()
        raise TypeError("chunks must be a tuple")
    return new_vmm_descriptor(KIND_VMM_FD, _check_size(size), chunks, owned, ())


_mp.add_reducer(IPCAllocationHandle, _reduce_handle)
_mp.add_reducer(IPCBufferDescriptor, _reduce_descriptor)


def device_uuid(int device_id):
    """The UUID string of device ``device_id``: how a pickle names a device, so that processes
    with different ``CUDA_VISIBLE_DEVICES`` agree on it."""
    from cuda_core._device import Device
    return Device(device_id).uuid


def device_from_uuid(str uuid):
    """The ordinal, in this process, of the device whose UUID string is ``uuid``.

    Raises
    ------
    ValueError
        No visible device has that UUID.
    """
    from cuda_core._device import Device
    for dev in Device.get_all_devices():
        if dev.uuid == uuid:
            return dev.device_id
    raise ValueError(f"device {uuid} of the sending process is not visible in this process "
                     "(CUDA_VISIBLE_DEVICES?)")


# -- the registry of mapped resources ----------------------------------------------------------
#
# uuid.UUID -> weakref.ref of the mapped resource registered under it. Re-entrant: a resource
# finalized by a collection that a registry operation triggers unregisters itself on the same
# thread. Dead references are dropped when met (no weakref callbacks: one would run at an
# arbitrary point of another thread's work).

_registry_lock = threading.RLock()
_registry = {}


cdef object registry_get(object key):
    with _registry_lock:
        ref = _registry.get(key)
        if ref is None:
            return None
        obj = ref()
        if obj is None and _registry.get(key) is ref:
            del _registry[key]
        return obj


cdef object registry_put(object key, object obj):
    ref = weakref.ref(obj)  # made outside the lock: it may collect garbage
    with _registry_lock:
        known = _registry.get(key)
        if known is not None:
            current = known()
            if current is not None:
                return current
        _registry[key] = ref
        return obj


cdef int registry_drop(object key, object obj) except -1:
    with _registry_lock:
        ref = _registry.get(key)
        if ref is not None:
            current = ref()
            if current is None or current is obj:
                del _registry[key]
    return 0


def _registry_get(key):
    """Test hook: :func:`registry_get`."""
    return registry_get(key)


def _registry_put(key, obj):
    """Test hook: :func:`registry_put`."""
    return registry_put(key, obj)


def _registry_drop(key, obj):
    """Test hook: :func:`registry_drop`."""
    registry_drop(key, obj)


def _registry_size():
    """Test hook: the number of registry entries, dead ones included."""
    with _registry_lock:
        return len(_registry)
