"""Memory: buffers, memory resources, DLPack export.

Each concept has its own private module; ``cuda_core`` re-exports the public names.
"""

from cuda_core._memory._buffer import Buffer
from cuda_core._memory._memory_resource import MemoryResource
from cuda_core._memory._device_mr import DeviceMemoryResource
from cuda_core._memory._graph_mr import GraphMemoryResource
from cuda_core._memory._legacy_mr import LegacyPinnedMemoryResource
from cuda_core._memory._location import Host
from cuda_core._memory._managed_mr import ManagedBuffer, ManagedMemoryResource
from cuda_core._memory._mr_options import (
    DeviceMemoryResourceOptions,
    ManagedMemoryResourceOptions,
    PinnedMemoryResourceOptions,
    VirtualMemoryResourceOptions,
)
from cuda_core._memory._pinned_mr import PinnedMemoryResource
from cuda_core._memory._vmm_mr import VirtualMemoryBuffer, VirtualMemoryResource
from cuda_core._memory import _vmm_ipc  # registers the VMM IPC hooks with _ipc

# Buffer's IPC members (ipc_descriptor, from_ipc_descriptor, pickling) and the resources'
# multiprocessing reducers exist once _ipc is imported: it registers them (imports neither
# multiprocessing nor uuid).
from cuda_core._memory import _ipc  # noqa: E402, F401  (isort: skip)

__all__ = [
    "Buffer",
    "DeviceMemoryResource",
    "DeviceMemoryResourceOptions",
    "GraphMemoryResource",
    "Host",
    "LegacyPinnedMemoryResource",
    "ManagedBuffer",
    "ManagedMemoryResource",
    "ManagedMemoryResourceOptions",
    "MemoryResource",
    "PinnedMemoryResource",
    "PinnedMemoryResourceOptions",
    "VirtualMemoryBuffer",
    "VirtualMemoryResource",
    "VirtualMemoryResourceOptions",
]
