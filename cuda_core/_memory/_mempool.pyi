from collections.abc import Iterable, Iterator, MutableSet
from typing import TypeVar

from cuda.bindings import driver

from cuda_core._device import Device
from cuda_core._memory._buffer import Buffer, MemoryResource
from cuda_core._stream import Stream
from cuda_core.typing import IsStreamType

_T = TypeVar("_T")

class _MemPool(MemoryResource):
    def allocate(self, size: int, *, stream: Stream | IsStreamType) -> Buffer: ...  # type: ignore[override]
    @property
    def handle(self) -> driver.CUmemoryPool: ...
    @property
    def is_handle_owned(self) -> bool: ...
    @property
    def is_ipc_enabled(self) -> bool: ...
    @property
    def is_mapped(self) -> bool: ...
    @property
    def attributes(self) -> MemoryPoolAttributes: ...
    @property
    def peer_accessible_by(self) -> PeerAccessibleBySetProxy: ...
    @peer_accessible_by.setter
    def peer_accessible_by(self, devices: Iterable[Device | int] | Device | int) -> None: ...

class _LiveSet(MutableSet[_T]):
    def __iter__(self) -> Iterator[_T]: ...
    def __len__(self) -> int: ...

class PeerAccessibleBySetProxy(_LiveSet[Device]):
    def __contains__(self, device: object) -> bool: ...
    def add(self, device: Device | int) -> None: ...
    def discard(self, device: Device | int) -> None: ...

class _MemoryCounters:
    @property
    def reserved_mem_current(self) -> int: ...
    reserved_mem_high: int
    @property
    def used_mem_current(self) -> int: ...
    used_mem_high: int

class MemoryPoolAttributes(_MemoryCounters):
    reuse_follow_event_dependencies: bool
    reuse_allow_opportunistic: bool
    reuse_allow_internal_dependencies: bool
    release_threshold: int
