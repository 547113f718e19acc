"""The floors for launch benchmarks: what a launch costs with nothing of ours around it.

* ``launch_loop``: cuLaunchKernelEx in a C loop, no Python inside (the C floor);
* ``python_floor``: a Python-callable function that only releases the GIL and calls
  cuLaunchKernelEx on a launch prepared in advance: the least any Python API that releases the
  GIL around the launch can cost per call (the Python floor);
* ``graph_launch_loop``: cuGraphLaunch in a C loop.

Built as ``cuda_core._bench_floor``, beside the package's modules, so that they call the driver
exactly as the launcher does (through cuda.bindings.cydriver) on the same kernel, stream and
argument bytes. Only ``benchmarks/`` uses it, and only a build with ``CUDA_CORE_BENCH=1`` has
it (benchmarks/README.md); the user wheel leaves it out.
"""

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUfunction, CUgraphExec, CUlaunchConfig, CUresult, CUstream
from cpython.ref cimport PyObject
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._fastcall cimport METH_FASTCALL, PyCFunction, PyCFunction_NewEx, PyMethodDef

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


cdef class _PreparedLaunch:
    """One launch set up once in C: the config, the handle and each argument's bytes (16-byte
    aligned, one block), as kernelParams."""
    cdef CUlaunchConfig lc
    cdef CUfunction func
    cdef void** params
    cdef char* storage

    def __cinit__(self, size_t stream, size_t kernel, tuple grid, tuple block, list arguments):
        cdef Py_ssize_t n = len(arguments), i, total = 0
        cdef size_t at = 0
        for a in arguments:
            total += len(<bytes?>a)  # checked once here: the casts below are then safe
        self.params = <void**>malloc(sizeof(void*) * (n + 1))
        self.storage = <char*>malloc(total + 16 * n + 1)
        if self.params == NULL or self.storage == NULL:
            raise MemoryError()
        for i in range(n):
            at = (at + 15) & ~(<size_t>15)
            memcpy(self.storage + at, <char*><bytes>arguments[i], len(<bytes>arguments[i]))
            self.params[i] = self.storage + at
            at += len(<bytes>arguments[i])
        self.lc.gridDimX, self.lc.gridDimY, self.lc.gridDimZ = grid
        self.lc.blockDimX, self.lc.blockDimY, self.lc.blockDimZ = block
        self.lc.sharedMemBytes = 0
        self.lc.hStream = <CUstream>stream
        self.lc.attrs = NULL
        self.lc.numAttrs = 0
        self.func = <CUfunction>kernel

    def __dealloc__(self):
        free(self.params)
        free(self.storage)


def launch_loop(size_t stream, size_t kernel, tuple grid, tuple block, list arguments,
                Py_ssize_t count):
    """Launch ``kernel`` ``count`` times back to back; return the elapsed nanoseconds.

    ``arguments`` holds each parameter's bytes (as the param holder would pack them).
    """
    cdef _PreparedLaunch p = _PreparedLaunch(stream, kernel, grid, block, arguments)
    cdef CUresult err = cydriver.CUDA_SUCCESS
    cdef long long start, stop
    cdef Py_ssize_t i
    with nogil:
        start = _now_ns()
        for i in range(count):
            err = cydriver.cuLaunchKernelEx(&p.lc, p.func, p.params, NULL)
            if err != cydriver.CUDA_SUCCESS:
                break
        stop = _now_ns()
    HANDLE_RETURN(err)
    return stop - start


cdef object _python_floor_call(object prepared, PyObject** argv, Py_ssize_t nargs):
    # METH_FASTCALL with the prepared launch as ``self``: the arguments are passed (so the
    # interpreter's work for them is counted) and not read.
    cdef _PreparedLaunch p = <_PreparedLaunch>prepared
    cdef CUresult err
    with nogil:
        err = cydriver.cuLaunchKernelEx(&p.lc, p.func, p.params, NULL)
    HANDLE_RETURN(err)


cdef object _python_floor_asking_call(object prepared, PyObject** argv, Py_ssize_t nargs):
    # The same, for a first argument that is a __cuda_stream__ object: it is asked for its
    # stream, whose address is read, as any consumer of the protocol must at each call.
    cdef _PreparedLaunch p = <_PreparedLaunch>prepared
    cdef CUresult err
    cdef tuple answer = (<object>argv[0]).__cuda_stream__()
    cdef size_t address = answer[1]
    if <CUstream>address != p.lc.hStream:
        raise ValueError("the __cuda_stream__ object names another stream than the prepared one")
    with nogil:
        err = cydriver.cuLaunchKernelEx(&p.lc, p.func, p.params, NULL)
    HANDLE_RETURN(err)


cdef PyMethodDef _python_floor_def
_python_floor_def.ml_name = "python_floor_launch"
_python_floor_def.ml_meth = <PyCFunction><void*>_python_floor_call
_python_floor_def.ml_flags = METH_FASTCALL
_python_floor_def.ml_doc = NULL

cdef PyMethodDef _python_floor_asking_def
_python_floor_asking_def.ml_name = "python_floor_launch"
_python_floor_asking_def.ml_meth = <PyCFunction><void*>_python_floor_asking_call
_python_floor_asking_def.ml_flags = METH_FASTCALL
_python_floor_asking_def.ml_doc = NULL


def python_floor(size_t stream, size_t kernel, tuple grid, tuple block, list arguments,
                 bint ask_stream=False):
    """A function that launches ``kernel`` once per call, whatever arguments it is given.

    Each call is a builtin-function call (arguments as a C array, no tuple built) whose body
    releases the GIL around one cuLaunchKernelEx on the launch prepared here, as
    :func:`launch_loop` prepares it. Nothing is converted, checked or looked up: its time per
    call is the least any Python API that releases the GIL around the launch can cost, so a
    library's distance to the C floor splits into what the Python call itself costs (this
    function) and what the library adds. With ``ask_stream``, the first argument is a
    ``__cuda_stream__`` object, called at each call and its address read (and compared with
    the prepared stream's): the least a launch on such an object can cost.
    """
    return PyCFunction_NewEx(&_python_floor_asking_def if ask_stream else &_python_floor_def,
                             _PreparedLaunch(stream, kernel, grid, block, arguments), __name__)


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
