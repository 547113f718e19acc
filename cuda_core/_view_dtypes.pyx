"""The element types of views: the NumPy dtype of a DLPack type code (``dl_dtype``) or of an
array-interface type string (``typestr_dtype``), and the DLPack type of a dtype (``dl_code``,
for the export).

The common dtypes come from a table filled once, at import, and never written again, so that
free-threaded interpreters read it without a lock; type strings are parsed in C.
"""

import numpy

from cpython.ref cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM

__all__ = []


cdef extern from *:
    """
    /* The characters of an ASCII str, in place; NULL (and no error) for any other str. */
    static inline const char* cuda_core_smv_ascii(PyObject* s, Py_ssize_t* n) {
        if (!PyUnicode_IS_ASCII(s)) return NULL;
        *n = PyUnicode_GET_LENGTH(s);
        return (const char*)PyUnicode_DATA(s);
    }
    """
    const char* _ascii "cuda_core_smv_ascii"(object s, Py_ssize_t* n) noexcept


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

cdef str _K_DESCR = "descr"


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


cdef inline Py_ssize_t _table_index(object descr) noexcept:
    """Where the table holds ``descr``, that very object, else -1 (also for None, which
    fills the table's empty slots). NumPy's own dtypes of the table's types are the table's
    objects."""
    cdef Py_ssize_t i
    if descr is None:
        return -1
    for i in range(_NCODES * _NSIZES):
        if <PyObject*>PyTuple_GET_ITEM(_DTYPES, i) == <PyObject*>descr:
            return i
    return -1


cdef Py_ssize_t table_itemsize(object descr) noexcept:
    """The element size of ``descr`` (a ``numpy.dtype``) when the table holds that very
    object, else 0: such a dtype is one DLPack can express, in native byte order."""
    cdef Py_ssize_t i = _table_index(descr)
    return (<Py_ssize_t>1) << (i % _NSIZES) if i >= 0 else 0


cdef int table_dl_code(object descr, int* code, int* bits) noexcept:
    """DLPack's ``(code, bits)`` of ``descr`` when the table holds that very object (a dtype
    DLPack can express, in native byte order): 1, else 0. ``dtype.name``, which NumPy 2 builds
    in Python on each read, is slow (benchmarks/README.md)."""
    cdef Py_ssize_t i = _table_index(descr)
    if i < 0:
        return 0
    code[0] = <int>(i // _NSIZES)
    bits[0] = 8 << (i % _NSIZES)
    return 1


cdef object _bfloat16():
    try:
        import ml_dtypes
    except ImportError:
        raise TypeError("StridedMemoryView: a bfloat16 tensor needs the ml_dtypes package for "
                        "its NumPy dtype; install it (pip install ml_dtypes)") from None
    return numpy.dtype(ml_dtypes.bfloat16)


cdef object dl_dtype(int code, int bits, int lanes):
    """The NumPy dtype of a DLPack element type; TypeError when there is none."""
    cdef int s
    if lanes != 1:
        raise TypeError(f"StridedMemoryView: DLPack vector element types (lanes={lanes}) are "
                        f"not supported")
    if code == _kDLBfloat and bits == 16:
        return _bfloat16()
    # bits >> 3 and bits & 7: Python's bits // 8 and bits % 8, without their sign branches.
    s = _size_index(bits >> 3) if (bits & 7) == 0 else -1
    if 0 <= code < _NCODES and s >= 0:
        # In range: code < _NCODES and s < _NSIZES index the table of _NCODES * _NSIZES.
        dt = <object>PyTuple_GET_ITEM(_DTYPES, code * _NSIZES + s)
        if dt is not None:
            return dt
    raise TypeError(f"StridedMemoryView: unsupported DLPack element type (code={code}, "
                    f"bits={bits}, lanes={lanes}); supported: bool, int8-64, uint8-64, "
                    f"float16/32/64, bfloat16, complex64/128")


cdef tuple dl_code(object dtype, str who):
    """The DLPack ``(code, bits)`` of a view's dtype (one lane, native byte order): what
    ``dl_dtype`` reads back."""
    cdef int code, bits
    if table_dl_code(dtype, &code, &bits):
        return (code, bits)
    if dtype is None:
        raise BufferError(f"{who}: the view was made with an itemsize only and has no dtype "
                          f"to export; make it with a dtype")
    kind = dtype.kind
    if kind not in "biufc" and dtype.name == "bfloat16":  # ml_dtypes'; .name is slow
        return (_kDLBfloat, 16)
    bits = 8 * dtype.itemsize
    if not dtype.isnative or dtype.fields is not None or dtype.subdtype is not None:
        kind = ""
    if kind == "b" and bits == 8:
        return (_kDLBool, 8)
    if (kind == "i" or kind == "u") and bits in (8, 16, 32, 64):
        return (0 if kind == "i" else 1, bits)
    if kind == "f" and bits in (16, 32, 64):
        return (2, bits)
    if kind == "c" and bits in (64, 128):
        return (_kDLComplex, bits)
    raise BufferError(f"{who}: dtype {dtype} has no DLPack element type (bool, int8-64, "
                      f"uint8-64, float16/32/64, bfloat16, complex64/128 in native byte order "
                      f"have)")


cdef object typestr_dtype(object typestr, object d, str who, Py_ssize_t* itemsize):
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
    descr = (<dict>d).get(_K_DESCR)  # the interface dict, an exact dict
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
