"""The enumerations of :mod:`cuda_core.system`, named and valued as in ``cuda.core.system.typing``.

The string enumerations are ``str`` subclasses: every API that takes one also takes its plain
string value (``"graphics"`` for ``ClockType.GRAPHICS``), and a member compares equal to it.
:class:`DeviceArch` is an ``IntEnum`` of NVML's ``NVML_DEVICE_ARCH_*`` codes. ``FieldId`` (NVML's
field ids) is ``cuda.bindings.nvml``'s own class, as in ``cuda.core``: the same object, imported
on first use.
"""

from __future__ import annotations

import enum
from typing import Any

from cuda_core._enum import StrEnum as _StrEnum
from cuda_core.system._nvml import lazy_names as _lazy_names

__all__ = [
    "AddressingMode",
    "AffinityScope",
    "ClockId",
    "ClockType",
    "ClocksEventReasons",
    "CoolerControl",
    "CoolerTarget",
    "DeviceArch",
    "EventType",
    "FanControlPolicy",
    "FieldId",
    "GpuP2PCapsIndex",
    "GpuP2PStatus",
    "GpuTopologyLevel",
    "InforomObject",
    "SystemEventType",
    "TemperatureThresholds",
    "ThermalController",
    "ThermalTarget",
]


class AddressingMode(_StrEnum):
    """The device's addressing mode."""

    HMM = "hmm"
    ATS = "ats"


class AffinityScope(_StrEnum):
    """The scope of a CPU or memory affinity query."""

    NODE = "node"
    SOCKET = "socket"


class ClockId(_StrEnum):
    """Which clock of a domain :meth:`ClockInfo.get_current_mhz` reads."""

    CURRENT = "current"
    CUSTOMER_BOOST_MAX = "customer_boost_max"


class ClockType(_StrEnum):
    """A clock domain (:meth:`Device.get_clock <cuda_core.system.Device.get_clock>`)."""

    GRAPHICS = "graphics"
    SM = "sm"
    MEMORY = "memory"
    VIDEO = "video"


class ClocksEventReasons(_StrEnum):
    """Why the clocks are held where they are."""

    NONE = "none"
    GPU_IDLE = "gpu_idle"
    APPLICATIONS_CLOCKS_SETTING = "applications_clocks_setting"
    SW_POWER_CAP = "sw_power_cap"
    HW_SLOWDOWN = "hw_slowdown"
    SYNC_BOOST = "sync_boost"
    SW_THERMAL_SLOWDOWN = "sw_thermal_slowdown"
    HW_THERMAL_SLOWDOWN = "hw_thermal_slowdown"
    HW_POWER_BRAKE_SLOWDOWN = "hw_power_brake_slowdown"
    DISPLAY_CLOCK_SETTING = "display_clock_setting"
    BOARD_LIMIT = "board_limit"
    RELIABILITY = "reliability"


class CoolerControl(_StrEnum):
    """How a cooler is controlled."""

    TOGGLE = "toggle"
    VARIABLE = "variable"


class CoolerTarget(_StrEnum):
    """What a cooler cools."""

    NONE = "none"
    GPU = "gpu"
    MEMORY = "memory"
    POWER_SUPPLY = "power_supply"


class EventType(_StrEnum):
    """A kind of device event."""

    NONE = "none"
    SINGLE_BIT_ECC_ERROR = "single_bit_ecc_error"
    DOUBLE_BIT_ECC_ERROR = "double_bit_ecc_error"
    PSTATE = "pstate"
    XID_CRITICAL_ERROR = "xid_critical_error"
    CLOCK = "clock"
    POWER_SOURCE_CHANGE = "power_source_change"
    MIG_CONFIG_CHANGE = "mig_config_change"
    SINGLE_BIT_ECC_ERROR_STORM = "single_bit_ecc_error_storm"
    DRAM_RETIREMENT_EVENT = "dram_retirement_event"
    DRAM_RETIREMENT_FAILURE = "dram_retirement_failure"
    NON_FATAL_POISON_ERROR = "non_fatal_poison_error"
    FATAL_POISON_ERROR = "fatal_poison_error"
    GPU_UNAVAILABLE_ERROR = "gpu_unavailable_error"
    GPU_RECOVERY_ACTION = "gpu_recovery_action"


class FanControlPolicy(_StrEnum):
    """How a fan is driven."""

    TEMPERATURE_CONTROLLED = "temperature_controlled"
    MANUAL = "manual"


class GpuP2PCapsIndex(_StrEnum):
    """The peer-to-peer capability :func:`get_p2p_status` asks about."""

    READ = "read"
    WRITE = "write"
    NVLINK = "nvlink"
    ATOMICS = "atomics"
    PCI = "pci"
    PROP = "prop"
    UNKNOWN = "unknown"


class GpuP2PStatus(_StrEnum):
    """The answer of :func:`get_p2p_status`."""

    OK = "ok"
    CHIPSET_NOT_SUPPORTED = "chipset not supported"
    GPU_NOT_SUPPORTED = "GPU not supported"
    IOH_TOPOLOGY_NOT_SUPPORTED = "IOH topology not supported"
    DISABLED_BY_REGKEY = "disabled by regkey"
    NOT_SUPPORTED = "not supported"
    UNKNOWN = "unknown"


class GpuTopologyLevel(_StrEnum):
    """How far apart two GPUs are, nearest first."""

    INTERNAL = "internal"
    SINGLE = "single"
    MULTIPLE = "multiple"
    HOSTBRIDGE = "hostbridge"
    NODE = "node"
    SYSTEM = "system"


class InforomObject(_StrEnum):
    """An InfoROM object."""

    OEM = "oem"
    ECC = "ecc"
    POWER = "power"
    DEN = "den"


class SystemEventType(_StrEnum):
    """A kind of system event."""

    UNBIND = "unbind"
    BIND = "bind"


class TemperatureThresholds(_StrEnum):
    """A temperature threshold (:meth:`Temperature.get_threshold`)."""

    SHUTDOWN = "shutdown"
    SLOWDOWN = "slowdown"
    MEM_MAX = "mem_max"
    GPU_MAX = "gpu_max"
    ACOUSTIC_MIN = "acoustic_min"
    ACOUSTIC_CURR = "acoustic_curr"
    ACOUSTIC_MAX = "acoustic_max"
    GPS_CURR = "gps_curr"


class ThermalController(_StrEnum):
    """A thermal controller."""

    GPU_INTERNAL = "gpu_internal"
    ADM1032 = "adm1032"
    ADT7461 = "adt7461"
    MAX6649 = "max6649"
    MAX1617 = "max1617"
    LM99 = "lm99"
    LM89 = "lm89"
    LM64 = "lm64"
    G781 = "g781"
    ADT7473 = "adt7473"
    SBMAX6649 = "sbmax6649"
    VBIOSEVT = "vbiosevt"
    OS = "os"
    NVSYSCON_CANOAS = "nvsyscon_canoas"
    NVSYSCON_E551 = "nvsyscon_e551"
    MAX6649R = "max6649r"
    ADT7473S = "adt7473s"
    UNKNOWN = "unknown"


class ThermalTarget(_StrEnum):
    """What a thermal sensor measures."""

    NONE = "none"
    GPU = "gpu"
    MEMORY = "memory"
    POWER_SUPPLY = "power_supply"
    BOARD = "board"
    VCD_BOARD = "vcd_board"
    VCD_INLET = "vcd_inlet"
    VCD_OUTLET = "vcd_outlet"
    ALL = "all"


class DeviceArch(enum.IntEnum):
    """A device's architecture (:attr:`Device.arch <cuda_core.system.Device.arch>`), NVML's
    ``NVML_DEVICE_ARCH_*`` code."""

    KEPLER = 2
    MAXWELL = 3
    PASCAL = 4
    VOLTA = 5
    TURING = 6
    AMPERE = 7
    ADA = 8
    HOPPER = 9
    BLACKWELL = 10
    UNKNOWN = 0xFFFFFFFF


_FROM_NVML = ("FieldId",)


def _load(name: str) -> Any:
    from cuda.bindings import nvml

    return getattr(nvml, name)


__getattr__, __dir__ = _lazy_names(__name__, _FROM_NVML, _load)
