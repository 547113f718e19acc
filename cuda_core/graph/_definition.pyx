"""GraphDefinition and GraphNode: a graph built node by node (explicit graphs), instantiated
into the same :class:`Graph` a capture completes into.

A hierarchy (a ``GraphDefinition()``, its conditional bodies and its child graphs' copies, or a
GraphBuilder's capture) has one ``_GraphStore``: it owns the root ``CUgraph`` and keeps one
``_NodeRecord`` per node cuda_core knows, with what the node uses (its kernel and arguments,
its operands, its event, its callback). A record's identity marks its node alive, so no call
on a destroyed node or on a view of a destroyed body reaches the driver. A GraphDefinition
object is the root (it owns the store) or a view (a body, a child's copy, a builder's graph);
a GraphNode is a view: a node handle, its definition and its record. Any number of objects may
stand for one graph (they compare equal); a node has one object while that object lives (the
record's weak reference to it; ``_node_object``).

What the nodes use is owned by the driver's graphs, not by Python objects: one list per
hierarchy (the store's bag), owned by a CUDA user object that each graph with a node of ours
retains (``own_uses``). The driver carries the user object into clones (also one another
library makes through ``.handle``), child graph copies and executable graphs, and drops it when
the last of them is destroyed and their launches are done. The bag only grows: a node
destroyed, or its parameters changed, leaves what it used to the hierarchy's end.

Nodes are added in the context current on the calling thread (the driver runs a kernel,
memset, memcpy or conditional node in the context it was added in). As with the driver's
graphs, changing one hierarchy from several threads at once needs the caller's lock.
"""

cimport cython
from cpython.weakref cimport PyWeakref_NewRef
from libcpp.vector cimport vector

from cuda.bindings cimport cydriver
from cuda_core cimport _cuda_compat
from cuda.bindings.cydriver cimport (CUDA_GRAPH_INSTANTIATE_PARAMS, CUDA_SUCCESS, CUcontext,
                                     CUdevice, CUdeviceptr, CUgraph, CUgraphEdgeData,
                                     CUgraphNode,
                                     CUgraphNodeParams, CUgraphNodeType, CUmemAccessDesc,
                                     CUresult, CUuserObject)
from libc.string cimport memset as c_memset

from cuda_core._checks cimport check_address, check_int, check_ordinal, check_size
from cuda_core._checks import SizeOverflowError
from cuda_core._errors import InvalidValueError
from cuda_core._context cimport body_capture_ends, context_from_handle
from cuda_core._driver cimport device_count, driver_version, ensure_driver
from cuda_core._errors cimport HANDLE_RETURN, check_call, make_driver_error
from cuda_core._event cimport Event
from cuda_core._kernel_args cimport ParamHolder, holder_release
from cuda_core._resource cimport Resource
from cuda_core._stream cimport end_capture
from cuda_core.graph._condition cimport GraphCondition, create_condition
from cuda_core.graph._graph cimport Graph, dot_print, instantiate, instantiate_params
from cuda_core.graph._host_callback cimport _HostCall, host_node_params, new_owner
from cuda_core.graph._node_params cimport kernel_params, memcpy_params, memset_params

from cuda.bindings import driver as _driver_py

from cuda_core.graph._adjacency import AdjacencySetProxy
from cuda_core.graph._graph_options import GraphConditionalType, GraphMemoryType

# (GraphConditionalType.IF: IF is a word of Cython's own.)
_COND_IF = GraphConditionalType("if")
_COND_WHILE = GraphConditionalType("while")
_COND_SWITCH = GraphConditionalType("switch")

__all__ = ["GraphDefinition", "GraphNode"]


@cython.final
@cython.freelist(64)
cdef class _NodeRecord:
    """What one node uses, and by its identity whether the node lives (see the module
    docstring)."""


cdef _NodeRecord new_record(CUgraphNode node, CUgraph graph, list uses):
    cdef _NodeRecord record = _NodeRecord.__new__(_NodeRecord)
    record.node = node
    record.graph = graph
    record.uses = uses
    return record


@cython.final
cdef class _GraphStore(Resource):
    """The owner of a hierarchy's root ``CUgraph``, of its node records, and of one reference
    to the user object that owns what its nodes use."""

    cdef int check_whole(self, str what) except -1:
        if self._broken is not None:
            raise RuntimeError(f"{what}: {self._broken}")
        return 0

    cdef int _release(self) except -1:
        cdef CUgraph handle = self._handle
        cdef CUuserObject owner = self._owner
        end_body_captures(self)
        self._handle = NULL
        self._owner = NULL
        self._records = None
        self._retained = None
        self._bag = None  # the user object's reference keeps it for the graphs that hold it
        cdef CUresult destroyed = CUDA_SUCCESS
        cdef CUresult released = CUDA_SUCCESS
        if self._broken is not None:
            handle = NULL  # a corrupt body graph in it: destroying it crashed in the driver
        with nogil:  # as every destroy in a finalizer (DESIGN.md, the calls that wait)
            if handle != NULL:
                destroyed = cydriver.cuGraphDestroy(handle)
            if owner != NULL:
                released = cydriver.cuUserObjectRelease(owner, 1)
        check_call(destroyed, "cuGraphDestroy")
        check_call(released, "cuUserObjectRelease")
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._handle


cdef int end_body_captures(_GraphStore store) except -1:
    """End the capture of every body builder of ``store`` still capturing (before its graph,
    which holds their body graphs, is destroyed). None (a builder never set up): nothing.

    A body collected in the same reference cycle as the graph's owner has lost its weak
    reference (the collector clears those before it runs any finalizer) and may not have run
    its own finalizer yet: its capture is ended through its stream, which the store holds."""
    if store is None:
        return 0
    with cython.critical_section(store):  # as _new_body adds to it
        bodies, store._bodies = store._bodies, None
    for ref, stream in bodies or ():
        body = ref()
        if body is not None:
            err = body._end_capture()
        else:
            err = end_capture_on(<Stream>stream)
        if err != CUDA_SUCCESS:  # the body graph is incomplete: so is the graph of its node
            store._broken = BODY_CAPTURE_FAILED
    return 0


cdef str BODY_CAPTURE_FAILED = (
    "the capture of one of its conditional bodies failed, which left that body graph "
    "incomplete: the graph cannot be instantiated, cloned or updated from; build it again")


cdef int end_capture_on(Stream stream) except -1:
    cdef CUresult err = CUDA_SUCCESS
    if stream._closed:
        return 0  # Stream._release ended the capture and forgot the body
    with nogil:
        err = end_capture(stream._handle)
    body_capture_ends(stream._handle)
    return <int>err


cdef _GraphStore new_store(CUgraph owned):
    cdef _GraphStore store = _GraphStore.__new__(_GraphStore)
    store._handle = owned
    store._records = {}
    return store


cdef int own_uses(_GraphStore store, CUgraph graph, list uses) except -1:
    if not uses:
        return 0
    for item in uses:
        if isinstance(item, Event):  # its handle must outlive close() (Event._graph_held)
            (<Event>item)._graph_held = True
    # The splits of one capture add nodes to one store from their threads: one owner, one
    # retain per graph (free-threaded CPython; the driver calls here do not wait).
    with cython.critical_section(store):
        if store._owner == NULL:
            bag = []
            store._owner = new_owner(bag)
            store._bag = bag
            store._retained = set()
        if <size_t>graph not in store._retained:  # (a destroyed graph leaves it: forget_records)
            HANDLE_RETURN(cydriver.cuGraphRetainUserObject(graph, store._owner, 1, 0))
            store._retained.add(<size_t>graph)
        store._bag.extend(uses)
    return 0


# The GraphNode class of each CUgraphNodeType, and of each kind of conditional node under the
# *_NODE_CLASS keys of the .pxd (register_node_class); read-only once cuda_core.graph is
# imported.
cdef dict _NODE_CLASSES = {}


cdef int register_node_class(int node_type, type cls) except -1:
    _NODE_CLASSES[node_type] = cls
    return 0


cdef type _node_class(int node_type):
    try:
        return <type>_NODE_CLASSES[node_type]
    except KeyError:
        return GraphNode


cdef CUcontext current_ctx(str what) except? NULL:
    cdef CUcontext ctx = NULL
    HANDLE_RETURN(cydriver.cuCtxGetCurrent(&ctx))
    if ctx == NULL:
        raise RuntimeError(f"{what}: no CUDA context is current on this thread; call "
                           f"Device(i).set_current() first")
    return ctx


cdef GraphDefinition child_definition(object child, str what):
    if not isinstance(child, GraphDefinition):
        raise TypeError(f"{what}: child must be a GraphDefinition, not {type(child).__name__}")
    (<GraphDefinition>child)._check_valid(what)
    return <GraphDefinition>child


cdef int check_event(object event, str what) except -1:
    if not isinstance(event, Event):
        raise TypeError(f"{what}: event must be an Event, not {type(event).__name__}")
    (<Event>event)._check_open()
    return 0


cdef unsigned int switch_count(object count, str what) except? 0:
    value = check_int(count, f"{what}: count")
    if 1 <= value <= 0xFFFFFFFF:
        return value
    raise (InvalidValueError if value == 0 else SizeOverflowError)(
        f"{what}: count must be between 1 and 4294967295, got {value}")


cdef bint _owner_holds(_GraphStore store, _NodeRecord owner, CUgraph graph):
    """Whether ``owner``'s node lives and still owns ``graph`` (a body of it, or its child
    graph copy, which an update replaces)."""
    if store._records.get(<size_t>owner.node) is not owner:
        return False
    if isinstance(owner.info, tuple):
        return <size_t>graph in owner.info[2]
    return owner.info == <size_t>graph


cdef GraphDefinition definition_view(_GraphStore store, CUgraph graph, _NodeRecord owner):
    cdef GraphDefinition view = GraphDefinition.__new__(GraphDefinition)
    view._handle = graph
    view._store = store
    view._owner = owner
    return view


cdef class GraphDefinition(Resource):
    """A graph built explicitly: add nodes with the builder methods (here for nodes that depend
    on nothing, on a :class:`GraphNode` for nodes that depend on it), then :meth:`instantiate`
    a launchable :class:`Graph`.

    A GraphDefinition is also the view of a conditional node's body (:attr:`IfNode.then` and
    the like), of a child graph node's copy (:attr:`ChildGraphNode.child_graph`) and of a
    capture (:attr:`GraphBuilder.graph_definition`); such a view does not own its graph.

    .. note:: ``GraphDefinition()`` calls ``cuGraphCreate``; :meth:`close` (or the finalizer,
       once no view or node of it is left) calls ``cuGraphDestroy``. Graphs instantiated from
       it stay valid after it is closed.
    """

    def __init__(self):
        if self._handle != NULL:
            raise RuntimeError("GraphDefinition.__init__() called twice")
        ensure_driver()
        cdef CUgraph handle = NULL
        HANDLE_RETURN(cydriver.cuGraphCreate(&handle, 0))
        self._store = new_store(handle)
        self._handle = handle
        self._owns = True

    cdef int _release(self) except -1:
        # Only close() gets here (__del__ below does not): the root's destroys the hierarchy
        # now, a view's closes the view only.
        if self._owns and self._store is not None:
            self._store.close()
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._handle

    def __del__(self):
        # Dropped, not closed: nothing to release. The store's own finalizer destroys the
        # graph once no view or node holds it any more.
        self._closed = True

    cdef int _check_valid(self, str what) except -1:
        self._check_open()
        if self._handle == NULL:
            raise RuntimeError(f"{what}: this GraphDefinition was not initialized")
        if self._store._closed:
            raise RuntimeError(f"{what}: the GraphDefinition this view belongs to is closed")
        self._store.check_whole(what)
        if self._owner is not None and not _owner_holds(self._store, self._owner,
                                                        self._handle):
            raise RuntimeError(f"{what}: this GraphDefinition is no longer valid: the node "
                               f"that owned it was destroyed, or its child graph replaced")
        return 0

    cdef object _wrap(self, CUgraphNode handle):
        """A GraphNode of the class of the node's type, for a node of this graph."""
        cdef CUgraphNodeType kind
        cdef _NodeRecord record = self._store._records.get(<size_t>handle)
        cdef CUgraph copy = NULL
        HANDLE_RETURN(cydriver.cuGraphNodeGetType(handle, &kind))
        if record is None:  # not added by cuda_core: it uses nothing of ours
            record = new_record(handle, self._handle, None)
            if kind == cydriver.CU_GRAPH_NODE_TYPE_GRAPH:  # its copy goes with it
                HANDLE_RETURN(cydriver.cuGraphChildGraphNodeGetGraph(handle, &copy))
                record.info = <size_t>copy
            # (two threads reading one graph: both get the record the first one stored)
            record = self._store._records.setdefault(<size_t>handle, record)
        return _node_object(_class_of(kind, record), self, handle, record)

    @property
    def handle(self):
        """The ``cuda.bindings.driver.CUgraph`` (``int(definition.handle)`` is its address)."""
        self._check_valid("GraphDefinition.handle")
        return _driver_py.CUgraph(<size_t>self._handle)

    @property
    def is_valid(self):
        """False once closed (a root), or once the root is closed or the node that owned the
        graph was destroyed (a view)."""
        return (not self._closed and self._handle != NULL and not self._store._closed
                and (self._owner is None
                     or _owner_holds(self._store, self._owner, self._handle)))

    def __eq__(self, other):
        if not isinstance(other, GraphDefinition):
            return NotImplemented
        if self._handle == NULL:
            return self is other
        return self._handle == (<GraphDefinition>other)._handle

    def __hash__(self):
        return hash((GraphDefinition, <size_t>self._handle)) if self._handle != NULL else \
            object.__hash__(self)

    def __repr__(self):
        if not self.is_valid:
            return "<GraphDefinition (closed)>"
        return f"<GraphDefinition handle={<size_t>self._handle:#x}>"

    def close(self):
        """Close the definition. On a root (made by ``GraphDefinition()``): destroy the graph,
        its nodes, bodies and child graphs, and end every view and node of it. On a view: this
        object only. Idempotent; Graphs instantiated from it stay valid and keep what their
        nodes use.

        .. note:: Calls ``cuGraphDestroy`` (a root).
        """
        self._close()

    # -- whole graph ---------------------------------------------------------------------------

    def nodes(self):
        """The graph's nodes (not those of bodies or child graphs), each as a
        :class:`GraphNode` of its type's class.

        .. note:: Calls ``cuGraphGetNodes``.

        Returns
        -------
        set of GraphNode
        """
        cdef size_t count = 0
        cdef vector[CUgraphNode] handles
        cdef size_t i
        self._check_valid("GraphDefinition.nodes()")
        HANDLE_RETURN(cydriver.cuGraphGetNodes(self._handle, NULL, &count))
        handles.resize(count)
        if count:
            HANDLE_RETURN(cydriver.cuGraphGetNodes(self._handle, handles.data(), &count))
        return {self._wrap(handles[i]) for i in range(min(count, handles.size()))}

    def edges(self):
        """The graph's edges, each as ``(from_node, to_node)``: ``to_node`` depends on
        ``from_node``.

        .. note:: Calls ``cuGraphGetEdges``.

        Returns
        -------
        set of tuple of GraphNode
        """
        cdef size_t count = 0
        cdef vector[CUgraphNode] sources
        cdef vector[CUgraphNode] targets
        cdef vector[CUgraphEdgeData] data
        cdef size_t i
        self._check_valid("GraphDefinition.edges()")
        # Edge data is always asked for: without it the driver refuses a graph with a
        # programmatic edge (CUDA_ERROR_LOSSY_QUERY).
        data.resize(1)
        HANDLE_RETURN(_cuda_compat.cuGraphGetEdges(self._handle, NULL, NULL, NULL, &count))
        sources.resize(count)
        targets.resize(count)
        data.resize(count)
        if count:
            HANDLE_RETURN(_cuda_compat.cuGraphGetEdges(self._handle, sources.data(), targets.data(),
                                                   data.data(), &count))
        return {(self._wrap(sources[i]), self._wrap(targets[i]))
                for i in range(min(count, sources.size()))}

    def instantiate(self, options=None):
        """A launchable :class:`Graph` of this definition as it is now (later changes to the
        definition do not reach it), in the context current on this thread, with ``options``
        (a GraphCompleteOptions or a dict of its fields) as :meth:`GraphBuilder.complete`
        takes them. The Graph holds what the nodes use (kernels, argument objects, operands,
        events, callbacks) until it is closed and its launches are done, whatever becomes of
        this definition (the driver's user objects hold them; a clone of the definition's
        ``handle`` holds them too).

        .. note:: Calls ``cuGraphInstantiateWithParams``.
        """
        cdef CUDA_GRAPH_INSTANTIATE_PARAMS params
        opts = instantiate_params(options, "GraphDefinition.instantiate()", &params)  # held
        self._check_valid("GraphDefinition.instantiate()")
        ctx = context_from_handle(current_ctx("GraphDefinition.instantiate()"))
        return instantiate(self._handle, ctx, self._store, &params,
                           "GraphDefinition.instantiate()")

    def debug_dot_print(self, path, options=None):
        """Write the definition's nodes and edges to the file ``path`` in Graphviz's DOT
        language (as :meth:`GraphBuilder.debug_dot_print` does for a capture), with the
        details ``options`` (a GraphDebugPrintOptions or a dict of its fields) asks for.

        .. note:: Calls ``cuGraphDebugDotPrint``.
        """
        self._check_valid("GraphDefinition.debug_dot_print()")
        dot_print(self._handle, path, options, "GraphDefinition.debug_dot_print()")

    def create_condition(self, default_value=None):
        """A condition for the conditional nodes of this graph (the one this object stands
        for: a body's own conditional nodes need a condition of the body).

        .. note:: Calls ``cuGraphConditionalHandleCreate``, in the current context.

        Parameters
        ----------
        default_value : int, optional
            When given (0 to 2**32 - 1), the condition is set to it at the start of every
            launch; otherwise only the device sets it (``cudaGraphSetConditional``).

        Returns
        -------
        GraphCondition
        """
        cdef unsigned int value = 0
        if default_value is not None:
            value = check_int(default_value, "GraphDefinition.create_condition(): "
                              "default_value", 0, 0xFFFFFFFF)  # SizeOverflowError outside
        self._check_valid("GraphDefinition.create_condition()")
        return create_condition(self._handle, current_ctx("GraphDefinition.create_condition()"),
                                value, default_value is not None)

    # -- entry nodes (no dependencies): see the GraphNode methods of the same names ------------

    def allocate(self, size, *, device=None, memory_type=GraphMemoryType.DEVICE,
                 peer_access=None):
        """Add an allocation node that depends on nothing; see :meth:`GraphNode.allocate`."""
        return _add_alloc(self, (), size, device, memory_type, peer_access,
                          "GraphDefinition.allocate()")

    def deallocate(self, dptr):
        """Add a free node that depends on nothing; see :meth:`GraphNode.deallocate`."""
        return _add_free(self, (), dptr, "GraphDefinition.deallocate()")

    def memset(self, dst, value, width, height=1, pitch=0, *, dst_owner=None):
        """Add a memset node that depends on nothing; see :meth:`GraphNode.memset`."""
        return _add_memset(self, (), dst, value, width, height, pitch, dst_owner,
                           "GraphDefinition.memset()")

    def launch(self, config, kernel, *args):
        """Add a kernel node that depends on nothing; see :meth:`GraphNode.launch`."""
        return _add_kernel(self, (), config, kernel, args, "GraphDefinition.launch()")

    def empty(self):
        """Add an empty node that depends on nothing.

        Returns
        -------
        EmptyNode
        """
        return _add_empty(self, (), "GraphDefinition.empty()")

    def join(self, *nodes):
        """Add an empty node that depends on every node of ``nodes`` (on nothing when there
        are none).

        Returns
        -------
        EmptyNode
        """
        return _add_empty(self, nodes, "GraphDefinition.join()")

    def memcpy(self, dst, src, size, *, dst_owner=None, src_owner=None):
        """Add a memcpy node that depends on nothing; see :meth:`GraphNode.memcpy`."""
        return _add_memcpy(self, (), dst, src, size, dst_owner, src_owner,
                           "GraphDefinition.memcpy()")

    def embed(self, child):
        """Add a child graph node that depends on nothing; see :meth:`GraphNode.embed`."""
        return _add_child(self, (), child, "GraphDefinition.embed()")

    def record(self, event):
        """Add an event record node that depends on nothing; see :meth:`GraphNode.record`."""
        return _add_event(self, (), event, True, "GraphDefinition.record()")

    def wait(self, event):
        """Add an event wait node that depends on nothing; see :meth:`GraphNode.wait`."""
        return _add_event(self, (), event, False, "GraphDefinition.wait()")

    def callback(self, fn, *, user_data=None):
        """Add a host callback node that depends on nothing; see :meth:`GraphNode.callback`."""
        return _add_host(self, (), fn, user_data, "GraphDefinition.callback()")

    def if_then(self, condition):
        """Add an if node that depends on nothing; see :meth:`GraphNode.if_then`."""
        return _add_conditional(self, (), condition, _COND_IF, 1,
                                "GraphDefinition.if_then()")

    def if_else(self, condition):
        """Add an if/else node that depends on nothing; see :meth:`GraphNode.if_else`."""
        return _add_conditional(self, (), condition, _COND_IF, 2,
                                "GraphDefinition.if_else()")

    def while_loop(self, condition):
        """Add a while node that depends on nothing; see :meth:`GraphNode.while_loop`."""
        return _add_conditional(self, (), condition, _COND_WHILE, 1,
                                "GraphDefinition.while_loop()")

    def switch(self, condition, count):
        """Add a switch node that depends on nothing; see :meth:`GraphNode.switch`."""
        return _add_conditional(self, (), condition, _COND_SWITCH,
                                switch_count(count, "GraphDefinition.switch()"),
                                "GraphDefinition.switch()")


include "_node_base.pxi"
