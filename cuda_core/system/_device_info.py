"""The records ``cuda_core.system.Device`` hands out beyond its own properties (PCI, clocks,
temperature, attributes, cooler and fans, field values, InfoROM, MIG, dynamic P-states,
processes, repair status), with the NVML codes they decode. They go through cuda.bindings' NVML as
:mod:`cuda_core.system._device` does, which imports them (and whose ``Device`` they return).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuda_core._checks import check_enum, check_int
# The module that imports this one: its Device and _device_arg are read at call time.
from cuda_core.system import _device
from cuda_core.system._nvml import call, nvml
from cuda_core.system.typing import (
    AddressingMode,
    ClockId,
    ClockType,
    CoolerControl,
    CoolerTarget,
    FanControlPolicy,
    InforomObject,
    TemperatureThresholds,
)

if TYPE_CHECKING:
    from cuda_core.system._device import Device

__all__ = [
    "ClockInfo",
    "CoolerInfo",
    "DeviceAttributes",
    "FanInfo",
    "FieldValue",
    "FieldValues",
    "GpuDynamicPstatesInfo",
    "GpuDynamicPstatesUtilization",
    "InforomInfo",
    "MigInfo",
    "PciInfo",
    "ProcessInfo",
    "RepairStatus",
    "Temperature",
]

_U32_MAX = 0xFFFFFFFF
# The NVML codes (nvml.h) of the clock and temperature enumerations' members.
_CLOCK_TYPE = {ClockType.GRAPHICS: 0, ClockType.SM: 1, ClockType.MEMORY: 2, ClockType.VIDEO: 3}
_CLOCK_ID = {ClockId.CURRENT: 0, ClockId.CUSTOMER_BOOST_MAX: 3}
_THRESHOLD = {member: code for code, member in enumerate(TemperatureThresholds)}
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


def _decode(table, code: int, what: str):
    """``table[code]``: what an NVML code stands for; ``ValueError`` ``"<what> <code>"`` for a
    code the table lacks."""
    try:
        return table[code]
    except KeyError:
        raise ValueError(f"{what} {code}") from None


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
        return _decode(_FAN_CONTROL_POLICY, code,
                       "nvmlDeviceGetFanControlPolicy_v2 returned an unknown policy")

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
        member, kind = _decode(_VALUE_MEMBERS, code, "NVML returned a field value of unknown type")
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
        self._handle = _device._device_arg(device, "device")._handle

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
        self._handle = _device._device_arg(device, "device")._handle

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
        return _device.Device._from_handle(
            call("device_get_device_handle_from_mig_device_handle", self._handle))

    def get_device_by_index(self, index: int) -> Device:
        """MIG device ``index`` (0 to :attr:`device_count` - 1) of this GPU
        (``nvmlDeviceGetMigDeviceHandleByIndex``); :class:`~cuda_core.system.NotFoundError`
        where that slot holds none."""
        index = check_int(index, "index", 0, _U32_MAX)
        return _device.Device._from_handle(
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
        _device._device_arg(device, "device")
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
