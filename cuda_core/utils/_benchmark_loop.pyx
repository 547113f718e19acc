"""The timed loop of :func:`cuda_core.utils.benchmark` (``utils/_benchmark.py`` checks the
arguments first and builds the result from what ``run`` returns).

What the loop does, per repeat: record a start event on every target stream, read the
monotonic clock, call ``func(*args, **kwargs)``, read the clock again, record the end events,
then wait for each end event and read the elapsed time of its pair. Nothing is allocated on that
path: the result arrays, the events (two per target, created once with timing enabled, in the
target stream's context) and the C array of targets exist before the first repeat; the clock is
``clock_gettime(CLOCK_MONOTONIC)`` (what ``time.perf_counter`` reads on Linux) and the call is
one ``PyObject_Call`` with the caller's tuple and dict. The events are destroyed on every path,
an exception from ``func`` included, before it propagates.

No process-wide state but one counter of live events (an atomic add, not the GIL, keeps it
right), read by the tests to see that nothing leaks.
"""

from cpython.exc cimport PyErr_CheckSignals
from cpython.object cimport PyObject_Call
from libcpp.vector cimport vector

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUcontext, CUevent, CUresult, CUstream, CUDA_SUCCESS

from cuda_core._clock cimport now_ns
from cuda_core._context cimport (Context, ContextGuard, context_from_handle, context_gone,
                                 enter_context, live_primary_context)
from cuda_core._driver cimport device_count, ensure_driver
from cuda_core._errors cimport HANDLE_RETURN, check_call
from cuda_core._stream cimport Stream, as_stream, default_stream_for, is_capturing

import numpy

__all__ = []


cdef extern from *:
    """
    static Py_ssize_t cuda_core_bench_live_events = 0;
    static inline void cuda_core_bench_count(Py_ssize_t delta) {
        __atomic_add_fetch(&cuda_core_bench_live_events, delta, __ATOMIC_RELAXED);
    }
    static inline Py_ssize_t cuda_core_bench_live(void) {
        return __atomic_load_n(&cuda_core_bench_live_events, __ATOMIC_RELAXED);
    }
    """
    void _count_events "cuda_core_bench_count"(Py_ssize_t delta) noexcept nogil
    Py_ssize_t _live "cuda_core_bench_live"() noexcept nogil


# One stream to time on: its handle, the context its events belong to (entered around each
# record: a default-stream handle resolves against the current context), and the two events.
cdef struct _Target:
    CUstream stream
    CUcontext ctx
    CUevent start
    CUevent end


def _live_events():
    """How many events the benchmark loops of this process have created and not destroyed
    (for the tests: 0 whenever no benchmark is running)."""
    return _live()


cdef int _new_event(CUevent* out, CUcontext ctx) except -1 nogil:
    cdef ContextGuard guard
    enter_context(guard, ctx)
    HANDLE_RETURN(cydriver.cuEventCreate(out, cydriver.CU_EVENT_DEFAULT))  # timing enabled
    _count_events(1)
    return 0


cdef int _record(CUevent event, CUstream stream, CUcontext ctx) except -1 nogil:
    cdef ContextGuard guard
    enter_context(guard, ctx)
    return HANDLE_RETURN(cydriver.cuEventRecord(event, stream))


cdef CUresult _destroy_events(vector[_Target]& targets, list contexts) noexcept:
    """Destroy every event made so far; the first failure (the others are destroyed anyway).
    Where func destroyed a target's context, the driver destroyed its events with it: they are
    forgotten, never passed to the driver again."""
    cdef CUresult first = CUDA_SUCCESS, err
    cdef size_t i
    cdef bint gone
    for i in range(targets.size()):
        gone = context_gone(<Context>contexts[i])
        err = _destroy_event(&targets[i].start, gone)
        if first == CUDA_SUCCESS:
            first = err
        err = _destroy_event(&targets[i].end, gone)
        if first == CUDA_SUCCESS:
            first = err
    return first


cdef CUresult _destroy_event(CUevent* event, bint gone) noexcept:
    """Destroy ``*event`` unless it is NULL (never made) or its context is gone (the driver
    destroyed it then), and forget it."""
    if event[0] == NULL:
        return CUDA_SUCCESS
    err = CUDA_SUCCESS if gone else cydriver.cuEventDestroy(event[0])
    event[0] = NULL
    _count_events(-1)
    return err


cdef int _check_streams_open(list streams) except -1:
    # func may close a stream it was given (Stream.close() destroys an owned one): the next
    # record on its handle would reach a destroyed stream.
    for s in streams:
        if (<Stream>s)._closed:
            raise RuntimeError("benchmark(): func closed the stream being timed")
    return 0


cdef Py_ssize_t _timed_loop(object func, tuple args, dict kwargs, Py_ssize_t n_warmup,
                            Py_ssize_t n_repeat, double max_duration,
                            vector[_Target]& targets, list streams, double[::1] cpu,
                            double[:, ::1] gpu) except -1:
    """Run the warm-up calls, then the timed repeats; the number of repeats timed. ``cpu`` has
    ``n_repeat`` items and ``gpu`` shape (targets.size(), n_repeat), as ``run`` makes them:
    every index written is below those bounds (and the checks stay on). ``streams`` holds the
    Stream of each target."""
    cdef size_t i, n = targets.size()
    cdef Py_ssize_t k
    cdef long long t0, t1, begin
    cdef float ms = 0
    cdef CUresult err
    for k in range(n_warmup):
        PyObject_Call(func, args, kwargs)
        PyErr_CheckSignals()
        _check_streams_open(streams)
    begin = now_ns()
    for k in range(n_repeat):
        with nogil:
            for i in range(n):
                _record(targets[i].start, targets[i].stream, targets[i].ctx)
        t0 = now_ns()
        PyObject_Call(func, args, kwargs)
        t1 = now_ns()
        _check_streams_open(streams)
        with nogil:
            for i in range(n):
                _record(targets[i].end, targets[i].stream, targets[i].ctx)
            for i in range(n):
                err = cydriver.cuEventSynchronize(targets[i].end)
                if err == CUDA_SUCCESS:
                    err = cydriver.cuEventElapsedTime(&ms, targets[i].start, targets[i].end)
                HANDLE_RETURN(err)
                gpu[i, k] = <double>ms * 1e-3
        cpu[k] = <double>(t1 - t0) * 1e-9
        PyErr_CheckSignals()  # a func in C that never checks for Ctrl-C still stops here
        if <double>(now_ns() - begin) * 1e-9 > max_duration:
            return k + 1
    return n_repeat


cdef int _add_target(list streams, list contexts, list ids, Stream s) except -1:
    cdef Context ctx
    cdef ContextGuard guard
    s._check_ready()
    ctx = s._resolve_ctx()
    enter_context(guard, ctx._handle)  # a default-stream handle means this context's
    if is_capturing(s._handle):
        # Waiting on an event recorded into a capture is an error that would also end
        # (invalidate) the capture.
        raise RuntimeError(f"benchmark(): the stream {int(<size_t>s._handle):#x} is capturing "
                           f"a graph; benchmark the launch of the finished graph instead")
    streams.append(s)
    contexts.append(ctx)
    ids.append(ctx._device_id)
    return 0


def run(func, tuple args not None, dict kwargs not None, Py_ssize_t n_repeat,
        Py_ssize_t n_warmup, double max_duration, tuple devices, stream):
    """Time ``func``: ``(cpu_times, gpu_times, device_ids)``, the arrays cut to the repeats
    run. The arguments are checked (``utils/_benchmark.py``) except what needs the driver:
    the device ids against the device count, the stream, and ``devices`` against its
    device."""
    cdef list streams = [], contexts = [], ids = []
    cdef Stream s
    cdef Context ctx
    cdef CUcontext current = NULL
    cdef int count
    cdef size_t i
    cdef Py_ssize_t done = 0
    cdef CUresult err = CUDA_SUCCESS
    cdef vector[_Target] targets
    ensure_driver()  # no driver, no GPU: the package's one CUDAError, naming the cause
    if stream is not None:
        _add_target(streams, contexts, ids, as_stream(stream, "benchmark(): stream"))
        if devices is not None and devices != (ids[0],):
            raise ValueError(f"benchmark(): devices={devices!r} does not match the stream, "
                             f"which is on device {ids[0]}: pass devices=None or "
                             f"devices=({ids[0]},)")
    elif devices is not None:
        count = device_count()
        for d in devices:
            if d >= count:
                raise ValueError(
                    f"benchmark(): device id {d} in devices is out of range: this machine has "
                    f"{count} CUDA device{'s' if count != 1 else ''}"
                    + (f" (valid ids: 0 to {count - 1})" if count else ""))
        for d in devices:
            _add_target(streams, contexts, ids, default_stream_for(live_primary_context(d)))
    else:
        # The current device, as Device() means it: that of the context current on this
        # thread, else device 0.
        HANDLE_RETURN(cydriver.cuCtxGetCurrent(&current))
        ctx = context_from_handle(current) if current != NULL else live_primary_context(0)
        _add_target(streams, contexts, ids, default_stream_for(ctx))

    cpu = numpy.empty(n_repeat, dtype=numpy.float64)
    gpu = numpy.empty((len(streams), n_repeat), dtype=numpy.float64)
    targets.resize(len(streams))
    for i in range(targets.size()):
        s = <Stream>streams[i]
        targets[i].stream = s._handle
        targets[i].ctx = (<Context>contexts[i])._handle
        targets[i].start = NULL
        targets[i].end = NULL
    try:
        for i in range(targets.size()):
            _new_event(&targets[i].start, targets[i].ctx)
            _new_event(&targets[i].end, targets[i].ctx)
        done = _timed_loop(func, args, kwargs, n_warmup, n_repeat, max_duration, targets,
                           streams, cpu, gpu)
    finally:
        # On every path; an error of its own is raised only where nothing else is (below).
        err = _destroy_events(targets, contexts)
    check_call(err, "cuEventDestroy")
    return cpu[:done], gpu[:, :done], tuple(ids)
