"""Bindless texture and surface objects: a :class:`TextureObject` (``CUtexObject``) samples,
and a :class:`SurfaceObject` (``CUsurfObject``) reads and writes, what a
:class:`ResourceDescriptor` describes.

Ownership: an object keeps its :class:`ResourceDescriptor`, and so the array or Buffer under it,
alive; and while one is open, the array (or mipmapped array) it reads refuses ``close()``
(``_array.add_user``), so that no kernel can read freed memory through a live object.

Every argument is checked before the driver is called, against the device's limits where the
driver has one (``cuDeviceGetAttribute``, read at creation).
"""

from libc.string cimport memset

from cuda.bindings cimport cydriver
from cuda.bindings.cydriver cimport (CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC, CUresult,
                                     CUsurfObject, CUtexObject)

from cuda_core._context cimport Context, ContextGuard, enter_context, exit_context
from cuda_core._errors cimport HANDLE_RETURN
from cuda_core.texture._array cimport OpaqueArray, _ArrayBase, _TextureResource, add_user
from cuda_core.texture._resource_descriptor cimport ResourceDescriptor, as_descriptor

from cuda_core.texture._options import (FLOAT_FORMATS, FORMAT_BYTES, AddressModeType,
                                        FilterModeType, ReadModeType, TextureObjectOptions,
                                        address_modes, checked_options)

__all__ = ["SurfaceObject", "TextureObject"]

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


cdef class _ViewObject(_TextureResource):
    """What a texture object and a surface object share: the handle (a 64-bit integer), the
    resource it reads, and the count it holds on the resource's owner, which refuses
    ``close()`` while it is not zero. Subclasses give the create and destroy calls."""

    cdef unsigned long long _handle
    cdef ResourceDescriptor _resource
    cdef _ArrayBase _owner

    def __reduce__(self):
        # As cuda.core: a copy would destroy the handle twice; copy.copy, copy.deepcopy and
        # pickle raise TypeError.
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")

    cdef CUresult _create(self, unsigned long long* handle, const CUDA_RESOURCE_DESC* res,
                          const CUDA_TEXTURE_DESC* tex) noexcept nogil:
        return cydriver.CUDA_ERROR_NOT_SUPPORTED

    cdef int _open(self, Context ctx, ResourceDescriptor rd, const CUDA_RESOURCE_DESC* res,
                   const CUDA_TEXTURE_DESC* tex) except -1:
        """Create the handle over ``rd`` in ``ctx`` and take this object's count on the
        resource's owner."""
        cdef unsigned long long handle = 0
        cdef CUresult err
        cdef ContextGuard guard
        cdef _ArrayBase owner = rd._owner()
        # Counted first, so that the owner cannot be closed between the check and the create.
        add_user(owner, 1)
        try:
            with nogil:
                enter_context(guard, ctx._handle)
                err = self._create(&handle, res, tex)
                exit_context(guard)
            HANDLE_RETURN(err)
        except BaseException:
            add_user(owner, -1)
            raise
        self._handle = handle
        self._ctx = ctx
        self._resource = rd
        self._owner = owner
        return 0

    cdef int _release(self) except -1:
        try:
            _TextureResource._release(self)
        finally:
            add_user(self._owner, -1)  # None (nothing to count) for an object never opened
        return 0

    cdef size_t _address(self) noexcept:
        return <size_t>self._handle

    @property
    def resource(self):
        """The :class:`ResourceDescriptor` the object reads (a surface also writes it)."""
        return self._resource


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
    def options(self):
        """The :class:`TextureObjectOptions` it was made with."""
        return self._options

    def __repr__(self):
        return (f"<TextureObject 0x{self._handle:x} "
                f"resource={self._resource.kind!r}{' closed' if self._closed else ''}>")


def create_texture_object(Context ctx not None, resource, options):
    """Device.create_texture_object's work."""
    cdef str what = "create_texture_object()"
    cdef ResourceDescriptor rd = as_descriptor(resource, what)
    cdef CUDA_RESOURCE_DESC res
    cdef CUDA_TEXTURE_DESC tex
    cdef unsigned int flags = 0
    opts = checked_options(TextureObjectOptions, options, f"{what}: options")
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

    def __repr__(self):
        return f"<SurfaceObject 0x{self._handle:x}{' closed' if self._closed else ''}>"


def create_surface_object(Context ctx not None, resource):
    """Device.create_surface_object's work."""
    cdef str what = "create_surface_object()"
    cdef ResourceDescriptor rd = as_descriptor(resource, what)
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
