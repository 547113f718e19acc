"""The error of a :mod:`cuda_core.system` call where NVML cannot be used at all.

Imported on first need (it imports ``cuda.bindings.nvml``, which ``import cuda_core.system``
does not).
"""

from __future__ import annotations

from cuda.pathfinder import DynamicLibNotFoundError

try:
    from cuda.bindings import nvml as _nvml
except ImportError:  # cuda.bindings without NVML bindings: no NVML class to derive from
    _BASES: tuple[type, ...] = (DynamicLibNotFoundError,)
else:
    _BASES = (_nvml.LibraryNotFoundError, DynamicLibNotFoundError)

# nvmlReturn_t NVML_ERROR_LIBRARY_NOT_FOUND.
_LIBRARY_NOT_FOUND = 12


class NvmlUnavailableError(*_BASES):  # type: ignore[misc]
    """NVML cannot be used: the driver's ``libnvidia-ml`` cannot be loaded, or ``cuda.bindings``
    has no NVML bindings.

    It is a :class:`cuda_core.system.LibraryNotFoundError` (``cuda.bindings.nvml``'s class,
    ``status`` 12) and cuda.pathfinder's ``DynamicLibNotFoundError``, a ``RuntimeError`` (what
    ``cuda.core`` lets through when NVML cannot be loaded), so each of these ``except`` clauses
    catches it. Unlike NVML's own errors it carries a message naming the cause: NVML's
    constructor asks the library for the code's text, which it cannot without the library.
    """

    def __init__(self, message: str):
        RuntimeError.__init__(self, message)
        self.status = _LIBRARY_NOT_FOUND

    def __reduce__(self):
        return (type(self), (str(self),))
