from typing import Any, Literal

from cuda_core._memory._buffer import Buffer
from cuda_core.texture._array import MipmappedArray, OpaqueArray
from cuda_core.texture._options import ArrayFormatType

__all__: list[str]

class ResourceDescriptor:
    kind: Literal["array", "mipmapped_array", "linear", "pitch2d"]
    source: OpaqueArray | MipmappedArray | Buffer
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    @classmethod
    def from_opaque_array(cls, array: OpaqueArray) -> ResourceDescriptor: ...
    @classmethod
    def from_mipmapped_array(cls, mipmapped_array: MipmappedArray) -> ResourceDescriptor: ...
    @classmethod
    def from_linear(
        cls,
        buffer: Buffer,
        *,
        format: ArrayFormatType | str | Any,
        num_channels: int,
        size_bytes: int | None = None,
    ) -> ResourceDescriptor: ...
    @classmethod
    def from_pitch2d(
        cls,
        buffer: Buffer,
        *,
        format: ArrayFormatType | str | Any,
        num_channels: int,
        width: int,
        height: int,
        pitch_bytes: int,
    ) -> ResourceDescriptor: ...
    @property
    def format(self) -> ArrayFormatType | None: ...
    @property
    def num_channels(self) -> int | None: ...
    @property
    def size_bytes(self) -> int | None: ...
    @property
    def width(self) -> int | None: ...
    @property
    def height(self) -> int | None: ...
    @property
    def pitch_bytes(self) -> int | None: ...
