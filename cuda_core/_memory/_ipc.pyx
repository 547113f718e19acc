"""Sharing memory-pool buffers between processes: Buffer's IPC members, the mapped resources,
and what pickles of resources and buffers are rebuilt with.

The exporting process shares an IPC-enabled pool through its allocation handle (a file
descriptor) and each buffer through a descriptor (``cuMemPoolExportPointer``'s 64 bytes and
the size). The importing process maps the pool once as a *mapped* resource
(:func:`map_pool`, behind ``from_allocation_handle``) and imports buffers through it
(``Buffer.from_ipc_descriptor``), each import going through the pool's import table
(``_ipc_table``). Buffers of a :class:`VirtualMemoryResource` are shared the same way by
``_vmm_ipc``, which registers its export and import here (:func:`register_vmm`).

Pickles: a resource pickles, for plain :mod:`pickle`, as its uuid (rebuilt from the registry of
mapped resources), and for :mod:`multiprocessing` as its allocation handle and device (rebuilt
by mapping the pool, or finding it already mapped). A buffer pickles as its resource and its
descriptor. Unpickling never changes the calling thread's current context. Devices travel by
UUID, so that processes with different ``CUDA_VISIBLE_DEVICES`` agree on them.
"""

import os

cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUcontext, CUdeviceptr, CUmemPoolPtrExportData, CUresult,
                                     CUDA_SUCCESS)

from cuda_core._context cimport (ContextGuard, context_from_handle, enter_context, exit_context,
                                 primary_context)
from cuda_core._errors cimport make_driver_error
from cuda_core._memory._alloc cimport current_or_primary, stream_context
from cuda_core._memory._buffer cimport Buffer, init_buffer, new_buffer, register_ipc
from cuda_core._memory._memory_resource cimport MemoryResource
from cuda_core._memory._ipc_base cimport (KIND_POOL, IPCAllocationHandle, IPCBufferDescriptor,
                                          check_fd, new_handle, new_pool_descriptor,
                                          registry_get)
from cuda_core._memory._ipc_table cimport (ImportedPool, pointer_import, pointer_release,
                                           pool_detach, pool_forget, pool_handle, pool_import)
from cuda_core._memory._mempool cimport _MemPool
from cuda_core._stream cimport Stream, default_stream_for, require_stream

from cuda_core import _mp
from cuda_core._device import Device
from cuda_core._memory._device_mr import DeviceMemoryResource
from cuda_core._memory._ipc_base import device_from_uuid, device_uuid
from cuda_core._memory._pinned_mr import PinnedMemoryResource
from cuda_core._memory._vmm_mr import VirtualMemoryResource

__all__ = []


# Pickling (and copying) what cannot be shared, in the classes cuda.core's callers catch.
class _ResourceNotShareable(RuntimeError, TypeError):
    """A resource that is not IPC-enabled: cuda.core raises a RuntimeError, and TypeError is
    what pickle and copy raise for the unpicklable."""


class _BufferNotShareable(RuntimeError, AttributeError):
    """A buffer whose resource is not IPC-enabled: cuda.core raises a RuntimeError, or an
    AttributeError for a resource that has no IPC at all (LegacyPinnedMemoryResource)."""


# -- the virtual-memory half (registered by _vmm_ipc) ----------------------------------------

cdef vmm_export_fn _vmm_export = NULL
cdef vmm_import_fn _vmm_import = NULL


cdef int register_vmm(vmm_export_fn export, vmm_import_fn import_) except -1:
    """Install the virtual-memory export and import, once (as ``_buffer.register_ipc``): a
    second registration, or a missing implementation, is refused (RuntimeError); a hook used
    before it raises one too (_vmm_registered)."""
    global _vmm_export, _vmm_import
    if export == NULL or import_ == NULL:
        raise RuntimeError("register_vmm(): export and import_ are both required")
    if _vmm_export != NULL:
        raise RuntimeError("register_vmm(): the virtual-memory IPC hooks are already registered")
    _vmm_import = import_
    _vmm_export = export
    return 0


cdef int _vmm_registered() except -1:
    if _vmm_export == NULL:
        raise RuntimeError("VMM IPC is not loaded (cuda_core._memory._vmm_ipc)")
    return 0


cdef bint _is_vmm_ipc(object mr) except -1:
    return isinstance(mr, VirtualMemoryResource) and getattr(mr, "is_ipc_enabled", False) is True


# -- errors ------------------------------------------------------------------------------------

cdef object _refused(CUresult err, str what, str hint):
    """The driver's refusal of an IPC object: a CUDAError keeping the code, whose message names
    the call and argument (``what``) and the likely cause."""
    exc = make_driver_error(err)
    return type(exc)(f"{what}: {exc.args[0]} ({hint})", exc.code, exc.name, exc.explanation)


cdef str _not_ipc_buffer(object mr):
    name = "none (a view or owner-kept buffer)" if mr is None else type(mr).__name__
    return (f"Buffer.ipc_descriptor: the buffer's memory resource is not IPC-enabled ({name}); "
            f"allocate it from DeviceMemoryResource or PinnedMemoryResource created with "
            f"ipc_enabled=True, or a VirtualMemoryResource with a handle_type")


# -- Buffer's IPC members ----------------------------------------------------------------------

cdef object _export(Buffer buf):
    """``buf.ipc_descriptor`` (``buf`` is open): made once and kept on the buffer."""
    cdef MemoryResource mr = buf._mr
    if buf._mapped and buf._ipc_desc is not None:
        return buf._ipc_desc  # imported: passed on as it came
    if isinstance(mr, _MemPool):
        if not (<_MemPool>mr)._ipc:
            raise RuntimeError(_not_ipc_buffer(mr))
    elif isinstance(mr, VirtualMemoryResource):
        if not _is_vmm_ipc(mr):
            raise RuntimeError(_not_ipc_buffer(mr))
    elif mr is not None and getattr(mr, "is_ipc_enabled", False) is True:
        raise TypeError(f"Buffer.ipc_descriptor: the buffer was not allocated by an IPC-enabled "
                        f"pool or VirtualMemoryResource ({type(mr).__name__} says it is "
                        f"IPC-enabled, but cuda_core cannot export its memory)")
    else:
        raise RuntimeError(_not_ipc_buffer(mr))
    if buf._size == 0:
        raise ValueError("Buffer.ipc_descriptor: the buffer is empty (size 0): there is nothing "
                         "to share")
    if not isinstance(mr, _MemPool):  # a VirtualMemoryResource's
        _vmm_registered()
        return _vmm_export(buf)
    with cython.critical_section(buf):
        desc = buf._ipc_desc
        if desc is None:
            desc = _export_pool_pointer(buf, <_MemPool>mr)
            # The section may have been suspended while the context was looked up: keep the
            # first descriptor stored.
            if buf._ipc_desc is None:
                buf._ipc_desc = desc
            else:
                desc = buf._ipc_desc
    return desc


cdef IPCBufferDescriptor _export_pool_pointer(Buffer buf, _MemPool mr):
    cdef CUmemPoolPtrExportData data
    cdef CUresult err
    cdef ContextGuard guard
    cdef CUcontext ctx = mr._fallback_context()
    if not mr._mapped and not mr._closed and (mr._handle is None or mr._handle._closed):
        mr.allocation_handle  # the pool is exported before its pointers (see _MemPool._setup)
    # With the GIL held: we are in the buffer's critical section.
    enter_context(guard, ctx)
    err = cydriver.cuMemPoolExportPointer(&data, buf._ptr)
    exit_context(guard)
    if err != CUDA_SUCCESS:
        raise make_driver_error(err, "Buffer.ipc_descriptor: cuMemPoolExportPointer")
    payload = PyBytes_FromStringAndSize(<char*>data.reserved, sizeof(CUmemPoolPtrExportData))
    return new_pool_descriptor(payload, buf._size)


cdef object _import(object cls, object mr, object desc, object stream):
    """``cls.from_ipc_descriptor(mr, desc, stream=stream)``."""
    cdef IPCBufferDescriptor d
    cdef _MemPool pool
    cdef Stream s
    what = "Buffer.from_ipc_descriptor()"
    if not isinstance(desc, IPCBufferDescriptor):
        raise TypeError(f"{what}: ipc_descriptor must be an IPCBufferDescriptor, not "
                        f"{type(desc).__name__}")
    d = <IPCBufferDescriptor>desc
    if d._kind != KIND_POOL:
        if not isinstance(mr, VirtualMemoryResource):
            raise TypeError(f"{what}: ipc_descriptor is of a VirtualMemoryResource buffer, and "
                            f"mr is a {type(mr).__name__}: import it through a "
                            f"VirtualMemoryResource")
        if not _is_vmm_ipc(mr):
            raise RuntimeError(f"{what}: mr is not IPC-enabled (a VirtualMemoryResource "
                               f"without a handle_type)")
        _vmm_registered()
        return _vmm_import(cls, mr, d, stream)
    if not isinstance(mr, _MemPool):
        if isinstance(mr, VirtualMemoryResource):
            raise TypeError(f"{what}: ipc_descriptor is of a memory-pool buffer, and mr is a "
                            f"VirtualMemoryResource: import it through the mapped "
                            f"DeviceMemoryResource or PinnedMemoryResource")
        raise TypeError(f"{what}: mr must be a DeviceMemoryResource or PinnedMemoryResource "
                        f"mapped from the exporting process, not {type(mr).__name__}")
    pool = <_MemPool>mr
    if not pool._ipc:
        raise RuntimeError(f"{what}: mr is not IPC-enabled; import through the exporter's "
                           f"resource mapped into this process (from_allocation_handle)")
    pool._check_ready()
    if not pool._mapped:
        raise ValueError(f"{what}: mr: import into the mapped resource (from_allocation_handle "
                         f"/ unpickled), not the exporting one")
    s = require_stream(stream, what)
    s._check_open()
    return _import_pool_buffer(cls, pool, d, s)


cdef object _import_pool_buffer(object cls, _MemPool mr, IPCBufferDescriptor d, Stream s):
    cdef CUdeviceptr ptr = 0
    cdef size_t end = 0
    cdef int ordinal = -1
    cdef bint found = False
    cdef CUresult err
    cdef ContextGuard guard
    cdef Buffer buf
    cdef const unsigned char* key = <const unsigned char*><const char*>d._payload
    cdef CUcontext ctx = stream_context(s)
    if ctx == NULL:
        ctx = current_or_primary(mr._dev_id)
    with nogil:
        enter_context(guard, ctx)
        err = pointer_import(mr._state, key, &ptr, &end, &ordinal)
        exit_context(guard)
    if err != CUDA_SUCCESS:
        raise _refused(err, "Buffer.from_ipc_descriptor(): ipc_descriptor",
                       "freed in the exporting process, from another pool, or not a descriptor")
    try:
        if end < ptr or d._size > end - ptr:
            raise ValueError(f"Buffer.from_ipc_descriptor(): ipc_descriptor states {d._size} "
                             f"bytes but the exported allocation has {end - ptr if end > ptr else 0}")
        if mr._dev_id >= 0 and ordinal != mr._dev_id:
            raise ValueError(f"Buffer.from_ipc_descriptor(): ipc_descriptor names memory of "
                             f"device {ordinal}, and mr is device {mr._dev_id}'s")
        if cls is Buffer:
            buf = new_buffer(ptr, d._size, mr, s)
        else:
            buf = cls.__new__(cls)
            init_buffer(buf, ptr, d._size, mr, s)
    except BaseException:
        with nogil:  # give back the reference this import took
            enter_context(guard, ctx)
            pointer_release(mr._state, ptr, s._handle, &found)
            exit_context(guard)
        raise
    buf._mapped = True
    buf._ipc_desc = d
    return buf


cdef object _reduce(Buffer buf):
    """``buf.__reduce__()``: its resource and its descriptor, for either pickler (each reduces
    the resource its own way)."""
    buf._check_open()
    mr = buf._mr
    if (isinstance(mr, _MemPool) and (<_MemPool>mr)._ipc) or _is_vmm_ipc(mr):
        _mp.ensure_reducers()
        return _rebuild_buffer, (mr, _export(buf))
    # The buffer's resource is not IPC-enabled (see _BufferNotShareable).
    raise _BufferNotShareable(
        "Buffer.__reduce__: only buffers of an IPC-enabled memory resource can be pickled "
        "(DeviceMemoryResourceOptions(ipc_enabled=True), "
        "PinnedMemoryResourceOptions(ipc_enabled=True), or a VirtualMemoryResource with a "
        "handle_type)")


def _rebuild_buffer(mr, desc):
    """Unpickle a buffer: import ``desc`` through ``mr`` (already unpickled), its free ordered
    on the default stream of the memory's device (a host pool's: the current context's, else
    device 0's). The thread's current context is left as it was."""
    cdef Stream s
    if isinstance(mr, _MemPool) and (<_MemPool>mr)._dev_id < 0:
        s = default_stream_for(context_from_handle(current_or_primary(-1)))
    else:
        s = default_stream_for(primary_context(mr.device_id))
    return _import(Buffer, mr, desc, s)


register_ipc(_export, _import, _reduce)


# -- mapped resources --------------------------------------------------------------------------

def map_pool(cls, device_id, alloc_handle, str what):
    """``cls.from_allocation_handle(...)``: the pool ``alloc_handle`` shares, mapped into this
    process as a new ``cls`` (or the live resource registered under the handle's uuid).

    ``device_id`` is the device of a device pool (anything ``Device()`` takes), None for a host
    pool. ``alloc_handle`` is an open IPCAllocationHandle or a file descriptor; it is never
    taken over: the resource imports and keeps a duplicate. Returns ``(resource, new)``:
    ``new`` is False for the resource found in the registry.
    """
    cdef int fd
    cdef int dup = -1
    cdef int dev_id = -1
    cdef ImportedPool* state = NULL
    cdef CUresult err
    cdef CUcontext ctx = NULL
    cdef ContextGuard guard
    cdef _MemPool mr
    if isinstance(alloc_handle, IPCAllocationHandle):
        (<IPCAllocationHandle>alloc_handle)._check_open()
        fd = (<IPCAllocationHandle>alloc_handle)._fd
        uuid = (<IPCAllocationHandle>alloc_handle)._uuid
    else:
        fd = check_fd(alloc_handle, f"{what}: alloc_handle")
        uuid = None
    if device_id is not None:
        dev_id = Device(device_id).device_id
    if uuid is not None:
        known = registry_get(uuid)
        if known is not None:
            if type(known) is not cls or (<_MemPool>known)._dev_id != dev_id:
                raise ValueError(f"{what}: the pool {uuid} is mapped in this process already, "
                                 f"as {known!r}")
            return known, False
    _mp.ensure_reducers()
    try:
        dup = os.dup(fd)
    except OSError as exc:
        raise ValueError(f"{what}: alloc_handle: file descriptor {fd} cannot be used "
                         f"({exc.strerror})") from None
    try:
        if dev_id >= 0:
            ctx = primary_context(dev_id)._handle  # the process keeps it: not a dangling handle
        else:
            ctx = current_or_primary(-1)
        with nogil:
            enter_context(guard, ctx)
            err = pool_import(dup, &state)
            exit_context(guard)
        if err != CUDA_SUCCESS:
            raise _refused(err, f"{what}: alloc_handle",
                           "not a memory-pool handle of an IPC-enabled resource?")
        # The driver does not tell where an imported pool is (CU_MEMPOOL_ATTR_LOCATION_* are
        # refused on driver 580): the caller's device is trusted here, and each buffer's
        # import checks the device of its memory.
        mr = cls.__new__(cls)
        mr._setup(pool_handle(state), dev_id, True, False, f"{cls.__name__}.allocate()")
        mr._state = state  # the resource holds the attachment from now on (close, dealloc)
        state = NULL
        mr._ipc = True
        mr._mapped = True
        mr._uuid = uuid
        mr._handle = new_handle(dup, uuid)
        dup = -1
        mr._host_access = dev_id < 0
        mr._c_dealloc = type(mr) is DeviceMemoryResource or type(mr) is PinnedMemoryResource
    except BaseException:
        if state != NULL:
            with nogil:
                enter_context(guard, ctx)
                pool_detach(state)
                exit_context(guard)
                pool_forget(state)
        if dup >= 0:
            os.close(dup)
        raise
    return mr, True


# -- pickling resources ------------------------------------------------------------------------

cdef str _not_ipc_pickle(_MemPool mr):
    name = type(mr).__name__
    return (f"{name}.__reduce__: only an IPC-enabled resource can be pickled "
            f"({name}Options(ipc_enabled=True))")


def reduce_resource(mr):
    """A pool resource's ``__reduce__`` (plain :mod:`pickle`): its uuid, rebuilt from the
    registry of mapped resources where it is unpickled."""
    if not isinstance(mr, _MemPool) or not (<_MemPool>mr)._ipc:
        raise _ResourceNotShareable(_not_ipc_pickle(mr))
    _mp.ensure_reducers()
    if mr.uuid is None:
        raise TypeError(f"{type(mr).__name__}.__reduce__: this mapped resource has no uuid (it "
                        f"was mapped from a bare file descriptor): register(uuid) it first, or "
                        f"send it through multiprocessing")
    return _mr_from_registry, (type(mr), mr.uuid)


def _mr_from_registry(cls, uuid):
    """Unpickle a resource (plain pickle): the mapped one registered under ``uuid`` here."""
    return cls.from_registry(uuid)


def _reduce_mr_mp(mr):
    """A pool resource's multiprocessing reducer: its allocation handle (the file descriptor
    goes with it) and its device, by UUID."""
    if not isinstance(mr, _MemPool) or not (<_MemPool>mr)._ipc:
        raise _ResourceNotShareable(_not_ipc_pickle(mr))
    handle = mr.allocation_handle  # RuntimeError if closed
    dev_id = (<_MemPool>mr)._dev_id
    return _rebuild_mapped_mr, (type(mr), device_uuid(dev_id) if dev_id >= 0 else None, handle)


def _rebuild_mapped_mr(cls, dev_uuid, handle):
    """Unpickle a resource (multiprocessing): the mapped resource registered under the handle's
    uuid, else the pool mapped now and registered. The received handle is closed here (the
    resource keeps a duplicate)."""
    try:
        if dev_uuid is None:
            mr = cls.from_allocation_handle(handle)
        else:
            mr = cls.from_allocation_handle(device_from_uuid(dev_uuid), handle)
        if handle.uuid is not None:
            registered = mr.register(handle.uuid)  # mr itself when it came from the registry
            if registered is not mr:  # another thread registered the pool meanwhile
                mr.close()
                mr = registered
        return mr
    finally:
        handle.close()


_mp.add_reducer(DeviceMemoryResource, _reduce_mr_mp)
_mp.add_reducer(PinnedMemoryResource, _reduce_mr_mp)
