from cuda.bindings.cydriver cimport CUkernel


cdef class KernelOccupancy:
    cdef object _kernel  # the Kernel, kept alive while the view is used
    cdef CUkernel _handle


cdef KernelOccupancy make_occupancy(object kernel, CUkernel handle)
