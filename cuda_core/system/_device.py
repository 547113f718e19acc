"""``cuda_core.system.Device``: a GPU as NVML sees it, and the queries between two GPUs.

Arguments are checked before NVML is touched, so a wrong argument is a ``TypeError`` or
``ValueError`` also where NVML is absent. Each property reads NVML afresh (nothing is cached:
temperatures, clocks and memory use change); errors are those of :mod:`cuda_core.system.exceptions`.
"""

from __future__ import annotations

import os
import sys
import warnings
import weakref
from typing import NamedTuple

from cuda_core._checks import check_enum, check_int
from cuda_core.system._nvml import call, nvml
from cuda_core.system.typing import (
    AddressingMode,
    AffinityScope,
    ClockId,
    ClockType,
    ClocksEventReasons,
    CoolerControl,
    CoolerTarget,
    DeviceArch,
    EventType,
    FanControlPolicy,
    GpuP2PCapsIndex,
    GpuP2PStatus,
    GpuTopologyLevel,
    InforomObject,
    TemperatureThresholds,
)

__all__ = [
    "BAR1MemoryInfo",
    "ClockInfo",
    "CoolerInfo",
    "Device",
    "DeviceAttributes",
    "DeviceEvents",
    "EventData",
    "FanInfo",
    "FieldValue",
    "FieldValues",
    "GpuDynamicPstatesInfo",
    "GpuDynamicPstatesUtilization",
    "InforomInfo",
    "MemoryInfo",
    "MigInfo",
    "NvlinkInfo",
    "PciInfo",
    "ProcessInfo",
    "RepairStatus",
    "Temperature",
    "Utilization",
    "get_p2p_status",
    "get_topology_common_ancestor",
]

_U32_MAX = 0xFFFFFFFF

# The NVML codes (nvml.h) of the string enumerations' members.
_CLOCK_TYPE = {ClockType.GRAPHICS: 0, ClockType.SM: 1, ClockType.MEMORY: 2, ClockType.VIDEO: 3}
_CLOCK_ID = {ClockId.CURRENT: 0, ClockId.CUSTOMER_BOOST_MAX: 3}
_AFFINITY_SCOPE = {AffinityScope.NODE: 0, AffinityScope.SOCKET: 1}
_THRESHOLD = {member: code for code, member in enumerate(TemperatureThresholds)}
_P2P_CAPS = {GpuP2PCapsIndex.READ: 0, GpuP2PCapsIndex.WRITE: 1, GpuP2PCapsIndex.NVLINK: 2,
             GpuP2PCapsIndex.ATOMICS: 3, GpuP2PCapsIndex.PCI: 4, GpuP2PCapsIndex.PROP: 4,
             GpuP2PCapsIndex.UNKNOWN: 5}
_P2P_STATUS = dict(enumerate(GpuP2PStatus))  # codes 0..6, in the enumeration's order
_TOPOLOGY = {GpuTopologyLevel.INTERNAL: 0, GpuTopologyLevel.SINGLE: 10,
             GpuTopologyLevel.MULTIPLE: 20, GpuTopologyLevel.HOSTBRIDGE: 30,
             GpuTopologyLevel.NODE: 40, GpuTopologyLevel.SYSTEM: 50}
_TOPOLOGY_OF_CODE = {code: level for level, code in _TOPOLOGY.items()}
_BRANDS = ("Unknown", "Quadro", "Tesla", "NVS", "GRID", "GeForce", "Titan",
           "NVIDIA Virtual Applications", "NVIDIA Virtual PC", "NVIDIA Virtual Compute Server",
           "NVIDIA RTX Virtual Workstation", "NVIDIA Cloud Gaming", "Quadro RTX", "NVIDIA RTX",
           "NVIDIA", "GeForce RTX", "Titan RTX")
# nvmlNvlinkVersion_t codes, as (major, minor).
_NVLINK_VERSIONS = {1: (1, 0), 2: (2, 0), 3: (2, 2), 4: (3, 0), 5: (3, 1), 6: (4, 0),
                    7: (5, 0), 8: (6, 0)}
_PSTATE_UNKNOWN = 32
# The prefixes of NVML's UUID strings (a GPU's, a MIG device's).
_UUID_PREFIXES = ("GPU-", "MIG-")
# nvmlClocksEventReasons bits (nvml.h), in the enumeration's order after NONE.
_EVENT_REASON_BITS = tuple((1 << i, reason) for i, reason in enumerate(
    r for r in ClocksEventReasons if r is not ClocksEventReasons.NONE))
# Bits per word of NVML's affinity masks (an unsigned long on Linux).
_MASK_BITS = 64


def _text(value, what: str) -> str:
    if isinstance(value, bytes):
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            raise ValueError(f"{what} must be ASCII, got {value!r}") from None
    elif not isinstance(value, str):
        raise TypeError(f"{what} must be a str or bytes, not {type(value).__name__}")
    if not value or "\0" in value:
        raise ValueError(f"{what} must be a non-empty string without NUL characters, got "
                         f"{value!r}")
    return value


def _device_arg(value, what: str) -> Device:
    if not isinstance(value, Device):
        raise TypeError(f"{what} must be a cuda_core.system.Device, not {type(value).__name__}"
                        + (" (use Device.to_system_device())"
                           if type(value).__name__ == "Device" else ""))
    return value


def _bits(words) -> list[int]:
    """The indices of the set bits of a sequence of mask words, ascending. The word width is
    the array's item size where it has one (NumPy, ``array.array``), else an unsigned long's."""
    width = int(getattr(words, "itemsize", _MASK_BITS // 8)) * 8
    out = []
    for i, word in enumerate(words):
        word = int(word)
        while word:
            low = word & -word
            out.append(i * width + low.bit_length() - 1)
            word ^= low
    return out


def _reasons(mask) -> list[ClocksEventReasons]:
    mask = int(mask)
    return [reason for bit, reason in _EVENT_REASON_BITS if mask & bit]


class MemoryInfo(NamedTuple):
    """A device's memory, in bytes (``nvmlDeviceGetMemoryInfo_v2``). ``reserved`` is what the
    driver and firmware hold; NVML counts it in ``used``."""

    total: int
    free: int
    used: int
    reserved: int


class BAR1MemoryInfo(NamedTuple):
    """A device's BAR1 aperture (the window through which the CPU and peers reach device
    memory), in bytes (``nvmlDeviceGetBAR1MemoryInfo``)."""

    total: int
    free: int
    used: int


class Utilization(NamedTuple):
    """Percentages of the last sample period (``nvmlDeviceGetUtilizationRates``): ``gpu``, of
    the time one or more kernels ran; ``memory``, of the time device memory was read or
    written."""

    gpu: int
    memory: int


class PciInfo:
    """The PCI attributes of a device (``nvmlDeviceGetPciInfoExt``), with its link's state
    read on each access."""

    __slots__ = ("_handle", "bus", "bus_id", "device", "domain", "vendor_id", "device_id",
                 "subsystem_id", "base_class", "sub_class")

    def __init__(self, handle: int):
        info = call("device_get_pci_info_ext", handle)
        self._handle = handle
        #: The bus number.
        self.bus = int(info.bus)
        #: The PCI bus id, ``domain:bus:device.function``, e.g. ``"00000000:1B:00.0"``.
        self.bus_id = str(info.bus_id)
        #: The device number on the bus.
        self.device = int(info.device_)
        #: The PCI domain.
        self.domain = int(info.domain)
        pci_id = int(info.pci_device_id)
        #: The PCI vendor id (0x10DE for NVIDIA).
        self.vendor_id = pci_id & 0xFFFF
        #: The PCI device id.
        self.device_id = pci_id >> 16
        #: The PCI subsystem id.
        self.subsystem_id = int(info.pci_sub_system_id)
        #: The PCI base class code.
        self.base_class = int(info.base_class)
        #: The PCI sub class code.
        self.sub_class = int(info.sub_class)

    @property
    def link_generation(self) -> int:
        """The highest PCIe generation the GPU supports (``nvmlDeviceGetGpuMaxPcieLinkGeneration``)."""
        return int(call("device_get_gpu_max_pcie_link_generation", self._handle))

    @property
    def max_link_generation(self) -> int:
        """The highest PCIe generation of this GPU in this system (``nvmlDeviceGetMaxPcieLinkGeneration``)."""
        return int(call("device_get_max_pcie_link_generation", self._handle))

    @property
    def max_link_width(self) -> int:
        """The widest PCIe link of this GPU in this system (``nvmlDeviceGetMaxPcieLinkWidth``)."""
        return int(call("device_get_max_pcie_link_width", self._handle))

    @property
    def current_link_generation(self) -> int:
        """The current PCIe generation (``nvmlDeviceGetCurrPcieLinkGeneration``)."""
        return int(call("device_get_curr_pcie_link_generation", self._handle))

    @property
    def current_link_width(self) -> int:
        """The current PCIe link width (``nvmlDeviceGetCurrPcieLinkWidth``)."""
        return int(call("device_get_curr_pcie_link_width", self._handle))

    @property
    def rx_throughput(self) -> int:
        """PCIe bytes received over the last 20 ms, in KB/s (``nvmlDeviceGetPcieThroughput``)."""
        return int(call("device_get_pcie_throughput", self._handle, 1))

    @property
    def tx_throughput(self) -> int:
        """PCIe bytes sent over the last 20 ms, in KB/s (``nvmlDeviceGetPcieThroughput``)."""
        return int(call("device_get_pcie_throughput", self._handle, 0))

    @property
    def replay_counter(self) -> int:
        """The PCIe replay counter (``nvmlDeviceGetPcieReplayCounter``)."""
        return int(call("device_get_pcie_replay_counter", self._handle))

    def __repr__(self) -> str:
        return f"<cuda_core.system.PciInfo bus_id={self.bus_id!r}>"


class ClockInfo:
    """One clock domain of a device (:meth:`Device.get_clock`); frequencies in MHz."""

    __slots__ = ("_handle", "_type", "clock_type")

    def __init__(self, handle: int, clock_type):
        self.clock_type = check_enum(clock_type, "clock_type", ClockType)
        self._handle = handle
        self._type = _CLOCK_TYPE[self.clock_type]

    def get_current_mhz(self, clock_id=ClockId.CURRENT) -> int:
        """The clock's frequency: the current one, or with ``clock_id="customer_boost_max"``
        the customer's boost limit (``nvmlDeviceGetClock``)."""
        clock_id = check_enum(clock_id, "clock_id", ClockId)
        return int(call("device_get_clock", self._handle, self._type, _CLOCK_ID[clock_id]))

    def get_max_mhz(self) -> int:
        """The highest frequency of this clock (``nvmlDeviceGetMaxClockInfo``)."""
        return int(call("device_get_max_clock_info", self._handle, self._type))

    def get_max_customer_boost_mhz(self) -> int:
        """The customer-defined boost limit (``nvmlDeviceGetMaxCustomerBoostClock``)."""
        return int(call("device_get_max_customer_boost_clock", self._handle, self._type))

    def get_min_max_clock_of_pstate_mhz(self, pstate: int) -> tuple[int, int]:
        """``(min, max)`` of this clock in performance state ``pstate`` (0 to 15)
        (``nvmlDeviceGetMinMaxClockOfPState``)."""
        pstate = check_int(pstate, "pstate", 0, 15)
        low, high = call("device_get_min_max_clock_of_p_state", self._handle, self._type, pstate)
        return int(low), int(high)

    def __repr__(self) -> str:
        return f"<cuda_core.system.ClockInfo {self.clock_type.value}>"


class Temperature:
    """A device's temperatures, in degrees Celsius (:attr:`Device.temperature`)."""

    __slots__ = ("_handle",)

    def __init__(self, handle: int):
        self._handle = handle

    def get_sensor(self) -> int:
        """The GPU die's current temperature (``nvmlDeviceGetTemperatureV``)."""
        return int(call("device_get_temperature_v", self._handle, 0))

    def get_threshold(self, threshold_type) -> int:
        """The temperature of a :class:`~cuda_core.system.typing.TemperatureThresholds` (the
        slowdown or shutdown point, say) (``nvmlDeviceGetTemperatureThreshold``)."""
        threshold_type = check_enum(threshold_type, "threshold_type", TemperatureThresholds)
        return int(call("device_get_temperature_threshold", self._handle,
                        _THRESHOLD[threshold_type]))

    @property
    def margin(self) -> int:
        """How far the GPU is from its nearest slowdown threshold (``nvmlDeviceGetMarginTemperature``)."""
        return int(call("device_get_margin_temperature", self._handle))

    def __repr__(self) -> str:
        return "<cuda_core.system.Temperature>"


# The most links a device can have (NVML_NVLINK_MAX_LINKS).
_MAX_LINKS = 18


class _NvlinkInfoType(type):
    @property
    def max_links(cls) -> int:
        """The most links a device can have (``NVML_NVLINK_MAX_LINKS``, 18).

        .. deprecated:: 1.1.0 (cuda.core)
            Reading it gives a ``DeprecationWarning``, as in cuda.core: use
            :meth:`Device.get_nvlink_count` for a device's own count.
        """
        warnings.warn("NvlinkInfo.max_links is deprecated, as in cuda.core: use "
                      "Device.get_nvlink_count() for a device's number of NVLinks",
                      DeprecationWarning, stacklevel=2)
        return _MAX_LINKS


class NvlinkInfo(metaclass=_NvlinkInfoType):
    """One NVLink of a device (:meth:`Device.get_nvlink`)."""

    __slots__ = ("_handle", "link", "__weakref__")

    def __init__(self, device: Device, link: int):
        device = _device_arg(device, "device")
        link = check_int(link, "link", 0)
        count = device.get_nvlink_count()
        if link >= count:
            raise ValueError(f"link must be between 0 and {count - 1}, got {link}" if count
                             else f"link {link} does not exist: the device has no NVLink")
        self._handle = device._handle
        #: The link's number.
        self.link = link

    @classmethod
    def _of(cls, handle: int, link: int) -> NvlinkInfo:
        # A link already known to exist.
        self = object.__new__(cls)
        self._handle = handle
        self.link = link
        return self

    @property
    def version(self) -> tuple[int, int]:
        """The link's NVLink version, ``(major, minor)`` (``nvmlDeviceGetNvLinkVersion``)."""
        code = int(call("device_get_nvlink_version", self._handle, self.link))
        return _NVLINK_VERSIONS.get(code, (0, 0))

    @property
    def state(self) -> bool:
        """Whether the link is active (``nvmlDeviceGetNvLinkState``)."""
        return int(call("device_get_nvlink_state", self._handle, self.link)) == 1

    def __repr__(self) -> str:
        return f"<cuda_core.system.NvlinkInfo link={self.link}>"


# -- the helper objects of the members below ---------------------------------------------------

# nvml.h codes of the enumerations these objects return.
_ADDRESSING_MODE = {1: AddressingMode.HMM, 2: AddressingMode.ATS}
_COOLER_CONTROL = {1: CoolerControl.TOGGLE, 2: CoolerControl.VARIABLE}
_COOLER_TARGET_BITS = ((1, CoolerTarget.NONE), (2, CoolerTarget.GPU), (4, CoolerTarget.MEMORY),
                       (8, CoolerTarget.POWER_SUPPLY))
# nvmlGpuDynamicPstatesInfo_t (nvml.h): NVML_MAX_GPU_UTILIZATIONS utilization domains, each
# four unsigned ints.
_MAX_GPU_UTILIZATIONS = 8
_PSTATES_UTILIZATION_SIZE = 16
_FAN_CONTROL_POLICY = {0: FanControlPolicy.TEMPERATURE_CONTROLLED, 1: FanControlPolicy.MANUAL}
_INFOROM_OBJECT = {InforomObject.OEM: 0, InforomObject.ECC: 1, InforomObject.POWER: 2,
                   InforomObject.DEN: 3}
_EVENT_TYPE_BITS = {EventType.NONE: 0, EventType.SINGLE_BIT_ECC_ERROR: 1 << 0,
                    EventType.DOUBLE_BIT_ECC_ERROR: 1 << 1, EventType.PSTATE: 1 << 2,
                    EventType.XID_CRITICAL_ERROR: 1 << 3, EventType.CLOCK: 1 << 4,
                    EventType.POWER_SOURCE_CHANGE: 1 << 7, EventType.MIG_CONFIG_CHANGE: 1 << 8,
                    EventType.SINGLE_BIT_ECC_ERROR_STORM: 1 << 9,
                    EventType.DRAM_RETIREMENT_EVENT: 1 << 10,
                    EventType.DRAM_RETIREMENT_FAILURE: 1 << 11,
                    EventType.NON_FATAL_POISON_ERROR: 1 << 12,
                    EventType.FATAL_POISON_ERROR: 1 << 13,
                    EventType.GPU_UNAVAILABLE_ERROR: 1 << 14,
                    EventType.GPU_RECOVERY_ACTION: 1 << 15}
_EVENT_OF_BIT = {bit: event for event, bit in _EVENT_TYPE_BITS.items()}
_ENABLED = 1  # nvmlEnableState_t NVML_FEATURE_ENABLED (and NVML_DEVICE_MIG_ENABLE)
# nvmlValueType_t codes, each with the union member that holds it.
_VALUE_MEMBERS = {0: ("d_val", float), 1: ("ui_val", int), 2: ("ul_val", int),
                  3: ("ull_val", int), 4: ("sll_val", int), 5: ("si_val", int),
                  6: ("us_val", int)}


def _bit_members(mask, table, what: str) -> list:
    """The members of ``table`` ((bit, member), ...) whose bits are set in ``mask``, in bit
    order; ``ValueError`` for a bit the table lacks (as cuda.core)."""
    mask = int(mask)
    known = dict(table)
    out = []
    while mask:
        low = mask & -mask
        if low not in known:
            raise ValueError(f"unknown {what} bit: {low}")
        out.append(known[low])
        mask ^= low
    return out


def _event_mask(events) -> int:
    """The NVML bit mask of an :class:`~cuda_core.system.typing.EventType`, its string, or a
    list of them."""
    if isinstance(events, str):
        events = [events]
    elif not isinstance(events, list):
        raise TypeError("events must be an EventType, str, or list of EventType or str, not "
                        f"{type(events).__name__}")
    mask = 0
    for event in events:
        mask |= _EVENT_TYPE_BITS[check_enum(event, "events", EventType)]
    return mask


def release_event_set(free, handle: int, error: type[BaseException]) -> None:
    """Frees an NVML event set (a finalizer: never raises). A failure becomes a
    :class:`~cuda_core.CUDAWarning`, or nothing while the interpreter shuts down; the set is
    then leaked rather than freed twice."""
    try:
        free(handle)
    except error as exc:
        if not sys.is_finalizing():
            from cuda_core._errors import CUDAWarning

            warnings.warn(f"freeing an NVML event set failed ({exc}); it is leaked",
                          CUDAWarning, stacklevel=2)


def _field_ids(field_ids) -> list:
    """``field_ids`` checked: a list of field ids (ints, e.g. ``FieldId`` members) or
    ``(field id, scope id)`` pairs, as ``(field id, scope id)`` pairs of plain ints, a bare
    field id with scope 0. Always pairs: cuda-bindings before 13.5 leaves the scope id of a bare
    field id uninitialized, and NVML reads it (and hands it back as the value's scope)."""
    if not isinstance(field_ids, (list, tuple)):
        raise TypeError(f"field_ids must be a list of field ids or (field id, scope id) pairs, "
                        f"not {type(field_ids).__name__}")
    out = []
    for item in field_ids:
        if isinstance(item, tuple):
            if len(item) != 2:
                raise ValueError(f"each field_ids entry must be a field id or a (field id, "
                                 f"scope id) pair, got {item!r}")
            out.append((check_int(item[0], "field id", 0, _U32_MAX),
                        check_int(item[1], "scope id", 0, _U32_MAX)))
        else:
            out.append((check_int(item, "field id", 0, _U32_MAX), 0))
    return out


class DeviceAttributes:
    """A device's fixed attributes (``nvmlDeviceGetAttributes_v2``; Ampere or newer, Linux),
    read once, when :attr:`Device.attributes` is read."""

    __slots__ = ("multiprocessor_count", "shared_copy_engine_count", "shared_decoder_count",
                 "shared_encoder_count", "shared_jpeg_count", "shared_ofa_count",
                 "gpu_instance_slice_count", "compute_instance_slice_count", "memory_size_mb",
                 "__weakref__")
    #: The number of streaming multiprocessors.
    multiprocessor_count: int
    #: The number of shared copy engines.
    shared_copy_engine_count: int
    #: The number of shared decoders.
    shared_decoder_count: int
    #: The number of shared encoders.
    shared_encoder_count: int
    #: The number of shared JPEG engines.
    shared_jpeg_count: int
    #: The number of shared optical flow accelerators.
    shared_ofa_count: int
    #: The number of GPU instance slices.
    gpu_instance_slice_count: int
    #: The number of compute instance slices.
    compute_instance_slice_count: int
    #: The device memory, in MiB.
    memory_size_mb: int

    def __init__(self, attributes):
        for name in DeviceAttributes.__slots__[:-1]:
            setattr(self, name, int(getattr(attributes, name)))

    def __repr__(self) -> str:
        return (f"<cuda_core.system.DeviceAttributes multiprocessor_count="
                f"{self.multiprocessor_count} memory_size_mb={self.memory_size_mb}>")


class CoolerInfo:
    """A device's cooler (``nvmlDeviceGetCoolerInfo``), read when :attr:`Device.cooler` is
    read."""

    __slots__ = ("_signal", "_target", "__weakref__")

    def __init__(self, cooler_info):
        self._signal = int(cooler_info.signal_type)
        self._target = int(cooler_info.target)

    @property
    def signal_type(self) -> CoolerControl | None:
        """How the cooler is driven, a :class:`~cuda_core.system.typing.CoolerControl`
        (``"toggle"`` or ``"variable"``); None for a cooler without a control signal."""
        return _COOLER_CONTROL.get(self._signal)

    @property
    def target(self) -> list[CoolerTarget]:
        """What the cooler cools, as :class:`~cuda_core.system.typing.CoolerTarget` members."""
        return _bit_members(self._target, _COOLER_TARGET_BITS, "cooler target")

    def __repr__(self) -> str:
        return f"<cuda_core.system.CoolerInfo signal_type={self.signal_type}>"


class FanInfo:
    """One fan of a device (:meth:`Device.get_fan`). Speeds are read on each access."""

    __slots__ = ("_handle", "_fan", "__weakref__")

    def __init__(self, handle: int, fan: int):
        self._handle = int(handle)
        self._fan = check_int(fan, "fan", 0, _U32_MAX)

    @property
    def speed(self) -> int:
        """The fan's intended speed, in percent of its maximum noise-tolerance speed (may exceed
        100) (``nvmlDeviceGetFanSpeed_v2``). Setting it sets the speed
        (``nvmlDeviceSetFanSpeed_v2``; needs root); :meth:`set_default_speed` undoes that."""
        return int(call("device_get_fan_speed_v2", self._handle, self._fan))

    @speed.setter
    def speed(self, speed: int) -> None:
        speed = check_int(speed, "speed", 0, _U32_MAX)
        call("device_set_fan_speed_v2", self._handle, self._fan, speed)

    @property
    def speed_rpm(self) -> int:
        """The fan's intended speed in revolutions per minute (``nvmlDeviceGetFanSpeedRPM``)."""
        return int(call("device_get_fan_speed_rpm", self._handle, self._fan))

    @property
    def target_speed(self) -> int:
        """The speed the driver aims the fan at, in percent (``nvmlDeviceGetTargetFanSpeed``)."""
        return int(call("device_get_target_fan_speed", self._handle, self._fan))

    @property
    def min_max_speed(self) -> tuple[int, int]:
        """``(min, max)`` speed of the device's fans, in percent
        (``nvmlDeviceGetMinMaxFanSpeed``)."""
        low, high = call("device_get_min_max_fan_speed", self._handle)
        return int(low), int(high)

    @property
    def control_policy(self) -> FanControlPolicy:
        """How the fan is driven, a :class:`~cuda_core.system.typing.FanControlPolicy`
        (``nvmlDeviceGetFanControlPolicy_v2``)."""
        code = int(call("device_get_fan_control_policy_v2", self._handle, self._fan))
        try:
            return _FAN_CONTROL_POLICY[code]
        except KeyError:
            raise ValueError(f"nvmlDeviceGetFanControlPolicy_v2 returned an unknown policy "
                             f"{code}") from None

    def set_default_speed(self) -> None:
        """Returns the fan to its default speed control (``nvmlDeviceSetDefaultFanSpeed_v2``;
        needs root)."""
        call("device_set_default_fan_speed_v2", self._handle, self._fan)

    def __repr__(self) -> str:
        return f"<cuda_core.system.FanInfo fan={self._fan}>"


class FieldValue:
    """One value of :meth:`Device.get_field_values`. Reading :attr:`value` raises NVML's error
    where that one field could not be read."""

    __slots__ = ("_value", "__weakref__")

    def __init__(self, field_value):
        if len(field_value) != 1:
            raise ValueError(f"a FieldValue holds one nvmlFieldValue_t, got {len(field_value)}")
        self._value = field_value

    @property
    def field_id(self):
        """The field's id, a ``cuda.bindings.nvml.FieldId``
        (:class:`cuda_core.system.typing.FieldId`)."""
        from cuda.bindings.nvml import FieldId

        return FieldId(int(self._value.field_id))

    @property
    def scope_id(self) -> int:
        """The scope id (a link, for NVLink fields, say); 0 where the field has none."""
        return int(self._value.scope_id)

    @property
    def timestamp(self) -> int:
        """When the value was sampled, in microseconds since 1970 (CPU clock)."""
        return int(self._value.timestamp)

    @property
    def latency_usec(self) -> int:
        """How long NVML took to update the value, in microseconds."""
        return int(self._value.latency_usec)

    @property
    def value(self) -> int | float:
        """The value: an int, or a float for a field of doubles.

        Raises
        ------
        cuda_core.system.NvmlError
            The subclass of the error NVML reported for this field (``NotSupportedError``, ...).
        """
        nvml().check_status(int(self._value.nvml_return))
        code = int(self._value.value_type)
        try:
            member, kind = _VALUE_MEMBERS[code]
        except KeyError:
            raise ValueError(f"NVML returned a field value of unknown type {code}") from None
        return kind(getattr(self._value.value, member)[0])

    def __repr__(self) -> str:
        return f"<cuda_core.system.FieldValue field_id={int(self._value.field_id)}>"


class FieldValues:
    """The values of :meth:`Device.get_field_values`, in the order asked for: a sequence of
    :class:`FieldValue`."""

    __slots__ = ("_values", "__weakref__")

    def __init__(self, field_values):
        self._values = field_values

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, idx: int) -> FieldValue:
        count = len(self._values)
        idx = check_int(idx, "idx")
        if idx < 0:
            idx += count
        if not 0 <= idx < count:
            raise IndexError(f"field value index out of range (0 to {count - 1})")
        return FieldValue(self._values[idx])

    def validate(self) -> None:
        """Raises the error of the first field NVML could not read, if any.

        Raises
        ------
        cuda_core.system.NvmlError
            The subclass of that field's error.
        """
        module = nvml()
        for i in range(len(self._values)):
            module.check_status(int(self._values[i].nvml_return))

    def get_all_values(self) -> list[int | float]:
        """Every value, in order (:attr:`FieldValue.value` of each); raises the first field's
        error, if any."""
        return [self[i].value for i in range(len(self))]

    def __repr__(self) -> str:
        return f"<cuda_core.system.FieldValues ({len(self)} values)>"


class InforomInfo:
    """A device's InfoROM (:attr:`Device.inforom`; for products with an InfoROM)."""

    __slots__ = ("_handle", "__weakref__")

    def __init__(self, device: Device):
        self._handle = _device_arg(device, "device")._handle

    def get_version(self, inforom) -> str:
        """The version of an InfoROM object, an
        :class:`~cuda_core.system.typing.InforomObject` (``nvmlDeviceGetInforomVersion``)."""
        inforom = check_enum(inforom, "inforom", InforomObject)
        return str(call("device_get_inforom_version", self._handle, _INFOROM_OBJECT[inforom]))

    @property
    def image_version(self) -> str:
        """The version of the InfoROM image (``nvmlDeviceGetInforomImageVersion``)."""
        return str(call("device_get_inforom_image_version", self._handle))

    @property
    def configuration_checksum(self) -> int:
        """The checksum of the configuration in the InfoROM
        (``nvmlDeviceGetInforomConfigurationChecksum``)."""
        return int(call("device_get_inforom_configuration_checksum", self._handle))

    def validate(self) -> None:
        """Reads the InfoROM and checks its checksums (``nvmlDeviceValidateInforom``);
        :class:`~cuda_core.system.CorruptedInforomError` where it is corrupted."""
        call("device_validate_inforom", self._handle)

    @property
    def bbx_flush_time(self) -> tuple[int, int]:
        """``(timestamp, duration_us)`` of the last flush of the black-box InfoROM object in
        this run (``nvmlDeviceGetLastBBXFlushTime``)."""
        timestamp, duration = call("device_get_last_bbx_flush_time", self._handle)
        return int(timestamp), int(duration)

    @property
    def board_part_number(self) -> str:
        """The board part number stored in the InfoROM (``nvmlDeviceGetBoardPartNumber``)."""
        return str(call("device_get_board_part_number", self._handle))

    def __repr__(self) -> str:
        return "<cuda_core.system.InforomInfo>"


class MigInfo:
    """A device's Multi-Instance GPU state (:attr:`Device.mig`; Ampere or newer)."""

    __slots__ = ("_handle", "__weakref__")

    def __init__(self, device: Device):
        self._handle = _device_arg(device, "device")._handle

    @property
    def is_mig_device(self) -> bool:
        """Whether this is a MIG device (a compute instance) rather than a GPU
        (``nvmlDeviceIsMigDeviceHandle``)."""
        return bool(call("device_is_mig_device_handle", self._handle))

    @property
    def mode(self) -> bool:
        """Whether MIG mode is on now (``nvmlDeviceGetMigMode``). Setting it asks for a change
        (``nvmlDeviceSetMigMode``; needs root, and may need a GPU reset:
        :attr:`pending_mode` shows the mode after it)."""
        current, _ = call("device_get_mig_mode", self._handle)
        return int(current) == _ENABLED

    @mode.setter
    def mode(self, mode: bool) -> None:
        if not isinstance(mode, (bool, int)):
            raise TypeError(f"mode must be a bool, not {type(mode).__name__}")
        call("device_set_mig_mode", self._handle, 1 if mode else 0)

    @property
    def pending_mode(self) -> bool:
        """Whether MIG mode will be on after the next activation (``nvmlDeviceGetMigMode``)."""
        _, pending = call("device_get_mig_mode", self._handle)
        return int(pending) == _ENABLED

    @property
    def device_count(self) -> int:
        """The most MIG devices this GPU can hold; 0 without MIG
        (``nvmlDeviceGetMaxMigDeviceCount``)."""
        return int(call("device_get_max_mig_device_count", self._handle))

    @property
    def parent(self) -> Device:
        """The GPU of this MIG device (``nvmlDeviceGetDeviceHandleFromMigDeviceHandle``)."""
        return Device._from_handle(
            call("device_get_device_handle_from_mig_device_handle", self._handle))

    def get_device_by_index(self, index: int) -> Device:
        """MIG device ``index`` (0 to :attr:`device_count` - 1) of this GPU
        (``nvmlDeviceGetMigDeviceHandleByIndex``); :class:`~cuda_core.system.NotFoundError`
        where that slot holds none."""
        index = check_int(index, "index", 0, _U32_MAX)
        return Device._from_handle(
            call("device_get_mig_device_handle_by_index", self._handle, index))

    def get_all_devices(self) -> tuple[Device, ...]:
        """The MIG devices that exist on this GPU, by index."""
        module = nvml()
        out = []
        for index in range(self.device_count):
            try:
                out.append(self.get_device_by_index(index))
            except module.NotFoundError:  # an empty slot
                continue
        return tuple(out)

    def __repr__(self) -> str:
        return "<cuda_core.system.MigInfo>"


class GpuDynamicPstatesUtilization:
    """One utilization domain of :attr:`Device.dynamic_pstates_info`."""

    __slots__ = ("is_present", "percentage", "inc_threshold", "dec_threshold", "__weakref__")

    def __init__(self, utilization):
        #: Whether the GPU has this domain.
        self.is_present = bool(utilization.b_is_present)
        #: How busy the domain was over the last second, in percent.
        self.percentage = int(utilization.percentage)
        #: The utilization above which the P-state may rise.
        self.inc_threshold = int(utilization.inc_threshold)
        #: The utilization below which the P-state may fall.
        self.dec_threshold = int(utilization.dec_threshold)

    def __repr__(self) -> str:
        return (f"<cuda_core.system.GpuDynamicPstatesUtilization is_present={self.is_present} "
                f"percentage={self.percentage}>")


class GpuDynamicPstatesInfo:
    """The dynamic P-state samples of a device (``nvmlDeviceGetDynamicPstatesInfo``): a
    sequence of :class:`GpuDynamicPstatesUtilization`, one per utilization domain (8)."""

    __slots__ = ("_domains", "__weakref__")

    def __init__(self, gpu_dynamic_pstates_info):
        domains = gpu_dynamic_pstates_info.utilization
        if hasattr(type(domains), "__len__"):
            items = [domains[i] for i in range(len(domains))]
        else:
            # cuda-bindings before 13.5 gives only the array's first element; the others follow
            # it in nvml.h's layout (NVML_MAX_GPU_UTILIZATIONS elements of four unsigned ints).
            pod = type(domains)
            items = [pod.from_ptr(domains.ptr + i * _PSTATES_UTILIZATION_SIZE, readonly=True,
                                  owner=gpu_dynamic_pstates_info)
                     for i in range(_MAX_GPU_UTILIZATIONS)]
        self._domains = tuple(GpuDynamicPstatesUtilization(item) for item in items)

    def __len__(self) -> int:
        return len(self._domains)

    def __getitem__(self, idx: int) -> GpuDynamicPstatesUtilization:
        idx = check_int(idx, "idx")
        if not 0 <= idx < len(self._domains):
            raise IndexError(f"GPU dynamic P-states index out of range (0 to "
                             f"{len(self._domains) - 1})")
        return self._domains[idx]

    def __repr__(self) -> str:
        return f"<cuda_core.system.GpuDynamicPstatesInfo ({len(self)} domains)>"


class ProcessInfo:
    """A process with a compute context on a device (:attr:`Device.compute_running_processes`)."""

    __slots__ = ("pid", "used_gpu_memory", "gpu_instance_id", "compute_instance_id",
                 "__weakref__")

    def __init__(self, device: Device, process_info):
        _device_arg(device, "device")
        #: The process id.
        self.pid = int(process_info.pid)
        #: The device memory the process uses, in bytes.
        self.used_gpu_memory = int(process_info.used_gpu_memory)
        #: The GPU instance of the process (MIG only).
        self.gpu_instance_id = int(process_info.gpu_instance_id)
        #: The compute instance of the process (MIG only).
        self.compute_instance_id = int(process_info.compute_instance_id)

    def __repr__(self) -> str:
        return f"<cuda_core.system.ProcessInfo pid={self.pid}>"


class RepairStatus:
    """Whether a TPC or channel repair is pending on a device (``nvmlDeviceGetRepairStatus``;
    Ampere or newer), read when :attr:`Device.repair_status` is read."""

    __slots__ = ("channel_repair_pending", "tpc_repair_pending", "__weakref__")

    def __init__(self, handle: int):
        status = call("device_get_repair_status", int(handle))
        #: Whether a channel repair is pending.
        self.channel_repair_pending = bool(status.b_channel_repair_pending)
        #: Whether a TPC repair is pending.
        self.tpc_repair_pending = bool(status.b_tpc_repair_pending)

    def __repr__(self) -> str:
        return (f"<cuda_core.system.RepairStatus channel_repair_pending="
                f"{self.channel_repair_pending} tpc_repair_pending={self.tpc_repair_pending}>")


class EventData:
    """One event of :meth:`DeviceEvents.wait`."""

    __slots__ = ("_handle", "_type", "_data", "_gpu_instance", "_compute_instance",
                 "__weakref__")

    def __init__(self, event_data):
        self._handle = int(event_data.device_)
        self._type = int(event_data.event_type)
        self._data = int(event_data.event_data)
        self._gpu_instance = int(event_data.gpu_instance_id)
        self._compute_instance = int(event_data.compute_instance_id)

    @property
    def device(self) -> Device:
        """The device the event happened on."""
        return Device._from_handle(self._handle)

    @property
    def event_type(self) -> EventType:
        """The kind of event, an :class:`~cuda_core.system.typing.EventType`."""
        try:
            return _EVENT_OF_BIT[self._type]
        except KeyError:
            raise ValueError(f"NVML reported an unknown event type {self._type}") from None

    def _xid_only(self, what: str) -> None:
        if self._type != _EVENT_TYPE_BITS[EventType.XID_CRITICAL_ERROR]:
            raise ValueError(f"{what} is only available for Xid critical error events")

    @property
    def event_data(self) -> int:
        """The Xid of an ``XID_CRITICAL_ERROR`` event; ``ValueError`` for other events."""
        self._xid_only("event_data")
        return self._data

    @property
    def gpu_instance_id(self) -> int:
        """The GPU instance of an ``XID_CRITICAL_ERROR`` event (MIG); ``ValueError`` for other
        events."""
        self._xid_only("gpu_instance_id")
        return self._gpu_instance

    @property
    def compute_instance_id(self) -> int:
        """The compute instance of an ``XID_CRITICAL_ERROR`` event (MIG); ``ValueError`` for
        other events."""
        self._xid_only("compute_instance_id")
        return self._compute_instance

    def __repr__(self) -> str:
        return f"<cuda_core.system.EventData type=0x{self._type:x}>"


class DeviceEvents:
    """The events registered on one device (:meth:`Device.register_events`): an NVML event
    set, freed when this object is collected."""

    __slots__ = ("_set", "_free", "__weakref__")

    def __init__(self, device_handle: int, events):
        mask = _event_mask(events)
        module = nvml()
        self._set = int(call("event_set_create"))
        self._free = weakref.finalize(self, release_event_set, module.event_set_free,
                                      self._set, module.NvmlError)
        try:
            call("device_register_events", int(device_handle), mask, self._set)
        except BaseException:
            self._free()
            raise

    def wait(self, timeout_ms: int = 0) -> EventData:
        """The next event, waiting at most ``timeout_ms`` milliseconds (0: without limit)
        (``nvmlEventSetWait_v2``). Raises :class:`~cuda_core.system.TimeoutError` where no
        event came within ``timeout_ms``, :class:`~cuda_core.system.GpuIsLostError` where the
        GPU fell off the bus."""
        timeout_ms = check_int(timeout_ms, "timeout_ms", 0, _U32_MAX)
        return EventData(call("event_set_wait_v2", self._set, timeout_ms))

    def __repr__(self) -> str:
        return "<cuda_core.system.DeviceEvents>"


class Device:
    """A GPU as NVML sees it: identity, memory, temperature, clocks, utilization, NVLink and
    topology.

    Give exactly one of ``index``, ``uuid`` or ``pci_bus_id`` (keywords). For CUDA work, use
    :class:`cuda_core.Device`; :meth:`to_cuda_device` and
    :meth:`cuda_core.Device.to_system_device` map between the two by UUID.

    Parameters
    ----------
    index : int, optional
        The NVML index, from 0 to :meth:`get_device_count` - 1. NVML's order ignores
        ``CUDA_VISIBLE_DEVICES`` and need not match CUDA's ordinals; prefer ``uuid`` or
        ``pci_bus_id``.
    uuid : str or bytes, optional
        The device's UUID, with its ``GPU-`` (or ``MIG-``) prefix or without (then ``GPU-``
        is assumed, so :attr:`cuda_core.Device.uuid` works as it is).
    pci_bus_id : str or bytes, optional
        The PCI bus id, ``domain:bus:device.function`` (hexadecimal; shorter forms that
        NVML accepts work too).

    Raises
    ------
    ValueError
        Not exactly one of the three was given, or ``index`` is out of range.
    TypeError
        An argument of the wrong type.
    cuda_core.system.LibraryNotFoundError
        NVML cannot be used (no NVIDIA driver, or ``cuda.bindings`` without NVML bindings).
    cuda_core.system.NotFoundError
        No device has that UUID or PCI bus id.

    Notes
    -----
    Equal objects name the same device (they compare by NVML handle). A Device owns nothing
    and needs no closing.
    """

    __slots__ = ("_handle", "__weakref__")

    def __init__(self, *, index: int | None = None, uuid: str | bytes | None = None,
                 pci_bus_id: str | bytes | None = None):
        given = [name for name, value in (("index", index), ("uuid", uuid),
                                          ("pci_bus_id", pci_bus_id)) if value is not None]
        if len(given) != 1:
            raise ValueError("cuda_core.system.Device takes exactly one of index=, uuid= or "
                             f"pci_bus_id=, got {', '.join(given) or 'none'}")
        if index is not None:
            index = check_int(index, "index", 0, _U32_MAX)
            count = Device.get_device_count()
            if index >= count:
                raise ValueError(f"index must be between 0 and {count - 1} (NVML sees {count} "
                                 f"device(s)), got {index}")
            self._handle = int(call("device_get_handle_by_index_v2", index))
        elif uuid is not None:
            uuid = _text(uuid, "uuid")
            if uuid[:4].upper() not in _UUID_PREFIXES:
                uuid = "GPU-" + uuid
            self._handle = int(call("device_get_handle_by_uuid", uuid))
        else:
            pci_bus_id = _text(pci_bus_id, "pci_bus_id")
            self._handle = int(call("device_get_handle_by_pci_bus_id_v2", pci_bus_id))

    @classmethod
    def _from_handle(cls, handle) -> Device:
        self = object.__new__(cls)
        self._handle = int(handle)
        return self

    # -- identity ------------------------------------------------------------------------------

    @property
    def index(self) -> int:
        """The NVML index (``nvmlDeviceGetIndex``); not necessarily the CUDA ordinal."""
        return int(call("device_get_index", self._handle))

    @property
    def uuid(self) -> str:
        """The UUID with its prefix, ``GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`` (``MIG-`` for a
        MIG device) (``nvmlDeviceGetUUID``)."""
        return str(call("device_get_uuid", self._handle))

    @property
    def uuid_without_prefix(self) -> str:
        """The UUID without its ``GPU-``/``MIG-`` prefix, as CUDA writes it
        (:attr:`cuda_core.Device.uuid`)."""
        uuid = self.uuid
        return uuid[4:] if uuid[:4].upper() in _UUID_PREFIXES else uuid

    @property
    def pci_bus_id(self) -> str:
        """The PCI bus id, e.g. ``"00000000:1B:00.0"`` (``nvmlDeviceGetPciInfo_v3``)."""
        return str(call("device_get_pci_info_v3", self._handle).bus_id)

    @property
    def pci_info(self) -> PciInfo:
        """:class:`PciInfo`: the PCI attributes and link state."""
        return PciInfo(self._handle)

    @property
    def numa_node_id(self) -> int:
        """The NUMA node of the GPU, where the GPU is a NUMA node (``nvmlDeviceGetNumaNodeId``;
        elsewhere :class:`~cuda_core.system.NotSupportedError`)."""
        return int(call("device_get_numa_node_id", self._handle))

    @property
    def arch(self) -> DeviceArch:
        """:class:`~cuda_core.system.typing.DeviceArch`, e.g. ``DeviceArch.HOPPER``
        (``nvmlDeviceGetArchitecture``)."""
        code = int(call("device_get_architecture", self._handle))
        try:
            return DeviceArch(code)
        except ValueError:
            return DeviceArch.UNKNOWN

    @property
    def name(self) -> str:
        """The product name, e.g. ``"NVIDIA H100 80GB HBM3"`` (``nvmlDeviceGetName``)."""
        return str(call("device_get_name", self._handle))

    @property
    def brand(self) -> str:
        """The brand, e.g. ``"NVIDIA"`` or ``"GeForce"``; ``"Unknown"`` where NVML does not
        know it (``nvmlDeviceGetBrand``)."""
        code = int(call("device_get_brand", self._handle))
        return _BRANDS[code] if 0 <= code < len(_BRANDS) else "Unknown"

    @property
    def serial(self) -> str:
        """The board's serial number, for products with an InfoROM (``nvmlDeviceGetSerial``)."""
        return str(call("device_get_serial", self._handle))

    @property
    def module_id(self) -> int:
        """The GPU module's id on its baseboard; 0 on other products (``nvmlDeviceGetModuleId``)."""
        return int(call("device_get_module_id", self._handle))

    @property
    def minor_number(self) -> int:
        """The minor number of the device node, ``/dev/nvidia<minor>`` (Linux;
        ``nvmlDeviceGetMinorNumber``)."""
        return int(call("device_get_minor_number", self._handle))

    @property
    def is_persistence_mode_enabled(self) -> bool:
        """Whether persistence mode is on (Linux; ``nvmlDeviceGetPersistenceMode``)."""
        return int(call("device_get_persistence_mode", self._handle)) == 1

    @property
    def cuda_compute_capability(self) -> tuple[int, int]:
        """``(major, minor)``, e.g. ``(9, 0)`` (``nvmlDeviceGetCudaComputeCapability``)."""
        major, minor = call("device_get_cuda_compute_capability", self._handle)
        return int(major), int(minor)

    def to_cuda_device(self):
        """The :class:`cuda_core.Device` of the same UUID.

        Raises
        ------
        RuntimeError
            No CUDA device has this UUID: it is hidden by ``CUDA_VISIBLE_DEVICES``, or it is a
            MIG-enabled physical GPU, which CUDA does not expose.
        """
        from cuda_core._device import Device as CudaDevice

        uuid = self.uuid_without_prefix.lower()
        for device in CudaDevice.get_all_devices():
            if device.uuid.lower() == uuid:
                return device
        raise RuntimeError(f"no CUDA device has the UUID {self.uuid} (hidden by "
                           f"CUDA_VISIBLE_DEVICES, or a MIG-enabled GPU)")

    @classmethod
    def get_device_count(cls) -> int:
        """The number of devices NVML sees (``nvmlDeviceGetCount_v2``); it ignores
        ``CUDA_VISIBLE_DEVICES``."""
        return int(call("device_get_count_v2"))

    @classmethod
    def get_all_devices(cls) -> tuple[Device, ...]:
        """Every device NVML sees, by NVML index."""
        count = cls.get_device_count()
        return tuple(cls._from_handle(call("device_get_handle_by_index_v2", i))
                     for i in range(count))

    # -- memory, temperature, clocks, utilization ----------------------------------------------

    @property
    def memory_info(self) -> MemoryInfo:
        """:class:`MemoryInfo` ``(total, free, used, reserved)`` in bytes."""
        info = call("device_get_memory_info_v2", self._handle)
        return MemoryInfo(int(info.total), int(info.free), int(info.used), int(info.reserved))

    @property
    def bar1_memory_info(self) -> BAR1MemoryInfo:
        """:class:`BAR1MemoryInfo` ``(total, free, used)`` in bytes."""
        info = call("device_get_bar1_memory_info", self._handle)
        return BAR1MemoryInfo(int(info.bar1_total), int(info.bar1_free), int(info.bar1_used))

    @property
    def temperature(self) -> Temperature:
        """:class:`Temperature`: the sensor, thresholds and margin."""
        return Temperature(self._handle)

    def get_clock(self, clock_type) -> ClockInfo:
        """:class:`ClockInfo` of a :class:`~cuda_core.system.typing.ClockType` (``"graphics"``,
        ``"sm"``, ``"memory"``, ``"video"``)."""
        return ClockInfo(self._handle, clock_type)

    @property
    def utilization(self) -> Utilization:
        """:class:`Utilization` ``(gpu, memory)``, percentages (not on MIG-enabled GPUs)."""
        info = call("device_get_utilization_rates", self._handle)
        return Utilization(int(info.gpu), int(info.memory))

    @property
    def performance_state(self) -> int | None:
        """The current performance state, 0 (fastest) to 15, or None where unknown
        (``nvmlDeviceGetPerformanceState``)."""
        state = int(call("device_get_performance_state", self._handle))
        return None if state == _PSTATE_UNKNOWN else state

    @property
    def current_clock_event_reasons(self) -> list[ClocksEventReasons]:
        """Why the clocks are where they are now, as
        :class:`~cuda_core.system.typing.ClocksEventReasons` (empty when nothing holds them
        back) (``nvmlDeviceGetCurrentClocksEventReasons``)."""
        return _reasons(call("device_get_current_clocks_event_reasons", self._handle))

    @property
    def supported_clock_event_reasons(self) -> list[ClocksEventReasons]:
        """The reasons :attr:`current_clock_event_reasons` can report on this device
        (``nvmlDeviceGetSupportedClocksEventReasons``)."""
        return _reasons(call("device_get_supported_clocks_event_reasons", self._handle))

    # -- NVLink --------------------------------------------------------------------------------

    def get_nvlink_count(self) -> int:
        """The number of NVLinks: the links from 0 up that NVML answers for
        (``nvmlDeviceGetNvLinkState``); 0 on a GPU without NVLink."""
        module = nvml()
        count = 0
        for link in range(_MAX_LINKS):
            try:
                module.device_get_nvlink_state(self._handle, link)
            except (module.NotSupportedError, module.InvalidArgumentError):
                break
            count += 1
        return count

    def get_nvlink(self, link: int) -> NvlinkInfo:
        """:class:`NvlinkInfo` of link ``link``; ``ValueError`` for a link the device does not
        have."""
        return NvlinkInfo(self, link)

    def get_nvlinks(self) -> tuple[NvlinkInfo, ...]:
        """:class:`NvlinkInfo` of every link, in order."""
        return tuple(NvlinkInfo._of(self._handle, link) for link in range(self.get_nvlink_count()))

    # -- topology and affinity -----------------------------------------------------------------

    def get_topology_nearest_gpus(self, level) -> tuple[Device, ...]:
        """The GPUs nearest to this one at a :class:`~cuda_core.system.typing.GpuTopologyLevel`
        (Linux; ``nvmlDeviceGetTopologyNearestGpus``)."""
        level = check_enum(level, "level", GpuTopologyLevel)
        handles = call("device_get_topology_nearest_gpus", self._handle, _TOPOLOGY[level])
        return tuple(Device._from_handle(h) for h in handles)

    @classmethod
    def get_all_devices_with_cpu_affinity(cls, cpu_index: int) -> tuple[Device, ...]:
        """The GPUs with an affinity to CPU ``cpu_index`` (Linux; ``nvmlSystemGetTopologyGpuSet``)."""
        cpu_index = check_int(cpu_index, "cpu_index", 0, _U32_MAX)
        return tuple(cls._from_handle(h) for h in call("system_get_topology_gpu_set", cpu_index))

    def get_cpu_affinity(self, scope=AffinityScope.NODE) -> list[int]:
        """The CPUs nearest to the device, within its NUMA node or socket, ascending (Linux;
        ``nvmlDeviceGetCpuAffinityWithinScope``)."""
        scope = check_enum(scope, "scope", AffinityScope)
        # Enough words for every CPU whether the bindings' words have 32 or 64 bits.
        words = max(16, -(-(os.cpu_count() or 1) // 32))
        return _bits(call("device_get_cpu_affinity_within_scope", self._handle, words,
                          _AFFINITY_SCOPE[scope]))

    def get_memory_affinity(self, scope=AffinityScope.NODE) -> list[int]:
        """The NUMA nodes (``scope="node"``) or sockets nearest to the device's memory,
        ascending (Linux; ``nvmlDeviceGetMemoryAffinity``)."""
        scope = check_enum(scope, "scope", AffinityScope)
        return _bits(call("device_get_memory_affinity", self._handle, 16, _AFFINITY_SCOPE[scope]))

    def set_cpu_affinity(self) -> None:
        """Binds the calling thread to the CPUs nearest to the device (Linux;
        ``nvmlDeviceSetCpuAffinity``)."""
        call("device_set_cpu_affinity", self._handle)

    def clear_cpu_affinity(self) -> None:
        """Undoes :meth:`set_cpu_affinity` for the calling thread (Linux;
        ``nvmlDeviceClearCpuAffinity``)."""
        call("device_clear_cpu_affinity", self._handle)

    # -- addressing, attributes, display, C2C, clocks ---------------------------------------

    @property
    def addressing_mode(self) -> AddressingMode | None:
        """How the device addresses system memory, an
        :class:`~cuda_core.system.typing.AddressingMode` (``"hmm"`` or ``"ats"``), or None where
        neither is active (``nvmlDeviceGetAddressingMode``)."""
        return _ADDRESSING_MODE.get(int(call("device_get_addressing_mode", self._handle).value))

    @property
    def attributes(self) -> DeviceAttributes:
        """:class:`DeviceAttributes`: SM, engine and slice counts and memory size (Ampere or
        newer, Linux)."""
        return DeviceAttributes(call("device_get_attributes_v2", self._handle))

    @property
    def is_display_connected(self) -> bool:
        """Whether a display is connected to one of the device's connectors
        (``nvmlDeviceGetDisplayMode``)."""
        return int(call("device_get_display_mode", self._handle)) == _ENABLED

    @property
    def is_display_active(self) -> bool:
        """Whether a display is initialized on the device (an X server using it, say), with a
        monitor attached or not (``nvmlDeviceGetDisplayActive``)."""
        return int(call("device_get_display_active", self._handle)) == _ENABLED

    @property
    def is_c2c_enabled(self) -> bool:
        """Whether chip-to-chip (C2C) mode is on (``nvmlDeviceGetC2cModeInfoV``)."""
        return bool(call("device_get_c2c_mode_info_v", self._handle).is_c2c_enabled)

    @property
    def is_auto_boosted_clocks_enabled(self) -> tuple[bool, bool]:
        """``(current, default)``: whether auto boosted clocks are on now, and whether they are
        by default (``nvmlDeviceGetAutoBoostedClocksEnabled``)."""
        current, default = call("device_get_auto_boosted_clocks_enabled", self._handle)
        return int(current) == _ENABLED, int(default) == _ENABLED

    # -- cooling ---------------------------------------------------------------------------------

    @property
    def cooler(self) -> CoolerInfo:
        """:class:`CoolerInfo`: the cooler's control signal and targets."""
        return CoolerInfo(call("device_get_cooler_info", self._handle))

    @property
    def num_fans(self) -> int:
        """The number of fans (``nvmlDeviceGetNumFans``)."""
        return int(call("device_get_num_fans", self._handle))

    def get_fan(self, fan: int = 0) -> FanInfo:
        """:class:`FanInfo` of fan ``fan`` (0 to :attr:`num_fans` - 1); ``ValueError`` for a
        fan the device does not have."""
        fan = check_int(fan, "fan")
        count = self.num_fans
        if not 0 <= fan < count:
            raise ValueError(f"Fan index {fan} is out of range [0, {count})")
        return FanInfo(self._handle, fan)

    # -- events ----------------------------------------------------------------------------------

    def register_events(self, events) -> DeviceEvents:
        """Starts recording events of the given kinds on this device (Linux;
        ``nvmlDeviceRegisterEvents``): ``events`` is an
        :class:`~cuda_core.system.typing.EventType`, its string, or a list of them. Events
        before this call are not recorded; wait for them with :meth:`DeviceEvents.wait`.

        Raises
        ------
        cuda_core.system.NotSupportedError
            None of the kinds can be recorded on this device.
        """
        return DeviceEvents(self._handle, events)

    def get_supported_event_types(self) -> list[EventType]:
        """The kinds of event :meth:`register_events` can record on this device
        (``nvmlDeviceGetSupportedEventTypes``)."""
        mask = call("device_get_supported_event_types", self._handle)
        return _bit_members(mask, _EVENT_OF_BIT.items(), "event type")

    # -- field values ----------------------------------------------------------------------------

    def get_field_values(self, field_ids) -> FieldValues:
        """Several NVML field values at once (``nvmlDeviceGetFieldValues``).

        Parameters
        ----------
        field_ids : list
            Field ids (:class:`cuda_core.system.typing.FieldId` members or ints), or
            ``(field id, scope id)`` pairs.

        Returns
        -------
        FieldValues
            The values in the order asked for. A field NVML could not read raises its error
            when its :attr:`FieldValue.value` is read (:meth:`FieldValues.validate` checks all).
        """
        ids = _field_ids(field_ids)
        if not ids:  # NVML refuses an empty request
            from cuda.bindings.nvml import FieldValue as _NvmlFieldValue

            return FieldValues(_NvmlFieldValue(0))
        return FieldValues(call("device_get_field_values", self._handle, ids))

    def clear_field_values(self, field_ids) -> None:
        """Resets the given fields (field ids or ``(field id, scope id)`` pairs) to 0
        (``nvmlDeviceClearFieldValues``)."""
        ids = _field_ids(field_ids)
        if ids:  # NVML refuses an empty request
            call("device_clear_field_values", self._handle, ids)

    # -- InfoROM, MIG, repair --------------------------------------------------------------------

    @property
    def inforom(self) -> InforomInfo:
        """:class:`InforomInfo`: the InfoROM's versions, checksum and part number."""
        return InforomInfo(self)

    @property
    def mig(self) -> MigInfo:
        """:class:`MigInfo`: MIG mode and the MIG devices (Ampere or newer)."""
        return MigInfo(self)

    @property
    def repair_status(self) -> RepairStatus:
        """:class:`RepairStatus`: whether a TPC or channel repair is pending (Ampere or newer)."""
        return RepairStatus(self._handle)

    # -- performance states and processes --------------------------------------------------------

    @property
    def dynamic_pstates_info(self) -> GpuDynamicPstatesInfo:
        """:class:`GpuDynamicPstatesInfo`: utilization and P-state thresholds of each domain
        (``nvmlDeviceGetDynamicPstatesInfo``)."""
        return GpuDynamicPstatesInfo(call("device_get_dynamic_pstates_info", self._handle))

    @property
    def supported_pstates(self) -> list[int]:
        """The performance states the device supports, 0 (fastest) to 15, in NVML's order
        (``nvmlDeviceGetSupportedPerformanceStates``)."""
        states = call("device_get_supported_performance_states", self._handle)
        return [int(s) for s in states if int(s) != _PSTATE_UNKNOWN]

    @property
    def compute_running_processes(self) -> list[ProcessInfo]:
        """:class:`ProcessInfo` of each process with a compute context on the device
        (``nvmlDeviceGetComputeRunningProcesses_v3``). Processes come and go between calls."""
        processes = call("device_get_compute_running_processes_v3", self._handle)
        return [ProcessInfo(self, processes[i]) for i in range(len(processes))]

    # -- object protocol -----------------------------------------------------------------------

    # Compared and hashed as objects, as cuda.core's: two lookups of one GPU are two objects,
    # not equal (compare uuid or index for the GPU).

    def __repr__(self) -> str:
        try:
            return f"<cuda_core.system.Device index={self.index} uuid={self.uuid!r}>"
        except nvml().NvmlError:
            return f"<cuda_core.system.Device handle=0x{self._handle:x}>"


def get_topology_common_ancestor(device1: Device, device2: Device) -> GpuTopologyLevel:
    """The nearest common ancestor of two GPUs in the topology, a
    :class:`~cuda_core.system.typing.GpuTopologyLevel` (Linux;
    ``nvmlDeviceGetTopologyCommonAncestor``)."""
    device1 = _device_arg(device1, "device1")
    device2 = _device_arg(device2, "device2")
    code = int(call("device_get_topology_common_ancestor", device1._handle, device2._handle))
    try:
        return _TOPOLOGY_OF_CODE[code]
    except KeyError:
        raise ValueError(f"nvmlDeviceGetTopologyCommonAncestor returned an unknown level "
                         f"{code}") from None


def get_p2p_status(device1: Device, device2: Device, index) -> GpuP2PStatus:
    """Whether ``device1`` and ``device2`` have the peer-to-peer capability ``index`` (a
    :class:`~cuda_core.system.typing.GpuP2PCapsIndex`), as a
    :class:`~cuda_core.system.typing.GpuP2PStatus` (``nvmlDeviceGetP2PStatus``)."""
    device1 = _device_arg(device1, "device1")
    device2 = _device_arg(device2, "device2")
    index = check_enum(index, "index", GpuP2PCapsIndex)
    code = int(call("device_get_p2p_status", device1._handle, device2._handle, _P2P_CAPS[index]))
    return _P2P_STATUS.get(code, GpuP2PStatus.UNKNOWN)
