"""The machine as CUDA sees it: driver version and devices.

Nothing here touches the driver at import; each call initializes it on first use and raises
:class:`cuda_core.CUDAError` naming the cause where there is no driver or no GPU.
"""

from __future__ import annotations

from cuda_core._device import Device
from cuda_core._driver import device_count, driver_version

__all__ = ["System", "get_user_mode_driver_version", "get_num_devices"]


def get_user_mode_driver_version() -> tuple[int, int]:
    """The CUDA version of the installed driver, ``(major, minor)`` (``cuDriverGetVersion``)."""
    return driver_version()


def get_num_devices() -> int:
    """The number of CUDA devices visible to this process (``cuDeviceGetCount``)."""
    return device_count()


class System:
    """The CUDA system: a singleton with the driver version and the devices.

    ``System() is System()``.
    """

    _instance: System | None = None
    __slots__ = ()

    def __new__(cls) -> System:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

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
