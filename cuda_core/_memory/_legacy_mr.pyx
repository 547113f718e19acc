"""Synchronous (not pool-based) resources: LegacyPinnedMemoryResource (``cuMemAllocHost``) and
the plain ``cuMemAlloc`` resource that Device.allocate uses on devices without memory pools."""

cimport cython
from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUcontext, CUdeviceptr, CUresult

from cuda_core._checks cimport check_size
from cuda_core._context cimport ContextGuard, enter_context, exit_context, primary_context
from cuda_core._memory._alloc cimport free_after, raise_alloc_error, stream_context
from cuda_core._memory._buffer cimport Buffer, new_buffer
from cuda_core._memory._memory_resource cimport (MemoryResource, _DeviceOnlyMemoryResource,
                                                 deallocate_checked)
from cuda_core._stream cimport Stream, optional_stream

from cuda_core._device import Device
from cuda_core._memory._memory_resource import new_subclass_instance

__all__ = ["LegacyPinnedMemoryResource"]


cdef Buffer _alloc_sync(MemoryResource mr, size_t n, Stream s, CUcontext ctx, bint host,
                       str what):
    """A buffer of ``mr`` with ``n`` bytes from ``cuMemAllocHost`` (``host``) or ``cuMemAlloc``,
    made in ``ctx`` (NULL: the current context); ``s`` becomes its deallocation stream."""
    cdef CUdeviceptr ptr = 0
    cdef void* host_ptr = NULL
    cdef CUresult err
    cdef ContextGuard guard
    if n == 0:
        return new_buffer(0, 0, mr, s)
    with nogil:
        enter_context(guard, ctx)
        if host:
            err = cydriver.cuMemAllocHost(&host_ptr, n)
            ptr = <CUdeviceptr>host_ptr
        else:
            err = cydriver.cuMemAlloc(&ptr, n)
        exit_context(guard)
    if err != cydriver.CUDA_SUCCESS:
        raise_alloc_error(err, n, what)
    return new_buffer(ptr, n, mr, s)


@cython.auto_pickle(False)
cdef class LegacyPinnedMemoryResource(MemoryResource):
    """Page-locked host memory from ``cuMemAllocHost``: synchronous, no pool.

    The memory is accessible from the host and, through unified addressing, from every
    device. ``stream`` is optional on both :meth:`allocate` and :meth:`deallocate`: with a
    stream, the free first waits for the work queued on it.

    Allocation needs a current context (``Device.set_current()``), or a stream whose context
    is used.
    """

    def __init__(self):
        self._c_dealloc = type(self) is LegacyPinnedMemoryResource

    def allocate(self, size, *, stream=None):
        """Allocate ``size`` bytes of page-locked host memory.

        Parameters
        ----------
        size : int
            Number of bytes (0 gives an empty buffer at address 0).
        stream : Stream, optional
            Recorded as the buffer's deallocation stream; the allocation itself is synchronous.

        Returns
        -------
        Buffer

        Notes
        -----
        Calls ``cuMemAllocHost``.
        """
        cdef size_t n = check_size(size, "LegacyPinnedMemoryResource.allocate(): size")
        cdef Stream s = optional_stream(stream, "LegacyPinnedMemoryResource.allocate()")
        cdef CUcontext ctx = NULL
        if s is not None:
            s._check_open()
            ctx = stream_context(s)
        return _alloc_sync(self, n, s, ctx, True, "LegacyPinnedMemoryResource.allocate()")

    cdef int _deallocate_c(self, CUdeviceptr ptr, size_t size, Stream stream) except -1:
        return free_after(ptr, stream, NULL, True)

    def deallocate(self, ptr, size, *, stream=None):
        """Free memory this resource allocated; with ``stream``, first wait for its work.

        .. note:: Calls ``cuStreamSynchronize`` (with a stream) and ``cuMemFreeHost``.
        """
        deallocate_checked(self, ptr, size, stream, "LegacyPinnedMemoryResource.deallocate()")

    @property
    def is_device_accessible(self):
        """True: pinned memory is mapped for every device (unified addressing)."""
        return True

    @property
    def is_host_accessible(self):
        """True."""
        return True

    @property
    def device_id(self):
        """-1: host memory."""
        return -1

    def __repr__(self):
        return "<LegacyPinnedMemoryResource>"

    def __reduce__(self):
        # As cuda.core: it holds no handle, so copy.copy, copy.deepcopy and pickle give a new
        # resource (a subclass's instance with its __dict__, made without __init__).
        if type(self) is LegacyPinnedMemoryResource:
            return (LegacyPinnedMemoryResource, ())
        return (new_subclass_instance, (type(self),), getattr(self, "__dict__", None) or None)


@cython.auto_pickle(False)
cdef class _SynchronousMemoryResource(_DeviceOnlyMemoryResource):
    """Device memory from ``cuMemAlloc``/``cuMemFree``: what Device.allocate uses on a device
    without memory pools. Synchronous; a free with a stream first waits for its work."""

    def __init__(self, device_id):
        self._dev_id = Device(device_id).device_id
        self._c_dealloc = type(self) is _SynchronousMemoryResource

    def allocate(self, size, *, stream=None):
        """Allocate ``size`` bytes of device memory (``cuMemAlloc``, in the device's primary
        context)."""
        cdef size_t n = check_size(size, "Device.allocate(): size")
        cdef Stream s = optional_stream(stream, "Device.allocate()")
        cdef CUcontext ctx = primary_context(self._dev_id)._handle
        if s is not None:
            s._check_open()
        return _alloc_sync(self, n, s, ctx, False, "Device.allocate()")

    cdef int _deallocate_c(self, CUdeviceptr ptr, size_t size, Stream stream) except -1:
        return free_after(ptr, stream, primary_context(self._dev_id)._handle, False)

    def deallocate(self, ptr, size, *, stream=None):
        deallocate_checked(self, ptr, size, stream, "deallocate()")

    def __repr__(self):
        return f"<synchronous memory resource of device {self._dev_id}>"
