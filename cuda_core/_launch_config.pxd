cdef class LaunchConfig:
    # Normalised at construction; read by the launcher without a Python call.
    cdef unsigned int _grid[3]      # in clusters when _has_cluster, else in blocks
    cdef unsigned int _block[3]
    cdef unsigned int _cluster[3]
    cdef bint _has_cluster
    cdef unsigned int _shmem_size
    cdef bint _is_cooperative
    cdef bint _pss
    cdef bint _frozen
    cdef object __weakref__

    cdef int _setup(self, grid, cluster, block, shmem_size, is_cooperative,
                    programmatic_stream_serialization, cooperative_launch) except -1
