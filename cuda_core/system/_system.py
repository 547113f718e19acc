"""The machine: driver versions, device counts, process names, and the ``System`` singleton.

Nothing here touches the driver or NVML at import. ``get_user_mode_driver_version``,
``get_num_devices`` and :class:`System` go through the CUDA driver (initialized on first use;
:class:`cuda_core.CUDAError` where there is no driver or no GPU); the other functions go
through NVML (see :mod:`cuda_core.system._nvml`).
"""

from __future__ import annotations

import re

from cuda_core._checks import check_int
from cuda_core._device import Device
from cuda_core._driver import device_count, driver_version
from cuda_core.system._nvml import CUDA_BINDINGS_NVML_IS_COMPATIBLE, call

__all__ = [
    "CUDA_BINDINGS_NVML_IS_COMPATIBLE",
    "System",
    "get_driver_branch",
    "get_kernel_mode_driver_version",
    "get_num_devices",
    "get_nvml_version",
    "get_process_name",
    "get_user_mode_driver_version",
]


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


def get_user_mode_driver_version() -> tuple[int, int]:
    """The CUDA version of the installed driver, ``(major, minor)`` (``cuDriverGetVersion``)."""
    return driver_version()


def get_kernel_mode_driver_version() -> tuple[int, ...]:
    """The kernel-mode driver's version, e.g. ``(580, 65, 6)`` for 580.65.06 (two numbers on
    WSL) (``nvmlSystemGetDriverVersion``).

    Raises
    ------
    cuda_core.system.LibraryNotFoundError
        NVML cannot be used (no NVIDIA driver, or ``cuda.bindings`` without NVML bindings); a
        ``RuntimeError``.
    """
    return _version_tuple(call("system_get_driver_version"))


def get_nvml_version() -> tuple[int, ...]:
    """The NVML library's version, e.g. ``(13, 580, 65, 6)`` (``nvmlSystemGetNVMLVersion``)."""
    return _version_tuple(call("system_get_nvml_version"))


def get_driver_branch() -> str:
    """The driver's branch, e.g. ``"r580_00"`` (``nvmlSystemGetDriverBranch``)."""
    return str(call("system_get_driver_branch"))


def get_num_devices() -> int:
    """The number of CUDA devices visible to this process (``cuDeviceGetCount``).

    Unlike NVML's count (:meth:`cuda_core.system.Device.get_device_count`), this one honours
    ``CUDA_VISIBLE_DEVICES`` and does not need NVML.
    """
    return device_count()


def get_process_name(pid: int) -> str:
    """The name of the process ``pid`` (``nvmlSystemGetProcessName``)."""
    pid = check_int(pid, "pid", 0, 0xFFFFFFFF)
    return str(call("system_get_process_name", pid))


class System:
    """The CUDA system: a singleton with the driver version and the devices.

    ``System() is System()``.
    """

    _instance: System  # made once, at import, so that no two threads can make two
    __slots__ = ()

    def __new__(cls) -> System:
        return System._instance

    @property
    def driver_version(self) -> tuple[int, int]:
        """The driver's CUDA version, ``(major, minor)``."""
        return driver_version()

    @property
    def num_devices(self) -> int:
        """The number of visible CUDA devices."""
        return device_count()

    @property
    def devices(self) -> tuple[Device, ...]:
        """All devices, ordered by ordinal (this thread's Device singletons)."""
        return Device.get_all_devices()

    def __repr__(self) -> str:
        return "<cuda_core.System>"


System._instance = object.__new__(System)
