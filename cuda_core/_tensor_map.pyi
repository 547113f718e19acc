from typing import Any

from cuda_core._device import Device
from cuda_core._memoryview import StridedMemoryView
from cuda_core._tensor_map_enums import (TensorMapDataType as TensorMapDataType,
                                         TensorMapIm2ColWideMode as TensorMapIm2ColWideMode,
                                         TensorMapInterleave as TensorMapInterleave,
                                         TensorMapL2Promotion as TensorMapL2Promotion,
                                         TensorMapOOBFill as TensorMapOOBFill,
                                         TensorMapSwizzle as TensorMapSwizzle)

__all__ = ["TensorMapDescriptor", "TensorMapDescriptorOptions"]


class TensorMapDescriptorOptions:
    box_dim: tuple[int, ...]
    element_strides: tuple[int, ...] | None
    data_type: TensorMapDataType | None
    interleave: TensorMapInterleave
    swizzle: TensorMapSwizzle
    l2_promotion: TensorMapL2Promotion
    oob_fill: TensorMapOOBFill
    def __init__(self, box_dim: tuple[int, ...], element_strides: tuple[int, ...] | None = ...,
                 data_type: TensorMapDataType | Any | None = ...,
                 interleave: TensorMapInterleave | int = ...,
                 swizzle: TensorMapSwizzle | int = ...,
                 l2_promotion: TensorMapL2Promotion | int = ...,
                 oob_fill: TensorMapOOBFill | int = ...) -> None: ...


class TensorMapDescriptor:
    def __init__(self, *args: object, **kwargs: object) -> None: ...
    @property
    def device(self) -> Device | None: ...
    def replace_address(self, tensor: StridedMemoryView | object) -> None: ...
