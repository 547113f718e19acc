"""Options dataclasses: every API takes an instance, a dict of its fields, or None."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, Union, runtime_checkable

from cuda.bindings.driver import CUdeviceptr as _CUdeviceptr

from cuda_core._checks import ArgumentTypeError, check_bool, check_int

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")


@runtime_checkable
class IsStreamType(Protocol):
    """Any object that exposes a CUDA stream through the ``__cuda_stream__`` protocol (v0):
    a method returning ``(0, address)``."""

    def __cuda_stream__(self) -> tuple[int, int]: ...


#: A device address as the APIs that take one accept it: a ``cuda.bindings.driver.CUdeviceptr``,
#: an int, or None where the address may be left out (``Buffer.from_handle``'s ``ptr`` takes the
#: first two).
DevicePointerType = Union[_CUdeviceptr, int, None]


def check_or_create_options(cls: type[T], options: Any, what: str) -> T:
    """Coerce ``options`` (an instance of ``cls``, a dict of its fields, or None) to ``cls``.

    Raises TypeError naming ``what`` for any other type and for unknown dict keys; the
    dataclass's own ``__post_init__`` validates the values.
    """
    if options is None:
        return cls()
    if isinstance(options, cls):
        return options
    if isinstance(options, dict):
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(f"{what}: unknown field(s) {', '.join(map(repr, unknown))} for "
                            f"{cls.__name__} (fields: {', '.join(sorted(known))})")
        return cls(**options)
    raise TypeError(f"{what} must be a {cls.__name__}, a dict or None, "
                    f"not {type(options).__name__}")


@dataclasses.dataclass
class StreamOptions:
    """Options for :meth:`Device.create_stream`.

    Attributes
    ----------
    nonblocking : bool
        True (the default): the stream does not synchronize with the legacy default stream
        (``CU_STREAM_NON_BLOCKING``).
    priority : int or None
        Stream priority; a lower number is a higher priority. None means the default priority.
        The valid range is the device's (``cuCtxGetStreamPriorityRange``) and is checked when
        the stream is created.
    """

    nonblocking: bool = True
    priority: int | None = None

    def __post_init__(self):
        # An int by its truth value, None as False: as cuda.core reads the flag.
        self.nonblocking = bool(check_bool(self.nonblocking, "StreamOptions.nonblocking", True))
        if isinstance(self.priority, float):
            # cuda.core truncates it (-1.5 becomes -1) and raises ValueError at creation for
            # one out of range; a TypeError here, and a ValueError too.
            raise ArgumentTypeError(f"StreamOptions.priority must be an int or None, not float "
                                    f"({self.priority!r})")
        self.priority = check_int(self.priority, "StreamOptions.priority", allow_none=True)


@dataclasses.dataclass
class EventOptions:
    """Options for :meth:`Device.create_event` and :meth:`Stream.record`.

    Each field is a bool, or None, which means False (and is kept as None, as in cuda.core).

    Attributes
    ----------
    timing_enabled : bool or None
        Record timestamps, so that ``end - start`` gives elapsed milliseconds. Off by default:
        events without timing are cheaper to record and wait on.
    blocking_sync : bool or None
        ``Event.sync()`` blocks the calling thread instead of spinning.
    ipc_enabled : bool or None
        The event can be shared with other processes (:attr:`Event.ipc_descriptor`, or sent
        through :mod:`multiprocessing`). Such an event is created by
        ``Stream.record(options=EventOptions(ipc_enabled=True))``, recorded once, and cannot
        record timing: creating one with ``timing_enabled=True``, or through
        :meth:`Device.create_event`, raises ``TypeError``.
    """

    timing_enabled: bool | None = False
    blocking_sync: bool | None = False
    ipc_enabled: bool | None = False

    def __post_init__(self):
        # The combination ipc_enabled + timing_enabled is refused when an event is created
        # (TypeError, as cuda.core), not here: options are plain values until used.
        # A bool or None, as cuda.core's EventOptions takes (it refuses an int, unlike the
        # other options' flags).
        for field in ("timing_enabled", "blocking_sync", "ipc_enabled"):
            value = getattr(self, field)
            if value is not None and type(value) is not bool:
                raise TypeError(f"EventOptions.{field} must be a bool or None, not "
                                f"{type(value).__name__}")
