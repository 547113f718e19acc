"""The errors of NVML calls, one class per ``nvmlReturn_t`` code, named as in ``cuda.core.system``.

Every class derives from :class:`NvmlError`, itself a :class:`RuntimeError`. They are cuda_core's
own classes (so that ``import cuda_core.system`` does not load ``cuda.bindings.nvml``): an error
that ``cuda.bindings.nvml`` raises under a :mod:`cuda_core.system` call is re-raised as the class
of the same name here, with the same ``status`` code.
"""

from __future__ import annotations

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


class NvmlError(RuntimeError):
    """An NVML call failed.

    Attributes
    ----------
    status : int or None
        The ``nvmlReturn_t`` code, or None where the failure came before any NVML call (the
        library could not be loaded).
    """

    status: int | None = None

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status

    def __reduce__(self):
        return (type(self), (self.args[0] if self.args else "", self.status))


# (class name, nvmlReturn_t code), from nvml.h.
_CODES = (
    ("UninitializedError", 1),
    ("InvalidArgumentError", 2),
    ("NotSupportedError", 3),
    ("NoPermissionError", 4),
    ("AlreadyInitializedError", 5),
    ("NotFoundError", 6),
    ("InsufficientSizeError", 7),
    ("InsufficientPowerError", 8),
    ("DriverNotLoadedError", 9),
    ("TimeoutError", 10),
    ("IrqIssueError", 11),
    ("LibraryNotFoundError", 12),
    ("FunctionNotFoundError", 13),
    ("CorruptedInforomError", 14),
    ("GpuIsLostError", 15),
    ("ResetRequiredError", 16),
    ("OperatingSystemError", 17),
    ("LibRmVersionMismatchError", 18),
    ("InUseError", 19),
    ("MemoryError", 20),
    ("NoDataError", 21),
    ("VgpuEccNotSupportedError", 22),
    ("InsufficientResourcesError", 23),
    ("FreqNotSupportedError", 24),
    ("ArgumentVersionMismatchError", 25),
    ("DeprecatedError", 26),
    ("NotReadyError", 27),
    ("GpuNotFoundError", 28),
    ("InvalidStateError", 29),
    ("ResetTypeNotSupportedError", 30),
    ("UnknownError", 999),
)


class UninitializedError(NvmlError):
    """NVML was not initialized (``NVML_ERROR_UNINITIALIZED``)."""


class InvalidArgumentError(NvmlError):
    """NVML refused an argument (``NVML_ERROR_INVALID_ARGUMENT``)."""


class NotSupportedError(NvmlError):
    """The device does not support the query or setting (``NVML_ERROR_NOT_SUPPORTED``)."""


class NoPermissionError(NvmlError):
    """The caller lacks the permission (``NVML_ERROR_NO_PERMISSION``)."""


class AlreadyInitializedError(NvmlError):
    """``NVML_ERROR_ALREADY_INITIALIZED`` (deprecated by NVML)."""


class NotFoundError(NvmlError):
    """No such object, e.g. no device with that UUID (``NVML_ERROR_NOT_FOUND``)."""


class InsufficientSizeError(NvmlError):
    """A buffer was too small (``NVML_ERROR_INSUFFICIENT_SIZE``)."""


class InsufficientPowerError(NvmlError):
    """The device's external power cables are not connected (``NVML_ERROR_INSUFFICIENT_POWER``)."""


class DriverNotLoadedError(NvmlError):
    """The NVIDIA kernel driver is not loaded (``NVML_ERROR_DRIVER_NOT_LOADED``)."""


class TimeoutError(NvmlError):  # noqa: A001 - cuda.core's name
    """The call timed out (``NVML_ERROR_TIMEOUT``)."""


class IrqIssueError(NvmlError):
    """The kernel detected an interrupt issue with a GPU (``NVML_ERROR_IRQ_ISSUE``)."""


class LibraryNotFoundError(NvmlError):
    """NVML (``libnvidia-ml``) cannot be loaded or used: no NVIDIA driver is installed, or
    ``cuda.bindings`` has no NVML bindings (``NVML_ERROR_LIBRARY_NOT_FOUND``)."""


class FunctionNotFoundError(NvmlError):
    """The installed NVML lacks the function (``NVML_ERROR_FUNCTION_NOT_FOUND``)."""


class CorruptedInforomError(NvmlError):
    """The device's InfoROM is corrupted (``NVML_ERROR_CORRUPTED_INFOROM``)."""


class GpuIsLostError(NvmlError):
    """The GPU fell off the bus or is otherwise inaccessible (``NVML_ERROR_GPU_IS_LOST``)."""


class ResetRequiredError(NvmlError):
    """The GPU needs a reset (``NVML_ERROR_RESET_REQUIRED``)."""


class OperatingSystemError(NvmlError):
    """The operating system blocked the call (``NVML_ERROR_OPERATING_SYSTEM``)."""


class LibRmVersionMismatchError(NvmlError):
    """NVML and the kernel driver are of different versions (``NVML_ERROR_LIB_RM_VERSION_MISMATCH``)."""


class InUseError(NvmlError):
    """The GPU is in use (``NVML_ERROR_IN_USE``)."""


class MemoryError(NvmlError):  # noqa: A001 - cuda.core's name
    """NVML ran out of memory (``NVML_ERROR_MEMORY``)."""


class NoDataError(NvmlError):
    """No data (``NVML_ERROR_NO_DATA``)."""


class VgpuEccNotSupportedError(NvmlError):
    """ECC is enabled and the vGPU cannot support it (``NVML_ERROR_VGPU_ECC_NOT_SUPPORTED``)."""


class InsufficientResourcesError(NvmlError):
    """Not enough resources (``NVML_ERROR_INSUFFICIENT_RESOURCES``)."""


class FreqNotSupportedError(NvmlError):
    """The frequency is not supported (``NVML_ERROR_FREQ_NOT_SUPPORTED``)."""


class ArgumentVersionMismatchError(NvmlError):
    """A structure's version does not match the library's (``NVML_ERROR_ARGUMENT_VERSION_MISMATCH``)."""


class DeprecatedError(NvmlError):
    """The function is deprecated (``NVML_ERROR_DEPRECATED``)."""


class NotReadyError(NvmlError):
    """The system is not ready for the request (``NVML_ERROR_NOT_READY``)."""


class GpuNotFoundError(NvmlError):
    """The GPU is not found (``NVML_ERROR_GPU_NOT_FOUND``)."""


class InvalidStateError(NvmlError):
    """The resource is in an invalid state (``NVML_ERROR_INVALID_STATE``)."""


class ResetTypeNotSupportedError(NvmlError):
    """The reset type is not supported (``NVML_ERROR_RESET_TYPE_NOT_SUPPORTED``)."""


class UnknownError(NvmlError):
    """An internal NVML error (``NVML_ERROR_UNKNOWN``)."""


# Read-only after import: the class of each code.
_BY_STATUS = {code: globals()[name] for name, code in _CODES}


def error_for_status(status: int | None, message: str) -> NvmlError:
    """The exception for an ``nvmlReturn_t`` code (:class:`NvmlError` for an unknown one)."""
    cls = NvmlError if status is None else _BY_STATUS.get(status, NvmlError)
    return cls(message, status)

