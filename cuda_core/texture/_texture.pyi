from typing import Any

from cuda_core._context import Context
from cuda_core.texture._array import MipmappedArray, OpaqueArray, _TextureResource
from cuda_core.texture._options import TextureObjectOptions
from cuda_core.texture._resource_descriptor import ResourceDescriptor

__all__: list[str]

class _ViewObject(_TextureResource):
    @property
    def resource(self) -> ResourceDescriptor: ...

class TextureObject(_ViewObject):
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    @property
    def options(self) -> TextureObjectOptions: ...

class SurfaceObject(_ViewObject):
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...

# The work of Device.create_texture_object and Device.create_surface_object, given the
# device's current primary context.
def create_texture_object(
    ctx: Context,
    resource: ResourceDescriptor | OpaqueArray | MipmappedArray,
    options: TextureObjectOptions | dict | None,
) -> TextureObject: ...
def create_surface_object(
    ctx: Context, resource: ResourceDescriptor | OpaqueArray
) -> SurfaceObject: ...
