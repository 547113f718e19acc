"""DeviceMemoryResource: device memory from a stream-ordered memory pool."""

cimport cython
from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUmemoryPool

from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._memory._mempool cimport _MemPool, create_pool, raise_release_threshold

from cuda_core._device import Device
from cuda_core._memory._mr_options import DeviceMemoryResourceOptions
from cuda_core._options import check_or_create_options

__all__ = ["DeviceMemoryResource", "DeviceMemoryResourceOptions"]


@cython.auto_pickle(False)
cdef class DeviceMemoryResource(_MemPool):
    """Device memory from a stream-ordered memory pool of one device.

    Parameters
    ----------
    device_id : int or Device
        The device whose memory is allocated.
    options : DeviceMemoryResourceOptions or dict, optional
        None (the default) uses the device's current memory pool (``cuDeviceGetMemPool``),
        which is shared with everything else in the process that uses it: the resource does
        not own it, and ``close()`` does nothing. Options create a new pool that the resource
        owns and destroys on ``close()``.

    Notes
    -----
    A pool that nobody configured gives its free memory back to the OS at every
    synchronization (release threshold 0), which makes the next allocation map new memory.
    The resource raises the threshold of such a pool to unlimited, for the device's current
    pool too; set ``mr.attributes.release_threshold`` to choose another value.

    Allocation and free are stream-ordered (``cuMemAllocFromPoolAsync``, ``cuMemFreeAsync``):
    ``allocate`` takes a keyword-only ``stream``, which also orders the buffer's eventual free
    unless the buffer is given another one.

    **Sharing with other processes.** A resource created with ``ipc_enabled=True`` can share
    its pool and its buffers. Another process maps the pool as a *mapped* resource (same class,
    :attr:`is_mapped` True) from :attr:`allocation_handle` (a file descriptor) with
    :meth:`from_allocation_handle`, and imports each buffer through it from the buffer's
    :attr:`Buffer.ipc_descriptor` with :meth:`Buffer.from_ipc_descriptor`. A mapped resource
    cannot allocate, and the exporting resource cannot import. With :mod:`multiprocessing`
    (Queues, Pipes, ``Process`` arguments; use the ``spawn`` start method) all of this is done
    for you: a resource sent there arrives mapped and registered under its :attr:`uuid`, a
    buffer arrives imported (carrying its resource, or finding it in the registry). With plain
    :mod:`pickle`, a resource pickles as its uuid and unpickles only where a mapped resource is
    registered under it (:meth:`register`, :meth:`from_registry`).

    Lifetimes: the exporter's allocation must be complete before another process touches it
    (synchronize, or have the importer wait on an IPC event); every importer must have closed
    its buffer (and its stream must have run the free) before the exporter frees the memory.
    Closing the exporting *resource* while importers hold buffers is fine. Peer access is per
    process: a mapped resource starts with none.

    .. warning::
        Importing memory trusts the process that exported it: see
        :meth:`Buffer.from_ipc_descriptor`.

    .. note:: Calls ``cuDeviceGetMemPool`` or ``cuMemPoolCreate``.
    """

    def __init__(self, device_id, options=None):
        cdef CUmemoryPool pool = NULL
        if self._inited:
            raise RuntimeError("DeviceMemoryResource is already initialized")
        dev = Device(device_id)
        ordinal = dev.device_id
        if not dev.properties.memory_pools_supported:
            raise RuntimeError(f"device {ordinal} does not support memory pools "
                               f"(properties.memory_pools_supported is False); "
                               f"Device.allocate() uses synchronous allocations there")
        if options is None:
            HANDLE_RETURN(cydriver.cuDeviceGetMemPool(&pool, ordinal))
            raise_release_threshold(pool)
            self._setup(pool, ordinal, False, False, "DeviceMemoryResource.allocate()")
        else:
            opts = check_or_create_options(DeviceMemoryResourceOptions, options,
                                           "DeviceMemoryResource options")
            if opts.ipc_enabled and not dev.properties.mempool_supported_handle_types & (
                    cydriver.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR):
                raise RuntimeError(f"device {ordinal} cannot share memory pools with other "
                                   f"processes (properties.mempool_supported_handle_types has "
                                   f"no POSIX file descriptor bit); ipc_enabled=True is not "
                                   f"possible here")
            HANDLE_RETURN(create_pool(&pool, cydriver.CU_MEM_ALLOCATION_TYPE_PINNED,
                                      cydriver.CU_MEM_LOCATION_TYPE_DEVICE, ordinal,
                                      opts.ipc_enabled, opts.max_size))
            self._setup(pool, ordinal, True, opts.ipc_enabled, "DeviceMemoryResource.allocate()")
            raise_release_threshold(pool)
        self._c_dealloc = type(self) is DeviceMemoryResource

    @classmethod
    def from_allocation_handle(cls, device_id, alloc_handle):
        """Map into this process the pool another process shares (its
        :attr:`allocation_handle`): a *mapped* resource, which imports buffers
        (:meth:`Buffer.from_ipc_descriptor`) and cannot allocate.

        Parameters
        ----------
        device_id : int or Device
            The device the pool's memory is on (as this process numbers it).
        alloc_handle : ~cuda_core._memory._ipc_base.IPCAllocationHandle or int
            The handle, or a file descriptor received otherwise (e.g.
            ``multiprocessing.reduction.recv_handle``). It is never taken over: the resource
            imports and keeps a duplicate, and the caller still closes what it gave.

        Returns
        -------
        DeviceMemoryResource
            A new mapped resource; or, when a live mapped resource is registered under the
            handle's uuid, that one.

        Raises
        ------
        TypeError
            If ``alloc_handle`` is neither.
        ValueError
            If the file descriptor is negative or not open, the pool is on another device, or
            the pool is already mapped here as another class or device.
        RuntimeError
            If the handle is closed.
        CUDAError
            If the driver refuses the file descriptor (not a memory pool's handle).

        Notes
        -----
        Calls ``cuMemPoolImportFromShareableHandle``.
        """
        from cuda_core._memory._ipc import map_pool
        return map_pool(cls, device_id, alloc_handle,
                        f"{cls.__name__}.from_allocation_handle()")[0]

    def __reduce__(self):
        """An IPC-enabled resource pickles as its :attr:`uuid` (plain :mod:`pickle`: it
        unpickles where a mapped resource is registered under it) or as its allocation handle
        (:mod:`multiprocessing`: it unpickles mapped and registered). Others raise a
        RuntimeError, as cuda.core does, that is also a TypeError."""
        from cuda_core._memory._ipc import reduce_resource
        return reduce_resource(self)
