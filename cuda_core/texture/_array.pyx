"""CUDA arrays: :class:`OpaqueArray` (a ``CUarray``) and :class:`MipmappedArray` (a
``CUmipmappedArray``), the memory texture and surface objects (``_texture``) read and write.

Ownership: an :class:`OpaqueArray` owns its ``CUarray`` and a :class:`MipmappedArray` its
``CUmipmappedArray``; a level, from ``get_level``, is a view: it owns nothing and keeps its
parent alive. While a texture or surface object over an array (or over a level) is open, the
array counts it as a user (``add_user``) and refuses ``close()``, so that no kernel can read
freed memory through a live object.

Every argument is checked before the driver is called, against the device's limits
(``cuDeviceGetAttribute``, read at creation).
"""

cimport cython
from cpython.buffer cimport (PyBUF_C_CONTIGUOUS, PyBUF_WRITABLE, PyBuffer_Release,
                             PyObject_GetBuffer)
from libc.string cimport memset

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUarray, CUDA_ARRAY3D_DESCRIPTOR, CUDA_MEMCPY3D, CUdevice,
                                     CUdeviceptr, CUmipmappedArray, CUresult)

from cuda_core._context cimport Context, ContextGuard, context_gone, enter_context, exit_context
from cuda_core._errors cimport HANDLE_RETURN, check_call
from cuda_core._memory._buffer cimport Buffer
from cuda_core._stream cimport Stream, require_stream

from cuda_core._checks import check_int
from cuda_core.texture._options import (FORMAT_BYTES, ArrayFormatType, MipmappedArrayOptions,
                                        OpaqueArrayOptions, checked_options)

__all__ = ["MipmappedArray", "OpaqueArray"]

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


cdef int device_attribute(int attr, int device_id) except? -1:
    cdef int value = 0
    HANDLE_RETURN(cydriver.cuDeviceGetAttribute(
        &value, <cydriver.CUdevice_attribute>attr, <CUdevice>device_id))
    return value


cdef int cu_format(object fmt) except -1:
    return _CU_FORMAT[fmt]


cdef object device_of(Context ctx):
    from cuda_core._device import Device
    return Device(ctx._device_id)


cdef int _check_limits(tuple shape, tuple limits, int device_id, str what, str kind) except -1:
    for i, n in enumerate(shape):
        most = device_attribute(limits[len(shape) - 1][i], device_id)
        if n > most:
            raise ValueError(f"{what}: {_DIM_NAMES[i]} {n} exceeds device {device_id}'s "
                             f"{len(shape)}D {kind} limit of {most}")
    return 0


cdef object _allocation(Context ctx, object cls, object options, str what, str needed,
                        CUDA_ARRAY3D_DESCRIPTOR* desc):
    """The options of an allocation, checked (``cls``: OpaqueArrayOptions or
    MipmappedArrayOptions, which ``needed`` names for a missing one) and checked against the
    device's limits; ``desc`` is filled from them."""
    if options is None:
        raise TypeError(f"{what}: options is required ({needed} or a dict)")
    opts = checked_options(cls, options, f"{what}: options")
    shape = opts.shape
    ldst = opts.is_surface_load_store
    if cls is MipmappedArrayOptions:
        _check_limits(shape, _MIPMAP_LIMITS, ctx._device_id, what, "mipmapped texture")
    elif not ldst:
        _check_limits(shape, _TEXTURE_LIMITS, ctx._device_id, what, "texture")
    if ldst:
        _check_limits(shape, _SURFACE_LIMITS, ctx._device_id, what, "surface")
    memset(desc, 0, sizeof(CUDA_ARRAY3D_DESCRIPTOR))
    # A 1D array has Height 0 and a 2D one Depth 0 (cuArray3DCreate's convention).
    desc.Width = shape[0]
    desc.Height = shape[1] if len(shape) > 1 else 0
    desc.Depth = shape[2] if len(shape) > 2 else 0
    desc.Format = <cydriver.CUarray_format>cu_format(opts.format)
    desc.NumChannels = opts.num_channels
    desc.Flags = cydriver.CUDA_ARRAY3D_SURFACE_LDST if ldst else 0
    return opts


cdef int add_user(_ArrayBase owner, Py_ssize_t delta) except -1:
    if owner is None:
        return 0
    with cython.critical_section(owner):
        if delta > 0:
            owner._check_open()
        owner._users += delta
    return 0


cdef class _TextureResource(Resource):
    """What the arrays and the texture and surface objects share: the context the handle was
    made in (``_orphaned`` once it is gone), the release (the subclass's destroy call, made in
    that context), and the context manager."""

    cdef bint _orphaned(self) noexcept:
        return context_gone(self._ctx)

    cdef int _check_ready(self) except -1:
        return self._check_open()

    cdef bint _owns_handle(self) noexcept:
        return self._address() != 0

    cdef CUresult _destroy(self) noexcept nogil:
        return cydriver.CUDA_SUCCESS

    cdef str _destroy_call(self):
        return ""

    cdef int _release(self) except -1:
        cdef ContextGuard guard
        cdef CUresult err
        if self._owns_handle():
            enter_context(guard, self._ctx._handle)
            with nogil:  # as every destroy in a finalizer (DESIGN.md, the calls that wait)
                err = self._destroy()
            check_call(err, self._destroy_call())
        return 0

    def __enter__(self):
        self._check_open()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def handle(self):
        """The handle, as an int (as in cuda.core): a ``CUarray`` or ``CUmipmappedArray``, or the
        ``cudaTextureObject_t`` or ``cudaSurfaceObject_t`` a kernel takes."""
        self._check_ready()
        return self._address()

    @property
    def device(self):
        """The :class:`~cuda_core.Device` the object belongs to."""
        return device_of(self._ctx)


cdef class _ArrayBase(_TextureResource):
    """What OpaqueArray and MipmappedArray share: the context, the element description, and
    the count of open texture and surface objects over the memory, while which ``close()``
    refuses."""

    cdef int _init(self, Context ctx, tuple shape, object fmt, int channels,
                   bint ldst) except -1:
        self._ctx, self.shape, self.format, self.num_channels, self._ldst = (
            ctx, shape, fmt, channels, ldst)
        return 0

    cdef int _close_unused(self, str what, str it) except -1:
        with cython.critical_section(self):
            if not self._closed and self._users:
                raise RuntimeError(f"{what}: {self._users} texture or surface object(s) still "
                                   f"use {it}; close them first")
            self._close()
        return 0

    @property
    def is_surface_load_store(self):
        """Whether a :class:`SurfaceObject` can be made over the array (for a mipmapped array:
        over a level)."""
        return bool(self._ldst)


cdef class OpaqueArray(_ArrayBase):
    """A CUDA array: memory laid out by the driver for texture and surface access, with no
    device pointer. Kernels reach it only through a :class:`TextureObject` or a
    :class:`SurfaceObject`; data moves in and out by copies (:meth:`copy_from`,
    :meth:`copy_to`). Not constructible: use :meth:`Device.create_opaque_array`, or
    :meth:`MipmappedArray.get_level` for a view of one level. A context manager.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("OpaqueArray objects cannot be instantiated directly; use "
                           "Device.create_opaque_array() or MipmappedArray.get_level()")

    cdef bint _owns_handle(self) noexcept:
        # A level view owns nothing; it keeps its parent referenced until it is freed itself
        # (a texture over the view may still need the parent's memory).
        return self._parent is None and self._handle != NULL

    cdef CUresult _destroy(self) noexcept nogil:
        return cydriver.cuArrayDestroy(self._handle)

    cdef str _destroy_call(self):
        return "cuArrayDestroy"

    cdef size_t _address(self) noexcept:
        return <size_t>self._handle

    cdef int _check_ready(self) except -1:
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
    def element_bytes(self):
        """Bytes per element: the format's size times ``num_channels``."""
        return self._element_bytes

    @property
    def size_bytes(self):
        """Bytes of the whole array in a dense row-major copy (what :meth:`copy_from` and
        :meth:`copy_to` move)."""
        n = int(self._element_bytes)
        for d in self.shape:
            n *= d
        return n

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
        cdef cydriver.CUmemorytype kind
        cdef void* host_ptr = NULL
        cdef CUdeviceptr device_ptr = 0
        self._check_ready()
        s = require_stream(stream, what)
        s._check_open()
        if s._ctx is not None and s._ctx._device_id != self._ctx._device_id:
            raise ValueError(f"{what}: the stream belongs to device {s._ctx._device_id}, the "
                             f"array to device {self._ctx._device_id}")
        total = self.size_bytes
        name = "dst" if to_other else "src"
        memset(&p, 0, sizeof(CUDA_MEMCPY3D))
        row = self.shape[0] * self._element_bytes
        p.WidthInBytes = row
        p.Height = self.shape[1] if len(self.shape) > 1 else 1
        p.Depth = self.shape[2] if len(self.shape) > 2 else 1
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
            # The other side is dense (its pitch a row, its height the array's); the array side
            # ignores the pitch and height (cuMemcpy3D), so both sides get them.
            if host:
                kind = cydriver.CU_MEMORYTYPE_HOST
                host_ptr = view.buf
            else:
                kind = cydriver.CU_MEMORYTYPE_UNIFIED
                device_ptr = (<Buffer>other)._ptr
            p.srcPitch = p.dstPitch = row
            p.srcHeight = p.dstHeight = p.Height
            if to_other:
                p.srcMemoryType = cydriver.CU_MEMORYTYPE_ARRAY
                p.srcArray = self._handle
                p.dstMemoryType, p.dstHost, p.dstDevice = kind, host_ptr, device_ptr
            else:
                p.dstMemoryType = cydriver.CU_MEMORYTYPE_ARRAY
                p.dstArray = self._handle
                p.srcMemoryType, p.srcHost, p.srcDevice = kind, host_ptr, device_ptr
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
        return (f"<OpaqueArray shape={self.shape} format={self.format!s} "
                f"num_channels={self.num_channels}{' closed' if self._closed else ''}>")


cdef OpaqueArray _new_array(CUarray handle, Context ctx, tuple shape, object fmt, int channels,
                            bint ldst, MipmappedArray parent):
    cdef OpaqueArray arr = OpaqueArray.__new__(OpaqueArray)
    arr._init(ctx, shape, fmt, channels, ldst)
    arr._handle = handle
    arr._element_bytes = FORMAT_BYTES[fmt] * channels
    arr._parent = parent
    return arr


def create_opaque_array(Context ctx not None, options):
    """Device.create_opaque_array's work: ``ctx`` is the device's current primary context."""
    cdef CUDA_ARRAY3D_DESCRIPTOR desc
    cdef CUarray handle = NULL
    cdef CUresult err
    cdef ContextGuard guard
    opts = _allocation(ctx, OpaqueArrayOptions, options, "create_opaque_array()",
                       "an OpaqueArrayOptions", &desc)
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

    def __init__(self, *args, **kwargs):
        raise RuntimeError("MipmappedArray objects cannot be instantiated directly; use "
                           "Device.create_mipmapped_array()")

    cdef CUresult _destroy(self) noexcept nogil:
        return cydriver.cuMipmappedArrayDestroy(self._handle)

    cdef str _destroy_call(self):
        return "cuMipmappedArrayDestroy"

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
    def num_levels(self):
        """The number of levels."""
        return self._levels

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
        shape = tuple(max(1, d >> level) for d in self.shape)
        return _new_array(handle, self._ctx, shape, self.format, self.num_channels, self._ldst,
                          self)

    def __repr__(self):
        return (f"<MipmappedArray shape={self.shape} format={self.format!s} "
                f"num_channels={self.num_channels} num_levels={self._levels}"
                f"{' closed' if self._closed else ''}>")


def create_mipmapped_array(Context ctx not None, options):
    """Device.create_mipmapped_array's work."""
    cdef CUDA_ARRAY3D_DESCRIPTOR desc
    cdef CUmipmappedArray handle = NULL
    cdef CUresult err
    cdef ContextGuard guard
    cdef unsigned int levels
    opts = _allocation(ctx, MipmappedArrayOptions, options, "create_mipmapped_array()",
                       "a MipmappedArrayOptions", &desc)
    levels = opts.num_levels
    with nogil:
        enter_context(guard, ctx._handle)
        err = cydriver.cuMipmappedArrayCreate(&handle, &desc, levels)
        exit_context(guard)
    HANDLE_RETURN(err)
    cdef MipmappedArray m = MipmappedArray.__new__(MipmappedArray)
    m._init(ctx, opts.shape, opts.format, opts.num_channels, opts.is_surface_load_store)
    m._handle = handle
    m._levels = levels
    return m
