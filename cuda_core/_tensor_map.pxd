from cuda.bindings cimport cydriver


cdef class TensorMapDescriptor:
    # The launcher reads _map (the 128 bytes it passes by value) and nothing else; it comes
    # first. It points into _raw, at the first 64-byte aligned address there.
    cdef cydriver.CUtensorMap* _map
    cdef unsigned char _raw[192]
    cdef int _device_id
    cdef int _interleave
    cdef tuple _shape
    cdef object _view          # the view mapped: keeps the memory's owner alive
