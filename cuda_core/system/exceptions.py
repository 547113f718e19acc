"""The errors of NVML calls: ``cuda.bindings.nvml``'s own classes, as in ``cuda.core.system``.

``cuda_core.system.NotSupportedError is cuda.bindings.nvml.NotSupportedError``, and so on for
each name below: an error NVML reports under a :mod:`cuda_core.system` call is the exception
``cuda.bindings.nvml`` raised, so ``except cuda.bindings.nvml.NvmlError`` and
``except cuda_core.system.NvmlError`` catch the same errors. Each class stands for one
``nvmlReturn_t`` code (``status``) and is made from that code alone, e.g.
``NotSupportedError(3)``; its message is NVML's text for the code. ``NvmlError`` derives from
``Exception``.

The names are looked up on first use (PEP 562), so that ``import cuda_core.system`` does not
import ``cuda.bindings.nvml``.

Where NVML cannot be used at all (no ``libnvidia-ml``, or ``cuda.bindings`` without NVML
bindings), a call raises :class:`NvmlUnavailableError`: a ``LibraryNotFoundError`` and also a
``RuntimeError`` (what ``cuda.core`` raises then), with a message that names the cause.
"""

from __future__ import annotations

from typing import Any

from cuda_core.system._nvml import lazy_names as _lazy_names

__all__ = [
    "AlreadyInitializedError",
    "ArgumentVersionMismatchError",
    "CorruptedInforomError",
    "DeprecatedError",
    "DriverNotLoadedError",
    "FreqNotSupportedError",
    "FunctionNotFoundError",
    "GpuIsLostError",
    "GpuNotFoundError",
    "InUseError",
    "InsufficientPowerError",
    "InsufficientResourcesError",
    "InsufficientSizeError",
    "InvalidArgumentError",
    "InvalidStateError",
    "IrqIssueError",
    "LibRmVersionMismatchError",
    "LibraryNotFoundError",
    "MemoryError",
    "NoDataError",
    "NoPermissionError",
    "NotFoundError",
    "NotReadyError",
    "NotSupportedError",
    "NvmlError",
    "OperatingSystemError",
    "ResetRequiredError",
    "ResetTypeNotSupportedError",
    "TimeoutError",
    "UninitializedError",
    "UnknownError",
    "VgpuEccNotSupportedError",
]

def _load(name: str) -> Any:
    if name == "NvmlUnavailableError":
        from cuda_core.system._unavailable import NvmlUnavailableError

        return NvmlUnavailableError
    from cuda.bindings import nvml

    return getattr(nvml, name)


__getattr__, __dir__ = _lazy_names(__name__, [*__all__, "NvmlUnavailableError"], _load)
