from cuda.bindings.cydriver cimport CUcontext, CUgraph, CUgraphNode, CUuserObject

from cuda_core._resource cimport Resource
from cuda_core._stream cimport Stream


cdef class _NodeRecord:
    # One per live node of a hierarchy that cuda_core knows: its identity marks the node alive
    # (a stale GraphNode, whose address the driver may give to a new node, is told apart and
    # never reaches the driver).
    cdef CUgraphNode node
    cdef CUgraph graph            # the graph the node is in (the root, a body, a child's copy)
    cdef list uses                # what the node uses (also in the hierarchy's bag, own_uses)
    # By node type: a conditional node's (GraphCondition, GraphConditionalType, tuple of body
    # CUgraph addresses); a child graph node's CUgraph address of its copy; else None.
    cdef object info
    # A weak reference to the GraphNode object that stands for the node (None before the first
    # is made): while that object lives, every lookup of the node returns it (_node_object).
    # Read and written inside a critical section on the record.
    cdef object obj_ref


cdef class _GraphStore(Resource):
    # One per hierarchy: a GraphDefinition() and everything reached from it (conditional
    # bodies, child graphs' copies), or a GraphBuilder's capture. It owns the root CUgraph
    # (NULL while a capture owns it) and the records of every node of the hierarchy.
    cdef CUgraph _handle
    cdef dict _records            # node address -> _NodeRecord
    cdef bint _viewed             # a GraphDefinition view of a capture was handed out
    # What the hierarchy's nodes use, in one list (the bag), owned by a CUDA user object
    # (_owner; this store holds one reference to it) that every graph of the hierarchy with a
    # node of ours retains (_retained: their addresses). The driver carries it into clones,
    # child graph copies and executable graphs (own_uses).
    cdef list _bag
    cdef CUuserObject _owner
    cdef set _retained
    # The body builders of a capture, each as (a weak reference to it, its Stream): a body
    # still capturing when the graph is destroyed would be captured into a freed graph, so
    # their captures end first, through the stream where the builder is being collected.
    cdef list _bodies
    # Why the hierarchy's graph must not reach the driver again (None: it may): a conditional
    # body's capture failed (invalidated, or abandoned with an error), which leaves the body
    # graph incomplete, and instantiating or destroying the graph that holds it crashed in the
    # driver: such a graph is never destroyed (left to the process).
    cdef str _broken

    # Raise (RuntimeError, ``what`` naming the call) where _broken says why the graph cannot go
    # to the driver.
    cdef int check_whole(self, str what) except -1


cdef class GraphDefinition(Resource):
    cdef CUgraph _handle
    cdef _GraphStore _store
    # A view of a conditional body or a child graph's copy: the record of the node that owns
    # the graph (the view is valid while that record is). None for a root or a builder's view.
    cdef _NodeRecord _owner
    cdef bint _owns               # made by GraphDefinition(): close() destroys the hierarchy

    cdef int _check_valid(self, str what) except -1
    cdef object _wrap(self, CUgraphNode handle)


cdef class GraphNode:
    cdef CUgraphNode _handle
    cdef GraphDefinition _graph
    cdef _NodeRecord _record      # the node's record in its store while the node lives
    cdef object __weakref__

    cdef int _check_valid(self, str what) except -1


cdef _GraphStore new_store(CUgraph owned)
cdef int end_body_captures(_GraphStore store) except -1
# End the capture in progress on ``stream``, if any (its graph is not destroyed: a body's is
# its node's), and forget it as a body being captured; nothing on a closed stream. Returns the driver's result of ending it
# (CUDA_SUCCESS where nothing was capturing).
cdef int end_capture_on(Stream stream) except -1
# The message of _GraphStore._broken for a conditional body whose capture failed.
cdef str BODY_CAPTURE_FAILED
# ``graph`` (of ``store``'s hierarchy) holds ``uses`` (a list of objects; None or empty: nothing)
# for as long as it, a clone or copy of it, or an executable graph made from one lives, and
# their launches run: through the hierarchy's user object.
cdef int own_uses(_GraphStore store, CUgraph graph, list uses) except -1
# A record of ``node`` in ``graph``, using ``uses``; its info (None) is set by the caller.
cdef _NodeRecord new_record(CUgraphNode node, CUgraph graph, list uses)
# A definition view of ``graph`` (a body, a child's copy, a builder's graph) in ``store``,
# valid while ``owner`` (the owning node's record, or None) is alive.
cdef GraphDefinition definition_view(_GraphStore store, CUgraph graph, _NodeRecord owner)
# The class of GraphNode for each CUgraphNodeType, filled by _node_types when it is imported;
# the conditional node classes under these keys (the driver has one type for them all).
cdef enum:
    IF_NODE_CLASS = -1
    IF_ELSE_NODE_CLASS = -2
    WHILE_NODE_CLASS = -3
    SWITCH_NODE_CLASS = -4

cdef int register_node_class(int node_type, type cls) except -1
# Drop the records of the nodes of the ``owned`` graphs (addresses), and of what those nodes own
# in turn: the driver destroyed them (with the node that owned the graphs, or its update).
cdef int forget_records(_GraphStore store, set owned) except -1
# Refuse (ValueError naming ``what``) a child graph with nodes the driver takes in none.
cdef int check_child(CUgraph graph, str what) except -1
# The context current on this thread, or a RuntimeError naming ``what``.
cdef CUcontext current_ctx(str what) except? NULL
# The argument checks of the nodes that take a child graph or an event (builders and updates):
# ``child`` as a valid GraphDefinition; ``event`` an open Event.
cdef GraphDefinition child_definition(object child, str what)
cdef int check_event(object event, str what) except -1
# A switch node's branch count, 1 to 2**32 - 1: 0 as the driver's refusal (InvalidValueError),
# outside the C unsigned int SizeOverflowError, as cuda.core's conversion.
cdef unsigned int switch_count(object count, str what) except? 0
