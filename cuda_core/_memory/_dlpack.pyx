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

Beside the capsule, the rest of ``Buffer.__dlpack__`` that does not need the buffer itself: the
checks of its arguments, the DLPack device of a kind of memory, and the stream order between the
buffer's stream and the consumer's. (This module cannot cimport ``_buffer``, which cimports it.)
"""

from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport free, malloc

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUcontext, CUdeviceptr, CUresult, CUstream, CUDA_SUCCESS

from cuda_core._context cimport ContextGuard, enter_context, exit_context
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._stream cimport Stream, same_stream
from cuda_core._memory._alloc cimport stream_context
from cuda_core._memory._dlpack_abi cimport (
    DLManagedTensor, DLManagedTensorVersioned, DLTensor, DLPACK_FLAG_BITMASK_READ_ONLY,
    DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION, kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged,
    kDLInt)

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


cdef object make_capsule(CUdeviceptr data, size_t nbytes, int32_t device_type,
                         int32_t device_id, object keepalive, bint versioned):
    """A new DLPack capsule over ``[data, data + nbytes)``, a 1-D int8 tensor, that keeps
    ``keepalive`` alive."""
    cdef int64_t shape = <int64_t>nbytes
    cdef int64_t stride = 1
    return make_tensor_capsule(<void*>data, device_type, device_id, 1, &shape, &stride,
                               kDLInt, 8, False, keepalive, versioned)


cdef void* make_tensor(void* data, int32_t device_type, int32_t device_id, int ndim,
                       const int64_t* shape, const int64_t* strides, uint8_t code, uint8_t bits,
                       bint readonly, object keepalive, bint versioned) except NULL:
    """A new managed tensor (``DLManagedTensorVersioned*`` when ``versioned``, else
    ``DLManagedTensor*``) of an ``ndim``-dimensional tensor at ``data`` (``strides`` in
    elements, NULL for C order; one lane of ``code``/``bits`` elements) that keeps
    ``keepalive`` alive until its deleter runs. Read-only is a flag of the versioned struct
    only."""
    cdef DLManagedTensorVersioned* vt
    cdef DLManagedTensor* lt
    cdef DLTensor* t
    cdef int i
    # One block: the managed tensor, then its shape and strides.
    cdef size_t head = sizeof(DLManagedTensorVersioned) if versioned else sizeof(DLManagedTensor)
    cdef void* block = malloc(head + 2 * max(ndim, 1) * sizeof(int64_t))
    cdef int64_t* dims
    if block == NULL:
        raise MemoryError("DLPack export: out of host memory")
    dims = <int64_t*>(<char*>block + head)
    Py_IncRef(<PyObject*>keepalive)
    if versioned:
        vt = <DLManagedTensorVersioned*>block
        vt.version.major = DLPACK_MAJOR_VERSION
        vt.version.minor = DLPACK_MINOR_VERSION
        vt.flags = DLPACK_FLAG_BITMASK_READ_ONLY if readonly else 0
        vt.manager_ctx = <void*><PyObject*>keepalive
        vt.deleter = _delete_versioned
        t = &vt.dl_tensor
    else:
        lt = <DLManagedTensor*>block
        lt.manager_ctx = <void*><PyObject*>keepalive
        lt.deleter = _delete_legacy
        t = &lt.dl_tensor
    for i in range(ndim):  # i < ndim: dims holds 2 * max(ndim, 1) entries
        dims[i] = shape[i]
        dims[ndim + i] = strides[i] if strides != NULL else 0
    t.data = data
    t.device.device_type = device_type
    t.device.device_id = device_id
    t.ndim = ndim
    t.dtype.code = code
    t.dtype.bits = bits
    t.dtype.lanes = 1
    t.shape = dims if ndim > 0 else NULL
    t.strides = dims + ndim if strides != NULL and ndim > 0 else NULL
    t.byte_offset = 0
    return block


cdef object make_tensor_capsule(void* data, int32_t device_type, int32_t device_id, int ndim,
                                const int64_t* shape, const int64_t* strides, uint8_t code,
                                uint8_t bits, bint readonly, object keepalive, bint versioned):
    """A new DLPack capsule of the tensor ``make_tensor`` makes of these arguments."""
    cdef void* block = make_tensor(data, device_type, device_id, ndim, shape, strides, code,
                                   bits, readonly, keepalive, versioned)
    try:
        if versioned:
            return PyCapsule_New(block, _NAME_VERSIONED, _capsule_versioned_destructor)
        return PyCapsule_New(block, _NAME_LEGACY, _capsule_legacy_destructor)
    except BaseException:
        if versioned:
            _delete_versioned(<DLManagedTensorVersioned*>block)
        else:
            _delete_legacy(<DLManagedTensor*>block)
        raise


# -- Buffer.__dlpack__'s checks and stream order ------------------------------------------------

cdef tuple dlpack_device(bint dev_acc, bint host_acc, bint managed, int dev_id):
    """``(device_type, device_id)`` of memory that the device and the host can access or not,
    managed or not, of device ``dev_id``: what ``Buffer.__dlpack_device__`` returns."""
    if managed:
        return (kDLCUDAManaged, dev_id if dev_id >= 0 else 0)
    if dev_acc and host_acc:
        return (kDLCUDAHost, 0)
    if dev_acc:
        return (kDLCUDA, dev_id)
    if host_acc:
        return (kDLCPU, 0)
    raise BufferError("this buffer's memory is accessible from neither the host nor a "
                      "device; it cannot be exported through DLPack")


cdef object export_args(object stream, object max_version, object dl_device, object copy,
                        bint* versioned, str who="Buffer.__dlpack__()"):
    """Check ``Buffer.__dlpack__``'s arguments, before the buffer's device is asked for.

    Returns the device the consumer asked for (``dl_device`` as a pair of ints), or None; sets
    ``versioned`` to whether the capsule is to be versioned (``max_version`` major >= 1)."""
    cdef object want = None
    if copy is True:
        raise BufferError(f"{who}: copy=True is not supported; the export is "
                          "always zero-copy")
    if copy is not None and copy is not False:
        raise TypeError(f"{who}: copy must be a bool or None, not "
                        f"{type(copy).__name__}")
    if dl_device is not None:
        want = _int_pair(dl_device, "dl_device", "(device_type, device_id)", who)
    if max_version is not None:
        major, minor = _int_pair(max_version, "max_version", "(major, minor)", who)
        if major < 0 or minor < 0:
            raise ValueError(f"{who}: max_version must be a (major, minor) "
                             f"pair of non-negative ints, got {max_version!r}")
        versioned[0] = major >= 1
    if stream is not None and (isinstance(stream, bool) or not isinstance(stream, int)):
        raise TypeError(f"{who}: stream must be an int or None, not "
                        f"{type(stream).__name__}")
    return want


cdef int export_target(object want, object stream, Stream producer, int* dev_type,
                       int* dev_id, str who="Buffer.__dlpack__()") except -1:
    """The rest of ``Buffer.__dlpack__``'s checks, once the buffer's device ``(dev_type,
    dev_id)`` is known: the device the consumer gets (pinned or managed memory handed to a
    CPU consumer as host memory, into ``dev_type``/``dev_id``), and its ``stream`` ordered
    after ``producer`` (the buffer's stream) where the memory is a device's.

    ``want`` and ``stream`` are what ``export_args`` accepted."""
    if want is not None:
        if want == (kDLCPU, 0) and dev_type[0] in (kDLCUDAHost, kDLCUDAManaged):
            # Pinned and managed memory is host memory too: hand it to a CPU consumer
            # as such, still without a copy.
            dev_type[0], dev_id[0] = kDLCPU, 0
        elif want != (dev_type[0], dev_id[0]):
            owner = "buffer" if who.startswith("Buffer") else "view"
            raise BufferError(f"{who}: dl_device={want} differs from the {owner}'s device "
                              f"{(dev_type[0], dev_id[0])}, and the export cannot copy")
    if dev_type[0] == kDLCPU:
        if stream is not None and stream != -1:
            raise BufferError(f"{who}: stream must be None for host memory "
                              f"(kDLCPU), got {stream}")
    elif stream is None:
        if dev_type[0] != kDLCUDAHost:  # a host consumer of pinned memory has no stream
            _order_before(producer, <size_t>cydriver.CU_STREAM_LEGACY)
    elif stream == 0:
        raise BufferError(f"{who}: stream=0 is ambiguous in the DLPack "
                          "protocol; pass 1 (legacy default stream), 2 (per-thread default "
                          "stream), a stream address, None or -1")
    elif stream < -1 or stream >= (1 << 64):
        raise BufferError(f"{who}: stream={stream} is not a stream")
    elif stream != -1:
        _order_before(producer, <size_t>stream)
    return 0


cdef int _order_before(Stream producer, size_t consumer) except -1:
    """Make the consumer's stream wait for the work queued so far on ``producer`` (a buffer's
    stream; nothing to wait for when it is None or closed)."""
    cdef CUstream c = <CUstream>consumer
    cdef CUcontext ctx
    cdef cydriver.CUevent event = NULL
    cdef CUresult err = CUDA_SUCCESS
    cdef ContextGuard guard
    if producer is None or producer._closed:
        return 0
    if same_stream(<size_t>producer._handle, consumer):
        return 0
    ctx = stream_context(producer)
    with nogil:
        enter_context(guard, ctx)
        err = cydriver.cuEventCreate(&event, cydriver.CU_EVENT_DISABLE_TIMING)
        if err == CUDA_SUCCESS:
            err = cydriver.cuEventRecord(event, producer._handle)
            if err == CUDA_SUCCESS:
                err = cydriver.cuStreamWaitEvent(c, event, 0)
            # Destroying right after the wait is safe: the driver keeps what it needs.
            cydriver.cuEventDestroy(event)
        exit_context(guard)
    return HANDLE_RETURN(err)


cdef tuple _int_pair(object value, str name, str pair, str who):
    """``value``, a tuple of two ints (``pair`` names them), as a tuple of two Python ints.

    Only a tuple is taken, as the DLPack protocol and cuda.core type these parameters; its items
    are copied out first, so that the length checked is the length used."""
    if not isinstance(value, tuple):
        raise TypeError(f"{who}: {name} must be a {pair} pair of ints or None, "
                        f"not {type(value).__name__}")
    items = tuple(value)
    if len(items) != 2:
        raise ValueError(f"{who}: {name} must be a {pair} pair of ints, got "
                         f"{len(items)} item{'s' if len(items) != 1 else ''}: {value!r}")
    first, second = items
    for item in items:
        if isinstance(item, bool) or not hasattr(type(item), "__index__"):
            raise TypeError(f"{who}: {name} must be a {pair} pair of ints, got "
                            f"{type(item).__name__} in {value!r}")
    return (first.__index__(), second.__index__())
