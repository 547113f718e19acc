from cuda.bindings.cydriver cimport CUarray, CUmipmappedArray, CUresult

from cuda_core._context cimport Context
from cuda_core._resource cimport Resource


cdef class _TextureResource(Resource):
    # The context the handle was made in.
    cdef Context _ctx

    # Open, and whatever else the object needs to be used (OpaqueArray: a level's parent open).
    cdef int _check_ready(self) except -1
    # Whether _release has a handle to destroy: by default, when _address() is not 0.
    cdef bint _owns_handle(self) noexcept
    # The driver's destroy of the handle, called in _ctx without the GIL, and its name.
    cdef CUresult _destroy(self) noexcept nogil
    cdef str _destroy_call(self)


cdef class _ArrayBase(_TextureResource):
    cdef readonly tuple shape
    """``(width,)``, ``(width, height)`` or ``(width, height, depth)``, in elements (a
    mipmapped array's: its base level's)."""
    cdef readonly object format
    """The :class:`~cuda_core.typing.ArrayFormatType` of one channel."""
    cdef readonly int num_channels
    """Channels per element: 1, 2 or 4."""
    cdef bint _ldst
    # Open texture and surface objects over the memory (add_user); close() refuses while it is
    # not zero. Written under critical_section(self).
    cdef Py_ssize_t _users

    cdef int _init(self, Context ctx, tuple shape, object fmt, int channels,
                   bint ldst) except -1
    cdef int _close_unused(self, str what, str it) except -1


cdef class MipmappedArray(_ArrayBase):
    cdef CUmipmappedArray _handle
    cdef int _levels


cdef class OpaqueArray(_ArrayBase):
    cdef CUarray _handle
    cdef size_t _element_bytes
    # A level view's MipmappedArray (which owns the memory); None for an owning array.
    cdef MipmappedArray _parent

    cdef int _copy(self, object other, object stream, bint to_other) except -1


# Count one more (delta 1: refused once ``owner`` is closed) or one fewer texture or surface
# object over ``owner``'s memory; nothing for None (a Buffer's texture).
cdef int add_user(_ArrayBase owner, Py_ssize_t delta) except -1
# A device attribute (``cuDeviceGetAttribute``).
cdef int device_attribute(int attr, int device_id) except? -1
# The CUarray_format of an ArrayFormatType.
cdef int cu_format(object fmt) except -1
# The Device of ``ctx``.
cdef object device_of(Context ctx)
