"""The texture enums and options: plain values, checked when made, no driver call.

Each enum is a string enum (its members are their string values, and every option that takes
one also takes the plain string). An options class takes an instance, a dict of its fields or
(for :class:`TextureObjectOptions` only) None wherever a factory takes it.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from typing import Any, cast

from cuda_core._checks import ArgumentTypeError, check_bool, check_enum, check_int
from cuda_core._enum import StrEnum
from cuda_core.texture._fast_checks import texture_options_ready

__all__ = ["AddressModeType", "ArrayFormatType", "FilterModeType", "MipmappedArrayOptions",
           "OpaqueArrayOptions", "ReadModeType", "TextureObjectOptions"]

# The driver's unsigned int fields.
_UINT_MAX = 2**32 - 1


class ArrayFormatType(StrEnum):
    """The element type of one channel of an :class:`~cuda_core.texture.OpaqueArray`, or of a
    linear or pitched texture (``CUarray_format``)."""

    UINT8 = "uint8"
    UINT16 = "uint16"
    UINT32 = "uint32"
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    FLOAT16 = "float16"
    FLOAT32 = "float32"


class AddressModeType(StrEnum):
    """What a texture read outside [0, size) returns (``CUaddress_mode``). ``WRAP`` and
    ``MIRROR`` need normalized coordinates."""

    WRAP = "wrap"
    CLAMP = "clamp"
    MIRROR = "mirror"
    BORDER = "border"


class FilterModeType(StrEnum):
    """How a texture read between texels is computed (``CUfilter_mode``)."""

    POINT = "point"
    LINEAR = "linear"


class ReadModeType(StrEnum):
    """Whether integer texels are read as they are (``ELEMENT_TYPE``) or promoted to floats in
    [0, 1] or [-1, 1] (``NORMALIZED_FLOAT``)."""

    ELEMENT_TYPE = "element_type"
    NORMALIZED_FLOAT = "normalized_float"


# Bytes per channel of each format.
FORMAT_BYTES = {
    ArrayFormatType.UINT8: 1, ArrayFormatType.INT8: 1,
    ArrayFormatType.UINT16: 2, ArrayFormatType.INT16: 2, ArrayFormatType.FLOAT16: 2,
    ArrayFormatType.UINT32: 4, ArrayFormatType.INT32: 4, ArrayFormatType.FLOAT32: 4,
}
FLOAT_FORMATS = frozenset((ArrayFormatType.FLOAT16, ArrayFormatType.FLOAT32))


# Each enum's members by value. A member is a str equal to its value, with the same hash, so
# one lookup finds the member from either: the fast path of every enum check below.
_MEMBERS = {cls: {m.value: m for m in cls}
            for cls in (ArrayFormatType, AddressModeType, FilterModeType, ReadModeType)}


def enum_value(value, what: str, cls):
    """``value`` (a member of the string enum ``cls`` or its string) as the member."""
    if isinstance(value, str):
        found = _MEMBERS[cls].get(value)
        if found is not None:
            return found
    return check_enum(value, what, cls)  # raises, naming the accepted values


def check_format(value, what: str) -> ArrayFormatType:
    """An :class:`ArrayFormatType` from a member, its string, or a NumPy dtype (or scalar type)
    of one of the eight formats."""
    if not isinstance(value, str) and value is not None:
        # NumPy is only consulted when the caller has it loaded (it passed a dtype).
        np = sys.modules.get("numpy")
        if np is not None and (isinstance(value, np.dtype) or (
                isinstance(value, type) and issubclass(value, np.generic))):
            dtype = np.dtype(value)
            if not dtype.isnative:
                raise ValueError(f"{what}: dtype {dtype.str} is not in native byte order")
            value = dtype.name
    return enum_value(value, what, ArrayFormatType)


def check_shape(shape, what: str) -> tuple:
    """``shape``, a tuple (or list) of one to three ints >= 1, as a tuple of ints."""
    if not isinstance(shape, (tuple, list)):
        raise ArgumentTypeError(f"{what} must be a tuple of 1 to 3 ints, not "
                                f"{type(shape).__name__}")
    if not 1 <= len(shape) <= 3:
        raise ValueError(f"{what} must have 1, 2 or 3 dimensions (width, height, depth), got "
                         f"{len(shape)}")
    for n in shape:
        if type(n) is not int or n < 1:
            break
    else:
        return shape if type(shape) is tuple else tuple(shape)
    return tuple(check_int(n, f"{what}[{i}]", 1) for i, n in enumerate(shape))


def check_channels(value, what: str) -> int:
    if type(value) is not int:
        value = check_int(value, what)
    if value not in (1, 2, 4):
        raise ValueError(f"{what} must be 1, 2 or 4, got {value}")
    return value


@dataclasses.dataclass
class OpaqueArrayOptions:
    """Options for :meth:`Device.create_opaque_array`.

    Attributes
    ----------
    shape : tuple of int
        ``(width,)``, ``(width, height)`` or ``(width, height, depth)``, in elements, each
        >= 1; checked against the device's texture (or surface) limits at creation.
    format : ArrayFormatType, str or numpy.dtype
        The type of one channel; stored as an :class:`ArrayFormatType`.
    num_channels : int
        Channels per element: 1, 2 or 4.
    is_surface_load_store : bool
        Allocate with ``CUDA_ARRAY3D_SURFACE_LDST``, so that a :class:`SurfaceObject` can be
        made over the array (kernels then write it with ``surf*write``). Default False.
    """

    shape: tuple[int, ...]
    format: ArrayFormatType | str | Any
    num_channels: int
    is_surface_load_store: bool = False

    def __post_init__(self):
        self.shape = check_shape(self.shape, "OpaqueArrayOptions.shape")
        self.format = check_format(self.format, "OpaqueArrayOptions.format")
        self.num_channels = check_channels(self.num_channels, "OpaqueArrayOptions.num_channels")
        self.is_surface_load_store = bool(check_bool(
            self.is_surface_load_store, "OpaqueArrayOptions.is_surface_load_store", True))


@dataclasses.dataclass
class MipmappedArrayOptions:
    """Options for :meth:`Device.create_mipmapped_array`.

    Attributes
    ----------
    shape : tuple of int
        The base level's ``(width,)``, ``(width, height)`` or ``(width, height, depth)``.
    format : ArrayFormatType, str or numpy.dtype
    num_channels : int
        1, 2 or 4.
    num_levels : int
        The number of levels, from 1 to ``floor(log2(max(shape))) + 1`` (each level halves
        every dimension, down to 1).
    is_surface_load_store : bool
        Allocate with ``CUDA_ARRAY3D_SURFACE_LDST``, so that a level
        (:meth:`MipmappedArray.get_level`) can back a :class:`SurfaceObject`. Default False.
    """

    shape: tuple[int, ...]
    format: ArrayFormatType | str | Any
    num_channels: int
    num_levels: int
    is_surface_load_store: bool = False

    def __post_init__(self):
        name = type(self).__name__
        self.shape = check_shape(self.shape, "MipmappedArrayOptions.shape")
        self.format = check_format(self.format, "MipmappedArrayOptions.format")
        self.num_channels = check_channels(self.num_channels, "MipmappedArrayOptions.num_channels")
        most = max(self.shape).bit_length()
        self.num_levels = check_int(self.num_levels, "MipmappedArrayOptions.num_levels", 1)
        if self.num_levels > most:
            raise ValueError(f"{name}.num_levels must be at most {most} for shape "
                             f"{self.shape} (floor(log2({max(self.shape)})) + 1), got "
                             f"{self.num_levels}")
        self.is_surface_load_store = bool(check_bool(
            self.is_surface_load_store, "MipmappedArrayOptions.is_surface_load_store", True))


def _check_float(value, what: str) -> float:
    if type(value) is float and value - value == 0.0:  # finite (inf - inf and nan are nan)
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) and \
            not hasattr(value, "__float__"):
        raise TypeError(f"{what} must be a float, not {type(value).__name__}")
    result = float(value)
    if not math.isfinite(result):
        raise ValueError(f"{what} must be finite, got {result}")
    return result


@dataclasses.dataclass
class TextureObjectOptions:
    """How a :class:`TextureObject` samples its resource (``CUDA_TEXTURE_DESC``).

    Attributes
    ----------
    address_mode : AddressModeType, str or tuple
        Out-of-range behaviour, one for every dimension or one per dimension (1 to 3: width,
        height, depth; missing ones are ``CLAMP``). Default ``CLAMP``. ``WRAP`` and ``MIRROR`` need
        ``normalized_coords``.
    filter_mode : FilterModeType or str
        ``POINT`` (default): the nearest texel; ``LINEAR``: interpolated, which needs a float
        result (a float format, or ``read_mode="normalized_float"``) and an array resource.
    read_mode : ReadModeType or str
        ``ELEMENT_TYPE`` (default) or ``NORMALIZED_FLOAT`` (8- and 16-bit integer formats).
    normalized_coords : bool
        Coordinates in [0, 1) instead of texels; required for a mipmapped array.
    srgb : bool
        sRGB to linear conversion on read (8-bit formats only).
    disable_trilinear_optimization : bool
    seamless_cubemap : bool
        Needs a cubemap array, which this API does not allocate yet: True is refused when a
        texture is made.
    max_anisotropy : int
        The anisotropy ratio's limit, an unsigned int (the hardware's highest is 16); 0
        (default) turns anisotropic filtering off.
    mipmap_filter_mode : FilterModeType or str
        Filtering between mipmap levels.
    mipmap_level_bias, min_mipmap_level_clamp, max_mipmap_level_clamp : float
        Finite; ``min_mipmap_level_clamp <= max_mipmap_level_clamp``.
    border_color : tuple of float, optional
        One to four values (the rest 0) that ``BORDER`` reads return outside the texture.
    """

    address_mode: AddressModeType | str | tuple[AddressModeType | str, ...] = \
        AddressModeType.CLAMP
    filter_mode: FilterModeType | str = FilterModeType.POINT
    read_mode: ReadModeType | str = ReadModeType.ELEMENT_TYPE
    normalized_coords: bool = False
    srgb: bool = False
    disable_trilinear_optimization: bool = False
    seamless_cubemap: bool = False
    max_anisotropy: int = 0
    mipmap_filter_mode: FilterModeType | str = FilterModeType.POINT
    mipmap_level_bias: float = 0.0
    min_mipmap_level_clamp: float = 0.0
    max_mipmap_level_clamp: float = 0.0
    border_color: tuple[float, ...] | None = None

    def __post_init__(self):
        # The common case, every field already what the checks would make of it, is decided
        # in C; otherwise each check below is skipped for a value that needs none.
        if texture_options_ready(self, AddressModeType, FilterModeType, ReadModeType):
            return
        name = "TextureObjectOptions"
        mode = self.address_mode
        if type(mode) is not AddressModeType:
            if isinstance(mode, (tuple, list)):
                if not 1 <= len(mode) <= 3:
                    raise ValueError(f"{name}.address_mode must give 1 to 3 modes (one per "
                                     f"dimension), got {len(mode)}")
                self.address_mode = tuple(enum_value(m, f"{name}.address_mode[{i}]",
                                                     AddressModeType)
                                          for i, m in enumerate(mode))
            else:
                self.address_mode = enum_value(mode, f"{name}.address_mode", AddressModeType)
        if type(self.filter_mode) is not FilterModeType:
            self.filter_mode = enum_value(self.filter_mode, f"{name}.filter_mode",
                                          FilterModeType)
        if type(self.read_mode) is not ReadModeType:
            self.read_mode = enum_value(self.read_mode, f"{name}.read_mode", ReadModeType)
        if type(self.mipmap_filter_mode) is not FilterModeType:
            self.mipmap_filter_mode = enum_value(self.mipmap_filter_mode,
                                                 f"{name}.mipmap_filter_mode", FilterModeType)
        if type(self.normalized_coords) is not bool:
            self.normalized_coords = bool(check_bool(self.normalized_coords,
                                                     f"{name}.normalized_coords", True))
        if type(self.srgb) is not bool:
            self.srgb = bool(check_bool(self.srgb, f"{name}.srgb", True))
        if type(self.disable_trilinear_optimization) is not bool:
            self.disable_trilinear_optimization = bool(check_bool(
                self.disable_trilinear_optimization, f"{name}.disable_trilinear_optimization",
                True))
        if type(self.seamless_cubemap) is not bool:
            self.seamless_cubemap = bool(check_bool(self.seamless_cubemap,
                                                    f"{name}.seamless_cubemap", True))
        value = self.max_anisotropy
        if type(value) is not int or not 0 <= value <= _UINT_MAX:
            # An unsigned int, as the driver's field (which clamps a ratio above 16), and as
            # cuda.core's conversion, whose OverflowError this also is.
            value = check_int(value, f"{name}.max_anisotropy", 0, _UINT_MAX)
            self.max_anisotropy = value
        # Finite floats pass as they are (inf - inf and nan - nan are nan).
        value = self.mipmap_level_bias
        if type(value) is not float or value - value != 0.0:
            self.mipmap_level_bias = _check_float(value, f"{name}.mipmap_level_bias")
        value = self.min_mipmap_level_clamp
        if type(value) is not float or value - value != 0.0:
            self.min_mipmap_level_clamp = _check_float(value, f"{name}.min_mipmap_level_clamp")
        value = self.max_mipmap_level_clamp
        if type(value) is not float or value - value != 0.0:
            self.max_mipmap_level_clamp = _check_float(value, f"{name}.max_mipmap_level_clamp")
        if self.min_mipmap_level_clamp > self.max_mipmap_level_clamp:
            raise ValueError(f"{name}.min_mipmap_level_clamp ({self.min_mipmap_level_clamp}) "
                             f"must not exceed max_mipmap_level_clamp "
                             f"({self.max_mipmap_level_clamp})")
        if self.border_color is not None:
            color = self.border_color
            if not isinstance(color, (tuple, list)):
                raise TypeError(f"{name}.border_color must be a tuple of 1 to 4 floats or "
                                f"None, not {type(color).__name__}")
            if not 1 <= len(color) <= 4:
                raise ValueError(f"{name}.border_color must have 1 to 4 values, got "
                                 f"{len(color)}")
            self.border_color = tuple(_check_float(c, f"{name}.border_color[{i}]")
                                      for i, c in enumerate(color))

def address_modes(options: TextureObjectOptions) -> tuple[AddressModeType, ...]:
    """The three address modes (width, height, depth) the driver is given: one mode for all,
    or those given per dimension and ``CLAMP`` for the rest. ``options`` is checked (its
    ``__post_init__`` has made ``address_mode`` one member or a tuple of 1 to 3)."""
    mode = options.address_mode
    given = cast("tuple[AddressModeType, ...]",
                 mode if isinstance(mode, tuple) else (mode, mode, mode))
    return given + (AddressModeType.CLAMP,) * (3 - len(given))
