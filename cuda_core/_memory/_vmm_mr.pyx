"""VirtualMemoryResource: memory from the driver's virtual memory management API.

Each allocation reserves a range of virtual addresses (``cuMemAddressReserve``), creates
physical memory (``cuMemCreate``), maps it at the start of the range (``cuMemMap``) and grants
access (``cuMemSetAccess``). The reservation is twice the mapped size, so that
:meth:`VirtualMemoryResource.modify_allocation` can grow a buffer in place by mapping more
physical memory after it; when the reservation is too small, the physical memory is remapped
into a larger reservation (the address changes, the contents do not move).

The resource keeps, per allocation, an ``_Allocation``: its reservation and its physical
chunks (handles kept until the free, so that they can be remapped). The allocation is a
:class:`~cuda_core._resource.Resource` that owns them: the buffer's free closes it, and one
left unfreed is released when it is finalized. Everything here is synchronous.
"""

cimport cython
from cuda.bindings cimport cydriver
from cuda_core cimport _cuda_compat
from cuda.bindings.cydriver cimport (CUcontext, CUdeviceptr, CUmemAllocationProp,
                                     CUmemGenericAllocationHandle, CUresult, CUDA_SUCCESS)
from libc.string cimport memset

from cuda_core._checks cimport check_int, check_size
from cuda_core._context cimport ContextGuard, enter_context, primary_context
from cuda_core._errors cimport HANDLE_RETURN, make_driver_error
from cuda_core._memory._alloc cimport device_supports, raise_alloc_error, sync_context, sync_stream
from cuda_core._memory._buffer cimport Buffer, as_buffer, init_buffer
from cuda_core._memory._memory_resource cimport MemoryResource, deallocate_checked
from cuda_core._resource cimport Resource
from cuda_core._stream cimport Stream, optional_stream

import dataclasses

from cuda_core import _mp
from cuda_core._device import Device
from cuda_core._errors import CUDAError, InvalidValueError
from cuda_core._memory._mr_options import VirtualMemoryResourceOptions
from cuda_core._options import check_or_create_options

__all__ = ["VirtualMemoryBuffer", "VirtualMemoryResource", "VirtualMemoryResourceOptions"]


_HANDLE_TYPES = {
    None: cydriver.CU_MEM_HANDLE_TYPE_NONE,
    "posix_fd": cydriver.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
    "win32_kmt": cydriver.CU_MEM_HANDLE_TYPE_WIN32_KMT,
    "fabric": cydriver.CU_MEM_HANDLE_TYPE_FABRIC,
}
_ACCESS = {
    "rw": cydriver.CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    "r": cydriver.CU_MEM_ACCESS_FLAGS_PROT_READ,
}


cdef size_t _round_up(size_t n, size_t granularity) noexcept:
    return ((n + granularity - 1) // granularity) * granularity


class _Chunk:
    """One physical allocation mapped into a reservation."""

    __slots__ = ("handle", "offset", "size", "opts")

    def __init__(self, handle, offset, size, opts):
        self.handle = handle
        self.offset = offset
        self.size = size
        self.opts = opts


@cython.auto_pickle(False)
cdef class _Allocation(Resource):
    """One allocation: its reserved address range and the physical chunks mapped into it,
    which it owns. ``_release`` unmaps and releases the chunks and frees the range (fields:
    _vmm_mr.pxd)."""

    cdef int _release(self) except -1:
        cdef CUcontext ctx
        cdef CUresult err, first = CUDA_SUCCESS
        cdef ContextGuard guard
        failed = None
        if self.reserved == 0:  # never given a range (a bare __new__): nothing to give back
            return 0
        ctx = primary_context(self._dev_id)._handle
        if not self._waited:
            sync_context(ctx)
        enter_context(guard, ctx)
        for chunk in self.chunks:
            err = cydriver.cuMemUnmap(self.base + chunk.offset, chunk.size)
            if err != CUDA_SUCCESS and failed is None:
                first, failed = err, "cuMemUnmap"
            err = cydriver.cuMemRelease(chunk.handle)
            if err != CUDA_SUCCESS and failed is None:
                first, failed = err, "cuMemRelease"
        self.chunks = []
        err = cydriver.cuMemAddressFree(self.base, self.reserved)
        if err != CUDA_SUCCESS and failed is None:
            first, failed = err, "cuMemAddressFree"
        if failed is not None:
            raise make_driver_error(first, failed)
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self.base


cdef _Allocation _new_allocation(CUdeviceptr base, size_t reserved, size_t granularity,
                                 int dev_id):
    cdef _Allocation rec = _Allocation.__new__(_Allocation)
    rec.base = base
    rec.reserved = reserved
    rec.granularity = granularity
    rec.chunks = []
    rec._dev_id = dev_id
    return rec


cdef bint _capturing(Stream stream):
    """Whether ``stream`` is capturing (asking does not disturb a capture)."""
    cdef cydriver.CUstreamCaptureStatus status = cydriver.CU_STREAM_CAPTURE_STATUS_NONE
    return (cydriver.cuStreamIsCapturing(stream._handle, &status) == CUDA_SUCCESS
            and status == cydriver.CU_STREAM_CAPTURE_STATUS_ACTIVE)


cdef int _wait_for_users(Stream stream, int dev_id) except -1:
    """Wait for the work that may use an allocation: that of ``stream`` if it is open, else
    all of the device's."""
    if stream is not None and not stream._closed:
        return sync_stream(stream)
    return sync_context(primary_context(dev_id)._handle)


@cython.auto_pickle(False)
cdef class VirtualMemoryBuffer(Buffer):
    """The :class:`Buffer` that :meth:`VirtualMemoryResource.allocate` and
    :meth:`VirtualMemoryResource.modify_allocation` return (cuda.core 1.3). It behaves as any
    Buffer of the resource; not constructible directly."""


cdef VirtualMemoryBuffer _new_vmm_buffer(CUdeviceptr ptr, size_t size, MemoryResource mr,
                                         Stream stream):
    cdef VirtualMemoryBuffer buf = VirtualMemoryBuffer.__new__(VirtualMemoryBuffer)
    init_buffer(buf, ptr, size, mr, stream)
    return buf


@cython.auto_pickle(False)
cdef class VirtualMemoryResource(MemoryResource):
    """Memory from the virtual memory management API (``cuMemCreate``/``cuMemMap``):
    synchronous, with buffers that can grow in place.

    Parameters
    ----------
    device_id : int or Device
        The device whose memory (or, for host locations, whose access) is set up.
    config : VirtualMemoryResourceOptions or dict, optional
        Allocation type, location, export handle type, granularity, access rights and peers.

    Notes
    -----
    ``stream`` is optional on :meth:`allocate` and :meth:`deallocate`. A free first waits for
    the stream it is given, or for the whole device when it has none, because unmapping
    memory that queued work still uses would fault.

    A resource with a ``handle_type`` (``"posix_fd"``, the default, or ``"fabric"``) is
    IPC-enabled: its buffers can be shared with other processes through
    :attr:`Buffer.ipc_descriptor` or :mod:`multiprocessing`, and imported with
    :meth:`Buffer.from_ipc_descriptor` into a resource of the importing process, whose own
    ``self_access``, ``peers`` and ``peer_access`` decide who can access the mapping there.
    The resource itself pickles as a recipe (its device, by UUID, and its config): the
    receiver gets a new resource with the same configuration, without the allocations.
    """

    def __init__(self, device_id, config=None):
        # A copy of our own (checked again on the way): the caller may change theirs later.
        opts = dataclasses.replace(check_or_create_options(VirtualMemoryResourceOptions, config,
                                                           "VirtualMemoryResource config"))
        dev = Device(device_id)
        if not device_supports(dev, "virtual_memory_management_supported"):
            raise RuntimeError(f"device {dev.device_id} does not support virtual memory "
                               f"management (properties.virtual_memory_management_supported)")
        self._check_config(dev, opts)
        self._dev_id = dev.device_id
        self._config = opts
        self._allocations = {}
        self._c_dealloc = type(self) is VirtualMemoryResource
        if opts.handle_type is not None:
            # Its buffers' descriptors may be sent through multiprocessing.
            _mp.ensure_reducers()

    def _check_config(self, dev, opts):
        where = opts.location_type
        if where == "host" and not device_supports(dev,
                                                   "host_virtual_memory_management_supported"):
            raise RuntimeError(f"device {dev.device_id} cannot map host memory through the "
                               f"virtual memory API (location_type='host'; "
                               f"properties.host_virtual_memory_management_supported is False)")
        if where in ("host_numa", "host_numa_current") and not device_supports(
                dev, "host_numa_virtual_memory_management_supported"):
            raise RuntimeError(f"device {dev.device_id} cannot map host NUMA memory through "
                               f"the virtual memory API (location_type={str(where)!r})")
        handle = None if opts.handle_type is None else str(opts.handle_type)
        if handle == "win32_kmt":
            raise ValueError("handle_type='win32_kmt' is a Windows handle type; use "
                             "'posix_fd' (or 'fabric') on Linux")
        if handle == "posix_fd" and not device_supports(
                dev, "handle_type_posix_file_descriptor_supported"):
            raise RuntimeError(f"device {dev.device_id} cannot export memory as POSIX file "
                               f"descriptors (handle_type='posix_fd'; properties."
                               f"handle_type_posix_file_descriptor_supported is False)")
        if handle == "fabric" and not device_supports(dev, "handle_type_fabric_supported"):
            raise RuntimeError(f"device {dev.device_id} cannot export memory as fabric handles "
                               f"(handle_type='fabric'; properties.handle_type_fabric_supported "
                               f"is False)")
        if opts.gpu_direct_rdma and not device_supports(
                dev, "gpu_direct_rdma_with_cuda_vmm_supported"):
            raise RuntimeError(f"device {dev.device_id} does not support GPUDirect RDMA with "
                               f"virtual memory (gpu_direct_rdma=True)")
        count = len(Device.get_all_devices())
        for p in opts.peers:
            if p >= count:  # the driver's refusal when cuda.core sets the access: a CUDAError
                raise InvalidValueError(f"VirtualMemoryResourceOptions.peers: device {p} is out "
                                        f"of range ({count} devices)")

    # -- properties ---------------------------------------------------------------------------

    @property
    def device_id(self):
        """The device the resource serves."""
        return self._dev_id

    @property
    def config(self):
        """The :class:`VirtualMemoryResourceOptions` in use (a copy)."""
        return dataclasses.replace(self._config)

    @property
    def is_device_accessible(self):
        """True unless ``self_access`` is None."""
        return self._config.self_access is not None

    @property
    def is_host_accessible(self):
        """True for host locations."""
        return self._config.location_type != "device"

    @property
    def is_managed(self):
        """True for ``allocation_type="managed"``."""
        return self._config.allocation_type == "managed"

    @property
    def is_ipc_enabled(self):
        """True if the buffers can be shared with other processes: the config has a
        ``handle_type`` (``"posix_fd"`` or ``"fabric"``)."""
        return self._config.handle_type is not None

    def __repr__(self):
        handle = self._config.handle_type
        return (f"<VirtualMemoryResource device {self._dev_id} "
                f"location={str(self._config.location_type)!r} "
                f"handle_type={None if handle is None else str(handle)!r} "
                f"allocations={len(self._allocations)}>")

    def __reduce__(self):
        """A recipe: the device (by UUID, so that processes with different
        ``CUDA_VISIBLE_DEVICES`` agree) and the config, peers included (by UUID too). The
        receiver gets a new resource; the allocations are not sent (send buffers for that)."""
        from cuda_core._memory._ipc_base import device_uuid
        from cuda_core._memory._vmm_ipc import _rebuild_vmm_mr

        opts = self._config
        return _rebuild_vmm_mr, (type(self), device_uuid(self._dev_id),
                                 dataclasses.replace(opts, peers=()),
                                 tuple(device_uuid(p) for p in opts.peers))

    # -- helpers ------------------------------------------------------------------------------

    cdef int _fill_prop(self, CUmemAllocationProp* prop, object opts) except -1:
        memset(prop, 0, sizeof(CUmemAllocationProp))
        prop.type = (_cuda_compat.CU_MEM_ALLOCATION_TYPE_MANAGED if opts.allocation_type == "managed"
                     else cydriver.CU_MEM_ALLOCATION_TYPE_PINNED)
        prop.requestedHandleTypes = _HANDLE_TYPES[None if opts.handle_type is None
                                                  else str(opts.handle_type)]
        where = opts.location_type
        if where == "device":
            prop.location.type = cydriver.CU_MEM_LOCATION_TYPE_DEVICE
            prop.location.id = self._dev_id
        elif where == "host":
            prop.location.type = cydriver.CU_MEM_LOCATION_TYPE_HOST
            prop.location.id = 0
        elif where == "host_numa":
            prop.location.type = cydriver.CU_MEM_LOCATION_TYPE_HOST_NUMA
            prop.location.id = max(Device(self._dev_id).properties.host_numa_id, 0)
        else:
            prop.location.type = cydriver.CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT
            prop.location.id = 0
        if opts.gpu_direct_rdma:
            prop.allocFlags.gpuDirectRDMACapable = 1
        return 0

    cdef size_t _granularity(self, CUmemAllocationProp* prop, object opts) except 0:
        cdef size_t gran = 0
        HANDLE_RETURN(cydriver.cuMemGetAllocationGranularity(
            &gran, prop,
            cydriver.CU_MEM_ALLOC_GRANULARITY_MINIMUM if opts.granularity == "minimum"
            else cydriver.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return gran

    cdef int _grant_access(self, CUdeviceptr addr, size_t size, object opts,
                           int host) except -1:
        cdef cydriver.CUmemAccessDesc desc[66]
        cdef size_t n = 0
        if opts.self_access is not None:
            desc[n].location.type = cydriver.CU_MEM_LOCATION_TYPE_DEVICE
            desc[n].location.id = self._dev_id
            desc[n].flags = _ACCESS[str(opts.self_access)]
            n += 1
        if opts.peer_access is not None:
            for p in tuple(opts.peers)[:64]:  # at most 64: with self and host, n <= 66
                if p == self._dev_id:
                    continue
                desc[n].location.type = cydriver.CU_MEM_LOCATION_TYPE_DEVICE
                desc[n].location.id = p
                desc[n].flags = _ACCESS[str(opts.peer_access)]
                n += 1
        if host >= 0:
            # Host memory is mapped for the CPU through an access descriptor of its own kind.
            desc[n].location.type = <cydriver.CUmemLocationType>host
            desc[n].location.id = 0
            desc[n].flags = cydriver.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            n += 1
        if n == 0:
            return 0
        return HANDLE_RETURN(cydriver.cuMemSetAccess(addr, size, desc, n))

    cdef int _set_access(self, CUdeviceptr addr, size_t size, object opts) except -1:
        where = opts.location_type
        return self._grant_access(
            addr, size, opts,
            -1 if where == "device" else cydriver.CU_MEM_LOCATION_TYPE_HOST if where == "host"
            else cydriver.CU_MEM_LOCATION_TYPE_HOST_NUMA)

    cdef object _map_new(self, CUdeviceptr addr, size_t size, object opts):
        """Create ``size`` bytes of physical memory, map them at ``addr`` and grant access;
        the new handle, or an exception with nothing left behind."""
        cdef CUmemAllocationProp prop
        cdef CUmemGenericAllocationHandle handle = 0
        cdef CUresult err
        self._fill_prop(&prop, opts)
        err = cydriver.cuMemCreate(&handle, size, &prop, 0)
        if err != CUDA_SUCCESS:
            raise_alloc_error(err, size, "VirtualMemoryResource")
        err = cydriver.cuMemMap(addr, size, 0, handle, 0)
        if err != CUDA_SUCCESS:
            cydriver.cuMemRelease(handle)
            HANDLE_RETURN(err)
        try:
            self._set_access(addr, size, opts)
        except BaseException:
            cydriver.cuMemUnmap(addr, size)
            cydriver.cuMemRelease(handle)
            raise
        return handle

    cdef CUcontext _ctx(self) except? NULL:
        return primary_context(self._dev_id)._handle

    # -- allocate / deallocate ----------------------------------------------------------------

    def allocate(self, size, *, stream=None):
        """Reserve, create, map and grant access to ``size`` bytes (rounded up to the
        granularity; the buffer's size is ``size``).

        Parameters
        ----------
        size : int
        stream : Stream, optional
            Recorded as the buffer's deallocation stream; the allocation is synchronous.

        Returns
        -------
        Buffer

        Notes
        -----
        Calls ``cuMemAddressReserve``, ``cuMemCreate``, ``cuMemMap`` and
        ``cuMemSetAccess``.
        """
        cdef size_t n = check_size(size, "VirtualMemoryResource.allocate(): size")
        cdef Stream s = optional_stream(stream, "VirtualMemoryResource.allocate()")
        cdef CUmemAllocationProp prop
        cdef CUdeviceptr base = 0
        cdef size_t gran, padded, reserved
        cdef CUresult err
        cdef _Allocation rec
        cdef ContextGuard guard
        if s is not None:
            s._check_open()
        if n == 0:
            return _new_vmm_buffer(0, 0, self, s)
        opts = self._config
        enter_context(guard, self._ctx())
        self._fill_prop(&prop, opts)
        gran = self._granularity(&prop, opts)
        padded = _round_up(n, gran)
        reserved = 2 * padded
        # Mappings must start on a granule: never align the reservation to less.
        err = cydriver.cuMemAddressReserve(&base, reserved, max(opts.addr_align or 0, gran),
                                           opts.addr_hint, 0)
        if err != CUDA_SUCCESS:
            raise_alloc_error(err, n, "VirtualMemoryResource.allocate()")
        rec = _new_allocation(base, reserved, gran, self._dev_id)
        try:
            handle = self._map_new(base, padded, opts)
        except BaseException:
            rec._waited = True  # nothing ever used the range
            try:
                rec.close()
            except CUDAError:
                pass  # the mapping's failure is the one to report
            raise
        rec.chunks.append(_Chunk(handle, 0, padded, opts))
        rec.mapped = padded
        self._allocations[base] = rec
        return _new_vmm_buffer(base, n, self, s)

    cdef int _deallocate_c(self, CUdeviceptr ptr, size_t size, Stream stream) except -1:
        cdef _Allocation rec
        if ptr == 0:
            return 0
        if ptr not in self._allocations:
            raise ValueError(f"VirtualMemoryResource.deallocate(): 0x{ptr:x} was not "
                             f"allocated by this resource, or was freed already")
        if stream is not None and not stream._closed and _capturing(stream):
            # Waiting on it would invalidate the capture; as cuda.core 1.3, refuse first.
            raise RuntimeError("VirtualMemoryResource: the memory cannot be freed on a stream "
                               "that is capturing (unmapping virtual memory cannot be "
                               "captured, and waiting for the stream would invalidate the "
                               "capture); free it on another stream, or after the capture "
                               "ends")
        rec = self._allocations.pop(ptr)
        # Unmapping memory that queued work still uses would fault: wait first.
        _wait_for_users(stream, self._dev_id)
        rec._waited = True
        rec.close()
        return 0

    def deallocate(self, ptr, size, *, stream=None):
        """Unmap and release an allocation of this resource, after waiting for ``stream`` (or
        the whole device when it is None).

        .. note:: Calls ``cuMemUnmap``, ``cuMemRelease`` and ``cuMemAddressFree``.
        """
        deallocate_checked(self, ptr, size, stream, "VirtualMemoryResource.deallocate()")

    # -- growth -------------------------------------------------------------------------------

    def modify_allocation(self, buf, new_size, config=None):
        """Resize a buffer of this resource, keeping its contents.

        Growing maps more physical memory right after the buffer when its reservation has room
        (the address stays the same); otherwise the physical memory is remapped into a new,
        larger reservation (the address changes, the bytes are not copied). Growing within the
        memory already mapped changes only the size. A size no larger than the buffer's (a
        negative one too) returns ``buf`` itself, unchanged, as cuda.core does (it never
        shrinks).

        Parameters
        ----------
        buf : Buffer
            An open buffer allocated by this resource, with no live DLPack export; not one
            imported from another process (``ValueError``).
        new_size : int
            The new size in bytes.
        config : VirtualMemoryResourceOptions or dict, optional
            Options for the memory added (handle type, access, peers); its allocation type
            and location must be this resource's. None uses the resource's. Memory added with
            ``handle_type=None`` cannot be exported: the buffer's ``ipc_descriptor`` then
            raises ``RuntimeError``.

        Returns
        -------
        Buffer
            The resized buffer. ``buf`` is closed: its memory now belongs to the result
            (unless ``buf`` itself is returned).

        Notes
        -----
        Calls ``cuMemCreate``, ``cuMemMap`` and ``cuMemSetAccess``; when moving also
        ``cuMemAddressReserve``, ``cuMemUnmap`` and ``cuMemAddressFree``.
        """
        cdef Buffer old
        cdef size_t n
        new_size = check_int(new_size, "VirtualMemoryResource.modify_allocation(): new_size")
        cdef size_t extra
        cdef _Allocation rec
        cdef ContextGuard guard
        old = as_buffer(buf, "VirtualMemoryResource.modify_allocation(): buf")
        old._check_open()
        if old._mr is not self or old._ptr not in self._allocations:
            raise ValueError("VirtualMemoryResource.modify_allocation(): buf was not "
                             "allocated by this resource")
        if (<_Allocation>self._allocations[old._ptr])._imported:
            raise ValueError("VirtualMemoryResource.modify_allocation(): an imported buffer "
                             "cannot be resized (its memory belongs to the exporting process)")
        if old._exports:
            raise RuntimeError("VirtualMemoryResource.modify_allocation(): buf has live "
                               "DLPack exports; release them first")
        if new_size <= old._size:  # even a negative one, as cuda.core (a no-op either way)
            return old
        n = check_size(new_size, "VirtualMemoryResource.modify_allocation(): new_size")
        opts = self._config
        if config is not None:
            opts = dataclasses.replace(check_or_create_options(
                VirtualMemoryResourceOptions, config,
                "VirtualMemoryResource.modify_allocation() config"))  # kept by the new chunks
            for field in ("allocation_type", "location_type"):
                if getattr(opts, field) != getattr(self._config, field):
                    raise ValueError(f"VirtualMemoryResource.modify_allocation(): "
                                     f"config.{field}={str(getattr(opts, field))!r} differs "
                                     f"from the resource's "
                                     f"{str(getattr(self._config, field))!r}")
            self._check_config(Device(self._dev_id), opts)
        rec = self._allocations[old._ptr]
        if n > rec.mapped:
            extra = _round_up(n - rec.mapped, rec.granularity)
            enter_context(guard, self._ctx())
            if rec.mapped + extra <= rec.reserved:
                handle = self._map_new(rec.base + rec.mapped, extra, opts)
                rec.chunks.append(_Chunk(handle, rec.mapped, extra, opts))
                rec.mapped += extra
            else:
                self._move(old, rec, extra, opts)
        # Hand the memory over to a new Buffer; the old one forgets it without freeing it.
        result = _new_vmm_buffer(rec.base, n, self, old._dealloc_stream)
        old._closed = True
        old._mr = None
        old._owner = None
        old._dealloc_stream = None
        return result

    def _move(self, Buffer old, _Allocation rec, size_t extra, opts):
        """Remap ``rec``'s chunks into a new reservation big enough for ``extra`` more bytes,
        then map the new chunk after them."""
        cdef CUdeviceptr new_base = 0
        cdef size_t new_reserved = 2 * (rec.mapped + extra)
        cdef CUresult err
        err = cydriver.cuMemAddressReserve(
            &new_base, new_reserved, max(self._config.addr_align or 0, rec.granularity), 0, 0)
        if err != CUDA_SUCCESS:
            raise_alloc_error(err, rec.mapped + extra,
                              "VirtualMemoryResource.modify_allocation()")
        mapped = []
        handle = None
        try:
            for chunk in rec.chunks:
                HANDLE_RETURN(cydriver.cuMemMap(new_base + chunk.offset, chunk.size, 0,
                                                chunk.handle, 0))
                mapped.append(chunk)
                self._set_access(new_base + chunk.offset, chunk.size, chunk.opts)
            handle = self._map_new(new_base + rec.mapped, extra, opts)
        except BaseException:
            for chunk in mapped:
                cydriver.cuMemUnmap(new_base + chunk.offset, chunk.size)
            cydriver.cuMemAddressFree(new_base, new_reserved)
            raise
        # The old addresses may still be in use by queued work: wait before unmapping them.
        _wait_for_users(old._dealloc_stream, self._dev_id)
        for chunk in rec.chunks:
            cydriver.cuMemUnmap(rec.base + chunk.offset, chunk.size)
        cydriver.cuMemAddressFree(rec.base, rec.reserved)
        del self._allocations[rec.base]
        rec.chunks.append(_Chunk(handle, rec.mapped, extra, opts))
        rec.base = new_base
        rec.reserved = new_reserved
        rec.mapped += extra
        self._allocations[new_base] = rec
