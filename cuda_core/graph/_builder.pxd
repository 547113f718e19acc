from cuda.bindings.cydriver cimport (CUgraph, CUgraphConditionalNodeType, CUgraphEdgeData,
                                     CUgraphNode, CUgraphNodeParams)

from cuda_core._stream cimport Stream, StreamHolder
from cuda_core.graph._store cimport _GraphStore, _NodeRecord


cdef struct _Capture:
    # Where a capture stands (cuStreamGetCaptureInfo): its graph, and the nodes (with their
    # edge data, or NULL) that the next captured node depends on; the arrays are the driver's.
    CUgraph graph
    const CUgraphNode* deps
    const CUgraphEdgeData* edges
    size_t count


# A StreamHolder: its _stream is where the work is captured (as_stream gives it for the builder).
cdef class GraphBuilder(StreamHolder):
    cdef bint _owns_stream        # made for this builder (closed with it)
    # The captured graph once building ended (owned), or a conditional node's body graph
    # (owned by the node, captured into with cuStreamBeginCaptureToGraph).
    cdef CUgraph _graph
    cdef bint _owns_graph
    cdef bint _is_body
    cdef GraphBuilder _parent     # a body's builder keeps the builder of its node alive
    cdef _NodeRecord _owner       # a body's: the record of its conditional node (alive or not)
    cdef int _state               # _NEW, _BUILDING or _ENDED
    cdef bint _join_required      # forked off by split(): ends by join(), not end_building()
    # Streams of the builders joined into this one: they stay in the capture until it ends.
    cdef list _joined
    # The capture's store, shared by every builder of it: the records of the nodes added
    # through graph_definition views (and of the conditional nodes), the user object that owns
    # what captured nodes use (a host node's callback, a kernel and its arguments), and, once
    # the capture of a graph_definition's builder ended, the owner of the captured graph.
    cdef _GraphStore _store

    cdef int _check_building(self, str what) except -1
    cdef int _check_ended(self, str what) except -1
    cdef int _check_body(self, str what) except -1
    cdef int _close_joined(self) except -1
    cdef int _capture_info(self, _Capture* cap) except -1
    cdef CUgraphNode _add_after_capture(self, CUgraphNodeParams* params,
                                        _Capture* cap) except NULL
    cdef tuple _conditional(self, object condition, CUgraphConditionalNodeType kind,
                            unsigned int size, str what)
