from cuda.bindings.cydriver cimport (CUDA_HOST_NODE_PARAMS, CUDA_HOST_NODE_PARAMS_v2, CUstream,
                                     CUuserObject)


ctypedef void (*c_host_fn)(void* data) noexcept nogil  # a ctypes CFUNCTYPE(None, c_void_p)


cdef class _HostCall:
    # What one host node runs: a Python callable (fn), or a ctypes function (its address in
    # c_fn, called with data; fn and user_data keep both alive). Whoever adds the node keeps
    # the call alive as long as a graph can run it (the graph's user object, own_uses).
    cdef object fn
    cdef object user_data
    cdef c_host_fn c_fn
    cdef void* data


cdef _HostCall make_host_call(object fn, object user_data, str what)
# Queue ``call`` on the capturing ``stream`` (a host node); the caller keeps it alive.
cdef int enqueue_host_call(CUstream stream, _HostCall call) except -1
# The trampoline of every host node: ``arg`` is its _HostCall, alive while the node can run.
# Skipped once the interpreter is shutting down (see the .pyx).
cdef void run_host_call(void* arg) noexcept nogil
# The deferred release: ``release_later(obj)``, callable from any thread without the GIL (a
# host function, a driver thread), gives up one reference to ``obj``; the main thread drops it
# (Py_AddPendingCall), or whoever calls ``drain_released()`` (with the GIL) first.
cdef void release_later(void* obj) noexcept nogil
cdef int drain_released() noexcept
# A CUDA user object owning one new reference to ``obj``, which its destructor gives back
# through release_later (the driver runs it on a thread of its own once the last graph,
# clone or executable graph holding the user object is gone and their launches are done).
cdef CUuserObject new_owner(object obj) except NULL

# The host node parameters of the node-level calls (v1) and of CUgraphNodeParams.host (v2).
ctypedef fused HostNodeParams:
    CUDA_HOST_NODE_PARAMS
    CUDA_HOST_NODE_PARAMS_v2

# The call of ``fn`` (make_host_call) and the host node parameters, zeroed first, that run it
# through run_host_call: the caller keeps the call alive as long as the node can run it.
cdef _HostCall host_node_params(HostNodeParams* params, object fn, object user_data, str what)
