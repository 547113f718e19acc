"""``StridedMemoryView.copy_from`` and ``copy_to``: the elements of one view copied into
another of the same shape and element type, each element to the element of the same index,
whatever the two layouts.

How a copy is made:

* The two layouts are walked together (``_plan``). Dimensions of extent 1 are dropped; a
  dimension the destination walks backwards is walked forwards by both sides (a copy does not
  depend on the order it visits elements in); the dimensions are ordered by the destination's
  strides, outermost first; neighbours that are one dimension in both layouts are merged.
* What is left is a *run* (the bytes both sides hold contiguously: the innermost dimension when
  its stride is one element in both, else one element), *rows* of runs at a fixed pitch in
  each side (one 2D copy), and the outer dimensions, walked in C, one 2D copy for each of their
  indices. A C-contiguous pair is one copy; a transpose is one 2D copy per row of it.
* A row dimension is one whose pitch in both sides is at least the run and at most
  ``_MAX_PITCH`` (what the driver's 2D copies take); otherwise it is walked as an outer one.
* Copies that touch device-accessible memory are ``cuMemcpy2DAsync`` (``cuMemcpyAsync`` for a
  single row) on the caller's stream, in the stream's context; pageable host memory is named as
  host memory, everything else by its unified address. Between two pageable host views the
  same plan is run with ``memcpy``, at once, GIL released.

What is refused, before anything is copied: another shape or element type, a read-only
destination, a destination whose elements may overlap (stride 0, or strides interleaving so
that two indices could share bytes), source and destination bytes that overlap (an in-place
copy in pieces would read what it already wrote), and two different devices' memory.
"""

from libc.stdint cimport int64_t, intptr_t, uintptr_t
from libc.string cimport memcpy, memset

from cuda.bindings cimport cydriver

from cuda_core._context cimport ContextGuard, enter_context, exit_context
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._memory._alloc cimport stream_context, sync_stream
from cuda_core._memory._memory_resource cimport MemoryResource
from cuda_core._memory._dlpack_abi cimport kDLCUDA
from cuda_core._stream cimport Stream, optional_stream, require_stream
from cuda_core._strided_layout cimport MAX_DIMS, byte_bounds, int_tuple

__all__ = []

# The largest pitch a 2D copy takes (CU_DEVICE_ATTRIBUTE_MAX_PITCH is 2**31 - 1 on every GPU
# the driver supports); a row dimension of a larger pitch is walked as an outer dimension.
cdef int64_t _MAX_PITCH = 2147483647


cdef struct Plan:
    intptr_t dst                 # the first bytes of the walk
    intptr_t src
    int nouter                   # outer dimensions, outermost first
    int64_t extent[MAX_DIMS]
    int64_t dstep[MAX_DIMS]      # bytes
    int64_t sstep[MAX_DIMS]
    size_t run                   # bytes of each row
    size_t rows
    size_t dpitch
    size_t spitch


cdef int _dims(CopySide* d, CopySide* s, int64_t* ext, int64_t* ds, int64_t* ss,
               intptr_t* dptr, intptr_t* sptr) noexcept:
    """The dimensions that a walk of ``d`` and ``s`` (same shape) visits: extents and strides in
    elements, outermost first (descending ``d`` strides; insertion sort, stable), those of
    extent 1 dropped. A dimension that ``d`` walks backwards is walked forwards by both sides
    from its other end (``dptr`` and ``sptr`` move there). -1 when there are no elements."""
    cdef int64_t isz = d.itemsize
    cdef int64_t e, a, b
    cdef int i, j, k = 0
    for i in range(d.ndim):
        e = d.shape[i]
        if e == 0:
            return -1
        if e == 1:
            continue
        a = d.strides[i]
        b = s.strides[i]
        if a < 0:
            dptr[0] += (e - 1) * a * isz
            sptr[0] += (e - 1) * b * isz
            a = -a
            b = -b
        ext[k] = e
        ds[k] = a
        ss[k] = b
        k += 1
    for i in range(1, k):
        j = i
        while j > 0 and ds[j - 1] < ds[j]:
            ext[j - 1], ext[j] = ext[j], ext[j - 1]
            ds[j - 1], ds[j] = ds[j], ds[j - 1]
            ss[j - 1], ss[j] = ss[j], ss[j - 1]
            j -= 1
    return k


cdef bint _plan(CopySide* d, CopySide* s, Plan* p) noexcept:
    """The walk of a copy of ``s`` into ``d`` (same shape, non-overlapping destination); False
    when there are no elements."""
    cdef int64_t ext[MAX_DIMS]
    cdef int64_t ds[MAX_DIMS]
    cdef int64_t ss[MAX_DIMS]
    cdef int64_t isz = d.itemsize
    cdef int64_t a, b
    cdef int i, k, m
    p.dst = d.ptr
    p.src = s.ptr
    k = _dims(d, s, ext, ds, ss, &p.dst, &p.src)
    if k < 0:
        return False
    # Merge neighbours that are one dimension in both layouts.
    m = 0
    for i in range(k):
        if m > 0 and ds[m - 1] == ds[i] * ext[i] and ss[m - 1] == ss[i] * ext[i]:
            ext[m - 1] *= ext[i]
            ds[m - 1] = ds[i]
            ss[m - 1] = ss[i]
        else:
            ext[m] = ext[i]
            ds[m] = ds[i]
            ss[m] = ss[i]
            m += 1
    k = m
    p.run = <size_t>isz
    if k > 0 and ds[k - 1] == 1 and ss[k - 1] == 1:
        k -= 1
        p.run = <size_t>(ext[k] * isz)
    p.rows = 1
    p.dpitch = p.run
    p.spitch = p.run
    if k > 0:
        a = ds[k - 1] * isz
        b = ss[k - 1] * isz
        if <int64_t>p.run <= a <= _MAX_PITCH and <int64_t>p.run <= b <= _MAX_PITCH:
            k -= 1
            p.rows = <size_t>ext[k]
            p.dpitch = <size_t>a
            p.spitch = <size_t>b
    p.nouter = k
    for i in range(k):
        p.extent[i] = ext[i]
        p.dstep[i] = ds[i] * isz
        p.sstep[i] = ss[i] * isz
    return True


cdef inline bint _next(Plan* p, int64_t* idx, intptr_t* doff, intptr_t* soff) noexcept nogil:
    """Step the outer index (an odometer, innermost fastest) and the two offsets; False after
    the last."""
    cdef int i = p.nouter - 1
    while i >= 0:
        idx[i] += 1
        doff[0] += p.dstep[i]
        soff[0] += p.sstep[i]
        if idx[i] < p.extent[i]:
            return True
        doff[0] -= p.dstep[i] * p.extent[i]
        soff[0] -= p.sstep[i] * p.extent[i]
        idx[i] = 0
        i -= 1
    return False


cdef void _copy_host(Plan* p) noexcept nogil:
    cdef int64_t idx[MAX_DIMS]
    cdef intptr_t doff = 0, soff = 0
    cdef size_t r
    memset(idx, 0, sizeof(idx))
    while True:
        for r in range(p.rows):
            memcpy(<void*>(p.dst + doff + <intptr_t>(r * p.dpitch)),
                   <const void*>(p.src + soff + <intptr_t>(r * p.spitch)), p.run)
        if not _next(p, idx, &doff, &soff):
            return


cdef int _copy_device(Plan* p, bint dst_host, bint src_host, Stream s) except -1:
    cdef int64_t idx[MAX_DIMS]
    cdef intptr_t doff = 0, soff = 0
    cdef cydriver.CUDA_MEMCPY2D c
    cdef cydriver.CUresult err = cydriver.CUDA_SUCCESS
    cdef cydriver.CUcontext ctx = stream_context(s)
    cdef cydriver.CUstream h = s._handle
    cdef ContextGuard guard
    memset(idx, 0, sizeof(idx))
    memset(&c, 0, sizeof(c))
    c.srcMemoryType = cydriver.CU_MEMORYTYPE_HOST if src_host else cydriver.CU_MEMORYTYPE_UNIFIED
    c.dstMemoryType = cydriver.CU_MEMORYTYPE_HOST if dst_host else cydriver.CU_MEMORYTYPE_UNIFIED
    c.srcPitch = p.spitch
    c.dstPitch = p.dpitch
    c.WidthInBytes = p.run
    c.Height = p.rows
    with nogil:
        enter_context(guard, ctx)
        while True:
            if p.rows == 1:
                # One contiguous range: no pitch, so no pitch limit on its length.
                err = cydriver.cuMemcpyAsync(<cydriver.CUdeviceptr>(p.dst + doff),
                                             <cydriver.CUdeviceptr>(p.src + soff), p.run, h)
            else:
                c.srcHost = <void*>(p.src + soff)
                c.srcDevice = <cydriver.CUdeviceptr>(p.src + soff)
                c.dstHost = <void*>(p.dst + doff)
                c.dstDevice = <cydriver.CUdeviceptr>(p.dst + doff)
                err = cydriver.cuMemcpy2DAsync(&c, h)
            if err != cydriver.CUDA_SUCCESS or not _next(p, idx, &doff, &soff):
                break
        exit_context(guard)
    return HANDLE_RETURN(err)


cdef bint _may_overlap(CopySide* d) noexcept:
    """Whether two indices of the destination may share bytes: some dimension's stride is not
    past everything the dimensions of smaller strides span (a sufficient test; every layout
    that slicing and transposing make passes it)."""
    cdef int64_t ex[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    cdef int64_t unused[MAX_DIMS]
    cdef intptr_t p0 = 0, p1 = 0
    cdef int64_t span = 0
    cdef int i
    # Ascending strides: the walk's dimensions from the innermost out (in which order equal
    # strides come does not matter: the second of two, of extent 2 or more, is within the span).
    for i in range(_dims(d, d, ex, st, unused, &p0, &p1) - 1, -1, -1):
        if st[i] <= span:
            return True
        span += st[i] * (ex[i] - 1)
    return False


cdef bint _agree(const int64_t* a, const int64_t* b, int n, const int64_t* shape) noexcept:
    """Whether ``a`` and ``b`` are equal in each of ``n`` dimensions (with ``shape``, each of
    extent above 1)."""
    cdef int i
    for i in range(n):
        if a[i] != b[i] and (shape == NULL or shape[i] > 1):
            return False
    return True


cdef int copy_views(CopySide* dst, CopySide* src, object dst_dtype, object src_dtype,
                    object stream, object allocator, object blocking, str who) except -1:
    cdef Plan plan
    cdef Stream s
    cdef int64_t dlo, dhi, slo, shi
    cdef bint host_side
    if blocking is not None and type(blocking) is not bool:
        raise TypeError(f"Argument 'blocking' has incorrect type (expected bool, got "
                        f"{type(blocking).__name__})")
    if allocator is not None and not isinstance(allocator, MemoryResource):
        raise TypeError(f"{who}: allocator must be a MemoryResource or None, not "
                        f"{type(allocator).__name__}")
    if dst.ndim != src.ndim or not _agree(dst.shape, src.shape, dst.ndim, NULL):
        raise ValueError(f"{who}: shapes differ: the destination is "
                         f"{int_tuple(dst.shape, dst.ndim)}, the source "
                         f"{int_tuple(src.shape, src.ndim)}")
    if dst.itemsize != src.itemsize or (dst_dtype is not None and src_dtype is not None
                                        and dst_dtype != src_dtype):
        raise ValueError(f"{who}: element types differ: the destination's is "
                         f"{_element(dst_dtype, dst.itemsize)}, the source's "
                         f"{_element(src_dtype, src.itemsize)}; a copy does not convert")
    if dst.readonly:
        raise ValueError(f"{who}: the destination view is read-only")
    if _may_overlap(dst):
        raise ValueError(f"{who}: the destination's elements may overlap (strides "
                         f"{int_tuple(dst.strides, dst.ndim)} for shape "
                         f"{int_tuple(dst.shape, dst.ndim)}); each element needs its own bytes")
    host_side = not dst.device_accessible or not src.device_accessible
    if not dst.device_accessible and not src.device_accessible:
        s = optional_stream(stream, who)
    else:
        s = require_stream(stream, who)
        if (dst.dl_type == kDLCUDA and src.dl_type == kDLCUDA
                and dst.device_id != src.device_id):
            raise ValueError(f"{who}: the views are on devices {src.device_id} (source) and "
                             f"{dst.device_id} (destination); a view copy stays on one device")
    byte_bounds(dst.shape, dst.strides, dst.ndim, dst.itemsize, &dlo, &dhi)
    byte_bounds(src.shape, src.strides, src.ndim, src.itemsize, &slo, &shi)
    if dhi == dlo or (dst.ptr == src.ptr
                      and _agree(dst.strides, src.strides, dst.ndim, dst.shape)):
        pass  # nothing to copy (no bytes, or the same elements at the same bytes)
    elif (<int64_t>dst.ptr + dlo < <int64_t>src.ptr + shi
          and <int64_t>src.ptr + slo < <int64_t>dst.ptr + dhi):
        raise ValueError(f"{who}: the source and destination views overlap in memory")
    elif _plan(dst, src, &plan):
        if s is None or (not dst.device_accessible and not src.device_accessible):
            with nogil:
                _copy_host(&plan)
        else:
            _copy_device(&plan, not dst.device_accessible, not src.device_accessible, s)
    if s is not None and (blocking is True or (blocking is None and host_side
                                               and (dst.device_accessible
                                                    or src.device_accessible))):
        sync_stream(s)
    return 0


cdef str _element(object dtype, Py_ssize_t itemsize):
    if dtype is None:
        return f"{itemsize}-byte elements (no dtype)"
    return f"{dtype}"


def _plan_of(tuple shape, tuple dst_strides, tuple src_strides, Py_ssize_t itemsize):
    """Test hook: the walk of a copy between two layouts (strides in elements, at address 0
    both): ``(outer extents, rows, run, dst pitch, src pitch)``, or None for no elements. Each
    outer index is one driver copy."""
    cdef int64_t sh[MAX_DIMS]
    cdef int64_t dst[MAX_DIMS]
    cdef int64_t src[MAX_DIMS]
    cdef CopySide d, s
    cdef Plan p
    cdef int i, n = len(shape)
    if n > MAX_DIMS or len(dst_strides) != n or len(src_strides) != n:
        raise ValueError("_plan_of: at most MAX_DIMS dimensions, one stride for each")
    for i in range(n):
        sh[i] = shape[i]
        dst[i] = dst_strides[i]
        src[i] = src_strides[i]
    memset(&d, 0, sizeof(d))
    d.ndim = n
    d.shape = sh
    d.strides = dst
    d.itemsize = itemsize
    s = d
    s.strides = src
    if not _plan(&d, &s, &p):
        return None
    return (int_tuple(p.extent, p.nouter), p.rows, p.run, p.dpitch, p.spitch)
