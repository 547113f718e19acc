from cuda.bindings.cydriver cimport (CUgraph, CUgraphConditionalNodeType, CUgraphNode,
                                     CUgraphNodeParams)

from cuda_core._resource cimport Resource
from cuda_core.graph._store cimport _GraphStore, _NodeRecord


cdef class GraphDefinition(Resource):
    cdef CUgraph _handle
    cdef _GraphStore _store
    # A view of a conditional body or a child graph's copy: the record of the node that owns
    # the graph (the view is valid while that record is). None for a root or a builder's view.
    cdef _NodeRecord _owner
    cdef bint _owns               # made by GraphDefinition(): close() destroys the hierarchy

    cdef int _check_valid(self, str what) except -1
    cdef object _wrap(self, CUgraphNode handle)


# A definition view of ``graph`` (a body, a child's copy, a builder's graph) in ``store``,
# valid while ``owner`` (the owning node's record, or None) is alive.
cdef GraphDefinition definition_view(_GraphStore store, CUgraph graph, _NodeRecord owner)
# ``child`` (an argument of the builders and updates that take a child graph) as a valid
# GraphDefinition, or a TypeError naming ``what``.
cdef GraphDefinition child_definition(object child, str what)

# The builders' one path: add a node to ``graph`` that depends on ``deps`` (GraphNodes of it),
# with the arguments of the builder of the same name, and return its GraphNode; ``what`` names
# the builder in messages. (Typed ``object``: GraphNode is _node_base's, which cimports this
# module.)
cdef object add_empty(GraphDefinition graph, tuple deps, str what)
cdef object add_kernel(GraphDefinition graph, tuple deps, object config, object kernel,
                       tuple args, str what)
cdef object add_memset(GraphDefinition graph, tuple deps, object dst, object value,
                       object width, object height, object pitch, object dst_owner, str what)
cdef object add_memcpy(GraphDefinition graph, tuple deps, object dst, object src, object size,
                       object dst_owner, object src_owner, str what)
cdef object add_alloc(GraphDefinition graph, tuple deps, object size, object device,
                      object memory_type, object peer_access, str what)
cdef object add_free(GraphDefinition graph, tuple deps, object dptr, str what)
cdef object add_child(GraphDefinition graph, tuple deps, object child, str what)
cdef object add_event(GraphDefinition graph, tuple deps, object event, bint record, str what)
cdef object add_host(GraphDefinition graph, tuple deps, object fn, object user_data, str what)
cdef object add_conditional(GraphDefinition graph, tuple deps, object condition,
                            CUgraphConditionalNodeType kind, unsigned int count, str what)
