"""Host callbacks in graphs: the ``_HostCall`` a host node runs, and the ``with gil``
trampolines the driver calls it through.

A captured ``_HostCall`` is kept alive by the builders and Graphs of its capture, and once more
by every launch of a Graph, from ``Graph.launch`` until the node has run (see
``hold_for_launch`` in the ``.pxd``): a Graph closed, or dropped, with launches still queued
keeps its callbacks until they are done. A host node of a GraphDefinition runs through
``run_kept_host_call`` instead: the Graph holds its ``_HostCall`` (``_graph``).
"""

import ctypes

from cpython.bytes cimport PyBytes_AS_STRING
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.string cimport memset as c_memset

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUhostFn, CUstream

from cuda_core._checks cimport check_address
from cuda_core._errors cimport HANDLE_RETURN

__all__ = []


cdef extern from *:
    """
    #include <mutex>
    #include <vector>
    // Objects given up by host functions (and the trampolines), waiting for the main thread.
    // Allocated once and never destroyed: a host function may run while the process exits,
    // after static destructors.
    struct cuda_core_Released {
        std::mutex lock;
        std::vector<PyObject*> items;
        bool drain_pending = false;
    };
    static cuda_core_Released* cuda_core_released = new cuda_core_Released();

    static int cuda_core_drain_released(void*) {
        std::vector<PyObject*> items;
        {
            std::lock_guard<std::mutex> guard(cuda_core_released->lock);
            items.swap(cuda_core_released->items);
            cuda_core_released->drain_pending = false;
        }
        for (PyObject* obj : items) {
            Py_DECREF(obj);
        }
        return 0;
    }

    // Any thread, no GIL, no CUDA calls allowed: queue the reference for the main thread.
    static void cuda_core_release_later(void* obj) {
        if (!Py_IsInitialized()) {
            return;  // the interpreter is gone: so is what the reference was to
        }
        bool schedule;
        {
            std::lock_guard<std::mutex> guard(cuda_core_released->lock);
            cuda_core_released->items.push_back(static_cast<PyObject*>(obj));
            schedule = !cuda_core_released->drain_pending;
            cuda_core_released->drain_pending = true;
        }
        // Refused when the interpreter's queue of pending calls is full or it is going away:
        // the objects stay queued, and the next call here (or drain_released, which the
        // graph calls also call) tries again.
        if (schedule && Py_AddPendingCall(cuda_core_drain_released, NULL) != 0) {
            std::lock_guard<std::mutex> guard(cuda_core_released->lock);
            cuda_core_released->drain_pending = false;
        }
    }
    """
    int _drain "cuda_core_drain_released"(void* unused) noexcept
    void _release_later "cuda_core_release_later"(void* obj) noexcept nogil


cdef void release_later(void* obj) noexcept nogil:
    _release_later(obj)


cdef int drain_released() noexcept:
    return _drain(NULL)


cdef class _HostCall:
    """What one captured host node runs (see the module docstring); made by
    make_host_call."""


cdef void _run_host_call(void* arg) noexcept with gil:
    # On a driver thread. An exception cannot reach anyone: Cython reports it through
    # sys.unraisablehook, naming this function.
    cdef _HostCall call = <_HostCall>arg
    cdef c_host_fn c_fn = call.c_fn
    cdef void* data = call.data
    try:
        if c_fn != NULL:
            with nogil:
                c_fn(data)
        else:
            call.fn()
    finally:
        # The reference the launch took for this run: given back on the main thread, as it
        # may be the last one (a Graph closed with launches queued), and what it frees may
        # call CUDA, which a host function may not.
        release_later(arg)


cdef void run_kept_host_call(void* arg) noexcept with gil:
    # As _run_host_call, without a reference to give back.
    Py_INCREF(<object>arg)  # taken back by _run_host_call
    _run_host_call(arg)


cdef _HostCall make_host_call(object fn, object user_data, str what):
    """The call of ``fn``: a Python callable taking no arguments, or a ctypes
    ``CFUNCTYPE(None, c_void_p)`` function called with ``user_data`` (None, an address, or a
    bytes-like object, copied, whose copy's buffer is passed)."""
    cdef _HostCall call = _HostCall.__new__(_HostCall)
    cdef size_t address
    if isinstance(fn, ctypes._CFuncPtr):
        if fn.restype is not None or tuple(fn.argtypes or ()) != (ctypes.c_void_p,):
            raise TypeError(f"{what}: a ctypes fn must be declared CFUNCTYPE(None, c_void_p) "
                            f"(restype {fn.restype!r}, argtypes {fn.argtypes!r})")
        if user_data is None:
            call.data = NULL
        elif isinstance(user_data, int) and type(user_data) is not bool:
            call.data = <void*>check_address(user_data, f"{what}: user_data")
        else:
            try:
                user_data = bytes(memoryview(user_data))  # a copy: the caller may change it
            except TypeError:
                raise TypeError(f"{what}: user_data must be an int address, a bytes-like "
                                f"object or None, not {type(user_data).__name__}") from None
            call.data = <void*>PyBytes_AS_STRING(user_data)
        address = ctypes.cast(fn, ctypes.c_void_p).value
        if address is None:
            raise ValueError(f"{what}: fn is a NULL ctypes function pointer")
        call.c_fn = <c_host_fn>address
        call.user_data = user_data
    elif callable(fn):
        if user_data is not None:
            raise ValueError(f"{what}: user_data is for ctypes functions; a Python callable "
                             f"takes no arguments (bind them with a closure or "
                             f"functools.partial)")
    else:
        raise TypeError(f"{what}: fn must be callable, not {type(fn).__name__}")
    call.fn = fn
    return call


cdef _HostCall host_node_params(HostNodeParams* params, object fn, object user_data, str what):
    cdef _HostCall call = make_host_call(fn, user_data, what)
    c_memset(params, 0, sizeof(HostNodeParams))
    params.fn = <CUhostFn>run_kept_host_call
    params.userData = <void*>call
    return call


cdef int enqueue_host_call(CUstream stream, _HostCall call) except -1:
    """Queue ``call`` on ``stream`` (captured: a host node). The caller keeps ``call`` alive
    as long as the node can run."""
    HANDLE_RETURN(cydriver.cuLaunchHostFunc(stream, _run_host_call, <void*>call))
    return 0
