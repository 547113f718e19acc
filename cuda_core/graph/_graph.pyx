"""Graph: an instantiated, launchable graph (the ``CUgraphExec``), made from a GraphBuilder's
capture or a GraphDefinition by ``instantiate`` and changed in place by ``update_graph``; the
options both of them take (``instantiate_params``, ``dot_print``).

What the nodes use (kernels, Buffers passed as arguments or operands, events, callbacks) is
owned by the CUDA user object of the graph the Graph was made or updated from (see
``_host_callback``): the driver gives the executable graph its own references, keeps them
while launches run, replaces them at ``cuGraphExecUpdate``, and drops them after the last
launch once the Graph is destroyed. ``launch`` does no reference counting.

An executable-node update (``graph[node].update(...)``) has no graph to retain a user object
in: the Graph holds what it passes (``hold_for_node``). What such an update replaces, and all
of it when the Graph is closed, may still be used by launches queued before: it is let go by a
host function queued behind the latest launch (launches of one executable graph run one after
another, so it runs after all of them), or, where no stream of ours can carry it, once the
context is idle. That host function runs on a driver thread, where CUDA may not be called and
the last reference to a Buffer would free memory: it only queues the objects, and the queue is
emptied on the main thread (``Py_AddPendingCall``).
"""

cimport cython
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.string cimport memset

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUDA_GRAPH_INSTANTIATE_PARAMS, CUDA_SUCCESS, CUcontext,
                                     CUgraph, CUgraphExec, CUgraphNode, CUgraphNodeType,
                                     CUhostFn, CUresult, CUstreamCaptureStatus)

from cuda_core._context cimport (Context, ContextGuard, context_gone, enter_context, exit_context,
                                 refuse_during_body_capture)
from cuda_core._errors cimport HANDLE_RETURN, check_call, make_driver_error
from cuda_core._resource cimport Resource
from cuda_core._stream cimport Stream, as_stream, is_default_handle
from cuda_core.graph._host_callback cimport drain_released, release_later

import os
import weakref

from cuda.bindings import driver as _driver_py

from cuda_core._options import check_or_create_options
from cuda_core.graph._graph_options import GraphCompleteOptions, GraphDebugPrintOptions

__all__ = ["Graph"]


# Updates replaced this many sets of objects that a launch may still use: they are let go
# behind the latest launch (bounds the memory of an update-and-launch loop with one host
# function per this many updates).
cdef enum:
    _RETIRED_LIMIT = 256

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


# graph[node]: set once, while cuda_core.graph is imported, by _exec_nodes (which cimports
# this module), and only read afterwards.
cdef view_factory _view_factory = NULL


cdef int register_view_factory(view_factory factory) except -1:
    global _view_factory
    if _view_factory != NULL:
        raise RuntimeError("register_view_factory(): Graph[node] is already registered")
    _view_factory = factory
    return 0


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
        # Launches already queued complete, with what they use (the driver's user objects; what
        # node updates passed is let go behind them). Without the GIL, as every destroy in a
        # finalizer: the driver may wait there for a host node of a launch, which needs it.
        cdef CUresult err
        if self._handle != NULL:
            with nogil:
                err = cydriver.cuGraphExecDestroy(self._handle)
            check_call(err, "cuGraphExecDestroy")
        with cython.critical_section(self):  # as hold_for_node and update_graph change them
            held, retired = self._held, self._retired
            self._held = None
            self._retired = None
            launches = self._launches
        self._store = None
        if launches and (held or retired):
            _let_go(self, (held, retired))
        self._last_stream = None
        drain_released()
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._handle

    cdef bint _orphaned(self) noexcept:
        return self._handle != NULL and context_gone(self._ctx)

    cdef int _check_ready(self) except -1:
        self._check_open()
        if self._handle == NULL:
            raise RuntimeError("this Graph was not made by GraphBuilder.complete() or "
                               "GraphDefinition.instantiate()")
        return 0

    def launch(self, stream):
        """Launch the graph on ``stream`` (a :class:`Stream` or any ``__cuda_stream__``
        object), GIL released.

        .. note:: Calls ``cuGraphLaunch``.
        """
        cdef Stream s
        cdef CUresult err
        cdef CUcontext ctx
        cdef ContextGuard guard
        self._check_ready()
        if type(stream) is Stream:
            s = <Stream>stream
        else:
            s = as_stream(stream, "Graph.launch()")
        s._check_open()
        ctx = s._bind_ctx
        if ctx != NULL:  # a bound default stream: its device's context, for this call
            enter_context(guard, ctx)
        with cython.critical_section(self):  # (free-threaded: launches from several threads)
            # Counted before the launch: an update on another thread meanwhile then keeps
            # what it replaces (a launch counted but refused only delays a release).
            self._launches += 1
        with nogil:
            err = cydriver.cuGraphLaunch(self._handle, s._handle)
            exit_context(guard)
        if err == cydriver.CUDA_ERROR_INVALID_CONTEXT and ctx == NULL and s._ctx is not None:
            # No context current on this thread at all: the stream's, for this call.
            enter_context(guard, s._ctx._handle)
            with nogil:
                err = cydriver.cuGraphLaunch(self._handle, s._handle)
            exit_context(guard)
        HANDLE_RETURN(err)
        with cython.critical_section(self):
            if self._last_stream is not s:  # only a launch that was queued
                self._last_stream = s

    def upload(self, stream):
        """Upload the graph's device resources on ``stream`` ahead of its first launch.

        .. note:: Calls ``cuGraphUpload``.
        """
        cdef Stream s
        cdef CUresult err
        cdef ContextGuard guard
        self._check_ready()
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
            queued before are done (the driver's user objects do both).

        Raises
        ------
        CUDAError
            When the driver refuses the update; the message says what differs.
        """
        self._check_ready()
        # The builder's module cimports this one: its half (the type check and the source's
        # graph, then update_graph) is imported when it is needed.
        from cuda_core.graph._builder import _update_from

        _update_from(self, source)

    def __getitem__(self, node):
        """The executable view of ``node`` (a :class:`GraphNode` of the definition this Graph
        was instantiated or last updated from): an :class:`ExecutableKernelNode` and so on by
        the node's type, whose ``update()`` changes this Graph only."""
        self._check_ready()
        if _view_factory == NULL:  # only before cuda_core.graph finished importing
            raise RuntimeError("Graph[node]: import cuda_core.graph first")
        return _view_factory(self, node)

    @property
    def handle(self):
        """The ``cuda.bindings.driver.CUgraphExec`` (``int(graph.handle)`` is its address)."""
        self._check_ready()
        return _driver_py.CUgraphExec(<size_t>self._handle)

    def close(self):
        """Destroy the executable graph. Idempotent; launches already queued complete, and
        what they use stays alive until they have (let go by a host function queued behind
        the latest launch, or, when that launch's stream is closed or not ours, once the
        context is idle: then close() waits).

        .. note:: Calls ``cuGraphExecDestroy``.
        """
        self._close()

    def __repr__(self):
        if self._closed:
            return "<Graph (closed)>"
        return f"<Graph handle={<size_t>self._handle:#x}>"


cdef object instantiate_params(object options, str what,
                               CUDA_GRAPH_INSTANTIATE_PARAMS* params):
    """The flags of ``options`` in ``params`` (zeroed first); returns the options object."""
    cdef Stream upload
    if options is not None and not isinstance(options, (GraphCompleteOptions, dict)) and \
            not options:
        options = None  # a false value (0, "", an empty sequence) is none, as for cuda.core
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


cdef str dot_path(object path, str what):
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if type(path) is not str:
        raise TypeError(f"{what}: path must be a str or an os.PathLike of one, not "
                        f"{type(path).__name__}")
    return path


cdef int dot_print(CUgraph graph, object path, object options, str what) except -1:
    """Write ``graph`` to ``path`` as a Graphviz DOT file (``cuGraphDebugDotPrint``)."""
    path = dot_path(path, what)
    opts = check_or_create_options(GraphDebugPrintOptions, options, f"{what} options")
    cdef unsigned int flags = 0
    for name, flag in _DOT_FLAGS.items():
        if getattr(opts, name):
            flags |= <unsigned int>flag
    cdef bytes encoded = os.fsencode(path)
    HANDLE_RETURN(cydriver.cuGraphDebugDotPrint(graph, encoded, flags))
    return 0


cdef int _wait_idle(CUcontext ctx) except -1:
    """Wait until ``ctx`` has no work queued (the context of the Graph's latest launch: then no
    launch uses what the Graph lets go)."""
    cdef CUresult err
    cdef ContextGuard guard
    refuse_during_body_capture(ctx, NULL, "waiting for the graph's launches")
    enter_context(guard, ctx)
    with nogil:
        err = cydriver.cuCtxSynchronize()
    exit_context(guard)
    HANDLE_RETURN(err)
    return 0


cdef Graph instantiate(CUgraph graph, Context ctx, object store,
                       CUDA_GRAPH_INSTANTIATE_PARAMS* params, str what):
    """``graph`` instantiated in ``ctx`` (``cuGraphInstantiateWithParams``; the executable
    graph gets references to ``graph``'s user objects); ``store`` is the hierarchy's
    _GraphStore; ``what`` names the call in errors."""
    cdef CUgraphExec handle = NULL
    cdef CUresult err
    cdef ContextGuard guard
    drain_released()
    enter_context(guard, ctx._handle)
    with nogil:
        err = cydriver.cuGraphInstantiateWithParams(&handle, graph, params)
    exit_context(guard)
    if err != CUDA_SUCCESS:
        _raise_refused(err, f"{what}: cuGraphInstantiateWithParams failed",
                       _INSTANTIATE_RESULTS, params.result_out)
    cdef Graph g = Graph.__new__(Graph)
    g._handle = handle
    g._ctx = ctx
    g._store = weakref.ref(store)  # the nodes hold it: no need to keep their graph alive
    return g


cdef int update_graph(Graph graph, CUgraph source, object store) except -1:
    """Give ``graph`` the node parameters of ``source`` (``cuGraphExecUpdate``, which also
    replaces the executable graph's user objects with ``source``'s, the old ones dropped once
    the launches queued before are done)."""
    cdef cydriver.CUgraphExecUpdateResultInfo info
    cdef CUresult err
    cdef ContextGuard guard
    cdef CUgraphNodeType kind
    memset(&info, 0, sizeof(info))
    drain_released()
    enter_context(guard, graph._ctx._handle)
    with nogil:
        err = cydriver.cuGraphExecUpdate(graph._handle, source, &info)
    exit_context(guard)
    if err != CUDA_SUCCESS:
        where = ""
        if info.errorNode != NULL and \
                cydriver.cuGraphNodeGetType(info.errorNode, &kind) == CUDA_SUCCESS:
            where = f" (at a node of type {_driver_py.CUgraphNodeType(<int>kind).name})"
        _raise_refused(err, "update(): cuGraphExecUpdate refused the new graph" + where,
                       _UPDATE_RESULTS, info.result)
    # graph._store stays: the driver names an executable graph's nodes by the nodes of the
    # graph it was instantiated from, whatever it was updated from since.
    # Every parameter is the source's now: what node updates passed goes.
    cdef list batches = []
    with cython.critical_section(graph):  # the section launch() counts in
        held, graph._held = graph._held, None
        if held:
            for objects, launches in held.values():
                _retire(graph, objects, launches, batches)
    for retired in batches:
        _let_go(graph, retired)
    return 0


cdef int _retire(Graph graph, object objects, unsigned long long launches,
                 list batches) except -1:
    """``objects``, no longer in the Graph's parameters, go once no launch can use them: at
    once when none was queued since they were set. Called in critical_section(graph), the
    section launch() counts launches in; a full list of retired objects goes to ``batches``,
    which the caller lets go of (_let_go) after the section."""
    if launches == graph._launches:
        return 0
    if graph._retired is None:
        graph._retired = []
    graph._retired.append(objects)
    if len(graph._retired) >= _RETIRED_LIMIT:
        retired, graph._retired = graph._retired, None
        batches.append(retired)
    return 0


cdef int _let_go(Graph graph, object objects) except -1:
    """Release ``objects`` once every launch of ``graph`` queued so far is done (launches of
    one CUgraphExec run in order, so the latest one's end is all of theirs): now when the
    latest launch's stream is idle; else by a host function queued behind it, on a stream
    whose handle stays valid (made by cuda_core, or held through its owner object); else by
    waiting for that stream's context to be idle (a default stream: the per-thread one is
    another thread's, the legacy one may be another context's). If that fails, ``objects``
    are kept for the rest of the process rather than freed under a launch."""
    cdef Stream s
    cdef CUresult err
    cdef void* pending
    cdef CUcontext ctx = graph._ctx._handle
    cdef ContextGuard guard
    cdef CUstreamCaptureStatus capturing = cydriver.CU_STREAM_CAPTURE_STATUS_NONE
    drain_released()
    with cython.critical_section(graph):
        s = graph._last_stream
    if s is not None:
        if s._bind_ctx != NULL:
            ctx = s._bind_ctx
        elif s._ctx is not None:
            ctx = s._ctx._handle
    try:
        if s is not None and not s._closed and not is_default_handle(s._handle) and \
                (s._owned or s._owner is not None):
            enter_context(guard, ctx)
            if cydriver.cuStreamIsCapturing(s._handle, &capturing) == CUDA_SUCCESS and \
                    capturing != cydriver.CU_STREAM_CAPTURE_STATUS_NONE:
                # The latest launch went into a capture, whose graph may run it at any later
                # time: neither a host function (it would be captured too) nor a wait can
                # tell when it is done. What it uses is kept for the rest of the process.
                Py_INCREF(objects)
                return 0
            if cydriver.cuStreamQuery(s._handle) == CUDA_SUCCESS:
                return 0  # the latest launch, and so every one, is done already
            Py_INCREF(objects)  # given back on the main thread after the host function ran
            pending = <void*>objects
            with nogil:  # blocks while the stream's queue is full (DESIGN.md, the calls that wait)
                err = cydriver.cuLaunchHostFunc(s._handle, <CUhostFn>release_later, pending)
            exit_context(guard)
            if err == CUDA_SUCCESS:
                return 0
            Py_DECREF(objects)
        _wait_idle(ctx)
    except BaseException:
        Py_INCREF(objects)  # not freed under a launch that may still run
        raise
    return 0


cdef int hold_for_node(Graph graph, CUgraphNode node, object objects) except -1:
    cdef list batches = []
    drain_released()
    with cython.critical_section(graph):  # node updates from several threads, and launches
        if graph._held is None:
            graph._held = {}
        old = graph._held.get(<size_t>node)
        graph._held[<size_t>node] = (objects, graph._launches)
        if old is not None:
            _retire(graph, old[0], old[1], batches)
    for retired in batches:
        _let_go(graph, retired)
    return 0


def _release_later_address():
    """The test hook of the deferred release: the address of the C function a host function
    or driver thread calls with an object whose reference it gives up (``void fn(void*)``),
    for tests that call it from a thread without the GIL."""
    return <size_t>release_later
