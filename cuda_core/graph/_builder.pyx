"""GraphBuilder: records the work queued on its stream into a CUgraph (stream capture), which
``complete()`` instantiates into a launchable Graph (``_graph``).

A builder captures on one stream. ``split()`` forks more streams into the same capture and
``join()`` merges them back; conditional nodes (``if_then``, ``if_else``, ``switch``,
``while_loop``) hand out builders that capture into the node's body graphs.

``graph_definition`` is a GraphDefinition view of the captured graph (or of a body): nodes added
through it are recorded in the capture's ``_GraphStore`` (shared by its builders), and once a
view of a capture exists, the store owns the captured graph, which then outlives the builder
for as long as a view or node of it is left.

What captured work uses (a host callback and its data, a kernel launched on the builder and its
arguments) is owned by the graph being captured, through the store's user object
(``own_uses``), as the nodes of a GraphDefinition are: it lives as long as the graph, its
clones and the Graphs made from it, and their launches.
"""

from libc.string cimport memset

cimport cython
from cuda.bindings cimport cydriver
from cuda_core cimport _cuda_compat
from cuda.bindings.cydriver cimport (CUcontext, CUDA_SUCCESS, CUevent, CUgraph,
                                     CUgraphConditionalNodeType, CUgraphNode, CUgraphNodeParams,
                                     CUresult, CUstreamCaptureStatus)

from cuda_core._checks cimport check_int
from cuda_core._checks import ArgumentTypeError
from cuda_core._context cimport (Context, ContextGuard, body_capture_begins, body_capture_ends,
                                 body_capture_in, context_gone, enter_context)
from cuda_core._errors cimport HANDLE_RETURN, check_call, make_driver_error
from cuda_core._stream cimport Stream, StreamHolder, as_stream, create_stream
from cuda_core.graph._condition cimport GraphCondition, create_condition
from cuda_core.graph._definition cimport GraphDefinition, definition_view
from cuda_core.graph._graph cimport (Graph, dot_path, dot_print, instantiate, instantiate_params,
                                    update_graph)
from cuda_core.graph._host_callback cimport _HostCall, enqueue_host_call, make_host_call
from cuda_core.graph._node_params cimport COND_TYPES, conditional_params, switch_count
from cuda_core.graph._store cimport (BODY_CAPTURE_FAILED, _GraphStore, _NodeRecord,
                                     end_body_captures, end_capture_on, new_record, new_store,
                                     own_uses)

import weakref

__all__ = ["GraphBuilder"]

cdef enum:
    _NEW = 0        # not capturing yet
    _BUILDING = 1   # capturing
    _ENDED = 2      # capture ended; _graph holds the result (NULL if the driver refused it)

cdef dict _CAPTURE_MODES = {
    "global": cydriver.CU_STREAM_CAPTURE_MODE_GLOBAL,
    "thread_local": cydriver.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
    "relaxed": cydriver.CU_STREAM_CAPTURE_MODE_RELAXED,
}


cdef CUcontext _context_of(Stream s) except? NULL:
    return s._resolve_ctx()._handle


cdef bint _left_to_the_driver(GraphBuilder b) noexcept:
    """Whether the capture of ``b`` (not a body) must never be ended: one of its conditional
    bodies failed, which corrupted that body graph (_context.pxd), and the capture itself is
    invalidated too. Ending such a capture crashed in the driver, and so did destroying its
    stream (H200, driver 580.159): the stream is then left to the driver (wedged), with the
    streams joined into the capture."""
    cdef cydriver.CUstreamCaptureStatus status = cydriver.CU_STREAM_CAPTURE_STATUS_NONE
    cdef Stream joined
    if b._store._broken is None or b._stream._closed:
        return False
    if (cydriver.cuStreamIsCapturing(b._stream._handle, &status) != CUDA_SUCCESS
            or status != cydriver.CU_STREAM_CAPTURE_STATUS_INVALIDATED):
        return False
    b._stream._wedged = True
    for joined in b._joined or ():
        joined._wedged = True
    return True


cdef class GraphBuilder(StreamHolder):
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

    cdef int _release(self) except -1:
        # A capture in progress is abandoned (ending a forked-off one is its root's job), or
        # the captured graph destroyed (a builder owns one only once its building ended). The
        # streams are close()'s (below).
        cdef CUgraph abandoned = NULL
        cdef CUgraph owned = NULL
        cdef CUresult err = CUDA_SUCCESS
        if not self._is_body:  # bodies' captures end before the graph holding them goes
            end_body_captures(self._store)
        if self._state == _BUILDING and not self._join_required and self._is_body:
            # The body graph is its node's. Its capture may have ended already, through the
            # stream, where the parent's owner went first in a reference cycle. A capture that
            # fails to end leaves the body incomplete: the parent's graph is unusable.
            if end_capture_on(self._stream) != CUDA_SUCCESS:
                self._store._broken = BODY_CAPTURE_FAILED
        elif self._state == _BUILDING and not self._join_required:
            # A stream released first (in a reference cycle with the builder) ended the
            # capture itself (Stream._release), and its handle is gone.
            if not self._stream._closed and not _left_to_the_driver(self):
                with nogil:  # as every destroy in a finalizer (DESIGN.md, the calls that wait)
                    err = cydriver.cuStreamEndCapture(self._stream._handle, &abandoned)
                    if abandoned != NULL:
                        cydriver.cuGraphDestroy(abandoned)
            self._store.close()  # the capture's views and nodes are gone with it
            # An abandoned capture that was already broken is what close() is for.
            if err not in (CUDA_SUCCESS, cydriver.CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
                           cydriver.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED):
                self._state = _ENDED
                raise make_driver_error(err, "cuStreamEndCapture")
        self._state = _ENDED
        if self._owns_graph and self._graph != NULL:
            owned = self._graph
            self._graph = NULL
            self._store.close()  # the bodies' views and builders go with the graph
            if self._store._broken is not None:
                return 0  # a corrupt body graph in it: destroying it crashed in the driver
            with nogil:
                err = cydriver.cuGraphDestroy(owned)
            check_call(err, "cuGraphDestroy")
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._graph

    cdef bint _orphaned(self) noexcept:
        # A capture in progress would be ended on the stream, which is gone with its context.
        return (self._state == _BUILDING and self._stream is not None
                and context_gone(self._stream._ctx))

    # -- state ---------------------------------------------------------------------------------

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

    cdef int _check_body(self, str what) except -1:
        """A body's graph still exists: its capture is not abandoned or destroyed, and its
        conditional node not destroyed."""
        if self._store._closed or \
                self._store._records.get(<size_t>self._owner.node) is not self._owner:
            raise RuntimeError(f"{what}: the conditional node this body belongs to is gone "
                               f"(destroyed, or its graph closed)")
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
            raise ArgumentTypeError(f"begin_building(): mode must be a str, not "
                                    f"{type(mode).__name__}")
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
        cdef ContextGuard guard
        cdef CUcontext ctx
        if self._is_body:
            self._check_body("begin_building()")
        ctx = _context_of(self._stream)
        enter_context(guard, ctx)
        if self._is_body:
            HANDLE_RETURN(cydriver.cuStreamBeginCaptureToGraph(
                self._stream._handle, self._graph, NULL, NULL, 0, capture_mode))
            body_capture_begins(ctx, self._stream._handle)
        else:
            HANDLE_RETURN(cydriver.cuStreamBeginCapture(self._stream._handle, capture_mode))
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
        if not self._is_body and _left_to_the_driver(self):
            self._state = _ENDED
            self._store.close()
            raise make_driver_error(
                cydriver.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                "end_building(): the capture was invalidated after one of its conditional "
                "bodies failed, and the driver crashes ending such a capture: it is left "
                "unended, with its stream (never destroyed)")
        with nogil:
            err = cydriver.cuStreamEndCapture(self._stream._handle, &graph)
        body_capture_ends(self._stream._handle)
        self._state = _ENDED
        self._close_joined()
        if err != CUDA_SUCCESS:
            if not self._is_body:  # the capture's views and nodes are gone with it
                if graph != NULL and self._store._broken is None:
                    cydriver.cuGraphDestroy(graph)
                self._store.close()
            else:  # the body graph is incomplete: so is the graph of its node
                self._store._broken = BODY_CAPTURE_FAILED
            if err == cydriver.CUDA_ERROR_STREAM_CAPTURE_UNJOINED:
                raise RuntimeError("end_building(): work forked off with split() was never "
                                   "joined back (GraphBuilder.join); the capture is discarded")
            raise make_driver_error(err, "end_building(): the capture failed and is "
                                         "discarded")
        if not self._is_body:  # a body graph belongs to its conditional node
            self._graph = graph
            if self._store._viewed:  # a body's view exists: the store keeps the graph
                self._store._handle = graph
            else:
                self._owns_graph = True
        return self

    @property
    def graph_definition(self):
        """The captured graph (or the body graph) as a :class:`GraphDefinition` view: nodes added through it are
        part of the graph (in later :meth:`complete` and :meth:`debug_dot_print` calls), and
        it stays valid after the builder is closed. For a builder of a capture, once
        :meth:`end_building` returned; for a conditional body's builder, before
        :meth:`begin_building` or after :meth:`end_building`.

        Raises
        ------
        RuntimeError
            While building, before a capture's end, for a builder :meth:`split` forked off,
            or on a closed builder.
        """
        cdef GraphBuilder root
        self._check_open()
        if self._join_required:
            raise RuntimeError("graph_definition: a builder forked off with split() has no "
                               "graph of its own")
        if self._is_body:
            if self._state == _BUILDING:
                raise RuntimeError("graph_definition: the body is being captured; end_building() "
                                   "first")
            self._check_body("graph_definition")
            self._store._viewed = True
            root = self._parent
            while root._is_body:
                root = root._parent
            if root._owns_graph:  # an ended capture: it lives as long as a view of it too
                self._store._handle = root._graph
                root._owns_graph = False
            return definition_view(self._store, self._graph, self._owner)
        else:
            self._check_ended("graph_definition")
            if self._owns_graph:  # from now on, the graph lives as long as a view of it
                self._store._handle = self._graph
                self._owns_graph = False
        self._store._viewed = True
        return definition_view(self._store, self._graph, None)

    cdef int _close_joined(self) except -1:
        if not self._joined:
            return 0
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
        cdef cydriver.CUDA_GRAPH_INSTANTIATE_PARAMS params
        self._check_ended("complete()")
        if self._is_body:
            raise RuntimeError("complete(): this builder holds the body of a conditional node, "
                               "which is part of its parent's graph; complete the parent")
        self._store.check_whole("complete()")
        opts = instantiate_params(options, "GraphBuilder.complete()", &params)  # held: stream
        return instantiate(self._graph, self._stream._resolve_ctx(), self._store, &params,
                           "complete()")

    def debug_dot_print(self, path, options=None):
        """Write the captured graph to ``path`` as a Graphviz DOT file.

        .. note:: Calls ``cuGraphDebugDotPrint``.

        Parameters
        ----------
        path : str or os.PathLike
        options : GraphDebugPrintOptions or dict, optional
            What to write beyond the graph's shape.
        """
        path = dot_path(path, "GraphBuilder.debug_dot_print()")  # first, as cuda.core does
        self._check_ended("debug_dot_print()")
        dot_print(self._graph, path, options, "GraphBuilder.debug_dot_print()")

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
        cdef ContextGuard guard
        self._check_building("split()")
        # Bounded by the C int (SizeOverflowError past it, as cuda.core's conversion): an
        # unbounded count would create streams until memory runs out.
        count = check_int(count, "split(): count", 2, 0x7FFFFFFF)
        ctx = self._stream._resolve_ctx()
        branches = [self]
        enter_context(guard, (<Context>ctx)._handle)
        try:
            HANDLE_RETURN(cydriver.cuEventCreate(&fork, cydriver.CU_EVENT_DISABLE_TIMING))
            HANDLE_RETURN(cydriver.cuEventRecord(fork, self._stream._handle))
            for _ in range(count - 1):
                branch = _new_builder(create_stream(<Context>ctx, None), True, self._store)
                HANDLE_RETURN(cydriver.cuStreamWaitEvent(branch._stream._handle, fork, 0))
                branch._state = _BUILDING
                branch._join_required = True
                branches.append(branch)
                if body_capture_in(NULL, self._stream._handle):  # a body's, forked
                    body_capture_begins((<Context>ctx)._handle, branch._stream._handle)
        finally:
            if fork != NULL:
                cydriver.cuEventDestroy(fork)
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
        cdef ContextGuard guard
        for b in builders:
            if not isinstance(b, GraphBuilder):
                raise TypeError(f"join() takes GraphBuilders, not {type(b).__name__}")
        if len(builders) < 2:
            raise ValueError(f"join() takes at least two GraphBuilders, {len(builders)} given")
        for b in builders:
            (<GraphBuilder>b)._check_building("join()")
        if len({id(b) for b in builders}) != len(builders):
            raise ValueError("join(): a builder is given more than once")
        for b in builders:
            if not (<GraphBuilder>b)._join_required:
                target = <GraphBuilder>b
                break
        else:
            target = <GraphBuilder>builders[0]
        enter_context(guard, _context_of(target._stream))
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
            # The forked stream stays in the capture until it ends: it is closed then. The
            # builder is closed without a release: nothing of it is left to give back.
            if other._owns_stream:
                target._joined.append(other._stream)
            target._joined.extend(other._joined)
            other._joined = []
            other._closed = True
            other._state = _ENDED
        return target

    # -- nodes added to the capture ------------------------------------------------------------

    cdef int _capture_info(self, _Capture* cap) except -1:
        """Where the capture stands: its graph and the nodes the next one depends on."""
        cdef CUstreamCaptureStatus status
        HANDLE_RETURN(_cuda_compat.cuStreamGetCaptureInfo(self._stream._handle, &status, NULL,
                                                      &cap.graph, &cap.deps, &cap.edges,
                                                      &cap.count))
        if status != cydriver.CU_STREAM_CAPTURE_STATUS_ACTIVE:
            raise RuntimeError("the capture was invalidated by an earlier error; end_building() "
                               "says which")
        return 0

    cdef CUgraphNode _add_after_capture(self, CUgraphNodeParams* params,
                                        _Capture* cap) except NULL:
        """Add a node after the work captured so far (``cap``, from _capture_info), and make
        it what comes next depends on."""
        cdef CUgraphNode node = NULL
        HANDLE_RETURN(_cuda_compat.cuGraphAddNode(&node, cap.graph, cap.deps, cap.edges, cap.count,
                                              params))
        HANDLE_RETURN(_cuda_compat.cuStreamUpdateCaptureDependencies(
            self._stream._handle, &node, NULL, 1, cydriver.CU_STREAM_SET_CAPTURE_DEPENDENCIES))
        return node

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
        cdef unsigned int value = 0
        self._check_building("create_condition()")
        if default_value is not None:
            value = check_int(default_value, "create_condition(): default_value", 0,
                              0xFFFFFFFF)  # SizeOverflowError outside the C unsigned int
        self._capture_info(&cap)
        return create_condition(cap.graph, _context_of(self._stream), value,
                                default_value is not None)

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
        conditional_params(&params, <GraphCondition>condition, kind, size)
        params.conditional.ctx = (<Context>ctx)._handle
        own_uses(self._store, cap.graph, [condition])
        cdef CUgraphNode node = self._add_after_capture(&params, &cap)
        # phGraph_out points at the node's body graphs, owned by the node. The record makes
        # the node an IfNode (and so on) in graph_definition views.
        bodies = tuple(<size_t>params.conditional.phGraph_out[i] for i in range(size))
        cdef _NodeRecord record = new_record(node, cap.graph, None)
        record.info = (condition, COND_TYPES[kind], bodies)
        self._store._records[<size_t>node] = record
        return tuple(_new_body(self, <Context>ctx, params.conditional.phGraph_out[i], record)
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
        return self._conditional(condition, cydriver.CU_GRAPH_COND_TYPE_SWITCH,
                                 switch_count(count, "switch()"), "switch()")

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
            raise ArgumentTypeError(f"embed(): child must be a GraphBuilder, not "
                                    f"{type(child).__name__}")  # cuda.core: ValueError
        cdef GraphBuilder c = <GraphBuilder>child
        c._check_ended("embed()")
        memset(&params, 0, sizeof(params))
        params.type = cydriver.CU_GRAPH_NODE_TYPE_GRAPH
        params.graph.graph = c._graph
        self._capture_info(&cap)
        cdef CUgraphNode node = self._add_after_capture(&params, &cap)
        # The copy carries the child's user object (what its captured work and nodes use).
        cdef CUgraph copy = NULL
        HANDLE_RETURN(cydriver.cuGraphChildGraphNodeGetGraph(node, &copy))
        cdef _NodeRecord record = new_record(node, cap.graph, None)
        record.info = <size_t>copy
        self._store._records[<size_t>node] = record

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
        cdef _Capture cap
        self._check_building("callback()")
        cdef _HostCall call = make_host_call(fn, user_data, "callback()")
        self._capture_info(&cap)
        own_uses(self._store, cap.graph, [call])
        enqueue_host_call(self._stream._handle, call)

    def _end_capture(self):
        """A body's capture, abandoned because the graph that holds the body is destroyed
        (end_body_captures): the driver's result of ending it (CUDA_SUCCESS: nothing to end)."""
        cdef int err = CUDA_SUCCESS
        if self._state == _BUILDING:
            self._state = _ENDED
            err = end_capture_on(self._stream)
        return err

    def _hold_captured(self, objects):
        """The graph being captured holds ``objects`` (a list: a kernel launched on the builder
        and its arguments; see ``launch``). Nothing when the builder is not capturing: the
        launch then ran on its stream. (A launch the driver took while building went into an
        active capture: it refuses one into an invalidated capture.)"""
        cdef _Capture cap
        if self._closed or self._state != _BUILDING:
            return
        self._capture_info(&cap)
        own_uses(self._store, cap.graph, objects)

    def close(self):
        """Close the builder: a capture in progress is abandoned, the captured graph destroyed
        and a stream the builder made is destroyed (a stream given to
        :meth:`Stream.create_graph_builder` is not). Idempotent; Graphs completed from it stay
        valid."""
        if not self._closing():
            return  # closed already, or by another thread now
        try:
            self._close_claimed()
        finally:
            # Only close() closes the streams: a builder dropped unclosed leaves them to their
            # own finalizers, as a Buffer allocated on the builder may still hold its stream.
            if self._owns_stream:
                self._stream.close()
            self._close_joined()


cdef GraphBuilder _new_builder(Stream stream, bint owns_stream, _GraphStore store):
    cdef GraphBuilder b = GraphBuilder.__new__(GraphBuilder)
    b._stream = stream
    b._owns_stream = owns_stream
    b._store = store
    b._joined = []
    b._state = _NEW
    return b


cdef GraphBuilder _new_body(GraphBuilder parent, Context ctx, CUgraph body,
                            _NodeRecord owner):
    cdef GraphBuilder b = _new_builder(create_stream(ctx, None), True, parent._store)
    cdef _GraphStore store = parent._store
    with cython.critical_section(store):  # the splits of one capture share the store
        if store._bodies is None:
            store._bodies = []
        store._bodies.append((weakref.ref(b), b._stream))
    b._graph = body
    b._is_body = True
    b._parent = parent
    b._owner = owner
    return b


def _builder_on(stream, bint owns_stream):
    """A new GraphBuilder capturing on ``stream`` (for Device/Stream.create_graph_builder)."""
    cdef Stream s = as_stream(stream, "create_graph_builder()")
    s._check_open()
    return _new_builder(s, owns_stream, new_store(NULL))


def _update_from(Graph graph not None, source):
    """Graph.update's half that knows builders and definitions (this module cimports
    ``_graph``, not the reverse): ``graph`` takes ``source``'s graph (and with it, from the
    driver, the user object that owns what its nodes use)."""
    cdef GraphBuilder b
    cdef GraphDefinition d
    if isinstance(source, GraphBuilder):
        b = <GraphBuilder>source
        b._check_ended("update()")
        if b._is_body:
            raise ValueError("update(): source holds the body of a conditional node; update "
                             "from its parent")
        b._store.check_whole("update()")
        update_graph(graph, b._graph, b._store)
    elif isinstance(source, GraphDefinition):
        d = <GraphDefinition>source
        d._check_valid("update()")
        update_graph(graph, d._handle, d._store)
    else:
        raise TypeError(f"update(): source must be a GraphBuilder or a GraphDefinition, not "
                        f"{type(source).__name__}")
