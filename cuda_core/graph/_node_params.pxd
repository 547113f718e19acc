from libcpp.vector cimport vector

from cuda.bindings.cydriver cimport (CUcontext, CUgraph, CUgraphConditionalNodeType,
                                     CUgraphNodeParams, CUmemAccessDesc)

from cuda_core._kernel_args cimport ParamHolder
from cuda_core.graph._condition cimport GraphCondition


# The GraphConditionalType of each CUgraphConditionalNodeType.
cdef dict COND_TYPES

# Each fills ``params`` (zeroed by the caller) for one node: every argument is checked first, and
# no driver call is made except the kernel's parameter layout (read once per Kernel) and the
# current context's device (an allocation without a device). ``what`` names the builder in
# messages. The kernel, memset, memcpy and event ones return the list of the objects the node
# uses, which its graph holds (kernel: [kernel, args]; memset: [dst object or owner]; memcpy:
# [dst's, src's], None where there is none; event: [event]). The kernel's packed arguments live in
# ``holder`` (initialized here, released by the caller once the node is added: the driver copies
# them); an allocation's peer access in ``access``, which the caller keeps until then. The
# caller sets the node's context.
cdef list kernel_params(CUgraphNodeParams* params, ParamHolder* holder, object config,
                        object kernel, tuple args, str what)
cdef list memset_params(CUgraphNodeParams* params, object dst, object value, object width,
                        object height, object pitch, object dst_owner, str what)
cdef list memcpy_params(CUgraphNodeParams* params, object dst, object src, object size,
                        object dst_owner, object src_owner, str what)
cdef int alloc_params(CUgraphNodeParams* params, vector[CUmemAccessDesc]& access,
                      object size, object device, object memory_type, object peer_access,
                      str what) except -1
cdef int free_params(CUgraphNodeParams* params, object dptr, str what) except -1
cdef list event_params(CUgraphNodeParams* params, object event, bint record, str what)
# A conditional node of ``condition`` (already checked to be of the graph), with ``count``
# bodies.
cdef int conditional_params(CUgraphNodeParams* params, GraphCondition condition,
                            CUgraphConditionalNodeType kind, unsigned int count) except -1

# The checks that builders and node updates share.
# The context current on this thread, or a RuntimeError naming ``what``.
cdef CUcontext current_ctx(str what) except? NULL
# ``event`` an open Event (TypeError, or the closed Event's error).
cdef int check_event(object event, str what) except -1
# A switch node's branch count, 1 to 2**32 - 1: 0 as the driver's refusal (InvalidValueError),
# outside the C unsigned int SizeOverflowError, as cuda.core's conversion.
cdef unsigned int switch_count(object count, str what) except? 0
# Refuse (ValueError naming ``what``) a child graph with nodes the driver takes in none.
cdef int check_child(CUgraph graph, str what) except -1
