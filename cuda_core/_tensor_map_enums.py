"""The ``TensorMap*`` enums of :mod:`cuda_core._tensor_map`, written once here in Python for the
extension module and its stub to import (the driver's ``CUtensorMap*`` codes)."""

import enum


class TensorMapDataType(enum.IntEnum):
    """Element types of a tensor map (the driver's ``CUtensorMapDataType``)."""

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
    """Interleave layout of a tensor map (``CUtensorMapInterleave``)."""

    NONE = 0
    INTERLEAVE_16B = 1
    INTERLEAVE_32B = 2


class TensorMapSwizzle(enum.IntEnum):
    """Shared-memory swizzle mode of a tensor map (``CUtensorMapSwizzle``)."""

    NONE = 0
    SWIZZLE_32B = 1
    SWIZZLE_64B = 2
    SWIZZLE_128B = 3


class TensorMapL2Promotion(enum.IntEnum):
    """L2 promotion of a tensor map's loads (``CUtensorMapL2promotion``)."""

    NONE = 0
    L2_64B = 1
    L2_128B = 2
    L2_256B = 3


class TensorMapOOBFill(enum.IntEnum):
    """What a box reads outside the tensor (``CUtensorMapFloatOOBfill``): zeros (``NONE``), or
    NaN for floating-point types (``NAN_REQUEST_ZERO_FMA``)."""

    NONE = 0
    NAN_REQUEST_ZERO_FMA = 1


class TensorMapIm2ColWideMode(enum.IntEnum):
    """Wide im2col mode (``CUtensorMapIm2ColWideMode``); no public factory uses it yet."""

    W = 0
    W128 = 1


# Documented, printed by type hints and pickled as cuda_core._tensor_map's (which imports them),
# where they were defined before this module held them.
for _enum in (TensorMapDataType, TensorMapInterleave, TensorMapSwizzle, TensorMapL2Promotion,
              TensorMapOOBFill, TensorMapIm2ColWideMode):
    _enum.__module__ = "cuda_core._tensor_map"
del _enum
