from cuda.bindings.cydriver cimport CUDA_RESOURCE_DESC

from cuda_core.texture._array cimport _ArrayBase


cdef class ResourceDescriptor:
    cdef readonly str kind
    cdef readonly object source
    cdef object _format
    cdef int _channels
    # linear: the bytes exposed; pitch2d: the width, height and pitch.
    cdef size_t _size_bytes
    cdef size_t _width
    cdef size_t _height
    cdef size_t _pitch
    cdef object __weakref__

    # The array or mipmapped array whose memory this reads (a level's parent); None for a
    # Buffer.
    cdef _ArrayBase _owner(self)
    # The source is still open and belongs to ``device_id``.
    cdef int _check_source(self, int device_id, str what) except -1
    # Fill ``rd`` for a texture or surface on ``device_id``, checked against its alignment and
    # size limits.
    cdef int _fill(self, CUDA_RESOURCE_DESC* rd, int device_id, str what) except -1


# ``resource`` (a ResourceDescriptor, an OpaqueArray or a MipmappedArray) as a descriptor.
cdef ResourceDescriptor as_descriptor(object resource, str what)
