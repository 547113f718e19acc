from cuda.bindings.cydriver cimport CUgraph, CUgraphNode

from cuda_core._resource cimport Resource


cdef class GraphDefinition(Resource):
    cdef CUgraph _handle
    # One record per node added through this definition, by the node's address: the list of
    # the objects the node uses (its kernel and arguments, its operands). The record's identity
    # marks the node alive: destroy() removes it, so a stale GraphNode (whose address the driver
    # may give to a new node) is told apart from a live one and never reaches the driver.
    cdef dict _uses

    cdef int _check_valid(self, str what) except -1
    cdef object _wrap(self, CUgraphNode handle)


cdef class GraphNode:
    cdef CUgraphNode _handle
    cdef GraphDefinition _graph
    cdef list _record             # its record in _graph._uses while the node lives
    cdef object __weakref__

    cdef int _check_valid(self, str what) except -1
