"""The one lifecycle of every object that owns a handle.

A :class:`Resource` holds one handle (a stream, an event, a pool, a graph, a library, a
compiler's program) and gives it back exactly once: at :meth:`close`, which raises when the
release fails, or when the object is finalized, where a failure becomes a
:class:`~cuda_core.CUDAWarning` naming the object, the handle and the failed call. The
finalizer is silent once the interpreter is finalizing or the driver has been torn down: the
process is exiting and the handle goes with it. A closed object refuses every method with a
``RuntimeError`` through ``_check_open``, never a driver error. An object that owns nothing
(``_non_owning``: a primary context, a memory resource without a pool of its own) has nothing
to close: ``close()`` does nothing and it stays open.

The release runs from ``__del__`` (``tp_finalize``), not ``__dealloc__``: the finalizer runs
while every field is intact, before a reference cycle is cleared, so a release may use the
Python objects it needs (a buffer's memory resource).
"""

import sys
import warnings

from cpython.exc cimport PyErr_SetObject, PyErr_WriteUnraisable
from cuda.bindings cimport cydriver

from cuda_core._errors import CUDAError, CUDAWarning, NVRTCError

__all__ = []


cdef class Resource:
    """Base of the handle-owning classes: ``close()``, ``is_closed`` and the finalizer."""

    def close(self):
        """Release the handle. Idempotent; raises if the release fails (the object stays
        closed: a failed release is never retried). A no-op for an object that owns nothing."""
        if self._non_owning:
            return
        self._close()

    @property
    def is_closed(self):
        """True once :meth:`close` has run (or the object was finalized)."""
        return bool(self._closed)

    def __del__(self):
        if not self._closing():
            return
        if self._orphaned():
            warn_orphaned(self, True)
            return
        try:
            self._release()
        except BaseException as error:
            warn_release_failed(type(self).__name__, self._address(), error)

    cdef int _release(self) except -1:
        return 0

    cdef size_t _address(self) noexcept:
        return 0

    cdef bint _orphaned(self) noexcept:
        return False


cdef class HandleKeyedResource(Resource):
    """Base of the resources compared by their handle: equal to another object of the same
    class that holds the same handle, and hashed by the class and the handle."""

    def __eq__(self, other):
        if not isinstance(other, type(self)):
            return NotImplemented
        return self._address() == (<Resource>other)._address()

    def __hash__(self):
        return hash((type(self), self._address()))


cdef int raise_closed(Resource obj) except -1:
    raise RuntimeError(f"this {type(obj).__name__} is closed")


cdef int warn_orphaned(Resource obj, bint finalizer) except -1:
    if sys.is_finalizing():
        return 0
    what = type(obj).__name__
    address = obj._address()
    handle = f" 0x{address:x}" if address else ""
    message = (f"{what}{handle}: not released: the CUDA context it was made in is gone (other "
               f"code reset the device's primary context or destroyed the context), and the "
               f"driver destroyed it with the context")
    if not finalizer:
        warnings.warn(message, CUDAWarning, stacklevel=3)
        return 0
    try:
        warnings.warn(message, CUDAWarning, stacklevel=2)
    except BaseException as exc:
        PyErr_SetObject(type(exc), exc)
        PyErr_WriteUnraisable(what)
    return 0


cdef void warn_release_failed(str what, size_t address, object error) noexcept:
    """The cleanup policy: a failed release on a finalizer path is a CUDAWarning, never an
    exception, and nothing at all once the process is tearing down. A warning filter that
    turns it into an error reaches ``sys.unraisablehook``, as an exception in ``__del__``
    would."""
    if sys.is_finalizing():
        return
    # A driver error only: a compiler's status codes overlap CUresult's (NVRTC's 4 is
    # NVRTC_ERROR_INVALID_PROGRAM).
    if (isinstance(error, CUDAError) and not isinstance(error, NVRTCError)
            and error.code == cydriver.CUDA_ERROR_DEINITIALIZED):
        return
    handle = f" 0x{address:x}" if address else ""
    try:
        warnings.warn(f"{what}{handle}: cleanup failed: {error}", CUDAWarning, stacklevel=2)
    except BaseException as exc:
        # Reported as Python reports an exception in __del__ (Cython's own noexcept handling
        # would also print it to stderr, past the hook).
        PyErr_SetObject(type(exc), exc)
        PyErr_WriteUnraisable(what)
