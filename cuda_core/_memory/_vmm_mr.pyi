from typing import Any

from cuda_core._device import Device
from cuda_core._memory._buffer import Buffer
from cuda_core._memory._memory_resource import MemoryResource
from cuda_core._memory._mr_options import VirtualMemoryResourceOptions as VirtualMemoryResourceOptions

class VirtualMemoryBuffer(Buffer): ...

class VirtualMemoryResource(MemoryResource):
    def __init__(self, device_id: Device | int,
                 config: VirtualMemoryResourceOptions | dict | None = None) -> None: ...
    @property
    def config(self) -> VirtualMemoryResourceOptions: ...
    @property
    def is_ipc_enabled(self) -> bool: ...
    def modify_allocation(self, buf: Buffer, new_size: int,
                          config: VirtualMemoryResourceOptions | dict | None = None
                          ) -> VirtualMemoryBuffer: ...
    def __reduce__(self) -> Any: ...
