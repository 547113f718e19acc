"""The DLPack exchange with a producer, as a view consumes it: which protocol an object speaks
(``dlpack_method``, then ``protocol``), the ``__dlpack__`` calls and the capsule they return
(``export_tensor``), the producer type's C exchange table (``exchange_api``) and a consumed
tensor's deleter (``delete_tensor``).

A consumed capsule is renamed ``used_dltensor[_versioned]`` before its tensor is handed over:
from then on the caller owns the tensor and runs its deleter exactly once.
"""

import sys

from cpython.ref cimport PyObject

from cuda_core._memory._dlpack_abi cimport (
    DLManagedTensor, DLManagedTensorVersioned, DLPackExchangeAPI, DLPackExchangeAPIHeader,
    DLPACK_MAJOR_VERSION, kDLCPU)

from cuda_core._checks import ProtocolMissingError

__all__ = []


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


cdef extern from *:
    """
    #include <string.h>
    static inline int cuda_core_smv_streq(const char* a, const char* b) { return strcmp(a, b) == 0; }
    """
    bint _streq "cuda_core_smv_streq"(const char* a, const char* b) noexcept nogil


# The keyword names of the __dlpack__ calls (interned str). Interned, so that producers'
# keyword parsers match them by identity.
cdef tuple _KW_STREAM_VERSION = (sys.intern("stream"), sys.intern("max_version"))
cdef tuple _KW_STREAM = (sys.intern("stream"),)
# DLPack 1.x keeps one ABI for every minor version; newer dtype codes are refused by name.
cdef tuple _MAX_VERSION = (1, 3)
cdef object _NO_SYNC = -1
cdef str _DLPACK = sys.intern("__dlpack__")
cdef str _DLPACK_DEVICE = "__dlpack_device__"
cdef str _EXCHANGE_API = sys.intern("__dlpack_c_exchange_api__")
cdef str _CAI = sys.intern("__cuda_array_interface__")

cdef int _streq_name(const char* name, const char* want) noexcept:
    return name != NULL and _streq(name, want)


cdef void delete_tensor(void* managed, bint versioned) noexcept:
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


cdef PyObject* _try_dlpack(object obj, object stream, object method) noexcept:
    """``obj.__dlpack__(stream=stream, max_version=(1, 3))``, a new reference; NULL with the
    exception set when it fails. A producer older than DLPack 1.0, which does not know
    max_version (TypeError), is asked as the protocol says, without it. ``method``: the
    ``__dlpack__`` already read from the type (``dlpack_method``), or None."""
    cdef PyObject* args[3]
    cdef PyObject* r
    args[0] = <PyObject*>obj
    args[1] = <PyObject*>stream
    args[2] = <PyObject*>_MAX_VERSION
    r = _call_method(_DLPACK, args, _KW_STREAM_VERSION, method)
    if r == NULL and PyErr_ExceptionMatches(TypeError):
        PyErr_Clear()
        r = _call_method(_DLPACK, args, _KW_STREAM, method)
    return r


cdef object _call_dlpack(object obj, object stream):
    cdef PyObject* r = _try_dlpack(obj, stream, None)
    if r == NULL:
        raise_current()
    return steal(r)


cdef int _dlpack_failed(object obj, str who) except -1:
    """With the exception of a ``__dlpack__`` call pending: a ProtocolMissingError (a
    BufferError and an AttributeError) for an object without ``__dlpack__``, else that
    exception."""
    try:
        raise_current()
    except AttributeError:
        if not hasattr(obj, "__dlpack__"):
            raise ProtocolMissingError(f"{who}: {type(obj).__name__} does not support DLPack "
                                       f"(no __dlpack__)") from None
        raise


cdef object _dlpack_no_sync(object obj, str who, object method):
    """``__dlpack__(stream=-1)``: no stream ordering. -1 is for device producers; a host
    producer may refuse it, and is then asked with its only stream, None. (Asking
    ``__dlpack_device__`` first would cost every device producer a second Python call.)"""
    cdef PyObject* r = _try_dlpack(obj, _NO_SYNC, method)
    if r != NULL:
        return steal(r)
    if PyErr_ExceptionMatches(AttributeError):
        _dlpack_failed(obj, who)
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
            raise ProtocolMissingError(f"{who}: {type(obj).__name__} does not support DLPack "
                                       f"(no __dlpack_device__)") from None
        if type(dev) is not tuple or len(<tuple>dev) != 2:
            raise BufferError(f"{who}: __dlpack_device__() returned {dev!r}, not a "
                              f"(device_type, device_id) pair")
        if (<tuple>dev)[0] != kDLCPU:
            raise  # a device producer's own refusal
    return _call_dlpack(obj, None)


cdef void* export_tensor(object obj, object stream, bint no_sync, str who,
                         bint* versioned, object method) except NULL:
    """The tensor of ``obj.__dlpack__(stream=stream)`` (``stream=-1`` through the host retry
    when ``no_sync``): a ``DLManagedTensorVersioned*`` when ``versioned`` is set on return,
    else a ``DLManagedTensor*``. The capsule is marked used: the caller owns the tensor and
    must see that ``delete_tensor`` runs, even when it refuses the tensor. ``method``: the
    ``__dlpack__`` already read from the type (``dlpack_method``), or None."""
    cdef const char* name
    cdef void* managed
    cdef PyObject* r
    if no_sync:
        capsule = _dlpack_no_sync(obj, who, method)
    else:
        r = _try_dlpack(obj, stream, method)  # a C call, not a try block: nothing to save on success
        if r == NULL:
            _dlpack_failed(obj, who)
        capsule = steal(r)
    if not PyCapsule_CheckExact(capsule):
        raise BufferError(f"{who}: __dlpack__() returned {type(capsule).__name__}, not a "
                          f"capsule")
    name = PyCapsule_GetName(capsule)
    if _streq_name(name, b"dltensor_versioned"):
        managed = PyCapsule_GetPointer(capsule, name)
        PyCapsule_SetName(capsule, b"used_dltensor_versioned")
        versioned[0] = True
    elif _streq_name(name, b"dltensor"):
        managed = PyCapsule_GetPointer(capsule, name)
        PyCapsule_SetName(capsule, b"used_dltensor")
        versioned[0] = False
    elif _streq_name(name, b"used_dltensor") or _streq_name(name, b"used_dltensor_versioned"):
        raise BufferError(f"{who}: the DLPack capsule was already consumed")
    else:
        raise BufferError(f"{who}: __dlpack__() returned a capsule named "
                          f"{(<bytes>name).decode('ascii', 'replace') if name else None!r}, "
                          f"not a DLPack tensor")
    return managed


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

    /* args[0].name(**dict(zip(kwnames, args[1:]))): a special method, looked up on the type
       as Python looks up its own (len, iter...). For an instance without a __dict__ (CuPy's
       arrays), a function found on the type is called with the instance as its first
       argument: no bound method is made, which the attribute lookup of a Cython class (its
       own tp_getattro) does. Otherwise as PyObject_VectorcallMethod. */
    static PyObject* cuda_core_smv_call_method(PyObject* name, PyObject** args,
                                               PyObject* kwnames, PyObject* found) {
        if (Py_TYPE(args[0])->tp_dictoffset == 0) {
            PyObject* r;
            /* found: what the caller already read from the type for name, or None. */
            PyObject* f = found != Py_None ? (Py_INCREF(found), found)
                                           : cuda_core_smv_type_attr(args[0], name);
            if (f == NULL) {
                return NULL;
            }
            if (PyType_HasFeature(Py_TYPE(f), Py_TPFLAGS_METHOD_DESCRIPTOR)) {
                r = PyObject_Vectorcall(f, args, 1, kwnames);
                Py_DECREF(f);
                return r;
            }
            Py_DECREF(f);
        }
        return PyObject_VectorcallMethod(name, args, 1, kwnames);
    }
    """
    # A new reference: the attribute on type(obj), or None.
    object _type_attr "cuda_core_smv_type_attr"(object obj, object name)
    # NULL with the exception set when the call fails (see the C above). found: the
    # attribute name already read from the object's type, or None.
    PyObject* _call_method "cuda_core_smv_call_method"(object name, PyObject** args,
                                                       object kwnames, object found)


cdef object dlpack_method(object obj):
    """The ``__dlpack__`` on ``type(obj)`` (a new reference), or None: from_any_interface's
    first question, whose answer the call then uses. The type is asked first: ``hasattr`` on an
    instance runs a class's ``__getattr__`` when it fails (slow for Numba's device arrays: see
    benchmarks/README.md) and evaluates an interface property (which the view then reads once
    more)."""
    return _type_attr(obj, _DLPACK)


cdef int protocol(object obj) except -1:
    """For an object whose type has no ``__dlpack__`` (``dlpack_method`` gave None), which
    protocol from_any_interface takes: 2 for the CUDA Array Interface, 1 for DLPack through an
    instance attribute, 0 for neither."""
    if _type_attr(obj, _CAI) is not None:
        return 2
    if hasattr(obj, _DLPACK):  # instance attributes
        return 1
    if hasattr(obj, _CAI):
        return 2
    return 0


cdef int exchange_api(object obj, const DLPackExchangeAPI** api) except -1:
    """Sets ``api`` to the producer type's exchange table of major version 1, or NULL. (A
    status return, not the pointer: NULL is the common answer, and as a return value it would
    cost every caller a test for a pending exception.)"""
    cdef const DLPackExchangeAPIHeader* h
    api[0] = NULL
    table = _type_attr(obj, _EXCHANGE_API)
    if table is None or not PyCapsule_CheckExact(table):
        return 0
    if not _streq_name(PyCapsule_GetName(table), b"dlpack_exchange_api"):
        return 0
    h = <const DLPackExchangeAPIHeader*>PyCapsule_GetPointer(table, b"dlpack_exchange_api")
    # A newer major version links to the older tables it still provides.
    while h != NULL and h.version.major != DLPACK_MAJOR_VERSION:
        h = h.prev_api
    api[0] = <const DLPackExchangeAPI*>h
    return 0
