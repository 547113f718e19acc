"""DeviceMemoryResource: device memory from a stream-ordered memory pool."""

cimport cython
from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUmemoryPool
from libc.string cimport memset

from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._memory._mempool cimport _MemPool, raise_release_threshold

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

    .. note:: Calls ``cuDeviceGetMemPool`` or ``cuMemPoolCreate``.
    """

    def __init__(self, device_id, options=None):
        cdef CUmemoryPool pool = NULL
        cdef cydriver.CUmemPoolProps props
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
            memset(&props, 0, sizeof(props))
            props.allocType = cydriver.CU_MEM_ALLOCATION_TYPE_PINNED
            props.handleTypes = (cydriver.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                                 if opts.ipc_enabled else cydriver.CU_MEM_HANDLE_TYPE_NONE)
            props.location.type = cydriver.CU_MEM_LOCATION_TYPE_DEVICE
            props.location.id = ordinal
            props.maxSize = opts.max_size
            HANDLE_RETURN(cydriver.cuMemPoolCreate(&pool, &props))
            self._setup(pool, ordinal, True, opts.ipc_enabled, "DeviceMemoryResource.allocate()")
            raise_release_threshold(pool)
        self._c_dealloc = type(self) is DeviceMemoryResource
