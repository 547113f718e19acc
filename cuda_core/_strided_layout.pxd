from libc.stdint cimport int64_t


cdef enum:
    # The most dimensions a view takes: more than any library produces.
    MAX_DIMS = 64


cdef class _StridedLayout:
    # Read-only attributes: this is a snapshot that numba-cuda reads by these names.
    cdef readonly tuple shape
    cdef readonly object strides
    cdef readonly object strides_in_bytes
    cdef readonly Py_ssize_t itemsize
    cdef readonly bint is_contiguous_c, is_contiguous_f, is_contiguous_any


# The layout arithmetic of a view, on its C arrays: ``ndim`` extents and strides in elements
# (``ndim`` <= MAX_DIMS).
cdef tuple int_tuple(const int64_t* a, int n)
cdef void fill_c_strides(const int64_t* shape, int64_t* strides, int ndim) noexcept
cdef bint zero_volume(const int64_t* shape, int ndim) noexcept
cdef bint dense_in_order(const int64_t* shape, const int64_t* strides, int ndim,
                         bint last_fastest) noexcept
cdef bint is_dense_any(const int64_t* shape, const int64_t* strides, int ndim) noexcept
cdef void byte_bounds(const int64_t* shape, const int64_t* strides, int ndim,
                      Py_ssize_t itemsize, int64_t* lo, int64_t* hi) noexcept

# In C, so that a view's modules inline it: check_span's test without a call.
cdef extern from *:
    """
    /* 1 when every element's byte offset fits in 63 bits, 0 when some |stride| * itemsize *
       (extent - 1), or their sum, overflows; no division, no undefined signed overflow. */
    static inline int cuda_core_smv_span_ok(const int64_t* shape, const int64_t* strides,
                                            int ndim, int64_t itemsize) {
        int64_t total = 0, step, a;
        int i;
        for (i = 0; i < ndim; i++)
            if (shape[i] == 0) return 1;
        for (i = 0; i < ndim; i++) {
            if (shape[i] <= 1) continue;
            a = strides[i];
            if (a == INT64_MIN) return 0;
            if (a < 0) a = -a;
            if (__builtin_mul_overflow(a, itemsize, &step) ||
                __builtin_mul_overflow(step, shape[i] - 1, &step) ||
                __builtin_add_overflow(total, step, &total)) return 0;
        }
        return 1;
    }
    """
    bint span_ok "cuda_core_smv_span_ok"(const int64_t* shape, const int64_t* strides,
                                         int ndim, int64_t itemsize) noexcept nogil

cdef int check_span(const int64_t* shape, const int64_t* strides, int ndim,
                    Py_ssize_t itemsize, str who, object exc) except -1
cdef int check_bounds(const int64_t* shape, const int64_t* strides, int ndim,
                      Py_ssize_t itemsize, size_t nbytes, str who) except -1
cdef int read_extents(tuple shape, int64_t* out, str who, object exc) except -1
cdef int read_strides(object strides, tuple shape, int64_t* out, Py_ssize_t divisor, str who,
                      object exc) except -1
