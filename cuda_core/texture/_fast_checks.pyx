"""The fast path of TextureObjectOptions' checks, in C: options are made as often as textures,
and most of their fields already hold what the checks would make of them (the defaults, enum
members, finite floats). No imports: the caller passes the enum types."""

from libc.math cimport isfinite

__all__ = []


def texture_options_ready(object o, object address_t, object filter_t, object read_t):
    """True when every field of the TextureObjectOptions ``o`` already has its checked type
    and range (a single address mode, no border color); False sends the caller to the full
    checks, which normalize the value or raise."""
    cdef double low, high, bias
    if (type(o.address_mode) is not address_t or type(o.filter_mode) is not filter_t
            or type(o.read_mode) is not read_t or type(o.mipmap_filter_mode) is not filter_t):
        return False
    if (type(o.normalized_coords) is not bool or type(o.srgb) is not bool
            or type(o.disable_trilinear_optimization) is not bool
            or type(o.seamless_cubemap) is not bool):
        return False
    value = o.max_anisotropy
    if type(value) is not int or not 0 <= value <= 0xFFFFFFFF:
        return False
    if o.border_color is not None:
        return False
    value = o.mipmap_level_bias
    if type(value) is not float:
        return False
    bias = value
    value = o.min_mipmap_level_clamp
    if type(value) is not float:
        return False
    low = value
    value = o.max_mipmap_level_clamp
    if type(value) is not float:
        return False
    high = value
    return isfinite(bias) and isfinite(low) and isfinite(high) and low <= high
