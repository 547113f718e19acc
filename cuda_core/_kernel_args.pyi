from collections.abc import Sequence

def _packed_arguments(*args: object, declared: Sequence[str] | None = ...,
                      sizes: Sequence[int] | None = ...) -> list[bytes]: ...
