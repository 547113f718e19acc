from typing import TYPE_CHECKING, Any, SupportsIndex, TypeVar

import numpy

from cuda_core._memory._buffer import Buffer
from cuda_core._memory._memory_resource import MemoryResource
from cuda_core._stream import Stream
from cuda_core._strided_layout import _StridedLayout

if TYPE_CHECKING:
    from cuda_core._tensor_map import (TensorMapDataType, TensorMapDescriptor,
                                       TensorMapDescriptorOptions, TensorMapInterleave,
                                       TensorMapL2Promotion, TensorMapOOBFill, TensorMapSwizzle)

__all__ = ["StridedMemoryView"]

# The class a class method is called on: a subclass's view is of its class.
_View = TypeVar("_View", bound="StridedMemoryView")


class StridedMemoryView:
    def __init__(self, obj: object = ..., stream_ptr: SupportsIndex | None = ...) -> None: ...
    @classmethod
    def from_dlpack(cls: type[_View], obj: object,
                    stream_ptr: SupportsIndex | None = ...) -> _View: ...
    @classmethod
    def from_cuda_array_interface(cls: type[_View], obj: object,
                                  stream_ptr: SupportsIndex | None = ...) -> _View: ...
    @classmethod
    def from_array_interface(cls: type[_View], obj: object) -> _View: ...
    @classmethod
    def from_any_interface(cls: type[_View], obj: object,
                           stream_ptr: SupportsIndex | None = ...) -> _View: ...
    @classmethod
    def from_buffer(cls: type[_View], buffer: Buffer, shape: tuple[int, ...],
                    strides: tuple[int, ...] | None = ..., *, itemsize: int | None = ...,
                    dtype: numpy.dtype[Any] | Any | None = ...,
                    is_readonly: bool = ...) -> _View: ...
    @property
    def ptr(self) -> int: ...
    @property
    def device_id(self) -> int: ...
    @property
    def is_device_accessible(self) -> bool: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def exporting_obj(self) -> object: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def strides(self) -> tuple[int, ...] | None: ...
    @property
    def dtype(self) -> numpy.dtype[Any] | None: ...
    @property
    def size(self) -> int: ...
    @property
    def _layout(self) -> _StridedLayout: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...
    def __dlpack__(self, *, stream: int | None = ..., max_version: tuple[int, int] | None = ...,
                   dl_device: tuple[int, int] | None = ...,
                   copy: bool | None = ...) -> Any: ...
    __dlpack_c_exchange_api__: Any
    __c_dlpack_exchange_api__: Any
    def copy_from(self, other: StridedMemoryView, stream: Stream | Any | None,
                  allocator: MemoryResource | None = ..., blocking: bool | None = ...) -> None: ...
    def copy_to(self, other: StridedMemoryView, stream: Stream | Any | None = ...,
                allocator: MemoryResource | None = ..., blocking: bool | None = ...) -> None: ...
    def view(self, layout: _StridedLayout | None = ...,
             dtype: numpy.dtype[Any] | Any | None = ...) -> StridedMemoryView: ...
    def as_tensor_map(self, box_dim: tuple[int, ...] | None = ..., *,
                      options: TensorMapDescriptorOptions | dict[str, Any] | None = ...,
                      element_strides: tuple[int, ...] | None = ...,
                      data_type: TensorMapDataType | numpy.dtype[Any] | Any | None = ...,
                      interleave: TensorMapInterleave | None = ...,
                      swizzle: TensorMapSwizzle | None = ...,
                      l2_promotion: TensorMapL2Promotion | None = ...,
                      oob_fill: TensorMapOOBFill | None = ...) -> TensorMapDescriptor: ...

