"""What every memory module shares around an allocation, a free, a copy or a fill: the context
to make current for work on a stream, the waits before a synchronous free, the allocation
error, the device capabilities a resource needs, and what the driver says of a pointer. (The
``stream=`` argument is ``_stream.require_stream`` / ``optional_stream``.)"""

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUcontext, CUdeviceptr, CUresult
from libc.stdint cimport int32_t

from cuda_core._context cimport (ContextGuard, any_body_capture, enter_context, exit_context,
                                 primary_context, refuse_during_body_capture)
from cuda_core._driver cimport ensure_driver
from cuda_core._errors cimport HANDLE_RETURN, make_driver_error
from cuda_core._stream cimport Stream

from cuda_core._errors import CUDAError

__all__ = []


cdef bint device_supports(object dev, str name) except -1:
    """A capability of ``dev`` (a DeviceProperties attribute); an attribute newer than the
    installed driver reads as unsupported."""
    try:
        return bool(getattr(dev.properties, name))
    except CUDAError:
        return False


cdef int raise_alloc_error(CUresult err, size_t size, str what) except -1:
    """Raise the allocation failure ``err``, naming the size asked for (out of memory is a
    CUDAOutOfMemoryError, which is also a MemoryError)."""
    raise make_driver_error(err, f"{what}: allocating {size} bytes")


cdef CUcontext stream_context(Stream s) noexcept:
    """The context to make current around work on ``s``: the stream's own, or NULL for the
    unbound default streams (which use whatever context is current)."""
    if s is None or s._ctx is None:
        return NULL
    return s._ctx._handle


cdef CUcontext current_or_primary(int device_id) except? NULL:
    """For a call that needs some context but no particular one: the current context, else
    the primary context of ``device_id`` (device 0's when it is -1, for host memory)."""
    cdef CUcontext current = NULL
    ensure_driver()  # a process's first CUDA call may come here (a host pool unpickled)
    HANDLE_RETURN(cydriver.cuCtxGetCurrent(&current))
    if current != NULL:
        return current
    return primary_context(device_id if device_id >= 0 else 0)._handle


cdef int sync_stream(Stream s) except -1:
    """Wait for the work queued on ``s``, GIL released."""
    cdef CUcontext ctx = stream_context(s)
    cdef CUresult err
    cdef ContextGuard guard
    refuse_during_body_capture(NULL, s._handle, "synchronizing the stream")
    with nogil:
        enter_context(guard, ctx)
        err = cydriver.cuStreamSynchronize(s._handle)
        exit_context(guard)
    return HANDLE_RETURN(err)


cdef int sync_context(CUcontext ctx) except -1:
    """Wait for all work of ``ctx`` (the current context when NULL), GIL released."""
    cdef CUresult err
    cdef ContextGuard guard
    if any_body_capture():  # else no driver call to name the current context
        if ctx == NULL:
            HANDLE_RETURN(cydriver.cuCtxGetCurrent(&ctx))
        refuse_during_body_capture(ctx, NULL, "synchronizing the context")
    with nogil:
        enter_context(guard, ctx)
        err = cydriver.cuCtxSynchronize()
        exit_context(guard)
    return HANDLE_RETURN(err)


cdef int free_after(CUdeviceptr ptr, Stream stream, CUcontext ctx, bint host) except -1:
    """The synchronous free of the resources without a pool: ``cuMemFreeHost`` (``host``) or
    ``cuMemFree`` in ``ctx`` (NULL: the current context), once the work queued on ``stream``
    is done (when it is given and still open)."""
    cdef CUresult err
    cdef ContextGuard guard
    if ptr == 0:
        return 0
    if stream is not None and not stream._closed:
        sync_stream(stream)
    with nogil:
        enter_context(guard, ctx)
        if host:
            err = cydriver.cuMemFreeHost(<void*>ptr)
        else:
            err = cydriver.cuMemFree(ptr)
        exit_context(guard)
    return HANDLE_RETURN(err)


cdef int pointer_kind(CUdeviceptr ptr, int32_t* dev_id) except -1:
    """The ATTR_* bits of ``ptr`` (ATTR_QUERIED always), from the driver's pointer attributes,
    and its device in ``dev_id`` (-1 for host memory). Plain host memory unknown to the driver
    reads as host-only."""
    cdef unsigned long long values[3]
    cdef cydriver.CUpointer_attribute attrs[3]
    cdef void* data[3]
    cdef unsigned int mem_type
    ensure_driver()
    attrs[0] = cydriver.CU_POINTER_ATTRIBUTE_MEMORY_TYPE
    attrs[1] = cydriver.CU_POINTER_ATTRIBUTE_IS_MANAGED
    attrs[2] = cydriver.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    # Zeroed 8-byte slots: the driver writes a bool, an unsigned int or an int into each.
    for i in range(3):
        values[i] = 0
        data[i] = &values[i]
    HANDLE_RETURN(cydriver.cuPointerGetAttributes(3, attrs, data, ptr))
    mem_type = <unsigned int>values[0]
    dev_id[0] = -1
    if <unsigned int>values[1]:
        dev_id[0] = <int32_t>values[2]
        return ATTR_QUERIED | ATTR_DEVICE | ATTR_HOST | ATTR_MANAGED
    if mem_type == cydriver.CU_MEMORYTYPE_DEVICE:
        dev_id[0] = <int32_t>values[2]
        return ATTR_QUERIED | ATTR_DEVICE
    if mem_type == cydriver.CU_MEMORYTYPE_HOST:
        return ATTR_QUERIED | ATTR_DEVICE | ATTR_HOST | ATTR_PINNED
    return ATTR_QUERIED | ATTR_HOST
