from cuda.bindings.cydriver cimport CUcontext, CUgraph, CUgraphConditionalHandle


cdef class GraphCondition:
    cdef CUgraphConditionalHandle _handle
    cdef CUgraph _graph           # the graph it was created for: its conditional nodes use it
    cdef object __weakref__       # weak references, as cuda.core allows


cdef GraphCondition create_condition(CUgraph graph, CUcontext ctx, unsigned int default_value,
                                    bint assign_default)
