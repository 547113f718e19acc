"""What a view asks of the driver: the device of a CUDA Array Interface data pointer
(``pointer_device``), and the stream ordering between a view's producer and its consumer
(``stream_int`` reads the consumer's ``stream_ptr`` argument, ``order_streams`` makes the
consumer's stream wait for the work queued so far on the producer's: an event recorded on the
producer's stream, waited for on the consumer's).
"""

from cpython.long cimport PyLong_AsLongLongAndOverflow

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUcontext, CUdeviceptr, CUresult, CUstream, CUDA_SUCCESS

from cuda_core._checks cimport check_int
from cuda_core._context cimport ContextGuard, enter_context, exit_context, primary_context
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._stream cimport same_stream

__all__ = []

cdef object _U64_END = 1 << 64


cdef object stream_int_slow(object stream_ptr, str who, long long* value):
    """``stream_int`` past its fast path: any ``stream_ptr``."""
    cdef int overflow = 0
    cdef long long sval
    if type(stream_ptr) is not int:
        if stream_ptr is None:
            raise BufferError(f"{who}: stream_ptr=None is ambiguous; pass the consumer "
                              f"stream's address (e.g. stream.handle), or -1 for no stream "
                              f"ordering")
        stream_ptr = check_int(stream_ptr, f"{who}: stream_ptr")
    sval = PyLong_AsLongLongAndOverflow(stream_ptr, &overflow)
    if overflow == 0 and sval >= -1:
        value[0] = sval
        return stream_ptr
    if overflow > 0 and stream_ptr < _U64_END:
        value[0] = -2
        return stream_ptr
    raise BufferError(f"{who}: stream_ptr={stream_ptr} is not a stream (pass -1 for no stream "
                      f"ordering)")


cdef int pointer_device(CUdeviceptr ptr, str who) except -2:
    """The device of a device pointer; for the null pointer of an empty array, the current
    context's device (or 0)."""
    cdef int ordinal = -1
    cdef CUresult err
    cdef cydriver.CUdevice dev
    if ptr != 0:
        # A lookup in the driver's address map: shorter than releasing the GIL would be.
        err = cydriver.cuPointerGetAttribute(
            &ordinal, cydriver.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr)
        if err != CUDA_SUCCESS:
            raise BufferError(f"{who}: the driver does not know the data pointer 0x{ptr:x} "
                              f"as device, pinned or managed memory (CUresult {<int>err})")
        return ordinal
    if cydriver.cuCtxGetDevice(&dev) == CUDA_SUCCESS:
        return <int>dev
    return 0



cdef int order_streams(size_t producer, size_t consumer, int device_id) except -1:
    """Make the consumer's stream wait for the work queued so far on the producer's."""
    cdef CUcontext ctx = NULL
    cdef CUcontext cur = NULL
    cdef cydriver.CUevent event = NULL
    cdef CUresult err = CUDA_SUCCESS
    cdef ContextGuard primary_guard
    cdef ContextGuard guard
    if same_stream(producer, consumer):
        return 0
    # The event must be made in the producer stream's context. The special handles (legacy
    # and per-thread default streams) resolve against the current context; with none current,
    # the device's primary context stands in.
    HANDLE_RETURN(cydriver.cuCtxGetCurrent(&cur))
    if cur == NULL:
        cur = primary_context(device_id)._handle
        with nogil:
            enter_context(primary_guard, cur)
    with nogil:
        if producer <= <size_t>cydriver.CU_STREAM_PER_THREAD:
            ctx = cur  # 0, 1 and 2 name the default streams of the current context
        else:
            err = cydriver.cuStreamGetCtx(<CUstream>producer, &ctx)
        if err == CUDA_SUCCESS:
            enter_context(guard, ctx)
            err = cydriver.cuEventCreate(&event, cydriver.CU_EVENT_DISABLE_TIMING)
            if err == CUDA_SUCCESS:
                err = cydriver.cuEventRecord(event, <CUstream>producer)
                if err == CUDA_SUCCESS:
                    err = cydriver.cuStreamWaitEvent(<CUstream>consumer, event, 0)
                # Destroying right after the wait is safe: the driver keeps what it needs.
                cydriver.cuEventDestroy(event)
            exit_context(guard)
        exit_context(primary_guard)  # after guard: the pushes pop in reverse order
    return HANDLE_RETURN(err)
