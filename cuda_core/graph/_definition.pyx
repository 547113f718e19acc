"""GraphDefinition and GraphNode: a graph built node by node (explicit graphs), instantiated
into the same :class:`Graph` a capture completes into.

A GraphDefinition owns its ``CUgraph``. A GraphNode is a view: a node's handle and its
definition; it owns nothing, and any number of GraphNode objects may stand for one node (they
compare equal). The definition keeps one record per node it added (``_uses``): what the node
uses, and, by the record's identity, whether the node still lives, so that no call on a
destroyed node or a closed definition reaches the driver. Each Graph instantiated from a
definition holds what all of its nodes use, for as long as the Graph lives.

Nodes are added in the context current on the calling thread (the driver runs a kernel, memset
or memcpy node in the context it was added in), and the definition is instantiated in it too.
As with the driver's graphs, changing one definition from several threads at once needs the
caller's lock.
"""

from libcpp.vector cimport vector

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUDA_GRAPH_INSTANTIATE_PARAMS, CUcontext, CUgraph,
                                     CUgraphNode, CUgraphNodeParams, CUgraphNodeType,
                                     CUDA_KERNEL_NODE_PARAMS, CUDA_MEMCPY3D,
                                     CUDA_MEMSET_NODE_PARAMS)
from libc.string cimport memset as c_memset

from cuda_core._context cimport context_from_handle
from cuda_core._driver cimport ensure_driver
from cuda_core._errors cimport HANDLE_RETURN, check_call
from cuda_core._kernel_args cimport ParamHolder, holder_release
from cuda_core._resource cimport Resource
from cuda_core.graph._graph cimport Graph, dot_print, instantiate, instantiate_params
from cuda_core.graph._node_params cimport kernel_params, memcpy_params, memset_params

from cuda.bindings import driver as _driver_py

from cuda_core._launch_config import LaunchConfig
from cuda_core.graph._adjacency import AdjacencySetProxy

__all__ = ["GraphDefinition", "GraphNode", "EmptyNode", "KernelNode", "MemsetNode",
           "MemcpyNode"]


cdef class GraphDefinition(Resource):
    """A graph built explicitly: add nodes with the builder methods (here for nodes that depend
    on nothing, on a :class:`GraphNode` for nodes that depend on it), then :meth:`instantiate`
    a launchable :class:`Graph`.

    .. note:: ``GraphDefinition()`` calls ``cuGraphCreate``; :meth:`close` (or the finalizer)
       calls ``cuGraphDestroy``. Graphs instantiated from it stay valid after it is closed.
    """

    def __init__(self):
        if self._handle != NULL:
            raise RuntimeError("GraphDefinition.__init__() called twice")
        ensure_driver()
        self._uses = {}
        HANDLE_RETURN(cydriver.cuGraphCreate(&self._handle, 0))

    cdef int _release(self) except -1:
        self._uses = None
        if self._handle != NULL:
            check_call(cydriver.cuGraphDestroy(self._handle), "cuGraphDestroy")
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._handle

    cdef int _check_valid(self, str what) except -1:
        self._check_open()
        if self._handle == NULL:
            raise RuntimeError(f"{what}: this GraphDefinition was not initialized")
        return 0

    cdef object _wrap(self, CUgraphNode handle):
        """A GraphNode of the class of the node's type, for a node of this definition."""
        cdef CUgraphNodeType kind
        record = self._uses.get(<size_t>handle)
        if record is None:  # not added through this object: it uses nothing of ours
            record = self._uses[<size_t>handle] = []
        HANDLE_RETURN(cydriver.cuGraphNodeGetType(handle, &kind))
        return _new_node(_NODE_CLASSES.get(<int>kind, GraphNode), self, handle, record)

    @property
    def handle(self):
        """The ``cuda.bindings.driver.CUgraph`` (``int(definition.handle)`` is its address)."""
        self._check_valid("GraphDefinition.handle")
        return _driver_py.CUgraph(<size_t>self._handle)

    @property
    def is_valid(self):
        """False once closed."""
        return not self._closed and self._handle != NULL

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
        """Destroy the graph definition and its nodes. Idempotent; Graphs instantiated from it
        stay valid and keep what their nodes use.

        .. note:: Calls ``cuGraphDestroy``.
        """
        Resource.close(self)

    # -- whole graph ---------------------------------------------------------------------------

    def nodes(self):
        """The graph's nodes, each as a :class:`GraphNode` of its type's class.

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
        cdef size_t i
        self._check_valid("GraphDefinition.edges()")
        HANDLE_RETURN(cydriver.cuGraphGetEdges(self._handle, NULL, NULL, NULL, &count))
        sources.resize(count)
        targets.resize(count)
        if count:
            HANDLE_RETURN(cydriver.cuGraphGetEdges(self._handle, sources.data(), targets.data(),
                                                   NULL, &count))
        return {(self._wrap(sources[i]), self._wrap(targets[i]))
                for i in range(min(count, sources.size()))}

    def instantiate(self, options=None):
        """A launchable :class:`Graph` of this definition as it is now (later changes to the
        definition do not reach it), in the context current on this thread.

        .. note:: Calls ``cuGraphInstantiateWithParams``.

        Parameters
        ----------
        options : GraphCompleteOptions or dict, optional

        Returns
        -------
        Graph
            It holds what the nodes use (kernels, argument objects, operands) for as long as
            it lives, whatever becomes of this definition.
        """
        cdef CUDA_GRAPH_INSTANTIATE_PARAMS params
        opts = instantiate_params(options, "GraphDefinition.instantiate()", &params)  # held
        self._check_valid("GraphDefinition.instantiate()")
        ctx = context_from_handle(_current_ctx("GraphDefinition.instantiate()"))
        uses = tuple([used for record in self._uses.values() for used in <list>record])
        cdef Graph graph = instantiate(self._handle, ctx, [], &params,
                                       "GraphDefinition.instantiate()")
        graph._uses = uses
        return graph

    def debug_dot_print(self, path, options=None):
        """Write the definition's nodes and edges to the file ``path`` in Graphviz's DOT
        language (as :meth:`GraphBuilder.debug_dot_print` does for a capture), with the
        details ``options`` (a GraphDebugPrintOptions or a dict of its fields) asks for.

        .. note:: Calls ``cuGraphDebugDotPrint``.
        """
        self._check_valid("GraphDefinition.debug_dot_print()")
        dot_print(self._handle, path, options, "GraphDefinition.debug_dot_print()")

    # -- entry nodes (no dependencies): see the GraphNode methods of the same names ------------

    def launch(self, config, kernel, *args):
        """Add a kernel node that depends on nothing; see :meth:`GraphNode.launch`.

        Returns
        -------
        KernelNode
        """
        return _add_kernel(self, (), config, kernel, args, "GraphDefinition.launch()")

    def memset(self, dst, value, width, height=1, pitch=0, *, dst_owner=None):
        """Add a memset node that depends on nothing; see :meth:`GraphNode.memset`.

        Returns
        -------
        MemsetNode
        """
        return _add_memset(self, (), dst, value, width, height, pitch, dst_owner,
                           "GraphDefinition.memset()")

    def memcpy(self, dst, src, size, *, dst_owner=None, src_owner=None):
        """Add a memcpy node that depends on nothing; see :meth:`GraphNode.memcpy`.

        Returns
        -------
        MemcpyNode
        """
        return _add_memcpy(self, (), dst, src, size, dst_owner, src_owner,
                           "GraphDefinition.memcpy()")

    def empty(self):
        """Add an empty node that depends on nothing.

        Returns
        -------
        EmptyNode
        """
        return _add_empty(self, (), "GraphDefinition.empty()")

    def join(self, *nodes):
        """Add an empty node that depends on every node of ``nodes``.

        Returns
        -------
        EmptyNode
        """
        return _add_empty(self, nodes, "GraphDefinition.join()")


cdef class GraphNode:
    """A node of a :class:`GraphDefinition`. Its builder methods add a node that depends on it.

    Not constructible: nodes come from the builder methods and from
    :meth:`GraphDefinition.nodes`. Two objects for the same node compare equal.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("GraphNode objects cannot be instantiated directly; use the builder "
                           "methods of GraphDefinition and GraphNode")

    cdef int _check_valid(self, str what) except -1:
        if self._graph is None:
            raise RuntimeError(f"{what}: this GraphNode was not made by a GraphDefinition")
        self._graph._check_valid(what)
        if self._graph._uses.get(<size_t>self._handle) is not self._record:
            raise RuntimeError(f"{what}: this node was destroyed")
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
        """False once the node was destroyed or its definition closed."""
        return (self._graph is not None and self._graph.is_valid
                and self._graph._uses.get(<size_t>self._handle) is self._record)

    def destroy(self):
        """Remove the node and its edges from the definition. A no-op when it is already gone.
        Graphs instantiated before keep what it used.

        .. note:: Calls ``cuGraphDestroyNode``.
        """
        if not self.is_valid:
            return
        HANDLE_RETURN(cydriver.cuGraphDestroyNode(self._handle))
        del self._graph._uses[<size_t>self._handle]

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
        return AdjacencySetProxy(self, False)

    @pred.setter
    def pred(self, value):
        _replace(self, value, False)

    @property
    def succ(self):
        """The nodes that depend on this one, as a live set (see :attr:`pred`)."""
        return AdjacencySetProxy(self, True)

    @succ.setter
    def succ(self, value):
        _replace(self, value, True)

    def _adjacent(self, succ):
        """The set of this node's successors (``succ``) or predecessors."""
        cdef size_t count = 0
        cdef vector[CUgraphNode] handles
        cdef size_t i
        self._check_valid("GraphNode.succ" if succ else "GraphNode.pred")
        for _ in range(2):  # the count, then the nodes
            if succ:
                HANDLE_RETURN(cydriver.cuGraphNodeGetDependentNodes(
                    self._handle, handles.data() if count else NULL, NULL, &count))
            else:
                HANDLE_RETURN(cydriver.cuGraphNodeGetDependencies(
                    self._handle, handles.data() if count else NULL, NULL, &count))
            if count == 0 or handles.size() == count:
                break
            handles.resize(count)
        return {self._graph._wrap(handles[i]) for i in range(min(count, handles.size()))}

    def _connect(self, nodes, succ):
        """Add the edges between this node and ``nodes`` that are not there yet."""
        what = "GraphNode.succ" if succ else "GraphNode.pred"
        others = _same_graph(self._graph, nodes, what)
        self._check_valid(what)
        present = self._adjacent(succ)
        for other in others:
            if other == self:
                raise ValueError(f"{what}: a node cannot depend on itself")
            if other in present:
                continue
            source, target = (self, other) if succ else (other, self)
            if _reaches(target, source):
                raise ValueError(f"{what}: the edge {source!r} -> {target!r} would close a cycle")
            _edge(<GraphNode>source, <GraphNode>target, True)
            present.add(other)

    def _disconnect(self, nodes, succ):
        """Remove the edges between this node and those of ``nodes`` that have one."""
        what = "GraphNode.succ" if succ else "GraphNode.pred"
        others = _same_graph(self._graph, nodes, what)
        self._check_valid(what)
        present = self._adjacent(succ)
        for other in others:
            if other in present:
                _edge(self if succ else other, other if succ else self, False)
                present.discard(other)

    # -- builders: the new node depends on this one --------------------------------------------

    def launch(self, config, kernel, *args):
        """Add a kernel node that depends on this node.

        The arguments go through the checks of :func:`launch` (count, size and, for a C++
        kernel, kind): a mismatch is refused here, not found when the graph runs. The driver
        copies the argument values into the node; the kernel and the argument objects (a
        :class:`Buffer`, an array with ``__cuda_array_interface__``) are held by the
        definition and by every Graph instantiated from it.

        .. note:: Calls ``cuGraphAddNode`` (``CU_GRAPH_NODE_TYPE_KERNEL``), in the current
           context.

        Parameters
        ----------
        config : LaunchConfig
            Grid, block and dynamic shared memory; a config with a cluster,
            ``is_cooperative`` or programmatic stream serialization is refused (kernel nodes
            take none of them, as in cuda.core).
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
        ``dst`` (device or pinned host memory, told apart by the driver).

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

    def join(self, *nodes):
        """Add an empty node that depends on this node and every node of ``nodes``.

        Returns
        -------
        EmptyNode
        """
        return _add_empty(self._graph, (self,) + nodes, "GraphNode.join()")


cdef class EmptyNode(GraphNode):
    """A node that does nothing: a point other nodes depend on (``empty()``, ``join()``)."""


cdef class KernelNode(GraphNode):
    """A kernel launch node."""

    cdef int _read(self, CUDA_KERNEL_NODE_PARAMS* out) except -1:
        self._check_valid(f"{type(self).__name__}")
        HANDLE_RETURN(cydriver.cuGraphKernelNodeGetParams(self._handle, out))
        return 0

    @property
    def grid(self):
        """The grid, in blocks: ``(x, y, z)``."""
        cdef CUDA_KERNEL_NODE_PARAMS p
        self._read(&p)
        return (p.gridDimX, p.gridDimY, p.gridDimZ)

    @property
    def block(self):
        """The block, in threads: ``(x, y, z)``."""
        cdef CUDA_KERNEL_NODE_PARAMS p
        self._read(&p)
        return (p.blockDimX, p.blockDimY, p.blockDimZ)

    @property
    def shmem_size(self):
        """Dynamic shared memory per block, in bytes."""
        cdef CUDA_KERNEL_NODE_PARAMS p
        self._read(&p)
        return p.sharedMemBytes

    @property
    def config(self):
        """A :class:`LaunchConfig` of the node's grid, block and shared memory size."""
        cdef CUDA_KERNEL_NODE_PARAMS p
        self._read(&p)
        return LaunchConfig(grid=(p.gridDimX, p.gridDimY, p.gridDimZ),
                            block=(p.blockDimX, p.blockDimY, p.blockDimZ),
                            shmem_size=p.sharedMemBytes)

    @property
    def kernel(self):
        """The :class:`Kernel` the node launches."""
        self._check_valid("KernelNode.kernel")
        return self._record[0] if self._record else None


cdef class MemsetNode(GraphNode):
    """A memset node."""

    cdef int _read(self, CUDA_MEMSET_NODE_PARAMS* out) except -1:
        self._check_valid(f"{type(self).__name__}")
        HANDLE_RETURN(cydriver.cuGraphMemsetNodeGetParams(self._handle, out))
        return 0

    @property
    def dptr(self):
        """The destination address."""
        cdef CUDA_MEMSET_NODE_PARAMS p
        self._read(&p)
        return <size_t>p.dst

    @property
    def value(self):
        """The fill value (its bits, as an unsigned int)."""
        cdef CUDA_MEMSET_NODE_PARAMS p
        self._read(&p)
        return p.value

    @property
    def element_size(self):
        """Bytes per element: 1, 2 or 4."""
        cdef CUDA_MEMSET_NODE_PARAMS p
        self._read(&p)
        return p.elementSize

    @property
    def width(self):
        """Elements per row."""
        cdef CUDA_MEMSET_NODE_PARAMS p
        self._read(&p)
        return p.width

    @property
    def height(self):
        """Rows."""
        cdef CUDA_MEMSET_NODE_PARAMS p
        self._read(&p)
        return p.height

    @property
    def pitch(self):
        """Bytes from one row to the next (unused with one row)."""
        cdef CUDA_MEMSET_NODE_PARAMS p
        self._read(&p)
        return p.pitch


cdef class MemcpyNode(GraphNode):
    """A memcpy node (one-dimensional)."""

    cdef int _read(self, CUDA_MEMCPY3D* out) except -1:
        self._check_valid(f"{type(self).__name__}")
        HANDLE_RETURN(cydriver.cuGraphMemcpyNodeGetParams(self._handle, out))
        return 0

    @property
    def dst(self):
        """The destination address."""
        cdef CUDA_MEMCPY3D p
        self._read(&p)
        if p.dstMemoryType == cydriver.CU_MEMORYTYPE_HOST:
            return <size_t>p.dstHost
        return <size_t>p.dstDevice

    @property
    def src(self):
        """The source address."""
        cdef CUDA_MEMCPY3D p
        self._read(&p)
        if p.srcMemoryType == cydriver.CU_MEMORYTYPE_HOST:
            return <size_t>p.srcHost
        return <size_t>p.srcDevice

    @property
    def size(self):
        """Bytes copied."""
        cdef CUDA_MEMCPY3D p
        self._read(&p)
        return p.WidthInBytes


cdef dict _NODE_CLASSES = {
    cydriver.CU_GRAPH_NODE_TYPE_EMPTY: EmptyNode,
    cydriver.CU_GRAPH_NODE_TYPE_KERNEL: KernelNode,
    cydriver.CU_GRAPH_NODE_TYPE_MEMSET: MemsetNode,
    cydriver.CU_GRAPH_NODE_TYPE_MEMCPY: MemcpyNode,
}


cdef GraphNode _new_node(type cls, GraphDefinition graph, CUgraphNode handle, list record):
    cdef GraphNode node = <GraphNode>cls.__new__(cls)
    node._handle = handle
    node._graph = graph
    node._record = record
    return node


cdef tuple _same_graph(GraphDefinition graph, object nodes, str what):
    """``nodes`` as a tuple of live nodes of ``graph``, without repeats, in order."""
    seen = {}
    for node in nodes:
        if not isinstance(node, GraphNode):
            raise TypeError(f"{what}: expected GraphNode objects, got {type(node).__name__}")
        if (<GraphNode>node)._graph is not graph:
            raise ValueError(f"{what}: {node!r} belongs to another GraphDefinition")
        (<GraphNode>node)._check_valid(what)
        seen.setdefault(node, None)
    return tuple(seen)


cdef int _edge(GraphNode source, GraphNode target, bint add) except -1:
    if add:
        HANDLE_RETURN(cydriver.cuGraphAddDependencies(source._graph._handle, &source._handle,
                                                      &target._handle, NULL, 1))
    else:
        HANDLE_RETURN(cydriver.cuGraphRemoveDependencies(source._graph._handle,
                                                         &source._handle, &target._handle,
                                                         NULL, 1))
    return 0


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
    node._disconnect(tuple(n for n in node._adjacent(succ) if n not in wanted_set), succ)
    node._connect(wanted, succ)
    return 0


cdef CUcontext _current_ctx(str what) except? NULL:
    cdef CUcontext ctx = NULL
    HANDLE_RETURN(cydriver.cuCtxGetCurrent(&ctx))
    if ctx == NULL:
        raise RuntimeError(f"{what}: no CUDA context is current on this thread; call "
                           f"Device(i).set_current() first")
    return ctx


cdef GraphNode _add(GraphDefinition graph, tuple deps, CUgraphNodeParams* params, list uses,
                    str what):
    """Add the node ``params`` describe (its arguments checked), in the current context,
    depending on ``deps``, and record what it uses."""
    cdef vector[CUgraphNode] handles
    cdef CUgraphNode node = NULL
    cdef CUgraphNodeType kind = params.type
    graph._check_valid(what)
    deps = _same_graph(graph, deps, what)
    if kind == cydriver.CU_GRAPH_NODE_TYPE_KERNEL:
        params.kernel.ctx = _current_ctx(what)
    elif kind == cydriver.CU_GRAPH_NODE_TYPE_MEMSET:
        params.memset.ctx = _current_ctx(what)
    elif kind == cydriver.CU_GRAPH_NODE_TYPE_MEMCPY:
        params.memcpy.copyCtx = _current_ctx(what)
    for dep in deps:
        handles.push_back((<GraphNode>dep)._handle)
    HANDLE_RETURN(cydriver.cuGraphAddNode(&node, graph._handle, handles.data(), NULL,
                                          handles.size(), params))
    graph._uses[<size_t>node] = uses
    return _new_node(_NODE_CLASSES[<int>kind], graph, node, uses)


cdef GraphNode _add_empty(GraphDefinition graph, tuple nodes, str what):
    cdef CUgraphNodeParams params
    c_memset(&params, 0, sizeof(params))
    params.type = cydriver.CU_GRAPH_NODE_TYPE_EMPTY
    return _add(graph, nodes, &params, [], what)


cdef GraphNode _add_kernel(GraphDefinition graph, tuple deps, object config, object kernel,
                           tuple args, str what):
    cdef CUgraphNodeParams params
    cdef ParamHolder holder
    c_memset(&params, 0, sizeof(params))
    holder.heap = NULL  # released on every path, whether or not packing began
    try:
        uses = kernel_params(&params, &holder, config, kernel, args, what)
        return _add(graph, deps, &params, uses, what)
    finally:
        holder_release(&holder)


cdef GraphNode _add_memset(GraphDefinition graph, tuple deps, object dst, object value,
                           object width, object height, object pitch, object dst_owner,
                           str what):
    cdef CUgraphNodeParams params
    c_memset(&params, 0, sizeof(params))
    uses = memset_params(&params, dst, value, width, height, pitch, dst_owner, what)
    return _add(graph, deps, &params, uses, what)


cdef GraphNode _add_memcpy(GraphDefinition graph, tuple deps, object dst, object src,
                           object size, object dst_owner, object src_owner, str what):
    cdef CUgraphNodeParams params
    c_memset(&params, 0, sizeof(params))
    uses = memcpy_params(&params, dst, src, size, dst_owner, src_owner, what)
    return _add(graph, deps, &params, uses, what)
