from cuda_core._device import Device
from cuda_core._memory._memory_resource import MemoryResource, _DeviceOnlyMemoryResource

class LegacyPinnedMemoryResource(MemoryResource):
    def __init__(self) -> None: ...

class _SynchronousMemoryResource(_DeviceOnlyMemoryResource):
    def __init__(self, device_id: Device | int) -> None: ...
