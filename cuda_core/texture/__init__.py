"""Textures and surfaces: CUDA arrays (:class:`OpaqueArray`, :class:`MipmappedArray`) and the
bindless :class:`TextureObject` and :class:`SurfaceObject` kernels sample and write them
through, made by the :class:`~cuda_core.Device` factories."""

from cuda_core.texture._options import (MipmappedArrayOptions, OpaqueArrayOptions,
                                        TextureObjectOptions)
from cuda_core.texture._array import MipmappedArray, OpaqueArray
from cuda_core.texture._resource_descriptor import ResourceDescriptor
from cuda_core.texture._texture import SurfaceObject, TextureObject

__all__ = ["MipmappedArray", "MipmappedArrayOptions", "OpaqueArray", "OpaqueArrayOptions",
           "ResourceDescriptor", "SurfaceObject", "TextureObject", "TextureObjectOptions"]
