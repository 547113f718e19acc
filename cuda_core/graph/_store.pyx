"""The store of a graph hierarchy: a ``GraphDefinition()`` and everything reached from it
(conditional bodies, child graphs' copies), or a GraphBuilder's capture, has one ``_GraphStore``.
It owns the root ``CUgraph`` and keeps one ``_NodeRecord`` per node cuda_core knows, with what
the node uses (its kernel and arguments, its operands, its event, its callback). A record's
identity marks its node alive, so no call on a destroyed node or on a view of a destroyed body
reaches the driver (``_definition``, ``_node_base``).

What the nodes use is owned by the driver's graphs, not by Python objects: one list per
hierarchy (the store's bag), owned by a CUDA user object that each graph with a node of ours
retains (``own_uses``). The driver carries the user object into clones (also one another
library makes through ``.handle``), child graph copies and executable graphs, and drops it when
the last of them is destroyed and their launches are done. The bag only grows: a node
destroyed, or its parameters changed, leaves what it used to the hierarchy's end.
"""

cimport cython

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUDA_SUCCESS, CUgraph, CUgraphNode, CUresult, CUuserObject

from cuda_core._context cimport body_capture_ends
from cuda_core._errors cimport HANDLE_RETURN, check_call
from cuda_core._event cimport Event
from cuda_core._resource cimport Resource
from cuda_core._stream cimport Stream, end_capture
from cuda_core.graph._host_callback cimport new_owner


@cython.final
@cython.freelist(64)
cdef class _NodeRecord:
    """What one node uses, and by its identity whether the node lives (see the module
    docstring)."""


cdef _NodeRecord new_record(CUgraphNode node, CUgraph graph, list uses):
    cdef _NodeRecord record = _NodeRecord.__new__(_NodeRecord)
    record.node = node
    record.graph = graph
    record.uses = uses
    return record


@cython.final
cdef class _GraphStore(Resource):
    """The owner of a hierarchy's root ``CUgraph``, of its node records, and of one reference
    to the user object that owns what its nodes use."""

    cdef int check_whole(self, str what) except -1:
        if self._broken is not None:
            raise RuntimeError(f"{what}: {self._broken}")
        return 0

    cdef int _release(self) except -1:
        cdef CUgraph handle = self._handle
        cdef CUuserObject owner = self._owner
        end_body_captures(self)
        self._handle = NULL
        self._owner = NULL
        self._records = None
        self._retained = None
        self._bag = None  # the user object's reference keeps it for the graphs that hold it
        cdef CUresult destroyed = CUDA_SUCCESS
        cdef CUresult released = CUDA_SUCCESS
        if self._broken is not None:
            handle = NULL  # a corrupt body graph in it: destroying it crashed in the driver
        with nogil:  # as every destroy in a finalizer (DESIGN.md, the calls that wait)
            if handle != NULL:
                destroyed = cydriver.cuGraphDestroy(handle)
            if owner != NULL:
                released = cydriver.cuUserObjectRelease(owner, 1)
        check_call(destroyed, "cuGraphDestroy")
        check_call(released, "cuUserObjectRelease")
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._handle


cdef int end_body_captures(_GraphStore store) except -1:
    """End the capture of every body builder of ``store`` still capturing (before its graph,
    which holds their body graphs, is destroyed). None (a builder never set up): nothing.

    A body collected in the same reference cycle as the graph's owner has lost its weak
    reference (the collector clears those before it runs any finalizer) and may not have run
    its own finalizer yet: its capture is ended through its stream, which the store holds."""
    if store is None:
        return 0
    with cython.critical_section(store):  # as _new_body adds to it
        bodies, store._bodies = store._bodies, None
    for ref, stream in bodies or ():
        body = ref()
        if body is not None:
            err = body._end_capture()
        else:
            err = end_capture_on(<Stream>stream)
        if err != CUDA_SUCCESS:  # the body graph is incomplete: so is the graph of its node
            store._broken = BODY_CAPTURE_FAILED
    return 0


cdef str BODY_CAPTURE_FAILED = (
    "the capture of one of its conditional bodies failed, which left that body graph "
    "incomplete: the graph cannot be instantiated, cloned or updated from; build it again")


cdef int end_capture_on(Stream stream) except -1:
    cdef CUresult err = CUDA_SUCCESS
    if stream._closed:
        return 0  # Stream._release ended the capture and forgot the body
    with nogil:
        err = end_capture(stream._handle)
    body_capture_ends(stream._handle)
    return <int>err


cdef _GraphStore new_store(CUgraph owned):
    cdef _GraphStore store = _GraphStore.__new__(_GraphStore)
    store._handle = owned
    store._records = {}
    return store


cdef int own_uses(_GraphStore store, CUgraph graph, list uses) except -1:
    if not uses:
        return 0
    for item in uses:
        if isinstance(item, Event):  # its handle must outlive close() (Event._graph_held)
            (<Event>item)._graph_held = True
    # The splits of one capture add nodes to one store from their threads: one owner, one
    # retain per graph (free-threaded CPython; the driver calls here do not wait).
    with cython.critical_section(store):
        if store._owner == NULL:
            bag = []
            store._owner = new_owner(bag)
            store._bag = bag
            store._retained = set()
        if <size_t>graph not in store._retained:  # (a destroyed graph leaves it: forget_records)
            HANDLE_RETURN(cydriver.cuGraphRetainUserObject(graph, store._owner, 1, 0))
            store._retained.add(<size_t>graph)
        store._bag.extend(uses)
    return 0


# The GraphNode class of each CUgraphNodeType, and of each kind of conditional node under the


cdef set owned_graphs(_NodeRecord record):
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
            owned |= owned_graphs(other)
        if store._retained is not None:
            store._retained.difference_update(owned)
    return 0
