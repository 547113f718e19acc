"""``StridedMemoryView``: a strided array of another library seen as a pointer, a shape, strides
and a NumPy dtype, through DLPack, the CUDA Array Interface (v3) or NumPy's array interface.

Rules of this layer:

* Construction stays in C: a DLPack capsule is read through the C API, the interface dicts are
  read in one pass (``_view_interface``: keys matched by identity with interned ones; a dict
  with another key is read key by key with ``PyDict_GetItemWithError``), type strings are
  parsed in C, and the NumPy dtypes come from a table filled once at import and never written again (so
  free-threaded interpreters can read it without a lock).
* A view owns what it consumed: the DLPack tensor's deleter runs exactly once, when the view is
  freed (or at once when the tensor is refused); ``exporting_obj`` keeps the producer alive for
  the interface protocols, which have no deleter.
* Nothing is cached lazily on a view: ``shape``, ``strides`` and ``_layout`` are built from C
  arrays on each access, so two threads reading one view never race on a cache.
* Stream ordering (the consumer's ``stream_ptr``) is the DLPack protocol's for DLPack (passed to
  ``__dlpack__``) and the CUDA Array Interface's for CAI (an event recorded on the producer's
  stream, waited for on the consumer's, through the driver); ``-1`` opts out of both.

This module holds the class and the code that fills a view's fields from another library's
array (the dims helpers are inline in ``_memoryview.pxd``); what needs no view lives below it:
``_view_dlpack`` (the ``__dlpack__`` calls, capsules, the C exchange API), ``_view_dtypes``
(element types), ``_strided_layout`` (``_StridedLayout``, contiguity, spans) and
``_view_driver`` (the pointer's device, stream ordering). ``_view_ops``, which cimports this
module as this module cimports it, does the rest of the methods' work: ``from_buffer``,
``view()``, ``_layout``, the DLPack export and the exchange table's functions, copies.
``_view_interface``, cimported both ways too, reads the two interface protocols' dicts.
``args_viewable_as_strided_memory`` is in ``_viewable_args``.
"""

import warnings

import numpy

cimport cython
from cpython.long cimport PyLong_AsUnsignedLongLongMask
from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, intptr_t, uintptr_t
from libc.stdlib cimport free

from cuda_core._checks import ArgumentTypeError
from cuda_core._memory._dlpack_abi cimport (
    DLManagedTensor, DLManagedTensorVersioned, DLPackExchangeAPI, DLTensor,
    DLPACK_FLAG_BITMASK_READ_ONLY, kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged)
from cuda_core._strided_layout cimport int_tuple
from cuda_core._view_dlpack cimport (delete_tensor, dlpack_method, exchange_api, export_tensor,
                                     protocol, raise_current)
from cuda_core._view_driver cimport order_streams, stream_int
from cuda_core._view_dtypes cimport dl_dtype, table_itemsize
from cuda_core._view_exchange cimport exchange_capsule
from cuda_core._view_interface cimport init_cai, interface_dict, read_interface
from cuda_core._view_ops cimport (copy_elements, derive, export_capsule, fill_exchange,
                                  layout_of, of_buffer, wrap_exchange)

__all__ = ["StridedMemoryView"]


# The fields of a NumPy array, read in place (the inline accessors of ndarraytypes.h need no
# NumPy C-API table).
cdef extern from *:
    """
    #define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
    #include <numpy/ndarraytypes.h>
    """
    ctypedef struct PyArrayObject
    ctypedef Py_ssize_t npy_intp
    char* PyArray_BYTES(PyArrayObject* a) noexcept
    int PyArray_NDIM(PyArrayObject* a) noexcept
    npy_intp* PyArray_DIMS(PyArrayObject* a) noexcept
    npy_intp* PyArray_STRIDES(PyArrayObject* a) noexcept
    void* PyArray_DESCR(PyArrayObject* a) noexcept
    int PyArray_FLAGS(PyArrayObject* a) noexcept
    int NPY_ARRAY_WRITEABLE
    int NPY_ARRAY_C_CONTIGUOUS


cdef type _ndarray = numpy.ndarray


cdef bint _numpy_exports_c_strides():
    parts = numpy.__version__.split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= (2, 4)
    except (IndexError, ValueError):
        return True


# Whether NumPy's DLPack export gives strides for a C-contiguous array (2.4 and later): what
# the in-place read of an ndarray reproduces. Set once, at import.
cdef bint _NUMPY_C_STRIDES = _numpy_exports_c_strides()


# -- the view ------------------------------------------------------------------------------------

# Views are made and freed at a high rate (one per argument of a numba-cuda launch): a few
# freed ones are kept for reuse, which spares the allocator. Cython keeps no free list on
# free-threaded CPython (its list is shared state that only the GIL guards).
# The methods are built-in methods (binding=False): a class method called through a name bound
# once (``f = StridedMemoryView.from_dlpack``) then goes straight to its C entry, where a Cython
# function goes through a bound-method object and its own call wrapper first (benchmarks/
# README.md, "Built-in class methods"). Their signatures stay readable through
# ``__text_signature__`` (the clinic format of the embedded signature).
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.freelist(8)
cdef class StridedMemoryView:
    """A strided array or tensor of another library, seen as a pointer, a shape, strides (in
    elements) and a NumPy dtype, without a copy.

    Build one with a class method: :meth:`from_dlpack`, :meth:`from_cuda_array_interface`,
    :meth:`from_array_interface`, :meth:`from_any_interface` or :meth:`from_buffer`; or inside a
    function decorated with :func:`args_viewable_as_strided_memory`.
    ``StridedMemoryView(obj, stream_ptr)`` is the deprecated spelling of
    ``StridedMemoryView.from_any_interface(obj, stream_ptr)``.

    ``stream_ptr`` is the address of the **consumer**'s stream (an int, or an object with
    ``__index__`` such as ``cuda.bindings.driver.CUstream``). For DLPack it is handed to the
    producer's ``__dlpack__`` (0 as None; a host producer refusing -1 is asked with None); for
    the CUDA Array Interface and DLPack's C exchange API, when the producer's stream is not
    the consumer's, the consumer's stream waits for the producer's work queued so far (an event
    through the driver). ``-1`` opts out of stream ordering; ``None`` is refused as
    ambiguous.

    A view is a DLPack producer too: :meth:`__dlpack__` and :meth:`__dlpack_device__`, and
    the DLPack C exchange table ``__dlpack_c_exchange_api__`` (also spelled
    ``__c_dlpack_exchange_api__``), a capsule named ``"dlpack_exchange_api"``.
    """

    # The DLPack C exchange API (DLPack 1.3), under both names cuda.core gives it.
    __dlpack_c_exchange_api__ = exchange_capsule(fill_exchange, wrap_exchange)
    __c_dlpack_exchange_api__ = __dlpack_c_exchange_api__

    def __cinit__(self):
        self._shape = self._inline
        self._strides = self._inline + SMV_INLINE_DIMS
        self._device_id = -1
        self._dl_type = kDLCPU

    def __init__(self, obj=None, stream_ptr=None):
        if self._exporting_obj is not None or self._managed != NULL or self._ndim != 0:
            raise TypeError("StridedMemoryView.__init__(): the view is already initialized")
        warnings.warn("StridedMemoryView(obj, stream_ptr) is deprecated; use "
                      "StridedMemoryView.from_any_interface(obj, stream_ptr) (or from_dlpack, "
                      "from_cuda_array_interface)", DeprecationWarning, stacklevel=2)
        if obj is None:
            # Also a ValueError: cuda.core makes an empty view, whose every use raises one.
            raise ArgumentTypeError("StridedMemoryView(): build a view with from_dlpack(), "
                            "from_cuda_array_interface(), from_array_interface(), "
                            "from_any_interface() or from_buffer(); an empty view is not "
                            "supported")
        _init_any(self, obj, stream_ptr, "StridedMemoryView")

    def __dealloc__(self):
        cdef void* managed = self._managed
        self._managed = NULL
        if managed != NULL:
            delete_tensor(managed, self._versioned)
        if self._shape != self._inline:
            free(self._shape)

    # -- construction ----------------------------------------------------------------------------

    @classmethod
    def from_dlpack(cls, obj, stream_ptr=None):
        """A view of an object that supports DLPack (``__dlpack__``), versioned (1.x) or not.

        A producer type with a DLPack C exchange table (``__dlpack_c_exchange_api__``, DLPack
        1.3: PyTorch) is read through it, without a Python call; the consumer's stream then
        waits for the producer's current stream. Otherwise ``__dlpack__(stream=...,
        max_version=(1, 3))`` is asked; a producer that refuses ``max_version`` (``TypeError``)
        is asked again without it. The consumed tensor's deleter runs when the view is freed.

        Parameters
        ----------
        obj : object
            A DLPack producer: ``__dlpack__`` and ``__dlpack_device__``.
        stream_ptr : int
            The consumer's stream, or -1 for no stream ordering. 0 is passed as None (the
            legacy default stream), other values as is; a host producer that refuses -1 is
            asked again with None.

        Raises
        ------
        BufferError
            ``stream_ptr`` is None; the capsule is not a DLPack tensor, was already consumed,
            or is of a major version other than 1; the memory is on a device type other than
            CPU, CUDA, CUDA host (pinned) or CUDA managed; strides spanning more than 2**63
            bytes.
        TypeError
            ``stream_ptr`` is not an int; an unsupported element type (bfloat16 needs
            ``ml_dtypes``).
        """
        cdef StridedMemoryView view = new_view(cls)
        _init_dlpack(view, obj, stream_ptr)
        return view

    @classmethod
    def from_cuda_array_interface(cls, obj, stream_ptr=None):
        """A view of an object that supports the CUDA Array Interface (v3).

        When the interface names a producer ``stream`` and ``stream_ptr`` is another stream,
        the consumer's stream waits for the work queued so far on the producer's (an event
        recorded there, ``cuStreamWaitEvent`` on the consumer's).

        Parameters
        ----------
        obj : object
            An object with ``__cuda_array_interface__``.
        stream_ptr : int
            The consumer's stream (0 is the legacy default stream), or -1 for no ordering.

        Raises
        ------
        BufferError
            ``stream_ptr`` is None; the object has no interface; a ``mask``; a producer
            ``stream`` of 0 (forbidden by the interface); strides that are not whole elements.
        TypeError
            A malformed interface (missing keys, wrong types), an unknown ``typestr``.
        """
        cdef StridedMemoryView view = new_view(cls)
        init_cai(view, obj, stream_ptr)
        return view

    @classmethod
    def from_array_interface(cls, obj):
        """A view of host memory through NumPy's ``__array_interface__`` (version 3).

        The view is of host memory: ``device_id`` is -1 and ``is_device_accessible`` False.
        Every NumPy dtype is taken, structured ones included (through ``descr``).

        Raises
        ------
        BufferError
            The object has no interface; its ``data`` is a buffer object rather than an
            address; a ``mask``; strides that are not whole elements.
        TypeError
            A malformed interface.
        """
        cdef StridedMemoryView view = new_view(cls)
        _init_array_interface(view, obj)
        return view

    @classmethod
    def from_any_interface(cls, obj, stream_ptr=None):
        """A view through DLPack when ``obj`` has ``__dlpack__``, else through the CUDA Array
        Interface; see :meth:`from_dlpack` and :meth:`from_cuda_array_interface`.

        Raises
        ------
        BufferError
            ``obj`` supports neither protocol, or as the chosen method raises.
        """
        cdef StridedMemoryView view = new_view(cls)
        _init_any(view, obj, stream_ptr, "StridedMemoryView.from_any_interface()")
        return view

    @classmethod
    def from_buffer(cls, buffer, shape, strides=None, *, itemsize=None, dtype=None,
                    is_readonly=False):
        """A view of a :class:`~cuda_core.Buffer` as an array of ``shape``.

        No stream ordering: the caller orders the work that reads the view after the work that
        writes the buffer.

        Parameters
        ----------
        buffer : Buffer
            An open buffer; ``exporting_obj`` is this buffer, kept alive by the view.
        shape : tuple of int
            Non-negative extents.
        strides : tuple of int, optional
            In elements; None for C-contiguous.
        itemsize : int, optional
            The element size in bytes; needed when ``dtype`` is not given, and equal to
            ``dtype.itemsize`` when both are.
        dtype : numpy.dtype or anything ``numpy.dtype()`` takes, optional
        is_readonly : bool, optional

        Raises
        ------
        TypeError
            ``buffer`` is not a Buffer; ``shape``/``strides`` are not tuples of ints.
        ValueError
            Neither ``itemsize`` nor ``dtype``, or they disagree; a negative extent;
            ``strides`` of another length than ``shape``; elements outside the buffer;
            a closed buffer.
        """
        return of_buffer(cls, buffer, shape, strides, itemsize, dtype, is_readonly)

    # -- attributes ------------------------------------------------------------------------------

    @property
    def ptr(self):
        """The address of the first element, as an int (``data + byte_offset`` for DLPack)."""
        return self._ptr

    @property
    def device_id(self):
        """The device holding the memory; -1 for host memory no device can access."""
        return self._device_id

    @property
    def is_device_accessible(self):
        """True when a GPU can access the memory (device, pinned or managed memory)."""
        return self._device_accessible

    @property
    def readonly(self):
        """True when the producer marked the memory read-only."""
        return self._readonly

    @property
    def exporting_obj(self):
        """The object the view was made from (the Buffer for :meth:`from_buffer`)."""
        return self._exporting_obj

    @property
    def shape(self):
        """The extents, a tuple of ints."""
        return int_tuple(self._shape, self._ndim)

    @property
    def strides(self):
        """The strides in elements, a tuple of ints; None when the producer gave none
        (C-contiguous)."""
        if not self._has_strides:
            return None
        return int_tuple(self._strides, self._ndim)

    @property
    def dtype(self):
        """The element type, a ``numpy.dtype`` (None for a :meth:`from_buffer` view made with
        an ``itemsize`` only)."""
        return self._dtype

    @property
    def size(self):
        """The number of elements (1 for a 0-d view)."""
        cdef int64_t n = 1
        cdef int i
        for i in range(self._ndim):
            n *= self._shape[i]
        return n

    @property
    def _layout(self):
        """The layout: shape, strides (elements and bytes), itemsize and contiguity flags."""
        return layout_of(self)

    def __repr__(self):
        return (f"StridedMemoryView(ptr=0x{<uintptr_t>self._ptr:x}, shape={self.shape}, "
                f"strides={self.strides}, dtype={self._dtype}, device_id={self._device_id}, "
                f"is_device_accessible={bool(self._device_accessible)}, "
                f"readonly={bool(self._readonly)}, "
                f"exporting_obj={type(self._exporting_obj).__name__})")

    # -- DLPack export ------------------------------------------------------------------------

    def __dlpack_device__(self):
        """``(device_type, device_id)`` of the view's memory as DLPack names it: kDLCPU (1) for
        host memory, kDLCUDA (2) for a device's, kDLCUDAHost (3) for pinned memory and
        kDLCUDAManaged (13) for managed memory."""
        if self._dl_type == kDLCPU or self._dl_type == kDLCUDAHost:
            return (self._dl_type, 0)
        return (self._dl_type, self._device_id)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the view as a DLPack capsule: the same memory, shape, strides and dtype,
        without a copy. The capsule keeps the view, and so what the view keeps, alive until the
        consumer releases the tensor.

        Parameters
        ----------
        stream : int or None
            The consumer's stream, as the DLPack protocol defines it. A view has no stream of
            its own (the producer it was made from was ordered before the stream it was made
            for), so nothing is ordered here; the value is checked as the protocol says.
        max_version : tuple of two ints, optional
            The highest DLPack version the consumer takes; ``(1, x)`` or higher gives a
            versioned capsule, which carries the read-only flag.
        dl_device : tuple of two ints, optional
            The device the consumer wants; pinned and managed memory go to a CPU consumer as
            host memory, any other device is refused (the export never copies).
        copy : bool or None
            ``True`` is refused: the export never copies.

        Raises
        ------
        BufferError
            For a copy, another device, a view made with an itemsize only (it has no dtype to
            export), a dtype DLPack cannot express, or a read-only view asked for an
            unversioned capsule (it cannot say read-only, and a consumer could write to it).
        """
        return export_capsule(self, stream, max_version, dl_device, copy)

    # -- copies ----------------------------------------------------------------------------------

    def copy_from(self, StridedMemoryView other not None, stream, allocator=None,
                  blocking=None):
        """Copy the elements of ``other`` into this view, each to the element of the same
        index, whatever the two layouts.

        Host-to-device, device-to-host and device-to-device (one device) copies are queued on
        ``stream`` (``cuMemcpy2DAsync``, one for each row that the two layouts do not share: a
        pair of C-contiguous views is one copy, a transpose one copy per row); a copy between
        two views of pageable host memory is made at once, on the host.

        Parameters
        ----------
        other : StridedMemoryView
            The source: the same shape and element type (dtype, or itemsize for views made
            with an itemsize only), any strides, negative and zero (broadcast) ones included.
        stream : Stream or an object with ``__cuda_stream__``
            The stream the copy is queued on; required unless both views are of pageable host
            memory (then None is taken).
        allocator : MemoryResource, optional
            For temporary buffers; no copy needs one (every layout is copied in place).
        blocking : bool or None
            True: ``stream`` is synchronized before returning. False: the call returns once
            the copy is queued (a copy from or to pageable host memory may still wait, as the
            driver's do). None (default): True when one side is pageable host memory, False
            otherwise.

        Raises
        ------
        TypeError
            ``other`` is not a StridedMemoryView; ``stream`` is missing where needed;
            ``allocator`` is not a MemoryResource; ``blocking`` is not a bool or None.
        ValueError
            The shapes or element types differ; this view is read-only; its elements may
            overlap (a zero stride, say); the two views' bytes overlap; the views are on two
            different devices.
        CUDAError
            The driver refused a copy.
        """
        copy_elements(self, other, stream, allocator, blocking, "StridedMemoryView.copy_from()")

    def copy_to(self, StridedMemoryView other not None, stream=None, allocator=None,
                blocking=None):
        """Copy the elements of this view into ``other``; see :meth:`copy_from`."""
        copy_elements(other, self, stream, allocator, blocking, "StridedMemoryView.copy_to()")

    # -- derived views and export ---------------------------------------------------------------

    def view(self, layout=None, dtype=None):
        """A new view of the same memory with another layout and/or dtype.

        Parameters
        ----------
        layout : the ``_layout`` of a view, optional
            Shape and strides (in elements) of the new view; its itemsize must be the dtype's.
            Every element must lie within the elements of this view.
        dtype : numpy.dtype, optional
            The new element type, of the same size as the layout's elements.

        Raises
        ------
        TypeError
            ``layout`` is not a view layout.
        ValueError
            The sizes differ, or the layout reaches outside this view.
        """
        return derive(self, layout, dtype)

    def as_tensor_map(self, box_dim=None, *, options=None, element_strides=None,
                      data_type=None, interleave=None, swizzle=None, l2_promotion=None,
                      oob_fill=None):
        """A tiled TMA descriptor (:class:`~cuda_core.TensorMapDescriptor`) of this view.

        Pass ``box_dim`` and the option keywords, or all of them bundled as ``options``
        (a :class:`~cuda_core.TensorMapDescriptorOptions` or a dict of its fields); the fields
        and their defaults are documented there. Per-dimension tuples follow the view's
        ``shape`` order.

        Raises
        ------
        TypeError, ValueError
            For an option or a layout the driver would refuse, named: rank outside 1 to 5, an
            address not 16-byte aligned, a last dimension that is not contiguous, strides not
            multiples of 16 bytes, box dims outside [1, 256] or whose inner row is not a
            multiple of 16 bytes (or exceeds the swizzle span), element strides outside
            [1, 8], a dtype with no tensor-map type, a ``data_type`` larger than the view's
            items (the view's extent, counted in its elements, would reach past the end of
            its memory), or host memory.
        RuntimeError
            If the device's compute capability is below 9.0.

        Notes
        -----
        Calls ``cuTensorMapEncodeTiled``.
        """
        from cuda_core._tensor_map import _from_view
        return _from_view(self, box_dim, options, element_strides, data_type, interleave,
                          swizzle, l2_promotion, oob_fill)


cdef StridedMemoryView new_view(type cls):
    """An empty view of ``cls``, the class a class method was called on: a subclass gets one of
    its own, as under cuda.core (without its ``__init__``, which for this class is the deprecated
    constructor). StridedMemoryView itself takes Cython's direct path (here, not inline in the
    .pxd, where Cython calls ``tp_new`` through the type and tests the result's type)."""
    if cls is StridedMemoryView:
        return StridedMemoryView.__new__(StridedMemoryView)
    return cls.__new__(cls)


# -- DLPack -------------------------------------------------------------------------------------

cdef int _init_dlpack(StridedMemoryView v, object obj, object stream_ptr,
                      object method=None) except -1:
    """``method``: the ``__dlpack__`` from_any_interface read from the type, or None."""
    cdef str who = "StridedMemoryView.from_dlpack()"
    cdef long long sval  # >= -1, or -2 for a handle past 2**63
    cdef object stream = stream_int(stream_ptr, who, &sval)
    cdef const DLPackExchangeAPI* api = NULL
    cdef void* managed
    cdef bint versioned = False
    if type(obj) is _ndarray:
        # Always host memory: read in place, or ask NumPy with the host's stream (None).
        if _init_ndarray(v, obj):
            return 0
        stream = None
    else:
        # A view's own table gives nothing __dlpack__ does not: it has no stream to order.
        if type(obj) is not StridedMemoryView:
            exchange_api(obj, &api)
        if api != NULL:
            return _init_exchange(v, obj, api, stream, sval, who)
    if sval == 0:
        stream = None  # the legacy default stream, as the protocol spells it
    managed = export_tensor(obj, stream, sval == -1 and stream is not None, who, &versioned,
                            method)
    v._managed = managed  # owned from here: a refusal below still runs the deleter
    v._versioned = versioned
    if versioned:
        _read_versioned(v, <DLManagedTensorVersioned*>managed, who)
    else:
        _read_tensor(v, &(<DLManagedTensor*>managed).dl_tensor, who)
    v._exporting_obj = obj
    return 0


cdef int _read_versioned(StridedMemoryView v, DLManagedTensorVersioned* vt,
                         str who) except -1:
    """A consumed 1.x tensor (already owned by ``v``): its version, flags and tensor."""
    if vt.version.major != 1:
        raise BufferError(f"{who}: DLPack major version {vt.version.major} is not "
                          f"supported (1 is)")
    v._readonly = (vt.flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0
    return _read_tensor(v, &vt.dl_tensor, who)


cdef int _read_tensor(StridedMemoryView v, DLTensor* t, str who) except -1:
    """Device, dtype, shape, strides and address of a DLPack tensor, copied into ``v``. The
    caller has made ``v`` own the tensor, so that a refusal here still runs its deleter."""
    cdef int dev_type = t.device.device_type
    cdef int i
    cdef int64_t s
    if dev_type == kDLCPU:
        v._device_id = -1
        v._device_accessible = False
    elif dev_type == kDLCUDA or dev_type == kDLCUDAHost or dev_type == kDLCUDAManaged:
        v._device_id = t.device.device_id
        v._device_accessible = True
        v._dl_type = dev_type
    else:
        raise BufferError(f"{who}: DLPack device type {dev_type} is not supported (CPU 1, "
                          f"CUDA 2, CUDA host 3 and CUDA managed 13 are)")
    v._dtype = dl_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    v._itemsize = t.dtype.bits // 8
    if t.ndim < 0:
        raise BufferError(f"{who}: DLPack ndim {t.ndim} is negative")
    if t.ndim > 0 and t.shape == NULL:
        raise BufferError(f"{who}: the DLPack tensor has no shape")
    _alloc_dims(v, t.ndim)
    for i in range(t.ndim):
        s = t.shape[i]
        if s < 0:
            raise BufferError(f"{who}: DLPack extent {s} is negative")
        v._shape[i] = s
    if t.strides == NULL:
        v._has_strides = False
        _fill_c_strides(v)
    else:
        for i in range(t.ndim):
            v._strides[i] = t.strides[i]
        v._has_strides = True
    _check_span(v, who, BufferError)
    v._ptr = <intptr_t>(<char*>t.data + t.byte_offset)
    return 0


cdef int _init_exchange(StridedMemoryView v, object obj, const DLPackExchangeAPI* api,
                        object stream, long long sval, str who) except -1:
    cdef DLTensor t
    cdef DLManagedTensorVersioned* vt = NULL
    cdef void* producer = NULL
    cdef bint device
    if api.dltensor_from_py_object_no_sync != NULL:
        # A borrowed tensor (shape and strides are the producer's until we return): copied
        # at once; the memory stays valid while the view holds the object, as for the CUDA
        # Array Interface.
        if api.dltensor_from_py_object_no_sync(<void*>obj, &t) != 0:
            return raise_current()
        v._readonly = False
        _read_tensor(v, &t, who)
    else:
        if api.managed_tensor_from_py_object_no_sync(<void*>obj, &vt) != 0:
            return raise_current()
        v._managed = vt
        v._versioned = True
        _read_versioned(v, vt, who)
        t = vt.dl_tensor
    v._exporting_obj = obj
    device = t.device.device_type == kDLCUDA or t.device.device_type == kDLCUDAManaged
    if device and sval != -1:
        # What __dlpack__(stream=consumer) would do inside the producer: the consumer's
        # stream waits for the work queued so far on the producer's current stream.
        if api.current_work_stream(t.device.device_type, t.device.device_id, &producer) != 0:
            return raise_current()
        order_streams(<size_t>producer, <size_t>PyLong_AsUnsignedLongLongMask(stream),
                      t.device.device_id)
    return 0


cdef int _read_ndarray(StridedMemoryView v, object obj, object dt, Py_ssize_t isz,
                      bint with_strides) except -1:
    """The fields of the ndarray ``obj`` (elements of ``isz`` bytes, strides whole elements),
    read in place; strides reported only ``with_strides``."""
    cdef PyArrayObject* a = <PyArrayObject*>obj
    cdef int nd = PyArray_NDIM(a)
    cdef npy_intp* dims = PyArray_DIMS(a)
    cdef npy_intp* strides = PyArray_STRIDES(a)
    cdef int i
    _alloc_dims(v, nd)
    for i in range(nd):
        v._shape[i] = dims[i]
    v._has_strides = with_strides
    if with_strides:
        for i in range(nd):
            v._strides[i] = strides[i] // isz
    else:
        _fill_c_strides(v)
    v._dtype = dt
    v._itemsize = isz
    v._ptr = <intptr_t>PyArray_BYTES(a)
    v._readonly = (PyArray_FLAGS(a) & NPY_ARRAY_WRITEABLE) == 0
    v._device_id = -1
    v._device_accessible = False
    v._exporting_obj = obj
    return 0


cdef bint _init_ndarray(StridedMemoryView v, object obj) except -1:
    """What NumPy's own DLPack export would give, read from the array's fields (no capsule).
    False, with nothing set, where the export could differ (a dtype not in the table or of
    another byte order, strides that are not whole elements): the caller then asks
    ``__dlpack__``, which accepts or refuses the array itself."""
    cdef PyArrayObject* a = <PyArrayObject*>obj
    cdef PyObject* descr = <PyObject*>PyArray_DESCR(a)
    cdef int nd = PyArray_NDIM(a)
    cdef npy_intp* strides = PyArray_STRIDES(a)
    cdef Py_ssize_t i
    cdef Py_ssize_t isz = table_itemsize(<object>descr)
    if isz == 0:
        return False
    for i in range(nd):
        if strides[i] % isz:
            return False
    # NumPy exports no strides for a 0-d array, and before 2.4 none for a C-contiguous one.
    _read_ndarray(v, obj, <object>descr, isz, nd > 0 and (
        _NUMPY_C_STRIDES or not (PyArray_FLAGS(a) & NPY_ARRAY_C_CONTIGUOUS)))
    return True


# -- CUDA Array Interface and the array interface ------------------------------------------------

cdef int _init_array_interface(StridedMemoryView v, object obj) except -1:
    cdef str who = "StridedMemoryView.from_array_interface()"
    cdef PyArrayObject* a
    cdef Py_ssize_t i, isz
    cdef bint c_order
    if type(obj) is _ndarray:
        # The fields that __array_interface__ would put in a new dict, read in place: strides
        # None exactly when NumPy's interface gives None (C-contiguous), byte strides otherwise.
        a = <PyArrayObject*>obj
        dt = <object>PyArray_DESCR(a)
        isz = dt.itemsize
        if isz <= 0:
            raise TypeError(f"{who}: elements of {isz} bytes ({dt}) cannot be viewed")
        c_order = (PyArray_FLAGS(a) & NPY_ARRAY_C_CONTIGUOUS) != 0
        if not c_order:
            for i in range(PyArray_NDIM(a)):
                if PyArray_STRIDES(a)[i] % isz:
                    raise BufferError(f"{who}: stride {PyArray_STRIDES(a)[i]} bytes is not a "
                                      f"whole number of {isz}-byte elements")
        return _read_ndarray(v, obj, dt, isz, not c_order)
    d = interface_dict(obj, "__array_interface__", who)
    read_interface(v, d, obj, who)
    v._device_id = -1
    v._device_accessible = False
    return 0


cdef int _init_any(StridedMemoryView v, object obj, object stream_ptr, str who) except -1:
    """Through DLPack when ``obj`` has ``__dlpack__``, else through the CUDA Array Interface."""
    if type(obj) is _ndarray:
        return _init_dlpack(v, obj, stream_ptr)
    method = dlpack_method(obj)
    if method is not None:
        return _init_dlpack(v, obj, stream_ptr, method)
    cdef int p = protocol(obj)
    if p == 2:
        return init_cai(v, obj, stream_ptr)
    if p == 1:
        return _init_dlpack(v, obj, stream_ptr)
    raise BufferError(f"{who}: {type(obj).__name__} supports neither DLPack (__dlpack__) nor "
                      f"the CUDA Array Interface (__cuda_array_interface__)")
