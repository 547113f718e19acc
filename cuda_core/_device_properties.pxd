from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUdevice


cdef class _DeviceAttributes:
    cdef CUdevice _dev
    cdef int _values[256]          # by attribute number; valid where _have is set
    cdef unsigned char _have[256]

    cdef int _value(self, cydriver.CUdevice_attribute attr) except? -2
    cdef object _get(self, cydriver.CUdevice_attribute attr)
    cdef object _get_bool(self, cydriver.CUdevice_attribute attr)


cdef class DeviceProperties(_DeviceAttributes):
    pass


# The properties of one device, with an empty cache.
cdef DeviceProperties new_properties(int device_id)
