from libc.stdint cimport int64_t, intptr_t


# One side of a view copy, read from a StridedMemoryView's fields (this module does not cimport
# the view: the view's module cimports it).
cdef struct CopySide:
    intptr_t ptr
    int ndim
    const int64_t* shape
    const int64_t* strides       # in elements, filled for every dimension
    Py_ssize_t itemsize
    int dl_type                  # the view's DLPack device type
    int device_id
    bint device_accessible       # False: pageable host memory
    bint readonly


# StridedMemoryView.copy_from/copy_to: ``src``'s elements into ``dst``'s, element by element
# in index order, whatever either layout.
cdef int copy_views(CopySide* dst, CopySide* src, object dst_dtype, object src_dtype,
                    object stream, object allocator, object blocking, str who) except -1
