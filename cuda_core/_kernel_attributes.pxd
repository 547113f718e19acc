from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUkernel


cdef class KernelAttributes:
    cdef object _kernel  # the Kernel, kept alive (and shown in repr)
    cdef CUkernel _handle
    cdef int _device  # -1: the current device, resolved at each read

    cdef int _set(self, cydriver.CUfunction_attribute attr, object value, str name) except -1
    cdef int _get(self, cydriver.CUfunction_attribute attr) except? -1


cdef KernelAttributes make_attributes(object kernel, CUkernel handle, int device)
