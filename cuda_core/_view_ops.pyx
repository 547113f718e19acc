"""The work behind ``StridedMemoryView``'s methods that do not read another library's array: a
view of a ``Buffer`` (``from_buffer``), a derived view of the same memory (``view()``), the
layout snapshot (``_layout``), the DLPack export (``__dlpack__``, and both functions of the C
exchange table that read or make a view) and copies (``copy_from``/``copy_to``, walked by
``_view_copy``).

Construction from DLPack, the CUDA Array Interface and the array interface (the hot path)
stays in ``_memoryview``, with the view's dims helpers inline in its ``.pxd``. This module and
``_memoryview`` cimport each other: the view's methods call the functions here, and these read
the view's fields. Cython exports a module's types and functions before it imports another
module's, so either of the two may be imported first.
"""

import numpy

from libc.stdint cimport int64_t, intptr_t

from cuda_core._checks cimport check_int
from cuda_core._memory._buffer cimport Buffer, as_buffer
from cuda_core._memory._dlpack cimport export_args, export_target, make_tensor_capsule
from cuda_core._memory._dlpack_abi cimport (DLManagedTensorVersioned, DLTensor, kDLCPU,
                                            kDLCUDAHost)
from cuda_core._memoryview cimport StridedMemoryView, _read_versioned, _set_dims, new_view
from cuda_core._strided_layout cimport (
    _StridedLayout, byte_bounds, check_bounds, dense_in_order, is_dense_any)
from cuda_core._view_copy cimport CopySide, copy_views
from cuda_core._view_dlpack cimport delete_tensor
from cuda_core._view_dtypes cimport dl_code

__all__ = []


cdef extern from "Python.h":
    object PyCapsule_New(void* pointer, const char* name, void* destructor)


# -- a view of a Buffer -------------------------------------------------------------------------

cdef StridedMemoryView of_buffer(type cls, object buffer, object shape, object strides,
                                 object itemsize, object dtype, object is_readonly):
    cdef StridedMemoryView view = new_view(cls)
    cdef Buffer buf
    cdef Py_ssize_t isz
    buf = as_buffer(buffer, "StridedMemoryView.from_buffer(): buffer")
    if buf._closed:
        raise ValueError("StridedMemoryView.from_buffer(): the buffer is closed")
    if dtype is not None:
        dt = numpy.dtype(dtype)
        if itemsize is not None and itemsize != dt.itemsize:
            raise ValueError(f"StridedMemoryView.from_buffer(): itemsize={itemsize} does "
                             f"not match dtype {dt} ({dt.itemsize} bytes)")
        isz = dt.itemsize
        if isz <= 0:
            raise ValueError(f"StridedMemoryView.from_buffer(): dtype {dt} has elements of "
                             f"{isz} bytes")
    elif itemsize is not None:
        isz = check_int(itemsize, "StridedMemoryView.from_buffer(): itemsize", minimum=1)
        dt = None
    else:
        raise ValueError("StridedMemoryView.from_buffer(): pass itemsize or dtype")
    view._dtype = dt
    view._itemsize = isz
    _set_dims(view, shape, strides, 1, "StridedMemoryView.from_buffer()", ValueError)
    check_bounds(view._shape, view._strides, view._ndim, view._itemsize, buf._size,
                 "StridedMemoryView.from_buffer()")
    view._ptr = <intptr_t>buf._ptr
    view._readonly = bool(is_readonly)
    view._device_id = buf.device_id
    view._device_accessible = buf.is_device_accessible
    if not view._device_accessible:
        view._device_id = -1
    else:
        view._dl_type = buf.__dlpack_device__()[0]
    view._exporting_obj = buf
    view._buffer = buf
    return view



# -- derived views and the layout ---------------------------------------------------------------

cdef _StridedLayout layout_of(StridedMemoryView v):
    cdef _StridedLayout layout = _StridedLayout.__new__(_StridedLayout)
    layout.shape = v.shape
    layout.strides = v.strides
    layout.itemsize = v._itemsize
    layout.is_contiguous_c = not v._has_strides or dense_in_order(
        v._shape, v._strides, v._ndim, True)
    layout.is_contiguous_f = dense_in_order(v._shape, v._strides, v._ndim, False)
    layout.is_contiguous_any = (layout.is_contiguous_c or layout.is_contiguous_f
                                or is_dense_any(v._shape, v._strides, v._ndim))
    if v._has_strides:
        layout.strides_in_bytes = tuple([s * v._itemsize for s in layout.strides])
    return layout


cdef inline void _byte_bounds(StridedMemoryView v, int64_t* lo, int64_t* hi) noexcept:
    byte_bounds(v._shape, v._strides, v._ndim, v._itemsize, lo, hi)


cdef StridedMemoryView derive(StridedMemoryView v, object layout, object dtype):
    cdef StridedMemoryView out = StridedMemoryView.__new__(StridedMemoryView)
    cdef _StridedLayout lay
    cdef int64_t lo, hi, nlo, nhi
    if layout is not None and not isinstance(layout, _StridedLayout):
        raise TypeError(f"StridedMemoryView.view(): layout must be a view's _layout, not "
                        f"{type(layout).__name__}")
    dt = v._dtype if dtype is None else numpy.dtype(dtype)
    isz = v._itemsize if dt is None else dt.itemsize
    if layout is None:
        if isz != v._itemsize:
            raise ValueError(f"StridedMemoryView.view(): dtype {dt} is {isz} bytes, the "
                             f"view's elements {v._itemsize}; pass a layout as well")
        shape, strides = v.shape, v.strides
    else:
        lay = <_StridedLayout>layout
        if lay.itemsize != isz:
            raise ValueError(f"StridedMemoryView.view(): the layout's itemsize "
                             f"({lay.itemsize}) differs from the dtype's ({isz})")
        shape, strides = lay.shape, lay.strides
    out._dtype = dt
    out._itemsize = isz
    _set_dims(out, shape, strides, 1, "StridedMemoryView.view()", ValueError)
    _byte_bounds(v, &lo, &hi)
    _byte_bounds(out, &nlo, &nhi)
    if nhi > nlo and (nlo < lo or nhi > hi):
        raise ValueError(f"StridedMemoryView.view(): the layout reaches bytes "
                         f"[{nlo}, {nhi}) of the view, outside [{lo}, {hi})")
    out._ptr = v._ptr
    out._device_id = v._device_id
    out._dl_type = v._dl_type
    out._device_accessible = v._device_accessible
    out._readonly = v._readonly
    out._exporting_obj = v._exporting_obj
    out._buffer = v._buffer
    out._keep = v  # the consumed tensor lives as long as this view
    return out


# -- the DLPack export --------------------------------------------------------------------------

cdef object export_capsule(StridedMemoryView v, object stream, object max_version,
                           object dl_device, object copy):
    cdef bint versioned = False
    cdef int dev_type, dev_id
    cdef str who = "StridedMemoryView.__dlpack__()"
    want = export_args(stream, max_version, dl_device, copy, &versioned, who)
    dev_type, dev_id = v.__dlpack_device__()
    export_target(want, stream, None, &dev_type, &dev_id, who)
    code, bits = dl_code(v._dtype, who)
    if v._readonly and not versioned:
        raise BufferError(f"{who}: the view is read-only, which only a versioned capsule "
                          f"can say: pass max_version=(1, 0) or higher")
    return make_tensor_capsule(<void*>v._ptr, dev_type, dev_id, v._ndim, v._shape,
                               v._strides if v._has_strides else NULL, code, bits,
                               v._readonly, v, versioned)


cdef int fill_exchange(object obj, DLTensor* t, bint* readonly) except -1:
    cdef StridedMemoryView v
    if not isinstance(obj, StridedMemoryView):
        raise TypeError(f"py_object must be a StridedMemoryView, not {type(obj).__name__}")
    v = <StridedMemoryView>obj
    code, bits = dl_code(v._dtype, "StridedMemoryView: DLPack C exchange")
    t.data = <void*>v._ptr
    t.device.device_type = v._dl_type
    t.device.device_id = 0 if v._dl_type == kDLCPU or v._dl_type == kDLCUDAHost else v._device_id
    t.ndim = v._ndim
    t.dtype.code = code
    t.dtype.bits = bits
    t.dtype.lanes = 1
    t.shape = v._shape if v._ndim > 0 else NULL
    t.strides = v._strides if v._ndim > 0 else NULL
    t.byte_offset = 0
    readonly[0] = v._readonly
    return 0


cdef object wrap_exchange(DLManagedTensorVersioned* tensor):
    """A view that owns ``tensor`` (the exchange table's to-object function); the deleter runs
    when the view is freed, or now when the tensor is refused."""
    cdef StridedMemoryView v
    try:
        v = StridedMemoryView.__new__(StridedMemoryView)
    except BaseException:
        delete_tensor(tensor, True)
        raise
    v._managed = tensor
    v._versioned = True
    _read_versioned(v, tensor, "StridedMemoryView: DLPack C exchange")
    # What cuda.core names as the exporter: the used capsule of the tensor (the view owns it).
    v._exporting_obj = PyCapsule_New(tensor, b"used_dltensor_versioned", NULL)
    return v


# -- copies -------------------------------------------------------------------------------------

cdef inline CopySide _side(StridedMemoryView v) noexcept:
    return CopySide(ptr=v._ptr, ndim=v._ndim, shape=v._shape, strides=v._strides,
                    itemsize=v._itemsize, dl_type=v._dl_type, device_id=v._device_id,
                    device_accessible=v._device_accessible, readonly=v._readonly)


cdef int copy_elements(StridedMemoryView dst, StridedMemoryView src, object stream,
                       object allocator, object blocking, str who) except -1:
    cdef CopySide d = _side(dst)
    cdef CopySide s = _side(src)
    return copy_views(&d, &s, dst._dtype, src._dtype, stream, allocator, blocking, who)
