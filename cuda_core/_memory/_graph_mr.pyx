"""GraphMemoryResource: memory that belongs to a CUDA graph, allocated during stream capture.

An allocation made while a stream captures becomes an allocation node of the graph being
captured (``cuMemAllocAsync``), and freeing it during the same capture a free node. The memory
exists only while the instantiated graph runs, or from the graph's launch until it is freed
outside the graph. Outside capture there is nothing to allocate from, and the resource says so.
"""

cimport cython
from cuda.bindings cimport cydriver
from cuda_core cimport _cuda_compat
from cuda.bindings.cydriver cimport CUcontext, CUdeviceptr, CUresult, CUstream, cuuint64_t

from cuda_core._checks cimport check_address, check_size
from cuda_core._context cimport ContextGuard, enter_context, exit_context, primary_context
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._memory._alloc cimport raise_alloc_error, stream_context
from cuda_core._memory._buffer cimport new_buffer
from cuda_core._memory._memory_resource cimport _DeviceOnlyMemoryResource
from cuda_core._memory._pool_attributes cimport _MemoryCounters
from cuda_core._stream cimport Stream, optional_stream, require_stream

from cuda_core._device import Device

__all__ = ["GraphMemoryResource", "GraphMemoryAttributes"]

cdef dict _by_device = {}


cdef int _capture_status(Stream s) except -1:
    cdef cydriver.CUstreamCaptureStatus status = cydriver.CU_STREAM_CAPTURE_STATUS_NONE
    cdef CUcontext ctx = stream_context(s)
    cdef CUresult err
    cdef ContextGuard guard
    with nogil:
        enter_context(guard, ctx)
        err = _cuda_compat.cuStreamGetCaptureInfo(s._handle, &status, NULL, NULL, NULL, NULL, NULL)
        exit_context(guard)
    HANDLE_RETURN(err)
    return <int>status


cdef CUdeviceptr _graph_alloc(size_t size, Stream s, int device_id) except? 0:
    cdef CUdeviceptr ptr = 0
    cdef CUcontext ctx
    cdef CUresult err
    cdef ContextGuard guard
    s._check_open()
    status = _capture_status(s)
    if status != cydriver.CU_STREAM_CAPTURE_STATUS_ACTIVE:
        state = ("its capture was invalidated"
                 if status == cydriver.CU_STREAM_CAPTURE_STATUS_INVALIDATED
                 else "it is not capturing")
        raise RuntimeError(f"GraphMemoryResource.allocate(): the stream must be capturing a "
                           f"graph, but {state}; graph memory exists only inside graphs (use "
                           f"Device.memory_resource or a DeviceMemoryResource outside capture)")
    if s._ctx is not None and s._ctx._device_id != device_id:
        raise ValueError(f"GraphMemoryResource.allocate(): the resource is for device "
                         f"{device_id} but the stream belongs to device {s._ctx._device_id}")
    if size == 0:
        return 0
    ctx = stream_context(s)
    with nogil:
        enter_context(guard, ctx)
        err = cydriver.cuMemAllocAsync(&ptr, size, s._handle)
        exit_context(guard)
    if err != cydriver.CUDA_SUCCESS:
        raise_alloc_error(err, size, "GraphMemoryResource.allocate()")
    return ptr


cdef int _graph_free(CUdeviceptr ptr, Stream s, int device_id) except -1:
    cdef CUstream handle = <CUstream>cydriver.CU_STREAM_LEGACY
    cdef CUcontext ctx = NULL
    cdef CUresult err
    cdef ContextGuard guard
    if ptr == 0:
        return 0
    if s is not None:
        s._check_open()
        handle = s._handle
        ctx = stream_context(s)
    if ctx == NULL:
        ctx = primary_context(device_id)._handle
    with nogil:
        enter_context(guard, ctx)
        err = cydriver.cuMemFreeAsync(ptr, handle)
        exit_context(guard)
    return HANDLE_RETURN(err)


class GraphMemoryResource(_DeviceOnlyMemoryResource):
    """Memory owned by CUDA graphs, allocated while a stream is capturing. One object per
    device: ``GraphMemoryResource(dev) is GraphMemoryResource(dev)``.

    :meth:`allocate` needs a stream that is capturing; the buffer's memory is an allocation
    node of the captured graph. Close the buffer during the same capture to add the matching
    free node; a buffer left open lives on after each launch of the graph and must be closed
    after the graph has run (closing it before that is an error the driver reports).

    Parameters
    ----------
    device_id : Device or int

    Notes
    -----
    Allocates with ``cuMemAllocAsync`` on the capturing stream, checked with
    ``cuStreamGetCaptureInfo``; frees with ``cuMemFreeAsync``.
    """

    __slots__ = ()

    def __new__(cls, device_id):
        cdef _DeviceOnlyMemoryResource mr
        ordinal = Device(device_id).device_id
        mr = _by_device.get(ordinal)
        if mr is None:
            mr = _DeviceOnlyMemoryResource.__new__(cls)
            mr._dev_id = ordinal
            mr = _by_device.setdefault(ordinal, mr)
        return mr

    def __init__(self, device_id):
        pass

    def allocate(self, size, *, stream):
        """Allocate ``size`` bytes inside the graph that ``stream`` is capturing.

        Raises
        ------
        RuntimeError
            If ``stream`` is not capturing.
        """
        cdef size_t n = check_size(size, "GraphMemoryResource.allocate(): size")
        cdef Stream s = require_stream(stream, "GraphMemoryResource.allocate()")
        cdef CUdeviceptr ptr = _graph_alloc(n, s, self.device_id)
        return new_buffer(ptr, n, self, s)

    def deallocate(self, ptr, size, *, stream=None):
        """Free graph memory: a free node while ``stream`` captures, else a stream-ordered free
        after the graph has run (the legacy default stream of the device when ``stream`` is
        None)."""
        cdef Stream s = optional_stream(stream, "GraphMemoryResource.deallocate()")
        cdef CUdeviceptr p = check_address(ptr, "GraphMemoryResource.deallocate(): ptr")
        check_size(size, "GraphMemoryResource.deallocate(): size")
        _graph_free(p, s, self.device_id)

    @property
    def attributes(self):
        """:class:`GraphMemoryAttributes` of the device's graph memory."""
        cdef GraphMemoryAttributes attrs = GraphMemoryAttributes.__new__(GraphMemoryAttributes)
        attrs._device_id = self.device_id
        return attrs

    def trim(self):
        """Give graph memory that no graph uses back to the OS.

        .. note:: Calls ``cuDeviceGraphMemTrim``.
        """
        cdef ContextGuard guard
        enter_context(guard, primary_context(self.device_id)._handle)
        HANDLE_RETURN(cydriver.cuDeviceGraphMemTrim(self.device_id))

    def __repr__(self):
        return f"<GraphMemoryResource device {self.device_id}>"

    def __reduce__(self):
        # As cuda.core: the per-device resource is neither copied nor pickled.
        raise TypeError("GraphMemoryResource cannot be pickled or copied: use "
                        "GraphMemoryResource(device) where it is needed (one per device)")


# The graph memory attributes of the counters, in _COUNTER_* order.
cdef cydriver.CUgraphMem_attribute[4] _GRAPH_COUNTERS = [
    cydriver.CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, cydriver.CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH,
    cydriver.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, cydriver.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH]


@cython.auto_pickle(False)
cdef class GraphMemoryAttributes(_MemoryCounters):
    """The graph memory counters of a device, read at each access. Not constructible: use
    ``GraphMemoryResource(dev).attributes``.

    .. note:: ``cuDeviceGetGraphMemAttribute`` / ``cuDeviceSetGraphMemAttribute``.
    """

    cdef int _device_id

    cdef str _origin(self):
        return "GraphMemoryResource.attributes"

    cdef object _counter(self, int which):
        cdef cuuint64_t value = 0
        HANDLE_RETURN(cydriver.cuDeviceGetGraphMemAttribute(self._device_id,
                                                            _GRAPH_COUNTERS[which], &value))
        return value

    cdef int _reset_counter(self, int which) except -1:
        cdef cuuint64_t zero = 0
        return HANDLE_RETURN(cydriver.cuDeviceSetGraphMemAttribute(
            self._device_id, _GRAPH_COUNTERS[which], &zero))
