"""Host callbacks in graphs: the ``_HostCall`` a host node runs, the ``with gil`` trampoline
the driver calls it through, and how Python objects are owned by the driver's graphs.

What a graph's nodes use (a host node's ``_HostCall``, a kernel node's Kernel and arguments,
an event, a memset's Buffer) is owned by a CUDA user object (``new_owner``) that the graph
retains (``_definition.own_uses``). The driver carries user objects into clones, child graph
copies and executable graphs, and keeps them until the last of those is destroyed and its
launches are done, whoever made the clone (another library, through ``.handle``). Then it runs
the destructor on a thread of its own, where CUDA may not be called and the GIL is not held:
the destructor only queues the reference, and the main thread drops it (``release_later``).
"""

import atexit
import ctypes

from cpython.bytes cimport PyBytes_AS_STRING
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.string cimport memset as c_memset
from posix.unistd cimport usleep

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUDA_SUCCESS, CUhostFn, CUresult, CUstream, CUuserObject

from cuda_core._checks cimport check_address
from cuda_core._clock cimport now_ns
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


cdef CUuserObject new_owner(object obj) except NULL:
    cdef CUuserObject owner = NULL
    cdef CUresult err
    Py_INCREF(obj)  # the user object's reference
    err = cydriver.cuUserObjectCreate(&owner, <void*>obj, <CUhostFn>release_later, 1,
                                      cydriver.CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)
    if err != CUDA_SUCCESS:
        Py_DECREF(obj)
        HANDLE_RETURN(err)
    return owner


cdef class _HostCall:
    """What one host node runs (see the module docstring); made by make_host_call."""


cdef extern from *:
    """
    #include <atomic>
    // Host calls and the interpreter's exit. A call that takes the GIL once the interpreter is
    // finalizing never returns: the thread ends (3.12 and earlier) or blocks for good (3.14),
    // and with it the driver's thread of host functions, so that whatever then waits on the
    // stream (a free, a sync in a finalizer) hangs the exit. A call that passed a check of
    // Py_IsFinalizing and waits for the GIL meanwhile is caught the same way. So an atexit
    // hook (which runs before finalization) closes the gate, then waits, without the GIL, for
    // the calls already through it; a call finds the gate closed and is skipped.
    // Sequentially consistent: either a call sees the gate closed, or the hook sees the call.
    static std::atomic<int> cuda_core_host_gate_closed{0};
    static std::atomic<long> cuda_core_host_calls_inside{0};

    static int cuda_core_host_enter(void) {
        cuda_core_host_calls_inside.fetch_add(1);
        if (cuda_core_host_gate_closed.load() ||
    #if PY_VERSION_HEX >= 0x030D0000
                Py_IsFinalizing()
    #else
                _Py_IsFinalizing()
    #endif
           ) {
            cuda_core_host_calls_inside.fetch_sub(1);
            return 0;
        }
        return 1;
    }
    static void cuda_core_host_leave(void) { cuda_core_host_calls_inside.fetch_sub(1); }
    static void cuda_core_host_close_gate(void) { cuda_core_host_gate_closed.store(1); }
    static long cuda_core_host_calls(void) { return cuda_core_host_calls_inside.load(); }
    """
    bint _host_enter "cuda_core_host_enter"() noexcept nogil
    void _host_leave "cuda_core_host_leave"() noexcept nogil
    void _host_close_gate "cuda_core_host_close_gate"() noexcept nogil
    long _host_calls "cuda_core_host_calls"() noexcept nogil


# How long the exit waits for host calls already running (a callable that never returns must
# not hang the exit either).
cdef long long _EXIT_WAIT_NS = 10 * 1000000000


def _close_host_calls_at_exit():
    """The atexit hook (see the C block above): host calls that come due from here on are
    skipped; those already running may finish (for up to ``_EXIT_WAIT_NS``), with the GIL free
    for them."""
    cdef long long deadline = now_ns() + _EXIT_WAIT_NS
    _host_close_gate()
    with nogil:
        while _host_calls() > 0 and now_ns() < deadline:
            usleep(1000)


atexit.register(_close_host_calls_at_exit)


cdef void run_host_call(void* arg) noexcept nogil:
    # On a driver thread, while the graph that runs the node holds the call. Skipped once the
    # interpreter has begun to exit (the C block above says why); a ctypes function too, since
    # ctypes takes the GIL around a Python one.
    if _host_enter():
        _run_host_call(arg)
        _host_leave()


cdef void _run_host_call(void* arg) noexcept with gil:
    # An exception cannot reach anyone: Cython reports it through sys.unraisablehook, naming
    # this function.
    cdef _HostCall call = <_HostCall>arg
    cdef c_host_fn c_fn = call.c_fn
    if c_fn != NULL:
        with nogil:
            c_fn(call.data)
    else:
        call.fn()


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
    params.fn = <CUhostFn>run_host_call
    params.userData = <void*>call
    return call


cdef int enqueue_host_call(CUstream stream, _HostCall call) except -1:
    cdef CUresult err
    with nogil:  # blocks while the stream's queue is full (DESIGN.md, the calls that wait)
        err = cydriver.cuLaunchHostFunc(stream, <CUhostFn>run_host_call, <void*>call)
    HANDLE_RETURN(err)
    return 0
