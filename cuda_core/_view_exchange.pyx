"""StridedMemoryView as a producer of the DLPack C exchange API (DLPack 1.3): the table of C
functions that ``StridedMemoryView.__dlpack_c_exchange_api__`` (and its other spelling,
``__c_dlpack_exchange_api__``) holds, in a capsule named ``"dlpack_exchange_api"``, through
which a C consumer gets a view's tensor, or makes a view of a tensor, without a Python call.

* ``managed_tensor_from_py_object_no_sync``: a new owning ``DLManagedTensorVersioned`` of a
  view (one ``malloc`` block from ``_memory._dlpack``); it holds the view, and so what the view
  holds, until its deleter runs. Strides are always given (DLPack 1.2 and later require them);
  the read-only flag is the view's.
* ``dltensor_from_py_object_no_sync``: the same tensor, borrowed: its shape and strides are the
  view's own arrays, valid while the caller holds the view.
* ``managed_tensor_to_py_object_no_sync``: a new view that owns the tensor (its deleter runs
  when the view is freed, or at once when the tensor is refused).
* ``current_work_stream``: NULL, for every device. A view has no stream of its own: it was
  ordered before the consumer's stream when it was made, so a consumer has nothing to wait for.
* ``managed_tensor_allocator``: not supported (a view allocates nothing), reported through the
  caller's ``SetError`` as a ``NotImplementedError``.

The table is one static struct, filled once when the view's module is imported (before the
capsule exists) and never written again, so consumers on any thread read it without a lock.
"""

from libc.stdint cimport int32_t

from cuda_core._memory._dlpack cimport make_tensor
from cuda_core._memory._dlpack_abi cimport (
    DLManagedTensorVersioned, DLPackExchangeAPI, DLPackSetError, DLTensor,
    DLPACK_EXCHANGE_API_MINOR_VERSION, DLPACK_MAJOR_VERSION)

__all__ = []


cdef extern from "Python.h":
    ctypedef struct PyObject
    object PyCapsule_New(void* pointer, const char* name, void* destructor)
    void Py_IncRef(PyObject*)


cdef extern from "Python.h" nogil:
    ctypedef int PyGILState_STATE
    PyGILState_STATE PyGILState_Ensure()
    void PyGILState_Release(PyGILState_STATE)
    void PyErr_SetString(PyObject* exc, const char* message)


cdef DLPackExchangeAPI _API
cdef fill_tensor_fn _fill = NULL
cdef wrap_tensor_fn _wrap = NULL
cdef object _capsule = None

cdef const char* _NO_ALLOCATOR = (
    b"managed_tensor_allocator is not supported by StridedMemoryView")


cdef int _from_py(void* py_object, DLManagedTensorVersioned** out) except -1:
    cdef DLTensor t
    cdef bint readonly = False
    cdef object view = <object>py_object
    _fill(view, &t, &readonly)
    out[0] = <DLManagedTensorVersioned*>make_tensor(
        t.data, t.device.device_type, t.device.device_id, t.ndim, t.shape, t.strides,
        t.dtype.code, t.dtype.bits, readonly, view, True)
    return 0


cdef int _dltensor_from_py(void* py_object, DLTensor* out) except -1:
    cdef bint readonly = False
    cdef object view = <object>py_object
    return _fill(view, out, &readonly)


cdef int _to_py(DLManagedTensorVersioned* tensor, void** out) except -1:
    if tensor == NULL:
        raise ValueError("managed_tensor_to_py_object_no_sync: the tensor is NULL")
    view = _wrap(tensor)
    Py_IncRef(<PyObject*>view)
    out[0] = <void*><PyObject*>view
    return 0


cdef int _current_work_stream(int32_t device_type, int32_t device_id,
                              void** out_stream) noexcept:
    if out_stream != NULL:
        out_stream[0] = NULL
    return 0


cdef int _allocator(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                    DLPackSetError set_error) noexcept nogil:
    cdef PyGILState_STATE state
    if set_error != NULL:
        set_error(error_ctx, b"NotImplementedError", _NO_ALLOCATOR)
    else:  # no way to report but a Python exception
        state = PyGILState_Ensure()
        PyErr_SetString(<PyObject*>NotImplementedError, _NO_ALLOCATOR)
        PyGILState_Release(state)
    return -1


ctypedef int (*_from_py_t)(void*, DLManagedTensorVersioned**) noexcept
ctypedef int (*_to_py_t)(DLManagedTensorVersioned*, void**) noexcept
ctypedef int (*_dltensor_t)(void*, DLTensor*) noexcept


cdef object exchange_capsule(fill_tensor_fn fill, wrap_tensor_fn wrap):
    # Called once, by StridedMemoryView's class body while _memoryview is imported (the
    # import lock serializes it): the table is filled before any thread can read it, and is
    # never written again.
    global _fill, _wrap, _capsule
    if _capsule is not None:
        return _capsule
    _fill = fill
    _wrap = wrap
    _API.header.version.major = DLPACK_MAJOR_VERSION
    _API.header.version.minor = DLPACK_EXCHANGE_API_MINOR_VERSION
    _API.header.prev_api = NULL
    _API.managed_tensor_allocator = _allocator
    # These report a failure as the table's functions must: -1 with a Python exception set,
    # which is what an ``except -1`` function returns.
    _API.managed_tensor_from_py_object_no_sync = <_from_py_t>_from_py
    _API.managed_tensor_to_py_object_no_sync = <_to_py_t>_to_py
    _API.dltensor_from_py_object_no_sync = <_dltensor_t>_dltensor_from_py
    _API.current_work_stream = _current_work_stream
    _capsule = PyCapsule_New(&_API, b"dlpack_exchange_api", NULL)
    return _capsule
