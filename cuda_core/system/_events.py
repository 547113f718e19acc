"""NVML events: the event-type bits, and the event sets that :class:`DeviceEvents` (one device's,
:meth:`cuda_core.system.Device.register_events`) and ``RegisteredSystemEvents``
(:mod:`cuda_core.system._system_events`) open, wait on and free.
"""

from __future__ import annotations

import sys
import warnings
import weakref
from typing import TYPE_CHECKING

from cuda_core._checks import check_enum, check_int
# The module that imports this one: its Device is read at call time.
from cuda_core.system import _device
from cuda_core.system._device_info import _U32_MAX, _decode
from cuda_core.system._nvml import call, nvml
from cuda_core.system.typing import EventType

if TYPE_CHECKING:
    from cuda_core.system._device import Device

__all__ = ["DeviceEvents", "EventData"]

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


def _event_mask(events, enum=EventType, bits=_EVENT_TYPE_BITS) -> int:
    """The NVML bit mask (``bits``: member -> bit) of an ``enum`` member
    (:class:`~cuda_core.system.typing.EventType` or ``SystemEventType``), its string, or a list
    of them."""
    if isinstance(events, str):
        events = [events]
    elif not isinstance(events, list):
        name = enum.__name__
        raise TypeError(f"events must be {'an' if name[0] in 'AEIOU' else 'a'} {name}, str, or "
                        f"list of {name} or str, not {type(events).__name__}")
    mask = 0
    for event in events:
        mask |= bits[check_enum(event, "events", enum)]
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


def open_event_set(owner, nvml_set: str, register: str, *args) -> tuple[int, weakref.finalize]:
    """A new NVML event set (``<nvml_set>_create``) with ``register(*args, set)`` done on it,
    and its finalizer: the set is freed (``<nvml_set>_free``) when ``owner`` is collected, or at
    once where registering fails."""
    module = nvml()
    handle = int(call(f"{nvml_set}_create"))
    free = weakref.finalize(owner, release_event_set, getattr(module, f"{nvml_set}_free"),
                            handle, module.NvmlError)
    try:
        call(register, *args, handle)
    except BaseException:
        free()
        raise
    return handle, free


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
        return _device.Device._from_handle(self._handle)

    @property
    def event_type(self) -> EventType:
        """The kind of event, an :class:`~cuda_core.system.typing.EventType`."""
        return _decode(_EVENT_OF_BIT, self._type, "NVML reported an unknown event type")

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
        self._set, self._free = open_event_set(self, "event_set", "device_register_events",
                                               int(device_handle), mask)

    def wait(self, timeout_ms: int = 0) -> EventData:
        """The next event, waiting at most ``timeout_ms`` milliseconds (0: without limit)
        (``nvmlEventSetWait_v2``). Raises :class:`~cuda_core.system.TimeoutError` where no
        event came within ``timeout_ms``, :class:`~cuda_core.system.GpuIsLostError` where the
        GPU fell off the bus."""
        timeout_ms = check_int(timeout_ms, "timeout_ms", 0, _U32_MAX)
        return EventData(call("event_set_wait_v2", self._set, timeout_ms))

    def __repr__(self) -> str:
        return "<cuda_core.system.DeviceEvents>"
