"""Types and protocols for annotating code that uses cuda_core."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from cuda_core._memory._mr_options import (
    ManagedMemoryLocationType,
    VirtualMemoryAccessType,
    VirtualMemoryAllocationType,
    VirtualMemoryGranularityType,
    VirtualMemoryHandleType,
    VirtualMemoryLocationType,
)

__all__ = [
    "IsStreamType",
    "ManagedMemoryLocationType",
    "VirtualMemoryAccessType",
    "VirtualMemoryAllocationType",
    "VirtualMemoryGranularityType",
    "VirtualMemoryHandleType",
    "VirtualMemoryLocationType",
]


@runtime_checkable
class IsStreamType(Protocol):
    """Any object that exposes a CUDA stream through the ``__cuda_stream__`` protocol (v0):
    a method returning ``(0, address)``."""

    def __cuda_stream__(self) -> tuple[int, int]: ...
