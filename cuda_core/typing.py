"""Types and protocols for annotating code that uses cuda_core.

The string enumerations here are ``str`` subclasses: every API that takes one also takes its
plain string value (``"c++"`` for ``SourceCodeType.CXX``), and a member compares equal to it.
"""

from __future__ import annotations

import enum
from typing import Protocol, runtime_checkable

__all__ = [
    "CompilerBackendType",
    "IsStreamType",
    "ObjectCodeFormatType",
    "PCHStatusType",
    "SourceCodeType",
]

if hasattr(enum, "StrEnum"):  # Python 3.11+
    _StrEnum = enum.StrEnum
else:
    class _StrEnum(str, enum.Enum):
        """``enum.StrEnum`` for Python 3.10: members are their string values."""

        def __str__(self) -> str:
            return str.__str__(self)

        def __format__(self, spec: str) -> str:
            return str.__format__(str.__str__(self), spec)


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
