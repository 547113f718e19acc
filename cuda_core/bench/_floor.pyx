"""The C floor of ``python -m cuda_core.bench``: what a launch costs with nothing of ours
around it, built into every wheel (the other floors of the project's ``benchmarks/`` are in
``cuda_core._bench_floor``, which only a ``CUDA_CORE_BENCH=1`` build has).

* ``launch_loop``: cuLaunchKernelEx in a C loop, no Python inside (the C floor);
* ``python_floor``: a Python-callable function that only releases the GIL and calls
  cuLaunchKernelEx on a launch prepared in advance: the least any Python API that releases the
  GIL around the launch can cost per call (the Python floor);
* ``graph_launch_loop``: cuGraphLaunch in a C loop, and ``graph_python_floor``, its Python
  floor; ``retain_user_object`` gives a graph a user object first, as cuda_core's graphs have
  one.

They call the driver as the launcher does (through cuda.bindings.cydriver), on handles and
argument bytes the caller took from live objects: a measuring tool, private, that trusts its
inputs (an address that is not a live handle of the kind named crashes the process).
"""

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUfunction, CUgraph, CUgraphExec, CUlaunchConfig, CUresult,
                                     CUstream)
from cpython.ref cimport PyObject
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from cuda_core._clock cimport now_ns
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._fastcall cimport METH_FASTCALL, PyCFunction, PyCFunction_NewEx, PyMethodDef

__all__ = []


cdef int pack(list arguments, void*** params, char** storage) except -1:
    """Copy each argument's bytes into one block (16-byte aligned each) and make ``*params``
    the array of their addresses (kernelParams); the caller frees both, also on failure."""
    cdef Py_ssize_t n = len(arguments), i, total = 0
    cdef size_t at = 0
    for a in arguments:
        total += len(<bytes?>a)  # checked once here: the casts below are then safe
    params[0] = <void**>malloc(sizeof(void*) * (n + 1))
    storage[0] = <char*>malloc(total + 16 * n + 1)
    if params[0] == NULL or storage[0] == NULL:
        raise MemoryError()
    for i in range(n):
        at = (at + 15) & ~(<size_t>15)
        memcpy(storage[0] + at, <char*><bytes>arguments[i], len(<bytes>arguments[i]))
        params[0][i] = storage[0] + at
        at += len(<bytes>arguments[i])
    return 0


cdef class _PreparedLaunch:
    """One launch set up once in C: the config, the handle and each argument's bytes (16-byte
    aligned, one block), as kernelParams."""
    cdef CUlaunchConfig lc
    cdef CUfunction func
    cdef void** params
    cdef char* storage

    def __cinit__(self, size_t stream, size_t kernel, tuple grid, tuple block, list arguments):
        pack(arguments, &self.params, &self.storage)
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


cdef class _PreparedGraphLaunch:
    # What graph_python_floor's function launches: an executable graph and a stream.
    cdef CUgraphExec graph_exec
    cdef CUstream stream
    cdef bint keep_gil


cdef _PreparedGraphLaunch _prepared_graph(size_t graph_exec, size_t stream, bint keep_gil):
    cdef _PreparedGraphLaunch p = _PreparedGraphLaunch.__new__(_PreparedGraphLaunch)
    p.graph_exec = <CUgraphExec>graph_exec
    p.stream = <CUstream>stream
    p.keep_gil = keep_gil
    return p


ctypedef fused _Prepared:
    _PreparedLaunch
    _PreparedGraphLaunch


cdef long long _launch_loop(_Prepared p, Py_ssize_t count) except -1:
    """Launch ``p`` ``count`` times back to back in C; the elapsed nanoseconds. One copy per
    kind of launch (a fused type): the loop holds only the driver call, no branch."""
    cdef CUresult err = cydriver.CUDA_SUCCESS
    cdef long long start, stop
    cdef Py_ssize_t i
    with nogil:
        start = now_ns()
        for i in range(count):
            if _Prepared is _PreparedLaunch:
                err = cydriver.cuLaunchKernelEx(&p.lc, p.func, p.params, NULL)
            else:
                err = cydriver.cuGraphLaunch(p.graph_exec, p.stream)
            if err != cydriver.CUDA_SUCCESS:
                break
        stop = now_ns()
    HANDLE_RETURN(err)
    return stop - start


def launch_loop(size_t stream, size_t kernel, tuple grid, tuple block, list arguments,
                Py_ssize_t count):
    """Launch ``kernel`` ``count`` times back to back; return the elapsed nanoseconds.

    ``arguments`` holds each parameter's bytes (as the param holder would pack them).
    """
    return _launch_loop(_PreparedLaunch(stream, kernel, grid, block, arguments), count)


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


cdef void _fastcall_def(PyMethodDef* d, const char* name, void* meth) noexcept:
    """Fill in ``d``: a METH_FASTCALL builtin ``name`` whose C body is ``meth``."""
    d.ml_name = name
    d.ml_meth = <PyCFunction>meth
    d.ml_flags = METH_FASTCALL
    d.ml_doc = NULL


cdef PyMethodDef _python_floor_def
cdef PyMethodDef _python_floor_asking_def
_fastcall_def(&_python_floor_def, "python_floor_launch", <void*>_python_floor_call)
_fastcall_def(&_python_floor_asking_def, "python_floor_launch", <void*>_python_floor_asking_call)


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


cdef object _graph_python_floor_call(object prepared, PyObject** argv, Py_ssize_t nargs):
    # METH_FASTCALL with the prepared graph launch as ``self``: the arguments are passed and
    # not read.
    cdef _PreparedGraphLaunch p = <_PreparedGraphLaunch>prepared
    cdef CUresult err
    if p.keep_gil:
        err = cydriver.cuGraphLaunch(p.graph_exec, p.stream)
    else:
        with nogil:
            err = cydriver.cuGraphLaunch(p.graph_exec, p.stream)
    HANDLE_RETURN(err)


cdef PyMethodDef _graph_python_floor_def
_fastcall_def(&_graph_python_floor_def, "python_floor_graph_launch",
              <void*>_graph_python_floor_call)


def graph_python_floor(size_t graph_exec, size_t stream, bint keep_gil=False):
    """A function that launches ``graph_exec`` on ``stream`` once per call, whatever arguments
    it is given: a builtin-function call whose body releases the GIL around one cuGraphLaunch
    (or, with ``keep_gil``, keeps it). The least a Python API that releases the GIL around a
    graph launch can cost per call, as :func:`python_floor` is for kernel launches."""
    return PyCFunction_NewEx(&_graph_python_floor_def,
                             _prepared_graph(graph_exec, stream, keep_gil), __name__)


def graph_launch_loop(size_t graph_exec, size_t stream, Py_ssize_t count):
    """Launch an executable graph ``count`` times back to back; return the elapsed ns."""
    return _launch_loop(_prepared_graph(graph_exec, stream, False), count)


cdef void _nothing(void* data) noexcept nogil:
    pass


def retain_user_object(size_t graph):
    """Give ``graph`` a CUDA user object (a destructor that does nothing), as cuda_core gives
    each graph whose nodes use objects of its own: the graph-replay floor with one shows what
    the driver's per-launch handling of a retained user object costs."""
    cdef cydriver.CUuserObject obj = NULL
    HANDLE_RETURN(cydriver.cuUserObjectCreate(&obj, NULL, <cydriver.CUhostFn>_nothing, 1,
                                              cydriver.CU_USER_OBJECT_NO_DESTRUCTOR_SYNC))
    HANDLE_RETURN(cydriver.cuGraphRetainUserObject(<CUgraph>graph, obj, 1,
                                                   cydriver.CU_GRAPH_USER_OBJECT_MOVE))
