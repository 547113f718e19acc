# The CUDA 12 definitions of cuda_core/_cuda_compat.pxd, over cuda-bindings 12.9 (the CUDA 13
# names and signatures; see there). The values of the constants CUDA 12.9's cuda.h lacks are
# cuda.h 13's; the two stand-in structs have the layout of cuda.h 13's.

cdef extern from *:
    """
    typedef struct cuda_core_CUcheckpointGpuPair { CUuuid oldUuid; CUuuid newUuid; }
        cuda_core_CUcheckpointGpuPair;
    typedef struct cuda_core_CU_DEV_SM_RESOURCE_GROUP_PARAMS {
        unsigned int smCount, coscheduledSmCount, preferredCoscheduledSmCount, flags,
                     localityDomainId, reserved[11];
    } cuda_core_CU_DEV_SM_RESOURCE_GROUP_PARAMS;
    typedef struct cuda_core_CUdevWorkqueueConfigResource {
        CUdevice device; unsigned int wqConcurrencyLimit; unsigned int sharingScope;
    } cuda_core_CUdevWorkqueueConfigResource;
    """
    ctypedef struct CUcheckpointGpuPair "cuda_core_CUcheckpointGpuPair":
        cydriver.CUuuid oldUuid
        cydriver.CUuuid newUuid
    ctypedef struct CU_DEV_SM_RESOURCE_GROUP_PARAMS "cuda_core_CU_DEV_SM_RESOURCE_GROUP_PARAMS":
        unsigned int smCount
        unsigned int coscheduledSmCount
        unsigned int preferredCoscheduledSmCount
        unsigned int flags
    ctypedef struct CUdevWorkqueueConfigResource "cuda_core_CUdevWorkqueueConfigResource":
        CUdevice device
        unsigned int wqConcurrencyLimit
        unsigned int sharingScope

    CUdevice_attribute CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED "((CUdevice_attribute)144)"
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED "((CUdevice_attribute)145)"
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED "((CUdevice_attribute)146)"
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED "((CUdevice_attribute)147)"
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_ATOMIC_REDUCTION_SUPPORTED "((CUdevice_attribute)148)"
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_D3D12_CIG_STREAMS_SUPPORTED "((CUdevice_attribute)151)"
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_DMA_BUF_MMAP_SUPPORTED "((CUdevice_attribute)152)"
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_UNICAST_SUPPORTED "((CUdevice_attribute)153)"
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_MULTICAST_SUPPORTED "((CUdevice_attribute)154)"
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_COUNTED_OPS_SUPPORTED "((CUdevice_attribute)155)"
    CUdevice_attribute CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_UNICAST_ACCESS_ON_OWNER_DEVICE_SUPPORTED "((CUdevice_attribute)156)"
    CUmemAllocationType CU_MEM_ALLOCATION_TYPE_MANAGED "((CUmemAllocationType)0x2)"
    # CUDA 12 calls the 0 location type CU_MEM_LOCATION_TYPE_INVALID; CUDA 13 names it NONE too.
    CUmemLocationType CU_MEM_LOCATION_TYPE_NONE "CU_MEM_LOCATION_TYPE_INVALID"
    unsigned int CU_DEV_SM_RESOURCE_GROUP_BACKFILL "0x1u"
    cydriver.CUdevResourceType CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG "((CUdevResourceType)1000)"
    unsigned int CU_WORKQUEUE_SCOPE_DEVICE_CTX "0u"
    unsigned int CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED "1u"


cdef inline CUdevWorkqueueConfigResource* wq_config(CUdevResource* r) noexcept nogil:
    # Never read in this build: only DeviceResources.workqueue() fills one, and it refuses
    # (require_build). The stand-in lies where CUDA 13 puts it, in the union that starts at .sm.
    return <CUdevWorkqueueConfigResource*>&r.sm


# CUDA 12's CUdevSmResource declares smCount only. A CUDA 13 driver writes the fields CUDA 13
# added after it (minSmPartitionSize, smCoscheduledAlignment, flags: unsigned ints, in that
# order) into the union that starts at .sm, which CUDA 12's header pads to 48 bytes; a CUDA 12
# driver leaves them as they were (zeroed: every CUdevResource here starts zeroed).
cdef inline unsigned int _sm_field(const CUdevResource* r, int i) noexcept nogil:
    return (<const unsigned int*>&r.sm)[i]  # i in 1..3: inside the 48-byte union


cdef inline unsigned int sm_min_partition_size(const CUdevResource* r) noexcept nogil:
    return _sm_field(r, 1)


cdef inline unsigned int sm_coscheduled_alignment(const CUdevResource* r) noexcept nogil:
    return _sm_field(r, 2)


cdef inline unsigned int sm_flags(const CUdevResource* r) noexcept nogil:
    return _sm_field(r, 3)


cdef inline int set_restore_pairs(CUcheckpointRestoreArgs* args, CUcheckpointGpuPair* pairs,
                                  unsigned int n) except -1:
    if n:
        require_build(13000, "Process.restore() with gpu_mapping")
    return 0


cdef inline CUresult _not_in_build(str name) except ?CUDA_ERROR_NOT_FOUND:
    # As cuda.bindings reports an entry point that the driver lacks.
    raise RuntimeError(f'Function "{name}" not found: this cuda_core was built for CUDA 12 '
                       f'(cuda-bindings 12.x), which has no {name}')


cdef inline CUresult cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise advice,
                                 CUmemLocation loc) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuMemAdvise_v2(p, n, advice, loc)


cdef inline CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUmemLocation loc,
                                        unsigned int flags,
                                        CUstream s) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuMemPrefetchAsync_v2(p, n, loc, flags, s)


cdef inline CUresult cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                        size_t count, CUmemcpyAttributes* attrs,
                                        size_t* attrs_idxs, size_t num_attrs,
                                        CUstream s) except ?CUDA_ERROR_NOT_FOUND nogil:
    # CUDA 12.8 and 12.9 report the failed copy's index; CUDA 13 dropped it.
    cdef size_t fail_idx = 0
    return cydriver.cuMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, attrs_idxs, num_attrs,
                                       &fail_idx, s)


cdef inline CUresult cuMemDiscardBatchAsync(CUdeviceptr* p, size_t* sizes, size_t count,
                                            unsigned long long flags,
                                            CUstream s) except ?CUDA_ERROR_NOT_FOUND nogil:
    with gil:
        return _not_in_build("cuMemDiscardBatchAsync")


cdef inline CUresult cuMemDiscardAndPrefetchBatchAsync(
        CUdeviceptr* p, size_t* sizes, size_t count, CUmemLocation* locs, size_t* loc_idxs,
        size_t num_locs, unsigned long long flags,
        CUstream s) except ?CUDA_ERROR_NOT_FOUND nogil:
    with gil:
        return _not_in_build("cuMemDiscardAndPrefetchBatchAsync")


cdef inline CUresult cuMemPrefetchBatchAsync(
        CUdeviceptr* p, size_t* sizes, size_t count, CUmemLocation* locs, size_t* loc_idxs,
        size_t num_locs, unsigned long long flags,
        CUstream s) except ?CUDA_ERROR_NOT_FOUND nogil:
    with gil:
        return _not_in_build("cuMemPrefetchBatchAsync")


cdef inline CUresult cuMemcpyWithAttributesAsync(
        CUdeviceptr dst, CUdeviceptr src, size_t n, CUmemcpyAttributes* attr,
        CUstream s) except ?CUDA_ERROR_NOT_FOUND nogil:
    with gil:
        return _not_in_build("cuMemcpyWithAttributesAsync")


cdef inline CUresult cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* loc,
                                     CUmemAllocationType kind) except ?CUDA_ERROR_NOT_FOUND nogil:
    with gil:
        return _not_in_build("cuMemGetMemPool")


cdef inline CUresult cuDevSmResourceSplit(
        CUdevResource* result, unsigned int n, const CUdevResource* input,
        CUdevResource* remainder, unsigned int flags,
        CU_DEV_SM_RESOURCE_GROUP_PARAMS* params) except ?CUDA_ERROR_NOT_FOUND nogil:
    with gil:
        return _not_in_build("cuDevSmResourceSplit")


cdef inline CUresult cuStreamGetCaptureInfo(
        CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id_out, CUgraph* graph,
        const CUgraphNode** deps, const CUgraphEdgeData** edges,
        size_t* count) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuStreamGetCaptureInfo_v3(s, status, id_out, graph, deps, edges, count)


cdef inline CUresult cuStreamUpdateCaptureDependencies(
        CUstream s, CUgraphNode* deps, const CUgraphEdgeData* edges, size_t count,
        unsigned int flags) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuStreamUpdateCaptureDependencies_v2(s, deps, edges, count, flags)


cdef inline CUresult cuGraphAddNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps,
                                    const CUgraphEdgeData* edges, size_t count,
                                    CUgraphNodeParams* params) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuGraphAddNode_v2(node, g, deps, edges, count, params)


cdef inline CUresult cuGraphGetEdges(CUgraph g, CUgraphNode* src, CUgraphNode* dst,
                                     CUgraphEdgeData* edges,
                                     size_t* count) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuGraphGetEdges_v2(g, src, dst, edges, count)


cdef inline CUresult cuGraphAddDependencies(CUgraph g, const CUgraphNode* src,
                                            const CUgraphNode* dst, const CUgraphEdgeData* edges,
                                            size_t count) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuGraphAddDependencies_v2(g, src, dst, edges, count)


cdef inline CUresult cuGraphRemoveDependencies(CUgraph g, const CUgraphNode* src,
                                               const CUgraphNode* dst,
                                               const CUgraphEdgeData* edges,
                                               size_t count) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuGraphRemoveDependencies_v2(g, src, dst, edges, count)


cdef inline CUresult cuGraphNodeGetDependencies(CUgraphNode node, CUgraphNode* deps,
                                                CUgraphEdgeData* edges,
                                                size_t* count) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuGraphNodeGetDependencies_v2(node, deps, edges, count)


cdef inline CUresult cuGraphNodeGetDependentNodes(
        CUgraphNode node, CUgraphNode* deps, CUgraphEdgeData* edges,
        size_t* count) except ?CUDA_ERROR_NOT_FOUND nogil:
    return cydriver.cuGraphNodeGetDependentNodes_v2(node, deps, edges, count)
