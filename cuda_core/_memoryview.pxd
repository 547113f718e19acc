from libc.stdint cimport int64_t, intptr_t
from libc.stdlib cimport malloc

from cuda_core._memory._dlpack_abi cimport DLManagedTensorVersioned
from cuda_core._strided_layout cimport (MAX_DIMS, check_span, fill_c_strides, read_extents,
                                        read_strides, span_ok)


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


# An empty view of the class a class method was called on (_memoryview.pyx).
cdef StridedMemoryView new_view(type cls)


# The dims of a view, in its own arrays (inline here: the construction path in _memoryview and
# the derived views of _view_ops both fill them).

cdef inline int _check_span(StridedMemoryView v, str who, object exc) except -1:
    if span_ok(v._shape, v._strides, v._ndim, v._itemsize if v._itemsize > 0 else 1):
        return 0  # the common case, inline; check_span raises the error
    return check_span(v._shape, v._strides, v._ndim, v._itemsize, who, exc)


cdef inline int _alloc_dims(StridedMemoryView v, Py_ssize_t ndim) except -1:
    cdef int64_t* block
    if ndim > SMV_INLINE_DIMS:
        if ndim > MAX_DIMS:  # more than any library produces: refuse rather than trust it
            raise BufferError(f"StridedMemoryView: {ndim} dimensions is more than the "
                              f"{<int>MAX_DIMS} supported")
        block = <int64_t*>malloc(2 * ndim * sizeof(int64_t))
        if block == NULL:
            raise MemoryError()
        v._shape = block
        v._strides = block + ndim
    v._ndim = <int>ndim
    return 0


cdef inline void _fill_c_strides(StridedMemoryView v) noexcept:
    fill_c_strides(v._shape, v._strides, v._ndim)


cdef inline int _set_dims(StridedMemoryView v, object shape, object strides,
                          Py_ssize_t divisor, str who, object exc) except -1:
    """Shape and strides from Python tuples; strides are divided by ``divisor`` (the itemsize
    for byte strides), which must divide them."""
    if type(shape) is not tuple:
        if not isinstance(shape, tuple):
            raise TypeError(f"{who}: shape must be a tuple of ints, not {type(shape).__name__}")
    _alloc_dims(v, len(<tuple>shape))
    read_extents(<tuple>shape, v._shape, who, exc)
    if strides is None:
        v._has_strides = False
        _fill_c_strides(v)
    else:
        read_strides(strides, <tuple>shape, v._strides, divisor, who, exc)
        v._has_strides = True
    return _check_span(v, who, ValueError if exc is ValueError else BufferError)


# A consumed DLPack 1.x tensor (already owned by ``v``): its version, flags and tensor, read
# into ``v`` (also by the C exchange table's to-object function in _view_ops).
cdef int _read_versioned(StridedMemoryView v, DLManagedTensorVersioned* vt, str who) except -1
