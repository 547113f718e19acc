from cuda_core._memory._mempool import _MemPool
from cuda_core._memory._mr_options import PinnedMemoryResourceOptions as PinnedMemoryResourceOptions

class PinnedMemoryResource(_MemPool):
    def __init__(self, options: PinnedMemoryResourceOptions | dict | None = None) -> None: ...
    @property
    def numa_id(self) -> int | None: ...
