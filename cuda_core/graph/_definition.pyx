"""GraphDefinition: a graph built node by node (explicit graphs), instantiated into the same
:class:`Graph` a capture completes into; and the one path by which every builder (of a
definition or of a node) adds a node (``add_*``, through ``_add``).

A GraphDefinition object is the root of a hierarchy (it owns the hierarchy's store, ``_store``)
or a view (a body, a child's copy, a builder's graph); a GraphNode (``_node_base``) is a view: a
node handle, its definition and its record. Any number of objects may stand for one graph (they
compare equal); a node has one object while that object lives (the record's weak reference to
it; ``_node_base.node_object``). This module and ``_node_base`` cimport each other: a
definition makes its nodes' objects there, and a node's builders add nodes here.

Nodes are added in the context current on the calling thread (the driver runs a kernel,
memset, memcpy or conditional node in the context it was added in). As with the driver's
graphs, changing one hierarchy from several threads at once needs the caller's lock.
"""

from libc.string cimport memset as c_memset
from libcpp.vector cimport vector

from cuda.bindings cimport cydriver
from cuda_core cimport _cuda_compat
from cuda.bindings.cydriver cimport (CUDA_GRAPH_INSTANTIATE_PARAMS, CUDA_SUCCESS, CUgraph,
                                     CUgraphConditionalNodeType, CUgraphEdgeData, CUgraphNode,
                                     CUgraphNodeParams, CUgraphNodeType, CUmemAccessDesc,
                                     CUresult)

from cuda_core._checks cimport check_int
from cuda_core._context cimport context_from_handle
from cuda_core._driver cimport driver_version, ensure_driver
from cuda_core._errors cimport HANDLE_RETURN, make_driver_error
from cuda_core._errors import InvalidValueError
from cuda_core._kernel_args cimport ParamHolder, holder_release
from cuda_core._resource cimport Resource
from cuda_core.graph._condition cimport GraphCondition, create_condition
from cuda_core.graph._graph cimport dot_print, instantiate, instantiate_params
from cuda_core.graph._host_callback cimport _HostCall, host_node_params
from cuda_core.graph._node_base cimport (GraphNode, class_of, conditional_class, node_class,
                                         node_object, same_graph)
from cuda_core.graph._node_params cimport (COND_TYPES, alloc_params, check_child,
                                           conditional_params, current_ctx, event_params,
                                           free_params, kernel_params, memcpy_params,
                                           memset_params, switch_count)
from cuda_core.graph._store cimport _GraphStore, _NodeRecord, new_record, new_store, own_uses

from cuda.bindings import driver as _driver_py

from cuda_core.typing import GraphMemoryType

__all__ = ["GraphDefinition"]



cdef GraphDefinition child_definition(object child, str what):
    if not isinstance(child, GraphDefinition):
        raise TypeError(f"{what}: child must be a GraphDefinition, not {type(child).__name__}")
    (<GraphDefinition>child)._check_valid(what)
    return <GraphDefinition>child



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
        return node_object(class_of(kind, record), self, handle, record)

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
        return add_alloc(self, (), size, device, memory_type, peer_access,
                          "GraphDefinition.allocate()")

    def deallocate(self, dptr):
        """Add a free node that depends on nothing; see :meth:`GraphNode.deallocate`."""
        return add_free(self, (), dptr, "GraphDefinition.deallocate()")

    def memset(self, dst, value, width, height=1, pitch=0, *, dst_owner=None):
        """Add a memset node that depends on nothing; see :meth:`GraphNode.memset`."""
        return add_memset(self, (), dst, value, width, height, pitch, dst_owner,
                           "GraphDefinition.memset()")

    def launch(self, config, kernel, *args):
        """Add a kernel node that depends on nothing; see :meth:`GraphNode.launch`."""
        return add_kernel(self, (), config, kernel, args, "GraphDefinition.launch()")

    def empty(self):
        """Add an empty node that depends on nothing.

        Returns
        -------
        EmptyNode
        """
        return add_empty(self, (), "GraphDefinition.empty()")

    def join(self, *nodes):
        """Add an empty node that depends on every node of ``nodes`` (on nothing when there
        are none).

        Returns
        -------
        EmptyNode
        """
        return add_empty(self, nodes, "GraphDefinition.join()")

    def memcpy(self, dst, src, size, *, dst_owner=None, src_owner=None):
        """Add a memcpy node that depends on nothing; see :meth:`GraphNode.memcpy`."""
        return add_memcpy(self, (), dst, src, size, dst_owner, src_owner,
                           "GraphDefinition.memcpy()")

    def embed(self, child):
        """Add a child graph node that depends on nothing; see :meth:`GraphNode.embed`."""
        return add_child(self, (), child, "GraphDefinition.embed()")

    def record(self, event):
        """Add an event record node that depends on nothing; see :meth:`GraphNode.record`."""
        return add_event(self, (), event, True, "GraphDefinition.record()")

    def wait(self, event):
        """Add an event wait node that depends on nothing; see :meth:`GraphNode.wait`."""
        return add_event(self, (), event, False, "GraphDefinition.wait()")

    def callback(self, fn, *, user_data=None):
        """Add a host callback node that depends on nothing; see :meth:`GraphNode.callback`."""
        return add_host(self, (), fn, user_data, "GraphDefinition.callback()")

    def if_then(self, condition):
        """Add an if node that depends on nothing; see :meth:`GraphNode.if_then`."""
        return add_conditional(self, (), condition, cydriver.CU_GRAPH_COND_TYPE_IF, 1,
                               "GraphDefinition.if_then()")

    def if_else(self, condition):
        """Add an if/else node that depends on nothing; see :meth:`GraphNode.if_else`."""
        return add_conditional(self, (), condition, cydriver.CU_GRAPH_COND_TYPE_IF, 2,
                               "GraphDefinition.if_else()")

    def while_loop(self, condition):
        """Add a while node that depends on nothing; see :meth:`GraphNode.while_loop`."""
        return add_conditional(self, (), condition, cydriver.CU_GRAPH_COND_TYPE_WHILE, 1,
                               "GraphDefinition.while_loop()")

    def switch(self, condition, count):
        """Add a switch node that depends on nothing; see :meth:`GraphNode.switch`."""
        return add_conditional(self, (), condition, cydriver.CU_GRAPH_COND_TYPE_SWITCH,
                               switch_count(count, "GraphDefinition.switch()"),
                               "GraphDefinition.switch()")


# -- adding a node (the builders of GraphDefinition and GraphNode) ------------------------------

cdef GraphNode _add(GraphDefinition graph, tuple deps, CUgraphNodeParams* params, list uses,
                    type cls, str what):
    """Add the node ``params`` describe (its arguments already checked) to ``graph``,
    depending on ``deps``, and record what it uses (its record's info is the caller's to set:
    what it holds is known once the node is added). ``cls`` None: the class of its type."""
    cdef vector[CUgraphNode] handles
    cdef CUgraphNode node = NULL
    cdef CUresult err
    graph._check_valid(what)
    deps = same_graph(graph, deps, what)
    # The nodes that run in a context run in the one current now.
    if params.type == cydriver.CU_GRAPH_NODE_TYPE_KERNEL:
        params.kernel.ctx = current_ctx(what)
    elif params.type == cydriver.CU_GRAPH_NODE_TYPE_MEMSET:
        params.memset.ctx = current_ctx(what)
    elif params.type == cydriver.CU_GRAPH_NODE_TYPE_MEMCPY:
        params.memcpy.copyCtx = current_ctx(what)
    elif params.type == cydriver.CU_GRAPH_NODE_TYPE_CONDITIONAL:
        params.conditional.ctx = current_ctx(what)
    for dep in deps:
        handles.push_back((<GraphNode>dep)._handle)
    # Owned first: a node that the driver refuses leaves its objects in the bag, which is
    # harmless, and one that it adds is never without them.
    own_uses(graph._store, graph._handle, uses)
    err = _cuda_compat.cuGraphAddNode(&node, graph._handle, handles.data(), NULL, handles.size(),
                                  params)
    if err != CUDA_SUCCESS:
        _raise_add_error(err, params.type, what)
    cdef _NodeRecord record = new_record(node, graph._handle, uses)
    graph._store._records[<size_t>node] = record
    if cls is None:
        cls = node_class(params.type)
    return node_object(cls, graph, node, record)


cdef int _raise_add_error(CUresult err, CUgraphNodeType kind, str what) except -1:
    if err == cydriver.CUDA_ERROR_INVALID_VALUE:
        if kind == cydriver.CU_GRAPH_NODE_TYPE_MEM_FREE:
            raise InvalidValueError(f"{what}: the driver refused the free: dptr is not memory "
                                    f"that an allocation node of a graph gave, or it is freed "
                                    f"twice")
        if kind == cydriver.CU_GRAPH_NODE_TYPE_HOST:
            raise InvalidValueError(f"{what}: the driver refused the host node (none may be "
                                    f"in a conditional body)")
    if err == cydriver.CUDA_ERROR_NOT_SUPPORTED and kind == cydriver.CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        raise make_driver_error(err, f"{what}: this driver does not support the memory_type "
                                     f"(or the peer_access) asked for in a graph allocation")
    HANDLE_RETURN(err)
    return 0


cdef object add_empty(GraphDefinition graph, tuple deps, str what):
    cdef CUgraphNodeParams params
    c_memset(&params, 0, sizeof(params))
    params.type = cydriver.CU_GRAPH_NODE_TYPE_EMPTY
    return _add(graph, deps, &params, None, None, what)


cdef object add_kernel(GraphDefinition graph, tuple deps, object config, object kernel,
                       tuple args, str what):
    cdef CUgraphNodeParams params
    cdef ParamHolder holder
    c_memset(&params, 0, sizeof(params))
    holder.heap = NULL  # released on every path, whether or not packing began
    try:
        uses = kernel_params(&params, &holder, config, kernel, args, what)
        return _add(graph, deps, &params, uses, None, what)
    finally:
        holder_release(&holder)


cdef object add_memset(GraphDefinition graph, tuple deps, object dst, object value,
                       object width, object height, object pitch, object dst_owner, str what):
    cdef CUgraphNodeParams params
    c_memset(&params, 0, sizeof(params))
    uses = memset_params(&params, dst, value, width, height, pitch, dst_owner, what)
    return _add(graph, deps, &params, uses, None, what)


cdef object add_memcpy(GraphDefinition graph, tuple deps, object dst, object src, object size,
                       object dst_owner, object src_owner, str what):
    cdef CUgraphNodeParams params
    c_memset(&params, 0, sizeof(params))
    uses = memcpy_params(&params, dst, src, size, dst_owner, src_owner, what)
    return _add(graph, deps, &params, uses, None, what)


cdef object add_alloc(GraphDefinition graph, tuple deps, object size, object device,
                      object memory_type, object peer_access, str what):
    cdef CUgraphNodeParams params
    cdef vector[CUmemAccessDesc] access  # read by the driver as the node is added
    c_memset(&params, 0, sizeof(params))
    alloc_params(&params, access, size, device, memory_type, peer_access, what)
    return _add(graph, deps, &params, None, None, what)


cdef object add_free(GraphDefinition graph, tuple deps, object dptr, str what):
    cdef CUgraphNodeParams params
    c_memset(&params, 0, sizeof(params))
    free_params(&params, dptr, what)
    return _add(graph, deps, &params, None, None, what)


cdef object add_child(GraphDefinition graph, tuple deps, object child, str what):
    cdef CUgraphNodeParams params
    cdef CUgraph copy = NULL
    cdef GraphDefinition c = child_definition(child, what)
    graph._check_valid(what)
    if c._handle == graph._handle:
        raise ValueError(f"{what}: a graph cannot contain itself")
    check_child(c._handle, what)
    c_memset(&params, 0, sizeof(params))
    params.type = cydriver.CU_GRAPH_NODE_TYPE_GRAPH
    params.graph.graph = c._handle  # ownership 0: the driver clones it
    # The copy carries the child's user object, and with it what the child's nodes use.
    cdef GraphNode node = _add(graph, deps, &params, None, None, what)
    HANDLE_RETURN(cydriver.cuGraphChildGraphNodeGetGraph(node._handle, &copy))
    node._record.info = <size_t>copy
    return node


cdef object add_event(GraphDefinition graph, tuple deps, object event, bint record, str what):
    cdef CUgraphNodeParams params
    c_memset(&params, 0, sizeof(params))
    uses = event_params(&params, event, record, what)
    return _add(graph, deps, &params, uses, None, what)


cdef object add_host(GraphDefinition graph, tuple deps, object fn, object user_data, str what):
    cdef CUgraphNodeParams params
    c_memset(&params, 0, sizeof(params))
    params.type = cydriver.CU_GRAPH_NODE_TYPE_HOST
    cdef _HostCall call = host_node_params(&params.host, fn, user_data, what)
    return _add(graph, deps, &params, [call], None, what)


cdef object add_conditional(GraphDefinition graph, tuple deps, object condition,
                            CUgraphConditionalNodeType kind, unsigned int count, str what):
    cdef CUgraphNodeParams params
    if not isinstance(condition, GraphCondition):
        raise TypeError(f"{what}: condition must be a GraphCondition (from "
                        f"create_condition()), not {type(condition).__name__}")
    graph._check_valid(what)
    if (<GraphCondition>condition)._graph != graph._handle:
        raise ValueError(f"{what}: the condition was created for another graph; a "
                         f"conditional node takes a condition of its own graph (a body's "
                         f"nodes: the body's create_condition())")
    if count > 1 or kind == cydriver.CU_GRAPH_COND_TYPE_SWITCH:
        version = driver_version()
        if version < (12, 8):
            raise RuntimeError(f"{what} needs a CUDA 12.8 driver; this one is "
                               f"{version[0]}.{version[1]}")
    cond_type = COND_TYPES[kind]
    cls = conditional_class(cond_type, count)
    c_memset(&params, 0, sizeof(params))
    conditional_params(&params, <GraphCondition>condition, kind, count)
    # The driver points phGraph_out at the node's bodies (an array it owns) as it adds it.
    # The condition goes with what the graph owns, as every node's objects do.
    cdef GraphNode node = _add(graph, deps, &params, [condition], cls, what)
    node._record.info = (
        condition, cond_type,
        tuple(<size_t>params.conditional.phGraph_out[i] for i in range(count)))
    return node
