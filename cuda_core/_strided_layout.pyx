"""The layout of a strided view: ``_StridedLayout`` (the snapshot ``StridedMemoryView._layout``
returns, which numba-cuda reads) and the arithmetic on a view's C arrays of extents and strides
(in elements): C strides, contiguity in C, Fortran or any order, the bytes the elements span,
and the check that refuses a span past 2**63 bytes.

The functions take the arrays, not the view, so that they depend on nothing of ours; ``ndim``
is at most ``MAX_DIMS``, which the view enforces when it allocates its arrays.
"""

from cpython.long cimport PyLong_AsLongLong
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t, uint64_t

__all__ = []


cdef class _StridedLayout:
    """The layout of a view (``StridedMemoryView._layout``): a snapshot, built per access.

    Its read-only fields (``_strided_layout.pxd``): ``shape``; ``strides`` in elements, None
    when C-contiguous without explicit strides; ``strides_in_bytes``, None when the view has
    no explicit strides; ``itemsize``; ``is_contiguous_c``, ``is_contiguous_f`` and
    ``is_contiguous_any`` (dense in some order of the dimensions: C, F, or a permutation).
    """

    def __init__(self, *args, **kwargs):
        raise TypeError("_StridedLayout is read from StridedMemoryView._layout")

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return (f"_StridedLayout(shape={self.shape}, strides={self.strides}, "
                f"itemsize={self.itemsize})")


cdef tuple int_tuple(const int64_t* a, int n):
    cdef tuple t = PyTuple_New(n)
    cdef int i
    # v must be an object: an inferred int64_t would make a temporary int for Py_INCREF and
    # another for PyTuple_SET_ITEM, and the tuple would hold one freed after the call.
    cdef object v
    for i in range(n):
        v = a[i]
        Py_INCREF(v)
        PyTuple_SET_ITEM(t, i, v)
    return t


cdef void fill_c_strides(const int64_t* shape, int64_t* strides, int ndim) noexcept:
    # Unsigned: a product past 2**63 wraps (defined) and the span check then refuses it.
    cdef uint64_t acc = 1
    cdef int i
    for i in range(ndim - 1, -1, -1):
        strides[i] = <int64_t>acc
        acc *= <uint64_t>(shape[i] if shape[i] > 0 else 1)


cdef bint zero_volume(const int64_t* shape, int ndim) noexcept:
    cdef int i
    for i in range(ndim):
        if shape[i] == 0:
            return True
    return False


cdef bint dense_in_order(const int64_t* shape, const int64_t* strides, int ndim,
                         bint last_fastest) noexcept:
    """Dense with the last dimension fastest (C order) or the first (Fortran order); extent-1
    dimensions do not count, and an empty view is dense."""
    cdef int64_t want = 1
    cdef int k, i
    if zero_volume(shape, ndim):
        return True
    for k in range(ndim):
        i = ndim - 1 - k if last_fastest else k
        if shape[i] != 1:
            if strides[i] != want:
                return False
            want *= shape[i]
    return True


cdef bint is_dense_any(const int64_t* shape, const int64_t* strides, int ndim) noexcept:
    """Dense in some order: the dimensions (extent > 1), sorted by stride, are C-contiguous."""
    cdef int order[MAX_DIMS]
    cdef int n = 0, i, j, k
    cdef int64_t want = 1
    if zero_volume(shape, ndim):
        return True
    for i in range(ndim):  # insertion sort of the dims by stride; ndim <= MAX_DIMS
        if shape[i] == 1:
            continue
        if strides[i] <= 0:
            return False
        j = n
        while j > 0 and strides[order[j - 1]] > strides[i]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
        n += 1
    for k in range(n):
        if strides[order[k]] != want:
            return False
        want *= shape[order[k]]
    return True


cdef void byte_bounds(const int64_t* shape, const int64_t* strides, int ndim,
                      Py_ssize_t itemsize, int64_t* lo, int64_t* hi) noexcept:
    """The bytes the view's elements span, relative to ptr: [lo, hi); empty for no elements."""
    cdef int64_t a = 0, b = 0
    cdef int i
    if zero_volume(shape, ndim):
        lo[0] = 0
        hi[0] = 0
        return
    for i in range(ndim):
        if strides[i] > 0:
            b += (shape[i] - 1) * strides[i]
        else:
            a += (shape[i] - 1) * strides[i]
    lo[0] = a * itemsize
    hi[0] = (b + 1) * itemsize


cdef int check_span(const int64_t* shape, const int64_t* strides, int ndim,
                    Py_ssize_t itemsize, str who, object exc) except -1:
    """Refuse strides whose byte span does not fit in 63 bits: no allocation is that large and
    every consumer's address arithmetic would wrap. Such strides are a producer's error (an
    unsigned division of a negative byte stride, say), not a layout."""
    if span_ok(shape, strides, ndim, itemsize if itemsize > 0 else 1):
        return 0
    raise exc(f"{who}: the layout (shape {int_tuple(shape, ndim)}, strides "
              f"{int_tuple(strides, ndim)}, {itemsize}-byte elements) spans more "
              f"than 2**63 bytes")


cdef int check_bounds(const int64_t* shape, const int64_t* strides, int ndim,
                      Py_ssize_t itemsize, size_t nbytes, str who) except -1:
    """Refuse elements outside the ``nbytes`` bytes of a buffer."""
    cdef int64_t lo, hi
    byte_bounds(shape, strides, ndim, itemsize, &lo, &hi)
    if hi > lo and (lo < 0 or <uint64_t>hi > nbytes):
        raise ValueError(f"{who}: the layout spans bytes [{lo}, {hi}) but the buffer holds "
                         f"{nbytes}")
    return 0


# -- extents and strides from Python tuples ------------------------------------------------------

cdef inline int64_t _dim_int(object item, object dims, str who, str what) except? -1:
    if type(item) is not int:
        if isinstance(item, bool) or not isinstance(item, int):
            raise TypeError(f"{who}: {what} must be a tuple of ints, got "
                            f"{type(item).__name__} in {dims!r}")
    return PyLong_AsLongLong(item)


cdef int read_extents(tuple shape, int64_t* out, str who, object exc) except -1:
    """``shape``'s items into ``out`` (``len(shape)`` slots); ``exc`` for a negative one."""
    cdef Py_ssize_t i
    cdef int64_t x
    for i in range(len(shape)):
        x = _dim_int(shape[i], shape, who, "shape")
        if x < 0:
            raise exc(f"{who}: extents must be non-negative, got {shape!r}")
        out[i] = x
    return 0


cdef int read_strides(object strides, tuple shape, int64_t* out, Py_ssize_t divisor, str who,
                      object exc) except -1:
    """``strides``' items, divided by ``divisor`` (the itemsize for byte strides, which must
    divide them), into ``out`` (``len(shape)`` slots); ``exc`` for a length other than
    ``shape``'s."""
    cdef Py_ssize_t i
    cdef int64_t x
    if not isinstance(strides, tuple):
        raise TypeError(f"{who}: strides must be a tuple of ints or None, not "
                        f"{type(strides).__name__}")
    if len(<tuple>strides) != len(shape):
        raise exc(f"{who}: strides {strides!r} and shape {shape!r} differ in length")
    for i in range(len(shape)):
        x = _dim_int((<tuple>strides)[i], strides, who, "strides")
        if divisor != 1 and x % divisor:
            raise BufferError(f"{who}: stride {x} bytes is not a whole number of "
                              f"{divisor}-byte elements")
        out[i] = x // divisor
    return 0
