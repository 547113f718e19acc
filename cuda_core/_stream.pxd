from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUDA_SUCCESS, CUcontext, CUgraph, CUresult, CUstream

from cuda_core._context cimport Context
from cuda_core._resource cimport Resource


cdef class Stream(Resource):
    # What a launch reads (_closed in the base, _handle, _ctx, _bind_ctx) comes first, close
    # together.
    cdef CUstream _handle
    # The stream's context; None for the default-stream handles that resolve against whatever
    # context is current on the calling thread (LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM).
    cdef Context _ctx
    # Default-stream handles bound to a device (Device.default_stream) push this context around
    # each call when another one is current; NULL otherwise.
    cdef CUcontext _bind_ctx
    cdef object _owner
    cdef bint _owned
    # Left to the driver for good: the stream holds an invalidated capture of a graph with a
    # corrupt conditional body, which the driver crashes ending or destroying
    # (graph/_builder.pyx); its release does nothing.
    cdef bint _wedged

    cdef int _check_ready(self) except -1
    cdef Context _resolve_ctx(self)


# A Resource that queues its work on a Stream it holds (a GraphBuilder, whose module cimports
# this one): as_stream takes it for that Stream as it is, not a wrapper of its __cuda_stream__,
# so that whatever holds the stream (a buffer allocated on a builder) sees it closed once the
# holder closes it.
cdef class StreamHolder(Resource):
    cdef Stream _stream           # where the work goes


cdef Stream create_stream(Context ctx, object options)
# StreamOptions.priority checked in the current context, into *prio (None: unchanged).
cdef int check_priority(object priority, int* prio) except -1
cdef Stream default_stream_for(Context ctx)
cdef Stream as_stream(object obj, str what)
# The ``stream=`` argument of allocate/copy/fill (None refused) and an optional one (None kept).
cdef Stream require_stream(object stream, str what)
cdef Stream optional_stream(object stream, str what)
cdef bint is_foreign_stream(object obj)
cdef CUstream protocol_stream_handle(object obj, str what) except NULL
cdef Stream wrap_handle(size_t address, object owner)
# An owned stream (destroyed by close()) made elsewhere, e.g. on a green context (_green.pyx).
cdef Stream new_owned_stream(CUstream handle, Context ctx)


# The NULL stream is the legacy default stream: one spelling, so that the two compare equal.
cdef inline size_t canonical_stream(size_t handle) noexcept nogil:
    return <size_t>cydriver.CU_STREAM_LEGACY if handle == 0 else handle


cdef inline bint same_stream(size_t a, size_t b) noexcept nogil:
    """Whether two stream handles name the same stream (0 and CU_STREAM_LEGACY do)."""
    return canonical_stream(a) == canonical_stream(b)


# Handles the driver gives a meaning without a stream object: 0 and CU_STREAM_LEGACY are the
# legacy default stream, CU_STREAM_PER_THREAD the calling thread's default stream.
cdef inline bint is_default_handle(CUstream handle) noexcept nogil:
    return <size_t>handle <= <size_t>cydriver.CU_STREAM_PER_THREAD


# Whether ``handle`` is capturing a graph, or its capture was invalidated (False where the
# driver cannot say: the next call on the stream will).
cdef inline bint is_capturing(CUstream handle) noexcept nogil:
    cdef cydriver.CUstreamCaptureStatus status = cydriver.CU_STREAM_CAPTURE_STATUS_NONE
    return (cydriver.cuStreamIsCapturing(handle, &status) == CUDA_SUCCESS
            and status != cydriver.CU_STREAM_CAPTURE_STATUS_NONE)


# End the capture on ``handle``, if any (active or invalidated), leaving its graph alone (a
# conditional body's belongs to its node): the driver's result of ending it, CUDA_SUCCESS where
# nothing was capturing.
cdef inline CUresult end_capture(CUstream handle) noexcept nogil:
    cdef CUgraph ignored = NULL
    if not is_capturing(handle):
        return CUDA_SUCCESS
    return cydriver.cuStreamEndCapture(handle, &ignored)
