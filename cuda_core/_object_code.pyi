import os
from typing import Any, ClassVar, Protocol

from cuda.bindings import driver

from cuda_core._kernel import Kernel
from cuda_core._linker import ObjectCodeFormatType
from cuda_core._resource import Resource

_Module = bytes | bytearray | memoryview | str | os.PathLike[str]

# ObjectCode.from_cubin ... from_library: the six static factories share this signature.
class _Factory(Protocol):
    def __call__(self, module: _Module, *, name: str = ...,
                 symbol_mapping: dict[str, str] | None = ...) -> ObjectCode: ...

class ObjectCode(Resource):
    from_cubin: ClassVar[_Factory]
    from_ptx: ClassVar[_Factory]
    from_ltoir: ClassVar[_Factory]
    from_fatbin: ClassVar[_Factory]
    from_object: ClassVar[_Factory]
    from_library: ClassVar[_Factory]
    @staticmethod
    def _init(module: bytes, code_type: ObjectCodeFormatType | str, *, name: str = ..., symbol_mapping: dict[str, str] | None = ...) -> ObjectCode: ...
    @property
    def code(self) -> bytes | str: ...
    @property
    def code_type(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def symbol_mapping(self) -> dict[str, str]: ...
    @property
    def handle(self) -> driver.CUlibrary: ...
    def get_kernel(self, name: str | bytes) -> Kernel: ...
    def get_module(self) -> driver.CUmodule: ...
    def __reduce__(self) -> tuple[Any, ...]: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

