"""``StridedMemoryView``: a strided array of another library seen as a pointer, a shape, strides
and a NumPy dtype, through DLPack, the CUDA Array Interface (v3) or NumPy's array interface.

Rules of this layer:

* Construction stays in C: a DLPack capsule is read through the C API, the interface dicts are
  read item by item (``PyDict_GetItemWithError`` with interned keys), type strings are parsed in
  C, and the NumPy dtypes come from a table filled once at import and never written again (so
  free-threaded interpreters can read it without a lock).
* A view owns what it consumed: the DLPack tensor's deleter runs exactly once, when the view is
  freed (or at once when the tensor is refused); ``exporting_obj`` keeps the producer alive for
  the interface protocols, which have no deleter.
* Nothing is cached lazily on a view: ``shape``, ``strides`` and ``_layout`` are built from C
  arrays on each access, so two threads reading one view never race on a cache.
* Stream ordering (the consumer's ``stream_ptr``) is the DLPack protocol's for DLPack (passed to
  ``__dlpack__``) and the CUDA Array Interface's for CAI (an event recorded on the producer's
  stream, waited for on the consumer's, through the driver); ``-1`` opts out of both.
"""

import functools
import sys
import warnings

import numpy

from cpython.long cimport (PyLong_AsLongLong, PyLong_AsLongLongAndOverflow,
                           PyLong_AsUnsignedLongLongMask)
from cpython.ref cimport PyObject, Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t, intptr_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUcontext, CUdeviceptr, CUresult, CUstream, CUDA_SUCCESS

from cuda_core._context cimport pop_pushed, primary_context, push_if_needed
from cuda_core._driver cimport ensure_driver
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._memory._buffer cimport Buffer
from cuda_core._memory._dlpack_abi cimport (
    DLManagedTensor, DLManagedTensorVersioned, DLPackExchangeAPI, DLPackExchangeAPIHeader,
    DLTensor, DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_MAJOR_VERSION, kDLCPU, kDLCUDA,
    kDLCUDAHost, kDLCUDAManaged)

__all__ = ["StridedMemoryView", "args_viewable_as_strided_memory"]


cdef extern from "Python.h":
    bint PyCapsule_CheckExact(object o)
    const char* PyCapsule_GetName(object capsule) except? NULL
    void* PyCapsule_GetPointer(object capsule, const char* name) except? NULL
    int PyCapsule_SetName(object capsule, const char* name) except -1
    PyObject* PyObject_VectorcallMethod(object name, PyObject** args, size_t nargsf,
                                        object kwnames)
    bint PyErr_ExceptionMatches(object exc)
    void PyErr_Clear()
    object PyObject_CallMethodNoArgs(object obj, object name)
    PyObject* PyDict_GetItemWithError(object d, object key) except? NULL
    object PyNumber_Index(object o)


cdef extern from *:
    """
    #include <string.h>
    static inline int cuda_core_smv_streq(const char* a, const char* b) { return strcmp(a, b) == 0; }
    static inline PyObject* cuda_core_smv_steal(PyObject* o) { return o; }
    static inline int cuda_core_smv_raise(void) { return -1; }
    /* The characters of an ASCII str, in place; NULL (and no error) for any other str. */
    static inline const char* cuda_core_smv_ascii(PyObject* s, Py_ssize_t* n) {
        if (!PyUnicode_IS_ASCII(s)) return NULL;
        *n = PyUnicode_GET_LENGTH(s);
        return (const char*)PyUnicode_DATA(s);
    }
    """
    const char* _ascii "cuda_core_smv_ascii"(object s, Py_ssize_t* n) noexcept
    bint _streq "cuda_core_smv_streq"(const char* a, const char* b) noexcept nogil
    # A new reference handed to Cython as an object it owns.
    object steal "cuda_core_smv_steal"(PyObject* o)
    # Propagate the exception already set.
    int raise_current "cuda_core_smv_raise"() except -1


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


# DLPack data type codes beyond the three that dlpack.pxd declares.
cdef enum:
    _kDLBfloat = 4
    _kDLComplex = 5
    _kDLBool = 6

# The dtype table: [code][log2(bytes)] for the codes int, uint, float, (3 unused), bfloat,
# complex, bool and 1..16-byte elements. Filled here, once, and only read afterwards.
cdef enum:
    _NCODES = 7
    _NSIZES = 5


cdef tuple _make_dtype_table():
    names = {
        (0, 0): "int8", (0, 1): "int16", (0, 2): "int32", (0, 3): "int64",
        (1, 0): "uint8", (1, 1): "uint16", (1, 2): "uint32", (1, 3): "uint64",
        (2, 1): "float16", (2, 2): "float32", (2, 3): "float64",
        (5, 3): "complex64", (5, 4): "complex128",
        (6, 0): "bool",
    }
    return tuple(numpy.dtype(names[(c, s)]) if (c, s) in names else None
                 for c in range(_NCODES) for s in range(_NSIZES))


cdef tuple _DTYPES = _make_dtype_table()

# The keyword names of the __dlpack__ calls, and the interface dicts' keys (interned str).
# Interned, so that producers' keyword parsers match them by identity.
cdef tuple _KW_STREAM_VERSION = (sys.intern("stream"), sys.intern("max_version"))
cdef tuple _KW_STREAM = (sys.intern("stream"),)
# DLPack 1.x keeps one ABI for every minor version; newer dtype codes are refused by name.
cdef tuple _MAX_VERSION = (1, 3)
cdef object _NO_SYNC = -1
cdef str _DLPACK = sys.intern("__dlpack__")
cdef str _DLPACK_DEVICE = "__dlpack_device__"
cdef str _K_SHAPE = "shape"
cdef str _K_TYPESTR = "typestr"
cdef str _K_DATA = "data"
cdef str _K_STRIDES = "strides"
cdef str _K_DESCR = "descr"
cdef str _K_MASK = "mask"
cdef str _K_STREAM = "stream"
cdef str _K_VERSION = "version"

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


cdef inline int _size_index(Py_ssize_t nbytes) noexcept nogil:
    if nbytes == 1:
        return 0
    if nbytes == 2:
        return 1
    if nbytes == 4:
        return 2
    if nbytes == 8:
        return 3
    if nbytes == 16:
        return 4
    return -1


cdef object _bfloat16():
    try:
        import ml_dtypes
    except ImportError:
        raise TypeError("StridedMemoryView: a bfloat16 tensor needs the ml_dtypes package for "
                        "its NumPy dtype; install it (pip install ml_dtypes)") from None
    return numpy.dtype(ml_dtypes.bfloat16)


cdef object _dl_dtype(int code, int bits, int lanes):
    """The NumPy dtype of a DLPack element type; TypeError when there is none."""
    cdef int s
    if lanes != 1:
        raise TypeError(f"StridedMemoryView: DLPack vector element types (lanes={lanes}) are "
                        f"not supported")
    if code == _kDLBfloat and bits == 16:
        return _bfloat16()
    s = _size_index(bits // 8) if bits % 8 == 0 else -1
    if 0 <= code < _NCODES and s >= 0:
        dt = _DTYPES[code * _NSIZES + s]
        if dt is not None:
            return dt
    raise TypeError(f"StridedMemoryView: unsupported DLPack element type (code={code}, "
                    f"bits={bits}, lanes={lanes}); supported: bool, int8-64, uint8-64, "
                    f"float16/32/64, bfloat16, complex64/128")


cdef object _typestr_dtype(object typestr, object d, str who, Py_ssize_t* itemsize):
    """The NumPy dtype of an array-interface type string, and its size: the table for the
    common ones, ``numpy.dtype`` for the rest (structured, from the interface dict ``d``'s
    ``descr``; datetime, big-endian...)."""
    cdef const char* s
    cdef Py_ssize_t n, size
    cdef int code = -1, si
    if type(typestr) is not str:
        raise TypeError(f"{who}: 'typestr' must be a str, not {type(typestr).__name__}")
    s = _ascii(typestr, &n)
    if s == NULL:
        raise TypeError(f"{who}: typestr {typestr!r} is not a NumPy type (not ASCII)")
    if 3 <= n <= 4 and (s[0] == c'<' or s[0] == c'|' or s[0] == c'='):
        if n == 3 and c'1' <= s[2] <= c'8':
            size = s[2] - c'0'
        elif n == 4 and s[2] == c'1' and s[3] == c'6':
            size = 16
        else:
            size = 0
        if s[1] == c'i':
            code = 0
        elif s[1] == c'u':
            code = 1
        elif s[1] == c'f':
            code = 2
        elif s[1] == c'c':
            code = _kDLComplex
        elif s[1] == c'b':
            code = _kDLBool
        si = _size_index(size)
        if code >= 0 and si >= 0 and (s[0] != c'=' or _little_endian()):
            dt = _DTYPES[code * _NSIZES + si]
            if dt is not None:
                itemsize[0] = size
                return dt
    descr = _get(d, _K_DESCR)
    try:
        # A structured type's fields are in descr; a plain void type's descr is one unnamed
        # field, which numpy.dtype() would turn into a structure.
        if n >= 2 and s[1] == c'V' and descr is not None and not (
                type(descr) is list and len(descr) == 1 and descr[0][0] == ""):
            dt = numpy.dtype(descr)
        else:
            dt = numpy.dtype(typestr)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{who}: typestr {typestr!r} is not a NumPy type: {exc}") from None
    itemsize[0] = dt.itemsize
    return dt


cdef inline bint _little_endian() noexcept:
    cdef int one = 1
    return (<char*>&one)[0] == 1


cdef int _streq_name(const char* name, const char* want) noexcept:
    return name != NULL and _streq(name, want)


# -- the view ------------------------------------------------------------------------------------

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

    Notes
    -----
    ``copy_from``, ``copy_to``, ``as_tensor_map`` and the DLPack re-export (``__dlpack__``) of
    cuda.core 1.2 are not provided yet.
    """

    def __cinit__(self):
        self._shape = self._inline
        self._strides = self._inline + SMV_INLINE_DIMS
        self._device_id = -1

    def __init__(self, obj=None, stream_ptr=None):
        if obj is None:
            raise TypeError("StridedMemoryView(): build a view with from_dlpack(), "
                            "from_cuda_array_interface(), from_array_interface(), "
                            "from_any_interface() or from_buffer(); an empty view is not "
                            "supported")
        if self._exporting_obj is not None or self._managed != NULL or self._ndim != 0:
            raise TypeError("StridedMemoryView.__init__(): the view is already initialized")
        warnings.warn("StridedMemoryView(obj, stream_ptr) is deprecated; use "
                      "StridedMemoryView.from_any_interface(obj, stream_ptr) (or from_dlpack, "
                      "from_cuda_array_interface)", DeprecationWarning, stacklevel=2)
        protocol = _protocol(obj)
        if protocol == 1:
            _init_dlpack(self, obj, stream_ptr)
        elif protocol == 2:
            _init_cai(self, obj, stream_ptr)
        else:
            raise BufferError(f"StridedMemoryView: {type(obj).__name__} supports neither "
                              f"DLPack (__dlpack__) nor the CUDA Array Interface")

    def __dealloc__(self):
        cdef void* managed = self._managed
        self._managed = NULL
        if managed != NULL:
            _delete_tensor(managed, self._versioned)
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
        cdef StridedMemoryView view = StridedMemoryView.__new__(StridedMemoryView)
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
        cdef StridedMemoryView view = StridedMemoryView.__new__(StridedMemoryView)
        _init_cai(view, obj, stream_ptr)
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
        cdef StridedMemoryView view = StridedMemoryView.__new__(StridedMemoryView)
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
        cdef StridedMemoryView view = StridedMemoryView.__new__(StridedMemoryView)
        cdef int protocol = _protocol(obj)
        if protocol == 1:
            _init_dlpack(view, obj, stream_ptr)
        elif protocol == 2:
            _init_cai(view, obj, stream_ptr)
        else:
            raise BufferError(f"StridedMemoryView.from_any_interface(): {type(obj).__name__} "
                              f"supports neither DLPack (__dlpack__) nor the CUDA Array "
                              f"Interface (__cuda_array_interface__)")
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
        cdef StridedMemoryView view = StridedMemoryView.__new__(StridedMemoryView)
        cdef Buffer buf
        cdef Py_ssize_t isz
        if not isinstance(buffer, Buffer):
            raise TypeError(f"StridedMemoryView.from_buffer(): buffer must be a Buffer, not "
                            f"{type(buffer).__name__}")
        buf = <Buffer>buffer
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
            if isinstance(itemsize, bool) or not isinstance(itemsize, int):
                raise TypeError(f"StridedMemoryView.from_buffer(): itemsize must be an int, "
                                f"not {type(itemsize).__name__}")
            if itemsize <= 0:
                raise ValueError(f"StridedMemoryView.from_buffer(): itemsize must be > 0, got "
                                 f"{itemsize}")
            dt = None
            isz = itemsize
        else:
            raise ValueError("StridedMemoryView.from_buffer(): pass itemsize or dtype")
        view._dtype = dt
        view._itemsize = isz
        _set_dims(view, shape, strides, 1, "StridedMemoryView.from_buffer()", ValueError)
        _check_bounds(view, buf._size, "StridedMemoryView.from_buffer()")
        view._ptr = <intptr_t>buf._ptr
        view._readonly = bool(is_readonly)
        view._device_id = buf.device_id
        view._device_accessible = buf.is_device_accessible
        if not view._device_accessible:
            view._device_id = -1
        view._exporting_obj = buf
        view._buffer = buf
        return view

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
        return _int_tuple(self._shape, self._ndim)

    @property
    def strides(self):
        """The strides in elements, a tuple of ints; None when the producer gave none
        (C-contiguous)."""
        if not self._has_strides:
            return None
        return _int_tuple(self._strides, self._ndim)

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
        cdef _StridedLayout layout = _StridedLayout.__new__(_StridedLayout)
        layout._shape = self.shape
        layout._strides = self.strides
        layout._itemsize = self._itemsize
        layout._c = _is_c(self)
        layout._f = _is_f(self)
        layout._any = layout._c or layout._f or _is_dense_any(self)
        if self._has_strides:
            layout._strides_bytes = tuple([s * self._itemsize for s in layout._strides])
        return layout

    def __repr__(self):
        return (f"StridedMemoryView(ptr=0x{<uintptr_t>self._ptr:x}, shape={self.shape}, "
                f"strides={self.strides}, dtype={self._dtype}, device_id={self._device_id}, "
                f"is_device_accessible={bool(self._device_accessible)}, "
                f"readonly={bool(self._readonly)}, "
                f"exporting_obj={type(self._exporting_obj).__name__})")

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
        cdef StridedMemoryView out = StridedMemoryView.__new__(StridedMemoryView)
        cdef _StridedLayout lay
        cdef int64_t lo, hi, nlo, nhi
        if layout is not None and not isinstance(layout, _StridedLayout):
            raise TypeError(f"StridedMemoryView.view(): layout must be a view's _layout, not "
                            f"{type(layout).__name__}")
        dt = self._dtype if dtype is None else numpy.dtype(dtype)
        isz = self._itemsize if dt is None else dt.itemsize
        if layout is None:
            if isz != self._itemsize:
                raise ValueError(f"StridedMemoryView.view(): dtype {dt} is {isz} bytes, the "
                                 f"view's elements {self._itemsize}; pass a layout as well")
            shape, strides = self.shape, self.strides
        else:
            lay = <_StridedLayout>layout
            if lay._itemsize != isz:
                raise ValueError(f"StridedMemoryView.view(): the layout's itemsize "
                                 f"({lay._itemsize}) differs from the dtype's ({isz})")
            shape, strides = lay._shape, lay._strides
        out._dtype = dt
        out._itemsize = isz
        _set_dims(out, shape, strides, 1, "StridedMemoryView.view()", ValueError)
        _byte_bounds(self, &lo, &hi)
        _byte_bounds(out, &nlo, &nhi)
        if nhi > nlo and (nlo < lo or nhi > hi):
            raise ValueError(f"StridedMemoryView.view(): the layout reaches bytes "
                             f"[{nlo}, {nhi}) of the view, outside [{lo}, {hi})")
        out._ptr = self._ptr
        out._device_id = self._device_id
        out._device_accessible = self._device_accessible
        out._readonly = self._readonly
        out._exporting_obj = self._exporting_obj
        out._buffer = self._buffer
        out._keep = self  # the consumed tensor lives as long as this view
        return out


# -- the layout that numba-cuda and others read --------------------------------------------------

cdef class _StridedLayout:
    """The layout of a view (``StridedMemoryView._layout``): a snapshot, built per access."""
    cdef tuple _shape
    cdef object _strides
    cdef object _strides_bytes
    cdef Py_ssize_t _itemsize
    cdef bint _c, _f, _any

    def __init__(self, *args, **kwargs):
        raise TypeError("_StridedLayout is read from StridedMemoryView._layout")

    @property
    def shape(self):
        return self._shape

    @property
    def strides(self):
        """In elements; None when C-contiguous without explicit strides."""
        return self._strides

    @property
    def strides_in_bytes(self):
        """In bytes; None when the view has no explicit strides (C-contiguous)."""
        return self._strides_bytes

    @property
    def itemsize(self):
        return self._itemsize

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def is_contiguous_c(self):
        return self._c

    @property
    def is_contiguous_f(self):
        return self._f

    @property
    def is_contiguous_any(self):
        """Dense in some order of the dimensions (C, F, or a permutation of them)."""
        return self._any

    def __repr__(self):
        return (f"_StridedLayout(shape={self._shape}, strides={self._strides}, "
                f"itemsize={self._itemsize})")


# -- dims, contiguity, bounds -------------------------------------------------------------------

cdef inline tuple _int_tuple(int64_t* a, int n):
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



cdef int _alloc_dims(StridedMemoryView v, Py_ssize_t ndim) except -1:
    cdef int64_t* block
    if ndim > SMV_INLINE_DIMS:
        if ndim > 64:  # more than any library produces: refuse rather than trust the count
            raise BufferError(f"StridedMemoryView: {ndim} dimensions is more than the 64 "
                              f"supported")
        block = <int64_t*>malloc(2 * ndim * sizeof(int64_t))
        if block == NULL:
            raise MemoryError()
        v._shape = block
        v._strides = block + ndim
    v._ndim = <int>ndim
    return 0


cdef inline void _fill_c_strides(StridedMemoryView v) noexcept:
    # Unsigned: a product past 2**63 wraps (defined) and the span check then refuses it.
    cdef uint64_t acc = 1
    cdef int i
    for i in range(v._ndim - 1, -1, -1):
        v._strides[i] = <int64_t>acc
        acc *= <uint64_t>(v._shape[i] if v._shape[i] > 0 else 1)


cdef int _set_dims(StridedMemoryView v, object shape, object strides, Py_ssize_t divisor,
                   str who, object exc) except -1:
    """Shape and strides from Python tuples; strides are divided by ``divisor`` (the itemsize
    for byte strides), which must divide them."""
    cdef Py_ssize_t n, i
    cdef int64_t x
    if type(shape) is not tuple:
        if not isinstance(shape, tuple):
            raise TypeError(f"{who}: shape must be a tuple of ints, not {type(shape).__name__}")
    n = len(<tuple>shape)
    _alloc_dims(v, n)
    for i in range(n):
        item = (<tuple>shape)[i]
        if type(item) is not int:
            if isinstance(item, bool) or not isinstance(item, int):
                raise TypeError(f"{who}: shape must be a tuple of ints, got "
                                f"{type(item).__name__} in {shape!r}")
        x = PyLong_AsLongLong(item)
        if x < 0:
            raise exc(f"{who}: extents must be non-negative, got {shape!r}")
        v._shape[i] = x
    if strides is None:
        v._has_strides = False
        _fill_c_strides(v)
        return _check_span(v, who, ValueError if exc is ValueError else BufferError)
    if not isinstance(strides, tuple):
        raise TypeError(f"{who}: strides must be a tuple of ints or None, not "
                        f"{type(strides).__name__}")
    if len(<tuple>strides) != n:
        raise exc(f"{who}: strides {strides!r} and shape {shape!r} differ in length")
    for i in range(n):
        item = (<tuple>strides)[i]
        if type(item) is not int:
            if isinstance(item, bool) or not isinstance(item, int):
                raise TypeError(f"{who}: strides must be a tuple of ints, got "
                                f"{type(item).__name__} in {strides!r}")
        x = PyLong_AsLongLong(item)
        if divisor != 1 and x % divisor:
            raise BufferError(f"{who}: stride {x} bytes is not a whole number of "
                              f"{divisor}-byte elements")
        v._strides[i] = x // divisor
    v._has_strides = True
    return _check_span(v, who, ValueError if exc is ValueError else BufferError)


cdef bint _zero_volume(StridedMemoryView v) noexcept:
    cdef int i
    for i in range(v._ndim):
        if v._shape[i] == 0:
            return True
    return False


cdef bint _dense_in_order(StridedMemoryView v, bint last_fastest) noexcept:
    """Dense with the last dimension fastest (C order) or the first (Fortran order); extent-1
    dimensions do not count, and an empty view is dense."""
    cdef int64_t want = 1
    cdef int k, i
    if _zero_volume(v):
        return True
    for k in range(v._ndim):
        i = v._ndim - 1 - k if last_fastest else k
        if v._shape[i] != 1:
            if v._strides[i] != want:
                return False
            want *= v._shape[i]
    return True


cdef inline bint _is_c(StridedMemoryView v) noexcept:
    return not v._has_strides or _dense_in_order(v, True)


cdef inline bint _is_f(StridedMemoryView v) noexcept:
    return _dense_in_order(v, False)


cdef bint _is_dense_any(StridedMemoryView v) noexcept:
    """Dense in some order: the dimensions (extent > 1), sorted by stride, are C-contiguous."""
    cdef int order[64]
    cdef int n = 0, i, j, k
    cdef int64_t want = 1
    if _zero_volume(v):
        return True
    for i in range(v._ndim):  # insertion sort of the dims by stride; ndim <= 64
        if v._shape[i] == 1:
            continue
        if v._strides[i] <= 0:
            return False
        j = n
        while j > 0 and v._strides[order[j - 1]] > v._strides[i]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
        n += 1
    for k in range(n):
        if v._strides[order[k]] != want:
            return False
        want *= v._shape[order[k]]
    return True


cdef void _byte_bounds(StridedMemoryView v, int64_t* lo, int64_t* hi) noexcept:
    """The bytes the view's elements span, relative to ptr: [lo, hi); empty for no elements."""
    cdef int64_t a = 0, b = 0
    cdef int i
    if _zero_volume(v):
        lo[0] = 0
        hi[0] = 0
        return
    for i in range(v._ndim):
        if v._strides[i] > 0:
            b += (v._shape[i] - 1) * v._strides[i]
        else:
            a += (v._shape[i] - 1) * v._strides[i]
    lo[0] = a * v._itemsize
    hi[0] = (b + 1) * v._itemsize


cdef extern from *:
    """
    /* 1 when every element's byte offset fits in 63 bits, 0 when some |stride| * itemsize *
       (extent - 1), or their sum, overflows; no division, no undefined signed overflow. */
    static int cuda_core_smv_span_ok(const int64_t* shape, const int64_t* strides, int ndim,
                                     int64_t itemsize) {
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
    bint _span_ok "cuda_core_smv_span_ok"(const int64_t* shape, const int64_t* strides,
                                          int ndim, int64_t itemsize) noexcept nogil


cdef int _check_span(StridedMemoryView v, str who, object exc) except -1:
    """Refuse strides whose byte span does not fit in 63 bits: no allocation is that large and
    every consumer's address arithmetic would wrap. Such strides are a producer's error (an
    unsigned division of a negative byte stride, say), not a layout."""
    if _span_ok(v._shape, v._strides, v._ndim, v._itemsize if v._itemsize > 0 else 1):
        return 0
    raise exc(f"{who}: the layout (shape {_int_tuple(v._shape, v._ndim)}, strides "
              f"{_int_tuple(v._strides, v._ndim)}, {v._itemsize}-byte elements) spans more "
              f"than 2**63 bytes")


cdef int _check_bounds(StridedMemoryView v, size_t nbytes, str who) except -1:
    cdef int64_t lo, hi
    _byte_bounds(v, &lo, &hi)
    if hi > lo and (lo < 0 or <uint64_t>hi > nbytes):
        raise ValueError(f"{who}: the layout spans bytes [{lo}, {hi}) but the buffer holds "
                         f"{nbytes}")
    return 0


# -- DLPack -------------------------------------------------------------------------------------

cdef void _delete_tensor(void* managed, bint versioned) noexcept:
    cdef DLManagedTensorVersioned* vt
    cdef DLManagedTensor* lt
    if versioned:
        vt = <DLManagedTensorVersioned*>managed
        if vt.deleter != NULL:
            vt.deleter(vt)
    else:
        lt = <DLManagedTensor*>managed
        if lt.deleter != NULL:
            lt.deleter(lt)


cdef object _stream_int(object stream_ptr, str who):
    """``stream_ptr`` as a Python int; None is ambiguous and refused."""
    if type(stream_ptr) is int:
        return stream_ptr
    if stream_ptr is None:
        raise BufferError(f"{who}: stream_ptr=None is ambiguous; pass the consumer stream's "
                          f"address (e.g. stream.handle), or -1 for no stream ordering")
    if isinstance(stream_ptr, bool):
        raise TypeError(f"{who}: stream_ptr must be an int, not bool")
    try:
        return PyNumber_Index(stream_ptr)
    except TypeError:
        raise TypeError(f"{who}: stream_ptr must be an int (a stream address, or -1), not "
                        f"{type(stream_ptr).__name__}") from None


cdef PyObject* _try_dlpack(object obj, object stream) noexcept:
    """``obj.__dlpack__(stream=stream, max_version=(1, 3))``, a new reference; NULL with the
    exception set when it fails. A producer older than DLPack 1.0, which does not know
    max_version (TypeError), is asked as the protocol says, without it."""
    cdef PyObject* args[3]
    cdef PyObject* r
    args[0] = <PyObject*>obj
    args[1] = <PyObject*>stream
    args[2] = <PyObject*>_MAX_VERSION
    r = PyObject_VectorcallMethod(_DLPACK, args, 1, _KW_STREAM_VERSION)
    if r == NULL and PyErr_ExceptionMatches(TypeError):
        PyErr_Clear()
        r = PyObject_VectorcallMethod(_DLPACK, args, 1, _KW_STREAM)
    return r


cdef object _call_dlpack(object obj, object stream):
    cdef PyObject* r = _try_dlpack(obj, stream)
    if r == NULL:
        raise_current()
    return steal(r)


cdef int _init_dlpack(StridedMemoryView v, object obj, object stream_ptr) except -1:
    cdef str who = "StridedMemoryView.from_dlpack()"
    cdef object stream = _stream_int(stream_ptr, who)
    cdef const char* name
    cdef DLManagedTensorVersioned* vt
    cdef const DLPackExchangeAPI* api
    cdef int overflow = 0
    cdef long long sval = PyLong_AsLongLongAndOverflow(stream, &overflow)
    if overflow < 0 or (overflow == 0 and sval < -1):
        raise BufferError(f"{who}: stream_ptr={stream} is not a stream (pass -1 for no stream "
                          f"ordering)")
    if type(obj) is _ndarray:
        # Always host memory: read in place, or ask NumPy with the host's stream (None).
        if _init_ndarray(v, obj):
            return 0
        stream = None
    else:
        api = _exchange_api(obj)
        if api != NULL:
            return _init_exchange(v, obj, api, stream, who)
    if overflow == 0 and sval == 0:
        stream = None  # the legacy default stream, as the protocol spells it
    try:
        if overflow == 0 and sval == -1 and stream is not None:
            capsule = _dlpack_no_sync(obj, who)
        else:
            capsule = _call_dlpack(obj, stream)
    except AttributeError:
        if not hasattr(obj, "__dlpack__"):
            raise BufferError(f"{who}: {type(obj).__name__} does not support DLPack (no "
                              f"__dlpack__)") from None
        raise
    if not PyCapsule_CheckExact(capsule):
        raise BufferError(f"{who}: __dlpack__() returned {type(capsule).__name__}, not a "
                          f"capsule")
    name = PyCapsule_GetName(capsule)
    if _streq_name(name, b"dltensor_versioned"):
        vt = <DLManagedTensorVersioned*>PyCapsule_GetPointer(capsule, name)
        PyCapsule_SetName(capsule, b"used_dltensor_versioned")
        v._managed = vt
        v._versioned = True
        _read_versioned(v, vt, who)
    elif _streq_name(name, b"dltensor"):
        t = &(<DLManagedTensor*>PyCapsule_GetPointer(capsule, name)).dl_tensor
        PyCapsule_SetName(capsule, b"used_dltensor")
        v._managed = <void*>t  # the tensor is the first member of DLManagedTensor
        v._versioned = False
        _read_tensor(v, t, who)
    elif _streq_name(name, b"used_dltensor") or _streq_name(name, b"used_dltensor_versioned"):
        raise BufferError(f"{who}: the DLPack capsule was already consumed")
    else:
        raise BufferError(f"{who}: __dlpack__() returned a capsule named "
                          f"{(<bytes>name).decode('ascii', 'replace') if name else None!r}, "
                          f"not a DLPack tensor")
    v._exporting_obj = obj
    return 0


cdef object _dlpack_no_sync(object obj, str who):
    """``__dlpack__(stream=-1)``: no stream ordering. -1 is for device producers; a host
    producer may refuse it, and is then asked with its only stream, None. (Asking
    ``__dlpack_device__`` first would cost every device producer a second Python call.)"""
    cdef PyObject* r = _try_dlpack(obj, _NO_SYNC)
    if r != NULL:
        return steal(r)
    if PyErr_ExceptionMatches(AttributeError):
        raise_current()
    return _dlpack_host_retry(obj, who)


cdef object _dlpack_host_retry(object obj, str who):
    """With the producer's refusal of -1 pending: ask a host producer again with None; let a
    device producer's refusal through."""
    try:
        raise_current()
    except Exception:
        try:
            dev = PyObject_CallMethodNoArgs(obj, _DLPACK_DEVICE)
        except AttributeError:
            raise BufferError(f"{who}: {type(obj).__name__} does not support DLPack (no "
                              f"__dlpack_device__)") from None
        if type(dev) is not tuple or len(<tuple>dev) != 2:
            raise BufferError(f"{who}: __dlpack_device__() returned {dev!r}, not a "
                              f"(device_type, device_id) pair")
        if (<tuple>dev)[0] != kDLCPU:
            raise  # a device producer's own refusal
    return _call_dlpack(obj, None)


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
    else:
        raise BufferError(f"{who}: DLPack device type {dev_type} is not supported (CPU 1, "
                          f"CUDA 2, CUDA host 3 and CUDA managed 13 are)")
    v._dtype = _dl_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
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


# -- the DLPack C exchange API (DLPack 1.3) ------------------------------------------------------
#
# A producer type may carry ``__dlpack_c_exchange_api__``: a capsule named
# "dlpack_exchange_api" holding a table of C functions, process-lived. Through it a tensor is
# exported without a Python call and without stream synchronization; the consumer orders the
# producer's current stream itself. PyTorch has it; the table is looked up on the type per call
# (a type-dict lookup: no cache, so nothing to guard between threads).

cdef extern from *:
    """
    static PyObject* cuda_core_smv_type_attr(PyObject* obj, PyObject* name) {
    #if PY_VERSION_HEX >= 0x030D0000
        PyObject* r = NULL;
        if (PyObject_GetOptionalAttr((PyObject*)Py_TYPE(obj), name, &r) < 0) return NULL;
        if (r == NULL) { r = Py_None; Py_INCREF(r); }
        return r;
    #else
        /* The type's MRO dicts, without raising (and clearing) AttributeError for the
           many types that have no table. */
        PyObject* r = _PyType_Lookup(Py_TYPE(obj), name);
        if (r == NULL) r = Py_None;
        Py_INCREF(r);
        return r;
    #endif
    }
    """
    # A new reference: the attribute on type(obj), or None.
    object _type_attr "cuda_core_smv_type_attr"(object obj, object name)


cdef str _EXCHANGE_API = sys.intern("__dlpack_c_exchange_api__")
cdef str _CAI = sys.intern("__cuda_array_interface__")


cdef int _protocol(object obj) except -1:
    """Which protocol from_any_interface takes: 1 for DLPack (``obj`` has ``__dlpack__``), 2 for
    the CUDA Array Interface, 0 for neither. The type is asked first: ``hasattr`` on an instance
    runs a class's ``__getattr__`` when it fails (Numba's device arrays: about 1.7 us) and
    evaluates an interface property (which the view then reads once more)."""
    if type(obj) is _ndarray or _type_attr(obj, _DLPACK) is not None:
        return 1
    if _type_attr(obj, _CAI) is not None:
        return 2
    if hasattr(obj, _DLPACK):  # instance attributes
        return 1
    if hasattr(obj, _CAI):
        return 2
    return 0


cdef const DLPackExchangeAPI* _exchange_api(object obj) except? NULL:
    """The producer type's exchange table of major version 1, or NULL."""
    cdef const DLPackExchangeAPIHeader* h
    table = _type_attr(obj, _EXCHANGE_API)
    if table is None or not PyCapsule_CheckExact(table):
        return NULL
    if not _streq_name(PyCapsule_GetName(table), b"dlpack_exchange_api"):
        return NULL
    h = <const DLPackExchangeAPIHeader*>PyCapsule_GetPointer(table, b"dlpack_exchange_api")
    # A newer major version links to the older tables it still provides.
    while h != NULL and h.version.major != DLPACK_MAJOR_VERSION:
        h = h.prev_api
    if h == NULL:
        return NULL
    return <const DLPackExchangeAPI*>h


cdef int _init_exchange(StridedMemoryView v, object obj, const DLPackExchangeAPI* api,
                        object stream, str who) except -1:
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
    if device and stream != -1:
        # What __dlpack__(stream=consumer) would do inside the producer: the consumer's
        # stream waits for the work queued so far on the producer's current stream.
        if api.current_work_stream(t.device.device_type, t.device.device_id, &producer) != 0:
            return raise_current()
        _order_streams(<size_t>producer, <size_t>PyLong_AsUnsignedLongLongMask(stream),
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
    cdef Py_ssize_t i, k = -1, isz
    for i in range(_NCODES * _NSIZES):
        if <PyObject*>PyTuple_GET_ITEM(_DTYPES, i) == descr:
            k = i
            break
    if k < 0:
        return False
    isz = (<Py_ssize_t>1) << (k % _NSIZES)
    for i in range(nd):
        if strides[i] % isz:
            return False
    # NumPy exports no strides for a 0-d array, and before 2.4 none for a C-contiguous one.
    _read_ndarray(v, obj, <object>descr, isz, nd > 0 and (
        _NUMPY_C_STRIDES or not (PyArray_FLAGS(a) & NPY_ARRAY_C_CONTIGUOUS)))
    return True


# -- CUDA Array Interface and the array interface ------------------------------------------------

cdef inline object _get(object d, str key):
    cdef PyObject* p = PyDict_GetItemWithError(d, key)
    if p == NULL:
        return None
    return <object>p


cdef object _interface(object obj, str attr, str who):
    try:
        d = getattr(obj, attr)
    except AttributeError:
        raise BufferError(f"{who}: {type(obj).__name__} has no {attr}") from None
    if type(d) is not dict:
        raise TypeError(f"{who}: {attr} must be a dict, not {type(d).__name__}")
    return d


cdef int _read_interface(StridedMemoryView v, object d, object obj, str who) except -1:
    """The keys both interfaces share: shape, typestr (descr), data, strides, mask."""
    cdef object shape = _get(d, _K_SHAPE)
    cdef object data = _get(d, _K_DATA)
    cdef object typestr = _get(d, _K_TYPESTR)
    if shape is None or typestr is None or data is None:
        raise TypeError(f"{who}: the interface lacks 'shape', 'typestr' or 'data'")
    if _get(d, _K_MASK) is not None:
        raise BufferError(f"{who}: masked arrays ('mask') are not supported")
    if type(data) is not tuple or len(<tuple>data) != 2:
        raise BufferError(f"{who}: 'data' must be a (pointer, read_only) tuple, got "
                          f"{type(data).__name__}")
    ptr, ro = <tuple>data
    if type(ptr) is not int:
        raise TypeError(f"{who}: the data pointer must be an int, not {type(ptr).__name__}")
    v._dtype = _typestr_dtype(typestr, d, who, &v._itemsize)
    if v._itemsize <= 0:
        raise TypeError(f"{who}: elements of {v._itemsize} bytes ({v._dtype}) cannot be viewed")
    _set_dims(v, shape, _get(d, _K_STRIDES), v._itemsize, who, TypeError)
    v._ptr = <intptr_t>(<uintptr_t>PyLong_AsUnsignedLongLongMask(ptr))
    v._readonly = bool(ro)
    v._exporting_obj = obj
    return 0



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
    d = _interface(obj, "__array_interface__", who)
    _read_interface(v, d, obj, who)
    v._device_id = -1
    v._device_accessible = False
    return 0


cdef int _init_cai(StridedMemoryView v, object obj, object stream_ptr) except -1:
    cdef str who = "StridedMemoryView.from_cuda_array_interface()"
    cdef object consumer = _stream_int(stream_ptr, who)
    cdef object producer
    d = _interface(obj, "__cuda_array_interface__", who)
    _read_interface(v, d, obj, who)
    v._device_accessible = True
    producer = _get(d, _K_STREAM)
    if producer is not None:
        if type(producer) is not int:
            raise TypeError(f"{who}: the interface's 'stream' must be an int or None, not "
                            f"{type(producer).__name__}")
        if producer == 0:
            raise BufferError(f"{who}: the interface's 'stream' is 0, which the CUDA Array "
                              f"Interface forbids (ambiguous)")
    ensure_driver()
    v._device_id = _pointer_device(<CUdeviceptr>v._ptr, who)
    if producer is not None and consumer != -1:
        _order_streams(<size_t>PyLong_AsUnsignedLongLongMask(producer),
                       <size_t>PyLong_AsUnsignedLongLongMask(consumer), v._device_id)
    return 0


cdef int _pointer_device(CUdeviceptr ptr, str who) except -2:
    """The device of a device pointer; for the null pointer of an empty array, the current
    context's device (or 0)."""
    cdef int ordinal = -1
    cdef CUresult err
    cdef cydriver.CUdevice dev
    if ptr != 0:
        # A lookup in the driver's address map: shorter than releasing the GIL would be.
        err = cydriver.cuPointerGetAttribute(
            &ordinal, cydriver.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr)
        if err != CUDA_SUCCESS:
            raise BufferError(f"{who}: the driver does not know the data pointer 0x{ptr:x} "
                              f"as device, pinned or managed memory (CUresult {<int>err})")
        return ordinal
    if cydriver.cuCtxGetDevice(&dev) == CUDA_SUCCESS:
        return <int>dev
    return 0


cdef inline bint _same_stream(size_t a, size_t b) noexcept:
    # 0 and CU_STREAM_LEGACY both name the legacy default stream.
    if a == 0:
        a = <size_t>cydriver.CU_STREAM_LEGACY
    if b == 0:
        b = <size_t>cydriver.CU_STREAM_LEGACY
    return a == b


cdef int _order_streams(size_t producer, size_t consumer, int device_id) except -1:
    """Make the consumer's stream wait for the work queued so far on the producer's."""
    cdef CUcontext ctx = NULL
    cdef CUcontext cur = NULL
    cdef cydriver.CUevent event = NULL
    cdef CUresult err = CUDA_SUCCESS
    cdef int pushed = 0, pushed_primary = 0
    if _same_stream(producer, consumer):
        return 0
    # The event must be made in the producer stream's context. The special handles (legacy
    # and per-thread default streams) resolve against the current context; with none current,
    # the device's primary context stands in.
    HANDLE_RETURN(cydriver.cuCtxGetCurrent(&cur))
    if cur == NULL:
        cur = primary_context(device_id)._handle
        with nogil:
            pushed_primary = push_if_needed(cur)
    try:
        with nogil:
            if producer <= <size_t>cydriver.CU_STREAM_PER_THREAD:
                ctx = cur  # 0, 1 and 2 name the default streams of the current context
            else:
                err = cydriver.cuStreamGetCtx(<CUstream>producer, &ctx)
            if err == CUDA_SUCCESS:
                pushed = push_if_needed(ctx)
                err = cydriver.cuEventCreate(&event, cydriver.CU_EVENT_DISABLE_TIMING)
                if err == CUDA_SUCCESS:
                    err = cydriver.cuEventRecord(event, <CUstream>producer)
                    if err == CUDA_SUCCESS:
                        err = cydriver.cuStreamWaitEvent(<CUstream>consumer, event, 0)
                    # Destroying right after the wait is safe: the driver keeps what it needs.
                    cydriver.cuEventDestroy(event)
                if pushed:
                    pop_pushed()
    finally:
        if pushed_primary:
            with nogil:
                pop_pushed()
    return HANDLE_RETURN(err)


# -- the decorator -------------------------------------------------------------------------------

class _StridedMemoryViewProxy:
    """What a decorated function receives for a chosen argument: ``view(stream_ptr)`` makes the
    :class:`StridedMemoryView`."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def view(self, stream_ptr=None):
        """A :class:`StridedMemoryView` of the argument (``from_any_interface``)."""
        if type(self.obj) is StridedMemoryView:
            return self.obj
        return StridedMemoryView.from_any_interface(self.obj, stream_ptr)

    def __repr__(self):
        return f"<StridedMemoryView proxy of {type(self.obj).__name__}>"


def args_viewable_as_strided_memory(arg_indices):
    """Decorator: the positional arguments at ``arg_indices`` reach the function as proxies
    whose ``view(stream_ptr)`` returns a :class:`StridedMemoryView` of the argument.

    Parameters
    ----------
    arg_indices : tuple of int
        Indices of positional arguments; an index beyond the arguments of a call is a
        ``TypeError`` at that call.

    Examples
    --------
    ::

        @args_viewable_as_strided_memory((1,))
        def my_func(arg0, arg1, arg2, stream: Stream):
            view = arg1.view(stream.handle)   # any DLPack or CAI object
            assert isinstance(view, StridedMemoryView)
    """
    if not isinstance(arg_indices, tuple):
        raise TypeError(f"args_viewable_as_strided_memory(): arg_indices must be a tuple of "
                        f"ints, not {type(arg_indices).__name__}")
    for i in arg_indices:
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"args_viewable_as_strided_memory(): arg_indices must be a tuple "
                            f"of ints, got {type(i).__name__}")
    indices = arg_indices

    def decorator(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            args = list(args)
            n = len(args)
            for i in indices:
                if not -n <= i < n:
                    raise TypeError(f"{func.__name__}(): argument {i} is to be viewed as "
                                    f"strided memory but only {n} positional arguments were "
                                    f"given")
                args[i] = _StridedMemoryViewProxy(args[i])
            return func(*args, **kwargs)
        return wrapped
    return decorator
