"""Types and protocols for annotating code that uses cuda_core."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["IsStreamType"]


@runtime_checkable
class IsStreamType(Protocol):
    """Any object that exposes a CUDA stream through the ``__cuda_stream__`` protocol (v0):
    a method returning ``(0, address)``."""

    def __cuda_stream__(self) -> tuple[int, int]: ...
