"""PinnedMemoryResource: page-locked host memory from a host-location memory pool."""

cimport cython
from cuda.bindings cimport cydriver
from cuda_core cimport _cuda_compat
from cuda.bindings.cydriver cimport CUmemoryPool, CUresult
from libc.string cimport memset

from cuda_core._driver cimport device_count, driver_version
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._context cimport ContextGuard, enter_context
from cuda_core._memory._alloc cimport current_or_primary, device_supports
from cuda_core._memory._mempool cimport (_MemPool, create_pool, raise_release_threshold,
                                        relax_capture, restore_capture)

from cuda_core._device import Device
from cuda_core._memory._mr_options import PinnedMemoryResourceOptions
from cuda_core._options import check_or_create_options

__all__ = ["PinnedMemoryResource", "PinnedMemoryResourceOptions"]


@cython.auto_pickle(False)
cdef class PinnedMemoryResource(_MemPool):
    """Page-locked host memory from a stream-ordered memory pool that lives on the host.

    The memory is accessible from the host and from every device that supports host memory
    pools (the resource grants them read-write access to its pool).

    Parameters
    ----------
    options : PinnedMemoryResourceOptions or dict, optional
        None: the driver's current pool of pinned host memory (its default one unless other
        code set another), which the resource does not own (``is_handle_owned`` is False,
        ``close()`` does nothing); a driver older than CUDA 13, which has no such pool, gets a
        pool of the resource's own. Options: a new pool, which the resource owns and destroys
        on ``close()``. ``numa_id`` binds it to a host NUMA node; ``ipc_enabled`` makes it
        shareable with other processes (which needs a NUMA node: the current device's when
        ``numa_id`` is None); ``max_size`` caps it.

    Raises
    ------
    RuntimeError
        If the driver or the current device does not support host memory pools
        (``Device().properties.host_memory_pools_supported``); use
        :class:`LegacyPinnedMemoryResource` there.

    Notes
    -----
    Calls ``cuMemPoolCreate`` with a ``CU_MEM_LOCATION_TYPE_HOST`` (or
    ``_HOST_NUMA``) location, then ``cuMemPoolSetAccess``.

    An IPC-enabled resource is shared with other processes as a :class:`DeviceMemoryResource`
    is (see there): :attr:`allocation_handle`, :meth:`from_allocation_handle` (no device
    argument), :meth:`Buffer.from_ipc_descriptor`, :mod:`multiprocessing`. A mapped pinned
    resource grants the devices access in the importing process, as creation does here.
    """

    cdef object _numa_id

    def __init__(self, options=None):
        cdef CUmemoryPool pool = NULL
        if self._inited:
            raise RuntimeError("PinnedMemoryResource is already initialized")
        opts = check_or_create_options(PinnedMemoryResourceOptions, options,
                                       "PinnedMemoryResource options")
        dev = Device()
        # No options: the driver's current pool (NULL before CUDA 13: then one of our own).
        pool = _current_host_pool() if options is None else NULL
        owned = pool == NULL
        numa = opts.numa_id
        if opts.ipc_enabled and numa is None:
            # Host pools without a NUMA node cannot be shared between processes.
            numa = max(dev.properties.host_numa_id, 0)
        needed = ("host_memory_pools_supported" if numa is None
                  else "host_numa_memory_pools_supported")
        if not device_supports(dev, needed):
            raise RuntimeError(f"PinnedMemoryResource needs host memory pools, which device "
                               f"{dev.device_id} or the driver does not support "
                               f"(properties.{needed} is False); use "
                               f"LegacyPinnedMemoryResource instead")
        if owned:
            HANDLE_RETURN(create_pool(
                &pool, cydriver.CU_MEM_ALLOCATION_TYPE_PINNED,
                cydriver.CU_MEM_LOCATION_TYPE_HOST if numa is None
                else cydriver.CU_MEM_LOCATION_TYPE_HOST_NUMA,
                0 if numa is None else numa, opts.ipc_enabled, opts.max_size))
        self._setup(pool, -1, owned, opts.ipc_enabled, "PinnedMemoryResource.allocate()")
        self._numa_id = numa
        self._host_access = True
        raise_release_threshold(pool)
        _grant_devices(pool, needed)
        self._c_dealloc = type(self) is PinnedMemoryResource

    @property
    def numa_id(self):
        """The host NUMA node the pool is bound to, or None."""
        return self._numa_id

    @classmethod
    def from_allocation_handle(cls, alloc_handle):
        """Map into this process the host pool another process shares (its
        :attr:`allocation_handle`): a *mapped* resource, which imports buffers
        (:meth:`Buffer.from_ipc_descriptor`) and cannot allocate. The devices that support
        host memory pools are granted read-write access to it (access does not cross
        processes).

        Parameters
        ----------
        alloc_handle : ~cuda_core._memory._ipc_base.IPCAllocationHandle or int
            The handle, or a file descriptor received otherwise; never taken over (the
            resource imports and keeps a duplicate).

        Returns
        -------
        PinnedMemoryResource
            A new mapped resource, or the live one registered under the handle's uuid.

        Raises
        ------
        TypeError, ValueError, RuntimeError, CUDAError
            As :meth:`DeviceMemoryResource.from_allocation_handle`; ValueError also for the
            handle of a device pool.

        Notes
        -----
        Calls ``cuMemPoolImportFromShareableHandle`` and ``cuMemPoolSetAccess``.
        """
        from cuda_core._memory._ipc import map_pool
        mr, new = map_pool(cls, None, alloc_handle, f"{cls.__name__}.from_allocation_handle()")
        if new:
            # The pool's NUMA node is not known here (the driver does not say): numa_id stays
            # None. Shareable host pools are NUMA pools: grant the devices that support those.
            try:
                _grant_devices((<_MemPool>mr)._pool, "host_numa_memory_pools_supported")
            except BaseException:
                mr.close()
                raise
        return mr

    def __reduce__(self):
        """As :meth:`DeviceMemoryResource.__reduce__`."""
        from cuda_core._memory._ipc import reduce_resource
        return reduce_resource(self)


cdef CUmemoryPool _current_host_pool() except? NULL:
    """The driver's current pool of pinned host memory (cuMemGetMemPool, CUDA 13), or NULL
    where the driver has none."""
    cdef CUmemoryPool pool = NULL
    cdef cydriver.CUmemLocation loc
    cdef CUresult err
    cdef ContextGuard guard
    if driver_version() < (13, 0):
        return NULL
    memset(&loc, 0, sizeof(loc))
    loc.type = cydriver.CU_MEM_LOCATION_TYPE_HOST
    enter_context(guard, current_or_primary(-1))
    try:
        err = _cuda_compat.cuMemGetMemPool(&pool, &loc, cydriver.CU_MEM_ALLOCATION_TYPE_PINNED)
    except RuntimeError:  # the bindings lack the entry point
        return NULL
    if err == cydriver.CUDA_ERROR_NOT_SUPPORTED:
        return NULL
    HANDLE_RETURN(err)
    return pool


cdef int _grant_devices(CUmemoryPool pool, str needed) except -1:
    """Grant read-write access to a host pool to every device that has ``needed`` (a
    DeviceProperties name): a host pool is accessible from the CPU only until devices are (and
    access granted in one process does not carry over to another)."""
    cdef cydriver.CUmemAccessDesc desc[64]
    cdef size_t n = 0
    cdef CUresult err
    cdef ContextGuard guard
    for i in range(min(device_count(), 64)):
        if device_supports(Device(i), needed):
            desc[n].location.type = cydriver.CU_MEM_LOCATION_TYPE_DEVICE
            desc[n].location.id = i
            desc[n].flags = cydriver.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            n += 1
    if n:
        # Some context current (an unpickling thread may have none): the current one, else
        # device 0's primary.
        enter_context(guard, current_or_primary(-1))
        mode = relax_capture()  # as the pool's creation: a capture on this thread stays valid
        err = cydriver.cuMemPoolSetAccess(pool, desc, n)
        restore_capture(mode)
        HANDLE_RETURN(err)
    return 0
