from cuda.bindings.cydriver cimport CUgraph, CUgraphNode, CUuserObject

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


cdef _GraphStore new_store(CUgraph owned)
cdef int end_body_captures(_GraphStore store) except -1
# End the capture in progress on ``stream``, if any (its graph is not destroyed: a body's is
# its node's), and forget it as a body being captured; nothing on a closed stream. Returns the
# driver's result of ending it (CUDA_SUCCESS where nothing was capturing).
cdef int end_capture_on(Stream stream) except -1
# The message of _GraphStore._broken for a conditional body whose capture failed.
cdef str BODY_CAPTURE_FAILED
# ``graph`` (of ``store``'s hierarchy) holds ``uses`` (a list of objects; None or empty: nothing)
# for as long as it, a clone or copy of it, or an executable graph made from one lives, and
# their launches run: through the hierarchy's user object.
cdef int own_uses(_GraphStore store, CUgraph graph, list uses) except -1
# A record of ``node`` in ``graph``, using ``uses``; its info (None) is set by the caller.
cdef _NodeRecord new_record(CUgraphNode node, CUgraph graph, list uses)
# The graphs (addresses) a node owns, from its record: a conditional node's bodies, a child
# graph node's copy.
cdef set owned_graphs(_NodeRecord record)
# Drop the records of the nodes of the ``owned`` graphs (addresses), and of what those nodes own
# in turn: the driver destroyed them (with the node that owned the graphs, or its update).
cdef int forget_records(_GraphStore store, set owned) except -1
