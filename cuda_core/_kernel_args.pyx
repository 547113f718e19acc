"""The param holder: Python kernel arguments packed into ``kernelParams`` at C level.

Each argument is classified by its exact type first (a chain of pointer compares against type
objects cached at import) and by ``isinstance`` only when no exact type matches, so subclasses
still work. Values converted from Python objects (``int``, ``float``, ``bool``, ``complex``,
device pointers) go into 16-byte slots of one aligned arena that lives inside the
:c:type:`ParamHolder` on the caller's stack; NumPy scalars and ctypes objects are not copied:
``kernelParams`` points into the objects, which the caller's argument tuple keeps alive until
the driver call has returned (the driver copies the values during the call). Up to
``INLINE_ARGS`` arguments need no heap; beyond that one block holds pointers, sizes and slots,
released by :c:func:`holder_release` on every path, failures included.

A Python ``int`` is a pointer-sized value (``intptr_t``/``uintptr_t``), as in cuda.core: device
pointers are ints throughout the CUDA Python ecosystem. The launcher compares every argument's
size with the kernel's parameter layout. Where they differ, a Python ``int`` or ``bool`` for an
integer parameter of 1, 2 or 4 bytes (a ``bool`` for 8 too), or for any parameter of a kernel
whose types are not known (``extern "C"``), is packed again at the parameter's width, if its
value fits the declared type (either signedness where the type is not known), and
a Python ``float`` for a declared ``float`` as float32: the value the kernel declared, never its
low bytes. Any other mismatch is an error, never garbage. Both are decided from the layout and
the declared types, read once per kernel; a launch whose sizes match pays nothing for them.

Packing an argument also tells what kind of value it is (``ARG_*`` in ``_param_types.pxd``: a
pointer, a Python int, an integer, a floating-point value, a complex value, raw bytes). Where
the kernel's declared parameter types are known (a C++ kernel with a mangled name), each
parameter has a mask of the kinds it accepts, and a kind outside it is a ``TypeError``: a
``float`` for a pointer parameter would otherwise pass the size check and become a wild
address. Without declared types (``extern "C"``) there is no mask and no per-argument cost.
"""

import ctypes
from operator import index as _index

import numpy

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_AsUnsignedLongLong
from cpython.object cimport Py_TYPE
from cpython.ref cimport PyObject
from libc.math cimport isfinite
from libc.stdint cimport int8_t, int16_t, int32_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from cuda_core._memory._buffer cimport Buffer
from cuda_core._memoryview cimport StridedMemoryView
from cuda_core._tensor_map cimport TensorMapDescriptor
from cuda_core._param_types cimport (ACCEPTS_ANY, ACCEPTS_BITS, ACCEPTS_FLOAT, ACCEPTS_INTEGER,
                                     ACCEPTS_POINTER, ARG_COMPLEX, ARG_FLOAT, ARG_INT_OR_POINTER,
                                     ARG_INTEGER, ARG_OPAQUE, ARG_POINTER, PARAM_BOOL,
                                     PARAM_UNSIGNED, accepts_words, make_table, table_type)
from cuda_core.graph._condition cimport GraphCondition

__all__ = []


class KernelArgumentOverflowError(OverflowError, ValueError):
    """A Python int (or float) kernel argument whose value does not fit the parameter it is
    packed for: both an ``OverflowError`` and a ``ValueError``."""


cdef extern from *:
    """
    #define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
    #include <numpy/ndarraytypes.h>
    #include <numpy/arrayscalars.h>
    """
    ctypedef struct PyBoolScalarObject:
        unsigned char obval
    ctypedef struct PyByteScalarObject:
        signed char obval
    ctypedef struct PyShortScalarObject:
        short obval
    ctypedef struct PyIntScalarObject:
        int obval
    ctypedef struct PyLongScalarObject:
        long obval
    ctypedef struct PyLongLongScalarObject:
        long long obval
    ctypedef struct PyUByteScalarObject:
        unsigned char obval
    ctypedef struct PyUShortScalarObject:
        unsigned short obval
    ctypedef struct PyUIntScalarObject:
        unsigned int obval
    ctypedef struct PyULongScalarObject:
        unsigned long obval
    ctypedef struct PyULongLongScalarObject:
        unsigned long long obval
    ctypedef struct PyHalfScalarObject:
        unsigned short obval
    ctypedef struct PyFloatScalarObject:
        float obval
    ctypedef struct PyDoubleScalarObject:
        double obval
    ctypedef struct npy_cfloat_pair "npy_cfloat":
        pass
    ctypedef struct npy_cdouble_pair "npy_cdouble":
        pass
    ctypedef struct PyCFloatScalarObject:
        npy_cfloat_pair obval
    ctypedef struct PyCDoubleScalarObject:
        npy_cdouble_pair obval


cdef extern from "Python.h":
    PyObject** PySequence_Fast_ITEMS(object sequence)


# Type objects, cached once: the hot path compares pointers against these.
cdef type _np_bool = numpy.bool_
cdef type _np_int8 = numpy.int8
cdef type _np_int16 = numpy.int16
cdef type _np_int32 = numpy.int32
cdef type _np_long = numpy.dtype("l").type          # int64 on LP64 platforms
cdef type _np_longlong = numpy.longlong
cdef type _np_uint8 = numpy.uint8
cdef type _np_uint16 = numpy.uint16
cdef type _np_uint32 = numpy.uint32
cdef type _np_ulong = numpy.dtype("L").type
cdef type _np_ulonglong = numpy.ulonglong
cdef type _np_float16 = numpy.float16
cdef type _np_float32 = numpy.float32
cdef type _np_float64 = numpy.float64
cdef type _np_complex64 = numpy.complex64
cdef type _np_complex128 = numpy.complex128
cdef type _np_generic = numpy.generic
cdef type _np_ndarray = numpy.ndarray
cdef tuple _ctypes_data = (ctypes._SimpleCData, ctypes.Structure, ctypes.Union, ctypes.Array)
cdef object _ctypes_simple = ctypes._SimpleCData
cdef object _ctypes_pointer = ctypes._Pointer

cdef object _UINTPTR_MAX = (1 << 64) - 1

# The kind of a NumPy scalar outside the fast path, by its dtype's kind character, and of a
# ctypes simple value, by its type code (ctypes' _type_).
cdef dict _NUMPY_KINDS = {"b": ARG_INTEGER, "i": ARG_INTEGER, "u": ARG_INTEGER,
                          "m": ARG_INTEGER, "M": ARG_INTEGER, "f": ARG_FLOAT, "c": ARG_COMPLEX}
cdef dict _CTYPES_KINDS = dict.fromkeys("bBhHiIlLqQ?cuv", ARG_INTEGER)
_CTYPES_KINDS.update(dict.fromkeys("fdg", ARG_FLOAT))
_CTYPES_KINDS.update(dict.fromkeys("zZPOX", ARG_POINTER))  # c_char_p, c_void_p, py_object...
# A ctypes integer of pointer width (c_uint64, c_size_t, c_ulong, ...) is how FFI code holds an
# address (numba-cuda's device_ctypes_pointer is a c_ulong): it serves pointers as an int does.
for _code, _ctype in (("l", ctypes.c_long), ("L", ctypes.c_ulong),
                      ("q", ctypes.c_longlong), ("Q", ctypes.c_ulonglong)):
    if ctypes.sizeof(_ctype) == ctypes.sizeof(ctypes.c_void_p):
        _CTYPES_KINDS[_code] = ARG_INT_OR_POINTER


cdef int holder_init(ParamHolder* h, Py_ssize_t count) except -1:
    cdef size_t each = sizeof(void*) + sizeof(size_t) + sizeof(cuda_core_arg_slot)
    h.count = count
    h.heap = NULL
    if count <= INLINE_ARGS:
        h.ptrs = h.inline_ptrs
        h.sizes = h.inline_sizes
        h.slots = h.inline_slots
        return 0
    # Slots first: the block from malloc is aligned for any fundamental type, and 16 * count
    # keeps the pointer and size arrays after them aligned too.
    h.heap = malloc(each * count)
    if h.heap == NULL:
        raise MemoryError(f"cannot allocate the argument block for {count} kernel arguments")
    h.slots = <cuda_core_arg_slot*>h.heap
    h.ptrs = <void**>(<char*>h.heap + sizeof(cuda_core_arg_slot) * count)
    h.sizes = <size_t*>(<char*>h.ptrs + sizeof(void*) * count)
    return 0


cdef void holder_release(ParamHolder* h) noexcept:
    if h.heap != NULL:
        free(h.heap)
        h.heap = NULL


cdef inline int _put_u64(ParamHolder* h, Py_ssize_t i, uint64_t value) except -1:
    memcpy(h.slots[i].bytes, &value, 8)
    h.ptrs[i] = h.slots[i].bytes
    h.sizes[i] = 8
    return 0


cdef inline int _put_obval(ParamHolder* h, Py_ssize_t i, void* where, size_t size) except -1:
    h.ptrs[i] = where
    h.sizes[i] = size
    return 0


cdef inline int _put_double(ParamHolder* h, Py_ssize_t i, double d) except -1:
    memcpy(h.slots[i].bytes, &d, 8)
    h.ptrs[i] = h.slots[i].bytes
    h.sizes[i] = 8
    return 0


cdef inline int _put_complex(ParamHolder* h, Py_ssize_t i, double complex z) except -1:
    memcpy(h.slots[i].bytes, &z, 16)
    h.ptrs[i] = h.slots[i].bytes
    h.sizes[i] = 16
    return 0


cdef int _put_int(ParamHolder* h, Py_ssize_t i, object value) except -1:
    """A Python int as a pointer-sized value: -2**63 <= value < 2**64. One call into CPython on
    the common path (kept small: it runs on every launch that passes an int)."""
    cdef int overflow = 0
    cdef long long signed_value = PyLong_AsLongLongAndOverflow(value, &overflow)
    if overflow == 0:
        return _put_u64(h, i, <uint64_t>signed_value)
    return _put_big_int(h, i, value)


cdef int _put_big_int(ParamHolder* h, Py_ssize_t i, object value) except -1:
    """An int beyond int64: the uint64 range is still a valid pointer-sized value."""
    if value > 0 and value <= _UINTPTR_MAX:
        return _put_u64(h, i, PyLong_AsUnsignedLongLong(value))
    raise KernelArgumentOverflowError(f"kernel argument {i}: int {value} does not fit in a "
                                      f"pointer-sized (64-bit) parameter")


cdef int _put_buffer_protocol(ParamHolder* h, Py_ssize_t i, object arg) except -1:
    """NumPy scalars outside the fast path and ctypes objects: point at their own bytes (kept
    alive by the caller's argument tuple; Py_buffer for these owns nothing that must outlive
    it). Returns the argument's kind."""
    cdef Py_buffer view
    PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE)
    h.ptrs[i] = view.buf
    h.sizes[i] = <size_t>view.len
    PyBuffer_Release(&view)
    if isinstance(arg, _np_generic):
        return _NUMPY_KINDS.get(arg.dtype.kind, ARG_OPAQUE)  # structured, bytes, str: raw
    if isinstance(arg, _ctypes_pointer):
        return ARG_POINTER
    if isinstance(arg, _ctypes_simple):
        return _CTYPES_KINDS.get(getattr(type(arg), "_type_", None), ARG_OPAQUE)
    return ARG_OPAQUE  # ctypes Structure, Union, Array: the caller wrote the bytes


cdef int _put_device_array(ParamHolder* h, Py_ssize_t i, object arg) except -1:
    """A ``__cuda_array_interface__`` object as its data pointer; returns ARG_POINTER."""
    cai = arg.__cuda_array_interface__
    try:
        ptr = cai["data"][0]
    except (TypeError, KeyError, IndexError):
        raise TypeError(f"kernel argument {i} ({type(arg).__name__}): malformed "
                        f"__cuda_array_interface__ (no 'data' pointer)") from None
    if type(ptr) is not int:
        try:
            ptr = _index(ptr)  # a NumPy integer, for instance
        except TypeError:
            raise TypeError(f"kernel argument {i} ({type(arg).__name__}): the "
                            f"__cuda_array_interface__ 'data' pointer must be an int, not "
                            f"{type(ptr).__name__}") from None
    _put_int(h, i, ptr)
    return ARG_POINTER


cdef inline int _put_buffer(ParamHolder* h, Py_ssize_t i, Buffer buf) except -1:
    if buf._closed:
        raise ValueError(f"kernel argument {i} is a closed {type(buf).__name__}: its memory "
                         f"may already be freed")
    return _put_obval(h, i, &buf._ptr, 8)  # read in place: the caller holds the Buffer


cdef inline int _put_view(ParamHolder* h, Py_ssize_t i, StridedMemoryView view) except -1:
    if not view._device_accessible:
        raise TypeError(f"kernel argument {i} is a StridedMemoryView of host memory that no "
                        f"device can access (device_id -1): a kernel cannot read it. View "
                        f"device, pinned or managed memory")
    # Its address, read in place: the caller holds the view, which keeps the memory alive.
    return _put_obval(h, i, &view._ptr, 8)


cdef int _pack_slow(ParamHolder* h, Py_ssize_t i, object arg) except -1:
    """Everything that is not one of the exact types of the fast path; returns the argument's
    kind (ARG_*)."""
    if isinstance(arg, Buffer):  # ManagedBuffer and other subclasses
        _put_buffer(h, i, <Buffer>arg)
        return ARG_POINTER
    if isinstance(arg, StridedMemoryView):
        _put_view(h, i, <StridedMemoryView>arg)
        return ARG_POINTER
    if isinstance(arg, bool):
        h.slots[i].bytes[0] = 1 if arg else 0
        h.ptrs[i] = h.slots[i].bytes
        h.sizes[i] = 1
        return ARG_INTEGER
    if isinstance(arg, int):  # int subclasses such as IntEnum
        _put_int(h, i, int(arg))
        return ARG_INT_OR_POINTER
    # Written here rather than through _pack_one, so that each copy of _pack_one keeps a single
    # caller (see _Copy).
    if isinstance(arg, float):
        _put_double(h, i, float(arg))
        return ARG_FLOAT
    if isinstance(arg, complex):
        _put_complex(h, i, complex(arg))
        return ARG_COMPLEX
    if isinstance(arg, GraphCondition):
        # A conditional handle is an integer in C (cudaGraphConditionalHandle is an unsigned
        # long long), so an integer parameter takes it and a pointer parameter does not.
        _put_u64(h, i, (<GraphCondition>arg)._handle)
        return ARG_INTEGER
    if isinstance(arg, _np_ndarray):
        if hasattr(arg, "__cuda_array_interface__"):
            return _put_device_array(h, i, arg)
        raise TypeError(
            f"kernel argument {i} is a host NumPy array: a kernel cannot read host memory "
            f"through it. Pass device memory (a Buffer, a CuPy array, a PyTorch tensor), or a "
            f"pointer as an int; for a scalar parameter pass a NumPy scalar such as "
            f"numpy.float32(x)")
    if isinstance(arg, _np_generic) or isinstance(arg, _ctypes_data) \
            or isinstance(arg, _ctypes_pointer):
        return _put_buffer_protocol(h, i, arg)
    if hasattr(arg, "__cuda_array_interface__"):
        return _put_device_array(h, i, arg)
    # Last, so that no other type pays for this check (device arrays of other libraries come
    # through the line above).
    if isinstance(arg, TensorMapDescriptor):
        # A CUtensorMap, passed by value: kernelParams points at the descriptor's own 128
        # bytes (the caller holds it). Raw bytes to the kind check; the size check tells a
        # CUtensorMap parameter from anything else (where the compiler put the parameter is
        # its business: the driver's offsets are not the 64-byte alignment it has).
        _put_obval(h, i, (<TensorMapDescriptor>arg)._map, 128)
        return ARG_OPAQUE
    raise TypeError(
        f"kernel argument {i} has unsupported type {type(arg).__module__}."
        f"{type(arg).__qualname__}: pass a Buffer, a StridedMemoryView, a device array (CUDA "
        f"Array Interface), a TensorMapDescriptor, an "
        f"int (pointer-sized), a bool, a float (double), a complex, a NumPy scalar, or a "
        f"ctypes scalar or structure")


# Two copies of _pack_one, one for each loop of pack_args: Cython emits one C function per type
# of the (unused) first parameter. With a single copy and two callers the C compiler stops
# inlining it into the loops, and every argument pays for a call (the figure is in
# benchmarks/README.md, "Figures behind design choices"); each copy has one caller and is
# inlined.
ctypedef fused _Copy:
    char   # the loop without declared types
    short  # the loop that checks argument kinds


cdef inline int _pack_one(_Copy copy, ParamHolder* h, Py_ssize_t i, object arg) except -1:
    """Pack argument ``i``; returns its kind (ARG_*), a constant in each branch."""
    # The type as a plain pointer: the compares below take no references.
    cdef PyObject* t = <PyObject*>Py_TYPE(arg)
    if t == <PyObject*>Buffer:
        _put_buffer(h, i, <Buffer>arg)
        return ARG_POINTER
    if t == <PyObject*>int:
        _put_int(h, i, arg)
        return ARG_INT_OR_POINTER
    if t == <PyObject*>StridedMemoryView:
        _put_view(h, i, <StridedMemoryView>arg)
        return ARG_POINTER
    if t == <PyObject*>float:
        _put_double(h, i, arg)
        return ARG_FLOAT
    if t == <PyObject*>_np_float32:
        _put_obval(h, i, &(<PyFloatScalarObject*>arg).obval, 4)
        return ARG_FLOAT
    if t == <PyObject*>_np_int32:
        _put_obval(h, i, &(<PyIntScalarObject*>arg).obval, 4)
        return ARG_INTEGER
    if t == <PyObject*>_np_long:
        _put_obval(h, i, &(<PyLongScalarObject*>arg).obval, sizeof(long))
        return ARG_INTEGER
    if t == <PyObject*>_np_ulong:
        _put_obval(h, i, &(<PyULongScalarObject*>arg).obval, sizeof(long))
        return ARG_INTEGER
    if t == <PyObject*>_np_float64:
        _put_obval(h, i, &(<PyDoubleScalarObject*>arg).obval, 8)
        return ARG_FLOAT
    if t == <PyObject*>_np_uint32:
        _put_obval(h, i, &(<PyUIntScalarObject*>arg).obval, 4)
        return ARG_INTEGER
    if t == <PyObject*>bool:
        h.slots[i].bytes[0] = 1 if arg is True else 0
        h.ptrs[i] = h.slots[i].bytes
        h.sizes[i] = 1
        return ARG_INTEGER
    if t == <PyObject*>_np_float16:
        _put_obval(h, i, &(<PyHalfScalarObject*>arg).obval, 2)
        return ARG_FLOAT
    if t == <PyObject*>_np_int16:
        _put_obval(h, i, &(<PyShortScalarObject*>arg).obval, 2)
        return ARG_INTEGER
    if t == <PyObject*>_np_uint16:
        _put_obval(h, i, &(<PyUShortScalarObject*>arg).obval, 2)
        return ARG_INTEGER
    if t == <PyObject*>_np_int8:
        _put_obval(h, i, &(<PyByteScalarObject*>arg).obval, 1)
        return ARG_INTEGER
    if t == <PyObject*>_np_uint8:
        _put_obval(h, i, &(<PyUByteScalarObject*>arg).obval, 1)
        return ARG_INTEGER
    if t == <PyObject*>_np_bool:
        _put_obval(h, i, &(<PyBoolScalarObject*>arg).obval, 1)
        return ARG_INTEGER
    if t == <PyObject*>_np_longlong:
        _put_obval(h, i, &(<PyLongLongScalarObject*>arg).obval, 8)
        return ARG_INTEGER
    if t == <PyObject*>_np_ulonglong:
        _put_obval(h, i, &(<PyULongLongScalarObject*>arg).obval, 8)
        return ARG_INTEGER
    if t == <PyObject*>_np_complex64:
        _put_obval(h, i, &(<PyCFloatScalarObject*>arg).obval, 8)
        return ARG_COMPLEX
    if t == <PyObject*>_np_complex128:
        _put_obval(h, i, &(<PyCDoubleScalarObject*>arg).obval, 16)
        return ARG_COMPLEX
    if t == <PyObject*>complex:
        _put_complex(h, i, arg)
        return ARG_COMPLEX
    return _pack_slow(h, i, arg)


cdef int pack_args(ParamHolder* h, PyObject** items, const size_t* expected,
                   const unsigned char* accepts) except -1:
    """Pack the ``h.count`` objects at ``items`` (borrowed references, alive for the call)
    into ``h``. With ``expected``, compare each packed size with the kernel's parameter size
    on the way; with ``accepts`` (a parameter-type table of ``h.count`` parameters, see
    ``_param_types.pxd``), compare each argument's kind with what its parameter accepts. A
    kind mismatch is reported first: it says more than the sizes do."""
    cdef Py_ssize_t i
    cdef int kind
    if accepts == NULL:  # types unknown (extern "C"): the size-only loop, no per-argument cost
        for i in range(h.count):
            _pack_one(<char>0, h, i, <object>items[i])
            if expected != NULL and h.sizes[i] != expected[i]:
                _fit(h, i, <object>items[i], expected[i], NULL)
        return 0
    for i in range(h.count):
        kind = _pack_one(<short>0, h, i, <object>items[i])
        if not (accepts[i] & kind):
            _kind_mismatch(i, <object>items[i], kind, accepts, h.count,
                           expected[i] if expected != NULL else 0)
        if expected != NULL and h.sizes[i] != expected[i]:
            _fit(h, i, <object>items[i], expected[i], accepts)
    return 0


cdef int _fit(ParamHolder* h, Py_ssize_t i, object arg, size_t expected,
              const unsigned char* accepts) except -1:
    """Argument ``i`` packed to another size than its parameter's, ``expected``: a Python int
    or bool for an integer parameter (or any of an extern "C" kernel) is packed again at its
    width, a Python float for a declared ``float`` as float32; anything else is the size
    mismatch it is. ``accepts``: the kernel's parameter-type table, NULL where the types are
    not known."""
    cdef int param = accepts[i] if accepts != NULL else ACCEPTS_ANY
    cdef int mask = param & ACCEPTS_BITS
    # Python ints (an IntEnum's members too) and bools; not NumPy or ctypes scalars, whose
    # width is their own. For a parameter declared as an integer, or any of a kernel whose
    # types are not known (extern "C"); not for one a C++ kernel declares as another type of
    # unknown kind (__half, a struct, an enum), where the int's bits could be garbage.
    if isinstance(arg, int) and (mask == ACCEPTS_INTEGER or accepts == NULL):
        if expected == 1 or expected == 2 or expected == 4 or (expected == 8 and
                                                                type(arg) is bool):
            return _put_narrow_int(h, i, arg, <int>expected, param, accepts)
    elif type(arg) is float and expected == 4 and mask == ACCEPTS_FLOAT:
        return _put_float32(h, i, arg)
    return _size_mismatch(i, arg, h.sizes[i], expected, accepts != NULL)


cdef int _put_narrow_int(ParamHolder* h, Py_ssize_t i, object arg, int width, int param,
                         const unsigned char* accepts) except -1:
    """A Python int or bool at ``width`` bytes, if the declared type holds its value: bool 0
    or 1, an unsigned type 0 to 2**bits - 1, a signed one its two's-complement range, a type
    not known either (the kernel reads the same bytes for both)."""
    cdef int overflow = 0
    cdef long long value = PyLong_AsLongLongAndOverflow(arg, &overflow)
    cdef int bits = 8 * width
    cdef long long low = 0, high = 1  # a bool's (and an 8-byte bool argument's, 0 or 1)
    if width < 8 and not param & PARAM_BOOL:
        if param & PARAM_UNSIGNED:
            high = (1LL << bits) - 1
        elif (param & ACCEPTS_BITS) == ACCEPTS_INTEGER:
            low, high = -(1LL << (bits - 1)), (1LL << (bits - 1)) - 1
        else:
            low, high = -(1LL << (bits - 1)), (1LL << bits) - 1
    if overflow != 0 or value < low or value > high:
        _overflow(i, arg, width, param, accepts, h.count, low, high)
    # Through the type of the width, so the bytes are the value's on either endianness.
    if width == 1:
        (<int8_t*>h.slots[i].bytes)[0] = <int8_t>value
    elif width == 2:
        (<int16_t*>h.slots[i].bytes)[0] = <int16_t>value
    elif width == 4:
        (<int32_t*>h.slots[i].bytes)[0] = <int32_t>value
    else:
        (<uint64_t*>h.slots[i].bytes)[0] = <uint64_t>value
    h.ptrs[i] = h.slots[i].bytes
    h.sizes[i] = width
    return 0


cdef int _put_float32(ParamHolder* h, Py_ssize_t i, object arg) except -1:
    """A Python float for a declared ``float``: rounded to float32, unless it is finite and
    float32 cannot hold it (it would become an infinity)."""
    cdef double d = PyFloat_AS_DOUBLE(arg)
    cdef float f = <float>d
    if isfinite(d) and not isfinite(f):
        raise KernelArgumentOverflowError(
            f"kernel argument {i}: float {arg!r} does not fit parameter {i} (4 bytes, "
            f"declared 'float'): its magnitude is beyond float32's")
    memcpy(h.slots[i].bytes, &f, 4)
    h.ptrs[i] = h.slots[i].bytes
    h.sizes[i] = 4
    return 0


cdef int _overflow(Py_ssize_t i, object arg, int width, int param, const unsigned char* accepts,
                   Py_ssize_t count, long long low, long long high) except -1:
    if accepts != NULL and (param & ACCEPTS_BITS) == ACCEPTS_INTEGER:
        declared = f"declared '{table_type(accepts, count, i)}'"
    else:
        declared = "type not known, so either signedness"
    raise KernelArgumentOverflowError(
        f"kernel argument {i}: int {int(arg)} does not fit parameter {i} ({width} byte"
        f"{'s' if width != 1 else ''}, {declared}), which takes {low} to {high}")


cdef int _size_mismatch(Py_ssize_t i, object arg, size_t given, size_t expected,
                        bint typed) except -1:
    """``typed``: the kernel's parameter types are known (a C++ kernel)."""
    name = type(arg).__name__
    hint = ""
    if isinstance(arg, TensorMapDescriptor):
        hint = ("; a TensorMapDescriptor is a CUtensorMap passed by value: declare the "
                "parameter 'const __grid_constant__ CUtensorMap'")
    elif type(arg) is float and expected in (2, 4):
        hint = (f"; a Python float is a double unless the parameter is declared 'float'"
                + ("" if typed else " (this kernel's types are not known: extern \"C\")")
                + f": pass numpy.float{8 * expected}(x)")
    elif type(arg) is int:
        hint = f"; a Python int packs to 1, 2, 4 or 8 bytes: pass a scalar of {expected} bytes"
    raise TypeError(f"kernel argument {i}: {name} packs to {given} bytes but the kernel's "
                    f"parameter {i} is {expected} bytes{hint}")


cdef int _kind_mismatch(Py_ssize_t i, object arg, int kind, const unsigned char* accepts,
                        Py_ssize_t count, size_t expected) except -1:
    """Raise the TypeError for argument ``i``, whose kind its parameter does not accept;
    ``expected`` is the parameter's size in bytes, or 0 where it is not known."""
    cdef int mask = accepts[i] & ACCEPTS_BITS
    declared = table_type(accepts, count, i)
    if mask == ACCEPTS_POINTER:
        hint = ("pass a Buffer, a device array (CUDA Array Interface), or the device address "
                "as a Python int")
        if kind == ARG_INTEGER:
            hint += ", e.g. int(x)"
    elif mask == ACCEPTS_INTEGER:
        if declared == "bool":
            hint = "pass a bool, 0 or 1"
        elif expected in (1, 2, 4, 8):
            unsigned = "u" if accepts[i] & PARAM_UNSIGNED else ""
            hint = (f"pass a Python int or bool, or an integer of {expected} bytes, e.g. "
                    f"numpy.{unsigned}int{8 * expected}(x)")
        else:
            hint = "pass a NumPy or ctypes integer scalar of the parameter's width"
    elif mask == ACCEPTS_FLOAT:
        if expected == 4:
            hint = "pass a float or numpy.float32(x)"
        elif expected == 8:
            hint = "pass a float or numpy.float64(x)"
        elif expected == 2:
            hint = "pass numpy.float16(x)"
        else:
            hint = "pass a NumPy or ctypes floating-point scalar of the parameter's width"
    else:
        hint = "pass a value of the declared type"
    raise TypeError(f"kernel argument {i}: {type(arg).__name__} given for parameter {i} "
                    f"declared '{declared}' ({accepts_words(mask)}); {hint}")


def _packed_arguments(*args, declared=None, sizes=None):
    """Test hook: the bytes each argument packs to, exactly as the driver would read them.

    This is the single deliberate window into the packing, for tests of its layout and checks;
    it runs the same code as :func:`launch`. ``declared`` (one C++ type string per argument)
    checks each argument's kind as a kernel with those parameter types would; ``sizes`` (one
    size in bytes per argument) checks the packed sizes as a kernel's layout would.
    """
    cdef ParamHolder h
    cdef Py_ssize_t i, n = len(args)
    cdef size_t* expected = NULL
    cdef bytes table = None
    cdef const unsigned char* accepts = NULL
    if declared is not None:
        declared = list(declared)
        if len(declared) != n:
            raise ValueError(f"declared has {len(declared)} types for {n} arguments")
        table = make_table(declared)
        if table is not None:
            accepts = <const unsigned char*><const char*>table
    if sizes is not None:
        sizes = [_index(size) for size in sizes]
        if len(sizes) != n:
            raise ValueError(f"sizes has {len(sizes)} entries for {n} arguments")
    holder_init(&h, n)
    try:
        if sizes is not None:
            expected = <size_t*>malloc(max(n, 1) * sizeof(size_t))
            if expected == NULL:
                raise MemoryError()
            for i in range(n):
                expected[i] = sizes[i]
        pack_args(&h, PySequence_Fast_ITEMS(args), expected, accepts)
        return [(<char*>h.ptrs[i])[:h.sizes[i]] for i in range(h.count)]
    finally:
        free(expected)
        holder_release(&h)


cdef class PackedArguments:
    """Kernel arguments packed for a driver launch that the caller makes itself: :attr:`ptr` is
    the address of the ``void*`` array that ``cuLaunchKernel`` takes as ``kernelParams``.

    Each argument is packed at its own width, as :func:`launch` packs it for a kernel whose
    parameter sizes are not known (a Python ``int`` as a pointer-sized integer, a ``float`` as
    a double, a ``Buffer`` as its device pointer). The packed bytes, and the arguments they
    point into (NumPy and ctypes scalars), stay valid while this object lives. Compat mode
    serves it as ``cuda.core._kernel_arg_handler.ParamHolder``, whose contract it keeps.
    """

    cdef ParamHolder _h
    cdef tuple _args  # the arguments, which some of the packed pointers point into
    cdef bint _initialized

    def __cinit__(self, args):
        self._args = tuple(args)
        holder_init(&self._h, len(self._args))
        self._initialized = True
        pack_args(&self._h, PySequence_Fast_ITEMS(self._args), NULL, NULL)

    def __dealloc__(self):
        if self._initialized:
            holder_release(&self._h)

    @property
    def ptr(self):
        """The address of the packed ``void*[]`` (an array of no entries for no arguments,
        which the driver does not read)."""
        return <size_t>self._h.ptrs

    def __len__(self):
        return self._h.count

    def __repr__(self):
        return f"<PackedArguments of {self._h.count} argument(s) at {<size_t>self._h.ptrs:#x}>"
