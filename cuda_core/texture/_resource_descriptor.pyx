"""What a texture or surface object reads: a :class:`ResourceDescriptor` of an
:class:`OpaqueArray`, a :class:`MipmappedArray`, or a :class:`Buffer` seen as a 1D or pitched
2D texture.

A descriptor keeps its source alive. A Buffer under a linear or pitched texture is only kept
alive: closing it while the texture is in use is the caller's error, as for any kernel
argument. What needs no device is checked when the descriptor is made; the device's alignment
and size limits (``cuDeviceGetAttribute``) when a texture or surface is made from it.
"""

from libc.string cimport memset

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport CUDA_RESOURCE_DESC, CUdeviceptr

from cuda_core._memory._buffer cimport Buffer
from cuda_core.texture._array cimport (MipmappedArray, OpaqueArray, _ArrayBase, cu_format,
                                       device_attribute)

from cuda_core._checks import check_int
from cuda_core.texture._options import FORMAT_BYTES, check_channels, check_format

__all__ = ["ResourceDescriptor"]


cdef class ResourceDescriptor:
    """What a texture or surface object reads: an :class:`OpaqueArray`, a
    :class:`MipmappedArray`, or a :class:`Buffer` seen as a 1D (``linear``) or a pitched 2D
    (``pitch2d``) texture. Not constructible: use the ``from_*`` class methods. It keeps its
    source alive; it checks what needs no device when made, the device's alignment and size
    limits when a texture is made from it.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("ResourceDescriptor objects cannot be instantiated directly; "
                           "use ResourceDescriptor.from_opaque_array(), "
                           "from_mipmapped_array(), from_linear() or from_pitch2d()")

    @classmethod
    def from_opaque_array(cls, array):
        """A descriptor of ``array`` (an :class:`OpaqueArray`, or a level view)."""
        if not isinstance(array, OpaqueArray):
            raise TypeError(f"ResourceDescriptor.from_opaque_array(): array must be an "
                            f"OpaqueArray, not {type(array).__name__}")
        (<OpaqueArray>array)._check_ready()
        return _descriptor("array", array, (<OpaqueArray>array).format,
                           (<OpaqueArray>array).num_channels)

    @classmethod
    def from_mipmapped_array(cls, mipmapped_array):
        """A descriptor of ``mipmapped_array`` (a :class:`MipmappedArray`), for a texture
        that reads every level (``tex2DLod`` and the like)."""
        if not isinstance(mipmapped_array, MipmappedArray):
            raise TypeError(f"ResourceDescriptor.from_mipmapped_array(): mipmapped_array must "
                            f"be a MipmappedArray, not {type(mipmapped_array).__name__}")
        (<MipmappedArray>mipmapped_array)._check_open()
        return _descriptor("mipmapped_array", mipmapped_array,
                           (<MipmappedArray>mipmapped_array).format,
                           (<MipmappedArray>mipmapped_array).num_channels)

    @classmethod
    def from_linear(cls, buffer, *, format, num_channels, size_bytes=None):
        """A 1D texture over ``size_bytes`` bytes of ``buffer``, read with ``tex1Dfetch``.

        Parameters
        ----------
        buffer : Buffer
            Device-accessible memory; its address must meet the device's texture alignment
            (checked when the texture is made).
        format : ArrayFormatType, str or numpy.dtype
        num_channels : int
            1, 2 or 4.
        size_bytes : int, optional
            Bytes to expose, a multiple of the element size and at most ``buffer.size``
            (default: ``buffer.size``).
        """
        what = "ResourceDescriptor.from_linear()"
        fmt, channels, element = _buffer_elements(buffer, format, num_channels, what)
        size = (<Buffer>buffer)._size if size_bytes is None else check_int(
            size_bytes, f"{what}: size_bytes", 1)
        if size > (<Buffer>buffer)._size:
            raise ValueError(f"{what}: size_bytes {size} exceeds the buffer's "
                             f"{(<Buffer>buffer)._size} bytes")
        if size == 0 or size % element:
            raise ValueError(f"{what}: size_bytes {size} must be a positive multiple of the "
                             f"element size ({element} bytes)")
        cdef ResourceDescriptor d = _descriptor("linear", buffer, fmt, channels)
        d._size_bytes = size
        return d

    @classmethod
    def from_pitch2d(cls, buffer, *, format, num_channels, width, height, pitch_bytes):
        """A 2D texture over rows of ``buffer`` ``pitch_bytes`` apart.

        Parameters
        ----------
        buffer : Buffer
            Device-accessible memory, at least ``pitch_bytes * (height - 1) + width *
            element size`` bytes; its address must meet the device's texture alignment.
        format : ArrayFormatType, str or numpy.dtype
        num_channels : int
        width, height : int
            In elements, each >= 1.
        pitch_bytes : int
            Bytes from one row to the next: at least ``width`` elements, and a multiple of the
            device's texture pitch alignment (checked when the texture is made).
        """
        what = "ResourceDescriptor.from_pitch2d()"
        fmt, channels, element = _buffer_elements(buffer, format, num_channels, what)
        w = check_int(width, f"{what}: width", 1)
        h = check_int(height, f"{what}: height", 1)
        pitch = check_int(pitch_bytes, f"{what}: pitch_bytes", 1)
        if pitch < w * element:
            raise ValueError(f"{what}: pitch_bytes {pitch} is less than a row of {w} elements "
                             f"({w * element} bytes)")
        need = pitch * (h - 1) + w * element
        if need > (<Buffer>buffer)._size:
            raise ValueError(f"{what}: {h} rows of pitch {pitch} need {need} bytes; the buffer "
                             f"has {(<Buffer>buffer)._size}")
        cdef ResourceDescriptor d = _descriptor("pitch2d", buffer, fmt, channels)
        d._width = w
        d._height = h
        d._pitch = pitch
        return d

    @property
    def format(self):
        """For ``linear`` and ``pitch2d``: the :class:`~cuda_core.typing.ArrayFormatType` of one
        channel; None otherwise (an array's is its own :attr:`OpaqueArray.format`), as in
        cuda.core."""
        return self._format if self.kind in ("linear", "pitch2d") else None

    @property
    def num_channels(self):
        """For ``linear`` and ``pitch2d``: channels per element (1, 2 or 4); None otherwise."""
        return self._channels if self.kind in ("linear", "pitch2d") else None

    @property
    def size_bytes(self):
        """For ``linear``: the bytes exposed; None otherwise."""
        return self._size_bytes if self.kind == "linear" else None

    @property
    def width(self):
        """For ``pitch2d``: the width in elements; None otherwise."""
        return self._width if self.kind == "pitch2d" else None

    @property
    def height(self):
        """For ``pitch2d``: the height in rows; None otherwise."""
        return self._height if self.kind == "pitch2d" else None

    @property
    def pitch_bytes(self):
        """For ``pitch2d``: bytes from one row to the next; None otherwise."""
        return self._pitch if self.kind == "pitch2d" else None

    def __repr__(self):
        return f"<ResourceDescriptor kind={self.kind!r} format={self._format!s}>"

    cdef _ArrayBase _owner(self):
        cdef OpaqueArray arr
        if self.kind == "array":
            arr = <OpaqueArray>self.source
            if arr._parent is not None:
                return arr._parent
            return arr
        if self.kind == "mipmapped_array":
            return <MipmappedArray>self.source
        return None

    cdef int _check_source(self, int device_id, str what) except -1:
        cdef int src_device
        if self.kind in ("array", "mipmapped_array"):
            (<_ArrayBase>self.source)._check_ready()
            src_device = (<_ArrayBase>self.source)._ctx._device_id
        else:
            (<Buffer>self.source)._check_open()
            src_device = self.source.device_id
            if src_device < 0:  # host memory mapped for the device
                src_device = device_id
        if src_device != device_id:
            raise ValueError(f"{what}: the resource is on device {src_device}, not on device "
                             f"{device_id}")
        return 0

    cdef int _fill(self, CUDA_RESOURCE_DESC* rd, int device_id, str what) except -1:
        cdef CUdeviceptr ptr
        memset(rd, 0, sizeof(CUDA_RESOURCE_DESC))
        if self.kind == "array":
            rd.resType = cydriver.CU_RESOURCE_TYPE_ARRAY
            rd.res.array.hArray = (<OpaqueArray>self.source)._handle
            return 0
        if self.kind == "mipmapped_array":
            rd.resType = cydriver.CU_RESOURCE_TYPE_MIPMAPPED_ARRAY
            rd.res.mipmap.hMipmappedArray = (<MipmappedArray>self.source)._handle
            return 0
        ptr = (<Buffer>self.source)._ptr
        align = device_attribute(cydriver.CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, device_id)
        if align > 0 and ptr % align:
            raise ValueError(f"{what}: the buffer's address 0x{ptr:x} is not a multiple of "
                             f"device {device_id}'s texture alignment ({align} bytes)")
        element = FORMAT_BYTES[self._format] * self._channels
        if self.kind == "linear":
            most = device_attribute(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH,
                                    device_id)
            if most > 0 and self._size_bytes // element > <size_t>most:
                raise ValueError(f"{what}: {self._size_bytes // element} elements exceed "
                                 f"device {device_id}'s linear texture limit of {most}")
            rd.resType = cydriver.CU_RESOURCE_TYPE_LINEAR
            rd.res.linear.devPtr = ptr
            rd.res.linear.format = <cydriver.CUarray_format>cu_format(self._format)
            rd.res.linear.numChannels = self._channels
            rd.res.linear.sizeInBytes = self._size_bytes
            return 0
        pitch_align = device_attribute(cydriver.CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT,
                                       device_id)
        if pitch_align > 0 and self._pitch % pitch_align:
            raise ValueError(f"{what}: pitch_bytes {self._pitch} is not a multiple of device "
                             f"{device_id}'s texture pitch alignment ({pitch_align} bytes)")
        for value, attr, name in (
                (self._width, cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH,
                 "width"),
                (self._height, cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT,
                 "height"),
                (self._pitch, cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH,
                 "pitch_bytes")):
            most = device_attribute(attr, device_id)
            if most > 0 and value > most:
                raise ValueError(f"{what}: {name} {value} exceeds device {device_id}'s pitched "
                                 f"2D texture limit of {most}")
        rd.resType = cydriver.CU_RESOURCE_TYPE_PITCH2D
        rd.res.pitch2D.devPtr = ptr
        rd.res.pitch2D.format = <cydriver.CUarray_format>cu_format(self._format)
        rd.res.pitch2D.numChannels = self._channels
        rd.res.pitch2D.width = self._width
        rd.res.pitch2D.height = self._height
        rd.res.pitch2D.pitchInBytes = self._pitch
        return 0


cdef ResourceDescriptor _descriptor(str kind, object source, object fmt, int channels):
    cdef ResourceDescriptor d = ResourceDescriptor.__new__(ResourceDescriptor)
    d.kind, d.source, d._format, d._channels = kind, source, fmt, channels
    return d


cdef tuple _buffer_elements(object buffer, object format, object num_channels, str what):
    """The checks of a Buffer seen as a texture (an open, device-accessible Buffer, its format
    and channels): ``(format, channels, element size in bytes)``."""
    if not isinstance(buffer, Buffer):
        raise TypeError(f"{what}: buffer must be a Buffer, not {type(buffer).__name__}")
    (<Buffer>buffer)._check_open()
    if not buffer.is_device_accessible:
        raise ValueError(f"{what}: buffer must be device-accessible memory")
    fmt = check_format(format, f"{what}: format")
    channels = check_channels(num_channels, f"{what}: num_channels")
    return fmt, channels, FORMAT_BYTES[fmt] * channels


cdef ResourceDescriptor as_descriptor(object resource, str what):
    if isinstance(resource, ResourceDescriptor):
        return <ResourceDescriptor>resource
    if isinstance(resource, OpaqueArray):
        return ResourceDescriptor.from_opaque_array(resource)
    if isinstance(resource, MipmappedArray):
        return ResourceDescriptor.from_mipmapped_array(resource)
    raise TypeError(f"{what}: resource must be a ResourceDescriptor, an OpaqueArray or a "
                    f"MipmappedArray, not {type(resource).__name__}")

