"""The texture enums and options: plain values, checked when made, no driver call.

Each enum is a string enum (its members are their string values, and every option that takes
one also takes the plain string). An options class takes an instance, a dict of its fields or
(for :class:`TextureObjectOptions` only) None wherever a factory takes it.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from typing import TYPE_CHECKING, Any, TypeVar, cast

from cuda_core._checks import ArgumentTypeError, check_bool, check_enum, check_int
from cuda_core._enum import StrEnum
from cuda_core._options import check_or_create_options

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

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
    return check_enum(value, what, ArrayFormatType)


def _check_count(value, what: str, most: int, items: str, count: str,
                 error: type[Exception] = TypeError) -> None:
    """``value`` is a tuple or list of 1 to ``most`` items: else ``error`` naming ``items``
    (what the tuple holds), or ValueError saying ``count`` (how many it must hold)."""
    if not isinstance(value, (tuple, list)):
        raise error(f"{what} must be a tuple of 1 to {most} {items}, not "
                    f"{type(value).__name__}")
    if not 1 <= len(value) <= most:
        raise ValueError(f"{what} must {count}, got {len(value)}")


def check_shape(shape, what: str) -> tuple:
    """``shape``, a tuple (or list) of one to three ints >= 1, as a tuple of ints."""
    _check_count(shape, what, 3, "ints", "have 1, 2 or 3 dimensions (width, height, depth)",
                 ArgumentTypeError)
    for n in shape:
        if type(n) is not int or n < 1:
            break
    else:
        return shape if type(shape) is tuple else tuple(shape)
    return tuple(check_int(n, f"{what}[{i}]", 1) for i, n in enumerate(shape))


def check_channels(value, what: str) -> int:
    value = check_int(value, what)
    if value not in (1, 2, 4):
        raise ValueError(f"{what} must be 1, 2 or 4, got {value}")
    return value


def _check_flag(value, what: str) -> bool:
    """A flag option: None reads as False."""
    return bool(check_bool(value, what, True))


def _check_element(options: OpaqueArrayOptions | MipmappedArrayOptions, name: str) -> None:
    """Check the ``shape``, ``format`` and ``num_channels`` of the array options ``options``
    (of the class ``name``) in place."""
    options.shape = check_shape(options.shape, f"{name}.shape")
    options.format = check_format(options.format, f"{name}.format")
    options.num_channels = check_channels(options.num_channels, f"{name}.num_channels")


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
        _check_element(self, "OpaqueArrayOptions")
        self.is_surface_load_store = _check_flag(self.is_surface_load_store,
                                                 "OpaqueArrayOptions.is_surface_load_store")


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
        name = "MipmappedArrayOptions"
        _check_element(self, name)
        most = max(self.shape).bit_length()
        self.num_levels = check_int(self.num_levels, f"{name}.num_levels", 1)
        if self.num_levels > most:
            raise ValueError(f"{name}.num_levels must be at most {most} for shape "
                             f"{self.shape} (floor(log2({max(self.shape)})) + 1), got "
                             f"{self.num_levels}")
        self.is_surface_load_store = _check_flag(self.is_surface_load_store,
                                                 f"{name}.is_surface_load_store")


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
        name = "TextureObjectOptions"
        mode = self.address_mode
        if isinstance(mode, (tuple, list)):
            _check_count(mode, f"{name}.address_mode", 3, "modes",
                         "give 1 to 3 modes (one per dimension)")
            self.address_mode = tuple(check_enum(m, f"{name}.address_mode[{i}]",
                                                 AddressModeType)
                                      for i, m in enumerate(mode))
        else:
            self.address_mode = check_enum(mode, f"{name}.address_mode", AddressModeType)
        for field, cls in (("filter_mode", FilterModeType), ("read_mode", ReadModeType),
                           ("mipmap_filter_mode", FilterModeType)):
            setattr(self, field, check_enum(getattr(self, field), f"{name}.{field}", cls))
        for field in ("normalized_coords", "srgb", "disable_trilinear_optimization",
                      "seamless_cubemap"):
            setattr(self, field, _check_flag(getattr(self, field), f"{name}.{field}"))
        # An unsigned int, as the driver's field (which clamps a ratio above 16), and as
        # cuda.core's conversion, whose OverflowError this also is.
        self.max_anisotropy = check_int(self.max_anisotropy, f"{name}.max_anisotropy", 0,
                                        _UINT_MAX)
        for field in ("mipmap_level_bias", "min_mipmap_level_clamp", "max_mipmap_level_clamp"):
            setattr(self, field, _check_float(getattr(self, field), f"{name}.{field}"))
        if self.min_mipmap_level_clamp > self.max_mipmap_level_clamp:
            raise ValueError(f"{name}.min_mipmap_level_clamp ({self.min_mipmap_level_clamp}) "
                             f"must not exceed max_mipmap_level_clamp "
                             f"({self.max_mipmap_level_clamp})")
        color = self.border_color
        if color is not None:
            _check_count(color, f"{name}.border_color", 4, "floats or None",
                         "have 1 to 4 values")
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


_Options = TypeVar("_Options", bound="DataclassInstance")


def checked_options(cls: type[_Options], options: Any, what: str) -> _Options:
    """``options`` (an instance of ``cls``, a dict of its fields or None) as a checked ``cls``
    that the caller alone holds: a caller's instance is checked again as a copy (a dataclass's
    fields can be changed after it was made, and the driver's structs are filled from them); a
    dict or None is made into a new instance, checked once by its ``__post_init__``."""
    if isinstance(options, cls):
        return dataclasses.replace(options)
    return check_or_create_options(cls, options, what)
