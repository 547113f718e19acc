from cuda.bindings.cydriver cimport CUmemLocation


cdef int as_location(object loc, CUmemLocation* out, str what, bint ordinal=*) except -1
cdef object location_object(int loc_type, int loc_id)
