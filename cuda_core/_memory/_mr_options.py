"""Options of the memory resources, and the string enums their fields accept.

Every options class is a dataclass that the resources accept as an instance, a ``dict`` of its
fields or ``None`` (through :func:`cuda_core._options.check_or_create_options`). Each checks its
own fields in ``__post_init__`` and names the field in the error. Fields that take one of a few
words accept the plain string or the matching enum member, and store the enum member (which is
a ``str`` and compares equal to the plain string).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable

from cuda_core._checks import (ArgumentTypeError, check_bool, check_enum, check_int,
                               check_size)
from cuda_core._errors import InvalidValueError
from cuda_core._enum import StrEnum as _StrEnum

__all__ = [
    "DeviceMemoryResourceOptions",
    "ManagedMemoryResourceOptions",
    "PinnedMemoryResourceOptions",
    "VirtualMemoryResourceOptions",
    "ManagedMemoryLocationType",
    "VirtualMemoryAccessType",
    "VirtualMemoryAllocationType",
    "VirtualMemoryGranularityType",
    "VirtualMemoryHandleType",
    "VirtualMemoryLocationType",
]


class ManagedMemoryLocationType(_StrEnum):
    """Where managed memory prefers to live (``ManagedMemoryResourceOptions``)."""

    DEVICE = "device"
    HOST = "host"
    HOST_NUMA = "host_numa"


class VirtualMemoryAllocationType(_StrEnum):
    """``VirtualMemoryResourceOptions.allocation_type`` (``CU_MEM_ALLOCATION_TYPE_*``)."""

    PINNED = "pinned"
    MANAGED = "managed"


class VirtualMemoryLocationType(_StrEnum):
    """``VirtualMemoryResourceOptions.location_type`` (``CU_MEM_LOCATION_TYPE_*``)."""

    DEVICE = "device"
    HOST = "host"
    HOST_NUMA = "host_numa"
    HOST_NUMA_CURRENT = "host_numa_current"


class VirtualMemoryHandleType(_StrEnum):
    """``VirtualMemoryResourceOptions.handle_type``: how the physical memory can be exported
    (``CU_MEM_HANDLE_TYPE_*``); ``None`` means not exportable."""

    POSIX_FD = "posix_fd"
    WIN32_KMT = "win32_kmt"
    FABRIC = "fabric"


class VirtualMemoryGranularityType(_StrEnum):
    """``VirtualMemoryResourceOptions.granularity`` (``CU_MEM_ALLOC_GRANULARITY_*``)."""

    MINIMUM = "minimum"
    RECOMMENDED = "recommended"


class VirtualMemoryAccessType(_StrEnum):
    """Access rights (``CU_MEM_ACCESS_FLAGS_PROT_*``); ``None`` means no access."""

    READ_WRITE = "rw"
    READ = "r"


def _device_ordinals(values: Iterable[Any], what: str) -> tuple[int, ...]:
    """``values``, an iterable of devices (Device or ordinal), as distinct ordinals in order."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        # A str: ArgumentTypeError, also the ValueError cuda.core's int() of a letter raises.
        raise (ArgumentTypeError if isinstance(values, str) else TypeError)(
            f"{what} must be an iterable of devices (Device or int), not "
            f"{type(values).__name__}")
    # A negative ordinal: cuda.core passes it to the driver (CUDA_ERROR_INVALID_VALUE).
    return tuple(dict.fromkeys(check_int(v, f"{what}[{i}]", 0, error=InvalidValueError)
                               for i, v in enumerate(values)))


@dataclasses.dataclass
class DeviceMemoryResourceOptions:
    """Options for a :class:`DeviceMemoryResource` that creates its own memory pool.

    Attributes
    ----------
    ipc_enabled : bool
        Make the pool shareable with other processes (POSIX file-descriptor handles).
    max_size : int
        The most the pool may hold, in bytes; 0 (the default) lets the driver choose.
    """

    ipc_enabled: bool = False
    max_size: int = 0

    def __post_init__(self):
        self.ipc_enabled = bool(check_bool(self.ipc_enabled,
                                           "DeviceMemoryResourceOptions.ipc_enabled", True))
        self.max_size = check_size(self.max_size, "DeviceMemoryResourceOptions.max_size")


@dataclasses.dataclass
class PinnedMemoryResourceOptions:
    """Options for a :class:`PinnedMemoryResource` (a pool of page-locked host memory).

    Attributes
    ----------
    ipc_enabled : bool
        Make the pool shareable with other processes. Only pools bound to a host NUMA node can
        be shared; without ``numa_id`` the node of the current device is used.
    max_size : int
        The most the pool may hold, in bytes; 0 (the default) lets the driver choose.
    numa_id : int or None
        Bind the pool to this host NUMA node; None (the default) means no particular node.
    """

    ipc_enabled: bool = False
    max_size: int = 0
    numa_id: int | None = None

    def __post_init__(self):
        self.ipc_enabled = bool(check_bool(self.ipc_enabled,
                                           "PinnedMemoryResourceOptions.ipc_enabled", True))
        self.max_size = check_size(self.max_size, "PinnedMemoryResourceOptions.max_size")
        self.numa_id = check_int(self.numa_id, "PinnedMemoryResourceOptions.numa_id", 0,
                                 allow_none=True)


@dataclasses.dataclass
class ManagedMemoryResourceOptions:
    """Options for a :class:`ManagedMemoryResource` that creates its own managed pool.

    Attributes
    ----------
    preferred_location : int or None
        A device ordinal (``preferred_location_type`` ``"device"`` or None), a host NUMA node
        (``"host_numa"``), or ``-1`` for the host (``"host"`` or None). None with no type means
        no preferred location.
    preferred_location_type : {"device", "host", "host_numa"} or None
        How to read ``preferred_location``; None infers it (an ordinal >= 0 is a device, -1 the
        host).
    """

    preferred_location: int | None = None
    preferred_location_type: str | ManagedMemoryLocationType | None = None

    def __post_init__(self):
        owner = "ManagedMemoryResourceOptions"
        kind = check_enum(self.preferred_location_type, f"{owner}.preferred_location_type",
                          ManagedMemoryLocationType, allow_none=True)
        loc = check_int(self.preferred_location, f"{owner}.preferred_location", -1,
                        allow_none=True)
        if kind is None and loc is not None:
            kind = ManagedMemoryLocationType.DEVICE if loc >= 0 else ManagedMemoryLocationType.HOST
        if kind == ManagedMemoryLocationType.DEVICE and (loc is None or loc < 0):
            raise ValueError(f"{owner}.preferred_location must be a device ordinal (>= 0) when "
                             f"preferred_location_type is 'device', got {loc!r}")
        if kind == ManagedMemoryLocationType.HOST and loc not in (None, -1):
            raise ValueError(f"{owner}.preferred_location must be None or -1 when "
                             f"preferred_location_type is 'host', got {loc!r}")
        if kind == ManagedMemoryLocationType.HOST_NUMA and (loc is None or loc < 0):
            raise ValueError(f"{owner}.preferred_location must be a host NUMA node id (>= 0) "
                             f"when preferred_location_type is 'host_numa', got {loc!r}")
        self.preferred_location = loc
        self.preferred_location_type = kind


@dataclasses.dataclass
class VirtualMemoryResourceOptions:
    """How a :class:`VirtualMemoryResource` reserves, backs and maps memory.

    Attributes
    ----------
    allocation_type : {"pinned", "managed"}
        The physical memory's type (``CUmemAllocationProp.type``).
    location_type : {"device", "host", "host_numa", "host_numa_current"}
        Where the physical memory lives: the resource's device, or host memory (any node, the
        device's host NUMA node, or the calling thread's node).
    handle_type : {"posix_fd", "win32_kmt", "fabric"} or None
        How the physical memory could be exported to other processes; None for not at all.
    granularity : {"recommended", "minimum"}
        The driver granularity that sizes are rounded up to.
    gpu_direct_rdma : bool
        Ask for memory usable by GPUDirect RDMA.
    addr_hint : int
        A preferred start address for the reservation (0: none).
    addr_align : int or None
        Alignment of the reservation, a power of two; None (or 0) for the granularity.
    peers : iterable of Device or int
        Other devices that get ``peer_access`` to the memory.
    self_access, peer_access : {"rw", "r"} or None
        Access of the resource's device and of the peers: read-write, read-only, or none.
    """

    allocation_type: str | VirtualMemoryAllocationType = "pinned"
    location_type: str | VirtualMemoryLocationType = "device"
    handle_type: str | VirtualMemoryHandleType | None = "posix_fd"
    granularity: str | VirtualMemoryGranularityType = "recommended"
    gpu_direct_rdma: bool = False
    addr_hint: int = 0
    addr_align: int | None = None
    peers: Iterable[Any] = ()
    self_access: str | VirtualMemoryAccessType | None = "rw"
    peer_access: str | VirtualMemoryAccessType | None = "rw"

    def __post_init__(self):
        owner = "VirtualMemoryResourceOptions"
        self.allocation_type = check_enum(self.allocation_type, f"{owner}.allocation_type",
                                          VirtualMemoryAllocationType)
        self.location_type = check_enum(self.location_type, f"{owner}.location_type",
                                        VirtualMemoryLocationType)
        self.handle_type = check_enum(self.handle_type, f"{owner}.handle_type",
                                      VirtualMemoryHandleType, allow_none=True)
        self.granularity = check_enum(self.granularity, f"{owner}.granularity",
                                      VirtualMemoryGranularityType)
        self.gpu_direct_rdma = bool(check_bool(self.gpu_direct_rdma, f"{owner}.gpu_direct_rdma",
                                               True))
        self.addr_hint = check_size(self.addr_hint, f"{owner}.addr_hint")
        # The reservation's alignment is a size_t (cuda.core: OverflowError from the
        # conversion) and a power of two (cuda.core: CUDA_ERROR_INVALID_VALUE from the driver).
        align = check_int(self.addr_align, f"{owner}.addr_align", 0, allow_none=True)
        if align is not None:
            check_size(align, f"{owner}.addr_align")
            if align & (align - 1):  # 0 is the driver's default alignment, as None
                raise InvalidValueError(f"{owner}.addr_align must be a power of two, got "
                                        f"{align}")
        self.addr_align = align
        self.peers = _device_ordinals(self.peers, f"{owner}.peers")
        self.self_access = check_enum(self.self_access, f"{owner}.self_access",
                                      VirtualMemoryAccessType, allow_none=True)
        self.peer_access = check_enum(self.peer_access, f"{owner}.peer_access",
                                      VirtualMemoryAccessType, allow_none=True)
