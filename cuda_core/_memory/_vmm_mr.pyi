from cuda_core._device import Device
from cuda_core._memory._buffer import Buffer, MemoryResource
from cuda_core._memory._mr_options import VirtualMemoryResourceOptions as VirtualMemoryResourceOptions

class VirtualMemoryResource(MemoryResource):
    def __init__(self, device_id: Device | int,
                 config: VirtualMemoryResourceOptions | dict | None = None) -> None: ...
    @property
    def config(self) -> VirtualMemoryResourceOptions: ...
    def modify_allocation(self, buf: Buffer, new_size: int,
                          config: VirtualMemoryResourceOptions | dict | None = None) -> Buffer: ...
