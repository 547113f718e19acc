"""``CopyOptions`` and its string enums: the per-copy attributes of ``utils.copy_batch`` and of
``Buffer.copy_to``/``copy_from`` (the driver's ``CUmemcpyAttributes``).

The options are frozen: one instance may be shared by many copies and threads. The fields are
checked when the instance is built, so a typo fails there rather than at the copy; the enum
fields accept the plain string and store the enum member (a ``str``, equal to the string).
"""

from __future__ import annotations

import dataclasses

from cuda_core._checks import check_enum
from cuda_core._device import Device
from cuda_core._enum import StrEnum as _StrEnum
from cuda_core._memory._location import Host

__all__ = ["CopyOptions", "MemcpyOverlapMode", "MemcpySrcAccessOrder"]


class MemcpySrcAccessOrder(_StrEnum):
    """When the driver may read a copy's source (``CUmemcpySrcAccessOrder``).

    ``STREAM``: in stream order, after the work queued before the copy. ``DURING_API_CALL``:
    out of stream order, all reads done before the call returns (no earlier work may still use
    the source). ``ANY``: out of stream order, possibly after the call returns (no earlier
    work may still use the source, and it must stay unchanged until the copy is done).
    """

    STREAM = "stream"
    DURING_API_CALL = "during_api_call"
    ANY = "any"


class MemcpyOverlapMode(_StrEnum):
    """Whether a copy should preferably overlap with compute work (``CUmemcpyFlags``); a
    hint the driver may ignore."""

    DEFAULT = "default"
    PREFER_OVERLAP_WITH_COMPUTE = "prefer_overlap_with_compute"


def _check_hint(value, what):
    if value is None or isinstance(value, (Device, Host)):
        return
    raise TypeError(f"{what} must be a Device, a Host or None, not {type(value).__name__}")


@dataclasses.dataclass(frozen=True)
class CopyOptions:
    """Attributes of one copy (frozen).

    Attributes
    ----------
    src_access_order : MemcpySrcAccessOrder or str
        When the driver may read the source: ``"stream"`` (the default), ``"during_api_call"``
        or ``"any"`` (see :class:`MemcpySrcAccessOrder`).
    src_location_hint : cuda_core.Device, cuda_core.Host or None
        Where the source is expected to be. The driver uses it only for managed memory on
        devices with concurrent managed access, and for pageable memory on devices that access
        it; it neither prefetches nor sets advice. None (the default): no hint.
    dst_location_hint : cuda_core.Device, cuda_core.Host or None
        The same for the destination.
    overlap_mode : MemcpyOverlapMode or str
        ``"default"`` or ``"prefer_overlap_with_compute"`` (a hint).

    Raises
    ------
    TypeError, ValueError
        A field of the wrong type or an unknown word; the message names the field.
    """

    src_access_order: MemcpySrcAccessOrder | str = MemcpySrcAccessOrder.STREAM
    src_location_hint: Device | Host | None = None
    dst_location_hint: Device | Host | None = None
    overlap_mode: MemcpyOverlapMode | str = MemcpyOverlapMode.DEFAULT

    def __post_init__(self):
        # Frozen: the normalized members are stored with object.__setattr__.
        object.__setattr__(self, "src_access_order", check_enum(
            self.src_access_order, "CopyOptions.src_access_order", MemcpySrcAccessOrder))
        _check_hint(self.src_location_hint, "CopyOptions.src_location_hint")
        _check_hint(self.dst_location_hint, "CopyOptions.dst_location_hint")
        object.__setattr__(self, "overlap_mode", check_enum(
            self.overlap_mode, "CopyOptions.overlap_mode", MemcpyOverlapMode))
