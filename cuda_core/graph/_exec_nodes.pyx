"""The executable views of a Graph's nodes (``graph[node]``): ``update()`` changes the node's
parameters in that Graph only (the definition and other Graphs keep theirs), and kernel,
memset and memcpy nodes can be disabled and enabled.

What an update passes (kernel arguments, operands, events, callbacks) is held by the Graph
for as long as a launch may use it (``hold_for_node`` in ``_graph``).
"""

cimport cython
from libc.string cimport memset as c_memset

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUDA_HOST_NODE_PARAMS, CUDA_MEMSET_NODE_PARAMS,
                                     CUgraphNodeParams, CUresult)

from cuda_core._errors cimport HANDLE_RETURN, make_driver_error
from cuda_core._event cimport Event
from cuda_core._kernel_args cimport ParamHolder, holder_release
from cuda_core.graph._definition cimport GraphDefinition, child_definition
from cuda_core.graph._graph cimport Graph, hold_for_node, register_view_factory
from cuda_core.graph._host_callback cimport _HostCall, host_node_params
from cuda_core.graph._node_base cimport GraphNode
from cuda_core.graph._node_params cimport (check_event, kernel_params, memcpy_params,
                                           memset_params)

from cuda_core.graph._node_types import (ChildGraphNode, EventRecordNode, EventWaitNode,
                                         HostCallbackNode, KernelNode, MemcpyNode, MemsetNode)

__all__ = ["ExecutableGraphNode", "ExecutableKernelNode", "ExecutableMemsetNode",
           "ExecutableMemcpyNode", "ExecutableChildGraphNode", "ExecutableEventRecordNode",
           "ExecutableEventWaitNode", "ExecutableHostCallbackNode"]


cdef class ExecutableGraphNode:
    """A node of a :class:`Graph`, seen through the node of the definition it was made from
    (``graph[node]``). This class itself has no ``update``: empty, allocation, free and
    conditional nodes cannot be changed in an instantiated graph.

    Not constructible: use ``graph[node]``.
    """

    cdef Graph _graph
    cdef GraphNode _node

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__} objects cannot be instantiated directly; "
                           f"use graph[node]")

    cdef int _check(self, str what) except -1:
        if self._graph is None or self._node is None:
            raise RuntimeError(f"{what}: this {type(self).__name__} was not made by graph[node]")
        self._graph._check_ready()
        self._node._check_valid(what)
        return 0

    cdef int _done(self, CUresult err, object uses, str what) except -1:
        """After the driver call of an update: its error, or what the Graph now holds."""
        if err == cydriver.CUDA_ERROR_INVALID_VALUE:
            raise ValueError(f"{what}: the driver refused the update: the node is not part of "
                             f"this Graph (added after it was instantiated?), or the change is "
                             f"one an instantiated graph cannot take") \
                from make_driver_error(err, what)
        HANDLE_RETURN(err)
        hold_for_node(self._graph, self._node._handle, uses)
        return 0

    def __reduce__(self):
        # As cuda.core: a view of one Graph's node; copy.copy, copy.deepcopy and pickle raise
        # TypeError.
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")

    def __repr__(self):
        if self._node is None:
            return f"<{type(self).__name__} (not made by graph[node])>"
        return (f"<{type(self).__name__} of {self._graph!r} "
                f"node={<size_t>self._node._handle:#x}>")


cdef class _Switchable(ExecutableGraphNode):
    # Kernel, memset and memcpy nodes: the driver can disable them in an instantiated graph.

    @property
    def is_enabled(self):
        """Whether the node runs when the Graph is launched.

        .. note:: Calls ``cuGraphNodeGetEnabled``.
        """
        cdef unsigned int enabled = 0
        self._check("is_enabled")
        HANDLE_RETURN(cydriver.cuGraphNodeGetEnabled(self._graph._handle, self._node._handle,
                                                     &enabled))
        return enabled != 0

    def enable(self):
        """Run the node again at the Graph's launches.

        .. note:: Calls ``cuGraphNodeSetEnabled``.
        """
        self._check("enable()")
        HANDLE_RETURN(cydriver.cuGraphNodeSetEnabled(self._graph._handle, self._node._handle,
                                                     1))

    def disable(self):
        """Skip the node at the Graph's launches (the nodes after it still wait for its
        place in the order).

        .. note:: Calls ``cuGraphNodeSetEnabled``.
        """
        self._check("disable()")
        HANDLE_RETURN(cydriver.cuGraphNodeSetEnabled(self._graph._handle, self._node._handle,
                                                     0))


@cython.final
cdef class ExecutableKernelNode(_Switchable):
    """A kernel node of a :class:`Graph`."""

    def update(self, *, config, kernel, args):
        """Launch ``kernel`` with ``config`` and ``args`` (all of its arguments; ``()`` for
        none) at the Graph's next launches. The arguments go through the checks of
        :func:`launch`.

        .. note:: Calls ``cuGraphExecNodeSetParams``.
        """
        cdef CUgraphNodeParams params
        cdef ParamHolder holder
        cdef CUresult err
        what = "ExecutableKernelNode.update()"
        self._check(what)
        c_memset(&params, 0, sizeof(params))
        holder.heap = NULL
        try:
            uses = kernel_params(&params, &holder, config, kernel, tuple(args), what)
            params.kernel.ctx = self._graph._ctx._handle
            err = cydriver.cuGraphExecNodeSetParams(self._graph._handle, self._node._handle,
                                                    &params)
        finally:
            holder_release(&holder)
        self._done(err, uses, what)


@cython.final
cdef class ExecutableMemsetNode(_Switchable):
    """A memset node of a :class:`Graph`."""

    def update(self, *, dst, value, width, height=1, pitch=0):
        """Set ``width`` elements at ``dst`` to ``value`` at the Graph's next launches, as
        :meth:`GraphNode.memset` takes them. Only a one-row memset can be changed in an
        instantiated graph.

        .. note:: Calls ``cuGraphExecNodeSetParams``.
        """
        cdef CUgraphNodeParams params
        cdef CUDA_MEMSET_NODE_PARAMS old
        what = "ExecutableMemsetNode.update()"
        self._check(what)
        HANDLE_RETURN(cydriver.cuGraphMemsetNodeGetParams(self._node._handle, &old))
        c_memset(&params, 0, sizeof(params))
        uses = memset_params(&params, dst, value, width, height, pitch, None, what)
        if old.height != 1 or params.memset.height != 1:
            raise ValueError(f"{what}: only a one-row memset (height 1) can be changed in an "
                             f"instantiated graph")
        params.memset.ctx = self._graph._ctx._handle
        self._done(cydriver.cuGraphExecNodeSetParams(self._graph._handle, self._node._handle,
                                                     &params), uses, what)


@cython.final
cdef class ExecutableMemcpyNode(_Switchable):
    """A memcpy node of a :class:`Graph`."""

    def update(self, *, dst, src, size):
        """Copy ``size`` bytes from ``src`` to ``dst`` at the Graph's next launches, as
        :meth:`GraphNode.memcpy` takes them.

        .. note:: Calls ``cuGraphExecNodeSetParams``.
        """
        cdef CUgraphNodeParams params
        what = "ExecutableMemcpyNode.update()"
        self._check(what)
        c_memset(&params, 0, sizeof(params))
        uses = memcpy_params(&params, dst, src, size, None, None, what)
        params.memcpy.copyCtx = self._graph._ctx._handle
        self._done(cydriver.cuGraphExecNodeSetParams(self._graph._handle, self._node._handle,
                                                     &params), uses, what)


@cython.final
cdef class ExecutableChildGraphNode(ExecutableGraphNode):
    """A child graph node of a :class:`Graph`."""

    def update(self, child):
        """Run ``child`` (a :class:`GraphDefinition` of the same shape as the node's graph)
        at the Graph's next launches.

        .. note:: Calls ``cuGraphExecChildGraphNodeSetParams``.
        """
        what = "ExecutableChildGraphNode.update()"
        self._check(what)
        cdef GraphDefinition c = child_definition(child, what)
        # A refusal here is about the child's graph (another shape): the driver's error. The
        # driver gives the node the child's user objects (what its nodes use) for the Graph to
        # hold, and drops the old ones once the launches queued before are done.
        HANDLE_RETURN(cydriver.cuGraphExecChildGraphNodeSetParams(
            self._graph._handle, self._node._handle, c._handle))


cdef int _update_event(ExecutableGraphNode view, object event, bint record,
                       str what) except -1:
    # update() of an event record node (``record``) or an event wait node.
    cdef CUresult err
    view._check(what)
    check_event(event, what)
    if record:
        err = cydriver.cuGraphExecEventRecordNodeSetEvent(view._graph._handle,
                                                          view._node._handle,
                                                          (<Event>event)._handle)
    else:
        err = cydriver.cuGraphExecEventWaitNodeSetEvent(view._graph._handle,
                                                        view._node._handle,
                                                        (<Event>event)._handle)
    view._done(err, event, what)
    (<Event>event)._graph_held = True  # its handle must outlive close() (Event._graph_held)
    return 0


@cython.final
cdef class ExecutableEventRecordNode(ExecutableGraphNode):
    """An event record node of a :class:`Graph`."""

    def update(self, event):
        """Record ``event`` at the Graph's next launches.

        .. note:: Calls ``cuGraphExecEventRecordNodeSetEvent``.
        """
        _update_event(self, event, True, "ExecutableEventRecordNode.update()")


@cython.final
cdef class ExecutableEventWaitNode(ExecutableGraphNode):
    """An event wait node of a :class:`Graph`."""

    def update(self, event):
        """Wait for ``event`` at the Graph's next launches.

        .. note:: Calls ``cuGraphExecEventWaitNodeSetEvent``.
        """
        _update_event(self, event, False, "ExecutableEventWaitNode.update()")


@cython.final
cdef class ExecutableHostCallbackNode(ExecutableGraphNode):
    """A host callback node of a :class:`Graph`."""

    def update(self, fn, *, user_data=None):
        """Call ``fn`` (as :meth:`GraphNode.callback` takes it) at the Graph's next launches.

        .. note:: Calls ``cuGraphExecHostNodeSetParams``.
        """
        cdef CUDA_HOST_NODE_PARAMS params
        what = "ExecutableHostCallbackNode.update()"
        self._check(what)
        cdef _HostCall call = host_node_params(&params, fn, user_data, what)
        self._done(cydriver.cuGraphExecHostNodeSetParams(self._graph._handle,
                                                         self._node._handle, &params),
                   call, what)


# The view of each node class (a node's class follows its type, so no driver call is needed).
# The other classes (empty, allocation, free and conditional nodes) have none: the driver
# changes nothing of theirs in an executable graph, and cuda.core refuses them (TypeError).
cdef dict _VIEWS = {
    KernelNode: ExecutableKernelNode,
    MemsetNode: ExecutableMemsetNode,
    MemcpyNode: ExecutableMemcpyNode,
    ChildGraphNode: ExecutableChildGraphNode,
    EventRecordNode: ExecutableEventRecordNode,
    EventWaitNode: ExecutableEventWaitNode,
    HostCallbackNode: ExecutableHostCallbackNode,
}


cdef object _view_for(Graph graph, object node):
    """``graph[node]``: the view of ``node``'s class for its type."""
    if not isinstance(node, GraphNode):
        raise TypeError(f"Graph[node]: node must be a GraphNode, not {type(node).__name__}")
    cdef GraphNode n = <GraphNode>node
    n._check_valid("Graph[node]")
    if graph._store is None or n._graph._store is not graph._store():
        raise ValueError("Graph[node]: the node belongs to another GraphDefinition than the "
                         "one this Graph was instantiated (or last updated) from")
    cls = _VIEWS.get(type(node))
    if cls is None:
        raise TypeError(f"Graph[node]: {type(node).__name__} does not support executable "
                        f"updates (kernel, memset, memcpy, child graph, event and host callback "
                        f"nodes do)")
    cdef ExecutableGraphNode view = <ExecutableGraphNode>cls.__new__(cls)
    view._graph = graph
    view._node = n
    return view


register_view_factory(_view_for)
