from cuda.bindings.cydriver cimport CUDA_GRAPH_INSTANTIATE_PARAMS, CUgraph, CUgraphExec

from cuda_core._context cimport Context
from cuda_core._resource cimport Resource


cdef class Graph(Resource):
    cdef CUgraphExec _handle
    cdef Context _ctx             # the context it was instantiated in
    cdef list _keep               # the _HostCall of each host node: held again by each launch


cdef Graph instantiate(CUgraph graph, Context ctx, list keep,
                       CUDA_GRAPH_INSTANTIATE_PARAMS* params)
cdef int update_graph(Graph graph, CUgraph source, list keep) except -1
