from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUDA_ERROR_NOT_FOUND, CUfunction, CUkernel, CUlaunchConfig,
                                     CUresult)


cdef class KernelAttributes:
    cdef object _kernel  # the Kernel, kept alive (and shown in repr)
    cdef CUkernel _handle
    cdef int _device  # -1: the current device, resolved at each read

    cdef int _set(self, cydriver.CUfunction_attribute attr, object value, str name) except -1
    cdef int _get(self, cydriver.CUfunction_attribute attr) except? -1


# The signature of cuOccupancyMaxPotentialClusterSize and cuOccupancyMaxActiveClusters.
ctypedef CUresult (*_ClusterQuery)(int* result, CUfunction func,
                                   const CUlaunchConfig* config) except ?CUDA_ERROR_NOT_FOUND nogil


cdef class KernelOccupancy:
    cdef object _kernel  # the Kernel, kept alive while the view is used
    cdef CUkernel _handle

    cdef int _cluster_query(self, _ClusterQuery query, object config, object stream,
                            str what) except? -1


cdef KernelAttributes make_attributes(object kernel, CUkernel handle, int device)
cdef KernelOccupancy make_occupancy(object kernel, CUkernel handle)
