"""DLPack export: a 1-D int8 tensor over a range of memory, in a versioned or legacy capsule.

Who owns what:

* One ``malloc`` block holds the managed tensor and its shape and strides; the deleter frees
  it, exactly once.
* ``manager_ctx`` holds a strong reference to a ``keepalive`` object (the exporting Buffer's
  export guard), taken when the capsule is made and dropped by the deleter. The memory stays
  valid while the consumer holds the tensor.
* The deleter runs either when the consumer is done with the tensor (it renamed the capsule to
  ``used_dltensor[_versioned]`` and called the deleter itself) or, for a capsule that was never
  consumed, when the capsule is destroyed (it still has its original name).

The DLPack specification lets a consumer call the deleter from any thread without holding the
GIL, so the deleters take the GIL themselves before touching the reference, and they preserve
any exception that is being raised around them. Once the interpreter has shut down they leak
the reference rather than touch a dead interpreter.
"""

from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, malloc

from cuda.bindings.cydriver cimport CUdeviceptr

from cuda_core._memory._dlpack_abi cimport (
    DLManagedTensor, DLManagedTensorVersioned, DLTensor, DLPACK_MAJOR_VERSION,
    DLPACK_MINOR_VERSION, kDLInt)

__all__ = []


cdef extern from "Python.h":
    ctypedef struct PyObject
    ctypedef void (*PyCapsule_Destructor)(PyObject*)
    ctypedef int PyGILState_STATE
    object PyCapsule_New(void* pointer, const char* name, PyCapsule_Destructor destructor)
    int PyCapsule_IsValid(PyObject* capsule, const char* name)
    void* PyCapsule_GetPointer(PyObject* capsule, const char* name)
    void Py_IncRef(PyObject*)


cdef extern from "Python.h" nogil:
    int Py_IsInitialized()
    PyGILState_STATE PyGILState_Ensure()
    void PyGILState_Release(PyGILState_STATE)
    void PyErr_Fetch(PyObject** ptype, PyObject** pvalue, PyObject** ptraceback)
    void PyErr_Restore(PyObject* ptype, PyObject* pvalue, PyObject* ptraceback)
    void Py_DecRef(PyObject*)


cdef const char* _NAME_VERSIONED = b"dltensor_versioned"
cdef const char* _NAME_LEGACY = b"dltensor"


cdef void _drop_reference(void* obj) noexcept nogil:
    """Release the keepalive reference, from any thread, with or without the GIL held."""
    cdef PyGILState_STATE state
    cdef PyObject* exc_type
    cdef PyObject* exc_value
    cdef PyObject* exc_tb
    if obj == NULL or not Py_IsInitialized():
        return
    state = PyGILState_Ensure()
    # Dropping the reference can run Python code (the buffer's deferred free); keep whatever
    # exception is in flight around us intact.
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb)
    Py_DecRef(<PyObject*>obj)
    PyErr_Restore(exc_type, exc_value, exc_tb)
    PyGILState_Release(state)


cdef inline void _end_tensor(void** manager_ctx, void** deleter, void* block) noexcept nogil:
    """A deleter's work, for either tensor struct: clear the tensor's keepalive and deleter (a
    second call finds nothing to do), drop the reference, free the block."""
    cdef void* ctx = manager_ctx[0]
    manager_ctx[0] = NULL
    deleter[0] = NULL
    _drop_reference(ctx)
    free(block)


cdef void _delete_versioned(DLManagedTensorVersioned* tensor) noexcept nogil:
    if tensor != NULL:
        _end_tensor(&tensor.manager_ctx, <void**>&tensor.deleter, tensor)


cdef void _delete_legacy(DLManagedTensor* tensor) noexcept nogil:
    if tensor != NULL:
        _end_tensor(&tensor.manager_ctx, <void**>&tensor.deleter, tensor)


cdef inline void* _unconsumed(PyObject* capsule, const char* name) noexcept:
    """The tensor of a capsule that was never consumed (it still has its original name, and
    its deleter is ours to call), else NULL."""
    if PyCapsule_IsValid(capsule, name):
        return PyCapsule_GetPointer(capsule, name)
    return NULL


# Capsule destructors run with the GIL held, while the capsule is being destroyed: they must
# not turn the dying capsule back into a Python object, hence the PyObject* signatures.
cdef void _capsule_versioned_destructor(PyObject* capsule) noexcept:
    cdef DLManagedTensorVersioned* tensor = <DLManagedTensorVersioned*>_unconsumed(
        capsule, _NAME_VERSIONED)
    if tensor != NULL and tensor.deleter != NULL:
        tensor.deleter(tensor)


cdef void _capsule_legacy_destructor(PyObject* capsule) noexcept:
    cdef DLManagedTensor* tensor = <DLManagedTensor*>_unconsumed(capsule, _NAME_LEGACY)
    if tensor != NULL and tensor.deleter != NULL:
        tensor.deleter(tensor)


cdef inline void _fill_tensor(DLTensor* t, CUdeviceptr data, size_t nbytes, int32_t device_type,
                              int32_t device_id, int64_t* dims) noexcept:
    # dims[0] is the shape, dims[1] the stride: a 1-D int8 tensor of nbytes elements.
    dims[0] = <int64_t>nbytes
    dims[1] = 1
    t.data = <void*>data
    t.device.device_type = device_type
    t.device.device_id = device_id
    t.ndim = 1
    t.dtype.code = kDLInt
    t.dtype.bits = 8
    t.dtype.lanes = 1
    t.shape = &dims[0]
    t.strides = &dims[1]
    t.byte_offset = 0


cdef object make_capsule(CUdeviceptr data, size_t nbytes, int32_t device_type,
                         int32_t device_id, object keepalive, bint versioned):
    """A new DLPack capsule over ``[data, data + nbytes)`` that keeps ``keepalive`` alive."""
    cdef DLManagedTensorVersioned* vt = NULL
    cdef DLManagedTensor* lt = NULL
    # One block: the managed tensor, then its shape and strides.
    cdef size_t head = sizeof(DLManagedTensorVersioned) if versioned else sizeof(DLManagedTensor)
    cdef void* block = malloc(head + 2 * sizeof(int64_t))
    cdef int64_t* dims
    if block == NULL:
        raise MemoryError("DLPack export: out of host memory")
    dims = <int64_t*>(<char*>block + head)
    Py_IncRef(<PyObject*>keepalive)
    if versioned:
        vt = <DLManagedTensorVersioned*>block
        vt.version.major = DLPACK_MAJOR_VERSION
        vt.version.minor = DLPACK_MINOR_VERSION
        vt.flags = 0
        _fill_tensor(&vt.dl_tensor, data, nbytes, device_type, device_id, dims)
        vt.manager_ctx = <void*><PyObject*>keepalive
        vt.deleter = _delete_versioned
    else:
        lt = <DLManagedTensor*>block
        _fill_tensor(&lt.dl_tensor, data, nbytes, device_type, device_id, dims)
        lt.manager_ctx = <void*><PyObject*>keepalive
        lt.deleter = _delete_legacy
    try:
        if versioned:
            return PyCapsule_New(block, _NAME_VERSIONED, _capsule_versioned_destructor)
        return PyCapsule_New(block, _NAME_LEGACY, _capsule_legacy_destructor)
    except BaseException:
        if versioned:
            _delete_versioned(vt)
        else:
            _delete_legacy(lt)
        raise
