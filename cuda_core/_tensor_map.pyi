import enum
from typing import Any

from cuda_core._device import Device
from cuda_core._memoryview import StridedMemoryView

__all__ = ["TensorMapDescriptor", "TensorMapDescriptorOptions"]


class TensorMapDataType(enum.IntEnum):
    UINT8 = 0
    UINT16 = 1
    UINT32 = 2
    INT32 = 3
    UINT64 = 4
    INT64 = 5
    FLOAT16 = 6
    FLOAT32 = 7
    FLOAT64 = 8
    BFLOAT16 = 9
    FLOAT32_FTZ = 10
    TFLOAT32 = 11
    TFLOAT32_FTZ = 12


class TensorMapInterleave(enum.IntEnum):
    NONE = 0
    INTERLEAVE_16B = 1
    INTERLEAVE_32B = 2


class TensorMapSwizzle(enum.IntEnum):
    NONE = 0
    SWIZZLE_32B = 1
    SWIZZLE_64B = 2
    SWIZZLE_128B = 3


class TensorMapL2Promotion(enum.IntEnum):
    NONE = 0
    L2_64B = 1
    L2_128B = 2
    L2_256B = 3


class TensorMapOOBFill(enum.IntEnum):
    NONE = 0
    NAN_REQUEST_ZERO_FMA = 1


class TensorMapIm2ColWideMode(enum.IntEnum):
    W = 0
    W128 = 1


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
