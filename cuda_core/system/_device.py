"""``cuda_core.system.Device``: a GPU as NVML sees it, and the queries between two GPUs.

Arguments are checked before NVML is touched, so a wrong argument is a ``TypeError`` or
``ValueError`` also where NVML is absent. Each property reads NVML afresh (nothing is cached:
temperatures, clocks and memory use change); errors are those of :mod:`cuda_core.system.exceptions`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from typing import NamedTuple

from cuda_core._checks import check_enum, check_int
from cuda_core.system._device_info import (
    ClockInfo,
    CoolerInfo,
    DeviceAttributes,
    FanInfo,
    FieldValue,
    FieldValues,
    GpuDynamicPstatesInfo,
    InforomInfo,
    MigInfo,
    PciInfo,
    ProcessInfo,
    RepairStatus,
    Temperature,
    _ADDRESSING_MODE,
    _ENABLED,
    _U32_MAX,
    _bit_members,
    _decode,
    _field_ids,
)
from cuda_core.system._events import _EVENT_OF_BIT, DeviceEvents
from cuda_core.system._nvml import _note, call, nvml
from cuda_core.system.typing import (
    AddressingMode,
    AffinityScope,
    ClocksEventReasons,
    DeviceArch,
    EventType,
    GpuP2PCapsIndex,
    GpuP2PStatus,
    GpuTopologyLevel,
)

__all__ = [
    "BAR1MemoryInfo",
    "ClockInfo",
    "Device",
    "MemoryInfo",
    "NvlinkInfo",
    "PciInfo",
    "Temperature",
    "Utilization",
    "get_p2p_status",
    "get_topology_common_ancestor",
]

# The NVML codes (nvml.h) of the string enumerations' members.
_AFFINITY_SCOPE = {AffinityScope.NODE: 0, AffinityScope.SOCKET: 1}
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
# How many times a list whose length NVML reports first is asked for, when it grew meanwhile.
_LIST_ATTEMPTS = 5
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
        # As cuda.core: a link of no numeric type is a TypeError, then a device that NVML
        # reports no link for is NotSupportedError, whatever the number.
        if not hasattr(type(link), "__int__"):
            raise TypeError(f"link must be an int, not {type(link).__name__}")
        count = device.get_nvlink_count()
        link = check_int(link, "link", 0)
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
    def get_all_devices(cls) -> Iterator[Device]:
        """Every device NVML sees, by NVML index: a generator, as in cuda.core."""
        for i in range(cls.get_device_count()):
            yield cls._from_handle(call("device_get_handle_by_index_v2", i))

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
        (``nvmlDeviceGetNvLinkState``). NVML's ``NotSupportedError`` where it does not answer
        for link 0 (a GPU without NVLink, or one whose links NVML does not report), as
        cuda.core raises it."""
        module = nvml()
        count = 0
        for link in range(_MAX_LINKS):
            try:
                module.device_get_nvlink_state(self._handle, link)
            except module.NotSupportedError as exc:
                if link == 0:
                    _note(exc, "device_get_nvlink_state")
                    raise
                break
            except module.InvalidArgumentError:
                break
            count += 1
        return count

    def get_nvlink(self, link: int) -> NvlinkInfo:
        """:class:`NvlinkInfo` of link ``link``; ``ValueError`` for a link the device does not
        have."""
        return NvlinkInfo(self, link)

    def get_nvlinks(self) -> Iterator[NvlinkInfo]:
        """:class:`NvlinkInfo` of every link, in order: a generator, as in cuda.core."""
        for link in range(self.get_nvlink_count()):
            yield NvlinkInfo._of(self._handle, link)

    # -- topology and affinity -----------------------------------------------------------------

    def get_topology_nearest_gpus(self, level) -> Iterator[Device]:
        """The GPUs nearest to this one at a :class:`~cuda_core.system.typing.GpuTopologyLevel`
        (Linux; ``nvmlDeviceGetTopologyNearestGpus``): a generator, as in cuda.core (``level``
        is checked when it is first advanced)."""
        level = check_enum(level, "level", GpuTopologyLevel)
        for h in call("device_get_topology_nearest_gpus", self._handle, _TOPOLOGY[level]):
            yield Device._from_handle(h)

    @classmethod
    def get_all_devices_with_cpu_affinity(cls, cpu_index: int) -> Iterator[Device]:
        """The GPUs with an affinity to CPU ``cpu_index`` (Linux; ``nvmlSystemGetTopologyGpuSet``):
        a generator, as in cuda.core (``cpu_index`` is checked when it is first advanced)."""
        cpu_index = check_int(cpu_index, "cpu_index", 0, _U32_MAX)
        for h in call("system_get_topology_gpu_set", cpu_index):
            yield cls._from_handle(h)

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
        # The bindings ask NVML for the count, then for that many: a process that started in
        # between makes the second call fail with INSUFFICIENT_SIZE. Asked again, a few times.
        for attempt in range(_LIST_ATTEMPTS):
            try:
                processes = call("device_get_compute_running_processes_v3", self._handle)
                break
            except nvml().InsufficientSizeError:
                if attempt == _LIST_ATTEMPTS - 1:
                    raise
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
    return _decode(_TOPOLOGY_OF_CODE, code,
                   "nvmlDeviceGetTopologyCommonAncestor returned an unknown level")


def get_p2p_status(device1: Device, device2: Device, index) -> GpuP2PStatus:
    """Whether ``device1`` and ``device2`` have the peer-to-peer capability ``index`` (a
    :class:`~cuda_core.system.typing.GpuP2PCapsIndex`), as a
    :class:`~cuda_core.system.typing.GpuP2PStatus` (``nvmlDeviceGetP2PStatus``)."""
    device1 = _device_arg(device1, "device1")
    device2 = _device_arg(device2, "device2")
    index = check_enum(index, "index", GpuP2PCapsIndex)
    code = int(call("device_get_p2p_status", device1._handle, device2._handle, _P2P_CAPS[index]))
    return _P2P_STATUS.get(code, GpuP2PStatus.UNKNOWN)
