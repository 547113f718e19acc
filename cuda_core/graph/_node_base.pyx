"""GraphNode: the base of every node class, with the builder methods that add a node depending
on this one (through ``_definition.add_*``) and the live ``pred``/``succ`` sets with the cycle
check; and the one object that stands for a node while it lives (``node_object``), of the class
``_node_types`` registers for the node's type.

This module and ``_definition`` cimport each other: a definition's builders and its
``nodes()`` make node objects here, and a node's builders add nodes there. The store and the
records (``_store``) say which nodes live.
"""

cimport cython
from cpython.weakref cimport PyWeakref_NewRef
from libcpp.vector cimport vector

from cuda.bindings cimport cydriver
from cuda_core cimport _cuda_compat
from cuda.bindings.cydriver cimport CUgraphEdgeData, CUgraphNode, CUgraphNodeType

from cuda_core._errors cimport HANDLE_RETURN
from cuda_core.graph._definition cimport (GraphDefinition, add_alloc, add_child, add_conditional,
                                          add_empty, add_event, add_free, add_host, add_kernel,
                                          add_memcpy, add_memset)
from cuda_core.graph._node_params cimport COND_TYPES, switch_count
from cuda_core.graph._store cimport _NodeRecord, forget_records, owned_graphs

from cuda.bindings import driver as _driver_py

from cuda_core.graph._adjacency import AdjacencySetProxy
from cuda_core.typing import GraphMemoryType

_COND_IF = COND_TYPES[cydriver.CU_GRAPH_COND_TYPE_IF]
_COND_WHILE = COND_TYPES[cydriver.CU_GRAPH_COND_TYPE_WHILE]

__all__ = ["GraphNode"]


cdef class GraphNode:
    """A node of a :class:`GraphDefinition`. Its builder methods add a node that depends on it.

    Not constructible: nodes come from the builder methods and from
    :meth:`GraphDefinition.nodes`. While a node's object lives, every lookup of the node
    (builders, :meth:`GraphDefinition.nodes`, :meth:`GraphDefinition.edges`, :attr:`pred`,
    :attr:`succ`) returns that same object.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__} objects cannot be instantiated directly; "
                           f"use the builder methods of GraphDefinition and GraphNode")

    cdef int _check_valid(self, str what) except -1:
        if self._graph is None:
            raise RuntimeError(f"{what}: this GraphNode was not made by a GraphDefinition")
        self._graph._check_valid(what)
        if self._graph._store._records.get(<size_t>self._handle) is not self._record:
            raise RuntimeError(f"{what}: this {type(self).__name__} was destroyed")
        return 0

    @property
    def type(self):
        """The node's ``cuda.bindings.driver.CUgraphNodeType``.

        .. note:: Calls ``cuGraphNodeGetType``.
        """
        cdef CUgraphNodeType kind
        self._check_valid("GraphNode.type")
        HANDLE_RETURN(cydriver.cuGraphNodeGetType(self._handle, &kind))
        return _driver_py.CUgraphNodeType(<int>kind)

    @property
    def graph(self):
        """The :class:`GraphDefinition` the node belongs to."""
        return self._graph

    @property
    def handle(self):
        """The ``cuda.bindings.driver.CUgraphNode``."""
        self._check_valid("GraphNode.handle")
        return _driver_py.CUgraphNode(<size_t>self._handle)

    @property
    def is_valid(self):
        """False once the node was destroyed or its definition is no longer valid."""
        return (self._graph is not None and self._graph.is_valid
                and self._graph._store._records.get(<size_t>self._handle) is self._record)

    def destroy(self):
        """Remove the node and its edges (and a conditional node's bodies, a child graph
        node's copy) from the definition. A no-op when it is already gone. Graphs
        instantiated before keep what it used, and may run while it is destroyed.

        .. note:: Calls ``cuGraphDestroyNode``.
        """
        if not self.is_valid:
            return
        owned = owned_graphs(self._record)
        HANDLE_RETURN(cydriver.cuGraphDestroyNode(self._handle))
        del self._graph._store._records[<size_t>self._handle]
        forget_records(self._graph._store, owned)

    def __eq__(self, other):
        if not isinstance(other, GraphNode):
            return NotImplemented
        return (self._handle == (<GraphNode>other)._handle
                and self._record is (<GraphNode>other)._record)

    def __hash__(self):
        return hash((GraphNode, <size_t>self._handle))

    def __repr__(self):
        state = "" if self.is_valid else " (destroyed)"
        return f"<{type(self).__name__} handle={<size_t>self._handle:#x}{state}>"

    # -- edges ---------------------------------------------------------------------------------

    @property
    def pred(self):
        """The nodes this one depends on, as a live set: adding or removing a node adds or
        removes the edge; assigning an iterable of nodes replaces them all."""
        self._check_valid("GraphNode.pred")
        return AdjacencySetProxy(self, False)

    @pred.setter
    def pred(self, value):
        _replace(self, value, False)

    @property
    def succ(self):
        """The nodes that depend on this one, as a live set (see :attr:`pred`)."""
        self._check_valid("GraphNode.succ")
        return AdjacencySetProxy(self, True)

    @succ.setter
    def succ(self, value):
        _replace(self, value, True)

    def _adjacent(self, succ):
        """The set of this node's successors (``succ``) or predecessors."""
        cdef vector[CUgraphNode] handles
        cdef vector[CUgraphEdgeData] data
        cdef size_t i
        self._check_valid("GraphNode.succ" if succ else "GraphNode.pred")
        _read_adjacent(self._handle, succ, handles, data)
        return {self._graph._wrap(handles[i]) for i in range(handles.size())}

    def _connect(self, nodes, succ):
        """Add the edges between this node and ``nodes`` that are not there yet; each must
        not close a cycle."""
        what = "GraphNode.succ" if succ else "GraphNode.pred"
        others = same_graph(self._graph, nodes, what)
        self._check_valid(what)
        present = self._adjacent(succ)
        # Every new edge is checked before the first is added: all end at this node, so an
        # edge added earlier cannot make a later one close a cycle that was not there.
        new = []
        for other in others:
            if other == self:
                raise ValueError(f"{what}: a node cannot depend on itself")
            if other in present:
                continue
            source, target = (self, other) if succ else (other, self)
            if _reaches(target, source):
                raise ValueError(f"{what}: the edge {source!r} -> {target!r} would close a cycle")
            new.append((source, target))
        for source, target in new:
            HANDLE_RETURN(_cuda_compat.cuGraphAddDependencies(
                self._graph._handle, &(<GraphNode>source)._handle,
                &(<GraphNode>target)._handle, NULL, 1))

    def _disconnect(self, nodes, succ):
        """Remove the edges between this node and those of ``nodes`` that have one."""
        cdef vector[CUgraphNode] handles
        cdef vector[CUgraphEdgeData] data
        cdef CUgraphNode other_handle
        cdef size_t i
        what = "GraphNode.succ" if succ else "GraphNode.pred"
        others = same_graph(self._graph, nodes, what)
        self._check_valid(what)
        _read_adjacent(self._handle, succ, handles, data)
        for other in others:
            other_handle = (<GraphNode>other)._handle
            for i in range(handles.size()):
                if handles[i] != other_handle:
                    continue
                # The edge's own data: a programmatic edge is removed only with it.
                if succ:
                    HANDLE_RETURN(_cuda_compat.cuGraphRemoveDependencies(
                        self._graph._handle, &self._handle, &other_handle, &data[i], 1))
                else:
                    HANDLE_RETURN(_cuda_compat.cuGraphRemoveDependencies(
                        self._graph._handle, &other_handle, &self._handle, &data[i], 1))

    # -- builders: the new node depends on this one --------------------------------------------

    def launch(self, config, kernel, *args):
        """Add a kernel node that depends on this node.

        The arguments go through the checks of :func:`launch` (count, size and, for a C++
        kernel, kind): a mismatch is refused here, not found when the graph runs. The driver
        copies the argument values into the node; the kernel and the argument objects (a
        :class:`Buffer`, an array with ``__cuda_array_interface__``) are held by the graph, its
        clones and every Graph made from them (a CUDA user object owns them). An argument
        object that holds the definition itself is never freed: the user object's reference
        is out of the garbage collector's sight.

        .. note:: Calls ``cuGraphAddNode`` (``CU_GRAPH_NODE_TYPE_KERNEL``), in the current
           context.

        Parameters
        ----------
        config : LaunchConfig
            Grid, block and dynamic shared memory. A config with a cluster,
            ``is_cooperative`` or programmatic stream serialization is refused (kernel nodes
            take none of them, as cuda.core documents).
        kernel : Kernel
        *args
            The kernel's arguments, as for :func:`launch`.

        Returns
        -------
        KernelNode

        Raises
        ------
        TypeError
            For a wrong argument count, type, size or kind (as :func:`launch`).
        """
        return add_kernel(self._graph, (self,), config, kernel, args, "GraphNode.launch()")

    def join(self, *nodes):
        """Add an empty node that depends on this node and every node of ``nodes``.

        Returns
        -------
        EmptyNode
        """
        return add_empty(self._graph, (self,) + nodes, "GraphNode.join()")

    def allocate(self, size, *, device=None, memory_type=GraphMemoryType.DEVICE,
                 peer_access=None):
        """Add a node that depends on this node and allocates ``size`` bytes, at
        :attr:`AllocNode.dptr`, for the nodes after it; a :meth:`deallocate` node (in this
        graph or a later launch, or ``Device.allocate``'s ``GraphMemoryResource`` rules) gives
        it back.

        .. note:: Calls ``cuGraphAddNode`` (``CU_GRAPH_NODE_TYPE_MEM_ALLOC``).

        Parameters
        ----------
        size : int
            Bytes, at least 1.
        device : cuda_core.Device or int, optional
            Where the memory is (default: the current context's device).
        memory_type : GraphMemoryType or str, optional
            ``"device"`` (default), ``"host"`` (pinned) or ``"managed"``, as far as the
            driver supports it in graphs.
        peer_access : list of cuda_core.Device or int, optional
            Other devices that may read and write the memory.

        Returns
        -------
        AllocNode
        """
        return add_alloc(self._graph, (self,), size, device, memory_type, peer_access,
                          "GraphNode.allocate()")

    def deallocate(self, dptr):
        """Add a node that depends on this node and frees ``dptr``, memory an allocation node
        of a graph gave.

        .. note:: Calls ``cuGraphAddNode`` (``CU_GRAPH_NODE_TYPE_MEM_FREE``).

        Parameters
        ----------
        dptr : int
            The address (``AllocNode.dptr``).

        Returns
        -------
        FreeNode
        """
        return add_free(self._graph, (self,), dptr, "GraphNode.deallocate()")

    def memset(self, dst, value, width, height=1, pitch=0, *, dst_owner=None):
        """Add a memset node that depends on this node: ``height`` rows of ``width`` elements,
        ``pitch`` bytes apart, set to ``value``.

        .. note:: Calls ``cuGraphAddNode`` (``CU_GRAPH_NODE_TYPE_MEMSET``), in the current
           context.

        Parameters
        ----------
        dst : Buffer or int
            A Buffer (held by the graph; the rows must lie inside it) or a device address
            (kept alive by the caller, or by ``dst_owner``), aligned to the element size.
        value : int or an object with the buffer protocol
            An int is one byte (0 to 255); a 1-, 2- or 4-byte object (``numpy.uint16(7)``,
            ``numpy.float32(1.5)``, a ctypes scalar) sets elements of its size to its bits.
        width : int
            Elements per row, at least 1.
        height : int, optional
            Rows, at least 1 (default 1).
        pitch : int, optional
            Bytes from one row to the next, at least a row's bytes when ``height > 1``.
        dst_owner : object, optional
            Held by the graph, with a raw address only.

        Returns
        -------
        MemsetNode
        """
        return add_memset(self._graph, (self,), dst, value, width, height, pitch, dst_owner,
                           "GraphNode.memset()")

    def memcpy(self, dst, src, size, *, dst_owner=None, src_owner=None):
        """Add a node that depends on this node and copies ``size`` bytes from ``src`` to
        ``dst`` (device, pinned host or managed memory, told apart by the driver).

        .. note:: Calls ``cuGraphAddNode`` (``CU_GRAPH_NODE_TYPE_MEMCPY``), in the current
           context.

        Parameters
        ----------
        dst, src : Buffer or int
            A Buffer (held by the graph; ``size`` must fit in it) or an address (kept alive by
            the caller, or by ``dst_owner``/``src_owner``).
        size : int
            Bytes, at least 1.
        dst_owner, src_owner : object, optional
            Held by the graph, with a raw address only.

        Returns
        -------
        MemcpyNode
        """
        return add_memcpy(self._graph, (self,), dst, src, size, dst_owner, src_owner,
                           "GraphNode.memcpy()")

    def embed(self, child):
        """Add a node that depends on this node and runs a copy of ``child`` (later changes to
        ``child`` do not reach it; :attr:`ChildGraphNode.child_graph` is the copy).

        .. note:: Calls ``cuGraphAddNode`` (``CU_GRAPH_NODE_TYPE_GRAPH``).

        Parameters
        ----------
        child : GraphDefinition
            Without allocation, free or conditional nodes (the driver takes none in a child
            graph). What its nodes use is held with this graph.

        Returns
        -------
        ChildGraphNode
        """
        return add_child(self._graph, (self,), child, "GraphNode.embed()")

    def record(self, event):
        """Add a node that depends on this node and records ``event`` (held by the graph).

        .. note:: Calls ``cuGraphAddNode`` (``CU_GRAPH_NODE_TYPE_EVENT_RECORD``).

        Returns
        -------
        EventRecordNode
        """
        return add_event(self._graph, (self,), event, True, "GraphNode.record()")

    def wait(self, event):
        """Add a node that depends on this node and waits for ``event`` (held by the graph).

        .. note:: Calls ``cuGraphAddNode`` (``CU_GRAPH_NODE_TYPE_WAIT_EVENT``).

        Returns
        -------
        EventWaitNode
        """
        return add_event(self._graph, (self,), event, False, "GraphNode.wait()")

    def callback(self, fn, *, user_data=None):
        """Add a node that depends on this node and calls ``fn`` on a driver thread when the
        work before it is done (at every launch of the graph).

        .. note:: Calls ``cuGraphAddNode`` (``CU_GRAPH_NODE_TYPE_HOST``). ``fn`` must not
           call CUDA. The driver takes no host node in a conditional body.

        Parameters
        ----------
        fn : callable or ctypes function pointer
            A Python callable taking no arguments (an exception it raises is reported through
            ``sys.unraisablehook``), or a ctypes ``CFUNCTYPE(None, c_void_p)`` function,
            called with ``user_data``.
        user_data : int or bytes-like, optional
            Only with a ctypes function: an address (the caller keeps the memory alive), or a
            bytes-like object, copied and held with the graph.

        Returns
        -------
        HostCallbackNode
        """
        return add_host(self._graph, (self,), fn, user_data, "GraphNode.callback()")

    def if_then(self, condition):
        """Add a node that depends on this node and runs a body graph (:attr:`IfNode.then`,
        empty to begin with) when ``condition`` is nonzero.

        .. note:: Calls ``cuGraphAddNode`` (``CU_GRAPH_NODE_TYPE_CONDITIONAL``), in the
           current context.

        Parameters
        ----------
        condition : GraphCondition
            Created by :meth:`GraphDefinition.create_condition` of this node's graph.

        Returns
        -------
        IfNode
        """
        return add_conditional(self._graph, (self,), condition,
                               cydriver.CU_GRAPH_COND_TYPE_IF, 1, "GraphNode.if_then()")

    def if_else(self, condition):
        """Add a node that depends on this node and runs :attr:`IfElseNode.then` when
        ``condition`` is nonzero, :attr:`IfElseNode.else_` when it is zero. Needs a CUDA 12.8
        driver.

        Returns
        -------
        IfElseNode
        """
        return add_conditional(self._graph, (self,), condition,
                               cydriver.CU_GRAPH_COND_TYPE_IF, 2, "GraphNode.if_else()")

    def while_loop(self, condition):
        """Add a node that depends on this node and runs :attr:`WhileNode.body` again and
        again while ``condition`` is nonzero (checked before each run; the body sets it).

        Returns
        -------
        WhileNode
        """
        return add_conditional(self._graph, (self,), condition,
                               cydriver.CU_GRAPH_COND_TYPE_WHILE, 1, "GraphNode.while_loop()")

    def switch(self, condition, count):
        """Add a node that depends on this node and runs ``branches[i]`` when ``condition``
        is ``i``, none when it is ``count`` or more. Needs a CUDA 12.8 driver.

        Parameters
        ----------
        condition : GraphCondition
        count : int
            The number of branches, at least 1.

        Returns
        -------
        SwitchNode
        """
        return add_conditional(self._graph, (self,), condition,
                               cydriver.CU_GRAPH_COND_TYPE_SWITCH,
                               switch_count(count, "GraphNode.switch()"), "GraphNode.switch()")


# The GraphNode class of each CUgraphNodeType, and of each kind of conditional node under the
# *_NODE_CLASS keys of the .pxd: set once, while cuda_core.graph is imported, by _node_types
# (which cimports this module), and only read afterwards.
cdef dict _NODE_CLASSES = None


cdef int register_node_classes(dict classes) except -1:
    global _NODE_CLASSES
    if _NODE_CLASSES is not None:
        raise RuntimeError("register_node_classes(): the graph node classes are already "
                           "registered")
    _NODE_CLASSES = classes
    return 0


cdef type node_class(int node_type):
    if _NODE_CLASSES is None:  # only before cuda_core.graph finished importing
        raise RuntimeError("the graph node classes are not registered: import cuda_core.graph "
                           "first")
    # A node type without a class of its own (a batch memory operation, an external
    # semaphore node: made outside cuda_core) is a plain GraphNode.
    return <type>_NODE_CLASSES.get(node_type, GraphNode)


cdef GraphNode _live_object(_NodeRecord record, type cls):
    """The GraphNode object of ``record`` while it lives, of class ``cls`` and with an open
    definition view; else None. The caller holds the record's critical section."""
    if record.obj_ref is None:
        return None
    node = record.obj_ref()
    if node is None or type(node) is not cls or (<GraphNode>node)._graph._closed:
        return None  # (a view the user closed: the node gets an object of an open view)
    return <GraphNode>node


cdef GraphNode node_object(type cls, GraphDefinition graph, CUgraphNode handle,
                            _NodeRecord record):
    """The one GraphNode object for the node of ``record`` (``handle`` in ``graph``): the one
    that already stands for it while that object lives, else a new one. A record is the node's
    for as long as it lives in its store (a destroyed node's record leaves the store, and a
    node the driver gives the same address gets a new record), so an object is never shared
    by two nodes. Free-threaded: the weak reference is read and set in a critical section on
    the record, the object made outside it (making it may run finalizers)."""
    cdef GraphNode node
    with cython.critical_section(record):
        node = _live_object(record, cls)
    if node is not None:
        return node
    node = <GraphNode>cls.__new__(cls)
    node._handle = handle
    node._graph = graph
    node._record = record
    ref = PyWeakref_NewRef(node, None)
    with cython.critical_section(record):
        existing = _live_object(record, cls)
        if existing is not None:  # another thread made one first
            return existing
        record.obj_ref = ref
    return node


cdef type conditional_class(object cond_type, Py_ssize_t count):
    if cond_type == _COND_IF:
        return node_class(IF_ELSE_NODE_CLASS if count == 2 else IF_NODE_CLASS)
    return node_class(WHILE_NODE_CLASS if cond_type == _COND_WHILE else
                       SWITCH_NODE_CLASS)


cdef type class_of(CUgraphNodeType kind, _NodeRecord record):
    if kind == cydriver.CU_GRAPH_NODE_TYPE_CONDITIONAL and record.info is not None:
        return conditional_class(record.info[1], len(record.info[2]))
    return node_class(kind)


cdef int _read_adjacent(CUgraphNode node, bint succ, vector[CUgraphNode]& handles,
                        vector[CUgraphEdgeData]& data) except -1:
    """The nodes on one side of ``node`` and their edges' data (always asked for: without it
    the driver refuses a programmatic edge with CUDA_ERROR_LOSSY_QUERY)."""
    cdef size_t count = 0
    for _ in range(3):  # the count, then the nodes (again if one was added in between)
        handles.resize(count)
        data.resize(count)
        if succ:
            HANDLE_RETURN(_cuda_compat.cuGraphNodeGetDependentNodes(
                node, handles.data() if count else NULL, data.data() if count else NULL,
                &count))
        else:
            HANDLE_RETURN(_cuda_compat.cuGraphNodeGetDependencies(
                node, handles.data() if count else NULL, data.data() if count else NULL,
                &count))
        if count <= handles.size():
            handles.resize(count)
            data.resize(count)
            return 0
    raise RuntimeError("the node's edges kept changing while they were read")


cdef tuple same_graph(GraphDefinition graph, object nodes, str what):
    """``nodes`` as a tuple of live nodes of ``graph``'s CUgraph, without repeats, in
    order."""
    seen = {}
    for node in nodes:
        if not isinstance(node, GraphNode):
            raise TypeError(f"{what}: expected GraphNode objects, got {type(node).__name__}")
        if (<GraphNode>node)._graph is None or \
                (<GraphNode>node)._graph._handle != graph._handle:
            raise ValueError(f"{what}: {node!r} belongs to another GraphDefinition (or another "
                             f"graph of this one: a body, a child graph)")
        (<GraphNode>node)._check_valid(what)
        seen.setdefault(node, None)
    return tuple(seen)


cdef bint _reaches(GraphNode start, GraphNode goal) except -1:
    """Whether ``goal`` is ``start`` or a successor of it, however far down."""
    todo = [start]
    seen = {start}
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        for after in (<GraphNode>node)._adjacent(True):
            if after not in seen:
                seen.add(after)
                todo.append(after)
    return False


cdef int _replace(GraphNode node, object value, bint succ) except -1:
    what = "GraphNode.succ" if succ else "GraphNode.pred"
    wanted = same_graph(node._graph, value, what)  # all checked before any edge changes
    node._check_valid(what)
    wanted_set = set(wanted)
    present = node._adjacent(succ)
    for other in wanted:  # every edge checked before any changes (see _connect)
        if other == node:
            raise ValueError(f"{what}: a node cannot depend on itself")
        source, target = (node, other) if succ else (other, node)
        if other not in present and _reaches(target, source):
            raise ValueError(f"{what}: the edge {source!r} -> {target!r} would close a cycle")
    node._disconnect(tuple(n for n in node._adjacent(succ) if n not in wanted_set), succ)
    node._connect(wanted, succ)
    return 0
