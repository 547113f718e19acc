import uuid as _uuid
from collections.abc import Iterable
from typing import TypeVar

from cuda.bindings import driver

from cuda_core._device import Device
from cuda_core._memory._buffer import Buffer
from cuda_core._memory._ipc_base import IPCAllocationHandle
from cuda_core._memory._memory_resource import MemoryResource
from cuda_core._memory._pool_attributes import MemoryPoolAttributes
from cuda_core._stream import Stream
from cuda_core.typing import IsStreamType

_P = TypeVar("_P", bound="_MemPool")

from cuda_core._memory._peer_access import PeerAccessibleBySetProxy as PeerAccessibleBySetProxy
from cuda_core._memory._peer_access import _set_access_calls as _set_access_calls

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
    def uuid(self) -> _uuid.UUID | None: ...
    @property
    def allocation_handle(self) -> IPCAllocationHandle: ...
    def register(self: _P, uuid: _uuid.UUID) -> _P: ...
    @classmethod
    def from_registry(cls: type[_P], uuid: _uuid.UUID) -> _P: ...
    def _ipc_stats(self) -> tuple[int, int, int, int, bool] | None: ...
    @property
    def attributes(self) -> MemoryPoolAttributes: ...
    @property
    def peer_accessible_by(self) -> PeerAccessibleBySetProxy: ...
    @peer_accessible_by.setter
    def peer_accessible_by(self, devices: Iterable[Device | int] | Device | int) -> None: ...
