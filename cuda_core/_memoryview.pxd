from libc.stdint cimport int64_t, intptr_t


cdef enum:
    # Up to this many dimensions, shape and strides live inside the view (no malloc).
    SMV_INLINE_DIMS = 8


cdef class StridedMemoryView:
    # The launcher reads _ptr (as a pointer argument) and nothing else; it comes first.
    cdef intptr_t _ptr
    cdef int _device_id
    cdef int _dl_type            # DLPack device type: kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged
    cdef bint _device_accessible
    cdef bint _readonly
    cdef bint _has_strides       # False: C-contiguous, strides reported as None
    cdef int _ndim
    cdef Py_ssize_t _itemsize
    cdef object _dtype           # a numpy.dtype, or None (from_buffer with an itemsize only)
    cdef object _exporting_obj
    cdef object _keep            # what keeps the memory alive besides the exporter: a parent view
    cdef object _buffer          # from_buffer's Buffer, else None
    cdef void* _managed          # the consumed DLPack tensor whose deleter runs at dealloc
    cdef bint _versioned
    cdef int64_t* _shape         # _ndim extents
    cdef int64_t* _strides       # _ndim strides in elements (filled even when not _has_strides)
    cdef int64_t _inline[2 * SMV_INLINE_DIMS]
    cdef object __weakref__
