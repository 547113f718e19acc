"""cuda_core: a Pythonic interface to CUDA whose hot paths are Cython over the CUDA driver.

Importing this package never touches the driver: a machine without a GPU or driver imports it,
and the first use of the GPU there raises one :class:`CUDAError` that names the cause.
"""

from cuda_core._version import __version__
from cuda_core._errors import (CUDAError, CUDALaunchError, CUDAOutOfMemoryError, CUDAWarning,
                               NVRTCError)
from cuda_core._context import Context
from cuda_core._device import ComputeCapability, Device, DeviceProperties
from cuda_core._event import Event
from cuda_core._launch_config import LaunchConfig
from cuda_core._launcher import launch
from cuda_core._linker import Linker, LinkerOptions
from cuda_core._memory import (
    Buffer,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    GraphMemoryResource,
    Host,
    LegacyPinnedMemoryResource,
    ManagedBuffer,
    ManagedMemoryResource,
    ManagedMemoryResourceOptions,
    MemoryResource,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
    VirtualMemoryResource,
    VirtualMemoryResourceOptions,
)
from cuda_core._module import Kernel, ObjectCode
from cuda_core._options import EventOptions, StreamOptions
from cuda_core._program import Program, ProgramOptions
from cuda_core._stream import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, Stream
from cuda_core.system import System
from cuda_core import graph, system, typing, utils

__all__ = [
    "Buffer",
    "CUDAError",
    "CUDALaunchError",
    "CUDAOutOfMemoryError",
    "CUDAWarning",
    "ComputeCapability",
    "Context",
    "Device",
    "DeviceMemoryResource",
    "DeviceMemoryResourceOptions",
    "DeviceProperties",
    "Event",
    "EventOptions",
    "GraphMemoryResource",
    "Host",
    "Kernel",
    "LEGACY_DEFAULT_STREAM",
    "LaunchConfig",
    "LegacyPinnedMemoryResource",
    "Linker",
    "LinkerOptions",
    "ManagedBuffer",
    "ManagedMemoryResource",
    "ManagedMemoryResourceOptions",
    "MemoryResource",
    "NVRTCError",
    "ObjectCode",
    "PER_THREAD_DEFAULT_STREAM",
    "PinnedMemoryResource",
    "PinnedMemoryResourceOptions",
    "Program",
    "ProgramOptions",
    "Stream",
    "StreamOptions",
    "System",
    "VirtualMemoryResource",
    "VirtualMemoryResourceOptions",
    "graph",
    "system",
    "typing",
    "utils",
    "launch",
]
