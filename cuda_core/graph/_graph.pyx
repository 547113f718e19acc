"""Graphs by stream capture: GraphBuilder records the work queued on its stream into a CUgraph,
Graph is the instantiated, launchable CUgraphExec.

A builder captures on one stream. ``split()`` forks more streams into the same capture and
``join()`` merges them back; conditional nodes (``if_then``, ``if_else``, ``switch``,
``while_loop``) hand out builders that capture into the node's body graphs. The Python objects
that captured work refers to (host callbacks and their data) are kept in one list shared by all
builders of a capture; every Graph instantiated from it holds a copy, and each launch of a Graph
holds them until its host nodes have run.
"""

import ctypes
import os

from cpython.bytes cimport PyBytes_AS_STRING
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.string cimport memset

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUcontext, CUDA_SUCCESS, CUevent, CUgraph,
                                     CUgraphConditionalHandle, CUgraphConditionalNodeType,
                                     CUgraphEdgeData, CUgraphExec, CUgraphNode,
                                     CUgraphNodeParams, CUresult, CUstreamCaptureStatus)

from cuda_core._context cimport Context, pop_pushed, push_if_needed
from cuda_core._errors cimport HANDLE_RETURN, make_driver_error, warn_cleanup
from cuda_core._stream cimport Stream, as_stream, create_stream, register_graph_builder_type

from cuda.bindings import driver as _driver_py

from cuda_core._options import check_or_create_options
from cuda_core.graph._graph_options import GraphCompleteOptions, GraphDebugPrintOptions

__all__ = ["Graph", "GraphBuilder", "GraphCondition"]

cdef enum:
    _NEW = 0        # not capturing yet
    _BUILDING = 1   # capturing
    _ENDED = 2      # capture ended; _graph holds the result (NULL if the driver refused it)

cdef dict _CAPTURE_MODES = {
    "global": cydriver.CU_STREAM_CAPTURE_MODE_GLOBAL,
    "thread_local": cydriver.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
    "relaxed": cydriver.CU_STREAM_CAPTURE_MODE_RELAXED,
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


ctypedef void (*_c_host_fn)(void* data) noexcept nogil  # a ctypes CFUNCTYPE(None, c_void_p)


cdef class _HostCall:
    """What one captured host node runs. Held by the builders and Graphs of its capture, and
    once more by every launch of a Graph, from Graph.launch until the node has run: a graph
    closed, or dropped, with launches still queued keeps its callbacks until they are done."""
    cdef object fn          # the Python callable, or the ctypes function (kept alive)
    cdef object user_data   # kept alive: the bytes whose buffer ``data`` points into
    cdef _c_host_fn c_fn    # the ctypes function's address; NULL for a Python callable
    cdef void* data


cdef void _run_host_call(void* arg) noexcept with gil:
    # On a driver thread. An exception cannot reach anyone: Cython reports it through
    # sys.unraisablehook, naming this function.
    cdef _HostCall call = <_HostCall>arg
    cdef _c_host_fn c_fn = call.c_fn
    cdef void* data = call.data
    try:
        if c_fn != NULL:
            with nogil:
                c_fn(data)
        else:
            call.fn()
    finally:
        Py_DECREF(call)  # the reference the launch took for this run


cdef int _hold_for_launch(list calls) except -1:
    for call in calls:
        Py_INCREF(call)
    return 0


cdef int _release_after_failed_launch(list calls) except -1:
    for call in calls:
        Py_DECREF(call)
    return 0


cdef CUcontext _context_of(Stream s) except? NULL:
    return s._resolve_ctx()._handle


cdef int _check_condition_value(object value) except -1:
    if type(value) is bool or not isinstance(value, int):
        raise TypeError(f"create_condition(): default_value must be an int or None, not "
                        f"{type(value).__name__}")
    if not 0 <= value <= 0xFFFFFFFF:
        raise ValueError(f"create_condition(): default_value must be between 0 and 2**32 - 1, "
                         f"got {value}")
    return 0


cdef class GraphCondition:
    """The value that decides a conditional node: set from the device with
    ``cudaGraphSetConditional(handle, value)``, or reset to its default at each graph launch.

    Not constructible: use :meth:`GraphBuilder.create_condition`. Passed to :func:`launch` as a
    kernel argument it packs to its 64-bit handle (``cudaGraphConditionalHandle``).
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("GraphCondition objects cannot be instantiated directly; use "
                           "GraphBuilder.create_condition()")

    @property
    def handle(self):
        """The ``CUgraphConditionalHandle`` value, an int."""
        return self._handle

    def __eq__(self, other):
        if not isinstance(other, GraphCondition):
            return NotImplemented
        return self._handle == (<GraphCondition>other)._handle

    def __hash__(self):
        return hash((GraphCondition, self._handle))

    def __repr__(self):
        return f"<GraphCondition handle={self._handle:#x}>"


cdef class GraphBuilder:
    """Records the work queued on a stream into a graph (stream capture).

    Not constructible: use :meth:`Device.create_graph_builder` (a new stream of its own) or
    :meth:`Stream.create_graph_builder` (that stream). Pass the builder wherever a stream is
    taken (:func:`launch`, ``Device.allocate(..., stream=builder)``, ``Buffer.copy_to``): it has
    ``__cuda_stream__``, so the work is captured instead of run.

    A builder builds one graph: :meth:`begin_building`, the work, :meth:`end_building`, then
    :meth:`complete` for a launchable :class:`Graph` (as many as wanted).
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("GraphBuilder objects cannot be instantiated directly; use "
                           "Device.create_graph_builder() or Stream.create_graph_builder()")

    def __dealloc__(self):
        cdef CUresult err
        cdef CUgraph abandoned = NULL
        if self._closed:
            return
        self._closed = True
        if self._state == _BUILDING and not self._join_required and self._stream is not None:
            err = cydriver.cuStreamEndCapture(self._stream._handle, &abandoned)
            if abandoned != NULL and not self._is_body:
                cydriver.cuGraphDestroy(abandoned)
        if self._owns_graph and self._graph != NULL:
            err = cydriver.cuGraphDestroy(self._graph)
            warn_cleanup("cuGraphDestroy", err)
            self._graph = NULL

    # -- state ---------------------------------------------------------------------------------

    cdef int _check_open(self) except -1:
        if self._closed:
            raise RuntimeError("this GraphBuilder is closed")
        return 0

    cdef int _check_building(self, str what) except -1:
        self._check_open()
        if self._state != _BUILDING:
            raise RuntimeError(f"{what} needs a builder that is building: call begin_building() "
                               f"first" if self._state == _NEW else
                               f"{what} needs a builder that is building, and this one's "
                               f"building has ended")
        return 0

    cdef int _check_ended(self, str what) except -1:
        self._check_open()
        if self._state != _ENDED:
            raise RuntimeError(f"{what} needs a finished graph: call end_building() first")
        if self._graph == NULL:
            raise RuntimeError(f"{what}: the capture ended in an error, so there is no graph")
        return 0

    @property
    def is_building(self):
        """True between :meth:`begin_building` and :meth:`end_building`."""
        self._check_open()
        return self._state == _BUILDING

    @property
    def is_join_required(self):
        """True for the builders :meth:`split` forked off: they end by being joined back with
        :meth:`join`, not with :meth:`end_building`."""
        self._check_open()
        return bool(self._join_required)

    @property
    def stream(self):
        """The :class:`Stream` the work is captured on."""
        self._check_open()
        return self._stream

    @property
    def is_closed(self):
        return bool(self._closed)

    def __cuda_stream__(self):
        """The stream protocol, version 0: ``(0, address of the capture stream)``."""
        self._check_open()
        return (0, <size_t>self._stream._handle)

    def __repr__(self):
        if self._closed:
            return "<GraphBuilder (closed)>"
        state = ("new", "building", "ended")[self._state]
        return f"<GraphBuilder {state} on {self._stream!r}>"

    # -- capture -------------------------------------------------------------------------------

    def begin_building(self, mode="relaxed"):
        """Start capturing the work queued on :attr:`stream`.

        .. note:: Calls ``cuStreamBeginCapture`` (``cuStreamBeginCaptureToGraph`` for the body
           of a conditional node).

        Parameters
        ----------
        mode : {"relaxed", "global", "thread_local"}
            How the capture guards against unsafe calls made meanwhile (for example a
            synchronous ``cuMemAlloc``): ``"global"`` refuses them in every thread that did not
            opt out, ``"thread_local"`` in this thread, ``"relaxed"`` (the default) nowhere.

        Returns
        -------
        GraphBuilder
            ``self``.
        """
        self._check_open()
        if type(mode) is not str:
            raise TypeError(f"begin_building(): mode must be a str, not {type(mode).__name__}")
        try:
            capture_mode = _CAPTURE_MODES[mode]
        except KeyError:
            raise ValueError(f"begin_building(): mode must be one of "
                             f"{', '.join(map(repr, _CAPTURE_MODES))}, got {mode!r}") from None
        if self._state == _BUILDING:
            raise RuntimeError("begin_building(): this builder is already building")
        if self._state == _ENDED:
            raise RuntimeError("begin_building(): this builder's building has ended; a "
                               "GraphBuilder builds one graph (create another one)")
        cdef int pushed = push_if_needed(_context_of(self._stream))
        try:
            if self._is_body:
                HANDLE_RETURN(cydriver.cuStreamBeginCaptureToGraph(
                    self._stream._handle, self._graph, NULL, NULL, 0, capture_mode))
            else:
                HANDLE_RETURN(cydriver.cuStreamBeginCapture(self._stream._handle, capture_mode))
        finally:
            if pushed:
                pop_pushed()
        self._state = _BUILDING
        return self

    def end_building(self):
        """Stop capturing; the captured graph is then ready for :meth:`complete`.

        .. note:: Calls ``cuStreamEndCapture``.

        Raises
        ------
        RuntimeError
            When not building; for a builder :meth:`split` forked off (join it instead); when
            work forked off with :meth:`split` was not joined back.
        CUDAError
            When the driver invalidated the capture (for example after a call that is not
            allowed while capturing).

        Returns
        -------
        GraphBuilder
            ``self``.
        """
        cdef CUgraph graph = NULL
        cdef CUresult err
        self._check_building("end_building()")
        if self._join_required:
            raise RuntimeError("end_building(): this builder was forked off with split(); "
                               "join it back into the builder it came from with "
                               "GraphBuilder.join(...) and end that one")
        with nogil:
            err = cydriver.cuStreamEndCapture(self._stream._handle, &graph)
        self._state = _ENDED
        self._close_joined()
        if err != CUDA_SUCCESS:
            if graph != NULL and not self._is_body:
                cydriver.cuGraphDestroy(graph)
            if err == cydriver.CUDA_ERROR_STREAM_CAPTURE_UNJOINED:
                raise RuntimeError("end_building(): work forked off with split() was never "
                                   "joined back (GraphBuilder.join); the capture is discarded")
            raise make_driver_error(err, "end_building(): the capture failed and is "
                                         "discarded")
        if not self._is_body:  # a body graph belongs to its conditional node
            self._graph = graph
            self._owns_graph = True
        return self

    cdef int _close_joined(self) except -1:
        joined, self._joined = self._joined, []
        for s in joined:
            (<Stream>s).close()
        return 0

    def complete(self, options=None):
        """Instantiate the captured graph into a launchable :class:`Graph`.

        .. note:: Calls ``cuGraphInstantiateWithParams``.

        Parameters
        ----------
        options : GraphCompleteOptions or dict, optional

        Returns
        -------
        Graph
        """
        cdef CUgraphExec handle = NULL
        cdef cydriver.CUDA_GRAPH_INSTANTIATE_PARAMS params
        cdef Stream upload
        cdef CUresult err
        self._check_ended("complete()")
        if self._is_body:
            raise RuntimeError("complete(): this builder holds the body of a conditional node, "
                               "which is part of its parent's graph; complete the parent")
        opts = check_or_create_options(GraphCompleteOptions, options,
                                       "GraphBuilder.complete() options")
        memset(&params, 0, sizeof(params))
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
        ctx = self._stream._resolve_ctx()
        cdef int pushed = push_if_needed((<Context>ctx)._handle)
        try:
            with nogil:
                err = cydriver.cuGraphInstantiateWithParams(&handle, self._graph, &params)
        finally:
            if pushed:
                pop_pushed()
        if err != CUDA_SUCCESS:
            reason = _INSTANTIATE_RESULTS.get(params.result_out)
            raise make_driver_error(err, "complete(): cuGraphInstantiateWithParams failed"
                                         + (f": {reason}" if reason else ""))
        return _make_graph(handle, <Context>ctx, list(self._keep))

    def debug_dot_print(self, path, options=None):
        """Write the captured graph to ``path`` as a Graphviz DOT file.

        .. note:: Calls ``cuGraphDebugDotPrint``.

        Parameters
        ----------
        path : str or os.PathLike
        options : GraphDebugPrintOptions or dict, optional
            What to write beyond the graph's shape.
        """
        self._check_ended("debug_dot_print()")
        opts = check_or_create_options(GraphDebugPrintOptions, options,
                                       "GraphBuilder.debug_dot_print() options")
        cdef unsigned int flags = 0
        for name, flag in _DOT_FLAGS.items():
            if getattr(opts, name):
                flags |= <unsigned int>flag
        cdef bytes encoded = os.fsencode(path)
        HANDLE_RETURN(cydriver.cuGraphDebugDotPrint(self._graph, encoded, flags))

    # -- fork and join -------------------------------------------------------------------------

    def split(self, count):
        """Fork the capture: ``count`` builders, this one first, whose work may run
        concurrently. The others capture on new streams, after everything captured so far.

        Join them back with :meth:`join` before :meth:`end_building`.

        Parameters
        ----------
        count : int
            At least 2.

        Returns
        -------
        tuple of GraphBuilder
        """
        cdef CUevent fork = NULL
        cdef GraphBuilder branch
        self._check_building("split()")
        if type(count) is bool or not isinstance(count, int):
            raise TypeError(f"split(): count must be an int, not {type(count).__name__}")
        if count < 2:
            raise ValueError(f"split(): count must be at least 2, got {count}")
        ctx = self._stream._resolve_ctx()
        branches = [self]
        cdef int pushed = push_if_needed((<Context>ctx)._handle)
        try:
            HANDLE_RETURN(cydriver.cuEventCreate(&fork, cydriver.CU_EVENT_DISABLE_TIMING))
            HANDLE_RETURN(cydriver.cuEventRecord(fork, self._stream._handle))
            for _ in range(count - 1):
                branch = _new_builder(create_stream(<Context>ctx, None), True, self._keep)
                HANDLE_RETURN(cydriver.cuStreamWaitEvent(branch._stream._handle, fork, 0))
                branch._state = _BUILDING
                branch._join_required = True
                branches.append(branch)
        finally:
            if fork != NULL:
                cydriver.cuEventDestroy(fork)
            if pushed:
                pop_pushed()
        return tuple(branches)

    @staticmethod
    def join(*builders):
        """Merge forked builders: the work captured afterwards on the returned builder runs
        after the work of all of them. The others are closed.

        Parameters
        ----------
        *builders : GraphBuilder
            At least two distinct builders of one capture, all building.

        Returns
        -------
        GraphBuilder
            The first given builder that :attr:`is_join_required` is False for (the one the
            capture began on), else the first given.
        """
        cdef GraphBuilder target = None
        cdef GraphBuilder other
        cdef CUevent done = NULL
        if len(builders) < 2:
            raise ValueError(f"join() takes at least two GraphBuilders, {len(builders)} given")
        for b in builders:
            if not isinstance(b, GraphBuilder):
                raise TypeError(f"join() takes GraphBuilders, not {type(b).__name__}")
            (<GraphBuilder>b)._check_building("join()")
        if len({id(b) for b in builders}) != len(builders):
            raise ValueError("join(): a builder is given more than once")
        for b in builders:
            if not (<GraphBuilder>b)._join_required:
                target = <GraphBuilder>b
                break
        else:
            target = <GraphBuilder>builders[0]
        ctx = target._stream._resolve_ctx()
        cdef int pushed = push_if_needed((<Context>ctx)._handle)
        try:
            for b in builders:
                other = <GraphBuilder>b
                if other is target:
                    continue
                HANDLE_RETURN(cydriver.cuEventCreate(&done, cydriver.CU_EVENT_DISABLE_TIMING))
                try:
                    HANDLE_RETURN(cydriver.cuEventRecord(done, other._stream._handle))
                    HANDLE_RETURN(cydriver.cuStreamWaitEvent(target._stream._handle, done, 0))
                finally:
                    cydriver.cuEventDestroy(done)
                    done = NULL
                # The forked stream stays in the capture until it ends: it is closed then.
                if other._owns_stream:
                    target._joined.append(other._stream)
                target._joined.extend(other._joined)
                other._joined = []
                other._closed = True
                other._state = _ENDED
        finally:
            if pushed:
                pop_pushed()
        return target

    # -- nodes added to the capture ------------------------------------------------------------

    cdef int _capture_info(self, _Capture* cap) except -1:
        """Where the capture stands: its graph and the nodes the next one depends on."""
        cdef CUstreamCaptureStatus status
        HANDLE_RETURN(cydriver.cuStreamGetCaptureInfo(self._stream._handle, &status, NULL,
                                                      &cap.graph, &cap.deps, &cap.edges,
                                                      &cap.count))
        if status != cydriver.CU_STREAM_CAPTURE_STATUS_ACTIVE:
            raise RuntimeError("the capture was invalidated by an earlier error; end_building() "
                               "says which")
        return 0

    cdef int _add_after_capture(self, CUgraphNodeParams* params, _Capture* cap) except -1:
        """Add a node after the work captured so far (``cap``, from _capture_info), and make
        it what comes next depends on."""
        cdef CUgraphNode node = NULL
        HANDLE_RETURN(cydriver.cuGraphAddNode(&node, cap.graph, cap.deps, cap.edges, cap.count,
                                              params))
        HANDLE_RETURN(cydriver.cuStreamUpdateCaptureDependencies(
            self._stream._handle, &node, NULL, 1, cydriver.CU_STREAM_SET_CAPTURE_DEPENDENCIES))
        return 0

    def create_condition(self, default_value=None):
        """A condition for this graph's conditional nodes.

        .. note:: Calls ``cuGraphConditionalHandleCreate``.

        Parameters
        ----------
        default_value : int, optional
            When given (0 to 2**32 - 1), the condition is set to it at the start of every
            launch of the graph; otherwise only the device sets it.

        Returns
        -------
        GraphCondition
        """
        cdef _Capture cap
        cdef CUgraphConditionalHandle handle = 0
        cdef unsigned int value = 0, flags = 0
        self._check_building("create_condition()")
        if default_value is not None:
            _check_condition_value(default_value)
            value = default_value
            flags = cydriver.CU_GRAPH_COND_ASSIGN_DEFAULT
        self._capture_info(&cap)
        HANDLE_RETURN(cydriver.cuGraphConditionalHandleCreate(
            &handle, cap.graph, _context_of(self._stream), value, flags))
        cdef GraphCondition cond = GraphCondition.__new__(GraphCondition)
        cond._handle = handle
        cond._graph = cap.graph
        return cond

    cdef tuple _conditional(self, object condition, CUgraphConditionalNodeType kind,
                            unsigned int size, str what):
        cdef CUgraphNodeParams params
        cdef _Capture cap
        cdef unsigned int i
        self._check_building(what)
        if not isinstance(condition, GraphCondition):
            raise TypeError(f"{what}: condition must be a GraphCondition (from "
                            f"create_condition()), not {type(condition).__name__}")
        self._capture_info(&cap)
        if (<GraphCondition>condition)._graph != cap.graph:
            raise ValueError(f"{what}: the condition was created for another graph; a "
                             f"condition is used by the graph it was created for (a "
                             f"conditional body's own conditions come from its builder)")
        ctx = self._stream._resolve_ctx()
        memset(&params, 0, sizeof(params))
        params.type = cydriver.CU_GRAPH_NODE_TYPE_CONDITIONAL
        params.conditional.handle = (<GraphCondition>condition)._handle
        params.conditional.type = kind
        params.conditional.size = size
        params.conditional.ctx = (<Context>ctx)._handle
        self._add_after_capture(&params, &cap)
        # phGraph_out points at the node's body graphs, owned by the node.
        return tuple(_new_body(self, <Context>ctx, params.conditional.phGraph_out[i])
                     for i in range(size))

    def if_then(self, condition):
        """Add a node that runs a body graph when ``condition`` is nonzero.

        Returns
        -------
        GraphBuilder
            The body's builder, not building yet: :meth:`begin_building`, the work,
            :meth:`end_building`.
        """
        return self._conditional(condition, cydriver.CU_GRAPH_COND_TYPE_IF, 1, "if_then()")[0]

    def if_else(self, condition):
        """Add a node that runs one body graph when ``condition`` is nonzero and another when
        it is zero.

        Returns
        -------
        tuple of GraphBuilder
            ``(then_builder, else_builder)``, not building yet.
        """
        return self._conditional(condition, cydriver.CU_GRAPH_COND_TYPE_IF, 2, "if_else()")

    def switch(self, condition, count):
        """Add a node that runs body graph ``i`` when ``condition`` is ``i``, and none when it
        is ``count`` or more.

        Returns
        -------
        tuple of GraphBuilder
            ``count`` body builders, not building yet.
        """
        if type(count) is bool or not isinstance(count, int):
            raise TypeError(f"switch(): count must be an int, not {type(count).__name__}")
        if not 1 <= count <= 0xFFFFFFFF:
            raise ValueError(f"switch(): count must be at least 1, got {count}")
        return self._conditional(condition, cydriver.CU_GRAPH_COND_TYPE_SWITCH, count,
                                 "switch()")

    def while_loop(self, condition):
        """Add a node that runs a body graph again and again while ``condition`` is nonzero
        (checked before each run; the body sets it, e.g. with ``cudaGraphSetConditional``).

        Returns
        -------
        GraphBuilder
            The body's builder, not building yet.
        """
        return self._conditional(condition, cydriver.CU_GRAPH_COND_TYPE_WHILE, 1,
                                 "while_loop()")[0]

    def embed(self, child):
        """Add ``child``'s graph (copied) as one node after the work captured so far.

        Parameters
        ----------
        child : GraphBuilder
            A builder whose building has ended.
        """
        cdef CUgraphNodeParams params
        cdef _Capture cap
        self._check_building("embed()")
        if not isinstance(child, GraphBuilder):
            raise TypeError(f"embed(): child must be a GraphBuilder, not "
                            f"{type(child).__name__}")
        cdef GraphBuilder c = <GraphBuilder>child
        c._check_ended("embed()")
        memset(&params, 0, sizeof(params))
        params.type = cydriver.CU_GRAPH_NODE_TYPE_GRAPH
        params.graph.graph = c._graph
        self._capture_info(&cap)
        self._add_after_capture(&params, &cap)
        if not c._is_body:  # a body holds no host nodes (the driver allows none there)
            self._keep.extend(c._keep)  # once per copy: each runs at every launch

    def callback(self, fn, *, user_data=None):
        """Capture a host call: ``fn`` runs on a driver thread when the work before it is done.

        .. note:: Calls ``cuLaunchHostFunc``. ``fn`` must not call CUDA.

        Parameters
        ----------
        fn : callable or ctypes function pointer
            A Python callable taking no arguments (an exception it raises is reported through
            ``sys.unraisablehook``), or a ctypes ``CFUNCTYPE(None, c_void_p)`` function, called
            with ``user_data``.
        user_data : int or bytes, optional
            Only with a ctypes function: an address, or a bytes object whose buffer is passed
            (kept alive with the graph).
        """
        cdef _HostCall call = _HostCall.__new__(_HostCall)
        cdef size_t address
        self._check_building("callback()")
        if isinstance(fn, ctypes._CFuncPtr):
            if user_data is None:
                call.data = NULL
            elif type(user_data) is bytes:
                call.data = <void*>PyBytes_AS_STRING(user_data)
            elif isinstance(user_data, int) and type(user_data) is not bool:
                if not 0 <= user_data < 2 ** 64:
                    raise ValueError(f"callback(): user_data={user_data} is not an address")
                address = user_data
                call.data = <void*>address
            else:
                raise TypeError(f"callback(): user_data must be an int address, bytes or None, "
                                f"not {type(user_data).__name__}")
            address = ctypes.cast(fn, ctypes.c_void_p).value
            call.c_fn = <_c_host_fn>address
            call.user_data = user_data
        elif callable(fn):
            if user_data is not None:
                raise TypeError("callback(): user_data is for ctypes functions; a Python "
                                "callable takes no arguments (bind them with a closure or "
                                "functools.partial)")
        else:
            raise TypeError(f"callback(): fn must be callable, not {type(fn).__name__}")
        call.fn = fn
        HANDLE_RETURN(cydriver.cuLaunchHostFunc(self._stream._handle, _run_host_call,
                                                <void*>call))
        self._keep.append(call)

    def close(self):
        """Close the builder: a capture in progress is abandoned, the captured graph destroyed
        and a stream the builder made is destroyed (a stream given to
        :meth:`Stream.create_graph_builder` is not). Idempotent; Graphs completed from it stay
        valid."""
        cdef CUgraph abandoned = NULL
        cdef CUresult err = CUDA_SUCCESS
        if self._closed:
            return
        self._closed = True
        if self._state == _BUILDING and not self._join_required:
            err = cydriver.cuStreamEndCapture(self._stream._handle, &abandoned)
            if abandoned != NULL and not self._is_body:
                cydriver.cuGraphDestroy(abandoned)
        self._state = _ENDED
        cdef CUgraph graph = self._graph if self._owns_graph else NULL
        self._graph = NULL
        if graph != NULL:
            HANDLE_RETURN(cydriver.cuGraphDestroy(graph))
        if self._owns_stream:
            self._stream.close()
        self._close_joined()
        if err not in (CUDA_SUCCESS, cydriver.CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
                       cydriver.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED):
            HANDLE_RETURN(err)


register_graph_builder_type(GraphBuilder)


cdef GraphBuilder _new_builder(Stream stream, bint owns_stream, list keep):
    cdef GraphBuilder b = GraphBuilder.__new__(GraphBuilder)
    b._stream = stream
    b._owns_stream = owns_stream
    b._keep = keep
    b._joined = []
    b._state = _NEW
    return b


cdef GraphBuilder _new_body(GraphBuilder parent, Context ctx, CUgraph body):
    cdef GraphBuilder b = _new_builder(create_stream(ctx, None), True, parent._keep)
    b._graph = body
    b._is_body = True
    b._parent = parent
    return b


def _builder_on(stream, bint owns_stream):
    """A new GraphBuilder capturing on ``stream`` (for Device/Stream.create_graph_builder)."""
    cdef Stream s = as_stream(stream, "create_graph_builder()")
    s._check_open()
    return _new_builder(s, owns_stream, [])


cdef class Graph:
    """An executable graph: the captured work, launched as one unit.

    Not constructible: use :meth:`GraphBuilder.complete`.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Graph objects cannot be instantiated directly; use "
                           "GraphBuilder.complete()")

    def __dealloc__(self):
        cdef CUresult err
        if not self._closed and self._handle != NULL:
            self._closed = True
            err = cydriver.cuGraphExecDestroy(self._handle)
            warn_cleanup("cuGraphExecDestroy", err)

    cdef int _check_open(self) except -1:
        if self._closed:
            raise RuntimeError("this Graph is closed")
        return 0

    def launch(self, stream):
        """Launch the graph on ``stream`` (a :class:`Stream` or any ``__cuda_stream__``
        object), GIL released.

        .. note:: Calls ``cuGraphLaunch``.
        """
        cdef Stream s
        cdef CUresult err
        cdef CUcontext ctx
        cdef int pushed = 0
        self._check_open()
        if type(stream) is Stream:
            s = <Stream>stream
        else:
            s = as_stream(stream, "Graph.launch()")
        s._check_open()
        ctx = s._bind_ctx
        if self._keep:
            _hold_for_launch(self._keep)
        with nogil:
            if ctx != NULL:
                pushed = push_if_needed(ctx)
            err = cydriver.cuGraphLaunch(self._handle, s._handle)
            if pushed:
                pop_pushed()
        if err == cydriver.CUDA_ERROR_INVALID_CONTEXT and ctx == NULL and s._ctx is not None:
            # No context current on this thread at all: the stream's, for this call.
            pushed = push_if_needed(s._ctx._handle)
            with nogil:
                err = cydriver.cuGraphLaunch(self._handle, s._handle)
            if pushed:
                pop_pushed()
        if err != CUDA_SUCCESS:
            if self._keep:
                _release_after_failed_launch(self._keep)
            HANDLE_RETURN(err)

    def upload(self, stream):
        """Upload the graph's device resources on ``stream`` ahead of its first launch.

        .. note:: Calls ``cuGraphUpload``.
        """
        cdef Stream s
        cdef CUresult err
        self._check_open()
        s = as_stream(stream, "Graph.upload()")
        s._check_open()
        cdef int pushed = push_if_needed(self._ctx._handle)
        try:
            with nogil:
                err = cydriver.cuGraphUpload(self._handle, s._handle)
        finally:
            if pushed:
                pop_pushed()
        HANDLE_RETURN(err)

    def update(self, source):
        """Replace the graph's node parameters with those of another capture of the same
        topology (for example the same launches with new arguments), in place.

        .. note:: Calls ``cuGraphExecUpdate``.

        Parameters
        ----------
        source : GraphBuilder
            A builder whose building has ended.

        Raises
        ------
        CUDAError
            When the driver refuses the update; the message says what differs.
        """
        cdef cydriver.CUgraphExecUpdateResultInfo info
        cdef CUresult err
        self._check_open()
        if not isinstance(source, GraphBuilder):
            raise TypeError(f"update(): source must be a GraphBuilder, not "
                            f"{type(source).__name__}")
        cdef GraphBuilder b = <GraphBuilder>source
        b._check_ended("update()")
        memset(&info, 0, sizeof(info))
        cdef int pushed = push_if_needed(self._ctx._handle)
        try:
            with nogil:
                err = cydriver.cuGraphExecUpdate(self._handle, b._graph, &info)
        finally:
            if pushed:
                pop_pushed()
        if err != CUDA_SUCCESS:
            reason = _UPDATE_RESULTS.get(info.result)
            raise make_driver_error(err, "update(): cuGraphExecUpdate refused the new graph"
                                         + (f": {reason}" if reason else ""))
        self._keep = list(b._keep)  # the host nodes now run the new graph's calls

    @property
    def handle(self):
        """The ``cuda.bindings.driver.CUgraphExec`` (``int(graph.handle)`` is its address)."""
        self._check_open()
        return _driver_py.CUgraphExec(<size_t>self._handle)

    def close(self):
        """Destroy the executable graph. Idempotent; launches already queued complete.

        .. note:: Calls ``cuGraphExecDestroy``.
        """
        if not self._closed:
            self._closed = True
            HANDLE_RETURN(cydriver.cuGraphExecDestroy(self._handle))

    @property
    def is_closed(self):
        return bool(self._closed)

    def __repr__(self):
        if self._closed:
            return "<Graph (closed)>"
        return f"<Graph handle={<size_t>self._handle:#x}>"


cdef Graph _make_graph(CUgraphExec handle, Context ctx, list keep):
    cdef Graph g = Graph.__new__(Graph)
    g._handle = handle
    g._ctx = ctx
    g._keep = keep
    return g
