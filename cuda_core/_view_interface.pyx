"""The two interface protocols a ``StridedMemoryView`` is made from: NumPy's array interface
(``__array_interface__``, the dict part; ``_memoryview`` reads a NumPy array's fields in place)
and the CUDA Array Interface v3 (``__cuda_array_interface__``, with its stream ordering).

Both give a dict of the same keys, read here in one pass into the view's fields. This module and
``_memoryview`` cimport each other, as ``_view_ops`` does: the class's constructors call these
readers, which fill the class's fields.
"""

cimport cython
from cpython.long cimport PyLong_AsUnsignedLongLongMask
from cpython.ref cimport PyObject
from libc.stdint cimport intptr_t, uintptr_t

from cuda.bindings.cydriver cimport CUdeviceptr

from cuda_core._checks import ProtocolMissingError
from cuda_core._driver cimport ensure_driver
from cuda_core._memory._dlpack_abi cimport kDLCUDA
from cuda_core._memoryview cimport StridedMemoryView, _set_dims
from cuda_core._view_driver cimport order_streams, pointer_device, stream_int
from cuda_core._view_dtypes cimport typestr_dtype

__all__ = []


cdef extern from "Python.h":
    PyObject* PyDict_GetItemWithError(object d, object key) except? NULL
    bint PyDict_Next(object d, Py_ssize_t* pos, PyObject** key, PyObject** value) noexcept
    Py_ssize_t PyDict_GET_SIZE(object d) noexcept


# The interface dicts' keys.
cdef str _K_SHAPE = "shape"
cdef str _K_TYPESTR = "typestr"
cdef str _K_DATA = "data"
cdef str _K_STRIDES = "strides"
cdef str _K_MASK = "mask"
cdef str _K_STREAM = "stream"
cdef str _K_VERSION = "version"
cdef str _K_DESCR = "descr"


cdef inline object _get(object d, str key):
    cdef PyObject* p = PyDict_GetItemWithError(d, key)
    if p == NULL:
        return None
    return <object>p


cdef object interface_dict(object obj, str attr, str who):
    try:
        d = getattr(obj, attr)
    except AttributeError:
        raise ProtocolMissingError(f"{who}: {type(obj).__name__} has no {attr}") from None
    if type(d) is not dict:
        raise TypeError(f"{who}: {attr} must be a dict, not {type(d).__name__}")
    return d


cdef object read_interface(StridedMemoryView v, object d, object obj, str who):
    """The keys both interfaces share: shape, typestr (descr), data, strides, mask. Returns
    the value of 'stream' (None when absent), which only the CUDA Array Interface has."""
    cdef object shape = None, data = None, typestr = None, strides = None, mask = None
    cdef object stream = None
    cdef Py_ssize_t pos = 0, known = 0
    cdef PyObject* k
    cdef PyObject* val
    cdef bint complete
    # One pass over the dict, whose keys producers spell as literals (interned, so matched by
    # identity), costs less than a look-up per key. Values are taken (new references) inside
    # the dict's critical section: another thread may change the producer's dict.
    with cython.critical_section(d):
        while PyDict_Next(d, &pos, &k, &val):
            if k == <PyObject*>_K_SHAPE:
                shape = <object>val
            elif k == <PyObject*>_K_DATA:
                data = <object>val
            elif k == <PyObject*>_K_TYPESTR:
                typestr = <object>val
            elif k == <PyObject*>_K_STRIDES:
                strides = <object>val
            elif k == <PyObject*>_K_STREAM:
                stream = <object>val
            elif k == <PyObject*>_K_MASK:
                mask = <object>val
            elif k != <PyObject*>_K_VERSION and k != <PyObject*>_K_DESCR:
                continue
            known += 1
        complete = known == PyDict_GET_SIZE(d)
    if not complete:  # a key this pass did not know (not interned, or another): by look-up
        shape = _get(d, _K_SHAPE)
        data = _get(d, _K_DATA)
        typestr = _get(d, _K_TYPESTR)
        strides = _get(d, _K_STRIDES)
        stream = _get(d, _K_STREAM)
        mask = _get(d, _K_MASK)
    if shape is None or typestr is None or data is None:
        raise TypeError(f"{who}: the interface lacks 'shape', 'typestr' or 'data'")
    if mask is not None:
        raise BufferError(f"{who}: masked arrays ('mask') are not supported")
    if type(data) is not tuple or len(<tuple>data) != 2:
        raise BufferError(f"{who}: 'data' must be a (pointer, read_only) tuple, got "
                          f"{type(data).__name__}")
    ptr, ro = <tuple>data
    if type(ptr) is not int:
        raise TypeError(f"{who}: the data pointer must be an int, not {type(ptr).__name__}")
    v._dtype = typestr_dtype(typestr, d, who, &v._itemsize)
    if v._itemsize <= 0:
        raise TypeError(f"{who}: elements of {v._itemsize} bytes ({v._dtype}) cannot be viewed")
    _set_dims(v, shape, strides, v._itemsize, who, TypeError)
    v._ptr = <intptr_t>(<uintptr_t>PyLong_AsUnsignedLongLongMask(ptr))
    v._readonly = bool(ro)
    v._exporting_obj = obj
    return stream


cdef int init_cai(StridedMemoryView v, object obj, object stream_ptr) except -1:
    cdef str who = "StridedMemoryView.from_cuda_array_interface()"
    cdef long long sval
    cdef object producer
    d = interface_dict(obj, "__cuda_array_interface__", who)  # first: an object without it says so
    cdef object consumer = stream_int(stream_ptr, who, &sval)
    producer = read_interface(v, d, obj, who)
    v._device_accessible = True
    v._dl_type = kDLCUDA
    if producer is not None:
        if type(producer) is not int:
            raise TypeError(f"{who}: the interface's 'stream' must be an int or None, not "
                            f"{type(producer).__name__}")
        if producer == 0:
            raise BufferError(f"{who}: the interface's 'stream' is 0, which the CUDA Array "
                              f"Interface forbids (ambiguous)")
    ensure_driver()
    v._device_id = pointer_device(<CUdeviceptr>v._ptr, who)
    if producer is not None and sval != -1:
        order_streams(<size_t>PyLong_AsUnsignedLongLongMask(producer),
                      <size_t>PyLong_AsUnsignedLongLongMask(consumer), v._device_id)
    return 0
