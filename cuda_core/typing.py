"""Types and protocols for annotating code that uses cuda_core.

The string enumerations here are ``str`` subclasses: every API that takes one also takes its
plain string value (``"c++"`` for ``SourceCodeType.CXX``), and a member compares equal to it.
"""

from __future__ import annotations

from collections.abc import Sequence as _Sequence
from typing import Literal, Protocol, Union, runtime_checkable

from cuda.bindings.driver import CUdeviceptr as _CUdeviceptr

from cuda_core._enum import StrEnum as _StrEnum
from cuda_core._green import SMResource as _SMResource, WorkqueueResource as _WorkqueueResource
from cuda_core._green_options import WorkqueueSharingScopeType
from cuda_core._memory._mr_options import (
    ManagedMemoryLocationType,
    VirtualMemoryAccessType,
    VirtualMemoryAllocationType,
    VirtualMemoryGranularityType,
    VirtualMemoryHandleType,
    VirtualMemoryLocationType,
)
from cuda_core.texture._options import (
    AddressModeType,
    ArrayFormatType,
    FilterModeType,
    ReadModeType,
)

__all__ = [
    "AddressModeType",
    "ArrayFormatType",
    "CompilerBackendType",
    "DevicePointerType",
    "DeviceResourcesType",
    "FilterModeType",
    "GraphConditionalType",
    "GraphMemoryType",
    "IsStreamType",
    "ManagedMemoryLocationType",
    "ObjectCodeFormatType",
    "PCHStatusType",
    "ProcessStateType",
    "ReadModeType",
    "SourceCodeType",
    "VirtualMemoryAccessType",
    "VirtualMemoryAllocationType",
    "VirtualMemoryGranularityType",
    "VirtualMemoryHandleType",
    "VirtualMemoryLocationType",
    "WorkqueueSharingScopeType",
]


#: A device address as the APIs that take one accept it: a ``cuda.bindings.driver.CUdeviceptr``,
#: an int, or None where the address may be left out (``Buffer.from_handle``'s ``ptr`` takes the
#: first two).
DevicePointerType = Union[_CUdeviceptr, int, None]

#: What ``ContextOptions.resources`` takes: one resource or a sequence of them.
DeviceResourcesType = Union[_SMResource, _WorkqueueResource,
                            _Sequence[Union[_SMResource, _WorkqueueResource]]]

#: A process's checkpoint state, as :attr:`cuda_core.checkpoint.Process.state` gives it.
ProcessStateType = Literal["running", "locked", "checkpointed", "failed"]


@runtime_checkable
class IsStreamType(Protocol):
    """Any object that exposes a CUDA stream through the ``__cuda_stream__`` protocol (v0):
    a method returning ``(0, address)``."""

    def __cuda_stream__(self) -> tuple[int, int]: ...


class SourceCodeType(_StrEnum):
    """The language of :class:`cuda_core.Program` input."""

    CXX = "c++"
    PTX = "ptx"
    NVVM = "nvvm"


class GraphConditionalType(_StrEnum):
    """The kind of a graph's conditional node (``ConditionalNode.cond_type``): an if/else node
    is an ``IF`` node with two bodies."""

    IF = "if"
    WHILE = "while"
    SWITCH = "switch"


class GraphMemoryType(_StrEnum):
    """Where a graph's allocation node puts its memory (``GraphNode.allocate``)."""

    DEVICE = "device"
    HOST = "host"
    MANAGED = "managed"


class ObjectCodeFormatType(_StrEnum):
    """The format of an :class:`cuda_core.ObjectCode` (``ObjectCode.code_type``)."""

    PTX = "ptx"
    CUBIN = "cubin"
    LTOIR = "ltoir"
    FATBIN = "fatbin"
    OBJECT = "object"
    LIBRARY = "library"


class CompilerBackendType(_StrEnum):
    """The library that does the work of a :class:`cuda_core.Program` or
    :class:`cuda_core.Linker`."""

    NVRTC = "NVRTC"
    NVVM = "NVVM"
    NVJITLINK = "nvJitLink"
    DRIVER = "driver"


class PCHStatusType(_StrEnum):
    """What became of a precompiled header that NVRTC was asked to create
    (``Program.pch_status``)."""

    CREATED = "created"
    NOT_ATTEMPTED = "not_attempted"
    FAILED = "failed"
