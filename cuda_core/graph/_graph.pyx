"""Graph: an instantiated, launchable graph (the ``CUgraphExec``), made from a GraphBuilder's
capture or a GraphDefinition by ``instantiate`` and changed in place by ``update_graph``; the
options both of them take (``instantiate_params``, ``dot_print``).

What a graph's nodes use (kernels, Buffers passed as arguments or operands, events, callbacks)
is handed to the driver as one CUDA user object per instantiation or whole-graph update: the
``CUgraphExec`` holds it until it is destroyed and its queued launches have finished, so a
Graph closed (or a definition changed or closed) while launches run never frees what they
use, and ``launch`` does no reference counting. The user object's destructor runs on a driver
thread, where CUDA may not be called and the last reference to a Buffer would free memory: it
only queues the object, and the queue is emptied on the main thread (``Py_AddPendingCall``).
"""

from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.string cimport memset

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUDA_GRAPH_INSTANTIATE_PARAMS, CUDA_SUCCESS, CUcontext,
                                     CUgraph, CUgraphExec, CUgraphNode, CUgraphNodeType,
                                     CUhostFn, CUresult,
                                     CUuserObject)

from cuda_core._context cimport Context, ContextGuard, enter_context, exit_context
from cuda_core._errors cimport HANDLE_RETURN, check_call, make_driver_error
from cuda_core._resource cimport Resource
from cuda_core._stream cimport Stream, as_stream
from cuda_core.graph._host_callback cimport hold_for_launch, release_after_failed_launch

import os

from cuda.bindings import driver as _driver_py

from cuda_core._options import check_or_create_options
from cuda_core.graph._graph_options import GraphCompleteOptions, GraphDebugPrintOptions

__all__ = ["Graph"]


cdef extern from *:
    """
    #include <mutex>
    #include <vector>
    // Objects whose last CUDA user-object reference went away, waiting for the main thread.
    static std::mutex cuda_core_released_lock;
    static std::vector<PyObject*> cuda_core_released;
    static bool cuda_core_drain_pending = false;

    static int cuda_core_drain_released(void*) {
        std::vector<PyObject*> items;
        {
            std::lock_guard<std::mutex> guard(cuda_core_released_lock);
            items.swap(cuda_core_released);
            cuda_core_drain_pending = false;
        }
        for (PyObject* obj : items) {
            Py_DECREF(obj);
        }
        return 0;
    }

    // A user object's destructor: any thread, no GIL, no CUDA calls allowed.
    static void cuda_core_release_later(void* obj) {
        bool schedule;
        {
            std::lock_guard<std::mutex> guard(cuda_core_released_lock);
            cuda_core_released.push_back(static_cast<PyObject*>(obj));
            schedule = !cuda_core_drain_pending;
            cuda_core_drain_pending = true;
        }
        // Refused only while the interpreter is going away: the objects then stay queued
        // (the next drain, if any, releases them).
        if (schedule && Py_AddPendingCall(cuda_core_drain_released, NULL) != 0) {
            std::lock_guard<std::mutex> guard(cuda_core_released_lock);
            cuda_core_drain_pending = false;
        }
    }
    """
    int drain_released "cuda_core_drain_released"(void* unused) noexcept
    void release_later "cuda_core_release_later"(void* obj) noexcept nogil


# Executable-node updates replaced this many objects that a launch may still use: the next
# such update waits for the context to be idle and lets them go (bounds the memory of an
# update-and-launch loop; a whole-graph update or close() also lets them go).
cdef Py_ssize_t _RETIRED_LIMIT = 1024

cdef dict _INSTANTIATE_RESULTS = {
    cydriver.CUDA_GRAPH_INSTANTIATE_ERROR: "the graph could not be instantiated",
    cydriver.CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE: "the graph's structure is invalid (a "
        "cycle, or an allocation freed twice or not at all in a way instantiation rejects)",
    cydriver.CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED: "a node's operation is not "
        "supported (for example with device_launch)",
    cydriver.CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED: "the graph's nodes span "
        "several contexts",
    cydriver.CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED: "a condition created for the "
        "graph is used by no conditional node",
}

cdef dict _UPDATE_RESULTS = {
    cydriver.CU_GRAPH_EXEC_UPDATE_ERROR: "the update was refused",
    cydriver.CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED: "the topology changed (nodes or "
        "edges added or removed)",
    cydriver.CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED: "a node's type changed",
    cydriver.CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED: "a kernel node's function changed in "
        "a way that cannot be updated",
    cydriver.CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED: "a node's parameters changed in a "
        "way that cannot be updated",
    cydriver.CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED: "something about the new graph is not "
        "supported by updates",
    cydriver.CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE: "a kernel node's "
        "function changed to one of another context or with dynamic parallelism",
    cydriver.CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED: "a node's attributes changed in a "
        "way that cannot be updated",
}


cdef dict _DOT_FLAGS = {
    "verbose": cydriver.CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE,
    "runtime_types": cydriver.CU_GRAPH_DEBUG_DOT_FLAGS_RUNTIME_TYPES,
    "kernel_node_params": cydriver.CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_PARAMS,
    "memcpy_node_params": cydriver.CU_GRAPH_DEBUG_DOT_FLAGS_MEMCPY_NODE_PARAMS,
    "memset_node_params": cydriver.CU_GRAPH_DEBUG_DOT_FLAGS_MEMSET_NODE_PARAMS,
    "host_node_params": cydriver.CU_GRAPH_DEBUG_DOT_FLAGS_HOST_NODE_PARAMS,
    "event_node_params": cydriver.CU_GRAPH_DEBUG_DOT_FLAGS_EVENT_NODE_PARAMS,
    "ext_semas_signal_node_params": cydriver.CU_GRAPH_DEBUG_DOT_FLAGS_EXT_SEMAS_SIGNAL_NODE_PARAMS,
    "ext_semas_wait_node_params": cydriver.CU_GRAPH_DEBUG_DOT_FLAGS_EXT_SEMAS_WAIT_NODE_PARAMS,
    "kernel_node_attributes": cydriver.CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_ATTRIBUTES,
    "handles": cydriver.CU_GRAPH_DEBUG_DOT_FLAGS_HANDLES,
    "mem_alloc_node_params": cydriver.CU_GRAPH_DEBUG_DOT_FLAGS_MEM_ALLOC_NODE_PARAMS,
    "mem_free_node_params": cydriver.CU_GRAPH_DEBUG_DOT_FLAGS_MEM_FREE_NODE_PARAMS,
    "batch_mem_op_node_params": cydriver.CU_GRAPH_DEBUG_DOT_FLAGS_BATCH_MEM_OP_NODE_PARAMS,
    "extra_topo_info": cydriver.CU_GRAPH_DEBUG_DOT_FLAGS_EXTRA_TOPO_INFO,
    "conditional_node_params": cydriver.CU_GRAPH_DEBUG_DOT_FLAGS_CONDITIONAL_NODE_PARAMS,
}


cdef int _raise_refused(CUresult err, str what, dict reasons, int result) except -1:
    """The driver's error for a refused instantiation or update, with the reason its result
    code gives (``reasons``), when there is one."""
    reason = reasons.get(result)
    raise make_driver_error(err, what + (f": {reason}" if reason else ""))


cdef class Graph(Resource):
    """An executable graph: the captured work, launched as one unit.

    Not constructible: use :meth:`GraphBuilder.complete`.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Graph objects cannot be instantiated directly; use "
                           "GraphBuilder.complete() or GraphDefinition.instantiate()")

    cdef int _release(self) except -1:
        # Launches already queued complete: the user objects of the instantiation hold what
        # they use, and their host callbacks hold themselves (launch). What executable-node
        # updates passed has no such holder: when a launch may use it, wait until it is done.
        if self._handle != NULL:
            check_call(cydriver.cuGraphExecDestroy(self._handle), "cuGraphExecDestroy")
        if (self._held or self._retired) and self._launches:
            _wait_idle(self)
        self._held = None
        self._retired = None
        drain_released(NULL)
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._handle

    def launch(self, stream):
        """Launch the graph on ``stream`` (a :class:`Stream` or any ``__cuda_stream__``
        object), GIL released.

        .. note:: Calls ``cuGraphLaunch``.
        """
        cdef Stream s
        cdef CUresult err
        cdef CUcontext ctx
        cdef ContextGuard guard
        self._check_open()
        if type(stream) is Stream:
            s = <Stream>stream
        else:
            s = as_stream(stream, "Graph.launch()")
        s._check_open()
        ctx = s._bind_ctx
        if ctx != NULL:  # a bound default stream: its device's context, for this call
            enter_context(guard, ctx)
        if self._keep:
            hold_for_launch(self._keep)
        self._launches += 1
        with nogil:
            err = cydriver.cuGraphLaunch(self._handle, s._handle)
            exit_context(guard)
        if err == cydriver.CUDA_ERROR_INVALID_CONTEXT and ctx == NULL and s._ctx is not None:
            # No context current on this thread at all: the stream's, for this call.
            try:
                enter_context(guard, s._ctx._handle)
            except BaseException:
                if self._keep:
                    release_after_failed_launch(self._keep)
                raise
            with nogil:
                err = cydriver.cuGraphLaunch(self._handle, s._handle)
            exit_context(guard)
        if err != CUDA_SUCCESS:
            if self._keep:
                release_after_failed_launch(self._keep)
            HANDLE_RETURN(err)

    def upload(self, stream):
        """Upload the graph's device resources on ``stream`` ahead of its first launch.

        .. note:: Calls ``cuGraphUpload``.
        """
        cdef Stream s
        cdef CUresult err
        cdef ContextGuard guard
        self._check_open()
        s = as_stream(stream, "Graph.upload()")
        s._check_open()
        enter_context(guard, self._ctx._handle)
        with nogil:
            err = cydriver.cuGraphUpload(self._handle, s._handle)
        HANDLE_RETURN(err)

    def update(self, source):
        """Replace the graph's node parameters with those of another graph of the same
        topology (for example the same launches with new arguments), in place.

        .. note:: Calls ``cuGraphExecUpdate``.

        Parameters
        ----------
        source : GraphBuilder or GraphDefinition
            A builder whose building has ended, or a definition. The Graph holds what its
            nodes use from then on; what the old parameters used is let go once the launches
            queued before are done.

        Raises
        ------
        CUDAError
            When the driver refuses the update; the message says what differs.
        """
        self._check_open()
        # The builder's module cimports this one: its half (the type check and the source's
        # graph, then update_graph) is imported when it is needed.
        from cuda_core.graph._builder import _update_from

        _update_from(self, source)

    def __getitem__(self, node):
        """The executable view of ``node`` (a :class:`GraphNode` of the definition this Graph
        was instantiated or last updated from): an :class:`ExecutableKernelNode` and so on by
        the node's type, whose ``update()`` changes this Graph only."""
        self._check_open()
        from cuda_core.graph._exec_nodes import view_for  # _exec_nodes cimports this module

        return view_for(self, node)

    @property
    def handle(self):
        """The ``cuda.bindings.driver.CUgraphExec`` (``int(graph.handle)`` is its address)."""
        self._check_open()
        return _driver_py.CUgraphExec(<size_t>self._handle)

    def close(self):
        """Destroy the executable graph. Idempotent; launches already queued complete, and
        what they use stays alive until they have.

        .. note:: Calls ``cuGraphExecDestroy``.
        """
        Resource.close(self)

    def __repr__(self):
        if self._closed:
            return "<Graph (closed)>"
        return f"<Graph handle={<size_t>self._handle:#x}>"


cdef object instantiate_params(object options, str what,
                               CUDA_GRAPH_INSTANTIATE_PARAMS* params):
    """The flags of ``options`` in ``params`` (zeroed first); returns the options object."""
    cdef Stream upload
    opts = check_or_create_options(GraphCompleteOptions, options, f"{what} options")
    memset(params, 0, sizeof(params[0]))
    if opts.auto_free_on_launch:
        params.flags |= cydriver.CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
    if opts.device_launch:
        params.flags |= cydriver.CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH
    if opts.use_node_priority:
        params.flags |= cydriver.CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY
    if opts.upload_stream is not None:
        upload = as_stream(opts.upload_stream, "GraphCompleteOptions.upload_stream")
        upload._check_open()
        params.flags |= cydriver.CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD
        params.hUploadStream = upload._handle
    return opts


cdef int dot_print(CUgraph graph, object path, object options, str what) except -1:
    """Write ``graph`` to ``path`` as a Graphviz DOT file (``cuGraphDebugDotPrint``)."""
    opts = check_or_create_options(GraphDebugPrintOptions, options, f"{what} options")
    cdef unsigned int flags = 0
    for name, flag in _DOT_FLAGS.items():
        if getattr(opts, name):
            flags |= <unsigned int>flag
    cdef bytes encoded = os.fsencode(path)
    HANDLE_RETURN(cydriver.cuGraphDebugDotPrint(graph, encoded, flags))
    return 0


cdef CUuserObject _user_object(CUgraph graph, tuple uses) except? NULL:
    """A user object holding ``uses``, retained by ``graph`` (so that an instantiation or
    update of ``graph`` copies the reference into the executable); the caller releases it
    from ``graph`` afterwards. NULL when there is nothing to hold."""
    cdef CUuserObject uo = NULL
    cdef CUresult err
    if not uses:
        return NULL
    Py_INCREF(uses)  # the user object's reference, given back by release_later
    err = cydriver.cuUserObjectCreate(&uo, <void*>uses, <CUhostFn>release_later, 1,
                                      cydriver.CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)
    if err != CUDA_SUCCESS:
        Py_DECREF(uses)
        HANDLE_RETURN(err)
    err = cydriver.cuGraphRetainUserObject(graph, uo, 1, cydriver.CU_GRAPH_USER_OBJECT_MOVE)
    if err != CUDA_SUCCESS:
        cydriver.cuUserObjectRelease(uo, 1)  # its destructor queues the reference
        HANDLE_RETURN(err)
    return uo


cdef int _wait_idle(Graph graph) except -1:
    """Wait until the Graph's context has no work queued (so no launch uses what executable-
    node updates replaced)."""
    cdef CUresult err
    cdef ContextGuard guard
    enter_context(guard, graph._ctx._handle)
    with nogil:
        err = cydriver.cuCtxSynchronize()
    exit_context(guard)
    HANDLE_RETURN(err)
    return 0


cdef Graph instantiate(CUgraph graph, Context ctx, list keep, tuple uses, object store,
                       CUDA_GRAPH_INSTANTIATE_PARAMS* params, str what):
    """``graph`` instantiated in ``ctx`` (``cuGraphInstantiateWithParams``); ``keep`` holds
    the _HostCall of each captured host node, ``uses`` what the other nodes use (held by the
    executable through a user object), ``store`` the hierarchy's _GraphStore; ``what`` names
    the call in errors."""
    cdef CUgraphExec handle = NULL
    cdef CUresult err
    cdef ContextGuard guard
    drain_released(NULL)
    cdef CUuserObject uo = _user_object(graph, uses)
    enter_context(guard, ctx._handle)
    with nogil:
        err = cydriver.cuGraphInstantiateWithParams(&handle, graph, params)
        if uo != NULL:  # the executable has its own reference now (or none: failed)
            cydriver.cuGraphReleaseUserObject(graph, uo, 1)
    exit_context(guard)
    if err != CUDA_SUCCESS:
        _raise_refused(err, f"{what}: cuGraphInstantiateWithParams failed",
                       _INSTANTIATE_RESULTS, params.result_out)
    cdef Graph g = Graph.__new__(Graph)
    g._handle = handle
    g._ctx = ctx
    g._keep = keep
    g._store = store
    return g


cdef int update_graph(Graph graph, CUgraph source, list keep, tuple uses,
                      object store) except -1:
    """Give ``graph`` the node parameters of ``source`` (``cuGraphExecUpdate``); ``keep``
    holds the _HostCall of each captured host node, which the host nodes run from now on, and
    ``uses`` what the other nodes use (the executable trades its old user objects for
    these, keeping the old ones until the launches queued before are done)."""
    cdef cydriver.CUgraphExecUpdateResultInfo info
    cdef CUresult err
    cdef ContextGuard guard
    cdef CUgraphNodeType kind
    memset(&info, 0, sizeof(info))
    drain_released(NULL)
    cdef CUuserObject uo = _user_object(source, uses)
    enter_context(guard, graph._ctx._handle)
    with nogil:
        err = cydriver.cuGraphExecUpdate(graph._handle, source, &info)
        if uo != NULL:
            cydriver.cuGraphReleaseUserObject(source, uo, 1)
    exit_context(guard)
    if err != CUDA_SUCCESS:
        where = ""
        if info.errorNode != NULL and \
                cydriver.cuGraphNodeGetType(info.errorNode, &kind) == CUDA_SUCCESS:
            where = f" (at a node of type {_driver_py.CUgraphNodeType(<int>kind).name})"
        _raise_refused(err, "update(): cuGraphExecUpdate refused the new graph" + where,
                       _UPDATE_RESULTS, info.result)
    graph._keep = keep
    graph._store = store
    # What executable-node updates passed is replaced by the source's parameters.
    if graph._held:
        for objects, launches in graph._held.values():
            _retire(graph, objects, launches)
        graph._held = None
    return 0


cdef int _retire(Graph graph, object objects, unsigned long long launches) except -1:
    """``objects``, no longer in the Graph's parameters, go once no launch can use them: at
    once when none was queued since they were set."""
    if launches == graph._launches:
        return 0
    if graph._retired is None:
        graph._retired = []
    graph._retired.append(objects)
    if len(graph._retired) >= _RETIRED_LIMIT:
        _wait_idle(graph)
        graph._retired = None
    return 0


cdef int hold_for_node(Graph graph, CUgraphNode node, object objects) except -1:
    if graph._held is None:
        graph._held = {}
    old = graph._held.get(<size_t>node)
    graph._held[<size_t>node] = (objects, graph._launches)
    if old is not None:
        _retire(graph, old[0], old[1])
    return 0
