from cuda.bindings.cydriver cimport CUgraphNode, CUgraphNodeType

from cuda_core.graph._definition cimport GraphDefinition
from cuda_core.graph._store cimport _NodeRecord


cdef class GraphNode:
    cdef CUgraphNode _handle
    cdef GraphDefinition _graph
    cdef _NodeRecord _record      # the node's record in its store while the node lives
    cdef object __weakref__

    cdef int _check_valid(self, str what) except -1


# The class of GraphNode for each CUgraphNodeType, and for each kind of conditional node under
# these keys (the driver has one type for them all): ``classes``, registered once by _node_types
# as it is imported (it cimports this module; a second registration raises). node_class
# raises while none is registered; a type it does not list is a plain GraphNode.
cdef enum:
    IF_NODE_CLASS = -1
    IF_ELSE_NODE_CLASS = -2
    WHILE_NODE_CLASS = -3
    SWITCH_NODE_CLASS = -4

cdef int register_node_classes(dict classes) except -1
cdef type node_class(int node_type)
# The class of a conditional node of ``cond_type`` (a GraphConditionalType) with ``count`` bodies.
cdef type conditional_class(object cond_type, Py_ssize_t count)
# The class of a node of type ``kind`` with ``record`` (a conditional node's says which kind).
cdef type class_of(CUgraphNodeType kind, _NodeRecord record)
# The one GraphNode object of class ``cls`` for the node of ``record`` (``handle`` in ``graph``):
# the one that stands for it while that object lives, else a new one.
cdef GraphNode node_object(type cls, GraphDefinition graph, CUgraphNode handle,
                           _NodeRecord record)
# ``nodes`` as a tuple of live nodes of ``graph``'s CUgraph, without repeats, in order (TypeError
# or ValueError naming ``what`` otherwise).
cdef tuple same_graph(GraphDefinition graph, object nodes, str what)
