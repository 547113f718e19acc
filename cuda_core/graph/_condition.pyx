"""GraphCondition: the value that decides a graph's conditional nodes."""

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUcontext, CUgraph, CUgraphConditionalHandle

from cuda_core._errors cimport HANDLE_RETURN

__all__ = ["GraphCondition"]


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

    def __reduce__(self):
        # A value, as cuda.core's (copy, deepcopy and pickle give an equal condition): the
        # handle and the address of the graph it was created for. It means something only to
        # that graph, in this process; a conditional node of another graph refuses it.
        return (_condition_from_state, (self._handle, <size_t>self._graph))


cdef GraphCondition _new_condition(CUgraphConditionalHandle handle, CUgraph graph):
    cdef GraphCondition cond = GraphCondition.__new__(GraphCondition)
    cond._handle = handle
    cond._graph = graph
    return cond


def _condition_from_state(handle, graph):
    """A GraphCondition from what ``GraphCondition.__reduce__`` gave."""
    return _new_condition(handle, <CUgraph><size_t>graph)


cdef GraphCondition create_condition(CUgraph graph, CUcontext ctx, unsigned int default_value,
                                    bint assign_default):
    """A new condition of ``graph`` (``cuGraphConditionalHandleCreate``), reset to
    ``default_value`` at each launch when ``assign_default``."""
    cdef CUgraphConditionalHandle handle = 0
    cdef unsigned int flags = cydriver.CU_GRAPH_COND_ASSIGN_DEFAULT if assign_default else 0
    HANDLE_RETURN(cydriver.cuGraphConditionalHandleCreate(&handle, graph, ctx, default_value,
                                                          flags))
    return _new_condition(handle, graph)
