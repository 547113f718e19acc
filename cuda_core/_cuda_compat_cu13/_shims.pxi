# The CUDA 13 definitions of cuda_core/_cuda_compat.pxd: cuda.bindings 13's own, unchanged.
# Each shim is the cydriver function of the same name and signature, called inline.

from cuda.bindings.cydriver cimport (
    CU_DEV_SM_RESOURCE_GROUP_PARAMS, CUcheckpointGpuPair, CUdevWorkqueueConfigResource,
)

cdef extern from "cuda.h":
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_ATOMIC_REDUCTION_SUPPORTED
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_D3D12_CIG_STREAMS_SUPPORTED
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_DMA_BUF_MMAP_SUPPORTED
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_UNICAST_SUPPORTED
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_MULTICAST_SUPPORTED
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_COUNTED_OPS_SUPPORTED
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_UNICAST_ACCESS_ON_OWNER_DEVICE_SUPPORTED
    CUmemAllocationType CU_MEM_ALLOCATION_TYPE_MANAGED
    CUmemLocationType CU_MEM_LOCATION_TYPE_NONE
    unsigned int CU_DEV_SM_RESOURCE_GROUP_BACKFILL
    cydriver.CUdevResourceType CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG
    cydriver.CUdevWorkqueueConfigScope CU_WORKQUEUE_SCOPE_DEVICE_CTX
    cydriver.CUdevWorkqueueConfigScope CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED


cdef inline CUdevWorkqueueConfigResource* wq_config(CUdevResource* r) noexcept nogil:
    return &r.wqConfig


cdef inline unsigned int sm_min_partition_size(const CUdevResource* r) noexcept nogil:
    return r.sm.minSmPartitionSize


cdef inline unsigned int sm_coscheduled_alignment(const CUdevResource* r) noexcept nogil:
    return r.sm.smCoscheduledAlignment


cdef inline unsigned int sm_flags(const CUdevResource* r) noexcept nogil:
    return r.sm.flags


cdef inline int set_restore_pairs(CUcheckpointRestoreArgs* args, CUcheckpointGpuPair* pairs,
                                  unsigned int n) except -1:
    args.gpuPairs = pairs
    args.gpuPairsCount = n
    return 0


cdef inline CUresult cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise advice,
                                 CUmemLocation loc) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuMemAdvise(p, n, advice, loc)


cdef inline CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUmemLocation loc,
                                        unsigned int flags,
                                        CUstream s) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuMemPrefetchAsync(p, n, loc, flags, s)


cdef inline CUresult cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                        size_t count, CUmemcpyAttributes* attrs,
                                        size_t* attrs_idxs, size_t num_attrs,
                                        CUstream s) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, attrs_idxs, num_attrs, s)


cdef inline CUresult cuMemDiscardBatchAsync(CUdeviceptr* p, size_t* sizes, size_t count,
                                            unsigned long long flags,
                                            CUstream s) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuMemDiscardBatchAsync(p, sizes, count, flags, s)


cdef inline CUresult cuMemDiscardAndPrefetchBatchAsync(
        CUdeviceptr* p, size_t* sizes, size_t count, CUmemLocation* locs, size_t* loc_idxs,
        size_t num_locs, unsigned long long flags,
        CUstream s) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuMemDiscardAndPrefetchBatchAsync(p, sizes, count, locs, loc_idxs, num_locs,
                                                      flags, s)


cdef inline CUresult cuMemPrefetchBatchAsync(
        CUdeviceptr* p, size_t* sizes, size_t count, CUmemLocation* locs, size_t* loc_idxs,
        size_t num_locs, unsigned long long flags,
        CUstream s) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuMemPrefetchBatchAsync(p, sizes, count, locs, loc_idxs, num_locs, flags, s)


cdef inline CUresult cuMemcpyWithAttributesAsync(
        CUdeviceptr dst, CUdeviceptr src, size_t n, CUmemcpyAttributes* attr,
        CUstream s) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuMemcpyWithAttributesAsync(dst, src, n, attr, s)


cdef inline CUresult cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* loc,
                                     CUmemAllocationType kind) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuMemGetMemPool(pool, loc, kind)


cdef inline CUresult cuDevSmResourceSplit(
        CUdevResource* result, unsigned int n, const CUdevResource* input,
        CUdevResource* remainder, unsigned int flags,
        CU_DEV_SM_RESOURCE_GROUP_PARAMS* params) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuDevSmResourceSplit(result, n, input, remainder, flags, params)


cdef inline CUresult cuStreamGetCaptureInfo(
        CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id_out, CUgraph* graph,
        const CUgraphNode** deps, const CUgraphEdgeData** edges,
        size_t* count) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuStreamGetCaptureInfo(s, status, id_out, graph, deps, edges, count)


cdef inline CUresult cuStreamUpdateCaptureDependencies(
        CUstream s, CUgraphNode* deps, const CUgraphEdgeData* edges, size_t count,
        unsigned int flags) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuStreamUpdateCaptureDependencies(s, deps, edges, count, flags)


cdef inline CUresult cuGraphAddNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps,
                                    const CUgraphEdgeData* edges, size_t count,
                                    CUgraphNodeParams* params) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuGraphAddNode(node, g, deps, edges, count, params)


cdef inline CUresult cuGraphGetEdges(CUgraph g, CUgraphNode* src, CUgraphNode* dst,
                                     CUgraphEdgeData* edges,
                                     size_t* count) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuGraphGetEdges(g, src, dst, edges, count)


cdef inline CUresult cuGraphAddDependencies(CUgraph g, const CUgraphNode* src,
                                            const CUgraphNode* dst, const CUgraphEdgeData* edges,
                                            size_t count) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuGraphAddDependencies(g, src, dst, edges, count)


cdef inline CUresult cuGraphRemoveDependencies(CUgraph g, const CUgraphNode* src,
                                               const CUgraphNode* dst,
                                               const CUgraphEdgeData* edges,
                                               size_t count) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuGraphRemoveDependencies(g, src, dst, edges, count)


cdef inline CUresult cuGraphNodeGetDependencies(CUgraphNode node, CUgraphNode* deps,
                                                CUgraphEdgeData* edges,
                                                size_t* count) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuGraphNodeGetDependencies(node, deps, edges, count)


cdef inline CUresult cuGraphNodeGetDependentNodes(
        CUgraphNode node, CUgraphNode* deps, CUgraphEdgeData* edges,
        size_t* count) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuGraphNodeGetDependentNodes(node, deps, edges, count)
