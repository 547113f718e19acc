"""Types and protocols for annotating code that uses cuda_core.

The string enumerations here are ``str`` subclasses: every API that takes one also takes its
plain string value (``"c++"`` for ``SourceCodeType.CXX``), and a member compares equal to it.

This module only re-exports: each name is defined next to what takes it (an enum beside its
options class), and implementation modules import it from there, never from here.
"""

from cuda_core._checkpoint import ProcessStateType
from cuda_core._green import DeviceResourcesType
from cuda_core._green_options import WorkqueueSharingScopeType
from cuda_core._linker import CompilerBackendType, ObjectCodeFormatType
from cuda_core._memory._mr_options import (
    ManagedMemoryLocationType,
    VirtualMemoryAccessType,
    VirtualMemoryAllocationType,
    VirtualMemoryGranularityType,
    VirtualMemoryHandleType,
    VirtualMemoryLocationType,
)
from cuda_core._options import DevicePointerType, IsStreamType
from cuda_core._program_options import PCHStatusType, SourceCodeType
from cuda_core.graph._graph_options import GraphConditionalType, GraphMemoryType
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
