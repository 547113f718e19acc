from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUlaunchAttribute, CUlaunchConfig, CUstream


cdef class LaunchConfig:
    # Normalised at construction and assignment; read by the launcher without a Python call.
    cdef unsigned int _grid[3]      # in clusters when _has_cluster, else in blocks
    cdef unsigned int _block[3]
    cdef unsigned int _cluster[3]
    cdef bint _has_cluster
    cdef unsigned int _shmem_size
    cdef bint _is_cooperative
    cdef bint _pss
    cdef bint _frozen               # built: __init__ again is refused (assign fields instead)
    cdef object __weakref__

    # ``where`` names the config in messages: "LaunchConfig", or "<query>(): config".
    cdef int _setup(self, grid, cluster, block, shmem_size, is_cooperative,
                    programmatic_stream_serialization, cooperative_launch,
                    str where) except -1


# ``config`` as a LaunchConfig: itself, or one built from an object with grid, block, cluster
# and shmem_size attributes (the occupancy queries take either); errors name ``what``.
cdef LaunchConfig as_launch_config(object config, str what)


cdef enum:
    # The most attributes a LaunchConfig sets (cluster, cooperative, programmatic stream
    # serialization): the length of the array fill_launch_config fills.
    LAUNCH_ATTRS = 3


cdef inline void fill_launch_config(LaunchConfig cfg, CUstream stream, CUlaunchConfig* out,
                                    CUlaunchAttribute* attrs) noexcept:
    """THE translation of a LaunchConfig into the driver's ``CUlaunchConfig`` for ``stream``,
    with ``attrs`` (LAUNCH_ATTRS entries, owned by the caller) holding its attributes: for
    ``cuLaunchKernelEx`` and the cluster occupancy queries alike. Fields only, no Python: the
    config was checked when it was built. With a cluster, the config's grid counts clusters
    and the driver's counts blocks (the product fits: checked at construction)."""
    out.gridDimX = cfg._grid[0] * cfg._cluster[0]
    out.gridDimY = cfg._grid[1] * cfg._cluster[1]
    out.gridDimZ = cfg._grid[2] * cfg._cluster[2]
    out.blockDimX = cfg._block[0]
    out.blockDimY = cfg._block[1]
    out.blockDimZ = cfg._block[2]
    out.sharedMemBytes = cfg._shmem_size
    out.hStream = stream
    out.attrs = attrs
    out.numAttrs = 0
    if cfg._has_cluster:
        attrs[out.numAttrs].id = cydriver.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attrs[out.numAttrs].value.clusterDim.x = cfg._cluster[0]
        attrs[out.numAttrs].value.clusterDim.y = cfg._cluster[1]
        attrs[out.numAttrs].value.clusterDim.z = cfg._cluster[2]
        out.numAttrs += 1
    if cfg._is_cooperative:
        attrs[out.numAttrs].id = cydriver.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
        attrs[out.numAttrs].value.cooperative = 1
        out.numAttrs += 1
    if cfg._pss:
        attrs[out.numAttrs].id = cydriver.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attrs[out.numAttrs].value.programmaticStreamSerializationAllowed = 1
        out.numAttrs += 1
