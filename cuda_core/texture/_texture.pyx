"""Textures and surfaces: CUDA arrays, mipmapped arrays, and the bindless texture and surface
objects kernels read and write them through.

Ownership: an :class:`OpaqueArray` owns its ``CUarray`` and a :class:`MipmappedArray` its
``CUmipmappedArray`` (a level, from ``get_level``, is a view: it owns nothing and keeps its
parent alive). A :class:`TextureObject` or :class:`SurfaceObject` keeps its
:class:`ResourceDescriptor`, and so the array or Buffer under it, alive; and while one is open,
the array (or mipmapped array) it reads refuses ``close()``, so that no kernel can read freed
memory through a live object. A Buffer under a linear or pitched texture is only kept alive:
closing it while the texture is in use is the caller's error, as for any kernel argument.

Every argument is checked before the driver is called, against the device's limits where the
driver has one (``cuDeviceGetAttribute``, read at creation).
"""

cimport cython
from cpython.buffer cimport (PyBUF_C_CONTIGUOUS, PyBUF_WRITABLE, PyBuffer_Release,
                             PyObject_GetBuffer)
from libc.string cimport memset

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUarray, CUDA_ARRAY3D_DESCRIPTOR, CUDA_MEMCPY3D,
                                     CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC, CUdevice,
                                     CUdeviceptr, CUmipmappedArray, CUresult, CUsurfObject,
                                     CUtexObject)

from cuda_core._context cimport Context, ContextGuard, context_gone, enter_context, exit_context
from cuda_core._errors cimport HANDLE_RETURN, check_call
from cuda_core._memory._buffer cimport Buffer
from cuda_core._resource cimport Resource
from cuda_core._stream cimport Stream, require_stream

import dataclasses

from cuda_core._checks import check_int
from cuda_core._options import check_or_create_options
from cuda_core.texture._options import (FLOAT_FORMATS, FORMAT_BYTES, AddressModeType,
                                        ArrayFormatType, FilterModeType, MipmappedArrayOptions,
                                        OpaqueArrayOptions, ReadModeType, TextureObjectOptions,
                                        address_modes, check_channels, check_format)

__all__ = ["MipmappedArray", "OpaqueArray", "ResourceDescriptor", "SurfaceObject",
           "TextureObject"]

_CU_FORMAT = {
    ArrayFormatType.UINT8: cydriver.CU_AD_FORMAT_UNSIGNED_INT8,
    ArrayFormatType.UINT16: cydriver.CU_AD_FORMAT_UNSIGNED_INT16,
    ArrayFormatType.UINT32: cydriver.CU_AD_FORMAT_UNSIGNED_INT32,
    ArrayFormatType.INT8: cydriver.CU_AD_FORMAT_SIGNED_INT8,
    ArrayFormatType.INT16: cydriver.CU_AD_FORMAT_SIGNED_INT16,
    ArrayFormatType.INT32: cydriver.CU_AD_FORMAT_SIGNED_INT32,
    ArrayFormatType.FLOAT16: cydriver.CU_AD_FORMAT_HALF,
    ArrayFormatType.FLOAT32: cydriver.CU_AD_FORMAT_FLOAT,
}
_CU_ADDRESS = {
    AddressModeType.WRAP: cydriver.CU_TR_ADDRESS_MODE_WRAP,
    AddressModeType.CLAMP: cydriver.CU_TR_ADDRESS_MODE_CLAMP,
    AddressModeType.MIRROR: cydriver.CU_TR_ADDRESS_MODE_MIRROR,
    AddressModeType.BORDER: cydriver.CU_TR_ADDRESS_MODE_BORDER,
}
_CU_FILTER = {
    FilterModeType.POINT: cydriver.CU_TR_FILTER_MODE_POINT,
    FilterModeType.LINEAR: cydriver.CU_TR_FILTER_MODE_LINEAR,
}

# The device limits an allocation is checked against, per rank: texture, surface, mipmapped.
_TEXTURE_LIMITS = (
    (cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH,),
    (cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH,
     cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT),
    (cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH,
     cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT,
     cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH),
)
_SURFACE_LIMITS = (
    (cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH,),
    (cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH,
     cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT),
    (cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH,
     cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT,
     cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH),
)
_MIPMAP_LIMITS = (
    (cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH,),
    (cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH,
     cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT),
    _TEXTURE_LIMITS[2],
)
_DIM_NAMES = ("width", "height", "depth")


cdef int _attribute(int attr, int device_id) except? -1:
    cdef int value = 0
    HANDLE_RETURN(cydriver.cuDeviceGetAttribute(
        &value, <cydriver.CUdevice_attribute>attr, <CUdevice>device_id))
    return value


cdef int _check_limits(tuple shape, tuple limits, int device_id, str what, str kind) except -1:
    for i, n in enumerate(shape):
        most = _attribute(limits[len(shape) - 1][i], device_id)
        if n > most:
            raise ValueError(f"{what}: {_DIM_NAMES[i]} {n} exceeds device {device_id}'s "
                             f"{len(shape)}D {kind} limit of {most}")
    return 0


cdef int _fill_array_desc(CUDA_ARRAY3D_DESCRIPTOR* desc, tuple shape, object fmt,
                          int channels, bint ldst) except -1:
    memset(desc, 0, sizeof(CUDA_ARRAY3D_DESCRIPTOR))
    # A 1D array has Height 0 and a 2D one Depth 0 (cuArray3DCreate's convention).
    desc.Width = shape[0]
    desc.Height = shape[1] if len(shape) > 1 else 0
    desc.Depth = shape[2] if len(shape) > 2 else 0
    desc.Format = <cydriver.CUarray_format><int>_CU_FORMAT[fmt]
    desc.NumChannels = channels
    desc.Flags = cydriver.CUDA_ARRAY3D_SURFACE_LDST if ldst else 0
    return 0


def _checked(cls, options, what):
    """``options`` as ``cls``, checked: a caller's instance is checked again as a copy (a
    dataclass's fields can be changed after it was made, and the C structs below are filled
    from them); a dict or None is made into a new instance, checked once by its
    ``__post_init__``."""
    if isinstance(options, cls):
        return dataclasses.replace(options)
    return check_or_create_options(cls, options, what)


cdef object _device_of(Context ctx):
    from cuda_core._device import Device
    return Device(ctx._device_id)


# -- arrays ---------------------------------------------------------------------------------------

cdef class _ArrayBase(Resource):
    """What OpaqueArray and MipmappedArray share: the context, the element description, and
    the count of open texture and surface objects over the memory, while which ``close()``
    refuses."""

    cdef Context _ctx
    cdef tuple _shape
    cdef object _format
    cdef int _channels
    cdef bint _ldst
    cdef Py_ssize_t _users

    cdef bint _orphaned(self) noexcept:
        return context_gone(self._ctx)

    cdef int _close_unused(self, str what, str it) except -1:
        with cython.critical_section(self):
            if not self._closed and self._users:
                raise RuntimeError(f"{what}: {self._users} texture or surface object(s) still "
                                   f"use {it}; close them first")
            self._close()
        return 0

    def __enter__(self):
        self._check_open()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def format(self):
        """The :class:`~cuda_core.typing.ArrayFormatType` of one channel."""
        return self._format

    @property
    def num_channels(self):
        """Channels per element: 1, 2 or 4."""
        return self._channels

    @property
    def device(self):
        """The :class:`~cuda_core.Device` the memory was allocated on."""
        return _device_of(self._ctx)


cdef class OpaqueArray(_ArrayBase):
    """A CUDA array: memory laid out by the driver for texture and surface access, with no
    device pointer. Kernels reach it only through a :class:`TextureObject` or a
    :class:`SurfaceObject`; data moves in and out by copies (:meth:`copy_from`,
    :meth:`copy_to`). Not constructible: use :meth:`Device.create_opaque_array`, or
    :meth:`MipmappedArray.get_level` for a view of one level. A context manager.
    """

    cdef CUarray _handle
    cdef size_t _element_bytes
    # A level view's MipmappedArray (which owns the memory); None for an owning array.
    cdef MipmappedArray _parent

    def __init__(self, *args, **kwargs):
        raise RuntimeError("OpaqueArray objects cannot be instantiated directly; use "
                           "Device.create_opaque_array() or MipmappedArray.get_level()")

    cdef int _release(self) except -1:
        cdef ContextGuard guard
        cdef CUresult err
        # A level view owns nothing; it keeps its parent referenced until it is freed itself
        # (a texture over the view may still need the parent's memory).
        if self._parent is None and self._handle != NULL:
            enter_context(guard, self._ctx._handle)
            with nogil:  # as every destroy in a finalizer (DESIGN.md, the calls that wait)
                err = cydriver.cuArrayDestroy(self._handle)
            check_call(err, "cuArrayDestroy")
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._handle

    cdef int _check_usable(self) except -1:
        self._check_open()
        if self._parent is not None and self._parent._closed:
            raise RuntimeError("this OpaqueArray is a level of a MipmappedArray that is closed")
        return 0

    def close(self):
        """Destroy the array (``cuArrayDestroy``); a level view only lets its parent go.
        Idempotent.

        Raises
        ------
        RuntimeError
            While a :class:`TextureObject` or :class:`SurfaceObject` over the array is open:
            close those first.
        """
        self._close_unused("OpaqueArray.close()", "this array")

    @property
    def handle(self):
        """The ``CUarray`` handle, as an int (as in cuda.core)."""
        self._check_usable()
        return <size_t>self._handle

    @property
    def shape(self):
        """``(width,)``, ``(width, height)`` or ``(width, height, depth)``, in elements."""
        return self._shape

    @property
    def element_bytes(self):
        """Bytes per element: the format's size times ``num_channels``."""
        return self._element_bytes

    @property
    def size_bytes(self):
        """Bytes of the whole array in a dense row-major copy (what :meth:`copy_from` and
        :meth:`copy_to` move)."""
        n = int(self._element_bytes)
        for d in self._shape:
            n *= d
        return n

    @property
    def is_surface_load_store(self):
        """Whether a :class:`SurfaceObject` can be made over the array."""
        return bool(self._ldst)

    def copy_from(self, src, *, stream):
        """Copy the whole array's contents from ``src`` (``cuMemcpy3DAsync``).

        Parameters
        ----------
        src : Buffer or a host object with the buffer protocol
            Dense data in row-major order (width fastest), exactly :attr:`size_bytes` long:
            a :class:`Buffer` (device, pinned or managed memory) or a C-contiguous host
            object such as a NumPy array.
        stream : Stream
            Orders the copy (keyword-only, required). From a Buffer the copy is asynchronous;
            from a host object the call returns once the copy is done (the stream is
            synchronized), so the object may be reused at once.
        """
        self._copy(src, stream, False)

    def copy_to(self, dst, *, stream):
        """Copy the whole array's contents into ``dst`` (``cuMemcpy3DAsync``).

        Parameters
        ----------
        dst : Buffer or a writable host object with the buffer protocol
            Exactly :attr:`size_bytes` long; receives row-major data (width fastest). A host
            object is complete when the call returns (the stream is synchronized).
        stream : Stream
            Orders the copy (keyword-only, required).

        Returns
        -------
        ``dst``, as in cuda.core.
        """
        self._copy(dst, stream, True)
        return dst

    cdef int _copy(self, object other, object stream, bint to_other) except -1:
        cdef str what = "OpaqueArray.copy_to()" if to_other else "OpaqueArray.copy_from()"
        cdef Stream s
        cdef CUDA_MEMCPY3D p
        cdef Py_buffer view
        cdef bint host = False
        cdef CUresult err
        cdef ContextGuard guard
        cdef size_t row
        cdef size_t total
        self._check_usable()
        s = require_stream(stream, what)
        s._check_open()
        if s._ctx is not None and s._ctx._device_id != self._ctx._device_id:
            raise ValueError(f"{what}: the stream belongs to device {s._ctx._device_id}, the "
                             f"array to device {self._ctx._device_id}")
        total = self.size_bytes
        name = "dst" if to_other else "src"
        memset(&p, 0, sizeof(CUDA_MEMCPY3D))
        row = self._shape[0] * self._element_bytes
        p.WidthInBytes = row
        p.Height = self._shape[1] if len(self._shape) > 1 else 1
        p.Depth = self._shape[2] if len(self._shape) > 2 else 1
        if isinstance(other, Buffer):
            (<Buffer>other)._check_open()
            if (<Buffer>other)._size != total:
                raise ValueError(f"{what}: {name} is a Buffer of {(<Buffer>other)._size} bytes; "
                                 f"the array holds {total} (size_bytes)")
        else:
            flags = PyBUF_C_CONTIGUOUS | (PyBUF_WRITABLE if to_other else 0)
            try:
                PyObject_GetBuffer(other, &view, flags)
            except (BufferError, ValueError) as exc:  # NumPy raises ValueError
                raise ValueError(f"{what}: {name} must be a Buffer or a C-contiguous"
                                 f"{' writable' if to_other else ''} host buffer: {exc}") from None
            except TypeError:
                raise TypeError(f"{what}: {name} must be a Buffer or an object with the buffer "
                                f"protocol, not {type(other).__name__}") from None
            host = True
        try:
            if host:
                if <size_t>view.len != total:
                    raise ValueError(f"{what}: {name} has {view.len} bytes; the array holds "
                                     f"{total} (size_bytes)")
            if to_other:
                p.srcMemoryType = cydriver.CU_MEMORYTYPE_ARRAY
                p.srcArray = self._handle
                if host:
                    p.dstMemoryType = cydriver.CU_MEMORYTYPE_HOST
                    p.dstHost = view.buf
                else:
                    p.dstMemoryType = cydriver.CU_MEMORYTYPE_UNIFIED
                    p.dstDevice = (<Buffer>other)._ptr
                p.dstPitch = row
                p.dstHeight = p.Height
            else:
                p.dstMemoryType = cydriver.CU_MEMORYTYPE_ARRAY
                p.dstArray = self._handle
                if host:
                    p.srcMemoryType = cydriver.CU_MEMORYTYPE_HOST
                    p.srcHost = view.buf
                else:
                    p.srcMemoryType = cydriver.CU_MEMORYTYPE_UNIFIED
                    p.srcDevice = (<Buffer>other)._ptr
                p.srcPitch = row
                p.srcHeight = p.Height
            with nogil:
                enter_context(guard, self._ctx._handle)
                err = cydriver.cuMemcpy3DAsync(&p, s._handle)
                # A host object is released when this call returns: the copy must be done.
                if err == cydriver.CUDA_SUCCESS and host:
                    err = cydriver.cuStreamSynchronize(s._handle)
                exit_context(guard)
            HANDLE_RETURN(err)
        finally:
            if host:
                PyBuffer_Release(&view)
        return 0

    def __repr__(self):
        return (f"<OpaqueArray shape={self._shape} format={self._format!s} "
                f"num_channels={self._channels}{' closed' if self._closed else ''}>")


cdef OpaqueArray _new_array(CUarray handle, Context ctx, tuple shape, object fmt, int channels,
                            bint ldst, MipmappedArray parent):
    cdef OpaqueArray arr = OpaqueArray.__new__(OpaqueArray)
    arr._handle = handle
    arr._ctx = ctx
    arr._shape = shape
    arr._format = fmt
    arr._channels = channels
    arr._element_bytes = FORMAT_BYTES[fmt] * channels
    arr._ldst = ldst
    arr._parent = parent
    return arr


def create_opaque_array(Context ctx not None, options):
    """Device.create_opaque_array's work: ``ctx`` is the device's current primary context."""
    cdef CUDA_ARRAY3D_DESCRIPTOR desc
    cdef CUarray handle = NULL
    cdef CUresult err
    cdef ContextGuard guard
    if options is None:
        raise TypeError("create_opaque_array(): options is required (an OpaqueArrayOptions "
                        "or a dict)")
    opts = _checked(OpaqueArrayOptions, options, "create_opaque_array(): options")
    _check_limits(opts.shape, _SURFACE_LIMITS if opts.is_surface_load_store else
                  _TEXTURE_LIMITS, ctx._device_id, "create_opaque_array()",
                  "surface" if opts.is_surface_load_store else "texture")
    _fill_array_desc(&desc, opts.shape, opts.format, opts.num_channels,
                     opts.is_surface_load_store)
    with nogil:
        enter_context(guard, ctx._handle)
        err = cydriver.cuArray3DCreate(&handle, &desc)
        exit_context(guard)
    HANDLE_RETURN(err)
    return _new_array(handle, ctx, opts.shape, opts.format, opts.num_channels,
                      opts.is_surface_load_store, None)


cdef class MipmappedArray(_ArrayBase):
    """A CUDA mipmapped array: ``num_levels`` arrays, each half the size of the one before in
    every dimension (down to 1). Not constructible: use :meth:`Device.create_mipmapped_array`.
    A context manager.
    """

    cdef CUmipmappedArray _handle
    cdef int _levels

    def __init__(self, *args, **kwargs):
        raise RuntimeError("MipmappedArray objects cannot be instantiated directly; use "
                           "Device.create_mipmapped_array()")

    cdef int _release(self) except -1:
        cdef ContextGuard guard
        cdef CUresult err
        if self._handle != NULL:
            enter_context(guard, self._ctx._handle)
            with nogil:
                err = cydriver.cuMipmappedArrayDestroy(self._handle)
            check_call(err, "cuMipmappedArrayDestroy")
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._handle

    def close(self):
        """Destroy the mipmapped array (``cuMipmappedArrayDestroy``); its level views then
        refuse every use. Idempotent.

        Raises
        ------
        RuntimeError
            While a texture or surface object over it, or over one of its levels, is open.
        """
        self._close_unused("MipmappedArray.close()", "it")

    @property
    def handle(self):
        """The ``CUmipmappedArray`` handle, as an int (as in cuda.core)."""
        self._check_open()
        return <size_t>self._handle

    @property
    def shape(self):
        """The base level's shape."""
        return self._shape

    @property
    def num_levels(self):
        """The number of levels."""
        return self._levels

    @property
    def is_surface_load_store(self):
        """Whether a level can back a :class:`SurfaceObject`."""
        return bool(self._ldst)

    def get_level(self, level):
        """A view of level ``level`` (0 is the base) as an :class:`OpaqueArray`
        (``cuMipmappedArrayGetLevel``). The view owns nothing and keeps this object alive; it
        refuses every use once this object is closed.

        Raises
        ------
        ValueError
            If ``level`` is not in ``[0, num_levels)`` (as cuda.core).
        """
        cdef CUarray handle = NULL
        cdef CUresult err
        cdef ContextGuard guard
        cdef unsigned int lv
        self._check_open()
        level = check_int(level, "MipmappedArray.get_level(): level")
        if not 0 <= level < self._levels:
            raise ValueError(f"MipmappedArray.get_level(): level {level} is out of range "
                             f"[0, {self._levels})")
        lv = level
        with nogil:
            enter_context(guard, self._ctx._handle)
            err = cydriver.cuMipmappedArrayGetLevel(&handle, self._handle, lv)
            exit_context(guard)
        HANDLE_RETURN(err)
        shape = tuple(max(1, d >> level) for d in self._shape)
        return _new_array(handle, self._ctx, shape, self._format, self._channels, self._ldst,
                          self)

    def __repr__(self):
        return (f"<MipmappedArray shape={self._shape} format={self._format!s} "
                f"num_channels={self._channels} num_levels={self._levels}"
                f"{' closed' if self._closed else ''}>")


def create_mipmapped_array(Context ctx not None, options):
    """Device.create_mipmapped_array's work."""
    cdef CUDA_ARRAY3D_DESCRIPTOR desc
    cdef CUmipmappedArray handle = NULL
    cdef CUresult err
    cdef ContextGuard guard
    cdef unsigned int levels
    if options is None:
        raise TypeError("create_mipmapped_array(): options is required (a "
                        "MipmappedArrayOptions or a dict)")
    opts = _checked(MipmappedArrayOptions, options, "create_mipmapped_array(): options")
    _check_limits(opts.shape, _MIPMAP_LIMITS, ctx._device_id, "create_mipmapped_array()",
                  "mipmapped texture")
    if opts.is_surface_load_store:
        _check_limits(opts.shape, _SURFACE_LIMITS, ctx._device_id, "create_mipmapped_array()",
                      "surface")
    _fill_array_desc(&desc, opts.shape, opts.format, opts.num_channels,
                     opts.is_surface_load_store)
    levels = opts.num_levels
    with nogil:
        enter_context(guard, ctx._handle)
        err = cydriver.cuMipmappedArrayCreate(&handle, &desc, levels)
        exit_context(guard)
    HANDLE_RETURN(err)
    cdef MipmappedArray m = MipmappedArray.__new__(MipmappedArray)
    m._handle = handle
    m._ctx = ctx
    m._shape = opts.shape
    m._format = opts.format
    m._channels = opts.num_channels
    m._levels = opts.num_levels
    m._ldst = opts.is_surface_load_store
    return m


# -- resource descriptors -------------------------------------------------------------------------

cdef class ResourceDescriptor:
    """What a texture or surface object reads: an :class:`OpaqueArray`, a
    :class:`MipmappedArray`, or a :class:`Buffer` seen as a 1D (``linear``) or a pitched 2D
    (``pitch2d``) texture. Not constructible: use the ``from_*`` class methods. It keeps its
    source alive; it checks what needs no device when made, the device's alignment and size
    limits when a texture is made from it.
    """

    cdef readonly str kind
    cdef readonly object source
    cdef object _format
    cdef int _channels
    cdef size_t _size_bytes
    cdef size_t _width
    cdef size_t _height
    cdef size_t _pitch
    cdef object __weakref__

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
        (<OpaqueArray>array)._check_usable()
        return _descriptor("array", array, (<OpaqueArray>array)._format,
                           (<OpaqueArray>array)._channels)

    @classmethod
    def from_mipmapped_array(cls, mipmapped_array):
        """A descriptor of ``mipmapped_array`` (a :class:`MipmappedArray`), for a texture
        that reads every level (``tex2DLod`` and the like)."""
        if not isinstance(mipmapped_array, MipmappedArray):
            raise TypeError(f"ResourceDescriptor.from_mipmapped_array(): mipmapped_array must "
                            f"be a MipmappedArray, not {type(mipmapped_array).__name__}")
        (<MipmappedArray>mipmapped_array)._check_open()
        return _descriptor("mipmapped_array", mipmapped_array,
                           (<MipmappedArray>mipmapped_array)._format,
                           (<MipmappedArray>mipmapped_array)._channels)

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
        _check_buffer(buffer, what)
        fmt = check_format(format, f"{what}: format")
        channels = check_channels(num_channels, f"{what}: num_channels")
        element = FORMAT_BYTES[fmt] * channels
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
        _check_buffer(buffer, what)
        fmt = check_format(format, f"{what}: format")
        channels = check_channels(num_channels, f"{what}: num_channels")
        element = FORMAT_BYTES[fmt] * channels
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

    cdef Resource _owner(self):
        """The array or mipmapped array whose memory this reads (None for a Buffer)."""
        cdef OpaqueArray arr
        if self.kind == "array":
            arr = <OpaqueArray>self.source
            if arr._parent is not None:
                return arr._parent
            return arr
        if self.kind == "mipmapped_array":
            return <Resource>self.source
        return None

    cdef int _check_source(self, int device_id, str what) except -1:
        """The source is still open and belongs to ``device_id``."""
        cdef int src_device
        if self.kind == "array":
            (<OpaqueArray>self.source)._check_usable()
            src_device = (<OpaqueArray>self.source)._ctx._device_id
        elif self.kind == "mipmapped_array":
            (<MipmappedArray>self.source)._check_open()
            src_device = (<MipmappedArray>self.source)._ctx._device_id
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
        align = _attribute(cydriver.CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, device_id)
        if align > 0 and ptr % align:
            raise ValueError(f"{what}: the buffer's address 0x{ptr:x} is not a multiple of "
                             f"device {device_id}'s texture alignment ({align} bytes)")
        element = FORMAT_BYTES[self._format] * self._channels
        if self.kind == "linear":
            most = _attribute(cydriver.CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH,
                              device_id)
            if most > 0 and self._size_bytes // element > <size_t>most:
                raise ValueError(f"{what}: {self._size_bytes // element} elements exceed "
                                 f"device {device_id}'s linear texture limit of {most}")
            rd.resType = cydriver.CU_RESOURCE_TYPE_LINEAR
            rd.res.linear.devPtr = ptr
            rd.res.linear.format = <cydriver.CUarray_format><int>_CU_FORMAT[self._format]
            rd.res.linear.numChannels = self._channels
            rd.res.linear.sizeInBytes = self._size_bytes
            return 0
        pitch_align = _attribute(cydriver.CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT,
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
            most = _attribute(attr, device_id)
            if most > 0 and value > most:
                raise ValueError(f"{what}: {name} {value} exceeds device {device_id}'s pitched "
                                 f"2D texture limit of {most}")
        rd.resType = cydriver.CU_RESOURCE_TYPE_PITCH2D
        rd.res.pitch2D.devPtr = ptr
        rd.res.pitch2D.format = <cydriver.CUarray_format><int>_CU_FORMAT[self._format]
        rd.res.pitch2D.numChannels = self._channels
        rd.res.pitch2D.width = self._width
        rd.res.pitch2D.height = self._height
        rd.res.pitch2D.pitchInBytes = self._pitch
        return 0


cdef ResourceDescriptor _descriptor(str kind, object source, object fmt, int channels):
    cdef ResourceDescriptor d = ResourceDescriptor.__new__(ResourceDescriptor)
    d.kind = kind
    d.source = source
    d._format = fmt
    d._channels = channels
    return d


cdef int _check_buffer(object buffer, str what) except -1:
    if not isinstance(buffer, Buffer):
        raise TypeError(f"{what}: buffer must be a Buffer, not {type(buffer).__name__}")
    (<Buffer>buffer)._check_open()
    if not buffer.is_device_accessible:
        raise ValueError(f"{what}: buffer must be device-accessible memory")
    return 0


cdef ResourceDescriptor _as_descriptor(object resource, str what):
    if isinstance(resource, ResourceDescriptor):
        return <ResourceDescriptor>resource
    if isinstance(resource, OpaqueArray):
        return ResourceDescriptor.from_opaque_array(resource)
    if isinstance(resource, MipmappedArray):
        return ResourceDescriptor.from_mipmapped_array(resource)
    raise TypeError(f"{what}: resource must be a ResourceDescriptor, an OpaqueArray or a "
                    f"MipmappedArray, not {type(resource).__name__}")


cdef int _add_user(Resource owner, Py_ssize_t delta) except -1:
    if owner is None:
        return 0
    with cython.critical_section(owner):
        if delta > 0:
            owner._check_open()
        (<_ArrayBase>owner)._users += delta
    return 0


# -- texture and surface objects ------------------------------------------------------------------

cdef class _ViewObject(Resource):
    """What a texture object and a surface object share: the handle (a 64-bit integer), its
    context, the resource it reads, and the count it holds on the resource's owner, which
    refuses ``close()`` while it is not zero. Subclasses give the create and destroy calls."""

    cdef unsigned long long _handle
    cdef Context _ctx
    cdef ResourceDescriptor _resource
    cdef Resource _owner

    cdef bint _orphaned(self) noexcept:
        return context_gone(self._ctx)

    def __reduce__(self):
        # As cuda.core: a copy would destroy the handle twice; copy.copy, copy.deepcopy and
        # pickle raise TypeError.
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")

    cdef CUresult _create(self, unsigned long long* handle, const CUDA_RESOURCE_DESC* res,
                          const CUDA_TEXTURE_DESC* tex) noexcept nogil:
        return cydriver.CUDA_ERROR_NOT_SUPPORTED

    cdef CUresult _destroy(self) noexcept nogil:
        return cydriver.CUDA_SUCCESS

    cdef str _destroy_call(self):
        return ""

    cdef int _open(self, Context ctx, ResourceDescriptor rd, const CUDA_RESOURCE_DESC* res,
                   const CUDA_TEXTURE_DESC* tex) except -1:
        """Create the handle over ``rd`` in ``ctx`` and take this object's count on the
        resource's owner."""
        cdef unsigned long long handle = 0
        cdef CUresult err
        cdef ContextGuard guard
        owner = rd._owner()
        # Counted first, so that the owner cannot be closed between the check and the create.
        _add_user(owner, 1)
        try:
            with nogil:
                enter_context(guard, ctx._handle)
                err = self._create(&handle, res, tex)
                exit_context(guard)
            HANDLE_RETURN(err)
        except BaseException:
            _add_user(owner, -1)
            raise
        self._handle = handle
        self._ctx = ctx
        self._resource = rd
        self._owner = owner
        return 0

    cdef int _release(self) except -1:
        cdef ContextGuard guard
        if self._handle != 0:
            try:
                enter_context(guard, self._ctx._handle)
                check_call(self._destroy(), self._destroy_call())
            finally:
                _add_user(self._owner, -1)
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._handle

    def __enter__(self):
        self._check_open()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def device(self):
        """The :class:`~cuda_core.Device` the object belongs to."""
        return _device_of(self._ctx)


cdef class TextureObject(_ViewObject):
    """A bindless texture (``CUtexObject``): pass :attr:`handle` to a kernel parameter of type
    ``cudaTextureObject_t`` (a 64-bit integer). Keeps its resource alive, which refuses
    ``close()`` while this object is open. Not constructible: use
    :meth:`Device.create_texture_object`. A context manager.
    """

    cdef object _options

    def __init__(self, *args, **kwargs):
        raise RuntimeError("TextureObject objects cannot be instantiated directly; use "
                           "Device.create_texture_object()")

    cdef CUresult _create(self, unsigned long long* handle, const CUDA_RESOURCE_DESC* res,
                          const CUDA_TEXTURE_DESC* tex) noexcept nogil:
        return cydriver.cuTexObjectCreate(<CUtexObject*>handle, res, tex, NULL)

    cdef CUresult _destroy(self) noexcept nogil:
        return cydriver.cuTexObjectDestroy(<CUtexObject>self._handle)

    cdef str _destroy_call(self):
        return "cuTexObjectDestroy"

    @property
    def handle(self):
        """The texture object as an int (``cudaTextureObject_t`` in a kernel)."""
        self._check_open()
        return self._handle

    @property
    def resource(self):
        """The :class:`ResourceDescriptor` the texture reads."""
        return self._resource

    @property
    def options(self):
        """The :class:`TextureObjectOptions` it was made with."""
        return self._options

    def __repr__(self):
        return (f"<TextureObject 0x{self._handle:x} "
                f"resource={self._resource.kind!r}{' closed' if self._closed else ''}>")


def create_texture_object(Context ctx not None, resource, options):
    """Device.create_texture_object's work."""
    cdef str what = "create_texture_object()"
    cdef ResourceDescriptor rd = _as_descriptor(resource, what)
    cdef CUDA_RESOURCE_DESC res
    cdef CUDA_TEXTURE_DESC tex
    cdef unsigned int flags = 0
    opts = _checked(TextureObjectOptions, options, f"{what}: options")
    rd._check_source(ctx._device_id, what)
    fmt = rd._format
    is_int = fmt not in FLOAT_FORMATS
    # The driver promotes integers to normalized floats unless told to read them as they are
    # (the flag means nothing for float formats, so it is left off there).
    read_as_int = is_int and opts.read_mode == ReadModeType.ELEMENT_TYPE
    if opts.filter_mode == FilterModeType.LINEAR:
        if read_as_int:
            raise ValueError(f"{what}: linear filtering needs a float result: use a float "
                             f"format or read_mode='normalized_float' (format is {fmt!s})")
        if rd.kind == "linear":
            raise ValueError(f"{what}: a linear (1D Buffer) texture supports only "
                             f"filter_mode='point'")
    if opts.read_mode == ReadModeType.NORMALIZED_FLOAT and FORMAT_BYTES[fmt] == 4 and is_int:
        raise ValueError(f"{what}: read_mode='normalized_float' needs an 8- or 16-bit integer "
                         f"format; the driver does not promote {fmt!s}")
    if rd.kind == "mipmapped_array" and not opts.normalized_coords:
        raise ValueError(f"{what}: a mipmapped texture needs normalized_coords=True (the "
                         f"driver requires it)")
    if opts.seamless_cubemap:
        raise ValueError(f"{what}: seamless_cubemap needs a cubemap array, and "
                         f"create_opaque_array/create_mipmapped_array allocate none")
    if opts.srgb and FORMAT_BYTES[fmt] != 1:
        raise ValueError(f"{what}: srgb needs an 8-bit format, not {fmt!s}")
    modes = address_modes(opts)
    if not opts.normalized_coords:
        for m in modes:
            if m in (AddressModeType.WRAP, AddressModeType.MIRROR):
                raise ValueError(f"{what}: address mode {m!s} needs normalized_coords=True")
    rd._fill(&res, ctx._device_id, what)
    memset(&tex, 0, sizeof(CUDA_TEXTURE_DESC))
    for i in range(3):
        tex.addressMode[i] = <cydriver.CUaddress_mode><int>_CU_ADDRESS[modes[i]]
    tex.filterMode = <cydriver.CUfilter_mode><int>_CU_FILTER[opts.filter_mode]
    if read_as_int:
        flags |= cydriver.CU_TRSF_READ_AS_INTEGER
    if opts.normalized_coords:
        flags |= cydriver.CU_TRSF_NORMALIZED_COORDINATES
    if opts.srgb:
        flags |= cydriver.CU_TRSF_SRGB
    if opts.disable_trilinear_optimization:
        flags |= cydriver.CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION
    tex.flags = flags
    tex.maxAnisotropy = opts.max_anisotropy
    tex.mipmapFilterMode = <cydriver.CUfilter_mode><int>_CU_FILTER[opts.mipmap_filter_mode]
    tex.mipmapLevelBias = opts.mipmap_level_bias
    tex.minMipmapLevelClamp = opts.min_mipmap_level_clamp
    tex.maxMipmapLevelClamp = opts.max_mipmap_level_clamp
    if opts.border_color is not None:
        for i, c in enumerate(opts.border_color):
            tex.borderColor[i] = c
    cdef TextureObject t = TextureObject.__new__(TextureObject)
    t._open(ctx, rd, &res, &tex)
    t._options = opts
    return t


cdef class SurfaceObject(_ViewObject):
    """A bindless surface (``CUsurfObject``) over an :class:`OpaqueArray` allocated with
    ``is_surface_load_store=True``: kernels read and write it with ``surf*read`` /
    ``surf*write`` through :attr:`handle` (a ``cudaSurfaceObject_t``, a 64-bit integer). Not
    constructible: use :meth:`Device.create_surface_object`. A context manager.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("SurfaceObject objects cannot be instantiated directly; use "
                           "Device.create_surface_object()")

    cdef CUresult _create(self, unsigned long long* handle, const CUDA_RESOURCE_DESC* res,
                          const CUDA_TEXTURE_DESC* tex) noexcept nogil:
        return cydriver.cuSurfObjectCreate(<CUsurfObject*>handle, res)

    cdef CUresult _destroy(self) noexcept nogil:
        return cydriver.cuSurfObjectDestroy(<CUsurfObject>self._handle)

    cdef str _destroy_call(self):
        return "cuSurfObjectDestroy"

    @property
    def handle(self):
        """The surface object as an int (``cudaSurfaceObject_t`` in a kernel)."""
        self._check_open()
        return self._handle

    @property
    def resource(self):
        """The :class:`ResourceDescriptor` the surface reads and writes."""
        return self._resource

    def __repr__(self):
        return f"<SurfaceObject 0x{self._handle:x}{' closed' if self._closed else ''}>"


def create_surface_object(Context ctx not None, resource):
    """Device.create_surface_object's work."""
    cdef str what = "create_surface_object()"
    cdef ResourceDescriptor rd = _as_descriptor(resource, what)
    cdef CUDA_RESOURCE_DESC res
    if rd.kind != "array":
        raise ValueError(f"{what}: a surface needs an OpaqueArray resource (or a level of a "
                         f"MipmappedArray), not a {rd.kind!r} one")
    rd._check_source(ctx._device_id, what)
    if not (<OpaqueArray>rd.source)._ldst:
        raise ValueError(f"{what}: the array was not allocated with "
                         f"is_surface_load_store=True")
    rd._fill(&res, ctx._device_id, what)
    cdef SurfaceObject s = SurfaceObject.__new__(SurfaceObject)
    s._open(ctx, rd, &res, NULL)
    return s
