"""Exceptions and the driver return-code checker.

Every driver call in the package goes through ``HANDLE_RETURN`` (see ``_errors.pxd``): on
``CUDA_SUCCESS`` it is a compare and a return, with no GIL and no Python object touched. Only a
failure takes the GIL, looks the code's name and text up in the driver and raises
:class:`CUDAError` (or :class:`CUDAOutOfMemoryError`, which is also a :class:`MemoryError`).
"""

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUresult

from cuda_core._atomic cimport load_int, store_int

from cuda.pathfinder import DynamicLibNotFoundError

__all__ = ["CUDAError", "CUDALaunchError", "CUDAOutOfMemoryError", "NVRTCError", "CUDAWarning"]


class CUDAError(Exception):
    """An error reported by CUDA (the driver, or one of its compilers and linkers).

    Attributes
    ----------
    code : int or None
        The numeric result code (``CUresult``), or None when the failure has no code (for
        example, no driver library could be loaded).
    name : str or None
        The code's symbolic name, e.g. ``"CUDA_ERROR_INVALID_VALUE"``.
    explanation : str or None
        What the code means, in plain words.
    """

    def __init__(self, message, code=None, name=None, explanation=None):
        super().__init__(message)
        self.code = code
        self.name = name
        self.explanation = explanation

    def __reduce__(self):
        return (type(self), (self.args[0] if self.args else "", self.code, self.name,
                             self.explanation))


class DriverNotFoundError(CUDAError, DynamicLibNotFoundError):
    """No NVIDIA driver library could be loaded: a :class:`CUDAError`, as ours are, and
    cuda.pathfinder's ``DynamicLibNotFoundError`` (a ``RuntimeError``), which cuda.core lets
    through there, so that ``except RuntimeError`` written for it still holds."""


class CheckpointNotSupportedError(CUDAError, RuntimeError):
    """The driver cannot checkpoint processes here: it has no checkpoint API, or a checkpoint
    call answered ``CUDA_ERROR_NOT_SUPPORTED`` or ``CUDA_ERROR_NOT_FOUND``. A :class:`CUDAError`,
    as ours are, and a ``RuntimeError``, which cuda.core raises there."""


class CUDAOutOfMemoryError(CUDAError, MemoryError):
    """CUDA ran out of memory (``CUDA_ERROR_OUT_OF_MEMORY``); also a :class:`MemoryError`."""


class CUDALaunchError(CUDAError, ValueError):
    """The driver refused a kernel launch because of its configuration or arguments: a block,
    grid, cluster or dynamic shared memory size beyond a device or kernel limit, or a
    cooperative grid that does not fit. It is a :class:`CUDAError` (``code`` and ``name`` are
    the driver's, e.g. ``CUDA_ERROR_INVALID_VALUE``, which the message also shows) and a
    :class:`ValueError`; the message names the limit crossed, with its value, where one is
    found."""


class InvalidValueError(CUDAError, ValueError):
    """An option value that the driver refuses with ``CUDA_ERROR_INVALID_VALUE`` where
    cuda.core passes it on, refused here before any driver call: a :class:`CUDAError` with that
    code and name, as cuda.core's, and a :class:`ValueError`, as ours are."""

    def __init__(self, message, code=1, name="CUDA_ERROR_INVALID_VALUE", explanation=None):
        super().__init__(message, code, name, explanation)


class NVRTCError(CUDAError):
    """A run-time compilation or link failed; ``log`` holds the compiler's full log."""

    def __init__(self, message, code=None, name=None, explanation=None, log=""):
        super().__init__(message, code, name, explanation)
        self.log = log

    def __reduce__(self):
        return (type(self), (self.args[0] if self.args else "", self.code, self.name,
                             self.explanation, self.log))


class CUDAWarning(RuntimeWarning):
    """Something went wrong where raising is not possible (cleanup, garbage collection)."""


# What to do about the codes users hit most, beyond the driver's own one-line text.
_HINTS = {
    cydriver.CUDA_ERROR_NOT_INITIALIZED:
        "the driver is not initialized: create a Device and call Device.set_current() first",
    cydriver.CUDA_ERROR_INVALID_CONTEXT:
        "no valid CUDA context is current on this thread: call Device.set_current() first",
    cydriver.CUDA_ERROR_CONTEXT_IS_DESTROYED:
        "the context this object belongs to has been destroyed",
    cydriver.CUDA_ERROR_NO_DEVICE:
        "no CUDA-capable GPU is visible (check the GPU and CUDA_VISIBLE_DEVICES)",
    cydriver.CUDA_ERROR_INVALID_DEVICE:
        "the device ordinal is out of range for this machine",
    cydriver.CUDA_ERROR_OUT_OF_MEMORY:
        "the device ran out of memory for this request",
    cydriver.CUDA_ERROR_NOT_READY:
        "the work is not complete yet; synchronize first",
}


# Set in a child forked from a process that had initialized the driver (_driver's at-fork
# hook, which runs while the child has one thread); read atomically.
cdef int _forked_child = 0

_FORKED_HINT = ("this process was forked from one that had initialized CUDA, and CUDA cannot "
                "be used in such a child: start processes that use CUDA with the 'spawn' method "
                "(multiprocessing.get_context('spawn'))")


cdef void mark_forked_child() noexcept nogil:
    store_int(&_forked_child, 1)


cdef object make_driver_error(CUresult err, str prefix=None):
    cdef const char* c_name = NULL
    cdef const char* c_text = NULL
    name = explanation = None
    # Both look-ups are table reads in the driver; they fail only for unknown codes.
    try:
        if cydriver.cuGetErrorName(err, &c_name) == CUDA_SUCCESS and c_name != NULL:
            name = c_name.decode()
        if cydriver.cuGetErrorString(err, &c_text) == CUDA_SUCCESS and c_text != NULL:
            explanation = c_text.decode()
    except RuntimeError:  # the driver library itself cannot be loaded
        pass
    if name is None:
        name = f"CUresult {<int>err}"
    message = f"{name}: {explanation or 'unknown error'}"
    hint = _HINTS.get(<int>err)
    if hint is not None:
        message = f"{message} ({hint})"
    if prefix:
        message = f"{prefix}: {message}"
    if load_int(&_forked_child):
        message = f"{message}; {_FORKED_HINT}"
    cls = CUDAOutOfMemoryError if err == cydriver.CUDA_ERROR_OUT_OF_MEMORY else CUDAError
    return cls(message, <int>err, name, explanation)


cdef int _raise_driver_error(CUresult err) except -1 nogil:
    with gil:
        raise make_driver_error(err)


def driver_error(code):
    """The exception ours raises for the driver's ``CUresult`` ``code`` (an int or a
    ``cuda.bindings.driver.CUresult``): for code that calls the driver through cuda.bindings
    (compat mode's ``handle_return``)."""
    return make_driver_error(<CUresult><int>int(code))
