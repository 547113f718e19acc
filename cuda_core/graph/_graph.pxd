from cuda.bindings.cydriver cimport CUDA_GRAPH_INSTANTIATE_PARAMS, CUgraph, CUgraphExec

from cuda_core._context cimport Context
from cuda_core._resource cimport Resource


cdef class Graph(Resource):
    cdef CUgraphExec _handle
    cdef Context _ctx             # the context it was instantiated in
    cdef list _keep               # the _HostCall of each host node: held again by each launch
    # What the nodes of a GraphDefinition use (kernels, argument objects, memcpy and memset
    # operands), held as long as the Graph instantiated from it lives; None for a capture.
    cdef tuple _uses


cdef Graph instantiate(CUgraph graph, Context ctx, list keep,
                       CUDA_GRAPH_INSTANTIATE_PARAMS* params, str what)
# ``options`` (GraphCompleteOptions, a dict or None) as instantiation flags in ``params``;
# returns the options object, which holds the upload stream: keep it until instantiate returns.
cdef object instantiate_params(object options, str what,
                               CUDA_GRAPH_INSTANTIATE_PARAMS* params)
# cuGraphDebugDotPrint of ``graph`` to ``path`` with ``options`` (GraphDebugPrintOptions, a
# dict or None) as its flags.
cdef int dot_print(CUgraph graph, object path, object options, str what) except -1
cdef int update_graph(Graph graph, CUgraph source, list keep) except -1
