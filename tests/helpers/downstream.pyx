# cython: language_level=3
"""A library that builds on cuda_core's C API, as a downstream project would write one: it
cimports the ``.pxd`` files the cuda_core wheel ships and calls what they declare.

tests/helpers/cython_build.py builds it against the installed package; the tests call it in a
subprocess (tests/test_cython_api.py, tests/test_checks.py, tests/test_resource.py).
"""

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUcontext, CUdeviceptr, CUevent, CUstream

from cuda_core._checks cimport (check_address, check_bool, check_choice, check_driver_int,
                                check_int, check_ordinal, check_size)
from cuda_core._context cimport ContextGuard, enter_context, exit_context
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core._event cimport Event
from cuda_core._resource cimport Resource, raise_closed, warn_release_failed
from cuda_core._stream cimport Stream, is_default_handle


# The checks, through their C signatures: each returns what its C type holds.

def size(value, what):
    cdef size_t n = check_size(value, what)
    return n


def address(value, what):
    cdef CUdeviceptr p = check_address(value, what)
    return p


def ordinal(value, what):
    cdef int n = check_ordinal(value, what)
    return n


def driver_int(value, what, int minimum):
    cdef int n = check_driver_int(value, what, minimum)
    return n


def integer(value, what, minimum=None, maximum=None, allow_none=False):
    return check_int(value, what, minimum, maximum, allow_none)


def flag(value, what, allow_none=False):
    return check_bool(value, what, allow_none)


def choice(value, what, allowed, allow_none=False):
    return check_choice(value, what, allowed, allow_none)


# A handle-owning class of the downstream library, on cuda_core's lifecycle.

released = []  # the handle of each release, in order


cdef class Handle(Resource):
    """Owns the made-up handle ``value``; its release records the handle, then raises
    ``fail`` when one is given (a release that failed)."""

    cdef size_t _value
    cdef object _fail

    def __init__(self, size_t value, fail=None):
        self._value = value
        self._fail = fail

    cdef int _release(self) except -1:
        released.append(self._value)
        if self._fail is not None:
            raise self._fail
        return 0

    cdef size_t _address(self) noexcept:
        return self._value

    def value(self):
        """The handle; a closed object refuses, through the base's check."""
        self._check_open()
        return self._value


def is_resource(obj):
    return isinstance(obj, Resource)


def check_open(Resource obj not None):
    """The check every method of a Resource makes, called from outside cuda_core."""
    obj._check_open()


def closed_error(Resource obj not None):
    """raise_closed: the error a closed object's methods raise."""
    raise_closed(obj)


def release_failed(str what, size_t address, error):
    """The cleanup policy a finalizer applies to a failed release."""
    warn_release_failed(what, address, error)


# Streams and events through their C fields.

def stream_handle(Stream s not None):
    s._check_open()
    return <size_t>s._handle


def stream_is_default(Stream s not None):
    return is_default_handle(s._handle)


def event_handle(Event e not None):
    e._check_open()
    return <size_t>e._handle


def stream_sync_in_its_context(Stream s not None):
    """Synchronize ``s`` through the driver, its context made current by the scoped guard for
    the call; returns the address of the context current inside the guard."""
    cdef ContextGuard guard
    cdef CUcontext ctx
    cdef CUcontext inside = NULL
    cdef CUstream handle
    s._check_open()
    ctx = s._ctx._handle
    handle = s._handle
    with nogil:
        enter_context(guard, ctx)
        HANDLE_RETURN(cydriver.cuCtxGetCurrent(&inside))
        HANDLE_RETURN(cydriver.cuStreamSynchronize(handle))
    return <size_t>inside


def query_event_after_exit(Event e not None):
    """Enter the event's context, leave it early with exit_context, then query the event:
    returns (context inside, context after the exit)."""
    cdef ContextGuard guard
    cdef CUcontext ctx
    cdef CUcontext inside = NULL
    cdef CUcontext after = NULL
    cdef CUevent handle
    e._check_open()
    ctx = e._ctx._handle
    handle = e._handle
    with nogil:
        enter_context(guard, ctx)
        HANDLE_RETURN(cydriver.cuCtxGetCurrent(&inside))
        HANDLE_RETURN(cydriver.cuEventSynchronize(handle))
        exit_context(guard)
        HANDLE_RETURN(cydriver.cuCtxGetCurrent(&after))
    return <size_t>inside, <size_t>after
