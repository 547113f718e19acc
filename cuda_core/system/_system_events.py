"""System events (a GPU's driver bound or unbound): :func:`register_events` and what it returns."""

from __future__ import annotations

from cuda_core._checks import check_int
from cuda_core.system._device import Device
from cuda_core.system._device_info import _decode
from cuda_core.system._events import _event_mask, open_event_set
from cuda_core.system._nvml import call
from cuda_core.system.typing import SystemEventType

__all__ = ["RegisteredSystemEvents", "SystemEvent", "SystemEvents", "register_events"]

_U32_MAX = 0xFFFFFFFF
# nvmlSystemEventType codes (nvml.h).
_SYSTEM_EVENT_BITS = {SystemEventType.UNBIND: 1, SystemEventType.BIND: 2}
_SYSTEM_EVENT_OF_CODE = {code: event for event, code in _SYSTEM_EVENT_BITS.items()}


def _pci_bus_id_from_gpu_id(gpu_id: int) -> str:
    """The PCI bus id, ``domain:bus:device.0``, of a system event's packed ``gpu_id`` (domain in
    bits 16-31, bus in bits 8-15, device in bits 0-7)."""
    gpu_id = int(gpu_id)
    return (f"{(gpu_id >> 16) & 0xFFFF:08X}:{(gpu_id >> 8) & 0xFF:02X}:"
            f"{gpu_id & 0xFF:02X}.0")


class SystemEvent:
    """One system event (:class:`SystemEvents`)."""

    __slots__ = ("_type", "_gpu_id", "__weakref__")

    def __init__(self, event_data):
        self._type = int(event_data.event_type)
        self._gpu_id = int(event_data.gpu_id)

    @property
    def event_type(self) -> SystemEventType:
        """What happened, a :class:`~cuda_core.system.typing.SystemEventType` (``"bind"`` or
        ``"unbind"``)."""
        return _decode(_SYSTEM_EVENT_OF_CODE, self._type,
                       "NVML reported an unknown system event type")

    @property
    def gpu_id(self) -> int:
        """The GPU, as NVML packs its PCI address."""
        return self._gpu_id

    @property
    def device(self) -> Device:
        """The :class:`~cuda_core.system.Device` of the event, looked up by PCI bus id."""
        return Device(pci_bus_id=_pci_bus_id_from_gpu_id(self._gpu_id))

    def __repr__(self) -> str:
        return f"<cuda_core.system.SystemEvent type={self._type} gpu_id=0x{self._gpu_id:x}>"


class SystemEvents:
    """The events one :meth:`RegisteredSystemEvents.wait` returned: a sequence of
    :class:`SystemEvent`."""

    __slots__ = ("_events", "__weakref__")

    def __init__(self, event_data):
        self._events = tuple(SystemEvent(event_data[i]) for i in range(len(event_data)))

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, idx: int) -> SystemEvent:
        idx = check_int(idx, "idx")
        return self._events[idx]

    def __repr__(self) -> str:
        return f"<cuda_core.system.SystemEvents ({len(self)} events)>"


class RegisteredSystemEvents:
    """The system events being recorded (:func:`register_events`): an NVML system event set,
    freed when this object is collected."""

    __slots__ = ("_set", "_free", "__weakref__")

    def __init__(self, events):
        mask = _event_mask(events, SystemEventType, _SYSTEM_EVENT_BITS)
        self._set, self._free = open_event_set(self, "system_event_set", "system_register_events",
                                               mask)

    def wait(self, timeout_ms: int = 0, buffer_size: int = 1) -> SystemEvents:
        """The events recorded, at most ``buffer_size`` (1 or more) of them, waiting at most
        ``timeout_ms`` milliseconds (0: without limit) for the first
        (``nvmlSystemEventSetWait``). Raises :class:`~cuda_core.system.TimeoutError` where no
        event came within ``timeout_ms``."""
        timeout_ms = check_int(timeout_ms, "timeout_ms", 0, _U32_MAX)
        buffer_size = check_int(buffer_size, "buffer_size", 1, _U32_MAX)
        return SystemEvents(call("system_event_set_wait", self._set, timeout_ms, buffer_size))

    def __repr__(self) -> str:
        return "<cuda_core.system.RegisteredSystemEvents>"


def register_events(events) -> RegisteredSystemEvents:
    """Starts recording system events of the given kinds (Linux; ``nvmlSystemRegisterEvents``):
    ``events`` is a :class:`~cuda_core.system.typing.SystemEventType` (``"bind"``,
    ``"unbind"``), its string, or a list of them. Events before this call are not recorded;
    wait for them with :meth:`RegisteredSystemEvents.wait`.

    Raises
    ------
    cuda_core.system.NotSupportedError
        None of the kinds can be recorded.
    """
    return RegisteredSystemEvents(events)
