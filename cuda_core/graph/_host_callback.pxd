from cpython.ref cimport Py_DECREF, Py_INCREF

from cuda.bindings.cydriver cimport CUDA_HOST_NODE_PARAMS, CUDA_HOST_NODE_PARAMS_v2, CUstream


ctypedef void (*c_host_fn)(void* data) noexcept nogil  # a ctypes CFUNCTYPE(None, c_void_p)


cdef class _HostCall:
    # What one captured host node runs: a Python callable (fn), or a ctypes function (its
    # address in c_fn, called with data; fn and user_data keep both alive).
    cdef object fn
    cdef object user_data
    cdef c_host_fn c_fn
    cdef void* data


cdef _HostCall make_host_call(object fn, object user_data, str what)
cdef int enqueue_host_call(CUstream stream, _HostCall call) except -1
# The trampoline of a host node of a GraphDefinition: ``arg`` is its _HostCall, which the
# Graph holds (``_graph``) for as long as a launch may run it (no reference per launch).
cdef void run_kept_host_call(void* arg) noexcept with gil
# The deferred release: ``release_later(obj)``, callable from any thread without the GIL (a
# host function, a driver thread), gives up one reference to ``obj``; the main thread drops it
# (Py_AddPendingCall), or whoever calls ``drain_released()`` (with the GIL) first.
cdef void release_later(void* obj) noexcept nogil
cdef int drain_released() noexcept

# The host node parameters of the node-level calls (v1) and of CUgraphNodeParams.host (v2).
ctypedef fused HostNodeParams:
    CUDA_HOST_NODE_PARAMS
    CUDA_HOST_NODE_PARAMS_v2

# The call of ``fn`` (make_host_call) and the host node parameters, zeroed first, that run it
# through run_kept_host_call: the caller keeps the call alive as long as the node can run it.
cdef _HostCall host_node_params(HostNodeParams* params, object fn, object user_data, str what)


# One reference to each _HostCall of a Graph for each launch, given back by the trampoline
# after the call (or at once when the launch is refused): a launch queued before its Graph
# was closed still finds its callbacks. Inline: Graph.launch calls them on every replay.
cdef inline int hold_for_launch(list calls) except -1:
    for call in calls:
        Py_INCREF(call)
    return 0


cdef inline int release_after_failed_launch(list calls) except -1:
    for call in calls:
        Py_DECREF(call)
    return 0
