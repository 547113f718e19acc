from typing import Any

from cuda_core._memory._mr_options import VirtualMemoryResourceOptions
from cuda_core._memory._vmm_mr import VirtualMemoryResource

__all__: list[str]

def _rebuild_vmm_mr(cls: type[VirtualMemoryResource], device_uuid: str,
                    config: VirtualMemoryResourceOptions,
                    peers: tuple[str, ...]) -> VirtualMemoryResource: ...
