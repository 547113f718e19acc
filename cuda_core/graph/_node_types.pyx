"""The GraphNode classes of each node type: their parameters as read-only properties (read from
the driver, so they are right for captured nodes too) and ``update()``, which changes a node of
the definition (Graphs instantiated before keep their own parameters; see
``Graph[node].update`` for those).

Importing this module registers the classes, once, with ``_node_base``, which makes the node
objects.
"""

import sys

cimport cython
from libc.string cimport memset as c_memset

from cuda.bindings cimport cydriver
from cuda_core cimport _cuda_compat
from cuda.bindings.cydriver cimport (CUDA_KERNEL_NODE_PARAMS, CUDA_MEM_ALLOC_NODE_PARAMS,
                                     CUDA_MEMCPY3D, CUDA_MEMSET_NODE_PARAMS,
                                     CUDA_HOST_NODE_PARAMS, CUdeviceptr, CUgraph,
                                     CUgraphNodeParams, CUkernel)

from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._event cimport Event
from cuda_core._kernel cimport make_kernel
from cuda_core._kernel_args cimport ParamHolder, holder_release
from cuda_core._memory._buffer cimport Buffer
from cuda_core.graph._definition cimport GraphDefinition, child_definition, definition_view
from cuda_core.graph._host_callback cimport _HostCall, host_node_params
from cuda_core.graph._node_base cimport (IF_ELSE_NODE_CLASS, IF_NODE_CLASS, SWITCH_NODE_CLASS,
                                         WHILE_NODE_CLASS, GraphNode, register_node_classes)
from cuda_core.graph._node_params cimport (check_child, check_event, current_ctx, kernel_params,
                                           memcpy_params, memset_params)
from cuda_core.graph._store cimport forget_records, own_uses

from cuda_core._launch_config import LaunchConfig
from cuda_core.typing import GraphMemoryType

__all__ = ["EmptyNode", "KernelNode", "AllocNode", "FreeNode", "MemsetNode", "MemcpyNode",
           "ChildGraphNode", "EventRecordNode", "EventWaitNode", "HostCallbackNode",
           "ConditionalNode", "IfNode", "IfElseNode", "WhileNode", "SwitchNode"]


cdef int _set_params(GraphNode node, CUgraphNodeParams* params, list uses) except -1:
    """A definition-level update: ``node`` takes ``params`` (checked), which use ``uses``: its
    graph holds them first (see _definition._add), and they become the node's."""
    own_uses(node._graph._store, node._record.graph, uses)
    HANDLE_RETURN(cydriver.cuGraphNodeSetParams(node._handle, params))
    node._record.uses = uses
    return 0


cdef class EmptyNode(GraphNode):
    """A node that does nothing: a point other nodes depend on (``empty()``, ``join()``)."""


@cython.final
cdef class KernelNode(GraphNode):
    """A kernel launch node."""

    # The node's parameters, read from the driver: the one read behind its properties and
    # update() (likewise in AllocNode, MemsetNode and MemcpyNode).
    cdef CUDA_KERNEL_NODE_PARAMS _params(self, str what) except *:
        cdef CUDA_KERNEL_NODE_PARAMS p
        self._check_valid(what)
        HANDLE_RETURN(cydriver.cuGraphKernelNodeGetParams(self._handle, &p))
        return p

    @property
    def grid(self):
        """The grid, in blocks: ``(x, y, z)``."""
        return _grid(self._params("KernelNode.grid"))

    @property
    def block(self):
        """The block, in threads: ``(x, y, z)``."""
        return _block(self._params("KernelNode.block"))

    @property
    def shmem_size(self):
        """Dynamic shared memory per block, in bytes."""
        return self._params("KernelNode.shmem_size").sharedMemBytes

    @property
    def config(self):
        """A :class:`LaunchConfig` of the node's grid, block and shared memory size."""
        return _launch_config(self._params("KernelNode.config"))

    @property
    def kernel(self):
        """The :class:`Kernel` the node launches (for a captured node, a Kernel of its
        ``CUkernel``, which does not keep its library loaded; None when it was launched by
        ``CUfunction``)."""
        self._check_valid("KernelNode.kernel")
        if self._record.uses:
            return self._record.uses[0]
        cdef CUkernel kern = self._params("KernelNode.kernel").kern
        return make_kernel(kern, None) if kern != NULL else None

    def update(self, *, config=None, kernel=None, args=None):
        """Change the node's config, kernel or arguments; what is not given stays. A new
        ``kernel`` needs its ``args`` (``args=()`` for none). The arguments go through the
        checks of :func:`launch` against the (new) kernel.

        .. note:: Calls ``cuGraphNodeSetParams``.

        Raises
        ------
        TypeError
            For ``kernel`` without ``args``, or arguments the kernel does not take.
        """
        cdef CUgraphNodeParams params
        cdef CUDA_KERNEL_NODE_PARAMS old
        cdef ParamHolder holder
        what = "KernelNode.update()"
        if kernel is not None and args is None:
            raise TypeError(f"{what}: a new kernel needs its args (args=() for none)")
        old = self._params(what)
        if kernel is None:
            kernel = self.kernel
            if kernel is None:
                raise TypeError(f"{what}: the node's kernel is not known (launched by "
                                f"CUfunction); give kernel and args")
        if args is None:
            if not self._record.uses:
                raise TypeError(f"{what}: the node's arguments are not known (a captured "
                                f"node); give args")
            args = self._record.uses[1]
        if config is None:
            config = _launch_config(old)
        c_memset(&params, 0, sizeof(params))
        holder.heap = NULL
        try:
            uses = kernel_params(&params, &holder, config, kernel, tuple(args), what)
            params.kernel.ctx = old.ctx if old.ctx != NULL else current_ctx(what)
            _set_params(self, &params, uses)
        finally:
            holder_release(&holder)


cdef tuple _grid(CUDA_KERNEL_NODE_PARAMS p):
    return (p.gridDimX, p.gridDimY, p.gridDimZ)


cdef tuple _block(CUDA_KERNEL_NODE_PARAMS p):
    return (p.blockDimX, p.blockDimY, p.blockDimZ)


cdef object _launch_config(CUDA_KERNEL_NODE_PARAMS p):
    return LaunchConfig(grid=_grid(p), block=_block(p), shmem_size=p.sharedMemBytes)


@cython.final
cdef class AllocNode(GraphNode):
    """A memory allocation node: :attr:`dptr` is valid for the nodes after it."""

    cdef CUDA_MEM_ALLOC_NODE_PARAMS _params(self, str what) except *:
        cdef CUDA_MEM_ALLOC_NODE_PARAMS p
        self._check_valid(what)
        HANDLE_RETURN(cydriver.cuGraphMemAllocNodeGetParams(self._handle, &p))
        return p

    @property
    def dptr(self):
        """The address of the memory."""
        return <size_t>self._params("AllocNode.dptr").dptr

    @property
    def bytesize(self):
        """The size, in bytes."""
        return self._params("AllocNode.bytesize").bytesize

    @property
    def device_id(self):
        """The device the memory is on (for host memory, the device of the allocating
        context is not recorded: 0)."""
        cdef CUDA_MEM_ALLOC_NODE_PARAMS p = self._params("AllocNode.device_id")
        if p.poolProps.location.type == cydriver.CU_MEM_LOCATION_TYPE_DEVICE:
            return p.poolProps.location.id
        return 0

    @property
    def memory_type(self):
        """``GraphMemoryType.DEVICE``, ``HOST`` or ``MANAGED`` (equal to its string)."""
        cdef CUDA_MEM_ALLOC_NODE_PARAMS p = self._params("AllocNode.memory_type")
        if p.poolProps.allocType == _cuda_compat.CU_MEM_ALLOCATION_TYPE_MANAGED:
            return GraphMemoryType.MANAGED
        if p.poolProps.location.type == cydriver.CU_MEM_LOCATION_TYPE_DEVICE:
            return GraphMemoryType.DEVICE
        return GraphMemoryType.HOST

    @property
    def peer_access(self):
        """The devices given read-write access besides the owner, as a tuple of ids."""
        cdef CUDA_MEM_ALLOC_NODE_PARAMS p = self._params("AllocNode.peer_access")
        cdef size_t i
        return tuple(p.accessDescs[i].location.id for i in range(p.accessDescCount)
                     if p.accessDescs[i].location.type == cydriver.CU_MEM_LOCATION_TYPE_DEVICE)


@cython.final
cdef class FreeNode(GraphNode):
    """A node that frees memory an allocation node gave."""

    @property
    def dptr(self):
        """The address freed."""
        cdef CUdeviceptr ptr = 0
        self._check_valid("FreeNode.dptr")
        HANDLE_RETURN(cydriver.cuGraphMemFreeNodeGetParams(self._handle, &ptr))
        return <size_t>ptr


@cython.final
cdef class MemsetNode(GraphNode):
    """A memset node."""

    cdef CUDA_MEMSET_NODE_PARAMS _params(self, str what) except *:
        cdef CUDA_MEMSET_NODE_PARAMS p
        self._check_valid(what)
        HANDLE_RETURN(cydriver.cuGraphMemsetNodeGetParams(self._handle, &p))
        return p

    @property
    def dptr(self):
        """The destination address."""
        return <size_t>self._params("MemsetNode.dptr").dst

    @property
    def value(self):
        """The fill value (its bits, as an unsigned int)."""
        return self._params("MemsetNode.value").value

    @property
    def element_size(self):
        """Bytes per element: 1, 2 or 4."""
        return self._params("MemsetNode.element_size").elementSize

    @property
    def width(self):
        """Elements per row."""
        return self._params("MemsetNode.width").width

    @property
    def height(self):
        """Rows."""
        return self._params("MemsetNode.height").height

    @property
    def pitch(self):
        """Bytes from one row to the next (unused with one row)."""
        return self._params("MemsetNode.pitch").pitch

    def update(self, *, dst=None, value=None, width=None, height=None, pitch=None,
               dst_owner=None):
        """Change the node's parameters; what is not given stays. The same checks as
        :meth:`GraphNode.memset`.

        .. note:: Calls ``cuGraphNodeSetParams``, in the current context.
        """
        cdef CUgraphNodeParams params
        what = "MemsetNode.update()"
        cdef CUDA_MEMSET_NODE_PARAMS old = self._params(what)
        if dst is None:
            if dst_owner is not None:
                raise ValueError(f"{what}: dst_owner goes with a new raw-address dst")
            held = self._record.uses[0] if self._record.uses else None
            dst, dst_owner = _kept_operand(held, <size_t>old.dst)
        if value is None:
            value = old.value if old.elementSize == 1 else \
                (<object>old.value).to_bytes(old.elementSize, sys.byteorder)
        c_memset(&params, 0, sizeof(params))
        uses = memset_params(&params, dst, value, old.width if width is None else width,
                             old.height if height is None else height,
                             old.pitch if pitch is None else pitch, dst_owner, what)
        params.memset.ctx = current_ctx(what)
        _set_params(self, &params, uses)


@cython.final
cdef class MemcpyNode(GraphNode):
    """A memcpy node (one-dimensional)."""

    cdef CUDA_MEMCPY3D _params(self, str what) except *:
        cdef CUDA_MEMCPY3D p
        self._check_valid(what)
        HANDLE_RETURN(cydriver.cuGraphMemcpyNodeGetParams(self._handle, &p))
        return p

    @property
    def dst(self):
        """The destination address."""
        cdef CUDA_MEMCPY3D p = self._params("MemcpyNode.dst")
        if p.dstMemoryType == cydriver.CU_MEMORYTYPE_HOST:
            return <size_t>p.dstHost
        return <size_t>p.dstDevice

    @property
    def src(self):
        """The source address."""
        cdef CUDA_MEMCPY3D p = self._params("MemcpyNode.src")
        if p.srcMemoryType == cydriver.CU_MEMORYTYPE_HOST:
            return <size_t>p.srcHost
        return <size_t>p.srcDevice

    @property
    def size(self):
        """Bytes copied."""
        return self._params("MemcpyNode.size").WidthInBytes

    def update(self, *, dst=None, src=None, size=None, dst_owner=None, src_owner=None):
        """Change the node's parameters; what is not given stays. The same checks as
        :meth:`GraphNode.memcpy`. Only a one-dimensional copy can be changed.

        .. note:: Calls ``cuGraphNodeSetParams``, in the current context.
        """
        cdef CUgraphNodeParams params
        what = "MemcpyNode.update()"
        cdef CUDA_MEMCPY3D old = self._params(what)
        if old.Height > 1 or old.Depth > 1 or old.srcArray != NULL or old.dstArray != NULL \
                or old.srcXInBytes or old.srcY or old.srcZ or old.srcLOD \
                or old.dstXInBytes or old.dstY or old.dstZ or old.dstLOD:
            raise NotImplementedError(f"{what}: only a one-dimensional copy between addresses "
                                      f"(no offsets) can be changed")
        held = self._record.uses if self._record.uses else [None, None]
        if dst is None:
            if dst_owner is not None:
                raise ValueError(f"{what}: dst_owner goes with a new raw-address dst")
            dst, dst_owner = _kept_operand(held[0], self.dst)
        if src is None:
            if src_owner is not None:
                raise ValueError(f"{what}: src_owner goes with a new raw-address src")
            src, src_owner = _kept_operand(held[1], self.src)
        c_memset(&params, 0, sizeof(params))
        uses = memcpy_params(&params, dst, src, old.WidthInBytes if size is None else size,
                             dst_owner, src_owner, what)
        params.memcpy.copyCtx = current_ctx(what)
        _set_params(self, &params, uses)


cdef tuple _kept_operand(object held, size_t address):
    """An operand an update leaves as it is: ``(operand, owner)`` for the parameter fillers
    (the Buffer it was, or its address and the owner that was kept with it)."""
    return (held, None) if isinstance(held, Buffer) else (address, held)


@cython.final
cdef class ChildGraphNode(GraphNode):
    """A node that runs a copy of another graph."""

    @property
    def child_graph(self):
        """The node's copy of the child graph, as a :class:`GraphDefinition` view (changes
        made through it reach this node)."""
        cdef CUgraph copy = NULL
        self._check_valid("ChildGraphNode.child_graph")
        HANDLE_RETURN(cydriver.cuGraphChildGraphNodeGetGraph(self._handle, &copy))
        return definition_view(self._graph._store, copy, self._record)

    def update(self, child):
        """Replace the node's copy with a copy of ``child`` (a definition of another
        hierarchy, with the same restrictions as :meth:`GraphNode.embed`).

        .. note:: Calls ``cuGraphNodeSetParams``.
        """
        cdef CUgraphNodeParams params
        cdef CUgraph copy = NULL
        what = "ChildGraphNode.update()"
        self._check_valid(what)
        cdef GraphDefinition c = child_definition(child, what)
        if c._store is self._graph._store:
            raise ValueError(f"{what}: child must be a graph of another hierarchy, not one of "
                             f"this definition's")
        check_child(c._handle, what)
        c_memset(&params, 0, sizeof(params))
        params.type = cydriver.CU_GRAPH_NODE_TYPE_GRAPH
        params.graph.graph = c._handle
        HANDLE_RETURN(cydriver.cuGraphNodeSetParams(self._handle, &params))
        # The nodes of the old copy are gone (or no longer ours to track): forget them.
        forget_records(self._graph._store, {self._record.info})
        HANDLE_RETURN(cydriver.cuGraphChildGraphNodeGetGraph(self._handle, &copy))
        self._record.info = <size_t>copy  # (the copy carries the child's user object)


cdef class _EventNode(GraphNode):
    # EventRecordNode and EventWaitNode: the event, and how to change it.

    cdef object _event(self, str what):
        self._check_valid(what)
        if self._record.uses:
            return self._record.uses[0]
        return None  # a captured node: its CUevent is not an Event of ours

    cdef int _set(self, object event, str what) except -1:
        self._check_valid(what)
        check_event(event, what)
        own_uses(self._graph._store, self._record.graph, [event])
        if isinstance(self, EventRecordNode):
            HANDLE_RETURN(cydriver.cuGraphEventRecordNodeSetEvent(self._handle,
                                                                  (<Event>event)._handle))
        else:
            HANDLE_RETURN(cydriver.cuGraphEventWaitNodeSetEvent(self._handle,
                                                                (<Event>event)._handle))
        self._record.uses = [event]
        return 0


@cython.final
cdef class EventRecordNode(_EventNode):
    """A node that records an event."""

    @property
    def event(self):
        """The :class:`Event` recorded (None for a captured node)."""
        return self._event("EventRecordNode.event")

    def update(self, event):
        """Record ``event`` instead.

        .. note:: Calls ``cuGraphEventRecordNodeSetEvent``.
        """
        self._set(event, "EventRecordNode.update()")


@cython.final
cdef class EventWaitNode(_EventNode):
    """A node that waits for an event."""

    @property
    def event(self):
        """The :class:`Event` waited for (None for a captured node)."""
        return self._event("EventWaitNode.event")

    def update(self, event):
        """Wait for ``event`` instead.

        .. note:: Calls ``cuGraphEventWaitNodeSetEvent``.
        """
        self._set(event, "EventWaitNode.update()")


@cython.final
cdef class HostCallbackNode(GraphNode):
    """A node that calls a host function."""

    @property
    def callback(self):
        """The Python callable; None for a ctypes function (or a captured node)."""
        self._check_valid("HostCallbackNode.callback")
        if not self._record.uses:
            return None
        cdef _HostCall call = <_HostCall>self._record.uses[0]
        return call.fn if call.c_fn == NULL else None

    def update(self, fn, *, user_data=None):
        """Call ``fn`` instead, as :meth:`GraphNode.callback` takes it.

        .. note:: Calls ``cuGraphHostNodeSetParams``.
        """
        cdef CUDA_HOST_NODE_PARAMS params
        what = "HostCallbackNode.update()"
        self._check_valid(what)
        cdef _HostCall call = host_node_params(&params, fn, user_data, what)
        own_uses(self._graph._store, self._record.graph, [call])
        HANDLE_RETURN(cydriver.cuGraphHostNodeSetParams(self._handle, &params))
        self._record.uses = [call]


cdef class ConditionalNode(GraphNode):
    """A conditional node. Made by cuda_core, it is an :class:`IfNode`, :class:`IfElseNode`,
    :class:`WhileNode` or :class:`SwitchNode`; a conditional node captured or added outside
    cuda_core is this class, whose condition, type and bodies are not known (None, None,
    ``()``)."""

    @property
    def condition(self):
        """The :class:`GraphCondition` that decides the node (None when not known)."""
        self._check_valid("ConditionalNode.condition")
        return self._record.info[0] if self._record.info is not None else None

    @property
    def cond_type(self):
        """``GraphConditionalType.IF``, ``WHILE`` or ``SWITCH`` (None when not known)."""
        self._check_valid("ConditionalNode.cond_type")
        return self._record.info[1] if self._record.info is not None else None

    @property
    def branches(self):
        """The body graphs, as :class:`GraphDefinition` views (``()`` when not known)."""
        self._check_valid("ConditionalNode.branches")
        if self._record.info is None:
            return ()
        return tuple(definition_view(self._graph._store, <CUgraph><size_t>body, self._record)
                     for body in self._record.info[2])


@cython.final
cdef class IfNode(ConditionalNode):
    """A node that runs :attr:`then` when its condition is nonzero."""

    @property
    def then(self):
        """The body graph, as a :class:`GraphDefinition` view."""
        return self.branches[0]


@cython.final
cdef class IfElseNode(ConditionalNode):
    """A node that runs :attr:`then` when its condition is nonzero, :attr:`else_` when it is
    zero."""

    @property
    def then(self):
        """The body run when the condition is nonzero."""
        return self.branches[0]

    @property
    def else_(self):
        """The body run when the condition is zero."""
        return self.branches[1]


@cython.final
cdef class WhileNode(ConditionalNode):
    """A node that runs :attr:`body` while its condition is nonzero (checked before each
    run)."""

    @property
    def body(self):
        """The body graph, as a :class:`GraphDefinition` view."""
        return self.branches[0]


@cython.final
cdef class SwitchNode(ConditionalNode):
    """A node that runs ``branches[i]`` when its condition is ``i`` (none when it is
    ``len(branches)`` or more)."""


register_node_classes({
    cydriver.CU_GRAPH_NODE_TYPE_EMPTY: EmptyNode,
    cydriver.CU_GRAPH_NODE_TYPE_KERNEL: KernelNode,
    cydriver.CU_GRAPH_NODE_TYPE_MEM_ALLOC: AllocNode,
    cydriver.CU_GRAPH_NODE_TYPE_MEM_FREE: FreeNode,
    cydriver.CU_GRAPH_NODE_TYPE_MEMSET: MemsetNode,
    cydriver.CU_GRAPH_NODE_TYPE_MEMCPY: MemcpyNode,
    cydriver.CU_GRAPH_NODE_TYPE_GRAPH: ChildGraphNode,
    cydriver.CU_GRAPH_NODE_TYPE_EVENT_RECORD: EventRecordNode,
    cydriver.CU_GRAPH_NODE_TYPE_WAIT_EVENT: EventWaitNode,
    cydriver.CU_GRAPH_NODE_TYPE_HOST: HostCallbackNode,
    cydriver.CU_GRAPH_NODE_TYPE_CONDITIONAL: ConditionalNode,
    IF_NODE_CLASS: IfNode,
    IF_ELSE_NODE_CLASS: IfElseNode,
    WHILE_NODE_CLASS: WhileNode,
    SWITCH_NODE_CLASS: SwitchNode,
})
