from cuda.bindings.cydriver cimport CUmemLocation


cdef int as_location(object loc, CUmemLocation* out, str what) except -1
cdef object location_object(int loc_type, int loc_id)
