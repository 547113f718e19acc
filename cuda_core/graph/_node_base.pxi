# GraphNode: the base of every node class, with the builder methods that add a node depending
# on this one, the live pred/succ sets, and the one path by which every builder adds a node
# (_add). Included in _definition.pyx (one module: GraphDefinition's builders call _add_*).


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
        owned = _owned_graphs(self._record)
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
        others = _same_graph(self._graph, nodes, what)
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
        others = _same_graph(self._graph, nodes, what)
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
        return _add_kernel(self._graph, (self,), config, kernel, args, "GraphNode.launch()")

    def join(self, *nodes):
        """Add an empty node that depends on this node and every node of ``nodes``.

        Returns
        -------
        EmptyNode
        """
        return _add_empty(self._graph, (self,) + nodes, "GraphNode.join()")

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
        return _add_alloc(self._graph, (self,), size, device, memory_type, peer_access,
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
        return _add_free(self._graph, (self,), dptr, "GraphNode.deallocate()")

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
        return _add_memset(self._graph, (self,), dst, value, width, height, pitch, dst_owner,
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
        return _add_memcpy(self._graph, (self,), dst, src, size, dst_owner, src_owner,
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
        return _add_child(self._graph, (self,), child, "GraphNode.embed()")

    def record(self, event):
        """Add a node that depends on this node and records ``event`` (held by the graph).

        .. note:: Calls ``cuGraphAddNode`` (``CU_GRAPH_NODE_TYPE_EVENT_RECORD``).

        Returns
        -------
        EventRecordNode
        """
        return _add_event(self._graph, (self,), event, True, "GraphNode.record()")

    def wait(self, event):
        """Add a node that depends on this node and waits for ``event`` (held by the graph).

        .. note:: Calls ``cuGraphAddNode`` (``CU_GRAPH_NODE_TYPE_WAIT_EVENT``).

        Returns
        -------
        EventWaitNode
        """
        return _add_event(self._graph, (self,), event, False, "GraphNode.wait()")

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
        return _add_host(self._graph, (self,), fn, user_data, "GraphNode.callback()")

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
        return _add_conditional(self._graph, (self,), condition, _COND_IF, 1,
                                "GraphNode.if_then()")

    def if_else(self, condition):
        """Add a node that depends on this node and runs :attr:`IfElseNode.then` when
        ``condition`` is nonzero, :attr:`IfElseNode.else_` when it is zero. Needs a CUDA 12.8
        driver.

        Returns
        -------
        IfElseNode
        """
        return _add_conditional(self._graph, (self,), condition, _COND_IF, 2,
                                "GraphNode.if_else()")

    def while_loop(self, condition):
        """Add a node that depends on this node and runs :attr:`WhileNode.body` again and
        again while ``condition`` is nonzero (checked before each run; the body sets it).

        Returns
        -------
        WhileNode
        """
        return _add_conditional(self._graph, (self,), condition, _COND_WHILE,
                                1, "GraphNode.while_loop()")

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
        return _add_conditional(self._graph, (self,), condition, _COND_SWITCH,
                                switch_count(count, "GraphNode.switch()"),
                                "GraphNode.switch()")


cdef GraphNode _live_object(_NodeRecord record, type cls):
    """The GraphNode object of ``record`` while it lives, of class ``cls`` and with an open
    definition view; else None. The caller holds the record's critical section."""
    if record.obj_ref is None:
        return None
    node = record.obj_ref()
    if node is None or type(node) is not cls or (<GraphNode>node)._graph._closed:
        return None  # (a view the user closed: the node gets an object of an open view)
    return <GraphNode>node


cdef GraphNode _node_object(type cls, GraphDefinition graph, CUgraphNode handle,
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


cdef type _conditional_class(object cond_type, Py_ssize_t count):
    if cond_type == _COND_IF:
        return _node_class(IF_ELSE_NODE_CLASS if count == 2 else IF_NODE_CLASS)
    return _node_class(WHILE_NODE_CLASS if cond_type == _COND_WHILE else
                       SWITCH_NODE_CLASS)


cdef type _class_of(CUgraphNodeType kind, _NodeRecord record):
    if kind == cydriver.CU_GRAPH_NODE_TYPE_CONDITIONAL and record.info is not None:
        return _conditional_class(record.info[1], len(record.info[2]))
    return _node_class(kind)


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


cdef tuple _same_graph(GraphDefinition graph, object nodes, str what):
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
    wanted = _same_graph(node._graph, value, what)  # all checked before any edge changes
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


cdef set _owned_graphs(_NodeRecord record):
    """The graphs a node owns (a conditional node's bodies, a child graph node's copy), whose
    nodes go with it. From the record alone: the node may be gone already."""
    if record.info is None:
        return set()
    if isinstance(record.info, tuple):
        return set(record.info[2])
    return {record.info}


cdef int forget_records(_GraphStore store, set owned) except -1:
    cdef _NodeRecord other
    if store._retained is not None:  # a new graph may get a destroyed one's address
        store._retained.difference_update(owned)
    while owned:
        inner = [other for other in store._records.values() if <size_t>other.graph in owned]
        owned = set()
        for other in inner:
            store._records.pop(<size_t>other.node, None)
            owned |= _owned_graphs(other)
        if store._retained is not None:
            store._retained.difference_update(owned)
    return 0


cdef GraphNode _add(GraphDefinition graph, tuple deps, CUgraphNodeParams* params, list uses,
                    type cls, str what):
    """Add the node ``params`` describe (its arguments already checked) to ``graph``,
    depending on ``deps``, and record what it uses (its record's info is the caller's to set:
    what it holds is known once the node is added). ``cls`` None: the class of its type."""
    cdef vector[CUgraphNode] handles
    cdef CUgraphNode node = NULL
    cdef CUresult err
    graph._check_valid(what)
    deps = _same_graph(graph, deps, what)
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
        cls = _node_class(params.type)
    return _node_object(cls, graph, node, record)


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


cdef GraphNode _add_empty(GraphDefinition graph, tuple nodes, str what):
    cdef CUgraphNodeParams params
    c_memset(&params, 0, sizeof(params))
    params.type = cydriver.CU_GRAPH_NODE_TYPE_EMPTY
    return _add(graph, nodes, &params, None, None, what)


cdef GraphNode _add_kernel(GraphDefinition graph, tuple deps, object config, object kernel,
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


cdef GraphNode _add_memset(GraphDefinition graph, tuple deps, object dst, object value,
                           object width, object height, object pitch, object dst_owner,
                           str what):
    cdef CUgraphNodeParams params
    c_memset(&params, 0, sizeof(params))
    uses = memset_params(&params, dst, value, width, height, pitch, dst_owner, what)
    return _add(graph, deps, &params, uses, None, what)


cdef GraphNode _add_memcpy(GraphDefinition graph, tuple deps, object dst, object src,
                           object size, object dst_owner, object src_owner, str what):
    cdef CUgraphNodeParams params
    c_memset(&params, 0, sizeof(params))
    uses = memcpy_params(&params, dst, src, size, dst_owner, src_owner, what)
    return _add(graph, deps, &params, uses, None, what)


cdef int _ordinal(object device, str what) except -1:
    ordinal = check_ordinal(getattr(device, "device_id", device), what)
    if ordinal >= device_count():
        raise ValueError(f"{what} {ordinal} is out of range: there are {device_count()} "
                         f"devices")
    return ordinal


cdef GraphNode _add_alloc(GraphDefinition graph, tuple deps, object size, object device,
                          object memory_type, object peer_access, str what):
    cdef CUgraphNodeParams params
    cdef vector[CUmemAccessDesc] access
    cdef CUdevice dev = 0
    cdef size_t nbytes = check_size(size, f"{what}: size")
    if nbytes == 0:
        raise InvalidValueError(f"{what}: size must be at least 1 byte")
    try:
        kind = GraphMemoryType(memory_type)
    except ValueError:
        raise ValueError(f"{what}: memory_type must be one of "
                         f"{[m.value for m in GraphMemoryType]}, not {memory_type!r}") from None
    if device is None:
        current_ctx(what)
        HANDLE_RETURN(cydriver.cuCtxGetDevice(&dev))
    else:
        dev = _ordinal(device, f"{what}: device")
    peers = () if peer_access is None else tuple(peer_access)
    c_memset(&params, 0, sizeof(params))
    params.type = cydriver.CU_GRAPH_NODE_TYPE_MEM_ALLOC
    params.alloc.bytesize = nbytes
    params.alloc.poolProps.allocType = cydriver.CU_MEM_ALLOCATION_TYPE_PINNED
    params.alloc.poolProps.location.type = cydriver.CU_MEM_LOCATION_TYPE_DEVICE
    params.alloc.poolProps.location.id = dev
    if kind == GraphMemoryType.HOST:
        params.alloc.poolProps.location.type = cydriver.CU_MEM_LOCATION_TYPE_HOST
        params.alloc.poolProps.location.id = 0
    elif kind == GraphMemoryType.MANAGED:
        params.alloc.poolProps.allocType = _cuda_compat.CU_MEM_ALLOCATION_TYPE_MANAGED
    access.resize(len(peers))
    for i, peer in enumerate(peers):
        c_memset(&access[i], 0, sizeof(CUmemAccessDesc))
        access[i].location.type = cydriver.CU_MEM_LOCATION_TYPE_DEVICE
        access[i].location.id = _ordinal(peer, f"{what}: peer_access[{i}]")
        access[i].flags = cydriver.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    params.alloc.accessDescs = access.data()
    params.alloc.accessDescCount = access.size()
    return _add(graph, deps, &params, None, None, what)


cdef GraphNode _add_free(GraphDefinition graph, tuple deps, object dptr, str what):
    cdef CUgraphNodeParams params
    cdef CUdeviceptr ptr = check_address(dptr, f"{what}: dptr")
    if ptr == 0:
        raise InvalidValueError(f"{what}: dptr is a null pointer")
    c_memset(&params, 0, sizeof(params))
    params.type = cydriver.CU_GRAPH_NODE_TYPE_MEM_FREE
    params.free.dptr = ptr
    return _add(graph, deps, &params, None, None, what)


cdef dict _NOT_IN_CHILD = {
    cydriver.CU_GRAPH_NODE_TYPE_MEM_ALLOC: "an allocation node",
    cydriver.CU_GRAPH_NODE_TYPE_MEM_FREE: "a free node",
    cydriver.CU_GRAPH_NODE_TYPE_CONDITIONAL: "a conditional node",
}


cdef int check_child(CUgraph graph, str what) except -1:
    """Refuse a child graph with nodes the driver does not take in one (at any depth)."""
    cdef size_t count = 0
    cdef vector[CUgraphNode] handles
    cdef CUgraphNodeType kind
    cdef CUgraph inner = NULL
    cdef size_t i
    HANDLE_RETURN(cydriver.cuGraphGetNodes(graph, NULL, &count))
    handles.resize(count)
    if count:
        HANDLE_RETURN(cydriver.cuGraphGetNodes(graph, handles.data(), &count))
    for i in range(min(count, handles.size())):
        HANDLE_RETURN(cydriver.cuGraphNodeGetType(handles[i], &kind))
        if kind in _NOT_IN_CHILD:
            raise ValueError(f"{what}: the child graph has {_NOT_IN_CHILD[kind]}, which a "
                             f"child graph cannot have")
        if kind == cydriver.CU_GRAPH_NODE_TYPE_GRAPH:
            HANDLE_RETURN(cydriver.cuGraphChildGraphNodeGetGraph(handles[i], &inner))
            check_child(inner, what)
    return 0


cdef GraphNode _add_child(GraphDefinition graph, tuple deps, object child, str what):
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
    node = _add(graph, deps, &params, None, None, what)
    HANDLE_RETURN(cydriver.cuGraphChildGraphNodeGetGraph(node._handle, &copy))
    (<GraphNode>node)._record.info = <size_t>copy
    return node


cdef GraphNode _add_event(GraphDefinition graph, tuple deps, object event, bint record,
                          str what):
    cdef CUgraphNodeParams params
    check_event(event, what)
    c_memset(&params, 0, sizeof(params))
    if record:
        params.type = cydriver.CU_GRAPH_NODE_TYPE_EVENT_RECORD
        params.eventRecord.event = (<Event>event)._handle
    else:
        params.type = cydriver.CU_GRAPH_NODE_TYPE_WAIT_EVENT
        params.eventWait.event = (<Event>event)._handle
    return _add(graph, deps, &params, [event], None, what)


cdef GraphNode _add_host(GraphDefinition graph, tuple deps, object fn, object user_data,
                         str what):
    cdef CUgraphNodeParams params
    c_memset(&params, 0, sizeof(params))
    params.type = cydriver.CU_GRAPH_NODE_TYPE_HOST
    cdef _HostCall call = host_node_params(&params.host, fn, user_data, what)
    return _add(graph, deps, &params, [call], None, what)


cdef GraphNode _add_conditional(GraphDefinition graph, tuple deps, object condition,
                                object cond_type, unsigned int count, str what):
    cdef CUgraphNodeParams params
    if not isinstance(condition, GraphCondition):
        raise TypeError(f"{what}: condition must be a GraphCondition (from "
                        f"create_condition()), not {type(condition).__name__}")
    graph._check_valid(what)
    if (<GraphCondition>condition)._graph != graph._handle:
        raise ValueError(f"{what}: the condition was created for another graph; a "
                         f"conditional node takes a condition of its own graph (a body's "
                         f"nodes: the body's create_condition())")
    if count > 1 or cond_type == _COND_SWITCH:
        version = driver_version()
        if version < (12, 8):
            raise RuntimeError(f"{what} needs a CUDA 12.8 driver; this one is "
                               f"{version[0]}.{version[1]}")
    cls = _conditional_class(cond_type, count)
    c_memset(&params, 0, sizeof(params))
    params.type = cydriver.CU_GRAPH_NODE_TYPE_CONDITIONAL
    params.conditional.handle = (<GraphCondition>condition)._handle
    params.conditional.type = (
        cydriver.CU_GRAPH_COND_TYPE_IF if cond_type == _COND_IF else
        cydriver.CU_GRAPH_COND_TYPE_WHILE if cond_type == _COND_WHILE else
        cydriver.CU_GRAPH_COND_TYPE_SWITCH)
    params.conditional.size = count
    # The driver points phGraph_out at the node's bodies (an array it owns) as it adds it.
    # The condition goes with what the graph owns, as every node's objects do.
    node = _add(graph, deps, &params, [condition], cls, what)
    (<GraphNode>node)._record.info = (
        condition, cond_type,
        tuple(<size_t>params.conditional.phGraph_out[i] for i in range(count)))
    return node
