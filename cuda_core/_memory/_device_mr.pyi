from cuda_core._device import Device
from cuda_core._memory._ipc_base import IPCAllocationHandle
from cuda_core._memory._mempool import _MemPool
from cuda_core._memory._mr_options import DeviceMemoryResourceOptions as DeviceMemoryResourceOptions

class DeviceMemoryResource(_MemPool):
    def __init__(self, device_id: Device | int,
                 options: DeviceMemoryResourceOptions | dict | None = None) -> None: ...
    @classmethod
    def from_allocation_handle(cls, device_id: Device | int,
                               alloc_handle: IPCAllocationHandle | int) -> DeviceMemoryResource: ...
    def __reduce__(self) -> tuple[object, ...]: ...
