"""The floor for launch benchmarks: cuLaunchKernelEx in a C loop, no Python inside.

Built with the package so that it calls the driver exactly as the launcher does (through
cuda.bindings.cydriver) on the same kernel, stream and argument bytes. Private: only
``benchmarks/`` uses it.
"""

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUfunction, CUgraphExec, CUlaunchConfig, CUresult, CUstream
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from cuda_core._errors cimport HANDLE_RETURN

__all__ = []


cdef extern from "<time.h>" nogil:
    ctypedef struct timespec:
        long tv_sec
        long tv_nsec
    int clock_gettime(int clk, timespec* ts)
    enum: CLOCK_MONOTONIC


cdef inline long long _now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <long long>ts.tv_sec * 1000000000LL + ts.tv_nsec


def launch_loop(size_t stream, size_t kernel, tuple grid, tuple block, list arguments,
                Py_ssize_t count):
    """Launch ``kernel`` ``count`` times back to back; return the elapsed nanoseconds.

    ``arguments`` holds each parameter's bytes (as the param holder would pack them).
    """
    cdef CUlaunchConfig lc
    cdef Py_ssize_t n = len(arguments), i, total = 0
    cdef CUresult err = cydriver.CUDA_SUCCESS
    cdef long long start, stop
    for a in arguments:
        total += len(<bytes>a)
    cdef void** params = <void**>malloc(sizeof(void*) * (n + 1))
    cdef char* storage = <char*>malloc(total + 16 * n + 1)
    cdef size_t at = 0
    if params == NULL or storage == NULL:
        free(params)
        free(storage)
        raise MemoryError()
    try:
        for i in range(n):
            at = (at + 15) & ~(<size_t>15)
            memcpy(storage + at, <char*><bytes>arguments[i], len(<bytes>arguments[i]))
            params[i] = storage + at
            at += len(<bytes>arguments[i])
        lc.gridDimX, lc.gridDimY, lc.gridDimZ = grid
        lc.blockDimX, lc.blockDimY, lc.blockDimZ = block
        lc.sharedMemBytes = 0
        lc.hStream = <CUstream>stream
        lc.attrs = NULL
        lc.numAttrs = 0
        with nogil:
            start = _now_ns()
            for i in range(count):
                err = cydriver.cuLaunchKernelEx(&lc, <CUfunction>kernel, params, NULL)
                if err != cydriver.CUDA_SUCCESS:
                    break
            stop = _now_ns()
        HANDLE_RETURN(err)
        return stop - start
    finally:
        free(params)
        free(storage)


def graph_launch_loop(size_t graph_exec, size_t stream, Py_ssize_t count):
    """Launch an executable graph ``count`` times back to back; return the elapsed ns."""
    cdef CUresult err = cydriver.CUDA_SUCCESS
    cdef long long start, stop
    cdef Py_ssize_t i
    with nogil:
        start = _now_ns()
        for i in range(count):
            err = cydriver.cuGraphLaunch(<CUgraphExec>graph_exec, <CUstream>stream)
            if err != cydriver.CUDA_SUCCESS:
                break
        stop = _now_ns()
    HANDLE_RETURN(err)
    return stop - start
