from cuda.bindings.cydriver cimport CUDA_GRAPH_INSTANTIATE_PARAMS, CUgraph, CUgraphExec, CUgraphNode

from cuda_core._context cimport Context
from cuda_core._resource cimport Resource
from cuda_core._stream cimport Stream


cdef class Graph(Resource):
    cdef CUgraphExec _handle
    cdef Context _ctx             # the context it was instantiated in
    # A weak reference to the _GraphStore of the hierarchy it was made from (or last updated
    # from): graph[node] takes that hierarchy's nodes only.
    cdef object _store
    # What executable-node updates passed (the driver's user objects own what the graph it
    # was made or updated from uses): under the node's address, as (objects, the value of
    # _launches when they were set).
    cdef dict _held
    # What updates replaced after a launch may have used it: let go once those launches are
    # done (_let_go).
    cdef list _retired
    cdef unsigned long long _launches
    cdef Stream _last_stream      # of the latest launch: later launches queue behind it

    cdef int _check_ready(self) except -1


cdef Graph instantiate(CUgraph graph, Context ctx, object store,
                       CUDA_GRAPH_INSTANTIATE_PARAMS* params, str what)
# ``options`` (GraphCompleteOptions, a dict or None) as instantiation flags in ``params``;
# returns the options object, which holds the upload stream: keep it until instantiate returns.
cdef object instantiate_params(object options, str what,
                               CUDA_GRAPH_INSTANTIATE_PARAMS* params)
# cuGraphDebugDotPrint of ``graph`` to ``path`` with ``options`` (GraphDebugPrintOptions, a
# dict or None) as its flags.
# A DOT file's path: a str or an os.PathLike of one (cuda.core takes a str); TypeError else.
cdef str dot_path(object path, str what)
cdef int dot_print(CUgraph graph, object path, object options, str what) except -1
cdef int update_graph(Graph graph, CUgraph source, object store) except -1
# After an executable-node update of ``node``: ``objects`` (what the new parameters use) are
# held as long as the Graph can run them.
cdef int hold_for_node(Graph graph, CUgraphNode node, object objects) except -1
# ``graph[node]``'s implementation, registered once by _exec_nodes when it is imported (it
# cimports this module; a second registration raises, and Graph[node] raises while none is):
# ``factory(graph, node)`` gives the view.
ctypedef object (*view_factory)(Graph graph, object node)
cdef int register_view_factory(view_factory factory) except -1
