__all__: list[str] = []

def _plan_of(shape: tuple[int, ...], dst_strides: tuple[int, ...], src_strides: tuple[int, ...],
             itemsize: int) -> tuple[tuple[int, ...], int, int, int, int] | None: ...
